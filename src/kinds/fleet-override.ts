/**
 * KubeFleet's overrides (kubefleet-dev/kubefleet `apis/placement/v1beta1/override_types.go`,
 * `overridesnapshot_types.go`; docs/overrides.md): ClusterResourceOverride (cluster-scoped,
 * selecting cluster-scoped objects by name; a Namespace selector covers every object in it) and
 * ResourceOverride (namespaced, selecting objects of its namespace by name), served in v1beta1
 * (storage) and v1 (the same fields, as KubeFleet's), and their snapshots
 * (ClusterResourceOverrideSnapshot, ResourceOverrideSnapshot), written by the override
 * controller (src/overrides/snapshots.ts) and read-only to users.
 *
 * Validation, with KubeFleet's messages: the CRDs' schema (1 to 20 selectors, 1 to 20 rules, 1 to
 * 20 JSON patches, `op` add/remove/replace, `overrideType` JSONPatch/Delete defaulting to
 * JSONPatch, `placement.scope` Cluster/Namespaced defaulting to Cluster), their CEL rules (a
 * ClusterResourceOverride's placement may not be Namespaced; `placement` is immutable), and the
 * validating webhooks (`pkg/utils/validator/clusterresourceoverride.go`, `resourceoverride.go`,
 * `pkg/webhook/*override*`): name selectors only, no duplicate selector, one override per
 * selected object, at most 100 overrides (per namespace for ResourceOverrides), cluster selectors
 * by label only, paths under `kind`, `apiVersion`, `status` or `metadata` (but its labels and
 * annotations) refused, no value on a remove, no JSON patches on a Delete rule. The checks
 * against the other overrides need them listed: admission passes them in the write's extras
 * ({@link OVERRIDE_SIBLINGS_EXTRA}, src/admission/store.ts) and {@link overrideFinalize} checks
 * the object about to be stored against them. A write that leaves the spec as stored (the
 * controller's finalizer, a deletion) is not validated again.
 */
import { z } from "zod";
import { invalid, type StatusCause } from "../k8s/errors.ts";
import type { KindDefinition, PrinterColumn, WriteContext } from "../k8s/kind.ts";
import { deepEqual } from "../k8s/fieldmanager.ts";
import { objectSchema, type KubeObject } from "../k8s/meta.ts";
import {
  aggregate,
  goLabelSelector,
  goResourceSelectorTerm,
  labelSelectorAsSelectorError,
  type ClusterSelectorTerm,
  type ResourceSelectorTerm,
} from "./fleet-validation.ts";

export { goLabelSelector, goResourceSelectorTerm } from "./fleet-validation.ts";
import { ClusterSelectorTermSchema, FLEET_GROUP, FLEET_PREFIX, ResourceSelectorTermSchema, systemKind } from "./fleet.ts";

/** Label on an override snapshot: the override it snapshots (KubeFleet's `OverrideTrackingLabel`). */
export const OVERRIDE_TRACKING_LABEL = `${FLEET_PREFIX}parent-resource-override`;
/** Label on an override snapshot: its index (KubeFleet's `OverrideIndexLabel`). */
export const OVERRIDE_INDEX_LABEL = `${FLEET_PREFIX}override-index`;
/** The finalizer the override controller keeps on an override until its snapshots are gone (KubeFleet's `OverrideFinalizer`). */
export const OVERRIDE_FINALIZER = `${FLEET_PREFIX}override-cleanup`;
/** The key of `WriteContext.extras` under which admission passes the other overrides (of the namespace, for a ResourceOverride). */
export const OVERRIDE_SIBLINGS_EXTRA = "fleetOverrideSiblings";
/** KubeFleet's webhooks' limit: at most this many ClusterResourceOverrides, or ResourceOverrides per namespace. */
export const MAX_OVERRIDES = 100;

/**
 * The `placement.scope` by which a ResourceOverride names a ManifestWorkReplicaSet of its
 * namespace (Flotilla's extension of KubeFleet's Cluster/Namespaced; docs/overrides.md
 * "ManifestWorkReplicaSets").
 */
