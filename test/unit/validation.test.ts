import { describe, expect, it } from "vitest";
import {
  type FieldError,
  aggregateFieldErrors,
  fieldDuplicate,
  fieldNotSupported,
  formatFieldError,
  isDNS1035Label,
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidLabelValue,
  nameIsDNSLabel,
  regexError,
  utf8Length,
  validateAnnotations,
  validateConditions,
  validateResourceList,
  validateGenerateName,
  validateLabels,
  validateNamespaceName,
  validateObjectMeta,
  validateObjectName,
} from "../../src/k8s/validation.ts";

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const QNAME_MSG =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

describe("isDNS1123Subdomain", () => {
  const cases: { v: string; errs: string[] }[] = [
    { v: "a", errs: [] },
    { v: "example.com", errs: [] },
    { v: "a-b.c-d.e", errs: [] },
    { v: "0.1", errs: [] },
    { v: "a".repeat(253), errs: [] },
    { v: "", errs: [SUBDOMAIN_MSG] },
    { v: "Example.com", errs: [SUBDOMAIN_MSG] },
    { v: "-abc", errs: [SUBDOMAIN_MSG] },
    { v: "abc-", errs: [SUBDOMAIN_MSG] },
    { v: "a..b", errs: [SUBDOMAIN_MSG] },
    { v: ".a", errs: [SUBDOMAIN_MSG] },
    { v: "a_b", errs: [SUBDOMAIN_MSG] },
    { v: "a b", errs: [SUBDOMAIN_MSG] },
    { v: "a".repeat(254), errs: ["must be no more than 253 characters"] },
    { v: "A".repeat(254), errs: ["must be no more than 253 characters", SUBDOMAIN_MSG] },
  ];
  it.each(cases)("$v", ({ v, errs }) => {
    expect(isDNS1123Subdomain(v)).toEqual(errs);
  });
});

describe("isDNS1123Label", () => {
  const cases: { v: string; errs: string[] }[] = [
    { v: "a", errs: [] },
    { v: "my-name", errs: [] },
    { v: "123-abc", errs: [] },
    { v: "a".repeat(63), errs: [] },
    { v: "a".repeat(64), errs: ["must be no more than 63 characters"] },
    { v: "", errs: [LABEL_MSG] },
    { v: "my.name", errs: ["must not contain dots"] },
    { v: "My-Name", errs: [LABEL_MSG] },
    { v: "-abc", errs: [LABEL_MSG] },
    { v: "abc-", errs: [LABEL_MSG] },
    { v: "a_b", errs: [LABEL_MSG] },
  ];
  it.each(cases)("$v", ({ v, errs }) => {
    expect(isDNS1123Label(v)).toEqual(errs);
  });
});

describe("isDNS1035Label", () => {
  it("requires a leading letter", () => {
    expect(isDNS1035Label("web-1")).toEqual([]);
    expect(isDNS1035Label("1web")).toHaveLength(1);
    expect(isDNS1035Label("1web")[0]).toContain("start with an alphabetic character");
  });
});

describe("isQualifiedName", () => {
  const cases: { v: string; errs: string[] }[] = [
    { v: "simple", errs: [] },
    { v: "now-with-dashes", errs: [] },
    { v: "1-starts-with-num", errs: [] },
    { v: "1234", errs: [] },
    { v: "simple/simple", errs: [] },
    { v: "now-with-dashes/simple", errs: [] },
    { v: "example.com/MyName", errs: [] },
    { v: "app.kubernetes.io/name", errs: [] },
    { v: "Under_Score.and.Dots", errs: [] },
    { v: "a".repeat(63), errs: [] },
    { v: `${"a".repeat(253)}/${"b".repeat(63)}`, errs: [] },
    { v: "", errs: ["name part must be non-empty", `name part ${QNAME_MSG}`] },
    { v: "a".repeat(64), errs: ["name part must be no more than 63 characters"] },
    { v: "-leading", errs: [`name part ${QNAME_MSG}`] },
    { v: "trailing_", errs: [`name part ${QNAME_MSG}`] },
    { v: "has space", errs: [`name part ${QNAME_MSG}`] },
    { v: "/name", errs: ["prefix part must be non-empty"] },
    { v: "prefix/", errs: ["name part must be non-empty", `name part ${QNAME_MSG}`] },
    { v: "Example.com/name", errs: [`prefix part ${SUBDOMAIN_MSG}`] },
    { v: "under_score.com/name", errs: [`prefix part ${SUBDOMAIN_MSG}`] },
    { v: `${"a".repeat(254)}/name`, errs: ["prefix part must be no more than 253 characters"] },
    {
      v: "a/b/c",
      errs: [`a qualified name ${QNAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`],
    },
  ];
  it.each(cases)("$v", ({ v, errs }) => {
    expect(isQualifiedName(v)).toEqual(errs);
  });
});

