/**
 * SchedulerObject: the one Durable Object (named "scheduler") that runs the placement controller.
 * Writes that can change a placement's decisions run `reconcile` as their after-commit hook
 * (src/placement/controller.ts) and wait for it, so decisions are computed before the write
 * returns. Runs are serialised and each applies the triggering writes first, so no placement's
 * decisions are computed from a state older than the last write. Triggers that arrive during a
 * run are merged into the next one. Every write of a run goes through the store's one write path
 * (src/store/storage.ts `Storage.commit`: outbox row, after-commit hooks).
 *
 * The object keeps its own view of what scheduling reads (src/placement/view.ts), in memory:
 * built from D1 on its first run after it starts (the cold start), then updated from the changes
 * each trigger carries and from its own writes. After the cold start a run reads D1 only for a
 * change that arrives without its object (one keyed read; e.g. a hook run again by the outbox
 * sweep after a crash, whose stored plan holds only the object's key), for an object whose write
 * conflicted (read again, so the view never keeps a version D1 no longer has), and, at most every
 * RESYNC_INTERVAL_MS, for the consistency check: the writes D1's events log holds after the view's
 * watermark, of which those the view missed (a trigger that never came) are read back and
 * scheduled as their trigger would have been (src/placement/view.ts `catchUp`). When the log no
 * longer reaches the watermark, or D1's counter is below it (a restore), the view is rebuilt and
 * every placement scheduled again, as OCM's informers resync.
 *
 * After a run, the after-commit hooks its own writes owe run outside this object's queue, so the
 * next scheduling run does not wait for them: a PlacementDecision's change wakes its consumers
 * (replica sets, add-ons, policies; the controller manifest, src/controllers.ts), as any write
 * wakes the controllers that watch it. `reconcile` resolves once they finished too, so a write
 * that moves decisions returns after the works followed.
 *
 * One alarm, at the earliest of its timers (durable-objects/timers.ts, and the `requeue` table's
 * rows): toleration expiry (OCM's `tolerationSeconds` requeue; a placement is scheduled again at
 * the moment a toleration expires, not by polling), the triggers accepted by `enqueue` (stored in
 * the `pending_triggers` table until their run succeeded), for writers that must not wait for
 * scheduling, and the hub-wide timers the manifest places here (the outbox sweep, Events' expiry,
 * add-ons' rollout rechecks: the manifest says why), run by a lookup of their names
 * (`timersOf("SchedulerObject")`). A writer's trigger whose outbox row the scheduling hook took over (`enqueueOwed`)
 * is kept in memory instead: its row in D1 is its durable record, deleted once its run finished.
 */
import { DurableObject } from "cloudflare:workers";
import { clock } from "../src/clock.ts";
import { d1Writer } from "../src/placement/controller.ts";
import { mergeTriggers, type RunResult, type Trigger } from "../src/placement/plan.ts";
import { catchUp, runOnView, type SchedulerView } from "../src/placement/view.ts";
import { d1ChangeLog, loadView, refreshStale, resolveTrigger } from "../src/placement/view-d1.ts";
import { storageOf, type Committed } from "../src/store/storage.ts";
import { deferOutboxDelete, OUTBOX_GRACE_MS, OUTBOX_SWEEP_TIMER } from "../src/store/outbox.ts";
import { timersOf } from "../src/controllers.ts";
import { SCHEDULER_NAME } from "../src/env.ts";
import { Timers } from "./timers.ts";
import { PlacementDecisionKind } from "../src/kinds/placement.ts";
import { COUNTED } from "../src/metrics/families.ts";
import { count, flushSoon, observe } from "../src/metrics/recorder.ts";
import type { Env } from "../src/env.ts";

/** How often (milliseconds, at most once per run) the view is checked against D1's events log. */
export const RESYNC_INTERVAL_MS = 10_000;

