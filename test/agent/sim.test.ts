/**
 * The simulated member cluster, driven through the real clients: @kubernetes/client-node (typed
 * APIs, KubernetesObjectApi with server-side apply, Watch), raw HTTP where a status code matters,
 * and the kubectl binary.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  ApiextensionsV1Api,
  ApiException,
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  VersionApi,
  Watch,
  type KubernetesObject,
  type V1ConfigMap,
  type V1Deployment,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";

const run = promisify(execFile);
/** client-node 2.x typed patch calls default to JSON patch; this selects a JSON merge patch. */
const MERGE = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let sim: SimulatedCluster;
let kc: KubeConfig;
let core: CoreV1Api;
let apps: AppsV1Api;
let objects: KubernetesObjectApi;
let work: string;

interface StatusBody {
  kind: string;
  status: string;
  code: number;
  reason: string;
  message: string;
  details?: { name?: string; group?: string; kind?: string; causes?: Array<{ reason: string; message: string; field?: string }> };
}

/** Awaits `p`, expects an ApiException with HTTP `code`, returns the decoded Status body. */
async function apiError(p: Promise<unknown>, code: number): Promise<StatusBody> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ApiException);
    const ex = e as ApiException<unknown>;
    expect(ex.code).toBe(code);
    const body = typeof ex.body === "string" ? (JSON.parse(ex.body) as StatusBody) : (ex.body as StatusBody);
    expect(body.kind).toBe("Status");
    expect(body.status).toBe("Failure");
    expect(body.code).toBe(code);
    return body;
  }
  throw new Error(`expected HTTP ${code}, but the call succeeded`);
}

function kubeconfigOf(s: SimulatedCluster): KubeConfig {
  const k = new KubeConfig();
  k.loadFromFile(s.kubeconfigPath);
  return k;
}

/** Runs kubectl against `s`; resolves with stdout, rejects with an error carrying stderr and code. */
async function kubectl(s: SimulatedCluster, ...args: string[]): Promise<string> {
  const { stdout } = await run(
    "/usr/bin/kubectl",
    ["--kubeconfig", s.kubeconfigPath, "--cache-dir", join(work, "kubectl-cache", new URL(s.url).port), ...args],
    { timeout: 60_000 },
  );
  return stdout;
}

async function kubectlFails(s: SimulatedCluster, ...args: string[]): Promise<string> {
  try {
    await kubectl(s, ...args);
  } catch (e) {
    return String((e as { stderr?: string }).stderr ?? e);
  }
  throw new Error(`kubectl ${args.join(" ")} unexpectedly succeeded`);
}

function file(name: string, text: string): string {
  const p = join(work, name);
  writeFileSync(p, text);
  return p;
}

async function http(method: string, path: string, body?: string, contentType = "application/json"): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(sim.url + path, { method, ...(body !== undefined ? { body, headers: { "Content-Type": contentType } } : {}) });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

async function makeNamespace(name: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name } } });
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "sim-test-"));
  sim = await startSimulatedCluster({ clusterProperties: { "cluster.clusterset.k8s.io": "member-1" } });
  kc = kubeconfigOf(sim);
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  objects = KubernetesObjectApi.makeApiClient(kc);
});

afterAll(async () => {
  await sim?.close();
  rmSync(work, { recursive: true, force: true });
});

describe("version, health and discovery", () => {
  it("reports the configured version to client-node and kubectl", async () => {
    const v = await kc.makeApiClient(VersionApi).getCode();
    expect(v.gitVersion).toBe("v1.31.2");
    expect(v.major).toBe("1");
    expect(v.minor).toBe("31");
    const out = JSON.parse(await kubectl(sim, "version", "-o", "json")) as { serverVersion: { gitVersion: string } };
    expect(out.serverVersion.gitVersion).toBe("v1.31.2");
    const other = await startSimulatedCluster({ kubernetesVersion: "v1.29.7", nodes: 1 });
    try {
      expect((await kubeconfigOf(other).makeApiClient(VersionApi).getCode()).gitVersion).toBe("v1.29.7");
    } finally {
      await other.close();
    }
  });

  it("answers health checks with ok, and 500 while unhealthy, without breaking the API", async () => {
    for (const p of ["/livez", "/healthz", "/readyz"]) {
      const res = await fetch(sim.url + p);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("ok");
    }
    sim.setHealthy(false);
    try {
      for (const p of ["/livez", "/healthz", "/readyz"]) expect((await fetch(sim.url + p)).status).toBe(500);
      expect((await core.readNamespace({ name: "default" })).metadata?.name).toBe("default");
    } finally {
      sim.setHealthy(true);
    }
    expect((await fetch(sim.url + "/readyz")).status).toBe(200);
  });

  it("serves legacy discovery documents", async () => {
    const groups = await http("GET", "/apis");
    expect(groups.json.kind).toBe("APIGroupList");
    const names = groups.json.groups as Array<{ name: string; preferredVersion: { version: string } }>;
    expect(names.find((g) => g.name === "about.k8s.io")?.preferredVersion.version).toBe("v1beta1");
    expect(names.map((g) => g.name)).toEqual(
      expect.arrayContaining(["apps", "batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io", "networking.k8s.io"]),
    );
    const appsRes = await http("GET", "/apis/apps/v1");
    const resources = appsRes.json.resources as Array<{ name: string; namespaced: boolean; kind: string }>;
    expect(resources.find((r) => r.name === "deployments")).toMatchObject({ namespaced: true, kind: "Deployment" });
    expect(resources.some((r) => r.name === "deployments/status")).toBe(true);
    const coreRes = await http("GET", "/api/v1");
    expect((coreRes.json.resources as Array<{ name: string; namespaced: boolean }>).find((r) => r.name === "nodes")?.namespaced).toBe(false);
    const missing = await http("GET", "/apis/example.com/v1");
    expect(missing.status).toBe(404);
  });
});

