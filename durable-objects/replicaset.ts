/**
 * ReplicaSetObject: one Durable Object per ManifestWorkReplicaSet, named `<namespace>/<name>`,
 * that runs its controller (src/work/replicaset.ts), and one per KubeFleet placement, named
 * `placement:<namespace>/<name>` (its target's namespace prefixed `placement:`), that runs the
 * placement controller (src/fleet/controller.ts) alike, and one per Karmada propagation policy,
 * named `karmada:<namespace>/<name>`, that runs src/fleet/karmada/controller.ts. Runs of one replica set are serialised
 * here, and each reads the state after the write that triggered it: a trigger that arrives
 * during a run makes one more run after it (triggers coalesce, as in durable-objects/scheduler.ts).
 *
 * - `reconcile` (awaited): runs and resolves once a run that started after the call finished.
 *   Used by writes the controller never makes itself (replica set spec changes, placement
 *   decision changes), so a run never waits for its own object.
 * - `notify` (not awaited): sets the object's alarm to now (or, right after a run, to when
 *   {@link NOTIFIED_RUN_SHARE} allows the next) and returns. Used for writes the
 *   controller's own runs make too (work deletions), so a run never waits on itself (a
 *   deletion the current run is making is ignored), and for work status reports, so that an
 *   agent's report returns at once and many clusters' reports coalesce into one run.
 * - `notifyPlacement` (not awaited): `notify` for a placement's object, with its works' changes
 *   (kept between runs: src/fleet/works-cache.ts) and, for a selected object's change, a run at once.
 *
 * Rollout timers (minSuccessTime soak ends, progressDeadline expiries), notifications and retries
 * are this object's `replicaset` timer (a row of its timers table, durable-objects/timers.ts, as
 * every object keeps its timers; the controller manifest, src/controllers.ts, names it), set at
 * the earliest due time a run reports: the replica set runs again at that moment, with no
 * polling. A failed run is retried by it with a backoff (1 s doubling to 5 min).
 */
import { DurableObject } from "cloudflare:workers";
import { clock } from "../src/clock.ts";
import { runReplicaSet, WorksCache, type ReplicaSetChange, type RunOutcome } from "../src/work/replicaset.ts";
import { PLACEMENT_TARGET_PREFIX, runPlacement, type PlacementRunOutcome } from "../src/fleet/controller.ts";
import { PlacementWorksCache, type PlacementWorkChange } from "../src/fleet/works-cache.ts";
import { KARMADA_TARGET_PREFIX, runKarmadaPolicy } from "../src/fleet/karmada/controller.ts";
import { runUpdateRun, type UpdateRunOutcome } from "../src/fleet/updaterun/controller.ts";
import { UPDATERUN_TARGET_PREFIX } from "../src/fleet/updaterun/wake.ts";
import { EVICTION_TARGET_PREFIX, runEvictions } from "../src/fleet/eviction.ts";
import type { KubeObject } from "../src/k8s/meta.ts";
import type { Env } from "../src/env.ts";
import { timersOf } from "../src/controllers.ts";
import { Timers } from "./timers.ts";

/** The timer of the replica set's next run (the manifest's `replicaset` timer, run by this object itself). */
const RUN_TIMER = "replicaset";
/** A staged update run's TimedWait (the manifest's `updaterun-wait` timer): its end runs the run's controller. */
const WAIT_TIMER = "updaterun-wait";
/** The table of the replica set this object runs. */
const TARGET_SCHEMA = "CREATE TABLE IF NOT EXISTS target (id INTEGER PRIMARY KEY CHECK (id = 1), namespace TEXT NOT NULL, name TEXT NOT NULL)";

/** Immediate re-runs after lost write races before the object backs off to its alarm. */
const MAX_IMMEDIATE_RERUNS = 3;
/** Longest retry delay after failed runs, in milliseconds. */
const MAX_BACKOFF_MS = 300_000;
/**
 * The most of its time a replica set's object spends on runs that notifications asked for (its
 * works' status reports): after a run of d milliseconds, the next such run waits
 * d x (1 / share - 1). A run reads every work of the replica set, so during a large fleet's
 * rollout its reports would otherwise keep it running, taking the CPU the reports themselves need
 * (bench:propagation at 3,000 clusters); the summary lags by at most that wait (about 0.3 s at
 * 3,000 works). Runs that a write waits for (spec, decisions) are never held back.
 */
