/**
 * The field manager (src/k8s/fieldmanager.ts) against kube-apiserver's server-side apply
 * semantics: ownership per manager, conflicts, forced takeover, pruning of what an applier stops
 * applying, list merges by list type, the FieldsV1 format.
 */
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/k8s/errors.ts";
import {
  fieldNameType,
  fromFieldsV1,
  managerFromUserAgent,
  recordUpdate,
  schemaType,
  serverSideApply,
  toFieldsV1,
  type FieldManagerContext,
  type ManagedFieldsEntry,
  type ManagedObject,
} from "../../src/k8s/fieldmanager.ts";

const schema = schemaType({
  type: "object",
  properties: {
    spec: {
      type: "object",
      properties: {
        replicas: { type: "integer" },
        tags: { type: "array", items: { type: "string" }, "x-kubernetes-list-type": "set" },
        args: { type: "array", items: { type: "string" } },
        ports: { type: "array", items: { type: "object" }, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"] },
        selector: { type: "object", additionalProperties: { type: "string" }, "x-kubernetes-map-type": "atomic" },
      },
    },
    status: {
      type: "object",
      properties: { conditions: { type: "array", items: { type: "object" }, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] } },
    },
  },
});
const ctx = (now = "2026-11-26T15:00:00Z"): FieldManagerContext => ({ type: schema, statusSubresource: true, now });
interface Obj extends ManagedObject {
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; managedFields?: ManagedFieldsEntry[] };
  spec?: Record<string, unknown>;
}
const obj = (spec: Record<string, unknown>, labels?: Record<string, string>): Obj => ({
  apiVersion: "x.io/v1",
  kind: "Thing",
  metadata: { name: "a", ...(labels ? { labels } : {}) },
  spec,
});
const apply = (current: Obj | undefined, applied: Obj, manager: string, force = false, now?: string) =>
  serverSideApply({ current, applied, manager, force, scope: "main" }, ctx(now));
const entry = (o: Obj, manager: string) => o.metadata.managedFields?.find((m) => m.manager === manager);

describe("server-side apply", () => {
  it("records the applier's configuration as its Apply entry, in FieldsV1", () => {
    const o = apply(undefined, obj({ replicas: 1, ports: [{ port: 80, protocol: "TCP", name: "http" }] }, { app: "x" }), "a");
    expect(o.metadata.managedFields).toEqual([
      {
        manager: "a",
        operation: "Apply",
        apiVersion: "x.io/v1",
        time: "2026-11-26T15:00:00Z",
        fieldsType: "FieldsV1",
        fieldsV1: {
          "f:metadata": { "f:labels": { "f:app": {} } },
          "f:spec": { "f:ports": { 'k:{"port":80,"protocol":"TCP"}': { ".": {}, "f:name": {}, "f:port": {}, "f:protocol": {} } }, "f:replicas": {} },
        },
      },
    ]);
  });

  it("conflicts with another manager over a field it would change, as kube-apiserver words it", () => {
    const first = apply(undefined, obj({ replicas: 1 }), "a");
    let err: unknown;
    try {
      apply(first, obj({ replicas: 2 }), "b");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApiError);
    const status = (err as ApiError).toStatus();
    expect(status.code).toBe(409);
    expect(status.reason).toBe("Conflict");
    expect(status.message).toBe('Apply failed with 1 conflict: conflict with "a": .spec.replicas');
    expect(status.details?.causes).toEqual([{ reason: "FieldManagerConflict", message: 'conflict with "a"', field: ".spec.replicas" }]);
  });

  it("lists several conflicts by manager, and names Update managers with their apiVersion", () => {
    let o = apply(undefined, obj({ replicas: 1 }, { app: "x" }), "a");
    const edited = structuredClone(o);
    edited.spec = { replicas: 1, args: ["x"] };
    recordUpdate(o, edited, o.metadata.managedFields, "kubectl-edit", "main", ctx());
    o = edited;
    expect(() => apply(o, obj({ replicas: 3, args: ["y"] }, { app: "y" }), "b")).toThrowError(
      'Apply failed with 3 conflicts: conflicts with "a":\n- .metadata.labels.app\n- .spec.replicas\nconflicts with "kubectl-edit" using x.io/v1:\n- .spec.args',
    );
  });

  it("shares a field applied with the same value, without conflict", () => {
    const o = apply(apply(undefined, obj({ replicas: 1 }), "a"), obj({ replicas: 1 }), "b");
    expect(fromFieldsV1(entry(o, "a")?.fieldsV1)).toEqual(new Set(["f:spec\u0000f:replicas"]));
    expect(fromFieldsV1(entry(o, "b")?.fieldsV1)).toEqual(new Set(["f:spec\u0000f:replicas"]));
  });

  it("takes a field over with force, and the other manager loses it", () => {
    const o = apply(apply(undefined, obj({ replicas: 1, args: ["a"] }), "a"), obj({ replicas: 5 }), "b", true);
    expect(o.spec).toEqual({ replicas: 5, args: ["a"] });
    expect(entry(o, "a")?.fieldsV1).toEqual({ "f:spec": { "f:args": {} } });
    expect(entry(o, "b")?.fieldsV1).toEqual({ "f:spec": { "f:replicas": {} } });
  });

  it("removes what the applier no longer applies unless another manager owns it", () => {
    let o = apply(undefined, obj({ replicas: 1, args: ["a"] }, { app: "x", tier: "web" }), "a");
    o = apply(o, obj({ args: ["a"] }, { tier: "web" }), "b");
    o = apply(o, obj({}, {}), "a");
    expect(o.spec).toEqual({ args: ["a"] });
    expect(o.metadata.labels).toEqual({ tier: "web" });
    expect(entry(o, "a")).toBeUndefined();
  });

  it("merges set and map lists item by item, and replaces atomic lists and maps", () => {
    let o = apply(undefined, obj({ tags: ["a"], args: ["1"], ports: [{ port: 80, protocol: "TCP" }], selector: { x: "1" } }), "a");
    o = apply(o, obj({ tags: ["b"], ports: [{ port: 443, protocol: "TCP" }] }), "b");
    expect(o.spec).toEqual({
      tags: ["a", "b"],
      args: ["1"],
      ports: [
        { port: 80, protocol: "TCP" },
        { port: 443, protocol: "TCP" },
      ],
      selector: { x: "1" },
    });
    expect(() => apply(o, obj({ selector: { y: "2" } }), "b")).toThrowError(/conflict with "a": .spec.selector/);
    expect(() => apply(o, obj({ args: ["2"] }), "b")).toThrowError(/\.spec\.args$/);
    expect(entry(o, "b")?.fieldsV1).toEqual({
      "f:spec": { "f:ports": { 'k:{"port":443,"protocol":"TCP"}': { ".": {}, "f:port": {}, "f:protocol": {} } }, "f:tags": { 'v:"b"': {} } },
    });
  });

  it("keeps the time of an apply that changes nothing", () => {
    const first = apply(undefined, obj({ replicas: 1 }), "a", false, "2026-11-26T15:00:00Z");
    const again = apply(first, obj({ replicas: 1 }), "a", false, "2026-11-26T16:00:00Z");
    expect(again.metadata.managedFields).toEqual(first.metadata.managedFields);
  });
});

