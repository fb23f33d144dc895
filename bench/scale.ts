/**
 * Scale benchmark: the cost of one change as the fleet grows. For each size in BENCH_SIZES
 * (default 1000,10000,50000) it starts a fresh hub (`wrangler dev`, workerd, local D1), seeds
 * that many ManagedClusters, and measures through the public API and the agent API only:
 *
 * - status write p50/p99: a scheduling-relevant change (allocatable) from the agent API (a
 *   heartbeat of one of BENCH_AGENTS clusters registered normally; it returns before the
 *   scheduler runs) and from the admin API (a status merge patch, which waits for the decisions);
 * - decision lag: from an agent's heartbeat reporting its kube-apiserver down (Available=False,
 *   so the `unavailable` taint) returning, until a Placement's decisions have dropped the cluster,
 *   and back (polled every 5 ms);
 * - Placement create p50/p99 (PickN 10, env=prod, decided on return);
 * - one cluster's label change with 1,000 Placements (each selecting one `app-group` value of 200,
 *   all its clusters): the time from the PATCH until every affected Placement has its new
 *   decisions (the PATCH returns after them; checked by reading them back);
 * - a labelSelector list returning 100 clusters, and a chunked list (`limit=500`) walked to the
 *   end, p50/p99 per page;
 * - the scheduler object's memory: the workerd process's RSS growth across the scheduler's cold
 *   start (its view of the fleet built from D1) and its peak, and the view's heap in this process
 *   built from the same rows.
 *
 * Seeding takes a fast path: the hub is started once (migrations applied), stopped, the rows a
 * create of each ManagedCluster would write (objects, labels, the resourceVersion counter) are
 * written into its local D1 file with node:sqlite, and the hub is started again on that state.
 * Seeded clusters have no Durable Object (nothing is written to them); the clusters whose writes
 * are measured are registered normally or created through the API.
 *
 *   BENCH_SIZES        fleet sizes (default 1000,10000,50000)
 *   BENCH_AGENTS       agents registered normally per size (default 20)
 *   BENCH_PLACEMENTS   placements of the label-change test (default 1000)
 *   BENCH_CPU_PROFILE  a file prefix: writes `<prefix>-<size>-cold.cpuprofile`, the hub isolate's
 *                      CPU profile across the scheduler's cold start (`npm run profile:top`)
 *   BENCH_COLD_ONLY=1  stop each size after the cold start (its figure only, for profiling it)
 *   BENCH_METER=1      run the metered hub (bench/meter/worker.ts) and print the cold start's
 *                      counts (D1 calls, statements, rows; DO requests; workerd CPU ms) until they
 *                      settle; with BENCH_TRACE_SQL=1 also its costliest statements
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { generateAgentKeyPair, signAgentToken, signProof, type AgentKeyPair } from "../agent/src/credentials.ts";
import { HubClient } from "../agent/src/hub-client.ts";
import { admin, createBootstrapToken, createNamespaces, freePort, startHub, workerdPids, type Hub } from "../scripts/hub-process.ts";
import { startProfiling } from "./cpu-profile.ts";
import type { MeterCounts } from "./meter/counts.ts";
import { meter, settledMeter, workerdCpuMs } from "./meter/client.ts";
import { CLUSTERSET_LABEL } from "../src/kinds/managedcluster.ts";
import { clusterView } from "../src/placement/reads.ts";
import { SchedulerView } from "../src/placement/view.ts";
import type { KubeObject } from "../src/k8s/meta.ts";
import { printTable } from "./table.ts";
import { pool } from "../scripts/pool.ts";
import type { HeartbeatRequest } from "../src/agent-api/protocol.ts";

const SIZES = (process.env.BENCH_SIZES ?? "1000,10000,50000").split(",").map(Number);
const AGENTS = Number(process.env.BENCH_AGENTS ?? 20);
const PLACEMENTS = Number(process.env.BENCH_PLACEMENTS ?? 1000);
const PROFILE = process.env.BENCH_CPU_PROFILE;
const COLD_ONLY = process.env.BENCH_COLD_ONLY === "1";
const METER = process.env.BENCH_METER === "1";
/** A ManagedClusterSet that holds no cluster: its binding wakes the scheduler, and writes no ClusterProfile. */
const EMPTY_SET = "bench-empty";
const TRACE_SQL = METER && process.env.BENCH_TRACE_SQL === "1";
/** The hub's options of the metered run (the same D1 database as the plain hub's configuration). */
const METER_ARGS = METER ? ["--config", "bench/meter/wrangler.toml", ...(TRACE_SQL ? ["--var", "BENCH_TRACE_SQL:1"] : [])] : [];

