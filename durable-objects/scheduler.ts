/**
 * SchedulerObject: the one Durable Object (named "scheduler") that runs the placement controller.
 * Writes that can change a placement's decisions call `reconcile` after they commit and wait for
 * it, so decisions are computed before the write returns. Runs are serialised and each applies
 * the triggering writes first, so no placement's decisions are computed from a state older than
 * the last write. Triggers that arrive during a run are merged into the next one.
 *
 * The object keeps its own view of what scheduling reads (src/placement/view.ts), in memory:
 * built from D1 on its first run after it starts (the cold start), then updated from the changes
 * each trigger carries and from its own writes. After the cold start a run reads D1 only for a
 * change that arrives without its object (one keyed read), for an object whose write conflicted
 * (read again, so the view never keeps a version D1 no longer has), and, at most every
 * RESYNC_INTERVAL_MS, for the consistency check: the writes D1's events log holds after the view's
 * watermark, of which those the view missed (a trigger that never came) are read back and
 * scheduled as their trigger would have been (src/placement/view.ts `catchUp`). When the log no
 * longer reaches the watermark, or D1's counter is below it (a restore), the view is rebuilt and
 * every placement scheduled again, as OCM's informers resync.
 *
 * After a run, the ManifestWorkReplicaSets that refer to a placement whose decisions changed run
 * (src/work/replicaset.ts `replicaSetsForPlacements`) outside this object's queue, so the next
 * scheduling run does not wait for them; `reconcile` resolves once they finished too, so a write
 * that moves decisions returns after the works followed.
 *
 * Toleration expiry (OCM's `tolerationSeconds` requeue) is a schedule table in this object's
 * SQLite with one alarm at the earliest due time: a placement is scheduled again at the moment a
 * toleration expires, not by polling. The same alarm runs the triggers accepted by `enqueue`
 * (stored in the `pending_triggers` table until their run succeeded), for writers that must not
 * wait for scheduling.
 */
import { DurableObject } from "cloudflare:workers";
import { clock } from "../src/clock.ts";
import { database } from "../src/k8s/store.ts";
import { save } from "../src/placement/controller.ts";
import { mergeTriggers, type RunResult, type Trigger } from "../src/placement/plan.ts";
import { catchUp, runOnView, type SchedulerView } from "../src/placement/view.ts";
import { d1ChangeLog, loadView, refreshStale, resolveTrigger } from "../src/placement/view-d1.ts";
import { replicaSetsForPlacements } from "../src/work/replicaset.ts";
import type { Env } from "../src/env.ts";

/** The name of the single scheduler object. */
export const SCHEDULER_NAME = "scheduler";

/** How often (milliseconds, at most once per run) the view is checked against D1's events log. */
export const RESYNC_INTERVAL_MS = 10_000;

