import { describe, expect, it } from "vitest";
import {
  type LabelSelectorInput,
  type LabelSelectorRequirementSet,
  LabelSelectorSchema,
  SelectorParseError,
  everything,
  fromLabelSelector,
  matches,
  matchesLabelSelector,
  newRequirement,
  nothing,
  parseSelector,
  selectorFromRequirements,
  selectorFromSet,
  selectsEverything,
  toString,
  validateLabelSelector,
} from "../../src/k8s/labels.ts";

function parseError(fn: () => unknown): SelectorParseError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SelectorParseError);
    return e as SelectorParseError;
  }
  throw new Error("expected a SelectorParseError");
}

describe("parseSelector: valid", () => {
  // input -> canonical string form
  const cases: [string, string][] = [
    ["", ""],
    ["   ", ""],
    ["x=a", "x=a"],
    ["x==a", "x==a"],
    ["x!=a", "x!=a"],
    ["x = a", "x=a"],
    ["\tx\n=\r a ", "x=a"],
    ["x=", "x="],
    ["x=a,y!=b", "x=a,y!=b"],
    ["y!=b,x=a", "x=a,y!=b"],
    ["x in (a)", "x in (a)"],
    ["x in (b,a)", "x in (a,b)"],
    ["x in ( a , b , a )", "x in (a,b)"],
    ["x notin (a,b)", "x notin (a,b)"],
    ["x in ()", "x in ()"],
    ["x in (,a)", "x in (,a)"],
    ["x in (a,)", "x in (,a)"],
    ["x in (a,,b)", "x in (,a,b)"],
    ["x in (a,,)", "x in (,a)"],
    ["x in (a,,,)", "x in (,a)"],
    ["x in (a,,,,,,)", "x in (,a)"],
    ["x in (a,,a,,a,,a,,)", "x in (,a)"],
    ["x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()"],
    ["x", "x"],
    ["!x", "!x"],
    ["! x", "!x"],
    ["z,!y,x", "x,!y,z"],
    ["x>1", "x>1"],
    ["x<10", "x<10"],
    ["in in (notin)", "in in (notin)"],
    ["notin notin (in)", "notin notin (in)"],
    ["example.com/Name_1=Value.2", "example.com/Name_1=Value.2"],
    ["a=b,a=c", "a=b,a=c"],
    ["x in (a),x notin (b)", "x in (a),x notin (b)"],
    ["env in (prod, staging), !canary, tier", "!canary,env in (prod,staging),tier"],
  ];

  it.each(cases)("%j -> %j", (input, want) => {
    const sel = parseSelector(input);
    expect(toString(sel)).toBe(want);
    // The canonical form parses back to the same selector.
    expect(parseSelector(toString(sel))).toEqual(sel);
  });

  it("produces sorted, frozen requirements", () => {
    const sel = parseSelector("b in (y,x),a,!c");
    expect(sel).toEqual({
      matchesNothing: false,
      requirements: [
        { key: "a", operator: "exists", values: [] },
        { key: "b", operator: "in", values: ["x", "y"] },
        { key: "c", operator: "!", values: [] },
      ],
    });
    expect(Object.isFrozen(sel)).toBe(true);
    expect(Object.isFrozen(sel.requirements)).toBe(true);
    expect(Object.isFrozen(sel.requirements[0])).toBe(true);
  });
});

