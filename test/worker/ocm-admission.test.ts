/**
 * OCM's multi-tenancy checks (src/auth/ocm-admission.ts) over the API, inside workerd, for OIDC
 * users whose RBAC the admin grants: joining and leaving cluster sets, accepting clusters, binding
 * sets to namespaces. Refusals are OCM's 403s and write nothing; `system:masters` passes.
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces, MC, snapshot, BINDINGS } from "./helpers.ts";
import { callAs, serveIssuer } from "./oidc-users.ts";

const G = "cluster.open-cluster-management.io";
const RBAC = "/apis/rbac.authorization.k8s.io/v1";
const CS = "cluster.open-cluster-management.io/clusterset";
const merge = "application/merge-patch+json";

let undo: () => void;

/** Grants `oidc:<user>` the rules of a new ClusterRole `<name>`. */
async function grant(user: string, name: string, rules: unknown[]) {
  expect(
    (await call("POST", `${RBAC}/clusterroles`, { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name }, rules })).status,
  ).toBe(201);
  const binding = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
    subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: `oidc:${user}` }],
  };
  expect((await call("POST", `${RBAC}/clusterrolebindings`, binding)).status).toBe(201);
}

const cluster = (name: string, set?: string, accept = false) => ({
  apiVersion: `${G}/v1`,
  kind: "ManagedCluster",
  metadata: { name, ...(set ? { labels: { [CS]: set } } : {}) },
  spec: { hubAcceptsClient: accept },
});

beforeAll(async () => {
  undo = await serveIssuer();
  await createNamespaces("team-a");
  // Alice manages clusters, and may join set team-a only.
  await grant("alice", "clusters-alice", [
    { apiGroups: [G], resources: ["managedclusters", "managedclustersetbindings"], verbs: ["get", "list", "create", "update", "patch"] },
    { apiGroups: [G], resources: ["managedclustersets/join"], resourceNames: ["team-a"], verbs: ["create"] },
  ]);
});

afterAll(() => undo());

describe("OCM's cluster set and acceptance checks", () => {
  it("joining a set needs create on managedclustersets/join for it; a refusal writes nothing", async () => {
    expect((await callAs("alice", "POST", MC, cluster("oa1", "team-a"))).status).toBe(201);
    const before = await snapshot();
    const refused = await callAs("alice", "POST", MC, cluster("oa2", "team-b"));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      kind: "Status",
      reason: "Forbidden",
      message: `managedclustersets/join.${G} "team-b" is forbidden: user "oidc:alice" cannot add/remove a ManagedCluster to/from ManagedClusterSet "team-b"`,
      details: { name: "team-b", group: G, kind: "managedclustersets/join" },
    });
    // No label: the cluster joins the default set, which Alice may not join either.
    expect((await callAs("alice", "POST", MC, cluster("oa3"))).body.message).toContain('ManagedClusterSet "default"');
    expect(await snapshot()).toBe(before);
    expect((await call("GET", `${MC}/oa2`)).status).toBe(404);
    // Moving a cluster needs both sets; a dry run is checked as the write.
    const moved = await callAs("alice", "PATCH", `${MC}/oa1`, { metadata: { labels: { [CS]: "team-b" } } }, merge);
    expect(moved.status).toBe(403);
    expect((await callAs("alice", "PATCH", `${MC}/oa1?dryRun=All`, { metadata: { labels: { [CS]: "team-b" } } }, merge)).status).toBe(403);
    expect((await call("GET", `${MC}/oa1`)).body.metadata.labels[CS]).toBe("team-a");
    // Other changes need no set permission.
    expect((await callAs("alice", "PATCH", `${MC}/oa1`, { metadata: { labels: { tier: "web" } } }, merge)).status).toBe(200);
    // The admin (system:masters) passes.
    expect((await call("PATCH", `${MC}/oa1`, { metadata: { labels: { [CS]: "team-b" } } }, { contentType: merge })).status).toBe(200);
    // Leaving team-b for team-a needs team-b too.
    expect((await callAs("alice", "PATCH", `${MC}/oa1`, { metadata: { labels: { [CS]: "team-a" } } }, merge)).status).toBe(403);
  });

  it("accepting a cluster needs update on register.open-cluster-management.io managedclusters/accept", async () => {
    const refused = await callAs("alice", "POST", MC, cluster("ob1", "team-a", true));
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(`managedclusters/accept.${G} "ob1" is forbidden: user "oidc:alice" cannot update the HubAcceptsClient field`);
    expect((await callAs("alice", "POST", MC, cluster("ob1", "team-a"))).status).toBe(201);
    expect((await callAs("alice", "PATCH", `${MC}/ob1`, { spec: { hubAcceptsClient: true } }, merge)).status).toBe(403);
    expect((await call("GET", `${MC}/ob1`)).body.spec.hubAcceptsClient).toBe(false);
    await grant("alice", "accept-alice", [
      { apiGroups: ["register.open-cluster-management.io"], resources: ["managedclusters/accept"], resourceNames: ["ob1"], verbs: ["update"] },
    ]);
    expect((await callAs("alice", "PATCH", `${MC}/ob1`, { spec: { hubAcceptsClient: true } }, merge)).status).toBe(200);
    expect((await call("GET", `${MC}/ob1`)).body.spec.hubAcceptsClient).toBe(true);
    // Named after ob1 only.
    expect((await callAs("alice", "POST", MC, cluster("ob2", "team-a", true))).status).toBe(403);
  });

  it("binding a set to a namespace needs create on managedclustersets/bind for it", async () => {
    const binding = (set: string) => ({ apiVersion: `${G}/v1beta2`, kind: "ManagedClusterSetBinding", metadata: { name: set }, spec: { clusterSet: set } });
    const refused = await callAs("alice", "POST", BINDINGS("team-a"), binding("team-a"));
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(`managedclustersets/bind.${G} "team-a" is forbidden: user "oidc:alice" is not allowed to bind cluster set "team-a"`);
    await grant("alice", "bind-alice", [{ apiGroups: [G], resources: ["managedclustersets/bind"], resourceNames: ["team-a"], verbs: ["create"] }]);
    expect((await callAs("alice", "POST", BINDINGS("team-a"), binding("team-a"))).status).toBe(201);
    expect((await callAs("alice", "POST", BINDINGS("team-a"), binding("team-b"))).status).toBe(403);
    expect((await call("GET", `${BINDINGS("team-a")}/team-b`)).status).toBe(404);
  });

  it("the cluster's object refuses a write whose transition differs from the one admitted (409)", async () => {
    expect((await call("POST", MC, cluster("oc1", "team-a"))).status).toBe(201);
    const res = await env.CLUSTERS.getByName("oc1").write(
      "oc1",
      { verb: "patch", patchType: "merge", patch: { metadata: { labels: { [CS]: "team-b" } } } },
      { clusterSet: null, accepts: false },
    );
    expect(res.ok).toBe(false);
    if (!res.ok) expect(res.status).toMatchObject({ code: 409, reason: "Conflict" });
    const same = await env.CLUSTERS.getByName("oc1").write(
      "oc1",
      { verb: "patch", patchType: "merge", patch: { metadata: { labels: { [CS]: "team-b" } } } },
      { clusterSet: ["team-a", "team-b"], accepts: false },
    );
    expect(same.ok).toBe(true);
  });
});
