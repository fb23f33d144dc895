/**
 * Status feedback (OCM `pkg/work/spoke/statusfeedback`): the values a work's `feedbackRules`
 * read from a live object, reported in `resourceStatus.manifests[].statusFeedback.values` with
 * the condition `StatusFeedbackSynced`. Pure: no I/O.
 */
import { JsonPathError, evaluate } from "./jsonpath.ts";
import type { FeedbackRule, FeedbackValue, FieldValue, JsonPathRule, Obj } from "./types.ts";

/**
 * OCM's WellKnownStatus rules (`statusfeedback/rules/rule.go`), keyed `group/Kind` (core group
 * `""`). Kinds not listed (StatefulSet included, as in OCM) yield nothing.
 */
export const WELL_KNOWN_STATUS: Readonly<Record<string, readonly JsonPathRule[]>> = {
  "apps/Deployment": [
    { name: "ReadyReplicas", path: ".status.readyReplicas" },
    { name: "Replicas", path: ".status.replicas" },
    { name: "AvailableReplicas", path: ".status.availableReplicas" },
  ],
  "apps/DaemonSet": [
    { name: "NumberReady", path: ".status.numberReady" },
    { name: "DesiredNumberScheduled", path: ".status.desiredNumberScheduled" },
    { name: "NumberAvailable", path: ".status.numberAvailable" },
  ],
  "batch/Job": [
    { name: "JobComplete", path: '.status.conditions[?(@.type=="Complete")].status' },
    { name: "JobSucceeded", path: ".status.succeeded" },
  ],
  "/Pod": [
    { name: "PodReady", path: '.status.conditions[?(@.type=="Ready")].status' },
    { name: "PodPhase", path: ".status.phase" },
  ],
};

/** Result of {@link collectFeedback}: the values, and the errors of rules that could not be read. */
export interface FeedbackResult {
  values: FeedbackValue[];
  errors: string[];
}

/**
 * The typed field value of one JSON value: integers → `Integer`, strings → `String`, booleans →
 * `Boolean`.
 *
 * @throws Error for anything else (fractions, objects, arrays, null): OCM reports those only as
 *   `JsonRaw` behind a feature gate, which Flotilla does not implement.
 */
export function toFieldValue(v: unknown): FieldValue {
  if (typeof v === "boolean") return { type: "Boolean", boolean: v };
  if (typeof v === "string") return { type: "String", string: v };
  if (typeof v === "number" && Number.isInteger(v)) return { type: "Integer", integer: v };
  throw new Error(`value ${JSON.stringify(v)?.slice(0, 64)} is not an integer, string or boolean`);
}

/**
 * Reads one rule. The path is evaluated on the whole object (`.spec…`, `.status…`); a path whose
 * first field is not a top-level field of the object is evaluated on `.status`, as OCM's reader
 * does (so OCM rules written as `.readyReplicas` keep working). A path matching nothing gives no
 * value and no error, as in OCM; a path matching several values is an error.
 */
function readRule(obj: Obj, rule: JsonPathRule): FeedbackValue | undefined {
  const first = /^\{?\s*\.?([A-Za-z0-9_-]+)/.exec(rule.path)?.[1];
  const root = first !== undefined && !(first in obj) && typeof obj.status === "object" ? obj.status : obj;
  const found = evaluate(root, rule.path);
  if (found.length === 0 || found[0] === undefined || found[0] === null) return undefined;
  if (found.length > 1) throw new Error(`${rule.name}: path ${rule.path} selects ${found.length} values, not one`);
  try {
    return { name: rule.name, fieldValue: toFieldValue(found[0]) };
  } catch (e) {
    throw new Error(`${rule.name}: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * Applies a manifest's feedback rules to its live object.
 *
 * @param obj the live object as read from the member cluster.
 * @param group the object's API group ("" for core).
 * @param version the object's API version (for `jsonPaths[].version`).
 * @param kind the object's kind (for WellKnownStatus).
 * @param rules the matching `manifestConfigs[].feedbackRules`.
 * @returns values in rule order (WellKnownStatus values in OCM's order), and one message per
 *   rule that failed (bad path, several matches, unsupported type); never throws.
 * @example collectFeedback(deploy, "apps", "v1", "Deployment", [{type: "WellKnownStatus"}])
 *   // {values: [{name: "ReadyReplicas", fieldValue: {type: "Integer", integer: 2}}, …], errors: []}
 */
export function collectFeedback(obj: Obj, group: string, version: string, kind: string, rules: readonly FeedbackRule[]): FeedbackResult {
  const values: FeedbackValue[] = [];
  const errors: string[] = [];
  for (const rule of rules) {
    const paths = rule.type === "WellKnownStatus" ? (WELL_KNOWN_STATUS[`${group}/${kind}`] ?? []) : (rule.jsonPaths ?? []);
    for (const p of paths) {
      if (p.version && p.version !== version) continue;
      try {
        const v = readRule(obj, p);
        if (v && !values.some((x) => x.name === v.name)) values.push(v);
      } catch (e) {
        errors.push(e instanceof JsonPathError ? `${p.name}: ${e.message}` : (e as Error).message);
      }
    }
  }
  return { values, errors };
}
