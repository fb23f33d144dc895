/** A process as /proc/<pid>/stat tells it; `cpuMs` is user + system CPU time so far, in milliseconds. */
export interface ProcStat {
  pid: number;
  ppid: number;
  pgrp: number;
  cpuMs: number;
}
/** Process `pid`, or null when it has ended or /proc is absent (not Linux). */
export function procStat(pid: number | string): ProcStat | null;
/** Every process /proc lists (empty where /proc is absent). */
export function processes(): ProcStat[];
/** The IDs of every process below `pid` (children, their children, ...). */
export function descendants(pid: number): number[];
