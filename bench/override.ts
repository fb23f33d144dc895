/**
 * Benchmark of per-cluster overrides (src/overrides, src/fleet/overrides.ts; docs/overrides.md),
 * in this process (Node, the modules the Worker runs), CPU time (`process.cpuUsage`, so the
 * machine's other load counts little):
 *
 * 1. **render**: one Deployment for BENCH_CLUSTERS (1,000) clusters with a ResourceOverride of 20
 *    rules (10 rules by zone label, each an image registry; 9 by size class, each an annotation;
 *    one for every cluster: replicas from `${MEMBER-CLUSTER-LABEL-KEY-size}` and a label from
 *    `${MEMBER-CLUSTER-NAME}`, so no two clusters share a rendering): the compile of the
 *    override, each cluster's overridden object, its works rendered and their canonical JSON
 *    (what the placement controller compares), per run of the whole fleet; the median of
 *    BENCH_RUNS (7) runs. Also without the cluster-name label (clusters that render the same
 *    share one rendering).
 * 2. **change**: the zone-0 rule's registry changed (zone 0 holds 10 of the 1,000 clusters): the
 *    clusters whose stored works no longer carry their rendering (`carriesRender`, what makes a
 *    cluster an update candidate of the rolling update) and the works the controller writes for
 *    them: the work rows written.
 *
 * 3. **both sources**: the same ResourceOverride, then a Karmada OverridePolicy of 20 rules (a tag
 *    per zone, an annotation per size class, a label everywhere) on the same object, as the
 *    placement controller applies them (src/overrides/combined.ts), and a change of the policy's
 *    zone-0 rule: the clusters and work rows it touches.
 *
 *   BENCH_CLUSTERS  clusters (default 1000)
 *   BENCH_RUNS      runs of the render measure (default 7)
 */
import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { printTable } from "./table.ts";

// The hub's modules in their CommonJS form (tsx's require hook), as bench/kinds.ts loads them:
// fast-json-patch is a CommonJS package, whose named exports Node's ESM loader does not see.
const require = createRequire(import.meta.url);
const { compileKubeFleetOverrides } = require("../src/overrides/kubefleet.ts") as typeof import("../src/overrides/kubefleet.ts");
const { compileKarmadaOverrides } = require("../src/overrides/karmada.ts") as typeof import("../src/overrides/karmada.ts");
const { combineOverrides } = require("../src/overrides/combined.ts") as typeof import("../src/overrides/combined.ts");
const { carriesRender, clusterRenderer } = require("../src/fleet/overrides.ts") as typeof import("../src/fleet/overrides.ts");

const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 1000);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const ZONES = 100;

const deployment = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", namespace: "app", labels: { app: "web" } },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: "web" } },
    template: {
      metadata: { labels: { app: "web" } },
      spec: {
        containers: [
          {
            name: "web",
            image: "docker.io/library/web:1.0",
            ports: [{ containerPort: 80, name: "http" }],
            env: [
              { name: "MODE", value: "production" },
              { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
            ],
            resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { cpu: "500m", memory: "256Mi" } },
          },
        ],
      },
    },
  },
};

const clusters = Array.from({ length: CLUSTERS }, (_, i) => ({
  name: `member-${String(i).padStart(5, "0")}`,
  labels: { zone: `z${i % ZONES}`, size: String(1 + (i % 9)), "kubernetes-fleet.io/member-cluster-name": `member-${String(i).padStart(5, "0")}` },
}));

function rules(zone0Registry: string, perClusterName: boolean) {
  const out: unknown[] = [];
  for (let z = 0; z < 10; z++)
    out.push({
      clusterSelector: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { zone: `z${z}` } } }] },
      overrideType: "JSONPatch",
      jsonPatchOverrides: [
        { op: "replace", path: "/spec/template/spec/containers/0/image", value: `${z === 0 ? zone0Registry : `registry-${z}.example`}/web:1.0` },
      ],
    });
  for (let s = 1; s <= 9; s++)
    out.push({
      clusterSelector: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { size: String(s) } } }] },
      overrideType: "JSONPatch",
      jsonPatchOverrides: [{ op: "add", path: "/metadata/annotations", value: { "example.com/size-class": `s${s}` } }],
    });
  out.push({
    clusterSelector: { clusterSelectorTerms: [] },
    overrideType: "JSONPatch",
    jsonPatchOverrides: [
      { op: "replace", path: "/spec/replicas", value: "${MEMBER-CLUSTER-LABEL-KEY-size}" },
      ...(perClusterName ? [{ op: "add", path: "/metadata/labels/cluster", value: "${MEMBER-CLUSTER-NAME}" }] : []),
    ],
  });
  return out;
}

const ro = (zone0Registry: string, perClusterName: boolean) => ({
  name: "web-0",
  namespace: "app",
  spec: {
    resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: "web" }],
    policy: { overrideRules: rules(zone0Registry, perClusterName) },
  },
});

const manifests = [{ object: deployment as never, resource: "deployments" }];

