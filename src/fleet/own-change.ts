/**
 * What a committed write of a placement-like object (KubeFleet's ClusterResourcePlacement and
 * ResourcePlacement, Karmada's PropagationPolicy and ClusterPropagationPolicy) owes its run.
 */
import type { KubeObject } from "../k8s/meta.ts";

/** A run of the object `namespace`/`name` ("" for a cluster-scoped one); `now`: awaited by the write. */
export interface OwnRun {
  namespace: string;
  name: string;
  now?: true;
}

/**
 * The run a write of the object itself calls for: removed, a run shortly after; created, its
 * spec changed (generation moved) or its deletion started, a run now (the write awaits it); its
 * cleanup finalizer `finalizer` removed, a run shortly after; anything else (status, labels), none.
 * Mirrors KubeFleet's placement controller, which reconciles on generation and deletion changes
 * (kubefleet pkg/controllers/placement, its predicates).
 */
export function ownChangeRun(namespace: string, name: string, before: KubeObject | null, after: KubeObject | null, finalizer: string): OwnRun | null {
  if (!after) return { namespace, name };
  const started =
    !before || before.metadata.generation !== after.metadata.generation || (!before.metadata.deletionTimestamp && !!after.metadata.deletionTimestamp);
  if (started) return { namespace, name, now: true };
  if ((before.metadata.finalizers ?? []).includes(finalizer) && !(after.metadata.finalizers ?? []).includes(finalizer)) return { namespace, name };
  return null;
}
