/**
 * The work agent's loops against the hub (docs/agent-protocol.md "Works" and "Leave"):
 *
 * - **poll**: `GET /agent/v1/clusters/{name}/works?waitSeconds=N` with `If-None-Match` of the
 *   last ETag; a 200 hands the list to the sync loop at once, a 304 means nothing changed. A hub
 *   that answers faster than `worksMinPollMs` is not polled again before that time has passed.
 *   Failures back off (capped exponential, full jitter) and log one line per state change.
 * - **sync**: every status-sync period (`wait.Jitter(interval, 0.9)` as OCM: interval to
 *   1.9 × interval) and at once after a changed list, one {@link WorkController.sync} pass, then
 *   `PUT .../works/{work}/status` with `{uid, status}` for each work whose status changed since
 *   its last successful report. A 404 or 409 answer means the work is gone or replaced: no more
 *   reports for that uid. The sync loop runs whether or not the hub answers, so drift is
 *   repaired from the last known works while the hub is unreachable.
 * - **leave**: when a works answer or a heartbeat says `leaving: true`, the sync loop releases
 *   everything the works applied (honouring Orphan and SelectivelyOrphan), deletes the records,
 *   calls `POST .../left`, deletes the credentials Secret, logs one line and ends with `"left"`.
 */
import { createHash } from "node:crypto";
import { Backoff, HUB_PROBE_PERIOD_MS, Sleeper, sleepProbing, type Random } from "../backoff.ts";
import { describeKubeError } from "../kube.ts";
import { hubAbsent, type HubClient, type HubFailure } from "../hub-client.ts";
import { ConditionLog, type Logger } from "../log.ts";
import type { WorkController, WorkReport } from "./controller.ts";
import { isObj, type ManifestWork } from "./types.ts";

/** OCM's default status sync interval (`--status-sync-interval`), in seconds. */
export const DEFAULT_STATUS_SYNC_INTERVAL_SECONDS = 10;
/** OCM's jitter factor for the status sync (`wait.Jitter(interval, 0.9)`). */
export const STATUS_SYNC_JITTER = 0.9;

/** Timings of the work loops, in milliseconds unless the name says seconds. */
export interface WorkLoopTiming {
  /** Status-sync period in milliseconds (before jitter); default 10 000. */
  statusSyncIntervalMs: number;
  /** `waitSeconds` of the works long-poll, in seconds (0–55); default 30. */
  worksWaitSeconds: number;
  /** Least time between two works polls, in milliseconds (guards against a hub that does not hold the request); default 1 000. */
  worksMinPollMs: number;
  /** First backoff ceiling after a failure, in milliseconds. */
  backoffBaseMs: number;
  /** Largest backoff ceiling, in milliseconds. */
  backoffCapMs: number;
  /** While backing off from an absent hub, how often `GET /livez` probes whether it is back, in milliseconds; default 3 000 (src/backoff.ts `HUB_PROBE_PERIOD_MS`). */
  hubProbeMs?: number;
  /** Random source in [0, 1) for jitter. */
  random: Random;
}

/** Options of {@link WorkLoop}. */
export interface WorkLoopOptions {
  /** The ManagedCluster name. */
  clusterName: string;
  /** The hub client. */
  hub: Pick<HubClient, "getWorks" | "putWorkStatus" | "left"> & Partial<Pick<HubClient, "live">>;
  /** Signs a fresh agent JWT for each hub call. */
  sign: () => Promise<string>;
  /** The controller that applies works on the member cluster. */
  controller: WorkController;
  /** Deletes the credentials Secret (the last step of leaving). */
  deleteCredentials: () => Promise<void>;
  /** Logger. */
  logger: Logger;
  /** Timings. */
  timing: WorkLoopTiming;
  /** Aborting it ends both loops. */
  signal: AbortSignal;
}

/**
 * The works items of a hub answer as ManifestWorks, or undefined when any item is malformed
 * (then the whole answer is ignored: skipping one item would delete what it applied).
 */
export function parseWorks(items: readonly unknown[]): ManifestWork[] | undefined {
  const out: ManifestWork[] = [];
  for (const w of items) {
    if (!isObj(w) || !isObj(w.metadata) || !isObj(w.spec)) return undefined;
    if (typeof w.metadata.name !== "string" || typeof w.metadata.uid !== "string") return undefined;
    out.push(w as unknown as ManifestWork);
  }
  return out;
}

/**
 * Drives a {@link WorkController} from the hub's works list, reports statuses, and carries out
 * the leave. Construct it once the agent has credentials; call {@link WorkLoop.startPolling}
 * once the cluster is accepted.
 */
