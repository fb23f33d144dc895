/**
 * The staged update run controller: KubeFleet's `pkg/controllers/updaterun` (controller.go,
 * initialization.go, validation.go, execution.go, stop.go) on Flotilla's placements
 * (docs/kubefleet.md "Staged update runs"). One reconcile per run, serialised in its Durable
 * Object (`updaterun:<namespace>/<name>`, src/fleet/updaterun/wake.ts).
 *
 * - **Initialize** (a run not yet Initialized): the placement must exist with `strategy.type:
 *   External`, its latest policy snapshot be scheduled; the clusters it picked (its bindings with
 *   that snapshot) go into the strategy's stages by each stage's label selector over the
 *   ManagedClusters' labels (a cluster in two stages, or in none, fails it), ordered by the
 *   integer of `sortingLabelKey` then by name; the clusters it no longer picks (Unscheduled
 *   bindings) into the deletion stage; the resource snapshot is `resourceSnapshotIndex`'s (empty:
 *   the latest). The outcome is kept in the status (`stagesStatus`, the strategy's snapshot, the
 *   indexes used): later changes of the strategy do not move the run.
 * - **Run**: stage after stage, up to `maxConcurrency` clusters at once: a cluster starts when its
 *   binding is bound to the run's snapshot (the placement controller then renders its works from
 *   it: src/fleet/updaterun/gate.ts) and succeeds when its binding is Available; a before-stage
 *   Approval holds the stage until its approval request is approved, after-stage tasks (TimedWait,
 *   Approval) hold the next one. Each approval request is created when its stage reaches it and
 *   approved by setting its `Approved` condition True at its generation on the status subresource
 *   (kubectl, or `flotilla approve`); the run then sets `ApprovalAccepted`.
 * - **Stop**: no cluster starts; the run is Stopped once the clusters that started have finished;
 *   Run again resumes where it stopped.
 * - A cluster that fails to apply aborts the run (Succeeded False), as a concurrent run that
 *   rebinds one of its clusters does.
 * - **Membership** (kubefleet#733: a run never stalls on it): clusters the placement picks after
 *   initialization are not in the run (their bindings stay Scheduled until a later run); a cluster
 *   of the run the placement no longer picks is skipped (Started and Succeeded True, reason
 *   `ClusterUpdatingSkipped`) and the stage goes on.
 *
 * Events on the run (reporting controller `updaterun-controller`): `UpdateRunInitialized`,
 * `UpdateRunInitializationFailed`, `StageUpdatingStarted`, `StageUpdatingSucceeded`,
 * `StageUpdatingSkippedNoClusters`, `ApprovalRequestCreated`, `ApprovalRequestApproved`,
 * `UpdateRunStopped`, `UpdateRunFailed` (an abort), `UpdateRunSucceeded`.
 */
import { canonicalJson as canonical } from "../../k8s/canonical-json.ts";
import { deepEqual } from "../../k8s/fieldmanager.ts";
import { racing } from "../../k8s/racing.ts";
import { matchesLabelSelector, type LabelSelectorInput } from "../../k8s/labels.ts";
import { findCondition, setCondition, type Condition, type KubeObject } from "../../k8s/meta.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import type { Env } from "../../env.ts";
import { recordEvents, type EventSpec } from "../../events/record.ts";
import {
  ClusterResourceBindingKind,
  ClusterResourceSnapshotKind,
  ClusterSchedulingPolicySnapshotKind,
  FLEET_GROUP,
  IS_LATEST_SNAPSHOT_LABEL,
  NUMBER_OF_CLUSTERS_ANNOTATION,
  PLACEMENT_TRACKING_LABEL,
  POLICY_INDEX_LABEL,
  RESOURCE_INDEX_LABEL,
  ResourceBindingKind,
  ResourceSnapshotKind,
  SchedulingPolicySnapshotKind,
} from "../../kinds/fleet.ts";
import { FLEET_PLACEMENT_KINDS } from "../../kinds/index.ts";
import { ManagedClusterKind } from "../../kinds/managedcluster.ts";
import {
  IS_LATEST_APPROVAL_LABEL,
  TARGET_STAGE_LABEL,
  TARGET_UPDATE_RUN_LABEL,
  TASK_TYPE_LABEL,
  type ClusterUpdatingStatus,
  type StageConfig,
  type StageTaskStatus,
  type StageUpdatingStatus,
  type UpdateRunSpec,
  type UpdateRunStatus,
  type UpdateStrategySpec,
} from "../../kinds/fleet-updaterun-shapes.ts";
import { durationMs, UPDATE_RUN_FINALIZER, updateRunKindsOf } from "../../kinds/fleet-updaterun.ts";
import { scaledValue } from "../../kinds/fleet-validation.ts";
import { resourceSnapshotName } from "./gate.ts";
import type { UpdateRunRef } from "./wake.ts";

