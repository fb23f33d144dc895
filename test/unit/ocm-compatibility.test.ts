/**
 * docs/ocm-compatibility.md against OCM's schemas (test/ocm/crd-fields.ts): one table per OCM
 * kind the hub serves, listing exactly the fields of that kind's CRD, each Supported, Refused or
 * Differs with a note; every test a note names exists. Whether the hub does what the verdicts
 * say is test/worker/ocm-fields.test.ts's part (it submits every spec field to the hub).
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { namedTests, OCM, parseCompatibility, type Row } from "../ocm/compatibility.ts";
import { KINDS } from "../../src/kinds/index.ts";

const root = path.join(import.meta.dirname, "..", "..");
const doc = readFileSync(path.join(root, "docs", "ocm-compatibility.md"), "utf8");
const table = parseCompatibility(doc);

/**
 * The row a row's note refers to: "As `<path>`." (an ancestor of the same kind) or "As
 * ManifestWork `<path>`." (a replica set's template field), followed to the row that says it all;
 * the row itself when its note stands alone.
 */
function resolve(kind: string, row: Row): Row | undefined {
  const as = /^As (ManifestWork )?`([^`]+)`\.$/.exec(row.note);
  if (!as) return row;
  const target = (table.get(as[1] ? "ManifestWork" : kind) ?? []).find((r) => r.path === as[2]);
  return target && target !== row ? resolve(as[1] ? "ManifestWork" : kind, target) : undefined;
}

type JsonSchema = { [key: string]: unknown };

/**
 * The field paths a JSON Schema (of a kind's zod schema) knows, in crd-fields' notation (`[]`
 * items, `{}` map values), and the paths below which any field is allowed (maps of anything).
 */
function knownPaths(root: JsonSchema): { exact: Set<string>; open: Set<string> } {
  const defs = (root.$defs ?? {}) as Record<string, JsonSchema>;
  const exact = new Set<string>();
  const open = new Set<string>();
  const walk = (node: JsonSchema, at: string) => {
    if (typeof node.$ref === "string") node = defs[node.$ref.split("/").pop()!] ?? {};
    for (const alt of [...((node.anyOf ?? []) as JsonSchema[]), ...((node.oneOf ?? []) as JsonSchema[]), ...((node.allOf ?? []) as JsonSchema[])])
      walk(alt, at);
    if (at) exact.add(at);
    for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, JsonSchema>)) {
      if (at || !["apiVersion", "kind", "metadata"].includes(name)) walk(child, at ? `${at}.${name}` : name);
    }
    if (node.items) walk(node.items as JsonSchema, `${at}[]`);
    const extra = node.additionalProperties;
    if (extra && typeof extra === "object") {
      if (Object.keys(extra).length === 0) open.add(at);
      else walk(extra as JsonSchema, `${at}{}`);
    }
  };
  walk(root, "");
  return { exact, open };
}

describe("docs/ocm-compatibility.md", () => {
  it("has a table for every OCM kind the hub serves, at the version it serves", () => {
    // A version served by conversion from a stored one has the stored version's table.
    const served = KINDS.filter((k) => k.group.endsWith(".open-cluster-management.io") && !k.viewOf && !k.conversion).map(
      (k) => `${k.kind} ${k.group}/${k.version}`,
    );
    expect(
      Object.entries(OCM.kinds)
        .map(([kind, k]) => `${kind} ${k.group}/${k.version}`)
        .sort(),
    ).toEqual(served.sort());
    expect([...table.keys()].sort()).toEqual(Object.keys(OCM.kinds).sort());
    for (const [kind, k] of Object.entries(OCM.kinds)) expect(doc, kind).toContain(`## ${kind} (${k.group}/${k.version})`);
  });

  for (const [kind, schema] of Object.entries(OCM.kinds)) {
    it(`${kind}: one row for each field of OCM's schema, in its order, each with a note`, () => {
      const rows = table.get(kind) ?? [];
      expect(rows.map((r) => r.path)).toEqual(schema.fields.map((f) => f.path));
      for (const r of rows) expect(r.note.length, `${kind} ${r.path}`).toBeGreaterThan(8);
    });

    it(`${kind}: a Supported row names a test that shows it (or is as a row that does), unless another helper of this round implements it`, () => {
      for (const r of table.get(kind) ?? []) {
        const target = resolve(kind, r);
        expect(target, `${kind} ${r.path}: "${r.note}" refers to no row`).toBeDefined();
        expect(target!.verdict, `${kind} ${r.path} is as ${target!.path}`).toBe(r.verdict);
        if (r.verdict !== "Supported" || target!.note.includes("Implemented in this round")) continue;
        expect(namedTests(target!.note).length, `${kind} ${r.path}: ${target!.note}`).toBeGreaterThan(0);
      }
    });
  }

  it("every test a note names exists, with that title", () => {
    const files = new Map<string, string>();
    const missing: string[] = [];
    for (const rows of table.values()) {
      for (const r of rows) {
        for (const t of namedTests(r.note)) {
          const file = path.join(root, t.file);
          if (!files.has(file)) files.set(file, existsSync(file) ? readFileSync(file, "utf8") : "");
          if (!files.get(file)!.includes(t.title)) missing.push(`${t.file} "${t.title}"`);
        }
      }
    }
    expect([...new Set(missing)]).toEqual([]);
  });

  it("every field of OCM's schemas is known to the hub's (OCM YAML, status included, never meets 400 unknown field)", () => {
    for (const [kind, k] of Object.entries(OCM.kinds)) {
      const def = KINDS.find((d) => d.kind === kind && d.group === k.group && d.version === k.version)!;
      const known = knownPaths(z.toJSONSchema(def.schema, { unrepresentable: "any", io: "input" }) as JsonSchema);
      const unknown = k.fields
        .map((f) => f.path)
        .filter((p) => !known.exact.has(p) && ![...known.open].some((o) => p.startsWith(o) && /^[.[{]/.test(p.slice(o.length))));
      expect(unknown, kind).toEqual([]);
    }
  });

  it("names the commit of open-cluster-management-io/api the field lists come from", () => {
    expect(OCM.source.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(doc).toContain(OCM.source.commit);
    expect(OCM.policySource.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(doc).toContain(OCM.policySource.commit);
  });
});
