/**
 * The D1 index: objects stored as JSON rows keyed by (resource, namespace, name), with a global
 * resourceVersion: every write's own statement takes the watch log's next version (its triggers
 * log the watch event: migrations/0010_write_triggers.sql, 0017_counter_per_batch.sql) and the
 * counter row follows once at the end of the same atomic `batch()`. Optimistic
 * concurrency is a `WHERE resource_version = ?` on the row, so two writers never both win.
 *
 * The fields a kind lists in `encryptedFields` (a Secret's `data`) are sealed with the handle's
 * keyring on every write (object and event rows alike) and opened on every read, as
 * kube-apiserver's storage transformers do (src/k8s/encryption.ts); rows stored before encryption
 * are read as they are and sealed on their next write.
 */
import { frozenJson, stringifyObject } from "../../k8s/frozen-json.ts";
import { and, eq, exists, gt, inArray, lt, max, notExists, sql, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { drizzle, type DrizzleD1Database } from "drizzle-orm/d1";
import { bodyChunks, counters, events, labels, objects, outbox, ownerReferences, sharedSpecs } from "../../db/schema.ts";
import { bind, builder, compiled, type CompiledStatement, type Renderable } from "../../db/compiled.ts";
import { EncryptionError, isSealed, Keyring, keyringOf } from "../../k8s/encryption.ts";
import { CommitGroups, groupsOfDatabase } from "../group-commit.ts";
import { alreadyExists, ApiError, badRequest, conflict, notFound, tooLargeResourceVersion } from "../../k8s/errors.ts";
import { d1Limits, splitUtf8, utf8Bytes, utf8BytesAtMost } from "./limits.ts";
import { resourceKey, type KindDefinition } from "../../k8s/kind.ts";
import { clock } from "../../clock.ts";
import type { KubeObject } from "../../k8s/meta.ts";

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

/**
 * A row as read: its body, resourceVersion and, for an object whose spec is stored shared
 * (`KindDefinition.sharedSpec`), the spec's key (`specRef`) and text (`spec`, read with the row).
 */
interface Row {
  body: string;
  resourceVersion: number;
  specRef?: string | null;
  spec?: string | null;
  /**
   * For a body too large for one D1 row: the key of its pieces in `body_chunks` (then `body` is
   * the row's stub until {@link withBodies} puts the whole body back). Null or absent: `body` is
   * the whole body.
   */
  bodyRef?: string | null;
}

/**
 * The object of a row: its body with the resourceVersion set and, when the row refers to a shared
 * spec, that spec in the body's `"spec":null` (its place among the keys as written). `resource`
 * (the kind's resource key), given for a row of `objects`, remembers the row's spec reference
 * ({@link noteSpecRef}).
 * @throws ApiError 500 when the row's shared spec is missing
 */
function fromRow(row: Row, resource?: string): KubeObject {
  const obj = JSON.parse(row.body) as KubeObject;
  if (row.specRef) {
    if (typeof row.spec !== "string")
      throw new ApiError(
        500,
        "InternalError",
        `Internal error occurred: the stored spec ${row.specRef} of ${obj.metadata?.namespace ?? ""}/${obj.metadata?.name} is missing`,
      );
    obj.spec = JSON.parse(row.spec);
  }
  if (resource !== undefined && (row.specRef || specRefs.size > 0))
    noteSpecRef(resource, obj.metadata.namespace ?? "", obj.metadata.name, row.resourceVersion, row.specRef ?? null);
  obj.metadata = withResourceVersion(obj.metadata, row.resourceVersion);
  return obj;
}

/** Most row versions {@link noteSpecRef} remembers (past it, it starts afresh). */
const SPEC_REFS_MAX = 50_000;
/** `<resource> <namespace> <name> <resourceVersion>` of a row version → the shared spec its row refers to. */
const specRefs = new Map<string, string>();
const versionKey = (resource: string, namespace: string, name: string, rv: number) => `${resource}\u0000${namespace}\u0000${name}\u0000${rv}`;

/**
 * Remembers that the row of (`resource`, `namespace`, `name`) at resourceVersion `rv` refers to
 * shared spec `ref` (read, or written by this isolate; null: a read found it refers to none): a
 * write on that version that keeps the spec (a status report) neither writes the spec's row nor
 * binds its text, since the row it replaces (its precondition, which checks the reference too)
 * keeps the spec referenced, so no sweep can have taken it.
 */
function noteSpecRef(resource: string, namespace: string, name: string, rv: number, ref: string | null): void {
  const key = versionKey(resource, namespace, name, rv);
  if (ref === null) {
    specRefs.delete(key);
    return;
  }
  if (specRefs.size >= SPEC_REFS_MAX) specRefs.clear();
  specRefs.set(key, ref);
}

/**
 * `meta` with `resourceVersion` set to `rv`, and `managedFields` (when present) kept last, as
 * ObjectMeta orders its fields: an object reads the same, key for key, whether it comes from a
 * row (whose body has no resourceVersion) or from the write that stored it. Mutates and returns
 * `meta`.
 */
function withResourceVersion(meta: KubeObject["metadata"], rv: number): KubeObject["metadata"] {
  const managed = meta.managedFields;
  if (managed !== undefined) delete meta.managedFields;
  meta.resourceVersion = String(rv);
  if (managed !== undefined) meta.managedFields = managed;
  return meta;
}

/** A drizzle handle on the D1 index, with the keyring that seals the fields a kind stores encrypted. */
export type Database = DrizzleD1Database & { readonly keyring?: Keyring };

const noKeys = new Keyring(undefined);
/** Objects read with a field stored unsealed or sealed by a key other than the primary one. */
const staleObjects = new WeakSet<KubeObject>();

/**
 * Whether `obj`, as read from the store, holds a field stored unencrypted or encrypted with a key
 * other than the primary one: its next write is stored even when it changes nothing, as
 * kube-apiserver's GuaranteedUpdate rewrites an object its transformer reports stale (how
 * rewriting every Secret as read re-encrypts them after a key rotation, docs/encryption.md).
 */
export function needsRewrite(obj: KubeObject): boolean {
  return staleObjects.has(obj);
}

/** What a sealed field is bound to (the additional authenticated data): `<group>/<plural>/<namespace>/<name>`. */
function sealContext(def: KindDefinition, obj: KubeObject): string {
  return `${resourceKey(def)}/${obj.metadata.namespace ?? ""}/${obj.metadata.name}`;
}

function transformError(def: KindDefinition, obj: KubeObject, verb: "encrypt" | "decrypt", e: unknown): unknown {
  if (!(e instanceof EncryptionError)) return e;
  const name = obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
  return new ApiError(500, "InternalError", `Internal error occurred: unable to ${verb} ${def.plural} "${name}": ${e.message}`);
}

/**
 * Least JSON length of a spec stored shared (`KindDefinition.sharedSpec`): a smaller one stays in
 * the object's row, where rewriting it costs less than another row and its reference.
 */
export const SHARED_SPEC_MIN_CHARS = 2048;

/** The SHA-256 of each frozen spec (src/k8s/frozen-json.ts: it cannot change), computed once. */
const frozenHashes = new WeakMap<object, string>();

async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  let out = "";
  for (const b of digest) out += b.toString(16).padStart(2, "0");
  return out;
}

/** A spec stored shared: its key (the SHA-256 of its text, hex) and its JSON text. */
interface SharedSpec {
  hash: string;
  text: string;
}

/**
 * The row of an object: its body, and for a kind with `sharedSpec` the spec stored apart (null:
 * the spec stays in the body, being small or absent; undefined for other kinds).
 * @throws ApiError 500 when the encrypted fields cannot be sealed
 */
async function toRow(db: DrizzleD1Database, def: KindDefinition, obj: KubeObject): Promise<{ body: string; spec?: SharedSpec | null }> {
  if (!def.sharedSpec) return { body: await toBody(db, def, obj) };
  const spec = obj.spec;
  if (spec === null || typeof spec !== "object") return { body: await toBody(db, def, obj), spec: null };
  const frozen = frozenJson(spec);
  const text = frozen ?? JSON.stringify(spec);
  if (text.length < SHARED_SPEC_MIN_CHARS) return { body: await toBody(db, def, obj), spec: null };
  let hash = frozen === undefined ? undefined : frozenHashes.get(spec);
  if (hash === undefined) {
    hash = await sha256Hex(text);
    if (frozen !== undefined) frozenHashes.set(spec, hash);
  }
  return { body: await toBody(db, def, obj, { spec: "null" }), spec: { hash, text } };
}

/**
 * The row body of an object: without `metadata.resourceVersion`, its encrypted fields sealed;
 * `raw` the JSON text of top-level fields serialised already (`stringifyObject`).
 * @throws ApiError 500 when they cannot be sealed
 */
async function toBody(db: DrizzleD1Database, def: KindDefinition, obj: KubeObject, raw?: Record<string, string>): Promise<string> {
  const { resourceVersion: _rv, ...meta } = obj.metadata;
  const stored: Record<string, unknown> = { ...obj, metadata: meta };
  for (const field of def.encryptedFields ?? []) {
    if (stored[field] === undefined) continue;
    try {
      stored[field] = await ((db as Database).keyring ?? noKeys).seal(JSON.stringify(stored[field]), sealContext(def, obj));
    } catch (e) {
      throw transformError(def, obj, "encrypt", e);
    }
  }
  // A frozen rendered spec's kept text is spliced in (src/k8s/frozen-json.ts), not serialised again.
  return stringifyObject(stored, raw);
}

