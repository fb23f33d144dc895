/**
 * The hub's OpenAPI documents, generated from the same zod schemas that validate requests
 * (`KindDefinition.schema`), in the layout the kube-apiserver serves them so that kubectl can use
 * them unchanged:
 *
 * - `GET /openapi/v3`: the OpenAPI v3 discovery document
 *   `{"paths": {"apis/<group>/<version>": {"serverRelativeURL": "/openapi/v3/apis/<group>/<version>?hash=<HASH>"}}}`
 *   (kube-openapi `handler3`); one entry per served group-version. The core group (Secrets) is
 *   `api/v1`, at `/openapi/v3/api/v1`, as the apiserver serves it.
 * - `GET /openapi/v3/apis/<group>/<version>`: an OpenAPI 3.0 document for one group-version:
 *   `components.schemas` keyed by Kubernetes-style names (`io.open-cluster-management.cluster.v1.ManagedCluster`,
 *   `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`, ...), each kind and list kind carrying
 *   `x-kubernetes-group-version-kind`, and `paths` for the resource endpoints whose operations
 *   carry `x-kubernetes-action` and `x-kubernetes-group-version-kind` as the apiserver's do.
 *   With `?hash=` equal to the current hash the response is `Cache-Control: public, immutable`;
 *   a stale hash is redirected (301) to the current URL, as kube-openapi does.
 * - `GET /openapi/v2`: the same schemas and paths as one Swagger 2.0 document (`definitions`).
 *   Served as JSON only; a client that accepts only the protobuf encoding gets 406.
 *
 * What kubectl (1.27+) does with them: `kubectl explain` reads the v3 document of the resource's
 * group-version and finds the kind's schema by its `x-kubernetes-group-version-kind`;
 * `kubectl apply/create/replace` (client-side and `--server-side`) look in the v3 document for a
 * `fieldValidation` query parameter on the kind's PATCH operation and, finding it, send
 * `fieldValidation=Strict` and leave validation to the server, which validates with these very zod
 * schemas. The PATCH operations list only the patch types the hub accepts (JSON merge patch and
 * apply), so client-side `kubectl apply` computes a JSON merge patch, as for custom resources.
 * The core Namespace's PATCH does not list `fieldValidation` (the hub honours it all the same):
 * kubectl's QueryParamVerifier, for a kind it finds no PATCH operation of (a read-only kind, a
 * kind the hub does not serve), asks whether the Namespace's lists it and, if so, lists
 * `customresourcedefinitions.apiextensions.k8s.io`, which the hub does not serve, and fails the
 * command; without it, kubectl validates such a kind itself, as before namespaces were served.
 *
 * These endpoints, like `/docs`, are served WITHOUT authentication: they describe the API and hold
 * no data. (The kube-apiserver serves them to any authenticated user; the hub has no
 * authenticated-but-unprivileged users, so the choice is between admin-only and public.)
 */
import { Hono, type Context } from "hono";
import { z } from "zod";
import { mediaRanges } from "./negotiate.ts";
import { encodeOpenAPIV2 } from "./openapi-proto.ts";
import { ApiError } from "../k8s/errors.ts";
import type { CreateSubresource, KindDefinition } from "../k8s/kind.ts";
import { ObjectMetaSchema, OwnerReferenceSchema } from "../k8s/meta.ts";
import { KINDS, servedGroups } from "../kinds/index.ts";
import { apiAccess } from "../auth/request.ts";
import { ensureBuiltins } from "./builtins.ts";
import type { ApiEnv } from "./context.ts";
import { auditOpenAPI } from "../audit/openapi.ts";
import { AUDIT_GROUP, AUDIT_VERSION } from "../audit/routes.ts";

/** A JSON Schema / OpenAPI node, as plain JSON. */
export type JsonSchema = { [key: string]: unknown };

/** The `x-kubernetes-group-version-kind` entry of a schema or an operation. */
export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

const META = "io.k8s.apimachinery.pkg.apis.meta.v1";
/** Names of the shared apimachinery schemas every group-version document carries. */
export const META_SCHEMAS = {
  ObjectMeta: `${META}.ObjectMeta`,
  ListMeta: `${META}.ListMeta`,
  OwnerReference: `${META}.OwnerReference`,
  ManagedFieldsEntry: `${META}.ManagedFieldsEntry`,
  Status: `${META}.Status`,
  StatusDetails: `${META}.StatusDetails`,
  StatusCause: `${META}.StatusCause`,
  DeleteOptions: `${META}.DeleteOptions`,
  Preconditions: `${META}.Preconditions`,
  Patch: `${META}.Patch`,
} as const;

// ---------------------------------------------------------------------------------------------
// Descriptions. The zod schemas carry the structure; the words live here, keyed by kind and field
// path (array items add no segment), so that they stay beside the document that publishes them.
// A `.describe()` on a zod schema wins over these.
// ---------------------------------------------------------------------------------------------

