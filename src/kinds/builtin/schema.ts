/**
 * The zod schemas of the built-in Kubernetes kinds the hub stores as templates (Deployment,
 * ConfigMap, ...; src/kinds/builtin/index.ts), made from Kubernetes' published OpenAPI schemas
 * as `kubernetes-models` carries them, vendored by `npm run vendor:k8s-schemas`
 * (scripts/vendor-k8s-schemas.mjs) into `k8s-schemas.json` beside this file.
 *
 * What the schemas check is what kube-apiserver's decoding of a built-in kind checks: unknown
 * fields (every object is strict, so `fieldValidation` Strict refuses them, Warn and Ignore drop
 * them: src/api/fieldvalidation.ts), the JSON type of every field (integers within int32/int64,
 * quantities as `resource.Quantity` parses them, int-or-string), the fields the OpenAPI schema
 * requires, and enum values (422 `Unsupported value`, as the kinds' validation says it). Every
 * optional field may be `null` (Go's decoder leaves such a field unset; the kinds' `defaults`
 * drop the nulls). Descriptions and Kubernetes' `x-kubernetes-*` extensions (list types and map
 * keys, strategic merge patch keys, int-or-string) are carried as zod metadata, so the hub's
 * OpenAPI documents (src/api/openapi.ts), the field manager (server-side apply's list merging)
 * and strategic merge patches (src/k8s/strategicpatch.ts) read them.
 *
 * A schema is built on first use of its kind, node by node from the vendored JSON (each
 * definition once), and cached.
 */
import * as z from "zod";
import { addFieldErrors, ObjectMetaSchema } from "../../k8s/meta.ts";
import { parseQuantity } from "../../k8s/quantity.ts";
import { fieldInvalid, fieldNotSupported } from "../../k8s/validation.ts";
import vendored from "./k8s-schemas.json" with { type: "json" };

/** A vendored OpenAPI v3 schema node (see scripts/vendor-k8s-schemas.mjs). */
export interface OpenApiNode {
  description?: string;
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  format?: string;
  enum?: string[];
  properties?: Record<string, OpenApiNode>;
  required?: string[];
  items?: OpenApiNode;
  additionalProperties?: OpenApiNode;
  $ref?: string;
  /** The default of a list map key (`protocol: TCP`), which server-side apply fills in (src/k8s/write.ts). */
  default?: string;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-quantity"?: boolean;
  "x-kubernetes-list-type"?: string;
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-patch-merge-key"?: string;
  "x-kubernetes-patch-strategy"?: string;
}

const DEFINITIONS = (vendored as unknown as { definitions: Record<string, OpenApiNode> }).definitions;
const KINDS = (vendored as unknown as { kinds: Record<string, string> }).kinds;
const NAMES = (vendored as unknown as { names: Record<string, string> }).names;

/** Where the schemas come from (`kubernetes-models@<version>`). */
export const SCHEMA_SOURCE = (vendored as unknown as { source: string }).source;

const OBJECT_META = "IoK8sApimachineryPkgApisMetaV1ObjectMeta";
const INT32 = { min: -2147483648, max: 2147483647 };
const QUANTITY_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

const built = new Map<string, z.ZodType>();

const quantity = () =>
  z.union([z.string(), z.number()]).superRefine((v, ctx) => {
    if (typeof v === "number") return;
    try {
      parseQuantity(v);
    } catch {
      addFieldErrors(ctx, v, [fieldInvalid("", v, `quantities must match the regular expression '${QUANTITY_PATTERN}'`)]);
    }
  });

/** The Kubernetes extensions of a node that zod metadata carries into OpenAPI and the field manager. */
function extensions(node: OpenApiNode): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) if (k.startsWith("x-kubernetes-") && k !== "x-kubernetes-quantity") out[k] = v;
  return out;
}

function definition(name: string): z.ZodType {
  if (name === OBJECT_META) return ObjectMetaSchema;
  const hit = built.get(name);
  if (hit) return hit;
  const node = DEFINITIONS[name];
  if (!node) throw new Error(`no vendored schema ${name}`);
  const s = fromNode(node);
  built.set(name, s);
  return s;
}

/** The zod schema of one vendored node (described, with its extensions as metadata). */
function fromNode(node: OpenApiNode): z.ZodType {
  let s: z.ZodType;
  if (node.$ref) s = definition(node.$ref);
  else if (node["x-kubernetes-int-or-string"]) s = z.union([z.number().int().min(INT32.min).max(INT32.max), z.string()]);
  else if (node["x-kubernetes-quantity"]) s = quantity();
  else if (node.type === "object" && node.properties) {
    const required = new Set(node.required ?? []);
    const shape: Record<string, z.ZodType> = {};
    for (const [k, child] of Object.entries(node.properties)) {
      const c = fromNode(child);
      shape[k] = required.has(k) ? c : c.nullable().optional();
    }
    s = z.strictObject(shape);
  } else if (node.type === "object") s = z.record(z.string(), node.additionalProperties ? fromNode(node.additionalProperties) : z.unknown());
  else if (node.type === "array") s = z.array(node.items ? fromNode(node.items) : z.unknown());
  else if (node.type === "integer")
    s = node.format === "int32" ? z.number().int().min(INT32.min).max(INT32.max) : z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);
  else if (node.type === "number") s = z.number();
  else if (node.type === "boolean") s = z.boolean();
  else if (node.type === "string" && node.enum) {
    const supported = node.enum;
    s = z.string().superRefine((v, ctx) => {
      if (!supported.includes(v)) addFieldErrors(ctx, v, [fieldNotSupported("", v, supported)]);
    });
  } else if (node.type === "string") s = z.string();
  else s = z.unknown();
  const meta = extensions(node);
  if (node.enum) meta.enum = node.enum;
  if (node.default !== undefined) meta.default = node.default;
  if (node.description) meta.description = node.description;
  return Object.keys(meta).length > 0 ? s.meta(meta) : s;
}