export const REPLICA_SET_SCOPE = "ManifestWorkReplicaSet";
/**
 * The `placement.scope` by which a ClusterResourceOverride names a template add-on, its
 * ClusterManagementAddOn (Flotilla's extension; docs/overrides.md "Template add-ons").
 */
export const ADDON_SCOPE = "ClusterManagementAddOn";
/** A `PlacementRef` of an override. */
export type OverridePlacementRef = { name: string; scope?: "Cluster" | "Namespaced" | typeof REPLICA_SET_SCOPE | typeof ADDON_SCOPE };
/** A `JSONPatchOverride` (`value` is any JSON, absent for a remove). */
export type JsonPatchOverride = { op: "add" | "remove" | "replace"; path: string; value?: unknown };
/** An `OverrideRule`. `clusterSelector` absent: no cluster; with no terms: every cluster; terms are ORed. */
export type OverrideRule = {
  clusterSelector?: { clusterSelectorTerms?: ClusterSelectorTerm[] | null } | null;
  overrideType?: "JSONPatch" | "Delete";
  jsonPatchOverrides?: JsonPatchOverride[];
};
/** An `OverridePolicy`. */
export type OverridePolicy = { overrideRules: OverrideRule[] };
/** A `ResourceSelector` of a ResourceOverride (its namespace is the override's). */
export type OverrideResourceSelector = { group: string; version: string; kind: string; name: string };
/** A `ClusterResourceOverrideSpec` as stored. */
export type ClusterResourceOverrideSpec = { placement?: OverridePlacementRef; clusterResourceSelectors: ResourceSelectorTerm[]; policy: OverridePolicy };
/** A `ResourceOverrideSpec` as stored. */
export type ResourceOverrideSpec = { placement?: OverridePlacementRef; resourceSelectors: OverrideResourceSelector[]; policy: OverridePolicy };

const PlacementRefSchema = z.strictObject({
  name: z.string().describe("The name of the placement."),
  scope: z
    .enum(["Cluster", "Namespaced", REPLICA_SET_SCOPE, ADDON_SCOPE])
    .optional()
    .describe(
      "Cluster (a ClusterResourcePlacement, the default), Namespaced (a ResourcePlacement), for a ResourceOverride ManifestWorkReplicaSet (one of its namespace; Flotilla's), for a ClusterResourceOverride ClusterManagementAddOn (a template add-on; Flotilla's).",
    ),
});

const JsonPatchOverrideSchema = z.strictObject({
  op: z.enum(["add", "remove", "replace"]).describe("The operation on the target field."),
  path: z.string().describe("The target location, a JSON Pointer (RFC 6901); the override fails if it does not resolve."),
  value: z
    .unknown()
    .optional()
    .describe("The content for add and replace; `${MEMBER-CLUSTER-NAME}` and `${MEMBER-CLUSTER-LABEL-KEY-<key>}` are replaced per cluster."),
});

const OverrideRuleSchema = z.strictObject({
  clusterSelector: z
    .strictObject({ clusterSelectorTerms: z.array(ClusterSelectorTermSchema).max(10).nullable().optional() })
    .nullable()
    .optional()
    .describe("The clusters the rule applies to: absent, none; no terms, every cluster; terms ORed (labelSelector only)."),
  overrideType: z.enum(["JSONPatch", "Delete"]).optional().describe("JSONPatch (the default) or Delete (the object is not placed on the clusters)."),
  jsonPatchOverrides: z.array(JsonPatchOverrideSchema).min(1).max(20).optional().describe("1 to 20 JSON patches, applied in order (JSONPatch only)."),
});

const OverridePolicySchema = z.strictObject({
  overrideRules: z.array(OverrideRuleSchema).min(1).max(20).describe("1 to 20 rules, applied in order; on the same field the last wins."),
});

const ClusterResourceOverrideSpecSchema = z.strictObject({
  placement: PlacementRefSchema.optional().describe("The ClusterResourcePlacement the override is for (immutable); absent: every placement."),
  clusterResourceSelectors: z
    .array(ResourceSelectorTermSchema)
    .min(1)
    .max(20)
    .describe("1 to 20 cluster-scoped objects, by name (ORed); a Namespace selects every object in it."),
  policy: OverridePolicySchema,
});

