/**
 * Deleting ManifestWorks as OCM does (../shared/reference/ocm-semantics.md section 3;
 * OCM `pkg/work/spoke/controllers/finalizercontroller`, `pkg/work/hub/controllers/manifestworkgarbagecollection`):
 *
 * - The finalizer {@link MANIFEST_WORK_CLEANUP_FINALIZER} is put on a work once its agent holds it:
 *   OCM's agent adds it before applying (`AddFinalizerController`, which writes nothing when the
 *   work has it); Flotilla's hub adds it at the agent's first status report of the work
 *   (src/agent-api/work-report.ts `reportWorkStatus`), so a work a person created that no agent
 *   ever saw is deleted at once, as in OCM. The works a hub controller makes for an agent (a
 *   KubeFleet placement's, a Karmada policy's) carry it from their create ({@link heldFromBirth}):
 *   the agent will hold them, and the finalizer's own write per work is saved. Deleting one its
 *   agent never saw waits for the agent's confirmation as any held work does: the agent finds it
 *   being deleted with nothing applied and confirms at once (OCM's ManifestWorkFinalizeController
 *   drops the finalizer when no AppliedManifestWork is left).
 * - Deleting a work that carries it keeps the work, with a `Deleting` condition
 *   ({@link workDeletingHook}), until the agent reports that it removed what the work applied
 *   (a report with `released: true`, src/agent-api/protocol.ts), honouring `deleteOption`; then the
 *   hub drops the finalizer and the work goes. A work whose cluster does not exist (its namespace
 *   has no ManagedCluster: nobody is left to confirm) loses the finalizer at once; the works of a
 *   removed cluster lose it with the namespace's cleanup (src/work/controller.ts), since the cluster's
 *   leave released everything (or the cluster is gone).
 * - `deleteOption.ttlSecondsAfterFinished`: a work whose `Complete` condition is True is deleted
 *   that many seconds after the condition's `lastTransitionTime` ({@link workTtlHook}): a timer of
 *   the cluster's Durable Object (durable-objects/timers.ts) on the injected clock, set when the
 *   condition turns True, never a scan of all works.
 */