/** The placement scheduler Durable Object. */
export class SchedulerObject extends DurableObject<Env> {
  private pending: Trigger | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly timers: Timers;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS requeue (placement TEXT PRIMARY KEY, due INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS pending_triggers (id INTEGER PRIMARY KEY AUTOINCREMENT, trigger TEXT NOT NULL);`);
    this.timers = new Timers(ctx.storage, () => clock.now());
    this.timers.create();
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
    await this.armAlarm();
  }

  /** Answers "ok": the readiness check that the scheduler object answers (src/health/routes.ts). */
  ping(): string {
    return "ok";
  }

  /** Whether this instance has set the outbox sweep for the rows it takes over ({@link enqueueOwed}). */
  private sweepSet = false;

  /**
   * Accepts a writer's trigger together with its outbox row `outboxId` (the scheduling hook's
   * only work, src/placement/controller.ts), without waiting for its run and without storing it:
   * the trigger runs from memory (merged with others into the next run), and the row is deleted
   * once that run finished (with other rows, `deferOutboxDelete`). The row is the trigger's durable
   * record: should this instance end before the run (a restart, an eviction), or the run fail,
   * the outbox sweep finds the row once it is due and runs the hook again. So the first row an
   * instance takes sets the sweep (a minute later, when such rows of an earlier instance are
   * due), and a failed run sets it for its rows. No row written here: the decisions' writes are
   * the run's own.
   */
  async enqueueOwed(trigger: Trigger, outboxId: string): Promise<void> {
    if (!this.sweepSet) {
      this.sweepSet = true;
      await this.sweepOutboxAt(clock.now() + OUTBOX_GRACE_MS);
    }
    const waitUntil = (p: Promise<unknown>) => this.ctx.waitUntil(p);
    waitUntil(
      this.reconcile(trigger).then(
        () => deferOutboxDelete(this.env, outboxId, waitUntil),
        async (e: unknown) => {
          console.error("scheduler: a run of taken-over triggers failed; the outbox sweep runs them again", e);
          await this.sweepOutboxAt(clock.now() + OUTBOX_GRACE_MS);
        },
      ),
    );
  }

  /**
   * Schedules again the placements `trigger` can affect and resolves once a run that started
   * after this call has finished, and the hooks its writes owe too (the decisions' consumers).
   * Returns that run's result (placements scheduled and skipped, writes, placements whose
   * decisions changed, objects whose status it wrote).
   */
  async reconcile(trigger: Trigger): Promise<RunResult> {
    this.pending = this.pending ? mergeTriggers(this.pending, trigger) : trigger;
    const run = this.queue.then(() => this.runPending());
    this.queue = run.catch(() => undefined);
    const { result, followUp } = await run;
    await followUp;
    return result;
  }

  private last: { result: RunResult; followUp: Promise<void> } = {
    result: { scheduled: [], skipped: [], writes: 0, requeue: {}, decisionsChanged: [], statusWritten: [] },
    followUp: Promise.resolve(),
  };
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
    // A clock that went back (syncedAt ahead of now) checks again too.
    if (!this.view || now - this.syncedAt >= RESYNC_INTERVAL_MS || now < this.syncedAt) trigger = await this.sync(trigger, now);
    const view = this.view!;
    await resolveTrigger(this.env, view, trigger);
    const writer = d1Writer(this.env, now);
    let result: RunResult;
    // Counted for /metrics (src/metrics/recorder.ts): the run, its duration (elapsed, milliseconds of performance.now(), not the injected clock a test may move), the decisions it wrote.
    const started = performance.now();
    let decisions = 0;
    const save: typeof writer.save = async (def, current, next) => {
      const saved = await writer.save(def, current, next);
      if (saved.written && def.kind === PlacementDecisionKind.kind) decisions++;
      return saved;
    };
    try {
      result = await runOnView(view, trigger, now, save);
      count(COUNTED.schedulerRuns, { result: "success" });
      count(COUNTED.placementsScheduled, {}, result.scheduled.length);
    } catch (e) {
      count(COUNTED.schedulerRuns, { result: "error" });
      throw e;
    } finally {
      observe(COUNTED.schedulingDuration, { name: "placement_scheduling" }, (performance.now() - started) / 1000);
      if (decisions > 0) count(COUNTED.decisionsWritten, {}, decisions);
      flushSoon(this.env, (p) => this.ctx.waitUntil(p), 0);
      await refreshStale(this.env, view);
    }
    const sql = this.ctx.storage.sql;
    for (const p of result.scheduled) {
      const due = result.requeue[p];
      if (due === undefined) sql.exec("DELETE FROM requeue WHERE placement = ?", p);
      else sql.exec("INSERT INTO requeue (placement, due) VALUES (?, ?) ON CONFLICT (placement) DO UPDATE SET due = excluded.due", p, due);
    }
    await this.armAlarm();
    this.last = { result, followUp: this.followUp(writer.owing, now) };
    return this.last;
  }

  /**
   * What follows a run outside the queue: the after-commit hooks the run's own writes owe (a
   * PlacementDecision's consumers). A hook that fails is left to the outbox sweep.
   */
  private async followUp(owing: Committed[], now: number): Promise<void> {
    await storageOf(this.env).finishTogether(owing, now);
  }

  /** Builds the view (cold start), or checks it against D1 and adds what it missed to `trigger`. */
  private async sync(trigger: Trigger, now: number): Promise<Trigger> {
    if (this.view) {
      const caught = await catchUp(this.view, d1ChangeLog(this.env), this.watermark);
      if (caught) {
        this.watermark = caught.watermark;
        this.syncedAt = now;
        return mergeTriggers(trigger, caught.trigger);
      }
    }
    const rebuild = this.view !== null;
    const loaded = await loadView(this.env);
    this.view = loaded.view;
    this.watermark = loaded.watermark;
    this.syncedAt = now;
    return rebuild ? mergeTriggers(trigger, { placements: loaded.view.placementKeys() }) : trigger;
  }

  /** Arms the alarm at the earliest timer or requeue row, or at once while triggers are stored. */
  private async armAlarm(): Promise<void> {
    const sql = this.ctx.storage.sql;
    const pending = sql.exec("SELECT 1 FROM pending_triggers LIMIT 1").toArray().length > 0;
    const requeue = pending ? clock.now() : (sql.exec<{ due: number | null }>("SELECT MIN(due) AS due FROM requeue").toArray()[0]?.due ?? null);
    await this.timers.nextAlarm(requeue);
  }

  /**
   * Sets the after-commit outbox sweep to run no later than `at` (epoch milliseconds); called
   * when outbox rows are left (src/store/outbox.ts `armSweep`).
   */
  async sweepOutboxAt(at: number): Promise<void> {
    await this.setTimer(OUTBOX_SWEEP_TIMER, at);
  }

  /**
   * Sets this object's timer row `purpose` (a timer of the manifest, src/timers.ts: the outbox
   * sweep, Events' expiry, `addon:<name>`) to fire no later than `at` (epoch milliseconds).
   */
  async setTimer(purpose: string, at: number): Promise<void> {
    this.timers.setEarlier(purpose, at);
    await this.armAlarm();
  }

  /**
   * Runs what is due: the timers' rows, each by its handler in the manifest (set again when its
   * handler says so), then, in one run, the placements whose toleration expired and the triggers
   * `enqueue` stored. A requeue row and a stored trigger are removed only once that run
   * succeeded (a requeue row of a placement that no longer exists too), so a crash during the
   * run leaves them for the next alarm.
   */
  override async alarm(): Promise<void> {
    this.timers.fired();
    const now = clock.now();
    const sql = this.ctx.storage.sql;
    await this.timers.runDue(now, timersOf("SchedulerObject"), {
      env: this.env,
      object: SCHEDULER_NAME,
      setTimer: async (purpose, at) => this.timers.setEarlier(purpose, at),
    });
    const due = sql
      .exec<{ placement: string }>("SELECT placement FROM requeue WHERE due <= ?", now)
      .toArray()
      .map((r) => r.placement);
    const stored = sql.exec<{ id: number; trigger: string }>("SELECT id, trigger FROM pending_triggers ORDER BY id").toArray();
    if (due.length > 0 || stored.length > 0) {
      await this.reconcile(stored.reduce<Trigger>((t, r) => mergeTriggers(t, JSON.parse(r.trigger) as Trigger), { placements: due }));
      // Rows of placements that no longer exist (the run did not schedule them) are due still.
      for (const p of due) sql.exec("DELETE FROM requeue WHERE placement = ? AND due <= ?", p, now);
      if (stored.length > 0) sql.exec("DELETE FROM pending_triggers WHERE id <= ?", stored[stored.length - 1]!.id);
    }
    await this.armAlarm();
  }
}
