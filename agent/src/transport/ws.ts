/**
 * The ws transport (docs/agent-protocol.md "Channel" and "Transports"): one WebSocket per
 * cluster, `GET /agent/v1/clusters/{name}/connect` with the subprotocol `flotilla.agent.v1`,
 * through the `ws` package (the client measured to keep the agent's footprint; `npm run
 * bench:ws-client`).
 *
 * - The upgrade carries a fresh agent JWT (with the key tag the hub handed over) as every HTTP
 *   call does. After it the agent says `hello` with the works ETag it holds; the hub answers
 *   `welcome` (the lease interval) and the works when they differ.
 * - Works pushed as `works` are delivered at once; `works-changed` (too large for a message) is
 *   read with `GET .../works` over HTTP (through the poll transport's fetch).
 * - The lease is renewed by the application ping `ping` every `leaseDurationSeconds`, answered
 *   `pong` by the hub's runtime; a ping without its pong for `leaseDurationSeconds` means a dead
 *   connection: it is dropped and dialled again.
 * - The cluster's status goes as a `status` message only when it differs from the last one the
 *   hub acknowledged, so an idle connected agent makes no HTTP request at all.
 * - Reports and `left` are messages with ids, answered `ack` or `error` (the Kubernetes Status the
 *   HTTP route would answer, mapped to the same failure); requests without an answer when the
 *   connection closes are sent again on the next connection.
 * - Close codes (src/agent-api/channel-protocol.ts `CloseCodes`): 4001 (key rotated) dials again at
 *   once with the current key; 4004 (left or removed) stops dialling and answers the requests
 *   waiting as a 401 would (the leave finishes); 4002 (key replaced) and 4003 (denied) dial again
 *   with backoff while the heartbeat loop, over HTTP meanwhile, meets the 401/403 it handles as
 *   today; any other close (4000 replaced included, logged) dials again with
 *   {@link ReconnectBackoff} (full jitter), probing `GET /livez` while the hub is absent.
 * - While not connected the agent is a poll agent: heartbeats over HTTP, works fetched when their
 *   ETag changed. When the upgrade is refused outright (an answer other than 101, 401, 403, 429 or
 *   5xx, e.g. a proxy's 400/404/426), the transport logs it once and stays `poll` for the rest of
 *   the process's life.
 */
import type WebSocket from "ws";
import { CHANNEL_PING, CHANNEL_PONG, CHANNEL_SUBPROTOCOL, CloseCodes } from "../../../src/agent-api/channel-constants.ts";
import { ChannelHubMessageSchema, type ChannelHubMessage } from "../../../src/agent-api/protocol-answers.ts";
import type {
  AddonStatusAnswer,
  AddonStatusRequest,
  AddonTokenAnswer,
  AddonTokenRequest,
  HeartbeatAnswer,
  HeartbeatRequest,
  LeftAnswer,
  PolicyComplianceReport,
  PolicyStatusAnswer,
  WorkStatusAnswer,
  WorkStatusReport,
} from "../../../src/agent-api/protocol.ts";
import { HUB_PROBE_PERIOD_MS, ReconnectBackoff, Sleeper, sleepProbing, DEFAULT_LEASE_DURATION_SECONDS, type Random } from "../backoff.ts";
import { failureFromStatus, hubAbsent, tlsHint, type HubClient, type HubFailure, type HubResult } from "../hub-client.ts";
import { ConditionLog, type Logger } from "../log.ts";
import { PollTransport } from "./poll.ts";
import type { AgentTransport, TransportEvents } from "./transport.ts";
import type { ProxyServer } from "../proxy.ts";

