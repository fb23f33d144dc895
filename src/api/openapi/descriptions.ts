/**
 * The words of the OpenAPI documents. The zod schemas carry the structure; the words live here,
 * keyed by kind and field path (array items add no segment). A `.describe()` on a zod schema wins
 * over these.
 */

/** The description of every schema's `apiVersion` (as kube-openapi's). */
export const API_VERSION_DOC =
  "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.";
/** The description of every schema's `kind` (as kube-openapi's). */
export const KIND_DOC =
  "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase.";
/** The description of an object's `metadata`. */
export const METADATA_DOC = "Standard object's metadata.";
/** The description of a list's `metadata`. */
export const LIST_METADATA_DOC = "Standard list metadata.";
/** The description of a resource quantity (a `string | number` field). */
export const QUANTITY_DOC = "A resource quantity: a number or a string with an optional suffix, e.g. `4`, `500m`, `16Gi`.";

/** The description of each kind's schema, by kind; a kind not here gets `<Kind> (<group>/<version>).` */
export const KIND_DOCS: Record<string, string> = {
  ManagedCluster:
    "ManagedCluster represents a member cluster of the fleet: its desired registration state (spec) and what its agent reports about it (status). One exists per registered cluster; the name is the cluster name and must be a DNS-1123 label.",
  ManagedClusterSet:
    "ManagedClusterSet defines a group of ManagedClusters that can be bound to namespaces with ManagedClusterSetBindings, making them visible to the Placements of those namespaces. The sets `default` and `global` always exist.",
  ManagedClusterSetBinding:
    "ManagedClusterSetBinding binds a ManagedClusterSet to a namespace, so that Placements in the namespace can select its clusters. The binding must have the same name as the set.",
  Placement:
    "Placement selects a set of ManagedClusters from the ManagedClusterSets bound to its namespace. The scheduler writes its decisions to PlacementDecisions labelled `cluster.open-cluster-management.io/placement=<name>`.",
  PlacementDecision: "PlacementDecision lists clusters selected by a Placement (at most 100 per object). Written by the hub's scheduler only.",
  AddOnPlacementScore:
    "AddOnPlacementScore carries scores for one cluster (it lives in the cluster's namespace), which Placements can use through `AddOn` prioritizers.",
  ClusterProfile:
    "ClusterProfile (SIG Multicluster's cluster inventory API) represents one ManagedCluster to consumers in a namespace whose bound ManagedClusterSets hold it. Written by the hub only, as OCM's controller writes them: labels `x-k8s.io/cluster-manager`, `multicluster.x-k8s.io/clusterset`; conditions `ControlPlaneHealthy` and `Joined`; properties from the cluster's claims.",
  BootstrapToken:
    "BootstrapToken is a secret an agent presents once to register its cluster. The token (`<name>.<secret>`, kubeadm's format) is returned only in the create response (`status.token`); deleting the object revokes it.",
};

const CONDITION_DOCS: Record<string, string> = {
  "conditions.type": "Type of condition in CamelCase or in foo.example.com/CamelCase.",
  "conditions.status": "Status of the condition, one of True, False, Unknown.",
  "conditions.observedGeneration": "The .metadata.generation that the condition was set based upon.",
  "conditions.lastTransitionTime": "The last time the condition transitioned from one status to another (RFC 3339).",
  "conditions.reason": "A programmatic identifier (CamelCase) indicating the reason for the condition's last transition.",
  "conditions.message": "A human readable message indicating details about the transition.",
  "labelSelector.matchLabels":
    "A map of {key,value} pairs; each is equivalent to a matchExpressions element with operator In and the single value. The requirements are ANDed.",
  "labelSelector.matchExpressions": "A list of label selector requirements. The requirements are ANDed.",
  "claimSelector.matchExpressions": "A list of cluster claim selector requirements. The requirements are ANDed.",
  "matchExpressions.key": "The label (or claim) key that the selector applies to.",
  "matchExpressions.operator": "Represents a key's relationship to a set of values.",
  "matchExpressions.values": "An array of string values. With In or NotIn it must be non-empty; with Exists or DoesNotExist it must be empty.",
};

