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
 *    workerd, local D1), wall time from this process: client-side apply (kubectl's default: per
 *    object a GET of it, a GET of its namespace and a POST), the same again (nothing changed: a
 *    GET per object), `--server-side` of as many new objects (one PATCH each), and `--server-side`
 *    over the client-side-applied objects (kubectl migrates their managed fields: 4 PATCHes each).
 *
 *   The same kubectl runs, step by step in the same minutes, against the benchmarks' no-op
 *   Worker (bench/noop: `wrangler dev` with the same HTTPS setup, answering 404 to the GET, 201
 *   echoing the POST, 200 echoing the PATCH, and the hub's own discovery and OpenAPI answers),
 *   with the ratio hub/no-op: the floor of kubectl, wrangler dev and TLS on this machine; and
 *   against the **platform floor** (the no-op Worker with `BENCH_FLOOR=1`, bench/noop/floor.ts: a
 *   GET is one D1 read of the object's row by key, a POST one D1 statement inserting the object's
 *   row as sent, guarded by its namespace's existence, a PATCH the same as an upsert), with the
 *   ratio hub/floor: what any hub that stores the objects must spend on this machine (client-side
 *   apply of 500, 2026-11-30, load 7-11: floor 21.3 and 23.9 s, 16.5-20.5 ms of Worker CPU per
 *   object, 3.02 D1 calls; hub 31.2 and 55.4 s, 31.7-33.0 ms; no-op 14.5 and 12.1 s, 9.6-13.2
 *   ms; at idle the floor would take about 7.7-10.4 s: the 10 s bar is at this machine's edge,
 *   docs/scale.md "The platform floor"). Each
 *   run's CPU time per object, of the Worker's processes (`wrangler dev` and its workerd, read
 *   from /proc; the hub's include `npm start`'s supervisor) and of kubectl: what the work costs,
 *   which a loaded machine's wall time does not show, and the two summed (kubectl's apply is
 *   sequential, a request then its answer, so on an idle machine its wall time follows the CPU of
 *   kubectl and the Worker's processes together), with the 1-minute load average at the run's
 *   start. After each step, per other Worker, a row of the ratios hub/floor and hub/no-op of each
 *   figure (wall time, with the hub's excess per object in milliseconds; the Worker's CPU;
 *   kubectl's; both together): kubectl's own CPU is the same work against every Worker, so the
 *   sum's ratio is the part of the hub's time that is the hub's.
 *
 *   BENCH_OBJECTS        objects applied (default 500)
 *   BENCH_SKIP_HUB       set: only the CPU figures
 *   BENCH_NO_NOOP        set: the hub only (neither the no-op Worker nor the floor)
 *   BENCH_NO_FLOOR       set: no platform floor
 *   BENCH_STEPS          the kubectl runs to make, by number (1 to 4, comma-separated; default all):
 *                        `1` only the client-side apply, when iterating on it
 *   BENCH_METER=1        the metered hub (bench/meter: the same Worker, counting): each run's
 *                        Worker requests, D1 calls and Durable Object requests per object
 *   BENCH_TRACE_SQL=1    with BENCH_METER=1: each run's D1 calls, by statement, per object
 *   BENCH_REQUEST_TIMES=1  kubectl `-v=6`: its requests by method, their summed and median
 *                        milliseconds as kubectl timed them
 *   BENCH_CPU_PROFILE    a file prefix: writes `<prefix>-<run>.cpuprofile`, the hub isolate's CPU
 *                        profile of each run (bench/cpu-profile.ts)
 *   BENCH_LOG_REQUESTS=1 every Worker prints a line per request (`npm start` with
 *                        `FLOTILLA_LOG_REQUESTS=1`); default none, as `npm start` runs the hub
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { request as httpsRequest } from "node:https";
import type { AddressInfo } from "node:net";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createRequire } from "node:module";
import { stringify } from "yaml";
import { admin, freePort, hubFetch, startHub, type Hub } from "../scripts/hub-process.ts";
import { printTable } from "./table.ts";
import { startNoopWorker } from "./noop/start.ts";
import { startProfiling } from "./cpu-profile.ts";
import { descendants, procStat } from "../scripts/proc.mjs";
import type { MeterCounts } from "./meter/counts.ts";
import { benchDeployment } from "./deployment.ts";

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
const NOOP = !process.env.BENCH_NO_NOOP;
const FLOOR = NOOP && !process.env.BENCH_NO_FLOOR;
const METER = process.env.BENCH_METER === "1";
const REQUEST_TIMES = process.env.BENCH_REQUEST_TIMES === "1";
const PROFILE = process.env.BENCH_CPU_PROFILE;
const LOG_REQUESTS = process.env.BENCH_LOG_REQUESTS === "1";
const STEPS = process.env.BENCH_STEPS ? new Set(process.env.BENCH_STEPS.split(",").map((s) => Number(s.trim()))) : undefined;
const TRACE_SQL = METER && process.env.BENCH_TRACE_SQL === "1";
const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);

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
  const body = benchDeployment("web");
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

/** `n` objects (Deployments, ConfigMaps, Services in turn) over 5 namespaces `<prefix>-0` to `<prefix>-4`, as one YAML stream. */
function manifests(n: number, prefix: string): string {
  const docs: string[] = [];
  const namespaces = 5;
  for (let i = 0; i < namespaces; i++) docs.push(stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: `${prefix}-${i}` } }));
  for (let i = 0; i < n; i++) {
    const ns = `${prefix}-${i % namespaces}`;
    const name = `app-${i}`;
    if (i % 3 === 0) docs.push(stringify(benchDeployment(name, ns)));
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

/**
 * One kubectl run of the benchmark: its label, kubectl's arguments after `--kubeconfig`, and
 * whether it runs against the hub only (a run whose requests depend on what the hub answers).
 */
type Step = readonly [label: string, args: readonly string[], hubOnly?: boolean];

/** A Worker kubectl is run against: its URL and what to do around each run. */
interface Target {
  name: string;
  url: string;
  /** The process its `wrangler dev` runs below (its CPU time is that process tree's). */
  pid: number;
  /** Called before and after each run (the meter's reset and reading; a CPU profile). */
  around?: (step: number) => Promise<(() => Promise<string | undefined>) | undefined>;
}

/**
 * A plain-HTTP server on 127.0.0.1 that forwards each request to `hub` over HTTPS (trusting its
 * local CA) with the admin token, answering the hub's status, `Content-Type` and body as bytes:
 * the no-op Worker's source of discovery and OpenAPI (bench/noop/worker.ts `BENCH_FORWARD_URL`).
 */
async function forwarder(hub: Hub): Promise<{ url: string; close(): void }> {
  const ca = readFileSync(hub.caFile!);
  const server = createServer((req, res) => {
    const out = httpsRequest(
      `${hub.url}${req.url}`,
      { method: req.method, ca, headers: { accept: req.headers.accept ?? "*/*", authorization: `Bearer ${hub.adminToken}` } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, { "content-type": answer.headers["content-type"] ?? "application/octet-stream" });
        answer.pipe(res);
      },
    );
    out.on("error", () => res.writeHead(502).end());
    req.pipe(out);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

/**
 * kubectl's own timing of each request (`-v=6`: `"Response" verb="GET" url=... status="200 OK"
 * milliseconds=12`), summed by method: what the client waited for the server, of the run's
 * wall time (the rest is kubectl's own work between requests).
 */
function requestTimes(stderr: string): { method: string; n: number; ms: number; median: number }[] {
  const by = new Map<string, number[]>();
  // client-go's line, structured (`"Response" verb="GET" ... milliseconds=12`) or not (`GET https://... 200 OK in 12 milliseconds`).
  for (const m of stderr.matchAll(
    /(?:"Response" verb="([A-Z]+)" url="[^"]*" status="[^"]*" milliseconds=(\d+))|(?:\] ([A-Z]+) https?:\/\/\S+ \d{3}[^\n]* in (\d+) milliseconds)/g,
  )) {
    const [method, ms] = m[1] ? [m[1], m[2]!] : [m[3]!, m[4]!];
    const list = by.get(method) ?? [];
    list.push(Number(ms));
    by.set(method, list);
  }
  return [...by].map(([method, ms]) => {
    const sorted = [...ms].sort((a, b) => a - b);
    return { method, n: ms.length, ms: ms.reduce((a, b) => a + b, 0), median: sorted[Math.floor(sorted.length / 2)]! };
  });
}

/**
 * CPU time used so far, in milliseconds: by the process tree below `pid` (the Worker's `wrangler
 * dev` and workerd processes), or with `pid` "children" by this process's children that have
 * ended (Linux's cutime and cstime: each kubectl run once it has been waited for).
 */
function cpuMs(pid: number | "children"): number {
  if (pid === "children") {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(f[13]) + Number(f[14])) * 1000) / 100;
  }
  return [pid, ...descendants(pid)].reduce((sum, p) => sum + (procStat(p)?.cpuMs ?? 0), 0);
}

