/**
 * Many writes of a kind committed together (src/store/d1/write.ts writeStoredMany, src/store/d1/objects.ts
 * commitObjects): each on its own precondition, in D1 batches, with its hooks and indexes, and
 * crash-safe through the outbox as a single write is.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { COMMIT_BATCH_ITEMS, commitObjects, database } from "../../src/store/d1/objects.ts";
import { computeWrite } from "../../src/k8s/write.ts";
import { ManifestWorkKind } from "../../src/kinds/manifestwork.ts";
import { writeStoredMany } from "../../src/store/d1/write.ts";
import { call, MC, WORKS } from "./helpers.ts";

const work = (name: string, data: string) => ({
  apiVersion: "work.open-cluster-management.io/v1",
  kind: "ManifestWork",
  metadata: { name, labels: { batch: "yes" } },
  spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm", namespace: "default" }, data: { v: data } }] } },
});

describe("writeStoredMany", () => {
  it("creates, updates and deletes across namespaces in batches; a stale write is lost alone", async () => {
    // More works than one batch holds, in as many cluster namespaces.
    const n = COMMIT_BATCH_ITEMS + 7;
    const created = await writeStoredMany(
      env,
      ManifestWorkKind,
      Array.from({ length: n }, (_, i) => ({ namespace: `bw-${i}`, name: "w", req: { verb: "create" as const, body: work("w", "1") } })),
    );
    expect(created.every((r) => r !== "lost" && r !== null)).toBe(true);
    const stored = created as KubeObject[];
    expect(new Set(stored.map((o) => o.metadata.resourceVersion)).size).toBe(n);
    expect((await call("GET", `${WORKS("bw-3")}/w`)).body.spec.workload.manifests[0].data).toEqual({ v: "1" });
    // The label index followed the creates.
    expect(
      (await env.DB.prepare(
        "SELECT COUNT(*) AS c FROM labels WHERE resource = 'work.open-cluster-management.io/manifestworks' AND namespace LIKE 'bw-%' AND key = 'batch'",
      ).first<{ c: number }>())!.c,
    ).toBe(n);

    // Someone else writes bw-1's work meanwhile: the batch's update of it (on the old copy) is lost.
    await call("PATCH", `${WORKS("bw-1")}/w`, { metadata: { annotations: { other: "writer" } } }, { contentType: "application/merge-patch+json" });
    const results = await writeStoredMany(env, ManifestWorkKind, [
      { namespace: "bw-0", name: "w", req: { verb: "update", body: { ...stored[0]!, spec: work("w", "2").spec } }, known: stored[0]! },
      { namespace: "bw-1", name: "w", req: { verb: "update", body: { ...stored[1]!, spec: work("w", "2").spec } }, known: stored[1]! },
      { namespace: "bw-2", name: "w", req: { verb: "delete", preconditions: { uid: stored[2]!.metadata.uid } }, known: stored[2]! },
      { namespace: "bw-new", name: "w", req: { verb: "create", body: work("w", "3") } },
      { namespace: "bw-3", name: "w", req: { verb: "create", body: work("w", "dup") } },
    ]);
    expect(results[0]).toMatchObject({ spec: { workload: { manifests: [{ data: { v: "2" } }] } } });
    expect(results[1]).toBe("lost");
    expect((results[2] as KubeObject).metadata.name).toBe("w");
    expect(results[3]).toMatchObject({ metadata: { namespace: "bw-new" } });
    expect(results[4]).toBe("lost");
    expect((await call("GET", `${WORKS("bw-1")}/w`)).body.spec.workload.manifests[0].data).toEqual({ v: "1" });
    expect((await call("GET", `${WORKS("bw-1")}/w`)).body.metadata.annotations).toEqual({ other: "writer" });
    expect((await call("GET", `${WORKS("bw-2")}/w`)).status).toBe(404);
    expect((await call("GET", `${WORKS("bw-3")}/w`)).body.spec.workload.manifests[0].data).toEqual({ v: "1" });
    // Nothing is left owing: every hook ran and the outbox rows went.
    expect((await env.DB.prepare("SELECT COUNT(*) AS c FROM outbox").first<{ c: number }>())!.c).toBe(0);
  });

  it("tells each cluster's Durable Object that its works changed (the works hook, per item)", async () => {
    for (const name of ["bw-mc1", "bw-mc2"])
      await call("POST", MC, {
        apiVersion: "cluster.open-cluster-management.io/v1",
        kind: "ManagedCluster",
        metadata: { name },
        spec: { hubAcceptsClient: true },
      });
    // The works ETag, kept in the object's memory (durable-objects/cluster/works.ts).
    const etag = (name: string) => runInDurableObject(env.CLUSTERS.getByName(name), (o) => (o as unknown as { delivery: { etag(): string } }).delivery.etag());
    const before = await Promise.all(["bw-mc1", "bw-mc2"].map(etag));
    const written = await writeStoredMany(
      env,
      ManifestWorkKind,
      ["bw-mc1", "bw-mc2"].map((ns) => ({ namespace: ns, name: "w", req: { verb: "create" as const, body: work("w", "1") } })),
    );
    expect(written).not.toContain("lost");
    const after = await Promise.all(["bw-mc1", "bw-mc2"].map(etag));
    expect(after[0]).not.toBe(before[0]);
    expect(after[1]).not.toBe(before[1]);
    expect(after.every((e) => e !== null)).toBe(true);
  });

  it("leaves a committed batch's outbox rows for the sweep when its writer dies before the hooks", async () => {
    const db = database(env.DB);
    const next = computeWrite(
      ManifestWorkKind,
      { namespace: "bw-crash", name: "w" },
      null,
      { verb: "create", body: work("w", "1") },
      { now: Date.now(), newUid: () => crypto.randomUUID() },
    ).next!;
    const [outcome] = await commitObjects(db, ManifestWorkKind, [
      {
        key: { namespace: "bw-crash", name: "w" },
        next,
        expectedRv: null,
        extras: { outbox: { id: "crash-row", hooks: JSON.stringify({ works: true }), createdAt: Date.now(), dueAt: 0 } },
      },
    ]);
    expect(outcome!.ok).toBe(true);
    expect((await env.DB.prepare("SELECT hooks FROM outbox WHERE id = 'crash-row'").first<{ hooks: string }>())!.hooks).toBe('{"works":true}');
    // The sweep (the scheduler object's alarm) runs the row's hooks and deletes it.
    const scheduler = env.SCHEDULER.getByName("scheduler");
    await scheduler.sweepOutboxAt(Date.now());
    expect(await runDurableObjectAlarm(scheduler)).toBe(true);
    expect(await env.DB.prepare("SELECT hooks FROM outbox WHERE id = 'crash-row'").first()).toBeNull();
  });
});
