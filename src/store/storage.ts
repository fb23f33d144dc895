/**
 * The store-level API beside the per-kind {@link Store}s (src/store/store.ts): what reads or
 * writes across kinds, on the D1 index every backend commits to. The collection's
 * resourceVersion and the wait for one ahead, the event log's start, the owner index, change
 * counters, and the commit below the backends (a precomputed change committed with its outbox row,
 * alone or in a commit group, then its after-commit hooks), which the scheduler, the cluster's
 * Durable Object and the controllers that compute their own writes use.
 */
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { Env } from "../env.ts";
import type { WaitUntil } from "./outbox.ts";
import type { SharedReads } from "./hooks.ts";
import {
  awaitResourceVersion,
  changeCounterValue,
  changedSince,
  listNamespaceContent,
  localChangeCommits,
  currentResourceVersion,
  d1Database,
  dependentsOf,
  eventLogStart,
  type ChangedObject,
  type Database,
  type CommitExtras,
  type StoreKey,
} from "./d1/objects.ts";
import { commitChange, finishCommit, type Committed } from "./d1/write.ts";
import type { WriterMode } from "./types.ts";
import { claimDelivery, releaseDelivery } from "./d1/deliveries.ts";
import {
  appendAuditRow,
  oldestAuditSeq,
  readAuditRows,
  replaceAuditRow,
  type AuditAppendLimits,
  type AuditColumnCondition,
  type AuditRow,
} from "./d1/audit-log.ts";
import { dropEventTtlRows, dueEvents, oldestEventWrite, type DueEvent } from "./d1/event-ttl.ts";
import { readFleetGaugeRows, type FleetGaugeKeys, type FleetGaugeRows } from "./d1/fleet-gauges.ts";
import { insertHubSecret, readHubSecret, replaceHubSecret } from "./d1/hub-secrets.ts";
import { missingColumns } from "./d1/migrations.ts";
import { readSetCountRow, recountSet, type SetCountRow } from "./d1/set-counts.ts";
import { claimIdentity, hasIdentity, releaseIdentity, removeIdentityShape, type ClusterIdentity } from "./d1/identities.ts";

export type { Committed } from "./d1/write.ts";
export type { ClusterIdentity } from "./d1/identities.ts";
export type { ChangedObject, CommitExtras, GuardedBinder, GuardedShape } from "./d1/objects.ts";
export { guardedShape } from "./d1/objects.ts";
export { eventTtlShapes } from "./d1/event-ttl.ts";
export { setCountShapes } from "./d1/set-counts.ts";
export type { SetCountRow } from "./d1/set-counts.ts";
export type { AuditAppendLimits, AuditColumnCondition, AuditRow } from "./d1/audit-log.ts";
export type { DueEvent } from "./d1/event-ttl.ts";
export type { FleetGaugeKeys, FleetGaugeRows, GaugeRow } from "./d1/fleet-gauges.ts";

/** Options of {@link Storage.commit}. */
export interface CommitOptions {
  /** Statements committed with the object, under its precondition (`CommitExtras.extra`: e.g. a deleted cluster's identity row). */
  extra?: CommitExtras["extra"];
  /** The commit may share a D1 batch with other writes in flight (a commit group: src/store/group-commit.ts). */
  grouped?: boolean;
}

