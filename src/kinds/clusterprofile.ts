/**
 * ClusterProfile (`multicluster.x-k8s.io/v1alpha1`, namespaced): SIG Multicluster's cluster
 * inventory API (KEP-4322, kubernetes-sigs/cluster-inventory-api `apis/v1alpha1`), which
 * consumers such as MultiKueue, Headlamp and multicluster-runtime list and watch. The hub writes
 * them (src/clusterprofile/), one per ManagedCluster in each namespace whose bound
 * ManagedClusterSets hold it, as OCM's `clusterprofile` controllers do; users may read them only
 * (writes are 405, as for other hub-written kinds).
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { ConditionsSchema, ObjectMetaSchema } from "../k8s/meta.ts";

/** The API group of the cluster inventory API. */
export const CLUSTER_INVENTORY_GROUP = "multicluster.x-k8s.io";
/** `LabelClusterManagerKey`: the name of the cluster manager a ClusterProfile belongs to. */
export const CLUSTER_MANAGER_LABEL = "x-k8s.io/cluster-manager";
/** `LabelClusterSetKey`: the cluster set a ClusterProfile belongs to. */
export const CLUSTER_INVENTORY_CLUSTERSET_LABEL = "multicluster.x-k8s.io/clusterset";
/** OCM's `ClusterNameLabelKey`, which OCM's controller puts on each profile. */
export const OCM_CLUSTER_NAME_LABEL = "open-cluster-management.io/cluster-name";
/**
 * The cluster manager name (`spec.clusterManager.name` and the manager label) of the profiles
 * the hub writes: OCM's, so a consumer configured for an OCM hub selects them unchanged.
 */
export const CLUSTER_MANAGER_NAME = "open-cluster-management";
/** `ClusterConditionControlPlaneHealthy`. */
export const CONTROL_PLANE_HEALTHY = "ControlPlaneHealthy";

const PropertySchema = z.strictObject({
  name: z.string().min(1).max(253),
  value: z.string().min(1).max(1024),
  lastObservedTime: z.string().optional(),
});

/** clientcmd v1 `Cluster` (connection details of an access provider), kept as given. */
const AccessProviderSchema = z.strictObject({
  name: z.string(),
  cluster: z.record(z.string(), z.unknown()).optional(),
});

const ClusterProfileSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  spec: z.strictObject({
    displayName: z.string().optional(),
    clusterManager: z.strictObject({ name: z.string() }),
  }),
  status: z
    .strictObject({
      conditions: ConditionsSchema.nullable().optional(),
      version: z.strictObject({ kubernetes: z.string().optional() }).optional(),
      properties: z.array(PropertySchema).optional(),
      credentialProviders: z.array(AccessProviderSchema).optional(),
      accessProviders: z.array(AccessProviderSchema).optional(),
    })
    .nullable()
    .optional(),
});

/** The ClusterProfile kind (stored in D1, written by the hub only). */
export const ClusterProfileKind: KindDefinition = {
  group: CLUSTER_INVENTORY_GROUP,
  version: "v1alpha1",
  kind: "ClusterProfile",
  listKind: "ClusterProfileList",
  plural: "clusterprofiles",
  singular: "clusterprofile",
  shortNames: [],
  namespaced: true,
  hasStatus: true,
  systemOwned: true,
  schema: ClusterProfileSchema,
  storage: "d1",
  validate(obj, old): StatusCause[] {
    // The CRD's `x-kubernetes-validations` rule on spec.clusterManager: `self == oldSelf`.
    const name = (obj.spec?.clusterManager as { name?: string } | undefined)?.name;
    const before = (old?.spec?.clusterManager as { name?: string } | undefined)?.name;
    if (old && name !== before)
      return [{ reason: "FieldValueInvalid", message: 'Invalid value: "object": ClusterManager is immutable', field: "spec.clusterManager" }];
    return [];
  },
};
