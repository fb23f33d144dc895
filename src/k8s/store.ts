/**
 * The D1 index: objects stored as JSON rows keyed by (resource, namespace, name), with a global
 * resourceVersion counter bumped in the same atomic `batch()` as every write. Optimistic
 * concurrency is a `WHERE resource_version = ?` on the row, so two writers never both win.
 */
import { and, eq, exists, lt, sql, type SQL } from "drizzle-orm";
import { drizzle, type DrizzleD1Database } from "drizzle-orm/d1";
import type { BatchItem } from "drizzle-orm/batch";
import { counters, events, objects, outbox } from "../db/schema.ts";
import { alreadyExists, conflict, notFound } from "./errors.ts";
import { resourceKey, type KindDefinition } from "./kind.ts";
import type { KubeObject } from "./meta.ts";

/** A (namespace, name) pair; namespace is "" for cluster-scoped kinds. */
export interface StoreKey {
  namespace: string;
  name: string;
}

/** The outcome of a list: items and the collection's resourceVersion (the counter's value). */
export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
}

function fromRow(row: { body: string; resourceVersion: number }): KubeObject {
  const obj = JSON.parse(row.body) as KubeObject;
  obj.metadata.resourceVersion = String(row.resourceVersion);
  return obj;
}

function toBody(obj: KubeObject): string {
  const { resourceVersion: _rv, ...meta } = obj.metadata;
  return JSON.stringify({ ...obj, metadata: meta });
}

const bumpCounter = sql`INSERT INTO counters (id, value) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET value = value + 1`;
const counterValue = sql`(SELECT value FROM counters WHERE id = 1)`;

/** Creates a drizzle handle on the D1 binding. */
export function database(d1: D1Database): DrizzleD1Database {
  return drizzle(d1);
}

/**
 * Reads one object, or null when absent.
 */
export async function getObject(db: DrizzleD1Database, def: KindDefinition, key: StoreKey): Promise<KubeObject | null> {
  const rows = await db
    .select({ body: objects.body, resourceVersion: objects.resourceVersion })
    .from(objects)
    .where(and(eq(objects.resource, resourceKey(def)), eq(objects.namespace, key.namespace), eq(objects.name, key.name)))
    .limit(1);
  return rows[0] ? fromRow(rows[0]) : null;
}

/**
 * Lists the objects of a kind, in one namespace or (namespace undefined) all of them, sorted by
 * namespace then name (as etcd's key order gives), with the collection resourceVersion read in the
 * same batch.
 */
export async function listObjects(db: DrizzleD1Database, def: KindDefinition, namespace: string | undefined): Promise<ListResult> {
  const where = namespace === undefined
    ? eq(objects.resource, resourceKey(def))
    : and(eq(objects.resource, resourceKey(def)), eq(objects.namespace, namespace));
  const [rows, counter] = await db.batch([
    db.select({ body: objects.body, resourceVersion: objects.resourceVersion }).from(objects).where(where).orderBy(objects.namespace, objects.name),
    db.select({ value: counters.value }).from(counters).where(eq(counters.id, 1)),
  ]);
  return { items: rows.map(fromRow), resourceVersion: String(counter[0]?.value ?? 0) };
}

/**
 * Lists the objects of a namespaced kind that carry `name`, in every namespace, sorted by
 * namespace (one query; used where a controller names its objects alike in many namespaces,
 * such as a replica set's ManifestWorks).
 */
export async function listObjectsNamed(db: DrizzleD1Database, def: KindDefinition, name: string): Promise<KubeObject[]> {
  const rows = await db
    .select({ body: objects.body, resourceVersion: objects.resourceVersion })
    .from(objects)
    .where(and(eq(objects.resource, resourceKey(def)), eq(objects.name, name)))
    .orderBy(objects.namespace);
  return rows.map(fromRow);
}

function isUniqueViolation(e: unknown): boolean {
  return /UNIQUE constraint failed|SQLITE_CONSTRAINT/i.test(String((e as Error)?.message ?? e));
}

/**
 * What a commit writes besides the object, in the same atomic batch: an outbox row naming the
 * after-commit work the write owes (src/store/outbox.ts; `createdAt` and `dueAt` epoch
 * milliseconds), written only when the commit's precondition holds, and `extra` statements
 * (e.g. the removal of a deleted cluster's identity row), built from `whileCurrent`, a condition
 * that holds only when the precondition does (use it in their WHERE clause).
 */
export interface CommitExtras {
  outbox?: { id: string; hooks: string; createdAt: number; dueAt: number };
  extra?: (whileCurrent: SQL) => BatchItem<"sqlite">[];
}

/**
 * Commits a computed write with optimistic concurrency.
 *
 * - `expectedRv === null`: the object must not exist (create); a duplicate is 409 AlreadyExists.
 * - otherwise the stored row must still carry `expectedRv`; if not, 409 Conflict (or 404 if gone).
 * - `next === null` deletes the row.
 *
 * Returns the stored object with its new resourceVersion, or null after a delete.
 * `extras` (an outbox row, other statements) are written in the same atomic batch.
 *
 * @throws ApiError 404, 409
 */
