/**
 * KubeFleet's placement API, `placement.kubernetes-fleet.io` (kubefleet-dev/kubefleet
 * `apis/placement/v1beta1` and `v1`; docs/kubefleet.md): ClusterResourcePlacement
 * (cluster-scoped) and ResourcePlacement (namespaced), served in v1beta1 (their storage version,
 * a superset) and v1 (without `strategy.deleteStrategy` and `strategy.reportBackStrategy`, as
 * KubeFleet's v1 API); the kinds the placement controller (src/fleet/) writes and users only read
 * (ClusterSchedulingPolicySnapshot / SchedulingPolicySnapshot, ClusterResourceSnapshot /
 * ResourceSnapshot, ClusterResourceBinding / ResourceBinding), and the envelopes
 * (ClusterResourceEnvelope / ResourceEnvelope, v1beta1), which carry objects the hub must not
 * hold as themselves.
 *
 * Schemas, defaults (KubeFleet's mutating webhook, `pkg/utils/defaulter` `SetPlacementDefaults`)
 * and printer columns follow KubeFleet's types and CRDs; validation is src/kinds/fleet-validation.ts.
 * Fields the hub does not implement are refused with 422 naming them (docs/ocm-compatibility.md's
 * rule, src/k8s/unimplemented.ts): `applyStrategy.type: ReportDiff`,
 * `reportBackStrategy.type: Mirror`, `statusReportingScope: NamespaceAccessible`.
 */
import { z } from "zod";
import type { KindDefinition, PrinterColumn } from "../k8s/kind.ts";
import { LabelSelectorSchema } from "../k8s/labels.ts";
import { ConditionSchema, ConditionsSchema, ObjectMetaSchema, objectSchema, type KubeObject } from "../k8s/meta.ts";
import { onlyValues } from "../k8s/unimplemented.ts";
import { validatePlacement, type KindLookup, type PlacementSpec } from "./fleet-validation.ts";

/** The API group. */
export const FLEET_GROUP = "placement.kubernetes-fleet.io";
/**
 * The `counters` row every write of a ClusterResourcePlacement, ResourcePlacement,
 * PropagationPolicy or ClusterPropagationPolicy sets to its resourceVersion
 * (`KindDefinition.changeCounter`): the freshness check of the isolate's lists of them that an
 * object's write reads to find the placements it may concern (src/fleet/placement-lists.ts).
 */
