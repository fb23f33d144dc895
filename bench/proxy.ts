/**
 * The proxy's overhead (docs/proxy.md): a proxied `get` through the hub (`wrangler dev`, the
 * cluster's object, the agent's channel, the agent) beside the same `get` sent straight to the
 * simulated cluster the agent serves, alternated request by request so that the machine's load
 * weighs on both alike; then 100 concurrent proxied lists of 500 ConfigMaps, each retried after
 * its `Retry-After` when the cluster's 32 streams are taken (as client-go retries a 429).
 *
 *   BENCH_GETS     sequential gets of each kind (default 200)
 *   BENCH_LISTS    concurrent lists (default 100)
 *   BENCH_OBJECTS  ConfigMaps in the listed namespace (default 500)
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { admin, createBootstrapToken, startHub } from "../scripts/hub-process.ts";
import { startSim } from "./sim-process.ts";
import { printTable } from "./table.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const GETS = Number(process.env.BENCH_GETS ?? 200);
const LISTS = Number(process.env.BENCH_LISTS ?? 100);
const OBJECTS = Number(process.env.BENCH_OBJECTS ?? 500);
const MC = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
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

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotilla-bench-proxy-"));
  const hub = await startHub();
  const sim = await startSim(dir);
  const simUrl = /server: (\S+)/.exec(fs.readFileSync(sim.kubeconfig, "utf8"))![1]!.replace(/\/+$/, "");
  const token = await createBootstrapToken(hub);
  const agent = spawn(
    process.execPath,
    [
      path.join(root, "agent/bin/flotilla-agent.js"),
      "--hub-url",
      hub.url,
      "--cluster-name",
      "bench1",
      "--bootstrap-token",
      token,
      "--kubeconfig",
      sim.kubeconfig,
    ],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, FLOTILLA_BOOTSTRAP_TOKEN: "" } },
  );
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
    // Warm both paths.
    for (let i = 0; i < 10; i++) {
      await timed(`${simUrl}/api/v1/namespaces/default`, {});
      await timed(`${proxied}/api/v1/namespaces/default`, auth);
    }
    const direct: number[] = [];
    const through: number[] = [];
    for (let i = 0; i < GETS; i++) {
      const a = await timed(`${simUrl}/api/v1/namespaces/default`, {});
      const b = await timed(`${proxied}/api/v1/namespaces/default`, auth);
      if (a.status !== 200 || b.status !== 200) throw new Error(`get answered ${a.status} / ${b.status}`);
      direct.push(a.ms);
      through.push(b.ms);
    }
    printTable(
      `get /api/v1/namespaces/default, ${GETS} each, alternated (ms)`,
      ["path", "p50", "p90", "p99"],
      [
        ["direct to the simulated cluster", pct(direct, 50).toFixed(1), pct(direct, 90).toFixed(1), pct(direct, 99).toFixed(1)],
        ["through the hub's proxy", pct(through, 50).toFixed(1), pct(through, 90).toFixed(1), pct(through, 99).toFixed(1)],
        ["overhead (p50 difference)", (pct(through, 50) - pct(direct, 50)).toFixed(1), "", ""],
      ],
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
    const t0 = performance.now();
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
          const body = (await res.json()) as { items?: unknown[] };
          return { status: res.status, items: body.items?.length ?? 0 };
        }
      }),
    );
    const wall = performance.now() - t0;
    const complete = lists.filter((l) => l.status === 200 && l.items === OBJECTS).length;
    printTable(
      `${LISTS} concurrent proxied lists of ${OBJECTS} ConfigMaps`,
      ["complete", "429s retried", "wall (s)"],
      [[`${complete}/${LISTS}`, String(retried), (wall / 1000).toFixed(1)]],
    );
  } finally {
    agent.kill("SIGTERM");
    sim.child.kill("SIGTERM");
    await hub.stop();
  }
}

await main();