describe("namespaces, cluster identity and nodes", () => {
  it("pre-creates the system namespaces, each with its own UUID v4 uid", async () => {
    const list = await core.listNamespace();
    const byName = new Map(list.items.map((n) => [n.metadata?.name, n]));
    const uids = new Set<string>();
    for (const name of ["default", "kube-system", "kube-public", "kube-node-lease"]) {
      const uid = byName.get(name)?.metadata?.uid ?? "";
      expect(uid).toMatch(UUID_V4);
      uids.add(uid);
      expect(byName.get(name)?.status?.phase).toBe("Active");
    }
    expect(uids.size).toBe(4);
    const out = await kubectl(sim, "get", "ns", "-o", "jsonpath={.items[*].metadata.name}");
    expect(out.split(" ").sort()).toEqual(expect.arrayContaining(["default", "kube-node-lease", "kube-public", "kube-system"]));
  });

  it("keeps the kube-system UID and stored objects across a restart with statePath", async () => {
    const statePath = join(work, "state.json");
    const a = await startSimulatedCluster({ statePath, nodes: 2 });
    const uid = (await kubeconfigOf(a).makeApiClient(CoreV1Api).readNamespace({ name: "kube-system" })).metadata?.uid;
    await kubeconfigOf(a)
      .makeApiClient(CoreV1Api)
      .createNamespacedSecret({ namespace: "default", body: { metadata: { name: "token" }, stringData: { t: "s3cret" } } });
    await a.close();
    const b = await startSimulatedCluster({ statePath, nodes: 5 });
    try {
      const bCore = kubeconfigOf(b).makeApiClient(CoreV1Api);
      expect((await bCore.readNamespace({ name: "kube-system" })).metadata?.uid).toBe(uid);
      const secret = await bCore.readNamespacedSecret({ namespace: "default", name: "token" });
      expect(Buffer.from(secret.data?.t ?? "", "base64").toString()).toBe("s3cret");
      expect((await bCore.listNode()).items).toHaveLength(2);
    } finally {
      await b.close();
    }
    const fresh = await startSimulatedCluster({ nodes: 1 });
    try {
      expect((await kubeconfigOf(fresh).makeApiClient(CoreV1Api).readNamespace({ name: "kube-system" })).metadata?.uid).not.toBe(uid);
    } finally {
      await fresh.close();
    }
  });

  it("refuses to delete kube-system, and deleting a namespace deletes its content", async () => {
    const body = await apiError(core.deleteNamespace({ name: "kube-system" }), 403);
    expect(body.reason).toBe("Forbidden");
    await makeNamespace("doomed");
    await core.createNamespacedConfigMap({ namespace: "doomed", body: { metadata: { name: "c" }, data: { x: "y" } } });
    await core.deleteNamespace({ name: "doomed" });
    await apiError(core.readNamespace({ name: "doomed" }), 404);
    await apiError(core.readNamespacedConfigMap({ namespace: "doomed", name: "c" }), 404);
    const created = await apiError(core.createNamespacedConfigMap({ namespace: "doomed", body: { metadata: { name: "c" } } }), 404);
    expect(created.message).toBe('namespaces "doomed" not found');
  });

  it("creates Nodes with capacity and allocatable, and honours spec.unschedulable when binding pods", async () => {
    const nodes = (await core.listNode()).items;
    expect(nodes.map((n) => n.metadata?.name).sort()).toEqual(["sim-node-1", "sim-node-2", "sim-node-3"]);
    for (const n of nodes) {
      expect(n.status?.capacity).toMatchObject({ cpu: "4", memory: "16Gi", pods: "110" });
      expect(n.status?.allocatable).toMatchObject({ cpu: "3800m", memory: "15Gi", pods: "110" });
      expect(n.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    }
    await kubectl(sim, "cordon", "sim-node-1");
    await kubectl(sim, "cordon", "sim-node-2");
    try {
      expect((await core.readNode({ name: "sim-node-1" })).spec?.unschedulable).toBe(true);
      expect(await kubectl(sim, "get", "node", "sim-node-1")).toContain("SchedulingDisabled");
      await makeNamespace("sched");
      for (const name of ["p1", "p2", "p3"]) {
        const pod = await core.createNamespacedPod({
          namespace: "sched",
          body: { metadata: { name }, spec: { containers: [{ name: "c", image: "busybox" }] } },
        });
        expect(pod.spec?.nodeName).toBe("sim-node-3");
        expect(pod.status?.phase).toBe("Running");
      }
      await kubectl(sim, "cordon", "sim-node-3");
      const pending = await core.createNamespacedPod({
        namespace: "sched",
        body: { metadata: { name: "p4" }, spec: { containers: [{ name: "c", image: "busybox" }] } },
      });
      expect(pending.spec?.nodeName).toBeUndefined();
      expect(pending.status?.phase).toBe("Pending");
      await kubectl(sim, "uncordon", "sim-node-2");
      const bound = await core.readNamespacedPod({ namespace: "sched", name: "p4" });
      expect(bound.spec?.nodeName).toBe("sim-node-2");
    } finally {
      for (const n of ["sim-node-1", "sim-node-2", "sim-node-3"]) await kubectl(sim, "uncordon", n);
    }
  });
});

describe("ClusterProperty", () => {
  it("creates the configured properties at first start and serves them at v1beta1 and v1alpha1", async () => {
    const spec = { apiVersion: "about.k8s.io/v1beta1", kind: "ClusterProperty", metadata: { name: "cluster.clusterset.k8s.io" } };
    const got = (await objects.read(spec)) as KubernetesObject & { spec: { value: string } };
    expect(got.spec.value).toBe("member-1");
    const alpha = await http("GET", "/apis/about.k8s.io/v1alpha1/clusterproperties/cluster.clusterset.k8s.io");
    expect(alpha.json.apiVersion).toBe("about.k8s.io/v1alpha1");
    expect(await kubectl(sim, "get", "clusterproperty", "cluster.clusterset.k8s.io", "--no-headers")).toMatch(/^cluster\.clusterset\.k8s\.io\s+member-1\s/);
  });

  it("creates, reads and validates ClusterProperties through client-node and kubectl", async () => {
    await objects.create({
      apiVersion: "about.k8s.io/v1beta1",
      kind: "ClusterProperty",
      metadata: { name: "clusterset.k8s.io" },
      spec: { value: "set-a" },
    } as KubernetesObject);
    const back = (await objects.read({
      apiVersion: "about.k8s.io/v1beta1",
      kind: "ClusterProperty",
      metadata: { name: "clusterset.k8s.io" },
    })) as KubernetesObject & { spec: { value: string } };
    expect(back.spec.value).toBe("set-a");
    expect(back.metadata?.namespace).toBeUndefined();
    const bad = await apiError(
      objects.create({
        apiVersion: "about.k8s.io/v1beta1",
        kind: "ClusterProperty",
        metadata: { name: "empty.example.com" },
        spec: { value: "" },
      } as KubernetesObject),
      422,
    );
    expect(bad.reason).toBe("Invalid");
    expect(bad.details?.causes?.[0]?.field).toBe("spec.value");
    await kubectl(
      sim,
      "apply",
      "-f",
      file("cp.yaml", "apiVersion: about.k8s.io/v1beta1\nkind: ClusterProperty\nmetadata: {name: fingerprint.example.com}\nspec: {value: abc}\n"),
    );
    expect(await kubectl(sim, "get", "clusterproperties", "fingerprint.example.com", "-o", "jsonpath={.spec.value}")).toBe("abc");
  });
});

describe("Secrets and optimistic concurrency", () => {
  it("supports create, AlreadyExists, read, update, stale resourceVersion and delete", async () => {
    await makeNamespace("secrets");
    const created = await core.createNamespacedSecret({ namespace: "secrets", body: { metadata: { name: "s" }, stringData: { password: "hunter2" } } });
    expect(created.type).toBe("Opaque");
    expect(created.data?.password).toBe(Buffer.from("hunter2").toString("base64"));
    expect(created.metadata?.uid).toMatch(UUID_V4);
    const exists = await apiError(core.createNamespacedSecret({ namespace: "secrets", body: { metadata: { name: "s" } } }), 409);
    expect(exists.reason).toBe("AlreadyExists");
    expect(exists.details).toMatchObject({ name: "s", kind: "secrets" });

    const first = await core.readNamespacedSecret({ namespace: "secrets", name: "s" });
    const updated = await core.replaceNamespacedSecret({
      namespace: "secrets",
      name: "s",
      body: { ...first, data: { password: Buffer.from("new").toString("base64") } },
    });
    expect(Number(updated.metadata?.resourceVersion)).toBeGreaterThan(Number(first.metadata?.resourceVersion));
    expect(updated.metadata?.uid).toBe(first.metadata?.uid);
    const stale = await apiError(core.replaceNamespacedSecret({ namespace: "secrets", name: "s", body: { ...first, data: {} } }), 409);
    expect(stale.reason).toBe("Conflict");
    expect(stale.message).toContain('Operation cannot be fulfilled on secrets "s"');
    expect((await core.readNamespacedSecret({ namespace: "secrets", name: "s" })).data?.password).toBe(Buffer.from("new").toString("base64"));

    await core.deleteNamespacedSecret({ namespace: "secrets", name: "s" });
    const gone = await apiError(core.readNamespacedSecret({ namespace: "secrets", name: "s" }), 404);
    expect(gone.message).toBe('secrets "s" not found');
  });

  it("rejects a stale resourceVersion on Deployment updates", async () => {
    await makeNamespace("stale");
    const d = await apps.createNamespacedDeployment({ namespace: "stale", body: deployment("web", 1) });
    await apps.patchNamespacedDeployment({ namespace: "stale", name: "web", body: { spec: { replicas: 2 } } }, MERGE);
    const body = await apiError(apps.replaceNamespacedDeployment({ namespace: "stale", name: "web", body: { ...d, spec: { ...d.spec!, replicas: 5 } } }), 409);
    expect(body.details).toMatchObject({ name: "web", group: "apps", kind: "deployments" });
    expect((await apps.readNamespacedDeployment({ namespace: "stale", name: "web" })).spec?.replicas).toBe(2);
  });

  it("filters lists by label and field selectors", async () => {
    await makeNamespace("selectors");
    for (const [name, tier] of [
      ["a", "web"],
      ["b", "db"],
      ["c", "web"],
    ] as const) {
      await core.createNamespacedConfigMap({ namespace: "selectors", body: { metadata: { name, labels: { tier } } } });
    }
    const names = async (labelSelector?: string, fieldSelector?: string) =>
      (
        await core.listNamespacedConfigMap({ namespace: "selectors", ...(labelSelector ? { labelSelector } : {}), ...(fieldSelector ? { fieldSelector } : {}) })
      ).items.map((i) => i.metadata?.name);
    expect(await names("tier=web")).toEqual(["a", "c"]);
    expect(await names("tier!=web")).toEqual(["b"]);
    expect(await names("tier in (db,cache)")).toEqual(["b"]);
    expect(await names("!tier")).toEqual([]);
    expect(await names(undefined, "metadata.name=c")).toEqual(["c"]);
    expect(await names("tier=web", "metadata.name!=a")).toEqual(["c"]);
  });
});

function deployment(name: string, replicas: number): V1Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: "app", image: "nginx:1.27" }] } },
    },
  };
}

