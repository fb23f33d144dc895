/**
 * Which placements a write can affect, as a Trigger for the scheduler (OCM's enqueue rules), and
 * the call that runs it before the write returns.
 */
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import { AddOnPlacementScoreKind, ManagedClusterSetBindingKind, PlacementKind } from "../kinds/placement.ts";
import type { ManagedClusterStatus } from "../kinds/managedcluster.ts";
import type { Env } from "../env.ts";
import type { Trigger } from "./controller.ts";

/** The Trigger for a committed write of a D1-stored kind, or null when no placement can care. */
export function triggerForWrite(def: KindDefinition, namespace: string, name: string): Trigger | null {
  if (def === PlacementKind) return { placements: [`${namespace}/${name}`] };
  if (def === ManagedClusterSetKind) return { sets: [name] };
  if (def === ManagedClusterSetBindingKind) return { namespaces: [namespace] };
  if (def === AddOnPlacementScoreKind) return { scores: [{ cluster: namespace, resourceName: name }] };
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
 * (labels, taints, availability, claims, allocatable, capacity, deletion).
 */
export function triggerForCluster(before: KubeObject | null, after: KubeObject | null): Trigger | null {
  if (schedulingView(before) === schedulingView(after)) return null;
  const name = (after ?? before)!.metadata.name;
  return { clusters: [{ name, labelsBefore: before?.metadata.labels, labelsAfter: after?.metadata.labels }] };
}

/** Runs the scheduler for `trigger` and waits for it (decisions are updated before the caller returns). */
export async function reschedule(env: Env, trigger: Trigger | null): Promise<void> {
  if (!trigger) return;
  await env.SCHEDULER.getByName("scheduler").reconcile(trigger);
}
