/**
 * Placement `spec.spreadPolicy`: the selection step that spreads the picks over topologies.
 *
 * Semantics are those of OCM's accepted design for spread policy (enhancement 70,
 * "Spread Policy across Failure-domains in Placement APIs", the `EvenSpreadSelector`),
 * which the `cluster.open-cluster-management.io/v1beta1` Placement API carries
 * (`SpreadConstraintsTerm`, and the `Spread` built-in prioritizer). Upstream OCM's
 * scheduler stores the field and reads nothing of it (OCM 00f84c3); this module builds
 * the design as written, including its worked example (see test/unit/scheduling.test.ts).
 *
 * Pure: no I/O, no clock.
 *
 * @module
 */

import { compareNames } from "./grouping.ts";
import type { SchedulingCluster, SpreadConstraint } from "./types.ts";

/** Default `maxSkew` of a spread constraint (CRD default). */
export const DEFAULT_MAX_SKEW = 1;
/** Default `whenUnsatisfiable` of a spread constraint (CRD default). */
export const DEFAULT_WHEN_UNSATISFIABLE = "ScheduleAnyway";
/** Weight of the `Spread` built-in prioritizer in Additive mode when the spec does not set one. */
export const DEFAULT_SPREAD_WEIGHT = 2;
/** Largest per-term spread score; one term takes 6 bits of the combined score. */
const TERM_SCORE_MAX = 63;
const TERM_BITS = 64;

/**
 * Checks a spread constraint list the way the CRD does (kept here so a spec that skipped
 * admission is still Misconfigured rather than silently reinterpreted).
 *
 * @returns an error message, or undefined when valid.
 */
export function validateSpreadConstraints(terms: readonly SpreadConstraint[]): string | undefined {
  if (terms.length > 8) return "spec.spreadPolicy.spreadConstraints: Too many: must have at most 8 items";
  for (let i = 0; i < terms.length; i++) {
    const t = terms[i]!;
    const f = `spec.spreadPolicy.spreadConstraints[${i}]`;
    if (typeof t.topologyKey !== "string" || t.topologyKey === "") return `${f}.topologyKey: Required value`;
    if (t.topologyKeyType !== "Label" && t.topologyKeyType !== "Claim") return `${f}.topologyKeyType: Unsupported value: ${JSON.stringify(t.topologyKeyType)}`;
    const skew = t.maxSkew ?? DEFAULT_MAX_SKEW;
    if (!Number.isInteger(skew) || skew < 1) return `${f}.maxSkew in body should be greater than or equal to 1`;
    const w = t.whenUnsatisfiable ?? DEFAULT_WHEN_UNSATISFIABLE;
    if (w !== "DoNotSchedule" && w !== "ScheduleAnyway") return `${f}.whenUnsatisfiable: Unsupported value: ${JSON.stringify(w)}`;
  }
  return undefined;
}

function own(rec: Readonly<Record<string, string>> | undefined, key: string): string | undefined {
  return rec !== undefined && Object.hasOwn(rec, key) ? rec[key] : undefined;
}

/** A cluster's value for one term: its label or its claim; undefined when it has none. */
function topologyValue(c: SchedulingCluster, t: SpreadConstraint): string | undefined {
  return own(t.topologyKeyType === "Claim" ? c.claims : c.labels, t.topologyKey);
}

/** Per term: the parent (prefix up to the term before) of every domain, and the domains of each parent. */
interface Level {
  hard: boolean;
  maxSkew: number;
  /** parent key → the domain keys under it. */
  siblings: Map<string, string[]>;
}

/** Clusters sharing every topology value: they get the same spread score. */
interface Group {
  /** Per term: the domain key, undefined when the cluster has no value for that term. */
  domains: (string | undefined)[];
  /** Per term: the parent key of the domain. */
  parents: string[];
  /** Member indices, best first (total descending, then name). */
  members: number[];
  next: number;
}

/**
 * The spread selection (OCM enhancement 70's `EvenSpreadSelector`): picks up to `k`
 * clusters one at a time (`selectOne`), each time:
 * 1. excluding every cluster whose pick would make a `DoNotSchedule` term's skew exceed
 *    its `maxSkew`: with c the selected count of the cluster's topology and min the
 *    smallest selected count among that topology's siblings, excluded when
 *    `c + 1 − min > maxSkew` (Kubernetes PodTopologySpread's rule). Siblings are the
 *    topologies of the term that share the values of every earlier term (the design's
 *    "topology tuples": zones are compared within their region), over all feasible
 *    clusters, selected or not, so a topology whose clusters are all picked still holds
 *    the minimum down and DoNotSchedule may select fewer than `k`;
 * 2. scoring each remaining cluster per term in [0, 63]: `trunc(63 × (max − c) / (max − min))`
 *    over the sibling counts (0 when all siblings have the same count, and 0 for a
 *    cluster without the topology key), combining the terms with the first one most
 *    significant (`score₀ << 6(m−1) + … + score_{m−1}`), then normalizing over the
 *    remaining clusters to [−100, 100] as OCM normalizes prioritizer scores
 *    (`trunc(((s − min)/(max − min) − 0.5) × 200)`, 0 when all are equal);
 * 3. picking the highest `prioritizer total + weight × spread score`, ties by name.
 *
 * A cluster without the topology key of a `DoNotSchedule` term is never selected (as
 * Kubernetes' PodTopologySpread filter skips nodes without the key); for a
 * `ScheduleAnyway` term such a cluster forms no topology and scores 0 for it.
 *
 * Cost: O(k × g × m) after grouping, g the number of distinct topology tuples, m the
 * number of terms (≤ 8), so a fleet of 100,000 clusters in a few dozen zones is cheap.
 *
 * @param clusters the feasible clusters (after the filters).
 * @param total each cluster's prioritizer total (Σ weight × score), index-aligned.
 * @param k how many to pick at most (numberOfClusters, or all).
 * @param terms the spread constraints, already validated ({@link validateSpreadConstraints}).
 * @param weight the weight of the `Spread` prioritizer (0 keeps only the DoNotSchedule limits).
 * @returns the picked indices, in pick order.
 */
