/**
 * The cluster's lease (OCM's `managed-cluster-lease` in the cluster's namespace) and the hub-side
 * lease controller that watches it: the rule is the pure {@link leaseRule} (OCM's
 * `registration/pkg/hub/lease/controller.go`), the rest keeps the last renewal in the object's
 * `state` table, from which the check's due time follows.
 */
import type { Env } from "../../src/env.ts";
import { findCondition, rfc3339, setCondition, type KubeObject } from "../../src/k8s/meta.ts";
import { Conditions, DEFAULT_LEASE_DURATION_SECONDS, specOf, statusOf, writableStatusOf } from "../../src/kinds/managedcluster.ts";
import type { ClusterLeaseRecord } from "../../src/kinds/lease.ts";
import type { ClusterState } from "./state.ts";

/** Default of LEASE_GRACE_MULTIPLIER (OCM's `LeaseDurationTimes`: 5). */
export const DEFAULT_LEASE_GRACE_MULTIPLIER = 5;

/**
 * The cluster's lease (OCM's `managed-cluster-lease`): the last renewal, epoch milliseconds, and
 * the `leaseDurationSeconds` the agent was told then (seconds). When the agent was told a shorter
 * interval than the one it renewed at (`spec.leaseDurationSeconds` lowered while its channel is
 * open), `priorSeconds` is that longer interval and `toldAtMs` when it was told (epoch
 * milliseconds): until a renewal after `toldAtMs` the lease counts the prior interval
 * ({@link priorGraceSeconds}).
 */
export interface LeaseRecord {
  renewMs: number;
  toldSeconds: number;
  priorSeconds?: number;
  toldAtMs?: number;
}

/**
 * The interval (seconds) a lease still counts after the agent was told a shorter one: the prior
 * interval of `record` until the agent renewed after it was told (a renewal, stored or the
 * channel's last ping `lastPingMs` (epoch milliseconds), later than `toldAtMs`), else 0. So a
 * lowered `leaseDurationSeconds` gives the agent one old lease of grace: it still renews at the
 * old interval until it learns the new one, and its first renewal at the new interval is due
 * within the old grace of its last renewal, not at once. Pure.
 */
export function priorGraceSeconds(record: LeaseRecord, lastPingMs: number | null): number {
  if (!record.priorSeconds || record.toldAtMs === undefined) return 0;
  return Math.max(record.renewMs, lastPingMs ?? -Infinity) > record.toldAtMs ? 0 : record.priorSeconds;
}

/** What the lease rule says at one moment: whether the lease expired, and when it does (epoch milliseconds). */
export interface LeaseVerdict {
  expired: boolean;
  expiresAtMs: number;
}

/**
 * OCM's hub lease rule: a lease renewed last at `lastRenewalMs` (epoch milliseconds) with a lease
 * of `leaseSeconds` (seconds) expires `graceMultiplier` x `leaseSeconds` after that renewal; at
 * `nowMs` (epoch milliseconds) from its expiry on, the cluster's Available condition becomes
 * Unknown (`ManagedClusterLeaseUpdateStopped`). Pure.
 */
export function leaseRule(lastRenewalMs: number, leaseSeconds: number, graceMultiplier: number, nowMs: number): LeaseVerdict {
  const expiresAtMs = lastRenewalMs + graceMultiplier * leaseSeconds * 1000;
  return { expired: nowMs >= expiresAtMs, expiresAtMs };
}

/**
 * The lease interval that counts, in seconds: the ManagedCluster's `spec.leaseDurationSeconds`
 * (0 or absent: OCM's default, 60), or the interval the agent was told at its last renewal
 * (`toldSeconds`) when that is longer: an agent learns a shortened lease only at its next renewal.
 */
export function countedLeaseSeconds(specSeconds: number | undefined, toldSeconds = 0): number {
  return Math.max(specSeconds || DEFAULT_LEASE_DURATION_SECONDS, toldSeconds);
}

/** LEASE_GRACE_MULTIPLIER of the Worker's environment, or its default (5) when unset or not a positive number. */
export function graceMultiplier(env: Pick<Env, "LEASE_GRACE_MULTIPLIER">): number {
  return Number(env.LEASE_GRACE_MULTIPLIER ?? DEFAULT_LEASE_GRACE_MULTIPLIER) || DEFAULT_LEASE_GRACE_MULTIPLIER;
}

/** The ManagedCluster's status once its lease expired: Available Unknown (OCM's lease controller), at `now` (epoch milliseconds). */
export function leaseStopped(current: KubeObject, now: number): KubeObject {
  const next = structuredClone(current);
  setCondition(
    (writableStatusOf(next).conditions ??= []),
    { type: Conditions.Available, status: "Unknown", reason: "ManagedClusterLeaseUpdateStopped", message: "Registration agent stopped updating its lease." },
    rfc3339(now),
  );
  return next;
}

