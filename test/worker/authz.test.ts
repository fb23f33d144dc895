/**
 * Authentication and RBAC on the Kubernetes API (src/auth/request.ts, src/auth/rbac-store.ts), the
 * RBAC kinds and the access reviews, inside workerd. Users come from an OIDC issuer
 * (`https://issuer.test`, vitest.config.ts) whose discovery and keys this file serves by standing in
 * for `fetch`; the admin token is `system:masters`.
 */
import { env, exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces, MC, PLACEMENTS } from "./helpers.ts";
import { idToken, serveIssuer } from "./oidc-users.ts";
import { ensureBootstrapPolicy } from "../../src/auth/rbac-store.ts";

const RBAC = "/apis/rbac.authorization.k8s.io/v1";
const OCM = "cluster.open-cluster-management.io";

let undo: () => void;

beforeAll(async () => {
  undo = await serveIssuer();
  await createNamespaces("team-a", "team-b");
});

afterAll(() => undo());

/** An ID token of the test issuer for `sub` (user `oidc:<sub>`) in `groups`. */
const token = idToken;

/** Calls the hub as OIDC user `oidc:<sub>`. */
async function as(sub: string, method: string, path: string, body?: unknown, groups: string[] = [], contentType?: string) {
  return call(method, path, body, { token: await token(sub, groups), contentType });
}

const placement = (name: string) => ({ apiVersion: `${OCM}/v1beta1`, kind: "Placement", metadata: { name }, spec: {} });
const binding = (ns: string, name: string, role: string, user: string, kind: "ClusterRole" | "Role" = "ClusterRole") => ({
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "RoleBinding",
  metadata: { name, namespace: ns },
  roleRef: { apiGroup: "rbac.authorization.k8s.io", kind, name: role },
  subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: user }],
});
const role = (ns: string, name: string, rules: unknown[]) => ({
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "Role",
  metadata: { name, namespace: ns },
  rules,
});

describe("authentication", () => {
  it("answers every failed authentication with the same 401 Status; /version and health stay public", async () => {
    for (const t of [null, "nonsense", await token("alice").then((x) => `${x.slice(0, -4)}AAAA`)]) {
      const r = await call("GET", "/apis", undefined, { token: t });
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ kind: "Status", reason: "Unauthorized", message: "Unauthorized", code: 401 });
    }
    for (const p of ["/openapi/v3", "/docs", "/api"]) expect((await call("GET", p, undefined, { token: null })).status).toBe(401);
    for (const p of ["/version", "/healthz", "/livez", "/readyz"]) expect((await call("GET", p, undefined, { token: null })).status).toBe(200);
  });

  it("lets every authenticated user read discovery, OpenAPI and /docs, and nothing else", async () => {
    for (const p of ["/api", "/api/v1", "/apis", `/apis/${OCM}/v1`, "/openapi/v3", "/openapi/v2", "/docs", "/docs/"])
      expect((await as("nobody", "GET", p)).status).toBe(200);
    const r = await as("nobody", "GET", PLACEMENTS("team-a"));
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({
      kind: "Status",
      reason: "Forbidden",
      code: 403,
      message: `placements.${OCM} is forbidden: User "oidc:nobody" cannot list resource "placements" in API group "${OCM}" in the namespace "team-a"`,
      details: { group: OCM, kind: "placements" },
    });
  });
});