const ResourceSelectorSchema = z.strictObject({ group: z.string(), version: z.string(), kind: z.string(), name: z.string() });

const ResourceOverrideSpecSchema = z.strictObject({
  placement: PlacementRefSchema.optional().describe(
    "The placement the override is for (immutable): a ClusterResourcePlacement, or a ResourcePlacement of its namespace.",
  ),
  resourceSelectors: z.array(ResourceSelectorSchema).min(1).max(20).describe("1 to 20 objects of the override's namespace, by name (ORed)."),
  policy: OverridePolicySchema,
});

/** The CRDs' defaults (apiserver defaulting): `overrideType` JSONPatch, `placement.scope` Cluster, a Namespace selector's scope. */
export function setOverrideDefaults(spec: Partial<ClusterResourceOverrideSpec & ResourceOverrideSpec>): void {
  if (spec.placement && typeof spec.placement === "object") spec.placement.scope ??= "Cluster";
  for (const s of spec.clusterResourceSelectors ?? []) if (s && typeof s === "object") s.selectionScope ??= "NamespaceWithResources";
  for (const r of spec.policy?.overrideRules ?? []) if (r && typeof r === "object") r.overrideType ??= "JSONPatch";
}

// ---------------------------------------------------------------------------------------------
// Go's formatting, as KubeFleet's messages print its types (`%+v`, `%s`).

/** `%+v` of a ResourceOverride's `ResourceSelector`. */
export function goResourceSelector(s: OverrideResourceSelector): string {
  return `{Group:${s.group ?? ""} Version:${s.version ?? ""} Kind:${s.kind ?? ""} Name:${s.name ?? ""}}`;
}

/** `%+v` of a `ClusterSelectorTerm` (its other pointers print as addresses in Go; here as `&{...}`). */
function goClusterSelectorTerm(t: ClusterSelectorTerm): string {
  const ptr = (v: unknown) => (v === undefined || v === null ? "<nil>" : `&${JSON.stringify(v)}`);
  return `{LabelSelector:${goLabelSelector(t.labelSelector)} PropertySelector:${ptr(t.propertySelector)} PropertySorter:${ptr(t.propertySorter)}}`;
}

/** `%s` of a `JSONPatchOverride`: `{op path {value}}`. */
export function goJsonPatchOverride(p: JsonPatchOverride): string {
  return `{${p.op ?? ""} ${p.path ?? ""} {${p.value !== undefined ? JSON.stringify(p.value) : ""}}}`;
}

// ---------------------------------------------------------------------------------------------
// The webhooks' rules.

/** KubeFleet's `validateJSONPatchOverridePath`: the error, or null. */
export function jsonPatchPathError(path: string): string | null {
  if (path === "") return "path cannot be empty";
  if (!path.startsWith("/")) return "path must start with /";
  const parts = path.split("/").slice(1);
  switch (parts[0]) {
    case "kind":
    case "apiVersion":
      return "cannot override typeMeta fields";
    case "metadata":
      if (parts.length === 1) return "cannot override field metadata";
      if (parts[1] !== "annotations" && parts[1] !== "labels") return "cannot override metadata fields except annotations and labels";
      break;
    case "status":
      return "cannot override status fields";
  }
  if (parts.some((p) => p.trim().length === 0)) return "path cannot contain empty string";
  return null;
}