describe("parseSelector: invalid", () => {
  const QNAME = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  // input -> [message (exact, or a substring when `contains`), position]
  const cases: { input: string; message: string; position?: number; contains?: boolean }[] = [
    { input: ",", message: "found ',', expected: !, identifier, or 'end of string'", position: 0 },
    { input: ",x", message: "found ',', expected: !, identifier, or 'end of string'", position: 0 },
    { input: "x,", message: "found '', expected: identifier after ','", position: 2 },
    { input: "x,,y", message: "found ',', expected: identifier after ','", position: 2 },
    { input: "=a", message: "found '=', expected: !, identifier, or 'end of string'", position: 0 },
    { input: "(x)", message: "found '(', expected: !, identifier, or 'end of string'", position: 0 },
    { input: "x y", message: "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt", position: 2 },
    { input: "x=a=b", message: "found '=', expected: ',' or 'end of string'", position: 3 },
    { input: "x=a b", message: "found 'b', expected: ',' or 'end of string'", position: 4 },
    { input: "!x=a", message: "found '=', expected: ',' or 'end of string'", position: 2 },
    { input: "!", message: "unable to parse requirement: found '', expected: identifier", position: 1 },
    { input: "!!x", message: "unable to parse requirement: found '!', expected: identifier", position: 1 },
    { input: "x in", message: "unable to parse requirement: found '' expected: '('", position: 4 },
    { input: "x in a", message: "unable to parse requirement: found 'a' expected: '('", position: 5 },
    { input: "x in (a", message: "unable to parse requirement: found '', expected: ',' or ')'", position: 7 },
    { input: "x in (a b)", message: "unable to parse requirement: found 'b', expected: ',' or ')'", position: 8 },
    { input: "x in (=)", message: "unable to parse requirement: found '=', expected: ',', ')' or identifier", position: 6 },
    { input: "x in (a,=)", message: "unable to parse requirement: found '=', expected: ',', or identifier", position: 8 },
    { input: "x notin (a))", message: "found ')', expected: ',' or 'end of string'", position: 11 },
    { input: "x=(a)", message: "unable to parse requirement: found '(', expected: identifier", position: 2 },
    { input: "x==!", message: "unable to parse requirement: found '!', expected: identifier", position: 3 },
    { input: "-x=a", message: `unable to parse requirement: Invalid value: "-x": name part ${QNAME}`, position: 0, contains: true },
    { input: "a/b/c", message: 'unable to parse requirement: Invalid value: "a/b/c": a qualified name', contains: true },
    {
      input: "Example.com/x",
      message: 'unable to parse requirement: Invalid value: "Example.com/x": prefix part a lowercase RFC 1123 subdomain',
      contains: true,
    },
    { input: `${"k".repeat(64)}=v`, message: "name part must be no more than 63 characters", contains: true },
    { input: "x=-a", message: 'unable to parse requirement: values[0][x]: Invalid value: "-a": a valid label must be', contains: true },
    { input: `x=${"v".repeat(64)}`, message: "must be no more than 63 characters", contains: true },
    { input: "x in (b,-a)", message: 'values[0][x]: Invalid value: "-a"', contains: true }, // values are sorted first
    {
      input: "x>a",
      message: "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer",
      contains: true,
    },
    { input: "x<99999999999999999999", message: "the value must be an integer", contains: true },
    { input: "x>-1", message: 'Invalid value: "-1": a valid label must be', contains: true },
    { input: "x=a;y=b", message: 'Invalid value: "a;y"', contains: true },
  ];

  it.each(cases)("$input", ({ input, message, position, contains }) => {
    const err = parseError(() => parseSelector(input));
    if (contains) expect(err.message).toContain(message);
    else expect(err.message).toBe(message);
    if (position !== undefined) expect(err.position).toBe(position);
    expect(err.selector).toBe(input);
    expect(err.name).toBe("SelectorParseError");
    expect(err).toBeInstanceOf(Error);
  });

  it("attaches field errors for validation failures", () => {
    const err = parseError(() => parseSelector("x in (-a,-b)"));
    expect(err.message.startsWith("unable to parse requirement: [values[0][x]: ")).toBe(true);
    expect(err.errors.map((e) => [e.field, e.reason])).toEqual([
      ["values[0][x]", "FieldValueInvalid"],
      ["values[1][x]", "FieldValueInvalid"],
    ]);
    expect(parseError(() => parseSelector("x y")).errors).toEqual([]);
  });
});

