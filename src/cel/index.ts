/**
 * Flotilla's CEL environments, built once with `@marcbachmann/cel-js` (no eval, runs in workerd
 * and Node), after OCM's:
 *
 * - the **cluster** environment of Placement `celSelector.celExpressions` (OCM
 *   `pkg/placement/helpers/cel.go` `NewEnv`: sdk-go's `ManagedClusterLib` + `JsonLib` +
 *   `BaseEnvOpts`): the variable `managedCluster` (the ManagedCluster as JSON), the member
 *   function `managedCluster.scores(name)` (the `status.scores` of the AddOnPlacementScore `name`
 *   in the cluster's namespace, as `[{name, value}]`; an error when it does not exist) and
 *   `string.parseJSON()`;
 * - the **object** environment of ManifestWork `conditionRules` (OCM
 *   `pkg/work/spoke/conditions/reader.go`): the variable `object` (the live resource) plus
 *   `hasConditions(status)`; the message environment adds `result` (the rule's bool outcome).
 *
 * Both carry the parts of Kubernetes' CEL libraries that `BaseEnvOpts` adds and OCM users write:
 * `semver(string[, normalize])`, `isSemver`, `Semver.major/minor/patch/isLessThan/isGreaterThan/
 * compareTo` (the version helpers), `quantity(string)`, `isQuantity`, `Quantity.isLessThan/
 * isGreaterThan/compareTo/asApproximateFloat/asInteger/isInteger/sign`, and cel-js's own string
 * extensions (`lowerAscii`, `split`, `join`, `trim`, `indexOf`, ...).
 *
 * **Cost**: OCM runs each expression with Kubernetes' per-call cost limit
 * ({@link PER_CALL_LIMIT}) and a budget per cluster (placements) or per manifest (condition
 * rules) of {@link RUNTIME_COST_BUDGET}. cel-js does not meter evaluation, so Flotilla bounds the
 * cost before evaluating: {@link estimateCost} computes an upper bound of the runtime cost from the
 * expression and the largest list/map and string of its input (a comprehension costs the size
 * of what it iterates times its body). An expression whose bound exceeds what is left is not
 * evaluated and fails as OCM's does when the budget runs out. Regular expressions given to
 * `matches` as literals are refused at compile time when they nest quantifiers (JavaScript's
 * backtracking engine could take exponential time where RE2 is linear).
 *
 * Values: JSON integers enter CEL as `int` (BigInt), other numbers as `double`; {@link fromCel}
 * turns results back into JSON values.
 *
 * @module
 */
import { Environment, type ASTNode } from "@marcbachmann/cel-js";
import { parseQuantity, QuantityError } from "../k8s/quantity.ts";
import { compareSemver, parseSemver, Semver } from "./semver.ts";

/** Kubernetes' `celconfig.PerCallLimit`: the most one expression may cost (cost units). */
export const PER_CALL_LIMIT = 1_000_000;
/** Kubernetes' `celconfig.RuntimeCELCostBudget`: the budget of one cluster's (or one manifest's) expressions (cost units). */
export const RUNTIME_COST_BUDGET = 10_000_000;

/** Thrown by the compile functions: `message` is OCM's placement text ("compilation failed: " + `detail`). */
export class CelCompileError extends Error {
  /** The compiler's issue alone ("ERROR: ..."), as OCM's condition rules report it. */
  readonly detail: string;
  constructor(detail: string, options?: ErrorOptions) {
    super(`compilation failed: ${detail}`, options);
    this.name = "CelCompileError";
    this.detail = detail;
  }
}

/** A parsed and type-checked expression of one environment. */
export interface CompiledCel {
  /** The expression as written. */
  readonly source: string;
  /** @internal the cel-js program. */
  readonly program: ((ctx: Record<string, unknown>) => unknown) & { ast: ASTNode };
}

/** The outcome of {@link evaluateCel}: a value, or OCM's error text; `remaining` is the budget left (cost units). */
export type CelOutcome = { ok: true; value: unknown; remaining: number } | { ok: false; error: string; remaining: number };

/** One item of `managedCluster.scores(name)`: a score's name and value (OCM sdk-go `clusterScores`). */
export interface CelScore {
  name: string;
  value: number;
}

/** Looks up the `status.scores` of AddOnPlacementScore `name` in namespace `cluster`; undefined when it does not exist. */
export type ScoreLookup = (cluster: string, name: string) => readonly CelScore[] | undefined;