const API_VERSION_DOC =
  "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.";
const KIND_DOC =
  "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase.";
const METADATA_DOC = "Standard object's metadata.";
const LIST_METADATA_DOC = "Standard list metadata.";
const QUANTITY_DOC = "A resource quantity: a number or a string with an optional suffix, e.g. `4`, `500m`, `16Gi`.";

const KIND_DOCS: Record<string, string> = {
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

function fieldDoc(kind: string, path: string[]): string | undefined {
  const p = path.join(".");
  const tail = path.slice(-2).join(".");
  return FIELD_DOCS[`${kind}.${p}`] ?? FIELD_DOCS[`*.${p}`] ?? CONDITION_DOCS[tail];
}

// ---------------------------------------------------------------------------------------------
// zod -> OpenAPI 3.0 schemas, with Kubernetes' conventions.
// ---------------------------------------------------------------------------------------------

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

function isObj(v: unknown): v is JsonSchema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `#/components/schemas/<name>` wrapped as Kubernetes does when a description goes with it. */
function refTo(name: string, description?: string): JsonSchema {
  const ref = { $ref: `#/components/schemas/${name}` };
  return description ? { allOf: [ref], description } : ref;
}

/**
 * Cleans what zod emits into Kubernetes' style: integer bounds at ±2^53 dropped in favour of
 * `format: int32|int64`; `string | integer` unions marked `x-kubernetes-int-or-string`;
 * descriptions filled from the tables above. `path` is the field path (array items add nothing).
 */
function tidy(node: JsonSchema, kind: string, path: string[]): void {
  if (node.type === "integer") {
    if (node.minimum === -MAX_SAFE) delete node.minimum;
    if (node.maximum === MAX_SAFE) delete node.maximum;
    const min = typeof node.minimum === "number" ? node.minimum : -Infinity;
    const max = typeof node.maximum === "number" ? node.maximum : Infinity;
    node.format ??= min >= INT32_MIN && max <= INT32_MAX ? "int32" : "int64";
  }
  if (Array.isArray(node.anyOf)) {
    const types = new Set(node.anyOf.map((s) => (isObj(s) ? s.type : undefined)));
    for (const s of node.anyOf) if (isObj(s)) tidy(s, kind, path);
    if (types.size === 2 && types.has("string") && types.has("integer")) node["x-kubernetes-int-or-string"] = true;
    if (types.size === 2 && types.has("string") && types.has("number")) node.description ??= QUANTITY_DOC;
  }
  if (isObj(node.properties)) {
    for (const [name, child] of Object.entries(node.properties)) {
      if (!isObj(child)) continue;
      const childPath = [...path, name];
      // A field of any JSON value (zod's unknown: `{}`) is marked as kube marks free-form fields,
      // so clients know it holds what it holds (kubectl explain fails on an empty schema).
      if (Object.keys(child).length === 0 || (Object.keys(child).length === 1 && "description" in child)) child["x-kubernetes-preserve-unknown-fields"] = true;
      const doc = fieldDoc(kind, childPath);
      if (doc && child.description === undefined) child.description = doc;
      tidy(child, kind, childPath);
    }
  }
  if (isObj(node.items)) tidy(node.items, kind, path);
  if (isObj(node.additionalProperties)) tidy(node.additionalProperties, kind, path);
}

function toJsonSchema(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { target: "openapi-3.0", io: "input", unrepresentable: "any", reused: "inline" }) as JsonSchema;
}

/** The schema name of a kind, Kubernetes-style: reversed group, version, kind (`io.open-cluster-management.cluster.v1.ManagedCluster`). */
export function schemaName(group: string, version: string, kind: string): string {
  const g = group ? group.split(".").reverse().join(".") : "io.k8s.api.core";
  return `${g}.${version}.${kind}`;
}

/**
 * The OpenAPI 3.0 schema of one kind, derived from its zod schema: `metadata` becomes a reference
 * to ObjectMeta, apiVersion/kind carry the standard descriptions, and the schema carries
 * `x-kubernetes-group-version-kind: [{group, version, kind}]`.
 */
export function kindSchema(def: KindDefinition): JsonSchema {
  const s = toJsonSchema(def.schema);
  delete s.$schema;
  tidy(s, def.kind, []);
  const props = isObj(s.properties) ? s.properties : {};
  if ("apiVersion" in props) props.apiVersion = { type: "string", description: API_VERSION_DOC };
  if ("kind" in props) props.kind = { type: "string", description: KIND_DOC };
  if ("metadata" in props) props.metadata = refTo(META_SCHEMAS.ObjectMeta, METADATA_DOC);
  const description = s.description ?? KIND_DOCS[def.kind] ?? `${def.kind} (${def.group}/${def.version}).`;
  return { description, ...s, "x-kubernetes-group-version-kind": [gvk(def)] };
}

