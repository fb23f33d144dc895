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
 * and the same agents against the no-op Worker (bench/noop: one work pushed to every cluster and
 * acknowledged at once) in the same run, as bench/propagation.ts does for a ManifestWorkReplicaSet.
 *
 *   BENCH_SIZES       fleet sizes, comma-separated (default "1000"); each size gets a fresh hub
 *   BENCH_OBJECTS     objects in the placed namespace besides the namespace (default 50)
 *   BENCH_HUB_LOG     a file prefix: `<prefix>-<size>.log` gets everything the hub printed
 *
 * Run it only on an otherwise idle machine (its figures are this machine's).
 */
import { admin, createBootstrapToken, createNamespaces, startHub, type Hub } from "../scripts/hub-process.ts";
import { startNoopWorker } from "./noop/start.ts";
import { ChannelFleet, entryUrl, hubProcesses, percentile as pct, type AgentTimes } from "./channel-fleet.ts";
import { printTable } from "./table.ts";

const SIZES = (process.env.BENCH_SIZES ?? "1000")
  .split(",")
  .map((s) => Number(s.trim()))
  .filter((n) => n > 0);
const OBJECTS = Number(process.env.BENCH_OBJECTS ?? "50");
const NS = "crp-bench";
const CRP = "/apis/placement.kubernetes-fleet.io/v1/clusterresourceplacements";

const epochNow = () => performance.timeOrigin + performance.now();
const secs = (ms: number) => (ms / 1000).toFixed(2);
const doneAfter = (times: AgentTimes[], t0: number) => times.map((t) => t.done - t0).sort((a, b) => a - b);

function ok(r: { status: number; body: unknown }, what: string): void {
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
}

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

interface Side {
  create: number[];
  change: number[];
}

async function measureHub(fleet: ChannelFleet, size: number): Promise<Side> {
  const hub = await startHub({ graceMultiplier: 100, ...(process.env.BENCH_HUB_LOG ? { logFile: `${process.env.BENCH_HUB_LOG}-${size}.log` } : {}) });
  try {
    const token = await createBootstrapToken(hub, { autoApprove: true });
    await fleet.register(hub.url, token);
    await storeObjects(hub);
    const procs = hubProcesses(hub.pid, hub.url);
    await fleet.connect(await entryUrl(procs.worker));
    console.log(`fleet of ${size}: connected; ${OBJECTS} objects stored in ${NS}`);
    const t0 = epochNow();
    ok(
      await admin(hub, "POST", CRP, {
        apiVersion: "placement.kubernetes-fleet.io/v1",
        kind: "ClusterResourcePlacement",
        metadata: { name: "bench" },
        spec: { resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: NS }], policy: { placementType: "PickAll" } },
      }),
      "placement",
    );
    const create = doneAfter(await fleet.reported(1), t0);
    console.log(`fleet of ${size}, create: p50 ${secs(pct(create, 50))} s, p99 ${secs(pct(create, 99))} s, max ${secs(create.at(-1)!)} s`);
    const t1 = epochNow();
    ok(await admin(hub, "PATCH", `/api/v1/namespaces/${NS}/secrets/obj-0`, { stringData: { value: "changed" } }, "application/merge-patch+json"), "change");
    const change = doneAfter(await fleet.reported(2), t1);
    console.log(`fleet of ${size}, change: p50 ${secs(pct(change, 50))} s, p99 ${secs(pct(change, 99))} s, max ${secs(change.at(-1)!)} s`);
    return { create, change };
  } finally {
    await fleet.disconnect().catch(() => undefined);
    await hub.stop();
  }
}

async function measureNoop(fleet: ChannelFleet): Promise<number[]> {
  const noop = await startNoopWorker();
  try {
    const procs = hubProcesses(noop.pid, noop.url);
    await fleet.connect(await entryUrl(procs.worker));
    await fleet.reported(1);
    const t0 = epochNow();
    await (await fetch(`${noop.url}/bump`, { method: "POST" })).arrayBuffer();
    return doneAfter(await fleet.reported(2), t0);
  } finally {
    await fleet.disconnect().catch(() => undefined);
    await noop.stop();
  }
}

const rows: string[][] = [];
for (const size of SIZES) {
  const fleet = await ChannelFleet.start(Array.from({ length: size }, (_, i) => `crp-${String(i).padStart(5, "0")}`));
  try {
    const hub = await measureHub(fleet, size);
    const noop = await measureNoop(fleet);
    const p = (xs: number[]) => `${secs(pct(xs, 50))} / ${secs(pct(xs, 99))} / ${secs(xs.at(-1)!)}`;
    rows.push([String(size), String(OBJECTS + 1), p(hub.create), p(hub.change), p(noop)]);
  } finally {
    await fleet.stop();
  }
}
printTable(
  "one ClusterResourcePlacement (PickAll, a namespace with its objects) to each cluster's report acknowledged over its channel (local wrangler dev on this machine; seconds)",
  ["clusters", "objects", "create p50 / p99 / max s", "change of one object p50 / p99 / max s", "no-op p50 / p99 / max s"],
  rows,
);
