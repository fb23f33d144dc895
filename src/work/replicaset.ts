/**
 * The ManifestWorkReplicaSet controller (OCM `pkg/work/hub/controllers/manifestworkreplicasetcontroller`,
 * ../shared/reference/ocm-semantics.md section 4): one ManifestWork per cluster its placements
 * decide, rolled out by each placementRef's rollout strategy (src/work/rollout.ts), and OCM's
 * status (summary, placementSummary, PlacementVerified, PlacementRolledOut, ManifestworkApplied).
 *
 * Runs are serialised per replica set in its Durable Object (durable-objects/replicaset.ts,
 * named `<namespace>/<name>`); every run reads the current state from D1 and writes through
 * the store (src/store/store.ts), so works delivery and watches see the controller's writes like any other.
 *
 * Triggers (each names exactly one replica set, or the ones referring to a placement):
 * - a write of the replica set that creates it, changes its spec (generation) or starts its
 *   deletion: run before the write returns;
 * - a status report on one of its works (a status change of a work carrying the
 *   {@link MWRS_LABEL} label): a run shortly after (the object's alarm, at once; reports that
 *   arrive during a run coalesce into the next);
 * - a change of a placement's decisions (a PlacementDecision's write): run before the
 *   scheduler's caller returns ({@link replicaSetsForPlacements}, from the hook);
 * - the deletion of one of its works, the removal of the replica set object or of its finalizer
 *   by someone else: a run shortly after as well, never awaited, since the controller's own runs
 *   make such writes;
 * - rollout timers (minSuccessTime, progressDeadline): the object's `replicaset` timer at the
 *   moment due (the controller manifest, src/controllers.ts).
 * The controller's own writes (works' spec and metadata, the replica set's status and
 * finalizer) trigger nothing, so a run never waits for a run of its own object.
 *
 * This module is OCM's `manifestworkreplicaset_controller.go`: what wakes the controller (the
 * after-commit hook below, as OCM's informers' queue key functions) and one run, a chain of small
 * reconcilers under src/work/replicaset/, run in OCM's order, each going on or stopping the run:
 * - `finalize.ts` (finalizeReconciler): a replica set being deleted or gone: its works deleted,
 *   then its finalizer removed;
 * - `add-finalizer.ts` (addFinalizerReconciler): the finalizer added before any work is written;
 * - `deploy.ts` (deployReconciler): the works the placements' decisions and the rollout call for,
 *   the PlacementVerified and PlacementRolledOut conditions;
 * - `status.ts` (statusReconciler): the summaries and ManifestworkApplied, the status written.
 * `run.ts` has their shared shape; what a run reads at its start is {@link startRun} here (as
 * OCM's `sync` reads it before its reconcilers); `works-cache.ts` the
 * object's copy of the works; `names.ts` the finalizer, label value and work name.
 */
import { resourceKey } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { deepEqual } from "../k8s/fieldmanager.ts";
import { ManifestWorkKind, ManifestWorkReplicaSetKind, MWRS_LABEL } from "../kinds/manifestwork.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import type { Env } from "../env.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { CommitGroups, SendGroups } from "../store/group-commit.ts";
import { armSweep, deleteOutboxRows, OUTBOX_GRACE_MS } from "../store/outbox.ts";
import { clock } from "../clock.ts";
import { sharedRead, type AfterCommitHook, type Change, type HookTarget } from "../store/hooks.ts";
import { decisionsMoved } from "../placement/changes.ts";
import { addFinalizerReconciler } from "./replicaset/add-finalizer.ts";
import { deployReconciler } from "./replicaset/deploy.ts";
import { finalizeReconciler } from "./replicaset/finalize.ts";
import { generatedWorkName, MWRS_FINALIZER, parseReplicaSetKey, replicaSetKey } from "./replicaset/names.ts";
import type { ReconcileResult, ReplicaSetReconciler, ReplicaSetRun, ReplicaSetSpec, RunHooks, RunOutcome } from "./replicaset/run.ts";
import { statusReconciler } from "./replicaset/status.ts";
import { replicaSetsWithOverrides } from "./replicaset/overrides.ts";