/** The schema of a kind a subresource takes and answers (a TokenRequest), as {@link kindSchema} makes a kind's. */
function subresourceSchema(sub: CreateSubresource): JsonSchema {
  const s = toJsonSchema(sub.schema);
  delete s.$schema;
  tidy(s, sub.kind, []);
  const props = isObj(s.properties) ? s.properties : {};
  if ("apiVersion" in props) props.apiVersion = { type: "string", description: API_VERSION_DOC };
  if ("kind" in props) props.kind = { type: "string", description: KIND_DOC };
  if ("metadata" in props) props.metadata = refTo(META_SCHEMAS.ObjectMeta, METADATA_DOC);
  return {
    description: `${sub.kind} (${sub.group}/${sub.version}).`,
    ...s,
    "x-kubernetes-group-version-kind": [{ group: sub.group, version: sub.version, kind: sub.kind }],
  };
}

function gvk(def: KindDefinition, kind = def.kind): GroupVersionKind {
  return { group: def.group, version: def.version, kind };
}

/** The list kind's schema (`<Kind>List`): apiVersion, kind, metadata (ListMeta) and items. */
function listSchema(def: KindDefinition): JsonSchema {
  return {
    description: `${def.listKind} is a list of ${def.kind}.`,
    type: "object",
    required: ["items"],
    properties: {
      apiVersion: { type: "string", description: API_VERSION_DOC },
      items: { type: "array", description: `List of ${def.plural}.`, items: refTo(schemaName(def.group, def.version, def.kind)) },
      kind: { type: "string", description: KIND_DOC },
      metadata: refTo(META_SCHEMAS.ListMeta, LIST_METADATA_DOC),
    },
    "x-kubernetes-group-version-kind": [gvk(def, def.listKind)],
  };
}

