/**
 * SchedulerObject: the one Durable Object (named "scheduler") that runs the placement controller.
 * Writes that can change a placement's decisions run `reconcile` as their after-commit hook
 * (src/placement/triggers.ts) and wait for it, so decisions are computed before the write
 * returns. Runs are serialised and each reads the state after the triggering write, so no
 * placement's decisions are computed from a state older than the last write. Triggers that
 * arrive during a run are merged into the next one.
 *
 * After a run, the ManifestWorkReplicaSets that refer to a placement whose decisions changed run
 * (src/work/replicaset.ts `replicaSetsForPlacements`) outside this object's queue, so the next
 * scheduling run does not wait for them; `reconcile` resolves once they finished too, so a write
 * that moves decisions returns after the works followed.
 *
 * One alarm, at the earliest of its timers (SQLite tables): toleration expiry (OCM's
 * `tolerationSeconds` requeue; a placement is scheduled again at the moment a toleration
 * expires, not by polling) and the after-commit outbox sweep (src/store/outbox.ts), set while
 * outbox rows are left to run again.
 */
import { DurableObject } from "cloudflare:workers";
import { mergeTriggers, runPlacementController, type RunResult, type Trigger } from "../src/placement/controller.ts";
import { replicaSetsForPlacements } from "../src/work/replicaset.ts";
import { finishCommit, type Committed } from "../src/store/write.ts";
import { sweepOutbox } from "../src/store/outbox.ts";
import type { Env } from "../src/env.ts";

/** The name of the single scheduler object. */
export const SCHEDULER_NAME = "scheduler";

/** The timer (row of the `timers` table) of the after-commit outbox sweep. */
const SWEEP_TIMER = "outbox-sweep";

/** The placement scheduler Durable Object. */
export class SchedulerObject extends DurableObject<Env> {
  private pending: { trigger: Trigger; followAll: boolean } | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS requeue (placement TEXT PRIMARY KEY, due INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS timers (purpose TEXT PRIMARY KEY, due INTEGER NOT NULL);`);
  }

  /**
   * Schedules again the placements `trigger` can affect and resolves once a run that started
   * after this call has finished, and the replica sets following its decision changes too
   * (`followAll`: the replica sets of every placement the run scheduled, whether or not their
   * decisions changed; used when a crashed write's trigger runs again). Returns that run's
   * result (placements scheduled, writes, placements whose decisions changed).
   */
  async reconcile(trigger: Trigger, followAll = false): Promise<RunResult> {
    this.pending = this.pending ? { trigger: mergeTriggers(this.pending.trigger, trigger), followAll: this.pending.followAll || followAll } : { trigger, followAll };
    const run = this.queue.then(() => this.runPending());
    this.queue = run.catch(() => undefined);
    const { result, followUp } = await run;
    await followUp;
    return result;
  }

  private last: { result: RunResult; followUp: Promise<void> } = { result: { scheduled: [], writes: 0, requeue: {}, decisionsChanged: [], statusWritten: [] }, followUp: Promise.resolve() };

  private async runPending(): Promise<{ result: RunResult; followUp: Promise<void> }> {
    const pending = this.pending;
    this.pending = null;
    if (!pending) return this.last;
    const now = Date.now();
    const { result, owing } = await runPlacementController(this.env, pending.trigger, now);
    const sql = this.ctx.storage.sql;
    for (const p of result.scheduled) {
      const due = result.requeue[p];
      if (due === undefined) sql.exec("DELETE FROM requeue WHERE placement = ?", p);
      else sql.exec("INSERT INTO requeue (placement, due) VALUES (?, ?) ON CONFLICT (placement) DO UPDATE SET due = excluded.due", p, due);
    }
    await this.armAlarm();
    this.last = { result, followUp: this.followUp(pending.followAll ? result.scheduled : result.decisionsChanged, owing, now) };
    return this.last;
  }

  /** What follows a run outside the queue: the replica sets of `placements`, and the after-commit work the run's own writes owe. */
  private async followUp(placements: string[], owing: Committed[], now: number): Promise<void> {
    await Promise.all([replicaSetsForPlacements(this.env, placements), ...owing.map((c) => finishCommit(this.env, c, now))]);
  }

  private async armAlarm(): Promise<void> {
    const row = this.ctx.storage.sql.exec<{ due: number | null }>("SELECT MIN(due) AS due FROM (SELECT due FROM requeue UNION ALL SELECT due FROM timers)").toArray()[0];
    if (row?.due == null) {
      await this.ctx.storage.deleteAlarm();
      return;
    }
    const current = await this.ctx.storage.getAlarm();
    if (current !== row.due) await this.ctx.storage.setAlarm(Math.max(row.due, Date.now() + 1));
  }

  /**
   * Sets the after-commit outbox sweep to run no later than `at` (epoch milliseconds); called
   * when outbox rows are left (src/store/outbox.ts `armSweep`).
   */
  async sweepOutboxAt(at: number): Promise<void> {
    this.ctx.storage.sql.exec("INSERT INTO timers (purpose, due) VALUES (?, ?) ON CONFLICT (purpose) DO UPDATE SET due = min(due, excluded.due)", SWEEP_TIMER, at);
    await this.armAlarm();
  }

  /**
   * Runs what is due: the outbox sweep (set again while rows are left), and the placements whose
   * toleration expired. A requeue row is removed only once its placement was scheduled again (or
   * is gone), so a crash during the run leaves it for the next alarm.
   */
  override async alarm(): Promise<void> {
    const now = Date.now();
    const sql = this.ctx.storage.sql;
    const sweep = sql.exec<{ due: number }>("SELECT due FROM timers WHERE purpose = ? AND due <= ?", SWEEP_TIMER, now).toArray()[0];
    if (sweep) {
      sql.exec("DELETE FROM timers WHERE purpose = ?", SWEEP_TIMER);
      try {
        const { nextDue } = await sweepOutbox(this.env, now);
        if (nextDue !== null) await this.sweepOutboxAt(nextDue);
      } catch (e) {
        console.error("outbox sweep failed; trying again in a minute", e);
        await this.sweepOutboxAt(now + 60_000);
      }
    }
    const due = sql.exec<{ placement: string }>("SELECT placement FROM requeue WHERE due <= ?", now).toArray().map((r) => r.placement);
    if (due.length > 0) {
      await this.reconcile({ placements: due });
      // Rows of placements that no longer exist (the run did not schedule them) are due still.
      for (const p of due) sql.exec("DELETE FROM requeue WHERE placement = ? AND due <= ?", p, now);
    }
    await this.armAlarm();
  }
}
