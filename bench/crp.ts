/**
 * KubeFleet placement benchmark: starts a real hub (`wrangler dev`, workerd, local D1), joins N
 * channel agents (bench/channel-fleet.ts: each with its own key, JWT and WebSocket, answering each
 * work generation with Applied, Available and Progressing=False), stores a namespace of 50 objects
 * on the hub, and times:
 * - **create**: from one ClusterResourcePlacement create (PickAll, selecting the namespace with
 *   its content) to each cluster's report of its work acknowledged over its channel;
 * - **change**: from one PATCH of one selected object to each cluster's report of the new work
 *   generation acknowledged (the placement's default rolling update: 25% of the clusters
 *   unavailable at once, so the change walks the fleet in four steps or more);
 * - **mwrs**: after those, on the same hub and agents, from one OCM ManifestWorkReplicaSet create
 *   carrying the same objects (the namespace and its 50, taken from the placement's rendered work)
 *   to each cluster's report of its work acknowledged; it is placed by a Placement of every cluster
 *   in its own namespace (`mwrs-bench`, bound to the `default` set as bench/propagation.ts does),
 *   made and decided before the create (so, unlike the CRP's create, no scheduling is timed),
 *   rollout `All` (OCM's default, written out: the CRP's create also goes to every cluster at once).
 *   Each agent then holds both works (the placement's `bench-work`, at generation 2 after the
 *   change, and the replica set's `mwrs-bench.bench`), and every push carries both;
 * and the same agents against the no-op Worker (bench/noop: one work pushed to every cluster and
 * acknowledged at once) in the same run, as bench/propagation.ts does for a ManifestWorkReplicaSet.
 *
 * Between the two, the same agents against the **platform floor** (bench/noop/floor.ts, the no-op
 * Worker with `BENCH_FLOOR=1`): the least any hub storing one ManifestWork per cluster must do
 * for the create's result, with the hub's own platform calls, timed the same way (from its
 * create request to each cluster's report acknowledged). It is handed the placement's real work
 * (cluster `crp-00000`'s, as the hub created it, read after the hub's create) and, per cluster,
 * writes it to its D1 (the spec's text once per batch and the row's body without it, as the hub
 * stores a shared spec; 50 rows to a batch), calls the cluster's Durable Object once with the
 * work's text, which pushes it on the agent's WebSocket, and at the agent's report writes the
 * work's status to D1 (grouped per isolate, as the hub groups concurrent writes) before the ack.
 * Its D1 calls and rows, object requests and workerd CPU per report are printed beside the hub's:
 * what the hub does beyond the floor is the hub's, what the floor costs is this machine's. At
 * 1,000 clusters (2026-11-30, load 11-15, two runs): the floor 41-43 D1 calls, 2,002 rows
 * written, 1.6-2.2 ms of workerd CPU per report, p99 8.2-13.9 s; the hub 2,471-2,487 calls,
 * 50,164-50,412 rows, 9.7-9.8 ms, p99 32-33 s; the no-op 1.1-1.2 ms, p99 6.9-7.9 s (at load 7,
 * with the spec in every row: floor p99 2.83 s, hub 20.40 s, no-op 0.33 s; at load 4.4: floor
 * p99 1.73 s and 0.66 ms, hub 7.88 s and 7.34 ms, no-op 0.38 s). From the
 * idle hub's 3.84 ms and 3.26 s, the floor's p99 idle is about 0.8-1.4 s: the 2 s bar is within
 * this machine's reach with warm objects (docs/scale.md, "The platform floor").
 *
 * **Cold objects.** workerd evicts a Durable Object 10 s after its last event (the channel's
 * pings are answered without waking it), and a call into an evicted SQLite-backed object builds
 * it inside the call. The hub's create follows its fleet's connect at once, so its objects are
 * cold as far as the connect took longer than 10 s (at 1,000 clusters: 362 cold after a 17.8 s
 * connect at load 5, 984 after 62 s at load 9); a long-connected fleet's are all cold. The floor is
 * therefore timed twice: **warm** (its create at once after its connect, as before) and **cold**
 * (its objects left 12 s without an event first, `BENCH_FLOOR_IDLE_S`), and every phase prints the
 * cluster objects constructed during it (the hub's from the meter's `doWakes`, the floor's its own
 * count: the fleet's size when all were cold), then the hub's create p99 beside both floors with
 * the ratios. `BENCH_HUB_COLD=1` leaves the hub's objects idle as long before its create (all cold,
 * as users meet them; printed as such); without it the hub's create is timed as before. At 1,000
 * clusters (2026-11-30, 15:38-16:27 UTC, load 5-11, six runs): the floor cold 1.87-1.94 ms of
 * workerd CPU per report (2.18-2.96 at load 8.5-10) against 0.60-0.63 ms fully warm (the wake:
 * about 1.3 ms per object), p99 2.25 and 2.47 s at load 5-6, 3.1-12.1 s at load 6-10; the hub all
 * cold 10.07-11.44 ms, p99 24.9-35.9 s (2.1-8.2 times the floor cold in the same runs). From the
 * floor's idle p99 of 0.69 s for 0.64 ms per report, the floor cold would take
 * about 2.0-2.1 s idle: with every object cold **the 2 s bar is at the edge of this machine for
 * any hub**, the floor alone at it (docs/scale.md, "The platform floor", cold objects).
 *
 *   BENCH_SIZES       fleet sizes, comma-separated (default "1000"); each size gets a fresh hub
 *   BENCH_OBJECTS     objects in the placed namespace besides the namespace (default 50)
 *   BENCH_HUB_LOG     a file prefix: `<prefix>-<size>.log` gets everything the hub printed
 *   BENCH_CPU_PROFILE a file prefix: writes `<prefix>-<size>-create.cpuprofile`,
 *                     `<prefix>-<size>-change.cpuprofile` and `<prefix>-<size>-mwrs.cpuprofile`,
 *                     the hub isolate's CPU profile of each phase until it settled (bench/cpu-profile.ts)
 *   BENCH_TRACE_SQL=1 also each phase's D1 calls and costliest statements (as bench:costs)
 *   BENCH_METER=0     the hub's own entry instead of the metered one (no counts: zeros)
 *   BENCH_CHANGE=0    no change phase
 *   BENCH_MWRS=0      no ManifestWorkReplicaSet phase
 *   BENCH_FLOOR=0     no platform floor
 *   BENCH_FLOOR_COLD=0  no cold floor (its objects left idle until workerd evicted them)
 *   BENCH_FLOOR_IDLE_S  seconds without an event before a cold create (default 12: workerd's 10 and a margin)
 *   BENCH_HUB_COLD=1  the hub's create too after its cluster objects were left idle as long (all cold)
 *   BENCH_FLOOR_INLINE=1  the floor stores the spec's text in every work's row (30 KB each) rather
 *                     than once per batch (what a hub without shared specs would store)
 *
 * The hub runs the metered entry (bench/meter/worker.ts, as bench:costs): besides the latencies,
 * each phase prints what it cost from its write until it settled (the placement's status reports
 * the phase's resource index Available on every cluster, or the replica set's summary every work
 * Available, and the meter stopped moving): D1 calls,
 * rows read and written, Durable Object requests and alarms per class, and the CPU the hub's
 * workerd used, per acknowledged report (from /proc, whatever the machine's load). The counts do
 * not depend on the load: a change that re-renders only what changed costs the same D1 rows and
 * object requests at 100 and 1,000 clusters, less the reports themselves.
 *
 * Run it only on an otherwise idle machine (its figures are this machine's).
 */
