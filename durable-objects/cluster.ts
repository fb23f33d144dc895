/**
 * ClusterObject: one Durable Object per member cluster (named by the cluster name). It serves the
 * cluster's ManagedCluster object and holds its lease, its registered public keys and its replay
 * cache; a change of the object commits to the D1 index (the commit point) and then to this
 * object's copy, only when the object changes (see `commit`). The hub-side lease controller of OCM runs on its alarm (no scanning of all
 * clusters anywhere).
 *
 * Every mutation runs through one queue, so writes to a cluster are serialised even across the
 * awaits on D1.
 */
import { DurableObject } from "cloudflare:workers";
import { and, eq, sql } from "drizzle-orm";
import { builder } from "../src/db/compiled.ts";
import { decodeProtectedHeader, importJWK, jwtVerify, type JWK } from "jose";
import { ApiError, conflict, forbidden, invalid, notFound, tooManyRequests, unauthorized, type Status } from "../src/k8s/errors.ts";
import { findCondition, rfc3339, setCondition, type KubeObject } from "../src/k8s/meta.ts";
import { database, getObject, guardedShape, listObjects, type GuardedBinder } from "../src/k8s/store.ts";
import { ManifestWorkKind } from "../src/kinds/manifestwork.ts";
import { NamespaceWorks, type WorkDelta } from "../src/work/namespace-works.ts";
import { commitChange, finishCommit, type WriterMode } from "../src/store/write.ts";
import { armSweep } from "../src/store/outbox.ts";
import { clusterIdentities } from "../src/db/schema.ts";
import { computeWrite, settleDeletion, type WriteRequest } from "../src/k8s/write.ts";
import {
  ACCEPT_KEY_ANNOTATION,
  LEGACY_CLUSTER_ID_ANNOTATION,
  PENDING_KEY_ANNOTATION,
  Conditions,
  DEFAULT_LEASE_DURATION_SECONDS,
  ManagedClusterKind,
  reconcileManagedCluster,
  specOf,
  statusOf,
  writableStatusOf,
} from "../src/kinds/managedcluster.ts";
import type { Env } from "../src/env.ts";
import { schedulingHook } from "../src/placement/triggers.ts";
import { AGENT_AUDIENCE, CLOCK_SKEW_SECONDS, type Heartbeat } from "../src/agent/protocol.ts";
import { INVALID_AGENT_CREDENTIAL } from "../src/auth/credentials.ts";
import { checkTimes } from "../src/auth/keys.ts";
import { clock } from "../src/clock.ts";
import { AgentConnection, type ConnectionHost } from "./cluster/connection.ts";
import { CloseCodes } from "../src/agent/channel-protocol.ts";

/** A result crossing the RPC boundary: a value, or a Kubernetes Status (errors as values). */
export type Result<T> = { ok: true; value: T } | { ok: false; status: Status };

/**
 * Storage cost of one call: rows written to the object's SQLite, queries this object sent to D1,
 * and scheduler runs it triggered (each reads the index and writes what changed).
 */
export interface Cost {
  rowsWritten: number;
  d1Queries: number;
  schedulerRuns: number;
}

/** The outcome of an admin write: the stored object (null after a delete) and whether it was created. */
export interface WriteOutcome {
  object: KubeObject | null;
  created: boolean;
}

/**
 * What the agent learns about its registration (GET /agent/v1/clusters/{name}). `keyPending` is
 * true while the key the agent authenticated with (or registered) waits for an admin to accept
 * it; such a key may only read this.
 */
export interface RegistrationInfo {
  clusterName: string;
  hubAcceptsClient: boolean;
  denied: boolean;
  joined: boolean;
  leaseDurationSeconds: number;
  keyPending: boolean;
}

/**
 * How a registration ended: a new cluster (`created`), the cluster's current key registered
 * again (`confirmed`, an agent restart), or a new key for a known cluster held until an admin
 * accepts it (`pending`).
 */
export type RegistrationOutcome = "created" | "confirmed" | "pending";

/**
 * Registration input, already checked by the Worker: the bootstrap token, the cluster ID index,
 * and the proof that the caller holds `publicKey`'s private key (`kid` is its thumbprint).
 */
export interface RegisterInput {
  clusterName: string;
  clusterId: string;
  publicKey: JWK;
  kid: string;
  claims: { name: string; value: string }[];
  autoApprove: boolean;
}

/** What an agent request asks for once its JWT is verified. */
export type AgentAction =
  | { action: "info" }
  | { action: "heartbeat"; heartbeat: Heartbeat }
  | { action: "rotate-key"; publicKey: JWK; kid: string }
  | { action: "works"; ifNoneMatch?: string; waitMs: number }
  | { action: "report" }
  | { action: "left" };

/**
 * The works state of a cluster as the Durable Object knows it: the works ETag (an opaque string
 * that changes whenever a work in the cluster's namespace is created, changes spec or metadata, or
 * is deleted), whether the cluster is leaving, and whether `etag` differs from the `If-None-Match`
 * the agent sent (when false the Worker answers 304 without reading D1). When it differs, `works`
 * are the namespace's works (src/work/namespace-works.ts), unless the namespace holds too many
 * bytes of them: the Worker reads them from D1 then.
 */
export interface WorksState {
  etag: string;
  leaving: boolean;
  changed: boolean;
  works?: KubeObject[];
}

/** The finalizer that holds a deleted, accepted ManagedCluster until its agent has left (or the leave timed out). */
export const LEAVE_FINALIZER = "cluster.open-cluster-management.io/api-resource-cleanup";
/** Default of LEAVE_TIMEOUT_SECONDS: how long the hub waits for a leaving agent, in seconds (KubeFleet: 15 minutes). */
export const DEFAULT_LEAVE_TIMEOUT_SECONDS = 900;

