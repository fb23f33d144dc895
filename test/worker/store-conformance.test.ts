/**
 * The Store's contract (src/store/store.ts), one suite run against every backend (as
 * workers-oauth-provider runs one suite against each `src/storage/{backend}`): the D1 backend
 * (src/store/d1, a ManagedClusterSet) and the cluster-object backend (src/store/cluster-object, a
 * ManagedCluster in its Durable Object). Reads, writes of every verb, preconditions, not found,
 * generation, the event log and batched writes answer alike, and every answer agrees with the D1
 * index. Dry run is not a Store operation (the API computes it without committing:
 * src/api/resource/write.ts `writeDryRun`), so it is not part of this contract.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/k8s/errors.ts";
import type { KindDefinition } from "../../src/k8s/kind.ts";
import { d1Database, getObject } from "../../src/store/d1/objects.ts";
import { ManagedClusterKind } from "../../src/kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "../../src/kinds/managedclusterset.ts";
import { storeOf } from "../../src/store/store.ts";
import { storageOf } from "../../src/store/storage.ts";
import { admittedStoreOf } from "../../src/admission/store.ts";
import { PlacementKind } from "../../src/kinds/placement.ts";

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

/** A backend under test: its name, a kind it stores, a valid spec, and a changed one. */
interface Backend {
  backend: KindDefinition["storage"];
  def: KindDefinition;
  spec: Record<string, unknown>;
  changed: Record<string, unknown>;
}

const backends: Backend[] = [
  {
    backend: "d1",
    def: ManagedClusterSetKind,
    spec: {},
    changed: { clusterSelector: { selectorType: "LabelSelector", labelSelector: { matchLabels: { tier: "gold" } } } },
  },
  { backend: "cluster", def: ManagedClusterKind, spec: { hubAcceptsClient: false }, changed: { hubAcceptsClient: false, leaseDurationSeconds: 120 } },
];

