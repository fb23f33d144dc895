/**
 * Benchmark of the scheduler's incremental view (src/placement/view.ts), in process: no D1, no
 * Durable Object, no HTTP (the hub's figures through the API are `npm run bench:scale`). Writes go
 * to an in-memory writer that assigns resourceVersions, as D1 would.
 *
 * Run: `npm run bench:scheduler-view` (Node with --expose-gc, for the heap figures). Prints:
 * 1. the view's cold-start build time and its heap (heapUsed after a GC, minus before) at
 *    1,000 / 10,000 / 50,000 ManagedClusters (`BENCH_SIZES`, comma-separated; 6 labels, 3 claims,
 *    3 resources each; sets `default` and `global`, 10 namespaces bound to both);
 * 2. one cluster's label change with 1,000 placements at 10,000 clusters: each placement selects
 *    one of 200 `app-group` label values (PickN 3), so about 10 placements are truly affected
 *    while OCM's enqueue rule names all 1,000; the first change after the placements were
 *    created, then steady changes (median of 9), with the placements scheduled and skipped, and,
 *    as the baseline, the same change through the full recompute (src/placement/state.ts);
 * 3. a Placement create (PickN 10, env=prod, Balance + Steady + ResourceAllocatableMemory) at
 *    10,000 and 50,000 clusters, median and p99 of 50 creates, and the heap of the view after
 *    them.
 */

import type { KubeObject } from "../src/k8s/meta.ts";
import { CLUSTERSET_LABEL } from "../src/kinds/managedcluster.ts";
import { runPlacementController, type ClusterView, type RunResult, type SaveObject, type Trigger } from "../src/placement/plan.ts";
import { ListState } from "../src/placement/state.ts";
import { runOnView, SchedulerView, type ViewSource } from "../src/placement/view.ts";
import type { PlacementSpec } from "../src/scheduling/index.ts";
import { printTable } from "./table.ts";

const G = "cluster.open-cluster-management.io";
const NOW = Date.parse("2026-01-01T00:00:00Z");
const REGIONS = ["us-east", "us-west", "eu-central", "ap-south", "sa-east"];
const ENVS = ["prod", "staging", "dev"];
const NAMESPACES = Array.from({ length: 10 }, (_, i) => `team-${i}`);
const GROUPS = 200;

const gc = (globalThis as { gc?: () => void }).gc;
const heapMiB = (): number => {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

/** The cluster's view as a trigger or a cold start delivers it: fresh strings each time. */
function clusterView(i: number): ClusterView {
  const region = REGIONS[i % REGIONS.length]!;
  return {
    name: `cluster-${String(i).padStart(6, "0")}`,
    labels: {
      [CLUSTERSET_LABEL]: `${"default"}`,
      region: `${region}`,
      zone: `${region}-${i % 3}`,
      env: `${ENVS[i % ENVS.length]}`,
      tier: `t${i % 4}`,
      "app-group": `g${i % GROUPS}`,
    },
    claims: {
      "platform.open-cluster-management.io": `${i % 2 ? "AWS" : "GCP"}`,
      "region.open-cluster-management.io": `${region}`,
      "kubeversion.open-cluster-management.io": `v1.30.${i % 4}`,
    },
    taints: i % 50 === 0 ? [{ key: `${G}/unreachable`, effect: "NoSelect", timeAdded: "2025-12-31T23:58:00Z" }] : [],
    allocatable: { cpu: `${(2 + (i % 62)) * 1000 - 200}m`, memory: `${8 + ((i * 7) % 248) - 1}Gi`, pods: "110" },
    capacity: { cpu: `${2 + (i % 62)}`, memory: `${8 + ((i * 7) % 248)}Gi`, pods: "110" },
    deleting: false,
  };
}

function object(kind: string, version: string, name: string, namespace: string | undefined, rv: number, spec: Record<string, unknown>): KubeObject {
  return {
    apiVersion: `${G}/${version}`,
    kind,
    metadata: {
      name,
      ...(namespace ? { namespace } : {}),
      uid: `uid-${namespace ?? ""}-${name}`,
      resourceVersion: String(rv),
      creationTimestamp: "2026-01-01T00:00:00Z",
      generation: 1,
    },
    spec,
  };
}

/** A cold-start source of n clusters, sets `default` and `global`, and bindings, in pages of 1,000. */
function source(n: number): ViewSource {
  const sets = [
    object("ManagedClusterSet", "v1beta2", "default", undefined, 1, { clusterSelector: { selectorType: "ExclusiveClusterSetLabel" } }),
    object("ManagedClusterSet", "v1beta2", "global", undefined, 2, { clusterSelector: { selectorType: "LabelSelector", labelSelector: {} } }),
  ];
  const bindings = NAMESPACES.flatMap((ns, i) =>
    ["default", "global"].map((s, j) => object("ManagedClusterSetBinding", "v1beta2", s, ns, 10 + 2 * i + j, { clusterSet: s })),
  );
  return {
    async *clusters() {
      for (let i = 0; i < n; i += 1000)
        yield Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({ view: clusterView(i + k), resourceVersion: String(100 + i + k) }));
    },
    async *objects(resource) {
      if (resource === "managedclustersets") yield sets;
      if (resource === "managedclustersetbindings") yield bindings;
    },
  };
}

