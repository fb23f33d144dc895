/**
 * Every metric family `/metrics` shows (docs/metrics.md lists them with their meaning). Names
 * follow kube-apiserver's (`apiserver_request_total`, `apiserver_request_duration_seconds`),
 * OCM's placement controller's (`scheduling_scheduling_duration_seconds`), OCM's governance
 * policy propagator's (`policy_governance_info`) and the OCM/ACM state metrics'
 * (`acm_managed_cluster_count`, `acm_manifestwork_count`,
 * `acm_managed_cluster_addon_status_condition`) where such a metric exists; the rest are
 * `flotilla_*`.
 *
 * Counters and histograms are events counted as they happen (src/metrics/recorder.ts) and kept by
 * the metrics object (durable-objects/metrics.ts), so they survive isolate restarts; gauges are
 * counted from D1 at each scrape (src/metrics/fleet.ts).
 *
 * @module
 */
import type { MetricFamily } from "./exposition.ts";

/** kube-apiserver's `apiserver_request_duration_seconds` buckets (seconds). */
const APISERVER_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];

/** OCM's placement scheduling histogram buckets: ExponentialBuckets(1e-6, 10, 10) seconds. */
const SCHEDULING_BUCKETS = [1e-6, 1e-5, 1e-4, 0.001, 0.01, 0.1, 1, 10, 100, 1000];

/** The labels of kube-apiserver's request metrics (without `code`). */
const REQUEST_LABELS = ["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"] as const;

/** The counted families (counters and histograms), kept by the metrics object. */
export const COUNTED = {
  apiRequests: {
    name: "apiserver_request_total",
    type: "counter",
    help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
    labels: [...REQUEST_LABELS, "code"],
  },
  apiRequestDuration: {
    name: "apiserver_request_duration_seconds",
    type: "histogram",
    help: "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component (WATCH and CONNECT left out).",
    labels: REQUEST_LABELS,
    buckets: APISERVER_BUCKETS,
  },
  agentRequests: {
    name: "flotilla_agent_requests_total",
    type: "counter",
    help: "Requests of member cluster agents, by route (HTTP) or channel message type, transport and response code.",
    labels: ["route", "transport", "code"],
  },
  heartbeats: {
    name: "flotilla_agent_heartbeats_total",
    type: "counter",
    help: "Agent heartbeats that reached the hub (HTTP heartbeats and channel status messages; the channel's pings are answered by the runtime and not counted), by transport and result code.",
    labels: ["transport", "code"],
  },
  registrations: {
    name: "flotilla_cluster_registrations_total",
    type: "counter",
    help: "Cluster registrations (POST /agent/v1/register), by result code: 201 a new cluster, 200 a known one, 4xx refused.",
    labels: ["code"],
  },
  leasesExpired: {
    name: "flotilla_cluster_leases_expired_total",
    type: "counter",
    help: "Cluster leases that expired: the cluster's ManagedClusterConditionAvailable became Unknown (ManagedClusterLeaseUpdateStopped).",
    labels: [],
  },
  schedulerRuns: {
    name: "flotilla_scheduler_runs_total",
    type: "counter",
    help: "Runs of the placement scheduler, by result (success, error).",
    labels: ["result"],
  },
  schedulingDuration: {
    name: "scheduling_scheduling_duration_seconds",
    type: "histogram",
    help: "How long in seconds schedule a placement run (OCM's placement controller metric; one observation per scheduler run).",
    labels: ["name"],
    buckets: SCHEDULING_BUCKETS,
  },
  placementsScheduled: {
    name: "flotilla_scheduler_placements_scheduled_total",
    type: "counter",
    help: "Placements the scheduler scheduled, summed over its runs.",
    labels: [],
  },
  decisionsWritten: {
    name: "flotilla_scheduler_decisions_written_total",
    type: "counter",
    help: "PlacementDecision objects the scheduler wrote (created, updated or deleted).",
    labels: [],
  },
  webhookDeliveries: {
    name: "flotilla_webhook_deliveries_total",
    type: "counter",
    help: "Deliveries to WebhookReceivers (POST /hooks/{id}), by result (accepted, replayed, refused) and response code.",
    labels: ["result", "code"],
  },
} as const satisfies Record<string, MetricFamily>;

