/**
 * The namespace controllers, as after-commit hooks (src/store/hooks.ts):
 * - deletion (kube-controller-manager's namespace controller, `pkg/controller/namespace/deletion/
 *   namespaced_resources_deleter.go`): once a namespace's deletion starts, every object of every
 *   namespaced kind it holds is deleted through the store (so each delete's own hooks run), then
 *   the `kubernetes` finalizer is removed from `spec.finalizers` (the finalize subresource), and
 *   the namespace goes. While objects remain (held by their finalizers), the namespace's
 *   `NamespaceContentRemaining` / `NamespaceFinalizersRemaining` conditions say so and the hook
 *   asks to be requeued, so the outbox sweep runs it again later (src/store/outbox.ts);
 * - a ManagedCluster's namespace (OCM's registration hub controller,
 *   `pkg/registration/hub/managedcluster/controller.go`, which applies namespace `X` labelled
 *   `open-cluster-management.io/cluster-name=X`): created with the cluster, again when the
 *   cluster is accepted and its namespace is missing, and again once a deletion of the namespace
 *   of an accepted cluster completed. It is kept when the cluster is removed, as OCM keeps it
 *   (src/work/controller.ts deletes the works it held). Accepting a cluster while its namespace is
 *   terminating is refused (src/namespaces/lifecycle.ts `admitAcceptance`).
 *
 * Each reads only the namespace and the objects of that namespace (by the store's
 * (resource, namespace, name) key), never the fleet.
 */
