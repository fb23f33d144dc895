/**
 * The requests of a client-side `kubectl apply` of a new object, one kind at a time (issue 42):
 * where the hub's CPU goes per request, process by process, beside the no-op Worker's.
 *
 * For each new object kubectl makes three requests, one after the other (`kubectl -v=6`): a GET
 * of the object (404), a GET of its namespace (200) and the POST. `npm run bench:kinds` times the
 * whole apply; this benchmark sends BENCH_REQUESTS (default 300) requests of each kind in a row,
 * over one keep-alive HTTPS connection with the admin token (after 40 of each to warm up), and
 * reports per request:
 *
 * - the median latency, milliseconds, as this process timed it;
 * - the CPU time, milliseconds, of each of the Worker's processes, from /proc (user + system):
 *   `npm start`'s supervisor (the hub only), wrangler (Node), wrangler's proxy workerd (TLS and
 *   the proxy Worker, in front of the Worker) and the Worker's own workerd (the Worker's isolate,
 *   and on the hub the local D1: its entry Worker, its object and SQLite, in the same process);
 * - with BENCH_CPU_PROFILE=<prefix>, the hub isolate's busy time per request from its CPU profile
 *   (bench/cpu-profile.ts; `<prefix>-<kind>.cpuprofile`, for `npm run profile:top`): samples of
 *   0.5 ms, each counted for at most 1 ms, so that a loaded machine's descheduled stretches do
 *   not count as the isolate's work (they still inflate it: compare figures of one run).
 *
 * The no-op Worker (bench/noop, same TLS setup) answers the GETs 404 and the POSTs 201 echoing the
 * body: its figures are what `wrangler dev` and HTTPS cost on this machine. The platform floor
 * (the no-op Worker with `BENCH_FLOOR=1`, bench/noop/floor.ts) answers the same requests from its
 * D1 with the least a store must do: a GET is one read of the object's row by key, a POST one
 * statement inserting the object's row (the body as sent) guarded by its namespace's existence;
 * its figures are what any hub that stores the objects spends on this machine, and its D1 calls
 * per request are printed (2026-11-30, load 8-14: the floor's workerd 1.7-2.1 ms per GET and
 * 2.5-2.8 ms per Deployment POST, the hub's 3.8-4.8 and 6.4-7.1 ms, the no-op's 0.8-1.1 ms;
 * docs/scale.md "The platform floor").
 *
 *   BENCH_REQUESTS     requests of each kind (default 300)
 *   BENCH_NO_NOOP      set: the hub only (neither the no-op Worker nor the floor)
 *   BENCH_NO_FLOOR     set: no platform floor
 *   BENCH_CPU_PROFILE  a file prefix: the hub isolate's CPU profile of each kind
 *   BENCH_LOG_REQUESTS=1  every Worker prints a line per request (`npm start` with
 *                      `FLOTILLA_LOG_REQUESTS=1`); default none, as `npm start` runs the hub
 */
import { readFileSync } from "node:fs";
import { Agent, request } from "node:https";
import { loadavg } from "node:os";
import path from "node:path";
import { freePort, hubFetch, startHub } from "../scripts/hub-process.ts";
import { descendants, procStat } from "../scripts/proc.mjs";
import { startProfiling } from "./cpu-profile.ts";
import { startNoopWorker } from "./noop/start.ts";
import { printTable } from "./table.ts";
import { benchDeployment } from "./deployment.ts";

const N = Number(process.env.BENCH_REQUESTS ?? 300);
const WARM_UP = 40;
const NOOP = !process.env.BENCH_NO_NOOP;
const FLOOR = NOOP && !process.env.BENCH_NO_FLOOR;
const PROFILE = process.env.BENCH_CPU_PROFILE;
const LOG_REQUESTS = process.env.BENCH_LOG_REQUESTS === "1";
const NAMESPACE = "bench-apply";
const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);

