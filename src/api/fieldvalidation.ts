/**
 * The `fieldValidation` query parameter of create, update and patch (Kubernetes 1.27+,
 * `metav1.CreateOptions.FieldValidation`): `Strict` refuses duplicate keys (400 `strict decoding
 * error: duplicate field "metadata.name"`, found as the body is decoded, so before unknown fields)
 * and unknown fields (400 `strict decoding error: unknown field "spec.foo"`), `Warn` keeps the
 * last of duplicate keys, drops unknown fields and reports each in a `Warning: 299` response
 * header, `Ignore` does the same silently.
 * The apiserver's default when the parameter is absent is `Warn`; Flotilla's is `Strict`, so that
 * a mistyped field is an error rather than a silent no-op (kubectl sends `Strict` by default
 * anyway). Dropping happens before the write, so a pruned body then goes through the same
 * validation as any other.
 */
import type { Context } from "hono";
import type { z } from "zod";
import { ApiError, badRequest } from "../k8s/errors.ts";
import type { Decoded } from "../k8s/decode.ts";
import { fieldPath, isJsonObject } from "../k8s/meta.ts";
import type { WriteRequest } from "../k8s/write.ts";

/** A `fieldValidation` directive. */
export type FieldValidation = "Strict" | "Warn" | "Ignore";

/** Reads `fieldValidation` from the query (default Strict). @throws ApiError 400 for another value */
export function fieldValidationOf(c: Context): FieldValidation {
  const v = c.req.query("fieldValidation");
  if (v === undefined || v === "" || v === "Strict") return "Strict";
  if (v === "Warn" || v === "Ignore") return v;
  throw badRequest(`fieldValidation: Unsupported value: ${JSON.stringify(v)}: supported values: "Ignore", "Strict", "Warn"`, "fieldValidation");
}

/** Deletes, in place, every key of `doc` that `schema` does not know; returns their field paths. */
function prune(schema: z.ZodType, doc: unknown): string[] {
  const dropped: string[] = [];
  for (let round = 0; round < 8; round++) {
    const r = schema.safeParse(doc);
    if (r.success) break;
    let found = false;
    for (const issue of r.error.issues) {
      if (issue.code !== "unrecognized_keys") continue;
      let parent: unknown = doc;
      for (const step of issue.path)
        parent = isJsonObject(parent) || Array.isArray(parent) ? (parent as Record<PropertyKey, unknown>)[step as string] : undefined;
      if (!isJsonObject(parent)) continue;
      for (const k of issue.keys) {
        // A strategic merge patch's directives (`$patch`, `$setElementOrder/containers`, ...) are no fields.
        if (k.startsWith("$")) continue;
        if (k in parent) {
          delete parent[k];
          dropped.push(fieldPath([...issue.path, k]));
          found = true;
        }
      }
    }
    if (!found) break;
  }
  return dropped;
}

/**
 * Applies a `Warn` or `Ignore` directive to a create, update or patch: unknown fields of the body
 * (or of the decoded patch document) are removed from `req` in place. Returns the removed field
 * paths (empty for `Strict`, which leaves unknown fields for the write to refuse).
 */
export function dropUnknownFields(schema: z.ZodType, req: WriteRequest, mode: FieldValidation): string[] {
  if (mode === "Strict" || req.verb === "delete") return [];
  return prune(schema, req.verb === "patch" ? req.patch : req.body);
}

/**
 * Applies a directive to the duplicate keys of a decoded body and returns its value: `Strict`
 * refuses them (400 `strict decoding error: duplicate field "spec.a"`, one cause per key, as
 * kube-apiserver's strict decoder words them), `Warn` appends one message per key to `warnings`,
 * `Ignore` keeps the last value silently.
 *
 * @throws ApiError 400 for duplicate keys under Strict.
 */
export function checkDuplicateFields(decoded: Decoded, mode: FieldValidation, warnings?: string[]): unknown {
  if (decoded.duplicates.length === 0 || mode === "Ignore") return decoded.value;
  const messages = decoded.duplicates.map((f) => `duplicate field "${f}"`);
  if (mode === "Warn") {
    warnings?.push(...messages);
    return decoded.value;
  }
  throw new ApiError(400, "BadRequest", `strict decoding error: ${messages.join(", ")}`, {
    causes: decoded.duplicates.map((f, i) => ({ reason: "FieldValueDuplicate", message: messages[i]!, field: f })),
  });
}

/** The messages for unknown fields a `Warn` directive dropped, as the apiserver words them. */
export function unknownFieldMessages(dropped: string[]): string[] {
  return dropped.map((f) => `unknown field "${f}"`);
}

/** The `Warning` header value for a message (RFC 7234 warn-code 299, agent "-", as the apiserver sends). */
export function warningHeader(message: string): string {
  return `299 - ${JSON.stringify(message)}`;
}
