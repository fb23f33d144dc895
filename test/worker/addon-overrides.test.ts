// KubeFleet's ClusterResourceOverrides naming a template add-on (`placement: {name, scope:
// ClusterManagementAddOn}`, docs/overrides.md "Template add-ons"), inside workerd over the HTTP
// API: each cluster's add-on work carries its rendered manifests and names the snapshots applied;
// a failing override keeps that cluster's work and says why in the ManagedClusterAddOn's
// `Overridden` condition; a change writes only the clusters it touches, one at a time under a
// Progressive install strategy; a cluster's new labels re-render it; the validation of the scope.
import { describe, expect, it, beforeAll } from "vitest";
import { call, condition, createCluster, createNamespaces, MC, MCSET, merge } from "./helpers.ts";
import { waitFor as waitUntil } from "../wait.ts";

const G = "/apis/cluster.open-cluster-management.io";
const A = "/apis/addon.open-cluster-management.io";
const W = "/apis/work.open-cluster-management.io";
const FLEET = "/apis/placement.kubernetes-fleet.io/v1";
const CS = "cluster.open-cluster-management.io/clusterset";
const APPLIED = "work.flotilla.dev/applied-overrides";
const WORK = (cluster: string, addon: string) => `${W}/v1/namespaces/${cluster}/manifestworks/addon-${addon}-deploy-0`;
const MCA = (cluster: string, name: string) => `${A}/v1alpha1/namespaces/${cluster}/managedclusteraddons/${name}`;
const CROS = `${FLEET}/clusterresourceoverrides`;

async function waitFor(check: () => Promise<boolean>, ms = 8000): Promise<void> {
  await waitUntil("the add-on manager's effect", async () => (await check()) || undefined, ms, 100);
}

const agent = (addon: string) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: `${addon}-agent`, namespace: "{{INSTALL_NAMESPACE}}" },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: addon } },
    template: { metadata: { labels: { app: addon } }, spec: { containers: [{ name: "agent", image: `quay.io/${addon}:1` }] } },
  },
});

/** An AddOnTemplate and a ClusterManagementAddOn installed by the placement `addon` of namespace ao-ns, with `rolloutStrategy`. */
async function addon(name: string, rolloutStrategy?: unknown) {
  const p = await call("POST", `${G}/v1beta1/namespaces/ao-ns/placements`, {
    apiVersion: "cluster.open-cluster-management.io/v1beta1",
    kind: "Placement",
    metadata: { name },
    spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { [`ao-${name}`]: "yes" } } } }] },
  });
  expect(p.status).toBe(201);
  const t = await call("POST", `${A}/v1alpha1/addontemplates`, {
    apiVersion: "addon.open-cluster-management.io/v1alpha1",
    kind: "AddOnTemplate",
    metadata: { name },
    spec: { addonName: name, agentSpec: { workload: { manifests: [agent(name)] } } },
  });
  expect(t.status, JSON.stringify(t.body)).toBe(201);
  const cma = await call("POST", `${A}/v1alpha1/clustermanagementaddons`, {
    apiVersion: "addon.open-cluster-management.io/v1alpha1",
    kind: "ClusterManagementAddOn",
    metadata: { name },
    spec: {
      supportedConfigs: [{ group: "addon.open-cluster-management.io", resource: "addontemplates", defaultConfig: { name } }],
      installStrategy: { type: "Placements", placements: [{ namespace: "ao-ns", name, ...(rolloutStrategy ? { rolloutStrategy } : {}) }] },
    },
  });
  expect(cma.status, JSON.stringify(cma.body)).toBe(201);
}

const rule = (matchLabels: Record<string, string> | null, patches: unknown[]) => ({
  clusterSelector: { clusterSelectorTerms: matchLabels ? [{ labelSelector: { matchLabels } }] : [] },
  jsonPatchOverrides: patches,
});