/** The outcome of a reconcile: `rerun` after a lost write race, `gone` when the run is gone, `waitUntil` a TimedWait's end, `recheckAt` a later look (epoch ms). */
export interface UpdateRunOutcome {
  rerun?: boolean;
  gone?: boolean;
  recheckAt?: number;
  /** When a TimedWait ends (the run's `updaterun-wait` timer: src/controllers.ts). */
  waitUntil?: number;
}

/** KubeFleet's `clusterUpdatingWaitTime`: how soon a run looks again at clusters still updating (its bindings' changes wake it sooner). */
export const CLUSTER_UPDATING_RECHECK_MS = 15_000;
/** KubeFleet's `updateRunStuckThreshold`: a cluster updating longer is reported stuck. */
export const STUCK_THRESHOLD_MS = 5 * 60_000;
/** The deletion stage's name (KubeFleet's `UpdateRunDeleteStageName`). */
export const DELETE_STAGE_NAME = "kubernetes-fleet.io/deleteStage";
/** The Events' reporting controller. */
const REPORTER = "updaterun-controller";
/** The reason of a cluster skipped because the placement no longer picks it (kubefleet#733). */
export const CLUSTER_SKIPPED_REASON = "ClusterUpdatingSkipped";

/** KubeFleet's `errStagedUpdatedAborted` / `errValidationFailed`: a run that cannot go on. */
export class RunAborted extends Error {}

const stamp = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
type NewCondition = Omit<Condition, "lastTransitionTime">;

/** The approval request names of a stage (KubeFleet's `BeforeStageApprovalTaskNameFmt`, `AfterStageApprovalTaskNameFmt`). */
export function approvalRequestName(run: string, stage: string, when: "before" | "after"): string {
  return `${run}-${when}-${stage}`;
}

function kindsOfPlacement(namespace: string) {
  const cluster = namespace === "";
  return {
    placement: cluster ? FLEET_PLACEMENT_KINDS.crp : FLEET_PLACEMENT_KINDS.rp,
    binding: cluster ? ClusterResourceBindingKind : ResourceBindingKind,
    policySnapshot: cluster ? ClusterSchedulingPolicySnapshotKind : SchedulingPolicySnapshotKind,
    resourceSnapshot: cluster ? ClusterResourceSnapshotKind : ResourceSnapshotKind,
  };
}

const isTrue = (conds: Condition[] | undefined, type: string, generation?: number) => {
  const c = findCondition(conds, type);
  return c?.status === "True" && (generation === undefined || c.observedGeneration === undefined || c.observedGeneration === generation);
};
const isFalse = (conds: Condition[] | undefined, type: string) => findCondition(conds, type)?.status === "False";

/** What a reconcile reads of the placement: its bindings by cluster (scheduled and to be deleted), its latest policy snapshot's index. */
interface Placed {
  placement: KubeObject;
  scheduled: Map<string, KubeObject>;
  toDelete: Map<string, KubeObject>;
  policyIndex: string;
  clusterCount: number;
}

