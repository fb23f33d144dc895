/**
 * An add-on's health and registration end to end: `wrangler dev` and a real agent process on a
 * simulated member cluster (in this process, so the test can play the add-on's agent: renew its
 * Lease, read its Secret). The add-on's deploy work is written here as the hub's add-on manager
 * renders it (OCM's label, the install namespace and health check mode annotations), so the test
 * holds whatever the manager does: the agent reports `Available` from the add-on's Lease as OCM's
 * addon lease controller, gets the add-on a hub token of its own into `<addon>-hub-kubeconfig`, and
 * removes that Secret when the add-on's work goes; the token works with least privilege and never
 * appears in the agent's log.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { isNotFound, type KubeConfig } from "../../agent/src/kube.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { admin, createBootstrapToken, hubFetch, startHub, type Hub } from "../../scripts/hub-process.ts";
import { cond, MC, startAgent, stopAgent, waitFor, type AgentProcess } from "./support.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const ADDON_API = "/apis/addon.open-cluster-management.io/v1alpha1";
const MCA = (ns: string, name = "") => `${ADDON_API}/namespaces/${ns}/managedclusteraddons${name ? `/${name}` : ""}`;
const WORKS = (ns: string, name = "") => `/apis/work.open-cluster-management.io/v1/namespaces/${ns}/manifestworks${name ? `/${name}` : ""}`;

describe.each(["ws", "poll"])("add-on health and registration (wrangler dev, a real agent, --transport %s)", (transport) => {
  const cluster = `a-${transport}`;
  let hub: Hub;
  let sim: SimulatedCluster;
  let kc: KubeConfig;
  let agent: AgentProcess;
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-addon-e2e-"));

  beforeAll(async () => {
    hub = await startHub();
    const token = await createBootstrapToken(hub);
    // Created by the admin, accepted, heartbeating every second: a poll agent learns of its works at its next heartbeat.
    const mc = {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: cluster },
      spec: { hubAcceptsClient: true, leaseDurationSeconds: 1 },
    };
    expect((await admin(hub, "POST", MC, mc)).status).toBe(201);
    sim = await startSimulatedCluster({ statePath: path.join(dir, `${cluster}.json`) });
    kc = kubeConfigFromYaml(sim.kubeconfigYaml);
    agent = startAgent(
      hub,
      [
        "--cluster-name",
        cluster,
        "--transport",
        transport,
        "--bootstrap-token",
        token,
        "--kubeconfig",
        sim.kubeconfigPath,
        "--addon-health-check-period",
        "1",
        "--addon-token-expiration-seconds",
        "3600",
      ],
      false,
    );
    await waitFor(
      `${cluster} Available`,
      async () => cond((await admin(hub, "GET", `${MC}/${cluster}`)).body, "ManagedClusterConditionAvailable")?.status === "True",
    );
    await waitFor(`namespace ${cluster}`, async () => (await admin(hub, "GET", `/api/v1/namespaces/${cluster}`)).status === 200);
  }, 120_000);

  afterAll(async () => {
    if (agent) await stopAgent(agent);
    await sim?.close();
    await hub?.stop();
  });

  it("reports Available from the add-on's Lease, delivers and removes its hub credential", async () => {
    // An add-on with a manager of its own (no AddOnTemplate: OCM's default health check, Lease),
    // whose agent a work of the user's deploys, and which declares a kubeClient registration in
    // the ManagedClusterAddOn's status as OCM's add-on managers do.
    const cma = {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "obs" },
      spec: { addOnMeta: { displayName: "obs" } },
    };
    expect((await admin(hub, "POST", `${ADDON_API}/clustermanagementaddons`, cma)).status).toBe(201);
    const mca = {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ManagedClusterAddOn",
      metadata: { name: "obs" },
      spec: { installNamespace: "obs-ns" },
    };
    expect((await admin(hub, "POST", MCA(cluster), mca)).status).toBe(201);
    const registrations = [
      { signerName: "kubernetes.io/kube-apiserver-client", subject: { user: `system:open-cluster-management:cluster:${cluster}:addon:obs:agent:obs-agent` } },
    ];
    expect((await admin(hub, "PATCH", `${MCA(cluster, "obs")}/status`, { status: { registrations } }, "application/merge-patch+json")).status).toBe(200);
    expect((await admin(hub, "GET", MCA(cluster, "obs"))).body.status.healthCheck).toEqual({ mode: "Lease" });

    // The add-on's agent as its template renders it: its namespace and a Deployment that mounts its hub kubeconfig.
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "obs-agent", namespace: "obs-ns" },
      spec: {
        selector: { matchLabels: { app: "obs" } },
        template: {
          metadata: { labels: { app: "obs" } },
          spec: { containers: [{ name: "agent", image: "obs:1" }], volumes: [{ name: "hub-config", secret: { secretName: "obs-hub-kubeconfig" } }] },
        },
      },
    };
    const work = {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: {
        name: "obs-deploy",
        labels: { "open-cluster-management.io/addon-name": "obs" },
        annotations: { "addon.flotilla.dev/install-namespace": "obs-ns", "addon.flotilla.dev/health-check-mode": "Lease" },
      },
      spec: { workload: { manifests: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "obs-ns" } }, deployment] } },
    };
    expect((await admin(hub, "POST", WORKS(cluster), work)).status).toBe(201);

    // No Lease yet: Unknown, as OCM.
    const unknown = await waitFor("Available=Unknown", async () => {
      const c = cond((await admin(hub, "GET", MCA(cluster, "obs"))).body, "Available");
      return c?.status === "Unknown" && c;
    });
    expect(unknown).toMatchObject({ reason: "ManagedClusterAddOnLeaseNotFound", message: "The status of obs add-on is unknown." });

    // The add-on's agent renews its Lease: True.
    const lease = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "obs", namespace: "obs-ns" },
      spec: { holderIdentity: "obs-agent", leaseDurationSeconds: 60, renewTime: new Date().toISOString() },
    };
    await kc.json("POST", "/apis/coordination.k8s.io/v1/namespaces/obs-ns/leases", { body: lease });
    const up = await waitFor("Available=True", async () => {
      const c = cond((await admin(hub, "GET", MCA(cluster, "obs"))).body, "Available");
      return c?.status === "True" && c;
    });
    expect(up).toMatchObject({ reason: "ManagedClusterAddOnLeaseUpdated", message: "obs add-on is available." });

    // Its hub credential, in its install namespace.
    const secret: Json = await waitFor("Secret obs-ns/obs-hub-kubeconfig", async () =>
      kc.json("GET", "/api/v1/namespaces/obs-ns/secrets/obs-hub-kubeconfig").catch(() => undefined),
    );
    const data = (k: string) => Buffer.from(secret.data[k], "base64").toString("utf8");
    const token = data("token");
    expect(data("cluster-name")).toBe(cluster);
    expect(data("kubeconfig")).toContain(`server: "${hub.url}"`);
    const as = (p: string) => hubFetch(hub, "GET", p, { authorization: `Bearer ${token}` });
    expect((await as(MCA(cluster, "obs"))).status).toBe(200);
    // Least privilege: its own ManagedClusterAddOn and nothing else (no hubPermissions declared).
    expect((await as(`/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks`)).status).toBe(403);
    expect((await as(MC)).status).toBe(403);
    expect((await as("/apis/work.open-cluster-management.io/v1/namespaces/default/manifestworks")).status).toBe(403);
    const status = (await admin(hub, "GET", MCA(cluster, "obs"))).body.status;
    expect(cond({ status }, "RegistrationApplied")).toMatchObject({ status: "True", reason: "SetPermissionApplied" });
    expect(status.kubeClientDriver).toBe("token");
    expect(agent.output()).toContain("delivered the hub credential of add-on obs");
    expect(agent.output()).not.toContain(token);

    // Issue 39: the token cannot name a stronger template in its status (403); nothing is bound.
    const victim = {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "AddOnTemplate",
      metadata: { name: "victim" },
      spec: {
        addonName: "victim",
        agentSpec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "victim", namespace: "default" } }] } },
        registration: [{ type: "KubeClient", kubeClient: { hubPermissions: [{ type: "CurrentCluster", currentCluster: { clusterRoleName: "admin" } }] } }],
      },
    };
    expect((await admin(hub, "POST", `${ADDON_API}/addontemplates`, victim)).status).toBe(201);
    const named = { status: { configReferences: [{ group: "addon.open-cluster-management.io", resource: "addontemplates", name: "victim" }] } };
    const escalate = await hubFetch(
      hub,
      "PATCH",
      `${MCA(cluster, "obs")}/status`,
      { authorization: `Bearer ${token}`, "content-type": "application/merge-patch+json" },
      JSON.stringify(named),
    );
    expect(escalate.status).toBe(403);
    expect(
      (await admin(hub, "GET", `/apis/rbac.authorization.k8s.io/v1/namespaces/${cluster}/rolebindings/open-cluster-management:obs:clusterrole:agent`)).status,
    ).toBe(404);
    // A ManagedClusterAddOn in a namespace that is no cluster's gets no deploy work (its configs are never rendered there).
    expect((await admin(hub, "POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: "team-e2e" } })).status).toBe(201);
    const victimCma = {
      ...cma,
      metadata: { name: "victim" },
      spec: { supportedConfigs: [{ group: "addon.open-cluster-management.io", resource: "addontemplates", defaultConfig: { name: "victim" } }] },
    };
    expect((await admin(hub, "POST", `${ADDON_API}/clustermanagementaddons`, victimCma)).status).toBe(201);
    expect((await admin(hub, "POST", MCA("team-e2e"), { ...mca, metadata: { name: "victim" }, spec: {} })).status).toBe(201);
    expect((await admin(hub, "GET", WORKS("team-e2e", "addon-victim-deploy-0"))).status).toBe(404);
    expect((await admin(hub, "GET", MCA("team-e2e", "victim"))).body.status?.configReferences).toBeUndefined();

    // The add-on leaves the cluster: its work goes, and the agent deletes its Secret.
    expect((await admin(hub, "DELETE", WORKS(cluster, "obs-deploy"))).status).toBe(200);
    await waitFor("the Secret deleted", async () =>
      isNotFound(
        await kc.json("GET", "/api/v1/namespaces/obs-ns/secrets/obs-hub-kubeconfig").then(
          () => null,
          (e: unknown) => e,
        ),
      ),
    );
    // The add-on removed on the hub: its ServiceAccount goes with it, and its token stops working.
    expect((await admin(hub, "DELETE", MCA(cluster, "obs"))).status).toBe(200);
    await waitFor("the token revoked", async () => (await as(MCA(cluster, "obs"))).status === 401);
  });
});
