/**
 * The deploy step (OCM `manifestworkreplicaset_deploy_reconcile.go`, `deployReconciler`): one
 * ManifestWork per cluster its placements decide, created, updated and relabelled as each
 * placementRef's rollout strategy allows (the pure engine, src/work/rollout.ts), and deleted
 * from clusters no placement decides any more; it sets PlacementVerified and PlacementRolledOut,
 * as OCM's does, and leaves the rest to the status step ({@link Deployment}).
 */
import { setCondition, type Condition, type KubeObject } from "../../k8s/meta.ts";
import { ManifestWorkKind, MWRS_LABEL, PLACEMENT_NAME_LABEL } from "../../kinds/manifestwork.ts";
import { PlacementDecisionKind, PlacementKind } from "../../kinds/placement.ts";
import { DECISION_GROUP_INDEX_LABEL, DECISION_GROUP_NAME_LABEL, PLACEMENT_LABEL } from "../../scheduling/index.ts";
import { type ManyWrite } from "../../store/store.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import { canonicalJson } from "../../k8s/canonical-json.ts";
import { classifyRollout, rolloutSize, TEMPLATE_WRITTEN_ANNOTATION, type DecisionGroup, type RolloutClassification } from "../rollout.ts";
import type { Deployment, PlacementRef, ReplicaSetReconciler, ReplicaSetRun, ReplicaSetSpec } from "./run.ts";
import { specJson } from "./works-cache.ts";
import { APPLIED_OVERRIDES_ANNOTATION, replicaSetTemplates, type ClusterTemplate, type ReplicaSetTemplates } from "./overrides.ts";
import { APPLIED_OVERRIDE_ANNOTATIONS } from "../../fleet/overrides.ts";
import { CONTROLLER_HASH_LABEL, defaultedTemplate, readRevision, revisionTemplate, syncHistory } from "./revisions.ts";

/**
 * Most works one run writes: a run is one invocation (a request or an alarm), and on Cloudflare
 * an invocation of the Paid plan makes at most 10,000 subrequests (Durable Object calls and D1
 * queries; developers.cloudflare.com/workers/platform/limits, read 2026-11-26; it was 1,000):
 * each work's write tells its cluster's Durable Object, and its D1 batch and outbox deletion are
 * shared by 50 works, so 2,000 works cost about 2,100. A replica set over a larger fleet writes
 * its works over several runs, each continuing at once where the last stopped.
 */
export const MAX_WORK_WRITES_PER_RUN = 2_000;

/** A placement's decision groups from its status.decisionGroups, with PlacementDecisions not listed there grouped by their labels. */
export function decisionGroups(placement: KubeObject | null, decisions: KubeObject[]): DecisionGroup[] {
  const clustersOf = (pd: KubeObject) => ((pd.status as { decisions?: { clusterName: string }[] } | undefined)?.decisions ?? []).map((d) => d.clusterName);
  const byName = new Map(decisions.map((d) => [d.metadata.name, d]));
  const groups = new Map<number, DecisionGroup>();
  const covered = new Set<string>();
  const add = (index: number, name: string, clusters: string[]) => {
    const g = groups.get(index) ?? { index, name, clusters: [] };
    g.clusters.push(...clusters);
    groups.set(index, g);
  };
  const listed =
    (placement?.status as { decisionGroups?: { decisionGroupIndex: number; decisionGroupName: string; decisions: string[] }[] } | undefined)?.decisionGroups ??
    [];
  for (const g of listed) {
    const clusters: string[] = [];
    for (const pdName of g.decisions) {
      const pd = byName.get(pdName);
      if (!pd) continue;
      covered.add(pdName);
      clusters.push(...clustersOf(pd));
    }
    add(g.decisionGroupIndex, g.decisionGroupName, clusters);
  }
  for (const pd of decisions) {
    if (covered.has(pd.metadata.name)) continue;
    const index = Number(pd.metadata.labels?.[DECISION_GROUP_INDEX_LABEL] ?? "0");
    add(Number.isInteger(index) ? index : 0, pd.metadata.labels?.[DECISION_GROUP_NAME_LABEL] ?? "", clustersOf(pd));
  }
  return [...groups.values()].sort((a, b) => a.index - b.index);
}