import { readFileSync } from "node:fs";
import { admin, createBootstrapToken, createNamespaces, freePort, startHub, type Hub } from "../scripts/hub-process.ts";
import { meter as readMeter } from "./meter/client.ts";
import { ok, placeEveryCluster, selectedClusters } from "./ocm-placement.ts";
import { startNoopWorker } from "./noop/start.ts";
import { ChannelFleet, describeStats, entryUrl, hubProcesses, percentile as pct, type AgentTimes } from "./channel-fleet.ts";
import { startProfiling, type Profiling } from "./cpu-profile.ts";
import type { MeterCounts } from "./meter/counts.ts";
import { printTable } from "./table.ts";

const SIZES = (process.env.BENCH_SIZES ?? "1000")
  .split(",")
  .map((s) => Number(s.trim()))
  .filter((n) => n > 0);
const OBJECTS = Number(process.env.BENCH_OBJECTS ?? "50");
const NS = "crp-bench";
const CRP = "/apis/placement.kubernetes-fleet.io/v1/clusterresourceplacements";
const PROFILE = process.env.BENCH_CPU_PROFILE;
const TRACE_SQL = process.env.BENCH_TRACE_SQL === "1";
const METER = process.env.BENCH_METER !== "0";
const CHANGE = process.env.BENCH_CHANGE !== "0";
const MWRS = process.env.BENCH_MWRS !== "0";
const FLOOR = process.env.BENCH_FLOOR !== "0";
const FLOOR_INLINE = process.env.BENCH_FLOOR_INLINE === "1";
const FLOOR_COLD = FLOOR && process.env.BENCH_FLOOR_COLD !== "0";
/**
 * Milliseconds the floor's cluster objects are left without an event before its cold create:
 * workerd evicts an object 10 s after its last event (`server.c++` `handleShutdown`), plus a
 * margin for its timer on a loaded machine.
 */
const FLOOR_IDLE_MS = Number(process.env.BENCH_FLOOR_IDLE_S ?? "12") * 1000;
/** The hub's create after its cluster objects were left idle as long (every one cold, as a long-connected fleet's). */
const HUB_COLD = METER && process.env.BENCH_HUB_COLD === "1";
/** The ManifestWorkReplicaSet phase's namespace: its Placement `all` and its replica set `bench`. */
const MWRS_NS = "mwrs-bench";
/** The name of the replica set's work in each cluster's namespace (OCM's `<namespace>.<name>`). */
const MWRS_WORK = `${MWRS_NS}.bench`;
const MWRS_PATH = `/apis/work.open-cluster-management.io/v1alpha1/namespaces/${MWRS_NS}/manifestworkreplicasets`;

