/**
 * The finalize step, first of a run (OCM `manifestworkreplicaset_finalize_reconcile.go`,
 * `finalizeReconciler`): a replica set being deleted has its works deleted, then loses its
 * finalizer (Foreground: only once the works are gone; Background, the default: as soon as
 * their deletion is requested). Unlike OCM's controller, which ignores a replica set that is not
 * found, a replica set that no longer exists gets its leftover works deleted here too.
 */
import { ApiError } from "../../k8s/errors.ts";
import type { KubeObject } from "../../k8s/meta.ts";
import { ManifestWorkKind, ManifestWorkReplicaSetKind, MWRS_LABEL } from "../../kinds/manifestwork.ts";
import type { Env } from "../../env.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import { racing } from "../../k8s/racing.ts";
import { MWRS_FINALIZER } from "./names.ts";
import { type ReconcileResult, type ReplicaSetRun, type ReplicaSetSpec, type RunHooks, type RunOutcome } from "./run.ts";

/** Deletes a work (only the one read: uid precondition); a work already gone is fine. @returns false when it changed meanwhile */
async function deleteWork(env: Env, work: KubeObject, hooks: RunHooks): Promise<boolean> {
  hooks.deleting?.(work.metadata.namespace!);
  try {
    await admittedStoreOf(env, ManifestWorkKind).write(
      work.metadata.namespace!,
      work.metadata.name,
      { verb: "delete", preconditions: { uid: work.metadata.uid } },
      { known: work },
    );
    return true;
  } catch (e) {
    if (e instanceof ApiError && e.reason === "NotFound") return true;
    if (e instanceof ApiError && e.reason === "Conflict") return false;
    throw e;
  }
}

/** Removes the controller's finalizer (the generic write machinery then finishes the deletion). */
async function removeFinalizer(env: Env, mwrs: KubeObject): Promise<RunOutcome> {
  const finalizers = (mwrs.metadata.finalizers ?? []).filter((f) => f !== MWRS_FINALIZER);
  if (finalizers.length === (mwrs.metadata.finalizers ?? []).length) return {};
  const body = { ...mwrs, metadata: { ...mwrs.metadata, finalizers } };
  const r = await racing(() => admittedStoreOf(env, ManifestWorkReplicaSetKind).write(mwrs.metadata.namespace!, mwrs.metadata.name, { verb: "update", body }));
  if (r === "lost") return { rerun: true };
  return r ? {} : { gone: true };
}

/**
 * The finalize step: goes on with a replica set that exists and is not being deleted; otherwise
 * deletes its works and stops, with `rerun` when a work changed meanwhile, `gone` when neither
 * the replica set nor a work of it remains.
 * @throws errors of D1 or an unexpected write failure
 */
export const finalizeReconciler = {
  name: "finalize",
  async reconcile(run: ReplicaSetRun, mwrs: KubeObject | null): Promise<ReconcileResult> {
    if (mwrs && !mwrs.metadata.deletionTimestamp) return { state: "continue", mwrs };
    const { env, hooks, ours } = run;
    // The works are being deleted: what the object holds is no longer worth keeping.
    hooks.cache?.invalidate();
    let raced = false;
    for (const w of ours) if (!w.metadata.deletionTimestamp && !(await deleteWork(env, w, hooks))) raced = true;
    if (raced) return { state: "stop", outcome: { rerun: true } };
    if (!mwrs) return { state: "stop", outcome: ours.length === 0 ? { gone: true } : {} };
    const foreground = (mwrs.spec as ReplicaSetSpec | undefined)?.cascadeDeletionPolicy === "Foreground";
    if (foreground && (await admittedStoreOf(env, ManifestWorkKind).listNamed(run.workName)).some((w) => w.metadata.labels?.[MWRS_LABEL] === run.key))
      return { state: "stop", outcome: {} };
    return { state: "stop", outcome: await removeFinalizer(env, mwrs) };
  },
};
