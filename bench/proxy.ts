/**
 * The proxy's overhead and cost (docs/proxy.md "Cost and speed", docs/scale.md): a hub under
 * `wrangler dev` with the metered entry (bench/meter/worker.ts), a simulated cluster in its own
 * process, and the bundled agent run as its image runs it (agent/Containerfile's Node flags and
 * ENV, read by scripts/agent-image.ts: the one place they are written).
 *
 * 1. Latency: a proxied `get` through the hub (the Worker, the cluster's object, the agent's
 *    channel, the agent) beside the same `get` sent straight to the simulated cluster,
 *    alternated request by request so that the machine's load weighs on both alike; the hub's
 *    own `/version` beside them is the floor of any request through `wrangler dev`.
 * 2. Cost: what the meter counts per proxied `get` (Worker requests, Durable Object requests,
 *    WebSocket messages into the cluster's object, D1 calls and rows) and the hub's workerd CPU
 *    (user + system, /proc), and the same per MiB of a streamed `logs -f`.
 * 3. The agent's memory: its RSS (/proc, sampled every 100 ms) idle, then while a `logs -f`
 *    streams `BENCH_LOG_MIB` MiB through the hub and 20 clients run gets in a loop; and, during
 *    that load, how long a new ManifestWork takes to reach Applied (the channel's other traffic).
 * 4. 100 concurrent proxied lists of 500 ConfigMaps, each retried after its `Retry-After` when
 *    the cluster's 32 streams are taken (as client-go retries a 429).
 *
 *   BENCH_GETS       sequential gets of each kind (default 200)
 *   BENCH_LISTS      concurrent lists (default 100)
 *   BENCH_OBJECTS    ConfigMaps in the listed namespace (default 500)
 *   BENCH_LOG_MIB    MiB streamed under load (default 50)
 *   BENCH_GETTERS    concurrent getters under load (default 20)
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { admin, createBootstrapToken, startHub, workerdPids, type Hub } from "../scripts/hub-process.ts";
import { agentImage } from "../scripts/agent-image.ts";
import { procStat } from "../scripts/proc.mjs";
import { meter, settledMeter as settle } from "./meter/client.ts";
import { startSim } from "./sim-process.ts";
import { printTable } from "./table.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const GETS = Number(process.env.BENCH_GETS ?? 200);
const LISTS = Number(process.env.BENCH_LISTS ?? 100);
const OBJECTS = Number(process.env.BENCH_OBJECTS ?? 500);
const LOG_MIB = Number(process.env.BENCH_LOG_MIB ?? 50);
const GETTERS = Number(process.env.BENCH_GETTERS ?? 20);
const MC = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
const MIB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

async function timed(url: string, headers: Record<string, string>): Promise<{ ms: number; status: number; bytes: number }> {
  const t0 = performance.now();
  const res = await fetch(url, { headers });
  const bytes = (await res.arrayBuffer()).byteLength;
  return { ms: performance.now() - t0, status: res.status, bytes };
}

/** A process's RSS and its high-water mark, in MiB (/proc/<pid>/status). */
function memory(pid: number): { rss: number; hwm: number } {
  const s = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(s)?.[1] ?? NaN) / 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

/** Samples `pid`'s RSS every 100 ms until stopped: the peak and the last sample, in MiB. */
function sampleRss(pid: number): { stop: () => { peak: number; last: number; samples: number } } {
  let peak = 0;
  let last = 0;
  let samples = 0;
  const timer = setInterval(() => {
    last = memory(pid).rss;
    peak = Math.max(peak, last);
    samples++;
  }, 100);
  return {
    stop: () => {
      clearInterval(timer);
      return { peak, last, samples };
    },
  };
}

const workerdCpuMs = (hub: Hub) => workerdPids(hub).reduce((ms, pid) => ms + (procStat(pid)?.cpuMs ?? 0), 0);

