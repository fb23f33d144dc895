// Karmada's PropagationPolicy and ClusterPropagationPolicy on the hub (docs/karmada.md): validation
// and defaulting as Karmada's webhooks (cases from karmada-io/karmada pkg/util/validation
// validation_test.go and pkg/webhook/propagationpolicy validating_test.go), what is not built
// refused with 422 naming the field, the detector's claims (priority, preemption), the scheduler
// (affinity by names, labels, fields and exclusions, tolerations, spread by cluster), and the
// controller in workerd over the HTTP API: works per cluster, ResourceBindings with Karmada's
// status, deletion (Karmada keeps a deleted policy's bindings and works until the templates go or
// another policy claims them).
import { describe, expect, it, vi } from "vitest";
import type { KindDefinition } from "../../src/k8s/kind.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { findKindByKind } from "../../src/kinds/index.ts";
import { scheduleKarmada, type KarmadaCluster } from "../../src/fleet/karmada/schedule.ts";
import { claimerOf, type PolicyView } from "../../src/fleet/karmada/select.ts";
import type { PropagationSpec } from "../../src/kinds/karmada.ts";
import { call, condition, createCluster, createNamespaces, merge } from "./helpers.ts";
import { CPP, cpp, DEPLOY, PP, pp, WG } from "./karmada-kit.ts";

const RB = (ns: string, name = "") => `${WG}/namespaces/${ns}/resourcebindings${name ? `/${name}` : ""}`;
const WORKS = "/apis/work.open-cluster-management.io/v1/manifestworks";
const WORK = (cluster: string, name: string) => `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks/${name}`;

// ---------------------------------------------------------------------------------------------
// Validation and defaulting (Karmada's webhooks).

