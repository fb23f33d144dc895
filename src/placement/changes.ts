/**
 * What a committed write tells the placement scheduler (OCM's enqueue rules): which placements it
 * can affect, as a Trigger, with what the scheduler's view reads of the written object. Pure, so
 * that the unit tests and the bench import it outside the Worker; the after-commit hook that
 * runs these triggers is src/placement/controller.ts.
 */
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { ManagedClusterKind, type ManagedClusterStatus } from "../kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import { AddOnPlacementScoreKind, ManagedClusterSetBindingKind, PlacementDecisionKind, PlacementKind } from "../kinds/placement.ts";
import { PLACEMENT_LABEL } from "../scheduling/grouping.ts";
import type { ObjectChange, Trigger, ViewResource } from "./plan.ts";
import { clusterView } from "./reads.ts";

/**
 * One committed write: src/store/hooks.ts `Change`, declared here by its shape so that this
 * module does not import the Worker's types (src/env.ts).
 */
export interface WrittenChange {
  def: KindDefinition;
  namespace: string;
  name: string;
  before: KubeObject | null;
  after: KubeObject | null;
}

function schedulingView(obj: KubeObject | null): string {
  if (!obj) return "";
  const status = (obj.status ?? {}) as ManagedClusterStatus;
  const available = status.conditions?.find((c) => c.type === "ManagedClusterConditionAvailable")?.status;
  return JSON.stringify([
    obj.metadata.labels,
    obj.spec?.taints,
    available,
    status.clusterClaims,
    status.allocatable,
    status.capacity,
    status.version?.kubernetes,
    obj.metadata.deletionTimestamp,
  ]);
}

/**
 * The Trigger for a ManagedCluster write, or null when nothing the scheduler reads changed
 * (labels, taints, availability, claims, allocatable, capacity, Kubernetes version, deletion). With `withObjects`
 * (the default) it carries the cluster's scheduling view after the write (null once deleted) and
 * the resourceVersion of the written (or deleted) object, so `after` must be the object as
 * stored; without, the scheduler reads the cluster itself (one keyed D1 read).
 */
export function triggerForCluster(before: KubeObject | null, after: KubeObject | null, withObjects = true): Trigger | null {
  if (schedulingView(before) === schedulingView(after)) return null;
  const name = (after ?? before)!.metadata.name;
  const change = { name, labelsBefore: before?.metadata.labels, labelsAfter: after?.metadata.labels };
  if (!withObjects) return { clusters: [change] };
  return { clusters: [{ ...change, after: after ? clusterView(after) : null, resourceVersion: (after ?? before)!.metadata.resourceVersion }] };
}

/** Everything but the status and resourceVersion. */
function withoutStatus(obj: KubeObject): string {
  const { status: _s, metadata, ...rest } = obj;
  const { resourceVersion: _rv, ...meta } = metadata;
  return JSON.stringify([rest, meta]);
}

/**
 * A write that changed only the status of an object whose status the hub writes (Placement,
 * ManagedClusterSetBinding: the scheduler's own output; ManagedClusterSet: its `ClusterSetEmpty`
 * condition, src/clusterprofile/clusterset-status.ts), which scheduling does not read.
 */
function statusOnly(change: WrittenChange): boolean {
  return change.before !== null && change.after !== null && withoutStatus(change.before) === withoutStatus(change.after);
}

/**
 * The Trigger for a committed write, or null when no placement can care (OCM's enqueue rules):
 * a Placement's own write (not its status, which the scheduler writes), a ManagedClusterSet, the
 * bindings of a namespace (not their status), an AddOnPlacementScore, or a ManagedCluster change
 * that the scheduler reads (see {@link triggerForCluster}).
 *
 * With `withObjects` (the default) the trigger carries the written object, which the scheduler's
 * view applies without reading D1: `change.after` must then be the object as stored (with its
 * resourceVersion); for a delete, the deleted object's resourceVersion, so a late delete never
 * removes a newer object. Without (the plan stored in the outbox, decided before the commit),
 * only the object's key: the scheduler reads the object itself (one keyed D1 read).
 */
export function triggerForChange(change: WrittenChange, withObjects = true): Trigger | null {
  const { def, namespace, name, before, after } = change;
  const written = (resource: ViewResource): ObjectChange[] => {
    const o: ObjectChange = { resource, namespace, name };
    if (withObjects) {
      o.object = after;
      if (!after && before) o.resourceVersion = before.metadata.resourceVersion;
    }
    return [o];
  };
  if (def === ManagedClusterKind) return triggerForCluster(before, after, withObjects);
  if (def === PlacementKind) return statusOnly(change) ? null : { placements: [`${namespace}/${name}`], objects: written("placements") };
  if (def === ManagedClusterSetKind) {
    // Its ClusterSetEmpty condition's write (a changed status, nothing else) asks for nothing.
    const statusWrite = statusOnly(change) && JSON.stringify(change.before!.status ?? null) !== JSON.stringify(change.after!.status ?? null);
    return statusWrite ? null : { sets: [name], objects: written("managedclustersets") };
  }
  if (def === ManagedClusterSetBindingKind) return statusOnly(change) ? null : { namespaces: [namespace], objects: written("managedclustersetbindings") };
  if (def === AddOnPlacementScoreKind) return { scores: [{ cluster: namespace, resourceName: name }], objects: written("addonplacementscores") };
  return null;
}

/**
 * The placement whose decisions `change` moved, `<namespace>/<name>`: a PlacementDecision
 * created, deleted, or its decisions (status) or labels (its decision group) changed; null for any
 * other change. What the decisions' consumers (replica sets, add-ons installed by placements) wake
 * on, as OCM's controllers watch the PlacementDecision informer.
 */
export function decisionsMoved(change: WrittenChange): string | null {
  if (change.def !== PlacementDecisionKind) return null;
  const { before, after } = change;
  const placement = (after ?? before)?.metadata.labels?.[PLACEMENT_LABEL];
  if (!placement) return null;
  if (before && after && JSON.stringify([before.status, before.metadata.labels]) === JSON.stringify([after.status, after.metadata.labels])) return null;
  return `${change.namespace}/${placement}`;
}