/** KubeFleet's `validateOverridePolicy`: the errors of the rules (the first Delete rule with JSON patches stops there, as KubeFleet's returns). */
export function overridePolicyErrors(policy: OverridePolicy): string[] {
  const out: string[] = [];
  for (const rule of policy.overrideRules ?? []) {
    for (const term of rule.clusterSelector?.clusterSelectorTerms ?? []) {
      if (term.propertySelector || term.propertySorter) {
        out.push(`invalid clusterSelector ${goClusterSelectorTerm(term)}: only labelSelector is supported`);
        continue;
      }
      if (!term.labelSelector) out.push(`invalid clusterSelector ${goClusterSelectorTerm(term)}: labelSelector is required`);
      else {
        const err = labelSelectorAsSelectorError(term.labelSelector);
        if (err) out.push(`the labelSelector in cluster selector ${goLabelSelector(term.labelSelector)} is invalid: ${err}`);
      }
    }
    const type = rule.overrideType ?? "JSONPatch";
    if (type === "Delete") {
      if ((rule.jsonPatchOverrides ?? []).length !== 0)
        return ["invalid JSONPatchOverrides: JSONPatchOverrides cannot be set when the override type is Delete"];
    } else if (type === "JSONPatch") {
      const patches = rule.jsonPatchOverrides ?? [];
      if (patches.length === 0) {
        out.push("invalid JSONPatchOverrides: JSONPatchOverrides cannot be empty");
        continue;
      }
      const errs: string[] = [];
      for (const p of patches) {
        const pathErr = jsonPatchPathError(p.path ?? "");
        if (pathErr) errs.push(`invalid JSONPatchOverride ${goJsonPatchOverride(p)}: ${pathErr}`);
        if (p.op === "remove" && p.value !== undefined) errs.push(`invalid JSONPatchOverride ${goJsonPatchOverride(p)}: remove operation cannot have value`);
      }
      // apimachinery's aggregate flattens the rule's aggregate into the policy's.
      out.push(...errs);
    }
  }
  return out;
}

/** KubeFleet's `validateClusterResourceSelectors`: name selectors only, each once. */
function clusterResourceSelectorErrors(selectors: ResourceSelectorTerm[]): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const s of selectors) {
    if (s.labelSelector) {
      out.push(`label selector is not supported for resource selection ${goResourceSelectorTerm(s)}`);
      continue;
    }
    if (!s.name) {
      out.push(`resource name is required for resource selection ${goResourceSelectorTerm(s)}`);
      continue;
    }
    const key = goResourceSelectorTerm(s);
    if (seen.has(key)) out.push(`resource selector ${key} already exists, and must be unique`);
    seen.add(key);
  }
  return out;
}

/** KubeFleet's `validateResourceSelectors` of a ResourceOverride: each selector once. */
function resourceSelectorErrors(selectors: OverrideResourceSelector[]): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const s of selectors) {
    const key = goResourceSelector(s);
    if (seen.has(key)) out.push(`resource selector ${key} already exists, and must be unique`);
    seen.add(key);
  }
  return out;
}

/**
 * KubeFleet's `validateClusterResourceOverrideResourceLimit` / `validateResourceOverrideResourceLimit`:
 * a selector another override (of `siblings`, this one's stored self ignored) already has (for
 * a ResourceOverride naming a ManifestWorkReplicaSet: another naming the same replica set; a
 * ClusterResourceOverride naming a template add-on: another naming the same add-on).
 */
export function overrideLimitErrors(obj: KubeObject, siblings: readonly KubeObject[], clusterScoped: boolean): string[] {
  const selectorsOf = (o: KubeObject): { key: string; text: string }[] => {
    const spec = (o.spec ?? {}) as Partial<ClusterResourceOverrideSpec & ResourceOverrideSpec>;
    return clusterScoped
      ? (spec.clusterResourceSelectors ?? []).map((s) => ({ key: `${replicaSetOf(spec)}${goResourceSelectorTerm(s)}`, text: goResourceSelectorTerm(s) }))
      : (spec.resourceSelectors ?? []).map((s) => ({ key: `${replicaSetOf(spec)}${goResourceSelector(s)}`, text: goResourceSelector(s) }));
  };
  // A ResourceOverride naming a ManifestWorkReplicaSet selects that replica set's manifests, not
  // the namespace's objects: it conflicts only with another naming the same replica set (and a
  // ClusterResourceOverride naming an add-on only with another naming the same add-on).
  const replicaSetOf = (spec: Partial<ResourceOverrideSpec>) =>
    spec.placement?.scope === REPLICA_SET_SCOPE || spec.placement?.scope === ADDON_SCOPE ? `${spec.placement.scope}/${spec.placement.name}:` : "";
  const owner = new Map<string, string>();
  for (const o of siblings) for (const s of selectorsOf(o)) owner.set(s.key, o.metadata.name);
  const out: string[] = [];
  for (const s of selectorsOf(obj)) {
    const other = owner.get(s.key);
    if (other && other !== obj.metadata.name)
      out.push(`invalid resource selector ${s.text}: the resource has been selected by both ${obj.metadata.name} and ${other}, which is not supported`);
  }
  return out;
}