const epochNow = () => performance.timeOrigin + performance.now();
const secs = (ms: number) => (ms / 1000).toFixed(2);
const doneAfter = (times: AgentTimes[], t0: number) => times.map((t) => t.done - t0).sort((a, b) => a - b);

/** The namespace's objects: Secrets, Roles and ServiceAccounts in turn (the kinds every hub serves). */
async function storeObjects(hub: Hub): Promise<void> {
  await createNamespaces(hub, NS);
  for (let i = 0; i < OBJECTS; i++) {
    const name = `obj-${i}`;
    if (i % 3 === 0)
      ok(
        await admin(hub, "POST", `/api/v1/namespaces/${NS}/secrets`, { apiVersion: "v1", kind: "Secret", metadata: { name }, stringData: { value: `v-${i}` } }),
        name,
      );
    else if (i % 3 === 1)
      ok(
        await admin(hub, "POST", `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "Role",
          metadata: { name },
          rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"] }],
        }),
        name,
      );
    else ok(await admin(hub, "POST", `/api/v1/namespaces/${NS}/serviceaccounts`, { apiVersion: "v1", kind: "ServiceAccount", metadata: { name } }), name);
  }
}

/** What one phase (create, change, mwrs) cost, from its write until it settled. */
interface Cost {
  counts: MeterCounts;
  /** CPU seconds of the hub's workerd (the Worker, its objects and the local D1). */
  cpu: number;
  /** Reports the hub acknowledged meanwhile. */
  acked: number;
  /** Seconds from the write until it settled. */
  settled: number;
  /** The 1-minute load average at the end. */
  load: string;
}

interface Side {
  /** The placement's work on the first cluster as the create made it (generation 1, without status): the floor's. */
  work: Record<string, unknown>;
  create: number[];
  change: number[] | undefined;
  mwrs: number[] | undefined;
  costs: { create: Cost; change?: Cost; mwrs?: Cost };
}

const NO_COUNTS: MeterCounts = {
  workerRequests: 0,
  doRequests: { cluster: 0, scheduler: 0, replicaset: 0, metrics: 0 },
  doAlarms: { cluster: 0, scheduler: 0, replicaset: 0, metrics: 0 },
  doRowsWritten: { cluster: 0, scheduler: 0, replicaset: 0, metrics: 0 },
  doWakes: { cluster: 0, scheduler: 0, replicaset: 0, metrics: 0 },
  doMessages: { cluster: 0, scheduler: 0, replicaset: 0, metrics: 0 },
  doRpcMs: { cluster: 0, scheduler: 0, replicaset: 0, metrics: 0 },
  d1Calls: 0,
  d1Ms: 0,
  d1Statements: 0,
  d1RowsRead: 0,
  d1RowsWritten: 0,
};

/** The metered hub's counts (bench/meter/client.ts), zeros with `BENCH_METER=0`. */
const meter = (hub: Hub, reset = false): Promise<MeterCounts> => (METER ? readMeter(hub, reset) : Promise.resolve(NO_COUNTS));

/**
 * The CPU time process `pid` has used so far (user + system, seconds), from /proc/<pid>/stat
 * (clock ticks of 1/100 s).
 */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]!;

/**
 * What keeps a phase from having settled: undefined once it has, else a description (for the
 * timeout's error).
 */
type Pending = () => Promise<string | undefined>;

/** Pending until the placement reports resource index `index` Available on each of `size` clusters. */
const placementAt =
  (hub: Hub, index: string, size: number): Pending =>
  async () => {
    const r = await admin(hub, "GET", `${CRP}/bench`);
    const status = (r.body as { status?: { observedResourceIndex?: string; placementStatuses?: { conditions?: { type: string; status: string }[] }[] } })
      .status;
    const available = (status?.placementStatuses ?? []).filter((p) => p.conditions?.some((c) => c.type === "Available" && c.status === "True")).length;
    return status?.observedResourceIndex === index && available === size
      ? undefined
      : `the placement did not settle at index ${index}: ${available}/${size} clusters Available`;
  };

/**
 * Pending until the replica set's summary counts `size` works, each Available, and its
 * ManifestworkApplied condition is True (OCM's status reconciler: every work Available, none
 * progressing or degraded).
 */
const replicaSetAvailable =
  (hub: Hub, size: number): Pending =>
  async () => {
    const r = await admin(hub, "GET", `${MWRS_PATH}/bench`);
    const status = (
      r.body as {
        status?: { summary?: { total?: number; available?: number }; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
      }
    ).status;
    const applied = status?.conditions?.some((c) => c.type === "ManifestworkApplied" && c.status === "True") ?? false;
    const conditions = (status?.conditions ?? []).map((c) => `${c.type}=${c.status} (${c.reason ?? ""}: ${c.message ?? ""})`).join("; ");
    return status?.summary?.total === size && status.summary.available === size && applied
      ? undefined
      : `the replica set did not settle: ${status?.summary?.available ?? 0}/${status?.summary?.total ?? 0} works Available of ${size}; ${conditions || "no condition"}`;
  };

/**
 * Waits until `pending` answers undefined (asked every second: at 1,000 clusters the placement is
 * some 1.5 MB to read), then until the meter stops moving (no D1 call for 1.5 s): the runs its
 * reports woke are done.
 * @returns the meter then
 * @throws Error with `pending`'s description after 600 s
 */
async function settle(hub: Hub, pending: Pending): Promise<MeterCounts> {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const left = await pending();
    if (left === undefined) break;
    if (Date.now() > deadline) throw new Error(left);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  let last = await meter(hub);
  let quiet = METER ? 0 : 6;
  while (quiet < 6 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = await meter(hub);
    quiet = now.d1Calls === last.d1Calls ? quiet + 1 : 0;
    last = now;
  }
  return last;
}

/**
 * Waits until no cluster object of the metered hub had an event (an RPC, a WebSocket message, an
 * alarm, a construction: the meter's cluster counts unchanged) for {@link FLOOR_IDLE_MS}, so that
 * workerd evicted them all (`BENCH_HUB_COLD=1`).
 * @returns the seconds waited
 * @throws Error when they were not left idle within 180 000 milliseconds
 */
async function idleClusterObjects(hub: Hub): Promise<number> {
  const since = Date.now();
  const events = (m: MeterCounts) => JSON.stringify([m.doRequests.cluster, m.doMessages.cluster, m.doAlarms.cluster, m.doWakes.cluster]);
  let last = events(await meter(hub));
  let quietSince = Date.now();
  while (Date.now() - quietSince < FLOOR_IDLE_MS) {
    if (Date.now() - since > 180_000) throw new Error(`the hub's cluster objects were not left idle for ${FLOOR_IDLE_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = events(await meter(hub));
    if (now !== last) quietSince = Date.now();
    last = now;
  }
  return (Date.now() - since) / 1000;
}

/**
 * Runs one phase: `write` (timed from its start), then the reports of `generation` (of work `work`
 * only, when given), then until it settled (`pending`, {@link settle}).
 */
async function phase(
  hub: Hub,
  fleet: ChannelFleet,
  worker: number,
  profile: { port: number; file: string } | undefined,
  wait: { generation: number; work?: string; pending: Pending },
  write: () => Promise<void>,
): Promise<{ times: number[]; arrived: number[]; cost: Cost }> {
  await meter(hub, true);
  const profiling: Profiling | undefined = profile ? await startProfiling(profile.port) : undefined;
  const acked0 = (await fleet.stats()).reportsAcked;
  const cpu0 = cpuSeconds(worker);
  const t0 = epochNow();
  await write();
  const reports = await fleet.reported(wait.generation, undefined, wait.work).catch(async (e: unknown) => {
    // Why they did not come, as far as the hub's status tells.
    const left = await wait.pending().catch((why: unknown) => String(why));
    throw new Error(`${e instanceof Error ? e.message : String(e)}; ${left ?? "settled"}`, { cause: e });
  });
  const times = doneAfter(reports, t0);
  const arrived = reports.map((t) => t.woken - t0).sort((a, b) => a - b);
  const counts = await settle(hub, wait.pending);
  const settled = (epochNow() - t0) / 1000;
  const cpu = cpuSeconds(worker) - cpu0;
  const acked = (await fleet.stats()).reportsAcked - acked0;
  await profiling?.stop(profile!.file);
  return { times, arrived, cost: { counts, cpu, acked, settled, load: loadAverage() } };
}

const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
const perClass = (r: Record<string, number>) =>
  Object.entries(r)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ") || "none";

/** Prints one phase's costs (and with `BENCH_TRACE_SQL=1` its D1 calls and costliest statements). */
function printCost(size: number, label: string, c: Cost): void {
  const m = c.counts;
  console.log(
    `fleet of ${size}, ${label}: settled in ${c.settled.toFixed(2)} s; D1 ${m.d1Calls} calls, ${m.d1RowsRead} rows read, ${m.d1RowsWritten} rows written; ` +
      `DO requests ${sum(m.doRequests)} (${perClass(m.doRequests)}), alarms ${sum(m.doAlarms)} (${perClass(m.doAlarms)}), ` +
      `WebSocket messages ${sum(m.doMessages)}; cluster objects constructed ${m.doWakes.cluster} (cold; of ${size}); the hub's workerd ${c.cpu.toFixed(2)} s of CPU, ${((c.cpu * 1000) / Math.max(1, c.acked)).toFixed(2)} ms per acknowledged report (${c.acked} reports; load ${c.load})`,
  );
  if (!TRACE_SQL) return;
  const all = Object.entries(m.statements ?? {});
  const calls = all.filter(([k]) => k.startsWith("CALL ")).sort(([, a], [, b]) => b.runs - a.runs);
  printTable(
    `D1 calls of the ${label} at ${size} clusters`,
    ["call", "runs"],
    calls.slice(0, 15).map(([k, t]) => [k.slice(0, 300), String(t.runs)]),
  );
  const rows = all.filter(([k]) => !k.startsWith("CALL ")).sort(([, a], [, b]) => b.read + b.written - (a.read + a.written));
  printTable(
    `Statements of the ${label} at ${size} clusters (the 12 with the most rows)`,
    ["statement", "runs", "rows read", "rows written", "bound chars"],
    rows.slice(0, 12).map(([sql, t]) => [sql.replace(/\s+/g, " ").slice(0, 140), String(t.runs), String(t.read), String(t.written), String(t.bytes)]),
  );
}

/** The name of the fleet's `i`th cluster. */
const clusterName = (i: number) => `crp-${String(i).padStart(5, "0")}`;

/** What a stored object carries that a rendered manifest does not (KubeFleet dispatches none of it). */
const STORED_ONLY = ["uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink"] as const;

/**
 * The objects the placement `bench` placed on `cluster`, as its works there carry them (their
 * `spec.workload.manifests`, the works `bench-work`, `bench-1`, ... in order: KubeFleet's names,
 * src/fleet/render.ts), without status and the metadata only a stored object has (none is
 * expected there; taken off in case).
 * @throws Error when the cluster holds no such work
 */
async function renderedManifests(hub: Hub, cluster: string): Promise<Record<string, unknown>[]> {
  const r = await admin(hub, "GET", `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks`);
  ok(r, "works");
  const chunk = (name: string) => (name === "bench-work" ? 0 : /^bench-(\d+)$/.test(name) ? Number(name.slice(6)) : -1);
  const works = (r.body as { items: { metadata: { name: string }; spec: { workload?: { manifests?: Record<string, unknown>[] } } }[] }).items
    .filter((w) => chunk(w.metadata.name) >= 0)
    .sort((a, b) => chunk(a.metadata.name) - chunk(b.metadata.name));
  if (works.length === 0) throw new Error(`${cluster} holds no work of the placement`);
  return works.flatMap((w) =>
    (w.spec.workload?.manifests ?? []).map((m) => {
      const { status: _status, ...rest } = structuredClone(m);
      const metadata = { ...(rest.metadata as Record<string, unknown>) };
      for (const k of STORED_ONLY) delete metadata[k];
      return { ...rest, metadata };
    }),
  );
}

async function measureHub(fleet: ChannelFleet, size: number): Promise<Side> {
  const inspectorPort = PROFILE ? await freePort() : 0;
  const hub = await startHub({
    graceMultiplier: 100,
    // The metered entry's hub migrates a fresh D1 at its start: on a loaded machine that takes a while.
    startTimeoutMs: 300_000,
    wranglerArgs: [
      ...(METER ? ["--config", "bench/meter/wrangler.toml"] : []),
      ...(TRACE_SQL ? ["--var", "BENCH_TRACE_SQL:1"] : []),
      ...(PROFILE ? ["--inspector-port", String(inspectorPort)] : []),
    ],
    ...(process.env.BENCH_HUB_LOG ? { logFile: `${process.env.BENCH_HUB_LOG}-${size}.log` } : {}),
  });
  try {
    const token = await createBootstrapToken(hub, { autoApprove: true });
    await fleet.register(hub.url, token);
    await storeObjects(hub);
    const procs = hubProcesses(hub.pid, hub.url);
    const connecting = epochNow();
    await fleet.connect(await entryUrl(procs.worker));
    // The create follows at once: an object whose last event (its agent's hello and status) is
    // more than 10 s old by then was evicted (workerd), and its create's call wakes it.
    console.log(`fleet of ${size}: connected in ${secs(epochNow() - connecting)} s (after ${OBJECTS} objects stored in ${NS})`);
    if (HUB_COLD) console.log(`fleet of ${size}: the hub's cluster objects left idle ${(await idleClusterObjects(hub)).toFixed(1)} s before the create`);
    const profile = (name: string) => (PROFILE ? { port: inspectorPort, file: `${PROFILE}-${size}-${name}.cpuprofile` } : undefined);
    const create = await phase(hub, fleet, procs.worker, profile("create"), { generation: 1, pending: placementAt(hub, "0", size) }, async () =>
      ok(
        await admin(hub, "POST", CRP, {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ClusterResourcePlacement",
          metadata: { name: "bench" },
          spec: { resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: NS }], policy: { placementType: "PickAll" } },
        }),
        "placement",
      ),
    );
    console.log(
      `fleet of ${size}, create: first ${secs(create.times[0]!)} s, p50 ${secs(pct(create.times, 50))} s, p99 ${secs(pct(create.times, 99))} s, max ${secs(create.times.at(-1)!)} s` +
        ` (the work reached the agents: first ${secs(create.arrived[0]!)} s, p50 ${secs(pct(create.arrived, 50))} s, p99 ${secs(pct(create.arrived, 99))} s)`,
    );
    printCost(size, "create", create.cost);
    const work = await createdWork(hub, clusterName(0));
    const side: Side = { work, create: create.times, change: undefined, mwrs: undefined, costs: { create: create.cost } };
    if (CHANGE) {
      const change = await phase(hub, fleet, procs.worker, profile("change"), { generation: 2, pending: placementAt(hub, "1", size) }, async () =>
        ok(await admin(hub, "PATCH", `/api/v1/namespaces/${NS}/secrets/obj-0`, { stringData: { value: "changed" } }, "application/merge-patch+json"), "change"),
      );
      console.log(`fleet of ${size}, change: p50 ${secs(pct(change.times, 50))} s, p99 ${secs(pct(change.times, 99))} s, max ${secs(change.times.at(-1)!)} s`);
      printCost(size, "change", change.cost);
      side.change = change.times;
      side.costs.change = change.cost;
    }
    if (MWRS) {
      // The same objects as the placement's works carry them, read from the first cluster's.
      const manifests = await renderedManifests(hub, clusterName(0));
      await placeEveryCluster(hub, MWRS_NS);
      await settle(hub, async () => {
        const n = await selectedClusters(hub, MWRS_NS);
        return n === size ? undefined : `the Placement selected ${n}/${size} clusters`;
      });
      const mwrs = await phase(
        hub,
        fleet,
        procs.worker,
        profile("mwrs"),
        { generation: 1, work: MWRS_WORK, pending: replicaSetAvailable(hub, size) },
        async () =>
          ok(
            await admin(hub, "POST", MWRS_PATH, {
              apiVersion: "work.open-cluster-management.io/v1alpha1",
              kind: "ManifestWorkReplicaSet",
              metadata: { name: "bench" },
              spec: { placementRefs: [{ name: "all", rolloutStrategy: { type: "All" } }], manifestWorkTemplate: { workload: { manifests } } },
            }),
            "replica set",
          ),
      );
      console.log(
        `fleet of ${size}, mwrs create (${manifests.length} manifests): first ${secs(mwrs.times[0]!)} s, p50 ${secs(pct(mwrs.times, 50))} s, p99 ${secs(pct(mwrs.times, 99))} s, max ${secs(mwrs.times.at(-1)!)} s`,
      );
      printCost(size, "mwrs create", mwrs.cost);
      side.mwrs = mwrs.times;
      side.costs.mwrs = mwrs.cost;
    }
    return side;
  } finally {
    await fleet.disconnect().catch(() => undefined);
    await hub.stop();
  }
}

