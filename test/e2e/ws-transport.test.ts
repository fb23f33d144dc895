/**
 * The agent's ws transport against a real hub (`wrangler dev`) and real agent processes
 * (`flotilla-agent --simulate`, the default transport): a work reaches Applied within 1 s of its
 * create; an idle connected agent makes no HTTP request for several leases while its cluster stays
 * Available (counted by a proxy in front of the hub that passes upgrades through); a SIGSTOPped
 * agent turns Unknown within 5 x lease + 20 %; an agent whose upgrade a proxy refuses (426) runs
 * poll and still applies works; after `kill -9` of the hub's processes and a restart on the same
 * state, a connected agent reconnects by itself and a new work reaches it at once; against an
 * HTTPS hub the agent dials `wss:` and applies a work.
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { descendants } from "../../scripts/proc.mjs";
import { startCountingProxy, type CountingProxy } from "../../scripts/counting-proxy.ts";
import { cond, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess, WORKS } from "./support.ts";

const AVAILABLE = "ManagedClusterConditionAvailable";

const configMapWork = (name: string) => ({
  apiVersion: "work.open-cluster-management.io/v1",
  kind: "ManifestWork",
  metadata: { name },
  spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { a: "1" } }] } },
});

/**
 * The HTTPS hub of the last describe, started beside the first describe's hub so that their
 * start-ups overlap (one hub start-up less on the file's clock); it idles until its describe runs.
 */
let wssHub: Promise<Hub> | undefined;

