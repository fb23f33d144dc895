/**
 * The fleet's gauges (src/metrics/families.ts `GAUGES`), counted from D1 at each scrape in one
 * batch of aggregate queries (one round trip; their SQL is the store's, src/store/d1/fleet-gauges.ts): each reads the rows of one kind by the `objects`
 * primary key's `resource` prefix and aggregates the conditions in SQL (`json_each`), parsing each
 * body once, so nothing but grouped counts leaves D1 and no object is parsed in the Worker. ManagedClusterSets' member
 * counts are the kept counts of `clusterset_counts` (src/clusterprofile/set-counts.ts).
 *
 * The figures are the API's: a cluster counted under `condition="ManagedClusterConditionAvailable",
 * status="True"` is one `kubectl get managedclusters` shows with that condition True.
 *
 * @module
 */
import { resourceKey } from "../k8s/kind.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ManifestWorkKind, ManifestWorkReplicaSetKind } from "../kinds/manifestwork.ts";
import { PlacementKind } from "../kinds/placement.ts";
import { PolicyKind, ROOT_POLICY_LABEL } from "../kinds/policy.ts";
import { ManagedClusterAddOnKind } from "../kinds/addon.ts";
import { ApprovalRequestKind, ClusterApprovalRequestKind, ClusterStagedUpdateRunKind, StagedUpdateRunKind } from "../kinds/fleet-updaterun.ts";
import { ClusterResourcePlacementEvictionKind } from "../kinds/fleet-eviction.ts";
import { COLO_ANNOTATION } from "../audit/event.ts";
import type { Env } from "../env.ts";
import { storageOf } from "../store/storage.ts";
import { labelsPart, type Cell, type Labels, type MetricFamily } from "./exposition.ts";
import { GAUGES } from "./families.ts";

/** The annotation with the edge location (Cloudflare colo) a cluster's agent last reached. */
export const CLUSTER_COLO_ANNOTATION = COLO_ANNOTATION;

/** The `summary` counts of a ManifestWorkReplicaSet's status shown per state. */
const SUMMARY_STATES = ["total", "applied", "available", "progressing", "degraded"] as const;

/**
 * An eviction's outcome (`flotilla_placement_evictions`) from its Valid (`v`) and Executed (`x`)
 * conditions' status, and whether it is decided (KubeFleet's `IsEvictionInTerminalState`).
 */
export function evictionOutcome(v: string, x: string): { result: "executed" | "refused" | "invalid" | "pending"; decided: boolean } {
  if (v === "False") return { result: "invalid", decided: true };
  if (x === "True") return { result: "executed", decided: true };
  if (x === "False") return { result: "refused", decided: true };
  return { result: "pending", decided: false };
}

/**
 * KubeFleet's `emitUpdateRunStatusMetric`: the labels and value (the condition's last transition,
 * epoch seconds) of a run's `fleet_workload_update_run_status_last_timestamp_seconds` series, from
 * its Succeeded condition, else Progressing, else Initialized, the first at the run's generation;
 * null when none is.
 */
export function updateRunSeries(
  namespace: string,
  name: string,
  generation: number,
  state: string,
  conditions: readonly { type: string; status: string; reason: string; observedGeneration?: number; lastTransitionTime: string }[],
): { labels: Labels; value: number } | null {
  for (const type of ["Succeeded", "Progressing", "Initialized"]) {
    const c = conditions.find((x) => x.type === type);
    if (!c || (c.observedGeneration !== undefined && c.observedGeneration !== generation)) continue;
    const failed = c.status === "False" && (c.reason === "UpdateRunFailed" || c.reason === "UpdateRunInitializedFailed" || c.reason === "UpdateRunStuck");
    const failureType = !failed ? "none" : c.reason === "UpdateRunStuck" ? "internal_error" : "user_error";
    return {
      labels: { namespace, name, state, condition: type, status: c.status, reason: c.reason, failureType },
      value: Date.parse(c.lastTransitionTime) / 1000,
    };
  }
  return null;
}

