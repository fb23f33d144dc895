/**
 * Content negotiation (src/api/negotiate.ts): the answer of an `Accept` header is remembered per
 * header and per kind of answer, and a remembered answer is the one a first parse gives.
 */
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/k8s/errors.ts";
import { negotiate } from "../../src/api/negotiate.ts";

describe("negotiate", () => {
  it("answers a header the same on every call, per kind of answer", () => {
    const table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    const meta = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;q=0.9";
    for (let i = 0; i < 3; i++) {
      expect(negotiate("application/json", "object")).toEqual({ kind: "json" });
      expect(negotiate(table, "object")).toEqual({ kind: "table", version: "v1" });
      expect(negotiate(meta, "list")).toEqual({ kind: "metadata", version: "v1" });
      // The same header answering an object: the list form is not served for it, JSON is next.
      expect(negotiate(meta, "object")).toEqual({ kind: "json" });
      expect(negotiate("application/yaml", "object")).toEqual({ kind: "yaml" });
      expect(() => negotiate("application/yaml", "watch")).toThrow(ApiError);
      expect(negotiate(undefined, "list")).toEqual({ kind: "json" });
      expect(negotiate("  ", "list")).toEqual({ kind: "json" });
    }
  });

  it("refuses with 406 on every call, and keeps answering once it remembered many headers", () => {
    for (let i = 0; i < 3; i++) {
      try {
        negotiate("application/vnd.kubernetes.protobuf", "object");
        expect.unreachable();
      } catch (e) {
        expect((e as ApiError).code).toBe(406);
      }
    }
    for (let i = 0; i < 200; i++) expect(negotiate(`application/json;x=${i}`, "object")).toEqual({ kind: "json" });
    expect(negotiate("application/yaml;q=0.5,application/json;q=0.9", "object")).toEqual({ kind: "json" });
  });

  it("shares remembered answers frozen, so that no caller can change another's", () => {
    const form = negotiate("application/json;as=Table;v=v1;g=meta.k8s.io", "list");
    expect(Object.isFrozen(form)).toBe(true);
    expect(negotiate("application/json;as=Table;v=v1;g=meta.k8s.io", "list")).toBe(form);
  });
});
