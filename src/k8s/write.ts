/**
 * The pure part of every write: given a kind, the current object and a request, compute the
 * object to store (or that it is to be deleted), or throw the Kubernetes error. Both stores (the
 * D1 store and the cluster Durable Object) run this same function and then commit the result
 * with a resourceVersion precondition. Semantics follow the apiserver's generic registry and
 * handlers (create, update, JSON merge patch, server-side apply, delete, the status subresource).
 */
import { ApiError, alreadyExists, badRequest, conflict, invalid, notFound, type StatusCause } from "./errors.ts";
import { apiVersionOf, type KindDefinition, type WriteContext } from "./kind.ts";
import { checkSchema, isJsonObject, rfc3339, type JsonObject, type KubeObject } from "./meta.ts";
import { applyJsonPatch, jsonPatchErrors } from "./jsonpatch.ts";
import { strategicMergePatch } from "./strategicpatch.ts";
import { isDNS1035Label, isDNS1123Label, isDNS1123Subdomain, pathSegmentNameErrors, validateAnnotations, validateLabels } from "./validation.ts";
import {
  DEDUCED,
  objectType,
  recordUpdate,
  requestedManagedFields,
  schemaType,
  serverSideApply,
  type FieldManagerContext,
  type FieldType,
  type JsonSchemaNode,
} from "./fieldmanager.ts";
import * as z from "zod";
import { generatedName } from "./names.ts";
import { checkedBy, frozenJson, rememberChecked, stringifyObject } from "./frozen-json.ts";

export { generatedName };

/** Delete preconditions (metav1.Preconditions). */
export interface Preconditions {
  uid?: string;
  resourceVersion?: string;
}

/**
 * A write as the HTTP layer decodes it. `subresource: "status"` writes only the status.
 * An update's `preconditions` are checked against the stored object on every attempt, as
 * GuaranteedUpdate checks its storage.Preconditions (for writers in the hub that pin the object's
 * UID but not its resourceVersion: an agent's status report).
 * `patchType` `merge` is RFC 7386 JSON merge patch; `strategic` is Kubernetes' strategic merge
 * patch, for the core kinds (src/k8s/strategicpatch.ts); `json` is RFC 6902 JSON patch (an array of
 * operations); `apply` is server-side apply (`fieldManager` required). Every body and patch is already decoded (the HTTP layer parses JSON and YAML with
 * its depth limit, src/k8s/decode.ts).
 * `fieldManager` on a create, update or non-apply patch records the write in `metadata.managedFields`
 * under that manager (the HTTP layer defaults it from the user agent, as kube-apiserver does); a
 * write without one (the hub's own controllers) keeps the object's managedFields as they are.
 * A create's `withStatus` keeps the body's status, where the status subresource has a create
 * drop it: a controller's create of an object whose status it writes at once (a placement's
 * binding), as its create and then its status write would leave it, in one commit. The HTTP
 * layer never sets it.
 */
export type WriteRequest =
  | { verb: "create"; body: unknown; fieldManager?: string; withStatus?: true }
  | { verb: "update"; body: unknown; subresource?: "status"; preconditions?: Preconditions; fieldManager?: string }
  | { verb: "patch"; patchType: "merge" | "strategic" | "json" | "apply"; patch: unknown; fieldManager?: string; force?: boolean; subresource?: "status" }
  | { verb: "delete"; preconditions?: Preconditions; propagationPolicy?: DeletePropagation };

/**
 * What happens to a deleted object's dependents (metav1.DeletionPropagation, the objects whose
 * `ownerReferences` name it): `Background` (the default) removes the object at once and the
 * garbage collector deletes the dependents after; `Foreground` keeps the object, with the
 * `foregroundDeletion` finalizer, until the dependents that block it are gone; `Orphan` keeps
 * them, with the `orphan` finalizer until their references to it are removed (src/gc).
 */
export type DeletePropagation = "Orphan" | "Background" | "Foreground";

/** The finalizer of a Foreground deletion (metav1.FinalizerDeleteDependents). */
export const FOREGROUND_FINALIZER = "foregroundDeletion";
/** The finalizer of an Orphan deletion (metav1.FinalizerOrphanDependents). */
export const ORPHAN_FINALIZER = "orphan";

/** Where the object lives: its namespace ("" when cluster-scoped) and name (absent for a create without name). */
export interface ObjectKey {
  namespace: string;
  name?: string;
}

/**
 * The result of a write: `next` is the object to store, or null when the object is to be removed.
 * `created` is true when the write created the object (HTTP 201).
 */
export interface WriteResult {
  next: KubeObject | null;
  created: boolean;
}

