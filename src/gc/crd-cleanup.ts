/**
 * The cleanup of a deleted CustomResourceDefinition, as apiextensions-apiserver's finalizer
 * controller (`pkg/controller/finalizer/crd_finalizer.go`): once a CRD's deletion starts (it is
 * `Terminating`, held by the finalizer `customresourcecleanup.apiextensions.k8s.io`, and no
 * longer takes creates of its resources), every custom resource it defined is deleted through
 * the store (so each delete's own hooks run, and a resource's own finalizers hold it as they
 * would), then the finalizer is removed and the CRD goes. While resources remain (held by their
 * finalizers) the hook asks to be requeued, and the outbox sweep runs it again later.
 *
 * It reads only the CRD and the one D1 range of its resources (its storage version's kind:
 * `<group>/<plural>` in every namespace), never the other objects of the hub.
 */
import { ApiError } from "../k8s/errors.ts";
import { rfc3339, type KubeObject } from "../k8s/meta.ts";
import { CRD_CLEANUP_FINALIZER, storageKindOf } from "../kinds/crd.ts";
import { CustomResourceDefinitionKind } from "../kinds/index.ts";
import type { AfterCommitHook } from "../store/hooks.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { LIST_CHUNK_ROWS } from "../store/store.ts";
import type { Env } from "../env.ts";
import { clock } from "../clock.ts";

/** How many deletes of a CRD's resources run at once. */
const DELETE_CONCURRENCY = 8;
/** Most resources one run deletes; a CRD with more is finished by the sweep's next runs. */
const DELETES_PER_RUN = 2_000;

function holds(crd: KubeObject | null | undefined): crd is KubeObject {
  return Boolean(crd?.metadata.deletionTimestamp) && (crd?.metadata.finalizers ?? []).includes(CRD_CLEANUP_FINALIZER);
}

/**
 * Deletes the custom resources of CRD `name` (at most {@link DELETES_PER_RUN} per run) and, once
 * none is left, removes its cleanup finalizer. Idempotent: a CRD gone, not being deleted or
 * without the finalizer is left alone.
 * Returns `remaining` while resources remain (the caller runs this again later).
 * @throws errors of D1
 */
export async function finishCrdDeletion(env: Env, name: string): Promise<{ rewrote: boolean; remaining: boolean }> {
  const crds = admittedStoreOf(env, CustomResourceDefinitionKind);
  const crd = await crds.get("", name);
  if (!holds(crd)) return { rewrote: false, remaining: false };
  const def = storageKindOf(crd);
  if (def) {
    const objects = admittedStoreOf(env, def);
    let budget = DELETES_PER_RUN;
    let after: { namespace: string; name: string } | undefined;
    do {
      const page = await objects.listPage(undefined, { after, limit: LIST_CHUNK_ROWS });
      const doomed = page.items.filter((o) => !o.metadata.deletionTimestamp).slice(0, Math.max(0, budget));
      budget -= doomed.length;
      for (let i = 0; i < doomed.length; i += DELETE_CONCURRENCY) {
        await Promise.all(
          doomed.slice(i, i + DELETE_CONCURRENCY).map((o) =>
            objects.write(o.metadata.namespace ?? "", o.metadata.name, { verb: "delete", preconditions: { uid: o.metadata.uid } }).catch((e: unknown) => {
              // Gone meanwhile, or replaced: counted below when left.
              if (!(e instanceof ApiError && (e.reason === "NotFound" || e.reason === "Conflict"))) throw e;
            }),
          ),
        );
      }
      after = page.next;
    } while (after);
    const rest = await objects.listPage(undefined, { limit: 1 });
    if (rest.items.length > 0) {
      await setCleanupCondition(env, crd, rest.items.length + (rest.next ? 1 : 0));
      return { rewrote: false, remaining: true };
    }
  }
  const body = { ...crd, metadata: { ...crd.metadata, finalizers: (crd.metadata.finalizers ?? []).filter((f) => f !== CRD_CLEANUP_FINALIZER) } };
  try {
    await crds.write("", name, { verb: "update", body, preconditions: { uid: crd.metadata.uid } });
  } catch (e) {
    if (!(e instanceof ApiError && (e.reason === "NotFound" || e.reason === "Conflict"))) throw e;
  }
  return { rewrote: true, remaining: false };
}

/** Records on the CRD's `Terminating` condition that resources remain (held by their finalizers), as the finalizer controller's message does. */
async function setCleanupCondition(env: Env, crd: KubeObject, left: number): Promise<void> {
  const status = structuredClone(
    (crd.status ?? {}) as { conditions?: { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }[] },
  );
  const conds = status.conditions ?? [];
  const message = `could not confirm zero CustomResources remaining: ${left} remaining`;
  const i = conds.findIndex((c) => c.type === "Terminating");
  const next = {
    type: "Terminating",
    status: "True",
    reason: "InstanceDeletionCheck",
    message,
    lastTransitionTime: conds[i]?.lastTransitionTime ?? rfc3339(clock.now()),
  };
  if (i >= 0 && conds[i]!.message === message) return;
  if (i >= 0) conds[i] = next;
  else conds.push(next);
  await admittedStoreOf(env, CustomResourceDefinitionKind)
    .write("", crd.metadata.name, { verb: "update", subresource: "status", body: { ...crd, status: { ...status, conditions: conds } } })
    .catch((e: unknown) => {
      if (!(e instanceof ApiError)) throw e;
    });
}

/** Owed by the write that starts a CRD's deletion (sets its deletionTimestamp while the cleanup finalizer holds it). */
export const crdCleanupHook: AfterCommitHook<true> = {
  name: "crd-cleanup",
  plan: (change) => (change.def === CustomResourceDefinitionKind && holds(change.after) && !change.before?.metadata.deletionTimestamp ? true : null),
  async run(env, _owed, target) {
    const { rewrote, remaining } = await finishCrdDeletion(env, target.name);
    return { rewrote, requeue: remaining };
  },
};
