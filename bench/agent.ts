/**
 * Agent footprint benchmark (issue 16): starts a real hub (`wrangler dev`), a simulated member
 * cluster as its own process (so the figures are the agent's alone) and the bundled agent
 * against it as the container image runs it (the Node flags of agent/Containerfile's ENTRYPOINT
 * and its ENV) on its default transport (`ws`: one WebSocket to the hub, checked connected before
 * the window), twice: idle with no works, then with BENCH_WORKS
 * ManifestWorks of BENCH_MANIFESTS ConfigMaps each. For each run it prints the time from
 * process start to the ManagedCluster Available, RSS (steady: the mean over the idle window;
 * peak: the kernel's high-water mark VmHWM), the V8 heap in use (from a Node diagnostic report,
 * taken after the window) and the CPU the agent used over the idle window, in % of one core.
 * Then it times `flotilla get clusters` end to end, and prints the size of the bundle and, when
 * docker or podman is on the PATH, of the image.
 *
 *   BENCH_WORKS         works in the second run (default 10)
 *   BENCH_POLICIES      replicated Policies (each a ConfigurationPolicy enforcing a musthave
 *                       Namespace) in a third run, measured once all are Compliant: the agent's
 *                       policy controller is loaded then (a dynamic import) (default 10; 0: no run)
 *   BENCH_MANIFESTS     ConfigMaps per work (default 100)
 *   BENCH_IDLE_SECONDS  length of each idle window in seconds (default 30)
 *   BENCH_CLI_RUNS      `flotilla get clusters` runs (default 10)
 *   BENCH_TRANSPORT     the agent's `--transport`: `ws` (default) or `poll`
 *   BENCH_ADDONS        how many of those works are add-ons' deploy works (OCM's addon-name label,
 *                       health check mode Lease), which load the agent's add-on code (default 0)
 *   BENCH_VERBOSE       set: the agent's log lines go to stderr
 */
import { execFile, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { agentImage } from "../scripts/agent-image.ts";
import { admin, createBootstrapToken, startHub, type Hub } from "../scripts/hub-process.ts";
import { procStat } from "../scripts/proc.mjs";
import { printTable } from "./table.ts";
import { replicatedPolicy } from "./objects.ts";
import { startSim } from "./sim-process.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const WORKS = Number(process.env.BENCH_WORKS ?? 10);
const POLICIES = Number(process.env.BENCH_POLICIES ?? 10);
const MANIFESTS = Number(process.env.BENCH_MANIFESTS ?? 100);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 30);
const CLI_RUNS = Number(process.env.BENCH_CLI_RUNS ?? 10);
const TRANSPORT = process.env.BENCH_TRANSPORT ?? "ws";
const ADDONS = Number(process.env.BENCH_ADDONS ?? 0);
if (TRANSPORT !== "ws" && TRANSPORT !== "poll") throw new Error(`BENCH_TRANSPORT must be ws or poll, not ${TRANSPORT}`);
const MC = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
const MiB = 1024 * 1024;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How the image runs the agent: the Node flags of its ENTRYPOINT and its ENV. */
function imageRuntime(): { flags: string[]; env: Record<string, string> } {
  const image = agentImage();
  return { flags: image.entrypoint.slice(1, -1), env: image.env };
}

/** RSS and its high-water mark of a process, in bytes, from /proc. */
function memory(pid: number): { rss: number; hwm: number } {
  const s = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(s)?.[1] ?? NaN) * 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

/** User + system CPU time of a process so far, in seconds. */
function cpuSeconds(pid: number): number {
  const stat = procStat(pid);
  if (!stat) throw new Error(`process ${pid} has ended`);
  return stat.cpuMs / 1000;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const condition = (obj: any, type: string): string | undefined => obj?.status?.conditions?.find((c: { type: string }) => c.type === type)?.status;

function manifestWork(cluster: string, i: number): unknown {
  return {
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: {
      name: `bench-${i}`,
      namespace: cluster,
      ...(i < ADDONS
        ? {
            labels: { "open-cluster-management.io/addon-name": `bench-addon-${i}` },
            annotations: { "addon.flotilla.dev/install-namespace": "default", "addon.flotilla.dev/health-check-mode": "Lease" },
          }
        : {}),
    },
    spec: {
      workload: {
        manifests: Array.from({ length: MANIFESTS }, (_, j) => ({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: `bench-${i}-${j}`, namespace: "default", labels: { app: "bench", work: String(i) } },
          data: { index: String(j), payload: `value-${i}-${j}-`.padEnd(200, "x") },
        })),
      },
    },
  };
}