const fieldTypes = new WeakMap<z.ZodType, FieldType>();

interface ZodDef {
  type?: string;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  valueType?: z.ZodType;
  innerType?: z.ZodType;
  in?: z.ZodType;
  options?: z.ZodType[];
  getter?: () => z.ZodType;
}
const defOf = (s: z.ZodType): ZodDef => (s as unknown as { _zod: { def: ZodDef } })._zod.def;

/**
 * The field manager's view of a zod schema, read lazily node by node (nothing is built before a
 * write needs it): struct fields from `shape`, map values from a record's `valueType`, list items
 * from `element`, and the list type and keys from the `x-kubernetes-list-type` /
 * `x-kubernetes-list-map-keys` / `x-kubernetes-map-type` metadata the kinds set with `.meta()`
 * (what their OpenAPI schemas show). Wrappers (optional, nullable, default, pipe, lazy, a union's
 * first object or array member) are looked through. Cached per schema node.
 */
export function zodFieldType(schema: z.ZodType | undefined): FieldType {
  if (!schema) return DEDUCED;
  const hit = fieldTypes.get(schema);
  if (hit) return hit;
  let meta: Record<string, unknown> = {};
  let node: z.ZodType | undefined = schema;
  for (let i = 0; node && i < 16; i++) {
    meta = { ...(z.globalRegistry.get(node) ?? {}), ...meta };
    const d = defOf(node);
    if (d.type === "object" || d.type === "array" || d.type === "record") break;
    if (d.innerType) node = d.innerType;
    else if (d.type === "pipe") node = d.in;
    else if (d.type === "lazy" && d.getter) node = d.getter();
    else if (d.type === "union") node = d.options?.find((o) => ["object", "array", "record"].includes(defOf(o).type ?? ""));
    else node = undefined;
  }
  const d = node ? defOf(node) : {};
  const json: JsonSchemaNode = { ...meta };
  const t = schemaType(json);
  const kind = t.list([]);
  const result: FieldType = {
    child: (name) => zodFieldType(d.shape?.[name] ?? d.valueType),
    item: () => zodFieldType(d.element),
    list: () => kind,
    atomicMap: t.atomicMap,
  };
  fieldTypes.set(schema, result);
  return result;
}

/** A zod node with its wrappers (optional, nullable, default, pipe, lazy) looked through, and their metadata merged. */
function unwrap(schema: z.ZodType | undefined): { node: z.ZodType | undefined; meta: Record<string, unknown> } {
  let meta: Record<string, unknown> = {};
  let node = schema;
  for (let i = 0; node && i < 16; i++) {
    meta = { ...(z.globalRegistry.get(node) ?? {}), ...meta };
    const d = defOf(node);
    if (d.innerType) node = d.innerType;
    else if (d.type === "pipe") node = d.in;
    else if (d.type === "lazy" && d.getter) node = d.getter();
    else break;
  }
  return { node, meta };
}

const mergeKeys = new WeakMap<z.ZodType, Map<string, string | undefined>>();

/**
 * The strategic merge patch key of the list at dotted field path `field` (array items add no
 * segment: `spec.template.spec.containers.ports`) in a kind's schema: its
 * `x-kubernetes-patch-merge-key` metadata (src/kinds/builtin/schema.ts), or undefined. Cached.
 */
export function patchMergeKey(schema: z.ZodType, field: string): string | undefined {
  let cache = mergeKeys.get(schema);
  if (!cache) mergeKeys.set(schema, (cache = new Map()));
  if (cache.has(field)) return cache.get(field);
  let at = unwrap(schema);
  for (const seg of field.split(".")) {
    if (at.node && defOf(at.node).type === "array") at = unwrap(defOf(at.node).element);
    const d = at.node ? defOf(at.node) : {};
    at = unwrap(d.shape?.[seg] ?? d.valueType);
    if (!at.node) break;
  }
  const key = typeof at.meta["x-kubernetes-patch-merge-key"] === "string" ? at.meta["x-kubernetes-patch-merge-key"] : undefined;
  cache.set(field, key);
  return key;
}

/**
 * Fills in, in place, the key fields that the items of `x-kubernetes-list-map-keys` lists omit
 * and whose schema has a `default` (a container port's `protocol: TCP`), as structured-merge-diff
 * defaults list map keys before server-side apply merges an applied configuration, so that an
 * item applied without its protocol is the live item that has it, not a second one.
 */
