/** zod -> OpenAPI 3.0 schemas, with Kubernetes' conventions: a kind's, its list's, a subresource's and the shared apimachinery schemas. */
import { z } from "zod";
import type { CreateSubresource, KindDefinition } from "../../k8s/kind.ts";
import { ObjectMetaSchema, OwnerReferenceSchema } from "../../k8s/meta.ts";
import { type JsonSchema, type GroupVersionKind, META_SCHEMAS, isObj, refTo, schemaName } from "./names.ts";
import { API_VERSION_DOC, KIND_DOC, METADATA_DOC, LIST_METADATA_DOC, QUANTITY_DOC, KIND_DOCS, fieldDoc, OBJECT_META_DOCS } from "./descriptions.ts";

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

/**
 * Cleans what zod emits into Kubernetes' style: integer bounds at ±2^53 dropped in favour of
 * `format: int32|int64`; `string | integer` unions marked `x-kubernetes-int-or-string`;
 * descriptions filled from the tables above. `path` is the field path (array items add nothing).
 */
function tidy(node: JsonSchema, kind: string, path: string[]): void {
  if (node.type === "integer") {
    if (node.minimum === -MAX_SAFE) delete node.minimum;
    if (node.maximum === MAX_SAFE) delete node.maximum;
    const min = typeof node.minimum === "number" ? node.minimum : -Infinity;
    const max = typeof node.maximum === "number" ? node.maximum : Infinity;
    node.format ??= min >= INT32_MIN && max <= INT32_MAX ? "int32" : "int64";
  }
  if (Array.isArray(node.anyOf)) {
    const types = new Set(node.anyOf.map((s) => (isObj(s) ? s.type : undefined)));
    for (const s of node.anyOf) if (isObj(s)) tidy(s, kind, path);
    if (types.size === 2 && types.has("string") && types.has("integer")) node["x-kubernetes-int-or-string"] = true;
    if (types.size === 2 && types.has("string") && types.has("number")) node.description ??= QUANTITY_DOC;
  }
  if (isObj(node.properties)) {
    for (const [name, child] of Object.entries(node.properties)) {
      if (!isObj(child)) continue;
      const childPath = [...path, name];
      // A field of any JSON value (zod's unknown: `{}`) is marked as kube marks free-form fields,
      // so clients know it holds what it holds (kubectl explain fails on an empty schema).
      if (Object.keys(child).length === 0 || (Object.keys(child).length === 1 && "description" in child)) child["x-kubernetes-preserve-unknown-fields"] = true;
      const doc = fieldDoc(kind, childPath);
      if (doc && child.description === undefined) child.description = doc;
      tidy(child, kind, childPath);
    }
  }
  if (isObj(node.items)) tidy(node.items, kind, path);
  if (isObj(node.additionalProperties)) tidy(node.additionalProperties, kind, path);
}

function toJsonSchema(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { target: "openapi-3.0", io: "input", unrepresentable: "any", reused: "inline" }) as JsonSchema;
}

/**
 * {@link objectSchema}'s answers as JSON text, by zod schema and kind: a schema several kinds or
 * versions share (KubeFleet's v1 and v1beta1 kinds, the cluster views) is converted once per
 * isolate, not once per group-version document (and again for `/openapi/v2`).
 */
const objectSchemas = new WeakMap<z.ZodType, Map<string, string>>();

/**
 * The OpenAPI 3.0 schema of an object of kind `kind` from its zod schema: `metadata` becomes a
 * reference to ObjectMeta, apiVersion/kind carry the standard descriptions. A fresh object at
 * each call (the conversion itself is made once, {@link objectSchemas}).
 */
function objectSchema(schema: z.ZodType, kind: string): JsonSchema {
  let byKind = objectSchemas.get(schema);
  const known = byKind?.get(kind);
  if (known !== undefined) return JSON.parse(known) as JsonSchema;
  const s = convertedObjectSchema(schema, kind);
  if (!byKind) objectSchemas.set(schema, (byKind = new Map()));
  byKind.set(kind, JSON.stringify(s));
  return s;
}

/** {@link objectSchema}, converted afresh. */
function convertedObjectSchema(schema: z.ZodType, kind: string): JsonSchema {
  const s = toJsonSchema(schema);
  delete s.$schema;
  tidy(s, kind, []);
  const props = isObj(s.properties) ? s.properties : {};
  if ("apiVersion" in props) props.apiVersion = { type: "string", description: API_VERSION_DOC };
  if ("kind" in props) props.kind = { type: "string", description: KIND_DOC };
  if ("metadata" in props) props.metadata = refTo(META_SCHEMAS.ObjectMeta, METADATA_DOC);
  return s;
}