export { TEMPLATE_WRITTEN_ANNOTATION } from "./rollout.ts";
export { MWRS_FINALIZER, generatedWorkName, replicaSetKey } from "./replicaset/names.ts";
export { WORKS_RESYNC_MS, WorksCache } from "./replicaset/works-cache.ts";
export { decisionGroups, MAX_WORK_WRITES_PER_RUN } from "./replicaset/deploy.ts";
export type { RunHooks, RunOutcome } from "./replicaset/run.ts";

/**
 * The reconcilers after {@link finalizeReconciler}, in OCM's order (`reconcilers` in
 * `NewManifestWorkReplicaSetController`): each sees a replica set that exists and is not being
 * deleted, and goes on or stops the run; the last one's outcome is the run's.
 */
const RECONCILERS: readonly ReplicaSetReconciler[] = [addFinalizerReconciler, deployReconciler, statusReconciler];

/**
 * Starts a run at `nowMs` (epoch ms): reads the replica set, then the works named after it (from
 * `hooks.cache` when it holds them, else from the store, filling the cache).
 * @throws errors of D1
 */
async function startRun(env: Env, namespace: string, name: string, nowMs: number, hooks: RunHooks): Promise<ReplicaSetRun> {
  const key = replicaSetKey(namespace, name);
  const workName = generatedWorkName(namespace, name);
  const read = await admittedStoreOf(env, ManifestWorkReplicaSetKind).get(namespace, name);
  const cache = hooks.cache;
  let named = cache?.current(nowMs) ?? null;
  if (!named) {
    named = await admittedStoreOf(env, ManifestWorkKind).listNamed(workName);
    cache?.fill(named, nowMs);
  }
  const ours = named.filter((w) => w.metadata.labels?.[MWRS_LABEL] === key);
  return { env, namespace, name, nowMs, hooks, key, workName, read, named, ours };
}

/**
 * Reconciles one replica set at `nowMs` (epoch ms), as OCM's controller `sync` does: reads it and
 * the works named after it (`hooks.cache` when it holds them), then runs the reconcilers in order
 * until one stops: finalize (a replica set being deleted, or gone, has its works deleted, then
 * its finalizer removed: Foreground only once the works are gone, Background, the default, as
 * soon as their deletion is requested; a gone one's leftover works are deleted), add finalizer,
 * deploy (creates, updates and deletes works through the store as the placements' decisions and
 * the rollout strategies call for) and status (written through the status subresource when it
 * changed).
 * @throws errors of D1 or an unexpected write failure (the caller retries later); lost write
 *   races are reported as `rerun`.
 */
export async function runReplicaSet(env: Env, namespace: string, name: string, nowMs: number, hooks: RunHooks = {}): Promise<RunOutcome> {
  const run = await startRun(env, namespace, name, nowMs, hooks);
  let step: ReconcileResult = await finalizeReconciler.reconcile(run, run.read);
  for (const reconciler of RECONCILERS) {
    if (step.state === "stop") break;
    step = await reconciler.reconcile(run, step.mwrs);
  }
  return step.state === "stop" ? step.outcome : {};
}

function stub(env: Env, namespace: string, name: string) {
  return env.REPLICASETS.getByName(`${namespace}/${name}`);
}

/**
 * Runs the replica set's controller and waits for a run that started after this call. When the
 * object cannot be reached, asks for a later run instead (its alarm).
 * @throws when neither could be done (the caller's outbox row keeps the work, or it logs)
 */
async function reconcileNow(env: Env, namespace: string, name: string): Promise<void> {
  try {
    await stub(env, namespace, name).reconcile(namespace, name);
  } catch (e) {
    console.error(`replica set ${namespace}/${name}: could not run it; asking for a later run`, e);
    await reconcileSoon(env, namespace, name);
  }
}

