/**
 * Benchmark of a `/metrics` scrape (src/metrics/routes.ts): for each size in BENCH_SIZES (default
 * 2000) a fresh hub (`wrangler dev`, workerd, local D1) holds that many ManagedClusters (spread
 * over 12 edge locations, one in ten Available=Unknown), one ManifestWork per cluster (Applied and
 * Available), 100 Placements, 20 ManifestWorkReplicaSets, BENCH_POLICIES root Policies each
 * replicated to every cluster and one ManagedClusterAddOn per cluster, and the metrics object
 * holds the series of some API traffic; then BENCH_SCRAPES scrapes (default 50, after 5 to warm up) are
 * timed one after another from this process, as Prometheus scrapes.
 *
 * Prints a table: clusters, works, series shown, bytes, the scrape's p50, p99 and max seen from
 * here (milliseconds), and the p50 of the hub's own Server-Timing figures: when the D1 gauges and
 * when the metrics object's counters had arrived; with the machine's load average at the start.
 *
 * Seeding takes bench/scale.ts's fast path: the hub is started once (migrations applied), stopped,
 * the rows are written into its local D1 file with node:sqlite, and the hub is started again.
 *
 *   BENCH_SIZES     cluster counts (default 2000)
 *   BENCH_SCRAPES   timed scrapes per size (default 50)
 *   BENCH_POLICIES  root policies, each replicated to every cluster (default 5)
 */
import { readdirSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { admin, startHub, type Hub } from "../scripts/hub-process.ts";
import { printTable } from "./table.ts";

const SIZES = (process.env.BENCH_SIZES ?? "2000").split(",").map(Number);
const SCRAPES = Number(process.env.BENCH_SCRAPES ?? 50);
const POLICIES = Number(process.env.BENCH_POLICIES ?? 5);
const G = "cluster.open-cluster-management.io";
const W = "work.open-cluster-management.io";
const COLOS = ["FRA", "AMS", "LHR", "CDG", "IAD", "SJC", "ORD", "NRT", "SIN", "SYD", "GRU", "JNB"];
const AT = "2026-11-01T00:00:00Z";

const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);
const q = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const cond = (type: string, status = "True", reason = type) => ({ type, status, reason, message: "", lastTransitionTime: AT });

/** The local D1 database file of a hub's state folder. */
function d1File(stateDir: string): string {
  const dir = path.join(stateDir, "v3/d1/miniflare-D1DatabaseObject");
  const f = readdirSync(dir).find((n) => n.endsWith(".sqlite") && n !== "metadata.sqlite");
  if (!f) throw new Error(`no D1 database under ${dir}`);
  return path.join(dir, f);
}

/** Writes the fleet into a stopped hub's D1 as their writes would store the rows. */
function seed(stateDir: string, n: number): { works: number } {
  const db = new DatabaseSync(d1File(stateDir));
  let rv = Number((db.prepare("SELECT value FROM counters WHERE id = 1").get() as { value?: number } | undefined)?.value ?? 0);
  db.exec("BEGIN");
  const obj = db.prepare("INSERT INTO objects (resource, namespace, name, uid, resource_version, body) VALUES (?, ?, ?, ?, ?, ?)");
  const lab = db.prepare("INSERT INTO labels (resource, namespace, name, key, value) VALUES (?, ?, ?, ?, ?)");
  const put = (
    resource: string,
    body: { metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> } } & Record<string, unknown>,
  ) => {
    const uid = crypto.randomUUID();
    const ns = body.metadata.namespace ?? "";
    obj.run(
      resource,
      ns,
      body.metadata.name,
      uid,
      ++rv,
      JSON.stringify({ ...body, metadata: { ...body.metadata, uid, creationTimestamp: AT, generation: 1 } }),
    );
    for (const [k, v] of Object.entries(body.metadata.labels ?? {})) lab.run(resource, ns, body.metadata.name, k, v);
  };
  for (let i = 0; i < n; i++) {
    const name = `seed-${String(i).padStart(6, "0")}`;
    put(`${G}/managedclusters`, {
      apiVersion: `${G}/v1`,
      kind: "ManagedCluster",
      metadata: {
        name,
        labels: { "cluster.open-cluster-management.io/clusterset": "default", env: i % 2 ? "prod" : "dev" },
        annotations: { "flotilla.dev/colo": COLOS[i % COLOS.length]! },
      },
      spec: { hubAcceptsClient: true, leaseDurationSeconds: 60 },
      status: {
        conditions: [
          cond("HubAcceptedManagedCluster"),
          cond("ManagedClusterJoined"),
          cond("ManagedClusterConditionAvailable", i % 10 === 0 ? "Unknown" : "True"),
        ],
        version: { kubernetes: "v1.31.2" },
        capacity: { cpu: "8", memory: "32Gi" },
        allocatable: { cpu: "7800m", memory: "31Gi" },
      },
    });
    put(`${W}/manifestworks`, {
      apiVersion: `${W}/v1`,
      kind: "ManifestWork",
      metadata: { name: "app", namespace: name },
      spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "app", namespace: "default" }, data: { a: "b" } }] } },
      status: { conditions: [cond("Applied"), cond("Available"), cond("Progressing", "False")] },
    });
  }
  for (let i = 0; i < 100; i++) {
    put(`${G}/placements`, {
      apiVersion: `${G}/v1beta1`,
      kind: "Placement",
      metadata: { name: `p${i}`, namespace: "default" },
      spec: {},
      status: {
        numberOfSelectedClusters: n,
        conditions: [cond("PlacementSatisfied", i % 5 ? "True" : "False", i % 5 ? "AllDecisionsScheduled" : "NotAllDecisionsScheduled")],
      },
    });
  }
  for (let i = 0; i < 20; i++) {
    put(`${W}/manifestworkreplicasets`, {
      apiVersion: `${W}/v1alpha1`,
      kind: "ManifestWorkReplicaSet",
      metadata: { name: `r${i}`, namespace: "default" },
      spec: { placementRefs: [{ name: `p${i}` }], manifestWorkTemplate: { workload: { manifests: [] } } },
      status: {
        summary: { total: n, applied: n, available: n - i, progressing: i, degraded: 0 },
        conditions: [cond("PlacementRolledOut", i % 2 ? "True" : "False", "Complete")],
      },
    });
  }
  // Policies: each root in `default`, replicated into every cluster's namespace (one in ten
  // NonCompliant); one add-on per cluster (one in ten not Available).
  const P = "policy.open-cluster-management.io";
  for (let j = 0; j < POLICIES; j++) {
    const root = `pol-${j}`;
    put(`${P}/policies`, {
      apiVersion: `${P}/v1`,
      kind: "Policy",
      metadata: { name: root, namespace: "default" },
      spec: { disabled: false, "policy-templates": [] },
      status: { compliant: "NonCompliant" },
    });
    for (let i = 0; i < n; i++) {
      const cluster = `seed-${String(i).padStart(6, "0")}`;
      put(`${P}/policies`, {
        apiVersion: `${P}/v1`,
        kind: "Policy",
        metadata: { name: `default.${root}`, namespace: cluster, labels: { [`${P}/root-policy`]: `default.${root}`, [`${P}/cluster-name`]: cluster } },
        spec: { disabled: false, "policy-templates": [] },
        status: { compliant: i % 10 ? "Compliant" : "NonCompliant" },
      });
    }
  }
  for (let i = 0; i < n; i++) {
    put("addon.open-cluster-management.io/managedclusteraddons", {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ManagedClusterAddOn",
      metadata: { name: "probe", namespace: `seed-${String(i).padStart(6, "0")}` },
      spec: {},
      status: { conditions: [cond("Available", i % 10 ? "True" : "False")] },
    });
  }
  db.prepare("INSERT INTO counters (id, value) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET value = excluded.value").run(rv);
  db.exec("COMMIT");
  db.close();
  return { works: n };
}

