/**
 * The cluster object's copy of its ManagedCluster and its small values (the `state` table, with
 * a cache of parsed, frozen rows), and the commit that keeps the copy and the D1 index in step,
 * with its repair after a crash between the two.
 */
import type { Env } from "../../src/env.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { storageOf } from "../../src/store/storage.ts";
import { storeOf, type WriterMode } from "../../src/store/store.ts";
import { LEGACY_CLUSTER_ID_ANNOTATION, ManagedClusterKind, reconcileManagedCluster } from "../../src/kinds/managedcluster.ts";
import { schedulingHook } from "../../src/placement/controller.ts";
import { armSweep } from "../../src/store/outbox.ts";
import { clock } from "../../src/clock.ts";
import type { Cost } from "./types.ts";

/**
 * Creates the `state` table (idempotent): key to JSON value, and `pending`, the marker of a D1
 * commit in flight ({ name } as JSON) kept in the `object` row (see {@link ClusterState.commit}).
 */
export const STATE_SCHEMA = "CREATE TABLE IF NOT EXISTS state (k TEXT PRIMARY KEY, v TEXT NOT NULL, pending TEXT) WITHOUT ROWID;";

/**
 * Adds the `pending` column to a `state` table created before it (idempotent; a read when it is
 * there already).
 */
export function migrateState(sql: SqlStorage): void {
  const table = sql.exec<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'state'").toArray()[0];
  if (table && !stateCurrent(table.sql)) sql.exec("ALTER TABLE state ADD COLUMN pending TEXT");
}

/** Whether the `state` table's `CREATE` statement (its `sqlite_master.sql`) has the `pending` column ({@link migrateState}). */
export function stateCurrent(createSql: string): boolean {
  return /\bpending\b/.test(createSql);
}

/**
 * What a cluster object reads at its wake ({@link readAtWake}): the `CREATE` statement of each of
 * its tables present, by name, and, read in the same statement, the `state` rows `object` (the
 * ManagedCluster's JSON and its commit marker, `pending`), `committing` and `worksEtag` (a poll
 * agent's works ETag, durable-objects/cluster/works.ts) by key; `rows` is null
 * when that statement could not run (the `state` table is missing or older than the code), and
 * the tables were then read alone.
 */
export interface WakeRead {
  tables: Map<string, string>;
  rows: Map<string, { v: string; pending: string | null }> | null;
}

/**
 * Reads what a cluster object needs at its wake in one statement ({@link WakeRead}): its tables
 * `names` from `sqlite_master`, and the `state` rows that say whether a commit was interrupted
 * and hold the ManagedCluster, which nearly every wake reads next (a delivered change, a channel
 * message, an alarm), and the works ETag's row, which a wake by a delivered change (its push) or
 * a status message (its answer) reads next: absent for a channel agent, whose ETag lives in memory,
 * it cost such a wake a statement of its own. A wake ran two statements before, and a third at its first read of the
 * ManagedCluster; each statement of a cold object's first moments costs it about 0.1 to 0.2 ms
 * (a fleet woken by a rollout: docs/scale.md "The slow run in five or six"). When the `state`
 * table is missing or older than the code (no `pending` column), that statement fails to
 * prepare and the tables are read alone (`rows` null): the caller then makes the schema and reads
 * the marker itself.
 */
export function readAtWake(sql: SqlStorage, names: readonly string[]): WakeRead {
  const list = names.map((t) => `'${t}'`).join(", ");
  const schema = `SELECT 'table' AS kind, name AS k, sql AS v, NULL AS pending FROM sqlite_master WHERE type = 'table' AND name IN (${list})`;
  let read: { kind: string; k: string; v: string; pending: string | null }[];
  try {
    read = sql
      .exec<{ kind: string; k: string; v: string; pending: string | null }>(
        `${schema} UNION ALL SELECT 'row', k, v, pending FROM state WHERE k IN ('object', '${COMMITTING}', '${WORKS_ETAG}')`,
      )
      .toArray();
  } catch {
    return {
      tables: new Map(
        sql
          .exec<{ k: string; v: string }>(schema)
          .toArray()
          .map((r) => [r.k, r.v]),
      ),
      rows: null,
    };
  }
  const tables = new Map<string, string>();
  const rows = new Map<string, { v: string; pending: string | null }>();
  for (const r of read) {
    if (r.kind === "table") tables.set(r.k, r.v);
    else rows.set(r.k, { v: r.v, pending: r.pending });
  }
  // The statement ran, so the `state` table exists; one older than the code could not have.
  return { tables, rows };
}

/**
 * The `state` row that marks a D1 commit in flight ({ name }) while the object has no `object`
 * row yet (a create); otherwise the marker is the `object` row's `pending` column, so that the
 * write of the stored object clears it in the same row.
 */
const COMMITTING = "committing";

/** The `state` row of the works ETag a works poll handed out (durable-objects/cluster/works.ts), read at the wake. */
export const WORKS_ETAG = "worksEtag";

