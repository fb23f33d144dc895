/**
 * ObjectMeta, the generic object shape and zod helpers shared by every kind.
 * Follows apimachinery `pkg/apis/meta/v1/types.go` (ObjectMeta) and the CRD structural-schema
 * behaviour: wrong types are 422 Invalid, unknown fields are 400 BadRequest under strict field
 * validation.
 */
import * as z from "zod";
import type { StatusCause } from "./errors.ts";
import type { ManagedFieldsEntry } from "./fieldmanager.ts";
import { CONDITION_MESSAGE_MAX_LENGTH, CONDITION_REASON_MAX_LENGTH, CONDITION_TYPE_MAX_LENGTH, validateConditions, type FieldError } from "./validation.ts";

/** metav1.OwnerReference. */
export const OwnerReferenceSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  uid: z.string(),
  controller: z.boolean().optional(),
  blockOwnerDeletion: z.boolean().optional(),
});

/** metav1.OwnerReference: an owner of an object (garbage collection, src/gc/controller.ts). */
export type OwnerReference = z.infer<typeof OwnerReferenceSchema>;

/**
 * metav1.ObjectMeta as a client may send it. Server-owned fields (uid, resourceVersion,
 * generation, creationTimestamp, deletionTimestamp) are accepted in the body and then set by the
 * server; `managedFields` may be sent on an update (`[]` resets them, src/k8s/fieldmanager.ts), and is kept by the server.
 */
