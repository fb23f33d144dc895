/**
 * End to end: a real hub (`wrangler dev` on workerd with a local D1) and real agent processes
 * (`flotilla-agent --simulate`, whose client-node code talks HTTP to a simulated member cluster).
 */
import { copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateAgentKeyPair, signAgentToken } from "../../agent/src/credentials.ts";
import { admin, createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { cond, MC, merge, startAgent, stopAgent, taintKeys, waitFor, type AgentProcess } from "./support.ts";

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
    expect(pending.metadata.annotations["flotilla.dev/cluster-id"]).toMatch(/^[0-9a-f-]{36}$/);
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
    const silent = await waitFor("Available=Unknown", async () => {
      const mc = (await admin(hub, "GET", `${MC}/e2e1`)).body;
      return cond(mc, "ManagedClusterConditionAvailable")?.status === "Unknown" && mc;
    }, 30_000);
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
    const reg = await fetch(`${hub.url}/agent/v1/register`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ clusterName: "e2e2", clusterId: "e2e2-id", publicKey: key.publicJwk }),
    });
    expect(reg.status).toBe(201);
    const hb = (target: string) =>
      signAgentToken("e2e2", key).then((jwt) =>
        fetch(`${hub.url}/agent/v1/clusters/${target}/heartbeat`, { method: "POST", headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" }, body: JSON.stringify({ healthy: true }) }),
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
    const silent = await waitFor("e2e1 to go Unknown after the denial", async () => {
      const mc = (await admin(hub, "GET", `${MC}/e2e1`)).body;
      return cond(mc, "ManagedClusterConditionAvailable")?.status === "Unknown" && mc;
    }, 30_000);
    expect(cond(silent, "HubAcceptedManagedCluster").reason).toBe("HubClusterAdminDenied");
  });
});