describe("matches", () => {
  const labels = { env: "prod", tier: "frontend", replicas: "3", "example.com/team": "a" };
  const cases: { sel: string; labels: Record<string, string> | undefined; want: boolean }[] = [
    // equality
    { sel: "env=prod", labels, want: true },
    { sel: "env==prod", labels, want: true },
    { sel: "env=dev", labels, want: false },
    { sel: "missing=x", labels, want: false },
    { sel: "env!=dev", labels, want: true },
    { sel: "env!=prod", labels, want: false },
    { sel: "missing!=x", labels, want: true },
    { sel: "env=", labels, want: false },
    { sel: "empty=", labels: { empty: "" }, want: true },
    { sel: "empty=", labels: {}, want: false },
    { sel: "example.com/team=a", labels, want: true },
    // set-based
    { sel: "env in (dev,prod)", labels, want: true },
    { sel: "env in (dev,qa)", labels, want: false },
    { sel: "missing in (x)", labels, want: false },
    { sel: "env notin (dev,qa)", labels, want: true },
    { sel: "env notin (prod)", labels, want: false },
    { sel: "missing notin (x)", labels, want: true },
    { sel: "env in ()", labels: { env: "" }, want: true },
    // existence
    { sel: "env", labels, want: true },
    { sel: "missing", labels, want: false },
    { sel: "!env", labels, want: false },
    { sel: "!missing", labels, want: true },
    // keyword-named keys, prototype names
    { sel: "in in (notin)", labels: { in: "notin" }, want: true },
    { sel: "constructor", labels: {}, want: false },
    { sel: "!toString", labels: {}, want: true },
    // numeric comparisons
    { sel: "replicas>2", labels, want: true },
    { sel: "replicas>3", labels, want: false },
    { sel: "replicas<4", labels, want: true },
    { sel: "replicas<3", labels, want: false },
    { sel: "env>1", labels, want: false },
    { sel: "missing<1", labels, want: false },
    { sel: "big>9223372036854775806", labels: { big: "9223372036854775807" }, want: true },
    { sel: "big>1", labels: { big: "9223372036854775808" }, want: false },
    // conjunctions
    { sel: "env=prod,tier=frontend", labels, want: true },
    { sel: "env=prod,tier=backend", labels, want: false },
    { sel: "env in (prod),!canary,tier", labels, want: true },
    // no labels
    { sel: "", labels: undefined, want: true },
    { sel: "", labels, want: true },
    { sel: "env", labels: undefined, want: false },
    { sel: "!env,env notin (x),env!=y", labels: undefined, want: true },
  ];
  it.each(cases)("$sel on $labels -> $want", ({ sel, labels: ls, want }) => {
    expect(matches(parseSelector(sel), ls)).toBe(want);
  });

  it("everything and nothing", () => {
    expect(matches(everything(), undefined)).toBe(true);
    expect(matches(everything(), { a: "b" })).toBe(true);
    expect(matches(nothing(), undefined)).toBe(false);
    expect(matches(nothing(), { a: "b" })).toBe(false);
    expect(selectsEverything(everything())).toBe(true);
    expect(selectsEverything(nothing())).toBe(false);
    expect(selectsEverything(parseSelector(""))).toBe(true);
    expect(selectsEverything(parseSelector("a"))).toBe(false);
    expect(toString(nothing())).toBe("");
  });
});

