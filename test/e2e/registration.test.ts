/**
 * End to end: a real hub (`wrangler dev` on workerd with a local D1) and real agent processes
 * (`flotilla-agent --simulate`, whose client-node code talks HTTP to a simulated member cluster).
 */
import { copyFileSync, mkdtempSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateAgentKeyPair, signAgentToken, signProof, type AgentKeyPair } from "../../agent/src/credentials.ts";
import { admin, createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { cond, MC, merge, startAgent, stopAgent, taintKeys, waitFor, type AgentProcess } from "./support.ts";

/** Registers `key` for (name, ID) with a bootstrap token, as an agent does. */
async function registerKey(hub: Hub, token: string, name: string, id: string, key: AgentKeyPair): Promise<Response> {
  return fetch(`${hub.url}/agent/v1/register`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ clusterName: name, clusterId: id, publicKey: key.publicJwk, proof: await signProof(name, key, id) }),
  });
}

/**
 * What the hub stores: the SQLite databases of D1 and of the cluster Durable Objects (one file
 * each) and their bytes, write-ahead logs included. SQLite may checkpoint a log into its database
 * and drop it at any time, which moves bytes or frees them but never adds any.
 */
function stored(stateDir: string): { databases: string[]; bytes: number } {
  const databases: string[] = [];
  let bytes = 0;
  for (const dir of ["v3/d1/miniflare-D1DatabaseObject", "v3/do/flotilla-ClusterObject"]) {
    let names: string[];
    try {
      names = readdirSync(path.join(stateDir, dir));
    } catch {
      continue;
    }
    for (const n of names) {
      if (n.endsWith("-shm")) continue;
      if (n.endsWith(".sqlite")) databases.push(`${dir}/${n}`);
      bytes += statSync(path.join(stateDir, dir, n)).size;
    }
  }
  return { databases: databases.sort(), bytes };
}

