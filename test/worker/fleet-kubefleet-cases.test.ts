// KubeFleet's own unit-test cases, driven over the HTTP API in workerd (objects and placements
// written as a user writes them, outcomes read from the placements' status, snapshots, bindings
// and works): kubefleet-dev/kubefleet `pkg/utils/controller/resource_selector_resolver_test.go`
// (selection, never-propagated objects, ordering, stripped fields, user errors with KubeFleet's
// messages), `pkg/scheduler/framework` and its plugins' tests and `test/scheduler/pickn_integration_test.go`
// (PickN scores and tie-breaks, topology spread, required affinity, taints, eligibility,
// up- and downscaling on one policy snapshot), `pickfixed_integration_test.go`, and the
// placement controller's status for clusters it could not schedule (`placement_status.go`).
import { describe, expect, it } from "vitest";
import { AVAILABLE, call, condition, createCluster, createNamespaces, merge } from "./helpers.ts";
import { CRP, FLEET_API, fleetPlacements, runPlacementNow, selectedOf } from "./fleet-kit.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const WORKS = "/apis/work.open-cluster-management.io/v1/manifestworks";
const MC = "/apis/cluster.open-cluster-management.io/v1/managedclusters";

/** A PickAll policy no cluster passes: the placement selects and snapshots, and places nowhere. */
const NOWHERE = {
  placementType: "PickAll",
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { "kubefleet-cases": "nowhere" } } }] },
    },
  },
};

/** Required affinity on the label `pool=<pool>`: each scheduling case has its own clusters. */
const inPool = (pool: string) => ({
  clusterAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { pool } } }] } },
});

const { crp, rp } = fleetPlacements(NOWHERE);
const run = runPlacementNow;
const selected = selectedOf;
/** The clusters a placement's status lists (scheduled ones), sorted. */
const placedOn = (p: Json): string[] =>
  (p.status?.placementStatuses ?? [])
    .map((s: Json) => s.clusterName)
    .filter(Boolean)
    .sort();

/** POSTs an object to its collection (core or grouped) in `ns`; expects 201. */
async function create(apiVersion: string, plural: string, ns: string, body: Record<string, unknown>): Promise<Json> {
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const kindOf: Record<string, string> = {
    configmaps: "ConfigMap",
    secrets: "Secret",
    serviceaccounts: "ServiceAccount",
    services: "Service",
    persistentvolumeclaims: "PersistentVolumeClaim",
    limitranges: "LimitRange",
    resourcequotas: "ResourceQuota",
    deployments: "Deployment",
    statefulsets: "StatefulSet",
    daemonsets: "DaemonSet",
    jobs: "Job",
    cronjobs: "CronJob",
    ingresses: "Ingress",
    networkpolicies: "NetworkPolicy",
    poddisruptionbudgets: "PodDisruptionBudget",
    horizontalpodautoscalers: "HorizontalPodAutoscaler",
    roles: "Role",
    rolebindings: "RoleBinding",
  };
  const r = await call("POST", `${base}/namespaces/${ns}/${plural}`, { apiVersion, kind: kindOf[plural], ...body });
  expect(r.status, `${plural} ${JSON.stringify(r.body)}`).toBe(201);
  return r.body;
}

const POD = (labels: Record<string, string> = { app: "web" }) => ({
  metadata: { labels },
  spec: { containers: [{ name: "web", image: "nginx:1.27" }] },
});
const JOB_POD = { spec: { restartPolicy: "Never", containers: [{ name: "run", image: "busybox:1.36", command: ["true"] }] } };
const deployment = (name: string, labels: Record<string, string> = {}, extra: Record<string, unknown> = {}) => ({
  metadata: { name, labels, ...extra },
  spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: POD({ app: name }) },
});

/** Starts deleting an object held by a finalizer: it stays, with a deletionTimestamp. */
async function deleting(path: string) {
  const cur = (await call("GET", path)).body;
  expect((await call("PATCH", path, { metadata: { finalizers: ["example.com/hold"] } }, merge)).status).toBe(200);
  const d = await call("DELETE", path);
  expect([200, 202], JSON.stringify(d.body)).toContain(d.status);
  expect((await call("GET", path)).body.metadata.deletionTimestamp, cur.metadata.name).toBeDefined();
}

// ---------------------------------------------------------------------------------------------

