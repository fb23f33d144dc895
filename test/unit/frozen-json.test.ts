// Frozen rendered subtrees (src/k8s/frozen-json.ts): their JSON text is spliced into what is
// serialised with them, exactly as JSON.stringify would write it; they cannot change in place; and
// the write path checks them once (src/k8s/write.ts `decode`, the ManifestWork's validation).
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { adoptFrozen, checkedBy, fieldSpans, freezeRendered, freezeTree, frozenJson, lazyFrozen, stringifyObject } from "../../src/k8s/frozen-json.ts";
import { computeWrite } from "../../src/k8s/write.ts";
import { ManifestWorkKind } from "../../src/kinds/manifestwork.ts";
import { deltaMessage, deltaOf } from "../../src/work/namespace-deliverables.ts";
import { objectSchema, type KubeObject } from "../../src/k8s/meta.ts";
import type { KindDefinition } from "../../src/k8s/kind.ts";
import { ApiError } from "../../src/k8s/errors.ts";

const specOf = () => ({
  workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "ns" }, data: { k: 'v\u0000"x"' } }] },
  manifestConfigs: [{ resourceIdentifier: { group: "", resource: "configmaps", name: "a", namespace: "ns" }, updateStrategy: { type: "Update" } }],
});
const spec = specOf;

