/**
 * One process of the benchmarks' channel fleet (bench/channel-fleet.ts, which forks it): a share
 * of the simulated agents, each with its own ES256 key and its own WebSocket to the hub's channel
 * (docs/agent-protocol.md "Channel"), driven by the parent over Node's IPC channel. Its own
 * process because one process here may hold 20,000 file descriptors, one per socket.
 *
 * Each simulated agent does what the agent's ws transport (agent/src/transport/ws.ts) does on the
 * wire, with the agent's own modules where they exist:
 * - registers as the agent does (`POST /agent/v1/register` with a proof signed by its key, the
 *   agent's HubClient), then dials `GET /agent/v1/clusters/{name}/connect` with the subprotocol
 *   and a fresh agent JWT (with the key tag once the hub handed it over), through the `ws` package;
 * - says `hello` with the works ETag it holds, pings (`ping`, answered `pong` by the runtime) at
 *   once and every `leaseDurationSeconds` the `welcome` tells, and takes a ping left without its
 *   pong for a lease interval as a dead connection;
 * - sends its status (a `status` message) at its first connection and, after a reconnect, at its
 *   next heartbeat (the agent's `heartbeatDelayMs`: the lease plus up to 25 %), as the agent does;
 * - answers each `works` message carrying a work generation it has not reported with a `report`
 *   (Applied, Available True and Progressing False at that generation, as an agent that applied
 *   it), and records when the works arrived and when the hub acknowledged the report, by
 *   generation and by work name (an agent may hold several works: a placement's and a replica set's);
 * - reconnects with the agent's {@link ReconnectBackoff} (full jitter), probing `GET /livez`
 *   while the hub is absent ({@link sleepProbing}), as the transport does; requests left without
 *   an answer go again on the next connection.
 *
 * Times are epoch milliseconds with sub-millisecond precision (`performance.timeOrigin +
 * performance.now()`), comparable across the fleet's processes on one machine.
 */
import WebSocket from "ws";
import { generateAgentKeyPair, signAgentToken, signProof, type AgentKeyPair } from "../agent/src/credentials.ts";
import { HubClient, hubAbsent, type HubFailure } from "../agent/src/hub-client.ts";
import { DEFAULT_LEASE_DURATION_SECONDS, HUB_PROBE_PERIOD_MS, ReconnectBackoff, Sleeper, heartbeatDelayMs, sleepProbing } from "../agent/src/backoff.ts";
import { CHANNEL_PING, CHANNEL_PONG, CHANNEL_SUBPROTOCOL, CloseCodes } from "../src/agent-api/channel-constants.ts";
import { ChannelHubMessageSchema, type ChannelHubMessage } from "../src/agent-api/protocol-answers.ts";
import type { HeartbeatRequest, WorkStatusReport } from "../src/agent-api/protocol.ts";
import type { FleetCommand, FleetReply, AgentTimes } from "./channel-fleet.ts";

/** The agent's defaults (agent/src/agent.ts `DEFAULT_TIMING`): backoff ceilings and a request's timeout, in milliseconds. */
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_CAP_MS = 60_000;
const REQUEST_TIMEOUT_MS = 15_000;

const now = (): number => performance.timeOrigin + performance.now();

/** What this process counts, for the parent's report. */
const counts = {
  dialFailures: new Map<string, number>(),
  closes: new Map<number, number>(),
  refusals: new Map<number, number>(),
  deadConnections: 0,
  malformed: 0,
  reportsAcked: 0,
};
const bump = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);

/** Where the agents dial (the hub's or the no-op Worker's base URL, http:); changed by the parent. */
let target = "";
let stopping = new AbortController();
let status: HeartbeatRequest = { healthy: true };

/** A request message sent and not yet answered. */
type Request = { type: "status"; id: string; status: HeartbeatRequest } | { type: "report"; id: string; work: string; report: WorkStatusReport };

class SimAgent {
  keyTag: string | undefined;
  etag: string | undefined;
  lease = DEFAULT_LEASE_DURATION_SECONDS;
  socket: WebSocket | undefined;
  /** Whether the hub acknowledged the status since the last welcome (the agent sends it again after each). */
  statusSent = false;
  /** Whether the first status (the join) was acknowledged. */
  joined = false;
  /** When the last `welcome` arrived (epoch ms). */
  welcomedAt = 0;
  /** Work generation → when works carrying it arrived, and when its report was acknowledged (epoch ms), whichever work it was. */
  readonly woken = new Map<number, number>();
  readonly reported = new Map<number, number>();
  /** The same per work name: work → generation → epoch ms (when one agent holds several works). */
  readonly wokenWork = new Map<string, Map<number, number>>();
  readonly reportedWork = new Map<string, Map<number, number>>();
  /** Generations reported or being reported, by work name. */
  private readonly sentGeneration = new Map<string, number>();
  private readonly pending = new Map<string, Request>();
  private seq = 0;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private readonly reconnect = new ReconnectBackoff(BACKOFF_BASE_MS, BACKOFF_CAP_MS);
  private sleeper = new Sleeper(stopping.signal);

