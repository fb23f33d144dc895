/**
 * Karmada's scheduling of a propagation policy's `Duplicated` placement (karmada-io/karmada
 * `pkg/scheduler/core/generic_scheduler.go` with the filter plugins `tainttoleration` and
 * `clusteraffinity`, the score plugin `clusterlocality`, and
 * `pkg/scheduler/core/spreadconstraint` `selectBestClustersByCluster`), on Flotilla's
 * ManagedClusters as docs/karmada.md maps them. Pure.
 *
 * - A cluster being deleted, or no longer accepted by the hub, is never a candidate (Karmada skips
 *   deleting clusters; an unaccepted ManagedCluster is not a member at all). An unavailable one
 *   is, as in Karmada ("let users make decisions by using ClusterTolerations"): OCM's
 *   `unavailable`/`unreachable` taints (NoSelect) filter it unless tolerated.
 * - Taints: a toleration of effect `NoSchedule` (or none) tolerates OCM's `NoSelect` and
 *   `NoSelectIfNew` taints (Karmada's NoSchedule); `PreferNoSelect` taints never filter. A
 *   cluster the policy already has skips the taint filter (Karmada's taint manager, not the
 *   scheduler, evicts; Flotilla has none, so it stays).
 * - `clusterAffinity`: `exclude`, then `labelSelector` over the cluster's labels, `fieldSelector`
 *   over its provider, region and zone ({@link karmadaClusterOf}), and `clusterNames` (util's
 *   `ClusterMatches`).
 * - No cluster fits: Karmada's FitError, `0/<n> clusters are available: <count> <reason>, ...`.
 * - `spreadConstraints` with `spreadByField: cluster`: fewer feasible clusters than `minGroups`
 *   fails; otherwise the `maxGroups` best scored are picked (ClusterLocality scores a cluster
 *   the policy already has 100, the others 0; ties by name, ascending); none picked (no
 *   `maxGroups`) fails as Karmada's `AssignReplicas`. Without a constraint, every feasible
 *   cluster is picked (Duplicated).
 */
import { matchesLabelSelector } from "../../k8s/labels.ts";
import type { KubeObject } from "../../k8s/meta.ts";
import type { KarmadaPlacement, KarmadaToleration } from "../../kinds/karmada.ts";

/** Where a cluster's `provider` comes from: this label, else the cluster claim of this name (OCM's well-known platform claim). */
export const PROVIDER_KEY = "platform.open-cluster-management.io";
/** Where a cluster's `region` comes from: this label, else the cluster claim of this name. */
export const REGION_KEY = "topology.kubernetes.io/region";
/** Where a cluster's `zone` comes from: this label, else the cluster claim of this name (one zone, or several comma-separated). */
export const ZONE_KEY = "topology.kubernetes.io/zone";

/** A member cluster as Karmada's scheduler reads it. */
export interface KarmadaCluster {
  name: string;
  labels: Record<string, string>;
  /** Karmada's `spec.provider`, `spec.region` and `spec.zones`. */
  provider?: string;
  region?: string;
  zones: string[];
  taints: { key: string; value?: string; effect: string }[];
  /** Being deleted or not accepted by the hub: not a candidate. */
  leaving: boolean;
}

/** A ManagedCluster as a Karmada member cluster: its labels, and provider/region/zone from labels or cluster claims (docs/karmada.md). */
export function karmadaClusterOf(mc: KubeObject): KarmadaCluster {
  const labels = mc.metadata.labels ?? {};
  const claims = new Map((((mc.status ?? {}) as { clusterClaims?: { name: string; value: string }[] }).clusterClaims ?? []).map((c) => [c.name, c.value]));
  const field = (key: string) => labels[key] ?? claims.get(key) ?? undefined;
  const spec = (mc.spec ?? {}) as { hubAcceptsClient?: boolean; taints?: { key: string; value?: string; effect: string }[] };
  const zone = field(ZONE_KEY);
  return {
    name: mc.metadata.name,
    labels,
    ...(field(PROVIDER_KEY) ? { provider: field(PROVIDER_KEY) } : {}),
    ...(field(REGION_KEY) ? { region: field(REGION_KEY) } : {}),
    zones: zone
      ? zone
          .split(",")
          .map((z) => z.trim())
          .filter((z) => z)
      : [],
    taints: spec.taints ?? [],
    leaving: !!mc.metadata.deletionTimestamp || spec.hubAcceptsClient !== true,
  };
}

/** The scheduling outcome: the picked clusters (sorted by name), or why none could be (a Scheduled False condition). */
export interface KarmadaSchedule {
  clusters: string[];
  /** Set when scheduling failed: Karmada's condition reason (`NoClusterFit`, `SchedulerError`) and message. */
  error?: { reason: string; message: string };
}

const asNoSchedule = (effect: string) => (effect === "NoSelect" || effect === "NoSelectIfNew" ? "NoSchedule" : effect);

/**
 * corev1's `Toleration.ToleratesTaint` (comparison operators off, as Karmada's TaintToleration
 * filter calls it) on a Flotilla taint, its NoSelect effects read as NoSchedule: an effect and a
 * key, when set, must equal the taint's; `Exists` tolerates, `Equal` (or no operator) compares the
 * values, any other operator tolerates nothing.
 */
