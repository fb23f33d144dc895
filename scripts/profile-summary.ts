/**
 * The sums behind `npm run profile:top` (scripts/profile-top.ts): where a V8 CPU profile of the
 * hub's isolate spends its time, by source file, by function and inclusively, with each sample's
 * weight capped so that the isolate's unsampled gaps do not pass for work.
 *
 * A V8 `.cpuprofile` gives each sample the time since the previous one (`timeDeltas`, in
 * microseconds), and Chrome DevTools weighs sample i by the delta to sample i+1. In workerd the
 * sampler does not run while the isolate is not entered, so a sample taken just before such a
 * pause carries the whole pause: one `setTimeout` sample under the metrics' `flushSoon` carried
 * 277 ms and showed as 5 % of a create's time. Capping each sample's weight at `capUs` (a few
 * sampling intervals; bench/cpu-profile.ts samples every 500 µs) counts what the isolate was seen
 * doing, and the time over the cap is reported apart as `gapsUs`.
 */

/** A node of a V8 `.cpuprofile` (the Chrome DevTools protocol's `Profiler.ProfileNode`). */
export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; scriptId: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

/** A V8 `.cpuprofile` (`Profiler.Profile`): times in microseconds. */
export interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Where each source module starts in a bundle script, by `scriptId` (bench/cpu-profile.ts `ModuleMap`). */
export type ModuleStarts = Record<string, [number, string][]>;

/** One profile's times (microseconds) by row name, for each table. */
export interface Summary {
  name: string;
  /** All counted time (each sample's weight capped), and the busy part of it (without `(idle)`). */
  totalUs: number;
  busyUs: number;
  samples: number;
  /** The time over the cap, left out of every figure above and below (microseconds). */
  gapsUs: number;
  /** How many samples carried more than the cap. */
  gapSamples: number;
  /** The part of `gapsUs` that followed a busy (not `(idle)`) sample: what the old sums counted as work. */
  busyGapsUs: number;
  files: Map<string, number>;
  functions: Map<string, number>;
  inclusive: Map<string, number>;
}

/** How to sum a profile: `capUs` each sample's most weight (microseconds; `Infinity`: no cap), `under` a function on the stack. */
export interface SummaryOptions {
  capUs: number;
  under?: string;
}

/** The default cap of a sample's weight: 5 ms, ten of bench/cpu-profile.ts's 500 µs intervals. */
export const DEFAULT_CAP_US = 5_000;

/** Frames that are the runtime's, not a script's: counted under their own name. */
const SPECIAL = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);

/** The source file of bundle line `line` of script `scriptId`, from the module map (or undefined). */
function fileOf(modules: ModuleStarts, scriptId: string, line: number): string | undefined {
  const starts = modules[scriptId];
  if (!starts || starts.length === 0) return undefined;
  let lo = 0;
  let hi = starts.length - 1;
  if (line < starts[0]![0]) return "(bundle prelude)";
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]![0] <= line) lo = mid;
    else hi = mid - 1;
  }
  return starts[lo]![1];
}

/**
 * Sums a profile's samples by file, function and inclusive function. Sample i lasts until sample
 * i+1 (Chrome DevTools' attribution; the last one gets the mean), at most `options.capUs`; the rest
 * goes to `gapsUs`. With `options.under`, only samples whose stack holds a function of that name
 * (or `<name> <file>`) count.
 */
export function summarize(name: string, profile: Profile, modules: ModuleStarts, options: SummaryOptions): Summary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const where = new Map<number, { file: string; fn: string; name: string }>();
  for (const n of profile.nodes) {
    const f = n.callFrame;
    let fileName: string;
    if (SPECIAL.has(f.functionName)) fileName = f.functionName;
    else if (f.url === "") fileName = "(native)";
    else if (f.url.endsWith(".js")) fileName = fileOf(modules, f.scriptId, f.lineNumber) ?? f.url;
    else fileName = f.url;
    const fn = SPECIAL.has(f.functionName) ? f.functionName : `${f.functionName || "(anonymous)"} ${fileName}`;
    where.set(n.id, { file: fileName, fn, name: f.functionName });
  }
  const s: Summary = {
    name,
    totalUs: 0,
    busyUs: 0,
    samples: profile.samples.length,
    gapsUs: 0,
    gapSamples: 0,
    busyGapsUs: 0,
    files: new Map(),
    functions: new Map(),
    inclusive: new Map(),
  };
  const onStack = (id: number, fn: string) => {
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const w = where.get(n)!;
      if (w.name === fn || w.fn === fn) return true;
    }
    return false;
  };
  const add = (m: Map<string, number>, k: string, us: number) => m.set(k, (m.get(k) ?? 0) + us);
  const meanUs = (profile.endTime - profile.startTime) / Math.max(1, profile.samples.length);
  profile.samples.forEach((id, i) => {
    const w = where.get(id)!;
    if (options.under !== undefined && !onStack(id, options.under)) return;
    const deltaUs = profile.timeDeltas[i + 1] ?? meanUs;
    const us = Math.min(deltaUs, options.capUs);
    if (deltaUs > us) {
      s.gapsUs += deltaUs - us;
      s.gapSamples++;
      if (w.file !== "(idle)") s.busyGapsUs += deltaUs - us;
    }
    s.totalUs += us;
    if (w.file !== "(idle)") s.busyUs += us;
    add(s.files, w.file, us);
    add(s.functions, w.fn, us);
    const seen = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const fn = where.get(n)!.fn;
      if (byId.get(n)!.callFrame.functionName === "(root)" || seen.has(fn)) continue;
      seen.add(fn);
      add(s.inclusive, fn, us);
    }
  });
  return s;
}