/**
 * The writes of one placementRef's clusters: the template to those the rollout applies now
 * (`apply`; created, or updated with `now`, ISO time, in {@link TEMPLATE_WRITTEN_ANNOTATION}),
 * and a relabel only to a work that moved to this ref from another (its content follows the rollout).
 * A written work is labelled with `hash`, the revision it carries ({@link CONTROLLER_HASH_LABEL}).
 */
function refWrites(
  run: ReplicaSetRun,
  ref: string,
  clusters: string[],
  apply: Set<string>,
  works: Map<string, KubeObject>,
  templates: ReplicaSetTemplates,
  now: string,
  hash: string,
): { cluster: string; write: ManyWrite }[] {
  const { key, workName } = run;
  const writes: { cluster: string; write: ManyWrite }[] = [];
  for (const c of clusters) {
    const w = works.get(c);
    const t = templates.forCluster(c);
    const labels = { ...(w?.metadata.labels ?? {}), [MWRS_LABEL]: key, [PLACEMENT_NAME_LABEL]: ref };
    // An override that failed for the cluster: its work stays as it is (never half-applied).
    if (apply.has(c) && t.template) {
      const metadata = {
        ...(w?.metadata ?? {}),
        name: workName,
        namespace: c,
        // The revision the work carries (OCM's rollback enhancement).
        labels: { ...labels, [CONTROLLER_HASH_LABEL]: hash },
        annotations: withApplied({ ...(w?.metadata.annotations ?? {}), [TEMPLATE_WRITTEN_ANNOTATION]: now }, t),
      };
      const body = { apiVersion: "work.open-cluster-management.io/v1", kind: "ManifestWork", metadata, spec: structuredClone(t.template) };
      writes.push({ cluster: c, write: { namespace: c, name: workName, req: w ? { verb: "update", body } : { verb: "create", body }, known: w ?? null } });
    } else if (w && !w.metadata.deletionTimestamp) {
      // A work that moved to this ref is relabelled (its content follows the rollout); one that
      // carries the cluster's template has its applied overrides' names brought up to date (a new
      // snapshot that renders the same).
      const named = !templates.empty || [APPLIED_OVERRIDES_ANNOTATION, ...APPLIED_OVERRIDE_ANNOTATIONS].some((k) => w.metadata.annotations?.[k] !== undefined);
      const current = named && t.template !== undefined && specJson(w) === t.json;
      const annotations = current ? withApplied({ ...(w.metadata.annotations ?? {}) }, t) : w.metadata.annotations;
      const relabel = w.metadata.labels?.[PLACEMENT_NAME_LABEL] !== ref;
      if (!relabel && canonicalJson(annotations ?? {}) === canonicalJson(w.metadata.annotations ?? {})) continue;
      writes.push({
        cluster: c,
        write: {
          namespace: c,
          name: workName,
          req: { verb: "update", body: { ...w, metadata: { ...w.metadata, labels, ...(annotations ? { annotations } : {}) } } },
          known: w,
        },
      });
    }
  }
  return writes;
}

/**
 * `annotations` with {@link APPLIED_OVERRIDES_ANNOTATION} naming the cluster's ResourceOverrideSnapshots
 * and Karmada's applied-overrides annotations (each removed when none applied).
 */
function withApplied(annotations: Record<string, string>, t: ClusterTemplate): Record<string, string> {
  if (t.overrides.length > 0) annotations[APPLIED_OVERRIDES_ANNOTATION] = t.overrides.join(",");
  else delete annotations[APPLIED_OVERRIDES_ANNOTATION];
  for (const k of APPLIED_OVERRIDE_ANNOTATIONS) delete annotations[k];
  Object.assign(annotations, t.karmada);
  return annotations;
}

/**
 * Deletes the works of `leaving` together (only the work read: uid precondition; a work already
 * gone is fine), keeping `works` and the cache in step.
 * @returns whether one changed meanwhile (it still exists after a lost race)
 */
async function deleteLeaving(run: ReplicaSetRun, leaving: [string, KubeObject][], works: Map<string, KubeObject>): Promise<boolean> {
  const { env, hooks } = run;
  const cache = hooks.cache;
  let raced = false;
  for (const [c] of leaving) hooks.deleting?.(c);
  const deleted = await admittedStoreOf(env, ManifestWorkKind).writeMany(
    leaving.map(([c, w]) => ({ namespace: c, name: w.metadata.name, req: { verb: "delete", preconditions: { uid: w.metadata.uid } }, known: w })),
  );
  for (const [i, r] of deleted.entries()) {
    const [c, w] = leaving[i]!;
    if (r === "lost" && (await admittedStoreOf(env, ManifestWorkKind).get(c, w.metadata.name))) raced = true;
    // A work with finalizers stays, being deleted; one without is gone.
    if (r !== "lost" && r !== null && r.metadata.deletionTimestamp) cache?.apply(r);
    else cache?.remove(c);
    works.delete(c);
  }
  return raced;
}

