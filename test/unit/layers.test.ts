/**
 * The layer rules and "no import cycles" (.dependency-cruiser.js, run by `npm run lint`): the
 * checker fails on fixtures with a deliberate cycle and deliberate layer violations, naming each,
 * and passes on a fixture without them (test/unit/fixtures/layers/{violations,clean}, laid out as
 * the repository is); the repository's known violations (.dependency-cruiser-known-violations.json)
 * are only those the storage change removes, and each still occurs (the list only shrinks).
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const fixtures = path.join(root, "test", "unit", "fixtures", "layers");

/** One violation as dependency-cruiser reports it (`-T json`, `summary.violations`). */
interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

/** Runs dependency-cruiser with the repository's rules in `cwd` (its paths are from there), as `npm run lint:layers` does but for the reporter. */
function depcruise(cwd: string, args: string[]): { status: number | null; stdout: string } {
  const bin = path.join(root, "node_modules", "dependency-cruiser", "bin", "dependency-cruiser.mjs");
  const run = spawnSync(process.execPath, [bin, "--config", path.join(root, ".dependency-cruiser.js"), ...args], {
    cwd,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  if (run.error) throw run.error;
  return { status: run.status, stdout: run.stdout };
}

/** The violations dependency-cruiser finds in `dirs` of `cwd` (its JSON report's `summary.violations`). */
function violationsIn(cwd: string, dirs: string[]): Violation[] {
  return (JSON.parse(depcruise(cwd, ["-T", "json", ...dirs]).stdout) as { summary: { violations: Violation[] } }).summary.violations;
}

const named = (vs: Violation[]) => vs.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();

describe("the layer rules", () => {
  it("fail on a deliberate cycle, a kind importing a controller, an object importing a route, an unplaced folder and undeclared bundle imports, naming each", () => {
    const dir = path.join(fixtures, "violations");
    // As the lint runs it: a non-zero exit, and each rule named with the module that breaks it.
    const lint = depcruise(dir, ["src", "durable-objects", "agent"]);
    expect(lint.status).not.toBe(0);
    for (const rule of [
      "no-circular",
      "kinds-imports-controllers",
      "objects-imports-routes",
      "not-in-a-layer",
      "agent-imports-undeclared",
      "dashboard-imports-undeclared",
    ]) {
      expect(lint.stdout).toContain(`error ${rule}: `);
    }
    expect(named(violationsIn(dir, ["src", "durable-objects", "agent"]))).toEqual(
      [
        // src/kinds/widget.ts -> src/placement/controller.ts -> src/kinds/widget.ts
        "no-circular: src/kinds/widget.ts -> src/placement/controller.ts",
        // A cycle of which one edge is `import type` is a cycle too.
        "no-circular: durable-objects/thing.ts -> src/api/routes.ts",
        "kinds-imports-controllers: src/kinds/widget.ts -> src/placement/controller.ts",
        "objects-imports-routes: durable-objects/thing.ts -> src/api/routes.ts",
        "not-in-a-layer: src/gadgets/gadget.ts -> src/k8s/meta.ts",
        "agent-imports-undeclared: agent/src/main.ts -> src/kinds/widget.ts",
        // The dashboard's declared src/kinds/widget.ts imports an undeclared module: the declaration must be closed.
        "dashboard-imports-undeclared: src/kinds/widget.ts -> src/placement/controller.ts",
      ].sort(),
    );
  });

  it("pass on the same layout without them (src/env.ts naming a Durable Object's class for its type is the one upward import)", () => {
    const lint = depcruise(path.join(fixtures, "clean"), ["src", "durable-objects", "agent"]);
    expect(lint.stdout).toContain("no dependency violations found");
    expect(lint.status).toBe(0);
  });

  it("hold on the repository but for the known violations, which are the storage change's only and all still occur", () => {
    // The rules the storage change (issue 41 item 2: the D1 backend under src/store, no raw D1 in
    // feature code, no admission and no object type in src/store) makes hold.
    const storage = new Set(["d1-only-in-the-store", "apimachinery-imports-store", "store-imports-controllers", "store-imports-objects", "no-circular"]);
    // JSON5 as dependency-cruiser reads it; its comments are whole lines.
    const text = fs.readFileSync(path.join(root, ".dependency-cruiser-known-violations.json"), "utf8");
    const known = JSON.parse(text.replace(/^\s*\/\/.*$/gm, "")) as Violation[];
    for (const v of known) {
      expect(storage.has(v.rule.name), `known violation of another rule: ${v.rule.name}: ${v.from} -> ${v.to}`).toBe(true);
      if (v.rule.name === "no-circular") expect(`${v.from} ${v.to}`).toMatch(/src\/store\/store\.ts/);
    }
    const violations = violationsIn(root, ["src", "durable-objects", "agent", "test", "bench", "scripts"]);
    // Each known violation still occurs (delete the fixed ones), and every violation is known.
    expect(named(known).filter((k) => !named(violations).includes(k))).toEqual([]);
    expect(named(violations).filter((v) => !named(known).includes(v))).toEqual([]);
  });
});
