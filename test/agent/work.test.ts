/**
 * Tests of the work agent (agent/src/work): the pure parts with tables of cases, the controller
 * against the simulated member cluster over HTTP (the agent's own transport, no mocks), and
 * the loop against a real hub (`wrangler dev`, docs/agent-protocol.md "Works" and "Leave"),
 * including the agent process exiting 0 after a leave.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "../../agent/src/kube.ts";
import { startSimulatedCluster } from "../../agent/sim/index.ts";
import { startAgent } from "../../agent/src/agent.ts";
import { CREDENTIALS_SECRET_NAME, loadCredentials } from "../../agent/src/credentials.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { createLogger, type Logger } from "../../agent/src/log.ts";
import { isSubset } from "../../agent/src/work/apply.ts";
import { isOrphaned } from "../../agent/src/work/cleanup.ts";
import { mergeConditions, workStatus, type ManifestOutcome } from "../../agent/src/work/conditions.ts";
import { WorkController } from "../../agent/src/work/controller.ts";
import { DynamicClient, type ObjectRef } from "../../agent/src/work/dynamic.ts";
import { collectFeedback } from "../../agent/src/work/feedback.ts";
import { evaluate, toJsonPathPlus } from "../../agent/src/work/jsonpath.ts";
import { applyOrder, kindRank } from "../../agent/src/work/order.ts";
import { RECORD_LABEL, recordName } from "../../agent/src/work/record.ts";
import { rolloutState } from "../../agent/src/work/rollout.ts";
import { admin, createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import type { Condition, ManifestConfig, ManifestWork, ManifestWorkStatus, Obj, ResourceMeta } from "../../agent/src/work/types.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
/** The dynamic client with answers typed loosely, for reading fields in assertions. */
type JsonClient = { [K in keyof DynamicClient]: DynamicClient[K] extends (...a: infer A) => Promise<unknown> ? (...a: A) => Promise<Json> : DynamicClient[K] };
const jsonClient = (kc: KubeConfig): JsonClient => new DynamicClient(kc) as unknown as JsonClient;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

const AGENT_NS = "flotilla-agent";

function memoryLogger(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  return { log: createLogger({ write: (l) => lines.push(l) }), lines };
}

async function until<T>(cond: () => T | Promise<T>, timeoutMs = 15_000, what = "condition"): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await cond();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A simulated member cluster with the agent's namespace, its kubeconfig, and a dynamic client. */
async function sim() {
  const cluster = await startSimulatedCluster();
  cleanups.push(() => cluster.close());
  const kc: KubeConfig = kubeConfigFromYaml(cluster.kubeconfigYaml);
  const dyn = jsonClient(kc);
  await dyn.create({ group: "", version: "v1", resource: "namespaces" }, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: AGENT_NS } }, "test");
  return { cluster, kc, dyn };
}

const CM = { group: "", version: "v1", resource: "configmaps" };
const DEPLOY = { group: "apps", version: "v1", resource: "deployments" };
const ref = (gvr: typeof CM, namespace: string, name: string): ObjectRef => ({ ...gvr, namespace, name });

async function getOrNull(dyn: JsonClient, r: ObjectRef): Promise<Json | null> {
  try {
    return await dyn.get(r);
  } catch (e) {
    if ((e as { code?: number }).code === 404) return null;
    throw e;
  }
}

function configMap(name: string, data: Record<string, string>, namespace = "default"): Obj {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace }, data };
}

function deployment(name: string, namespace: string, image: string, replicas = 2): Obj {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace },
    spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name, image }] } } },
  };
}

let generation = 0;
function work(name: string, manifests: unknown[], extra: Partial<ManifestWork["spec"]> = {}, uid: string = randomUUID()): ManifestWork {
  generation += 1;
  return {
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: { name, namespace: "c1", uid, generation },
    spec: { workload: { manifests }, ...extra },
  };
}

/** The same work with a new spec and a bumped generation (as the hub stores an update). */
function update(w: ManifestWork, manifests: unknown[], extra: Partial<ManifestWork["spec"]> = {}): ManifestWork {
  return { ...w, metadata: { ...w.metadata, generation: (w.metadata.generation ?? 0) + 1 }, spec: { ...w.spec, workload: { manifests }, ...extra } };
}

/** The same work as the hub lists it once deleted there (held by its cleanup finalizer). */
function deleting(w: ManifestWork): ManifestWork {
  return {
    ...w,
    metadata: { ...w.metadata, deletionTimestamp: "2026-11-26T00:00:00Z", finalizers: ["cluster.open-cluster-management.io/manifest-work-cleanup"] },
  };
}

/**
 * A controller that reads every object every pass (`watch: false`), so a test that changes the
 * cluster sees the next sync act on it; the watch-driven mode has its own tests below.
 */
function controller(kc: KubeConfig, log: Logger = memoryLogger().log, watch = false): WorkController {
  const c = new WorkController({ kubeConfig: kc, namespace: AGENT_NS, logger: log, watch });
  cleanups.push(() => c.close());
  return c;
}

/** Counts the GET requests `kc` sends from now on, by path. */
function countGets(kc: KubeConfig): Map<string, number> {
  const counts = new Map<string, number>();
  const request = kc.request.bind(kc);
  kc.request = (method, p, opts) => {
    if (method === "GET" && opts?.query?.watch === undefined) counts.set(p, (counts.get(p) ?? 0) + 1);
    return request(method, p, opts);
  };
  return counts;
}

const cond = (conds: Condition[] | undefined, type: string) => conds?.find((c) => c.type === type);
const status = (reports: Array<{ name: string; status: ManifestWorkStatus }>, name: string) => {
  const r = reports.find((x) => x.name === name);
  if (!r) throw new Error(`no report for ${name}`);
  return r.status;
};
const rv = (o: Json): number => Number(o.metadata.resourceVersion);

// ---------------------------------------------------------------------------------------------
// pure parts

describe("kind order", () => {
  it.each([
    ["Namespace", 0],
    ["CustomResourceDefinition", 0],
    ["ClusterRole", 1],
    ["ServiceAccount", 2],
    ["ConfigMap", 3],
    ["Service", 4],
    ["Deployment", 5],
    ["ValidatingWebhookConfiguration", 6],
    ["Widget", 1000],
  ])("%s has rank %i", (kind, rank) => expect(kindRank(kind)).toBe(rank));

  it("sorts stably by rank and keeps spec order among equals", () => {
    const kinds = ["Deployment", "Widget", "Service", "ConfigMap", "Namespace", "Secret", "Job", "RoleBinding"];
    expect(applyOrder(kinds.map((kind) => ({ kind }))).map((i) => kinds[i])).toEqual([
      "Namespace",
      "RoleBinding",
      "ConfigMap",
      "Secret",
      "Service",
      "Deployment",
      "Job",
      "Widget",
    ]);
    expect(applyOrder([{ kind: "Secret" }, {}, { kind: "ConfigMap" }])).toEqual([0, 2, 1]);
  });
});

describe("Kubernetes JSONPath", () => {
  it.each([
    [".spec.replicas", "$.spec.replicas"],
    ["{.status.readyReplicas}", "$.status.readyReplicas"],
    ["spec.template.spec.containers[0].image", "$.spec.template.spec.containers[0].image"],
    ['.status.conditions[?(@.type=="Ready")].status', '$.status.conditions[?(@.type=="Ready")].status'],
    [".metadata.labels.app\\.kubernetes\\.io/name", '$.metadata.labels["app.kubernetes.io/name"]'],
    ["{.items[*].metadata.name}", "$.items[*].metadata.name"],
  ])("%s → %s", (k8s, plus) => expect(toJsonPathPlus(k8s)).toBe(plus));

  it("evaluates filters and escaped names", () => {
    const o = {
      metadata: { labels: { "app.kubernetes.io/name": "web" } },
      status: {
        conditions: [
          { type: "A", status: "False" },
          { type: "Ready", status: "True" },
        ],
      },
    };
    expect(evaluate(o, '.status.conditions[?(@.type=="Ready")].status')).toEqual(["True"]);
    expect(evaluate(o, ".metadata.labels.app\\.kubernetes\\.io/name")).toEqual(["web"]);
    expect(evaluate(o, ".spec.missing")).toEqual([]);
    expect(() => evaluate(o, ".status.conditions[0")).toThrow(/unterminated/);
  });
});