/**
 * The schema of a whole object of a built-in kind (`core/v1/ConfigMap`, `apps/v1/Deployment`):
 * apiVersion, kind and metadata required as every kind's; the rest as the OpenAPI schema says.
 * @throws Error when the kind was not vendored
 */
export function builtinSchema(groupVersionKind: string): z.ZodType {
  const name = KINDS[groupVersionKind];
  if (!name) throw new Error(`kind ${groupVersionKind} was not vendored (scripts/vendor-k8s-schemas.mjs)`);
  const hit = built.get(name);
  if (hit) return hit;
  const node = DEFINITIONS[name]!;
  const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = node.properties ?? {};
  const shape: Record<string, z.ZodType> = { apiVersion: z.string(), kind: z.string(), metadata: ObjectMetaSchema };
  const required = new Set(node.required ?? []);
  for (const [k, child] of Object.entries(rest)) {
    const c = fromNode(child);
    shape[k] = required.has(k) ? c : c.nullable().optional();
  }
  const s = z.strictObject(shape).meta(node.description ? { description: node.description } : {});
  built.set(name, s);
  return s;
}

// ---- OpenAPI -----------------------------------------------------------------------------------

/** A JSON value of an OpenAPI document. */
type Json = Record<string, unknown>;

/** A kind's OpenAPI v3 schema and the component schemas it refers to, by name. */
export interface BuiltinOpenAPI {
  schema: Json;
  components: Record<string, Json>;
}

/** The apimachinery scalars a field refers to as components, as kube-apiserver's documents have them. */
const SCALAR_COMPONENTS: Record<string, { marker: keyof OpenApiNode | "date-time"; schema: Json }> = {
  "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
    marker: "x-kubernetes-int-or-string",
    schema: {
      description:
        "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON field that can accept a name or number.",
      type: "string",
      format: "int-or-string",
    },
  },
  "io.k8s.apimachinery.pkg.api.resource.Quantity": {
    marker: "x-kubernetes-quantity",
    schema: {
      description:
        'Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors. The serialization format is: `<quantity> ::= <signedNumber><suffix>` (suffixes: Ki | Mi | Gi | Ti | Pi | Ei, m | "" | k | M | G | T | P | E, or a decimal exponent such as e3).',
      type: "string",
    },
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {
    marker: "date-time",
    schema: {
      description:
        "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  Wrappers are provided for many of the factory methods that the time package offers.",
      type: "string",
      format: "date-time",
    },
  },
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const openapi = new Map<string, BuiltinOpenAPI>();

/**
 * The OpenAPI v3 schema of a built-in kind as kube-apiserver publishes it (`/openapi/v3/apis/apps/v1`):
 * the kind's schema with its fields' descriptions, `required`, enums and `x-kubernetes-*`
 * extensions, its nested types as components under Kubernetes' names
 * (`io.k8s.api.core.v1.PodSpec`, referred to as `allOf: [{$ref}]` with the field's description),
 * metadata as the shared `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta` every document of the
 * hub carries (src/api/openapi.ts). Made from the vendored schemas once per kind and cached.
 * @throws Error when the kind was not vendored
 */
export function builtinOpenAPI(groupVersionKind: string): BuiltinOpenAPI {
  const hit = openapi.get(groupVersionKind);
  if (hit) return hit;
  const name = KINDS[groupVersionKind];
  if (!name) throw new Error(`kind ${groupVersionKind} was not vendored (scripts/vendor-k8s-schemas.mjs)`);
  const components: Record<string, Json> = {};
  const convert = (node: OpenApiNode): Json => {
    const out: Json = {};
    if (node.description) out.description = node.description;
    if (node.$ref) {
      const target = NAMES[node.$ref]!;
      if (node.$ref !== OBJECT_META && !(target in components)) {
        components[target] = {};
        components[target] = convert(DEFINITIONS[node.$ref]!);
      }
      const ext = Object.fromEntries(Object.entries(node).filter(([k]) => k.startsWith("x-kubernetes-")));
      return node.description || Object.keys(ext).length > 0
        ? { allOf: [ref(target)], ...(node.description ? { description: node.description } : {}), ...ext }
        : ref(target);
    }
    const scalar = Object.entries(SCALAR_COMPONENTS).find(([, c]) => (c.marker === "date-time" ? node.format === "date-time" : node[c.marker]));
    if (scalar) {
      components[scalar[0]] = scalar[1].schema;
      return node.description ? { allOf: [ref(scalar[0])], description: node.description } : ref(scalar[0]);
    }
    if (node.type) out.type = node.type;
    if (node.format) out.format = node.format;
    if (node.enum) out.enum = node.enum;
    if (node.default !== undefined) out.default = node.default;
    if (node.properties) out.properties = Object.fromEntries(Object.entries(node.properties).map(([k, v]) => [k, convert(v)]));
    if (node.required) out.required = node.required;
    if (node.items) out.items = convert(node.items);
    if (node.additionalProperties) out.additionalProperties = convert(node.additionalProperties);
    for (const [k, v] of Object.entries(node))
      if (k.startsWith("x-kubernetes-") && k !== "x-kubernetes-quantity" && k !== "x-kubernetes-int-or-string") out[k] = v;
    return out;
  };
  const schema = convert(DEFINITIONS[name]!);
  const made = { schema, components };
  openapi.set(groupVersionKind, made);
  return made;
}
