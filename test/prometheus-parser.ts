/**
 * Prometheus' own text-format parser for tests: Python's `prometheus_client.parser` (Debian's
 * `python3-prometheus-client`, which .ci/run installs), run on an exposition. It raises on a line
 * the format does not allow; what it read comes back as families of samples.
 */
import { spawn } from "node:child_process";

/** One sample as the parser read it: its name (with `_total`, `_bucket`, ... ), labels and value. */
export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** One metric family as the parser read it (a counter's name without `_total`, as the parser gives it). */
export interface ParsedFamily {
  name: string;
  type: string;
  help: string;
  samples: ParsedSample[];
}

const SCRIPT = `
import json, math, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": f.name, "type": f.type, "help": f.documentation,
                 "samples": [{"name": s.name, "labels": s.labels, "value": s.value if math.isfinite(s.value) else str(s.value)} for s in f.samples]})
print(json.dumps(out))
`;

/**
 * Parses `text` (text format 0.0.4) with Prometheus' Python parser.
 * @throws Error with the parser's message when the text does not parse
 */
export function parsePrometheus(text: string): Promise<ParsedFamily[]> {
  return new Promise((resolve, reject) => {
    const child = spawn("/usr/bin/python3", ["-c", SCRIPT], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`the Prometheus parser refused the text: ${err.trim().split("\n").pop()}`));
      const families = JSON.parse(out) as ParsedFamily[];
      for (const f of families)
        for (const s of f.samples) s.value = typeof s.value === "string" ? (s.value === "inf" ? Infinity : s.value === "-inf" ? -Infinity : NaN) : s.value;
      resolve(families);
    });
    child.stdin.end(text);
  });
}

/**
 * The value of the sample `name` whose labels include `labels` (all of them, exactly), summed
 * over every such sample; 0 when there is none.
 */
export function sampleSum(families: ParsedFamily[], name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const f of families) {
    for (const s of f.samples) {
      if (s.name !== name) continue;
      if (Object.entries(labels).every(([k, v]) => (s.labels[k] ?? "") === v)) sum += s.value;
    }
  }
  return sum;
}
