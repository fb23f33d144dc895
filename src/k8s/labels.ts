/**
 * Kubernetes label selectors.
 *
 * Implements the semantics of k8s.io/apimachinery `pkg/labels` (the string
 * selector syntax used by `?labelSelector=` and `kubectl -l`, requirement
 * validation and matching) and of `metav1.LabelSelectorAsSelector` /
 * `ValidateLabelSelector` for the structured `metav1.LabelSelector` form used
 * in object specs (e.g. OCM Placement `labelSelector`).
 *
 * Pure module: no I/O and no platform globals beyond ES2023, so it runs both
 * in the Worker (hub) and in Node (agent).
 */
import { z } from "zod";
import {
  type FieldError,
  aggregateFieldErrors,
  childPath,
  fieldForbidden,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  formatFieldError,
  indexPath,
  isQualifiedName,
  isValidLabelValue,
  validateLabelName,
  validateLabels,
} from "./validation.ts";

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------

/**
 * A requirement operator, spelled like apimachinery's `selection.Operator`:
 * `=` / `==` (equals), `!=`, `in`, `notin`, `exists` (bare `key`), `!`
 * (`!key`, does not exist), `gt` / `lt` (`key>N` / `key<N`, integer compare).
 */
export type SelectorOperator = "=" | "==" | "!=" | "in" | "notin" | "exists" | "!" | "gt" | "lt";

/**
 * One validated requirement of a selector. `values` is sorted and
 * de-duplicated; it is empty for `exists` / `!`, has exactly one element for
 * `=`, `==`, `!=`, `gt`, `lt`, and at least one for `in` / `notin`.
 */
export interface Requirement {
  readonly key: string;
  readonly operator: SelectorOperator;
  readonly values: readonly string[];
}

/**
 * A parsed, validated label selector: the AND of its `requirements` (sorted
 * by key, as apimachinery does), or — when `matchesNothing` is true — the
 * selector that matches no object (`labels.Nothing()`, what a nil
 * `metav1.LabelSelector` converts to). Immutable (frozen).
 *
 * @example
 * parseSelector("env=prod,tier")
 * // { matchesNothing: false, requirements: [
 * //     { key: "env", operator: "=", values: ["prod"] },
 * //     { key: "tier", operator: "exists", values: [] } ] }
 */
export interface LabelSelectorRequirementSet {
  readonly requirements: readonly Requirement[];
  readonly matchesNothing: boolean;
}

/**
 * Thrown for an unparsable or invalid selector — a syntax error in the string
 * form, an invalid key or value, or an invalid operator / values combination.
 *
 * - `message`: apimachinery's error text, e.g.
 *   `unable to parse requirement: Invalid value: "-a": name part must consist of ...`,
 *   `found ',', expected: !, identifier, or 'end of string'`, or for a
 *   structured selector `matchExpressions[0].values: Required value: must be specified when ...`.
 * - `errors`: the individual field errors when the problem is a validation
 *   failure (empty for pure syntax errors); `field` is the path within the
 *   selector (`matchExpressions[0].values`, `matchLabels`, `values[0][key]`).
 * - `position`: for string selectors, the 0-based offset in `selector` of
 *   the offending token.
 * - `selector`: the string being parsed, if any.
 */
export class SelectorParseError extends Error {
  override readonly name = "SelectorParseError";
  readonly errors: readonly FieldError[];
  readonly position: number | undefined;
  readonly selector: string | undefined;

  constructor(message: string, details: { errors?: readonly FieldError[]; position?: number; selector?: string } = {}) {
    super(message);
    this.errors = details.errors ?? [];
    this.position = details.position;
    this.selector = details.selector;
  }
}

// ---------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------

function makeSet(requirements: Requirement[], matchesNothing: boolean): LabelSelectorRequirementSet {
  const sorted = requirements.map((r) => Object.freeze({ ...r, values: Object.freeze([...r.values]) }));
  // Array.prototype.sort is stable (ES2019), so equal keys keep their order.
  sorted.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return Object.freeze({ requirements: Object.freeze(sorted), matchesNothing });
}

