/**
 * ClusterObject: one Durable Object per member cluster (named by the cluster name). It serves the
 * cluster's ManagedCluster object and holds its lease, its registered public keys and its replay
 * cache; a change of the object commits to the D1 index (the commit point) and then to this
 * object's copy, only when the object changes. The hub-side lease controller of OCM runs on its
 * alarm (no scanning of all clusters anywhere).
 *
 * The class is the host (durable-objects/cluster/host.ts) of small modules, each one concern:
 * - cluster/state.ts: the ManagedCluster's copy, the `state` table's cache, commit and repair;
 * - cluster/keys.ts: keys, rotation, the pending key, JWT verification and the replay cache;
 * - cluster/lease.ts: the lease rule (pure) and the lease's storage and timer;
 * - cluster/leave.ts: the leave finalizer, deadline and end;
 * - cluster/works.ts: the works ETag, the works kept in memory (and what they are, across
 *   hibernation, with the agent's socket), the long-poll waiters;
 * - cluster/connection.ts: the agent's channel, a hibernatable WebSocket (docs/agent-protocol.md
 *   "Channel"): pings renew the lease without waking the object, works are pushed as they change.
 * One alarm owner (durable-objects/timers.ts `Timers`): the `timers` table holds the `leave`
 * deadline; the lease check's due time is derived from the stored renewal (renewal + grace), so
 * a heartbeat writes no timer and, as the alarm only moves earlier outside `alarm()`, sets no
 * alarm either. The alarm runs what is due and arms the next one. The replay cache is purged at
 * each alarm and by verifications at most once a minute, so it needs no timer of its own.
 *
 * Every mutation runs through one queue, so writes to a cluster are serialised even across the
 * awaits on D1.
 */
import { DurableObject } from "cloudflare:workers";
import type { JWK } from "jose";
import { conflict, forbidden, notFound, unauthorized } from "../src/k8s/errors.ts";
import { findCondition, rfc3339, setCondition, type KubeObject } from "../src/k8s/meta.ts";
import {
  Conditions,
  DEFAULT_LEASE_DURATION_SECONDS,
  ManagedClusterKind,
  PENDING_KEY_ANNOTATION,
  specOf,
  statusOf,
  writableStatusOf,
} from "../src/kinds/managedcluster.ts";
import { clusterTransition, transitionCovered, type ClusterTransition } from "../src/auth/ocm-admission.ts";
import { admitAcceptance } from "../src/namespaces/lifecycle.ts";
import { computeWrite, settleDeletion, type WriteRequest } from "../src/k8s/write.ts";
import type { WriterMode } from "../src/store/store.ts";
import { deltaOf, type DeliverableDelta, type DeliverableDeltaMessage } from "../src/work/namespace-deliverables.ts";
import { workTtlTimer } from "../src/work/deletion.ts";
import { timersOf } from "../src/controllers.ts";
import type { Env } from "../src/env.ts";
import type { Heartbeat } from "../src/agent-api/protocol.ts";
import { INVALID_AGENT_CREDENTIAL } from "../src/auth/credentials.ts";
import { clock } from "../src/clock.ts";
import { Timers } from "./timers.ts";
import type { ClusterHost } from "./cluster/host.ts";
import { ClusterState, migrateState, readAtWake, STATE_SCHEMA, stateCurrent } from "./cluster/state.ts";
import { Keys, KEYS_SCHEMA } from "./cluster/keys.ts";
import { Lease } from "./cluster/lease.ts";
import { heldForLeave, Leave, LEAVE_TIMER, markLeaving } from "./cluster/leave.ts";
import { WorksDelivery } from "./cluster/works.ts";
import { AgentConnection, type ConnectionHost } from "./cluster/connection.ts";
import { Reports, type ReportOutcome } from "./cluster/reports.ts";
import { reportWorkStatus } from "../src/agent-api/work-report.ts";
import { DELIVERED_WORKS_MAX_CLUSTER_BYTES, DeliveredWorks, workCopies } from "../src/agent-api/delivered.ts";
import { reportPolicyCompliance } from "../src/agent-api/policy-report.ts";
import type { PolicyComplianceReportRequest, WorkStatusReport } from "../src/agent-api/protocol.ts";
import { CloseCodes } from "../src/agent-api/channel-protocol.ts";
import { COUNTED } from "../src/metrics/families.ts";
import { count, flushSoon } from "../src/metrics/recorder.ts";
import {
  errorResult,
  noCost,
  type AgentAction,
  type Cost,
  type RegisterInput,
  type RegistrationInfo,
  type RegistrationOutcome,
  type Result,
  type WorksState,
  type WriteOutcome,
} from "./cluster/types.ts";
import { setEdgeLocation } from "../src/edge.ts";
import type { ClusterLeaseRecord } from "../src/kinds/lease.ts";
import { PROXY_REQUEST_HEADER, type ProxyRequest } from "./cluster/proxy.ts";