/** The `status` label values of ACM's add-on condition series, one series each (1 the current one, 0 the others). */
const ADDON_STATUSES = ["true", "false", "unknown"] as const;

/**
 * OCM's `policy_governance_info` value of a policy's `status.compliant` (its policymetrics
 * controller): 0 Compliant, 1 NonCompliant, -1 Pending or not reported yet.
 */
export function complianceValue(compliant: unknown): number {
  return compliant === "Compliant" ? 0 : compliant === "NonCompliant" ? 1 : -1;
}

/**
 * The labels of a policy's `policy_governance_info` series, as OCM's policymetrics controller
 * sets them: a root policy `type="root"`, its name and namespace and `cluster_namespace="<null>"`;
 * a replica (it carries the root-policy label) `type="propagated"`, the root's name and namespace
 * from its own name `<rootns>.<rootname>` and its cluster's namespace; null for a replica whose
 * name has no `.` (OCM shows none for it).
 */
export function policyLabels(namespace: string, name: string, replica: boolean): Labels | null {
  if (!replica) return { type: "root", policy: name, policy_namespace: namespace, cluster_namespace: "<null>" };
  const dot = name.indexOf(".");
  if (dot < 0) return null;
  return { type: "propagated", policy: name.slice(dot + 1), policy_namespace: name.slice(0, dot), cluster_namespace: namespace };
}

function cell(family: MetricFamily, labels: Labels, value: number): Cell {
  return { family: family.name, labels: labelsPart(family.labels, labels), values: [value] };
}

const str = (v: unknown): string => (typeof v === "string" ? v : v === null || v === undefined ? "" : String(v));
const num = (v: unknown): number => (typeof v === "number" ? v : Number(v) || 0);

/**
 * The fleet's gauges, as cells (src/metrics/exposition.ts), from one D1 batch: managed clusters
 * (count; by condition and status; by edge location and availability; by cluster set),
 * placements by PlacementSatisfied, ManifestWorks (count; by condition and status), and each
 * ManifestWorkReplicaSet's rollout summary, each Policy's compliance (OCM's
 * `policy_governance_info`, root and propagated; a disabled one shows none) and each
 * ManagedClusterAddOn's Available condition (ACM's `acm_managed_cluster_addon_status_condition`).
 * @throws errors of D1
 */