describe("isValidLabelValue", () => {
  const cases: { v: string; errs: string[] }[] = [
    { v: "", errs: [] },
    { v: "simple", errs: [] },
    { v: "MyValue", errs: [] },
    { v: "my_value", errs: [] },
    { v: "1.2.3-rc_1", errs: [] },
    { v: "a".repeat(63), errs: [] },
    { v: "a".repeat(64), errs: ["must be no more than 63 characters"] },
    { v: "-lead", errs: [LABEL_VALUE_MSG] },
    { v: "trail.", errs: [LABEL_VALUE_MSG] },
    { v: "has space", errs: [LABEL_VALUE_MSG] },
    { v: "a/b", errs: [LABEL_VALUE_MSG] },
    { v: "é", errs: [LABEL_VALUE_MSG] },
  ];
  it.each(cases)("$v", ({ v, errs }) => {
    expect(isValidLabelValue(v)).toEqual(errs);
  });

  it("measures length in UTF-8 bytes like Go", () => {
    expect(utf8Length("é")).toBe(2);
    expect(utf8Length("😀")).toBe(4);
    expect(isValidLabelValue(`${"a".repeat(62)}é`)).toEqual(["must be no more than 63 characters", LABEL_VALUE_MSG]);
  });
});

describe("message helpers", () => {
  it("regexError matches apimachinery's format", () => {
    expect(regexError("m", "f")).toBe("m (regex used for validation is 'f')");
    expect(regexError("m", "f", "a", "b")).toBe("m (e.g. 'a',  or 'b', regex used for validation is 'f')");
  });
  it("formats field errors like field.Error", () => {
    const e: FieldError = { field: "spec.x", reason: "FieldValueRequired", message: "Required value" };
    expect(formatFieldError(e)).toBe("spec.x: Required value");
    expect(formatFieldError({ ...e, field: "" })).toBe("Required value");
    expect(aggregateFieldErrors([])).toBe("");
    expect(aggregateFieldErrors([e])).toBe("spec.x: Required value");
    expect(aggregateFieldErrors([e, e, { ...e, field: "spec.y" }])).toBe("[spec.x: Required value, spec.y: Required value]");
    expect(fieldNotSupported("spec.op", "Gt", ["In", "NotIn"]).message).toBe('Unsupported value: "Gt": supported values: "In", "NotIn"');
    expect(fieldDuplicate("spec.a[1]", "x")).toEqual({ field: "spec.a[1]", reason: "FieldValueDuplicate", message: 'Duplicate value: "x"' });
  });
});

describe("validateLabels", () => {
  it("accepts valid labels and undefined", () => {
    expect(validateLabels({ app: "web", "app.kubernetes.io/name": "x", empty: "" }, "metadata.labels")).toEqual([]);
    expect(validateLabels(undefined, "metadata.labels")).toEqual([]);
  });
  it("reports bad keys and values on the map path", () => {
    expect(validateLabels({ "-bad": "ok", good: "not ok" }, "metadata.labels")).toEqual([
      { field: "metadata.labels", reason: "FieldValueInvalid", message: `Invalid value: "-bad": name part ${QNAME_MSG}` },
      { field: "metadata.labels", reason: "FieldValueInvalid", message: `Invalid value: "not ok": ${LABEL_VALUE_MSG}` },
    ]);
  });
  it("reports overlong values", () => {
    const errs = validateLabels({ k: "v".repeat(64) }, "spec.labels");
    expect(errs).toEqual([
      { field: "spec.labels", reason: "FieldValueInvalid", message: `Invalid value: "${"v".repeat(64)}": must be no more than 63 characters` },
    ]);
  });
});