export const PLACEMENT_CHANGE_COUNTER = 4;
/** KubeFleet's label and annotation prefix. */
export const FLEET_PREFIX = "kubernetes-fleet.io/";
/** Label on snapshots, bindings and works: the placement's name (`<namespace>.<name>` for a ResourcePlacement's works). */
export const PLACEMENT_TRACKING_LABEL = `${FLEET_PREFIX}parent-CRP`;
/** Label on a resource snapshot: its index. */
export const RESOURCE_INDEX_LABEL = `${FLEET_PREFIX}resource-index`;
/** Label on a policy snapshot: its index. */
export const POLICY_INDEX_LABEL = `${FLEET_PREFIX}policy-index`;
/** Label on the latest snapshot: "true" (else "false"). */
export const IS_LATEST_SNAPSHOT_LABEL = `${FLEET_PREFIX}is-latest-snapshot`;
/** Annotation on a master resource snapshot: the hash of the selected resources. */
export const RESOURCE_HASH_ANNOTATION = `${FLEET_PREFIX}resource-hash`;
/** Annotation on a master resource snapshot: how many snapshots make up its index. */
export const NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION = `${FLEET_PREFIX}number-of-resource-snapshots`;
/** Annotation on a sub-snapshot: its subindex. */
export const SUBINDEX_ANNOTATION = `${FLEET_PREFIX}subindex-of-resource-snapshot`;
/** Annotation on a master resource snapshot: how many enveloped objects it carries. */
export const NUMBER_OF_ENVELOPED_OBJECTS_ANNOTATION = `${FLEET_PREFIX}number-of-enveloped-object`;
/** Annotation on a policy snapshot: the placement's numberOfClusters (PickN). */
export const NUMBER_OF_CLUSTERS_ANNOTATION = `${FLEET_PREFIX}number-of-clusters`;
/** Annotation on snapshots: the placement's generation they were made for. */
export const CRP_GENERATION_ANNOTATION = `${FLEET_PREFIX}CRP-generation`;
/** Label on a ResourcePlacement's works: its namespace. */
export const PARENT_NAMESPACE_LABEL = `${FLEET_PREFIX}parent-placement-namespace`;
/** Label on works: the binding they were rendered for. */
export const PARENT_BINDING_LABEL = `${FLEET_PREFIX}parent-resource-binding`;
/** Label on works: the resource snapshot index they carry. */
export const PARENT_SNAPSHOT_INDEX_LABEL = `${FLEET_PREFIX}parent-resource-snapshot-index`;
/** Annotation on works: the master resource snapshot they carry. */
export const PARENT_SNAPSHOT_NAME_ANNOTATION = `${FLEET_PREFIX}parent-resource-snapshot-name`;
/** Annotation on works: the applyStrategy, JSON with KubeFleet's defaults filled in (docs/kubefleet.md). */
export const APPLY_STRATEGY_ANNOTATION = `${FLEET_PREFIX}apply-strategy`;
/** Annotation on works: `rollingUpdate.unavailablePeriodSeconds` (decimal). */
export const UNAVAILABLE_PERIOD_ANNOTATION = `${FLEET_PREFIX}unavailable-period-seconds`;
/** The finalizer the placement controller keeps on a ClusterResourcePlacement until its works are gone. */
export const CRP_CLEANUP_FINALIZER = `${FLEET_PREFIX}crp-cleanup`;
/** The finalizer the placement controller keeps on a ResourcePlacement until its works are gone. */
export const RP_CLEANUP_FINALIZER = `${FLEET_PREFIX}rp-cleanup`;

const IntOrPercent = z.union([z.number().int(), z.string().regex(/^((100|[0-9]{1,2})%|[0-9]+)$/, "must match ^((100|[0-9]{1,2})%|[0-9]+)$")]);

/** KubeFleet's `ResourceSelectorTerm` (also a ClusterResourceOverride's selector). */
export const ResourceSelectorTermSchema = z.strictObject({
  group: z.string().describe("Group name of the selected resource; the empty string for the core API group (e.g. namespaces)."),
  version: z.string().describe("Version of the selected resource."),
  kind: z.string().describe("Kind of the selected resource. A Namespace selects its content too, as `selectionScope` says (ClusterResourcePlacement only)."),
  name: z.string().optional().describe("Name of the selected resource; at most one of name and labelSelector. Neither: every resource of the kind."),
  labelSelector: LabelSelectorSchema.optional().describe("A label query over the resources of the kind."),
  selectionScope: z
    .enum(["NamespaceOnly", "NamespaceWithResources", "NamespaceWithResourceSelectors"])
    .optional()
    .describe("For a Namespace: the namespace only, with everything in it (the default), or with what the other selectors name in it."),
});

const PropertySelectorRequirementSchema = z.strictObject({
  name: z.string(),
  operator: z.string(),
  // The CRD allows one value (MaxItems=1); KubeFleet's webhook says "operator Eq requires exactly one value, got 2".
  values: z.array(z.string()),
});

/** KubeFleet's `ClusterSelectorTerm` (also an override rule's). */
export const ClusterSelectorTermSchema = z.strictObject({
  labelSelector: LabelSelectorSchema.optional(),
  propertySelector: z.strictObject({ matchExpressions: z.array(PropertySelectorRequirementSchema) }).optional(),
  // Its sortOrder is checked by KubeFleet's webhook ("invalid property sort order ...").
  propertySorter: z.strictObject({ name: z.string(), sortOrder: z.string() }).optional(),
});

