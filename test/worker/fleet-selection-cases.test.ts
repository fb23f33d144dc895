// KubeFleet's own unit-test cases for resource selection, never-propagated objects, ordering,
// stripped fields, envelopes and resource snapshots, driven over the HTTP API in workerd (objects
// written as a user writes them; outcomes read from the placement's `status.selectedResources`,
// its resource snapshots and the rendered ManifestWork's manifests). Each test names its upstream
// cases: kubefleet-dev/kubefleet `pkg/utils/controller/resource_selector_resolver_test.go`
// (TestGatherSelectedResource, TestSortResources, TestShouldPropagateObj, TestGenerateResourceContent),
// `pkg/controllers/workgenerator/envelope_test.go` (TestExtractManifestsFromEnvelopeCR) and
// `pkg/utils/controller/resource_snapshot_resolver_test.go` (GetOrCreateResourceSnapshot,
// BuildMasterResourceSnapshot, deleteRedundantResourceSnapshots). The cases
// test/worker/fleet-kubefleet-cases.test.ts already drives are not repeated here.
import { describe, expect, it } from "vitest";
import { call, condition, createCluster, createNamespaces, merge } from "./helpers.ts";
import { CRP, FLEET_API, fleetPlacements, RP, runPlacementNow, selectedOf } from "./fleet-kit.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const CRS = (name = "") => `${FLEET_API}/v1beta1/clusterresourcesnapshots${name ? `/${name}` : ""}`;
const WORKS = (cluster: string, name = "") => `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks${name ? `/${name}` : ""}`;
const NS = { group: "", version: "v1", kind: "Namespace" };
const CLUSTER_ROLE = { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole" };
const DEPLOYMENT = { group: "apps", version: "v1", kind: "Deployment" };
const CONFIG_MAP = { group: "", version: "v1", kind: "ConfigMap" };

/** A PickAll policy no cluster passes: the placement selects and snapshots, and places nowhere. */
const NOWHERE = {
  placementType: "PickAll",
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { "selection-cases": "nowhere" } } }] },
    },
  },
};

