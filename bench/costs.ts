/**
 * Unit-cost benchmark: what one operation costs in the units Cloudflare bills, measured on a real
 * local hub (`npm start`: wrangler dev, workerd, local D1) whose entry is the metered hub
 * (bench/meter/worker.ts). For each operation it resets the meter, runs the operation
 * BENCH_SAMPLES times one after another through the public or the agent API, waits until nothing
 * more happens (the scheduler's and replica sets' alarms have run), and divides:
 *
 * - Worker requests; Durable Object requests (RPC calls, alarm invocations, and WebSocket
 *   messages delivered to an object, billed at 20:1), object wakes (constructions) and SQLite rows
 *   written (table rows, index entries and `setAlarm`), per class: cluster, scheduler, replica set,
 *   metrics;
 * - D1 calls (a batch is one), D1 rows read and rows written (`meta` of each result, as D1 bills);
 * - the CPU time of the local workerd processes (the Worker, the objects and the local D1
 *   together, from /proc), and the latency of the operation's own request (p50).
 *
 * The agent channel's operations (an auto-answered ping, a status message, a report) run over
 * each agent's WebSocket (the `ws` package, as the agent's), connected once before them.
 *
 * Then it stops the hub, reads its local D1 file (node:sqlite, `dbstat`) and the cluster
 * objects' SQLite files for the stored bytes per row and per object, and removes its state.
 *
 * The fleet: BENCH_CLUSTERS clusters registered as the agent registers (own ES256 key, bootstrap
 * token with autoApprove), in the `default` set, bound to namespace `apps`, where BENCH_PLACEMENTS
 * Placements pick 5 clusters each by ResourceAllocatableMemory (mode Exact; the clusters have
 * 40, 41, ... GiB), and one (`all`) picks them all.
 *
 *   BENCH_CLUSTERS     clusters (default 20)
 *   BENCH_SAMPLES      samples per operation (default 10; steady heartbeats and polls take 5x)
 *   BENCH_PLACEMENTS   placements of the fleet (default 10)
 *   BENCH_IDLE_LEASE_SECONDS   lease of the idle agent (below; default 5)
 *   BENCH_IDLE_LEASES          leases the idle agent is measured over (default 12)
 *   BENCH_IDLE_ONLY=1          only the idle cluster, on a hub with nothing else
 *   BENCH_TRACE_SQL=1          also each operation's D1 calls and costliest statements (D1's and the
 *                              objects' SQLite: runs, rows read and written, characters bound)
 *
 * Last, the idle cluster (issue 32, "cost stays with change"): a real agent process (the bundled
 * `flotilla-agent --simulate`, ws transport, `--status-sync-interval` 10 s: its works synced every
 * 10 s, its policies on `evaluationInterval: watch`, OCM's default, evaluated when a watched
 * object changes) with 3 template add-ons installed by hand (AddOnTemplate, ClusterManagementAddOn
 * and ManagedClusterAddOn each: the hub's add-on manager renders OCM's deploy works
 * `addon-<name>-deploy-0`; the fleet's replica set, whose placement picks every cluster, adds a
 * fourth work) and 10 Policies it enforces and finds compliant (a musthave Namespace each),
 * measured once everything is applied and compliant: what it costs per lease while nothing
 * changes (its pings are auto-answered, and no compliance or status travels).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { generateAgentKeyPair, signAgentToken, signProof, type AgentKeyPair } from "../agent/src/credentials.ts";
import { HubClient } from "../agent/src/hub-client.ts";
import { admin, createBootstrapToken, createNamespaces, startHub, type Hub } from "../scripts/hub-process.ts";
import type { HeartbeatRequest, WorkStatusReport } from "../src/agent-api/protocol.ts";
import type { MeterCounts } from "./meter/counts.ts";
import { meter, settledMeter as settle, workerdCpuMs } from "./meter/client.ts";
import { printTable } from "./table.ts";
import { addOnPath, manualAddOn, replicatedPolicy, templateAddOn } from "./objects.ts";
import WebSocket from "ws";
import { CHANNEL_PING, CHANNEL_PONG, CHANNEL_SUBPROTOCOL, type HubMessage } from "../src/agent-api/channel-protocol.ts";

const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 20);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 10);
const PLACEMENTS = Number(process.env.BENCH_PLACEMENTS ?? 10);
const IDLE_LEASE = Number(process.env.BENCH_IDLE_LEASE_SECONDS ?? 5);
const IDLE_LEASES = Number(process.env.BENCH_IDLE_LEASES ?? 12);
const ADDONS = ["observability", "logging", "backup"];
const POLICY_COUNT = 10;
/** `BENCH_IDLE_ONLY=1`: measure the idle cluster alone, on a hub with nothing else (no fleet, no other alarm). */
const IDLE_ONLY = process.env.BENCH_IDLE_ONLY === "1";
/** `BENCH_TRACE_SQL=1`: the hub tallies each statement, and each operation's costliest statements are printed. */
const TRACE_SQL = process.env.BENCH_TRACE_SQL === "1";

