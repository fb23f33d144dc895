/**
 * Karmada's override API (docs/overrides.md "Karmada"): `policy.karmada.io/v1alpha1`
 * OverridePolicy (namespaced, `op`) and ClusterOverridePolicy (cluster-scoped, `cop`), as
 * karmada-io/karmada `pkg/apis/policy/v1alpha1/override_types.go` declares them (the deprecated
 * top-level `targetCluster` + `overriders` form included: Karmada still serves and applies it),
 * with the default of its mutating webhook (`pkg/webhook/overridepolicy/mutating.go`: a selector's
 * namespace is the policy's) and the checks of its validating webhooks
 * (`pkg/webhook/overridepolicy/validating.go`, `clusteroverridepolicy/validating.go`:
 * `pkg/util/validation` `ValidateOverrideSpec`), with their messages. The overrides are applied by
 * src/overrides/karmada.ts where Karmada's propagation policies render works (src/fleet/karmada/).
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition, PrinterColumn } from "../k8s/kind.ts";
import { ObjectMetaSchema, type KubeObject } from "../k8s/meta.ts";
import { fieldInvalid, fieldRequired, validateAnnotations, validateLabels, type FieldError } from "../k8s/validation.ts";
import {
  ClusterAffinitySchema,
  KARMADA_POLICY_GROUP,
  ResourceSelectorSchema,
  type KarmadaClusterAffinity,
  type KarmadaResourceSelector,
  validateResourceSelectors,
} from "./karmada.ts";

/** The annotation on a rendered work listing the OverridePolicies applied there (Karmada's `util.AppliedOverrides`). */
export const APPLIED_OVERRIDES_ANNOTATION = "policy.karmada.io/applied-overrides";
/** The annotation on a rendered work listing the ClusterOverridePolicies applied there (`util.AppliedClusterOverrides`). */
export const APPLIED_CLUSTER_OVERRIDES_ANNOTATION = "policy.karmada.io/applied-cluster-overrides";

/** `OverriderOperator`: add, remove, replace. */
export type KarmadaOperator = "add" | "remove" | "replace";

/** A `PlaintextOverrider`: one RFC 6902 operation. */
export type PlaintextOverrider = { path: string; operator: KarmadaOperator; value?: unknown };
/** An `ImageOverrider`: a component of an image, at `predicate.path` or in every container of the known workload kinds. */
export type ImageOverrider = { predicate?: { path: string }; component: "Registry" | "Repository" | "Tag"; operator: KarmadaOperator; value?: string };
/** A `CommandArgsOverrider`: values added to or removed from a container's command or args. */
export type CommandArgsOverrider = { containerName: string; operator: "add" | "remove"; value?: string[] };
/** A `LabelAnnotationOverrider`. */
export type LabelAnnotationOverrider = { operator: KarmadaOperator; value?: Record<string, string> };
/** A `JSONPatchOperation` / `YAMLPatchOperation` inside a string field. */
export type SubPatchOperation = { subPath: string; operator: KarmadaOperator; value?: unknown };
/** A `FieldOverrider`: JSON or YAML patches of the document held by a string field (a ConfigMap's data key). */
export type FieldOverrider = { fieldPath: string; json?: SubPatchOperation[]; yaml?: SubPatchOperation[] };
/** `Overriders`, applied in Karmada's order: image, command, args, labels, annotations, field, plaintext. */
export type Overriders = {
  plaintext?: PlaintextOverrider[];
  imageOverrider?: ImageOverrider[];
  commandOverrider?: CommandArgsOverrider[];
  argsOverrider?: CommandArgsOverrider[];
  labelsOverrider?: LabelAnnotationOverrider[];
  annotationsOverrider?: LabelAnnotationOverrider[];
  fieldOverrider?: FieldOverrider[];
};
/** A `RuleWithCluster`: overriders for the clusters `targetCluster` matches (absent: every cluster). */
export type RuleWithCluster = { targetCluster?: KarmadaClusterAffinity | null; overriders?: Overriders };
/** An `OverrideSpec` as stored. */
export type OverrideSpec = {
  resourceSelectors?: KarmadaResourceSelector[];
  overrideRules?: RuleWithCluster[];
  /** Deprecated (Karmada v1.0): the one rule's cluster affinity, when `overrideRules` is not set. */
  targetCluster?: KarmadaClusterAffinity | null;
  /** Deprecated (Karmada v1.0): the one rule's overriders. */
  overriders?: Overriders;
};

const Operator = z.enum(["add", "remove", "replace"]);
const SubPatchSchema = z.strictObject({
  subPath: z.string().describe("A JSON Pointer into the field's document."),
  operator: Operator,
  value: z.unknown().optional(),
});

