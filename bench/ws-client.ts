/**
 * WebSocket client footprint benchmark (issue 28): the agent's RSS while it holds one WebSocket,
 * with Node's built-in WebSocket (undici) and with the `ws` package, against the agent alone.
 * Starts a real hub (`wrangler dev`), a WebSocket echo server (the `ws` package's server, in this process); then, for each variant, the
 * bundled agent as the container image runs it (agent/Containerfile's Node flags and ENV) with a
 * preload (`--import bench/ws-client/<variant>.mjs`) that opens one connection to the echo
 * server and sends an application ping every second, each beside a simulated member cluster
 * of its own, in its own process. Prints, per variant, RSS steady (mean over
 * the idle window) and peak (VmHWM), and the pings the echo server received.
 *
 *   BENCH_IDLE_SECONDS  length of each idle window in seconds (default 20)
 *   BENCH_VARIANTS      comma-separated subset of "none,builtin,ws,agent" (default all four; `agent`: the
 *                       agent on its own ws transport, connected to the hub; the others run `--transport poll`)
 *   BENCH_VERBOSE       set: the agents' log lines go to stderr
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";
import { agentImage } from "../scripts/agent-image.ts";
import { admin, createBootstrapToken, startHub, type Hub } from "../scripts/hub-process.ts";
import { printTable } from "./table.ts";
import { startSim } from "./sim-process.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 20);
const VARIANTS = (process.env.BENCH_VARIANTS ?? "none,builtin,ws,agent").split(",").map((v) => v.trim()) as Variant[];
/**
 * `none`: the agent alone on the poll transport; `builtin`/`ws`: the same with a preload holding
 * one connection with that client; `agent`: the agent on its own ws transport (the default),
 * connected to the hub, no preload.
 */
type Variant = "none" | "builtin" | "ws" | "agent";
const MC = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function memory(pid: number): { rss: number; hwm: number } {
  const s = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(s)?.[1] ?? NaN) * 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

/** A WebSocket echo server; counts the messages it received. */
async function echoServer(): Promise<{ url: string; received: () => number; close: () => Promise<void> }> {
  const wss = new WebSocketServer({
    host: "127.0.0.1",
    port: 0,
    handleProtocols: (protocols) => (protocols.has("flotilla.agent.v1") ? "flotilla.agent.v1" : false),
  });
  let received = 0;
  wss.on("connection", (socket) => {
    socket.on("message", (data) => {
      received++;
      socket.send(data);
    });
  });
  await new Promise<void>((r) => wss.once("listening", () => r()));
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    received: () => received,
    close: () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => r());
      }),
  };
}

interface Row {
  variant: string;
  steady: number;
  peak: number;
  pings: number;
}

async function run(hub: Hub, echo: Awaited<ReturnType<typeof echoServer>>, variant: Variant): Promise<Row> {
  const cluster = `ws-${variant}`;
  // A simulated cluster of its own (its own cluster ID), as its own process.
  const simDir = fs.mkdtempSync(path.join(os.tmpdir(), `flotilla-bench-ws-${variant}-`));
  const sim = await startSim(simDir);
  const kubeconfig = sim.kubeconfig;
  const token = await createBootstrapToken(hub, { autoApprove: true });
  const image = agentImage();
  const flags = image.entrypoint.slice(1, -1);
  const preload = variant === "none" || variant === "agent" ? [] : [`--import=${path.join(root, "bench/ws-client", `${variant}.mjs`)}`];
  const transport = ["--transport", variant === "agent" ? "ws" : "poll"];
  const agent = spawn(
    process.execPath,
    [
      ...flags,
      ...preload,
      path.join(root, "dist/agent/flotilla-agent.mjs"),
      "--hub-url",
      hub.url,
      "--cluster-name",
      cluster,
      "--bootstrap-token",
      token,
      "--kubeconfig",
      kubeconfig,
      ...transport,
    ],
    {
      cwd: root,
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, ...image.env, BENCH_WS_URL: echo.url, BENCH_WS_PING_MS: "1000" },
    },
  );
  let log = "";
  agent.stderr!.on("data", (d: Buffer) => {
    log += d.toString();
    if (process.env.BENCH_VERBOSE) process.stderr.write(d);
  });
  try {
    for (let i = 0; ; i++) {
      const mc = (await admin(hub, "GET", `${MC}/${cluster}`)).body as { status?: { conditions?: { type: string; status: string }[] } };
      if (mc?.status?.conditions?.some((c) => c.type === "ManagedClusterConditionAvailable" && c.status === "True")) break;
      if (agent.exitCode !== null || i > 600) throw new Error(`the agent (${variant}) did not become Available:\n${log}`);
      await sleep(100);
    }
    if (variant === "agent") {
      for (let i = 0; i < 200 && !/connected to the hub over WebSocket/.test(log); i++) await sleep(50);
      if (!/connected to the hub over WebSocket/.test(log)) throw new Error(`the agent's ws transport did not connect:\n${log}`);
    } else if (variant !== "none" && !/ws-client: connected/.test(log)) {
      for (let i = 0; i < 100 && !/ws-client: connected/.test(log); i++) await sleep(50);
      if (!/ws-client: connected/.test(log)) throw new Error(`the ${variant} client did not connect:\n${log}`);
    }
    await sleep(5_000);
    const pings0 = echo.received();
    const samples: number[] = [];
    const t0 = performance.now();
    while (performance.now() - t0 < IDLE_SECONDS * 1000) {
      samples.push(memory(agent.pid!).rss);
      await sleep(250);
    }
    return { variant, steady: samples.reduce((a, b) => a + b, 0) / samples.length, peak: memory(agent.pid!).hwm, pings: echo.received() - pings0 };
  } finally {
    agent.kill("SIGTERM");
    const killer = setTimeout(() => agent.kill("SIGKILL"), 10_000);
    await new Promise((r) => (agent.exitCode !== null ? r(null) : agent.once("exit", r)));
    clearTimeout(killer);
    sim.child.kill("SIGTERM");
    await new Promise((r) => (sim.child.exitCode !== null ? r(null) : sim.child.once("exit", r)));
    fs.rmSync(simDir, { recursive: true, force: true });
  }
}

const hub = await startHub();
const echo = await echoServer();
try {
  const rows: Row[] = [];
  for (const v of VARIANTS) rows.push(await run(hub, echo, v));
  const image = agentImage();
  const labels = {
    none: "no WebSocket (the agent alone, poll transport)",
    builtin: "Node's built-in WebSocket (undici)",
    ws: "ws package",
    agent: "the agent's ws transport (default), connected to the hub",
  };
  printTable(
    `flotilla-agent holding one WebSocket to a local echo server (${process.version}; as the image runs it: ${[...Object.entries(image.env).map(([k, v]) => `${k}=${v}`), "node", ...image.entrypoint.slice(1, -1)].join(" ")}; idle window ${IDLE_SECONDS} s, a ping a second)`,
    ["client", "RSS steady MiB", "RSS peak MiB", "pings echoed in the window"],
    rows.map((r) => [labels[r.variant as keyof typeof labels], (r.steady / MiB).toFixed(1), (r.peak / MiB).toFixed(1), String(r.pings)]),
  );
} finally {
  await echo.close();
  await hub.stop();
}
