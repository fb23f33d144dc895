// KubeFleet's placements on the hub: resource selection (KubeFleet's resource_selector_resolver
// cases: selection scopes, never-propagated objects, stripped fields, ordering), scheduling onto
// ManagedClusters (PickAll, PickN, PickFixed, affinity, properties, tolerations, spread), the
// rolling update, and the whole controller in workerd over the HTTP API: snapshots, bindings,
// works per cluster, status from the works' reports, a change rolled out under maxUnavailable,
// deletion.
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { KindDefinition } from "../../src/k8s/kind.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { KINDS, findKindByKind } from "../../src/kinds/index.ts";
import { compareSelected, selectResources, SelectionError, stripForDispatch, type SelectionSource } from "../../src/fleet/select.ts";
import { memberClusterOf, schedulePlacement, type MemberCluster } from "../../src/fleet/schedule.ts";
import { rolloutStep } from "../../src/fleet/rollout.ts";
import { renderWorks } from "../../src/fleet/render.ts";
import { placementListings, placementLists } from "../../src/fleet/placement-lists.ts";
import { placementHook, writeInTurns, WRITES_PER_TURN, type PlacementOwed } from "../../src/fleet/controller.ts";
import type { ManyWrite } from "../../src/store/types.ts";
import { registerAfterCommitHook } from "../../src/store/hooks.ts";
import { PLACEMENT_CHANGE_COUNTER } from "../../src/kinds/fleet.ts";
import { call, condition, createCluster, createNamespaces, joined, merge, reportApplied as report, fleetWorksOf as worksOf } from "./helpers.ts";
import { storeOf } from "../../src/store/store.ts";
import { ManifestWorkKind } from "../../src/kinds/manifestwork.ts";
import { ClusterResourceBindingKind } from "../../src/kinds/fleet.ts";
import { MANIFEST_WORK_CLEANUP_FINALIZER } from "../../src/work/deletion.ts";

// ---------------------------------------------------------------------------------------------
// Selection, on an in-memory source.

const fakeKind = (group: string, version: string, kind: string, plural: string, namespaced = true) =>
  ({
    group,
    version,
    kind,
    plural,
    namespaced,
    storage: "d1",
    listKind: `${kind}List`,
    singular: kind.toLowerCase(),
    shortNames: [],
    hasStatus: false,
  }) as unknown as KindDefinition;
const ConfigMap = fakeKind("", "v1", "ConfigMap", "configmaps");
const Service = fakeKind("", "v1", "Service", "services");
const Deployment = fakeKind("apps", "v1", "Deployment", "deployments");
const ReplicaSet = fakeKind("apps", "v1", "ReplicaSet", "replicasets");
const Job = fakeKind("batch", "v1", "Job", "jobs");
const EndpointSlice = fakeKind("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices");
const Widget = fakeKind("example.com", "v1", "Widget", "widgets");
const EXTRA = [ConfigMap, Service, Deployment, ReplicaSet, Job, EndpointSlice, Widget];

function object(def: KindDefinition, name: string, namespace?: string, extra: Record<string, unknown> = {}): KubeObject {
  const { metadata, ...rest } = extra as { metadata?: Record<string, unknown> };
  return {
    apiVersion: def.group ? `${def.group}/${def.version}` : def.version,
    kind: def.kind,
    metadata: {
      name,
      ...(namespace ? { namespace } : {}),
      uid: `uid-${name}`,
      resourceVersion: "7",
      generation: 3,
      creationTimestamp: "2026-01-01T00:00:00Z",
      ...metadata,
    },
    ...rest,
  } as KubeObject;
}

function source(objects: { def: KindDefinition; obj: KubeObject }[]): SelectionSource {
  const same = (a: KindDefinition, b: KindDefinition) => a.group === b.group && a.kind === b.kind;
  return {
    kind: (g, v, k) => EXTRA.find((d) => d.group === g && d.version === v && d.kind === k) ?? findKindByKind(g, v, k),
    // The hub's kinds, and the fakes of kinds it does not serve (the built-in ConfigMap, Service,
    // Deployment and Job are served: a fake of one would be selected twice).
    namespacedKinds: () => [
      ...KINDS.filter((k) => k.namespaced && k.storage === "d1" && !k.conversion),
      ...EXTRA.filter((e) => !findKindByKind(e.group, e.version, e.kind)),
    ],
    get: async (def, ns, name) => objects.find((o) => same(o.def, def) && (o.obj.metadata.namespace ?? "") === ns && o.obj.metadata.name === name)?.obj ?? null,
    list: async (def, ns) => objects.filter((o) => same(o.def, def) && (ns === undefined || (o.obj.metadata.namespace ?? "") === ns)).map((o) => o.obj),
  };
}

const NS = findKindByKind("", "v1", "Namespace")!;
const Secret = findKindByKind("", "v1", "Secret")!;
const SA = findKindByKind("", "v1", "ServiceAccount")!;
const Role = findKindByKind("rbac.authorization.k8s.io", "v1", "Role")!;
const ClusterRole = findKindByKind("rbac.authorization.k8s.io", "v1", "ClusterRole")!;