describe("a cluster joins, goes silent and comes back (wrangler dev + agent processes)", () => {
  let hub: Hub;
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-"));
  const state = path.join(dir, "e2e1.json");
  const agents: AgentProcess[] = [];

  beforeAll(async () => {
    hub = await startHub({ graceMultiplier: 2 });
  });

  afterAll(async () => {
    for (const a of agents) await stopAgent(a);
    await hub?.stop();
  });

  it("registers pending, is accepted, joins and is Available with version, capacity, allocatable and claims", async () => {
    const token = await createBootstrapToken(hub);
    const agent = startAgent(hub, ["--cluster-name", "e2e1", "--bootstrap-token", token, "--simulate-state", state, "--claim", "env=e2e"]);
    agents.push(agent);
    const pending = await waitFor("the ManagedCluster to be registered", async () => {
      const r = await admin(hub, "GET", `${MC}/e2e1`);
      return r.status === 200 && r.body;
    });
    expect(pending.spec.hubAcceptsClient).toBe(false);
    expect(cond(pending, "ManagedClusterJoined")).toBeUndefined();
    // The cluster ID is no secret and authorises nothing: the hub does not serve it.
    expect(pending.metadata.annotations?.["flotilla.dev/cluster-id"]).toBeUndefined();
    await waitFor("the agent to wait for acceptance", async () => /accept/i.test(agent.output()));

    const accepted = await admin(hub, "PATCH", `${MC}/e2e1`, { spec: { hubAcceptsClient: true, leaseDurationSeconds: 1 } }, merge);
    expect(accepted.status).toBe(200);
    expect(cond(accepted.body, "HubAcceptedManagedCluster")).toMatchObject({ status: "True", reason: "HubClusterAdminAccepted" });

    const joined = await waitFor("Joined and Available", async () => {
      const mc = (await admin(hub, "GET", `${MC}/e2e1`)).body;
      return cond(mc, "ManagedClusterJoined")?.status === "True" && cond(mc, "ManagedClusterConditionAvailable")?.status === "True" && mc;
    });
    expect(joined.status.version.kubernetes).toMatch(/^v1\.\d+\.\d+/);
    expect(Object.keys(joined.status.capacity)).toEqual(expect.arrayContaining(["cpu", "memory"]));
    expect(Object.keys(joined.status.allocatable)).toEqual(expect.arrayContaining(["cpu", "memory"]));
    expect(joined.status.clusterClaims).toEqual(expect.arrayContaining([{ name: "env", value: "e2e" }]));
    expect(taintKeys(joined)).toEqual([]);
  });

  it("an agent that stops goes Unknown with the unreachable taint; restarted, it is Available again", async () => {
    await stopAgent(agents.pop()!);
    const silent = await waitFor(
      "Available=Unknown",
      async () => {
        const mc = (await admin(hub, "GET", `${MC}/e2e1`)).body;
        return cond(mc, "ManagedClusterConditionAvailable")?.status === "Unknown" && mc;
      },
      30_000,
    );
    expect(cond(silent, "ManagedClusterConditionAvailable").reason).toBe("ManagedClusterLeaseUpdateStopped");
    expect(taintKeys(silent)).toEqual(["cluster.open-cluster-management.io/unreachable"]);

    // Restart with the same member cluster and no bootstrap token: the Secret holds the key.
    const again = startAgent(hub, ["--cluster-name", "e2e1", "--simulate-state", state]);
    agents.push(again);
    const back = await waitFor("Available=True again", async () => {
      const mc = (await admin(hub, "GET", `${MC}/e2e1`)).body;
      return cond(mc, "ManagedClusterConditionAvailable")?.status === "True" && mc;
    });
    expect(taintKeys(back)).toEqual([]);
  });

  it("refuses the same cluster ID under another name", async () => {
    const token = await createBootstrapToken(hub);
    const copy = path.join(dir, "copy.json");
    copyFileSync(state, copy);
    const dup = startAgent(hub, ["--cluster-name", "e2e-dup", "--bootstrap-token", token, "--simulate-state", copy]);
    const code = await dup.exited;
    expect(code).not.toBe(0);
    expect(dup.output()).toContain("e2e1");
    expect((await admin(hub, "GET", `${MC}/e2e-dup`)).status).toBe(404);
  });

  it("scopes credentials to their cluster, and a denied cluster's credential stops working", async () => {
    const token = await createBootstrapToken(hub, { autoApprove: true });
    const key = await generateAgentKeyPair();
    const reg = await registerKey(hub, token, "e2e2", "e2e2-id", key);
    expect(reg.status).toBe(201);
    const hb = (target: string) =>
      signAgentToken("e2e2", key).then((jwt) =>
        fetch(`${hub.url}/agent/v1/clusters/${target}/heartbeat`, {
          method: "POST",
          headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" },
          body: JSON.stringify({ healthy: true }),
        }),
      );
    expect((await hb("e2e2")).status).toBe(200);
    const cross = await hb("e2e1");
    expect(cross.status).toBe(403);
    expect(((await cross.json()) as { reason: string }).reason).toBe("Forbidden");

    await admin(hub, "PATCH", `${MC}/e2e2`, { spec: { hubAcceptsClient: false } }, merge);
    expect((await hb("e2e2")).status).toBe(403);
    const denied = (await admin(hub, "GET", `${MC}/e2e2`)).body;
    expect(cond(denied, "HubAcceptedManagedCluster")).toMatchObject({ status: "False", reason: "HubClusterAdminDenied" });

    // The running agent of e2e1 is denied too: its heartbeats stop being accepted and it says so.
    const agent = agents[agents.length - 1]!;
    await admin(hub, "PATCH", `${MC}/e2e1`, { spec: { hubAcceptsClient: false } }, merge);
    await waitFor("the agent to notice the denial", async () => agent.output().includes("hub no longer accepts this cluster (403)"));
    const silent = await waitFor(
      "e2e1 to go Unknown after the denial",
      async () => {
        const mc = (await admin(hub, "GET", `${MC}/e2e1`)).body;
        return cond(mc, "ManagedClusterConditionAvailable")?.status === "Unknown" && mc;
      },
      30_000,
    );
    expect(cond(silent, "HubAcceptedManagedCluster").reason).toBe("HubClusterAdminDenied");
  });

  it("a re-registration with another key is held for the admin; the real agent keeps going", async () => {
    const token = await createBootstrapToken(hub, { autoApprove: true });
    const key = await generateAgentKeyPair();
    const reg = await registerKey(hub, token, "e2e3", "e2e3-id", key);
    expect(reg.status).toBe(201);
    const tag = reg.headers.get("flotilla-key-tag") ?? undefined;
    expect(tag).toBeTruthy();
    const attacker = await generateAgentKeyPair();
    const takeover = await registerKey(hub, token, "e2e3", "e2e3-id", attacker);
    expect(takeover.status).toBe(202);
    expect(((await takeover.json()) as { keyPending: boolean }).keyPending).toBe(true);
    const hb = async (k: AgentKeyPair, keyTag?: string) => {
      const jwt = await signAgentToken("e2e3", k, { keyTag });
      return fetch(`${hub.url}/agent/v1/clusters/e2e3/heartbeat`, {
        method: "POST",
        headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" },
        body: JSON.stringify({ healthy: true }),
      });
    };
    expect((await hb(key, tag)).status).toBe(200);
    // A steady heartbeat with the key tag is admitted with no D1 query.
    const steady = await hb(key, tag);
    expect(steady.status).toBe(200);
    expect(steady.headers.get("x-flotilla-d1-queries")).toBe("0");
    expect((await hb(attacker)).status).toBe(403);
    const mc = (await admin(hub, "GET", `${MC}/e2e3`)).body;
    expect(mc.metadata.annotations["flotilla.dev/pending-key-id"]).toBe(attacker.kid);
  });

  it("300 forged requests from strangers leave the stored bytes unchanged", async () => {
    // The clusters' own agents stop first, and their last writes (a lease expiring, its
    // scheduling) settle: what is measured is what strangers could add, and only that.
    while (agents.length > 0) await stopAgent(agents.pop()!);
    let last = stored(hub.stateDir);
    const before = await waitFor(
      "the stored bytes to settle",
      async () => {
        const now = stored(hub.stateDir);
        const settled = now.bytes === last.bytes && JSON.stringify(now.databases) === JSON.stringify(last.databases);
        last = now;
        return settled && now;
      },
      30_000,
      1000,
    );
    expect(before.databases.length).toBeGreaterThan(0);
    const stranger = await generateAgentKeyPair();
    const statuses = new Set<number>();
    for (let i = 0; i < 300; i++) {
      const name = `nobody-${i}`;
      const jwt = await signAgentToken(name, stranger);
      const r = await fetch(`${hub.url}/agent/v1/clusters/${name}/heartbeat`, {
        method: "POST",
        headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" },
        body: JSON.stringify({ healthy: true }),
      });
      await r.arrayBuffer();
      statuses.add(r.status);
    }
    expect([...statuses].every((s) => s === 401 || s === 429)).toBe(true);
    const after = stored(hub.stateDir);
    // No database was created (no Durable Object for a stranger) and nothing grew.
    expect(after.databases).toEqual(before.databases);
    expect(after.bytes).toBeLessThanOrEqual(before.bytes);
  });
});
