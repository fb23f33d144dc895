/**
 * Deleting ManifestWorks as OCM does (src/work/deletion.ts), inside workerd with real Durable
 * Object storage and D1: the cleanup finalizer an agent's report puts on a work, `Deleting` until
 * the agent confirms (`released`), works with nobody left to confirm, `ttlSecondsAfterFinished`
 * on the cluster object's timer, and a replica set whose Placement is missing.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ClusterObject } from "../../durable-objects/cluster.ts";
import { call, condition, createNamespaces, MC, withClockAhead, type AgentKeys, joined, WORKS } from "./helpers.ts";
import { MANIFEST_WORK_CLEANUP_FINALIZER, workTtlTimer } from "../../src/work/deletion.ts";
import { waitFor } from "../wait.ts";

const work = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: "work.open-cluster-management.io/v1",
  kind: "ManifestWork",
  metadata: { name },
  spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { a: "1" } }] }, ...extra },
});
const applied = (type = "Applied") => ({
  conditions: [
    { type, status: "True", reason: "R", message: "m", lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"), observedGeneration: 1 },
  ],
});

/** The agent's status report of work `name` in cluster `cluster`. */
async function report(cluster: string, keys: AgentKeys, name: string, body: Record<string, unknown>) {
  return call("PUT", `/agent/v1/clusters/${cluster}/works/${name}/status`, body, { token: await keys.sign(cluster) });
}

describe("ManifestWork deletion (OCM's manifest-work-cleanup finalizer)", () => {
  it("a work no agent reported has no finalizer and goes at once", async () => {
    await joined("del1");
    expect((await call("POST", WORKS("del1"), work("w"))).status).toBe(201);
    expect((await call("GET", `${WORKS("del1")}/w`)).body.metadata.finalizers).toBeUndefined();
    expect((await call("DELETE", `${WORKS("del1")}/w`)).status).toBe(200);
    expect((await call("GET", `${WORKS("del1")}/w`)).status).toBe(404);
  });

  it("the agent's first report puts the finalizer on; a delete then shows Deleting until the agent confirms with released", async () => {
    const keys = await joined("del2");
    const created = (await call("POST", WORKS("del2"), work("w"))).body;
    const uid = created.metadata.uid as string;
    // Confirming a work that is not being deleted is a conflict, and changes nothing.
    const early = await report("del2", keys, "w", { uid, status: {}, released: true });
    expect(early.status, JSON.stringify(early.body)).toBe(409);

    expect((await report("del2", keys, "w", { uid, status: applied() })).status).toBe(200);
    const held = (await call("GET", `${WORKS("del2")}/w`)).body;
    expect(held.metadata.finalizers).toEqual([MANIFEST_WORK_CLEANUP_FINALIZER]);
    expect(condition(held, "Applied")?.status).toBe("True");
    // A second report writes the status only (the finalizer is there once).
    expect((await report("del2", keys, "w", { uid, status: applied("Available") })).status).toBe(200);
    expect((await call("GET", `${WORKS("del2")}/w`)).body.metadata.finalizers).toEqual([MANIFEST_WORK_CLEANUP_FINALIZER]);

    const del = await call("DELETE", `${WORKS("del2")}/w`);
    expect(del.status).toBe(200);
    expect(del.body.metadata.deletionTimestamp).toBeTruthy();
    const deleting = await waitFor("the Deleting condition", async () => {
      const w = (await call("GET", `${WORKS("del2")}/w`)).body;
      return condition(w, "Deleting") ? w : undefined;
    });
    expect(condition(deleting, "Deleting")).toMatchObject({ status: "True", reason: "ResourceRemaining" });
    // A report from an agent that has not seen the deletion yet keeps the condition.
    expect((await report("del2", keys, "w", { uid, status: applied() })).status).toBe(200);
    const reported = (await call("GET", `${WORKS("del2")}/w`)).body;
    expect(condition(reported, "Applied")?.status).toBe("True");
    expect(condition(reported, "Deleting")).toMatchObject({ status: "True", reason: "ResourceRemaining" });
    // Still there: only the agent's confirmation lets it go. A confirmation for another uid is a conflict.
    expect((await call("GET", `${WORKS("del2")}/w`)).status).toBe(200);
    expect((await report("del2", keys, "w", { uid: "someone-else", status: {}, released: true })).status).toBe(409);
    const done = await report("del2", keys, "w", { uid, status: {}, released: true });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect((await call("GET", `${WORKS("del2")}/w`)).status).toBe(404);
    expect((await report("del2", keys, "w", { uid, status: {}, released: true })).status).toBe(404);
  });

  it("a held work in a namespace no ManagedCluster owns loses the finalizer when deleted, and goes", async () => {
    await createNamespaces("del-orphan");
    const body = work("w");
    (body.metadata as Record<string, unknown>).finalizers = [MANIFEST_WORK_CLEANUP_FINALIZER];
    expect((await call("POST", WORKS("del-orphan"), body)).status).toBe(201);
    expect((await call("DELETE", `${WORKS("del-orphan")}/w`)).status).toBe(200);
    await waitFor("the orphan work to go", async () => (await call("GET", `${WORKS("del-orphan")}/w`)).status === 404);
  });

  it("the works of a cluster that left go with it, finalizer or not", async () => {
    const keys = await joined("del3");
    const uid = (await call("POST", WORKS("del3"), work("w"))).body.metadata.uid as string;
    expect((await report("del3", keys, "w", { uid, status: applied() })).status).toBe(200);
    expect((await call("DELETE", `${MC}/del3`)).status).toBe(200);
    expect((await call("POST", "/agent/v1/clusters/del3/left", {}, { token: await keys.sign("del3") })).status).toBe(200);
    await waitFor("the works to go", async () => (await call("GET", WORKS("del3"))).body.items.length === 0);
  });
});