export function defaultListMapKeys(schema: z.ZodType | undefined, value: unknown): void {
  const at = unwrap(schema);
  const d = at.node ? defOf(at.node) : {};
  if (Array.isArray(value)) {
    if (d.type !== "array") return;
    const keys = at.meta["x-kubernetes-list-map-keys"];
    const item = unwrap(d.element);
    const shape = item.node ? defOf(item.node).shape : undefined;
    for (const el of value) {
      if (Array.isArray(keys) && shape && isJsonObject(el))
        for (const k of keys as string[]) {
          const dflt = el[k] === undefined ? unwrap(shape[k]).meta.default : undefined;
          if (dflt !== undefined) el[k] = dflt;
        }
      defaultListMapKeys(d.element, el);
    }
  } else if (isJsonObject(value)) {
    if (d.type === "object") for (const [k, v] of Object.entries(value)) defaultListMapKeys(d.shape?.[k], v);
    else if (d.type === "record") for (const v of Object.values(value)) defaultListMapKeys(d.valueType, v);
  }
}

/**
 * The field manager's view of a kind's schema: its OpenAPI schema when it has one (a custom
 * resource's, from its CRD: list types and map keys as the CRD declares them), else
 * {@link zodFieldType} of its zod schema.
 */
export function fieldTypeOf(def: KindDefinition): FieldType {
  return def.openApiSchema ? objectType(schemaType(def.openApiSchema)) : zodFieldType(def.schema);
}

function fieldManagerContext(def: KindDefinition, ctx: WriteContext): FieldManagerContext {
  return { type: fieldTypeOf(def), statusSubresource: def.hasStatus, now: rfc3339(ctx.now) };
}

/**
 * How a write sets `managedFields` on the object it computed (after cleanMeta dropped what the
 * body carried): recorded as an Update by `manager`, set to what a server-side apply computed
 * (`applied`), or kept as the stored object has them (writes without a manager).
 */
type ManagedFieldsRule = { manager: string; sent: unknown } | { applied: unknown } | undefined;

function setManaged(
  def: KindDefinition,
  current: KubeObject | null,
  next: KubeObject,
  rule: ManagedFieldsRule,
  scope: "main" | "status",
  ctx: WriteContext,
): void {
  const live = current?.metadata.managedFields;
  if (rule && "applied" in rule) {
    if (rule.applied === undefined) delete next.metadata.managedFields;
    else next.metadata.managedFields = rule.applied as KubeObject["metadata"]["managedFields"];
  } else if (rule) {
    recordUpdate(current ?? undefined, next, requestedManagedFields(rule.sent, live, scope), rule.manager, scope, fieldManagerContext(def, ctx));
  } else if (live === undefined) delete next.metadata.managedFields;
  else next.metadata.managedFields = live;
}

function ref(def: KindDefinition, name?: string) {
  return { group: def.group, plural: def.plural, kind: def.kind, name };
}

/** Applies an RFC 7386 JSON merge patch to `target` and returns the result (inputs are not mutated). */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return structuredClone(patch);
  const out: JsonObject = isJsonObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * Decodes and checks a body against the kind: it must be an object whose apiVersion and kind
 * match the endpoint (400), with no unknown fields (400 `strict decoding error`) and valid values
 * (422 with the field paths). Exported for the review kinds, which are decoded but not written.
 * @throws ApiError 400, 422
 */
export function decode(def: KindDefinition, body: unknown, nameHint: string | undefined, stored?: KubeObject | null): KubeObject {
  if (!isJsonObject(body)) throw badRequest("the request body must be a JSON object");
  const expected = apiVersionOf(def);
  if (body.apiVersion !== undefined && body.apiVersion !== expected) {
    throw badRequest(`the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${expected})`, "apiVersion");
  }
  if (body.kind !== undefined && body.kind !== def.kind) {
    throw badRequest(`the kind in the data (${String(body.kind)}) does not match the expected kind (${def.kind})`, "kind");
  }
  // An absent or null metadata is empty; one of another type stays, for the schema to refuse (422 `metadata`).
  const obj = {
    ...body,
    apiVersion: expected,
    kind: def.kind,
    metadata: isJsonObject(body.metadata) ? { ...body.metadata } : (body.metadata ?? {}),
  } as JsonObject;
  const trusted = trustedOmitted(def, obj, stored);
  let check = checkSchema(def.schema, trusted.value);
  // A refusal names the fields as a check of the whole object does: checked again with every item.
  if (trusted.itemsLeftOut && (check.unknownFields.length > 0 || check.causes.length > 0))
    check = checkSchema(def.schema, trustedOmitted(def, obj, stored, false).value);
  const name = (obj.metadata as JsonObject).name;
  if (check.unknownFields.length > 0) {
    const list = check.unknownFields.map((f) => `unknown field "${f}"`).join(", ");
    throw new ApiError(400, "BadRequest", `strict decoding error: ${list}`, {
      name: typeof name === "string" ? name : nameHint,
      group: def.group,
      kind: def.kind,
      causes: check.unknownFields.map((f) => ({ reason: "FieldValueInvalid", message: `unknown field "${f}"`, field: f })),
    });
  }
  if (check.causes.length > 0) throw invalid(ref(def, typeof name === "string" ? name : nameHint), check.causes);
  for (const k of TRUSTABLE) rememberChecked(obj[k], def.schema);
  if (trusted.value.status !== undefined) for (const item of statusItems(def, obj)) rememberChecked(item, def.schema);
  return obj as unknown as KubeObject;
}

