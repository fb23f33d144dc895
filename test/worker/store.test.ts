import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/k8s/errors.ts";
import type { KindDefinition } from "../../src/k8s/kind.ts";
import { getObject } from "../../src/store/d1/objects.ts";
import { ManagedClusterKind } from "../../src/kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "../../src/kinds/managedclusterset.ts";
import { storeOf } from "../../src/store/store.ts";
import { store } from "../../src/store/d1/write.ts";

/** Whether `p` fails with an ApiError of `code`. */
async function failsWith(p: Promise<unknown>, code: number): Promise<boolean> {
  try {
    await p;
    return false;
  } catch (e) {
    return e instanceof ApiError && e.code === code;
  }
}

// One suite that each backend passes: the D1 store (ManagedClusterSet) and the cluster object (ManagedCluster).
const backends: [string, KindDefinition, Record<string, unknown>][] = [
  ["d1", ManagedClusterSetKind, {}],
  ["cluster", ManagedClusterKind, { hubAcceptsClient: false }],
];

for (const [backend, def, spec] of backends) {
  describe(`the store, ${backend} backend (${def.kind})`, () => {
    it("is the backend the kind's definition names", () => {
      expect(def.storage).toBe(backend);
      expect(storeOf(env, def).def).toBe(def);
    });

    it("creates, gets, lists, patches and deletes; every answer agrees with the D1 index", async () => {
      const s = storeOf(env, def);
      const name = `store-${backend}-a`;
      const created = await s.write("", undefined, { verb: "create", body: { metadata: { name }, spec } });
      expect(created.created).toBe(true);
      expect(created.object?.metadata.name).toBe(name);
      const got = await s.get("", name);
      expect(got).toEqual(await getObject(store(env), def, { namespace: "", name }));
      expect((await s.list()).items.map((o) => o.metadata.name)).toContain(name);
      const patched = await s.write("", name, { verb: "patch", patchType: "merge", patch: { metadata: { labels: { a: "b" } } } });
      expect(patched.created).toBe(false);
      expect(patched.object?.metadata.labels).toMatchObject({ a: "b" });
      expect(Number(patched.object!.metadata.resourceVersion)).toBeGreaterThan(Number(got!.metadata.resourceVersion));
      await s.write("", name, { verb: "delete" });
      expect(await s.get("", name)).toBeNull();
      expect(await getObject(store(env), def, { namespace: "", name })).toBeNull();
    });

    it("names a create from its generateName", async () => {
      const s = storeOf(env, def);
      const { object } = await s.write("", undefined, { verb: "create", body: { metadata: { generateName: `gen-${backend}-` }, spec } });
      expect(object?.metadata.name).toMatch(new RegExp(`^gen-${backend}-[a-z0-9]{5}$`));
      expect(await s.get("", object!.metadata.name)).not.toBeNull();
    });

    it("refuses as the API does: 404 for a missing object, 409 for a stale resourceVersion, 422 for no name; nothing written", async () => {
      const s = storeOf(env, def);
      expect(
        await failsWith(s.write("", `store-${backend}-none`, { verb: "patch", patchType: "merge", patch: { metadata: { labels: { a: "b" } } } }), 404),
      ).toBe(true);
      const name = `store-${backend}-b`;
      const { object } = await s.write("", undefined, { verb: "create", body: { metadata: { name }, spec } });
      const stale = { ...object!, metadata: { ...object!.metadata, resourceVersion: "1", labels: { x: "y" } } };
      expect(await failsWith(s.write("", name, { verb: "update", body: stale }), 409)).toBe(true);
      expect((await s.get("", name))?.metadata.labels?.x).toBeUndefined();
      expect(await failsWith(s.write("", undefined, { verb: "create", body: { metadata: {}, spec } }), 422)).toBe(true);
    });
  });
}