const OBJECT_META_DOCS: Record<string, string> = {
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

function metaSchemas(group: string, version: string): Record<string, JsonSchema> {
  const objectMeta = toJsonSchema(ObjectMetaSchema);
  delete objectMeta.$schema;
  tidy(objectMeta, "ObjectMeta", []);
  const props = objectMeta.properties as Record<string, JsonSchema>;
  for (const [k, v] of Object.entries(props)) v.description ??= OBJECT_META_DOCS[k];
  props.ownerReferences = { ...props.ownerReferences, items: refTo(META_SCHEMAS.OwnerReference) };
  props.managedFields = { ...props.managedFields, items: refTo(META_SCHEMAS.ManagedFieldsEntry) };
  const ownerRef = toJsonSchema(OwnerReferenceSchema);
  delete ownerRef.$schema;
  tidy(ownerRef, "OwnerReference", []);
  const gvkAll = (kind: string): GroupVersionKind[] => [
    { group: "", version: "v1", kind },
    { group: "meta.k8s.io", version: "v1", kind },
    ...(group === "" && version === "v1" ? [] : [{ group, version, kind }]),
  ];
  const str = (description: string): JsonSchema => ({ type: "string", description });
  return {
    [META_SCHEMAS.ObjectMeta]: {
      description: "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
      ...objectMeta,
    },
    [META_SCHEMAS.OwnerReference]: {
      description: "OwnerReference contains enough information to let you identify an owning object.",
      ...ownerRef,
    },
    [META_SCHEMAS.ManagedFieldsEntry]: {
      description: "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.",
      type: "object",
      properties: {
        apiVersion: str("The version of the resource this field set applies to."),
        fieldsType: str("The type of the fields field; the only valid value is FieldsV1."),
        fieldsV1: { type: "object", description: "The set of fields, as a trie." },
        manager: str("An identifier of the workflow managing these fields."),
        operation: str("The type of operation which lead to this entry: Apply or Update."),
        subresource: str("The subresource used to update the object, if any."),
        time: { type: "string", format: "date-time", description: "When this entry was last changed." },
      },
    },
    [META_SCHEMAS.ListMeta]: {
      description: "ListMeta describes metadata that synthetic resources must have, including lists.",
      type: "object",
      properties: {
        continue: str("Set when the list is incomplete (not used by Flotilla: lists are complete)."),
        remainingItemCount: { type: "integer", format: "int64", description: "Not set by Flotilla." },
        resourceVersion: str("The resource version of the list, for watches."),
        selfLink: str("Deprecated; not set."),
      },
    },
    [META_SCHEMAS.StatusCause]: {
      description: "StatusCause provides more information about an api.Status failure, including cases when multiple errors are encountered.",
      type: "object",
      properties: {
        field: str("The field of the resource that has caused this error, e.g. `spec.taints[0].effect`."),
        message: str("A human-readable description of the cause of the error."),
        reason: str("A machine-readable description of the cause of the error, e.g. FieldValueInvalid."),
      },
    },
    [META_SCHEMAS.StatusDetails]: {
      description: "StatusDetails is a set of additional properties that MAY be set by the server to provide additional information about a response.",
      type: "object",
      properties: {
        causes: { type: "array", items: refTo(META_SCHEMAS.StatusCause), description: "The causes of a failure, e.g. one per invalid field." },
        group: str("The group attribute of the resource associated with the status."),
        kind: str("The kind (resource) attribute of the resource associated with the status."),
        name: str("The name attribute of the resource associated with the status."),
        retryAfterSeconds: { type: "integer", format: "int32", description: "Seconds to wait before retrying." },
        uid: str("The UID of the resource."),
      },
    },
    [META_SCHEMAS.Status]: {
      description: "Status is the return value for calls that don't return other objects, and the body of every error response.",
      type: "object",
      properties: {
        apiVersion: str(API_VERSION_DOC),
        code: { type: "integer", format: "int32", description: "The HTTP status code." },
        details: refTo(META_SCHEMAS.StatusDetails, "Extended data associated with the reason."),
        kind: str(KIND_DOC),
        message: str("A human-readable description of the status of this operation."),
        metadata: refTo(META_SCHEMAS.ListMeta, LIST_METADATA_DOC),
        reason: str("A machine-readable description of why this operation is in the Failure status, e.g. NotFound, AlreadyExists, Conflict, Invalid."),
        status: str("Status of the operation: Success or Failure."),
      },
      "x-kubernetes-group-version-kind": [{ group: "", version: "v1", kind: "Status" }],
    },
    [META_SCHEMAS.Preconditions]: {
      description: "Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.",
      type: "object",
      properties: { resourceVersion: str("The target resourceVersion."), uid: str("The target UID.") },
    },
    [META_SCHEMAS.DeleteOptions]: {
      description: "DeleteOptions may be provided when deleting an API object.",
      type: "object",
      properties: {
        apiVersion: str(API_VERSION_DOC),
        kind: str(KIND_DOC),
        preconditions: refTo(META_SCHEMAS.Preconditions, "Must be fulfilled before a deletion is carried out (409 Conflict otherwise)."),
        propagationPolicy: str("Whether and how garbage collection is performed: Orphan, Background or Foreground."),
      },
      "x-kubernetes-group-version-kind": gvkAll("DeleteOptions"),
    },
    [META_SCHEMAS.Patch]: {
      description:
        "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body: a JSON merge patch, or a (partial) object to apply.",
      type: "object",
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Paths.
// ---------------------------------------------------------------------------------------------

type Action = "get" | "list" | "post" | "put" | "patch" | "delete";

/** A query or path parameter (OpenAPI 3.0 form). */
function param(name: string, where: "query" | "path", description: string, schema: JsonSchema = { type: "string" }): JsonSchema {
  return { name, in: where, description, ...(where === "path" ? { required: true } : {}), schema };
}

const P = {
  name: (kind: string) => param("name", "path", `name of the ${kind}`),
  namespace: param("namespace", "path", "object name and auth scope, such as for teams and projects"),
  labelSelector: param(
    "labelSelector",
    "query",
    "A selector to restrict the list of returned objects by their labels (`=`, `==`, `!=`, `in`, `notin`, `exists`, `!`). Defaults to everything.",
  ),
  fieldSelector: param(
    "fieldSelector",
    "query",
    "A selector to restrict the list of returned objects by their fields: `metadata.name` and `metadata.namespace` with `=`, `==`, `!=`. Defaults to everything.",
  ),
  watch: param(
    "watch",
    "query",
    "Watch for changes to the described resources and return them as a stream of add, update and remove notifications (newline-delimited JSON WatchEvents).",
    { type: "boolean", uniqueItems: true },
  ),
  resourceVersion: param(
    "resourceVersion",
    "query",
    "With watch: the resourceVersion after which changes are streamed (usually a list's metadata.resourceVersion); unset streams ADDED events for the current objects first.",
  ),
  timeoutSeconds: param("timeoutSeconds", "query", "Timeout for the watch call, in seconds.", { type: "integer", uniqueItems: true }),
  allowWatchBookmarks: param("allowWatchBookmarks", "query", "Requests watch events of type BOOKMARK.", { type: "boolean", uniqueItems: true }),
  fieldManager: param(
    "fieldManager",
    "query",
    "A name associated with the actor or entity that is making these changes (at most 128 printable characters). Required for apply patch.",
  ),
  fieldValidation: param(
    "fieldValidation",
    "query",
    "How the server handles unknown or duplicate fields in the body. Flotilla always validates strictly (the request's zod schema): an unknown field fails the request with 400 BadRequest, an invalid value with 422 Invalid, whatever the value of this parameter (Strict, Warn or Ignore).",
  ),
  force: param(
    "force",
    "query",
    'Force is going to "force" Apply requests: the request takes ownership of the fields other managers own instead of failing with 409 Conflict. Only with apply patch.',
    { type: "boolean", uniqueItems: true },
  ),
};

function opId(verb: string, def: KindDefinition, suffix = ""): string {
  const camel = (s: string) => s.replace(/[.-](\w)/g, (_m, c: string) => c.toUpperCase()).replace(/^\w/, (c) => c.toUpperCase());
  return `${verb}${def.group ? camel(def.group) : "Core"}${camel(def.version)}${suffix}`;
}

function jsonContent(schema: JsonSchema): JsonSchema {
  return { "application/json": { schema } };
}

function okResponses(schema: JsonSchema, created: boolean): JsonSchema {
  return {
    "200": { description: "OK", content: jsonContent(schema) },
    ...(created ? { "201": { description: "Created", content: jsonContent(schema) } } : {}),
    "401": { description: "Unauthorized" },
  };
}

/** The v3 `paths` of one kind: collection, item and (when the kind has one) status subresource. */
function kindPaths(def: KindDefinition): Record<string, JsonSchema> {
  const base = `/${groupVersionPath(def.group, def.version)}`;
  const kindRef = refTo(schemaName(def.group, def.version, def.kind));
  const listRef = refTo(schemaName(def.group, def.version, def.listKind));
  const statusRef = refTo(META_SCHEMAS.Status);
  const ns = def.namespaced ? "Namespaced" : "";
  const tag = `${def.group ? def.group.replace(/[.-](\w)/g, (_m, ch: string) => ch.toUpperCase()) : "core"}_${def.version}`;
  const scope = def.namespaced ? [P.namespace] : [];
  const writable = !def.systemOwned;
  const op = (
    action: Action,
    kind: string,
    id: string,
    description: string,
    parameters: JsonSchema[],
    responses: JsonSchema,
    requestBody?: JsonSchema,
  ): JsonSchema => ({
    tags: [tag],
    description,
    operationId: id,
    parameters,
    ...(requestBody ? { requestBody } : {}),
    responses,
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": gvk(def, kind),
  });
  const body = (schema: JsonSchema): JsonSchema => ({ content: jsonContent(schema), required: true });
  const patchBody: JsonSchema = {
    content: {
      "application/json-patch+json": { schema: refTo(META_SCHEMAS.Patch) },
      "application/merge-patch+json": { schema: refTo(META_SCHEMAS.Patch) },
      "application/apply-patch+yaml": { schema: refTo(META_SCHEMAS.Patch) },
    },
    required: true,
  };
  const writeParams = [P.fieldManager, P.fieldValidation];
  // A computed kind (a cluster's Lease) is listed, never watched.
  const listParams = def.computed
    ? [P.labelSelector, P.fieldSelector, P.resourceVersion]
    : [P.labelSelector, P.fieldSelector, P.watch, P.resourceVersion, P.timeoutSeconds, P.allowWatchBookmarks];
  const paths: Record<string, JsonSchema> = {};

  const collection = `${base}${def.namespaced ? "/namespaces/{namespace}" : ""}/${def.plural}`;
  const item = `${collection}/{name}`;
  if (def.createOnly) {
    paths[collection] = {
      post: op(
        "post",
        def.kind,
        opId("create", def, `${ns}${def.kind}`),
        `create a ${def.kind}`,
        [...scope, ...writeParams],
        okResponses(kindRef, true),
        body(kindRef),
      ),
    };
    return paths;
  }
  if (def.viewOf) {
    paths[collection] = {
      get: op(
        "list",
        def.kind,
        opId("list", def, `${ns}${def.kind}`),
        `list or watch the ${def.plural} the user may see`,
        [...scope, ...listParams],
        okResponses(listRef, false),
      ),
    };
    return paths;
  }
  paths[collection] = {
    get: op(
      "list",
      def.kind,
      opId("list", def, `${ns}${def.kind}`),
      def.computed ? `list objects of kind ${def.kind} (not watched)` : `list or watch objects of kind ${def.kind}`,
      [...scope, ...listParams],
      okResponses(listRef, false),
    ),
    ...(writable
      ? {
          post: op(
            "post",
            def.kind,
            opId("create", def, `${ns}${def.kind}`),
            `create a ${def.kind}`,
            [...scope, ...writeParams],
            okResponses(kindRef, true),
            body(kindRef),
          ),
        }
      : {}),
  };
  paths[item] = {
    get: op(
      "get",
      def.kind,
      opId("read", def, `${ns}${def.kind}`),
      `read the specified ${def.kind}`,
      [...scope, P.name(def.kind)],
      okResponses(kindRef, false),
    ),
    ...(writable
      ? {
          put: op(
            "put",
            def.kind,
            opId("replace", def, `${ns}${def.kind}`),
            `replace the specified ${def.kind}`,
            [...scope, P.name(def.kind), ...writeParams],
            okResponses(kindRef, true),
            body(kindRef),
          ),
          patch: op(
            "patch",
            def.kind,
            opId("patch", def, `${ns}${def.kind}`),
            `partially update the specified ${def.kind} (JSON merge patch, or server-side apply with application/apply-patch+yaml)`,
            [...scope, P.name(def.kind), ...(def.kind === "Namespace" && def.group === "" ? [P.fieldManager] : writeParams), P.force],
            okResponses(kindRef, true),
            patchBody,
          ),
          delete: op(
            "delete",
            def.kind,
            opId("delete", def, `${ns}${def.kind}`),
            `delete a ${def.kind}. The response is the object while finalizers remain (with deletionTimestamp set), a Status otherwise.`,
            [...scope, P.name(def.kind)],
            { "200": { description: "OK", content: jsonContent(statusRef) }, "401": { description: "Unauthorized" } },
            { content: jsonContent(refTo(META_SCHEMAS.DeleteOptions)) },
          ),
        }
      : {}),
  };
  if (def.hasStatus) {
    paths[`${item}/status`] = {
      get: op(
        "get",
        def.kind,
        opId("read", def, `${ns}${def.kind}Status`),
        `read status of the specified ${def.kind}`,
        [...scope, P.name(def.kind)],
        okResponses(kindRef, false),
      ),
      ...(writable
        ? {
            put: op(
              "put",
              def.kind,
              opId("replace", def, `${ns}${def.kind}Status`),
              `replace status of the specified ${def.kind}`,
              [...scope, P.name(def.kind), ...writeParams],
              okResponses(kindRef, true),
              body(kindRef),
            ),
            patch: op(
              "patch",
              def.kind,
              opId("patch", def, `${ns}${def.kind}Status`),
              `partially update status of the specified ${def.kind}`,
              [...scope, P.name(def.kind), ...writeParams, P.force],
              okResponses(kindRef, true),
              patchBody,
            ),
          }
        : {}),
    };
  }
  for (const sub of def.createSubresources ?? []) {
    const ref = refTo(schemaName(sub.group, sub.version, sub.kind));
    paths[`${item}/${sub.name}`] = {
      post: {
        ...op(
          "post",
          def.kind,
          opId("create", def, `${ns}${def.kind}${sub.name.replace(/^\w/, (c) => c.toUpperCase())}`),
          sub.description,
          [...scope, P.name(def.kind), ...writeParams],
          okResponses(ref, true),
          body(ref),
        ),
        "x-kubernetes-group-version-kind": { group: sub.group, version: sub.version, kind: sub.kind },
      },
    };
  }
  if (def.namespaced) {
    paths[`${base}/${def.plural}`] = {
      get: op(
        "list",
        def.kind,
        opId("list", def, `${def.kind}ForAllNamespaces`),
        `list or watch objects of kind ${def.kind} in all namespaces`,
        listParams,
        okResponses(listRef, false),
      ),
    };
  }
  return paths;
}

// ---------------------------------------------------------------------------------------------
// Documents.
// ---------------------------------------------------------------------------------------------

/**
 * The URL path of a group-version, without the leading slash: `apis/<group>/<version>`, or
 * `api/<version>` for the core group ("", e.g. Secrets), as the apiserver serves them.
 */
export function groupVersionPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

/** Every served group-version, in KINDS order. */
export function groupVersions(): { group: string; version: string }[] {
  return servedGroups().flatMap((g) => g.versions.map((version) => ({ group: g.group, version })));
}

/**
 * The OpenAPI 3.0 document of one group-version (kube-apiserver's `/openapi/v3/apis/<g>/<v>`), or
 * null when the hub serves no kind in it.
 */
export function openAPIV3(group: string, version: string): JsonSchema | null {
  const defs = KINDS.filter((k) => k.group === group && k.version === version);
  if (defs.length === 0) return null;
  const schemas: Record<string, JsonSchema> = {};
  const paths: Record<string, JsonSchema> = {};
  for (const def of defs) {
    schemas[schemaName(def.group, def.version, def.kind)] = kindSchema(def);
    if (!def.createOnly) schemas[schemaName(def.group, def.version, def.listKind)] = listSchema(def);
    for (const sub of def.createSubresources ?? []) schemas[schemaName(sub.group, sub.version, sub.kind)] = subresourceSchema(sub);
    Object.assign(paths, kindPaths(def));
  }
  if (group === AUDIT_GROUP && version === AUDIT_VERSION) {
    const audit = auditOpenAPI({
      ref: refTo,
      name: schemaName,
      objectMeta: META_SCHEMAS.ObjectMeta,
      listMeta: META_SCHEMAS.ListMeta,
      status: META_SCHEMAS.Status,
      listParameters: [P.labelSelector, P.fieldSelector, P.watch, P.resourceVersion, P.timeoutSeconds, P.allowWatchBookmarks],
    });
    Object.assign(schemas, audit.schemas);
    Object.assign(paths, audit.paths);
  }
  Object.assign(schemas, metaSchemas(group, version));
  const sorted = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  return {
    openapi: "3.0.0",
    info: { title: "Flotilla", version: "v0.1.0", description: `Flotilla hub API, ${group ? `${group}/${version}` : version}.` },
    paths,
    components: {
      schemas: sorted,
      securitySchemes: { BearerToken: { type: "apiKey", description: "Bearer Token authentication", name: "authorization", in: "header" } },
    },
    security: [{ BearerToken: [] }],
  };
}

/** Rewrites an OpenAPI 3.0 schema into Swagger 2.0's dialect (refs to `#/definitions/`, no nullable/anyOf). */
function toV2Schema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toV2Schema);
  if (!isObj(node)) return node;
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "$ref" && typeof v === "string") out.$ref = v.replace("#/components/schemas/", "#/definitions/");
    else if (k === "nullable") out["x-nullable"] = v;
    else if (k === "anyOf" && Array.isArray(v)) {
      const types = new Set(v.map((s) => (isObj(s) ? s.type : undefined)));
      out.type = "string";
      if (types.has("integer") && types.has("string")) out.format = "int-or-string";
    } else out[k] = toV2Schema(v);
  }
  return out;
}

