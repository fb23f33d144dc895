/**
 * `npm start` as an operator runs it: no secret on any command line, watches of clients that went
 * away freed, and a hub that comes back (or exits non-zero for a supervisor) when its workerd
 * processes are killed, its agent reconnecting by itself and applying new works.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, startHub, workerdPids, type Hub } from "../../scripts/hub-process.ts";
import { MAX_WATCHES_PER_CLIENT, WATCH_GONE_FREED_SECONDS } from "../../src/api/watch-limits.ts";
import { cond, MC, startAgent, stopAgent, waitFor, type AgentProcess } from "./support.ts";

/** Every process's command line (arguments joined by spaces), from /proc. */
function commandLines(): string[] {
  const out: string[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      out.push(readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " "));
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

/** 200 from /livez within 2 s, else false (a crashed hub may accept connections and never answer). */
async function live(hub: Hub): Promise<boolean> {
  try {
    return (await fetch(`${hub.url}/livez`, { signal: AbortSignal.timeout(2000) })).status === 200;
  } catch {
    return false;
  }
}

const SECRETS = "/api/v1/namespaces/default/secrets";

const WORKS = "/apis/work.open-cluster-management.io/v1/namespaces/s1/manifestworks";
const configMapWork = (name: string) => ({
  apiVersion: "work.open-cluster-management.io/v1",
  kind: "ManifestWork",
  metadata: { name },
  spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" } }] } },
});

describe("npm start", () => {
  let hub: Hub;
  let agent: AgentProcess | undefined;
  beforeAll(async () => {
    hub = await startHub();
  });
  afterAll(async () => {
    if (agent) await stopAgent(agent);
    await hub?.stop();
  });

  it("puts no secret on a command line; the token and the encryption key reach the Worker through a 0600 file", async () => {
    const key = readFileSync(path.join(hub.stateDir, "encryption-keys"), "utf8").trim();
    expect(key).toMatch(/^key1:[A-Za-z0-9+/]{43}=$/);
    const lines = commandLines();
    expect(lines.some((l) => l.includes("wrangler.js dev"))).toBe(true);
    expect(lines.filter((l) => l.includes(hub.adminToken))).toEqual([]);
    expect(lines.filter((l) => l.includes(key.slice(5)))).toEqual([]);
    for (const f of ["hub.env", "encryption-keys"]) expect(statSync(path.join(hub.stateDir, f)).mode & 0o777).toBe(0o600);

    expect((await admin(hub, "GET", SECRETS)).status).toBe(200);
    expect((await admin({ ...hub, adminToken: `${hub.adminToken}x` }, "GET", SECRETS)).status).toBe(401);
    // The key reached the Worker: a Secret is stored and served.
    const created = await admin(hub, "POST", SECRETS, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "before-crash" },
      stringData: { password: "hunter2" },
    });
    expect(created.status).toBe(201);
  });

  it(`frees the watch place of a client that went away within ${WATCH_GONE_FREED_SECONDS} s, as the README says`, { timeout: 180_000 }, async () => {
    const url = `${hub.url}/apis/cluster.open-cluster-management.io/v1/managedclusters?watch=true`;
    const headers = { authorization: `Bearer ${hub.adminToken}` };
    // Open watches until the hub refuses one (its cap is 50 per client, src/api/watch.ts).
    const aborts: AbortController[] = [];
    let refused: Response | undefined;
    while (!refused && aborts.length <= 200) {
      const abort = new AbortController();
      const res = await fetch(url, { headers, signal: abort.signal });
      if (res.status === 200) aborts.push(abort);
      else refused = res;
    }
    expect(aborts.length).toBe(MAX_WATCHES_PER_CLIENT);
    expect(refused?.status).toBe(429);
    expect(Number(refused?.headers.get("retry-after"))).toBeGreaterThan(0);
    await refused?.body?.cancel();
    // One client goes away (its connection closes); a new watch gets its place within the bound.
    aborts.pop()!.abort();
    const again = new AbortController();
    try {
      await waitFor(
        "a watch to be accepted again",
        async () => {
          const res = await fetch(url, { headers, signal: again.signal });
          if (res.status === 200) return true;
          await res.body?.cancel();
          return false;
        },
        WATCH_GONE_FREED_SECONDS * 1000,
      );
    } finally {
      again.abort();
      for (const a of aborts) a.abort();
    }
  });

  it(
    "answers again after its workerd processes are killed, on the same state, and its agent reconnects by itself and applies new works",
    { timeout: 300_000 },
    async () => {
      // An agent on its default transport (ws), connected and applying works before the kill.
      const token = await createBootstrapToken(hub, { autoApprove: true });
      agent = startAgent(hub, ["--cluster-name", "s1", "--bootstrap-token", token]);
      const connects = () => agent!.output().split("connected to the hub over WebSocket").length - 1;
      await waitFor(
        "the cluster Available",
        async () => cond((await admin(hub, "GET", `${MC}/s1`)).body, "ManagedClusterConditionAvailable")?.status === "True",
        120_000,
      );
      expect((await admin(hub, "POST", WORKS, configMapWork("before-kill"))).status).toBe(201);
      const applied = async (name: string) => cond((await admin(hub, "GET", `${WORKS}/${name}`)).body, "Applied")?.status === "True";
      await waitFor("the work applied before the kill", () => applied("before-kill"), 60_000);
      const connectedBefore = connects();
      expect(connectedBefore).toBeGreaterThanOrEqual(1);

      const pids = workerdPids(hub);
      expect(pids.length).toBeGreaterThan(0);
      for (const pid of pids) process.kill(pid, "SIGKILL");
      // Either the hub answers again (restarted by npm start) or npm start exited non-zero.
      const outcome = await waitFor(
        "the hub to answer /livez again or npm start to exit",
        async () => {
          const code = hub.exitCode();
          if (code !== null) return { exited: code };
          return workerdPids(hub).every((p) => !pids.includes(p)) && (await live(hub)) ? { live: true } : false;
        },
        240_000,
      );
      expect(outcome, hub.output()).toEqual({ live: true });
      const got = await admin(hub, "GET", `${SECRETS}/before-crash`);
      expect(got.status).toBe(200);
      expect(Buffer.from(got.body.data.password, "base64").toString()).toBe("hunter2");

      // The agent dials its channel again by itself (it was not restarted) and applies a new work.
      await waitFor("the agent connected again over WebSocket", async () => connects() > connectedBefore, 120_000);
      expect((await admin(hub, "POST", WORKS, configMapWork("after-kill"))).status).toBe(201);
      await waitFor("the agent to apply a work created after the hub came back", () => applied("after-kill"), 60_000);
      expect(agent.child.exitCode, agent.output()).toBeNull();
    },
  );
});
