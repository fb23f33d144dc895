/**
 * The ManifestWorkReplicaSet controller (OCM `pkg/work/hub/controllers/manifestworkreplicasetcontroller`).
 * Placeholder: the entry points the rest of the hub calls; the controller itself is being built.
 */
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { Env } from "../env.ts";

/**
 * Reacts to a committed write that can matter to replica sets: a ManifestWorkReplicaSet itself,
 * or a ManifestWork carrying the replica set label (status reports, deletions).
 * @param before the stored object before the write, or null on create
 * @param after the stored object after the write, or null after a delete
 */
export async function replicaSetAfterCommit(env: Env, def: KindDefinition, namespace: string, name: string, before: KubeObject | null, after: KubeObject | null): Promise<void> {
  void env;
  void def;
  void namespace;
  void name;
  void before;
  void after;
}

/** Reconciles one ManifestWorkReplicaSet now (a webhook's re-evaluate action). */
export async function reevaluateReplicaSet(env: Env, namespace: string, name: string): Promise<void> {
  void env;
  void namespace;
  void name;
}