/**
 * Runs each step with kubectl against each target in turn (the hub, then the floor and the no-op
 * Worker, step by step, so that all see the machine's load of the same minute), returning per target and
 * step the wall time in seconds, the objects kubectl reported and, with `BENCH_REQUEST_TIMES`,
 * kubectl's own timing of its requests.
 */
async function runSteps(targets: Target[], caFile: string, token: string, file: string, dir: string, steps: readonly Step[]): Promise<string[][]> {
  const kubeconfigs = new Map<Target, string>();
  for (const t of targets) {
    const { stdout } = await run(
      process.execPath,
      [path.join(root, "agent/bin/flotilla.js"), "kubeconfig", "--hub-url", t.url, "--token", token, "--ca-file", caFile],
      { cwd: root },
    );
    const kubeconfig = path.join(dir, `kubeconfig-${t.name}`);
    writeFileSync(kubeconfig, stdout);
    kubeconfigs.set(t, kubeconfig);
  }
  const times = new Map<Target, number[]>(targets.map((t) => [t, []]));
  const workerCpus = new Map<Target, number[]>(targets.map((t) => [t, []]));
  const kubectlCpus = new Map<Target, number[]>(targets.map((t) => [t, []]));
  const rows: string[][] = [];
  for (const [i, [label, args, hubOnly]] of steps.entries()) {
    if (STEPS && !STEPS.has(i + 1)) continue;
    const on = hubOnly ? targets.slice(0, 1) : targets;
    for (const t of on) {
      const load = loadavg()[0]!;
      log(`${t.name}: ${label}: ${OBJECTS} objects, load ${load.toFixed(2)}`);
      const after = await t.around?.(i);
      const verbose = REQUEST_TIMES ? ["-v=6"] : [];
      const [worker0, kubectl0] = [cpuMs(t.pid), cpuMs("children")];
      const t0 = performance.now();
      const { stdout: out, stderr } = await run("kubectl", ["--kubeconfig", kubeconfigs.get(t)!, ...verbose, ...args], {
        cwd: dir,
        maxBuffer: 64 * 1024 * 1024,
      });
      const s = (performance.now() - t0) / 1000;
      const [workerCpu, kubectlCpu] = [cpuMs(t.pid) - worker0, cpuMs("children") - kubectl0];
      times.get(t)!.push(s);
      workerCpus.get(t)!.push(workerCpu);
      kubectlCpus.get(t)!.push(kubectlCpu);
      const extra = (await after?.()) ?? "";
      const objects = out.trim().split("\n").length - 5;
      const requests = REQUEST_TIMES
        ? requestTimes(stderr)
            .map((r) => `${r.n} ${r.method} ${r.ms} ms (median ${r.median})`)
            .join(", ")
        : "";
      rows.push([
        label,
        t.name,
        String(objects),
        `${s.toFixed(2)} s`,
        `${((s * 1000) / OBJECTS).toFixed(1)} ms`,
        `${(workerCpu / OBJECTS).toFixed(2)} ms`,
        `${(kubectlCpu / OBJECTS).toFixed(2)} ms`,
        `${((workerCpu + kubectlCpu) / OBJECTS).toFixed(2)} ms`,
        load.toFixed(1),
        [requests, extra].filter(Boolean).join("; "),
      ]);
    }
    // Each other Worker beside the hub, in the same minutes: the ratio of each figure (wall time,
    // the Worker's CPU, kubectl's, both together), and the hub's excess per object.
    for (const other of on.slice(1)) {
      const last = (m: Map<Target, number[]>) => [m.get(targets[0]!)!.at(-1)!, m.get(other)!.at(-1)!] as const;
      const [[a, b], [wa, wb], [ka, kb]] = [last(times), last(workerCpus), last(kubectlCpus)];
      const ratio = (x: number, y: number) => (x / y).toFixed(2);
      rows.push([
        label,
        `ratio ${targets[0]!.name}/${other.name}`,
        "",
        ratio(a, b),
        `+${(((a - b) * 1000) / OBJECTS).toFixed(1)} ms`,
        ratio(wa, wb),
        ratio(ka, kb),
        ratio(wa + ka, wb + kb),
        "",
        "",
      ]);
    }
  }
  return rows;
}