/**
 * The OpenAPI 3.0 schema of one kind, derived from its zod schema ({@link objectSchema}), carrying
 * `x-kubernetes-group-version-kind: [{group, version, kind}]`.
 */
export function kindSchema(def: KindDefinition): JsonSchema {
  if (def.openApiSchema) return customKindSchema(def, def.openApiSchema);
  const own = def.openAPI?.();
  if (own) return { ...own.schema, "x-kubernetes-group-version-kind": [gvk(def)] };
  const s = objectSchema(def.schema, def.kind);
  const description = s.description ?? KIND_DOCS[def.kind] ?? `${def.kind} (${def.group}/${def.version}).`;
  return { description, ...s, "x-kubernetes-group-version-kind": [gvk(def)] };
}

/**
 * The OpenAPI 3.0 schema of a custom resource's kind: its CRD version's `openAPIV3Schema` as
 * apiextensions-apiserver publishes it (`pkg/controller/openapi/builder`): `apiVersion`, `kind`
 * and `metadata` (a reference to ObjectMeta) added, the group-version-kind set.
 */
function customKindSchema(def: KindDefinition, schema: Record<string, unknown>): JsonSchema {
  const s = structuredClone(schema) as JsonSchema;
  const props = isObj(s.properties) ? s.properties : {};
  s.properties = {
    ...props,
    apiVersion: { type: "string", description: API_VERSION_DOC },
    kind: { type: "string", description: KIND_DOC },
    metadata: refTo(META_SCHEMAS.ObjectMeta, METADATA_DOC),
  };
  const description = typeof s.description === "string" ? s.description : `${def.kind} (${def.group}/${def.version}).`;
  return { ...s, description, type: "object", "x-kubernetes-group-version-kind": [gvk(def)] };
}

/** The schema of a kind a subresource takes and answers (a TokenRequest), as {@link kindSchema} makes a kind's. */
export function subresourceSchema(sub: CreateSubresource): JsonSchema {
  return {
    description: `${sub.kind} (${sub.group}/${sub.version}).`,
    ...objectSchema(sub.schema, sub.kind),
    "x-kubernetes-group-version-kind": [{ group: sub.group, version: sub.version, kind: sub.kind }],
  };
}

/** The `x-kubernetes-group-version-kind` entry of kind `def` (or of its list kind, `kind`). */
export function gvk(def: KindDefinition, kind = def.kind): GroupVersionKind {
  return { group: def.group, version: def.version, kind };
}

/** The list kind's schema (`<Kind>List`): apiVersion, kind, metadata (ListMeta) and items. */
export function listSchema(def: KindDefinition): JsonSchema {
  return {
    description: `${def.listKind} is a list of ${def.kind}.`,
    type: "object",
    required: ["items"],
    properties: {
      apiVersion: { type: "string", description: API_VERSION_DOC },
      items: { type: "array", description: `List of ${def.plural}.`, items: refTo(schemaName(def.group, def.version, def.kind)) },
      kind: { type: "string", description: KIND_DOC },
      metadata: refTo(META_SCHEMAS.ListMeta, LIST_METADATA_DOC),
    },
    "x-kubernetes-group-version-kind": [gvk(def, def.listKind)],
  };
}

/**
 * The shared apimachinery schemas (ObjectMeta, ListMeta, Status, DeleteOptions, ...) every
 * group-version document carries; DeleteOptions lists `group`/`version` among the group-versions it is served in.
 */
