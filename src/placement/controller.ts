/**
 * The placement controller's hook and writer (the plan itself is src/placement/plan.ts, run by the
 * scheduler object, durable-objects/scheduler.ts):
 * - its after-commit hook: a committed write's Trigger (src/placement/changes.ts, OCM's enqueue
 *   rules) run by the scheduler before the write returns;
 * - its writer: each object the controller computed is committed only when it changed, with the
 *   resourceVersion it was read at as the precondition, through the store's one write path
 *   (src/store/storage.ts `Storage.commit`), so every scheduler write owes what any writer's would
 *   (outbox row, after-commit hooks).
 */
import { ApiError } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { storageOf, type Committed } from "../store/storage.ts";
import type { Env } from "../env.ts";
import type { AfterCommitHook } from "../store/hooks.ts";
import { SCHEDULER_NAME } from "../env.ts";
import { triggerForChange } from "./changes.ts";
import type { RunResult, SaveObject, Trigger } from "./plan.ts";

/**
 * The after-commit hook that runs the scheduler for a write's Trigger and waits for it (and for
 * the hooks its decisions' writes owe: replica sets, add-ons, policies). Its plan, stored in the outbox row, holds
 * the trigger without the written object; run right after its commit (`target.change`), the
 * trigger is built again with the object as stored, so the scheduler's view applies it without a
 * D1 read; run again by a sweep after a crash, the view reads the object by key. It reports
 * `rewrote` when the run wrote the written object's status (a new Placement's, a binding's Bound
 * condition). Run by a sweep, it schedules again; decisions a first run wrote before it died
 * owe their consumers through their own outbox rows. When the writer does not wait (an agent's write, `target.writerWaits` false), the
 * trigger is queued and the hook returns at once; the decisions follow within the scheduler's
 * queue lag (bench:scale "decision lag"). Queued how: when the hook is its outbox row's only
 * hook, the row is the durable record and the scheduler takes it over (`enqueueOwed`: the trigger
 * in its memory, the row deleted once the run finished; a sweep runs the row again should the
 * scheduler restart first), which writes no row in the scheduler; otherwise the scheduler stores
 * the trigger (`enqueue`) and runs it on its alarm.
 */
export const schedulingHook: AfterCommitHook<Trigger> = {
  name: "schedule",
  plan: (change) => triggerForChange(change, false),
  async run(env, trigger, target) {
    const full = (target.change && triggerForChange(target.change)) ?? trigger;
    if (!target.writerWaits && !target.recovering) {
      // An agent's write: queued in the scheduler, the agent returns.
      const scheduler = env.SCHEDULER.getByName(SCHEDULER_NAME);
      if (target.outbox?.only) {
        await scheduler.enqueueOwed(full, target.outbox.id);
        return { tookRow: true };
      }
      await scheduler.enqueue(full);
      return {};
    }
    const result = await reschedule(env, full);
    return { rewrote: result.statusWritten.includes(`${target.resource}/${target.namespace}/${target.name}`) };
  },
};

/**
 * Runs the scheduler for `trigger` and waits for it (decisions are updated before the caller
 * returns), and for the hooks its writes owe (the decisions' consumers). Returns the run's result.
 */
export async function reschedule(env: Env, trigger: Trigger): Promise<RunResult> {
  return env.SCHEDULER.getByName(SCHEDULER_NAME).reconcile(trigger);
}

/**
 * A run's writer: `save` commits one computed object unless it equals `current` (a conflict with
 * a concurrent user write is not an error: that write triggers its own run, and this one
 * yields); `owing` collects the commits that owe after-commit work, which the caller runs
 * (`Storage.finish`) outside the scheduler's queue, since a hook may wait for the scheduler. The
 * run's own writes (statuses, decisions) owe none today (see src/placement/controller.ts).
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