describe("PropagationPolicy validation, as Karmada's webhooks", () => {
  it("defaults a valid policy as the mutating webhook and the CRD do", async () => {
    await createNamespaces("kv");
    const r = await call(
      "POST",
      PP("kv"),
      pp("valid", {
        resourceSelectors: [DEPLOY],
        placement: { clusterAffinity: { clusterNames: ["member1"] }, spreadConstraints: [{ maxGroups: 2 }] },
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.spec).toMatchObject({
      resourceSelectors: [{ ...DEPLOY, namespace: "kv" }],
      placement: { spreadConstraints: [{ spreadByField: "cluster", maxGroups: 2, minGroups: 1 }] },
      priority: 0,
      preemption: "Never",
      conflictResolution: "Abort",
      schedulerName: "default-scheduler",
    });
    expect(r.body.metadata.labels["propagationpolicy.karmada.io/permanent-id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.body.metadata.finalizers).toContain("karmada.io/propagation-policy-controller");
    // The permanent id is immutable (Handle_PermanentIDLabelUpdated_DeniesAdmission).
    const changed = await call("PATCH", PP("kv", "valid"), { metadata: { labels: { "propagationpolicy.karmada.io/permanent-id": "other" } } }, merge);
    expect(changed.status).toBe(422);
    expect(changed.body.message).toContain("label propagationpolicy.karmada.io/permanent-id is immutable, it can only be set by the system during creation");
    // A ClusterPropagationPolicy gets its own label and finalizer, and keeps its selectors' namespaces.
    const c = await call("POST", CPP(), cpp("valid-cpp", { resourceSelectors: [{ apiVersion: "v1", kind: "Namespace", name: "kv" }] }));
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    expect(c.body.metadata.labels["clusterpropagationpolicy.karmada.io/permanent-id"]).toBeTruthy();
    expect(c.body.metadata.finalizers).toContain("karmada.io/cluster-propagation-policy-controller");
    expect(c.body.spec.resourceSelectors[0].namespace).toBeUndefined();
    const table = await call("GET", PP("kv"), undefined, { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } });
    expect(table.body.columnDefinitions.map((d: { name: string }) => d.name)).toEqual(["Name", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"]);
    const cells = table.body.rows.find((r: { cells: unknown[] }) => r.cells[0] === "valid").cells;
    expect([cells[1], String(cells[2])]).toEqual(["Abort", "0"]);
  });

  const invalid: [string, Record<string, unknown>, string, string][] = [
    [
      "clusterAffinity.fieldSelector has unsupported key",
      { placement: { clusterAffinity: { fieldSelector: { matchExpressions: [{ key: "foo", operator: "In", values: ["fooCloud"] }] } } } },
      "spec.placement.clusterAffinity.fieldSelector",
      'unsupported key "foo", must be provider, region, or zone',
    ],
    [
      "clusterAffinity.fieldSelector has unsupported operator",
      { placement: { clusterAffinity: { fieldSelector: { matchExpressions: [{ key: "provider", operator: "Exists", values: ["fooCloud"] }] } } } },
      "spec.placement.clusterAffinity.fieldSelector",
      'unsupported operator "Exists", must be In or NotIn',
    ],
    [
      "clusterAffinities cannot co-exist with clusterAffinity",
      { placement: { clusterAffinity: { clusterNames: ["m1"] }, clusterAffinities: [{ affinityName: "group1", clusterNames: ["m1"] }] } },
      "spec.placement",
      "clusterAffinities cannot co-exist with clusterAffinity",
    ],
    [
      "spreadConstraint spreadByLabel co-exist with spreadByField",
      { placement: { spreadConstraints: [{ spreadByField: "cluster", spreadByLabel: "foo" }] } },
      "spec.placement.spreadConstraints[0]",
      "spreadByLabel should not co-exist with spreadByField",
    ],
    [
      "spreadConstraint maxGroups lower than minGroups",
      { placement: { spreadConstraints: [{ maxGroups: 1, minGroups: 2 }] } },
      "spec.placement.spreadConstraints[0]",
      "maxGroups lower than minGroups is not allowed",
    ],
    [
      "spreadConstraint maxGroups lower than 0",
      { placement: { spreadConstraints: [{ maxGroups: -1 }] } },
      "spec.placement.spreadConstraints[0]",
      "maxGroups lower than 0 is not allowed",
    ],
    [
      "spreadConstraint minGroups lower than 0",
      { placement: { spreadConstraints: [{ minGroups: -1 }] } },
      "spec.placement.spreadConstraints[0]",
      "minGroups lower than 0 is not allowed",
    ],
    [
      "spreadConstraint has two cluster spread constraints",
      { placement: { spreadConstraints: [{ spreadByField: "cluster" }, { spreadByField: "cluster" }] } },
      "spec.placement.spreadConstraints",
      "multiple cluster spread constraints are not allowed",
    ],
    [
      "spreadConstraint spreadByFieldCluster must be included if using spreadByField",
      { placement: { spreadConstraints: [{ spreadByField: "region" }] } },
      "spec.placement.spreadConstraints",
      "the cluster spread constraint must be enabled in one of the constraints in case of SpreadByField is enabled",
    ],
    [
      "resourceSelector name is empty when preemption is enabled",
      { preemption: "Always" },
      "spec.resourceSelectors[0].name",
      "name cannot be empty if preemption is Always, the empty name may cause unexpected resources preemption",
    ],
    [
      "toleration with Lt operator is invalid",
      { placement: { clusterTolerations: [{ key: "k", operator: "Lt", value: "5" }] } },
      "spec.placement.clusterTolerations[0].operator",
      "Unsupported value",
    ],
  ];
  for (const [name, spec, field, message] of invalid) {
    it(`refuses: ${name}`, async () => {
      await createNamespaces("kv2");
      const r = await call("POST", PP("kv2"), pp("bad", { resourceSelectors: [{ apiVersion: "apps/v1", kind: "Deployment" }], ...spec }));
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.details.causes.map((c: { field: string }) => c.field)).toContain(field);
      expect(r.body.message).toContain(message);
      expect((await call("GET", PP("kv2", "bad"))).status).toBe(404);
    });
  }

  it("refuses a selector of another namespace (Handle_ResourceSelectorNamespaceMismatch_DeniesAdmission)", async () => {
    await createNamespaces("ns-1");
    const r = await call("POST", PP("ns-1"), pp("mismatch", { resourceSelectors: [{ ...DEPLOY, namespace: "ns-2" }] }));
    expect(r.status).toBe(422);
    expect(r.body.message).toContain(
      'spec.resourceSelectors[0].namespace: Invalid value: "ns-2": namespace of resource selector must be the same as the namespace of the policy',
    );
  });

  const notBuilt: [string, Record<string, unknown>, string][] = [
    [
      "replica division (replicaScheduling defaults to Divided)",
      { placement: { replicaScheduling: {} } },
      "spec.placement.replicaScheduling.replicaSchedulingType",
    ],
    [
      "Divided with weights",
      { placement: { replicaScheduling: { replicaSchedulingType: "Divided", weightPreference: { staticWeightList: [] } } } },
      "spec.placement.replicaScheduling.replicaSchedulingType",
    ],
    ["clusterAffinities", { placement: { clusterAffinities: [{ affinityName: "a", clusterNames: ["m1"] }] } }, "spec.placement.clusterAffinities"],
    [
      "spreadByField region",
      { placement: { spreadConstraints: [{ spreadByField: "cluster" }, { spreadByField: "region" }] } },
      "spec.placement.spreadConstraints[1].spreadByField",
    ],
    ["spreadByLabel", { placement: { spreadConstraints: [{ spreadByLabel: "zone" }] } }, "spec.placement.spreadConstraints[0].spreadByLabel"],
    ["propagateDeps", { propagateDeps: true }, "spec.propagateDeps"],
    ["failover", { failover: { cluster: { purgeMode: "Directly" } } }, "spec.failover"],
    ["conflictResolution: Overwrite", { conflictResolution: "Overwrite" }, "spec.conflictResolution"],
    ["dependentOverrides", { dependentOverrides: ["op"] }, "spec.dependentOverrides"],
    ["suspension", { suspension: { dispatching: true } }, "spec.suspension"],
    ["activationPreference: Lazy", { activationPreference: "Lazy" }, "spec.activationPreference"],
    ["another scheduler", { schedulerName: "mine" }, "spec.schedulerName"],
    ["workloadAffinity", { placement: { workloadAffinity: { affinity: { groupByLabelKey: "app" } } } }, "spec.placement.workloadAffinity"],
  ];
  for (const [name, spec, field] of notBuilt) {
    it(`refuses what is not built with 422 naming it: ${name}`, async () => {
      await createNamespaces("kv3");
      const r = await call("POST", PP("kv3"), pp("nb", { resourceSelectors: [DEPLOY], ...spec }));
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.details.causes.map((c: { field: string }) => c.field)).toContain(field);
      expect((await call("GET", PP("kv3", "nb"))).status).toBe(404);
    });
  }

  it("accepts replicaScheduling Duplicated, and refuses what the CRD's schema refuses", async () => {
    await createNamespaces("kv4");
    const ok = await call(
      "POST",
      PP("kv4"),
      pp("dup", { resourceSelectors: [DEPLOY], placement: { replicaScheduling: { replicaSchedulingType: "Duplicated" } } }),
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect((await call("POST", PP("kv4"), pp("none", { resourceSelectors: [] }))).status).toBe(422);
    expect((await call("POST", PP("kv4"), pp("enum", { resourceSelectors: [DEPLOY], preemption: "Sometimes" }))).status).toBe(422);
    expect((await call("POST", PP("kv4"), pp("kindless", { resourceSelectors: [{ apiVersion: "v1" }] }))).status).toBe(422);
    expect((await call("POST", PP("kv4"), { ...pp("status", { resourceSelectors: [DEPLOY] }), status: {} })).status).toBe(400);
  });

  it("serves ResourceBindings read-only", async () => {
    await createNamespaces("kv5");
    const r = await call("POST", RB("kv5"), {
      apiVersion: "work.karmada.io/v1alpha2",
      kind: "ResourceBinding",
      metadata: { name: "x" },
      spec: { resource: { apiVersion: "v1", kind: "ConfigMap", name: "x" } },
    });
    expect(r.status).toBe(405);
  });
});

// ---------------------------------------------------------------------------------------------
// Claims (Karmada's detector), pure.

const fakeDef = findKindByKind("apps", "v1", "Deployment") as KindDefinition;
const dep = (name: string, labels: Record<string, string> = {}, annotations: Record<string, string> = {}): KubeObject =>
  ({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name, namespace: "app", labels, annotations } }) as unknown as KubeObject;
const view = (namespace: string, name: string, spec: PropagationSpec): PolicyView => ({ ref: { namespace, name }, id: `${namespace}.${name}`, spec });

describe("which policy claims a resource (Karmada's detector)", () => {
  const all = { resourceSelectors: [{ apiVersion: "apps/v1", kind: "Deployment" }] };
  const byLabel = { resourceSelectors: [{ apiVersion: "apps/v1", kind: "Deployment", labelSelector: { matchLabels: { app: "web" } } }] };
  const byName = { resourceSelectors: [{ apiVersion: "apps/v1", kind: "Deployment", name: "web" }] };
  it("picks the highest explicit priority, then name over label selector over all, then the smallest name", () => {
    const d = dep("web", { app: "web" });
    expect(claimerOf(fakeDef, d, [view("app", "b-all", all), view("app", "a-label", byLabel)])?.ref.name).toBe("a-label");
    expect(claimerOf(fakeDef, d, [view("app", "z-name", byName), view("app", "a-label", byLabel)])?.ref.name).toBe("z-name");
    expect(claimerOf(fakeDef, d, [view("app", "z-all", { ...all, priority: 5 }), view("app", "a-name", byName)])?.ref.name).toBe("z-all");
    expect(claimerOf(fakeDef, d, [view("app", "b", all), view("app", "a", all)])?.ref.name).toBe("a");
    // Another namespace's PropagationPolicy never matches; a ClusterPropagationPolicy only when no PropagationPolicy does.
    expect(claimerOf(fakeDef, d, [view("other", "x", all)])).toBeNull();
    expect(claimerOf(fakeDef, d, [view("", "cluster", { ...all, priority: 100 }), view("app", "ns", all)])?.ref.name).toBe("ns");
    expect(claimerOf(fakeDef, d, [view("", "cluster", all)])?.ref).toEqual({ namespace: "", name: "cluster" });
    expect(claimerOf(fakeDef, dep("api"), [view("app", "a-label", byLabel)])).toBeNull();
  });
  it("keeps a claim against a later, higher-priority policy unless it preempts", () => {
    const claimed = dep(
      "web",
      { app: "web", "propagationpolicy.karmada.io/permanent-id": "app.low" },
      {
        "propagationpolicy.karmada.io/namespace": "app",
        "propagationpolicy.karmada.io/name": "low",
      },
    );
    const low = view("app", "low", all);
    expect(claimerOf(fakeDef, claimed, [low, view("app", "high", { ...byName, priority: 10 })])?.ref.name).toBe("low");
    expect(claimerOf(fakeDef, claimed, [low, view("app", "high", { ...byName, priority: 10, preemption: "Always" })])?.ref.name).toBe("high");
    // Preemption needs a higher priority; a gone claimer's object is matched afresh.
    expect(claimerOf(fakeDef, claimed, [low, view("app", "same", { ...byName, preemption: "Always" })])?.ref.name).toBe("low");
    expect(claimerOf(fakeDef, claimed, [view("app", "other", all)])?.ref.name).toBe("other");
    // A PropagationPolicy preempts a ClusterPropagationPolicy's claim whatever the priorities.
    const byCpp = dep("web", { "clusterpropagationpolicy.karmada.io/permanent-id": "x" }, { "clusterpropagationpolicy.karmada.io/name": "c" });
    expect(claimerOf(fakeDef, byCpp, [view("", "c", { ...all, priority: 50 }), view("app", "p", byName)])?.ref.name).toBe("c");
    expect(claimerOf(fakeDef, byCpp, [view("", "c", { ...all, priority: 50 }), view("app", "p", { ...byName, preemption: "Always" })])?.ref.name).toBe("p");
  });
});

// ---------------------------------------------------------------------------------------------
// Scheduling (Karmada's scheduler, Duplicated), pure.

const cl = (name: string, extra: Partial<KarmadaCluster> = {}): KarmadaCluster => ({ name, labels: {}, zones: [], taints: [], leaving: false, ...extra });
const none = new Set<string>();

describe("scheduling a Duplicated placement (Karmada's scheduler)", () => {
  const fleet = [
    cl("m1", { labels: { env: "prod" }, provider: "aws", region: "us-east-1", zones: ["us-east-1a"] }),
    cl("m2", { labels: { env: "prod" }, provider: "gcp", region: "eu-west-1", zones: ["eu-west-1b"] }),
    cl("m3", { labels: { env: "dev" }, provider: "aws", region: "us-east-1" }),
    cl("gone", { leaving: true }),
  ];
  it("picks every feasible cluster, filtered by names, exclusions, labels and fields", () => {
    expect(scheduleKarmada({}, fleet, none).clusters).toEqual(["m1", "m2", "m3"]);
    expect(scheduleKarmada({ clusterAffinity: { clusterNames: ["m1", "m3", "gone"] } }, fleet, none).clusters).toEqual(["m1", "m3"]);
    expect(scheduleKarmada({ clusterAffinity: { exclude: ["m2"] } }, fleet, none).clusters).toEqual(["m1", "m3"]);
    expect(scheduleKarmada({ clusterAffinity: { labelSelector: { matchLabels: { env: "prod" } }, exclude: ["m1"] } }, fleet, none).clusters).toEqual(["m2"]);
    const field = (key: string, operator: string, values: string[]) => ({
      clusterAffinity: { fieldSelector: { matchExpressions: [{ key, operator, values }] } },
    });
    expect(scheduleKarmada(field("provider", "In", ["aws"]), fleet, none).clusters).toEqual(["m1", "m3"]);
    expect(scheduleKarmada(field("region", "NotIn", ["us-east-1"]), fleet, none).clusters).toEqual(["m2"]);
    expect(scheduleKarmada(field("zone", "In", ["eu-west-1b"]), fleet, none).clusters).toEqual(["m2"]);
    // A cluster without zones matches no zone In, and every zone NotIn.
    expect(scheduleKarmada(field("zone", "NotIn", ["us-east-1a"]), fleet, none).clusters).toEqual(["m2", "m3"]);
  });
  it("reports Karmada's FitError when no cluster fits", () => {
    expect(scheduleKarmada({ clusterAffinity: { clusterNames: ["nowhere"] } }, fleet, none)).toEqual({
      clusters: [],
      error: { reason: "NoClusterFit", message: "0/3 clusters are available: 3 cluster(s) did not match the placement cluster affinity constraint." },
    });
    expect(scheduleKarmada({}, [], none).error?.message).toBe("0/0 clusters are available: no cluster exists.");
  });
  it("filters untolerated NoSelect taints, but not for a cluster the resources are on", () => {
    const tainted = [
      cl("t1", { taints: [{ key: "cluster.open-cluster-management.io/unreachable", effect: "NoSelect" }] }),
      cl("t2", { taints: [{ key: "gpu", value: "true", effect: "PreferNoSelect" }] }),
    ];
    expect(scheduleKarmada({}, tainted, none)).toEqual({ clusters: ["t2"] });
    expect(scheduleKarmada({}, [tainted[0]!], none).error?.message).toBe(
      "0/1 clusters are available: 1 cluster(s) had untolerated taint {cluster.open-cluster-management.io/unreachable:NoSelect}.",
    );
    expect(
      scheduleKarmada({ clusterTolerations: [{ key: "cluster.open-cluster-management.io/unreachable", operator: "Exists" }] }, tainted, none).clusters,
    ).toEqual(["t1", "t2"]);
    expect(
      scheduleKarmada(
        { clusterTolerations: [{ key: "cluster.open-cluster-management.io/unreachable", operator: "Exists", effect: "NoExecute" }] },
        tainted,
        none,
      ).clusters,
    ).toEqual(["t2"]);
    expect(scheduleKarmada({}, tainted, new Set(["t1"])).clusters).toEqual(["t1", "t2"]);
  });
  it("spreads by cluster: at most maxGroups, at least minGroups, the clusters it is on first", () => {
    const spread = (maxGroups: number, minGroups = 1) => ({ spreadConstraints: [{ spreadByField: "cluster", maxGroups, minGroups }] });
    expect(scheduleKarmada(spread(2), fleet, none).clusters).toEqual(["m1", "m2"]);
    expect(scheduleKarmada(spread(2), fleet, new Set(["m3"])).clusters).toEqual(["m1", "m3"]);
    expect(scheduleKarmada(spread(5), fleet, none).clusters).toEqual(["m1", "m2", "m3"]);
    expect(scheduleKarmada(spread(5, 4), fleet, none).error).toEqual({
      reason: "SchedulerError",
      message: "failed to select clusters: the number of feasible clusters is less than spreadConstraint.MinGroups",
    });
  });
});

// ---------------------------------------------------------------------------------------------
// The controller, in workerd.

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function worksOf(policy: string): Promise<Record<string, any>> {
  const r = await call("GET", WORKS);
  expect(r.status).toBe(200);
  return Object.fromEntries(
    r.body.items
      .filter((w: KubeObject) => w.metadata.name.startsWith(`${policy}-`))
      .filter((w: KubeObject) => !w.metadata.deletionTimestamp)
      .map((w: { metadata: { namespace: string } }) => [w.metadata.namespace, w]),
  );
}

/** Reports a work's manifests Applied (and Available), as its agent would. */
async function report(cluster: string, name: string) {
  const w = (await call("GET", WORK(cluster, name))).body;
  const gen = w.metadata.generation;
  const at = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  const cond = (type: string) => ({ type, status: "True", observedGeneration: gen, reason: "Test", message: "", lastTransitionTime: at });
  const manifests = w.spec.workload.manifests.map((m: KubeObject, ordinal: number) => {
    const [group, version] = m.apiVersion.includes("/") ? m.apiVersion.split("/") : ["", m.apiVersion];
    return {
      resourceMeta: {
        ordinal,
        group,
        version,
        kind: m.kind,
        name: m.metadata.name,
        namespace: m.metadata.namespace ?? "",
        resource: `${m.kind.toLowerCase()}s`,
      },
      conditions: [cond("Applied"), cond("Available")],
      ...(m.kind === "Deployment" ? { statusFeedback: { values: [{ name: "readyReplicas", fieldValue: { type: "Integer", integer: 2 } }] } } : {}),
    };
  });
  const r = await call(
    "PATCH",
    `${WORK(cluster, name)}/status`,
    { status: { conditions: [cond("Applied"), cond("Available")], resourceStatus: { manifests } } },
    merge,
  );
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

async function waitFor(check: () => Promise<boolean>, ms = 8000) {
  await vi.waitFor(
    async () => {
      if (!(await check())) throw new Error(`not yet: ${check.toString().slice(0, 160)}`);
    },
    { timeout: ms, interval: 100 },
  );
}

describe("the propagation policy controller", () => {
  it("propagates a Deployment and a ConfigMap to the clusters its affinity picks, reports FullyApplied, and keeps them when the policy goes until claimed or deleted", async () => {
    await createCluster("kar-a", { env: "prod" });
    await createCluster("kar-b", { env: "prod" });
    await createCluster("kar-c", { env: "dev" });
    await createNamespaces("web");
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "nginx", labels: { app: "nginx" } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "nginx" } },
        template: { metadata: { labels: { app: "nginx" } }, spec: { containers: [{ name: "nginx", image: "nginx:1.27" }] } },
      },
    };
    expect((await call("POST", "/apis/apps/v1/namespaces/web/deployments", deployment)).status).toBe(201);
    expect(
      (await call("POST", "/api/v1/namespaces/web/configmaps", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "conf" }, data: { a: "1" } })).status,
    ).toBe(201);
    const created = await call(
      "POST",
      PP("web"),
      pp("nginx", {
        resourceSelectors: [DEPLOY, { apiVersion: "v1", kind: "ConfigMap", name: "conf" }],
        placement: { clusterAffinity: { labelSelector: { matchLabels: { env: "prod" } } } },
      }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);

    // Scheduled on write: works in the two prod clusters, the namespace going with its objects.
    const works = await worksOf("pp.web.nginx");
    expect(Object.keys(works).sort()).toEqual(["kar-a", "kar-b"]);
    const w = works["kar-a"];
    expect(w.metadata.name).toBe("pp.web.nginx-work");
    expect(w.spec.workload.manifests.map((m: KubeObject) => `${m.kind}/${m.metadata.name}`)).toEqual(["Namespace/web", "ConfigMap/conf", "Deployment/nginx"]);
    expect(w.spec.workload.manifests[2].metadata.uid).toBeUndefined();
    expect(w.metadata.annotations).toMatchObject({ "propagationpolicy.karmada.io/namespace": "web", "propagationpolicy.karmada.io/name": "nginx" });
    expect(JSON.parse(w.metadata.annotations["kubernetes-fleet.io/apply-strategy"]).whenToTakeOver).toBe("Never");
    // Born held by OCM's cleanup finalizer, as the agent would hold it (src/work/deletion.ts).
    expect(w.metadata.finalizers).toEqual(["cluster.open-cluster-management.io/manifest-work-cleanup"]);

    // The templates carry the claim, as Karmada's detector writes it.
    const id = created.body.metadata.labels["propagationpolicy.karmada.io/permanent-id"];
    const d = (await call("GET", "/apis/apps/v1/namespaces/web/deployments/nginx")).body;
    expect(d.metadata.labels["propagationpolicy.karmada.io/permanent-id"]).toBe(id);
    expect(d.metadata.annotations).toMatchObject({ "propagationpolicy.karmada.io/name": "nginx", "propagationpolicy.karmada.io/namespace": "web" });

    // One ResourceBinding per template: scheduled, not yet applied.
    let rb = (await call("GET", RB("web", "nginx-deployment"))).body;
    expect(rb.spec).toMatchObject({
      resource: { apiVersion: "apps/v1", kind: "Deployment", namespace: "web", name: "nginx", uid: d.metadata.uid },
      replicas: 2,
      clusters: [
        { name: "kar-a", replicas: 2 },
        { name: "kar-b", replicas: 2 },
      ],
      schedulerName: "default-scheduler",
    });
    expect(rb.metadata.ownerReferences[0]).toMatchObject({ kind: "Deployment", name: "nginx", controller: true });
    expect(condition(rb, "Scheduled")).toMatchObject({ status: "True", reason: "Success", message: "Binding has been scheduled successfully." });
    expect(condition(rb, "FullyApplied")).toMatchObject({ status: "False", reason: "FullyAppliedFailed" });
    expect((await call("GET", RB("web", "conf-configmap"))).status).toBe(200);

    // The agents report: FullyApplied, with each cluster's status.
    await report("kar-a", "pp.web.nginx-work");
    await report("kar-b", "pp.web.nginx-work");
    await waitFor(async () => condition((await call("GET", RB("web", "nginx-deployment"))).body, "FullyApplied")?.status === "True");
    rb = (await call("GET", RB("web", "nginx-deployment"))).body;
    expect(condition(rb, "FullyApplied")).toMatchObject({ reason: "FullyAppliedSuccess", message: "All works have been successfully applied" });
    expect(rb.status.aggregatedStatus).toEqual([
      { clusterName: "kar-a", status: { readyReplicas: 2 }, applied: true, health: "Healthy" },
      { clusterName: "kar-b", status: { readyReplicas: 2 }, applied: true, health: "Healthy" },
    ]);
    const table = await call("GET", RB("web"), undefined, { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } });
    expect(table.body.columnDefinitions.map((c: { name: string }) => c.name)).toEqual(["Name", "SCHEDULED", "FULLYAPPLIED", "AGE"]);

    // A template's change reaches every cluster at once (Karmada has no rolling update).
    expect((await call("PATCH", "/api/v1/namespaces/web/configmaps/conf", { data: { a: "2" } }, merge)).status).toBe(200);
    await waitFor(async () => {
      const ws = await worksOf("pp.web.nginx");
      return ["kar-a", "kar-b"].every((c) => ws[c]?.spec.workload.manifests[1].data.a === "2");
    });

    // A cluster's label changes: the policy follows it.
    expect(
      (await call("PATCH", "/apis/cluster.open-cluster-management.io/v1/managedclusters/kar-b", { metadata: { labels: { env: "dev" } } }, merge)).status,
    ).toBe(200);
    await waitFor(async () => Object.keys(await worksOf("pp.web.nginx")).join() === "kar-a");

    // Deleting the policy keeps what it placed, as Karmada's detector (handlePolicyDeletion): the
    // claim goes from the bindings and the templates; the bindings and the works stay.
    expect((await call("DELETE", PP("web", "nginx"))).status).toBe(200);
    await waitFor(async () => (await call("GET", PP("web", "nginx"))).status === 404);
    const names = (w: { spec: { workload: { manifests: KubeObject[] } } }) => w.spec.workload.manifests.map((m) => `${m.kind}/${m.metadata.name}`);
    let kept = await worksOf("pp.web.nginx");
    expect(Object.keys(kept)).toEqual(["kar-a"]);
    expect(names(kept["kar-a"])).toEqual(["Namespace/web", "ConfigMap/conf", "Deployment/nginx"]);
    const released = (await call("GET", RB("web", "nginx-deployment"))).body;
    expect(released.metadata.labels?.["propagationpolicy.karmada.io/permanent-id"]).toBeUndefined();
    expect(released.metadata.annotations?.["propagationpolicy.karmada.io/name"]).toBeUndefined();
    expect(released.spec.clusters).toEqual([{ name: "kar-a", replicas: 2 }]);
    expect((await call("GET", RB("web", "conf-configmap"))).status).toBe(200);
    const after = (await call("GET", "/apis/apps/v1/namespaces/web/deployments/nginx")).body;
    expect(after.metadata.labels?.["propagationpolicy.karmada.io/permanent-id"]).toBeUndefined();
    expect(after.metadata.annotations?.["propagationpolicy.karmada.io/name"]).toBeUndefined();

    // Another policy claims the Deployment: its works carry it, the deleted policy's work drops it.
    const next = await call("POST", PP("web"), pp("next", { resourceSelectors: [DEPLOY], placement: { clusterAffinity: { clusterNames: ["kar-c"] } } }));
    expect(next.status, JSON.stringify(next.body)).toBe(201);
    await waitFor(async () => (await worksOf("pp.web.next"))["kar-c"] !== undefined);
    expect(names((await worksOf("pp.web.next"))["kar-c"])).toEqual(["Namespace/web", "Deployment/nginx"]);
    await waitFor(async () => names((await worksOf("pp.web.nginx"))["kar-a"]).join() === "Namespace/web,ConfigMap/conf");
    const claimed = (await call("GET", RB("web", "nginx-deployment"))).body;
    expect(claimed.metadata.annotations["propagationpolicy.karmada.io/name"]).toBe("next");
    expect(claimed.spec.clusters).toEqual([{ name: "kar-c", replicas: 2 }]);

    // The ConfigMap template deleted: its binding goes with it (its owner), and the work, left with nothing, goes.
    expect((await call("DELETE", "/api/v1/namespaces/web/configmaps/conf")).status).toBe(200);
    await waitFor(async () => (await call("GET", RB("web", "conf-configmap"))).status === 404);
    await waitFor(async () => Object.keys(await worksOf("pp.web.nginx")).length === 0, 25_000);
    kept = await worksOf("pp.web.next");
    expect(Object.keys(kept)).toEqual(["kar-c"]);
  }, 60_000);

  it("renders preserveResourcesOnDeletion as an orphaning delete, and places nothing when no cluster fits (NoClusterFit)", async () => {
    await createCluster("kar-p", { keep: "yes" });
    await createNamespaces("keep");
    expect(
      (await call("POST", "/api/v1/namespaces/keep/configmaps", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "kept" }, data: { a: "1" } })).status,
    ).toBe(201);
    const created = await call(
      "POST",
      PP("keep"),
      pp("keep", {
        resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", name: "kept" }],
        placement: { clusterAffinity: { labelSelector: { matchLabels: { keep: "yes" } } } },
        preserveResourcesOnDeletion: true,
      }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const works = await worksOf("pp.keep.keep");
    expect(Object.keys(works)).toEqual(["kar-p"]);
    expect(works["kar-p"].spec.deleteOption).toEqual({ propagationPolicy: "Orphan" });
    expect((await call("GET", RB("keep", "kept-configmap"))).body.spec.preserveResourcesOnDeletion).toBe(true);

    const nowhere = await call(
      "POST",
      PP("keep"),
      pp("nowhere", {
        resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", name: "kept" }],
        placement: { clusterAffinity: { clusterNames: ["absent"] } },
        priority: 5,
        preemption: "Always",
      }),
    );
    expect(nowhere.status).toBe(201);
    await waitFor(
      async () => (await call("GET", RB("keep", "kept-configmap"))).body.metadata?.annotations?.["propagationpolicy.karmada.io/name"] === "nowhere",
    );
    const rb = (await call("GET", RB("keep", "kept-configmap"))).body;
    expect(condition(rb, "Scheduled")).toMatchObject({ status: "False", reason: "NoClusterFit" });
    expect(condition(rb, "Scheduled").message).toMatch(
      /^0\/\d+ clusters are available: .*\d+ cluster\(s\) did not match the placement cluster affinity constraint/,
    );
    expect(rb.spec.clusters).toEqual([]);
    await waitFor(async () => Object.keys(await worksOf("pp.keep.keep")).length === 0);
    expect(Object.keys(await worksOf("pp.keep.nowhere"))).toEqual([]);
  });

  it("a ClusterPropagationPolicy propagates cluster-scoped objects with a ClusterResourceBinding, and a later policy does not take a claimed object", async () => {
    await createCluster("kar-x", { tier: "edge" });
    await createNamespaces("claimed");
    const created = await call(
      "POST",
      CPP(),
      cpp("ns-claimed", {
        resourceSelectors: [{ apiVersion: "v1", kind: "Namespace", name: "claimed" }],
        placement: { clusterAffinity: { clusterNames: ["kar-x"] } },
      }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const works = await worksOf("cpp.ns-claimed");
    expect(Object.keys(works)).toEqual(["kar-x"]);
    expect(works["kar-x"].spec.workload.manifests.map((m: KubeObject) => m.kind)).toEqual(["Namespace"]);
    const crb = (await call("GET", `${WG}/clusterresourcebindings/claimed-namespace`)).body;
    expect(crb.spec.resource).toMatchObject({ apiVersion: "v1", kind: "Namespace", name: "claimed" });
    expect(crb.metadata.annotations["clusterpropagationpolicy.karmada.io/name"]).toBe("ns-claimed");

    // A second policy of a higher priority created later leaves it with the first (no preemption).
    const later = await call(
      "POST",
      CPP(),
      cpp("ns-later", {
        resourceSelectors: [{ apiVersion: "v1", kind: "Namespace", name: "claimed" }],
        priority: 10,
        placement: { clusterAffinity: { clusterNames: ["kar-x"] } },
      }),
    );
    expect(later.status).toBe(201);
    expect(Object.keys(await worksOf("cpp.ns-later"))).toEqual([]);
    expect((await call("GET", "/api/v1/namespaces/claimed")).body.metadata.annotations["clusterpropagationpolicy.karmada.io/name"]).toBe("ns-claimed");
    // With preemption it takes it over.
    expect((await call("PATCH", CPP("ns-later"), { spec: { preemption: "Always" } }, merge)).status).toBe(200);
    await waitFor(async () => Object.keys(await worksOf("cpp.ns-later")).join() === "kar-x");
    await waitFor(async () => Object.keys(await worksOf("cpp.ns-claimed")).length === 0);
    expect((await call("GET", "/api/v1/namespaces/claimed")).body.metadata.annotations["clusterpropagationpolicy.karmada.io/name"]).toBe("ns-later");
    for (const name of ["ns-later", "ns-claimed"]) expect((await call("DELETE", CPP(name))).status).toBe(200);
    await waitFor(async () => (await call("GET", CPP("ns-later"))).status === 404);
    // Karmada keeps the binding and the works of a deleted policy's templates, without its claim.
    const released = (await call("GET", `${WG}/clusterresourcebindings/claimed-namespace`)).body;
    expect(released.metadata.annotations?.["clusterpropagationpolicy.karmada.io/name"]).toBeUndefined();
    expect(released.spec.clusters).toEqual([{ name: "kar-x" }]);
    expect(Object.keys(await worksOf("cpp.ns-later"))).toEqual(["kar-x"]);
    expect((await call("GET", "/api/v1/namespaces/claimed")).body.metadata.annotations?.["clusterpropagationpolicy.karmada.io/name"]).toBeUndefined();
  });

  it("a released template's work honours preserveResourcesOnDeletion when the template goes", async () => {
    await createCluster("kar-q", { keep: "released" });
    await createNamespaces("rel");
    const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { a: "1" } });
    for (const n of ["one", "two"]) expect((await call("POST", "/api/v1/namespaces/rel/configmaps", cm(n))).status).toBe(201);
    const created = await call(
      "POST",
      PP("rel"),
      pp("rel", {
        resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap" }],
        placement: { clusterAffinity: { clusterNames: ["kar-q"] } },
        preserveResourcesOnDeletion: true,
      }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const names = (w: { spec: { workload: { manifests: KubeObject[] } } }) => w.spec.workload.manifests.map((m) => `${m.kind}/${m.metadata.name}`);
    expect(names((await worksOf("pp.rel.rel"))["kar-q"])).toEqual(["Namespace/rel", "ConfigMap/one", "ConfigMap/two"]);
    expect((await call("DELETE", PP("rel", "rel"))).status).toBe(200);
    await waitFor(async () => (await call("GET", PP("rel", "rel"))).status === 404);
    // One template deleted: the work drops it and keeps its orphaning deleteOption (the agent leaves it on the member).
    expect((await call("DELETE", "/api/v1/namespaces/rel/configmaps/one")).status).toBe(200);
    await waitFor(async () => names((await worksOf("pp.rel.rel"))["kar-q"]).join() === "Namespace/rel,ConfigMap/two");
    expect((await worksOf("pp.rel.rel"))["kar-q"].spec.deleteOption).toEqual({ propagationPolicy: "Orphan" });
    expect((await call("GET", RB("rel", "two-configmap"))).body.spec.preserveResourcesOnDeletion).toBe(true);
  });
});
