// KubeFleet's ClusterResourceOverrides naming a template add-on (`placement: {name, scope:
// ClusterManagementAddOn}`, docs/overrides.md "Template add-ons"), inside workerd over the HTTP
// API: each cluster's add-on work carries its rendered manifests and names the snapshots applied;
// a failing override keeps that cluster's work and says why in the ManagedClusterAddOn's
// `Overridden` condition; a change writes only the clusters it touches, one at a time under a
// Progressive install strategy; a cluster's new labels re-render it; the validation of the scope;
// the add-on's dry run (its `render` subresource, src/addons/dry-run.ts); hostile overrides.
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

describe("the render subresource of a template add-on (a dry run for one cluster)", () => {
  const CMA = (name: string, v = "v1alpha1") => `${A}/${v}/clustermanagementaddons/${name}`;
  const RBAC = "/apis/rbac.authorization.k8s.io/v1";
  const as = (user: string) => ({ headers: { "Impersonate-User": user } });

  it("answers the work's manifests exactly as the manager writes them, beside the template, on the add-on and on its ManagedClusterAddOn", async () => {
    await createCluster("ad1", { [CS]: "aofleet", "ao-ovd": "yes", region: "eu", size: "2" });
    await createCluster("ad2", { [CS]: "aofleet", "ao-ovd": "yes", region: "eu" });
    await createCluster("ad3", { [CS]: "aofleet", region: "eu", size: "5" });
    await addon("ovd");
    const r0 = await call(
      "POST",
      CROS,
      override("ovd-eu", "ovd", [
        rule({ region: "eu" }, [{ op: "replace", path: "/spec/template/spec/containers/0/image", value: "eu.registry.example/ovd:1" }]),
        rule({ region: "eu" }, [{ op: "replace", path: "/spec/replicas", value: "${MEMBER-CLUSTER-LABEL-KEY-size}" }]),
      ]),
    );
    expect(r0.status, JSON.stringify(r0.body)).toBe(201);
    await waitFor(async () => agentIn(await work("ad1", "ovd"))?.spec.replicas === 2);
    const stored = await work("ad1", "ovd");
    const r = await call("GET", `${CMA("ovd")}/render?cluster=ad1`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      apiVersion: "flotilla.dev/v1alpha1",
      kind: "PlacementRender",
      placement: { kind: "ClusterManagementAddOn", name: "ovd" },
      cluster: "ad1",
      scheduled: true,
      clusterResourceOverrides: ["ovd-eu-0"],
      resourceOverrides: [],
    });
    expect(r.body.error).toBeUndefined();
    // Exactly what the agent receives: the stored work's spec and manifests.
    expect(r.body.works).toEqual([{ name: "addon-ovd-deploy-0", spec: stored.spec }]);
    expect(r.body.objects).toEqual(stored.spec.workload.manifests);
    expect(agentIn({ spec: { workload: { manifests: r.body.objects } } }).spec.template.spec.containers[0].image).toBe("eu.registry.example/ovd:1");
    // The template: the same rendering without the overrides (the install namespace resolved).
    const plain = agentIn({ spec: { workload: { manifests: r.body.template } } });
    expect(plain).toMatchObject({ metadata: { namespace: "open-cluster-management-agent-addon" }, spec: { replicas: 1 } });
    expect(plain.spec.template.spec.containers[0].image).toBe("quay.io/ovd:1");
    // The v1beta1 path answers the same; the ManagedClusterAddOn's renders for its namespace's cluster.
    expect((await call("GET", `${CMA("ovd", "v1beta1")}/render?cluster=ad1`)).body).toEqual(r.body);
    for (const path of [
      `${MCA("ad1", "ovd")}/render`,
      `${MCA("ad1", "ovd")}/render?cluster=ad1`,
      `${A}/v1beta1/namespaces/ad1/managedclusteraddons/ovd/render`,
    ]) {
      const m = await call("GET", path);
      expect(m.status, JSON.stringify(m.body)).toBe(200);
      expect(m.body).toEqual({ ...r.body, placement: { kind: "ManagedClusterAddOn", namespace: "ad1", name: "ovd" } });
    }
  });

  it("says why the overrides fail for a cluster, and renders for a cluster without the add-on", async () => {
    // ad2 has no size label: KubeFleet's message, nothing rendered, as its ManagedClusterAddOn says.
    const b = await call("GET", `${CMA("ovd")}/render?cluster=ad2`);
    expect(b.status).toBe(200);
    expect(b.body).toMatchObject({ scheduled: true, objects: [], works: [], clusterResourceOverrides: ["ovd-eu-0"] });
    expect(b.body.template.length).toBeGreaterThan(0);
    expect(b.body.error).toBe(
      'ClusterResourceOverrideSnapshot "ovd-eu-0" failed to apply on Deployment "ovd-agent" in namespace "open-cluster-management-agent-addon": label key size not found on cluster ad2',
    );
    await waitFor(async () => condition(await mca("ad2", "ovd"), "Overridden")?.status === "False");
    expect(condition(await mca("ad2", "ovd"), "Overridden").message).toBe(`Failed to apply the override rules on the resources: ${b.body.error}`);
    // ad3 is not decided: no ManagedClusterAddOn, rendered as it would be.
    const c = await call("GET", `${CMA("ovd")}/render?cluster=ad3`);
    expect(c.status).toBe(200);
    expect(c.body).toMatchObject({ scheduled: false, clusterResourceOverrides: ["ovd-eu-0"] });
    expect(agentIn({ spec: { workload: { manifests: c.body.objects } } }).spec.replicas).toBe(5);
    expect((await call("GET", `${MCA("ad3", "ovd")}/render`)).status).toBe(404);
    // An add-on without an AddOnTemplate renders nothing, and says so.
    const none = await call("POST", `${A}/v1alpha1/clustermanagementaddons`, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "ovd-none" },
      spec: {},
    });
    expect(none.status).toBe(201);
    const n = await call("GET", `${CMA("ovd-none")}/render?cluster=ad1`);
    expect(n.status).toBe(200);
    expect(n.body).toMatchObject({ objects: [], works: [], error: "no AddOnTemplate is configured for the add-on" });
  });

  it("answers 4xx for what it cannot render", async () => {
    const none = await call("GET", `${CMA("ovd")}/render`);
    expect(none.status).toBe(400);
    expect(none.body.message).toContain("needs the query parameter cluster");
    const unknown = await call("GET", `${CMA("ovd")}/render?cluster=nowhere`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe('managedclusters.cluster.open-cluster-management.io "nowhere" not found');
    const missing = await call("GET", `${CMA("nothing")}/render?cluster=ad1`);
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('clustermanagementaddons.addon.open-cluster-management.io "nothing" not found');
    const other = await call("GET", `${MCA("ad1", "ovd")}/render?cluster=ad2`);
    expect(other.status).toBe(400);
    expect(other.body.message).toContain("renders for the cluster of its namespace only");
    expect((await call("POST", `${CMA("ovd")}/render?cluster=ad1`, {})).status).toBe(405);
    // Not a subresource of the add-on's other kinds.
    expect((await call("GET", `${A}/v1alpha1/addontemplates/ovd/render?cluster=ad1`)).status).toBe(404);
  });

  it("is authorized as a read of the add-on (or of its ManagedClusterAddOn)", async () => {
    const role = await call("POST", `${RBAC}/clusterroles`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "ovd-addon-reader" },
      rules: [{ apiGroups: ["addon.open-cluster-management.io"], resources: ["clustermanagementaddons", "managedclusteraddons"], verbs: ["get"] }],
    });
    expect(role.status, JSON.stringify(role.body)).toBe(201);
    const binding = (kind: "ClusterRoleBinding" | "RoleBinding", user: string) => ({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind,
      metadata: { name: `ovd-${user}` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "ovd-addon-reader" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
    });
    expect((await call("POST", `${RBAC}/clusterrolebindings`, binding("ClusterRoleBinding", "carol"))).status).toBe(201);
    expect((await call("POST", `${RBAC}/namespaces/ad1/rolebindings`, binding("RoleBinding", "dana"))).status).toBe(201);
    const carol = await call("GET", `${CMA("ovd")}/render?cluster=ad1`, undefined, as("carol"));
    expect(carol.status, JSON.stringify(carol.body)).toBe(200);
    expect(carol.body.clusterResourceOverrides).toEqual(["ovd-eu-0"]);
    // dana reads the add-on of ad1's namespace only.
    expect((await call("GET", `${MCA("ad1", "ovd")}/render`, undefined, as("dana"))).status).toBe(200);
    const cma = await call("GET", `${CMA("ovd")}/render?cluster=ad1`, undefined, as("dana"));
    expect(cma.status).toBe(403);
    expect(cma.body.message).toContain('cannot get resource "clustermanagementaddons"');
    expect((await call("GET", `${MCA("ad2", "ovd")}/render`, undefined, as("dana"))).status).toBe(403);
    expect((await call("GET", `${CMA("ovd")}/render?cluster=ad1`, undefined, as("bob"))).status).toBe(403);
  });

  it("hostile overrides (a bad pointer, a huge value, an unknown variable) fail per cluster: nothing written, the render says why", async () => {
    expect((await call("DELETE", `${CROS}/ovd-eu`)).status).toBe(200);
    await waitFor(async () => condition(await mca("ad1", "ovd"), "Overridden") === undefined);
    await waitFor(async () => agentIn(await work("ad1", "ovd")).spec.template.spec.containers[0].image === "quay.io/ovd:1");
    const first = await work("ad1", "ovd");
    const hostile: [string, unknown[], string][] = [
      ["ovd-h-pointer", [{ op: "replace", path: "/spec/template/spec/containers/~9/image", value: "x" }], "/spec/template/spec/containers/~9/image"],
      [
        "ovd-h-huge",
        [{ op: "add", path: "/metadata/annotations", value: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, "v".repeat(15_000)])) }],
        "",
      ],
      ["ovd-h-variable", [{ op: "add", path: "/metadata/labels/where", value: "${MEMBER-CLUSTER-REGION}" }], "unknown variable ${MEMBER-CLUSTER-REGION}"],
    ];
    for (const [name, ops, why] of hostile) {
      const r = await call("POST", CROS, override(name, "ovd", [rule(null, ops)]));
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      const failed = `ClusterResourceOverrideSnapshot "${name}-0" failed to apply on Deployment "ovd-agent"`;
      await waitFor(async () => (condition(await mca("ad1", "ovd"), "Overridden")?.message ?? "").includes(failed));
      const m = await mca("ad1", "ovd");
      expect(condition(m, "Overridden"), name).toMatchObject({ status: "False", reason: "OverriddenFailed" });
      expect(condition(m, "Overridden").message, name).toContain(why);
      expect(condition(m, "Progressing"), name).toMatchObject({ status: "False", reason: "Failed" });
      // Nothing half-applied: the work is the one it had.
      const w = await work("ad1", "ovd");
      expect(w.metadata.resourceVersion, name).toBe(first.metadata.resourceVersion);
      expect(w.spec, name).toEqual(first.spec);
      const rendered = await call("GET", `${CMA("ovd")}/render?cluster=ad1`);
      expect(rendered.status, name).toBe(200);
      expect(rendered.body).toMatchObject({ objects: [], works: [], clusterResourceOverrides: [`${name}-0`] });
      expect(rendered.body.error, name).toContain(failed);
      expect((await call("DELETE", `${CROS}/${name}`)).status).toBe(200);
      await waitFor(async () => condition(await mca("ad1", "ovd"), "Overridden") === undefined);
    }
  });
});
