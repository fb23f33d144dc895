/**
 * Propagation benchmark: starts a real hub (`wrangler dev`, workerd, local D1), joins N agents
 * (each with its own ES256 key and signed JWTs, as the agent does), binds them to a Placement
 * and a ManifestWorkReplicaSet (rollout All), and has every agent report `Applied`, `Available`
 * and `Progressing=False` at the work's generation as soon as a new generation reaches it. The
 * agents here apply nothing to a member cluster: what is measured is the hub's part (the write,
 * the controller, the works, their delivery, the status write).
 *
 * Two transports (`BENCH_TRANSPORT`):
 * - `ws` (the default, the agent's): each agent holds its channel, one WebSocket
 *   (docs/agent-protocol.md "Channel"; bench/channel-fleet.ts, its agents split across child
 *   processes), gets the works pushed and reports over it. The no-op side is bench/noop's
 *   Durable Object per cluster, which accepts the same WebSockets with the Hibernation API and
 *   answers as the hub would. The agents dial the Worker's own workerd (`BENCH_ROUTE=direct`, the
 *   default) or wrangler's dev proxy in front of it (`BENCH_ROUTE=proxy`), which holds four
 *   descriptors per WebSocket and relays each frame (production has no such proxy); the hub and
 *   the no-op Worker are dialled the same way. Also printed: the most descriptors the Worker's
 *   workerd held (sockets, SQLite files), against this machine's 20,000 per process;
 * - `poll`: the agents long-poll their works over HTTP (`GET .../works?waitSeconds=25` with
 *   If-None-Match), the path measured before the channel (the hub's poll transport no longer
 *   holds a long-poll: this measures the HTTP request path itself), against bench/noop's HTTP
 *   routes, with the idle poll's cost.
 *
 * Prints, for each fleet size, the time from one ManifestWorkReplicaSet update to each cluster
 * having reported Applied for it (p50, p99, max, in milliseconds); the same agents' traffic (a
 * long-poll woken by one new works generation, then a status report each) against the no-op
 * Worker of bench/noop (no credential check, no storage) in the same run, and the ratio of the
 * p99s, which tells how much of the figure is this 2-core machine's; and the cost of an idle poll
 * (a poll whose ETag still matches, `waitSeconds=0`): latency and the D1 queries the hub reports
 * in `x-flotilla-d1-queries`. Over the channel it also prints the CPU the hub's Worker workerd
 * used from the update to the last acknowledgement (from /proc, whatever the machine's load) and
 * that CPU per acknowledged report (ms/report), the figure to compare between builds: a cost
 * added to every report or work write shows there first.
 *
 *   BENCH_TRANSPORT    `ws` (default) or `poll`
 *   BENCH_ROUTE        ws: `direct` (default) or `proxy` (see above)
 *   BENCH_PROCESSES    ws: the fleet's processes (default: 5,000 agents each, at least 2 from 2,000 on)
 *   BENCH_SIZES        fleet sizes, comma-separated (default "100,1000"); each size gets a fresh hub
 *   BENCH_HUB_LOG      a file prefix: `<prefix>-<size>.log` gets everything the hub printed
 *   BENCH_NOOP_ONLY    set: runs only the no-op Worker's side (for sizes the hub cannot run at here)
 *   BENCH_HUB_ONLY     set: ws: runs only the hub's side
 *   BENCH_TIMELINE     set: also prints when the polls were answered and the reports written (percentiles)
 *   BENCH_CPU_PROFILE  a file prefix: writes `<prefix>-<size>.cpuprofile`, the hub isolate's CPU
 *                      profile from the update until every cluster reported (bench/cpu-profile.ts)
 *   BENCH_METER        set: ws: the hub runs its metered entry (bench/meter/worker.ts) and the bench
 *                      prints, per acknowledged report, the D1 calls, rows and statements and the
 *                      Durable Object requests and messages from the update until the hub is quiet
 *                      (no D1 call for 1.5 s after the last report); the meter's wrapping costs CPU,
 *                      so compare the CPU figures of unmetered runs only
 *   BENCH_TRACE_SQL=1  with BENCH_METER: also the statements run most per report (D1's and the objects')
 *   BENCH_SETTLE=0     ws: the update is made as soon as generation 1 was acknowledged everywhere; by
 *                      default it waits until the hub's workerd is idle (under 20 ms of CPU in a
 *                      second), so that the figures are the update's, not those of the work that
 *                      generation 1's reports set off after their acknowledgements (their Events)
 */
