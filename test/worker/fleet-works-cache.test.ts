// A placement object's copy of its works (src/fleet/works-cache.ts): filled by a full read, kept by
// the run's own writes and by status reports that come without the spec, emptied when a change
// cannot be applied (a sweep's, another generation, a work not held) or when it is stale.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { PLACEMENT_WORKS_RESYNC_MS, PlacementWorksCache, withoutSpec } from "../../src/fleet/works-cache.ts";

const work = (cluster: string, name: string, rv: number, generation = 1, status?: Record<string, unknown>): KubeObject =>
  ({
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: { name, namespace: cluster, uid: `uid-${cluster}-${name}`, resourceVersion: String(rv), generation },
    spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `cm-${generation}` } }] } },
    ...(status ? { status } : {}),
  }) as unknown as KubeObject;

describe("a placement's works cache", () => {
  it("holds nothing until filled, then the works by cluster in name order", () => {
    const c = new PlacementWorksCache();
    expect(c.current(0)).toBeNull();
    c.fill([work("b", "crp-work", 3), work("a", "crp-1", 2), work("a", "crp-work", 1)], 1000);
    const held = c.current(1000)!;
    expect([...held.keys()].sort()).toEqual(["a", "b"]);
    expect(held.get("a")!.map((w) => w.metadata.name)).toEqual(["crp-1", "crp-work"]);
    expect(c.current(1000 + PLACEMENT_WORKS_RESYNC_MS + 1)).toBeNull();
  });

  it("takes a status report without the spec, keeping the spec held at the same generation", () => {
    const c = new PlacementWorksCache();
    c.fill([work("a", "crp-work", 1)], 0);
    const reported = withoutSpec(work("a", "crp-work", 5, 1, { conditions: [{ type: "Applied", status: "True" }] }));
    expect(reported.spec).toBeUndefined();
    c.take({ work: reported });
    const w = c.current(0)!.get("a")![0]!;
    expect(w.metadata.resourceVersion).toBe("5");
    expect(w.status).toEqual({ conditions: [{ type: "Applied", status: "True" }] });
    expect(w.spec).toEqual(work("a", "crp-work", 1).spec);
    // An older report never replaces a newer copy.
    c.take({ work: withoutSpec(work("a", "crp-work", 4, 1)) });
    expect(c.current(0)!.get("a")![0]!.metadata.resourceVersion).toBe("5");
  });

  it("is emptied by a report of another generation, of a work not held, or a change without the work", () => {
    for (const change of [{ work: withoutSpec(work("a", "crp-work", 9, 2)) }, { work: withoutSpec(work("z", "crp-work", 9)) }, {}]) {
      const c = new PlacementWorksCache();
      c.fill([work("a", "crp-work", 1)], 0);
      c.take(change);
      expect(c.current(0)).toBeNull();
    }
    // A prompt run's notification (a selected object changed) says nothing of the works.
    const c = new PlacementWorksCache();
    c.fill([work("a", "crp-work", 1)], 0);
    c.take({ prompt: true });
    expect(c.current(0)).not.toBeNull();
  });

  it("takes a report that came before the run's own write of the work on that write", () => {
    const c = new PlacementWorksCache();
    c.fill([], 0);
    // The first clusters' agents report while the run still writes the fleet's works.
    c.take({ work: withoutSpec(work("a", "crp-work", 5, 1, { conditions: [{ type: "Applied", status: "True" }] })) });
    c.apply(work("a", "crp-work", 2));
    const w = c.current(0)!.get("a")![0]!;
    expect(w.metadata.resourceVersion).toBe("5");
    expect(w.status).toEqual({ conditions: [{ type: "Applied", status: "True" }] });
    expect(w.spec).toEqual(work("a", "crp-work", 1).spec);
    // One no write of the run took on: the next run reads the works.
    c.take({ work: withoutSpec(work("b", "crp-work", 6)) });
    expect(c.current(0)).toBeNull();
  });

  it("keeps the run's own writes and removals", () => {
    const c = new PlacementWorksCache();
    c.fill([work("a", "crp-work", 1), work("b", "crp-work", 2)], 0);
    c.apply(work("a", "crp-work", 7, 2));
    c.apply(work("c", "crp-work", 8));
    c.take({ removed: { namespace: "b", name: "crp-work" } });
    const held = c.current(0)!;
    expect(held.get("a")![0]!.metadata.generation).toBe(2);
    expect(held.has("b")).toBe(false);
    expect(held.get("c")![0]!.metadata.resourceVersion).toBe("8");
  });
});

describe("a placement's works cache during a full read", () => {
  it("applies the reports that came while it read on top of the read", () => {
    const c = new PlacementWorksCache();
    c.startFill();
    c.take({ work: withoutSpec(work("a", "crp-work", 5, 1, { conditions: [{ type: "Available", status: "True" }] })) });
    c.fill([work("a", "crp-work", 3)], 0);
    const w = c.current(0)!.get("a")![0]!;
    expect(w.metadata.resourceVersion).toBe("5");
    expect(w.spec).toEqual(work("a", "crp-work", 1).spec);
  });
  it("keeps nothing when invalidated while it read, or when the read failed", () => {
    const c = new PlacementWorksCache();
    c.startFill();
    c.take({});
    c.fill([work("a", "crp-work", 3)], 0);
    expect(c.current(0)).toBeNull();
    c.startFill();
    c.cancelFill();
    c.take({ work: withoutSpec(work("a", "crp-work", 5)) });
    expect(c.current(0)).toBeNull();
  });

  it("keeps what a run kept for the next runs only while status reports alone came, and not past the resync", () => {
    const c = new PlacementWorksCache();
    c.fill([work("a", "crp-work", 1)], 0);
    const epoch = c.runEpoch();
    c.keepRun({ run: 1 }, epoch, 0);
    c.take({ work: withoutSpec(work("a", "crp-work", 5, 1)) });
    expect(c.heldRun(10)).toEqual({ run: 1 });
    expect(c.heldRun(PLACEMENT_WORKS_RESYNC_MS + 1)).toBeNull();
    // A selected object's change, a cluster's, the placement's own write: the next run reads everything.
    for (const forget of [() => c.take({ prompt: true }), () => c.forgetClusters(), () => c.take({ removed: { namespace: "a", name: "crp-work" } })]) {
      c.keepRun({ run: 2 }, c.runEpoch(), 0);
      expect(c.heldRun(0)).toEqual({ run: 2 });
      forget();
      expect(c.heldRun(0)).toBeNull();
    }
    // A change during the run: what it read is not kept.
    const during = c.runEpoch();
    c.take({ prompt: true });
    c.keepRun({ run: 3 }, during, 0);
    expect(c.heldRun(0)).toBeNull();
  });

  it("takes a report of the generation a run is writing on that write, without reading the works again", () => {
    const c = new PlacementWorksCache();
    c.fill([work("a", "crp-work", 1)], 0);
    // The agent reports generation 2 before the run took its write of generation 2 in.
    c.take({ work: withoutSpec(work("a", "crp-work", 7, 2, { conditions: [{ type: "Applied", status: "True" }] })) });
    c.apply(work("a", "crp-work", 6, 2));
    const w = c.current(0)!.get("a")![0]!;
    expect(w.metadata.resourceVersion).toBe("7");
    expect(w.metadata.generation).toBe(2);
    expect(w.status).toEqual({ conditions: [{ type: "Applied", status: "True" }] });
    expect(w.spec).toEqual(work("a", "crp-work", 6, 2).spec);
  });
});