/**
 * One change a replica set's object is told of: a work as stored (`work`), its removal (`work`
 * null, with `deletedWorkIn`, the cluster's name), or a change whose object is unknown (`work`
 * undefined: an outbox sweep's; the object then reads every work at its next run).
 */
export interface ReplicaSetChange {
  deletedWorkIn?: string;
  work?: KubeObject | null;
}

/** A notification on its way to a replica set's object: which one, and the change. */
interface Notification {
  namespace: string;
  name: string;
  change: ReplicaSetChange;
}

/** Most notifications one group carries (one call per replica set among them). */
const NOTIFY_GROUP_MAX = 500;

/** The notification groups of each replica set namespace binding (one per isolate), made on first use. */
const notifyGroups = new WeakMap<DurableObjectNamespace, CommitGroups<Notification, void>>();

/**
 * Sends a group of notifications: one `notifyMany` call per replica set among them, in parallel.
 * @throws when a call fails (the group's notifications are then sent again one by one: telling an
 *   object twice of a change is harmless)
 */
async function sendNotifications(env: Env, items: Notification[]): Promise<void[]> {
  const byTarget = new Map<string, Notification[]>();
  for (const n of items) {
    const key = `${n.namespace}/${n.name}`;
    const xs = byTarget.get(key);
    if (xs) xs.push(n);
    else byTarget.set(key, [n]);
  }
  await Promise.all(
    [...byTarget.values()].map((ns) =>
      stub(env, ns[0]!.namespace, ns[0]!.name).notifyMany(
        ns[0]!.namespace,
        ns[0]!.name,
        ns.map((n) => n.change),
      ),
    ),
  );
  return items.map(() => undefined);
}

/**
 * Asks for a run shortly after (the object's alarm, at once) without waiting for it, handing over
 * the changed work as stored when the change carries it (`work`; null: the work was removed).
 * Notifications that come while one is in flight go together when it returns (group commit,
 * src/store/group-commit.ts): during a fleet's rollout, the reports of many clusters reach their
 * replica set's object in a few calls, not one each. Resolves once the object was told.
 * @throws when the object cannot be reached
 */
async function reconcileSoon(env: Env, namespace: string, name: string, deletedWorkIn?: string, work?: KubeObject | null): Promise<void> {
  let groups = notifyGroups.get(env.REPLICASETS);
  if (!groups) {
    groups = new CommitGroups((items: Notification[]) => sendNotifications(env, items), NOTIFY_GROUP_MAX);
    notifyGroups.set(env.REPLICASETS, groups);
  }
  await groups.run({ namespace, name, change: { deletedWorkIn, work } });
}

/** A notification whose writer's outbox row the hook took over: the row is deleted once it was sent. */
interface TakenNotification extends Notification {
  outboxId: string;
}

/** The taken-over notification groups of each replica set namespace binding (one per isolate), made on first use. */
const takenGroups = new WeakMap<DurableObjectNamespace, SendGroups<TakenNotification>>();
/** Whether this isolate has set the outbox sweep for the rows its notifications took over. */
let takenSweepSet = false;

/**
 * Sends a group of taken-over notifications ({@link sendNotifications}), then deletes their
 * outbox rows in one statement.
 * @throws when a notification could not be sent (the rows stay: the sweep sends them again)
 */
async function sendTaken(env: Env, items: TakenNotification[]): Promise<void> {
  await sendNotifications(env, items);
  await deleteOutboxRows(
    env,
    items.map((n) => n.outboxId),
  );
}

