/**
 * Server-side apply and managedFields over HTTP, as kube-apiserver serves them: Apply and Update
 * entries per field manager, 409 conflicts naming the other manager and the fields, `force`
 * taking them over, fields an applier stops applying removed, default managers from the user agent.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces, PLACEMENTS } from "./helpers.ts";

const CLUSTERS = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
const applyType = { contentType: "application/apply-patch+yaml" };
const placement = (name: string, spec: Record<string, unknown>, labels?: Record<string, string>) => ({
  apiVersion: "cluster.open-cluster-management.io/v1beta1",
  kind: "Placement",
  metadata: { name, ...(labels ? { labels } : {}) },
  spec,
});
type Entry = {
  manager: string;
  operation: string;
  apiVersion: string;
  time?: string;
  fieldsType: string;
  fieldsV1: Record<string, unknown>;
  subresource?: string;
};
const entries = (o: { metadata: { managedFields?: Entry[] } }) => o.metadata.managedFields ?? [];
const find = (o: { metadata: { managedFields?: Entry[] } }, manager: string) => entries(o).find((e) => e.manager === manager);

describe("server-side apply", () => {
  beforeAll(() => createNamespaces("ssa"));

  it("records each applier's fields, conflicts between two appliers with kube-apiserver's 409, and force takes ownership", async () => {
    const a = await call("PATCH", `${PLACEMENTS("ssa")}/p1?fieldManager=team-a`, placement("p1", { numberOfClusters: 1 }, { owner: "a" }), applyType);
    expect(a.status).toBe(201);
    expect(entries(a.body)).toEqual([
      {
        manager: "team-a",
        operation: "Apply",
        apiVersion: "cluster.open-cluster-management.io/v1beta1",
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        fieldsType: "FieldsV1",
        fieldsV1: { "f:metadata": { "f:labels": { "f:owner": {} } }, "f:spec": { "f:numberOfClusters": {} } },
      },
    ]);
    const got = await call("GET", `${PLACEMENTS("ssa")}/p1`);
    expect(entries(got.body)).toEqual(entries(a.body));

    const b = await call("PATCH", `${PLACEMENTS("ssa")}/p1?fieldManager=team-b`, placement("p1", { numberOfClusters: 3 }, { owner: "b" }), applyType);
    expect(b.status).toBe(409);
    expect(b.body).toMatchObject({
      kind: "Status",
      status: "Failure",
      reason: "Conflict",
      code: 409,
      message: 'Apply failed with 2 conflicts: conflicts with "team-a":\n- .metadata.labels.owner\n- .spec.numberOfClusters',
      details: {
        causes: [
          { reason: "FieldManagerConflict", message: 'conflict with "team-a"', field: ".metadata.labels.owner" },
          { reason: "FieldManagerConflict", message: 'conflict with "team-a"', field: ".spec.numberOfClusters" },
        ],
      },
    });
    const unchanged = await call("GET", `${PLACEMENTS("ssa")}/p1`);
    expect(unchanged.body.metadata.resourceVersion).toBe(got.body.metadata.resourceVersion);

    const forced = await call("PATCH", `${PLACEMENTS("ssa")}/p1?fieldManager=team-b&force=true`, placement("p1", { numberOfClusters: 3 }), applyType);
    expect(forced.status).toBe(200);
    expect(forced.body.spec.numberOfClusters).toBe(3);
    expect(find(forced.body, "team-a")?.fieldsV1).toEqual({ "f:metadata": { "f:labels": { "f:owner": {} } } });
    expect(find(forced.body, "team-b")?.fieldsV1).toEqual({ "f:spec": { "f:numberOfClusters": {} } });

    // team-a stops applying its label: it goes, as nobody else owns it.
    const dropped = await call("PATCH", `${PLACEMENTS("ssa")}/p1?fieldManager=team-a`, placement("p1", {}), applyType);
    expect(dropped.status).toBe(200);
    expect(dropped.body.metadata.labels).toBeUndefined();
    expect(find(dropped.body, "team-a")).toBeUndefined();
    expect(dropped.body.spec.numberOfClusters).toBe(3);
  });

  it("records create, update and patch as Update entries, by fieldManager or the user agent", async () => {
    const created = await call("POST", PLACEMENTS("ssa"), placement("p2", { numberOfClusters: 1 }), {
      headers: { "user-agent": "kubectl/v1.31.0 (linux/amd64) kubernetes/abc" },
    });
    expect(created.status).toBe(201);
    expect(find(created.body, "kubectl")).toMatchObject({ operation: "Update", fieldsV1: { "f:spec": { ".": {}, "f:numberOfClusters": {} } } });
    const patched = await call(
      "PATCH",
      `${PLACEMENTS("ssa")}/p2?fieldManager=scaler`,
      { spec: { numberOfClusters: 2 } },
      { contentType: "application/merge-patch+json" },
    );
    expect(patched.status).toBe(200);
    expect(find(patched.body, "scaler")).toMatchObject({ operation: "Update", fieldsV1: { "f:spec": { "f:numberOfClusters": {} } } });
    // kubectl kept `.spec` (it created it), the scaler took the field it changed.
    expect(find(patched.body, "kubectl")?.fieldsV1).toEqual({ "f:spec": {} });
    const applied = await call("PATCH", `${PLACEMENTS("ssa")}/p2?fieldManager=gitops`, placement("p2", { numberOfClusters: 4 }), applyType);
    expect(applied.status).toBe(409);
    expect(applied.body.message).toBe(
      'Apply failed with 1 conflict: conflict with "scaler" using cluster.open-cluster-management.io/v1beta1: .spec.numberOfClusters',
    );
  });

  it("keeps managedFields through writes of the hub's own controllers and the status subresource", async () => {
    const a = await call(
      "PATCH",
      `${CLUSTERS}/ssa-c1?fieldManager=fleet`,
      {
        apiVersion: "cluster.open-cluster-management.io/v1",
        kind: "ManagedCluster",
        metadata: { name: "ssa-c1", labels: { env: "dev" } },
        spec: { hubAcceptsClient: true },
      },
      applyType,
    );
    expect(a.status).toBe(201);
    expect(find(a.body, "fleet")?.fieldsV1).toEqual({ "f:metadata": { "f:labels": { "f:env": {} } }, "f:spec": { "f:hubAcceptsClient": {} } });
    const other = await call(
      "PATCH",
      `${CLUSTERS}/ssa-c1?fieldManager=other`,
      { apiVersion: "cluster.open-cluster-management.io/v1", kind: "ManagedCluster", metadata: { name: "ssa-c1", labels: { env: "prod" } } },
      applyType,
    );
    expect(other.status).toBe(409);
    expect(other.body.details.causes).toEqual([{ reason: "FieldManagerConflict", message: 'conflict with "fleet"', field: ".metadata.labels.env" }]);
    const got = await call("GET", `${CLUSTERS}/ssa-c1`);
    expect(find(got.body, "fleet")).toBeDefined();
  });

  it("merges a status list by the schema's list-map keys, owned per condition under the status subresource", async () => {
    expect((await call("POST", PLACEMENTS("ssa"), placement("p4", {}))).status).toBe(201);
    const cond = (type: string, status: string) => ({ type, status, reason: "Test", message: "", lastTransitionTime: "2026-11-26T10:00:00Z" });
    const body = (c: unknown) => ({
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "p4" },
      status: { conditions: [c] },
    });
    const a = await call("PATCH", `${PLACEMENTS("ssa")}/p4/status?fieldManager=ctl-a`, body(cond("A", "True")), applyType);
    expect(a.status).toBe(200);
    const b = await call("PATCH", `${PLACEMENTS("ssa")}/p4/status?fieldManager=ctl-b`, body(cond("B", "False")), applyType);
    expect(b.status).toBe(200);
    expect(b.body.status.conditions.map((c: { type: string }) => c.type)).toEqual(expect.arrayContaining(["A", "B"]));
    expect(find(b.body, "ctl-b")).toMatchObject({
      operation: "Apply",
      subresource: "status",
      fieldsV1: {
        "f:status": {
          "f:conditions": { 'k:{"type":"B"}': { ".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {} } },
        },
      },
    });
    const clash = await call("PATCH", `${PLACEMENTS("ssa")}/p4/status?fieldManager=ctl-b`, body(cond("A", "False")), applyType);
    expect(clash.status).toBe(409);
    expect(clash.body.message).toBe('Apply failed with 1 conflict: conflict with "ctl-a" with subresource "status": .status.conditions[type="A"].status');
  });

  it("refuses a fieldManager kube-apiserver refuses, and an apply without one", async () => {
    const long = await call("PATCH", `${PLACEMENTS("ssa")}/p3?fieldManager=${"x".repeat(129)}`, placement("p3", {}), applyType);
    expect(long.status).toBe(422);
    expect(long.body.details.causes[0]).toMatchObject({ field: "fieldManager", reason: "FieldValueTooLong" });
    const none = await call("PATCH", `${PLACEMENTS("ssa")}/p3`, placement("p3", {}), applyType);
    expect(none.status).toBe(422);
    const post = await call("POST", `${PLACEMENTS("ssa")}?fieldManager=${encodeURIComponent("a\u0001b")}`, placement("p3", {}));
    expect(post.status).toBe(422);
    expect(post.body.message).toMatch(/^CreateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value/);
  });
});
