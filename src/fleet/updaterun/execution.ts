/**
 * The staged update run's execution (KubeFleet's `pkg/controllers/updaterun` execution.go and
 * stop.go): the walk over the stages of an initialized run, up to `maxConcurrency` clusters at
 * once, its before- and after-stage tasks (Approval, TimedWait), stopping, and the deletion stage.
 * One reconcile's decisions are collected as {@link Effects} that the controller
 * (src/fleet/updaterun/controller.ts) commits with the run's status.
 */
import { racing } from "../../k8s/racing.ts";
import { findCondition, setCondition, type Condition, type KubeObject } from "../../k8s/meta.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import type { Env } from "../../env.ts";
import { FLEET_GROUP } from "../../kinds/fleet.ts";
import {
  IS_LATEST_APPROVAL_LABEL,
  TARGET_STAGE_LABEL,
  TARGET_UPDATE_RUN_LABEL,
  TASK_TYPE_LABEL,
  type ClusterUpdatingStatus,
  type StageTaskStatus,
  type StageUpdatingStatus,
  type UpdateRunSpec,
  type UpdateRunStatus,
} from "../../kinds/fleet-updaterun-shapes.ts";
import { durationMs, updateRunKindsOf } from "../../kinds/fleet-updaterun.ts";
import { scaledValue } from "../../kinds/fleet-validation.ts";
import { resourceSnapshotName } from "./gate.ts";
import type { UpdateRunRef } from "./wake.ts";
import { DELETE_STAGE_NAME, isFalse, isTrue, RunAborted, type NewCondition, type Placed } from "./initialization.ts";

/** KubeFleet's `clusterUpdatingWaitTime`: how soon a run looks again at clusters still updating (its bindings' changes wake it sooner). */
export const CLUSTER_UPDATING_RECHECK_MS = 15_000;
/** KubeFleet's `updateRunStuckThreshold`: a cluster updating longer is reported stuck. */
export const STUCK_THRESHOLD_MS = 5 * 60_000;

/** The reason of a cluster skipped because the placement no longer picks it (kubefleet#733). */
export const CLUSTER_SKIPPED_REASON = "ClusterUpdatingSkipped";

/** What one reconcile does besides its status: bindings to bind, approval requests to create or accept, events. */
export interface Effects {
  bind: { binding: KubeObject; cluster: string }[];
  events: { reason: string; message: string; type?: "Normal" | "Warning" }[];
  waitUntil?: number;
  recheckAt?: number;
}

/** One reconcile's context for the stage walk. */
export interface Walk {
  env: Env;
  ref: UpdateRunRef;
  run: KubeObject;
  status: UpdateRunStatus;
  generation: number;
  now: string;
  nowMs: number;
  placed: Placed;
  effects: Effects;
  state: "Initialize" | "Run" | "Stop";
}

export function cond(list: Condition[] | undefined, next: NewCondition, now: string): Condition[] {
  const out = list ?? [];
  setCondition(out, next, now);
  return out;
}

/**
 * An Approval task (KubeFleet's `handleStageApprovalTask`): creates its request, and when a person
 * set `Approved` True at the request's generation, marks it accepted and the task approved.
 * @returns whether the task is approved
 */
