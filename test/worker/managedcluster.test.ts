import { describe, expect, it } from "vitest";
import { call, condition, MC, MCSET } from "./helpers.ts";

const mc = (name: string, spec: Record<string, unknown> = {}, labels?: Record<string, string>) => ({
  apiVersion: "cluster.open-cluster-management.io/v1",
  kind: "ManagedCluster",
  metadata: { name, ...(labels ? { labels } : {}) },
  spec,
});

describe("ManagedCluster API", () => {
  it("creates with OCM defaults, the default set label and the unreachable taint", async () => {
    const r = await call("POST", MC, mc("cluster1"));
    expect(r.status).toBe(201);
    expect(r.body.spec.hubAcceptsClient).toBe(false);
    expect(r.body.spec.leaseDurationSeconds).toBe(60);
    expect(r.body.metadata.labels["cluster.open-cluster-management.io/clusterset"]).toBe("default");
    expect(r.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.body.metadata.generation).toBe(1);
    const taint = r.body.spec.taints.find((t: { key: string }) => t.key === "cluster.open-cluster-management.io/unreachable");
    expect(taint.effect).toBe("NoSelect");
    expect(taint.timeAdded).toMatch(/Z$/);
    const got = await call("GET", `${MC}/cluster1`);
    expect(got.status).toBe(200);
    expect(got.body.metadata.resourceVersion).toBe(r.body.metadata.resourceVersion);
  });

  it("lists with label selectors and field selectors", async () => {
    await call("POST", MC, mc("sel-a", {}, { env: "prod" }));
    await call("POST", MC, mc("sel-b", {}, { env: "dev" }));
    const prod = await call("GET", `${MC}?labelSelector=${encodeURIComponent("env in (prod)")}`);
    expect(prod.body.kind).toBe("ManagedClusterList");
    expect(prod.body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(["sel-a"]);
    const notProd = await call("GET", `${MC}?labelSelector=${encodeURIComponent("env,env!=prod")}`);
    expect(notProd.body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(["sel-b"]);
    const byName = await call("GET", `${MC}?fieldSelector=metadata.name=sel-b`);
    expect(byName.body.items).toHaveLength(1);
    expect(Number(prod.body.metadata.resourceVersion)).toBeGreaterThan(0);
  });

  it("accepts: HubAcceptedManagedCluster=True, generation bump, stale resourceVersion conflicts", async () => {
    const created = await call("POST", MC, mc("acc1"));
    const rv = created.body.metadata.resourceVersion;
    const patched = await call("PATCH", `${MC}/acc1`, { spec: { hubAcceptsClient: true } }, { contentType: "application/merge-patch+json" });
    expect(patched.status).toBe(200);
    expect(patched.body.metadata.generation).toBe(2);
    expect(condition(patched.body, "HubAcceptedManagedCluster")).toMatchObject({ status: "True", reason: "HubClusterAdminAccepted" });
    const stale = await call("PUT", `${MC}/acc1`, { ...created.body, spec: { ...created.body.spec, leaseDurationSeconds: 10 } });
    expect(stale.status).toBe(409);
    expect(stale.body.reason).toBe("Conflict");
    expect(rv).not.toBe(patched.body.metadata.resourceVersion);
    const denied = await call("PATCH", `${MC}/acc1`, { spec: { hubAcceptsClient: false } }, { contentType: "application/merge-patch+json" });
    expect(condition(denied.body, "HubAcceptedManagedCluster")).toMatchObject({ status: "False", reason: "HubClusterAdminDenied" });
  });

  it("status goes only through /status; taints follow Available", async () => {
    const created = await call("POST", MC, mc("st1", { hubAcceptsClient: true }));
    const withStatus = {
      ...created.body,
      status: {
        conditions: [{ type: "ManagedClusterConditionAvailable", status: "True", reason: "Test", message: "ok", lastTransitionTime: "2026-01-01T00:00:00Z" }],
        allocatable: { cpu: "4", memory: "8Gi" },
      },
    };
    const ignored = await call("PUT", `${MC}/st1`, withStatus);
    expect(ignored.status).toBe(200);
    expect(ignored.body.status.allocatable).toBeUndefined();
    const st = await call("PUT", `${MC}/st1/status`, { ...withStatus, metadata: ignored.body.metadata, spec: { hubAcceptsClient: false } });
    expect(st.status).toBe(200);
    expect(st.body.status.allocatable).toEqual({ cpu: "4", memory: "8Gi" });
    expect(st.body.spec.hubAcceptsClient).toBe(true);
    expect(st.body.spec.taints ?? []).toEqual([]);
    const down = await call(
      "PATCH",
      `${MC}/st1/status`,
      {
        status: {
          conditions: [
            { type: "ManagedClusterConditionAvailable", status: "False", reason: "Test", message: "down", lastTransitionTime: "2026-01-01T00:00:00Z" },
          ],
        },
      },
      { contentType: "application/merge-patch+json" },
    );
    expect(down.body.spec.taints.map((t: { key: string }) => t.key)).toEqual(["cluster.open-cluster-management.io/unavailable"]);
  });

  it("stamps timeAdded and keeps it across a round trip; refuses a client-set one", async () => {
    const created = await call("POST", MC, mc("taint1", { taints: [{ key: "gpu", value: "none", effect: "NoSelectIfNew" }] }));
    const t = created.body.spec.taints.find((x: { key: string }) => x.key === "gpu");
    expect(t.timeAdded).toBeTruthy();
    const again = await call("PUT", `${MC}/taint1`, created.body);
    expect(again.status).toBe(200);
    expect(again.body.spec.taints.find((x: { key: string }) => x.key === "gpu").timeAdded).toBe(t.timeAdded);
    const forged = await call("POST", MC, mc("taint2", { taints: [{ key: "a", effect: "NoSelect", timeAdded: "2020-01-01T00:00:00Z" }] }));
    expect(forged.status).toBe(400);
    expect(forged.body.message).toBe('It is not allowed to set TimeAdded of Taint "a"');
    expect(forged.body.details.causes[0].field).toBe("spec.taints[0].timeAdded");
    expect((await call("GET", `${MC}/taint2`)).status).toBe(404);
  });

  it("server-side apply creates then updates, and requires a fieldManager", async () => {
    const yaml =
      "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: ssa1\n  labels:\n    team: a\nspec:\n  hubAcceptsClient: true\n";
    const noManager = await call("PATCH", `${MC}/ssa1`, yaml, { contentType: "application/apply-patch+yaml" });
    expect(noManager.status).toBe(422);
    const created = await call("PATCH", `${MC}/ssa1?fieldManager=kubectl`, yaml, { contentType: "application/apply-patch+yaml" });
    expect(created.status).toBe(201);
    const updated = await call("PATCH", `${MC}/ssa1?fieldManager=kubectl`, yaml.replace("team: a", "team: b"), { contentType: "application/apply-patch+yaml" });
    expect(updated.status).toBe(200);
    expect(updated.body.metadata.labels.team).toBe("b");
  });

  it("deletes, and the built-in sets exist", async () => {
    await call("POST", MC, mc("del1"));
    const del = await call("DELETE", `${MC}/del1`);
    expect(del.status).toBe(200);
    expect((await call("GET", `${MC}/del1`)).status).toBe(404);
    expect((await call("GET", `${MC}?fieldSelector=metadata.name=del1`)).body.items).toHaveLength(0);
    const sets = await call("GET", MCSET);
    expect(sets.body.items.map((s: { metadata: { name: string } }) => s.metadata.name)).toEqual(["default", "global"]);
  });
});
