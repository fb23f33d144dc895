/**
 * The isolate's copy of the works each agent was handed (src/agent-api/delivered.ts): looked up by
 * cluster and name, replaced by what a report stored, bounded by bytes per cluster and overall
 * (least recently delivered cluster out first).
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { DeliveredWorks } from "../../src/agent-api/delivered.ts";

const work = (cluster: string, name: string, rv: number): KubeObject => ({
  apiVersion: "work.open-cluster-management.io/v1",
  kind: "ManifestWork",
  metadata: { name, namespace: cluster, uid: `u-${cluster}-${name}`, resourceVersion: String(rv), creationTimestamp: "2026-01-01T00:00:00Z" },
});

describe("DeliveredWorks", () => {
  it("holds a cluster's delivered works until the next delivery replaces them", () => {
    const d = new DeliveredWorks(1000, 100);
    d.delivered("a", [work("a", "w1", 1), work("a", "w2", 2)], 50);
    expect(d.get("a", "w1")?.metadata.resourceVersion).toBe("1");
    expect(d.get("a", "w3")).toBeUndefined();
    expect(d.get("b", "w1")).toBeUndefined();
    d.delivered("a", [work("a", "w2", 5)], 30);
    expect(d.get("a", "w1")).toBeUndefined();
    expect(d.get("a", "w2")?.metadata.resourceVersion).toBe("5");
    expect(d.bytes).toBe(30);
  });

  it("takes what a report stored for a work it holds, never adds one it does not, and forgets a stale copy", () => {
    const d = new DeliveredWorks(1000, 100);
    d.delivered("a", [work("a", "w1", 1)], 40);
    d.stored("a", work("a", "w1", 7), 10);
    expect(d.get("a", "w1")?.metadata.resourceVersion).toBe("7");
    expect(d.bytes).toBe(50);
    d.stored("a", work("a", "other", 8), 10);
    d.stored("b", work("b", "w1", 9), 10);
    expect(d.get("a", "other")).toBeUndefined();
    expect(d.get("b", "w1")).toBeUndefined();
    d.forget("a", "w1");
    expect(d.get("a", "w1")).toBeUndefined();
  });

  it("keeps a copy it stored over an older copy of the same work in a later delivery, not over a work created again", () => {
    const d = new DeliveredWorks(1000, 100);
    d.delivered("a", [work("a", "w1", 1), work("a", "w2", 2)], 40);
    d.stored("a", work("a", "w1", 9), 0);
    d.stored("a", work("a", "w2", 9), 0);
    const recreated = { ...work("a", "w2", 3), metadata: { ...work("a", "w2", 3).metadata, uid: "u-new" } };
    d.delivered("a", [work("a", "w1", 4), recreated], 40);
    expect(d.get("a", "w1")?.metadata.resourceVersion).toBe("9");
    expect(d.get("a", "w2")?.metadata).toMatchObject({ uid: "u-new", resourceVersion: "3" });
  });

  it("keeps nothing of a cluster over its bound, and drops the least recently delivered clusters over the total", () => {
    const d = new DeliveredWorks(100, 60);
    d.delivered("big", [work("big", "w", 1)], 61);
    expect(d.get("big", "w")).toBeUndefined();
    expect(d.bytes).toBe(0);
    d.delivered("a", [work("a", "w", 1)], 40);
    d.delivered("b", [work("b", "w", 1)], 40);
    d.delivered("c", [work("c", "w", 1)], 40);
    expect(d.get("a", "w")).toBeUndefined();
    expect(d.get("b", "w")).toBeDefined();
    expect(d.get("c", "w")).toBeDefined();
    expect(d.bytes).toBe(80);
    // A report that grows a cluster past its bound drops the cluster.
    d.stored("b", work("b", "w", 2), 30);
    expect(d.get("b", "w")).toBeUndefined();
    expect(d.bytes).toBe(40);
  });
});
