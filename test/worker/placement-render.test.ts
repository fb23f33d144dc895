// The dry run of a KubeFleet placement for one cluster (the `render` subresource,
// src/api/placement-render.ts; docs/overrides.md "Seeing the rendered objects"), inside workerd
// over HTTP: the objects exactly as the cluster's works carry them (overrides applied), the
// template beside them, the override snapshots applied; a failing override's message; the
// 4xx answers; authorized as a read of the placement (a namespace viewer may, others may not).
import { beforeAll, describe, expect, it, vi } from "vitest";
import { call, createCluster, createNamespaces } from "./helpers.ts";

const G = "/apis/placement.kubernetes-fleet.io";
const RP = (ns: string, name = "") => `${G}/v1/namespaces/${ns}/resourceplacements${name ? `/${name}` : ""}`;
const CRP = (name = "") => `${G}/v1/clusterresourceplacements${name ? `/${name}` : ""}`;
const ROS = (ns: string) => `${G}/v1/namespaces/${ns}/resourceoverrides`;
const WORK = (cluster: string, name: string) => `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks/${name}`;
const RBAC = "/apis/rbac.authorization.k8s.io/v1";
const as = (user: string) => ({ headers: { "Impersonate-User": user } });

const deployment = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", labels: { app: "web" } },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: "web" } },
    template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "app", image: "nginx:1.27" }] } },
  },
};

/** Waits up to `ms` milliseconds for `check` to hold (vitest's `vi.waitFor`, polling every 100 ms). */
async function waitFor(check: () => Promise<boolean>, ms = 8000) {
  await vi.waitFor(async () => expect(await check()).toBe(true), { timeout: ms, interval: 100 });
}

beforeAll(async () => {
  await createCluster("rn-a", { rnregion: "eu", size: "2" });
  await createCluster("rn-b", { rnregion: "us" });
  await createCluster("rn-c", { other: "x" });
  await createNamespaces("rn-app", "rn-other");
  for (const ns of ["rn-app", "rn-other"]) {
    const d = await call("POST", `/apis/apps/v1/namespaces/${ns}/deployments`, deployment);
    expect(d.status, JSON.stringify(d.body)).toBe(201);
  }
  const ro = await call("POST", ROS("rn-app"), {
    apiVersion: "placement.kubernetes-fleet.io/v1",
    kind: "ResourceOverride",
    metadata: { name: "web" },
    spec: {
      placement: { name: "web", scope: "Namespaced" },
      resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: "web" }],
      policy: {
        overrideRules: [
          {
            clusterSelector: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { rnregion: "eu" } } }] },
            jsonPatchOverrides: [{ op: "replace", path: "/spec/template/spec/containers/0/image", value: "eu.registry.example/nginx:1.27" }],
          },
          {
            clusterSelector: { clusterSelectorTerms: [] },
            jsonPatchOverrides: [{ op: "replace", path: "/spec/replicas", value: "${MEMBER-CLUSTER-LABEL-KEY-size}" }],
          },
        ],
      },
    },
  });
  expect(ro.status, JSON.stringify(ro.body)).toBe(201);
  for (const ns of ["rn-app", "rn-other"]) {
    const rp = await call("POST", RP(ns), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourcePlacement",
      metadata: { name: "web" },
      spec: {
        resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: "web" }],
        policy: {
          placementType: "PickAll",
          affinity: {
            clusterAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                clusterSelectorTerms: [{ labelSelector: { matchExpressions: [{ key: "rnregion", operator: "Exists" }] } }],
              },
            },
          },
        },
      },
    });
    expect(rp.status, JSON.stringify(rp.body)).toBe(201);
  }
  // alice may view rn-app only.
  const rb = await call("POST", `${RBAC}/namespaces/rn-app/rolebindings`, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "alice-view" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "alice" }],
  });
  expect(rb.status, JSON.stringify(rb.body)).toBe(201);
});

