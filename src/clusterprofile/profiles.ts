/**
 * The hub's ClusterProfile controller (SIG Multicluster's cluster inventory API), as OCM's
 * `pkg/registration/hub/clusterprofile` lifecycle and status controllers: one ClusterProfile per
 * ManagedCluster in each namespace whose bound ManagedClusterSets hold it, kept up to date by an
 * after-commit hook of the store (src/store/hooks.ts) instead of informers:
 * - a ManagedCluster change that a profile shows (labels, the Available and Joined conditions,
 *   the Kubernetes version, claims, deletion), its creation or its removal reconciles that one
 *   cluster's profiles: the namespaces that should hold one are found from the sets (a handful)
 *   and the bindings named after the sets holding the cluster; its existing profiles by the label
 *   index (`open-cluster-management.io/cluster-name`). No other cluster is read;
 * - a ManagedClusterSet write (not its status) reconciles every namespace bound to it, and a
 *   ManagedClusterSetBinding write (not its status) its namespace, as OCM's lifecycle controller
 *   (queue key: the namespace): the clusters of the namespace's bound sets against its profiles.
 *
 * A binding counts once its ManagedClusterSet exists (what OCM's `Bound` condition says); a
 * cluster being deleted gets no profile (OCM skips those); a namespace that is missing or
 * terminating is left alone (OCM skips it), its profiles going with it. Only profiles carrying
 * the `x-k8s.io/cluster-manager: open-cluster-management` label are managed.
 *
 * @module
 */