/**
 * {@link reconcileSoon} for an agent's status report whose outbox row has this hook as its only
 * one (the writer does not wait for its effects): the notification joins this isolate's next
 * group without waiting for it, as the scheduling hook hands its trigger over
 * (src/placement/controller.ts), and the group's send deletes the rows of the notifications it
 * carried. Only the notification that starts a group waits, for the group before it and its
 * own group's send; the rest of a fleet's reports during a rollout cost a push each, not a wait
 * with a timer. A group lost (its leader's request cancelled, or its send failed) leaves its
 * rows to the outbox sweep, which the first such group of an isolate sets for when they are due.
 * @throws what the group's send threw, for the group's leader
 */
async function takeOver(env: Env, namespace: string, name: string, outboxId: string, work: KubeObject | null | undefined): Promise<void> {
  let groups = takenGroups.get(env.REPLICASETS);
  if (!groups) {
    groups = new SendGroups((items: TakenNotification[]) => sendTaken(env, items), NOTIFY_GROUP_MAX);
    takenGroups.set(env.REPLICASETS, groups);
  }
  if (!takenSweepSet) {
    takenSweepSet = true;
    await armSweep(env, clock.now() + OUTBOX_GRACE_MS);
  }
  await groups.add({ namespace, name, change: { work }, outboxId });
}

/**
 * What a write owes a replica set: its run now (awaited) or soon (its alarm), and the cluster
 * whose work was deleted; or the runs, awaited, of the replica sets that refer to a placement whose
 * decisions moved (`placement`, `<namespace>/<name>`).
 */
type ReplicaSetOwed = { namespace: string; name: string; now?: true; deletedWorkIn?: string } | { placement: string } | { relabeled: string };

/**
 * Which replica set run a committed write calls for:
 * - a ManifestWorkReplicaSet created, its spec changed (generation) or its deletion started:
 *   its run, awaited (the write returns after it);
 * - removed, or its finalizer removed by someone else: a run shortly after (not awaited);
 * - a ManifestWork carrying {@link MWRS_LABEL} whose status changed (an agent's report or an
 *   admin's status write): its replica set's run shortly after (the object's alarm, set to now;
 *   not awaited, so an agent's report returns at once and the reports of many clusters that
 *   arrive during a run coalesce into the next run);
 * - such a work deleted (or its deletion started): a run shortly after (not awaited: the
 *   controller itself deletes works);
 * - a PlacementDecision whose decisions moved (src/placement/changes.ts `decisionsMoved`): the
 *   runs of the replica sets that refer to its placement, awaited (as OCM's controller watches
 *   the PlacementDecision informer);
 * - a ManagedCluster whose labels changed: runs shortly after of the replica sets a
 *   ResourceOverride names (its rules select clusters and read variables by label:
 *   src/work/replicaset/overrides.ts).
 * Status-only writes of a replica set and spec or metadata writes of works are the
 * controller's own and call for nothing.
 */
function planReplicaSet(change: Change): ReplicaSetOwed | null {
  const { def, namespace, name, before, after } = change;
  const placement = decisionsMoved(change);
  if (placement) return { placement };
  if (def === ManagedClusterKind) return before && after && !deepEqual(before.metadata.labels ?? {}, after.metadata.labels ?? {}) ? { relabeled: name } : null;
  if (def === ManifestWorkReplicaSetKind) {
    if (!after) return { namespace, name };
    const started =
      !before || before.metadata.generation !== after.metadata.generation || (!before.metadata.deletionTimestamp && !!after.metadata.deletionTimestamp);
    if (started) return { namespace, name, now: true };
    const lost = (before.metadata.finalizers ?? []).includes(MWRS_FINALIZER) && !(after.metadata.finalizers ?? []).includes(MWRS_FINALIZER);
    if (lost && !after.metadata.deletionTimestamp) return { namespace, name };
    return null;
  }
  if (def !== ManifestWorkKind) return null;
  const owner = parseReplicaSetKey((after ?? before)?.metadata.labels?.[MWRS_LABEL]);
  if (!owner) return null;
  if (before && after && !deepEqual(before.status ?? null, after.status ?? null)) return owner;
  if (!after || (after.metadata.deletionTimestamp && !before?.metadata.deletionTimestamp)) return { ...owner, deletedWorkIn: namespace };
  return null;
}