  constructor(
    readonly name: string,
    readonly key: AgentKeyPair,
  ) {}

  /** Registers as the agent does; the hub's answer hands the key tag over. @throws Error when refused */
  async register(hubUrl: string, bootstrapToken: string): Promise<void> {
    const client = new HubClient({ hubUrl });
    for (let attempt = 1; ; attempt++) {
      const proof = await signProof(this.name, this.key, `id-${this.name}`);
      const r = await client.register(bootstrapToken, {
        clusterName: this.name,
        clusterId: `id-${this.name}`,
        publicKey: this.key.publicJwk,
        proof,
        claims: [],
      });
      if (r.ok) {
        this.keyTag = client.keyTag(this.key.kid);
        return;
      }
      // A connection the server closed as the client reused it is no answer: try again.
      if (r.error.status !== undefined || attempt >= 5) throw new Error(`register ${this.name}: ${JSON.stringify(r.error)}`);
      await new Promise((res) => setTimeout(res, 200));
    }
  }

  /**
   * Forgets what it reported to a previous target (a fresh start on another Worker: the floor is
   * handed the placement's work at the generation the hub's agents already reported).
   */
  forgetReports(): void {
    this.sentGeneration.clear();
    this.pending.clear();
  }

  /** Starts the connect loop (ends when the fleet stops). */
  run(): Promise<void> {
    this.sleeper = new Sleeper(stopping.signal);
    return this.loop();
  }

  private async loop(): Promise<void> {
    const signal = stopping.signal;
    while (!signal.aborted) {
      const end = await this.dial(signal);
      this.socket = undefined;
      clearTimeout(this.heartbeatTimer);
      if (signal.aborted) return;
      let delay: number;
      if (end.kind === "failed") {
        bump(counts.dialFailures, `${end.failure.status ?? end.failure.message.replace(/\d+/g, "N").slice(0, 60)}`);
        delay = this.reconnect.lost(Date.now(), end.failure.retryAfterMs ?? 0);
        if (hubAbsent(end.failure)) {
          const period = HUB_PROBE_PERIOD_MS;
          await sleepProbing(this.sleeper, delay, () => new HubClient({ hubUrl: target, timeoutMs: period }).live(period), period);
          continue;
        }
      } else {
        bump(counts.closes, end.code);
        if (end.code === CloseCodes.Left) return;
        delay = end.code === CloseCodes.KeyRotated ? 0 : this.reconnect.lost(Date.now());
      }
      await this.sleeper.sleep(delay);
    }
  }

  private send(ws: WebSocket, msg: object): boolean {
    if (ws.readyState !== ws.OPEN) return false;
    ws.send(JSON.stringify(msg));
    return true;
  }

  private request(req: Request): void {
    this.pending.set(req.id, req);
    if (this.socket) this.send(this.socket, req);
  }

  private sendStatus(): void {
    if (!this.socket || this.statusSent) return;
    if ([...this.pending.values()].some((p) => p.type === "status")) return;
    this.request({ type: "status", id: `s${++this.seq}`, status });
  }

  /** The agent's heartbeat loop: at each tick, the status goes when the hub has not acknowledged it since the last welcome. */
  private scheduleHeartbeat(): void {
    clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = setTimeout(() => {
      this.sendStatus();
      this.scheduleHeartbeat();
    }, heartbeatDelayMs(this.lease));
  }