const { crp, rp } = fleetPlacements(NOWHERE);
const run = runPlacementNow;
const selected = selectedOf;
/** `Kind/namespace/name` of each object of a list (a snapshot's `selectedResources`, a work's manifests). */
const ids = (objs: Json[]): string[] => objs.map((o: Json) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`);

/** POSTs an object to `path`; expects 201 and returns it. */
async function create(path: string, body: Record<string, unknown>): Promise<Json> {
  const r = await call("POST", path, body);
  expect(r.status, `${path} ${JSON.stringify(r.body)}`).toBe(201);
  return r.body;
}

const clusterRole = (name: string, labels: Record<string, string> = {}) =>
  create("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name, labels },
    rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }],
  });
const configMap = (ns: string, name: string, data: Record<string, string> = {}, meta: Record<string, unknown> = {}) =>
  create(`/api/v1/namespaces/${ns}/configmaps`, { apiVersion: "v1", kind: "ConfigMap", metadata: { name, ...meta }, data });
const deployment = (ns: string, name: string, labels: Record<string, string> = {}) =>
  create(`/apis/apps/v1/namespaces/${ns}/deployments`, {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: "web", image: "nginx:1.27" }] } },
    },
  });
const labelNamespace = async (name: string, labels: Record<string, string>) =>
  expect((await call("PATCH", `/api/v1/namespaces/${name}`, { metadata: { labels } }, merge)).status).toBe(200);

/** Starts deleting an object held by a finalizer: it stays, with a deletionTimestamp. */
async function deleting(path: string) {
  expect((await call("PATCH", path, { metadata: { finalizers: ["example.com/hold"] } }, merge)).status).toBe(200);
  const d = await call("DELETE", path);
  expect([200, 202], JSON.stringify(d.body)).toContain(d.status);
  expect((await call("GET", path)).body.metadata.deletionTimestamp, path).toBeDefined();
}

/** Creates a CRD of `group` for `kind` (cluster-scoped unless `scope` says otherwise), served at `versions`. */
async function crd(group: string, kind: string, scope: "Cluster" | "Namespaced" = "Cluster", versions = ["v1alpha1"]) {
  const plural = `${kind.toLowerCase()}s`;
  await create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
      scope,
      versions: versions.map((name, i) => ({
        name,
        served: true,
        storage: i === 0,
        schema: { openAPIV3Schema: { type: "object", properties: { spec: { type: "object", "x-kubernetes-preserve-unknown-fields": true } } } },
      })),
    },
  });
}

// ---------------------------------------------------------------------------------------------

describe("selection (TestGatherSelectedResource)", () => {
  it("a ClusterRole selector (all of them, or one by name) and a Namespace: the Namespace first, then the ClusterRoles by name", async () => {
    // "should sort resources for cluster scoped placement" and "should select resources by name for
    // cluster scoped placement". The hub has ClusterRoles of its own: the "select all" here is a
    // label selector matching the two the case creates.
    await createNamespaces("sel-test-ns");
    await clusterRole("test-cluster-role", { case: "sel-sort" });
    await clusterRole("test-cluster-role-2", { case: "sel-sort" });
    const all = await crp("sel-sort", [
      { ...CLUSTER_ROLE, labelSelector: { matchLabels: { case: "sel-sort" } } },
      { ...NS, name: "sel-test-ns" },
    ]);
    expect(selected(all)).toEqual(["Namespace//sel-test-ns", "ClusterRole//test-cluster-role", "ClusterRole//test-cluster-role-2"]);
    const byName = await crp("sel-by-name", [
      { ...CLUSTER_ROLE, name: "test-cluster-role" },
      { ...NS, name: "sel-test-ns" },
    ]);
    expect(selected(byName)).toEqual(["Namespace//sel-test-ns", "ClusterRole//test-cluster-role"]);
    // "should return empty result when informer manager returns not found error for cluster scoped
    // placement": a namespace (with its content) that does not exist selects nothing, no error.
    const missing = await crp("sel-missing", [{ ...NS, name: "sel-not-there" }]);
    expect(selected(missing)).toEqual([]);
    expect(condition(missing, "ClusterResourcePlacementScheduled")).toMatchObject({ status: "True" });
    expect((await call("GET", CRS("sel-missing-0-snapshot"))).body.spec).toEqual({ selectedResources: [] });
  });

  it("namespaces by label with their content, leaving a deleting namespace, deleting objects and kube-root-ca.crt; NamespaceOnly lists the namespaces alone", async () => {
    // "should select namespaces and its children resources by using label selector for cluster
    // scoped placement", "should select only namespaces for namespace only scope for namespaces with labels".
    await createNamespaces("sel-lbl-test", "sel-lbl-deleting", "sel-lbl-prod");
    await labelNamespace("sel-lbl-test", { environment: "sel-lbl" });
    await labelNamespace("sel-lbl-deleting", { environment: "sel-lbl" });
    await labelNamespace("sel-lbl-prod", { environment: "sel-lbl-production" });
    await deployment("sel-lbl-test", "test-deployment");
    await deployment("sel-lbl-test", "test-deleting-deployment", { tier: "api", app: "frontend" });
    await deleting("/apis/apps/v1/namespaces/sel-lbl-test/deployments/test-deleting-deployment");
    await configMap("sel-lbl-test", "test-configmap");
    await configMap("sel-lbl-test", "kube-root-ca.crt", { "ca.crt": "x" });
    await configMap("sel-lbl-deleting", "inside");
    await deleting("/api/v1/namespaces/sel-lbl-deleting");

    const withResources = await crp("sel-lbl", [
      { ...NS, labelSelector: { matchLabels: { environment: "sel-lbl" } }, selectionScope: "NamespaceWithResources" },
    ]);
    expect(condition(withResources, "ClusterResourcePlacementScheduled")).toMatchObject({ status: "True" });
    expect(selected(withResources)).toEqual(["Namespace//sel-lbl-test", "ConfigMap/sel-lbl-test/test-configmap", "Deployment/sel-lbl-test/test-deployment"]);
    const only = await crp("sel-lbl-only", [
      { ...NS, labelSelector: { matchExpressions: [{ key: "environment", operator: "Exists" }] }, selectionScope: "NamespaceOnly" },
    ]);
    expect(selected(only).filter((s) => s.startsWith("Namespace//sel-lbl-"))).toEqual(["Namespace//sel-lbl-prod", "Namespace//sel-lbl-test"]);
  });

  it("NamespaceWithResourceSelectors: the namespace, what the other selectors name in it, and cluster-scoped kinds", async () => {
    // "should select namespace and specific resources with NamespaceWithResourceSelectors mode",
    // "should select namespace and cluster-scoped resources with NamespaceWithResourceSelectors mode",
    // "should select only namespace with NamespaceWithResourceSelectors mode when no other selectors provided".
    await createNamespaces("sel-nwrs", "sel-nwrs-prod");
    await deployment("sel-nwrs", "test-deployment");
    await configMap("sel-nwrs", "test-configmap");
    await configMap("sel-nwrs", "other");
    await configMap("sel-nwrs-prod", "test-configmap");
    await clusterRole("sel-nwrs-cluster-role");
    const nwrs = { ...NS, name: "sel-nwrs", selectionScope: "NamespaceWithResourceSelectors" };
    const specific = await crp("sel-nwrs-specific", [nwrs, { ...DEPLOYMENT, name: "test-deployment" }, { ...CONFIG_MAP, name: "test-configmap" }]);
    expect(selected(specific)).toEqual(["Namespace//sel-nwrs", "ConfigMap/sel-nwrs/test-configmap", "Deployment/sel-nwrs/test-deployment"]);
    const withCluster = await crp("sel-nwrs-cluster", [nwrs, { ...CLUSTER_ROLE, name: "sel-nwrs-cluster-role" }, { ...DEPLOYMENT, name: "test-deployment" }]);
    expect(selected(withCluster)).toEqual(["Namespace//sel-nwrs", "ClusterRole//sel-nwrs-cluster-role", "Deployment/sel-nwrs/test-deployment"]);
    const alone = await crp("sel-nwrs-alone", [nwrs]);
    expect(selected(alone)).toEqual(["Namespace//sel-nwrs"]);
  });

  it("user errors: a Namespace or a ClusterRole in a ResourcePlacement, a Deployment in a ClusterResourcePlacement (refused at the write, as KubeFleet's webhook refuses them), a duplicate through NamespaceWithResourceSelectors", async () => {
    // "should return error if a resourceplacement selects namespaces even for namespace only scope",
    // "should return error for cluster-scoped resource", "should return error for namespace-scoped
    // resource for cluster scoped placement", TestGatherSelectedResource_ErrorCases. On a KubeFleet
    // hub the first three never reach the resolver: its webhook (pkg/utils/validator/placement.go
    // validateResourceSelectors) refuses the placement's write.
    await createNamespaces("sel-err");
    await deployment("sel-err", "test-deployment");
    const refused = async (path: string, kind: string, name: string, selector: Record<string, unknown>) => {
      const r = await call("POST", path, {
        apiVersion: "placement.kubernetes-fleet.io/v1",
        kind,
        metadata: { name },
        spec: { resourceSelectors: [selector], policy: NOWHERE },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      return r.body.message as string;
    };
    expect(await refused(RP("sel-err"), "ResourcePlacement", "ns", { ...NS, name: "sel-err", selectionScope: "NamespaceOnly" })).toContain(
      "the resource is not found in schema (please retry) or it is a cluster scoped resource: /v1, Kind=Namespace",
    );
    expect(await refused(RP("sel-err"), "ResourcePlacement", "cr", { ...CLUSTER_ROLE, name: "test-clusterrole" })).toContain(
      "the resource is not found in schema (please retry) or it is a cluster scoped resource: rbac.authorization.k8s.io/v1, Kind=ClusterRole",
    );
    expect(await refused(CRP(), "ClusterResourcePlacement", "sel-err-deploy", { ...DEPLOYMENT, name: "test-deployment" })).toContain(
      "the resource is not found in schema (please retry) or it is not a cluster scoped resource: apps/v1, Kind=Deployment",
    );
    const dup = await crp("sel-err-dup", [
      { ...NS, name: "sel-err", selectionScope: "NamespaceWithResourceSelectors" },
      { ...DEPLOYMENT, name: "test-deployment" },
      { ...DEPLOYMENT, name: "test-deployment" },
    ]);
    expect(condition(dup, "ClusterResourcePlacementScheduled")).toMatchObject({
      status: "False",
      reason: "InvalidResourceSelectors",
      message:
        "The resource selectors are invalid: failed to process the request due to a client error: found duplicate resource {Group:apps Version:v1 Kind:Deployment Name:test-deployment Namespace:sel-err Envelope:<nil>}",
    });
  });
});

describe("ordering (TestSortResources)", () => {
  it("known kinds in KubeFleet's order, same kinds by namespace/name, unknown kinds last by group, version and kind", async () => {
    // "should handle multiple resources of all kinds" (the kinds this hub serves),
    // "should handle multiple known resources, different kinds", "should handle multiple unknown
    // resources, same kinds" and "..., different kinds".
    const group = "test.kubernetes-fleet.io";
    await crd(group, "TestResource");
    await crd(group, "AnotherTestResource");
    const label = { case: "sel-order" };
    for (const name of ["test-resource2", "test-resource1"])
      await create(`/apis/${group}/v1alpha1/testresources`, { apiVersion: `${group}/v1alpha1`, kind: "TestResource", metadata: { name, labels: label } });
    await create(`/apis/${group}/v1alpha1/anothertestresources`, {
      apiVersion: `${group}/v1alpha1`,
      kind: "AnotherTestResource",
      metadata: { name: "another-test-resource", labels: label },
    });
    await create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "test-clusterrolebinding", labels: label },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "test-clusterrole" },
      subjects: [{ kind: "User", name: "someone", apiGroup: "rbac.authorization.k8s.io" }],
    });
    await clusterRole("test-clusterrole", label);
    await createNamespaces("sel-order-test2", "sel-order-test1");
    const p = await crp("sel-order", [
      { group, version: "v1alpha1", kind: "TestResource", labelSelector: { matchLabels: label } },
      { group, version: "v1alpha1", kind: "AnotherTestResource", labelSelector: { matchLabels: label } },
      { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRoleBinding", labelSelector: { matchLabels: label } },
      { ...CLUSTER_ROLE, labelSelector: { matchLabels: label } },
      { group: "apiextensions.k8s.io", version: "v1", kind: "CustomResourceDefinition", name: `testresources.${group}` },
      { group: "apiextensions.k8s.io", version: "v1", kind: "CustomResourceDefinition", name: `anothertestresources.${group}` },
      { ...NS, name: "sel-order-test2", selectionScope: "NamespaceOnly" },
      { ...NS, name: "sel-order-test1", selectionScope: "NamespaceOnly" },
    ]);
    expect(selected(p)).toEqual([
      "Namespace//sel-order-test1",
      "Namespace//sel-order-test2",
      `CustomResourceDefinition//anothertestresources.${group}`,
      `CustomResourceDefinition//testresources.${group}`,
      "ClusterRole//test-clusterrole",
      "ClusterRoleBinding//test-clusterrolebinding",
      "AnotherTestResource//another-test-resource",
      "TestResource//test-resource1",
      "TestResource//test-resource2",
    ]);
    const snap = (await call("GET", CRS("sel-order-0-snapshot"))).body;
    expect(ids(snap.spec.selectedResources)).toEqual(selected(p));
  });
});

