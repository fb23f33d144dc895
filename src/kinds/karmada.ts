/**
 * Karmada's propagation API for Karmada users (docs/karmada.md): `policy.karmada.io/v1alpha1`
 * PropagationPolicy (namespaced, `pp`) and ClusterPropagationPolicy (cluster-scoped, `cpp`), as
 * karmada-io/karmada `pkg/apis/policy/v1alpha1/propagation_types.go` declares them, with the
 * defaults of its mutating webhooks (`pkg/webhook/propagationpolicy/mutating.go`,
 * `clusterpropagationpolicy/mutating.go`, the CRDs' `default:`s) and the checks of its validating
 * webhooks (`pkg/util/validation` `ValidatePropagationSpec`); and the bindings the controller
 * (src/fleet/karmada/) writes, read-only to users: `work.karmada.io/v1alpha2` ResourceBinding
 * (`rb`) and ClusterResourceBinding (`crb`), as `pkg/apis/work/v1alpha2/binding_types.go`.
 *
 * The `Duplicated` subset is built. Everything else Karmada's spec has is served in the schema
 * (so YAML written for Karmada parses) and refused with 422 naming the field when it asks for
 * something not built (docs/ocm-compatibility.md's rule): `propagateDeps`, `association`,
 * `placement.clusterAffinities`, `placement.spreadConstraints[].spreadByLabel` and `spreadByField`
 * other than `cluster`, `placement.replicaScheduling` other than `Duplicated`,
 * `placement.workloadAffinity`, `dependentOverrides`, `schedulerName` other than
 * `default-scheduler`, `failover`, `conflictResolution: Overwrite`, `activationPreference: Lazy`,
 * `suspension`, `schedulePriority`.
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition, PrinterColumn } from "../k8s/kind.ts";
import { LabelSelectorSchema, type LabelSelectorInput } from "../k8s/labels.ts";
import { ConditionsSchema, ObjectMetaSchema, objectSchema, type KubeObject } from "../k8s/meta.ts";
import { fieldForbidden, fieldInvalid, fieldNotSupported, fieldRequired, type FieldError } from "../k8s/validation.ts";
import { PLACEMENT_CHANGE_COUNTER } from "./fleet.ts";

/** The policy API group. */
export const KARMADA_POLICY_GROUP = "policy.karmada.io";
/** The binding API group. */
export const KARMADA_WORK_GROUP = "work.karmada.io";

/** Label on a PropagationPolicy (set on create) and on what it claims: its permanent id. */
export const PP_PERMANENT_ID_LABEL = "propagationpolicy.karmada.io/permanent-id";
/** Label on a ClusterPropagationPolicy (set on create) and on what it claims: its permanent id. */
export const CPP_PERMANENT_ID_LABEL = "clusterpropagationpolicy.karmada.io/permanent-id";
/** Annotation on a resource template claimed by a PropagationPolicy: the policy's namespace. */
export const PP_NAMESPACE_ANNOTATION = "propagationpolicy.karmada.io/namespace";
/** Annotation on a resource template claimed by a PropagationPolicy: the policy's name. */
export const PP_NAME_ANNOTATION = "propagationpolicy.karmada.io/name";
/** Annotation on a resource template claimed by a ClusterPropagationPolicy: the policy's name. */
export const CPP_NAME_ANNOTATION = "clusterpropagationpolicy.karmada.io/name";
/** The finalizer Karmada's webhook adds to a PropagationPolicy (the controller removes it once the policy's works are gone). */
export const PP_FINALIZER = "karmada.io/propagation-policy-controller";
/** The finalizer Karmada's webhook adds to a ClusterPropagationPolicy. */
export const CPP_FINALIZER = "karmada.io/cluster-propagation-policy-controller";
/** The only scheduler (Karmada's default `schedulerName`). */
export const DEFAULT_SCHEDULER = "default-scheduler";

