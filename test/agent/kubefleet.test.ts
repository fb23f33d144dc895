/**
 * KubeFleet's work applier concepts the agent implements, as pure functions
 * (agent/src/work/kubefleet.ts, availability.ts), with tables from KubeFleet's own unit tests
 * (kubefleet-dev/kubefleet `pkg/controllers/workapplier/availability_tracker_test.go`,
 * `drift_detection_takeover_test.go`): availability per kind, drift and diff details, the
 * three-way merge patch of a client-side apply, the apply strategy of a work.
 */
import { describe, expect, it } from "vitest";
import { trackAvailability, type AvailabilityResult } from "../../agent/src/work/availability.ts";
import { detailsMessage } from "../../agent/src/work/conditions.ts";
import {
  APPLY_STRATEGY_ANNOTATION,
  DEFAULT_APPLY_STRATEGY,
  UNAVAILABLE_PERIOD_ANNOTATION,
  applyStrategyOf,
  goSprint,
  patchDetails,
  threeWayMergePatch,
  unavailablePeriodOf,
  type PatchDetail,
} from "../../agent/src/work/kubefleet.ts";
import type { Obj } from "../../agent/src/work/types.ts";
import { mergePatch } from "../../agent/sim/patch.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

// ---------------------------------------------------------------------------------------------
// availability (availability_tracker_test.go)

const deploy = (replicas: number | undefined, status: Obj, generation?: number): Obj => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "nginx", namespace: "work", ...(generation !== undefined ? { generation } : {}) },
  spec: { ...(replicas !== undefined ? { replicas } : {}), selector: { matchLabels: { app: "nginx" } } },
  status,
});
const sts = (replicas: number | undefined, status: Obj, generation?: number): Obj => ({
  apiVersion: "apps/v1",
  kind: "StatefulSet",
  metadata: { name: "nginx", namespace: "work", ...(generation !== undefined ? { generation } : {}) },
  spec: { ...(replicas !== undefined ? { replicas } : {}) },
  status,
});
const ds = (status: Obj, generation?: number): Obj => ({
  apiVersion: "apps/v1",
  kind: "DaemonSet",
  metadata: { name: "nginx", namespace: "work", ...(generation !== undefined ? { generation } : {}) },
  status,
});
const svc = (spec: Obj, status: Obj = {}): Obj => ({ apiVersion: "v1", kind: "Service", spec, status });
const crd = (established: string, names: string): Obj => ({
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "foos.example.com" },
  status: {
    conditions: [
      { type: "Established", status: established },
      { type: "NamesAccepted", status: names },
    ],
  },
});
const pdb = (status: Obj): Obj => ({
  apiVersion: "policy/v1",
  kind: "PodDisruptionBudget",
  metadata: { name: "test-pdb", namespace: "work", generation: 2 },
  status,
});
const pdbCond = (gen: number) => [{ type: "DisruptionAllowed", status: "True", reason: "SufficientPods", observedGeneration: gen }];

