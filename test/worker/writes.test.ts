/**
 * The one write path (src/store): writes without a precondition retry until they apply (as
 * kube-apiserver's GuaranteedUpdate), a write answers with the object as stored after its own
 * after-commit work, and what a crash leaves behind is finished (the outbox sweep, the cluster
 * object's repair from D1).
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { ClusterObject } from "../../durable-objects/cluster.ts";
import { ClusterState, migrateState } from "../../durable-objects/cluster/state.ts";
import { commitObjects, database, dependentsOf, getObject, labelIndexStatements, ownerIndexStatements } from "../../src/store/d1/objects.ts";
import { computeWrite } from "../../src/k8s/write.ts";
import { ManagedClusterKind } from "../../src/kinds/managedcluster.ts";
import { PlacementKind } from "../../src/kinds/placement.ts";
import { commitChange, writeStored } from "../../src/store/d1/write.ts";
import { deferOutboxDelete } from "../../src/store/outbox.ts";
import { ManifestWorkKind } from "../../src/kinds/manifestwork.ts";
import { SecretKind } from "../../src/kinds/secret.ts";
import { call, condition, createNamespaces, MC, silentD1, merge, WORKS, PLACEMENTS, DECISIONS, BINDINGS } from "./helpers.ts";

const G = "/apis/cluster.open-cluster-management.io";
const MCSET = `${G}/v1beta2/managedclustersets`;

const placement = (name: string) => ({
  apiVersion: "cluster.open-cluster-management.io/v1beta1",
  kind: "Placement",
  metadata: { name },
  spec: { numberOfClusters: 1 },
});

async function outboxRows(): Promise<{ resource: string; namespace: string; name: string; hooks: string }[]> {
  return (
    await env.DB.prepare("SELECT resource, namespace, name, hooks FROM outbox ORDER BY resource_version").all<{
      resource: string;
      namespace: string;
      name: string;
      hooks: string;
    }>()
  ).results;
}

/** 50 merge patches without a resourceVersion, all at once, each adding its own label; all must apply. */
async function concurrentLabelPatches(path: string): Promise<void> {
  const n = 50;
  const results = await Promise.all(Array.from({ length: n }, (_, i) => call("PATCH", path, { metadata: { labels: { [`writer-${i}`]: "yes" } } }, merge)));
  expect(results.map((r) => r.status)).toEqual(Array(n).fill(200));
  const labels = (await call("GET", path)).body.metadata.labels;
  for (let i = 0; i < n; i++) expect(labels[`writer-${i}`], `label writer-${i}`).toBe("yes");
}

beforeAll(() => createNamespaces("race", "race1", "abandoned", "fresh", "crash"));