describe("validateAnnotations", () => {
  it("allows any value and case-insensitive keys", () => {
    expect(validateAnnotations({ "Example.COM/Owner": "anything goes: {}\n", plain: "" }, "metadata.annotations")).toEqual([]);
  });
  it("rejects keys that are not qualified names", () => {
    expect(validateAnnotations({ "a b": "x" }, "metadata.annotations")).toEqual([
      { field: "metadata.annotations", reason: "FieldValueInvalid", message: `Invalid value: "a b": name part ${QNAME_MSG}` },
    ]);
  });
  it("limits the total size to 256 KiB", () => {
    expect(validateAnnotations({ k: "x".repeat(256 * 1024 - 1) }, "metadata.annotations")).toEqual([]);
    expect(validateAnnotations({ k: "x".repeat(256 * 1024) }, "metadata.annotations")).toEqual([
      { field: "metadata.annotations", reason: "FieldValueTooLong", message: "Too long: must have at most 262144 bytes" },
    ]);
  });
});

describe("object names", () => {
  const cases: { name: string | undefined; opts?: Parameters<typeof validateObjectName>[1]; want: FieldError[] }[] = [
    { name: "cluster1", want: [] },
    { name: "a.b-c", want: [] },
    { name: "a".repeat(253), want: [] },
    {
      name: undefined,
      want: [{ field: "metadata.name", reason: "FieldValueRequired", message: "Required value: name or generateName is required" }],
    },
    {
      name: "",
      want: [{ field: "metadata.name", reason: "FieldValueRequired", message: "Required value: name or generateName is required" }],
    },
    {
      name: "MyCluster",
      want: [{ field: "metadata.name", reason: "FieldValueInvalid", message: `Invalid value: "MyCluster": ${SUBDOMAIN_MSG}` }],
    },
    {
      name: "-lead",
      want: [{ field: "metadata.name", reason: "FieldValueInvalid", message: `Invalid value: "-lead": ${SUBDOMAIN_MSG}` }],
    },
    {
      name: "a".repeat(254),
      want: [{ field: "metadata.name", reason: "FieldValueInvalid", message: `Invalid value: "${"a".repeat(254)}": must be no more than 253 characters` }],
    },
    { name: "cm", opts: { namespaced: true, namespace: "team-a" }, want: [] },
    { name: "cm", opts: { namespaced: true }, want: [{ field: "metadata.namespace", reason: "FieldValueRequired", message: "Required value" }] },
    {
      name: "cm",
      opts: { namespaced: true, namespace: "team.a" },
      want: [{ field: "metadata.namespace", reason: "FieldValueInvalid", message: 'Invalid value: "team.a": must not contain dots' }],
    },
    {
      name: "c1",
      opts: { namespaced: false, namespace: "ns" },
      want: [{ field: "metadata.namespace", reason: "FieldValueForbidden", message: "Forbidden: not allowed on this type" }],
    },
    { name: "c1", opts: { namespaced: false, namespace: "" }, want: [] },
    { name: "web-x7k2p", opts: { generateName: "web-" }, want: [] },
    {
      name: "x",
      opts: { generateName: "-web" },
      want: [{ field: "metadata.generateName", reason: "FieldValueInvalid", message: `Invalid value: "-web": ${SUBDOMAIN_MSG}` }],
    },
    {
      name: "my.ns",
      opts: { nameValidator: nameIsDNSLabel, fieldPath: "" },
      want: [{ field: "name", reason: "FieldValueInvalid", message: 'Invalid value: "my.ns": must not contain dots' }],
    },
  ];
  it.each(cases)("validateObjectName($name, $opts)", ({ name, opts, want }) => {
    expect(validateObjectName(name, opts)).toEqual(want);
  });

  it("validateNamespaceName", () => {
    expect(validateNamespaceName("team-a")).toEqual([]);
    expect(validateNamespaceName("")).toEqual([{ field: "metadata.namespace", reason: "FieldValueRequired", message: "Required value" }]);
    expect(validateNamespaceName("Team", "spec.namespace")).toEqual([
      { field: "spec.namespace", reason: "FieldValueInvalid", message: `Invalid value: "Team": ${LABEL_MSG}` },
    ]);
    expect(validateNamespaceName("a".repeat(64))[0]?.message).toContain("must be no more than 63 characters");
  });

  it("validateGenerateName tolerates only a trailing dash", () => {
    expect(validateGenerateName("web-")).toEqual([]);
    expect(validateGenerateName("")).toEqual([]);
    expect(validateGenerateName(undefined)).toEqual([]);
    expect(validateGenerateName("Web-")).toHaveLength(1);
    expect(validateGenerateName("-", "spec.generateName")).toEqual([
      { field: "spec.generateName", reason: "FieldValueInvalid", message: `Invalid value: "-": ${SUBDOMAIN_MSG}` },
    ]);
  });

  it("validateObjectMeta combines name, labels and annotations", () => {
    expect(validateObjectMeta({ name: "c1", labels: { env: "prod" }, annotations: { note: "x" } }, { namespaced: false })).toEqual([]);
    const errs = validateObjectMeta({ name: "C1", namespace: "ns", labels: { "-x": "y" }, annotations: { "a/b/c": "" } }, { namespaced: false });
    expect(errs.map((e) => [e.field, e.reason])).toEqual([
      ["metadata.name", "FieldValueInvalid"],
      ["metadata.namespace", "FieldValueForbidden"],
      ["metadata.labels", "FieldValueInvalid"],
      ["metadata.annotations", "FieldValueInvalid"],
    ]);
  });
});