describe("never propagated (TestShouldPropagateObj)", () => {
  it("PVCs and ServiceAccounts other than default go; the default ServiceAccount and token Secrets stay", async () => {
    // "PVC should propagate when workload is disabled" (the hub runs no workloads), "Default
    // ServiceAccount in namespace should NOT propagate", "service-account-token secret should NOT
    // propagate", selected by name, by kind and with their namespace. (The ReplicaSet, Pod,
    // EndpointSlice and ControllerRevision cases need objects a user cannot write on this hub:
    // it serves no ReplicaSets, Pods or EndpointSlices, and only its scheduler writes ControllerRevisions.)
    const ns = "sel-prop";
    await createNamespaces(ns);
    await create(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: "data" },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
    });
    const sa = await call("POST", `/api/v1/namespaces/${ns}/serviceaccounts`, { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "default" } });
    expect([201, 409]).toContain(sa.status);
    await create(`/api/v1/namespaces/${ns}/serviceaccounts`, { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "builder" } });
    await create(`/api/v1/namespaces/${ns}/secrets`, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "builder-token", annotations: { "kubernetes.io/service-account.name": "builder" } },
      type: "kubernetes.io/service-account-token",
    });
    await create(`/api/v1/namespaces/${ns}/secrets`, { apiVersion: "v1", kind: "Secret", metadata: { name: "plain" }, type: "Opaque", stringData: { k: "v" } });
    const pvc = await rp(ns, "pvc", [{ group: "", version: "v1", kind: "PersistentVolumeClaim", name: "data" }]);
    expect(selected(pvc)).toEqual([`PersistentVolumeClaim/${ns}/data`]);
    const defaultSA = await rp(ns, "default-sa", [{ group: "", version: "v1", kind: "ServiceAccount", name: "default" }]);
    expect(selected(defaultSA)).toEqual([]);
    const secrets = await rp(ns, "secrets", [{ group: "", version: "v1", kind: "Secret" }]);
    expect(selected(secrets)).toEqual([`Secret/${ns}/plain`]);
    const all = await crp("sel-prop", [{ ...NS, name: ns }]);
    expect(selected(all)).toEqual([`Namespace//${ns}`, `ServiceAccount/${ns}/builder`, `Secret/${ns}/plain`, `PersistentVolumeClaim/${ns}/data`]);
  });
});

