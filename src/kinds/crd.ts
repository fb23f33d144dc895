/**
 * `apiextensions.k8s.io/v1` CustomResourceDefinition (cluster-scoped, short names `crd`,
 * `crds`) and the kinds of its custom resources, after apiextensions-apiserver:
 *
 * - validation as `pkg/apis/apiextensions/validation` `ValidateCustomResourceDefinition`: the
 *   name is `<plural>.<group>`, the group a domain with a dot (a `*.k8s.io` or
 *   `*.kubernetes.io` group needs the `api-approved.kubernetes.io` annotation), names DNS-1035
 *   labels, scope `Namespaced` or `Cluster`, versions unique with exactly one `storage`, a
 *   structural schema per version (src/k8s/structural.ts), subresources' JSON paths, printer
 *   columns; conversion strategy `None` only (`Webhook` is refused, 422 on
 *   `spec.conversion.strategy`); a CRD may not take a group and plural the hub itself serves
 *   (422 on `spec.names.plural`), nor change its group or scope;
 * - status as its controllers keep it, computed on each write of the CRD (the naming controller's
 *   `NamesAccepted` with `acceptedNames`, or a `...Conflict` against another CRD of the group;
 *   the establishing controller's `Established`; `storedVersions`); the finalizer
 *   `customresourcecleanup.apiextensions.k8s.io` set on create, and `Terminating` once deleted
 *   (src/gc/crd-cleanup.ts deletes the custom resources, then the finalizer);
 * - {@link customKindsOf}: one {@link KindDefinition} per served version of an Established CRD
 *   (src/kinds/index.ts serves them): pruning of unknown fields, defaulting, the structural
 *   validation and `x-kubernetes-validations` rules, `status` and `scale` subresources,
 *   `additionalPrinterColumns`, short names and categories, stored at the `storage` version.
 */
import { z } from "zod";
import { methodNotAllowed } from "../k8s/errors.ts";
import type { KindDefinition, PrinterColumn, VersionConversion, WriteContext } from "../k8s/kind.ts";
import { isJsonObject, ObjectMetaSchema, rfc3339, type KubeObject } from "../k8s/meta.ts";
import { evaluate } from "../k8s/jsonpath.ts";
import { applyDefaults, schemaErrors, unknownFields, unknownSchemaKeys, valueErrors, type SchemaProps } from "../k8s/structural.ts";
import { fieldForbidden, fieldInvalid, fieldNotSupported, fieldRequired, isDNS1035Label, isDNS1123Subdomain, type FieldError } from "../k8s/validation.ts";

/** The `counters` row every CRD write sets to its resourceVersion (`KindDefinition.changeCounter`; src/kinds/sync.ts `syncCustomKinds`). */
export const CRD_CHANGE_COUNTER = 3;

/** The finalizer that holds a deleted CRD until its custom resources are gone (apiextensions' `customresourcecleanup`). */
export const CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io";

/** The annotation a CRD in a protected group (`*.k8s.io`, `*.kubernetes.io`) must carry (KEP-1111). */
export const API_APPROVED_ANNOTATION = "api-approved.kubernetes.io";

/** A CRD's `spec.names` / `status.acceptedNames`. */
export interface CrdNames {
  plural: string;
  singular?: string;
  shortNames?: string[];
  kind: string;
  listKind?: string;
  categories?: string[];
}

/** One printer column as a CRD version declares it. */
interface CrdColumn {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

/** One `spec.versions` entry. */
export interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  schema?: { openAPIV3Schema?: SchemaProps };
  subresources?: { status?: Record<string, never>; scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string } };
  additionalPrinterColumns?: CrdColumn[];
  selectableFields?: { jsonPath: string }[];
}

/** A CRD's `spec`. */
export interface CrdSpec {
  group: string;
  names: CrdNames;
  scope: string;
  versions: CrdVersion[];
  conversion?: { strategy?: string; webhook?: unknown };
  preserveUnknownFields?: boolean;
}

/** A CRD condition (apiextensions' `CustomResourceDefinitionCondition`: no observedGeneration). */
interface CrdCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

