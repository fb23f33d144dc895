// Processes as Linux's /proc tells them: parent, process group and CPU time used so far. Used by
// `npm start`'s supervisor (is a slow hub busy or dead?), the test helpers (which workerd
// processes a hub runs) and the benchmarks (CPU time). Plain JavaScript, since start.mjs runs
// without a TypeScript loader; types in proc.d.mts.
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/**
 * Process `pid` from /proc/<pid>/stat: `{ pid, ppid, pgrp, cpuMs }` (cpuMs: user + system CPU
 * time so far, in milliseconds), or null when it has ended or /proc is absent (not Linux).
 */
export function procStat(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name is parenthesised and may hold spaces: the fields after it are fixed.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // f[1] parent, f[2] process group, f[11] and f[12] user and system time in ticks.
  return { pid: Number(pid), ppid: Number(f[1]), pgrp: Number(f[2]), cpuMs: ((Number(f[11]) + Number(f[12])) * 1000) / USER_HZ };
}

/**
 * What the threads of process `pid` asked of the CPU so far, from Linux's
 * /proc/<pid>/task/<tid>/schedstat (the scheduler's own accounting, in nanoseconds):
 * `{ runMs, waitMs }`, the milliseconds its threads ran on a CPU and the milliseconds they were
 * runnable but waited on a run queue for one, summed over its threads; null when it has ended or
 * the kernel keeps no such figures (not Linux, or a kernel without CONFIG_SCHED_INFO).
 * A thread that has work but is starved by the machine's other processes (a load above the
 * cores) shows in `waitMs`, not in `runMs`; a thread blocked on I/O or idle shows in neither.
 */
export function schedStat(pid) {
  let tasks;
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  let runNs = 0;
  let waitNs = 0;
  let read = 0;
  for (const tid of tasks) {
    let text;
    try {
      text = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8");
    } catch {
      continue; // the thread ended meanwhile, or no schedstat
    }
    const [run, wait] = text.trim().split(" ").map(Number);
    if (!Number.isFinite(run) || !Number.isFinite(wait)) continue;
    runNs += run;
    waitNs += wait;
    read++;
  }
  return read === 0 ? null : { runMs: runNs / 1e6, waitMs: waitNs / 1e6 };
}

/** Every process {@link procStat} can read (an empty list where /proc is absent). */
export function processes() {
  let entries;
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const out = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const p = procStat(entry);
    if (p) out.push(p);
  }
  return out;
}

/** The IDs of every process below `pid` (children, their children, ...). */
export function descendants(pid) {
  const children = new Map();
  for (const p of processes()) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const out = [];
  const walk = (parent) => {
    for (const child of children.get(parent) ?? []) {
      out.push(child);
      walk(child);
    }
  };
  walk(pid);
  return out;
}