const EVERYTHING = makeSet([], false);
const NOTHING = makeSet([], true);

/**
 * `labels.Everything()`: the selector with no requirements, matching every
 * object (including ones without labels).
 *
 * @example
 * matches(everything(), undefined) // true
 */
export function everything(): LabelSelectorRequirementSet {
  return EVERYTHING;
}

/**
 * `labels.Nothing()`: the selector matching no object. Its string form is
 * `""` (as in apimachinery), which parses back to {@link everything} — keep
 * the set, not the string, when the distinction matters.
 *
 * @example
 * matches(nothing(), {}) // false
 */
export function nothing(): LabelSelectorRequirementSet {
  return NOTHING;
}

function uniqSorted(values: readonly string[]): string[] {
  return [...new Set(values)].sort();
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Go's `strconv.ParseInt(s, 10, 64)`; `undefined` on syntax or range error. */
function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n < INT64_MIN || n > INT64_MAX ? undefined : n;
}

/** apimachinery's `NewRequirement` checks; `path` is the requirement's path ("" = none). */
function requirementErrors(key: string, op: string, values: readonly string[], path: string): FieldError[] {
  const errs: FieldError[] = [];
  const keyErrs = isQualifiedName(key);
  if (keyErrs.length > 0) errs.push(fieldInvalid(childPath(path, "key"), key, keyErrs.join("; ")));
  const valuesPath = childPath(path, "values");
  switch (op) {
    case "in":
    case "notin":
      if (values.length === 0) errs.push(fieldInvalid(valuesPath, values, "for 'in', 'notin' operators, values set can't be empty"));
      break;
    case "=":
    case "==":
    case "!=":
      if (values.length !== 1) errs.push(fieldInvalid(valuesPath, values, "exact-match compatibility requires one single value"));
      break;
    case "exists":
    case "!":
      if (values.length !== 0) errs.push(fieldInvalid(valuesPath, values, "values set must be empty for exists and does not exist"));
      break;
    case "gt":
    case "lt":
      if (values.length !== 1) errs.push(fieldInvalid(valuesPath, values, "for 'Gt', 'Lt' operators, exactly one value is required"));
      values.forEach((v, i) => {
        if (parseInt64(v) === undefined) {
          errs.push(fieldInvalid(indexPath(valuesPath, i), v, "for 'Gt', 'Lt' operators, the value must be an integer"));
        }
      });
      break;
    default:
      errs.push(fieldNotSupported(childPath(path, "operator"), op, ["in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!"]));
  }
  values.forEach((v, i) => {
    const valueErrs = isValidLabelValue(v);
    if (valueErrs.length > 0) errs.push(fieldInvalid(indexPath(indexPath(valuesPath, i), key), v, valueErrs.join("; ")));
  });
  return errs;
}

/**
 * `labels.NewRequirement`: builds one validated requirement. The key must be
 * a qualified name and each value a valid label value; `in`/`notin` need at
 * least one value, `=`/`==`/`!=` exactly one, `exists`/`!` none, and
 * `gt`/`lt` exactly one 64-bit integer. Values are sorted and de-duplicated.
 *
 * @throws {SelectorParseError} listing every problem (apimachinery's aggregate
 *   message, e.g. `values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty`).
 * @example
 * newRequirement("env", "in", ["prod", "dev"]) // { key: "env", operator: "in", values: ["dev", "prod"] }
 */
export function newRequirement(key: string, operator: SelectorOperator, values: readonly string[] = []): Requirement {
  const vals = uniqSorted(values);
  const errs = requirementErrors(key, operator, vals, "");
  if (errs.length > 0) throw new SelectorParseError(aggregateFieldErrors(errs), { errors: errs });
  return Object.freeze({ key, operator, values: Object.freeze(vals) });
}

