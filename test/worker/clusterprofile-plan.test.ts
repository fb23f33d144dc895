// (A Worker test: the controllers import the Worker's store.)
// The pure parts of the cluster inventory: the profile OCM's controllers would write for a cluster,
// and what a committed change owes the ClusterProfile and ClusterSetEmpty controllers.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { emptyCondition, planSetStatus } from "../../src/clusterprofile/clusterset-status.ts";
import { planProfiles } from "../../src/clusterprofile/profiles.ts";
import { desiredProfile, hubAccessOf, propertiesOf } from "../../src/clusterprofile/profile.ts";
import { ManagedClusterKind } from "../../src/kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "../../src/kinds/managedclusterset.ts";
import { ManagedClusterSetBindingKind, PlacementKind } from "../../src/kinds/placement.ts";
import type { Change } from "../../src/store/hooks.ts";

const NOW = Date.parse("2026-03-01T10:00:00Z");
const cond = (type: string, status: string, reason = "R", message = "m") => ({ type, status, reason, message, lastTransitionTime: "2026-01-01T00:00:00Z" });

function cluster(status: Record<string, unknown> = {}, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: "cluster.open-cluster-management.io/v1",
    kind: "ManagedCluster",
    metadata: { name: "c1", labels, resourceVersion: "5", uid: "u1", creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: {},
    status,
  };
}

describe("propertiesOf", () => {
  it("keeps the claims in order and adds the cluster ID under the About API's name", () => {
    expect(
      propertiesOf([
        { name: "id.k8s.io", value: "abc" },
        { name: "region", value: "eu" },
      ]),
    ).toEqual([
      { name: "id.k8s.io", value: "abc" },
      { name: "region", value: "eu" },
      { name: "cluster.clusterset.k8s.io", value: "abc" },
    ]);
  });

  it("leaves out what the API refuses: empty values, long names or values, duplicates", () => {
    expect(
      propertiesOf([
        { name: "empty", value: "" },
        { name: "x".repeat(254), value: "v" },
        { name: "big", value: "v".repeat(1025) },
        { name: "a", value: "1" },
        { name: "a", value: "2" },
        { name: "cluster.clusterset.k8s.io", value: "mine" },
        { name: "id.k8s.io", value: "other" },
      ]),
    ).toEqual([
      { name: "a", value: "1" },
      { name: "cluster.clusterset.k8s.io", value: "mine" },
      { name: "id.k8s.io", value: "other" },
    ]);
  });
});

describe("desiredProfile", () => {
  it("creates OCM's profile: labels, spec, conditions mapped from the cluster's", () => {
    const c = cluster(
      {
        conditions: [cond("ManagedClusterConditionAvailable", "True", "ManagedClusterAvailable", "ok"), cond("ManagedClusterJoined", "True")],
        version: { kubernetes: "v1.30.1" },
      },
      { "cluster.open-cluster-management.io/clusterset": "edge" },
    );
    const p = desiredProfile(c, "ns", null, NOW);
    expect(p.metadata).toMatchObject({
      name: "c1",
      namespace: "ns",
      labels: {
        "x-k8s.io/cluster-manager": "open-cluster-management",
        "multicluster.x-k8s.io/clusterset": "edge",
        "open-cluster-management.io/cluster-name": "c1",
      },
    });
    expect(p.spec).toEqual({ displayName: "c1", clusterManager: { name: "open-cluster-management" } });
    expect(p.status).toEqual({
      conditions: [
        { type: "ControlPlaneHealthy", status: "True", reason: "ManagedClusterAvailable", message: "ok", lastTransitionTime: "2026-03-01T10:00:00Z" },
        { type: "Joined", status: "True", reason: "R", message: "m", lastTransitionTime: "2026-03-01T10:00:00Z" },
      ],
      version: { kubernetes: "v1.30.1" },
    });
  });

  it("advertises the hub's proxy for the cluster in status.accessProviders when the hub knows its URL", () => {
    expect(hubAccessOf({})).toBeUndefined();
    expect(hubAccessOf({ FLOTILLA_PUBLIC_URL: "ftp://x" })).toBeUndefined();
    const hub = hubAccessOf({ FLOTILLA_PUBLIC_URL: "https://hub.example.com:8443/", FLOTILLA_PUBLIC_CA_DATA: "Q0E=" });
    expect(hub).toEqual({ url: "https://hub.example.com:8443", caData: "Q0E=" });
    const p = desiredProfile(cluster(), "ns", null, NOW, hub);
    expect((p.status as { accessProviders?: unknown }).accessProviders).toEqual([
      { name: "flotilla", cluster: { server: "https://hub.example.com:8443/clusters/c1/proxy", "certificate-authority-data": "Q0E=" } },
    ]);
    const plain = desiredProfile(cluster(), "ns", null, NOW, hubAccessOf({ FLOTILLA_PUBLIC_URL: "http://127.0.0.1:8787" }));
    expect((plain.status as { accessProviders?: unknown }).accessProviders).toEqual([
      { name: "flotilla", cluster: { server: "http://127.0.0.1:8787/clusters/c1/proxy" } },
    ]);
  });

  it("a cluster without conditions gets none, and no set label value is the empty string", () => {
    const p = desiredProfile(cluster(), "ns", null, NOW);
    expect(p.status).toEqual({ conditions: [], version: {} });
    expect(p.metadata.labels!["multicluster.x-k8s.io/clusterset"]).toBe("");
  });

  it("updates an existing profile as meta.SetStatusCondition: the transition time moves only with the status", () => {
    const first = desiredProfile(cluster({ conditions: [cond("ManagedClusterConditionAvailable", "True")] }), "ns", null, NOW);
    const stored = { ...first, metadata: { ...first.metadata, resourceVersion: "9", labels: { ...first.metadata.labels, team: "a" } } };
    const sameStatus = desiredProfile(
      cluster({ conditions: [cond("ManagedClusterConditionAvailable", "True", "Other", "other")] }),
      "ns",
      stored,
      NOW + 60_000,
    );
    expect((sameStatus.status as { conditions: { lastTransitionTime: string; reason: string }[] }).conditions[0]).toMatchObject({
      reason: "Other",
      lastTransitionTime: "2026-03-01T10:00:00Z",
    });
    const flipped = desiredProfile(cluster({ conditions: [cond("ManagedClusterConditionAvailable", "False")] }), "ns", stored, NOW + 60_000);
    expect((flipped.status as { conditions: { lastTransitionTime: string }[] }).conditions[0]!.lastTransitionTime).toBe("2026-03-01T10:01:00Z");
    // Server fields and foreign labels are kept; the manager labels are put back.
    expect(flipped.metadata).toMatchObject({
      uid: first.metadata.uid,
      resourceVersion: "9",
      labels: { team: "a", "x-k8s.io/cluster-manager": "open-cluster-management" },
    });
  });
});