const override = (
  name: string,
  addonName: string,
  rules: unknown[],
  selectors = [{ group: "apps", version: "v1", kind: "Deployment", name: `${addonName}-agent` }],
) => ({
  apiVersion: "placement.kubernetes-fleet.io/v1",
  kind: "ClusterResourceOverride",
  metadata: { name },
  spec: { placement: { name: addonName, scope: "ClusterManagementAddOn" }, clusterResourceSelectors: selectors, policy: { overrideRules: rules } },
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const work = async (cluster: string, name: string): Promise<any> => (await call("GET", WORK(cluster, name))).body;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const agentIn = (w: any) => w?.spec?.workload?.manifests?.find((m: { kind: string }) => m.kind === "Deployment");
const mca = async (cluster: string, name: string) => (await call("GET", MCA(cluster, name))).body;

/** Reports the add-on's work in `cluster` applied and available at its generation (as its agent would). */
async function succeed(cluster: string, name: string) {
  const gen = (await work(cluster, name)).metadata.generation;
  const k = (type: string) => ({
    type,
    status: "True",
    reason: "Test",
    message: "",
    observedGeneration: gen,
    lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
  });
  expect((await call("PATCH", `${WORK(cluster, name)}/status`, { status: { conditions: [k("Applied"), k("Available")] } }, merge)).status).toBe(200);
}

beforeAll(async () => {
  await createNamespaces("ao-ns");
  expect(
    (await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "aofleet" } })).status,
  ).toBe(201);
  await call("POST", `${G}/v1beta2/namespaces/ao-ns/managedclustersetbindings`, {
    apiVersion: "cluster.open-cluster-management.io/v1beta2",
    kind: "ManagedClusterSetBinding",
    metadata: { name: "aofleet" },
    spec: { clusterSet: "aofleet" },
  });
  await createCluster("ao1", { [CS]: "aofleet", "ao-ovr": "yes", region: "eu", size: "2" });
  await createCluster("ao2", { [CS]: "aofleet", "ao-ovr": "yes", region: "eu" });
  await createCluster("ao3", { [CS]: "aofleet", "ao-ovr": "yes", region: "us", size: "3" });
  for (const c of ["aq1", "aq2", "aq3"]) await createCluster(c, { [CS]: "aofleet", "ao-ovp": "yes", region: c === "aq3" ? "us" : "eu" });
});

