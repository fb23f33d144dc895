/**
 * Which placements a write can affect, as a Trigger for the scheduler (OCM's enqueue rules), with
 * what the scheduler's view reads of the written object, and the call that runs it before the
 * write returns.
 */
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import { AddOnPlacementScoreKind, ManagedClusterSetBindingKind, PlacementKind } from "../kinds/placement.ts";
import type { ManagedClusterStatus } from "../kinds/managedcluster.ts";
import type { ObjectChange, Trigger, ViewResource } from "./plan.ts";
import { clusterView } from "./reads.ts";

/**
 * The Trigger for a committed write of a D1-stored kind, or null when no placement can care.
 * `change` is the object before and after the write (after null for a delete); without it the
 * scheduler reads the written object itself (one keyed D1 read).
 */
export function triggerForWrite(def: KindDefinition, namespace: string, name: string, change?: { before: KubeObject | null; after: KubeObject | null }): Trigger | null {
  const written = (resource: ViewResource): ObjectChange[] => {
    const o: ObjectChange = { resource, namespace, name };
    if (change) {
      o.object = change.after;
      if (!change.after && change.before) o.resourceVersion = change.before.metadata.resourceVersion;
    }
    return [o];
  };
  if (def === PlacementKind) return { placements: [`${namespace}/${name}`], objects: written("placements") };
  if (def === ManagedClusterSetKind) return { sets: [name], objects: written("managedclustersets") };
  if (def === ManagedClusterSetBindingKind) return { namespaces: [namespace], objects: written("managedclustersetbindings") };
  if (def === AddOnPlacementScoreKind) return { scores: [{ cluster: namespace, resourceName: name }], objects: written("addonplacementscores") };
  return null;
}

function schedulingView(obj: KubeObject | null): string {
  if (!obj) return "";
  const status = (obj.status ?? {}) as ManagedClusterStatus;
  const available = status.conditions?.find((c) => c.type === "ManagedClusterConditionAvailable")?.status;
  return JSON.stringify([obj.metadata.labels, obj.spec?.taints, available, status.clusterClaims, status.allocatable, status.capacity, obj.metadata.deletionTimestamp]);
}

/**
 * The Trigger for a ManagedCluster write, or null when nothing the scheduler reads changed
 * (labels, taints, availability, claims, allocatable, capacity, deletion). It carries the
 * cluster's scheduling view after the write (null once deleted) and the resourceVersion of the
 * written (or deleted) object.
 */
export function triggerForCluster(before: KubeObject | null, after: KubeObject | null): Trigger | null {
  if (schedulingView(before) === schedulingView(after)) return null;
  const name = (after ?? before)!.metadata.name;
  return {
    clusters: [
      {
        name,
        labelsBefore: before?.metadata.labels,
        labelsAfter: after?.metadata.labels,
        after: after ? clusterView(after) : null,
        resourceVersion: (after ?? before)!.metadata.resourceVersion,
      },
    ],
  };
}

/**
 * The binding {@link reschedule} calls: the hub's `Env.SCHEDULER` (typed by shape, so that the
 * pure trigger builders above stay importable outside the Worker).
 */
export interface SchedulerBinding {
  SCHEDULER: { getByName(name: string): { reconcile(trigger: Trigger): Promise<unknown> } };
}

/** Runs the scheduler for `trigger` and waits for it (decisions are updated before the caller returns). */
export async function reschedule(env: SchedulerBinding, trigger: Trigger | null): Promise<void> {
  if (!trigger) return;
  await env.SCHEDULER.getByName("scheduler").reconcile(trigger);
}