/**
 * The CRD's CEL rules and the webhook's rules that need no other object (KubeFleet's
 * `ValidateClusterResourceOverride` / `ValidateResourceOverride` less the resource limit), as
 * 422 causes. `old` is the stored object on an update.
 */
export function validateOverride(obj: KubeObject, old: KubeObject | undefined, clusterScoped: boolean): StatusCause[] {
  if (old && (deepEqual(old.spec ?? null, obj.spec ?? null) || obj.metadata.deletionTimestamp)) return [];
  const spec = (obj.spec ?? {}) as Partial<ClusterResourceOverrideSpec & ResourceOverrideSpec>;
  const causes: StatusCause[] = [];
  const rule = (field: string, message: string) => causes.push({ field, reason: "FieldValueInvalid", message: `Invalid value: "object": ${message}` });
  if (clusterScoped && spec.placement?.scope === "Namespaced") rule("", "clusterResourceOverride placement reference cannot be Namespaced scope");
  if (clusterScoped && spec.placement?.scope === REPLICA_SET_SCOPE)
    rule(
      "",
      "clusterResourceOverride placement reference cannot be ManifestWorkReplicaSet scope: a ManifestWorkReplicaSet is named by a ResourceOverride of its namespace",
    );
  if (!clusterScoped && spec.placement?.scope === ADDON_SCOPE)
    rule(
      "",
      "resourceOverride placement reference cannot be ClusterManagementAddOn scope: a template add-on is named by a ClusterResourceOverride (a ClusterManagementAddOn is cluster-scoped)",
    );
  if (old) {
    const was = (old.spec as { placement?: unknown } | undefined)?.placement;
    if (!deepEqual(was ?? null, spec.placement ?? null)) rule("spec", "The placement field is immutable");
  }
  if (causes.length) return causes;
  const selectorErrs = clusterScoped
    ? clusterResourceSelectorErrors(spec.clusterResourceSelectors ?? [])
    : resourceSelectorErrors(spec.resourceSelectors ?? []);
  if (selectorErrs.length) return [{ field: "spec", reason: "FieldValueInvalid", message: aggregate(selectorErrs) }];
  const errs = spec.policy ? overridePolicyErrors(spec.policy) : [];
  if (errs.length) causes.push({ field: "spec.policy", reason: "FieldValueInvalid", message: aggregate(errs) });
  return causes;
}

/**
 * The kinds' last write step: the checks against the other overrides admission listed (see the
 * module comment): at most {@link MAX_OVERRIDES} on a create, and no object selected by two.
 * Skipped when the write carries no list (a dry run, a controller's write) or leaves the spec as stored.
 * @throws ApiError 422 with KubeFleet's webhook's message
 */
export async function overrideFinalize(def: KindDefinition, obj: KubeObject, old: KubeObject | null, ctx: WriteContext): Promise<void> {
  const siblings = ctx.extras?.[OVERRIDE_SIBLINGS_EXTRA] as KubeObject[] | undefined;
  if (!siblings || obj.metadata.deletionTimestamp || (old && deepEqual(old.spec ?? null, obj.spec ?? null))) return;
  const ref = { group: def.group, kind: def.kind, plural: def.plural, name: obj.metadata.name };
  const what = def.namespaced
    ? "resourceOverride limit has been reached: at most 100 resources can be created."
    : "clusterResourceOverride limit has been reached: at most 100 cluster resources can be created.";
  if (!old && siblings.filter((s) => s.metadata.name !== obj.metadata.name).length >= MAX_OVERRIDES)
    throw invalid(ref, [{ field: "", reason: "FieldValueForbidden", message: what }]);
  const errs = overrideLimitErrors(obj, siblings, !def.namespaced);
  if (errs.length) throw invalid(ref, [{ field: "spec", reason: "FieldValueInvalid", message: aggregate(errs) }]);
}