describe("status feedback", () => {
  const deploy = {
    metadata: { generation: 2 },
    spec: { replicas: 3, paused: false, template: { spec: { containers: [{ image: "nginx:1.25" }] } } },
    status: { readyReplicas: 2, replicas: 3, availableReplicas: 2, conditions: [{ type: "Available", status: "True" }] },
  };

  it("reads WellKnownStatus per kind, in OCM's order, and nothing for other kinds", () => {
    expect(collectFeedback(deploy, "apps", "v1", "Deployment", [{ type: "WellKnownStatus" }])).toEqual({
      values: [
        { name: "ReadyReplicas", fieldValue: { type: "Integer", integer: 2 } },
        { name: "Replicas", fieldValue: { type: "Integer", integer: 3 } },
        { name: "AvailableReplicas", fieldValue: { type: "Integer", integer: 2 } },
      ],
      errors: [],
    });
    const job = { status: { succeeded: 1, conditions: [{ type: "Complete", status: "True" }] } };
    expect(collectFeedback(job, "batch", "v1", "Job", [{ type: "WellKnownStatus" }]).values).toEqual([
      { name: "JobComplete", fieldValue: { type: "String", string: "True" } },
      { name: "JobSucceeded", fieldValue: { type: "Integer", integer: 1 } },
    ]);
    const pod = { status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] } };
    expect(collectFeedback(pod, "", "v1", "Pod", [{ type: "WellKnownStatus" }]).values.map((v) => v.name)).toEqual(["PodReady", "PodPhase"]);
    const ds = { status: { numberReady: 3, desiredNumberScheduled: 3, numberAvailable: 3 } };
    expect(collectFeedback(ds, "apps", "v1", "DaemonSet", [{ type: "WellKnownStatus" }]).values.map((v) => v.name)).toEqual([
      "NumberReady",
      "DesiredNumberScheduled",
      "NumberAvailable",
    ]);
    expect(collectFeedback(deploy, "apps", "v1", "StatefulSet", [{ type: "WellKnownStatus" }])).toEqual({ values: [], errors: [] });
  });

  it("types JSONPaths values, reads OCM-style status-relative paths, honours version, and reports bad rules", () => {
    const rules = [
      {
        type: "JSONPaths" as const,
        jsonPaths: [
          { name: "image", path: ".spec.template.spec.containers[0].image" },
          { name: "replicas", path: ".spec.replicas" },
          { name: "paused", path: ".spec.paused" },
          { name: "available", path: '.status.conditions[?(@.type=="Available")].status' },
          { name: "ready", path: ".readyReplicas" },
          { name: "missing", path: ".status.nothing" },
          { name: "v2only", path: ".spec.replicas", version: "v2" },
          { name: "object", path: ".spec.template" },
        ],
      },
    ];
    const r = collectFeedback(deploy, "apps", "v1", "Deployment", rules);
    expect(r.values).toEqual([
      { name: "image", fieldValue: { type: "String", string: "nginx:1.25" } },
      { name: "replicas", fieldValue: { type: "Integer", integer: 3 } },
      { name: "paused", fieldValue: { type: "Boolean", boolean: false } },
      { name: "available", fieldValue: { type: "String", string: "True" } },
      { name: "ready", fieldValue: { type: "Integer", integer: 2 } },
      // OCM's raw JSON feedback: Go's json.Marshal text (sorted keys, no spaces).
      { name: "object", fieldValue: { type: "JsonRaw", jsonRaw: '{"spec":{"containers":[{"image":"nginx:1.25"}]}}' } },
    ]);
    expect(r.errors).toEqual([]);
  });
});

