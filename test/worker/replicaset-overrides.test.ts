// KubeFleet's ResourceOverrides naming a ManifestWorkReplicaSet (`placement.scope:
// ManifestWorkReplicaSet`, docs/overrides.md "ManifestWorkReplicaSets"), inside workerd over the
// HTTP API: each cluster's work carries its rendered manifests and names the snapshots applied;
// a failing override keeps that cluster's work and says why in the `Overridden` condition; a
// change re-renders only the clusters it touches, one at a time under a Progressive rollout;
// the validation of the scope.
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { call, condition, createNamespaces, MCSET, createCluster, merge, MWRS, placeByLabels as placement } from "./helpers.ts";

const W = "/apis/work.open-cluster-management.io";
const WORK = (cluster: string, name: string) => `${W}/v1/namespaces/${cluster}/manifestworks/${name}`;
const CS = "cluster.open-cluster-management.io/clusterset";
const MWRS_LABEL = "work.open-cluster-management.io/manifestworkreplicaset";
const APPLIED = "work.flotilla.dev/applied-overrides";
const FLEET = "/apis/placement.kubernetes-fleet.io/v1";
const ROS = (ns: string) => `${FLEET}/namespaces/${ns}/resourceoverrides`;

const deployment = (image = "web:1") => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", namespace: "default" },
  spec: { replicas: 1, template: { spec: { containers: [{ name: "web", image }] } } },
});
const configMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "web", namespace: "default" }, data: { a: "1" } };
const template = () => ({ workload: { manifests: [deployment(), configMap] } });

async function createReplicaSet(ns: string, name: string, placementRefs: unknown[]) {
  const r = await call("POST", MWRS(ns), {
    apiVersion: "work.open-cluster-management.io/v1alpha1",
    kind: "ManifestWorkReplicaSet",
    metadata: { name },
    spec: { manifestWorkTemplate: template(), placementRefs },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function works(ns: string, name: string): Promise<Record<string, any>> {
  const r = await call("GET", `${W}/v1/manifestworks?labelSelector=${encodeURIComponent(`${MWRS_LABEL}=${ns}.${name}`)}`);
  expect(r.status).toBe(200);
  return Object.fromEntries(r.body.items.map((w: { metadata: { namespace: string } }) => [w.metadata.namespace, w]));
}

const mwrs = async (ns: string, name: string) => (await call("GET", `${MWRS(ns)}/${name}`)).body;

/** The Deployment a work carries. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const deploymentIn = (w: any) => w.spec.workload.manifests.find((m: { kind: string }) => m.kind === "Deployment");

const rule = (matchLabels: Record<string, string> | null, patches: unknown[]) => ({
  clusterSelector: { clusterSelectorTerms: matchLabels ? [{ labelSelector: { matchLabels } }] : [] },
  jsonPatchOverrides: patches,
});

function override(ns: string, name: string, replicaSet: string, rules: unknown[], kinds = [{ group: "apps", version: "v1", kind: "Deployment", name: "web" }]) {
  return {
    apiVersion: "placement.kubernetes-fleet.io/v1",
    kind: "ResourceOverride",
    metadata: { name, namespace: ns },
    spec: { placement: { name: replicaSet, scope: "ManifestWorkReplicaSet" }, resourceSelectors: kinds, policy: { overrideRules: rules } },
  };
}

const cond = (type: string, status: string, observedGeneration: number) => ({
  type,
  status,
  observedGeneration,
  reason: "Test",
  message: "",
  lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
});

/** Reports a work succeeded at its generation, then waits for a run of its replica set that starts after the report. */
async function succeeded(cluster: string, work: string) {
  const gen = (await call("GET", WORK(cluster, work))).body.metadata.generation;
  const conditions = [cond("Applied", "True", gen), cond("Available", "True", gen), cond("Progressing", "False", gen)];
  expect((await call("PATCH", `${WORK(cluster, work)}/status`, { status: { conditions } }, merge)).status).toBe(200);
  const [ns, name] = [work.slice(0, work.indexOf(".")), work.slice(work.indexOf(".") + 1)];
  await env.REPLICASETS.getByName(`${ns}/${name}`).reconcile(ns, name);
}

/** Waits up to `ms` milliseconds for `check` to hold (vitest's `vi.waitFor`, polling every 100 ms). */
async function waitFor(check: () => Promise<boolean>, ms = 8000) {
  await vi.waitFor(async () => expect(await check()).toBe(true), { timeout: ms, interval: 100 });
}

beforeAll(async () => {
  await createNamespaces("ovr", "ovroll", "ovrval", "ovrrender", "ovrhidden");
  expect(
    (await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "fleet" } })).status,
  ).toBe(201);
  await createCluster("eu1", { [CS]: "fleet", app: "ovr", region: "eu", size: "2" });
  await createCluster("us1", { [CS]: "fleet", app: "ovr", region: "us", size: "3" });
  await createCluster("eu2", { [CS]: "fleet", app: "ovr", region: "eu" });
  for (const c of ["p1", "p2", "p3"]) await createCluster(c, { [CS]: "fleet", app: "ovroll", region: c === "p3" ? "us" : "eu" });
});