describe("the render subresource of a placement (a dry run for one cluster)", () => {
  it("answers the objects exactly as the cluster's work carries them, the template, and the overrides applied", async () => {
    await waitFor(async () => (await call("GET", WORK("rn-a", "rn-app.web-work"))).status === 200);
    const r = await call("GET", `${RP("rn-app", "web")}/render?cluster=rn-a`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      apiVersion: "flotilla.dev/v1alpha1",
      kind: "PlacementRender",
      placement: { kind: "ResourcePlacement", namespace: "rn-app", name: "web" },
      cluster: "rn-a",
      scheduled: true,
      clusterResourceOverrides: [],
      resourceOverrides: [{ name: "web-0", namespace: "rn-app" }],
    });
    expect(r.body.error).toBeUndefined();
    expect(r.body.objects[0].spec.template.spec.containers[0].image).toBe("eu.registry.example/nginx:1.27");
    expect(r.body.objects[0].spec.replicas).toBe(2);
    expect(r.body.template[0].spec.template.spec.containers[0].image).toBe("nginx:1.27");
    expect(r.body.template[0].spec.replicas).toBe(1);
    // Exactly what the agent receives: the stored work's spec and manifests.
    const work = (await call("GET", WORK("rn-a", "rn-app.web-work"))).body;
    expect(r.body.works).toEqual([{ name: "rn-app.web-work", spec: work.spec }]);
    expect(r.body.objects).toEqual(work.spec.workload.manifests);
    // The v1beta1 path answers the same.
    expect((await call("GET", `${G}/v1beta1/namespaces/rn-app/resourceplacements/web/render?cluster=rn-a`)).body).toEqual(r.body);
  });

  it("says why an override fails for a cluster, and renders for a cluster not picked", async () => {
    const b = await call("GET", `${RP("rn-app", "web")}/render?cluster=rn-b`);
    expect(b.status).toBe(200);
    expect(b.body.objects).toEqual([]);
    expect(b.body.works).toEqual([]);
    expect(b.body.template).toHaveLength(1);
    expect(b.body.error).toBe(
      'ResourceOverrideSnapshot "web-0" failed to apply on Deployment "web" in namespace "rn-app": label key size not found on cluster rn-b',
    );
    const c = await call("GET", `${RP("rn-app", "web")}/render?cluster=rn-c`);
    expect(c.status).toBe(200);
    expect(c.body).toMatchObject({ scheduled: false, resourceOverrides: [{ name: "web-0", namespace: "rn-app" }] });
    // rn-c has no size label either: the override fails there too.
    expect(c.body.error).toContain("label key size not found on cluster rn-c");
  });

  it("answers 4xx for what it cannot render", async () => {
    const none = await call("GET", `${RP("rn-app", "web")}/render`);
    expect(none.status).toBe(400);
    expect(none.body.message).toContain("needs the query parameter cluster");
    const unknown = await call("GET", `${RP("rn-app", "web")}/render?cluster=nowhere`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe('managedclusters.cluster.open-cluster-management.io "nowhere" not found');
    const missing = await call("GET", `${CRP("nothing")}/render?cluster=rn-a`);
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('clusterresourceplacements.placement.kubernetes-fleet.io "nothing" not found');
    expect((await call("POST", `${RP("rn-app", "web")}/render?cluster=rn-a`, {})).status).toBe(405);
    // Not a subresource of other kinds.
    expect((await call("GET", `/apis/apps/v1/namespaces/rn-app/deployments/web/render?cluster=rn-a`)).status).toBe(404);
  });

  it("is authorized as a read of the placement", async () => {
    const alice = await call("GET", `${RP("rn-app", "web")}/render?cluster=rn-a`, undefined, as("alice"));
    expect(alice.status, JSON.stringify(alice.body)).toBe(200);
    expect(alice.body.objects[0].spec.replicas).toBe(2);
    const other = await call("GET", `${RP("rn-other", "web")}/render?cluster=rn-a`, undefined, as("alice"));
    expect(other.status).toBe(403);
    expect(other.body.message).toContain('cannot get resource "resourceplacements"');
    expect((await call("GET", `${RP("rn-app", "web")}/render?cluster=rn-a`, undefined, as("bob"))).status).toBe(403);
  });
});
