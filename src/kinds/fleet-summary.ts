/**
 * What a KubeFleet placement's status says, per cluster, in a few columns: the `flotilla
 * placement status` verb (agent/cli/commands/placement.ts) and the dashboard's placement page
 * (src/ui/app/resourceplacements.tsx) both show it. Reads the status the placement controller
 * writes (src/fleet/status.ts, KubeFleet's `placementStatuses[]`: per cluster the conditions
 * Scheduled, RolloutStarted, Overridden, WorkSynchronized, Applied, Available, each set only once
 * the one before is True, with `failedPlacements` and `driftedPlacements`). Pure; shared with the
 * CLI and the dashboard (agent/shared-modules.json, src/ui/app/shared-modules.json).
 */

/** A condition as a placement's status holds it (metav1.Condition, every field optional as read). */
export interface SummaryCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

/** KubeFleet's `ResourceIdentifier` of a selected object (`status.selectedResources[]`). */
export interface SelectedResource {
  group?: string;
  version: string;
  kind: string;
  name: string;
  namespace?: string;
  envelope?: { name: string; namespace?: string; type?: string };
}

/** One entry of `status.placementStatuses[]` as read (KubeFleet's `PerClusterPlacementStatus`). */
export interface PerClusterPlacementStatus {
  clusterName?: string;
  observedResourceIndex?: string;
  failedPlacements?: unknown[];
  driftedPlacements?: unknown[];
  conditions?: SummaryCondition[];
}

/** The per-cluster condition types in KubeFleet's order, Scheduled first. */
export const PER_CLUSTER_TYPES = ["Scheduled", "RolloutStarted", "Overridden", "WorkSynchronized", "Applied", "Available"] as const;

/** One cluster's row: each condition's status (`-` when not set yet), the counts, and why it is not done. */
export interface ClusterSummary {
  /** The cluster's name; null for a PickN or PickFixed slot no cluster fills (Scheduled False). */
  cluster: string | null;
  scheduled: string;
  rolloutStarted: string;
  workSynchronized: string;
  applied: string;
  available: string;
  /** `failedPlacements`: objects that failed to apply or are not available. */
  failed: number;
  /** `driftedPlacements`: objects changed on the cluster since they were applied. */
  drifted: number;
  /** The resource snapshot index the cluster's status is about (`observedResourceIndex`); null when none. */
  observedResourceIndex: string | null;
  /** The first condition that is not True, `<Type>: <reason>` (null when all are True). */
  waiting: string | null;
  /** That condition's message (null when all are True). */
  message: string | null;
}

/** The status of condition `type` in `conditions`, `-` when absent. */
function statusOf(conditions: readonly SummaryCondition[] | undefined, type: string): string {
  return conditions?.find((c) => c.type === type)?.status ?? "-";
}

/** One `placementStatuses[]` entry as a {@link ClusterSummary}. */
export function clusterSummary(s: PerClusterPlacementStatus): ClusterSummary {
  const conditions = s.conditions ?? [];
  let waiting: SummaryCondition | undefined;
  for (const type of PER_CLUSTER_TYPES) {
    const c = conditions.find((x) => x.type === type);
    if (!c) break;
    if (c.status !== "True") {
      waiting = c;
      break;
    }
  }
  return {
    cluster: s.clusterName || null,
    scheduled: statusOf(conditions, "Scheduled"),
    rolloutStarted: statusOf(conditions, "RolloutStarted"),
    workSynchronized: statusOf(conditions, "WorkSynchronized"),
    applied: statusOf(conditions, "Applied"),
    available: statusOf(conditions, "Available"),
    failed: s.failedPlacements?.length ?? 0,
    drifted: s.driftedPlacements?.length ?? 0,
    observedResourceIndex: s.observedResourceIndex ?? null,
    waiting: waiting ? `${waiting.type}: ${waiting.reason ?? waiting.status}` : null,
    message: waiting?.message ?? null,
  };
}

/** Whether a cluster's row is done: every condition set and True. */
export function clusterDone(c: ClusterSummary): boolean {
  return c.scheduled === "True" && c.rolloutStarted === "True" && c.workSynchronized === "True" && c.applied === "True" && c.available === "True";
}

/** A placement's status in short, as the CLI's `-o json` prints it and the dashboard shows it. */
export interface PlacementSummary {
  kind: string;
  name: string;
  /** The namespace of a ResourcePlacement (absent for a ClusterResourcePlacement). */
  namespace?: string;
  generation: number | null;
  /** `spec.policy.placementType` (PickAll, PickN, PickFixed). */
  placementType: string | null;
  /** PickN's `numberOfClusters`. */
  numberOfClusters: number | null;
  observedResourceIndex: string | null;
  /** The placement's own conditions, their `<Kind>` prefix removed from the type (`Scheduled`, `Available`, ...). */
  conditions: SummaryCondition[];
  selectedResources: SelectedResource[];
  clusters: ClusterSummary[];
}

/**
 * The summary of a ClusterResourcePlacement or ResourcePlacement object as the hub serves it
 * (v1 or v1beta1: the status is the same).
 */
export function placementSummary(p: {
  kind?: string;
  metadata: { name: string; namespace?: string; generation?: number };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}): PlacementSummary {
  const kind = p.kind ?? (p.metadata.namespace ? "ResourcePlacement" : "ClusterResourcePlacement");
  const status = (p.status ?? {}) as {
    observedResourceIndex?: string;
    conditions?: SummaryCondition[];
    selectedResources?: SelectedResource[];
    placementStatuses?: PerClusterPlacementStatus[];
  };
  const policy = (p.spec?.policy ?? {}) as { placementType?: string; numberOfClusters?: number };
  return {
    kind,
    name: p.metadata.name,
    ...(p.metadata.namespace ? { namespace: p.metadata.namespace } : {}),
    generation: p.metadata.generation ?? null,
    placementType: policy.placementType ?? null,
    numberOfClusters: policy.numberOfClusters ?? null,
    observedResourceIndex: status.observedResourceIndex ?? null,
    conditions: (status.conditions ?? []).map((c) => ({ ...c, type: c.type.startsWith(kind) ? c.type.slice(kind.length) : c.type })),
    selectedResources: status.selectedResources ?? [],
    clusters: (status.placementStatuses ?? []).map(clusterSummary),
  };
}

/** `group/version` of a selected resource (`version` alone for the core group). */
export function apiVersionOf(r: SelectedResource): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}
