/**
 * Benchmark of Karmada's OverridePolicies (src/overrides/karmada.ts, src/fleet/karmada/overrides.ts;
 * docs/overrides.md "Karmada"), in this process (Node, the modules the Worker runs), CPU time
 * (`process.cpuUsage`):
 *
 * 1. **render**: one Deployment for BENCH_CLUSTERS (1,000) clusters with an OverridePolicy of 20
 *    rules (10 by region field, each an image registry; 9 by a size label, each an annotation;
 *    one naming every tenth cluster, a label): the compile of the policy, each cluster's matched
 *    rules, its overridden object and its works rendered, per run of the whole fleet; the median of
 *    BENCH_RUNS (7) runs.
 * 2. **change**: the region-0 rule's registry changed (region 0 holds 10 of the 1,000 clusters):
 *    the clusters whose rendered works differ, and so the work rows the controller writes.
 *
 *   BENCH_CLUSTERS  clusters (default 1000)
 *   BENCH_RUNS      runs of the render measure (default 7)
 */
import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { printTable } from "./table.ts";

// The hub's modules in their CommonJS form (tsx's require hook), as bench/override.ts loads them.
const require = createRequire(import.meta.url);
const { compileKarmadaOverrides } = require("../src/overrides/karmada.ts") as typeof import("../src/overrides/karmada.ts");
const { karmadaClusterRenderer } = require("../src/fleet/karmada/overrides.ts") as typeof import("../src/fleet/karmada/overrides.ts");
const { canonicalJson } = require("../src/k8s/canonical-json.ts") as typeof import("../src/k8s/canonical-json.ts");

const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 1000);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const REGIONS = 100;

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
            args: ["--port=80"],
            resources: { requests: { cpu: "100m", memory: "128Mi" } },
          },
        ],
      },
    },
  },
};

const clusters = Array.from({ length: CLUSTERS }, (_, i) => ({
  name: `member-${String(i).padStart(5, "0")}`,
  labels: { size: String(1 + (i % 9)) },
  region: `r${i % REGIONS}`,
  zones: [],
  taints: [],
  leaving: false,
}));

function policy(region0Registry: string) {
  const rules: unknown[] = [];
  for (let r = 0; r < 10; r++)
    rules.push({
      targetCluster: { fieldSelector: { matchExpressions: [{ key: "region", operator: "In", values: [`r${r}`] }] } },
      overriders: { imageOverrider: [{ component: "Registry", operator: "replace", value: r === 0 ? region0Registry : `registry-${r}.example` }] },
    });
  for (let s = 1; s <= 9; s++)
    rules.push({
      targetCluster: { labelSelector: { matchLabels: { size: String(s) } } },
      overriders: { annotationsOverrider: [{ operator: "add", value: { "example.com/size-class": `s${s}` } }] },
    });
  rules.push({
    targetCluster: { clusterNames: clusters.filter((_, i) => i % 10 === 0).map((c) => c.name) },
    overriders: {
      labelsOverrider: [{ operator: "add", value: { canary: "true" } }],
      argsOverrider: [{ containerName: "web", operator: "add", value: ["--canary"] }],
    },
  });
  return { kind: "OverridePolicy" as const, namespace: "app", name: "web", spec: { overrideRules: rules } };
}

const manifests = [{ object: deployment as never, resource: "deployments" }];

function renderFleet(region0Registry = "registry-0.example") {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const renderFor = karmadaClusterRenderer("pp.app.web", manifests, undefined, compileKarmadaOverrides([policy(region0Registry) as any]));
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
  for (let i = 0; i < 2; i++) renderFleet();
  const runs: number[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(cpuMs(() => renderFleet()));
  const before = renderFleet();
  const failures = [...before.values()].filter((r) => r.error !== undefined).length;
  const distinct = new Set([...before.values()]).size;
  let touched: string[] = [];
  const changeMs = cpuMs(() => {
    const after = renderFleet("registry-0-mirror.example");
    touched = clusters
      .filter(
        (c) =>
          canonicalJson(after.get(c.name)!.works.map((w) => [w.spec, w.annotations])) !==
          canonicalJson(before.get(c.name)!.works.map((w) => [w.spec, w.annotations])),
      )
      .map((c) => c.name);
  });
  const workRows = touched.reduce((n, c) => n + before.get(c)!.works.length, 0);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const sample = (before.get(clusters[0]!.name)!.works[0]!.spec as any).workload.manifests[0];
  printTable(
    "Karmada override policies (bench:override-karmada)",
    ["measure", "figure"],
    [
      [
        `render one Deployment for ${CLUSTERS} clusters, an OverridePolicy of 20 rules (CPU, median of ${RUNS}; ${distinct} distinct renderings)`,
        `${median(runs).toFixed(1)} ms`,
      ],
      ["failed renders", String(failures)],
      ["cluster 0's rendered image, labels", `${sample.spec.template.spec.containers[0].image}, ${JSON.stringify(sample.metadata.labels)}`],
      [`region-0 rule changed: clusters whose works change (of ${CLUSTERS})`, String(touched.length)],
      ["work rows written for the change", String(workRows)],
      ["CPU of the change's render and comparison", `${changeMs.toFixed(1)} ms`],
      ["load average (1 min) on this machine", loadavg()[0]!.toFixed(1)],
    ],
  );
}

main();
