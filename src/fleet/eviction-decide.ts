/**
 * KubeFleet's eviction decision (kubefleet-dev/kubefleet
 * `pkg/controllers/clusterresourceplacementeviction/controller.go` `validateEviction`,
 * `executeEviction`, `isEvictionAllowed`; `pkg/utils/eviction` `IsPlacementPresent`), pure: the
 * placement, its bindings and its budget are arguments; src/fleet/eviction.ts reads them and
 * carries out the answer.
 *
 * Flotilla's bindings: `state` Bound (works written), Scheduled (picked, no works yet) or
 * Unscheduled (no longer picked, works being removed: KubeFleet's Unscheduled binding whose
 * previous state was Bound); their conditions carry no `observedGeneration` (they are the
 * placement's status per cluster), so `Available` True counts as KubeFleet's True at the binding's
 * generation.
 */
import type { Condition, KubeObject } from "../k8s/meta.ts";
import { EvictionMessages as M, type PlacementDisruptionBudgetSpec } from "../kinds/fleet-eviction.ts";
import { scaledValue } from "../kinds/fleet-validation.ts";

/** What to do with one eviction. */
export type EvictionDecision =
  /** `Valid` False with this message (KubeFleet's `markEvictionInvalid`). */
  | { valid: false; message: string }
  /** `Valid` True, then `Executed` True (the binding deleted when `deleteBinding`) or False, with this message. */
  | { valid: true; executed: boolean; deleteBinding: KubeObject | null; message: string };

/** The placement fields the decision reads (defaults applied: no policy is PickAll). */
export interface EvictedPlacement {
  metadata: { name: string; deletionTimestamp?: string | null };
  spec?: { policy?: { placementType?: string; numberOfClusters?: number } };
}

const conditionOf = (o: KubeObject, type: string) => ((o.status?.conditions ?? []) as Condition[]).find((c) => c.type === type);
const atGeneration = (o: KubeObject, c: Condition | undefined, status: "True" | "False") =>
  !!c && c.status === status && (c.observedGeneration === undefined || c.observedGeneration === (o.metadata.generation ?? 1));

/** KubeFleet's `IsPlacementPresent`: the binding is Bound, or Unscheduled after being Bound (its works still there). */
export function placementPresent(binding: KubeObject): boolean {
  const state = (binding.spec as { state?: string } | undefined)?.state;
  return state === "Bound" || state === "Unscheduled";
}

/** KubeFleet's `HasBindingFailed`: Overridden, WorkSynchronized, Applied or Available False at the binding's generation. */
export function bindingFailed(binding: KubeObject): boolean {
  return ["Overridden", "WorkSynchronized", "Applied", "Available"].some((t) => atGeneration(binding, conditionOf(binding, t), "False"));
}

/**
 * KubeFleet's `isEvictionAllowed`: the available bindings (Available True), and whether the
 * budget leaves a disruption: `maxUnavailable` (scaled on a PickN placement's numberOfClusters,
 * rounding up; 0 for any other type) minus the unavailable bindings, or the available bindings
 * minus `minAvailable` (a PickAll placement's as an integer, else scaled likewise); at least one.
 */
export function evictionAllowed(
  bindings: readonly KubeObject[],
  crp: EvictedPlacement,
  budget: PlacementDisruptionBudgetSpec,
): { allowed: boolean; available: number; disruptionsAllowed: number } {
  const available = bindings.filter((b) => atGeneration(b, conditionOf(b, "Available"), "True")).length;
  const type = crp.spec?.policy?.placementType ?? "PickAll";
  const desired = type === "PickN" ? (crp.spec?.policy?.numberOfClusters ?? 0) : 0;
  let disruptions = 0;
  if (budget.maxUnavailable !== undefined) {
    const maxUnavailable = scaledValue(budget.maxUnavailable, desired, true) ?? 0;
    disruptions = maxUnavailable - (bindings.length - available);
  } else if (budget.minAvailable !== undefined) {
    // intstr's IntValue of a string is strconv.Atoi's (0 for a percentage): PickAll refuses those before.
    const minAvailable =
      type === "PickAll"
        ? typeof budget.minAvailable === "number"
          ? budget.minAvailable
          : Number.parseInt(budget.minAvailable, 10) || 0
        : (scaledValue(budget.minAvailable, desired, true) ?? 0);
    disruptions = available - minAvailable;
  }
  disruptions = Math.max(0, disruptions);
  return { allowed: disruptions > 0, available, disruptionsAllowed: disruptions };
}

/**
 * The decision on evicting placement `crp` (null: not found) from `clusterName`, with the
 * placement's `bindings` and its `budget` (null: none), in KubeFleet's order: the placement
 * missing, being deleted or PickFixed; no or several bindings for the cluster (invalid); the
 * binding being deleted (executed, nothing to do); nothing placed yet (blocked); the binding
 * failed (executed); no budget (executed); a PickAll placement's budget with `maxUnavailable` or a
 * percentage `minAvailable` (blocked); else the budget's arithmetic ({@link evictionAllowed}).
 */
export function decideEviction(
  crp: EvictedPlacement | null,
  bindings: readonly KubeObject[],
  clusterName: string,
  budget: PlacementDisruptionBudgetSpec | null,
): EvictionDecision {
  if (!crp) return { valid: false, message: M.invalidMissingCRP };
  if (crp.metadata.deletionTimestamp) return { valid: false, message: M.invalidDeletingCRP };
  const type = crp.spec?.policy?.placementType ?? "PickAll";
  if (type === "PickFixed") return { valid: false, message: M.invalidPickFixedCRP };
  const targets = bindings.filter((b) => (b.spec as { targetCluster?: string } | undefined)?.targetCluster === clusterName);
  if (targets.length > 1) return { valid: false, message: M.invalidMultipleCRB };
  const target = targets[0];
  if (!target) return { valid: false, message: M.invalidMissingCRB };
  if (target.metadata.deletionTimestamp) return { valid: true, executed: true, deleteBinding: null, message: M.allowedPlacementRemoved };
  if (!placementPresent(target)) return { valid: true, executed: false, deleteBinding: null, message: M.blockedMissingPlacement };
  if (bindingFailed(target)) return { valid: true, executed: true, deleteBinding: target, message: M.allowedPlacementFailed };
  if (!budget) return { valid: true, executed: true, deleteBinding: target, message: M.allowedNoPDB };
  if (type === "PickAll" && (budget.maxUnavailable !== undefined || typeof budget.minAvailable === "string"))
    return { valid: true, executed: false, deleteBinding: null, message: M.blockedMisconfiguredPDB };
  const { allowed, available } = evictionAllowed(bindings, crp, budget);
  return allowed
    ? { valid: true, executed: true, deleteBinding: target, message: M.allowedPDB(available, bindings.length) }
    : { valid: true, executed: false, deleteBinding: null, message: M.blockedPDB(available, bindings.length) };
}