export class WorkLoop {
  private etag: string | undefined;
  private pending: ManifestWork[] | undefined;
  private leaving = false;
  private polling = false;
  private pollDone: Promise<void> = Promise.resolve();
  private readonly syncSleeper: Sleeper;
  private readonly pollSleeper: Sleeper;
  /** Per work: the uid, status object and SHA-256 of the status JSON last reported. */
  private readonly reported = new Map<string, { uid: string; status: unknown; hash: string }>();
  private readonly dropped = new Set<string>();
  private readonly pollCond: ConditionLog;
  private readonly reportCond: ConditionLog;
  private readonly kubeCond: ConditionLog;
  private readonly leaveBackoff: Backoff;
  /** Settles when the sync loop ends: `"left"` after a completed leave, `"stopped"` when aborted. */
  readonly done: Promise<"left" | "stopped">;

  /** @param opts see {@link WorkLoopOptions}; the sync loop starts at once. */
  constructor(private readonly opts: WorkLoopOptions) {
    this.syncSleeper = new Sleeper(opts.signal);
    this.pollSleeper = new Sleeper(opts.signal);
    this.pollCond = new ConditionLog(opts.logger, "works poll succeeds again");
    this.reportCond = new ConditionLog(opts.logger, "work status reports succeed again");
    this.kubeCond = new ConditionLog(opts.logger, "work sync on the member cluster succeeds again");
    this.leaveBackoff = new Backoff(opts.timing.backoffBaseMs, opts.timing.backoffCapMs, opts.timing.random);
    this.done = this.syncLoop();
  }

  private get aborted(): boolean {
    return this.opts.signal.aborted;
  }

  private fields(extra: Record<string, string | number | boolean | undefined> = {}) {
    return { cluster: this.opts.clusterName, ...extra };
  }

  /** Starts the works long-poll (idempotent). */
  startPolling(): void {
    if (this.polling) return;
    this.polling = true;
    this.pollDone = this.pollLoop();
  }

  /**
   * A heartbeat answer's hints: a `worksEtag` other than the last one ends a backoff sleep of
   * the poll at once; `leaving: true` starts the leave.
   */
  hint(h: { worksEtag?: string; leaving?: boolean }): void {
    if (h.leaving) this.startLeaving();
    if (h.worksEtag !== undefined && h.worksEtag !== this.etag) this.pollSleeper.wake();
  }

  /** Waits for the poll loop to end (after abort or leave). */
  async stopped(): Promise<void> {
    await this.pollDone;
    await this.done.catch(() => undefined);
  }

  private startLeaving(): void {
    if (this.leaving) return;
    this.leaving = true;
    this.opts.logger.info("the hub says this cluster is leaving; removing what works applied", this.fields());
    this.syncSleeper.wake();
    this.pollSleeper.wake();
  }

  private describe(e: HubFailure): string {
    return `${e.status ? `HTTP ${e.status}: ` : ""}${e.message}`;
  }

  private async pollLoop(): Promise<void> {
    const { timing } = this.opts;
    const backoff = new Backoff(timing.backoffBaseMs, timing.backoffCapMs, timing.random);
    while (!this.aborted && !this.leaving) {
      const started = Date.now();
      const r = await this.opts.hub.getWorks(this.opts.clusterName, await this.opts.sign(), this.etag, timing.worksWaitSeconds);
      if (this.aborted) return;
      if (!r.ok) {
        this.pollCond.set(r.error.kind, `works poll failed (${this.describe(r.error)}); retrying with backoff`, this.fields());
        await this.backOff(this.pollSleeper, backoff.next(r.error.retryAfterMs), r.error);
        continue;
      }
      this.pollCond.clear(this.fields());
      backoff.reset();
      if (r.value.changed) {
        const works = parseWorks(r.value.works);
        if (!works) {
          this.pollCond.set("malformed", "the hub's works list holds a malformed ManifestWork; keeping the previous list", this.fields());
        } else {
          this.etag = r.value.etag;
          this.pending = works;
          this.syncSleeper.wake();
        }
        if (r.value.leaving) this.startLeaving();
      }
      const elapsed = Date.now() - started;
      if (elapsed < timing.worksMinPollMs) await this.pollSleeper.sleep(timing.worksMinPollMs - elapsed);
    }
  }

  /**
   * Waits `delayMs` milliseconds before a failed hub call is made again; for an absent hub
   * (hub-client.ts `hubAbsent`) it probes `GET /livez` meanwhile and ends the wait as soon as
   * the hub answers (backoff.ts `sleepProbing`).
   */
  private async backOff(sleeper: Sleeper, delayMs: number, failure: HubFailure): Promise<void> {
    const live = this.opts.hub.live?.bind(this.opts.hub);
    if (!live || !hubAbsent(failure)) {
      await sleeper.sleep(delayMs);
      return;
    }
    const period = this.opts.timing.hubProbeMs ?? HUB_PROBE_PERIOD_MS;
    await sleepProbing(sleeper, delayMs, () => live(period), period, this.opts.timing.random);
  }

  private syncDelayMs(): number {
    const { statusSyncIntervalMs, random } = this.opts.timing;
    return statusSyncIntervalMs * (1 + STATUS_SYNC_JITTER * random());
  }