const world = () =>
  source([
    { def: NS, obj: object(NS, "app", undefined, { metadata: { labels: { team: "a" } } }) },
    { def: NS, obj: object(NS, "other", undefined, { metadata: { labels: { team: "b" } } }) },
    { def: NS, obj: object(NS, "kube-system") },
    { def: NS, obj: object(NS, "gone", undefined, { metadata: { deletionTimestamp: "2026-01-02T00:00:00Z" } }) },
    {
      def: Deployment,
      obj: object(Deployment, "web", "app", { metadata: { labels: { tier: "front" } }, spec: { replicas: 2 }, status: { readyReplicas: 2 } }),
    },
    { def: ConfigMap, obj: object(ConfigMap, "settings", "app", { data: { a: "1" } }) },
    { def: ConfigMap, obj: object(ConfigMap, "kube-root-ca.crt", "app", { data: { "ca.crt": "x" } }) },
    { def: SA, obj: object(SA, "default", "app") },
    { def: SA, obj: object(SA, "builder", "app") },
    { def: Secret, obj: object(Secret, "token", "app", { type: "kubernetes.io/service-account-token" }) },
    { def: Secret, obj: object(Secret, "creds", "app", { type: "Opaque", data: { k: "dg==" } }) },
    {
      def: ReplicaSet,
      obj: object(ReplicaSet, "web-123", "app", { metadata: { ownerReferences: [{ apiVersion: "apps/v1", kind: "Deployment", name: "web", uid: "u" }] } }),
    },
    {
      def: EndpointSlice,
      obj: object(EndpointSlice, "web-abc", "app", { metadata: { labels: { "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io" } } }),
    },
    { def: Role, obj: object(Role, "reader", "app", { rules: [] }) },
    { def: ConfigMap, obj: object(ConfigMap, "deleting", "app", { metadata: { deletionTimestamp: "2026-01-02T00:00:00Z" } }) },
    { def: Widget, obj: object(Widget, "w1", "app", { spec: {} }) },
    { def: ConfigMap, obj: object(ConfigMap, "elsewhere", "other", { data: {} }) },
    { def: ClusterRole, obj: object(ClusterRole, "viewer", undefined, { metadata: { labels: { team: "a" } }, rules: [] }) },
  ]);

const names = (sel: { def: KindDefinition; object: KubeObject }[]) =>
  sel.map((s) => `${s.def.kind}/${s.object.metadata.namespace ?? ""}/${s.object.metadata.name}`);
const NS_APP = { group: "", version: "v1", kind: "Namespace", name: "app" };

describe("resource selection (KubeFleet's resource_selector_resolver)", () => {
  it("selects a namespace with its resources, in KubeFleet's order, leaving what clusters make themselves", async () => {
    const sel = await selectResources(world(), { name: "crp", namespace: "" }, [NS_APP]);
    expect(names(sel)).toEqual([
      "Namespace//app",
      "ServiceAccount/app/builder",
      "Secret/app/creds",
      "ConfigMap/app/settings",
      "Role/app/reader",
      "Deployment/app/web",
      "Widget/app/w1",
    ]);
  });

  it("selects only the namespace with NamespaceOnly", async () => {
    const sel = await selectResources(world(), { name: "crp", namespace: "" }, [{ ...NS_APP, selectionScope: "NamespaceOnly" }]);
    expect(names(sel)).toEqual(["Namespace//app"]);
  });

  it("selects the namespace and what the other selectors name in it with NamespaceWithResourceSelectors", async () => {
    const sel = await selectResources(world(), { name: "crp", namespace: "" }, [
      { ...NS_APP, selectionScope: "NamespaceWithResourceSelectors" },
      { group: "apps", version: "v1", kind: "Deployment", labelSelector: { matchLabels: { tier: "front" } } },
      { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name: "viewer" },
    ]);
    expect(names(sel)).toEqual(["Namespace//app", "ClusterRole//viewer", "Deployment/app/web"]);
  });

  it("refuses NamespaceWithResourceSelectors without its namespace", async () => {
    await expect(
      selectResources(world(), { name: "crp", namespace: "" }, [
        { group: "", version: "v1", kind: "Namespace", name: "missing", selectionScope: "NamespaceWithResourceSelectors" },
      ]),
    ).rejects.toThrow("NamespaceWithResourceSelectors mode requires exactly one namespace, but no namespaces were selected");
  });

  it("selects namespaces by label, each with its resources", async () => {
    const sel = await selectResources(world(), { name: "crp", namespace: "" }, [
      { group: "", version: "v1", kind: "Namespace", labelSelector: { matchLabels: { team: "b" } } },
    ]);
    expect(names(sel)).toEqual(["Namespace//other", "ConfigMap/other/elsewhere"]);
  });

  it("refuses reserved namespaces", async () => {
    await expect(
      selectResources(world(), { name: "crp", namespace: "" }, [{ group: "", version: "v1", kind: "Namespace", name: "kube-system" }]),
    ).rejects.toThrow("namespace kube-system is not allowed to propagate");
    await expect(
      selectResources(world(), { name: "crp", namespace: "" }, [{ group: "", version: "v1", kind: "Namespace", name: "default" }]),
    ).rejects.toBeInstanceOf(SelectionError);
  });

  it("skips a namespace being deleted", async () => {
    expect(await selectResources(world(), { name: "crp", namespace: "" }, [{ group: "", version: "v1", kind: "Namespace", name: "gone" }])).toEqual([]);
  });

  it("selects cluster-scoped kinds by name or label", async () => {
    const byLabel = await selectResources(world(), { name: "crp", namespace: "" }, [
      { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", labelSelector: { matchLabels: { team: "a" } } },
    ]);
    expect(names(byLabel)).toEqual(["ClusterRole//viewer"]);
  });

  it("refuses a namespaced kind in a ClusterResourcePlacement and a cluster-scoped one in a ResourcePlacement", async () => {
    await expect(selectResources(world(), { name: "crp", namespace: "" }, [{ group: "apps", version: "v1", kind: "Deployment", name: "web" }])).rejects.toThrow(
      "cannot select namespace-scoped resource apps/v1, Resource=deployments in a clusterResourcePlacement",
    );
    await expect(
      selectResources(world(), { name: "rp", namespace: "app" }, [{ group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name: "viewer" }]),
    ).rejects.toThrow("cannot select cluster-scoped resource");
    await expect(selectResources(world(), { name: "rp", namespace: "app" }, [NS_APP])).rejects.toThrow(
      "cannot select cluster-scoped resource Namespace in a resourcePlacement",
    );
  });

  it("selects in a ResourcePlacement's own namespace only", async () => {
    const sel = await selectResources(world(), { name: "rp", namespace: "app" }, [{ group: "", version: "v1", kind: "ConfigMap" }]);
    expect(names(sel)).toEqual(["ConfigMap/app/settings"]);
  });

  it("refuses the same object selected twice", async () => {
    await expect(
      selectResources(world(), { name: "rp", namespace: "app" }, [
        { group: "", version: "v1", kind: "ConfigMap", name: "settings" },
        { group: "", version: "v1", kind: "ConfigMap" },
      ]),
    ).rejects.toThrow("found duplicate resource");
  });

  it("skips disabled kinds (events, leases, the hub's own) and unknown names", async () => {
    const sel = await selectResources(world(), { name: "rp", namespace: "app" }, [
      { group: "coordination.k8s.io", version: "v1", kind: "Lease" },
      { group: "", version: "v1", kind: "ConfigMap", name: "nope" },
    ]);
    expect(sel).toEqual([]);
  });

  it("sorts unknown kinds last, by GVK, then namespace/name", () => {
    const a = { def: Widget, object: object(Widget, "a", "x") };
    const b = { def: fakeKind("alpha.io", "v1", "Zed", "zeds"), object: object(Widget, "b", "x") };
    const ns = { def: NS, object: object(NS, "x") };
    expect([a, b, ns].sort(compareSelected).map((s) => s.def.kind)).toEqual(["Namespace", "Zed", "Widget"]);
  });

  it("strips what the hub's apiserver set (KubeFleet's generateRawContent)", () => {
    const svc = stripForDispatch(
      Service,
      object(Service, "web", "app", {
        metadata: {
          annotations: { "kubectl.kubernetes.io/last-applied-configuration": "{}" },
          ownerReferences: [{ apiVersion: "v1", kind: "X", name: "x", uid: "u" }],
          managedFields: [{}],
          finalizers: ["keep"],
        },
        spec: { clusterIP: "10.0.0.1", clusterIPs: ["10.0.0.1"], healthCheckNodePort: 3, ports: [{ port: 80, nodePort: 30000 }] },
        status: { loadBalancer: {} },
      }),
    );
    expect(svc).toEqual({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: "app", finalizers: ["keep"] },
      spec: { ports: [{ port: 80 }] },
    });
    const headless = stripForDispatch(Service, object(Service, "h", "app", { spec: { clusterIP: "None" } }));
    expect(headless.spec).toEqual({ clusterIP: "None" });
    const job = stripForDispatch(
      Job,
      object(Job, "j", "app", {
        spec: {
          selector: { matchLabels: { "controller-uid": "u", "batch.kubernetes.io/controller-uid": "u", app: "j" } },
          template: { metadata: { creationTimestamp: null, labels: { "controller-uid": "u", app: "j" } } },
        },
      }),
    );
    expect(job.spec).toEqual({ selector: { matchLabels: { app: "j" } }, template: { metadata: { labels: { app: "j" } } } });
  });
});

