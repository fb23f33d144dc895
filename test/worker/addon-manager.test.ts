// The add-on manager inside workerd, over the HTTP API: a template add-on installed by
// installStrategy Placements lands on the decided clusters only, renders its agentSpec with OCM's
// variables into addon-<name>-deploy-0, reports Available from its work's feedback, follows
// decision changes and config changes, and goes from every cluster with its ClusterManagementAddOn.
import { beforeAll, describe, expect, it } from "vitest";
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { call, createNamespaces, MC, MCSET, withClockAhead, createCluster, merge } from "./helpers.ts";
import { clock } from "../../src/clock.ts";
import { waitFor as waitUntil } from "../wait.ts";

const G = "/apis/cluster.open-cluster-management.io";
const A = "/apis/addon.open-cluster-management.io";
const W = "/apis/work.open-cluster-management.io";
const CS = "cluster.open-cluster-management.io/clusterset";
const WORK = (cluster: string, name: string) => `${W}/v1/namespaces/${cluster}/manifestworks/${name}`;
const MCA = (cluster: string, name: string) => `${A}/v1alpha1/namespaces/${cluster}/managedclusteraddons/${name}`;

/** Waits (shared test/wait.ts) until `check` holds; fails after 8 s. */
async function waitFor(check: () => Promise<boolean>, ms = 8000): Promise<void> {
  await waitUntil("the add-on manager's effect", async () => (await check()) || undefined, ms, 100);
}

/** The clusters (namespaces) holding a ManagedClusterAddOn named `name`. */
async function installedOn(name: string): Promise<string[]> {
  const r = await call("GET", `${A}/v1beta1/managedclusteraddons`);
  return (r.body.items as { metadata: { name: string; namespace: string } }[])
    .filter((m) => m.metadata.name === name)
    .map((m) => m.metadata.namespace)
    .sort();
}

async function worksOf(name: string): Promise<string[]> {
  const r = await call("GET", `${W}/v1/manifestworks?labelSelector=${encodeURIComponent(`open-cluster-management.io/addon-name=${name}`)}`);
  return (r.body.items as { metadata: { namespace: string } }[]).map((w) => w.metadata.namespace).sort();
}

const deployment = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "hello-agent", namespace: "{{INSTALL_NAMESPACE}}" },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: "hello" } },
    template: {
      metadata: { labels: { app: "hello" } },
      spec: { containers: [{ name: "agent", image: "quay.io/hello:{{VERSION}}", args: ["--cluster={{CLUSTER_NAME}}", "--level={{LOG_LEVEL}}"] }] },
    },
  },
};

beforeAll(async () => {
  await createNamespaces("addons-ns");
  expect(
    (await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "afleet" } })).status,
  ).toBe(201);
  for (const c of ["a1", "a2"]) await createCluster(c, { [CS]: "afleet", hello: "yes" });
  await createCluster("a3", { [CS]: "afleet", hello: "no" });
  await call("POST", `${G}/v1beta2/namespaces/addons-ns/managedclustersetbindings`, {
    apiVersion: "cluster.open-cluster-management.io/v1beta2",
    kind: "ManagedClusterSetBinding",
    metadata: { name: "afleet" },
    spec: { clusterSet: "afleet" },
  });
  const p = await call("POST", `${G}/v1beta1/namespaces/addons-ns/placements`, {
    apiVersion: "cluster.open-cluster-management.io/v1beta1",
    kind: "Placement",
    metadata: { name: "hello" },
    spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { hello: "yes" } } } }] },
  });
  expect(p.status).toBe(201);
  const t = await call("POST", `${A}/v1alpha1/addontemplates`, {
    apiVersion: "addon.open-cluster-management.io/v1alpha1",
    kind: "AddOnTemplate",
    metadata: { name: "hello-1" },
    spec: { addonName: "hello", agentSpec: { workload: { manifests: [deployment] } } },
  });
  expect(t.status, JSON.stringify(t.body)).toBe(201);
  const adc = await call("POST", `${A}/v1alpha1/namespaces/addons-ns/addondeploymentconfigs`, {
    apiVersion: "addon.open-cluster-management.io/v1alpha1",
    kind: "AddOnDeploymentConfig",
    metadata: { name: "hello-config" },
    spec: {
      agentInstallNamespace: "hello-agent",
      customizedVariables: [
        { name: "VERSION", value: "1.0" },
        { name: "LOG_LEVEL", value: "2" },
      ],
      nodePlacement: { nodeSelector: { tier: "infra" } },
    },
  });
  expect(adc.status, JSON.stringify(adc.body)).toBe(201);
});