describe("resource selection over HTTP (KubeFleet's resource_selector_resolver_test.go)", () => {
  it("selects a namespace with its resources, sorted in KubeFleet's apply order, leaving what a cluster makes itself", async () => {
    const ns = "kf-order";
    await createNamespaces(ns);
    // Created out of order, one of each kind the hub stores.
    await create("autoscaling/v2", "horizontalpodautoscalers", ns, {
      metadata: { name: "web" },
      spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" }, maxReplicas: 3 },
    });
    await create("networking.k8s.io/v1", "ingresses", ns, {
      metadata: { name: "web" },
      spec: {
        rules: [{ host: "web.example.com", http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }],
      },
    });
    await create("batch/v1", "cronjobs", ns, { metadata: { name: "tick" }, spec: { schedule: "*/5 * * * *", jobTemplate: { spec: { template: JOB_POD } } } });
    await create("batch/v1", "jobs", ns, { metadata: { name: "once" }, spec: { template: JOB_POD } });
    await create("apps/v1", "statefulsets", ns, {
      metadata: { name: "db" },
      spec: { serviceName: "db", replicas: 1, selector: { matchLabels: { app: "db" } }, template: POD({ app: "db" }) },
    });
    await create("apps/v1", "deployments", ns, deployment("web"));
    await create("apps/v1", "daemonsets", ns, {
      metadata: { name: "agent" },
      spec: { selector: { matchLabels: { app: "agent" } }, template: POD({ app: "agent" }) },
    });
    await create("v1", "services", ns, { metadata: { name: "web" }, spec: { selector: { app: "web" }, ports: [{ name: "http", port: 80 }] } });
    await create("rbac.authorization.k8s.io/v1", "rolebindings", ns, {
      metadata: { name: "read" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "reader" },
      subjects: [{ kind: "ServiceAccount", name: "builder", namespace: ns }],
    });
    await create("rbac.authorization.k8s.io/v1", "roles", ns, {
      metadata: { name: "reader" },
      rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"] }],
    });
    await create("v1", "persistentvolumeclaims", ns, {
      metadata: { name: "data" },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
    });
    await create("v1", "configmaps", ns, { metadata: { name: "settings" }, data: { a: "1" } });
    await create("v1", "configmaps", ns, { metadata: { name: "kube-root-ca.crt" }, data: { "ca.crt": "x" } });
    await create("v1", "secrets", ns, { metadata: { name: "creds" }, type: "Opaque", stringData: { k: "v" } });
    await create("v1", "serviceaccounts", ns, { metadata: { name: "builder" } });
    const defaultSA = await call("POST", `/api/v1/namespaces/${ns}/serviceaccounts`, {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "default" },
    });
    expect([201, 409]).toContain(defaultSA.status);
    await create("v1", "secrets", ns, {
      metadata: { name: "builder-token", annotations: { "kubernetes.io/service-account.name": "builder" } },
      type: "kubernetes.io/service-account-token",
    });
    await create("policy/v1", "poddisruptionbudgets", ns, { metadata: { name: "web" }, spec: { minAvailable: 1, selector: { matchLabels: { app: "web" } } } });
    await create("v1", "limitranges", ns, { metadata: { name: "limits" }, spec: { limits: [{ type: "Container", default: { cpu: "500m" } }] } });
    await create("v1", "resourcequotas", ns, { metadata: { name: "quota" }, spec: { hard: { pods: "10" } } });
    await create("networking.k8s.io/v1", "networkpolicies", ns, { metadata: { name: "deny" }, spec: { podSelector: {} } });

    const p = await crp("kf-order", [{ group: "", version: "v1", kind: "Namespace", name: ns }]);
    expect(condition(p, "ClusterResourcePlacementScheduled")).toMatchObject({ status: "True" });
    expect(selected(p)).toEqual([
      `Namespace//${ns}`,
      `NetworkPolicy/${ns}/deny`,
      `ResourceQuota/${ns}/quota`,
      `LimitRange/${ns}/limits`,
      `PodDisruptionBudget/${ns}/web`,
      `ServiceAccount/${ns}/builder`,
      `Secret/${ns}/creds`,
      `ConfigMap/${ns}/settings`,
      `PersistentVolumeClaim/${ns}/data`,
      `Role/${ns}/reader`,
      `RoleBinding/${ns}/read`,
      `Service/${ns}/web`,
      `DaemonSet/${ns}/agent`,
      `Deployment/${ns}/web`,
      `HorizontalPodAutoscaler/${ns}/web`,
      `StatefulSet/${ns}/db`,
      `Job/${ns}/once`,
      `CronJob/${ns}/tick`,
      `Ingress/${ns}/web`,
    ]);
    // The snapshot holds the same objects, in the same order.
    const snap = (await call("GET", `${FLEET_API}/v1beta1/clusterresourcesnapshots/kf-order-0-snapshot`)).body;
    expect(snap.spec.selectedResources.map((o: Json) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`)).toEqual(selected(p));
  });

  it("strips what the hub set from the snapshot's objects (TestGenerateResourceContent)", async () => {
    const ns = "kf-strip";
    await createNamespaces(ns);
    await create("v1", "services", ns, {
      metadata: {
        name: "svc",
        labels: { "label-key": "label-value" },
        annotations: { "kubectl.kubernetes.io/last-applied-configuration": "{}", "svc-annotation-key": "svc-object-annotation-key-value" },
        finalizers: ["object-finalizer"],
      },
      spec: { selector: { app: "web" }, clusterIP: "10.0.0.10", ports: [{ name: "svc-port", port: 9001, nodePort: 30001 }], type: "NodePort" },
    });
    await create("apps/v1", "deployments", ns, deployment("web", {}, { annotations: { "deployment.kubernetes.io/revision": "3" } }));
    await create("batch/v1", "jobs", ns, { metadata: { name: "once" }, spec: { template: JOB_POD } });
    await crp("kf-strip", [{ group: "", version: "v1", kind: "Namespace", name: ns }]);
    const snap = (await call("GET", `${FLEET_API}/v1beta1/clusterresourcesnapshots/kf-strip-0-snapshot`)).body;
    const byKind = Object.fromEntries(snap.spec.selectedResources.map((o: Json) => [o.kind, o]));
    for (const o of snap.spec.selectedResources) {
      for (const k of ["uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "ownerReferences", "selfLink", "deletionTimestamp"])
        expect(o.metadata[k], `${o.kind} ${k}`).toBeUndefined();
      expect(o.status, o.kind).toBeUndefined();
    }
    expect(byKind.Service.metadata).toEqual({
      name: "svc",
      namespace: ns,
      labels: { "label-key": "label-value" },
      annotations: { "svc-annotation-key": "svc-object-annotation-key-value" },
      finalizers: ["object-finalizer"],
    });
    expect(byKind.Service.spec.clusterIP).toBeUndefined();
    expect(byKind.Service.spec.clusterIPs).toBeUndefined();
    expect(byKind.Service.spec.ports[0].nodePort).toBeUndefined();
    expect(byKind.Service.spec.ports[0]).toMatchObject({ name: "svc-port", port: 9001 });
    expect(byKind.Deployment.metadata.annotations).toBeUndefined();
    // The hub generated the Job's selector (controller-uid labels), as kube-apiserver does; not dispatched.
    const job = byKind.Job;
    expect(JSON.stringify(job.spec.selector ?? {})).not.toContain("controller-uid");
    expect(JSON.stringify(job.spec.template.metadata ?? {})).not.toContain("controller-uid");
  });

  it("selects by name or label (MatchLabels, MatchExpressions) in a ResourcePlacement's namespace, skipping deleting and reserved objects", async () => {
    const ns = "kf-rp";
    await createNamespaces(ns);
    await create("apps/v1", "deployments", ns, deployment("test-deployment"));
    await create("apps/v1", "deployments", ns, deployment("frontend-deployment", { app: "frontend", tier: "web" }));
    await create("apps/v1", "deployments", ns, deployment("backend-deployment", { app: "backend", tier: "api" }));
    await create("apps/v1", "deployments", ns, deployment("test-deleting-deployment", { app: "frontend", tier: "api" }));
    await deleting(`/apis/apps/v1/namespaces/${ns}/deployments/test-deleting-deployment`);
    await create("v1", "configmaps", ns, { metadata: { name: "test-configmap" }, data: {} });
    await create("v1", "configmaps", ns, { metadata: { name: "kube-root-ca.crt" }, data: { "ca.crt": "x" } });

    const D = { group: "apps", version: "v1", kind: "Deployment" };
    const byName = await rp(ns, "single", [{ ...D, name: "test-deployment" }]);
    expect(selected(byName)).toEqual([`Deployment/${ns}/test-deployment`]);
    const mixed = await rp(ns, "mixed", [
      { ...D, name: "test-deployment" },
      { ...D, name: "test-deleting-deployment" },
    ]);
    expect(selected(mixed)).toEqual([`Deployment/${ns}/test-deployment`]);
    const missing = await rp(ns, "missing", [{ ...D, name: "nope" }]);
    expect(selected(missing)).toEqual([]);
    expect(condition(missing, "ResourcePlacementScheduled")).toMatchObject({ status: "True" });
    const labels = await rp(ns, "labels", [{ ...D, labelSelector: { matchLabels: { app: "frontend" } } }]);
    expect(selected(labels)).toEqual([`Deployment/${ns}/frontend-deployment`]);
    const expressions = await rp(ns, "expressions", [{ ...D, labelSelector: { matchExpressions: [{ key: "tier", operator: "In", values: ["web", "api"] }] } }]);
    expect(selected(expressions)).toEqual([`Deployment/${ns}/backend-deployment`, `Deployment/${ns}/frontend-deployment`]);
    const ordered = await rp(ns, "ordered", [
      { ...D, name: "test-deployment" },
      { group: "", version: "v1", kind: "ConfigMap", name: "test-configmap" },
    ]);
    expect(selected(ordered)).toEqual([`ConfigMap/${ns}/test-configmap`, `Deployment/${ns}/test-deployment`]);
    const reserved = await rp(ns, "reserved", [{ group: "", version: "v1", kind: "ConfigMap", name: "kube-root-ca.crt" }]);
    expect(selected(reserved)).toEqual([]);
    const allConfigMaps = await rp(ns, "configmaps", [{ group: "", version: "v1", kind: "ConfigMap" }]);
    expect(selected(allConfigMaps)).toEqual([`ConfigMap/${ns}/test-configmap`]);
  });

  it("reports a selection the user must fix in the Scheduled condition, with KubeFleet's messages", async () => {
    const ns = "kf-errors";
    await createNamespaces(ns);
    await create("apps/v1", "deployments", ns, deployment("test-deployment"));
    const D = { group: "apps", version: "v1", kind: "Deployment" };
    const invalid = (p: Json, prefix: string) => {
      const c = condition(p, `${prefix}Scheduled`);
      expect(c).toMatchObject({ status: "False", reason: "InvalidResourceSelectors" });
      return c.message as string;
    };
    const dup = await rp(ns, "dup", [
      { ...D, name: "test-deployment" },
      { ...D, name: "test-deployment" },
    ]);
    expect(invalid(dup, "ResourcePlacement")).toBe(
      `The resource selectors are invalid: failed to process the request due to a client error: found duplicate resource {Group:apps Version:v1 Kind:Deployment Name:test-deployment Namespace:${ns} Envelope:<nil>}`,
    );
    expect(dup.status.selectedResources).toBeUndefined();
    // No snapshot, no binding, no work for a selection that failed.
    expect(
      (await call("GET", `${FLEET_API}/v1beta1/namespaces/${ns}/resourcesnapshots`)).body.items.filter((s: Json) => s.metadata.name.startsWith("dup-")),
    ).toEqual([]);

    const reservedNs = await crp("kf-reserved", [{ group: "", version: "v1", kind: "Namespace", name: "kube-system" }]);
    expect(invalid(reservedNs, "ClusterResourcePlacement")).toBe(
      "The resource selectors are invalid: failed to process the request due to a client error: invalid clusterRresourcePlacement kf-reserved: namespace kube-system is not allowed to propagate",
    );
    const fleetNs = await crp("kf-fleet-ns", [{ group: "", version: "v1", kind: "Namespace", name: "fleet-system" }]);
    expect(invalid(fleetNs, "ClusterResourcePlacement")).toContain("namespace fleet-system is not allowed to propagate");

    // Namespaces by label with their resources, one of them reserved: KubeFleet refuses the whole
    // selection. NamespaceOnly lists the namespaces themselves, as KubeFleet's fetchResources does.
    await createNamespaces("kf-env-a", "fleet-kf-labelled");
    for (const n of ["kf-env-a", "fleet-kf-labelled"])
      expect((await call("PATCH", `/api/v1/namespaces/${n}`, { metadata: { labels: { environment: "kf-test" } } }, merge)).status).toBe(200);
    const withResources = await crp("kf-by-label", [
      { group: "", version: "v1", kind: "Namespace", labelSelector: { matchLabels: { environment: "kf-test" } } },
    ]);
    expect(invalid(withResources, "ClusterResourcePlacement")).toContain(
      "invalid clusterRresourcePlacement kf-by-label: namespace fleet-kf-labelled is not allowed to propagate",
    );
    const only = await crp("kf-by-label-only", [
      { group: "", version: "v1", kind: "Namespace", labelSelector: { matchLabels: { environment: "kf-test" } }, selectionScope: "NamespaceOnly" },
    ]);
    expect(selected(only)).toEqual(["Namespace//fleet-kf-labelled", "Namespace//kf-env-a"]);
    const nwrs = await crp("kf-nwrs-missing", [
      { group: "", version: "v1", kind: "Namespace", name: "kf-not-there", selectionScope: "NamespaceWithResourceSelectors" },
    ]);
    expect(invalid(nwrs, "ClusterResourcePlacement")).toBe(
      "The resource selectors are invalid: failed to process the request due to a client error: invalid clusterResourcePlacement kf-nwrs-missing: NamespaceWithResourceSelectors mode requires exactly one namespace, but no namespaces were selected",
    );
  });

  it("selects with NamespaceOnly and NamespaceWithResourceSelectors, and a deleting object leaves the next snapshot", async () => {
    const ns = "kf-scopes";
    await createNamespaces(ns);
    await create("apps/v1", "deployments", ns, deployment("frontend", { app: "frontend" }));
    await create("apps/v1", "deployments", ns, deployment("backend", { app: "backend" }));
    await create("v1", "configmaps", ns, { metadata: { name: "settings" }, data: {} });
    const only = await crp("kf-ns-only", [{ group: "", version: "v1", kind: "Namespace", name: ns, selectionScope: "NamespaceOnly" }]);
    expect(selected(only)).toEqual([`Namespace//${ns}`]);
    const nwrs = await crp("kf-nwrs", [
      { group: "", version: "v1", kind: "Namespace", name: ns, selectionScope: "NamespaceWithResourceSelectors" },
      { group: "apps", version: "v1", kind: "Deployment", labelSelector: { matchLabels: { app: "frontend" } } },
    ]);
    expect(selected(nwrs)).toEqual([`Namespace//${ns}`, `Deployment/${ns}/frontend`]);
    const all = await crp("kf-all", [{ group: "", version: "v1", kind: "Namespace", name: ns }]);
    expect(selected(all)).toEqual([`Namespace//${ns}`, `ConfigMap/${ns}/settings`, `Deployment/${ns}/backend`, `Deployment/${ns}/frontend`]);
    await deleting(`/api/v1/namespaces/${ns}/configmaps/settings`);
    await run("", "kf-all");
    const after = (await call("GET", CRP("kf-all"))).body;
    expect(selected(after)).toEqual([`Namespace//${ns}`, `Deployment/${ns}/backend`, `Deployment/${ns}/frontend`]);
    expect(after.status.observedResourceIndex).toBe("1");
  });
});

// ---------------------------------------------------------------------------------------------

describe("scheduling over HTTP (KubeFleet's scheduler framework, plugins and integration tests)", () => {
  /** The policy snapshot's `targetClusters`, as `name:selected:reason`. */
  const targets = async (name: string): Promise<Json[]> => {
    const snaps = (
      await call("GET", `${FLEET_API}/v1beta1/clusterschedulingpolicysnapshots?labelSelector=${encodeURIComponent(`kubernetes-fleet.io/parent-CRP=${name}`)}`)
    ).body.items;
    const latest = snaps.find((s: Json) => s.metadata.labels["kubernetes-fleet.io/is-latest-snapshot"] === "true");
    return latest.status.targetClusters;
  };

  it("PickN: picks by preferred affinity, then the greater name; reports the others with their scores", async () => {
    await createCluster("kf-n-a", { pool: "kf-n", env: "prod" });
    await createCluster("kf-n-b", { pool: "kf-n", env: "prod" });
    await createCluster("kf-n-c", { pool: "kf-n", env: "canary" });
    await createCluster("kf-n-d", { pool: "kf-n", env: "canary" });
    await createNamespaces("kf-n-app");
    const p = await crp("kf-n", [{ group: "", version: "v1", kind: "Namespace", name: "kf-n-app" }], {
      placementType: "PickN",
      numberOfClusters: 3,
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { pool: "kf-n" } } }] },
          preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 10, preference: { labelSelector: { matchLabels: { env: "prod" } } } }],
        },
      },
    });
    expect(placedOn(p)).toEqual(["kf-n-a", "kf-n-b", "kf-n-d"]);
    expect(condition(p, "ClusterResourcePlacementScheduled")).toMatchObject({
      status: "True",
      reason: "SchedulingPolicyFulfilled",
      message: "found all cluster needed as specified by the scheduling policy, found 3 cluster(s)",
    });
    const t = await targets("kf-n");
    expect(t.find((d: Json) => d.clusterName === "kf-n-a")).toMatchObject({
      selected: true,
      clusterScore: { affinityScore: 10, priorityScore: 0 },
      reason: 'Successfully scheduled resources for placement in "kf-n-a" (affinity score: 10, topology spread score: 0): picked by scheduling policy',
    });
    expect(t.find((d: Json) => d.clusterName === "kf-n-c")).toMatchObject({
      selected: false,
      reason: 'Cluster "kf-n-c" does not score high enough (affinity score: 0, topology spread score: 0)',
    });
  });

  it("PickN: a property sorter interpolates its weight between the fleet's extremes, rounded as Go rounds", async () => {
    const claims = (cost: string) => ({ conditions: [AVAILABLE], clusterClaims: [{ name: "kf-cost", value: cost }] });
    await createCluster("kf-p-cheap", { pool: "kf-p" }, claims("0"));
    await createCluster("kf-p-mid", { pool: "kf-p" }, claims("5"));
    await createCluster("kf-p-dear", { pool: "kf-p" }, claims("10"));
    await createNamespaces("kf-p-app");
    await crp("kf-p", [{ group: "", version: "v1", kind: "Namespace", name: "kf-p-app" }], {
      placementType: "PickN",
      numberOfClusters: 3,
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { pool: "kf-p" } } }] },
          preferredDuringSchedulingIgnoredDuringExecution: [{ weight: -5, preference: { propertySorter: { name: "kf-cost", sortOrder: "Descending" } } }],
        },
      },
    });
    const scores = Object.fromEntries((await targets("kf-p")).filter((d: Json) => d.selected).map((d: Json) => [d.clusterName, d.clusterScore.affinityScore]));
    // Descending: (value - min) / (max - min) x weight; -2.5 rounds away from zero.
    expect(scores).toEqual({ "kf-p-cheap": 0, "kf-p-mid": -3, "kf-p-dear": -5 });
  });

  it("PickN: upscaling and downscaling keep the clusters it has, on one policy snapshot", async () => {
    for (const c of ["kf-s-a", "kf-s-b", "kf-s-c", "kf-s-d"]) await createCluster(c, { pool: "kf-s" });
    await createNamespaces("kf-s-app");
    const p = await crp("kf-s", [{ group: "", version: "v1", kind: "Namespace", name: "kf-s-app" }], {
      placementType: "PickN",
      numberOfClusters: 1,
      affinity: inPool("kf-s"),
    });
    expect(placedOn(p)).toEqual(["kf-s-d"]);
    // numberOfClusters 1 -> 3: the cluster it has stays, two more are picked.
    const up = await call("PATCH", CRP("kf-s"), { spec: { policy: { numberOfClusters: 3 } } }, merge);
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    let now = (await call("GET", CRP("kf-s"))).body;
    expect(placedOn(now)).toEqual(["kf-s-b", "kf-s-c", "kf-s-d"]);
    const snaps = async () =>
      (await call("GET", `${FLEET_API}/v1beta1/clusterschedulingpolicysnapshots?labelSelector=${encodeURIComponent("kubernetes-fleet.io/parent-CRP=kf-s")}`))
        .body.items;
    let s = await snaps();
    expect(s.map((x: Json) => x.metadata.name)).toEqual(["kf-s-0"]);
    expect(s[0].metadata.annotations["kubernetes-fleet.io/number-of-clusters"]).toBe("3");
    expect(s[0].metadata.annotations["kubernetes-fleet.io/CRP-generation"]).toBe(String(now.metadata.generation));
    // Downscaling drops the lowest scored first; on a tie the smaller name.
    expect((await call("PATCH", CRP("kf-s"), { spec: { policy: { numberOfClusters: 2 } } }, merge)).status).toBe(200);
    now = (await call("GET", CRP("kf-s"))).body;
    expect(placedOn(now)).toEqual(["kf-s-c", "kf-s-d"]);
    s = await snaps();
    expect(s.map((x: Json) => x.metadata.name)).toEqual(["kf-s-0"]);
    expect(s[0].metadata.annotations["kubernetes-fleet.io/number-of-clusters"]).toBe("2");
    // A change of the policy itself is a new snapshot.
    expect((await call("PATCH", CRP("kf-s"), { spec: { policy: { tolerations: [{ key: "k", operator: "Exists" }] } } }, merge)).status).toBe(200);
    expect((await snaps()).map((x: Json) => x.metadata.name).sort()).toEqual(["kf-s-0", "kf-s-1"]);
  });

  it("PickN with too few clusters: Scheduled False, one status per missing cluster with the reason of a cluster not picked", async () => {
    await createCluster("kf-few-a", { pool: "kf-few", env: "prod" });
    await createCluster("kf-few-b", { pool: "kf-few", env: "canary" });
    await createNamespaces("kf-few-app");
    const p = await crp("kf-few", [{ group: "", version: "v1", kind: "Namespace", name: "kf-few-app" }], {
      placementType: "PickN",
      numberOfClusters: 3,
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            clusterSelectorTerms: [{ labelSelector: { matchLabels: { pool: "kf-few", env: "prod" } } }],
          },
        },
      },
    });
    expect(placedOn(p)).toEqual(["kf-few-a"]);
    expect(condition(p, "ClusterResourcePlacementScheduled")).toMatchObject({
      status: "False",
      reason: "SchedulingPolicyUnfulfilled",
      message: "could not find all clusters needed as specified by the scheduling policy, found 1 cluster(s) instead",
    });
    // Every other cluster of this hub is filtered by the required term; the unfilled statuses
    // (at most the 2 missing) carry the reasons of the first clusters not selected.
    const unfilled = p.status.placementStatuses.filter((s: Json) => !s.clusterName);
    expect(unfilled).toHaveLength(2);
    for (const u of unfilled)
      expect(u.conditions[0]).toMatchObject({
        type: "Scheduled",
        status: "False",
        reason: "ScheduleFailed",
        message: "ClusterUnschedulable, cluster does not match with any of the required cluster affinity terms",
      });
  });

  it("PickN: topology spread DoNotSchedule, one pick at a time (pick with required topology spread constraints)", async () => {
    // KubeFleet's integration fleet, by region: east x3, central x2, west x2, and an unhealthy
    // east cluster, filtered by eligibility (its region still counts as a domain).
    const fleet: [string, string][] = [
      ["kf-b-1-east", "east"],
      ["kf-b-2-east", "east"],
      ["kf-b-3-east", "east"],
      ["kf-b-4-central", "central"],
      ["kf-b-5-central", "central"],
      ["kf-b-6-west", "west"],
      ["kf-b-7-west", "west"],
    ];
    for (const [name, region] of fleet) await createCluster(name, { pool: "kf-t", region });
    await createCluster(
      "kf-b-8-unhealthy",
      { pool: "kf-t", region: "east" },
      {
        conditions: [
          { type: "ManagedClusterConditionAvailable", status: "False", reason: "Test", message: "down", lastTransitionTime: "2026-01-01T00:00:00Z" },
        ],
      },
    );
    await createNamespaces("kf-t-app");
    const p = await crp("kf-t", [{ group: "", version: "v1", kind: "Namespace", name: "kf-t-app" }], {
      placementType: "PickN",
      numberOfClusters: 2,
      affinity: inPool("kf-t"),
      topologySpreadConstraints: [{ maxSkew: 1, topologyKey: "region", whenUnsatisfiable: "DoNotSchedule" }],
    });
    // First cycle: every region empty, each cluster scores -1; the greatest name (7, west) wins.
    // Second: west has one; east or central keep the skew (0), west would make it 2.
    expect(placedOn(p)).toEqual(["kf-b-5-central", "kf-b-7-west"]);
    const t = await targets("kf-t");
    expect(t.find((d: Json) => d.clusterName === "kf-b-7-west")).toMatchObject({ selected: true, clusterScore: { affinityScore: 0, priorityScore: -1 } });
    expect(t.find((d: Json) => d.clusterName === "kf-b-5-central")).toMatchObject({ selected: true, clusterScore: { affinityScore: 0, priorityScore: 0 } });
    expect(t.find((d: Json) => d.clusterName === "kf-b-6-west")).toEqual({
      clusterName: "kf-b-6-west",
      selected: false,
      reason: 'ClusterUnschedulable, violated doNotSchedule topology spread constraint "region" (max skew 1)',
    });
    expect(t.find((d: Json) => d.clusterName === "kf-b-8-unhealthy")).toMatchObject({
      selected: false,
      reason: expect.stringMatching(
        /^ClusterUnschedulable, cluster is not connected to the fleet: unhealthy for a prolonged period of time \(last transitioned [\d.]+ minutes ago\)$/,
      ),
    });
  });

  it("filters untolerated taints and clusters not matching required terms, in KubeFleet's words", async () => {
    await createCluster("kf-a-taint-a", { pool: "kf-a-taint" });
    await createCluster("kf-a-taint-b", { pool: "kf-a-taint" });
    expect((await call("PATCH", `${MC}/kf-a-taint-b`, { spec: { taints: [{ key: "gpu", value: "yes", effect: "NoSelect" }] } }, merge)).status).toBe(200);
    await createNamespaces("kf-a-taint-app");
    const p = await crp("kf-a-taint", [{ group: "", version: "v1", kind: "Namespace", name: "kf-a-taint-app" }], {
      placementType: "PickAll",
      affinity: inPool("kf-a-taint"),
    });
    expect(placedOn(p)).toEqual(["kf-a-taint-a"]);
    const t = await targets("kf-a-taint");
    expect(t.find((d: Json) => d.clusterName === "kf-a-taint-b")).toEqual({
      clusterName: "kf-a-taint-b",
      selected: false,
      reason: "ClusterUnschedulable, taint &{Key:gpu Value:yes Effect:NoSelect} cannot be tolerated",
    });
    const tolerated = await crp("kf-a-taint-ok", [{ group: "", version: "v1", kind: "Namespace", name: "kf-a-taint-app" }], {
      placementType: "PickAll",
      affinity: inPool("kf-a-taint"),
      tolerations: [{ key: "gpu", operator: "Equal", value: "yes" }],
    });
    expect(placedOn(tolerated)).toEqual(["kf-a-taint-a", "kf-a-taint-b"]);
  });

  it("PickFixed: the names it finds and may use; the others reported as KubeFleet's scheduler words them", async () => {
    await createCluster("kf-f-a");
    await createCluster("kf-f-b");
    expect((await call("PATCH", `${MC}/kf-f-b`, { spec: { hubAcceptsClient: false } }, merge)).status).toBe(200);
    await createNamespaces("kf-f-app");
    const p = await crp("kf-f", [{ group: "", version: "v1", kind: "Namespace", name: "kf-f-app" }], {
      placementType: "PickFixed",
      clusterNames: ["kf-f-missing", "kf-f-b", "kf-f-a"],
    });
    expect(placedOn(p)).toEqual(["kf-f-a"]);
    expect(condition(p, "ClusterResourcePlacementScheduled")).toMatchObject({
      status: "False",
      reason: "SchedulingPolicyUnfulfilled",
      message: "could not find all clusters needed as specified by the scheduling policy, found 1 cluster(s) instead",
    });
    const unfilled = p.status.placementStatuses.filter((s: Json) => !s.clusterName).map((s: Json) => s.conditions[0].message);
    expect(unfilled).toEqual([
      'Cluster "kf-f-b" is not eligible for resource placement yet: cluster is not connected to the fleet: member agent not joined yet',
      'Specified cluster "kf-f-missing" is not found',
    ]);
    expect((await targets("kf-f")).map((d: Json) => `${d.clusterName}:${d.selected}`)).toEqual(["kf-f-a:true", "kf-f-b:false", "kf-f-missing:false"]);
  });
});

