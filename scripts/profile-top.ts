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
 * Each sample weighs the time to the next one, at most `--cap-ms` (default 5 ms): a sample taken
 * before the isolate went unsampled (workerd does not sample an isolate it has left) would carry
 * the whole pause, up to a second, and pass for work. The time over the cap is printed as "gaps"
 * and left out of every table (scripts/profile-summary.ts). `--cap-ms 0` counts no cap.
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
import { DEFAULT_CAP_US, summarize, type ModuleStarts, type Profile, type Summary } from "./profile-summary.ts";

/** Reads a profile and its module map (when written beside it) and sums its samples' time. */
function summarizeFile(file: string, capUs: number, under?: string): Summary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const mapFile = `${file}.modules.json`;
  const modules = existsSync(mapFile) ? (JSON.parse(readFileSync(mapFile, "utf8")) as ModuleStarts) : {};
  return summarize(basename(file), profile, modules, { capUs, under });
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
  options: {
    top: { type: "string", default: "25" },
    per: { type: "string" },
    only: { type: "string" },
    match: { type: "string" },
    under: { type: "string" },
    "cap-ms": { type: "string", default: String(DEFAULT_CAP_US / 1000) },
  },
});
if (positionals.length === 0) {
  console.error(
    "usage: npm run profile:top -- <a.cpuprofile> [<b.cpuprofile> ...] [--top N] [--per N[,N...]] [--only files|functions|inclusive] [--match text] [--under function] [--cap-ms ms]",
  );
  process.exit(2);
}
const capMs = Number(values["cap-ms"]);
if (!(capMs >= 0)) {
  console.error(`--cap-ms: not a number of milliseconds: ${values["cap-ms"]}`);
  process.exit(2);
}
const capUs = capMs === 0 ? Infinity : capMs * 1000;
const summaries = positionals.map((p) => summarizeFile(p, capUs, values.under));
const perList = (values.per ?? "1").split(",").map(Number);
const per = summaries.map((_, i) => perList[i] ?? perList[0]!);
const top = Number(values.top);
for (const [i, s] of summaries.entries()) {
  const idle = s.files.get("(idle)") ?? 0;
  const mapped = existsSync(`${positionals[i]}.modules.json`) ? "" : " (no .modules.json: bundle lines only)";
  const cap = capUs === Infinity ? "no cap" : `each sample at most ${capMs} ms`;
  console.log(
    `${s.name}${values.under ? ` under ${values.under}` : ""}: ${(s.totalUs / 1000).toFixed(0)} ms sampled (${s.samples} samples, ${cap}), busy ${(s.busyUs / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms${per[i] !== 1 ? `; busy ${(s.busyUs / per[i]!).toFixed(0)} µs per unit (${per[i]})` : ""}${mapped}`,
  );
  console.log(
    `  gaps left out: ${(s.gapsUs / 1000).toFixed(0)} ms over ${s.gapSamples} samples (${(s.busyGapsUs / 1000).toFixed(0)} ms of it after a busy sample, which an uncapped sum counts as work)`,
  );
}
if (!values.only || values.only === "files") printTable("Self time by file", summaries, (s) => s.files, top, per, values.match);
if (!values.only || values.only === "functions") printTable("Self time by function", summaries, (s) => s.functions, top, per, values.match);
if (!values.only || values.only === "inclusive") printTable("Inclusive time by function", summaries, (s) => s.inclusive, top, per, values.match);