for (const { backend, def, spec, changed } of backends) {
  describe(`the Store contract, ${backend} backend (${def.kind})`, () => {
    const name = (n: string) => `conf-${backend}-${n}`;
    /** The object as the D1 index holds it. */
    const indexed = (n: string) => getObject(d1Database(env), def, { namespace: "", name: n });

    it("is the backend the kind's definition names", () => {
      expect(def.storage).toBe(backend);
      expect(storeOf(env, def).def).toBe(def);
    });

    it("creates, gets, lists, pages, patches and deletes; every answer agrees with the D1 index", async () => {
      const s = storeOf(env, def);
      const n = name("a");
      const created = await s.write("", undefined, { verb: "create", body: { metadata: { name: n }, spec } });
      expect(created.created).toBe(true);
      expect(created.object?.metadata.name).toBe(n);
      expect(created.object?.metadata.generation).toBe(1);
      const got = await s.get("", n);
      expect(got).toEqual(await indexed(n));
      expect(await s.getCommitted("", n)).toEqual(got);
      const listed = await s.list();
      expect(listed.items.map((o) => o.metadata.name)).toContain(n);
      expect(Number(listed.resourceVersion)).toBeGreaterThanOrEqual(Number(got!.metadata.resourceVersion));
      expect((await s.listNamed(n)).map((o) => o.metadata.name)).toEqual([n]);
      // Pages of one, from the object's key: it is the first, and the one before it leads to it.
      const page = await s.listPage(undefined, { limit: 1, after: { namespace: "", name: `${n.slice(0, -1)}` } });
      expect(page.items.map((o) => o.metadata.name)).toEqual([n]);
      const patched = await s.write("", n, { verb: "patch", patchType: "merge", patch: { metadata: { labels: { a: "b" } } } });
      expect(patched.created).toBe(false);
      expect(patched.object?.metadata.labels).toMatchObject({ a: "b" });
      expect(Number(patched.object!.metadata.resourceVersion)).toBeGreaterThan(Number(got!.metadata.resourceVersion));
      expect(await indexed(n)).toEqual(patched.object);
      const deleted = await s.write("", n, { verb: "delete" });
      // A delete answers with the object as it was, or null once it is removed.
      if (deleted.object !== null) expect(deleted.object.metadata.name).toBe(n);
      expect(await s.get("", n)).toBeNull();
      expect(await s.getCommitted("", n)).toBeNull();
      expect(await indexed(n)).toBeNull();
    });

    it("updates with the current resourceVersion; refuses a stale one with 409 and writes nothing", async () => {
      const s = storeOf(env, def);
      const n = name("b");
      const { object } = await s.write("", undefined, { verb: "create", body: { metadata: { name: n }, spec } });
      // As stored now (a controller may have written the new object's status since).
      const current = (await s.get("", n))!;
      const updated = await s.write("", n, {
        verb: "update",
        body: { ...current, metadata: { ...current.metadata, labels: { ...current.metadata.labels, x: "1" } } },
      });
      expect(updated.object?.metadata.labels).toMatchObject({ x: "1" });
      const stale = { ...object!, metadata: { ...object!.metadata, labels: { x: "2" } } };
      expect(await failure(s.write("", n, { verb: "update", body: stale }))).toEqual({ code: 409, reason: "Conflict" });
      expect(await failure(s.write("", n, { verb: "delete", preconditions: { resourceVersion: object!.metadata.resourceVersion } }))).toMatchObject({
        code: 409,
      });
      expect((await s.get("", n))?.metadata.labels?.x).toBe("1");
      expect((await indexed(n))?.metadata.labels?.x).toBe("1");
    });

    it("moves generation on a spec change only", async () => {
      const s = storeOf(env, def);
      const n = name("gen");
      await s.write("", undefined, { verb: "create", body: { metadata: { name: n }, spec } });
      const labelled = await s.write("", n, { verb: "patch", patchType: "merge", patch: { metadata: { labels: { l: "v" } } } });
      expect(labelled.object?.metadata.generation).toBe(1);
      const respecced = await s.write("", n, { verb: "patch", patchType: "merge", patch: { spec: changed } });
      expect(respecced.object?.metadata.generation).toBe(2);
      expect((await indexed(n))?.metadata.generation).toBe(2);
    });

    it("answers 404 for a missing object and 409 AlreadyExists for a second create; get answers null", async () => {
      const s = storeOf(env, def);
      const none = name("none");
      expect(await s.get("", none)).toBeNull();
      expect(await s.getCommitted("", none)).toBeNull();
      const patch = { verb: "patch", patchType: "merge", patch: { metadata: { labels: { a: "b" } } } } as const;
      expect(await failure(s.write("", none, patch))).toMatchObject({ code: 404, reason: "NotFound" });
      expect(await failure(s.write("", none, { verb: "delete" }))).toMatchObject({ code: 404, reason: "NotFound" });
      const n = name("twice");
      await s.write("", undefined, { verb: "create", body: { metadata: { name: n }, spec } });
      expect(await failure(s.write("", undefined, { verb: "create", body: { metadata: { name: n }, spec } }))).toEqual({ code: 409, reason: "AlreadyExists" });
      expect(await indexed(none)).toBeNull();
    });

    it("names a create from its generateName, and refuses one with neither name (422)", async () => {
      const s = storeOf(env, def);
      const { object } = await s.write("", undefined, { verb: "create", body: { metadata: { generateName: `gen-${backend}-` }, spec } });
      expect(object?.metadata.name).toMatch(new RegExp(`^gen-${backend}-[a-z0-9]{5}$`));
      expect(await s.get("", object!.metadata.name)).not.toBeNull();
      expect(await failure(s.write("", undefined, { verb: "create", body: { metadata: {}, spec } }))).toMatchObject({ code: 422 });
    });

    it("logs each write as a watch event, in order", async () => {
      const s = storeOf(env, def);
      const n = name("events");
      const from = await storageOf(env).resourceVersion();
      await s.write("", undefined, { verb: "create", body: { metadata: { name: n }, spec } });
      const patched = await s.write("", n, { verb: "patch", patchType: "merge", patch: { metadata: { labels: { e: "1" } } } });
      const before = await s.get("", n);
      await s.write("", n, { verb: "delete" });
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
      expect(await s.eventBefore("", n, versions.at(-1)!)).toEqual(before);
    });

    it("writes many: each with its own precondition, a create that lost its race answered lost", async () => {
      const s = storeOf(env, def);
      const [a, b] = [name("many-a"), name("many-b")];
      const made = await s.writeMany([
        { namespace: "", name: a, req: { verb: "create", body: { metadata: { name: a }, spec } } },
        { namespace: "", name: b, req: { verb: "create", body: { metadata: { name: b }, spec } } },
      ]);
      expect(made.map((o) => (o === "lost" ? o : o?.metadata.name))).toEqual([a, b]);
      const label = { verb: "patch", patchType: "merge", patch: { metadata: { labels: { m: "1" } } } } as const;
      const out = await s.writeMany([
        { namespace: "", name: a, req: { verb: "create", body: { metadata: { name: a, labels: { again: "yes" } }, spec } } },
        { namespace: "", name: b, req: label },
      ]);
      expect(out[0]).toBe("lost");
      expect(out[1]).not.toBe("lost");
      expect((await s.get("", a))?.metadata.labels?.again).toBeUndefined();
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
