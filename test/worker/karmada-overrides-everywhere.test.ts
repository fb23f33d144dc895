// Karmada's OverridePolicy and ClusterOverridePolicy wherever Flotilla renders a cluster's works
// (docs/overrides.md "One order everywhere"), inside workerd over the HTTP API: on a
// ClusterResourcePlacement after KubeFleet's overrides (KubeFleet's first, then Karmada's), recorded
// on the works as Karmada records them and in the placement's dry run; a failing policy is the
// cluster's Overridden condition with nothing half-applied; a policy's change re-renders only the
// clusters it touches (one work written) and wakes the placement itself; its deletion restores
// the template. The same on a ManifestWorkReplicaSet and on a template add-on.
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { karmadaPolicyListings, readKarmadaPolicies } from "../../src/overrides/karmada-policies.ts";
import { OVERRIDE_POLICY_CHANGE_COUNTER } from "../../src/kinds/karmada-override.ts";
import { call, createCluster, createNamespaces, MCSET, merge, MWRS, placeByLabels, reportApplied as report, fleetWorksOf as worksOf } from "./helpers.ts";

const FLEET = "/apis/placement.kubernetes-fleet.io/v1";
const CRP = (name = "") => `${FLEET}/clusterresourceplacements${name ? `/${name}` : ""}`;
const ROS = (ns: string, name = "") => `${FLEET}/namespaces/${ns}/resourceoverrides${name ? `/${name}` : ""}`;
const K = "/apis/policy.karmada.io/v1alpha1";
const OPS = (ns: string, name = "") => `${K}/namespaces/${ns}/overridepolicies${name ? `/${name}` : ""}`;
const COPS = (name = "") => `${K}/clusteroverridepolicies${name ? `/${name}` : ""}`;
const W = "/apis/work.open-cluster-management.io";
const A = "/apis/addon.open-cluster-management.io";
const G = "/apis/cluster.open-cluster-management.io";
const CS = "cluster.open-cluster-management.io/clusterset";
const APPLIED_OP = "policy.karmada.io/applied-overrides";
const APPLIED_COP = "policy.karmada.io/applied-cluster-overrides";

