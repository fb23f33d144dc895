/**
 * The table columns of `flotilla get`, one view per kind. A view turns an object into one row of
 * strings; missing values are `-`. With `allNamespaces`, namespaced kinds get a leading
 * NAMESPACE (CLUSTER for ManifestWorks) column.
 */
import { conditionStatus } from "./clusters.ts";
import {
  ClusterConditions,
  conditionOf,
  DECISION_GROUP_INDEX_LABEL,
  DECISION_GROUP_NAME_LABEL,
  PLACEMENT_LABEL,
  ROOT_POLICY_LABEL,
  type KubeObject,
  type Taint,
} from "./resources.ts";
import { ageOf } from "./time.ts";

/** The columns of one kind's table. */
export interface View {
  /** The header row. */
  headers(allNamespaces: boolean): string[];
  /** One object's row; `nowMs` is epoch milliseconds, for ages. */
  row(obj: KubeObject, nowMs: number, allNamespaces: boolean): string[];
}

const dash = (v: unknown): string => (v === undefined || v === null || v === "" ? "-" : String(v));

/** Renders taints as `key[=value]:effect`, comma-separated; `-` when there are none. */
export function formatTaints(taints: Taint[] | undefined): string {
  if (!taints || taints.length === 0) return "-";
  return taints.map((t) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`).join(",");
}

/**
 * ManagedClusters: NAME, ACCEPTED (spec.hubAcceptsClient), JOINED and AVAILABLE (condition
 * statuses), SINCE (age of the Available condition's last transition: the hub does not expose
 * the lease's renew time), VERSION (status.version.kubernetes), TAINTS, AGE.
 */
export const clusterView: View = {
  headers: () => ["NAME", "ACCEPTED", "JOINED", "AVAILABLE", "SINCE", "VERSION", "TAINTS", "AGE"],
  row(mc, now) {
    const version = (mc.status as { version?: { kubernetes?: string } } | undefined)?.version?.kubernetes;
    return [
      mc.metadata.name,
      mc.spec?.hubAcceptsClient === true ? "true" : "false",
      conditionStatus(mc, ClusterConditions.Joined),
      conditionStatus(mc, ClusterConditions.Available),
      ageOf(conditionOf(mc, ClusterConditions.Available)?.lastTransitionTime, now),
      dash(version),
      formatTaints(mc.spec?.taints as Taint[] | undefined),
      ageOf(mc.metadata.creationTimestamp, now),
    ];
  },
};

/** Placements: [NAMESPACE], NAME, SATISFIED and REASON (PlacementSatisfied), SELECTED, AGE. */
export const placementView: View = {
  headers: (all) => [...(all ? ["NAMESPACE"] : []), "NAME", "SATISFIED", "REASON", "SELECTED", "AGE"],
  row(p, now, all) {
    const satisfied = conditionOf(p, "PlacementSatisfied");
    return [
      ...(all ? [dash(p.metadata.namespace)] : []),
      p.metadata.name,
      dash(satisfied?.status),
      dash(satisfied?.reason),
      dash(p.status?.numberOfSelectedClusters),
      ageOf(p.metadata.creationTimestamp, now),
    ];
  },
};

/**
 * PlacementDecisions: [NAMESPACE], NAME, PLACEMENT (its label), GROUP (decision group index,
 * with the group name when it has one), CLUSTERS (the decided cluster names).
 */
export const decisionView: View = {
  headers: (all) => [...(all ? ["NAMESPACE"] : []), "NAME", "PLACEMENT", "GROUP", "CLUSTERS"],
  row(d, _now, all) {
    const labels = d.metadata.labels ?? {};
    const index = labels[DECISION_GROUP_INDEX_LABEL];
    const groupName = labels[DECISION_GROUP_NAME_LABEL];
    const decisions = (d.status as { decisions?: { clusterName: string }[] } | undefined)?.decisions ?? [];
    return [
      ...(all ? [dash(d.metadata.namespace)] : []),
      d.metadata.name,
      dash(labels[PLACEMENT_LABEL]),
      index === undefined ? "-" : groupName ? `${index}(${groupName})` : index,
      decisions.length === 0 ? "-" : decisions.map((x) => x.clusterName).join(","),
    ];
  },
};

/** ManifestWorks: [CLUSTER], NAME, MANIFESTS (count), APPLIED, AVAILABLE (conditions), AGE. */
export const workView: View = {
  headers: (all) => [...(all ? ["CLUSTER"] : []), "NAME", "MANIFESTS", "APPLIED", "AVAILABLE", "AGE"],
  row(w, now, all) {
    const manifests = (w.spec as { workload?: { manifests?: unknown[] } } | undefined)?.workload?.manifests ?? [];
    return [
      ...(all ? [dash(w.metadata.namespace)] : []),
      w.metadata.name,
      String(manifests.length),
      conditionStatus(w, "Applied"),
      conditionStatus(w, "Available"),
      ageOf(w.metadata.creationTimestamp, now),
    ];
  },
};

/**
 * ManagedClusterAddOns, one row per add-on per cluster: [CLUSTER], NAME, AVAILABLE, DEGRADED and
 * PROGRESSING (the condition statuses, OCM's printer columns), HEALTH (`status.healthCheck.mode`,
 * OCM's default `Lease`), REASON (the Available condition's reason: why it is what it is, e.g.
 * `ManagedClusterAddOnLeaseUpdateStopped`), AGE.
 */
export const addonView: View = {
  headers: (all) => [...(all ? ["CLUSTER"] : []), "NAME", "AVAILABLE", "DEGRADED", "PROGRESSING", "HEALTH", "REASON", "AGE"],
  row(a, now, all) {
    const mode = (a.status as { healthCheck?: { mode?: string } } | undefined)?.healthCheck?.mode;
    return [
      ...(all ? [dash(a.metadata.namespace)] : []),
      a.metadata.name,
      conditionStatus(a, "Available"),
      conditionStatus(a, "Degraded"),
      conditionStatus(a, "Progressing"),
      mode || "Lease",
      dash(conditionOf(a, "Available")?.reason),
      ageOf(a.metadata.creationTimestamp, now),
    ];
  },
};

/** One cluster's compliance in a root Policy's `status.status[]` (OCM's CompliancePerClusterStatus). */
interface ClusterCompliance {
  clustername?: string;
  clusternamespace?: string;
  compliant?: string;
}

/**
 * The compliance of each cluster a root policy was propagated to, `cluster=Compliance` sorted by
 * cluster (`Pending` for a cluster that has not reported yet, as OCM's `status.status[]` leaves its
 * `compliant` empty), comma-separated; `-` when there is none.
 */
export function compliancePerCluster(policy: KubeObject): string {
  const per = ((policy.status as { status?: ClusterCompliance[] } | undefined)?.status ?? []).filter((s) => s.clustername);
  if (per.length === 0) return "-";
  return per
    .map((s) => `${s.clustername}=${s.compliant || "Pending"}`)
    .sort()
    .join(",");
}

/**
 * Policies: [NAMESPACE], NAME, REMEDIATION (`spec.remediationAction`, `-` when each template says),
 * DISABLED, COMPLIANCE (`status.compliant`: Compliant, NonCompliant or Pending), CLUSTERS (each
 * cluster's compliance, {@link compliancePerCluster}; for a replicated policy, in a cluster's
 * namespace, the root policy it copies), AGE.
 */
export const policyView: View = {
  headers: (all) => [...(all ? ["NAMESPACE"] : []), "NAME", "REMEDIATION", "DISABLED", "COMPLIANCE", "CLUSTERS", "AGE"],
  row(p, now, all) {
    const root = p.metadata.labels?.[ROOT_POLICY_LABEL];
    return [
      ...(all ? [dash(p.metadata.namespace)] : []),
      p.metadata.name,
      dash(p.spec?.remediationAction),
      p.spec?.disabled === true ? "true" : "false",
      dash((p.status as { compliant?: string } | undefined)?.compliant),
      root ? `(copy of ${root})` : compliancePerCluster(p),
      ageOf(p.metadata.creationTimestamp, now),
    ];
  },
};
