/**
 * Issue 39's add-on holes, inside workerd with real Durable Objects and D1:
 * - an add-on's hub token cannot make itself a stronger credential: its ManagedClusterAddOn's
 *   status is not its to write, `status.configReferences` stays the manager's whoever writes the
 *   status, and the token binds only the hub permissions of the template the manager resolved;
 *   the bindings follow that template when it changes (stale ones go, in other namespaces too,
 *   leaving another cluster's subject) and go with the add-on;
 * - a user with `edit` in a namespace cannot read another team's AddOnDeploymentConfig or a
 *   template's manifests through a ManagedClusterAddOn: the manager renders nothing outside a
 *   ManagedCluster's namespace, and a config reference its writer could not follow is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces, type AgentKeys, joined } from "./helpers.ts";
import { callAs, serveIssuer } from "./oidc-users.ts";
import { waitFor } from "../wait.ts";

const A = "addon.open-cluster-management.io";
const ADDON_API = `/apis/${A}/v1alpha1`;
const MCAS = (ns: string) => `${ADDON_API}/namespaces/${ns}/managedclusteraddons`;
const ADCS = (ns: string) => `${ADDON_API}/namespaces/${ns}/addondeploymentconfigs`;
const RBAC = "/apis/rbac.authorization.k8s.io/v1";
const BINDING = (ns: string, name: string) => `${RBAC}/namespaces/${ns}/rolebindings/${name}`;
const WORK = (ns: string, name: string) => `/apis/work.open-cluster-management.io/v1/namespaces/${ns}/manifestworks/${name}`;
const merge = "application/merge-patch+json";

let undo: () => void;
beforeAll(async () => {
  undo = await serveIssuer();
});
afterAll(() => undo());

async function askToken(cluster: string, keys: AgentKeys, addon: string): Promise<string> {
  const r = await call("POST", `/agent/v1/clusters/${cluster}/addons/${addon}/token`, {}, { token: await keys.sign(cluster) });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.token as string;
}

async function create(path: string, body: unknown): Promise<void> {
  const r = await call("POST", path, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}

/** An AddOnTemplate `name` with a kubeClient registration of `hubPermissions`. */
async function template(name: string, addon: string, hubPermissions: unknown[], manifests: unknown[] = []): Promise<void> {
  await create(`${ADDON_API}/addontemplates`, {
    apiVersion: `${A}/v1alpha1`,
    kind: "AddOnTemplate",
    metadata: { name },
    spec: {
      addonName: addon,
      agentSpec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" } }, ...manifests] } },
      registration: [{ type: "KubeClient", kubeClient: { hubPermissions } }],
    },
  });
}

async function cma(name: string, defaultTemplate: string): Promise<void> {
  await create(`${ADDON_API}/clustermanagementaddons`, {
    apiVersion: `${A}/v1alpha1`,
    kind: "ClusterManagementAddOn",
    metadata: { name },
    spec: { supportedConfigs: [{ group: A, resource: "addontemplates", defaultConfig: { name: defaultTemplate } }] },
  });
}

const mca = (name: string, configs?: unknown[]) => ({
  apiVersion: `${A}/v1alpha1`,
  kind: "ManagedClusterAddOn",
  metadata: { name },
  spec: configs ? { configs } : {},
});

/** Binds ClusterRole `role` to `oidc:<user>` in `ns`. */
async function bindClusterRole(user: string, ns: string, role: string): Promise<void> {
  await create(`${RBAC}/namespaces/${ns}/rolebindings`, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: `${user}-${role}` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: `oidc:${user}` }],
  });
}

const singleNamespace = (namespace: string, clusterRole: string) => ({
  type: "SingleNamespace",
  singleNamespace: { namespace, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRole } },
});
const currentCluster = (clusterRole: string) => ({ type: "CurrentCluster", currentCluster: { clusterRoleName: clusterRole } });
const subjectsOf = async (ns: string, name: string) => ((await call("GET", BINDING(ns, name))).body.subjects ?? []).map((s: { name: string }) => s.name);