const PlacementPolicySchema = z.strictObject({
  placementType: z.enum(["PickAll", "PickN", "PickFixed"]).optional(),
  clusterNames: z.array(z.string()).max(100).optional(),
  // The CRD's Minimum=0 is left to KubeFleet's webhook ("number of clusters cannot be -1 for policy type PickN").
  numberOfClusters: z.number().int().max(2147483647).optional(),
  affinity: z
    .strictObject({
      clusterAffinity: z
        .strictObject({
          requiredDuringSchedulingIgnoredDuringExecution: z.strictObject({ clusterSelectorTerms: z.array(ClusterSelectorTermSchema).max(10) }).optional(),
          preferredDuringSchedulingIgnoredDuringExecution: z
            .array(z.strictObject({ weight: z.number().int().min(-100).max(100), preference: ClusterSelectorTermSchema }))
            .optional(),
        })
        .optional(),
    })
    .optional(),
  topologySpreadConstraints: z
    .array(
      z.strictObject({
        maxSkew: z.number().int().min(1).optional(),
        topologyKey: z.string(),
        // Checked by KubeFleet's webhook ("unknown unsatisfiable type ...").
        whenUnsatisfiable: z.string().optional(),
      }),
    )
    .optional(),
  tolerations: z
    .array(
      z.strictObject({
        key: z.string().optional(),
        operator: z.enum(["Equal", "Exists"]).optional(),
        value: z.string().optional(),
        effect: z.enum(["NoSchedule"]).optional(),
        // Flotilla's, OCM's semantics: the automatic eviction of a PickN placement from a cluster
        // unreachable past it (docs/kubefleet.md "Evictions, budgets, drain").
        tolerationSeconds: z.number().int().optional(),
      }),
    )
    .max(100)
    .optional(),
});

const ApplyStrategySchema = z.strictObject({
  comparisonOption: z.enum(["PartialComparison", "FullComparison"]).optional(),
  whenToApply: z.enum(["Always", "IfNotDrifted"]).optional(),
  // ReportDiff needs the agent to report diffs without applying: not built.
  type: onlyValues(z.enum(["ClientSideApply", "ServerSideApply", "ReportDiff"]), ["ClientSideApply", "ServerSideApply"]).optional(),
  allowCoOwnership: z.boolean().optional(),
  serverSideApplyConfig: z.strictObject({ force: z.boolean().optional() }).optional(),
  whenToTakeOver: z.enum(["Always", "IfNoDiff", "Never"]).optional(),
});

const RollingUpdateSchema = z.strictObject({
  maxUnavailable: IntOrPercent.optional(),
  maxSurge: IntOrPercent.optional(),
  // The CRD's Minimum=0 is left to KubeFleet's webhook ("unavailablePeriodSeconds must be greater than or equal to 0, got -10").
  unavailablePeriodSeconds: z.number().int().optional(),
});

const strategyFields = {
  // KubeFleet's webhook says "unsupported rollout strategy type ..."; External is rolled out by staged update runs (src/fleet/updaterun/).
  type: z.string().optional(),
  rollingUpdate: RollingUpdateSchema.optional(),
  applyStrategy: ApplyStrategySchema.optional(),
};

const RolloutStrategyV1beta1Schema = z.strictObject({
  ...strategyFields,
  deleteStrategy: z.strictObject({ propagationPolicy: z.enum(["Abandon", "Delete"]).optional() }).optional(),
  // Mirroring the member's status back is not built.
  reportBackStrategy: z
    .strictObject({
      type: onlyValues(z.enum(["Disabled", "Mirror"]), ["Disabled"]),
      destination: z.enum(["OriginalResource", "WorkAPI"]).optional(),
    })
    .optional(),
});

const RolloutStrategyV1Schema = z.strictObject(strategyFields);