/** Freezes `value` and everything it holds (JSON data: objects and arrays). @returns value */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** Removes the cluster-ID annotation older hubs wrote (the ID is no longer served). */
function dropLegacyClusterId(obj: KubeObject): void {
  const annotations = obj.metadata.annotations;
  if (annotations?.[LEGACY_CLUSTER_ID_ANNOTATION] === undefined) return;
  delete annotations[LEGACY_CLUSTER_ID_ANNOTATION];
  if (Object.keys(annotations).length === 0) delete obj.metadata.annotations;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/** What {@link ClusterState} needs of its object. */
export interface StateHost {
  /** Runs one statement on the object's SQLite (metered). */
  exec(query: string, ...bindings: unknown[]): Record<string, SqlStorageValue>[];
  /** The current call's storage cost. */
  readonly cost: Cost;
  /**
   * Runs after the object stored `obj` (a commit, or a repair from D1), `previous` being its copy
   * before (null: none): the lease starts, a leave that started is scheduled.
   */
  stored(obj: KubeObject, previous: KubeObject | null, now: number): Promise<void>;
  /** Drops everything the object holds for the cluster, whose removal committed. */
  forget(): Promise<void>;
}

/** The cluster object's `state` table, its cache, and the commit of its ManagedCluster. */
export class ClusterState {
  /** Parsed, frozen `state` rows (see {@link view}). */
  private readonly cache = new Map<string, unknown>();
  /**
   * `state` rows' JSON as the wake read them (null: no such row), until this object writes or
   * deletes them (it is the table's only writer): {@link read} parses them without a query.
   */
  private readonly raw = new Map<string, string | null>();

  constructor(
    private readonly env: Env,
    private readonly host: StateHost,
  ) {}

  /** A `state` row's value (null when absent), parsed afresh: the caller may change it. */
  read<T>(k: string): T | null {
    const text = this.raw.has(k) ? this.raw.get(k)! : ((this.host.exec("SELECT v FROM state WHERE k = ?", k)[0]?.v as string | undefined) ?? null);
    return text === null ? null : (JSON.parse(text) as T);
  }

  /**
   * Takes in the `state` rows the wake read ({@link readAtWake}): the ManagedCluster's row and the
   * works ETag's (null: absent) are kept for {@link read}, so the wake's first read of either runs
   * no statement.
   * @returns whether a commit was interrupted (its marker is there: see {@link repairFromIndex})
   */
  woke(rows: ReadonlyMap<string, { v: string; pending: string | null }>): boolean {
    const object = rows.get("object");
    this.raw.set("object", object?.v ?? null);
    this.raw.set(WORKS_ETAG, rows.get(WORKS_ETAG)?.v ?? null);
    return rows.has(COMMITTING) || (object !== undefined && object.pending !== null);
  }

  /**
   * A `state` row's value (null when absent), read only: values are kept, deeply frozen, until
   * this object writes or deletes the row (it is the table's only writer), so the agent
   * requests that only look (a works poll, a status report) read the ManagedCluster and the works
   * ETag without a query or a JSON parse.
   */
  view<T>(k: string): Readonly<T> | null {
    if (this.cache.has(k)) return this.cache.get(k) as T | null;
    const value = deepFreeze(this.read<T>(k));
    this.cache.set(k, value);
    return value;
  }

  /** Writes a `state` row, clearing its commit marker (one row written). */
  write(k: string, v: unknown): void {
    this.cache.delete(k);
    this.raw.delete(k);
    this.host.exec("INSERT INTO state (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v, pending = NULL", k, JSON.stringify(v));
    // A plain value (the works ETag) is kept as written; an object is read again when needed,
    // since the caller may still change the one it passed.
    if (v === null || typeof v !== "object") this.cache.set(k, v);
  }

  /** Deletes a `state` row. */
  delete(k: string): void {
    this.cache.delete(k);
    this.raw.delete(k);
    this.host.exec("DELETE FROM state WHERE k = ?", k);
  }

  /** Forgets every cached row (after the object's storage was erased). */
  clear(): void {
    this.cache.clear();
    this.raw.clear();
  }

  /** The cluster's ManagedCluster (a copy the caller may change), or null. */
  object(): KubeObject | null {
    return this.read<KubeObject>("object");
  }

  /** The cluster's ManagedCluster, read only (see {@link view}), or null. */
  viewObject(): KubeObject | null {
    return this.view<KubeObject>("object") as KubeObject | null;
  }

  /** Whether a commit was interrupted (its marker is still here): see {@link repairFromIndex}. */
  interrupted(): boolean {
    return this.marker() !== null;
  }

  /** The marker of a commit in flight ({@link commit}), or null. */
  private marker(): { name: string } | null {
    const row = this.host.exec(
      "SELECT v AS marker FROM state WHERE k = ? UNION ALL SELECT pending AS marker FROM state WHERE k = 'object' AND pending IS NOT NULL",
      COMMITTING,
    )[0];
    return row ? (JSON.parse(row.marker as string) as { name: string }) : null;
  }

  /**
   * Marks a D1 commit of the cluster `name` in flight (one row written): in the `object` row when
   * there is one (its next write clears it), else in a row of its own (a create).
   * @returns whether the marker has a row of its own (to delete once the commit is stored)
   */
  private mark(name: string): boolean {
    const marker = JSON.stringify({ name });
    if (this.host.exec("UPDATE state SET pending = ? WHERE k = 'object' RETURNING k", marker).length > 0) return false;
    this.write(COMMITTING, { name });
    return true;
  }

  /** Removes the marker of a commit (its row, or the `object` row's `pending`). */
  private unmark(): void {
    this.delete(COMMITTING);
    this.host.exec("UPDATE state SET pending = NULL WHERE k = 'object' AND pending IS NOT NULL");
  }

  /**
   * Stores `next` as the cluster's object after running OCM's hub controllers on it, and commits
   * the D1 projection when it differs from `current`. Bumps `generation` when the spec changed.
   *
   * The D1 commit (src/store/storage.ts `Storage.commit`) is the commit point and D1 the authority
   * for the object: a marker is stored here before it (the `object` row's `pending` column; a
   * `committing` row for a create) and removed once this object stored the result (the write of
   * the `object` row clears its `pending`: 2 rows written in all for an update), so an object
   * that crashed in between finds the marker at its next load and takes the object from D1
   * ({@link repairFromIndex}); so does a commit that fails. What
   * the write owes after the commit (the scheduler, the removed cluster's namespace) is in the
   * commit's outbox row, run here once this object stored the result, and swept after a crash.
   * `mode` is "returns" for the agent's own writes and the lease controller's (registration,
   * heartbeat status, lease expiry, leave): they return once the scheduling they cause is queued,
   * and the decisions follow (src/store/d1/write.ts `WriterMode`); an admin's write waits for them.
   * @returns the stored object, null after a removal
   * @throws ApiError 404, 409 when D1 refused the commit (this copy then agrees with D1 again)
   */
  async commit(current: KubeObject | null, next: KubeObject | null, mode: WriterMode = "waits"): Promise<KubeObject | null> {
    const name = (next ?? current)!.metadata.name;
    const now = clock.now();
    if (next) {
      dropLegacyClusterId(next);
      reconcileManagedCluster(next, now);
      if (current && !sameJson(next.spec, current.spec)) next.metadata.generation = (current.metadata.generation ?? 1) + 1;
      if (current && sameJson(next, current)) return current;
    }
    const ownRow = this.mark(name);
    this.host.cost.d1Queries += 1;
    // A removed cluster's identity row goes in the same batch as its object.
    const storage = storageOf(this.env);
    const removeIdentity = next ? undefined : storage.identities.removedWith;
    let committed;
    try {
      committed = await storage.commit(ManagedClusterKind, { namespace: "", name }, current, next, now, { extra: removeIdentity });
    } catch (e) {
      // Refused (this copy was stale: D1 has another row) or unknown (D1 may have committed):
      // either way D1 tells. If it cannot be read now, the marker stays for the next load.
      await this.repairFromIndex().catch((err: unknown) => console.error(`cluster ${name}: could not compare with D1`, err));
      throw e;
    }
    const stored = committed.object;
    if (stored) {
      this.write("object", stored);
      if (ownRow) this.delete(COMMITTING);
      await this.host.stored(stored, current, now);
    } else {
      await this.host.forget();
    }
    if (committed.owed) {
      this.host.cost.d1Queries += 1;
      if (committed.owed.hooks[schedulingHook.name] !== undefined) this.host.cost.schedulerRuns += 1;
    }
    await storageOf(this.env).finish(committed, now, mode);
    return stored;
  }

  /**
   * Makes this object agree with D1 after a crash between a D1 commit and the end of
   * {@link commit} (the `committing` marker is still here): D1 is the authority, so a newer D1
   * row replaces this object's copy (the host's `stored` follows: the lease, and for a leave that
   * started, the works ETag and leave deadline), and a row gone from D1 means the removal
   * committed, so this object forgets the cluster. The outbox sweep is set, for the after-commit
   * work the crashed commit owes. Runs before any call reaches the object (`blockConcurrencyWhile`).
   */
  async repairFromIndex(): Promise<void> {
    const marker = this.marker();
    if (!marker) return;
    const mine = this.object();
    const row = await storeOf(this.env, ManagedClusterKind).getCommitted("", marker.name);
    const now = clock.now();
    if (row && (!mine || Number(row.metadata.resourceVersion) > Number(mine.metadata.resourceVersion))) {
      console.warn(`cluster ${marker.name}: took resourceVersion ${row.metadata.resourceVersion} from D1 after an interrupted commit`);
      this.write("object", row);
      this.delete(COMMITTING);
      await this.host.stored(row, mine, now);
    } else if (!row && mine) {
      console.warn(`cluster ${marker.name}: its removal committed before an interruption; forgetting it`);
      await this.host.forget();
    } else {
      this.unmark();
      return;
    }
    // The commit that was interrupted may owe after-commit work: its outbox row is swept.
    await armSweep(this.env, now);
  }
}
