/**
 * ManagedClusterSet status as OCM's `managedclusterset` controller keeps it
 * (`pkg/registration/hub/managedclusterset/controller.go` `syncClusterSet`): one condition,
 * `ClusterSetEmpty`, True with reason `NoClusterMatched` and message "No ManagedCluster selected"
 * when the set selects no cluster, else False with reason `ClustersSelected` and message
 * "<n> ManagedClusters selected" (clusters being deleted count, as in OCM).
 *
 * Kept up to date by an after-commit hook (src/clusterprofile/controller.ts): a set's own write (not
 * its status) and a ManagedCluster created, deleted or relabelled (only for the sets it entered
 * or left) rewrite the condition from the set's count row (src/clusterprofile/set-counts.ts),
 * which the write's own batch already changed: one D1 row per set, whatever its size.
 *
 * @module
 */
import { rfc3339, setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { clock } from "../clock.ts";
import type { Env } from "../env.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { clusterInSet, ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import type { Change } from "../store/hooks.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { save } from "./profiles.ts";
import { readSetCount } from "./set-counts.ts";

/** `ManagedClusterSetConditionEmpty`. */
export const CLUSTER_SET_EMPTY = "ClusterSetEmpty";

/** OCM's condition for a set selecting `n` clusters. */
export function emptyCondition(n: number): Omit<Condition, "lastTransitionTime"> {
  return n === 0
    ? { type: CLUSTER_SET_EMPTY, status: "True", reason: "NoClusterMatched", message: "No ManagedCluster selected" }
    : { type: CLUSTER_SET_EMPTY, status: "False", reason: "ClustersSelected", message: `${n} ManagedClusters selected` };
}

/** What a change owes: sets to recount, or a cluster's labels before and after (null: absent) to find them. */
export interface SetStatusWork {
  sets?: string[];
  cluster?: { before: Record<string, string> | null; after: Record<string, string> | null };
}

function specView(obj: KubeObject | null): string {
  return obj ? JSON.stringify([obj.spec ?? null, obj.metadata.deletionTimestamp ?? null]) : "";
}

/** What `change` owes the set status controller (pure), or null. */
export function planSetStatus(change: Change): SetStatusWork | null {
  const { def, before, after } = change;
  if (def === ManagedClusterSetKind) return after && specView(before) !== specView(after) ? { sets: [change.name] } : null;
  if (def === ManagedClusterKind) {
    if (before && after && JSON.stringify(before.metadata.labels ?? {}) === JSON.stringify(after.metadata.labels ?? {})) return null;
    return { cluster: { before: before ? (before.metadata.labels ?? {}) : null, after: after ? (after.metadata.labels ?? {}) : null } };
  }
  return null;
}

/**
 * Writes one set's `ClusterSetEmpty` condition from its count row when it changed (retrying a
 * lost race). `known` is the set as the caller read it after the change committed (its first
 * attempt skips the read). Each attempt reads the set before the count, so a write that lost to a
 * newer count's writer conflicts and reads again rather than putting back an older count.
 */
export async function syncSetStatus(env: Env, name: string, known?: KubeObject): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const set = attempt === 0 && known ? known : await admittedStoreOf(env, ManagedClusterSetKind).get("", name);
    if (!set || set.metadata.deletionTimestamp) return;
    const n = await readSetCount(env, set);
    const status = structuredClone((set.status ?? {}) as { conditions?: Condition[] });
    const conditions = status.conditions ?? [];
    if (!setCondition(conditions, emptyCondition(n), rfc3339(clock.now()))) return;
    if (await save(env, ManagedClusterSetKind, "", name, set, { ...set, status: { ...status, conditions } })) return;
  }
  throw new Error(`ManagedClusterSet ${name}: status still conflicting after 5 attempts`);
}

/** Runs what a change owed the set status controller; `sets`: every ManagedClusterSet, when the caller read them. */
export async function runSetStatusWork(env: Env, owed: SetStatusWork, sets?: readonly KubeObject[]): Promise<void> {
  const names = new Set(owed.sets ?? []);
  const known = new Map<string, KubeObject>();
  if (owed.cluster) {
    const { before, after } = owed.cluster;
    for (const set of sets ?? (await admittedStoreOf(env, ManagedClusterSetKind).list()).items) {
      const was = before !== null && clusterInSet(set, before);
      const is = after !== null && clusterInSet(set, after);
      if (was !== is) {
        names.add(set.metadata.name);
        known.set(set.metadata.name, set);
      }
    }
  }
  const results = await Promise.allSettled([...names].sort().map((name) => syncSetStatus(env, name, known.get(name))));
  const failed = results.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
}