describe("stripped fields (TestGenerateResourceContent)", () => {
  it("keeps generateName, labels, finalizers and other annotations; drops what the hub set, owners and both dropped annotations; as the snapshot holds it, so the work places it", async () => {
    // "should generate sanitized resource content for Kind: CustomResourceDefinition" (its
    // metadata on a ClusterRole: the kind does not matter to the metadata's stripping), and the
    // Service case's `clusterIP: None` (a headless Service keeps it) and a Job with manualSelector.
    await createCluster("sel-strip-a", { case: "sel-strip" });
    await createNamespaces("sel-strip");
    const role = await create("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: {
        name: "object-name",
        generateName: "object-generateName",
        labels: { "label-key": "label-value" },
        annotations: {
          "kubectl.kubernetes.io/last-applied-configuration": "svc-object-annotation-lac-value",
          "deployment.kubernetes.io/revision": "svc-object-revision-annotation-value",
          "svc-annotation-key": "svc-object-annotation-key-value",
        },
        ownerReferences: [{ apiVersion: "svc-ownerRef-api/v1", kind: "svc-owner-kind", name: "svc-owner-name", uid: "svc-owner-uid" }],
        finalizers: ["example.com/object-finalizer"],
      },
      rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }],
    });
    expect(role.metadata.uid).toBeDefined();
    await create("/api/v1/namespaces/sel-strip/services", {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "headless" },
      spec: { clusterIP: "None", selector: { app: "db" }, ports: [{ name: "db", port: 5432 }] },
    });
    await create("/apis/batch/v1/namespaces/sel-strip/jobs", {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "manual" },
      spec: {
        manualSelector: true,
        selector: { matchLabels: { "controller-uid": "my-own" } },
        template: {
          metadata: { labels: { "controller-uid": "my-own" } },
          spec: { restartPolicy: "Never", containers: [{ name: "run", image: "busybox:1.36", command: ["true"] }] },
        },
      },
    });
    await crp(
      "sel-strip",
      [
        { ...CLUSTER_ROLE, name: "object-name" },
        { ...NS, name: "sel-strip" },
      ],
      { placementType: "PickFixed", clusterNames: ["sel-strip-a"] },
    );
    const snap = (await call("GET", CRS("sel-strip-0-snapshot"))).body;
    const placedRole = snap.spec.selectedResources.find((o: Json) => o.kind === "ClusterRole");
    expect(placedRole).toEqual({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: {
        name: "object-name",
        generateName: "object-generateName",
        labels: { "label-key": "label-value" },
        annotations: { "svc-annotation-key": "svc-object-annotation-key-value" },
        finalizers: ["example.com/object-finalizer"],
      },
      rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }],
    });
    const svc = snap.spec.selectedResources.find((o: Json) => o.kind === "Service");
    expect(svc.spec.clusterIP).toBe("None");
    const job = snap.spec.selectedResources.find((o: Json) => o.kind === "Job");
    expect(job.spec.selector.matchLabels).toEqual({ "controller-uid": "my-own" });
    expect(job.spec.template.metadata.labels).toEqual({ "controller-uid": "my-own" });
    // The work places the objects as the snapshot holds them, in its order.
    const work = (await call("GET", WORKS("sel-strip-a", "sel-strip-work"))).body;
    expect(work.spec.workload.manifests).toEqual(snap.spec.selectedResources);
  });
});