const FIELD_DOCS: Record<string, string> = {
  "*.status": "Status is the most recently observed state, written by the hub.",
  "*.status.conditions": "Conditions describing the current state.",
  "ManagedCluster.spec": "Spec represents the desired registration state of the cluster.",
  "ManagedCluster.spec.managedClusterClientConfigs":
    "The URLs (and CA bundles) at which the member cluster's kube-apiserver can be reached. Each url must be https.",
  "ManagedCluster.spec.managedClusterClientConfigs.url": "URL of the member cluster's kube-apiserver (https).",
  "ManagedCluster.spec.managedClusterClientConfigs.caBundle": "PEM-encoded CA bundle (base64) to verify the kube-apiserver's serving certificate.",
  "ManagedCluster.spec.hubAcceptsClient":
    "Whether the hub admin accepts the cluster (double opt-in). Its agent may only use the hub once this is true. Defaults to false; set to false after acceptance to deny the cluster.",
  "ManagedCluster.spec.leaseDurationSeconds":
    "How often, in seconds, the agent renews the cluster's lease (default 60). A cluster whose lease is not renewed for 5 times this long becomes Available=Unknown.",
  "ManagedCluster.spec.taints":
    "Taints repel Placements that do not tolerate them. The hub adds the taints `cluster.open-cluster-management.io/unavailable` and `cluster.open-cluster-management.io/unreachable` itself.",
  "ManagedCluster.spec.taints.key": "The taint key: a qualified name, optionally prefixed by a DNS subdomain (at most 316 characters).",
  "ManagedCluster.spec.taints.value": "The taint value (at most 1024 characters).",
  "ManagedCluster.spec.taints.effect":
    "What happens to Placements that do not tolerate the taint. NoSelect: they do not select the cluster and drop it if selected. PreferNoSelect: they avoid the cluster when possible. NoSelectIfNew: they do not newly select the cluster but keep it if already selected.",
  "ManagedCluster.spec.taints.timeAdded": "When the taint was added (RFC 3339). Set by the hub; a client may not set it.",
  "ManagedCluster.status": "Status of the cluster as its agent and the hub report it.",
  "ManagedCluster.status.conditions":
    "Conditions: HubAcceptedManagedCluster, ManagedClusterJoined, ManagedClusterConditionAvailable (Unknown when the lease expired).",
  "ManagedCluster.status.capacity": "The total resources of the cluster's nodes, e.g. cpu and memory (quantities).",
  "ManagedCluster.status.allocatable": "The resources of the cluster's schedulable nodes available for workloads (quantities).",
  "ManagedCluster.status.version": "The versions of the member cluster.",
  "ManagedCluster.status.version.kubernetes": "The Kubernetes version of the member cluster's kube-apiserver.",
  "ManagedCluster.status.clusterClaims": "Claims the agent reports about the cluster (ClusterProperty / ClusterClaim values).",
  "ManagedCluster.status.clusterClaims.name": "The claim name (1-253 characters).",
  "ManagedCluster.status.clusterClaims.value": "The claim value (1-1024 characters).",
  "ManagedCluster.status.managedNamespaces": "Namespaces managed on the cluster for the ManagedClusterSets it belongs to.",
  "ManagedClusterSet.spec": "Spec defines which clusters belong to the set.",
  "ManagedClusterSet.spec.clusterSelector": "Selects the clusters of the set.",
  "ManagedClusterSet.spec.clusterSelector.selectorType":
    "ExclusiveClusterSetLabel (default): the set holds the clusters whose `cluster.open-cluster-management.io/clusterset` label equals the set's name. LabelSelector: the set holds the clusters matching labelSelector.",
  "ManagedClusterSet.spec.clusterSelector.labelSelector": "The label selector used with selectorType LabelSelector; `{}` selects every cluster.",
  "ManagedClusterSet.spec.managedNamespaces":
    "Namespaces to be managed on every cluster of the set. Not implemented by Flotilla: only an empty list is accepted (422 otherwise).",
  "ManagedClusterSet.spec.managedNamespaces.name": "Name of the namespace.",
  "ManagedClusterSetBinding.spec": "Spec names the bound set.",
  "ManagedClusterSetBinding.spec.clusterSet": "The name of the ManagedClusterSet to bind. Must equal the binding's metadata.name.",
  "Placement.spec": "Spec defines how clusters are selected. All its parts are ANDed.",
  "Placement.spec.clusterSets": "The ManagedClusterSets to select from; intersected with the sets bound to the namespace. Empty means all bound sets.",
  "Placement.spec.numberOfClusters": "The desired number of clusters. Unset means all the clusters that satisfy the predicates.",
  "Placement.spec.predicates": "Predicates select clusters; the predicates are ORed.",
  "Placement.spec.predicates.requiredClusterSelector": "A cluster selector; its label, claim and CEL parts are ANDed.",
  "Placement.spec.predicates.requiredClusterSelector.labelSelector": "Selects clusters by label.",
  "Placement.spec.predicates.requiredClusterSelector.claimSelector": "Selects clusters by cluster claim.",
  "Placement.spec.predicates.requiredClusterSelector.celSelector":
    "Selects clusters by CEL expressions over `managedCluster` (OCM's cluster library: labels, claims, `scores(name)`, semver and quantity helpers); an expression that does not compile makes the placement Misconfigured.",
  "Placement.spec.predicates.requiredClusterSelector.celSelector.celExpressions": "CEL expressions over `managedCluster`; ANDed.",
  "Placement.spec.prioritizerPolicy": "Policy of the prioritizers that score the feasible clusters.",
  "Placement.spec.prioritizerPolicy.mode":
    "Additive (default): the configurations are added to the default prioritizers (Balance and Steady, weight 1). Exact: only the configured prioritizers are used.",
  "Placement.spec.prioritizerPolicy.configurations": "The prioritizers to use, each with its weight.",
  "Placement.spec.prioritizerPolicy.configurations.scoreCoordinate": "Which score to use: a built-in prioritizer or an add-on score.",
  "Placement.spec.prioritizerPolicy.configurations.scoreCoordinate.type": "BuiltIn (default) or AddOn.",
  "Placement.spec.prioritizerPolicy.configurations.scoreCoordinate.builtIn":
    "The built-in prioritizer: Balance, Steady, ResourceAllocatableCPU or ResourceAllocatableMemory.",
  "Placement.spec.prioritizerPolicy.configurations.scoreCoordinate.addOn": "An add-on score, read from the clusters' AddOnPlacementScores.",
  "Placement.spec.prioritizerPolicy.configurations.scoreCoordinate.addOn.resourceName": "The name of the AddOnPlacementScore objects.",
  "Placement.spec.prioritizerPolicy.configurations.scoreCoordinate.addOn.scoreName": "The name of the score within status.scores.",
  "Placement.spec.prioritizerPolicy.configurations.weight": "The weight of the prioritizer, from -10 to 10 (default 1); 0 disables it.",
  "ClusterProfile.spec": "Who manages the cluster and how it is shown.",
  "ClusterProfile.spec.displayName": "A human-readable name: the ManagedCluster's name.",
  "ClusterProfile.spec.clusterManager": "The cluster manager that owns this profile (immutable).",
  "ClusterProfile.spec.clusterManager.name": "The cluster manager's name, `open-cluster-management`, as the `x-k8s.io/cluster-manager` label.",
  "ClusterProfile.status.version": "The cluster's version.",
  "ClusterProfile.status.version.kubernetes": "The Kubernetes version the cluster's agent reports.",
  "ClusterProfile.status.properties": "The cluster's claims as name/value properties; the `id.k8s.io` claim also as `cluster.clusterset.k8s.io`.",
  "ClusterProfile.status.properties.name": "A property name (ClusterProperty name or claim name).",
  "ClusterProfile.status.properties.value": "The property's value.",
  "ClusterProfile.status.properties.lastObservedTime": "When the property was last observed on the cluster.",
  "ClusterProfile.status.accessProviders": "How to reach the cluster (not written by Flotilla yet).",
  "ClusterProfile.status.credentialProviders": "Deprecated: accessProviders.",
  "Placement.spec.spreadPolicy": "How to spread the selected clusters over topologies (OCM spread-policy design: terms in order of importance).",
  "Placement.spec.spreadPolicy.spreadConstraints": "Spread constraints (at most 8).",
  "Placement.spec.spreadPolicy.spreadConstraints.topologyKey": "The label or claim key whose values are the topologies.",
  "Placement.spec.spreadPolicy.spreadConstraints.topologyKeyType": "Whether topologyKey is a Label or a Claim.",
  "Placement.spec.spreadPolicy.spreadConstraints.maxSkew": "The maximum difference in selected clusters between topologies (default 1).",
  "Placement.spec.spreadPolicy.spreadConstraints.whenUnsatisfiable": "ScheduleAnyway (default) or DoNotSchedule.",
  "Placement.spec.tolerations": "Tolerations let the placement select clusters with matching taints.",
  "Placement.spec.tolerations.key": "The taint key the toleration applies to. Empty with operator Exists matches all taints.",
  "Placement.spec.tolerations.operator": "Equal (default): the taint's value must equal value. Exists: any value.",
  "Placement.spec.tolerations.value": "The taint value the toleration matches (operator Equal).",
  "Placement.spec.tolerations.effect": "The taint effect to match. Empty matches all effects.",
  "Placement.spec.tolerations.tolerationSeconds": "How long, counted from the taint's timeAdded, the taint is tolerated. Unset means forever.",
  "Placement.spec.decisionStrategy": "How the decisions are divided into groups.",
  "Placement.spec.decisionStrategy.groupStrategy": "The decision groups.",
  "Placement.spec.decisionStrategy.groupStrategy.decisionGroups": "Named groups of the selected clusters, chosen by selector, listed first.",
  "Placement.spec.decisionStrategy.groupStrategy.decisionGroups.groupName": "The group's name.",
  "Placement.spec.decisionStrategy.groupStrategy.decisionGroups.groupClusterSelector": "Selects the group's clusters among the selected ones.",
  "Placement.spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup":
    "The size of each decision group: a number, or a percentage of the selected clusters (1%-100%, default 100%).",
  "Placement.spec.sortBy": "The order of the decisions: ClusterName (default, the only one Flotilla implements; Score is refused with 422).",
  "Placement.spec.scoreRateLimit":
    "How often score changes alone may update decisions. Flotilla records no scores in decisions: only the default, 1m, is accepted (422 otherwise).",
  "Placement.status": "Status of the placement, written by the scheduler.",
  "Placement.status.numberOfSelectedClusters": "The number of selected clusters.",
  "Placement.status.decisionGroups": "The decision groups and their PlacementDecisions.",
  "Placement.status.decisionGroups.decisionGroupIndex": "The index of the group.",
  "Placement.status.decisionGroups.decisionGroupName": "The name of the group (empty for groups made by clustersPerDecisionGroup).",
  "Placement.status.decisionGroups.decisions": "The names of the group's PlacementDecisions.",
  "Placement.status.decisionGroups.clusterCount": "The number of clusters in the group.",
  "Placement.status.conditions": "Conditions: PlacementSatisfied, PlacementMisconfigured.",
  "PlacementDecision.spec": "Empty.",
  "PlacementDecision.status": "The decisions.",
  "PlacementDecision.status.decisions": "The selected clusters.",
  "PlacementDecision.status.decisions.clusterName": "The name of a selected ManagedCluster.",
  "PlacementDecision.status.decisions.reason": "Why the cluster was selected.",
  "AddOnPlacementScore.status": "The scores.",
  "AddOnPlacementScore.status.scores": "Scores, by name.",
  "AddOnPlacementScore.status.scores.name": "The score's name.",
  "AddOnPlacementScore.status.scores.value": "The score, from -100 to 100.",
  "AddOnPlacementScore.status.validUntil": "The time (RFC 3339) after which the scores are no longer valid; unset means they never expire.",
  "BootstrapToken.spec": "Spec of the token (immutable).",
  "BootstrapToken.spec.ttlSeconds": "Lifetime of the token in seconds (default 86400, at most one year); 0 means it never expires.",
  "BootstrapToken.spec.autoApprove": "Whether a cluster registering with this token is accepted at once (hubAcceptsClient true).",
  "BootstrapToken.spec.description": "A free-form description (at most 1024 characters).",
  "BootstrapToken.spec.token":
    "Write-only, on create only: the token itself (<id>.<secret>, [a-z0-9]{6}.[a-z0-9]{16}) instead of a generated one, e.g. to re-create the token agents were installed with on a hub whose state was lost. Its ID becomes the object's name. The hub keeps only a hash: it is never stored or served.",
  "BootstrapToken.status": "Server-set: `token` (only in the create response) and `expirationTimestamp`.",
  "WebhookReceiver.spec": "What a signed delivery to the receiver's webhookPath does (after Flux's Receiver).",
  "WebhookReceiver.spec.type":
    "generic: the signature is X-Signature-256 (sha256=<hex HMAC-SHA256 of the body>) and the delivery ID X-Delivery-Id; github: X-Hub-Signature-256 and X-GitHub-Delivery, and a ping event is answered 200 without acting.",
  "WebhookReceiver.spec.secretRef": "The Secret, in the receiver's namespace, whose data.token is the HMAC key deliveries are signed with.",
  "WebhookReceiver.spec.secretRef.name": "The Secret's name.",
  "WebhookReceiver.spec.target":
    "The object a delivery acts on, in the receiver's namespace: a ManifestWorkReplicaSet (work.open-cluster-management.io/v1alpha1) or a Placement (cluster.open-cluster-management.io/v1beta1).",
  "WebhookReceiver.spec.target.apiVersion": "work.open-cluster-management.io/v1alpha1 or cluster.open-cluster-management.io/v1beta1.",
  "WebhookReceiver.spec.target.kind": "ManifestWorkReplicaSet or Placement.",
  "WebhookReceiver.spec.target.name": "The target's name.",
  "WebhookReceiver.spec.action": "What a delivery does to the target.",
  "WebhookReceiver.spec.action.type":
    "Reevaluate: schedule the target again (no patch); MergePatch: apply patch as an RFC 7386 merge patch; JSONPatch: apply patch as an RFC 6902 JSON patch.",
  "WebhookReceiver.spec.action.patch":
    "The patch (MergePatch: a JSON object; JSONPatch: an array of operations). Its string values (in a JSON patch, only operations' value) may hold templates {{ .a.b }} filled from the delivery's JSON payload.",
  "WebhookReceiver.status": "Set by the hub.",
  "WebhookReceiver.status.webhookPath": "The receiver's unguessable path, /hooks/<sha256>, chosen on create and kept across updates: POST deliveries there.",
  "WebhookReceiver.status.observedGeneration": "The generation the status was computed for.",
  "WebhookReceiver.status.conditions": "Conditions: Ready (the Secret and the target exist and the spec is valid).",
};

