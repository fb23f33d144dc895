/**
 * The order in which a work's manifests are applied: OCM's kind rank (since v1.3.0), so that a
 * Namespace or a CRD exists before what lives in it, and RBAC and ServiceAccounts before the
 * workloads that use them. The sort is stable; each manifest keeps its spec index as
 * `resourceMeta.ordinal`.
 */

const RANKS: ReadonlyArray<readonly string[]> = [
  ["PriorityClass", "Namespace", "CustomResourceDefinition", "StorageClass", "PersistentVolume", "PodSecurityPolicy"],
  ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"],
  ["NetworkPolicy", "ResourceQuota", "LimitRange", "PodDisruptionBudget", "ServiceAccount"],
  ["Secret", "ConfigMap", "PersistentVolumeClaim"],
  ["Service"],
  ["DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob"],
  ["APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"],
];

/** Rank of kinds OCM does not list: applied last. */
export const UNKNOWN_KIND_RANK = 1000;

const RANK_OF = new Map<string, number>(RANKS.flatMap((kinds, rank) => kinds.map((k) => [k, rank] as const)));

/**
 * OCM's apply rank of a kind: 0 cluster foundations (Namespace, CRD, …), 1 RBAC, 2 policies and
 * ServiceAccounts, 3 Secrets/ConfigMaps/PVCs, 4 Services, 5 workloads, 6 webhooks and API
 * services, {@link UNKNOWN_KIND_RANK} for anything else.
 *
 * @example kindRank("Namespace") // 0
 * @example kindRank("Widget")    // 1000
 */
export function kindRank(kind: string): number {
  return RANK_OF.get(kind) ?? UNKNOWN_KIND_RANK;
}

/**
 * The spec indexes of `manifests` in apply order: by {@link kindRank}, ties kept in spec order.
 *
 * @param manifests `spec.workload.manifests` (items without a string `kind` rank as unknown).
 * @returns indexes into `manifests`.
 * @example applyOrder([{kind: "Deployment"}, {kind: "Namespace"}]) // [1, 0]
 */
export function applyOrder(manifests: readonly unknown[]): number[] {
  const kindOf = (m: unknown): string => (typeof m === "object" && m !== null && "kind" in m && typeof m.kind === "string" ? m.kind : "");
  return manifests
    .map((m, i) => ({ i, rank: kindRank(kindOf(m)) }))
    .sort((a, b) => a.rank - b.rank || a.i - b.i)
    .map((e) => e.i);
}