/**
 * The cluster's lease (OCM's `managed-cluster-lease`): the last renewal, epoch milliseconds, and
 * the `leaseDurationSeconds` the agent was told then (seconds).
 */
export interface LeaseRecord {
  renewMs: number;
  toldSeconds: number;
}

/** Deletes the identity row of the cluster named by the commit's key, under its guard (a removal). */
const removeIdentityShape = guardedShape((cond) => builder.delete(clusterIdentities).where(and(eq(clusterIdentities.name, sql.placeholder("name")), cond)));

/** Freezes `value` and everything it holds (JSON data: objects and arrays). @returns value */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** The `state` row that marks a D1 commit in flight ({ name }), see `commit`. */
const COMMITTING = "committing";

/** How long a key replaced by rotation keeps working, in milliseconds. */
export const ROTATION_OVERLAP_MS = 5 * 60 * 1000;

function errorResult(e: unknown): { ok: false; status: Status } {
  if (e instanceof ApiError) return { ok: false, status: e.toStatus() };
  throw e;
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

/**
 * Most works long-polls one cluster may have waiting at once. Its agent holds one; the rest covers
 * agent restarts, whose abandoned polls wait out their `waitSeconds` (at most 55).
 */
export const MAX_WORKS_WAITERS = 8;
/** `Retry-After` of a works long-poll refused by {@link MAX_WORKS_WAITERS}, in seconds. */
export const WORKS_RETRY_AFTER_SECONDS = 5;

/** The per-cluster Durable Object. */
export class ClusterObject extends DurableObject<Env> {
  private sql: SqlStorage;
  private queue: Promise<unknown> = Promise.resolve();
  private keyCache = new Map<string, CryptoKey>();
  private alarmArmedAt: number | null = null;
  private lastPurgeMs = 0;
  private cost: Cost = { rowsWritten: 0, d1Queries: 0, schedulerRuns: 0 };
  /** Parsed, frozen `state` rows (see `viewState`). */
  private readonly stateCache = new Map<string, unknown>();
  /** The works of the cluster's namespace, for works polls (src/work/namespace-works.ts). */
  private readonly works = new NamespaceWorks();
  /** The agent's channel: a hibernatable WebSocket (durable-objects/cluster/connection.ts). */
  private readonly connection = new AgentConnection(this.ctx, this.env, this.connectionHost());

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.createSchema();
    if (this.readState(COMMITTING)) void ctx.blockConcurrencyWhile(() => this.repairFromIndex());
  }

  /** Creates this object's tables (again after a deleteAll). */
  private createSchema(): void {
    this.sql.exec(`CREATE TABLE IF NOT EXISTS state (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS keys (kid TEXT PRIMARY KEY, jwk TEXT NOT NULL, not_after INTEGER);
      CREATE TABLE IF NOT EXISTS pending_key (one INTEGER PRIMARY KEY CHECK (one = 1), kid TEXT NOT NULL, jwk TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS seen_jti (jti TEXT PRIMARY KEY, exp INTEGER NOT NULL) WITHOUT ROWID;`);
  }

  // ---- storage helpers -------------------------------------------------------------------

  private exec(query: string, ...bindings: unknown[]): Record<string, SqlStorageValue>[] {
    const cursor = this.sql.exec(query, ...bindings);
    const rows = cursor.toArray();
    this.cost.rowsWritten += cursor.rowsWritten;
    return rows;
  }

  /** A `state` row's value (null when absent), parsed afresh: the caller may change it. */
  private readState<T>(k: string): T | null {
    const row = this.exec("SELECT v FROM state WHERE k = ?", k)[0];
    return row ? (JSON.parse(row.v as string) as T) : null;
  }

  /**
   * A `state` row's value (null when absent), read only: values are kept, deeply frozen, until
   * this object writes or deletes the row (it is the table's only writer), so the agent
   * requests that only look (a works poll, a status report) read the ManagedCluster and the works
   * ETag without a query or a JSON parse.
   */
  private viewState<T>(k: string): Readonly<T> | null {
    if (this.stateCache.has(k)) return this.stateCache.get(k) as T | null;
    const value = deepFreeze(this.readState<T>(k));
    this.stateCache.set(k, value);
    return value;
  }

  private writeState(k: string, v: unknown): void {
    this.stateCache.delete(k);
    this.exec("INSERT INTO state (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v", k, JSON.stringify(v));
    // A plain value (the works ETag) is kept as written; an object is read again when needed,
    // since the caller may still change the one it passed.
    if (v === null || typeof v !== "object") this.stateCache.set(k, v);
  }

  private deleteState(k: string): void {
    this.stateCache.delete(k);
    this.exec("DELETE FROM state WHERE k = ?", k);
  }

  private object(): KubeObject | null {
    return this.readState<KubeObject>("object");
  }

  private worksEtag(): string {
    let etag = this.viewState<string>("worksEtag");
    if (etag === null) {
      etag = crypto.randomUUID();
      this.writeState("worksEtag", etag);
    }
    return etag;
  }

  /** The leave deadline (epoch milliseconds) of a leaving cluster, else null. */
  private leaveDeadline(obj: KubeObject): number | null {
    if (!obj.metadata.deletionTimestamp || !obj.metadata.finalizers?.includes(LEAVE_FINALIZER)) return null;
    const seconds = Number(this.env.LEAVE_TIMEOUT_SECONDS ?? DEFAULT_LEAVE_TIMEOUT_SECONDS);
    return Date.parse(obj.metadata.deletionTimestamp) + (Number.isFinite(seconds) && seconds >= 0 ? seconds : DEFAULT_LEAVE_TIMEOUT_SECONDS) * 1000;
  }

  private lease(): LeaseRecord | null {
    return this.readState<LeaseRecord>("lease");
  }

  /**
   * The grace period in milliseconds: LEASE_GRACE_MULTIPLIER x leaseDurationSeconds (OCM: 5 x).
   * When an admin shortened the lease, the agent learns it only at its next renewal, so the
   * interval the agent was told at its last renewal counts until then.
   */
  private graceMs(obj: KubeObject, lease: LeaseRecord | null): number {
    const multiplier = Number(this.env.LEASE_GRACE_MULTIPLIER ?? "5") || 5;
    const seconds = Math.max(specOf(obj).leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS, lease?.toldSeconds ?? 0);
    return multiplier * seconds * 1000;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private takeCost(): Cost {
    const c = this.cost;
    this.cost = { rowsWritten: 0, d1Queries: 0, schedulerRuns: 0 };
    return c;
  }

  /**
   * Stores `next` as the cluster's object after running OCM's hub controllers on it, and commits
   * the D1 projection when it differs from `current`. Bumps `generation` when the spec changed.
   *
   * The D1 commit (src/store/write.ts `commitChange`) is the commit point and D1 the authority
   * for the object: a `committing` marker is stored here before it and removed once this object
   * stored the result, so an object that crashed in between finds the marker at its next load
   * and takes the object from D1 ({@link repairFromIndex}); so does a commit that fails. What
   * the write owes after the commit (the scheduler, the removed cluster's namespace) is in the
   * commit's outbox row, run here once this object stored the result, and swept after a crash.
   * `mode` is "returns" for the agent's own writes and the lease controller's (registration,
   * heartbeat status, lease expiry, leave): they return once the scheduling they cause is queued,
   * and the decisions follow (src/store/write.ts `WriterMode`); an admin's write waits for them.
   */
  private async commit(current: KubeObject | null, next: KubeObject | null, mode: WriterMode = "waits"): Promise<KubeObject | null> {
    const name = (next ?? current)!.metadata.name;
    const now = clock.now();
    if (next) {
      dropLegacyClusterId(next);
      reconcileManagedCluster(next, now);
      if (current && !sameJson(next.spec, current.spec)) next.metadata.generation = (current.metadata.generation ?? 1) + 1;
      if (current && sameJson(next, current)) return current;
    }
    this.writeState(COMMITTING, { name });
    this.cost.d1Queries += 1;
    // A removed cluster's identity row goes in the same batch as its object.
    const removeIdentity = next ? undefined : (guarded: GuardedBinder) => [guarded(removeIdentityShape)];
    let committed;
    try {
      committed = await commitChange(this.env, ManagedClusterKind, { namespace: "", name }, current, next, now, removeIdentity);
    } catch (e) {
      // Refused (this copy was stale: D1 has another row) or unknown (D1 may have committed):
      // either way D1 tells. If it cannot be read now, the marker stays for the next load.
      await this.repairFromIndex().catch((err: unknown) => console.error(`cluster ${name}: could not compare with D1`, err));
      throw e;
    }
    const stored = committed.object;
    if (stored) {
      this.writeState("object", stored);
      this.deleteState(COMMITTING);
      this.connection.objectChanged(stored);
      await this.afterChange(stored, now);
    } else {
      await this.forget();
    }
    if (committed.owed) {
      this.cost.d1Queries += 1;
      if (committed.owed.hooks[schedulingHook.name] !== undefined) this.cost.schedulerRuns += 1;
    }
    await finishCommit(this.env, committed, now, mode);
    return stored;
  }

  /** Drops everything this object holds for a removed cluster (its D1 row is gone already). */
  private async forget(): Promise<void> {
    this.connection.closeAll(CloseCodes.Left, "the cluster left or was removed");
    this.keyCache.clear();
    this.alarmArmedAt = null;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.stateCache.clear();
    this.works.invalidate();
    this.createSchema();
  }

  /**
   * Makes this object agree with D1 after a crash between a D1 commit and the end of
   * {@link commit} (the `committing` marker is still here): D1 is the authority, so a newer D1
   * row replaces this object's copy (its lease alarm and, for a leave that started, the works
   * ETag and leave deadline follow), and a row gone from D1 means the removal committed, so this
   * object forgets the cluster. The outbox sweep is set, for the after-commit work the crashed
   * commit owes. Runs before any call reaches the object (`blockConcurrencyWhile`).
   */
  private async repairFromIndex(): Promise<void> {
    const marker = this.readState<{ name: string }>(COMMITTING);
    if (!marker) return;
    const mine = this.object();
    const row = await getObject(database(this.env.DB), ManagedClusterKind, { namespace: "", name: marker.name });
    const now = clock.now();
    if (row && (!mine || Number(row.metadata.resourceVersion) > Number(mine.metadata.resourceVersion))) {
      console.warn(`cluster ${marker.name}: took resourceVersion ${row.metadata.resourceVersion} from D1 after an interrupted commit`);
      this.writeState("object", row);
      this.deleteState(COMMITTING);
      await this.afterChange(row, now);
      if (row.metadata.deletionTimestamp && !mine?.metadata.deletionTimestamp) {
        await this.worksChanged();
        const deadline = this.leaveDeadline(row);
        if (deadline !== null) await this.armAlarm(deadline);
      }
    } else if (!row && mine) {
      console.warn(`cluster ${marker.name}: its removal committed before an interruption; forgetting it`);
      await this.forget();
    } else {
      this.deleteState(COMMITTING);
      return;
    }
    // The commit that was interrupted may owe after-commit work: its outbox row is swept.
    await armSweep(this.env, now);
  }

  /** Starts the lease of a newly accepted cluster and keeps the alarm no later than its expiry. */
  private async afterChange(obj: KubeObject, now: number): Promise<void> {
    if (!findCondition(statusOf(obj).conditions, Conditions.HubAccepted)) return;
    let lease = this.lease();
    if (lease === null) {
      lease = { renewMs: now, toldSeconds: specOf(obj).leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS };
      this.writeState("lease", lease);
    }
    await this.armAlarm(lease.renewMs + this.graceMs(obj, lease));
  }

  private async armAlarm(at: number): Promise<void> {
    if (this.alarmArmedAt !== null && this.alarmArmedAt <= at) return;
    const current = await this.ctx.storage.getAlarm();
    if (current !== null && current <= at) {
      this.alarmArmedAt = current;
      return;
    }
    await this.ctx.storage.setAlarm(at);
    this.cost.rowsWritten += 1;
    this.alarmArmedAt = at;
  }

  // ---- admin API ---------------------------------------------------------------------------

  /** The ManagedCluster, or a 404 Status. */
  async get(name: string): Promise<Result<KubeObject>> {
    const obj = this.object();
    if (!obj) return { ok: false, status: notFound({ group: ManagedClusterKind.group, plural: ManagedClusterKind.plural, name }).toStatus() };
    return { ok: true, value: obj };
  }

  /**
   * Runs an admin write (create, update, patch, delete; main resource or status) through the
   * generic write machinery, then OCM's hub controllers, then commits.
   */
  async write(name: string, req: WriteRequest): Promise<Result<WriteOutcome>> {
    return this.serial(async () => {
      try {
        const now = clock.now();
        const current = this.object();
        let base = current;
        // Leave (KubeFleet's leave, OCM's cleanup finalizer): an accepted cluster's agent must first
        // remove what its works applied, so its deletion waits on LEAVE_FINALIZER.
        if (req.verb === "delete" && current && !current.metadata.deletionTimestamp && findCondition(statusOf(current).conditions, Conditions.HubAccepted)?.status === "True") {
          base = structuredClone(current);
          base.metadata.finalizers = [...(base.metadata.finalizers ?? []).filter((f) => f !== LEAVE_FINALIZER), LEAVE_FINALIZER];
        }
        const { next, created } = computeWrite(ManagedClusterKind, { namespace: "", name }, base, req, { now, newUid: () => crypto.randomUUID() });
        if (next === base && base === current) return { ok: true, value: { object: current, created } };
        const accepted = next ? this.keyAcceptance(current, next) : null;
        if (next && next.metadata.deletionTimestamp && next.metadata.finalizers?.includes(LEAVE_FINALIZER) && !current?.metadata.deletionTimestamp) {
          setCondition(
            (writableStatusOf(next).conditions ??= []),
            { type: Conditions.Joined, status: "False", reason: "ManagedClusterLeaving", message: "The cluster is leaving: its agent is removing what works applied" },
            rfc3339(now),
          );
        }
        const stored = await this.commit(current, settleDeletion(next));
        if (stored && accepted) this.promotePendingKey(accepted);
        if (stored && current && !current.metadata.deletionTimestamp && stored.metadata.deletionTimestamp) {
          // The start of a leave changes what a works poll answers (`leaving`), so it is a new ETag.
          await this.worksChanged();
          const deadline = this.leaveDeadline(stored);
          if (deadline !== null) await this.armAlarm(deadline);
        }
        return { ok: true, value: { object: stored, created } };
      } catch (e) {
        return errorResult(e);
      }
    });
  }

  // ---- agent API ---------------------------------------------------------------------------

  /**
   * Registers the cluster's agent; its identity is its key, never its name or cluster ID (the
   * Worker checked the bootstrap token, claimed the (name, cluster ID) pair in the D1 index and
   * verified that the caller holds the key):
   * - no ManagedCluster yet: creates it with `hubAcceptsClient` = the token's autoApprove, and
   *   the key becomes the cluster's only key (`created`);
   * - the key is the cluster's current key, or the cluster has none (an admin created it): the
   *   claims are updated (`confirmed`); a key retired by a rotation is not current;
   * - any other key is held as the cluster's pending key, shown on the ManagedCluster as the
   *   annotation `flotilla.dev/pending-key-id`, until an admin accepts it; the accepted key keeps
   *   working and nothing else changes (`pending`), as OCM holds a new CSR until it is approved.
   */
  async register(input: RegisterInput): Promise<Result<{ outcome: RegistrationOutcome; info: RegistrationInfo }>> {
    return this.serial(async () => {
      try {
        const now = clock.now();
        const current = this.object();
        let next: KubeObject;
        let outcome: RegistrationOutcome;
        if (!current) {
          const body = { metadata: { name: input.clusterName }, spec: { hubAcceptsClient: input.autoApprove } };
          next = computeWrite(ManagedClusterKind, { namespace: "", name: input.clusterName }, null, { verb: "create", body }, { now, newUid: () => crypto.randomUUID() }).next!;
          if (input.autoApprove) next.metadata.annotations = { "open-cluster-management.io/automatically-accepted-on": rfc3339(now) };
          outcome = "created";
        } else if (this.exec("SELECT 1 FROM keys LIMIT 1").length === 0 || this.currentKey(input.kid)) {
          next = structuredClone(current);
          outcome = "confirmed";
        } else {
          this.exec(
            "INSERT INTO pending_key (one, kid, jwk) VALUES (1, ?, ?) ON CONFLICT (one) DO UPDATE SET kid = excluded.kid, jwk = excluded.jwk",
            input.kid,
            JSON.stringify(input.publicKey),
          );
          next = structuredClone(current);
          next.metadata.annotations = { ...(next.metadata.annotations ?? {}), [PENDING_KEY_ANNOTATION]: input.kid };
          const stored = (await this.commit(current, next, "returns")) ?? current;
          return { ok: true, value: { outcome: "pending", info: this.info(stored, true) } };
        }
        if (input.claims.length > 0) writableStatusOf(next).clusterClaims = input.claims;
        if (outcome === "created" || this.exec("SELECT 1 FROM keys LIMIT 1").length === 0) {
          this.exec("INSERT INTO keys (kid, jwk, not_after) VALUES (?, ?, NULL)", input.kid, JSON.stringify(input.publicKey));
        }
        const stored = (await this.commit(current, next, "returns"))!;
        return { ok: true, value: { outcome, info: this.info(stored, false) } };
      } catch (e) {
        return errorResult(e);
      }
    });
  }

  private info(obj: KubeObject, keyPending: boolean): RegistrationInfo {
    const spec = specOf(obj);
    const conditions = statusOf(obj).conditions;
    return {
      clusterName: obj.metadata.name,
      hubAcceptsClient: spec.hubAcceptsClient,
      denied: findCondition(conditions, Conditions.HubAccepted)?.status === "False",
      joined: findCondition(conditions, Conditions.Joined)?.status === "True",
      leaseDurationSeconds: spec.leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS,
      keyPending,
    };
  }

  /**
   * Whether `kid` is the cluster's current key: a key a rotation retired (still valid during its
   * grace) is not, so registering with it again is held for an admin like any other key.
   */
  private currentKey(kid: string): boolean {
    return this.exec("SELECT 1 FROM keys WHERE kid = ? AND not_after IS NULL", kid).length > 0;
  }

  /**
   * An admin write's answer to the pending key (OCM: approving the cluster's CSR). The pending-key
   * annotation is the hub's own; the accept annotation must name the pending key. Returns the key
   * to promote once the write committed (and removes both annotations from `next`), or null.
   * @throws ApiError 422 naming the annotation
   */
  private keyAcceptance(current: KubeObject | null, next: KubeObject): { kid: string; jwk: string } | null {
    const ref = { group: ManagedClusterKind.group, plural: ManagedClusterKind.plural, kind: ManagedClusterKind.kind, name: next.metadata.name };
    const annotations = next.metadata.annotations ?? {};
    if (annotations[PENDING_KEY_ANNOTATION] !== current?.metadata.annotations?.[PENDING_KEY_ANNOTATION]) {
      throw invalid(ref, [{ field: `metadata.annotations[${PENDING_KEY_ANNOTATION}]`, message: "set by the hub only: it shows the key a registration is waiting with" }]);
    }
    const accept = annotations[ACCEPT_KEY_ANNOTATION];
    if (accept === undefined) return null;
    const pending = this.exec("SELECT kid, jwk FROM pending_key")[0] as { kid: string; jwk: string } | undefined;
    if (!pending || pending.kid !== accept) {
      throw invalid(ref, [{ field: `metadata.annotations[${ACCEPT_KEY_ANNOTATION}]`, message: `Invalid value: ${JSON.stringify(accept)}: no registration is waiting with this key ID` }]);
    }
    const rest = { ...annotations };
    delete rest[PENDING_KEY_ANNOTATION];
    delete rest[ACCEPT_KEY_ANNOTATION];
    next.metadata.annotations = rest;
    if (Object.keys(rest).length === 0) delete next.metadata.annotations;
    return pending;
  }

  /** Makes the accepted pending key the cluster's only key: every earlier key stops at once. */
  private promotePendingKey(key: { kid: string; jwk: string }): void {
    this.exec("DELETE FROM keys");
    this.exec("INSERT INTO keys (kid, jwk, not_after) VALUES (?, ?, NULL)", key.kid, key.jwk);
    this.exec("DELETE FROM pending_key");
    this.keyCache.clear();
    this.connection.closeAll(CloseCodes.KeyReplaced, "an admin accepted another key for the cluster", key.kid);
  }

  /**
   * The verification key for `kid`: one of the cluster's keys still valid at `now` (epoch
   * milliseconds), or its pending key (`pending: true`), else null. `retired` is true for a key
   * that a rotation replaced and that works only until its grace ends (`not_after`). A stored key
   * that no longer imports (registered by an older hub without a check) is treated as unknown.
   */
  private async key(kid: string, now: number): Promise<{ key: CryptoKey; pending: boolean; retired: boolean } | null> {
    let row = this.exec("SELECT jwk, not_after FROM keys WHERE kid = ?", kid)[0];
    let pending = false;
    if (!row) {
      row = this.exec("SELECT jwk, NULL AS not_after FROM pending_key WHERE kid = ?", kid)[0];
      pending = true;
    }
    if (!row) return null;
    if (row.not_after !== null && (row.not_after as number) <= now) return null;
    let key = this.keyCache.get(kid);
    if (!key) {
      try {
        key = (await importJWK(JSON.parse(row.jwk as string) as JWK, "ES256")) as CryptoKey;
      } catch {
        return null;
      }
      this.keyCache.set(kid, key);
    }
    return { key, pending, retired: row.not_after !== null };
  }

  /**
   * Verifies an agent JWT (see docs/agent-protocol.md): ES256 signature by a key of this cluster
   * (or its pending key: then `pending` is true), `iss`/`sub` equal to the cluster name, `aud`
   * "flotilla", lifetime at most 60 s, not issued in the future, 30 s clock skew, and a `jti`
   * never seen before (replay cache in this object's SQLite). Every failure has the same
   * message, so a caller learns nothing about the cluster. `retired`: signed by a key in its
   * rotation grace period (see `rotate`). With `record` false the `jti` is checked but not
   * recorded, so the same token can still be used once ({@link authenticates}).
   *
   * @throws ApiError 401 on any failure.
   */
  private async verify(token: string, name: string, now: number, record = true): Promise<{ kid: string; pending: boolean; retired: boolean }> {
    const refuse = () => unauthorized(INVALID_AGENT_CREDENTIAL);
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw refuse();
    }
    if (!kid) throw refuse();
    const found = await this.key(kid, now);
    if (!found) throw refuse();
    let payload;
    try {
      ({ payload } = await jwtVerify(token, found.key, {
        algorithms: ["ES256"],
        audience: AGENT_AUDIENCE,
        issuer: name,
        subject: name,
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ["exp", "iat", "jti"],
        currentDate: new Date(now),
      }));
    } catch {
      throw refuse();
    }
    checkTimes(payload.iat!, payload.exp!, now, refuse);
    const jti = String(payload.jti);
    if (jti.length > 128) throw refuse();
    if (!record) {
      if (this.exec("SELECT 1 FROM seen_jti WHERE jti = ?", jti).length > 0) throw refuse();
      return { kid, pending: found.pending, retired: found.retired };
    }
    const seen = this.exec("INSERT INTO seen_jti (jti, exp) VALUES (?, ?) ON CONFLICT (jti) DO NOTHING RETURNING jti", jti, (payload.exp! + CLOCK_SKEW_SECONDS) * 1000);
    if (seen.length === 0) throw refuse();
    if (now - this.lastPurgeMs > 60_000) {
      this.lastPurgeMs = now;
      this.exec("DELETE FROM seen_jti WHERE exp < ?", now);
    }
    return { kid, pending: found.pending, retired: found.retired };
  }

  /**
   * Whether an agent JWT verifies for this cluster as {@link agent} would verify it (signature,
   * claims, times, a `jti` not yet used), without using it up: the Worker asks before it reads
   * the body of a request whose token carries no key tag (src/agent/routes.ts), then sends the
   * same token with the decoded body to {@link agent}. Read only; not queued behind other calls.
   */
  async authenticates(token: string, name: string): Promise<boolean> {
    if (!this.viewState("object")) return false;
    try {
      await this.verify(token, name, clock.now(), false);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Serves one agent request: verifies its JWT (401), checks it is for this cluster (`target`,
   * 403 otherwise), then runs the action. A pending key may only read the registration info
   * (403 otherwise). Heartbeats need an accepted cluster (403 otherwise); they renew the lease
   * and change the ManagedCluster (and D1) only when its status changes.
   * The returned cost counts this call's SQLite rows written and D1 queries.
   */
  async agent(token: string, name: string, target: string, action: AgentAction): Promise<Result<unknown> & { cost: Cost }> {
    let cost: Cost = { rowsWritten: 0, d1Queries: 0, schedulerRuns: 0 };
    const result = await this.serial(async (): Promise<Result<unknown>> => {
      this.takeCost();
      try {
        const now = clock.now();
        // Read only: an action that changes the ManagedCluster works on its own copy.
        const current = this.viewState<KubeObject>("object") as KubeObject | null;
        if (!current) throw unauthorized(INVALID_AGENT_CREDENTIAL);
        const { kid, pending, retired } = await this.verify(token, name, now);
        if (target !== name) throw forbidden(`the credential of cluster ${name} may not act on cluster ${target}`);
        if (pending && action.action !== "info") {
          throw forbidden(`the key ${kid} of cluster ${name} waits for an admin to accept it (flotilla accept ${name} --key ${kid})`);
        }
        switch (action.action) {
          case "info":
            return { ok: true, value: this.info(current, pending) };
          case "rotate-key":
            // A retired key authenticates the agent's calls during its grace, and nothing more:
            // were it leaked (the reason for the rotation), its holder could otherwise take the
            // cluster over with a key of their own.
            if (retired) throw forbidden(`the key ${kid} of cluster ${name} was replaced by a rotation; only the cluster's current key may rotate`);
            this.requireAccepted(current);
            return { ok: true, value: this.rotate(action.publicKey, action.kid, now) };
          case "heartbeat":
            return { ok: true, value: await this.heartbeat(current, action.heartbeat, now) };
          case "works":
            this.requireAccepted(current);
            return { ok: true, value: this.worksState(current, action.ifNoneMatch) };
          case "report":
            this.requireAccepted(current);
            return { ok: true, value: {} };
          case "left":
            await this.agentLeft(current);
            return { ok: true, value: {} };
        }
      } catch (e) {
        return errorResult(e);
      } finally {
        cost = this.takeCost();
      }
    });
    if (action.action !== "works" || !result.ok) return { ...result, cost };
    let value = result.value as WorksState;
    // A works long-poll whose ETag still matches waits here, outside the queue, so heartbeats and
    // other calls go on; any works change (or the start of a leave) ends the wait at once.
    if (!value.changed && action.waitMs > 0) {
      const refused = await this.waitForWorksChange(action.waitMs);
      if (refused) return { ...refused, cost };
      const obj = this.viewState<KubeObject>("object") as KubeObject | null;
      value = obj ? this.worksState(obj, action.ifNoneMatch) : { ...value, leaving: true, changed: true };
    }
    if (value.changed) {
      const known = await this.works.current(clock.now(), () => this.readWorks(name));
      if (known) value = { ...value, works: known.works };
      if (known?.read) cost = { ...cost, d1Queries: cost.d1Queries + 1 };
    }
    return { ok: true, value, cost };
  }

  /** Every work of the cluster's namespace as D1 holds it, with the store's resourceVersion (a fill of {@link works}). */
  private async readWorks(name: string): Promise<{ items: KubeObject[]; resourceVersion: number }> {
    const { items, resourceVersion } = await listObjects(database(this.env.DB), ManifestWorkKind, name);
    return { items, resourceVersion: Number(resourceVersion) };
  }

  private requireAccepted(current: KubeObject): void {
    if (!specOf(current).hubAcceptsClient) throw forbidden(`cluster ${current.metadata.name} is not accepted by the hub`);
  }

  private worksState(obj: KubeObject, ifNoneMatch: string | undefined): WorksState {
    const etag = this.worksEtag();
    return { etag, leaving: Boolean(obj.metadata.deletionTimestamp), changed: ifNoneMatch !== etag };
  }

  private worksWaiters = new Set<() => void>();

  private wakeWorksWaiters(): void {
    const waiters = [...this.worksWaiters];
    this.worksWaiters.clear();
    for (const wake of waiters) wake();
  }

  /**
   * Waits up to `ms` milliseconds for a works change; resolves null then, or at once with a 429
   * TooManyRequests Status when {@link MAX_WORKS_WAITERS} long-polls of this cluster already wait.
   */
  private waitForWorksChange(ms: number): Promise<{ ok: false; status: Status } | null> {
    if (this.worksWaiters.size >= MAX_WORKS_WAITERS) {
      return Promise.resolve(errorResult(tooManyRequests(`too many works long-polls: ${MAX_WORKS_WAITERS} requests of this cluster already wait for a works change`, WORKS_RETRY_AFTER_SECONDS)));
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.worksWaiters.delete(done);
        resolve(null);
      };
      const timer = setTimeout(done, ms);
      this.worksWaiters.add(done);
    });
  }

  /**
   * Records that the works in this cluster's namespace changed (a work created, deleted, or its
   * spec or metadata changed): a new works ETag, and every waiting long-poll answers at once.
   * Called by the Worker after the change committed to D1 (src/work/hooks.ts), with the change
   * (`delta`, which the works a poll answers with take in) when the writer has it; without it
   * (an outbox sweep, the start of a leave), the next changed poll reads the works from D1. Does
   * nothing for a cluster that does not exist (its first poll gets a fresh ETag anyway). Not
   * queued behind other calls: one SQLite row written.
   */
  async worksChanged(delta?: WorkDelta): Promise<void> {
    if (!this.viewState("object")) return this.works.invalidate();
    if (delta) this.works.apply(delta);
    else this.works.invalidate();
    this.writeState("worksEtag", crypto.randomUUID());
    this.wakeWorksWaiters();
    // Pushed to a connected agent after this returns: a first push may read the works from D1.
    this.ctx.waitUntil(this.connection.pushWorks().catch((e: unknown) => console.error("works push failed", e)));
  }

  /**
   * The agent's confirmation that it removed what the works applied (`POST .../left`, or `left`
   * on the channel): ends the leave.
   * @throws ApiError 409 when the cluster is not leaving
   */
  private async agentLeft(current: KubeObject): Promise<void> {
    const name = current.metadata.name;
    if (!current.metadata.deletionTimestamp) throw conflict({ group: ManagedClusterKind.group, plural: ManagedClusterKind.plural, name }, `cluster ${name} is not leaving`);
    await this.finishLeave(structuredClone(current), "ManagedClusterLeft", "The agent removed what works applied and left");
  }

  /**
   * Ends a leave: records how it ended in ManagedClusterJoined (reason ManagedClusterLeft or
   * ManagedClusterLeaveTimedOut; the DELETED watch event carries it), removes the ManagedCluster
   * (D1 row, identity, this object's storage; the scheduler drops it from every decision), then
   * the objects in the cluster's namespace (ManifestWorks, AddOnPlacementScores; the removal's
   * after-commit hook, src/work/hooks.ts).
   */
  private async finishLeave(current: KubeObject, reason: string, message: string): Promise<void> {
    const ended = structuredClone(current);
    setCondition((writableStatusOf(ended).conditions ??= []), { type: Conditions.Joined, status: "False", reason, message }, rfc3339(clock.now()));
    const stored = (await this.commit(current, ended, "returns")) ?? current;
    const gone = structuredClone(stored);
    gone.metadata.finalizers = (gone.metadata.finalizers ?? []).filter((f) => f !== LEAVE_FINALIZER);
    await this.commit(stored, settleDeletion(gone), "returns");
  }

  /**
   * Key rotation signed with the current key (the caller checked that the signing key is not
   * retired; the Worker verified the proof for the new key): the new key becomes current, the key
   * it replaces works for ROTATION_OVERLAP_MS more (milliseconds), and the grace of every older
   * key ends at once, so a chain of rotations never leaves more than one retired key alive.
   * Rotating to a retired key makes it current again. A pending key, if any, still waits for the
   * admin. A channel connection of another key is closed (4001).
   */
  private rotate(publicKey: JWK, kid: string, now: number): { kid: string } {
    this.exec("DELETE FROM keys WHERE not_after IS NOT NULL AND kid != ?", kid);
    this.exec("UPDATE keys SET not_after = ? WHERE not_after IS NULL AND kid != ?", now + ROTATION_OVERLAP_MS, kid);
    this.exec("INSERT INTO keys (kid, jwk, not_after) VALUES (?, ?, NULL) ON CONFLICT (kid) DO UPDATE SET not_after = NULL", kid, JSON.stringify(publicKey));
    this.connection.closeAll(CloseCodes.KeyRotated, "the key was replaced by a rotation", kid);
    return { kid };
  }

  private async heartbeat(current: KubeObject, hb: Heartbeat, now: number): Promise<{ leaseDurationSeconds: number; worksEtag: string; leaving: boolean }> {
    const spec = specOf(current);
    if (!spec.hubAcceptsClient) throw forbidden(`cluster ${current.metadata.name} is not accepted by the hub`);
    const lease: LeaseRecord = { renewMs: now, toldSeconds: spec.leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS };
    this.writeState("lease", lease);
    const next = structuredClone(current);
    const status = writableStatusOf(next);
    const conditions = (status.conditions ??= []);
    const nowText = rfc3339(now);
    if (!current.metadata.deletionTimestamp) {
      setCondition(conditions, { type: Conditions.Joined, status: "True", reason: "ManagedClusterJoined", message: "Managed cluster joined" }, nowText);
    }
    if (hb.healthy) {
      setCondition(conditions, { type: Conditions.Available, status: "True", reason: "ManagedClusterAvailable", message: "Managed cluster is available" }, nowText);
    } else {
      setCondition(conditions, { type: Conditions.Available, status: "False", reason: "ManagedClusterKubeAPIServerUnavailable", message: hb.healthMessage || "The kube-apiserver is not ok" }, nowText);
    }
    if (hb.version) status.version = hb.version;
    if (hb.capacity) status.capacity = hb.capacity;
    if (hb.allocatable) status.allocatable = hb.allocatable;
    if (hb.clusterClaims) status.clusterClaims = hb.clusterClaims;
    const stored = (await this.commit(current, next, "returns")) ?? current;
    await this.armAlarm(now + this.graceMs(stored, lease));
    return { leaseDurationSeconds: specOf(stored).leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS, worksEtag: this.worksEtag(), leaving: Boolean(stored.metadata.deletionTimestamp) };
  }

  /**
   * OCM's hub lease controller for this cluster: when no renewal arrived for
   * grace = LEASE_GRACE_MULTIPLIER x leaseDurationSeconds, Available becomes Unknown
   * (ManagedClusterLeaseUpdateStopped) and the taint controller adds the `unreachable` taint.
   * Otherwise the alarm is set again at the lease's expiry. Idempotent.
   */
  override async alarm(): Promise<void> {
    this.alarmArmedAt = null;
    await this.serial(async () => {
      const current = this.object();
      if (!current) return;
      const now = clock.now();
      this.exec("DELETE FROM seen_jti WHERE exp < ?", now);
      const deadline = this.leaveDeadline(current);
      if (deadline !== null && now >= deadline) {
        await this.finishLeave(current, "ManagedClusterLeaveTimedOut", "The agent did not confirm its leave in time; the hub removed the cluster without it");
        return;
      }
      if (deadline !== null) await this.armAlarm(deadline);
      if (!findCondition(statusOf(current).conditions, Conditions.HubAccepted)) return;
      const lease = this.lease();
      // Renewed by an HTTP heartbeat or, without waking this object, by a ping on the channel.
      const renewed = Math.max(lease?.renewMs ?? now, this.connection.lastPingMs() ?? -Infinity);
      const expiry = renewed + this.graceMs(current, lease);
      if (now < expiry) {
        await this.armAlarm(expiry);
        return;
      }
      const next = structuredClone(current);
      setCondition(
        (writableStatusOf(next).conditions ??= []),
        { type: Conditions.Available, status: "Unknown", reason: "ManagedClusterLeaseUpdateStopped", message: "Registration agent stopped updating its lease." },
        rfc3339(now),
      );
      await this.commit(current, next, "returns");
    });
  }

  // ---- the agent's channel (durable-objects/cluster/connection.ts) -------------------------

  /** The WebSocket upgrade of `GET /agent/v1/clusters/{name}/connect`, handed over by the Worker (src/agent/channel.ts). */
  override async fetch(request: Request): Promise<Response> {
    return this.connection.accept(request);
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    await this.connection.message(ws, message);
  }

  override async webSocketClose(): Promise<void> {
    // Nothing to do: the close handshake completes by itself, and the lease runs out without pings.
  }

  override async webSocketError(): Promise<void> {
    // As a close.
  }

  /** What the channel may do with this object. */
  private connectionHost(): ConnectionHost {
    const current = () => this.viewState<KubeObject>("object") as KubeObject | null;
    return {
      verify: (token, name, now) => this.verify(token, name, now),
      current,
      serial: (fn) => this.serial(fn),
      renew: async (obj, now) => {
        this.requireAccepted(obj);
        const lease: LeaseRecord = { renewMs: now, toldSeconds: specOf(obj).leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS };
        this.writeState("lease", lease);
        await this.armAlarm(now + this.graceMs(obj, lease));
      },
      heartbeat: (obj, hb, now) => this.heartbeat(obj, hb, now),
      worksState: () => ({ etag: this.worksEtag(), leaving: Boolean(current()?.metadata.deletionTimestamp) }),
      works: async () => {
        const name = current()?.metadata.name;
        if (!name) return [];
        return (await this.works.current(clock.now(), () => this.readWorks(name)))?.works ?? null;
      },
      left: (obj) => this.agentLeft(obj),
      recordTold: (seconds) => {
        const lease = this.lease();
        const renewMs = Math.max(lease?.renewMs ?? clock.now(), this.connection.lastPingMs() ?? -Infinity);
        this.writeState("lease", { renewMs, toldSeconds: seconds } satisfies LeaseRecord);
      },
      leaseDurationSeconds: (obj) => specOf(obj).leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS,
      accepted: (obj) => specOf(obj).hubAcceptsClient,
    };
  }

}