/** What `op` cost the hub, divided by `per`: the meter's counts (less its own reads) and workerd's CPU. */
async function cost(hub: Hub, per: number, op: () => Promise<void>): Promise<string[]> {
  await settle(hub);
  await meter(hub, true);
  const cpu0 = workerdCpuMs(hub);
  await op();
  const c = await settle(hub);
  const cpu = workerdCpuMs(hub) - cpu0;
  const f = (n: number) => (n / per).toFixed(n / per >= 10 ? 1 : 2);
  return [f(c.workerRequests), f(c.doRequests.cluster), f(c.doMessages.cluster), f(c.d1Calls), f(c.d1RowsWritten), f(cpu)];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const condition = (obj: any, type: string): string | undefined => obj?.status?.conditions?.find((c: { type: string }) => c.type === type)?.status;

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotilla-bench-proxy-"));
  const hub = await startHub({ wranglerArgs: ["--config", "bench/meter/wrangler.toml"] });
  const sim = await startSim(dir);
  const simUrl = /server: (\S+)/.exec(fs.readFileSync(sim.kubeconfig, "utf8"))![1]!.replace(/\/+$/, "");
  const token = await createBootstrapToken(hub);
  const image = agentImage();
  const flags = image.entrypoint.slice(1, -1);
  const agent = spawn(
    process.execPath,
    [
      ...flags,
      path.join(root, "dist/agent/flotilla-agent.mjs"),
      "--hub-url",
      hub.url,
      "--cluster-name",
      "bench1",
      "--bootstrap-token",
      token,
      "--kubeconfig",
      sim.kubeconfig,
    ],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...image.env, FLOTILLA_BOOTSTRAP_TOKEN: "" } },
  );
  const pid = agent.pid!;
  let out = "";
  agent.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  agent.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  try {
    for (let i = 0; !(await admin(hub, "GET", `${MC}/bench1`)).status.toString().startsWith("2"); i++) {
      if (i > 600) throw new Error(`the agent did not register:\n${out}`);
      await sleep(100);
    }
    await admin(hub, "PATCH", `${MC}/bench1`, { spec: { hubAcceptsClient: true } }, "application/merge-patch+json");
    for (let i = 0; !out.includes("connected to the hub over WebSocket"); i++) {
      if (i > 600) throw new Error(`the agent did not connect:\n${out}`);
      await sleep(100);
    }
    const auth = { authorization: `Bearer ${hub.adminToken}` };
    const proxied = `${hub.url}/clusters/bench1/proxy`;

    // The agent idle: connected, no proxy use yet.
    await sleep(3000);
    const idle = sampleRss(pid);
    await sleep(10_000);
    const idleRss = idle.stop();

    // Warm both paths.
    for (let i = 0; i < 10; i++) {
      await timed(`${simUrl}/api/v1/namespaces/default`, {});
      await timed(`${proxied}/api/v1/namespaces/default`, auth);
      await timed(`${hub.url}/version`, {});
    }
    const direct: number[] = [];
    const through: number[] = [];
    const version: number[] = [];
    for (let i = 0; i < GETS; i++) {
      const a = await timed(`${simUrl}/api/v1/namespaces/default`, {});
      const b = await timed(`${proxied}/api/v1/namespaces/default`, auth);
      const v = await timed(`${hub.url}/version`, {});
      if (a.status !== 200 || b.status !== 200 || v.status !== 200) throw new Error(`get answered ${a.status} / ${b.status} / ${v.status}`);
      direct.push(a.ms);
      through.push(b.ms);
      version.push(v.ms);
    }
    const row = (label: string, xs: number[]) => [label, pct(xs, 50).toFixed(1), pct(xs, 90).toFixed(1), pct(xs, 99).toFixed(1)];
    printTable(
      `get /api/v1/namespaces/default, ${GETS} each, alternated (ms)`,
      ["path", "p50", "p90", "p99"],
      [
        row("direct to the simulated cluster", direct),
        row("through the hub's proxy", through),
        ["overhead (p50, p99 difference)", (pct(through, 50) - pct(direct, 50)).toFixed(1), "", (pct(through, 99) - pct(direct, 99)).toFixed(1)],
        row("the hub's /version (wrangler dev's floor)", version),
      ],
    );

    // The cost per proxied get and per streamed MiB, as the meter counts it.
    const costGets = 50;
    const perGet = await cost(hub, costGets, async () => {
      for (let i = 0; i < costGets; i++) await timed(`${proxied}/api/v1/namespaces/default`, auth);
    });
    const createPod = async (name: string, bytes: number) => {
      const res = await fetch(`${simUrl}/api/v1/namespaces/default/pods`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name, annotations: { "sim.flotilla.dev/log-lines": "0", "sim.flotilla.dev/log-follow-bytes": String(bytes) } },
          spec: { containers: [{ name: "app", image: "nginx" }] },
        }),
      });
      if (res.status !== 201) throw new Error(`pod ${name}: ${res.status} ${await res.text()}`);
    };
    /** Streams pod `name`'s `logs -f` through the hub until `bytes` came (the log follows on: the client leaves); `onBytes` sees the running total. */
    const follow = async (name: string, bytes: number, onBytes: (n: number) => void = () => undefined): Promise<number> => {
      const abort = new AbortController();
      const res = await fetch(`${proxied}/api/v1/namespaces/default/pods/${name}/log?follow=true`, { headers: auth, signal: abort.signal });
      if (res.status !== 200) throw new Error(`logs -f ${name}: ${res.status} ${await res.text()}`);
      const reader = res.body!.getReader();
      let n = 0;
      while (n < bytes) {
        const { done, value } = await reader.read();
        if (done) break;
        onBytes((n += value.byteLength));
      }
      abort.abort();
      return n;
    };
    const streamMiB = 16;
    await createPod("cost", streamMiB * MIB);
    const perMiB = await cost(hub, streamMiB, async () => {
      const n = await follow("cost", streamMiB * MIB);
      if (n < streamMiB * MIB) throw new Error(`logs -f carried ${n} bytes of ${streamMiB} MiB`);
    });
    printTable(
      "what the hub counts, per proxied get and per MiB of logs -f (metered hub, bench/meter/worker.ts)",
      ["unit", "Worker requests", "DO requests", "WebSocket messages into the object", "D1 calls", "D1 rows written", "workerd CPU ms"],
      [
        [`proxied get (${costGets})`, ...perGet],
        [`MiB of logs -f (${streamMiB} MiB)`, ...perMiB],
      ],
    );

    // The agent under load: logs -f of LOG_MIB MiB, GETTERS clients getting in a loop, and a new work.
    await createPod("flood", LOG_MIB * MIB);
    const load = sampleRss(pid);
    let streamed = 0;
    let done = false;
    let gets = 0;
    const t0 = performance.now();
    const stream = follow("flood", LOG_MIB * MIB, (n) => (streamed = n)).finally(() => (done = true));
    const getters = Array.from({ length: GETTERS }, async () => {
      while (!done) {
        const r = await timed(`${proxied}/api/v1/namespaces/default`, auth);
        if (r.status === 200) gets++;
        else await sleep(100);
      }
    });
    while (streamed < MIB && !done) await sleep(20);
    const work = {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "during-load" },
      spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "during-load", namespace: "default" }, data: { a: "1" } }] } },
    };
    const tw = performance.now();
    const createdAt = Date.now();
    const created = await admin(hub, "POST", "/apis/work.open-cluster-management.io/v1/namespaces/bench1/manifestworks", work);
    if (created.status !== 201) throw new Error(`the work: ${created.status}`);
    let applied = NaN;
    for (let i = 0; i < 1000; i++) {
      const w = await admin(hub, "GET", "/apis/work.open-cluster-management.io/v1/namespaces/bench1/manifestworks/during-load");
      if (condition(w.body, "Applied") === "True") {
        applied = performance.now() - tw;
        break;
      }
      await sleep(20);
    }
    const streamedAtWork = streamed;
    // When the agent had it: its log line (ISO time) "applying work work=during-load".
    const seen = /^(\S+) INFO applying work work=during-load/m.exec(out)?.[1];
    const reached = seen ? Date.parse(seen) - createdAt : NaN;
    const total = await stream;
    await Promise.all(getters);
    const loadWall = performance.now() - t0;
    const loaded = load.stop();
    printTable(
      `the agent's RSS (${flags.join(" ")}; ${Object.entries(image.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(" ")})`,
      ["phase", "RSS peak (MiB)", "RSS last (MiB)", "samples"],
      [
        ["idle, connected (10 s)", idleRss.peak.toFixed(1), idleRss.last.toFixed(1), String(idleRss.samples)],
        [
          `logs -f of ${(total / MIB).toFixed(0)} MiB + ${GETTERS} getters (${gets} gets, ${(loadWall / 1000).toFixed(1)} s)`,
          loaded.peak.toFixed(1),
          loaded.last.toFixed(1),
          String(loaded.samples),
        ],
      ],
    );
    console.log(
      `a new ManifestWork reached the agent ${reached.toFixed(0)} ms and Applied ${applied.toFixed(0)} ms after its create during that load (${(streamedAtWork / MIB).toFixed(1)} MiB streamed by then); VmHWM ${memory(pid).hwm.toFixed(1)} MiB`,
    );

    // 100 concurrent lists of 500 ConfigMaps through the proxy.
    await fetch(`${simUrl}/api/v1/namespaces`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "bench" } }),
    });
    for (let i = 0; i < OBJECTS; i++) {
      await fetch(`${simUrl}/api/v1/namespaces/bench/configmaps`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `cm-${i}` }, data: { value: "x".repeat(200) } }),
      });
    }
    let retried = 0;
    const tl = performance.now();
    const lists = await Promise.all(
      Array.from({ length: LISTS }, async () => {
        for (;;) {
          const res = await fetch(`${proxied}/api/v1/namespaces/bench/configmaps`, { headers: auth });
          if (res.status === 429) {
            retried++;
            await res.arrayBuffer();
            await sleep(Number(res.headers.get("retry-after") ?? "1") * 1000);
            continue;
          }
          const text = await res.text();
          if (res.status !== 200) console.log(`a list answered ${res.status}: ${text.slice(0, 300)}`);
          const body = (res.status === 200 ? JSON.parse(text) : {}) as { items?: unknown[] };
          return { status: res.status, items: body.items?.length ?? 0 };
        }
      }),
    );
    const wall = performance.now() - tl;
    const complete = lists.filter((l) => l.status === 200 && l.items === OBJECTS).length;
    printTable(
      `${LISTS} concurrent proxied lists of ${OBJECTS} ConfigMaps`,
      ["complete", "429s retried", "wall (s)"],
      [[`${complete}/${LISTS}`, String(retried), (wall / 1000).toFixed(1)]],
    );
  } finally {
    if (process.env.BENCH_AGENT_LOG) fs.writeFileSync(process.env.BENCH_AGENT_LOG, out);
    agent.kill("SIGTERM");
    sim.child.kill("SIGTERM");
    await hub.stop();
  }
}

await main();
