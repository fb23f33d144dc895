/**
 * Idle agent benchmark (issue 28): what one idle agent costs the hub in requests. Starts a real
 * hub (`wrangler dev`), a counting HTTP proxy in front of it, and the bundled agent
 * (`--simulate`) through the proxy; accepts the cluster with a `leaseDurationSeconds` of
 * BENCH_LEASE_SECONDS (default 5), lets it settle, then counts every request the agent sends
 * during BENCH_WINDOW_SECONDS (default 40), by method and path (`:name` for the cluster), and
 * the WebSocket upgrades it passes through. With the ws transport (the default) an idle connected
 * agent makes no HTTP request at all (its pings travel on the one upgraded connection); with
 * `--transport poll` its requests are its heartbeats alone (one per lease, + up to 25 % jitter).
 *
 *   BENCH_LEASE_SECONDS   the cluster's lease duration in seconds (default 5)
 *   BENCH_WINDOW_SECONDS  the counting window in seconds (default 40)
 *   BENCH_AGENT_BIN       the agent launcher to run (default agent/bin/flotilla-agent.js), e.g.
 *                         an older build's, to compare
 *   BENCH_AGENT_ARGS      extra agent flags, space-separated (e.g. "--transport poll")
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { admin, createBootstrapToken, startHub } from "../scripts/hub-process.ts";
import { startCountingProxy } from "../scripts/counting-proxy.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const LEASE = Number(process.env.BENCH_LEASE_SECONDS ?? 5);
const WINDOW = Number(process.env.BENCH_WINDOW_SECONDS ?? 40);
const AGENT_BIN = path.resolve(process.env.BENCH_AGENT_BIN ?? path.join(root, "agent/bin/flotilla-agent.js"));
const EXTRA = (process.env.BENCH_AGENT_ARGS ?? "").split(" ").filter(Boolean);
const MC = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
const CLUSTER = "idle-1";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const hub = await startHub();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotilla-bench-idle-"));
const proxy = await startCountingProxy(hub.url);
const token = await createBootstrapToken(hub);
const agent = spawn(
  process.execPath,
  [
    AGENT_BIN,
    "--hub-url",
    proxy.url,
    "--cluster-name",
    CLUSTER,
    "--bootstrap-token",
    token,
    "--simulate",
    "--simulate-state",
    path.join(dir, "sim.json"),
    ...EXTRA,
  ],
  {
    cwd: root,
    stdio: ["ignore", "ignore", "pipe"],
  },
);
let log = "";
agent.stderr!.on("data", (d: Buffer) => (log += d.toString()));
try {
  for (let i = 0; (await admin(hub, "GET", `${MC}/${CLUSTER}`)).status !== 200; i++) {
    if (i > 600) throw new Error(`the agent did not register:\n${log}`);
    await sleep(100);
  }
  const accepted = await admin(
    hub,
    "PATCH",
    `${MC}/${CLUSTER}`,
    { spec: { hubAcceptsClient: true, leaseDurationSeconds: LEASE } },
    "application/merge-patch+json",
  );
  if (accepted.status !== 200) throw new Error(`accept: ${accepted.status}`);
  for (let i = 0; ; i++) {
    const mc = (await admin(hub, "GET", `${MC}/${CLUSTER}`)).body as { status?: { conditions?: { type: string; status: string }[] } };
    if (mc.status?.conditions?.some((c) => c.type === "ManagedClusterConditionAvailable" && c.status === "True")) break;
    if (i > 600) throw new Error(`the cluster did not become Available:\n${log}`);
    await sleep(100);
  }
  // Settle: the first heartbeat's works fetch, the first status sync.
  await sleep(2 * LEASE * 1000);
  const from = performance.now();
  const start = proxy.seen.length;
  await sleep(WINDOW * 1000);
  const window = proxy.seen.slice(start).filter((s) => s.at - from <= WINDOW * 1000);
  const byKind = new Map<string, number>();
  for (const s of window) {
    const what = s.what.replaceAll(`/${CLUSTER}`, "/:name");
    byKind.set(what, (byKind.get(what) ?? 0) + 1);
  }
  console.log(
    `idle agent (${path.relative(root, AGENT_BIN)}${EXTRA.length ? ` ${EXTRA.join(" ")}` : ""}), lease ${LEASE} s, ${WINDOW} s window: ${window.length} requests, ${proxy.upgrades()} upgraded connections`,
  );
  for (const [what, n] of [...byKind].sort((a, b) => b[1] - a[1])) console.log(`  ${String(n).padStart(4)}  ${what}`);
} finally {
  agent.kill("SIGTERM");
  await new Promise((r) => (agent.exitCode !== null ? r(null) : agent.once("exit", r)));
  await proxy.close();
  await hub.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