/** Opens the encrypted fields of an object read from a row (in place). @throws ApiError 500 when they cannot be opened */
async function openFields(db: DrizzleD1Database, def: KindDefinition, obj: KubeObject): Promise<KubeObject> {
  for (const field of def.encryptedFields ?? []) {
    const value = obj[field];
    if (value === undefined) continue;
    if (!isSealed(value)) {
      staleObjects.add(obj);
      continue;
    }
    try {
      const opened = await ((db as Database).keyring ?? noKeys).open(value, sealContext(def, obj));
      obj[field] = JSON.parse(opened.plaintext);
      if (opened.stale) staleObjects.add(obj);
    } catch (e) {
      throw transformError(def, obj, "decrypt", e);
    }
  }
  return obj;
}

/**
 * Room left in a D1 row for its columns besides the body (the key, uid, references), in bytes: a
 * body stays in its row while it is at most `rowBytes` less this ({@link D1Limits}).
 */
const ROW_RESERVE_BYTES = 8 * 1024;
/** Longest JSON text of a field the stub of a large object keeps ({@link stubOf}), in UTF-16 units. */
const STUB_FIELD_MAX_CHARS = 4 * 1024;

/** The pieces of `body_chunks` in order of one body, by its key (placeholder `hash`). */
const chunksShape = compiled(() =>
  builder
    .select({ body: bodyChunks.body })
    .from(bodyChunks)
    .where(eq(bodyChunks.hash, p("hash")))
    .orderBy(bodyChunks.seq),
);

/**
 * `row` with its whole body: the pieces its `bodyRef` names, read from `body_chunks` in order and
 * joined (one D1 read; only rows of bodies too large for one row have a `bodyRef`).
 * @throws ApiError 500 when the pieces are missing
 */
async function withWholeBody(db: DrizzleD1Database, row: Row): Promise<Row> {
  const { results } = await bind(d1Of(db), chunksShape(), { hash: row.bodyRef }).all<{ body: string }>();
  if (results.length === 0) throw new ApiError(500, "InternalError", `Internal error occurred: the stored body ${row.bodyRef} is missing`);
  return { ...row, body: results.map((r) => r.body).join(""), bodyRef: null };
}

/**
 * The row body kept in place of a body too large for one row: the object's top-level fields, and
 * of each top-level object (`metadata`, `spec`, `status`) the fields whose JSON is short (at most
 * {@link STUB_FIELD_MAX_CHARS}), so the SQL that reads a field of the row in place (the
 * namespace check's `metadata.deletionTimestamp`, the fleet gauges' `status.conditions`) reads
 * what the object holds; a KubeFleet placement's per-cluster `status.placementStatuses` is left
 * out. Never read as the object: a read takes the whole body from its pieces.
 */
function stubOf(obj: KubeObject): string {
  const short = (v: unknown) => {
    const text = JSON.stringify(v);
    return text === undefined || text.length <= STUB_FIELD_MAX_CHARS;
  };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (v !== null && typeof v === "object" && !Array.isArray(v))
      out[k] = Object.fromEntries(Object.entries(v as Record<string, unknown>).filter(([, f]) => short(f)));
    else if (short(v)) out[k] = v;
  }
  return JSON.stringify(out);
}

/** A body kept in pieces ({@link storedBody}): its key (SHA-256 of the body, hex) and its pieces in order. */
interface BodyChunks {
  hash: string;
  pieces: string[];
  /** The pieces' UTF-8 bytes in all. */
  bytes: number;
}

/**
 * What the row of `obj` stores for its row body `body` (JSON, UTF-8 `bytes` long at most): the
 * body itself when it fits a D1 row with its other columns, else the object's stub
 * ({@link stubOf}) and the body in pieces of at most a row each, written to `body_chunks` in the
 * write's batch (content-addressed by the body's SHA-256, as shared specs are).
 * @throws ApiError 413 RequestEntityTooLarge when the body exceeds the largest object the store
 *   keeps ({@link D1Limits.objectBytes})
 */
async function storedBody(def: KindDefinition, obj: KubeObject, body: string): Promise<{ body: string; chunks?: BodyChunks }> {
  const limits = d1Limits();
  const inline = limits.rowBytes - ROW_RESERVE_BYTES;
  if (body.length * 3 <= inline) return { body };
  const bytes = utf8Bytes(body);
  if (bytes > limits.objectBytes) {
    const name = obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
    throw new ApiError(
      413,
      "RequestEntityTooLarge",
      `Request entity too large: ${def.plural} "${name}" would be stored as ${bytes} bytes; limit is ${limits.objectBytes} bytes`,
    );
  }
  if (bytes <= inline) return { body };
  return { body: stubOf(obj), chunks: { hash: await sha256Hex(body), pieces: splitUtf8(body, inline), bytes } };
}

/** An object read from a row of `objects` (`event` false) or of the event log (true). */
async function readRow(db: DrizzleD1Database, def: KindDefinition, row: Row, event = false): Promise<KubeObject> {
  return openFields(db, def, fromRow(row.bodyRef ? await withWholeBody(db, row) : row, event ? undefined : resourceKey(def)));
}

/**
 * Creates a drizzle handle on the D1 binding. `keyring` (`keyringOf(env)`) is needed to read or
 * write a kind with `encryptedFields`; without it such reads and writes fail with 500.
 */
export function database(d1: D1Database, keyring?: Keyring): Database {
  // One handle per binding and keyring, made once: building drizzle's handle on every call took
  // about 1 % of the isolate's time under bench:propagation.
  let handles = databases.get(d1);
  if (!handles) databases.set(d1, (handles = { keyed: new WeakMap() }));
  if (!keyring) return (handles.plain ??= Object.assign(drizzle(d1), { keyring: undefined }));
  let db = handles.keyed.get(keyring);
  if (!db) handles.keyed.set(keyring, (db = Object.assign(drizzle(d1), { keyring })));
  return db;
}

/**
 * The D1 index of a Worker environment (its `DB` binding), with the keyring that seals and opens
 * encrypted fields (`FLOTILLA_ENCRYPTION_KEYS`, src/k8s/encryption.ts): the handle every reader and
 * writer of the D1 backend uses. Made once per binding and keyring.
 */
export function d1Database(env: { DB: D1Database; FLOTILLA_ENCRYPTION_KEYS?: string }): Database {
  return database(env.DB, keyringOf(env));
}

/** The handles {@link database} made, by D1 binding: without a keyring, and by keyring. */
const databases = new WeakMap<D1Database, { plain?: Database; keyed: WeakMap<Keyring, Database> }>();

const p = sql.placeholder;
/**
 * The resourceVersion counter's value as of the end of the last committed batch, inside a
 * statement: what readers outside a commit read (a commit's batch sets it once, at its end,
 * {@link counterCatchUpShape}).
 */
const counterValue = sql`(SELECT value FROM counters WHERE id = 1)`;
/**
 * The head of the watch log inside a commit's batch: the greater of the counter and the newest
 * event (a read by the events' primary key), so each write of a batch takes the next version
 * while the counter row is written once, at the batch's end (migrations/0017_counter_per_batch.sql;
 * before, each write's trigger wrote it). A row written by hand with its version and the counter
 * moved to it (a seeded fleet, bench/scale.ts) counts through the counter.
 */
const logHead = sql`(SELECT max(c.value, coalesce((SELECT max(e.resource_version) FROM events AS e), 0)) FROM counters AS c WHERE c.id = 1)`;
/** The row of the object at placeholders resource, namespace and name. */
const keyIs = (cols: { resource: SQLiteColumn; namespace: SQLiteColumn; name: SQLiteColumn }) =>
  and(eq(cols.resource, p("resource")), eq(cols.namespace, p("namespace")), eq(cols.name, p("name")));
/**
 * The text of the shared spec a row of `objects` or `events` refers to (null when it refers to
 * none), inside a select, as its column `spec` (written out in full: drizzle leaves the columns
 * of a one-table select unqualified, which in a subquery would name the inner table's).
 */
const sharedSpecOf = (table: "objects" | "events") =>
  sql<string | null>`(SELECT s."body" FROM "shared_specs" AS s WHERE s."hash" = ${sql.raw(`"${table}"."spec_ref"`)})`.as("spec");
/** What a compiled read selects of an object's row. */
const rowColumns = () => ({
  body: objects.body,
  resource_version: objects.resourceVersion,
  spec_ref: objects.specRef,
  spec: sharedSpecOf("objects"),
  body_ref: objects.bodyRef,
});
/** What a query read selects of an object's row (as {@link Row}). */
const rowFields = () => ({
  body: objects.body,
  resourceVersion: objects.resourceVersion,
  specRef: objects.specRef,
  spec: sharedSpecOf("objects"),
  bodyRef: objects.bodyRef,
});
/**
 * What a query read selects of the row of a kind that stores no shared spec (its `spec_ref` is
 * always null): the body and the resourceVersion, without the shared spec's lookup, which a
 * list of 10,000 ManagedClusters ran (and decoded) per row.
 */
const plainRowFields = () => ({ body: objects.body, resourceVersion: objects.resourceVersion, bodyRef: objects.bodyRef });
/** {@link rowFields}, or {@link plainRowFields} for a kind without shared specs. */
const rowFieldsOf = (def: KindDefinition) => (def.sharedSpec ? rowFields() : plainRowFields());
const getShape = compiled(() => builder.select(rowColumns()).from(objects).where(keyIs(objects)).limit(1));
const listShape = compiled(() =>
  builder
    .select(rowColumns())
    .from(objects)
    .where(and(eq(objects.resource, p("resource")), eq(objects.namespace, p("namespace"))))
    .orderBy(objects.namespace, objects.name),
);
const listAllShape = compiled(() =>
  builder
    .select(rowColumns())
    .from(objects)
    .where(eq(objects.resource, p("resource")))
    .orderBy(objects.namespace, objects.name),
);
const counterShape = compiled(() => builder.select({ value: counters.value }).from(counters).where(eq(counters.id, 1)));

/** A row as D1 returns it for the compiled reads above. */
interface RawRow {
  body: string;
  resource_version: number;
  spec_ref: string | null;
  spec: string | null;
  body_ref: string | null;
}

