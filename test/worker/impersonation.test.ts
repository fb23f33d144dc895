/**
 * Impersonation on the Kubernetes API (`kubectl --as`, src/auth/impersonation.ts wired in
 * src/auth/request.ts), inside workerd with real RBAC objects, after k8s.io/apiserver's
 * `impersonation_test.go` cases: what each of users, groups, serviceaccounts, userextras and uids
 * needs, the groups the impersonated user gets, the 400s, the reviews and the request itself
 * answered as the impersonated user, and the audit event recording both identities.
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces, createToken, register, PLACEMENTS } from "./helpers.ts";
import { idToken, serveIssuer } from "./oidc-users.ts";
import { waitFor } from "../wait.ts";

const RBAC = "/apis/rbac.authorization.k8s.io/v1";
const OCM = "cluster.open-cluster-management.io";
const WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
const SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
const SSRR = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
const AUTHN = "authentication.k8s.io";

let undo: () => void;

/** Headers of `kubectl --as USER [--as-group G]... [--as-uid U] [--as-user-extra K=V]...` (each extra key its own header). */
function asHeaders(user?: string, opts: { groups?: string[]; uid?: string; extra?: Record<string, string[]> } = {}): Record<string, string> {
  const h: Record<string, string> = {};
  if (user !== undefined) h["Impersonate-User"] = user;
  // What the Fetch API makes of repeated headers: one, the values joined by ", ".
  if (opts.groups) h["Impersonate-Group"] = opts.groups.join(", ");
  if (opts.uid !== undefined) h["Impersonate-Uid"] = opts.uid;
  for (const [k, v] of Object.entries(opts.extra ?? {})) h[`Impersonate-Extra-${k}`] = v.join(", ");
  return h;
}

/** Calls as OIDC user `oidc:<sub>` (null: the admin token) with extra headers. */
async function callAs(sub: string | null, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  return call(method, path, body, sub === null ? { headers } : { token: await idToken(sub), headers });
}

/** `kubectl auth whoami` as `sub` with `headers`: the SelfSubjectReview's answer. */
async function whoami(sub: string | null, headers: Record<string, string>) {
  return callAs(sub, "POST", WHOAMI, headers, { apiVersion: `${AUTHN}/v1`, kind: "SelfSubjectReview" });
}

const clusterRole = (name: string, rules: unknown[]) => ({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name }, rules });
const grant = (kind: "ClusterRoleBinding" | "RoleBinding", name: string, role: string, user: string, ns?: string) => ({
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind,
  metadata: { name, ...(ns ? { namespace: ns } : {}) },
  roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
  subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: user }],
});

