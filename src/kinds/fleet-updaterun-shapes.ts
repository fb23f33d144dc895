/**
 * The shapes of KubeFleet's staged update runs and approval requests (kubefleet-dev/kubefleet
 * `apis/placement/v1beta1/stageupdate_types.go`; docs/kubefleet.md "Staged update runs"): a
 * strategy's stages, a run's spec and status, the labels a run puts on its approval requests,
 * which of those still wait, and the status patch that approves one, as KubeFleet's docs do with
 * kubectl (the `Approved` condition set True at the request's generation, on its status
 * subresource). Pure and free of the kinds' schemas (src/kinds/fleet-updaterun.ts has those), so
 * that the run controller (src/fleet/updaterun/), `flotilla approve`
 * (agent/cli/commands/approve.ts) and the dashboard (src/ui/app/updateruns.tsx) share one
 * definition.
 */
import type { LabelSelector } from "../k8s/labels.ts";
import type { Condition } from "../k8s/meta.ts";

/** A run's `spec.state`. */
export type UpdateRunState = "Initialize" | "Run" | "Stop";

/** A stage task (`StageTask`). `waitTime` is a Go duration string (`1h2m3.5s`). */
export interface StageTask {
  type: "TimedWait" | "Approval";
  waitTime?: string;
}

/** A stage of a strategy (`StageConfig`). */
export interface StageConfig {
  name: string;
  labelSelector?: LabelSelector;
  sortingLabelKey?: string;
  maxConcurrency?: number | string;
  afterStageTasks?: StageTask[];
  beforeStageTasks?: StageTask[];
}

/** A strategy's spec (`UpdateStrategySpec`). */
export interface UpdateStrategySpec {
  stages: StageConfig[];
}

/** A run's spec (`UpdateRunSpec`). */
export interface UpdateRunSpec {
  placementName: string;
  resourceSnapshotIndex?: string;
  stagedRolloutStrategyName: string;
  state?: UpdateRunState;
}

/** A cluster of a stage in a run's status (`ClusterUpdatingStatus`). */
export interface ClusterUpdatingStatus {
  clusterName: string;
  resourceOverrideSnapshots?: { name: string; namespace?: string }[];
  clusterResourceOverrideSnapshots?: string[];
  conditions?: Condition[];
}

/** A stage task's status (`StageTaskStatus`). */
export interface StageTaskStatus {
  type: StageTask["type"];
  approvalRequestName?: string;
  conditions?: Condition[];
}

/** A stage in a run's status (`StageUpdatingStatus`). */
export interface StageUpdatingStatus {
  stageName: string;
  clusters: ClusterUpdatingStatus[];
  afterStageTaskStatus?: StageTaskStatus[];
  beforeStageTaskStatus?: StageTaskStatus[];
  startTime?: string;
  endTime?: string;
  conditions?: Condition[];
}

/** A run's status (`UpdateRunStatus`). */
export interface UpdateRunStatus {
  policySnapshotIndexUsed?: string;
  policyObservedClusterCount?: number;
  resourceSnapshotIndexUsed?: string;
  appliedStrategy?: Record<string, unknown>;
  stagedUpdateStrategySnapshot?: UpdateStrategySpec;
  stagesStatus?: StageUpdatingStatus[];
  deletionStageStatus?: StageUpdatingStatus;
  conditions?: Condition[];
}

/** An approval request as any client reads it: the fields this module looks at. */
export interface ApprovalRequestLike {
  metadata: { name: string; generation?: number; labels?: Record<string, string> };
  spec?: unknown;
  status?: { conditions?: readonly Condition[] } | Record<string, unknown>;
}

const conditionsOf = (o: ApprovalRequestLike): readonly Condition[] => (o.status as { conditions?: readonly Condition[] } | undefined)?.conditions ?? [];

/** Label on an approval request: its run (KubeFleet's `TargetUpdateRunLabel`). */
export const TARGET_UPDATE_RUN_LABEL = "kubernetes-fleet.io/targetUpdateRun";
/** Label on an approval request: its stage (KubeFleet's `TargetUpdatingStageNameLabel`). */
export const TARGET_STAGE_LABEL = "kubernetes-fleet.io/targetUpdatingStage";
/** Label on an approval request: `beforeStage` or `afterStage` (KubeFleet's `TaskTypeLabel`). */
export const TASK_TYPE_LABEL = "kubernetes-fleet.io/taskType";
/** Label on an approval request: "true" (KubeFleet's `IsLatestUpdateRunApprovalLabel`). */
export const IS_LATEST_APPROVAL_LABEL = "kubernetes-fleet.io/isLatestUpdateRunApproval";

/** An approval request's spec (`ApprovalRequestSpec`): the run and the stage it gates. */
export interface ApprovalRequestSpec {
  parentStageRollout: string;
  targetStage: string;
}

/** The spec of an approval request as read (fields may be missing on a malformed object). */
export function approvalSpec(request: ApprovalRequestLike): Partial<ApprovalRequestSpec> {
  return (request.spec ?? {}) as Partial<ApprovalRequestSpec>;
}

/** True when the request's `Approved` condition is True (KubeFleet does not require its observedGeneration to match). */
export function isApproved(request: ApprovalRequestLike): boolean {
  return conditionsOf(request).some((c) => c.type === "Approved" && c.status === "True");
}

/**
 * The approval requests of `run` (by `spec.parentStageRollout`) among `requests` that are not yet
 * approved, in the order given.
 */
export function pendingApprovals<T extends ApprovalRequestLike>(requests: readonly T[], run: string): T[] {
  return requests.filter((a) => approvalSpec(a).parentStageRollout === run && !isApproved(a));
}

/** Who approves, and through what: the condition's message names both (`approved by alice with flotilla approve`). */
export interface Approver {
  /** The caller's user name as the hub authenticated it (a SelfSubjectReview); "" when unknown. */
  user: string;
  /** What the approval was made with, e.g. `flotilla approve` or `the Flotilla dashboard`. */
  via: string;
  /** The condition's reason (a CamelCase word, e.g. `ApprovedWithFlotilla`). */
  reason: string;
}

/**
 * The merge patch body for `request`'s status subresource that approves it: its conditions with
 * `Approved` (True, at the request's generation, `lastTransitionTime` from `nowMs`, milliseconds
 * since the epoch, to whole seconds as Kubernetes writes it) in place of any earlier one.
 */
export function approvalPatch(request: ApprovalRequestLike, who: Approver, nowMs: number): { status: { conditions: Condition[] } } {
  const approved: Condition = {
    type: "Approved",
    status: "True",
    reason: who.reason,
    message: who.user ? `approved by ${who.user} with ${who.via}` : `approved with ${who.via}`,
    lastTransitionTime: new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z"),
    observedGeneration: request.metadata.generation ?? 1,
  };
  const others = conditionsOf(request).filter((c) => c.type !== "Approved");
  return { status: { conditions: [...others, approved] } };
}