import { generateAgentKeyPair, signAgentToken, signProof, type AgentKeyPair } from "../agent/src/credentials.ts";
import { HubClient } from "../agent/src/hub-client.ts";
import type { HeartbeatRequest, WorkStatusReport, WorksAnswer } from "../src/agent-api/protocol.ts";
import { admin, createBootstrapToken, freePort, startHub, type Hub } from "../scripts/hub-process.ts";
import { ok, placeEveryCluster } from "./ocm-placement.ts";
import { startNoopWorker } from "./noop/start.ts";
import { startProfiling, type Profiling } from "./cpu-profile.ts";
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { readFileSync } from "node:fs";
import {
  ChannelFleet,
  describeStats,
  descriptorLimit,
  entryUrl,
  hubProcesses,
  outOfDescriptors,
  percentile as pct,
  sampleDescriptors,
  type AgentTimes,
  type Descriptors,
} from "./channel-fleet.ts";
import { printTable } from "./table.ts";
import type { MeterCounts } from "./meter/counts.ts";
import { meter } from "./meter/client.ts";

const SIZES = (process.env.BENCH_SIZES ?? "100,1000")
  .split(",")
  .map((s) => Number(s.trim()))
  .filter((n) => n > 0);
const MWRS = "/apis/work.open-cluster-management.io/v1alpha1/namespaces/bench/manifestworkreplicasets";

interface BenchAgent {
  name: string;
  key: AgentKeyPair;
  /** The hub's key tag for the key, from the registration answer. */
  keyTag?: string;
  etag?: string;
  /** Highest work generation reported, and when (performance.now() milliseconds). */
  reported: Map<string, { generation: number; at: number }>;
  /** When a poll answer first carried each work generation (performance.now() milliseconds). */
  woken?: Map<number, number>;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** Requests in flight at once (`BENCH_CONNECTIONS`, default 4,000); see {@link agentFetch}. */
const MAX_IN_FLIGHT = Number(process.env.BENCH_CONNECTIONS ?? 4000);

/**
 * Connections the agents share (per server): a local workerd and this client each have 20,000
 * file descriptors here, so 10,000 agents cannot each hold a long-poll and a report connection.
 * Idle connections are all kept (Node closes those beyond 256 by default): wrangler's local proxy
 * leaves the connections a client closed in CLOSE-WAIT, and with 10,000 agents it ran out of file
 * descriptors ("Too many open files") within minutes.
 */
const connections = new HttpAgent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT, maxFreeSockets: MAX_IN_FLIGHT });

/** A counting semaphore: requests beyond MAX_IN_FLIGHT wait here, in arrival order. */
let inFlight = 0;
const waitingForSlot: (() => void)[] = [];
async function slot(): Promise<() => void> {
  if (inFlight >= MAX_IN_FLIGHT) await new Promise<void>((resolve) => waitingForSlot.push(resolve));
  else inFlight++;
  return () => {
    const next = waitingForSlot.shift();
    if (next) next();
    else inFlight--;
  };
}

/**
 * One agent-protocol request, signed as the agent signs it, over the shared connections. Beyond
 * MAX_IN_FLIGHT requests, a request waits for a free place before it is signed, as a real agent
 * signs just before it sends: a token signed and then queued here could outlive its 60 s
 * lifetime and be refused, which the hub counts as a failed authentication (and, past 50 a
 * minute from this one address, answers every agent 429). Applies to the hub and the no-op
 * Worker alike.
 */
async function agentFetch(
  hub: { url: string },
  a: BenchAgent,
  method: string,
  path: string,
  body?: HeartbeatRequest | WorkStatusReport,
  headers: Record<string, string> = {},
): Promise<Response> {
  const release = await slot();
  try {
    return await sendAgentRequest(hub, a, method, path, body, headers);
  } finally {
    release();
  }
}

/** Sends one signed agent request and reads its whole answer. */
async function sendAgentRequest(
  hub: { url: string },
  a: BenchAgent,
  method: string,
  path: string,
  body: HeartbeatRequest | WorkStatusReport | undefined,
  headers: Record<string, string>,
): Promise<Response> {
  const token = await signAgentToken(a.name, a.key, { keyTag: a.keyTag });
  const payload = body ? JSON.stringify(body) : undefined;
  return new Promise<Response>((resolve, reject) => {
    const req = httpRequest(
      `${hub.url}/agent/v1/clusters/${a.name}${path}`,
      {
        method,
        agent: connections,
        headers: {
          authorization: `Bearer ${token}`,
          ...(payload ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") h.set(k, v);
          const status = res.statusCode ?? 0;
          resolve(new Response(status === 304 || status === 204 ? null : Buffer.concat(chunks), { status, headers: h }));
        });
        res.on("error", reject);
      },
    );
    // A connection that breaks is a failed fetch, tried again by the caller.
    req.on("error", (e) => reject(new TypeError(`fetch failed: ${e.message}`)));
    if (payload) req.write(payload);
    req.end();
  });
}

const workload = (image: string) => ({
  workload: {
    manifests: [
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "bench", namespace: "default" }, data: { image } },
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "bench", namespace: "default" },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: "bench" } },
          template: { metadata: { labels: { app: "bench" } }, spec: { containers: [{ name: "c", image }] } },
        },
      },
    ],
  },
});

/**
 * Runs `fn` again (up to 5 times, 200 ms apart) when the connection failed: a keep-alive
 * connection the server closed just as the client reused it ("other side closed") is not the
 * hub's answer. Registration and a heartbeat are idempotent.
 */