/** A CRD's `status`. */
interface CrdStatus {
  conditions?: CrdCondition[];
  acceptedNames?: CrdNames;
  storedVersions?: string[];
}

const NamesSchema = z.strictObject({
  plural: z.string(),
  singular: z.string().optional(),
  shortNames: z.array(z.string()).nullable().optional(),
  kind: z.string(),
  listKind: z.string().optional(),
  categories: z.array(z.string()).nullable().optional(),
});

const ColumnSchema = z.strictObject({
  name: z.string(),
  type: z.string(),
  format: z.string().optional(),
  description: z.string().optional(),
  priority: z.number().int().optional(),
  jsonPath: z.string(),
});

const VersionSchema = z.strictObject({
  name: z.string(),
  served: z.boolean(),
  storage: z.boolean(),
  deprecated: z.boolean().optional(),
  deprecationWarning: z.string().optional(),
  schema: z
    .strictObject({ openAPIV3Schema: z.record(z.string(), z.unknown()).optional() })
    .nullable()
    .optional(),
  subresources: z
    .strictObject({
      status: z.strictObject({}).nullable().optional(),
      scale: z.strictObject({ specReplicasPath: z.string(), statusReplicasPath: z.string(), labelSelectorPath: z.string().optional() }).nullable().optional(),
    })
    .nullable()
    .optional(),
  additionalPrinterColumns: z.array(ColumnSchema).nullable().optional(),
  selectableFields: z
    .array(z.strictObject({ jsonPath: z.string() }))
    .nullable()
    .optional(),
});

const CrdSpecSchema = z.strictObject({
  group: z.string(),
  names: NamesSchema,
  scope: z.string(),
  versions: z.array(VersionSchema),
  conversion: z
    .strictObject({
      strategy: z.string(),
      webhook: z.record(z.string(), z.unknown()).nullable().optional(),
    })
    .nullable()
    .optional(),
  preserveUnknownFields: z.boolean().optional(),
});

const CrdConditionSchema = z.strictObject({
  type: z.string(),
  status: z.enum(["True", "False", "Unknown"]),
  lastTransitionTime: z.string().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
});

const CrdSchema = z
  .strictObject({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: ObjectMetaSchema,
    spec: CrdSpecSchema,
    status: z
      .strictObject({
        conditions: z.array(CrdConditionSchema).nullable().optional(),
        acceptedNames: NamesSchema.partial().nullable().optional(),
        storedVersions: z.array(z.string()).nullable().optional(),
      })
      .nullable()
      .optional(),
  })
  .superRefine((crd, ctx) => {
    // A JSONSchemaProps is strict: a key it does not have is an unknown field of the CRD.
    // Defensive: zod runs refinements after some issues, on input that may not have the schema's shape.
    const versions = isJsonObject(crd) && isJsonObject(crd.spec) ? (crd.spec as { versions?: unknown }).versions : undefined;
    if (!Array.isArray(versions)) return;
    versions.forEach((v: unknown, i) => {
      const schema = isJsonObject(v) && isJsonObject(v.schema) ? v.schema.openAPIV3Schema : undefined;
      if (!isJsonObject(schema)) return;
      for (const u of unknownSchemaKeys(schema, ["spec", "versions", i, "schema", "openAPIV3Schema"])) {
        ctx.addIssue({ code: "unrecognized_keys", keys: [u.key], path: u.path, input: crd });
      }
    });
  });

function specOf(obj: KubeObject): CrdSpec {
  return obj.spec as unknown as CrdSpec;
}

function statusOf(obj: KubeObject): CrdStatus {
  return (obj.status ?? {}) as CrdStatus;
}

function isProtectedGroup(group: string): boolean {
  return group === "k8s.io" || group.endsWith(".k8s.io") || group === "kubernetes.io" || group.endsWith(".kubernetes.io");
}

/** The names with apiextensions' defaults: `singular` the lowercased kind, `listKind` the kind + `List`. */
function defaultedNames(n: CrdNames): CrdNames {
  return { ...n, singular: n.singular || n.kind.toLowerCase(), listKind: n.listKind || `${n.kind}List` };
}

