/**
 * KubeFleet's scheduling of a placement onto member clusters (kubefleet-dev/kubefleet
 * `pkg/scheduler/framework` and its plugins: clustereligibility, clusteraffinity, tainttoleration,
 * topologyspreadconstraints, sameplacementaffinity), on Flotilla's ManagedClusters as
 * docs/kubefleet.md maps them (labels plus `kubernetes-fleet.io/member-cluster-name`; properties from
 * capacity, allocatable and cluster claims; taints). Pure: the clusters and the placement's current
 * clusters are arguments.
 *
 * - PickAll: every eligible cluster that passes the filters (required affinity terms ORed, each a
 *   label selector ANDed with its property selector; tolerated taints).
 * - PickN: the filtered clusters scored (topology spread first, then the preferred affinity terms'
 *   weights, interpolated by a property sorter, then +1 for a cluster the placement already has),
 *   the top `numberOfClusters` picked, ties broken by name as KubeFleet's `pickTopNScoredClusters`
 *   (a reverse sort: the greater name first).
 * - PickFixed: exactly `clusterNames`, those not found or not eligible reported as not picked.
 *
 * As KubeFleet's scheduler ("IgnoredDuringExecution"), a cluster a placement already has keeps it
 * while the policy is unchanged (`policyChanged` false), unless the cluster is gone or being deleted;
 * PickN then picks only what is missing (or drops the lowest scored when `numberOfClusters` fell).
 */
import { matchesLabelSelector, type LabelSelectorInput } from "../k8s/labels.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { tryParseQuantity } from "../k8s/quantity.ts";
import type { ClusterSelectorTerm, FleetToleration, PlacementPolicy } from "../kinds/fleet-validation.ts";

/** The label every member cluster has, whose value is its name (docs/kubefleet.md). */
export const MEMBER_CLUSTER_NAME_LABEL = "kubernetes-fleet.io/member-cluster-name";

/** A member cluster as the scheduler reads it. */
export interface MemberCluster {
  name: string;
  labels: Record<string, string>;
  /** Property name → quantity string (docs/kubefleet.md's mapping). */
  properties: Record<string, string>;
  taints: { key: string; value?: string; effect: string }[];
  /** May get new placements: accepted by the hub, not being deleted, not known unavailable (ManagedClusterConditionAvailable not False). */
  eligible: boolean;
  /** Being deleted, or no longer accepted (`hubAcceptsClient` not true): loses its placements. */
  leaving: boolean;
}

/** One cluster's decision (a policy snapshot's `targetClusters[]`, a binding's `clusterDecision`). */
export interface ClusterDecision {
  clusterName: string;
  selected: boolean;
  clusterScore?: { affinityScore?: number; priorityScore?: number } | null;
  reason: string;
}

/** The outcome of a scheduling run. */
export interface ScheduleResult {
  /** The picked clusters' decisions, sorted by name. */
  selected: ClusterDecision[];
  /** Clusters considered and not picked (at most 20 kept, as KubeFleet keeps a few), sorted by name. */
  notSelected: ClusterDecision[];
  /** How many clusters the policy wants (PickN: numberOfClusters; PickFixed: the names; PickAll: those picked). */
  desired: number;
}

const conditionStatus = (obj: KubeObject, type: string) =>
  ((obj.status?.conditions ?? []) as { type: string; status: string }[]).find((c) => c.type === type)?.status;

/**
 * A ManagedCluster as a KubeFleet member cluster (docs/kubefleet.md): labels plus the member
 * name label, properties from `status.capacity`, `status.allocatable` and `status.clusterClaims`.
 */