const G = "cluster.open-cluster-management.io";
const MC = `/apis/${G}/v1/managedclusters`;
const PL = `/apis/${G}/v1beta1/namespaces/apps/placements`;
const MW = (cluster: string) => `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks`;
const MWRS = "/apis/work.open-cluster-management.io/v1alpha1/namespaces/apps/manifestworkreplicasets";
const MERGE = "application/merge-patch+json";

const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);

interface Agent {
  name: string;
  key: AgentKeyPair;
  keyTag?: string;
  etag?: string;
  /** What the agent reports: changed by the status-change operations. */
  status: HeartbeatRequest & Required<Pick<HeartbeatRequest, "version" | "capacity" | "allocatable" | "clusterClaims">>;
  works: { name: string; uid: string }[];
  /** The agent's channel (docs/agent-protocol.md "Channel"), once connected. */
  channel?: Channel;
}

/** One agent's channel: its socket and the hub's messages awaited by what they answer. */
interface Channel {
  ws: WebSocket;
  /** Resolves the next frame that `match` accepts. */
  next(match: (frame: string) => boolean): Promise<string>;
}

/** Connects agent `a`'s channel and says `hello` (awaiting `welcome` and the works it is sent). @throws Error when the upgrade fails */
async function connectChannel(hub: Hub, a: Agent): Promise<Channel> {
  const token = await signAgentToken(a.name, a.key, { keyTag: a.keyTag });
  const ws = new WebSocket(`${hub.url.replace(/^http/, "ws")}/agent/v1/clusters/${a.name}/connect`, CHANNEL_SUBPROTOCOL, {
    headers: { authorization: `Bearer ${token}` },
  });
  const waiting: { match: (f: string) => boolean; resolve: (f: string) => void }[] = [];
  ws.on("message", (data) => {
    const frame = String(data);
    const i = waiting.findIndex((w) => w.match(frame));
    if (i >= 0) waiting.splice(i, 1)[0]!.resolve(frame);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
    ws.once("unexpected-response", (_req, res) => reject(new Error(`connect ${a.name}: HTTP ${res.statusCode}`)));
  });
  const channel: Channel = { ws, next: (match) => new Promise((resolve) => waiting.push({ match, resolve })) };
  const welcome = channel.next((f) => f.includes('"welcome"'));
  ws.send(JSON.stringify({ type: "hello", worksEtag: a.etag }));
  await welcome;
  return channel;
}

/** Sends channel request `msg` (with a fresh id) and awaits its `ack`. @throws Error on an `error` answer */
async function channelRequest(a: Agent, msg: Record<string, unknown>): Promise<{ ms: number }> {
  const id = crypto.randomUUID();
  const t0 = performance.now();
  const answer = a.channel!.next((f) => f.includes(`"${id}"`));
  a.channel!.ws.send(JSON.stringify({ ...msg, id }));
  const m = JSON.parse(await answer) as HubMessage;
  if (m.type !== "ack") throw new Error(`${String(msg.type)} ${a.name}: ${JSON.stringify(m)}`);
  return { ms: performance.now() - t0 };
}

/** One operation's figures. */
interface Measured {
  label: string;
  samples: number;
  counts: MeterCounts;
  cpuMs: number;
  latencies: number[];
  /** What the hub's cost headers said (agent calls), summed: the cluster object's own count. */
  headers: { d1: number; rows: number };
}