/**
 * Builds a selector from requirements (apimachinery `NewSelector().Add(...)`):
 * requirements are ANDed and sorted by key; no requirements selects
 * everything.
 *
 * @example
 * toString(selectorFromRequirements([newRequirement("b", "exists"), newRequirement("a", "=", ["1"])])) // "a=1,b"
 */
export function selectorFromRequirements(requirements: readonly Requirement[]): LabelSelectorRequirementSet {
  return makeSet([...requirements], false);
}

/**
 * `labels.ValidatedSelectorFromSet`: a selector requiring each `key=value`
 * of `set` (empty/undefined selects everything).
 *
 * @throws {SelectorParseError} if a key or value is invalid.
 * @example
 * matches(selectorFromSet({ app: "web" }), { app: "web", tier: "fe" }) // true
 */
export function selectorFromSet(set: Record<string, string> | null | undefined): LabelSelectorRequirementSet {
  if (!set) return EVERYTHING;
  return makeSet(
    Object.entries(set).map(([k, v]) => newRequirement(k, "=", [v])),
    false,
  );
}

// ---------------------------------------------------------------------------
// String syntax: lexer
// ---------------------------------------------------------------------------

type TokenType = "error" | "eos" | "(" | ")" | "," | "!" | "=" | "==" | "!=" | ">" | "<" | "in" | "notin" | "ident";

interface ScannedItem {
  tok: TokenType;
  lit: string;
  pos: number;
}

const LITERAL_TOKENS: ReadonlyMap<string, TokenType> = new Map<string, TokenType>([
  [")", ")"],
  [",", ","],
  ["!", "!"],
  ["==", "=="],
  ["=", "="],
  [">", ">"],
  ["in", "in"],
  ["<", "<"],
  ["!=", "!="],
  ["notin", "notin"],
  ["(", "("],
]);

function isWhitespace(ch: string): boolean {
  return ch === " " || ch === "\t" || ch === "\r" || ch === "\n";
}

function isSpecialSymbol(ch: string): boolean {
  return ch === "=" || ch === "!" || ch === "(" || ch === ")" || ch === "," || ch === ">" || ch === "<";
}

/** Splits `s` into tokens, always ending with an `eos` item. */
function lex(s: string): ScannedItem[] {
  const items: ScannedItem[] = [];
  let i = 0;
  for (;;) {
    while (i < s.length && isWhitespace(s[i] as string)) i++;
    const start = i;
    if (i >= s.length) {
      items.push({ tok: "eos", lit: "", pos: start });
      return items;
    }
    if (isSpecialSymbol(s[i] as string)) {
      // Longest run of special symbols that forms a known operator.
      let buffer = "";
      let last: ScannedItem | undefined;
      while (i < s.length && isSpecialSymbol(s[i] as string)) {
        const candidate = buffer + (s[i] as string);
        const tok = LITERAL_TOKENS.get(candidate);
        if (tok !== undefined) {
          last = { tok, lit: candidate, pos: start };
        } else if (last !== undefined) {
          break;
        }
        buffer = candidate;
        i++;
      }
      items.push(last ?? { tok: "error", lit: `error expected: keyword found '${buffer}'`, pos: start });
      continue;
    }
    while (i < s.length && !isSpecialSymbol(s[i] as string) && !isWhitespace(s[i] as string)) i++;
    const word = s.slice(start, i);
    items.push({ tok: LITERAL_TOKENS.get(word) ?? "ident", lit: word, pos: start });
  }
}

// ---------------------------------------------------------------------------
// String syntax: parser
// ---------------------------------------------------------------------------

/** In a values context the keywords `in` / `notin` are plain identifiers. */
type ParserContext = "keyAndOperator" | "values";

class SyntaxProblem {
  constructor(
    readonly message: string,
    readonly position: number,
    readonly errors: readonly FieldError[] = [],
  ) {}
}