/** Reads and commits across kinds, on the D1 index (see the module comment). */
export interface Storage {
  /** The collection's resourceVersion now (the counter every commit moves; one D1 read). */
  resourceVersion(): Promise<number>;
  /**
   * Waits until the collection's resourceVersion reaches `rv` (a request's `resourceVersion`
   * ahead of the hub's), up to `FUTURE_RESOURCE_VERSION_WAIT_MS`, and returns it.
   * @throws ApiError 504 Timeout with cause `ResourceVersionTooLarge` when it does not
   */
  awaitResourceVersion(rv: bigint, signal?: AbortSignal): Promise<number>;
  /** The oldest resourceVersion the event log replays from (a watch from below it gets 410 Expired). */
  eventLogStart(): Promise<number>;
  /**
   * The objects of the resources keyed `resources` (`<group>/<plural>`) changed after `afterRv`,
   * each once with its latest version, and the counter's value `latest` (one batch): what a cache
   * (the scheduler's view) reads to catch up. Before `latest - EVENT_RETENTION` the log may be pruned.
   */
  changedSince(resources: string[], afterRv: number): Promise<{ latest: number; changed: ChangedObject[] }>;
  /** The objects whose ownerReferences name the owner with UID `uid` (the owner index), as `{resource: "<group>/<plural>", namespace, name}`. */
  dependentsOf(uid: string): Promise<{ resource: string; namespace: string; name: string }[]>;
  /** The value of change counter `counter` (`KindDefinition.changeCounter`): 0 until a write of such a kind moved it. */
  changeCounter(counter: number): Promise<number>;
  /**
   * The objects of each D1-stored kind of `defs` in namespace `namespace`, per kind in the order of
   * `defs`, each sorted by name: one D1 round trip for all of them (a namespace's content, as a
   * placement selects it).
   */
  namespaceContent(defs: readonly KindDefinition[], namespace: string): Promise<KubeObject[][]>;
  /**
   * How many writes of kinds with change counter `counter` this isolate has committed (or tried
   * to) since it started: in memory, no read (src/store/d1/objects.ts `localChangeCommits`). A
   * cache that reads {@link changeCounter} only now and then reads it at once when this moved.
   */
  localChangeCommits(counter: number): number;
  /**
   * Commits `next` (null: delete) of kind `def` in place of `before` (null: create) with the
   * resourceVersion precondition of `before`, and in the same atomic batch the outbox row of what
   * the change owes the after-commit hooks; `now` is epoch milliseconds. Runs no hook: the caller
   * runs {@link finish} once it has done what must precede them (src/store/d1/write.ts `commitChange`).
   * @throws ApiError 404, 409 (the precondition failed; nothing was written)
   */
  commit(def: KindDefinition, key: StoreKey, before: KubeObject | null, next: KubeObject | null, now: number, opts?: CommitOptions): Promise<Committed>;
  /**
   * Runs the after-commit hooks a {@link commit} owes and deletes its outbox row (a failing hook is
   * left to the sweep, never thrown); `mode` and `waitUntil` as src/store/d1/write.ts `finishCommit`.
   * Returns whether a hook rewrote the written object.
   */
  finish(committed: Committed, now: number, mode?: WriterMode, waitUntil?: WaitUntil): Promise<{ rewrote: boolean }>;
  /**
   * {@link finish} of each of `committed` at once, their hooks sharing their lookups
   * (src/store/hooks.ts `SharedReads`): the follow-up of commits made together, such as one
   * scheduler run's PlacementDecisions, whose consumers each look up what refers to their placement.
   */
  finishTogether(committed: Committed[], now: number): Promise<void>;
  /**
   * The cluster identity index (a ManagedCluster's name and its agent's cluster ID, each unique;
   * src/store/d1/identities.ts): `claim` takes the pair unless either is held and returns the
   * pairs holding either; `has` tells whether a name holds one; `release` gives a pair back unless
   * its ManagedCluster is stored; `removedWith` is the commit extra that removes a cluster's row
   * with its deletion ({@link CommitOptions.extra}).
   */
  readonly identities: {
    claim(name: string, clusterId: string): Promise<ClusterIdentity[]>;
    has(name: string): Promise<boolean>;
    release(name: string, clusterId: string): Promise<void>;
    removedWith: NonNullable<CommitExtras["extra"]>;
  };
  /** Whether D1 answers (`SELECT 1`), for the health checks. @throws errors of D1 */
  ping(): Promise<boolean>;
  /**
   * The columns of the code's schema (src/db/schema.ts) that D1 lacks, as `table.column` (one
   * batch; empty when migrated), for the migrations health check (src/store/d1/migrations.ts).
   * @throws errors of D1
   */
  missingColumns(): Promise<string[]>;
  /**
   * The WebhookReceivers' delivery claims (replay protection, src/store/d1/deliveries.ts):
   * `claim` takes (receiver uid, delivery ID) at `nowMs` (epoch milliseconds), pruning expired
   * claims in the same batch, and answers false when the ID was claimed already; `release` gives
   * a claim back after its action failed.
   */
  readonly deliveries: {
    claim(receiverUid: string, deliveryId: string, nowMs: number): Promise<boolean>;
    release(receiverUid: string, deliveryId: string): Promise<void>;
  };
  /**
   * The cluster sets' member counts (src/store/d1/set-counts.ts, bound by
   * src/clusterprofile/set-counts.ts): `read` a set's count row (undefined when none); `recount`
   * it (its placeholders' `values`) unless its row is there and not marked `recount`.
   */
  readonly setCounts: {
    read(name: string): Promise<SetCountRow | undefined>;
    recount(name: string, driven: boolean, values: Record<string, unknown>): Promise<void>;
  };
  /**
   * The audit log beside the objects (src/store/d1/audit-log.ts; its policies in src/audit/log.ts):
   * `append` a row with retention, `read` rows after a sequence number with the highest stored,
   * `oldest` sequence kept (0: empty), `replace` the code and body of the row of `row.auditId`.
   */
  readonly auditLog: {
    append(row: AuditRow, limits: AuditAppendLimits): Promise<void>;
    replace(row: AuditRow): Promise<void>;
    read(conditions: readonly AuditColumnCondition[], afterSeq: number, limit: number): Promise<{ rows: { seq: number; body: string }[]; latest: number }>;
    oldest(): Promise<number>;
  };
  /**
   * The hub's own secrets (src/store/d1/hub-secrets.ts), sealed by their callers: `read` one,
   * `insert` unless present (`nowMs` epoch milliseconds), `replace` one if it still has `expected`.
   */
  readonly hubSecrets: {
    read(name: string): Promise<string | undefined>;
    insert(name: string, value: string, nowMs: number): Promise<void>;
    replace(name: string, value: string, expected: string): Promise<void>;
  };
  /**
   * The Events' expiry index (`event_ttl`, src/store/d1/event-ttl.ts): the `oldest` last-write
   * time (epoch milliseconds; null: no Event), the Events `due` at a cutoff (epoch milliseconds)
   * with their stored rows, and `drop` rows whose Event is gone.
   */
  readonly eventTtl: {
    oldest(): Promise<number | null>;
    due(eventsResource: string, cutoff: number, limit: number): Promise<DueEvent[]>;
    drop(keys: readonly { namespace: string; name: string }[]): Promise<void>;
  };
  /** The fleet gauges' aggregate rows in one D1 batch (src/store/d1/fleet-gauges.ts). @throws errors of D1 */
  fleetGauges(keys: FleetGaugeKeys): Promise<FleetGaugeRows>;
}

