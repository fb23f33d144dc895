/**
 * The staged update run's initialization (KubeFleet's `pkg/controllers/updaterun`
 * initialization.go and validation.go): the placement as a run sees it (its External strategy,
 * its latest scheduled policy snapshot, its bindings), and the stages computed from the strategy
 * into the run's status (clusters by label selector and `sortingLabelKey`, the deletion stage, the
 * resource snapshot index). The controller (src/fleet/updaterun/controller.ts) calls it once per
 * run; the stage walk is src/fleet/updaterun/execution.ts.
 */
import { matchesLabelSelector, type LabelSelectorInput } from "../../k8s/labels.ts";
import { findCondition, type Condition, type KubeObject } from "../../k8s/meta.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import type { Env } from "../../env.ts";
import {
  ClusterResourceBindingKind,
  ClusterResourceSnapshotKind,
  ClusterSchedulingPolicySnapshotKind,
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
  type StageConfig,
  type StageUpdatingStatus,
  type UpdateRunSpec,
  type UpdateRunStatus,
  type UpdateStrategySpec,
} from "../../kinds/fleet-updaterun-shapes.ts";
import { durationMs, updateRunKindsOf } from "../../kinds/fleet-updaterun.ts";
import { resourceSnapshotName } from "./gate.ts";
import type { UpdateRunRef } from "./wake.ts";

/** The deletion stage's name (KubeFleet's `UpdateRunDeleteStageName`). */
export const DELETE_STAGE_NAME = "kubernetes-fleet.io/deleteStage";

/** KubeFleet's `errStagedUpdatedAborted` / `errValidationFailed`: a run that cannot go on. */
export class RunAborted extends Error {}

/** A condition as the run sets it (its transition time stamped by `setCondition`). */
export type NewCondition = Omit<Condition, "lastTransitionTime">;

/** The approval request names of a stage (KubeFleet's `BeforeStageApprovalTaskNameFmt`, `AfterStageApprovalTaskNameFmt`). */
export function approvalRequestName(run: string, stage: string, when: "before" | "after"): string {
  return `${run}-${when}-${stage}`;
}

export function kindsOfPlacement(namespace: string) {
  const cluster = namespace === "";
  return {
    placement: cluster ? FLEET_PLACEMENT_KINDS.crp : FLEET_PLACEMENT_KINDS.rp,
    binding: cluster ? ClusterResourceBindingKind : ResourceBindingKind,
    policySnapshot: cluster ? ClusterSchedulingPolicySnapshotKind : SchedulingPolicySnapshotKind,
    resourceSnapshot: cluster ? ClusterResourceSnapshotKind : ResourceSnapshotKind,
  };
}

export const isTrue = (conds: Condition[] | undefined, type: string, generation?: number) => {
  const c = findCondition(conds, type);
  return c?.status === "True" && (generation === undefined || c.observedGeneration === undefined || c.observedGeneration === generation);
};
export const isFalse = (conds: Condition[] | undefined, type: string) => findCondition(conds, type)?.status === "False";

/** What a reconcile reads of the placement: its bindings by cluster (scheduled and to be deleted), its latest policy snapshot's index. */
export interface Placed {
  placement: KubeObject;
  scheduled: Map<string, KubeObject>;
  toDelete: Map<string, KubeObject>;
  policyIndex: string;
  clusterCount: number;
}

/** The placement's state as a run sees it (KubeFleet's `validatePlacement`, `determinePolicySnapshot`, `collectScheduledClusters`). */
export async function readPlacement(env: Env, ns: string, spec: UpdateRunSpec): Promise<Placed> {
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
export async function initialize(env: Env, ref: UpdateRunRef, run: KubeObject, status: UpdateRunStatus, placed: Placed): Promise<void> {
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
