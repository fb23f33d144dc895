/**
 * ManifestWork executors on the member cluster: the simulated cluster's authentication,
 * impersonation and RBAC (agent/sim/auth.ts, the hub's RBAC evaluator) answered as kube-apiserver
 * answers, and the work controller applying, reading and deleting an executor work's manifests as
 * its ServiceAccount, with the traceability labels on what it applies (agent/src/work). Real HTTP
 * against the simulated cluster, no mocks.
 */
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { startSimulatedCluster } from "../../agent/sim/index.ts";
import { KubeConfig, statusCodeOf } from "../../agent/src/kube.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { createLogger } from "../../agent/src/log.ts";
import { WorkController } from "../../agent/src/work/controller.ts";
import { DynamicClient } from "../../agent/src/work/dynamic.ts";
import type { ManifestWork, Obj } from "../../agent/src/work/types.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

const RBAC = { group: "rbac.authorization.k8s.io", version: "v1" };
const CM = { group: "", version: "v1", resource: "configmaps" };
const SECRET = { group: "", version: "v1", resource: "secrets" };
const NS = { group: "", version: "v1", resource: "namespaces" };
const AGENT_TOKEN = "agent-token";
const AGENT_USER = "system:serviceaccount:flotilla-agent:flotilla-agent";

/** A simulated cluster with a token user (the agent's ServiceAccount), the admin's client and the agent's. */
async function sim() {
  const cluster = await startSimulatedCluster({
    users: { [AGENT_TOKEN]: { name: AGENT_USER, groups: ["system:serviceaccounts", "system:serviceaccounts:flotilla-agent"] } },
  });
  cleanups.push(() => cluster.close());
  const adminKc = kubeConfigFromYaml(cluster.kubeconfigYaml);
  const agentKc = new KubeConfig({ server: cluster.url, insecureSkipTlsVerify: true }, { token: () => AGENT_TOKEN });
  cleanups.push(() => {
    adminKc.close();
    agentKc.close();
  });
  const admin = new DynamicClient(adminKc);
  for (const ns of ["apps", "other", "flotilla-agent"]) await admin.create(NS, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }, "test");
  return { cluster, admin, agentKc, agent: new DynamicClient(agentKc) };
}

async function role(admin: DynamicClient, kind: "Role" | "ClusterRole", name: string, rules: unknown[], namespace = ""): Promise<void> {
  await admin.create(
    { ...RBAC, resource: kind === "Role" ? "roles" : "clusterroles" },
    namespace,
    { apiVersion: "rbac.authorization.k8s.io/v1", kind, metadata: { name }, rules },
    "test",
  );
}

async function bind(
  admin: DynamicClient,
  kind: "RoleBinding" | "ClusterRoleBinding",
  name: string,
  roleRef: { kind: string; name: string },
  subjects: unknown[],
  namespace = "",
): Promise<void> {
  const body = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind,
    metadata: { name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", ...roleRef },
    subjects,
  };
  await admin.create({ ...RBAC, resource: kind === "RoleBinding" ? "rolebindings" : "clusterrolebindings" }, namespace, body, "test");
}

/** The error a promise rejects with (fails the test when it resolves). */
async function refusal(p: Promise<unknown>): Promise<{ code: number | undefined; body: Obj }> {
  try {
    await p;
  } catch (e) {
    return { code: statusCodeOf(e), body: (e as { body: Obj }).body };
  }
  throw new Error("expected a refusal");
}

const configMap = (name: string, namespace: string): Obj => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace }, data: { k: "v" } });

/** Lets the agent impersonate ServiceAccounts and keep its records, as the install manifests grant. */
async function grantAgent(admin: DynamicClient): Promise<void> {
  await role(admin, "ClusterRole", "agent", [
    { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["impersonate"] },
    { apiGroups: ["*"], resources: ["*"], verbs: ["*"] },
  ]);
  await bind(admin, "ClusterRoleBinding", "agent", { kind: "ClusterRole", name: "agent" }, [
    { kind: "ServiceAccount", name: "flotilla-agent", namespace: "flotilla-agent" },
  ]);
}

