/**
 * The statements of the cluster sets' member counts in D1 (`clusterset_counts`; what they count
 * and why: src/clusterprofile/set-counts.ts, which binds them): a cluster's move between sets and
 * a set's count or removal, each in its write's batch under the write's precondition (a
 * {@link GuardedShape}); a count row's read, and its recount when marked `recount`.
 *
 * Placeholders: `before`/`after` (a cluster's labels as JSON object text, NULL for none), `name`
 * (the set's), `requirements` (the set's as JSON: `{k, o, v}` rows), `clusters` (the
 * ManagedClusters' resource key), `k`/`v` (the first `In` requirement's key and values as JSON,
 * for a count driven by it).
 */
import { sql, type SQL } from "drizzle-orm";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { bind, compiled, type Renderable } from "../../db/compiled.ts";
import { guardedShape, type GuardedShape } from "./objects.ts";

const p = sql.placeholder;
const dialect = new SQLiteSyncDialect();
/** A raw statement as something {@link compiled} renders. */
const raw = (statement: SQL): Renderable => ({ toSQL: () => dialect.sqlToQuery(statement) });

/**
 * A requirement `r` (a row of `json_each` over requirements) that the labels fail, given `has`,
 * which renders whether the labels hold `r`'s key (with one of its values, when asked).
 */
const fails = (has: (withValue: boolean) => SQL) =>
  sql`CASE json_extract(r.value, '$.o') WHEN 'in' THEN NOT ${has(true)} WHEN 'notin' THEN ${has(true)} WHEN 'exists' THEN NOT ${has(false)} WHEN '!' THEN ${has(false)} ELSE 1 END`;
const valueIn = sql`l.value IN (SELECT v.value FROM json_each(r.value, '$.v') v)`;

/** 1 when `labels` (JSON object text; NULL: no cluster) satisfy every requirement of the count row, else 0. */
const memberJson = (labels: SQL) => {
  const has = (withValue: boolean) =>
    sql`EXISTS (SELECT 1 FROM json_each(${labels}) l WHERE l.key = json_extract(r.value, '$.k')${withValue ? sql` AND ${valueIn}` : sql``})`;
  return sql`(${labels} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM json_each(clusterset_counts.requirements) r WHERE ${fails(has)}))`;
};

/** A set's count, at placeholders `requirements` and `clusters` (the clusters' resource key); driven by `k`/`v` (an `In` requirement) when `driven`. */
const countOf = (driven: boolean) => {
  const name = driven ? sql`d.name` : sql`o.name`;
  const has = (withValue: boolean) =>
    sql`EXISTS (SELECT 1 FROM labels l WHERE l.resource = ${p("clusters")} AND l.namespace = '' AND l.name = ${name} AND l.key = json_extract(r.value, '$.k')${withValue ? sql` AND ${valueIn}` : sql``})`;
  const all = sql`NOT EXISTS (SELECT 1 FROM json_each(${p("requirements")}) r WHERE ${fails(has)})`;
  return driven
    ? sql`(SELECT count(*) FROM labels d WHERE d.resource = ${p("clusters")} AND d.namespace = '' AND d.key = ${p("k")} AND d.value IN (SELECT value FROM json_each(${p("v")})) AND ${all})`
    : sql`(SELECT count(*) FROM objects o WHERE o.resource = ${p("clusters")} AND o.namespace = '' AND ${all})`;
};

/** The cluster change's statement: every set's count moves where membership differs between placeholders `before` and `after`. */
const moveShape = guardedShape((cond) => {
  const was = memberJson(sql`${p("before")}`);
  const is = memberJson(sql`${p("after")}`);
  return raw(sql`UPDATE clusterset_counts SET clusters = clusters + ${is} - ${was} WHERE ${is} <> ${was} AND ${cond}`);
});

/**
 * A set's count row written anew (placeholders `name`: the set's, `requirements`, `clusters`, and
 * `k`/`v` when `driven`): `always` replaces a row there is, `recount` only a row marked `recount`.
 */
const countStatement = (cond: SQL, driven: boolean, replace: "always" | "recount") =>
  raw(
    sql`INSERT INTO clusterset_counts (name, requirements, clusters, recount) SELECT ${p("name")}, ${p("requirements")}, ${countOf(driven)}, 0 WHERE ${cond} ON CONFLICT (name) DO UPDATE SET requirements = excluded.requirements, clusters = excluded.clusters, recount = 0${
      replace === "recount" ? sql` WHERE clusterset_counts.recount = 1` : sql``
    }`,
  );
const countShapes = {
  driven: guardedShape((cond) => countStatement(cond, true, "always")),
  all: guardedShape((cond) => countStatement(cond, false, "always")),
};
const ensureShapes = { driven: compiled(() => countStatement(sql`1`, true, "recount")), all: compiled(() => countStatement(sql`1`, false, "recount")) };
const dropShape = guardedShape((cond) => raw(sql`DELETE FROM clusterset_counts WHERE name = ${p("name")} AND ${cond}`));
const readShape = compiled(() => raw(sql`SELECT clusters, recount FROM clusterset_counts WHERE name = ${p("name")}`));

/** The count statements a write adds to its batch (see the module doc). */
export const setCountShapes: { move: GuardedShape; count: { driven: GuardedShape; all: GuardedShape }; drop: GuardedShape } = {
  move: moveShape,
  count: countShapes,
  drop: dropShape,
};

/** A set's count row: its member count and whether it must be counted again (1: written by migration 0011). */
export interface SetCountRow {
  clusters: number;
  recount: number;
}

/**
 * The count row of set `name`, or undefined (one D1 row read; `all`, not `first`: its result
 * carries D1's meta, rows read, which test/worker/clusterset-counts.test.ts measures).
 * @throws errors of D1
 */
export async function readSetCountRow(d1: D1Database, name: string): Promise<SetCountRow | undefined> {
  return (await bind(d1, readShape(), { name }).all<SetCountRow>()).results[0];
}

/**
 * Counts set `name` again and writes its row unless it is there and not marked `recount` (one
 * statement, atomic with the cluster writes around it); `values` bind the placeholders.
 * @throws errors of D1
 */
export async function recountSet(d1: D1Database, name: string, driven: boolean, values: Record<string, unknown>): Promise<void> {
  await bind(d1, (driven ? ensureShapes.driven : ensureShapes.all)(), { ...values, name }).run();
}
