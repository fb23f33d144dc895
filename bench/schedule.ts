/**
 * Benchmark of the pure Placement scheduler (src/scheduling).
 *
 * Run: `npm run bench:schedule`. Prints, as tables:
 * 1. the time (milliseconds) to schedule one PickN placement (numberOfClusters 10,
 *    Balance + Steady + ResourceAllocatableMemory, one label predicate, tolerations)
 *    over 1,000 / 10,000 / 100,000 synthetic clusters, median and p90 of several runs;
 * 2. the same placement with numberOfClusters unset (select all feasible, grouped and
 *    paginated), to show the cost of sorting and building every PlacementDecision;
 * 3. the time to re-evaluate 1,000 placements over 1,000 clusters after one cluster changed
 *    (every placement rescheduled, as OCM does on any ManagedCluster update).
 *
 * Only Node built-ins are used for timing (`performance.now()`). Data is generated with a
 * fixed-seed LCG, so runs are comparable.
 */

import { schedule } from "../src/scheduling/index.ts";
import type { PlacementSpec, ScheduleInput, SchedulingCluster } from "../src/scheduling/index.ts";
import { printTable } from "./table.ts";

const NOW = new Date("2026-01-01T00:00:00Z");
const REGIONS = ["us-east", "us-west", "eu-central", "ap-south", "sa-east"];
const ENVS = ["prod", "staging", "dev"];

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function makeClusters(n: number, seed = 42): SchedulingCluster[] {
  const rnd = lcg(seed);
  const out: SchedulingCluster[] = [];
  for (let i = 0; i < n; i++) {
    const memGi = 8 + Math.floor(rnd() * 248);
    const cpu = 2 + Math.floor(rnd() * 62);
    const c: SchedulingCluster = {
      name: `cluster-${i}`,
      labels: { region: REGIONS[i % REGIONS.length]!, env: ENVS[i % ENVS.length]!, "cluster.open-cluster-management.io/clusterset": "default" },
      claims: { "platform.open-cluster-management.io": i % 2 === 0 ? "AWS" : "GCP" },
      allocatable: { cpu: `${cpu * 1000 - 200}m`, memory: `${memGi - 1}Gi` },
      capacity: { cpu: String(cpu), memory: `${memGi}Gi` },
      clusterSets: ["default", "global"],
    };
    if (i % 50 === 0) c.taints = [{ key: "cluster.open-cluster-management.io/unreachable", effect: "NoSelect", timeAdded: "2025-12-31T23:58:00Z" }];
    if (i % 97 === 0) c.taints = [{ key: "maintenance", value: "true", effect: "PreferNoSelect", timeAdded: "2025-12-31T00:00:00Z" }];
    out.push(c);
  }
  return out;
}

function pickNSpec(numberOfClusters: number | undefined): PlacementSpec {
  return {
    numberOfClusters,
    predicates: [{ requiredClusterSelector: { labelSelector: { matchExpressions: [{ key: "env", operator: "In", values: ["prod", "staging"] }] } } }],
    prioritizerPolicy: { mode: "Additive", configurations: [{ scoreCoordinate: { type: "BuiltIn", builtIn: "ResourceAllocatableMemory" }, weight: 2 }] },
    tolerations: [{ key: "cluster.open-cluster-management.io/unreachable", operator: "Exists", tolerationSeconds: 300 }],
  };
}

function makeInput(clusters: SchedulingCluster[], spec: PlacementSpec, name = "bench"): ScheduleInput {
  // Decisions of other placements, as a hub-side cache would keep them (a Map).
  const counts = new Map<string, number>();
  for (let i = 0; i < clusters.length; i += 3) counts.set(clusters[i]!.name, 1 + (i % 7));
  return {
    placement: { name, spec },
    clusters,
    boundClusterSets: ["default"],
    existingDecisions: clusters.slice(0, 10).map((c) => c.name),
    otherDecisionCounts: counts,
  };
}

function timeRuns(runs: number, fn: () => void): { median: number; p90: number; min: number } {
  for (let i = 0; i < Math.min(3, runs); i++) fn(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)]!, p90: times[Math.min(times.length - 1, Math.floor(times.length * 0.9))]!, min: times[0]! };
}

function fmt(ms: number): string {
  return ms < 10 ? ms.toFixed(3) : ms.toFixed(1);
}

function benchOne(label: string, numberOfClusters: number | undefined): void {
  const rows: string[][] = [];
  for (const [n, runs] of [
    [1_000, 51],
    [10_000, 21],
    [100_000, 7],
  ] as const) {
    const clusters = makeClusters(n);
    const input = makeInput(clusters, pickNSpec(numberOfClusters));
    let selected = 0;
    let feasible = 0;
    let pages = 0;
    const t = timeRuns(runs, () => {
      const r = schedule(input, NOW);
      selected = r.numberOfSelectedClusters;
      feasible = r.numberOfFeasibleClusters;
      pages = r.placementDecisions.length;
    });
    rows.push([n.toLocaleString("en-US"), String(feasible), String(selected), String(pages), String(runs), fmt(t.median), fmt(t.p90), fmt(t.min)]);
  }
  printTable(label, ["clusters", "feasible", "selected", "PDs", "runs", "median ms", "p90 ms", "min ms"], rows);
}

function benchReevaluate(): void {
  const placements = 1_000;
  const n = 1_000;
  const clusters = makeClusters(n);
  const rnd = lcg(7);
  const inputs: ScheduleInput[] = [];
  for (let p = 0; p < placements; p++) {
    const spec: PlacementSpec = {
      numberOfClusters: 1 + Math.floor(rnd() * 20),
      predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { region: REGIONS[p % REGIONS.length]! } } } }],
      prioritizerPolicy: p % 2 === 0 ? { configurations: [{ scoreCoordinate: { builtIn: "ResourceAllocatableMemory" }, weight: 1 + (p % 3) }] } : undefined,
    };
    inputs.push(makeInput(clusters, spec, `placement-${p}`));
  }
  const runAll = (): number => {
    let selected = 0;
    for (const input of inputs) selected += schedule(input, NOW).numberOfSelectedClusters;
    return selected;
  };
  runAll(); // warm-up
  const rows: string[][] = [];
  const times: number[] = [];
  for (let round = 0; round < 5; round++) {
    // One cluster changes (a label and its allocatable memory); every placement is re-evaluated.
    const i = Math.floor(rnd() * n);
    const old = clusters[i]!;
    clusters[i] = {
      ...old,
      labels: { ...old.labels, region: REGIONS[(round + 1) % REGIONS.length]! },
      allocatable: { ...old.allocatable, memory: `${100 + round}Gi` },
    };
    const t0 = performance.now();
    runAll();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  rows.push([
    placements.toLocaleString("en-US"),
    n.toLocaleString("en-US"),
    String(times.length),
    fmt(median),
    fmt(times[0]!),
    fmt((median / placements) * 1000),
  ]);
  printTable(
    "Re-evaluate every placement after one cluster changed",
    ["placements", "clusters", "rounds", "median ms (all)", "min ms (all)", "µs / placement"],
    rows,
  );
}

console.log(`Flotilla scheduling bench (Node ${process.version})`);
benchOne("Schedule one placement (PickN numberOfClusters=10; Balance, Steady, ResourceAllocatableMemory×2)", 10);
benchOne("Schedule one placement (numberOfClusters unset: all feasible, grouped and paginated)", undefined);
benchReevaluate();