/** A `ResourceSelector` as stored. */
export type KarmadaResourceSelector = { apiVersion: string; kind: string; namespace?: string; name?: string; labelSelector?: LabelSelectorInput };
/** A `ClusterAffinity` as stored. */
export type KarmadaClusterAffinity = {
  labelSelector?: LabelSelectorInput;
  fieldSelector?: { matchExpressions?: { key: string; operator: string; values?: string[] }[] };
  clusterNames?: string[];
  exclude?: string[];
};
/** A `corev1.Toleration` as stored. */
export type KarmadaToleration = { key?: string; operator?: string; value?: string; effect?: string; tolerationSeconds?: number };
/** A `SpreadConstraint` as stored (defaults applied: `spreadByField` cluster, `minGroups` 1). */
export type KarmadaSpreadConstraint = { spreadByField?: string; spreadByLabel?: string; maxGroups?: number; minGroups?: number };
/** A `Placement` as stored. */
export type KarmadaPlacement = {
  clusterAffinity?: KarmadaClusterAffinity;
  clusterAffinities?: unknown[];
  clusterTolerations?: KarmadaToleration[];
  spreadConstraints?: KarmadaSpreadConstraint[];
  replicaScheduling?: { replicaSchedulingType?: string; replicaDivisionPreference?: string; weightPreference?: unknown };
  workloadAffinity?: unknown;
};
/** A `PropagationSpec` as stored. */
export type PropagationSpec = {
  resourceSelectors?: KarmadaResourceSelector[];
  association?: boolean;
  propagateDeps?: boolean;
  placement?: KarmadaPlacement;
  priority?: number;
  preemption?: string;
  dependentOverrides?: string[];
  schedulerName?: string;
  failover?: unknown;
  conflictResolution?: string;
  activationPreference?: string;
  suspension?: unknown;
  preserveResourcesOnDeletion?: boolean;
  schedulePriority?: unknown;
};

const int32 = z.number().int().min(-2147483648).max(2147483647);

/** A `ResourceSelector` (propagation and override policies). */
export const ResourceSelectorSchema = z.strictObject({
  apiVersion: z.string().min(1).describe("The API version of the target resources."),
  kind: z.string().min(1).describe("The Kind of the target resources."),
  namespace: z.string().optional().describe("The namespace of the target resource (a PropagationPolicy's own, by default)."),
  name: z.string().optional().describe("The name of the target resource; when set, labelSelector is ignored."),
  labelSelector: LabelSelectorSchema.optional().describe("A label query over the resources; ignored when name is set."),
});

const NodeSelectorRequirementSchema = z.strictObject({
  key: z.string(),
  operator: z.string(),
  values: z.array(z.string()).optional(),
});

const ClusterAffinityFields = {
  labelSelector: LabelSelectorSchema.optional().describe("A filter over the clusters' labels."),
  fieldSelector: z
    .strictObject({ matchExpressions: z.array(NodeSelectorRequirementSchema).optional() })
    .optional()
    .describe("A filter over the clusters' provider, region and zone (docs/karmada.md says where they come from)."),
  clusterNames: z.array(z.string()).optional().describe("The clusters to select (all, when empty)."),
  exclude: z.array(z.string()).optional().describe("The clusters to ignore."),
};
/** A `ClusterAffinity` (a placement's, and an override rule's `targetCluster`). */
export const ClusterAffinitySchema = z.strictObject(ClusterAffinityFields);

const TolerationSchema = z.strictObject({
  key: z.string().optional(),
  operator: z.string().optional(),
  value: z.string().optional(),
  effect: z.string().optional(),
  tolerationSeconds: z.number().int().optional(),
});

const SpreadConstraintSchema = z.strictObject({
  spreadByField: z.enum(["cluster", "region", "zone", "provider"]).optional(),
  spreadByLabel: z.string().optional(),
  maxGroups: z.number().int().optional(),
  minGroups: z.number().int().optional(),
});

const PlacementSchema = z.strictObject({
  clusterAffinity: ClusterAffinitySchema.optional().describe("The clusters a resource may be scheduled to."),
  clusterAffinities: z
    .array(z.strictObject({ affinityName: z.string(), ...ClusterAffinityFields, overflowAffinities: z.array(z.unknown()).optional() }))
    .optional()
    .describe("Cluster groups tried in turn (failover between groups): not built on this hub."),
  clusterTolerations: z.array(TolerationSchema).optional().describe("The cluster taints tolerated."),
  spreadConstraints: z.array(SpreadConstraintSchema).optional().describe("How many clusters are picked (spreadByField: cluster)."),
  replicaScheduling: z
    .strictObject({
      replicaSchedulingType: z.enum(["Duplicated", "Divided"]).optional(),
      replicaDivisionPreference: z.enum(["Aggregated", "Weighted"]).optional(),
      weightPreference: z.record(z.string(), z.unknown()).optional(),
    })
    .optional()
    .describe("How replicas are scheduled: Duplicated (every cluster gets the template's replicas) is built; Divided is not."),
  workloadAffinity: z.record(z.string(), z.unknown()).optional(),
});