describe("resource snapshots (resource_snapshot_resolver.go)", () => {
  it("a master snapshot as BuildMasterResourceSnapshot makes it: its labels, annotations, hash of its spec and controller reference", async () => {
    await createNamespaces("sel-snap");
    await configMap("sel-snap", "settings", { a: "1" });
    const p = await crp("sel-snap", [{ ...NS, name: "sel-snap" }]);
    const snap = (await call("GET", CRS("sel-snap-0-snapshot"))).body;
    expect(snap.metadata.labels).toEqual({
      "kubernetes-fleet.io/parent-CRP": "sel-snap",
      "kubernetes-fleet.io/is-latest-snapshot": "true",
      "kubernetes-fleet.io/resource-index": "0",
    });
    expect(snap.metadata.annotations).toEqual({
      "kubernetes-fleet.io/resource-hash": expect.any(String),
      "kubernetes-fleet.io/number-of-resource-snapshots": "1",
      "kubernetes-fleet.io/number-of-enveloped-object": "0",
    });
    expect(snap.metadata.ownerReferences).toEqual([
      {
        apiVersion: "placement.kubernetes-fleet.io/v1beta1",
        kind: "ClusterResourcePlacement",
        name: "sel-snap",
        uid: p.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    // resource.HashOf(spec): the SHA-256 of the spec as Go's encoding/json writes it (map keys sorted).
    const sorted = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(sorted)
        : v && typeof v === "object"
          ? Object.fromEntries(
              Object.keys(v)
                .sort()
                .map((k) => [k, sorted((v as Json)[k])]),
            )
          : v;
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify(sorted(snap.spec))));
    const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
    expect(snap.metadata.annotations["kubernetes-fleet.io/resource-hash"]).toBe(hex);
  });

  it("a new index only when the selection changes; revisionHistoryLimit keeps that many", async () => {
    await createNamespaces("sel-hist");
    await configMap("sel-hist", "settings", { a: "0" });
    await crp("sel-hist", [{ ...NS, name: "sel-hist" }], NOWHERE, { revisionHistoryLimit: 2 });
    // What generateRawContent strips is no change: no new snapshot.
    expect(
      (
        await call(
          "PATCH",
          "/api/v1/namespaces/sel-hist/configmaps/settings",
          { metadata: { annotations: { "kubectl.kubernetes.io/last-applied-configuration": "{}" } } },
          merge,
        )
      ).status,
    ).toBe(200);
    await run("", "sel-hist");
    expect((await call("GET", CRP("sel-hist"))).body.status.observedResourceIndex).toBe("0");
    for (const a of ["1", "2", "3"]) {
      expect((await call("PATCH", "/api/v1/namespaces/sel-hist/configmaps/settings", { data: { a } }, merge)).status).toBe(200);
      await run("", "sel-hist");
    }
    expect((await call("GET", CRP("sel-hist"))).body.status.observedResourceIndex).toBe("3");
    const snaps = (await call("GET", `${CRS()}?labelSelector=${encodeURIComponent("kubernetes-fleet.io/parent-CRP=sel-hist")}`)).body.items;
    expect(snaps.map((s: Json) => [s.metadata.name, s.metadata.labels["kubernetes-fleet.io/is-latest-snapshot"]]).sort()).toEqual([
      ["sel-hist-2-snapshot", "false"],
      ["sel-hist-3-snapshot", "true"],
    ]);
  });
});

describe("envelopes (TestExtractManifestsFromEnvelopeCR)", () => {
  it("an envelope's objects go into the work as written, ordered by their JSON (greatest first); the snapshot holds the envelope", async () => {
    // "envelope with multiple resources should have the right order", "valid ResourceEnvelope with
    // one resource", "valid ClusterResourceEnvelope with one resource".
    await createCluster("sel-env-a", { case: "sel-env" });
    await createNamespaces("sel-env");
    await create("/apis/placement.kubernetes-fleet.io/v1beta1/namespaces/sel-env/resourceenvelopes", {
      apiVersion: "placement.kubernetes-fleet.io/v1beta1",
      kind: "ResourceEnvelope",
      metadata: { name: "multi-resource-envelope" },
      data: {
        resource1: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "test-cm1", namespace: "sel-env" }, data: { key1: "value1" } },
        resource2: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "test-cm2", namespace: "sel-env" }, data: { key2: "value2" } },
      },
    });
    await create("/apis/placement.kubernetes-fleet.io/v1beta1/clusterresourceenvelopes", {
      apiVersion: "placement.kubernetes-fleet.io/v1beta1",
      kind: "ClusterResourceEnvelope",
      metadata: { name: "sel-env-cluster" },
      data: {
        clusterrole1: {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRole",
          metadata: { name: "test-role" },
          rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }],
        },
      },
    });
    const p = await crp(
      "sel-env",
      [
        { ...NS, name: "sel-env" },
        { group: "placement.kubernetes-fleet.io", version: "v1beta1", kind: "ClusterResourceEnvelope", name: "sel-env-cluster" },
      ],
      { placementType: "PickFixed", clusterNames: ["sel-env-a"] },
    );
    expect(selected(p)).toEqual(["Namespace//sel-env", "ClusterResourceEnvelope//sel-env-cluster", "ResourceEnvelope/sel-env/multi-resource-envelope"]);
    const snap = (await call("GET", CRS("sel-env-0-snapshot"))).body;
    expect(snap.metadata.annotations["kubernetes-fleet.io/number-of-enveloped-object"]).toBe("2");
    expect(ids(snap.spec.selectedResources)).toEqual(selected(p));
    const work = (await call("GET", WORKS("sel-env-a", "sel-env-work"))).body;
    expect(ids(work.spec.workload.manifests)).toEqual([
      "Namespace//sel-env",
      "ClusterRole//test-role",
      "ConfigMap/sel-env/test-cm2",
      "ConfigMap/sel-env/test-cm1",
    ]);
    expect(work.spec.workload.manifests[2]).toEqual({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "test-cm2", namespace: "sel-env" },
      data: { key2: "value2" },
    });
  });
});