// ---------------------------------------------------------------------------------------------
// Scheduling.

const member = (name: string, labels: Record<string, string> = {}, extra: Partial<MemberCluster> = {}): MemberCluster => ({
  name,
  labels: { ...labels, "kubernetes-fleet.io/member-cluster-name": name },
  properties: {},
  taints: [],
  eligible: true,
  leaving: false,
  ...extra,
});
const picked = (r: ReturnType<typeof schedulePlacement>) => r.selected.map((d) => d.clusterName);

describe("scheduling (KubeFleet's scheduler on ManagedClusters)", () => {
  const fleet = [member("a", { env: "prod", zone: "1" }), member("b", { env: "prod", zone: "2" }), member("c", { env: "dev", zone: "1" })];

  it("maps a ManagedCluster's labels, properties and eligibility", () => {
    const m = memberClusterOf(
      {
        apiVersion: "cluster.open-cluster-management.io/v1",
        kind: "ManagedCluster",
        metadata: { name: "x", labels: { env: "prod" }, uid: "u", resourceVersion: "1", creationTimestamp: "" },
        spec: { hubAcceptsClient: true, taints: [{ key: "k", effect: "NoSelect" }] },
        status: { capacity: { cpu: "8" }, allocatable: { cpu: "6", memory: "16Gi" }, clusterClaims: [{ name: "kubernetes-fleet.io/node-count", value: "3" }] },
      },
      0,
    );
    expect(m.labels).toEqual({ env: "prod", "kubernetes-fleet.io/member-cluster-name": "x" });
    expect(m.properties).toMatchObject({
      "resources.kubernetes-fleet.io/total-cpu": "8",
      "resources.kubernetes-fleet.io/allocatable-cpu": "6",
      "resources.kubernetes-fleet.io/available-memory": "16Gi",
      "kubernetes-fleet.io/node-count": "3",
    });
    expect(m.eligible).toBe(true);
  });

  it("PickAll: every cluster passing the required terms (ORed)", () => {
    const r = schedulePlacement(
      {
        placementType: "PickAll",
        affinity: {
          clusterAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              clusterSelectorTerms: [{ labelSelector: { matchLabels: { env: "dev" } } }, { labelSelector: { matchLabels: { zone: "2" } } }],
            },
          },
        },
      },
      fleet,
      new Set(),
      false,
    );
    expect(picked(r)).toEqual(["b", "c"]);
  });

  it("filters untolerated taints (NoSelect is NoSchedule), and tolerates them", () => {
    const tainted = [member("a"), member("b", {}, { taints: [{ key: "gpu", value: "yes", effect: "NoSelect" }] })];
    expect(picked(schedulePlacement({ placementType: "PickAll" }, tainted, new Set(), false))).toEqual(["a"]);
    expect(
      picked(schedulePlacement({ placementType: "PickAll", tolerations: [{ key: "gpu", operator: "Equal", value: "yes" }] }, tainted, new Set(), false)),
    ).toEqual(["a", "b"]);
    expect(picked(schedulePlacement({ placementType: "PickAll", tolerations: [{ operator: "Exists" }] }, tainted, new Set(), false))).toEqual(["a", "b"]);
  });

  it("PickN: by preferred weights, then the greater name on a tie (KubeFleet's reverse sort)", () => {
    const prefer = {
      placementType: "PickN" as const,
      numberOfClusters: 2,
      affinity: {
        clusterAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 20, preference: { labelSelector: { matchLabels: { env: "prod" } } } }] },
      },
    };
    expect(picked(schedulePlacement(prefer, fleet, new Set(), false))).toEqual(["a", "b"]);
    expect(picked(schedulePlacement({ placementType: "PickN", numberOfClusters: 2 }, fleet, new Set(), false))).toEqual(["b", "c"]);
    const r = schedulePlacement({ placementType: "PickN", numberOfClusters: 5 }, fleet, new Set(), false);
    expect(picked(r)).toEqual(["a", "b", "c"]);
    expect(r.desired).toBe(5);
  });

  it("PickN: a property selector filters, a property sorter interpolates", () => {
    const sized = [
      member("a", {}, { properties: { "resources.kubernetes-fleet.io/allocatable-cpu": "2" } }),
      member("b", {}, { properties: { "resources.kubernetes-fleet.io/allocatable-cpu": "16" } }),
      member("c", {}, { properties: { "resources.kubernetes-fleet.io/allocatable-cpu": "8" } }),
      member("d"),
    ];
    const gt = {
      placementType: "PickN" as const,
      numberOfClusters: 3,
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            clusterSelectorTerms: [
              { propertySelector: { matchExpressions: [{ name: "resources.kubernetes-fleet.io/allocatable-cpu", operator: "Ge", values: ["4"] }] } },
            ],
          },
        },
      },
    };
    expect(picked(schedulePlacement(gt, sized, new Set(), false))).toEqual(["b", "c"]);
    const sorter = (sortOrder: string) => ({
      placementType: "PickN" as const,
      numberOfClusters: 1,
      affinity: {
        clusterAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 50, preference: { propertySorter: { name: "resources.kubernetes-fleet.io/allocatable-cpu", sortOrder } } },
          ],
        },
      },
    });
    expect(picked(schedulePlacement(sorter("Descending"), sized, new Set(), false))).toEqual(["b"]);
    expect(picked(schedulePlacement(sorter("Ascending"), sized, new Set(), false))).toEqual(["a"]);
  });

  it("PickN: topology spread DoNotSchedule keeps the skew", () => {
    // KubeFleet's topology spread plugin: a cluster without the topology key is neither filtered
    // nor scored by the constraint (score 0), one that adds to a domain scores -1; one pick per cycle.
    const zoned = [member("a", { zone: "1" }), member("b", { zone: "1" }), member("c", { zone: "2" }), member("d")];
    const spread = { placementType: "PickN" as const, topologySpreadConstraints: [{ topologyKey: "zone", maxSkew: 1, whenUnsatisfiable: "DoNotSchedule" }] };
    expect(picked(schedulePlacement({ ...spread, numberOfClusters: 2 }, zoned, new Set(), false))).toEqual(["c", "d"]);
    const r = schedulePlacement({ ...spread, numberOfClusters: 3 }, zoned, new Set(), false);
    expect(picked(r)).toEqual(["b", "c", "d"]);
    // With a in zone 1 already: zone 2 (c) lowers the skew (+1), d keeps it (0), b would make it 2.
    const skewed = schedulePlacement({ ...spread, numberOfClusters: 2 }, zoned, new Set(["a"]), false);
    expect(picked(skewed)).toEqual(["a", "c"]);
    expect(skewed.notSelected).toEqual([
      {
        clusterName: "d",
        selected: false,
        clusterScore: { affinityScore: 0, priorityScore: 0 },
        reason: 'Cluster "d" does not score high enough (affinity score: 0, topology spread score: 0)',
      },
      { clusterName: "b", selected: false, reason: 'ClusterUnschedulable, violated doNotSchedule topology spread constraint "zone" (max skew 1)' },
    ]);
  });

  it("PickFixed: exactly the names, reporting those not found", () => {
    const r = schedulePlacement({ placementType: "PickFixed", clusterNames: ["a", "zz"] }, fleet, new Set(), false);
    expect(picked(r)).toEqual(["a"]);
    expect(r.notSelected).toEqual([{ clusterName: "zz", selected: false, reason: 'Specified cluster "zz" is not found' }]);
    expect(r.desired).toBe(2);
  });

  it("keeps the clusters a placement has while its policy is unchanged (IgnoredDuringExecution)", () => {
    const policy = {
      placementType: "PickAll" as const,
      affinity: {
        clusterAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { env: "prod" } } }] } },
      },
    };
    expect(picked(schedulePlacement(policy, fleet, new Set(["c"]), false))).toEqual(["a", "b", "c"]);
    expect(picked(schedulePlacement(policy, fleet, new Set(["c"]), true))).toEqual(["a", "b"]);
    const leaving = [...fleet.slice(0, 2), member("c", { env: "dev" }, { leaving: true, eligible: false })];
    expect(picked(schedulePlacement(policy, leaving, new Set(["c"]), false))).toEqual(["a", "b"]);
  });
});