function validateMeta(def: KindDefinition, obj: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const name = obj.metadata.name;
  if (!name) {
    causes.push({ field: "metadata.name", message: "Required value: name or generateName is required", reason: "FieldValueRequired" });
  } else {
    const errors = def.nameIsPathSegment
      ? pathSegmentNameErrors(name)
      : def.nameIsLabel
        ? isDNS1123Label(name)
        : def.nameIsDNS1035Label
          ? isDNS1035Label(name)
          : isDNS1123Subdomain(name);
    for (const m of errors) {
      causes.push({ field: "metadata.name", message: `Invalid value: ${JSON.stringify(name)}: ${m}`, reason: "FieldValueInvalid" });
    }
  }
  if (obj.metadata.labels) for (const e of validateLabels(obj.metadata.labels, "metadata.labels")) causes.push(e);
  if (obj.metadata.annotations) for (const e of validateAnnotations(obj.metadata.annotations, "metadata.annotations")) causes.push(e);
  return causes;
}

function specOf(obj: KubeObject): Record<string, unknown> {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = obj;
  return rest;
}

/**
 * Whether `a` and `b` hold the same spec (everything but metadata, status, apiVersion and kind),
 * as their JSON: a field the two share (a metadata write keeps the stored spec) is not serialised.
 */
function sameSpec(a: KubeObject, b: KubeObject): boolean {
  const x = specOf(a);
  const y = specOf(b);
  const keys = Object.keys(x);
  if (keys.length === Object.keys(y).length && keys.every((k, i) => k === Object.keys(y)[i] && x[k] === y[k])) return true;
  return stringifyObject(x) === stringifyObject(y);
}

function cleanMeta(obj: KubeObject): void {
  const m = obj.metadata as unknown as JsonObject;
  for (const k of ["managedFields", "selfLink", "deletionGracePeriodSeconds"]) delete m[k];
  for (const k of ["labels", "annotations", "finalizers", "ownerReferences"]) {
    const v = m[k];
    if (v === null || (Array.isArray(v) && v.length === 0) || (isJsonObject(v) && Object.keys(v).length === 0)) delete m[k];
  }
  if (obj.status === null) delete obj.status;
}

/** The top-level fields whose check {@link trustedOmitted} may leave out. */
const TRUSTABLE = ["spec", "status"] as const;
/** Per kind schema: the {@link TRUSTABLE} fields it lets be absent (only those may be left out of a check). */
const optionalFields = new WeakMap<object, Set<string>>();

function omittable(def: KindDefinition): Set<string> {
  let s = optionalFields.get(def.schema);
  if (!s) {
    const shape = (def.schema as unknown as { shape?: Record<string, z.ZodType> }).shape ?? {};
    s = new Set(TRUSTABLE.filter((k) => shape[k]?.safeParse(undefined).success === true));
    optionalFields.set(def.schema, s);
  }
  return s;
}

/**
 * `obj` for its schema check without the top-level fields already known to pass it: the very
 * value the stored object holds (`stored`, as the caller read it: a status write or a metadata
 * patch built on the stored object carries its spec as it is), or a frozen rendered subtree that
 * passed this schema before (src/k8s/frozen-json.ts: a controller's one spec for many objects).
 * Such a field is checked when it was stored or first written, not again per write. So is an
 * item of a list the kind names in `statusItemLists` that is a frozen tree which passed the
 * schema before (`items` false: every item is kept, for a refusal's causes); `itemsLeftOut` says
 * whether any was left out.
 */