/** The gauges counted from D1 at each scrape (src/metrics/fleet.ts). */
export const GAUGES = {
  clusterCount: {
    name: "acm_managed_cluster_count",
    type: "gauge",
    help: "Managed cluster count.",
    labels: [],
  },
  clustersByCondition: {
    name: "flotilla_managed_clusters",
    type: "gauge",
    help: "Managed clusters by condition type and status (True, False, Unknown); a cluster without the condition is not counted under it.",
    labels: ["condition", "status"],
  },
  clustersBySet: {
    name: "flotilla_managed_clusters_by_clusterset",
    type: "gauge",
    help: "Managed clusters each ManagedClusterSet selects.",
    labels: ["clusterset"],
  },
  clustersByLocation: {
    name: "flotilla_managed_clusters_by_location",
    type: "gauge",
    help: "Managed clusters by the edge location (Cloudflare colo) their agent last reached (the flotilla.dev/colo annotation; empty when unknown), and by availability.",
    labels: ["location", "available"],
  },
  placementsBySatisfied: {
    name: "flotilla_placements",
    type: "gauge",
    help: "Placements by the status and reason of their PlacementSatisfied condition (status Unknown: no condition yet).",
    labels: ["status", "reason"],
  },
  workCount: {
    name: "acm_manifestwork_count",
    type: "gauge",
    help: "Manifestwork count.",
    labels: [],
  },
  worksByCondition: {
    name: "flotilla_manifestworks",
    type: "gauge",
    help: "ManifestWorks by condition type (Applied, Available, Progressing, Degraded, ...) and status.",
    labels: ["condition", "status"],
  },
  rolloutClusters: {
    name: "flotilla_manifestworkreplicaset_works",
    type: "gauge",
    help: "Rollout progress of each ManifestWorkReplicaSet: its status.summary counts (total, applied, available, progressing, degraded).",
    labels: ["namespace", "name", "state"],
  },
  rolloutComplete: {
    name: "flotilla_manifestworkreplicaset_rolled_out",
    type: "gauge",
    help: "1 when the ManifestWorkReplicaSet's PlacementRolledOut condition is True, else 0.",
    labels: ["namespace", "name"],
  },
  policyCompliance: {
    name: "policy_governance_info",
    type: "gauge",
    help: "The compliance status of the named policy. 0 == Compliant. 1 == NonCompliant. -1 == Unknown/Pending",
    labels: ["type", "policy", "policy_namespace", "cluster_namespace"],
  },
  updateRunStatus: {
    name: "fleet_workload_update_run_status_last_timestamp_seconds",
    type: "gauge",
    help: "Last update timestamp of update run status in seconds (KubeFleet's series: the run's Succeeded condition, else Progressing, else Initialized, at the run's generation).",
    labels: ["namespace", "name", "state", "condition", "status", "reason", "failureType"],
  },
  approvalRequests: {
    name: "flotilla_update_run_approval_requests",
    type: "gauge",
    help: "Approval requests of staged update runs (ClusterApprovalRequest and ApprovalRequest) by namespace (empty: cluster-scoped) and whether they are approved (true) or pending (false).",
    labels: ["namespace", "approved"],
  },
  evictionComplete: {
    name: "fleet_workload_eviction_complete",
    type: "gauge",
    help: "Last update timestamp of eviction complete status in seconds (KubeFleet's series: one per decided ClusterResourcePlacementEviction, isValid its Valid condition).",
    labels: ["name", "isCompleted", "isValid"],
  },
  evictions: {
    name: "flotilla_placement_evictions",
    type: "gauge",
    help: "ClusterResourcePlacementEvictions by outcome: executed (Executed True), refused (Executed False: a disruption budget or nothing placed yet), invalid (Valid False) or pending.",
    labels: ["result"],
  },
  addonAvailable: {
    name: "acm_managed_cluster_addon_status_condition",
    type: "gauge",
    help: "Managed cluster add-on status condition",
    labels: ["addon_name", "managed_cluster_name", "condition", "status"],
  },
} as const satisfies Record<string, MetricFamily>;

/** Every family, in the order `/metrics` shows them. */
export const ALL_FAMILIES: readonly MetricFamily[] = [...Object.values(COUNTED), ...Object.values(GAUGES)];
