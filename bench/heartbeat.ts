/**
 * Heartbeat benchmark: starts a real hub (`wrangler dev`, workerd, local D1), registers N
 * simulated agents (each with its own ES256 key, exactly as the agent does), then drives
 * heartbeats and prints heartbeats per second, p50/p99 latency, and the D1 queries and Durable
 * Object storage rows written per heartbeat as the hub reports them (x-flotilla-* headers).
 *
 *   BENCH_AGENTS       number of agents (default 1000)
 *   BENCH_SECONDS      length of the steady-state run in seconds (default 20)
 *   BENCH_CONCURRENCY  requests in flight (default 32)
 */
import { generateAgentKeyPair, signAgentToken, signProof, type AgentKeyPair } from "../agent/src/credentials.ts";
import { HubClient } from "../agent/src/hub-client.ts";
import { createBootstrapToken, startHub } from "../scripts/hub-process.ts";
import type { HeartbeatRequest } from "../src/agent/protocol.ts";

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
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
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
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const a = agents[i++ % agents.length]!;
        steady.push(await heartbeat(hub.url, a.name, a.key, a.keyTag));
      }
    }));
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

await main();
