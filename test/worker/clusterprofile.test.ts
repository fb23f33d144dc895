// ClusterProfiles (SIG Multicluster's cluster inventory API) as OCM's clusterprofile controllers
// place them, ManagedClusterSet's ClusterSetEmpty condition and printer columns, and the Warning a
// ManifestWork gets in a namespace no ManagedCluster owns. Driven over HTTP inside workerd.
import { beforeAll, describe, expect, it } from "vitest";
import { call, condition, createNamespaces, MC, MCSET, merge, WORKS, BINDINGS } from "./helpers.ts";

const G = "cluster.open-cluster-management.io";
const CS = `${G}/clusterset`;
const PROFILES = (ns?: string) => `/apis/multicluster.x-k8s.io/v1alpha1${ns ? `/namespaces/${ns}` : ""}/clusterprofiles`;

const cond = (type: string, status: string, reason = "Test", message = "test") => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: "2026-01-01T00:00:00Z",
});

async function cluster(name: string, labels: Record<string, string>, claims: { name: string; value: string }[] = []) {
  const created = await call("POST", MC, { apiVersion: `${G}/v1`, kind: "ManagedCluster", metadata: { name, labels }, spec: { hubAcceptsClient: true } });
  expect(created.status).toBe(201);
  const st = await call(
    "PATCH",
    `${MC}/${name}/status`,
    {
      status: {
        conditions: [
          cond("ManagedClusterJoined", "True", "ManagedClusterJoined", "Managed cluster joined"),
          cond("ManagedClusterConditionAvailable", "True", "ManagedClusterAvailable", "Managed cluster is available"),
        ],
        version: { kubernetes: "v1.31.2" },
        clusterClaims: claims,
      },
    },
    merge,
  );
  expect(st.status).toBe(200);
}

async function bind(ns: string, set: string) {
  const r = await call("POST", BINDINGS(ns), {
    apiVersion: `${G}/v1beta2`,
    kind: "ManagedClusterSetBinding",
    metadata: { name: set },
    spec: { clusterSet: set },
  });
  expect(r.status).toBe(201);
}

async function profileNames(ns: string): Promise<string[]> {
  const r = await call("GET", PROFILES(ns));
  expect(r.status).toBe(200);
  expect(r.body.kind).toBe("ClusterProfileList");
  return r.body.items.map((p: { metadata: { name: string } }) => p.metadata.name).sort();
}

