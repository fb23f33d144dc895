/**
 * The dashboard's pure logic: "why not selected" (src/ui/app/explain.ts) over the hub's
 * scheduling modules, each of OCM's filters in order (deleting, eligible cluster sets, predicates,
 * taints), then feasible but not chosen; the fleet's counts read from `/metrics`
 * (src/ui/app/metrics.ts); a cluster's lease age from its served Lease (src/ui/app/format.ts); a
 * condition's badge by its type's polarity; a rollout's clusters classified as the hub does
 * (src/work/rollout.ts `classifyRollout`, which the hub's controller and the rollout page share).
 * Runs here because it imports the scheduler's modules.
 */
import { describe, expect, it } from "vitest";
import { explain, type PlacementContext } from "../../src/ui/app/explain.ts";
import { parseFleetMetrics } from "../../src/ui/app/metrics.ts";
import { availabilitySince, conditionHealth, leaseAgeSeconds, leaseInfo, leaseLate } from "../../src/ui/app/format.ts";
import { classifyRollout, TEMPLATE_WRITTEN_ANNOTATION } from "../../src/work/rollout.ts";
import { canonicalJson } from "../../src/k8s/canonical-json.ts";

const SET = "cluster.open-cluster-management.io/clusterset";
const cluster = (name: string, labels: Record<string, string>, extra: Record<string, unknown> = {}) => ({
  metadata: { name, labels, ...extra },
  spec: { taints: [] as unknown[] },
  status: {},
});
const placement = (spec: Record<string, unknown>) => ({ metadata: { name: "p", namespace: "apps" }, spec });
const sets = [
  { metadata: { name: "prod" }, spec: { clusterSelector: { selectorType: "ExclusiveClusterSetLabel" } } },
  { metadata: { name: "edge" }, spec: { clusterSelector: { selectorType: "LabelSelector", labelSelector: { matchLabels: { zone: "edge" } } } } },
];
const ctx = (p: ReturnType<typeof placement>, decided: string[] = []): PlacementContext => ({
  placement: p,
  boundSets: ["prod"],
  sets,
  decided: new Set(decided),
  nowMs: Date.parse("2026-11-26T12:00:00Z"),
});

describe("why a placement did not select a cluster", () => {
  it("says selected for a decided cluster", () => {
    expect(explain(cluster("a", { [SET]: "prod" }), ctx(placement({}), ["a"])).reason).toBe("Selected");
  });

  it("names the sets when the cluster is in no bound set (exclusive label and label-selector sets)", () => {
    const v = explain(cluster("e", { zone: "edge" }), ctx(placement({})));
    expect(v.reason).toBe("NotInBoundSet");
    expect(v.message).toContain("it is in edge");
    expect(v.message).toContain("eligible sets are prod");
    expect(explain(cluster("x", {}), ctx(placement({ clusterSets: ["edge"] }))).message).toContain(
      "no ManagedClusterSet is bound to namespace apps among edge",
    );
  });

  it("says no predicate matched", () => {
    const p = placement({ predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { tier: "gold" } } } }] });
    expect(explain(cluster("a", { [SET]: "prod", tier: "silver" }), ctx(p)).reason).toBe("Predicate");
    expect(explain(cluster("a", { [SET]: "prod", tier: "gold" }), ctx(p)).reason).toBe("NotChosen");
  });

  it("names the taint not tolerated, and accepts a tolerated one", () => {
    const c = cluster("t", { [SET]: "prod" });
    c.spec.taints = [{ key: "maintenance", value: "true", effect: "NoSelect", timeAdded: "2026-11-26T11:00:00Z" }];
    const v = explain(c, ctx(placement({ numberOfClusters: 1 })));
    expect(v).toEqual({ reason: "Tainted", message: "tainted: maintenance=true:NoSelect not tolerated" });
    expect(explain(c, ctx(placement({ tolerations: [{ key: "maintenance", operator: "Exists" }] }))).reason).toBe("NotChosen");
    // A toleration whose tolerationSeconds ran out (added 1 h ago, tolerated 60 s) tolerates no more, as OCM.
    expect(explain(c, ctx(placement({ tolerations: [{ key: "maintenance", operator: "Exists", tolerationSeconds: 60 }] }))).reason).toBe("Tainted");
  });

  it("says a cluster being deleted is never selected", () => {
    expect(explain(cluster("d", { [SET]: "prod" }, { deletionTimestamp: "2026-11-26T11:00:00Z" }), ctx(placement({}))).reason).toBe("Deleting");
  });
});

describe("the fleet's counts from /metrics", () => {
  it("reads the fleet's size, availability and edge locations", () => {
    const text = [
      "# HELP acm_managed_cluster_count Managed cluster count.",
      "# TYPE acm_managed_cluster_count gauge",
      "acm_managed_cluster_count 7",
      'flotilla_managed_clusters{condition="ManagedClusterConditionAvailable",status="True"} 4',
      'flotilla_managed_clusters{condition="ManagedClusterConditionAvailable",status="Unknown"} 2',
      'flotilla_managed_clusters{condition="ManagedClusterJoined",status="True"} 6',
      'flotilla_managed_clusters_by_location{location="AMS",available="True"} 3',
      'flotilla_managed_clusters_by_location{location="AMS",available="Unknown"} 1',
      'flotilla_managed_clusters_by_location{location="",available="True"} 3',
    ].join("\n");
    expect(parseFleetMetrics(text)).toEqual({ total: 7, byState: { Available: 4, Unknown: 2, "No status": 1 }, byColo: { AMS: 4, unknown: 3 } });
  });

  it("is null for a hub without the fleet's metrics", () => {
    expect(parseFleetMetrics("# nothing here\nprocess_start_time_seconds 1\n")).toBeNull();
  });
});