/** An in-memory writer: commits what changed, with a new resourceVersion, as D1 would; `stored` holds the objects by kind and key. */
function memoryWriter(start: number): SaveObject & { stored: Map<string, Map<string, KubeObject>> } {
  let rv = start;
  const stored = new Map<string, Map<string, KubeObject>>();
  const save: SaveObject = async (def, current, next) => {
    if (current && next && JSON.stringify(current) === JSON.stringify(next)) return { written: false, conflict: false };
    const o = (next ?? current)!;
    const k = `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
    let t = stored.get(def.kind);
    if (!t) stored.set(def.kind, (t = new Map()));
    const out = next ? { ...next, metadata: { ...next.metadata, resourceVersion: String(++rv) } } : null;
    if (out) t.set(k, out);
    else t.delete(k);
    return { written: true, stored: out };
  };
  return Object.assign(save, { stored });
}

function fmt(ms: number): string {
  return ms < 10 ? ms.toFixed(2) : ms.toFixed(0);
}

const quantile = (xs: number[], q: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))]!;

/** Fleet sizes of the cold-start build (`BENCH_SIZES`). */
const BUILD_SIZES = (process.env.BENCH_SIZES ?? "1000,10000,50000")
  .split(",")
  .map((s) => Number(s.trim()))
  .filter((n) => n > 0);

/**
 * Builds the view of `n` clusters and returns its figures, not the view: once this returns, the
 * view is garbage, so the next size's "before" heap does not hold it (a view kept in a loop
 * variable of the caller would stay reachable until the next build replaced it, and the next
 * figure would be the difference of the two views).
 */
async function buildOnce(n: number): Promise<string[]> {
  const before = heapMiB();
  const t0 = performance.now();
  const view = await SchedulerView.build(source(n));
  const ms = performance.now() - t0;
  const mib = heapMiB() - before;
  return [n.toLocaleString("en-US"), fmt(ms), mib.toFixed(1), ((mib * 2 ** 20) / n).toFixed(0), String(view.clusterCount)];
}

async function benchBuild(): Promise<void> {
  const rows: string[][] = [];
  for (const n of BUILD_SIZES) rows.push(await buildOnce(n));
  printTable("Cold start: build the view (pure, from in-memory pages)", ["clusters", "build ms", "heap MiB", "bytes / cluster", "clusters held"], rows);
}

const placementObject = (ns: string, name: string, rv: number, spec: PlacementSpec) =>
  object("Placement", "v1beta1", name, ns, rv, spec as Record<string, unknown>);
const created = (p: KubeObject): Trigger => ({
  placements: [`${p.metadata.namespace}/${p.metadata.name}`],
  objects: [{ resource: "placements", namespace: p.metadata.namespace!, name: p.metadata.name, object: p }],
});

async function benchLabelChange(): Promise<void> {
  const n = 10_000;
  const heapBefore = heapMiB();
  const view = await SchedulerView.build(source(n));
  const save = memoryWriter(1_000_000);
  const placements: KubeObject[] = [];
  for (let i = 0; i < 1_000; i++) {
    const p = placementObject(NAMESPACES[i % NAMESPACES.length]!, `app-${i}`, 500_000 + i, {
      numberOfClusters: 3,
      predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { "app-group": `g${i % GROUPS}` } } } }],
    });
    placements.push(p);
    await runOnView(view, created(p), NOW, save);
  }
  // The writer's maps share the view's objects, so this is the view's heap (plus two small maps).
  const viewHeap = heapMiB() - heapBefore;
  let rv = 900_000;
  let cluster = clusterView(7);
  const change = async (group: string): Promise<{ ms: number; r: RunResult }> => {
    const before = cluster.labels!;
    cluster = { ...cluster, labels: { ...before, "app-group": group } };
    const t: Trigger = {
      clusters: [{ name: cluster.name, labelsBefore: { ...before }, labelsAfter: { ...cluster.labels }, after: cluster, resourceVersion: String(++rv) }],
    };
    const t0 = performance.now();
    const r = await runOnView(view, t, NOW, save);
    return { ms: performance.now() - t0, r };
  };
  const rows: string[][] = [];
  const row = (label: string, ms: number, r: RunResult) =>
    rows.push([label, fmt(ms), String(r.scheduled.length + r.skipped.length), String(r.scheduled.length), String(r.skipped.length), String(r.writes)]);
  const first = await change("g1");
  row("first change after the creates (new decisions run once more)", first.ms, first.r);
  const steady: { ms: number; r: RunResult }[] = [];
  for (let k = 0; k < 9; k++) steady.push(await change(`g${(k % 2 ? 1 : 2) + k * 3}`));
  const median = steady.sort((a, b) => a.ms - b.ms)[4]!;
  row("steady: one label change (median of 9)", median.ms, median.r);

  // The baseline: the same change through the full recompute over the whole fleet's lists.
  const lists = {
    clusters: Array.from({ length: n }, (_, i) => fleetObject(i === 7 ? cluster : clusterView(i), 100 + i)),
    sets: [...(await first1(source(n).objects("managedclustersets")))],
    bindings: [...(await first1(source(n).objects("managedclustersetbindings")))],
    placements: placements.map((p) => save.stored.get("Placement")?.get(`${p.metadata.namespace}/${p.metadata.name}`) ?? p),
    decisions: [...(save.stored.get("PlacementDecision")?.values() ?? [])],
    scores: [] as KubeObject[],
  };
  const before = cluster.labels!;
  const t: Trigger = { clusters: [{ name: cluster.name, labelsBefore: before, labelsAfter: { ...before, "app-group": "g5" } }] };
  const t0 = performance.now();
  const full = await runPlacementController(new ListState(lists), memoryWriter(2_000_000), t, NOW);
  row("baseline: full recompute (no index, no skip)", performance.now() - t0, full);
  printTable(
    `One cluster's label change, 1,000 placements (PickN 3 of one app-group each), 10,000 clusters; view heap ${viewHeap.toFixed(1)} MiB`,
    ["run", "ms", "enqueued", "scheduled", "skipped", "writes"],
    rows,
  );
}