function namesErrors(n: CrdNames, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const label = (field: string, value: string | undefined, required: boolean) => {
    if (!value) {
      if (required) errs.push(fieldRequired(`${path}.${field}`, ""));
      return;
    }
    const e = isDNS1035Label(value);
    if (e.length > 0) errs.push(fieldInvalid(`${path}.${field}`, value, e.join(",")));
  };
  label("plural", n.plural, true);
  label("singular", n.singular, false);
  (n.shortNames ?? []).forEach((s, i) => label(`shortNames[${i}]`, s, true));
  (n.categories ?? []).forEach((s, i) => label(`categories[${i}]`, s, true));
  const kindLike = (field: string, value: string | undefined, required: boolean) => {
    if (!value) {
      if (required) errs.push(fieldRequired(`${path}.${field}`, ""));
      return;
    }
    const e = isDNS1035Label(value.toLowerCase());
    if (e.length > 0) errs.push(fieldInvalid(`${path}.${field}`, value, `may have mixed case, but should otherwise match: ${e.join(",")}`));
  };
  kindLike("kind", n.kind, true);
  kindLike("listKind", n.listKind, false);
  if (n.kind && n.listKind && n.kind === n.listKind) errs.push(fieldInvalid(`${path}.listKind`, n.listKind, "kind and listKind may not be the same"));
  return errs;
}

const COLUMN_TYPES = ["integer", "number", "string", "boolean", "date"];

function versionErrors(v: CrdVersion, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!v.name) errs.push(fieldRequired(`${path}.name`, ""));
  else {
    const e = isDNS1035Label(v.name);
    if (e.length > 0) errs.push(fieldInvalid(`${path}.name`, v.name, e.join(",")));
  }
  if (v.deprecationWarning !== undefined && !v.deprecated)
    errs.push(fieldInvalid(`${path}.deprecationWarning`, v.deprecationWarning, "can only be set for deprecated versions"));
  const schema = v.schema?.openAPIV3Schema;
  if (!schema) errs.push(fieldRequired(`${path}.schema.openAPIV3Schema`, "schemas are required"));
  else errs.push(...schemaErrors(schema, `${path}.schema.openAPIV3Schema`));
  const scale = v.subresources?.scale;
  if (scale) {
    const sp = `${path}.subresources.scale`;
    if (!scale.specReplicasPath) errs.push(fieldRequired(`${sp}.specReplicasPath`, ""));
    else if (!/^\.spec(\.[A-Za-z0-9_-]+)+$/.test(scale.specReplicasPath))
      errs.push(fieldInvalid(`${sp}.specReplicasPath`, scale.specReplicasPath, "should be a json path under .spec"));
    if (!scale.statusReplicasPath) errs.push(fieldRequired(`${sp}.statusReplicasPath`, ""));
    else if (!/^\.status(\.[A-Za-z0-9_-]+)+$/.test(scale.statusReplicasPath))
      errs.push(fieldInvalid(`${sp}.statusReplicasPath`, scale.statusReplicasPath, "should be a json path under .status"));
    if (scale.labelSelectorPath && !/^\.(spec|status)(\.[A-Za-z0-9_-]+)+$/.test(scale.labelSelectorPath))
      errs.push(fieldInvalid(`${sp}.labelSelectorPath`, scale.labelSelectorPath, "should be a json path under either .spec or .status"));
  }
  (v.additionalPrinterColumns ?? []).forEach((c, i) => {
    const cp = `${path}.additionalPrinterColumns[${i}]`;
    if (!c.name) errs.push(fieldRequired(`${cp}.name`, ""));
    if (!COLUMN_TYPES.includes(c.type)) errs.push(fieldNotSupported(`${cp}.type`, c.type, COLUMN_TYPES));
    if (!c.jsonPath) errs.push(fieldRequired(`${cp}.jsonPath`, ""));
    else {
      try {
        evaluate({}, c.jsonPath);
      } catch (e) {
        errs.push(fieldInvalid(`${cp}.jsonPath`, c.jsonPath, `must be a simple json path: ${e instanceof Error ? e.message : String(e)}`));
      }
    }
    if (c.priority !== undefined && c.priority < 0) errs.push(fieldInvalid(`${cp}.priority`, c.priority, "must be non-negative"));
  });
  (v.selectableFields ?? []).forEach((f, i) => {
    if (!/^(\.[A-Za-z0-9_-]+)+$/.test(f.jsonPath) || f.jsonPath.startsWith(".metadata"))
      errs.push(
        fieldInvalid(`${path}.selectableFields[${i}].jsonPath`, f.jsonPath, "must be a simple json path to a field of the resource other than metadata"),
      );
  });
  return errs;
}

