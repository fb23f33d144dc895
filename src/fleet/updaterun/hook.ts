/**
 * What wakes a staged update run (the controller manifest's `fleet-updateruns`, src/controllers.ts):
 * the run created, its spec changed (its `state`) or its deletion started; an approval request's
 * status changed (a person approved it: the run moves within the second); its TimedWait's end
 * (the run object's `updaterun-wait` timer). Its placement's bindings wake it from the placement
 * controller (src/fleet/updaterun/wake.ts `wakeUpdateRuns`). Each is a prompt notification of the
 * run's object: the writer never waits for the run.
 */
import { deepEqual } from "../../k8s/fieldmanager.ts";
import type { KindDefinition } from "../../k8s/kind.ts";
import type { AfterCommitHook, Change } from "../../store/hooks.ts";
import { FLEET_GROUP } from "../../kinds/fleet.ts";
import { wakeUpdateRun, type UpdateRunRef } from "./wake.ts";

const RUN_KINDS = new Set(["ClusterStagedUpdateRun", "StagedUpdateRun"]);
const APPROVAL_KINDS = new Set(["ClusterApprovalRequest", "ApprovalRequest"]);
const isKind = (def: KindDefinition, kinds: Set<string>) => def.group === FLEET_GROUP && kinds.has(def.kind);

/** What a committed change owes a run: the run to wake, or null. */
export function planUpdateRun(change: Change): UpdateRunRef | null {
  const { def, namespace, name, before, after } = change;
  if (isKind(def, RUN_KINDS)) {
    if (!after) return null;
    if (!before || before.metadata.generation !== after.metadata.generation) return { namespace, name };
    if (after.metadata.deletionTimestamp && !before.metadata.deletionTimestamp) return { namespace, name };
    return null;
  }
  if (isKind(def, APPROVAL_KINDS)) {
    if (!after || !before || deepEqual(before.status ?? null, after.status ?? null)) return null;
    const run = (after.spec as { parentStageRollout?: string } | undefined)?.parentStageRollout;
    return run ? { namespace, name: run } : null;
  }
  return null;
}

/** The run controller's after-commit hook ({@link planUpdateRun}). */
export const updateRunHook: AfterCommitHook<UpdateRunRef> = {
  name: "fleet-updateruns",
  plan: planUpdateRun,
  async run(env, owed) {
    await wakeUpdateRun(env, owed);
  },
};
