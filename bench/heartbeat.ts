/**
 * Heartbeat benchmark: starts a real hub (`wrangler dev`, workerd, local D1) and registers N
 * simulated agents (each with its own ES256 key, exactly as the agent does). Two transports
 * (`BENCH_TRANSPORT`):
 *
 * - `ws` (the default, the agent's): the metered hub (bench/meter) and N agents each holding its
 *   channel (bench/channel-fleet.ts: one WebSocket each, pinging every `leaseDurationSeconds`, the
 *   agents split across child processes). Once all are connected and BENCH_SETTLE_SECONDS have
 *   passed, it measures a BENCH_IDLE_SECONDS idle window: the CPU time of the hub's workerd
 *   processes (Linux /proc, user + system, as a share of one core), what the meter counted
 *   (Worker and Durable Object requests, object wakes, channel messages, alarms, rows written, D1
 *   calls and rows) and the descriptors the Worker's workerd holds. Then it restarts the hub
 *   (`npm start` stopped, then started again on the same port and state folder) and times the
 *   reconnect storm: from the restart until every agent is connected again, each with the agent's
 *   reconnect policy (full-jitter backoff, `GET /livez` probes while the hub is absent), with the
 *   spread of the reconnects and what the storm cost the hub (meter). The agents dial the Worker's
 *   own workerd (`BENCH_ROUTE=direct`, the default: wrangler's dev proxy holds four descriptors
 *   per WebSocket, and a restarted Worker listens on a new port, which the fleet is told once the
 *   hub answers) or wrangler's proxy (`BENCH_ROUTE=proxy`).
 * - `poll`: heartbeats over HTTP: heartbeats per second, p50/p99 latency, and the D1 queries
 *   and Durable Object storage rows written per heartbeat as the hub reports them
 *   (x-flotilla-* headers).
 *
 *   BENCH_TRANSPORT       `ws` (default) or `poll`
 *   BENCH_AGENTS          number of agents (default 1000)
 *   BENCH_IDLE_SECONDS    ws: the idle window in seconds (default 120)
 *   BENCH_SETTLE_SECONDS  ws: the wait between the last connection and the idle window, seconds (default 30)
 *   BENCH_ROUTE           ws: `direct` (default) or `proxy`
 *   BENCH_PROCESSES       ws: the fleet's processes (default: 5,000 agents each, at least 2 from 2,000 on)
 *   BENCH_RESTART         ws: `0` skips the restart
 *   BENCH_SECONDS         poll: length of the steady-state run in seconds (default 20)
 *   BENCH_CONCURRENCY     poll: requests in flight (default 32)
 */
import { generateAgentKeyPair, signAgentToken, signProof, type AgentKeyPair } from "../agent/src/credentials.ts";
import { HubClient } from "../agent/src/hub-client.ts";
import { createBootstrapToken, startHub, type Hub } from "../scripts/hub-process.ts";
import { descendants, procStat } from "../scripts/proc.mjs";
import type { HeartbeatRequest } from "../src/agent-api/protocol.ts";
import type { MeterCounts } from "./meter/counts.ts";
import { meter } from "./meter/client.ts";
import {
  ChannelFleet,
  describeStats,
  descriptorLimit,
  entryUrl,
  hubProcesses,
  outOfDescriptors,
  percentile as pct,
  sampleDescriptors,
  type Descriptors,
} from "./channel-fleet.ts";
import { printTable } from "./table.ts";

