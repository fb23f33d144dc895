/**
 * End to end through the HTTP API of a real hub (`wrangler dev`), with real agent processes:
 * clusters, a set, a binding and a placement; the decisions change when a cluster is tainted and
 * when an agent's lease expires, with no further request to the placement.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { bindClusterSet, createClusterSet, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess } from "./support.ts";

const G = "/apis/cluster.open-cluster-management.io";
const SET_LABEL = "cluster.open-cluster-management.io/clusterset";

describe("placement decisions follow the fleet (wrangler dev + agent processes)", () => {
  let hub: Hub;
  const agents: AgentProcess[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-placement-"));

  const decisions = async (): Promise<string[]> => {
    const r = await admin(
      hub,
      "GET",
      `${G}/v1beta1/namespaces/apps/placementdecisions?labelSelector=${encodeURIComponent("cluster.open-cluster-management.io/placement=web")}`,
    );
    expect(r.status).toBe(200);
    return r.body.items.flatMap((d: { status: { decisions: { clusterName: string }[] } }) => d.status.decisions.map((x) => x.clusterName)).sort();
  };

  beforeAll(async () => {
    hub = await startHub({ graceMultiplier: 2 });
  });

  afterAll(async () => {
    for (const a of agents) await stopAgent(a);
    await hub?.stop();
  });

  it("schedules, moves work off a tainted cluster and off a cluster whose lease expired", async () => {
    await createClusterSet(hub, "fleet");
    await createNamespaces(hub, "apps");
    await bindClusterSet(hub, "apps", "fleet");

    // A cluster created by the admin, its status written through the status subresource.
    expect(
      (
        await admin(hub, "POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "static1", labels: { [SET_LABEL]: "fleet" } },
        })
      ).status,
    ).toBe(201);
    const status = await admin(
      hub,
      "PATCH",
      `${MC}/static1/status`,
      {
        status: {
          conditions: [
            {
              type: "ManagedClusterConditionAvailable",
              status: "True",
              reason: "Manual",
              message: "set by the test",
              lastTransitionTime: "2026-01-01T00:00:00Z",
            },
          ],
        },
      },
      merge,
    );
    expect(status.status).toBe(200);

    // Two clusters joined by agents; the admin accepts them into the set with a 1 s lease (grace 2 x 1 s).
    const token = await createBootstrapToken(hub);
    for (const name of ["agent-a", "agent-b"]) {
      agents.push(startAgent(hub, ["--cluster-name", name, "--bootstrap-token", token, "--simulate-state", path.join(dir, `${name}.json`)]));
      await waitFor(`${name} to register`, async () => (await admin(hub, "GET", `${MC}/${name}`)).status === 200);
      const accept = { metadata: { labels: { [SET_LABEL]: "fleet" } }, spec: { hubAcceptsClient: true, leaseDurationSeconds: 1 } };
      expect((await admin(hub, "PATCH", `${MC}/${name}`, accept, merge)).status).toBe(200);
    }
    await waitFor("both agents Available", async () => {
      const items = (await admin(hub, "GET", `${MC}?labelSelector=${encodeURIComponent(`${SET_LABEL}=fleet`)}`)).body.items;
      return (
        items.filter((mc: { status?: { conditions?: { type: string; status: string }[] } }) =>
          mc.status?.conditions?.some((c) => c.type === "ManagedClusterConditionAvailable" && c.status === "True"),
        ).length === 3
      );
    });

    const placement = await admin(hub, "POST", `${G}/v1beta1/namespaces/apps/placements`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "web" },
      spec: {},
    });
    expect(placement.status).toBe(201);
    expect(await decisions()).toEqual(["agent-a", "agent-b", "static1"]);

    expect((await admin(hub, "PATCH", `${MC}/static1`, { spec: { taints: [{ key: "maintenance", effect: "NoSelect" }] } }, merge)).status).toBe(200);
    expect(await decisions()).toEqual(["agent-a", "agent-b"]);

    // Stop agent-b: its lease expires on the hub and the decision moves, with no request to the placement.
    await stopAgent(agents.pop()!);
    await waitFor("agent-b to leave the decisions", async () => JSON.stringify(await decisions()) === JSON.stringify(["agent-a"]), 30_000);
    const p = (await admin(hub, "GET", `${G}/v1beta1/namespaces/apps/placements/web`)).body;
    expect(p.status.numberOfSelectedClusters).toBe(1);
  });
});