function placementSpecSchema(strategy: z.ZodType) {
  return z.strictObject({
    resourceSelectors: z.array(ResourceSelectorTermSchema).min(1).max(100).describe("The resources to place (1 to 100 selectors, ORed)."),
    policy: PlacementPolicySchema.optional().describe(
      "How clusters are picked (PickAll, PickN, PickFixed). Defaults to PickAll; its placementType is immutable.",
    ),
    strategy: strategy.optional().describe("How a change is rolled out (RollingUpdate) and applied on the clusters (applyStrategy)."),
    revisionHistoryLimit: z.number().int().min(1).max(1000).optional().describe("How many resource and policy snapshots are kept (default 10)."),
    // A ClusterResourcePlacementStatus object per namespace is not built.
    statusReportingScope: onlyValues(z.enum(["ClusterScopeOnly", "NamespaceAccessible"]), ["ClusterScopeOnly"]).optional(),
  });
}

const ResourceIdentifierFields = {
  group: z.string().optional(),
  version: z.string(),
  kind: z.string(),
  name: z.string(),
  namespace: z.string().optional(),
  envelope: z
    .strictObject({
      name: z.string(),
      namespace: z.string().optional(),
      type: z.enum(["ConfigMap", "ClusterResourceEnvelope", "ResourceEnvelope"]).optional(),
    })
    .optional(),
};
const PatchDetailSchema = z.strictObject({ path: z.string(), valueInMember: z.string().optional(), valueInHub: z.string().optional() });

/** KubeFleet's `FailedResourcePlacement`, `DriftedResourcePlacement` and `DiffedResourcePlacement` lists of a cluster. */
const PerClusterDetails = {
  failedPlacements: z
    .array(z.strictObject({ ...ResourceIdentifierFields, condition: ConditionSchema }))
    .max(100)
    .optional(),
  driftedPlacements: z
    .array(
      z.strictObject({
        ...ResourceIdentifierFields,
        observationTime: z.string(),
        targetClusterObservedGeneration: z.number().int(),
        firstDriftedObservedTime: z.string(),
        observedDrifts: z.array(PatchDetailSchema).optional(),
      }),
    )
    .max(100)
    .optional(),
  diffedPlacements: z
    .array(
      z.strictObject({
        ...ResourceIdentifierFields,
        observationTime: z.string(),
        targetClusterObservedGeneration: z.number().int().nullable().optional(),
        firstDiffedObservedTime: z.string(),
        observedDiffs: z.array(PatchDetailSchema).optional(),
      }),
    )
    .max(100)
    .optional(),
};

const PlacementStatusSchema = z.strictObject({
  selectedResources: z.array(z.strictObject(ResourceIdentifierFields)).optional(),
  observedResourceIndex: z.string().optional(),
  placementStatuses: z
    .array(
      z.strictObject({
        clusterName: z.string().optional(),
        observedResourceIndex: z.string().optional(),
        applicableResourceOverrides: z.array(z.strictObject({ name: z.string(), namespace: z.string().optional() })).optional(),
        applicableClusterResourceOverrides: z.array(z.string()).optional(),
        ...PerClusterDetails,
        conditions: ConditionsSchema.optional(),
      }),
    )
    .optional(),
  conditions: ConditionsSchema.optional(),
});

/**
 * KubeFleet's `SetPlacementDefaults` (its mutating webhook), on a stored spec (mutates), and the
 * CRD's own default of each resource selector's `selectionScope` (`NamespaceWithResources`,
 * `+kubebuilder:default`, set by the apiserver on every selector, whatever its kind).
 */
export function setPlacementDefaults(spec: PlacementSpec): void {
  for (const s of spec.resourceSelectors ?? []) if (s !== null && typeof s === "object") s.selectionScope ??= "NamespaceWithResources";
  spec.policy ??= { placementType: "PickAll" };
  spec.policy.placementType ??= "PickAll";
  for (const t of spec.policy.topologySpreadConstraints ?? []) {
    if (t === null || typeof t !== "object") continue;
    t.maxSkew ??= 1;
    t.whenUnsatisfiable ??= "DoNotSchedule";
  }
  for (const t of spec.policy.tolerations ?? []) if (t !== null && typeof t === "object") t.operator ??= "Equal";
  spec.strategy ??= {};
  const s = spec.strategy;
  s.type ??= "RollingUpdate";
  if (s.type === "RollingUpdate") {
    s.rollingUpdate ??= {};
    s.rollingUpdate.maxUnavailable ??= "25%";
    s.rollingUpdate.maxSurge ??= "25%";
    s.rollingUpdate.unavailablePeriodSeconds ??= 60;
  }
  s.applyStrategy ??= {};
  const a = s.applyStrategy;
  a.type ??= "ClientSideApply";
  if (a.type === "ServerSideApply") a.serverSideApplyConfig ??= { force: false };
  a.comparisonOption ??= "PartialComparison";
  a.whenToApply ??= "Always";
  a.whenToTakeOver ??= "Always";
  spec.revisionHistoryLimit ??= 10;
}

