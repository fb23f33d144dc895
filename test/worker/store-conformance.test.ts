/**
 * The Store's contract (src/store/store.ts), one suite run against every backend (as
 * workers-oauth-provider runs one suite against each `src/storage/{backend}`): the D1 backend
 * (src/store/d1, a ManagedClusterSet) and the cluster-object backend (src/store/cluster-object, a
 * ManagedCluster in its Durable Object). Reads, writes of every verb, preconditions, not found,
 * generation, the event log and batched writes answer alike, and every answer agrees with the D1
 * index. Dry run is not a Store operation (the API computes it without committing:
 * src/api/resource/write.ts `writeDryRun`), so it is not part of this contract.
 */
import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/k8s/errors.ts";
import type { KindDefinition } from "../../src/k8s/kind.ts";
import { d1Database, getObject, pruneEventLog } from "../../src/store/d1/objects.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { ManagedClusterKind } from "../../src/kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "../../src/kinds/managedclusterset.ts";
import { storeOf } from "../../src/store/store.ts";
import { storageOf } from "../../src/store/storage.ts";
import { admittedStoreOf } from "../../src/admission/store.ts";
import { PlacementKind } from "../../src/kinds/placement.ts";
import { ManifestWorkKind } from "../../src/kinds/manifestwork.ts";

/** The ApiError `p` fails with (its code and reason), or null when it succeeds. */
async function failure(p: Promise<unknown>): Promise<{ code: number; reason: string } | null> {
  try {
    await p;
    return null;
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    return { code: e.code, reason: e.reason };
  }
}

/** A backend under test: its name, a kind it stores, a valid spec, and a changed one; the namespace of a namespaced kind. */
interface Backend {
  backend: KindDefinition["storage"];
  def: KindDefinition;
  spec: Record<string, unknown>;
  changed: Record<string, unknown>;
  namespace?: string;
}

/** A ManifestWork spec of some 4 KB (above `SHARED_SPEC_MIN_CHARS`: stored shared), told apart by `tag`. */
function bigWorkSpec(tag: string): Record<string, unknown> {
  return {
    workload: {
      manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `big-${tag}`, namespace: "default" }, data: { tag, filler: "x".repeat(4000) } }],
    },
  };
}

const backends: Backend[] = [
  {
    backend: "d1",
    def: ManagedClusterSetKind,
    spec: {},
    changed: { clusterSelector: { selectorType: "LabelSelector", labelSelector: { matchLabels: { tier: "gold" } } } },
  },
  { backend: "cluster", def: ManagedClusterKind, spec: { hubAcceptsClient: false }, changed: { hubAcceptsClient: false, leaseDurationSeconds: 120 } },
  // A kind whose large spec the D1 backend stores once for the objects that share it (`sharedSpec`).
  { backend: "d1", def: ManifestWorkKind, namespace: "conf-works", spec: bigWorkSpec("a"), changed: bigWorkSpec("b") },
];