async function run(name: string) {
  await env.REPLICASETS.getByName(`placement:/${name}`).reconcile("placement:", name);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const manifest = (work: any, kind: string) => work.spec.workload.manifests.find((m: KubeObject) => m.kind === kind);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const statusOf = (crp: any, cluster: string) => crp.status.placementStatuses.find((s: { clusterName: string }) => s.clusterName === cluster);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const clusterCondition = (crp: any, cluster: string, type: string) => (statusOf(crp, cluster)?.conditions ?? []).find((c: { type: string }) => c.type === type);

async function created(path: string, body: unknown) {
  const r = await call("POST", path, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}

const op = (ns: string, name: string, spec: unknown) => ({
  apiVersion: "policy.karmada.io/v1alpha1",
  kind: "OverridePolicy",
  metadata: { name, namespace: ns },
  spec,
});
const cop = (name: string, spec: unknown) => ({ apiVersion: "policy.karmada.io/v1alpha1", kind: "ClusterOverridePolicy", metadata: { name }, spec });
const DEPLOYMENT = { apiVersion: "apps/v1", kind: "Deployment" };

describe("Karmada's override policies on a ClusterResourcePlacement", () => {
  it("applies after KubeFleet's overrides, records them, fails per cluster, and re-renders only the clusters a change touches", async () => {
    await createCluster("kev-a", { region: "eu", size: "2" });
    await createCluster("kev-b", { region: "us", size: "3" });
    await createCluster("kev-c", { region: "us", size: "1" });
    await createNamespaces("kev-app");
    await created("/apis/apps/v1/namespaces/kev-app/deployments", {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", labels: { app: "web" } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: "web" } },
        template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "app", image: "nginx:1.27" }] } },
      },
    });
    const region = (r: string, registry: string) => ({
      clusterSelector: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { region: r } } }] },
      jsonPatchOverrides: [{ op: "replace", path: "/spec/template/spec/containers/0/image", value: `${registry}/nginx:1.27` }],
    });
    await created(ROS("kev-app"), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourceOverride",
      metadata: { name: "web" },
      spec: {
        placement: { name: "kev" },
        resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: "web" }],
        policy: {
          overrideRules: [
            region("eu", "eu.registry.example"),
            region("us", "us.registry.example"),
            {
              clusterSelector: { clusterSelectorTerms: [] },
              jsonPatchOverrides: [{ op: "replace", path: "/spec/replicas", value: "${MEMBER-CLUSTER-LABEL-KEY-size}" }],
            },
          ],
        },
      },
    });
    await created(CRP(), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "kev" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "kev-app" }],
        policy: { placementType: "PickFixed", clusterNames: ["kev-a", "kev-b", "kev-c"] },
        strategy: { rollingUpdate: { maxUnavailable: 1 } },
      },
    });
    let works = await worksOf("kev");
    expect(Object.keys(works).sort()).toEqual(["kev-a", "kev-b", "kev-c"]);
    for (const c of ["kev-a", "kev-b", "kev-c"]) await report(c, "kev-work");
    await run("kev");
    works = await worksOf("kev");
    expect(works["kev-b"].metadata.annotations[APPLIED_OP]).toBeUndefined();

    // An OverridePolicy: an annotation on kev-b by name; on kev-c (after KubeFleet's replicas from `size`) 9 replicas.
    // Its creation wakes the placement (no explicit run).
    const spec = (team: string) => ({
      resourceSelectors: [{ ...DEPLOYMENT, name: "web" }],
      overrideRules: [
        { targetCluster: { clusterNames: ["kev-b"] }, overriders: { annotationsOverrider: [{ operator: "add", value: { team } }] } },
        { targetCluster: { clusterNames: ["kev-c"] }, overriders: { plaintext: [{ path: "/spec/replicas", operator: "replace", value: 9 }] } },
      ],
    });
    const before = Object.fromEntries(Object.entries(works).map(([c, w]) => [c, w.metadata.generation]));
    await created(OPS("kev-app"), op("kev-app", "team", spec("platform")));
    // Its creation runs the placement: one of the two clusters it touches is updated (maxUnavailable 1).
    await vi.waitFor(
      async () => {
        const ws = await worksOf("kev");
        expect(["kev-b", "kev-c"].filter((c) => ws[c].metadata.generation !== before[c])).toHaveLength(1);
      },
      { timeout: 8000, interval: 100 },
    );
    for (let i = 0; i < 3; i++) {
      for (const c of ["kev-a", "kev-b", "kev-c"]) await report(c, "kev-work");
      await run("kev");
    }
    works = await worksOf("kev");
    // kev-a is not touched at all.
    expect(works["kev-a"].metadata.generation).toBe(before["kev-a"]);
    const dep = (c: string) => manifest(works[c], "Deployment");
    expect(["kev-a", "kev-b", "kev-c"].map((c) => [dep(c).spec.template.spec.containers[0].image, dep(c).spec.replicas])).toEqual([
      ["eu.registry.example/nginx:1.27", 2],
      ["us.registry.example/nginx:1.27", 3],
      ["us.registry.example/nginx:1.27", 9],
    ]);
    expect(dep("kev-a").metadata.annotations?.team).toBeUndefined();
    expect(JSON.parse(works["kev-b"].metadata.annotations[APPLIED_OP])).toEqual([
      { policyName: "team", overriders: { annotationsOverrider: [{ operator: "add", value: { team: "platform" } }] } },
    ]);
    expect(works["kev-a"].metadata.annotations[APPLIED_OP]).toBeUndefined();
    let crp = (await call("GET", CRP("kev"))).body;
    expect(clusterCondition(crp, "kev-b", "Overridden")).toMatchObject({ status: "True", reason: "OverriddenSucceeded" });
    expect(statusOf(crp, "kev-b").applicableResourceOverrides).toEqual([{ name: "web-0", namespace: "kev-app" }]);

    // The dry run shows both.
    const render = (await call("GET", `${CRP("kev")}/render?cluster=kev-c`)).body;
    expect(render.resourceOverrides).toEqual([{ name: "web-0", namespace: "kev-app" }]);
    expect(render.appliedOverrides).toEqual([{ policyName: "team", overriders: { plaintext: [{ path: "/spec/replicas", operator: "replace", value: 9 }] } }]);
    expect(render.objects.find((o: KubeObject) => o.kind === "Deployment").spec.replicas).toBe(9);

    // A change touching kev-b only: one work written.
    for (const c of ["kev-a", "kev-b", "kev-c"]) await report(c, "kev-work");
    await run("kev");
    const settled = Object.fromEntries(Object.entries(await worksOf("kev")).map(([c, w]) => [c, w.metadata.resourceVersion]));
    expect((await call("PATCH", OPS("kev-app", "team"), { spec: spec("payments") }, merge)).status).toBe(200);
    await run("kev");
    works = await worksOf("kev");
    expect(
      Object.entries(works)
        .filter(([c, w]) => w.metadata.resourceVersion !== settled[c])
        .map(([c]) => c),
    ).toEqual(["kev-b"]);
    expect(dep("kev-b").metadata.annotations.team).toBe("payments");

    // A ClusterOverridePolicy whose path does not resolve on kev-a: kev-a's works stay, its condition says why.
    await report("kev-b", "kev-work");
    await run("kev");
    const kept = (await worksOf("kev"))["kev-a"].metadata.resourceVersion;
    await created(
      COPS(),
      cop("kev-bad", {
        resourceSelectors: [{ ...DEPLOYMENT, namespace: "kev-app", name: "web" }],
        overrideRules: [{ targetCluster: { clusterNames: ["kev-a"] }, overriders: { plaintext: [{ path: "/spec/nope/x", operator: "replace", value: 1 }] } }],
      }),
    );
    await run("kev");
    works = await worksOf("kev");
    expect(works["kev-a"].metadata.resourceVersion).toBe(kept);
    crp = (await call("GET", CRP("kev"))).body;
    const failed = clusterCondition(crp, "kev-a", "Overridden");
    expect(failed).toMatchObject({ status: "False", reason: "OverriddenFailed" });
    expect(failed.message).toContain('ClusterOverridePolicy "kev-bad" failed to apply on Deployment "web" in namespace "kev-app" for cluster kev-a');
    expect(clusterCondition(crp, "kev-b", "Overridden")).toMatchObject({ status: "True" });

    // Deleting the policies restores the template where they applied (KubeFleet's override stays).
    expect((await call("DELETE", COPS("kev-bad"))).status).toBe(200);
    expect((await call("DELETE", OPS("kev-app", "team"))).status).toBe(200);
    for (let i = 0; i < 4; i++) {
      await run("kev");
      for (const c of ["kev-a", "kev-b", "kev-c"]) await report(c, "kev-work");
    }
    await run("kev");
    works = await worksOf("kev");
    expect(dep("kev-b").metadata.annotations?.team).toBeUndefined();
    expect(works["kev-b"].metadata.annotations[APPLIED_OP]).toBeUndefined();
    expect(dep("kev-c").spec.replicas).toBe(1);
    expect(clusterCondition((await call("GET", CRP("kev"))).body, "kev-a", "Overridden")).toMatchObject({ status: "True" });
  });
});