async function first1(pages: AsyncIterable<KubeObject[]>): Promise<KubeObject[]> {
  for await (const page of pages) return page;
  return [];
}

/** A ManagedCluster object carrying a view (for the full recompute baseline). */
function fleetObject(v: ClusterView, rv: number): KubeObject {
  return {
    apiVersion: `${G}/v1`,
    kind: "ManagedCluster",
    metadata: { name: v.name, uid: v.name, resourceVersion: String(rv), creationTimestamp: "2026-01-01T00:00:00Z", labels: { ...v.labels } },
    spec: { hubAcceptsClient: true, taints: v.taints },
    status: { allocatable: v.allocatable, capacity: v.capacity, clusterClaims: Object.entries(v.claims ?? {}).map(([name, value]) => ({ name, value })) },
  };
}

/** 50 Placement creates over a view of `n` clusters (after 5 to warm up); returns the figures, not the view (see {@link buildOnce}). */
async function createOnce(n: number, spec: PlacementSpec): Promise<string[]> {
  const before = heapMiB();
  const view = await SchedulerView.build(source(n));
  const save = memoryWriter(1_000_000);
  for (let i = 0; i < 5; i++) await runOnView(view, created(placementObject("team-0", `warm-${i}`, 400_000 + i, spec)), NOW, save);
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const p = placementObject(NAMESPACES[i % NAMESPACES.length]!, `web-${i}`, 500_000 + i, spec);
    const t0 = performance.now();
    await runOnView(view, created(p), NOW, save);
    times.push(performance.now() - t0);
  }
  const mib = heapMiB() - before;
  return [
    n.toLocaleString("en-US"),
    String(Math.round(n / 3)),
    fmt(quantile(times, 0.5)),
    fmt(quantile(times, 0.99)),
    mib.toFixed(1),
    String(view.clusterCount),
  ];
}

async function benchCreate(): Promise<void> {
  const spec: PlacementSpec = {
    numberOfClusters: 10,
    predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { env: "prod" } } } }],
    prioritizerPolicy: { configurations: [{ scoreCoordinate: { builtIn: "ResourceAllocatableMemory" }, weight: 2 }] },
  };
  const rows: string[][] = [];
  for (const n of [10_000, 50_000]) rows.push(await createOnce(n, spec));
  printTable(
    "Placement create through the view (PickN 10 of env=prod; Balance, Steady, ResourceAllocatableMemory×2), 50 creates",
    ["clusters", "candidates", "p50 ms", "p99 ms", "view heap MiB (55 placements)", "clusters held"],
    rows,
  );
}

console.log(`Flotilla scheduler view bench (Node ${process.version}; pure, in-process: no D1, no Durable Object, no HTTP)`);
if (!gc) console.log("(run with --expose-gc for heap figures: npm run bench:scheduler-view)");
await benchBuild();
await benchLabelChange();
await benchCreate();
