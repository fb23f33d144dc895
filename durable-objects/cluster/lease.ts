/**
 * The cluster's lease (OCM's `managed-cluster-lease` in the cluster's namespace) and the hub-side
 * lease controller that watches it: the rule is the pure {@link leaseRule} (OCM's
 * `registration/pkg/hub/lease/controller.go`), the rest keeps the last renewal in the object's
 * `state` table and the object's `lease` timer no later than the lease's expiry.
 */
import type { Env } from "../../src/env.ts";
import { findCondition, rfc3339, setCondition, type KubeObject } from "../../src/k8s/meta.ts";
import { Conditions, DEFAULT_LEASE_DURATION_SECONDS, specOf, statusOf, writableStatusOf } from "../../src/kinds/managedcluster.ts";
import type { Timers } from "../timers.ts";
import type { ClusterState } from "./state.ts";

/** The timer (durable-objects/timers.ts) of the lease check. */
export const LEASE_TIMER = "lease";

/** Default of LEASE_GRACE_MULTIPLIER (OCM's `LeaseDurationTimes`: 5). */
export const DEFAULT_LEASE_GRACE_MULTIPLIER = 5;

/**
 * The cluster's lease (OCM's `managed-cluster-lease`): the last renewal, epoch milliseconds, and
 * the `leaseDurationSeconds` the agent was told then (seconds).
 */
export interface LeaseRecord {
  renewMs: number;
  toldSeconds: number;
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

/** The cluster's lease in the object's storage, and its timer. */
export class Lease {
  constructor(
    private readonly env: Env,
    private readonly state: ClusterState,
    private readonly timers: Timers,
  ) {}

  /** The stored lease, or null before the cluster was first accepted. */
  record(): LeaseRecord | null {
    return this.state.read<LeaseRecord>("lease");
  }

  /** The lease rule's verdict for `obj` at `now` (epoch milliseconds); a lease never renewed counts from `now`. */
  verdict(obj: KubeObject, now: number): LeaseVerdict {
    const lease = this.record();
    return leaseRule(lease?.renewMs ?? now, countedLeaseSeconds(specOf(obj).leaseDurationSeconds, lease?.toldSeconds), graceMultiplier(this.env), now);
  }

  /**
   * Starts the lease of a newly accepted cluster (renewed at `now`, epoch milliseconds) and keeps
   * the lease timer no later than its expiry. Nothing for a cluster the hub has not accepted.
   */
  schedule(obj: KubeObject, now: number): void {
    if (!findCondition(statusOf(obj).conditions, Conditions.HubAccepted)) return;
    let lease = this.record();
    if (lease === null) {
      lease = { renewMs: now, toldSeconds: specOf(obj).leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS };
      this.state.write("lease", lease);
    }
    this.timers.setEarlier(LEASE_TIMER, this.verdict(obj, now).expiresAtMs);
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
   * The lease timer fired: when the lease of `current` expired at `now` (epoch milliseconds) the
   * caller commits {@link leaseStopped} and then calls {@link stop} (the timer stays due until
   * then, so a failed commit is tried again); otherwise the timer moves to the expiry.
   * @returns whether the lease expired
   */
  fire(current: KubeObject, now: number): boolean {
    if (!findCondition(statusOf(current).conditions, Conditions.HubAccepted)) {
      this.stop();
      return false;
    }
    const { expired, expiresAtMs } = this.verdict(current, now);
    if (!expired) this.timers.set(LEASE_TIMER, expiresAtMs);
    return expired;
  }

  /** Ends the lease timer (until the next renewal or acceptance sets it again). */
  stop(): void {
    this.timers.cancel(LEASE_TIMER);
  }
}