/**
 * How long after the lease's expiry the check of a lease renewed by the channel's pings runs, in
 * milliseconds: half a ping interval (`leaseSeconds`, seconds), at most a tenth of the grace
 * (`graceMultiplier` x `leaseSeconds`). The pings come every lease interval, so a check due at
 * the last pong + grace + this lands just after the ping due then, sees it and moves a whole
 * grace later: one check (one alarm, one `setAlarm` row) per grace, instead of one per
 * grace - lease when the check lands just before that ping. The lease rule stays exact (expired
 * when no renewal for the grace); only its check may come later, as OCM's hub lease controller
 * checks on its resync period: an agent stopped (SIGSTOP) just after its last pong turns
 * Unknown within 1.1 x grace, inside the 5 x lease + 20 % the lease bar allows.
 */
export function pingCheckDelayMs(leaseSeconds: number, graceMultiplier: number): number {
  return Math.min(leaseSeconds * 500, graceMultiplier * leaseSeconds * 100);
}

/**
 * Whether the hub keeps a lease for ManagedCluster `obj`: it has been accepted at least once (it
 * carries a HubAccepted condition, True, or False once denied), as OCM's hub lease controller
 * creates the cluster's `managed-cluster-lease` when it is accepted and leaves it in place.
 * {@link Lease.start} starts the stored lease then, so a list can tell from the D1 index which
 * clusters have one (src/api/leases.ts).
 */
export function holdsLease(obj: KubeObject): boolean {
  return findCondition(statusOf(obj).conditions, Conditions.HubAccepted) !== undefined;
}

/** Whether `obj` already shows its lease stopped ({@link leaseStopped}). */
function markedStopped(obj: KubeObject): boolean {
  const available = findCondition(statusOf(obj).conditions, Conditions.Available);
  return available?.status === "Unknown" && available.reason === "ManagedClusterLeaseUpdateStopped";
}

/**
 * The cluster's lease in the object's storage. Its check needs no row of the timers table: its
 * due time is derived from the stored renewal ({@link Lease.dueMs}), so a renewal writes only
 * the lease itself.
 */
export class Lease {
  /**
   * @param lastPingMs when the agent's channel last renewed the lease (the runtime's timestamp of
   *   the last auto-answered ping, epoch milliseconds), or null: such a renewal writes nothing and
   *   wakes nothing, so the check reads it here (durable-objects/cluster/connection.ts).
   */
  constructor(
    private readonly env: Env,
    private readonly state: ClusterState,
    private readonly lastPingMs: () => number | null = () => null,
  ) {}

  /** The stored lease, or null before the cluster was first accepted. */
  record(): LeaseRecord | null {
    return this.state.read<LeaseRecord>("lease");
  }

  /**
   * The last renewal (epoch milliseconds): the later of the stored one (an HTTP heartbeat, a
   * status message, a connect) and the channel's last ping; `now` for a lease never renewed.
   */
  renewedMs(now: number): number {
    return Math.max(this.record()?.renewMs ?? now, this.lastPingMs() ?? -Infinity);
  }

  /**
   * The lease interval that counts for `obj` now, in seconds: {@link countedLeaseSeconds}, or the
   * interval before a shortening while the agent has not renewed since it learnt it
   * ({@link priorGraceSeconds}).
   */
  private seconds(obj: KubeObject): number {
    const record = this.record();
    const counted = countedLeaseSeconds(specOf(obj).leaseDurationSeconds, record?.toldSeconds);
    return record ? Math.max(counted, priorGraceSeconds(record, this.lastPingMs())) : counted;
  }

  /** The lease rule's verdict for `obj` at `now` (epoch milliseconds); a lease never renewed counts from `now`. */
  verdict(obj: KubeObject, now: number): LeaseVerdict {
    return leaseRule(this.renewedMs(now), this.seconds(obj), graceMultiplier(this.env), now);
  }

  /**
   * Records that the agent was just told the lease interval `seconds` (a channel `lease` message,
   * as an HTTP heartbeat's answer tells it), keeping the last renewal ({@link renewedMs}) at `now`
   * (epoch milliseconds; one row written). A shorter interval than the agent renewed at keeps
   * that one counting until the agent's next renewal ({@link priorGraceSeconds}).
   */
  told(seconds: number, now: number): void {
    const record = this.record();
    const before = record ? Math.max(record.toldSeconds, priorGraceSeconds(record, this.lastPingMs())) : 0;
    const next: LeaseRecord = { renewMs: this.renewedMs(now), toldSeconds: seconds };
    if (seconds < before) Object.assign(next, { priorSeconds: before, toldAtMs: now });
    this.state.write("lease", next);
  }

