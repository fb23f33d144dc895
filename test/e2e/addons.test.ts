/**
 * A template add-on end to end: a real hub (`wrangler dev`, HTTPS), three real agent processes
 * on simulated member clusters, and the real kubectl applying OCM's documentation example of a
 * template add-on (the `hello-template` ClusterManagementAddOn, AddOnTemplate and Placement of
 * open-cluster-management.io's "Add-on Template" page) unchanged but for the placement's
 * selector. It checks, in order: the agent's Deployment lands on the decided clusters only;
 * each ManagedClusterAddOn turns Available=True from its health check (workload feedback) and
 * `kubectl get managedclusteraddon -A` shows AVAILABLE, DEGRADED and PROGRESSING; the add-on
 * follows a decision change; deleting the ClusterManagementAddOn removes it from every cluster
 * (the Deployment annotated `deletion-orphan` stays, as OCM documents).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { AppsV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { accept, waitAvailable, kubectlWith, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess, writeAdminKubeconfig } from "./support.ts";

const CLUSTERS = ["c1", "c2", "c3"];
const A = "/apis/addon.open-cluster-management.io";

// The documentation's example (ClusterManagementAddOn and AddOnTemplate as published; the
// Placement selects the clusters labelled hello=yes instead of all of them).
const EXAMPLE = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata:
  name: hello-template
  annotations:
    addon.open-cluster-management.io/lifecycle: "addon-manager"
spec:
  addOnMeta:
    description: hello-template is an addon built with addon template
    displayName: hello-template
  supportedConfigs: # declare it is a template type addon
  - group: addon.open-cluster-management.io
    resource: addontemplates
    defaultConfig:
      name: hello-template
  installStrategy:
    type: Placements
    placements:
    - name: placement-hello
      namespace: default
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata:
  name: hello-template
spec:
  addonName: hello-template
  agentSpec: # required
      workload:
        manifests:
          - kind: Deployment
            apiVersion: apps/v1
            metadata:
              name: hello-template-agent
              namespace: open-cluster-management-agent-addon
              annotations:
                "addon.open-cluster-management.io/deletion-orphan": ""
              labels:
                app: hello-template-agent
            spec:
              replicas: 1
              selector:
                matchLabels:
                  app: hello-template-agent
              template:
                metadata:
                  labels:
                    app: hello-template-agent
                spec:
                  serviceAccountName: hello-template-agent-sa
                  containers:
                    - name: helloworld-agent
                      image: quay.io/open-cluster-management/addon-examples:v1
                      imagePullPolicy: IfNotPresent
                      args:
                        - "/helloworld"
                        - "agent"
                        - "--cluster-name={{CLUSTER_NAME}}"
                        - "--addon-namespace=open-cluster-management-agent-addon"
                        - "--addon-name=hello-template"
                        - "--hub-kubeconfig={{HUB_KUBECONFIG}}"
          - kind: ServiceAccount
            apiVersion: v1
            metadata:
              name: hello-template-agent-sa
              namespace: open-cluster-management-agent-addon
              annotations:
                "addon.open-cluster-management.io/deletion-orphan": ""
          - kind: ClusterRoleBinding
            apiVersion: rbac.authorization.k8s.io/v1
            metadata:
              name: hello-template-agent
            roleRef:
              apiGroup: rbac.authorization.k8s.io
              kind: ClusterRole
              name: cluster-admin
            subjects:
              - kind: ServiceAccount
                name: hello-template-agent-sa
                namespace: open-cluster-management-agent-addon
  registration: # optional
    # kubeClient or custom signer, if kubeClient, user and group is in a certain format.
    # user is "system:open-cluster-management:cluster:{clusterName}:addon:{addonName}:agent:{agentName}"
    # group is ["system:open-cluster-management:cluster:{clusterName}:addon:{addonName}",
    #           "system:open-cluster-management:addon:{addonName}", "system:authenticated"]
    - type: KubeClient
      kubeClient:
        hubPermissions:
          - type: CurrentCluster
            currentCluster:
              clusterRoleName: cm-admin
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata:
  name: global
  namespace: default
spec:
  clusterSet: global
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement-hello
  namespace: default
spec:
  clusterSets:
  - global
  predicates:
  - requiredClusterSelector:
      labelSelector:
        matchLabels:
          hello: "yes"
`;

describe("a template add-on rolled out by a Placement (wrangler dev, kubectl, 3 agents on simulated clusters)", () => {
  let hub: Hub;
  let kubeconfig = "";
  const sims = new Map<string, SimulatedCluster>();
  const agents = new Map<string, AgentProcess>();
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-addons-"));
  const { kubectl } = kubectlWith(() => kubeconfig, dir);

  const client = <T>(c: string, api: new (...args: never[]) => T): T => {
    const kc = new KubeConfig();
    kc.loadFromString(sims.get(c)!.kubeconfigYaml);
    return kc.makeApiClient(api as never) as T;
  };
  const exists = async (read: () => Promise<unknown>): Promise<boolean> => {
    try {
      await read();
      return true;
    } catch {
      return false;
    }
  };
  const agentOn = (c: string) =>
    exists(() => client(c, AppsV1Api).readNamespacedDeployment({ name: "hello-template-agent", namespace: "open-cluster-management-agent-addon" }));
  const bindingOn = (c: string) =>
    exists(() => client(c, CoreV1Api).readNamespacedServiceAccount({ name: "hello-template-agent-sa", namespace: "open-cluster-management-agent-addon" }));
  const addonsOn = async (): Promise<string[]> => {
    const r = await admin(hub, "GET", `${A}/v1beta1/managedclusteraddons`);
    return (r.body.items as { metadata: { name: string; namespace: string } }[])
      .filter((m) => m.metadata.name === "hello-template")
      .map((m) => m.metadata.namespace)
      .sort();
  };
  const label = async (c: string, value: string) =>
    expect((await admin(hub, "PATCH", `${MC}/${c}`, { metadata: { labels: { hello: value } } }, merge)).status).toBe(200);

  beforeAll(async () => {
    hub = await startHub({ https: true });
    kubeconfig = await writeAdminKubeconfig(hub, dir);
    const token = await createBootstrapToken(hub);
    for (const c of CLUSTERS) {
      sims.set(c, await startSimulatedCluster({ statePath: path.join(dir, `${c}.json`) }));
      agents.set(
        c,
        startAgent(hub, ["--cluster-name", c, "--bootstrap-token", token, "--kubeconfig", sims.get(c)!.kubeconfigPath, "--status-sync-interval", "1"], false),
      );
    }
    await Promise.all(CLUSTERS.map((c) => accept(hub, { name: c, labels: { hello: c === "c3" ? "no" : "yes" }, spec: { leaseDurationSeconds: 1 } })));
    await waitAvailable(hub, 3);
  }, 120_000);

  afterAll(async () => {
    for (const a of agents.values()) await stopAgent(a);
    for (const s of sims.values()) await s.close();
    await hub?.stop();
  });

  it("lands on the decided clusters, turns Available, follows decisions and leaves with its ClusterManagementAddOn", async () => {
    writeFileSync(path.join(dir, "hello.yaml"), EXAMPLE);
    const applied = await kubectl("apply", "-f", path.join(dir, "hello.yaml"));
    expect(applied).toContain("clustermanagementaddon.addon.open-cluster-management.io/hello-template created");
    expect(applied).toContain("addontemplate.addon.open-cluster-management.io/hello-template created");

    // Decided clusters only.
    await waitFor("the ManagedClusterAddOns on c1 and c2", async () => (await addonsOn()).join() === "c1,c2");
    for (const c of ["c1", "c2"]) await waitFor(`the agent Deployment on ${c}`, () => agentOn(c), 30_000);
    expect(await agentOn("c3")).toBe(false);

    // Available=True from the health check (the Deployment's ready replicas, fed back through the work).
    await waitFor(
      "Available=True on c1 and c2",
      async () => {
        const table = await kubectl("get", "managedclusteraddon", "-A");
        return /c1\s+hello-template\s+True\s+False/.test(table) && /c2\s+hello-template\s+True\s+False/.test(table);
      },
      30_000,
    );
    const table = await kubectl("get", "managedclusteraddon", "-A");
    expect(table).toMatch(/^NAMESPACE\s+NAME\s+AVAILABLE\s+DEGRADED\s+PROGRESSING/);
    const mode = await kubectl(
      "get",
      "managedclusteraddon",
      "hello-template",
      "-n",
      "c1",
      "-o",
      'jsonpath={.status.healthCheck.mode} {.status.conditions[?(@.type=="ManifestApplied")].status}',
    );
    expect(mode).toBe("Customized True");
    // The same object through v1alpha1 (the documentation's version).
    expect(
      await kubectl(
        "get",
        "managedclusteraddons.v1alpha1.addon.open-cluster-management.io",
        "hello-template",
        "-n",
        "c1",
        "-o",
        "jsonpath={.spec.installNamespace}",
      ),
    ).toBe("open-cluster-management-agent-addon");

    expect(await exists(() => client("c1", RbacAuthorizationV1Api).readClusterRoleBinding({ name: "hello-template-agent" }))).toBe(true);

    // A decision change: c3 joins, c1 leaves.
    await label("c3", "yes");
    await label("c1", "no");
    await waitFor("the ManagedClusterAddOns on c2 and c3", async () => (await addonsOn()).join() === "c2,c3", 30_000);
    await waitFor("the agent Deployment on c3", () => agentOn("c3"), 30_000);
    await waitFor(
      "c1's work gone",
      async () =>
        (await admin(hub, "GET", "/apis/work.open-cluster-management.io/v1/namespaces/c1/manifestworks/addon-hello-template-deploy-0")).status === 404,
      30_000,
    );
    // What is not annotated deletion-orphan leaves with the work.
    await waitFor(
      "c1's ClusterRoleBinding gone",
      async () => !(await exists(() => client("c1", RbacAuthorizationV1Api).readClusterRoleBinding({ name: "hello-template-agent" }))),
      30_000,
    );
    expect(await agentOn("c1")).toBe(true);

    // Deleting the ClusterManagementAddOn removes the add-on from every cluster.
    expect(await kubectl("delete", "clustermanagementaddon", "hello-template")).toContain("deleted");
    await waitFor("no ManagedClusterAddOn left", async () => (await addonsOn()).length === 0, 30_000);
    for (const c of ["c2", "c3"]) {
      await waitFor(
        `${c}'s work gone`,
        async () =>
          (await admin(hub, "GET", `/apis/work.open-cluster-management.io/v1/namespaces/${c}/manifestworks/addon-hello-template-deploy-0`)).status === 404,
        30_000,
      );
    }
    // Orphaned by the documentation's annotation: the Deployment and ServiceAccount stay.
    expect(await agentOn("c2")).toBe(true);
    expect(await bindingOn("c2")).toBe(true);
  }, 240_000);
});
