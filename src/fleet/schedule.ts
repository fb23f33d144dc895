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
  /** Its taints; `timeAdded` (RFC 3339, stamped by the hub) dates a toleration's `tolerationSeconds`. */
  taints: FleetTaint[];
  /** When it was read (epoch ms, the injected clock): a toleration with `tolerationSeconds` tolerates a taint until `timeAdded` plus that. */
  observedAt?: number;
  /** May get new placements: accepted by the hub, not being deleted, not known unavailable (ManagedClusterConditionAvailable not False). */
  eligible: boolean;
  /** Why it is not eligible, in KubeFleet's words (its `ClusterEligibilityChecker.IsEligible` reasons); absent when eligible. */
  ineligibleReason?: string;
  /** Being deleted, or no longer accepted (`hubAcceptsClient` not true): loses its placements. */
  leaving: boolean;
}

/** A ManagedCluster's taint as the scheduler reads it. */
export interface FleetTaint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string | null;
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
 * Why a ManagedCluster is not eligible, as KubeFleet's `ClusterEligibilityChecker.IsEligible`
 * words it for a MemberCluster: being deleted is KubeFleet's "left the fleet"; not accepted by the
 * hub (`hubAcceptsClient` not true) its member agent "not joined yet"; `ManagedClusterConditionAvailable`
 * False its agent reporting the cluster unhealthy (minutes since the condition's transition, at
 * `nowMs`). Null when eligible.
 */
function ineligibleReasonOf(mc: KubeObject, nowMs: number): string | null {
  if (mc.metadata.deletionTimestamp) return "cluster has left the fleet";
  if ((mc.spec as { hubAcceptsClient?: boolean } | undefined)?.hubAcceptsClient !== true)
    return "cluster is not connected to the fleet: member agent not joined yet";
  const available = ((mc.status?.conditions ?? []) as { type: string; status: string; lastTransitionTime?: string }[]).find(
    (c) => c.type === "ManagedClusterConditionAvailable",
  );
  if (available?.status === "False") {
    const since = available.lastTransitionTime ? Math.max(0, nowMs - Date.parse(available.lastTransitionTime)) : 0;
    return `cluster is not connected to the fleet: unhealthy for a prolonged period of time (last transitioned ${(since / 60_000).toFixed(2)} minutes ago)`;
  }
  return null;
}

/**
 * A ManagedCluster as a KubeFleet member cluster (docs/kubefleet.md): labels plus the member
 * name label, properties from `status.capacity`, `status.allocatable` and `status.clusterClaims`;
 * `nowMs` (epoch ms, from the injected clock) dates an unhealthy cluster's reason.
 */
export function memberClusterOf(mc: KubeObject, nowMs: number): MemberCluster {
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
  const spec = (mc.spec ?? {}) as { hubAcceptsClient?: boolean; taints?: FleetTaint[] };
  const leaving = !!mc.metadata.deletionTimestamp || spec.hubAcceptsClient !== true;
  const available = conditionStatus(mc, "ManagedClusterConditionAvailable");
  const eligible = !leaving && available !== "False";
  const why = eligible ? null : ineligibleReasonOf(mc, nowMs);
  return {
    name: mc.metadata.name,
    labels: { ...(mc.metadata.labels ?? {}), [MEMBER_CLUSTER_NAME_LABEL]: mc.metadata.name },
    properties,
    taints: spec.taints ?? [],
    observedAt: nowMs,
    eligible,
    ...(why ? { ineligibleReason: why } : {}),
    leaving,
  };
}

/** KubeFleet's `canTolerationTolerateTaint`; Flotilla's taints of effect NoSelect and NoSelectIfNew are KubeFleet's NoSchedule. */
export function tolerationMatches(taint: FleetTaint, t: FleetToleration): boolean {
  const effect = taint.effect === "NoSelect" || taint.effect === "NoSelectIfNew" ? "NoSchedule" : taint.effect;
  const effectOk = !t.effect || t.effect === effect;
  if ((t.operator ?? "Equal") === "Exists") return (!t.key || t.key === taint.key) && effectOk;
  return t.key === taint.key && (t.value ?? "") === (taint.value ?? "") && effectOk;
}

/**
 * Until when toleration `t` tolerates `taint` (epoch ms; `Infinity` for good), or null when it
 * does not match: Flotilla's `tolerationSeconds`, as OCM's (`plugins/tainttoleration`
 * `isTolerated`), tolerates a matching taint until its `timeAdded` plus that many seconds (a taint
 * without `timeAdded` counts from Go's zero time, so at once, as OCM's).
 */