describe("envelopes KubeFleet's work generator refuses (TestExtractManifestsFromEnvelopeCR)", () => {
  const ENV = "/apis/placement.kubernetes-fleet.io/v1beta1";
  const cm = (name: string, namespace?: string) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, ...(namespace ? { namespace } : {}) },
    data: { key: "value" },
  });

  it("an object of another namespace, a cluster-scoped one in a ResourceEnvelope, a namespaced one in a ClusterResourceEnvelope: no work, WorkSynchronized False", async () => {
    // "ResourceEnvelope with manifest in a different namespace", "ResourceEnvelope containing a
    // cluster-scoped resource", "ClusterResourceEnvelope with namespaced resource", "ResourceEnvelope
    // with mixed namespaced resources". KubeFleet's work generator stops at the envelope (a user
    // error): the binding's WorkSynchronized is False, reason SyncWorkFailed, message
    // "Failed to synchronize the work to the latest: <its error>", copied into the placement's status.
    await createCluster("sel-envbad-a", { case: "sel-envbad" });
    await createNamespaces("sel-envbad");
    const cases: [string, string, Record<string, unknown>, string][] = [
      [
        "other-ns",
        "resourceenvelopes",
        { resource1: cm("test-cm", "other-namespace") },
        "a namespaced object resource1 (other-namespace/test-cm) in has been wrapped in a resource envelope from another namespace (sel-envbad/other-ns)",
      ],
      [
        "cluster-scoped",
        "resourceenvelopes",
        {
          resource1: {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRole",
            metadata: { name: "test-role" },
            rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }],
          },
        },
        "a cluster scope object resource1 (test-role) has been wrapped in a resource envelope sel-envbad/cluster-scoped",
      ],
      [
        "mixed",
        "resourceenvelopes",
        { resource1: cm("test-cm1", "sel-envbad"), resource2: cm("test-cm2", "other-namespace") },
        "a namespaced object resource2 (other-namespace/test-cm2) in has been wrapped in a resource envelope from another namespace (sel-envbad/mixed)",
      ],
      [
        "sel-envbad-namespaced",
        "clusterresourceenvelopes",
        { resource1: cm("test-cm", "sel-envbad") },
        "a namespaced object resource1 (sel-envbad/test-cm) has been wrapped in a cluster resource envelope sel-envbad-namespaced",
      ],
    ];
    for (const [name, plural, data, message] of cases) {
      const cluster = plural === "clusterresourceenvelopes";
      await create(cluster ? `${ENV}/${plural}` : `${ENV}/namespaces/sel-envbad/${plural}`, {
        apiVersion: "placement.kubernetes-fleet.io/v1beta1",
        kind: cluster ? "ClusterResourceEnvelope" : "ResourceEnvelope",
        metadata: { name },
        data,
      });
      const placement = `sel-envbad-${name.replace(/^sel-envbad-/, "")}`;
      const p = await crp(
        placement,
        cluster
          ? [{ group: "placement.kubernetes-fleet.io", version: "v1beta1", kind: "ClusterResourceEnvelope", name }]
          : [
              { ...NS, name: "sel-envbad", selectionScope: "NamespaceWithResourceSelectors" },
              { group: "placement.kubernetes-fleet.io", version: "v1beta1", kind: "ResourceEnvelope", name },
            ],
        { placementType: "PickFixed", clusterNames: ["sel-envbad-a"] },
      );
      // Selected and snapshotted as any selection; no work for the cluster.
      expect(
        selected(p).some((s) => s.includes("Envelope")),
        placement,
      ).toBe(true);
      expect((await call("GET", WORKS("sel-envbad-a", `${placement}-work`))).status, placement).toBe(404);
      const status = p.status.placementStatuses.find((s: Json) => s.clusterName === "sel-envbad-a");
      expect(
        status.conditions.find((c: Json) => c.type === "WorkSynchronized"),
        placement,
      ).toMatchObject({
        status: "False",
        reason: "SyncWorkFailed",
        message: `Failed to synchronize the work to the latest: ${message}`,
      });
      expect(condition(p, "ClusterResourcePlacementWorkSynchronized"), placement).toMatchObject({ status: "False", reason: "WorkNotSynchronizedYet" });
      const bindings = (
        await call("GET", `${FLEET_API}/v1beta1/clusterresourcebindings?labelSelector=${encodeURIComponent(`kubernetes-fleet.io/parent-CRP=${placement}`)}`)
      ).body.items;
      expect(condition(bindings[0], "WorkSynchronized"), placement).toMatchObject({ status: "False", reason: "SyncWorkFailed" });
    }
  });
});