// ---------------------------------------------------------------------------------------------

const MWRS_LABEL = "work.open-cluster-management.io/manifestworkreplicaset";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function replicaSetWorks(ns: string, name: string): Promise<Record<string, any>> {
  const r = await call("GET", `${W}/v1/manifestworks?labelSelector=${encodeURIComponent(`${MWRS_LABEL}=${ns}.${name}`)}`);
  expect(r.status).toBe(200);
  return Object.fromEntries(r.body.items.map((w: { metadata: { namespace: string } }) => [w.metadata.namespace, w]));
}

beforeAll(async () => {
  await createNamespaces("kevrs", "kevao");
  expect(
    (await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "fleet" } })).status,
  ).toBe(201);
  for (const c of ["kr1", "kr2", "kr3"]) await createCluster(c, { [CS]: "fleet", app: "kevrs", "kevao-on": "yes" });
});

describe("Karmada's override policies on a ManifestWorkReplicaSet", () => {
  it("renders each cluster's work through them after KubeFleet's; a change writes the touched cluster's work only", async () => {
    await placeByLabels("kevrs", "web", { app: "kevrs" });
    await created(MWRS("kevrs"), {
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name: "web" },
      spec: {
        manifestWorkTemplate: {
          workload: {
            manifests: [
              {
                apiVersion: "apps/v1",
                kind: "Deployment",
                metadata: { name: "web", namespace: "default" },
                spec: { replicas: 1, template: { spec: { containers: [{ name: "web", image: "web:1" }] } } },
              },
            ],
          },
        },
        placementRefs: [{ name: "web" }],
      },
    });
    expect(Object.keys(await replicaSetWorks("kevrs", "web")).sort()).toEqual(["kr1", "kr2", "kr3"]);
    // KubeFleet's ResourceOverride sets the image everywhere; Karmada's OverridePolicy replaces the registry on kr2, after it.
    await created(ROS("kevrs"), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourceOverride",
      metadata: { name: "web" },
      spec: {
        placement: { name: "web", scope: "ManifestWorkReplicaSet" },
        resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: "web" }],
        policy: {
          overrideRules: [
            {
              clusterSelector: { clusterSelectorTerms: [] },
              jsonPatchOverrides: [{ op: "replace", path: "/spec/template/spec/containers/0/image", value: "fleet.example/web:2" }],
            },
          ],
        },
      },
    });
    const policy = (registry: string) =>
      op("kevrs", "mirror", {
        resourceSelectors: [{ ...DEPLOYMENT, name: "web" }],
        overrideRules: [
          { targetCluster: { clusterNames: ["kr2"] }, overriders: { imageOverrider: [{ component: "Registry", operator: "replace", value: registry }] } },
        ],
      });
    await created(OPS("kevrs"), policy("mirror.example"));
    const image = (w: { spec: { workload: { manifests: KubeObject[] } } }) =>
      (w.spec.workload.manifests[0] as unknown as { spec: { template: { spec: { containers: { image: string }[] } } } }).spec.template.spec.containers[0]!
        .image;
    await vi.waitFor(
      async () => {
        const ws = await replicaSetWorks("kevrs", "web");
        expect(["kr1", "kr2", "kr3"].map((c) => image(ws[c]))).toEqual(["fleet.example/web:2", "mirror.example/web:2", "fleet.example/web:2"]);
      },
      { timeout: 8000, interval: 100 },
    );
    let ws = await replicaSetWorks("kevrs", "web");
    expect(JSON.parse(ws.kr2.metadata.annotations[APPLIED_OP])[0].policyName).toBe("mirror");
    expect(ws.kr1.metadata.annotations[APPLIED_OP]).toBeUndefined();
    const rs = (await call("GET", `${MWRS("kevrs")}/web`)).body;
    expect(rs.status.conditions.find((c: { type: string }) => c.type === "Overridden")).toMatchObject({ status: "True", reason: "OverriddenSucceeded" });
    const render = (await call("GET", `${MWRS("kevrs")}/web/render?cluster=kr2`)).body;
    expect(render.appliedOverrides.map((a: { policyName: string }) => a.policyName)).toEqual(["mirror"]);

    // A change of the policy: kr2's work only.
    const versions = Object.fromEntries(Object.entries(ws).map(([c, w]) => [c, w.metadata.resourceVersion]));
    expect(
      (
        await call("PUT", OPS("kevrs", "mirror"), {
          ...policy("mirror2.example"),
          metadata: { name: "mirror", namespace: "kevrs", resourceVersion: (await call("GET", OPS("kevrs", "mirror"))).body.metadata.resourceVersion },
        })
      ).status,
    ).toBe(200);
    await vi.waitFor(async () => expect(image((await replicaSetWorks("kevrs", "web")).kr2)).toBe("mirror2.example/web:2"), { timeout: 8000, interval: 100 });
    ws = await replicaSetWorks("kevrs", "web");
    expect(
      Object.entries(ws)
        .filter(([c, w]) => w.metadata.resourceVersion !== versions[c])
        .map(([c]) => c),
    ).toEqual(["kr2"]);

    // A ClusterOverridePolicy failing on kr3: its work stays, the replica set's Overridden condition says why.
    const kr3 = (await replicaSetWorks("kevrs", "web")).kr3.metadata.resourceVersion;
    await created(
      COPS(),
      cop("kevrs-broken", {
        resourceSelectors: [{ ...DEPLOYMENT, name: "web", namespace: "kevrs" }],
        overrideRules: [{ targetCluster: { clusterNames: ["kr3"] }, overriders: { plaintext: [{ path: "/spec/nope/x", operator: "add", value: 1 }] } }],
      }),
    );
    const overridden = async () => (await call("GET", `${MWRS("kevrs")}/web`)).body.status.conditions.find((c: { type: string }) => c.type === "Overridden");
    await vi.waitFor(async () => expect(await overridden()).toMatchObject({ status: "False", reason: "OverriddenFailed" }), { timeout: 8000, interval: 100 });
    expect((await overridden()).message).toContain(
      'kr3: ClusterOverridePolicy "kevrs-broken" failed to apply on Deployment "web" in namespace "default" for cluster kr3',
    );
    expect((await replicaSetWorks("kevrs", "web")).kr3.metadata.resourceVersion).toBe(kr3);
    expect((await call("DELETE", COPS("kevrs-broken"))).status).toBe(200);
    await vi.waitFor(async () => expect(await overridden()).toMatchObject({ status: "True" }), { timeout: 8000, interval: 100 });

    // Deleted: the template (with KubeFleet's override) again.
    expect((await call("DELETE", OPS("kevrs", "mirror"))).status).toBe(200);
    await vi.waitFor(async () => expect(image((await replicaSetWorks("kevrs", "web")).kr2)).toBe("fleet.example/web:2"), { timeout: 8000, interval: 100 });
    expect((await replicaSetWorks("kevrs", "web")).kr2.metadata.annotations[APPLIED_OP]).toBeUndefined();
  });
});

