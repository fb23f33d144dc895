/**
 * OCM's prioritizers (`pkg/placement/plugins/{balance,steady,resource,addon}`) as pure
 * functions over the feasible clusters. Each returns one integer score per cluster,
 * index-aligned with its input, or `NaN` where the prioritizer gives no score (which
 * adds nothing to the total, like a missing map entry in OCM).
 *
 * @module
 */

import { tryParseQuantity } from "../k8s/quantity.ts";
import type { AddOnPlacementScoreInput, DecisionCountLookup, DecisionCounts, SchedulingCluster } from "./types.ts";

/** OCM's `plugins.MaxClusterScore`. */
export const MAX_CLUSTER_SCORE = 100;

function own<T>(rec: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return rec !== undefined && Object.hasOwn(rec, key) ? rec[key] : undefined;
}

// Own string / number properties only: inherited Object.prototype members are never
// strings or numbers, so a typeof check is as safe as Object.hasOwn and faster.
function ownString(rec: Readonly<Record<string, string>> | undefined, key: string): string | undefined {
  if (rec === undefined) return undefined;
  const v: unknown = rec[key];
  return typeof v === "string" ? v : undefined;
}

function ownNumber(rec: Readonly<Record<string, number>>, key: string): number | undefined {
  const v: unknown = rec[key];
  return typeof v === "number" ? v : undefined;
}

/**
 * Balance: a cluster with no decisions from other placements scores 100; otherwise
 * `2 × trunc(100 × (0.5 − count/maxCount))` in float64, where `maxCount` is the largest
 * count over every cluster in `counts` (feasible or not). count == max → −100,
 * count == max/2 → 0, 1 of 3 → 32, 2 of 3 → −32.
 *
 * @param counts cluster → decisions of other placements (a Map is faster for large
 *   fleets: iterating a 30,000-key object costs about 10 ms; a lookup with its
 *   `maxCount` reads only the scored clusters); entries ≤ 0 count as absent.
 */
export function balanceScores(clusters: readonly SchedulingCluster[], counts: DecisionCounts | undefined): Float64Array {
  const out = new Float64Array(clusters.length).fill(MAX_CLUSTER_SCORE);
  if (!counts) return out;
  const lookup = isLookup(counts) ? counts : undefined;
  const map = counts instanceof Map ? (counts as ReadonlyMap<string, number>) : undefined;
  let maxCount = 0;
  if (lookup) maxCount = lookup.maxCount;
  else if (map) {
    for (const c of map.values()) if (c > maxCount) maxCount = c;
  } else {
    for (const c of Object.values(counts)) if (c > maxCount) maxCount = c;
  }
  if (maxCount <= 0) return out;
  for (let i = 0; i < clusters.length; i++) {
    const name = clusters[i]!.name;
    const count = lookup ? lookup.countOf(name) : map ? map.get(name) : ownNumber(counts as Readonly<Record<string, number>>, name);
    if (count === undefined || !(count > 0)) continue;
    const usage = count / maxCount;
    out[i] = 2 * Math.trunc(MAX_CLUSTER_SCORE * (0.5 - usage)) + 0;
  }
  return out;
}

// A plain count record holds numbers only, so a `countOf` function marks a lookup.
function isLookup(counts: DecisionCounts): counts is DecisionCountLookup {
  return typeof (counts as Partial<DecisionCountLookup>).countOf === "function";
}

/** Steady: 100 for a cluster in the placement's existing decisions, else 0. */
export function steadyScores(clusters: readonly SchedulingCluster[], existing: ReadonlySet<string>): Float64Array {
  const out = new Float64Array(clusters.length);
  if (existing.size === 0) return out;
  for (let i = 0; i < clusters.length; i++) {
    if (existing.has(clusters[i]!.name)) out[i] = MAX_CLUSTER_SCORE;
  }
  return out;
}

/**
 * ResourceAllocatableCPU / ResourceAllocatableMemory: over the clusters that have both
 * `allocatable[resource]` and `capacity[resource]` (parsable quantities),
 * `trunc(((a − min)/(max − min) − 0.5) × 2 × 100)` in float64 (a ratio of 0.6 gives 19);
 * 100 for all when max == min. Other clusters get no score (NaN).
 *
 * @param resource "cpu" or "memory".
 */
export function resourceAllocatableScores(clusters: readonly SchedulingCluster[], resource: string): Float64Array {
  const n = clusters.length;
  const out = new Float64Array(n).fill(Number.NaN);
  const alloc = new Float64Array(n).fill(Number.NaN);
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const c = clusters[i]!;
    const a = tryParseQuantity(ownString(c.allocatable, resource));
    if (a === undefined) continue;
    if (tryParseQuantity(ownString(c.capacity, resource)) === undefined) continue;
    alloc[i] = a;
    if (a < min) min = a;
    if (a > max) max = a;
  }
  if (min === Infinity) return out;
  const range = max - min;
  for (let i = 0; i < n; i++) {
    const a = alloc[i]!;
    if (Number.isNaN(a)) continue;
    if (range !== 0) {
      const ratio = (a - min) / range;
      out[i] = Math.trunc((ratio - 0.5) * 2.0 * 100.0) + 0;
    } else {
      out[i] = MAX_CLUSTER_SCORE;
    }
  }
  return out;
}

/**
 * AddOn/<resourceName>/<scoreName>: the named score of the cluster's AddOnPlacementScore
 * `resourceName` (not clamped), 0 when the object or the score is missing, and 0 when
 * `validUntil` is before `nowMs` (strictly), which also yields a warning.
 *
 * @returns the scores, and OCM's warning text "AddOnPlacementScores <cluster>/<resource> … expired"
 *   when any score had expired.
 */
export function addOnScores(
  clusters: readonly SchedulingCluster[],
  all: Readonly<Record<string, Readonly<Record<string, AddOnPlacementScoreInput>>>> | undefined,
  resourceName: string,
  scoreName: string,
  nowMs: number,
): { scores: Float64Array; warning?: string } {
  const out = new Float64Array(clusters.length);
  if (!all) return { scores: out };
  let expired = "";
  for (let i = 0; i < clusters.length; i++) {
    const name = clusters[i]!.name;
    const score = own(own(all, name), resourceName);
    if (score === undefined) continue;
    if (score.validUntil !== undefined) {
      const until = Date.parse(score.validUntil);
      if (!Number.isNaN(until) && nowMs > until) {
        expired += ` ${name}/${resourceName}`;
        continue;
      }
    }
    const v = ownNumber(score.scores, scoreName);
    if (v !== undefined) out[i] = Math.trunc(v) + 0;
  }
  return expired ? { scores: out, warning: `AddOnPlacementScores${expired} expired` } : { scores: out };
}