const COLUMNS: PrinterColumn[] = [
  { name: "Gen", type: "string", jsonPath: ".metadata.generation" },
  { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
];

function overrideKind(kind: string, plural: string, shortName: string, namespaced: boolean, spec: z.ZodType, version: string): KindDefinition {
  const def: KindDefinition = {
    group: FLEET_GROUP,
    version,
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
    shortNames: [shortName],
    categories: ["fleet", "fleet-placement"],
    namespaced,
    hasStatus: false,
    schema: objectSchema(spec, z.strictObject({}), true),
    storage: "d1",
    printerColumns: COLUMNS,
    defaults(obj) {
      if (obj.spec && typeof obj.spec === "object") setOverrideDefaults(obj.spec as Partial<ClusterResourceOverrideSpec & ResourceOverrideSpec>);
    },
    validate: (obj, old) => validateOverride(obj, old, !namespaced),
    finalize: (obj, old, ctx) => overrideFinalize(def, obj, old, ctx),
  };
  return def;
}

const withVersion = (version: string) => (o: KubeObject) => ({ ...o, apiVersion: `${FLEET_GROUP}/${version}` });

/** ClusterResourceOverride, v1beta1 (storage). */
export const ClusterResourceOverrideKind = overrideKind(
  "ClusterResourceOverride",
  "clusterresourceoverrides",
  "cro",
  false,
  ClusterResourceOverrideSpecSchema,
  "v1beta1",
);
/** ClusterResourceOverride, v1 (the same fields, stored as v1beta1). */
export const ClusterResourceOverrideV1Kind: KindDefinition = {
  ...overrideKind("ClusterResourceOverride", "clusterresourceoverrides", "cro", false, ClusterResourceOverrideSpecSchema, "v1"),
  conversion: { storage: ClusterResourceOverrideKind, toStorage: withVersion("v1beta1"), fromStorage: withVersion("v1") },
};
/** ResourceOverride, v1beta1 (storage). */
export const ResourceOverrideKind = overrideKind("ResourceOverride", "resourceoverrides", "ro", true, ResourceOverrideSpecSchema, "v1beta1");
/** ResourceOverride, v1 (the same fields, stored as v1beta1). */
export const ResourceOverrideV1Kind: KindDefinition = {
  ...overrideKind("ResourceOverride", "resourceoverrides", "ro", true, ResourceOverrideSpecSchema, "v1"),
  conversion: { storage: ResourceOverrideKind, toStorage: withVersion("v1beta1"), fromStorage: withVersion("v1") },
};

const SnapshotStatusSchema = z.strictObject({});
const CroSnapshotSpecSchema = z.strictObject({ overrideSpec: ClusterResourceOverrideSpecSchema, overrideHash: z.string() });
const RoSnapshotSpecSchema = z.strictObject({ overrideSpec: ResourceOverrideSpecSchema, overrideHash: z.string() });

/** ClusterResourceOverrideSnapshot `<cro>-<index>` in v1beta1 and v1: the override's spec and its hash, written by the override controller. */
export const [ClusterResourceOverrideSnapshotKind, ClusterResourceOverrideSnapshotV1Kind] = systemKind(
  "ClusterResourceOverrideSnapshot",
  "clusterresourceoverridesnapshots",
  "cros",
  false,
  CroSnapshotSpecSchema,
  SnapshotStatusSchema,
  COLUMNS,
);
/** ResourceOverrideSnapshot `<ro>-<index>` in v1beta1 and v1, in the override's namespace. */
export const [ResourceOverrideSnapshotKind, ResourceOverrideSnapshotV1Kind] = systemKind(
  "ResourceOverrideSnapshot",
  "resourceoverridesnapshots",
  "ros",
  true,
  RoSnapshotSpecSchema,
  SnapshotStatusSchema,
  COLUMNS,
);

/** The override kinds, in discovery's order (v1 first, the preferred version, as the placements). */
export const FLEET_OVERRIDE_KINDS: readonly KindDefinition[] = [
  ClusterResourceOverrideV1Kind,
  ClusterResourceOverrideKind,
  ResourceOverrideV1Kind,
  ResourceOverrideKind,
  ClusterResourceOverrideSnapshotKind,
  ClusterResourceOverrideSnapshotV1Kind,
  ResourceOverrideSnapshotKind,
  ResourceOverrideSnapshotV1Kind,
];