const G = {
  deploy: { group: "apps", version: "v1", resource: "deployments" },
  sts: { group: "apps", version: "v1", resource: "statefulsets" },
  ds: { group: "apps", version: "v1", resource: "daemonsets" },
  svc: { group: "", version: "v1", resource: "services" },
  crd: { group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions" },
  pdb: { group: "policy", version: "v1", resource: "poddisruptionbudgets" },
};

const A: AvailabilityResult = "Available";
const N: AvailabilityResult = "ManifestNotAvailableYet";
const U: AvailabilityResult = "NotTrackable";
const stsDone = { replicas: 1, availableReplicas: 1, currentReplicas: 1, updatedReplicas: 1, currentRevision: "1", updateRevision: "1" };

const availabilityCases: Array<[string, { group: string; version: string; resource: string }, Obj, AvailabilityResult]> = [
  // TestTrackDeploymentAvailability
  ["available deployment (w/ fixed replica count)", G.deploy, deploy(1, { replicas: 1, availableReplicas: 1, updatedReplicas: 1 }), A],
  ["available deployment (w/ default replica count)", G.deploy, deploy(undefined, { replicas: 1, availableReplicas: 1, updatedReplicas: 1 }), A],
  ["unavailable deployment with stale status", G.deploy, deploy(1, { observedGeneration: 1, replicas: 1, availableReplicas: 1, updatedReplicas: 1 }, 2), N],
  ["unavailable deployment with not enough available replicas", G.deploy, deploy(5, { replicas: 5, availableReplicas: 2, updatedReplicas: 5 }), N],
  ["unavailable deployment with not enough updated replicas", G.deploy, deploy(5, { replicas: 5, availableReplicas: 5, updatedReplicas: 2 }), N],
  [
    "unavailable deployment with unavailable replicas",
    G.deploy,
    deploy(1, { replicas: 2, availableReplicas: 1, updatedReplicas: 1, unavailableReplicas: 1 }),
    N,
  ],
  // TestTrackStatefulSetAvailability
  ["available stateful set (w/ fixed replica count)", G.sts, sts(1, stsDone), A],
  ["available stateful set (w/ default replica count)", G.sts, sts(undefined, stsDone), A],
  ["unavailable stateful set with stale status", G.sts, sts(1, { ...stsDone, observedGeneration: 1 }, 2), N],
  [
    "unavailable stateful set with not enough available replicas",
    G.sts,
    sts(5, { ...stsDone, replicas: 5, availableReplicas: 2, currentReplicas: 5, updatedReplicas: 5 }),
    N,
  ],
  [
    "unavailable stateful set with not enough current replicas",
    G.sts,
    sts(5, { ...stsDone, replicas: 5, availableReplicas: 5, currentReplicas: 2, updatedReplicas: 5 }),
    N,
  ],
  ["unavailable stateful set with not latest revision", G.sts, sts(1, { ...stsDone, updateRevision: "2" }), N],
  // TestTrackDaemonSetAvailability
  ["available daemon set", G.ds, ds({ numberAvailable: 1, desiredNumberScheduled: 1, currentNumberScheduled: 1, updatedNumberScheduled: 1 }), A],
  [
    "unavailable daemon set with stale status",
    G.ds,
    ds({ observedGeneration: 1, numberAvailable: 1, desiredNumberScheduled: 1, currentNumberScheduled: 1, updatedNumberScheduled: 1 }, 2),
    N,
  ],
  [
    "unavailable daemon set with not enough available pods",
    G.ds,
    ds({ numberAvailable: 2, desiredNumberScheduled: 5, currentNumberScheduled: 5, updatedNumberScheduled: 5 }),
    N,
  ],
  [
    "unavailable daemon set with not enough updated pods",
    G.ds,
    ds({ numberAvailable: 5, desiredNumberScheduled: 5, currentNumberScheduled: 5, updatedNumberScheduled: 6 }),
    N,
  ],
  // TestTrackServiceAvailability
  ["untrackable service (external name type)", G.svc, svc({ type: "ExternalName", clusterIPs: ["192.168.1.1"] }), U],
  ["available default typed service (IP assigned)", G.svc, svc({ type: "", clusterIPs: ["192.168.1.1"] }), A],
  ["available ClusterIP service (IP assigned)", G.svc, svc({ type: "ClusterIP", clusterIP: "192.168.1.1", clusterIPs: ["192.168.1.1"] }), A],
  ["available headless service", G.svc, svc({ type: "ClusterIP", clusterIPs: ["None"] }), A],
  ["available node port service (IP assigned)", G.svc, svc({ type: "NodePort", clusterIP: "13.6.2.2", clusterIPs: ["192.168.1.1"] }), A],
  ["unavailable ClusterIP service (no IP assigned)", G.svc, svc({ type: "ClusterIP", clusterIP: "13.6.2.2" }), N],
  ["available LoadBalancer service (IP assigned)", G.svc, svc({ type: "LoadBalancer" }, { loadBalancer: { ingress: [{ ip: "10.1.2.4" }] } }), A],
  [
    "available LoadBalancer service (hostname assigned)",
    G.svc,
    svc({ type: "LoadBalancer" }, { loadBalancer: { ingress: [{ hostname: "one.microsoft.com" }] } }),
    A,
  ],
  ["unavailable LoadBalancer service (ingress not ready)", G.svc, svc({ type: "LoadBalancer" }, { loadBalancer: { ingress: [] } }), N],
  // TestTrackCRDAvailability
  ["available CRD", G.crd, crd("True", "True"), A],
  ["unavailable CRD (not established)", G.crd, crd("False", "True"), N],
  ["unavailable CRD (name not accepted)", G.crd, crd("True", "False"), N],
  // TestTrackPDBAvailability
  [
    "available PDB",
    G.pdb,
    pdb({ disruptionsAllowed: 1, currentHealthy: 2, observedGeneration: 2, desiredHealthy: 2, expectedPods: 1, conditions: pdbCond(2) }),
    A,
  ],
  [
    "unavailable PDB (insufficient pods)",
    G.pdb,
    pdb({ disruptionsAllowed: 0, currentHealthy: 1, observedGeneration: 2, desiredHealthy: 2, expectedPods: 1, conditions: pdbCond(2) }),
    N,
  ],
  [
    "unavailable PDB (stale condition)",
    G.pdb,
    pdb({ disruptionsAllowed: 1, currentHealthy: 2, observedGeneration: 1, desiredHealthy: 2, expectedPods: 1, conditions: pdbCond(1) }),
    N,
  ],
  // TestTrackInMemberClusterObjAvailabilityByGVR: data objects at once, the rest untrackable
  ["config map (data object)", { group: "", version: "v1", resource: "configmaps" }, { apiVersion: "v1", kind: "ConfigMap" }, A],
  ["namespace (data object)", { group: "", version: "v1", resource: "namespaces" }, { apiVersion: "v1", kind: "Namespace" }, A],
  ["role (data object)", { group: "rbac.authorization.k8s.io", version: "v1", resource: "roles" }, { kind: "Role" }, A],
  ["resource quota (data object)", { group: "", version: "v1", resource: "resourcequotas" }, { kind: "ResourceQuota" }, A],
  ["untrackable object (job)", { group: "batch", version: "v1", resource: "jobs" }, { apiVersion: "batch/v1", kind: "Job" }, U],
  ["untrackable object (custom resource)", { group: "example.com", version: "v1", resource: "foos" }, { apiVersion: "example.com/v1", kind: "Foo" }, U],
];

describe("availability, as KubeFleet's work applier tracks it", () => {
  it.each(availabilityCases)("%s", (_name, gvr, obj, want) => {
    expect(trackAvailability(gvr, obj)).toBe(want);
  });
});

// ---------------------------------------------------------------------------------------------
// patch details (drift_detection_takeover_test.go TestPreparePatchDetails)

const baseDeploy = (): Obj => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "nginx", namespace: "work" },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: "nginx" } },
    template: { metadata: { labels: { app: "nginx" } }, spec: { containers: [{ name: "nginx", image: "nginx" }] } },
    strategy: {},
  },
});
const baseSvc = (ports?: unknown[], selector?: Obj): Obj => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: "nginx", namespace: "work" },
  spec: { ...(ports ? { ports } : {}), ...(selector ? { selector } : {}) },
});
const port = (name: string, protocol: string, p: number, targetPort: number | string) => ({ name, protocol, port: p, targetPort });
const withSpec = (o: Obj, f: (spec: Json) => void): Obj => {
  const c = structuredClone(o) as Json;
  f(c.spec);
  return c;
};
const sortDetails = (d: PatchDetail[]) => [...d].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