function trustedOmitted(
  def: KindDefinition,
  obj: JsonObject,
  stored: KubeObject | null | undefined,
  items = true,
): { value: JsonObject; itemsLeftOut: boolean } {
  let out: JsonObject | undefined;
  for (const k of TRUSTABLE) {
    const v = obj[k];
    if (v === undefined || v === null || typeof v !== "object") continue;
    const same = stored != null && (stored as unknown as JsonObject)[k] === v;
    if (!same && !checkedBy(v, def.schema)) continue;
    if (!omittable(def).has(k)) continue;
    out ??= { ...obj };
    delete out[k];
  }
  // The items of the kind's status lists that passed this schema before, frozen since (a
  // placement's entries of the clusters whose state did not move): the others are checked.
  let itemsLeftOut = false;
  const status = (out ?? obj).status;
  if (items && def.statusItemLists && isJsonObject(status)) {
    let trimmed: JsonObject | undefined;
    for (const list of def.statusItemLists) {
      const v = status[list];
      if (!Array.isArray(v) || !v.some((item) => checkedBy(item, def.schema))) continue;
      trimmed ??= { ...status };
      trimmed[list] = v.filter((item) => !checkedBy(item, def.schema));
      itemsLeftOut = true;
    }
    if (trimmed) out = { ...(out ?? obj), status: trimmed };
  }
  return { value: out ?? obj, itemsLeftOut };
}

/** The items of `obj`'s status lists that {@link KindDefinition.statusItemLists} names. */
function statusItems(def: KindDefinition, obj: JsonObject): unknown[] {
  const status = obj.status;
  if (!def.statusItemLists || !isJsonObject(status)) return [];
  return def.statusItemLists.flatMap((list) => (Array.isArray(status[list]) ? (status[list] as unknown[]) : []));
}

function finishValidation(def: KindDefinition, obj: KubeObject, old: KubeObject | undefined): void {
  const causes = [...validateMeta(def, obj), ...(def.validate?.(obj, old) ?? [])];
  if (causes.length > 0) throw invalid(ref(def, obj.metadata.name), causes);
}

function create(
  def: KindDefinition,
  key: ObjectKey,
  current: KubeObject | null,
  body: unknown,
  ctx: WriteContext,
  managed?: ManagedFieldsRule,
  withStatus = false,
): WriteResult {
  const obj = decode(def, body, key.name);
  const meta = obj.metadata;
  if (meta.resourceVersion) throw badRequest("resourceVersion should not be set on objects to be created", "metadata.resourceVersion");
  if (!meta.name && meta.generateName) meta.name = generatedName(meta.generateName);
  if (key.name && meta.name && key.name !== meta.name) {
    throw badRequest(`the name of the object (${meta.name}) does not match the name on the URL (${key.name})`, "metadata.name");
  }
  if (def.namespaced) {
    if (meta.namespace && meta.namespace !== key.namespace) {
      throw badRequest("the namespace of the provided object does not match the namespace sent on the request", "metadata.namespace");
    }
    meta.namespace = key.namespace;
  } else {
    delete meta.namespace;
  }
  if (current) throw alreadyExists(ref(def, meta.name));
  if (def.hasStatus && !withStatus) delete obj.status;
  def.defaults?.(obj);
  def.prepareForCreate?.(obj, ctx);
  finishValidation(def, obj, undefined);
  meta.uid = ctx.newUid();
  meta.creationTimestamp = rfc3339(ctx.now);
  meta.generation = 1;
  delete meta.deletionTimestamp;
  cleanMeta(obj);
  setManaged(def, null, obj, managed && "manager" in managed ? { manager: managed.manager, sent: undefined } : managed, "main", ctx);
  return { next: obj, created: true };
}