describe("updates", () => {
  it("give the writer what it added or changed, with '.' on maps it created, and take it from others", () => {
    const before = apply(undefined, obj({ replicas: 1 }), "a");
    const after = structuredClone(before);
    after.spec = { replicas: 2, selector: { k: "v" } };
    after.metadata.labels = { app: "x" };
    recordUpdate(before, after, before.metadata.managedFields, "kubectl", "main", ctx("2026-11-26T15:01:00Z"));
    expect(after.metadata.managedFields).toEqual([
      {
        manager: "kubectl",
        operation: "Update",
        apiVersion: "x.io/v1",
        time: "2026-11-26T15:01:00Z",
        fieldsType: "FieldsV1",
        fieldsV1: { "f:metadata": { "f:labels": { ".": {}, "f:app": {} } }, "f:spec": { "f:replicas": {}, "f:selector": {} } },
      },
    ]);
  });

  it("keep managedFields untouched when nothing tracked changes", () => {
    const before = apply(undefined, obj({ replicas: 1 }), "a");
    const after = structuredClone(before);
    recordUpdate(before, after, before.metadata.managedFields, "kubectl", "main", ctx("2026-11-26T16:00:00Z"));
    expect(after.metadata.managedFields).toEqual(before.metadata.managedFields);
  });

  it("record status writes under the status subresource only", () => {
    const before: Obj = { ...obj({ replicas: 1 }), status: {} };
    const after = structuredClone(before);
    (after as Record<string, unknown>).status = { conditions: [{ type: "Ready", status: "True" }] };
    recordUpdate(before, after, undefined, "agent", "status", ctx());
    expect(after.metadata.managedFields?.[0]).toMatchObject({
      manager: "agent",
      operation: "Update",
      subresource: "status",
      fieldsV1: { "f:status": { "f:conditions": { ".": {}, 'k:{"type":"Ready"}': { ".": {}, "f:status": {}, "f:type": {} } } } },
    });
  });

  it("a create records what the general update path records against nothing (its one-walk path)", () => {
    const created = (o: Record<string, unknown>, scope: "main" | "status", c: FieldManagerContext, base?: unknown) => {
      const fast = structuredClone(o) as ManagedObject;
      recordUpdate(undefined, fast, base, "kubectl-create", scope, c);
      // The same object updated from one with nothing tracked: the general path's diff and encoding.
      const general = structuredClone(o) as ManagedObject;
      recordUpdate({ apiVersion: String(o.apiVersion), metadata: {} }, general, [], "kubectl-create", scope, c);
      expect(JSON.stringify(fast.metadata.managedFields)).toBe(JSON.stringify(general.metadata.managedFields));
      return fast.metadata.managedFields as ManagedFieldsEntry[] | undefined;
    };
    const meta = {
      name: "n",
      namespace: "ns",
      uid: "u",
      labels: { b: "2", a: "1" },
      annotations: {},
      finalizers: ["x/y", "x/y", "a/b"],
      ownerReferences: [{ uid: "2", kind: "K" }, { uid: "1", kind: "K" }, { kind: "no uid" }],
    };
    const cases: Record<string, unknown>[] = [
      { apiVersion: "x.io/v1", kind: "T", metadata: meta, spec: { replicas: 3, tags: ["b", "a", "b"], args: ["x"], selector: { k: "v" } } },
      {
        apiVersion: "x.io/v1",
        kind: "T",
        metadata: { name: "n" },
        spec: {
          ports: [{ port: 80, protocol: "TCP", name: "p" }, { port: 80, protocol: "TCP" }, { protocol: "UDP", port: 53 }, "odd"],
          tags: [{ o: 1 }, 2, null],
        },
        status: { conditions: [{ type: "Ready", status: "True" }] },
        extra: { empty: {}, list: [], nothing: null, deep: { z: 1, a: { "b.c": true } } },
      },
      { apiVersion: "x.io/v1", kind: "T", metadata: { name: "n", labels: {} }, spec: {} },
      { apiVersion: "x.io/v1", kind: "T", metadata: { name: "n" } },
      { apiVersion: "x.io/v1", kind: "T", metadata: { name: "n" }, spec: { "a\u0000b": 1, b: 2 } },
    ];
    for (const o of cases)
      for (const scope of ["main", "status"] as const)
        for (const c of [ctx(), { ...ctx(), statusSubresource: false }, { ...ctx(), type: fieldNameType({ ports: ["port"] }) }, ctx("")]) created(o, scope, c);
    expect(created(cases[0]!, "main", ctx())).toEqual([
      {
        manager: "kubectl-create",
        operation: "Update",
        apiVersion: "x.io/v1",
        time: "2026-11-26T15:00:00Z",
        fieldsType: "FieldsV1",
        fieldsV1: {
          "f:metadata": {
            "f:annotations": {},
            "f:finalizers": { ".": {}, 'v:"a/b"': {}, 'v:"x/y"': {} },
            "f:labels": { ".": {}, "f:a": {}, "f:b": {} },
            "f:ownerReferences": {
              ".": {},
              'k:{"uid":"1"}': { ".": {}, "f:kind": {}, "f:uid": {} },
              'k:{"uid":"2"}': { ".": {}, "f:kind": {}, "f:uid": {} },
              "k:{}": { ".": {}, "f:kind": {} },
            },
          },
          "f:spec": { ".": {}, "f:args": {}, "f:replicas": {}, "f:selector": {}, "f:tags": { ".": {}, 'v:"a"': {}, 'v:"b"': {} } },
        },
      },
    ]);
    // Nothing tracked: no entry; managedFields the client sent are recorded as the general path does.
    expect(created(cases[3]!, "main", ctx())).toBeUndefined();
  });

  it("cap Update managers at ten, folding the oldest into ancient-changes", () => {
    let o = obj({});
    for (let i = 0; i < 12; i++) {
      const next = structuredClone(o);
      next.spec = { ...(next.spec ?? {}), [`f${i}`]: i };
      recordUpdate(o, next, o.metadata.managedFields, `m${i}`, "main", ctx(`2026-11-26T15:00:${String(i).padStart(2, "0")}Z`));
      o = next;
    }
    const names = (o.metadata.managedFields ?? []).map((m) => m.manager);
    expect(names).toHaveLength(10);
    expect(names).toContain("ancient-changes");
    expect(names).not.toContain("m0");
  });
});

describe("helpers", () => {
  it("derive the default manager from the user agent as kube-apiserver does", () => {
    expect(managerFromUserAgent("kubectl/v1.31.0 (linux/amd64) kubernetes/abc")).toBe("kubectl");
    expect(managerFromUserAgent("node-fetch")).toBe("node-fetch");
    expect(managerFromUserAgent("a\u0007b/1")).toBe("ab");
    expect(managerFromUserAgent("x".repeat(200))).toHaveLength(128);
  });

  it("round-trip FieldsV1", () => {
    const f = { "f:a": { ".": {}, "f:b": {} }, "f:c": {} };
    expect(toFieldsV1(fromFieldsV1(f))).toEqual(f);
  });

  it("know lists by field name where there is no schema", () => {
    const t = fieldNameType({ containers: ["name"] });
    expect(t.child("containers").list([{ name: "a" }])).toEqual({ type: "map", keys: ["name"] });
    expect(t.child("args").list(["a"])).toEqual({ type: "atomic" });
  });
});
