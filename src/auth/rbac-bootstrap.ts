/**
 * The built-in ClusterRoles and ClusterRoleBindings
 * (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`): cluster-admin, admin, edit, view
 * and the `system:aggregate-to-*` roles behind them, system:discovery, system:basic-user,
 * system:public-info-viewer, written here for the kinds the hub serves.
 */
import {
  RBAC_GROUP,
  RBAC_API_VERSION,
  SYSTEM_MASTERS,
  ALL_AUTHENTICATED,
  ALL_UNAUTHENTICATED,
  SYSTEM_MONITORING,
  AGGREGATE_TO_ADMIN,
  AGGREGATE_TO_EDIT,
  AGGREGATE_TO_VIEW,
  type PolicyRule,
  type RbacObjectMeta,
  type ClusterRole,
  type ClusterRoleBinding,
} from "./rbac-types.ts";

// ---------------------------------------------------------------------------
// Built-in roles and bindings (bootstrap policy)
// ---------------------------------------------------------------------------

const READ = ["get", "list", "watch"];
const WRITE = ["create", "update", "patch", "delete", "deletecollection"];
const READ_WRITE = [...READ, ...WRITE];
const OCM_CLUSTER = "cluster.open-cluster-management.io";
const OCM_WORK = "work.open-cluster-management.io";
const FLOTILLA = "flotilla.dev";
const CLUSTER_INVENTORY = "multicluster.x-k8s.io";
const OCM_POLICY = "policy.open-cluster-management.io";
const OCM_ADDON = "addon.open-cluster-management.io";
const FLEET_PLACEMENT = "placement.kubernetes-fleet.io";
const KARMADA_POLICY = "policy.karmada.io";
const KARMADA_WORK = "work.karmada.io";

/** Labels and annotations Kubernetes puts on its bootstrap policy objects. */
function bootstrapMeta(name: string, labels: Record<string, string> = {}): RbacObjectMeta {
  return {
    name,
    labels: { "kubernetes.io/bootstrapping": "rbac-defaults", ...labels },
    annotations: { "rbac.authorization.kubernetes.io/autoupdate": "true" },
  };
}

function clusterRole(name: string, rules: PolicyRule[], extra: { labels?: Record<string, string>; aggregateLabel?: string } = {}): ClusterRole {
  const cr: ClusterRole = { apiVersion: RBAC_API_VERSION, kind: "ClusterRole", metadata: bootstrapMeta(name, extra.labels), rules };
  if (extra.aggregateLabel) cr.aggregationRule = { clusterRoleSelectors: [{ matchLabels: { [extra.aggregateLabel]: "true" } }] };
  return cr;
}

/**
 * The ClusterRoles the hub starts with, after Kubernetes' bootstrap policy, for the kinds it
 * serves (src/kinds, plus namespaces, serviceaccounts and the RBAC and review kinds):
 *
 * - `cluster-admin`: everything (`*` on every group and resource, and every non-resource URL);
 * - `admin`, `edit`, `view`: rules aggregated from ClusterRoles labelled
 *   `rbac.authorization.k8s.io/aggregate-to-admin|edit|view: "true"`; `edit` carries the admin
 *   label and `view` the edit label, so admin ⊇ edit ⊇ view. Like Kubernetes' they are meant for
 *   a namespace (bound by a RoleBinding) and hold no cluster-scoped kind except reading
 *   `namespaces`: ManagedClusters, ManagedClusterSets and BootstrapTokens (like Nodes) and
 *   AuditEvents are cluster-admin's, or a role of their own;
 * - `system:aggregate-to-view`: read (get, list, watch) every namespaced kind except Secrets, and
 *   each kind's `/status`; read namespaces and serviceaccounts;
 * - `system:aggregate-to-edit`: write (create, update, patch, delete, deletecollection) every
 *   namespaced kind users write (PlacementDecisions are the scheduler's), read and write Secrets
 *   and ServiceAccounts, `impersonate` ServiceAccounts, `create` `serviceaccounts/token`; no
 *   `/status` writes;
 * - `system:aggregate-to-admin`: read and write Roles and RoleBindings, create
 *   LocalSubjectAccessReviews;
 * - `system:monitoring`: `get` on the health paths (with their per-check paths) and `/metrics`,
 *   as Kubernetes' (bound to the group `system:monitoring`: a Prometheus' ServiceAccount or OIDC
 *   user is given it by a ClusterRoleBinding, docs/metrics.md);
 * - `system:discovery` (discovery, OpenAPI, version and health paths, and `/docs`), `system:basic-user`
 *   (SelfSubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview) and
 *   `system:public-info-viewer` (version and health paths), bound to every authenticated user by
 *   {@link BOOTSTRAP_CLUSTER_ROLE_BINDINGS}.
 *
 * Stored rules of `admin`, `edit` and `view` are empty: the evaluator aggregates them.
 */
