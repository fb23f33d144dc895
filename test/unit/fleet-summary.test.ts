/**
 * A KubeFleet placement's status in short (src/kinds/fleet-summary.ts), as `flotilla placement
 * status` prints it (agent/cli/commands/placement.ts) and the dashboard shows it: per cluster the
 * conditions' statuses, failed and drifted counts, what it waits for; unfilled PickN slots.
 */
import { describe, expect, it } from "vitest";
import { clusterDone, clusterSummary, placementSummary } from "../../src/kinds/fleet-summary.ts";
import { renderPlacementStatus } from "../../agent/cli/commands/placement.ts";

const c = (type: string, status: string, reason = "R", message = "") => ({
  type,
  status,
  reason,
  message,
  observedGeneration: 3,
  lastTransitionTime: "2026-01-01T00:00:00Z",
});
const chain = (...statuses: string[]) =>
  ["Scheduled", "RolloutStarted", "Overridden", "WorkSynchronized", "Applied", "Available"]
    .slice(0, statuses.length)
    .map((t, i) => c(t, statuses[i]!, `${t}Reason`, `${t} message`));

describe("clusterSummary", () => {
  it("reads each condition's status, the counts and the first condition not True", () => {
    const s = clusterSummary({
      clusterName: "east",
      observedResourceIndex: "4",
      failedPlacements: [
        { kind: "Deployment", name: "web" },
        { kind: "Service", name: "web" },
      ],
      driftedPlacements: [{ kind: "ConfigMap", name: "settings" }],
      conditions: chain("True", "True", "True", "True", "False"),
    });
    expect(s).toEqual({
      cluster: "east",
      scheduled: "True",
      rolloutStarted: "True",
      workSynchronized: "True",
      applied: "False",
      available: "-",
      failed: 2,
      drifted: 1,
      observedResourceIndex: "4",
      waiting: "Applied: AppliedReason",
      message: "Applied message",
    });
    expect(clusterDone(s)).toBe(false);
  });
  it("is done when every condition is True; an unfilled slot has no cluster", () => {
    const done = clusterSummary({ clusterName: "west", conditions: chain("True", "True", "True", "True", "True", "True") });
    expect(done.waiting).toBeNull();
    expect(clusterDone(done)).toBe(true);
    const slot = clusterSummary({ conditions: [c("Scheduled", "False", "ScheduleFailed", 'Specified cluster "x" is not found')] });
    expect(slot).toMatchObject({ cluster: null, scheduled: "False", rolloutStarted: "-", waiting: "Scheduled: ScheduleFailed", observedResourceIndex: null });
  });
});

describe("placementSummary and the CLI's tables", () => {
  const crp = {
    kind: "ClusterResourcePlacement",
    metadata: { name: "app", generation: 3 },
    spec: { policy: { placementType: "PickN", numberOfClusters: 3 } },
    status: {
      observedResourceIndex: "4",
      conditions: [c("ClusterResourcePlacementScheduled", "False", "SchedulingPolicyUnfulfilled")],
      selectedResources: [
        { group: "", version: "v1", kind: "Namespace", name: "app" },
        { group: "apps", version: "v1", kind: "Deployment", namespace: "app", name: "web" },
        {
          group: "",
          version: "v1",
          kind: "ConfigMap",
          namespace: "app",
          name: "hook",
          envelope: { name: "wrapper", namespace: "app", type: "ResourceEnvelope" },
        },
      ],
      placementStatuses: [
        { clusterName: "east", observedResourceIndex: "4", conditions: chain("True", "True", "True", "True", "True", "True") },
        { clusterName: "west", observedResourceIndex: "4", driftedPlacements: [{}], conditions: chain("True", "False") },
        { conditions: [c("Scheduled", "False", "ScheduleFailed")] },
      ],
    },
  };
  it("summarises the placement, its conditions without the kind's prefix", () => {
    const s = placementSummary(crp);
    expect(s).toMatchObject({
      kind: "ClusterResourcePlacement",
      name: "app",
      generation: 3,
      placementType: "PickN",
      numberOfClusters: 3,
      observedResourceIndex: "4",
    });
    expect(s.namespace).toBeUndefined();
    expect(s.conditions.map((x) => x.type)).toEqual(["Scheduled"]);
    expect(s.clusters.map((x) => x.cluster)).toEqual(["east", "west", null]);
    expect(placementSummary({ kind: "ResourcePlacement", metadata: { name: "rp", namespace: "team" } })).toMatchObject({
      namespace: "team",
      generation: null,
      placementType: null,
      clusters: [],
      selectedResources: [],
    });
  });
  it("prints the tables", () => {
    const out = renderPlacementStatus(placementSummary(crp), Date.parse("2026-01-01T00:05:00Z"));
    expect(out).toBe(
      [
        "ClusterResourcePlacement app: generation 3, policy PickN 3, resource index 4",
        "",
        "CONDITION   STATUS   REASON                        GEN   SINCE",
        "Scheduled   False    SchedulingPolicyUnfulfilled   3     5m",
        "",
        "Selected resources (3):",
        "KIND         NAMESPACE   NAME   APIVERSION   ENVELOPE",
        "Namespace    -           app    v1           -",
        "Deployment   app         web    apps/v1      -",
        "ConfigMap    app         hook   v1           ResourceEnvelope/wrapper",
        "",
        "Clusters (2 of 3 wanted):",
        "CLUSTER   SCHEDULED   ROLLOUT   APPLIED   AVAILABLE   FAILED   DRIFTED   INDEX   WAITING",
        "east      True        True      True      True        0        0         4       -",
        "west      True        False     -         -           0        1         4       RolloutStarted: RolloutStartedReason",
        "(none)    False       -         -         -           0        0         -       Scheduled: ScheduleFailed",
        "",
      ].join("\n"),
    );
  });
});