describe("simulated cluster: authentication, impersonation and RBAC as kube-apiserver", () => {
  it("a token user is authorized by the stored RBAC; an unknown token is 401", async () => {
    const { admin, agent, cluster } = await sim();
    const denied = await refusal(agent.create(CM, "apps", configMap("a", "apps"), "test"));
    expect(denied.code).toBe(403);
    expect(denied.body).toMatchObject({
      kind: "Status",
      reason: "Forbidden",
      message: `configmaps is forbidden: User "${AGENT_USER}" cannot create resource "configmaps" in API group "" in the namespace "apps"`,
      details: { kind: "configmaps" },
    });
    await role(admin, "Role", "cm", [{ apiGroups: [""], resources: ["configmaps"], verbs: ["create", "get"] }], "apps");
    await bind(
      admin,
      "RoleBinding",
      "cm",
      { kind: "Role", name: "cm" },
      [{ kind: "ServiceAccount", name: "flotilla-agent", namespace: "flotilla-agent" }],
      "apps",
    );
    await agent.create(CM, "apps", configMap("a", "apps"), "test");
    expect((await agent.get({ ...CM, namespace: "apps", name: "a" })).data).toEqual({ k: "v" });
    // Bound in apps only.
    expect((await refusal(agent.create(CM, "other", configMap("a", "other"), "test"))).code).toBe(403);
    // Discovery is every authenticated user's (system:discovery).
    expect(Array.isArray((await agent.request("GET", "/api")).versions)).toBe(true);
    const stranger = new KubeConfig({ server: cluster.url, insecureSkipTlsVerify: true }, { token: () => "nope" });
    cleanups.push(() => stranger.close());
    expect((await refusal(new DynamicClient(stranger).get({ ...CM, namespace: "apps", name: "a" }))).code).toBe(401);
  });

  it("impersonating a ServiceAccount needs impersonate on it; the request then acts as the account and its groups", async () => {
    const { admin, agent } = await sim();
    const asDeployer = agent.as("system:serviceaccount:apps:deployer");
    const refused = await refusal(asDeployer.get({ ...CM, namespace: "apps", name: "x" }));
    expect(refused.code).toBe(403);
    expect(refused.body.message).toBe(
      `serviceaccounts "deployer" is forbidden: User "${AGENT_USER}" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "apps"`,
    );
    await role(admin, "ClusterRole", "impersonate-sa", [{ apiGroups: [""], resources: ["serviceaccounts"], verbs: ["impersonate"] }]);
    await bind(admin, "ClusterRoleBinding", "impersonate-sa", { kind: "ClusterRole", name: "impersonate-sa" }, [
      { kind: "ServiceAccount", name: "flotilla-agent", namespace: "flotilla-agent" },
    ]);
    // Allowed to impersonate; the account itself holds nothing yet.
    const denied = await refusal(asDeployer.create(CM, "apps", configMap("x", "apps"), "test"));
    expect(denied.body.message).toBe(
      'configmaps is forbidden: User "system:serviceaccount:apps:deployer" cannot create resource "configmaps" in API group "" in the namespace "apps"',
    );
    // A grant to the group of the account's namespace applies: kube-apiserver adds the groups.
    await role(admin, "Role", "cm-writer", [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "create", "patch"] }], "apps");
    await bind(admin, "RoleBinding", "cm-writer", { kind: "Role", name: "cm-writer" }, [{ kind: "Group", name: "system:serviceaccounts:apps" }], "apps");
    await asDeployer.create(CM, "apps", configMap("x", "apps"), "test");
    // SelfSubjectReview and SelfSubjectAccessReview answer for the impersonated user.
    const me = await asDeployer.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
      body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    });
    expect(me.status).toEqual({
      userInfo: { username: "system:serviceaccount:apps:deployer", groups: ["system:serviceaccounts", "system:serviceaccounts:apps", "system:authenticated"] },
    });
    const can = (verb: string) =>
      asDeployer.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SelfSubjectAccessReview",
          spec: { resourceAttributes: { verb, resource: "configmaps", namespace: "apps" } },
        },
      });
    expect((await can("create")).status).toEqual({ allowed: true });
    expect((await can("delete")).status).toEqual({ allowed: false });
    // Impersonating a group needs impersonate on groups, which the agent does not hold.
    const asMasters = await refusal(
      agent.kc.json("GET", "/api/v1/namespaces", { headers: { "Impersonate-User": "mallory", "Impersonate-Group": ["system:masters"] } }),
    );
    expect(asMasters.body.message).toBe(
      `users "mallory" is forbidden: User "${AGENT_USER}" cannot impersonate resource "users" in API group "" at the cluster scope`,
    );
  });

  it("a server-side apply that creates the object also needs create", async () => {
    const { admin, agent } = await sim();
    await role(admin, "Role", "patch-only", [{ apiGroups: [""], resources: ["configmaps"], verbs: ["patch"] }], "apps");
    await bind(admin, "RoleBinding", "patch-only", { kind: "Role", name: "patch-only" }, [{ kind: "User", name: AGENT_USER }], "apps");
    const ref = { ...CM, namespace: "apps", name: "ssa" };
    const denied = await refusal(agent.apply(ref, configMap("ssa", "apps"), "test", true));
    expect(denied.body.message).toBe(
      `configmaps "ssa" is forbidden: User "${AGENT_USER}" cannot create resource "configmaps" in API group "" in the namespace "apps"`,
    );
    await admin.apply(ref, configMap("ssa", "apps"), "admin", true);
    await agent.apply(ref, { ...configMap("ssa", "apps"), data: { k: "w" } }, "test", true);
    expect((await admin.get(ref)).data).toEqual({ k: "w" });
  });
});