export function toleratesTaint(t: KarmadaToleration, taint: { key: string; value?: string; effect: string }): boolean {
  if (t.effect && t.effect !== asNoSchedule(taint.effect)) return false;
  if (t.key && t.key !== taint.key) return false;
  switch (t.operator ?? "") {
    case "":
    case "Equal":
      return (t.value ?? "") === (taint.value ?? "");
    case "Exists":
      return true;
    default:
      return false;
  }
}

/** Karmada's `matchZones` (In: any zone listed; NotIn: none listed). */
function matchZones(op: string, values: string[], zones: string[]): boolean {
  if (op === "In") return zones.some((z) => values.includes(z));
  if (op === "NotIn") return !zones.some((z) => values.includes(z));
  return false;
}

/** The operators apimachinery's `NodeSelectorRequirementsAsSelector` knows; any other fails the whole field selector. */
const NODE_SELECTOR_OPERATORS = new Set(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]);

/**
 * Karmada's `util.ClusterMatches`: exclude, label selector, field selector, cluster names. A label
 * selector that does not parse, or a provider/region expression of an unknown operator, matches no
 * cluster, as Karmada's conversions fail there (its webhooks refuse such operators, but do not
 * check label selectors).
 */
export function clusterMatches(c: KarmadaCluster, affinity: NonNullable<KarmadaPlacement["clusterAffinity"]>): boolean {
  if ((affinity.exclude ?? []).includes(c.name)) return false;
  if (affinity.labelSelector) {
    try {
      if (!matchesLabelSelector(affinity.labelSelector, c.labels)) return false;
    } catch {
      return false;
    }
  }
  for (const e of affinity.fieldSelector?.matchExpressions ?? []) if (e.key !== "zone" && !NODE_SELECTOR_OPERATORS.has(e.operator)) return false;
  for (const e of affinity.fieldSelector?.matchExpressions ?? []) {
    const values = e.values ?? [];
    if (e.key === "zone") {
      if (!matchZones(e.operator, values, c.zones)) return false;
      continue;
    }
    const v = e.key === "provider" ? c.provider : e.key === "region" ? c.region : undefined;
    // A label selector's In and NotIn over the cluster's fields (a field not set: In fails, NotIn passes).
    if (e.operator === "In" && (v === undefined || !values.includes(v))) return false;
    if (e.operator === "NotIn" && v !== undefined && values.includes(v)) return false;
  }
  const names = affinity.clusterNames ?? [];
  return names.length === 0 || names.includes(c.name);
}

const taintString = (t: { key: string; value?: string; effect: string }) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`;

/**
 * Schedules `placement` (defaults applied) onto `clusters`; `current` are the clusters the
 * policy's resources are on now (its bindings' `spec.clusters`).
 */
export function scheduleKarmada(placement: KarmadaPlacement, clusters: readonly KarmadaCluster[], current: ReadonlySet<string>): KarmadaSchedule {
  const members = clusters.filter((c) => !c.leaving);
  const reasons = new Map<string, number>();
  const feasible: KarmadaCluster[] = [];
  for (const c of members) {
    let why: string | null = null;
    if (!current.has(c.name)) {
      const taint = c.taints.find(
        (t) => asNoSchedule(t.effect) === "NoSchedule" && !(placement.clusterTolerations ?? []).some((tol) => toleratesTaint(tol, t)),
      );
      if (taint) why = `cluster(s) had untolerated taint {${taintString(taint)}}`;
    }
    if (!why && placement.clusterAffinity && !clusterMatches(c, placement.clusterAffinity))
      why = "cluster(s) did not match the placement cluster affinity constraint";
    if (why) reasons.set(why, (reasons.get(why) ?? 0) + 1);
    else feasible.push(c);
  }
  if (feasible.length === 0) {
    const detail =
      members.length === 0
        ? "no cluster exists"
        : [...reasons]
            .map(([r, n]) => `${n} ${r}`)
            .sort()
            .join(", ");
    return { clusters: [], error: { reason: "NoClusterFit", message: `0/${members.length} clusters are available: ${detail}.` } };
  }
  // ClusterLocality: a cluster the resources are on scores 100; ties by name.
  const score = (c: KarmadaCluster) => (current.has(c.name) ? 100 : 0);
  const sorted = [...feasible].sort((a, b) => score(b) - score(a) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const spread = (placement.spreadConstraints ?? []).find((s) => (s.spreadByField ?? "cluster") === "cluster" && !s.spreadByLabel);
  let picked = sorted;
  if (spread) {
    if (sorted.length < (spread.minGroups ?? 1))
      return {
        clusters: [],
        error: { reason: "SchedulerError", message: "failed to select clusters: the number of feasible clusters is less than spreadConstraint.MinGroups" },
      };
    picked = sorted.slice(0, Math.min(sorted.length, spread.maxGroups ?? 0));
    // `maxGroups` 0 (not set) picks none: Karmada's AssignReplicas then fails.
    if (picked.length === 0)
      return { clusters: [], error: { reason: "SchedulerError", message: "failed to assign replicas: no clusters available to schedule" } };
  }
  return { clusters: picked.map((c) => c.name).sort() };
}
