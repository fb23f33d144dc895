/**
 * ManifestWork `manifestConfigs[].conditionRules` (OCM `pkg/work/spoke/conditions`): conditions a
 * manifest gets from CEL expressions over its live object, and how they roll up into the work's
 * conditions. The CEL environments are the hub's (src/cel), loaded on first use so that an agent
 * whose works have no rules does not carry the CEL library in memory (its 60 MiB budget); this
 * module adds OCM's rule semantics. Pure: no I/O.
 *
 * Reasons (OCM `work/v1` constants; every rule-made condition's reason starts with
 * "ConditionRule", which is how the work-level roll-up recognises them):
 * - `ConditionRuleEvaluated`: True when every expression gave true, False at the first false;
 * - `ConditionRuleExpressionError`: False, an expression did not compile, failed to evaluate,
 *   gave a non-bool, or ran out of the cost budget; the message is the error;
 * - `ConditionRuleInvalid`: Unknown, the rule's type is not WellKnownConditions or CEL.
 */
import type { CelCompileError, CompiledCel } from "../../../src/cel/index.ts";
import type { ConditionRule, NewCondition, Obj } from "./types.ts";

/** A rule-made manifest condition, before `observedGeneration` and `lastTransitionTime`. */
export type RuleCondition = Omit<NewCondition, "observedGeneration">;

/** The prefix of every reason a condition rule sets (OCM `conditionRuleReasonPrefix`). */
export const CONDITION_RULE_REASON_PREFIX = "ConditionRule";

/**
 * OCM's WellKnownConditions (`conditions/rules/rule.go`), keyed `group/version/Kind` then
 * condition type: `Complete` for `batch/v1` Jobs (a Complete or Failed condition is True) and
 * core `v1` Pods (phase Succeeded or Failed).
 */
export const WELL_KNOWN_CONDITIONS: Readonly<Record<string, Readonly<Record<string, ConditionRule>>>> = {
  "batch/v1/Job": {
    Complete: {
      condition: "Complete",
      type: "CEL",
      celExpressions: [
        "hasConditions(object.status) ? object.status.conditions.filter(c, c.type == 'Complete' || c.type == 'Failed').exists(c, c.status == 'True') : false",
      ],
      messageExpression: 'result ? "Job is finished" : "Job is not finished"',
    },
  },
  "/v1/Pod": {
    Complete: {
      condition: "Complete",
      type: "CEL",
      celExpressions: ["object.status.phase in ['Succeeded', 'Failed']"],
      messageExpression: '"Pod is in phase " + object.status.phase',
    },
  },
};

type Cel = typeof import("../../../src/cel/index.ts");
let celModule: Promise<Cel> | undefined;
let cel!: Cel;

async function loadCel(): Promise<void> {
  cel = await (celModule ??= import("../../../src/cel/index.ts"));
}

const COMPILED_LIMIT = 512;
const compiled = new Map<string, CompiledCel | CelCompileError>();

function compileCached(kind: "rule" | "message", source: string): CompiledCel | CelCompileError {
  const key = `${kind}\0${source}`;
  const hit = compiled.get(key);
  if (hit) return hit;
  let out: CompiledCel | CelCompileError;
  try {
    out = kind === "rule" ? cel.compileObjectExpression(source) : cel.compileMessageExpression(source);
  } catch (e) {
    if (!(e instanceof cel.CelCompileError)) throw e;
    out = e;
  }
  if (compiled.size >= COMPILED_LIMIT) compiled.clear();
  compiled.set(key, out);
  return out;
}

/** Go's name of a CEL result's type, as OCM's "expected bool result, got T" shows it. */
function goType(v: unknown): string {
  if (typeof v === "bigint") return "int64";
  if (typeof v === "number") return "float64";
  if (typeof v === "string") return "string";
  if (v === null) return "structpb.NullValue";
  if (Array.isArray(v)) return "[]ref.Val";
  if (typeof v === "object") return "map[ref.Val]ref.Val";
  return typeof v;
}

interface Budget {
  remaining: number;
}

function evaluateRule(object: unknown, rule: ConditionRule, budget: Budget): RuleCondition {
  const type = rule.condition;
  let status: RuleCondition["status"] = "True";
  let reason = "ConditionRuleEvaluated";
  let error: string | undefined;
  for (const source of rule.celExpressions ?? []) {
    const c = compileCached("rule", source);
    if (c instanceof cel.CelCompileError) {
      status = "False";
      reason = "ConditionRuleExpressionError";
      error = c.detail;
      break;
    }
    const r = cel.evaluateCel(c, { object }, budget.remaining);
    budget.remaining = r.remaining;
    if (!r.ok) {
      status = "False";
      reason = "ConditionRuleExpressionError";
      error = r.error;
      break;
    }
    if (typeof r.value !== "boolean") {
      status = "False";
      reason = "ConditionRuleExpressionError";
      error = `expected bool result, got ${goType(r.value)}`;
      break;
    }
    if (!r.value) {
      status = "False";
      break;
    }
  }
  if (error !== undefined) return { type, status, reason, message: error };
  return { type, status, reason, message: ruleMessage(object, rule, status === "True", budget) };
}

