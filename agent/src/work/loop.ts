/**
 * The work agent's loops against the hub (docs/agent-protocol.md "Works" and "Leave"):
 *
 * - **works**: the agent's transport (transport/transport.ts; the ws transport has them pushed,
 *   the poll transport fetches them when a heartbeat answer's works ETag changed) hands over the
 *   cluster's whole works list, which the sync loop takes at once.
 * - **sync**: every status-sync period (`wait.Jitter(interval, 0.9)` as OCM: interval to
 *   1.9 × interval) and at once after a changed list, one {@link WorkController.sync} pass, then
 *   a status report (`PUT .../works/{work}/status` with `{uid, status}`, or the channel's `report`) for each work whose status changed since
 *   its last successful report; a work the hub is deleting is reported `released` once what it
 *   applied is gone (the hub then lets the work go). A watch event for an object whose manifest
 *   asks for `feedbackScrapeType: Watch` starts a pass at once (OCM's informer-driven feedback).
 *   A 404 or 409 answer means the work is gone or replaced: no more reports for that uid. The sync loop runs whether or not the hub answers, so drift is
 *   repaired from the last known works while the hub is unreachable.
 * - **leave**: when a works answer or a heartbeat says `leaving: true`, the sync loop releases
 *   everything the works applied (honouring Orphan and SelectivelyOrphan), deletes the records,
 *   calls `POST .../left`, deletes the credentials Secret, logs one line and ends with `"left"`.
 */
import { createHash } from "node:crypto";
import type { DeliveredPolicy, DeliveredWork, HeartbeatAnswer } from "../../../src/agent-api/protocol.ts";
import type { KubeConfig } from "../kube.ts";
import type { PolicyLoop } from "../policy/loop.ts";
import { Backoff, HUB_PROBE_PERIOD_MS, Sleeper, sleepProbing, type Random } from "../backoff.ts";
import { describeKubeError } from "../kube.ts";
import { hubAbsent, type HubFailure } from "../hub-client.ts";
import { ConditionLog, type Logger } from "../log.ts";
import type { AgentTransport } from "../transport/transport.ts";
import { sendInOrder } from "../report-sequence.ts";
import type { WorkController, WorkReport } from "./controller.ts";
import type { ManifestWork } from "./types.ts";

/** OCM's default status sync interval (`--status-sync-interval`), in seconds. */
export const DEFAULT_STATUS_SYNC_INTERVAL_SECONDS = 10;
/** OCM's jitter factor for the status sync (`wait.Jitter(interval, 0.9)`). */
export const STATUS_SYNC_JITTER = 0.9;

/** Timings of the work loops, in milliseconds unless the name says seconds. */
export interface WorkLoopTiming {
  /** Status-sync period in milliseconds (before jitter); default 10 000. */
  statusSyncIntervalMs: number;
  /** First backoff ceiling after a failure, in milliseconds. */
  backoffBaseMs: number;
  /** Largest backoff ceiling, in milliseconds. */
  backoffCapMs: number;
  /** While backing off from an absent hub, how often `GET /livez` probes whether it is back, in milliseconds; default 3 000 (backoff.ts `HUB_PROBE_PERIOD_MS`). */
  hubProbeMs?: number;
  /** Random source in [0, 1) for jitter. */
  random: Random;
}

/** Options of {@link WorkLoop}. */
export interface WorkLoopOptions {
  /** The ManagedCluster name. */
  clusterName: string;
  /** The transport the works arrive by and the reports and `left` go by. */
  transport: AgentTransport;
  /** `GET /livez` within a timeout in milliseconds (hub-client.ts `HubClient.live`): ends a backoff from an absent hub early. */
  live?: (timeoutMs: number) => Promise<boolean>;
  /** The controller that applies works on the member cluster. */
  controller: WorkController;
  /**
   * The member cluster's configuration, for the policy loop (agent/src/policy/loop.ts), loaded
   * with a dynamic `import()` once a delivery carries a replicated Policy. Without it, delivered
   * Policies are ignored.
   */
  kubeConfig?: KubeConfig;
  /** Timeout of one member-cluster request of the policy loop, in milliseconds. */
  requestTimeoutMs?: number;
  /** Deletes the credentials Secret (the last step of leaving). */
  deleteCredentials: () => Promise<void>;
  /** Logger. */
  logger: Logger;
  /** Timings. */
  timing: WorkLoopTiming;
  /** Aborting it ends both loops. */
  signal: AbortSignal;
  /** Called with every new works list (the add-on agent reads its add-ons from it). */
  onWorks?: (works: DeliveredWork[]) => void;
  /** Called when the transport was welcomed on a new connection, or the hub asked for the status again. */
  onResent?: () => void;
}