describe("validateConditions (apimachinery ValidateConditions)", () => {
  const c = (type: string, extra: Record<string, unknown> = {}) => ({
    type,
    status: "True",
    reason: "Done",
    message: "",
    lastTransitionTime: "2026-11-26T00:00:00Z",
    ...extra,
  });

  it("a list of conditions is a map by type: the second of a type is a Duplicate value on its type", () => {
    expect(validateConditions([c("A"), c("B"), c("A"), c("A")], "status.conditions")).toEqual([
      { field: "status.conditions[2].type", reason: "FieldValueDuplicate", message: 'Duplicate value: "A"' },
      { field: "status.conditions[3].type", reason: "FieldValueDuplicate", message: 'Duplicate value: "A"' },
    ]);
  });

  it("checks reason against the apiserver's pattern and length, and the other fields", () => {
    for (const ok of ["A", "My_Reason", "ReasonA,ReasonB", "ReasonA:ReasonB", "x_"]) expect(validateConditions([c("T", { reason: ok })], ""), ok).toEqual([]);
    for (const bad of ["1A", "_A", "A-B", "A ", "A,", "A:"]) {
      expect(
        validateConditions([c("T", { reason: bad })], "").map((e) => [e.field, e.reason]),
        bad,
      ).toEqual([["[0].reason", "FieldValueInvalid"]]);
    }
    expect(validateConditions([c("T", { reason: "A".repeat(1025) })], "").map((e) => e.reason)).toEqual(["FieldValueTooLong"]);
    expect(validateConditions([c("T", { reason: "" })], "")).toEqual([
      { field: "[0].reason", reason: "FieldValueRequired", message: "Required value: must be set" },
    ]);
    expect(validateConditions([c("T", { message: "m".repeat(32 * 1024 + 1) })], "").map((e) => e.field)).toEqual(["[0].message"]);
    expect(
      validateConditions([c("a/b/c"), c("T", { status: "Maybe", observedGeneration: -1, lastTransitionTime: "2026-11-26" })], "").map((e) => e.field),
    ).toEqual(["[0].type", "[1].status", "[1].observedGeneration", "[1].lastTransitionTime"]);
  });
});

describe("validateResourceList (quantities parsed by src/k8s/quantity.ts)", () => {
  it("names each bad entry; bounded lists refuse negative and beyond-int64 values", () => {
    expect(validateResourceList({ cpu: "4", memory: "16Gi", "nvidia.com/gpu": "2", pods: 110 }, "capacity", { bounded: true })).toEqual([]);
    const errs = validateResourceList({ a: "1e400", b: "-5", c: "-1Gi", d: "abc", e: "" }, "capacity", { bounded: true });
    expect(errs.map((e) => [e.field, e.reason])).toEqual([
      ["capacity[a]", "FieldValueInvalid"],
      ["capacity[b]", "FieldValueInvalid"],
      ["capacity[c]", "FieldValueInvalid"],
      ["capacity[d]", "FieldValueInvalid"],
      ["capacity[e]", "FieldValueInvalid"],
    ]);
    // Unbounded (an admin's status write, as the CRD's quantity pattern): only malformed values.
    expect(validateResourceList({ b: "-5", d: "abc" }, "status.capacity").map((e) => e.field)).toEqual(["status.capacity[d]"]);
    expect(validateResourceList({ "bad key!": "1" }, "capacity").map((e) => e.field)).toEqual(["capacity[bad key!]"]);
  });
});
