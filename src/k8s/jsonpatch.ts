/**
 * RFC 6902 JSON Patch, for the API's `application/json-patch+json` patches and for
 * WebhookReceivers, on fast-json-patch: the structural check of a patch (operations add, remove,
 * replace, move, copy, test, each with a JSON Pointer `path`, `from` for move and copy, `value`
 * for add, replace and test) and its application to a copy of a document.
 * Results are values, never exceptions.
 */
import { applyPatch, JsonPatchError, type Operation } from "fast-json-patch";
import type { StatusCause } from "./errors.ts";
import { isJsonObject } from "./meta.ts";

const OPS = ["add", "remove", "replace", "move", "copy", "test"];
const POINTER = /^(\/([^~]|~[01])*)*$/;

/**
 * Checks that `patch` is a JSON Patch document: an array of operations with the members RFC 6902
 * requires and no others. Returns one cause per problem, fields under `field`
 * (e.g. `spec.action.patch[0].op`); empty when valid.
 */
export function jsonPatchErrors(patch: unknown, field: string): StatusCause[] {
  if (!Array.isArray(patch)) return [{ field, message: "Invalid value: a JSON Patch must be an array of operations (RFC 6902)" }];
  if (patch.length === 0) return [{ field, message: "Required value: at least one operation", reason: "FieldValueRequired" }];
  const causes: StatusCause[] = [];
  patch.forEach((op, i) => {
    const at = `${field}[${i}]`;
    if (!isJsonObject(op)) {
      causes.push({ field: at, message: "Invalid value: an operation must be an object" });
      return;
    }
    if (typeof op.op !== "string" || !OPS.includes(op.op)) {
      causes.push({
        field: `${at}.op`,
        message: `Unsupported value: ${JSON.stringify(op.op ?? null)}: supported values: ${OPS.map((o) => `"${o}"`).join(", ")}`,
        reason: "FieldValueNotSupported",
      });
      return;
    }
    if (typeof op.path !== "string" || !POINTER.test(op.path))
      causes.push({ field: `${at}.path`, message: "Invalid value: must be a JSON Pointer (RFC 6901) such as /spec/field" });
    const needsFrom = op.op === "move" || op.op === "copy";
    const needsValue = op.op === "add" || op.op === "replace" || op.op === "test";
    if (needsFrom && (typeof op.from !== "string" || !POINTER.test(op.from)))
      causes.push({ field: `${at}.from`, message: "Required value: a JSON Pointer for move and copy", reason: "FieldValueRequired" });
    if (needsValue && !("value" in op)) causes.push({ field: `${at}.value`, message: `Required value: for ${op.op}`, reason: "FieldValueRequired" });
    for (const k of Object.keys(op)) {
      if (!["op", "path", "from", "value"].includes(k) || (k === "from" && !needsFrom) || (k === "value" && !needsValue)) {
        causes.push({ field: `${at}.${k}`, message: `Forbidden: not a member of a ${op.op} operation`, reason: "FieldValueForbidden" });
      }
    }
  });
  return causes;
}

/** The outcome of applying a JSON Patch: the patched copy, or why it failed (which operation, what). */
export type PatchOutcome = { ok: true; value: unknown } | { ok: false; message: string };

/**
 * Applies `ops` (already checked with `jsonPatchErrors`) to a deep copy of `doc`, atomically: any
 * failing operation (a `test` that does not hold, a path that does not resolve, an array index out
 * of bounds) fails the whole patch. `__proto__`/`constructor` paths are refused.
 */
export function applyJsonPatch(doc: unknown, ops: unknown[]): PatchOutcome {
  try {
    const { newDocument } = applyPatch(structuredClone(doc), ops as Operation[], true, true, true);
    return { ok: true, value: newDocument };
  } catch (e) {
    if (e instanceof JsonPatchError) {
      const op = e.index !== undefined ? ops[e.index] : undefined;
      const where = e.index !== undefined ? `operation ${e.index}${isJsonObject(op) ? ` (${String(op.op)} ${String(op.path)})` : ""}` : "patch";
      return { ok: false, message: `JSON Patch ${where} failed: ${describe(e.name)}` };
    }
    return { ok: false, message: `JSON Patch failed: ${(e as Error).message}` };
  }
}

function describe(name: string): string {
  switch (name) {
    case "TEST_OPERATION_FAILED":
      return "the test did not hold";
    case "OPERATION_PATH_UNRESOLVABLE":
      return "the path does not exist";
    case "OPERATION_FROM_UNRESOLVABLE":
      return "the from path does not exist";
    case "OPERATION_PATH_CANNOT_ADD":
      return "the parent of the path does not exist";
    case "OPERATION_PATH_ILLEGAL_ARRAY_INDEX":
      return "illegal array index";
    case "OPERATION_VALUE_OUT_OF_BOUNDS":
      return "array index out of bounds";
    default:
      return name.toLowerCase().replace(/_/g, " ");
  }
}
