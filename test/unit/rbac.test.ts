/**
 * Table tests of the RBAC evaluator (src/auth/rbac.ts), built from the cases of Kubernetes' own
 * tests, translated as facts: `plugin/pkg/auth/authorizer/rbac/rbac_test.go` (TestAuthorizer,
 * TestRuleMatches), `pkg/registry/rbac/validation/rule_test.go` (TestDefaultRuleResolver,
 * TestAppliesTo), `component-helpers/auth/rbac/validation/policy_comparator_test.go` (Covers,
 * nonResourceURLCovers), the policy-based storages' escalation rules, the ClusterRole
 * aggregation controller and the bootstrap policy.
 */
import { describe, expect, it } from "vitest";
import {
  AGGREGATE_TO_ADMIN,
  AGGREGATE_TO_EDIT,
  AGGREGATE_TO_VIEW,
  RBAC_GROUP,
  forbiddenError,
  serviceAccountGroups,
  serviceAccountUsername,
  type ClusterRole,
  type ClusterRoleBinding,
  type PolicyRule,
  type RequestAttributes,
  type Role,
  type RoleBinding,
  type Subject,
  type UserInfo,
} from "../../src/auth/rbac-types.ts";
import { BOOTSTRAP_CLUSTER_ROLE_BINDINGS, BOOTSTRAP_CLUSTER_ROLES } from "../../src/auth/rbac-bootstrap.ts";
import { RbacAuthorizer } from "../../src/auth/rbac.ts";
import { aggregateClusterRoles } from "../../src/auth/rbac-aggregation.ts";
import { breakdownRule, compactRuleString, coversRules, nonResourceURLCovers, ruleAllows } from "../../src/auth/rbac-rules.ts";
import { ClusterRoleSchema, RoleBindingSchema } from "../../src/auth/rbac-schemas.ts";
import { KINDS } from "../../src/kinds/index.ts";

// ---------------------------------------------------------------------------
// Builders, after the helpers of Kubernetes' tests
// ---------------------------------------------------------------------------

/** Kubernetes' newRule(verbs, apiGroups, resources, nonResourceURLs): comma-separated lists. */
function newRule(verbs: string, apiGroups: string, resources: string, urls: string): PolicyRule {
  return { verbs: verbs.split(","), apiGroups: apiGroups.split(","), resources: resources.split(","), nonResourceURLs: urls.split(",") };
}

function subjects(specs: string[], namespace?: string): Subject[] {
  return specs.map((s) => {
    const [kind, ...rest] = s.split(":");
    const name = rest.join(":");
    if (kind === "ServiceAccount") {
      const [ns, sa] = name.includes("/") ? name.split("/") : [namespace, name];
      return { kind, apiGroup: "", name: sa!, ...(ns ? { namespace: ns } : {}) };
    }
    return { kind: kind!, apiGroup: RBAC_GROUP, name };
  });
}

function role(namespace: string, name: string, ...rules: PolicyRule[]): Role {
  return { metadata: { namespace, name }, rules };
}

function clusterRole(name: string, ...rules: PolicyRule[]): ClusterRole {
  return { metadata: { name }, rules };
}

let bindingSeq = 0;
function roleBinding(namespace: string, refKind: "Role" | "ClusterRole", refName: string, ...subjectSpecs: string[]): RoleBinding {
  return {
    metadata: { namespace, name: `rb-${++bindingSeq}` },
    roleRef: { apiGroup: RBAC_GROUP, kind: refKind, name: refName },
    subjects: subjects(subjectSpecs),
  };
}

function clusterRoleBinding(refName: string, ...subjectSpecs: string[]): ClusterRoleBinding {
  return { metadata: { name: `crb-${++bindingSeq}` }, roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: refName }, subjects: subjects(subjectSpecs) };
}

function user(name: string, groups = ""): UserInfo {
  return { name, groups: groups ? groups.split(",") : [] };
}

function res(verb: string, resource: string, namespace = "", extra: { group?: string; sub?: string; name?: string } = {}): RequestAttributes {
  return { verb, apiGroup: extra.group ?? "", resource, subresource: extra.sub, name: extra.name, namespace };
}

// ---------------------------------------------------------------------------
// Authorization through bindings (rbac_test.go TestAuthorizer)
// ---------------------------------------------------------------------------

describe("authorize: bindings and namespaces (Kubernetes TestAuthorizer)", () => {
  const admin = new RbacAuthorizer({
    clusterRoles: [clusterRole("admin", newRule("*", "*", "*", "*"))],
    roleBindings: [roleBinding("ns1", "ClusterRole", "admin", "User:admin", "Group:admins")],
  });
  it.each([
    ["the user, get, in the binding's namespace", user("admin"), res("get", "Pods", "ns1"), true],
    ["the user, watch", user("admin"), res("watch", "Pods", "ns1"), true],
    ["the user with another group", user("admin", "group1"), res("watch", "Foobar", "ns1"), true],
    ["another user through the group", user("joe", "admins"), res("watch", "Foobar", "ns1"), true],
    ["another user, the group among others", user("joe", "group1,admins"), res("watch", "Foobar", "ns1"), true],
    ["the user in another namespace", user("admin"), res("GET", "Pods", "ns2"), false],
    ["the user, a cluster-scoped resource (RoleBinding to a ClusterRole stays in its namespace)", user("admin"), res("GET", "Nodes"), false],
    ["the group in another namespace", user("admin", "admins"), res("GET", "Pods", "ns2"), false],
    ["the group, a cluster-scoped resource", user("admin", "admins"), res("GET", "Nodes"), false],
  ])("%s", (_name, u, attrs, allowed) => {
    expect(admin.authorize(u, attrs).allowed).toBe(allowed);
  });

  const urls = new RbacAuthorizer({
    clusterRoles: [
      clusterRole("non-resource-url-getter", newRule("get", "", "", "/apis")),
      clusterRole("non-resource-url", newRule("*", "", "", "/apis")),
      clusterRole("non-resource-url-prefix", newRule("get", "", "", "/apis/*")),
    ],
    clusterRoleBindings: [
      clusterRoleBinding("non-resource-url-getter", "User:foo", "Group:bar"),
      clusterRoleBinding("non-resource-url", "User:admin", "Group:admin"),
      clusterRoleBinding("non-resource-url-prefix", "User:prefixed", "Group:prefixed"),
    ],
  });
  it.each([
    [user("foo"), "get", "/apis", true],
    [user("", "bar"), "get", "/apis", true],
    [user("admin"), "get", "/apis", true],
    [user("", "admin"), "get", "/apis", true],
    [user("admin"), "watch", "/apis", true],
    [user("", "admin"), "watch", "/apis", true],
    [user("prefixed"), "get", "/apis/v1", true],
    [user("", "prefixed"), "get", "/apis/v1", true],
    [user("prefixed"), "get", "/apis/v1/foobar", true],
    [user("", "prefixed"), "get", "/apis/v1/foorbar", true],
    [user("foo"), "watch", "/apis", false],
    [user("", "bar"), "watch", "/apis", false],
    [user("foo"), "get", "/api/v1", false],
    [user("", "bar"), "get", "/api/v1", false],
    [user("admin"), "get", "/api/v1", false],
    [user("", "admin"), "get", "/api/v1", false],
    [user("prefixed"), "get", "/api/v1", false],
    [user("", "prefixed"), "get", "/api/v1", false],
  ])("non-resource: %o %s %s → %s", (u, verb, path, allowed) => {
    expect(urls.authorize(u, { verb, path }).allowed).toBe(allowed);
  });

  it("a rule on pods does not reach pods/status", () => {
    const a = new RbacAuthorizer({
      clusterRoles: [clusterRole("admin", newRule("*", "*", "pods", "*"))],
      roleBindings: [roleBinding("ns1", "ClusterRole", "admin", "User:admin")],
    });
    expect(a.authorize(user("admin"), res("get", "pods", "ns1")).allowed).toBe(true);
    expect(a.authorize(user("admin"), res("get", "pods", "ns1", { sub: "status" })).allowed).toBe(false);
  });

  it("rules on pods/status and */scale reach those subresources, not pods", () => {
    const a = new RbacAuthorizer({
      clusterRoles: [clusterRole("admin", newRule("*", "*", "pods/status", "*"), newRule("*", "*", "*/scale", "*"))],
      roleBindings: [roleBinding("ns1", "ClusterRole", "admin", "User:admin", "Group:admins")],
    });
    expect(a.authorize(user("admin"), res("get", "pods", "ns1", { sub: "status" })).allowed).toBe(true);
    expect(a.authorize(user("admin"), res("get", "pods", "ns1", { sub: "scale" })).allowed).toBe(true);
    expect(a.authorize(user("admin"), res("get", "deployments", "ns1", { sub: "scale" })).allowed).toBe(true);
    expect(a.authorize(user("admin"), res("get", "anything", "ns1", { sub: "scale" })).allowed).toBe(true);
    expect(a.authorize(user("admin"), res("get", "pods", "ns1")).allowed).toBe(false);
  });
});