const PropagationSpecSchema = z.strictObject({
  resourceSelectors: z.array(ResourceSelectorSchema).min(1).describe("The resources to propagate (at least one)."),
  association: z.boolean().optional(),
  propagateDeps: z.boolean().optional().describe("Propagate the resources' dependencies too: not built on this hub."),
  placement: PlacementSchema.optional().describe("Where the resources go."),
  priority: int32.optional().describe("The policy's explicit priority (default 0): the highest-priority matching policy claims a resource."),
  preemption: z.enum(["Always", "Never"]).optional().describe("Whether this policy takes resources claimed by a lower-priority one (default Never)."),
  dependentOverrides: z.array(z.string()).optional(),
  schedulerName: z.string().optional(),
  failover: z.record(z.string(), z.unknown()).optional(),
  conflictResolution: z
    .enum(["Abort", "Overwrite"])
    .optional()
    .describe("What to do with a resource already in a member cluster: Abort (the default) is built."),
  activationPreference: z.enum(["Lazy"]).optional(),
  suspension: z.record(z.string(), z.unknown()).optional(),
  preserveResourcesOnDeletion: z.boolean().optional().describe("Keep the resources on the member clusters when their template or policy goes."),
  schedulePriority: z.record(z.string(), z.unknown()).optional(),
});

/** The apiVersion and kind of the multi-cluster services API's ServiceImport (Karmada's `util.ServiceImportKind`, `mcsv1alpha1.GroupVersion`). */
export const SERVICE_IMPORT = { apiVersion: "multicluster.x-k8s.io/v1alpha1", kind: "ServiceImport" } as const;

/**
 * Karmada's mutating webhooks' defaults and the CRD's, on a stored spec (mutates): a selector's
 * namespace (`namespace`: a PropagationPolicy's), `SetDefaultSpreadConstraints`,
 * `propagateDeps: true` when a selector names a ServiceImport (`helper.ContainsServiceImport`;
 * then refused by {@link validatePropagation}, dependencies not being built),
 * `SetReplicaDivisionPreferenceWeighted`, and the CRD's `default:`s. Source: karmada-io/karmada
 * `pkg/webhook/propagationpolicy/mutating.go`, `pkg/util/helper/policy.go`.
 */
export function setPropagationDefaults(spec: PropagationSpec, namespace: string | undefined): void {
  if (namespace) for (const s of spec.resourceSelectors ?? []) if (s && typeof s === "object" && !s.namespace) s.namespace = namespace;
  if ((spec.resourceSelectors ?? []).some((s) => s?.kind === SERVICE_IMPORT.kind && s.apiVersion === SERVICE_IMPORT.apiVersion)) spec.propagateDeps = true;
  spec.placement ??= {};
  for (const c of spec.placement.spreadConstraints ?? []) {
    if (!c || typeof c !== "object") continue;
    if (!c.spreadByLabel && !c.spreadByField) c.spreadByField = "cluster";
    if (!c.minGroups) c.minGroups = 1;
  }
  const rs = spec.placement.replicaScheduling;
  if (rs && typeof rs === "object") {
    rs.replicaSchedulingType ??= "Divided";
    if (rs.replicaSchedulingType === "Divided") rs.replicaDivisionPreference ??= "Weighted";
  }
  spec.priority ??= 0;
  spec.preemption ??= "Never";
  spec.conflictResolution ??= "Abort";
  spec.schedulerName ??= DEFAULT_SCHEDULER;
}

const has = (v: unknown) => v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0);
const NOT_BUILT = "not implemented by this hub (docs/karmada.md)";

/**
 * Karmada's `validateResourceSelectors` for a policy of `namespace` ("" when cluster-scoped): a
 * namespaced policy's selectors name its own namespace. Returns the field errors (none: an empty
 * list). A label selector is not checked, as in Karmada: one that does not parse matches no
 * resource (`util.ResourceSelectorPriority`). Source: karmada-io/karmada
 * `pkg/util/validation/validation.go`.
 */
export function validateResourceSelectors(selectors: readonly KarmadaResourceSelector[], namespace: string): FieldError[] {
  const errs: FieldError[] = [];
  selectors.forEach((s, i) => {
    if (namespace && s.namespace !== namespace)
      errs.push(
        fieldInvalid(
          `spec.resourceSelectors[${i}].namespace`,
          s.namespace ?? "",
          "namespace of resource selector must be the same as the namespace of the policy",
        ),
      );
  });
  return errs;
}