describe("writes without a precondition retry until they apply", () => {
  it("50 concurrent merge patches on one Placement: all 200, all applied", async () => {
    expect((await call("POST", PLACEMENTS("race"), placement("p"))).status).toBe(201);
    await concurrentLabelPatches(`${PLACEMENTS("race")}/p`);
  });

  it("50 concurrent merge patches on one ManifestWork: all 200, all applied", async () => {
    const work = {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "w" },
      spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" } }] } },
    };
    expect((await call("POST", WORKS("race1"), work)).status).toBe(201);
    await concurrentLabelPatches(`${WORKS("race1")}/w`);
  });

  it("50 concurrent merge patches on one ManagedCluster: all 200, all applied", async () => {
    expect(
      (
        await call("POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "race2" },
          spec: { hubAcceptsClient: true },
        })
      ).status,
    ).toBe(201);
    await concurrentLabelPatches(`${MC}/race2`);
  });

  it("a write that lost the race to another writer (another isolate's) is computed again on a fresh read", async () => {
    expect((await call("POST", PLACEMENTS("race"), placement("lost"))).status).toBe(201);
    const stale = (await getObject(database(env.DB), PlacementKind, { namespace: "race", name: "lost" }))!;
    expect((await call("PATCH", `${PLACEMENTS("race")}/lost`, { metadata: { labels: { first: "yes" } } }, merge)).status).toBe(200);
    // The first attempt commits on the stale read (as a writer elsewhere would), loses, and retries.
    const { object } = await writeStored(
      env,
      PlacementKind,
      "race",
      "lost",
      { verb: "patch", patchType: "merge", patch: { metadata: { labels: { second: "yes" } } } },
      undefined,
      stale,
    );
    expect(object!.metadata.labels).toEqual({ first: "yes", second: "yes" });
    // With a resourceVersion precondition the fresh read refuses it instead.
    await expect(
      writeStored(env, PlacementKind, "race", "lost", { verb: "update", body: { ...stale, spec: { numberOfClusters: 3 } } }, undefined, stale),
    ).rejects.toMatchObject({ code: 409, reason: "Conflict" });
  });

  it("a patch, an update or a delete that carries a stale resourceVersion still gets 409", async () => {
    const created = await call("POST", PLACEMENTS("race"), placement("stale"));
    expect(created.status).toBe(201);
    const rv = created.body.metadata.resourceVersion;
    expect((await call("PATCH", `${PLACEMENTS("race")}/stale`, { metadata: { labels: { a: "1" } } }, merge)).status).toBe(200);
    expect((await call("PATCH", `${PLACEMENTS("race")}/stale`, { metadata: { resourceVersion: rv, labels: { b: "1" } } }, merge)).status).toBe(409);
    const apply = `apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata:\n  name: stale\n  resourceVersion: "${rv}"\n  labels:\n    c: "1"\n`;
    expect((await call("PATCH", `${PLACEMENTS("race")}/stale?fieldManager=test`, apply, { contentType: "application/apply-patch+yaml" })).status).toBe(409);
    expect((await call("PUT", `${PLACEMENTS("race")}/stale`, { ...created.body, spec: { numberOfClusters: 2 } })).status).toBe(409);
    expect((await call("DELETE", `${PLACEMENTS("race")}/stale`, { preconditions: { resourceVersion: rv } })).status).toBe(409);
    expect((await call("GET", `${PLACEMENTS("race")}/stale`)).body.metadata.labels).toEqual({ a: "1" });
  });
});