class Parser {
  private position = 0;
  private readonly items: ScannedItem[];

  constructor(private readonly input: string) {
    this.items = lex(input);
  }

  private item(index: number): ScannedItem {
    // The eos item is always last; never read past it.
    return this.items[Math.min(index, this.items.length - 1)] as ScannedItem;
  }

  private static inContext(item: ScannedItem, ctx: ParserContext): ScannedItem {
    if (ctx === "values" && (item.tok === "in" || item.tok === "notin")) return { ...item, tok: "ident" };
    return item;
  }

  private lookahead(ctx: ParserContext): ScannedItem {
    return Parser.inContext(this.item(this.position), ctx);
  }

  private consume(ctx: ParserContext): ScannedItem {
    const it = this.item(this.position);
    this.position++;
    return Parser.inContext(it, ctx);
  }

  parse(): Requirement[] {
    const requirements: Requirement[] = [];
    for (;;) {
      const next = this.lookahead("values");
      switch (next.tok) {
        case "ident":
        case "!": {
          let r: Requirement;
          try {
            r = this.parseRequirement();
          } catch (e) {
            if (e instanceof SyntaxProblem) {
              throw new SyntaxProblem(`unable to parse requirement: ${e.message}`, e.position, e.errors);
            }
            throw e;
          }
          requirements.push(r);
          const after = this.consume("values");
          if (after.tok === "eos") return requirements;
          if (after.tok === ",") {
            const t2 = this.lookahead("values");
            if (t2.tok !== "ident" && t2.tok !== "!") {
              throw new SyntaxProblem(`found '${t2.lit}', expected: identifier after ','`, t2.pos);
            }
            break;
          }
          throw new SyntaxProblem(`found '${after.lit}', expected: ',' or 'end of string'`, after.pos);
        }
        case "eos":
          return requirements;
        default:
          throw new SyntaxProblem(`found '${next.lit}', expected: !, identifier, or 'end of string'`, next.pos);
      }
    }
  }

  private parseRequirement(): Requirement {
    const start = this.item(this.position).pos;
    const [key, inferred] = this.parseKeyAndInferOperator();
    let operator: SelectorOperator;
    let values: string[];
    if (inferred !== undefined) {
      operator = inferred;
      values = [];
    } else {
      operator = this.parseOperator();
      values = operator === "in" || operator === "notin" ? this.parseValues() : this.parseExactValue();
    }
    const vals = uniqSorted(values);
    const errs = requirementErrors(key, operator, vals, "");
    if (errs.length > 0) throw new SyntaxProblem(aggregateFieldErrors(errs), start, errs);
    return { key, operator, values: vals };
  }

  private parseKeyAndInferOperator(): [string, SelectorOperator | undefined] {
    let operator: SelectorOperator | undefined;
    let t = this.consume("values");
    if (t.tok === "!") {
      operator = "!";
      t = this.consume("values");
    }
    if (t.tok !== "ident") throw new SyntaxProblem(`found '${t.lit}', expected: identifier`, t.pos);
    const keyErrs = isQualifiedName(t.lit);
    if (keyErrs.length > 0) {
      const err = fieldInvalid("", t.lit, keyErrs.join("; "));
      throw new SyntaxProblem(formatFieldError(err), t.pos, [err]);
    }
    const next = this.lookahead("values");
    if ((next.tok === "eos" || next.tok === ",") && operator === undefined) operator = "exists";
    return [t.lit, operator];
  }

  private parseOperator(): SelectorOperator {
    const t = this.consume("keyAndOperator");
    switch (t.tok) {
      case "in":
        return "in";
      case "=":
        return "=";
      case "==":
        return "==";
      case ">":
        return "gt";
      case "<":
        return "lt";
      case "notin":
        return "notin";
      case "!=":
        return "!=";
      default:
        throw new SyntaxProblem(`found '${t.lit}', expected: in, notin, =, ==, !=, gt, lt`, t.pos);
    }
  }