describe("rolling update (KubeFleet's rollout controller)", () => {
  const ready = (gen = 1) => ({
    current: false,
    generation: gen,
    conditions: [
      { type: "Applied", status: "True", observedGeneration: gen },
      { type: "Available", status: "True", observedGeneration: gen },
    ],
  });
  it("adds every picked cluster at the first rollout", () => {
    const s = rolloutStep(
      [
        { name: "a", picked: true },
        { name: "b", picked: true },
      ],
      2,
      { maxUnavailable: "25%", maxSurge: "25%" },
    );
    expect(s).toEqual({ add: ["a", "b"], update: [], remove: [], blocked: [] });
  });
  it("updates at most maxUnavailable clusters at once, and the next once they are ready", () => {
    const s = rolloutStep(
      [
        { name: "a", picked: true, work: ready() },
        { name: "b", picked: true, work: ready() },
      ],
      2,
      { maxUnavailable: "25%" },
    );
    expect(s).toEqual({ add: [], update: ["a"], remove: [], blocked: ["b"] });
    const pending = rolloutStep(
      [
        { name: "a", picked: true, work: { current: true, generation: 2, conditions: ready(1).conditions } },
        { name: "b", picked: true, work: ready() },
      ],
      2,
      { maxUnavailable: "25%" },
    );
    expect(pending.update).toEqual([]);
    expect(pending.blocked).toEqual(["b"]);
    const next = rolloutStep(
      [
        { name: "a", picked: true, work: { ...ready(2), current: true } },
        { name: "b", picked: true, work: ready() },
      ],
      2,
      { maxUnavailable: "25%" },
    );
    expect(next.update).toEqual(["b"]);
  });
  it("updates a failed cluster at once", () => {
    const failed = { current: false, generation: 1, conditions: [{ type: "Applied", status: "False", observedGeneration: 1 }] };
    const s = rolloutStep(
      [
        { name: "a", picked: true, work: failed },
        { name: "b", picked: true, work: ready() },
      ],
      2,
      { maxUnavailable: 0 },
    );
    expect(s.update).toEqual(["a"]);
  });
});