describe("the bootstrap policy", () => {
  it("exists as objects: cluster-admin, the aggregated admin/edit/view with their rules written, discovery bindings", async () => {
    const roles = await call("GET", `${RBAC}/clusterroles`);
    const names = roles.body.items.map((r: { metadata: { name: string } }) => r.metadata.name);
    for (const n of [
      "cluster-admin",
      "admin",
      "edit",
      "view",
      "system:discovery",
      "system:basic-user",
      "system:public-info-viewer",
      "system:aggregate-to-view",
    ])
      expect(names).toContain(n);
    const view = (await call("GET", `${RBAC}/clusterroles/view`)).body;
    expect(view.metadata.annotations["rbac.authorization.kubernetes.io/autoupdate"]).toBe("true");
    expect(view.rules).toContainEqual(expect.objectContaining({ apiGroups: [OCM], resources: expect.arrayContaining(["placements"]) }));
    const admin = (await call("GET", `${RBAC}/clusterroles/admin`)).body;
    expect(admin.rules).toContainEqual(expect.objectContaining({ apiGroups: ["rbac.authorization.k8s.io"], resources: ["rolebindings", "roles"] }));
    const crb = (await call("GET", `${RBAC}/clusterrolebindings/cluster-admin`)).body;
    expect(crb).toMatchObject({ roleRef: { kind: "ClusterRole", name: "cluster-admin" }, subjects: [{ kind: "Group", name: "system:masters" }] });
  });

  it("aggregates a new ClusterRole labelled aggregate-to-view into view (and so edit and admin)", async () => {
    const extra = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "mcl-readers", labels: { "rbac.authorization.k8s.io/aggregate-to-view": "true" } },
      rules: [{ verbs: ["get"], apiGroups: [OCM], resources: ["managedclustersets"] }],
    };
    expect((await call("POST", `${RBAC}/clusterroles`, extra)).status).toBe(201);
    for (const n of ["view", "edit", "admin"]) {
      const r = (await call("GET", `${RBAC}/clusterroles/${n}`)).body;
      expect(r.rules).toContainEqual({ verbs: ["get"], apiGroups: [OCM], resources: ["managedclustersets"] });
    }
  });
});