describe("frozen rendered subtrees", () => {
  it("serialise as JSON.stringify does, their text spliced in, and cannot change in place", () => {
    const s = freezeRendered(spec());
    const obj = { apiVersion: "v1", kind: "K", metadata: { name: "n" }, spec: s, status: { x: [1, null, "s"] } };
    expect(stringifyObject(obj)).toBe(JSON.stringify(obj));
    expect(stringifyObject({ a: 1, b: null }, { b: "[1,2]" })).toBe('{"a":1,"b":[1,2]}');
    expect(frozenJson(s)).toBe(JSON.stringify(spec()));
    expect(frozenJson({})).toBeUndefined();
    expect(() => (s.workload.manifests as unknown[]).push({})).toThrow(TypeError);
    expect(() => ((s.workload.manifests[0]!.metadata as { name: string }).name = "b")).toThrow(TypeError);
  });

  it("are schema-checked and validated once by the write path; an invalid one is refused", () => {
    const s = freezeRendered(spec());
    const create = (name: string, sp: unknown) =>
      computeWrite(
        ManifestWorkKind,
        { namespace: "c1", name },
        null,
        { verb: "create", body: { apiVersion: "work.open-cluster-management.io/v1", kind: "ManifestWork", metadata: { name }, spec: sp } },
        { now: 0, newUid: () => `uid-${name}` },
      ).next!;
    const w = create("w1", s);
    expect(w.spec).toBe(s);
    expect(checkedBy(s, ManifestWorkKind.schema)).toBe(true);
    expect(create("w2", s).spec).toBe(s);
    const bad = freezeRendered({ workload: { manifests: [{ kind: "ConfigMap" }] }, unknownField: 1 });
    expect(() => create("w3", bad)).toThrow();
    expect(checkedBy(bad, ManifestWorkKind.schema)).toBe(false);
  });

  it("travel to the cluster's object as text and come out frozen with the same text", () => {
    const s = freezeRendered(spec());
    const work = {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "w", namespace: "c1" },
      spec: s,
    } as unknown as KubeObject;
    const message = deltaMessage({ name: "w", resourceVersion: 3, object: work });
    expect(message.specJson).toBe(JSON.stringify(spec()));
    const delta = deltaOf(structuredClone(message));
    expect(delta.object).toEqual(work);
    expect(Object.keys(delta.object!)).toEqual(Object.keys(work));
    expect(delta.bytes).toBe(JSON.stringify(work).length);
    expect(frozenJson(delta.object!.spec)).toBe(JSON.stringify(spec()));
    expect(stringifyObject(delta.object as unknown as Record<string, unknown>)).toBe(JSON.stringify(work));
    const plain = deltaMessage({ name: "w", resourceVersion: 3, object: { ...work, spec: spec() } as unknown as KubeObject });
    expect(plain.specJson).toBeUndefined();
    expect(deltaOf(plain).object).toEqual(work);
    const adopted = adoptFrozen({ a: 1 }, '{"a":1}');
    expect(Object.isFrozen(adopted)).toBe(true);
  });

  it("handed to several objects as the same text, are one frozen spec: its hash and checks made once", () => {
    const s = freezeRendered({ ...spec(), deleteOption: { propagationPolicy: "Orphan" } });
    const work = (cluster: string) =>
      ({
        apiVersion: "work.open-cluster-management.io/v1",
        kind: "ManifestWork",
        metadata: { name: "w", namespace: cluster, uid: `u-${cluster}`, resourceVersion: "3", generation: 1, creationTimestamp: "2026-11-30T00:00:00Z" },
        spec: s,
      }) as unknown as KubeObject;
    // Each object's call copies the message (Workers RPC): the texts are equal, not the same string.
    const a = deltaOf(structuredClone(deltaMessage({ name: "w", resourceVersion: 3, object: work("c1") }))).object!;
    const b = deltaOf(structuredClone(deltaMessage({ name: "w", resourceVersion: 3, object: work("c2") }))).object!;
    expect(b.spec).toBe(a.spec);
    expect(b).toEqual(work("c2"));
    expect(a).toEqual(work("c1"));
    // Another text is a spec of its own.
    const other = freezeRendered({ ...spec(), deleteOption: { propagationPolicy: "Foreground" } });
    const c = deltaOf(structuredClone(deltaMessage({ name: "w", resourceVersion: 4, object: { ...work("c3"), spec: other } }))).object!;
    expect(c.spec).not.toBe(a.spec);
    expect(frozenJson(c.spec)).toBe(JSON.stringify(other));
    expect((c.spec as { deleteOption: unknown }).deleteOption).toEqual({ propagationPolicy: "Foreground" });
  });

  it("know where each top-level field lies in their text", () => {
    // An own `__proto__` field (as JSON.parse makes one), a value JSON leaves out, an escaped character.
    const tree = JSON.parse('{"a":1,"__proto__":{"x":"\\u2028\\""}}') as Record<string, unknown>;
    tree.skipped = undefined;
    tree.b = [spec()];
    const s = freezeRendered(tree);
    const text = frozenJson(s)!;
    expect(text).toBe(JSON.stringify(s));
    const fields = fieldSpans(s)!;
    expect(fields.map(([k]) => k)).toEqual(["a", "__proto__", "b"]);
    for (const [k, start, end] of fields) expect(JSON.parse(text.slice(start, end))).toEqual(s[k]);
    const lazy = lazyFrozen(text, fields);
    expect(JSON.stringify(lazy)).toBe(text);
    expect(structuredClone(lazy)).toEqual(JSON.parse(text));
    expect(Object.getPrototypeOf(lazy)).toBe(Object.prototype);
  });

  it("reach the cluster's object unparsed: a field is parsed when first read, and only that one", () => {
    // A text no earlier test handed over: the objects of an isolate share a delivered spec by its text (below).
    const spec = () => ({ ...specOf(), manifestConfigs: [{ ...specOf().manifestConfigs[0]!, updateStrategy: { type: "ServerSideApply" } }] });
    const s = freezeRendered(spec());
    const work = {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "w", namespace: "c1", uid: "u1", resourceVersion: "3", generation: 1, creationTimestamp: "2026-11-30T00:00:00Z" },
      spec: s,
    } as unknown as KubeObject;
    const message = structuredClone(deltaMessage({ name: "w", resourceVersion: 3, object: work }));
    const parse = vi.spyOn(JSON, "parse");
    try {
      const delta = deltaOf(message);
      const object = delta.object!;
      // Only the work's head (its spec left out) was parsed, not the spec's text.
      expect(parse.mock.calls.map((c) => c[0])).toEqual([message.json]);
      expect(frozenJson(object.spec)).toBe(JSON.stringify(spec()));
      expect(stringifyObject(object as unknown as Record<string, unknown>)).toBe(JSON.stringify(work));
      expect(delta.bytes).toBe(JSON.stringify(work).length);
      // The agent's status report on this copy shares the spec and parses nothing of it.
      const { resourceVersion: _rv, ...metadata } = object.metadata;
      const next = computeWrite(
        ManifestWorkKind,
        { namespace: "c1", name: "w" },
        object,
        { verb: "update", subresource: "status", body: { ...object, metadata, status: { conditions: [] } } },
        { now: 0, newUid: () => "" },
      ).next!;
      expect(next.spec).toBe(object.spec);
      expect(parse.mock.calls.some((c) => String(c[0]).includes("ConfigMap"))).toBe(false);
      // A read of one field parses that field.
      expect((object.spec as ReturnType<typeof spec>).manifestConfigs).toEqual(spec().manifestConfigs);
      expect(parse.mock.calls.filter((c) => String(c[0]).includes("ConfigMap"))).toHaveLength(0);
      expect(parse.mock.calls.filter((c) => String(c[0]).includes("configmaps"))).toHaveLength(1);
    } finally {
      parse.mockRestore();
    }
    const object = deltaOf(message).object!;
    // It reads, serialises and clones (a Workers RPC) as the object it stands for, and is frozen.
    expect(object).toEqual(work);
    expect(JSON.stringify(object)).toBe(JSON.stringify(work));
    expect(structuredClone(object)).toEqual(work);
    expect({ ...(object.spec as object) }).toEqual(spec());
    expect(Object.isFrozen(object.spec)).toBe(true);
    expect(() => ((object.spec as Record<string, unknown>).workload = {})).toThrow(TypeError);
    expect(() => ((object.spec as ReturnType<typeof spec>).workload.manifests as unknown[]).push({})).toThrow(TypeError);
  });

  it("a status list's frozen items are checked once; a new or unfrozen one each time, a refusal names its index", () => {
    let checks = 0;
    const Item = z.strictObject({ name: z.string(), n: z.number().int() }).refine(() => ++checks > 0);
    const def = {
      group: "test.dev",
      version: "v1",
      kind: "Thing",
      listKind: "ThingList",
      plural: "things",
      singular: "thing",
      shortNames: [],
      namespaced: true,
      hasStatus: true,
      schema: objectSchema(z.strictObject({}), z.strictObject({ items: z.array(Item).optional() })),
      storage: "d1",
      statusItemLists: ["items"],
    } as KindDefinition;
    const stored = {
      apiVersion: "test.dev/v1",
      kind: "Thing",
      metadata: { name: "t", namespace: "ns", uid: "u", resourceVersion: "1", creationTimestamp: "2026-11-30T00:00:00Z" },
    } as unknown as KubeObject;
    const writeStatus = (items: unknown[]) =>
      computeWrite(
        def,
        { namespace: "ns", name: "t" },
        stored,
        { verb: "update", subresource: "status", body: { ...stored, status: { items } } },
        { now: 0, newUid: () => "" },
      ).next!;
    const a = freezeTree({ name: "a", n: 1 });
    const b = freezeTree({ name: "b", n: 2 });
    const plain = { name: "p", n: 3 };
    writeStatus([a, b, plain]);
    expect(checks).toBe(3);
    expect(checkedBy(a, def.schema)).toBe(true);
    expect(checkedBy(plain, def.schema)).toBe(false);
    // a and b passed and cannot have changed: only the unfrozen item and the new one are checked.
    const c = freezeTree({ name: "c", n: 4 });
    const next = writeStatus([a, b, plain, c]);
    expect(checks).toBe(5);
    expect((next.status as { items: unknown[] }).items).toEqual([a, b, plain, c]);
    // A bad new item is refused as a check of the whole list refuses it: its own index.
    const bad = freezeTree({ name: "d", n: 1.5 });
    let err: unknown;
    try {
      writeStatus([a, b, bad]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(422);
    expect(JSON.stringify((err as ApiError).details?.causes)).toContain("status.items[2].n");
    expect(checkedBy(bad, def.schema)).toBe(false);
    const unknown = freezeTree({ name: "e", n: 1, extra: true });
    expect(() => writeStatus([a, unknown])).toThrow(/unknown field "status.items\[1\].extra"/);
  });
});
