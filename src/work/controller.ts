/**
 * After-commit hooks of delivery (src/store/hooks.ts): of the deliverables (ManifestWorks and
 * replicated Policies, src/work/namespace-deliverables.ts) to their cluster's agent, and the
 * removal of what a removed cluster's namespace held.
 */
import { ApiError } from "../k8s/errors.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ManifestWorkKind } from "../kinds/manifestwork.ts";
import { PolicyKind, isReplicatedPolicy } from "../kinds/policy.ts";
import { AddOnPlacementScoreKind } from "../kinds/placement.ts";
import type { AfterCommitHook, Change } from "../store/hooks.ts";
import { DELIVERED_POLICY_KIND, deltaMessage, type DeliverableDelta } from "./namespace-deliverables.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { releaseCleanupFinalizer } from "./deletion.ts";

/**
 * Whether a change alters what the agent receives: the deliverable but its status and
 * resourceVersion (its view). A new generation is such a change without serialising either side
 * (the generation is part of the view): a replica set's rollout writes a fleet's works at once,
 * each with a new spec.
 */
function deliveredViewChanged(before: KubeObject | null, after: KubeObject | null): boolean {
  // Created or removed: the view changed, and neither side is serialised (a placement's create
  // writes a fleet's works, each with a 30 KB spec).
  if (!before || !after) return before !== after;
  if (before.metadata.generation !== after.metadata.generation) return true;
  // The views compared field by field, the metadata first (an agent's report changes neither):
  // two views' JSON is the same exactly when their fields are, in order, with the same JSON each.
  const meta = (o: KubeObject) => o.metadata as unknown as Record<string, unknown>;
  const top = (o: KubeObject) => o as unknown as Record<string, unknown>;
  return !sameJsonFields(meta(before), meta(after), "resourceVersion") || !sameJsonFields(top(before), top(after), "status", "metadata");
}

/**
 * Whether `JSON.stringify` gives `a` and `b` the same text once the fields `skip` are left out,
 * without building either text whole: the fields JSON keeps (not undefined, a function or a
 * symbol), in the same order, each with the same JSON (the same value needs no text).
 */
function sameJsonFields(a: Record<string, unknown>, b: Record<string, unknown>, ...skip: string[]): boolean {
  const kept = (o: Record<string, unknown>) =>
    Object.keys(o).filter((k) => !skip.includes(k) && o[k] !== undefined && typeof o[k] !== "function" && typeof o[k] !== "symbol");
  const ka = kept(a);
  const kb = kept(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && (a[k] === b[k] || JSON.stringify(a[k]) === JSON.stringify(b[k])));
}

/** The delta a committed change of a deliverable hands its cluster's object, or undefined without the change (a sweep). */
function deliverableDelta(change: Change | undefined): DeliverableDelta | undefined {
  const stored = change?.after ?? change?.before;
  if (!change || !stored) return undefined;
  return {
    name: change.name,
    resourceVersion: Number(stored.metadata.resourceVersion),
    object: change.after,
    ...(change.def === PolicyKind ? { kind: DELIVERED_POLICY_KIND } : {}),
  };
}

/** Whether a change is of a deliverable: a ManifestWork, or a replicated Policy (issue 32). */
function delivered(change: Change): boolean {
  if (change.def === ManifestWorkKind) return true;
  const obj = change.after ?? change.before;
  return change.def === PolicyKind && obj !== null && isReplicatedPolicy(obj);
}

/**
 * Delivery: when a deliverable (a ManifestWork or a replicated Policy,
 * src/work/namespace-deliverables.ts) was created, deleted, or changed anything its agent
 * receives (spec or metadata; a status write, such as a compliance report, does not), tells the
 * cluster's Durable Object (the namespace is the cluster's name) that its deliverables changed,
 * handing it the object as stored (or its removal) when the writer has it, for the works polls it
 * answers. The object then changes its works ETag and wakes the agent's long-poll before the
 * write's response is sent. Idempotent: run again, the agent fetches its works once more and
 * finds nothing new. The hook keeps its name `works` (outbox rows name it).
 */
export const deliveryHook: AfterCommitHook<true> = {
  name: "works",
  plan: (change) => (delivered(change) && deliveredViewChanged(change.before, change.after) ? true : null),
  async run(env, _owed, target) {
    const delta = deliverableDelta(target.change);
    await env.CLUSTERS.getByName(target.namespace).deliverablesChanged(delta && deltaMessage(delta));
  },
};

/**
 * A removed ManagedCluster's namespace: its ManifestWorks and AddOnPlacementScores are deleted
 * through the write path (so their own hooks run: the agent is told, replica sets follow), as
 * OCM's registration controller cleans up a removed cluster's namespace; a work held by the
 * cleanup finalizer loses it (no agent is left to confirm). Idempotent: run again,
 * it finds nothing left (or what was created in the namespace since, when the cluster is gone).
 */
export const clusterNamespaceHook: AfterCommitHook<true> = {
  name: "cluster-namespace",
  plan: (change) => (change.def === ManagedClusterKind && change.before && !change.after ? true : null),
  async run(env, _owed, target) {
    for (const def of [ManifestWorkKind, AddOnPlacementScoreKind]) {
      const { items } = await admittedStoreOf(env, def).list(target.name);
      for (const obj of items) {
        try {
          const out = await admittedStoreOf(env, def).write(target.name, obj.metadata.name, { verb: "delete" });
          // The cluster is gone, its agent with it (its leave released what the works applied):
          // nobody is left to confirm a work's cleanup, so its finalizer goes (src/work/deletion.ts).
          if (def === ManifestWorkKind && out.object) await releaseCleanupFinalizer(env, out.object);
        } catch (e) {
          if (!(e instanceof ApiError && e.reason === "NotFound")) throw e;
        }
      }
    }
  },
};