/** A Kubernetes quantity in CEL (`quantity("1Gi")`), held as its approximate float value. */
class Quantity {
  constructor(
    readonly text: string,
    readonly value: number,
  ) {}
}

function quantityOf(text: string): Quantity {
  try {
    return new Quantity(text, parseQuantity(text));
  } catch (e) {
    if (e instanceof QuantityError) throw new Error(e.message, { cause: e });
    throw e;
  }
}

function cmpNum(a: number, b: number): bigint {
  return a < b ? -1n : a > b ? 1n : 0n;
}

const OPTIONS = { homogeneousAggregateLiterals: false };

function withBaseLibraries(env: Environment): Environment {
  return env
    .registerType("Semver", Semver)
    .registerFunction("semver(string): Semver", (s: string) => parseSemver(s))
    .registerFunction("semver(string, bool): Semver", (s: string, normalize: boolean) => parseSemver(s, normalize))
    .registerFunction("isSemver(string): bool", (s: string) => isValid(() => parseSemver(s)))
    .registerFunction("isSemver(string, bool): bool", (s: string, normalize: boolean) => isValid(() => parseSemver(s, normalize)))
    .registerFunction("Semver.major(): int", (v: Semver) => v.major)
    .registerFunction("Semver.minor(): int", (v: Semver) => v.minor)
    .registerFunction("Semver.patch(): int", (v: Semver) => v.patch)
    .registerFunction("Semver.isLessThan(Semver): bool", (a: Semver, b: Semver) => compareSemver(a, b) < 0)
    .registerFunction("Semver.isGreaterThan(Semver): bool", (a: Semver, b: Semver) => compareSemver(a, b) > 0)
    .registerFunction("Semver.compareTo(Semver): int", (a: Semver, b: Semver) => BigInt(compareSemver(a, b)))
    .registerType("Quantity", Quantity)
    .registerFunction("quantity(string): Quantity", quantityOf)
    .registerFunction("isQuantity(string): bool", (s: string) => isValid(() => quantityOf(s)))
    .registerFunction("Quantity.isLessThan(Quantity): bool", (a: Quantity, b: Quantity) => a.value < b.value)
    .registerFunction("Quantity.isGreaterThan(Quantity): bool", (a: Quantity, b: Quantity) => a.value > b.value)
    .registerFunction("Quantity.compareTo(Quantity): int", (a: Quantity, b: Quantity) => cmpNum(a.value, b.value))
    .registerFunction("Quantity.asApproximateFloat(): double", (a: Quantity) => a.value)
    .registerFunction("Quantity.isInteger(): bool", (a: Quantity) => Number.isInteger(a.value))
    .registerFunction("Quantity.sign(): int", (a: Quantity) => cmpNum(a.value, 0))
    .registerFunction("Quantity.asInteger(): int", (a: Quantity) => {
      if (!Number.isSafeInteger(a.value)) throw new Error(`cannot convert value to integer: ${a.text}`);
      return BigInt(a.value);
    });
}

function isValid(f: () => unknown): boolean {
  try {
    f();
    return true;
  } catch {
    return false;
  }
}

// The score lookup of the cluster being evaluated: evaluation is synchronous, so a module-level
// slot set around it (see matchCluster) is never seen by another evaluation.
let activeScores: ScoreLookup | undefined;

// The environments are built on first use: a process that never compiles an expression (an agent
// whose works have no condition rules) pays nothing for them.
let clusterEnvironment: Environment | undefined;
let objectEnvironment: Environment | undefined;
let messageEnvironment: Environment | undefined;
let ruleEnvironment: Environment | undefined;

