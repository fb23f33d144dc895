/**
 * The poll transport (docs/agent-protocol.md "Transports"): HTTP requests only, none held open.
 * The heartbeat (agent.ts) renews the lease and its answer carries the works ETag and `leaving`;
 * this transport fetches the works (`GET /agent/v1/clusters/{name}/works` with `If-None-Match`
 * of the ETag it holds, no `waitSeconds`) only when a heartbeat answer's ETag differs from it,
 * so an idle agent's only requests are its heartbeats, and a work change reaches the agent at its
 * next heartbeat (within `leaseDurationSeconds` x 1.25). A failed fetch is made again with capped
 * exponential backoff and full jitter (probing `GET /livez` while the hub is absent), logging one
 * line when failures start and one when they end. Reports and `left` are one request each.
 */
import { Backoff, HUB_PROBE_PERIOD_MS, Sleeper, sleepProbing, type Random } from "../backoff.ts";
import { hubAbsent, type HubClient, type HubFailure } from "../hub-client.ts";
import { ConditionLog, type Logger } from "../log.ts";
import type {
  AddonStatusRequest,
  AddonTokenRequest,
  HeartbeatAnswer,
  HeartbeatRequest,
  PolicyComplianceReport,
  WorkStatusReport,
} from "../../../src/agent-api/protocol.ts";
import type { AgentTransport, TransportEvents } from "./transport.ts";

/** Options of {@link PollTransport}. */
export interface PollTransportOptions {
  /** The ManagedCluster name. */
  clusterName: string;
  /** The hub client. */
  hub: Pick<HubClient, "getWorks" | "putWorkStatus" | "left"> &
    Partial<Pick<HubClient, "live" | "heartbeat" | "putPolicyStatus" | "addonStatus" | "addonToken">>;
  /** Signs a fresh agent JWT for each call. */
  sign: () => Promise<string>;
  /** Logger. */
  logger: Logger;
  /** Backoff of a failed works fetch: first and largest ceiling in milliseconds, and the random source. */
  timing: { backoffBaseMs: number; backoffCapMs: number; hubProbeMs?: number; random: Random };
  /** Aborting it ends the fetch loop. */
  signal: AbortSignal;
}

/** The poll transport: works fetched when the heartbeat's works ETag changed. */
export class PollTransport implements AgentTransport {
  readonly name = "poll";
  /** The ETag of the works last delivered. */
  private etag: string | undefined;
  /** The newest works ETag a heartbeat answer carried. */
  private wanted: string | undefined;
  private events: TransportEvents | undefined;
  private loop: Promise<void> = Promise.resolve();
  private readonly sleeper: Sleeper;
  private readonly cond: ConditionLog;

  /** @param opts see {@link PollTransportOptions}. */
  constructor(private readonly opts: PollTransportOptions) {
    this.sleeper = new Sleeper(opts.signal);
    this.cond = new ConditionLog(opts.logger, "works fetch succeeds again");
  }

  start(events: TransportEvents): void {
    if (this.events) return;
    this.events = events;
    this.loop = this.fetchLoop();
  }

  heartbeatAnswered(answer: HeartbeatAnswer): void {
    if (answer.leaving) this.events?.leaving();
    this.wanted = answer.worksEtag;
    if (this.wanted !== this.etag) this.sleeper.wake();
  }

  resync(): void {
    this.etag = undefined;
    this.sleeper.wake();
  }

  /** `POST .../heartbeat` with `body`: every heartbeat is one request (the lease renewal). */
  async heartbeat(body: HeartbeatRequest) {
    if (!this.opts.hub.heartbeat) throw new Error("the poll transport was built without a heartbeat call");
    return this.opts.hub.heartbeat(this.opts.clusterName, await this.opts.sign(), body);
  }

  /**
   * The works at ETag `etag` were delivered by other means (the ws transport's channel): no fetch
   * is needed for it.
   */
  hold(etag: string): void {
    this.etag = etag;
    this.wanted = etag;
  }

  async reportStatus(work: string, report: WorkStatusReport) {
    return this.opts.hub.putWorkStatus(this.opts.clusterName, work, await this.opts.sign(), report);
  }

  async reportCompliance(policy: string, report: PolicyComplianceReport) {
    if (!this.opts.hub.putPolicyStatus) throw new Error("the poll transport was built without a policy status call");
    return this.opts.hub.putPolicyStatus(this.opts.clusterName, policy, await this.opts.sign(), report);
  }

  async left() {
    return this.opts.hub.left(this.opts.clusterName, await this.opts.sign());
  }

  /** `POST .../addons/status`. */
  async addonStatus(body: AddonStatusRequest) {
    if (!this.opts.hub.addonStatus) throw new Error("the poll transport was built without the add-on calls");
    return this.opts.hub.addonStatus(this.opts.clusterName, await this.opts.sign(), body);
  }

  /** `POST .../addons/{addon}/token`. */
  async addonToken(addon: string, body: AddonTokenRequest) {
    if (!this.opts.hub.addonToken) throw new Error("the poll transport was built without the add-on calls");
    return this.opts.hub.addonToken(this.opts.clusterName, addon, await this.opts.sign(), body);
  }

  stopped(): Promise<void> {
    return this.loop;
  }

  private fields() {
    return { cluster: this.opts.clusterName };
  }

  /** Fetches the works whenever the wanted ETag is not the one held; sleeps otherwise. */
  private async fetchLoop(): Promise<void> {
    const { timing, signal } = this.opts;
    const backoff = new Backoff(timing.backoffBaseMs, timing.backoffCapMs, timing.random);
    while (!signal.aborted) {
      if (this.wanted === undefined || this.wanted === this.etag) {
        // Until a heartbeat answer (or a resync) wakes it: nothing to fetch.
        await this.sleeper.sleep(2 ** 31 - 1);
        continue;
      }
      const asked = this.wanted;
      const r = await this.opts.hub.getWorks(this.opts.clusterName, await this.opts.sign(), this.etag);
      if (signal.aborted) return;
      if (!r.ok) {
        this.cond.set(
          r.error.kind,
          `works fetch failed (${r.error.status ? `HTTP ${r.error.status}: ` : ""}${r.error.message}); retrying with backoff`,
          this.fields(),
        );
        await this.backOff(backoff.next(r.error.retryAfterMs), r.error);
        continue;
      }
      this.cond.clear(this.fields());
      backoff.reset();
      // The answer is at least as new as the ETag asked for; a heartbeat answered meanwhile with
      // another ETag is fetched for again (at worst one 304).
      const settled = this.wanted === asked;
      if (r.value.changed) {
        this.etag = r.value.etag;
        this.events?.works({ etag: r.value.etag, works: r.value.works, policies: r.value.policies ?? [] });
      }
      if (settled) this.wanted = this.etag;
      if (!r.value.changed) continue;
      if (r.value.leaving) this.events?.leaving();
    }
  }

  /** Waits a backoff delay (ms); for an absent hub, probes `GET /livez` meanwhile (backoff.ts `sleepProbing`). */
  private async backOff(delayMs: number, failure: HubFailure): Promise<void> {
    const live = this.opts.hub.live?.bind(this.opts.hub);
    if (!live || !hubAbsent(failure)) {
      await this.sleeper.sleep(delayMs);
      return;
    }
    const period = this.opts.timing.hubProbeMs ?? HUB_PROBE_PERIOD_MS;
    await sleepProbing(this.sleeper, delayMs, () => live(period), period, this.opts.timing.random);
  }
}
