/** Small display helpers: ages, conditions, quantities. */
import type { KubeObject } from "./api.ts";

/** A condition as the API carries it. */
export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

/** The condition of `type` on an object's status, if any. */
export function condition(o: KubeObject | null | undefined, type: string): Condition | undefined {
  return ((o?.status?.conditions ?? []) as Condition[]).find((c) => c.type === type);
}

/** A duration in seconds as kubectl prints ages: `45s`, `3m12s`, `5h`, `2d3h`. */
export function age(seconds: number): string {
  if (!Number.isFinite(seconds)) return "—";
  const s = Math.max(0, Math.floor(seconds));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ""}`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  return `${d}d${h % 24 ? `${h % 24}h` : ""}`;
}

/** Seconds from an RFC 3339 time to `nowMs` (epoch milliseconds); NaN when missing. */
export function since(time: string | undefined, nowMs: number): number {
  const t = time ? Date.parse(time) : NaN;
  return (nowMs - t) / 1000;
}

/** The well-known ManagedCluster conditions. */
export const MC = {
  Available: "ManagedClusterConditionAvailable",
  Joined: "ManagedClusterJoined",
  Accepted: "HubAcceptedManagedCluster",
} as const;

/** A ManagedCluster's state as the fleet view shows it: Available/NotAvailable/Unknown, or Pending (not accepted), Denied. */
export function clusterState(mc: KubeObject): "Available" | "Unavailable" | "Unknown" | "Pending" | "Deleting" {
  if (mc.metadata.deletionTimestamp) return "Deleting";
  if (mc.spec?.hubAcceptsClient !== true) return "Pending";
  const a = condition(mc, MC.Available);
  if (a?.status === "True") return "Available";
  if (a?.status === "False") return "Unavailable";
  return "Unknown";
}

/**
 * The label of the time a cluster's availability last changed, by its
 * `ManagedClusterConditionAvailable` status: "Available since" (True, or no condition yet),
 * "Unavailable since" (False), "Unknown since" (Unknown: its lease ran out).
 */
export function availabilitySince(status: string | undefined): string {
  return status === "False" ? "Unavailable since" : status === "Unknown" ? "Unknown since" : "Available since";
}

/** The `flotilla.dev/colo` annotation: the Cloudflare location the cluster's agent last reached. */
export const COLO_ANNOTATION = "flotilla.dev/colo";
/** OCM's exclusive cluster set label. */
export const CLUSTERSET_LABEL = "cluster.open-cluster-management.io/clusterset";

/** A taint as `key=value:Effect`. */
export function taintText(t: { key: string; value?: string; effect: string }): string {
  return `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`;
}

/** An event's newest time (events.k8s.io `series.lastObservedTime`, `eventTime`, core `lastTimestamp`, ...), epoch ms. */
export function eventTime(e: KubeObject): number {
  const t =
    e.series?.lastObservedTime ??
    e.deprecatedLastTimestamp ??
    e.lastTimestamp ??
    e.eventTime ??
    e.deprecatedFirstTimestamp ??
    e.firstTimestamp ??
    e.metadata.creationTimestamp;
  const ms = t ? Date.parse(t as string) : NaN;
  return Number.isFinite(ms) ? ms : 0;
}

/** An event's count (events.k8s.io `series.count`, `deprecatedCount`, core `count`), at least 1. */
export function eventCount(e: KubeObject): number {
  return (e.series?.count as number | undefined) ?? (e.deprecatedCount as number | undefined) ?? (e.count as number | undefined) ?? 1;
}

/** The object an event is about (events.k8s.io `regarding`, core `involvedObject`). */
export function eventRegarding(e: KubeObject): { kind?: string; name?: string; namespace?: string } {
  return (e.regarding ?? e.involvedObject ?? {}) as { kind?: string; name?: string; namespace?: string };
}

/**
 * A cluster's lease as the views show it: the last renewal (epoch milliseconds, and as served),
 * its duration (seconds), and when the page read it (epoch milliseconds, the browser's clock).
 */
export interface LeaseInfo {
  renewMs: number;
  renewTime: string;
  durationSeconds: number;
  readMs: number;
}

/** The Lease's name in each cluster's namespace (OCM's). */
const LEASE_NAME = "managed-cluster-lease";

/** The URL of cluster `cluster`'s Lease (`coordination.k8s.io/v1`, served by the hub: src/api/leases.ts). */
export function leasePath(cluster: string): string {
  return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(cluster)}/leases/${LEASE_NAME}`;
}