/** Runs `op` for samples 0..n-1 one after another and measures them together. `op` returns its latency in ms and, for agent calls, the hub's cost headers. */
async function measure(hub: Hub, label: string, n: number, op: (i: number) => Promise<{ ms: number; headers?: Response["headers"] }>): Promise<Measured> {
  await settle(hub);
  await meter(hub, true);
  const cpu0 = workerdCpuMs(hub);
  const latencies: number[] = [];
  const headers = { d1: 0, rows: 0 };
  for (let i = 0; i < n; i++) {
    const r = await op(i);
    latencies.push(r.ms);
    headers.d1 += Number(r.headers?.get("x-flotilla-d1-queries") ?? 0);
    headers.rows += Number(r.headers?.get("x-flotilla-storage-rows-written") ?? 0);
  }
  const counts = await settle(hub);
  const cpuMs = workerdCpuMs(hub) - cpu0;
  log(`${label}: ${n} samples`);
  return { label, samples: n, counts, cpuMs, latencies, headers };
}

async function timed(fn: () => Promise<Response | { status: number }>, what: string): Promise<{ ms: number; headers?: Response["headers"] }> {
  const t0 = performance.now();
  const res = await fn();
  const ms = performance.now() - t0;
  if (res instanceof Response) await res.arrayBuffer();
  if (res.status >= 300 && res.status !== 304) throw new Error(`${what}: HTTP ${res.status}`);
  return { ms, headers: res instanceof Response ? res.headers : undefined };
}