/** The printer columns of a placement (KubeFleet's `+kubebuilder:printcolumn`s), its conditions named with `prefix`. */
function placementColumns(prefix: string): PrinterColumn[] {
  const cond = (type: string, field: string) => `.status.conditions[?(@.type=="${prefix}${type}")].${field}`;
  return [
    { name: "Gen", type: "string", jsonPath: ".metadata.generation" },
    { name: "Type", type: "string", jsonPath: ".spec.policy.placementType", priority: 1 },
    { name: "Scheduled", type: "string", jsonPath: cond("Scheduled", "status") },
    { name: "Scheduled-Gen", type: "string", jsonPath: cond("Scheduled", "observedGeneration") },
    { name: "Work-Synchronized", type: "string", jsonPath: cond("WorkSynchronized", "status"), priority: 1 },
    { name: "Work-Synchronized-Gen", type: "string", jsonPath: cond("WorkSynchronized", "observedGeneration"), priority: 1 },
    { name: "Available", type: "string", jsonPath: cond("Available", "status") },
    { name: "Available-Gen", type: "string", jsonPath: cond("Available", "observedGeneration") },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ];
}

/** A v1beta1 object served as v1 (same fields, KubeFleet's v1 lacks deleteStrategy and reportBackStrategy). */
function toV1(o: KubeObject): KubeObject {
  const out = structuredClone(o);
  out.apiVersion = `${FLEET_GROUP}/v1`;
  const strategy = (out.spec as { strategy?: Record<string, unknown> } | undefined)?.strategy;
  if (strategy) {
    delete strategy.deleteStrategy;
    delete strategy.reportBackStrategy;
  }
  return out;
}

/** A v1 object stored as v1beta1 (a v1 write has no deleteStrategy or reportBackStrategy, as a v1 client of KubeFleet's). */
function toV1beta1(o: KubeObject): KubeObject {
  const out = structuredClone(o);
  out.apiVersion = `${FLEET_GROUP}/v1beta1`;
  return out;
}

const sameAs = (version: string) => (o: KubeObject) => ({ ...o, apiVersion: `${FLEET_GROUP}/${version}` });

/** The four placement kinds (ClusterResourcePlacement and ResourcePlacement in v1beta1 and v1). */
export interface PlacementKinds {
  crp: KindDefinition;
  crpV1: KindDefinition;
  rp: KindDefinition;
  rpV1: KindDefinition;
}

/**
 * The placement kinds, validated against the kinds `lookup` finds (a selector must name a served
 * kind of the right scope, as KubeFleet's webhook checks with its REST mapper). src/kinds/index.ts
 * makes them with its own lookup of served kinds, which it calls only when a placement is
 * written (no import cycle).
 */