/** Options of {@link WsTransport}. */
export interface WsTransportOptions {
  /** The ManagedCluster name. */
  clusterName: string;
  /** The hub client (its base URL, key tags, and the HTTP calls of the fallback). */
  hub: Pick<HubClient, "getWorks" | "putWorkStatus" | "left" | "heartbeat" | "live" | "noteKeyTag" | "baseUrl"> &
    Partial<Pick<HubClient, "putPolicyStatus" | "addonStatus" | "addonToken">>;
  /** Signs a fresh agent JWT for each call and each upgrade. */
  sign: () => Promise<string>;
  /** Logger. */
  logger: Logger;
  /**
   * Timings in milliseconds: the reconnect backoff's first and largest ceiling, the `/livez`
   * probe period while the hub is absent, the upgrade's and a request's timeout, and the random
   * source of the jitter.
   */
  timing: { backoffBaseMs: number; backoffCapMs: number; hubProbeMs?: number; requestTimeoutMs: number; random: Random };
  /** Aborting it closes the connection and ends the loops. */
  signal: AbortSignal;
  /**
   * Serves the hub's proxied requests to the member cluster's API (../proxy.ts, docs/proxy.md);
   * without it, each is answered `proxy-end` with an error.
   */
  proxy?: Pick<ProxyServer, "message" | "closed" | "data">;
}

/** How one dial ended. */
type DialEnd =
  | { kind: "refused"; status: number } // a non-101 answer that means no WebSockets here
  | { kind: "failed"; failure: HubFailure } // no connection: network, 401/403, 429/5xx
  | { kind: "closed"; code: number; reason: string };

/** A request message waiting for its answer. */
interface Pending {
  frame:
    | { type: "report"; id: string; work: string; report: WorkStatusReport }
    | { type: "left"; id: string }
    | { type: "compliance"; id: string; policy: string; report: PolicyComplianceReport }
    | { type: "addon-status"; id: string; status: AddonStatusRequest }
    | { type: "addon-token"; id: string; addon: string; request: AddonTokenRequest };
  resolve: (answer: Extract<ChannelHubMessage, { type: "ack" | "error" }> | HubFailure) => void;
  /** Whether it was written to a connection (false: made while none was up, it waits for the next). */
  sent: boolean;
}

/** What a waiting request is, for the log: `report <work>` or `left`. */
const describeRequest = (p: Pending): string =>
  p.frame.type === "report"
    ? `report ${p.frame.work}`
    : p.frame.type === "compliance"
      ? `compliance ${p.frame.policy}`
      : p.frame.type === "addon-token"
        ? `addon-token ${p.frame.addon}`
        : p.frame.type;

/** The ws transport: one WebSocket per cluster, `poll` while it is not connected. */
export class WsTransport implements AgentTransport {
  readonly name = "ws";
  /** `poll` once the upgrade was refused outright: for good. */
  private mode: "ws" | "poll" = "ws";
  /** Dialling stopped (4004: the cluster left or is gone). */
  private dialling = true;
  private readonly poll: PollTransport;
  /** The open connection, once the hub said `welcome` on it. */
  private socket: WebSocket | undefined;
  /** A dial in progress (settles when it is welcomed or ends). */
  private dialing: Promise<void> | undefined;
  private etag: string | undefined;
  private leaving = false;
  private lease = DEFAULT_LEASE_DURATION_SECONDS;
  /** JSON of the status body the hub last acknowledged. */
  private lastStatus: string | undefined;
  /** Whether the last heartbeat went over HTTP (its answer then feeds the poll transport). */
  private lastViaHttp = true;
  /** The last dial failed with 401/403: an HTTP heartbeat that succeeds dials again at once. */
  private authRefused = false;
  private readonly pending = new Map<string, Pending>();
  private readonly statusWaiters = new Map<string, (answer: Extract<ChannelHubMessage, { type: "ack" | "error" }> | undefined) => void>();
  private seq = 0;
  private events: TransportEvents | undefined;
  private loop: Promise<void> = Promise.resolve();
  private readonly sleeper: Sleeper;
  private readonly reconnect: ReconnectBackoff;
  /** Failed dials: logged once when they start, once when a dial succeeds again. */
  private readonly dialCond: ConditionLog;

