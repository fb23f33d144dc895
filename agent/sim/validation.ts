/**
 * Request validation the simulated API server performs before storing an object:
 * object names (DNS-1123 subdomain, or DNS-1123 label for Namespaces, by src/k8s/validation.ts), and a subset of OpenAPI v3
 * structural-schema validation for custom resources (`type`, `required`, `properties`, `items`,
 * `enum`, `minLength`/`maxLength` in Unicode code points, `minimum`/`maximum`, `pattern`).
 * Unknown fields are neither rejected nor pruned.
 */
import { isDNS1123Label, isDNS1123Subdomain } from "../../src/k8s/validation.ts";
import type { StatusCause } from "./errors.ts";
import { isObj, type KubeObject, type Obj } from "./types.ts";

/**
 * Causes for an invalid `metadata.name` (empty list when valid): Namespaces need a DNS-1123 label,
 * others a subdomain, checked and worded by the hub's apimachinery validation (src/k8s/validation.ts).
 */
export function validateName(kind: string, name: string | undefined): StatusCause[] {
  if (!name) return [{ reason: "FieldValueRequired", message: "Required value: name or generateName is required", field: "metadata.name" }];
  const errs = kind === "Namespace" ? isDNS1123Label(name) : isDNS1123Subdomain(name);
  return errs.map((e) => ({ reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(name)}: ${e}`, field: "metadata.name" }));
}

function typeOk(type: unknown, v: unknown): boolean {
  switch (type) {
    case "object":
      return isObj(v);
    case "array":
      return Array.isArray(v);
    case "string":
      return typeof v === "string";
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "number":
      return typeof v === "number";
    case "boolean":
      return typeof v === "boolean";
    default:
      return true;
  }
}

function validateValue(schema: Obj, v: unknown, path: string, out: StatusCause[]): void {
  if (v === null || v === undefined) return;
  if (schema["x-kubernetes-int-or-string"] === true) {
    if (typeof v !== "string" && !(typeof v === "number" && Number.isInteger(v)))
      out.push({ reason: "FieldValueTypeInvalid", message: `Invalid value: "${String(v)}": ${path} in body must be of type int-or-string`, field: path });
    return;
  }
  if (schema.type !== undefined && !typeOk(schema.type, v)) {
    out.push({
      reason: "FieldValueTypeInvalid",
      message: `Invalid value: "${typeof v}": ${path} in body must be of type ${String(schema.type)}: "${typeof v}"`,
      field: path,
    });
    return;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => e === v)) {
    out.push({
      reason: "FieldValueNotSupported",
      message: `Unsupported value: ${JSON.stringify(v)}: supported values: ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}`,
      field: path,
    });
  }
  if (typeof v === "string") {
    const len = [...v].length;
    if (typeof schema.minLength === "number" && len < schema.minLength)
      out.push({
        reason: "FieldValueInvalid",
        message: `Invalid value: "${v}": ${path} in body should be at least ${schema.minLength} chars long`,
        field: path,
      });
    if (typeof schema.maxLength === "number" && len > schema.maxLength)
      out.push({ reason: "FieldValueTooLong", message: `Too long: may not be longer than ${schema.maxLength}`, field: path });
    if (typeof schema.pattern === "string" && !new RegExp(schema.pattern, "u").test(v))
      out.push({ reason: "FieldValueInvalid", message: `Invalid value: "${v}": ${path} in body should match '${schema.pattern}'`, field: path });
  }
  if (typeof v === "number") {
    if (typeof schema.minimum === "number" && v < schema.minimum)
      out.push({
        reason: "FieldValueInvalid",
        message: `Invalid value: ${v}: ${path} in body should be greater than or equal to ${schema.minimum}`,
        field: path,
      });
    if (typeof schema.maximum === "number" && v > schema.maximum)
      out.push({ reason: "FieldValueInvalid", message: `Invalid value: ${v}: ${path} in body should be less than or equal to ${schema.maximum}`, field: path });
  }
  if (isObj(v)) {
    if (Array.isArray(schema.required)) {
      for (const r of schema.required)
        if (v[String(r)] === undefined) out.push({ reason: "FieldValueRequired", message: "Required value", field: path ? `${path}.${String(r)}` : String(r) });
    }
    const props = isObj(schema.properties) ? schema.properties : {};
    for (const [k, sub] of Object.entries(props)) if (isObj(sub) && k !== "metadata") validateValue(sub, v[k], path ? `${path}.${k}` : k, out);
    if (isObj(schema.additionalProperties)) {
      for (const [k, val] of Object.entries(v)) if (!(k in props)) validateValue(schema.additionalProperties, val, `${path}.${k}`, out);
    }
  }
  if (Array.isArray(v) && isObj(schema.items)) {
    const items = schema.items;
    v.forEach((el, i) => validateValue(items, el, `${path}[${i}]`, out));
  }
}

/**
 * Validates a custom resource against its CRD version's `openAPIV3Schema`. Returns the causes
 * (field paths like `spec.value`), empty when valid. When `statusSubresource` is true, `status` is
 * skipped on main-resource writes (it is ignored there anyway).
 */
export function validateAgainstSchema(schema: Obj | undefined, obj: KubeObject, skipStatus: boolean): StatusCause[] {
  if (!schema) return [];
  const out: StatusCause[] = [];
  const copy: Obj = { ...obj };
  if (skipStatus) delete copy.status;
  const s: Obj = { ...schema };
  if (skipStatus && Array.isArray(s.required)) s.required = s.required.filter((r) => r !== "status");
  validateValue(s, copy, "", out);
  return out;
}
