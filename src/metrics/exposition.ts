/**
 * Prometheus' text exposition format, version 0.0.4 (`text/plain; version=0.0.4`): the series key
 * of a sample (`name{label="value",...}`, label values escaped as the format says: `\\`, `\"`,
 * `\n`), and the rendering of metric families with their `# HELP` and `# TYPE` lines. A histogram
 * is kept as one {@link Cell} (its buckets, sum and count) and shown as the format wants it:
 * cumulative `_bucket{le="..."}` series (ending with `le="+Inf"`), `_sum` and `_count`.
 *
 * Small and our own: prom-client (the Node.js client) needs Node's `process`, `cluster` and
 * `perf_hooks` and keeps its registry per process, and the other npm packages are thin wrappers
 * of it or unmaintained. Its output is checked by Prometheus' own Python parser in the tests
 * (test/unit/metrics-exposition.test.ts, test/e2e/metrics.test.ts).
 *
 * @module
 */

/** A metric family's type as the `# TYPE` line says it. */
export type MetricType = "counter" | "gauge" | "histogram";

/**
 * One metric family: its `name` (`[a-zA-Z_:][a-zA-Z0-9_:]*`), `type`, `help` text, label names
 * (in the order series keys list them) and, for a histogram, its bucket upper bounds (seconds,
 * ascending; `+Inf` is added).
 */
export interface MetricFamily {
  name: string;
  type: MetricType;
  help: string;
  labels: readonly string[];
  buckets?: readonly number[];
}

/** Label values of one series, by label name (a label left out is the empty string). */
export type Labels = Readonly<Record<string, string | number | undefined>>;

/** What {@link escapeLabelValue} escapes: a backslash, a double quote, a line feed. */
const NEEDS_ESCAPE = /[\\"\n]/;

/** A label value escaped for the text format: backslash, double quote and line feed. */
export function escapeLabelValue(v: string): string {
  // Nearly every value has nothing to escape: one test, not three replacements.
  if (!NEEDS_ESCAPE.test(v)) return v;
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** HELP text escaped for the text format: backslash and line feed. */
function escapeHelp(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

/**
 * A sample's value as the format writes it (Go's `strconv.FormatFloat(v, 'g', -1, 64)` style:
 * integers without a decimal point, `+Inf`, `-Inf`, `NaN`).
 */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

/**
 * The label part of a series: `{l1="v1",l2="v2"}` with the family's labels in its order (empty
 * values left out, as Prometheus treats an empty label as absent), or `""` without labels.
 * @example labelsPart(["verb", "code"], { verb: "GET", code: 200 }) // '{verb="GET",code="200"}'
 */
export function labelsPart(labelNames: readonly string[], labels: Labels): string {
  const parts: string[] = [];
  for (const l of labelNames) {
    const v = labels[l];
    if (v === undefined || v === "") continue;
    parts.push(`${l}="${escapeLabelValue(String(v))}"`);
  }
  return parts.length ? `{${parts.join(",")}}` : "";
}

/**
 * `labels` (a {@link labelsPart}) with one more label at its end: for a family whose labels are
 * another's with `name` last, and `value` not empty, the same text as {@link labelsPart} of the
 * two together.
 * @example withLabel('{verb="GET"}', "code", "200") // '{verb="GET",code="200"}'
 */
export function withLabel(labels: string, name: string, value: string): string {
  const l = `${name}="${escapeLabelValue(value)}"`;
  return labels ? `${labels.slice(0, -1)},${l}}` : `{${l}}`;
}

/**
 * One series of a family (a counter's or gauge's value, or a histogram's whole state):
 * `family` its name, `labels` its {@link labelsPart}, `values` `[value]` for a counter or gauge;
 * for a histogram the observations per bucket (not cumulative; one more for those above every
 * bound), then the sum and the count: `buckets.length + 3` numbers. Cells of the same series add
 * up element by element ({@link addValues}).
 */
export interface Cell {
  family: string;
  labels: string;
  values: number[];
}

/**
 * The values of one histogram observation of `value` ({@link Cell}): 1 in the first bucket whose
 * bound is at least `value` (or the overflow), `value` as the sum, 1 as the count.
 */
export function observation(family: MetricFamily, value: number): number[] {
  const buckets = family.buckets ?? [];
  const out = new Array<number>(buckets.length + 3).fill(0);
  let i = buckets.findIndex((b) => value <= b);
  if (i < 0) i = buckets.length;
  out[i] = 1;
  out[buckets.length + 1] = value;
  out[buckets.length + 2] = 1;
  return out;
}

/** Adds `b` into `a` element by element (a shorter `a` grows); returns `a`. */
export function addValues(a: number[], b: readonly number[]): number[] {
  for (let i = 0; i < b.length; i++) a[i] = (a[i] ?? 0) + b[i]!;
  return a;
}

/**
 * Renders families and their series in the text format 0.0.4: for each family of `families`
 * that has series (in the order given), `# HELP`, `# TYPE`, then its series sorted by labels; a
 * histogram's as cumulative `_bucket` series by bound ending with `le="+Inf"`, `_sum`, `_count`.
 * Cells of no listed family, or of the wrong length for a histogram, are left out.
 *
 * @param families the families, by the order they are shown
 * @param cells the series ({@link Cell}); two cells of one series must not both be given
 */
export function renderExposition(families: readonly MetricFamily[], cells: Iterable<Cell>): string {
  const grouped = new Map<string, Cell[]>();
  for (const c of cells) {
    let list = grouped.get(c.family);
    if (!list) grouped.set(c.family, (list = []));
    list.push(c);
  }
  const lines: string[] = [];
  for (const f of families) {
    const list = grouped.get(f.name);
    if (!list?.length) continue;
    list.sort((a, b) => (a.labels < b.labels ? -1 : a.labels > b.labels ? 1 : 0));
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    for (const c of list) {
      if (f.type !== "histogram") {
        lines.push(`${f.name}${c.labels} ${formatValue(c.values[0] ?? 0)}`);
        continue;
      }
      const buckets = f.buckets ?? [];
      if (c.values.length !== buckets.length + 3) continue;
      let cumulative = 0;
      buckets.forEach((b, i) => {
        cumulative += c.values[i]!;
        lines.push(`${f.name}_bucket${withLabel(c.labels, "le", formatValue(b))} ${formatValue(cumulative)}`);
      });
      cumulative += c.values[buckets.length]!;
      lines.push(`${f.name}_bucket${withLabel(c.labels, "le", "+Inf")} ${formatValue(cumulative)}`);
      lines.push(`${f.name}_sum${c.labels} ${formatValue(c.values[buckets.length + 1]!)}`);
      lines.push(`${f.name}_count${c.labels} ${formatValue(c.values[buckets.length + 2]!)}`);
    }
  }
  return lines.length ? lines.join("\n") + "\n" : "";
}

/** The Content-Type of the text format 0.0.4. */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