describe("template add-on installed by placements", () => {
  it("lands on the decided clusters only, rendered with OCM's variables into addon-hello-deploy-0", async () => {
    const cma = await call("POST", `${A}/v1alpha1/clustermanagementaddons`, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "hello", annotations: { "addon.open-cluster-management.io/lifecycle": "addon-manager" } },
      spec: {
        addOnMeta: { displayName: "Hello" },
        supportedConfigs: [
          { group: "addon.open-cluster-management.io", resource: "addontemplates", defaultConfig: { name: "hello-1" } },
          { group: "addon.open-cluster-management.io", resource: "addondeploymentconfigs", defaultConfig: { namespace: "addons-ns", name: "hello-config" } },
        ],
        installStrategy: { type: "Placements", placements: [{ namespace: "addons-ns", name: "hello", rolloutStrategy: { type: "All" } }] },
      },
    });
    expect(cma.status, JSON.stringify(cma.body)).toBe(201);
    await waitFor(async () => (await installedOn("hello")).join() === "a1,a2");
    await waitFor(async () => (await worksOf("hello")).join() === "a1,a2");
    const work = (await call("GET", WORK("a1", "addon-hello-deploy-0"))).body;
    expect(work.metadata.labels).toEqual({ "open-cluster-management.io/addon-name": "hello" });
    expect(work.metadata.annotations).toMatchObject({
      "addon.flotilla.dev/install-namespace": "hello-agent",
      "addon.flotilla.dev/health-check-mode": "Customized",
    });
    expect(work.metadata.ownerReferences[0]).toMatchObject({ kind: "ManagedClusterAddOn", name: "hello" });
    const [ns, dep] = work.spec.workload.manifests;
    expect(ns).toEqual({ apiVersion: "v1", kind: "Namespace", metadata: { name: "hello-agent" } });
    expect(dep.metadata.namespace).toBe("hello-agent");
    expect(dep.spec.template.spec.containers[0].image).toBe("quay.io/hello:1.0");
    expect(dep.spec.template.spec.containers[0].args).toEqual(["--cluster=a1", "--level=2"]);
    expect(dep.spec.template.spec.nodeSelector).toEqual({ tier: "infra" });
    expect(work.spec.manifestConfigs).toEqual([
      {
        resourceIdentifier: { group: "apps", resource: "deployments", name: "hello-agent", namespace: "hello-agent" },
        feedbackRules: [{ type: "WellKnownStatus" }],
      },
    ]);
    const mca = (await call("GET", MCA("a1", "hello"))).body;
    expect(mca.metadata.ownerReferences[0]).toMatchObject({ kind: "ClusterManagementAddOn", name: "hello" });
    expect(mca.status.configReferences.map((c: { resource: string }) => c.resource)).toEqual(["addondeploymentconfigs", "addontemplates"]);
    expect(mca.status.healthCheck).toEqual({ mode: "Customized" });
    expect(mca.status.namespace).toBe("hello-agent");
    expect(mca.status.relatedObjects).toEqual([
      { group: "addon.open-cluster-management.io", resource: "clustermanagementaddons", name: "hello" },
      { group: "addon.open-cluster-management.io", resource: "addontemplates", name: "hello-1" },
    ]);
    const cond = (t: string) => mca.status.conditions.find((c: { type: string }) => c.type === t);
    expect(cond("Configured").status).toBe("True");
    expect(cond("Progressing")).toMatchObject({ status: "True", reason: "Progressing" });
    expect(cond("RegistrationApplied")).toMatchObject({ status: "True", reason: "NilRegistration" });
  });

  it("reports ManifestApplied and Available from the work's status and feedback", async () => {
    const gen = (await call("GET", WORK("a1", "addon-hello-deploy-0"))).body.metadata.generation;
    const at = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    const c = (type: string) => ({ type, status: "True", reason: "Test", message: "", observedGeneration: gen, lastTransitionTime: at });
    const feedback = (ready: number) => ({
      conditions: [c("Applied"), c("Available")],
      resourceStatus: {
        manifests: [
          {
            resourceMeta: {
              ordinal: 1,
              group: "apps",
              version: "v1",
              kind: "Deployment",
              resource: "deployments",
              name: "hello-agent",
              namespace: "hello-agent",
            },
            statusFeedback: { values: [{ name: "ReadyReplicas", fieldValue: { type: "Integer", integer: ready } }] },
            conditions: [],
          },
        ],
      },
    });
    expect((await call("PATCH", `${WORK("a1", "addon-hello-deploy-0")}/status`, { status: feedback(0) }, merge)).status).toBe(200);
    const cond = async (t: string) =>
      ((await call("GET", MCA("a1", "hello"))).body.status.conditions as { type: string; status: string; reason: string }[]).find((x) => x.type === t);
    await waitFor(async () => (await cond("Available"))?.status === "False");
    expect(await cond("Available")).toMatchObject({ reason: "ProbeUnavailable" });
    expect(await cond("ManifestApplied")).toMatchObject({ status: "True", reason: "AddonManifestApplied" });
    expect((await call("PATCH", `${WORK("a1", "addon-hello-deploy-0")}/status`, { status: feedback(1) }, merge)).status).toBe(200);
    await waitFor(async () => (await cond("Available"))?.status === "True");
    expect(await cond("Available")).toMatchObject({ reason: "ProbeAvailable", message: "hello add-on is available." });
    expect(await cond("Progressing")).toMatchObject({ status: "False", reason: "Completed" });
    const mca = (await call("GET", MCA("a1", "hello"))).body;
    expect(
      mca.status.configReferences.every(
        (r: { desiredConfig: unknown; lastAppliedConfig: unknown }) => JSON.stringify(r.desiredConfig) === JSON.stringify(r.lastAppliedConfig),
      ),
    ).toBe(true);
    const table = (
      await call("GET", `${A}/v1beta1/namespaces/a1/managedclusteraddons`, undefined, { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } })
    ).body;
    expect(table.rows[0].cells).toEqual(["hello", "True", null, "False"]);
  });

  it("a config change rolls out to the works", async () => {
    const r = await call(
      "PATCH",
      `${A}/v1beta1/namespaces/addons-ns/addondeploymentconfigs/hello-config`,
      {
        spec: {
          customizedVariables: [
            { name: "VERSION", value: "2.0" },
            { name: "LOG_LEVEL", value: "2" },
          ],
        },
      },
      merge,
    );
    expect(r.status).toBe(200);
    await waitFor(async () => {
      const w = (await call("GET", WORK("a2", "addon-hello-deploy-0"))).body;
      return w.spec.workload.manifests[1].spec.template.spec.containers[0].image === "quay.io/hello:2.0";
    });
  });

  it("follows a decision change: installs where newly decided, removes where no longer", async () => {
    expect((await call("PATCH", `${MC}/a3`, { metadata: { labels: { hello: "yes" } } }, merge)).status).toBe(200);
    expect((await call("PATCH", `${MC}/a1`, { metadata: { labels: { hello: "no" } } }, merge)).status).toBe(200);
    await waitFor(async () => (await installedOn("hello")).join() === "a2,a3");
    await waitFor(async () => (await worksOf("hello")).join() === "a2,a3");
  });

  it("a missing Placement uninstalls nothing", async () => {
    expect((await call("DELETE", `${G}/v1beta1/namespaces/addons-ns/placements/hello`)).status).toBe(200);
    // A spec change runs the ClusterManagementAddOn.
    expect((await call("PATCH", `${A}/v1alpha1/clustermanagementaddons/hello`, { spec: { addOnMeta: { displayName: "Hello again" } } }, merge)).status).toBe(
      200,
    );
    await waitFor(async () => ((await call("GET", MCA("a2", "hello"))).body.status?.addOnMeta?.displayName ?? "") === "Hello again");
    expect(await installedOn("hello")).toEqual(["a2", "a3"]);
    expect(await worksOf("hello")).toEqual(["a2", "a3"]);
  });

  it("a deleted ClusterManagementAddOn removes the add-on from every cluster", async () => {
    expect((await call("DELETE", `${A}/v1beta1/clustermanagementaddons/hello`)).status).toBe(200);
    await waitFor(async () => (await installedOn("hello")).length === 0);
    await waitFor(async () => (await worksOf("hello")).length === 0);
  });
});

