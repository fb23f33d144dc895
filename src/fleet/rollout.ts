/**
 * KubeFleet's rolling update of a placement's clusters (kubefleet-dev/kubefleet
 * `pkg/controllers/rollout/controller.go` `pickBindingsToRoll`, `determineBindingsToUpdate`,
 * `calculateMaxToRemove`, `calculateMaxToAdd`), on each cluster's rollout status as the replica
 * sets' engine reads a work (src/work/rollout.ts `workRolloutStatus`: Succeeded is KubeFleet's
 * ready binding, Failed its failed one). Pure.
 *
 * - a cluster the scheduler picked that has no work yet is a bounding candidate: at most
 *   `target + maxSurge - canBeReady` are added (every one at a placement's first rollout);
 * - a cluster whose work carries an older resource snapshot is an update candidate; a cluster
 *   no longer picked that still has a work is a removal candidate: together at most
 *   `ready - (target - maxUnavailable)` (removals first), so no more than maxUnavailable clusters
 *   are unavailable at once; one whose work failed to apply is updated at once (it is not
 *   available anyway);
 * - `maxUnavailable` and `maxSurge` are scaled from `target` rounding up (`intstr.GetScaledValueFromIntOrPercent`).
 */
import { workRolloutStatus, type WorkCondition } from "../work/rollout.ts";
import { scaledValue } from "../kinds/fleet-validation.ts";

/** A cluster as the rollout sees it. */
export interface RolloutCluster {
  name: string;
  /** The scheduler picks it now. */
  picked: boolean;
  /** Its work, if it has one: whether it carries the latest snapshot, and its generation and conditions. */
  work?: { current: boolean; generation: number; conditions?: WorkCondition[] };
}

/** What one rollout step does: clusters to give the latest snapshot (added or updated), clusters to remove, and the ones held back. */
export interface RolloutStep {
  add: string[];
  update: string[];
  remove: string[];
  /** Picked clusters not at the latest snapshot and not moved in this step (RolloutStarted False). */
  blocked: string[];
}

/** Whether a work is ready (Applied and Available at its generation): KubeFleet's `isBindingReady`. */
export function workReady(work: RolloutCluster["work"]): boolean {
  return !!work && workRolloutStatus("", true, work.generation, work.conditions, 0).status === "Succeeded";
}

/** Whether a work failed to apply at its generation: KubeFleet's `HasBindingFailed`. */
export function workFailed(work: RolloutCluster["work"]): boolean {
  return !!work && workRolloutStatus("", true, work.generation, work.conditions, 0).status === "Failed";
}

/**
 * One step of the rolling update. `target` is KubeFleet's `calculateRealTarget` (PickN: its
 * numberOfClusters; PickFixed: its names; PickAll: the picked clusters).
 */
export function rolloutStep(
  clusters: readonly RolloutCluster[],
  target: number,
  rollingUpdate: { maxUnavailable?: number | string; maxSurge?: number | string } | undefined,
): RolloutStep {
  const sorted = [...clusters].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const ready = sorted.filter((c) => c.work && workReady(c.work)).length;
  const canBeReady = sorted.filter((c) => c.work && !workFailed(c.work)).length;
  const bounding = sorted.filter((c) => c.picked && !c.work).map((c) => c.name);
  const updates = sorted.filter((c) => c.picked && c.work && !c.work.current);
  const failedUpdates = updates.filter((c) => workFailed(c.work)).map((c) => c.name);
  const normalUpdates = updates.filter((c) => !workFailed(c.work)).map((c) => c.name);
  const removals = sorted.filter((c) => !c.picked && c.work).map((c) => c.name);

  const maxUnavailable = scaledValue(rollingUpdate?.maxUnavailable ?? "25%", target, true) ?? 0;
  const maxSurge = scaledValue(rollingUpdate?.maxSurge ?? "25%", target, true) ?? 0;
  const maxToRemove = ready - (target - maxUnavailable);
  const maxToAdd = target + maxSurge - canBeReady;

  const step: RolloutStep = { add: [], update: [...failedUpdates], remove: [], blocked: [] };
  let budget = maxToRemove;
  for (const r of removals) {
    if (budget <= 0) break;
    step.remove.push(r);
    budget--;
  }
  let u = 0;
  for (; u < normalUpdates.length && budget > 0; u++, budget--) step.update.push(normalUpdates[u]!);
  step.blocked.push(...normalUpdates.slice(u));
  const addCount = Math.max(0, Math.min(maxToAdd, bounding.length));
  step.add.push(...bounding.slice(0, addCount));
  step.blocked.push(...bounding.slice(addCount));
  return step;
}