/** The Storage made for each environment, with the D1 handle it was made on (a changed binding or keyring makes another). */
const storages = new WeakMap<Env, { db: Database; storage: Storage }>();

/**
 * The {@link Storage} of a Worker environment (its D1 index, with its keyring), made once per
 * environment (and D1 binding and keyring): a controller that writes one object per cluster
 * (ClusterProfiles) asks for it per write, and making its two dozen closures each time took about
 * 2 % of the Worker's time writing 10,000 of them (bench:scale).
 */
export function storageOf(env: Env): Storage {
  const db = d1Database(env);
  const made = storages.get(env);
  if (made?.db === db) return made.storage;
  const storage = makeStorage(env, db);
  storages.set(env, { db, storage });
  return storage;
}

function makeStorage(env: Env, db: Database): Storage {
  return {
    resourceVersion: () => currentResourceVersion(db),
    changedSince: (resources, afterRv) => changedSince(db, resources, afterRv),
    awaitResourceVersion: (rv, signal) => awaitResourceVersion(db, rv, signal),
    eventLogStart: () => eventLogStart(db),
    dependentsOf: (uid) => dependentsOf(db, uid),
    changeCounter: (counter) => changeCounterValue(db, counter),
    namespaceContent: (defs, namespace) => listNamespaceContent(db, defs, namespace),
    localChangeCommits,
    commit: (def, key, before, next, now, opts = {}) => commitChange(env, def, key, before, next, now, opts.extra, opts.grouped),
    finish: (committed, now, mode, waitUntil) => finishCommit(env, committed, now, mode, waitUntil),
    async finishTogether(committed, now) {
      const reads: SharedReads = new Map();
      await Promise.all(committed.map((c) => finishCommit(env, c, now, "waits", undefined, reads)));
    },
    identities: {
      claim: (name, clusterId) => claimIdentity(env.DB, name, clusterId),
      has: (name) => hasIdentity(env.DB, name),
      release: (name, clusterId) => releaseIdentity(env.DB, name, clusterId),
      removedWith: (guarded) => [guarded(removeIdentityShape)],
    },
    async ping() {
      return (await env.DB.prepare("SELECT 1 AS ok").first<{ ok: number }>())?.ok === 1;
    },
    missingColumns: () => missingColumns(env.DB),
    deliveries: {
      claim: (receiverUid, deliveryId, nowMs) => claimDelivery(env.DB, receiverUid, deliveryId, nowMs),
      release: (receiverUid, deliveryId) => releaseDelivery(env.DB, receiverUid, deliveryId),
    },
    setCounts: {
      read: (name) => readSetCountRow(env.DB, name),
      recount: (name, driven, values) => recountSet(env.DB, name, driven, values),
    },
    auditLog: {
      append: (row, limits) => appendAuditRow(env.DB, row, limits),
      replace: (row) => replaceAuditRow(env.DB, row),
      read: (conditions, afterSeq, limit) => readAuditRows(env.DB, conditions, afterSeq, limit),
      oldest: () => oldestAuditSeq(env.DB),
    },
    hubSecrets: {
      read: (name) => readHubSecret(env.DB, name),
      insert: (name, value, nowMs) => insertHubSecret(env.DB, name, value, nowMs),
      replace: (name, value, expected) => replaceHubSecret(env.DB, name, value, expected),
    },
    eventTtl: {
      oldest: () => oldestEventWrite(env.DB),
      due: (eventsResource, cutoff, limit) => dueEvents(env.DB, eventsResource, cutoff, limit),
      drop: (keys) => dropEventTtlRows(env.DB, keys),
    },
    fleetGauges: (keys) => readFleetGaugeRows(env.DB, keys),
  };
}

/**
 * An object that stands for `env`'s storage (its D1 binding), the same for every request an
 * isolate serves while `env` objects may differ: the key of a per-storage cache or commit group
 * (e.g. src/policy/propagator.ts's compliance groups).
 */
export function storageKey(env: Env): object {
  return env.DB;
}