// ---------------------------------------------------------------------------
// One rule against requests (rbac_test.go TestRuleMatches, evaluation_helpers.go)
// ---------------------------------------------------------------------------

describe("ruleAllows (Kubernetes TestRuleMatches)", () => {
  const r = (verb: string, group: string, resource: string, sub?: string, name?: string): RequestAttributes => ({
    verb,
    apiGroup: group,
    resource,
    subresource: sub,
    name,
  });
  const cases: [string, PolicyRule, [RequestAttributes, boolean][]][] = [
    [
      "star verb, exact match other",
      { verbs: ["*"], apiGroups: ["group1"], resources: ["resource1"] },
      [
        [r("verb1", "group1", "resource1"), true],
        [r("verb1", "group2", "resource1"), false],
        [r("verb1", "group1", "resource2"), false],
        [r("verb2", "group1", "resource1"), true],
        [r("verb2", "group2", "resource2"), false],
      ],
    ],
    [
      "star group, exact match other",
      { verbs: ["verb1"], apiGroups: ["*"], resources: ["resource1"] },
      [
        [r("verb1", "group1", "resource1"), true],
        [r("verb1", "group2", "resource1"), true],
        [r("verb1", "group1", "resource2"), false],
        [r("verb2", "group1", "resource1"), false],
      ],
    ],
    [
      "star resource, exact match other",
      { verbs: ["verb1"], apiGroups: ["group1"], resources: ["*"] },
      [
        [r("verb1", "group1", "resource1"), true],
        [r("verb1", "group1", "resource2"), true],
        [r("verb1", "group1", "resource1", "status"), true],
        [r("verb1", "group2", "resource1"), false],
        [r("verb2", "group1", "resource1"), false],
      ],
    ],
    [
      "tuple expansion",
      { verbs: ["verb1", "verb2"], apiGroups: ["group1", "group2"], resources: ["resource1", "resource2"] },
      [
        [r("verb1", "group1", "resource1"), true],
        [r("verb1", "group2", "resource2"), true],
        [r("verb2", "group1", "resource2"), true],
        [r("verb2", "group2", "resource1"), true],
      ],
    ],
    [
      "subresource expansion",
      { verbs: ["*"], apiGroups: ["*"], resources: ["resource1/subresource1"] },
      [
        [r("verb1", "group1", "resource1", "subresource1"), true],
        [r("verb1", "group2", "resource1", "subresource2"), false],
        [r("verb1", "group1", "resource2", "subresource1"), false],
        [r("verb2", "group1", "resource1", "subresource1"), true],
        [r("verb2", "group1", "resource1"), false],
      ],
    ],
    [
      "*/subresource matches that subresource of any resource, never the resource itself",
      { verbs: ["get"], apiGroups: ["apps"], resources: ["*/scale"] },
      [
        [r("get", "apps", "deployments", "scale"), true],
        [r("get", "apps", "replicasets", "scale"), true],
        [r("get", "apps", "deployments"), false],
        [r("get", "apps", "deployments", "status"), false],
        [r("get", "apps", "deployments", "scalex"), false],
      ],
    ],
    [
      "resourceNames restrict by name; a request without a name (list, create) does not match",
      { verbs: ["get", "update", "list", "create"], apiGroups: [""], resources: ["configmaps"], resourceNames: ["my-config"] },
      [
        [r("get", "", "configmaps", undefined, "my-config"), true],
        [r("update", "", "configmaps", undefined, "my-config"), true],
        [r("get", "", "configmaps", undefined, "other"), false],
        [r("list", "", "configmaps"), false],
        [r("create", "", "configmaps"), false],
        [r("list", "", "configmaps", undefined, "my-config"), true],
      ],
    ],
    [
      "verbs and groups are case-sensitive; a rule of non-resource URLs never allows a resource request",
      { verbs: ["get"], apiGroups: [""], resources: ["pods"] },
      [
        [r("GET", "", "pods"), false],
        [r("get", "", "Pods"), false],
        [r("get", "", "pods"), true],
      ],
    ],
    ["a rule with no verbs allows nothing", { verbs: [], apiGroups: ["*"], resources: ["*"] }, [[r("get", "", "pods"), false]]],
  ];
  for (const [name, rule, requests] of cases) {
    it(name, () => {
      for (const [attrs, want] of requests) expect({ attrs, got: ruleAllows(rule, attrs) }).toEqual({ attrs, got: want });
    });
  }

  const urlCases: [string, PolicyRule, [string, string, boolean][]][] = [
    [
      "star nonresource, exact match other",
      { verbs: ["verb1"], nonResourceURLs: ["*"] },
      [
        ["verb1", "/foo", true],
        ["verb1", "/foo/bar", true],
        ["verb1", "/foo/baz/one", true],
        ["verb2", "/foo", false],
        ["verb2", "/foo/bar/one", false],
      ],
    ],
    [
      "star nonresource subpath",
      { verbs: ["verb1"], nonResourceURLs: ["/foo/*"] },
      [
        ["verb1", "/foo", false],
        ["verb1", "/foo/bar", true],
        ["verb1", "/foo/baz", true],
        ["verb1", "/foo/bar/one", true],
        ["verb1", "/notfoo", false],
        ["verb1", "/notfoo/bar", false],
        ["verb1", "/notfoo/baz/one", false],
      ],
    ],
    [
      "star verb, exact nonresource",
      { verbs: ["*"], nonResourceURLs: ["/foo", "/foo/bar/one"] },
      [
        ["verb1", "/foo", true],
        ["verb1", "/foo/bar", false],
        ["verb1", "/foo/bar/one", true],
        ["verb2", "/foo", true],
        ["verb2", "/foo/baz/one", false],
      ],
    ],
    ["a rule of resources never allows a non-resource request", { verbs: ["*"], apiGroups: ["*"], resources: ["*"] }, [["get", "/apis", false]]],
  ];
  for (const [name, rule, requests] of urlCases) {
    it(name, () => {
      for (const [verb, path, want] of requests) expect({ verb, path, got: ruleAllows(rule, { verb, path }) }).toEqual({ verb, path, got: want });
    });
  }
});

