/**
 * The one write path for D1-stored kinds, below the HTTP layer: every writer (the admin API,
 * agent routes, Durable Objects, controllers, webhook receivers) commits through `writeStored`,
 * so every write has the same effects.
 */
import { ApiError } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { isJsonObject, type KubeObject } from "../k8s/meta.ts";
import { commitObject, database, getObject } from "../k8s/store.ts";
import { computeWrite, settleDeletion, type WriteRequest } from "../k8s/write.ts";
import type { Env } from "../env.ts";
import { reschedule, triggerForWrite } from "../placement/triggers.ts";
import { afterCommit } from "../work/hooks.ts";

/** Whether a failed write may be retried on a fresh read (no client precondition was given). */
function retriable(req: WriteRequest): boolean {
  if (req.verb === "delete") return !req.preconditions?.resourceVersion && !req.preconditions?.uid;
  if (req.verb === "patch") {
    const p = req.patchType === "merge" && isJsonObject(req.patch) ? req.patch : null;
    return !(p && isJsonObject(p.metadata) && p.metadata.resourceVersion);
  }
  return false;
}

/**
 * Commits one write of a D1-stored kind (create, update, merge patch, apply, delete; main
 * resource or status) with the generic strategy, retrying on a stale read when the client gave
 * no precondition, then runs what the write triggers: the placement scheduler (before this
 * returns) and `afterCommit` (works delivery, replica sets). The admin API, controllers and
 * webhook receivers all write through here, so every write has the same effects.
 * Returns the stored object (null after a delete) and whether it was created.
 * `known` is the stored object as the caller just read it (a controller that listed it, or a
 * route that checked it): the first attempt uses it instead of reading it again, and the commit's
 * resourceVersion precondition still refuses it if it was stale (one D1 query less per write).
 * @throws ApiError (4xx) for a bad request, a conflict or a missing object; nothing is written then.
 */
export async function writeStored(
  env: Env,
  def: KindDefinition,
  namespace: string,
  name: string,
  req: WriteRequest,
  extras?: Record<string, unknown>,
  known?: KubeObject,
): Promise<{ object: KubeObject | null; created: boolean }> {
  const db = database(env.DB);
  const key = { namespace, name };
  let result: { object: KubeObject | null; created: boolean; before: KubeObject | null };
  for (let attempt = 0; ; attempt++) {
    const current = req.verb === "create" ? null : attempt === 0 && known ? known : await getObject(db, def, key);
    const ctx = { now: Date.now(), newUid: () => crypto.randomUUID(), extras };
    const { next, created } = computeWrite(def, key, current, req, ctx);
    if (next === current) return { object: current, created };
    if (next && def.finalize) await def.finalize(next, current, ctx);
    const settled = settleDeletion(next);
    const storeKey = { namespace, name: (settled ?? next ?? current)!.metadata.name };
    try {
      const stored = await commitObject(db, def, storeKey, settled, current ? Number(current.metadata.resourceVersion) : null);
      result = { object: stored, created, before: current };
      break;
    } catch (e) {
      if (e instanceof ApiError && e.reason === "Conflict" && retriable(req) && attempt < 4) continue;
      throw e;
    }
  }
  const written = result.object?.metadata.name ?? result.before?.metadata.name ?? name;
  await reschedule(env, triggerForWrite(def, namespace, written));
  await afterCommit(env, def, namespace, written, result.before, result.object);
  // A delete answers with the object as it was (as the apiserver does).
  return { object: result.object ?? result.before, created: result.created };
}