const N = Number(process.env.BENCH_AGENTS ?? 1000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

interface Sample {
  ms: number;
  d1: number;
  rows: number;
  schedulerRuns: number;
  ok: boolean;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

const status: HeartbeatRequest = {
  healthy: true,
  version: { kubernetes: "v1.31.2" },
  capacity: { cpu: "12", memory: "48Gi", pods: "330" },
  allocatable: { cpu: "11400m", memory: "45Gi", pods: "330" },
  clusterClaims: [{ name: "region", value: "bench" }],
};

async function heartbeat(url: string, name: string, key: AgentKeyPair, keyTag?: string): Promise<Sample> {
  const token = await signAgentToken(name, key, { keyTag });
  const t0 = performance.now();
  const res = await fetch(`${url}/agent/v1/clusters/${name}/heartbeat`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(status),
  });
  await res.arrayBuffer();
  return {
    ms: performance.now() - t0,
    ok: res.status === 200,
    d1: Number(res.headers.get("x-flotilla-d1-queries") ?? NaN),
    rows: Number(res.headers.get("x-flotilla-storage-rows-written") ?? NaN),
    schedulerRuns: Number(res.headers.get("x-flotilla-scheduler-runs") ?? NaN),
  };
}

function summarize(label: string, samples: Sample[], wallMs: number): string[] {
  const ok = samples.filter((s) => s.ok);
  const lat = ok.map((s) => s.ms).sort((a, b) => a - b);
  const mean = (f: (s: Sample) => number) => (ok.length ? ok.reduce((a, s) => a + f(s), 0) / ok.length : NaN);
  return [
    label,
    String(samples.length),
    String(samples.length - ok.length),
    ((ok.length / wallMs) * 1000).toFixed(0),
    percentile(lat, 50).toFixed(1),
    percentile(lat, 99).toFixed(1),
    mean((s) => s.d1).toFixed(3),
    mean((s) => s.rows).toFixed(2),
    mean((s) => s.schedulerRuns).toFixed(3),
  ];
}

async function main(): Promise<void> {
  console.log(`starting the hub (wrangler dev) ...`);
  const hub = await startHub();
  try {
    const token = await createBootstrapToken(hub, { autoApprove: true });
    const client = new HubClient({ hubUrl: hub.url });
    const agents: { name: string; key: AgentKeyPair; keyTag?: string }[] = [];
    for (let i = 0; i < N; i++) agents.push({ name: `bench-${String(i).padStart(5, "0")}`, key: await generateAgentKeyPair() });

    let t = performance.now();
    await pool(agents, 16, async (a) => {
      const proof = await signProof(a.name, a.key, `id-${a.name}`);
      const r = await client.register(token, { clusterName: a.name, clusterId: `id-${a.name}`, publicKey: a.key.publicJwk, proof, claims: [] });
      if (!r.ok) throw new Error(`register ${a.name}: ${JSON.stringify(r.error)}`);
      a.keyTag = client.keyTag(a.key.kid);
    });
    const registerMs = performance.now() - t;
    console.log(`registered ${N} agents in ${(registerMs / 1000).toFixed(1)} s`);

    // First heartbeat: the cluster joins and becomes Available (a status change).
    const first: Sample[] = [];
    t = performance.now();
    await pool(agents, CONCURRENCY, async (a) => void first.push(await heartbeat(hub.url, a.name, a.key, a.keyTag)));
    const firstMs = performance.now() - t;

    // Steady state: renewals that change nothing.
    const steady: Sample[] = [];
    const end = performance.now() + SECONDS * 1000;
    let i = 0;
    t = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (performance.now() < end) {
          const a = agents[i++ % agents.length]!;
          steady.push(await heartbeat(hub.url, a.name, a.key, a.keyTag));
        }
      }),
    );
    const steadyMs = performance.now() - t;

    const header = ["phase", "heartbeats", "errors", "per second", "p50 ms", "p99 ms", "D1 queries/hb", "DO rows written/hb", "scheduler runs/hb"];
    const rows = [header, summarize("first (join)", first, firstMs), summarize("steady", steady, steadyMs)];
    const widths = header.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
    console.log(`\nagents=${N} concurrency=${CONCURRENCY} steady=${SECONDS}s (local wrangler dev on this machine)`);
    for (const r of rows) console.log(r.map((v, c) => v.padStart(widths[c]!)).join("  "));
  } finally {
    await hub.stop();
  }
}

// ---- the ws transport ------------------------------------------------------------------------

