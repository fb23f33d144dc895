/**
 * OCM's `ClusterSelector` (label selector AND claim selector AND CEL selector) compiled once
 * per schedule and matched against many clusters. Label-selector semantics come from
 * `src/k8s/labels.ts`, CEL from `src/cel`; this file only adds OCM's composition
 * (`pkg/placement/helpers/clusters.go`).
 *
 * @module
 */

import { compileClusterExpression, matchCluster, toCel, type CompiledCel, type ScoreLookup } from "../cel/index.ts";
import { fromLabelSelector, matches } from "../k8s/labels.ts";
import type { AddOnPlacementScoreInput, CelSelector, ClaimSelector, LabelSelector, SchedulingCluster } from "./types.ts";

type CompiledLabelSelector = ReturnType<typeof fromLabelSelector>;

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * A compiled label + claim selector. `null` parts select everything (an empty
 * `metav1.LabelSelector` converts to `labels.Everything()`).
 */
export interface CompiledClusterSelector {
  labels: CompiledLabelSelector | null;
  claims: CompiledLabelSelector | null;
  /** The compiled `celSelector.celExpressions` (ANDed); empty selects everything. */
  cel: readonly CompiledCel[];
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
 * Compiles a label selector, a claim selector (only the claim selector's
 * `matchExpressions` are used, as OCM's `convertClaimSelector` does) and a CEL selector.
 *
 * @throws whatever `fromLabelSelector` throws for an invalid selector (for example an
 *   unknown operator, or `In` without values), or the `CelCompileError` of the first CEL
 *   expression that does not compile ("compilation failed: ..."); callers turn it into
 *   Misconfigured.
 */
export function compileClusterSelector(
  labelSelector: LabelSelector | undefined,
  claimSelector: ClaimSelector | undefined,
  celSelector?: CelSelector,
): CompiledClusterSelector {
  const labels = compileOne(labelSelector);
  const claims = claimSelector?.matchExpressions?.length ? compileOne({ matchExpressions: claimSelector.matchExpressions }) : null;
  const cel = (celSelector?.celExpressions ?? []).map(compileClusterExpression);
  return { labels, claims, cel };
}

/**
 * True when the cluster's labels match the label part, its claims the claim part, and every
 * CEL expression evaluates to true over {@link managedClusterObject} (OCM `ClusterSelector.Matches`).
 *
 * @param scores what `managedCluster.scores(name)` reads ({@link celScoreLookup}); without it, scores() fails.
 */
export function clusterMatches(sel: CompiledClusterSelector, cluster: SchedulingCluster, scores?: CelScores): boolean {
  if (sel.labels !== null && !matches(sel.labels, cluster.labels ?? NO_LABELS)) return false;
  if (sel.claims !== null && !matches(sel.claims, cluster.claims ?? NO_LABELS)) return false;
  if (sel.cel.length > 0 && !matchCluster(sel.cel, managedClusterObject(cluster), scores?.lookup, scores?.maxItems(cluster.name) ?? 0)) return false;
  return true;
}

/** The AddOnPlacementScores CEL's `scores()` reads, and the longest score list of a cluster (a cost bound). */
export interface CelScores {
  lookup: ScoreLookup;
  maxItems(cluster: string): number;
}

/**
 * The {@link CelScores} of a schedule's `addOnPlacementScores` (cluster → resource name →
 * scores). OCM's `scores()` ignores `validUntil`, and so does this.
 */
export function celScoreLookup(all: Readonly<Record<string, Readonly<Record<string, AddOnPlacementScoreInput>>>> | undefined): CelScores {
  return {
    lookup(cluster, name) {
      const found = all?.[cluster]?.[name];
      return found ? Object.entries(found.scores).map(([n, value]) => ({ name: n, value })) : undefined;
    },
    maxItems(cluster) {
      let max = 0;
      for (const s of Object.values(all?.[cluster] ?? {})) max = Math.max(max, Object.keys(s.scores).length);
      return max;
    },
  };
}

const celObjects = new WeakMap<SchedulingCluster, Record<string, unknown>>();

/**
 * The ManagedCluster a CEL expression sees as `managedCluster`, rebuilt from the scheduling
 * view (and memoised per view object): `metadata.name`, `metadata.labels`, `spec.taints`,
 * `status.clusterClaims` (`[{name, value}]`), `status.allocatable`, `status.capacity` and
 * `status.version.kubernetes`. Other fields of the stored object are not visible.
 */
export function managedClusterObject(c: SchedulingCluster): Record<string, unknown> {
  const hit = celObjects.get(c);
  if (hit) return hit;
  const status: Record<string, unknown> = { clusterClaims: Object.entries(c.claims ?? {}).map(([name, value]) => ({ name, value })) };
  if (c.allocatable) status.allocatable = { ...c.allocatable };
  if (c.capacity) status.capacity = { ...c.capacity };
  if (c.kubernetesVersion !== undefined) status.version = { kubernetes: c.kubernetesVersion };
  const obj = toCel({
    metadata: { name: c.name, labels: { ...(c.labels ?? {}) } },
    spec: { taints: (c.taints ?? []).map((t) => ({ ...t })) },
    status,
  }) as Record<string, unknown>;
  celObjects.set(c, obj);
  return obj;
}
