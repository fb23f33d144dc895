/**
 * OCM's cluster views (`clusterview.open-cluster-management.io/v1`, src/kinds/clusterview.ts) inside
 * workerd: a user who may get only the sets of team-a lists exactly the clusters of those sets, and
 * those sets, through the views; watch streams only them; other methods are 405; the view itself
 * needs RBAC's list.
 */
import { exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, MC, MCSET } from "./helpers.ts";
import { callAs, idToken, serveIssuer } from "./oidc-users.ts";

const G = "cluster.open-cluster-management.io";
const CV = "/apis/clusterview.open-cluster-management.io/v1";
const RBAC = "/apis/rbac.authorization.k8s.io/v1";
const CS = "cluster.open-cluster-management.io/clusterset";

let undo: () => void;

beforeAll(async () => {
  undo = await serveIssuer();
  const set = (name: string, spec: Record<string, unknown> = {}) =>
    call("POST", MCSET, { apiVersion: `${G}/v1beta2`, kind: "ManagedClusterSet", metadata: { name }, spec });
  expect((await set("cv-a")).status).toBe(201);
  expect((await set("cv-b")).status).toBe(201);
  // A LabelSelector set: the clusters labelled team=a, whatever their exclusive set.
  expect((await set("cv-sel", { clusterSelector: { selectorType: "LabelSelector", labelSelector: { matchLabels: { team: "a" } } } })).status).toBe(201);
  const cluster = (name: string, labels: Record<string, string>) =>
    call("POST", MC, { apiVersion: `${G}/v1`, kind: "ManagedCluster", metadata: { name, labels }, spec: { hubAcceptsClient: false } });
  for (const [n, l] of [
    ["cva1", { [CS]: "cv-a" }],
    ["cva2", { [CS]: "cv-a" }],
    ["cvb1", { [CS]: "cv-b" }],
    ["cvsel", { [CS]: "cv-b", team: "a" }],
    ["cvd", {}],
  ] as const)
    expect((await cluster(n, l)).status).toBe(201);
  const rules = [
    { apiGroups: ["clusterview.open-cluster-management.io"], resources: ["managedclusters", "managedclustersets"], verbs: ["list", "watch"] },
    { apiGroups: [G], resources: ["managedclustersets"], resourceNames: ["cv-a", "cv-sel"], verbs: ["get"] },
  ];
  expect(
    (
      await call("POST", `${RBAC}/clusterroles`, {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: "team-a-clusters" },
        rules,
      })
    ).status,
  ).toBe(201);
  const binding = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "team-a-clusters" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "team-a-clusters" },
    subjects: [{ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: "team-a" }],
  };
  expect((await call("POST", `${RBAC}/clusterrolebindings`, binding)).status).toBe(201);
});

afterAll(() => undo());

const names = (body: { items: { metadata: { name: string } }[] }) => body.items.map((i) => i.metadata.name).sort();

describe("cluster views", () => {
  it("list exactly the sets the user may get, and the clusters in them", async () => {
    const token = await idToken("tara", ["team-a"]);
    const clusters = await call("GET", `${CV}/managedclusters`, undefined, { token });
    expect(clusters.status).toBe(200);
    expect(clusters.body).toMatchObject({ apiVersion: "clusterview.open-cluster-management.io/v1", kind: "ManagedClusterList" });
    expect(names(clusters.body)).toEqual(["cva1", "cva2", "cvsel"]);
    expect(clusters.body.items[0]).toMatchObject({ apiVersion: `${G}/v1`, kind: "ManagedCluster" });
    const sets = await call("GET", `${CV}/managedclustersets`, undefined, { token });
    expect(names(sets.body)).toEqual(["cv-a", "cv-sel"]);
    // Selectors still apply within the view.
    expect(names((await call("GET", `${CV}/managedclusters?labelSelector=team%3Da`, undefined, { token })).body)).toEqual(["cvsel"]);
    // The same user may not read the clusters themselves.
    expect((await call("GET", MC, undefined, { token })).status).toBe(403);
    // The admin sees every cluster through the view.
    expect(names((await call("GET", `${CV}/managedclusters`)).body)).toEqual(expect.arrayContaining(["cva1", "cva2", "cvb1", "cvd", "cvsel"]));
  });

  it("watch streams only the visible clusters", async () => {
    const res = await exports.default.fetch(`https://hub.test${CV}/managedclusters?watch=true&timeoutSeconds=1`, {
      headers: { authorization: `Bearer ${await idToken("tara", ["team-a"])}` },
    });
    expect(res.status).toBe(200);
    const events = (await res.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; object: { metadata: { name: string } } });
    expect(events.map((e) => e.object.metadata.name).sort()).toEqual(["cva1", "cva2", "cvsel"]);
  });

  it("serves list and watch only, in discovery too; the view needs RBAC's list", async () => {
    const disco = await call("GET", CV);
    expect(disco.body.resources).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: "managedclusters", kind: "ManagedCluster", namespaced: false, verbs: ["list", "watch"] })]),
    );
    expect((await call("GET", `${CV}/managedclusters/cva1`)).status).toBe(405);
    expect((await call("POST", `${CV}/managedclusters`, { metadata: { name: "x" } })).status).toBe(405);
    const r = await callAs("nobody", "GET", `${CV}/managedclusters`);
    expect(r.status).toBe(403);
    expect(r.body.message).toContain('cannot list resource "managedclusters" in API group "clusterview.open-cluster-management.io" at the cluster scope');
  });

  it("a watch sends DELETED when a cluster leaves the user's sets and ADDED when one enters (issue 39)", async () => {
    const token = await idToken("tara", ["team-a"]);
    const list = await call("GET", `${CV}/managedclusters`, undefined, { token });
    const rv = list.body.metadata.resourceVersion;
    const relabel = async (name: string, set: string) =>
      expect((await call("PATCH", `${MC}/${name}`, { metadata: { labels: { [CS]: set } } }, { contentType: "application/merge-patch+json" })).status).toBe(200);
    // After the list the user watches from: cva2 leaves cv-a, cvb1 enters it, cvd (never seen) changes.
    await relabel("cva2", "cv-b");
    await relabel("cvb1", "cv-a");
    expect((await call("PATCH", `${MC}/cvd`, { metadata: { labels: { x: "1" } } }, { contentType: "application/merge-patch+json" })).status).toBe(200);
    try {
      const res = await exports.default.fetch(`https://hub.test${CV}/managedclusters?watch=true&resourceVersion=${rv}&timeoutSeconds=1`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
      const events = (await res.text())
        .trim()
        .split("\n")
        .filter((l) => l)
        .map((l) => JSON.parse(l) as { type: string; object: { metadata: { name: string } } });
      expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(["DELETED cva2", "ADDED cvb1"]);
    } finally {
      await relabel("cva2", "cv-a");
      await relabel("cvb1", "cv-b");
    }
  });
});