describe("template add-on installed by hand (installStrategy Manual)", () => {
  it("renders for a ManagedClusterAddOn created by a user, with its own configs, and its deletion removes the work", async () => {
    const t = await call("POST", `${A}/v1alpha1/addontemplates`, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "AddOnTemplate",
      metadata: { name: "manual-1" },
      spec: {
        addonName: "manual",
        agentSpec: {
          workload: {
            manifests: [
              {
                apiVersion: "v1",
                kind: "ConfigMap",
                metadata: { name: "manual", namespace: "{{INSTALL_NAMESPACE}}" },
                data: { cluster: "{{CLUSTER_NAME}}", version: "{{VERSION}}" },
              },
            ],
          },
        },
      },
    });
    expect(t.status).toBe(201);
    const cma = await call("POST", `${A}/v1beta1/clustermanagementaddons`, {
      apiVersion: "addon.open-cluster-management.io/v1beta1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "manual" },
      spec: { defaultConfigs: [{ group: "addon.open-cluster-management.io", resource: "addontemplates", name: "manual-1" }] },
    });
    expect(cma.status, JSON.stringify(cma.body)).toBe(201);
    expect(await installedOn("manual")).toEqual([]);
    const mca = await call("POST", `${A}/v1beta1/namespaces/a2/managedclusteraddons`, {
      apiVersion: "addon.open-cluster-management.io/v1beta1",
      kind: "ManagedClusterAddOn",
      metadata: { name: "manual", annotations: { "addon.open-cluster-management.io/v1alpha1-install-namespace": "manual-ns" } },
      spec: {},
    });
    expect(mca.status).toBe(201);
    await waitFor(async () => (await call("GET", WORK("a2", "addon-manual-deploy-0"))).status === 200);
    const work = (await call("GET", WORK("a2", "addon-manual-deploy-0"))).body;
    expect(work.spec.workload.manifests[1]).toEqual({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "manual", namespace: "manual-ns" },
      data: { cluster: "a2", version: "{{VERSION}}" },
    });
    expect(work.metadata.annotations["addon.flotilla.dev/health-check-mode"]).toBe("None");
    // Applied: available (no workload to probe), as OCM's None prober.
    const gen = work.metadata.generation;
    const c = (type: string) => ({
      type,
      status: "True",
      reason: "Test",
      message: "",
      observedGeneration: gen,
      lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
    });
    expect(
      (await call("PATCH", `${WORK("a2", "addon-manual-deploy-0")}/status`, { status: { conditions: [c("Applied"), c("Available")] } }, merge)).status,
    ).toBe(200);
    await waitFor(async () =>
      ((await call("GET", MCA("a2", "manual"))).body.status?.conditions ?? []).some(
        (x: { type: string; status: string }) => x.type === "Available" && x.status === "True",
      ),
    );
    // The ManagedClusterAddOn's own configs: a deployment config for this cluster only.
    const configs = [{ group: "addon.open-cluster-management.io", resource: "addondeploymentconfigs", namespace: "addons-ns", name: "hello-config" }];
    expect((await call("PATCH", MCA("a2", "manual"), { spec: { configs } }, merge)).status).toBe(200);
    await waitFor(async () => (await call("GET", WORK("a2", "addon-manual-deploy-0"))).body.spec.workload.manifests[1].data.version === "2.0");
    expect((await call("GET", WORK("a2", "addon-manual-deploy-0"))).body.spec.workload.manifests[1].metadata.namespace).toBe("hello-agent");
    expect((await call("DELETE", `${A}/v1alpha1/namespaces/a2/managedclusteraddons/manual`)).status).toBe(200);
    await waitFor(async () => (await call("GET", WORK("a2", "addon-manual-deploy-0"))).status === 404);
    // The ClusterManagementAddOn is not touched by its ManagedClusterAddOn's removal.
    expect((await call("GET", `${A}/v1beta1/clustermanagementaddons/manual`)).status).toBe(200);
  });
});