/** A {@link RawRow} as {@link Row}. */
const rowOf = (r: RawRow): Row => ({ body: r.body, resourceVersion: r.resource_version, specRef: r.spec_ref, spec: r.spec, bodyRef: r.body_ref });

/** The D1 binding under a drizzle handle (what compiled statements run on). */
function d1Of(db: DrizzleD1Database): D1Database {
  return (db as DrizzleD1Database & { $client: D1Database }).$client;
}

/**
 * Reads one object, or null when absent.
 */
export async function getObject(db: DrizzleD1Database, def: KindDefinition, key: StoreKey): Promise<KubeObject | null> {
  const row = await bind(d1Of(db), getShape(), { resource: resourceKey(def), namespace: key.namespace, name: key.name }).first<RawRow>();
  return row ? readRow(db, def, rowOf(row)) : null;
}

/**
 * Reads several objects of a kind at once, in one D1 call (a batch of the reads): per key in
 * order, the object or null.
 */
export async function getObjects(db: DrizzleD1Database, def: KindDefinition, keys: readonly StoreKey[]): Promise<(KubeObject | null)[]> {
  if (keys.length === 0) return [];
  if (keys.length === 1) return [await getObject(db, def, keys[0]!)];
  const d1 = d1Of(db);
  const resource = resourceKey(def);
  const results = await d1.batch<RawRow>(keys.map((k) => bind(d1, getShape(), { resource, namespace: k.namespace, name: k.name })));
  return Promise.all(results.map((r) => (r.results[0] ? readRow(db, def, rowOf(r.results[0])) : null)));
}

/**
 * Lists the objects of a kind, in one namespace or (namespace undefined) all of them, sorted by
 * namespace then name (as etcd's key order gives), with the collection resourceVersion read in the
 * same batch.
 */
export async function listObjects(db: DrizzleD1Database, def: KindDefinition, namespace: string | undefined): Promise<ListResult> {
  const d1 = d1Of(db);
  const rows =
    namespace === undefined ? bind(d1, listAllShape(), { resource: resourceKey(def) }) : bind(d1, listShape(), { resource: resourceKey(def), namespace });
  const [found, counter] = await d1.batch<RawRow | { value: number }>([rows, bind(d1, counterShape(), {})]);
  const items = (found!.results as RawRow[]).map((r) => readRow(db, def, rowOf(r)));
  return { items: await Promise.all(items), resourceVersion: String((counter!.results[0] as { value: number } | undefined)?.value ?? 0) };
}

/**
 * Lists the objects of each kind of `defs` in namespace `namespace`, in one D1 round trip (one
 * statement per kind in a batch, which D1 runs as one transaction: a consistent snapshot): per
 * kind (in the order of `defs`) its objects sorted by name, as {@link listObjects} lists one kind.
 * What a namespace's content costs a placement's selection (src/fleet/select.ts): one call, not
 * one per served kind.
 */
export async function listNamespaceContent(db: DrizzleD1Database, defs: readonly KindDefinition[], namespace: string): Promise<KubeObject[][]> {
  if (defs.length === 0) return [];
  const d1 = d1Of(db);
  const found = await d1.batch<RawRow>(defs.map((def) => bind(d1, listShape(), { resource: resourceKey(def), namespace })));
  return Promise.all(
    defs.map((def, i) =>
      Promise.all((found[i]!.results as RawRow[]).map((r) => readRow(db, def, { body: r.body, resourceVersion: r.resource_version, bodyRef: r.body_ref }))),
    ),
  );
}

/**
 * Most values a label requirement's `in` binds one by one; past it they are bound as one JSON
 * array (`json_each`), so that a selector of many values stays within D1's 100 bound parameters
 * per statement ({@link D1Limits.boundParameters}) where it answered 500.
 */
const IN_LIST_MAX = 50;

/** A label index row's value among `values`, inside a statement (see {@link IN_LIST_MAX}). */
function valueIn(values: readonly string[]): SQL {
  return values.length <= IN_LIST_MAX ? inArray(labels.value, [...values]) : sql`${labels.value} IN (SELECT value FROM json_each(${JSON.stringify(values)}))`;
}

/** Options of {@link listPage}. */
export interface PageOptions {
  /** Start after this key (exclusive), in (namespace, name) order: where a `continue` token points. */
  after?: StoreKey;
  /** Most items to return; undefined for all of them. */
  limit?: number;
  /** Keeps only the objects it accepts (label and field selectors), read before decryption. */
  filter?: (obj: KubeObject) => boolean;
  /** Counts the rows after the page when more remain (`remainingItemCount`; one COUNT query). */
  countRemaining?: boolean;
  /**
   * A label requirement every listed object meets (`key` with one of `values`, or with any value
   * when `values` is undefined): the rows are then read through the label index, so the page reads
   * the objects that carry the label, not every object of the kind. `filter` still decides.
   */
  index?: LabelIndexRequirement;
}

/** A positive label requirement the label index answers: `key` in `values`, or `key` exists (no values). */
export interface LabelIndexRequirement {
  key: string;
  values?: string[];
}

/** One page of a list. */
export interface Page {
  items: KubeObject[];
  /** The collection's resourceVersion (the counter's value when the first rows were read). */
  resourceVersion: string;
  /** Set when rows remain after the page: the key of its last item, where the next page starts. */
  next?: StoreKey;
  /** Rows after the page (`countRemaining` and `next` only). */
  remaining?: number;
  /** Rows read from D1 for this page (what bounds its memory). */
  rowsRead: number;
}

/** Largest number of rows one page reads in one query, and so holds at once besides its items. */
export const LIST_CHUNK_ROWS = 500;

/**
 * Reads one page of a kind's objects in (namespace, name) order (etcd's key order), in one
 * namespace or (namespace undefined) all, starting after `after`: keyset pagination in SQL
 * (`(namespace, name) > (?, ?) ORDER BY namespace, name LIMIT n` on the primary key), so a page
 * never holds more than `limit` items plus one chunk of at most {@link LIST_CHUNK_ROWS} rows. Without
 * a filter one query of `limit + 1` rows answers, the extra row telling whether more remain; with a
 * filter, chunks start at `limit + 1` rows and double until the page is full or the rows end, as
 * kube-apiserver's etcd3 store pages a filtered list. The counter is read in the same batch as the
 * first chunk; later chunks may show writes after it (the list is not a snapshot).
 *
 * @throws ApiError 500 when an encrypted field cannot be opened.
 */
export async function listPage(db: DrizzleD1Database, def: KindDefinition, namespace: string | undefined, opts: PageOptions = {}): Promise<Page> {
  const want = opts.limit ?? Infinity;
  // The rows are keyed by (resource, namespace, name) in `objects`, or in `labels` when the label
  // index drives the read (its selector index is ordered by namespace and name under a key and value).
  const keyed = (cols: { resource: SQLiteColumn; namespace: SQLiteColumn; name: SQLiteColumn }) => {
    const scope = namespace === undefined ? eq(cols.resource, resourceKey(def)) : and(eq(cols.resource, resourceKey(def)), eq(cols.namespace, namespace));
    // In one namespace the key order is the name's (a row-value comparison there would sort).
    return (key: StoreKey | undefined) =>
      !key
        ? scope
        : namespace === undefined
          ? and(scope, sql`(${cols.namespace}, ${cols.name}) > (${key.namespace}, ${key.name})`)
          : key.namespace === namespace
            ? and(scope, sql`${cols.name} > ${key.name}`)
            : key.namespace < namespace
              ? scope
              : sql`0`;
  };
  const after = keyed(objects);
  const idx = opts.index;
  const afterLabel = keyed(labels);
  const fields = rowFieldsOf(def);
  const rowsAfter = (key: StoreKey | undefined, n: number) =>
    idx
      ? db
          .select(fields)
          .from(labels)
          .innerJoin(objects, and(eq(objects.resource, labels.resource), eq(objects.namespace, labels.namespace), eq(objects.name, labels.name)))
          .where(and(afterLabel(key), eq(labels.key, idx.key), idx.values ? valueIn(idx.values) : undefined))
          .orderBy(labels.namespace, labels.name)
          .limit(n)
      : db.select(fields).from(objects).where(after(key)).orderBy(objects.namespace, objects.name).limit(n);
  const keyOf = (o: KubeObject): StoreKey => ({ namespace: o.metadata.namespace ?? "", name: o.metadata.name });

  const items: KubeObject[] = [];
  let cursor = opts.after;
  let chunk = Math.min(want + 1, LIST_CHUNK_ROWS);
  let rowsRead = 0;
  let resourceVersion: string | undefined;
  for (;;) {
    let rows: Row[];
    if (resourceVersion === undefined) {
      const [r, counter] = await db.batch([rowsAfter(cursor, chunk), db.select({ value: counters.value }).from(counters).where(eq(counters.id, 1))]);
      rows = r;
      resourceVersion = String(counter[0]?.value ?? 0);
    } else {
      rows = await rowsAfter(cursor, chunk);
    }
    rowsRead += rows.length;
    for (const row of rows) {
      if (items.length >= want) {
        const next = keyOf(items[items.length - 1]!);
        let remaining: number | undefined;
        if (opts.countRemaining) {
          const [count] = await db
            .select({ n: sql<number>`count(*)` })
            .from(objects)
            .where(after(next));
          remaining = count?.n ?? 0;
        }
        return { items, resourceVersion, next, remaining, rowsRead };
      }
      const obj = fromRow(row.bodyRef ? await withWholeBody(db, row) : row, resourceKey(def));
      cursor = keyOf(obj);
      if (!opts.filter || opts.filter(obj)) items.push(await openFields(db, def, obj));
    }
    if (rows.length < chunk) return { items, resourceVersion, rowsRead };
    // A full page needs one more row to know whether more remain; otherwise read a larger chunk.
    chunk = items.length >= want ? 1 : Math.min(chunk * 2, LIST_CHUNK_ROWS);
  }
}