  /** @param opts see {@link WsTransportOptions}. */
  constructor(private readonly opts: WsTransportOptions) {
    this.sleeper = new Sleeper(opts.signal);
    this.dialCond = new ConditionLog(opts.logger, "channel upgrade succeeds again");
    this.reconnect = new ReconnectBackoff(opts.timing.backoffBaseMs, opts.timing.backoffCapMs, opts.timing.random);
    this.poll = new PollTransport({
      clusterName: opts.clusterName,
      hub: opts.hub,
      sign: opts.sign,
      logger: opts.logger,
      timing: {
        backoffBaseMs: opts.timing.backoffBaseMs,
        backoffCapMs: opts.timing.backoffCapMs,
        hubProbeMs: opts.timing.hubProbeMs,
        random: opts.timing.random,
      },
      signal: opts.signal,
    });
    opts.signal.addEventListener("abort", () => this.shutdown(), { once: true });
  }

  private fields(extra: Record<string, string | number | undefined> = {}) {
    return { cluster: this.opts.clusterName, ...extra };
  }

  start(events: TransportEvents): void {
    if (this.events) return;
    this.events = events;
    this.poll.start({
      works: (update) => this.deliver(update.etag, update.works, update.policies, false),
      leaving: () => events.leaving(),
    });
    this.loop = this.connectLoop();
  }

  heartbeatAnswered(answer: HeartbeatAnswer): void {
    if (this.mode === "poll" || this.lastViaHttp) this.poll.heartbeatAnswered(answer);
  }

  resync(): void {
    this.etag = undefined;
    this.poll.resync();
    if (this.socket) this.send(this.socket, { type: "hello" });
  }

  async heartbeat(body: HeartbeatRequest): Promise<HubResult<HeartbeatAnswer>> {
    const socket = this.mode === "ws" ? await this.ready() : undefined;
    const json = JSON.stringify(body);
    if (socket) {
      this.lastViaHttp = false;
      if (json === this.lastStatus) return { ok: true, status: 200, value: this.answer() };
      const id = `s${++this.seq}`;
      const answer = await new Promise<Extract<ChannelHubMessage, { type: "ack" | "error" }> | undefined>((resolve) => {
        const timer = setTimeout(() => settle(undefined), this.opts.timing.requestTimeoutMs);
        const settle = (a: Extract<ChannelHubMessage, { type: "ack" | "error" }> | undefined) => {
          clearTimeout(timer);
          this.statusWaiters.delete(id);
          resolve(a);
        };
        this.statusWaiters.set(id, settle);
        if (!this.send(socket, { type: "status", id, status: body })) settle(undefined);
      });
      if (answer?.type === "ack") {
        this.lastStatus = json;
        if (answer.leaseDurationSeconds) this.setLease(answer.leaseDurationSeconds);
        return { ok: true, status: 200, value: this.answer() };
      }
      if (answer?.type === "error") return { ok: false, error: failureFromStatus(answer.status) };
      // No answer (the connection closed, or none in time): the heartbeat goes over HTTP.
    }
    this.lastViaHttp = true;
    const r = await this.poll.heartbeat(body);
    if (r.ok) {
      this.lastStatus = json;
      if (this.authRefused) {
        // The hub accepts the credentials again (reloaded key, or re-accepted): dial now.
        this.authRefused = false;
        this.sleeper.wake();
      }
    }
    return r;
  }

  async reportStatus(work: string, report: WorkStatusReport): Promise<HubResult<WorkStatusAnswer>> {
    const socket = this.mode === "ws" ? await this.ready() : undefined;
    if (!socket) return this.poll.reportStatus(work, report);
    const answer = await this.request({ type: "report", id: `r${++this.seq}`, work, report });
    if (answer === "http") return this.poll.reportStatus(work, report);
    if ("kind" in answer) return { ok: false, error: answer };
    if (answer.type === "error") return { ok: false, error: failureFromStatus(answer.status) };
    return {
      ok: true,
      status: 200,
      value: { resourceVersion: answer.resourceVersion ?? "", ...(answer.stale ? { stale: true, sequence: answer.sequence } : {}) },
    };
  }