/** One agent-protocol request, signed as the agent signs it; `body` is a request of src/agent-api/protocol.ts. */
async function agentFetch(
  hub: Hub,
  a: Agent,
  method: string,
  sub: string,
  body?: HeartbeatRequest | WorkStatusReport,
  headers: Record<string, string> = {},
): Promise<Response> {
  const token = await signAgentToken(a.name, a.key, { keyTag: a.keyTag });
  return fetch(`${hub.url}/agent/v1/clusters/${a.name}${sub}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

const adminOk = async (hub: Hub, method: string, p: string, body: unknown, what: string, contentType?: string) => {
  const t0 = performance.now();
  const r = await admin(hub, method, p, body, contentType);
  const ms = performance.now() - t0;
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return { ms, body: r.body as { metadata: { uid: string; name: string } } };
};

const placement = (name: string, numberOfClusters?: number) => ({
  apiVersion: `${G}/v1beta1`,
  kind: "Placement",
  metadata: { name },
  spec: {
    ...(numberOfClusters !== undefined ? { numberOfClusters } : {}),
    // Exact: ResourceAllocatableMemory alone. Additive would add Balance and Steady, which move
    // identical placements' decisions back and forth on every cluster change (each placement's
    // choice lowers its clusters' Balance score for the next run), which is not the unit cost.
    prioritizerPolicy: { mode: "Exact", configurations: [{ scoreCoordinate: { type: "BuiltIn", builtIn: "ResourceAllocatableMemory" }, weight: 1 }] },
  },
});

/** The ManifestWork of the README's example: one ConfigMap and a status feedback rule. */
const workload = (name: string) => ({
  workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { greeting: "hi" } }] },
  manifestConfigs: [
    {
      resourceIdentifier: { resource: "configmaps", name, namespace: "default" },
      feedbackRules: [{ type: "JSONPaths", jsonPaths: [{ name: "greeting", path: ".data.greeting" }] }],
    },
  ],
});

function workStatus(generation: number, message: string) {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const c = (type: string, status: string, reason: string) => ({ type, status, reason, message, observedGeneration: generation, lastTransitionTime: now });
  return {
    conditions: [c("Applied", "True", "AppliedManifestWorkComplete"), c("Available", "True", "ResourcesAvailable"), c("Progressing", "False", "Completed")],
  };
}

/** Bytes stored in the hub's local D1, per table and index (dbstat), with row counts and JSON body sizes per kind. */
function d1Storage(stateDir: string): { tables: string[][]; kinds: string[][] } {
  const dir = path.join(stateDir, "v3/d1/miniflare-D1DatabaseObject");
  const file = readdirSync(dir).find((n) => n.endsWith(".sqlite") && n !== "metadata.sqlite");
  if (!file) throw new Error(`no D1 database under ${dir}`);
  const db = new DatabaseSync(path.join(dir, file), { readOnly: true });
  try {
    const count = (table: string) => Number((db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n);
    const stat = db
      .prepare(
        "SELECT s.name AS name, m.tbl_name AS tbl, m.type AS type, sum(s.pgsize) AS bytes, sum(s.payload) AS payload FROM dbstat s JOIN sqlite_schema m ON m.name = s.name GROUP BY s.name ORDER BY m.tbl_name, m.type DESC",
      )
      .all() as { name: string; tbl: string; type: string; bytes: number; payload: number }[];
    const tables = stat
      .filter((s) => !s.tbl.startsWith("_cf_") && !s.tbl.startsWith("d1_") && !s.tbl.startsWith("sqlite_"))
      .map((s) => {
        const rows = count(s.tbl);
        return [
          `${s.name}${s.type === "index" ? ` (index of ${s.tbl})` : ""}`,
          String(rows),
          String(s.bytes),
          String(s.payload),
          rows ? (s.payload / rows).toFixed(0) : "-",
        ];
      });
    const kinds = (
      db
        .prepare("SELECT resource, count(*) AS n, avg(length(body)) AS avg, max(length(body)) AS max FROM objects GROUP BY resource ORDER BY resource")
        .all() as { resource: string; n: number; avg: number; max: number }[]
    ).map((k) => [k.resource, String(k.n), k.avg.toFixed(0), String(k.max)]);
    const ev = db.prepare("SELECT count(*) AS n, avg(length(body)) AS avg FROM events").get() as { n: number; avg: number };
    kinds.push(["events (watch log)", String(ev.n), ev.avg.toFixed(0), "-"]);
    return { tables, kinds };
  } finally {
    db.close();
  }
}

/**
 * The stored size of each cluster object's SQLite database in the local state (page count x page
 * size, the log included, as node:sqlite reads it), for the objects that hold a ManagedCluster,
 * and the payload bytes of its tables (dbstat), summed over them.
 */
function clusterObjectStorage(stateDir: string): { sizes: number[]; tables: Map<string, number> } {
  const dir = path.join(stateDir, "v3/do/flotilla-ClusterObject");
  const sizes: number[] = [];
  const tables = new Map<string, number>();
  for (const f of readdirSync(dir).filter((n) => n.endsWith(".sqlite"))) {
    const db = new DatabaseSync(path.join(dir, f), { readOnly: true });
    try {
      const holds =
        db.prepare("SELECT 1 AS one FROM sqlite_schema WHERE name = 'state'").get() && db.prepare("SELECT 1 AS one FROM state WHERE k = 'object'").get();
      if (!holds) continue;
      const pages = Number((db.prepare("PRAGMA page_count").get() as { page_count: number }).page_count);
      const pageSize = Number((db.prepare("PRAGMA page_size").get() as { page_size: number }).page_size);
      sizes.push(pages * pageSize);
      for (const t of db.prepare("SELECT name, sum(payload) AS payload FROM dbstat GROUP BY name").all() as { name: string; payload: number }[]) {
        tables.set(t.name, (tables.get(t.name) ?? 0) + t.payload);
      }
    } finally {
      db.close();
    }
  }
  return { sizes, tables };
}

const per = (x: number, n: number): string => {
  const v = x / n;
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
};
const p50 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const sum = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + b, 0);

/**
 * The idle cluster of the module comment: starts the agent, gives it 3 add-on deploy works and 10
 * enforced Policies, waits until the works are applied and every Policy's newest compliance event
 * says the namespace `was created successfully` or is `found as specified` (a `watch` policy is
 * evaluated again only when what it reads changes), then measures
 * {@link IDLE_LEASES} leases of nothing happening. One sample per lease.
 */
async function idleClusterWithPolicies(hub: Hub): Promise<Measured> {
  const cluster = "idle-policies";
  const dir = mkdtempSync(path.join(os.tmpdir(), "flotilla-bench-costs-"));
  const token = await createBootstrapToken(hub, { autoApprove: true });
  const agent = spawn(
    process.execPath,
    [
      path.join(process.cwd(), "agent/bin/flotilla-agent.js"),
      "--hub-url",
      hub.url,
      "--cluster-name",
      cluster,
      "--bootstrap-token",
      token,
      "--simulate",
      "--simulate-state",
      path.join(dir, "sim.json"),
      "--status-sync-interval",
      "10",
    ],
    {
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let output = "";
  agent.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const until = async (what: string, cond: () => Promise<boolean>, timeoutMs = 120_000) => {
    const end = Date.now() + timeoutMs;
    while (!(await cond())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; the agent's log:\n${output.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  try {
    await until("the idle agent to register", async () => (await admin(hub, "GET", `${MC}/${cluster}`)).status === 200);
    await adminOk(hub, "PATCH", `${MC}/${cluster}`, { spec: { leaseDurationSeconds: IDLE_LEASE } }, "lease", MERGE);
    for (const name of ADDONS) {
      for (const [what, obj] of Object.entries(templateAddOn(name))) await adminOk(hub, "POST", addOnPath(obj), obj, `add-on ${name}: ${what}`);
      const mca = manualAddOn(cluster, name);
      await adminOk(hub, "POST", addOnPath(mca), mca, `add-on ${name}: ManagedClusterAddOn`);
    }
    for (let i = 0; i < POLICY_COUNT; i++)
      await adminOk(hub, "POST", `/apis/policy.open-cluster-management.io/v1/namespaces/${cluster}/policies`, replicatedPolicy(cluster, i), `policy ${i}`);
    await until("the add-ons applied", async () => {
      const items = (
        (await admin(hub, "GET", `${MW(cluster)}?labelSelector=${encodeURIComponent("open-cluster-management.io/addon-name")}`)).body as {
          items: { status?: { conditions?: { type: string; status: string }[] } }[];
        }
      ).items;
      return items.length === ADDONS.length && items.every((w) => w.status?.conditions?.some((c) => c.type === "Applied" && c.status === "True"));
    });
    await until("every policy compliant, its namespace created or found", async () => {
      const items = (
        (await admin(hub, "GET", `/apis/policy.open-cluster-management.io/v1/namespaces/${cluster}/policies`)).body as {
          items: { status?: { compliant?: string; details?: { history?: { message?: string }[] }[] } }[];
        }
      ).items;
      return (
        items.length === POLICY_COUNT &&
        items.every(
          (p) => p.status?.compliant === "Compliant" && /found as specified|was created successfully/.test(p.status.details?.[0]?.history?.[0]?.message ?? ""),
        )
      );
    });
    const label = `idle cluster, ${ADDONS.length} add-ons and ${POLICY_COUNT} compliant policies (per lease of ${IDLE_LEASE} s; agent process, ws)`;
    const measured = await measure(hub, label, IDLE_LEASES, async () => {
      await new Promise((r) => setTimeout(r, IDLE_LEASE * 1000));
      return { ms: 0 };
    });
    if (/policy compliance report failed|could not load the policy controller/.test(output)) throw new Error(`the idle agent failed:\n${output.slice(-3000)}`);
    return measured;
  } finally {
    agent.kill("SIGTERM");
    await new Promise((r) => (agent.exitCode !== null ? r(null) : agent.once("exit", r)));
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The fleet's operations of the module comment, one after another, each measured into `results`;
 * the agents' channels are closed at the end.
 */
async function fleetOperations(hub: Hub, results: Measured[]): Promise<void> {
  const token = await createBootstrapToken(hub, { autoApprove: true });
  const client = new HubClient({ hubUrl: hub.url });
  const agents: Agent[] = [];
  for (let i = 0; i < CLUSTERS; i++) {
    agents.push({
      name: `cost-${String(i).padStart(3, "0")}`,
      key: await generateAgentKeyPair(),
      status: {
        healthy: true,
        version: { kubernetes: "v1.31.2" },
        capacity: { cpu: "12", memory: "48Gi", pods: "330" },
        allocatable: { cpu: "11400m", memory: `${40 + i}Gi`, pods: "330" },
        clusterClaims: [{ name: "region", value: "bench" }],
      },
      works: [],
    });
  }
  const agentAt = (i: number) => agents[i % agents.length]!;

  results.push(
    await measure(hub, "registration (a new cluster)", CLUSTERS, async (i) => {
      const a = agents[i]!;
      const t0 = performance.now();
      const proof = await signProof(a.name, a.key, `id-${a.name}`);
      const r = await client.register(token, { clusterName: a.name, clusterId: `id-${a.name}`, publicKey: a.key.publicJwk, proof, claims: [] });
      if (!r.ok) throw new Error(`register ${a.name}: ${JSON.stringify(r.error)}`);
      a.keyTag = client.keyTag(a.key.kid);
      return { ms: performance.now() - t0 };
    }),
  );
  await createNamespaces(hub, "apps");
  await adminOk(
    hub,
    "POST",
    `/apis/${G}/v1beta2/namespaces/apps/managedclustersetbindings`,
    { apiVersion: `${G}/v1beta2`, kind: "ManagedClusterSetBinding", metadata: { name: "default" }, spec: { clusterSet: "default" } },
    "binding",
  );
  for (let p = 0; p < PLACEMENTS; p++) await adminOk(hub, "POST", PL, placement(`fleet-${p}`, 5), "placement");
  await adminOk(hub, "POST", PL, placement("all"), "placement all");

  const heartbeat = (a: Agent) => timed(() => agentFetch(hub, a, "POST", "/heartbeat", a.status), `heartbeat ${a.name}`);
  results.push(await measure(hub, "heartbeat, first (the cluster joins: Available)", CLUSTERS, (i) => heartbeat(agents[i]!)));
  results.push(await measure(hub, "heartbeat, steady (nothing changed)", 5 * SAMPLES, (i) => heartbeat(agentAt(i))));
  results.push(
    await measure(hub, "heartbeat with a change the scheduler reads (allocatable cpu)", SAMPLES, (i) => {
      const a = agentAt(i);
      a.status = { ...a.status, allocatable: { ...a.status.allocatable, cpu: `${11400 - 100 * (i + 1)}m` } };
      return heartbeat(a);
    }),
  );
  // The cluster with the most memory is in every fleet placement's 5; halving its memory takes
  // it out of all of them (another cluster comes in), restoring it puts it back.
  const top = agents[agents.length - 1]!;
  const topMemory = top.status.allocatable.memory ?? "59Gi";
  results.push(
    await measure(hub, `heartbeat with a change that moves ${PLACEMENTS} placements' decisions (memory)`, SAMPLES, (i) => {
      top.status = { ...top.status, allocatable: { ...top.status.allocatable, memory: i % 2 === 0 ? "20Gi" : topMemory } };
      return heartbeat(top);
    }),
  );
  results.push(
    await measure(hub, "heartbeat with a change the scheduler does not read (version)", SAMPLES, (i) => {
      const a = agentAt(i);
      a.status = { ...a.status, version: { kubernetes: `v1.31.${3 + i}` } };
      return heartbeat(a);
    }),
  );

  for (const a of agents) {
    const r = await agentFetch(hub, a, "GET", "/works");
    a.etag = r.headers.get("etag") ?? undefined;
    await r.arrayBuffer();
  }
  results.push(
    await measure(hub, "works poll, idle (ETag matches, 304)", 5 * SAMPLES, (i) => {
      const a = agentAt(i);
      return timed(() => agentFetch(hub, a, "GET", "/works", undefined, { "if-none-match": a.etag! }), `poll ${a.name}`);
    }),
  );
  // The channel (docs/agent-protocol.md "Channel"): each agent connected once, then what a
  // connected cluster costs while idle (its pings) and per change.
  for (const a of agents) a.channel = await connectChannel(hub, a);
  results.push(
    await measure(hub, "channel ping, steady (auto-answered pong)", 5 * SAMPLES, async (i) => {
      const a = agentAt(i);
      const t0 = performance.now();
      const pong = a.channel!.next((f) => f === CHANNEL_PONG);
      a.channel!.ws.send(CHANNEL_PING);
      await pong;
      return { ms: performance.now() - t0 };
    }),
  );
  results.push(
    await measure(hub, "channel status message with a change the scheduler does not read (version)", SAMPLES, (i) => {
      const a = agentAt(i);
      a.status = { ...a.status, version: { kubernetes: `v1.32.${i}` } };
      return channelRequest(a, { type: "status", status: a.status });
    }),
  );
  results.push(
    await measure(hub, "channel status message with a change the scheduler reads (allocatable cpu)", SAMPLES, (i) => {
      const a = agentAt(i);
      a.status = { ...a.status, allocatable: { ...a.status.allocatable, cpu: `${10000 - 100 * (i + 1)}m` } };
      return channelRequest(a, { type: "status", status: a.status });
    }),
  );
  results.push(
    await measure(hub, "label change of a ManagedCluster (admin merge patch)", SAMPLES, async (i) => ({
      ms: (await adminOk(hub, "PATCH", `${MC}/${agentAt(i).name}`, { metadata: { labels: { tier: `t${i}` } } }, "label", MERGE)).ms,
    })),
  );
  results.push(
    await measure(hub, "Placement create (PickN 3, decided on return)", SAMPLES, async (i) => ({
      ms: (await adminOk(hub, "POST", PL, placement(`new-${i}`, 3), "placement create")).ms,
    })),
  );
  results.push(
    await measure(hub, "Placement update (numberOfClusters 3 to 4)", SAMPLES, async (i) => ({
      ms: (await adminOk(hub, "PATCH", `${PL}/new-${i}`, { spec: { numberOfClusters: 4 } }, "placement update", MERGE)).ms,
    })),
  );
  results.push(
    await measure(hub, "ManifestWork create (admin API)", SAMPLES, async (i) => {
      const a = agentAt(i);
      const name = `hello-${i}`;
      const r = await adminOk(
        hub,
        "POST",
        MW(a.name),
        { apiVersion: "work.open-cluster-management.io/v1", kind: "ManifestWork", metadata: { name }, spec: workload(name) },
        "work create",
      );
      a.works.push({ name, uid: r.body.metadata.uid });
      return { ms: r.ms };
    }),
  );
  results.push(
    await measure(hub, "work status report (agent PUT status)", SAMPLES, (i) => {
      const a = agentAt(i);
      const w = a.works[0]!;
      return timed(
        () => agentFetch(hub, a, "PUT", `/works/${w.name}/status`, { uid: w.uid, status: workStatus(1, `applied, report ${i}`) }),
        `report ${a.name}`,
      );
    }),
  );
  results.push(
    await measure(hub, "work status report over the channel", SAMPLES, (i) => {
      const a = agentAt(i);
      const w = a.works[0]!;
      return channelRequest(a, { type: "report", work: w.name, report: { uid: w.uid, status: workStatus(1, `applied, channel report ${i}`) } });
    }),
  );
  results.push(
    await measure(hub, `ManifestWorkReplicaSet create over ${CLUSTERS} clusters (all its works)`, 1, async () => ({
      ms: (
        await adminOk(
          hub,
          "POST",
          MWRS,
          {
            apiVersion: "work.open-cluster-management.io/v1alpha1",
            kind: "ManifestWorkReplicaSet",
            metadata: { name: "fleet" },
            spec: { placementRefs: [{ name: "all", rolloutStrategy: { type: "All" } }], manifestWorkTemplate: workload("fleet") },
          },
          "replica set",
        )
      ).ms,
    })),
  );

  const fleetWorks = await admin(
    hub,
    "GET",
    "/apis/work.open-cluster-management.io/v1/manifestworks?labelSelector=work.open-cluster-management.io%2Fmanifestworkreplicaset%3Dapps.fleet",
  );
  const owned = new Map(
    (fleetWorks.body as { items: { metadata: { namespace: string; name: string; uid: string } }[] }).items.map((w) => [w.metadata.namespace, w.metadata]),
  );
  results.push(
    await measure(hub, "work status report of a replica set's work (its summary follows)", SAMPLES, (i) => {
      const a = agentAt(i);
      const w = owned.get(a.name);
      if (!w) throw new Error(`no replica set work in ${a.name}`);
      return timed(
        () => agentFetch(hub, a, "PUT", `/works/${w.name}/status`, { uid: w.uid, status: workStatus(1, `applied, report ${i}`) }),
        `report ${a.name}`,
      );
    }),
  );

  for (const a of agents) a.channel?.ws.close(1000);
}