function clusterEnv(): Environment {
  return (clusterEnvironment ??= withBaseLibraries(new Environment(OPTIONS))
    .registerVariable("managedCluster", "map")
    .registerFunction("map.scores(string): list", (cluster: Record<string, unknown>, name: string) => {
      const meta = cluster.metadata as Record<string, unknown> | undefined;
      const clusterName = typeof meta?.name === "string" ? meta.name : undefined;
      if (clusterName === undefined) throw new Error("failed to get cluster name");
      const found = activeScores?.(clusterName, name);
      if (!found) throw new Error(`failed to get score: addonplacementscores.cluster.open-cluster-management.io ${JSON.stringify(name)} not found`);
      return found.map((s) => ({ name: s.name, value: BigInt(s.value) }));
    })
    .registerFunction("string.parseJSON(): dyn", (s: string) => {
      try {
        return JSON.parse(s) as unknown;
      } catch (e) {
        throw new Error(`failed to parse json: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
    }));
}

function objectEnv(): Environment {
  return (objectEnvironment ??= withBaseLibraries(new Environment(OPTIONS))
    .registerVariable("object", "dyn")
    .registerFunction("hasConditions(dyn): bool", (status: unknown) => {
      if (typeof status !== "object" || status === null || Array.isArray(status)) return false;
      const conds = (status as Record<string, unknown>).conditions;
      return Array.isArray(conds) && conds.length > 0;
    }));
}

function ruleEnv(): Environment {
  return (ruleEnvironment ??= withBaseLibraries(new Environment(OPTIONS)).registerVariable("self", "dyn").registerVariable("oldSelf", "dyn"));
}

function messageEnv(): Environment {
  return (messageEnvironment ??= objectEnv().clone().registerVariable("result", "bool"));
}

/** Nested quantifiers (`(a+)+`, `(a|b*)*`) make a backtracking engine exponential. */
const NESTED_QUANTIFIER = /\((?:[^()\\]|\\.)*(?:[*+]|\{\d+,\d*\})(?:[^()\\]|\\.)*\)(?:[*+]|\{\d+,\d*\})/;

function walk(node: ASTNode, visit: (n: ASTNode) => void): void {
  visit(node);
  for (const child of children(node)) walk(child, visit);
}

function isNode(v: unknown): v is ASTNode {
  return typeof v === "object" && v !== null && "op" in v && "args" in v;
}

function children(node: ASTNode): ASTNode[] {
  const a = node.args as unknown;
  switch (node.op) {
    case "value":
    case "id":
      return [];
    case "call":
      return (node.args[1] as ASTNode[]).slice();
    case "rcall":
      return [node.args[1], ...node.args[2]];
    case "map":
      return node.args.flat();
    default:
      if (Array.isArray(a)) return (a as unknown[]).filter(isNode);
      return isNode(a) ? [a] : [];
  }
}

function compile(env: Environment, source: string): CompiledCel {
  let program: CompiledCel["program"];
  try {
    program = env.parse(source) as CompiledCel["program"];
    const checked = (program as unknown as { check(): { valid: boolean; error?: Error } }).check();
    if (!checked.valid) throw checked.error ?? new Error("invalid expression");
  } catch (e) {
    throw new CelCompileError(issueText(source, e), { cause: e });
  }
  walk(program.ast, (n) => {
    if (n.op !== "rcall" || n.args[0] !== "matches") return;
    const pattern = n.args[2][0];
    if (pattern?.op === "value" && typeof pattern.args === "string" && NESTED_QUANTIFIER.test(pattern.args)) {
      throw new CelCompileError(
        `ERROR: the regular expression ${JSON.stringify(pattern.args)} nests quantifiers, which Flotilla refuses (exponential backtracking)`,
      );
    }
  });
  return { source, program };
}

/**
 * A compile error in cel-go's words where the two differ (`ERROR: <input>:LINE:COLUMN: ...`,
 * "undeclared reference to 'x' (in container '')"), so OCM users see the messages they know.
 */
function issueText(source: string, e: unknown): string {
  const at = (e as { range?: { start?: number } } | undefined)?.range?.start ?? 0;
  const before = source.slice(0, at);
  const line = before.split("\n").length;
  const column = at - before.lastIndexOf("\n");
  const message = firstLine(e).replace(/^Unknown variable: (.*)$/, "undeclared reference to '$1' (in container '')");
  return `ERROR: <input>:${line}:${column}: ${message}`;
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split("\n")[0]!.trim();
}

/**
 * Compiles one Placement `celSelector` expression in the cluster environment.
 *
 * @throws CelCompileError ("compilation failed: ERROR: ...") for a syntax or type error, as OCM's
 *   `CELSelector.Compile` reports it; the scheduler turns it into a Misconfigured placement.
 */
export function compileClusterExpression(source: string): CompiledCel {
  return compile(clusterEnv(), source);
}

/** Compiles a condition rule's CEL expression (variable `object`). @throws CelCompileError */
export function compileObjectExpression(source: string): CompiledCel {
  return compile(objectEnv(), source);
}

/** Compiles a condition rule's `messageExpression` (variables `object` and `result`). @throws CelCompileError */
export function compileMessageExpression(source: string): CompiledCel {
  return compile(messageEnv(), source);
}

/**
 * Compiles a CustomResourceDefinition's `x-kubernetes-validations` rule (apiextensions'
 * `pkg/apiserver/schema/cel`): variables `self` (the value the rule sits on) and `oldSelf` (its
 * value before an update, for transition rules). @throws CelCompileError
 */
export function compileRuleExpression(source: string): CompiledCel {
  return compile(ruleEnv(), source);
}

/** Compiles a `x-kubernetes-validations` rule's `messageExpression` (variables `self`, `oldSelf`). @throws CelCompileError */
export function compileRuleMessageExpression(source: string): CompiledCel {
  return compile(ruleEnv(), source);
}

/** JSON → CEL: integers become BigInt (CEL `int`), recursively; other values stay. */
export function toCel(v: unknown): unknown {
  if (typeof v === "number") return Number.isInteger(v) ? BigInt(v) : v;
  if (Array.isArray(v)) return v.map(toCel);
  if (typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = toCel(x);
    return out;
  }
  return v;
}

/** CEL → JSON: BigInt becomes a number, recursively (Semver and Quantity values become their text). */
export function fromCel(v: unknown): unknown {
  if (typeof v === "bigint") return Number(v);
  if (v instanceof Semver) return v.toString();
  if (v instanceof Quantity) return v.text;
  if (Array.isArray(v)) return v.map(fromCel);
  if (v instanceof Map) return Object.fromEntries([...v.entries()].map(([k, x]) => [String(k), fromCel(x)]));
  if (typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = fromCel(x);
    return out;
  }
  return v;
}

/** The sizes a cost bound needs: the largest list or map (`collection`) and string (`string`) of an input. */
export interface InputBounds {
  collection: number;
  string: number;
}

const boundsCache = new WeakMap<object, InputBounds>();

/** The {@link InputBounds} of a JSON (or CEL) value; memoised per object. */
export function inputBounds(v: unknown): InputBounds {
  if (typeof v === "string") return { collection: 0, string: v.length };
  if (typeof v !== "object" || v === null) return { collection: 0, string: 0 };
  const hit = boundsCache.get(v);
  if (hit) return hit;
  const items: unknown[] = Array.isArray(v) ? v : Object.values(v);
  let collection = items.length;
  let string = Array.isArray(v) ? 0 : Math.max(0, ...Object.keys(v).map((k) => k.length));
  for (const x of items) {
    const b = inputBounds(x);
    if (b.collection > collection) collection = b.collection;
    if (b.string > string) string = b.string;
  }
  const out = { collection, string };
  boundsCache.set(v, out);
  return out;
}

const MACROS = new Set(["all", "exists", "exists_one", "map", "filter"]);

/**
 * An upper bound of the runtime cost of an expression (cel-go's units: 1 per node visited, string
 * functions 1 per 10 characters), given the largest collection and string it can meet. A
 * comprehension (`all`, `exists`, `exists_one`, `map`, `filter`) costs its range's size bound times
 * its body; a range is a literal list (its length), a `split` (the longest string), the result of
 * `map`/`filter` (its own range's bound) or input data (the largest collection).
 *
 * @returns cost units (may exceed {@link PER_CALL_LIMIT}).
 */
export function estimateCost(ast: ASTNode, bounds: InputBounds): number {
  const S = Math.max(1, bounds.collection);
  const L = Math.max(1, bounds.string);
  const strCost = Math.ceil(L / 10);
  const visit = (n: ASTNode): { cost: number; size: number } => {
    switch (n.op) {
      case "value":
        return { cost: 1, size: typeof n.args === "string" ? n.args.length : 1 };
      case "id":
        return { cost: 1, size: S };
      case "list":
      case "map": {
        let cost = 1;
        let size = 0;
        for (const c of children(n)) {
          const r = visit(c);
          cost += r.cost;
          size = Math.max(size, r.size);
        }
        return { cost, size: Math.max(n.args.length, size) };
      }
      case "rcall": {
        const [name, receiver, args] = n.args;
        const r = visit(receiver);
        if (MACROS.has(name)) {
          let body = 1;
          for (const a of args.slice(1)) body += visit(a).cost;
          return { cost: 1 + r.cost + r.size * body, size: name === "map" || name === "filter" ? r.size : 1 };
        }
        let cost = 1 + r.cost + strCost;
        for (const a of args) cost += visit(a).cost;
        return { cost, size: name === "split" ? L : S };
      }
      case "call": {
        let cost = 1 + strCost;
        for (const a of children(n)) cost += visit(a).cost;
        return { cost, size: S };
      }
      case "+": {
        const [a, b] = children(n).map(visit);
        return { cost: 1 + (a?.cost ?? 0) + (b?.cost ?? 0) + strCost, size: (a?.size ?? 0) + (b?.size ?? 0) };
      }
      default: {
        let cost = 1;
        for (const c of children(n)) cost += visit(c).cost;
        return { cost, size: S };
      }
    }
  };
  return visit(ast).cost;
}

const costCache = new WeakMap<CompiledCel, Map<string, number>>();

/** {@link estimateCost} memoised per expression and bounds (a scheduler run evaluates one expression over many similar clusters). */
function cachedCost(compiled: CompiledCel, bounds: InputBounds): number {
  let byBounds = costCache.get(compiled);
  if (!byBounds) costCache.set(compiled, (byBounds = new Map()));
  const key = `${bounds.collection},${bounds.string}`;
  let cost = byBounds.get(key);
  if (cost === undefined) {
    cost = estimateCost(compiled.program.ast, bounds);
    if (byBounds.size >= 64) byBounds.clear();
    byBounds.set(key, cost);
  }
  return cost;
}

/**
 * Evaluates a compiled expression against `vars` (JSON values; converted with {@link toCel}),
 * within `budget` cost units and {@link PER_CALL_LIMIT}. `extra` adds the bounds of data the
 * expression reaches through functions (the scores `managedCluster.scores(name)` returns). Never throws.
 *
 * @returns the CEL value (BigInt for ints), or the error text: cel-js's evaluation error
 *   ("No such key: x"), "operation cancelled: actual cost limit exceeded" past the per-call
 *   limit, or "CEL evaluation budget exceeded" past the budget (OCM's texts).
 */
export function evaluateCel(compiled: CompiledCel, vars: Record<string, unknown>, budget: number, extra?: InputBounds): CelOutcome {
  let bounds: InputBounds = extra ?? { collection: 0, string: 0 };
  for (const v of Object.values(vars)) {
    const b = inputBounds(v);
    bounds = { collection: Math.max(bounds.collection, b.collection), string: Math.max(bounds.string, b.string) };
  }
  const cost = cachedCost(compiled, bounds);
  if (cost > PER_CALL_LIMIT) return { ok: false, error: "operation cancelled: actual cost limit exceeded", remaining: budget };
  if (cost > budget) return { ok: false, error: "CEL evaluation budget exceeded", remaining: -1 };
  try {
    return { ok: true, value: compiled.program(vars), remaining: budget - cost };
  } catch (e) {
    // cel-go's wording for a missing key.
    return { ok: false, error: firstLine(e).replace(/^No such key:/, "no such key:"), remaining: budget - cost };
  }
}

/**
 * OCM's `CELSelector.Validate`: whether a cluster matches all of a predicate's compiled
 * expressions, evaluated in order within one {@link RUNTIME_COST_BUDGET}. An evaluation error, a
 * non-bool result or an exhausted budget is a non-match (OCM logs and returns false).
 *
 * @param managedCluster the ManagedCluster as CEL input (already through {@link toCel}).
 * @param scores the AddOnPlacementScores `managedCluster.scores(name)` reads.
 * @param scoreItems the most scores one of this cluster's AddOnPlacementScores holds (a cost bound).
 */
export function matchCluster(
  expressions: readonly CompiledCel[],
  managedCluster: Record<string, unknown>,
  scores: ScoreLookup | undefined,
  scoreItems = 0,
): boolean {
  let remaining = RUNTIME_COST_BUDGET;
  activeScores = scores;
  try {
    for (const e of expressions) {
      const r = evaluateCel(e, { managedCluster }, remaining, { collection: scoreItems, string: 0 });
      if (!r.ok || r.value !== true) return false;
      remaining = r.remaining;
    }
    return true;
  } finally {
    activeScores = undefined;
  }
}
