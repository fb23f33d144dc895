/**
 * D1's size limits (src/store/d1/limits.ts), which the local D1 does not enforce: an object too
 * large for one D1 row is kept in pieces and read back whole (get, list, watch events), an object
 * too large for one batch is refused with 413 and nothing written, and a controller's many
 * writes go to D1 in batches bounded by bytes as well as items. Small limits reach these paths
 * with small objects; one test runs at the real 2 MB row limit with a KubeFleet placement's status
 * of 1,500 clusters.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { call, countingD1, createNamespaces } from "./helpers.ts";
import { D1_LIMITS, setD1Limits, splitUtf8, utf8Bytes } from "../../src/store/d1/limits.ts";
import { database, readEvents } from "../../src/store/d1/objects.ts";
import { writeStoredMany } from "../../src/store/d1/write.ts";
import { ManifestWorkKind } from "../../src/kinds/manifestwork.ts";
import { findKindByKind } from "../../src/kinds/index.ts";
import type { KindDefinition } from "../../src/k8s/kind.ts";

const CM = (ns: string, name = "") => `/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ""}`;
const configMap = (name: string, chars: number) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, labels: { size: "big" } },
  // Multi-byte text too (é is 2 bytes, 😀 4), so that the pieces are cut by bytes, not units.
  data: { blob: "é😀x".repeat(Math.ceil(chars / 4)).slice(0, chars) },
});
const pieces = async (ns: string, name: string) =>
  (await env.DB.prepare(
    "SELECT o.body_ref AS ref, (SELECT count(*) FROM body_chunks c WHERE c.hash = o.body_ref) AS n, length(o.body) AS stub FROM objects o WHERE o.resource = '/configmaps' AND o.namespace = ? AND o.name = ?",
  )
    .bind(ns, name)
    .first<{ ref: string | null; n: number; stub: number }>())!;

afterEach(() => {
  setD1Limits(undefined);
});

describe("utf8 pieces", () => {
  it("cuts text into pieces of at most the bytes given, never inside a character", () => {
    const text = "aé😀".repeat(1000);
    for (const max of [4, 5, 7, 100, 4096]) {
      const parts = splitUtf8(text, max);
      expect(parts.join("")).toBe(text);
      for (const p of parts) expect(new TextEncoder().encode(p).length).toBeLessThanOrEqual(max);
    }
    expect(utf8Bytes(text)).toBe(new TextEncoder().encode(text).length);
  });
});

describe("an object too large for one D1 row", () => {
  it("is kept in pieces and read whole by get, list, watch; shrunk, it is one row again", async () => {
    setD1Limits({ rowBytes: 16 * 1024 + 8 * 1024, objectBytes: 256 * 1024 });
    await createNamespaces("lim-a");
    const big = configMap("big", 60_000);
    const created = await call("POST", CM("lim-a"), big);
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual(big.data);
    const stored = await pieces("lim-a", "big");
    expect(stored.ref).toMatch(/^[0-9a-f]{64}$/);
    expect(stored.n).toBeGreaterThan(1);
    expect(stored.stub).toBeLessThan(16 * 1024);

    const got = await call("GET", CM("lim-a", "big"));
    expect(got.body).toEqual(created.body);
    const listed = await call("GET", `${CM("lim-a")}?labelSelector=size%3Dbig`);
    expect(listed.body.items).toEqual([created.body]);
    const events = await readEvents(database(env.DB), findKindByKind("", "v1", "ConfigMap") as KindDefinition, "lim-a", 0);
    expect(events.events.map((e) => [e.type, e.object])).toEqual([["ADDED", created.body]]);

    // Shrunk: one row again, its old pieces kept for the watch log until the sweep.
    const small = { ...created.body, data: { blob: "small" } };
    const updated = await call("PUT", CM("lim-a", "big"), small);
    expect(updated.status).toBe(200);
    expect((await pieces("lim-a", "big")).ref).toBeNull();
    expect((await call("GET", CM("lim-a", "big"))).body.data).toEqual({ blob: "small" });
    const after = await readEvents(database(env.DB), findKindByKind("", "v1", "ConfigMap") as KindDefinition, "lim-a", 0);
    expect(after.events.map((e) => e.object.data)).toEqual([big.data, { blob: "small" }]);

    // Deleted while large: the DELETED event carries the whole object.
    const regrown = await call("PUT", CM("lim-a", "big"), { ...updated.body, data: big.data });
    expect(regrown.status).toBe(200);
    expect((await call("DELETE", CM("lim-a", "big"))).status).toBe(200);
    const last = (await readEvents(database(env.DB), findKindByKind("", "v1", "ConfigMap") as KindDefinition, "lim-a", 0)).events.at(-1)!;
    expect(last.type).toBe("DELETED");
    expect(last.object.data).toEqual(big.data);
  });

  it("past the largest object the store keeps, is refused with 413 and nothing is written", async () => {
    setD1Limits({ rowBytes: 16 * 1024 + 8 * 1024, objectBytes: 64 * 1024 });
    await createNamespaces("lim-b");
    const chunksBefore = (await env.DB.prepare("SELECT count(*) AS n FROM body_chunks").first<{ n: number }>())!.n;
    const res = await call("POST", CM("lim-b"), configMap("huge", 70_000));
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ kind: "Status", status: "Failure", reason: "RequestEntityTooLarge", code: 413 });
    expect((await call("GET", CM("lim-b", "huge"))).status).toBe(404);
    expect((await env.DB.prepare("SELECT count(*) AS n FROM body_chunks").first<{ n: number }>())!.n).toBe(chunksBefore);

    // An update that would grow an object past it: refused, the object as it was.
    const ok = await call("POST", CM("lim-b"), configMap("grows", 100));
    expect(ok.status).toBe(201);
    const grown = await call("PUT", CM("lim-b", "grows"), { ...ok.body, data: configMap("grows", 70_000).data });
    expect(grown.status).toBe(413);
    expect((await call("GET", CM("lim-b", "grows"))).body).toEqual(ok.body);
  });
});

describe("write batches", () => {
  it("are bounded by bytes as well as items", async () => {
    // 8 works of about 20 KB each (distinct specs) under a 64 KiB budget per batch: each work is
    // its spec's row, its outbox row and its insert (3 statements), 2 works to a batch; the old
    // code sent the 8 in one batch of 24 statements.
    setD1Limits({ batchBytes: 64 * 1024 });
    const counted = countingD1();
    const work = (i: number) => ({
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "w" },
      spec: {
        workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm", namespace: "default" }, data: { v: `${i}`.repeat(20_000) } }] },
      },
    });
    // The commits' draw of the watch log's pruning (src/store/d1/objects.ts `PRUNE_PROBABILITY`)
    // fixed at "no": its 5 statements joined a batch now and then (12 statements seen once in CI).
    const draw = vi.spyOn(Math, "random").mockReturnValue(0.999999);
    const out = await writeStoredMany(
      counted.env,
      ManifestWorkKind,
      Array.from({ length: 8 }, (_, i) => ({ namespace: `lim-w${i}`, name: "w", req: { verb: "create" as const, body: work(i) } })),
    ).finally(() => draw.mockRestore());
    expect(out.every((o) => o !== "lost" && o !== null)).toBe(true);
    const batches = counted.calls.filter((c) => c.startsWith("batch of ")).map((c) => Number(c.slice("batch of ".length)));
    // Four commit batches of 6 statements.
    expect(batches.filter((n) => n >= 6)).toHaveLength(4);
    expect(Math.max(...batches)).toBeLessThanOrEqual(11);
    for (let i = 0; i < 8; i++)
      expect((await call("GET", `/apis/work.open-cluster-management.io/v1/namespaces/lim-w${i}/manifestworks/w`)).body.spec).toEqual(work(i).spec);
  });
});

describe("a KubeFleet placement's status at D1's real row limit", () => {
  it("holds 1,500 clusters' entries (over 2 MB) and reads back whole", async () => {
    expect(D1_LIMITS.rowBytes).toBe(2_000_000);
    const CRP = "/apis/placement.kubernetes-fleet.io/v1/clusterresourceplacements";
    const created = await call("POST", CRP, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "everywhere" },
      spec: { resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "lim-none" }], policy: { placementType: "PickAll" } },
    });
    expect(created.status).toBe(201);
    const condition = (type: string, i: number) => ({
      type,
      status: "True",
      observedGeneration: 1,
      lastTransitionTime: "2026-11-30T12:00:00Z",
      reason: `${type}Succeeded`,
      message: `The resources of the placement were ${type.toLowerCase()} on member cluster member-${i} of the fleet, as its latest resource snapshot and overrides require`,
    });
    const entry = (i: number) => ({
      clusterName: `member-${String(i).padStart(5, "0")}`,
      observedResourceIndex: "0",
      conditions: ["Scheduled", "RolloutStarted", "Overridden", "WorkSynchronized", "Applied", "Available"].map((t) => condition(t, i)),
    });
    const current = (await call("GET", `${CRP}/everywhere`)).body;
    const status = { ...(current.status ?? {}), placementStatuses: Array.from({ length: 1500 }, (_, i) => entry(i)) };
    expect(JSON.stringify(status).length).toBeGreaterThan(2_000_000);
    const written = await call("PUT", `${CRP}/everywhere/status`, { ...current, status });
    expect(written.status).toBe(200);
    expect(written.body.status.placementStatuses).toHaveLength(1500);
    const row = (await env.DB.prepare(
      "SELECT body_ref AS ref, length(body) AS stub FROM objects WHERE name = 'everywhere' AND resource LIKE '%clusterresourceplacements'",
    ).first<{
      ref: string | null;
      stub: number;
    }>())!;
    expect(row.ref).not.toBeNull();
    expect(row.stub).toBeLessThan(100_000);
    // 2.76 MB in pieces of at most a row (less the room for the row's other columns): two.
    const stored = await env.DB.prepare("SELECT count(*) AS n, max(length(CAST(body AS BLOB))) AS largest FROM body_chunks WHERE hash = ?")
      .bind(row.ref)
      .first<{ n: number; largest: number }>();
    expect(stored).toMatchObject({ n: 2 });
    expect(stored!.largest).toBeLessThanOrEqual(D1_LIMITS.rowBytes);
    const read = (await call("GET", `${CRP}/everywhere`)).body;
    if (read.metadata.resourceVersion === written.body.metadata.resourceVersion) expect(read).toEqual(written.body);
    else expect(read.status.placementStatuses.length).toBeGreaterThan(0); // the controller wrote since
    const def = findKindByKind("placement.kubernetes-fleet.io", "v1", "ClusterResourcePlacement") as KindDefinition;
    const events = await readEvents(database(env.DB), def, undefined, Number(current.metadata.resourceVersion));
    const ours = events.events.find((e) => e.object.metadata.resourceVersion === written.body.metadata.resourceVersion)!;
    // The watch event holds the object as stored (the storage version, v1beta1): the same status.
    expect(ours.object.status).toEqual(written.body.status);
  });
});

describe("a label selector of many values", () => {
  it("lists through the label index within D1's 100 bound parameters (it answered 500)", async () => {
    await createNamespaces("lim-in");
    for (const [name, v] of [
      ["a", "v7"],
      ["b", "v149"],
      ["c", "other"],
    ])
      expect((await call("POST", CM("lim-in"), { apiVersion: "v1", kind: "ConfigMap", metadata: { name, labels: { k: v } } })).status).toBe(201);
    const values = Array.from({ length: 150 }, (_, i) => `v${i}`).join(",");
    const res = await call("GET", `${CM("lim-in")}?labelSelector=${encodeURIComponent(`k in (${values})`)}`);
    expect(res.status).toBe(200);
    expect(res.body.items.map((o: { metadata: { name: string } }) => o.metadata.name)).toEqual(["a", "b"]);
    const few = await call("GET", `${CM("lim-in")}?labelSelector=${encodeURIComponent("k in (v7,other)")}`);
    expect(few.body.items.map((o: { metadata: { name: string } }) => o.metadata.name)).toEqual(["a", "c"]);
  });
});
