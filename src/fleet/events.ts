/**
 * The Events KubeFleet's placement controller records on a ClusterResourcePlacement or
 * ResourcePlacement (kubefleet-dev/kubefleet `pkg/controllers/placement/controller.go`,
 * `handleUpdate` and `handleDelete`; reasons and messages from `pkg/utils/condition`
 * `EventReasonForTrue` / `EventMessageForTrue`), all of type Normal, from the recorder named
 * `placement-controller`:
 *
 * - `PlacementRolloutStarted`, `PlacementOverriddenSucceeded`, `PlacementWorkSynchronized`,
 *   `PlacementApplied`, `PlacementAvailable`: a condition of the chain that is True at the
 *   placement's generation now and was not before (KubeFleet's `IsConditionStatusTrue`: True and
 *   `observedGeneration` equal to the generation), so a new generation records them again as it
 *   rolls out, and a change of a selected object (a new resource snapshot: RolloutStarted goes
 *   False, then True) records RolloutStarted and what follows again;
 * - `PlacementRolloutCompleted`: `<Kind>Scheduled` and every condition of the chain True at the
 *   generation, when they were not all before (KubeFleet's `isRolloutCompleted`);
 * - `PlacementCleanupFinalizerRemoved`: the controller removed its cleanup finalizer from a
 *   placement being deleted.
 *
 * Pure: the controller (src/fleet/controller.ts) records what these functions answer through the
 * hub's Event recorder (src/events/record.ts), which folds a repeat into the Event it repeats
 * (`count`), as client-go's EventCorrelator does.
 */
import type { Condition } from "../k8s/meta.ts";
import type { EventSpec } from "../events/record.ts";
import { CHAIN, TRUE_EVENTS } from "./status.ts";

/** The reporting controller of the placements' Events (KubeFleet's recorder name, `placementControllerName`). */
export const PLACEMENT_CONTROLLER = "placement-controller";

/** An Event the placement controller records: its reason and message (type Normal). */
export interface PlacementEvent {
  reason: string;
  message: string;
}

/** KubeFleet's Event when every expected condition is True at the placement's generation. */
export const ROLLOUT_COMPLETED: PlacementEvent = {
  reason: "PlacementRolloutCompleted",
  message: "Placement has finished the rollout process and reached the desired status",
};

/** KubeFleet's Event when the controller removed the cleanup finalizer of a placement being deleted. */
export const CLEANUP_FINALIZER_REMOVED: PlacementEvent = {
  reason: "PlacementCleanupFinalizerRemoved",
  message: "Deleted the snapshots and removed the placement cleanup finalizer",
};

/** KubeFleet's `IsConditionStatusTrue`: the condition of `type` is True and observed at `generation`. */
function trueAt(conditions: readonly Condition[] | undefined, type: string, generation: number): boolean {
  const c = conditions?.find((x) => x.type === type);
  return c?.status === "True" && (c.observedGeneration ?? 0) === generation;
}

/**
 * The Events a status change of a placement records, in KubeFleet's order: the chain's
 * conditions that turned True at `generation`, then `PlacementRolloutCompleted` when the rollout
 * completed with this change.
 *
 * @param prefix `ClusterResourcePlacement` or `ResourcePlacement` (the conditions' type prefix).
 * @param generation the placement's `metadata.generation`.
 * @param before the placement's conditions as stored before the change (undefined: none).
 * @param after its conditions as written.
 */
export function placementEvents(prefix: string, generation: number, before: readonly Condition[] | undefined, after: readonly Condition[]): PlacementEvent[] {
  const out: PlacementEvent[] = [];
  for (const t of CHAIN) {
    const type = `${prefix}${t}`;
    if (!trueAt(before, type, generation) && trueAt(after, type, generation)) out.push({ reason: TRUE_EVENTS[t][0], message: TRUE_EVENTS[t][1] });
  }
  const completed = (conditions: readonly Condition[] | undefined) =>
    trueAt(conditions, `${prefix}Scheduled`, generation) && CHAIN.every((t) => trueAt(conditions, `${prefix}${t}`, generation));
  if (completed(after) && !completed(before)) out.push(ROLLOUT_COMPLETED);
  return out;
}

/**
 * The {@link EventSpec}s of `events` about a placement (KubeFleet records them on the placement
 * object: kind, its v1beta1 apiVersion, name, namespace for a ResourcePlacement, uid).
 */
export function placementEventSpecs(
  regarding: { kind: string; apiVersion: string; name: string; namespace?: string; uid?: string },
  events: readonly PlacementEvent[],
): EventSpec[] {
  return events.map((e) => ({
    regarding: {
      kind: regarding.kind,
      apiVersion: regarding.apiVersion,
      name: regarding.name,
      ...(regarding.namespace ? { namespace: regarding.namespace } : {}),
      ...(regarding.uid ? { uid: regarding.uid } : {}),
    },
    reason: e.reason,
    type: "Normal" as const,
    message: e.message,
    reportingController: PLACEMENT_CONTROLLER,
  }));
}