/**
 * Drives a {@link WorkController} from the hub's works list, reports statuses, and carries out
 * the leave. Construct it once the agent has credentials; call {@link WorkLoop.startPolling}
 * once the cluster is accepted (the transport starts then).
 */
export class WorkLoop {
  private pending: ManifestWork[] | undefined;
  private leaving = false;
  private readonly syncSleeper: Sleeper;
  /** Per work: the uid, status object and SHA-256 of the status JSON last reported. */
  private readonly reported = new Map<string, { uid: string; status: unknown; hash: string }>();
  private readonly dropped = new Set<string>();
  private readonly leftCond: ConditionLog;
  private readonly reportCond: ConditionLog;
  private readonly kubeCond: ConditionLog;
  private readonly leaveBackoff: Backoff;
  /** A Watch-scraped object changed since the current pass began: run the next pass at once. */
  private watchedChange = false;
  private idle = false;
  /** The policy loop, once a delivery carried a Policy (loaded then). */
  private policyLoop: Promise<PolicyLoop | undefined> | undefined;
  /** Settles when the sync loop ends: `"left"` after a completed leave, `"stopped"` when aborted. */
  readonly done: Promise<"left" | "stopped">;

  /** @param opts see {@link WorkLoopOptions}; the sync loop starts at once. */
  constructor(private readonly opts: WorkLoopOptions) {
    this.syncSleeper = new Sleeper(opts.signal);
    this.leftCond = new ConditionLog(opts.logger, "POST left succeeds again");
    this.reportCond = new ConditionLog(opts.logger, "work status reports succeed again");
    this.kubeCond = new ConditionLog(opts.logger, "work sync on the member cluster succeeds again");
    this.leaveBackoff = new Backoff(opts.timing.backoffBaseMs, opts.timing.backoffCapMs, opts.timing.random);
    opts.controller.onWatchedChange(() => {
      this.watchedChange = true;
      if (this.idle) this.syncSleeper.wake();
    });
    this.done = this.syncLoop();
  }

  private get aborted(): boolean {
    return this.opts.signal.aborted;
  }

  private fields(extra: Record<string, string | number | boolean | undefined> = {}) {
    return { cluster: this.opts.clusterName, ...extra };
  }

  /** Starts the transport's works delivery (idempotent): once the cluster is accepted. */
  startPolling(): void {
    this.opts.transport.start({
      works: (update) => {
        this.onWorks(update.works);
        this.onPolicies(update.policies);
      },
      leaving: () => this.startLeaving(),
      resent: () => this.opts.onResent?.(),
    });
  }

  /**
   * A heartbeat answer: `leaving: true` starts the leave; the transport learns the works ETag
   * (the poll transport fetches the works when it changed).
   */
  hint(h: HeartbeatAnswer): void {
    if (h.leaving) this.startLeaving();
    this.opts.transport.heartbeatAnswered(h);
  }

  /** Waits for the loops to end (after abort or leave). */
  async stopped(): Promise<void> {
    await this.opts.transport.stopped();
    await this.done.catch(() => undefined);
    const policies = await this.policyLoop?.catch(() => undefined);
    await policies?.done;
  }

