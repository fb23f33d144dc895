/**
 * Where a staged update run's controller runs, and how it is woken: one Durable Object per run,
 * the replica set object class named `updaterun:<namespace>/<name>` (as placements use
 * `placement:<namespace>/<name>`: durable-objects/replicaset.ts), woken by a prompt notification
 * (its alarm set to now; runs coalesce and are serialised there). A leaf of the run controller, so
 * that the placement controller can wake the runs of its External placements (a binding changed)
 * without importing the run controller.
 */
import { admittedStoreOf } from "../../admission/store.ts";
import type { Env } from "../../env.ts";
import type { KubeObject } from "../../k8s/meta.ts";
import type { UpdateRunSpec } from "../../kinds/fleet-updaterun-shapes.ts";
import { updateRunKindsOf } from "../../kinds/fleet-updaterun.ts";

/** The prefix of a run's target namespace in its object (a namespace never holds ':'). */
export const UPDATERUN_TARGET_PREFIX = "updaterun:";

/** A run: `namespace` "" for a ClusterStagedUpdateRun. */
export interface UpdateRunRef {
  namespace: string;
  name: string;
}

/**
 * Asks for a run of `ref`'s controller at once, without waiting for it.
 * @throws when the object cannot be reached
 */
export async function wakeUpdateRun(env: Env, ref: UpdateRunRef): Promise<void> {
  await env.REPLICASETS.getByName(`${UPDATERUN_TARGET_PREFIX}${ref.namespace}/${ref.name}`).wake(`${UPDATERUN_TARGET_PREFIX}${ref.namespace}`, ref.name);
}

/** Whether a run is finished (its `Succeeded` or `Initialized` condition False, or `Succeeded` True). */
export function runFinished(run: KubeObject): boolean {
  const conditions = (run.status?.conditions ?? []) as { type: string; status: string }[];
  const done = conditions.find((c) => c.type === "Succeeded");
  const init = conditions.find((c) => c.type === "Initialized");
  return (done !== undefined && done.status !== "Unknown") || init?.status === "False";
}

/**
 * Wakes the unfinished runs of placement `placement` (a ClusterStagedUpdateRun's for a
 * ClusterResourcePlacement, `namespace` ""; a StagedUpdateRun's in the ResourcePlacement's
 * namespace). A failure is logged: the run's own recheck timer moves it on later.
 */
export async function wakeUpdateRuns(env: Env, placement: UpdateRunRef): Promise<void> {
  try {
    const { items } = await admittedStoreOf(env, updateRunKindsOf(placement.namespace).run).list(placement.namespace || undefined);
    const runs = items.filter((r) => (r.spec as UpdateRunSpec | undefined)?.placementName === placement.name && !runFinished(r));
    await Promise.all(runs.map((r) => wakeUpdateRun(env, { namespace: placement.namespace, name: r.metadata.name })));
  } catch (e) {
    console.error(`placement ${placement.namespace}/${placement.name}: could not wake its update runs`, e);
  }
}
