/**
 * The OCM fidelity table (docs/ocm-compatibility.md) read as data, and OCM's field lists
 * (test/ocm/crd-fields.ts, derived from open-cluster-management-io/api's CRDs, and
 * test/ocm/crd-fields-policy.ts, from governance-policy-propagator's, by
 * scripts/ocm-crd-fields.mjs). Shared by the Node-side check of the table
 * (test/unit/ocm-compatibility.test.ts) and the walker that submits every field to the hub in
 * workerd (test/worker/ocm-fields.test.ts). Pure: no file or network access.
 */
import crdFields from "./crd-fields.ts";
import policyCrdFields from "./crd-fields-policy.ts";

/** One field of an OCM CRD schema: its path (`[]` list items, `{}` map values) and facts. */
export interface CrdField {
  path: string;
  type: string;
  required?: boolean;
  enum?: unknown[];
  default?: unknown;
  format?: string;
  pattern?: string;
  preserveUnknownFields?: boolean;
}

/** One OCM kind's schema as the hub serves it (group, the served version, its fields). */
export interface CrdKind {
  group: string;
  version: string;
  file: string;
  fields: CrdField[];
}

/** Where a field list was read: the repository and its commit. */
export interface CrdSource {
  repository: string;
  commit: string;
  committed: string;
}

/**
 * OCM's field lists, by kind: `source` is the commit of open-cluster-management-io/api they were
 * read at, `policySource` that of governance-policy-propagator (the policy kinds).
 */
export const OCM: { source: CrdSource; policySource: CrdSource; kinds: Record<string, CrdKind> } = {
  source: crdFields.source,
  policySource: policyCrdFields.source,
  kinds: { ...(crdFields.kinds as Record<string, CrdKind>), ...(policyCrdFields.kinds as Record<string, CrdKind>) },
};

/** What the hub does with a field: honours it as OCM does, refuses it with 422, or differs (how is said). */
export type Verdict = "Supported" | "Refused" | "Differs";

/** One row of the table: the field, the verdict and the note (the test, why, or how). */
export interface Row {
  path: string;
  verdict: Verdict;
  note: string;
}

/**
 * Reads the tables of docs/ocm-compatibility.md: under each `## <Kind> (...)` heading, rows
 * `` | `<path>` | <Verdict> | <note> | ``. Returns the rows by kind, in document order.
 *
 * @throws Error for a row whose verdict is not Supported, Refused or Differs.
 */
export function parseCompatibility(markdown: string): Map<string, Row[]> {
  const out = new Map<string, Row[]>();
  let rows: Row[] | undefined;
  for (const line of markdown.split("\n")) {
    const heading = /^## (\w+) \(/.exec(line);
    if (heading) {
      rows = [];
      out.set(heading[1]!, rows);
      continue;
    }
    if (line.startsWith("## ")) rows = undefined;
    const row = /^\| `([^`]+)` \| (\w+) \| (.*) \|$/.exec(line);
    if (!row || !rows) continue;
    const verdict = row[2]!;
    if (verdict !== "Supported" && verdict !== "Refused" && verdict !== "Differs")
      throw new Error(`${row[1]}: verdict ${verdict} is not Supported, Refused or Differs`);
    rows.push({ path: row[1]!, verdict, note: row[3]!.trim() });
  }
  return out;
}

/**
 * The tests a Supported row names in its note: each `` `test/...ts` "title" `` pair (the file and
 * a test's title, or a part of it, that shows the field honoured).
 */
export function namedTests(note: string): { file: string; title: string }[] {
  return [...note.matchAll(/`(test\/[^`]+\.ts)` "([^"]+)"/g)].map((m) => ({ file: m[1]!, title: m[2]! }));
}