export function metaSchemas(group: string, version: string): Record<string, JsonSchema> {
  const objectMeta = toJsonSchema(ObjectMetaSchema);
  delete objectMeta.$schema;
  tidy(objectMeta, "ObjectMeta", []);
  const props = objectMeta.properties as Record<string, JsonSchema>;
  for (const [k, v] of Object.entries(props)) v.description ??= OBJECT_META_DOCS[k];
  props.ownerReferences = { ...props.ownerReferences, items: refTo(META_SCHEMAS.OwnerReference) };
  props.managedFields = { ...props.managedFields, items: refTo(META_SCHEMAS.ManagedFieldsEntry) };
  const ownerRef = toJsonSchema(OwnerReferenceSchema);
  delete ownerRef.$schema;
  tidy(ownerRef, "OwnerReference", []);
  const gvkAll = (kind: string): GroupVersionKind[] => [
    { group: "", version: "v1", kind },
    { group: "meta.k8s.io", version: "v1", kind },
    ...(group === "" && version === "v1" ? [] : [{ group, version, kind }]),
  ];
  const str = (description: string): JsonSchema => ({ type: "string", description });
  return {
    [META_SCHEMAS.ObjectMeta]: {
      description: "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
      ...objectMeta,
    },
    [META_SCHEMAS.OwnerReference]: {
      description: "OwnerReference contains enough information to let you identify an owning object.",
      ...ownerRef,
    },
    [META_SCHEMAS.ManagedFieldsEntry]: {
      description: "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.",
      type: "object",
      properties: {
        apiVersion: str("The version of the resource this field set applies to."),
        fieldsType: str("The type of the fields field; the only valid value is FieldsV1."),
        fieldsV1: { type: "object", description: "The set of fields, as a trie." },
        manager: str("An identifier of the workflow managing these fields."),
        operation: str("The type of operation which lead to this entry: Apply or Update."),
        subresource: str("The subresource used to update the object, if any."),
        time: { type: "string", format: "date-time", description: "When this entry was last changed." },
      },
    },
    [META_SCHEMAS.ListMeta]: {
      description: "ListMeta describes metadata that synthetic resources must have, including lists.",
      type: "object",
      properties: {
        continue: str("Set when the list is incomplete (not used by Flotilla: lists are complete)."),
        remainingItemCount: { type: "integer", format: "int64", description: "Not set by Flotilla." },
        resourceVersion: str("The resource version of the list, for watches."),
        selfLink: str("Deprecated; not set."),
      },
    },
    [META_SCHEMAS.StatusCause]: {
      description: "StatusCause provides more information about an api.Status failure, including cases when multiple errors are encountered.",
      type: "object",
      properties: {
        field: str("The field of the resource that has caused this error, e.g. `spec.taints[0].effect`."),
        message: str("A human-readable description of the cause of the error."),
        reason: str("A machine-readable description of the cause of the error, e.g. FieldValueInvalid."),
      },
    },
    [META_SCHEMAS.StatusDetails]: {
      description: "StatusDetails is a set of additional properties that MAY be set by the server to provide additional information about a response.",
      type: "object",
      properties: {
        causes: { type: "array", items: refTo(META_SCHEMAS.StatusCause), description: "The causes of a failure, e.g. one per invalid field." },
        group: str("The group attribute of the resource associated with the status."),
        kind: str("The kind (resource) attribute of the resource associated with the status."),
        name: str("The name attribute of the resource associated with the status."),
        retryAfterSeconds: { type: "integer", format: "int32", description: "Seconds to wait before retrying." },
        uid: str("The UID of the resource."),
      },
    },
    [META_SCHEMAS.Status]: {
      description: "Status is the return value for calls that don't return other objects, and the body of every error response.",
      type: "object",
      properties: {
        apiVersion: str(API_VERSION_DOC),
        code: { type: "integer", format: "int32", description: "The HTTP status code." },
        details: refTo(META_SCHEMAS.StatusDetails, "Extended data associated with the reason."),
        kind: str(KIND_DOC),
        message: str("A human-readable description of the status of this operation."),
        metadata: refTo(META_SCHEMAS.ListMeta, LIST_METADATA_DOC),
        reason: str("A machine-readable description of why this operation is in the Failure status, e.g. NotFound, AlreadyExists, Conflict, Invalid."),
        status: str("Status of the operation: Success or Failure."),
      },
      "x-kubernetes-group-version-kind": [{ group: "", version: "v1", kind: "Status" }],
    },
    [META_SCHEMAS.Preconditions]: {
      description: "Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.",
      type: "object",
      properties: { resourceVersion: str("The target resourceVersion."), uid: str("The target UID.") },
    },
    [META_SCHEMAS.DeleteOptions]: {
      description: "DeleteOptions may be provided when deleting an API object.",
      type: "object",
      properties: {
        apiVersion: str(API_VERSION_DOC),
        kind: str(KIND_DOC),
        preconditions: refTo(META_SCHEMAS.Preconditions, "Must be fulfilled before a deletion is carried out (409 Conflict otherwise)."),
        propagationPolicy: str("Whether and how garbage collection is performed: Orphan, Background or Foreground."),
      },
      "x-kubernetes-group-version-kind": gvkAll("DeleteOptions"),
    },
    [META_SCHEMAS.Patch]: {
      description:
        "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body: a JSON merge patch, or a (partial) object to apply.",
      type: "object",
    },
  };
}