/** What the placementRefs' loop found, for the placement conditions. */
interface Placed {
  /** placementRefs without a Placement or without PlacementDecisions */
  notFound: string[];
  /** Clusters decided, summed over the placementRefs. */
  decidedTotal: number;
  /** Clusters the rollout counts as succeeded. */
  succeeded: number;
  /** Clusters whose work this replica set owns. */
  owned: number;
  /** A rollout stopped at maxFailures. */
  breach: boolean;
  /** Messages for PlacementRolledOut (another owner's work in a decided cluster). */
  notes: string[];
}

/**
 * The replica set's conditions with PlacementVerified and PlacementRolledOut set (OCM's deploy
 * reconciler sets the same), at `nowMs` (epoch ms).
 */
function placementConditions(mwrs: KubeObject, placed: Placed, nowMs: number): Condition[] {
  const { notFound, decidedTotal, succeeded, owned, breach, notes } = placed;
  const conditions = structuredClone((mwrs.status?.conditions ?? []) as Condition[]);
  const at = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z");
  if (notFound.length > 0) {
    setCondition(
      conditions,
      {
        type: "PlacementVerified",
        status: "False",
        reason: "PlacementDecisionNotFound",
        message: `no PlacementDecision found for placement ${notFound.join(", ")}`,
      },
      at,
    );
  } else if (decidedTotal === 0) {
    setCondition(conditions, { type: "PlacementVerified", status: "False", reason: "PlacementDecisionEmpty", message: "" }, at);
  } else {
    setCondition(conditions, { type: "PlacementVerified", status: "True", reason: "AsExpected", message: "" }, at);
  }
  const rolledOut = succeeded === owned && owned === decidedTotal;
  if (rolledOut) {
    setCondition(conditions, { type: "PlacementRolledOut", status: "True", reason: "Complete", message: "" }, at);
  } else {
    const stopped = breach ? "; the rollout stopped: more failures than maxFailures allows" : "";
    const extra = notes.length > 0 ? `; ${notes.join("; ")}` : "";
    setCondition(
      conditions,
      { type: "PlacementRolledOut", status: "False", reason: "Progressing", message: `${succeeded} of ${decidedTotal} clusters succeeded${stopped}${extra}` },
      at,
    );
  }
  return conditions;
}

/** At most this many clusters' failures are named in the `Overridden` condition's message. */
const FAILURES_NAMED = 10;

/**
 * Sets the replica set's `Overridden` condition (Flotilla's, after KubeFleet's placement
 * condition of that name; docs/overrides.md) over the clusters it owns, at `nowMs` (epoch ms):
 * True `OverriddenSucceeded` when the overrides naming it rendered every cluster, False
 * `OverriddenFailed` naming the clusters where one failed (the first {@link FAILURES_NAMED}) and
 * why; removed when no override names the replica set.
 */
function overriddenCondition(conditions: Condition[], templates: ReplicaSetTemplates, clusters: string[], nowMs: number): void {
  if (templates.empty) {
    const i = conditions.findIndex((c) => c.type === "Overridden");
    if (i !== -1) conditions.splice(i, 1);
    return;
  }
  const at = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z");
  const failed: string[] = [];
  let applied = 0;
  for (const c of [...clusters].sort()) {
    const t = templates.forCluster(c);
    if (t.error !== undefined) failed.push(`${c}: ${t.error}`);
    else if (t.overrides.length > 0 || Object.keys(t.karmada).length > 0) applied++;
  }
  if (failed.length > 0) {
    const more = failed.length > FAILURES_NAMED ? `; and ${failed.length - FAILURES_NAMED} more` : "";
    setCondition(
      conditions,
      {
        type: "Overridden",
        status: "False",
        reason: "OverriddenFailed",
        message: `Failed to apply the override rules in ${failed.length} cluster(s): ${failed.slice(0, FAILURES_NAMED).join("; ")}${more}`,
      },
      at,
    );
  } else {
    setCondition(
      conditions,
      { type: "Overridden", status: "True", reason: "OverriddenSucceeded", message: `The override rules are applied in ${applied} cluster(s)` },
      at,
    );
  }
}

