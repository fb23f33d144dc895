/**
 * The D1 index: objects stored as JSON rows keyed by (resource, namespace, name), with a global
 * resourceVersion counter bumped in the same atomic `batch()` as every write. Optimistic
 * concurrency is a `WHERE resource_version = ?` on the row, so two writers never both win.
 */
import { and, eq, sql } from "drizzle-orm";
import { drizzle, type DrizzleD1Database } from "drizzle-orm/d1";
import { counters, objects } from "../db/schema.ts";
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

function isUniqueViolation(e: unknown): boolean {
  return /UNIQUE constraint failed|SQLITE_CONSTRAINT/i.test(String((e as Error)?.message ?? e));
}

/**
 * Commits a computed write with optimistic concurrency.
 *
 * - `expectedRv === null`: the object must not exist (create); a duplicate is 409 AlreadyExists.
 * - otherwise the stored row must still carry `expectedRv`; if not, 409 Conflict (or 404 if gone).
 * - `next === null` deletes the row.
 *
 * Returns the stored object with its new resourceVersion, or null after a delete.
 * `extra` statements (e.g. an identity row) run in the same atomic batch.
 *
 * @throws ApiError 404, 409
 */
export async function commitObject(
  db: DrizzleD1Database,
  def: KindDefinition,
  key: StoreKey,
  next: KubeObject | null,
  expectedRv: number | null,
): Promise<KubeObject | null> {
  const where = and(eq(objects.resource, resourceKey(def)), eq(objects.namespace, key.namespace), eq(objects.name, key.name));
  const objRef = { group: def.group, plural: def.plural, name: key.name };
  if (next === null) {
    if (expectedRv === null) return null;
    const res = await db.delete(objects).where(and(where, eq(objects.resourceVersion, expectedRv))).returning({ name: objects.name });
    if (res.length === 0) throw (await getObject(db, def, key)) ? conflict(objRef, "the object has been modified; please apply your changes to the latest version and try again") : notFound(objRef);
    return null;
  }
  const body = toBody(next);
  if (expectedRv === null) {
    try {
      const [, inserted] = await db.batch([
        db.run(bumpCounter),
        db
          .insert(objects)
          .values({ resource: resourceKey(def), namespace: key.namespace, name: key.name, uid: next.metadata.uid, resourceVersion: sql`${counterValue}`, body })
          .returning({ resourceVersion: objects.resourceVersion }),
      ]);
      return { ...next, metadata: { ...next.metadata, resourceVersion: String(inserted[0]!.resourceVersion) } };
    } catch (e) {
      if (isUniqueViolation(e)) throw alreadyExists(objRef);
      throw e;
    }
  }
  const [, updated] = await db.batch([
    db.run(bumpCounter),
    db
      .update(objects)
      .set({ body, resourceVersion: sql`${counterValue}` })
      .where(and(where, eq(objects.resourceVersion, expectedRv)))
      .returning({ resourceVersion: objects.resourceVersion }),
  ]);
  if (updated.length === 0) {
    throw (await getObject(db, def, key)) ? conflict(objRef, "the object has been modified; please apply your changes to the latest version and try again") : notFound(objRef);
  }
  return { ...next, metadata: { ...next.metadata, resourceVersion: String(updated[0]!.resourceVersion) } };
}