/**
 * Lists the objects of a namespaced kind that carry `name`, in every namespace, sorted by
 * namespace (one query; used where a controller names its objects alike in many namespaces,
 * such as a replica set's ManifestWorks).
 */
export async function listObjectsNamed(db: DrizzleD1Database, def: KindDefinition, name: string): Promise<KubeObject[]> {
  const rows = await db
    .select(rowFields())
    .from(objects)
    .where(and(eq(objects.resource, resourceKey(def)), eq(objects.name, name)))
    .orderBy(objects.namespace);
  return Promise.all(rows.map((r) => readRow(db, def, r)));
}

/**
 * The objects of a kind in `namespace` whose names fall strictly between `from` and `to`, in
 * descending name order, at most `limit` (one range read of the primary key; e.g. the Events of
 * one object, named `<object>.<time>`, from `<object>.` to `<object>/`).
 */
export async function listNameRangeDesc(
  db: DrizzleD1Database,
  def: KindDefinition,
  namespace: string,
  from: string,
  to: string,
  limit: number,
): Promise<KubeObject[]> {
  const rows = await bind(d1Of(db), nameRangeShape(), { resource: resourceKey(def), namespace, from, to, limit }).all<RawRow>();
  return Promise.all(rows.results.map((r) => readRow(db, def, rowOf(r))));
}

/**
 * {@link listNameRangeDesc} for several ranges at once, in one D1 call (a batch of the range
 * reads): per range in order, its objects newest name first. For a caller that looks many
 * objects' neighbours up together (the Events of many objects, folded at once:
 * src/events/record.ts).
 */
export async function listNameRangesDesc(
  db: DrizzleD1Database,
  def: KindDefinition,
  ranges: readonly { namespace: string; from: string; to: string; limit: number }[],
): Promise<KubeObject[][]> {
  if (ranges.length === 0) return [];
  const d1 = d1Of(db);
  const resource = resourceKey(def);
  const statements = ranges.map((r) => bind(d1, nameRangeShape(), { resource, namespace: r.namespace, from: r.from, to: r.to, limit: r.limit }));
  const results = ranges.length === 1 ? [await statements[0]!.all<RawRow>()] : await d1.batch<RawRow>(statements);
  return Promise.all(results.map((res) => Promise.all(res.results.map((r) => readRow(db, def, rowOf(r))))));
}
const nameRangeShape = compiled(() =>
  builder
    .select(rowColumns())
    .from(objects)
    .where(and(eq(objects.resource, p("resource")), eq(objects.namespace, p("namespace")), gt(objects.name, p("from")), lt(objects.name, p("to"))))
    .orderBy(sql`${objects.name} DESC`)
    .limit(p("limit")),
);

/**
 * The first object of a kind whose JSON field at `path` (an SQLite JSON path, e.g.
 * `$.status.webhookPath`) equals `value`, or null: one query over the kind's rows (no index on
 * the field: for kinds with few objects, such as WebhookReceivers).
 */
export async function findByField(db: DrizzleD1Database, def: KindDefinition, path: string, value: string): Promise<KubeObject | null> {
  const [row] = await db
    .select(rowFields())
    .from(objects)
    .where(and(eq(objects.resource, resourceKey(def)), sql`json_extract(${objects.body}, ${path}) = ${value}`))
    .limit(1);
  return row ? readRow(db, def, row) : null;
}

/**
 * A condition that holds only while a commit's precondition does, for the statements that must
 * take effect with the object's own (its outbox row, indexes, change counters), which run just
 * before it in the same batch: `current`, the row still carries the expected version (`rv`;
 * before an update or a delete); `absent`, no row has the key (before a create, whose insert then
 * takes effect); `admitted`, `absent` and the object's namespace admits new content
 * ({@link namespaceAdmits}: a create with `CommitItem.namespaceAdmission`). All read the
 * placeholders `resource`, `namespace`, `name` (and `rv`; `admitted` also `namespaceResource`).
 */
export type Guard = "current" | "absent" | "admitted";

/**
 * Whether the namespace of the commit's key (placeholder `namespace`) admits new content, inside
 * a statement: its row (resource key at placeholder `namespaceResource`, cluster-scoped) exists,
 * its `status.phase` is not `Terminating` (absent: Active) and it has no
 * `metadata.deletionTimestamp`, as kube-apiserver's NamespaceLifecycle admits a create
 * (src/namespaces/lifecycle.ts): the namespace's check as a precondition of the create's own batch.
 */
const namespaceAdmits = sql`EXISTS (SELECT 1 FROM "objects" AS "ns" WHERE "ns"."resource" = ${p("namespaceResource")} AND "ns"."namespace" = '' AND "ns"."name" = ${p("namespace")} AND coalesce(json_extract("ns"."body", '$.status.phase'), 'Active') != 'Terminating' AND coalesce(json_extract("ns"."body", '$.metadata.deletionTimestamp'), '') = '')`;

const absentCondition = notExists(
  builder
    .select({ one: sql`1` })
    .from(objects)
    .where(keyIs(objects)),
);

const guardConditions: Record<Guard, SQL> = {
  current: exists(
    builder
      .select({ one: sql`1` })
      .from(objects)
      .where(and(keyIs(objects), eq(objects.resourceVersion, p("rv")))),
  ),
  absent: absentCondition,
  admitted: and(absentCondition, namespaceAdmits)!,
};

/**
 * The resourceVersion of the write a guarded statement goes with, inside that statement: the
 * log's next version (the object's own statement, which runs after, takes it and its trigger logs
 * the event at it: see migrations/0017_counter_per_batch.sql).
 */
const writeVersion = sql`(${logHead} + 1)`;

/** A statement shape that ends in a commit's {@link Guard} condition: compiled once per guard. */
export type GuardedShape = Record<Guard, () => CompiledStatement>;

/**
 * Declares a statement shape written under a commit's guard: `build(cond, rv)` renders it with
 * the guard's condition (put `cond` in its WHERE clause) and the write's resourceVersion as an
 * SQL expression (`rv`), once per guard and isolate. Its values are bound by
 * {@link GuardedBinder}: the commit's key placeholders plus the statement's own.
 */
export function guardedShape(build: (cond: SQL, rv: SQL) => Renderable): GuardedShape {
  return {
    current: compiled(() => build(guardConditions.current, writeVersion)),
    absent: compiled(() => build(guardConditions.absent, writeVersion)),
    admitted: compiled(() => build(guardConditions.admitted, writeVersion)),
  };
}

/** Binds a {@link GuardedShape} under one commit's guard, with the commit's key and `values` (placeholder name to value). */
export type GuardedBinder = (shape: GuardedShape, values?: Readonly<Record<string, unknown>>) => D1PreparedStatement;

/**
 * What a commit writes besides the object, in the same atomic batch: an outbox row naming the
 * after-commit work the write owes (src/store/outbox.ts; `createdAt` and `dueAt` epoch
 * milliseconds), written only when the commit's precondition holds, and `extra` statements
 * (e.g. the removal of a deleted cluster's identity row), bound by `guarded` so that they take
 * effect only when the precondition holds ({@link guardedShape}).
 */
export interface CommitExtras {
  /**
   * The outbox row. With `unless`, it is written only when the `counters` row `unless.counter`
   * (0 when absent) is not at `unless.value` as the batch commits: the owed hooks' runs were
   * known to do nothing while it stays there (src/store/hooks.ts `AfterCommitHook.quiet`), so a
   * commit that finds it there owes nothing ({@link CommitOutcome} `outboxSkipped`).
   */
  outbox?: { id: string; hooks: string; createdAt: number; dueAt: number; unless?: { counter: number; value: number } };
  extra?: (guarded: GuardedBinder) => D1PreparedStatement[];
}

/**
 * NamespaceLifecycle's check of a create as a precondition of its commit: the namespace's row
 * exists, is not `Terminating` and has no `deletionTimestamp` when the batch commits
 * ({@link namespaceAdmits}), so no read precedes the create and no other
 * isolate's delete of the namespace can slip between a check and the commit.
 */
export interface NamespaceAdmission {
  /** The resource key (src/k8s/kind.ts `resourceKey`) of the Namespaces' rows. */
  resource: string;
  /**
   * Called when the create's commit was refused: the namespace's refusal (404 NotFound, 403
   * Forbidden with the `NamespaceTerminating` cause) when it refuses new content now, else null
   * (the object exists: 409 AlreadyExists).
   * @throws errors of D1
   */
  refusal: () => Promise<ApiError | null>;
}

/** One write of a {@link commitObjects} call: see {@link commitObject} for its fields. */
export interface CommitItem {
  key: StoreKey;
  next: KubeObject | null;
  expectedRv: number | null;
  extras?: CommitExtras;
  /**
   * For a create (`expectedRv` null): the resource key of the Namespaces' rows; the create then
   * also requires its namespace to admit new content ({@link namespaceAdmits}), checked in the
   * commit's own batch (its outbox row, indexes and extras under the same guard, `admitted`).
   * Absent: no namespace check.
   */
  namespaceAdmission?: string;
}

/**
 * The outcome of one item of {@link commitObjects}: the object as stored (null after a delete),
 * and `outboxSkipped` when its outbox row was not written (its `unless` counter was at its
 * value: nothing is owed); or `lost` when its precondition failed.
 */
export type CommitOutcome = { ok: true; object: KubeObject | null; outboxSkipped?: boolean } | { ok: false; lost: true };

/** Items per D1 batch in {@link commitObjects} (each item is 1 to 5 statements: outbox row, indexes, object). */
export const COMMIT_BATCH_ITEMS = 50;