describe("server-side apply", () => {
  const cm = (data: Record<string, string>, labels?: Record<string, string>) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "ssa", namespace: "ssa", ...(labels ? { labels } : {}) },
    data,
  });

  it("creates with 201, updates with 200 and requires a fieldManager (422)", async () => {
    await makeNamespace("ssa");
    const path = "/api/v1/namespaces/ssa/configmaps/ssa";
    const first = await http("PATCH", `${path}?fieldManager=agent`, JSON.stringify(cm({ a: "1" })), "application/apply-patch+yaml");
    expect(first.status).toBe(201);
    const second = await http(
      "PATCH",
      `${path}?fieldManager=agent`,
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: '2'\n",
      "application/apply-patch+yaml",
    );
    expect(second.status).toBe(200);
    expect(second.json.data).toEqual({ a: "2" });
    const noManager = await http("PATCH", path, JSON.stringify(cm({ a: "3" })), "application/apply-patch+yaml");
    expect(noManager.status).toBe(422);
    expect(noManager.json).toMatchObject({ kind: "Status", reason: "Invalid", details: { causes: [{ field: "fieldManager" }] } });
    const wrongKind = await http("PATCH", `${path}?fieldManager=agent`, JSON.stringify({ ...cm({}), kind: "Secret" }), "application/apply-patch+yaml");
    expect(wrongKind.status).toBe(400);
    const forceOnMerge = await http("PATCH", `${path}?force=true`, JSON.stringify({ data: { a: "x" } }), "application/merge-patch+json");
    expect(forceOnMerge.status).toBe(422);
  });

  it("tracks managedFields, reports conflicts in the Kubernetes format (409), and force takes ownership", async () => {
    const applied = await objects.patch(cm({ a: "1", b: "2" }) as KubernetesObject, undefined, undefined, "agent", false, PatchStrategy.ServerSideApply);
    const entry = applied.metadata?.managedFields?.find((m) => m.manager === "agent");
    expect(entry?.operation).toBe("Apply");
    expect(entry?.fieldsV1).toEqual({ "f:data": { "f:a": {}, "f:b": {} } });

    // Same value: shared ownership, no conflict.
    await objects.patch(cm({ a: "1" }) as KubernetesObject, undefined, undefined, "other", false, PatchStrategy.ServerSideApply);
    const c = await apiError(objects.patch(cm({ a: "9" }) as KubernetesObject, undefined, undefined, "third", false, PatchStrategy.ServerSideApply), 409);
    expect(c.reason).toBe("Conflict");
    expect(c.message).toBe('Apply failed with 2 conflicts: conflicts with "agent":\n- .data.a\nconflicts with "other":\n- .data.a');
    expect(c.details?.causes).toEqual(expect.arrayContaining([{ reason: "FieldManagerConflict", message: 'conflict with "agent"', field: ".data.a" }]));

    const forced = await objects.patch(cm({ a: "9" }) as KubernetesObject, undefined, undefined, "third", true, PatchStrategy.ServerSideApply);
    expect((forced as KubernetesObject & { data: Record<string, string> }).data.a).toBe("9");
    const owners = (forced.metadata?.managedFields ?? []).map((m) => [m.manager, JSON.stringify(m.fieldsV1)]);
    expect(owners).toContainEqual(["third", JSON.stringify({ "f:data": { "f:a": {} } })]);
    expect(owners).toContainEqual(["agent", JSON.stringify({ "f:data": { "f:b": {} } })]);
    expect(owners.some(([m]) => m === "other")).toBe(false);

    // An Update manager conflicts too, and is printed with its apiVersion.
    await core.patchNamespacedConfigMap({ namespace: "ssa", name: "ssa", body: { data: { b: "edited" } }, fieldManager: "editor" }, MERGE);
    const u = await apiError(objects.patch(cm({ b: "2" }) as KubernetesObject, undefined, undefined, "agent", false, PatchStrategy.ServerSideApply), 409);
    expect(u.message).toBe('Apply failed with 1 conflict: conflict with "editor" using v1: .data.b');
  });

  it("removes fields a manager stops applying unless another manager owns them", async () => {
    await objects.patch(
      {
        ...cm({ x: "1", y: "2" }, { keep: "yes", drop: "yes" }),
        metadata: { name: "prune", namespace: "ssa", labels: { keep: "yes", drop: "yes" } },
      } as KubernetesObject,
      undefined,
      undefined,
      "m1",
      false,
      PatchStrategy.ServerSideApply,
    );
    await objects.patch(
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "prune", namespace: "ssa" }, data: { y: "2" } } as KubernetesObject,
      undefined,
      undefined,
      "m2",
      false,
      PatchStrategy.ServerSideApply,
    );
    const after = (await objects.patch(
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "prune", namespace: "ssa", labels: { keep: "yes" } }, data: {} } as KubernetesObject,
      undefined,
      undefined,
      "m1",
      false,
      PatchStrategy.ServerSideApply,
    )) as KubernetesObject & { data?: Record<string, string> };
    expect(after.data).toEqual({ y: "2" });
    expect(after.metadata?.labels).toEqual({ keep: "yes" });
  });

  it("applies Deployments with associative container lists and bumps generation only on spec changes", async () => {
    await makeNamespace("ssa-deploy");
    const d = { ...deployment("api", 2), metadata: { name: "api", namespace: "ssa-deploy" } };
    const one = await objects.patch(d as KubernetesObject, undefined, undefined, "agent", false, PatchStrategy.ServerSideApply);
    expect(one.metadata?.generation).toBe(1);
    const again = await objects.patch(d as KubernetesObject, undefined, undefined, "agent", false, PatchStrategy.ServerSideApply);
    expect(again.metadata?.resourceVersion).toBe(one.metadata?.resourceVersion);
    const fields = JSON.stringify(one.metadata?.managedFields?.find((m) => m.manager === "agent")?.fieldsV1);
    expect(fields).toContain('"k:{\\"name\\":\\"app\\"}"');
    const labelled = await objects.patch(
      { ...d, metadata: { ...d.metadata, labels: { team: "a" } } } as KubernetesObject,
      undefined,
      undefined,
      "agent",
      false,
      PatchStrategy.ServerSideApply,
    );
    expect(labelled.metadata?.generation).toBe(1);
    const scaled = (await objects.patch(
      { ...d, metadata: { ...d.metadata, labels: { team: "a" } }, spec: { ...d.spec, replicas: 4 } } as KubernetesObject,
      undefined,
      undefined,
      "agent",
      false,
      PatchStrategy.ServerSideApply,
    )) as V1Deployment;
    expect(scaled.metadata?.generation).toBe(2);
    expect(scaled.status?.observedGeneration).toBe(2);
    expect(scaled.status?.readyReplicas).toBe(4);
  });

  it("works with kubectl apply --server-side, including conflicts and --force-conflicts", async () => {
    await makeNamespace("kubectl-ssa");
    const manifest = (v: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k, namespace: kubectl-ssa}\ndata: {v: "${v}"}\n`;
    expect(await kubectl(sim, "apply", "--server-side", "-f", file("k1.yaml", manifest("1")))).toContain("serverside-applied");
    const err = await kubectlFails(sim, "apply", "--server-side", "--field-manager=rival", "-f", file("k2.yaml", manifest("2")));
    expect(err).toContain('Apply failed with 1 conflict: conflict with "kubectl": .data.v');
    await kubectl(sim, "apply", "--server-side", "--field-manager=rival", "--force-conflicts", "-f", file("k2.yaml", manifest("2")));
    const mf = JSON.parse(await kubectl(sim, "get", "cm", "k", "-n", "kubectl-ssa", "-o", "json", "--show-managed-fields")) as {
      data: { v: string };
      metadata: { managedFields: Array<{ manager: string }> };
    };
    expect(mf.data.v).toBe("2");
    expect(mf.metadata.managedFields.map((m) => m.manager)).toContain("rival");
    // Switching from client-side to server-side apply conflicts with kubectl-client-side-apply, as on a real cluster.
    await kubectl(sim, "apply", "-f", file("csa.yaml", manifest("1").replace("name: k", "name: csa")));
    const csaErr = await kubectlFails(sim, "apply", "--server-side", "-f", file("csa2.yaml", manifest("3").replace("name: k", "name: csa")));
    expect(csaErr).toContain('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.v');
  });
});

describe("patches, status subresource and controllers", () => {
  it("supports merge, JSON and strategic merge patches", async () => {
    await makeNamespace("patches");
    await apps.createNamespacedDeployment({
      namespace: "patches",
      body: {
        ...deployment("p", 1),
        spec: {
          ...deployment("p", 1).spec!,
          template: {
            metadata: { labels: { app: "p" } },
            spec: {
              containers: [
                { name: "app", image: "a:1", ports: [{ containerPort: 80 }] },
                { name: "side", image: "s:1" },
              ],
            },
          },
        },
      },
    });
    const base = "/apis/apps/v1/namespaces/patches/deployments/p";
    const merged = await http("PATCH", base, JSON.stringify({ metadata: { labels: { x: "1" } } }), "application/merge-patch+json");
    expect((merged.json.metadata as { labels: Record<string, string> }).labels).toEqual({ x: "1" });
    const jp = await http(
      "PATCH",
      base,
      JSON.stringify([
        { op: "replace", path: "/spec/replicas", value: 3 },
        { op: "test", path: "/metadata/labels/x", value: "1" },
      ]),
      "application/json-patch+json",
    );
    expect((jp.json.spec as { replicas: number }).replicas).toBe(3);
    const failedTest = await http("PATCH", base, JSON.stringify([{ op: "test", path: "/spec/replicas", value: 9 }]), "application/json-patch+json");
    expect(failedTest.status).toBe(422);
    // Strategic merge: containers merge by name, so the side container and the ports survive.
    await kubectl(sim, "set", "image", "-n", "patches", "deployment/p", "app=a:2");
    const d = await apps.readNamespacedDeployment({ namespace: "patches", name: "p" });
    expect(d.spec?.template.spec?.containers.map((c) => [c.name, c.image, c.ports?.[0]?.containerPort])).toEqual([
      ["app", "a:2", 80],
      ["side", "s:1", undefined],
    ]);
    const unsupported = await http("PATCH", base, "{}", "text/plain");
    expect(unsupported.status).toBe(415);
  });

  it("reports Deployment, DaemonSet and Job status like their controllers", async () => {
    await makeNamespace("ctrl");
    const d = await apps.createNamespacedDeployment({ namespace: "ctrl", body: deployment("d", 3) });
    expect(d.status).toMatchObject({ replicas: 3, readyReplicas: 3, availableReplicas: 3, updatedReplicas: 3, observedGeneration: 1 });
    const scaled = await apps.patchNamespacedDeployment({ namespace: "ctrl", name: "d", body: { spec: { replicas: 5 } } }, MERGE);
    expect(scaled.metadata?.generation).toBe(2);
    expect(scaled.status).toMatchObject({ readyReplicas: 5, observedGeneration: 2 });
    expect(await kubectl(sim, "get", "deploy", "d", "-n", "ctrl", "--no-headers")).toMatch(/^d\s+5\/5\s+5\s+5\s/);

    const ds = await apps.createNamespacedDaemonSet({
      namespace: "ctrl",
      body: {
        metadata: { name: "agent" },
        spec: { selector: { matchLabels: { a: "b" } }, template: { metadata: { labels: { a: "b" } }, spec: { containers: [{ name: "c", image: "i" }] } } },
      },
    });
    expect(ds.status).toMatchObject({ desiredNumberScheduled: 3, numberReady: 3, numberAvailable: 3 });
    await core.createNode({ body: { metadata: { name: "extra-node" } } });
    expect((await apps.readNamespacedDaemonSet({ namespace: "ctrl", name: "agent" })).status?.numberReady).toBe(4);
    await core.deleteNode({ name: "extra-node" });
    expect((await apps.readNamespacedDaemonSet({ namespace: "ctrl", name: "agent" })).status?.numberReady).toBe(3);

    const job = await kc.makeApiClient(BatchV1Api).createNamespacedJob({
      namespace: "ctrl",
      body: { metadata: { name: "once" }, spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "c", image: "i" }] } } } },
    });
    expect(job.status?.succeeded).toBe(1);
    expect(job.status?.conditions?.find((c) => c.type === "Complete")?.status).toBe("True");
  });

  it("keeps status out of main-resource writes and spec out of /status writes", async () => {
    await makeNamespace("status");
    const d = await apps.createNamespacedDeployment({ namespace: "status", body: { ...deployment("s", 2), status: { replicas: 99 } } });
    expect(d.status?.replicas).toBe(2);
    const put = await apps.replaceNamespacedDeployment({ namespace: "status", name: "s", body: { ...d, status: { replicas: 42, observedGeneration: 1 } } });
    expect(put.status?.replicas).toBe(2);
    const st = await apps.patchNamespacedDeploymentStatus({ namespace: "status", name: "s", body: { spec: { replicas: 7 }, status: { replicas: 42 } } }, MERGE);
    expect(st.status?.replicas).toBe(42);
    expect(st.spec?.replicas).toBe(2);
    expect(st.metadata?.generation).toBe(1);
  });

  it("keeps objects with finalizers until the finalizers are removed", async () => {
    await makeNamespace("fin");
    await core.createNamespacedConfigMap({ namespace: "fin", body: { metadata: { name: "held", finalizers: ["example.com/hold"] } } });
    await core.deleteNamespacedConfigMap({ namespace: "fin", name: "held" });
    const held = await core.readNamespacedConfigMap({ namespace: "fin", name: "held" });
    expect(held.metadata?.deletionTimestamp).toBeDefined();
    await core.patchNamespacedConfigMap({ namespace: "fin", name: "held", body: { metadata: { finalizers: null } } }, MERGE);
    await apiError(core.readNamespacedConfigMap({ namespace: "fin", name: "held" }), 404);
  });
});

describe("delete propagation", () => {
  async function family(ns: string): Promise<string> {
    await makeNamespace(ns);
    const owner = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "owner" } } });
    const ref = { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata?.uid ?? "", blockOwnerDeletion: true, controller: true };
    await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: "child", ownerReferences: [ref] } } });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "grandchild-holder" } } });
    return owner.metadata?.uid ?? "";
  }

  it("Background (the default) deletes dependents", async () => {
    await family("bg");
    await core.deleteNamespacedConfigMap({ namespace: "bg", name: "owner" });
    await apiError(core.readNamespacedSecret({ namespace: "bg", name: "child" }), 404);
    expect((await core.readNamespacedConfigMap({ namespace: "bg", name: "grandchild-holder" })).metadata?.name).toBe("grandchild-holder");
  });

  it("Orphan keeps dependents and strips their ownerReferences", async () => {
    await family("orphan");
    await objects.delete(
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "owner", namespace: "orphan" } },
      undefined,
      undefined,
      undefined,
      undefined,
      "Orphan",
    );
    await apiError(core.readNamespacedConfigMap({ namespace: "orphan", name: "owner" }), 404);
    const child = await core.readNamespacedSecret({ namespace: "orphan", name: "child" });
    expect(child.metadata?.ownerReferences).toBeUndefined();
  });

  it("Foreground deletes dependents before the owner, and a body policy wins over the query", async () => {
    await family("fg");
    const res = await http(
      "DELETE",
      "/api/v1/namespaces/fg/configmaps/owner?propagationPolicy=Orphan",
      JSON.stringify({ kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Foreground" }),
    );
    expect(res.status).toBe(200);
    await apiError(core.readNamespacedSecret({ namespace: "fg", name: "child" }), 404);
    await apiError(core.readNamespacedConfigMap({ namespace: "fg", name: "owner" }), 404);
    const bad = await http("DELETE", "/api/v1/namespaces/fg/configmaps/grandchild-holder?propagationPolicy=Sideways");
    expect(bad.status).toBe(422);
  });

  it("kubectl delete --cascade=orphan keeps a Deployment's dependents; a dependent with another live owner survives", async () => {
    await makeNamespace("kdel");
    const d = await apps.createNamespacedDeployment({ namespace: "kdel", body: deployment("web", 1) });
    const other = await core.createNamespacedConfigMap({ namespace: "kdel", body: { metadata: { name: "other" } } });
    const ref = (kind: string, name: string, uid?: string, apiVersion = "v1") => ({ apiVersion, kind, name, uid: uid ?? "" });
    await apps.createNamespacedReplicaSet({
      namespace: "kdel",
      body: {
        metadata: { name: "web-rs", ownerReferences: [ref("Deployment", "web", d.metadata?.uid, "apps/v1")] },
        spec: { selector: { matchLabels: { app: "web" } } },
      },
    });
    await core.createNamespacedConfigMap({
      namespace: "kdel",
      body: {
        metadata: { name: "shared", ownerReferences: [ref("Deployment", "web", d.metadata?.uid, "apps/v1"), ref("ConfigMap", "other", other.metadata?.uid)] },
      },
    });
    await kubectl(sim, "delete", "deployment", "web", "-n", "kdel", "--cascade=orphan");
    expect((await apps.readNamespacedReplicaSet({ namespace: "kdel", name: "web-rs" })).metadata?.ownerReferences).toBeUndefined();
    await apps.createNamespacedDeployment({ namespace: "kdel", body: deployment("web2", 1) });
    const d2 = await apps.readNamespacedDeployment({ namespace: "kdel", name: "web2" });
    await apps.patchNamespacedReplicaSet(
      { namespace: "kdel", name: "web-rs", body: { metadata: { ownerReferences: [ref("Deployment", "web2", d2.metadata?.uid, "apps/v1")] } } },
      MERGE,
    );
    await kubectl(sim, "delete", "deployment", "web2", "-n", "kdel");
    await apiError(apps.readNamespacedReplicaSet({ namespace: "kdel", name: "web-rs" }), 404);
    const shared = await core.readNamespacedConfigMap({ namespace: "kdel", name: "shared" });
    expect(shared.metadata?.ownerReferences?.map((r) => r.name)).toEqual(["other"]);
  });
});

describe("CustomResourceDefinitions", () => {
  it("make a new kind servable to client-node and kubectl, and take it away when deleted", async () => {
    const widget = { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w1", namespace: "default" }, spec: { size: 3 } };
    expect((await http("GET", "/apis/example.com/v1/namespaces/default/widgets")).status).toBe(404);
    await kc.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({
      body: {
        metadata: { name: "widgets.example.com" },
        spec: {
          group: "example.com",
          scope: "Namespaced",
          names: { plural: "widgets", singular: "widget", kind: "Widget", shortNames: ["wd"] },
          versions: [
            {
              name: "v1",
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: "object", properties: { spec: { type: "object", properties: { size: { type: "integer" } } } } } },
              subresources: { status: {} },
            },
          ],
        },
      },
    });
    const crd = await kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: "widgets.example.com" });
    expect(crd.status?.conditions?.find((c) => c.type === "Established")?.status).toBe("True");
    const groups = await http("GET", "/apis");
    expect((groups.json.groups as Array<{ name: string }>).some((g) => g.name === "example.com")).toBe(true);

    const created = await objects.create(widget as KubernetesObject);
    expect(created.metadata?.generation).toBe(1);
    // The POST made client-node's user agent an Update manager of spec.size: applying another value conflicts, as in Kubernetes.
    const c = await apiError(
      objects.patch({ ...widget, spec: { size: 4 } } as KubernetesObject, undefined, undefined, "agent", false, PatchStrategy.ServerSideApply),
      409,
    );
    expect(c.message).toBe('Apply failed with 1 conflict: conflict with "kubernetes-client-javascript" using example.com/v1: .spec.size');
    await objects.patch({ ...widget, spec: { size: 4 } } as KubernetesObject, undefined, undefined, "agent", true, PatchStrategy.ServerSideApply);
    expect(((await objects.read(widget)) as KubernetesObject & { spec: { size: number } }).spec.size).toBe(4);
    const bad = await apiError(objects.create({ ...widget, metadata: { name: "w2", namespace: "default" }, spec: { size: "big" } } as KubernetesObject), 422);
    expect(bad.details?.causes?.[0]?.field).toBe("spec.size");
    expect(await kubectl(sim, "get", "wd", "-o", "name")).toBe("widget.example.com/w1\n");
    await kubectl(sim, "apply", "-f", file("w3.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w3}\nspec: {size: 1}\n"));
    expect(await kubectl(sim, "get", "widgets", "-o", "jsonpath={.items[*].metadata.name}")).toBe("w1 w3");

    await kubectl(sim, "delete", "crd", "widgets.example.com");
    expect((await http("GET", "/apis/example.com/v1/namespaces/default/widgets")).status).toBe(404);
    await apiError(objects.read(widget), 404);
  });

  it("delete a CRD's resources before the CRD, as apiextensions' cleanup finalizer does, even when the CRD came with it", async () => {
    const GADGETS = "/apis/gadgets.example.com/v1/namespaces/default/gadgets";
    const CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.gadgets.example.com";
    // A CRD copied from another cluster carries that cluster's cleanup finalizer (KubeFleet keeps finalizers).
    const crd = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "gadgets.gadgets.example.com", finalizers: ["customresourcecleanup.apiextensions.k8s.io"] },
      spec: {
        group: "gadgets.example.com",
        scope: "Namespaced",
        names: { plural: "gadgets", singular: "gadget", kind: "Gadget" },
        versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } } }],
      },
    };
    expect((await http("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", JSON.stringify(crd))).status).toBe(201);
    const gadget = (name: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify({ apiVersion: "gadgets.example.com/v1", kind: "Gadget", metadata: { name, ...extra } });
    expect((await http("POST", GADGETS, gadget("plain"))).status).toBe(201);
    expect((await http("POST", GADGETS, gadget("held", { finalizers: ["example.com/hold"] }))).status).toBe(201);

    // Deleting the CRD: the plain resource goes at once; the held one is being deleted and holds the CRD, Terminating.
    expect((await http("DELETE", CRD)).status).toBe(200);
    expect((await http("GET", `${GADGETS}/plain`)).status).toBe(404);
    const held = await http("GET", `${GADGETS}/held`);
    expect(held.status).toBe(200);
    expect((held.json.metadata as { deletionTimestamp?: string }).deletionTimestamp).toBeTruthy();
    const terminating = (await http("GET", CRD)).json as { metadata: { finalizers: string[] }; status: { conditions: { type: string; status: string }[] } };
    expect(terminating.metadata.finalizers).toEqual(["customresourcecleanup.apiextensions.k8s.io"]);
    expect(terminating.status.conditions.find((c) => c.type === "Terminating")?.status).toBe("True");
    // No new resources of a Terminating CRD.
    const refused = await http("POST", GADGETS, gadget("late"));
    expect(refused.status).toBe(405);
    expect(refused.json.message).toBe('create is not supported on resources of kind "gadgets.gadgets.example.com"');

    // The last resource's finalizer removed: it goes, and the CRD with it.
    expect((await http("PATCH", `${GADGETS}/held`, JSON.stringify({ metadata: { finalizers: null } }), "application/merge-patch+json")).status).toBe(200);
    expect((await http("GET", `${GADGETS}/held`)).status).toBe(404);
    expect((await http("GET", CRD)).status).toBe(404);
  });
});

describe("kubectl", () => {
  it("applies, updates, prints and deletes a Deployment", async () => {
    await makeNamespace("kubectl");
    const manifest = (image: string, replicas: number) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: kubectl, labels: {app: web}}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: nginx, image: "${image}", ports: [{containerPort: 80}]}
`;
    expect(await kubectl(sim, "apply", "-f", file("d1.yaml", manifest("nginx:1.25", 2)))).toContain("deployment.apps/web created");
    expect(await kubectl(sim, "apply", "-f", file("d2.yaml", manifest("nginx:1.27", 3)))).toContain("deployment.apps/web configured");
    const yaml = await kubectl(sim, "get", "deploy", "web", "-n", "kubectl", "-o", "yaml");
    expect(yaml).toContain("image: nginx:1.27");
    expect(yaml).toContain("readyReplicas: 3");
    expect(yaml).toContain("containerPort: 80");
    expect(await kubectl(sim, "apply", "-f", file("d2.yaml", manifest("nginx:1.27", 3)))).toContain("unchanged");
    expect(await kubectl(sim, "delete", "-f", file("d2.yaml", manifest("nginx:1.27", 3)))).toContain('deployment.apps "web" deleted');
    expect(await kubectl(sim, "get", "deploy", "-n", "kubectl", "-o", "name")).toBe("");
    const err = await kubectlFails(sim, "get", "deploy", "web", "-n", "kubectl");
    expect(err).toContain('deployments.apps "web" not found');
  });

  it("creates and reads Secrets, and lists across namespaces", async () => {
    await kubectl(sim, "create", "secret", "generic", "creds", "-n", "default", "--from-literal=user=admin");
    expect(Buffer.from(await kubectl(sim, "get", "secret", "creds", "-o", "jsonpath={.data.user}"), "base64").toString()).toBe("admin");
    const all = await kubectl(sim, "get", "secrets", "-A", "--no-headers");
    expect(all).toMatch(/^default\s+creds\s+Opaque\s+1\s/m);
  });
});