describe("rollout state", () => {
  const dep = (gen: number, status: Obj, replicas = 2) => ({ metadata: { generation: gen }, spec: { replicas }, status });
  const done = { observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 };
  it.each([
    ["Deployment rolled out", "apps", "Deployment", dep(2, done), { progressing: false }],
    ["Deployment generation not observed", "apps", "Deployment", dep(3, done), { progressing: true }],
    ["Deployment not all ready", "apps", "Deployment", dep(2, { ...done, readyReplicas: 1 }), { progressing: true }],
    ["Deployment old replicas left", "apps", "Deployment", dep(2, { ...done, replicas: 3 }), { progressing: true }],
    [
      "Deployment past its progress deadline",
      "apps",
      "Deployment",
      dep(2, { ...done, readyReplicas: 0, conditions: [{ type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded", message: "timed out" }] }),
      { progressing: false, degraded: "ProgressDeadlineExceeded" },
    ],
    ["StatefulSet not updated", "apps", "StatefulSet", dep(2, { ...done, updatedReplicas: 1 }), { progressing: true }],
    [
      "DaemonSet rolled out",
      "apps",
      "DaemonSet",
      {
        metadata: { generation: 1 },
        status: { observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberReady: 3, numberAvailable: 3 },
      },
      { progressing: false },
    ],
    [
      "DaemonSet not available",
      "apps",
      "DaemonSet",
      {
        metadata: { generation: 1 },
        status: { observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberReady: 3, numberAvailable: 2 },
      },
      { progressing: true },
    ],
    ["Job running", "batch", "Job", { status: { active: 1 } }, { progressing: true }],
    ["Job complete", "batch", "Job", { status: { conditions: [{ type: "Complete", status: "True" }] } }, { progressing: false }],
    [
      "Job failed",
      "batch",
      "Job",
      { status: { conditions: [{ type: "Failed", status: "True", message: "BackoffLimitExceeded" }] } },
      { progressing: false, degraded: "JobFailed" },
    ],
    ["ConfigMap", "", "ConfigMap", { data: {} }, { progressing: false }],
  ])("%s", (_name, group, kind, obj, want) => {
    const got = rolloutState(group, kind, obj);
    expect(got.progressing).toBe(want.progressing);
    expect(got.degraded).toBe("degraded" in want ? want.degraded : undefined);
  });
});

describe("work status aggregation", () => {
  const meta = (ordinal: number, kind = "ConfigMap"): ResourceMeta => ({
    ordinal,
    group: "",
    version: "v1",
    kind,
    resource: "configmaps",
    name: `m${ordinal}`,
    namespace: "default",
  });
  const found = { state: "found" as const, object: {} };
  const ok: ManifestOutcome = { meta: meta(0), applied: { ok: true }, live: found, feedback: undefined, rollout: { progressing: false } };

  it("Available is False on any False, Unknown on any Unknown, else True; conditions carry observedGeneration", () => {
    const s = (outcomes: ManifestOutcome[]) => workStatus(outcomes, 7, undefined, "2026-01-01T00:00:00Z");
    const all = s([ok, { ...ok, meta: meta(1) }]);
    expect(cond(all.conditions, "Available")).toMatchObject({ status: "True", reason: "ResourcesAvailable", observedGeneration: 7 });
    expect(all.conditions.map((c) => c.type)).toEqual(["Applied", "Available", "Progressing", "Degraded"]);
    const missing = s([ok, { ...ok, meta: meta(1), live: { state: "missing" }, rollout: undefined }]);
    expect(cond(missing.conditions, "Available")).toMatchObject({
      status: "False",
      reason: "ResourcesNotAvailable",
      message: "1 of 2 resources are not available",
    });
    const unknown = s([ok, { ...ok, meta: meta(1), live: { state: "error", message: "boom" }, rollout: undefined }]);
    expect(cond(unknown.conditions, "Available")).toMatchObject({ status: "Unknown", reason: "ResourcesStatusUnknown" });
    expect(cond(unknown.resourceStatus.manifests[1]?.conditions, "Available")).toMatchObject({ status: "Unknown", reason: "FetchingResourceFailed" });
  });

  it("Progressing and Degraded follow the workloads and the apply result", () => {
    const s = (outcomes: ManifestOutcome[]) => workStatus(outcomes, 1, undefined, "2026-01-01T00:00:00Z").conditions;
    const rolling = s([ok, { ...ok, meta: meta(1, "Deployment"), rollout: { progressing: true, message: "1 of 2 ready replicas" } }]);
    expect(cond(rolling, "Progressing")).toMatchObject({ status: "True", reason: "ResourcesProgressing" });
    expect(cond(rolling, "Progressing")?.message).toMatch(/Deployment default\/m1 \(1 of 2 ready replicas\)/);
    expect(cond(rolling, "Degraded")).toMatchObject({ status: "False" });
    const failedJob = s([{ ...ok, meta: meta(0, "Job"), rollout: { progressing: false, degraded: "JobFailed", message: "BackoffLimitExceeded" } }]);
    expect(cond(failedJob, "Degraded")).toMatchObject({ status: "True", reason: "JobFailed" });
    expect(cond(failedJob, "Progressing")).toMatchObject({ status: "False", reason: "ResourcesRolledOut" });
    const failed = s([ok, { ...ok, meta: meta(1), applied: { ok: false, message: "nope" } }]);
    expect(cond(failed, "Applied")).toMatchObject({ status: "False", reason: "AppliedManifestWorkFailed" });
    expect(cond(failed, "Degraded")).toMatchObject({ status: "True", reason: "ApplyFailed" });
  });

  it("keeps lastTransitionTime while a condition's status holds", () => {
    const first = mergeConditions(undefined, [{ type: "Applied", status: "True", reason: "r", message: "" }], "2026-01-01T00:00:00Z");
    const same = mergeConditions(first, [{ type: "Applied", status: "True", reason: "r2", message: "m" }], "2026-01-01T00:05:00Z");
    expect(same[0]?.lastTransitionTime).toBe("2026-01-01T00:00:00Z");
    const flipped = mergeConditions(same, [{ type: "Applied", status: "False", reason: "r", message: "" }], "2026-01-01T00:09:00Z");
    expect(flipped[0]?.lastTransitionTime).toBe("2026-01-01T00:09:00Z");
  });

  it("drift comparison and orphaning rules", () => {
    expect(
      isSubset(
        { metadata: { name: "x", labels: { a: "1" } }, spec: { ports: [{ port: 80 }] } },
        { metadata: { name: "x", uid: "u", labels: { a: "1", b: "2" } }, spec: { ports: [{ port: 80, protocol: "TCP" }] } },
      ),
    ).toBe(true);
    expect(isSubset({ spec: { ports: [{ port: 80 }] } }, { spec: { ports: [{ port: 80 }, { port: 81 }] } })).toBe(false);
    expect(isSubset({ metadata: { labels: { a: "1" } } }, { metadata: { labels: { a: "2" } } })).toBe(false);
    expect(isSubset({ status: { x: 1 } }, {})).toBe(true);
    const r = { group: "", version: "v1", resource: "configmaps", namespace: "default", name: "a", uid: "u" };
    expect(isOrphaned(r, undefined)).toBe(false);
    expect(isOrphaned(r, { propagationPolicy: "Orphan" })).toBe(true);
    expect(
      isOrphaned(r, {
        propagationPolicy: "SelectivelyOrphan",
        selectivelyOrphans: { orphaningRules: [{ resource: "configmaps", namespace: "default", name: "a" }] },
      }),
    ).toBe(true);
    expect(
      isOrphaned(r, {
        propagationPolicy: "SelectivelyOrphan",
        selectivelyOrphans: { orphaningRules: [{ resource: "configmaps", namespace: "default", name: "b" }] },
      }),
    ).toBe(false);
    expect(recordName("w1")).toBe("flotilla-work-w1");
    expect(recordName("x".repeat(250))).toMatch(/^flotilla-work-[0-9a-f]{40}$/);
  });
});

// ---------------------------------------------------------------------------------------------
// the controller against the simulated cluster

describe("work controller on a simulated cluster", () => {
  it("applies in kind order, keeps spec ordinals, and reports OCM's status with Progressing and Degraded", async () => {
    const { kc, dyn } = await sim();
    const c = controller(kc);
    const manifests = [
      deployment("web", "web", "nginx:1.25"),
      { apiVersion: "v1", kind: "Service", metadata: { name: "web", namespace: "web" }, spec: { selector: { app: "web" }, ports: [{ port: 80 }] } },
      configMap("web", { a: "1" }, "web"),
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "web" } },
    ];
    const w = work("w1", manifests);
    c.setWorks([w]);
    const s = status(await c.sync(), "w1");
    const ns = await dyn.get({ group: "", version: "v1", resource: "namespaces", namespace: "", name: "web" });
    const cm = await dyn.get(ref(CM, "web", "web"));
    const svc = await dyn.get({ group: "", version: "v1", resource: "services", namespace: "web", name: "web" });
    const dep = await dyn.get(ref(DEPLOY, "web", "web"));
    expect(rv(ns)).toBeLessThan(rv(cm));
    expect(rv(cm)).toBeLessThan(rv(svc));
    expect(rv(svc)).toBeLessThan(rv(dep));
    expect(s.resourceStatus.manifests.map((m) => m.resourceMeta)).toEqual([
      { ordinal: 0, group: "apps", version: "v1", kind: "Deployment", resource: "deployments", name: "web", namespace: "web" },
      { ordinal: 1, group: "", version: "v1", kind: "Service", resource: "services", name: "web", namespace: "web" },
      { ordinal: 2, group: "", version: "v1", kind: "ConfigMap", resource: "configmaps", name: "web", namespace: "web" },
      { ordinal: 3, group: "", version: "v1", kind: "Namespace", resource: "namespaces", name: "web", namespace: "" },
    ]);
    const g = w.metadata.generation;
    expect(cond(s.conditions, "Applied")).toMatchObject({ status: "True", reason: "AppliedManifestWorkComplete", observedGeneration: g });
    expect(cond(s.conditions, "Available")).toMatchObject({ status: "True", reason: "ResourcesAvailable", observedGeneration: g });
    expect(cond(s.conditions, "Progressing")).toMatchObject({ status: "False", reason: "ResourcesRolledOut", observedGeneration: g });
    expect(cond(s.conditions, "Degraded")).toMatchObject({ status: "False", observedGeneration: g });
    const m0 = s.resourceStatus.manifests[0];
    expect(m0?.conditions.map((x) => [x.type, x.status, x.reason])).toEqual([
      ["Applied", "True", "AppliedManifestComplete"],
      ["Available", "True", "ResourceAvailable"],
      ["StatusFeedbackSynced", "True", "NoStatusFeedbackSynced"],
    ]);
    expect(m0?.conditions.every((x) => x.observedGeneration === g)).toBe(true);
    expect(dep.metadata.managedFields.some((f: Json) => f.manager === "work-agent" && f.operation === "Apply")).toBe(true);
    // The record on the cluster lists what the work holds.
    const rec = await dyn.get(ref(CM, AGENT_NS, "flotilla-work-w1"));
    expect(rec.metadata.labels[RECORD_LABEL]).toBe("true");
    const record = JSON.parse(rec.data["record.json"]);
    expect(record.appliedResources.map((r: Json) => `${r.resource}/${r.name}`)).toEqual([
      "configmaps/web",
      "namespaces/web",
      "services/web",
      "deployments/web",
    ]);
    expect(record.appliedResources.find((r: Json) => r.resource === "deployments").uid).toBe(dep.metadata.uid);
  });

  it("Update re-applies a changed manifest and drops fields the new revision no longer has", async () => {
    const { kc, dyn } = await sim();
    const c = controller(kc);
    const w1 = work("w", [configMap("cfg", { a: "1", b: "2" })]);
    c.setWorks([w1]);
    await c.sync();
    const w2 = update(w1, [configMap("cfg", { a: "3" })]);
    c.setWorks([w2]);
    const s = status(await c.sync(), "w");
    expect((await dyn.get(ref(CM, "default", "cfg"))).data).toEqual({ a: "3" });
    expect(cond(s.conditions, "Applied")?.observedGeneration).toBe(w2.metadata.generation);
  });

  it("repairs drift: a changed field and a deleted object come back at the next sync", async () => {
    const { kc, dyn } = await sim();
    const c = controller(kc);
    c.setWorks([work("w", [configMap("cfg", { a: "1" }), deployment("d", "default", "nginx:1")])]);
    await c.sync();
    await dyn.request("PATCH", "/api/v1/namespaces/default/configmaps/cfg", {
      body: { data: { a: "changed", extra: "x" } },
      contentType: "application/merge-patch+json",
      query: { fieldManager: "kubectl-edit" },
    });
    await dyn.request("PATCH", "/apis/apps/v1/namespaces/default/deployments/d", {
      body: { spec: { template: { spec: { containers: [{ name: "d", image: "evil:1" }] } } } },
      contentType: "application/strategic-merge-patch+json",
      query: { fieldManager: "kubectl-edit" },
    });
    const oldUid = (await dyn.get(ref(DEPLOY, "default", "d"))).metadata.uid;
    await c.sync();
    expect((await dyn.get(ref(CM, "default", "cfg"))).data.a).toBe("1");
    expect((await dyn.get(ref(DEPLOY, "default", "d"))).spec.template.spec.containers[0].image).toBe("nginx:1");
    await dyn.delete(ref(DEPLOY, "default", "d"));
    expect(await getOrNull(dyn, ref(DEPLOY, "default", "d"))).toBeNull();
    const s = status(await c.sync(), "w");
    const again = await dyn.get(ref(DEPLOY, "default", "d"));
    expect(again.metadata.uid).not.toBe(oldUid);
    expect(cond(s.conditions, "Applied")?.status).toBe("True");
    const record = JSON.parse((await dyn.get(ref(CM, AGENT_NS, "flotilla-work-w"))).data["record.json"]);
    expect(record.appliedResources.find((r: Json) => r.resource === "deployments").uid).toBe(again.metadata.uid);
  });

  it("with watches, a pass reads only the objects that changed: none when nothing did, and drift is still repaired", async () => {
    const { kc, dyn } = await sim();
    const gets = countGets(kc);
    const c = controller(kc, memoryLogger().log, true);
    const manifests = [...Array.from({ length: 20 }, (_, i) => configMap(`cm-${i}`, { i: String(i) })), deployment("d", "default", "nginx:1")];
    const w = work("w", manifests);
    c.setWorks([w]);
    expect(cond(status(await c.sync(), "w").conditions, "Applied")?.status).toBe("True");
    const objectGets = () => [...gets].filter(([p]) => /\/(configmaps\/cm-|deployments\/d$)/.test(p)).reduce((n, [, v]) => n + v, 0);
    // Until the watches run and the first reads are confirmed, passes read; then they stop.
    await until(
      async () => {
        const before = objectGets();
        await c.sync();
        return objectGets() === before;
      },
      15_000,
      "a pass without reads",
    );
    const before = objectGets();
    const s = status(await c.sync(), "w");
    expect(objectGets()).toBe(before);
    expect(cond(s.conditions, "Available")?.status).toBe("True");
    expect(s.resourceStatus?.manifests).toHaveLength(21);
    // Someone edits one ConfigMap and deletes the Deployment: the watch tells, those two are read and repaired.
    await dyn.request("PATCH", "/api/v1/namespaces/default/configmaps/cm-7", {
      body: { data: { i: "edited" } },
      contentType: "application/merge-patch+json",
      query: { fieldManager: "kubectl-edit" },
    });
    await dyn.delete(ref(DEPLOY, "default", "d"));
    await until(
      async () => {
        await c.sync();
        const cm = await dyn.get(ref(CM, "default", "cm-7"));
        return cm.data.i === "7" && (await getOrNull(dyn, ref(DEPLOY, "default", "d"))) !== null;
      },
      15_000,
      "drift repaired",
    );
    const reread = [...gets].filter(([p]) => /\/configmaps\/cm-/.test(p) && !p.endsWith("/cm-7"));
    // The other nineteen ConfigMaps were read by the first passes only, not again after the edit.
    for (const [, n] of reread) expect(n).toBeLessThanOrEqual(3);
    // A manifest that leaves the work takes its object out of the watch; a work without objects ends the watches.
    c.setWorks([deleting(w)]);
    await c.sync();
    expect(await getOrNull(dyn, ref(CM, "default", "cm-0"))).toBeNull();
  });

  it("ServerSideApply: a field owned by another manager conflicts without force and is taken with force", async () => {
    const { kc, dyn } = await sim();
    await dyn.create(CM, "default", configMap("shared", { owned: "theirs" }), "someone-else");
    const c = controller(kc);
    const ssa = (force: boolean): ManifestConfig[] => [
      {
        resourceIdentifier: { resource: "configmaps", name: "shared", namespace: "default" },
        updateStrategy: { type: "ServerSideApply", serverSideApply: { force } },
      },
    ];
    const w1 = work("w", [configMap("shared", { owned: "ours" })], { manifestConfigs: ssa(false) });
    c.setWorks([w1]);
    const s1 = status(await c.sync(), "w");
    const m = s1.resourceStatus.manifests[0];
    expect(cond(m?.conditions, "Applied")).toMatchObject({ status: "False", reason: "AppliedManifestFailed" });
    expect(cond(m?.conditions, "Applied")?.message).toMatch(/conflict with "someone-else"/);
    expect(cond(s1.conditions, "Applied")).toMatchObject({ status: "False", reason: "AppliedManifestWorkFailed" });
    expect(cond(s1.conditions, "Degraded")).toMatchObject({ status: "True", reason: "ApplyFailed" });
    expect((await dyn.get(ref(CM, "default", "shared"))).data.owned).toBe("theirs");
    // A resync does not retry the same conflict against the same object; the failure stays reported.
    const before = (await dyn.get(ref(CM, "default", "shared"))).metadata.resourceVersion;
    const s2 = status(await c.sync(), "w");
    expect(cond(s2.resourceStatus.manifests[0]?.conditions, "Applied")?.status).toBe("False");
    expect((await dyn.get(ref(CM, "default", "shared"))).metadata.resourceVersion).toBe(before);
    // With force the fields are taken over.
    c.setWorks([update(w1, [configMap("shared", { owned: "ours" })], { manifestConfigs: ssa(true) })]);
    const s3 = status(await c.sync(), "w");
    expect(cond(s3.conditions, "Applied")?.status).toBe("True");
    const live = await dyn.get(ref(CM, "default", "shared"));
    expect(live.data.owned).toBe("ours");
    expect(live.metadata.managedFields.find((f: Json) => f.manager === "work-agent")?.operation).toBe("Apply");
  });

  it("ServerSideApply ignoreFields OnSpokePresent: spoke changes to ignored fields are kept, others are reverted", async () => {
    const { kc, dyn } = await sim();
    const c = controller(kc);
    const manifestConfigs: ManifestConfig[] = [
      {
        resourceIdentifier: { group: "apps", resource: "deployments", name: "d", namespace: "default" },
        updateStrategy: {
          type: "ServerSideApply",
          serverSideApply: { force: true, ignoreFields: [{ condition: "OnSpokePresent", jsonPaths: [".spec.replicas"] }] },
        },
      },
    ];
    c.setWorks([work("w", [deployment("d", "default", "nginx:1", 2)], { manifestConfigs })]);
    await c.sync();
    await dyn.request("PATCH", "/apis/apps/v1/namespaces/default/deployments/d", {
      body: { spec: { replicas: 5, template: { spec: { containers: [{ name: "d", image: "evil:1" }] } } } },
      contentType: "application/strategic-merge-patch+json",
      query: { fieldManager: "hpa" },
    });
    const s = status(await c.sync(), "w");
    const live = await dyn.get(ref(DEPLOY, "default", "d"));
    expect(live.spec.replicas).toBe(5);
    expect(live.spec.template.spec.containers[0].image).toBe("nginx:1");
    expect(cond(s.conditions, "Applied")?.status).toBe("True");
  });

  it("ServerSideApply ignoreFields OnSpokeChange: a spoke change is kept until the hub changes the field; fieldManager names the applier", async () => {
    const { kc, dyn } = await sim();
    const c = controller(kc);
    const manifestConfigs: ManifestConfig[] = [
      {
        resourceIdentifier: { group: "apps", resource: "deployments", name: "d", namespace: "default" },
        updateStrategy: {
          type: "ServerSideApply",
          serverSideApply: { force: true, fieldManager: "work-agent-fidelity", ignoreFields: [{ condition: "OnSpokeChange", jsonPaths: [".spec.replicas"] }] },
        },
      },
    ];
    const w1 = work("w", [deployment("d", "default", "nginx:1", 2)], { manifestConfigs });
    c.setWorks([w1]);
    await c.sync();
    const managers = (await dyn.get(ref(DEPLOY, "default", "d"))).metadata.managedFields.map((f: Json) => f.manager);
    expect(managers).toContain("work-agent-fidelity");
    await dyn.request("PATCH", "/apis/apps/v1/namespaces/default/deployments/d", {
      body: { spec: { replicas: 5 } },
      contentType: "application/merge-patch+json",
      query: { fieldManager: "hpa" },
    });
    await c.sync();
    expect((await dyn.get(ref(DEPLOY, "default", "d"))).spec.replicas).toBe(5);
    // The hub changes the ignored field: the hub's value wins this once.
    c.setWorks([update(w1, [deployment("d", "default", "nginx:1", 3)], { manifestConfigs })]);
    await c.sync();
    expect((await dyn.get(ref(DEPLOY, "default", "d"))).spec.replicas).toBe(3);
  });

  it("CreateOnly creates a missing object but never changes an existing one", async () => {
    const { kc, dyn } = await sim();
    await dyn.create(CM, "default", configMap("pre", { a: "theirs" }), "someone-else");
    const c = controller(kc);
    const createOnly = (name: string): ManifestConfig => ({
      resourceIdentifier: { resource: "configmaps", name, namespace: "default" },
      updateStrategy: { type: "CreateOnly" },
    });
    const w = work("w", [configMap("pre", { a: "ours" }), configMap("fresh", { a: "ours" })], { manifestConfigs: [createOnly("pre"), createOnly("fresh")] });
    c.setWorks([w]);
    const s = status(await c.sync(), "w");
    expect((await dyn.get(ref(CM, "default", "pre"))).data.a).toBe("theirs");
    expect((await dyn.get(ref(CM, "default", "fresh"))).data.a).toBe("ours");
    expect(cond(s.conditions, "Applied")?.status).toBe("True");
    await dyn.request("PATCH", "/api/v1/namespaces/default/configmaps/fresh", { body: { data: { a: "edited" } }, contentType: "application/merge-patch+json" });
    c.setWorks([update(w, [configMap("pre", { a: "ours2" }), configMap("fresh", { a: "ours2" })])]);
    await c.sync();
    expect((await dyn.get(ref(CM, "default", "fresh"))).data.a).toBe("edited");
    await dyn.delete(ref(CM, "default", "fresh"));
    await c.sync();
    expect((await dyn.get(ref(CM, "default", "fresh"))).data.a).toBe("ours2");
  });

  it("ReadOnly writes nothing, reads existence and feedback, and never deletes", async () => {
    const { kc, dyn } = await sim();
    const created = await dyn.create(DEPLOY, "default", deployment("ro", "default", "nginx:1", 3), "someone-else");
    const c = controller(kc);
    const manifestConfigs: ManifestConfig[] = [
      {
        resourceIdentifier: { group: "apps", resource: "deployments", name: "ro", namespace: "default" },
        updateStrategy: { type: "ReadOnly" },
        feedbackRules: [{ type: "WellKnownStatus" }],
      },
      { resourceIdentifier: { resource: "configmaps", name: "absent", namespace: "default" }, updateStrategy: { type: "ReadOnly" } },
    ];
    const w = work("w", [deployment("ro", "default", "other:2", 1), configMap("absent", { a: "1" })], { manifestConfigs });
    c.setWorks([w]);
    const s = status(await c.sync(), "w");
    const live = await dyn.get(ref(DEPLOY, "default", "ro"));
    expect(live.metadata.resourceVersion).toBe(created.metadata.resourceVersion as string);
    expect(live.spec.template.spec.containers[0].image).toBe("nginx:1");
    expect(live.metadata.managedFields.some((f: Json) => f.manager === "work-agent")).toBe(false);
    expect(await getOrNull(dyn, ref(CM, "default", "absent"))).toBeNull();
    const [dm, cm] = s.resourceStatus.manifests;
    expect(dm?.statusFeedback.values).toContainEqual({ name: "ReadyReplicas", fieldValue: { type: "Integer", integer: 3 } });
    expect(cond(dm?.conditions, "Available")?.status).toBe("True");
    expect(cond(dm?.conditions, "StatusFeedbackSynced")).toMatchObject({ status: "True", reason: "StatusFeedbackSynced" });
    expect(cond(cm?.conditions, "Available")).toMatchObject({ status: "False", reason: "ResourceNotAvailable" });
    expect(cond(s.conditions, "Available")).toMatchObject({ status: "False", reason: "ResourcesNotAvailable", message: "1 of 2 resources are not available" });
    c.setWorks([deleting(w)]);
    await c.sync();
    expect(await getOrNull(dyn, ref(DEPLOY, "default", "ro"))).not.toBeNull();
    expect(await getOrNull(dyn, ref(CM, AGENT_NS, "flotilla-work-w"))).toBeNull();
  });

  it("a resource held by two works is deleted only when the last one lets go", async () => {
    const { kc, dyn } = await sim();
    const c = controller(kc);
    const a = work("a", [configMap("shared", { k: "v" }), configMap("only-a", { k: "v" })]);
    const b = work("b", [configMap("shared", { k: "v" })]);
    c.setWorks([a, b]);
    await c.sync();
    c.setWorks([deleting(a), b]);
    await c.sync();
    expect(await getOrNull(dyn, ref(CM, "default", "only-a"))).toBeNull();
    expect(await getOrNull(dyn, ref(CM, "default", "shared"))).not.toBeNull();
    c.setWorks([deleting(b)]);
    await c.sync();
    expect(await getOrNull(dyn, ref(CM, "default", "shared"))).toBeNull();
    expect(await getOrNull(dyn, ref(CM, AGENT_NS, "flotilla-work-a"))).toBeNull();
    expect(await getOrNull(dyn, ref(CM, AGENT_NS, "flotilla-work-b"))).toBeNull();
  });

  it("a manifest removed from a work is deleted; an object re-created by someone else is not (UID precondition)", async () => {
    const { kc, dyn } = await sim();
    const c = controller(kc);
    const w = work("w", [configMap("x", { k: "1" }), configMap("y", { k: "1" }), configMap("z", { k: "1" })]);
    c.setWorks([w]);
    await c.sync();
    // z is deleted and re-created by someone else: same name, another uid.
    await dyn.delete(ref(CM, "default", "z"));
    await dyn.create(CM, "default", configMap("z", { k: "mine" }), "someone-else");
    c.setWorks([update(w, [configMap("x", { k: "1" })])]);
    await c.sync();
    expect(await getOrNull(dyn, ref(CM, "default", "x"))).not.toBeNull();
    expect(await getOrNull(dyn, ref(CM, "default", "y"))).toBeNull();
    expect((await dyn.get(ref(CM, "default", "z"))).data.k).toBe("mine");
    const record = JSON.parse((await dyn.get(ref(CM, AGENT_NS, "flotilla-work-w"))).data["record.json"]);
    expect(record.appliedResources.map((r: Json) => r.name)).toEqual(["x"]);
  });

  it.each([
    ["Foreground", { propagationPolicy: "Foreground" as const }, { keep: false, orphan: false }],
    ["Orphan", { propagationPolicy: "Orphan" as const }, { keep: true, orphan: true }],
    [
      "SelectivelyOrphan",
      {
        propagationPolicy: "SelectivelyOrphan" as const,
        selectivelyOrphans: { orphaningRules: [{ group: "", resource: "configmaps", name: "keep", namespace: "default" }] },
      },
      { keep: true, orphan: false },
    ],
  ])("deleteOption %s decides what a deleted work leaves behind", async (_name, deleteOption, want) => {
    const { kc, dyn } = await sim();
    const c = controller(kc);
    const w = work("w", [configMap("keep", { k: "1" }), configMap("other", { k: "1" })], { deleteOption });
    c.setWorks([w]);
    await c.sync();
    c.setWorks([deleting(w)]);
    const reports = await c.sync();
    // Everything let go as the option says: the agent confirms (the hub then drops the finalizer).
    expect(reports).toEqual([{ name: "w", uid: w.metadata.uid, status: { conditions: [], resourceStatus: { manifests: [] } }, released: true }]);
    expect((await getOrNull(dyn, ref(CM, "default", "keep"))) !== null).toBe(want.keep);
    expect((await getOrNull(dyn, ref(CM, "default", "other"))) !== null).toBe(want.orphan);
    expect(await getOrNull(dyn, ref(CM, AGENT_NS, "flotilla-work-w"))).toBeNull();
  });

  it("the record survives a restart: a new controller deletes what a work deleted meanwhile applied, per its last deleteOption", async () => {
    const { kc, dyn } = await sim();
    const first = controller(kc);
    const w = work("w", [configMap("a", { k: "1" }), configMap("b", { k: "1" })], {
      deleteOption: {
        propagationPolicy: "SelectivelyOrphan",
        selectivelyOrphans: { orphaningRules: [{ resource: "configmaps", name: "b", namespace: "default" }] },
      },
    });
    first.setWorks([w]);
    await first.sync();
    const restarted = controller(kc);
    await restarted.init();
    expect(restarted.works().map((w) => w.metadata.name)).toEqual(["w"]);
    // Before the hub answers, the recorded work is still repaired.
    await dyn.delete(ref(CM, "default", "a"));
    await restarted.sync();
    expect(await getOrNull(dyn, ref(CM, "default", "a"))).not.toBeNull();
    restarted.setWorks([deleting(w)]);
    await restarted.sync();
    expect(await getOrNull(dyn, ref(CM, "default", "a"))).toBeNull();
    expect(await getOrNull(dyn, ref(CM, "default", "b"))).not.toBeNull();
  });

  it("a deleted work is confirmed only once what it applied is gone: an object held by a finalizer keeps it Deleting", async () => {
    const { kc, dyn } = await sim();
    const c = controller(kc);
    const held = { ...configMap("held", { k: "1" }), metadata: { name: "held", namespace: "default", finalizers: ["example.com/hold"] } };
    const w = work("w", [held, configMap("free", { k: "1" })]);
    c.setWorks([w]);
    await c.sync();
    c.setWorks([deleting(w)]);
    const [pending] = await c.sync();
    expect(pending?.released).toBeUndefined();
    expect(cond(pending?.status.conditions, "Deleting")).toMatchObject({
      status: "True",
      reason: "ResourceRemaining",
      message: "1 resource(s) are being deleted (held by their finalizers)",
    });
    expect(await getOrNull(dyn, ref(CM, "default", "free"))).toBeNull();
    expect((await dyn.get(ref(CM, "default", "held"))).metadata.deletionTimestamp).toBeTruthy();
    // Its finalizer removed, the object goes, and the next pass confirms.
    await dyn.request("PATCH", "/api/v1/namespaces/default/configmaps/held", {
      body: { metadata: { finalizers: null } },
      contentType: "application/merge-patch+json",
      query: { fieldManager: "test" },
    });
    const [done] = await c.sync();
    expect(done).toMatchObject({ name: "w", released: true });
    expect(await getOrNull(dyn, ref(CM, AGENT_NS, "flotilla-work-w"))).toBeNull();
  });

  it("a work that merely disappears from the hub is kept for the eviction grace period, then evicted; one that comes back is kept", async () => {
    const { kc, dyn } = await sim();
    let now = Date.parse("2026-11-26T10:00:00Z");
    const { log, lines } = memoryLogger();
    const c = new WorkController({ kubeConfig: kc, namespace: AGENT_NS, logger: log, watch: false, evictionGracePeriodMs: 60 * 60 * 1000, now: () => now });
    cleanups.push(() => c.close());
    const gone = work("gone", [configMap("gone", { k: "1" })]);
    const back = work("back", [configMap("back", { k: "1" })]);
    c.setWorks([gone, back]);
    await c.sync();
    // Both vanish from the list (a hub restored from an older backup): nothing is deleted.
    c.setWorks([]);
    await c.sync();
    expect(await getOrNull(dyn, ref(CM, "default", "gone"))).not.toBeNull();
    const record = JSON.parse((await dyn.get(ref(CM, AGENT_NS, "flotilla-work-gone"))).data["record.json"]);
    expect(record.evictionStartTime).toBe("2026-11-26T10:00:00Z");
    expect(lines.some((l) => l.includes("work gone is missing on the hub") && l.includes("2026-11-26T11:00:00.000Z"))).toBe(true);
    now += 59 * 60 * 1000;
    await c.sync();
    expect(await getOrNull(dyn, ref(CM, "default", "gone"))).not.toBeNull();
    // One comes back within the grace period: its eviction stops.
    c.setWorks([back]);
    await c.sync();
    expect(JSON.parse((await dyn.get(ref(CM, AGENT_NS, "flotilla-work-back"))).data["record.json"]).evictionStartTime).toBeUndefined();
    now += 2 * 60 * 1000;
    await c.sync();
    expect(await getOrNull(dyn, ref(CM, "default", "gone"))).toBeNull();
    expect(await getOrNull(dyn, ref(CM, AGENT_NS, "flotilla-work-gone"))).toBeNull();
    expect(await getOrNull(dyn, ref(CM, "default", "back"))).not.toBeNull();
    // A grace period of 100 years or more never evicts (OCM's bound).
    const never = new WorkController({
      kubeConfig: kc,
      namespace: AGENT_NS,
      logger: log,
      watch: false,
      evictionGracePeriodMs: 100 * 365 * 24 * 3600 * 1000,
      now: () => now,
    });
    cleanups.push(() => never.close());
    never.setWorks([]);
    now += 10 * 365 * 24 * 3600 * 1000;
    await never.sync();
    expect(await getOrNull(dyn, ref(CM, "default", "back"))).not.toBeNull();
  });

  it("a work the agent saw being deleted is removed at once even when it disappears before the agent confirmed", async () => {
    const { kc, dyn } = await sim();
    const first = controller(kc);
    const w = work("w", [configMap("held", { k: "1" })]);
    first.setWorks([w]);
    await first.sync();
    // The agent marked the record (it saw the deletionTimestamp) and stopped before releasing:
    // the record as finalizeWork leaves it then.
    const cm = await dyn.get(ref(CM, AGENT_NS, "flotilla-work-w"));
    const record = { ...JSON.parse(cm.data["record.json"]), deleting: true };
    await dyn.replace(ref(CM, AGENT_NS, "flotilla-work-w"), { ...cm, data: { "record.json": JSON.stringify(record) } }, "test");
    // Restarted, it finds the work gone from the hub (its finalizer dropped there): no grace period.
    const restarted = controller(kc);
    await restarted.init();
    restarted.setWorks([]);
    await restarted.sync();
    expect(await getOrNull(dyn, ref(CM, "default", "held"))).toBeNull();
    expect(await getOrNull(dyn, ref(CM, AGENT_NS, "flotilla-work-w"))).toBeNull();
  });

  it("feedback values from WellKnownStatus and JSONPaths, and Progressing/Degraded from live rollout state", async () => {
    const { kc, dyn } = await sim();
    const c = controller(kc);
    const manifestConfigs: ManifestConfig[] = [
      {
        resourceIdentifier: { group: "apps", resource: "deployments", name: "web", namespace: "default" },
        feedbackRules: [
          { type: "WellKnownStatus" },
          {
            type: "JSONPaths",
            jsonPaths: [
              { name: "image", path: ".spec.template.spec.containers[0].image" },
              { name: "available", path: '.status.conditions[?(@.type=="Available")].status' },
              { name: "bad", path: ".spec.template[" },
            ],
          },
        ],
      },
      {
        resourceIdentifier: { group: "batch", resource: "jobs", name: "once", namespace: "default" },
        feedbackRules: [{ type: "JSONPaths", jsonPaths: [{ name: "suspend", path: ".spec.suspend" }] }, { type: "WellKnownStatus" }],
      },
    ];
    const job = {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "once", namespace: "default" },
      spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "x", image: "busybox" }] } } },
    };
    const w = work("w", [deployment("web", "default", "nginx:1.25", 2), job], { manifestConfigs });
    c.setWorks([w]);
    const s = status(await c.sync(), "w");
    const [dm, jm] = s.resourceStatus.manifests;
    expect(dm?.statusFeedback.values).toEqual([
      { name: "ReadyReplicas", fieldValue: { type: "Integer", integer: 2 } },
      { name: "Replicas", fieldValue: { type: "Integer", integer: 2 } },
      { name: "AvailableReplicas", fieldValue: { type: "Integer", integer: 2 } },
      { name: "image", fieldValue: { type: "String", string: "nginx:1.25" } },
      { name: "available", fieldValue: { type: "String", string: "True" } },
    ]);
    expect(cond(dm?.conditions, "StatusFeedbackSynced")).toMatchObject({ status: "False", reason: "StatusFeedbackSyncFailed" });
    expect(jm?.statusFeedback.values).toEqual([
      { name: "suspend", fieldValue: { type: "Boolean", boolean: false } },
      { name: "JobComplete", fieldValue: { type: "String", string: "True" } },
      { name: "JobSucceeded", fieldValue: { type: "Integer", integer: 1 } },
    ]);
    expect(cond(s.conditions, "Progressing")?.status).toBe("False");

    // The Deployment's controller reports a rollout in progress, then a missed deadline.
    const setStatus = async (st: Obj) => {
      const cur = await dyn.get(ref(DEPLOY, "default", "web"));
      await dyn.request("PUT", "/apis/apps/v1/namespaces/default/deployments/web/status", {
        body: { ...cur, status: { observedGeneration: cur.metadata.generation, replicas: 2, ...st } },
      });
    };
    await setStatus({ updatedReplicas: 2, readyReplicas: 1, availableReplicas: 1 });
    const rolling = status(await c.sync(), "w");
    expect(cond(rolling.conditions, "Progressing")).toMatchObject({
      status: "True",
      reason: "ResourcesProgressing",
      observedGeneration: w.metadata.generation,
    });
    expect(cond(rolling.conditions, "Degraded")?.status).toBe("False");
    expect(rolling.resourceStatus.manifests[0]?.statusFeedback.values[0]).toEqual({ name: "ReadyReplicas", fieldValue: { type: "Integer", integer: 1 } });
    await setStatus({
      updatedReplicas: 1,
      conditions: [{ type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded", message: 'ReplicaSet "web-x" has timed out progressing.' }],
    });
    const stuck = status(await c.sync(), "w");
    expect(cond(stuck.conditions, "Degraded")).toMatchObject({ status: "True", reason: "ProgressDeadlineExceeded" });
    expect(cond(stuck.conditions, "Progressing")?.status).toBe("False");
  });

  it("an unknown kind fails that manifest only: Applied False, Available Unknown, the rest applied", async () => {
    const { kc, dyn } = await sim();
    const c = controller(kc);
    const s = status(
      (c.setWorks([work("w", [{ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w1" } }, configMap("ok", { a: "1" })])]), await c.sync()),
      "w",
    );
    const [widget, cm] = s.resourceStatus.manifests;
    expect(cond(widget?.conditions, "Applied")).toMatchObject({ status: "False", reason: "AppliedManifestFailed" });
    expect(cond(widget?.conditions, "Applied")?.message).toMatch(/no matches for kind "Widget"/);
    expect(cond(widget?.conditions, "Available")).toMatchObject({ status: "Unknown", reason: "IncompleteResourceMeta" });
    expect(cond(cm?.conditions, "Applied")?.status).toBe("True");
    expect(await getOrNull(dyn, ref(CM, "default", "ok"))).not.toBeNull();
    expect(cond(s.conditions, "Available")?.status).toBe("Unknown");
  });
});

// ---------------------------------------------------------------------------------------------
// the loop against a real hub (`wrangler dev`)

const FAST = { acceptancePollMs: 20, backoffBaseMs: 10, backoffCapMs: 40, healthCheckPeriodMs: 1_000, healthRecheckMs: 200, requestTimeoutMs: 5_000 };
/**
 * The lease (seconds) the loop tests accept their clusters with: the poll transport learns of a
 * works change at the next heartbeat, so a change reaches the agent within 1.25 s.
 */
const SHORT_LEASE = { leaseDurationSeconds: 1 };
const MANAGED_CLUSTERS = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
const MERGE_PATCH = "application/merge-patch+json";
const hubWorks = (cluster: string) => `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks`;
/** A feedback rule reading the ConfigMap's annotation `mark` (set on the member cluster by the tests, never drift). */
const markFeedback = (name: string): ManifestConfig => ({
  resourceIdentifier: { group: "", resource: "configmaps", name, namespace: "default" },
  feedbackRules: [{ type: "JSONPaths", jsonPaths: [{ name: "mark", path: ".metadata.annotations.mark" }] }],
});
/** The `mark` feedback value of the first manifest in a hub ManifestWork's status. */
const markOf = (w: Json): string | undefined =>
  w?.status?.resourceStatus?.manifests?.[0]?.statusFeedback?.values?.find((v: Json) => v.name === "mark")?.fieldValue?.string;
/** Applied True at the work's current generation, as the hub stores it. */
const appliedAtGeneration = (w: Json): boolean => {
  const c = cond(w?.status?.conditions, "Applied");
  return c?.status === "True" && c.observedGeneration === w.metadata.generation;
};

describe("work loop against a real hub (wrangler dev)", () => {
  let hub: Hub;
  beforeAll(async () => {
    hub = await startHub();
  }, 120_000);
  afterAll(async () => {
    await hub?.stop();
  });

  async function createWork(cluster: string, name: string, manifests: unknown[], extra: Partial<ManifestWork["spec"]> = {}): Promise<Json> {
    const r = await admin(hub, "POST", hubWorks(cluster), {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name },
      spec: { workload: { manifests }, ...extra },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body;
  }
  async function getWork(cluster: string, name: string): Promise<Json | undefined> {
    const r = await admin(hub, "GET", `${hubWorks(cluster)}/${name}`);
    if (r.status === 404) return undefined;
    expect(r.status).toBe(200);
    return r.body;
  }
  async function deleteWork(cluster: string, name: string): Promise<void> {
    const r = await admin(hub, "DELETE", `${hubWorks(cluster)}/${name}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await until(async () => (await getWork(cluster, name)) === undefined, 30_000, `work ${name} to be gone from the hub`);
  }
  /** Deletes a work and removes its finalizers by hand: the agent is not asked. */
  async function forceDeleteWork(cluster: string, name: string): Promise<void> {
    const r = await admin(hub, "DELETE", `${hubWorks(cluster)}/${name}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const p = await admin(hub, "PATCH", `${hubWorks(cluster)}/${name}`, { metadata: { finalizers: null } }, MERGE_PATCH);
    expect([200, 404]).toContain(p.status);
    await until(async () => (await getWork(cluster, name)) === undefined, 30_000, `work ${name} to be gone from the hub`);
  }
  async function waitForRegistration(cluster: string): Promise<void> {
    await until(async () => (await admin(hub, "GET", `${MANAGED_CLUSTERS}/${cluster}`)).status === 200, 30_000, `${cluster} to register`);
  }
  async function accept(cluster: string, spec: Record<string, unknown> = {}): Promise<void> {
    const r = await admin(hub, "PATCH", `${MANAGED_CLUSTERS}/${cluster}`, { spec: { hubAcceptsClient: true, ...spec } }, MERGE_PATCH);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  }
  /** Sets the annotation `mark` on ConfigMaps of the member cluster (what the works' feedback reads). */
  async function mark(dyn: JsonClient, names: string[], value: string): Promise<void> {
    for (const name of names) {
      const cm = await dyn.get(ref(CM, "default", name));
      await dyn.replace(ref(CM, "default", name), { ...cm, metadata: { ...cm.metadata, annotations: { ...cm.metadata.annotations, mark: value } } }, "test");
    }
  }
  /**
   * Marks the probe work's ConfigMap and waits for the hub to hold that value: every sync pass
   * that started before the call has then reported (passes run one after another).
   */
  async function syncBarrier(cluster: string, dyn: JsonClient, probe: string, value: string, others: string[] = []): Promise<void> {
    await mark(dyn, [...others, probe], value);
    await until(async () => markOf(await getWork(cluster, probe)) === value, 30_000, `the probe's feedback ${value} on the hub`);
    await hubLogBarrier();
  }
  /**
   * The hub (wrangler) logs one line per request, in the order the answers complete. A request
   * sent now and seen in the log means every request answered before it is in the log too.
   */
  async function hubLogBarrier(): Promise<void> {
    const marker = `/log-barrier/${randomUUID()}`;
    await admin(hub, "GET", marker);
    await until(() => hub.output().includes(marker), 15_000, "the hub's request log");
  }
  /** The hub's log lines of the agent's status reports for one work (`PUT ... <code> <text>`). */
  const statusPuts = (cluster: string, work: string): string[] =>
    hub
      .output()
      .split("\n")
      .filter((l) => l.includes(`PUT /agent/v1/clusters/${cluster}/works/${work}/status `));

  it("fetches works when the heartbeat's ETag changed, applies them, reports status only when it changed, repairs drift, removes deleted works, and leaves clean", async () => {
    const cluster = "loop-main";
    const { kc, dyn } = await sim();
    const token = await createBootstrapToken(hub);
    const { log, lines } = memoryLogger();
    const a = await startAgent({
      hubUrl: hub.url,
      clusterName: cluster,
      bootstrapToken: token,
      kubeConfig: kc,
      logger: log,
      timing: FAST,
      statusSyncIntervalSeconds: 0.1,
      transport: "poll",
    });
    cleanups.push(() => a.stop());
    await waitForRegistration(cluster);
    await accept(cluster, SHORT_LEASE);
    await until(() => a.state() === "heartbeating", 30_000, "the agent to be accepted");

    // Created while the agent heartbeats: applied, and the status reported at the work's generation.
    const created = await createWork(cluster, "w", [configMap("cfg", { a: "1" }), configMap("kept", { a: "1" })], {
      deleteOption: {
        propagationPolicy: "SelectivelyOrphan",
        selectivelyOrphans: { orphaningRules: [{ resource: "configmaps", name: "kept", namespace: "default" }] },
      },
    });
    await createWork(cluster, "probe", [configMap("probe", { a: "1" })], { manifestConfigs: [markFeedback("probe")] });
    const first = await until(
      async () => {
        const w = await getWork(cluster, "w");
        return appliedAtGeneration(w) && w;
      },
      30_000,
      "work w's status on the hub",
    );
    expect(first.metadata.uid).toBe(created.metadata.uid);
    expect(cond(first.status.conditions, "Applied")).toMatchObject({ status: "True", observedGeneration: created.metadata.generation });
    expect(cond(first.status.conditions, "Available")).toMatchObject({ status: "True", observedGeneration: created.metadata.generation });
    expect(first.status.resourceStatus.manifests.map((m: Json) => m.resourceMeta.name)).toEqual(["cfg", "kept"]);
    expect((await dyn.get(ref(CM, "default", "cfg"))).data.a).toBe("1");
    expect((await dyn.get(ref(CM, "default", "kept"))).data.a).toBe("1");
    // The probe work may have come with the next heartbeat's ETag, after w's.
    await until(async () => appliedAtGeneration(await getWork(cluster, "probe")), 30_000, "the probe work's status on the hub");

    // Drift: repaired by a later sync pass, whose status is the same, so it is not reported again
    // (a status write would bump the work's resourceVersion on the hub).
    // The hub's request log counts the reports: an identical status write would not change the
    // resourceVersion, the log shows it anyway.
    await syncBarrier(cluster, dyn, "probe", "before-drift");
    const before = await getWork(cluster, "w");
    const putsBefore = statusPuts(cluster, "w");
    expect(putsBefore.length).toBeGreaterThanOrEqual(1);
    expect(putsBefore.every((l) => / 200 /.test(l))).toBe(true);
    const cfgUid = (await dyn.get(ref(CM, "default", "cfg"))).metadata.uid;
    await dyn.delete(ref(CM, "default", "cfg"));
    const repaired = await until(async () => await getOrNull(dyn, ref(CM, "default", "cfg")), 15_000, "drift repair");
    expect(repaired.metadata.uid).not.toBe(cfgUid);
    await syncBarrier(cluster, dyn, "probe", "after-drift");
    const after = await getWork(cluster, "w");
    expect(statusPuts(cluster, "w")).toHaveLength(putsBefore.length);
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(after.status).toEqual(before.status);

    // A new generation is applied and reported.
    const patched = await admin(
      hub,
      "PATCH",
      `${hubWorks(cluster)}/w`,
      { spec: { workload: { manifests: [configMap("cfg", { a: "2" }), configMap("kept", { a: "1" })] } } },
      MERGE_PATCH,
    );
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.metadata.generation).toBe(created.metadata.generation + 1);
    await until(async () => appliedAtGeneration(await getWork(cluster, "w")), 30_000, "generation 2 reported");
    expect((await dyn.get(ref(CM, "default", "cfg"))).data.a).toBe("2");

    // A work deleted on the hub: the agent removes what it applied.
    await deleteWork(cluster, "probe");
    await until(async () => (await getOrNull(dyn, ref(CM, "default", "probe"))) === null, 30_000, "the probe's ConfigMap to go");
    await until(() => lines.some((l) => /work probe deleted on the hub: deleted 1/.test(l)), 15_000, "the deletion's log line");
    expect(await getOrNull(dyn, ref(CM, AGENT_NS, recordName("probe")))).toBeNull();

    // Leave: deleting the ManagedCluster. What the work applied goes (except the orphaned one),
    // then left, the hub forgets the cluster, the Secret is deleted, done.
    expect((await admin(hub, "DELETE", `${MANAGED_CLUSTERS}/${cluster}`)).status).toBe(200);
    await a.done;
    expect(a.state()).toBe("left");
    await until(async () => (await admin(hub, "GET", `${MANAGED_CLUSTERS}/${cluster}`)).status === 404, 30_000, "the cluster to be gone from the hub");
    expect((await admin(hub, "GET", hubWorks(cluster))).body.items).toEqual([]);
    expect(await getOrNull(dyn, ref(CM, "default", "cfg"))).toBeNull();
    expect(await getOrNull(dyn, ref(CM, "default", "kept"))).not.toBeNull();
    expect(await getOrNull(dyn, ref(CM, AGENT_NS, recordName("w")))).toBeNull();
    expect(await loadCredentials(kc, AGENT_NS)).toBeUndefined();
    expect(lines.filter((l) => /left the hub: deleted 1 applied resource\(s\), orphaned 1/.test(l))).toHaveLength(1);
  });

  it("stops reporting a work the hub answers 404 (deleted) or 409 (deleted and created again) for", async () => {
    const cluster = "loop-stale";
    const { kc, dyn } = await sim();
    const token = await createBootstrapToken(hub);
    const { log, lines } = memoryLogger();
    // One works fetch after acceptance (the first heartbeat's ETag), then none for the rest of the
    // test (a lease of an hour: no more heartbeats, so no new ETag): the agent keeps the works it
    // saw while the hub deletes and re-creates them.
    const a = await startAgent({
      hubUrl: hub.url,
      clusterName: cluster,
      bootstrapToken: token,
      kubeConfig: kc,
      logger: log,
      timing: FAST,
      statusSyncIntervalSeconds: 0.1,
      transport: "poll",
    });
    cleanups.push(() => a.stop());
    await waitForRegistration(cluster);
    for (const name of ["gone", "replaced", "probe"]) await createWork(cluster, name, [configMap(name, { a: "1" })], { manifestConfigs: [markFeedback(name)] });
    await accept(cluster, { leaseDurationSeconds: 3600 });
    for (const name of ["gone", "replaced", "probe"])
      await until(async () => appliedAtGeneration(await getWork(cluster, name)), 30_000, `work ${name}'s status on the hub`);

    // The hub deletes one work and deletes and re-creates the other (a new uid); the agent does
    // not know (an admin removes the cleanup finalizer by hand, as one may in OCM). A change of
    // their status (the feedback) makes it report with the old uids.
    await forceDeleteWork(cluster, "gone");
    const oldUid = (await getWork(cluster, "replaced")).metadata.uid;
    await forceDeleteWork(cluster, "replaced");
    const recreated = await createWork(cluster, "replaced", [configMap("replaced", { a: "1" })], { manifestConfigs: [markFeedback("replaced")] });
    expect(recreated.metadata.uid).not.toBe(oldUid);
    await syncBarrier(cluster, dyn, "probe", "1", ["gone", "replaced"]);
    const gone = new RegExp(`work gone is gone on the hub \\(404\\); no more status reports`);
    const replaced = new RegExp(`work replaced is replaced on the hub \\(409\\); no more status reports for uid ${oldUid}`);
    // wrangler prints its request line after the answer has left: wait for both sides' lines.
    const hubAnswered = () => statusPuts(cluster, "gone").some((l) => / 404 /.test(l)) && statusPuts(cluster, "replaced").some((l) => / 409 /.test(l));
    await until(() => lines.some((l) => gone.test(l)) && lines.some((l) => replaced.test(l)) && hubAnswered(), 15_000, "the 404 and 409 log lines");
    expect(statusPuts(cluster, "gone").filter((l) => / 404 /.test(l))).toHaveLength(1);
    expect(statusPuts(cluster, "replaced").filter((l) => / 409 /.test(l))).toHaveLength(1);
    const goneCount = statusPuts(cluster, "gone").length;
    const replacedCount = statusPuts(cluster, "replaced").length;

    // Further changes are not reported for those uids (the hub sees no more reports for either
    // work, one agent line each), and the re-created work still has no status from the old one.
    await syncBarrier(cluster, dyn, "probe", "2", ["gone", "replaced"]);
    await syncBarrier(cluster, dyn, "probe", "3", ["gone", "replaced"]);
    expect(statusPuts(cluster, "gone")).toHaveLength(goneCount);
    expect(statusPuts(cluster, "replaced")).toHaveLength(replacedCount);
    expect(lines.filter((l) => gone.test(l))).toHaveLength(1);
    expect(lines.filter((l) => replaced.test(l))).toHaveLength(1);
    const stillNew = await getWork(cluster, "replaced");
    expect(stillNew.metadata.uid).toBe(recreated.metadata.uid);
    expect(stillNew.metadata.resourceVersion).toBe(recreated.metadata.resourceVersion);
    expect(stillNew.status?.conditions ?? []).toEqual([]);
    // The agent has not fetched since: the objects of both works are still on the member cluster.
    expect(await getOrNull(dyn, ref(CM, "default", "gone"))).not.toBeNull();
    expect(a.state()).toBe("heartbeating");
  });

  it("the agent process exits 0 after leaving", async () => {
    const cluster = "loop-cli";
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotilla-work-cli-"));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const sim = await startSimulatedCluster({ statePath: path.join(dir, "state.json") });
    cleanups.push(() => sim.close());
    const kc = kubeConfigFromYaml(sim.kubeconfigYaml);
    const dyn = jsonClient(kc);
    const token = await createBootstrapToken(hub);
    const child = spawn(
      process.execPath,
      [
        path.join(root, "agent/bin/flotilla-agent.js"),
        "--hub-url",
        hub.url,
        "--cluster-name",
        cluster,
        "--bootstrap-token",
        token,
        "--kubeconfig",
        sim.kubeconfigPath,
        "--status-sync-interval",
        "0.2",
      ],
      {
        cwd: root,
        env: { ...process.env, FLOTILLA_BOOTSTRAP_TOKEN: "" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    cleanups.push(() => void child.kill());
    await waitForRegistration(cluster);
    // Accepted with a short lease: the work, and then the leave, reach the agent at its next heartbeat.
    await accept(cluster, SHORT_LEASE);
    await createWork(cluster, "w", [configMap("cfg", { a: "1" })]);
    await until(async () => (await getOrNull(dyn, ref(CM, "default", "cfg"))) !== null, 30_000, "the agent to apply the work");
    await until(async () => appliedAtGeneration(await getWork(cluster, "w")), 30_000, "the work's status on the hub");
    expect((await admin(hub, "DELETE", `${MANAGED_CLUSTERS}/${cluster}`)).status).toBe(200);
    expect(await exited).toBe(0);
    expect(out).toMatch(/left the hub: deleted 1 applied resource\(s\), orphaned 0/);
    await until(async () => (await admin(hub, "GET", `${MANAGED_CLUSTERS}/${cluster}`)).status === 404, 30_000, "the cluster to be gone from the hub");
    expect(await getOrNull(dyn, ref(CM, "default", "cfg"))).toBeNull();
    expect(await getOrNull(dyn, ref({ group: "", version: "v1", resource: "secrets" }, AGENT_NS, CREDENTIALS_SECRET_NAME))).toBeNull();
  });
});