/** The commit's key (placeholders resource, namespace, name) as the columns of an INSERT ... SELECT. */
const keySelection = () => ({
  resource: sql<string>`${p("resource")}`.as("resource"),
  namespace: sql<string>`${p("namespace")}`.as("namespace"),
  name: sql<string>`${p("name")}`.as("name"),
});

/** A write's outbox row (src/store/outbox.ts), at the write's resourceVersion. */
const outboxShape = guardedShape((cond, rv) =>
  builder.insert(outbox).select(
    builder
      .select({
        id: sql<string>`${p("id")}`.as("id"),
        resourceVersion: sql<number>`${rv}`.as("resource_version"),
        ...keySelection(),
        hooks: sql<string>`${p("hooks")}`.as("hooks"),
        createdAt: sql<number>`${p("createdAt")}`.as("created_at"),
        dueAt: sql<number>`${p("dueAt")}`.as("due_at"),
        attempts: sql<number>`0`.as("attempts"),
      })
      .from(counters)
      .where(and(eq(counters.id, 1), cond)),
  ),
);
/**
 * A write's outbox row as {@link outboxShape}, written only while the `counters` row
 * `unlessCounter` is not at `unlessValue` (`CommitExtras.outbox.unless`); it returns its id when written.
 */
const outboxUnlessShape = guardedShape((cond, rv) =>
  builder
    .insert(outbox)
    .select(
      builder
        .select({
          id: sql<string>`${p("id")}`.as("id"),
          resourceVersion: sql<number>`${rv}`.as("resource_version"),
          ...keySelection(),
          hooks: sql<string>`${p("hooks")}`.as("hooks"),
          createdAt: sql<number>`${p("createdAt")}`.as("created_at"),
          dueAt: sql<number>`${p("dueAt")}`.as("due_at"),
          attempts: sql<number>`0`.as("attempts"),
        })
        .from(counters)
        .where(and(eq(counters.id, 1), cond, sql`coalesce((SELECT value FROM counters WHERE id = ${p("unlessCounter")}), 0) != ${p("unlessValue")}`)),
    )
    .returning({ id: outbox.id }),
);
/**
 * The object's own statements. Each takes the watch log's next version ({@link logHead}) as the
 * row's resourceVersion; the triggers of migrations/0017_counter_per_batch.sql then write the
 * watch event (the row as written; as it was, for a delete) in the same statement, and the batch
 * moves the counter once at its end ({@link counterCatchUpShape}).
 */
const deleteShape = compiled(() =>
  builder
    .delete(objects)
    .where(and(keyIs(objects), eq(objects.resourceVersion, p("rv"))))
    .returning({ name: objects.name }),
);
const insertShape = compiled(() =>
  builder
    .insert(objects)
    .values({
      resource: sql`${p("resource")}`,
      namespace: sql`${p("namespace")}`,
      name: sql`${p("name")}`,
      uid: sql`${p("uid")}`,
      resourceVersion: sql`${logHead} + 1`,
      body: sql`${p("body")}`,
      specRef: sql`${p("specRef")}`,
      bodyRef: sql`${p("bodyRef")}`,
    })
    .onConflictDoNothing()
    .returning({ resourceVersion: objects.resourceVersion }),
);
/** {@link insertShape} only while the object's namespace admits new content ({@link namespaceAdmits}, placeholder `namespaceResource`). */
const insertAdmittedShape = compiled(() =>
  builder
    .insert(objects)
    .select(
      builder
        .select({
          ...keySelection(),
          uid: sql<string>`${p("uid")}`.as("uid"),
          resourceVersion: sql<number>`${logHead} + 1`.as("resource_version"),
          body: sql<string>`${p("body")}`.as("body"),
          specRef: sql<string | null>`${p("specRef")}`.as("spec_ref"),
          bodyRef: sql<string | null>`${p("bodyRef")}`.as("body_ref"),
        })
        .from(counters)
        .where(and(eq(counters.id, 1), namespaceAdmits)),
    )
    .onConflictDoNothing()
    .returning({ resourceVersion: objects.resourceVersion }),
);
const updateShape = compiled(() =>
  builder
    .update(objects)
    .set({ body: sql`${p("body")}`, bodyRef: sql`${p("bodyRef")}`, resourceVersion: sql`${logHead} + 1` })
    .where(and(keyIs(objects), eq(objects.resourceVersion, p("rv"))))
    .returning({ resourceVersion: objects.resourceVersion }),
);
/**
 * {@link updateShape} for a row that refers to shared spec `specRef` and keeps it (the row's
 * reference is checked too: a row that no longer refers to it is not written, as a stale version
 * is not).
 */
const updateKeepSpecShape = compiled(() =>
  builder
    .update(objects)
    .set({ body: sql`${p("body")}`, bodyRef: sql`${p("bodyRef")}`, resourceVersion: sql`${logHead} + 1` })
    .where(and(keyIs(objects), eq(objects.resourceVersion, p("rv")), eq(objects.specRef, p("specRef"))))
    .returning({ resourceVersion: objects.resourceVersion }),
);
/** {@link updateShape} that also sets the row's shared spec reference (its index entry moves only then). */
const updateSpecShape = compiled(() =>
  builder
    .update(objects)
    .set({ body: sql`${p("body")}`, specRef: sql`${p("specRef")}`, bodyRef: sql`${p("bodyRef")}`, resourceVersion: sql`${logHead} + 1` })
    .where(and(keyIs(objects), eq(objects.resourceVersion, p("rv"))))
    .returning({ resourceVersion: objects.resourceVersion }),
);
/**
 * A shared spec's row, written unless there (then only marked referenced again, when a sweep had
 * found it orphaned): the first statement of a batch that refers to it.
 */
const sharedSpecShape = compiled(() =>
  builder
    .insert(sharedSpecs)
    .values({ hash: sql`${p("hash")}`, body: sql`${p("text")}` })
    .onConflictDoUpdate({ target: sharedSpecs.hash, set: { orphanedAt: sql`NULL` }, setWhere: sql`${sharedSpecs.orphanedAt} IS NOT NULL` }),
);
/**
 * One piece of a body kept in pieces (`body_chunks`), written unless there (then only marked
 * referenced again, when a sweep had found it orphaned), before the statement of the object it
 * belongs to.
 */
const bodyChunkShape = compiled(() =>
  builder
    .insert(bodyChunks)
    .values({ hash: sql`${p("hash")}`, seq: sql`${p("seq")}`, body: sql`${p("text")}` })
    .onConflictDoUpdate({ target: [bodyChunks.hash, bodyChunks.seq], set: { orphanedAt: sql`NULL` }, setWhere: sql`${bodyChunks.orphanedAt} IS NOT NULL` }),
);
/**
 * The two statements that keep a content-addressed side table (`shared_specs`, `body_chunks`:
 * rows keyed by `hash`, which object rows name in their column `ref`) in step with the objects:
 * `sweep` drops the rows orphaned before the event log's start (placeholder `retention`: no object
 * and no kept event refers to them), `mark` marks the rows no object row refers to, at the
 * counter's value (what events may still refer to them: none newer).
 */
function orphanShapes(table: typeof sharedSpecs | typeof bodyChunks, name: "shared_specs" | "body_chunks", ref: "spec_ref" | "body_ref") {
  const referenced = sql.raw(`EXISTS (SELECT 1 FROM "objects" AS o WHERE o."${ref}" = "${name}"."hash")`);
  return {
    sweep: compiled(() =>
      builder
        .delete(table as typeof sharedSpecs)
        .where(and(sql`${table.orphanedAt} IS NOT NULL`, lt(table.orphanedAt, sql`${counterValue} - ${p("retention")}`), sql`NOT ${referenced}`)),
    ),
    mark: compiled(() =>
      builder
        .update(table as typeof sharedSpecs)
        .set({ orphanedAt: counterValue })
        .where(and(sql`${table.orphanedAt} IS NULL`, sql`NOT ${referenced}`)),
    ),
  };
}
/** The shared specs' sweep and mark ({@link orphanShapes}). */
const specOrphans = orphanShapes(sharedSpecs, "shared_specs", "spec_ref");
/** The body pieces' sweep and mark ({@link orphanShapes}), as the shared specs'. */
const chunkOrphans = orphanShapes(bodyChunks, "body_chunks", "body_ref");
/**
 * A kind's change counter (`KindDefinition.changeCounter`): the `counters` row `counter` set to the
 * write's resourceVersion, under the commit's guard, so a reader learns with one read by key
 * whether any object of the kind changed since it last looked (src/auth/rbac-store.ts).
 */
export const changeCounterShape = guardedShape((cond, rv) =>
  builder
    .insert(counters)
    .select(
      builder
        .select({ id: sql<number>`${p("counter")}`.as("id"), value: sql<number>`${rv}`.as("value") })
        .from(counters)
        .where(and(eq(counters.id, 1), cond)),
    )
    .onConflictDoUpdate({ target: counters.id, set: { value: sql`excluded.value` } }),
);

/** This isolate's commits of kinds with a change counter, by counter (`KindDefinition.changeCounter`): how many, in memory. */
const localCounterCommits = new Map<number, number>();

/** Counts one commit (or attempt) of kind `def` in this isolate when the kind has a change counter ({@link localChangeCommits}). */
function noteLocalCommit(def: KindDefinition): void {
  if (def.changeCounter !== undefined) localCounterCommits.set(def.changeCounter, (localCounterCommits.get(def.changeCounter) ?? 0) + 1);
}

/**
 * How many writes of kinds with change counter `counter` this isolate has committed or tried to
 * (each counted once its D1 batch settled, committed or not) since it started: a number held in
 * memory, no read. A cache that checks the counter only now and then (src/kinds/sync.ts) checks
 * it at once when this moved, so that the isolate sees its own writes.
 */
export function localChangeCommits(counter: number): number {
  return localCounterCommits.get(counter) ?? 0;
}