/** The processes whose CPU is reported, in the table's order, and how each is told from its command line. */
const PROCESSES: [name: string, test: (cmd: string) => boolean][] = [
  ["the Worker's workerd", (cmd) => /workerd/.test(cmd) && /--inspector-addr/.test(cmd)],
  ["proxy workerd", (cmd) => /workerd/.test(cmd) && !/--inspector-addr/.test(cmd)],
  ["wrangler", (cmd) => /wrangler/.test(cmd) && !/workerd|esbuild/.test(cmd)],
  ["supervisor", (cmd) => /scripts\/start\.mjs/.test(cmd)],
  ["esbuild", (cmd) => /esbuild/.test(cmd)],
];

/** CPU time so far (milliseconds) of the process tree below `pid`, summed by {@link PROCESSES} name. */
function cpuByProcess(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of [pid, ...descendants(pid)]) {
    let cmd: string;
    try {
      cmd = readFileSync(`/proc/${p}/cmdline`, "utf8").replace(/\0/g, " ");
    } catch {
      continue;
    }
    const name = PROCESSES.find(([, test]) => test(cmd))?.[0];
    if (name) out.set(name, (out.get(name) ?? 0) + (procStat(p)?.cpuMs ?? 0));
  }
  return out;
}

/** A client of one Worker: one request at a time over one keep-alive HTTPS connection; resolves its latency in milliseconds. */
function client(url: string, ca: Buffer, token: string): (method: string, path: string, body?: unknown) => Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca });
  const headers = {
    authorization: `Bearer ${token}`,
    accept: "application/json",
    "content-type": "application/json",
    "user-agent": "kubectl/v1.32.0 (linux/amd64)",
  };
  return (method, p, body) =>
    new Promise((resolve, reject) => {
      const t0 = performance.now();
      const req = request(`${url}${p}`, { method, agent, headers }, (res) => {
        res.resume();
        res.on("end", () => resolve(performance.now() - t0));
      });
      req.on("error", reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
}

/** What kubectl's client-side apply POSTs for a new ConfigMap (its last-applied annotation included). */
const configMap = (name: string) => {
  const applied = { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: NAMESPACE }, data: { "app.properties": "mode=production\n" } };
  return { ...applied, metadata: { ...applied.metadata, annotations: { "kubectl.kubernetes.io/last-applied-configuration": `${JSON.stringify(applied)}\n` } } };
};

const CREATE = "fieldManager=kubectl-client-side-apply&fieldValidation=Strict";

/** The request kinds: a key (of profile files), a label and the request of index `i` (each name new, so that a POST creates). */
const KINDS: [key: string, label: string, send: (go: ReturnType<typeof client>, i: number) => Promise<number>][] = [
  ["get-absent", "GET of an absent ConfigMap (404)", (go, i) => go("GET", `/api/v1/namespaces/${NAMESPACE}/configmaps/absent-${i}`)],
  ["get-namespace", "GET of its Namespace (200)", (go) => go("GET", `/api/v1/namespaces/${NAMESPACE}`)],
  ["post-configmap", "POST of a ConfigMap (201)", (go, i) => go("POST", `/api/v1/namespaces/${NAMESPACE}/configmaps?${CREATE}`, configMap(`cm-${i}`))],
  [
    "post-deployment",
    "POST of a Deployment (201)",
    (go, i) => go("POST", `/apis/apps/v1/namespaces/${NAMESPACE}/deployments?${CREATE}`, benchDeployment(`web-${i}`, NAMESPACE)),
  ],
];

/**
 * Runs every request kind against one Worker (`pid` its wrangler process), returning the table's
 * rows. `d1Calls`: reads the Worker's own count of D1 calls (the floor's), answering it at the
 * row's end per request.
 */
async function measure(
  worker: string,
  go: ReturnType<typeof client>,
  pid: number,
  inspectorPort?: number,
  d1Calls?: () => Promise<number>,
): Promise<string[][]> {
  for (let i = 0; i < WARM_UP; i++) for (const [, , send] of KINDS) await send(go, 1_000_000 + i);
  const rows: string[][] = [];
  for (const [key, label, send] of KINDS) {
    log(`${worker}: ${N} × ${label}, load ${loadavg()[0]!.toFixed(2)}`);
    const load = loadavg()[0]!;
    const profiling = inspectorPort ? await startProfiling(inspectorPort) : undefined;
    const calls0 = await d1Calls?.();
    const before = cpuByProcess(pid);
    const latencies: number[] = [];
    for (let i = 0; i < N; i++) latencies.push(await send(go, i));
    const after = cpuByProcess(pid);
    const calls = calls0 === undefined ? "" : (((await d1Calls!()) - calls0) / N).toFixed(2);
    let busy = "";
    if (profiling) {
      const file = `${PROFILE}-${key}.cpuprofile`;
      await profiling.stop(file);
      busy = `${(isolateBusyUs(file) / N / 1000).toFixed(2)} ms`;
    }
    latencies.sort((a, b) => a - b);
    rows.push([
      label,
      worker,
      `${latencies[N >> 1]!.toFixed(1)} ms`,
      ...PROCESSES.map(([name]) => (after.has(name) ? `${(((after.get(name) ?? 0) - (before.get(name) ?? 0)) / N).toFixed(2)} ms` : "")),
      busy,
      calls,
      load.toFixed(1),
    ]);
  }
  return rows;
}

/** The busy time (microseconds) of a CPU profile: its samples but `(idle)`, each counted for at most 1 ms. */
function isolateBusyUs(file: string): number {
  const profile = JSON.parse(readFileSync(file, "utf8")) as {
    nodes: { id: number; callFrame: { functionName: string } }[];
    samples: number[];
    timeDeltas: number[];
  };
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id));
  let us = 0;
  profile.samples.forEach((s, i) => {
    if (!idle.has(s)) us += Math.min(profile.timeDeltas[i + 1] ?? 0, 1000);
  });
  return us;
}

