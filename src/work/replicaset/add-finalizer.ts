/**
 * The add-finalizer step (OCM `manifestworkreplicaset_add_finalizer_reconcile.go`,
 * `addFinalizerReconciler`): a replica set gets {@link MWRS_FINALIZER} before any work of it is
 * written, so that its deletion waits for the finalize step. OCM stops the run after writing it
 * and runs again on the update's event; here the run goes on with the replica set as stored (the
 * controller's own writes wake nothing, src/work/replicaset.ts).
 */
import { ManifestWorkReplicaSetKind } from "../../kinds/manifestwork.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import { racing } from "../../k8s/racing.ts";
import { MWRS_FINALIZER } from "./names.ts";
import type { ReplicaSetReconciler } from "./run.ts";

/**
 * The add-finalizer step: goes on at once when the finalizer is there, else writes it and goes on
 * with the replica set as stored; a lost race stops the run with `rerun`.
 */
export const addFinalizerReconciler: ReplicaSetReconciler = {
  name: "addFinalizer",
  async reconcile(run, mwrs) {
    if ((mwrs.metadata.finalizers ?? []).includes(MWRS_FINALIZER)) return { state: "continue", mwrs };
    const body = { ...mwrs, metadata: { ...mwrs.metadata, finalizers: [...(mwrs.metadata.finalizers ?? []), MWRS_FINALIZER] } };
    const r = await racing(() => admittedStoreOf(run.env, ManifestWorkReplicaSetKind).write(run.namespace, run.name, { verb: "update", body }));
    if (r === "lost" || !r) return { state: "stop", outcome: { rerun: true } };
    return { state: "continue", mwrs: r };
  },
};