// ---------------------------------------------------------------------------
// Rule resolution (rule_test.go TestDefaultRuleResolver, TestAppliesTo)
// ---------------------------------------------------------------------------

describe("rulesFor (Kubernetes TestDefaultRuleResolver)", () => {
  const readPods: PolicyRule = { verbs: ["GET", "WATCH"], apiGroups: ["v1"], resources: ["pods"] };
  const readServices: PolicyRule = { verbs: ["GET", "WATCH"], apiGroups: ["v1"], resources: ["services"] };
  const writeNodes: PolicyRule = { verbs: ["PUT", "CREATE", "UPDATE"], apiGroups: ["v1"], resources: ["nodes"] };
  const ruleAdmin: PolicyRule = { verbs: ["*"], apiGroups: ["*"], resources: ["*"] };
  const rbac = new RbacAuthorizer({
    roles: [role("namespace1", "readthings", readPods, readServices)],
    clusterRoles: [clusterRole("cluster-admin", ruleAdmin), clusterRole("write-nodes", writeNodes)],
    roleBindings: [roleBinding("namespace1", "Role", "readthings", "User:foobar", "Group:group1")],
    clusterRoleBindings: [clusterRoleBinding("cluster-admin", "User:admin", "Group:admin")],
  });
  it.each([
    ["a Role bound in its namespace", user("foobar"), "namespace1", [readPods, readServices]],
    ["the same user in another namespace", user("foobar"), "namespace2", []],
    ["no namespace: only ClusterRoleBindings apply", user("foobar", "admin"), "", [ruleAdmin]],
    ["nobody", user(""), "", []],
  ])("%s", (_n, u, ns, want) => {
    expect(rbac.rulesFor(u, ns)).toEqual({ rules: want, errors: [] });
  });

  it("a binding naming the user twice (by name and by group) contributes its rules once", () => {
    expect(rbac.rulesFor(user("foobar", "group1"), "namespace1").rules).toEqual([readPods, readServices]);
  });

  it("a binding to a role that does not exist grants nothing and reports it", () => {
    const a = new RbacAuthorizer({
      clusterRoleBindings: [clusterRoleBinding("missing", "User:u")],
      roleBindings: [
        roleBinding("ns", "Role", "absent", "User:u"),
        { ...roleBinding("ns", "Role", "x", "User:u"), roleRef: { apiGroup: RBAC_GROUP, kind: "Unknown", name: "x" } },
      ],
    });
    expect(a.rulesFor(user("u"), "ns")).toEqual({
      rules: [],
      errors: [`clusterrole.${RBAC_GROUP} "missing" not found`, `role.${RBAC_GROUP} "absent" not found`, 'unsupported role reference kind: "Unknown"'],
    });
    expect(a.authorize(user("u"), res("get", "pods", "ns")).reason).toBe(
      `RBAC: [clusterrole.${RBAC_GROUP} "missing" not found, role.${RBAC_GROUP} "absent" not found, unsupported role reference kind: "Unknown"]`,
    );
  });

  it("rulesReview splits resource and non-resource rules (SelfSubjectRulesReview)", () => {
    const a = new RbacAuthorizer({ clusterRoles: BOOTSTRAP_CLUSTER_ROLES, clusterRoleBindings: BOOTSTRAP_CLUSTER_ROLE_BINDINGS });
    const review = a.rulesReview(user("bob", "system:authenticated"), "team-a");
    expect(review.incomplete).toBe(false);
    expect(review.evaluationError).toBe("");
    expect(review.resourceRules).toContainEqual({
      verbs: ["create"],
      apiGroups: ["authorization.k8s.io"],
      resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
      resourceNames: [],
    });
    expect(review.nonResourceRules).toContainEqual({ verbs: ["get"], nonResourceURLs: ["/healthz", "/livez", "/readyz", "/version", "/version/"] });
  });
});