/**
 * Karmada's `ValidatePropagationSpec` (`pkg/util/validation`), its webhooks' update checks, and
 * the refusal of what is not built. `namespace` is a PropagationPolicy's ("" for a
 * ClusterPropagationPolicy); `old` the stored policy on an update.
 */
export function validatePropagation(obj: KubeObject, old: KubeObject | undefined, namespace: string): StatusCause[] {
  const errs: FieldError[] = [];
  const spec = (obj.spec ?? {}) as PropagationSpec;
  const idLabel = namespace ? PP_PERMANENT_ID_LABEL : CPP_PERMANENT_ID_LABEL;
  // The webhooks' update checks.
  if (old) {
    const oldSpec = (old.spec ?? {}) as PropagationSpec;
    if ((spec.schedulerName ?? DEFAULT_SCHEDULER) !== (oldSpec.schedulerName ?? DEFAULT_SCHEDULER))
      errs.push(fieldForbidden("spec.schedulerName", "the schedulerName should not be updated"));
    if (obj.metadata.labels?.[idLabel] !== old.metadata.labels?.[idLabel])
      errs.push(fieldForbidden(`metadata.labels[${idLabel}]`, `label ${idLabel} is immutable, it can only be set by the system during creation`));
  }
  // ValidatePlacement.
  const p = spec.placement ?? {};
  // Both set (an empty list of affinities too: Karmada compares the pointer and the slice with nil).
  if (p.clusterAffinity != null && p.clusterAffinities != null)
    errs.push(fieldInvalid("spec.placement", "object", "clusterAffinities cannot co-exist with clusterAffinity"));
  const fs = p.clusterAffinity?.fieldSelector;
  for (const e of fs?.matchExpressions ?? []) {
    let why = "";
    if (!["provider", "region", "zone"].includes(e.key)) why = `unsupported key ${JSON.stringify(e.key)}, must be provider, region, or zone`;
    else if (!["In", "NotIn"].includes(e.operator)) why = `unsupported operator ${JSON.stringify(e.operator)}, must be In or NotIn`;
    if (why) {
      errs.push(fieldInvalid("spec.placement.clusterAffinity.fieldSelector", "object", why));
      break;
    }
  }
  const seenFields = new Set<string>();
  const reported = new Set<string>();
  (p.spreadConstraints ?? []).forEach((c, i) => {
    const at = `spec.placement.spreadConstraints[${i}]`;
    if (c.spreadByField && c.spreadByLabel) errs.push(fieldInvalid(at, "object", "spreadByLabel should not co-exist with spreadByField"));
    if ((c.minGroups ?? 0) < 0) errs.push(fieldInvalid(at, "object", "minGroups lower than 0 is not allowed"));
    if ((c.maxGroups ?? 0) < 0) errs.push(fieldInvalid(at, "object", "maxGroups lower than 0 is not allowed"));
    if ((c.maxGroups ?? 0) > 0 && (c.maxGroups ?? 0) < (c.minGroups ?? 0))
      errs.push(fieldInvalid(at, "object", "maxGroups lower than minGroups is not allowed"));
    if (c.spreadByField) {
      // Once per field, however many times it is repeated (Karmada's error mark).
      if (seenFields.has(c.spreadByField) && !reported.has(c.spreadByField)) {
        errs.push(fieldInvalid("spec.placement.spreadConstraints", "array", `multiple ${c.spreadByField} spread constraints are not allowed`));
        reported.add(c.spreadByField);
      }
      seenFields.add(c.spreadByField);
    }
  });
  if (seenFields.size > 0 && !seenFields.has("cluster"))
    errs.push(
      fieldInvalid(
        "spec.placement.spreadConstraints",
        "array",
        "the cluster spread constraint must be enabled in one of the constraints in case of SpreadByField is enabled",
      ),
    );
  // validateClusterTolerations: only the comparison operators are refused; any other operator or
  // effect is accepted and tolerates nothing it does not match (corev1 `ToleratesTaint`).
  (p.clusterTolerations ?? []).forEach((t, i) => {
    if (t.operator === "Lt" || t.operator === "Gt")
      errs.push(fieldNotSupported(`spec.placement.clusterTolerations[${i}].operator`, t.operator, ["", "Exists", "Equal"]));
  });
  // validateResourceSelectors (a PropagationPolicy's selectors name its own namespace).
  errs.push(...validateResourceSelectors(spec.resourceSelectors ?? [], namespace));
  (spec.resourceSelectors ?? []).forEach((s, i) => {
    if (spec.preemption === "Always" && !s.name)
      errs.push(
        fieldInvalid(
          `spec.resourceSelectors[${i}].name`,
          "",
          "name cannot be empty if preemption is Always, the empty name may cause unexpected resources preemption",
        ),
      );
  });
  if (!obj.metadata.labels?.[idLabel])
    errs.push(fieldRequired(`metadata.labels[${idLabel}]`, `label ${idLabel} is required, it should be set by the mutating admission webhook during creation`));

  // Not built: refused with the field named.
  if (spec.propagateDeps) errs.push(fieldForbidden("spec.propagateDeps", `propagating dependencies is ${NOT_BUILT}`));
  if (spec.association) errs.push(fieldForbidden("spec.association", `association is ${NOT_BUILT}`));
  if (has(p.clusterAffinities)) errs.push(fieldForbidden("spec.placement.clusterAffinities", `failover between cluster affinity groups is ${NOT_BUILT}`));
  (p.spreadConstraints ?? []).forEach((c, i) => {
    if (c.spreadByLabel) errs.push(fieldForbidden(`spec.placement.spreadConstraints[${i}].spreadByLabel`, `spreading by label is ${NOT_BUILT}`));
    if (c.spreadByField && c.spreadByField !== "cluster")
      errs.push(fieldNotSupported(`spec.placement.spreadConstraints[${i}].spreadByField`, c.spreadByField, ["cluster"]));
  });
  const rs = p.replicaScheduling;
  if (rs) {
    if ((rs.replicaSchedulingType ?? "Divided") !== "Duplicated")
      errs.push(fieldNotSupported("spec.placement.replicaScheduling.replicaSchedulingType", rs.replicaSchedulingType ?? "Divided", ["Duplicated"]));
    else {
      if (rs.replicaDivisionPreference)
        errs.push(fieldForbidden("spec.placement.replicaScheduling.replicaDivisionPreference", `replica division is ${NOT_BUILT}`));
      if (has(rs.weightPreference)) errs.push(fieldForbidden("spec.placement.replicaScheduling.weightPreference", `replica division is ${NOT_BUILT}`));
    }
  }
  if (has(p.workloadAffinity)) errs.push(fieldForbidden("spec.placement.workloadAffinity", `workload affinity is ${NOT_BUILT}`));
  if (has(spec.dependentOverrides)) errs.push(fieldForbidden("spec.dependentOverrides", `waiting for OverridePolicies before propagating is ${NOT_BUILT}`));
  if ((spec.schedulerName ?? DEFAULT_SCHEDULER) !== DEFAULT_SCHEDULER)
    errs.push(fieldNotSupported("spec.schedulerName", spec.schedulerName, [DEFAULT_SCHEDULER]));
  if (has(spec.failover)) errs.push(fieldForbidden("spec.failover", `failover is ${NOT_BUILT}`));
  if ((spec.conflictResolution ?? "Abort") !== "Abort") errs.push(fieldNotSupported("spec.conflictResolution", spec.conflictResolution, ["Abort"]));
  if (spec.activationPreference) errs.push(fieldNotSupported("spec.activationPreference", spec.activationPreference, [""]));
  if (has(spec.suspension)) errs.push(fieldForbidden("spec.suspension", `suspension is ${NOT_BUILT}`));
  if (has(spec.schedulePriority)) errs.push(fieldForbidden("spec.schedulePriority", `schedule priority is ${NOT_BUILT}`));
  return errs;
}

