/**
 * KubeFleet's staged update runs (kubefleet-dev/kubefleet `apis/placement/v1beta1/
 * stageupdate_types.go`, the same in `v1`; docs/kubefleet.md "Staged update runs"):
 * ClusterStagedUpdateStrategy / StagedUpdateStrategy (the stages), ClusterStagedUpdateRun /
 * StagedUpdateRun (one rollout of a placement whose `strategy.type` is External, to a resource
 * snapshot index) and ClusterApprovalRequest / ApprovalRequest (made by a run for a stage's
 * Approval task, approved by setting its `Approved` condition on the status subresource). Served in
 * v1beta1 (storage) and v1 (the same fields). The run controller is src/fleet/updaterun/.
 *
 * Validation is the CRDs' (`+kubebuilder` markers and CEL rules, with their messages): a run's
 * `placementName`, `resourceSnapshotIndex` and `stagedRolloutStrategyName` are immutable, its
 * `state` (default Initialize) moves Initialize → Run ⇄ Stop (never back to Initialize, never
 * Initialize → Stop); a strategy has at most 31 stages named `^[a-z0-9]+$`, `maxConcurrency` an
 * integer ≥ 1 or a percentage 1-100 %, at most one before-stage task (Approval only) and two
 * after-stage tasks (TimedWait needs `waitTime`, Approval takes none); an approval request's spec
 * is immutable.
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition, PrinterColumn } from "../k8s/kind.ts";
import { LabelSelectorSchema } from "../k8s/labels.ts";
import { ConditionsSchema, objectSchema, type KubeObject } from "../k8s/meta.ts";
import { deepEqual } from "../k8s/fieldmanager.ts";
import { FLEET_GROUP, FLEET_PREFIX } from "./fleet.ts";
import type { StageConfig, UpdateRunSpec, UpdateStrategySpec } from "./fleet-updaterun-shapes.ts";

/** The finalizer a run keeps until its approval requests are deleted (KubeFleet's `UpdateRunFinalizer`). */
export const UPDATE_RUN_FINALIZER = `${FLEET_PREFIX}stagedupdaterun-finalizer`;
/** Go's duration syntax as KubeFleet's CRD admits it for `waitTime`. */
const DURATION_PATTERN = /^(?:(?:0|[1-9][0-9]*)(\.[0-9]+)?(?:s|m|h))+$/;

/**
 * A `waitTime` in milliseconds (Go's `time.ParseDuration` for the units the CRD admits: h, m, s).
 * @returns NaN when `d` is not such a duration
 */
export function durationMs(d: string): number {
  if (!DURATION_PATTERN.test(d)) return NaN;
  let ms = 0;
  for (const m of d.matchAll(/([0-9.]+)(h|m|s)/g)) ms += Number(m[1]) * (m[2] === "h" ? 3_600_000 : m[2] === "m" ? 60_000 : 1000);
  return ms;
}

const StageTaskSchema = z.strictObject({
  type: z.enum(["TimedWait", "Approval"]).describe("The task: TimedWait (wait `waitTime`) or Approval (an approval request to approve)."),
  waitTime: z
    .string()
    .regex(DURATION_PATTERN, `should match '${DURATION_PATTERN.source}'`)
    .optional()
    .describe("How long a TimedWait waits (e.g. `1h`, `30s`)."),
});

const StageConfigSchema = z.strictObject({
  name: z
    .string()
    .max(63)
    .regex(/^[a-z0-9]+$/, "should match '^[a-z0-9]+$'")
    .describe("The stage's name, unique in the strategy."),
  labelSelector: LabelSelectorSchema.optional().describe("The clusters of the stage (of those the placement picked), by their labels."),
  sortingLabelKey: z.string().optional().describe("A label whose integer value orders the stage's clusters (else by name)."),
  maxConcurrency: z
    .union([z.number().int(), z.string().regex(/^(100|[1-9][0-9]?)%$/, "should match '^(100|[1-9][0-9]?)%$'")])
    .optional()
    .describe("How many of the stage's clusters update at once: a number ≥ 1 or a percentage (rounded down, at least 1). Default 1."),
  afterStageTasks: z.array(StageTaskSchema).max(2).optional().describe("Tasks after the stage's clusters are updated: a TimedWait, an Approval, or both."),
  beforeStageTasks: z.array(StageTaskSchema).max(1).optional().describe("A task before the stage starts: an Approval."),
});

