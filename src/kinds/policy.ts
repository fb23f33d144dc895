/**
 * OCM's governance policy API (`policy.open-cluster-management.io`, namespaced): Policy (`v1`),
 * PlacementBinding (`v1`) and PolicySet (`v1beta1`), with the fields, enums and printer columns of
 * the CRDs of open-cluster-management-io/governance-policy-propagator (`api/v1`, `api/v1beta1`,
 * `deploy/crds`) and the checks of its validating webhooks (`policy_webhook.go`,
 * `policyset_webhook.go`). The `policy-templates` embed ConfigurationPolicy
 * (open-cluster-management-io/config-policy-controller `api/v1`), the only policy engine the
 * hub's agent runs; it is checked here so that a template the agent would not run is refused at
 * the hub with 422 naming the field, never stored and ignored.
 *
 * A root Policy's status is written by the hub's propagator (src/policy/); a replicated Policy's
 * (`<rootns>.<rootname>` in a cluster's namespace, labelled with {@link ROOT_POLICY_LABEL}) by its
 * cluster's agent; a PolicySet's by the hub. PlacementBinding has an empty status, as OCM's.
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { addFieldErrors, isJsonObject, objectSchema, ObjectMetaSchema, type KubeObject } from "../k8s/meta.ts";
import { onlyEmpty, onlyValues } from "../k8s/unimplemented.ts";
import { LabelSelectorSchema, validateLabelSelector } from "../k8s/labels.ts";
import { fieldForbidden, fieldRequired, type FieldError } from "../k8s/validation.ts";
import { PLACEMENT_REFERENCE_CHANGE_COUNTER } from "./placement.ts";

/** The API group of the policy kinds. */
export const POLICY_GROUP = "policy.open-cluster-management.io";
/** On a replicated policy: `<rootns>.<rootname>` of its root (OCM's `RootPolicyLabel`). */
export const ROOT_POLICY_LABEL = `${POLICY_GROUP}/root-policy`;
/** On a replicated policy: the cluster it was replicated to (OCM's `ClusterNameLabel`). */
export const CLUSTER_NAME_LABEL = `${POLICY_GROUP}/cluster-name`;
/** On a replicated policy: the cluster's namespace on the hub (OCM's `ClusterNamespaceLabel`). */
export const CLUSTER_NAMESPACE_LABEL = `${POLICY_GROUP}/cluster-namespace`;
/** The annotation OCM's propagator always sets on a replicated policy, so Argo CD leaves it alone. */
export const ARGOCD_COMPARE_OPTIONS_ANNOTATION = "argocd.argoproj.io/compare-options";

/** The compliance states of a policy (OCM's `ComplianceState` enum). */
export const COMPLIANCE_STATES = ["Compliant", "Pending", "NonCompliant"] as const;
/** A policy's compliance state. */
export type ComplianceState = (typeof COMPLIANCE_STATES)[number];

const RemediationAction = z.enum(["Inform", "inform", "Enforce", "enforce"]);
const ComplianceType = z.enum([
  "MustHave",
  "Musthave",
  "musthave",
  "MustOnlyHave",
  "Mustonlyhave",
  "mustonlyhave",
  "MustNotHave",
  "Mustnothave",
  "mustnothave",
]);
/** config-policy-controller's `metadataComplianceType` enum: musthave or mustonlyhave, in its spellings. */
const MetadataComplianceType = z.enum(["MustHave", "Musthave", "musthave", "MustOnlyHave", "Mustonlyhave", "mustonlyhave"]);
const NonEmpty = z.string().min(1);
/** config-policy-controller's `EvaluationInterval` pattern: Go durations, `never` or `watch`. */
const INTERVAL = /^(?:(?:(?:[0-9]+(?:.[0-9])?)(?:h|m|s|(?:ms)|(?:us)|(?:ns)))|never|watch)+$/;
const Interval = z.string().regex(INTERVAL, "must be a duration such as 10s or 1m30s, never or watch");

const NOT_RUN = "is not supported by this hub's policy agent";

