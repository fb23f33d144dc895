/**
 * What a committed write of a D1-stored kind sets in motion beyond the placement scheduler:
 * delivery of ManifestWorks to their cluster's agent and the ManifestWorkReplicaSet controller.
 * Called by `writeStored` (src/store/write.ts) after every commit, with the object before and
 * after the write (null when absent); it runs before the write's response is sent.
 */
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { Env } from "../env.ts";
import { replicaSetAfterCommit } from "./replicaset.ts";
import { ManifestWorkKind } from "../kinds/manifestwork.ts";

/**
 * Runs the effects of a committed write of `def` at `namespace/name`.
 * @param before the stored object before the write, or null on create
 * @param after the stored object after the write, or null after a delete
 */
export async function afterCommit(
  env: Env,
  def: KindDefinition,
  namespace: string,
  name: string,
  before: KubeObject | null,
  after: KubeObject | null,
): Promise<void> {
  await deliverWorks(env, def, namespace, before, after);
  await replicaSetAfterCommit(env, def, namespace, name, before, after);
}

/** A work as its agent receives it: everything but its status and resourceVersion. */
function deliveredView(obj: KubeObject | null): string {
  if (!obj) return "";
  const { status, metadata, ...rest } = obj;
  void status;
  const { resourceVersion, ...meta } = metadata;
  void resourceVersion;
  return JSON.stringify([rest, meta]);
}

/**
 * Tells the cluster's Durable Object (the namespace is the cluster's name) that its works changed
 * when a ManifestWork was created, deleted, or changed anything its agent receives (spec or
 * metadata); a status write does not. The object then changes its works ETag and wakes the
 * agent's long-poll before this write's response is sent.
 */
async function deliverWorks(env: Env, def: KindDefinition, namespace: string, before: KubeObject | null, after: KubeObject | null): Promise<void> {
  if (def !== ManifestWorkKind || deliveredView(before) === deliveredView(after)) return;
  await env.CLUSTERS.getByName(namespace).worksChanged();
}