describe("ResourceOverrides of a ManifestWorkReplicaSet", () => {
  it("renders each cluster's work; a failing cluster keeps its work and says why", async () => {
    await placement("ovr", "web", { app: "ovr" });
    await createReplicaSet("ovr", "web", [{ name: "web" }]);
    expect(Object.keys(await works("ovr", "web")).sort()).toEqual(["eu1", "eu2", "us1"]);
    const before = await works("ovr", "web");

    const r = await call(
      "POST",
      ROS("ovr"),
      override("ovr", "web", "web", [
        rule({ region: "eu" }, [{ op: "replace", path: "/spec/template/spec/containers/0/image", value: "eu.registry.example/web:1" }]),
        rule({ size: "3" }, [{ op: "replace", path: "/spec/replicas", value: "${MEMBER-CLUSTER-LABEL-KEY-size}" }]),
        rule({ region: "eu" }, [
          { op: "add", path: "/metadata/annotations", value: { cluster: "${MEMBER-CLUSTER-NAME}", size: "${MEMBER-CLUSTER-LABEL-KEY-size}" } },
        ]),
      ]),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    await waitFor(async () => deploymentIn((await works("ovr", "web")).eu1).spec.template.spec.containers[0].image === "eu.registry.example/web:1");
    const ws = await works("ovr", "web");
    // eu1: both eu rules (its size label is 2); us1: the replicas rule, typed as the field; eu2 has no size label: failed.
    expect(deploymentIn(ws.eu1)).toEqual({
      ...deployment("eu.registry.example/web:1"),
      metadata: { name: "web", namespace: "default", annotations: { cluster: "eu1", size: "2" } },
    });
    expect(deploymentIn(ws.us1)).toEqual({ ...deployment(), spec: { ...deployment().spec, replicas: 3 } });
    expect(ws.eu1.spec.workload.manifests[1]).toEqual(configMap);
    expect(ws.eu1.metadata.annotations[APPLIED]).toBe("web-0");
    expect(ws.us1.metadata.annotations[APPLIED]).toBe("web-0");
    // eu2 keeps the work it had, untouched (never half-applied).
    expect(ws.eu2.spec).toEqual(template());
    expect(ws.eu2.metadata.resourceVersion).toBe(before.eu2.metadata.resourceVersion);
    expect(ws.eu2.metadata.annotations?.[APPLIED]).toBeUndefined();
    const m = await mwrs("ovr", "web");
    expect(condition(m, "Overridden")).toMatchObject({
      status: "False",
      reason: "OverriddenFailed",
      message:
        'Failed to apply the override rules in 1 cluster(s): eu2: ResourceOverrideSnapshot "web-0" failed to apply on Deployment "web" in namespace "default": label key size not found on cluster eu2',
    });
    expect(condition(m, "PlacementRolledOut")).toMatchObject({ status: "False" });

    // Labelling eu2 runs the replica set, which renders it now.
    expect(
      (await call("PATCH", `/apis/cluster.open-cluster-management.io/v1/managedclusters/eu2`, { metadata: { labels: { size: "1" } } }, merge)).status,
    ).toBe(200);
    await waitFor(async () => deploymentIn((await works("ovr", "web")).eu2).spec.template.spec.containers[0].image !== "web:1");
    const eu2 = (await works("ovr", "web")).eu2;
    expect(deploymentIn(eu2).spec.template.spec.containers[0].image).toBe("eu.registry.example/web:1");
    expect(deploymentIn(eu2).metadata.annotations).toEqual({ cluster: "eu2", size: "1" });
    expect(condition(await mwrs("ovr", "web"), "Overridden")).toMatchObject({
      status: "True",
      reason: "OverriddenSucceeded",
      message: "The override rules are applied in 3 cluster(s)",
    });

    // Deleting the override renders the template again everywhere, and the condition goes.
    expect((await call("DELETE", `${ROS("ovr")}/web`)).status).toBe(200);
    await waitFor(async () => Object.values(await works("ovr", "web")).every((w) => JSON.stringify(w.spec) === JSON.stringify(template())));
    const after = await works("ovr", "web");
    for (const w of Object.values(after)) expect(w.metadata.annotations?.[APPLIED]).toBeUndefined();
    expect(condition(await mwrs("ovr", "web"), "Overridden")).toBeUndefined();
  });

  it("a change re-renders only the clusters it touches, one at a time under a Progressive rollout", async () => {
    await placement("ovroll", "roll", { app: "ovroll" });
    await createReplicaSet("ovroll", "app", [{ name: "roll", rolloutStrategy: { type: "Progressive", progressive: { maxConcurrency: 1 } } }]);
    for (const c of ["p1", "p2", "p3"]) {
      await waitFor(async () => (await works("ovroll", "app"))[c] !== undefined);
      await succeeded(c, "ovroll.app");
    }
    expect(condition(await mwrs("ovroll", "app"), "PlacementRolledOut")).toMatchObject({ status: "True" });
    const before = await works("ovroll", "app");

    // Only the eu clusters (p1, p2) render differently: p3 gets no write at all; p1 goes first.
    const r = await call(
      "POST",
      ROS("ovroll"),
      override("ovroll", "eu", "app", [rule({ region: "eu" }, [{ op: "replace", path: "/spec/template/spec/containers/0/image", value: "eu/web:2" }])]),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    await waitFor(async () => (await works("ovroll", "app")).p1.metadata.generation === 2);
    let ws = await works("ovroll", "app");
    expect(deploymentIn(ws.p1).spec.template.spec.containers[0].image).toBe("eu/web:2");
    expect(deploymentIn(ws.p2).spec.template.spec.containers[0].image).toBe("web:1");
    expect(ws.p2.metadata.resourceVersion).toBe(before.p2.metadata.resourceVersion);
    expect(ws.p3.metadata.resourceVersion).toBe(before.p3.metadata.resourceVersion);
    await succeeded("p1", "ovroll.app");
    ws = await works("ovroll", "app");
    expect(deploymentIn(ws.p2).spec.template.spec.containers[0].image).toBe("eu/web:2");
    expect(ws.p3.metadata.resourceVersion).toBe(before.p3.metadata.resourceVersion);
    await succeeded("p2", "ovroll.app");
    const m = await mwrs("ovroll", "app");
    expect(condition(m, "PlacementRolledOut")).toMatchObject({ status: "True", reason: "Complete" });
    expect(condition(m, "Overridden")).toMatchObject({ status: "True", message: "The override rules are applied in 2 cluster(s)" });
    expect((await works("ovroll", "app")).p3.metadata.resourceVersion).toBe(before.p3.metadata.resourceVersion);
  });

  it("hostile overrides fail per cluster with nothing half-applied; a rule applies to the template, never again to its output", async () => {
    await placement("ovrval", "hv", { app: "ovr" });
    await createReplicaSet("ovrval", "hv", [{ name: "hv" }]);
    await waitFor(async () => Object.keys(await works("ovrval", "hv")).length === 3);
    const before = await works("ovrval", "hv");
    const overridden = async (rules: unknown[], name = "hv") => {
      const r = await call("POST", ROS("ovrval"), override("ovrval", name, "hv", rules));
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      await env.REPLICASETS.getByName("ovrval/hv").reconcile("ovrval", "hv");
    };
    const cases: [unknown[], string][] = [
      // A pointer past the containers (a good op after it must not stay applied).
      [
        [
          rule(null, [
            { op: "add", path: "/metadata/labels", value: { half: "applied" } },
            { op: "replace", path: "/spec/template/spec/containers/7/image", value: "x" },
          ]),
        ],
        "JSON patch operation 1 (replace /spec/template/spec/containers/7/image) failed: the path does not exist",
      ],
      // A variable of the reserved prefix that does not exist.
      [[rule(null, [{ op: "add", path: "/metadata/labels", value: { r: "${MEMBER-CLUSTER-REGION}" } }])], "unknown variable ${MEMBER-CLUSTER-REGION}"],
      // A value past the engine's limit of 256 KiB per object (20 operations of 14,000 bytes).
      [
        [
          rule(
            null,
            Array.from({ length: 20 }, (_, i) => ({ op: "add", path: `/metadata/annotations`, value: { [`a${i}`]: "x".repeat(14_000) } })),
          ),
        ],
        "the JSON patch values for one object exceed 262144 bytes",
      ],
    ];
    for (const [i, [rules, message]] of cases.entries()) {
      await overridden(rules, `hv-${i}`);
      const m = await mwrs("ovrval", "hv");
      expect(condition(m, "Overridden")).toMatchObject({ status: "False", reason: "OverriddenFailed" });
      expect(condition(m, "Overridden").message).toContain("Failed to apply the override rules in 3 cluster(s)");
      expect(condition(m, "Overridden").message).toContain(message);
      const ws = await works("ovrval", "hv");
      for (const c of ["eu1", "eu2", "us1"]) {
        expect(ws[c].spec).toEqual(template());
        expect(ws[c].metadata.resourceVersion).toBe(before[c].metadata.resourceVersion);
      }
      expect((await call("DELETE", `${ROS("ovrval")}/hv-${i}`)).status).toBe(200);
    }
    // An append to a list: each run renders from the template, so runs that follow add nothing more (no loop).
    await overridden([rule(null, [{ op: "add", path: "/spec/template/spec/containers/-", value: { name: "sidecar", image: "proxy:1" } }])], "hv-append");
    await waitFor(async () => deploymentIn((await works("ovrval", "hv")).eu1).spec.template.spec.containers.length === 2);
    const once = await works("ovrval", "hv");
    for (let i = 0; i < 3; i++) await env.REPLICASETS.getByName("ovrval/hv").reconcile("ovrval", "hv");
    const again = await works("ovrval", "hv");
    for (const c of ["eu1", "eu2", "us1"]) {
      expect(deploymentIn(again[c]).spec.template.spec.containers.map((x: { name: string }) => x.name)).toEqual(["web", "sidecar"]);
      expect(again[c].metadata.resourceVersion).toBe(once[c].metadata.resourceVersion);
    }
    expect(condition(await mwrs("ovrval", "hv"), "Overridden")).toMatchObject({ status: "True" });
  });

  it("validates the scope: a ResourceOverride only, one per manifest of a replica set", async () => {
    const cro = await call("POST", `${FLEET}/clusterresourceoverrides`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourceOverride",
      metadata: { name: "mwrs" },
      spec: {
        placement: { name: "web", scope: "ManifestWorkReplicaSet" },
        clusterResourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "ovrval" }],
        policy: { overrideRules: [rule(null, [{ op: "add", path: "/metadata/labels/a", value: "b" }])] },
      },
    });
    expect(cro.status).toBe(422);
    expect(cro.body.message).toContain("clusterResourceOverride placement reference cannot be ManifestWorkReplicaSet scope");
    const patch = [rule(null, [{ op: "add", path: "/metadata/labels/a", value: "b" }])];
    expect((await call("POST", ROS("ovrval"), override("ovrval", "one", "web", patch))).status).toBe(201);
    // Another naming the same replica set and manifest: ambiguous order, refused as KubeFleet refuses two overrides of one object.
    const two = await call("POST", ROS("ovrval"), override("ovrval", "two", "web", patch));
    expect(two.status).toBe(422);
    expect(two.body.message).toContain("the resource has been selected by both two and one, which is not supported");
    // One naming another replica set, or a placement, selects other objects: accepted.
    expect((await call("POST", ROS("ovrval"), override("ovrval", "three", "other", patch))).status).toBe(201);
    const forPlacement = override("ovrval", "four", "web", patch);
    forPlacement.spec.placement = { name: "web", scope: "Namespaced" };
    expect((await call("POST", ROS("ovrval"), forPlacement)).status).toBe(201);
    // An unknown scope is refused by the schema.
    const bad = override("ovrval", "five", "web", patch);
    (bad.spec.placement as { scope: string }).scope = "Replicas";
    expect((await call("POST", ROS("ovrval"), bad)).status).toBe(422);
    // The scope is part of the immutable placement.
    const one = (await call("GET", `${ROS("ovrval")}/one`)).body;
    const moved = await call("PUT", `${ROS("ovrval")}/one`, { ...one, spec: { ...one.spec, placement: { name: "web", scope: "Namespaced" } } });
    expect(moved.status).toBe(422);
    expect(moved.body.message).toContain("The placement field is immutable");
  });
});

