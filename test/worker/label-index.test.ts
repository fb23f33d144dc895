/**
 * labelSelector lists answered from the label index: the rows read are those the selector names,
 * whatever the size of the kind, and the index follows every write of labels.
 */
import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { database, listPage } from "../../src/store/d1/objects.ts";
import { ManagedClusterKind } from "../../src/kinds/managedcluster.ts";
import { PlacementKind } from "../../src/kinds/placement.ts";
import { call, createNamespaces, MC, merge } from "./helpers.ts";

const PL = "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/idx/placements";
const names = (body: { items: { metadata: { name: string } }[] }) => body.items.map((o) => o.metadata.name);
const indexed = async (name: string) =>
  (
    await env.DB.prepare(
      "SELECT key, value FROM labels WHERE resource = 'cluster.open-cluster-management.io/placements' AND namespace = 'idx' AND name = ? ORDER BY key",
    )
      .bind(name)
      .all()
  ).results;

beforeAll(async () => {
  await createNamespaces("idx");
  // 200 Placements, 10 of them labelled tier=gold (every 20th), all labelled n=<i % 3>.
  for (let i = 0; i < 200; i += 20) {
    await Promise.all(
      Array.from({ length: 20 }, (_, j) => i + j).map(async (n) => {
        const labels: Record<string, string> = { n: String(n % 3) };
        if (n % 20 === 0) labels.tier = "gold";
        const r = await call("POST", PL, {
          apiVersion: "cluster.open-cluster-management.io/v1beta1",
          kind: "Placement",
          metadata: { name: `p${String(n).padStart(3, "0")}`, labels },
        });
        expect(r.status).toBe(201);
      }),
    );
  }
});

describe("the label index", () => {
  it("reads only the rows the selector names", async () => {
    const db = database(env.DB);
    const page = await listPage(db, PlacementKind, "idx", { index: { key: "tier", values: ["gold"] }, filter: (o) => o.metadata.labels?.tier === "gold" });
    expect(page.items).toHaveLength(10);
    expect(page.rowsRead).toBe(10);
    const exists = await listPage(db, PlacementKind, "idx", { index: { key: "tier" } });
    expect(exists.rowsRead).toBe(10);
    const scan = await listPage(db, PlacementKind, "idx", { filter: (o) => o.metadata.labels?.tier === "gold" });
    expect(scan.rowsRead).toBe(200);
  });

  it("answers =, in, exists and mixed selectors as the full filter does, in key order, with continue", async () => {
    for (const [selector, expected] of [
      ["tier=gold", ["p000", "p020", "p040", "p060", "p080", "p100", "p120", "p140", "p160", "p180"]],
      ["tier in (gold,silver),n=0", ["p000", "p060", "p120", "p180"]],
      ["tier,n!=0", ["p020", "p040", "p080", "p100", "p140", "p160"]],
      ["tier=gold,n notin (1,2)", ["p000", "p060", "p120", "p180"]],
      ["!tier,n=0,tier!=x", undefined],
    ] as const) {
      const all = await call("GET", `${PL}?labelSelector=${encodeURIComponent(selector)}`);
      expect(all.status).toBe(200);
      if (expected) expect(names(all.body)).toEqual(expected);
      else expect(all.body.items).toHaveLength(63); // n=0: 67 objects (0, 3, ..., 198), 4 of them with tier
      // The same through pages of 3.
      const paged: string[] = [];
      let token: string | undefined;
      do {
        const r = await call("GET", `${PL}?labelSelector=${encodeURIComponent(selector)}&limit=3${token ? `&continue=${encodeURIComponent(token)}` : ""}`);
        paged.push(...names(r.body));
        token = r.body.metadata.continue;
      } while (token);
      expect(paged).toEqual(names(all.body));
    }
  });

  it("follows label changes, removals and deletes; a stale write leaves the index alone", async () => {
    const created = await call("POST", PL, {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "moving", labels: { a: "1", b: "2" } },
    });
    expect(await indexed("moving")).toEqual([
      { key: "a", value: "1" },
      { key: "b", value: "2" },
    ]);
    await call("PATCH", `${PL}/moving`, { metadata: { labels: { a: "9", b: null, c: "3" } } }, merge);
    expect(await indexed("moving")).toEqual([
      { key: "a", value: "9" },
      { key: "c", value: "3" },
    ]);
    expect(names((await call("GET", `${PL}?labelSelector=a%3D9`)).body)).toEqual(["moving"]);
    expect(names((await call("GET", `${PL}?labelSelector=b`)).body)).toEqual([]);
    // A write with a stale resourceVersion is refused, and the index keeps the stored labels.
    const stale = await call("PATCH", `${PL}/moving`, { metadata: { resourceVersion: created.body.metadata.resourceVersion, labels: { a: "stale" } } }, merge);
    expect(stale.status).toBe(409);
    expect(await indexed("moving")).toEqual([
      { key: "a", value: "9" },
      { key: "c", value: "3" },
    ]);
    // Status writes and spec writes that keep the labels add no statement (the rows stay as they are).
    await call("PATCH", `${PL}/moving`, { spec: { numberOfClusters: 2 } }, merge);
    expect(await indexed("moving")).toEqual([
      { key: "a", value: "9" },
      { key: "c", value: "3" },
    ]);
    await call("PATCH", `${PL}/moving`, { metadata: { labels: null } }, merge);
    expect(await indexed("moving")).toEqual([]);
    await call("PATCH", `${PL}/moving`, { metadata: { labels: { d: "4" } } }, merge);
    await call("DELETE", `${PL}/moving`);
    expect(await indexed("moving")).toEqual([]);
  });

  it("indexes ManagedClusters written through their Durable Objects", async () => {
    await call("POST", MC, {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "idx-mc", labels: { region: "eu" } },
    });
    await call("PATCH", `${MC}/idx-mc`, { metadata: { labels: { region: "us" } } }, merge);
    const page = await listPage(database(env.DB), ManagedClusterKind, "", { index: { key: "region", values: ["us"] } });
    expect(page.items.map((o) => o.metadata.name)).toEqual(["idx-mc"]);
    expect(names((await call("GET", `${MC}?labelSelector=region%3Deu`)).body)).toEqual([]);
  });
});

describe("the label index on a hub upgraded from before it", () => {
  it("carries the labels written before the migration, so selector lists answer as before", async () => {
    const before = names((await call("GET", `${PL}?labelSelector=tier%3Dgold`)).body);
    const rows = async () =>
      (await env.DB.prepare("SELECT resource, namespace, name, key, value FROM labels ORDER BY resource, namespace, name, key").all()).results;
    const fresh = await rows();
    await env.DB.prepare("DROP TABLE labels").run();
    await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind("0004_labels.sql").run();
    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect(await rows()).toEqual(fresh);
    expect(names((await call("GET", `${PL}?labelSelector=tier%3Dgold`)).body)).toEqual(before);
  });
});
