/**
 * The staged update run controller: KubeFleet's `pkg/controllers/updaterun` (controller.go,
 * initialization.go, validation.go, execution.go, stop.go) on Flotilla's placements
 * (docs/kubefleet.md "Staged update runs"). One reconcile per run, serialised in its Durable
 * Object (`updaterun:<namespace>/<name>`, src/fleet/updaterun/wake.ts). This module is the
 * reconcile (controller.go: state changes, the commit of status and effects, failure, deletion);
 * its steps are src/fleet/updaterun/initialization.ts (Initialize) and execution.ts (Run, Stop).
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
import { findCondition, type Condition, type KubeObject } from "../../k8s/meta.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import type { Env } from "../../env.ts";
import { recordEvents, type EventSpec } from "../../events/record.ts";
import { FLEET_GROUP } from "../../kinds/fleet.ts";
import { TARGET_UPDATE_RUN_LABEL, type UpdateRunSpec, type UpdateRunStatus } from "../../kinds/fleet-updaterun-shapes.ts";
import { UPDATE_RUN_FINALIZER, updateRunKindsOf } from "../../kinds/fleet-updaterun.ts";
import { resourceSnapshotName } from "./gate.ts";
import type { UpdateRunRef } from "./wake.ts";
import { initialize, kindsOfPlacement, readPlacement, RunAborted, type Placed } from "./initialization.ts";
import { cond, stageCond, execute, updatingStage, type Effects, type Walk } from "./execution.ts";

/** The outcome of a reconcile: `rerun` after a lost write race, `gone` when the run is gone, `waitUntil` a TimedWait's end, `recheckAt` a later look (epoch ms). */
export interface UpdateRunOutcome {
  rerun?: boolean;
  gone?: boolean;
  recheckAt?: number;
  /** When a TimedWait ends (the run's `updaterun-wait` timer: src/controllers.ts). */
  waitUntil?: number;
}

/** The Events' reporting controller. */
const REPORTER = "updaterun-controller";

const stamp = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

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
    // The placement renders the bound clusters' works when the status below records them started:
    // that commit owes it the run (src/fleet/controller.ts `planPlacement`), which runs before the write returns.
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
