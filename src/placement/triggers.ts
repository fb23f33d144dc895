/**
 * The placement scheduler's after-commit hook: which placements a committed write can affect, as
 * a Trigger for the scheduler (OCM's enqueue rules), run before the write returns.
 */
import type { KubeObject } from "../k8s/meta.ts";
import { ManagedClusterKind, type ManagedClusterStatus } from "../kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import { AddOnPlacementScoreKind, ManagedClusterSetBindingKind, PlacementKind } from "../kinds/placement.ts";
import { registerAfterCommitHook, type AfterCommitHook, type Change } from "../store/hooks.ts";
import type { Env } from "../env.ts";
import type { RunResult, Trigger } from "./controller.ts";

function schedulingView(obj: KubeObject | null): string {
  if (!obj) return "";
  const status = (obj.status ?? {}) as ManagedClusterStatus;
  const available = status.conditions?.find((c) => c.type === "ManagedClusterConditionAvailable")?.status;
  return JSON.stringify([obj.metadata.labels, obj.spec?.taints, available, status.clusterClaims, status.allocatable, status.capacity, obj.metadata.deletionTimestamp]);
}

/**
 * The Trigger for a ManagedCluster write, or null when nothing the scheduler reads changed
 * (labels, taints, availability, claims, allocatable, capacity, deletion).
 */
export function triggerForCluster(before: KubeObject | null, after: KubeObject | null): Trigger | null {
  if (schedulingView(before) === schedulingView(after)) return null;
  const name = (after ?? before)!.metadata.name;
  return { clusters: [{ name, labelsBefore: before?.metadata.labels, labelsAfter: after?.metadata.labels }] };
}

/** Everything but the status and resourceVersion. */
function withoutStatus(obj: KubeObject): string {
  const { status: _s, metadata, ...rest } = obj;
  const { resourceVersion: _rv, ...meta } = metadata;
  return JSON.stringify([rest, meta]);
}

/**
 * A write that changed only the status of an object whose status the scheduler writes
 * (Placement, ManagedClusterSetBinding): the scheduler's own output, which gives it nothing to do.
 */
function statusOnly(change: Change): boolean {
  return change.before !== null && change.after !== null && withoutStatus(change.before) === withoutStatus(change.after);
}

/**
 * The Trigger for a committed write, or null when no placement can care (OCM's enqueue rules):
 * a Placement's own write (not its status, which the scheduler writes), a ManagedClusterSet, the
 * bindings of a namespace (not their status), an AddOnPlacementScore, or a ManagedCluster change
 * that the scheduler reads (see {@link triggerForCluster}).
 */
export function triggerForChange(change: Change): Trigger | null {
  const { def, namespace, name } = change;
  if (def === ManagedClusterKind) return triggerForCluster(change.before, change.after);
  if (def === PlacementKind) return statusOnly(change) ? null : { placements: [`${namespace}/${name}`] };
  if (def === ManagedClusterSetKind) return { sets: [name] };
  if (def === ManagedClusterSetBindingKind) return statusOnly(change) ? null : { namespaces: [namespace] };
  if (def === AddOnPlacementScoreKind) return { scores: [{ cluster: namespace, resourceName: name }] };
  return null;
}

/**
 * The after-commit hook that runs the scheduler for a write's Trigger and waits for it (and for
 * the replica sets following the decisions it changed). It reports `rewrote` when the run wrote
 * the written object's status (a new Placement's, a binding's Bound condition). Run again by a
 * sweep after a crash, it asks the replica sets of every placement it scheduled to follow too,
 * since the first run may have written the decisions and died before they ran.
 */
export const schedulingHook: AfterCommitHook<Trigger> = {
  name: "schedule",
  plan: triggerForChange,
  async run(env, trigger, target) {
    const result = await reschedule(env, trigger, target.recovering);
    return { rewrote: result.statusWritten.includes(`${target.resource}/${target.namespace}/${target.name}`) };
  },
};
registerAfterCommitHook(schedulingHook);

/**
 * Runs the scheduler for `trigger` and waits for it (decisions are updated before the caller
 * returns), and for the replica sets following the decisions it changed (`followAll`: of every
 * placement it scheduled). Returns the run's result.
 */
export async function reschedule(env: Env, trigger: Trigger, followAll = false): Promise<RunResult> {
  return env.SCHEDULER.getByName("scheduler").reconcile(trigger, followAll);
}