for (const { backend, def, spec, changed, namespace: ns = "" } of backends) {
  describe(`the Store contract, ${backend} backend (${def.kind})`, () => {
    const name = (n: string) => `conf-${backend}-${n}`;
    /** The object as the D1 index holds it. */
    const indexed = (n: string) => getObject(d1Database(env), def, { namespace: ns, name: n });

    it("is the backend the kind's definition names", () => {
      expect(def.storage).toBe(backend);
      expect(storeOf(env, def).def).toBe(def);
    });

    it("creates, gets, lists, pages, patches and deletes; every answer agrees with the D1 index", async () => {
      const s = storeOf(env, def);
      const n = name("a");
      const created = await s.write(ns, undefined, { verb: "create", body: { metadata: { name: n }, spec } });
      expect(created.created).toBe(true);
      expect(created.object?.metadata.name).toBe(n);
      expect(created.object?.metadata.generation).toBe(1);
      const got = await s.get(ns, n);
      expect(got).toEqual(await indexed(n));
      expect(await s.getCommitted(ns, n)).toEqual(got);
      const listed = await s.list();
      expect(listed.items.map((o) => o.metadata.name)).toContain(n);
      expect(Number(listed.resourceVersion)).toBeGreaterThanOrEqual(Number(got!.metadata.resourceVersion));
      expect((await s.listNamed(n)).map((o) => o.metadata.name)).toEqual([n]);
      // Several at once, in the order asked, null for one that is absent.
      expect(
        await s.getMany([
          { namespace: ns, name: n },
          { namespace: ns, name: `${n}-none` },
          { namespace: ns, name: n },
        ]),
      ).toEqual([got, null, got]);
      const ranges = await s.listNameRanges([
        { namespace: ns, from: n.slice(0, -1), to: `${n}0`, limit: 5 },
        { namespace: ns, from: `${n}-none`, to: `${n}-none0`, limit: 5 },
      ]);
      expect(ranges.map((r) => r.map((o) => o.metadata.name))).toEqual([[n], []]);
      // Pages of one, from the object's key: it is the first, and the one before it leads to it.
      const page = await s.listPage(undefined, { limit: 1, after: { namespace: ns, name: `${n.slice(0, -1)}` } });
      expect(page.items.map((o) => o.metadata.name)).toEqual([n]);
      const patched = await s.write(ns, n, { verb: "patch", patchType: "merge", patch: { metadata: { labels: { a: "b" } } } });
      expect(patched.created).toBe(false);
      expect(patched.object?.metadata.labels).toMatchObject({ a: "b" });
      expect(Number(patched.object!.metadata.resourceVersion)).toBeGreaterThan(Number(got!.metadata.resourceVersion));
      expect(await indexed(n)).toEqual(patched.object);
      const deleted = await s.write(ns, n, { verb: "delete" });
      // A delete answers with the object as it was, or null once it is removed.
      if (deleted.object !== null) expect(deleted.object.metadata.name).toBe(n);
      expect(await s.get(ns, n)).toBeNull();
      expect(await s.getCommitted(ns, n)).toBeNull();
      expect(await indexed(n)).toBeNull();
    });

    it("updates with the current resourceVersion; refuses a stale one with 409 and writes nothing", async () => {
      const s = storeOf(env, def);
      const n = name("b");
      const { object } = await s.write(ns, undefined, { verb: "create", body: { metadata: { name: n }, spec } });
      // As stored now (a controller may have written the new object's status since).
      const current = (await s.get(ns, n))!;
      const updated = await s.write(ns, n, {
        verb: "update",
        body: { ...current, metadata: { ...current.metadata, labels: { ...current.metadata.labels, x: "1" } } },
      });
      expect(updated.object?.metadata.labels).toMatchObject({ x: "1" });
      const stale = { ...object!, metadata: { ...object!.metadata, labels: { x: "2" } } };
      expect(await failure(s.write(ns, n, { verb: "update", body: stale }))).toEqual({ code: 409, reason: "Conflict" });
      expect(await failure(s.write(ns, n, { verb: "delete", preconditions: { resourceVersion: object!.metadata.resourceVersion } }))).toMatchObject({
        code: 409,
      });
      expect((await s.get(ns, n))?.metadata.labels?.x).toBe("1");
      expect((await indexed(n))?.metadata.labels?.x).toBe("1");
    });

    it("moves generation on a spec change only", async () => {
      const s = storeOf(env, def);
      const n = name("gen");
      await s.write(ns, undefined, { verb: "create", body: { metadata: { name: n }, spec } });
      const labelled = await s.write(ns, n, { verb: "patch", patchType: "merge", patch: { metadata: { labels: { l: "v" } } } });
      expect(labelled.object?.metadata.generation).toBe(1);
      const respecced = await s.write(ns, n, { verb: "patch", patchType: "merge", patch: { spec: changed } });
      expect(respecced.object?.metadata.generation).toBe(2);
      expect((await indexed(n))?.metadata.generation).toBe(2);
    });

    it("answers 404 for a missing object and 409 AlreadyExists for a second create; get answers null", async () => {
      const s = storeOf(env, def);
      const none = name("none");
      expect(await s.get(ns, none)).toBeNull();
      expect(await s.getCommitted(ns, none)).toBeNull();
      const patch = { verb: "patch", patchType: "merge", patch: { metadata: { labels: { a: "b" } } } } as const;
      expect(await failure(s.write(ns, none, patch))).toMatchObject({ code: 404, reason: "NotFound" });
      expect(await failure(s.write(ns, none, { verb: "delete" }))).toMatchObject({ code: 404, reason: "NotFound" });
      const n = name("twice");
      await s.write(ns, undefined, { verb: "create", body: { metadata: { name: n }, spec } });
      expect(await failure(s.write(ns, undefined, { verb: "create", body: { metadata: { name: n }, spec } }))).toEqual({ code: 409, reason: "AlreadyExists" });
      expect(await indexed(none)).toBeNull();
    });

    it("names a create from its generateName, and refuses one with neither name (422)", async () => {
      const s = storeOf(env, def);
      const { object } = await s.write(ns, undefined, { verb: "create", body: { metadata: { generateName: `gen-${backend}-` }, spec } });
      expect(object?.metadata.name).toMatch(new RegExp(`^gen-${backend}-[a-z0-9]{5}$`));
      expect(await s.get(ns, object!.metadata.name)).not.toBeNull();
      expect(await failure(s.write(ns, undefined, { verb: "create", body: { metadata: {}, spec } }))).toMatchObject({ code: 422 });
    });

    it("logs each write as a watch event, in order", async () => {
      const s = storeOf(env, def);
      const n = name("events");
      const from = await storageOf(env).resourceVersion();
      await s.write(ns, undefined, { verb: "create", body: { metadata: { name: n }, spec } });
      const patched = await s.write(ns, n, { verb: "patch", patchType: "merge", patch: { metadata: { labels: { e: "1" } } } });
      const before = await s.get(ns, n);
      await s.write(ns, n, { verb: "delete" });
      const { events, latest } = await s.events(undefined, from);
      const mine = events.filter((e) => e.object.metadata.name === n);
      // ADDED, the patch (and any status a controller wrote) as MODIFIED, then DELETED.
      expect(mine[0]?.type).toBe("ADDED");
      expect(mine.at(-1)?.type).toBe("DELETED");
      expect(mine.slice(1, -1).every((e) => e.type === "MODIFIED")).toBe(true);
      expect(mine.some((e) => e.object.metadata.resourceVersion === patched.object!.metadata.resourceVersion)).toBe(true);
      const versions = mine.map((e) => Number(e.object.metadata.resourceVersion));
      expect(versions).toEqual([...versions].sort((x, y) => x - y));
      expect(latest).toBeGreaterThan(from);
      expect(await s.eventBefore(ns, n, versions.at(-1)!)).toEqual(before);
    });

    it("writes many: each with its own precondition, a create that lost its race answered lost", async () => {
      const s = storeOf(env, def);
      const [a, b] = [name("many-a"), name("many-b")];
      const made = await s.writeMany([
        { namespace: ns, name: a, req: { verb: "create", body: { metadata: { name: a }, spec } } },
        { namespace: ns, name: b, req: { verb: "create", body: { metadata: { name: b }, spec } } },
      ]);
      expect(made.map((o) => (o === "lost" ? o : o?.metadata.name))).toEqual([a, b]);
      const label = { verb: "patch", patchType: "merge", patch: { metadata: { labels: { m: "1" } } } } as const;
      const out = await s.writeMany([
        { namespace: ns, name: a, req: { verb: "create", body: { metadata: { name: a, labels: { again: "yes" } }, spec } } },
        { namespace: ns, name: b, req: label },
      ]);
      expect(out[0]).toBe("lost");
      expect(out[1]).not.toBe("lost");
      expect((await s.get(ns, a))?.metadata.labels?.again).toBeUndefined();
      expect((await indexed(b))?.metadata.labels?.m).toBe("1");
    });
  });
}

