import { describe, expect, it } from "vitest";
import { decodeJson, decodeYaml as decodeYamlLimited, MAX_NESTING_DEPTH } from "../../src/k8s/decode.ts";
import { ApiError } from "../../src/k8s/errors.ts";

const nestArrays = (n: number) => "[".repeat(n) + "1" + "]".repeat(n);
const nestObjects = (n: number) => '{"a":'.repeat(n) + "1" + "}".repeat(n);

const MIB3 = 3 * 1024 * 1024;
const decodeYaml = (text: string, maxJsonBytes = MIB3) => decodeYamlLimited(text, maxJsonBytes);

function refusal(f: () => unknown): ApiError {
  try {
    f();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("no error thrown");
}

describe("decodeJson", () => {
  it("accepts the maximum depth and refuses one level more, before parsing", () => {
    expect(decodeJson(nestArrays(MAX_NESTING_DEPTH)).value).toBeDefined();
    expect(decodeJson(nestObjects(MAX_NESTING_DEPTH)).value).toBeDefined();
    for (const text of [nestArrays(MAX_NESTING_DEPTH + 1), nestObjects(MAX_NESTING_DEPTH + 1), nestArrays(1_000_000), "[".repeat(500_000)]) {
      const e = refusal(() => decodeJson(text));
      expect(e.code).toBe(400);
      expect(e.message).toMatch(/exceeded max depth/);
    }
  });

  it("counts depth through strings that look like brackets only as strings", () => {
    const text = JSON.stringify({ a: "[".repeat(1000), b: "{".repeat(1000) });
    expect(decodeJson(text).value).toEqual({ a: "[".repeat(1000), b: "{".repeat(1000) });
  });

  it("finds duplicate keys with their field paths, and keeps the last value", () => {
    const d = decodeJson('{"a":1,"a":2,"m":{"n":1,"x":{"y":1},"n":2},"e":[{"f":1},{"f":1,"f":2}],"\\u0061":3}');
    expect(d.duplicates).toEqual(["a", "m.n", "e[1].f", "a"]);
    expect(d.value).toEqual({ a: 3, m: { n: 2, x: { y: 1 } }, e: [{ f: 1 }, { f: 2 }] });
  });

  it("reports no duplicates for the same key in sibling objects", () => {
    expect(decodeJson('[{"a":1},{"a":2}]').duplicates).toEqual([]);
    expect(decodeJson('{"a":{"b":1},"c":{"b":1}}').duplicates).toEqual([]);
  });

  it("refuses empty and malformed bodies with 400", () => {
    for (const text of ["", "  ", "{", '{"a":}', "[1,]", "{'a':1}", "nul"]) expect(refusal(() => decodeJson(text)).code).toBe(400);
  });
});

describe("decodeYaml", () => {
  it("refuses deep flow and block collections before composing them", () => {
    const block = Array.from({ length: MAX_NESTING_DEPTH + 1 }, (_, i) => `${" ".repeat(i)}a:`).join("\n") + `\n${" ".repeat(MAX_NESTING_DEPTH + 1)}b: 1\n`;
    for (const text of [nestArrays(MAX_NESTING_DEPTH + 1), "{a: ".repeat(5000) + "1" + "}".repeat(5000), block]) {
      const e = refusal(() => decodeYaml(text));
      expect(e.code).toBe(400);
      expect(e.message).toMatch(/exceeded max depth/);
    }
    expect(decodeYaml(nestArrays(MAX_NESTING_DEPTH - 1)).value).toBeDefined();
  });

  it("refuses a self-referencing alias and aliases that nest past the limit", () => {
    expect(refusal(() => decodeYaml("a: &x\n  b: *x\n")).message).toMatch(/exceeded max depth/);
    let chain = "a0: &a0 [1]\n";
    for (let i = 1; i < 60; i++) chain += `a${i}: &a${i} [[*a${i - 1}]]\n`;
    expect(refusal(() => decodeYaml(chain)).code).toBe(400);
  });

  it("refuses aliases that expand past the size limit with 413", () => {
    const text = `big: &big "${"x".repeat(10_000)}"\nmany: [${Array.from({ length: 90 }, () => "*big").join(", ")}]\n`;
    expect(refusal(() => decodeYaml(text, 100_000)).code).toBe(413);
    expect((decodeYaml(text).value as { many: string[] }).many).toHaveLength(90);
  });

  it("finds duplicate keys with their field paths and keeps the last value", () => {
    const d = decodeYaml("metadata:\n  name: a\n  name: b\nspec:\n  items:\n  - k: 1\n    k: 2\n");
    expect(d.duplicates).toEqual(["metadata.name", "spec.items[0].k"]);
    expect(d.value).toEqual({ metadata: { name: "b" }, spec: { items: [{ k: 2 }] } });
  });

  it("decodes a JSON body (kubectl's server-side apply) as JSON, with the YAML path's value and duplicates", () => {
    const text = JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", labels: { x: "1" } }, data: { k: "v\u00e9", n: "1e3" } });
    expect(decodeYaml(text).value).toEqual(JSON.parse(text));
    expect(decodeYaml(`  ${text}\n`).value).toEqual(JSON.parse(text));
    const d = decodeYaml('{"metadata":{"name":"a","name":"b"},"spec":{"items":[{"k":1,"k":2}]}}');
    expect(d.duplicates).toEqual(["metadata.name", "spec.items[0].k"]);
    expect(d.value).toEqual({ metadata: { name: "b" }, spec: { items: [{ k: 2 }] } });
    // A YAML flow mapping is not JSON: decoded as YAML.
    expect(decodeYaml("{a: b, c: [1, 2]}").value).toEqual({ a: "b", c: [1, 2] });
    expect(refusal(() => decodeYaml(nestObjects(MAX_NESTING_DEPTH + 1))).message).toMatch(/exceeded max depth/);
    expect(refusal(() => decodeYaml('{"a": "' + "x".repeat(2000) + '"}', 1000)).code).toBe(413);
  });

  it("decodes JSON as YAML and refuses malformed YAML and several documents with 400", () => {
    expect(decodeYaml('{"a": [1, 2]}').value).toEqual({ a: [1, 2] });
    for (const text of ["a: [1, 2", "a: b: c", "---\na: 1\n---\nb: 2\n", ""]) expect(refusal(() => decodeYaml(text)).code).toBe(400);
  });
});
