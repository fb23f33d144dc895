/**
 * OCM's cluster views (`clusterview.open-cluster-management.io/v1`, from the multicloud
 * foundation that OCM-based hubs run): `managedclustersets` and `managedclusters`, list and watch
 * only, showing the ManagedClusterSets a user may `get` and the ManagedClusters in those sets, so a
 * team sees its own clusters without cluster-wide read rights (src/auth/clusterview.ts). The
 * objects are the stored ones (`cluster.open-cluster-management.io`), printed as kubectl prints
 * them; the view's own list and watch are authorized by RBAC like any resource's.
 */
import type { KindDefinition } from "../k8s/kind.ts";
import { ManagedClusterKind } from "./managedcluster.ts";
import { ManagedClusterSetKind } from "./managedclusterset.ts";

/** The cluster views' API group. */
export const CLUSTERVIEW_GROUP = "clusterview.open-cluster-management.io";

function viewOf(def: KindDefinition): KindDefinition {
  return {
    group: CLUSTERVIEW_GROUP,
    version: "v1",
    kind: def.kind,
    listKind: def.listKind,
    plural: def.plural,
    singular: def.singular,
    shortNames: [],
    namespaced: false,
    hasStatus: false,
    schema: def.schema,
    storage: def.storage,
    systemOwned: true,
    viewOf: def,
    ...(def.printerColumns ? { printerColumns: def.printerColumns } : {}),
  };
}

/** `managedclusters.clusterview.open-cluster-management.io`: the ManagedClusters of the sets the user may get. */
export const ClusterViewManagedClusterKind: KindDefinition = viewOf(ManagedClusterKind);
/** `managedclustersets.clusterview.open-cluster-management.io`: the ManagedClusterSets the user may get. */
export const ClusterViewManagedClusterSetKind: KindDefinition = viewOf(ManagedClusterSetKind);