describe("subjects (Kubernetes TestAppliesTo)", () => {
  const rule: PolicyRule = { verbs: ["get"], apiGroups: [""], resources: ["pods"] };
  const applies = (subjectSpecs: string[], u: UserInfo, namespace = ""): boolean => {
    const bindings = namespace
      ? { roleBindings: [roleBinding(namespace, "ClusterRole", "r", ...subjectSpecs)] }
      : { clusterRoleBindings: [clusterRoleBinding("r", ...subjectSpecs)] };
    return new RbacAuthorizer({ clusterRoles: [clusterRole("r", rule)], ...bindings }).authorize(u, res("get", "pods", namespace || "any")).allowed;
  };
  it.each([
    ["single subject that matches username", ["User:foobar"], user("foobar"), "", true],
    ["multiple subjects, one that matches username", ["User:barfoo", "User:foobar"], user("foobar"), "", true],
    ["multiple subjects, none that match username", ["User:barfoo", "User:foobar"], user("zimzam"), "", false],
    ["multiple subjects, one that match group", ["User:barfoo", "Group:foobar"], user("zimzam", "foobar"), "", true],
    ["one that match group, should ignore namespace", ["User:barfoo", "Group:foobar"], user("zimzam", "foobar"), "namespace1", true],
    [
      "a service account that matches",
      ["User:barfoo", "Group:foobar", "ServiceAccount:kube-system/default"],
      user("system:serviceaccount:kube-system:default"),
      "default",
      true,
    ],
    ["* user subject name doesn't match all users", ["User:*"], user("foobar"), "default", false],
    [
      "all authenticated and unauthenticated: an authenticated user",
      ["Group:system:authenticated", "Group:system:unauthenticated"],
      user("foobar", "system:authenticated"),
      "default",
      true,
    ],
    [
      "all authenticated and unauthenticated: anonymous",
      ["Group:system:authenticated", "Group:system:unauthenticated"],
      user("system:anonymous", "system:unauthenticated"),
      "default",
      true,
    ],
    [
      "a ServiceAccount without namespace in a RoleBinding is the binding's namespace's",
      ["ServiceAccount:deployer"],
      user("system:serviceaccount:ci:deployer"),
      "ci",
      true,
    ],
    ["…and not another namespace's", ["ServiceAccount:deployer"], user("system:serviceaccount:other:deployer"), "ci", false],
    [
      "a ServiceAccount without namespace in a ClusterRoleBinding matches nobody",
      ["ServiceAccount:deployer"],
      user("system:serviceaccount:ci:deployer"),
      "",
      false,
    ],
    ["a ServiceAccount with its namespace in a ClusterRoleBinding", ["ServiceAccount:ci/deployer"], user("system:serviceaccount:ci:deployer"), "", true],
    ["a ServiceAccount subject is not a group match", ["ServiceAccount:ci/deployer"], user("deployer", "system:serviceaccounts:ci"), "", false],
    [
      "the ServiceAccounts group of a namespace",
      ["Group:system:serviceaccounts:ci"],
      { name: serviceAccountUsername("ci", "x"), groups: serviceAccountGroups("ci") },
      "ci",
      true,
    ],
    ["an unknown subject kind matches nobody", ["Robot:foobar"], user("foobar"), "ns", false],
  ])("%s", (_n, specs, u, ns, want) => {
    expect(applies(specs, u, ns)).toBe(want);
  });
});

describe("reasons and the system:masters bypass", () => {
  const rbac = new RbacAuthorizer({
    clusterRoles: [clusterRole("reader", { verbs: ["get"], apiGroups: [""], resources: ["secrets"] })],
    roleBindings: [{ ...roleBinding("team-a", "ClusterRole", "reader", "ServiceAccount:ci"), metadata: { namespace: "team-a", name: "ci-reads" } }],
    clusterRoleBindings: [{ ...clusterRoleBinding("reader", "User:x", "Group:devs"), metadata: { name: "devs-read" } }],
  });
  it("names the binding, its role and the subject that applied", () => {
    expect(rbac.authorize(user("alice", "devs"), res("get", "secrets", "team-b")).reason).toBe(
      'RBAC: allowed by ClusterRoleBinding "devs-read" of ClusterRole "reader" to Group "devs"',
    );
    expect(rbac.authorize(user(serviceAccountUsername("team-a", "ci")), res("get", "secrets", "team-a")).reason).toBe(
      'RBAC: allowed by RoleBinding "ci-reads/team-a" of ClusterRole "reader" to ServiceAccount "ci/team-a"',
    );
  });
  it("kubectl auth can-i '*' '*': only a rule with verb * and resource * allows verb * on resource *", () => {
    const a = new RbacAuthorizer({
      clusterRoles: [
        clusterRole("all", { verbs: ["*"], apiGroups: ["*"], resources: ["*"] }),
        clusterRole("most", { verbs: ["get", "list", "create", "update", "delete"], apiGroups: ["*"], resources: ["*"] }),
      ],
      clusterRoleBindings: [clusterRoleBinding("all", "User:root"), clusterRoleBinding("most", "User:almost")],
    });
    expect(a.authorize(user("root"), res("*", "*", "ns", { group: "*" })).allowed).toBe(true);
    expect(a.authorize(user("almost"), res("*", "*", "ns", { group: "*" })).allowed).toBe(false);
    expect(a.authorize(user("almost"), res("get", "*", "ns", { group: "*" })).allowed).toBe(true);
  });
  it("a ClusterRoleBinding to a Role resolves to nothing", () => {
    const a = new RbacAuthorizer({
      roles: [role("ns", "r", { verbs: ["get"], apiGroups: [""], resources: ["pods"] })],
      clusterRoleBindings: [{ ...clusterRoleBinding("r", "User:u"), roleRef: { apiGroup: RBAC_GROUP, kind: "Role", name: "r" } }],
    });
    expect(a.authorize(user("u"), res("get", "pods", "ns"))).toEqual({ allowed: false, reason: `RBAC: role.${RBAC_GROUP} "r" not found` });
  });
  it("a denial without resolution errors has no reason", () => {
    expect(rbac.authorize(user("alice"), res("get", "secrets", "team-a"))).toEqual({ allowed: false, reason: "" });
  });
  it("a denial is kube-apiserver's 403: who, verb, resource and scope", () => {
    const ns = forbiddenError(user("alice"), res("create", "placements", "team-b", { group: "cluster.open-cluster-management.io" }), "");
    expect(ns.toStatus()).toMatchObject({
      code: 403,
      reason: "Forbidden",
      message:
        'placements.cluster.open-cluster-management.io is forbidden: User "alice" cannot create resource "placements" in API group "cluster.open-cluster-management.io" in the namespace "team-b"',
      details: { group: "cluster.open-cluster-management.io", kind: "placements" },
    });
    expect(
      forbiddenError(user("bob"), res("update", "managedclusters", "", { group: "register.open-cluster-management.io", sub: "accept", name: "c1" }), "RBAC: x")
        .message,
    ).toBe(
      'managedclusters.register.open-cluster-management.io "c1" is forbidden: User "bob" cannot update resource "managedclusters/accept" in API group "register.open-cluster-management.io" at the cluster scope: RBAC: x',
    );
    expect(forbiddenError(user("bob"), res("get", "secrets", "ns", { name: "s" })).message).toBe(
      'secrets "s" is forbidden: User "bob" cannot get resource "secrets" in API group "" in the namespace "ns"',
    );
    expect(forbiddenError(user("bob"), { verb: "get", path: "/docs" }).message).toBe('forbidden: User "bob" cannot get path "/docs"');
  });
  it("system:masters may do anything, bound or not", () => {
    expect(rbac.authorize(user("root", "system:masters"), res("delete", "anything", "", { group: "x.io" })).allowed).toBe(true);
    expect(rbac.authorize(user("root", "system:masters"), { verb: "post", path: "/anywhere" }).allowed).toBe(true);
  });
});

// ---------------------------------------------------------------------------
// Covering (policy_comparator_test.go)
// ---------------------------------------------------------------------------