const StrategySpecSchema = z.strictObject({
  stages: z.array(StageConfigSchema).max(31).describe("The stages, in order (at most 31)."),
});

const RunSpecSchema = z.strictObject({
  placementName: z.string().max(255).describe("The placement the run rolls out (its `strategy.type` must be External); immutable."),
  resourceSnapshotIndex: z.string().optional().describe("The resource snapshot index to roll out; empty: the latest. An older index is a rollback. Immutable."),
  stagedRolloutStrategyName: z.string().describe("The staged update strategy (in the run's namespace for a StagedUpdateRun); immutable."),
  state: z
    .enum(["Initialize", "Run", "Stop"])
    .optional()
    .describe("Initialize (compute the stages only), Run, or Stop (finish the updating clusters, then stop)."),
});

const TaskStatusSchema = z.strictObject({
  type: z.enum(["TimedWait", "Approval"]),
  approvalRequestName: z.string().optional(),
  conditions: ConditionsSchema.optional(),
});
const ClusterStatusSchema = z.strictObject({
  clusterName: z.string(),
  resourceOverrideSnapshots: z.array(z.strictObject({ name: z.string(), namespace: z.string().optional() })).optional(),
  clusterResourceOverrideSnapshots: z.array(z.string()).optional(),
  conditions: ConditionsSchema.optional(),
});
const StageStatusSchema = z.strictObject({
  stageName: z.string(),
  clusters: z.array(ClusterStatusSchema),
  afterStageTaskStatus: z.array(TaskStatusSchema).max(2).optional(),
  beforeStageTaskStatus: z.array(TaskStatusSchema).max(1).optional(),
  startTime: z.string().optional(),
  endTime: z.string().optional(),
  conditions: ConditionsSchema.optional(),
});
const RunStatusSchema = z.strictObject({
  policySnapshotIndexUsed: z.string().optional(),
  policyObservedClusterCount: z.number().int().optional(),
  resourceSnapshotIndexUsed: z.string().optional(),
  appliedStrategy: z.record(z.string(), z.unknown()).optional(),
  stagedUpdateStrategySnapshot: StrategySpecSchema.optional(),
  stagesStatus: z.array(StageStatusSchema).optional(),
  deletionStageStatus: StageStatusSchema.optional(),
  conditions: ConditionsSchema.optional(),
});

const ApprovalSpecSchema = z.strictObject({
  parentStageRollout: z.string().describe("The run the request belongs to."),
  targetStage: z.string().describe("The stage the request gates."),
});
const ApprovalStatusSchema = z.strictObject({ conditions: ConditionsSchema.optional() });

const celInvalid = (field: string, message: string): StatusCause => ({ field, reason: "FieldValueInvalid", message: `Invalid value: "object": ${message}` });

/** The CRD's rules of a stage's tasks (CEL on `afterStageTasks` and `beforeStageTasks`). */
function stageTaskRules(stages: readonly StageConfig[]): StatusCause[] {
  const out: StatusCause[] = [];
  stages.forEach((s, i) => {
    const after = s.afterStageTasks ?? [];
    const before = s.beforeStageTasks ?? [];
    const f = `spec.stages[${i}]`;
    if (after.some((t) => t.type === "Approval" && t.waitTime !== undefined))
      out.push(celInvalid(`${f}.afterStageTasks`, "AfterStageTaskType is Approval, waitTime is not allowed"));
    if (after.some((t) => t.type === "TimedWait" && t.waitTime === undefined))
      out.push(celInvalid(`${f}.afterStageTasks`, "AfterStageTaskType is TimedWait, waitTime is required"));
    if (before.some((t) => t.type === "Approval" && t.waitTime !== undefined))
      out.push(celInvalid(`${f}.beforeStageTasks`, "AfterStageTaskType is Approval, waitTime is not allowed"));
    if (before.some((t) => t.type === "TimedWait")) out.push(celInvalid(`${f}.beforeStageTasks`, "BeforeStageTaskType cannot be TimedWait"));
    if (typeof s.maxConcurrency === "number" && s.maxConcurrency < 1) out.push(celInvalid(`${f}.maxConcurrency`, "maxConcurrency must be at least 1"));
  });
  return out;
}