function work(name: string, manifests: unknown[], spec: Partial<ManifestWork["spec"]> = {}, labels: Record<string, string> = {}): ManifestWork {
  return {
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: { name, namespace: "c1", uid: randomUUID(), generation: 1, labels },
    spec: { workload: { manifests }, ...spec },
  };
}

const executor = (namespace: string, name: string) => ({ subject: { type: "ServiceAccount", serviceAccount: { namespace, name } } });
type Cond = { type: string; status: string; reason: string; message: string };
const cond = (conds: unknown, type: string): Cond | undefined => (conds as Cond[] | undefined)?.find((c) => c.type === type);

describe("work controller: executor works and traceability", () => {
  it("applies what the executor may, fails what it may not with the API server's Forbidden, and deletes as the executor", async () => {
    const { admin, agentKc } = await sim();
    await grantAgent(admin);
    // The deployer may write ConfigMaps in apps, nothing else.
    await role(admin, "Role", "deployer", [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "create", "update", "patch", "delete"] }], "apps");
    await bind(admin, "RoleBinding", "deployer", { kind: "Role", name: "deployer" }, [{ kind: "ServiceAccount", name: "deployer", namespace: "apps" }], "apps");
    const c = new WorkController({ kubeConfig: agentKc, namespace: "flotilla-agent", logger: createLogger({ write: () => undefined }), watch: false });
    cleanups.push(() => c.close());
    const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "apps" }, stringData: { a: "b" } };
    const w = work("exec", [configMap("ok", "apps"), secret, configMap("elsewhere", "other")], { executor: executor("apps", "deployer") });
    c.setWorks([w]);
    const [report] = await c.sync();
    const manifests = report!.status.resourceStatus!.manifests!;
    expect(cond(manifests[0]!.conditions, "Applied")).toMatchObject({ status: "True" });
    // The Secret: the account may not even read it, so the live read fails first, with the server's words.
    expect(cond(manifests[1]!.conditions, "Applied")).toMatchObject({ status: "False", reason: "AppliedManifestFailed" });
    expect(cond(manifests[1]!.conditions, "Applied")!.message).toContain(
      'secrets "s" is forbidden: User "system:serviceaccount:apps:deployer" cannot get resource "secrets" in API group "" in the namespace "apps"',
    );
    expect(cond(manifests[2]!.conditions, "Applied")!.message).toContain(
      'User "system:serviceaccount:apps:deployer" cannot get resource "configmaps" in API group "" in the namespace "other"',
    );
    expect(cond(report!.status.conditions, "Applied")).toMatchObject({ status: "False", reason: "AppliedManifestWorkFailed" });
    expect((await admin.get({ ...CM, namespace: "apps", name: "ok" })).data).toEqual({ k: "v" });
    expect(await refusal(admin.get({ ...SECRET, namespace: "apps", name: "s" }))).toMatchObject({ code: 404 });
    expect(await refusal(admin.get({ ...CM, namespace: "other", name: "elsewhere" }))).toMatchObject({ code: 404 });
    // Reading is not enough to write: a denied create is tried again at the next pass, and a later grant takes effect.
    await role(admin, "Role", "secret-reader", [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }], "apps");
    await bind(
      admin,
      "RoleBinding",
      "secret-reader",
      { kind: "Role", name: "secret-reader" },
      [{ kind: "ServiceAccount", name: "deployer", namespace: "apps" }],
      "apps",
    );
    const [denied] = await c.sync();
    expect(cond(denied!.status.resourceStatus!.manifests![1]!.conditions, "Applied")!.message).toBe(
      'Failed to apply manifest: HTTP 403: secrets "s" is forbidden: User "system:serviceaccount:apps:deployer" cannot patch resource "secrets" in API group "" in the namespace "apps"',
    );
    await role(admin, "Role", "secret-writer", [{ apiGroups: [""], resources: ["secrets"], verbs: ["create", "patch", "delete"] }], "apps");
    await bind(
      admin,
      "RoleBinding",
      "secret-writer",
      { kind: "Role", name: "secret-writer" },
      [{ kind: "ServiceAccount", name: "deployer", namespace: "apps" }],
      "apps",
    );
    const [granted] = await c.sync();
    expect(cond(granted!.status.resourceStatus!.manifests![1]!.conditions, "Applied")).toMatchObject({ status: "True" });
    expect((await admin.get({ ...SECRET, namespace: "apps", name: "s" })).metadata).toBeDefined();

    // May create but not delete: the work's removal fails as the executor, and the object stays.
    await role(admin, "Role", "creator", [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "create", "patch"] }], "other");
    await bind(admin, "RoleBinding", "creator", { kind: "Role", name: "creator" }, [{ kind: "ServiceAccount", name: "deployer", namespace: "apps" }], "other");
    const w2 = work("exec2", [configMap("kept", "other")], { executor: executor("apps", "deployer") });
    c.setWorks([w, w2]);
    const reports = await c.sync();
    expect(cond(reports[1]!.status.conditions, "Applied")).toMatchObject({ status: "True" });
    // Both deleted on the hub (listed with their deletionTimestamp, as OCM's agent sees it).
    const deleting = (x: typeof w) => ({
      ...x,
      metadata: { ...x.metadata, deletionTimestamp: "2026-11-26T00:00:00Z", finalizers: ["cluster.open-cluster-management.io/manifest-work-cleanup"] },
    });
    c.setWorks([deleting(w), deleting(w2)]);
    await c.sync();
    expect(await refusal(admin.get({ ...CM, namespace: "apps", name: "ok" }))).toMatchObject({ code: 404 });
    expect((await admin.get({ ...CM, namespace: "other", name: "kept" })).data).toEqual({ k: "v" });
  });

  it("the agent without impersonate rights fails an executor work instead of applying it with its own", async () => {
    const { admin, agentKc } = await sim();
    // Every ordinary verb on everything, but not impersonate (which a `*` verb would include).
    await role(admin, "ClusterRole", "agent", [{ apiGroups: ["*"], resources: ["*"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"] }]);
    await bind(admin, "ClusterRoleBinding", "agent", { kind: "ClusterRole", name: "agent" }, [
      { kind: "ServiceAccount", name: "flotilla-agent", namespace: "flotilla-agent" },
    ]);
    const c = new WorkController({ kubeConfig: agentKc, namespace: "flotilla-agent", logger: createLogger({ write: () => undefined }), watch: false });
    cleanups.push(() => c.close());
    c.setWorks([
      work("exec", [configMap("x", "apps")], { executor: executor("apps", "deployer") }),
      work("bad", [configMap("y", "apps")], { executor: { subject: { type: "User" } } }),
    ]);
    const [bad, exec] = await c.sync();
    expect(cond(exec!.status.resourceStatus!.manifests![0]!.conditions, "Applied")!.message).toContain(
      `serviceaccounts "deployer" is forbidden: User "${AGENT_USER}" cannot impersonate resource "serviceaccounts"`,
    );
    expect(cond(bad!.status.conditions, "Applied")).toMatchObject({ status: "False" });
    expect(cond(bad!.status.resourceStatus!.manifests![0]!.conditions, "Applied")!.message).toContain("unsupported executor subject type");
    expect(await refusal(admin.get({ ...CM, namespace: "apps", name: "x" }))).toMatchObject({ code: 404 });
    expect(await refusal(admin.get({ ...CM, namespace: "apps", name: "y" }))).toMatchObject({ code: 404 });
  });

  it("every applied object names its work, replica set and placement, selectable by label", async () => {
    const { admin, agentKc } = await sim();
    await grantAgent(admin);
    const c = new WorkController({ kubeConfig: agentKc, namespace: "flotilla-agent", logger: createLogger({ write: () => undefined }), watch: false });
    cleanups.push(() => c.close());
    const fromSet = work(
      "web-c1",
      [{ ...configMap("web", "apps"), metadata: { name: "web", namespace: "apps", labels: { app: "web" } } }],
      {},
      {
        "work.open-cluster-management.io/manifestworkreplicaset": "team-a.web",
        "work.open-cluster-management.io/placementname": "prod",
      },
    );
    const direct = work("direct", [configMap("plain", "apps")]);
    c.setWorks([fromSet, direct]);
    await c.sync();
    const byPlacement = await admin.list(CM, "apps", "work.open-cluster-management.io/placementname=prod");
    expect(byPlacement.map((o) => (o.metadata as Obj).name)).toEqual(["web"]);
    expect((byPlacement[0]!.metadata as Obj).labels).toEqual({
      app: "web",
      "work.flotilla.dev/manifestwork": "web-c1",
      "work.open-cluster-management.io/manifestworkreplicaset": "team-a.web",
      "work.open-cluster-management.io/placementname": "prod",
    });
    expect(((byPlacement[0]!.metadata as Obj).annotations as Obj)["work.flotilla.dev/manifestwork"]).toBe("c1/web-c1");
    expect((await admin.list(CM, "apps", "work.flotilla.dev/manifestwork=direct")).map((o) => (o.metadata as Obj).name)).toEqual(["plain"]);
    expect((await admin.list(CM, "apps", "work.open-cluster-management.io/manifestworkreplicaset")).length).toBe(1);
  });
});