  /**
   * A delivery's replicated Policies: handed to the policy loop, which is loaded (a dynamic
   * `import()`) and started at the first delivery that carries one; until then nothing of it is
   * in memory.
   */
  private onPolicies(policies: DeliveredPolicy[]): void {
    const { kubeConfig } = this.opts;
    if (!kubeConfig || (!this.policyLoop && policies.length === 0)) return;
    this.policyLoop ??= import("../policy/loop.ts").then(
      ({ PolicyLoop }) =>
        new PolicyLoop({
          clusterName: this.opts.clusterName,
          kubeConfig,
          transport: this.opts.transport,
          logger: this.opts.logger,
          defaultIntervalMs: this.opts.timing.statusSyncIntervalMs,
          timing: { backoffBaseMs: this.opts.timing.backoffBaseMs, backoffCapMs: this.opts.timing.backoffCapMs, random: this.opts.timing.random },
          ...(this.opts.requestTimeoutMs !== undefined ? { requestTimeoutMs: this.opts.requestTimeoutMs } : {}),
          signal: this.opts.signal,
        }),
      (e: unknown) => {
        this.opts.logger.error(`could not load the policy controller: ${e instanceof Error ? e.message : String(e)}`, this.fields());
        return undefined;
      },
    );
    void this.policyLoop.then((loop) => loop?.setPolicies(policies));
  }

  /** A new works list (already checked against the protocol's schema): the sync loop takes it at once. */
  private onWorks(works: DeliveredWork[]): void {
    this.pending = works as unknown as ManifestWork[];
    this.syncSleeper.wake();
    this.opts.onWorks?.(works);
  }

  private startLeaving(): void {
    if (this.leaving) return;
    this.leaving = true;
    this.opts.logger.info("the hub says this cluster is leaving; removing what works applied", this.fields());
    this.syncSleeper.wake();
  }

  private describe(e: HubFailure): string {
    return `${e.status ? `HTTP ${e.status}: ` : ""}${e.message}`;
  }

  /**
   * Waits `delayMs` milliseconds before a failed hub call is made again; for an absent hub
   * (hub-client.ts `hubAbsent`) it probes `GET /livez` meanwhile and ends the wait as soon as
   * the hub answers (backoff.ts `sleepProbing`).
   */
  private async backOff(delayMs: number, failure: HubFailure): Promise<void> {
    const { live } = this.opts;
    if (!live || !hubAbsent(failure)) {
      await this.syncSleeper.sleep(delayMs);
      return;
    }
    const period = this.opts.timing.hubProbeMs ?? HUB_PROBE_PERIOD_MS;
    await sleepProbing(this.syncSleeper, delayMs, () => live(period), period, this.opts.timing.random);
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
      this.watchedChange = false;
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
      if (this.pending || this.leaving || this.watchedChange) continue;
      this.idle = true;
      // A status that changes by time alone (an untrackable object's unavailablePeriodSeconds) is reported when it does.
      await this.syncSleeper.sleep(Math.min(this.syncDelayMs(), controller.nextDueInMs() ?? Infinity));
      this.idle = false;
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
      const hash = createHash("sha256")
        .update(JSON.stringify([r.status, r.released ?? false]))
        .digest("base64url");
      if (last && last.uid === r.uid && last.hash === hash) {
        last.status = r.status;
        continue;
      }
      // Stamped with a sequence, so a copy of it that reaches the hub late never overwrites a newer one.
      const res = await sendInOrder((sequence) =>
        this.opts.transport.reportStatus(r.name, {
          uid: r.uid,
          ...(sequence !== undefined ? { sequence } : {}),
          status: { ...r.status },
          ...(r.released ? { released: true as const } : {}),
        }),
      );
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
    const { controller, transport } = this.opts;
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
      const r = await transport.left();
      if (r.ok) {
        this.leftCond.clear(this.fields());
        break;
      }
      if (r.error.status === 401 || r.error.status === 403 || r.error.status === 404) {
        // The hub finished the leave without us (LEAVE_TIMEOUT_SECONDS) and forgot the key.
        this.opts.logger.warn(`the hub no longer knows this cluster (${this.describe(r.error)}); finishing the leave`, this.fields());
        break;
      }
      if (r.error.status === 409) {
        this.opts.logger.warn(`the hub says the cluster is not leaving (409): ${r.error.message}; resuming work`, this.fields());
        this.leaving = false;
        transport.resync();
        return false;
      }
      this.leftCond.set(r.error.kind, `POST left failed (${this.describe(r.error)}); retrying with backoff`, this.fields());
      await this.backOff(delay.next(r.error.retryAfterMs), r.error);
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