describe("Karmada's ClusterOverridePolicies on a template add-on", () => {
  it("renders the add-on's work through them, records them, and rolls a change out to the touched cluster only", async () => {
    await call("POST", `${G}/v1beta2/namespaces/kevao/managedclustersetbindings`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "fleet" },
      spec: { clusterSet: "fleet" },
    });
    await created(`${G}/v1beta1/namespaces/kevao/placements`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "kevhello" },
      spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { "kevao-on": "yes" } } } }] },
    });
    await created(`${A}/v1alpha1/addontemplates`, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "AddOnTemplate",
      metadata: { name: "kevhello" },
      spec: {
        addonName: "kevhello",
        agentSpec: {
          workload: {
            manifests: [
              {
                apiVersion: "apps/v1",
                kind: "Deployment",
                metadata: { name: "kevhello-agent", namespace: "{{INSTALL_NAMESPACE}}" },
                spec: {
                  replicas: 1,
                  selector: { matchLabels: { app: "kevhello" } },
                  template: { metadata: { labels: { app: "kevhello" } }, spec: { containers: [{ name: "agent", image: "quay.io/kevhello:1" }] } },
                },
              },
            ],
          },
        },
      },
    });
    await created(`${A}/v1alpha1/clustermanagementaddons`, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "kevhello" },
      spec: {
        supportedConfigs: [{ group: "addon.open-cluster-management.io", resource: "addontemplates", defaultConfig: { name: "kevhello" } }],
        installStrategy: { type: "Placements", placements: [{ namespace: "kevao", name: "kevhello" }] },
      },
    });
    const WORK = (c: string) => `${W}/v1/namespaces/${c}/manifestworks/addon-kevhello-deploy-0`;
    const agentImage = async (c: string) =>
      (await call("GET", WORK(c))).body?.spec?.workload?.manifests?.find((m: { kind: string }) => m.kind === "Deployment")?.spec.template.spec.containers[0]
        .image;
    await vi.waitFor(async () => expect(await agentImage("kr3")).toBe("quay.io/kevhello:1"), { timeout: 8000, interval: 100 });
    const policy = (tag: string) =>
      cop("kevhello-tag", {
        resourceSelectors: [{ ...DEPLOYMENT, name: "kevhello-agent" }],
        overrideRules: [{ targetCluster: { clusterNames: ["kr3"] }, overriders: { imageOverrider: [{ component: "Tag", operator: "replace", value: tag }] } }],
      });
    await created(COPS(), policy("2"));
    await vi.waitFor(async () => expect(await agentImage("kr3")).toBe("quay.io/kevhello:2"), { timeout: 8000, interval: 100 });
    expect(await agentImage("kr1")).toBe("quay.io/kevhello:1");
    const w3 = (await call("GET", WORK("kr3"))).body;
    expect(JSON.parse(w3.metadata.annotations[APPLIED_COP])[0].policyName).toBe("kevhello-tag");
    const mca = (await call("GET", `${A}/v1alpha1/namespaces/kr3/managedclusteraddons/kevhello`)).body;
    expect(mca.status.configReferences.map((r: { resource: string; name: string }) => `${r.resource}/${r.name}`)).toContain(
      "clusteroverridepolicies/kevhello-tag",
    );
    const render = (await call("GET", `${A}/v1alpha1/clustermanagementaddons/kevhello/render?cluster=kr3`)).body;
    expect(render.appliedClusterOverrides.map((a: { policyName: string }) => a.policyName)).toEqual(["kevhello-tag"]);
    expect(render.template.find((m: KubeObject) => m.kind === "Deployment").spec.template.spec.containers[0].image).toBe("quay.io/kevhello:1");

    // A change: kr3's work only.
    const versions = Object.fromEntries(
      await Promise.all(["kr1", "kr2", "kr3"].map(async (c) => [c, (await call("GET", WORK(c))).body.metadata.resourceVersion])),
    );
    const current = (await call("GET", COPS("kevhello-tag"))).body;
    expect(
      (await call("PUT", COPS("kevhello-tag"), { ...policy("3"), metadata: { name: "kevhello-tag", resourceVersion: current.metadata.resourceVersion } }))
        .status,
    ).toBe(200);
    await vi.waitFor(async () => expect(await agentImage("kr3")).toBe("quay.io/kevhello:3"), { timeout: 8000, interval: 100 });
    for (const c of ["kr1", "kr2"]) expect((await call("GET", WORK(c))).body.metadata.resourceVersion).toBe(versions[c]);
    expect((await call("DELETE", COPS("kevhello-tag"))).status).toBe(200);
    await vi.waitFor(async () => expect(await agentImage("kr3")).toBe("quay.io/kevhello:1"), { timeout: 8000, interval: 100 });
  });
});