/** Converts one v3 operation to Swagger 2.0 (body parameter, consumes/produces, response schemas). */
function toV2Operation(op: JsonSchema): JsonSchema {
  const { requestBody, responses, parameters, ...rest } = op as { requestBody?: JsonSchema; responses: Record<string, JsonSchema>; parameters: JsonSchema[] };
  const params: JsonSchema[] = parameters.map((p) => {
    const { schema, ...pr } = p as { schema: JsonSchema };
    return { ...pr, ...schema };
  });
  const content = (requestBody?.content ?? {}) as Record<string, { schema: JsonSchema }>;
  const consumes = Object.keys(content);
  if (consumes.length > 0)
    params.push({ name: "body", in: "body", required: requestBody?.required === true, schema: toV2Schema(Object.values(content)[0]!.schema) });
  const v2Responses: Record<string, JsonSchema> = {};
  for (const [code, r] of Object.entries(responses)) {
    const schema = (r.content as Record<string, { schema: JsonSchema }> | undefined)?.["application/json"]?.schema;
    v2Responses[code] = { description: r.description, ...(schema ? { schema: toV2Schema(schema) } : {}) };
  }
  return {
    ...rest,
    ...(consumes.length > 0 ? { consumes } : {}),
    produces: ["application/json"],
    schemes: ["https"],
    parameters: params,
    responses: v2Responses,
  };
}