/** The CRD's rules of a run: its name, immutable fields and state transitions. */
export function validateUpdateRun(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  const out: StatusCause[] = [];
  if (obj.metadata.name.length >= 64) out.push(celInvalid("metadata", "metadata.name max length is 63"));
  if (!old) return out;
  const spec = (obj.spec ?? {}) as unknown as UpdateRunSpec;
  const was = (old.spec ?? {}) as unknown as UpdateRunSpec;
  if (spec.placementName !== was.placementName)
    out.push({ field: "spec.placementName", reason: "FieldValueInvalid", message: 'Invalid value: "string": placementName is immutable' });
  if ((spec.resourceSnapshotIndex ?? "") !== (was.resourceSnapshotIndex ?? ""))
    out.push({ field: "spec.resourceSnapshotIndex", reason: "FieldValueInvalid", message: 'Invalid value: "string": resourceSnapshotIndex is immutable' });
  if (spec.stagedRolloutStrategyName !== was.stagedRolloutStrategyName)
    out.push({
      field: "spec.stagedRolloutStrategyName",
      reason: "FieldValueInvalid",
      message: 'Invalid value: "string": stagedRolloutStrategyName is immutable',
    });
  const from = was.state ?? "Initialize";
  const to = spec.state ?? "Initialize";
  if (from === "Initialize" && to === "Stop") out.push(celInvalid("spec", "invalid state transition: cannot transition from Initialize to Stop"));
  if (from === "Run" && to === "Initialize") out.push(celInvalid("spec", "invalid state transition: cannot transition from Run to Initialize"));
  if (from === "Stop" && to === "Initialize") out.push(celInvalid("spec", "invalid state transition: cannot transition from Stop to Initialize"));
  return out;
}