  async reportCompliance(policy: string, report: PolicyComplianceReport): Promise<HubResult<PolicyStatusAnswer>> {
    const socket = this.mode === "ws" ? await this.ready() : undefined;
    if (!socket) return this.poll.reportCompliance(policy, report);
    const answer = await this.request({ type: "compliance", id: `c${++this.seq}`, policy, report });
    if (answer === "http") return this.poll.reportCompliance(policy, report);
    if ("kind" in answer) return { ok: false, error: answer };
    if (answer.type === "error") return { ok: false, error: failureFromStatus(answer.status) };
    return {
      ok: true,
      status: 200,
      value: { resourceVersion: answer.resourceVersion ?? "", ...(answer.stale ? { stale: true, sequence: answer.sequence } : {}) },
    };
  }

  async left(): Promise<HubResult<LeftAnswer>> {
    const socket = this.mode === "ws" ? await this.ready() : undefined;
    if (!socket) return this.poll.left();
    const answer = await this.request({ type: "left", id: `l${++this.seq}` });
    if (answer === "http") return this.poll.left();
    if ("kind" in answer) return { ok: false, error: answer };
    if (answer.type === "error") return { ok: false, error: failureFromStatus(answer.status) };
    return { ok: true, status: 200, value: {} };
  }

  async addonStatus(body: AddonStatusRequest): Promise<HubResult<AddonStatusAnswer>> {
    const socket = this.mode === "ws" ? await this.ready() : undefined;
    if (!socket) return this.poll.addonStatus(body);
    const answer = await this.request({ type: "addon-status", id: `a${++this.seq}`, status: body });
    if (answer === "http") return this.poll.addonStatus(body);
    if ("kind" in answer) return { ok: false, error: answer };
    if (answer.type === "error") return { ok: false, error: failureFromStatus(answer.status) };
    return { ok: true, status: 200, value: {} };
  }

  async addonToken(addon: string, body: AddonTokenRequest): Promise<HubResult<AddonTokenAnswer>> {
    const socket = this.mode === "ws" ? await this.ready() : undefined;
    if (!socket) return this.poll.addonToken(addon, body);
    const answer = await this.request({ type: "addon-token", id: `t${++this.seq}`, addon, request: body });
    if (answer === "http") return this.poll.addonToken(addon, body);
    if ("kind" in answer) return { ok: false, error: answer };
    if (answer.type === "error") return { ok: false, error: failureFromStatus(answer.status) };
    if (!answer.token || !answer.expirationTimestamp)
      return { ok: false, error: { kind: "other", status: 200, message: "malformed answer to addon-token: no token or expirationTimestamp" } };
    return { ok: true, status: 200, value: { token: answer.token, expirationTimestamp: answer.expirationTimestamp } };
  }

  async stopped(): Promise<void> {
    await this.loop;
    await this.poll.stopped();
  }

  // ---- the connection ----------------------------------------------------------------------

  /** What a heartbeat answer would say, from what the channel told (no request). */
  private answer(): HeartbeatAnswer {
    return { leaseDurationSeconds: this.lease, worksEtag: this.etag ?? "", leaving: this.leaving };
  }

  /** The welcomed connection, after waiting for a dial in progress; undefined when there is none. */
  private async ready(): Promise<WebSocket | undefined> {
    if (!this.socket && this.dialing) await this.dialing;
    return this.socket;
  }

  /** Sends a request and waits for its answer; "http" when the transport turned `poll` meanwhile. */
  private request(frame: Pending["frame"]): Promise<Extract<ChannelHubMessage, { type: "ack" | "error" }> | HubFailure | "http"> {
    return new Promise((resolve) => {
      const p: Pending = { frame, resolve, sent: false };
      this.pending.set(frame.id, p);
      if (this.socket) p.sent = this.send(this.socket, frame);
    }).then((a) => (a === undefined ? "http" : (a as Extract<ChannelHubMessage, { type: "ack" | "error" }> | HubFailure)));
  }

  /** Sends one JSON frame; false when the socket is not open. */
  private send(ws: WebSocket, msg: object): boolean {
    if (ws.readyState !== ws.OPEN) return false;
    ws.send(JSON.stringify(msg));
    return true;
  }

  private deliver(
    etag: string,
    works: Parameters<TransportEvents["works"]>[0]["works"],
    policies: Parameters<TransportEvents["works"]>[0]["policies"],
    viaChannel: boolean,
  ): void {
    this.etag = etag;
    if (viaChannel) this.poll.hold(etag);
    this.events?.works({ etag, works, policies });
  }