describe("watch", () => {
  it("streams ADDED, MODIFIED and DELETED events to client-node's Watch", async () => {
    await makeNamespace("watched");
    const events: string[] = [];
    const w = new Watch(kc);
    const req = await w.watch(
      "/api/v1/namespaces/watched/configmaps",
      {},
      (type: string, obj: KubernetesObject) => events.push(`${type} ${obj.metadata?.name}`),
      () => undefined,
    );
    try {
      await core.createNamespacedConfigMap({ namespace: "watched", body: { metadata: { name: "w" }, data: { a: "1" } } });
      await core.patchNamespacedConfigMap({ namespace: "watched", name: "w", body: { data: { a: "2" } } }, MERGE);
      await core.deleteNamespacedConfigMap({ namespace: "watched", name: "w" });
      const deadline = Date.now() + 5000;
      while (events.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(events).toEqual(["ADDED w", "MODIFIED w", "DELETED w"]);
    } finally {
      req.abort();
    }
    const list = await core.listNamespacedConfigMap({ namespace: "watched" });
    const replay = await fetch(`${sim.url}/api/v1/namespaces/watched/configmaps?watch=true&resourceVersion=1&timeoutSeconds=1`);
    expect(
      (await replay.text())
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as { type: string }).type),
    ).toEqual(["ADDED", "MODIFIED", "DELETED"]);
    expect(Number(list.metadata?.resourceVersion)).toBeGreaterThan(1);
  });
});