/** The placement's state as a run sees it (KubeFleet's `validatePlacement`, `determinePolicySnapshot`, `collectScheduledClusters`). */
async function readPlacement(env: Env, ns: string, spec: UpdateRunSpec): Promise<Placed> {
  const pk = kindsOfPlacement(ns);
  const placement = await admittedStoreOf(env, pk.placement).get(ns, spec.placementName);
  if (!placement || placement.metadata.deletionTimestamp) throw new RunAborted("parent placement not found");
  if ((placement.spec as { strategy?: { type?: string } } | undefined)?.strategy?.type !== "External")
    throw new RunAborted(
      `parent placement \`${ns ? `${ns}/` : ""}${spec.placementName}\` does not have an external rollout strategy, current strategy: ${(placement.spec as { strategy?: { type?: string } }).strategy?.type ?? "RollingUpdate"}`,
    );
  const byTracking = {
    index: { key: PLACEMENT_TRACKING_LABEL, values: [spec.placementName] },
    filter: (o: KubeObject) => o.metadata.labels?.[PLACEMENT_TRACKING_LABEL] === spec.placementName,
  };
  const policies = (await admittedStoreOf(env, pk.policySnapshot).listPage(ns || undefined, byTracking)).items;
  const latest = policies.find((p) => p.metadata.labels?.[IS_LATEST_SNAPSHOT_LABEL] === "true");
  if (!latest) throw new RunAborted(`no latest policy snapshot associated with placement \`${spec.placementName}\``);
  const policyIndex = latest.metadata.labels?.[POLICY_INDEX_LABEL] ?? "";
  const policy = (latest.spec as { policy?: { placementType?: string; clusterNames?: string[] } } | undefined)?.policy;
  const clusterCount =
    policy?.placementType === "PickN"
      ? Number(latest.metadata.annotations?.[NUMBER_OF_CLUSTERS_ANNOTATION] ?? "0")
      : policy?.placementType === "PickFixed"
        ? (policy.clusterNames ?? []).length
        : -1;
  if (!isTrue(latest.status?.conditions as Condition[] | undefined, "Scheduled"))
    throw new RunAborted(`policy snapshot \`${latest.metadata.name}\` not fully scheduled yet`);
  const bindings = (await admittedStoreOf(env, pk.binding).listPage(ns || undefined, byTracking)).items;
  const scheduled = new Map<string, KubeObject>();
  const toDelete = new Map<string, KubeObject>();
  for (const b of bindings) {
    const s = b.spec as { state: string; targetCluster: string };
    if (s.state === "Unscheduled") toDelete.set(s.targetCluster, b);
    else scheduled.set(s.targetCluster, b);
  }
  return { placement, scheduled, toDelete, policyIndex, clusterCount };
}

/** Orders a stage's clusters: by the integer of `sortingLabelKey` when set, then by name (KubeFleet's `computeRunStageStatus`). */
function sortStage(stage: StageConfig, clusters: KubeObject[]): KubeObject[] {
  const key = stage.sortingLabelKey;
  return [...clusters].sort((a, b) => {
    if (key) {
      const d = Number(a.metadata.labels?.[key]) - Number(b.metadata.labels?.[key]);
      if (d !== 0) return d;
    }
    return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
  });
}

/** KubeFleet's `validateBeforeStageTask` / `validateAfterStageTask`. */
function stageTaskErrors(stage: StageConfig): { before?: string; after?: string } {
  const out: { before?: string; after?: string } = {};
  const before = stage.beforeStageTasks ?? [];
  if (before.length > 1) out.before = "beforeStageTasks can have at most one task";
  else
    before.forEach((t, i) => {
      if (t.type !== "Approval") out.before = `task ${i} of type ${t.type} is not allowed in beforeStageTasks, allowed type: Approval`;
      else if (t.waitTime !== undefined) out.before = `task ${i} of type Approval cannot have wait duration set`;
    });
  const after = stage.afterStageTasks ?? [];
  if (after.length === 2 && after[0]!.type === after[1]!.type) out.after = `afterStageTasks cannot have two tasks of the same type: ${after[0]!.type}`;
  else
    after.forEach((t, i) => {
      if (t.type === "TimedWait") {
        if (t.waitTime === undefined) out.after = `task ${i} of type TimedWait has wait duration set to nil`;
        else if (!(durationMs(t.waitTime) > 0)) out.after = `task ${i} of type TimedWait has wait duration <= 0`;
      }
    });
  return out;
}

/**
 * KubeFleet's `initialize`: computes the stages into `status` (mutated).
 * @throws RunAborted with KubeFleet's message when the run cannot start
 */