/** One scrape: its time seen from here, and the hub's own Server-Timing figures (D1 gauges, counters). */
async function scrapeOnce(hub: Hub): Promise<{ ms: number; d1Ms: number; countersMs: number; bytes: number; series: number }> {
  const t0 = performance.now();
  const r = await fetch(`${hub.url}/metrics`, { headers: { authorization: `Bearer ${hub.adminToken}` } });
  const text = await r.text();
  const ms = performance.now() - t0;
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}: ${text.slice(0, 300)}`);
  const timing = r.headers.get("server-timing") ?? "";
  const dur = (name: string) => Number(new RegExp(`${name};dur=(\\d+)`).exec(timing)?.[1] ?? NaN);
  return { ms, d1Ms: dur("d1"), countersMs: dur("counters"), bytes: text.length, series: text.split("\n").filter((l) => l && !l.startsWith("#")).length };
}

async function measure(n: number): Promise<string[]> {
  let hub = await startHub({ startTimeoutMs: 180_000 });
  // The built-in objects (namespaces, sets, RBAC) exist before the rows go in.
  await admin(hub, "GET", `/apis/${G}/v1/managedclusters?limit=1`);
  const { stateDir, adminToken } = hub;
  const port = Number(new URL(hub.url).port);
  await hub.stop();
  log(`seeding ${n} clusters and works`);
  const { works } = seed(stateDir, n);
  hub = await startHub({ stateDir, port, adminToken, startTimeoutMs: 180_000 });
  try {
    // Some API traffic, so the metrics object holds request series as a live hub's does.
    for (const p of [
      `/apis/${G}/v1/managedclusters?limit=50`,
      `/apis/${G}/v1beta1/namespaces/default/placements`,
      `/apis/${W}/v1/manifestworks?limit=50`,
      "/api/v1/namespaces",
      `/apis/${G}/v1/managedclusters/seed-000001`,
    ]) {
      for (let i = 0; i < 5; i++) await admin(hub, "GET", p);
    }
    for (let i = 0; i < 5; i++) await scrapeOnce(hub);
    const runs: Awaited<ReturnType<typeof scrapeOnce>>[] = [];
    for (let i = 0; i < SCRAPES; i++) runs.push(await scrapeOnce(hub));
    const total = runs.map((r) => r.ms);
    const last = runs[runs.length - 1]!;
    return [
      String(n),
      String(works),
      String(last.series),
      String(last.bytes),
      q(total, 0.5).toFixed(1),
      q(total, 0.99).toFixed(1),
      Math.max(...total).toFixed(1),
      String(
        q(
          runs.map((r) => r.d1Ms),
          0.5,
        ),
      ),
      String(
        q(
          runs.map((r) => r.countersMs),
          0.5,
        ),
      ),
    ];
  } finally {
    await hub.stop();
  }
}

async function main(): Promise<void> {
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");
  const rows: string[][] = [];
  for (const n of SIZES) rows.push(await measure(n));
  printTable(
    `/metrics scrape, ${SCRAPES} scrapes one after another (load average at start: ${load})`,
    ["clusters", "works", "series", "bytes", "p50 ms", "p99 ms", "max ms", "D1 gauges p50 ms", "counters p50 ms"],
    rows,
  );
}

await main();