describe("enforcement", () => {
  it("a user with edit in team-a creates a Placement there, gets 403 in team-b, and nothing is written", async () => {
    expect((await call("POST", `${RBAC}/namespaces/team-a/rolebindings`, binding("team-a", "alice-edit", "edit", "oidc:alice"))).status).toBe(201);
    expect((await as("alice", "POST", PLACEMENTS("team-a"), placement("p1"))).status).toBe(201);
    const denied = await as("alice", "POST", PLACEMENTS("team-b"), placement("p1"));
    expect(denied.status).toBe(403);
    expect(denied.body.message).toBe(
      `placements.${OCM} is forbidden: User "oidc:alice" cannot create resource "placements" in API group "${OCM}" in the namespace "team-b"`,
    );
    expect((await call("GET", `${PLACEMENTS("team-b")}/p1`)).status).toBe(404);
    // Cluster-scoped kinds are not edit's; status writes are not either.
    const mcl = await as("alice", "GET", MC);
    expect(mcl.body.message).toBe(
      `managedclusters.${OCM} is forbidden: User "oidc:alice" cannot list resource "managedclusters" in API group "${OCM}" at the cluster scope`,
    );
    const status = await as("alice", "PATCH", `${PLACEMENTS("team-a")}/p1/status`, { status: {} }, [], "application/merge-patch+json");
    expect(status.status).toBe(403);
    expect(status.body.message).toContain(`cannot patch resource "placements/status"`);
    // A list across all namespaces is cluster scope.
    expect((await as("alice", "GET", `/apis/${OCM}/v1beta1/placements`)).status).toBe(403);
  });

  it("sees a binding's removal and a group's grant on the very next request", async () => {
    expect((await call("POST", `${RBAC}/namespaces/team-b/rolebindings`, binding("team-b", "bob-view", "view", "oidc:bob"))).status).toBe(201);
    expect((await as("bob", "GET", PLACEMENTS("team-b"))).status).toBe(200);
    expect((await call("DELETE", `${RBAC}/namespaces/team-b/rolebindings/bob-view`)).status).toBe(200);
    expect((await as("bob", "GET", PLACEMENTS("team-b"))).status).toBe(403);
    const groupBinding = { ...binding("team-b", "devs-view", "view", "x"), subjects: [{ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: "devs" }] };
    expect((await call("POST", `${RBAC}/namespaces/team-b/rolebindings`, groupBinding)).status).toBe(201);
    expect((await as("bob", "GET", PLACEMENTS("team-b"), undefined, ["devs"])).status).toBe(200);
    expect((await as("bob", "GET", PLACEMENTS("team-b"))).status).toBe(403);
  });

  it("honours resourceNames on get and refuses a list they do not cover", async () => {
    await call(
      "POST",
      `${RBAC}/namespaces/team-b/roles`,
      role("team-b", "one-placement", [{ verbs: ["get", "list"], apiGroups: [OCM], resources: ["placements"], resourceNames: ["pb"] }]),
    );
    await call("POST", `${RBAC}/namespaces/team-b/rolebindings`, binding("team-b", "carol-one", "one-placement", "oidc:carol", "Role"));
    await call("POST", PLACEMENTS("team-b"), placement("pb"));
    await call("POST", PLACEMENTS("team-b"), placement("other"));
    expect((await as("carol", "GET", `${PLACEMENTS("team-b")}/pb`)).status).toBe(200);
    expect((await as("carol", "GET", `${PLACEMENTS("team-b")}/other`)).status).toBe(403);
    expect((await as("carol", "GET", PLACEMENTS("team-b"))).status).toBe(403);
    // kube-apiserver's RequestInfo: a list whose fieldSelector names one object carries that name.
    const one = await as("carol", "GET", `${PLACEMENTS("team-b")}?fieldSelector=metadata.name%3Dpb`);
    expect(one.status).toBe(200);
    expect(one.body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(["pb"]);
  });

  it("a server-side apply that would create needs create as well as patch", async () => {
    await call(
      "POST",
      `${RBAC}/namespaces/team-b/roles`,
      role("team-b", "patcher", [{ verbs: ["patch", "get"], apiGroups: [OCM], resources: ["placements"] }]),
    );
    await call("POST", `${RBAC}/namespaces/team-b/rolebindings`, binding("team-b", "hank-patch", "patcher", "oidc:hank", "Role"));
    const applied = (name: string) =>
      call(
        "PATCH",
        `${PLACEMENTS("team-b")}/${name}?fieldManager=ci`,
        `apiVersion: ${OCM}/v1beta1\nkind: Placement\nmetadata:\n  name: ${name}\nspec:\n  numberOfClusters: 2\n`,
        {
          contentType: "application/apply-patch+yaml",
          token: null,
          headers: { authorization: `Bearer ${hankToken}` },
        },
      );
    const hankToken = await token("hank");
    const created = await applied("new-one");
    expect(created.status).toBe(403);
    expect(created.body.message).toBe(
      `placements.${OCM} "new-one" is forbidden: User "oidc:hank" cannot create resource "placements" in API group "${OCM}" in the namespace "team-b"`,
    );
    expect((await call("GET", `${PLACEMENTS("team-b")}/new-one`)).status).toBe(404);
    await call("POST", PLACEMENTS("team-b"), placement("existing"));
    const patched = await applied("existing");
    expect(patched.status).toBe(200);
    expect(patched.body.spec.numberOfClusters).toBe(2);
  });

  it("watch: 403 where the user may not watch; a namespace's watch streams only that namespace", async () => {
    await call("POST", `${RBAC}/namespaces/team-a/rolebindings`, binding("team-a", "dave-view", "view", "oidc:dave"));
    const all = await as("dave", "GET", `/apis/${OCM}/v1beta1/placements?watch=true`);
    expect(all.status).toBe(403);
    expect(all.body.message).toContain(`cannot watch resource "placements" in API group "${OCM}" at the cluster scope`);
    expect((await as("dave", "GET", `${PLACEMENTS("team-b")}?watch=1`)).status).toBe(403);
    const res = await exports.default.fetch(`https://hub.test${PLACEMENTS("team-a")}?watch=true&timeoutSeconds=2`, {
      headers: { authorization: `Bearer ${await token("dave")}` },
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const events = text
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as { object: { metadata: { namespace: string } } });
    expect(events.length).toBeGreaterThan(0);
    expect(new Set(events.map((e) => e.object.metadata.namespace))).toEqual(new Set(["team-a"]));
  });
});

describe("RBAC kinds", () => {
  it("validates rules and bindings as Kubernetes and keeps roleRef immutable", async () => {
    const bad = await call(
      "POST",
      `${RBAC}/namespaces/team-a/roles`,
      role("team-a", "bad", [
        { verbs: [], apiGroups: [], resources: ["x"] },
        { verbs: ["get"], nonResourceURLs: ["/x"] },
      ]),
    );
    expect(bad.status).toBe(422);
    expect(bad.body.details.causes.map((c: { field: string }) => c.field)).toEqual(["rules[0].verbs", "rules[0].apiGroups", "rules[1].nonResourceURLs"]);
    const rb = await call("POST", `${RBAC}/namespaces/team-a/rolebindings`, binding("team-a", "imm", "view", "oidc:x"));
    expect(rb.status).toBe(201);
    const changed = await call("PUT", `${RBAC}/namespaces/team-a/rolebindings/imm`, { ...rb.body, roleRef: { ...rb.body.roleRef, name: "edit" } });
    expect(changed.status).toBe(422);
    expect(changed.body.message).toContain("roleRef: Invalid value");
    expect(changed.body.message).toContain("cannot change roleRef");
    const crb = await call("POST", `${RBAC}/clusterrolebindings`, {
      ...binding("", "crb-role", "x", "oidc:x", "Role"),
      kind: "ClusterRoleBinding",
      metadata: { name: "crb-role" },
    });
    expect(crb.status).toBe(422);
    expect(crb.body.message).toContain('roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"');
  });

  it("refuses escalation: a role or binding granting what the author does not hold, unless escalate or bind", async () => {
    // erin is admin in team-a: she may write Roles and RoleBindings there.
    await call("POST", `${RBAC}/namespaces/team-a/rolebindings`, binding("team-a", "erin-admin", "admin", "oidc:erin"));
    expect(
      (
        await as(
          "erin",
          "POST",
          `${RBAC}/namespaces/team-a/roles`,
          role("team-a", "placement-reader", [{ verbs: ["get", "list"], apiGroups: [OCM], resources: ["placements"] }]),
        )
      ).status,
    ).toBe(201);
    const escalating = await as(
      "erin",
      "POST",
      `${RBAC}/namespaces/team-a/roles`,
      role("team-a", "cluster-reader", [{ verbs: ["get"], apiGroups: [OCM], resources: ["managedclusters"] }]),
    );
    expect(escalating.status).toBe(403);
    expect(escalating.body.message).toBe(
      `roles.rbac.authorization.k8s.io "cluster-reader" is forbidden: user "oidc:erin" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:["${OCM}"], Resources:["managedclusters"], Verbs:["get"]}`,
    );
    expect((await call("GET", `${RBAC}/namespaces/team-a/roles/cluster-reader`)).status).toBe(404);
    const toClusterAdmin = await as("erin", "POST", `${RBAC}/namespaces/team-a/rolebindings`, binding("team-a", "erin-root", "cluster-admin", "oidc:erin"));
    expect(toClusterAdmin.status).toBe(403);
    expect(toClusterAdmin.body.message).toContain(
      `rolebindings.rbac.authorization.k8s.io "erin-root" is forbidden: user "oidc:erin" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`,
    );
    // With escalate on roles and bind on the cluster-admin ClusterRole (in team-a), both are allowed.
    await call(
      "POST",
      `${RBAC}/namespaces/team-a/roles`,
      role("team-a", "delegate", [
        { verbs: ["escalate"], apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"] },
        { verbs: ["bind"], apiGroups: ["rbac.authorization.k8s.io"], resources: ["clusterroles"], resourceNames: ["cluster-admin"] },
      ]),
    );
    await call("POST", `${RBAC}/namespaces/team-a/rolebindings`, binding("team-a", "erin-delegate", "delegate", "oidc:erin", "Role"));
    expect(
      (
        await as(
          "erin",
          "POST",
          `${RBAC}/namespaces/team-a/roles`,
          role("team-a", "cluster-reader", [{ verbs: ["get"], apiGroups: [OCM], resources: ["managedclusters"] }]),
        )
      ).status,
    ).toBe(201);
    expect((await as("erin", "POST", `${RBAC}/namespaces/team-a/rolebindings`, binding("team-a", "erin-root", "cluster-admin", "oidc:erin"))).status).toBe(201);
    // Binding edit is fine without bind: erin holds every rule of edit in team-a (admin ⊇ edit).
    expect((await as("erin", "POST", `${RBAC}/namespaces/team-a/rolebindings`, binding("team-a", "frank-edit", "edit", "oidc:frank"))).status).toBe(201);
  });
});

describe("access reviews", () => {
  const ssar = (attrs: Record<string, unknown>) => ({
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectAccessReview",
    metadata: { creationTimestamp: null },
    spec: attrs,
    status: { allowed: false },
  });

  it("SelfSubjectAccessReview answers as the authorizer, for resources, subresources and paths", async () => {
    await call("POST", `${RBAC}/namespaces/team-a/rolebindings`, binding("team-a", "gina-edit", "edit", "oidc:gina"));
    const ask = async (attrs: Record<string, unknown>) => {
      const r = await as("gina", "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", ssar(attrs));
      expect(r.status).toBe(201);
      return r.body.status;
    };
    expect(await ask({ resourceAttributes: { verb: "create", group: OCM, resource: "placements", namespace: "team-a" } })).toEqual({
      allowed: true,
      reason: 'RBAC: allowed by RoleBinding "gina-edit/team-a" of ClusterRole "edit" to User "oidc:gina"',
    });
    expect(await ask({ resourceAttributes: { verb: "create", group: OCM, resource: "placements", namespace: "team-b" } })).toEqual({ allowed: false });
    expect(
      (await ask({ resourceAttributes: { verb: "update", group: OCM, resource: "placements", subresource: "status", namespace: "team-a" } })).allowed,
    ).toBe(false);
    expect((await ask({ nonResourceAttributes: { verb: "get", path: "/apis" } })).allowed).toBe(true);
    const both = await as(
      "gina",
      "POST",
      "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
      ssar({ resourceAttributes: { verb: "get" }, nonResourceAttributes: { path: "/x", verb: "get" } }),
    );
    expect(both.status).toBe(422);
    expect(both.body.message).toContain("spec.nonResourceAttributes: Invalid value");
    // As kube-apiserver: authorization comes first (a list gina may not do), then the method.
    expect((await as("gina", "GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")).status).toBe(403);
    expect((await call("GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")).status).toBe(405);
  });

  it("SubjectAccessReview is cluster-admin's; SelfSubjectRulesReview lists the user's rules; SelfSubjectReview names the user", async () => {
    const sar = {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: { user: "oidc:gina", resourceAttributes: { verb: "delete", group: OCM, resource: "placements", namespace: "team-a", name: "x" } },
    };
    const byAdmin = await call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar);
    expect(byAdmin.status).toBe(201);
    expect(byAdmin.body.status.allowed).toBe(true);
    expect((await as("gina", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar)).status).toBe(403);
    const noSubject = await call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
      ...sar,
      spec: { resourceAttributes: sar.spec.resourceAttributes },
    });
    expect(noSubject.status).toBe(422);

    const rules = await as("gina", "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectRulesReview",
      spec: { namespace: "team-a" },
    });
    expect(rules.status).toBe(201);
    expect(rules.body.status.incomplete).toBe(false);
    expect(rules.body.status.resourceRules).toContainEqual({
      verbs: ["create", "update", "patch", "delete", "deletecollection"],
      apiGroups: [OCM],
      resources: ["addonplacementscores", "managedclustersetbindings", "placements"],
    });
    expect(rules.body.status.resourceRules).toContainEqual({
      verbs: ["create"],
      apiGroups: ["authorization.k8s.io"],
      resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    });
    expect(rules.body.status.nonResourceRules).toContainEqual(
      expect.objectContaining({ verbs: ["get"], nonResourceURLs: expect.arrayContaining(["/api", "/apis/*"]) }),
    );

    const me = await as(
      "gina",
      "POST",
      "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
      ["team-a-devs"],
    );
    expect(me.status).toBe(201);
    expect(me.body).toMatchObject({
      kind: "SelfSubjectReview",
      apiVersion: "authentication.k8s.io/v1",
      status: { userInfo: { username: "oidc:gina", groups: ["team-a-devs", "system:authenticated"] } },
    });
    const admin = await call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "SelfSubjectReview",
    });
    expect(admin.body.status.userInfo).toEqual({ username: "flotilla:admin", groups: ["system:masters", "system:authenticated"] });
  });

  it("are in discovery with the verb create only", async () => {
    const authz = await call("GET", "/apis/authorization.k8s.io/v1");
    expect(authz.body.resources).toContainEqual(
      expect.objectContaining({ name: "selfsubjectaccessreviews", namespaced: false, kind: "SelfSubjectAccessReview", verbs: ["create"] }),
    );
    const authn = await call("GET", "/apis/authentication.k8s.io/v1");
    expect(authn.body.resources).toContainEqual(expect.objectContaining({ name: "selfsubjectreviews", verbs: ["create"] }));
    const rbac = await call("GET", RBAC);
    expect(rbac.body.resources.map((r: { name: string }) => r.name).sort()).toEqual(["clusterrolebindings", "clusterroles", "rolebindings", "roles"]);
  });
});

