/**
 * Why a Placement did not select a cluster, computed in the page with the hub's own scheduling
 * modules (src/scheduling, src/placement/reads.ts: the same code the scheduler runs, OCM's
 * filters in OCM's order): the cluster is being deleted; it is in no ManagedClusterSet bound to
 * the placement's namespace and named by `spec.clusterSets` (OCM's eligible sets); it matches no
 * predicate (`requiredClusterSelector`: labels, claims, CEL); a taint is not tolerated
 * (`NoSelect`, `NoSelectIfNew` for a cluster not yet decided, or a toleration whose
 * `tolerationSeconds` ran out); or it passed every filter and the prioritizers ranked it below the
 * `numberOfClusters` chosen.
 */
import {
  clusterMatches,
  compileClusterSelector,
  eligibleClusterSets,
  NOT_TOLERATED,
  taintToleratedUntil,
  type PlacementSpec,
  type SchedulingCluster,
  type Taint,
} from "../../scheduling/index.ts";
import { clusterView, compileSetSelector, inCompiledSet, placementSpec } from "../../placement/reads.ts";
import type { KubeObject } from "./api.ts";

/** The verdict for one cluster: a short reason code and a sentence. */
export interface Verdict {
  reason: "Selected" | "Deleting" | "NotInBoundSet" | "Predicate" | "Tainted" | "NotChosen";
  message: string;
}

/** What the explanation reads besides the cluster: the placement, the bound sets, the sets, the current decisions. */
export interface PlacementContext {
  placement: KubeObject;
  /** Names of the sets bound to the placement's namespace (ManagedClusterSetBindings whose set exists). */
  boundSets: string[];
  /** Every ManagedClusterSet. */
  sets: KubeObject[];
  /** Clusters in the placement's PlacementDecisions. */
  decided: ReadonlySet<string>;
  nowMs: number;
}

/** The sets a cluster belongs to (OCM `GetClustersFromClusterSet`, the scheduler's own rule). */
export function clusterSetsOf(mc: KubeObject, sets: KubeObject[]): string[] {
  return sets.filter((s) => inCompiledSet(s.metadata.name, compileSetSelector(s as never), mc.metadata.labels)).map((s) => s.metadata.name);
}

const taintText = (t: Taint) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`;

/** Explains the placement's verdict on one ManagedCluster (see the module comment). */
export function explain(mc: KubeObject, ctx: PlacementContext): Verdict {
  const name = mc.metadata.name;
  if (ctx.decided.has(name)) return { reason: "Selected", message: "selected" };
  const spec: PlacementSpec = placementSpec(ctx.placement as never);
  const cluster: SchedulingCluster = { ...clusterView(mc as never), clusterSets: clusterSetsOf(mc, ctx.sets) };
  if (cluster.deleting) return { reason: "Deleting", message: "the cluster is being deleted" };
  const eligible = eligibleClusterSets(spec, ctx.boundSets);
  if (!cluster.clusterSets.some((s) => eligible.includes(s))) {
    const where = cluster.clusterSets.length ? `it is in ${cluster.clusterSets.join(", ")}` : "it is in no ManagedClusterSet";
    const bound = eligible.length
      ? `the placement's eligible sets are ${eligible.join(", ")}`
      : `no ManagedClusterSet is bound to namespace ${ctx.placement.metadata.namespace}${spec.clusterSets?.length ? ` among ${spec.clusterSets.join(", ")}` : ""}`;
    return { reason: "NotInBoundSet", message: `not in a bound cluster set: ${where}; ${bound}` };
  }
  const predicates = spec.predicates ?? [];
  if (predicates.length > 0) {
    let matched = false;
    const errors: string[] = [];
    for (const p of predicates) {
      try {
        const sel = compileClusterSelector(
          p.requiredClusterSelector?.labelSelector,
          p.requiredClusterSelector?.claimSelector,
          p.requiredClusterSelector?.celSelector,
        );
        if (clusterMatches(sel, cluster)) {
          matched = true;
          break;
        }
      } catch (e) {
        errors.push((e as Error).message);
      }
    }
    if (!matched)
      return {
        reason: "Predicate",
        message: `matches none of the ${predicates.length} predicate${predicates.length > 1 ? "s" : ""}${errors.length ? ` (${errors.join("; ")})` : ""}`,
      };
  }
  const untolerated = (cluster.taints ?? []).filter((t) => taintToleratedUntil(t, spec.tolerations ?? [], false, ctx.nowMs) === NOT_TOLERATED);
  if (untolerated.length > 0) return { reason: "Tainted", message: `tainted: ${untolerated.map(taintText).join(", ")} not tolerated` };
  const n = spec.numberOfClusters;
  return {
    reason: "NotChosen",
    message: `passes every filter; the prioritizers chose ${n !== undefined ? `${n} other cluster${n === 1 ? "" : "s"}` : "others"}`,
  };
}