/** An `object-templates[]` item of a ConfigurationPolicy. */
const ObjectTemplateSchema = z.strictObject({
  complianceType: ComplianceType,
  objectDefinition: z.record(z.string(), z.unknown()).superRefine((obj, ctx) => {
    const errors: FieldError[] = [];
    if (typeof obj.apiVersion !== "string" || !obj.apiVersion) errors.push(fieldRequired("apiVersion"));
    if (typeof obj.kind !== "string" || !obj.kind) errors.push(fieldRequired("kind"));
    addFieldErrors(ctx, obj, errors);
  }),
  // How the labels and annotations compare, whatever complianceType says (config-policy-controller's
  // `MetadataComplianceType`: MustHave or MustOnlyHave; complianceType's when unset).
  metadataComplianceType: MetadataComplianceType.optional(),
  recreateOption: onlyValues(z.enum(["None", "IfRequired", "Always"]), ["None"]).optional(),
  recordDiff: onlyValues(z.enum(["Log", "InStatus", "None"]), ["None"]).optional(),
  objectSelector: z
    .unknown()
    .superRefine((v, ctx) => addFieldErrors(ctx, v, [fieldForbidden("", `objectSelector ${NOT_RUN}; name the object in objectDefinition.metadata.name`)]))
    .optional(),
});

/**
 * `namespaceSelector` of a ConfigurationPolicy: `include`/`exclude` with wildcards and a label
 * selector of namespaces (`matchLabels`, `matchExpressions`, validated as metav1.LabelSelector), as
 * OCM's config-policy-controller selects them (the agent, agent/src/policy/evaluate.ts).
 */
const NamespaceSelectorSchema = z
  .strictObject({
    include: z.array(NonEmpty).optional(),
    exclude: z.array(NonEmpty).optional(),
    matchLabels: LabelSelectorSchema.shape.matchLabels,
    matchExpressions: LabelSelectorSchema.shape.matchExpressions,
    terminatingInclusion: onlyValues(z.enum(["IfMatch", "Never", "Default"]), ["Default"]).optional(),
  })
  .superRefine((v, ctx) => addFieldErrors(ctx, v, validateLabelSelector({ matchLabels: v.matchLabels, matchExpressions: v.matchExpressions }, "")));

/**
 * The ConfigurationPolicy a Policy embeds in `policy-templates[].objectDefinition`, limited to what
 * the hub's agent evaluates (issue 32 item 6): `object-templates` with `complianceType`, `metadataComplianceType`,
 * `remediationAction`, `namespaceSelector` include/exclude, `severity`, `evaluationInterval`.
 * Other fields of config-policy-controller's schema are refused with 422 naming them.
 */
export const ConfigurationPolicySchema = z.strictObject({
  apiVersion: onlyValues(z.string(), [`${POLICY_GROUP}/v1`]),
  kind: z.literal("ConfigurationPolicy"),
  metadata: z.strictObject({
    name: z.string().min(1),
    namespace: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
  spec: z.strictObject({
    remediationAction: RemediationAction.optional(),
    severity: z.enum(["low", "Low", "medium", "Medium", "high", "High", "critical", "Critical"]).optional(),
    evaluationInterval: z.strictObject({ compliant: Interval.optional(), noncompliant: Interval.optional() }).optional(),
    namespaceSelector: NamespaceSelectorSchema.optional(),
    "object-templates": z.array(ObjectTemplateSchema).optional(),
    "object-templates-raw": z
      .string()
      .superRefine((v, ctx) => addFieldErrors(ctx, v, [fieldForbidden("", `object-templates-raw ${NOT_RUN}; use object-templates`)]))
      .optional(),
    pruneObjectBehavior: onlyValues(z.enum(["DeleteAll", "DeleteIfCreated", "None"]), ["None"]).optional(),
    customMessage: z
      .strictObject({ compliant: z.string().optional(), noncompliant: z.string().optional() })
      .superRefine((v, ctx) => {
        if (v.compliant || v.noncompliant) addFieldErrors(ctx, v, [fieldForbidden("", `customMessage ${NOT_RUN}`)]);
      })
      .optional(),
  }),
});

/** Strings holding Go template actions (`{{ ... }}`, hub templates `{{hub ... hub}}`): not resolved by this hub or its agent. */
function templateActions(v: unknown, path: string, out: FieldError[]): void {
  if (typeof v === "string") {
    if (v.includes("{{")) out.push(fieldForbidden(path, "Go templates ({{ ... }}, {{hub ... hub}}) are not supported by this hub's policy framework"));
  } else if (Array.isArray(v)) {
    v.forEach((x, i) => templateActions(x, `${path}[${i}]`, out));
  } else if (isJsonObject(v)) {
    for (const [k, x] of Object.entries(v)) templateActions(x, path ? `${path}.${k}` : k, out);
  }
}

/** A `policy-templates[].objectDefinition`: a ConfigurationPolicy (other engines are refused). */
const PolicyTemplateObjectSchema = z.record(z.string(), z.unknown()).superRefine((obj, ctx) => {
  if (obj.kind !== "ConfigurationPolicy") {
    addFieldErrors(ctx, obj, [
      obj.kind === undefined
        ? fieldRequired("kind")
        : {
            field: "kind",
            reason: "FieldValueNotSupported",
            message: `Unsupported value: ${JSON.stringify(obj.kind)}: supported values: "ConfigurationPolicy" (the only policy engine this hub's agent runs)`,
          },
    ]);
    return;
  }
  const r = ConfigurationPolicySchema.safeParse(obj, { reportInput: true });
  if (!r.success) for (const issue of r.error.issues) ctx.addIssue({ ...issue });
  const templates: FieldError[] = [];
  templateActions(obj, "", templates);
  addFieldErrors(ctx, obj, templates);
});

const PolicyDependencySchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  namespace: z.string().optional(),
  compliance: z.enum(COMPLIANCE_STATES),
});