function update(
  def: KindDefinition,
  key: ObjectKey,
  current: KubeObject | null,
  body: unknown,
  subresource: "status" | undefined,
  ctx: WriteContext,
  managed?: ManagedFieldsRule,
  put = false,
): WriteResult {
  const incoming = decode(def, body, key.name, current);
  const sent = (incoming.metadata as { managedFields?: unknown }).managedFields;
  if (!current) throw notFound(ref(def, key.name));
  // kube-apiserver's checkName: the object names itself (a PUT without metadata, a patch that
  // removes it or its name, is refused), with the URL's name.
  if (!incoming.metadata.name) throw badRequest(`the name of the object (${key.name} based on URL) was undeterminable: name must be provided`, "metadata.name");
  if (incoming.metadata.name !== key.name) {
    throw badRequest(`the name of the object (${incoming.metadata.name}) does not match the name on the URL (${key.name})`, "metadata.name");
  }
  if (def.namespaced && incoming.metadata.namespace && incoming.metadata.namespace !== key.namespace) {
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request", "metadata.namespace");
  }
  // A PUT's metadata.uid is a precondition (rest.DefaultUpdatedObjectInfo's Preconditions, checked
  // by the storage before anything else: 409); a patch that changes it fails ObjectMeta's update
  // validation (422 field is immutable). An absent uid keeps the stored one.
  const uid = incoming.metadata.uid;
  const otherUid = !!uid && uid !== current.metadata.uid;
  if (otherUid && put) checkPreconditions(def, key, current, { uid });
  const rv = incoming.metadata.resourceVersion;
  if (rv && rv !== current.metadata.resourceVersion) {
    throw conflict(ref(def, key.name), "the object has been modified; please apply your changes to the latest version and try again");
  }
  if (otherUid)
    throw invalid(ref(def, key.name), [
      { field: "metadata.uid", message: `Invalid value: ${JSON.stringify(uid)}: field is immutable`, reason: "FieldValueInvalid" },
    ]);
  let next: KubeObject;
  if (subresource === "status") {
    if (!def.hasStatus) throw notFound(ref(def, key.name));
    // A copy of the stored object with the sent status in place of its own (which is not
    // copied: an agent's report would copy the status it replaces), the fields in their order. A
    // frozen rendered subtree (a placement's works share one spec, src/k8s/frozen-json.ts) is
    // shared, not copied: it cannot change in place, so a work's status report does not copy its
    // 51 manifests. Anything else is copied (a controller may change the result in place, as
    // reconcileManagedCluster does a cluster's spec.taints).
    const stored = current as unknown as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(stored)) {
      if (k === "status") {
        if (incoming.status !== undefined) out.status = incoming.status;
      } else out[k] = frozenJson(stored[k]) !== undefined ? stored[k] : structuredClone(stored[k]);
    }
    if (!("status" in stored) && incoming.status !== undefined) out.status = incoming.status;
    next = out as unknown as KubeObject;
  } else {
    next = incoming;
    next.metadata = {
      ...incoming.metadata,
      name: current.metadata.name,
      uid: current.metadata.uid,
      creationTimestamp: current.metadata.creationTimestamp,
      generation: current.metadata.generation,
      resourceVersion: current.metadata.resourceVersion,
    };
    if (def.namespaced) next.metadata.namespace = current.metadata.namespace;
    else delete next.metadata.namespace;
    if (current.metadata.deletionTimestamp) next.metadata.deletionTimestamp = current.metadata.deletionTimestamp;
    else delete next.metadata.deletionTimestamp;
    if (def.hasStatus) {
      if (current.status === undefined) delete next.status;
      else next.status = structuredClone(current.status);
    }
    def.defaults?.(next);
    def.prepareForUpdate?.(next, current, ctx);
  }
  finishValidation(def, next, current);
  cleanMeta(next);
  setManaged(
    def,
    current,
    next,
    managed && "manager" in managed ? { manager: managed.manager, sent } : managed,
    subresource === "status" && def.hasStatus ? "status" : "main",
    ctx,
  );
  if (subresource === "status") {
    // A status write keeps everything but the status and metadata (a copy of the stored object):
    // the spec, and so the generation, stay; the write is a no-op when those two are unchanged.
    const same = JSON.stringify(next.status) === JSON.stringify(current.status) && JSON.stringify(next.metadata) === JSON.stringify(current.metadata);
    return { next: same ? current : next, created: false };
  }
  if (!sameSpec(next, current)) {
    // A new generation differs from the stored object already: no need to compare the whole.
    next.metadata.generation = (current.metadata.generation ?? 1) + 1;
    return { next, created: false };
  }
  // The spec is the same (above): the rest decides whether anything changed.
  const same =
    next.apiVersion === current.apiVersion &&
    next.kind === current.kind &&
    JSON.stringify(next.metadata) === JSON.stringify(current.metadata) &&
    JSON.stringify(next.status) === JSON.stringify(current.status);
  if (same) return { next: current, created: false };
  return { next, created: false };
}

