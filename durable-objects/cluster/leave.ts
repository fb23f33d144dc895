/**
 * A cluster's leave (KubeFleet's leave, OCM's cleanup finalizer): the deletion of an accepted
 * ManagedCluster waits on {@link LEAVE_FINALIZER} until its agent removed what its works applied
 * and said `left`, or until the leave deadline (the object's `leave` timer) passes.
 */
import type { Env } from "../../src/env.ts";
import { findCondition, rfc3339, setCondition, type KubeObject } from "../../src/k8s/meta.ts";
import { settleDeletion } from "../../src/k8s/write.ts";
import { Conditions, statusOf, writableStatusOf } from "../../src/kinds/managedcluster.ts";
import { clock } from "../../src/clock.ts";
import type { ClusterHost } from "./host.ts";

/** The finalizer that holds a deleted, accepted ManagedCluster until its agent has left (or the leave timed out). */
export const LEAVE_FINALIZER = "cluster.open-cluster-management.io/api-resource-cleanup";
/** Default of LEAVE_TIMEOUT_SECONDS: how long the hub waits for a leaving agent, in seconds (KubeFleet: 15 minutes). */
export const DEFAULT_LEAVE_TIMEOUT_SECONDS = 900;
/** The timer (durable-objects/timers.ts) of the leave deadline. */
export const LEAVE_TIMER = "leave";

/**
 * The leave deadline (epoch milliseconds) of a leaving cluster: its `deletionTimestamp` plus
 * LEAVE_TIMEOUT_SECONDS (seconds; the default when unset or negative), else null (not deleted, or
 * not held by {@link LEAVE_FINALIZER}).
 */
export function leaveDeadline(obj: KubeObject, env: Pick<Env, "LEAVE_TIMEOUT_SECONDS">): number | null {
  if (!obj.metadata.deletionTimestamp || !obj.metadata.finalizers?.includes(LEAVE_FINALIZER)) return null;
  const seconds = Number(env.LEAVE_TIMEOUT_SECONDS ?? DEFAULT_LEAVE_TIMEOUT_SECONDS);
  return Date.parse(obj.metadata.deletionTimestamp) + (Number.isFinite(seconds) && seconds >= 0 ? seconds : DEFAULT_LEAVE_TIMEOUT_SECONDS) * 1000;
}

/**
 * The object an admin's delete of `current` starts from: an accepted cluster not yet deleted is
 * held by {@link LEAVE_FINALIZER} (a copy with the finalizer); any other, `current` itself.
 */
export function heldForLeave(current: KubeObject | null): KubeObject | null {
  if (!current || current.metadata.deletionTimestamp || findCondition(statusOf(current).conditions, Conditions.HubAccepted)?.status !== "True") return current;
  const base = structuredClone(current);
  base.metadata.finalizers = [...(base.metadata.finalizers ?? []).filter((f) => f !== LEAVE_FINALIZER), LEAVE_FINALIZER];
  return base;
}

/**
 * Marks `next` leaving (ManagedClusterJoined False, ManagedClusterLeaving) when this write starts
 * its leave: deleted and held by {@link LEAVE_FINALIZER} while `current` was not deleted. `now`
 * in epoch milliseconds.
 */
export function markLeaving(current: KubeObject | null, next: KubeObject, now: number): void {
  if (!next.metadata.deletionTimestamp || !next.metadata.finalizers?.includes(LEAVE_FINALIZER) || current?.metadata.deletionTimestamp) return;
  setCondition(
    (writableStatusOf(next).conditions ??= []),
    { type: Conditions.Joined, status: "False", reason: "ManagedClusterLeaving", message: "The cluster is leaving: its agent is removing what works applied" },
    rfc3339(now),
  );
}

/** The leave of the host's cluster: its timer and its end. */
export class Leave {
  constructor(
    private readonly env: Env,
    private readonly host: Pick<ClusterHost, "timers" | "commit">,
  ) {}

  /** Sets the leave timer no later than `obj`'s leave deadline, when it is leaving. */
  schedule(obj: KubeObject): void {
    const deadline = leaveDeadline(obj, this.env);
    if (deadline !== null) this.host.timers.setEarlier(LEAVE_TIMER, deadline);
  }

  /**
   * The leave timer fired at `now` (epoch milliseconds): a leave past its deadline ends
   * (ManagedClusterLeaveTimedOut), one before it keeps its timer at the deadline, and a cluster
   * no longer leaving drops the timer. @returns whether the cluster is gone
   */
  async fire(current: KubeObject, now: number): Promise<boolean> {
    const deadline = leaveDeadline(current, this.env);
    if (deadline === null) {
      this.host.timers.cancel(LEAVE_TIMER);
      return false;
    }
    if (now < deadline) {
      this.host.timers.set(LEAVE_TIMER, deadline);
      return false;
    }
    await this.finish(current, "ManagedClusterLeaveTimedOut", "The agent did not confirm its leave in time; the hub removed the cluster without it");
    return true;
  }

  /**
   * Ends a leave: records how it ended in ManagedClusterJoined (reason ManagedClusterLeft or
   * ManagedClusterLeaveTimedOut; the DELETED watch event carries it), removes the ManagedCluster
   * (D1 row, identity, the object's storage; the scheduler drops it from every decision), then
   * the objects in the cluster's namespace (ManifestWorks, AddOnPlacementScores; the removal's
   * after-commit hook, src/work/controller.ts).
   * @throws ApiError 404, 409 when D1 refused a commit
   */
  async finish(current: KubeObject, reason: string, message: string): Promise<void> {
    const ended = structuredClone(current);
    setCondition((writableStatusOf(ended).conditions ??= []), { type: Conditions.Joined, status: "False", reason, message }, rfc3339(clock.now()));
    const stored = (await this.host.commit(current, ended, "returns")) ?? current;
    const gone = structuredClone(stored);
    gone.metadata.finalizers = (gone.metadata.finalizers ?? []).filter((f) => f !== LEAVE_FINALIZER);
    await this.host.commit(stored, settleDeletion(gone), "returns");
  }
}