/** The {@link LeaseInfo} of a served Lease read at `readMs` (epoch milliseconds), or null when it carries no renewTime. */
export function leaseInfo(lease: KubeObject, readMs: number): LeaseInfo | null {
  const renewTime = lease.spec?.renewTime as string | undefined;
  const renewMs = renewTime ? Date.parse(renewTime) : NaN;
  if (!renewTime || !Number.isFinite(renewMs)) return null;
  return { renewMs, renewTime, durationSeconds: Number(lease.spec?.leaseDurationSeconds) || 60, readMs };
}

/**
 * Seconds from the lease's last renewal to `nowMs` (epoch milliseconds): the lease's age as far
 * as the page knows (a renewal since the read shows at the next read).
 */
export function leaseAgeSeconds(lease: LeaseInfo, nowMs: number): number {
  return Math.max(0, (nowMs - lease.renewMs) / 1000);
}

/**
 * Whether the lease was past OCM's default grace (5 x its duration, after which the hub marks the
 * cluster Available=Unknown) when the page read it: the page knows of no renewal since then.
 */
export function leaseLate(lease: LeaseInfo): boolean {
  return leaseAgeSeconds(lease, lease.readMs) >= 5 * lease.durationSeconds;
}

/** How a condition reads: healthy, a warning (in progress, unknown), or bad. */
export type Health = "ok" | "warn" | "bad";

/**
 * The condition types of negative polarity, where `True` is the unhealthy state and `False` the
 * healthy one, with how bad `True` is: OCM's (Placement `PlacementMisconfigured`, ManifestWork
 * and add-on `Degraded` and `Progressing`, ManagedClusterSet `ClusterSetEmpty`, ManagedCluster
 * `HubDeniedManagedCluster`, add-on `UnsupportedConfiguration`) and Kubernetes' (Node pressure,
 * Namespace deletion, workload `ReplicaFailure`, `Stalled`, `Failed`). Every other type is of
 * positive polarity (`True` is healthy: `Available`, `Applied`, `HubAcceptedManagedCluster`,
 * `PlacementSatisfied`, ...). The one table every badge of the dashboard reads.
 */
export const NEGATIVE_CONDITIONS: Readonly<Record<string, Health>> = {
  PlacementMisconfigured: "bad",
  Degraded: "bad",
  Progressing: "warn",
  ClusterSetEmpty: "warn",
  HubDeniedManagedCluster: "bad",
  UnsupportedConfiguration: "bad",
  MemoryPressure: "bad",
  DiskPressure: "bad",
  PIDPressure: "bad",
  NetworkUnavailable: "bad",
  NamespaceDeletionDiscoveryFailure: "bad",
  NamespaceDeletionGroupVersionParsingFailure: "bad",
  NamespaceDeletionContentFailure: "bad",
  NamespaceContentRemaining: "warn",
  NamespaceFinalizersRemaining: "warn",
  ReplicaFailure: "bad",
  Stalled: "bad",
  Failed: "bad",
};

/**
 * Reasons of a positive condition's `False` that mean "not yet", not "failed" (OCM's rollout and
 * work conditions; KubeFleet's placement blocked by its rolling update or still writing works).
 */
const IN_PROGRESS_REASONS = new Set(["Progressing", "Processing", "Pending", "RolloutNotStartedYet", "WorkNotSynchronizedYet"]);

/**
 * A condition's health by its type's polarity ({@link NEGATIVE_CONDITIONS}): `Unknown` (or any
 * other status) is a warning; a negative type is ok when `False`, its table's health when `True`;
 * a positive type is ok when `True`, bad when `False` (a warning when its reason says it is still
 * in progress).
 */
export function conditionHealth(c: { type: string; status: string; reason?: string }): Health {
  if (c.status !== "True" && c.status !== "False") return "warn";
  const negative = NEGATIVE_CONDITIONS[c.type];
  if (negative) return c.status === "True" ? negative : "ok";
  if (c.status === "True") return "ok";
  return c.reason && IN_PROGRESS_REASONS.has(c.reason) ? "warn" : "bad";
}