describe("config rollout by the placement's rolloutStrategy", () => {
  it("Progressive with maxConcurrency 1 moves one cluster at a time to a new template content", async () => {
    await createCluster("p1", { [CS]: "afleet", prog: "yes" });
    await createCluster("p2", { [CS]: "afleet", prog: "yes" });
    const p = await call("POST", `${G}/v1beta1/namespaces/addons-ns/placements`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "prog" },
      spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { prog: "yes" } } } }] },
    });
    expect(p.status).toBe(201);
    const cm = (v: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "prog", namespace: "default" }, data: { v } });
    expect(
      (
        await call("POST", `${A}/v1alpha1/addontemplates`, {
          apiVersion: "addon.open-cluster-management.io/v1alpha1",
          kind: "AddOnTemplate",
          metadata: { name: "prog" },
          spec: { addonName: "prog", agentSpec: { workload: { manifests: [cm("1")] } } },
        })
      ).status,
    ).toBe(201);
    const cma = await call("POST", `${A}/v1alpha1/clustermanagementaddons`, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "prog" },
      spec: {
        supportedConfigs: [{ group: "addon.open-cluster-management.io", resource: "addontemplates", defaultConfig: { name: "prog" } }],
        installStrategy: {
          type: "Placements",
          placements: [{ namespace: "addons-ns", name: "prog", rolloutStrategy: { type: "Progressive", progressive: { maxConcurrency: 1 } } }],
        },
      },
    });
    expect(cma.status).toBe(201);
    const value = async (c: string) => (await call("GET", WORK(c, "addon-prog-deploy-0"))).body?.spec?.workload?.manifests?.[1]?.data?.v as string | undefined;
    const succeed = async (c: string) => {
      const gen = (await call("GET", WORK(c, "addon-prog-deploy-0"))).body.metadata.generation;
      const k = (type: string) => ({
        type,
        status: "True",
        reason: "Test",
        message: "",
        observedGeneration: gen,
        lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
      });
      expect((await call("PATCH", `${WORK(c, "addon-prog-deploy-0")}/status`, { status: { conditions: [k("Applied"), k("Available")] } }, merge)).status).toBe(
        200,
      );
    };
    // The first install goes one cluster at a time too.
    await waitFor(async () => (await value("p1")) === "1");
    expect(await value("p2")).toBeUndefined();
    await succeed("p1");
    await waitFor(async () => (await value("p2")) === "1");
    await succeed("p2");
    const progression = async () =>
      ((await call("GET", `${A}/v1alpha1/clustermanagementaddons/prog`)).body.status?.installProgressions?.[0]?.conditions?.[0] ?? {}) as {
        status?: string;
        reason?: string;
      };
    await waitFor(async () => (await progression()).reason === "Completed");
    // A new template content: p1 first, p2 once p1 succeeded.
    expect((await call("PATCH", `${A}/v1alpha1/addontemplates/prog`, { spec: { agentSpec: { workload: { manifests: [cm("2")] } } } }, merge)).status).toBe(200);
    await waitFor(async () => (await value("p1")) === "2");
    expect(await value("p2")).toBe("1");
    expect((await progression()).reason).toBe("Progressing");
    await succeed("p1");
    await waitFor(async () => (await value("p2")) === "2");
  });

  it("minSuccessTime: the next cluster waits for it, and the scheduler's timer moves the rollout on when it is due", async () => {
    await createCluster("ms1", { [CS]: "afleet", minsucc: "yes" });
    await createCluster("ms2", { [CS]: "afleet", minsucc: "yes" });
    const p = await call("POST", `${G}/v1beta1/namespaces/addons-ns/placements`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "minsucc" },
      spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { minsucc: "yes" } } } }] },
    });
    expect(p.status).toBe(201);
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "minsucc", namespace: "default" }, data: { v: "1" } };
    expect(
      (
        await call("POST", `${A}/v1alpha1/addontemplates`, {
          apiVersion: "addon.open-cluster-management.io/v1alpha1",
          kind: "AddOnTemplate",
          metadata: { name: "minsucc" },
          spec: { addonName: "minsucc", agentSpec: { workload: { manifests: [cm] } } },
        })
      ).status,
    ).toBe(201);
    const cma = await call("POST", `${A}/v1alpha1/clustermanagementaddons`, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "minsucc" },
      spec: {
        supportedConfigs: [{ group: "addon.open-cluster-management.io", resource: "addontemplates", defaultConfig: { name: "minsucc" } }],
        installStrategy: {
          type: "Placements",
          placements: [
            { namespace: "addons-ns", name: "minsucc", rolloutStrategy: { type: "Progressive", progressive: { maxConcurrency: 1, minSuccessTime: "2m" } } },
          ],
        },
      },
    });
    expect(cma.status).toBe(201);
    const deployed = async (c: string) => (await call("GET", WORK(c, "addon-minsucc-deploy-0"))).status === 200;
    await waitFor(async () => (await deployed("ms1")) || (await deployed("ms2")));
    const [first, second] = (await deployed("ms1")) ? ["ms1", "ms2"] : ["ms2", "ms1"];
    expect(await deployed(second!)).toBe(false);
    const gen = (await call("GET", WORK(first!, "addon-minsucc-deploy-0"))).body.metadata.generation;
    const k = (type: string) => ({
      type,
      status: "True",
      reason: "Test",
      message: "",
      observedGeneration: gen,
      lastTransitionTime: new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z"),
    });
    expect(
      (await call("PATCH", `${WORK(first!, "addon-minsucc-deploy-0")}/status`, { status: { conditions: [k("Applied"), k("Available")] } }, merge)).status,
    ).toBe(200);
    // Succeeded, but not for 2 minutes yet: the second cluster waits (the status write's runs are done when it answers).
    expect(await deployed(second!)).toBe(false);
    const scheduler = env.SCHEDULER.getByName("scheduler");
    await withClockAhead(3 * 60_000, async () => {
      expect(await runDurableObjectAlarm(scheduler)).toBe(true);
    });
    await waitFor(async () => deployed(second!));
  });
});