export async function commitObject(
  db: DrizzleD1Database,
  def: KindDefinition,
  key: StoreKey,
  next: KubeObject | null,
  expectedRv: number | null,
  extras: CommitExtras = {},
): Promise<KubeObject | null> {
  const resource = resourceKey(def);
  const where = and(eq(objects.resource, resource), eq(objects.namespace, key.namespace), eq(objects.name, key.name));
  const current = and(where, eq(objects.resourceVersion, expectedRv ?? -1));
  const objRef = { group: def.group, plural: def.plural, name: key.name };
  const stale = async () => ((await getObject(db, def, key)) ? conflict(objRef, "the object has been modified; please apply your changes to the latest version and try again") : notFound(objRef));
  // The event and outbox rows are written only when the precondition holds (the same batch is
  // one transaction); their resourceVersion is the counter's value after the bump.
  const onlyIf = (onlyIfCurrent: boolean) => (onlyIfCurrent ? and(eq(counters.id, 1), exists(db.select({ one: sql`1` }).from(objects).where(current))) : eq(counters.id, 1));
  const event = (type: "ADDED" | "MODIFIED" | "DELETED", body: string, onlyIfCurrent: boolean) =>
    db.insert(events).select(
      db
        .select({
          resourceVersion: counters.value,
          resource: sql<string>`${resource}`.as("resource"),
          namespace: sql<string>`${key.namespace}`.as("namespace"),
          name: sql<string>`${key.name}`.as("name"),
          type: sql<string>`${type}`.as("type"),
          body: sql<string>`${body}`.as("body"),
        })
        .from(counters)
        .where(onlyIf(onlyIfCurrent)),
    );
  const owed = extras.outbox;
  const outboxRow = (onlyIfCurrent: boolean) =>
    owed
      ? [
          db.insert(outbox).select(
            db
              .select({
                id: sql<string>`${owed.id}`.as("id"),
                resourceVersion: counters.value,
                resource: sql<string>`${resource}`.as("resource"),
                namespace: sql<string>`${key.namespace}`.as("namespace"),
                name: sql<string>`${key.name}`.as("name"),
                hooks: sql<string>`${owed.hooks}`.as("hooks"),
                createdAt: sql<number>`${owed.createdAt}`.as("created_at"),
                dueAt: sql<number>`${owed.dueAt}`.as("due_at"),
                attempts: sql<number>`0`.as("attempts"),
              })
              .from(counters)
              .where(onlyIf(onlyIfCurrent)),
          ),
        ]
      : [];
  const extra = (onlyIfCurrent: boolean) => extras.extra?.(onlyIfCurrent ? exists(db.select({ one: sql`1` }).from(objects).where(current)) : sql`1`) ?? [];
  const prune = Math.random() < PRUNE_PROBABILITY ? [db.delete(events).where(lt(events.resourceVersion, sql`${counterValue} - ${EVENT_RETENTION}`))] : [];

  if (next === null) {
    if (expectedRv === null) return null;
    const last = await getObject(db, def, key);
    const before = [event("DELETED", last ? toBody(last) : "{}", true), ...outboxRow(true), ...extra(true)];
    const results = await db.batch([db.run(bumpCounter), ...before, db.delete(objects).where(current).returning({ name: objects.name }), ...prune]);
    if ((results[1 + before.length] as unknown[]).length === 0) throw await stale();
    return null;
  }
  const body = toBody(next);
  if (expectedRv === null) {
    try {
      const [, inserted] = await db.batch([
        db.run(bumpCounter),
        db
          .insert(objects)
          .values({ resource, namespace: key.namespace, name: key.name, uid: next.metadata.uid, resourceVersion: sql`${counterValue}`, body })
          .returning({ resourceVersion: objects.resourceVersion }),
        event("ADDED", body, false),
        ...outboxRow(false),
        ...extra(false),
        ...prune,
      ]);
      return { ...next, metadata: { ...next.metadata, resourceVersion: String(inserted[0]!.resourceVersion) } };
    } catch (e) {
      if (isUniqueViolation(e)) throw alreadyExists(objRef);
      throw e;
    }
  }
  const before = [event("MODIFIED", body, true), ...outboxRow(true), ...extra(true)];
  const results = await db.batch([
    db.run(bumpCounter),
    ...before,
    db.update(objects).set({ body, resourceVersion: sql`${counterValue}` }).where(current).returning({ resourceVersion: objects.resourceVersion }),
    ...prune,
  ]);
  const updated = results[1 + before.length] as { resourceVersion: number }[];
  if (updated.length === 0) throw await stale();
  return { ...next, metadata: { ...next.metadata, resourceVersion: String(updated[0]!.resourceVersion) } };
}

/** How many resourceVersions of events are kept for watches (older ones answer 410 Expired). */
export const EVENT_RETENTION = 10_000;
/** Share of commits that also prune old events (keeps pruning off most writes). */
const PRUNE_PROBABILITY = 1 / 64;

/** One change from the event log, as a watch sends it. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: KubeObject;
}

/**
 * Reads the events of a kind after `afterRv` (exclusive), oldest first, at most `limit`, in one
 * namespace or all. Also returns the current value of the resourceVersion counter: events older
 * than `latest - EVENT_RETENTION` may have been pruned, so a watch from before that is 410 Expired.
 */
export async function readEvents(db: DrizzleD1Database, def: KindDefinition, namespace: string | undefined, afterRv: number, limit = 500): Promise<{ events: WatchEvent[]; latest: number }> {
  const conds = [eq(events.resource, resourceKey(def)), sql`${events.resourceVersion} > ${afterRv}`];
  if (namespace !== undefined) conds.push(eq(events.namespace, namespace));
  const [rows, counter] = await db.batch([
    db.select({ rv: events.resourceVersion, type: events.type, body: events.body }).from(events).where(and(...conds)).orderBy(events.resourceVersion).limit(limit),
    db.select({ value: counters.value }).from(counters).where(eq(counters.id, 1)),
  ]);
  return {
    events: rows.map((r) => ({ type: r.type as WatchEvent["type"], object: fromRow({ body: r.body, resourceVersion: r.rv }) })),
    latest: counter[0]?.value ?? 0,
  };
}