describe("a cluster's lease age", () => {
  const served = (renewTime: string | undefined, leaseDurationSeconds?: number) => ({
    metadata: { name: "managed-cluster-lease", namespace: "c1" },
    spec: { holderIdentity: "managed-cluster-lease", renewTime, leaseDurationSeconds },
  });

  it("is the time since the served renewTime (MicroTime); late when it was past 5 x the lease's duration at the read", () => {
    const renewMs = Date.parse("2026-11-26T12:00:00.250Z");
    const at = (s: number) => renewMs + s * 1000;
    const lease = leaseInfo(served("2026-11-26T12:00:00.250000Z", 10), at(3))!;
    expect(lease).toEqual({ renewMs, renewTime: "2026-11-26T12:00:00.250000Z", durationSeconds: 10, readMs: at(3) });
    expect(leaseAgeSeconds(lease, at(42))).toBe(42);
    expect(leaseAgeSeconds(lease, at(-1))).toBe(0);
    // Read 3 s after the renewal: not late, however long ago that read was (a renewal since shows at the next read).
    expect(leaseLate(lease)).toBe(false);
    expect(leaseLate(leaseInfo(served("2026-11-26T12:00:00.250000Z", 10), at(49.9))!)).toBe(false);
    expect(leaseLate(leaseInfo(served("2026-11-26T12:00:00.250000Z", 10), at(50))!)).toBe(true);
  });

  it("has no age without a renewTime, and counts OCM's default duration (60 s) when none is served", () => {
    expect(leaseInfo(served(undefined), 0)).toBeNull();
    expect(leaseInfo(served("soon"), 0)).toBeNull();
    expect(leaseInfo(served("2026-11-26T12:00:00.000000Z"), 0)!.durationSeconds).toBe(60);
  });
});

describe("a condition's health follows its type's polarity", () => {
  it("is ok for a healthy False of a negative type, bad for its True", () => {
    expect(conditionHealth({ type: "PlacementMisconfigured", status: "False" })).toBe("ok");
    expect(conditionHealth({ type: "PlacementMisconfigured", status: "True" })).toBe("bad");
    expect(conditionHealth({ type: "Degraded", status: "False" })).toBe("ok");
    expect(conditionHealth({ type: "Progressing", status: "False" })).toBe("ok");
    expect(conditionHealth({ type: "Progressing", status: "True" })).toBe("warn");
  });

  it("is ok for a positive type's True, bad for its False (a warning while in progress), a warning when Unknown", () => {
    expect(conditionHealth({ type: "HubAcceptedManagedCluster", status: "True" })).toBe("ok");
    expect(conditionHealth({ type: "ManagedClusterConditionAvailable", status: "False" })).toBe("bad");
    expect(conditionHealth({ type: "PlacementRolledOut", status: "False", reason: "Progressing" })).toBe("warn");
    expect(conditionHealth({ type: "ManagedClusterConditionAvailable", status: "Unknown" })).toBe("warn");
  });
});

describe("a cluster's availability time", () => {
  it("is labelled by the Available condition's status: Unknown since, not Available since", () => {
    expect(availabilitySince("Unknown")).toBe("Unknown since");
    expect(availabilitySince("False")).toBe("Unavailable since");
    expect(availabilitySince("True")).toBe("Available since");
  });
});

describe("a rollout's clusters, classified as the hub does", () => {
  const template = { workload: { manifests: [{ kind: "ConfigMap", data: { v: "2" } }] } };
  const nowMs = Date.parse("2026-11-26T12:00:00Z");
  const at = (ms: number) => new Date(ms).toISOString();
  const done = (generation: number) =>
    ["Applied", "Available"].map((type) => ({ type, status: "True", observedGeneration: generation, lastTransitionTime: at(nowMs - 60_000) }));
  const work = (spec: unknown, generation: number) => ({
    metadata: { generation, annotations: { [TEMPLATE_WRITTEN_ANNOTATION]: at(nowMs - 120_000) } },
    spec,
    status: { conditions: done(generation) },
  });

  it("counts a work still on the old template as to apply, however healthy, and holds the rest back", () => {
    const old = { workload: { manifests: [{ kind: "ConfigMap", data: { v: "1" } }] } };
    const works = new Map([
      ["a", work(template, 2)],
      ["b", work(old, 1)],
      ["c", work(old, 1)],
    ]);
    const strategy = { type: "Progressive" as const, progressive: { maxConcurrency: 1, minSuccessTime: "1h" } };
    const r = classifyRollout(strategy, [{ index: 0, name: "", clusters: ["a", "b", "c"] }], works, canonicalJson(template), nowMs);
    expect(Object.fromEntries(r.state)).toEqual({ a: "Succeeded", b: "ToApply", c: "ToApply" });
    expect(r.succeeded).toBe(1);
    // a soaks for an hour: nothing else gets the template yet.
    expect(r.rollout.toApply).toEqual([]);
  });
});