describe("informers, defaults and request options", () => {
  it("feeds a client-node informer (list, then watch from the list's resourceVersion)", async () => {
    await makeNamespace("informed");
    await core.createNamespacedConfigMap({ namespace: "informed", body: { metadata: { name: "before" } } });
    const informer = makeInformer<V1ConfigMap>(kc, "/api/v1/namespaces/informed/configmaps", () => core.listNamespacedConfigMap({ namespace: "informed" }));
    const seen: string[] = [];
    informer.on("add", (o) => seen.push(`add ${o.metadata?.name}`));
    informer.on("update", (o) => seen.push(`update ${o.metadata?.name}`));
    informer.on("delete", (o) => seen.push(`delete ${o.metadata?.name}`));
    await informer.start();
    try {
      await core.createNamespacedConfigMap({ namespace: "informed", body: { metadata: { name: "after" } } });
      await core.patchNamespacedConfigMap({ namespace: "informed", name: "before", body: { data: { k: "v" } } }, MERGE);
      await core.deleteNamespacedConfigMap({ namespace: "informed", name: "after" });
      const deadline = Date.now() + 5000;
      while (seen.length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(seen).toEqual(["add before", "add after", "update before", "delete after"]);
      expect(informer.list().map((o) => o.metadata?.name)).toEqual(["before"]);
    } finally {
      await informer.stop();
    }
  });

  it("fills the API-server defaults of Deployments and their pod templates", async () => {
    await makeNamespace("defaults");
    const d = await apps.createNamespacedDeployment({
      namespace: "defaults",
      body: {
        metadata: { name: "d" },
        spec: {
          selector: { matchLabels: { a: "b" } },
          template: {
            metadata: { labels: { a: "b" } },
            spec: {
              containers: [
                { name: "c", image: "nginx:1.27", ports: [{ containerPort: 80 }] },
                { name: "l", image: "busybox" },
              ],
            },
          },
        },
      },
    });
    expect(d.spec?.replicas).toBe(1);
    expect(d.spec?.strategy).toEqual({ type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25%", maxSurge: "25%" } });
    expect(d.spec?.revisionHistoryLimit).toBe(10);
    const pod = d.spec?.template.spec;
    expect(pod?.restartPolicy).toBe("Always");
    expect(pod?.containers.map((c) => c.imagePullPolicy)).toEqual(["IfNotPresent", "Always"]);
    expect(pod?.containers[0]?.ports?.[0]?.protocol).toBe("TCP");
  });

  it("honours dryRun=All and generateName", async () => {
    await makeNamespace("options");
    const dry = await core.createNamespacedConfigMap({ namespace: "options", body: { metadata: { name: "dry" } }, dryRun: "All" });
    expect(dry.metadata?.name).toBe("dry");
    await apiError(core.readNamespacedConfigMap({ namespace: "options", name: "dry" }), 404);
    const gen = await core.createNamespacedConfigMap({ namespace: "options", body: { metadata: { generateName: "job-" } } });
    expect(gen.metadata?.name).toMatch(/^job-[a-z0-9]{5}$/);
  });

  it("answers kubectl auth can-i and whoami (the kubeconfig's user is the admin; --as is RBAC's)", async () => {
    expect((await kubectl(sim, "auth", "can-i", "delete", "nodes")).trim()).toBe("yes");
    // Impersonated (the admin may), the ServiceAccount holds nothing: kubectl prints "no" and exits 1.
    await expect(kubectl(sim, "auth", "can-i", "create", "configmaps", "-n", "default", "--as=system:serviceaccount:default:nobody")).rejects.toMatchObject({
      code: 1,
      stdout: "no\n",
    });
    expect(await kubectl(sim, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")).toBe("kubernetes-admin");
    expect((await http("GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")).status).toBe(405);
  });
});