const NOTIFIED_RUN_SHARE = 0.1;
/**
 * The share of {@link NOTIFIED_RUN_SHARE} for a KubeFleet placement whose rollout waits on its
 * clusters' reports (some picked clusters are held back by `maxUnavailable`, or their works'
 * Applied and Available are not known yet): each report of an updated cluster may let the next
 * ones go, and KubeFleet's rollout controller moves on as soon as a binding is ready, so its run
 * is held back no longer than it took.
 */
const ROLLOUT_RUN_SHARE = 0.5;

/** The replica set controller's Durable Object. */
export class ReplicaSetObject extends DurableObject<Env> {
  private pending = false;
  private notified = false;
  /** A notification asked for a run at once, not after {@link NOTIFIED_RUN_SHARE} allows (a placement's selected object changed). */
  private prompt = false;
  private running = false;
  private readonly deleting = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();
  private failures = 0;
  private reruns = 0;
  private targetCache: { namespace: string; name: string } | null = null;
  /**
   * Earliest time (epoch ms) a notified run may start: after the last run, so that a storm of
   * notifications (status reports of a large fleet) keeps the controller busy at most
   * {@link NOTIFIED_RUN_SHARE} of the time.
   */
  private nextRunAt = 0;
  /** The replica set's works as this object last knew them (src/work/replicaset.ts WorksCache). */
  private readonly works = new WorksCache();
  /**
   * A placement's works as this object last knew them (src/fleet/works-cache.ts): made by a
   * placement's object on its first use (a replica set's or a policy's object never needs one).
   */
  private placementWorksCache: PlacementWorksCache | undefined;
  private get placementWorks(): PlacementWorksCache {
    return (this.placementWorksCache ??= new PlacementWorksCache());
  }
  /**
   * The object's timers (its one alarm's owner; the rows are kept in memory once read, so a
   * notification, one per work status report, reads no storage to learn the next run).
   */
  private readonly timers: Timers;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(TARGET_SCHEMA);
    this.timers = new Timers(ctx.storage, () => clock.now());
    this.timers.create();
  }

  private remember(namespace: string, name: string): void {
    if (this.targetCache?.namespace === namespace && this.targetCache.name === name) return;
    this.ctx.storage.sql.exec(
      "INSERT INTO target (id, namespace, name) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET namespace = excluded.namespace, name = excluded.name",
      namespace,
      name,
    );
    this.targetCache = { namespace, name };
  }

  private target(): { namespace: string; name: string } | null {
    this.targetCache ??= this.ctx.storage.sql.exec<{ namespace: string; name: string }>("SELECT namespace, name FROM target WHERE id = 1").toArray()[0] ?? null;
    return this.targetCache;
  }

  /**
   * Runs the replica set `namespace/name` and resolves once a run that started after this call
   * has finished. Never rejects for a failed run (the alarm retries it).
   */
  async reconcile(namespace: string, name: string): Promise<void> {
    // A placement's own write: its run reads the ManagedClusters afresh (src/fleet/works-cache.ts).
    this.placementWorksCache?.forgetClusters();
    await this.runAfter(namespace, name);
  }

  /**
   * Runs and resolves once a run that started after this call has finished: {@link reconcile}
   * without its forgetting (the alarm's run, which a notification or timer asked for, keeps
   * what the placement's object holds).
   */
  private async runAfter(namespace: string, name: string): Promise<void> {
    this.remember(namespace, name);
    this.pending = true;
    const run = this.queue.then(() => this.runPending());
    this.queue = run.catch(() => undefined);
    await run;
  }

  /**
   * Asks for a run shortly after, without waiting for it: the alarm is set to now. A work
   * deletion in `deletedWorkIn` (a cluster's name) that the current run is making is ignored.
   */
  async notify(namespace: string, name: string, deletedWorkIn?: string, work?: KubeObject | null): Promise<void> {
    await this.notifyMany(namespace, name, [{ deletedWorkIn, work }]);
  }

  /**
   * {@link notify} for several changes of the replica set's works at once (the notifications of
   * one isolate grouped while the one before was in flight: src/work/replicaset.ts): one call
   * and at most one alarm write for all of them.
   */
  async notifyMany(namespace: string, name: string, changes: readonly ReplicaSetChange[]): Promise<void> {
    let wanted = false;
    for (const { deletedWorkIn, work } of changes) {
      // What changed is kept (the work as stored, or its removal); a change that comes without it
      // (an outbox sweep) makes the next run read every work again.
      if (work) this.works.apply(work);
      else if (work === null && deletedWorkIn !== undefined) this.works.remove(deletedWorkIn);
      else this.works.invalidate();
      if (!(this.running && deletedWorkIn !== undefined && this.deleting.has(deletedWorkIn))) wanted = true;
    }
    if (!wanted) return;
    await this.ask(namespace, name, false);
  }

  /**
   * {@link notifyMany} for a KubeFleet placement's object: the changes of its works (a status
   * report's work as stored without its spec, a removal) are kept for its next run
   * (src/fleet/works-cache.ts); a `prompt` change (a selected object or a cluster changed) sets the
   * run at once, not after the object's share of time for runs that status reports ask for.
   */
  async notifyPlacement(namespace: string, name: string, changes: readonly PlacementWorkChange[]): Promise<void> {
    let prompt = false;
    for (const c of changes) {
      this.placementWorks.take(c);
      if (c.prompt) prompt = true;
    }
    await this.ask(namespace, name, prompt);
  }

  /**
   * Asks for a run at once, without waiting for it (a staged update run's object: its run, its
   * approval request or its placement's bindings changed: src/fleet/updaterun/wake.ts).
   */
  async wake(namespace: string, name: string): Promise<void> {
    await this.ask(namespace, name, true);
  }

  /** Sets the run's timer for a notification: now when `prompt`, else when {@link NOTIFIED_RUN_SHARE} allows. */
  private async ask(namespace: string, name: string, prompt: boolean): Promise<void> {
    this.remember(namespace, name);
    this.notified = true;
    if (prompt) this.prompt = true;
    const due = prompt ? clock.now() : Math.max(clock.now(), this.nextRunAt);
    const at = this.timers.get(RUN_TIMER);
    if (at === null || at > due) {
      this.timers.set(RUN_TIMER, due);
      await this.timers.nextAlarm();
    }
  }

  private async runPending(): Promise<void> {
    if (!this.pending) return;
    this.pending = false;
    this.notified = false;
    this.prompt = false;
    const t = this.target();
    if (!t) return;
    let outcome: RunOutcome & PlacementRunOutcome & UpdateRunOutcome;
    this.running = true;
    const started = clock.now();
    try {
      // The controller is picked by the target's prefix (a namespace never holds ':'): a KubeFleet
      // placement's object (named `placement:<namespace>/<name>`) runs the placement controller
      // (src/fleet/controller.ts) with the same serialisation, coalescing and retries; a Karmada
      // policy's (`karmada:<namespace>/<name>`) runs src/fleet/karmada/controller.ts alike; a staged
      // update run's (`updaterun:<namespace>/<name>`) runs src/fleet/updaterun/controller.ts; a
      // placement's evictions (`eviction:/<placement>`) run src/fleet/eviction.ts, one at a time; a
      // replica set's (`<namespace>/<name>`) runs src/work/replicaset.ts.
      const colon = t.namespace.indexOf(":");
      const prefix = colon < 0 ? "" : t.namespace.slice(0, colon + 1);
      const ref = { namespace: t.namespace.slice(prefix.length), name: t.name };
      switch (prefix) {
        case PLACEMENT_TARGET_PREFIX:
          outcome = await runPlacement(this.env, ref, clock.now(), this.placementWorks);
          break;
        case UPDATERUN_TARGET_PREFIX:
          outcome = await runUpdateRun(this.env, ref, clock.now());
          break;
        case KARMADA_TARGET_PREFIX:
          outcome = await runKarmadaPolicy(this.env, ref, clock.now());
          break;
        case EVICTION_TARGET_PREFIX:
          outcome = await runEvictions(this.env, t.name, clock.now());
          break;
        default:
          outcome = await runReplicaSet(this.env, t.namespace, t.name, clock.now(), { deleting: (c) => this.deleting.add(c), cache: this.works });
      }
      this.failures = 0;
    } catch (e) {
      console.error(`replica set ${t.namespace}/${t.name}: run failed`, e);
      this.failures++;
      outcome = { recheckAt: clock.now() + Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (this.failures - 1)) };
    } finally {
      this.running = false;
      this.deleting.clear();
      const ended = clock.now();
      this.nextRunAt = ended + (ended - started) * (1 / NOTIFIED_RUN_SHARE - 1);
    }
    if (outcome.awaitingReports) this.nextRunAt = Math.min(this.nextRunAt, clock.now() + (clock.now() - started) * (1 / ROLLOUT_RUN_SHARE - 1));
    // A run that stopped at its share of works goes on at once (a new invocation, its alarm).
    if (outcome.more) outcome.recheckAt = Math.min(outcome.recheckAt ?? Infinity, clock.now());
    if (outcome.rerun) {
      this.reruns++;
      const delay = this.reruns <= MAX_IMMEDIATE_RERUNS ? 0 : Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (this.reruns - MAX_IMMEDIATE_RERUNS - 1));
      outcome.recheckAt = Math.min(outcome.recheckAt ?? Infinity, clock.now() + delay);
    } else {
      this.reruns = 0;
    }
    if (outcome.gone && !this.notified && !this.pending) {
      // Nothing of the replica set remains: forget it (a later trigger starts afresh).
      await this.timers.reset();
      await this.ctx.storage.deleteAll();
      this.placementWorksCache?.invalidate();
      this.targetCache = null;
      this.ctx.storage.sql.exec(TARGET_SCHEMA);
      this.timers.create();
      return;
    }
    // A TimedWait's end is its own named timer (the run's timer may move before it).
    if (outcome.waitUntil !== undefined) this.timers.set(WAIT_TIMER, outcome.waitUntil);
    else this.timers.cancel(WAIT_TIMER);
    const notifiedAt = this.prompt ? clock.now() : Math.max(clock.now(), this.nextRunAt);
    await this.armAlarm(this.notified ? Math.min(notifiedAt, outcome.recheckAt ?? Infinity) : outcome.recheckAt);
  }

  /** Sets the next run's timer at `at` (epoch ms; undefined: none) and the alarm with it. */
  private async armAlarm(at: number | undefined): Promise<void> {
    if (at === undefined) this.timers.cancel(RUN_TIMER);
    else this.timers.set(RUN_TIMER, Math.max(at, clock.now()));
    await this.timers.nextAlarm();
  }

  /**
   * The one alarm: a rollout timer, a notification or a retry (the `replicaset` timer) runs the
   * replica set; any other due row runs by the manifest's lookup. An alarm set before the timers
   * table (no row at all) runs the replica set too.
   */
  override async alarm(): Promise<void> {
    this.timers.fired();
    const now = clock.now();
    const due = this.timers.due(now);
    const run = due.includes(RUN_TIMER) || due.includes(WAIT_TIMER) || this.timers.earliest() === null;
    const t = this.target();
    await this.timers.runDue(
      now,
      timersOf("ReplicaSetObject"),
      { env: this.env, object: t ? `${t.namespace}/${t.name}` : "", setTimer: async (p, at) => this.timers.setEarlier(p, at) },
      [RUN_TIMER, WAIT_TIMER],
    );
    if (run) {
      this.timers.cancel(RUN_TIMER);
      if (due.includes(WAIT_TIMER)) this.timers.cancel(WAIT_TIMER);
      if (t) await this.runAfter(t.namespace, t.name);
    }
    await this.timers.nextAlarm();
  }
}