/**
 * The D1 calls of the metered hub since the last reset, per object, most first, as table rows
 * (`BENCH_TRACE_SQL=1`): batches are counted once as `CALL batch`, their statements beside.
 */
function traceRows(label: string, m: MeterCounts): string[][] {
  return Object.entries(m.statements ?? {})
    .filter(([k]) => k.startsWith("CALL "))
    .sort(([, a], [, b]) => b.runs - a.runs)
    .slice(0, 15)
    .map(([k, t]) => [label, k.slice(5, 300), (t.runs / OBJECTS).toFixed(2)]);
}

/** The counts of the metered hub (bench/meter/worker.ts) per object, since the last reset. */
function meterLine(m: MeterCounts): string {
  const per = (n: number) => (n / OBJECTS).toFixed(2);
  const objects = Object.values(m.doRequests).reduce((a, b) => a + b, 0);
  return `per object: ${per(m.workerRequests)} Worker requests, ${per(m.d1Calls)} D1 calls (${per(m.d1Statements)} statements, ${(m.d1Ms / OBJECTS).toFixed(2)} ms), ${per(objects)} DO requests`;
}

async function applyFigures(): Promise<string[][]> {
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-bench-kinds-"));
  const inspectorPort = PROFILE ? await freePort() : 0;
  const wranglerArgs = [
    ...(METER ? ["--config", "bench/meter/wrangler.toml"] : []),
    ...(TRACE_SQL ? ["--var", "BENCH_TRACE_SQL:1"] : []),
    ...(PROFILE ? ["--inspector-port", String(inspectorPort)] : []),
  ];
  const hub = await startHub({ https: true, logRequests: LOG_REQUESTS, ...(wranglerArgs.length > 0 ? { wranglerArgs } : {}) });
  const fwd = await forwarder(hub);
  const tls = path.join(hub.stateDir, "tls");
  const noop = NOOP
    ? await startNoopWorker({
        logRequests: LOG_REQUESTS,
        tls: { key: path.join(tls, "server.key"), cert: path.join(tls, "server.crt"), ca: hub.caFile! },
        vars: { BENCH_FORWARD_URL: fwd.url },
      })
    : undefined;
  const floor = FLOOR
    ? await startNoopWorker({
        logRequests: LOG_REQUESTS,
        tls: { key: path.join(tls, "server.key"), cert: path.join(tls, "server.crt"), ca: hub.caFile! },
        vars: { BENCH_FORWARD_URL: fwd.url, BENCH_FLOOR: "1" },
      })
    : undefined;
  try {
    const file = path.join(dir, "objects.yaml");
    writeFileSync(file, manifests(OBJECTS, "bench"));
    const fresh = path.join(dir, "objects-ssa.yaml");
    writeFileSync(fresh, manifests(OBJECTS, "bench-ssa"));
    const steps: Step[] = [
      ["kubectl apply -f (client-side: GET + POST each)", ["apply", "-f", file]],
      ["kubectl apply -f again, nothing changed (GET each)", ["apply", "-f", file]],
      ["kubectl apply --server-side -f, new objects (one PATCH each)", ["apply", "--server-side", "-f", fresh]],
      // kubectl's first server-side apply of objects it applied client-side migrates their
      // managed fields (kubectl apply.go: the apply, `saveLastApplyAnnotationIfNecessary`,
      // `migrateToSSAIfNecessary`'s JSON patch, the apply again): 4 PATCHes each, against a
      // kube-apiserver as against the hub. The no-op Worker keeps no managed fields: it would see one.
      ["kubectl apply --server-side -f over the client-side objects (4 PATCHes each)", ["apply", "--server-side", "--force-conflicts", "-f", file], true],
    ];
    const traced: string[][] = [];
    const hubTarget: Target = {
      name: "hub",
      url: hub.url,
      pid: hub.pid,
      around: async (step) => {
        const meter = METER ? () => admin(hub, "POST", "/__meter") : undefined;
        await meter?.();
        const profiling = PROFILE ? await startProfiling(inspectorPort) : undefined;
        return async () => {
          // A profile the loaded inspector fails to hand over is lost, not the run's figures.
          await profiling?.stop(`${PROFILE}-${step + 1}.cpuprofile`).catch((e: unknown) => log(`no CPU profile of run ${step + 1}: ${String(e)}`));
          if (!METER) return undefined;
          const counts = (await admin(hub, "GET", "/__meter")).body as MeterCounts;
          traced.push(...traceRows(steps[step]![0], counts));
          return meterLine(counts);
        };
      },
    };
    const floorTarget: Target | undefined = floor && {
      name: "floor",
      url: floor.url,
      pid: floor.pid,
      // The floor's own counts (bench/noop/floor.ts): its D1 calls and rows per object.
      around: async () => {
        const counts = (method: string) => hubFetch({ url: floor.url, caFile: hub.caFile }, method, "/__floor");
        await counts("POST");
        return async () => {
          const c = JSON.parse((await counts("GET")).text) as { d1Calls: number; d1RowsRead: number; d1RowsWritten: number };
          const per = (n: number) => (n / OBJECTS).toFixed(2);
          return `per object: ${per(c.d1Calls)} D1 calls, ${per(c.d1RowsRead)} rows read, ${per(c.d1RowsWritten)} rows written`;
        };
      },
    };
    const rows = await runSteps(
      [hubTarget, ...(floorTarget ? [floorTarget] : []), ...(noop ? [{ name: "no-op Worker", url: noop.url, pid: noop.pid }] : [])],
      hub.caFile!,
      hub.adminToken,
      file,
      dir,
      steps,
    );
    if (TRACE_SQL) printTable("D1 calls per object (the 15 most run per run)", ["run", "call", "per object"], traced);
    return rows;
  } finally {
    await floor?.stop();
    await noop?.stop();
    fwd.close();
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
  printTable(
    `kubectl apply of ${OBJECTS} objects to the hub, the platform floor and the no-op Worker (wrangler dev, HTTPS)`,
    ["run", "Worker", "objects", "wall time", "per object", "Worker CPU per object", "kubectl CPU per object", "both", "load", "detail"],
    await applyFigures(),
  );