/**
 * The replica set controller's after-commit hook (src/store/hooks.ts): runs or notifies the
 * replica set a write calls for ({@link planReplicaSet}). An awaited run of the written replica
 * set itself reports `rewrote` (the run adds its finalizer and writes its status). Idempotent:
 * a run reads the current state.
 */
export const replicaSetHook: AfterCommitHook<ReplicaSetOwed> = {
  name: "replicasets",
  plan: planReplicaSet,
  async run(env, owed, target) {
    if ("placement" in owed) return replicaSetsForPlacements(env, [owed.placement], target);
    if ("relabeled" in owed) {
      for (const rs of await replicaSetsWithOverrides(env)) await reconcileSoon(env, rs.namespace, rs.name);
      return;
    }
    // A work's change run right after its commit carries the work as stored: the replica set's
    // object keeps it instead of reading every work back (a sweep's run has only the key).
    const work = target.change?.def === ManifestWorkKind ? target.change.after : undefined;
    if (!owed.now && owed.deletedWorkIn === undefined && target.outbox?.only && !target.writerWaits && !target.recovering) {
      await takeOver(env, owed.namespace, owed.name, target.outbox.id, work);
      return { tookRow: true };
    }
    if (!owed.now) return reconcileSoon(env, owed.namespace, owed.name, owed.deletedWorkIn, work);
    await reconcileNow(env, owed.namespace, owed.name);
    return { rewrote: target.resource === resourceKey(ManifestWorkReplicaSetKind) && target.namespace === owed.namespace && target.name === owed.name };
  },
};

/**
 * Runs the replica sets that refer to any of `placements` (`<namespace>/<name>` keys whose
 * decisions changed) and waits for them: the hook's run for a PlacementDecision's change.
 * A run's failure is logged, never thrown (the replica set's object retries it on its alarm).
 * The namespace's list of replica sets is shared with the other hook runs of `target`'s group
 * (src/store/hooks.ts `sharedRead`).
 * @throws errors of D1 (listing the replica sets): the outbox row keeps the run owed
 */
export async function replicaSetsForPlacements(env: Env, placements: string[], target?: HookTarget): Promise<void> {
  if (placements.length === 0) return;
  const byNamespace = new Map<string, Set<string>>();
  for (const p of placements) {
    const i = p.indexOf("/");
    const ns = p.slice(0, i);
    if (!byNamespace.has(ns)) byNamespace.set(ns, new Set());
    byNamespace.get(ns)!.add(p.slice(i + 1));
  }
  const runs: Promise<void>[] = [];
  for (const [ns, names] of byNamespace) {
    const { items } = await sharedRead(target, `manifestworkreplicasets/${ns}`, () => admittedStoreOf(env, ManifestWorkReplicaSetKind).list(ns));
    for (const m of items) {
      const refs = (m.spec as ReplicaSetSpec | undefined)?.placementRefs ?? [];
      if (refs.some((r) => names.has(r.name))) runs.push(reconcileNow(env, ns, m.metadata.name));
    }
  }
  const results = await Promise.allSettled(runs);
  for (const r of results) if (r.status === "rejected") console.error("replica set run failed", r.reason);
}

/**
 * Reconciles one ManifestWorkReplicaSet now (a webhook's re-evaluate action) and waits for a
 * run that started after this call. Does nothing harmful for a replica set that does not exist
 * (its leftover works, if any, are deleted).
 */
export async function reevaluateReplicaSet(env: Env, namespace: string, name: string): Promise<void> {
  try {
    await reconcileNow(env, namespace, name);
  } catch (e) {
    console.error(`replica set ${namespace}/${name}: could not ask for a run`, e);
  }
}