async function retrying(fn: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof TypeError) || attempt >= 5) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Resolves once every agent reported `generation` (polled every 20 ms). @throws after `timeoutMs` milliseconds */
function everyone(agents: BenchAgent[], generation: number, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const tick = () => {
      const done = agents.filter((a) => [...a.reported.values()].some((r) => r.generation >= generation)).length;
      if (done === agents.length) resolve();
      else if (Date.now() > deadline) reject(new Error(`only ${done}/${agents.length} clusters reported generation ${generation}`));
      else setTimeout(tick, 20);
    };
    tick();
  });
}

/** Each agent's time from `t0` (performance.now() ms) to its report of `generation`, sorted. */
function latencies(agents: BenchAgent[], generation: number, t0: number): number[] {
  return agents.map((a) => Math.max(...[...a.reported.values()].filter((r) => r.generation >= generation).map((r) => r.at)) - t0).sort((x, y) => x - y);
}

/**
 * With `BENCH_TIMELINE` set, prints when the agents' polls were answered with `generation` and
 * when their reports of it were written, as percentiles of milliseconds after `t0`: where the
 * time goes between the hub's wake-ups and its writes.
 */
function printTimeline(what: string, agents: BenchAgent[], generation: number, t0: number): void {
  if (!process.env.BENCH_TIMELINE) return;
  const woken = agents
    .map((a) => (a.woken?.get(generation) ?? NaN) - t0)
    .filter((x) => !Number.isNaN(x))
    .sort((x, y) => x - y);
  const done = latencies(agents, generation, t0);
  const at = (xs: number[]) => [10, 25, 50, 75, 90, 99, 100].map((p) => `p${p} ${percentile(xs, p).toFixed(0)}`).join(", ");
  console.log(`${what}: poll answered ${at(woken)}; reported ${at(done)} (ms)`);
}

/**
 * The same agents' traffic against the no-op Worker (bench/noop/worker.ts) on this machine: each
 * agent long-polls and reports as against the hub, one works generation is published, and the
 * time until every agent reported it is measured. What a local workerd and this client carry at
 * all, to set the hub's figure against.
 */
async function measureNoop(agents: BenchAgent[]): Promise<number[]> {
  const noop = await startNoopWorker();
  const stop: Stop = { done: false };
  const loops: Promise<void>[] = [];
  try {
    // As against the hub: the agents start 16 at a time, each with a first works poll (all of them
    // at once left 3,000 agents' connections in CLOSE-WAIT in the no-op's workerd until it ran
    // out of its 20,000 descriptors).
    await pool(agents, 16, async (a) => {
      a.reported = new Map();
      a.woken = undefined;
      a.etag = undefined;
      await retrying(async () => {
        const r = await agentFetch(noop, a, "GET", "/works?waitSeconds=0");
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`first works poll of ${a.name} (no-op Worker): ${r.status}`);
      });
      loops.push(runAgent(noop, a, stop));
    });
    await everyone(agents, 1, 600_000);
    stop.until = 2;
    const t0 = performance.now();
    await (await fetch(`${noop.url}/bump`, { method: "POST" })).arrayBuffer();
    await everyone(agents, 2, 600_000);
    printTimeline(`fleet of ${agents.length}, no-op Worker`, agents, 2, t0);
    return latencies(agents, 2, t0);
  } finally {
    stop.done = true;
    await noop.stop();
    await Promise.allSettled(loops);
  }
}

/**
 * When the agents' loops end: `done`, all of them; `until`, each agent's once it has reported
 * that work generation. The measured generation ends an agent's loop because this client shares
 * {@link connections} among all agents: a cluster done with it would otherwise hold a connection
 * for its next long-poll (25 s) while other clusters' reports wait for one, which a real fleet
 * (a connection per agent) does not do. The same applies to the no-op Worker's run.
 */
interface Stop {
  done: boolean;
  until?: number;
}

const finished = (a: BenchAgent, stop: Stop) => stop.done || (stop.until !== undefined && [...a.reported.values()].some((r) => r.generation >= stop.until!));

/** Agent requests answered with an error, by HTTP status (printed: a run with any is suspect). */
const refusals = new Map<number, number>();