  private setLease(seconds: number): void {
    this.lease = seconds > 0 ? seconds : DEFAULT_LEASE_DURATION_SECONDS;
  }

  /** Dials, and dials again when the connection ends, until stopped or turned `poll`. */
  private async connectLoop(): Promise<void> {
    const { signal } = this.opts;
    while (!signal.aborted && this.mode === "ws") {
      if (!this.dialling) {
        await this.sleeper.sleep(2 ** 31 - 1);
        continue;
      }
      let settle!: () => void;
      this.dialing = new Promise<void>((r) => (settle = r));
      const end = await this.dial(settle);
      settle();
      this.dialing = undefined;
      this.socket = undefined;
      for (const waiter of [...this.statusWaiters.values()]) waiter(undefined);
      if (signal.aborted) return;
      if (end.kind === "refused") {
        this.fallBack(`the hub's address answered the WebSocket upgrade with HTTP ${end.status} (a proxy that does not pass WebSockets?)`);
        return;
      }
      let failure: HubFailure | undefined;
      let atLeastMs = 0;
      if (end.kind === "failed") {
        failure = end.failure;
        this.authRefused = failure.kind === "unauthorized" || failure.kind === "forbidden";
        atLeastMs = failure.retryAfterMs ?? 0;
        this.dialCond.set(
          `${failure.kind}:${failure.status ?? ""}`,
          `channel upgrade failed (${failure.status ? `HTTP ${failure.status}: ` : ""}${failure.message}); heartbeating over HTTP and dialling again with backoff`,
          this.fields(),
        );
      } else {
        const why = `channel closed (${end.code}${end.reason ? `: ${end.reason}` : ""})`;
        if (end.code === CloseCodes.Left) {
          this.opts.logger.info(`${why}: the cluster left the hub or was removed`, this.fields());
          this.dialling = false;
          this.failPending({ kind: "unauthorized", status: 401, message: "the cluster left the hub or was removed (channel close 4004)" });
          continue;
        }
        if (end.code === CloseCodes.KeyRotated) {
          this.opts.logger.info(`${why}: the key was rotated; connecting with the new key`, this.fields());
          this.reconnect.lost(Date.now());
          continue;
        }
        this.opts.logger.warn(`${why}; connecting again with backoff`, this.fields());
        if (end.code === CloseCodes.KeyReplaced || end.code === CloseCodes.Denied) this.authRefused = true;
      }
      const delay = this.reconnect.lost(Date.now(), atLeastMs);
      if (failure && hubAbsent(failure)) {
        const period = this.opts.timing.hubProbeMs ?? HUB_PROBE_PERIOD_MS;
        await sleepProbing(this.sleeper, delay, () => this.opts.hub.live(period), period, this.opts.timing.random);
      } else {
        await this.sleeper.sleep(delay);
      }
    }
  }

  /** Turns `poll` for good: the poll transport delivers works from the next heartbeat on. */
  private fallBack(why: string): void {
    this.mode = "poll";
    this.opts.logger.warn(`${why}; using the poll transport (HTTP heartbeats, works fetched when their ETag changes)`, this.fields());
    this.lastViaHttp = true;
    this.failPending(undefined);
  }

  /** Answers every request waiting: with `failure`, or (undefined) by sending it over HTTP. */
  private failPending(failure: HubFailure | undefined): void {
    for (const [id, p] of [...this.pending]) {
      this.pending.delete(id);
      (p.resolve as (a: unknown) => void)(failure);
    }
  }