describe("bootstrap reconciliation (as kube-apiserver's at start)", () => {
  it("recreates what is missing, adds what an autoupdate object lacks, and leaves autoupdate=false alone", async () => {
    const crb = `${RBAC}/clusterrolebindings`;
    const cr = `${RBAC}/clusterroles`;
    expect((await call("DELETE", `${crb}/system:basic-user`)).status).toBe(200);
    expect(
      (
        await call(
          "PATCH",
          `${cr}/system:discovery`,
          { rules: [{ verbs: ["get"], nonResourceURLs: ["/api"] }] },
          { contentType: "application/merge-patch+json" },
        )
      ).status,
    ).toBe(200);
    const frozen = {
      metadata: { annotations: { "rbac.authorization.kubernetes.io/autoupdate": "false" } },
      rules: [{ verbs: ["get"], nonResourceURLs: ["/healthz"] }],
    };
    expect((await call("PATCH", `${cr}/system:public-info-viewer`, frozen, { contentType: "application/merge-patch+json" })).status).toBe(200);
    expect((await as("ivy", "GET", "/apis")).status).toBe(403);

    await ensureBootstrapPolicy(env);

    expect((await call("GET", `${crb}/system:basic-user`)).body).toMatchObject({
      roleRef: { name: "system:basic-user" },
      subjects: [{ kind: "Group", name: "system:authenticated" }],
    });
    const discovery = (await call("GET", `${cr}/system:discovery`)).body;
    expect(discovery.rules[0]).toEqual({ verbs: ["get"], nonResourceURLs: ["/api"] });
    expect(discovery.rules).toContainEqual({ verbs: ["get"], nonResourceURLs: ["/apis/*"] });
    expect((await as("ivy", "GET", "/apis")).status).toBe(200);
    expect((await call("GET", `${cr}/system:public-info-viewer`)).body.rules).toEqual(frozen.rules);
  });
});