const OverridersSchema = z.strictObject({
  plaintext: z
    .array(z.strictObject({ path: z.string().describe("A JSON Pointer."), operator: Operator, value: z.unknown().optional() }))
    .optional()
    .describe("RFC 6902 operations on the object."),
  imageOverrider: z
    .array(
      z.strictObject({
        predicate: z
          .strictObject({ path: z.string() })
          .optional()
          .describe("The path of one image; absent: every container's of a Pod, ReplicaSet, Deployment, DaemonSet, StatefulSet or Job."),
        component: z.enum(["Registry", "Repository", "Tag"]),
        operator: Operator,
        value: z.string().optional(),
      }),
    )
    .optional(),
  commandOverrider: z
    .array(z.strictObject({ containerName: z.string(), operator: z.enum(["add", "remove"]), value: z.array(z.string()).optional() }))
    .optional(),
  argsOverrider: z.array(z.strictObject({ containerName: z.string(), operator: z.enum(["add", "remove"]), value: z.array(z.string()).optional() })).optional(),
  // `value` is required, as the CRD has it (`required: [operator, value]`).
  labelsOverrider: z.array(z.strictObject({ operator: Operator, value: z.record(z.string(), z.string()) })).optional(),
  annotationsOverrider: z.array(z.strictObject({ operator: Operator, value: z.record(z.string(), z.string()) })).optional(),
  fieldOverrider: z
    .array(z.strictObject({ fieldPath: z.string(), json: z.array(SubPatchSchema).optional(), yaml: z.array(SubPatchSchema).optional() }))
    .optional()
    .describe("JSON or YAML patches of a string field's document."),
});

const OverrideSpecSchema = z.strictObject({
  resourceSelectors: z.array(ResourceSelectorSchema).optional().describe("The resources overridden (every resource, when empty)."),
  overrideRules: z
    .array(z.strictObject({ targetCluster: ClusterAffinitySchema.nullish(), overriders: OverridersSchema }))
    .optional()
    .describe("Overriders per set of clusters, applied in order."),
  targetCluster: ClusterAffinitySchema.nullish().describe("Deprecated: use overrideRules."),
  overriders: OverridersSchema.optional().describe("Deprecated: use overrideRules."),
});

/** go-openapi `jsonpointer.New`'s check: empty or starting with `/`. */
function jsonPointerError(p: string): string | null {
  return p === "" || p.startsWith("/") ? null : 'JSON pointer must be empty or start with a "/"';
}

/** Karmada's `emptyOverrides` (which does not look at `fieldOverrider`). */
function emptyOverrides(o: Overriders | undefined): boolean {
  if (!o) return true;
  return ![o.plaintext, o.imageOverrider, o.commandOverrider, o.argsOverrider, o.labelsOverrider, o.annotationsOverrider].some((l) => (l ?? []).length > 0);
}

/**
 * Karmada's `ValidateClusterAffinity`: its field selector's keys and operators. The label selector
 * is not checked, as in Karmada: one that does not parse matches no cluster (`util.ClusterMatches`).
 */
function validateAffinity(a: KarmadaClusterAffinity | null | undefined, at: string): FieldError[] {
  if (!a) return [];
  const errs: FieldError[] = [];
  for (const e of a.fieldSelector?.matchExpressions ?? []) {
    let why = "";
    if (!["provider", "region", "zone"].includes(e.key)) why = `unsupported key ${JSON.stringify(e.key)}, must be provider, region, or zone`;
    else if (!["In", "NotIn"].includes(e.operator)) why = `unsupported operator ${JSON.stringify(e.operator)}, must be In or NotIn`;
    if (why) {
      errs.push(fieldInvalid(`${at}.fieldSelector`, "object", why));
      break;
    }
  }
  return errs;
}

/** Karmada's `validateOverrideOperator`: add and replace need a value, remove has none. */
function validateOperator(op: KarmadaOperator, value: unknown, at: string): FieldError[] {
  if ((op === "add" || op === "replace") && value === undefined) return [fieldInvalid(at, null, "value is required for add or replace operation")];
  if (op === "remove" && value !== undefined) return [fieldInvalid(at, JSON.stringify(value), "value is not allowed for remove operation")];
  return [];
}

/** Karmada's `ValidateOverrideRules` on the rules of `spec.overrideRules` (or the deprecated one at `spec`). */
function validateRules(rules: RuleWithCluster[], base: string): FieldError[] {
  const errs: FieldError[] = [];
  rules.forEach((rule, i) => {
    const at = `${base}.overrideRules[${i}]`;
    const o = rule.overriders ?? {};
    (o.annotationsOverrider ?? []).forEach((a, j) => errs.push(...validateAnnotations(a.value ?? {}, `${at}.overriders.annotationsOverrider[${j}].value`)));
    (o.labelsOverrider ?? []).forEach((l, j) => errs.push(...validateLabels(l.value ?? {}, `${at}.overriders.labelsOverrider[${j}].value`)));
    (o.imageOverrider ?? []).forEach((im, j) => {
      const why = im.predicate ? jsonPointerError(im.predicate.path) : null;
      if (why) errs.push(fieldInvalid(`${at}.overriders.imageOverrider[${j}].predicate.path`, im.predicate!.path, why));
    });
    (o.fieldOverrider ?? []).forEach((f, j) => {
      const fat = `${at}.overriders.fieldOverrider[${j}]`;
      const nJson = (f.json ?? []).length;
      const nYaml = (f.yaml ?? []).length;
      if (nJson > 0 && nYaml > 0) errs.push(fieldInvalid(fat, "object", "FieldOverrider has both YAML and JSON set. Only one is allowed"));
      if (nJson === 0 && nYaml === 0) errs.push(fieldRequired(fat, "FieldOverrider must have either JSON or YAML set"));
      const why = jsonPointerError(f.fieldPath);
      if (why) errs.push(fieldInvalid(`${fat}.fieldPath`, f.fieldPath, why));
      for (const [kind, list] of [
        ["json", f.json ?? []],
        ["yaml", f.yaml ?? []],
      ] as const)
        list.forEach((p, k) => {
          const pat = `${fat}.${kind}[${k}]`;
          const sub = jsonPointerError(p.subPath);
          if (sub) errs.push(fieldInvalid(`${pat}.subPath`, p.subPath, sub));
          errs.push(...validateOperator(p.operator, p.value, `${pat}.value`));
        });
    });
    errs.push(...validateAffinity(rule.targetCluster, `${at}.targetCluster`));
  });
  return errs;
}

