/**
 * The placement scheduler's after-commit hook: a committed write's Trigger (src/placement/
 * changes.ts, OCM's enqueue rules) run by the scheduler before the write returns.
 */
import type { AfterCommitHook } from "../store/hooks.ts";
import type { Env } from "../env.ts";
import { SCHEDULER_NAME } from "../timers.ts";
import { triggerForChange } from "./changes.ts";
import type { RunResult, Trigger } from "./plan.ts";

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
