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
 * OCM's cap on a `JsonRaw` feedback value: the length in bytes of its JSON text (the work
 * agent's `--max-json-raw-length`, default 1024; the ManifestWork CRD's `jsonRaw` maxLength).
 */
export const MAX_JSON_RAW_LENGTH = 1024;

/**
 * JSON text as Go's `json.Marshal` writes it, which is what OCM puts in `jsonRaw`: object keys
 * sorted, no spaces, and `<`, `>`, `&`, U+2028 and U+2029 escaped as `\u003c`-style sequences.
 */
export function goJson(v: unknown): string {
  const escape = (s: string) => JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  const walk = (x: unknown): string => {
    if (x === null || x === undefined) return "null";
    if (typeof x === "string") return escape(x);
    if (typeof x === "number" || typeof x === "boolean") return JSON.stringify(x);
    if (Array.isArray(x)) return `[${x.map(walk).join(",")}]`;
    const o = x as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${escape(k)}:${walk(o[k])}`)
      .join(",")}}`;
  };
  return walk(v);
}

/**
 * The typed field value of one JSON value, as OCM's status reader types it with its raw JSON
 * feedback (`RawFeedbackJsonString`) on: integers → `Integer`, strings → `String`, booleans →
 * `Boolean`, anything else (objects, lists, fractions) → `JsonRaw`, its {@link goJson} text.
 *
 * @param name the value's name, for the error message.
 * @throws Error when the JSON text is longer than {@link MAX_JSON_RAW_LENGTH} bytes (OCM's
 *   "the length of returned json raw string for name N is larger than the maximum length 1024").
 */
export function toFieldValue(v: unknown, name = ""): FieldValue {
  if (typeof v === "boolean") return { type: "Boolean", boolean: v };
  if (typeof v === "string") return { type: "String", string: v };
  if (typeof v === "number" && Number.isInteger(v)) return { type: "Integer", integer: v };
  const raw = goJson(v);
  if (Buffer.byteLength(raw, "utf8") > MAX_JSON_RAW_LENGTH) {
    throw new Error(`the length of returned json raw string for name ${name} is larger than the maximum length ${MAX_JSON_RAW_LENGTH}`);
  }
  return { type: "JsonRaw", jsonRaw: raw };
}

/**
 * Reads one rule. The path is evaluated on the whole object (`.spec…`, `.status…`); a path whose
 * first field is not a top-level field of the object is evaluated on `.status`, as OCM's reader
 * does (so OCM rules written as `.readyReplicas` keep working). A path matching nothing (or null)
 * gives no value and no error, as in OCM; a path matching several values gives them as one
 * `JsonRaw` list, as OCM's raw JSON feedback does.
 */
function readRule(obj: Obj, rule: JsonPathRule): FeedbackValue | undefined {
  const first = /^\{?\s*\.?([A-Za-z0-9_-]+)/.exec(rule.path)?.[1];
  const root = first !== undefined && !(first in obj) && typeof obj.status === "object" ? obj.status : obj;
  const found = evaluate(root, rule.path);
  if (found.length === 0) return undefined;
  const value = found.length === 1 ? found[0] : found;
  if (value === undefined || value === null) return undefined;
  return { name: rule.name, fieldValue: toFieldValue(value, rule.name) };
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
 *   rule that failed (bad path, a raw value over {@link MAX_JSON_RAW_LENGTH}); never throws.
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
