/**
 * Placement and PlacementDecision (`cluster.open-cluster-management.io/v1beta1`, namespaced),
 * ManagedClusterSetBinding (`v1beta2`, namespaced) and AddOnPlacementScore (`v1alpha1`,
 * namespaced in the cluster's namespace), with OCM's fields and CRD validation
 * (../shared/reference/ocm-semantics.md sections 5-7). Their status is written by the hub's
 * scheduler (src/placement/), never by users through the main resource.
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { LabelSelectorSchema, LabelSelectorRequirementSchema } from "../k8s/labels.ts";
import { ConditionsSchema, ObjectMetaSchema, objectSchema } from "../k8s/meta.ts";
import { onlyValues } from "../k8s/unimplemented.ts";

const ClaimSelectorSchema = z.strictObject({ matchExpressions: z.array(LabelSelectorRequirementSchema).optional() });
const GROUP_NAME = /^[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]$/;
const PER_GROUP = /^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$/;

/** `Placement.spec` (v1beta1), as the CRD validates it. */
export const PlacementSpecSchema = z.strictObject({
  clusterSets: z.array(z.string()).optional(),
  numberOfClusters: z.number().int().min(0).max(2147483647).nullable().optional(),
  predicates: z
    .array(
      z.strictObject({
        requiredClusterSelector: z
          .strictObject({
            labelSelector: LabelSelectorSchema.optional(),
            claimSelector: ClaimSelectorSchema.optional(),
            celSelector: z.strictObject({ celExpressions: z.array(z.string()).optional() }).optional(),
          })
          .optional(),
      }),
    )
    .optional(),
  prioritizerPolicy: z
    .strictObject({
      mode: z.enum(["Additive", "Exact"]).optional(),
      configurations: z
        .array(
          z.strictObject({
            scoreCoordinate: z
              .strictObject({
                type: z.enum(["BuiltIn", "AddOn"]).optional(),
                builtIn: z.string().optional(),
                addOn: z.strictObject({ resourceName: z.string().min(1), scoreName: z.string().min(1) }).optional(),
              })
              .optional(),
            weight: z.number().int().min(-10).max(10).optional(),
          }),
        )
        .optional(),
    })
    .optional(),
  spreadPolicy: z
    .strictObject({
      spreadConstraints: z
        .array(
          z.strictObject({
            topologyKey: z.string(),
            topologyKeyType: z.enum(["Label", "Claim"]),
            maxSkew: z.number().int().min(1).optional(),
            whenUnsatisfiable: z.enum(["ScheduleAnyway", "DoNotSchedule"]).optional(),
          }),
        )
        .max(8)
        .optional(),
    })
    .optional(),
  tolerations: z
    .array(
      z.strictObject({
        key: z.string().optional(),
        operator: z.enum(["Equal", "Exists"]).optional(),
        value: z.string().optional(),
        effect: z.enum(["NoSelect", "PreferNoSelect", "NoSelectIfNew", ""]).optional(),
        tolerationSeconds: z.number().int().nullable().optional(),
      }),
    )
    .optional(),
  decisionStrategy: z
    .strictObject({
      groupStrategy: z
        .strictObject({
          decisionGroups: z
            .array(
              z.strictObject({
                groupName: z.string().regex(GROUP_NAME, "must match ^[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]$"),
                groupClusterSelector: z
                  .strictObject({ labelSelector: LabelSelectorSchema.optional(), claimSelector: ClaimSelectorSchema.optional() })
                  .optional(),
              }),
            )
            .optional(),
          clustersPerDecisionGroup: z
            .union([z.number().int().min(1), z.string().regex(PER_GROUP, "must be a positive integer or a percentage from 1% to 100%")])
            .optional(),
        })
        .optional(),
    })
    .optional(),
  // Decisions are ordered by cluster name (OCM's default); scores are not recorded in decisions.
  sortBy: onlyValues(z.enum(["ClusterName", "Score"]), ["ClusterName"]).optional(),
  scoreRateLimit: onlyValues(z.string().regex(/^[0-9]+[hms]$/, "must match ^[0-9]+[hms]$"), ["1m"]).optional(),
});

const PlacementStatusSchema = z.strictObject({
  numberOfSelectedClusters: z.number().int().optional(),
  decisionGroups: z
    .array(
      z.strictObject({
        decisionGroupIndex: z.number().int(),
        decisionGroupName: z.string(),
        decisions: z.array(z.string()),
        clusterCount: z.number().int(),
      }),
    )
    .optional(),
  conditions: ConditionsSchema.optional(),
  // OCM's field for score updates in decisions; the hub records no scores, so never writes it.
  lastScoreUpdateTime: z.string().nullable().optional(),
});