describe("coversRules (Kubernetes Covers)", () => {
  const g = (apiGroups: string[], verbs: string[], resources: string[], resourceNames?: string[]): PolicyRule => ({
    apiGroups,
    verbs,
    resources,
    ...(resourceNames ? { resourceNames } : {}),
  });
  const cases: [string, PolicyRule[], PolicyRule[], boolean, PolicyRule[]][] = [
    ["exact match", [g(["v1"], ["get"], ["builds"])], [g(["v1"], ["get"], ["builds"])], true, []],
    ["subresource wildcard", [g(["v1"], ["get"], ["*/scale"])], [g(["v1"], ["get"], ["foo/scale"])], true, []],
    [
      "a subresource wildcard does not cover the resource",
      [g(["v1"], ["get"], ["*/scale"])],
      [g(["v1"], ["get"], ["foo"])],
      false,
      [g(["v1"], ["get"], ["foo"])],
    ],
    [
      "multiple rules covering a single rule",
      [g(["v1"], ["delete"], ["deployments"]), g(["v1"], ["delete"], ["builds"]), g(["v1"], ["update"], ["builds", "deployments"])],
      [g(["v1"], ["delete", "update"], ["builds", "deployments"])],
      true,
      [],
    ],
    [
      "multiple API groups covering a single rule",
      [
        g(["group1"], ["delete"], ["deployments"]),
        g(["group1"], ["delete"], ["builds"]),
        g(["group1"], ["update"], ["builds", "deployments"]),
        g(["group2"], ["delete"], ["deployments"]),
        g(["group2"], ["delete"], ["builds"]),
        g(["group2"], ["update"], ["builds", "deployments"]),
      ],
      [g(["group1", "group2"], ["delete", "update"], ["builds", "deployments"])],
      true,
      [],
    ],
    [
      "a single rule covering multiple",
      [g(["group1", "group2"], ["delete", "update"], ["builds", "deployments"])],
      [g(["group1"], ["delete"], ["deployments"]), g(["group2"], ["update"], ["builds", "deployments"])],
      true,
      [],
    ],
    [
      "missing one verb and resource combination",
      [g(["v1"], ["delete", "update"], ["builds", "deployments"]), g(["v1"], ["delete"], ["pods"])],
      [g(["v1"], ["delete", "update"], ["builds", "deployments", "pods"])],
      false,
      [g(["v1"], ["update"], ["pods"])],
    ],
    ["API group star covering multiple", [g(["*"], ["get"], ["roles"])], [g(["group1", "group2"], ["get"], ["roles"])], true, []],
    [
      "enumeration not covering API group star",
      [g(["dummy-group"], ["get"], ["roles"])],
      [g(["*"], ["get"], ["roles"])],
      false,
      [g(["*"], ["get"], ["roles"])],
    ],
    ["API group star covering star", [g(["*"], ["get"], ["roles"])], [g(["*"], ["get"], ["roles"])], true, []],
    ["verb star covering multiple", [g(["v1"], ["*"], ["roles"])], [g(["v1"], ["watch", "list"], ["roles"])], true, []],
    [
      "enumeration not covering verb star",
      [g(["v1"], ["get", "list", "watch", "create", "update", "delete", "exec"], ["roles"])],
      [g(["v1"], ["*"], ["roles"])],
      false,
      [g(["v1"], ["*"], ["roles"])],
    ],
    ["verb star covering star", [g(["v1"], ["*"], ["roles"])], [g(["v1"], ["*"], ["roles"])], true, []],
    ["resource star covering multiple", [g(["v1"], ["get"], ["*"])], [g(["v1"], ["get"], ["resourcegroup:deployments"])], true, []],
    [
      "enumeration not covering resource star",
      [g(["v1"], ["get"], ["roles", "resourcegroup:deployments"])],
      [g(["v1"], ["get"], ["*"])],
      false,
      [g(["v1"], ["get"], ["*"])],
    ],
    ["resource star covering star", [g(["v1"], ["get"], ["*"])], [g(["v1"], ["get"], ["*"])], true, []],
    ["no resourceNames covering names", [g(["v1"], ["get"], ["pods"], [])], [g(["v1"], ["get"], ["pods"], ["foo", "bar"])], true, []],
    [
      "names not covering no resourceNames",
      [g(["v1"], ["get"], ["pods"], ["foo", "bar"])],
      [g(["v1"], ["get"], ["pods"], [])],
      false,
      [g(["v1"], ["get"], ["pods"])],
    ],
    ["names covering a subset of names", [g(["v1"], ["get"], ["pods"], ["foo", "bar"])], [g(["v1"], ["get"], ["pods"], ["foo"])], true, []],
    [
      "names not covering another name",
      [g(["v1"], ["get"], ["pods"], ["foo"])],
      [g(["v1"], ["get"], ["pods"], ["baz"])],
      false,
      [g(["v1"], ["get"], ["pods"], ["baz"])],
    ],
    ["non-resource URLs", [{ nonResourceURLs: ["/apis"], verbs: ["*"] }], [{ nonResourceURLs: ["/apis"], verbs: ["*"] }], true, []],
    ["non-resource URL star", [{ nonResourceURLs: ["*"], verbs: ["*"] }], [{ nonResourceURLs: ["/apis", "/apis/v1", "/"], verbs: ["*"] }], true, []],
    [
      "star after a prefix does not cover the prefix itself",
      [{ nonResourceURLs: ["/apis/*"], verbs: ["*"] }],
      [{ nonResourceURLs: ["/apis", "/apis/v1"], verbs: ["get"] }],
      false,
      [{ nonResourceURLs: ["/apis"], verbs: ["get"] }],
    ],
    ["star after a prefix", [{ nonResourceURLs: ["/apis/*"], verbs: ["*"] }], [{ nonResourceURLs: ["/apis/v1/foo", "/apis/v1"], verbs: ["get"] }], true, []],
    [
      "non-resource URLs with other fields",
      [{ apiGroups: ["v1"], verbs: ["get"], resources: ["builds"], nonResourceURLs: ["/apis"] }],
      [{ apiGroups: ["v1"], verbs: ["get"], resources: ["builds"], nonResourceURLs: ["/apis"] }],
      true,
      [],
    ],
    [
      "non-resource URLs with other fields, failing",
      [g(["v1"], ["get"], ["builds"])],
      [{ apiGroups: ["v1"], verbs: ["get"], resources: ["builds"], nonResourceURLs: ["/apis"] }],
      false,
      [{ nonResourceURLs: ["/apis"], verbs: ["get"] }],
    ],
  ];
  it.each(cases)("%s", (_n, owner, servant, covered, uncovered) => {
    const got = coversRules(owner, servant);
    expect(got.covered).toBe(covered);
    expect(got.uncovered).toEqual(uncovered);
  });

  it.each([
    ["*", "", true],
    ["*", "/", true],
    ["*", "/api", true],
    ["/*", "", false],
    ["/*", "/", true],
    ["/*", "/foo", true],
    ["/api", "/api", true],
    ["/apis", "/api", false],
    ["/api/v1", "/api", false],
    ["/api/v1", "/api/v1", true],
    ["/api/*", "/api/v1", true],
    ["/api/*", "/api", false],
    ["/api/*/*", "/api/v1", false],
    ["/*/v1/*", "/api/v1", false],
  ])("nonResourceURLCovers(%s, %s) is %s", (owner, path, want) => {
    expect(nonResourceURLCovers(owner, path)).toBe(want);
  });

  it("breaks a rule down to one group, resource, verb and name each", () => {
    expect(breakdownRule({ verbs: ["get", "list"], apiGroups: [""], resources: ["pods"], resourceNames: ["a"] })).toEqual([
      { apiGroups: [""], resources: ["pods"], verbs: ["get"], resourceNames: ["a"] },
      { apiGroups: [""], resources: ["pods"], verbs: ["list"], resourceNames: ["a"] },
    ]);
    expect(compactRuleString({ verbs: ["get", "list"], apiGroups: [""], resources: ["secrets"] })).toBe(
      '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}',
    );
  });
});