const G = "cluster.open-cluster-management.io";
const MC = `/apis/${G}/v1/managedclusters`;
const PL = (ns: string) => `/apis/${G}/v1beta1/namespaces/${ns}/placements`;
const PD = (ns: string) => `/apis/${G}/v1beta1/namespaces/${ns}/placementdecisions`;
const NAMESPACES = Array.from({ length: 10 }, (_, i) => `team-${i}`);
const REGIONS = ["us-east", "us-west", "eu-central", "ap-south", "sa-east"];
const ENVS = ["prod", "staging", "dev"];
const GROUPS = 200;
const MERGE = "application/merge-patch+json";

const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);
const q = (xs: number[], p: number): number => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!);
const ms = (x: number): string => (Number.isNaN(x) ? "-" : x < 10 ? x.toFixed(1) : x.toFixed(0));

/** An admin request that must succeed; returns the parsed body and the time it took (ms). */
async function must(hub: Hub, method: string, apiPath: string, body?: unknown, contentType?: string): Promise<{ body: Record<string, unknown>; ms: number }> {
  const t0 = performance.now();
  const res = await admin(hub, method, apiPath, body, contentType);
  const took = performance.now() - t0;
  if (res.status >= 300) throw new Error(`${method} ${apiPath}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return { body: res.body as Record<string, unknown>, ms: took };
}

/** A seeded ManagedCluster as a create plus its agent's first status would store it. */
function seededCluster(i: number, uid: string, n: number): KubeObject {
  const region = REGIONS[i % REGIONS.length]!;
  const at = "2026-11-01T00:00:00Z";
  const cond = (type: string, reason: string) => ({ type, status: "True", reason, message: "", lastTransitionTime: at });
  const labels: Record<string, string> = {
    [CLUSTERSET_LABEL]: "default",
    region,
    zone: `${region}-${i % 3}`,
    env: ENVS[i % ENVS.length]!,
    tier: `t${i % 4}`,
    "app-group": `g${i % GROUPS}`,
  };
  // 100 clusters of the fleet, spread over it, carry bench-select=yes.
  const step = Math.max(1, Math.floor(n / 100));
  if (i % step === 0 && i / step < 100) labels["bench-select"] = "yes";
  return {
    apiVersion: `${G}/v1`,
    kind: "ManagedCluster",
    metadata: { name: `seed-${String(i).padStart(6, "0")}`, uid, creationTimestamp: at, generation: 1, labels, resourceVersion: "" },
    spec: { hubAcceptsClient: true, leaseDurationSeconds: 60, taints: [] },
    status: {
      conditions: [
        cond("HubAcceptedManagedCluster", "HubClusterAdminAccepted"),
        cond("ManagedClusterJoined", "ManagedClusterJoined"),
        cond("ManagedClusterConditionAvailable", "ManagedClusterAvailable"),
      ],
      version: { kubernetes: `v1.31.${i % 4}` },
      capacity: { cpu: `${2 + (i % 62)}`, memory: `${8 + ((i * 7) % 248)}Gi`, pods: "110" },
      allocatable: { cpu: `${(2 + (i % 62)) * 1000 - 200}m`, memory: `${8 + ((i * 7) % 248) - 1}Gi`, pods: "110" },
      clusterClaims: [
        { name: "platform.open-cluster-management.io", value: i % 2 ? "AWS" : "GCP" },
        { name: "region.open-cluster-management.io", value: region },
      ],
    },
  };
}

/** The local D1 database file of a hub's state folder. */
function d1File(stateDir: string): string {
  const dir = path.join(stateDir, "v3/d1/miniflare-D1DatabaseObject");
  const f = readdirSync(dir).find((n) => n.endsWith(".sqlite") && n !== "metadata.sqlite");
  if (!f) throw new Error(`no D1 database under ${dir}`);
  return path.join(dir, f);
}

/** Writes `n` ManagedClusters into a stopped hub's D1 as their creates would (objects, labels, counter). */
function seed(stateDir: string, n: number): void {
  const db = new DatabaseSync(d1File(stateDir));
  const rv0 = Number((db.prepare("SELECT value FROM counters WHERE id = 1").get() as { value?: number } | undefined)?.value ?? 0);
  db.exec("BEGIN");
  const obj = db.prepare("INSERT INTO objects (resource, namespace, name, uid, resource_version, body) VALUES (?, '', ?, ?, ?, ?)");
  const lab = db.prepare("INSERT INTO labels (resource, namespace, name, key, value) VALUES (?, '', ?, ?, ?)");
  const resource = `${G}/managedclusters`;
  for (let i = 0; i < n; i++) {
    const c = seededCluster(i, crypto.randomUUID(), n);
    // The row body holds no resourceVersion (it is the row's column), as the store writes it.
    const { resourceVersion: _rv, ...meta } = c.metadata;
    obj.run(resource, c.metadata.name, c.metadata.uid!, rv0 + 1 + i, JSON.stringify({ ...c, metadata: meta }));
    for (const [k, v] of Object.entries(c.metadata.labels ?? {})) lab.run(resource, c.metadata.name, k, v);
  }
  db.prepare("INSERT INTO counters (id, value) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET value = excluded.value").run(rv0 + n);
  db.exec("COMMIT");
  db.close();
}

/** The in-process heap (MiB) of the scheduler's view built from the seeded rows of a stopped hub. */
async function viewHeapMiB(stateDir: string): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  const heap = () => {
    gc?.();
    gc?.();
    return process.memoryUsage().heapUsed / 2 ** 20;
  };
  const db = new DatabaseSync(d1File(stateDir), { readOnly: true });
  const before = heap();
  const view = await SchedulerView.build({
    async *clusters() {
      const rows = db.prepare("SELECT body, resource_version AS rv FROM objects WHERE resource = ? ORDER BY name").iterate(`${G}/managedclusters`);
      let page: { view: ReturnType<typeof clusterView>; resourceVersion: string }[] = [];
      for (const r of rows as Iterable<{ body: string; rv: number }>) {
        page.push({ view: clusterView(JSON.parse(r.body) as KubeObject), resourceVersion: String(r.rv) });
        if (page.length === 1000) {
          yield page;
          page = [];
        }
      }
      if (page.length > 0) yield page;
    },
    async *objects() {},
  });
  const mib = heap() - before;
  if (view.clusterCount === 0) throw new Error("the view holds no cluster");
  db.close();
  return mib;
}

/** RSS of the hub's workerd processes, in MiB (the scheduler object runs in one of them). */
function workerdRssMiB(hub: Hub): number {
  let kib = 0;
  for (const pid of workerdPids(hub)) {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    kib += Number(m?.[1] ?? 0);
  }
  return kib / 1024;
}

/** Prints the cold start's counts (`BENCH_METER=1`), and its costliest statements with `BENCH_TRACE_SQL=1`. */
function printMeter(n: number, name: string, m: MeterCounts, cpuMs: number): void {
  const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  log(
    `size ${n}, ${name}: D1 calls ${m.d1Calls}, statements ${m.d1Statements}, rows read ${m.d1RowsRead}, written ${m.d1RowsWritten}; ` +
      `D1 ms ${m.d1Ms.toFixed(0)}; DO requests ${sum(m.doRequests)} ${JSON.stringify(m.doRequests)}, scheduler RPC ms ${(m.doRpcMs.scheduler ?? 0).toFixed(0)}; ` +
      `workerd CPU ${cpuMs.toFixed(0)} ms`,
  );
  if (!m.statements) return;
  const rows = Object.entries(m.statements).sort(([, a], [, b]) => b.read + b.written - (a.read + a.written));
  printTable(
    `Statements of ${name} at ${n} clusters (the 15 with the most rows)`,
    ["statement", "runs", "rows read", "rows written"],
    rows.slice(0, 15).map(([sql, x]) => [sql.replace(/\s+/g, " ").slice(0, 150), String(x.runs), String(x.read), String(x.written)]),
  );
}

/**
 * Runs one measured write of the cold-start phase and returns its time (ms); with
 * `BENCH_CPU_PROFILE`, the hub isolate's CPU profile across it (`<prefix>-<size>-<name>.cpuprofile`),
 * with `BENCH_METER=1` its counts once they settled.
 */
async function coldPhase(hub: Hub, n: number, name: string, inspectorPort: number, write: () => Promise<unknown>): Promise<{ ms: number }> {
  if (METER) {
    await settledMeter(hub, 400);
    await meter(hub, true);
  }
  const profiling = PROFILE ? await startProfiling(inspectorPort) : undefined;
  const cpu0 = workerdCpuMs(hub);
  const t = performance.now();
  await write();
  const took = performance.now() - t;
  await profiling?.stop(`${PROFILE}-${n}-${name}.cpuprofile`);
  if (METER) printMeter(n, name, await settledMeter(hub, 400), workerdCpuMs(hub) - cpu0);
  return { ms: took };
}

/** The cluster names a placement's decisions hold now. */
async function decided(hub: Hub, ns: string, name: string): Promise<string[]> {
  const r = await must(hub, "GET", `${PD(ns)}?labelSelector=${encodeURIComponent(`${G}/placement=${name}`)}`);
  return (r.body.items as { status?: { decisions?: { clusterName: string }[] } }[]).flatMap((d) => (d.status?.decisions ?? []).map((x) => x.clusterName));
}

interface Agent {
  name: string;
  key: AgentKeyPair;
  keyTag?: string;
}

async function heartbeat(hub: Hub, a: Agent, body: HeartbeatRequest): Promise<number> {
  const token = await signAgentToken(a.name, a.key, { keyTag: a.keyTag });
  const t0 = performance.now();
  const res = await fetch(`${hub.url}/agent/v1/clusters/${a.name}/heartbeat`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`heartbeat ${a.name}: ${res.status}`);
  return performance.now() - t0;
}

const agentStatus = (cpuMilli: number, healthy = true): HeartbeatRequest => ({
  healthy,
  version: { kubernetes: "v1.31.2" },
  capacity: { cpu: "16", memory: "64Gi", pods: "110" },
  allocatable: { cpu: `${cpuMilli}m`, memory: "60Gi", pods: "110" },
  clusterClaims: [{ name: "region.open-cluster-management.io", value: "bench" }],
});

/** Waits until `probe` holds, polling every 5 ms; returns the time it took from `since` (ms). */
async function until(what: string, since: number, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<number> {
  for (;;) {
    if (await probe()) return performance.now() - since;
    if (performance.now() - since > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function measure(n: number): Promise<string[]> {
  log(`size ${n}: starting a hub to create its database`);
  let hub = await startHub({ startTimeoutMs: 180_000, ...(METER ? { wranglerArgs: METER_ARGS } : {}) });
  const { stateDir, adminToken } = hub;
  const port = Number(new URL(hub.url).port);
  // Before the fleet is seeded: the namespaces, the hub's built-in objects (the `default` and
  // `global` ManagedClusterSets, made on the first API request) and an empty set. Made after the
  // seeding instead, the built-in sets' creation would be the scheduler's first run (its cold
  // start) and nothing would measure it.
  await createNamespaces(hub, ...NAMESPACES);
  await must(hub, "POST", `/apis/${G}/v1beta2/managedclustersets`, {
    apiVersion: `${G}/v1beta2`,
    kind: "ManagedClusterSet",
    metadata: { name: EMPTY_SET },
    spec: { clusterSelector: { selectorType: "ExclusiveClusterSetLabel" } },
  });
  await hub.stop();
  let t = performance.now();
  seed(stateDir, n);
  log(`size ${n}: seeded ${n} ManagedClusters in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const inProcessHeap = await viewHeapMiB(stateDir);
  const inspectorPort = PROFILE ? await freePort() : 0;
  hub = await startHub({
    stateDir,
    port,
    adminToken,
    startTimeoutMs: 180_000,
    ...(PROFILE || METER ? { wranglerArgs: [...METER_ARGS, ...(PROFILE ? ["--inspector-port", String(inspectorPort)] : [])] } : {}),
  });
  try {
    await must(hub, "GET", "/version");
    // The isolate's first API request (it checks the built-in objects, which exist) is not measured.
    await must(hub, "GET", `/api/v1/namespaces/${NAMESPACES[0]}`);
    const bind = (ns: string, set: string) =>
      must(hub, "POST", `/apis/${G}/v1beta2/namespaces/${ns}/managedclustersetbindings`, {
        apiVersion: `${G}/v1beta2`,
        kind: "ManagedClusterSetBinding",
        metadata: { name: set },
        spec: { clusterSet: set },
      });
    const rssBefore = workerdRssMiB(hub);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, workerdRssMiB(hub))), 50);
    // The scheduler's cold start: its first run (the first binding's write) builds the view of
    // the whole fleet from D1. The binding is to a set without clusters, so that its namespace
    // gets no ClusterProfile (src/clusterprofile/profiles.ts) and the write's time is the
    // scheduler's.
    const cold = await coldPhase(hub, n, "cold", inspectorPort, () => bind(NAMESPACES[0]!, EMPTY_SET));
    clearInterval(sampler);
    rssPeak = Math.max(rssPeak, workerdRssMiB(hub));
    const rssAfter = workerdRssMiB(hub);
    // The first binding of the `default` set, which holds the fleet: the scheduler's view is
    // built, and the cluster inventory writes a ClusterProfile of every cluster in the namespace
    // (OCM's ClusterProfile lifecycle controller), one D1 row each.
    const profiles = await coldPhase(hub, n, "profiles", inspectorPort, () => bind(NAMESPACES[0]!, "default"));
    const coldMs = cold.ms;
    log(
      `size ${n}: scheduler cold start ${coldMs.toFixed(0)} ms, workerd RSS ${rssBefore.toFixed(0)} -> ${rssAfter.toFixed(0)} MiB (peak ${rssPeak.toFixed(0)}); ` +
        `the default set's binding (${n} ClusterProfiles) ${profiles.ms.toFixed(0)} ms`,
    );
    const coldCells = [`${ms(coldMs)}`, ms(profiles.ms), `+${(rssAfter - rssBefore).toFixed(0)} (peak ${rssPeak.toFixed(0)})`];
    if (COLD_ONLY) return [n.toLocaleString("en-US"), "-", "-", "-", "-", "-", "-", "-", ...coldCells, inProcessHeap.toFixed(1)];
    for (const ns of NAMESPACES.slice(1)) await bind(ns, "default");

    // Agents registered as agents register, then joined by their first heartbeat.
    const token = await createBootstrapToken(hub, { autoApprove: true });
    const client = new HubClient({ hubUrl: hub.url });
    const agents: Agent[] = [];
    for (let i = 0; i < AGENTS; i++) agents.push({ name: `agent-${String(i).padStart(3, "0")}`, key: await generateAgentKeyPair() });
    await pool(agents, 8, async (a) => {
      const proof = await signProof(a.name, a.key, `id-${a.name}`);
      const r = await client.register(token, { clusterName: a.name, clusterId: `id-${a.name}`, publicKey: a.key.publicJwk, proof, claims: [] });
      if (!r.ok) throw new Error(`register ${a.name}: ${JSON.stringify(r.error)}`);
      a.keyTag = client.keyTag(a.key.kid);
      await heartbeat(hub, a, agentStatus(8000));
    });
    log(`size ${n}: ${AGENTS} agents registered and joined`);

    // Status writes: agent API (returns at once) and admin API (waits for the decisions).
    const agentWrites: number[] = [];
    for (let round = 0; round < 10; round++) for (const a of agents) agentWrites.push(await heartbeat(hub, a, agentStatus(8000 + 100 * (round + 1))));
    const adminWrites: number[] = [];
    for (let round = 0; round < 5; round++) {
      for (const a of agents)
        adminWrites.push(
          (
            await must(
              hub,
              "PATCH",
              `${MC}/${a.name}/status`,
              { status: { allocatable: { cpu: `${9000 + 100 * round}m`, memory: "60Gi", pods: "110" } } },
              MERGE,
            )
          ).ms,
        );
    }
    log(`size ${n}: status writes measured`);

    // Decision lag after an agent's change: a placement that holds only agent-000.
    const lagAgent = agents[0]!;
    await must(hub, "PATCH", `${MC}/${lagAgent.name}`, { metadata: { labels: { "bench-lag": "yes" } } }, MERGE);
    await must(hub, "POST", PL("team-1"), {
      apiVersion: `${G}/v1beta1`,
      kind: "Placement",
      metadata: { name: "lag" },
      spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { "bench-lag": "yes" } } } }] },
    });
    const lags: number[] = [];
    for (let k = 0; k < 10; k++) {
      for (const healthy of [false, true]) {
        await heartbeat(hub, lagAgent, agentStatus(8000, healthy));
        const since = performance.now();
        lags.push(
          await until("the decision to follow the agent", since, async () => (await decided(hub, "team-1", "lag")).includes(lagAgent.name) === healthy),
        );
      }
    }
    log(`size ${n}: decision lag measured`);

    // Placement creates.
    const creates: number[] = [];
    for (let i = 0; i < 50; i++) {
      creates.push(
        (
          await must(hub, "POST", PL(NAMESPACES[i % NAMESPACES.length]!), {
            apiVersion: `${G}/v1beta1`,
            kind: "Placement",
            metadata: { name: `create-${i}` },
            spec: { numberOfClusters: 10, predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { env: "prod" } } } }] },
          })
        ).ms,
      );
    }
    log(`size ${n}: placement creates measured`);

    // One cluster's label change with PLACEMENTS placements, each taking all clusters of one app-group.
    const changer = agents[1]!;
    await must(hub, "PATCH", `${MC}/${changer.name}`, { metadata: { labels: { "app-group": "g1" } } }, MERGE);
    t = performance.now();
    await pool(
      Array.from({ length: PLACEMENTS }, (_, i) => i),
      8,
      async (i) => {
        await must(hub, "POST", PL(NAMESPACES[i % NAMESPACES.length]!), {
          apiVersion: `${G}/v1beta1`,
          kind: "Placement",
          metadata: { name: `app-${i}` },
          spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { "app-group": `g${i % GROUPS}` } } } }] },
        });
      },
    );
    log(`size ${n}: ${PLACEMENTS} placements created in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    const affected = (group: number) => Array.from({ length: PLACEMENTS }, (_, i) => i).filter((i) => i % GROUPS === group);
    const labelChanges: number[] = [];
    let from = 1;
    for (let k = 0; k < 5; k++) {
      const to = from === 1 ? 2 : 1;
      t = performance.now();
      await must(hub, "PATCH", `${MC}/${changer.name}`, { metadata: { labels: { "app-group": `g${to}` } } }, MERGE);
      const took = await until("every affected placement to have its new decisions", t, async () => {
        for (const i of affected(from)) if ((await decided(hub, NAMESPACES[i % NAMESPACES.length]!, `app-${i}`)).includes(changer.name)) return false;
        for (const i of affected(to)) if (!(await decided(hub, NAMESPACES[i % NAMESPACES.length]!, `app-${i}`)).includes(changer.name)) return false;
        return true;
      });
      labelChanges.push(took);
      from = to;
    }
    log(`size ${n}: label changes measured`);

    // Lists: a labelSelector list of 100 clusters, and a chunked walk with limit=500.
    const selected: number[] = [];
    let count = 0;
    for (let i = 0; i < 30; i++) {
      const r = await must(hub, "GET", `${MC}?labelSelector=bench-select%3Dyes`);
      count = (r.body.items as unknown[]).length;
      selected.push(r.ms);
    }
    const chunks: number[] = [];
    let cont: string | undefined;
    let pages = 0;
    do {
      const r = await must(hub, "GET", `${MC}?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ""}`);
      chunks.push(r.ms);
      cont = (r.body.metadata as { continue?: string }).continue;
      pages++;
    } while (cont);
    log(`size ${n}: lists measured (${count} selected, ${pages} pages)`);

    const rssEnd = workerdRssMiB(hub);
    return [
      n.toLocaleString("en-US"),
      `${ms(q(agentWrites, 0.5))} / ${ms(q(agentWrites, 0.99))}`,
      `${ms(q(adminWrites, 0.5))} / ${ms(q(adminWrites, 0.99))}`,
      `${ms(q(lags, 0.5))} / ${ms(q(lags, 0.99))}`,
      `${ms(q(creates, 0.5))} / ${ms(q(creates, 0.99))}`,
      `${ms(q(labelChanges, 0.5))} / ${ms(Math.max(...labelChanges))}`,
      `${count}: ${ms(q(selected, 0.5))} / ${ms(q(selected, 0.99))}`,
      `${pages}: ${ms(q(chunks, 0.5))} / ${ms(q(chunks, 0.99))}`,
      ...coldCells.slice(0, 2),
      `+${(rssAfter - rssBefore).toFixed(0)} (peak ${rssPeak.toFixed(0)}, end ${rssEnd.toFixed(0)})`,
      inProcessHeap.toFixed(1),
    ];
  } finally {
    await hub.stop();
  }
}

async function main(): Promise<void> {
  const rows: string[][] = [];
  for (const n of SIZES) rows.push(await measure(n));
  printTable(
    `bench:scale (local wrangler dev on this machine; ${AGENTS} agents registered normally, ${PLACEMENTS} placements in the label change; times in ms, p50 / p99)`,
    [
      "clusters",
      "status write, agent API",
      "status write, admin API",
      "decision lag after an agent's change",
      "Placement create",
      `label change, ${PLACEMENTS.toLocaleString("en-US")} placements (p50 / max)`,
      "labelSelector list (items: p50 / p99)",
      "limit=500 pages (pages: p50 / p99)",
      "scheduler cold start ms",
      "default set's first binding ms (ClusterProfiles)",
      "workerd RSS MiB across it",
      "view heap MiB (in process)",
    ],
    rows,
  );
}

await main();
