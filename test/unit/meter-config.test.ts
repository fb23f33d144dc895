/**
 * The metered hub of `npm run bench:costs` (bench/meter/wrangler.toml) runs with the hub's own
 * settings (wrangler.toml): the same compatibility flags, variables, Durable Object bindings and
 * migrations, D1 and rate limits. Only the entry (`main`) and the migrations folder's relative path
 * differ (neither has `[assets]`: the dashboard's files are modules of the Worker). A binding the hub gains and the meter lacks would leave that
 * part of the hub unmeasured (or failing) in the cost figures.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.join(import.meta.dirname, "..", "..");

/** The settings lines of a wrangler.toml: no comments, blank lines, `main` or `migrations_dir`. */
function settings(file: string): string[] {
  const lines: string[] = [];
  for (const raw of readFileSync(path.join(root, file), "utf8").split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || /^(main|migrations_dir)\s*=/.test(line)) continue;
    lines.push(line);
  }
  return lines;
}

describe("bench/meter/wrangler.toml", () => {
  it("has the hub's settings but for its entry and migrations path", () => {
    const hub = settings("wrangler.toml");
    expect(hub).toContain('name = "METRICS"');
    expect(settings("bench/meter/wrangler.toml")).toEqual(hub);
  });

  it("points at the metered entry and the same migrations", () => {
    const meter = readFileSync(path.join(root, "bench/meter/wrangler.toml"), "utf8");
    expect(meter).toMatch(/^main = "worker.ts"$/m);
    expect(meter).toMatch(/^migrations_dir = "..\/..\/migrations"$/m);
  });
});