const RUN_COLUMNS: PrinterColumn[] = [
  { name: "Placement", type: "string", jsonPath: ".spec.placementName" },
  { name: "Resource-Snapshot-Index", type: "string", jsonPath: ".spec.resourceSnapshotIndex" },
  { name: "Policy-Snapshot-Index", type: "string", jsonPath: ".status.policySnapshotIndexUsed" },
  { name: "Initialized", type: "string", jsonPath: '.status.conditions[?(@.type=="Initialized")].status' },
  { name: "Progressing", type: "string", jsonPath: '.status.conditions[?(@.type=="Progressing")].status' },
  { name: "Succeeded", type: "string", jsonPath: '.status.conditions[?(@.type=="Succeeded")].status' },
  { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  { name: "Strategy", type: "string", jsonPath: ".spec.stagedRolloutStrategyName", priority: 1 },
];

const APPROVAL_COLUMNS: PrinterColumn[] = [
  { name: "Update-Run", type: "string", jsonPath: ".spec.parentStageRollout" },
  { name: "Stage", type: "string", jsonPath: ".spec.targetStage" },
  { name: "Approved", type: "string", jsonPath: '.status.conditions[?(@.type=="Approved")].status' },
  { name: "Approval-Accepted", type: "string", jsonPath: '.status.conditions[?(@.type=="ApprovalAccepted")].status' },
  { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
];

const sameAs = (version: string) => (o: KubeObject) => ({ ...o, apiVersion: `${FLEET_GROUP}/${version}` });

/** A kind in v1beta1 (storage) and v1 (the same fields). */
function both(def: Omit<KindDefinition, "group" | "version" | "listKind" | "singular" | "storage">): readonly [KindDefinition, KindDefinition] {
  const v1beta1: KindDefinition = {
    ...def,
    group: FLEET_GROUP,
    version: "v1beta1",
    listKind: `${def.kind}List`,
    singular: def.kind.toLowerCase(),
    categories: ["fleet", "fleet-placement"],
    storage: "d1",
  };
  const v1: KindDefinition = { ...v1beta1, version: "v1", conversion: { storage: v1beta1, toStorage: sameAs("v1beta1"), fromStorage: sameAs("v1") } };
  return [v1beta1, v1] as const;
}

const strategyKind = (kind: string, plural: string, shortName: string, namespaced: boolean) =>
  both({
    kind,
    plural,
    shortNames: [shortName],
    namespaced,
    hasStatus: false,
    schema: objectSchema(StrategySpecSchema, z.strictObject({}), true),
    validate: (obj) => stageTaskRules(((obj.spec ?? {}) as unknown as UpdateStrategySpec).stages ?? []),
  });

const runKind = (kind: string, plural: string, shortName: string, namespaced: boolean) =>
  both({
    kind,
    plural,
    shortNames: [shortName],
    namespaced,
    hasStatus: true,
    schema: objectSchema(RunSpecSchema, RunStatusSchema, true),
    printerColumns: RUN_COLUMNS,
    defaults(obj) {
      if (obj.spec && typeof obj.spec === "object") (obj.spec as unknown as UpdateRunSpec).state ??= "Initialize";
    },
    validate: validateUpdateRun,
  });

const approvalKind = (kind: string, plural: string, shortName: string, namespaced: boolean) =>
  both({
    kind,
    plural,
    shortNames: [shortName],
    namespaced,
    hasStatus: true,
    schema: objectSchema(ApprovalSpecSchema, ApprovalStatusSchema, true),
    printerColumns: APPROVAL_COLUMNS,
    validate: (obj, old) =>
      old && !deepEqual(old.spec ?? null, obj.spec ?? null)
        ? [{ field: "spec", reason: "FieldValueInvalid", message: 'Invalid value: "object": The spec field is immutable' }]
        : [],
  });

export const [ClusterStagedUpdateStrategyKind, ClusterStagedUpdateStrategyV1Kind] = strategyKind(
  "ClusterStagedUpdateStrategy",
  "clusterstagedupdatestrategies",
  "csus",
  false,
);
export const [StagedUpdateStrategyKind, StagedUpdateStrategyV1Kind] = strategyKind("StagedUpdateStrategy", "stagedupdatestrategies", "sus", true);
export const [ClusterStagedUpdateRunKind, ClusterStagedUpdateRunV1Kind] = runKind("ClusterStagedUpdateRun", "clusterstagedupdateruns", "csur", false);
export const [StagedUpdateRunKind, StagedUpdateRunV1Kind] = runKind("StagedUpdateRun", "stagedupdateruns", "sur", true);
export const [ClusterApprovalRequestKind, ClusterApprovalRequestV1Kind] = approvalKind("ClusterApprovalRequest", "clusterapprovalrequests", "careq", false);
export const [ApprovalRequestKind, ApprovalRequestV1Kind] = approvalKind("ApprovalRequest", "approvalrequests", "areq", true);

/** The kinds of staged update runs, v1 (preferred) before v1beta1 (storage) of each. */
export const FLEET_UPDATERUN_KINDS: readonly KindDefinition[] = [
  ClusterStagedUpdateStrategyV1Kind,
  ClusterStagedUpdateStrategyKind,
  StagedUpdateStrategyV1Kind,
  StagedUpdateStrategyKind,
  ClusterStagedUpdateRunV1Kind,
  ClusterStagedUpdateRunKind,
  StagedUpdateRunV1Kind,
  StagedUpdateRunKind,
  ClusterApprovalRequestV1Kind,
  ClusterApprovalRequestKind,
  ApprovalRequestV1Kind,
  ApprovalRequestKind,
];

/** The kinds of a run's scope: `namespace` "" for the cluster-scoped ones. */
export function updateRunKindsOf(namespace: string) {
  const cluster = namespace === "";
  return {
    run: cluster ? ClusterStagedUpdateRunKind : StagedUpdateRunKind,
    strategy: cluster ? ClusterStagedUpdateStrategyKind : StagedUpdateStrategyKind,
    approval: cluster ? ClusterApprovalRequestKind : ApprovalRequestKind,
  };
}