/**
 * The value of change counter `counter` (`KindDefinition.changeCounter`): the resourceVersion of
 * the last write of a kind that bumps it, or 0 when none has. One D1 read by primary key.
 * @throws errors of D1
 */
export async function changeCounterValue(db: DrizzleD1Database, counter: number): Promise<number> {
  const row = await bind(d1Of(db), counterByIdShape(), { id: counter }).first<{ value: number }>();
  return row?.value ?? 0;
}
const counterByIdShape = compiled(() =>
  builder
    .select({ value: counters.value })
    .from(counters)
    .where(eq(counters.id, p("id"))),
);

/**
 * The counter moved to the newest event, once at the end of a commit's batch (a row written only
 * when the batch logged a write): the batch's writes took their versions from {@link logHead},
 * so readers outside it (lists, watches, `currentResourceVersion`) read the counter as they did
 * when each write's trigger moved it.
 */
const counterCatchUpShape = compiled(() =>
  builder
    .update(counters)
    .set({ value: sql`(SELECT max(e.resource_version) FROM events AS e)` })
    .where(and(eq(counters.id, 1), sql`${counters.value} < (SELECT max(e.resource_version) FROM events AS e)`)),
);

const pruneShape = compiled(() => builder.delete(events).where(lt(events.resourceVersion, sql`${counterValue} - ${p("retention")}`)));

/**
 * The event log's pruning (the events `retention` versions and more behind the counter go) and
 * the shared specs' sweep after it: the specs orphaned before what the log keeps go, then the
 * specs no object refers to any more are marked orphaned at the counter's value; the pieces of
 * large bodies likewise. Statements for the end of a commit's batch, now and then.
 */
function pruneStatements(d1: D1Database, retention: number): D1PreparedStatement[] {
  return [
    bind(d1, pruneShape(), { retention }),
    bind(d1, specOrphans.sweep(), { retention }),
    bind(d1, specOrphans.mark(), {}),
    bind(d1, chunkOrphans.sweep(), { retention }),
    bind(d1, chunkOrphans.mark(), {}),
  ];
}

/**
 * Prunes the event log to `retention` versions behind the counter and sweeps the shared specs
 * ({@link pruneStatements}) in one batch, as commits do now and then.
 * @throws errors of D1
 */
export async function pruneEventLog(db: DrizzleD1Database, retention = EVENT_RETENTION): Promise<void> {
  const d1 = d1Of(db);
  await d1.batch(pruneStatements(d1, retention));
}

/**
 * The statements of one item, and the index among them of the statement whose returned rows
 * tell whether the item's precondition held (one row: it did): first what must take effect with
 * the object (its outbox row and extra statements), under the guard that the object's own
 * statement will take effect, then that statement (which the triggers of
 * migrations/0017_counter_per_batch.sql follow with the watch event; the batch moves the counter
 * once, at its end).
 */
async function itemStatements(db: DrizzleD1Database, def: KindDefinition, item: CommitItem): Promise<BuiltItem> {
  const d1 = d1Of(db);
  const { key, next, expectedRv, extras = {} } = item;
  const admission = expectedRv === null && next !== null ? item.namespaceAdmission : undefined;
  const keyValues = { resource: resourceKey(def), namespace: key.namespace, name: key.name, rv: expectedRv ?? -1, namespaceResource: admission ?? "" };
  const owed = extras.outbox;
  // The outbox row comes first: its index, when its result tells whether it was written.
  const outboxAt = owed?.unless ? 0 : undefined;
  const dependents = (guard: Guard): D1PreparedStatement[] => {
    const guarded: GuardedBinder = (shape, values = {}) => bind(d1, shape[guard](), { ...keyValues, ...values });
    const row = owed?.unless
      ? guarded(outboxUnlessShape, { ...owed, unlessCounter: owed.unless.counter, unlessValue: owed.unless.value })
      : owed
        ? guarded(outboxShape, owed)
        : undefined;
    return [...(row ? [row] : []), ...(extras.extra?.(guarded) ?? [])];
  };
  if (next === null) {
    const before = dependents("current");
    return { statements: [...before, bind(d1, deleteShape(), keyValues)], result: before.length, outboxAt, bytes: STATEMENT_BYTES * (before.length + 1) };
  }
  const row = await toRow(db, def, next);
  const { spec } = row;
  const { body, chunks } = await storedBody(def, next, row.body);
  const bodyRef = chunks?.hash ?? null;
  const specRef = spec?.hash ?? null;
  // The spec's row goes first in the batch ({@link commitBuilt}), unless the row this write
  // replaces refers to it already (its precondition keeps it referenced meanwhile).
  const written = spec ? { resource: keyValues.resource, namespace: key.namespace, name: key.name, hash: spec.hash } : undefined;
  // The body's pieces, when it is too large for its row, go just before the item's statements.
  const pieces = chunks ? chunks.pieces.map((text, seq) => bind(d1, bodyChunkShape(), { hash: chunks.hash, seq, text })) : [];
  const sized = (statements: D1PreparedStatement[], result: number, rest: Omit<BuiltItem, "statements" | "result" | "bytes">): BuiltItem => ({
    statements: [...pieces, ...statements],
    result: pieces.length + result,
    ...rest,
    outboxAt: rest.outboxAt === undefined ? undefined : pieces.length + rest.outboxAt,
    bytes: STATEMENT_BYTES * (pieces.length + statements.length) + (chunks ? chunks.bytes : 0) + utf8BytesAtMost(body),
  });
  if (expectedRv === null) {
    const before = dependents(admission === undefined ? "absent" : "admitted");
    const insert = admission === undefined ? insertShape() : insertAdmittedShape();
    return sized([...before, bind(d1, insert, { ...keyValues, uid: next.metadata.uid, body, specRef, bodyRef })], before.length, {
      outboxAt,
      spec: spec ?? undefined,
      written,
    });
  }
  const before = dependents("current");
  if (spec === undefined) return sized([...before, bind(d1, updateShape(), { ...keyValues, body, bodyRef })], before.length, { outboxAt });
  if (spec && specRefs.get(versionKey(keyValues.resource, key.namespace, key.name, expectedRv)) === spec.hash)
    return sized([...before, bind(d1, updateKeepSpecShape(), { ...keyValues, body, specRef, bodyRef })], before.length, { outboxAt, written });
  return sized([...before, bind(d1, updateSpecShape(), { ...keyValues, body, specRef, bodyRef })], before.length, {
    outboxAt,
    spec: spec ?? undefined,
    written,
  });
}

/**
 * Commits many computed writes of one kind with optimistic concurrency, {@link COMMIT_BATCH_ITEMS}
 * to an atomic D1 batch: each item has its own precondition (as {@link commitObject}'s) and its own
 * resourceVersion, and its event, outbox row and extra statements are written only when its
 * precondition held; an item whose precondition failed (a duplicate create, a stale or missing
 * object) changes nothing and is reported `lost`, the others commit. A batch that fails as a whole
 * (D1 unreachable) throws, and what earlier batches committed stays committed.
 * @throws errors of D1
 */
export async function commitObjects(db: DrizzleD1Database, def: KindDefinition, items: CommitItem[]): Promise<CommitOutcome[]> {
  const d1 = d1Of(db);
  const out: CommitOutcome[] = [];
  for (let i = 0; i < items.length; i += COMMIT_BATCH_ITEMS) {
    const chunk = items.slice(i, i + COMMIT_BATCH_ITEMS);
    const built = await Promise.all(chunk.map((item) => itemStatements(db, def, item)));
    // Fewer items to a batch when their bytes would pass the batch's budget (large works).
    let at = 0;
    for (const size of batchSizes(built)) {
      const rows = await commitBuilt(d1, built.slice(at, at + size)).finally(() => noteLocalCommit(def));
      for (let j = 0; j < size; j++) out.push(outcomeOf(chunk[at + j]!, rows[j]!));
      at += size;
    }
  }
  return out;
}

/**
 * Allowance for a statement's text, its bound values other than bodies and specs (keys, hooks,
 * labels) and its encoding in a batch, in bytes: what {@link BuiltItem.bytes} counts per statement.
 */
const STATEMENT_BYTES = 2048;

/**
 * How the built items go to D1 batches, in order: the number of items of each batch, each batch
 * within D1's budget of bytes ({@link D1Limits.batchBytes}: an item's {@link BuiltItem.bytes},
 * and a shared spec's text once per batch). An item alone over the budget cannot occur: an object
 * past {@link D1Limits.objectBytes} is refused before it is built.
 */
function batchSizes(built: readonly Pick<BuiltItem, "bytes" | "spec">[]): number[] {
  const budget = d1Limits().batchBytes;
  const sizes: number[] = [];
  let count = 0;
  let bytes = 0;
  let specs = new Set<string>();
  for (const b of built) {
    const specBytes = b.spec && !specs.has(b.spec.hash) ? utf8BytesAtMost(b.spec.text) + STATEMENT_BYTES : 0;
    if (count > 0 && bytes + b.bytes + specBytes > budget) {
      sizes.push(count);
      count = 0;
      bytes = 0;
      specs = new Set();
    }
    count++;
    bytes += b.bytes + (b.spec && !specs.has(b.spec.hash) ? utf8BytesAtMost(b.spec.text) + STATEMENT_BYTES : 0);
    if (b.spec) specs.add(b.spec.hash);
  }
  if (count > 0) sizes.push(count);
  return sizes;
}

/**
 * One item's statements, the index among them of its precondition statement, and of its outbox
 * row's when that may not be written; `spec`, a shared spec whose row the batch must hold; and
 * `written`, the shared spec the item's row refers to once committed ({@link noteSpecRef}).
 */