describe("rendered works", () => {
  it("carries the applyStrategy as manifestConfigs and the annotation, and deleteStrategy Abandon as Orphan", () => {
    const cm = stripForDispatch(ConfigMap, object(ConfigMap, "c", "app", { data: {} }));
    const [w] = renderWorks("crp", [{ object: cm, resource: "configmaps" }], {
      applyStrategy: { type: "ServerSideApply", serverSideApplyConfig: { force: true }, whenToTakeOver: "IfNoDiff" },
      deleteStrategy: { propagationPolicy: "Abandon" },
      rollingUpdate: { unavailablePeriodSeconds: 5 },
    });
    expect(w!.name).toBe("crp-work");
    expect(w!.spec).toEqual({
      workload: { manifests: [cm] },
      manifestConfigs: [
        {
          resourceIdentifier: { group: "", resource: "configmaps", name: "c", namespace: "app" },
          updateStrategy: { type: "ServerSideApply", serverSideApply: { force: true, fieldManager: "work-agent" } },
        },
      ],
      deleteOption: { propagationPolicy: "Orphan" },
    });
    expect(JSON.parse(w!.annotations["kubernetes-fleet.io/apply-strategy"]!)).toEqual({
      comparisonOption: "PartialComparison",
      whenToApply: "Always",
      type: "ServerSideApply",
      allowCoOwnership: false,
      serverSideApplyConfig: { force: true },
      whenToTakeOver: "IfNoDiff",
    });
    expect(w!.annotations["kubernetes-fleet.io/unavailable-period-seconds"]).toBe("5");
  });
  it("splits large selections into several works", () => {
    const big = Array.from({ length: 6 }, (_, i) => ({
      object: object(ConfigMap, `c${i}`, "app", { data: { v: "x".repeat(100_000) } }),
      resource: "configmaps",
    }));
    const works = renderWorks("crp", big, undefined);
    expect(works.map((w) => w.name)).toEqual(["crp-work", "crp-1"]);
  });
});

// ---------------------------------------------------------------------------------------------
// The controller, in workerd.

const G = "/apis/placement.kubernetes-fleet.io";
const CRP = (name = "") => `${G}/v1/clusterresourceplacements${name ? `/${name}` : ""}`;
const RP = (ns: string, name = "") => `${G}/v1/namespaces/${ns}/resourceplacements${name ? `/${name}` : ""}`;
const WORK = (cluster: string, name: string) => `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks/${name}`;
const TRACKING = "kubernetes-fleet.io/parent-CRP";

/** Runs a placement's controller now (its object's run; what its alarm does shortly after a notification). */
async function run(namespace: string, name: string) {
  await env.REPLICASETS.getByName(`placement:${namespace}/${name}`).reconcile(`placement:${namespace}`, name);
}

/** Waits until `check` holds (vitest's `vi.waitFor`, polling), failing after `ms` milliseconds. */
async function waitFor(check: () => Promise<boolean>, ms = 8000) {
  await vi.waitFor(
    async () => {
      if (!(await check())) throw new Error("not yet");
    },
    { timeout: ms, interval: 100 },
  );
}

