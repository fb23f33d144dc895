/**
 * Garbage collection by ownerReferences, as kube-controller-manager's collector does it:
 * Background, Foreground and Orphan propagation, dangling and partial references, across kinds.
 */
import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces, MC, MCSET, merge } from "./helpers.ts";

const PL = (ns: string) => `/apis/cluster.open-cluster-management.io/v1beta1/namespaces/${ns}/placements`;

interface Ref {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  blockOwnerDeletion?: boolean;
}

async function placement(ns: string, name: string, ownerReferences?: Ref[], finalizers?: string[]) {
  const res = await call("POST", PL(ns), {
    apiVersion: "cluster.open-cluster-management.io/v1beta1",
    kind: "Placement",
    metadata: { name, ownerReferences, finalizers },
  });
  expect(res.status).toBe(201);
  return res.body;
}

const refTo = (owner: { apiVersion: string; kind: string; metadata: { name: string; uid: string } }, block = false): Ref => ({
  apiVersion: owner.apiVersion,
  kind: owner.kind,
  name: owner.metadata.name,
  uid: owner.metadata.uid,
  ...(block ? { blockOwnerDeletion: true } : {}),
});

beforeAll(() => createNamespaces("gc1", "gc2", "gc3", "gc4", "gc5", "gcu"));

