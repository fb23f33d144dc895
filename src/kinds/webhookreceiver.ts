/**
 * WebhookReceiver (`flotilla.dev/v1alpha1`, namespaced), after Flux's notification-controller
 * Receiver: an unguessable URL, `POST /hooks/<id>`, that acts on one object of the receiver's
 * namespace when a delivery signed with the Secret's `token` arrives (src/webhook/).
 *
 * spec:
 * - `type`: `generic` (`X-Signature-256`, `X-Delivery-Id`) or `github` (`X-Hub-Signature-256`,
 *   `X-GitHub-Delivery`, `X-GitHub-Event: ping` answered without acting).
 * - `secretRef.name`: a Secret in the same namespace whose `data.token` is the HMAC key.
 * - `target`: `{apiVersion, kind, name}` of a ManifestWorkReplicaSet
 *   (`work.open-cluster-management.io/v1alpha1`) or a Placement
 *   (`cluster.open-cluster-management.io/v1beta1`) in the same namespace.
 * - `action`: `Reevaluate` (no patch), `MergePatch` (`patch` an RFC 7386 object) or `JSONPatch`
 *   (`patch` an RFC 6902 array); string values may hold payload templates `{{ .a.b }}`
 *   (src/kinds/webhook-template.ts; in a JSON Patch, only in `value`).
 *
 * A delivery writes the target as the receiver's own identity (src/webhook/receiver.ts
 * `receiverUser`), so a replica set's executor it would set or change is admitted only when that
 * identity may `execute-as` it (src/kinds/manifestwork-executor.ts).
 *
 * status (hub-owned, rewritten on every write): `webhookPath` `/hooks/<hex SHA-256 of a random
 * per-receiver token + namespace + name>` (Flux's scheme with a random token instead of the
 * Secret's, so rotating the Secret does not move the URL), chosen on create and kept across
 * updates; `observedGeneration`; condition `Ready`.
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition, WriteContext } from "../k8s/kind.ts";
import { ConditionsSchema, isJsonObject, objectSchema, rfc3339, type Condition, type KubeObject } from "../k8s/meta.ts";
import { isDNS1123Subdomain } from "../k8s/validation.ts";
import { jsonPatchErrors } from "../k8s/jsonpatch.ts";
import { stringsOf, templateError } from "./webhook-template.ts";
import { sha256Hex } from "./bootstraptoken.ts";

/** The kinds a receiver may target, by apiVersion and kind. */
export const RECEIVER_TARGETS = [
  { apiVersion: "work.open-cluster-management.io/v1alpha1", kind: "ManifestWorkReplicaSet" },
  { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement" },
] as const;

/** The prefix of every receiver's path. */
export const HOOKS_PREFIX = "/hooks/";

/** `WebhookReceiver.spec`. */
export interface WebhookReceiverSpec {
  type: "generic" | "github";
  secretRef: { name: string };
  target: { apiVersion: string; kind: string; name: string };
  action: { type: "Reevaluate" | "MergePatch" | "JSONPatch"; patch?: unknown };
}

const SpecSchema = z.strictObject({
  type: z.enum(["generic", "github"]),
  secretRef: z.strictObject({ name: z.string().min(1) }),
  target: z.strictObject({ apiVersion: z.string().min(1), kind: z.string().min(1), name: z.string().min(1) }),
  action: z.strictObject({
    type: z.enum(["Reevaluate", "MergePatch", "JSONPatch"]),
    patch: z.unknown().optional(),
  }),
});

const StatusSchema = z.strictObject({
  webhookPath: z.string().optional(),
  observedGeneration: z.number().int().optional(),
  conditions: ConditionsSchema.optional(),
});

function nameErrors(value: string, field: string): StatusCause[] {
  return isDNS1123Subdomain(value).map((m) => ({ field, message: `Invalid value: ${JSON.stringify(value)}: ${m}` }));
}

function actionErrors(action: WebhookReceiverSpec["action"]): StatusCause[] {
  const field = "spec.action.patch";
  if (action.type === "Reevaluate") {
    return action.patch === undefined ? [] : [{ field, message: "Forbidden: may not be set when the action is Reevaluate", reason: "FieldValueForbidden" }];
  }
  if (action.patch === undefined || action.patch === null)
    return [{ field, message: `Required value: the ${action.type} to apply`, reason: "FieldValueRequired" }];
  const causes: StatusCause[] = [];
  if (action.type === "MergePatch") {
    if (!isJsonObject(action.patch)) return [{ field, message: "Invalid value: a merge patch must be a JSON object (RFC 7386)" }];
    for (const s of stringsOf(action.patch, field)) {
      const err = templateError(s.value);
      if (err) causes.push({ field: s.path, message: `Invalid value: ${JSON.stringify(s.value)}: ${err}` });
    }
    return causes;
  }
  causes.push(...jsonPatchErrors(action.patch, field));
  if (causes.length > 0) return causes;
  (action.patch as Record<string, unknown>[]).forEach((op, i) => {
    for (const s of stringsOf(op.value, `${field}[${i}].value`)) {
      const err = templateError(s.value);
      if (err) causes.push({ field: s.path, message: `Invalid value: ${JSON.stringify(s.value)}: ${err}` });
    }
    for (const k of ["path", "from"]) {
      if (typeof op[k] === "string" && /\{\{|\}\}/.test(op[k])) {
        causes.push({ field: `${field}[${i}].${k}`, message: "Invalid value: templates are resolved only in an operation's value" });
      }
    }
  });
  return causes;
}

function randomHex(bytes: number): string {
  const b = new Uint8Array(bytes);
  crypto.getRandomValues(b);
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}

/** The WebhookReceiver kind (stored in D1). */
export const WebhookReceiverKind: KindDefinition = {
  group: "flotilla.dev",
  version: "v1alpha1",
  kind: "WebhookReceiver",
  listKind: "WebhookReceiverList",
  plural: "webhookreceivers",
  singular: "webhookreceiver",
  shortNames: ["whr"],
  namespaced: true,
  hasStatus: true,
  schema: objectSchema(SpecSchema, StatusSchema, true),
  storage: "d1",
  printerColumns: [
    { name: "Type", type: "string", jsonPath: ".spec.type" },
    { name: "Target", type: "string", jsonPath: ".spec.target.name" },
    { name: "Action", type: "string", jsonPath: ".spec.action.type" },
    { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: "Path", type: "string", jsonPath: ".status.webhookPath", priority: 1 },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  validate(obj) {
    const spec = obj.spec as unknown as WebhookReceiverSpec;
    const causes: StatusCause[] = [...nameErrors(spec.secretRef.name, "spec.secretRef.name"), ...nameErrors(spec.target.name, "spec.target.name")];
    if (!RECEIVER_TARGETS.some((t) => t.apiVersion === spec.target.apiVersion && t.kind === spec.target.kind)) {
      causes.push({
        field: "spec.target",
        message: `Unsupported value: ${JSON.stringify(`${spec.target.apiVersion}, Kind=${spec.target.kind}`)}: supported values: ${RECEIVER_TARGETS.map((t) => `"${t.apiVersion}, Kind=${t.kind}"`).join(", ")}`,
        reason: "FieldValueNotSupported",
      });
    }
    causes.push(...actionErrors(spec.action));
    return causes;
  },
  async finalize(obj: KubeObject, old: KubeObject | null, ctx: WriteContext) {
    const prev = isJsonObject(old?.status) ? old.status : {};
    const path =
      typeof prev.webhookPath === "string"
        ? prev.webhookPath
        : `${HOOKS_PREFIX}${await sha256Hex(randomHex(32) + (obj.metadata.namespace ?? "") + obj.metadata.name)}`;
    const before = (prev.conditions as Condition[] | undefined)?.find((c) => c.type === "Ready");
    const ready: Condition = {
      type: "Ready",
      status: "True",
      observedGeneration: obj.metadata.generation,
      lastTransitionTime: before?.status === "True" ? before.lastTransitionTime : rfc3339(ctx.now),
      reason: "Succeeded",
      message: `Receiver initialized for path: ${path}`,
    };
    obj.status = { webhookPath: path, observedGeneration: obj.metadata.generation, conditions: [ready] };
  },
};