function patchObject(
  def: KindDefinition,
  key: ObjectKey,
  current: KubeObject | null,
  req: Extract<WriteRequest, { verb: "patch" }>,
  ctx: WriteContext,
): WriteResult {
  if (req.patchType === "apply") {
    if (!req.fieldManager) {
      throw new ApiError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch', {
        group: "meta.k8s.io",
        kind: "PatchOptions",
        causes: [{ reason: "FieldValueRequired", message: "Required value: is required for apply patch", field: "fieldManager" }],
      });
    }
    const body = req.patch;
    if (!isJsonObject(body)) throw badRequest("the apply patch must be an object");
    if (body.apiVersion !== apiVersionOf(def) || body.kind !== def.kind) {
      throw badRequest(`invalid object type: ${String(body.apiVersion)}, Kind=${String(body.kind)}`, "apiVersion");
    }
    if (isJsonObject(body.metadata) && body.metadata.managedFields != null) throw badRequest("metadata.managedFields must be nil", "metadata.managedFields");
    if (isJsonObject(body.metadata) && typeof body.metadata.name === "string" && body.metadata.name !== key.name) {
      throw badRequest(`the name of the object (${body.metadata.name}) does not match the name on the URL (${key.name})`, "metadata.name");
    }
    // A metadata of another type is refused as any body's is (422 `metadata`).
    if (body.metadata != null && !isJsonObject(body.metadata)) decode(def, body, key.name);
    const applied = stripNulls(body) as JsonObject;
    if (!isJsonObject(applied.metadata)) applied.metadata = {};
    defaultListMapKeys(def.schema, applied);
    const scope = req.subresource === "status" && def.hasStatus ? "status" : "main";
    const fm = fieldManagerContext(def, ctx);
    if (!current) {
      if (req.subresource === "status") throw notFound(ref(def, key.name));
      // kube-apiserver's patcher: an apply that names a uid creates nothing (409).
      const appliedUid = (applied.metadata as JsonObject).uid;
      if (typeof appliedUid === "string" && appliedUid !== "") {
        throw conflict(ref(def, key.name), `uid mismatch: the provided object specified uid ${appliedUid}, and no existing object was found`);
      }
      const made = serverSideApply({ current: undefined, applied: applied as KubeObject, manager: req.fieldManager, force: req.force === true, scope }, fm);
      return create(def, key, null, { ...body, metadata: { ...(isJsonObject(body.metadata) ? body.metadata : {}), name: key.name } }, ctx, {
        applied: made.metadata.managedFields,
      });
    }
    // A resourceVersion in the applied configuration is a precondition, as in kube-apiserver.
    const merged = serverSideApply({ current, applied: applied as KubeObject, manager: req.fieldManager, force: req.force === true, scope }, fm);
    const applyRv = (applied.metadata as JsonObject).resourceVersion;
    if (applyRv === undefined) merged.metadata.resourceVersion = current.metadata.resourceVersion;
    else merged.metadata.resourceVersion = applyRv as string;
    return update(def, key, current, merged, req.subresource, ctx, { applied: merged.metadata.managedFields });
  }
  if (req.force !== undefined) throw badRequest("force: Forbidden: may not be specified for non-apply patch", "force");
  if (!current) throw notFound(ref(def, key.name));
  const managed: ManagedFieldsRule = req.fieldManager ? { manager: req.fieldManager, sent: undefined } : undefined;
  if (req.patchType === "json") return update(def, key, current, jsonPatched(current, req.patch), req.subresource, ctx, managed);
  if (!isJsonObject(req.patch)) throw badRequest("the merge patch must be a JSON object");
  const merged = req.patchType === "strategic" ? strategicMergePatch(current, req.patch, (f) => patchMergeKey(def.schema, f)) : mergePatch(current, req.patch);
  const patchRv = isJsonObject(req.patch.metadata) ? req.patch.metadata.resourceVersion : undefined;
  return update(def, key, current, patchRv === undefined ? withRv(merged, current) : merged, req.subresource, ctx, managed);
}

/**
 * `current` with an RFC 6902 JSON patch applied, as kube-apiserver's patcher applies
 * `application/json-patch+json`: all operations or none; a `test` that does not hold, a path
 * that does not resolve or a malformed operation refuses the patch (422). The result keeps
 * `current`'s resourceVersion unless an operation sets it, which is then a precondition (409
 * when stale); server-owned fields are settled by the update that follows, as for every update.
 * @throws ApiError 400 when `patch` is not an array, 422 when it cannot be applied
 */
function jsonPatched(current: KubeObject, patch: unknown): unknown {
  if (!Array.isArray(patch)) throw badRequest("json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  const causes = jsonPatchErrors(patch, "patch");
  if (causes.length > 0) {
    throw new ApiError(422, "Invalid", `the JSON patch is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(", ")}`, {
      causes: causes.map((c) => ({ reason: c.reason ?? "FieldValueInvalid", message: c.message, field: c.field })),
    });
  }
  const outcome = applyJsonPatch(current, patch);
  if (!outcome.ok) throw new ApiError(422, "Invalid", outcome.message);
  return outcome.value;
}

function stripNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripNulls);
  if (!isJsonObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = stripNulls(x);
  return out;
}

