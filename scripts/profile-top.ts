/**
 * Prints where a CPU profile of the hub's isolate spends its time (the `.cpuprofile` files that
 * `BENCH_CPU_PROFILE=<prefix>` makes the benchmarks write, bench/cpu-profile.ts): self time by
 * source file, by function, and the functions' inclusive time, each as milliseconds and as a
 * share of the isolate's busy time (the profile less `(idle)`). Given several profiles (an older
 * build's, main's, a branch's), it prints them side by side, so that a regression shows as the
 * rows that grew:
 *
 *   npm run profile:top -- old-1000.cpuprofile main-1000.cpuprofile [--top 30] [--per 1000,1000]
 *
 * `--per N` (or one N per profile, comma-separated) divides each profile's figures by N, e.g. the
 * reports the bench acknowledged, and prints microseconds per unit instead of milliseconds.
 * `--only files|functions|inclusive` prints one table. `--match <text>` keeps the rows whose name
 * contains the text (e.g. `--match src/work/`). `--under <function>` counts only the samples whose
 * stack holds a function of that name (e.g. `--under webSocketMessage`, a cluster object's channel
 * messages; `--under reportWorkStatus`, a work status report): the cost of one path, by file.
 * Functions are named `<name> <file>` (no line: lines move between builds, names rarely do).
 *
 * The bundle's lines are mapped to source files with `<profile>.modules.json`, which
 * bench/cpu-profile.ts writes beside each profile; without it the rows name the bundle
 * (`index.js`). Frames of workerd's own code have no file: `(native)` (e.g. `JSON.parse`, `URL`),
 * `(program)` (the runtime outside JavaScript), `(garbage collector)`; `cloudflare-internal:...`
 * are the bindings' JavaScript (D1's).
 */
import { existsSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";

/** A node of a V8 `.cpuprofile` (the Chrome DevTools protocol's `Profiler.ProfileNode`). */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; scriptId: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

/** A V8 `.cpuprofile` (`Profiler.Profile`): times in microseconds. */
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** One profile's times (microseconds) by row name, for each table. */
interface Summary {
  name: string;
  /** All sampled time, and the busy part of it (without `(idle)`). */
  totalUs: number;
  busyUs: number;
  samples: number;
  files: Map<string, number>;
  functions: Map<string, number>;
  inclusive: Map<string, number>;
}

/** Frames that are the runtime's, not a script's: counted under their own name. */
const SPECIAL = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);

/** The source file of bundle line `line` of script `scriptId`, from the module map (or undefined). */
function fileOf(modules: Record<string, [number, string][]>, scriptId: string, line: number): string | undefined {
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

/** Reads a profile and its module map (when written beside it) and sums its samples' time. */
function summarize(file: string, under?: string): Summary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const mapFile = `${file}.modules.json`;
  const modules = existsSync(mapFile) ? (JSON.parse(readFileSync(mapFile, "utf8")) as Record<string, [number, string][]>) : {};
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
    name: basename(file),
    totalUs: 0,
    busyUs: 0,
    samples: profile.samples.length,
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
  // Sample i lasts until sample i+1 (Chrome DevTools' attribution); the last one gets the mean.
  const meanUs = (profile.endTime - profile.startTime) / Math.max(1, profile.samples.length);
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i + 1] ?? meanUs;
    const w = where.get(id)!;
    if (under !== undefined && !onStack(id, under)) return;
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

/** Prints one table: the top `top` rows of `pick` over the profiles (ordered by the last profile's figure). */
function printTable(title: string, summaries: Summary[], pick: (s: Summary) => Map<string, number>, top: number, per: number[], match?: string): void {
  const keys = new Set<string>();
  for (const s of summaries) for (const k of pick(s).keys()) if (!match || k.includes(match)) keys.add(k);
  const last = summaries[summaries.length - 1]!;
  const rank = (k: string) => Math.max(...summaries.map((s) => (pick(s).get(k) ?? 0) / s.busyUs));
  const rows = [...keys]
    .filter((k) => k !== "(idle)")
    .sort((a, b) => (pick(last).get(b) ?? 0) / last.busyUs - (pick(last).get(a) ?? 0) / last.busyUs || rank(b) - rank(a));
  const unit = per.some((p) => p !== 1) ? "µs/unit" : "ms";
  const cell = (s: Summary, i: number, k: string) => {
    const us = pick(s).get(k) ?? 0;
    const v = unit === "ms" ? (us / 1000).toFixed(1) : (us / per[i]!).toFixed(1);
    return `${v.padStart(8)} ${((100 * us) / s.busyUs).toFixed(1).padStart(5)}%`;
  };
  console.log(`\n${title} (${unit} and share of busy time; ordered by ${last.name})`);
  console.log(`${summaries.map((s) => s.name.slice(0, 15).padStart(15)).join(" ")}  name`);
  for (const k of rows.slice(0, top)) console.log(`${summaries.map((s, i) => cell(s, i, k)).join(" ")}  ${k}`);
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: "string", default: "25" }, per: { type: "string" }, only: { type: "string" }, match: { type: "string" }, under: { type: "string" } },
});
if (positionals.length === 0) {
  console.error(
    "usage: npm run profile:top -- <a.cpuprofile> [<b.cpuprofile> ...] [--top N] [--per N[,N...]] [--only files|functions|inclusive] [--match text] [--under function]",
  );
  process.exit(2);
}
const summaries = positionals.map((p) => summarize(p, values.under));
const perList = (values.per ?? "1").split(",").map(Number);
const per = summaries.map((_, i) => perList[i] ?? perList[0]!);
const top = Number(values.top);
for (const [i, s] of summaries.entries()) {
  const idle = s.files.get("(idle)") ?? 0;
  const mapped = existsSync(`${positionals[i]}.modules.json`) ? "" : " (no .modules.json: bundle lines only)";
  console.log(
    `${s.name}${values.under ? ` under ${values.under}` : ""}: ${(s.totalUs / 1000).toFixed(0)} ms sampled (${s.samples} samples), busy ${(s.busyUs / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms${per[i] !== 1 ? `; busy ${(s.busyUs / per[i]!).toFixed(0)} µs per unit (${per[i]})` : ""}${mapped}`,
  );
}
if (!values.only || values.only === "files") printTable("Self time by file", summaries, (s) => s.files, top, per, values.match);
if (!values.only || values.only === "functions") printTable("Self time by function", summaries, (s) => s.functions, top, per, values.match);
if (!values.only || values.only === "inclusive") printTable("Inclusive time by function", summaries, (s) => s.inclusive, top, per, values.match);