const patchCases: Array<[string, Obj, Obj, PatchDetail[]]> = [
  [
    "field addition, object field (string)",
    withSpec(baseDeploy(), (s) => (s.strategy.type = "Recreate")),
    baseDeploy(),
    [{ path: "/spec/strategy/type", valueInHub: "Recreate" }],
  ],
  [
    "field addition, object field (numeral)",
    withSpec(baseDeploy(), (s) => (s.revisionHistoryLimit = 10)),
    baseDeploy(),
    [{ path: "/spec/revisionHistoryLimit", valueInHub: "10" }],
  ],
  ["field addition, object field (bool)", withSpec(baseDeploy(), (s) => (s.paused = true)), baseDeploy(), [{ path: "/spec/paused", valueInHub: "true" }]],
  [
    "field addition, array",
    baseSvc([port("http", "TCP", 80, 8080)]),
    baseSvc(),
    [{ path: "/spec/ports", valueInHub: "[map[name:http port:80 protocol:TCP targetPort:8080]]" }],
  ],
  [
    "field addition, array item",
    baseSvc([port("http", "TCP", 80, 8080), port("custom", "UDP", 10000, 10000), port("https", "TCP", 443, "https")]),
    baseSvc([port("http", "TCP", 80, 8080), port("https", "TCP", 443, "https")]),
    [
      { path: "/spec/ports/2", valueInHub: "map[name:https port:443 protocol:TCP targetPort:https]" },
      { path: "/spec/ports/1/name", valueInMember: "https", valueInHub: "custom" },
      { path: "/spec/ports/1/port", valueInMember: "443", valueInHub: "10000" },
      { path: "/spec/ports/1/protocol", valueInMember: "TCP", valueInHub: "UDP" },
      { path: "/spec/ports/1/targetPort", valueInMember: "https", valueInHub: "10000" },
    ],
  ],
  ["field addition, object", baseSvc(undefined, { app: "nginx" }), baseSvc(), [{ path: "/spec/selector", valueInHub: "map[app:nginx]" }]],
  [
    "field addition, nested (array)",
    baseSvc([port("http", "TCP", 80, 8080), port("https", "TCP", 443, "https")]),
    baseSvc([port("http", "TCP", 8080, 8080), port("https", "TCP", 443, 8443)]),
    [
      { path: "/spec/ports/0/port", valueInMember: "8080", valueInHub: "80" },
      { path: "/spec/ports/1/targetPort", valueInMember: "8443", valueInHub: "https" },
    ],
  ],
  [
    "field addition, nested (object)",
    withSpec(baseDeploy(), (s) => (s.selector.matchLabels = { app: "envoy", team: "red" })),
    baseDeploy(),
    [
      { path: "/spec/selector/matchLabels/app", valueInMember: "nginx", valueInHub: "envoy" },
      { path: "/spec/selector/matchLabels/team", valueInHub: "red" },
    ],
  ],
  [
    "server-owned metadata, status and reserved labels are left out; a member-only field is reported",
    { ...baseDeploy(), metadata: { name: "nginx", namespace: "work", labels: { app: "x" } } },
    {
      ...baseDeploy(),
      metadata: {
        name: "nginx",
        namespace: "work",
        uid: "u",
        resourceVersion: "9",
        generation: 3,
        creationTimestamp: "2026-01-01T00:00:00Z",
        labels: { app: "x", "kubernetes.io/metadata.name": "n", "team.kubernetes-fleet.io/x": "y", extra: "1" },
        annotations: { "deployment.kubernetes.io/revision": "2" },
        managedFields: [{ manager: "m" }],
      },
      status: { replicas: 1 },
    },
    [{ path: "/metadata/labels/extra", valueInMember: "1" }],
  ],
];

