/**
 * The status step, last of a run (OCM `manifestworkreplicaset_status_reconcile.go`,
 * `statusReconciler`, and the controller's `patchPlaceManifestStatus`): the replica set's summary
 * and per-placement summary over its works, the ManifestworkApplied condition beside the
 * placement conditions the deploy step set, written through the status subresource when they
 * changed.
 */
import { setCondition, type Condition, type KubeObject } from "../../k8s/meta.ts";
import { ManifestWorkReplicaSetKind } from "../../kinds/manifestwork.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import { racing } from "../../k8s/racing.ts";
import { canonicalJson } from "../../k8s/canonical-json.ts";
import type { WorkCondition } from "../rollout.ts";
import type { ReplicaSetReconciler, RevisionState } from "./run.ts";
import { pruneHistory, revisionName } from "./revisions.ts";
import { specJson } from "./works-cache.ts";

/** OCM's ManifestWorkReplicaSetSummary (desiredTotal and updated are not populated, as in OCM). */
interface Summary {
  total: number;
  applied: number;
  available: number;
  progressing: number;
  degraded: number;
}

const isTrue = (w: KubeObject, type: string) => ((w.status?.conditions ?? []) as WorkCondition[]).some((c) => c.type === type && c.status === "True");

/** OCM's summary counts (conditions True at any generation) over works not being deleted. */
function summarize(works: KubeObject[]): Summary {
  const live = works.filter((w) => !w.metadata.deletionTimestamp);
  return {
    total: live.length,
    applied: live.filter((w) => isTrue(w, "Applied")).length,
    available: live.filter((w) => isTrue(w, "Available")).length,
    progressing: live.filter((w) => isTrue(w, "Progressing")).length,
    degraded: live.filter((w) => isTrue(w, "Degraded")).length,
  };
}

/**
 * The revision fields of the status and the `Progressing` condition (OCM's rollback enhancement,
 * its "Status transition" tables), at `at` (RFC 3339): `updateRevision` is the template's hash;
 * `currentRevision` becomes it once the rollout is complete (PlacementRolledOut True) and no abort
 * holds; `abortedTime` is set when a rollout with `failureStrategy: AbortAll` fails and stays
 * until a new revision's rollout begins; `collisionCount` when a hash collided. `Progressing`:
 * True `NewRevisionCreated` (or `FoundNewRevision`, an older revision again: an undo) while the
 * rollout goes on, True `NewManifestWorkAvailable` when complete, False
 * `ProgressDeadlineExceeded` when it failed without AbortAll, False `RolloutAborted` when aborted
 * (saying whether the clusters went back); PlacementRolledOut's reason is then `RolloutDegraded`
 * (the enhancement also gives it on ProgressDeadlineExceeded without an abort; Flotilla keeps
 * OCM's released `Progressing` there, which clients already read).
 * Mutates `conditions`.
 */
