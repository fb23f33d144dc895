/**
 * Benchmarks of the built-in kinds stored as templates (src/kinds/builtin, issue 42):
 *
 * 1. The CPU of validating a Deployment, in this process (Node, the same modules the Worker
 *    runs): the pure part of a create (`computeWrite`: decoding against Kubernetes' OpenAPI
 *    schema, defaults, the kind's validation, managedFields) and the schema check alone, per
 *    operation after a warm-up, and the one-off cost of building the Deployment's schema and
 *    its OpenAPI document in a fresh isolate.
 * 2. `kubectl apply -f` of BENCH_OBJECTS objects (default 500: Deployments, ConfigMaps and
 *    Services in equal parts, over 5 namespaces) to a hub served over HTTPS (`wrangler dev`,
 *    workerd, local D1), client-side apply (kubectl's default: a GET and a POST per object) and
 *    then `--server-side` (one PATCH per object), wall time from this process.
 *
 *   BENCH_OBJECTS   objects applied (default 500)
 *   BENCH_SKIP_HUB  set: only the CPU figures
 */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createRequire } from "node:module";
import { stringify } from "yaml";
import { startHub } from "../scripts/hub-process.ts";
import { printTable } from "./table.ts";

// The hub's modules in their CommonJS form (tsx's require hook): under Node's ESM loader the write
// path's fast-json-patch (a CommonJS package) has no named exports, as it has in the Worker's bundle.
const require = createRequire(import.meta.url);
const { computeWrite } = require("../src/k8s/write.ts") as typeof import("../src/k8s/write.ts");
const { checkSchema } = require("../src/k8s/meta.ts") as typeof import("../src/k8s/meta.ts");
const { DeploymentKind } = require("../src/kinds/builtin/index.ts") as typeof import("../src/kinds/builtin/index.ts");
// Typed here, not by `typeof import`: the routes' module types reach the Worker's own types, which
// this Node script's TypeScript program (agent/tsconfig.json) does not have.
const { openAPIV3 } = require("../src/api/openapi/v3.ts") as { openAPIV3: (group: string, version: string) => unknown };

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const OBJECTS = Number(process.env.BENCH_OBJECTS ?? 500);
const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);

const deployment = (name: string, ns?: string) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name, ...(ns ? { namespace: ns } : {}), labels: { app: name } },
  spec: {
    replicas: 3,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: {
        containers: [
          {
            name: "web",
            image: "nginx:1.27",
            ports: [{ containerPort: 80, name: "http" }],
            env: [
              { name: "MODE", value: "production" },
              { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
            ],
            resources: { requests: { cpu: "100m", memory: "64Mi" }, limits: { cpu: "500m", memory: "256Mi" } },
            readinessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 5 },
          },
        ],
      },
    },
  },
});

function timePerOp(n: number, fn: (i: number) => void): number {
  for (let i = 0; i < Math.min(200, n); i++) fn(i);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn(i);
  return Number(process.hrtime.bigint() - t0) / 1000 / n;
}

function cpuFigures(): string[][] {
  const t0 = performance.now();
  const schema = DeploymentKind.schema;
  const built = performance.now() - t0;
  const t1 = performance.now();
  const doc = JSON.stringify(openAPIV3("apps", "v1"));
  const openapi = performance.now() - t1;
  const body = deployment("web");
  const ctx = { now: Date.parse("2026-11-29T00:00:00Z"), newUid: () => "00000000-0000-4000-8000-000000000000" };
  const create = timePerOp(5000, () =>
    computeWrite(DeploymentKind, { namespace: "bench", name: "web" }, null, { verb: "create", body: structuredClone(body), fieldManager: "kubectl" }, ctx),
  );
  const check = timePerOp(5000, () => checkSchema(schema, { ...body, metadata: { ...body.metadata } }));
  return [
    ["schema check of a Deployment (zod, Kubernetes' OpenAPI schema)", `${check.toFixed(1)} µs`],
    ["create of a Deployment (computeWrite: schema, defaults, validation, managedFields)", `${create.toFixed(1)} µs`],
    ["building the Deployment's schema, once per isolate", `${built.toFixed(1)} ms`],
    [`building /openapi/v3/apis/apps/v1 (${Math.round(doc.length / 1024)} KiB), once per isolate`, `${openapi.toFixed(1)} ms`],
  ];
}

function manifests(n: number): string {
  const docs: string[] = [];
  const namespaces = 5;
  for (let i = 0; i < namespaces; i++) docs.push(stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: `bench-${i}` } }));
  for (let i = 0; i < n; i++) {
    const ns = `bench-${i % namespaces}`;
    const name = `app-${i}`;
    if (i % 3 === 0) docs.push(stringify(deployment(name, ns)));
    else if (i % 3 === 1)
      docs.push(
        stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns }, data: { "app.properties": `index=${i}\nmode=production\n` } }),
      );
    else
      docs.push(
        stringify({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name, namespace: ns },
          spec: { selector: { app: name }, ports: [{ name: "http", port: 80, targetPort: "http" }] },
        }),
      );
  }
  return docs.join("---\n");
}

async function applyFigures(): Promise<string[][]> {
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-bench-kinds-"));
  const hub = await startHub({ https: true });
  try {
    const { stdout } = await run(
      process.execPath,
      [path.join(root, "agent/bin/flotilla.js"), "kubeconfig", "--hub-url", hub.url, "--token", hub.adminToken, "--ca-file", hub.caFile!],
      { cwd: root },
    );
    const kubeconfig = path.join(dir, "kubeconfig");
    writeFileSync(kubeconfig, stdout);
    const file = path.join(dir, "objects.yaml");
    writeFileSync(file, manifests(OBJECTS));
    const rows: string[][] = [];
    for (const [label, args] of [
      ["kubectl apply -f (client-side: GET + POST each)", ["apply", "-f", file]],
      ["kubectl apply -f again, nothing changed (GET each)", ["apply", "-f", file]],
      ["kubectl apply --server-side -f (one PATCH each)", ["apply", "--server-side", "--force-conflicts", "-f", file]],
    ] as const) {
      log(`${label}: ${OBJECTS} objects`);
      const t0 = performance.now();
      const { stdout: out } = await run("kubectl", ["--kubeconfig", kubeconfig, ...args], { cwd: dir, maxBuffer: 64 * 1024 * 1024 });
      const s = (performance.now() - t0) / 1000;
      const lines = out.trim().split("\n").length;
      rows.push([label, String(lines - 5), `${s.toFixed(2)} s`, `${((s * 1000) / OBJECTS).toFixed(1)} ms`]);
    }
    return rows;
  } finally {
    await hub.stop();
  }
}

log(
  `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
printTable("Validating a Deployment (Node, per operation)", ["what", "CPU"], cpuFigures());
if (!process.env.BENCH_SKIP_HUB)
  printTable(`kubectl apply of ${OBJECTS} objects to the hub (wrangler dev, HTTPS)`, ["run", "objects", "wall time", "per object"], await applyFigures());