  /** One connection: resolves when it ends, or when the dial fails. `welcomed` is called once the hub said `welcome`. */
  private async dial(welcomed: () => void): Promise<DialEnd> {
    // Loaded at the first dial: a poll agent never loads the client (nor its tls and zlib).
    const { default: WebSocketClient } = await import("ws");
    const token = await this.opts.sign();
    if (this.opts.signal.aborted) return { kind: "closed", code: 1000, reason: "agent stopping" };
    const url = `${this.opts.hub.baseUrl.replace(/^http/, "ws")}/agent/v1/clusters/${encodeURIComponent(this.opts.clusterName)}/connect`;
    return new Promise<DialEnd>((resolve) => {
      let done = false;
      let opened = false;
      let pingTimer: NodeJS.Timeout | undefined;
      let awaitingPong = false;
      let killTimer: NodeJS.Timeout | undefined;
      const finish = (end: DialEnd) => {
        clearTimeout(killTimer);
        if (done) return;
        done = true;
        clearInterval(pingTimer);
        this.opts.signal.removeEventListener("abort", onAbort);
        resolve(end);
      };
      const ws = new WebSocketClient(url, CHANNEL_SUBPROTOCOL, {
        headers: { authorization: `Bearer ${token}` },
        handshakeTimeout: this.opts.timing.requestTimeoutMs,
        perMessageDeflate: false,
      });
      const onAbort = () => {
        ws.close(1000, "agent stopping");
        // A hub that does not answer the close frame holds the process no longer than a second.
        killTimer = setTimeout(() => ws.terminate(), 1000);
      };
      this.opts.signal.addEventListener("abort", onAbort, { once: true });
      const ping = () => {
        if (awaitingPong) {
          this.opts.logger.warn(`no pong within ${this.lease}s: the connection is dead; connecting again`, this.fields());
          ws.terminate();
          return;
        }
        awaitingPong = true;
        ws.send(CHANNEL_PING);
      };
      const schedulePings = () => {
        clearInterval(pingTimer);
        pingTimer = setInterval(ping, this.lease * 1000);
      };
      ws.on("upgrade", (res) => {
        const tag = res.headers["flotilla-key-tag"];
        if (typeof tag === "string" && tag) this.opts.hub.noteKeyTag(token, tag);
      });
      ws.on("unexpected-response", (req, res) => {
        const status = res.statusCode ?? 0;
        res.resume();
        req.destroy();
        if (status === 401 || status === 403) {
          finish({ kind: "failed", failure: { kind: status === 401 ? "unauthorized" : "forbidden", status, message: `HTTP ${status}` } });
        } else if (status === 429 || status >= 500) {
          const retryAfter = res.headers["retry-after"];
          const failure: HubFailure = { kind: "unreachable", status, message: `HTTP ${status}` };
          if (typeof retryAfter === "string" && /^\d+$/.test(retryAfter)) failure.retryAfterMs = Number(retryAfter) * 1000;
          finish({ kind: "failed", failure });
        } else {
          finish({ kind: "refused", status });
        }
      });
      ws.on("error", (err) => {
        if (!opened) finish({ kind: "failed", failure: { kind: "unreachable", message: `${err.message}${tlsHint(err)}` } });
      });
      ws.on("open", () => {
        opened = true;
        this.send(ws, { type: "hello", ...(this.etag === undefined ? {} : { worksEtag: this.etag }) });
        ping();
        schedulePings();
      });
      ws.on("message", (data, isBinary) => {
        if (isBinary) {
          // A message for a proxied WebSocket stream's member (../proxy-socket.ts).
          if (this.socket === ws) this.opts.proxy?.data(Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer));
          return;
        }
        const text = (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer)).toString("utf8");
        if (text === CHANNEL_PONG) {
          awaitingPong = false;
          return;
        }
        const msg = this.decode(text);
        if (!msg) return;
        if (msg.type === "welcome" && !this.socket) {
          this.socket = ws;
          this.reconnect.connected(Date.now());
          this.dialCond.clear(this.fields());
          this.authRefused = false;
          const before = this.lease;
          this.setLease(msg.leaseDurationSeconds);
          if (this.lease !== before) schedulePings();
          this.opts.logger.info(`connected to the hub over WebSocket; pinging every ${this.lease}s`, this.fields());
          if (msg.leaving) this.markLeaving();
          // The hub may have marked the lease expired while no connection was up (its
          // Available condition is then Unknown): the next heartbeat sends the status again.
          this.lastStatus = undefined;
          this.events?.resent?.();
          // Requests left without an answer by the previous connection go again (a report the
          // hub committed before the connection ended changes nothing the second time, and is
          // acknowledged as any), and those made while no connection was up go now.
          const waiting = [...this.pending.values()];
          const again = waiting.filter((p) => p.sent);
          const first = waiting.filter((p) => !p.sent);
          const list = (ps: Pending[]) => ps.slice(0, 10).map(describeRequest).join(", ") + (ps.length > 10 ? `, and ${ps.length - 10} more` : "");
          if (again.length > 0)
            this.opts.logger.info(
              `sending again ${again.length} request(s) left without an answer by the previous connection`,
              this.fields({ requests: list(again) }),
            );
          if (first.length > 0) this.opts.logger.info(`sending ${first.length} request(s) made while not connected`, this.fields({ requests: list(first) }));
          for (const p of waiting) p.sent = this.send(ws, p.frame);
          welcomed();
          return;
        }
        if (msg.type === "proxy-open" || msg.type === "proxy-credit" || msg.type === "proxy-cancel") {
          const send = (frame: string | Uint8Array): boolean => {
            if (ws.readyState !== ws.OPEN) return false;
            ws.send(frame);
            return true;
          };
          if (this.opts.proxy) this.opts.proxy.message(msg, send);
          else if (msg.type === "proxy-open") send(JSON.stringify({ type: "proxy-end", stream: msg.stream, error: "this agent does not serve the proxy" }));
          return;
        }
        this.onMessage(msg, schedulePings);
      });
      ws.on("close", (code, reason) => {
        this.opts.proxy?.closed();
        if (this.socket === ws) this.socket = undefined;
        finish(
          opened
            ? { kind: "closed", code, reason: reason.toString("utf8") }
            : { kind: "failed", failure: { kind: "unreachable", message: `closed before opening (${code})` } },
        );
      });
    });
  }

  /** Decodes a hub frame; a malformed one is logged and dropped. */
  private decode(text: string): ChannelHubMessage | undefined {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      this.opts.logger.warn(`ignoring a channel frame that is not JSON: ${text.slice(0, 100)}`, this.fields());
      return undefined;
    }
    const checked = ChannelHubMessageSchema.safeParse(parsed);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      this.opts.logger.warn(`ignoring a malformed channel message (${issue ? `${issue.path.join(".")}: ${issue.message}` : "invalid"})`, this.fields());
      return undefined;
    }
    return checked.data;
  }

  private markLeaving(): void {
    this.leaving = true;
    this.events?.leaving();
  }

  private onMessage(msg: ChannelHubMessage, reschedulePings: () => void): void {
    switch (msg.type) {
      case "welcome":
        return;
      case "lease": {
        // A new interval, or the hub found the lease expired (docs/agent-protocol.md "Channel"):
        // either way the next heartbeat sends the status again.
        this.lastStatus = undefined;
        this.events?.resent?.();
        const before = this.lease;
        this.setLease(msg.leaseDurationSeconds);
        if (this.lease !== before) reschedulePings();
        return;
      }
      case "works":
        this.deliver(msg.etag, msg.works, msg.policies ?? [], true);
        if (msg.leaving) this.markLeaving();
        return;
      case "proxy-open":
      case "proxy-credit":
      case "proxy-cancel":
        return; // Handled as they arrive (dial).
      case "works-changed":
        // Too large for a message: the poll transport's fetch reads them over HTTP.
        this.poll.heartbeatAnswered({ leaseDurationSeconds: this.lease, worksEtag: msg.etag, leaving: msg.leaving });
        if (msg.leaving) this.markLeaving();
        return;
      case "ack":
      case "error": {
        const waiter = this.statusWaiters.get(msg.id);
        if (waiter) return waiter(msg);
        const p = this.pending.get(msg.id);
        if (!p) return;
        this.pending.delete(msg.id);
        p.resolve(msg);
        return;
      }
    }
  }

  /** The agent stops: requests waiting are answered as failed, the connection closes. */
  private shutdown(): void {
    this.failPending({ kind: "unreachable", message: "the agent is stopping" });
    for (const waiter of [...this.statusWaiters.values()]) waiter(undefined);
  }
}
