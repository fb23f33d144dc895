/**
 * The statements of the Events' expiry index in D1 (`event_ttl`, migration 0012: each Event's
 * last write time), which the Events controller (src/events/controller.ts) adds to the batch of
 * every Event's write, under the write's precondition (a {@link GuardedShape}).
 */
import { sql } from "drizzle-orm";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import type { Renderable } from "../../db/compiled.ts";
import { guardedShape, type GuardedShape } from "./objects.ts";

const p = sql.placeholder;
const dialect = new SQLiteSyncDialect();
const raw = (statement: ReturnType<typeof sql>): Renderable => ({ toSQL: () => dialect.sqlToQuery(statement) });

/**
 * `written`: the Event's last write time (placeholder `at`, epoch milliseconds) at the commit's
 * key; `removed`: its row deleted with the Event.
 */
export const eventTtlShapes: { written: GuardedShape; removed: GuardedShape } = {
  written: guardedShape((cond) =>
    raw(
      sql`INSERT INTO event_ttl (namespace, name, written_at) SELECT ${p("namespace")}, ${p("name")}, ${p("at")} WHERE ${cond} ON CONFLICT (namespace, name) DO UPDATE SET written_at = excluded.written_at`,
    ),
  ),
  removed: guardedShape((cond) => raw(sql`DELETE FROM event_ttl WHERE namespace = ${p("namespace")} AND name = ${p("name")} AND ${cond}`)),
};