export function spreadSelect(
  clusters: readonly SchedulingCluster[],
  total: Float64Array,
  k: number,
  terms: readonly SpreadConstraint[],
  weight: number,
): number[] {
  const m = terms.length;
  const levels: Level[] = terms.map((t) => ({
    hard: (t.whenUnsatisfiable ?? DEFAULT_WHEN_UNSATISFIABLE) === "DoNotSchedule",
    maxSkew: t.maxSkew ?? DEFAULT_MAX_SKEW,
    siblings: new Map(),
  }));
  const groups = new Map<string, Group>();
  for (let i = 0; i < clusters.length; i++) {
    const values = terms.map((t) => topologyValue(clusters[i]!, t));
    if (values.some((v, j) => v === undefined && levels[j]!.hard)) continue;
    const tuple = JSON.stringify(values.map((v) => v ?? null));
    let g = groups.get(tuple);
    if (!g) {
      const domains: (string | undefined)[] = [];
      const parents: string[] = [];
      for (let j = 0; j < m; j++) {
        const parent = JSON.stringify(values.slice(0, j).map((v) => v ?? null));
        parents.push(parent);
        if (values[j] === undefined) {
          domains.push(undefined);
          continue;
        }
        const domain = JSON.stringify(values.slice(0, j + 1).map((v) => v ?? null));
        domains.push(domain);
        const sib = levels[j]!.siblings;
        const list = sib.get(parent);
        if (!list) sib.set(parent, [domain]);
        else if (!list.includes(domain)) list.push(domain);
      }
      g = { domains, parents, members: [], next: 0 };
      groups.set(tuple, g);
    }
    g.members.push(i);
  }
  const byScore = (a: number, b: number): number => total[b]! - total[a]! || compareNames(clusters[a]!.name, clusters[b]!.name);
  for (const g of groups.values()) g.members.sort(byScore);

  const counts = new Map<string, number>();
  const countOf = (d: string): number => counts.get(d) ?? 0;
  const siblingRange = (j: number, parent: string): [number, number] => {
    let min = Infinity;
    let max = -Infinity;
    for (const d of levels[j]!.siblings.get(parent)!) {
      const c = countOf(d);
      if (c < min) min = c;
      if (c > max) max = c;
    }
    return [min, max];
  };

  const picked: number[] = [];
  const all = [...groups.values()];
  while (picked.length < k) {
    const candidates: { g: Group; raw: number }[] = [];
    for (const g of all) {
      if (g.next >= g.members.length) continue;
      let ok = true;
      let raw = 0;
      for (let j = 0; j < m; j++) {
        raw *= TERM_BITS;
        const d = g.domains[j];
        if (d === undefined) continue;
        const [min, max] = siblingRange(j, g.parents[j]!);
        const c = countOf(d);
        const level = levels[j]!;
        if (level.hard && c + 1 - min > level.maxSkew) {
          ok = false;
          break;
        }
        if (max !== min) raw += Math.trunc((TERM_SCORE_MAX * (max - c)) / (max - min));
      }
      if (ok) candidates.push({ g, raw });
    }
    if (candidates.length === 0) break;
    let rmin = Infinity;
    let rmax = -Infinity;
    for (const c of candidates) {
      if (c.raw < rmin) rmin = c.raw;
      if (c.raw > rmax) rmax = c.raw;
    }
    let best: Group | undefined;
    let bestScore = -Infinity;
    let bestIndex = -1;
    for (const c of candidates) {
      const norm = rmax === rmin ? 0 : Math.trunc(((c.raw - rmin) / (rmax - rmin) - 0.5) * 200);
      const i = c.g.members[c.g.next]!;
      const score = total[i]! + weight * norm;
      if (score > bestScore || (score === bestScore && compareNames(clusters[i]!.name, clusters[bestIndex]!.name) < 0)) {
        best = c.g;
        bestScore = score;
        bestIndex = i;
      }
    }
    best!.next++;
    picked.push(bestIndex);
    for (const d of best!.domains) if (d !== undefined) counts.set(d, countOf(d) + 1);
  }
  return picked;
}