export function placementKinds(lookup: KindLookup): PlacementKinds {
  const base = (kind: string, plural: string, shortName: string, namespaced: boolean, version: string, strategy: z.ZodType): KindDefinition => ({
    group: FLEET_GROUP,
    version,
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
    shortNames: [shortName],
    namespaced,
    hasStatus: true,
    schema: objectSchema(placementSpecSchema(strategy), PlacementStatusSchema, true),
    // Each entry is checked alone (no bound or rule across them): the controller's unchanged entries are not checked again.
    statusItemLists: ["placementStatuses"],
    storage: "d1",
    changeCounter: PLACEMENT_CHANGE_COUNTER,
    printerColumns: placementColumns(namespaced ? "ResourcePlacement" : "ClusterResourcePlacement"),
    defaults(obj) {
      if (obj.spec && typeof obj.spec === "object") setPlacementDefaults(obj.spec as PlacementSpec);
    },
    validate: (obj, old) => validatePlacement(obj, old, !namespaced, lookup),
  });
  const crp = base("ClusterResourcePlacement", "clusterresourceplacements", "crp", false, "v1beta1", RolloutStrategyV1beta1Schema);
  const rp = base("ResourcePlacement", "resourceplacements", "rp", true, "v1beta1", RolloutStrategyV1beta1Schema);
  return {
    crp,
    rp,
    crpV1: {
      ...base("ClusterResourcePlacement", "clusterresourceplacements", "crp", false, "v1", RolloutStrategyV1Schema),
      conversion: { storage: crp, toStorage: toV1beta1, fromStorage: toV1 },
    },
    rpV1: {
      ...base("ResourcePlacement", "resourceplacements", "rp", true, "v1", RolloutStrategyV1Schema),
      conversion: { storage: rp, toStorage: toV1beta1, fromStorage: toV1 },
    },
  };
}

/** A kind written by the placement controller, read-only to users, in v1beta1 and v1 (same fields). */
export function systemKind(kind: string, plural: string, shortName: string, namespaced: boolean, spec: z.ZodType, status: z.ZodType, columns: PrinterColumn[]) {
  const v1beta1: KindDefinition = {
    group: FLEET_GROUP,
    version: "v1beta1",
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
    shortNames: [shortName],
    namespaced,
    hasStatus: true,
    systemOwned: true,
    schema: objectSchema(spec, status, true),
    storage: "d1",
    printerColumns: columns,
  };
  const v1: KindDefinition = { ...v1beta1, version: "v1", conversion: { storage: v1beta1, toStorage: sameAs("v1beta1"), fromStorage: sameAs("v1") } };
  return [v1beta1, v1] as const;
}