/** One Swagger 2.0 document for every served group-version (kube-apiserver's `/openapi/v2`). */
export function openAPIV2(): JsonSchema {
  const definitions: Record<string, unknown> = {};
  const paths: Record<string, JsonSchema> = {};
  for (const { group, version } of groupVersions()) {
    const doc = openAPIV3(group, version)!;
    const components = doc.components as { schemas: Record<string, JsonSchema> };
    for (const [name, s] of Object.entries(components.schemas)) {
      const prev = definitions[name] as JsonSchema | undefined;
      const next = toV2Schema(s) as JsonSchema;
      // DeleteOptions lists every group-version it is served in.
      if (prev && Array.isArray(prev["x-kubernetes-group-version-kind"]) && Array.isArray(next["x-kubernetes-group-version-kind"])) {
        const all = [...prev["x-kubernetes-group-version-kind"], ...next["x-kubernetes-group-version-kind"]] as GroupVersionKind[];
        next["x-kubernetes-group-version-kind"] = all.filter(
          (g, i) => all.findIndex((h) => h.group === g.group && h.version === g.version && h.kind === g.kind) === i,
        );
      }
      definitions[name] = next;
    }
    for (const [path, item] of Object.entries(doc.paths as Record<string, JsonSchema>)) {
      paths[path] = Object.fromEntries(Object.entries(item).map(([verb, op]) => [verb, toV2Operation(op as JsonSchema)]));
    }
  }
  return {
    swagger: "2.0",
    info: { title: "Flotilla", version: "v0.1.0" },
    paths,
    definitions: Object.fromEntries(Object.entries(definitions).sort(([a], [b]) => a.localeCompare(b))),
    securityDefinitions: { BearerToken: { type: "apiKey", description: "Bearer Token authentication", name: "authorization", in: "header" } },
    security: [{ BearerToken: [] }],
  };
}