function withRv(obj: unknown, current: KubeObject): unknown {
  // A metadata of the wrong type is left for decode() to refuse, not replaced.
  if (!isJsonObject(obj) || (obj.metadata != null && !isJsonObject(obj.metadata))) return obj;
  const meta = isJsonObject(obj.metadata) ? obj.metadata : {};
  return { ...obj, metadata: { ...meta, resourceVersion: current.metadata.resourceVersion } };
}

/** Checks `pre` against the stored `current` (metav1.Preconditions). @throws ApiError 409 Conflict naming the precondition that failed */
function checkPreconditions(def: KindDefinition, key: ObjectKey, current: KubeObject, pre: Preconditions | undefined): void {
  if (pre?.uid && pre.uid !== current.metadata.uid) {
    throw conflict(ref(def, key.name), `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid}`);
  }
  if (pre?.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion) {
    throw conflict(
      ref(def, key.name),
      `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
    );
  }
}

function remove(
  def: KindDefinition,
  key: ObjectKey,
  current: KubeObject | null,
  pre: Preconditions | undefined,
  ctx: WriteContext,
  policy?: DeletePropagation,
): WriteResult {
  if (!current) throw notFound(ref(def, key.name));
  def.validateDelete?.(current);
  checkPreconditions(def, key, current, pre);
  // Orphan and Foreground hold the object with their finalizer until the garbage collector has
  // dealt with its dependents (kube-apiserver's deletionFinalizersForGarbageCollection).
  if (policy === "Orphan" || policy === "Foreground") {
    const wanted = policy === "Orphan" ? ORPHAN_FINALIZER : FOREGROUND_FINALIZER;
    const unwanted = policy === "Orphan" ? FOREGROUND_FINALIZER : ORPHAN_FINALIZER;
    const finalizers = (current.metadata.finalizers ?? []).filter((f) => f !== unwanted);
    if (!finalizers.includes(wanted)) finalizers.push(wanted);
    // Asked again while it already waits so: nothing to write.
    if (current.metadata.deletionTimestamp && JSON.stringify(finalizers) === JSON.stringify(current.metadata.finalizers))
      return { next: current, created: false };
    const next = structuredClone(current);
    next.metadata.finalizers = finalizers;
    if (!next.metadata.deletionTimestamp) {
      next.metadata.deletionTimestamp = rfc3339(ctx.now);
      def.prepareForDelete?.(next, ctx);
    }
    return { next, created: false };
  }
  if ((current.metadata.finalizers?.length ?? 0) > 0 || def.holdsDeletion?.(current)) {
    if (current.metadata.deletionTimestamp) return { next: current, created: false };
    const next = structuredClone(current);
    next.metadata.deletionTimestamp = rfc3339(ctx.now);
    def.prepareForDelete?.(next, ctx);
    return { next, created: false };
  }
  return { next: null, created: false };
}

/**
 * Computes the result of `req` on `current` (null when the object does not exist).
 *
 * @throws ApiError 400 (malformed body, unknown fields, mismatched name/namespace/kind, an update
 * or patch whose object has no name), 404 (update/patch/delete of a missing object), 409
 * (AlreadyExists, stale resourceVersion, failed precondition, a PUT whose `metadata.uid` is not the
 * stored object's), 422 (invalid values, a patch that changes `metadata.uid`, missing
 * fieldManager for apply).
 */
export function computeWrite(def: KindDefinition, key: ObjectKey, current: KubeObject | null, req: WriteRequest, ctx: WriteContext): WriteResult {
  switch (req.verb) {
    case "create":
      return create(def, key, current, req.body, ctx, req.fieldManager ? { manager: req.fieldManager, sent: undefined } : undefined, req.withStatus === true);
    case "update":
      if (current) checkPreconditions(def, key, current, req.preconditions);
      return update(def, key, current, req.body, req.subresource, ctx, req.fieldManager ? { manager: req.fieldManager, sent: undefined } : undefined, true);
    case "patch":
      return patchObject(def, key, current, req, ctx);
    case "delete":
      return remove(def, key, current, req.preconditions, ctx, req.propagationPolicy);
  }
}

/**
 * Finishes a deletion once the last finalizer is gone: an object carrying a deletionTimestamp and
 * no finalizers (nor anything else its kind holds it by, `holdsDeletion`) is removed (returns
 * null), as the apiserver does on the update that clears them (`ShouldDeleteDuringUpdate`).
 */
export function settleDeletion(obj: KubeObject | null, def?: KindDefinition): KubeObject | null {
  if (obj && obj.metadata.deletionTimestamp && (obj.metadata.finalizers?.length ?? 0) === 0 && !def?.holdsDeletion?.(obj)) return null;
  return obj;
}