describe("a write that changes or drops metadata.uid or metadata answers as kube-apiserver", () => {
  it("PUT with another uid 409 (a precondition), patch changing it 422, metadata or name dropped 400; nothing written", async () => {
    const created = await call("POST", PLACEMENTS("race"), placement("uid"));
    expect(created.status).toBe(201);
    const path = `${PLACEMENTS("race")}/uid`;
    const { uid, resourceVersion } = created.body.metadata;
    const other = "00000000-0000-4000-8000-000000000000";
    // A PUT's uid is a precondition: checked before the resourceVersion, and reported as such.
    const put = await call("PUT", path, { ...created.body, metadata: { ...created.body.metadata, uid: other }, spec: { numberOfClusters: 2 } });
    expect(put.status).toBe(409);
    expect(put.body).toMatchObject({ reason: "Conflict" });
    expect(put.body.message).toContain(`Precondition failed: UID in precondition: ${other}, UID in object meta: ${uid}`);
    // A JSON or merge patch that changes it: metadata.uid is immutable.
    const json = { contentType: "application/json-patch+json" };
    for (const [patch, opts] of [
      [[{ op: "replace", path: "/metadata/uid", value: other }], json],
      [{ metadata: { uid: other } }, merge],
    ] as const) {
      const r = await call("PATCH", path, patch, opts);
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.details.causes).toEqual([{ field: "metadata.uid", reason: "FieldValueInvalid", message: `Invalid value: "${other}": field is immutable` }]);
    }
    // A JSON patch removing metadata (or its name), a merge patch nulling it, a PUT without it: the
    // object has no name (kube-apiserver's checkName), 400.
    const undeterminable = "the name of the object (uid based on URL) was undeterminable: name must be provided";
    for (const [method, body, opts] of [
      ["PATCH", [{ op: "remove", path: "/metadata" }], json],
      ["PATCH", [{ op: "remove", path: "/metadata/name" }], json],
      ["PATCH", { metadata: null }, merge],
      ["PUT", { apiVersion: created.body.apiVersion, kind: "Placement", spec: { numberOfClusters: 3 } }, {}],
    ] as const) {
      const r = await call(method, path, body, opts);
      expect(r.status, `${method} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body).toMatchObject({ reason: "BadRequest", message: undeterminable });
    }
    const stored = (await call("GET", path)).body;
    expect(stored.metadata).toMatchObject({ uid, resourceVersion });
    expect(stored.spec.numberOfClusters).toBe(1);
    // Dropping only the uid keeps the stored one, as kube-apiserver's BeforeUpdate does.
    const { uid: _u, ...meta } = stored.metadata;
    const kept = await call("PUT", path, { ...stored, metadata: meta, spec: { numberOfClusters: 2 } });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect(kept.body.metadata.uid).toBe(uid);
    const removed = await call("PATCH", path, [{ op: "remove", path: "/metadata/uid" }], json);
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect(removed.body.metadata.uid).toBe(uid);
    // A server-side apply that names a uid creates nothing where no object is (409, as kube-apiserver's patcher).
    const apply = `apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata:\n  name: uid-new\n  uid: ${other}\nspec:\n  numberOfClusters: 1\n`;
    const applied = await call("PATCH", `${PLACEMENTS("race")}/uid-new?fieldManager=test`, apply, { contentType: "application/apply-patch+yaml" });
    expect(applied.status).toBe(409);
    expect(applied.body.message).toContain(`uid mismatch: the provided object specified uid ${other}, and no existing object was found`);
    expect((await call("GET", `${PLACEMENTS("race")}/uid-new`)).status).toBe(404);
  });
});

describe("a write abandoned mid-commit leaves nothing behind (issue 27)", () => {
  it("later writes of the same object, from other requests, all apply", async () => {
    const SECRETS = "/api/v1/namespaces/abandoned/secrets";
    expect((await call("POST", SECRETS, { apiVersion: "v1", kind: "Secret", metadata: { name: "x" }, stringData: { a: "b" } })).status).toBe(201);
    // A write of this object whose request is gone: its D1 reads and commit never return.
    const abandoned = writeStored({ ...env, DB: silentD1() }, SecretKind, "abandoned", "x", {
      verb: "patch",
      patchType: "merge",
      patch: { metadata: { labels: { lost: "yes" } } },
    });
    void abandoned.catch(() => undefined);
    // Writers of the object once queued behind it in this isolate, and were cancelled as hung.
    await concurrentLabelPatches(`${SECRETS}/x`);
    expect((await call("DELETE", `${SECRETS}/x`)).status).toBe(200);
  });
});

describe("a write answers with the object as stored after its own after-commit work", () => {
  it("a Placement create's answer can be PUT back with a change (200)", async () => {
    const created = await call("POST", PLACEMENTS("fresh"), placement("p"));
    expect(created.status).toBe(201);
    // The scheduler wrote the status before the create returned, and the answer carries it.
    expect(condition(created.body, "PlacementSatisfied")).toBeDefined();
    const stored = await call("GET", `${PLACEMENTS("fresh")}/p`);
    expect(created.body.metadata.resourceVersion).toBe(stored.body.metadata.resourceVersion);
    const put = await call("PUT", `${PLACEMENTS("fresh")}/p`, { ...created.body, spec: { numberOfClusters: 2 } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.spec.numberOfClusters).toBe(2);
    const again = await call("PUT", `${PLACEMENTS("fresh")}/p`, { ...put.body, metadata: { ...put.body.metadata, labels: { tier: "web" } } });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
  });

  it("so does a ManagedClusterSetBinding create (the scheduler writes its Bound condition)", async () => {
    expect(
      (await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "fresh-set" } }))
        .status,
    ).toBe(201);
    const created = await call("POST", BINDINGS("fresh"), {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "fresh-set" },
      spec: { clusterSet: "fresh-set" },
    });
    expect(created.status).toBe(201);
    expect(condition(created.body, "Bound")).toMatchObject({ status: "True" });
    const put = await call("PUT", `${BINDINGS("fresh")}/fresh-set`, { ...created.body, metadata: { ...created.body.metadata, labels: { a: "b" } } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
  });

  it("so does a ManifestWorkReplicaSet create (its controller adds its finalizer and status)", async () => {
    const mwrs = {
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name: "fresh" },
      spec: {
        placementRefs: [{ name: "p" }],
        manifestWorkTemplate: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" } }] } },
      },
    };
    const created = await call("POST", "/apis/work.open-cluster-management.io/v1alpha1/namespaces/fresh/manifestworkreplicasets", mwrs);
    expect(created.status).toBe(201);
    expect(created.body.metadata.finalizers).toContain("work.open-cluster-management.io/manifest-work-cleanup");
    const put = await call("PUT", "/apis/work.open-cluster-management.io/v1alpha1/namespaces/fresh/manifestworkreplicasets/fresh", {
      ...created.body,
      metadata: { ...created.body.metadata, labels: { a: "b" } },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
  });
});

describe("finished outbox rows of writes given the request's waitUntil", () => {
  it("are deleted just after the writes return, many in one deletion", async () => {
    const work = (name: string) => ({
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name },
      spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" } }] } },
    });
    const scheduled: Promise<unknown>[] = [];
    const waitUntil = (p: Promise<unknown>) => void scheduled.push(p);
    // A ManifestWork create owes works delivery: the hook runs before the write returns.
    const written = await writeStored(env, ManifestWorkKind, "dq", "w1", { verb: "create", body: work("w1") }, undefined, undefined, waitUntil);
    expect(written.created).toBe(true);
    expect(scheduled.length).toBe(1);
    await Promise.all(scheduled);
    expect((await outboxRows()).filter((r) => r.namespace === "dq")).toEqual([]);

    // Rows finished together go in one deletion.
    for (const id of ["dq-a", "dq-b"]) {
      // Not due for an hour, so that no sweep takes them meanwhile.
      await env.DB.prepare(
        "INSERT INTO outbox (id, resource, namespace, name, hooks, created_at, due_at, resource_version) VALUES (?, 'x/y', 'dq', ?, '{}', ?, ?, 0)",
      )
        .bind(id, id, Date.now(), Date.now() + 3_600_000)
        .run();
    }
    scheduled.length = 0;
    deferOutboxDelete(env, "dq-a", waitUntil);
    deferOutboxDelete(env, "dq-b", waitUntil);
    expect(scheduled.length).toBe(1);
    expect((await outboxRows()).filter((r) => r.namespace === "dq").length).toBe(2);
    await Promise.all(scheduled);
    expect((await outboxRows()).filter((r) => r.namespace === "dq")).toEqual([]);
  });
});

describe("crash recovery", () => {
  it("a committed Placement whose scheduling never ran is scheduled by the outbox sweep", async () => {
    await call("GET", PLACEMENTS("crash")); // the isolate's start sweep has run
    const obj = computeWrite(
      PlacementKind,
      { namespace: "crash", name: "lost" },
      null,
      { verb: "create", body: placement("lost") },
      { now: Date.now(), newUid: () => crypto.randomUUID() },
    ).next!;
    // The commit as a crashed writer left it: the row and its outbox row, no hook run.
    await commitChange(env, PlacementKind, { namespace: "crash", name: "lost" }, null, obj, Date.now());
    expect((await outboxRows()).map((r) => `${r.resource}/${r.namespace}/${r.name}`)).toContain("cluster.open-cluster-management.io/placements/crash/lost");
    expect((await call("GET", `${PLACEMENTS("crash")}/lost`)).body.status).toBeUndefined();

    const scheduler = env.SCHEDULER.getByName("scheduler");
    await scheduler.sweepOutboxAt(Date.now());
    // The row is not due yet (its writer owns it for a grace period) ...
    expect(await runDurableObjectAlarm(scheduler)).toBe(true);
    expect((await call("GET", `${PLACEMENTS("crash")}/lost`)).body.status).toBeUndefined();
    // ... once it is (the writer died), the sweep runs its hooks and deletes it.
    await env.DB.prepare("UPDATE outbox SET due_at = 0").run();
    await scheduler.sweepOutboxAt(Date.now());
    expect(await runDurableObjectAlarm(scheduler)).toBe(true);
    const p = (await call("GET", `${PLACEMENTS("crash")}/lost`)).body;
    expect(condition(p, "PlacementSatisfied")).toBeDefined();
    expect((await call("GET", `${DECISIONS("crash")}?labelSelector=cluster.open-cluster-management.io/placement=lost`)).body.items).toHaveLength(1);
    expect(await outboxRows()).toEqual([]);
  });

  it("a cluster object that crashed after its D1 commit takes the object from D1 at its next load", async () => {
    expect(
      (
        await call("POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "torn" },
          spec: { hubAcceptsClient: true },
        })
      ).status,
    ).toBe(201);
    const stub = env.CLUSTERS.getByName("torn");
    const before = (await call("GET", `${MC}/torn`)).body;
    // D1 committed a label the object never stored, and the object's marker says so.
    const next = structuredClone(before);
    next.metadata.labels = { ...next.metadata.labels, torn: "yes" };
    await commitChange(env, ManagedClusterKind, { namespace: "", name: "torn" }, before, next, Date.now());
    await runInDurableObject(stub, (_obj: ClusterObject, state) => {
      state.storage.sql.exec("INSERT INTO state (k, v) VALUES ('committing', ?)", JSON.stringify({ name: "torn" }));
    });
    expect((await call("GET", `${MC}/torn`)).body.metadata.labels.torn).toBeUndefined();
    // Its next load repairs it.
    await evictDurableObject(stub);
    const repaired = (await call("GET", `${MC}/torn`)).body;
    const row = await getObject(database(env.DB), ManagedClusterKind, { namespace: "", name: "torn" });
    expect(repaired).toEqual(row);
    expect(repaired.metadata.labels.torn).toBe("yes");
    // And it takes writes again (its copy is no longer stale).
    expect((await call("PATCH", `${MC}/torn`, { metadata: { labels: { after: "yes" } } }, merge)).status).toBe(200);
  });

  it("a crash between the D1 commit and the object's own write leaves the marker in the object row; the next load repairs", async () => {
    expect(
      (
        await call("POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "torn2" },
          spec: { hubAcceptsClient: true },
        })
      ).status,
    ).toBe(201);
    const stub = env.CLUSTERS.getByName("torn2");
    const pending = () =>
      runInDurableObject(
        stub,
        (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM state WHERE pending IS NOT NULL OR k = 'committing'").one().n,
      );
    expect(await pending()).toBe(0);
    // The object dies between the two steps: D1 committed, the object's write of the result fails.
    const proto = ClusterState.prototype as unknown as { write(k: string, v: unknown): void };
    const real = proto.write;
    let crash = true;
    proto.write = function (this: unknown, k: string, v: unknown) {
      if (k === "object" && crash) {
        crash = false;
        throw new Error("simulated crash after the D1 commit");
      }
      return real.call(this, k, v);
    };
    try {
      expect((await call("PATCH", `${MC}/torn2`, { metadata: { labels: { torn: "yes" } } }, merge)).status).toBe(500);
    } finally {
      proto.write = real;
    }
    expect(crash).toBe(false);
    // The marker stayed, in the object row (no row of its own), and the copy is behind D1.
    expect(await pending()).toBe(1);
    expect(await runInDurableObject(stub, (_o, state) => state.storage.sql.exec("SELECT k FROM state WHERE k = 'committing'").toArray().length)).toBe(0);
    const row = await getObject(database(env.DB), ManagedClusterKind, { namespace: "", name: "torn2" });
    expect(row!.metadata.labels!.torn).toBe("yes");
    expect((await call("GET", `${MC}/torn2`)).body.metadata.labels?.torn).toBeUndefined();
    // Its next load takes the object from D1 and clears the marker.
    await evictDurableObject(stub);
    expect((await call("GET", `${MC}/torn2`)).body).toEqual(row);
    expect(await pending()).toBe(0);
    expect((await call("PATCH", `${MC}/torn2`, { metadata: { labels: { after: "yes" } } }, merge)).status).toBe(200);
  });

  it("an outbox row costs D1 1 row written to insert and 1 to delete (no index entries)", async () => {
    const ins = await env.DB.prepare(
      "INSERT INTO outbox (id, resource_version, resource, namespace, name, hooks, created_at, due_at) VALUES ('probe', 1, 'r', 'n', 'm', '{}', 1, 2)",
    ).run();
    const del = await env.DB.prepare("DELETE FROM outbox WHERE id = 'probe'").run();
    expect([ins.meta.rows_written, del.meta.rows_written]).toEqual([1, 1]);
  });

  it("a batch of writes moves the resourceVersion counter once: each write its own version and watch event, the counter at the last", async () => {
    await createNamespaces("perbatch");
    const written: number[] = [];
    // D1 with each batch's rows written per statement recorded.
    const d1 = new Proxy(env.DB, {
      get(target, key) {
        if (key === "batch")
          return async (statements: D1PreparedStatement[]) => {
            const results = await target.batch(statements);
            written.push(...results.map((r) => r.meta.rows_written ?? 0));
            return results;
          };
        const v = Reflect.get(target, key, target) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const counter = async () => (await env.DB.prepare("SELECT value FROM counters WHERE id = 1").first<{ value: number }>())!.value;
    const start = await counter();
    const secret = (name: string) => ({ apiVersion: "v1", kind: "Secret", metadata: { name, namespace: "perbatch" }, data: {} });
    const items = ["a", "b", "c", "d"].map((name) => ({
      key: { namespace: "perbatch", name },
      next: computeWrite(
        SecretKind,
        { namespace: "perbatch", name },
        null,
        { verb: "create", body: secret(name) },
        { now: Date.now(), newUid: () => crypto.randomUUID() },
      ).next!,
      expectedRv: null,
    }));
    const outcomes = await commitObjects(database(d1), SecretKind, items);
    const versions = outcomes.map((o) => (o.ok ? Number(o.object!.metadata.resourceVersion) : NaN));
    expect(versions).toEqual([start + 1, start + 2, start + 3, start + 4]);
    expect(await counter()).toBe(start + 4);
    const logged = await env.DB.prepare("SELECT resource_version AS rv, name, type FROM events WHERE resource_version > ? ORDER BY resource_version")
      .bind(start)
      .all();
    expect(logged.results).toEqual(["a", "b", "c", "d"].map((name, i) => ({ rv: start + 1 + i, name, type: "ADDED" })));
    // Each create writes its row, its primary-key entry, its event and the event's index entry
    // (4 rows); the counter row is written once, by the batch's last statement (before: 5 per create).
    expect(written.reduce((a, b) => a + b, 0)).toBe(4 * 4 + 1);
    expect(written.at(-1)).toBe(1);
    // A list answers the counter's version, and a write after the batch goes on from it.
    expect(Number((await call("GET", "/api/v1/namespaces/perbatch/secrets")).body.metadata.resourceVersion)).toBe(start + 4);
    const after = await call("POST", "/api/v1/namespaces/perbatch/secrets", secret("e"));
    expect(Number(after.body.metadata.resourceVersion)).toBe(start + 5);
  });

  it("a create inserts its label and owner index rows without first deleting any: no statement on rows that cannot exist", async () => {
    await createNamespaces("createidx");
    const ran: string[] = [];
    // D1 whose batches record the SQL of each statement.
    const sqlOf = new WeakMap<object, string>();
    const d1 = new Proxy(env.DB, {
      get(target, key) {
        if (key === "prepare")
          return (text: string) => {
            const stmt = target.prepare(text);
            return new Proxy(stmt, {
              get(t, k) {
                if (k === "bind")
                  return (...args: unknown[]) => {
                    const bound = t.bind(...args);
                    sqlOf.set(bound, text);
                    return bound;
                  };
                const v = Reflect.get(t, k, t) as unknown;
                return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
              },
            });
          };
        if (key === "batch")
          return (statements: D1PreparedStatement[]) => {
            ran.push(...statements.map((st) => sqlOf.get(st) ?? "?"));
            return target.batch(statements);
          };
        const v = Reflect.get(target, key, target) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const ownerUid = crypto.randomUUID();
    const body = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: "dep",
        namespace: "createidx",
        labels: { tier: "gold", app: "a" },
        ownerReferences: [{ apiVersion: "v1", kind: "Secret", name: "o", uid: ownerUid }],
      },
      data: {},
    };
    const next = computeWrite(
      SecretKind,
      { namespace: "createidx", name: "dep" },
      null,
      { verb: "create", body },
      { now: Date.now(), newUid: () => crypto.randomUUID() },
    ).next!;
    const [outcome] = await commitObjects(database(d1), SecretKind, [
      {
        key: { namespace: "createidx", name: "dep" },
        next,
        expectedRv: null,
        extras: { extra: (guarded) => [...labelIndexStatements(null, next, guarded), ...ownerIndexStatements(null, next, guarded)] },
      },
    ]);
    expect(outcome!.ok).toBe(true);
    expect(ran.filter((q) => /^delete/i.test(q))).toEqual([]);
    expect(ran.filter((q) => /^insert into "labels"/i.test(q))).toHaveLength(1);
    expect(ran.filter((q) => /^insert into "owner_references"/i.test(q))).toHaveLength(1);
    // The indexes answer for it: the label selector's list and the owner's dependents.
    const gold = (await call("GET", "/api/v1/namespaces/createidx/secrets?labelSelector=tier%3Dgold,app%3Da")).body.items;
    expect(gold.map((o: { metadata: { name: string } }) => o.metadata.name)).toEqual(["dep"]);
    expect(await dependentsOf(database(env.DB), ownerUid)).toEqual([{ resource: "/secrets", namespace: "createidx", name: "dep" }]);
    // Its delete removes them, and a create of the same name after it starts clean.
    expect((await call("DELETE", "/api/v1/namespaces/createidx/secrets/dep")).status).toBe(200);
    expect(await dependentsOf(database(env.DB), ownerUid)).toEqual([]);
    const again = await call("POST", "/api/v1/namespaces/createidx/secrets", { ...body, metadata: { name: "dep", labels: { tier: "gold" } } });
    expect(again.status).toBe(201);
    expect((await call("GET", "/api/v1/namespaces/createidx/secrets?labelSelector=app%3Da")).body.items).toEqual([]);
    expect((await call("GET", "/api/v1/namespaces/createidx/secrets?labelSelector=tier%3Dgold")).body.items).toHaveLength(1);
  });

  it("a state table from before the marker column gets it, its rows kept", async () => {
    await runInDurableObject(env.CLUSTERS.getByName("old-state"), (_o, state) => {
      const sql = state.storage.sql;
      sql.exec("DROP TABLE state");
      sql.exec("CREATE TABLE state (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID");
      sql.exec("INSERT INTO state (k, v) VALUES ('lease', '{}')");
      migrateState(sql);
      migrateState(sql);
      expect(sql.exec("SELECT k, v, pending FROM state").toArray()).toEqual([{ k: "lease", v: "{}", pending: null }]);
    });
  });

  it("a commit writes 2 rows in the cluster object: the marker in the object row, then the object, which clears it", async () => {
    expect(
      (
        await call("POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "rows2" },
          spec: { hubAcceptsClient: true },
        })
      ).status,
    ).toBe(201);
    const stub = env.CLUSTERS.getByName("rows2");
    const takeCost = () => runInDurableObject(stub, (o) => (o as unknown as { takeCost(): { rowsWritten: number } }).takeCost());
    await takeCost();
    expect((await call("PATCH", `${MC}/rows2`, { metadata: { annotations: { a: "b" } } }, merge)).status).toBe(200);
    expect((await takeCost()).rowsWritten).toBe(2);
  });

  it("a cluster object whose copy is stale repairs itself on the failed commit", async () => {
    expect(
      (
        await call("POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "stale1" },
          spec: { hubAcceptsClient: true },
        })
      ).status,
    ).toBe(201);
    const before = (await call("GET", `${MC}/stale1`)).body;
    const next = structuredClone(before);
    next.metadata.labels = { ...next.metadata.labels, behind: "yes" };
    await commitChange(env, ManagedClusterKind, { namespace: "", name: "stale1" }, before, next, Date.now());
    // The first write finds the copy stale (409) and repairs it; the next one applies.
    expect((await call("PATCH", `${MC}/stale1`, { metadata: { labels: { first: "yes" } } }, merge)).status).toBe(409);
    const second = await call("PATCH", `${MC}/stale1`, { metadata: { labels: { second: "yes" } } }, merge);
    expect(second.status).toBe(200);
    expect(second.body.metadata.labels).toMatchObject({ behind: "yes", second: "yes" });
  });
});