export type { AgentAction, Cost, RegisterInput, RegistrationInfo, RegistrationOutcome, Result, WorksState, WriteOutcome } from "./cluster/types.ts";
export type { LeaseRecord } from "./cluster/lease.ts";
export { DEFAULT_LEAVE_TIMEOUT_SECONDS, LEAVE_FINALIZER } from "./cluster/leave.ts";
export { ROTATION_OVERLAP_MS } from "./cluster/keys.ts";
export { MAX_WORKS_WAITERS, WORKS_RETRY_AFTER_SECONDS } from "./cluster/works.ts";

/**
 * The tables {@link ClusterObject}'s schema makes (`state`, the keys' three, `timers`): a wake
 * reads which exist in one statement and creates or migrates them only when one is missing or
 * older than the code (a cold object woken by a works delivery ran some eight statements to
 * find its schema as it was).
 */
export const CLUSTER_TABLES = ["state", "keys", "pending_key", "seen_jti", "timers"] as const;

/** The per-cluster Durable Object. */
export class ClusterObject extends DurableObject<Env> implements ClusterHost {
  private queue: Promise<unknown> = Promise.resolve();
  /** This call's storage cost (see `Cost`), counted by the modules through {@link exec} and the commit. */
  cost: Cost = noCost();
  readonly timers: Timers;
  private readonly state: ClusterState;
  private readonly keys: Keys;
  private readonly lease: Lease;
  private readonly leave: Leave;
  private readonly delivery: WorksDelivery;
  private readonly connection: AgentConnection;
  /** The order of the agent's reports (cluster/reports.ts). */
  private readonly reports: Reports;
  /**
   * The works last pushed on the agent's channel, which its reports write on (no read of the
   * work from D1), then the isolate's copies (src/agent-api/delivered.ts `workCopies`).
   */
  private readonly pushedWorks = new DeliveredWorks(DELIVERED_WORKS_MAX_CLUSTER_BYTES, DELIVERED_WORKS_MAX_CLUSTER_BYTES);
  private readonly workCopies = workCopies(this.pushedWorks);

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.timers = new Timers(
      ctx.storage,
      () => clock.now(),
      (rows) => (this.cost.rowsWritten += rows),
    );
    const cost = () => this.cost;
    this.state = new ClusterState(env, {
      exec: (query, ...bindings) => this.exec(query, ...bindings),
      get cost() {
        return cost();
      },
      stored: (obj, previous, now) => this.stored(obj, previous, now),
      forget: () => this.forget(),
    });
    this.keys = new Keys(this);
    this.lease = new Lease(env, this.state, () => this.connection.lastPingMs());
    this.leave = new Leave(env, this);
    this.reports = new Reports(ctx.storage.sql);
    this.connection = new AgentConnection(ctx, env, this.connectionHost());
    this.delivery = new WorksDelivery(env, this.state, this.connection.picture);
    // An object created before the timers table (an alarm set, no timers rows) gets its timers
    // from what it stores, so its lease and leave checks still fire.
    // One statement at a wake reads the schema, the ManagedCluster and the marker of a commit in
    // flight (cluster/state.ts `readAtWake`): the statements that make or migrate the schema run
    // only when a table is missing or old.
    const { tables, rows } = readAtWake(ctx.storage.sql, CLUSTER_TABLES);
    const interrupted = rows ? this.state.woke(rows) : null;
    const before = !tables.has("timers");
    if (CLUSTER_TABLES.some((t) => !tables.has(t)) || !stateCurrent(tables.get("state")!)) this.createSchema();
    if (before) this.seedTimers();
    if ((interrupted ?? this.state.interrupted()) || before) {
      void ctx.blockConcurrencyWhile(async () => {
        await this.state.repairFromIndex();
        await this.nextAlarm("earlier");
      });
    }
  }

  /** Creates this object's tables, {@link CLUSTER_TABLES} (again after a deleteAll), and brings an older `state` table up to date. */
  private createSchema(): void {
    this.ctx.storage.sql.exec(STATE_SCHEMA + KEYS_SCHEMA);
    migrateState(this.ctx.storage.sql);
    this.timers.create();
  }

  /** Sets the leave timer from the stored object (an object older than its timers table). */
  private seedTimers(): void {
    const obj = this.state.object();
    if (obj) this.leave.schedule(obj);
  }

  /**
   * Arms the alarm at the earliest of the timers and the lease check (see the module comment);
   * `mode` as `Timers.nextAlarm`.
   */
  private async nextAlarm(mode: "exact" | "earlier"): Promise<void> {
    const obj = this.state.viewObject();
    await this.timers.nextAlarm(obj ? this.lease.dueMs(obj, clock.now()) : null, mode);
  }

  // ---- the host ----------------------------------------------------------------------------

  /** Runs one statement on this object's SQLite; its rows written count into the call's cost. */
  exec(query: string, ...bindings: unknown[]): Record<string, SqlStorageValue>[] {
    const cursor = this.ctx.storage.sql.exec(query, ...bindings);
    const rows = cursor.toArray();
    this.cost.rowsWritten += cursor.rowsWritten;
    return rows;
  }

  /** Commits the cluster's ManagedCluster (durable-objects/cluster/state.ts `ClusterState.commit`). */
  commit(current: KubeObject | null, next: KubeObject | null, mode: WriterMode = "waits"): Promise<KubeObject | null> {
    return this.state.commit(current, next, mode);
  }

  /**
   * After this object stored `obj` (a commit or a repair; `previous` its copy before): the lease
   * of a newly accepted cluster starts; a leave that started changes what a works poll answers
   * (`leaving`, so a new ETag) and sets the leave timer; the alarm comes no later than what is due.
   */
  private async stored(obj: KubeObject, previous: KubeObject | null, now: number): Promise<void> {
    this.lease.start(obj, now);
    this.connection.objectChanged(obj);
    if (previous && !previous.metadata.deletionTimestamp && obj.metadata.deletionTimestamp) {
      this.deliverablesMoved(true);
      this.leave.schedule(obj);
    }
    await this.nextAlarm("earlier");
  }

  /** Drops everything this object holds for a removed cluster (its D1 row is gone already). */
  private async forget(): Promise<void> {
    this.connection.closeAll(CloseCodes.Left, "the cluster left or was removed");
    this.keys.clearCache();
    await this.timers.reset();
    await this.ctx.storage.deleteAll();
    this.reports.reset();
    this.state.clear();
    this.delivery.invalidate();
    this.createSchema();
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private takeCost(): Cost {
    const c = this.cost;
    this.cost = noCost();
    return c;
  }

  // ---- admin API ---------------------------------------------------------------------------

  /** The ManagedCluster, or a 404 Status. */
  async get(name: string): Promise<Result<KubeObject>> {
    const obj = this.state.object();
    if (!obj) return { ok: false, status: notFound({ group: ManagedClusterKind.group, plural: ManagedClusterKind.plural, name }).toStatus() };
    return { ok: true, value: obj };
  }

  /**
   * Runs an admin write (create, update, patch, delete; main resource or status) through the
   * generic write machinery, then OCM's hub controllers, then commits. The delete of an accepted
   * cluster starts its leave (cluster/leave.ts). `admitted`: the transition the API checked for
   * the requesting user (src/auth/ocm-admission.ts); a write that makes another (the object
   * changed since the API read it) is refused with 409 Conflict. A write that accepts the cluster is refused
   * (403) while its namespace is terminating (src/namespaces/lifecycle.ts `admitAcceptance`).
   */
  async write(name: string, req: WriteRequest, admitted?: ClusterTransition): Promise<Result<WriteOutcome>> {
    return this.serial(async () => {
      try {
        const now = clock.now();
        const current = this.state.object();
        const base = req.verb === "delete" ? heldForLeave(current) : current;
        const { next, created } = computeWrite(ManagedClusterKind, { namespace: "", name }, base, req, { now, newUid: () => crypto.randomUUID() });
        if (next === base && base === current) return { ok: true, value: { object: current, created } };
        if (admitted && !transitionCovered(clusterTransition(current, next), admitted)) {
          throw conflict(
            { group: ManagedClusterKind.group, plural: ManagedClusterKind.plural, name },
            "the object has been modified; please apply your changes to the latest version and try again",
          );
        }
        if (next && specOf(next).hubAcceptsClient && !(current && specOf(current).hubAcceptsClient)) await admitAcceptance(this.env, name);
        const accepted = next ? this.keys.acceptance(current, next) : null;
        if (next) markLeaving(current, next, now);
        const stored = await this.commit(current, settleDeletion(next));
        if (stored && accepted) {
          this.keys.promote(accepted);
          this.connection.closeAll(CloseCodes.KeyReplaced, "an admin accepted another key for the cluster", accepted.kid);
        }
        return { ok: true, value: { object: stored, created } };
      } catch (e) {
        return errorResult(e);
      }
    });
  }

  /**
   * The cluster's lease as the API serves it (src/api/leases.ts: the `coordination.k8s.io` Lease
   * `managed-cluster-lease` in the cluster's namespace), or null when there is no cluster or it
   * was never accepted (cluster/lease.ts `Lease.served`). Read only and not queued behind other
   * calls: it reads the lease row and the runtime's timestamp of the last auto-answered ping, and
   * writes nothing.
   */
  async servedLease(): Promise<ClusterLeaseRecord | null> {
    const obj = this.state.viewObject();
    return obj ? this.lease.served(obj, clock.now()) : null;
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
        const current = this.state.object();
        let next: KubeObject;
        let outcome: RegistrationOutcome;
        if (!current) {
          const body = { metadata: { name: input.clusterName }, spec: { hubAcceptsClient: input.autoApprove } };
          next = computeWrite(
            ManagedClusterKind,
            { namespace: "", name: input.clusterName },
            null,
            { verb: "create", body },
            { now, newUid: () => crypto.randomUUID() },
          ).next!;
          if (input.autoApprove) next.metadata.annotations = { "open-cluster-management.io/automatically-accepted-on": rfc3339(now) };
          outcome = "created";
        } else if (!this.keys.any() || this.keys.isCurrent(input.kid)) {
          next = structuredClone(current);
          outcome = "confirmed";
        } else {
          this.keys.holdPending(input.kid, input.publicKey);
          next = structuredClone(current);
          next.metadata.annotations = { ...(next.metadata.annotations ?? {}), [PENDING_KEY_ANNOTATION]: input.kid };
          const stored = (await this.commit(current, next, "returns")) ?? current;
          return { ok: true, value: { outcome: "pending", info: this.info(stored, true) } };
        }
        if (input.claims.length > 0) writableStatusOf(next).clusterClaims = input.claims;
        if (outcome === "created" || !this.keys.any()) this.keys.add(input.kid, input.publicKey);
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
   * Whether an agent JWT verifies for this cluster as {@link agent} would verify it (signature,
   * claims, times, a `jti` not yet used), without using it up: the Worker asks before it reads
   * the body of a request whose token carries no key tag (src/agent-api/routes.ts), then sends the
   * same token with the decoded body to {@link agent}. Read only; not queued behind other calls.
   */
  async authenticates(token: string, name: string): Promise<boolean> {
    if (!this.state.viewObject()) return false;
    try {
      await this.keys.verify(token, name, clock.now(), false);
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
    let cost = noCost();
    const result = await this.serial(async (): Promise<Result<unknown>> => {
      this.takeCost();
      try {
        const now = clock.now();
        // Read only: an action that changes the ManagedCluster works on its own copy.
        const current = this.state.viewObject();
        if (!current) throw unauthorized(INVALID_AGENT_CREDENTIAL);
        const { kid, pending, retired } = await this.keys.verify(token, name, now);
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
            return { ok: true, value: await this.heartbeat(current, action.heartbeat, now, false, action.colo) };
          case "works":
            this.requireAccepted(current);
            return { ok: true, value: this.delivery.stateOf(current, action.ifNoneMatch) };
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
    // A works long-poll whose ETag still matches waits outside the queue (cluster/works.ts).
    const answered = await this.delivery.answer(name, result.value as WorksState, action.ifNoneMatch, action.waitMs);
    if (!answered.ok) return { ...answered, cost };
    return { ok: true, value: answered.value, cost: answered.read ? { ...cost, d1Queries: cost.d1Queries + 1 } : cost };
  }

  /**
   * An agent's report that came over HTTP (`PUT .../works/{work}/status`, `PUT
   * .../policies/{policy}/status`, src/agent-api/routes.ts), its credential already checked by
   * {@link agent}: run in the order of the object's reports as the channel's are
   * (cluster/reports.ts). `bytes` is a work report's size.
   */
  async report(
    cluster: string,
    report: { kind: "work"; name: string; body: WorkStatusReport; bytes: number } | { kind: "policy"; name: string; body: PolicyComplianceReportRequest },
  ): Promise<Result<ReportOutcome>> {
    try {
      const value =
        report.kind === "work"
          ? await this.workReport(cluster, report.name, report.body, report.bytes)
          : await this.complianceReport(cluster, report.name, report.body);
      return { ok: true, value };
    } catch (e) {
      return errorResult(e);
    }
  }

  /** A work status report (src/agent-api/work-report.ts), in the order of the work's reports. */
  private workReport(cluster: string, work: string, report: WorkStatusReport, bytes: number): Promise<ReportOutcome> {
    const waitUntil = (p: Promise<unknown>) => this.ctx.waitUntil(p);
    return this.reports.run(
      `work/${work}`,
      report.uid,
      report.sequence,
      () => reportWorkStatus(this.env, cluster, work, report, bytes, waitUntil, this.workCopies),
      report.released === true,
    );
  }

  /** A policy compliance report (src/agent-api/policy-report.ts), in the order of the policy's reports. */
  private complianceReport(cluster: string, policy: string, report: PolicyComplianceReportRequest): Promise<ReportOutcome> {
    const waitUntil = (p: Promise<unknown>) => this.ctx.waitUntil(p);
    return this.reports.run(`policy/${policy}`, report.uid, report.sequence, () => reportPolicyCompliance(this.env, cluster, policy, report, waitUntil));
  }

  private requireAccepted(current: KubeObject): void {
    if (!specOf(current).hubAcceptsClient) throw forbidden(`cluster ${current.metadata.name} is not accepted by the hub`);
  }

  /**
   * Records that the deliverables in this cluster's namespace changed (a ManifestWork or a
   * replicated Policy created, deleted, or its spec or metadata changed,
   * src/work/namespace-deliverables.ts): a new works ETag, and every waiting long-poll answers at once.
   * Called by the Worker after the change committed to D1 (src/work/controller.ts), with the change
   * (`delta`, which the works a poll answers with take in) when the writer has it; without it
   * (an outbox sweep, the start of a leave), the next changed poll reads the works from D1. Does
   * nothing for a cluster that does not exist (its first poll gets a fresh ETag anyway). Not
   * queued behind other calls: nothing written to the object's storage, unless a works poll
   * handed out the ETag (cluster/works.ts: one row then). An object woken by the call (it
   * hibernated) takes the change into what its agent's socket kept of the works
   * (cluster/connection.ts `AttachmentPicture`), when that proves the change is the namespace's
   * only news, rather than reading them from D1 at the push.
   */
  async deliverablesChanged(delta?: DeliverableDeltaMessage): Promise<void> {
    // Parsed only when the works held (or kept with the socket) take it in; else the push reads the namespace whole.
    this.deliverablesMoved(this.state.viewObject() !== null, delta && (this.delivery.takesChange(delta) ? deltaOf(delta) : null));
  }

  /**
   * Deletes work `name` (uid `uid`) of this cluster's namespace at `dueMs` (epoch milliseconds on
   * the injected clock): its `deleteOption.ttlSecondsAfterFinished` ran out after it completed
   * (src/work/deletion.ts `workTtlHook`). A timer of this object's alarm; set again, it moves.
   * Nothing for a cluster that does not exist (its works are being removed with it).
   */
  async workTtl(name: string, uid: string, dueMs: number): Promise<void> {
    await this.serial(async () => {
      if (!this.state.object()) return;
      this.timers.set(workTtlTimer(name, uid), dueMs);
      await this.nextAlarm("earlier");
    });
  }

  /**
   * A works change (see {@link deliverablesChanged}; `exists`: the cluster exists): a new ETag, waiting
   * long-polls answer, and the connected agent gets the works pushed, after this returns (a first
   * push may read the works from D1).
   */
  private deliverablesMoved(exists: boolean, delta?: DeliverableDelta | null): void {
    this.delivery.changed(exists, delta);
    if (exists) this.ctx.waitUntil(this.connection.pushWorks().catch((e: unknown) => console.error("works push failed", e)));
  }

  /** A key rotation (cluster/keys.ts `Keys.rotate`); the channel of any other key is closed (4001). */
  private rotate(publicKey: JWK, kid: string, now: number): { kid: string } {
    const rotated = this.keys.rotate(publicKey, kid, now);
    this.connection.closeAll(CloseCodes.KeyRotated, "the key was replaced by a rotation", kid);
    return rotated;
  }

  /**
   * The agent's confirmation that it removed what the works applied (`POST .../left`, or `left`
   * on the channel): ends the leave.
   * @throws ApiError 409 when the cluster is not leaving
   */
  private async agentLeft(current: KubeObject): Promise<void> {
    const name = current.metadata.name;
    if (!current.metadata.deletionTimestamp)
      throw conflict({ group: ManagedClusterKind.group, plural: ManagedClusterKind.plural, name }, `cluster ${name} is not leaving`);
    await this.leave.finish(structuredClone(current), "ManagedClusterLeft", "The agent removed what works applied and left");
  }

  /**
   * A heartbeat: renews the lease, records the agent's status (Joined, Available, version,
   * capacity, allocatable, claims) and commits it only when it changed. `channel`: a status
   * message on the agent's channel, which renews the lease only when the pings do not already
   * (cluster/lease.ts `Lease.pingsRenew`): no lease row written then.
   */
  private async heartbeat(
    current: KubeObject,
    hb: Heartbeat,
    now: number,
    channel = false,
    colo?: string,
  ): Promise<{ leaseDurationSeconds: number; worksEtag: string; leaving: boolean }> {
    this.requireAccepted(current);
    if (!channel || !this.lease.pingsRenew(current, now)) this.lease.renew(current, now);
    const next = structuredClone(current);
    const status = writableStatusOf(next);
    const conditions = (status.conditions ??= []);
    const nowText = rfc3339(now);
    if (!current.metadata.deletionTimestamp) {
      setCondition(conditions, { type: Conditions.Joined, status: "True", reason: "ManagedClusterJoined", message: "Managed cluster joined" }, nowText);
    }
    if (hb.healthy) {
      setCondition(
        conditions,
        { type: Conditions.Available, status: "True", reason: "ManagedClusterAvailable", message: "Managed cluster is available" },
        nowText,
      );
    } else {
      setCondition(
        conditions,
        {
          type: Conditions.Available,
          status: "False",
          reason: "ManagedClusterKubeAPIServerUnavailable",
          message: hb.healthMessage || "The kube-apiserver is not ok",
        },
        nowText,
      );
    }
    if (hb.version) status.version = hb.version;
    if (hb.capacity) status.capacity = hb.capacity;
    if (hb.allocatable) status.allocatable = hb.allocatable;
    if (hb.clusterClaims) status.clusterClaims = hb.clusterClaims;
    setEdgeLocation(next, colo);
    const stored = (await this.commit(current, next, "returns")) ?? current;
    await this.nextAlarm("earlier");
    return {
      leaseDurationSeconds: specOf(stored).leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS,
      worksEtag: this.delivery.etag(),
      leaving: Boolean(stored.metadata.deletionTimestamp),
    };
  }

  /**
   * The one alarm (durable-objects/timers.ts): runs the due timers, the leave deadline first
   * (cluster/leave.ts), then OCM's hub lease controller (cluster/lease.ts): when no renewal
   * arrived for grace = LEASE_GRACE_MULTIPLIER x leaseDurationSeconds, Available becomes Unknown
   * (ManagedClusterLeaseUpdateStopped) and the taint controller adds the `unreachable` taint.
   * Then it arms the alarm at what is due next. Idempotent: an alarm that fires early changes
   * nothing.
   */
  override async alarm(): Promise<void> {
    this.timers.fired();
    await this.serial(async () => {
      const current = this.state.object();
      if (!current) return;
      const now = clock.now();
      this.keys.purgeReplays(now);
      const due = this.timers.due(now);
      if (due.includes(LEAVE_TIMER) && (await this.leave.fire(current, now))) return;
      // The other timers by the manifest's lookup (a completed work's TTL: src/controllers.ts).
      await this.timers.runDue(
        now,
        timersOf("ClusterObject"),
        { env: this.env, object: current.metadata.name, setTimer: async (purpose, at) => this.timers.setEarlier(purpose, at) },
        [LEAVE_TIMER],
      );
      const stopped = this.lease.check(current, now);
      if (stopped) {
        const stored = await this.commit(current, stopped, "returns");
        if (stored) {
          this.connection.leaseExpired(stored);
          count(COUNTED.leasesExpired);
          flushSoon(this.env, (p) => this.ctx.waitUntil(p), 0);
        }
      }
      await this.nextAlarm("exact");
    });
  }

  // ---- the agent's channel (durable-objects/cluster/connection.ts) -------------------------

  /** The WebSocket upgrade of `GET /agent/v1/clusters/{name}/connect`, handed over by the Worker (src/agent-api/channel.ts). */
  override async fetch(request: Request): Promise<Response> {
    const proxied = request.headers.get(PROXY_REQUEST_HEADER);
    if (proxied !== null) {
      // A plain request's is its JSON body; an upgrade's (no body) is the header's value.
      const req = (proxied === "1" ? await request.json() : JSON.parse(decodeURIComponent(proxied))) as ProxyRequest;
      return this.connection.proxyRequest(req);
    }
    return this.connection.accept(request);
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    await this.connection.message(ws, message);
  }

  /**
   * The agent closed its connection: the close is answered with the same code (1000 for one the
   * client sent without a code), so the agent sees a clean close at once rather than 1006 once
   * its wait runs out (RFC 6455 5.5.1: the endpoint that receives a Close frame sends one back).
   * The lease then runs out without pings, counted from the connection's last ping.
   */
  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    await this.connectionClosed(ws);
    // 1005, 1006 and 1015 are reported, never sent: answered with 1000.
    for (const [c, r] of [[code, reason] as const, [1000, ""] as const]) {
      try {
        if (c === 1005 || c === 1006 || c === 1015) continue;
        ws.close(c, r);
        return;
      } catch {
        // A code the runtime does not send (then 1000), or already closed.
      }
    }
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    // As a close.
    await this.connectionClosed(ws);
  }

  /**
   * An agent connection `ws` closed (or failed): its proxied streams end, and its last answered
   * ping, which the runtime forgets with the socket, is kept as the lease's renewal
   * (cluster/lease.ts `Lease.connectionClosed`); the lease check is then due no later than that
   * renewal plus the grace.
   */
  private async connectionClosed(ws: WebSocket): Promise<void> {
    this.connection.closed(ws);
    if (this.lease.connectionClosed(this.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? null)) await this.nextAlarm("earlier");
  }

  /** What the channel may do with this object. */
  private connectionHost(): ConnectionHost {
    const current = () => this.state.viewObject();
    return {
      verify: (token, name, now) => this.keys.verify(token, name, now),
      current,
      serial: (fn) => this.serial(fn),
      renew: async (obj, now, colo) => {
        this.requireAccepted(obj);
        this.lease.renew(obj, now);
        await this.nextAlarm("earlier");
        const next = structuredClone(obj);
        if (setEdgeLocation(next, colo)) await this.commit(obj, next, "returns");
      },
      heartbeat: (obj, hb, now) => this.heartbeat(obj, hb, now, true),
      worksState: () => ({ etag: this.delivery.etag(), leaving: Boolean(current()?.metadata.deletionTimestamp) }),
      works: async () => {
        const name = current()?.metadata.name;
        if (!name) return [];
        return (await this.delivery.current(name))?.works ?? null;
      },
      left: (obj) => this.agentLeft(obj),
      workReport: (cluster, work, report, bytes) => this.workReport(cluster, work, report, bytes),
      complianceReport: (cluster, policy, report) => this.complianceReport(cluster, policy, report),
      inOrder: (key, fn) => this.reports.run(key, "", undefined, async () => (await fn(), null)).then(() => undefined),
      pushed: (cluster, works, bytes) => this.pushedWorks.delivered(cluster, works, bytes),
      recordTold: (seconds) => this.lease.told(seconds, clock.now()),
      leaseDurationSeconds: (obj) => specOf(obj).leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS,
      accepted: (obj) => specOf(obj).hubAcceptsClient,
    };
  }
}