  private parseValues(): string[] {
    const open = this.consume("values");
    if (open.tok !== "(") throw new SyntaxProblem(`found '${open.lit}' expected: '('`, open.pos);
    const next = this.lookahead("values");
    switch (next.tok) {
      case "ident":
      case ",": {
        const list = this.parseIdentifiersList();
        const close = this.consume("values");
        if (close.tok !== ")") throw new SyntaxProblem(`found '${close.lit}', expected: ')'`, close.pos);
        return list;
      }
      case ")":
        this.consume("values");
        return [""]; // "()" means the single empty value
      default:
        throw new SyntaxProblem(`found '${next.lit}', expected: ',', ')' or identifier`, next.pos);
    }
  }

  private parseIdentifiersList(): string[] {
    const values: string[] = [];
    for (;;) {
      const t = this.consume("values");
      switch (t.tok) {
        case "ident": {
          values.push(t.lit);
          const t2 = this.lookahead("values");
          if (t2.tok === ",") continue;
          if (t2.tok === ")") return values;
          throw new SyntaxProblem(`found '${t2.lit}', expected: ',' or ')'`, t2.pos);
        }
        case ",": {
          // Empty list elements ("(,a)", "(a,)", "(a,,b)", "(a,,)", "(a,,,)") are the empty
          // value, as apimachinery's parser takes them (its selector tests list each as valid).
          if (values.length === 0) values.push("");
          while (this.lookahead("values").tok === ",") {
            this.consume("values");
            values.push("");
          }
          if (this.lookahead("values").tok === ")") {
            values.push("");
            return values;
          }
          break;
        }
        default:
          throw new SyntaxProblem(`found '${t.lit}', expected: ',', or identifier`, t.pos);
      }
    }
  }

  private parseExactValue(): string[] {
    const next = this.lookahead("values");
    if (next.tok === "eos" || next.tok === ",") return [""]; // "a=" means the empty value
    const t = this.consume("values");
    if (t.tok === "ident") return [t.lit];
    throw new SyntaxProblem(`found '${t.lit}', expected: identifier`, t.pos);
  }

  run(): LabelSelectorRequirementSet {
    try {
      return makeSet(this.parse(), false);
    } catch (e) {
      if (e instanceof SyntaxProblem) {
        throw new SelectorParseError(e.message, { errors: e.errors, position: e.position, selector: this.input });
      }
      throw e;
    }
  }
}

/**
 * `labels.Parse`: parses the string selector syntax of `?labelSelector=` and
 * `kubectl -l`.
 *
 * Grammar: comma-separated requirements, all ANDed; whitespace (space, tab,
 * CR, LF) is ignored between tokens. A requirement is one of
 * `key=value`, `key==value`, `key!=value`, `key in (v1,v2)`,
 * `key notin (v1)`, `key` (exists), `!key` (does not exist), or
 * `key>N` / `key<N` (integer comparison; both the label value and `N` must
 * parse as 64-bit integers). `key=` and `key in ()` mean the empty value.
 * Keys must be qualified names and values valid label values. `in` and
 * `notin` are keywords only in operator position (`in in (notin)` is valid).
 * The empty (or all-whitespace) string selects everything.
 *
 * @throws {SelectorParseError} with apimachinery's message, e.g.
 *   `found ',', expected: !, identifier, or 'end of string'` for `",a"`,
 *   `found '', expected: identifier after ','` for `"a,"`,
 *   `unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt` for `"a b"`,
 *   `unable to parse requirement: Invalid value: "-a": name part must consist of ...` for `"-a=b"`;
 *   `position` is the offset of the offending token.
 * @example
 * const sel = parseSelector("env in (prod, staging), !canary, tier");
 * matches(sel, { env: "prod", tier: "fe" }) // true
 * toString(sel)                             // "!canary,env in (prod,staging),tier"
 */