const POLICY_COLUMNS: PrinterColumn[] = [
  { name: "CONFLICT-RESOLUTION", type: "string", jsonPath: ".spec.conflictResolution" },
  { name: "PRIORITY", type: "string", jsonPath: ".spec.priority" },
  { name: "AGE", type: "date", jsonPath: ".metadata.creationTimestamp" },
];

function policyKind(kind: string, plural: string, shortName: string, namespaced: boolean, description: string): KindDefinition {
  const idLabel = namespaced ? PP_PERMANENT_ID_LABEL : CPP_PERMANENT_ID_LABEL;
  const finalizer = namespaced ? PP_FINALIZER : CPP_FINALIZER;
  return {
    group: KARMADA_POLICY_GROUP,
    version: "v1alpha1",
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
    shortNames: [shortName],
    namespaced,
    hasStatus: false,
    schema: z.strictObject({ apiVersion: z.string(), kind: z.string(), metadata: ObjectMetaSchema, spec: PropagationSpecSchema }).describe(description),
    storage: "d1",
    changeCounter: PLACEMENT_CHANGE_COUNTER,
    printerColumns: POLICY_COLUMNS,
    defaults(obj) {
      if (obj.spec && typeof obj.spec === "object") setPropagationDefaults(obj.spec as PropagationSpec, namespaced ? obj.metadata.namespace : undefined);
    },
    // The mutating webhook on create: the permanent id label and the controller's finalizer.
    prepareForCreate(obj, ctx) {
      obj.metadata.labels = { ...(obj.metadata.labels ?? {}), [idLabel]: ctx.newUid() };
      if (!(obj.metadata.finalizers ?? []).includes(finalizer)) obj.metadata.finalizers = [...(obj.metadata.finalizers ?? []), finalizer];
    },
    validate: (obj, old) => validatePropagation(obj, old, namespaced ? (obj.metadata.namespace ?? "") : ""),
  };
}