/** One agent's poll loop: long-poll, then report every new work generation at once. */
async function runAgent(hub: { url: string }, a: BenchAgent, stop: Stop): Promise<void> {
  while (!finished(a, stop)) {
    let res: Response;
    try {
      res = await agentFetch(hub, a, "GET", "/works?waitSeconds=25", undefined, a.etag ? { "if-none-match": `"${a.etag}"` } : {});
    } catch {
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    if (res.status === 304) {
      await res.arrayBuffer();
      continue;
    }
    if (res.status !== 200) {
      refusals.set(res.status, (refusals.get(res.status) ?? 0) + 1);
      await res.arrayBuffer();
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    const body = (await res.json()) as WorksAnswer;
    a.etag = body.etag;
    a.woken ??= new Map();
    for (const w of body.works) if (!a.woken.has(Number(w.metadata.generation))) a.woken.set(Number(w.metadata.generation), performance.now());
    for (const w of body.works) {
      const g = Number(w.metadata.generation);
      const seen = a.reported.get(w.metadata.name);
      if (seen && seen.generation >= g) continue;
      const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      const c = (type: string, status: string, reason: string) => ({ type, status, reason, message: reason, observedGeneration: g, lastTransitionTime: now });
      const status = {
        conditions: [c("Applied", "True", "AppliedManifestWorkComplete"), c("Available", "True", "ResourcesAvailable"), c("Progressing", "False", "Completed")],
      };
      await retrying(async () => {
        const report: WorkStatusReport = { uid: w.metadata.uid, status };
        const put = await agentFetch(hub, a, "PUT", `/works/${w.metadata.name}/status`, report);
        await put.arrayBuffer();
        if (put.status === 200) a.reported.set(w.metadata.name, { generation: g, at: performance.now() });
        else refusals.set(put.status, (refusals.get(put.status) ?? 0) + 1);
      }).catch(() => undefined);
    }
  }
}

const PROFILE = process.env.BENCH_CPU_PROFILE;

/**
 * Throws when `npm start` restarted the hub during the run (its supervisor's lines start with
 * "flotilla:"), with the output that led to it: figures across a restart mean nothing.
 */
function checkNoRestart(hub: { output(): string }): void {
  const out = hub.output();
  const at = out.search(/^flotilla: .*restarting/m);
  if (at >= 0) throw new Error(`the hub was restarted during the run:\n${out.slice(Math.max(0, at - 4000), at + 400)}`);
}

async function measure(size: number): Promise<string[]> {
  const inspectorPort = PROFILE ? await freePort() : 0;
  // The agents join with one heartbeat and send no more (heartbeats are not what is measured):
  // a grace of 100 lease durations (100 minutes) keeps every lease valid through the run.
  const hub = await startHub({
    graceMultiplier: 100,
    ...(PROFILE ? { wranglerArgs: ["--inspector-port", String(inspectorPort)] } : {}),
    ...(process.env.BENCH_HUB_LOG ? { logFile: `${process.env.BENCH_HUB_LOG}-${size}.log` } : {}),
  });
  const stop: Stop = { done: false };
  const loops: Promise<void>[] = [];
  try {
    const token = await createBootstrapToken(hub, { autoApprove: true });
    const client = new HubClient({ hubUrl: hub.url });
    const agents: BenchAgent[] = [];
    for (let i = 0; i < size; i++) agents.push({ name: `prop-${String(i).padStart(5, "0")}`, key: await generateAgentKeyPair(), reported: new Map() });
    await pool(agents, 16, (a) =>
      retrying(async () => {
        const proof = await signProof(a.name, a.key, `id-${a.name}`);
        const r = await client.register(token, { clusterName: a.name, clusterId: `id-${a.name}`, publicKey: a.key.publicJwk, proof, claims: [] });
        // A network error (no HTTP status) is tried again like a failed fetch.
        if (!r.ok)
          throw r.error.status === undefined
            ? new TypeError(`register ${a.name}: ${r.error.message}`)
            : new Error(`register ${a.name}: ${JSON.stringify(r.error)}`);
        a.keyTag = client.keyTag(a.key.kid);
        const hb = await agentFetch(hub, a, "POST", "/heartbeat", { healthy: true });
        await hb.arrayBuffer();
        if (hb.status !== 200) throw new Error(`heartbeat ${a.name}: ${hb.status}`);
      }),
    );
    checkNoRestart(hub);
    await placeEveryCluster(hub, "bench");
    // The agents start 16 at a time, each with a first works poll: on this one machine, 10,000
    // cluster objects loading their storage at once would queue requests for minutes, past their
    // tokens' lifetime (a real fleet's objects load on many machines, as its agents start).
    await pool(agents, 16, async (a) => {
      await retrying(async () => {
        const r = await agentFetch(hub, a, "GET", "/works?waitSeconds=0");
        if (r.status !== 200) throw new Error(`first works poll of ${a.name}: ${r.status} ${await r.text()}`);
        a.etag = ((await r.json()) as WorksAnswer).etag;
      });
      loops.push(runAgent(hub, a, stop));
    });
    const spec = (image: string) => ({ placementRefs: [{ name: "all", rolloutStrategy: { type: "All" } }], manifestWorkTemplate: workload(image) });
    ok(
      await admin(hub, "POST", MWRS, {
        apiVersion: "work.open-cluster-management.io/v1alpha1",
        kind: "ManifestWorkReplicaSet",
        metadata: { name: "bench" },
        spec: spec("v1"),
      }),
      "replica set",
    );
    await everyone(agents, 1, 600_000);
    checkNoRestart(hub);

    // The measured update: one template change.
    stop.until = 2;
    const profiling: Profiling | undefined = PROFILE ? await startProfiling(inspectorPort) : undefined;
    const t0 = performance.now();
    ok(await admin(hub, "PATCH", `${MWRS}/bench`, { spec: spec("v2") }, "application/merge-patch+json"), "update");
    const patchMs = performance.now() - t0;
    await everyone(agents, 2, 600_000);
    await profiling?.stop(`${PROFILE}-${size}.cpuprofile`);
    const lat = latencies(agents, 2, t0);
    printTimeline(`fleet of ${size}, hub`, agents, 2, t0);
    checkNoRestart(hub);

    // Idle polls: the ETag matches, nothing waits.
    const idle: { ms: number; d1: number }[] = [];
    for (const a of agents.slice(0, Math.min(agents.length, 200))) {
      const t = performance.now();
      const r = await agentFetch(hub, a, "GET", "/works?waitSeconds=0", undefined, { "if-none-match": `"${a.etag}"` });
      await r.arrayBuffer();
      if (r.status === 304) idle.push({ ms: performance.now() - t, d1: Number(r.headers.get("x-flotilla-d1-queries") ?? NaN) });
    }
    const idleMs = idle.map((s) => s.ms).sort((x, y) => x - y);
    stop.done = true;
    await hub.stop();
    await Promise.allSettled(loops);
    // Printed now: a failure of the no-op run that follows does not lose the hub's figures.
    console.log(
      `fleet of ${size}: hub p50 ${percentile(lat, 50).toFixed(0)} ms, p99 ${percentile(lat, 99).toFixed(0)} ms, max ${lat[lat.length - 1]!.toFixed(0)} ms (update ${patchMs.toFixed(0)} ms)`,
    );
    console.log(`fleet of ${size}: the same agents against the no-op Worker ...`);
    const noop = await measureNoop(agents);
    const p99 = percentile(lat, 99);
    const noopP99 = percentile(noop, 99);
    return [
      String(size),
      patchMs.toFixed(0),
      percentile(lat, 50).toFixed(0),
      p99.toFixed(0),
      lat[lat.length - 1]!.toFixed(0),
      `${percentile(noop, 50).toFixed(0)} / ${noopP99.toFixed(0)}`,
      (p99 / noopP99).toFixed(1),
      `${idle.length}`,
      percentile(idleMs, 50).toFixed(1),
      percentile(idleMs, 99).toFixed(1),
      (idle.reduce((s, x) => s + x.d1, 0) / Math.max(1, idle.length)).toFixed(2),
    ];
  } catch (e) {
    checkNoRestart(hub);
    throw e;
  } finally {
    stop.done = true;
    await hub.stop();
    await Promise.allSettled(loops);
  }
}

/**
 * The no-op Worker's side alone (`BENCH_NOOP_ONLY`), for a fleet the hub cannot be run at here:
 * what this machine's client and workerd take for the agents' traffic by itself.
 */
async function measureNoopOnly(size: number): Promise<string[]> {
  const agents: BenchAgent[] = [];
  for (let i = 0; i < size; i++) agents.push({ name: `prop-${String(i).padStart(5, "0")}`, key: await generateAgentKeyPair(), reported: new Map() });
  const noop = await measureNoop(agents);
  return [String(size), "-", "-", "-", "-", `${percentile(noop, 50).toFixed(0)} / ${percentile(noop, 99).toFixed(0)}`, "-", "-", "-", "-", "-"];
}

// ---- the ws transport ------------------------------------------------------------------------

const TRANSPORT = process.env.BENCH_TRANSPORT ?? "ws";
const ROUTE = process.env.BENCH_ROUTE ?? "direct";
const PROCESSES = process.env.BENCH_PROCESSES ? Number(process.env.BENCH_PROCESSES) : undefined;
const HUB_ONLY = Boolean(process.env.BENCH_HUB_ONLY);
const NOOP_ONLY = Boolean(process.env.BENCH_NOOP_ONLY);
/** Epoch milliseconds with sub-millisecond precision: the fleet's processes record the same clock. */
const epochNow = () => performance.timeOrigin + performance.now();

/** The address the agents dial for a Worker started under `wrangler dev` below `rootPid`, per {@link ROUTE}. */
async function dialTarget(rootPid: number, url: string): Promise<{ url: string; worker: number }> {
  const procs = hubProcesses(rootPid, url);
  return { url: ROUTE === "proxy" ? url : await entryUrl(procs.worker), worker: procs.worker };
}

/** p50 / p99 / max of `times`' report acknowledgements after `t0` (epoch ms), sorted latencies. */
function doneAfter(times: AgentTimes[], t0: number): number[] {
  return times.map((t) => t.done - t0).sort((a, b) => a - b);
}

function printWsTimeline(what: string, times: AgentTimes[], t0: number): void {
  if (!process.env.BENCH_TIMELINE) return;
  const woken = times
    .map((t) => t.woken - t0)
    .filter((x) => !Number.isNaN(x))
    .sort((a, b) => a - b);
  const done = doneAfter(times, t0);
  const at = (xs: number[]) => [10, 25, 50, 75, 90, 99, 100].map((p) => `p${p} ${pct(xs, p).toFixed(0)}`).join(", ");
  console.log(`${what}: works arrived ${at(woken)}; reports acknowledged ${at(done)} (ms)`);
}

const fdText = (d: Descriptors) => `${d.all} (${d.distinctSockets} sockets, ${d.sqlite} SQLite)`;
/** Guards `p` against the Worker running out of descriptors ({@link outOfDescriptors}). */
const guard = <T>(p: Promise<T>, output: () => string, watch: { done: boolean }) => Promise.race([p, outOfDescriptors(output, watch)]);

interface WsSide {
  lat: number[];
  patchMs: number;
  fds: Descriptors;
  /** The hub's side: its Worker's workerd CPU from the update to the last acknowledgement, per acknowledged report (ms). */
  cpuMsPerReport?: number;
}

const METER = Boolean(process.env.BENCH_METER);
/** Whether the update waits for the hub to settle after generation 1 (`BENCH_SETTLE=0`: it does not). */
const SETTLE = process.env.BENCH_SETTLE !== "0";

/**
 * Waits until process `pid` (the hub's Worker workerd) used less than 20 ms of CPU in the last
 * second (at most 60 s), and answers how long that took (ms): the work set off before is done.
 */
async function cpuSettled(pid: number): Promise<number> {
  const start = Date.now();
  let last = cpuSeconds(pid);
  while (Date.now() - start < 60_000) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = cpuSeconds(pid);
    if (now - last < 0.02) break;
    last = now;
  }
  return Date.now() - start;
}
const TRACE_SQL = process.env.BENCH_TRACE_SQL === "1";

/** The meter once it stopped moving (no D1 call for 1.5 s, at most 60 s): the work the reports set off is done. */
async function quietMeter(hub: Hub): Promise<MeterCounts> {
  const deadline = Date.now() + 60_000;
  let last = await meter(hub);
  for (let quiet = 0; quiet < 6 && Date.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = await meter(hub);
    quiet = now.d1Calls === last.d1Calls ? quiet + 1 : 0;
    last = now;
  }
  return last;
}

/** Prints the meter's counts per acknowledged report (`BENCH_METER`), and with `BENCH_TRACE_SQL=1` the statements run most. */
function printMeter(size: number, m: MeterCounts, acked: number): void {
  const per = (n: number) => (n / Math.max(1, acked)).toFixed(2);
  const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  const classes = (r: Record<string, number>) =>
    Object.entries(r)
      .filter(([, v]) => v > 0)
      .map(([k, v]) => `${k} ${per(v)}`)
      .join(", ") || "none";
  console.log(
    `fleet of ${size}, hub meter per acknowledged report (${acked}): D1 ${per(m.d1Calls)} calls, ${per(m.d1Statements)} statements, ` +
      `${per(m.d1RowsRead)} rows read, ${per(m.d1RowsWritten)} rows written; DO requests ${per(sum(m.doRequests))} (${classes(m.doRequests)}), ` +
      `alarms ${per(sum(m.doAlarms))}, WebSocket messages ${per(sum(m.doMessages))}, DO rows written ${per(sum(m.doRowsWritten))} (${classes(m.doRowsWritten)})`,
  );
  if (!TRACE_SQL || !m.statements) return;
  const rows = Object.entries(m.statements)
    .sort(([, a], [, b]) => b.runs - a.runs)
    .slice(0, 25)
    .map(([sql, t]) => [sql.replace(/\s+/g, " ").slice(0, Number(process.env.BENCH_TRACE_WIDTH ?? 160)), per(t.runs), per(t.read), per(t.written)]);
  printTable(`statements per acknowledged report at ${size} clusters (the 25 run most)`, ["statement", "runs", "rows read", "rows written"], rows);
}

/** The hub's side over the channel: join, first template, the measured update. */
async function measureWsHub(fleet: ChannelFleet, size: number): Promise<WsSide> {
  const inspectorPort = PROFILE ? await freePort() : 0;
  const wranglerArgs = [
    ...(METER ? ["--config", "bench/meter/wrangler.toml"] : []),
    ...(METER && TRACE_SQL ? ["--var", "BENCH_TRACE_SQL:1"] : []),
    ...(PROFILE ? ["--inspector-port", String(inspectorPort)] : []),
  ];
  const hub = await startHub({
    graceMultiplier: 100,
    ...(wranglerArgs.length > 0 ? { wranglerArgs } : {}),
    ...(METER ? { startTimeoutMs: 300_000 } : {}),
    ...(process.env.BENCH_HUB_LOG ? { logFile: `${process.env.BENCH_HUB_LOG}-${size}.log` } : {}),
  });
  const watch = { done: false };
  let sampler: ReturnType<typeof sampleDescriptors> | undefined;
  let limit = NaN;
  const guarded = <T>(p: Promise<T>) => guard(p, () => hub.output(), watch);
  try {
    const token = await createBootstrapToken(hub, { autoApprove: true });
    let t = performance.now();
    await fleet.register(hub.url, token);
    console.log(`fleet of ${size}: ${size} agents registered in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    checkNoRestart(hub);
    await placeEveryCluster(hub, "bench");
    const target = await dialTarget(hub.pid, hub.url);
    limit = descriptorLimit(target.worker);
    sampler = sampleDescriptors(target.worker);
    t = performance.now();
    await guarded(fleet.connect(target.url));
    console.log(
      `fleet of ${size}: connected (${fleet.processes} agent processes, ${ROUTE}) in ${((performance.now() - t) / 1000).toFixed(1)} s; the Worker's workerd holds ${fdText(sampler.stop())} descriptors at most so far`,
    );
    checkNoRestart(hub);
    const spec = (image: string) => ({ placementRefs: [{ name: "all", rolloutStrategy: { type: "All" } }], manifestWorkTemplate: workload(image) });
    ok(
      await admin(hub, "POST", MWRS, {
        apiVersion: "work.open-cluster-management.io/v1alpha1",
        kind: "ManifestWorkReplicaSet",
        metadata: { name: "bench" },
        spec: spec("v1"),
      }),
      "replica set",
    );
    await guarded(fleet.reported(1));
    checkNoRestart(hub);
    const acked1 = METER ? await meter(hub) : undefined;
    // Generation 1's reports set off work that runs after their acknowledgements (their Events,
    // the replica set's runs): the update is measured once that is done, not on top of it.
    const settledMs = SETTLE ? await cpuSettled(target.worker) : 0;
    if (acked1) {
      const settled = await quietMeter(hub);
      console.log(
        `fleet of ${size}, hub: after generation 1's last acknowledgement, before the update: ${settled.d1Calls - acked1.d1Calls} D1 calls, ${settled.d1Statements - acked1.d1Statements} statements`,
      );
      await meter(hub, true);
    }
    if (SETTLE) console.log(`fleet of ${size}, hub: settled ${(settledMs / 1000).toFixed(1)} s after generation 1's last acknowledgement`);
    const profiling: Profiling | undefined = PROFILE ? await startProfiling(inspectorPort) : undefined;
    const acked0 = (await fleet.stats()).reportsAcked;
    const cpu0 = cpuSeconds(target.worker);
    const t0 = epochNow();
    ok(await admin(hub, "PATCH", `${MWRS}/bench`, { spec: spec("v2") }, "application/merge-patch+json"), "update");
    const patchMs = epochNow() - t0;
    const times = await guarded(fleet.reported(2));
    const cpu = cpuSeconds(target.worker) - cpu0;
    const acked = (await fleet.stats()).reportsAcked - acked0;
    await profiling?.stop(`${PROFILE}-${size}.cpuprofile`);
    const lat = doneAfter(times, t0);
    printWsTimeline(`fleet of ${size}, hub`, times, t0);
    const msPerReport = (cpu * 1000) / acked;
    console.log(
      `fleet of ${size}, hub: the Worker's workerd used ${cpu.toFixed(2)} s of CPU from the update to the last acknowledgement (load ${loadAverage()}): ${msPerReport.toFixed(2)} ms per acknowledged report (${acked} reports)`,
    );
    if (METER) printMeter(size, await quietMeter(hub), acked);
    checkNoRestart(hub);
    return { lat, patchMs, fds: sampler.stop(), cpuMsPerReport: msPerReport };
  } catch (e) {
    const fds = sampler?.stop();
    const stats = await fleet.stats().catch(() => undefined);
    throw new Error(
      `${e instanceof Error ? e.message : String(e)}${fds ? `\nthe Worker's workerd held at most ${fdText(fds)} descriptors (its limit: ${limit})` : ""}${stats ? `\nagents: ${stats.connected} connected; ${describeStats(stats)}` : ""}`,
      { cause: e },
    );
  } finally {
    watch.done = true;
    const stats = await fleet.stats().catch(() => undefined);
    if (stats) console.log(`fleet of ${size}, hub: ${describeStats(stats)}`);
    await fleet.disconnect().catch(() => undefined);
    await hub.stop();
  }
}

/** The same agents against the no-op Worker's channel: connect, generation 1, then one bump. */
async function measureWsNoop(fleet: ChannelFleet, size: number): Promise<WsSide> {
  const noop = await startNoopWorker();
  const watch = { done: false };
  const guarded = <T>(p: Promise<T>) => guard(p, () => noop.output(), watch);
  let sampler: ReturnType<typeof sampleDescriptors> | undefined;
  try {
    const target = await dialTarget(noop.pid, noop.url);
    sampler = sampleDescriptors(target.worker);
    await guarded(fleet.connect(target.url));
    await guarded(fleet.reported(1));
    const t0 = epochNow();
    const res = await fetch(`${noop.url}/bump`, { method: "POST" });
    await res.arrayBuffer();
    const patchMs = epochNow() - t0;
    const times = await guarded(fleet.reported(2));
    printWsTimeline(`fleet of ${size}, no-op Worker`, times, t0);
    return { lat: doneAfter(times, t0), patchMs, fds: sampler.stop() };
  } catch (e) {
    const fds = sampler?.stop();
    throw new Error(`no-op Worker: ${e instanceof Error ? e.message : String(e)}${fds ? ` (its workerd held at most ${fdText(fds)} descriptors)` : ""}`, {
      cause: e,
    });
  } finally {
    watch.done = true;
    await fleet.disconnect().catch(() => undefined);
    await noop.stop();
  }
}

const secs = (ms: number) => (ms / 1000).toFixed(2);

/**
 * The CPU time process `pid` has used so far (user + system, seconds), from /proc/<pid>/stat
 * (clock ticks of 1/100 s, Linux's USER_HZ): what the hub's work costs whatever the machine's
 * load, unlike its wall-clock figures.
 */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The 1-minute load average, for the figures' context. */
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]!;