  private dial(signal: AbortSignal): Promise<{ kind: "failed"; failure: HubFailure } | { kind: "closed"; code: number }> {
    return (async () => {
      const token = await signAgentToken(this.name, this.key, { keyTag: this.keyTag });
      const url = `${target.replace(/^http/, "ws")}/agent/v1/clusters/${encodeURIComponent(this.name)}/connect`;
      return new Promise<{ kind: "failed"; failure: HubFailure } | { kind: "closed"; code: number }>((resolve) => {
        let opened = false;
        let done = false;
        let awaitingPong = false;
        let pingTimer: NodeJS.Timeout | undefined;
        const finish = (end: { kind: "failed"; failure: HubFailure } | { kind: "closed"; code: number }) => {
          if (done) return;
          done = true;
          clearInterval(pingTimer);
          signal.removeEventListener("abort", onAbort);
          resolve(end);
        };
        const ws = new WebSocket(url, CHANNEL_SUBPROTOCOL, {
          headers: { authorization: `Bearer ${token}` },
          handshakeTimeout: REQUEST_TIMEOUT_MS,
          perMessageDeflate: false,
        });
        const onAbort = () => ws.terminate();
        signal.addEventListener("abort", onAbort, { once: true });
        const ping = () => {
          if (awaitingPong) {
            counts.deadConnections++;
            ws.terminate();
            return;
          }
          awaitingPong = true;
          ws.send(CHANNEL_PING);
        };
        ws.on("upgrade", (res) => {
          const tag = res.headers["flotilla-key-tag"];
          if (typeof tag === "string" && tag) this.keyTag = tag;
        });
        ws.on("unexpected-response", (req, res) => {
          const code = res.statusCode ?? 0;
          res.resume();
          req.destroy();
          const retryAfter = res.headers["retry-after"];
          const failure: HubFailure = {
            kind: code === 401 ? "unauthorized" : code === 403 ? "forbidden" : "unreachable",
            status: code,
            message: `HTTP ${code}`,
          };
          if (typeof retryAfter === "string" && /^\d+$/.test(retryAfter)) failure.retryAfterMs = Number(retryAfter) * 1000;
          finish({ kind: "failed", failure });
        });
        ws.on("error", (err) => {
          if (!opened) finish({ kind: "failed", failure: { kind: "unreachable", message: err.message } });
        });
        ws.on("open", () => {
          opened = true;
          this.send(ws, { type: "hello", ...(this.etag === undefined ? {} : { worksEtag: this.etag }) });
          ping();
          pingTimer = setInterval(ping, this.lease * 1000);
        });
        ws.on("message", (data, isBinary) => {
          if (isBinary) return;
          const text = (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer)).toString("utf8");
          if (text === CHANNEL_PONG) {
            awaitingPong = false;
            return;
          }
          let msg: ChannelHubMessage;
          try {
            const checked = ChannelHubMessageSchema.safeParse(JSON.parse(text));
            if (!checked.success) throw new Error("malformed");
            msg = checked.data;
          } catch {
            counts.malformed++;
            return;
          }
          if (msg.type === "welcome" && this.socket !== ws) {
            this.socket = ws;
            this.welcomedAt = now();
            this.reconnect.connected(Date.now());
            if (msg.leaseDurationSeconds > 0 && msg.leaseDurationSeconds !== this.lease) {
              this.lease = msg.leaseDurationSeconds;
              clearInterval(pingTimer);
              pingTimer = setInterval(ping, this.lease * 1000);
            }
            // As the agent: the status goes again after each welcome, at once at the first
            // connection (the agent's first heartbeat), at the next heartbeat after a reconnect.
            this.statusSent = false;
            for (const p of this.pending.values()) this.send(ws, p);
            if (!this.joined) this.sendStatus();
            this.scheduleHeartbeat();
            return;
          }
          this.onMessage(msg);
        });
        ws.on("close", (code) => {
          if (this.socket === ws) this.socket = undefined;
          finish(opened ? { kind: "closed", code } : { kind: "failed", failure: { kind: "unreachable", message: `closed before opening (${code})` } });
        });
      });
    })();
  }

  private onMessage(msg: ChannelHubMessage): void {
    switch (msg.type) {
      case "lease":
        this.lease = msg.leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS;
        this.statusSent = false;
        return;
      case "works": {
        this.etag = msg.etag;
        const at = now();
        for (const w of msg.works) {
          const g = Number(w.metadata.generation);
          if (!this.woken.has(g)) this.woken.set(g, at);
          const wokenOf = mapIn(this.wokenWork, w.metadata.name);
          if (!wokenOf.has(g)) wokenOf.set(g, at);
          if ((this.sentGeneration.get(w.metadata.name) ?? 0) >= g) continue;
          this.sentGeneration.set(w.metadata.name, g);
          const stamp = new Date().toISOString().replace(/\.\d+Z$/, "Z");
          const c = (type: string, s: string, reason: string) => ({
            type,
            status: s,
            reason,
            message: reason,
            observedGeneration: g,
            lastTransitionTime: stamp,
          });
          const report: WorkStatusReport = {
            uid: w.metadata.uid,
            status: {
              conditions: [
                c("Applied", "True", "AppliedManifestWorkComplete"),
                c("Available", "True", "ResourcesAvailable"),
                c("Progressing", "False", "Completed"),
              ],
            },
          };
          this.request({ type: "report", id: `r${g}-${++this.seq}`, work: w.metadata.name, report });
        }
        return;
      }
      case "works-changed":
        this.etag = undefined;
        return;
      case "ack":
      case "error": {
        const req = this.pending.get(msg.id);
        if (!req) return;
        this.pending.delete(msg.id);
        if (msg.type === "error") {
          bump(counts.refusals, msg.status.code);
          return;
        }
        if (req.type === "status") {
          this.statusSent = true;
          this.joined = true;
          if (msg.leaseDurationSeconds) this.lease = msg.leaseDurationSeconds;
        } else {
          counts.reportsAcked++;
          const g = Number(/^r(\d+)-/.exec(req.id)![1]);
          const at = now();
          if (!this.reported.has(g)) this.reported.set(g, at);
          const reportedOf = mapIn(this.reportedWork, req.work);
          if (!reportedOf.has(g)) reportedOf.set(g, at);
        }
        return;
      }
      case "welcome":
        return;
    }
  }
}