// ---------------------------------------------------------------------------------------------

describe("rollout over HTTP (KubeFleet's rollout controller)", () => {
  /** Reports a work Applied and Available at its generation, as its agent would. */
  async function report(cluster: string, name: string) {
    const path = `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks/${name}`;
    const w = (await call("GET", path)).body;
    const gen = w.metadata.generation;
    const at = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    const cond = (type: string) => ({ type, status: "True", observedGeneration: gen, reason: "Test", message: "", lastTransitionTime: at });
    expect((await call("PATCH", `${path}/status`, { status: { conditions: [cond("Applied"), cond("Available")] } }, merge)).status).toBe(200);
  }
  const indexes = async (tracking: string): Promise<Record<string, string>> => {
    const r = await call("GET", `${WORKS}?labelSelector=${encodeURIComponent(`kubernetes-fleet.io/parent-CRP=${tracking}`)}`);
    return Object.fromEntries(r.body.items.map((w: Json) => [w.metadata.namespace, w.metadata.labels["kubernetes-fleet.io/parent-resource-snapshot-index"]]));
  };

  it("maxUnavailable 50% of 4: two clusters at a time, the next two once those are Available", async () => {
    const clusters = ["kf-r-a", "kf-r-b", "kf-r-c", "kf-r-d"];
    for (const c of clusters) await createCluster(c, { pool: "kf-r" });
    await createNamespaces("kf-r-app");
    await create("v1", "configmaps", "kf-r-app", { metadata: { name: "settings" }, data: { v: "1" } });
    await crp(
      "kf-r",
      [{ group: "", version: "v1", kind: "Namespace", name: "kf-r-app" }],
      { placementType: "PickAll", affinity: inPool("kf-r") },
      {
        strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "50%", maxSurge: 0, unavailablePeriodSeconds: 1 } },
      },
    );
    expect(Object.values(await indexes("kf-r"))).toEqual(["0", "0", "0", "0"]);
    for (const c of clusters) await report(c, "kf-r-work");
    await run("", "kf-r");
    expect((await call("PATCH", "/api/v1/namespaces/kf-r-app/configmaps/settings", { data: { v: "2" } }, merge)).status).toBe(200);
    await run("", "kf-r");
    let now = await indexes("kf-r");
    const first = clusters.filter((c) => now[c] === "1");
    expect(first).toHaveLength(2);
    const p = (await call("GET", CRP("kf-r"))).body;
    expect(condition(p, "ClusterResourcePlacementRolloutStarted")).toMatchObject({
      status: "False",
      reason: "RolloutNotStartedYet",
      message: "The rollout is being blocked by the rollout strategy in 2 cluster(s)",
    });
    // One of the two Available again: one more may go (ready 3 - (4 - 2) = 1).
    await report(first[0]!, "kf-r-work");
    await run("", "kf-r");
    now = await indexes("kf-r");
    expect(clusters.filter((c) => now[c] === "1")).toHaveLength(3);
    for (const c of clusters.filter((x) => now[x] === "1")) await report(c, "kf-r-work");
    await run("", "kf-r");
    now = await indexes("kf-r");
    expect(Object.values(now)).toEqual(["1", "1", "1", "1"]);
  });
});