type BuiltItem = {
  statements: D1PreparedStatement[];
  result: number;
  /** What the statements bind, in bytes at most (bodies, pieces; {@link STATEMENT_BYTES} per statement), less a shared spec's text. */
  bytes: number;
  outboxAt?: number;
  spec?: SharedSpec;
  written?: { resource: string; namespace: string; name: string; hash: string };
};
/** The rows an item's precondition statement returned (none: lost), and whether its outbox row was left unwritten. */
type ResultRows = { rows: { resource_version?: number }[]; outboxSkipped: boolean };

/**
 * Commits the statements of `built` items in one atomic D1 batch (with, now and then, the watch
 * log's pruning) and returns each item's precondition rows, in order.
 * @throws errors of D1 (nothing of the batch is committed then)
 */
async function commitBuilt(d1: D1Database, built: BuiltItem[]): Promise<ResultRows[]> {
  const statements: D1PreparedStatement[] = [];
  // The shared specs the items refer to, each once, first: the batch's works of one rendering bind its text once.
  const specs = new Set<string>();
  for (const b of built) {
    if (!b.spec || specs.has(b.spec.hash)) continue;
    specs.add(b.spec.hash);
    statements.push(bind(d1, sharedSpecShape(), { hash: b.spec.hash, text: b.spec.text }));
  }
  const at: { result: number; outbox?: number }[] = [];
  for (const b of built) {
    at.push({ result: statements.length + b.result, outbox: b.outboxAt === undefined ? undefined : statements.length + b.outboxAt });
    statements.push(...b.statements);
  }
  // The counter once per batch, before the pruning (which reads it).
  statements.push(bind(d1, counterCatchUpShape(), {}));
  if (Math.random() < PRUNE_PROBABILITY * built.length) statements.push(...pruneStatements(d1, EVENT_RETENTION));
  const results = await d1.batch<{ resource_version?: number }>(statements);
  return at.map((i, j) => {
    const rows = results[i.result]!.results;
    const w = built[j]!.written;
    const rv = rows[0]?.resource_version;
    if (w && rv !== undefined) noteSpecRef(w.resource, w.namespace, w.name, rv, w.hash);
    return { rows, outboxSkipped: i.outbox !== undefined && results[i.outbox]!.results.length === 0 };
  });
}

/** An item's outcome from the rows its precondition statement returned (none: lost). */
function outcomeOf(item: CommitItem, { rows, outboxSkipped }: ResultRows): CommitOutcome {
  if (rows.length === 0) return { ok: false, lost: true };
  const skipped = outboxSkipped ? { outboxSkipped } : {};
  if (item.next === null) return { ok: true, object: null, ...skipped };
  return { ok: true, object: { ...item.next, metadata: withResourceVersion({ ...item.next.metadata }, rows[0]!.resource_version!) }, ...skipped };
}

/** The commit groups of each D1 binding (src/store/group-commit.ts `groupsOfDatabase`), made on first use. */
function commitGroups(d1: D1Database): CommitGroups<BuiltItem, ResultRows> {
  return groupsOfDatabase(
    d1,
    "objects",
    () =>
      new CommitGroups((items: BuiltItem[]) => commitBuilt(d1, items), COMMIT_BATCH_ITEMS, undefined, {
        // A group of large writes is cut at D1's budget of bytes, as {@link batchSizes} cuts a batch.
        sizeOf: (b) => b.bytes + (b.spec ? utf8BytesAtMost(b.spec.text) + STATEMENT_BYTES : 0),
        maxBytes: () => d1Limits().batchBytes,
      }),
  );
}

/** Commits `item` in a commit group of this isolate (src/store/group-commit.ts). */
async function commitGrouped(db: DrizzleD1Database, def: KindDefinition, item: CommitItem): Promise<CommitOutcome> {
  const built = await itemStatements(db, def, item);
  return outcomeOf(
    item,
    await commitGroups(d1Of(db))
      .run(built)
      .finally(() => noteLocalCommit(def)),
  );
}

/**
 * Commits a computed write with optimistic concurrency.
 *
 * - `expectedRv === null`: the object must not exist (create); a duplicate is 409 AlreadyExists.
 * - otherwise the stored row must still carry `expectedRv`; if not, 409 Conflict (or 404 if gone).
 * - `next === null` deletes the row.
 *
 * Returns the stored object with its new resourceVersion, or null after a delete.
 * `extras` (an outbox row, other statements) are written in the same atomic batch; the watch
 * event (a delete's with the row as it was stored) is written by the row's own statement's
 * trigger. `grouped`: the commit may
 * share its D1 batch with other grouped commits of this isolate that arrive while one is in
 * flight (src/store/group-commit.ts), for frequent small writes from many requests (agents' status
 * reports); the outcome is the same as alone.
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
  grouped = false,
): Promise<KubeObject | null> {
  return (await commitObjectOutcome(db, def, key, next, expectedRv, extras, grouped)).object;
}

/**
 * {@link commitObject}, answering also `outboxSkipped`: the outbox row was not written (its
 * `CommitExtras.outbox.unless` held), so the write owes nothing. `admission`, for a create: its
 * namespace must admit new content as the batch commits (`CommitItem.namespaceAdmission`); when
 * the create was refused, its `refusal` is thrown if it gives one.
 * @throws ApiError 404, 409; `admission`'s refusal (404, 403)
 */
export async function commitObjectOutcome(
  db: DrizzleD1Database,
  def: KindDefinition,
  key: StoreKey,
  next: KubeObject | null,
  expectedRv: number | null,
  extras: CommitExtras = {},
  grouped = false,
  admission?: NamespaceAdmission,
): Promise<{ object: KubeObject | null; outboxSkipped: boolean }> {
  if (next === null && expectedRv === null) return { object: null, outboxSkipped: false };
  const item: CommitItem = { key, next, expectedRv, extras, ...(admission && expectedRv === null ? { namespaceAdmission: admission.resource } : {}) };
  const outcome = grouped ? await commitGrouped(db, def, item) : (await commitObjects(db, def, [item]))[0]!;
  if (outcome.ok) return { object: outcome.object, outboxSkipped: outcome.outboxSkipped === true };
  const objRef = { group: def.group, plural: def.plural, name: key.name };
  // As kube-apiserver, whose admission runs before storage: the namespace's refusal first.
  const refusal = item.namespaceAdmission !== undefined ? await admission!.refusal() : null;
  if (refusal) throw refusal;
  if (expectedRv === null) throw alreadyExists(objRef);
  throw (await getObject(db, def, key))
    ? conflict(objRef, "the object has been modified; please apply your changes to the latest version and try again")
    : notFound(objRef);
}

/** The owner UIDs an object's `metadata.ownerReferences` name (each once). */
function ownerUids(obj: KubeObject | null): string[] {
  const refs = (obj?.metadata as { ownerReferences?: { uid?: unknown }[] } | undefined)?.ownerReferences ?? [];
  return [...new Set(refs.map((r) => r?.uid).filter((u): u is string => typeof u === "string" && u !== ""))];
}

const ownersDeleteShape = guardedShape((cond) => builder.delete(ownerReferences).where(and(keyIs(ownerReferences), cond)));
const ownerInsertShape = guardedShape((cond) =>
  builder.insert(ownerReferences).select(
    builder
      .select({
        ownerUid: sql<string>`${p("ownerUid")}`.as("owner_uid"),
        ...keySelection(),
      })
      .from(counters)
      .where(and(eq(counters.id, 1), cond)),
  ),
);

/**
 * The statements that keep the owner index (`owner_references`) in step with a write of an object
 * from `before` to `after` (null: absent), bound under the write's guard (so the index changes
 * only with the object): none when its owner UIDs are the same, so writes that leave
 * ownerReferences alone cost nothing more; a create only inserts its rows.
 */
export function ownerIndexStatements(before: KubeObject | null, after: KubeObject | null, guarded: GuardedBinder): D1PreparedStatement[] {
  const was = ownerUids(before);
  const now = ownerUids(after);
  if (was.length === now.length && was.every((u, i) => u === now[i])) return [];
  const inserts = now.map((ownerUid) => guarded(ownerInsertShape, { ownerUid }));
  // A create (guard: no row has the key) has no index rows to replace: every delete of an object
  // removes its rows in its own batch, so no row outlives its object.
  return before ? [guarded(ownersDeleteShape), ...inserts] : inserts;
}

const labelsDeleteShape = guardedShape((cond) => builder.delete(labels).where(and(keyIs(labels), cond)));
const labelsDeleteKeysShape = guardedShape((cond) =>
  builder.delete(labels).where(and(keyIs(labels), sql`${labels.key} IN (SELECT value FROM json_each(${p("keys")}))`, cond)),
);
const labelsInsertShape = guardedShape((cond) =>
  builder.insert(labels).select(
    builder
      .select({
        ...keySelection(),
        key: sql<string>`l.key`.as("key"),
        value: sql<string>`l.value`.as("value"),
      })
      .from(sql`json_each(${p("labels")}) AS l`)
      .where(cond),
  ),
);

/**
 * The statements that keep the label index (`labels`) in step with a write of an object from
 * `before` to `after` (null: absent), bound under the write's guard: none when its labels are the
 * same, so writes that leave labels alone (status reports, the scheduler's decisions) cost
 * nothing more; an update touches only the rows of the keys it removed or changed (a placement's
 * work moving to a new snapshot index rewrites that one label's row, not its five); a create
 * inserts its rows, by one statement that reads the labels from their JSON; a delete removes them.
 */