import { ApiError } from "../k8s/errors.ts";
import { findCondition, rfc3339, setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { Conditions, ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ManifestWorkKind } from "../kinds/manifestwork.ts";
import type { AfterCommitHook } from "../store/hooks.ts";
import { type WriteOptions } from "../store/store.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { clock } from "../clock.ts";
import type { Env } from "../env.ts";

/** OCM's finalizer on a ManifestWork its agent holds (`controllers.ManifestWorkFinalizer`). */
export const MANIFEST_WORK_CLEANUP_FINALIZER = "cluster.open-cluster-management.io/manifest-work-cleanup";
/** The work condition shown while the agent removes what the work applied (OCM `WorkDeleting`). */
export const WORK_DELETING_CONDITION = "Deleting";
/** Reason of the `Deleting` condition while applied resources remain on the cluster (OCM's `ResourceRemaining`). */
export const DELETING_RESOURCE_REMAINING = "ResourceRemaining";
/** The timer purpose prefix of a work's TTL in its cluster's Durable Object: `work-ttl/<uid>/<name>`. */
export const WORK_TTL_TIMER_PREFIX = "work-ttl/";

/**
 * The finalizers of a ManifestWork a hub controller creates for its cluster's agent: the cleanup
 * finalizer, as the agent would add it at its first sight of the work (see the module comment). A
 * new array each call (the caller's work owns it).
 */
export function heldFromBirth(): string[] {
  return [MANIFEST_WORK_CLEANUP_FINALIZER];
}

/** Whether `work` carries the cleanup finalizer. */
export function holdsCleanupFinalizer(work: KubeObject | null | undefined): boolean {
  return work?.metadata.finalizers?.includes(MANIFEST_WORK_CLEANUP_FINALIZER) ?? false;
}

/**
 * Writes `work`'s finalizers as `finalizers` (a merge patch pinned to the work's resourceVersion,
 * so a stale copy changes nothing; computed on `work` itself, so a current copy is not read again
 * from D1 first: a stale one fails the commit's precondition, then the pin). Returns the work as stored (null: it went, its last
 * finalizer removed), or undefined when the work changed meanwhile or is gone (404, 409): the
 * caller's next pass sees the fresh work.
 * @throws ApiError for other failures
 */
async function writeFinalizers(env: Env, work: KubeObject, finalizers: string[], opts?: WriteOptions): Promise<KubeObject | null | undefined> {
  try {
    const out = await admittedStoreOf(env, ManifestWorkKind).write(
      work.metadata.namespace ?? "",
      work.metadata.name,
      {
        verb: "patch",
        patchType: "merge",
        patch: { metadata: { finalizers: finalizers.length > 0 ? finalizers : null, resourceVersion: work.metadata.resourceVersion } },
      },
      { known: work, ...opts },
    );
    return out.object;
  } catch (e) {
    if (e instanceof ApiError && (e.code === 404 || e.code === 409)) return undefined;
    throw e;
  }
}

/**
 * Puts the cleanup finalizer on `work` (as stored, with its resourceVersion) when its agent
 * reported it and it has none and is not being deleted (OCM's agent `AddFinalizerController`).
 * `work` may be a copy (the work as its agent was pushed it): no D1 read when it is current. A
 * work changed meanwhile (a stale copy) or gone is left alone.
 * @returns the work as stored after the write, `work` when it needs none, or undefined when the
 *   work changed meanwhile or is gone (nothing written: the caller reads it fresh)
 * @throws ApiError for failures other than 404/409
 */
export async function holdForCleanup(env: Env, work: KubeObject, opts?: WriteOptions): Promise<KubeObject | undefined> {
  if (work.metadata.deletionTimestamp || holdsCleanupFinalizer(work)) return work;
  const written = await writeFinalizers(env, work, [...(work.metadata.finalizers ?? []), MANIFEST_WORK_CLEANUP_FINALIZER], opts);
  return written ?? undefined;
}

/**
 * Drops the cleanup finalizer from `work` (as stored): the agent released what it applied, or no
 * agent is left to. The work goes when no other finalizer holds it.
 * @returns the work as stored (null: gone; undefined: changed meanwhile or gone already)
 * @throws ApiError for failures other than 404/409
 */
export async function releaseCleanupFinalizer(env: Env, work: KubeObject, opts?: WriteOptions): Promise<KubeObject | null | undefined> {
  if (!holdsCleanupFinalizer(work)) return work;
  return writeFinalizers(
    env,
    work,
    (work.metadata.finalizers ?? []).filter((f) => f !== MANIFEST_WORK_CLEANUP_FINALIZER),
    opts,
  );
}

/**
 * Whether an agent ever joined `cluster`: its ManagedCluster carries OCM's `ManagedClusterJoined`
 * condition (set True by the agent's first heartbeat, False once it leaves; absent while no agent
 * ever came). Without one, no agent has seen the cluster's works, so none holds them.
 */
function agentEverJoined(cluster: KubeObject): boolean {
  return findCondition((cluster.status as { conditions?: Condition[] } | undefined)?.conditions ?? [], Conditions.Joined) !== undefined;
}

/**
 * A deletion started on a work its agent holds: the work shows `Deleting` (True, reason
 * `ResourceRemaining`) until its agent confirms; when its namespace has no ManagedCluster, or its
 * cluster never had an agent join (a work born held, {@link heldFromBirth}, that no agent can have
 * seen: OCM's agent would never have added the finalizer), nobody will, and the finalizer is
 * dropped at once (the work goes). Idempotent: run again, it finds the condition set, or the work
 * gone.
 */
export const workDeletingHook: AfterCommitHook<true> = {
  name: "work-deleting",
  plan: (change) =>
    change.def === ManifestWorkKind &&
    change.after?.metadata.deletionTimestamp &&
    !change.before?.metadata.deletionTimestamp &&
    holdsCleanupFinalizer(change.after)
      ? true
      : null,
  async run(env, _owed, target) {
    const work = await admittedStoreOf(env, ManifestWorkKind).get(target.namespace, target.name);
    if (!work || !work.metadata.deletionTimestamp || !holdsCleanupFinalizer(work)) return;
    const cluster = await admittedStoreOf(env, ManagedClusterKind).getCommitted("", target.namespace);
    if (!cluster || !agentEverJoined(cluster)) {
      await releaseCleanupFinalizer(env, work);
      return;
    }
    const status = (work.status ?? {}) as { conditions?: Condition[] };
    const conditions = structuredClone(status.conditions ?? []);
    const changed = setCondition(
      conditions,
      {
        type: WORK_DELETING_CONDITION,
        status: "True",
        reason: DELETING_RESOURCE_REMAINING,
        message: `waiting for the work agent of cluster ${target.namespace} to remove the resources this work applied`,
      },
      rfc3339(clock.now()),
    );
    if (!changed) return;
    try {
      // Pinned to the resourceVersion read: an agent's report or confirmation meanwhile wins.
      await admittedStoreOf(env, ManifestWorkKind).write(target.namespace, target.name, {
        verb: "update",
        subresource: "status",
        body: { ...work, status: { ...status, conditions } },
      });
    } catch (e) {
      // Gone (the agent confirmed meanwhile) or changed (an agent report): nothing more to show.
      if (e instanceof ApiError && (e.code === 404 || e.code === 409)) return;
      throw e;
    }
    return { rewrote: true };
  },
};

/**
 * When a work with `deleteOption.ttlSecondsAfterFinished` is to be deleted (epoch milliseconds):
 * its `Complete` condition's lastTransitionTime plus the TTL, once that condition is True and the
 * work is not being deleted; null otherwise (OCM's ManifestWorkGarbageCollectionController).
 */
export function ttlDeadline(work: KubeObject | null | undefined): number | null {
  if (!work || work.metadata.deletionTimestamp) return null;
  const ttl = (work.spec as { deleteOption?: { ttlSecondsAfterFinished?: number } } | undefined)?.deleteOption?.ttlSecondsAfterFinished;
  if (typeof ttl !== "number") return null;
  const complete = findCondition((work.status as { conditions?: Condition[] } | undefined)?.conditions ?? [], "Complete");
  if (complete?.status !== "True") return null;
  const since = Date.parse(complete.lastTransitionTime ?? "");
  return (Number.isFinite(since) ? since : clock.now()) + ttl * 1000;
}

/** What a work owes {@link workTtlHook}: its uid and deadline (epoch milliseconds). */
interface TtlOwed {
  uid: string;
  due: number;
}

/**
 * Deletes a completed work after its TTL: when a write makes a work's TTL deadline
 * ({@link ttlDeadline}) appear or move, a deadline past is acted on at once, a later one becomes a
 * timer of the cluster's Durable Object (`ClusterObject.workTtl`), whose alarm deletes the work
 * then ({@link deleteExpiredWork}). Idempotent.
 */
export const workTtlHook: AfterCommitHook<TtlOwed> = {
  name: "work-ttl",
  plan(change) {
    if (change.def !== ManifestWorkKind || !change.after) return null;
    const due = ttlDeadline(change.after);
    if (due === null || due === ttlDeadline(change.before)) return null;
    return { uid: change.after.metadata.uid, due };
  },
  async run(env, owed, target) {
    if (owed.due <= clock.now()) {
      await deleteExpiredWork(env, target.namespace, target.name, owed.uid);
      return;
    }
    await env.CLUSTERS.getByName(target.namespace).workTtl(target.name, owed.uid, owed.due);
  },
};

/**
 * Deletes work `name` of namespace `namespace` when it is still the one of `uid` and its TTL
 * deadline has passed at the injected clock's now (a work changed since, e.g. no longer Complete,
 * is left alone; its own writes set a new timer).
 * @returns the deadline still ahead (epoch milliseconds) when it moved later, else null
 * @throws ApiError for failures other than 404/409
 */
export async function deleteExpiredWork(env: Env, namespace: string, name: string, uid: string): Promise<number | null> {
  const work = await admittedStoreOf(env, ManifestWorkKind).get(namespace, name);
  if (!work || work.metadata.uid !== uid) return null;
  const due = ttlDeadline(work);
  if (due === null) return null;
  if (due > clock.now()) return due;
  try {
    await admittedStoreOf(env, ManifestWorkKind).write(namespace, name, { verb: "delete", preconditions: { uid } });
  } catch (e) {
    if (!(e instanceof ApiError && (e.code === 404 || e.code === 409))) throw e;
  }
  return null;
}

/** The timer purpose of a work's TTL (see {@link WORK_TTL_TIMER_PREFIX}). */
export function workTtlTimer(name: string, uid: string): string {
  return `${WORK_TTL_TIMER_PREFIX}${uid}/${name}`;
}

/** The work a TTL timer purpose names, or null for another purpose. */
export function parseWorkTtlTimer(purpose: string): { uid: string; name: string } | null {
  if (!purpose.startsWith(WORK_TTL_TIMER_PREFIX)) return null;
  const rest = purpose.slice(WORK_TTL_TIMER_PREFIX.length);
  const slash = rest.indexOf("/");
  if (slash <= 0) return null;
  return { uid: rest.slice(0, slash), name: rest.slice(slash + 1) };
}