/** Prints an operation's 12 statements with the most rows read or written, per sample (`BENCH_TRACE_SQL=1`). */
function printStatements(r: Measured): void {
  const all = Object.entries(r.counts.statements ?? {}).sort(([, a], [, b]) => b.read + b.written + b.runs / 1000 - (a.read + a.written + a.runs / 1000));
  const calls = all.filter(([k]) => k.startsWith("CALL ")).sort(([, a], [, b]) => b.runs - a.runs);
  printTable(
    `D1 calls of "${r.label}" (per sample)`,
    ["call", "runs"],
    calls.slice(0, 15).map(([k, t]) => [k.slice(0, 600), per(t.runs, r.samples)]),
  );
  printTable(
    `Statements of "${r.label}" (per sample; the 12 with the most rows)`,
    ["statement", "runs", "rows read", "rows written", "bound chars"],
    all
      .slice(0, 12)
      .map(([sql, t]) => [
        sql.replace(/\s+/g, " ").slice(0, 140),
        per(t.runs, r.samples),
        per(t.read, r.samples),
        per(t.written, r.samples),
        per(t.bytes, r.samples),
      ]),
  );
}

async function main(): Promise<void> {
  log("starting the metered hub (npm start with bench/meter/wrangler.toml) ...");
  const hub = await startHub({ wranglerArgs: ["--config", "bench/meter/wrangler.toml", ...(TRACE_SQL ? ["--var", "BENCH_TRACE_SQL:1"] : [])] });
  const results: Measured[] = [];
  let stopped = false;
  try {
    await meter(hub);
    if (!IDLE_ONLY) await fleetOperations(hub, results);
    results.push(await idleClusterWithPolicies(hub));
    await hub.stop();
    stopped = true;
    const rows = results.map((r) => {
      const c = r.counts;
      return [
        r.label,
        String(r.samples),
        per(c.workerRequests, r.samples),
        per(sum(c.doRequests) + sum(c.doAlarms) + sum(c.doMessages) / 20, r.samples),
        per(sum(c.doMessages), r.samples),
        per(sum(c.doWakes), r.samples),
        per(sum(c.doRowsWritten), r.samples),
        per(c.d1Calls, r.samples),
        per(c.d1RowsRead, r.samples),
        per(c.d1RowsWritten, r.samples),
        per(r.cpuMs, r.samples),
        p50(r.latencies).toFixed(0),
      ];
    });
    console.log(
      `\nFlotilla unit costs (npm run bench:costs): ${IDLE_ONLY ? "the idle cluster alone" : `${CLUSTERS} clusters, ${PLACEMENTS} + 1 placements, ${SAMPLES} samples (steady heartbeats and polls ${5 * SAMPLES})`}; local wrangler dev on this machine, Node ${process.version}`,
    );
    printTable(
      "Per operation (averages over the samples; everything it set off, alarms included)",
      [
        "operation",
        "samples",
        "Worker requests",
        "DO requests (messages at 20:1)",
        "DO messages",
        "DO wakes",
        "DO rows written",
        "D1 calls",
        "D1 rows read",
        "D1 rows written",
        "workerd CPU ms",
        "p50 ms",
      ],
      rows,
    );
    const cls = ["cluster", "scheduler", "replicaset", "metrics"] as const;
    printTable(
      "Durable Object requests (RPC + alarms), rows written and RPC round trip, per class; D1 round trip; the hub's own headers for agent calls (cluster object's count)",
      [
        "operation",
        ...cls.map((k) => `${k} req`),
        ...cls.map((k) => `${k} alarms`),
        ...cls.map((k) => `${k} rows`),
        ...cls.map((k) => `${k} ms/req`),
        "D1 ms/call",
        "header D1 queries",
        "header rows",
      ],
      results.map((r) => [
        r.label,
        ...cls.map((k) => per(r.counts.doRequests[k], r.samples)),
        ...cls.map((k) => per(r.counts.doAlarms[k], r.samples)),
        ...cls.map((k) => per(r.counts.doRowsWritten[k], r.samples)),
        ...cls.map((k) => (r.counts.doRequests[k] ? (r.counts.doRpcMs[k] / r.counts.doRequests[k]).toFixed(1) : "-")),
        r.counts.d1Calls ? (r.counts.d1Ms / r.counts.d1Calls).toFixed(1) : "-",
        per(r.headers.d1, r.samples),
        per(r.headers.rows, r.samples),
      ]),
    );
    if (TRACE_SQL) for (const r of results) printStatements(r);
    const storage = d1Storage(hub.stateDir);
    printTable("D1 objects by kind: JSON body bytes (local D1 at the end of the run)", ["resource", "rows", "avg body bytes", "max body bytes"], storage.kinds);
    printTable("D1 tables and indexes (dbstat)", ["table or index", "rows", "bytes (pages)", "payload bytes", "payload bytes / row"], storage.tables);
    const objects = clusterObjectStorage(hub.stateDir);
    const n = Math.max(1, objects.sizes.length);
    printTable(
      `Cluster objects' SQLite (${objects.sizes.length} objects holding a cluster; local state at the end of the run)`,
      ["what", "bytes per object"],
      [
        ["database size (page count x page size)", (objects.sizes.reduce((a, b) => a + b, 0) / n).toFixed(0)],
        ...[...objects.tables].sort((a, b) => b[1] - a[1]).map(([t, bytes]) => [`payload of ${t}`, (bytes / n).toFixed(0)]),
      ],
    );
    rmSync(hub.stateDir, { recursive: true, force: true });
  } catch (e) {
    process.stderr.write(`the hub's last output:\n${hub.output().slice(-3000)}\n`);
    throw e;
  } finally {
    if (!stopped) await hub.stop();
  }
}

await main();