interface Built {
  /** Serialized v3 document and its hash, by path (`apis/<group>/<version>` or `api/<version>`). */
  v3: Map<string, { body: string; hash: string }>;
  v2: string;
  /** The v2 document as gnostic protobuf, encoded the first time a client asks for it. */
  v2Proto?: Uint8Array;
}

/** The media type of the Swagger 2.0 document as gnostic protobuf (what kubectl requests). */
const OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/** Whether an Accept header asks for the protobuf v2 document before JSON. */
function prefersProtobuf(accept: string | undefined): boolean {
  for (const r of mediaRanges(accept ?? "")) {
    if (r.type === OPENAPI_V2_PROTOBUF) return true;
    if (r.type === "application/json" || r.type === "*/*" || r.type === "application/*") return false;
  }
  return false;
}

let built: Promise<Built> | null = null;

async function sha512Hex(s: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-512", new TextEncoder().encode(s));
  return [...new Uint8Array(d)]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("")
    .toUpperCase();
}

/** Builds (once per isolate) every document and its hash. */
function documents(): Promise<Built> {
  built ??= (async () => {
    const v3 = new Map<string, { body: string; hash: string }>();
    for (const { group, version } of groupVersions()) {
      const body = JSON.stringify(openAPIV3(group, version));
      v3.set(groupVersionPath(group, version), { body, hash: await sha512Hex(body) });
    }
    return { v3, v2: JSON.stringify(openAPIV2()) };
  })().catch((e) => {
    built = null;
    throw e;
  });
  return built;
}