export async function fleetGauges(env: Env): Promise<Cell[]> {
  const rows = await storageOf(env).fleetGauges({
    clusters: resourceKey(ManagedClusterKind),
    placements: resourceKey(PlacementKind),
    works: resourceKey(ManifestWorkKind),
    replicaSets: resourceKey(ManifestWorkReplicaSetKind),
    policies: resourceKey(PolicyKind),
    addOns: resourceKey(ManagedClusterAddOnKind),
    updateRuns: [resourceKey(ClusterStagedUpdateRunKind), resourceKey(StagedUpdateRunKind)],
    approvals: [resourceKey(ClusterApprovalRequestKind), resourceKey(ApprovalRequestKind)],
    evictions: resourceKey(ClusterResourcePlacementEvictionKind),
    coloAnnotation: CLUSTER_COLO_ANNOTATION,
    rootPolicyLabel: ROOT_POLICY_LABEL,
  });
  const {
    clusters: clusterRows,
    sets,
    placements,
    workCount,
    worksByCondition,
    replicaSets,
    policies,
    addOns: addons,
    updateRuns: runs,
    approvals,
    evictions,
  } = rows;
  const out: Cell[] = [];
  let clusterCount = 0;
  const byCondition = new Map<string, number>();
  const byLocation = new Map<string, number>();
  for (const r of clusterRows) {
    const n = num(r.n);
    clusterCount += n;
    let available = "Unknown";
    for (const pair of str(r.sig) ? str(r.sig).split("\u001e") : []) {
      byCondition.set(pair, (byCondition.get(pair) ?? 0) + n);
      const [type, status] = pair.split("\u001f");
      if (type === "ManagedClusterConditionAvailable" && status) available = status;
    }
    const at = `${str(r.loc)}\u001f${available}`;
    byLocation.set(at, (byLocation.get(at) ?? 0) + n);
  }
  out.push(cell(GAUGES.clusterCount, {}, clusterCount));
  for (const [pair, n] of byCondition) {
    const [condition, status] = pair.split("\u001f");
    out.push(cell(GAUGES.clustersByCondition, { condition, status }, n));
  }
  for (const [at, n] of byLocation) {
    const [location, available] = at.split("\u001f");
    out.push(cell(GAUGES.clustersByLocation, { location, available }, n));
  }
  for (const r of sets) out.push(cell(GAUGES.clustersBySet, { clusterset: str(r.name) }, num(r.clusters)));
  for (const r of placements) out.push(cell(GAUGES.placementsBySatisfied, { status: str(r.s) || "Unknown", reason: str(r.r) }, num(r.n)));
  out.push(cell(GAUGES.workCount, {}, num(workCount[0]?.n)));
  for (const r of worksByCondition) out.push(cell(GAUGES.worksByCondition, { condition: str(r.t), status: str(r.s) }, num(r.n)));
  for (const r of replicaSets) {
    let summary: Record<string, unknown>;
    try {
      summary = (JSON.parse(str(r.summary) || "{}") as Record<string, unknown> | null) ?? {};
    } catch {
      summary = {};
    }
    const at = { namespace: str(r.ns), name: str(r.name) };
    for (const state of SUMMARY_STATES) out.push(cell(GAUGES.rolloutClusters, { ...at, state }, num(summary[state])));
    out.push(cell(GAUGES.rolloutComplete, at, r.rolled === "True" ? 1 : 0));
  }
  for (const r of policies) {
    const labels = policyLabels(str(r.ns), str(r.name), str(r.root) !== "");
    if (labels) out.push(cell(GAUGES.policyCompliance, labels, complianceValue(r.c)));
  }
  for (const r of addons) {
    // ACM's clusterlifecycle-state-metrics: the Available condition's status in lower case, Unknown without one.
    const current = (str(r.s) || "Unknown").toLowerCase();
    const at = { addon_name: str(r.name), managed_cluster_name: str(r.ns), condition: "Available" };
    for (const status of ADDON_STATUSES) out.push(cell(GAUGES.addonAvailable, { ...at, status }, status === current ? 1 : 0));
  }
  for (const r of runs) {
    let conds: Parameters<typeof updateRunSeries>[4] = [];
    try {
      conds = (JSON.parse(str(r.conds) || "[]") as typeof conds | null) ?? [];
    } catch {
      conds = [];
    }
    const series = updateRunSeries(str(r.ns), str(r.name), num(r.gen) || 1, str(r.state) || "Initialize", conds);
    if (series) out.push(cell(GAUGES.updateRunStatus, series.labels, series.value));
  }
  for (const r of approvals) out.push(cell(GAUGES.approvalRequests, { namespace: str(r.ns), approved: num(r.approved) ? "true" : "false" }, num(r.n)));
  const outcomes = new Map<string, number>([
    ["executed", 0],
    ["refused", 0],
    ["invalid", 0],
    ["pending", 0],
  ]);
  for (const r of evictions) {
    const { result, decided } = evictionOutcome(str(r.v), str(r.x));
    outcomes.set(result, outcomes.get(result)! + 1);
    const at = Date.parse(str(r.t));
    if (decided && Number.isFinite(at))
      out.push(cell(GAUGES.evictionComplete, { name: str(r.name), isCompleted: "true", isValid: result === "invalid" ? "false" : "true" }, at / 1000));
  }
  for (const [result, n] of outcomes) out.push(cell(GAUGES.evictions, { result }, n));
  return out;
}