const TRANSPORT = process.env.BENCH_TRANSPORT ?? "ws";
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 120);
const SETTLE_SECONDS = Number(process.env.BENCH_SETTLE_SECONDS ?? 30);
const ROUTE = process.env.BENCH_ROUTE ?? "direct";
const PROCESSES = process.env.BENCH_PROCESSES ? Number(process.env.BENCH_PROCESSES) : undefined;
const RESTART = process.env.BENCH_RESTART !== "0";
const METERED = ["--config", "bench/meter/wrangler.toml"];
const epochNow = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${msg}`);

/** CPU time (user + system) in milliseconds of `pid`, and of every process of the hub (`npm start` and below). */
function cpuMs(hub: Hub, pid: number): { worker: number; all: number } {
  return { worker: procStat(pid)?.cpuMs ?? NaN, all: [hub.pid, ...descendants(hub.pid)].reduce((ms, p) => ms + (procStat(p)?.cpuMs ?? 0), 0) };
}

/** The address the agents dial, per {@link ROUTE}, and the Worker's workerd. */
async function dialTarget(hub: Hub): Promise<{ url: string; worker: number }> {
  const procs = hubProcesses(hub.pid, hub.url);
  return { url: ROUTE === "proxy" ? hub.url : await entryUrl(procs.worker), worker: procs.worker };
}

const fdText = (d: Descriptors) => `${d.all} (${d.distinctSockets} sockets, ${d.sqlite} SQLite)`;
const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

/** One row of what the meter counted: Worker requests, Durable Object requests (of which alarms), wakes, messages, rows, D1. */
function meterRow(label: string, m: MeterCounts): string[] {
  return [
    label,
    String(m.workerRequests),
    `${sum(m.doRequests) + sum(m.doAlarms)} (${sum(m.doAlarms)} alarms)`,
    String(sum(m.doWakes)),
    String(sum(m.doMessages)),
    String(sum(m.doRowsWritten)),
    String(m.d1Calls),
    `${m.d1RowsRead} / ${m.d1RowsWritten}`,
  ];
}

async function mainWs(): Promise<void> {
  log(`starting the metered hub (wrangler dev) ...`);
  let hub = await startHub({ wranglerArgs: METERED });
  const fleet = await ChannelFleet.start(
    Array.from({ length: N }, (_, i) => `bench-${String(i).padStart(5, "0")}`),
    { processes: PROCESSES, status },
  );
  const watch = { done: false };
  let sampler: ReturnType<typeof sampleDescriptors> | undefined;
  let worker: number | undefined;
  let limit = NaN;
  try {
    const token = await createBootstrapToken(hub, { autoApprove: true });
    let t = performance.now();
    await fleet.register(hub.url, token);
    log(`registered ${N} agents in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    let target = await dialTarget(hub);
    worker = target.worker;
    limit = descriptorLimit(worker);
    sampler = sampleDescriptors(target.worker);
    t = performance.now();
    await Promise.race([fleet.connect(target.url), outOfDescriptors(() => hub.output(), watch)]);
    log(
      `${N} agents connected (${fleet.processes} agent processes, ${ROUTE}) in ${((performance.now() - t) / 1000).toFixed(1)} s; the Worker's workerd held at most ${fdText(sampler.stop())} descriptors`,
    );

    await sleep(SETTLE_SECONDS * 1000);
    sampler = sampleDescriptors(target.worker, 2000);
    await meter(hub, true);
    const cpu0 = cpuMs(hub, target.worker);
    const w0 = epochNow();
    await sleep(IDLE_SECONDS * 1000);
    const cpu1 = cpuMs(hub, target.worker);
    const windowMs = epochNow() - w0;
    const idle = await meter(hub);
    const idleFds = sampler.stop();
    const idleStats = await fleet.stats();
    const share = (ms: number) => `${((ms / windowMs) * 100).toFixed(2)} %`;
    log(`idle: ${idleStats.connected} agents connected; ${describeStats(idleStats)}`);
    printTable(
      `${N} connected idle agents, ${(windowMs / 1000).toFixed(0)} s window (local wrangler dev on this machine, ${ROUTE})`,
      ["agents connected", "Worker's workerd CPU, of one core", "all hub processes' CPU", "Worker's workerd descriptors, most"],
      [[String(idleStats.connected), share(cpu1.worker - cpu0.worker), share(cpu1.all - cpu0.all), fdText(idleFds)]],
    );
    const meterHeader = ["window", "Worker requests", "DO requests", "DO wakes", "channel messages", "DO rows written", "D1 calls", "D1 rows read / written"];
    const meterRows = [meterRow(`idle ${(windowMs / 1000).toFixed(0)} s`, idle)];
    // Printed now: a failure of the restart that follows does not lose the idle window's counts.
    printTable("what the metered hub counted", meterHeader, meterRows);

    if (RESTART) {
      log(`restarting the hub (npm start stopped, then started on the same port and state folder) ...`);
      const before = await fleet.stats();
      const tDown = epochNow();
      await hub.stop();
      const tStopped = epochNow();
      hub = await startHub({ port: Number(new URL(hub.url).port), stateDir: hub.stateDir, adminToken: hub.adminToken, wranglerArgs: METERED });
      const tUp = epochNow();
      target = await dialTarget(hub);
      worker = target.worker;
      if (ROUTE === "direct") await fleet.retarget(target.url);
      sampler = sampleDescriptors(target.worker);
      const times = (await Promise.race([fleet.connected(tDown), outOfDescriptors(() => hub.output(), watch)])).sort((a, b) => a - b);
      const tAll = times.at(-1)!;
      const storm = await meter(hub);
      const after = await fleet.stats();
      const fds = sampler.stop();
      const sinceUp = times.map((x) => x - tUp);
      const failed = Object.entries(after.dialFailures)
        .map(([k, v]) => [k, v - (before.dialFailures[k] ?? 0)] as const)
        .filter(([, v]) => v > 0);
      log(`reconnect storm: ${describeStats(after)}`);
      printTable(
        `the hub restarted under ${N} connected agents (their reconnect policy: full-jitter backoff from 1 s, /livez probes every 3 s ± 50 % while the hub is absent)`,
        [
          "hub stopped",
          "hub answering again",
          "all agents connected again",
          "reconnects after the hub answered, p50 / p99 / max",
          "failed dials during it",
          "Worker's workerd descriptors, most",
        ],
        [
          [
            `${((tStopped - tDown) / 1000).toFixed(1)} s`,
            `${((tUp - tDown) / 1000).toFixed(1)} s after the restart began`,
            `${((tAll - tDown) / 1000).toFixed(1)} s after it began, ${((tAll - tUp) / 1000).toFixed(1)} s after the hub answered`,
            `${(pct(sinceUp, 50) / 1000).toFixed(1)} / ${(pct(sinceUp, 99) / 1000).toFixed(1)} / ${(sinceUp.at(-1)! / 1000).toFixed(1)} s`,
            failed.map(([k, v]) => `${k}: ${v}`).join(", ") || "none",
            fdText(fds),
          ],
        ],
      );
      printTable("what the metered hub counted", meterHeader, [meterRow("restart to all connected", storm)]);
    }
  } catch (e) {
    const fds = sampler?.stop();
    const stats = await fleet.stats().catch(() => undefined);
    throw new Error(
      `${e instanceof Error ? e.message : String(e)}${fds ? `\nthe Worker's workerd held at most ${fdText(fds)} descriptors (its limit: ${limit})` : ""}${stats ? `\nagents: ${stats.connected} connected; ${describeStats(stats)}` : ""}`,
      { cause: e },
    );
  } finally {
    watch.done = true;
    await fleet.stop();
    await hub.stop();
  }
}

if (TRANSPORT === "ws") await mainWs();
else if (TRANSPORT === "poll") await main();
else throw new Error(`BENCH_TRANSPORT must be ws or poll, not ${TRANSPORT}`);