describe("admission above the store", () => {
  it("admittedStoreOf runs NamespaceLifecycle before a namespaced create; the store's own door admits nothing", async () => {
    const body = { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name: "p" } };
    expect(await failure(admittedStoreOf(env, PlacementKind).write("no-such-ns", undefined, { verb: "create", body: structuredClone(body) }))).toEqual({
      code: 404,
      reason: "NotFound",
    });
    const raw = await storeOf(env, PlacementKind).write("no-such-ns", undefined, { verb: "create", body: structuredClone(body) });
    expect(raw.created).toBe(true);
    await storeOf(env, PlacementKind).write("no-such-ns", "p", { verb: "delete" });
  });
});

describe("the Storage's cluster identities", () => {
  it("the resource key they check is ManagedClusters'", async () => {
    const { resourceKey } = await import("../../src/k8s/kind.ts");
    expect(resourceKey(ManagedClusterKind)).toBe("cluster.open-cluster-management.io/managedclusters");
  });
});

describe("the D1 backend's shared specs (KindDefinition.sharedSpec: ManifestWorks)", () => {
  const NS = "shared-specs";
  const SMALL = { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "s", namespace: "default" } }] } };
  const s = () => storeOf(env, ManifestWorkKind);
  const db = () => d1Database(env);
  const work = (name: string, spec: Record<string, unknown>, labels?: Record<string, string>) => ({
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: { name, ...(labels ? { labels } : {}) },
    spec,
  });
  const row = async (name: string) =>
    (await env.DB.prepare("SELECT body, spec_ref FROM objects WHERE resource = ? AND namespace = ? AND name = ?")
      .bind("work.open-cluster-management.io/manifestworks", NS, name)
      .first()) as { body: string; spec_ref: string | null } | null;
  const specRow = async (hash: string) =>
    (await env.DB.prepare("SELECT body, orphaned_at FROM shared_specs WHERE hash = ?").bind(hash).first()) as {
      body: string;
      orphaned_at: number | null;
    } | null;
  const status = (type: string) => ({
    conditions: [{ type, status: "True", reason: "R", message: "m", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1 }],
  });

  it("stores a large spec once for the objects that share it, and each reads back exactly as written", async () => {
    const spec = bigWorkSpec("shared");
    const made = await s().writeMany([
      { namespace: NS, name: "w1", req: { verb: "create", body: work("w1", spec, { pick: "me" }) } },
      { namespace: NS, name: "w2", req: { verb: "create", body: work("w2", spec) } },
      { namespace: NS, name: "small", req: { verb: "create", body: work("small", SMALL) } },
    ]);
    const [w1, w2] = [(await row("w1"))!, (await row("w2"))!];
    expect(w1.spec_ref).toMatch(/^[0-9a-f]{64}$/);
    expect(w2.spec_ref).toBe(w1.spec_ref);
    expect((await row("small"))!.spec_ref).toBeNull();
    // The row holds the object without its spec, whose place stays; the spec's row holds its JSON.
    expect(w1.body.length).toBeLessThan(1000);
    expect(w1.body).toContain('"spec":null');
    expect((await specRow(w1.spec_ref!))!.body).toBe(JSON.stringify(spec));
    // Every read gives the object as written, key for key and in order.
    const asWritten = made[0] as KubeObject as unknown as Record<string, unknown>;
    expect(JSON.stringify(await s().get(NS, "w1"))).toBe(JSON.stringify(asWritten));
    expect(JSON.stringify(await s().getCommitted(NS, "w1"))).toBe(JSON.stringify(asWritten));
    expect(JSON.stringify((await s().list(NS)).items.find((o) => o.metadata.name === "w1"))).toBe(JSON.stringify(asWritten));
    expect(JSON.stringify((await s().listNamed("w1"))[0])).toBe(JSON.stringify(asWritten));
    expect(JSON.stringify((await s().listPage(NS, { index: { key: "pick", values: ["me"] } })).items[0])).toBe(JSON.stringify(asWritten));
    expect((await s().get(NS, "small"))?.spec).toEqual(SMALL);
  });

  it("a status write rewrites the object without its spec; the watch events carry the spec", async () => {
    const before = (await s().get(NS, "w1"))!;
    const specs = async () => ((await env.DB.prepare("SELECT count(*) AS n FROM shared_specs").first()) as { n: number }).n;
    const count = await specs();
    const written = await s().write(NS, "w1", { verb: "update", subresource: "status", body: { ...before, status: status("Applied") } });
    expect(written.object?.spec).toEqual(before.spec);
    const after = (await row("w1"))!;
    expect(after.spec_ref).toBe((await row("w2"))!.spec_ref);
    expect(after.body.length).toBeLessThan(1500);
    expect(await specs()).toBe(count);
    const event = (await env.DB.prepare("SELECT body, spec_ref FROM events WHERE resource_version = ?")
      .bind(Number(written.object!.metadata.resourceVersion))
      .first()) as {
      body: string;
      spec_ref: string;
    };
    expect(event.spec_ref).toBe(after.spec_ref);
    expect(event.body.length).toBeLessThan(1500);
    const events = (await s().events(NS, Number(before.metadata.resourceVersion))).events.filter((e) => e.object.metadata.name === "w1");
    expect(events.map((e) => e.type)).toEqual(["MODIFIED"]);
    expect(events[0]!.object).toEqual(written.object);
    expect(await s().eventBefore(NS, "w1", Number(written.object!.metadata.resourceVersion))).toEqual(before);
  });

  it("a spec no object refers to goes once the event log no longer reaches back to it; one referred to again stays", async () => {
    const old = (await row("w1"))!.spec_ref!;
    const spec2 = bigWorkSpec("second");
    await s().write(NS, "w1", { verb: "patch", patchType: "merge", patch: { spec: spec2 } });
    const w2 = await s().get(NS, "w2");
    await s().write(NS, "w2", { verb: "delete" });
    const now = (await row("w1"))!.spec_ref!;
    expect(now).not.toBe(old);
    // The sweep marks what no object refers to; its events still do, so it stays meanwhile.
    await pruneEventLog(db());
    expect((await specRow(old))?.orphaned_at).toBeGreaterThan(0);
    expect((await specRow(now))?.orphaned_at).toBeNull();
    // The DELETED event's object is w2 as it was.
    const gone = (await s().events(NS, Number(w2!.metadata.resourceVersion))).events.find((e) => e.type === "DELETED" && e.object.metadata.name === "w2");
    expect(gone?.object.spec).toEqual(bigWorkSpec("shared"));
    // Referred to again: no longer orphaned.
    await s().write(NS, undefined, { verb: "create", body: work("w3", bigWorkSpec("shared")) });
    expect((await specRow(old))?.orphaned_at).toBeNull();
    await s().write(NS, "w3", { verb: "delete" });
    await pruneEventLog(db());
    expect((await specRow(old))?.orphaned_at).toBeGreaterThan(0);
    // Once the log is pruned past it (here: all of it), it goes; the one w1 refers to stays.
    await s().write(NS, "small", { verb: "patch", patchType: "merge", patch: { metadata: { labels: { moved: "on" } } } });
    await pruneEventLog(db(), 0);
    expect(await specRow(old)).toBeNull();
    expect(await specRow(now)).not.toBeNull();
    expect((await s().get(NS, "w1"))?.spec).toEqual(spec2);
  });

  it("a hub upgraded from before shared specs reads its rows as stored; their next write stores the spec shared", async () => {
    const spec = bigWorkSpec("upgrade");
    await s().write(NS, undefined, { verb: "create", body: work("old", spec) });
    const listed = (await s().list(NS)).items;
    // The database as the previous release left it: specs inside the rows, no spec table or columns, 0010's triggers.
    const run = (q: string) => env.DB.prepare(q).run();
    await run(`UPDATE objects SET body = json_set(body, '$.spec', json((SELECT body FROM shared_specs WHERE hash = spec_ref))) WHERE spec_ref IS NOT NULL`);
    await run(`UPDATE events SET body = json_set(body, '$.spec', json((SELECT body FROM shared_specs WHERE hash = spec_ref))) WHERE spec_ref IS NOT NULL`);
    for (const t of ["objects_added", "objects_modified", "objects_deleted"]) await run(`DROP TRIGGER ${t}`);
    await run("DROP INDEX objects_spec_ref");
    await run("ALTER TABLE objects DROP COLUMN spec_ref");
    await run("ALTER TABLE events DROP COLUMN spec_ref");
    await run("DROP TABLE shared_specs");
    const triggers = env.TEST_MIGRATIONS.find((m) => m.name === "0010_write_triggers.sql")!.queries.filter((q) => q.includes("CREATE TRIGGER"));
    for (const q of triggers) await run(q);
    await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind("0013_shared_specs.sql").run();
    expect((await row("old").catch(() => null))?.spec_ref).toBeUndefined();

    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect((await row("old"))!.spec_ref).toBeNull();
    expect((await s().list(NS)).items).toEqual(listed);
    const before = (await s().get(NS, "old"))!;
    expect(before.spec).toEqual(spec);
    const written = await s().write(NS, "old", { verb: "update", subresource: "status", body: { ...before, status: status("Applied") } });
    const stored = (await row("old"))!;
    expect(stored.spec_ref).toMatch(/^[0-9a-f]{64}$/);
    expect((await specRow(stored.spec_ref!))!.body).toBe(JSON.stringify(spec));
    expect(await s().get(NS, "old")).toEqual(written.object);
  });
});