/**
 * The `counters` row every ClusterManagementAddOn and PlacementBinding write sets to its
 * resourceVersion in its own batch (`KindDefinition.changeCounter`): the freshness check of the
 * isolate's index of the placements they name (src/placement/consumers.ts), which decides
 * whether a PlacementDecision's change runs the add-on manager and the policy propagator.
 */
export const PLACEMENT_REFERENCE_CHANGE_COUNTER = 6;

/** The Placement kind (stored in D1; status written by the scheduler). */
export const PlacementKind: KindDefinition = {
  group: "cluster.open-cluster-management.io",
  version: "v1beta1",
  kind: "Placement",
  listKind: "PlacementList",
  plural: "placements",
  singular: "placement",
  shortNames: [],
  namespaced: true,
  hasStatus: true,
  schema: objectSchema(PlacementSpecSchema, PlacementStatusSchema),
  storage: "d1",
  printerColumns: [
    { name: "Succeeded", type: "string", jsonPath: '.status.conditions[?(@.type=="PlacementSatisfied")].status' },
    { name: "Reason", type: "string", jsonPath: '.status.conditions[?(@.type=="PlacementSatisfied")].reason' },
    { name: "SelectedClusters", type: "integer", jsonPath: ".status.numberOfSelectedClusters" },
  ],
  defaults(obj) {
    obj.spec ??= {};
    // CRD defaults of SpreadConstraintsTerm (OCM api cluster/v1beta1): maxSkew 1, ScheduleAnyway.
    const terms = (obj.spec.spreadPolicy as { spreadConstraints?: unknown } | undefined)?.spreadConstraints;
    if (Array.isArray(terms)) {
      for (const t of terms as Record<string, unknown>[]) {
        if (t === null || typeof t !== "object") continue;
        t.maxSkew ??= 1;
        t.whenUnsatisfiable ??= "ScheduleAnyway";
      }
    }
  },
};

/** The PlacementDecision kind: written by the scheduler only (users get 405). */
export const PlacementDecisionKind: KindDefinition = {
  group: "cluster.open-cluster-management.io",
  version: "v1beta1",
  kind: "PlacementDecision",
  listKind: "PlacementDecisionList",
  plural: "placementdecisions",
  singular: "placementdecision",
  shortNames: [],
  namespaced: true,
  hasStatus: true,
  systemOwned: true,
  schema: objectSchema(
    z.strictObject({}),
    z.strictObject({ decisions: z.array(z.strictObject({ clusterName: z.string(), reason: z.string(), score: z.number().int().optional() })) }),
  ),
  storage: "d1",
};

/** The ManagedClusterSetBinding kind: `spec.clusterSet` must equal `metadata.name` (OCM webhook). */
export const ManagedClusterSetBindingKind: KindDefinition = {
  group: "cluster.open-cluster-management.io",
  version: "v1beta2",
  kind: "ManagedClusterSetBinding",
  listKind: "ManagedClusterSetBindingList",
  plural: "managedclustersetbindings",
  singular: "managedclustersetbinding",
  shortNames: ["mclsetbinding", "mclsetbindings"],
  namespaced: true,
  hasStatus: true,
  schema: objectSchema(z.strictObject({ clusterSet: z.string().min(1) }), z.strictObject({ conditions: ConditionsSchema.optional() })),
  storage: "d1",
  validate(obj): StatusCause[] {
    const set = (obj.spec as { clusterSet?: string } | undefined)?.clusterSet;
    if (!set) return [{ field: "spec.clusterSet", message: "Required value", reason: "FieldValueRequired" }];
    if (set !== obj.metadata.name)
      return [
        {
          field: "spec.clusterSet",
          message: `Invalid value: ${JSON.stringify(set)}: The ManagedClusterSetBinding must have the same name as the target ManagedClusterSet`,
        },
      ];
    return [];
  },
};

/** The AddOnPlacementScore kind (namespace = cluster name; `status.scores` values in [-100, 100]). */
export const AddOnPlacementScoreKind: KindDefinition = {
  group: "cluster.open-cluster-management.io",
  version: "v1alpha1",
  kind: "AddOnPlacementScore",
  listKind: "AddOnPlacementScoreList",
  plural: "addonplacementscores",
  singular: "addonplacementscore",
  shortNames: [],
  namespaced: true,
  hasStatus: true,
  schema: z.strictObject({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: ObjectMetaSchema,
    status: z
      .strictObject({
        conditions: ConditionsSchema.optional(),
        scores: z.array(z.strictObject({ name: z.string().min(1), value: z.number().int().min(-100).max(100) })).optional(),
        validUntil: z.string().nullable().optional(),
      })
      .nullable()
      .optional(),
  }),
  storage: "d1",
};