/** PropagationPolicy (namespaced): propagates resources of its own namespace. */
export const PropagationPolicyKind = policyKind(
  "PropagationPolicy",
  "propagationpolicies",
  "pp",
  true,
  "PropagationPolicy represents the policy that propagates a group of resources to one or more clusters.",
);
/** ClusterPropagationPolicy (cluster-scoped): propagates cluster-scoped resources and namespaced ones of any namespace. */
export const ClusterPropagationPolicyKind = policyKind(
  "ClusterPropagationPolicy",
  "clusterpropagationpolicies",
  "cpp",
  false,
  "ClusterPropagationPolicy represents the cluster-wide policy that propagates a group of resources to one or more clusters: cluster-scoped resources and resources in any namespace but the reserved ones.",
);

const ObjectReferenceSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  namespace: z.string().optional(),
  name: z.string(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
});

const BindingSpecSchema = z.strictObject({
  resource: ObjectReferenceSchema,
  replicas: z.number().int().optional(),
  clusters: z.array(z.strictObject({ name: z.string(), replicas: z.number().int().optional() })).optional(),
  placement: PlacementSchema.optional(),
  schedulerName: z.string().optional(),
  conflictResolution: z.enum(["Abort", "Overwrite"]).optional(),
  preserveResourcesOnDeletion: z.boolean().optional(),
});

const BindingStatusSchema = z.strictObject({
  schedulerObservedGeneration: z.number().int().optional(),
  lastScheduledTime: z.string().optional(),
  conditions: ConditionsSchema.optional(),
  aggregatedStatus: z
    .array(
      z.strictObject({
        clusterName: z.string(),
        status: z.record(z.string(), z.unknown()).optional(),
        applied: z.boolean().optional(),
        appliedMessage: z.string().optional(),
        health: z.enum(["Healthy", "Unhealthy", "Unknown"]).optional(),
      }),
    )
    .optional(),
});

const BINDING_COLUMNS: PrinterColumn[] = [
  { name: "SCHEDULED", type: "string", jsonPath: '.status.conditions[?(@.type=="Scheduled")].status' },
  { name: "FULLYAPPLIED", type: "string", jsonPath: '.status.conditions[?(@.type=="FullyApplied")].status' },
  { name: "AGE", type: "date", jsonPath: ".metadata.creationTimestamp" },
];

function bindingKind(kind: string, plural: string, shortName: string, namespaced: boolean, description: string): KindDefinition {
  return {
    group: KARMADA_WORK_GROUP,
    version: "v1alpha2",
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
    shortNames: [shortName],
    namespaced,
    hasStatus: true,
    systemOwned: true,
    schema: objectSchema(BindingSpecSchema, BindingStatusSchema, true).describe(description),
    storage: "d1",
    printerColumns: BINDING_COLUMNS,
  };
}

/** ResourceBinding (namespaced): one namespaced resource template's scheduling and its clusters' status. */
export const KarmadaResourceBindingKind = bindingKind(
  "ResourceBinding",
  "resourcebindings",
  "rb",
  true,
  "ResourceBinding represents a binding of a kubernetes resource with a propagation policy.",
);
/** ClusterResourceBinding (cluster-scoped): one cluster-scoped resource template's scheduling and status. */
export const KarmadaClusterResourceBindingKind = bindingKind(
  "ClusterResourceBinding",
  "clusterresourcebindings",
  "crb",
  false,
  "ClusterResourceBinding represents a binding of a kubernetes resource with a ClusterPropagationPolicy.",
);

/** The kinds of this module, in discovery's order. */
export const KARMADA_KINDS: readonly KindDefinition[] = [
  PropagationPolicyKind,
  ClusterPropagationPolicyKind,
  KarmadaResourceBindingKind,
  KarmadaClusterResourceBindingKind,
];
