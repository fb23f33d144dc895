/**
 * The after-commit hook of the cluster inventory (src/store/hooks.ts): one hook for what a
 * ManagedCluster, ManagedClusterSet or ManagedClusterSetBinding write owes the ClusterProfile
 * controller (src/clusterprofile/profiles.ts) and the ManagedClusterSet status controller
 * (src/clusterprofile/clusterset-status.ts), so that a change owing both reads the sets once and
 * runs both at the same time, their writes sharing D1 batches.
 *
 * @module
 */
import type { KubeObject } from "../k8s/meta.ts";
import { ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import type { AfterCommitHook } from "../store/hooks.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { planSetStatus, runSetStatusWork, type SetStatusWork } from "./clusterset-status.ts";
import { planProfiles, runProfileWork, type ProfileWork } from "./profiles.ts";

/** What a change owes: its profiles' work and its sets' status work, each absent when none. */
export interface InventoryWork {
  profiles?: ProfileWork;
  setStatus?: SetStatusWork;
}

/** The hook. Idempotent: run again, it finds profiles and statuses as they should be and writes nothing. */
export const inventoryHook: AfterCommitHook<InventoryWork> = {
  name: "cluster-inventory",
  plan(change) {
    const profiles = planProfiles(change);
    const setStatus = planSetStatus(change);
    if (!profiles && !setStatus) return null;
    return { ...(profiles ? { profiles } : {}), ...(setStatus ? { setStatus } : {}) };
  },
  async run(env, owed) {
    let sets: KubeObject[] | undefined;
    if (owed.profiles?.cluster !== undefined || owed.setStatus?.cluster) sets = (await admittedStoreOf(env, ManagedClusterSetKind).list()).items;
    const results = await Promise.allSettled([
      owed.profiles ? runProfileWork(env, owed.profiles, sets) : undefined,
      owed.setStatus ? runSetStatusWork(env, owed.setStatus, sets) : undefined,
    ]);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
  },
};