describe("what a change owes", () => {
  const change = (def: Change["def"], before: KubeObject | null, after: KubeObject | null, namespace = ""): Change => ({
    def,
    namespace,
    name: (after ?? before)!.metadata.name,
    before,
    after,
  });

  it("a cluster's heartbeat that changes nothing a profile shows owes nothing", () => {
    const a = cluster({ conditions: [cond("ManagedClusterConditionAvailable", "True")], allocatable: { cpu: "1" } });
    const b = cluster({
      conditions: [{ ...cond("ManagedClusterConditionAvailable", "True"), lastTransitionTime: "2026-02-01T00:00:00Z" }],
      allocatable: { cpu: "2" },
    });
    expect(planProfiles(change(ManagedClusterKind, a, b))).toBeNull();
    expect(planSetStatus(change(ManagedClusterKind, a, b))).toBeNull();
  });

  it("availability, claims, version or labels owe the cluster's profiles; labels also the sets' status", () => {
    const a = cluster({ conditions: [cond("ManagedClusterConditionAvailable", "True")] });
    expect(planProfiles(change(ManagedClusterKind, a, cluster({ conditions: [cond("ManagedClusterConditionAvailable", "False")] })))).toEqual({
      cluster: "c1",
    });
    expect(planProfiles(change(ManagedClusterKind, a, cluster({ ...a.status, clusterClaims: [{ name: "x", value: "y" }] })))).toEqual({ cluster: "c1" });
    const relabelled = cluster(a.status as Record<string, unknown>, { "cluster.open-cluster-management.io/clusterset": "edge" });
    expect(planProfiles(change(ManagedClusterKind, a, relabelled))).toEqual({ cluster: "c1" });
    expect(planSetStatus(change(ManagedClusterKind, a, relabelled))).toEqual({
      cluster: { before: {}, after: { "cluster.open-cluster-management.io/clusterset": "edge" } },
    });
    expect(planSetStatus(change(ManagedClusterKind, null, a))).toEqual({ cluster: { before: null, after: {} } });
  });

  it("sets and bindings owe by their spec, not by their status (the hub's own writes)", () => {
    const set: KubeObject = {
      apiVersion: "v",
      kind: "ManagedClusterSet",
      metadata: { name: "s", resourceVersion: "1", uid: "u2", creationTimestamp: "2026-01-01T00:00:00Z" },
      spec: { clusterSelector: { selectorType: "ExclusiveClusterSetLabel" } },
    };
    const withStatus = { ...set, metadata: { ...set.metadata, resourceVersion: "2" }, status: { conditions: [cond("ClusterSetEmpty", "True")] } };
    expect(planProfiles(change(ManagedClusterSetKind, set, withStatus))).toBeNull();
    expect(planSetStatus(change(ManagedClusterSetKind, set, withStatus))).toBeNull();
    expect(planSetStatus(change(ManagedClusterSetKind, null, set))).toEqual({ sets: ["s"] });
    expect(planProfiles(change(ManagedClusterSetKind, null, set))).toEqual({ sets: ["s"] });
    const binding: KubeObject = {
      apiVersion: "v",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "s", namespace: "ns", resourceVersion: "1", uid: "u3", creationTimestamp: "2026-01-01T00:00:00Z" },
      spec: { clusterSet: "s" },
    };
    expect(planProfiles(change(ManagedClusterSetBindingKind, null, binding, "ns"))).toEqual({ namespaces: ["ns"] });
    expect(planProfiles(change(ManagedClusterSetBindingKind, binding, { ...binding, status: { conditions: [cond("Bound", "True")] } }, "ns"))).toBeNull();
    expect(planProfiles(change(PlacementKind, null, { ...binding, kind: "Placement" }, "ns"))).toBeNull();
  });
});

describe("ClusterSetEmpty", () => {
  it("reads as OCM's controller words it", () => {
    expect(emptyCondition(0)).toEqual({ type: "ClusterSetEmpty", status: "True", reason: "NoClusterMatched", message: "No ManagedCluster selected" });
    expect(emptyCondition(3)).toEqual({ type: "ClusterSetEmpty", status: "False", reason: "ClustersSelected", message: "3 ManagedClusters selected" });
  });
});