export function parseSelector(s: string): LabelSelectorRequirementSet {
  return new Parser(s).run();
}

// ---------------------------------------------------------------------------
// Structured form (metav1.LabelSelector)
// ---------------------------------------------------------------------------

/** The operators of `metav1.LabelSelectorRequirement`. */
export const LABEL_SELECTOR_OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"] as const;

/** A `metav1.LabelSelectorOperator`. */
export type LabelSelectorOperator = (typeof LABEL_SELECTOR_OPERATORS)[number];

/**
 * Zod schema for `metav1.LabelSelectorRequirement`
 * (`{ key, operator: "In"|"NotIn"|"Exists"|"DoesNotExist", values? }`),
 * strict: unknown fields are rejected. Structural only — use
 * {@link validateLabelSelector} for key/value syntax and operator/values
 * consistency.
 */
// Built in pure-annotated thunks so that a bundle that does not use the schemas (the simulated
// cluster parses selectors with this module) leaves them, and zod, out.
export const LabelSelectorRequirementSchema = /* @__PURE__ */ (() =>
  z.strictObject({
    key: z.string(),
    operator: z.enum(LABEL_SELECTOR_OPERATORS),
    values: z.array(z.string()).optional(),
  }))();

/**
 * Zod schema for the structured selector `metav1.LabelSelector`
 * (`{ matchLabels?: Record<string,string>, matchExpressions?: LabelSelectorRequirement[] }`),
 * strict: unknown fields (at either level) are rejected. Structural only —
 * follow it with {@link validateLabelSelector} (or {@link fromLabelSelector},
 * which validates) for Kubernetes' semantic rules.
 *
 * @example
 * LabelSelectorSchema.parse({ matchLabels: { env: "prod" } })        // ok
 * LabelSelectorSchema.safeParse({ matchLabel: { env: "prod" } }).success // false (unknown key)
 */
export const LabelSelectorSchema = /* @__PURE__ */ (() =>
  z.strictObject({
    matchLabels: z.record(z.string(), z.string()).optional(),
    matchExpressions: z.array(LabelSelectorRequirementSchema).optional(),
  }))();

/** A structured `metav1.LabelSelector`, as accepted by {@link LabelSelectorSchema}. */
export type LabelSelector = z.infer<typeof LabelSelectorSchema>;

/**
 * The loosely-typed input accepted by {@link fromLabelSelector} and
 * {@link validateLabelSelector}: a {@link LabelSelector} whose operators and
 * lists have not been checked yet (e.g. decoded JSON); `null` lists are
 * treated as absent, as Kubernetes' JSON decoding does.
 */
export interface LabelSelectorInput {
  matchLabels?: Record<string, string> | null;
  matchExpressions?: readonly { key: string; operator: string; values?: readonly string[] | null }[] | null;
}

/**
 * `metav1validation.ValidateLabelSelector`: checks a structured selector.
 * `null`/`undefined` is valid (it selects nothing). Errors, with paths under
 * `fieldPath`:
 *
 * - `matchLabels`: invalid keys / values (FieldValueInvalid, as {@link validateLabels});
 * - `matchExpressions[i].operator`: unknown operator (FieldValueInvalid, `not a valid selector operator`);
 * - `matchExpressions[i].values`: empty for `In`/`NotIn` (FieldValueRequired,
 *   ``must be specified when `operator` is 'In' or 'NotIn'``) or non-empty for
 *   `Exists`/`DoesNotExist` (FieldValueForbidden,
 *   ``may not be specified when `operator` is 'Exists' or 'DoesNotExist'``);
 * - `matchExpressions[i].key`: not a qualified name (FieldValueInvalid);
 * - `matchExpressions[i].values[j]`: not a valid label value (FieldValueInvalid).
 *
 * @example
 * validateLabelSelector({ matchExpressions: [{ key: "env", operator: "In" }] }, "spec.selector")
 * // [{ field: "spec.selector.matchExpressions[0].values", reason: "FieldValueRequired",
 * //    message: "Required value: must be specified when `operator` is 'In' or 'NotIn'" }]
 */
