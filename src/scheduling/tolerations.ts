/**
 * OCM's TaintToleration filter (`plugins/tainttoleration`), as pure functions.
 *
 * Times are epoch milliseconds. A "tolerated until" value is `Infinity` when the
 * cluster is tolerated for good and `-1` when it is not tolerated.
 *
 * @module
 */

import type { SchedulingCluster, Taint, Toleration } from "./types.ts";

/** Go's zero `time.Time` (0001-01-01T00:00:00Z) in epoch milliseconds. */
export const GO_ZERO_TIME_MS = -62135596800000;

/** Returned by {@link clusterToleratedUntil} for a cluster that is not tolerated. */
export const NOT_TOLERATED = -1;

/**
 * Validates tolerations as OCM's TaintToleration filter does, in order, first failure wins.
 *
 * @returns undefined when valid, else the exact OCM message:
 *   "If the key is empty, operator must be Exists." or
 *   "If the operator is Exists, the value should be empty."
 */
export function validateTolerations(tolerations: readonly Toleration[]): string | undefined {
  for (const t of tolerations) {
    if (!t.key && t.operator !== "Exists") return "If the key is empty, operator must be Exists.";
    if (t.operator === "Exists" && t.value) return "If the operator is Exists, the value should be empty.";
  }
  return undefined;
}

/** Parses a taint's RFC 3339 `timeAdded` to epoch milliseconds (Go's zero time when missing or invalid). */
export function taintTimeAddedMs(taint: Taint): number {
  if (!taint.timeAdded) return GO_ZERO_TIME_MS;
  const ms = Date.parse(taint.timeAdded);
  return Number.isNaN(ms) ? GO_ZERO_TIME_MS : ms;
}

/**
 * Whether one toleration tolerates one taint at `nowMs` (OCM's `isTolerated`):
 * the effect must be empty or equal, the key empty or equal, and with Equal (or no
 * operator) the values must be equal (an empty toleration value does not match a
 * non-empty taint value); Exists matches any value; any other operator matches nothing.
 * With `tolerationSeconds` the taint is tolerated while `nowMs < timeAdded + seconds`,
 * for any effect.
 *
 * @returns the epoch ms at which the toleration expires, `Infinity` for never, or
 *   {@link NOT_TOLERATED}.
 */
export function toleratedUntil(taint: Taint, t: Toleration, nowMs: number): number {
  if (t.effect && t.effect !== taint.effect) return NOT_TOLERATED;
  if (t.key && t.key !== taint.key) return NOT_TOLERATED;
  const op = t.operator ?? "";
  let matched: boolean;
  if (op === "" || op === "Equal") matched = (t.value ?? "") === (taint.value ?? "");
  else matched = op === "Exists";
  if (!matched) return NOT_TOLERATED;
  if (t.tolerationSeconds === undefined || t.tolerationSeconds === null) return Infinity;
  const expiry = taintTimeAddedMs(taint) + t.tolerationSeconds * 1000;
  return nowMs < expiry ? expiry : NOT_TOLERATED;
}

/**
 * Whether a taint is tolerated (OCM's `isTaintTolerated`): PreferNoSelect always is
 * (with no expiry); NoSelectIfNew is when the cluster is already decided; otherwise the
 * first toleration that tolerates it decides, including its expiry (a later toleration
 * with a longer or no expiry is not consulted).
 *
 * @returns expiry in epoch ms, `Infinity`, or {@link NOT_TOLERATED}.
 */
export function taintToleratedUntil(taint: Taint, tolerations: readonly Toleration[], inDecision: boolean, nowMs: number): number {
  if (taint.effect === "PreferNoSelect") return Infinity;
  if (taint.effect === "NoSelectIfNew" && inDecision) return Infinity;
  for (const t of tolerations) {
    const until = toleratedUntil(taint, t, nowMs);
    if (until !== NOT_TOLERATED) return until;
  }
  return NOT_TOLERATED;
}

/**
 * Whether every taint of a cluster is tolerated (OCM's `isClusterTolerated`).
 *
 * @param inDecision whether the cluster is in the placement's existing decisions.
 * @returns the earliest expiry among its temporarily tolerated taints (epoch ms),
 *   `Infinity` when all are tolerated for good (or it has none), or {@link NOT_TOLERATED}.
 */
export function clusterToleratedUntil(cluster: SchedulingCluster, tolerations: readonly Toleration[], inDecision: boolean, nowMs: number): number {
  const taints = cluster.taints;
  if (!taints || taints.length === 0) return Infinity;
  let min = Infinity;
  for (const taint of taints) {
    const until = taintToleratedUntil(taint, tolerations, inDecision, nowMs);
    if (until === NOT_TOLERATED) return NOT_TOLERATED;
    if (until < min) min = until;
  }
  return min;
}