describe("the agent's ws transport (wrangler dev + agent processes)", () => {
  let hub: Hub;
  let token: string;
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-ws-"));
  const agents: AgentProcess[] = [];
  const proxies: CountingProxy[] = [];

  beforeAll(async () => {
    wssHub = startHub({ https: true });
    // Awaited (and its failure reported) by its own describe.
    wssHub.catch(() => undefined);
    hub = await startHub();
    token = await createBootstrapToken(hub);
  }, 120_000);

  afterAll(async () => {
    for (const a of agents) {
      if (a.child.exitCode === null) a.child.kill("SIGCONT");
      await stopAgent(a);
    }
    for (const p of proxies) await p.close();
    await hub?.stop();
  });

  /** Starts an agent for `name` against `url`, accepts its cluster with `lease` seconds and waits until it is Available. */
  const join = async (name: string, url: string, lease: number, args: string[] = []) => {
    const agent = startAgent({ url }, [
      "--cluster-name",
      name,
      "--bootstrap-token",
      token,
      "--simulate-state",
      path.join(dir, `${name}.json`),
      "--status-sync-interval",
      "1",
      ...args,
    ]);
    agents.push(agent);
    await waitFor(`${name} to register`, async () => (await admin(hub, "GET", `${MC}/${name}`)).status === 200);
    expect((await admin(hub, "PATCH", `${MC}/${name}`, { spec: { hubAcceptsClient: true, leaseDurationSeconds: lease } }, merge)).status).toBe(200);
    await waitFor(`${name} Available`, async () => cond((await admin(hub, "GET", `${MC}/${name}`)).body, AVAILABLE)?.status === "True");
    return agent;
  };

  const applied = async (cluster: string, work: string) => cond((await admin(hub, "GET", `${WORKS(cluster)}/${work}`)).body, "Applied")?.status === "True";

  it("connects by default and a new work reaches Applied within 1 s of its create", async () => {
    const agent = await join("ws1", hub.url, 60);
    await waitFor("the channel to connect", async () => agent.output().includes("connected to the hub over WebSocket"));
    const t0 = performance.now();
    expect((await admin(hub, "POST", WORKS("ws1"), configMapWork("fast"))).status).toBe(201);
    await waitFor("the work Applied", () => applied("ws1", "fast"), 10_000, 20);
    const ms = performance.now() - t0;
    console.log(`ws transport: a new work reached Applied ${ms.toFixed(0)} ms after its create`);
    expect(ms).toBeLessThan(1000);
  });

  // The idle agent's five leases and the stopped agent's lease expiry are waits on clusters of
  // their own (ws2, ws3): the two run side by side (`it.concurrent`), about 16 s off the file.
  it.concurrent("an idle connected agent makes no HTTP request over five leases and stays Available", async ({ expect }) => {
    const proxy = await startCountingProxy(hub.url);
    proxies.push(proxy);
    const lease = 2;
    const agent = await join("ws2", proxy.url, lease);
    await waitFor("the channel to connect", async () => agent.output().includes("connected to the hub over WebSocket"));
    // Settled: the cluster is Available, and no request came through the proxy for a lease
    // (a heartbeat sent over HTTP before the channel was welcomed has had its answer).
    await waitFor("Available", async () => cond((await admin(hub, "GET", `${MC}/ws2`)).body, AVAILABLE)?.status === "True", 30_000, 200);
    let seenBefore = -1;
    await waitFor(
      "the proxy to be quiet for a lease",
      async () => {
        const quiet = proxy.seen.length === seenBefore;
        seenBefore = proxy.seen.length;
        return quiet;
      },
      30_000,
      lease * 1000,
    );
    const before = proxy.seen.length;
    const start = Date.now();
    await waitFor("five leases to pass", async () => Date.now() - start >= 5 * lease * 1000, 30_000, 200);
    const during = proxy.seen.slice(before).map((r) => r.what);
    expect(during).toEqual([]);
    expect(proxy.upgrades()).toBe(1);
    const mc = (await admin(hub, "GET", `${MC}/ws2`)).body;
    expect(cond(mc, AVAILABLE)?.status).toBe("True");
  });

  it.concurrent("a SIGSTOPped agent turns Unknown within 5 x lease + 20 %, and Available again once resumed", async ({ expect }) => {
    const lease = 2;
    const agent = await join("ws3", hub.url, lease);
    await waitFor("the channel to connect", async () => agent.output().includes("connected to the hub over WebSocket"));
    agent.child.kill("SIGSTOP");
    const t0 = performance.now();
    try {
      await waitFor("Unknown", async () => cond((await admin(hub, "GET", `${MC}/ws3`)).body, AVAILABLE)?.status === "Unknown", 60_000, 100);
    } finally {
      agent.child.kill("SIGCONT");
    }
    const s = (performance.now() - t0) / 1000;
    console.log(`ws transport: a SIGSTOPped agent turned Unknown after ${s.toFixed(1)} s (lease ${lease} s)`);
    expect(s).toBeLessThanOrEqual(5 * lease * 1.2);
    // Resumed on the same connection, the agent hears the hub's `lease` message and sends its
    // status again: Available comes back.
    await waitFor("Available again after SIGCONT", async () => cond((await admin(hub, "GET", `${MC}/ws3`)).body, AVAILABLE)?.status === "True", 30_000, 200);
  });

  it("falls back to poll when a proxy refuses the upgrade, and still applies works", async () => {
    const proxy = await startCountingProxy(hub.url, { refuseUpgrades: true });
    proxies.push(proxy);
    const agent = await join("ws4", proxy.url, 1);
    await waitFor("the fallback", async () => agent.output().includes("using the poll transport"));
    expect(proxy.upgrades()).toBe(1);
    expect((await admin(hub, "POST", WORKS("ws4"), configMapWork("slow"))).status).toBe(201);
    await waitFor("the work Applied over poll", () => applied("ws4", "slow"), 20_000);
    expect(proxy.seen.some((r) => r.what.startsWith("POST /agent/v1/clusters/ws4/heartbeat"))).toBe(true);
    expect(proxy.seen.some((r) => r.what.startsWith("GET /agent/v1/clusters/ws4/works"))).toBe(true);
  });

  it("after kill -9 of the hub and a restart on its state, the agent reconnects by itself and applies a new work at once", async () => {
    const agent = agents[0]!;
    const connects = () => agent.output().split("connected to the hub over WebSocket").length - 1;
    const before = connects();
    expect(before).toBeGreaterThanOrEqual(1);
    const pids = [hub.pid, ...descendants(hub.pid)];
    for (const p of pids) {
      try {
        process.kill(p, "SIGKILL");
      } catch {
        // already gone
      }
    }
    const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
    await waitFor("the hub's processes gone", async () => pids.every((p) => !alive(p)), 20_000);
    hub = await startHub({ stateDir: hub.stateDir, port: Number(new URL(hub.url).port) });
    await waitFor("the agent to reconnect", async () => connects() > before, 60_000);
    const t0 = performance.now();
    expect((await admin(hub, "POST", WORKS("ws1"), configMapWork("after-restart"))).status).toBe(201);
    await waitFor("the work Applied", () => applied("ws1", "after-restart"), 10_000, 20);
    const ms = performance.now() - t0;
    console.log(`ws transport: after the hub's restart, a new work reached Applied ${ms.toFixed(0)} ms after its create`);
    expect(ms).toBeLessThan(1000);
  });
});

describe("the agent's ws transport to an HTTPS hub (wss:)", () => {
  let hub: Hub;
  let agent: AgentProcess | undefined;
  beforeAll(async () => {
    hub = await (wssHub ?? startHub({ https: true }));
  }, 120_000);
  afterAll(async () => {
    if (agent) await stopAgent(agent);
    await hub?.stop();
  });

  it("dials wss: with the hub's CA (the bundle loads TLS at the first dial) and applies a work", async () => {
    const token = await createBootstrapToken(hub, { autoApprove: true });
    const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-wss-"));
    agent = startAgent(hub, ["--cluster-name", "wss1", "--bootstrap-token", token, "--simulate-state", path.join(dir, "wss1.json")]);
    await waitFor("the channel to connect over wss:", async () => agent!.output().includes("connected to the hub over WebSocket"), 60_000);
    expect((await admin(hub, "POST", WORKS("wss1"), configMapWork("over-tls"))).status).toBe(201);
    await waitFor("the work Applied", async () => cond((await admin(hub, "GET", `${WORKS("wss1")}/over-tls`)).body, "Applied")?.status === "True", 30_000);
    expect(agent.output()).not.toMatch(/using the poll transport|channel upgrade failed/);
  });
});