/** The description of field `path` of kind `kind`: the kind's own, else one for that path in any kind, else a condition field's. */
export function fieldDoc(kind: string, path: string[]): string | undefined {
  const p = path.join(".");
  const tail = path.slice(-2).join(".");
  return FIELD_DOCS[`${kind}.${p}`] ?? FIELD_DOCS[`*.${p}`] ?? CONDITION_DOCS[tail];
}

/** The descriptions of ObjectMeta's fields, by field name. */
export const OBJECT_META_DOCS: Record<string, string> = {
  name: "Name must be unique within a namespace (or cluster-wide for cluster-scoped kinds). Required when creating, unless generateName is used. Cannot be updated.",
  generateName: "An optional prefix used by the server to generate a unique name when name is not provided.",
  namespace: "The namespace of a namespaced object. Must be a DNS-1123 label.",
  uid: "The unique in time and space value for this object, set by the server on create. Read-only.",
  resourceVersion:
    "An opaque value representing the internal version of this object, used for optimistic concurrency: an update carrying a stale resourceVersion is refused with 409 Conflict. Read-only.",
  generation: "A sequence number representing a specific generation of the desired state (spec). Read-only.",
  creationTimestamp: "The time (RFC 3339) when this object was created. Read-only.",
  deletionTimestamp: "The time (RFC 3339) after which this object is deleted, set when deletion was requested and finalizers remain. Read-only.",
  deletionGracePeriodSeconds: "Seconds allowed for this object to terminate gracefully. Read-only.",
  labels: "Map of string keys and values used to organize and select objects (label selectors).",
  annotations: "Unstructured key-value map to store arbitrary metadata. Not queryable.",
  finalizers: "Must be empty before the object is deleted from the store; each entry names a controller that cleans up first.",
  ownerReferences: "Objects this object depends on; used by garbage collection.",
  managedFields: "Field ownership recorded for server-side apply. Accepted and ignored when sent.",
  selfLink: "Deprecated; not set.",
};