function revisionStatus(name: string, rev: RevisionState, conditions: Condition[], at: string): Record<string, unknown> {
  const rolledOut = conditions.find((c) => c.type === "PlacementRolledOut");
  const complete = rolledOut?.status === "True";
  const aborting = !!rev.abortedTime || rev.abortNow;
  const abortedTime = rev.abortedTime ?? (rev.abortNow ? at : undefined);
  const currentRevision = !aborting && complete ? rev.hash : rev.current;
  const update = revisionName(name, rev.hash);
  const previous = conditions.find((c) => c.type === "Progressing");
  if (aborting) {
    const to = rev.current ? revisionName(name, rev.current) : "";
    const message = !rev.reverting
      ? rev.abortNow
        ? `Rollout of revision ${update} failed; aborting it: the clusters go back to revision ${to}`
        : `Rollout of revision ${update} aborted; no earlier revision to go back to`
      : complete
        ? `Rollout of revision ${update} aborted; every cluster is back at revision ${to}`
        : `Rollout of revision ${update} aborted; the clusters go back to revision ${to}`;
    setCondition(conditions, { type: "Progressing", status: "False", reason: "RolloutAborted", message }, at);
  } else if (complete) {
    setCondition(
      conditions,
      { type: "Progressing", status: "True", reason: "NewManifestWorkAvailable", message: `New revision ${update} is successfully progressed` },
      at,
    );
  } else if (rev.deadlineExceeded) {
    setCondition(
      conditions,
      { type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded", message: `Rollout of revision ${update} exceeded its progressDeadline` },
      at,
    );
  } else {
    const again = rev.change === "found" || (rev.change === "unchanged" && previous?.reason === "FoundNewRevision");
    const reason = again ? "FoundNewRevision" : "NewRevisionCreated";
    setCondition(
      conditions,
      { type: "Progressing", status: "True", reason, message: `${again ? "Found revision" : "Created new revision"} ${update}; rolling it out` },
      at,
    );
  }
  // Without an abort, PlacementRolledOut keeps OCM's released reasons (Progressing, Complete).
  if (rolledOut && aborting) {
    setCondition(
      conditions,
      {
        type: "PlacementRolledOut",
        status: "False",
        reason: "RolloutDegraded",
        message: `${rolledOut.message}; the rollout of revision ${update} was aborted`,
      },
      at,
    );
  }
  return { updateRevision: rev.hash, currentRevision, abortedTime, collisionCount: rev.collisionCount > 0 ? rev.collisionCount : undefined };
}

/**
 * The status step: computes the status from `run.deployment` (the deploy step runs first),
 * writes it when it differs from the stored one (a lost race is a rerun), and stops with the
 * run's outcome; after a lost race the works' cache is emptied (another writer changed what the
 * run holds).
 * @throws errors of D1 or an unexpected write failure; an Error when the deploy step did not run
 */
export const statusReconciler: ReplicaSetReconciler = {
  name: "status",
  async reconcile(run, mwrs) {
    const deployment = run.deployment;
    if (!deployment) throw new Error("the status step runs after the deploy step");
    const { works, templateJsonOf, conditions, recheckAt, more } = deployment;
    let raced = deployment.raced;
    const summary = summarize([...works.values()]);
    const at = new Date(run.nowMs).toISOString().replace(/\.\d{3}Z$/, "Z");
    if (summary.available === summary.total && summary.progressing === 0 && summary.degraded === 0) {
      setCondition(conditions, { type: "ManifestworkApplied", status: "True", reason: "AsExpected", message: "" }, at);
    } else if (summary.progressing > 0 && summary.degraded === 0) {
      setCondition(conditions, { type: "ManifestworkApplied", status: "False", reason: "Processing", message: "" }, at);
    } else {
      setCondition(conditions, { type: "ManifestworkApplied", status: "False", reason: "NotAsExpected", message: "" }, at);
    }
    const placementSummary = deployment.placements.map((p) => {
      const placed = p.clusters.map((c) => works.get(c)).filter((w): w is KubeObject => w !== undefined);
      const current = placed.filter((w) => specJson(w) === templateJsonOf(w.metadata.namespace!)).length;
      return { name: p.name, availableDecisionGroups: `${p.groups} (${current} / ${p.decided} clusters applied)`, summary: summarize(placed) };
    });
    const status: Record<string, unknown> = {
      ...(mwrs.status ?? {}),
      conditions,
      summary,
      placementSummary,
      ...revisionStatus(run.name, deployment.revision, conditions, at),
    };
    for (const k of ["currentRevision", "abortedTime", "collisionCount"]) if (status[k] === undefined) delete status[k];
    // A new current revision makes the one before it history, kept to revisionHistoryLimit.
    const before = (mwrs.status as { currentRevision?: string } | undefined)?.currentRevision;
    if (status.currentRevision !== before && before)
      await pruneHistory(run.env, mwrs, [status.updateRevision as string, status.currentRevision as string | undefined]);
    if (canonicalJson(status) !== canonicalJson(mwrs.status ?? {})) {
      const r = await racing(() =>
        admittedStoreOf(run.env, ManifestWorkReplicaSetKind).write(
          run.namespace,
          run.name,
          { verb: "update", subresource: "status", body: { ...mwrs, status } },
          { known: mwrs },
        ),
      );
      if (r === "lost") raced = true;
    }
    // A lost race means another writer changed what the run holds: read everything again next time.
    if (raced) run.hooks.cache?.invalidate();
    return {
      state: "stop",
      outcome: { ...(Number.isFinite(recheckAt) ? { recheckAt } : {}), ...(raced ? { rerun: true } : {}), ...(more ? { more: true } : {}) },
    };
  },
};
