/**
 * The placement controller's writer (the plan itself is src/placement/plan.ts): each object the
 * controller computed is committed only when it changed, with the resourceVersion it was read at
 * as the precondition, through the store's one write path (src/store/storage.ts `Storage.commit`),
 * so every scheduler write owes what any writer's would (outbox row, after-commit hooks).
 */
import { ApiError } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { storageOf, type Committed } from "../store/storage.ts";
import type { Env } from "../env.ts";
import type { SaveObject } from "./plan.ts";

/**
 * A run's writer: `save` commits one computed object unless it equals `current` (a conflict with
 * a concurrent user write is not an error: that write triggers its own run, and this one
 * yields); `owing` collects the commits that owe after-commit work, which the caller runs
 * (`Storage.finish`) outside the scheduler's queue, since a hook may wait for the scheduler. The
 * run's own writes (statuses, decisions) owe none today (see src/placement/triggers.ts).
 * `nowMs` is the run's time, epoch milliseconds. `save` throws whatever the commit throws
 * besides Conflict, AlreadyExists and NotFound.
 */
export function d1Writer(env: Env, nowMs: number): { save: SaveObject; owing: Committed[] } {
  const owing: Committed[] = [];
  const storage = storageOf(env);
  const save: SaveObject = async (def: KindDefinition, current: KubeObject | null, next: KubeObject | null) => {
    if (current && next && JSON.stringify(current) === JSON.stringify(next)) return { written: false, conflict: false };
    const k = { namespace: (next ?? current)!.metadata.namespace ?? "", name: (next ?? current)!.metadata.name };
    try {
      const committed = await storage.commit(def, k, current, next, nowMs);
      if (committed.owed) owing.push(committed);
      return { written: true, stored: committed.object };
    } catch (e) {
      // A concurrent user write to the same object triggers its own run; this one yields.
      if (e instanceof ApiError && (e.reason === "Conflict" || e.reason === "AlreadyExists" || e.reason === "NotFound"))
        return { written: false, conflict: true };
      throw e;
    }
  };
  return { save, owing };
}