import { ApiError } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { fromLabelSelector } from "../k8s/labels.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { LabelIndexRequirement } from "../store/store.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { clock } from "../clock.ts";
import type { Env } from "../env.ts";
import { CLUSTER_MANAGER_LABEL, CLUSTER_MANAGER_NAME, ClusterProfileKind, OCM_CLUSTER_NAME_LABEL } from "../kinds/clusterprofile.ts";
import { CLUSTERSET_LABEL, ManagedClusterKind } from "../kinds/managedcluster.ts";
import { clusterInSet, ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import { NamespaceKind } from "../kinds/namespace.ts";
import { ManagedClusterSetBindingKind } from "../kinds/placement.ts";
import type { Change } from "../store/hooks.ts";
import { storageOf } from "../store/storage.ts";
import { desiredProfile, hubAccessOf } from "./profile.ts";

/** What a change owes the controller: one cluster, the namespaces bound to some sets, or namespaces. */
export interface ProfileWork {
  cluster?: string;
  sets?: string[];
  namespaces?: string[];
}

/** What a profile shows of a ManagedCluster (and what decides where it has profiles). */
function profileView(obj: KubeObject | null): string {
  if (!obj) return "";
  const status = (obj.status ?? {}) as {
    conditions?: { type: string; status: string; reason: string; message: string }[];
    version?: unknown;
    clusterClaims?: unknown;
  };
  const conditions = (status.conditions ?? [])
    .filter((c) => c.type === "ManagedClusterConditionAvailable" || c.type === "ManagedClusterJoined")
    .map((c) => [c.type, c.status, c.reason, c.message]);
  return JSON.stringify([obj.metadata.labels, obj.metadata.deletionTimestamp ?? null, conditions, status.version, status.clusterClaims]);
}

function withoutStatus(obj: KubeObject | null): string {
  if (!obj) return "";
  const { status: _s, metadata, ...rest } = obj;
  const { resourceVersion: _rv, managedFields: _mf, ...meta } = metadata as KubeObject["metadata"] & { managedFields?: unknown };
  return JSON.stringify([rest, meta]);
}

/**
 * What `change` owes the ClusterProfile controller (pure; see the module doc), or null.
 */
export function planProfiles(change: Change): ProfileWork | null {
  const { def, before, after } = change;
  if (def === ManagedClusterKind) return profileView(before) === profileView(after) ? null : { cluster: change.name };
  if (def === ManagedClusterSetKind) return withoutStatus(before) === withoutStatus(after) ? null : { sets: [change.name] };
  if (def === ManagedClusterSetBindingKind) return withoutStatus(before) === withoutStatus(after) ? null : { namespaces: [change.namespace] };
  return null;
}

/** Whether a profile is one the hub manages (OCM's lifecycle controller lists by this label). */
function managed(p: KubeObject): boolean {
  return p.metadata.labels?.[CLUSTER_MANAGER_LABEL] === CLUSTER_MANAGER_NAME;
}

/** Whether the namespace exists and is not terminating. */
async function activeNamespace(env: Env, namespace: string): Promise<boolean> {
  const ns = await admittedStoreOf(env, NamespaceKind).get("", namespace);
  return ns !== null && !ns.metadata.deletionTimestamp;
}

/** The clusters of a set (OCM `GetClustersFromClusterSet`), read through the label index when the selector allows. */
export async function clustersOfSet(env: Env, set: KubeObject): Promise<KubeObject[]> {
  const sel = (set.spec?.clusterSelector ?? {}) as { selectorType?: string; labelSelector?: unknown };
  let index: LabelIndexRequirement | undefined;
  if ((sel.selectorType ?? "ExclusiveClusterSetLabel") === "ExclusiveClusterSetLabel") {
    index = { key: CLUSTERSET_LABEL, values: [set.metadata.name] };
  } else {
    let selector;
    try {
      selector = fromLabelSelector(sel.labelSelector as never);
    } catch {
      return [];
    }
    if (selector.matchesNothing) return [];
    const r = selector.requirements.find((x) => x.operator === "=" || x.operator === "==" || x.operator === "in" || x.operator === "exists");
    if (r) index = r.operator === "exists" ? { key: r.key } : { key: r.key, values: [...r.values] };
  }
  const filter = (c: KubeObject) => clusterInSet(set, c.metadata.labels);
  const out: KubeObject[] = [];
  let after: { namespace: string; name: string } | undefined;
  do {
    const page = await admittedStoreOf(env, ManagedClusterKind).listPage(undefined, { after, limit: 500, filter, ...(index ? { index } : {}) });
    out.push(...page.items);
    after = page.next;
  } while (after);
  return out;
}

/**
 * Writes `next` in place of `current` (either may be null) unless they are equal; a write that
 * loses a race is reported as false so that the caller reads again.
 * @throws whatever the commit throws besides Conflict, AlreadyExists and NotFound
 */
export async function save(
  env: Env,
  def: KindDefinition,
  namespace: string,
  name: string,
  current: KubeObject | null,
  next: KubeObject | null,
): Promise<boolean> {
  if (current === null && next === null) return true;
  if (current && next && JSON.stringify(current) === JSON.stringify(next)) return true;
  const now = clock.now();
  try {
    // Grouped: the profiles and set statuses one change writes share a D1 batch.
    const storage = storageOf(env);
    const committed = await storage.commit(def, { namespace, name }, current, next, now, { grouped: true });
    await storage.finish(committed, now);
    return true;
  } catch (e) {
    if (e instanceof ApiError && (e.reason === "Conflict" || e.reason === "AlreadyExists" || e.reason === "NotFound")) return false;
    throw e;
  }
}

const ATTEMPTS = 5;

/** Makes the profile of `cluster` in `namespace` what it should be (null cluster: no profile), retrying lost races. */
async function syncProfile(env: Env, namespace: string, name: string, cluster: KubeObject | null, known?: KubeObject | null): Promise<void> {
  let current = known;
  for (let i = 0; i < ATTEMPTS; i++) {
    if (current === undefined || i > 0) current = await admittedStoreOf(env, ClusterProfileKind).get(namespace, name);
    if (current && !managed(current)) return;
    const next = cluster ? desiredProfile(cluster, namespace, current, clock.now(), hubAccessOf(env)) : null;
    if (await save(env, ClusterProfileKind, namespace, name, current, next)) return;
  }
  throw new Error(`ClusterProfile ${namespace}/${name}: still conflicting after ${ATTEMPTS} attempts`);
}

/** The namespaces bound (by a binding whose set exists) to a set holding `cluster`. */
async function namespacesOf(env: Env, cluster: KubeObject, sets: readonly KubeObject[]): Promise<Set<string>> {
  const out = new Set<string>();
  if (cluster.metadata.deletionTimestamp) return out;
  const holding = sets.filter((set) => clusterInSet(set, cluster.metadata.labels));
  const bindings = await Promise.all(holding.map((set) => admittedStoreOf(env, ManagedClusterSetBindingKind).listNamed(set.metadata.name)));
  for (const [i, set] of holding.entries()) {
    for (const b of bindings[i]!) if ((b.spec as { clusterSet?: string } | undefined)?.clusterSet === set.metadata.name) out.add(b.metadata.namespace!);
  }
  return out;
}

/** The profiles the hub manages of one cluster, by namespace (read through the label index). */
async function profilesOf(env: Env, name: string): Promise<Map<string, KubeObject>> {
  const existing = new Map<string, KubeObject>();
  let after: { namespace: string; name: string } | undefined;
  do {
    const page = await admittedStoreOf(env, ClusterProfileKind).listPage(undefined, {
      after,
      limit: 500,
      index: { key: OCM_CLUSTER_NAME_LABEL, values: [name] },
      filter: managed,
    });
    for (const p of page.items) if (p.metadata.name === name) existing.set(p.metadata.namespace!, p);
    after = page.next;
  } while (after);
  return existing;
}

/**
 * Reconciles the profiles of one cluster (OCM's status controller, and its lifecycle controller
 * for this cluster). `sets` are every ManagedClusterSet (read here when not given).
 */
export async function reconcileCluster(env: Env, name: string, sets?: readonly KubeObject[]): Promise<void> {
  const [cluster, allSets, existing] = await Promise.all([
    admittedStoreOf(env, ManagedClusterKind).getCommitted("", name),
    sets ??
      admittedStoreOf(env, ManagedClusterSetKind)
        .list()
        .then((r) => r.items),
    profilesOf(env, name),
  ]);
  const desired = cluster ? await namespacesOf(env, cluster, allSets) : new Set<string>();
  const writes: Promise<void>[] = [];
  for (const ns of [...desired].sort()) {
    const known = existing.get(ns);
    writes.push(
      (async () => {
        if (!known && !(await activeNamespace(env, ns))) return;
        await syncProfile(env, ns, name, cluster, known ?? null);
      })(),
    );
  }
  for (const [ns, p] of existing) if (!desired.has(ns)) writes.push(syncProfile(env, ns, name, null, p));
  await settleAll(writes);
}

/** Awaits every promise; throws the first failure once all have settled. */
async function settleAll(work: Promise<void>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
}

/** Reconciles every profile of one namespace (OCM's lifecycle controller's sync). */
export async function reconcileNamespace(env: Env, namespace: string): Promise<void> {
  if (!(await activeNamespace(env, namespace))) return;
  const [bindings, profiles] = await Promise.all([
    admittedStoreOf(env, ManagedClusterSetBindingKind).list(namespace),
    admittedStoreOf(env, ClusterProfileKind).list(namespace),
  ]);
  const desired = new Map<string, KubeObject>();
  const members = await Promise.all(
    bindings.items.map(async (b) => {
      const setName = (b.spec as { clusterSet?: string } | undefined)?.clusterSet ?? b.metadata.name;
      const set = await admittedStoreOf(env, ManagedClusterSetKind).get("", setName);
      return set ? clustersOfSet(env, set) : [];
    }),
  );
  for (const list of members) for (const c of list) if (!c.metadata.deletionTimestamp) desired.set(c.metadata.name, c);
  const existing = new Map<string, KubeObject>();
  for (const p of profiles.items) if (managed(p)) existing.set(p.metadata.name, p);
  const names = [...desired.keys()].sort();
  // In chunks, so that a namespace bound to a large set writes at most a chunk's profiles at once.
  for (let i = 0; i < names.length; i += SYNC_CHUNK) {
    await settleAll(names.slice(i, i + SYNC_CHUNK).map((name) => syncProfile(env, namespace, name, desired.get(name)!, existing.get(name) ?? null)));
  }
  const gone = [...existing].filter(([name]) => !desired.has(name));
  for (let i = 0; i < gone.length; i += SYNC_CHUNK)
    await settleAll(gone.slice(i, i + SYNC_CHUNK).map(([name, p]) => syncProfile(env, namespace, name, null, p)));
}

/** How many profiles one namespace's reconcile writes at once. */
const SYNC_CHUNK = 50;

/**
 * Runs what a change owed the controller (see the module doc; the after-commit hook is
 * src/clusterprofile/controller.ts). `sets`: every ManagedClusterSet, when the caller read them already.
 * Idempotent: run again, it finds the profiles as they should be and writes nothing.
 */
export async function runProfileWork(env: Env, owed: ProfileWork, sets?: readonly KubeObject[]): Promise<void> {
  const work: Promise<void>[] = [];
  if (owed.cluster !== undefined) work.push(reconcileCluster(env, owed.cluster, sets));
  if ((owed.namespaces?.length ?? 0) > 0 || (owed.sets?.length ?? 0) > 0) {
    work.push(
      (async () => {
        const namespaces = new Set(owed.namespaces ?? []);
        const bound = await Promise.all((owed.sets ?? []).map((set) => admittedStoreOf(env, ManagedClusterSetBindingKind).listNamed(set)));
        for (const list of bound) for (const b of list) namespaces.add(b.metadata.namespace!);
        for (const ns of [...namespaces].sort()) await reconcileNamespace(env, ns);
      })(),
    );
  }
  await settleAll(work);
}