describe("the render subresource of a ManifestWorkReplicaSet (a dry run for one cluster)", () => {
  const RENDER = (ns: string, name: string, cluster?: string) => `${MWRS(ns)}/${name}/render${cluster ? `?cluster=${cluster}` : ""}`;

  it("answers each cluster's work exactly as written, the template, the overrides applied, or why they fail", async () => {
    await placement("ovrrender", "web", { app: "ovr" });
    await createReplicaSet("ovrrender", "web", [{ name: "web" }]);
    const r = await call(
      "POST",
      ROS("ovrrender"),
      override("ovrrender", "web", "web", [
        rule({ region: "eu" }, [{ op: "replace", path: "/spec/template/spec/containers/0/image", value: "eu.registry.example/web:1" }]),
        rule({ region: "eu" }, [{ op: "replace", path: "/spec/replicas", value: "${MEMBER-CLUSTER-LABEL-KEY-size}" }]),
        rule({ "kubernetes-fleet.io/member-cluster-name": "eu2" }, [{ op: "replace", path: "/spec/paused/x", value: true }]),
      ]),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    await waitFor(async () => deploymentIn((await works("ovrrender", "web")).eu1)?.spec.replicas === 2);
    const eu1 = await call("GET", RENDER("ovrrender", "web", "eu1"));
    expect(eu1.status, JSON.stringify(eu1.body)).toBe(200);
    expect(eu1.body).toMatchObject({
      apiVersion: "flotilla.dev/v1alpha1",
      kind: "PlacementRender",
      placement: { kind: "ManifestWorkReplicaSet", namespace: "ovrrender", name: "web" },
      cluster: "eu1",
      scheduled: true,
      clusterResourceOverrides: [],
      resourceOverrides: [{ name: "web-0", namespace: "ovrrender" }],
    });
    expect(eu1.body.error).toBeUndefined();
    // Exactly what the agent receives: the stored work's spec.
    const work = (await call("GET", WORK("eu1", "ovrrender.web"))).body;
    expect(eu1.body.works).toEqual([{ name: "ovrrender.web", spec: work.spec }]);
    expect(eu1.body.objects).toEqual(work.spec.workload.manifests);
    expect(deploymentIn({ spec: { workload: { manifests: eu1.body.template } } })).toEqual(deployment());
    expect(work.metadata.annotations[APPLIED]).toBe("web-0");
    // us1: no rule matches; eu2's path does not resolve: the override fails there, nothing rendered.
    const us1 = (await call("GET", RENDER("ovrrender", "web", "us1"))).body;
    expect(us1).toMatchObject({ scheduled: true, resourceOverrides: [] });
    expect(us1.works[0].spec).toEqual((await call("GET", WORK("us1", "ovrrender.web"))).body.spec);
    const eu2 = (await call("GET", RENDER("ovrrender", "web", "eu2"))).body;
    expect(eu2.objects).toEqual([]);
    expect(eu2.works).toEqual([]);
    expect(eu2.error).toContain('ResourceOverrideSnapshot "web-0" failed to apply on Deployment "web" in namespace "default": ');
    // p1 and p3 are not decided (app: ovroll): rendered as they would be, and said so (p1 has no size label).
    const p1 = (await call("GET", RENDER("ovrrender", "web", "p1"))).body;
    expect(p1).toMatchObject({ scheduled: false, resourceOverrides: [{ name: "web-0", namespace: "ovrrender" }] });
    expect(p1.error).toContain("label key size not found on cluster p1");
    const p3 = (await call("GET", RENDER("ovrrender", "web", "p3"))).body;
    expect(p3).toMatchObject({ scheduled: false, resourceOverrides: [] });
    expect(deploymentIn(p3.works[0])).toEqual(deployment());
  });

  it("answers 4xx for what it cannot render, and is authorized as a read of the replica set", async () => {
    const none = await call("GET", RENDER("ovrrender", "web"));
    expect(none.status).toBe(400);
    expect(none.body.message).toContain("needs the query parameter cluster");
    const unknown = await call("GET", RENDER("ovrrender", "web", "nowhere"));
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe('managedclusters.cluster.open-cluster-management.io "nowhere" not found');
    const missing = await call("GET", RENDER("ovrrender", "nothing", "eu1"));
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('manifestworkreplicasets.work.open-cluster-management.io "nothing" not found');
    expect((await call("POST", RENDER("ovrrender", "web", "eu1"), {})).status).toBe(405);
    // Not a subresource of a ManifestWork.
    expect((await call("GET", `${WORK("eu1", "ovrrender.web")}/render?cluster=eu1`)).status).toBe(404);
    // A viewer of the namespace may; nobody else.
    const rb = await call("POST", `/apis/rbac.authorization.k8s.io/v1/namespaces/ovrrender/rolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "dana-view" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "dana" }],
    });
    expect(rb.status, JSON.stringify(rb.body)).toBe(201);
    const as = (user: string) => ({ headers: { "Impersonate-User": user } });
    const dana = await call("GET", RENDER("ovrrender", "web", "eu1"), undefined, as("dana"));
    expect(dana.status, JSON.stringify(dana.body)).toBe(200);
    expect(deploymentIn({ spec: { workload: { manifests: dana.body.objects } } }).spec.replicas).toBe(2);
    await createReplicaSet("ovrhidden", "web", [{ name: "none" }]);
    const other = await call("GET", RENDER("ovrhidden", "web", "eu1"), undefined, as("dana"));
    expect(other.status).toBe(403);
    expect(other.body.message).toContain('cannot get resource "manifestworkreplicasets"');
  });
});