/**
 * The field errors of a CRD (see the module comment); `builtins` are the hub's own kinds, which a
 * CRD may not shadow. `old` is the stored CRD on an update.
 */
function crdErrors(obj: KubeObject, old: KubeObject | undefined, builtins: readonly KindDefinition[]): FieldError[] {
  const errs: FieldError[] = [];
  const spec = specOf(obj);
  const n = spec.names;
  if (!spec.group) errs.push(fieldRequired("spec.group", ""));
  else {
    const e = isDNS1123Subdomain(spec.group);
    if (e.length > 0) errs.push(fieldInvalid("spec.group", spec.group, e.join(",")));
    if (!spec.group.includes(".")) errs.push(fieldInvalid("spec.group", spec.group, "should be a domain with at least one dot"));
    if (isProtectedGroup(spec.group) && !obj.metadata.annotations?.[API_APPROVED_ANNOTATION])
      errs.push(
        fieldRequired(
          `metadata.annotations[${API_APPROVED_ANNOTATION}]`,
          `protected groups must have approval annotation "${API_APPROVED_ANNOTATION}", see https://github.com/kubernetes/enhancements/pull/1111`,
        ),
      );
  }
  if (spec.group && n.plural && obj.metadata.name !== `${n.plural}.${spec.group}`)
    errs.push(fieldInvalid("metadata.name", obj.metadata.name, `must be spec.names.plural+"."+spec.group`));
  if (!spec.scope) errs.push(fieldRequired("spec.scope", ""));
  else if (spec.scope !== "Namespaced" && spec.scope !== "Cluster") errs.push(fieldNotSupported("spec.scope", spec.scope, ["Cluster", "Namespaced"]));
  errs.push(...namesErrors(n, "spec.names"));
  if (spec.versions.length === 0) errs.push(fieldRequired("spec.versions", "must have exactly one version marked as storage version"));
  const seen = new Set<string>();
  spec.versions.forEach((v, i) => {
    if (seen.has(v.name)) errs.push(fieldInvalid(`spec.versions[${i}].name`, v.name, "must be unique"));
    seen.add(v.name);
    errs.push(...versionErrors(v, `spec.versions[${i}]`));
  });
  const storage = spec.versions.filter((v) => v.storage).length;
  if (spec.versions.length > 0 && storage !== 1)
    errs.push({
      field: "spec.versions",
      reason: "FieldValueInvalid",
      message: `Invalid value: ${storage}: must have exactly one version marked as storage version`,
    });
  if (spec.versions.length > 0 && !spec.versions.some((v) => v.served))
    errs.push({ field: "spec.versions", reason: "FieldValueInvalid", message: "Invalid value: 0: must have at least one version served" });
  const strategy = spec.conversion?.strategy ?? "None";
  if (strategy !== "None") errs.push(fieldNotSupported("spec.conversion.strategy", strategy, ["None"]));
  else if (spec.conversion?.webhook) errs.push(fieldForbidden("spec.conversion.webhook", "should not be set when strategy is not set to Webhook"));
  if (spec.preserveUnknownFields === true)
    errs.push(fieldInvalid("spec.preserveUnknownFields", true, "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in openAPIV3Schema"));
  if (spec.group && n.plural && builtins.some((k) => k.group === spec.group && k.plural === n.plural))
    errs.push(
      fieldInvalid("spec.names.plural", n.plural, `the hub already serves ${n.plural} in group ${spec.group}: a CustomResourceDefinition may not shadow it`),
    );
  if (old) {
    const was = specOf(old);
    if (spec.group !== was.group) errs.push(fieldInvalid("spec.group", spec.group, "field is immutable"));
    if (spec.scope !== was.scope) errs.push(fieldInvalid("spec.scope", spec.scope, "field is immutable"));
    const stored = statusOf(obj).storedVersions ?? [];
    stored.forEach((sv, i) => {
      if (!spec.versions.some((v) => v.name === sv)) errs.push(fieldInvalid(`status.storedVersions[${i}]`, sv, "must appear in spec.versions"));
    });
  }
  return errs;
}