describe("fromLabelSelector (LabelSelectorAsSelector)", () => {
  it("nil selects nothing, empty selects everything", () => {
    for (const nil of [null, undefined]) {
      const sel = fromLabelSelector(nil);
      expect(sel.matchesNothing).toBe(true);
      expect(selectsEverything(sel)).toBe(false);
      expect(matches(sel, {})).toBe(false);
      expect(matches(sel, { a: "b" })).toBe(false);
    }
    for (const empty of [{}, { matchLabels: {} }, { matchExpressions: [] }, { matchLabels: {}, matchExpressions: [] }]) {
      const sel = fromLabelSelector(empty);
      expect(selectsEverything(sel)).toBe(true);
      expect(matches(sel, undefined)).toBe(true);
      expect(matches(sel, { a: "b" })).toBe(true);
    }
  });

  const cases: { sel: LabelSelectorInput; str: string; yes: Record<string, string>[]; no: Record<string, string>[] }[] = [
    { sel: { matchLabels: { app: "web" } }, str: "app=web", yes: [{ app: "web" }, { app: "web", x: "y" }], no: [{}, { app: "db" }] },
    {
      sel: { matchLabels: { b: "2", a: "1" } },
      str: "a=1,b=2",
      yes: [{ a: "1", b: "2" }],
      no: [{ a: "1" }, { b: "2" }],
    },
    {
      sel: { matchExpressions: [{ key: "env", operator: "In", values: ["prod", "dev"] }] },
      str: "env in (dev,prod)",
      yes: [{ env: "dev" }, { env: "prod" }],
      no: [{}, { env: "qa" }],
    },
    {
      sel: { matchExpressions: [{ key: "env", operator: "NotIn", values: ["dev"] }] },
      str: "env notin (dev)",
      yes: [{}, { env: "prod" }],
      no: [{ env: "dev" }],
    },
    { sel: { matchExpressions: [{ key: "gpu", operator: "Exists" }] }, str: "gpu", yes: [{ gpu: "" }], no: [{}] },
    {
      sel: { matchExpressions: [{ key: "gpu", operator: "DoesNotExist", values: [] }] },
      str: "!gpu",
      yes: [{}],
      no: [{ gpu: "true" }],
    },
    {
      sel: { matchLabels: { app: "web" }, matchExpressions: [{ key: "canary", operator: "DoesNotExist" }] },
      str: "app=web,!canary",
      yes: [{ app: "web" }],
      no: [{ app: "web", canary: "1" }],
    },
    { sel: { matchLabels: null, matchExpressions: [{ key: "a", operator: "Exists", values: null }] }, str: "a", yes: [{ a: "x" }], no: [{}] },
  ];
  it.each(cases)("$str", ({ sel, str, yes, no }) => {
    const s = fromLabelSelector(sel);
    expect(toString(s)).toBe(str);
    for (const ls of yes) expect(matches(s, ls)).toBe(true);
    for (const ls of no) expect(matches(s, ls)).toBe(false);
    expect(matchesLabelSelector(sel, yes[0])).toBe(true);
    expect(validateLabelSelector(sel, "spec.selector")).toEqual([]);
  });

  const invalid: { sel: LabelSelectorInput; field: string; reason: string; message: string }[] = [
    {
      sel: { matchExpressions: [{ key: "a", operator: "In" }] },
      field: "matchExpressions[0].values",
      reason: "FieldValueRequired",
      message: "matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
    },
    {
      sel: {
        matchExpressions: [
          { key: "a", operator: "Exists" },
          { key: "b", operator: "NotIn", values: [] },
        ],
      },
      field: "matchExpressions[1].values",
      reason: "FieldValueRequired",
      message: "matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
    },
    {
      sel: { matchExpressions: [{ key: "a", operator: "Exists", values: ["x"] }] },
      field: "matchExpressions[0].values",
      reason: "FieldValueForbidden",
      message: "matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
    },
    {
      sel: { matchExpressions: [{ key: "a", operator: "DoesNotExist", values: ["x"] }] },
      field: "matchExpressions[0].values",
      reason: "FieldValueForbidden",
      message: "matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
    },
    {
      sel: { matchExpressions: [{ key: "a", operator: "Gt", values: ["1"] }] },
      field: "matchExpressions[0].operator",
      reason: "FieldValueInvalid",
      message: 'matchExpressions[0].operator: Invalid value: "Gt": not a valid selector operator',
    },
    {
      sel: { matchExpressions: [{ key: "a", operator: "in", values: ["1"] }] },
      field: "matchExpressions[0].operator",
      reason: "FieldValueInvalid",
      message: 'matchExpressions[0].operator: Invalid value: "in": not a valid selector operator',
    },
    {
      sel: { matchExpressions: [{ key: "-a", operator: "Exists" }] },
      field: "matchExpressions[0].key",
      reason: "FieldValueInvalid",
      message: 'matchExpressions[0].key: Invalid value: "-a": name part must consist of',
    },
    {
      sel: { matchExpressions: [{ key: "a", operator: "In", values: ["ok", "not ok"] }] },
      field: "matchExpressions[0].values[1]",
      reason: "FieldValueInvalid",
      message: 'matchExpressions[0].values[1]: Invalid value: "not ok": a valid label must be',
    },
    {
      sel: { matchLabels: { "a/b/c": "x" } },
      field: "matchLabels",
      reason: "FieldValueInvalid",
      message: 'matchLabels: Invalid value: "a/b/c": a qualified name',
    },
    {
      sel: { matchLabels: { a: "-x" } },
      field: "matchLabels",
      reason: "FieldValueInvalid",
      message: 'matchLabels: Invalid value: "-x": a valid label must be',
    },
  ];
  it.each(invalid)("rejects $message", ({ sel, field, reason, message }) => {
    const err = parseError(() => fromLabelSelector(sel));
    expect(err.message.startsWith(message)).toBe(true);
    expect(err.errors).toHaveLength(1);
    expect(err.errors[0]?.field).toBe(field);
    expect(err.errors[0]?.reason).toBe(reason);
    // validateLabelSelector reports the same error under the given path.
    const errs = validateLabelSelector(sel, "spec.selector");
    expect(errs).toHaveLength(1);
    expect(errs[0]?.field).toBe(`spec.selector.${field}`);
  });

  it("aggregates several errors and prefixes the path", () => {
    const sel: LabelSelectorInput = {
      matchExpressions: [
        { key: "a", operator: "In" },
        { key: "b", operator: "Bogus", values: ["x"] },
      ],
    };
    const err = parseError(() => fromLabelSelector(sel, "spec.labelSelector"));
    expect(err.message).toBe(
      "[spec.labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn', " +
        'spec.labelSelector.matchExpressions[1].operator: Invalid value: "Bogus": not a valid selector operator]',
    );
    expect(validateLabelSelector(null, "spec.labelSelector")).toEqual([]);
    expect(validateLabelSelector(undefined, "x")).toEqual([]);
  });
});

