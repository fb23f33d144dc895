/**
 * End to end through a real hub (`wrangler dev`) and a real agent process on a simulated member
 * cluster (agent/sim, served over HTTP): OCM's cluster claims (the reserved `id.k8s.io` and a
 * custom ClusterClaim, which a Placement's claim selector then selects) and a hub-side deletion of
 * a ManifestWork that shows `Deleting` until the agent confirms it removed what it applied.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import type { KubeConfig } from "../../agent/src/kube.ts";
import { bindClusterSet, createClusterSet, cond, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess } from "./support.ts";

const G = "/apis/cluster.open-cluster-management.io";
const WORKS = "/apis/work.open-cluster-management.io/v1/namespaces/claims1/manifestworks";
const SET_LABEL = "cluster.open-cluster-management.io/clusterset";
const FINALIZER = "cluster.open-cluster-management.io/manifest-work-cleanup";

describe("claims and deletion as OCM (wrangler dev + an agent process on a simulated cluster)", () => {
  let hub: Hub;
  let sim: SimulatedCluster;
  let kc: KubeConfig;
  let agent: AgentProcess | undefined;
  let token: string;
  const start = () => {
    agent = startAgent(
      hub,
      ["--cluster-name", "claims1", "--bootstrap-token", token, "--kubeconfig", sim.kubeconfigPath, "--status-sync-interval", "0.5"],
      false,
    );
  };
  const configMap = async (name: string): Promise<number> => {
    try {
      await kc.json("GET", `/api/v1/namespaces/default/configmaps/${name}`);
      return 200;
    } catch (e) {
      return (e as { code?: number }).code ?? 0;
    }
  };

  beforeAll(async () => {
    hub = await startHub();
    sim = await startSimulatedCluster();
    kc = kubeConfigFromYaml(sim.kubeconfigYaml);
    token = await createBootstrapToken(hub);
  });

  afterAll(async () => {
    if (agent) await stopAgent(agent);
    await sim?.close();
    await hub?.stop();
  });

  it("reports id.k8s.io and a custom ClusterClaim, which a Placement's claim selector selects", async () => {
    await kc.json("POST", "/apis/cluster.open-cluster-management.io/v1alpha1/clusterclaims", {
      body: {
        apiVersion: "cluster.open-cluster-management.io/v1alpha1",
        kind: "ClusterClaim",
        metadata: { name: "region.example.com" },
        spec: { value: "eu-west" },
      },
    });
    const clusterId = ((await kc.json("GET", "/api/v1/namespaces/kube-system")).metadata as { uid: string }).uid;
    start();
    await waitFor("claims1 to register", async () => (await admin(hub, "GET", `${MC}/claims1`)).status === 200);
    expect(
      (await admin(hub, "PATCH", `${MC}/claims1`, { metadata: { labels: { [SET_LABEL]: "fleet" } }, spec: { hubAcceptsClient: true } }, merge)).status,
    ).toBe(200);
    const mc = await waitFor("the claims on the ManagedCluster", async () => {
      const body = (await admin(hub, "GET", `${MC}/claims1`)).body;
      const claims: { name: string; value: string }[] = body.status?.clusterClaims ?? [];
      return claims.some((c) => c.name === "region.example.com") && cond(body, "ManagedClusterConditionAvailable")?.status === "True" ? body : undefined;
    });
    const claims = mc.status.clusterClaims as { name: string; value: string }[];
    expect(claims).toContainEqual({ name: "id.k8s.io", value: clusterId });
    expect(claims).toContainEqual({ name: "kubeversion.open-cluster-management.io", value: mc.status.version.kubernetes });
    expect(claims).toContainEqual({ name: "region.example.com", value: "eu-west" });
    expect(claims.map((c) => c.name).slice(0, 4)).toEqual([
      "id.k8s.io",
      "kubeversion.open-cluster-management.io",
      "platform.open-cluster-management.io",
      "product.open-cluster-management.io",
    ]);

    await createClusterSet(hub, "fleet");
    await createNamespaces(hub, "apps");
    await bindClusterSet(hub, "apps", "fleet");
    const placement = (name: string, values: string[]) => ({
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name },
      spec: { predicates: [{ requiredClusterSelector: { claimSelector: { matchExpressions: [{ key: "region.example.com", operator: "In", values }] } } }] },
    });
    expect((await admin(hub, "POST", `${G}/v1beta1/namespaces/apps/placements`, placement("eu", ["eu-west"]))).status).toBe(201);
    expect((await admin(hub, "POST", `${G}/v1beta1/namespaces/apps/placements`, placement("us", ["us-east"]))).status).toBe(201);
    const decided = async (name: string) => {
      const p = (await admin(hub, "GET", `${G}/v1beta1/namespaces/apps/placements/${name}`)).body;
      return p.status?.numberOfSelectedClusters as number | undefined;
    };
    await waitFor("the eu placement to select claims1", async () => (await decided("eu")) === 1);
    expect(await decided("us")).toBe(0);
  });

  it("a deleted ManifestWork shows Deleting until the agent removed what it applied, then goes", async () => {
    const created = await admin(hub, "POST", WORKS, {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "app" },
      spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "app-config", namespace: "default" }, data: { a: "1" } }] } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // Applied on the member cluster, and held by OCM's cleanup finalizer once the agent reported it.
    await waitFor("the work applied and held", async () => {
      const w = (await admin(hub, "GET", `${WORKS}/app`)).body;
      return cond(w, "Applied")?.status === "True" && w.metadata.finalizers?.includes(FINALIZER) && (await configMap("app-config")) === 200;
    });

    // With the agent stopped, nobody confirms: the work stays, Deleting, and what it applied stays.
    await stopAgent(agent!);
    agent = undefined;
    expect((await admin(hub, "DELETE", `${WORKS}/app`)).status).toBe(200);
    const deleting = await waitFor("the Deleting condition", async () => {
      const w = (await admin(hub, "GET", `${WORKS}/app`)).body;
      return cond(w, "Deleting") ? w : undefined;
    });
    expect(deleting.metadata.deletionTimestamp).toBeTruthy();
    expect(cond(deleting, "Deleting")).toMatchObject({ status: "True", reason: "ResourceRemaining" });
    expect(await configMap("app-config")).toBe(200);

    // The agent comes back: it removes the ConfigMap, confirms, and the work goes.
    start();
    await waitFor("the work gone from the hub", async () => (await admin(hub, "GET", `${WORKS}/app`)).status === 404);
    expect(await configMap("app-config")).toBe(404);
    expect(agent!.output()).toMatch(/work app is being deleted on the hub; removing what it applied/);
  });
});