async function approvalTask(w: Walk, task: StageTaskStatus, stage: string, when: "beforeStage" | "afterStage"): Promise<boolean> {
  if (isTrue(task.conditions, "ApprovalRequestApproved")) return true;
  const rk = updateRunKindsOf(w.ref.namespace);
  const store = admittedStoreOf(w.env, rk.approval);
  const name = task.approvalRequestName!;
  let req = await store.get(w.ref.namespace, name);
  if (!req) {
    const body = {
      apiVersion: `${FLEET_GROUP}/v1beta1`,
      kind: rk.approval.kind,
      metadata: {
        name,
        ...(w.ref.namespace ? { namespace: w.ref.namespace } : {}),
        labels: { [TARGET_STAGE_LABEL]: stage, [TARGET_UPDATE_RUN_LABEL]: w.run.metadata.name, [TASK_TYPE_LABEL]: when, [IS_LATEST_APPROVAL_LABEL]: "true" },
      },
      spec: { parentStageRollout: w.run.metadata.name, targetStage: stage },
    };
    const r = await racing(() => store.write(w.ref.namespace, name, { verb: "create", body }));
    if (r === "lost" || r === null) return false;
    task.conditions = cond(
      task.conditions,
      {
        type: "ApprovalRequestCreated",
        status: "True",
        reason: "StageTaskApprovalRequestCreated",
        message: "ApprovalRequest object is created",
        observedGeneration: w.generation,
      },
      w.now,
    );
    w.effects.events.push({
      reason: "ApprovalRequestCreated",
      message: `Created approval request ${name} for the ${when === "beforeStage" ? "before" : "after"}-stage task of stage ${stage}`,
    });
    return false;
  }
  task.conditions = cond(
    task.conditions,
    {
      type: "ApprovalRequestCreated",
      status: "True",
      reason: "StageTaskApprovalRequestCreated",
      message: "ApprovalRequest object is created",
      observedGeneration: w.generation,
    },
    w.now,
  );
  const rs = req.spec as { parentStageRollout?: string; targetStage?: string };
  if (rs.targetStage !== stage || rs.parentStageRollout !== w.run.metadata.name)
    throw new RunAborted(
      `the approval request task \`${w.ref.namespace}/${name}\` is targeting update run \`${w.ref.namespace}/${rs.parentStageRollout}\` and stage \`${rs.targetStage}\`, want target update run \`${w.ref.namespace}/${w.run.metadata.name} and stage \`${stage}\``,
    );
  const gen = req.metadata.generation ?? 1;
  const conds = (req.status?.conditions ?? []) as Condition[];
  const approved = isTrue(conds, "Approved", gen);
  const accepted = isTrue(conds, "ApprovalAccepted", gen);
  if (!approved && !accepted) return false;
  if (approved && !accepted) {
    const next = structuredClone(conds);
    setCondition(
      next,
      {
        type: "ApprovalAccepted",
        status: "True",
        reason: "ApprovalRequestApprovalAccepted",
        message: "The approval request has been approved and cannot be reverted",
        observedGeneration: gen,
      },
      w.now,
    );
    const r = await racing(() =>
      store.write(
        w.ref.namespace,
        name,
        { verb: "update", subresource: "status", body: { ...req!, status: { ...(req!.status ?? {}), conditions: next } } },
        { known: req! },
      ),
    );
    if (r === "lost" || r === null) return false;
    req = r;
    w.effects.events.push({
      reason: "ApprovalRequestApproved",
      message: `Approval request ${name} of stage ${stage} was approved (${when === "beforeStage" ? "before" : "after"}-stage task)`,
    });
  }
  task.conditions = cond(
    task.conditions,
    {
      type: "ApprovalRequestApproved",
      status: "True",
      reason: "StageTaskApprovalRequestApproved",
      message: "The approval request has been approved",
      observedGeneration: w.generation,
    },
    w.now,
  );
  return true;
}

/** KubeFleet's `calculateMaxConcurrencyValue`: an integer, or a percentage of the stage's clusters rounded down; at least 1. */
export function maxConcurrencyOf(value: number | string | undefined, clusters: number): number {
  const v = scaledValue(value ?? 1, clusters, false) ?? 1;
  return Math.max(1, v);
}

/** Whether a binding is bound to the run's snapshot (KubeFleet's `isBindingSyncedWithClusterStatus`, on state and snapshot). */
function inSync(binding: KubeObject, snapshotName: string): boolean {
  const s = binding.spec as { state?: string; resourceSnapshotName?: string };
  return s.state === "Bound" && s.resourceSnapshotName === snapshotName;
}

/** The cluster's outcome from its binding (KubeFleet's `checkClusterUpdateResult`): done, failed, or neither yet. */
function bindingResult(binding: KubeObject): "done" | "failed" | "pending" {
  const conds = (binding.status?.conditions ?? []) as Condition[];
  if (isTrue(conds, "Available")) return "done";
  if (["Overridden", "WorkSynchronized", "Applied"].some((t) => isFalse(conds, t))) return "failed";
  return "pending";
}

/** Marks cluster `c` of the run's walk updated: `Succeeded` True, KubeFleet's reason and message. */
function succeeded(w: Walk, c: ClusterUpdatingStatus): void {
  c.conditions = cond(
    c.conditions,
    {
      type: "Succeeded",
      status: "True",
      reason: "ClusterUpdatingSucceeded",
      message: "Cluster update completed successfully",
      observedGeneration: w.generation,
    },
    w.now,
  );
}