describe("drift and diff details, as KubeFleet's preparePatchDetails", () => {
  it.each(patchCases)("%s", (_name, hub, member, want) => {
    expect(sortDetails(patchDetails(hub, member))).toEqual(sortDetails(want));
  });

  it("redacts Secret data, prints values as Go's fmt.Sprint, and a message holds as many details as fit", () => {
    const secret = (v: string): Obj => ({ apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, data: { k: v } });
    expect(patchDetails(secret("YQ=="), secret("Yg=="))).toEqual([
      { path: "/data/k", valueInMember: "(redacted for security reasons)", valueInHub: "(redacted for security reasons)" },
    ]);
    expect([goSprint(null), goSprint(1.5), goSprint(false), goSprint(["a", 2]), goSprint({ b: 1, a: { c: "d" } })]).toEqual([
      "<nil>",
      "1.5",
      "false",
      "[a 2]",
      "map[a:map[c:d] b:1]",
    ]);
    const many = Array.from({ length: 100 }, (_, i) => ({ path: `/data/key-${i}`, valueInMember: "x".repeat(60), valueInHub: "y".repeat(60) }));
    const msg = detailsMessage(many);
    expect(msg.length).toBeLessThanOrEqual(4096);
    const parsed = JSON.parse(msg) as PatchDetail[];
    expect(parsed.length).toBeGreaterThan(10);
    expect(parsed).toEqual(many.slice(0, parsed.length));
  });
});