describe("garbage collection by ownerReferences", () => {
  it("Background (the default): deleting the owner deletes its dependents", async () => {
    const owner = await placement("gc1", "owner");
    await placement("gc1", "dep1", [refTo(owner)]);
    await placement("gc1", "dep2", [refTo(owner)]);
    await placement("gc1", "other");
    expect((await call("DELETE", `${PL("gc1")}/owner`)).status).toBe(200);
    const left = (await call("GET", PL("gc1"))).body.items.map((o: { metadata: { name: string } }) => o.metadata.name);
    expect(left).toEqual(["other"]);
  });

  it("deletes an object whose owners do not exist, and drops only the absent reference when another owner exists", async () => {
    await placement("gc2", "dangling", [
      { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", name: "ghost", uid: "00000000-0000-0000-0000-000000000000" },
    ]);
    expect((await call("GET", `${PL("gc2")}/dangling`)).status).toBe(404);
    const a = await placement("gc2", "a");
    const b = await placement("gc2", "b");
    await placement("gc2", "shared", [refTo(a), refTo(b)]);
    await call("DELETE", `${PL("gc2")}/a`);
    const shared = await call("GET", `${PL("gc2")}/shared`);
    expect(shared.status).toBe(200);
    expect(shared.body.metadata.ownerReferences).toEqual([refTo(b)]);
    // A reference with the right name but another UID is to an absent owner.
    await placement("gc2", "stale-uid", [{ ...refTo(b), uid: "11111111-1111-1111-1111-111111111111" }]);
    expect((await call("GET", `${PL("gc2")}/stale-uid`)).status).toBe(404);
  });

  it("Orphan: the owner goes, its dependents stay without the reference", async () => {
    const owner = await placement("gc3", "owner");
    await placement("gc3", "dep", [refTo(owner)]);
    const del = await call("DELETE", `${PL("gc3")}/owner`, { propagationPolicy: "Orphan" });
    expect(del.status).toBe(200);
    expect((await call("GET", `${PL("gc3")}/owner`)).status).toBe(404);
    const dep = await call("GET", `${PL("gc3")}/dep`);
    expect(dep.status).toBe(200);
    expect(dep.body.metadata.ownerReferences).toBeUndefined();
  });

  it("Foreground: the owner waits, with foregroundDeletion, until its blocking dependents are gone", async () => {
    const owner = await placement("gc4", "owner");
    await placement("gc4", "blocker", [refTo(owner, true)], ["example.com/hold"]);
    await placement("gc4", "free", [refTo(owner)]);
    const del = await call("DELETE", `${PL("gc4")}/owner?propagationPolicy=Foreground`);
    expect(del.status).toBe(200);
    const waiting = await call("GET", `${PL("gc4")}/owner`);
    expect(waiting.body.metadata.finalizers).toEqual(["foregroundDeletion"]);
    expect(waiting.body.metadata.deletionTimestamp).toBeDefined();
    expect((await call("GET", `${PL("gc4")}/free`)).status).toBe(404);
    const blocker = await call("GET", `${PL("gc4")}/blocker`);
    expect(blocker.body.metadata.deletionTimestamp).toBeDefined();
    // The blocker's own finalizer ends: it goes, and the owner with it.
    expect((await call("PATCH", `${PL("gc4")}/blocker`, { metadata: { finalizers: null } }, merge)).status).toBe(200);
    expect((await call("GET", `${PL("gc4")}/blocker`)).status).toBe(404);
    expect((await call("GET", `${PL("gc4")}/owner`)).status).toBe(404);
  });

  it("works across kinds and scopes: a ManagedCluster owns a set, a set owns a ManagedCluster", async () => {
    const mc = (await call("POST", MC, { apiVersion: "cluster.open-cluster-management.io/v1", kind: "ManagedCluster", metadata: { name: "gc-owner" } })).body;
    const set = await call("POST", MCSET, {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSet",
      metadata: { name: "gc-owned", ownerReferences: [refTo(mc)] },
    });
    expect(set.status).toBe(201);
    await call("DELETE", `${MC}/gc-owner`);
    expect((await call("GET", `${MCSET}/gc-owned`)).status).toBe(404);

    const ownerSet = (
      await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "gc-set" } })
    ).body;
    expect(
      (
        await call("POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "gc-dep", ownerReferences: [refTo(ownerSet)] },
        })
      ).status,
    ).toBe(201);
    await call("DELETE", `${MCSET}/gc-set`);
    expect((await call("GET", `${MC}/gc-dep`)).status).toBe(404);
  });

  it("refuses an unknown propagationPolicy and one set with orphanDependents (422)", async () => {
    await placement("gc5", "x");
    for (const body of [{ propagationPolicy: "Sideways" }, { propagationPolicy: "Orphan", orphanDependents: true }]) {
      const res = await call("DELETE", `${PL("gc5")}/x`, body);
      expect(res.status).toBe(422);
      expect(res.body.details.kind).toBe("DeleteOptions");
    }
    expect((await call("GET", `${PL("gc5")}/x`)).status).toBe(200);
    // orphanDependents: true is Orphan.
    const owner = await placement("gc5", "o");
    await placement("gc5", "d", [refTo(owner)]);
    await call("DELETE", `${PL("gc5")}/o`, { orphanDependents: true });
    expect((await call("GET", `${PL("gc5")}/d`)).body.metadata.ownerReferences).toBeUndefined();
  });
});

describe("the owner index on a hub upgraded from before it", () => {
  it("carries the references written before the migration, so their owners' deletes still collect them", async () => {
    const owner = await placement("gcu", "owner");
    await placement("gcu", "dep", [refTo(owner)]);
    const indexed = async () =>
      (await env.DB.prepare("SELECT owner_uid, resource, namespace, name FROM owner_references WHERE namespace = 'gcu' AND resource LIKE '%/placements'").all())
        .results;
    const fresh = await indexed();
    expect(fresh).toEqual([{ owner_uid: owner.metadata.uid, resource: "cluster.open-cluster-management.io/placements", namespace: "gcu", name: "dep" }]);
    // The previous release's schema: no owner index.
    await env.DB.prepare("DROP TABLE owner_references").run();
    await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind("0005_owner_references.sql").run();
    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect(await indexed()).toEqual(fresh);
    await call("DELETE", `${PL("gcu")}/owner`);
    expect((await call("GET", `${PL("gcu")}/dep`)).status).toBe(404);
  });
});
