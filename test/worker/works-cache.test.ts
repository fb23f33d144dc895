/**
 * The replica set object's copy of its works (src/work/replicaset.ts WorksCache): filled by a
 * full read, kept by the works it is handed, never regressing to an older version, and dropped
 * when it cannot be trusted (a change without its work, a lost race, the resync interval).
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { WORKS_RESYNC_MS, WorksCache } from "../../src/work/replicaset.ts";

const work = (cluster: string, rv: number, status?: string): KubeObject => ({
  apiVersion: "work.open-cluster-management.io/v1",
  kind: "ManifestWork",
  metadata: { name: "ns.rs", namespace: cluster, uid: `u-${cluster}`, resourceVersion: String(rv), creationTimestamp: "2026-01-01T00:00:00Z" },
  ...(status ? { status: { conditions: [{ type: status, status: "True" }] } } : {}),
});

describe("WorksCache", () => {
  it("holds nothing until a full read, then serves it within the resync interval", () => {
    const c = new WorksCache();
    expect(c.current(1000)).toBeNull();
    c.apply(work("a", 5)); // nothing to keep before a full read
    expect(c.current(1000)).toBeNull();
    c.fill([work("a", 1), work("b", 2)], 1000);
    expect(c.current(1000 + WORKS_RESYNC_MS)!.map((w) => w.metadata.namespace)).toEqual(["a", "b"]);
    expect(c.current(1001 + WORKS_RESYNC_MS)).toBeNull();
  });

  it("keeps the newer version of a work, adds new ones, drops removed ones", () => {
    const c = new WorksCache();
    c.fill([work("a", 10)], 0);
    c.apply(work("a", 12, "Applied"));
    c.apply(work("a", 11)); // late and older: ignored
    c.apply(work("c", 13));
    c.remove("x");
    expect(c.current(0)!.map((w) => `${w.metadata.namespace}@${w.metadata.resourceVersion}`)).toEqual(["a@12", "c@13"]);
    expect(c.current(0)![0]!.status).toEqual({ conditions: [{ type: "Applied", status: "True" }] });
    c.remove("a");
    expect(c.current(0)!.map((w) => w.metadata.namespace)).toEqual(["c"]);
    c.invalidate();
    expect(c.current(0)).toBeNull();
  });
});
