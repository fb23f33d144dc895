/**
 * The placement scheduler's after-commit hook: a committed write's Trigger (src/placement/
 * changes.ts, OCM's enqueue rules) run by the scheduler before the write returns.
 */
import { registerAfterCommitHook, type AfterCommitHook } from "../store/hooks.ts";
import type { Env } from "../env.ts";
import { triggerForChange } from "./changes.ts";
import type { RunResult, Trigger } from "./plan.ts";

/**
 * The after-commit hook that runs the scheduler for a write's Trigger and waits for it (and for
 * the replica sets following the decisions it changed). Its plan, stored in the outbox row, holds
 * the trigger without the written object; run right after its commit (`target.change`), the
 * trigger is built again with the object as stored, so the scheduler's view applies it without a
 * D1 read; run again by a sweep after a crash, the view reads the object by key. It reports
 * `rewrote` when the run wrote the written object's status (a new Placement's, a binding's Bound
 * condition). Run by a sweep, it asks the replica sets of every placement it scheduled (or
 * skipped) to follow too, since the first run may have written the decisions and died before
 * they ran. When the writer does not wait (an agent's write, `target.writerWaits` false), the
 * trigger is queued durably in the scheduler (`enqueue`) and the hook returns at once; the
 * decisions follow within the scheduler's queue lag (bench:scale "decision lag").
 */
export const schedulingHook: AfterCommitHook<Trigger> = {
  name: "schedule",
  plan: (change) => triggerForChange(change, false),
  async run(env, trigger, target) {
    const full = (target.change && triggerForChange(target.change)) ?? trigger;
    if (!target.writerWaits && !target.recovering) {
      // An agent's write: queued in the scheduler's storage, run by its alarm; the agent returns.
      await env.SCHEDULER.getByName("scheduler").enqueue(full);
      return {};
    }
    const result = await reschedule(env, full, target.recovering);
    return { rewrote: result.statusWritten.includes(`${target.resource}/${target.namespace}/${target.name}`) };
  },
};
registerAfterCommitHook(schedulingHook);

/**
 * Runs the scheduler for `trigger` and waits for it (decisions are updated before the caller
 * returns), and for the replica sets following the decisions it changed (`followAll`: of every
 * placement it scheduled or skipped). Returns the run's result.
 */
export async function reschedule(env: Env, trigger: Trigger, followAll = false): Promise<RunResult> {
  return env.SCHEDULER.getByName("scheduler").reconcile(trigger, followAll);
}