export function memberClusterOf(mc: KubeObject): MemberCluster {
  const status = (mc.status ?? {}) as {
    capacity?: Record<string, string>;
    allocatable?: Record<string, string>;
    clusterClaims?: { name: string; value: string }[];
  };
  const properties: Record<string, string> = {};
  for (const c of status.clusterClaims ?? []) properties[c.name] = c.value;
  for (const [r, q] of Object.entries(status.capacity ?? {})) properties[`resources.kubernetes-fleet.io/total-${r}`] = String(q);
  for (const [r, q] of Object.entries(status.allocatable ?? {})) {
    properties[`resources.kubernetes-fleet.io/allocatable-${r}`] = String(q);
    properties[`resources.kubernetes-fleet.io/available-${r}`] = String(q);
  }
  const spec = (mc.spec ?? {}) as { hubAcceptsClient?: boolean; taints?: { key: string; value?: string; effect: string }[] };
  const leaving = !!mc.metadata.deletionTimestamp || spec.hubAcceptsClient !== true;
  const available = conditionStatus(mc, "ManagedClusterConditionAvailable");
  return {
    name: mc.metadata.name,
    labels: { ...(mc.metadata.labels ?? {}), [MEMBER_CLUSTER_NAME_LABEL]: mc.metadata.name },
    properties,
    taints: spec.taints ?? [],
    eligible: !leaving && available !== "False",
    leaving,
  };
}

/** KubeFleet's `canTolerationTolerateTaint`; Flotilla's taints of effect NoSelect and NoSelectIfNew are KubeFleet's NoSchedule. */
function tolerates(taint: { key: string; value?: string; effect: string }, t: FleetToleration): boolean {
  const effect = taint.effect === "NoSelect" || taint.effect === "NoSelectIfNew" ? "NoSchedule" : taint.effect;
  const effectOk = !t.effect || t.effect === effect;
  if ((t.operator ?? "Equal") === "Exists") return (!t.key || t.key === taint.key) && effectOk;
  return t.key === taint.key && (t.value ?? "") === (taint.value ?? "") && effectOk;
}

/** The first taint (NoSelect or NoSelectIfNew) none of `tolerations` tolerates, or undefined. */
export function untoleratedTaint(c: MemberCluster, tolerations: FleetToleration[] | undefined) {
  return c.taints.find((taint) => taint.effect !== "PreferNoSelect" && !(tolerations ?? []).some((t) => tolerates(taint, t)));
}

/** Whether `c` matches one cluster selector term (its label selector and each property requirement). */
export function termMatches(term: ClusterSelectorTerm, c: MemberCluster): boolean {
  if (term.labelSelector && !matchesLabelSelector(term.labelSelector as LabelSelectorInput, c.labels)) return false;
  for (const exp of term.propertySelector?.matchExpressions ?? []) {
    const raw = c.properties[exp.name];
    const q = raw === undefined ? undefined : tryParseQuantity(raw);
    const want = tryParseQuantity(exp.values?.[0]);
    if (q === undefined || want === undefined) return false;
    const results: Record<string, boolean> = { Eq: q === want, Ne: q !== want, Gt: q > want, Ge: q >= want, Lt: q < want, Le: q <= want };
    const ok = results[exp.operator];
    if (!ok) return false;
  }
  return true;
}

/** The required affinity (terms ORed; none: every cluster). */
function passesRequired(policy: PlacementPolicy, c: MemberCluster): boolean {
  const terms = policy.affinity?.clusterAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.clusterSelectorTerms;
  if (!terms || terms.length === 0) return true;
  return terms.some((t) => termMatches(t, c));
}

/** Why `c` is filtered out, or null when it passes (KubeFleet's filter plugins' reasons). */
function filterReason(policy: PlacementPolicy, c: MemberCluster): string | null {
  if (!c.eligible) return "cluster is not eligible for resource placement yet";
  if (!passesRequired(policy, c)) return "cluster does not match with any of the required cluster affinity terms";
  const taint = untoleratedTaint(c, policy.tolerations);
  if (taint) return `cluster has untolerated taint {Key:${taint.key} Value:${taint.value ?? ""} Effect:${taint.effect}}`;
  return null;
}