  /**
   * The lease of `obj` as the API serves it (src/api/leases.ts, a `coordination.k8s.io` Lease), at
   * `now` (epoch milliseconds), or null before the cluster was first accepted (no lease stored):
   * the last renewal ({@link renewedMs}: the channel's last ping included, read from the runtime,
   * so serving it writes nothing) and the interval the agent renews at, `obj`'s
   * `spec.leaseDurationSeconds` (seconds; 60 when 0).
   */
  served(obj: KubeObject, now: number): ClusterLeaseRecord | null {
    if (this.record() === null) return null;
    return {
      cluster: obj.metadata.name,
      clusterUid: obj.metadata.uid,
      clusterCreated: obj.metadata.creationTimestamp,
      renewMs: this.renewedMs(now),
      leaseDurationSeconds: specOf(obj).leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS,
    };
  }

  /** Starts the lease of a newly accepted cluster (renewed at `now`, epoch milliseconds; one row written). */
  start(obj: KubeObject, now: number): void {
    if (!holdsLease(obj) || this.record() !== null) return;
    this.state.write("lease", { renewMs: now, toldSeconds: specOf(obj).leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS } satisfies LeaseRecord);
  }

  /**
   * Keeps the renewal of an agent connection that closed: `pingMs`, its last answered ping (epoch
   * milliseconds, the runtime's `getWebSocketAutoResponseTimestamp`, which goes with the socket),
   * becomes the stored renewal when later than it (one row written). Without it the lease would
   * count from an older renewal, and an agent that renewed after being told a shortened interval
   * would get the old interval's grace again ({@link priorGraceSeconds}: the evidence of that
   * renewal gone), so a stopped agent's cluster would stay Available for up to the old grace.
   * @returns whether the row was written (the lease check may then be due earlier)
   */
  connectionClosed(pingMs: number | null): boolean {
    const record = this.record();
    if (!record || pingMs === null || pingMs <= record.renewMs) return false;
    this.state.write("lease", { ...record, renewMs: pingMs } satisfies LeaseRecord);
    return true;
  }

  /**
   * Renews the lease at `now` (epoch milliseconds; one row written), recording the interval the
   * agent is told (`current`'s spec). @returns the new record
   */
  renew(current: KubeObject, now: number): LeaseRecord {
    const lease: LeaseRecord = { renewMs: now, toldSeconds: specOf(current).leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS };
    this.state.write("lease", lease);
    return lease;
  }

  /**
   * Whether the channel's pings alone keep the lease of `obj` valid at `now` (epoch milliseconds):
   * a ping was answered and its time plus the grace is later than `now`. A channel status message
   * then writes no lease row: in OCM a status update is not a lease renewal (the lease is the
   * agent's `managed-cluster-lease`, renewed on its own period, here by the pings), so the lease
   * rule reads the pings' time, which survives the object's eviction with the socket. Once the
   * pings alone let it expire (an agent resumed after SIGSTOP, whose status comes before its next
   * ping), the status message renews it, as the agent's first lease update would.
   */
  pingsRenew(obj: KubeObject, now: number): boolean {
    const last = this.lastPingMs();
    if (last === null) return false;
    return !leaseRule(last, this.seconds(obj), graceMultiplier(this.env), now).expired;
  }

  /**
   * When the lease check of `obj` is due (epoch milliseconds): its expiry, and for a lease last
   * renewed by a ping, {@link pingCheckDelayMs} after it; null for a cluster the hub never
   * answered (no HubAccepted condition) and for one already marked stopped whose lease is still
   * expired at `now` (until the next renewal).
   */
  dueMs(obj: KubeObject, now: number): number | null {
    if (!findCondition(statusOf(obj).conditions, Conditions.HubAccepted)) return null;
    const { expired, expiresAtMs } = this.verdict(obj, now);
    if (expired && markedStopped(obj)) return null;
    const ping = this.lastPingMs();
    if (ping === null || ping < (this.record()?.renewMs ?? now)) return expiresAtMs;
    return expiresAtMs + pingCheckDelayMs(this.seconds(obj), graceMultiplier(this.env));
  }

  /**
   * The lease check at `now` (epoch milliseconds): the ManagedCluster to commit when the lease of
   * `current` expired and it does not show that yet ({@link leaseStopped}), else null.
   */
  check(current: KubeObject, now: number): KubeObject | null {
    if (!findCondition(statusOf(current).conditions, Conditions.HubAccepted) || markedStopped(current)) return null;
    return this.verdict(current, now).expired ? leaseStopped(current, now) : null;
  }
}
