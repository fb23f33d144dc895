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

/** The earliest last-write time of any Event (epoch milliseconds), or null when there is none: one indexed read. @throws errors of D1 */
export async function oldestEventWrite(d1: D1Database): Promise<number | null> {
  const row = await d1.prepare("SELECT MIN(written_at) AS at FROM event_ttl").first<{ at: number | null }>();
  return row?.at ?? null;
}

/** An Event due to expire: its key and, unless its object is gone, its stored body (JSON) and resourceVersion. */
export interface DueEvent {
  namespace: string;
  name: string;
  body: string | null;
  resourceVersion: number | null;
}

/**
 * Up to `limit` Events last written at or before `cutoff` (epoch milliseconds), oldest first, with
 * their stored rows (`eventsResource`: the Events' `resource` key): an indexed range read of
 * `event_ttl` joined to `objects` by key.
 * @throws errors of D1
 */
export async function dueEvents(d1: D1Database, eventsResource: string, cutoff: number, limit: number): Promise<DueEvent[]> {
  const { results } = await d1
    .prepare(
      "SELECT t.namespace, t.name, o.body, o.resource_version FROM event_ttl t LEFT JOIN objects o ON o.resource = ? AND o.namespace = t.namespace AND o.name = t.name WHERE t.written_at <= ? ORDER BY t.written_at LIMIT ?",
    )
    .bind(eventsResource, cutoff, limit)
    .all<{ namespace: string; name: string; body: string | null; resource_version: number | null }>();
  return results.map((r) => ({ namespace: r.namespace, name: r.name, body: r.body, resourceVersion: r.resource_version }));
}

/** Deletes the `event_ttl` rows of `keys` (rows whose Event is gone), in one batch. @throws errors of D1 */
export async function dropEventTtlRows(d1: D1Database, keys: readonly { namespace: string; name: string }[]): Promise<void> {
  if (keys.length === 0) return;
  await d1.batch(keys.map((k) => d1.prepare("DELETE FROM event_ttl WHERE namespace = ? AND name = ?").bind(k.namespace, k.name)));
}