export const ObjectMetaSchema = z.strictObject({
  name: z.string().optional(),
  generateName: z.string().optional(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().int().optional(),
  creationTimestamp: z.string().nullable().optional(),
  deletionTimestamp: z.string().nullable().optional(),
  deletionGracePeriodSeconds: z.number().int().nullable().optional(),
  labels: z.record(z.string(), z.string()).nullable().optional(),
  annotations: z.record(z.string(), z.string()).nullable().optional(),
  finalizers: z.array(z.string()).nullable().optional(),
  ownerReferences: z.array(OwnerReferenceSchema).nullable().optional(),
  managedFields: z.array(z.unknown()).nullable().optional(),
  selfLink: z.string().optional(),
});

/**
 * The schema of a whole object of a kind with a spec and a status subresource:
 * `{apiVersion, kind, metadata, spec, status}`, strict (unknown fields are reported). `spec` is
 * optional unless `specRequired`; `status` may be absent or null.
 */
export function objectSchema(spec: z.ZodType, status: z.ZodType, specRequired = false) {
  return z.strictObject({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: ObjectMetaSchema,
    spec: specRequired ? spec : spec.optional(),
    status: status.nullable().optional(),
  });
}

/** The metadata of a stored object: everything the server owns is present. */
export interface ObjectMeta {
  name: string;
  generateName?: string;
  namespace?: string;
  uid: string;
  resourceVersion: string;
  generation?: number;
  creationTimestamp: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  /** Who owns which fields (src/k8s/fieldmanager.ts). */
  managedFields?: ManagedFieldsEntry[];
}

/** A Kubernetes object as stored and served: apiVersion, kind, metadata, and kind-specific fields. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [field: string]: unknown;
}

/** A plain JSON object. */
export type JsonObject = Record<string, unknown>;

/** True for a non-null, non-array object. */
export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Formats a zod issue path the Kubernetes way: `spec.taints[0].key`. */
export function fieldPath(path: ReadonlyArray<PropertyKey>, prefix = ""): string {
  let out = prefix;
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out;
}

/** The outcome of checking a body against a kind's schema: unknown fields and invalid values apart. */
export interface SchemaCheck {
  unknownFields: string[];
  causes: StatusCause[];
  /** The schema's output when the value passed (no unknown field, no cause): what `schema.parse` returns, without parsing twice. */
  value?: unknown;
}

/**
 * Runs a zod schema over a request body and sorts its issues into unknown fields (Kubernetes:
 * `strict decoding error: unknown field "spec.foo"`, 400) and invalid values (422 causes with
 * the field path).
 */
export function checkSchema(schema: z.ZodType, value: unknown): SchemaCheck {
  // reportInput: zod 4 leaves the offending value out of its issues unless asked; an issue
  // without an input (or with undefined) is a missing field.
  const r = schema.safeParse(value, { reportInput: true });
  const out: SchemaCheck = { unknownFields: [], causes: [] };
  if (r.success) return { ...out, value: r.data };
  for (const issue of r.error.issues) {
    if (issue.code === "unrecognized_keys") {
      for (const k of issue.keys) out.unknownFields.push(fieldPath([...issue.path, k]));
      continue;
    }
    const field = fieldPath(issue.path);
    // A custom issue from addFieldErrors keeps its apimachinery cause (Duplicate value, Too long, ...).
    const cause = issue.code === "custom" ? (issue.params as { cause?: FieldError } | undefined)?.cause : undefined;
    if (cause) {
      const sub = cause.field;
      out.causes.push({ field: !sub ? field : !field || sub.startsWith("[") ? field + sub : `${field}.${sub}`, message: cause.message, reason: cause.reason });
      continue;
    }
    const reason = issue.input === undefined ? "FieldValueRequired" : "FieldValueInvalid";
    const message = reason === "FieldValueRequired" ? "Required value" : `Invalid value: ${describe(issue.input)}: ${issue.message}`;
    out.causes.push({ field, message, reason });
  }
  return out;
}

function describe(v: unknown): string {
  if (v === undefined) return "undefined";
  try {
    const s = JSON.stringify(v);
    return s.length > 80 ? `${s.slice(0, 77)}...` : s;
  } catch {
    return String(v);
  }
}

/**
 * Kubernetes metav1.Condition: the JSON shape (types, required fields, unknown fields). Its
 * values are checked as apimachinery's `ValidateCondition` does by {@link ConditionsSchema}
 * (src/k8s/validation.ts `validateConditions`); the `meta` here only documents the limits in
 * the OpenAPI schema, as the CRDs generated from metav1.Condition state them.
 */
export const ConditionSchema = z.strictObject({
  type: z.string().meta({
    maxLength: CONDITION_TYPE_MAX_LENGTH,
    pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
  }),
  status: z.enum(["True", "False", "Unknown"]),
  observedGeneration: z.number().int().meta({ minimum: 0 }).optional(),
  lastTransitionTime: z.string().meta({ format: "date-time" }),
  reason: z.string().meta({ minLength: 1, maxLength: CONDITION_REASON_MAX_LENGTH, pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$" }),
  message: z.string().meta({ maxLength: CONDITION_MESSAGE_MAX_LENGTH }),
});

/**
 * Adds the field errors of a src/k8s/validation.ts check to a zod refinement as custom issues
 * that keep their cause (reason and message; {@link checkSchema} reports them as they are). Each
 * error's field is relative to the refined value (`[1].type`, `[cpu]`) and is appended to the
 * value's own path (`status.conditions[1].type`, `capacity[cpu]`).
 */
export function addFieldErrors(ctx: z.RefinementCtx, value: unknown, errors: readonly FieldError[]): void {
  for (const e of errors) {
    ctx.addIssue({ code: "custom", message: e.message, input: value, params: { cause: { field: e.field, reason: e.reason, message: e.message } } });
  }
}

/**
 * A list of metav1.Condition as every status of the hub holds it: a map keyed by `type` (OCM's
 * and Kubernetes' `+listType=map`, `+listMapKey=type`), each condition validated as apimachinery's
 * `ValidateConditions` does (422 with causes such as `status.conditions[1].type: Duplicate value:
 * "Applied"` or `status.conditions[0].reason: Invalid value: "not ok": a condition reason must
 * start with ...`).
 */
export const ConditionsSchema = z
  .array(ConditionSchema)
  .meta({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] })
  .superRefine((list, ctx) => addFieldErrors(ctx, list, validateConditions(list, "")));

/** A metav1.Condition value. */
export type Condition = z.infer<typeof ConditionSchema>;

/**
 * Sets a condition the way apimachinery's `meta.SetStatusCondition` does: the
 * `lastTransitionTime` changes only when `status` changes. Returns true when anything changed.
 * `now` is an RFC 3339 time.
 */
export function setCondition(conditions: Condition[], next: Omit<Condition, "lastTransitionTime">, now: string): boolean {
  const i = conditions.findIndex((c) => c.type === next.type);
  if (i < 0) {
    conditions.push({ ...next, lastTransitionTime: now });
    return true;
  }
  const cur = conditions[i]!;
  if (cur.status === next.status && cur.reason === next.reason && cur.message === next.message && cur.observedGeneration === next.observedGeneration) {
    return false;
  }
  conditions[i] = {
    ...next,
    lastTransitionTime: cur.status === next.status ? cur.lastTransitionTime : now,
  };
  return true;
}

/** Finds a condition by type. */
export function findCondition(conditions: Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** The second (epoch seconds) {@link rfc3339} last formatted, and its text. */
let lastSecond: { s: number; text: string } = { s: NaN, text: "" };

/**
 * RFC 3339 time with second precision, as Kubernetes serialises metav1.Time, of an
 * epoch-milliseconds time. The last second's text is kept: a write stamps the same second
 * several times (creationTimestamp, its managedFields entry, conditions).
 * @throws RangeError for a time that is not a valid date (as `Date.prototype.toISOString`)
 */
export function rfc3339(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s === lastSecond.s) return lastSecond.text;
  const text = new Date(s * 1000).toISOString().replace(".000Z", "Z");
  lastSecond = { s, text };
  return text;
}

/**
 * An epoch-milliseconds time as Kubernetes serialises metav1.MicroTime: RFC 3339 in UTC with
 * exactly six fractional digits (`2006-01-02T15:04:05.000000Z07:00`), e.g. `2026-11-26T11:50:00.123000Z`.
 */
export function microTime(ms: number): string {
  // toISOString ends in `.sssZ`: three more digits before the Z.
  return `${new Date(ms).toISOString().slice(0, -1)}000Z`;
}