/** `Policy.spec` (v1), as the CRD validates it; `disabled` and `policy-templates` are required. */
export const PolicySpecSchema = z.strictObject({
  disabled: z.boolean(),
  copyPolicyMetadata: z.boolean().optional(),
  remediationAction: RemediationAction.optional(),
  "policy-templates": z.array(
    z.strictObject({
      objectDefinition: PolicyTemplateObjectSchema,
      extraDependencies: onlyEmpty(z.array(PolicyDependencySchema), "policy dependencies are not supported by this hub's policy framework").optional(),
      ignorePending: z
        .boolean()
        .superRefine((v, ctx) => {
          if (v) addFieldErrors(ctx, v, [fieldForbidden("", "ignorePending is not supported by this hub's policy framework")]);
        })
        .optional(),
    }),
  ),
  dependencies: onlyEmpty(z.array(PolicyDependencySchema), "policy dependencies are not supported by this hub's policy framework").optional(),
  hubTemplateOptions: z
    .strictObject({ serviceAccountName: z.string().optional() })
    .superRefine((v, ctx) => {
      if (v.serviceAccountName)
        addFieldErrors(ctx, v, [fieldForbidden("", "hub templates (and their serviceAccountName) are not supported by this hub's policy framework")]);
    })
    .optional(),
});

const HistorySchema = z.strictObject({ lastTimestamp: z.string().optional(), message: z.string().optional(), eventName: z.string().optional() });

/** `Policy.status` (v1): root fields (`placement`, `status`) and replicated fields (`compliant`, `details`). */
export const PolicyStatusSchema = z.strictObject({
  placement: z
    .array(
      z.strictObject({
        placementBinding: z.string().optional(),
        placementRule: z.string().optional(),
        placement: z.string().optional(),
        decisions: z.array(z.strictObject({ clusterName: z.string().optional(), clusterNamespace: z.string().optional() })).optional(),
        policySet: z.string().optional(),
        exclusions: z.array(z.strictObject({ clusterName: z.string().optional() })).optional(),
      }),
    )
    .optional(),
  status: z
    .array(
      z.strictObject({
        compliant: z.enum(COMPLIANCE_STATES).optional(),
        clustername: z.string().optional(),
        clusternamespace: z.string().optional(),
        remainingBindings: z.array(z.strictObject({ placementBinding: z.string().optional() })).optional(),
      }),
    )
    .optional(),
  compliant: z.enum(COMPLIANCE_STATES).optional(),
  details: z
    .array(
      z.strictObject({
        templateMeta: z.record(z.string(), z.unknown()).optional(),
        compliant: z.enum(COMPLIANCE_STATES).optional(),
        history: z.array(HistorySchema).optional(),
      }),
    )
    .optional(),
});

/** The `<namespace>.<name>` a root policy's replicas are named (OCM's `FullNameForPolicy`). */
export function fullPolicyName(namespace: string, name: string): string {
  return `${namespace}.${name}`;
}

/** True when `obj` is a replicated policy (it carries {@link ROOT_POLICY_LABEL}). */
export function isReplicatedPolicy(obj: KubeObject): boolean {
  return obj.metadata.labels?.[ROOT_POLICY_LABEL] !== undefined;
}

/**
 * The Policy kind (stored in D1). Validation as OCM's webhook: on create, a root policy's
 * `<namespace>.<name>` must fit a label value (namespace and name at most 62 characters
 * together); a Policy without `spec.remediationAction` needs one on each ConfigurationPolicy.
 */