/**
 * The OpenAPI v3 discovery document (`GET /openapi/v3`): one `apis/<group>/<version>` entry per
 * served group-version whose `serverRelativeURL` carries the document's hash, so clients (kubectl's
 * disk cache) can cache each document for as long as its URL is unchanged.
 */
export async function openAPIV3Discovery(): Promise<{ paths: Record<string, { serverRelativeURL: string }> }> {
  const docs = await documents();
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const [gv, { hash }] of docs.v3) paths[gv] = { serverRelativeURL: `/openapi/v3/${gv}?hash=${hash}` };
  return { paths };
}

function notFound(): ApiError {
  return new ApiError(404, "NotFound", "the server could not find the requested resource");
}

function jsonResponse(body: string, headers: Record<string, string> = {}, status = 200): Response {
  return new Response(body, { status, headers: { "content-type": "application/json", ...headers } });
}

/** Whether the client accepts JSON (no Accept, `*\/*`, `application/*` or `application/json`). */
function acceptsJson(c: Context): boolean {
  const accept = c.req.header("accept");
  if (!accept) return true;
  return accept.split(",").some((part) => {
    const t = part.split(";")[0]!.trim().toLowerCase();
    return t === "*/*" || t === "application/*" || t === "application/json";
  });
}

/**
 * The routes describing the API (authenticated and authorized like the rest of the API; every
 * authenticated user may read them, by the bootstrap system:discovery role): `/openapi/v2`, `/openapi/v3` and
 * `/openapi/v3/apis/{group}/{version}` (see the module comment for the shapes).
 * Unknown group-versions get a 404 Status; a client accepting only protobuf gets 406
 * NotAcceptable (the hub serves JSON only), as the apiserver answers an unsupported Accept.
 *
 * @example app.route("/", openapiRoutes());
 */
export function openapiRoutes(): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>();
  // As kube-apiserver: authenticated, and readable by every authenticated user (system:discovery).
  app.use("/openapi/*", apiAccess(ensureBuiltins));
  const notAcceptable = () => new ApiError(406, "NotAcceptable", "only the following media types are accepted: application/json");

  app.get("/openapi/v2", async (c) => {
    const docs = await documents();
    // kubectl asks for gnostic's protobuf (validation, explain); other clients for JSON.
    if (prefersProtobuf(c.req.header("accept"))) {
      docs.v2Proto ??= encodeOpenAPIV2(JSON.parse(docs.v2) as Record<string, unknown>);
      // As kube-openapi's handler: the protobuf is sent as application/octet-stream (Go's MIME
      // parser, which client-go runs on the answer, refuses the requested type's "@").
      return new Response(docs.v2Proto, { headers: { "content-type": "application/octet-stream", "cache-control": "no-cache, private" } });
    }
    if (!acceptsJson(c)) throw notAcceptable();
    return jsonResponse(docs.v2, { "cache-control": "no-cache, private" });
  });

  app.get("/openapi/v3", async (c) => {
    if (!acceptsJson(c)) throw notAcceptable();
    return c.json(await openAPIV3Discovery(), 200, { "cache-control": "no-cache, private" });
  });

  const v3Document = async (c: Context, gv: string): Promise<Response> => {
    if (!acceptsJson(c)) throw notAcceptable();
    const doc = (await documents()).v3.get(gv);
    if (!doc) throw notFound();
    const etag = `"${doc.hash}"`;
    const hash = c.req.query("hash");
    if (hash !== undefined && hash !== doc.hash) {
      return new Response(null, { status: 301, headers: { location: `/openapi/v3/${gv}?hash=${doc.hash}`, "cache-control": "no-cache, private" } });
    }
    const cache = hash === undefined ? "no-cache, private" : "public, immutable";
    if (c.req.header("if-none-match") === etag) return new Response(null, { status: 304, headers: { etag, "cache-control": cache } });
    return jsonResponse(doc.body, { etag, "cache-control": cache });
  };
  app.get("/openapi/v3/apis/:group/:version", (c) => v3Document(c, groupVersionPath(c.req.param("group"), c.req.param("version"))));
  app.get("/openapi/v3/api/:version", (c) => v3Document(c, groupVersionPath("", c.req.param("version"))));

  return app;
}