export function toleratedUntil(taint: FleetTaint, t: FleetToleration): number | null {
  if (!tolerationMatches(taint, t)) return null;
  if (t.tolerationSeconds === undefined || t.tolerationSeconds === null) return Infinity;
  const added = taint.timeAdded ? Date.parse(taint.timeAdded) : Number.NaN;
  return (Number.isNaN(added) ? -62135596800000 : added) + t.tolerationSeconds * 1000;
}

/**
 * The first taint (NoSelect or NoSelectIfNew) none of `tolerations` tolerates, or undefined; with
 * `tolerationSeconds` the first toleration that matches decides, and only until it expires (at the
 * cluster's `observedAt`).
 */
export function untoleratedTaint(c: MemberCluster, tolerations: FleetToleration[] | undefined) {
  const now = c.observedAt ?? 0;
  return c.taints.find((taint) => {
    if (taint.effect === "PreferNoSelect") return false;
    for (const t of tolerations ?? []) {
      const until = toleratedUntil(taint, t);
      if (until !== null) return now >= until;
    }
    return true;
  });
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

/** What KubeFleet's scheduler puts before a filter plugin's reason (`Status.String()` of a ClusterUnschedulable status). */
const UNSCHEDULABLE = "ClusterUnschedulable, ";

/**
 * Why `c` is filtered out, or null when it passes: the first failing filter plugin in KubeFleet's
 * profile order (clusteraffinity, clustereligibility, tainttoleration), worded as its
 * `Status.String()` (`ClusterUnschedulable, <reason>`; a taint printed as Go's `%+v` of a `*Taint`).
 */
function filterReason(policy: PlacementPolicy, c: MemberCluster): string | null {
  if (!passesRequired(policy, c)) return `${UNSCHEDULABLE}cluster does not match with any of the required cluster affinity terms`;
  if (!c.eligible) return `${UNSCHEDULABLE}${c.ineligibleReason ?? "cluster is not connected to the fleet: member agent not joined yet"}`;
  const taint = untoleratedTaint(c, policy.tolerations);
  if (taint) return `${UNSCHEDULABLE}taint &{Key:${taint.key} Value:${taint.value ?? ""} Effect:${taint.effect}} cannot be tolerated`;
  return null;
}

/** Go's `math.Round`: half away from zero (JavaScript's `Math.round` rounds -2.5 to -2, Go to -3). */
const goRound = (x: number) => Math.sign(x) * Math.round(Math.abs(x));

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
    score += goRound((sorter.sortOrder === "Descending" ? f : 1 - f) * p.weight);
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

/** KubeFleet's topology spread plugin: `skewChangeScoreFactor` and `maxSkewViolationPenality`. */
const SKEW_CHANGE_SCORE_FACTOR = -1;
const MAX_SKEW_VIOLATION_PENALTY = 1000;

/** KubeFleet's `bindingCounterByDomain`: placed clusters per value of a topology key, and its extremes. */
interface DomainCounter {
  counter: Map<string, number>;
  smallest: number;
  secondSmallest: number;
  largest: number;
}

/**
 * KubeFleet's `countByDomain`: every cluster of the fleet with the topology key registers its
 * domain (so a domain of ineligible clusters counts as empty); the clusters in `placed` count.
 */
function countByDomain(all: readonly MemberCluster[], placed: ReadonlySet<string>, key: string): DomainCounter {
  const counter = new Map<string, number>();
  for (const c of all) {
    const v = c.labels[key];
    if (v === undefined) continue;
    counter.set(v, (counter.get(v) ?? 0) + (placed.has(c.name) ? 1 : 0));
  }
  const sorted = [...counter.values()].sort((a, b) => a - b);
  if (sorted.length === 0) return { counter, smallest: -1, secondSmallest: -1, largest: -1 };
  if (sorted.length === 1 || (sorted.length === 2 && sorted[0] === sorted[1]))
    return { counter, smallest: sorted[0]!, secondSmallest: sorted[0]!, largest: sorted[0]! };
  return { counter, smallest: sorted[0]!, secondSmallest: sorted[1]!, largest: sorted[sorted.length - 1]! };
}

/** KubeFleet's `willViolate`: whether one more cluster in `domain` takes the skew over `maxSkew`, and how it changes the skew. */
function willViolate(d: DomainCounter, domain: string, maxSkew: number): { violated: boolean; skewChange: number } {
  const count = d.counter.get(domain) ?? 0;
  const skew = d.largest - d.smallest;
  if (d.largest === d.smallest) return { violated: skew + 1 > maxSkew, skewChange: 1 };
  if (count === d.smallest && d.smallest !== d.secondSmallest) return { violated: skew - 1 > maxSkew, skewChange: -1 };
  if (count === d.largest) return { violated: skew + 1 > maxSkew, skewChange: 1 };
  return { violated: skew > maxSkew, skewChange: 0 };
}

/**
 * KubeFleet's `evaluateAllConstraints` for `candidates`, given the clusters `placed` so far: the
 * clusters a `DoNotSchedule` constraint filters (with its reason), and every other one's
 * topology spread score (`-skewChange` per constraint; a `ScheduleAnyway` constraint it would
 * break costs 1000). A cluster without a constraint's topology key is neither filtered nor scored by it.
 */
function evaluateSpread(
  policy: PlacementPolicy,
  all: readonly MemberCluster[],
  placed: ReadonlySet<string>,
  candidates: readonly Scored[],
): { violations: Map<string, string>; scores: Map<string, number> } {
  const violations = new Map<string, string>();
  const scores = new Map<string, number>();
  const constraints = policy.topologySpreadConstraints ?? [];
  const doNotSchedule = constraints.filter((tc) => tc.whenUnsatisfiable !== "ScheduleAnyway");
  const scheduleAnyway = constraints.filter((tc) => tc.whenUnsatisfiable === "ScheduleAnyway");
  for (const tc of doNotSchedule) {
    const d = countByDomain(all, placed, tc.topologyKey);
    const maxSkew = tc.maxSkew ?? 1;
    for (const { cluster } of candidates) {
      if (violations.has(cluster.name)) continue;
      const v = cluster.labels[tc.topologyKey];
      if (v === undefined) {
        scores.set(cluster.name, scores.get(cluster.name) ?? 0);
        continue;
      }
      const { violated, skewChange } = willViolate(d, v, maxSkew);
      if (violated) {
        violations.set(
          cluster.name,
          `${UNSCHEDULABLE}violated doNotSchedule topology spread constraint ${JSON.stringify(tc.topologyKey)} (max skew ${maxSkew})`,
        );
        scores.delete(cluster.name);
        continue;
      }
      scores.set(cluster.name, (scores.get(cluster.name) ?? 0) + skewChange * SKEW_CHANGE_SCORE_FACTOR);
    }
  }
  for (const tc of scheduleAnyway) {
    const d = countByDomain(all, placed, tc.topologyKey);
    for (const { cluster } of candidates) {
      if (violations.has(cluster.name)) continue;
      const v = cluster.labels[tc.topologyKey];
      if (v === undefined) {
        scores.set(cluster.name, scores.get(cluster.name) ?? 0);
        continue;
      }
      const { violated, skewChange } = willViolate(d, v, tc.maxSkew ?? 1);
      const change = violated ? -MAX_SKEW_VIOLATION_PENALTY : skewChange * SKEW_CHANGE_SCORE_FACTOR;
      scores.set(cluster.name, (scores.get(cluster.name) ?? 0) + change);
    }
  }
  return { violations, scores };
}

/**
 * Picks `n` of `candidates` (best first). Without `topologySpreadConstraints`, the `n` best at
 * once. With them, as KubeFleet's scheduler (its topology spread plugin limits a scheduling cycle
 * to one pick, `PostBatch`): one at a time, each time re-evaluating the constraints over the
 * fleet `all` with the clusters `kept` and picked so far placed. Returns the picked clusters
 * (with the spread score of the cycle that picked them) and the last cycle's view of the others:
 * their reasons when a constraint filtered them, else their scores.
 */
function pickN(
  policy: PlacementPolicy,
  candidates: Scored[],
  n: number,
  kept: readonly MemberCluster[],
  all: readonly MemberCluster[],
): { picked: Scored[]; others: Scored[]; filtered: Map<string, string> } {
  if ((policy.topologySpreadConstraints ?? []).length === 0) {
    const sorted = [...candidates].sort(better);
    return { picked: sorted.slice(0, Math.max(0, n)), others: sorted.slice(Math.max(0, n)), filtered: new Map() };
  }
  const placed = new Set(kept.map((c) => c.name));
  const picked: Scored[] = [];
  let pool = [...candidates];
  let last = { others: pool, filtered: new Map<string, string>() };
  while (picked.length < n && pool.length > 0) {
    const { violations, scores } = evaluateSpread(policy, all, placed, pool);
    const scored = pool.filter((c) => !violations.has(c.cluster.name)).map((c) => ({ ...c, spread: scores.get(c.cluster.name) ?? 0 }));
    scored.sort(better);
    const best = scored[0];
    last = { others: scored.slice(best ? 1 : 0), filtered: violations };
    if (!best) break;
    picked.push(best);
    placed.add(best.cluster.name);
    pool = pool.filter((c) => c.cluster.name !== best.cluster.name);
  }
  return { picked, ...last };
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
 * the placement has now (its bindings), `stored` their bindings' decisions (`spec.clusterDecision`,
 * with the scores they were picked with); `policyChanged` whether the policy differs from the one
 * they were picked by. The decisions not selected come in KubeFleet's order (a policy snapshot's
 * `targetClusters`): PickN's clusters not picked (best scored first), then those filtered out (by
 * name); PickFixed's ineligible names, then those not found (in `clusterNames` order); at most 20.
 */
