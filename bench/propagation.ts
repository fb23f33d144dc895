/**
 * Propagation benchmark: starts a real hub (`wrangler dev`, workerd, local D1), joins N agents
 * (each with its own ES256 key and signed JWTs, as the agent does), binds them to a Placement
 * and a ManifestWorkReplicaSet (rollout All), and has every agent long-poll its works through
 * the agent protocol (docs/agent-protocol.md, `GET .../works?waitSeconds=25` with If-None-Match)
 * and report `Applied`, `Available` and `Progressing=False` at the work's generation as soon as a
 * new generation arrives. The agents here apply nothing to a member cluster: what is measured is
 * the hub's part (the write, the controller, the works, the ETag wake-up, the status write).
 *
 * Prints, for each fleet size, the time from one ManifestWorkReplicaSet update to each cluster
 * having reported Applied for it (p50, p99, max, in milliseconds), and the cost of an idle poll
 * (a poll whose ETag still matches, `waitSeconds=0`): latency and the D1 queries the hub reports
 * in `x-flotilla-d1-queries`.
 *
 *   BENCH_SIZES  fleet sizes, comma-separated (default "100,1000"); each size gets a fresh hub
 */
import { generateAgentKeyPair, signAgentToken, signProof, type AgentKeyPair } from "../agent/src/credentials.ts";
import { HubClient } from "../agent/src/hub-client.ts";
import { admin, createBootstrapToken, startHub, type Hub } from "../scripts/hub-process.ts";

const SIZES = (process.env.BENCH_SIZES ?? "100,1000").split(",").map((s) => Number(s.trim())).filter((n) => n > 0);
const G = "/apis/cluster.open-cluster-management.io";
const MWRS = "/apis/work.open-cluster-management.io/v1alpha1/namespaces/bench/manifestworkreplicasets";