/**
 * Whether a placementRef's rollout failed, the condition of OCM's `failureStrategy: AbortAll`
 * (the enhancement: more than maxFailures of the rollout's clusters failed or passed
 * progressDeadline): the clusters at the update revision that are Failed (Degraded, or
 * Applied=False) or TimeOut number more than the strategy's `maxFailures` (int or percent of the
 * ref's clusters; default 0). For Progressive and ProgressivePerGroup this is when the rollout
 * stops (`maxFailureBreach`); an All rollout, which never stops, fails by the same count.
 */
function rolloutFailed(strategy: PlacementRef["rolloutStrategy"], total: number, classified: RolloutClassification): boolean {
  if (classified.rollout.maxFailureBreach) return true;
  const type = strategy?.type ?? "All";
  if (type !== "All") return false;
  let failures = 0;
  for (const s of classified.state.values()) if (s === "Failed" || s === "TimeOut") failures++;
  return failures > rolloutSize(strategy?.all?.maxFailures, total, 0, true);
}

/**
 * The deploy step: for each placementRef in order, the clusters its decision groups name and
 * this replica set may own, classified by the ref's rollout; writes the works the rollout calls
 * for (at most {@link MAX_WORK_WRITES_PER_RUN} in a run; `more` past it), deletes those of
 * clusters no placement decides, and leaves what it did in `run.deployment` for the status step.
 * Lost write races are noted (`raced`), never thrown.
 * @throws errors of D1 or an unexpected write failure
 */