/**
 * The cluster inventory API's rules for a producer (cluster-inventory-api apis/v1alpha1 and its
 * CRD): the manager label equals spec.clusterManager.name; conditions and properties are maps keyed
 * by type and name; property names 1–253 and values 1–1024 characters; spec.clusterManager set.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function expectConformant(p: any) {
  expect(p.apiVersion).toBe("multicluster.x-k8s.io/v1alpha1");
  expect(p.kind).toBe("ClusterProfile");
  expect(typeof p.spec.clusterManager.name).toBe("string");
  expect(p.metadata.labels["x-k8s.io/cluster-manager"]).toBe(p.spec.clusterManager.name);
  const types = (p.status.conditions ?? []).map((c: { type: string }) => c.type);
  expect(new Set(types).size).toBe(types.length);
  for (const c of p.status.conditions ?? []) {
    expect(["True", "False", "Unknown"]).toContain(c.status);
    expect(c.lastTransitionTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  }
  const names = (p.status.properties ?? []).map((x: { name: string }) => x.name);
  expect(new Set(names).size).toBe(names.length);
  for (const x of p.status.properties ?? []) {
    expect(x.name.length).toBeGreaterThanOrEqual(1);
    expect(x.name.length).toBeLessThanOrEqual(253);
    expect(x.value.length).toBeGreaterThanOrEqual(1);
    expect(x.value.length).toBeLessThanOrEqual(1024);
  }
}

beforeAll(async () => {
  await createNamespaces("inventory", "elsewhere", "nowhere");
  for (const name of ["edge", "lonely"]) {
    const r = await call("POST", MCSET, { apiVersion: `${G}/v1beta2`, kind: "ManagedClusterSet", metadata: { name } });
    expect(r.status).toBe(201);
  }
  await cluster("e1", { [CS]: "edge" }, [
    { name: "id.k8s.io", value: "0b3f5c3e-1b7e-4a8e-9d2e-7c1d0f6a2b11" },
    { name: "platform.open-cluster-management.io", value: "AWS" },
  ]);
  await cluster("e2", { [CS]: "edge" });
  await cluster("d1", {});
});

describe("ClusterProfile", () => {
  it("is served like a CRD of multicluster.x-k8s.io: discovery, read-only verbs, namespaced", async () => {
    const r = await call("GET", "/apis/multicluster.x-k8s.io/v1alpha1");
    expect(r.status).toBe(200);
    const res = r.body.resources.find((x: { name: string }) => x.name === "clusterprofiles");
    expect(res).toMatchObject({ kind: "ClusterProfile", namespaced: true, singularName: "clusterprofile", verbs: ["get", "list", "watch"] });
    expect(r.body.resources.find((x: { name: string }) => x.name === "clusterprofiles/status")).toBeDefined();
  });

  it("exists in no namespace before a binding", async () => {
    expect(await profileNames("inventory")).toEqual([]);
  });

  it("appears for each cluster of a bound set, as OCM writes it, and only where the set is bound", async () => {
    await bind("inventory", "edge");
    expect(await profileNames("inventory")).toEqual(["e1", "e2"]);
    expect(await profileNames("elsewhere")).toEqual([]);
    const p = (await call("GET", `${PROFILES("inventory")}/e1`)).body;
    expect(p.metadata.labels).toEqual({
      "x-k8s.io/cluster-manager": "open-cluster-management",
      "multicluster.x-k8s.io/clusterset": "edge",
      "open-cluster-management.io/cluster-name": "e1",
    });
    expect(p.spec).toEqual({ displayName: "e1", clusterManager: { name: "open-cluster-management" } });
    expect(p.status.version).toEqual({ kubernetes: "v1.31.2" });
    expect(p.status.properties).toEqual([
      { name: "id.k8s.io", value: "0b3f5c3e-1b7e-4a8e-9d2e-7c1d0f6a2b11" },
      { name: "platform.open-cluster-management.io", value: "AWS" },
      { name: "cluster.clusterset.k8s.io", value: "0b3f5c3e-1b7e-4a8e-9d2e-7c1d0f6a2b11" },
    ]);
    expect(condition(p, "ControlPlaneHealthy")).toMatchObject({ status: "True", reason: "ManagedClusterAvailable", message: "Managed cluster is available" });
    expect(condition(p, "Joined")).toMatchObject({ status: "True", reason: "ManagedClusterJoined" });
    expectConformant(p);
    const all = await call("GET", PROFILES());
    expect(all.status).toBe(200);
    for (const item of all.body.items) expectConformant(item);
  });

  it("follows its cluster's status: availability, version, claims", async () => {
    const r = await call(
      "PATCH",
      `${MC}/e2/status`,
      {
        status: {
          conditions: [
            cond("ManagedClusterJoined", "True"),
            cond("ManagedClusterConditionAvailable", "Unknown", "ManagedClusterLeaseUpdateStopped", "Registration agent stopped updating its lease."),
          ],
          version: { kubernetes: "v1.32.0" },
          clusterClaims: [{ name: "region", value: "eu" }],
        },
      },
      merge,
    );
    expect(r.status).toBe(200);
    const p = (await call("GET", `${PROFILES("inventory")}/e2`)).body;
    expect(condition(p, "ControlPlaneHealthy")).toMatchObject({ status: "Unknown", reason: "ManagedClusterLeaseUpdateStopped" });
    expect(p.status.version.kubernetes).toBe("v1.32.0");
    expect(p.status.properties).toEqual([{ name: "region", value: "eu" }]);
  });

  it("moves with its cluster's set label and goes when the binding goes", async () => {
    const moved = await call("PATCH", `${MC}/e2`, { metadata: { labels: { [CS]: "default" } } }, merge);
    expect(moved.status).toBe(200);
    expect(await profileNames("inventory")).toEqual(["e1"]);
    await bind("inventory", "default");
    expect(await profileNames("inventory")).toEqual(["d1", "e1", "e2"]);
    expect((await call("GET", `${PROFILES("inventory")}/e2`)).body.metadata.labels["multicluster.x-k8s.io/clusterset"]).toBe("default");
    const del = await call("DELETE", `${BINDINGS("inventory")}/edge`);
    expect(del.status).toBe(200);
    expect(await profileNames("inventory")).toEqual(["d1", "e2"]);
  });

  it("follows a set's selector and goes with its cluster", async () => {
    await bind("elsewhere", "global");
    expect(await profileNames("elsewhere")).toEqual(["d1", "e1", "e2"]);
    const r = await call("POST", MCSET, {
      apiVersion: `${G}/v1beta2`,
      kind: "ManagedClusterSet",
      metadata: { name: "labelled" },
      spec: { clusterSelector: { selectorType: "LabelSelector", labelSelector: { matchLabels: { tier: "gold" } } } },
    });
    expect(r.status).toBe(201);
    await createNamespaces("gold");
    await bind("gold", "labelled");
    expect(await profileNames("gold")).toEqual([]);
    expect((await call("PATCH", `${MC}/e1`, { metadata: { labels: { tier: "gold" } } }, merge)).status).toBe(200);
    expect(await profileNames("gold")).toEqual(["e1"]);
    expect((await call("DELETE", `${MC}/d1`)).status).toBeLessThan(300);
    expect(await profileNames("elsewhere")).toEqual(["e1", "e2"]);
    expect(await profileNames("inventory")).toEqual(["e2"]);
  });

  it("is read-only to users: create, update, patch and delete are 405", async () => {
    const body = { apiVersion: "multicluster.x-k8s.io/v1alpha1", kind: "ClusterProfile", metadata: { name: "fake" }, spec: { clusterManager: { name: "me" } } };
    expect((await call("POST", PROFILES("inventory"), body)).status).toBe(405);
    expect((await call("PUT", `${PROFILES("inventory")}/e2`, { ...body, metadata: { name: "e2" } })).status).toBe(405);
    expect((await call("PATCH", `${PROFILES("inventory")}/e2`, { spec: { displayName: "x" } }, merge)).status).toBe(405);
    expect((await call("DELETE", `${PROFILES("inventory")}/e2`)).status).toBe(405);
    expect(await profileNames("inventory")).toEqual(["e2"]);
  });
});

describe("ManagedClusterSet status and columns", () => {
  it("keeps OCM's ClusterSetEmpty condition as clusters join and leave", async () => {
    const lonely = (await call("GET", `${MCSET}/lonely`)).body;
    expect(condition(lonely, "ClusterSetEmpty")).toMatchObject({ status: "True", reason: "NoClusterMatched", message: "No ManagedCluster selected" });
    const edge = (await call("GET", `${MCSET}/edge`)).body;
    expect(condition(edge, "ClusterSetEmpty")).toMatchObject({ status: "False", reason: "ClustersSelected", message: "1 ManagedClusters selected" });
    await cluster("l1", { [CS]: "lonely" });
    expect(condition((await call("GET", `${MCSET}/lonely`)).body, "ClusterSetEmpty")).toMatchObject({ status: "False", message: "1 ManagedClusters selected" });
    // A cluster being deleted still counts (OCM lists it); it leaves the set once it is gone.
    expect((await call("DELETE", `${MC}/l1`)).status).toBe(200);
    expect(condition((await call("GET", `${MCSET}/lonely`)).body, "ClusterSetEmpty")).toMatchObject({ status: "False" });
    expect((await call("PATCH", `${MC}/l1`, { metadata: { finalizers: null } }, merge)).status).toBe(200);
    expect((await call("GET", `${MC}/l1`)).status).toBe(404);
    expect(condition((await call("GET", `${MCSET}/lonely`)).body, "ClusterSetEmpty")).toMatchObject({ status: "True", reason: "NoClusterMatched" });
    const global = (await call("GET", `${MCSET}/global`)).body;
    // e1, e2, and d1, deleted but held by its finalizer.
    expect(condition(global, "ClusterSetEmpty")).toMatchObject({ status: "False", message: "3 ManagedClusters selected" });
  });

  it("prints OCM's columns: NAME, EMPTY, AGE", async () => {
    const r = await call("GET", MCSET, undefined, { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } });
    expect(r.status).toBe(200);
    expect(r.body.columnDefinitions.map((c: { name: string }) => c.name)).toEqual(["Name", "Empty", "Age"]);
    const row = r.body.rows.find((x: { cells: unknown[] }) => x.cells[0] === "lonely");
    expect(row.cells[1]).toBe("True");
  });
});

describe("a ManifestWork in a namespace no ManagedCluster owns", () => {
  const work = (name: string) => ({
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: { name },
    spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" } }] } },
  });

  it("is accepted with a Warning header naming the missing cluster", async () => {
    const r = await call("POST", WORKS("nowhere"), work("w"));
    expect(r.status).toBe(201);
    const warning = r.headers.get("warning");
    expect(warning).toMatch(/^299 - "/);
    expect(warning).toContain('no ManagedCluster named \\"nowhere\\" exists');
  });

  it("gets no warning in a cluster's namespace", async () => {
    const r = await call("POST", WORKS("e1"), work("w"));
    expect(r.status).toBe(201);
    expect(r.headers.get("warning")).toBeNull();
  });
});