/**
 * The placement's work `bench-work` on `cluster` as its create made it: the stored object (metadata
 * as the hub wrote it, the rendered spec), without the status the agent's report added.
 * @throws Error when the work is absent or not at generation 1 (the change ran before)
 */
async function createdWork(hub: Hub, cluster: string): Promise<Record<string, unknown>> {
  const r = await admin(hub, "GET", `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks/bench-work`);
  ok(r, "the placement's work");
  const { status: _status, ...work } = r.body as Record<string, unknown> & { metadata: { generation?: number } };
  if (work.metadata.generation !== 1) throw new Error(`the work is at generation ${work.metadata.generation}, not its create's`);
  return work;
}

/** The floor's counts (bench/noop/floor.ts `FloorCounts`, and `idleMs`). */
interface FloorCounts {
  d1Calls: number;
  d1RowsRead: number;
  d1RowsWritten: number;
  doRequests: number;
  /** Cluster objects constructed (a first load or a wake after eviction: cold ones). */
  constructions: number;
  /** Milliseconds since the last event of a cluster object ended (0 while one runs, -1 before any). */
  idleMs: number;
}

/** A Worker's create: report times, and its workerd's CPU per acknowledged report. */
interface Measured {
  times: number[];
  cpu: number;
  acked: number;
  load: string;
  counts?: FloorCounts;
  /** The floor's cold create: seconds its objects were left idle before it (none for a warm one). */
  idled?: number;
}