describe("LabelSelectorSchema", () => {
  const ok: unknown[] = [
    {},
    { matchLabels: { a: "b" } },
    { matchExpressions: [{ key: "a", operator: "In", values: ["x"] }] },
    { matchExpressions: [{ key: "a", operator: "Exists" }] },
    { matchLabels: {}, matchExpressions: [] },
  ];
  const bad: unknown[] = [
    null,
    "a=b",
    { matchLabel: { a: "b" } },
    { matchLabels: { a: 1 } },
    { matchLabels: { a: "b" }, extra: true },
    { matchExpressions: [{ key: "a", operator: "Gt", values: ["1"] }] },
    { matchExpressions: [{ key: "a", operator: "In", values: ["x"], extra: 1 }] },
    { matchExpressions: [{ operator: "Exists" }] },
    { matchExpressions: { key: "a", operator: "Exists" } },
  ];
  it.each(ok.map((v) => [JSON.stringify(v), v]))("accepts %s", (_s, v) => {
    expect(LabelSelectorSchema.safeParse(v).success).toBe(true);
  });
  it.each(bad.map((v) => [JSON.stringify(v), v]))("rejects %s", (_s, v) => {
    expect(LabelSelectorSchema.safeParse(v).success).toBe(false);
  });
  it("its output feeds fromLabelSelector", () => {
    const parsed = LabelSelectorSchema.parse({ matchLabels: { app: "web" } });
    expect(toString(fromLabelSelector(parsed))).toBe("app=web");
  });
});

describe("constructors", () => {
  it("newRequirement validates like labels.NewRequirement", () => {
    expect(newRequirement("env", "in", ["prod", "dev", "prod"])).toEqual({ key: "env", operator: "in", values: ["dev", "prod"] });
    expect(parseError(() => newRequirement("env", "in", [])).message).toBe(
      "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty",
    );
    expect(parseError(() => newRequirement("env", "=", ["a", "b"])).message).toBe(
      'values: Invalid value: []string{"a", "b"}: exact-match compatibility requires one single value',
    );
    expect(parseError(() => newRequirement("env", "exists", ["a"])).message).toBe(
      'values: Invalid value: []string{"a"}: values set must be empty for exists and does not exist',
    );
    expect(parseError(() => newRequirement("env", "gt", ["1", "2"])).message).toContain("exactly one value is required");
    expect(parseError(() => newRequirement("Bad Key", "exists")).errors[0]?.field).toBe("key");
    expect(parseError(() => newRequirement("k", "bogus" as never, ["x"])).message).toContain(
      'operator: Unsupported value: "bogus": supported values: "in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!"',
    );
  });

  it("selectorFromSet and selectorFromRequirements", () => {
    expect(toString(selectorFromSet({ b: "2", a: "1" }))).toBe("a=1,b=2");
    expect(selectsEverything(selectorFromSet({}))).toBe(true);
    expect(selectsEverything(selectorFromSet(undefined))).toBe(true);
    expect(() => selectorFromSet({ a: "bad value" })).toThrow(SelectorParseError);
    const sel: LabelSelectorRequirementSet = selectorFromRequirements([newRequirement("b", "exists"), newRequirement("a", "!")]);
    expect(toString(sel)).toBe("!a,b");
    expect(matches(sel, { b: "" })).toBe(true);
  });
});