// ---------------------------------------------------------------------------
// Escalation prevention (policybased storages)
// ---------------------------------------------------------------------------

describe("escalation prevention", () => {
  const podReader: PolicyRule = { verbs: ["get", "list"], apiGroups: [""], resources: ["pods"] };
  const secretReader: PolicyRule = { verbs: ["get"], apiGroups: [""], resources: ["secrets"] };
  const rbac = new RbacAuthorizer({
    roles: [role("team-a", "pod-reader", podReader), role("team-a", "secret-reader", secretReader)],
    clusterRoles: [
      ...BOOTSTRAP_CLUSTER_ROLES,
      clusterRole("pod-reader", podReader),
      clusterRole("secret-reader", secretReader),
      clusterRole("escalator", { verbs: ["escalate"], apiGroups: [RBAC_GROUP], resources: ["roles"] }),
      clusterRole("binder-of-one", { verbs: ["bind"], apiGroups: [RBAC_GROUP], resources: ["clusterroles"], resourceNames: ["secret-reader"] }),
    ],
    roleBindings: [
      roleBinding("team-a", "Role", "pod-reader", "User:alice"),
      roleBinding("team-a", "ClusterRole", "edit", "User:editor"),
      roleBinding("team-a", "ClusterRole", "escalator", "User:esc"),
      roleBinding("team-a", "ClusterRole", "binder-of-one", "User:binder"),
    ],
    clusterRoleBindings: [clusterRoleBinding("pod-reader", "User:global-reader"), ...BOOTSTRAP_CLUSTER_ROLE_BINDINGS],
  });
  const alice = user("alice", "system:authenticated");

  it("a Role with only rules the user holds in that namespace may be written", () => {
    expect(
      rbac.checkRoleEscalation(alice, { kind: "Role", name: "r", namespace: "team-a", rules: [{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }] })
        .allowed,
    ).toBe(true);
  });
  it("a Role with a rule the user does not hold is refused, naming what is missing", () => {
    const d = rbac.checkRoleEscalation(alice, {
      kind: "Role",
      name: "r",
      namespace: "team-a",
      rules: [podReader, { verbs: ["get", "list"], apiGroups: [""], resources: ["secrets"] }],
    });
    expect(d).toEqual({
      allowed: false,
      reason:
        'user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}',
    });
  });
  it("rules held in one namespace do not let the user write a Role in another", () => {
    expect(rbac.checkRoleEscalation(alice, { kind: "Role", name: "r", namespace: "team-b", rules: [podReader] }).allowed).toBe(false);
  });
  it("a ClusterRole needs the rules cluster-wide: a RoleBinding's do not count", () => {
    expect(rbac.checkRoleEscalation(alice, { kind: "ClusterRole", name: "c", rules: [podReader] }).allowed).toBe(false);
    expect(rbac.checkRoleEscalation(user("global-reader"), { kind: "ClusterRole", name: "c", rules: [podReader] }).allowed).toBe(true);
  });
  it("the escalate verb on roles lets a user write a Role beyond their rules, in that namespace only", () => {
    const rules = [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }];
    expect(rbac.checkRoleEscalation(user("esc"), { kind: "Role", name: "r", namespace: "team-a", rules }).allowed).toBe(true);
    expect(rbac.checkRoleEscalation(user("esc"), { kind: "Role", name: "r", namespace: "team-b", rules }).allowed).toBe(false);
  });
  it("an aggregationRule needs cluster-admin's rules", () => {
    const d = rbac.checkRoleEscalation(user("global-reader"), {
      kind: "ClusterRole",
      name: "agg",
      rules: [],
      aggregationRule: { clusterRoleSelectors: [{ matchLabels: { x: "y" } }] },
    });
    expect(d).toEqual({ allowed: false, reason: "must have cluster-admin privileges to use the aggregationRule" });
    expect(
      rbac.checkRoleEscalation(user("global-reader"), { kind: "ClusterRole", name: "agg", rules: [], oldAggregationRule: { clusterRoleSelectors: [{}] } })
        .allowed,
    ).toBe(false);
    expect(
      rbac.checkRoleEscalation(user("root", "system:masters"), { kind: "ClusterRole", name: "agg", rules: [], aggregationRule: { clusterRoleSelectors: [{}] } })
        .allowed,
    ).toBe(true);
  });
  it("system:masters may write any role and any binding", () => {
    const root = user("root", "system:masters");
    expect(rbac.checkRoleEscalation(root, { kind: "ClusterRole", name: "c", rules: [{ verbs: ["*"], nonResourceURLs: ["*"] }] }).allowed).toBe(true);
    expect(rbac.checkBindingEscalation(root, { namespace: "", roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: "cluster-admin" } }).allowed).toBe(
      true,
    );
  });
  it("a RoleBinding to a role whose rules the user holds may be written", () => {
    expect(rbac.checkBindingEscalation(alice, { namespace: "team-a", roleRef: { apiGroup: RBAC_GROUP, kind: "Role", name: "pod-reader" } }).allowed).toBe(true);
    expect(
      rbac.checkBindingEscalation(alice, { namespace: "team-a", roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: "pod-reader" } }).allowed,
    ).toBe(true);
  });
  it("a RoleBinding to a role with rules the user lacks is refused", () => {
    expect(rbac.checkBindingEscalation(alice, { namespace: "team-a", roleRef: { apiGroup: RBAC_GROUP, kind: "Role", name: "secret-reader" } }).allowed).toBe(
      false,
    );
  });
  it("an editor of a namespace may bind view or edit there but not admin, nor edit elsewhere", () => {
    const editor = user("editor", "system:authenticated");
    const ref = (name: string) => ({ apiGroup: RBAC_GROUP, kind: "ClusterRole", name });
    expect(rbac.checkBindingEscalation(editor, { namespace: "team-a", roleRef: ref("view") }).allowed).toBe(true);
    expect(rbac.checkBindingEscalation(editor, { namespace: "team-a", roleRef: ref("edit") }).allowed).toBe(true);
    expect(rbac.checkBindingEscalation(editor, { namespace: "team-a", roleRef: ref("admin") }).allowed).toBe(false);
    expect(rbac.checkBindingEscalation(editor, { namespace: "team-b", roleRef: ref("edit") }).allowed).toBe(false);
    expect(rbac.checkBindingEscalation(editor, { namespace: "", roleRef: ref("edit") }).allowed).toBe(false);
  });
  it("the bind verb honours resourceNames and the binding's namespace", () => {
    const binder = user("binder");
    const ref = (name: string) => ({ apiGroup: RBAC_GROUP, kind: "ClusterRole", name });
    expect(rbac.checkBindingEscalation(binder, { namespace: "team-a", roleRef: ref("secret-reader") }).allowed).toBe(true);
    expect(rbac.checkBindingEscalation(binder, { namespace: "team-a", roleRef: ref("pod-reader") }).allowed).toBe(false);
    expect(rbac.checkBindingEscalation(binder, { namespace: "team-b", roleRef: ref("secret-reader") }).allowed).toBe(false);
  });
  it("a binding to a role that does not exist is refused with the lookup's error", () => {
    expect(rbac.checkBindingEscalation(alice, { namespace: "team-a", roleRef: { apiGroup: RBAC_GROUP, kind: "Role", name: "nope" } })).toEqual({
      allowed: false,
      reason: `role.${RBAC_GROUP} "nope" not found`,
    });
  });
});