/** The preferred affinity terms' score of `c` (KubeFleet's clusteraffinity Score, with min/max over `all`). */
function affinityScore(policy: PlacementPolicy, c: MemberCluster, all: MemberCluster[]): number {
  let score = 0;
  for (const p of policy.affinity?.clusterAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []) {
    if (!p.weight) continue;
    const matched = !p.preference.labelSelector || matchesLabelSelector(p.preference.labelSelector as LabelSelectorInput, c.labels);
    if (!matched) continue;
    const sorter = p.preference.propertySorter;
    if (!sorter) {
      score += p.weight;
      continue;
    }
    const value = tryParseQuantity(c.properties[sorter.name]);
    if (value === undefined) continue;
    const values = all.map((x) => tryParseQuantity(x.properties[sorter.name])).filter((v): v is number => v !== undefined);
    const min = Math.min(...values);
    const max = Math.max(...values);
    if (min === max) continue;
    const f = (value - min) / (max - min);
    score += Math.round((sorter.sortOrder === "Descending" ? f : 1 - f) * p.weight);
  }
  return score;
}

interface Scored {
  cluster: MemberCluster;
  spread: number;
  affinity: number;
  obsolete: number;
}

/** KubeFleet's `ClusterScore.Less` with `ScoredClusters.Less`'s tie on names, reversed (the best first). */
function better(a: Scored, b: Scored): number {
  if (a.spread !== b.spread) return b.spread - a.spread;
  if (a.affinity !== b.affinity) return b.affinity - a.affinity;
  if (a.obsolete !== b.obsolete) return b.obsolete - a.obsolete;
  return a.cluster.name < b.cluster.name ? 1 : a.cluster.name > b.cluster.name ? -1 : 0;
}

/**
 * Picks `n` of `candidates`, one at a time, honouring `topologySpreadConstraints`: a constraint
 * `DoNotSchedule` never lets the domains' counts (clusters picked per value of its topologyKey)
 * differ by more than `maxSkew`, and filters clusters without the key; `ScheduleAnyway` prefers
 * the least filled domain. Among clusters equal on spread, the best score wins.
 */
function pickSpread(policy: PlacementPolicy, candidates: Scored[], n: number, kept: MemberCluster[]): Scored[] {
  const constraints = policy.topologySpreadConstraints ?? [];
  if (constraints.length === 0) return [...candidates].sort(better).slice(0, Math.max(0, n));
  const picked: Scored[] = [];
  const counts = constraints.map((tc) => {
    const m = new Map<string, number>();
    for (const c of candidates) {
      const v = c.cluster.labels[tc.topologyKey];
      if (v !== undefined) m.set(v, 0);
    }
    for (const c of kept) {
      const v = c.labels[tc.topologyKey];
      if (v !== undefined) m.set(v, (m.get(v) ?? 0) + 1);
    }
    return m;
  });
  let pool = candidates.filter((c) => constraints.every((tc) => tc.whenUnsatisfiable === "ScheduleAnyway" || c.cluster.labels[tc.topologyKey] !== undefined));
  while (picked.length < n && pool.length > 0) {
    let best: Scored | undefined;
    for (const c of pool) {
      let spread = 0;
      let allowed = true;
      constraints.forEach((tc, i) => {
        const v = c.cluster.labels[tc.topologyKey];
        if (v === undefined) return;
        const m = counts[i]!;
        const after = (m.get(v) ?? 0) + 1;
        const min = Math.min(...[...m.entries()].map(([k, x]) => (k === v ? after : x)));
        const skew = after - min;
        if (skew > (tc.maxSkew ?? 1) && (tc.whenUnsatisfiable ?? "DoNotSchedule") === "DoNotSchedule") allowed = false;
        spread -= skew;
      });
      if (!allowed) continue;
      const s = { ...c, spread };
      if (!best || better(s, best) < 0) best = s;
    }
    if (!best) break;
    picked.push(best);
    pool = pool.filter((c) => c.cluster.name !== best!.cluster.name);
    constraints.forEach((tc, i) => {
      const v = best!.cluster.labels[tc.topologyKey];
      if (v !== undefined) counts[i]!.set(v, (counts[i]!.get(v) ?? 0) + 1);
    });
  }
  return picked;
}

/** KubeFleet's `resourceScheduleSucceeded(WithScore)MessageFormat`. */
function pickedReason(name: string, score?: { affinity: number; spread: number }): string {
  return score
    ? `Successfully scheduled resources for placement in "${name}" (affinity score: ${score.affinity}, topology spread score: ${score.spread}): picked by scheduling policy`
    : `Successfully scheduled resources for placement in "${name}": picked by scheduling policy`;
}