export const PolicyKind: KindDefinition = {
  group: POLICY_GROUP,
  version: "v1",
  kind: "Policy",
  listKind: "PolicyList",
  plural: "policies",
  singular: "policy",
  shortNames: ["plc"],
  namespaced: true,
  hasStatus: true,
  schema: objectSchema(PolicySpecSchema, PolicyStatusSchema, true),
  storage: "d1",
  printerColumns: [
    { name: "Remediation action", type: "string", jsonPath: ".spec.remediationAction" },
    { name: "Compliance state", type: "string", jsonPath: ".status.compliant" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  validate(obj, old): StatusCause[] {
    const causes: StatusCause[] = [];
    const ns = obj.metadata.namespace ?? "";
    const name = obj.metadata.name ?? "";
    // OCM checks the length on create only, and not for replicated policies.
    if (!old && !isReplicatedPolicy(obj) && [...ns].length + [...name].length > 62) {
      causes.push({
        field: "metadata.name",
        reason: "FieldValueTooLong",
        message: `Too long: the combined length of the policy namespace and name cannot exceed 62 characters ("${fullPolicyName(ns, name)}" names its replicas and is a label value)`,
      });
    }
    const spec = (obj.spec ?? {}) as {
      remediationAction?: string;
      "policy-templates"?: { objectDefinition?: { kind?: string; spec?: { remediationAction?: string } } }[];
    };
    if (!spec.remediationAction) {
      spec["policy-templates"]?.forEach((t, i) => {
        if (t.objectDefinition?.kind === "ConfigurationPolicy" && !t.objectDefinition.spec?.remediationAction) {
          causes.push({
            field: `spec.policy-templates[${i}].objectDefinition.spec.remediationAction`,
            reason: "FieldValueRequired",
            message: "Required value: RemediationAction field of the policy and policy template cannot both be unset",
          });
        }
      });
    }
    return causes;
  },
};

/** `PlacementBinding.placementRef`: a Placement (PlacementRule, deprecated, is not served by this hub). */
const PlacementSubjectSchema = z.strictObject({
  apiGroup: onlyValues(z.enum(["apps.open-cluster-management.io", "cluster.open-cluster-management.io"]), ["cluster.open-cluster-management.io"]),
  kind: onlyValues(z.enum(["PlacementRule", "Placement"]), ["Placement"]),
  name: NonEmpty,
});

const SubjectSchema = z.strictObject({
  apiGroup: z.enum([POLICY_GROUP]),
  kind: z.enum(["Policy", "PolicySet"]),
  name: NonEmpty,
});

/** The PlacementBinding kind (stored in D1): binds a Placement to Policies and PolicySets of its namespace. */
export const PlacementBindingKind: KindDefinition = {
  group: POLICY_GROUP,
  version: "v1",
  kind: "PlacementBinding",
  listKind: "PlacementBindingList",
  plural: "placementbindings",
  singular: "placementbinding",
  shortNames: ["pb"],
  namespaced: true,
  hasStatus: true,
  schema: z.strictObject({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: ObjectMetaSchema,
    placementRef: PlacementSubjectSchema,
    subjects: z.array(SubjectSchema).min(1),
    bindingOverrides: z.strictObject({ remediationAction: z.enum(["Enforce", "enforce"]).optional() }).optional(),
    subFilter: z.enum(["restricted"]).optional(),
    status: z.strictObject({}).nullable().optional(),
  }),
  storage: "d1",
  changeCounter: PLACEMENT_REFERENCE_CHANGE_COUNTER,
};

/** `PolicySet.spec` (v1beta1). */
export const PolicySetSpecSchema = z.strictObject({
  description: z.string().optional(),
  policies: z.array(NonEmpty),
  exclusions: onlyEmpty(
    z.array(z.strictObject({ policyName: NonEmpty, reason: z.string().optional(), clusterNames: z.array(NonEmpty).min(1) })),
    "policy set exclusions are not supported by this hub's policy framework",
  ).optional(),
});

/** `PolicySet.status` (v1beta1), written by the hub. */
export const PolicySetStatusSchema = z.strictObject({
  placement: z
    .array(z.strictObject({ placementBinding: z.string().optional(), placement: z.string().optional(), placementRule: z.string().optional() }))
    .optional(),
  compliant: z.enum(COMPLIANCE_STATES).optional(),
  statusMessage: z.string().optional(),
  exclusions: z.array(z.strictObject({ policyName: NonEmpty, clusters: z.array(NonEmpty).min(1) })).optional(),
});

/** The PolicySet kind (stored in D1; status aggregated by the hub from its policies). */
export const PolicySetKind: KindDefinition = {
  group: POLICY_GROUP,
  version: "v1beta1",
  kind: "PolicySet",
  listKind: "PolicySetList",
  plural: "policysets",
  singular: "policyset",
  shortNames: ["plcset"],
  namespaced: true,
  hasStatus: true,
  schema: objectSchema(PolicySetSpecSchema, PolicySetStatusSchema, true),
  storage: "d1",
  printerColumns: [
    { name: "Compliance state", type: "string", jsonPath: ".status.compliant" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
};
