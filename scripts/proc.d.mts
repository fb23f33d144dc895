/** A process as /proc/<pid>/stat tells it; `cpuMs` is user + system CPU time so far, in milliseconds. */
export interface ProcStat {
  pid: number;
  ppid: number;
  pgrp: number;
  cpuMs: number;
}
/** Process `pid`, or null when it has ended or /proc is absent (not Linux). */
export function procStat(pid: number | string): ProcStat | null;
/** Milliseconds the threads of a process ran on a CPU (`runMs`) and waited, runnable, on a run queue (`waitMs`), from /proc/<pid>/task/<tid>/schedstat. */
export interface SchedStat {
  runMs: number;
  waitMs: number;
}
/** Process `pid`'s threads' run and run-queue wait times so far, or null when it has ended or the kernel keeps none. */
export function schedStat(pid: number | string): SchedStat | null;
/** Every process /proc lists (empty where /proc is absent). */
export function processes(): ProcStat[];
/** The IDs of every process below `pid` (children, their children, ...). */
export function descendants(pid: number): number[];