describe("the isolate's lists of Karmada's override policies", () => {
  it("are listed again only when the change counter moved, and a committed policy is always seen", async () => {
    await createNamespaces("oplists");
    const names = async () => (await readKarmadaPolicies(env, new Set(["oplists"]))).map((p) => `${p.namespace}/${p.name}`);
    const before = await names();
    const listed = karmadaPolicyListings();
    // No policy changed: the lists the isolate read are used (one read of the change counter).
    expect(await names()).toEqual(before);
    expect(karmadaPolicyListings()).toBe(listed);
    await created(OPS("oplists"), op("oplists", "fresh", { overrideRules: [{ overriders: { labelsOverrider: [{ operator: "add", value: { a: "b" } }] } }] }));
    // The policy's write moved the counter in its own batch: the next read lists again and finds it.
    expect(await names()).toContain("oplists/fresh");
    expect(karmadaPolicyListings()).toBe(listed + 1);
    expect((await readKarmadaPolicies(env, new Set(["elsewhere"]), false)).map((p) => p.name)).not.toContain("fresh");
    expect(karmadaPolicyListings()).toBe(listed + 1);
    // A policy written by another isolate moves the counter too: this isolate lists again.
    await env.DB.prepare("UPDATE counters SET value = value + 1 WHERE id = ?").bind(OVERRIDE_POLICY_CHANGE_COUNTER).run();
    await names();
    expect(karmadaPolicyListings()).toBe(listed + 2);
    await names();
    expect(karmadaPolicyListings()).toBe(listed + 2);
  });
});