async function measureWs(size: number): Promise<string[]> {
  const fleet = await ChannelFleet.start(
    Array.from({ length: size }, (_, i) => `prop-${String(i).padStart(5, "0")}`),
    { processes: PROCESSES },
  );
  try {
    const hub = NOOP_ONLY ? undefined : await measureWsHub(fleet, size);
    if (hub)
      console.log(
        `fleet of ${size}: hub p50 ${secs(pct(hub.lat, 50))} s, p99 ${secs(pct(hub.lat, 99))} s, max ${secs(hub.lat.at(-1)!)} s (update ${hub.patchMs.toFixed(0)} ms); the Worker's workerd held at most ${fdText(hub.fds)} descriptors`,
      );
    const noop = HUB_ONLY ? undefined : await measureWsNoop(fleet, size);
    if (noop)
      console.log(
        `fleet of ${size}: no-op Worker p50 ${secs(pct(noop.lat, 50))} s, p99 ${secs(pct(noop.lat, 99))} s, max ${secs(noop.lat.at(-1)!)} s; its workerd held at most ${fdText(noop.fds)} descriptors`,
      );
    const p = (side: WsSide | undefined, q: number) => (side ? secs(pct(side.lat, q)) : "-");
    return [
      String(size),
      `ws (${ROUTE}, ${fleet.processes} agent processes)`,
      hub ? hub.patchMs.toFixed(0) : "-",
      `${p(hub, 50)} / ${p(hub, 99)} / ${hub ? secs(hub.lat.at(-1)!) : "-"}`,
      `${p(noop, 50)} / ${p(noop, 99)} / ${noop ? secs(noop.lat.at(-1)!) : "-"}`,
      hub && noop ? (pct(hub.lat, 99) / pct(noop.lat, 99)).toFixed(1) : "-",
      hub ? fdText(hub.fds) : "-",
      hub?.cpuMsPerReport !== undefined ? hub.cpuMsPerReport.toFixed(2) : "-",
    ];
  } finally {
    await fleet.stop();
  }
}