describe("the placement controller", () => {
  it("places a namespace on 2 of 3 clusters, reports Applied and Available, rolls a change out under maxUnavailable, and removes it", async () => {
    await createCluster("fleet-a", { env: "prod" });
    await createCluster("fleet-b", { env: "prod" });
    await createCluster("fleet-c", { env: "dev" });
    await createNamespaces("demo");
    expect(
      (await call("POST", "/api/v1/namespaces/demo/secrets", { apiVersion: "v1", kind: "Secret", metadata: { name: "creds" }, stringData: { k: "v1" } }))
        .status,
    ).toBe(201);
    expect(
      (
        await call("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/demo/roles", {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "Role",
          metadata: { name: "reader" },
          rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }],
        })
      ).status,
    ).toBe(201);
    const created = await call("POST", CRP(), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "demo" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "demo" }],
        policy: {
          placementType: "PickN",
          numberOfClusters: 2,
          affinity: {
            clusterAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 10, preference: { labelSelector: { matchLabels: { env: "prod" } } } }],
            },
          },
        },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);

    // Scheduled on write: works in exactly the two preferred clusters, with the objects stripped.
    const works = await worksOf("demo");
    expect(Object.keys(works).sort()).toEqual(["fleet-a", "fleet-b"]);
    const manifests = works["fleet-a"].spec.workload.manifests;
    expect(manifests.map((m: KubeObject) => `${m.kind}/${m.metadata.name}`)).toEqual(["Namespace/demo", "Secret/creds", "Role/reader"]);
    expect(manifests[0].metadata.uid).toBeUndefined();
    expect(works["fleet-a"].metadata.labels["kubernetes-fleet.io/parent-resource-snapshot-index"]).toBe("0");
    expect(JSON.parse(works["fleet-a"].metadata.annotations["kubernetes-fleet.io/apply-strategy"]).type).toBe("ClientSideApply");

    let crp = (await call("GET", CRP("demo"))).body;
    expect(crp.metadata.finalizers).toContain("kubernetes-fleet.io/crp-cleanup");
    expect(condition(crp, "ClusterResourcePlacementScheduled")).toMatchObject({ status: "True", reason: "SchedulingPolicyFulfilled" });
    expect(condition(crp, "ClusterResourcePlacementRolloutStarted")).toMatchObject({ status: "True" });
    expect(condition(crp, "ClusterResourcePlacementWorkSynchronized")).toMatchObject({ status: "True" });
    expect(condition(crp, "ClusterResourcePlacementApplied")).toMatchObject({ status: "Unknown", reason: "ApplyPending" });
    expect(crp.status.observedResourceIndex).toBe("0");
    expect(crp.status.selectedResources.map((r: { kind: string }) => r.kind)).toEqual(["Namespace", "Secret", "Role"]);
    expect(crp.status.placementStatuses.map((s: { clusterName: string }) => s.clusterName)).toEqual(["fleet-a", "fleet-b"]);

    // Snapshots and bindings.
    const snaps = (await call("GET", `${G}/v1/clusterresourcesnapshots?labelSelector=${encodeURIComponent(`${TRACKING}=demo`)}`)).body.items;
    expect(snaps.map((s: KubeObject) => s.metadata.name)).toEqual(["demo-0-snapshot"]);
    const policies = (await call("GET", `${G}/v1/clusterschedulingpolicysnapshots?labelSelector=${encodeURIComponent(`${TRACKING}=demo`)}`)).body.items;
    expect(policies.map((s: KubeObject) => s.metadata.name)).toEqual(["demo-0"]);
    expect(policies[0].status.targetClusters.filter((d: { selected: boolean }) => d.selected).length).toBe(2);
    const bindings = (await call("GET", `${G}/v1/clusterresourcebindings`)).body.items.filter((b: KubeObject) => b.metadata.labels?.[TRACKING] === "demo");
    expect(bindings.map((b: { spec: { targetCluster: string; state: string } }) => `${b.spec.targetCluster}:${b.spec.state}`).sort()).toEqual([
      "fleet-a:Bound",
      "fleet-b:Bound",
    ]);

    // The agents report: Applied and Available.
    await report("fleet-a", "demo-work");
    await report("fleet-b", "demo-work");
    await run("", "demo");
    crp = (await call("GET", CRP("demo"))).body;
    expect(condition(crp, "ClusterResourcePlacementApplied")).toMatchObject({ status: "True", reason: "ApplySucceeded" });
    expect(condition(crp, "ClusterResourcePlacementAvailable")).toMatchObject({ status: "True", reason: "ResourceAvailable" });
    const events = (await call("GET", "/api/v1/events")).body.items
      .filter(
        (e: { involvedObject?: { kind?: string; name?: string } }) => e.involvedObject?.kind === "ClusterResourcePlacement" && e.involvedObject.name === "demo",
      )
      .map((e: { reason: string }) => e.reason);
    expect(events).toContain("PlacementAvailable");

    // A change of one selected object: a new snapshot, rolled out one cluster at a time (25% of 2, rounded up).
    expect((await call("PATCH", "/api/v1/namespaces/demo/secrets/creds", { stringData: { k: "v2" } }, merge)).status).toBe(200);
    await run("", "demo");
    let now = await worksOf("demo");
    const indexes = () =>
      Object.values(now)
        .map((w) => w.metadata.labels["kubernetes-fleet.io/parent-resource-snapshot-index"])
        .sort();
    expect(indexes()).toEqual(["0", "1"]);
    crp = (await call("GET", CRP("demo"))).body;
    expect(crp.status.observedResourceIndex).toBe("1");
    expect(condition(crp, "ClusterResourcePlacementRolloutStarted")).toMatchObject({ status: "False", reason: "RolloutNotStartedYet" });
    const updated = Object.entries(now).find(([, w]) => w.metadata.labels["kubernetes-fleet.io/parent-resource-snapshot-index"] === "1")![0];
    await report(updated, "demo-work");
    await run("", "demo");
    now = await worksOf("demo");
    expect(indexes()).toEqual(["1", "1"]);
    const other = Object.keys(now).find((c) => c !== updated)!;
    await report(other, "demo-work");
    await run("", "demo");
    crp = (await call("GET", CRP("demo"))).body;
    expect(condition(crp, "ClusterResourcePlacementAvailable")).toMatchObject({ status: "True" });

    // Deleting the placement removes its works, then the placement.
    expect((await call("DELETE", CRP("demo"))).status).toBe(200);
    await waitFor(async () => (await call("GET", CRP("demo"))).status === 404);
    await waitFor(async () => Object.keys(await worksOf("demo")).length === 0);
  });

  it("a ResourcePlacement selects in its namespace, PickFixed, and its namespace's user reads its status", async () => {
    await createCluster("rp-a");
    await createNamespaces("team");
    const secret = (name: string, labels: Record<string, string>) =>
      call("POST", "/api/v1/namespaces/team/secrets", { apiVersion: "v1", kind: "Secret", metadata: { name, labels }, stringData: { k: name } });
    expect((await secret("one", { app: "x" })).status).toBe(201);
    expect((await secret("two", { app: "y" })).status).toBe(201);
    const r = await call("POST", RP("team"), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourcePlacement",
      metadata: { name: "secrets" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Secret", labelSelector: { matchLabels: { app: "x" } } }],
        policy: { placementType: "PickFixed", clusterNames: ["rp-a", "rp-missing"] },
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const works = await worksOf("team.secrets");
    expect(Object.keys(works)).toEqual(["rp-a"]);
    expect(works["rp-a"].metadata.name).toBe("team.secrets-work");
    expect(works["rp-a"].spec.workload.manifests.map((m: KubeObject) => m.metadata.name)).toEqual(["one"]);
    const rp = (await call("GET", RP("team", "secrets"))).body;
    expect(condition(rp, "ResourcePlacementScheduled")).toMatchObject({ status: "False", reason: "SchedulingPolicyUnfulfilled" });
    expect(rp.status.placementStatuses).toHaveLength(2);
    expect(rp.status.placementStatuses[1].conditions[0].message).toBe('Specified cluster "rp-missing" is not found');

    // A user with the namespace's view role reads the status; not the cluster's placements.
    expect(
      (
        await call("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings", {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "RoleBinding",
          metadata: { name: "viewers" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
          subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "team-viewer" }],
        })
      ).status,
    ).toBe(201);
    const as = { headers: { "impersonate-user": "team-viewer" } };
    expect((await call("GET", RP("team", "secrets"), undefined, as)).status).toBe(200);
    expect((await call("GET", `${RP("team", "secrets")}/status`, undefined, as)).status).toBe(200);
    expect((await call("GET", RP("other-team"), undefined, as)).status).toBe(403);
    expect((await call("GET", CRP(), undefined, as)).status).toBe(403);
  });

  it("selects a CRD by name and a namespace with its custom resource, the CRD before the resource", async () => {
    await createCluster("crd-a");
    await createNamespaces("gadgets");
    const crd = await call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "gadgets.crp.example.com" },
      spec: {
        group: "crp.example.com",
        names: { plural: "gadgets", singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
        scope: "Namespaced",
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: "object", properties: { spec: { type: "object", properties: { size: { type: "integer" } } } } } },
          },
        ],
      },
    });
    expect(crd.status, JSON.stringify(crd.body)).toBe(201);
    const gadget = await call("POST", "/apis/crp.example.com/v1/namespaces/gadgets/gadgets", {
      apiVersion: "crp.example.com/v1",
      kind: "Gadget",
      metadata: { name: "g1" },
      spec: { size: 3 },
    });
    expect(gadget.status, JSON.stringify(gadget.body)).toBe(201);
    const r = await call("POST", CRP(), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "gadgets" },
      spec: {
        resourceSelectors: [
          { group: "", version: "v1", kind: "Namespace", name: "gadgets" },
          { group: "apiextensions.k8s.io", version: "v1", kind: "CustomResourceDefinition", name: "gadgets.crp.example.com" },
        ],
        policy: { placementType: "PickFixed", clusterNames: ["crd-a"] },
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);

    // KubeFleet's apply order: the Namespace, the CRD, then the custom resource (a kind it does not know, last).
    const works = await worksOf("gadgets");
    expect(Object.keys(works)).toEqual(["crd-a"]);
    const manifests = works["crd-a"].spec.workload.manifests as KubeObject[];
    expect(manifests.map((m) => `${m.apiVersion}/${m.kind}/${m.metadata.name}`)).toEqual([
      "v1/Namespace/gadgets",
      "apiextensions.k8s.io/v1/CustomResourceDefinition/gadgets.crp.example.com",
      "crp.example.com/v1/Gadget/g1",
    ]);
    const [, placedCrd, placedGadget] = manifests as (KubeObject & { spec: Record<string, unknown>; status?: unknown })[];
    expect(placedCrd!.status).toBeUndefined();
    expect(placedCrd!.metadata.uid).toBeUndefined();
    expect(placedCrd!.spec.group).toBe("crp.example.com");
    expect(placedGadget!.metadata).toMatchObject({ name: "g1", namespace: "gadgets" });
    expect(placedGadget!.spec).toEqual({ size: 3 });
    const crp = (await call("GET", CRP("gadgets"))).body;
    expect(crp.status.selectedResources.map((s: { kind: string }) => s.kind)).toEqual(["Namespace", "CustomResourceDefinition", "Gadget"]);

    // Once the work is Available, a change of the custom resource makes a new snapshot, rolled out into the work.
    await report("crd-a", "gadgets-work");
    await run("", "gadgets");
    expect((await call("PATCH", "/apis/crp.example.com/v1/namespaces/gadgets/gadgets/g1", { spec: { size: 4 } }, merge)).status).toBe(200);
    await run("", "gadgets");
    expect((await call("GET", CRP("gadgets"))).body.status.observedResourceIndex).toBe("1");
    const after = (await worksOf("gadgets"))["crd-a"];
    expect(after.metadata.labels["kubernetes-fleet.io/parent-resource-snapshot-index"]).toBe("1");
    expect(after.spec.workload.manifests[2].spec).toEqual({ size: 4 });
  });

  it("an object's write reads the placements' lists again only after a placement changed, and notifies a new one", async () => {
    await createNamespaces("plists");
    const configMap = async (name: string) =>
      expect(
        (await call("POST", "/api/v1/namespaces/plists/configmaps", { apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { k: "v" } })).status,
      ).toBe(201);
    await configMap("a");
    const listed = placementListings();
    // No placement changed: the lists the isolate read are used (one read of the change counter).
    await configMap("b");
    expect(placementListings()).toBe(listed);
    const created = await call("POST", CRP(), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "plists" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "plists" }],
        policy: { placementType: "PickFixed", clusterNames: ["nowhere"] },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // The placement's write moved the counter: the next object's write lists again, and finds it.
    await configMap("c");
    expect(placementListings()).toBe(listed + 1);
    expect((await placementLists(env)).crps.map((p) => p.metadata.name)).toContain("plists");
    await waitFor(async () =>
      ((await call("GET", CRP("plists"))).body.status?.selectedResources ?? []).some(
        (r: { kind: string; name: string }) => r.kind === "ConfigMap" && r.name === "c",
      ),
    );
    // A placement written by another isolate moves the counter too: this isolate lists again.
    await env.DB.prepare("UPDATE counters SET value = value + 1 WHERE id = ?").bind(PLACEMENT_CHANGE_COUNTER).run();
    await configMap("d");
    expect(placementListings()).toBe(listed + 2);
    await configMap("e");
    expect(placementListings()).toBe(listed + 2);
  });

  it("an object no placement may concern owes no after-commit work while the placements stay as the isolate read them", async () => {
    await createNamespaces("quiet");
    const configMap = async (name: string) =>
      expect(
        (await call("POST", "/api/v1/namespaces/quiet/configmaps", { apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { k: "v" } })).status,
      ).toBe(201);
    // The isolate holds the placements' lists once an object's write read them.
    await configMap("q0");
    const runs: string[] = [];
    registerAfterCommitHook<PlacementOwed>({
      ...placementHook,
      run: (e, owed, target) => {
        runs.push(target.name);
        return placementHook.run(e, owed, target);
      },
    });
    try {
      const listed = placementListings();
      // No placement selects the namespace: the commit wrote no outbox row, and no hook ran.
      await configMap("q1");
      expect(runs).toEqual([]);
      // A placement written meanwhile (here: the counter moved as another isolate's write moves it): owed and run.
      await env.DB.prepare("UPDATE counters SET value = value + 1 WHERE id = ?").bind(PLACEMENT_CHANGE_COUNTER).run();
      await configMap("q2");
      expect(runs).toEqual(["q2"]);
      expect(placementListings()).toBe(listed + 1);
      await configMap("q3");
      expect(runs).toEqual(["q2"]);
    } finally {
      registerAfterCommitHook(placementHook);
    }
  });

  it("a placement's works are born held by OCM's cleanup finalizer: the agent's first report writes the status alone, and a delete waits for it", async () => {
    const keys = await joined("held-a", { namespace: true });
    await createNamespaces("held");
    const created = await call("POST", CRP(), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "held" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "held" }],
        policy: { placementType: "PickFixed", clusterNames: ["held-a"] },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const work = (await call("GET", WORK("held-a", "held-work"))).body;
    expect(work.metadata.finalizers).toEqual([MANIFEST_WORK_CLEANUP_FINALIZER]);
    const uid = work.metadata.uid as string;
    const at = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    const cond = (type: string) => ({ type, status: "True", observedGeneration: 1, reason: "Test", message: "", lastTransitionTime: at });
    const reported = await call(
      "PUT",
      "/agent/v1/clusters/held-a/works/held-work/status",
      { uid, status: { conditions: [cond("Applied"), cond("Available")] } },
      { token: await keys.sign("held-a") },
    );
    expect(reported.status, JSON.stringify(reported.body)).toBe(200);
    // Two writes of the work: its create and the report's status (no write of the finalizer between).
    const events = (await storeOf(env, ManifestWorkKind).events("held-a", Number(work.metadata.resourceVersion) - 1)).events;
    expect(events.filter((e) => e.object.metadata.name === "held-work").map((e) => e.type)).toEqual(["ADDED", "MODIFIED"]);
    expect((await call("GET", WORK("held-a", "held-work"))).body.metadata.finalizers).toEqual([MANIFEST_WORK_CLEANUP_FINALIZER]);

    // The placement goes; its work waits for the agent's confirmation (an agent joined the cluster).
    expect((await call("DELETE", CRP("held"))).status).toBe(200);
    await waitFor(async () => condition((await call("GET", WORK("held-a", "held-work"))).body, "Deleting")?.status === "True");
    const released = await call(
      "PUT",
      "/agent/v1/clusters/held-a/works/held-work/status",
      { uid, status: {}, released: true },
      { token: await keys.sign("held-a") },
    );
    expect(released.status, JSON.stringify(released.body)).toBe(200);
    expect((await call("GET", WORK("held-a", "held-work"))).status).toBe(404);
  });

  it("a placement's new binding is created with its status: one commit, no status write after it", async () => {
    await createCluster("born-a");
    await createNamespaces("born");
    const created = await call("POST", CRP(), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "born" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "born" }],
        policy: { placementType: "PickFixed", clusterNames: ["born-a"] },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await worksOf("born");
    const binding = (await call("GET", `${G}/v1/clusterresourcebindings/born-born-a`)).body;
    // As KubeFleet's rollout controller and work generator leave it: rolled out, its work synchronized.
    expect(condition(binding, "RolloutStarted")?.status).toBe("True");
    expect(condition(binding, "WorkSynchronized")?.status).toBe("True");
    // One write of the binding: its create carried that status (it took a create and a status write).
    const events = (await storeOf(env, ClusterResourceBindingKind).events(undefined, 0)).events;
    const mine = events.filter((e) => e.object.metadata.name === "born-born-a");
    expect(mine.map((e) => e.type)).toEqual(["ADDED"]);
    expect(mine[0]!.object.status).toEqual(binding.status);
  });

  it("a placement's run writes a batch at a time, with a turn of the event loop after each (writeInTurns)", async () => {
    // A timer set before the writes stands in for an agent's report reaching the isolate: workerd
    // runs a timer (and reads a socket) only once nothing else is runnable, so it fires between
    // batches only where the writer lets the event loop turn. Before, a run's works were one
    // writeMany, one chain of in-memory work: no timer fired, and no agent's report was read,
    // until every cluster's work was pushed and the bindings and status written.
    const batches: { names: string[]; ticks: number }[] = [];
    let ticks = 0;
    let ticking = true;
    const tick = () => {
      ticks++;
      if (ticking) setTimeout(tick, 0);
    };
    setTimeout(tick, 0);
    const store = {
      writeMany: async (writes: ManyWrite[]) => {
        batches.push({ names: writes.map((w) => w.name), ticks });
        return writes.map(() => null);
      },
    };
    const writes: ManyWrite[] = Array.from({ length: 2 * WRITES_PER_TURN + 3 }, (_, i) => ({
      namespace: "c",
      name: `w${i}`,
      req: { verb: "delete" },
      known: null,
    }));
    const out = await writeInTurns(store, writes);
    const after = ticks;
    ticking = false;
    // Every write once, in order, WRITES_PER_TURN to a batch; one outcome each.
    expect(batches.map((b) => b.names.length)).toEqual([WRITES_PER_TURN, WRITES_PER_TURN, 3]);
    expect(batches.flatMap((b) => b.names)).toEqual(writes.map((w) => w.name));
    expect(out).toHaveLength(writes.length);
    // The timer ran before each batch after the first, and after the last.
    expect(batches[1]!.ticks).toBeGreaterThan(batches[0]!.ticks);
    expect(batches[2]!.ticks).toBeGreaterThan(batches[1]!.ticks);
    expect(after).toBeGreaterThan(batches[2]!.ticks);
  });

  it("a PickAll placement gains a cluster that joins later", async () => {
    await createNamespaces("joiners");
    const r = await call("POST", CRP(), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "joiners" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "joiners" }],
        policy: {
          placementType: "PickAll",
          affinity: {
            clusterAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { role: "joiner" } } }] },
            },
          },
        },
      },
    });
    expect(r.status).toBe(201);
    expect(Object.keys(await worksOf("joiners"))).toEqual([]);
    await createCluster("joiner-1", { role: "joiner" });
    await run("", "joiners");
    expect(Object.keys(await worksOf("joiners"))).toEqual(["joiner-1"]);
  });
});