export function schedulePlacement(
  policy: PlacementPolicy,
  clusters: MemberCluster[],
  current: ReadonlySet<string>,
  policyChanged: boolean,
  stored: ReadonlyMap<string, ClusterDecision> = new Map(),
): ScheduleResult {
  const type = policy.placementType ?? "PickAll";
  const byClusterName = new Map(clusters.map((c) => [c.name, c]));
  const finish = (selected: ClusterDecision[], desired: number, notSelected: ClusterDecision[]): ScheduleResult => ({
    selected: selected.sort(byName),
    notSelected: notSelected.slice(0, NOT_SELECTED_KEPT),
    desired,
  });

  if (type === "PickFixed") {
    const selected: ClusterDecision[] = [];
    const invalid: ClusterDecision[] = [];
    const notFound: ClusterDecision[] = [];
    for (const name of policy.clusterNames ?? []) {
      const c = byClusterName.get(name);
      if (!c) notFound.push({ clusterName: name, selected: false, reason: `Specified cluster "${name}" is not found` });
      else if (!c.eligible && !(current.has(name) && !c.leaving))
        invalid.push({
          clusterName: name,
          selected: false,
          reason: `Cluster "${name}" is not eligible for resource placement yet: ${c.ineligibleReason ?? "cluster is not connected to the fleet: member agent not joined yet"}`,
        });
      else selected.push({ clusterName: name, selected: true, reason: pickedReason(name) });
    }
    return finish(selected, (policy.clusterNames ?? []).length, [...invalid, ...notFound]);
  }

  // Clusters the placement keeps (IgnoredDuringExecution) while its policy is unchanged.
  const kept = policyChanged ? [] : [...current].map((n) => byClusterName.get(n)).filter((c): c is MemberCluster => c !== undefined && !c.leaving);
  const keptNames = new Set(kept.map((c) => c.name));
  const candidates: Scored[] = [];
  const filteredOut: ClusterDecision[] = [];
  for (const c of clusters) {
    if (keptNames.has(c.name)) continue;
    const why = filterReason(policy, c);
    if (why) {
      filteredOut.push({ clusterName: c.name, selected: false, reason: why });
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
  // A kept cluster's decision is its binding's (KubeFleet keeps a bound binding's decision).
  const keptDecision = (c: MemberCluster): ClusterDecision => {
    const d = stored.get(c.name);
    return d?.selected ? { ...d, clusterName: c.name } : { clusterName: c.name, selected: true, reason: pickedReason(c.name) };
  };
  if (type === "PickAll") return finish([...kept.map(keptDecision), ...candidates.map(decision)], kept.length + candidates.length, filteredOut.sort(byName));

  const n = policy.numberOfClusters ?? 0;
  if (kept.length >= n) {
    // numberOfClusters fell: KubeFleet's downscale drops the lowest scored first (the scores the
    // bindings were picked with; one without a score first; on a tie the smaller name first).
    const score = (c: MemberCluster) => stored.get(c.name)?.clusterScore;
    const ranked = [...kept].sort((a, b) => {
      const sa = score(a);
      const sb = score(b);
      if (sa && !sb) return -1;
      if (!sa && sb) return 1;
      if (sa && sb) {
        const spread = (sb.priorityScore ?? 0) - (sa.priorityScore ?? 0);
        if (spread !== 0) return spread;
        const affinity = (sb.affinityScore ?? 0) - (sa.affinityScore ?? 0);
        if (affinity !== 0) return affinity;
      }
      return a.name < b.name ? 1 : a.name > b.name ? -1 : 0;
    });
    return finish(ranked.slice(0, n).map(keptDecision), n, filteredOut.sort(byName));
  }
  const { picked, others, filtered } = pickN(policy, candidates, n - kept.length, kept, clusters);
  for (const [clusterName, reason] of filtered) filteredOut.push({ clusterName, selected: false, reason });
  const notPicked = others.map((c) => ({
    clusterName: c.cluster.name,
    selected: false,
    clusterScore: { affinityScore: c.affinity, priorityScore: c.spread },
    reason: `Cluster "${c.cluster.name}" does not score high enough (affinity score: ${c.affinity}, topology spread score: ${c.spread})`,
  }));
  return finish([...kept.map(keptDecision), ...picked.map(decision)], n, [...notPicked, ...filteredOut.sort(byName)]);
}