// ---- main -------------------------------------------------------------------------------------

if (TRANSPORT === "ws") {
  const rows: string[][] = [];
  for (const size of SIZES) {
    console.log(`fleet of ${size}: ws transport, ${NOOP_ONLY ? "the no-op Worker only" : "starting the hub"} ...`);
    rows.push(await measureWs(size));
  }
  printTable(
    "from one ManifestWorkReplicaSet update (rollout All) to each cluster's report of Applied acknowledged over its channel (local wrangler dev on this machine; seconds)",
    [
      "clusters",
      "transport",
      "update ms",
      "hub p50 / p99 / max s",
      "no-op p50 / p99 / max s",
      "p99 ratio",
      "hub workerd descriptors, most",
      "hub CPU ms/report",
    ],
    rows,
  );
} else if (TRANSPORT === "poll") {
  const header = [
    "clusters",
    "update ms",
    "Applied p50 ms",
    "p99 ms",
    "max ms",
    "no-op Worker p50 / p99 ms",
    "p99 ratio",
    "idle polls",
    "idle p50 ms",
    "idle p99 ms",
    "D1 queries/idle poll",
  ];
  const rows = [header];
  for (const size of SIZES) {
    console.log(`fleet of ${size}: ${NOOP_ONLY ? "the no-op Worker only" : "starting the hub, joining the agents"} ...`);
    rows.push(NOOP_ONLY ? await measureNoopOnly(size) : await measure(size));
  }
  const widths = header.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  if (refusals.size > 0) console.log(`\nagent requests refused, by HTTP status: ${[...refusals].map(([code, n]) => `${code}: ${n}`).join(", ")}`);
  console.log("\nfrom one ManifestWorkReplicaSet update (rollout All) to each cluster reporting Applied over HTTP (local wrangler dev on this machine)");
  for (const r of rows) console.log(r.map((v, c) => v.padStart(widths[c]!)).join("  "));
} else {
  throw new Error(`BENCH_TRANSPORT must be ws or poll, not ${TRANSPORT}`);
}
