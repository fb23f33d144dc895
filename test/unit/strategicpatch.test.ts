/**
 * Strategic merge patch for the core kinds (src/k8s/strategicpatch.ts), as apimachinery's
 * `strategicpatch` applies the patches kubectl sends for a Namespace or a Secret.
 */
import { describe, expect, it } from "vitest";
import { strategicMergePatch } from "../../src/k8s/strategicpatch.ts";

const ns = {
  apiVersion: "v1",
  kind: "Namespace",
  metadata: { name: "a", labels: { team: "a", keep: "y" }, finalizers: ["x.io/one"], ownerReferences: [{ uid: "u1", name: "o1" }] },
  spec: { finalizers: ["kubernetes"] },
  status: {
    phase: "Active",
    conditions: [
      { type: "A", status: "True" },
      { type: "B", status: "False" },
    ],
  },
};

describe("strategic merge patch", () => {
  it("merges maps as a JSON merge patch does, null deleting a key", () => {
    expect(strategicMergePatch(ns, { metadata: { labels: { team: "b", keep: null } } })).toMatchObject({ metadata: { labels: { team: "b" } } });
  });

  it("merges metadata.finalizers as a set, ownerReferences by uid, conditions by type; other lists are replaced", () => {
    const out = strategicMergePatch(ns, {
      metadata: {
        finalizers: ["x.io/two"],
        ownerReferences: [
          { uid: "u2", name: "o2" },
          { uid: "u1", name: "renamed" },
        ],
      },
      spec: { finalizers: [] },
      status: { conditions: [{ type: "B", status: "True" }] },
    }) as typeof ns;
    expect(out.metadata.finalizers).toEqual(["x.io/one", "x.io/two"]);
    expect(out.metadata.ownerReferences).toEqual([
      { uid: "u1", name: "renamed" },
      { uid: "u2", name: "o2" },
    ]);
    expect(out.spec.finalizers).toEqual([]);
    expect(out.status.conditions).toEqual([
      { type: "A", status: "True" },
      { type: "B", status: "True" },
    ]);
  });

  it("honours kubectl's directives: $setElementOrder, $deleteFromPrimitiveList, $patch delete and replace, $retainKeys", () => {
    const out = strategicMergePatch(ns, {
      metadata: {
        "$setElementOrder/finalizers": ["x.io/new", "x.io/one"],
        finalizers: ["x.io/new"],
        "$deleteFromPrimitiveList/finalizers": ["x.io/gone"],
        ownerReferences: [{ uid: "u1", $patch: "delete" }],
      },
      status: { conditions: [{ type: "A", $patch: "delete" }], $retainKeys: ["conditions"] },
    }) as typeof ns;
    expect(out.metadata.finalizers).toEqual(["x.io/new", "x.io/one"]);
    expect(out.metadata.ownerReferences).toEqual([]);
    expect(out.status).toEqual({ conditions: [{ type: "B", status: "False" }] });
    expect(strategicMergePatch(ns, { metadata: { labels: { $patch: "replace", only: "this" } } })).toMatchObject({ metadata: { labels: { only: "this" } } });
    expect((strategicMergePatch(ns, { status: { $patch: "delete" } }) as Record<string, unknown>).status).toBeUndefined();
    expect(ns.metadata.finalizers).toEqual(["x.io/one"]);
  });
});