function skipCluster(w: Walk, c: ClusterUpdatingStatus): void {
  const message = "The cluster is no longer picked by the placement; the run skips it";
  c.conditions = cond(c.conditions, { type: "Started", status: "True", reason: CLUSTER_SKIPPED_REASON, message, observedGeneration: w.generation }, w.now);
  c.conditions = cond(c.conditions, { type: "Succeeded", status: "True", reason: CLUSTER_SKIPPED_REASON, message, observedGeneration: w.generation }, w.now);
}

function runProgressing(w: Walk, status: "True" | "False" | "Unknown", reason: string, message: string): void {
  w.status.conditions = cond(w.status.conditions, { type: "Progressing", status, reason, message, observedGeneration: w.generation }, w.now);
}

export function stageCond(w: Walk, st: StageUpdatingStatus, type: string, status: "True" | "False" | "Unknown", reason: string, message: string): void {
  st.conditions = cond(st.conditions, { type, status, reason, message, observedGeneration: w.generation }, w.now);
}

/** The index of the stage a run is at (KubeFleet's `validateUpdateStagesStatus`): the first not Succeeded; the stages' count for the deletion stage. */
export function updatingStage(status: UpdateRunStatus): number {
  const stages = status.stagesStatus ?? [];
  for (let i = 0; i < stages.length; i++) {
    const st = stages[i]!;
    if (isFalse(st.conditions, "Succeeded"))
      throw new RunAborted(`the stage \`${st.stageName}\` has failed, err: ${findCondition(st.conditions, "Succeeded")?.message ?? ""}`);
    if (!isTrue(st.conditions, "Succeeded")) return i;
  }
  return stages.length;
}

/**
 * The clusters of stage `st` (KubeFleet's `executeUpdatingStage`, and `stopUpdatingStage` when
 * stopping: no cluster starts): binds the next ones, checks the updating ones.
 * @returns whether every cluster of the stage succeeded
 * @throws RunAborted when a cluster failed or its binding was taken by another run
 */
function walkClusters(w: Walk, st: StageUpdatingStatus, maxConcurrency: number, stopping: boolean): { finished: boolean; updating: number } {
  const snapshotName = resourceSnapshotName((w.run.spec as unknown as UpdateRunSpec).placementName, w.status.resourceSnapshotIndexUsed!);
  let finished = 0;
  let updating = 0;
  const stuck: string[] = [];
  for (let i = 0; i < st.clusters.length && (stopping || updating < maxConcurrency); i++) {
    const c = st.clusters[i]!;
    if (isTrue(c.conditions, "Succeeded")) {
      finished++;
      continue;
    }
    const started = isTrue(c.conditions, "Started");
    if (stopping && !started) continue;
    updating++;
    if (isFalse(c.conditions, "Succeeded")) throw new RunAborted(`the cluster \`${c.clusterName}\` in the stage ${st.stageName} has failed`);
    const binding = w.placed.scheduled.get(c.clusterName);
    if (!binding) {
      // kubefleet#733: the placement no longer picks it; the run goes on without it.
      skipCluster(w, c);
      finished++;
      updating--;
      continue;
    }
    if (!started) {
      const synced = inSync(binding, snapshotName);
      if (!synced) w.effects.bind.push({ binding, cluster: c.clusterName });
      c.conditions = cond(
        c.conditions,
        { type: "Started", status: "True", reason: "ClusterUpdatingStarted", message: "Cluster update started", observedGeneration: w.generation },
        w.now,
      );
      if (!findCondition(st.conditions, "Progressing") || findCondition(st.conditions, "Progressing")?.reason !== "StageUpdatingStarted") {
        st.startTime ??= w.now;
        if (findCondition(st.conditions, "Progressing")?.status !== "True")
          w.effects.events.push({ reason: "StageUpdatingStarted", message: `Stage ${st.stageName} started updating its clusters` });
        stageCond(w, st, "Progressing", "True", "StageUpdatingStarted", "Clusters in the stage started updating");
      }
      // Already bound to the snapshot (a run that left it there, a rollback to where it is): its
      // result counts at once (KubeFleet's `checkClusterUpdateResult` on a synced binding).
      if (synced && bindingResult(binding) === "done") {
        succeeded(w, c);
        finished++;
        updating--;
      }
      continue;
    }
    if (!inSync(binding, snapshotName)) {
      const message = `the binding of the updating cluster \`${c.clusterName}\` in the stage \`${st.stageName}\` is not up-to-date with the desired status, please check the status of binding \`${w.ref.namespace ? `${w.ref.namespace}/` : ""}${binding.metadata.name}\` and see if there is a concurrent updateRun referencing the same placement and updating the same cluster`;
      c.conditions = cond(
        c.conditions,
        { type: "Succeeded", status: "False", reason: "ClusterUpdatingFailed", message, observedGeneration: w.generation },
        w.now,
      );
      throw new RunAborted(message);
    }
    const result = bindingResult(binding);
    if (result === "done") {
      succeeded(w, c);
      finished++;
      updating--;
    } else if (result === "failed") {
      c.conditions = cond(
        c.conditions,
        { type: "Succeeded", status: "False", reason: "ClusterUpdatingFailed", message: "Cluster update failed", observedGeneration: w.generation },
        w.now,
      );
      throw new RunAborted(`the cluster updating encountered an error at stage \`${st.stageName}\`, updateRun := \`${w.run.metadata.name}\``);
    } else {
      const since = Date.parse(findCondition(c.conditions, "Started")!.lastTransitionTime);
      if (w.nowMs - since > STUCK_THRESHOLD_MS) stuck.push(c.clusterName);
    }
  }
  if (stuck.length > 0)
    runProgressing(
      w,
      "False",
      "UpdateRunStuck",
      `The updateRun is stuck waiting for ${stuck.length <= 3 ? stuck.join(", ") : `${stuck.slice(0, 3).join(", ")}...`} cluster(s) in stage ${st.stageName} to finish updating, please check placement status for potential errors`,
    );
  else if (w.state === "Run") runProgressing(w, "True", "UpdateRunProgressing", "The update run is making progress");
  return { finished: finished === st.clusters.length, updating };
}