/**
 * The platform floor's create (bench/noop/floor.ts): the fleet connected to the no-op Worker with
 * `BENCH_FLOOR=1`, handed `work`, then timed from its create request to each cluster's report of
 * the work's generation acknowledged. Warm: the create follows the connect at once (the objects
 * the connect woke last are in memory; at 1,000 clusters the first ones may not be). `cold`: the
 * objects are first left without an event for {@link FLOOR_IDLE_MS} (the floor's `idleMs`), so
 * workerd evicted them and the create's call into each builds it again, as the hub's create meets
 * its objects; the count of constructions during the create says whether they were (the fleet's
 * size when all were cold).
 * @throws Error when the objects were not left idle within 180 000 milliseconds
 */
async function measureFloor(fleet: ChannelFleet, work: Record<string, unknown>, cold = false): Promise<Measured> {
  const floor = await startNoopWorker({ vars: { BENCH_FLOOR: "1" } });
  try {
    const procs = hubProcesses(floor.pid, floor.url);
    await fleet.connect(await entryUrl(procs.worker));
    const post = async (path: string, body?: unknown) => {
      const r = await fetch(`${floor.url}${path}`, { method: "POST", ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      if (!r.ok) throw new Error(`floor ${path}: ${r.status} ${await r.text()}`);
      return r.json();
    };
    await post("/floor/setup", { work, specJson: JSON.stringify(work.spec), inlineSpec: FLOOR_INLINE });
    const floorCounts = async () => (await (await fetch(`${floor.url}/__floor`)).json()) as FloorCounts;
    let idled: number | undefined;
    if (cold) {
      const since = epochNow();
      const deadline = Date.now() + 180_000;
      for (;;) {
        const idle = (await floorCounts()).idleMs;
        if (idle >= FLOOR_IDLE_MS) break;
        if (Date.now() > deadline) throw new Error(`the floor's cluster objects were not left idle for ${FLOOR_IDLE_MS} ms (idle ${idle} ms)`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      idled = (epochNow() - since) / 1000;
    }
    await post("/__floor");
    const acked0 = (await fleet.stats()).reportsAcked;
    const cpu0 = cpuSeconds(procs.worker);
    const t0 = epochNow();
    await post("/floor/create");
    const reports = await fleet.reported(Number((work.metadata as { generation: number }).generation), 120_000).catch(async (e: unknown) => {
      throw new Error(`the floor: ${e instanceof Error ? e.message : String(e)}; ${describeStats(await fleet.stats())}\n${floor.output().slice(-2000)}`, {
        cause: e,
      });
    });
    const times = doneAfter(reports, t0);
    const cpu = cpuSeconds(procs.worker) - cpu0;
    const acked = (await fleet.stats()).reportsAcked - acked0;
    const counts = await floorCounts();
    return { times, cpu, acked, load: loadAverage(), counts, ...(idled === undefined ? {} : { idled }) };
  } finally {
    await fleet.disconnect().catch(() => undefined);
    await floor.stop();
  }
}

async function measureNoop(fleet: ChannelFleet): Promise<Measured> {
  const noop = await startNoopWorker();
  try {
    const procs = hubProcesses(noop.pid, noop.url);
    await fleet.connect(await entryUrl(procs.worker));
    await fleet.reported(1);
    const acked0 = (await fleet.stats()).reportsAcked;
    const cpu0 = cpuSeconds(procs.worker);
    const t0 = epochNow();
    await (await fetch(`${noop.url}/bump`, { method: "POST" })).arrayBuffer();
    const times = doneAfter(await fleet.reported(2), t0);
    const cpu = cpuSeconds(procs.worker) - cpu0;
    const acked = (await fleet.stats()).reportsAcked - acked0;
    return { times, cpu, acked, load: loadAverage() };
  } finally {
    await fleet.disconnect().catch(() => undefined);
    await noop.stop();
  }
}

const rows: string[][] = [];
const costRows: string[][] = [];
/** Each size's phase costs, for the split into a part per cluster and a fixed part ({@link printSplit}). */
const measured: { size: number; label: string; counts: MeterCounts }[] = [];
for (const size of SIZES) {
  const fleet = await ChannelFleet.start(Array.from({ length: size }, (_, i) => clusterName(i)));
  try {
    const hub = await measureHub(fleet, size);
    const inline = FLOOR_INLINE ? " (spec inline)" : "";
    const printFloor = (label: string, floor: Measured) => {
      const c = floor.counts!;
      console.log(
        `fleet of ${size}, ${label}${inline}: first ${secs(floor.times[0]!)} s, p50 ${secs(pct(floor.times, 50))} s, p99 ${secs(pct(floor.times, 99))} s, max ${secs(floor.times.at(-1)!)} s; ` +
          `D1 ${c.d1Calls} calls, ${c.d1RowsRead} rows read, ${c.d1RowsWritten} rows written; DO requests ${c.doRequests}; ` +
          `cluster objects constructed ${c.constructions} (cold; of ${size}${floor.idled === undefined ? "" : `, after ${floor.idled.toFixed(1)} s idle`}); its workerd ${floor.cpu.toFixed(2)} s of CPU, ` +
          `${((floor.cpu * 1000) / Math.max(1, floor.acked)).toFixed(2)} ms per acknowledged report (${floor.acked} reports; load ${floor.load})`,
      );
    };
    const floor = FLOOR ? await measureFloor(fleet, hub.work) : undefined;
    if (floor) printFloor("floor create warm", floor);
    const floorCold = FLOOR_COLD ? await measureFloor(fleet, hub.work, true) : undefined;
    if (floorCold) printFloor("floor create cold", floorCold);
    if (floorCold && floorCold.counts!.constructions < size)
      console.log(
        `fleet of ${size}: WARNING the floor's cold create found ${size - floorCold.counts!.constructions} of ${size} cluster objects in memory (not evicted): its figure is not all cold`,
      );
    const noop = await measureNoop(fleet);
    console.log(
      `fleet of ${size}, no-op: p50 ${secs(pct(noop.times, 50))} s, p99 ${secs(pct(noop.times, 99))} s; its workerd ${((noop.cpu * 1000) / Math.max(1, noop.acked)).toFixed(2)} ms of CPU per acknowledged report (load ${noop.load})`,
    );
    const p = (xs: number[] | undefined) => (xs ? `${secs(pct(xs, 50))} / ${secs(pct(xs, 99))} / ${secs(xs.at(-1)!)}` : "-");
    const ratio = (a: number[], b: number[] | undefined) => (b ? (pct(a, 99) / pct(b, 99)).toFixed(2) : "-");
    const p99 = (label: string, xs: number[] | undefined, constructed: number | undefined) =>
      xs ? [`${label} ${secs(pct(xs, 99))} s (${constructed ?? "?"} of ${size} objects cold)`] : [];
    // The hub's create beside the floor's both ways: the hub's objects are as users meet them.
    console.log(
      `fleet of ${size}, create p99: ${[
        ...p99(HUB_COLD ? "hub (left idle first: BENCH_HUB_COLD=1)" : "hub", hub.create, hub.costs.create.counts.doWakes.cluster),
        ...p99("floor warm", floor?.times, floor?.counts?.constructions),
        ...p99("floor cold", floorCold?.times, floorCold?.counts?.constructions),
      ].join(", ")}; hub / floor warm ${ratio(hub.create, floor?.times)}, hub / floor cold ${ratio(hub.create, floorCold?.times)}`,
    );
    rows.push([
      String(size),
      String(OBJECTS + 1),
      p(hub.create),
      p(hub.change),
      p(hub.mwrs),
      p(floor?.times),
      p(floorCold?.times),
      p(noop.times),
      ratio(hub.create, floor?.times),
      ratio(hub.create, floorCold?.times),
      ratio(hub.create, noop.times),
    ]);
    for (const [label, c] of Object.entries(hub.costs)) measured.push({ size, label, counts: c.counts });
    for (const [label, c] of Object.entries(hub.costs))
      costRows.push([
        String(size),
        label,
        String(c.counts.d1Calls),
        String(c.counts.d1RowsRead),
        String(c.counts.d1RowsWritten),
        `${sum(c.counts.doRequests)} (${c.counts.doRequests.cluster} / ${sum(c.counts.doRequests) - c.counts.doRequests.cluster})`,
        String(sum(c.counts.doAlarms)),
        String(c.counts.doWakes.cluster),
        ((c.cpu * 1000) / Math.max(1, c.acked)).toFixed(2),
        c.settled.toFixed(2),
      ]);
    for (const [label, m] of [
      [`floor create warm${inline}`, floor],
      [`floor create cold${inline}`, floorCold],
      ["no-op", noop],
    ] as const) {
      if (!m) continue;
      const c = m.counts;
      costRows.push([
        String(size),
        label,
        c ? String(c.d1Calls) : "0",
        c ? String(c.d1RowsRead) : "0",
        c ? String(c.d1RowsWritten) : "0",
        c ? `${c.doRequests} (${c.doRequests} / 0)` : "0",
        "0",
        c ? String(c.constructions) : "-",
        ((m.cpu * 1000) / Math.max(1, m.acked)).toFixed(2),
        "",
      ]);
    }
  } finally {
    await fleet.stop();
  }
}
printTable(
  "one ClusterResourcePlacement (PickAll, a namespace with its objects), then one ManifestWorkReplicaSet of the same objects (rollout All), to each cluster's report acknowledged over its channel (local wrangler dev on this machine; seconds)",
  [
    "clusters",
    "objects",
    "create p50 / p99 / max s",
    "change of one object p50 / p99 / max s",
    "MWRS create p50 / p99 / max s",
    "floor create warm p50 / p99 / max s",
    "floor create cold p50 / p99 / max s",
    "no-op p50 / p99 / max s",
    "create p99 hub / floor warm",
    "create p99 hub / floor cold",
    "create p99 hub / no-op",
  ],
  rows,
);
printTable(
  "what each phase cost on the hub, from its write until it settled (metered hub, bench/meter/worker.ts), and the floor's and the no-op's create (their own counts; CPU of their workerd)",
  [
    "clusters",
    "phase",
    "D1 calls",
    "D1 rows read",
    "D1 rows written",
    "DO requests (clusters' / others)",
    "DO alarms",
    "cluster objects constructed (cold)",
    "workerd CPU ms / report",
    "settled s",
  ],
  costRows,
);
printSplit();

/**
 * Each phase's counts split into a part per cluster and a fixed part, fitted through the smallest
 * and the largest fleet of the run (cost = fixed + per cluster x clusters): what a change costs
 * per cluster (its work's write, its binding's status, the push to its object) and what it costs
 * the placement once (its runs' reads, its snapshot, its status). A flat change has a fixed part
 * the same whatever the sizes fitted. Printed only when the run measured two sizes or more.
 */
function printSplit(): void {
  const sizes = [...new Set(measured.map((m) => m.size))].sort((a, b) => a - b);
  if (sizes.length < 2) return;
  const [small, large] = [sizes[0]!, sizes.at(-1)!];
  const out: string[][] = [];
  for (const label of ["create", "change", "mwrs"]) {
    const a = measured.find((m) => m.size === small && m.label === label)?.counts;
    const b = measured.find((m) => m.size === large && m.label === label)?.counts;
    if (!a || !b) continue;
    const metrics: [string, (c: MeterCounts) => number][] = [
      ["D1 calls", (c) => c.d1Calls],
      ["D1 rows read", (c) => c.d1RowsRead],
      ["D1 rows written", (c) => c.d1RowsWritten],
      ["DO requests to clusters' objects", (c) => c.doRequests.cluster],
      ["DO requests to other objects", (c) => sum(c.doRequests) - c.doRequests.cluster],
    ];
    for (const [name, f] of metrics) {
      const per = (f(b) - f(a)) / (large - small);
      out.push([label, name, String(f(a)), String(f(b)), per.toFixed(2), (f(a) - per * small).toFixed(0)]);
    }
  }
  printTable(
    `each phase's cost split into a part per cluster and a fixed part (fitted through ${small} and ${large} clusters)`,
    ["phase", "count", `at ${small}`, `at ${large}`, "per cluster", "fixed"],
    out,
  );
}