const GEN_AGE: PrinterColumn[] = [
  { name: "Gen", type: "string", jsonPath: ".metadata.generation" },
  { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
];

const ResourceSnapshotSpecSchema = z.strictObject({ selectedResources: z.array(z.record(z.string(), z.unknown())) });
const SnapshotStatusSchema = z.strictObject({ conditions: ConditionsSchema.optional() });

const ClusterDecisionSchema = z.strictObject({
  clusterName: z.string(),
  selected: z.boolean(),
  clusterScore: z.strictObject({ affinityScore: z.number().int().optional(), priorityScore: z.number().int().optional() }).nullable().optional(),
  reason: z.string(),
});

const PolicySnapshotSpecSchema = z.strictObject({ policy: PlacementPolicySchema.optional(), policyHash: z.string() });
const PolicySnapshotStatusSchema = z.strictObject({
  observedCRPGeneration: z.number().int().optional(),
  conditions: ConditionsSchema.optional(),
  targetClusters: z.array(ClusterDecisionSchema).max(1000).optional(),
});

const BindingSpecSchema = z.strictObject({
  state: z.enum(["Scheduled", "Bound", "Unscheduled"]),
  resourceSnapshotName: z.string(),
  resourceOverrideSnapshots: z.array(z.strictObject({ name: z.string(), namespace: z.string().optional() })).optional(),
  clusterResourceOverrideSnapshots: z.array(z.string()).optional(),
  schedulingPolicySnapshotName: z.string(),
  targetCluster: z.string(),
  clusterDecision: ClusterDecisionSchema,
  applyStrategy: ApplyStrategySchema.optional(),
});
const BindingStatusSchema = z.strictObject({ ...PerClusterDetails, conditions: ConditionsSchema.optional() });

const BINDING_COLUMNS: PrinterColumn[] = [
  { name: "WorkSynchronized", type: "string", jsonPath: '.status.conditions[?(@.type=="WorkSynchronized")].status' },
  { name: "ResourcesApplied", type: "string", jsonPath: '.status.conditions[?(@.type=="Applied")].status' },
  { name: "ResourceAvailable", type: "string", jsonPath: '.status.conditions[?(@.type=="Available")].status', priority: 1 },
  { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
];

export const [ClusterResourceSnapshotKind, ClusterResourceSnapshotV1Kind] = systemKind(
  "ClusterResourceSnapshot",
  "clusterresourcesnapshots",
  "crs",
  false,
  ResourceSnapshotSpecSchema,
  SnapshotStatusSchema,
  GEN_AGE,
);
export const [ResourceSnapshotKind, ResourceSnapshotV1Kind] = systemKind(
  "ResourceSnapshot",
  "resourcesnapshots",
  "rs",
  true,
  ResourceSnapshotSpecSchema,
  SnapshotStatusSchema,
  GEN_AGE,
);
export const [ClusterSchedulingPolicySnapshotKind, ClusterSchedulingPolicySnapshotV1Kind] = systemKind(
  "ClusterSchedulingPolicySnapshot",
  "clusterschedulingpolicysnapshots",
  "csps",
  false,
  PolicySnapshotSpecSchema,
  PolicySnapshotStatusSchema,
  GEN_AGE,
);
export const [SchedulingPolicySnapshotKind, SchedulingPolicySnapshotV1Kind] = systemKind(
  "SchedulingPolicySnapshot",
  "schedulingpolicysnapshots",
  "sps",
  true,
  PolicySnapshotSpecSchema,
  PolicySnapshotStatusSchema,
  GEN_AGE,
);
export const [ClusterResourceBindingKind, ClusterResourceBindingV1Kind] = systemKind(
  "ClusterResourceBinding",
  "clusterresourcebindings",
  "crb",
  false,
  BindingSpecSchema,
  BindingStatusSchema,
  BINDING_COLUMNS,
);
export const [ResourceBindingKind, ResourceBindingV1Kind] = systemKind(
  "ResourceBinding",
  "resourcebindings",
  "rb",
  true,
  BindingSpecSchema,
  BindingStatusSchema,
  BINDING_COLUMNS,
);

/** An envelope's `data`: 1 to 50 named objects (KubeFleet's `MinProperties`/`MaxProperties`). */
const EnvelopeSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  data: z
    .record(z.string(), z.record(z.string(), z.unknown()))
    .refine((d) => Object.keys(d).length >= 1, "should have at least 1 properties")
    .refine((d) => Object.keys(d).length <= 50, "should have at most 50 properties"),
});

function envelopeKind(kind: string, plural: string, namespaced: boolean): KindDefinition {
  return {
    group: FLEET_GROUP,
    version: "v1beta1",
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
    shortNames: [],
    namespaced,
    hasStatus: false,
    schema: EnvelopeSchema,
    storage: "d1",
  };
}

/** ClusterResourceEnvelope (cluster-scoped): cluster-scoped objects placed as they are written in its `data`. */
export const ClusterResourceEnvelopeKind = envelopeKind("ClusterResourceEnvelope", "clusterresourceenvelopes", false);
/** ResourceEnvelope (namespaced): objects of its namespace placed as they are written in its `data`. */
export const ResourceEnvelopeKind = envelopeKind("ResourceEnvelope", "resourceenvelopes", true);

/** The kinds of this module that need no lookup, in discovery's order. */
export const FLEET_SYSTEM_KINDS: readonly KindDefinition[] = [
  ClusterSchedulingPolicySnapshotKind,
  ClusterSchedulingPolicySnapshotV1Kind,
  SchedulingPolicySnapshotKind,
  SchedulingPolicySnapshotV1Kind,
  ClusterResourceSnapshotKind,
  ClusterResourceSnapshotV1Kind,
  ResourceSnapshotKind,
  ResourceSnapshotV1Kind,
  ClusterResourceBindingKind,
  ClusterResourceBindingV1Kind,
  ResourceBindingKind,
  ResourceBindingV1Kind,
  ClusterResourceEnvelopeKind,
  ResourceEnvelopeKind,
];