/** The placement scheduler Durable Object. */
export class SchedulerObject extends DurableObject<Env> {
  private pending: Trigger | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS requeue (placement TEXT PRIMARY KEY, due INTEGER NOT NULL)");
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS pending_triggers (id INTEGER PRIMARY KEY AUTOINCREMENT, trigger TEXT NOT NULL)");
  }

  /**
   * Accepts a trigger without waiting for its run, for a change whose writer must not wait for
   * scheduling (an agent's status report, a lease expiry): the trigger is stored in this object's
   * SQLite and the alarm set to fire at once; the alarm runs every stored trigger in one run and
   * deletes them once it succeeded (a failed alarm is retried). The decisions follow after the
   * runs already queued and that one.
   */
  async enqueue(trigger: Trigger): Promise<void> {
    this.ctx.storage.sql.exec("INSERT INTO pending_triggers (trigger) VALUES (?)", JSON.stringify(trigger));
    const now = clock.now();
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > now) await this.ctx.storage.setAlarm(now);
  }

  /**
   * Schedules again the placements `trigger` can affect and resolves once a run that started
   * after this call has finished, and the replica sets following its decision changes too.
   * Returns that run's result (placements scheduled, writes, placements whose decisions changed).
   */
  async reconcile(trigger: Trigger): Promise<RunResult> {
    this.pending = this.pending ? mergeTriggers(this.pending, trigger) : trigger;
    const run = this.queue.then(() => this.runPending());
    this.queue = run.catch(() => undefined);
    const { result, followUp } = await run;
    await followUp;
    return result;
  }

  private last: { result: RunResult; followUp: Promise<void> } = { result: { scheduled: [], skipped: [], writes: 0, requeue: {}, decisionsChanged: [] }, followUp: Promise.resolve() };
  private view: SchedulerView | null = null;
  /** Every write up to this resourceVersion is in the view. */
  private watermark = 0;
  /** When the view was last built or checked (epoch milliseconds). */
  private syncedAt = -Infinity;

  private async runPending(): Promise<{ result: RunResult; followUp: Promise<void> }> {
    let trigger = this.pending;
    this.pending = null;
    if (!trigger) return this.last;
    const now = clock.now();
    const db = database(this.env.DB);
    if (!this.view || now - this.syncedAt >= RESYNC_INTERVAL_MS) trigger = await this.sync(db, trigger, now);
    const view = this.view!;
    await resolveTrigger(db, view, trigger);
    let result: RunResult;
    try {
      result = await runOnView(view, trigger, now, (def, current, next) => save(db, def, current, next));
    } finally {
      await refreshStale(db, view);
    }
    const sql = this.ctx.storage.sql;
    for (const p of result.scheduled) {
      const due = result.requeue[p];
      if (due === undefined) sql.exec("DELETE FROM requeue WHERE placement = ?", p);
      else sql.exec("INSERT INTO requeue (placement, due) VALUES (?, ?) ON CONFLICT (placement) DO UPDATE SET due = excluded.due", p, due);
    }
    await this.armAlarm();
    this.last = { result, followUp: replicaSetsForPlacements(this.env, result.decisionsChanged) };
    return this.last;
  }

  /** Builds the view (cold start), or checks it against D1 and adds what it missed to `trigger`. */
  private async sync(db: ReturnType<typeof database>, trigger: Trigger, now: number): Promise<Trigger> {
    if (this.view) {
      const caught = await catchUp(this.view, d1ChangeLog(db), this.watermark);
      if (caught) {
        this.watermark = caught.watermark;
        this.syncedAt = now;
        return mergeTriggers(trigger, caught.trigger);
      }
    }
    const rebuild = this.view !== null;
    const loaded = await loadView(db);
    this.view = loaded.view;
    this.watermark = loaded.watermark;
    this.syncedAt = now;
    return rebuild ? mergeTriggers(trigger, { placements: loaded.view.placementKeys() }) : trigger;
  }

  private async armAlarm(): Promise<void> {
    const sql = this.ctx.storage.sql;
    const pending = sql.exec("SELECT 1 FROM pending_triggers LIMIT 1").toArray().length > 0;
    const row = pending ? { due: clock.now() } : sql.exec<{ due: number }>("SELECT MIN(due) AS due FROM requeue").toArray()[0];
    if (row?.due == null) {
      await this.ctx.storage.deleteAlarm();
      return;
    }
    const current = await this.ctx.storage.getAlarm();
    if (current !== row.due) await this.ctx.storage.setAlarm(Math.max(row.due, clock.now() + 1));
  }

  /** Runs the placements whose toleration expired and the triggers `enqueue` stored. */
  override async alarm(): Promise<void> {
    const sql = this.ctx.storage.sql;
    const now = clock.now();
    const due = sql.exec<{ placement: string }>("SELECT placement FROM requeue WHERE due <= ?", now).toArray().map((r) => r.placement);
    sql.exec("DELETE FROM requeue WHERE due <= ?", now);
    const stored = sql.exec<{ id: number; trigger: string }>("SELECT id, trigger FROM pending_triggers ORDER BY id").toArray();
    if (due.length > 0 || stored.length > 0) {
      await this.reconcile(stored.reduce<Trigger>((t, r) => mergeTriggers(t, JSON.parse(r.trigger) as Trigger), { placements: due }));
      if (stored.length > 0) sql.exec("DELETE FROM pending_triggers WHERE id <= ?", stored[stored.length - 1]!.id);
    }
    await this.armAlarm();
  }
}