const byName = (a: ClusterDecision, b: ClusterDecision) => (a.clusterName < b.clusterName ? -1 : a.clusterName > b.clusterName ? 1 : 0);
const NOT_SELECTED_KEPT = 20;

/**
 * Schedules a placement's `policy` (defaults applied) onto `clusters`. `current` are the clusters
 * the placement has now (its bindings); `policyChanged` whether the policy differs from the one
 * they were picked by.
 */
export function schedulePlacement(policy: PlacementPolicy, clusters: MemberCluster[], current: ReadonlySet<string>, policyChanged: boolean): ScheduleResult {
  const type = policy.placementType ?? "PickAll";
  const byClusterName = new Map(clusters.map((c) => [c.name, c]));
  const notSelected: ClusterDecision[] = [];
  const finish = (selected: ClusterDecision[], desired: number): ScheduleResult => ({
    selected: selected.sort(byName),
    notSelected: notSelected.sort(byName).slice(0, NOT_SELECTED_KEPT),
    desired,
  });

  if (type === "PickFixed") {
    const selected: ClusterDecision[] = [];
    for (const name of policy.clusterNames ?? []) {
      const c = byClusterName.get(name);
      if (!c) notSelected.push({ clusterName: name, selected: false, reason: `Specified cluster "${name}" is not found` });
      else if (!c.eligible && !(current.has(name) && !c.leaving))
        notSelected.push({
          clusterName: name,
          selected: false,
          reason: `Cluster "${name}" is not eligible for resource placement yet: ${c.leaving ? "cluster is leaving the fleet" : "cluster has not joined or is not available"}`,
        });
      else selected.push({ clusterName: name, selected: true, reason: pickedReason(name) });
    }
    return finish(selected, (policy.clusterNames ?? []).length);
  }

  // Clusters the placement keeps (IgnoredDuringExecution) while its policy is unchanged.
  const kept = policyChanged ? [] : [...current].map((n) => byClusterName.get(n)).filter((c): c is MemberCluster => c !== undefined && !c.leaving);
  const keptNames = new Set(kept.map((c) => c.name));
  const candidates: Scored[] = [];
  for (const c of clusters) {
    if (keptNames.has(c.name)) continue;
    const why = filterReason(policy, c);
    if (why) {
      if (!c.leaving) notSelected.push({ clusterName: c.name, selected: false, reason: why });
      continue;
    }
    candidates.push({ cluster: c, spread: 0, affinity: type === "PickN" ? affinityScore(policy, c, clusters) : 0, obsolete: current.has(c.name) ? 1 : 0 });
  }
  const decision = (s: Scored): ClusterDecision => ({
    clusterName: s.cluster.name,
    selected: true,
    clusterScore: { affinityScore: s.affinity, priorityScore: s.spread },
    reason: type === "PickAll" ? pickedReason(s.cluster.name) : pickedReason(s.cluster.name, s),
  });
  const keptDecisions = kept.map((c) => ({ clusterName: c.name, selected: true, reason: pickedReason(c.name) }));
  if (type === "PickAll") return finish([...keptDecisions, ...candidates.map(decision)], kept.length + candidates.length);

  const n = policy.numberOfClusters ?? 0;
  if (kept.length >= n) {
    // numberOfClusters fell: keep the best scored of the clusters it has.
    const scoredKept = kept
      .map((c) => ({ cluster: c, spread: 0, affinity: affinityScore(policy, c, clusters), obsolete: 1 }))
      .sort(better)
      .slice(0, n);
    return finish(scoredKept.map(decision), n);
  }
  candidates.sort(better);
  const picked = pickSpread(policy, candidates, n - kept.length, kept);
  const pickedNames = new Set(picked.map((p) => p.cluster.name));
  for (const c of candidates)
    if (!pickedNames.has(c.cluster.name))
      notSelected.push({
        clusterName: c.cluster.name,
        selected: false,
        clusterScore: { affinityScore: c.affinity, priorityScore: c.spread },
        reason: `Cluster "${c.cluster.name}" does not score high enough (affinity score: ${c.affinity}, topology spread score: ${c.spread})`,
      });
  return finish([...keptDecisions, ...picked.map(decision)], n);
}