async function created(path: string, body: unknown) {
  const r = await call("POST", path, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}

beforeAll(async () => {
  undo = await serveIssuer();
  await createNamespaces("imp-a", "imp-b");
  // dev may impersonate: the user oidc:bob, the group devs, the extra scopes=scope-a, the uid uid-1;
  // and, through edit in imp-a (kube's edit aggregates `impersonate` on serviceaccounts), imp-a's ServiceAccounts.
  await created(
    `${RBAC}/clusterroles`,
    clusterRole("imp-dev", [
      { verbs: ["impersonate"], apiGroups: [""], resources: ["users"], resourceNames: ["oidc:bob"] },
      { verbs: ["impersonate"], apiGroups: [""], resources: ["groups"], resourceNames: ["devs"] },
      { verbs: ["impersonate"], apiGroups: [AUTHN], resources: ["userextras/scopes"], resourceNames: ["scope-a"] },
      { verbs: ["impersonate"], apiGroups: [AUTHN], resources: ["uids"], resourceNames: ["uid-1"] },
    ]),
  );
  await created(`${RBAC}/clusterrolebindings`, grant("ClusterRoleBinding", "imp-dev", "imp-dev", "oidc:dev"));
  await created(`${RBAC}/namespaces/imp-a/rolebindings`, grant("RoleBinding", "dev-edit", "edit", "oidc:dev", "imp-a"));
  // bob edits imp-b only; viewer views imp-a only.
  await created(`${RBAC}/namespaces/imp-b/rolebindings`, grant("RoleBinding", "bob-edit", "edit", "oidc:bob", "imp-b"));
  await created(`${RBAC}/namespaces/imp-a/rolebindings`, grant("RoleBinding", "viewer-view", "view", "oidc:viewer", "imp-a"));
  // So that `auth whoami` answers a user impersonated into system:unauthenticated (system:basic-user
  // is bound to system:authenticated only, as in Kubernetes).
  await created(`${RBAC}/clusterrolebindings`, {
    ...grant("ClusterRoleBinding", "imp-unauthenticated-whoami", "system:basic-user", "x"),
    subjects: [{ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: "system:unauthenticated" }],
  });
});

afterAll(() => undo());

describe("impersonation: who may impersonate what", () => {
  it("without the headers the caller is itself", async () => {
    const r = await whoami("dev", {});
    expect(r.status).toBe(201);
    expect(r.body.status.userInfo).toEqual({ username: "oidc:dev", groups: ["system:authenticated"] });
  });

  it("users: allowed by `impersonate` on users with that name; the impersonated user has system:authenticated only", async () => {
    const r = await whoami("dev", asHeaders("oidc:bob"));
    expect(r.status).toBe(201);
    expect(r.body.status.userInfo).toEqual({ username: "oidc:bob", groups: ["system:authenticated"] });
    const denied = await whoami("dev", asHeaders("oidc:carol"));
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({
      kind: "Status",
      reason: "Forbidden",
      code: 403,
      message: `users "oidc:carol" is forbidden: User "oidc:dev" cannot impersonate resource "users" in API group "" at the cluster scope`,
      details: { kind: "users", name: "oidc:carol" },
    });
    // A user without any impersonation grant (view only), as the attack run found answered as itself.
    const viewer = await whoami("viewer", asHeaders("flotilla:admin", { groups: ["system:masters"] }));
    expect(viewer.status).toBe(403);
    expect(viewer.body.message).toBe(
      `users "flotilla:admin" is forbidden: User "oidc:viewer" cannot impersonate resource "users" in API group "" at the cluster scope`,
    );
  });

  it("header names are case-insensitive", async () => {
    const r = await whoami("dev", { "IMPERSONATE-USER": "oidc:bob", "impersonate-group": "devs" });
    expect(r.body.status.userInfo).toEqual({ username: "oidc:bob", groups: ["devs", "system:authenticated"] });
  });

  it("groups: each needs `impersonate` on groups; system:authenticated is added once", async () => {
    const r = await whoami("dev", asHeaders("oidc:bob", { groups: ["devs"] }));
    expect(r.status).toBe(201);
    expect(r.body.status.userInfo).toEqual({ username: "oidc:bob", groups: ["devs", "system:authenticated"] });
    for (const groups of [["admins"], ["devs", "system:masters"]]) {
      const denied = await whoami("dev", asHeaders("oidc:bob", { groups }));
      expect(denied.status).toBe(403);
      expect(denied.body.message).toBe(
        `groups "${groups.at(-1)}" is forbidden: User "oidc:dev" cannot impersonate resource "groups" in API group "" at the cluster scope`,
      );
    }
    // system:masters (the admin token) may impersonate anything; a requested system:authenticated or
    // system:unauthenticated group keeps system:authenticated from being added.
    expect((await whoami(null, asHeaders("x", { groups: ["g", "system:authenticated"] }))).body.status.userInfo.groups).toEqual(["g", "system:authenticated"]);
    expect((await whoami(null, asHeaders("x", { groups: ["system:unauthenticated"] }))).body.status.userInfo.groups).toEqual(["system:unauthenticated"]);
    expect((await whoami(null, asHeaders("system:anonymous"))).body.status.userInfo).toEqual({
      username: "system:anonymous",
      groups: ["system:unauthenticated"],
    });
  });

  it("serviceaccounts: `impersonate` on the ServiceAccount in its namespace (edit holds it); its groups are added", async () => {
    const r = await whoami("dev", asHeaders("system:serviceaccount:imp-a:builder"));
    expect(r.status).toBe(201);
    expect(r.body.status.userInfo).toEqual({
      username: "system:serviceaccount:imp-a:builder",
      groups: ["system:serviceaccounts", "system:serviceaccounts:imp-a", "system:authenticated"],
    });
    const denied = await whoami("dev", asHeaders("system:serviceaccount:imp-b:builder"));
    expect(denied.status).toBe(403);
    expect(denied.body.message).toBe(
      `serviceaccounts "builder" is forbidden: User "oidc:dev" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "imp-b"`,
    );
    // With groups asked, the ServiceAccount's are not added.
    expect((await whoami(null, asHeaders("system:serviceaccount:imp-a:builder", { groups: ["g"] }))).body.status.userInfo.groups).toEqual([
      "g",
      "system:authenticated",
    ]);
    // Not a valid ServiceAccount name: an ordinary user name, checked on users.
    const odd = await whoami("dev", asHeaders("system:serviceaccount:Imp-A:builder"));
    expect(odd.body.message).toContain(`users "system:serviceaccount:Imp-A:builder" is forbidden`);
  });

  it("userextras: `impersonate` on userextras/<key> by value; keys lower-cased and percent-decoded", async () => {
    const r = await whoami("dev", asHeaders("oidc:bob", { extra: { Scopes: ["scope-a"] } }));
    expect(r.status).toBe(201);
    expect(r.body.status.userInfo).toEqual({ username: "oidc:bob", groups: ["system:authenticated"], extra: { scopes: ["scope-a"] } });
    const denied = await whoami("dev", asHeaders("oidc:bob", { extra: { scopes: ["scope-a", "scope-b"] } }));
    expect(denied.status).toBe(403);
    expect(denied.body.message).toBe(
      `userextras.${AUTHN} "scope-b" is forbidden: User "oidc:dev" cannot impersonate resource "userextras/scopes" in API group "${AUTHN}" at the cluster scope`,
    );
    const project = await whoami("dev", asHeaders("oidc:bob", { extra: { project: ["p"] } }));
    expect(project.body.message).toContain(`cannot impersonate resource "userextras/project"`);
    const escaped = await whoami(null, asHeaders("x", { extra: { "example.com%2fescaped%e1%9b%84scopes": ["a", "b"], "almost%zzpercent%xxencoded": ["c"] } }));
    expect(escaped.body.status.userInfo.extra).toEqual({ "example.com/escapedᛄscopes": ["a", "b"], "almost%zzpercent%xxencoded": ["c"] });
  });

  it("uids: `impersonate` on uids by value", async () => {
    const r = await whoami("dev", asHeaders("oidc:bob", { uid: "uid-1" }));
    expect(r.status).toBe(201);
    expect(r.body.status.userInfo).toEqual({ username: "oidc:bob", uid: "uid-1", groups: ["system:authenticated"] });
    const denied = await whoami("dev", asHeaders("oidc:bob", { uid: "uid-2" }));
    expect(denied.status).toBe(403);
    expect(denied.body.message).toBe(
      `uids.${AUTHN} "uid-2" is forbidden: User "oidc:dev" cannot impersonate resource "uids" in API group "${AUTHN}" at the cluster scope`,
    );
  });

  it("groups, extras or a uid without Impersonate-User: 400 BadRequest, whoever asks", async () => {
    for (const h of <Record<string, string>[]>[
      { "Impersonate-Group": "devs" },
      { "Impersonate-Extra-scopes": "scope-a" },
      { "Impersonate-Uid": "uid-1" },
      { "Impersonate-User": "", "Impersonate-Group": "g" },
    ]) {
      for (const who of [null, "dev"]) {
        const r = await whoami(who, h);
        expect(r.status).toBe(400);
        expect(r.body).toMatchObject({ kind: "Status", reason: "BadRequest", code: 400 });
        expect(r.body.message).toContain("without impersonating a user");
      }
    }
  });

  it("an agent's credential gets 403 with the headers too (agents have no RBAC identity to impersonate with)", async () => {
    const { keys, res } = await register(await createToken(), "imp-agent", "imp-agent-id");
    expect(res.status).toBeLessThan(300);
    const r = await call(
      "POST",
      WHOAMI,
      { apiVersion: `${AUTHN}/v1`, kind: "SelfSubjectReview" },
      {
        token: await keys.sign("imp-agent"),
        headers: asHeaders("flotilla:admin", { groups: ["system:masters"] }),
      },
    );
    expect(r.status).toBe(403);
    expect(r.body.message).toContain("may only use /agent/v1");
  });
});

describe("impersonation: the request is served as the impersonated user", () => {
  it("SelfSubjectAccessReview and SelfSubjectRulesReview answer for the impersonated user (`kubectl auth can-i --as`)", async () => {
    const canI = (verb: string) =>
      callAs(null, "POST", SSAR, asHeaders("oidc:viewer"), {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SelfSubjectAccessReview",
        spec: { resourceAttributes: { verb, group: OCM, resource: "placements", namespace: "imp-a" } },
      });
    expect((await canI("create")).body.status.allowed).toBe(false);
    expect((await canI("list")).body.status).toMatchObject({ allowed: true, reason: expect.stringContaining('RoleBinding "viewer-view/imp-a"') });
    const rules = await callAs(null, "POST", SSRR, asHeaders("oidc:viewer"), {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectRulesReview",
      spec: { namespace: "imp-a" },
    });
    const verbs = rules.body.status.resourceRules
      .filter((r: { resources?: string[] }) => r.resources?.includes("placements"))
      .flatMap((r: { verbs: string[] }) => r.verbs);
    expect(verbs).toContain("list");
    expect(verbs).not.toContain("create");
    expect(verbs).not.toContain("*");
  });

  it("RBAC authorizes the request as the impersonated user: list, create, watch; the caller's own rights do not carry over", async () => {
    // dev edits imp-a, bob edits imp-b.
    expect((await callAs("dev", "GET", PLACEMENTS("imp-b"), {})).status).toBe(403);
    expect((await callAs("dev", "GET", PLACEMENTS("imp-b"), asHeaders("oidc:bob"))).status).toBe(200);
    const denied = await callAs("dev", "GET", PLACEMENTS("imp-a"), asHeaders("oidc:bob"));
    expect(denied.status).toBe(403);
    expect(denied.body.message).toBe(
      `placements.${OCM} is forbidden: User "oidc:bob" cannot list resource "placements" in API group "${OCM}" in the namespace "imp-a"`,
    );
    const watch = await callAs("dev", "GET", `${PLACEMENTS("imp-a")}?watch=true`, asHeaders("oidc:bob"));
    expect(watch.status).toBe(403);
    expect(watch.body.message).toContain(`User "oidc:bob" cannot watch resource "placements"`);
    // The admin (system:masters) impersonating bob has bob's rights only.
    const audit = await callAs(null, "GET", "/apis/flotilla.dev/v1alpha1/auditevents", asHeaders("oidc:bob"));
    expect(audit.status).toBe(403);
    expect(audit.body.message).toContain(`User "oidc:bob" cannot list resource "auditevents"`);
  });

  it("the audit event records the caller as user and the impersonated user as impersonatedUser", async () => {
    const body = { apiVersion: `${OCM}/v1beta1`, kind: "Placement", metadata: { name: "by-bob" }, spec: {} };
    const r = await callAs("dev", "POST", PLACEMENTS("imp-b"), asHeaders("oidc:bob", { groups: ["devs"] }), body);
    expect(r.status).toBe(201);
    const event = await recorded(r.headers.get("audit-id"));
    expect(event.user).toEqual({ username: "oidc:dev", groups: ["system:authenticated"] });
    expect(event.impersonatedUser).toEqual({ username: "oidc:bob", groups: ["devs", "system:authenticated"] });
    expect(event.objectRef).toMatchObject({ resource: "placements", namespace: "imp-b", name: "by-bob" });
    // Served as the AuditEvent too.
    const served = await call("GET", `/apis/flotilla.dev/v1alpha1/auditevents?fieldSelector=metadata.name%3D${event.auditID}`);
    expect(served.body.items[0].impersonatedUser).toEqual(event.impersonatedUser);
    // A refused impersonation is recorded as the caller's, with no impersonated user.
    const refused = await callAs("dev", "POST", PLACEMENTS("imp-a"), asHeaders("oidc:carol"), body);
    expect(refused.status).toBe(403);
    const refusal = await recorded(refused.headers.get("audit-id"));
    expect(refusal.user.username).toBe("oidc:dev");
    expect(refusal.impersonatedUser).toBeUndefined();
    expect(refusal.responseStatus).toMatchObject({ code: 403, message: expect.stringContaining(`users "oidc:carol" is forbidden`) });
  });
});

/** The stored Event of a request, by its Audit-Id header, once the record (written after the response) is there. */
async function recorded(auditID: string | null) {
  expect(auditID).toMatch(/^[0-9a-f-]{36}$/);
  const row = await waitFor(`audit record ${auditID}`, () =>
    env.DB.prepare("SELECT body FROM audit_events WHERE audit_id = ?").bind(auditID).first<{ body: string }>(),
  );
  return JSON.parse(row!.body);
}