export function validateLabelSelector(sel: LabelSelectorInput | null | undefined, fieldPath: string): FieldError[] {
  const errs: FieldError[] = [];
  if (sel === null || sel === undefined) return errs;
  errs.push(...validateLabels(sel.matchLabels, childPath(fieldPath, "matchLabels")));
  (sel.matchExpressions ?? []).forEach((expr, i) => {
    const exprPath = indexPath(childPath(fieldPath, "matchExpressions"), i);
    const valuesPath = childPath(exprPath, "values");
    const values = expr.values ?? [];
    switch (expr.operator) {
      case "In":
      case "NotIn":
        if (values.length === 0) errs.push(fieldRequired(valuesPath, "must be specified when `operator` is 'In' or 'NotIn'"));
        break;
      case "Exists":
      case "DoesNotExist":
        if (values.length > 0) errs.push(fieldForbidden(valuesPath, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
        break;
      default:
        errs.push(fieldInvalid(childPath(exprPath, "operator"), expr.operator, "not a valid selector operator"));
    }
    errs.push(...validateLabelName(typeof expr.key === "string" ? expr.key : String(expr.key), childPath(exprPath, "key")));
    values.forEach((v, j) => {
      for (const msg of isValidLabelValue(v)) errs.push(fieldInvalid(indexPath(valuesPath, j), v, msg));
    });
  });
  return errs;
}

const STRUCTURED_OPERATORS: Readonly<Record<LabelSelectorOperator, SelectorOperator>> = {
  In: "in",
  NotIn: "notin",
  Exists: "exists",
  DoesNotExist: "!",
};

/**
 * `metav1.LabelSelectorAsSelector`: converts a structured selector.
 *
 * - `null` / `undefined` → {@link nothing} (matches no object);
 * - `{}` (no matchLabels and no matchExpressions) → {@link everything};
 * - otherwise each `matchLabels` entry becomes `key=value` and each
 *   expression `key in (...)`, `key notin (...)`, `key` or `!key`, all ANDed.
 *
 * The selector is validated first with {@link validateLabelSelector}
 * (paths relative to `fieldPath`, default `""`).
 *
 * @throws {SelectorParseError} whose `errors` are the field errors and whose
 *   message is their aggregate, e.g.
 *   `matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'`.
 * @example
 * const sel = fromLabelSelector({ matchLabels: { app: "web" }, matchExpressions: [{ key: "env", operator: "NotIn", values: ["dev"] }] });
 * toString(sel)                 // "app=web,env notin (dev)"
 * matches(sel, { app: "web" })  // true (env absent satisfies notin)
 * selectsEverything(fromLabelSelector({}))        // true
 * matches(fromLabelSelector(null), { app: "web" }) // false
 */
export function fromLabelSelector(sel: LabelSelectorInput | null | undefined, fieldPath = ""): LabelSelectorRequirementSet {
  if (sel === null || sel === undefined) return NOTHING;
  const errs = validateLabelSelector(sel, fieldPath);
  if (errs.length > 0) throw new SelectorParseError(aggregateFieldErrors(errs), { errors: errs });
  const labels = Object.entries(sel.matchLabels ?? {});
  const exprs = sel.matchExpressions ?? [];
  if (labels.length + exprs.length === 0) return EVERYTHING;
  const reqs: Requirement[] = labels.map(([k, v]) => ({ key: k, operator: "=", values: [v] }));
  for (const e of exprs) {
    const op = STRUCTURED_OPERATORS[e.operator as LabelSelectorOperator];
    reqs.push({ key: e.key, operator: op, values: uniqSorted(e.values ?? []) });
  }
  return makeSet(reqs, false);
}

// ---------------------------------------------------------------------------
// Matching and rendering
// ---------------------------------------------------------------------------

function requirementMatches(r: Requirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = has ? labels[r.key] : undefined;
  switch (r.operator) {
    case "in":
    case "=":
    case "==":
      return value !== undefined && r.values.includes(value);
    case "notin":
    case "!=":
      return value === undefined || !r.values.includes(value);
    case "exists":
      return has;
    case "!":
      return !has;
    case "gt":
    case "lt": {
      if (value === undefined || r.values.length !== 1) return false;
      const lhs = parseInt64(value);
      const rhs = parseInt64(r.values[0] as string);
      if (lhs === undefined || rhs === undefined) return false;
      return r.operator === "gt" ? lhs > rhs : lhs < rhs;
    }
    default:
      return false;
  }
}

/**
 * `Selector.Matches`: whether an object's labels satisfy every requirement.
 * `undefined` labels are treated as no labels. Absent keys satisfy `!=`,
 * `notin` and `!key`, and fail `=`, `==`, `in`, `key`, `>` and `<`.
 * {@link nothing} matches nothing; {@link everything} matches everything.
 *
 * @example
 * matches(parseSelector("env!=prod"), {})              // true
 * matches(parseSelector("env in (a,b)"), { env: "b" }) // true
 * matches(parseSelector("replicas>2"), { replicas: "3" }) // true
 */
export function matches(selector: LabelSelectorRequirementSet, labels: Record<string, string> | null | undefined): boolean {
  if (selector.matchesNothing) return false;
  const ls = labels ?? {};
  return selector.requirements.every((r) => requirementMatches(r, ls));
}

/**
 * `Selector.Empty`: true if the selector has no requirements and so matches
 * every object; false for {@link nothing}.
 *
 * @example
 * selectsEverything(parseSelector(""))     // true
 * selectsEverything(fromLabelSelector(null)) // false
 */
export function selectsEverything(selector: LabelSelectorRequirementSet): boolean {
  return !selector.matchesNothing && selector.requirements.length === 0;
}

function requirementToString(r: Requirement): string {
  const vals = r.values.length === 1 ? (r.values[0] as string) : [...r.values].sort().join(",");
  switch (r.operator) {
    case "exists":
      return r.key;
    case "!":
      return `!${r.key}`;
    case "=":
    case "==":
    case "!=":
      return `${r.key}${r.operator}${vals}`;
    case "gt":
      return `${r.key}>${vals}`;
    case "lt":
      return `${r.key}<${vals}`;
    case "in":
    case "notin":
      return `${r.key} ${r.operator} (${vals})`;
    default:
      return r.key;
  }
}

/**
 * `Selector.String`: the canonical string form — requirements sorted by
 * key, values sorted, joined with `,` and no spaces except around
 * `in`/`notin` (e.g. `a=b,c in (x,y),!d`). `==` is kept as written; the
 * result parses back to an equivalent selector. {@link everything} and
 * {@link nothing} both render as `""` (as in apimachinery).
 *
 * @example
 * toString(parseSelector(" b notin ( y , x ),a==1 ")) // "a==1,b notin (x,y)"
 */
export function toString(selector: LabelSelectorRequirementSet): string {
  if (selector.matchesNothing) return "";
  return selector.requirements.map(requirementToString).join(",");
}

/**
 * Convenience: `fromLabelSelector(sel)` then {@link matches}. A `null` /
 * `undefined` selector matches nothing; `{}` matches everything.
 *
 * @throws {SelectorParseError} if the selector is invalid.
 * @example
 * matchesLabelSelector({ matchLabels: { env: "prod" } }, { env: "prod" }) // true
 */
export function matchesLabelSelector(sel: LabelSelectorInput | null | undefined, labels: Record<string, string> | null | undefined): boolean {
  return matches(fromLabelSelector(sel), labels);
}