describe("an add-on's hub token cannot escalate itself (issue 39, 1)", () => {
  it("the token cannot write its status; configReferences stay the manager's; a new token binds only the resolved template's permissions", async () => {
    const keys = await joined("esc1", { namespace: true });
    await createNamespaces("esc-team-b");
    await template("esc-own", "esc", [currentCluster("view")]);
    await template("esc-victim", "other", [currentCluster("admin"), singleNamespace("esc-team-b", "admin")]);
    await cma("esc", "esc-own");
    await create(MCAS("esc1"), mca("esc"));
    const token = await askToken("esc1", keys, "esc");
    const as = { token };
    const own = (await call("GET", `${MCAS("esc1")}/esc`)).body.status.configReferences;
    expect(own).toEqual([
      expect.objectContaining({ resource: "addontemplates", name: "esc-own", desiredConfig: expect.objectContaining({ name: "esc-own" }) }),
    ]);

    // The attack: the add-on names another template in its status and asks for a token again.
    const named = {
      status: {
        configReferences: [{ group: A, resource: "addontemplates", name: "esc-victim", desiredConfig: { name: "esc-victim", specHash: "x" } }],
      },
    };
    const patched = await call("PATCH", `${MCAS("esc1")}/esc/status`, named, { ...as, contentType: merge });
    expect(patched.status).toBe(403);
    // Whoever else may write the status (a user granted it) cannot move configReferences either.
    await create(`${RBAC}/namespaces/esc1/roles`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "status-writer" },
      rules: [{ apiGroups: [A], resources: ["managedclusteraddons/status"], verbs: ["get", "patch", "update"] }],
    });
    await create(`${RBAC}/namespaces/esc1/rolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "status-writer" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "status-writer" },
      subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "oidc:mallory" }],
    });
    const byUser = await callAs("mallory", "PATCH", `${MCAS("esc1")}/esc/status`, named, merge);
    expect(byUser.status, JSON.stringify(byUser.body)).toBe(200);
    expect(byUser.body.status.configReferences).toEqual(own);
    expect((await call("GET", `${MCAS("esc1")}/esc`)).body.status.configReferences).toEqual(own);

    const again = await askToken("esc1", keys, "esc");
    expect((await call("GET", BINDING("esc-team-b", "open-cluster-management:esc:clusterrole:agent"))).status).toBe(404);
    expect((await call("GET", BINDING("esc1", "open-cluster-management:esc:clusterrole:agent"))).body.roleRef.name).toBe("view");
    expect((await call("GET", "/api/v1/namespaces/esc-team-b/secrets", undefined, { token: again })).status).toBe(403);
    expect((await call("GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/esc1/rolebindings", undefined, { token: again })).status).toBe(403);
  });

  it("the bindings follow the resolved template: stale ones go (another cluster's subject stays), and all go with the add-on", async () => {
    const k1 = await joined("mv1", { namespace: true });
    const k2 = await joined("mv2", { namespace: true });
    await createNamespaces("mv-team-b", "mv-team-c");
    await template("mv-a", "mv", [currentCluster("view"), singleNamespace("mv-team-b", "view")]);
    await template("mv-b", "mv", [singleNamespace("mv-team-c", "view")]);
    await cma("mv", "mv-a");
    await create(MCAS("mv1"), mca("mv"));
    await create(MCAS("mv2"), mca("mv"));
    await askToken("mv1", k1, "mv");
    await askToken("mv2", k2, "mv");
    const shared = "open-cluster-management:mv:clusterrole:agent";
    // One binding in the other namespace, both clusters' add-ons its subjects.
    expect(await subjectsOf("mv-team-b", shared)).toEqual(["system:serviceaccount:mv1:mv-agent", "system:serviceaccount:mv2:mv-agent"]);

    // The hub moves mv1's add-on to template mv-b (its spec.configs): its grants from mv-a go at once.
    const moved = await call(
      "PATCH",
      `${MCAS("mv1")}/mv`,
      { spec: { configs: [{ group: A, resource: "addontemplates", name: "mv-b" }] } },
      { contentType: merge },
    );
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(await subjectsOf("mv-team-b", shared)).toEqual(["system:serviceaccount:mv2:mv-agent"]);
    expect((await call("GET", BINDING("mv1", shared))).status).toBe(404);
    expect(await subjectsOf("mv-team-c", shared)).toEqual(["system:serviceaccount:mv1:mv-agent"]);
    expect((await call("GET", BINDING("mv2", shared))).body.roleRef.name).toBe("view");

    // The add-ons removed: their bindings in other namespaces go too.
    expect((await call("DELETE", `${MCAS("mv1")}/mv`)).status).toBe(200);
    expect((await call("DELETE", `${MCAS("mv2")}/mv`)).status).toBe(200);
    await waitFor(
      "the bindings in other namespaces gone",
      async () => (await call("GET", BINDING("mv-team-b", shared))).status === 404 && (await call("GET", BINDING("mv-team-c", shared))).status === 404,
      10_000,
      50,
    );
  });
});

describe("no cross-namespace read through a ManagedClusterAddOn (issue 39, 2)", () => {
  it("a namespace editor cannot read another team's AddOnDeploymentConfig or a template's Secret through one", async () => {
    await createNamespaces("leak-team-x", "leak-team-y");
    await bindClusterRole("eve", "leak-team-x", "edit");
    await create(ADCS("leak-team-y"), {
      apiVersion: `${A}/v1alpha1`,
      kind: "AddOnDeploymentConfig",
      metadata: { name: "secret-config" },
      spec: { customizedVariables: [{ name: "TOKEN", value: "team-y-secret" }], proxyConfig: { httpsProxy: "http://y:pw@proxy.y" } },
    });
    const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "leak-creds", namespace: "default" }, stringData: { password: "hunter2" } };
    await template("leak-tpl", "leak", [], [secret]);
    await cma("leak", "leak-tpl");
    // Eve cannot read them directly.
    expect((await callAs("eve", "GET", `${ADCS("leak-team-y")}/secret-config`)).status).toBe(403);
    expect((await callAs("eve", "GET", `${ADDON_API}/addontemplates/leak-tpl`)).status).toBe(403);

    // Naming another team's config, or a template she cannot read, is refused.
    const adc = await callAs(
      "eve",
      "POST",
      MCAS("leak-team-x"),
      mca("leak", [{ group: A, resource: "addondeploymentconfigs", namespace: "leak-team-y", name: "secret-config" }]),
    );
    expect(adc.status).toBe(403);
    expect(adc.body.message).toBe(
      `managedclusteraddons.${A} "leak" is forbidden: user "oidc:eve" cannot get resource "addondeploymentconfigs" in API group "${A}" in the namespace "leak-team-y" (named in spec.configs)`,
    );
    expect((await callAs("eve", "POST", MCAS("leak-team-x"), mca("leak", [{ group: A, resource: "addontemplates", name: "leak-tpl" }]))).status).toBe(403);

    // Her own namespace is no cluster's: the manager renders nothing there (not the default template either).
    const plain = await callAs("eve", "POST", MCAS("leak-team-x"), mca("leak"));
    expect(plain.status, JSON.stringify(plain.body)).toBe(201);
    expect((await callAs("eve", "GET", WORK("leak-team-x", "addon-leak-deploy-0"))).status).toBe(404);
    expect((await call("GET", WORK("leak-team-x", "addon-leak-deploy-0"))).status).toBe(404);
    expect((await callAs("eve", "GET", `${MCAS("leak-team-x")}/leak`)).body.status?.configReferences).toBeUndefined();
  });

  it("in a cluster's namespace, a config reference needs what following it would: reading it, and binding the template's hub permissions", async () => {
    await joined("leak-c1", { namespace: true });
    await createNamespaces("leak-team-z");
    await bindClusterRole("ed", "leak-c1", "edit");
    await create(`${RBAC}/clusterroles`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "addontemplate-reader" },
      rules: [{ apiGroups: [A], resources: ["addontemplates"], verbs: ["get"] }],
    });
    await create(`${RBAC}/clusterrolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "ed-addontemplate-reader" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "addontemplate-reader" },
      subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "oidc:ed" }],
    });
    await create(ADCS("leak-team-z"), { apiVersion: `${A}/v1alpha1`, kind: "AddOnDeploymentConfig", metadata: { name: "z" }, spec: {} });
    await template("lc-view", "lc", [currentCluster("view")]);
    await template("lc-admin", "lc", [singleNamespace("leak-team-z", "admin")]);
    await cma("lc", "lc-view");
    const adc = await callAs("ed", "POST", MCAS("leak-c1"), mca("lc", [{ group: A, resource: "addondeploymentconfigs", namespace: "leak-team-z", name: "z" }]));
    expect(adc.status).toBe(403);
    const admin = await callAs("ed", "POST", MCAS("leak-c1"), mca("lc", [{ group: A, resource: "addontemplates", name: "lc-admin" }]));
    expect(admin.status).toBe(403);
    expect(admin.body.message).toContain(`cannot grant the AddOnTemplate "lc-admin"'s hub permission ClusterRole "admin" in the namespace "leak-team-z"`);
    const view = await callAs("ed", "POST", MCAS("leak-c1"), mca("lc", [{ group: A, resource: "addontemplates", name: "lc-view" }]));
    expect(view.status, JSON.stringify(view.body)).toBe(201);
    // An unchanged reference is not checked again (her label change passes); a new one is.
    expect((await callAs("ed", "PATCH", `${MCAS("leak-c1")}/lc`, { metadata: { labels: { a: "b" } } }, merge)).status).toBe(200);
    expect(
      (await callAs("ed", "PATCH", `${MCAS("leak-c1")}/lc`, { spec: { configs: [{ group: A, resource: "addontemplates", name: "lc-admin" }] } }, merge)).status,
    ).toBe(403);
    await waitFor("the work rendered", async () => (await call("GET", WORK("leak-c1", "addon-lc-deploy-0"))).status === 200, 10_000, 50);
  });
});