// ---------------------------------------------------------------------------------------------
// client-side apply's three-way merge patch (kubectl apply, jsonmergepatch)

const threeWayCases: Array<[string, Obj | null, Obj, Obj, Obj]> = [
  ["nothing changed", { data: { a: "1" } }, { data: { a: "1" } }, { data: { a: "1" }, metadata: { uid: "u" } }, {}],
  ["a changed field", { data: { a: "1" } }, { data: { a: "2" } }, { data: { a: "1" } }, { data: { a: "2" } }],
  [
    "a field the last apply set and this one drops is deleted",
    { data: { a: "1", b: "1" } },
    { data: { a: "1" } },
    { data: { a: "1", b: "1" } },
    { data: { b: null } },
  ],
  ["a field someone else added is kept", { data: { a: "1" } }, { data: { a: "1" } }, { data: { a: "1", theirs: "x" } }, {}],
  ["a drifted field is reverted", { data: { a: "1" } }, { data: { a: "1" } }, { data: { a: "drifted" } }, { data: { a: "1" } }],
  ["without a last apply nothing is deleted", null, { data: { a: "1" } }, { data: { a: "1", b: "2" } }, {}],
  ["lists are replaced whole", { spec: { l: [1, 2] } }, { spec: { l: [1, 3] } }, { spec: { l: [1, 2] } }, { spec: { l: [1, 3] } }],
  [
    "an unchanged list whose live elements carry the server's defaults is left alone",
    { spec: { ports: [{ port: 80 }] } },
    { spec: { ports: [{ port: 80 }] } },
    { spec: { ports: [{ port: 80, protocol: "TCP", targetPort: 80 }] } },
    {},
  ],
  [
    "a drifted list element is reverted",
    { spec: { c: [{ name: "a", image: "x:1" }] } },
    { spec: { c: [{ name: "a", image: "x:1" }] } },
    { spec: { c: [{ name: "a", image: "x:2", imagePullPolicy: "IfNotPresent" }] } },
    { spec: { c: [{ name: "a", image: "x:1" }] } },
  ],
  ["a dropped map goes", { spec: { m: { x: 1 } } }, { spec: {} }, { spec: { m: { x: 1 } } }, { spec: { m: null } }],
];

describe("client-side apply's three-way JSON merge patch", () => {
  it.each(threeWayCases)("%s", (_name, original, modified, current, want) => {
    const patch = threeWayMergePatch(original, modified, current);
    expect(patch).toEqual(want);
    // Applying it to the live object gives the modified fields over what others set.
    const merged = mergePatch(current, patch) as Obj;
    for (const [k, v] of Object.entries(modified)) expect(merged[k]).toMatchObject(v as Obj);
  });
});

describe("apply strategy of a work", () => {
  it("takes KubeFleet's defaults for absent or unknown fields; no annotation is an OCM work", () => {
    expect(applyStrategyOf(undefined)).toBeUndefined();
    expect(applyStrategyOf({ [APPLY_STRATEGY_ANNOTATION]: "{}" })).toEqual(DEFAULT_APPLY_STRATEGY);
    expect(applyStrategyOf({ [APPLY_STRATEGY_ANNOTATION]: "not json" })).toEqual(DEFAULT_APPLY_STRATEGY);
    expect(
      applyStrategyOf({
        [APPLY_STRATEGY_ANNOTATION]: JSON.stringify({
          type: "ServerSideApply",
          serverSideApplyConfig: { force: true },
          whenToApply: "IfNotDrifted",
          whenToTakeOver: "Never",
          comparisonOption: "FullComparison",
          allowCoOwnership: true,
        }),
      }),
    ).toEqual({
      type: "ServerSideApply",
      serverSideApplyConfig: { force: true },
      whenToApply: "IfNotDrifted",
      whenToTakeOver: "Never",
      comparisonOption: "FullComparison",
      allowCoOwnership: true,
    });
    expect(unavailablePeriodOf(undefined)).toBe(60);
    expect(unavailablePeriodOf({ [UNAVAILABLE_PERIOD_ANNOTATION]: "5" })).toBe(5);
  });
});
