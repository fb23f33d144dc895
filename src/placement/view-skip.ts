/**
 * What the scheduler view (src/placement/view.ts) keeps per placement to skip a run whose result
 * provably stands, and the pure parts of that proof.
 *
 * A placement enqueued only by ManagedCluster changes (OCM schedules every placement bound to the
 * cluster's sets) is not scheduled again when its previous result provably stands:
 * - it ran before on this view, and since then neither its object (but for its own status
 *   write), any ManagedClusterSet nor any ManagedClusterSetBinding changed, and its
 *   PlacementDecisions are still those it read (its decisions are an input, to Steady and
 *   NoSelectIfNew: a run that changed them runs again next time, until they settle): its
 *   {@link RunStamp};
 * - its result does not depend on time (no `tolerationSeconds`, no AddOn prioritizer) and its
 *   policy and predicates are valid (a Misconfigured one always runs): its {@link PlacementInfo};
 * - every cluster changed in this run is outside its decisions, and either was no candidate
 *   before nor after the change (not in an eligible set, or being deleted), or was a candidate
 *   both times and matched none of its predicates both times, or changed nothing scheduling
 *   reads ({@link sameView}); every other cluster change since its last run was proven the same
 *   way or could not enqueue it (a cluster outside every set bound to its namespace);
 * - with the Balance prioritizer: no ClusterDecision count changed on a cluster of its candidate
 *   source (tracked per label index entry, src/placement/view-clusters.ts) and the largest count
 *   of the other placements is the one it read.
 * The proof itself (`SchedulerView.unaffected`) joins the view's indexes. The randomised
 * equivalence test (test/unit/placement-view.test.ts) checks that every write equals the full
 * recompute's (src/placement/state.ts) after every change.
 */
import type { KubeObject } from "../k8s/meta.ts";
import { compileClusterSelector, prioritizerNames, type CompiledClusterSelector } from "../scheduling/index.ts";
import type { ClusterView } from "./plan.ts";
import { placementSpec } from "./reads.ts";
import { EMPTY, type ClusterIndex, type Source } from "./view-clusters.ts";

/** What a placement's last run read, to decide whether it may be skipped. */
export interface RunStamp {
  rv: number;
  ownVersion: number;
  setsVersion: number;
  bindingsVersion: number;
  decisionsVersion: number;
  maxOthers: number;
}

/** Per-spec facts, cached by resourceVersion. */
export interface PlacementInfo {
  rv: number;
  /** The compiled predicates, or null when one is invalid or has CEL (never skipped). */
  selectors: CompiledClusterSelector[] | null;
  /** Narrowing per predicate (a superset of its matches), or null when one predicate cannot be narrowed. */
  narrowing: Source | null;
  /** Whether its result can depend on the time or on AddOnPlacementScores (never skipped). */
  unskippable: boolean;
  balance: boolean;
}

/** A placement as the view keeps it: the object, its resourceVersion, its last run's stamp and its spec's facts. */
export interface PlacementRecord {
  object: KubeObject;
  rv: number;
  lastRun?: RunStamp;
  info?: PlacementInfo;
}

/**
 * A placement's {@link PlacementInfo} at resourceVersion `rv`: its predicates compiled, each
 * narrowed to label index entries of `clusters` (src/placement/view-clusters.ts `narrowest`).
 */
export function placementInfo(placement: KubeObject, rv: number, clusters: ClusterIndex): PlacementInfo {
  const spec = placementSpec(placement);
  let selectors: CompiledClusterSelector[] | null = [];
  let narrowing: Source | null = [];
  for (const p of spec.predicates ?? []) {
    const rcs = p.requiredClusterSelector;
    try {
      if ((rcs?.celSelector?.celExpressions?.length ?? 0) > 0) throw new Error("CEL");
      const compiled = compileClusterSelector(rcs?.labelSelector, rcs?.claimSelector);
      selectors?.push(compiled);
      const n = compiled.labels ? clusters.narrowest(compiled.labels) : null;
      if (n === null || n === "all") narrowing = null;
      else narrowing?.push(...n);
    } catch {
      selectors = null;
      narrowing = null;
    }
  }
  if ((spec.predicates ?? []).length === 0) narrowing = null;
  const names = prioritizerNames(spec);
  return {
    rv,
    selectors,
    narrowing,
    unskippable: names === undefined || names.some((n) => n.startsWith("AddOn/")) || (spec.tolerations ?? []).some((t) => t.tolerationSeconds != null),
    balance: names?.includes("Balance") ?? true,
  };
}

/** Whether two views of a cluster agree on everything scheduling reads. */
export function sameView(a: ClusterView, b: ClusterView): boolean {
  return (
    a.deleting === b.deleting &&
    a.kubernetesVersion === b.kubernetesVersion &&
    sameRecord(a.labels, b.labels) &&
    sameRecord(a.claims, b.claims) &&
    sameRecord(a.allocatable, b.allocatable) &&
    sameRecord(a.capacity, b.capacity) &&
    JSON.stringify(a.taints ?? []) === JSON.stringify(b.taints ?? [])
  );
}

function sameRecord(a: Readonly<Record<string, string>> | undefined, b: Readonly<Record<string, string>> | undefined): boolean {
  const ka = Object.keys(a ?? EMPTY);
  const kb = Object.keys(b ?? EMPTY);
  if (ka.length !== kb.length) return false;
  for (const k of ka) if (!Object.hasOwn(b ?? EMPTY, k) || a![k] !== b![k]) return false;
  return true;
}