interface RunResult {
  label: string;
  startToAvailableMs: number;
  applyMs: number | undefined;
  steadyRss: number;
  peakRss: number;
  heapUsed: number;
  idleCpuPct: number;
}

/** The V8 heap in use of a Node process, from a diagnostic report it writes on SIGUSR2. */
async function heapUsed(pid: number, reportDir: string): Promise<number> {
  const before = new Set(fs.readdirSync(reportDir));
  process.kill(pid, "SIGUSR2");
  for (let i = 0; i < 200; i++) {
    await sleep(50);
    const file = fs.readdirSync(reportDir).find((f) => !before.has(f) && f.endsWith(".json"));
    if (!file) continue;
    try {
      const report = JSON.parse(fs.readFileSync(path.join(reportDir, file), "utf8")) as { javascriptHeap: { usedMemory: number } };
      return report.javascriptHeap.usedMemory;
    } catch {
      // still being written
    }
  }
  throw new Error("the agent wrote no diagnostic report");
}

async function run(hub: Hub, label: string, cluster: string, works: number, policies = 0): Promise<RunResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotilla-bench-agent-"));
  const sim = await startSim(dir);
  const token = await createBootstrapToken(hub, { autoApprove: true });
  const reportDir = path.join(dir, "reports");
  fs.mkdirSync(reportDir);
  const t0 = performance.now();
  const image = imageRuntime();
  const agent = spawn(
    process.execPath,
    [
      ...image.flags,
      `--report-on-signal`,
      `--report-signal=SIGUSR2`,
      `--report-directory=${reportDir}`,
      path.join(root, "agent/bin/flotilla-agent.js"),
      "--hub-url",
      hub.url,
      "--cluster-name",
      cluster,
      "--bootstrap-token",
      token,
      "--kubeconfig",
      sim.kubeconfig,
      "--transport",
      TRANSPORT,
    ],
    { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...image.env } },
  );
  const pid = agent.pid!;
  let log = "";
  agent.stderr!.on("data", (d: Buffer) => {
    log += d.toString();
    if (process.env.BENCH_VERBOSE) process.stderr.write(d);
  });
  try {
    let startToAvailableMs = NaN;
    for (;;) {
      const r = await admin(hub, "GET", `${MC}/${cluster}`);
      if (r.status === 200 && condition(r.body, "ManagedClusterConditionAvailable") === "True") {
        startToAvailableMs = performance.now() - t0;
        break;
      }
      if (agent.exitCode !== null) throw new Error(`the agent exited with ${agent.exitCode}:\n${log}`);
      if (performance.now() - t0 > 60_000) throw new Error("the cluster did not become Available within 60 s");
      await sleep(10);
    }
    let applyMs: number | undefined;
    if (works > 0) {
      const t1 = performance.now();
      for (let i = 0; i < works; i++) {
        const r = await admin(hub, "POST", `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks`, manifestWork(cluster, i));
        if (r.status !== 201) throw new Error(`creating work ${i}: ${r.status} ${JSON.stringify(r.body)}`);
      }
      for (;;) {
        const r = await admin(hub, "GET", `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks`);
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        const items = ((r.body as any)?.items ?? []) as unknown[];
        if (items.length === works && items.every((w) => condition(w, "Applied") === "True" && condition(w, "Available") === "True")) break;
        if (performance.now() - t1 > 300_000) throw new Error("the works were not Applied and Available within 300 s");
        await sleep(100);
      }
      applyMs = performance.now() - t1;
    }
    if (policies > 0) {
      const t1 = performance.now();
      const base = `/apis/policy.open-cluster-management.io/v1/namespaces/${cluster}/policies`;
      for (let i = 0; i < policies; i++) {
        const r = await admin(hub, "POST", base, replicatedPolicy(cluster, i, "bench"));
        if (r.status !== 201) throw new Error(`creating policy ${i}: ${r.status} ${JSON.stringify(r.body)}`);
      }
      for (;;) {
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        const items = (((await admin(hub, "GET", base)).body as any)?.items ?? []) as { status?: { compliant?: string } }[];
        if (items.length === policies && items.every((p) => p.status?.compliant === "Compliant")) break;
        if (performance.now() - t1 > 120_000) throw new Error(`the policies were not Compliant within 120 s:\n${log}`);
        await sleep(100);
      }
      applyMs = performance.now() - t1;
    }
    // On ws, the window measures an agent holding its connection (not one fallen back to poll).
    const connected = /connected to the hub over WebSocket/;
    if (TRANSPORT === "ws") {
      for (let i = 0; i < 200 && !connected.test(log); i++) await sleep(50);
      if (!connected.test(log) || /using the poll transport/.test(log)) throw new Error(`the agent is not connected over WebSocket:\n${log}`);
    }
    // Settle (status reports, first resyncs), then the idle window.
    await sleep(5_000);
    const samples: number[] = [];
    const cpu0 = cpuSeconds(pid);
    const w0 = performance.now();
    while (performance.now() - w0 < IDLE_SECONDS * 1000) {
      samples.push(memory(pid).rss);
      await sleep(250);
    }
    const idleCpuPct = ((cpuSeconds(pid) - cpu0) / ((performance.now() - w0) / 1000)) * 100;
    const peakRss = memory(pid).hwm;
    const heap = await heapUsed(pid, reportDir);
    return {
      label,
      startToAvailableMs,
      applyMs,
      steadyRss: samples.reduce((a, b) => a + b, 0) / samples.length,
      peakRss,
      heapUsed: heap,
      idleCpuPct,
    };
  } finally {
    agent.kill("SIGTERM");
    await new Promise((r) => (agent.exitCode !== null ? r(null) : agent.once("exit", r)));
    sim.child.kill("SIGTERM");
    await new Promise((r) => (sim.child.exitCode !== null ? r(null) : sim.child.once("exit", r)));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function cliTimes(hub: Hub): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < CLI_RUNS; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      execFile(process.execPath, [path.join(root, "agent/bin/flotilla.js"), "get", "clusters", "--hub-url", hub.url, "--token", hub.adminToken], (err) =>
        err ? reject(err) : resolve(),
      );
    });
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b);
}