describe("ClusterResourceOverrides of a template add-on", () => {
  it("renders each cluster's add-on work; a failing cluster keeps its work and says why; relabelling and deleting re-render", async () => {
    await addon("ovr");
    await waitFor(async () => (await Promise.all(["ao1", "ao2", "ao3"].map((c) => call("GET", WORK(c, "ovr"))))).every((r) => r.status === 200));
    const before = Object.fromEntries(await Promise.all(["ao1", "ao2", "ao3"].map(async (c) => [c, await work(c, "ovr")])));
    expect(before.ao1.metadata.annotations[APPLIED]).toBeUndefined();
    expect(condition(await mca("ao1", "ovr"), "Overridden")).toBeUndefined();

    const r = await call(
      "POST",
      CROS,
      override("ovr-eu", "ovr", [
        rule({ region: "eu" }, [{ op: "replace", path: "/spec/template/spec/containers/0/image", value: "eu.registry.example/ovr:1" }]),
        rule({ region: "eu" }, [{ op: "replace", path: "/spec/replicas", value: "${MEMBER-CLUSTER-LABEL-KEY-size}" }]),
        rule({ region: "eu" }, [{ op: "add", path: "/metadata/annotations", value: { cluster: "${MEMBER-CLUSTER-NAME}" } }]),
      ]),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    await waitFor(async () => agentIn(await work("ao1", "ovr")).spec.replicas === 2);
    const ao1 = await work("ao1", "ovr");
    expect(agentIn(ao1)).toMatchObject({
      metadata: { name: "ovr-agent", namespace: "open-cluster-management-agent-addon", annotations: { cluster: "ao1" } },
      spec: { replicas: 2, template: { spec: { containers: [{ name: "agent", image: "eu.registry.example/ovr:1" }] } } },
    });
    expect(ao1.metadata.annotations[APPLIED]).toBe("ovr-eu-0");
    const m1 = await mca("ao1", "ovr");
    expect(condition(m1, "Overridden")).toMatchObject({ status: "True", reason: "OverriddenSucceeded" });
    expect(m1.status.configReferences).toContainEqual(
      expect.objectContaining({ group: "placement.kubernetes-fleet.io", resource: "clusterresourceoverrides", name: "ovr-eu" }),
    );
    // ao2 has no size label: all or nothing, its work stays as it was, and its add-on says why.
    await waitFor(async () => condition(await mca("ao2", "ovr"), "Overridden")?.status === "False");
    const m2 = await mca("ao2", "ovr");
    expect(condition(m2, "Overridden")).toMatchObject({
      reason: "OverriddenFailed",
      message:
        'Failed to apply the override rules on the resources: ClusterResourceOverrideSnapshot "ovr-eu-0" failed to apply on Deployment "ovr-agent" in namespace "open-cluster-management-agent-addon": label key size not found on cluster ao2',
    });
    expect(condition(m2, "Progressing")).toMatchObject({ status: "False", reason: "Failed" });
    const ao2 = await work("ao2", "ovr");
    expect(ao2.spec).toEqual(before.ao2.spec);
    expect(ao2.metadata.resourceVersion).toBe(before.ao2.metadata.resourceVersion);
    // ao3 (us): no rule matches, its work gets no write at all.
    await waitFor(async () => condition(await mca("ao3", "ovr"), "Overridden")?.reason === "NoOverrideSpecified");
    expect((await work("ao3", "ovr")).metadata.resourceVersion).toBe(before.ao3.metadata.resourceVersion);

    // Labelling ao2 renders it now.
    expect((await call("PATCH", `${MC}/ao2`, { metadata: { labels: { size: "1" } } }, merge)).status).toBe(200);
    await waitFor(async () => agentIn(await work("ao2", "ovr")).spec.template.spec.containers[0].image === "eu.registry.example/ovr:1");
    expect(agentIn(await work("ao2", "ovr")).spec.replicas).toBe(1);
    await waitFor(async () => condition(await mca("ao2", "ovr"), "Overridden")?.reason === "OverriddenSucceeded");

    // Deleting the override renders the template again, without the annotation or the condition.
    expect((await call("DELETE", `${CROS}/ovr-eu`)).status).toBe(200);
    await waitFor(async () => agentIn(await work("ao1", "ovr")).spec.template.spec.containers[0].image === "quay.io/ovr:1");
    expect((await work("ao1", "ovr")).spec).toEqual(before.ao1.spec);
    expect((await work("ao1", "ovr")).metadata.annotations[APPLIED]).toBeUndefined();
    await waitFor(async () => condition(await mca("ao1", "ovr"), "Overridden") === undefined);
    expect((await work("ao3", "ovr")).metadata.resourceVersion).toBe(before.ao3.metadata.resourceVersion);
  });

  it("a change writes only the clusters it touches, one at a time under a Progressive install strategy", async () => {
    await addon("ovp", { type: "Progressive", progressive: { maxConcurrency: 1 } });
    const image = async (c: string) => agentIn(await work(c, "ovp"))?.spec.template.spec.containers[0].image as string | undefined;
    for (const c of ["aq1", "aq2", "aq3"]) {
      await waitFor(async () => (await image(c)) === "quay.io/ovp:1");
      await succeed(c, "ovp");
    }
    await waitFor(async () => condition(await mca("aq3", "ovp"), "Progressing")?.reason === "Completed");
    const before = Object.fromEntries(await Promise.all(["aq1", "aq2", "aq3"].map(async (c) => [c, await work(c, "ovp")])));
    const r = await call(
      "POST",
      CROS,
      override("ovp-eu", "ovp", [rule({ region: "eu" }, [{ op: "replace", path: "/spec/template/spec/containers/0/image", value: "eu/ovp:2" }])]),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    // One eu cluster first; the other waits for it; aq3 (us) is never written.
    await waitFor(async () => (await image("aq1")) === "eu/ovp:2" || (await image("aq2")) === "eu/ovp:2");
    const [first, second] = (await image("aq1")) === "eu/ovp:2" ? ["aq1", "aq2"] : ["aq2", "aq1"];
    expect(await image(second)).toBe("quay.io/ovp:1");
    expect((await work(second, "ovp")).metadata.resourceVersion).toBe(before[second].metadata.resourceVersion);
    await succeed(first, "ovp");
    await waitFor(async () => (await image(second)) === "eu/ovp:2");
    await succeed(second, "ovp");
    await waitFor(async () => condition(await mca(second, "ovp"), "Progressing")?.reason === "Completed");
    expect((await work("aq3", "ovp")).metadata.resourceVersion).toBe(before.aq3.metadata.resourceVersion);
    expect((await work(first, "ovp")).metadata.annotations[APPLIED]).toBe("ovp-eu-0");
  });

  it("validates the scope: a ClusterResourceOverride only, one per manifest of an add-on", async () => {
    const ro = await call("POST", `${FLEET}/namespaces/ao-ns/resourceoverrides`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourceOverride",
      metadata: { name: "addon" },
      spec: {
        placement: { name: "ovr", scope: "ClusterManagementAddOn" },
        resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: "ovr-agent" }],
        policy: { overrideRules: [rule(null, [{ op: "add", path: "/metadata/labels/a", value: "b" }])] },
      },
    });
    expect(ro.status).toBe(422);
    expect(ro.body.message).toContain("resourceOverride placement reference cannot be ClusterManagementAddOn scope");
    const patch = [rule(null, [{ op: "add", path: "/metadata/labels/a", value: "b" }])];
    expect((await call("POST", CROS, override("aov-one", "ovx", patch))).status).toBe(201);
    // Another naming the same add-on and manifest: refused as KubeFleet refuses two overrides of one object.
    const two = await call("POST", CROS, override("aov-two", "ovx", patch));
    expect(two.status).toBe(422);
    expect(two.body.message).toContain("the resource has been selected by both aov-two and aov-one, which is not supported");
    // One naming another add-on selects other objects: accepted.
    expect((await call("POST", CROS, override("aov-three", "ovy", patch))).status).toBe(201);
    // The scope is part of the immutable placement.
    const one = (await call("GET", `${CROS}/aov-one`)).body;
    const moved = await call("PUT", `${CROS}/aov-one`, { ...one, spec: { ...one.spec, placement: { name: "ovx" } } });
    expect(moved.status).toBe(422);
    expect(moved.body.message).toContain("The placement field is immutable");
    for (const n of ["aov-one", "aov-three"]) expect((await call("DELETE", `${CROS}/${n}`)).status).toBe(200);
  });
});
