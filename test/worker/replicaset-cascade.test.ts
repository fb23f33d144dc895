// A ManifestWorkReplicaSet's `cascadeDeletionPolicy` (OCM): Background, the default, lets the
// replica set go as soon as its works' deletion is requested; Foreground keeps it, with its
// deletionTimestamp, until its works are gone. A work is kept here by a finalizer of the test's.
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces, MC, MCSET, merge } from "./helpers.ts";
import { waitFor } from "../wait.ts";

const G = "/apis/cluster.open-cluster-management.io";
const W = "/apis/work.open-cluster-management.io";
const NS = "cascade";
const MWRS = `${W}/v1alpha1/namespaces/${NS}/manifestworkreplicasets`;
const WORK = (name: string) => `${W}/v1/namespaces/k1/manifestworks/${NS}.${name}`;
const HOLD = "test.flotilla.dev/hold";

/** Waits until `check` holds (test/wait.ts, 8 s at most). */
const until = (what: string, check: () => Promise<boolean>) => waitFor(what, check, 8000, 100);

/** Creates a replica set with the policy, waits for its work on k1 and holds that work with a finalizer. */
async function replicaSetWithHeldWork(name: string, cascadeDeletionPolicy?: string) {
  const spec = {
    placementRefs: [{ name: "all" }],
    manifestWorkTemplate: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" } }] } },
    ...(cascadeDeletionPolicy ? { cascadeDeletionPolicy } : {}),
  };
  const created = await call("POST", MWRS, {
    apiVersion: "work.open-cluster-management.io/v1alpha1",
    kind: "ManifestWorkReplicaSet",
    metadata: { name },
    spec,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  await until(`work ${name} created`, async () => (await call("GET", WORK(name))).status === 200);
  expect((await call("PATCH", WORK(name), { metadata: { finalizers: [HOLD] } }, merge)).status).toBe(200);
}

const reconcile = (name: string) => env.REPLICASETS.getByName(`${NS}/${name}`).reconcile(NS, name);

beforeAll(async () => {
  await createNamespaces(NS);
  expect(
    (await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "cascade" } })).status,
  ).toBe(201);
  expect(
    (
      await call("POST", MC, {
        apiVersion: "cluster.open-cluster-management.io/v1",
        kind: "ManagedCluster",
        metadata: { name: "k1", labels: { "cluster.open-cluster-management.io/clusterset": "cascade" } },
        spec: { hubAcceptsClient: true },
      })
    ).status,
  ).toBe(201);
  const available = { type: "ManagedClusterConditionAvailable", status: "True", reason: "Test", message: "test", lastTransitionTime: "2026-01-01T00:00:00Z" };
  expect((await call("PATCH", `${MC}/k1/status`, { status: { conditions: [available] } }, merge)).status).toBe(200);
  expect(
    (
      await call("POST", `${G}/v1beta2/namespaces/${NS}/managedclustersetbindings`, {
        apiVersion: "cluster.open-cluster-management.io/v1beta2",
        kind: "ManagedClusterSetBinding",
        metadata: { name: "cascade" },
        spec: { clusterSet: "cascade" },
      })
    ).status,
  ).toBe(201);
  expect(
    (
      await call("POST", `${G}/v1beta1/namespaces/${NS}/placements`, {
        apiVersion: "cluster.open-cluster-management.io/v1beta1",
        kind: "Placement",
        metadata: { name: "all" },
        spec: {},
      })
    ).status,
  ).toBe(201);
});

describe("ManifestWorkReplicaSet cascadeDeletionPolicy", () => {
  it("Background (the default): the replica set goes while its work is still held", async () => {
    await replicaSetWithHeldWork("bg");
    expect((await call("GET", `${MWRS}/bg`)).body.spec.cascadeDeletionPolicy).toBe("Background");
    expect((await call("DELETE", `${MWRS}/bg`)).status).toBe(200);
    await reconcile("bg");
    await until("replica set bg gone", async () => (await call("GET", `${MWRS}/bg`)).status === 404);
    const work = (await call("GET", WORK("bg"))).body;
    expect(work.metadata.deletionTimestamp).toBeDefined();
    expect((await call("PATCH", WORK("bg"), { metadata: { finalizers: null } }, merge)).status).toBe(200);
  });

  it("Foreground: the replica set stays, being deleted, until its work is gone", async () => {
    await replicaSetWithHeldWork("fg", "Foreground");
    expect((await call("DELETE", `${MWRS}/fg`)).status).toBe(200);
    await reconcile("fg");
    await until("work fg being deleted", async () => (await call("GET", WORK("fg"))).body.metadata?.deletionTimestamp !== undefined);
    await reconcile("fg");
    const held = await call("GET", `${MWRS}/fg`);
    expect(held.status).toBe(200);
    expect(held.body.metadata.deletionTimestamp).toBeDefined();
    expect((await call("PATCH", WORK("fg"), { metadata: { finalizers: null } }, merge)).status).toBe(200);
    await until("replica set fg gone", async () => {
      await reconcile("fg");
      return (await call("GET", `${MWRS}/fg`)).status === 404;
    });
  });
});