/** The inner map of `outer` under `key`, made empty when absent. */
function mapIn(outer: Map<string, Map<number, number>>, key: string): Map<number, number> {
  let inner = outer.get(key);
  if (!inner) outer.set(key, (inner = new Map()));
  return inner;
}

let agents: SimAgent[] = [];
let loops: Promise<void>[] = [];

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.max(1, concurrency) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** Resolves when `ok` holds (checked every 50 ms); rejects after `timeoutMs` with `what`. */
async function until(ok: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(what());
    await new Promise((r) => setTimeout(r, 50));
  }
}

const mapOf = <K>(m: Map<K, number>) => Object.fromEntries([...m].map(([k, v]) => [String(k), v]));

async function handle(cmd: FleetCommand): Promise<unknown> {
  switch (cmd.cmd) {
    case "init": {
      agents = [];
      for (const name of cmd.names) agents.push(new SimAgent(name, await generateAgentKeyPair()));
      if (cmd.status) status = cmd.status;
      return { agents: agents.length };
    }
    case "register": {
      await pool(agents, cmd.concurrency, (a) => a.register(cmd.url, cmd.token));
      return {};
    }
    case "connect": {
      // A fresh start: nothing held from a previous target (the no-op Worker after the hub).
      stopping = new AbortController();
      target = cmd.url;
      for (const a of agents) {
        a.etag = undefined;
        a.joined = false;
        a.woken.clear();
        a.reported.clear();
        a.wokenWork.clear();
        a.reportedWork.clear();
        a.forgetReports();
      }
      loops = [];
      // The first dials go a few at a time, as a fleet's agents start; each waits for its welcome
      // and its first status's acknowledgement before the next starts.
      await pool(agents, cmd.concurrency, async (a) => {
        loops.push(a.run());
        await until(
          () => a.joined || stopping.signal.aborted,
          cmd.timeoutMs,
          () => `${a.name} did not join in ${cmd.timeoutMs} ms`,
        );
      });
      return {};
    }
    case "target":
      target = cmd.url;
      return {};
    case "reported": {
      // Any work's generation, or (`work`) that one work's.
      const reported = (a: SimAgent) => (cmd.work === undefined ? a.reported : a.reportedWork.get(cmd.work));
      const woken = (a: SimAgent) => (cmd.work === undefined ? a.woken : a.wokenWork.get(cmd.work));
      const what = cmd.work === undefined ? "" : ` of work ${cmd.work}`;
      await until(
        () => agents.every((a) => reported(a)?.has(cmd.generation)),
        cmd.timeoutMs,
        () =>
          `${agents.filter((a) => reported(a)?.has(cmd.generation)).length}/${agents.length} agents of this process reported generation ${cmd.generation}${what}`,
      );
      return {
        times: agents.map((a) => ({ woken: woken(a)?.get(cmd.generation) ?? NaN, done: reported(a)!.get(cmd.generation)! }) satisfies AgentTimes),
      };
    }
    case "connected": {
      await until(
        () => agents.every((a) => a.socket !== undefined && a.welcomedAt >= cmd.since),
        cmd.timeoutMs,
        () => `${agents.filter((a) => a.socket !== undefined && a.welcomedAt >= cmd.since).length}/${agents.length} agents of this process connected again`,
      );
      return { times: agents.map((a) => a.welcomedAt) };
    }
    case "stats":
      return {
        connected: agents.filter((a) => a.socket !== undefined).length,
        dialFailures: mapOf(counts.dialFailures),
        closes: mapOf(counts.closes),
        refusals: mapOf(counts.refusals),
        deadConnections: counts.deadConnections,
        malformed: counts.malformed,
        reportsAcked: counts.reportsAcked,
      };
    case "close": {
      stopping.abort();
      await Promise.allSettled(loops);
      return {};
    }
  }
}

process.on("message", (msg: { id: number } & FleetCommand) => {
  handle(msg).then(
    (result) => process.send!({ id: msg.id, ok: true, result } satisfies FleetReply),
    (e: unknown) => process.send!({ id: msg.id, ok: false, error: e instanceof Error ? e.message : String(e) } satisfies FleetReply),
  );
});
process.on("disconnect", () => process.exit(0));