/** What the CRD kind's strategy reads besides the object: the hub's own kinds and the other CRDs (the isolate's cache). */
export interface CrdContext {
  builtins: readonly KindDefinition[];
  crds: readonly KubeObject[];
}

function setCrdCondition(conds: CrdCondition[], next: CrdCondition, now: string): void {
  const i = conds.findIndex((c) => c.type === next.type);
  if (i < 0) conds.push({ ...next, lastTransitionTime: now });
  else {
    const cur = conds[i]!;
    conds[i] = { ...next, lastTransitionTime: cur.status === next.status ? cur.lastTransitionTime : now };
  }
}

/**
 * The naming controller's verdict on `names` against the other CRDs of the group
 * (`pkg/controller/status/naming_controller.go`): the first conflict's reason and message, or null.
 */
function nameConflict(self: string, group: string, names: CrdNames, others: readonly KubeObject[]): { reason: string; message: string } | null {
  const used = new Set<string>();
  const kinds = new Set<string>();
  for (const o of others) {
    if (o.metadata.name === self || specOf(o)?.group !== group) continue;
    const a = statusOf(o).acceptedNames;
    if (!a?.plural) continue;
    for (const x of [a.plural, a.singular, ...(a.shortNames ?? [])]) if (x) used.add(x);
    for (const x of [a.kind, a.listKind]) if (x) kinds.add(x);
  }
  if (used.has(names.plural)) return { reason: "PluralConflict", message: `"${names.plural}" is already in use` };
  if (names.singular && used.has(names.singular)) return { reason: "SingularConflict", message: `"${names.singular}" is already in use` };
  for (const s of names.shortNames ?? []) if (used.has(s)) return { reason: "ShortNamesConflict", message: `"${s}" is already in use` };
  if (kinds.has(names.kind)) return { reason: "KindConflict", message: `"${names.kind}" is already in use` };
  if (names.listKind && kinds.has(names.listKind)) return { reason: "ListKindConflict", message: `"${names.listKind}" is already in use` };
  return null;
}

/** Sets the CRD's status as its naming and establishing controllers keep it (see the module comment). */
function computeStatus(obj: KubeObject, ctx: WriteContext, context: CrdContext): void {
  const spec = specOf(obj);
  const status: CrdStatus = structuredClone(statusOf(obj));
  const now = rfc3339(ctx.now);
  const conds = status.conditions ?? [];
  const names = defaultedNames(spec.names);
  const conflict = nameConflict(obj.metadata.name, spec.group, names, context.crds);
  if (conflict) {
    setCrdCondition(conds, { type: "NamesAccepted", status: "False", ...conflict }, now);
    status.acceptedNames ??= { plural: "", kind: "" };
  } else {
    setCrdCondition(conds, { type: "NamesAccepted", status: "True", reason: "NoConflicts", message: "no conflicts found" }, now);
    status.acceptedNames = {
      plural: names.plural,
      singular: names.singular,
      ...(names.shortNames?.length ? { shortNames: names.shortNames } : {}),
      kind: names.kind,
      listKind: names.listKind,
      ...(names.categories?.length ? { categories: names.categories } : {}),
    };
  }
  const established = conds.find((c) => c.type === "Established")?.status === "True";
  if (!established) {
    if (conflict) setCrdCondition(conds, { type: "Established", status: "False", reason: "NotAccepted", message: "not all names are accepted" }, now);
    else setCrdCondition(conds, { type: "Established", status: "True", reason: "InitialNamesAccepted", message: "the initial names have been accepted" }, now);
  }
  const storage = spec.versions.find((v) => v.storage)?.name;
  const stored = status.storedVersions ?? [];
  if (storage && !stored.includes(storage)) stored.push(storage);
  status.storedVersions = stored;
  status.conditions = conds;
  obj.status = status as unknown as KubeObject["status"];
}