export const deployReconciler: ReplicaSetReconciler = {
  name: "deploy",
  async reconcile(run, mwrs) {
    const { env, namespace, nowMs, hooks, key, workName, ours, named } = run;
    const cache = hooks.cache;
    const spec = (mwrs.spec ?? {}) as ReplicaSetSpec;
    const updateTemplate = defaultedTemplate(spec.manifestWorkTemplate);
    const updateJson = canonicalJson(updateTemplate);
    // The revision history (src/work/replicaset/revisions.ts): the update revision's hash.
    const history = await syncHistory(env, mwrs, updateJson);
    if (history === "lost") {
      hooks.cache?.invalidate();
      return { state: "stop", outcome: { rerun: true } };
    }
    const status = (mwrs.status ?? {}) as { updateRevision?: string; currentRevision?: string; abortedTime?: string | null };
    // An abort lasts until a new revision's rollout begins (the enhancement: abortedTime is then nil).
    const abortedTime = status.abortedTime && status.updateRevision === history.hash ? status.abortedTime : undefined;
    const current = status.currentRevision || undefined;
    // An aborted rollout goes back to the current revision, every cluster at once (when there is one to go back to).
    let revertTo: Record<string, unknown> | undefined;
    if (abortedTime && current && current !== history.hash) {
      const r = await readRevision(env, namespace, run.name, current);
      const t = r ? revisionTemplate(r) : undefined;
      if (t) revertTo = defaultedTemplate(t);
    }
    const template = revertTo ?? updateTemplate;
    const templateJson = revertTo ? canonicalJson(revertTo) : updateJson;
    const targetHash = revertTo ? current! : history.hash;
    // Each cluster's template, the ResourceOverrides naming the replica set applied (src/work/replicaset/overrides.ts).
    const templates = await replicaSetTemplates(env, namespace, run.name, template, templateJson);
    const templateJsonOf = (c: string) => templates.forCluster(c).json;
    const now = new Date(nowMs).toISOString();
    const allDecisions = (await admittedStoreOf(env, PlacementDecisionKind).list(namespace)).items;
    const works = new Map(ours.map((w) => [w.metadata.namespace!, w]));
    const foreign = new Set(named.filter((w) => w.metadata.labels?.[MWRS_LABEL] !== key).map((w) => w.metadata.namespace!));
    const owner = new Map<string, string>();
    const placed: Placed = { notFound: [], decidedTotal: 0, succeeded: 0, owned: 0, breach: false, notes: [] };
    let placementMissing = false;
    let recheckAt = Infinity;
    let raced = false;
    const perPlacement: Deployment["placements"] = [];
    let budget = MAX_WORK_WRITES_PER_RUN;
    let more = false;
    // An AbortAll placementRef whose rollout failed at this run: nothing more of the update revision is written.
    let abortNow = false;
    let deadlineExceeded = false;

    for (const ref of spec.placementRefs ?? []) {
      const placement = await admittedStoreOf(env, PlacementKind).get(namespace, ref.name);
      const pds = allDecisions.filter((d) => d.metadata.labels?.[PLACEMENT_LABEL] === ref.name);
      if (!placement || pds.length === 0) placed.notFound.push(ref.name);
      if (!placement) placementMissing = true;
      const groups = decisionGroups(placement, pds);
      const decided = new Set(groups.flatMap((g) => g.clusters));
      // A cluster decided by an earlier placementRef keeps that ref's work (one work per cluster);
      // a work being deleted is recreated once it is gone; another owner's work is left alone.
      const mine = (c: string) => !owner.has(c) && !foreign.has(c) && !works.get(c)?.metadata.deletionTimestamp;
      for (const c of decided) if (foreign.has(c)) placed.notes.push(`a ManifestWork ${workName} not created by this replica set exists in ${c}`);
      const usable = groups.map((g) => ({ ...g, clusters: [...new Set(g.clusters)].filter(mine) }));
      const clusters = [...new Set(usable.flatMap((g) => g.clusters))];
      for (const c of clusters) owner.set(c, ref.name);
      placed.decidedTotal += decided.size;
      perPlacement.push({ name: ref.name, groups: groups.length, decided: decided.size, clusters });

      // The same classification as the dashboard's rollout page (src/ui/app/replicasets.tsx).
      // Reverting (an aborted rollout): every cluster at once, as OCM's enhancement says; an
      // aborted rollout without a revision to go back to writes nothing more.
      const strategy = abortedTime ? { type: "All" as const } : ref.rolloutStrategy;
      const classified = classifyRollout(strategy, usable, works, templateJsonOf, nowMs, (w) => specJson(w as KubeObject));
      placed.succeeded += classified.succeeded;
      const rollout = classified.rollout;
      const failed = !abortedTime && rolloutFailed(ref.rolloutStrategy, clusters.length, classified);
      // An All rollout never stops: its failure only aborts (AbortAll) or says a deadline passed.
      if (rollout.maxFailureBreach) placed.breach = true;
      if (failed && rollout.timedOut.length > 0) deadlineExceeded = true;
      if (failed && ref.rolloutStrategy?.failureStrategy === "AbortAll" && current && current !== history.hash) abortNow = true;
      if (rollout.recheckAfterMs !== undefined) recheckAt = Math.min(recheckAt, nowMs + rollout.recheckAfterMs);
      if (abortNow || (abortedTime && !revertTo)) continue;

      // The works of this ref's clusters are written together, in D1 batches (writeMany).
      const writes = refWrites(run, ref.name, clusters, new Set(rollout.toApply), works, templates, now, targetHash);
      if (writes.length > budget) {
        more = true;
        writes.length = budget;
      }
      budget -= writes.length;
      const written = await admittedStoreOf(env, ManifestWorkKind).writeMany(writes.map((x) => x.write));
      written.forEach((r, i) => {
        if (r === "lost" || !r) raced = true;
        else {
          works.set(writes[i]!.cluster, r);
          cache?.apply(r);
        }
      });
    }
    placed.owned = owner.size;

    // Clusters no placement decides any more lose their work at once (deleted together; one
    // changed meanwhile is a rerun). A missing Placement (not one without decisions) keeps every
    // work, as OCM's deploy reconciler stops at PlacementDecisionNotFound: a Placement deleted by
    // mistake or not yet restored from a backup does not tear the workloads down.
    const leaving = placementMissing || abortNow ? [] : [...works].filter(([c, w]) => !owner.has(c) && !w.metadata.deletionTimestamp);
    if (leaving.length > budget) {
      more = true;
      leaving.length = budget;
    }
    if (await deleteLeaving(run, leaving, works)) raced = true;

    const conditions = placementConditions(mwrs, placed, nowMs);
    overriddenCondition(conditions, templates, [...owner.keys()], nowMs);
    const revision = {
      hash: history.hash,
      collisionCount: history.collisionCount,
      change: history.change,
      current,
      abortedTime,
      reverting: !!revertTo,
      abortNow,
      deadlineExceeded,
    };
    run.deployment = { works, templateJson, templateJsonOf, placements: perPlacement, conditions, recheckAt, raced, more, revision };
    // An abort found now is written first (the status step), then the next run reverts.
    if (abortNow) run.deployment.raced = true;
    return { state: "continue", mwrs };
  },
};