  private async syncLoop(): Promise<"left" | "stopped"> {
    const { timing, controller } = this.opts;
    const backoff = new Backoff(timing.backoffBaseMs, timing.backoffCapMs, timing.random);
    while (!this.aborted) {
      if (this.leaving) {
        if (await this.leave()) return "left";
        continue;
      }
      if (this.pending) {
        controller.setWorks(this.pending);
        this.pending = undefined;
      }
      let reports: WorkReport[];
      try {
        reports = await controller.sync();
        this.kubeCond.clear(this.fields());
        backoff.reset();
      } catch (e) {
        this.kubeCond.set("failing", `work sync failed on the member cluster: ${describeKubeError(e)}; retrying with backoff`, this.fields());
        await this.syncSleeper.sleep(backoff.next());
        continue;
      }
      if (this.aborted) break;
      await this.report(reports);
      if (this.pending || this.leaving) continue;
      await this.syncSleeper.sleep(this.syncDelayMs());
    }
    return "stopped";
  }

  /** PUTs the statuses that changed since their last successful report. */
  private async report(reports: readonly WorkReport[]): Promise<void> {
    const names = new Set(reports.map((r) => r.name));
    for (const name of [...this.reported.keys()]) if (!names.has(name)) this.reported.delete(name);
    for (const r of reports) {
      if (this.aborted || this.leaving) return;
      if (this.dropped.has(r.uid)) continue;
      const last = this.reported.get(r.name);
      // The controller hands back the same status object for a work nothing happened to.
      if (last && last.uid === r.uid && last.status === r.status) continue;
      const hash = createHash("sha256").update(JSON.stringify(r.status)).digest("base64url");
      if (last && last.uid === r.uid && last.hash === hash) {
        last.status = r.status;
        continue;
      }
      const res = await this.opts.hub.putWorkStatus(this.opts.clusterName, r.name, await this.opts.sign(), { uid: r.uid, status: r.status });
      if (res.ok) {
        this.reported.set(r.name, { uid: r.uid, status: r.status, hash });
        this.reportCond.clear(this.fields());
      } else if (res.error.status === 404 || res.error.status === 409) {
        this.dropped.add(r.uid);
        this.opts.logger.info(
          `work ${r.name} is ${res.error.status === 404 ? "gone" : "replaced"} on the hub (${res.error.status}); no more status reports for uid ${r.uid}`,
          this.fields({ work: r.name }),
        );
      } else {
        this.reportCond.set(res.error.kind, `work status report failed (${this.describe(res.error)}); retrying at the next sync`, this.fields());
        return;
      }
    }
  }

  /**
   * One attempt at the whole leave. @returns true when done (the loop ends), false to retry
   * (after a backoff sleep).
   */
  private async leave(): Promise<boolean> {
    const { controller, hub } = this.opts;
    const delay = this.leaveBackoff;
    if (this.pending) {
      controller.setWorks(this.pending);
      this.pending = undefined;
    }
    let released: { done: boolean; deleted: number; orphaned: number } | undefined;
    try {
      released = await controller.leave();
    } catch (e) {
      this.kubeCond.set("leaving", `could not remove what works applied: ${describeKubeError(e)}; retrying with backoff`, this.fields());
    }
    if (!released?.done) {
      await this.syncSleeper.sleep(delay.next());
      return false;
    }
    while (!this.aborted) {
      const r = await hub.left(this.opts.clusterName, await this.opts.sign());
      if (r.ok) break;
      if (r.error.status === 401 || r.error.status === 403 || r.error.status === 404) {
        // The hub finished the leave without us (LEAVE_TIMEOUT_SECONDS) and forgot the key.
        this.opts.logger.warn(`the hub no longer knows this cluster (${this.describe(r.error)}); finishing the leave`, this.fields());
        break;
      }
      if (r.error.status === 409) {
        this.opts.logger.warn(`the hub says the cluster is not leaving (409): ${r.error.message}; resuming work`, this.fields());
        this.leaving = false;
        this.etag = undefined;
        this.polling = false;
        this.startPolling();
        return false;
      }
      this.pollCond.set(`left:${r.error.kind}`, `POST left failed (${this.describe(r.error)}); retrying with backoff`, this.fields());
      await this.backOff(this.syncSleeper, delay.next(r.error.retryAfterMs), r.error);
    }
    if (this.aborted) return true;
    while (!this.aborted) {
      try {
        await this.opts.deleteCredentials();
        break;
      } catch (e) {
        this.kubeCond.set("credentials", `could not delete the credentials Secret: ${describeKubeError(e)}; retrying with backoff`, this.fields());
        await this.syncSleeper.sleep(delay.next());
      }
    }
    this.opts.logger.info(
      `left the hub: deleted ${released.deleted} applied resource(s), orphaned ${released.orphaned}, deleted the records and the credentials Secret; exiting`,
      this.fields(),
    );
    return true;
  }
}
