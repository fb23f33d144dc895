/**
 * OCM's `ClusterSelector` (label selector AND claim selector) compiled once per
 * schedule and matched against many clusters. Label-selector semantics come from
 * `src/k8s/labels.ts`; this file only adds OCM's composition.
 *
 * @module
 */

import { fromLabelSelector, matches } from "../k8s/labels.ts";
import type { ClaimSelector, LabelSelector, SchedulingCluster } from "./types.ts";

type CompiledLabelSelector = ReturnType<typeof fromLabelSelector>;

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * A compiled label + claim selector. `null` parts select everything (an empty
 * `metav1.LabelSelector` converts to `labels.Everything()`).
 */
export interface CompiledClusterSelector {
  labels: CompiledLabelSelector | null;
  claims: CompiledLabelSelector | null;
}

function isEmpty(sel: LabelSelector | undefined): boolean {
  if (!sel) return true;
  const ml = sel.matchLabels;
  const me = sel.matchExpressions;
  return (!ml || Object.keys(ml).length === 0) && (!me || me.length === 0);
}

function compileOne(sel: LabelSelector | undefined): CompiledLabelSelector | null {
  return isEmpty(sel) ? null : fromLabelSelector(sel as LabelSelector);
}

/**
 * Compiles a label selector and a claim selector (only the claim selector's
 * `matchExpressions` are used, as OCM's `convertClaimSelector` does).
 *
 * @throws whatever `fromLabelSelector` throws for an invalid selector (for example an
 *   unknown operator, or `In` without values); callers turn it into Misconfigured.
 */
export function compileClusterSelector(labelSelector: LabelSelector | undefined, claimSelector: ClaimSelector | undefined): CompiledClusterSelector {
  const labels = compileOne(labelSelector);
  const claims = claimSelector?.matchExpressions?.length ? compileOne({ matchExpressions: claimSelector.matchExpressions }) : null;
  return { labels, claims };
}

/** True when the cluster's labels match the label part and its claims match the claim part. */
export function clusterMatches(sel: CompiledClusterSelector, cluster: SchedulingCluster): boolean {
  if (sel.labels !== null && !matches(sel.labels, cluster.labels ?? NO_LABELS)) return false;
  if (sel.claims !== null && !matches(sel.claims, cluster.claims ?? NO_LABELS)) return false;
  return true;
}