/**
 * The after-stage tasks of a stage whose clusters are updated (KubeFleet's `checkAfterStageTasksStatus`).
 * @returns whether they all passed
 */
async function afterStageTasks(w: Walk, i: number, st: StageUpdatingStatus): Promise<boolean> {
  const stage = w.status.stagedUpdateStrategySnapshot!.stages[i]!;
  let passed = true;
  for (const [j, task] of (stage.afterStageTasks ?? []).entries()) {
    const ts = st.afterStageTaskStatus![j]!;
    if (task.type === "TimedWait") {
      const start = Date.parse(findCondition(st.conditions, "Progressing")!.lastTransitionTime);
      const end = start + durationMs(task.waitTime!);
      if (w.nowMs < end) {
        passed = false;
        w.effects.waitUntil = Math.min(w.effects.waitUntil ?? Infinity, end);
      } else {
        ts.conditions = cond(
          ts.conditions,
          { type: "WaitTimeElapsed", status: "True", reason: "AfterStageTaskWaitTimeElapsed", message: "Wait time elapsed", observedGeneration: w.generation },
          w.now,
        );
      }
    } else if (!(await approvalTask(w, ts, st.stageName, "afterStage"))) passed = false;
  }
  return passed;
}

/**
 * Executes the run from its current stage (KubeFleet's `execute`, or `stop`), stage after stage
 * while they complete within this reconcile.
 * @returns "succeeded" when every stage and the deletion stage are done, "stopped" when a stop completed
 */