function ruleMessage(object: unknown, rule: ConditionRule, result: boolean, budget: Budget): string {
  if (rule.messageExpression) {
    const c = compileCached("message", rule.messageExpression);
    if (c instanceof cel.CelCompileError) return c.detail;
    const r = cel.evaluateCel(c, { object, result }, budget.remaining);
    budget.remaining = r.remaining;
    if (!r.ok) return r.error;
    if (typeof r.value !== "string") return `expected message expression to have a string result, got ${goType(r.value)}`;
    if (r.value !== "") return r.value;
  }
  if (rule.message) return rule.message;
  return result ? `Manifest is ${rule.condition}` : `Manifest is not ${rule.condition}`;
}

/**
 * OCM's `ConditionReader.EvaluateConditions`: the conditions a manifest's rules give for its live
 * object, in rule order, sharing one cost budget (src/cel `RUNTIME_COST_BUDGET`). A
 * WellKnownConditions rule for a condition OCM does not know for the kind gives nothing; its
 * `message` and `messageExpression` override the well-known ones. Rejects only when the CEL
 * module cannot be loaded.
 *
 * @param obj the live object (JSON; integers become CEL ints).
 * @param group the object's API group ("" for core); `version` and `kind` pick the well-known rules.
 * @example await evaluateConditionRules(job, "batch", "v1", "Job", [{condition: "Complete", type: "WellKnownConditions"}])
 *   // [{type: "Complete", status: "True", reason: "ConditionRuleEvaluated", message: "Job is finished"}]
 */
export async function evaluateConditionRules(
  obj: Obj,
  group: string,
  version: string,
  kind: string,
  rules: readonly ConditionRule[],
): Promise<RuleCondition[]> {
  await loadCel();
  const object = cel.toCel(obj);
  const budget: Budget = { remaining: cel.RUNTIME_COST_BUDGET };
  const out: RuleCondition[] = [];
  for (const rule of rules) {
    if (rule.type === "WellKnownConditions") {
      const known = WELL_KNOWN_CONDITIONS[`${group}/${version}/${kind}`]?.[rule.condition];
      if (!known?.celExpressions?.length) continue;
      out.push(
        evaluateRule(
          object,
          { ...known, ...(rule.message ? { message: rule.message } : {}), ...(rule.messageExpression ? { messageExpression: rule.messageExpression } : {}) },
          budget,
        ),
      );
    } else if (rule.type === "CEL") {
      out.push(evaluateRule(object, rule, budget));
    } else {
      out.push({ type: rule.condition, status: "Unknown", reason: "ConditionRuleInvalid", message: `unrecognized condition rule type ${String(rule.type)}` });
    }
  }
  return out;
}

/** Whether a condition was set by a condition rule (its reason starts with "ConditionRule"). */
export function isRuleCondition(c: { reason: string }): boolean {
  return c.reason.startsWith(CONDITION_RULE_REASON_PREFIX);
}

/**
 * OCM's `newAggregateConditionFromRules`: the work-level condition of one type that rules set on
 * manifests. `Progressing` is True when any manifest's is True (then Unknown, then False); any
 * other type is False when any is False, Unknown when any is Unknown (or none is True), else
 * True. The message is the manifest's when exactly one manifest has the condition, else
 * "Aggregated from N manifest conditions"; the reason is `ConditionRulesAggregated`.
 *
 * @param statuses the statuses (and messages) of that type on the work's manifests.
 */
export function aggregateRuleCondition(type: string, items: readonly { status: string; message: string }[]): RuleCondition {
  const count = (s: string) => items.filter((i) => i.status === s).length;
  const [t, f, u] = [count("True"), count("False"), count("Unknown")];
  let status: RuleCondition["status"];
  if (type === "Progressing") status = t > 0 ? "True" : u > 0 ? "Unknown" : "False";
  else status = f > 0 ? "False" : u > 0 || t === 0 ? "Unknown" : "True";
  const withMessage = [...items].reverse().find((i) => i.message !== "");
  const total = t + f + u;
  const message = total === 1 && withMessage ? withMessage.message : `Aggregated from ${total} manifest conditions`;
  return { type, status, reason: "ConditionRulesAggregated", message };
}