/**
 * Karmada's `ValidateOverrideSpec` (`pkg/util/validation`), with its messages. `namespace` is an
 * OverridePolicy's ("" for a ClusterOverridePolicy, whose webhook passes no namespace).
 */
export function validateOverridePolicy(obj: KubeObject, namespace: string): StatusCause[] {
  const errs: FieldError[] = [];
  const spec = (obj.spec ?? {}) as OverrideSpec;
  if (spec.targetCluster) errs.push(...validateAffinity(spec.targetCluster, "spec.targetCluster"));
  if (spec.targetCluster && spec.overrideRules !== undefined)
    errs.push(fieldInvalid("spec.targetCluster", "object", "overrideRules and targetCluster can't co-exist"));
  if (!emptyOverrides(spec.overriders) && spec.overrideRules !== undefined)
    errs.push(fieldInvalid("spec.overriders", "object", "overrideRules and overriders can't co-exist"));
  errs.push(...validateRules(spec.overrideRules ?? [], "spec"));
  // The deprecated rule is applied as one rule: its overriders are checked the same way (Karmada does not, so a bad one fails at render time there).
  if (spec.overrideRules === undefined && spec.overriders)
    errs.push(...validateRules([{ overriders: spec.overriders }], "spec").map((e) => ({ ...e, field: e.field.replace("spec.overrideRules[0].", "spec.") })));
  errs.push(...validateResourceSelectors(spec.resourceSelectors ?? [], namespace));
  return errs;
}

/**
 * The `counters` row every OverridePolicy and ClusterOverridePolicy write sets to its
 * resourceVersion in its own batch (`KindDefinition.changeCounter`): the freshness check of the
 * isolate's lists of them that renderers read (src/overrides/karmada-policies.ts).
 */
export const OVERRIDE_POLICY_CHANGE_COUNTER = 5;

const COLUMNS: PrinterColumn[] = [{ name: "AGE", type: "date", jsonPath: ".metadata.creationTimestamp" }];

function overrideKind(kind: string, plural: string, shortName: string, namespaced: boolean, description: string): KindDefinition {
  return {
    group: KARMADA_POLICY_GROUP,
    version: "v1alpha1",
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
    shortNames: [shortName],
    categories: ["karmada-io"],
    namespaced,
    hasStatus: false,
    schema: z.strictObject({ apiVersion: z.string(), kind: z.string(), metadata: ObjectMetaSchema, spec: OverrideSpecSchema }).describe(description),
    storage: "d1",
    changeCounter: OVERRIDE_POLICY_CHANGE_COUNTER,
    printerColumns: COLUMNS,
    // The mutating webhook: a selector without a namespace selects in the policy's.
    defaults(obj) {
      const spec = obj.spec as OverrideSpec | undefined;
      if (!namespaced || !spec || typeof spec !== "object") return;
      for (const s of spec.resourceSelectors ?? []) if (s && typeof s === "object" && !s.namespace) s.namespace = obj.metadata.namespace;
    },
    validate: (obj) => validateOverridePolicy(obj, namespaced ? (obj.metadata.namespace ?? "") : ""),
  };
}

/** OverridePolicy (namespaced, `op`): overrides of the resources of its namespace, per target cluster. */
export const OverridePolicyKind = overrideKind(
  "OverridePolicy",
  "overridepolicies",
  "op",
  true,
  "OverridePolicy represents the policy that overrides a group of resources to one or more clusters.",
);
/** ClusterOverridePolicy (cluster-scoped, `cop`): overrides of any resource, applied before the namespace's OverridePolicies. */
export const ClusterOverridePolicyKind = overrideKind(
  "ClusterOverridePolicy",
  "clusteroverridepolicies",
  "cop",
  false,
  "ClusterOverridePolicy represents the cluster-wide policy that overrides a group of resources to one or more clusters.",
);

/** The kinds of this module, in discovery's order. */
export const KARMADA_OVERRIDE_KINDS: readonly KindDefinition[] = [OverridePolicyKind, ClusterOverridePolicyKind];
