/**
 * The `fieldValidation` query parameter of create, update and patch (Kubernetes 1.27+,
 * `metav1.CreateOptions.FieldValidation`): `Strict` refuses unknown fields with 400, `Warn` drops
 * them and reports each in a `Warning: 299` response header, `Ignore` drops them silently.
 * The apiserver's default when the parameter is absent is `Warn`; Flotilla's is `Strict`, so that
 * a mistyped field is an error rather than a silent no-op (kubectl sends `Strict` by default
 * anyway). Dropping happens before the write, so a pruned body then goes through the same
 * validation as any other.
 */
import type { Context } from "hono";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { badRequest } from "../k8s/errors.ts";
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
      for (const step of issue.path) parent = isJsonObject(parent) || Array.isArray(parent) ? (parent as Record<PropertyKey, unknown>)[step as string] : undefined;
      if (!isJsonObject(parent)) continue;
      for (const k of issue.keys) {
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
 * (or of the patch document) are removed from `req` in place. Returns the removed field paths
 * (empty for `Strict`, which leaves unknown fields for the write to refuse).
 */
export function dropUnknownFields(schema: z.ZodType, req: WriteRequest, mode: FieldValidation): string[] {
  if (mode === "Strict" || req.verb === "delete") return [];
  if (req.verb === "create" || req.verb === "update") return prune(schema, req.body);
  if (req.patchType === "merge") return prune(schema, req.patch);
  let doc: unknown;
  try {
    doc = typeof req.patch === "string" ? parseYaml(req.patch) : req.patch;
  } catch {
    return []; // the write reports the decoding error
  }
  const dropped = prune(schema, doc);
  if (dropped.length > 0) req.patch = JSON.stringify(doc);
  return dropped;
}

/** The `Warning` header values for dropped fields, as the apiserver words them (RFC 7234 code 299). */
export function unknownFieldWarnings(dropped: string[]): string[] {
  return dropped.map((f) => `299 - ${JSON.stringify(`unknown field "${f}"`)}`);
}