interface BenchAgent {
  name: string;
  key: AgentKeyPair;
  /** The hub's key tag for the key, from the registration answer. */
  keyTag?: string;
  etag?: string;
  /** Highest work generation reported, and when (performance.now() milliseconds). */
  reported: Map<string, { generation: number; at: number }>;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

async function agentFetch(hub: Hub, a: BenchAgent, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const token = await signAgentToken(a.name, a.key, { keyTag: a.keyTag });
  return fetch(`${hub.url}/agent/v1/clusters/${a.name}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
  });
}

const workload = (image: string) => ({
  workload: {
    manifests: [
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "bench", namespace: "default" }, data: { image } },
      { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "bench", namespace: "default" }, spec: { replicas: 1, selector: { matchLabels: { app: "bench" } }, template: { metadata: { labels: { app: "bench" } }, spec: { containers: [{ name: "c", image }] } } } },
    ],
  },
});

/** One agent's poll loop: long-poll, then report every new work generation at once. */
async function runAgent(hub: Hub, a: BenchAgent, stop: { done: boolean }): Promise<void> {
  while (!stop.done) {
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
      await res.arrayBuffer();
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    const body = (await res.json()) as { etag: string; works: { metadata: { name: string; uid: string; generation: number } }[] };
    a.etag = body.etag;
    for (const w of body.works) {
      const seen = a.reported.get(w.metadata.name);
      if (seen && seen.generation >= w.metadata.generation) continue;
      const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      const g = w.metadata.generation;
      const c = (type: string, status: string, reason: string) => ({ type, status, reason, message: reason, observedGeneration: g, lastTransitionTime: now });
      const status = { conditions: [c("Applied", "True", "AppliedManifestWorkComplete"), c("Available", "True", "ResourcesAvailable"), c("Progressing", "False", "Completed")] };
      const put = await agentFetch(hub, a, "PUT", `/works/${w.metadata.name}/status`, { uid: w.metadata.uid, status });
      await put.arrayBuffer();
      if (put.status === 200) a.reported.set(w.metadata.name, { generation: g, at: performance.now() });
    }
  }
}

async function measure(size: number): Promise<string[]> {
  const hub = await startHub();
  const stop = { done: false };
  const loops: Promise<void>[] = [];
  try {
    const token = await createBootstrapToken(hub, { autoApprove: true });
    const client = new HubClient({ hubUrl: hub.url });
    const agents: BenchAgent[] = [];
    for (let i = 0; i < size; i++) agents.push({ name: `prop-${String(i).padStart(5, "0")}`, key: await generateAgentKeyPair(), reported: new Map() });
    await pool(agents, 16, async (a) => {
      const proof = await signProof(a.name, a.key, `id-${a.name}`);
      const r = await client.register(token, { clusterName: a.name, clusterId: `id-${a.name}`, publicKey: a.key.publicJwk, proof, claims: [] });
      if (!r.ok) throw new Error(`register ${a.name}: ${JSON.stringify(r.error)}`);
      a.keyTag = client.keyTag(a.key.kid);
      const hb = await agentFetch(hub, a, "POST", "/heartbeat", { healthy: true });
      await hb.arrayBuffer();
      if (hb.status !== 200) throw new Error(`heartbeat ${a.name}: ${hb.status}`);
    });
    const ok = (r: { status: number; body: unknown }, what: string) => {
      if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
    };
    ok(await admin(hub, "POST", `${G}/v1beta2/namespaces/bench/managedclustersetbindings`, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSetBinding", metadata: { name: "default" }, spec: { clusterSet: "default" } }), "binding");
    ok(await admin(hub, "POST", `${G}/v1beta1/namespaces/bench/placements`, { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name: "all" }, spec: {} }), "placement");
    for (const a of agents) loops.push(runAgent(hub, a, stop));
    const spec = (image: string) => ({ placementRefs: [{ name: "all", rolloutStrategy: { type: "All" } }], manifestWorkTemplate: workload(image) });
    ok(await admin(hub, "POST", MWRS, { apiVersion: "work.open-cluster-management.io/v1alpha1", kind: "ManifestWorkReplicaSet", metadata: { name: "bench" }, spec: spec("v1") }), "replica set");
    const everyone = (generation: number, timeoutMs: number) =>
      new Promise<void>((resolve, reject) => {
        const deadline = Date.now() + timeoutMs;
        const tick = () => {
          const done = agents.filter((a) => [...a.reported.values()].some((r) => r.generation >= generation)).length;
          if (done === agents.length) resolve();
          else if (Date.now() > deadline) reject(new Error(`only ${done}/${agents.length} clusters reported generation ${generation}`));
          else setTimeout(tick, 20);
        };
        tick();
      });
    await everyone(1, 300_000);

    // The measured update: one template change.
    const t0 = performance.now();
    ok(await admin(hub, "PATCH", `${MWRS}/bench`, { spec: spec("v2") }, "application/merge-patch+json"), "update");
    const patchMs = performance.now() - t0;
    await everyone(2, 300_000);
    const lat = agents.map((a) => Math.max(...[...a.reported.values()].filter((r) => r.generation >= 2).map((r) => r.at)) - t0).sort((x, y) => x - y);

    // Idle polls: the ETag matches, nothing waits.
    const idle: { ms: number; d1: number }[] = [];
    for (const a of agents.slice(0, Math.min(agents.length, 200))) {
      const t = performance.now();
      const r = await agentFetch(hub, a, "GET", "/works?waitSeconds=0", undefined, { "if-none-match": `"${a.etag}"` });
      await r.arrayBuffer();
      if (r.status === 304) idle.push({ ms: performance.now() - t, d1: Number(r.headers.get("x-flotilla-d1-queries") ?? NaN) });
    }
    const idleMs = idle.map((s) => s.ms).sort((x, y) => x - y);
    return [
      String(size),
      patchMs.toFixed(0),
      percentile(lat, 50).toFixed(0),
      percentile(lat, 99).toFixed(0),
      lat[lat.length - 1]!.toFixed(0),
      `${idle.length}`,
      percentile(idleMs, 50).toFixed(1),
      percentile(idleMs, 99).toFixed(1),
      (idle.reduce((s, x) => s + x.d1, 0) / Math.max(1, idle.length)).toFixed(2),
    ];
  } finally {
    stop.done = true;
    await hub.stop();
    await Promise.allSettled(loops);
  }
}

const header = ["clusters", "update ms", "Applied p50 ms", "p99 ms", "max ms", "idle polls", "idle p50 ms", "idle p99 ms", "D1 queries/idle poll"];
const rows = [header];
for (const size of SIZES) {
  console.log(`fleet of ${size}: starting the hub, joining the agents ...`);
  rows.push(await measure(size));
}
const widths = header.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
console.log("\nfrom one ManifestWorkReplicaSet update (rollout All) to each cluster reporting Applied (local wrangler dev on this machine)");
for (const r of rows) console.log(r.map((v, c) => v.padStart(widths[c]!)).join("  "));
