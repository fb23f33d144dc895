/**
 * ManagedClusterSet (`cluster.open-cluster-management.io/v1beta2`, cluster-scoped, `mclset`):
 * selector types ExclusiveClusterSetLabel (default; membership by the
 * `cluster.open-cluster-management.io/clusterset` label) and LabelSelector. The built-in sets
 * `default` (clusters with no set label are put in it) and `global` (every cluster) always exist
 * (OCM `pkg/registration/hub/managedclusterset`).
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { fromLabelSelector, LabelSelectorSchema, matches, validateLabelSelector } from "../k8s/labels.ts";
import { ConditionsSchema, ObjectMetaSchema, type KubeObject } from "../k8s/meta.ts";
import { onlyEmpty } from "../k8s/unimplemented.ts";
import { CLUSTERSET_LABEL } from "./managedcluster.ts";

const ManagedClusterSetSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  spec: z
    .strictObject({
      clusterSelector: z
        .strictObject({
          selectorType: z.enum(["ExclusiveClusterSetLabel", "LabelSelector"]).optional(),
          labelSelector: LabelSelectorSchema.nullable().optional(),
        })
        .optional(),
      managedNamespaces: onlyEmpty(
        z.array(z.strictObject({ name: z.string() })),
        "managed namespaces are not created on the set's clusters by this hub",
      ).optional(),
    })
    .optional(),
  status: z.strictObject({ conditions: ConditionsSchema.optional() }).nullable().optional(),
});

/** The ManagedClusterSet kind (stored in D1). */
export const ManagedClusterSetKind: KindDefinition = {
  group: "cluster.open-cluster-management.io",
  version: "v1beta2",
  kind: "ManagedClusterSet",
  listKind: "ManagedClusterSetList",
  plural: "managedclustersets",
  singular: "managedclusterset",
  shortNames: ["mclset", "mclsets"],
  namespaced: false,
  hasStatus: true,
  schema: ManagedClusterSetSchema,
  storage: "d1",
  // OCM's CRD columns (cluster/v1beta2 managedclustersets): EMPTY (the ClusterSetEmpty condition), AGE.
  printerColumns: [
    { name: "Empty", type: "string", jsonPath: '.status.conditions[?(@.type=="ClusterSetEmpty")].status' },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  defaults(obj) {
    obj.spec ??= {};
    const sel = (obj.spec.clusterSelector ??= {}) as Record<string, unknown>;
    sel.selectorType ??= "ExclusiveClusterSetLabel";
  },
  validate(obj): StatusCause[] {
    const sel = (obj.spec?.clusterSelector ?? {}) as { selectorType?: string; labelSelector?: unknown };
    if (sel.selectorType === "LabelSelector") {
      return validateLabelSelector(sel.labelSelector as never, "spec.clusterSelector.labelSelector");
    }
    return [];
  },
};

/** The built-in sets and their specs, as OCM creates them. */
export const BUILTIN_CLUSTER_SETS: { name: string; spec: Record<string, unknown> }[] = [
  { name: "default", spec: { clusterSelector: { selectorType: "ExclusiveClusterSetLabel" } } },
  { name: "global", spec: { clusterSelector: { selectorType: "LabelSelector", labelSelector: {} } } },
];

/**
 * Whether a cluster (by its labels) belongs to a set: ExclusiveClusterSetLabel compares the
 * clusterset label with the set's name; LabelSelector matches the selector (`{}` selects all).
 */
export function clusterInSet(set: KubeObject, clusterLabels: Record<string, string> | undefined): boolean {
  const sel = (set.spec?.clusterSelector ?? {}) as { selectorType?: string; labelSelector?: unknown };
  if ((sel.selectorType ?? "ExclusiveClusterSetLabel") === "ExclusiveClusterSetLabel") {
    return (clusterLabels?.[CLUSTERSET_LABEL] ?? "") === set.metadata.name;
  }
  return matches(fromLabelSelector(sel.labelSelector as never), clusterLabels ?? {});
}