export async function execute(w: Walk): Promise<"succeeded" | "stopped" | "going"> {
  const stopping = w.state === "Stop";
  if (stopping)
    runProgressing(
      w,
      "Unknown",
      "UpdateRunStopping",
      "The update run is the process of stopping, waiting for all the updating/deleting clusters to finish updating before completing the stop process",
    );
  else {
    const p = findCondition(w.status.conditions, "Progressing");
    if (!(p?.status === "False" && (p.reason === "UpdateRunWaiting" || p.reason === "UpdateRunStuck")))
      runProgressing(w, "True", "UpdateRunProgressing", "The update run is making progress");
  }
  const stages = w.status.stagesStatus ?? [];
  for (;;) {
    const i = updatingStage(w.status);
    if (i >= stages.length) break;
    const st = stages[i]!;
    if (st.clusters.length === 0) {
      if (stopping) break;
      st.startTime ??= w.now;
      st.endTime ??= w.now;
      stageCond(w, st, "Progressing", "False", "StageUpdatingSkippedNoClusters", "Stage skipped because it has no clusters");
      stageCond(w, st, "Succeeded", "True", "StageUpdatingSkippedNoClusters", "Stage skipped because it has no clusters");
      w.effects.events.push({ reason: "StageUpdatingSkippedNoClusters", message: `Stage ${st.stageName} has no clusters: skipped` });
      continue;
    }
    const config = w.status.stagedUpdateStrategySnapshot!.stages[i]!;
    if (stopping) {
      stageCond(
        w,
        st,
        "Progressing",
        "Unknown",
        "StageUpdatingStopping",
        "Waiting for all the updating clusters to finish updating before completing the stop process",
      );
      const { updating } = walkClusters(w, st, Infinity, true);
      if (updating > 0) {
        w.effects.recheckAt = w.nowMs + CLUSTER_UPDATING_RECHECK_MS;
        return "going";
      }
      stageCond(
        w,
        st,
        "Progressing",
        "False",
        "StageUpdatingStopped",
        "All the updating clusters have finished updating, the stage is now stopped, waiting to be resumed",
      );
      return "stopped";
    }
    if (config.beforeStageTasks?.length && !(await approvalTask(w, st.beforeStageTaskStatus![0]!, st.stageName, "beforeStage"))) {
      stageCond(w, st, "Progressing", "False", "StageUpdatingWaiting", "Not all before-stage tasks are completed, waiting for approval");
      runProgressing(w, "False", "UpdateRunWaiting", `The updateRun is waiting for before-stage tasks in stage ${st.stageName} to complete`);
      return "going";
    }
    const { finished } = walkClusters(w, st, maxConcurrencyOf(config.maxConcurrency, st.clusters.length), false);
    if (!finished) {
      w.effects.recheckAt = w.nowMs + CLUSTER_UPDATING_RECHECK_MS;
      return "going";
    }
    runProgressing(w, "False", "UpdateRunWaiting", `The updateRun is waiting for after-stage tasks in stage ${st.stageName} to complete`);
    stageCond(w, st, "Progressing", "False", "StageUpdatingWaiting", "All clusters in the stage are updated, waiting for after-stage tasks to complete");
    if (!(await afterStageTasks(w, i, st))) return "going";
    runProgressing(w, "True", "UpdateRunProgressing", "The update run is making progress");
    st.endTime ??= w.now;
    stageCond(w, st, "Progressing", "False", "StageUpdatingSucceeded", "All clusters in the stage are updated and after-stage tasks are completed");
    stageCond(w, st, "Succeeded", "True", "StageUpdatingSucceeded", "Stage update completed successfully");
    w.effects.events.push({ reason: "StageUpdatingSucceeded", message: `Stage ${st.stageName} completed: its ${st.clusters.length} cluster(s) are updated` });
  }
  // The deletion stage (KubeFleet's `executeDeleteStage`): the placement removes the works of the
  // clusters it no longer picks; a cluster is done once its binding is gone.
  const del = (w.status.deletionStageStatus ??= { stageName: DELETE_STAGE_NAME, clusters: [] });
  if (stopping) {
    stageCond(
      w,
      del,
      "Progressing",
      "False",
      "StageUpdatingStopped",
      "All the updating clusters have finished updating, the stage is now stopped, waiting to be resumed",
    );
    return "stopped";
  }
  del.startTime ??= w.now;
  stageCond(w, del, "Progressing", "True", "StageUpdatingStarted", "Clusters in the stage started updating");
  let left = 0;
  for (const c of del.clusters) {
    c.conditions = cond(
      c.conditions,
      { type: "Started", status: "True", reason: "ClusterUpdatingStarted", message: "Cluster update started", observedGeneration: w.generation },
      w.now,
    );
    if (w.placed.toDelete.has(c.clusterName)) left++;
    else
      c.conditions = cond(
        c.conditions,
        {
          type: "Succeeded",
          status: "True",
          reason: "ClusterUpdatingSucceeded",
          message: "Cluster update completed successfully",
          observedGeneration: w.generation,
        },
        w.now,
      );
  }
  if (left > 0) {
    w.effects.recheckAt = w.nowMs + CLUSTER_UPDATING_RECHECK_MS;
    return "going";
  }
  del.endTime ??= w.now;
  stageCond(w, del, "Progressing", "False", "StageUpdatingSucceeded", "All clusters in the stage are updated and after-stage tasks are completed");
  stageCond(w, del, "Succeeded", "True", "StageUpdatingSucceeded", "Stage update completed successfully");
  return "succeeded";
}