export function labelIndexStatements(before: KubeObject | null, after: KubeObject | null, guarded: GuardedBinder): D1PreparedStatement[] {
  const was = before?.metadata.labels ?? {};
  const now = after?.metadata.labels ?? {};
  if (before && after && JSON.stringify(was) === JSON.stringify(now)) return [];
  if (!before && Object.keys(now).length === 0) return [];
  // A create (guard: no row has the key) has no rows to replace: every delete of an object removes
  // its rows in its own batch ({@link labelsDeleteShape} below), so no row outlives its object.
  if (!before) return [guarded(labelsInsertShape, { labels: JSON.stringify(now) })];
  if (before && after) {
    const gone = Object.keys(was).filter((k) => !Object.hasOwn(now, k) || now[k] !== was[k]);
    const set = Object.fromEntries(Object.entries(now).filter(([k, v]) => !Object.hasOwn(was, k) || was[k] !== v));
    const out: D1PreparedStatement[] = [];
    if (gone.length > 0) out.push(guarded(labelsDeleteKeysShape, { keys: JSON.stringify(gone) }));
    if (Object.keys(set).length > 0) out.push(guarded(labelsInsertShape, { labels: JSON.stringify(set) }));
    return out;
  }
  const out = [guarded(labelsDeleteShape)];
  if (after && Object.keys(now).length > 0) out.push(guarded(labelsInsertShape, { labels: JSON.stringify(now) }));
  return out;
}

/**
 * The objects whose ownerReferences name the owner with UID `uid` (the owner index: one indexed
 * read, whatever the number of objects), as `{resource: "<group>/<plural>", namespace, name}`.
 */
export async function dependentsOf(db: DrizzleD1Database, uid: string): Promise<{ resource: string; namespace: string; name: string }[]> {
  return db
    .select({ resource: ownerReferences.resource, namespace: ownerReferences.namespace, name: ownerReferences.name })
    .from(ownerReferences)
    .where(eq(ownerReferences.ownerUid, uid));
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
 * The oldest resourceVersion the event log can replay from: a watch from `rv` sees every change
 * after it only when `rv >= eventLogStart`. That is one below the oldest event kept (events are
 * pruned oldest first, and a hub upgraded from before the log existed holds none of its earlier
 * writes), or the counter's value when the log is empty. One indexed read (MIN of the primary key).
 */
export async function eventLogStart(db: DrizzleD1Database): Promise<number> {
  const [[oldest], [counter]] = await db.batch([
    db.select({ rv: sql<number | null>`min(${events.resourceVersion})` }).from(events),
    db.select({ value: counters.value }).from(counters).where(eq(counters.id, 1)),
  ]);
  return oldest?.rv != null ? oldest.rv - 1 : (counter?.value ?? 0);
}

/**
 * Reads the events of a kind after `afterRv` (exclusive), oldest first, at most `limit`, in one
 * namespace or all. Also returns the current value of the resourceVersion counter: events older
 * than `latest - EVENT_RETENTION` may have been pruned, so a watch from before that is 410 Expired.
 */
export async function readEvents(
  db: DrizzleD1Database,
  def: KindDefinition,
  namespace: string | undefined,
  afterRv: number,
  limit = 500,
): Promise<{ events: WatchEvent[]; latest: number }> {
  const conds = [eq(events.resource, resourceKey(def)), sql`${events.resourceVersion} > ${afterRv}`];
  if (namespace !== undefined) conds.push(eq(events.namespace, namespace));
  const [rows, counter] = await db.batch([
    db
      .select(eventRowColumns())
      .from(events)
      .where(and(...conds))
      .orderBy(events.resourceVersion)
      .limit(limit),
    db.select({ value: counters.value }).from(counters).where(eq(counters.id, 1)),
  ]);
  return {
    events: await Promise.all(
      rows.map(async (r) => ({
        type: r.type as WatchEvent["type"],
        object: await readRow(db, def, { body: r.body, resourceVersion: r.rv, specRef: r.specRef, spec: r.spec, bodyRef: r.bodyRef }, true),
      })),
    ),
    latest: counter[0]?.value ?? 0,
  };
}

/**
 * The columns a read of watch events selects: each event's resourceVersion, type, body and what
 * puts a stored body back whole (its shared spec, its body pieces' reference), for `readRow`.
 */
function eventRowColumns() {
  return {
    rv: events.resourceVersion,
    type: events.type,
    body: events.body,
    specRef: events.specRef,
    spec: sharedSpecOf("events"),
    bodyRef: events.bodyRef,
  };
}

/**
 * The object `namespace`/`name` of kind `def` as its last event before `beforeRv` (exclusive)
 * left it: its state just before that version, for a watch that must tell whether it showed the
 * object then (src/api/watch.ts). Null when the log holds no earlier event of it (it was created
 * later, or last changed before the log's start). One indexed read.
 */
export async function previousEventObject(
  db: DrizzleD1Database,
  def: KindDefinition,
  namespace: string,
  name: string,
  beforeRv: number,
): Promise<KubeObject | null> {
  const [row] = await db
    .select(eventRowColumns())
    .from(events)
    .where(and(eq(events.resource, resourceKey(def)), eq(events.namespace, namespace), eq(events.name, name), lt(events.resourceVersion, beforeRv)))
    .orderBy(sql`${events.resourceVersion} DESC`)
    .limit(1);
  if (!row || row.type === "DELETED") return null;
  return readRow(db, def, { body: row.body, resourceVersion: row.rv, specRef: row.specRef, spec: row.spec, bodyRef: row.bodyRef }, true);
}

/** An object the event log shows changed: its resource key (`<group>/<plural>`), namespace, name and latest resourceVersion. */
export interface ChangedObject {
  resource: string;
  namespace: string;
  name: string;
  resourceVersion: number;
}

/**
 * The objects of the resources keyed `resources` that changed after `afterRv` (exclusive), each
 * once with its latest version there, and the counter's value (`latest`), read in one batch. Events
 * older than `latest - EVENT_RETENTION` may have been pruned: a caller from before that must read
 * everything again.
 */
export async function changedSince(db: DrizzleD1Database, resources: string[], afterRv: number): Promise<{ latest: number; changed: ChangedObject[] }> {
  const [rows, counter] = await db.batch([
    db
      .select({ resource: events.resource, namespace: events.namespace, name: events.name, resourceVersion: max(events.resourceVersion) })
      .from(events)
      .where(and(inArray(events.resource, resources), gt(events.resourceVersion, afterRv)))
      .groupBy(events.resource, events.namespace, events.name),
    db.select({ value: counters.value }).from(counters).where(eq(counters.id, 1)),
  ]);
  return {
    latest: counter[0]?.value ?? 0,
    changed: rows.map((r) => ({ resource: r.resource, namespace: r.namespace, name: r.name, resourceVersion: r.resourceVersion ?? 0 })),
  };
}

/** Largest resourceVersion a request may name: apimachinery parses it as an unsigned 64-bit integer. */
const MAX_RESOURCE_VERSION = (1n << 64n) - 1n;

/**
 * Parses a request's `resourceVersion` as apimachinery's `APIObjectVersioner.ParseResourceVersion`
 * does (`strconv.ParseUint(v, 10, 64)`): absent, "" and "0" are 0 (any version); otherwise a
 * decimal unsigned 64-bit integer, returned as a bigint (it may exceed 2^53).
 * @throws ApiError 400 BadRequest (field `resourceVersion`) for anything else
 */
export function parseResourceVersion(value: string | undefined): bigint {
  if (value === undefined || value === "") return 0n;
  const rv = /^[0-9]+$/.test(value) ? BigInt(value) : -1n;
  if (rv < 0n || rv > MAX_RESOURCE_VERSION)
    throw badRequest(`resourceVersion: Invalid value: ${JSON.stringify(value)}: must be an unsigned 64-bit decimal integer`, "resourceVersion");
  return rv;
}

/**
 * How long a read at a resourceVersion above the counter waits for writes to reach it, in
 * milliseconds: kube-apiserver's watch cache waits up to 3 s (`blockTimeout` in
 * `watch_cache.go` `waitUntilFreshAndBlock`) before answering "Too large resource version".
 */
export const FUTURE_RESOURCE_VERSION_WAIT_MS = 3000;
/** Interval between reads of the counter while {@link awaitResourceVersion} waits, in milliseconds. */
export const FUTURE_RESOURCE_VERSION_POLL_MS = 250;

/** The resourceVersion counter's current value (one D1 read). */
export async function currentResourceVersion(db: DrizzleD1Database): Promise<number> {
  const row = await bind(d1Of(db), counterShape(), {}).first<{ value: number }>();
  return row?.value ?? 0;
}

/**
 * Waits until the resourceVersion counter has reached `rv` and returns its value then: the guard
 * of a get, list or watch that names a version ("not older than"), as kube-apiserver's watch cache
 * waits to be fresh before it serves one (`waitUntilFreshAndBlock`). The counter is the D1 row every write of every isolate
 * bumps, so a version above it is one no write has made yet; it is waited for only while writes
 * elsewhere can still make it, i.e. for at most {@link FUTURE_RESOURCE_VERSION_WAIT_MS} ms on the
 * injected clock, re-reading the counter every {@link FUTURE_RESOURCE_VERSION_POLL_MS} ms, and not
 * at all for a version beyond what the counter can hold (2^53 - 1) or once `signal` aborts (the
 * client went away). `rv` 0 (any version) returns at once without a read.
 *
 * @throws ApiError 504 Timeout with cause ResourceVersionTooLarge ({@link tooLargeResourceVersion})
 *   when the counter is still below `rv`
 */
export async function awaitResourceVersion(db: DrizzleD1Database, rv: bigint, signal?: AbortSignal): Promise<number> {
  if (rv === 0n) return 0;
  let current = await currentResourceVersion(db);
  const reachable = rv <= BigInt(Number.MAX_SAFE_INTEGER);
  const deadline = clock.now() + FUTURE_RESOURCE_VERSION_WAIT_MS;
  while (BigInt(current) < rv) {
    if (!reachable || signal?.aborted || clock.now() >= deadline) throw tooLargeResourceVersion(rv.toString(), current);
    await new Promise((r) => setTimeout(r, FUTURE_RESOURCE_VERSION_POLL_MS));
    current = await currentResourceVersion(db);
  }
  return current;
}
