/**
 * The hub's resources the CLI uses: their API paths, the labels that link them and the few
 * object fields it reads (typed loosely: everything the hub may omit is optional).
 */

/** A Kubernetes condition (`metav1.Condition`); `lastTransitionTime` is RFC 3339. */
export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

/** The metadata fields the CLI reads or writes. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  resourceVersion?: string;
  creationTimestamp?: string;
  generation?: number;
}

/** Any object served by the hub. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown> & { conditions?: Condition[] };
}

/** A list answer (`<Kind>List`). */
export interface KubeList<T extends KubeObject = KubeObject> {
  apiVersion?: string;
  kind?: string;
  metadata?: { resourceVersion?: string };
  items: T[];
}

/** A ManagedCluster taint; `timeAdded` is set by the hub only. */
export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string | null;
}

const CLUSTER_GROUP = "/apis/cluster.open-cluster-management.io";
const FLEET_GROUP = "/apis/placement.kubernetes-fleet.io";

/** Label naming a cluster's exclusive ManagedClusterSet. */
export const CLUSTERSET_LABEL = "cluster.open-cluster-management.io/clusterset";
/** Label linking a PlacementDecision to its Placement. */
export const PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement";
/** Label holding a PlacementDecision's decision group name. */
export const DECISION_GROUP_NAME_LABEL = "cluster.open-cluster-management.io/decision-group-name";
/** Label holding a PlacementDecision's decision group index. */
export const DECISION_GROUP_INDEX_LABEL = "cluster.open-cluster-management.io/decision-group-index";

/** Label of a replicated Policy (in a cluster's namespace) naming its root policy `<namespace>.<name>` (OCM's policy propagator). */
export const ROOT_POLICY_LABEL = "policy.open-cluster-management.io/root-policy";

/** ManagedCluster condition types (OCM). */
export const ClusterConditions = {
  HubAccepted: "HubAcceptedManagedCluster",
  Joined: "ManagedClusterJoined",
  Available: "ManagedClusterConditionAvailable",
} as const;

function encode(name: string): string {
  return encodeURIComponent(name);
}

function namespaced(groupVersion: string, plural: string, namespace: string | undefined, name?: string): string {
  const ns = namespace ? `/namespaces/${encode(namespace)}` : "";
  return `${groupVersion}${ns}/${plural}${name !== undefined ? `/${encode(name)}` : ""}`;
}

/** API paths, by kind. A namespaced kind's collection without a namespace lists all namespaces. */
export const Paths = {
  /** ManagedClusters (cluster-scoped); with `name`, one cluster. */
  managedClusters: (name?: string) => `${CLUSTER_GROUP}/v1/managedclusters${name !== undefined ? `/${encode(name)}` : ""}`,
  /** ManagedClusterSets (cluster-scoped). */
  managedClusterSets: (name?: string) => `${CLUSTER_GROUP}/v1beta2/managedclustersets${name !== undefined ? `/${encode(name)}` : ""}`,
  /** ManagedClusterSetBindings in `namespace`. */
  managedClusterSetBindings: (namespace: string | undefined, name?: string) =>
    namespaced(`${CLUSTER_GROUP}/v1beta2`, "managedclustersetbindings", namespace, name),
  /** Placements in `namespace` (all namespaces when undefined). */
  placements: (namespace: string | undefined, name?: string) => namespaced(`${CLUSTER_GROUP}/v1beta1`, "placements", namespace, name),
  /** PlacementDecisions in `namespace` (all namespaces when undefined). */
  placementDecisions: (namespace: string | undefined, name?: string) => namespaced(`${CLUSTER_GROUP}/v1beta1`, "placementdecisions", namespace, name),
  /** ManifestWorks in a cluster's namespace (all namespaces when undefined). */
  manifestWorks: (namespace: string | undefined, name?: string) => namespaced("/apis/work.open-cluster-management.io/v1", "manifestworks", namespace, name),
  /** ManagedClusterAddOns in a cluster's namespace (all namespaces when undefined), OCM's preferred version `v1beta1`. */
  managedClusterAddOns: (namespace: string | undefined, name?: string) =>
    namespaced("/apis/addon.open-cluster-management.io/v1beta1", "managedclusteraddons", namespace, name),
  /** OCM's ClusterManagementAddOns (cluster-scoped, `addon.open-cluster-management.io/v1alpha1`). */
  clusterManagementAddOns: (name?: string) =>
    `/apis/addon.open-cluster-management.io/v1alpha1/clustermanagementaddons${name !== undefined ? `/${encode(name)}` : ""}`,
  /** Policies in `namespace` (all namespaces when undefined). */
  policies: (namespace: string | undefined, name?: string) => namespaced("/apis/policy.open-cluster-management.io/v1", "policies", namespace, name),
  /** OCM's ManifestWorkReplicaSets in `namespace` (all namespaces when undefined), `work.open-cluster-management.io/v1alpha1`. */
  manifestWorkReplicaSets: (namespace: string | undefined, name?: string) =>
    namespaced("/apis/work.open-cluster-management.io/v1alpha1", "manifestworkreplicasets", namespace, name),
  /** KubeFleet's ClusterResourcePlacements (cluster-scoped, `placement.kubernetes-fleet.io/v1`). */
  clusterResourcePlacements: (name?: string) => `${FLEET_GROUP}/v1/clusterresourceplacements${name !== undefined ? `/${encode(name)}` : ""}`,
  /** KubeFleet's ResourcePlacements in `namespace` (all namespaces when undefined). */
  resourcePlacements: (namespace: string | undefined, name?: string) => namespaced(`${FLEET_GROUP}/v1`, "resourceplacements", namespace, name),
  /** KubeFleet's ClusterStagedUpdateRuns (namespace undefined) or StagedUpdateRuns in `namespace`. */
  updateRuns: (namespace: string | undefined, name?: string) =>
    namespace === undefined
      ? `${FLEET_GROUP}/v1/clusterstagedupdateruns${name !== undefined ? `/${encode(name)}` : ""}`
      : namespaced(`${FLEET_GROUP}/v1`, "stagedupdateruns", namespace, name),
  /** KubeFleet's ClusterApprovalRequests (namespace undefined) or ApprovalRequests in `namespace`. */
  approvalRequests: (namespace: string | undefined, name?: string) =>
    namespace === undefined
      ? `${FLEET_GROUP}/v1/clusterapprovalrequests${name !== undefined ? `/${encode(name)}` : ""}`
      : namespaced(`${FLEET_GROUP}/v1`, "approvalrequests", namespace, name),
  /** KubeFleet's ClusterResourceBindings (cluster-scoped, `placement.kubernetes-fleet.io/v1beta1`). */
  clusterResourceBindings: () => `${FLEET_GROUP}/v1beta1/clusterresourcebindings`,
  /** KubeFleet's ClusterResourcePlacementEvictions (cluster-scoped, `placement.kubernetes-fleet.io/v1beta1`). */
  evictions: (name?: string) => `${FLEET_GROUP}/v1beta1/clusterresourceplacementevictions${name !== undefined ? `/${encode(name)}` : ""}`,
  /** BootstrapTokens (cluster-scoped). */
  bootstrapTokens: () => "/apis/flotilla.dev/v1alpha1/bootstraptokens",
  /** AuditEvents (cluster-scoped; list and watch only). */
  auditEvents: () => "/apis/flotilla.dev/v1alpha1/auditevents",
};

/** The condition of `type` in an object's status, if any. */
export function conditionOf(obj: KubeObject | undefined, type: string): Condition | undefined {
  return obj?.status?.conditions?.find((c) => c.type === type);
}