const inspectorPort = PROFILE ? await freePort() : undefined;
const hub = await startHub({ https: true, logRequests: LOG_REQUESTS, ...(inspectorPort ? { wranglerArgs: ["--inspector-port", String(inspectorPort)] } : {}) });
const tls = path.join(hub.stateDir, "tls");
const tlsFiles = { key: path.join(tls, "server.key"), cert: path.join(tls, "server.crt"), ca: hub.caFile! };
const noop = NOOP ? await startNoopWorker({ logRequests: LOG_REQUESTS, tls: tlsFiles }) : undefined;
const floor = FLOOR ? await startNoopWorker({ logRequests: LOG_REQUESTS, tls: tlsFiles, vars: { BENCH_FLOOR: "1" } }) : undefined;
try {
  const ca = readFileSync(hub.caFile!);
  const namespace = { apiVersion: "v1", kind: "Namespace", metadata: { name: NAMESPACE } };
  const hubClient = client(hub.url, ca, hub.adminToken);
  await hubClient("POST", "/api/v1/namespaces", namespace);
  const rows = await measure("hub", hubClient, hub.pid, inspectorPort);
  if (floor) {
    const floorClient = client(floor.url, ca, hub.adminToken);
    await floorClient("POST", "/api/v1/namespaces", namespace);
    const d1Calls = async () => (JSON.parse((await hubFetch({ url: floor.url, caFile: hub.caFile }, "GET", "/__floor")).text) as { d1Calls: number }).d1Calls;
    rows.push(...(await measure("floor", floorClient, floor.pid, undefined, d1Calls)));
  }
  if (noop) rows.push(...(await measure("no-op Worker", client(noop.url, ca, hub.adminToken), noop.pid)));
  printTable(
    `The requests of a client-side kubectl apply, ${N} of each kind in a row: median latency and CPU per request`,
    ["request", "Worker", "median", ...PROCESSES.map(([name]) => name), "hub isolate busy", "floor's D1 calls", "load"],
    rows,
  );
} finally {
  await floor?.stop();
  await noop?.stop();
  await hub.stop();
}