export const BOOTSTRAP_CLUSTER_ROLES: readonly ClusterRole[] = [
  clusterRole("cluster-admin", [
    { verbs: ["*"], apiGroups: ["*"], resources: ["*"] },
    { verbs: ["*"], nonResourceURLs: ["*"] },
  ]),
  clusterRole("system:discovery", [
    // Kubernetes' list, plus Flotilla's reference page `/docs`.
    {
      verbs: ["get"],
      nonResourceURLs: [
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/docs",
        "/docs/",
        "/healthz",
        "/livez",
        "/openapi",
        "/openapi/*",
        "/readyz",
        "/version",
        "/version/",
      ],
    },
  ]),
  clusterRole("system:basic-user", [
    { verbs: ["create"], apiGroups: ["authorization.k8s.io"], resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"] },
    { verbs: ["create"], apiGroups: ["authentication.k8s.io"], resources: ["selfsubjectreviews"] },
  ]),
  clusterRole("system:public-info-viewer", [{ verbs: ["get"], nonResourceURLs: ["/healthz", "/livez", "/readyz", "/version", "/version/"] }]),
  clusterRole("system:monitoring", [
    { verbs: ["get"], nonResourceURLs: ["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"] },
  ]),
  clusterRole("admin", [], { aggregateLabel: AGGREGATE_TO_ADMIN }),
  clusterRole("edit", [], { labels: { [AGGREGATE_TO_ADMIN]: "true" }, aggregateLabel: AGGREGATE_TO_EDIT }),
  clusterRole("view", [], { labels: { [AGGREGATE_TO_EDIT]: "true" }, aggregateLabel: AGGREGATE_TO_VIEW }),
  clusterRole(
    "system:aggregate-to-admin",
    [
      { verbs: ["create"], apiGroups: ["authorization.k8s.io"], resources: ["localsubjectaccessreviews"] },
      { verbs: READ_WRITE, apiGroups: [RBAC_GROUP], resources: ["rolebindings", "roles"] },
    ],
    { labels: { [AGGREGATE_TO_ADMIN]: "true" } },
  ),
  clusterRole(
    "system:aggregate-to-edit",
    [
      { verbs: READ, apiGroups: [""], resources: ["secrets"] },
      { verbs: ["impersonate"], apiGroups: [""], resources: ["serviceaccounts"] },
      { verbs: WRITE, apiGroups: [""], resources: ["configmaps", "events", "persistentvolumeclaims", "secrets", "serviceaccounts", "services"] },
      { verbs: WRITE, apiGroups: ["events.k8s.io"], resources: ["events"] },
      // The built-in kinds stored as templates (src/kinds/builtin), as Kubernetes' edit role has them.
      { verbs: WRITE, apiGroups: ["apps"], resources: ["daemonsets", "deployments", "statefulsets"] },
      { verbs: WRITE, apiGroups: ["autoscaling"], resources: ["horizontalpodautoscalers"] },
      { verbs: WRITE, apiGroups: ["batch"], resources: ["cronjobs", "jobs"] },
      { verbs: WRITE, apiGroups: ["policy"], resources: ["poddisruptionbudgets"] },
      { verbs: WRITE, apiGroups: ["networking.k8s.io"], resources: ["ingresses", "networkpolicies"] },
      { verbs: ["create"], apiGroups: [""], resources: ["serviceaccounts/token"] },
      { verbs: WRITE, apiGroups: [OCM_CLUSTER], resources: ["addonplacementscores", "managedclustersetbindings", "placements"] },
      { verbs: WRITE, apiGroups: [OCM_WORK], resources: ["manifestworkreplicasets", "manifestworks"] },
      { verbs: WRITE, apiGroups: [FLOTILLA], resources: ["webhookreceivers"] },
      { verbs: WRITE, apiGroups: [OCM_POLICY], resources: ["placementbindings", "policies", "policysets"] },
      { verbs: WRITE, apiGroups: [OCM_ADDON], resources: ["addondeploymentconfigs", "managedclusteraddons"] },
      // KubeFleet's namespaced placement, envelope and override (docs/kubefleet.md, docs/overrides.md); snapshots and bindings are the controller's.
      { verbs: WRITE, apiGroups: [FLEET_PLACEMENT], resources: ["resourceenvelopes", "resourceoverrides", "resourceplacements"] },
      // KubeFleet's namespaced staged updates. Approving a stage writes an ApprovalRequest's status,
      // which, as every status, edit does not write: the approver needs `approvalrequests/status`
      // (docs/kubefleet.md "Staged update runs").
      { verbs: WRITE, apiGroups: [FLEET_PLACEMENT], resources: ["approvalrequests", "stagedupdateruns", "stagedupdatestrategies"] },
      // Karmada's namespaced policies (docs/karmada.md, docs/overrides.md); its ResourceBindings are the controller's.
      { verbs: WRITE, apiGroups: [KARMADA_POLICY], resources: ["overridepolicies", "propagationpolicies"] },
    ],
    { labels: { [AGGREGATE_TO_EDIT]: "true" } },
  ),
  clusterRole(
    "system:aggregate-to-view",
    [
      {
        verbs: READ,
        apiGroups: [""],
        resources: [
          "configmaps",
          "events",
          "limitranges",
          "namespaces",
          "namespaces/status",
          "persistentvolumeclaims",
          "persistentvolumeclaims/status",
          "resourcequotas",
          "resourcequotas/status",
          "serviceaccounts",
          "services",
          "services/status",
        ],
      },
      {
        verbs: READ,
        apiGroups: ["apps"],
        // controllerrevisions: a ManifestWorkReplicaSet's revision history (src/kinds/controllerrevision.ts).
        resources: ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/status", "statefulsets", "statefulsets/status"],
      },
      { verbs: READ, apiGroups: ["autoscaling"], resources: ["horizontalpodautoscalers", "horizontalpodautoscalers/status"] },
      { verbs: READ, apiGroups: ["batch"], resources: ["cronjobs", "cronjobs/status", "jobs", "jobs/status"] },
      { verbs: READ, apiGroups: ["policy"], resources: ["poddisruptionbudgets", "poddisruptionbudgets/status"] },
      { verbs: READ, apiGroups: ["networking.k8s.io"], resources: ["ingresses", "ingresses/status", "networkpolicies"] },
      { verbs: READ, apiGroups: ["events.k8s.io"], resources: ["events"] },
      // The clusters' leases (read-only, src/api/leases.ts).
      { verbs: READ, apiGroups: ["coordination.k8s.io"], resources: ["leases"] },
      {
        verbs: READ,
        apiGroups: [OCM_CLUSTER],
        resources: [
          "addonplacementscores",
          "addonplacementscores/status",
          "managedclustersetbindings",
          "managedclustersetbindings/status",
          "placementdecisions",
          "placementdecisions/status",
          "placements",
          "placements/status",
        ],
      },
      { verbs: READ, apiGroups: [OCM_WORK], resources: ["manifestworkreplicasets", "manifestworkreplicasets/status", "manifestworks", "manifestworks/status"] },
      { verbs: READ, apiGroups: [FLOTILLA], resources: ["webhookreceivers", "webhookreceivers/status"] },
      { verbs: READ, apiGroups: [CLUSTER_INVENTORY], resources: ["clusterprofiles", "clusterprofiles/status"] },
      {
        verbs: READ,
        apiGroups: [OCM_POLICY],
        resources: ["placementbindings", "placementbindings/status", "policies", "policies/status", "policysets", "policysets/status"],
      },
      { verbs: READ, apiGroups: [OCM_ADDON], resources: ["addondeploymentconfigs", "managedclusteraddons", "managedclusteraddons/status"] },
      // A namespace's user reads its ResourcePlacements' status (kubefleet#508) and what they made.
      {
        verbs: READ,
        apiGroups: [FLEET_PLACEMENT],
        resources: [
          "resourcebindings",
          "resourcebindings/status",
          "resourceenvelopes",
          "resourceoverrides",
          "resourceoverridesnapshots",
          "resourceoverridesnapshots/status",
          "resourceplacements",
          "resourceplacements/status",
          "resourcesnapshots",
          "resourcesnapshots/status",
          "schedulingpolicysnapshots",
          "schedulingpolicysnapshots/status",
          "approvalrequests",
          "approvalrequests/status",
          "stagedupdateruns",
          "stagedupdateruns/status",
          "stagedupdatestrategies",
        ],
      },
      // A namespace's user reads its PropagationPolicies, OverridePolicies and the ResourceBindings' status (docs/karmada.md).
      { verbs: READ, apiGroups: [KARMADA_POLICY], resources: ["overridepolicies", "propagationpolicies"] },
      { verbs: READ, apiGroups: [KARMADA_WORK], resources: ["resourcebindings", "resourcebindings/status"] },
    ],
    { labels: { [AGGREGATE_TO_VIEW]: "true" } },
  ),
];

function clusterRoleBinding(role: string, groups: string[]): ClusterRoleBinding {
  return {
    apiVersion: RBAC_API_VERSION,
    kind: "ClusterRoleBinding",
    metadata: bootstrapMeta(role),
    roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: role },
    subjects: groups.map((name) => ({ kind: "Group", apiGroup: RBAC_GROUP, name })),
  };
}

/**
 * The ClusterRoleBindings the hub starts with (Kubernetes' bootstrap bindings of these roles):
 * `cluster-admin` to `system:masters`; `system:discovery` and `system:basic-user` to
 * `system:authenticated`; `system:public-info-viewer` to `system:authenticated` and
 * `system:unauthenticated`; `system:monitoring` to the group `system:monitoring`. Each is named
 * after its role.
 */
export const BOOTSTRAP_CLUSTER_ROLE_BINDINGS: readonly ClusterRoleBinding[] = [
  clusterRoleBinding("cluster-admin", [SYSTEM_MASTERS]),
  clusterRoleBinding("system:discovery", [ALL_AUTHENTICATED]),
  clusterRoleBinding("system:basic-user", [ALL_AUTHENTICATED]),
  clusterRoleBinding("system:public-info-viewer", [ALL_AUTHENTICATED, ALL_UNAUTHENTICATED]),
  clusterRoleBinding("system:monitoring", [SYSTEM_MONITORING]),
];
