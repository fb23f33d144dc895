/**
 * The status step, last of a run (OCM `manifestworkreplicaset_status_reconcile.go`,
 * `statusReconciler`, and the controller's `patchPlaceManifestStatus`): the replica set's summary
 * and per-placement summary over its works, the ManifestworkApplied condition beside the
 * placement conditions the deploy step set, written through the status subresource when they
 * changed.
 */
import { setCondition, type KubeObject } from "../../k8s/meta.ts";
import { ManifestWorkReplicaSetKind } from "../../kinds/manifestwork.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import { racing } from "../../k8s/racing.ts";
import { canonicalJson } from "../../k8s/canonical-json.ts";
import type { WorkCondition } from "../rollout.ts";
import type { ReplicaSetReconciler } from "./run.ts";
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
    const status = { ...(mwrs.status ?? {}), conditions, summary, placementSummary };
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