// ---------------------------------------------------------------------------
// Aggregation (clusterroleaggregation controller)
// ---------------------------------------------------------------------------

describe("aggregateClusterRoles", () => {
  const r1: PolicyRule = { verbs: ["get"], apiGroups: [""], resources: ["a"] };
  const r2: PolicyRule = { verbs: ["get"], apiGroups: [""], resources: ["b"] };
  const r3: PolicyRule = { verbs: ["list"], apiGroups: [""], resources: ["c"] };
  const labelled = (name: string, labels: Record<string, string>, ...rules: PolicyRule[]): ClusterRole => ({ metadata: { name, labels }, rules });
  const aggregator = (name: string, selectors: ClusterRole["aggregationRule"], labels: Record<string, string> = {}, ...stored: PolicyRule[]): ClusterRole => ({
    metadata: { name, labels },
    aggregationRule: selectors,
    rules: stored,
  });

  it("unions the rules of the selected roles, ordered by name, each rule once, its stored rules replaced", () => {
    const got = aggregateClusterRoles([
      aggregator("agg", { clusterRoleSelectors: [{ matchLabels: { team: "a" } }] }, {}, r3),
      labelled("z-role", { team: "a" }, r2, r1),
      labelled("a-role", { team: "a" }, r1),
      labelled("other", { team: "b" }, r3),
    ]);
    expect(got.rules.get("agg")).toEqual([r1, r2]);
    expect(got.errors).toEqual([]);
  });
  it("any selector may match (matchExpressions too); a role never aggregates itself", () => {
    const got = aggregateClusterRoles([
      aggregator("agg", { clusterRoleSelectors: [{ matchLabels: { x: "1" } }, { matchExpressions: [{ key: "y", operator: "Exists" }] }] }, { x: "1" }, r3),
      labelled("one", { x: "1" }, r1),
      labelled("two", { y: "anything" }, r2),
    ]);
    expect(got.rules.get("agg")).toEqual([r1, r2]);
  });
  it("an aggregationRule without selectors holds no rules", () => {
    expect(aggregateClusterRoles([aggregator("agg", { clusterRoleSelectors: [] }, {}, r1)]).rules.get("agg")).toEqual([]);
  });
  it("nested: admin holds edit holds view, through the standard labels", () => {
    const got = aggregateClusterRoles([
      aggregator("admin", { clusterRoleSelectors: [{ matchLabels: { [AGGREGATE_TO_ADMIN]: "true" } }] }),
      aggregator("edit", { clusterRoleSelectors: [{ matchLabels: { [AGGREGATE_TO_EDIT]: "true" } }] }, { [AGGREGATE_TO_ADMIN]: "true" }),
      aggregator("view", { clusterRoleSelectors: [{ matchLabels: { [AGGREGATE_TO_VIEW]: "true" } }] }, { [AGGREGATE_TO_EDIT]: "true" }),
      labelled("to-view", { [AGGREGATE_TO_VIEW]: "true" }, r1),
      labelled("to-edit", { [AGGREGATE_TO_EDIT]: "true" }, r2),
      labelled("to-admin", { [AGGREGATE_TO_ADMIN]: "true" }, r3),
    ]);
    expect(got.rules.get("view")).toEqual([r1]);
    expect(got.rules.get("edit")).toEqual([r2, r1]);
    // Sources in name order: "edit" before "to-admin".
    expect(got.rules.get("admin")).toEqual([r2, r1, r3]);
  });
  it("a cycle settles on the union of what its roles hold", () => {
    const got = aggregateClusterRoles([
      aggregator("a", { clusterRoleSelectors: [{ matchLabels: { cyc: "b" } }] }, { cyc: "a" }, r1),
      aggregator("b", { clusterRoleSelectors: [{ matchLabels: { cyc: "a" } }, { matchLabels: { leaf: "1" } }] }, { cyc: "b" }),
      labelled("leaf", { leaf: "1" }, r2),
    ]);
    expect(got.errors).toEqual([]);
    expect(new Set(got.rules.get("a"))).toEqual(new Set(got.rules.get("b")));
    expect(got.rules.get("b")).toContainEqual(r2);
  });
  it("a selector that does not parse keeps the stored rules and is reported", () => {
    const got = aggregateClusterRoles([aggregator("bad", { clusterRoleSelectors: [{ matchLabels: { "-bad-": "x" } }] }, {}, r1)]);
    expect(got.rules.get("bad")).toEqual([r1]);
    expect(got.errors).toHaveLength(1);
  });
  it("a binding to an aggregated role grants the aggregated rules, and picks up a newly labelled role", () => {
    const base = [aggregator("agg", { clusterRoleSelectors: [{ matchLabels: { add: "yes" } }] }), labelled("first", { add: "yes" }, r1)];
    const bindings = { clusterRoleBindings: [clusterRoleBinding("agg", "User:u")] };
    const before = new RbacAuthorizer({ clusterRoles: base, ...bindings });
    expect(before.authorize(user("u"), res("get", "a")).allowed).toBe(true);
    expect(before.authorize(user("u"), res("get", "b")).allowed).toBe(false);
    const after = new RbacAuthorizer({ clusterRoles: [...base, labelled("second", { add: "yes" }, r2)], ...bindings });
    expect(after.authorize(user("u"), res("get", "b")).allowed).toBe(true);
  });
});

// ---------------------------------------------------------------------------
// The built-in roles (bootstrap policy) over the hub's kinds
// ---------------------------------------------------------------------------

