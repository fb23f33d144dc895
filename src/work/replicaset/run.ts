/**
 * One run of the ManifestWorkReplicaSet controller as its reconcilers share it, after OCM's
 * `manifestworkreplicaset_controller.go` (`ManifestWorkReplicaSetReconcile`, `reconcileState`):
 * what the run read once at its start (the replica set, the works named after it; read by
 * src/work/replicaset.ts `startRun`, as OCM's `sync` reads them before its reconcilers), the
 * reconcilers' common shape (each returns the replica set for the next and whether to go on), and
 * what the deploy step leaves the status step (OCM's deploy reconciler leaves it in the replica
 * set's status). Types only.
 */
import type { Condition, KubeObject } from "../../k8s/meta.ts";
import type { Env } from "../../env.ts";
import type { RolloutStrategy } from "../rollout.ts";
import type { WorksCache } from "./works-cache.ts";

/** One `spec.placementRefs` entry of a ManifestWorkReplicaSet. */
export interface PlacementRef {
  name: string;
  /** The rollout strategy, with OCM's rollback enhancement's `failureStrategy` (`AbortAll`: revert every updated cluster when the rollout fails). */
  rolloutStrategy?: RolloutStrategy & { failureStrategy?: "AbortAll" | null };
}

/** The ManifestWorkReplicaSet's spec, as the controller reads it. */
export interface ReplicaSetSpec {
  manifestWorkTemplate?: Record<string, unknown>;
  placementRefs?: PlacementRef[];
  cascadeDeletionPolicy?: "Background" | "Foreground";
  /** Revisions kept besides the live ones (src/work/replicaset/revisions.ts; default 10). */
  revisionHistoryLimit?: number | null;
}

/**
 * Where the replica set's revisions stand at a run (OCM's rollback enhancement,
 * src/work/replicaset/revisions.ts): the update revision's hash and collision count, whether it
 * was created or found again at this run, the current revision (the last one rolled out
 * everywhere), and the abort: when it began (an earlier run), whether the works are being
 * reverted to the current revision, whether this run found the rollout failed with `AbortAll`
 * (`abortNow`), or failed past progressDeadline without it (`deadlineExceeded`).
 */
export interface RevisionState {
  hash: string;
  collisionCount: number;
  change: "created" | "found" | "unchanged";
  current?: string;
  abortedTime?: string;
  reverting: boolean;
  abortNow: boolean;
  deadlineExceeded: boolean;
}

/**
 * The outcome of one run: `recheckAt` (epoch ms) when a rollout timer is due, `rerun` when a
 * write lost a race and the run should be repeated at once, `gone` when the replica set no
 * longer exists and nothing of it remains (its object may forget it).
 */
export interface RunOutcome {
  recheckAt?: number;
  rerun?: boolean;
  gone?: boolean;
  /** The run wrote as many works as one run may (src/work/replicaset/deploy.ts `MAX_WORK_WRITES_PER_RUN`): run again at once to go on. */
  more?: boolean;
}

/** What the Durable Object learns from a run while it happens, and the works it already holds. */
export interface RunHooks {
  /** Called with a cluster's name before the run deletes its work there. */
  deleting?(cluster: string): void;
  /** The object's copy of the works named after the replica set, used instead of reading them all. */
  cache?: WorksCache;
}

/**
 * What the deploy step did, for the status step: the works as they now are, and the facts of the
 * rollout the status reports. OCM's deploy reconciler writes the same into the replica set's
 * status (summary total, placementsSummary, PlacementVerified, PlacementRolledOut).
 */
export interface Deployment {
  /** The replica set's works after the step's writes, by cluster (a work being deleted included). */
  works: Map<string, KubeObject>;
  /** The template's spec (the ManifestWork kind's defaults applied) as canonical JSON. */
  templateJson: string;
  /** One cluster's template as canonical JSON: `templateJson` with the overrides naming the replica set applied ("" where they failed). */
  templateJsonOf: (cluster: string) => string;
  /** Per placementRef, in spec order: its decision groups, clusters decided, and the clusters whose work it owns. */
  placements: { name: string; groups: number; decided: number; clusters: string[] }[];
  /** The replica set's conditions with PlacementVerified and PlacementRolledOut set at this run. */
  conditions: Condition[];
  /** When a rollout timer is due (epoch ms), or Infinity. */
  recheckAt: number;
  /** A write lost a race: run again at once, reading every work back. */
  raced: boolean;
  /** The step stopped at the run's write budget: run again at once to go on. */
  more: boolean;
  /** The revisions and the abort. */
  revision: RevisionState;
}

/** One run of one replica set: what it read at its start, shared by its reconcilers. */
export interface ReplicaSetRun {
  readonly env: Env;
  readonly namespace: string;
  readonly name: string;
  /** The run's time, epoch milliseconds. */
  readonly nowMs: number;
  readonly hooks: RunHooks;
  /** The replica set's `MWRS_LABEL` value (`replicaSetKey`, src/work/replicaset/names.ts). */
  readonly key: string;
  /** The name of its works (`generatedWorkName`, src/work/replicaset/names.ts). */
  readonly workName: string;
  /** The replica set as stored at the run's start; null when it does not exist. */
  readonly read: KubeObject | null;
  /** The works of that name in every cluster namespace, whoever owns them. */
  readonly named: KubeObject[];
  /** Those of them labelled as this replica set's. */
  readonly ours: KubeObject[];
  /** Set by the deploy step for the status step. */
  deployment?: Deployment;
}

/**
 * A reconciler's answer, as OCM's `reconcile` returns (replica set, reconcileState): go on with
 * the replica set as this step left it, or stop with the run's outcome.
 */
export type ReconcileResult = { state: "continue"; mwrs: KubeObject } | { state: "stop"; outcome: RunOutcome };

/**
 * One step of a run (OCM's `ManifestWorkReplicaSetReconcile`), given a replica set that exists
 * and is not being deleted (the finalize step, first, stops the run otherwise).
 */
export interface ReplicaSetReconciler {
  /** The step's name (OCM's reconciler without "Reconciler"). */
  readonly name: string;
  /**
   * @throws errors of D1 or an unexpected write failure (the run fails; its object retries);
   *   lost write races are answered in the outcome (`rerun`)
   */
  reconcile(run: ReplicaSetRun, mwrs: KubeObject): Promise<ReconcileResult>;
}
