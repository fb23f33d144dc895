/**
 * ManifestWork executors end to end: a real hub (`wrangler dev`), one real agent process on a
 * simulated member cluster whose RBAC decides (agent/sim/auth.ts). The agent authenticates to
 * the member cluster as its ServiceAccount with exactly the RBAC of its install manifests
 * (agent/src/install.ts), so the test also shows those grant what impersonation needs. On the
 * hub, a pipeline's ServiceAccount (a hub token from a TokenRequest) without `execute-as` is
 * refused with 403 and nothing is written; granted it, its work is created and applied as the
 * executor's ServiceAccount: what that account may do is applied, what it may not fails with the
 * member cluster's Forbidden in the work's `Applied=False`. Every applied object carries the
 * work's trace label.
 */
import { writeFileSync } from "node:fs";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, createNamespaces, hubFetch, startHub, type Hub } from "../../scripts/hub-process.ts";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { renderInstallManifests } from "../../agent/src/install.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { DynamicClient } from "../../agent/src/work/dynamic.ts";
import { cond, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess } from "./support.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const W = "work.open-cluster-management.io";
const WORKS = `/apis/${W}/v1/namespaces/c1/manifestworks`;
const AGENT_TOKEN = "e2e-agent-token";
const CM = { group: "", version: "v1", resource: "configmaps" };