describe("deleteOption.ttlSecondsAfterFinished", () => {
  const complete = (at: string) => ({
    conditions: [{ type: "Complete", status: "True", reason: "ConditionRulesAggregated", message: "done", lastTransitionTime: at, observedGeneration: 1 }],
  });

  it("a completed work is deleted TTL seconds after Complete, by the cluster object's timer on the injected clock", async () => {
    const keys = await joined("ttl1");
    const uid = (await call("POST", WORKS("ttl1"), work("w", { deleteOption: { propagationPolicy: "Foreground", ttlSecondsAfterFinished: 120 } }))).body
      .metadata.uid as string;
    const at = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    expect((await report("ttl1", keys, "w", { uid, status: complete(at) })).status).toBe(200);
    const stub = env.CLUSTERS.getByName("ttl1");
    const due = await waitFor("the TTL timer", () => runInDurableObject(stub, (o: ClusterObject) => o.timers.get(workTtlTimer("w", uid)) ?? undefined));
    expect(due).toBe(Date.parse(at) + 120_000);
    // Early: nothing happens.
    await withClockAhead(60_000, () => runDurableObjectAlarm(stub));
    expect((await call("GET", `${WORKS("ttl1")}/w`)).body.metadata.deletionTimestamp).toBeUndefined();
    // Past the TTL: deleted, and held (the agent reported it) until the agent confirms.
    await withClockAhead(121_000, () => runDurableObjectAlarm(stub));
    const w = (await call("GET", `${WORKS("ttl1")}/w`)).body;
    expect(w.metadata.deletionTimestamp).toBeTruthy();
    expect((await report("ttl1", keys, "w", { uid, status: {}, released: true })).status).toBe(200);
    expect((await call("GET", `${WORKS("ttl1")}/w`)).status).toBe(404);
  });

  it("TTL 0 deletes at completion; a work that is not Complete, or has no TTL, stays", async () => {
    const keys = await joined("ttl2");
    const zero = (await call("POST", WORKS("ttl2"), work("zero", { deleteOption: { ttlSecondsAfterFinished: 0 } }))).body.metadata.uid as string;
    const none = (await call("POST", WORKS("ttl2"), work("none"))).body.metadata.uid as string;
    const at = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    expect((await report("ttl2", keys, "zero", { uid: zero, status: applied() })).status).toBe(200);
    expect((await call("GET", `${WORKS("ttl2")}/zero`)).body.metadata.deletionTimestamp).toBeUndefined();
    expect((await report("ttl2", keys, "zero", { uid: zero, status: complete(at) })).status).toBe(200);
    await waitFor("the TTL 0 deletion", async () => Boolean((await call("GET", `${WORKS("ttl2")}/zero`)).body.metadata.deletionTimestamp));
    expect((await report("ttl2", keys, "none", { uid: none, status: complete(at) })).status).toBe(200);
    expect((await call("GET", `${WORKS("ttl2")}/none`)).body.metadata.deletionTimestamp).toBeUndefined();
  });
});