async function initialize(env: Env, ref: UpdateRunRef, run: KubeObject, status: UpdateRunStatus, placed: Placed): Promise<void> {
  const spec = run.spec as unknown as UpdateRunSpec;
  const rk = updateRunKindsOf(ref.namespace);
  const strategyKey = ref.namespace ? `${ref.namespace}/${spec.stagedRolloutStrategyName}` : spec.stagedRolloutStrategyName;
  if (placed.clusterCount !== -1 && placed.scheduled.size !== placed.clusterCount)
    throw new RunAborted(`the number of selected bindings ${placed.scheduled.size} is not equal to the observed cluster count ${placed.clusterCount}`);
  if (placed.scheduled.size === 0 && placed.toDelete.size === 0)
    throw new RunAborted("no scheduled or to-be-deleted bindings found for the latest policy snapshot");
  const strategy = await admittedStoreOf(env, rk.strategy).get(ref.namespace, spec.stagedRolloutStrategyName);
  if (!strategy) throw new RunAborted(`referenced updateStrategy not found: \`${strategyKey}\``);
  const stages = structuredClone(((strategy.spec ?? {}) as unknown as UpdateStrategySpec).stages ?? []);
  const clusters = (await admittedStoreOf(env, ManagedClusterKind).list()).items.filter((c) => placed.scheduled.has(c.metadata.name));
  const seen = new Set<string>();
  const stagesStatus: StageUpdatingStatus[] = [];
  for (const stage of stages) {
    const errs = stageTaskErrors(stage);
    if (errs.before) throw new RunAborted(`the before stage tasks are invalid, updateStrategy: \`${strategyKey}\`, stage: ${stage.name}, err: ${errs.before}`);
    if (errs.after) throw new RunAborted(`the after stage tasks are invalid, updateStrategy: \`${strategyKey}\`, stage: ${stage.name}, err: ${errs.after}`);
    const members: KubeObject[] = [];
    for (const c of clusters) {
      const labels = { ...(c.metadata.labels ?? {}), "kubernetes-fleet.io/member-cluster-name": c.metadata.name };
      if (!matchesLabelSelector((stage.labelSelector ?? {}) as LabelSelectorInput, labels)) continue;
      if (seen.has(c.metadata.name)) throw new RunAborted(`cluster \`${c.metadata.name}\` appears in more than one stages`);
      if (stage.sortingLabelKey !== undefined && !/^[+-]?[0-9]+$/.test(c.metadata.labels?.[stage.sortingLabelKey] ?? ""))
        throw new RunAborted(
          `the sorting label \`${stage.sortingLabelKey}:${c.metadata.labels?.[stage.sortingLabelKey] ?? ""}\` on cluster \`${c.metadata.name}\` is not valid: strconv.Atoi: parsing "${c.metadata.labels?.[stage.sortingLabelKey] ?? ""}": invalid syntax`,
        );
      seen.add(c.metadata.name);
      members.push(c);
    }
    const st: StageUpdatingStatus = { stageName: stage.name, clusters: sortStage(stage, members).map((c) => ({ clusterName: c.metadata.name })) };
    if (stage.beforeStageTasks?.length)
      st.beforeStageTaskStatus = stage.beforeStageTasks.map((t) => ({
        type: t.type,
        approvalRequestName: approvalRequestName(run.metadata.name, stage.name, "before"),
      }));
    if (stage.afterStageTasks?.length)
      st.afterStageTaskStatus = stage.afterStageTasks.map((t) =>
        t.type === "Approval" ? { type: t.type, approvalRequestName: approvalRequestName(run.metadata.name, stage.name, "after") } : { type: t.type },
      );
    stagesStatus.push(st);
  }
  const missing = [...placed.scheduled.keys()].filter((c) => !seen.has(c)).sort();
  if (missing.length > 0)
    throw new RunAborted(`some clusters are not placed in any stage, total ${missing.length}, showing up to 10: ${missing.slice(0, 10).join(", ")}`);
  // The resource snapshot: the index asked for, else the latest.
  const rsStore = admittedStoreOf(env, kindsOfPlacement(ref.namespace).resourceSnapshot);
  let index = spec.resourceSnapshotIndex ?? "";
  if (index !== "") {
    if (!/^(0|[1-9][0-9]*)$/.test(index)) throw new RunAborted(`invalid resource snapshot index \`${index}\` provided, expected an integer >= 0`);
    if (!(await rsStore.get(ref.namespace, resourceSnapshotName(spec.placementName, index))))
      throw new RunAborted(
        `no resourceSnapshots with index \`${index}\` found for placement \`${ref.namespace ? `${ref.namespace}/` : ""}${spec.placementName}\``,
      );
  } else {
    const snaps = (
      await rsStore.listPage(ref.namespace || undefined, {
        index: { key: PLACEMENT_TRACKING_LABEL, values: [spec.placementName] },
        filter: (o) => o.metadata.labels?.[PLACEMENT_TRACKING_LABEL] === spec.placementName && o.metadata.labels?.[IS_LATEST_SNAPSHOT_LABEL] === "true",
      })
    ).items;
    if (snaps.length === 0) throw new RunAborted(`no master resourceSnapshot found for placement ${spec.placementName}`);
    index = snaps[0]!.metadata.labels?.[RESOURCE_INDEX_LABEL] ?? "0";
  }
  status.policySnapshotIndexUsed = placed.policyIndex;
  status.policyObservedClusterCount = placed.clusterCount;
  status.resourceSnapshotIndexUsed = index;
  status.appliedStrategy = structuredClone(
    ((placed.placement.spec as { strategy?: { applyStrategy?: Record<string, unknown> } }).strategy?.applyStrategy ?? {}) as Record<string, unknown>,
  );
  status.stagedUpdateStrategySnapshot = { stages };
  status.stagesStatus = stagesStatus;
  status.deletionStageStatus = { stageName: DELETE_STAGE_NAME, clusters: [...placed.toDelete.keys()].sort().map((clusterName) => ({ clusterName })) };
}

