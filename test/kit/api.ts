/**
 * The test kit's API paths and content types: what Worker tests (in workerd), end-to-end tests
 * and the crash test all spell the same way. Pure strings, no Node or workerd import, so that
 * every suite can import it.
 */

/** OCM's cluster API group (`ManagedCluster`, `Placement`, `ManagedClusterSetBinding`, ...). */
export const CLUSTER_GROUP = "cluster.open-cluster-management.io";
/** OCM's work API group (`ManifestWork`, `ManifestWorkReplicaSet`). */
export const WORK_GROUP = "work.open-cluster-management.io";
/** OCM's policy API group (`Policy`, `PlacementBinding`). */
export const POLICY_GROUP = "policy.open-cluster-management.io";

/** The collection path of ManagedClusters (cluster-scoped). */
export const MC = `/apis/${CLUSTER_GROUP}/v1/managedclusters`;
/** The collection path of ManifestWorks in namespace `ns` (a cluster's namespace). */
export const WORKS = (ns: string): string => `/apis/${WORK_GROUP}/v1/namespaces/${ns}/manifestworks`;
/** The collection path of ManifestWorkReplicaSets in namespace `ns`. */
export const MWRS = (ns: string): string => `/apis/${WORK_GROUP}/v1alpha1/namespaces/${ns}/manifestworkreplicasets`;
/** The collection path of Placements in namespace `ns`. */
export const PLACEMENTS = (ns: string): string => `/apis/${CLUSTER_GROUP}/v1beta1/namespaces/${ns}/placements`;
/** The collection path of PlacementDecisions in namespace `ns`. */
export const DECISIONS = (ns: string): string => `/apis/${CLUSTER_GROUP}/v1beta1/namespaces/${ns}/placementdecisions`;
/** The collection path of ManagedClusterSetBindings in namespace `ns`. */
export const BINDINGS = (ns: string): string => `/apis/${CLUSTER_GROUP}/v1beta2/namespaces/${ns}/managedclustersetbindings`;
/** The collection path of Policies in namespace `ns`. */
export const POLICIES = (ns: string): string => `/apis/${POLICY_GROUP}/v1/namespaces/${ns}/policies`;
/** The collection path of Secrets in namespace `ns`. */
export const SECRETS = (ns: string): string => `/api/v1/namespaces/${ns}/secrets`;

/** The content type of a JSON merge patch (RFC 7386). */
export const MERGE_PATCH = "application/merge-patch+json";