/** Karmada's OverridePolicy of 20 rules on the same Deployment: a tag per zone (10), an annotation per size (9), a label everywhere. */
const karmadaPolicy = (zone0Tag: string) => ({
  kind: "OverridePolicy" as const,
  namespace: "app",
  name: "web",
  spec: {
    resourceSelectors: [{ apiVersion: "apps/v1", kind: "Deployment", name: "web" }],
    overrideRules: [
      ...Array.from({ length: 10 }, (_, z) => ({
        targetCluster: { labelSelector: { matchLabels: { zone: `z${z}` } } },
        overriders: { imageOverrider: [{ component: "Tag" as const, operator: "replace" as const, value: z === 0 ? zone0Tag : `1.${z}` }] },
      })),
      ...Array.from({ length: 9 }, (_, i) => ({
        targetCluster: { labelSelector: { matchLabels: { size: String(i + 1) } } },
        overriders: { annotationsOverrider: [{ operator: "add" as const, value: { "example.com/karmada-size": `k${i + 1}` } }] },
      })),
      { overriders: { labelsOverrider: [{ operator: "add" as const, value: { "example.com/by": "karmada" } }] } },
    ],
  },
});

function renderFleet(perClusterName: boolean, zone0Registry = "registry-0.example", karmada?: { zone0Tag: string }) {
  const overrides = combineOverrides(
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    compileKubeFleetOverrides([], [ro(zone0Registry, perClusterName) as any]),
    compileKarmadaOverrides(karmada ? [karmadaPolicy(karmada.zone0Tag)] : []),
  );
  const renderFor = clusterRenderer("web", manifests, undefined, overrides);
  return new Map(clusters.map((c) => [c.name, renderFor(c)]));
}

function cpuMs(f: () => void): number {
  const t = process.cpuUsage();
  f();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function main() {
  for (let i = 0; i < 2; i++) renderFleet(true); // warm-up (JIT)
  const distinct: number[] = [];
  const shared: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    distinct.push(cpuMs(() => renderFleet(true)));
    shared.push(cpuMs(() => renderFleet(false)));
  }
  const renders = renderFleet(true);
  const failures = [...renders.values()].filter((r) => r.error !== undefined).length;
  const sample = JSON.parse(renders.get(clusters[0]!.name)!.manifestsJson)[0];

  // The change: zone 0's registry. Stored works: what the fleet rendered before.
  const stored = new Map([...renders].map(([c, r]) => [c, r.works.map((w) => ({ metadata: { name: w.name }, spec: w.spec }))]));
  let touched: string[] = [];
  const changeMs = cpuMs(() => {
    const after = renderFleet(true, "registry-0-mirror.example");
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    touched = clusters.filter((c) => !carriesRender("web", stored.get(c.name) as any, after.get(c.name)!)).map((c) => c.name);
  });
  const workRows = touched.reduce((n, c) => n + renders.get(c)!.works.length, 0);

  // Both sources: the ResourceOverride, then an OverridePolicy of 20 rules (docs/overrides.md "One order everywhere").
  const both: number[] = [];
  for (let i = 0; i < RUNS; i++) both.push(cpuMs(() => renderFleet(true, "registry-0.example", { zone0Tag: "1.0" })));
  const bothRenders = renderFleet(true, "registry-0.example", { zone0Tag: "1.0" });
  const bothSample = JSON.parse(bothRenders.get(clusters[0]!.name)!.manifestsJson)[0];
  const bothStored = new Map([...bothRenders].map(([c, r]) => [c, r.works.map((w) => ({ metadata: { name: w.name }, spec: w.spec }))]));
  let bothTouched: string[] = [];
  const bothChangeMs = cpuMs(() => {
    const after = renderFleet(true, "registry-0.example", { zone0Tag: "1.0-mirror" });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    bothTouched = clusters.filter((c) => !carriesRender("web", bothStored.get(c.name) as any, after.get(c.name)!)).map((c) => c.name);
  });
  const bothRows = bothTouched.reduce((n, c) => n + bothRenders.get(c)!.works.length, 0);

  printTable(
    "Per-cluster overrides (bench:override)",
    ["measure", "figure"],
    [
      [`render one Deployment for ${CLUSTERS} clusters, 20 rules, every cluster distinct (CPU, median of ${RUNS})`, `${median(distinct).toFixed(1)} ms`],
      [
        `the same, clusters sharing renderings (no per-cluster-name label; ${new Set([...renderFleet(false).values()]).size} distinct)`,
        `${median(shared).toFixed(1)} ms`,
      ],
      ["failed renders", String(failures)],
      ["cluster 0's rendered image, replicas", `${sample.spec.template.spec.containers[0].image}, ${sample.spec.replicas}`],
      [`zone-0 rule changed: clusters whose works change (of ${CLUSTERS})`, String(touched.length)],
      ["work rows written for the change", String(workRows)],
      ["CPU of the change's render and comparison", `${changeMs.toFixed(1)} ms`],
      [`with an OverridePolicy of 20 rules after it (both sources, every cluster distinct; CPU, median of ${RUNS})`, `${median(both).toFixed(1)} ms`],
      ["cluster 0's rendered image (both)", String(bothSample.spec.template.spec.containers[0].image)],
      [`the OverridePolicy's zone-0 rule changed: clusters whose works change (of ${CLUSTERS})`, String(bothTouched.length)],
      ["work rows written for that change", String(bothRows)],
      ["CPU of that change's render and comparison", `${bothChangeMs.toFixed(1)} ms`],
      ["load average (1 min) on this machine", loadavg()[0]!.toFixed(1)],
    ],
  );
}

main();