/**
 * The CustomResourceDefinition kind; `context` answers the hub's own kinds (which a CRD may not
 * shadow) and the isolate's other CRDs (for the naming controller's conflicts) when a CRD is
 * written. src/kinds/index.ts makes the one instance.
 */
export function crdKind(context: () => CrdContext): KindDefinition {
  return {
    group: "apiextensions.k8s.io",
    version: "v1",
    kind: "CustomResourceDefinition",
    listKind: "CustomResourceDefinitionList",
    plural: "customresourcedefinitions",
    singular: "customresourcedefinition",
    shortNames: ["crd", "crds"],
    namespaced: false,
    hasStatus: true,
    schema: CrdSchema,
    storage: "d1",
    changeCounter: CRD_CHANGE_COUNTER,
    printerColumns: [{ name: "Created At", type: "string", jsonPath: ".metadata.creationTimestamp" }],
    defaults(obj) {
      const spec = specOf(obj);
      if (isJsonObject(spec)) spec.conversion ??= { strategy: "None" };
    },
    validate(obj, old) {
      return crdErrors(obj, old, context().builtins);
    },
    prepareForCreate(obj, ctx) {
      const f = obj.metadata.finalizers ?? [];
      if (!f.includes(CRD_CLEANUP_FINALIZER)) obj.metadata.finalizers = [...f, CRD_CLEANUP_FINALIZER];
      computeStatus(obj, ctx, context());
    },
    prepareForUpdate(obj, _old, ctx) {
      if (!obj.metadata.deletionTimestamp) computeStatus(obj, ctx, context());
    },
    prepareForDelete(obj, ctx) {
      const status: CrdStatus = structuredClone(statusOf(obj));
      const conds = status.conditions ?? [];
      setCrdCondition(
        conds,
        { type: "Terminating", status: "True", reason: "InstanceDeletionInProgress", message: "CustomResource deletion is in progress" },
        rfc3339(ctx.now),
      );
      status.conditions = conds;
      obj.status = status as unknown as KubeObject["status"];
    },
  };
}

/** Whether the CRD is Established (its kinds are served). */
export function isEstablished(crd: KubeObject): boolean {
  return (statusOf(crd).conditions ?? []).some((c) => c.type === "Established" && c.status === "True");
}

/** The served names of a CRD: its `status.acceptedNames` with apiextensions' defaults. */
function servedNames(crd: KubeObject): CrdNames {
  const a = statusOf(crd).acceptedNames;
  return defaultedNames(a?.plural && a.kind ? (a as CrdNames) : specOf(crd).names);
}

/** The root zod schema of a custom resource: ObjectMeta checked, unknown fields reported as pruning finds them. */
function resourceSchema(schema: SchemaProps): z.ZodType {
  return z
    .looseObject({
      apiVersion: z.string().optional(),
      kind: z.string().optional(),
      metadata: ObjectMetaSchema.optional(),
    })
    .superRefine((obj, ctx) => {
      for (const u of unknownFields(schema, obj)) ctx.addIssue({ code: "unrecognized_keys", keys: [u.key], path: u.path, input: obj });
    });
}

function columnsOf(v: CrdVersion): PrinterColumn[] | undefined {
  const cols = v.additionalPrinterColumns;
  if (!cols || cols.length === 0) return undefined;
  return [...cols.map((c) => ({ name: c.name, type: c.type as PrinterColumn["type"], jsonPath: c.jsonPath, priority: c.priority ?? 0 }))];
}

/**
 * The kind of one served version `v` of `crd` (see the module comment); `storage` is the storage
 * version's kind when `v` is another version (its objects are that kind's, converted).
 */