function imageSize(): string {
  for (const tool of ["docker", "podman"]) {
    if (spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0) continue;
    const tag = "flotilla-agent:bench";
    const b = spawnSync(tool, ["build", "-q", "-f", "agent/Containerfile", "-t", tag, "."], { cwd: root, encoding: "utf8" });
    if (b.status !== 0) return `not measured: ${tool} build failed (${b.stderr.trim().split("\n").at(-1)?.slice(0, 160)})`;
    const s = spawnSync(tool, ["image", "inspect", tag, "--format", "{{.Size}}"], { encoding: "utf8" });
    return `${(Number(s.stdout.trim()) / MiB).toFixed(1)} MiB (${tool})`;
  }
  return "not measured: no docker or podman on this machine";
}

function bundleSize(): number {
  const dir = path.join(root, "dist/agent");
  const files = [
    "flotilla-agent.mjs",
    ...fs
      .readdirSync(path.join(dir, "chunks"))
      .filter((f) => f.endsWith(".mjs"))
      .map((f) => `chunks/${f}`),
  ];
  return files.reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
}

const hub = await startHub();
try {
  const results = [await run(hub, "idle, no works", "bench-idle", 0)];
  if (WORKS > 0) results.push(await run(hub, `${WORKS} works x ${MANIFESTS} ConfigMaps`, "bench-works", WORKS));
  if (POLICIES > 0) results.push(await run(hub, `${POLICIES} compliant policies (policy controller loaded)`, "bench-policies", 0, POLICIES));
  const image = imageRuntime();
  printTable(
    `flotilla-agent, --transport ${TRANSPORT} (${process.version}; as the image runs it: ${[...Object.entries(image.env).map(([k, v]) => `${k}=${v}`), "node", ...image.flags].join(" ")}; idle window ${IDLE_SECONDS} s)`,
    ["run", "start to Available ms", "works applied (policies compliant) ms", "RSS steady MiB", "RSS peak MiB", "heap used MiB", "idle CPU % of a core"],
    results.map((r) => [
      r.label,
      r.startToAvailableMs.toFixed(0),
      r.applyMs === undefined ? "-" : r.applyMs.toFixed(0),
      (r.steadyRss / MiB).toFixed(1),
      (r.peakRss / MiB).toFixed(1),
      (r.heapUsed / MiB).toFixed(1),
      r.idleCpuPct.toFixed(2),
    ]),
  );
  const cli = await cliTimes(hub);
  console.log(
    `\nflotilla get clusters, end to end over ${cli.length} runs: p50 ${cli[Math.floor(cli.length / 2)]!.toFixed(0)} ms, max ${cli.at(-1)!.toFixed(0)} ms`,
  );
  console.log(`agent bundle (dist/agent/flotilla-agent.mjs and its chunks): ${(bundleSize() / 1024).toFixed(0)} KiB`);
  console.log(`image: ${imageSize()}`);
} finally {
  await hub.stop();
}