describe("ManifestWork executor (wrangler dev + an agent process on a simulated cluster with RBAC)", () => {
  let hub: Hub;
  let sim: SimulatedCluster;
  let agent: AgentProcess;
  let member: DynamicClient;
  let pipelineToken: string;
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-executor-"));

  /** A hub API call as the pipeline's ServiceAccount. */
  const asPipeline = async (method: string, apiPath: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const r = await hubFetch(
      hub,
      method,
      apiPath,
      { authorization: `Bearer ${pipelineToken}`, "content-type": "application/json" },
      body === undefined ? undefined : JSON.stringify(body),
    );
    return { status: r.status, body: r.text ? JSON.parse(r.text) : undefined };
  };
  const work = (name: string) => ({
    apiVersion: `${W}/v1`,
    kind: "ManifestWork",
    metadata: { name },
    spec: {
      executor: { subject: { type: "ServiceAccount", serviceAccount: { namespace: "apps", name: "deployer" } } },
      workload: {
        manifests: [
          { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings", namespace: "apps" }, data: { mode: "blue" } },
          { apiVersion: "v1", kind: "Secret", metadata: { name: "creds", namespace: "apps" }, stringData: { password: "x" } },
        ],
      },
    },
  });

  beforeAll(async () => {
    hub = await startHub();
    const token = await createBootstrapToken(hub);
    // The member cluster: the agent is the ServiceAccount flotilla-agent/flotilla-agent, with the install manifests' RBAC.
    sim = await startSimulatedCluster({
      users: {
        [AGENT_TOKEN]: {
          name: "system:serviceaccount:flotilla-agent:flotilla-agent",
          groups: ["system:serviceaccounts", "system:serviceaccounts:flotilla-agent"],
        },
      },
    });
    member = new DynamicClient(kubeConfigFromYaml(sim.kubeconfigYaml));
    const plural = (kind: string) => `${kind.toLowerCase()}${kind.endsWith("s") ? "es" : "s"}`;
    for (const o of renderInstallManifests({ hubUrl: hub.url, clusterName: "c1", bootstrapToken: token, image: "flotilla-agent:e2e" })) {
      const [group, version] = o.apiVersion.includes("/") ? o.apiVersion.split("/") : ["", o.apiVersion];
      await member.create({ group: group!, version: version!, resource: plural(o.kind) }, o.metadata.namespace ?? "", o as unknown as Json, "e2e");
    }
    await member.create({ group: "", version: "v1", resource: "namespaces" }, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: "apps" } }, "e2e");
    // The executor's ServiceAccount may write ConfigMaps in apps, and nothing else.
    await member.create(
      { group: "rbac.authorization.k8s.io", version: "v1", resource: "roles" },
      "apps",
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: "deployer" },
        rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "create", "patch", "update", "delete"] }],
      },
      "e2e",
    );
    await member.create(
      { group: "rbac.authorization.k8s.io", version: "v1", resource: "rolebindings" },
      "apps",
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "deployer" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "deployer" },
        subjects: [{ kind: "ServiceAccount", name: "deployer", namespace: "apps" }],
      },
      "e2e",
    );
    const kubeconfig = path.join(dir, "agent.kubeconfig");
    writeFileSync(
      kubeconfig,
      stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "sim", cluster: { server: sim.url, "insecure-skip-tls-verify": true } }],
        contexts: [{ name: "sim", context: { cluster: "sim", user: "agent" } }],
        "current-context": "sim",
        users: [{ name: "agent", user: { token: AGENT_TOKEN } }],
      }),
    );
    agent = startAgent(hub, ["--cluster-name", "c1", "--bootstrap-token", token, "--kubeconfig", kubeconfig, "--status-sync-interval", "1"], false);
    await waitFor("c1 to register", async () => (await admin(hub, "GET", `${MC}/c1`)).status === 200, 60_000);
    expect((await admin(hub, "PATCH", `${MC}/c1`, { spec: { hubAcceptsClient: true, leaseDurationSeconds: 1 } }, merge)).status).toBe(200);
    // The hub side: a pipeline's ServiceAccount that may write works in c1, not yet execute as anyone.
    await createNamespaces(hub, "ci");
    expect(
      (await admin(hub, "POST", "/api/v1/namespaces/ci/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "pipeline" } })).status,
    ).toBe(201);
    const tr = await admin(hub, "POST", "/api/v1/namespaces/ci/serviceaccounts/pipeline/token", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: {},
    });
    expect(tr.status).toBe(201);
    pipelineToken = tr.body.status.token;
    const rules = [{ apiGroups: [W], resources: ["manifestworks"], verbs: ["get", "list", "create", "update", "patch", "delete"] }];
    expect(
      (
        await admin(hub, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/c1/roles", {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "Role",
          metadata: { name: "pipeline" },
          rules,
        })
      ).status,
    ).toBe(201);
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "pipeline" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "pipeline" },
      subjects: [{ kind: "ServiceAccount", name: "pipeline", namespace: "ci" }],
    };
    expect((await admin(hub, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/c1/rolebindings", binding)).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    if (agent) await stopAgent(agent);
    member?.kc.close();
    await sim?.close();
    await hub?.stop();
  });

  it("a user without execute-as gets 403 and nothing is written", async () => {
    const refused = await asPipeline("POST", WORKS, work("deploy"));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      kind: "Status",
      reason: "Forbidden",
      message: `manifestworks.${W} "deploy" is forbidden: user "system:serviceaccount:ci:pipeline" cannot manipulate the Manifestwork with executor apps/deployer in namespace c1`,
    });
    expect((await asPipeline("GET", `${WORKS}/deploy`)).status).toBe(404);
  });

  it("with execute-as the work is created and applied as the executor: allowed manifests apply, the rest fail with the member cluster's Forbidden", async () => {
    const executeAs = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "execute-as-deployer" },
      rules: [{ apiGroups: [W], resources: ["manifestworks"], verbs: ["execute-as"], resourceNames: ["system:serviceaccount:apps:deployer"] }],
    };
    expect((await admin(hub, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/c1/roles", executeAs)).status).toBe(201);
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "execute-as-deployer" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "execute-as-deployer" },
      subjects: [{ kind: "ServiceAccount", name: "pipeline", namespace: "ci" }],
    };
    expect((await admin(hub, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/c1/rolebindings", binding)).status).toBe(201);
    expect((await asPipeline("POST", WORKS, work("deploy"))).status).toBe(201);

    const status = await waitFor(
      "the work's status",
      async () => {
        const w = (await asPipeline("GET", `${WORKS}/deploy`)).body;
        return cond(w, "Applied") && w.status.resourceStatus?.manifests?.length === 2 ? w : undefined;
      },
      60_000,
    );
    expect(cond(status, "Applied")).toMatchObject({ status: "False", reason: "AppliedManifestWorkFailed" });
    const [cm, secret] = status.status.resourceStatus.manifests as Json[];
    const applied = (m: Json) => (m.conditions as Json[]).find((c) => c.type === "Applied");
    expect(applied(cm)).toMatchObject({ status: "True" });
    expect(applied(secret)).toMatchObject({ status: "False", reason: "AppliedManifestFailed" });
    expect(applied(secret).message).toContain(
      'secrets "creds" is forbidden: User "system:serviceaccount:apps:deployer" cannot get resource "secrets" in API group "" in the namespace "apps"',
    );

    // On the member cluster: the ConfigMap, labelled with its work; no Secret.
    const labelled = await member.list(CM, "apps", "work.flotilla.dev/manifestwork=deploy");
    expect(labelled.map((o: Json) => [o.metadata.name, o.data])).toEqual([["settings", { mode: "blue" }]]);
    await expect(member.get({ group: "", version: "v1", resource: "secrets", namespace: "apps", name: "creds" })).rejects.toMatchObject({ code: 404 });

    // Deleting the work removes what the executor applied.
    expect((await asPipeline("DELETE", `${WORKS}/deploy`)).status).toBe(200);
    await waitFor("the ConfigMap to go", async () => (await member.list(CM, "apps")).every((o: Json) => o.metadata.name !== "settings"), 60_000);
  }, 120_000);
});