import { ApiError } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { rfc3339, setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { servedKinds } from "../kinds/index.ts";
import { syncCustomKinds } from "../kinds/sync.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { FINALIZE_EXTRA, NAMESPACE_FINALIZER, NamespaceKind, namespaceFinalizers } from "../kinds/namespace.ts";
import type { AfterCommitHook } from "../store/hooks.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { LIST_CHUNK_ROWS } from "../store/store.ts";
import type { Env } from "../env.ts";
import { clock } from "../clock.ts";

/** The label OCM puts on a cluster's namespace, naming the cluster. */
export const CLUSTER_NAME_LABEL = "open-cluster-management.io/cluster-name";
/** How many deletes of a namespace's objects run at once. */
const DELETE_CONCURRENCY = 8;
/** Most objects one run deletes; a namespace holding more is finished by the sweep's next runs. */
const DELETES_PER_RUN = 2_000;

/** What is left in a namespace after a deletion pass: per kind, how many objects, and the finalizers holding them. */
interface Remaining {
  resources: { def: KindDefinition; count: number }[];
  finalizers: Map<string, number>;
}

function qualified(def: KindDefinition): string {
  return def.group ? `${def.plural}.${def.group}` : def.plural;
}

/**
 * Deletes the objects of every namespaced kind in `namespace` (at most {@link DELETES_PER_RUN}),
 * and reports what is left: objects held by finalizers, or created meanwhile.
 */
async function deleteContent(env: Env, namespace: string): Promise<Remaining> {
  const remaining: Remaining = { resources: [], finalizers: new Map() };
  let budget = DELETES_PER_RUN;
  // Custom resources are namespaced objects too: this isolate's custom kinds are brought up to date first.
  await syncCustomKinds(env);
  // Each stored kind once: a kind served from another's objects (a CRD's non-storage version) by its storage kind.
  const stored = new Set(servedKinds().flatMap((k) => (k.namespaced && !k.computed ? [k.conversion?.storage ?? k] : [])));
  for (const def of stored) {
    const objects = admittedStoreOf(env, def);
    let after: { namespace: string; name: string } | undefined;
    do {
      const page = await objects.listPage(namespace, { after, limit: LIST_CHUNK_ROWS });
      const doomed = page.items.filter((o) => !o.metadata.deletionTimestamp).slice(0, Math.max(0, budget));
      budget -= doomed.length;
      for (let i = 0; i < doomed.length; i += DELETE_CONCURRENCY) {
        await Promise.all(
          doomed.slice(i, i + DELETE_CONCURRENCY).map((o) =>
            objects.write(namespace, o.metadata.name, { verb: "delete", preconditions: { uid: o.metadata.uid } }).catch((e: unknown) => {
              // Gone meanwhile, or replaced by a newer object of that name: counted below when left.
              if (!(e instanceof ApiError && (e.reason === "NotFound" || e.reason === "Conflict"))) throw e;
            }),
          ),
        );
      }
      after = page.next;
    } while (after);
    // What is left of this kind (one bounded read): objects held by finalizers, or created meanwhile.
    const rest = await objects.listPage(namespace, { limit: LIST_CHUNK_ROWS });
    const left = rest.items.length + (rest.next ? 1 : 0);
    if (left > 0) {
      remaining.resources.push({ def, count: left });
      for (const o of rest.items) for (const f of o.metadata.finalizers ?? []) remaining.finalizers.set(f, (remaining.finalizers.get(f) ?? 0) + 1);
    }
  }
  return remaining;
}

/**
 * The namespace's status conditions for what is left (the namespace controller's
 * `NamespaceContentRemaining` and `NamespaceFinalizersRemaining`, with its messages), at `now`
 * (epoch ms). Returns the conditions and whether they changed.
 */
function remainingConditions(ns: KubeObject, remaining: Remaining, now: number): { conditions: Condition[]; changed: boolean } {
  const conditions = structuredClone(((ns.status as { conditions?: Condition[] } | undefined)?.conditions ?? []) as Condition[]);
  const at = rfc3339(now);
  const content = remaining.resources.map((r) => `${qualified(r.def)} has ${r.count} resource instances`).sort();
  const finalizers = [...remaining.finalizers].map(([f, n]) => `${f} in ${n} resource instances`).sort();
  let changed = setCondition(
    conditions,
    content.length > 0
      ? { type: "NamespaceContentRemaining", status: "True", reason: "SomeResourcesRemain", message: `Some resources are remaining: ${content.join(", ")}` }
      : { type: "NamespaceContentRemaining", status: "False", reason: "ContentRemoved", message: "All content successfully removed" },
    at,
  );
  changed =
    setCondition(
      conditions,
      finalizers.length > 0
        ? {
            type: "NamespaceFinalizersRemaining",
            status: "True",
            reason: "SomeFinalizersRemain",
            message: `Some content in the namespace has finalizers remaining: ${finalizers.join(", ")}`,
          }
        : { type: "NamespaceFinalizersRemaining", status: "False", reason: "ContentHasNoFinalizers", message: "All content-preserving finalizers finished" },
      at,
    ) || changed;
  return { conditions, changed };
}

/**
 * Finishes the deletion of namespace `name` (see the module comment): deletes its content, then
 * removes the `kubernetes` finalizer, after which the namespace goes. Idempotent: a namespace
 * already gone, not being deleted, or without the finalizer is left alone.
 * Returns `rewrote` when the namespace was rewritten, `remaining` while objects remain (they are
 * recorded in its conditions; the caller runs this again later).
 * @throws errors of D1
 */
export async function finishNamespaceDeletion(env: Env, name: string): Promise<{ rewrote: boolean; remaining: boolean }> {
  const namespaces = admittedStoreOf(env, NamespaceKind);
  const ns = await namespaces.get("", name);
  if (!ns || !ns.metadata.deletionTimestamp || !namespaceFinalizers(ns).includes(NAMESPACE_FINALIZER)) return { rewrote: false, remaining: false };
  const remaining = await deleteContent(env, name);
  if (remaining.resources.length > 0) {
    const { conditions, changed } = remainingConditions(ns, remaining, clock.now());
    if (changed) {
      await namespaces
        .write("", name, { verb: "update", subresource: "status", body: { ...ns, status: { ...(ns.status ?? {}), conditions } } })
        .catch((e: unknown) => {
          if (!(e instanceof ApiError)) throw e;
        });
    }
    return { rewrote: changed, remaining: true };
  }
  const finalizers = namespaceFinalizers(ns).filter((f) => f !== NAMESPACE_FINALIZER);
  const body = { apiVersion: "v1", kind: NamespaceKind.kind, metadata: { name }, spec: { finalizers } };
  try {
    await namespaces.write("", name, { verb: "update", body, preconditions: { uid: ns.metadata.uid } }, { extras: { [FINALIZE_EXTRA]: true } });
  } catch (e) {
    if (!(e instanceof ApiError && (e.reason === "NotFound" || e.reason === "Conflict"))) throw e;
  }
  // The namespace of an accepted cluster that still exists comes back, as OCM's registration
  // controller applies it again at its next sync (after the deletion completed).
  if (accepted(await admittedStoreOf(env, ManagedClusterKind).get("", name))) await ensureNamespace(env, name, { [CLUSTER_NAME_LABEL]: name });
  return { rewrote: true, remaining: false };
}

/** Deletion: owed by the write that starts a namespace's deletion (sets its deletionTimestamp). */
export const namespaceDeletionHook: AfterCommitHook<true> = {
  name: "namespace-deletion",
  plan: (change) =>
    change.def === NamespaceKind &&
    change.after?.metadata.deletionTimestamp &&
    !change.before?.metadata.deletionTimestamp &&
    namespaceFinalizers(change.after).includes(NAMESPACE_FINALIZER)
      ? true
      : null,
  async run(env, _owed, target) {
    const { rewrote, remaining } = await finishNamespaceDeletion(env, target.name);
    return { rewrote, requeue: remaining };
  },
};

/**
 * Creates namespace `name` with `labels` when it does not exist (a namespace that exists, even
 * terminating, is left as it is). Idempotent; a create that loses a race is fine.
 * @throws errors of D1, ApiError other than AlreadyExists
 */
export async function ensureNamespace(env: Env, name: string, labels: Record<string, string> = {}): Promise<void> {
  const namespaces = admittedStoreOf(env, NamespaceKind);
  if (await namespaces.get("", name)) return;
  try {
    await namespaces.write("", name, {
      verb: "create",
      body: { apiVersion: "v1", kind: NamespaceKind.kind, metadata: { name, ...(Object.keys(labels).length > 0 ? { labels } : {}) } },
    });
  } catch (e) {
    if (!(e instanceof ApiError && e.reason === "AlreadyExists")) throw e;
  }
}

function accepted(cluster: KubeObject | null): boolean {
  return (cluster?.spec as { hubAcceptsClient?: boolean } | undefined)?.hubAcceptsClient === true;
}

/** A ManagedCluster's namespace: owed by the cluster's create, and by its acceptance. */
export const clusterNamespaceCreateHook: AfterCommitHook<true> = {
  name: "cluster-namespace-create",
  plan: (change) =>
    change.def === ManagedClusterKind && change.after && (!change.before || (accepted(change.after) && !accepted(change.before))) ? true : null,
  async run(env, _owed, target) {
    await ensureNamespace(env, target.name, { [CLUSTER_NAME_LABEL]: target.name });
  },
};