function versionKind(crd: KubeObject, v: CrdVersion, storage: KindDefinition | undefined): KindDefinition {
  const spec = specOf(crd);
  const names = servedNames(crd);
  const schema = (v.schema?.openAPIV3Schema ?? { type: "object", "x-kubernetes-preserve-unknown-fields": true }) as SchemaProps;
  const terminating = Boolean(crd.metadata.deletionTimestamp);
  const apiVersion = `${spec.group}/${v.name}`;
  const selectable = (v.selectableFields ?? []).map((f) => f.jsonPath);
  const def: KindDefinition = {
    group: spec.group,
    version: v.name,
    kind: names.kind,
    listKind: names.listKind!,
    plural: names.plural,
    singular: names.singular!,
    shortNames: names.shortNames ?? [],
    ...(names.categories?.length ? { categories: names.categories } : {}),
    namespaced: spec.scope === "Namespaced",
    hasStatus: Boolean(v.subresources?.status !== undefined && v.subresources?.status !== null),
    schema: resourceSchema(schema),
    storage: "d1",
    printerColumns: columnsOf(v),
    openApiSchema: schema as Record<string, unknown>,
    ...(v.subresources?.scale ? { scale: v.subresources.scale } : {}),
    ...(selectable.length > 0
      ? {
          fieldSelectors: (obj: KubeObject) => {
            const out: Record<string, string> = { "metadata.name": obj.metadata.name, "metadata.namespace": obj.metadata.namespace ?? "" };
            for (const p of selectable) {
              const found = evaluate(obj, p)[0];
              out[p.slice(1)] = found === undefined || found === null ? "" : String(found);
            }
            return out;
          },
        }
      : {}),
    defaults(obj) {
      applyDefaults(schema, obj);
    },
    validate(obj, old) {
      return valueErrors(schema, obj, old);
    },
    prepareForCreate() {
      if (terminating) throw methodNotAllowed(`create not allowed while custom resource definition is terminating`);
    },
  };
  if (storage) {
    const conversion: VersionConversion = {
      storage,
      toStorage: (o) => ({ ...o, apiVersion: `${spec.group}/${storage.version}` }),
      fromStorage: (o) => ({ ...o, apiVersion }),
    };
    def.conversion = conversion;
  }
  return def;
}

/**
 * The kind that stores `crd`'s custom resources (its `storage` version's), whether or not the CRD
 * is Established: what the cleanup of a deleted CRD lists and deletes. Undefined when the CRD has
 * no storage version.
 */
export function storageKindOf(crd: KubeObject): KindDefinition | undefined {
  const v = specOf(crd)?.versions?.find((x) => x.storage);
  return v ? versionKind(crd, v, undefined) : undefined;
}

/**
 * The kinds of `crd`: one per served version, in the CRD's order, when the CRD is Established
 * (none otherwise). The storage version's kind stores the objects; each other version's converts
 * to it ({@link VersionConversion}, strategy `None`). Pure: built from the object alone.
 */
export function customKindsOf(crd: KubeObject): KindDefinition[] {
  if (!isEstablished(crd)) return [];
  const spec = specOf(crd);
  const storageVersion = spec.versions.find((v) => v.storage);
  if (!storageVersion) return [];
  const storage = versionKind(crd, storageVersion, undefined);
  return sortVersions(spec.versions.filter((v) => v.served)).map((v) => (v === storageVersion ? storage : versionKind(crd, v, storage)));
}

/** Kubernetes' version priority (`version.CompareKubeAwareVersionStrings`): GA before beta before alpha, higher first; others last, alphabetically. */
function sortVersions(versions: CrdVersion[]): CrdVersion[] {
  const rank = (name: string): [number, number, number, string] => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(name);
    if (!m) return [3, 0, 0, name];
    const stage = m[2] === undefined ? 0 : m[2] === "beta" ? 1 : 2;
    return [stage, -Number(m[1]), -Number(m[3] ?? 0), name];
  };
  return [...versions].sort((a, b) => {
    const [x, y] = [rank(a.name), rank(b.name)];
    for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
    return x[3] < y[3] ? -1 : x[3] > y[3] ? 1 : 0;
  });
}