describe("built-in ClusterRoles", () => {
  const rbac = new RbacAuthorizer({
    clusterRoles: BOOTSTRAP_CLUSTER_ROLES,
    clusterRoleBindings: BOOTSTRAP_CLUSTER_ROLE_BINDINGS,
    roleBindings: ["view", "edit", "admin"].map((r) => roleBinding("team-a", "ClusterRole", r, `User:${r}-user`)),
  });
  const as = (who: string) => user(who, "system:authenticated");
  const READ = ["get", "list", "watch"];
  const WRITE = ["create", "update", "patch", "delete", "deletecollection"];

  it("are valid objects of their kinds, and aggregate without errors", () => {
    for (const cr of BOOTSTRAP_CLUSTER_ROLES) expect(ClusterRoleSchema.safeParse(cr).success).toBe(true);
    for (const b of BOOTSTRAP_CLUSTER_ROLE_BINDINGS) expect(RoleBindingSchema.safeParse(b).success).toBe(true);
    expect(rbac.buildErrors).toEqual([]);
  });

  it("cluster-admin covers every kind, subresource and path; system:masters holds it", () => {
    const root = user("root", "system:masters");
    const rules = rbac.rulesFor(root, "").rules;
    for (const k of KINDS) {
      for (const verb of [...READ, ...WRITE]) {
        expect(coversRules(rules, [{ verbs: [verb], apiGroups: [k.group], resources: [k.plural, `${k.plural}/status`] }]).covered).toBe(true);
      }
    }
    expect(coversRules(rules, [{ verbs: ["get"], nonResourceURLs: ["/docs", "/openapi/v3"] }]).covered).toBe(true);
  });

  // Roles and RoleBindings are admin's only (as Kubernetes' aggregate-to-admin): tested below.
  for (const k of KINDS.filter((x) => x.namespaced && x.group !== RBAC_GROUP)) {
    const secret = k.group === "" && k.plural === "secrets";
    // A namespace's quotas and limits are the cluster admin's to set (Kubernetes' edit and admin only read them).
    const readOnly = k.systemOwned || (k.group === "" && (k.plural === "resourcequotas" || k.plural === "limitranges"));
    it(`${k.kind}: view ${secret ? "may not read it" : "reads it"}, edit ${readOnly ? "reads it" : "writes it"}, admin as edit, in team-a only`, () => {
      const attrs = (verb: string, sub?: string, namespace = "team-a") => res(verb, k.plural, namespace, { group: k.group, sub, name: "x" });
      for (const verb of READ) {
        expect(rbac.authorize(as("view-user"), attrs(verb)).allowed).toBe(!secret);
        expect(rbac.authorize(as("edit-user"), attrs(verb)).allowed).toBe(true);
        expect(rbac.authorize(as("admin-user"), attrs(verb)).allowed).toBe(true);
        if (k.hasStatus) expect(rbac.authorize(as("view-user"), attrs(verb, "status")).allowed).toBe(true);
        expect(rbac.authorize(as("admin-user"), attrs(verb, undefined, "team-b")).allowed).toBe(false);
      }
      for (const verb of WRITE) {
        expect(rbac.authorize(as("view-user"), attrs(verb)).allowed).toBe(false);
        expect(rbac.authorize(as("edit-user"), attrs(verb)).allowed).toBe(!readOnly);
        expect(rbac.authorize(as("admin-user"), attrs(verb)).allowed).toBe(!readOnly);
        // Status belongs to the system (agents, controllers), as Kubernetes' edit never writes /status.
        if (k.hasStatus) expect(rbac.authorize(as("admin-user"), attrs(verb, "status")).allowed).toBe(false);
      }
    });
  }

  it("cluster-scoped kinds are cluster-admin's, even to a cluster-wide view binding (as Nodes are)", () => {
    const wide = new RbacAuthorizer({ clusterRoles: BOOTSTRAP_CLUSTER_ROLES, clusterRoleBindings: [clusterRoleBinding("view", "User:v")] });
    // Namespaces aside: view reads them, as Kubernetes' view role does.
    for (const k of KINDS.filter((x) => !x.namespaced && !(x.group === "" && x.plural === "namespaces")))
      expect(wide.authorize(user("v"), res("get", k.plural, "", { group: k.group })).allowed).toBe(false);
    expect(wide.authorize(user("v"), res("get", "namespaces", "", { name: "team-a" })).allowed).toBe(true);
    expect(wide.authorize(user("v"), res("list", "namespaces")).allowed).toBe(true);
    expect(wide.authorize(user("v"), res("list", "placements", "", { group: "cluster.open-cluster-management.io" })).allowed).toBe(true);
  });

  it("admin adds Roles and RoleBindings to edit; edit adds ServiceAccount tokens and impersonation", () => {
    const rb = (verb: string) => res(verb, "rolebindings", "team-a", { group: RBAC_GROUP });
    expect(rbac.authorize(as("admin-user"), rb("create")).allowed).toBe(true);
    expect(rbac.authorize(as("edit-user"), rb("create")).allowed).toBe(false);
    expect(rbac.authorize(as("edit-user"), res("create", "serviceaccounts", "team-a", { sub: "token", name: "ci" })).allowed).toBe(true);
    expect(rbac.authorize(as("view-user"), res("create", "serviceaccounts", "team-a", { sub: "token", name: "ci" })).allowed).toBe(false);
    expect(rbac.authorize(as("edit-user"), res("impersonate", "serviceaccounts", "team-a", { name: "ci" })).allowed).toBe(true);
  });

  it("every authenticated user reads discovery, OpenAPI and /docs and reviews themselves; nothing else", () => {
    const bob = as("bob");
    for (const path of [
      "/api",
      "/api/v1",
      "/apis",
      "/apis/cluster.open-cluster-management.io/v1",
      "/openapi/v2",
      "/openapi/v3/apis/work.open-cluster-management.io/v1",
      "/version",
      "/healthz",
      "/docs",
    ]) {
      expect(rbac.authorize(bob, { verb: "get", path }).allowed).toBe(true);
    }
    expect(rbac.authorize(bob, { verb: "post", path: "/docs" }).allowed).toBe(false);
    expect(rbac.authorize(bob, res("create", "selfsubjectaccessreviews", "", { group: "authorization.k8s.io" })).allowed).toBe(true);
    expect(rbac.authorize(bob, res("create", "selfsubjectreviews", "", { group: "authentication.k8s.io" })).allowed).toBe(true);
    expect(rbac.authorize(bob, res("create", "subjectaccessreviews", "", { group: "authorization.k8s.io" })).allowed).toBe(false);
    expect(rbac.authorize(bob, res("list", "placements", "team-a", { group: "cluster.open-cluster-management.io" })).allowed).toBe(false);
    expect(rbac.authorize(user("anon", "system:unauthenticated"), { verb: "get", path: "/version" }).allowed).toBe(true);
    expect(rbac.authorize(user("anon", "system:unauthenticated"), { verb: "get", path: "/apis" }).allowed).toBe(false);
  });
});