/** Sets every condition's observedGeneration to `generation` (KubeFleet's `updateAllStatusConditionsGeneration`: a state change keeps what the run did). */
function bumpGenerations(status: UpdateRunStatus, generation: number): void {
  const bump = (cs: Condition[] | undefined) => cs?.forEach((c) => (c.observedGeneration = generation));
  bump(status.conditions);
  for (const st of [...(status.stagesStatus ?? []), ...(status.deletionStageStatus ? [status.deletionStageStatus] : [])]) {
    bump(st.conditions);
    st.clusters.forEach((c) => bump(c.conditions));
    st.beforeStageTaskStatus?.forEach((t) => bump(t.conditions));
    st.afterStageTaskStatus?.forEach((t) => bump(t.conditions));
  }
}

/** What one reconcile does besides its status: bindings to bind, approval requests to create or accept, events. */
interface Effects {
  bind: { binding: KubeObject; cluster: string }[];
  events: { reason: string; message: string; type?: "Normal" | "Warning" }[];
  waitUntil?: number;
  recheckAt?: number;
}

/** One reconcile's context for the stage walk. */
interface Walk {
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

function cond(list: Condition[] | undefined, next: NewCondition, now: string): Condition[] {
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

function stageCond(w: Walk, st: StageUpdatingStatus, type: string, status: "True" | "False" | "Unknown", reason: string, message: string): void {
  st.conditions = cond(st.conditions, { type, status, reason, message, observedGeneration: w.generation }, w.now);
}

/** The index of the stage a run is at (KubeFleet's `validateUpdateStagesStatus`): the first not Succeeded; the stages' count for the deletion stage. */
function updatingStage(status: UpdateRunStatus): number {
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
async function execute(w: Walk): Promise<"succeeded" | "stopped" | "going"> {
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

/** The run as its Events name it. */
function runRef(ref: UpdateRunRef, run: KubeObject) {
  return {
    kind: updateRunKindsOf(ref.namespace).run.kind,
    apiVersion: `${FLEET_GROUP}/v1beta1`,
    name: ref.name,
    namespace: ref.namespace,
    uid: run.metadata.uid,
  };
}

/**
 * Reconciles run `ref` at `nowMs` (epoch ms). Idempotent: each reconcile reads the run, its
 * placement's bindings and snapshots, and goes on from the stage the status says.
 * @throws errors of D1 (the run's object retries); lost write races are reported as `rerun`
 */
export async function runUpdateRun(env: Env, ref: UpdateRunRef, nowMs: number): Promise<UpdateRunOutcome> {
  const rk = updateRunKindsOf(ref.namespace);
  const store = admittedStoreOf(env, rk.run);
  let run = await store.get(ref.namespace, ref.name);
  if (!run) return { gone: true };
  if (run.metadata.deletionTimestamp) return finalize(env, ref, run);
  if (!(run.metadata.finalizers ?? []).includes(UPDATE_RUN_FINALIZER)) {
    const body = { ...run, metadata: { ...run.metadata, finalizers: [...(run.metadata.finalizers ?? []), UPDATE_RUN_FINALIZER] } };
    const r = await racing(() => store.write(ref.namespace, ref.name, { verb: "update", body }, { known: run! }));
    if (r === "lost" || r === null) return { rerun: true };
    run = r;
  }
  const spec = run.spec as unknown as UpdateRunSpec;
  const generation = run.metadata.generation ?? 1;
  const now = stamp(nowMs);
  const status = structuredClone((run.status ?? {}) as UpdateRunStatus);
  bumpGenerations(status, generation);
  const effects: Effects = { bind: [], events: [] };
  const state = spec.state ?? "Initialize";
  const init = findCondition(status.conditions, "Initialized");
  if (init?.status === "False") return {};
  const done = findCondition(status.conditions, "Succeeded");
  if (done && done.status !== "Unknown") return {};
  let outcome: UpdateRunOutcome = {};
  let placed: Placed;
  try {
    placed = await readPlacement(env, ref.namespace, spec);
    if (init?.status !== "True") {
      await initialize(env, ref, run, status, placed);
      status.conditions = cond(
        status.conditions,
        {
          type: "Initialized",
          status: "True",
          reason: "UpdateRunInitializedSuccessfully",
          message: "The UpdateRun initialized successfully",
          observedGeneration: generation,
        },
        now,
      );
      effects.events.push({
        reason: "UpdateRunInitialized",
        message: `Initialized: ${status.stagesStatus!.length} stage(s), resource snapshot index ${status.resourceSnapshotIndexUsed}`,
      });
    } else if (status.policySnapshotIndexUsed !== placed.policyIndex) {
      throw new RunAborted(
        `the policy snapshot index used in the updateRun is outdated, latest: ${placed.policyIndex}, recorded: ${status.policySnapshotIndexUsed}`,
      );
    } else if (!deepEqual(status.appliedStrategy ?? {}, (placed.placement.spec as { strategy?: { applyStrategy?: unknown } }).strategy?.applyStrategy ?? {})) {
      throw new RunAborted("the applyStrategy in the updateRun is outdated");
    }
  } catch (e) {
    if (!(e instanceof RunAborted)) throw e;
    if (init?.status !== "True") {
      status.conditions = cond(
        status.conditions,
        { type: "Initialized", status: "False", reason: "UpdateRunInitializedFailed", message: e.message, observedGeneration: generation },
        now,
      );
      effects.events.push({ reason: "UpdateRunInitializationFailed", message: e.message, type: "Warning" });
    } else fail(status, generation, now, e.message, effects);
    return finish(env, ref, run, status, effects, outcome);
  }
  const w: Walk = { env, ref, run, status, generation, now, nowMs, placed, effects, state };
  if (state !== "Initialize") {
    try {
      const result = await execute(w);
      if (result === "succeeded") {
        status.conditions = cond(
          status.conditions,
          { type: "Progressing", status: "False", reason: "UpdateRunSucceeded", message: "All stages are completed", observedGeneration: generation },
          now,
        );
        status.conditions = cond(
          status.conditions,
          { type: "Succeeded", status: "True", reason: "UpdateRunSucceeded", message: "All stages are completed successfully", observedGeneration: generation },
          now,
        );
        effects.events.push({
          reason: "UpdateRunSucceeded",
          message: `All stages are completed: resource snapshot index ${status.resourceSnapshotIndexUsed} rolled out`,
        });
      } else if (result === "stopped") {
        const was = findCondition(run.status?.conditions as Condition[] | undefined, "Progressing");
        status.conditions = cond(
          status.conditions,
          { type: "Progressing", status: "False", reason: "UpdateRunStopped", message: "The update run has been stopped", observedGeneration: generation },
          now,
        );
        if (was?.reason !== "UpdateRunStopped") effects.events.push({ reason: "UpdateRunStopped", message: "The update run has been stopped" });
      }
    } catch (e) {
      if (!(e instanceof RunAborted)) throw e;
      const i = (() => {
        try {
          return updatingStage(status);
        } catch {
          return -1;
        }
      })();
      const st = i >= 0 && i < (status.stagesStatus ?? []).length ? status.stagesStatus![i]! : i >= 0 ? status.deletionStageStatus : undefined;
      if (st) {
        stageCond(w, st, "Progressing", "False", "StageUpdatingFailed", e.message);
        stageCond(w, st, "Succeeded", "False", "StageUpdatingFailed", e.message);
      }
      fail(status, generation, now, e.message, effects);
    }
  }
  outcome = {
    ...(effects.waitUntil !== undefined ? { waitUntil: effects.waitUntil } : {}),
    ...(effects.recheckAt !== undefined ? { recheckAt: effects.recheckAt } : {}),
  };
  return finish(env, ref, run, status, effects, outcome);
}

/** KubeFleet's `recordUpdateRunFailed` (into `status`). */
function fail(status: UpdateRunStatus, generation: number, now: string, message: string, effects: Effects): void {
  status.conditions = cond(
    status.conditions,
    {
      type: "Progressing",
      status: "False",
      reason: "UpdateRunFailed",
      message: "The stages are aborted due to a non-recoverable error",
      observedGeneration: generation,
    },
    now,
  );
  status.conditions = cond(status.conditions, { type: "Succeeded", status: "False", reason: "UpdateRunFailed", message, observedGeneration: generation }, now);
  effects.events.push({ reason: "UpdateRunFailed", message, type: "Warning" });
}

/**
 * Writes what a reconcile decided: the bindings first (then the placement runs, rendering their
 * clusters' works), then the run's status, then its Events. A crash between them leaves the run
 * where its status was: the next reconcile finds the bindings already bound (in sync) and goes on.
 */
async function finish(
  env: Env,
  ref: UpdateRunRef,
  run: KubeObject,
  status: UpdateRunStatus,
  effects: Effects,
  outcome: UpdateRunOutcome,
): Promise<UpdateRunOutcome> {
  const spec = run.spec as unknown as UpdateRunSpec;
  let raced = false;
  if (effects.bind.length > 0) {
    const pk = kindsOfPlacement(ref.namespace);
    const snapshotName = resourceSnapshotName(spec.placementName, status.resourceSnapshotIndexUsed!);
    const results = await admittedStoreOf(env, pk.binding).writeMany(
      effects.bind.map(({ binding }) => ({
        namespace: ref.namespace,
        name: binding.metadata.name,
        req: {
          verb: "update" as const,
          body: {
            ...binding,
            spec: {
              ...(binding.spec as Record<string, unknown>),
              state: "Bound",
              resourceSnapshotName: snapshotName,
              applyStrategy: status.appliedStrategy ?? {},
            },
          },
        },
        known: binding,
      })),
    );
    if (results.includes("lost")) raced = true;
    // The placement renders the bound clusters' works now (its object serialises its runs).
    await env.REPLICASETS.getByName(`placement:${ref.namespace}/${spec.placementName}`).reconcile(`placement:${ref.namespace}`, spec.placementName);
  }
  if (canonical(status) !== canonical(run.status ?? {})) {
    const r = await racing(() =>
      admittedStoreOf(env, updateRunKindsOf(ref.namespace).run).write(
        ref.namespace,
        ref.name,
        { verb: "update", subresource: "status", body: { ...run, status } },
        { known: run },
      ),
    );
    if (r === "lost") raced = true;
  }
  if (effects.events.length > 0 && !raced) {
    const specs: EventSpec[] = effects.events.map((e) => ({
      regarding: runRef(ref, run),
      reason: e.reason,
      type: e.type ?? "Normal",
      message: e.message,
      reportingController: REPORTER,
    }));
    await recordEvents(env, specs).catch((e: unknown) => console.error(`update run ${ref.namespace}/${ref.name}: could not record events`, e));
  }
  return raced ? { ...outcome, rerun: true } : outcome;
}

/** A run being deleted: its approval requests go (KubeFleet's `handleDelete`), then its finalizer. */
async function finalize(env: Env, ref: UpdateRunRef, run: KubeObject): Promise<UpdateRunOutcome> {
  const rk = updateRunKindsOf(ref.namespace);
  const approvals = admittedStoreOf(env, rk.approval);
  const { items } = await approvals.list(ref.namespace || undefined);
  for (const a of items.filter((x) => x.metadata.labels?.[TARGET_UPDATE_RUN_LABEL] === ref.name)) {
    await racing(() => approvals.write(ref.namespace, a.metadata.name, { verb: "delete", preconditions: { uid: a.metadata.uid } }));
  }
  const finalizers = (run.metadata.finalizers ?? []).filter((f) => f !== UPDATE_RUN_FINALIZER);
  if (finalizers.length === (run.metadata.finalizers ?? []).length) return {};
  const r = await racing(() =>
    admittedStoreOf(env, rk.run).write(
      ref.namespace,
      ref.name,
      { verb: "update", body: { ...run, metadata: { ...run.metadata, finalizers } } },
      { known: run },
    ),
  );
  return r === "lost" ? { rerun: true } : {};
}
