/**
 * What scheduling reads of each stored object, in one place so that the full recompute
 * (src/placement/state.ts), the scheduler's view (src/placement/view.ts) and the triggers that
 * feed it (src/placement/changes.ts) read them alike.
 */
import { fromLabelSelector, matches, selectsEverything, type LabelSelectorRequirementSet } from "../k8s/labels.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { CLUSTERSET_LABEL, type ManagedClusterSpec, type ManagedClusterStatus } from "../kinds/managedcluster.ts";
import { PLACEMENT_LABEL, type AddOnPlacementScoreInput, type PlacementSpec } from "../scheduling/index.ts";
import type { ClusterView } from "./plan.ts";

/**
 * A ManagedCluster's {@link ClusterView}: `metadata.labels`, `status.clusterClaims` as
 * name → value, `spec.taints` (key, value, effect, timeAdded), `status.allocatable`,
 * `status.capacity`, `status.version.kubernetes`, and whether `metadata.deletionTimestamp` is set.
 */
export function clusterView(c: KubeObject): ClusterView {
  const spec = (c.spec ?? {}) as unknown as ManagedClusterSpec;
  const status = (c.status ?? {}) as ManagedClusterStatus;
  const claims: Record<string, string> = {};
  for (const cl of status.clusterClaims ?? []) claims[cl.name] = cl.value;
  return {
    name: c.metadata.name,
    labels: c.metadata.labels,
    claims,
    taints: (spec.taints ?? []).map((t) => ({ key: t.key, value: t.value, effect: t.effect, timeAdded: t.timeAdded ?? undefined })),
    allocatable: status.allocatable,
    capacity: status.capacity,
    kubernetesVersion: status.version?.kubernetes,
    deleting: Boolean(c.metadata.deletionTimestamp),
  };
}

/** An AddOnPlacementScore's `status.scores` (name → value) and `status.validUntil`. */
export function scoreInput(s: KubeObject): AddOnPlacementScoreInput {
  const st = (s.status ?? {}) as { scores?: { name: string; value: number }[]; validUntil?: string | null };
  const values: Record<string, number> = {};
  for (const v of st.scores ?? []) values[v.name] = v.value;
  return { scores: values, validUntil: st.validUntil ?? undefined };
}

/** A Placement's spec (`{}` when missing). */
export function placementSpec(p: KubeObject): PlacementSpec {
  return (p.spec ?? {}) as PlacementSpec;
}

/** The cluster names of a PlacementDecision's `status.decisions`, in order. */
export function decidedClusters(d: KubeObject): string[] {
  return ((d.status as { decisions?: { clusterName: string }[] } | undefined)?.decisions ?? []).map((x) => x.clusterName);
}

/** The placement a PlacementDecision belongs to (its placement label), or undefined. */
export function decisionOwner(d: KubeObject): string | undefined {
  return d.metadata.labels?.[PLACEMENT_LABEL];
}

/** Whether a placement's prioritizer configurations name one of the AddOn score resources `resourceNames`, or a CEL selector may call `scores()`. */
export function readsScore(spec: PlacementSpec, resourceNames: ReadonlySet<string>): boolean {
  if (
    (spec.prioritizerPolicy?.configurations ?? []).some(
      (c) => c.scoreCoordinate?.type === "AddOn" && resourceNames.has(c.scoreCoordinate.addOn?.resourceName ?? ""),
    )
  )
    return true;
  // A CEL selector may read any score through managedCluster.scores(name).
  return (spec.predicates ?? []).some((p) => (p.requiredClusterSelector?.celSelector?.celExpressions ?? []).some((e) => e.includes("scores")));
}

/**
 * A ManagedClusterSet's compiled selector as OCM's `clusterInSet` reads it: null for an
 * `ExclusiveClusterSetLabel` set (membership by the `cluster.open-cluster-management.io/clusterset`
 * label), else its label selector; an invalid selector matches nothing.
 */
export function compileSetSelector(set: KubeObject): LabelSelectorRequirementSet | null {
  const sel = (set.spec?.clusterSelector ?? {}) as { selectorType?: string; labelSelector?: unknown };
  if ((sel.selectorType ?? "ExclusiveClusterSetLabel") === "ExclusiveClusterSetLabel") return null;
  try {
    return fromLabelSelector(sel.labelSelector as never);
  } catch {
    return fromLabelSelector(null);
  }
}

/** Whether a cluster with `labels` belongs to the set `name` whose selector {@link compileSetSelector} compiled (OCM `GetClustersFromClusterSet`). */
export function inCompiledSet(name: string, selector: LabelSelectorRequirementSet | null, labels: Readonly<Record<string, string>> | undefined): boolean {
  if (selector === null) return (labels?.[CLUSTERSET_LABEL] ?? "") === name;
  return selectsEverything(selector) || matches(selector, labels as Record<string, string> | undefined);
}

/** `<namespace>/<name>`: the key of a namespaced object in the view's maps. */
export const objectKey = (namespace: string, name: string) => `${namespace}/${name}`;

/** Orders objects by namespace, then name (code unit order, as Go's string comparison). */
export const byNamespaceName = (a: KubeObject, b: KubeObject) =>
  cmp(a.metadata.namespace ?? "", b.metadata.namespace ?? "") || cmp(a.metadata.name, b.metadata.name);

/** Compares strings by code units: -1, 0 or 1. */
export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
