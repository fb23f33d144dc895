/**
 * What a cluster's agent reports of its add-ons' health (`addon-status`, docs/agent-protocol.md
 * "Add-ons"), written on the ManagedClusterAddOns of the cluster's namespace: the `Available`
 * condition the agent derived from each add-on's Lease on the member cluster, as OCM's
 * registration agent's addon lease controller patches it (`pkg/registration/spoke/addon/
 * lease_controller.go`). The agent sends a condition only when it changed, so this runs on a
 * change of health, never on an idle cluster.
 *
 * Only the agent's own cluster namespace is written, only the `Available` condition, and never
 * for an add-on whose `status.healthCheck.mode` is `Customized` (the hub's add-on manager owns
 * its health then, as OCM's lease controller leaves it alone). A report for an add-on that does
 * not exist (deleted meanwhile) changes nothing.
 *
 * When the cluster itself turns `ManagedClusterConditionAvailable=Unknown` (its agent stopped
 * renewing the cluster's lease), nobody is left to check the add-ons' Leases: every add-on of the
 * cluster gets `Available=Unknown` with the cluster's reason and message, as OCM's hub
 * `ManagedClusterAddonHealthCheckController` sets them ({@link addonClusterUnknownHook}); the agent
 * sends its add-ons' conditions again once it is back (a new connection's `welcome`, or its first
 * heartbeat after more than a grace without one).
 */
import { ApiError } from "../k8s/errors.ts";
import { findCondition, rfc3339, setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { ManagedClusterAddOnKind } from "../kinds/addon.ts";
import { Conditions as ClusterConditions, ManagedClusterKind } from "../kinds/managedcluster.ts";
import type { AfterCommitHook } from "../store/hooks.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { clock } from "../clock.ts";
import type { WaitUntil } from "../store/outbox.ts";
import type { Env } from "../env.ts";
import type { AddonStatusSchema } from "../agent-api/protocol.ts";
import type { z } from "zod";

/** OCM's ManagedClusterAddOn condition type the lease check sets. */
export const ADDON_AVAILABLE = "Available";

/** How many times a status write that lost a race (409) is made again on the object read anew. */
const CONFLICT_RETRIES = 3;

/**
 * Writes the `Available` condition of each reported add-on of cluster `cluster` (its namespace),
 * at `now` (epoch milliseconds; a condition whose status changes gets it as
 * `lastTransitionTime`). An unchanged condition writes nothing.
 * @returns how many ManagedClusterAddOns were written.
 * @throws ApiError what a status write throws other than a conflict lost {@link CONFLICT_RETRIES} times (then a 409)
 */
export async function writeAddonAvailability(
  env: Env,
  cluster: string,
  body: z.infer<typeof AddonStatusSchema>,
  now: number,
  waitUntil?: WaitUntil,
): Promise<number> {
  return writeAvailable(env, cluster, body.addons, now, false, waitUntil);
}

/** Sets `Available` on each named add-on of `cluster` (also a `Customized` one when `all`), retrying a lost race. */
async function writeAvailable(
  env: Env,
  cluster: string,
  addons: readonly { name: string; available: Available }[],
  now: number,
  all: boolean,
  waitUntil?: WaitUntil,
): Promise<number> {
  const store = admittedStoreOf(env, ManagedClusterAddOnKind);
  let written = 0;
  for (const { name, available } of addons) {
    for (let attempt = 0; ; attempt++) {
      const mca = await store.get(cluster, name);
      const next = mca ? withAvailable(mca, available, now, all) : null;
      if (!next) break;
      try {
        await store.write(cluster, name, { verb: "update", subresource: "status", body: next }, { known: mca!, ...(waitUntil ? { waitUntil } : {}) });
        written++;
        break;
      } catch (e) {
        if (!(e instanceof ApiError && e.code === 409) || attempt >= CONFLICT_RETRIES) throw e;
      }
    }
  }
  return written;
}

/** An `Available` condition's status, reason and message. */
type Available = { status: Condition["status"]; reason: string; message: string };

/**
 * `mca` with its `Available` condition set to `available` (metav1's SetStatusCondition: the
 * transition time moves only with the status; `now` epoch milliseconds), or null when nothing
 * changes or, unless `all`, the add-on's health is `Customized`.
 */
export function withAvailable(mca: KubeObject, available: Available, now: number, all = false): KubeObject | null {
  const status = (mca.status ?? {}) as { conditions?: Condition[]; healthCheck?: { mode?: string } };
  if (!all && status.healthCheck?.mode === "Customized") return null;
  const conditions = structuredClone(status.conditions ?? []);
  if (!setCondition(conditions, { type: ADDON_AVAILABLE, status: available.status, reason: available.reason, message: available.message }, rfc3339(now)))
    return null;
  return { ...mca, status: { ...status, conditions } };
}

/**
 * OCM's hub `ManagedClusterAddonHealthCheckController` as an after-commit hook: owed by a
 * ManagedCluster write that turns its `ManagedClusterConditionAvailable` Unknown; sets
 * `Available=Unknown` on every ManagedClusterAddOn of the cluster's namespace with the cluster's
 * condition's reason and message (e.g. `ManagedClusterLeaseUpdateStopped`). Its work is the
 * cluster's own add-ons, so it runs in the lease expiry's path. Idempotent.
 */
export const addonClusterUnknownHook: AfterCommitHook<true> = {
  name: "addon-cluster-unknown",
  plan: (change) =>
    change.def === ManagedClusterKind &&
    findCondition((change.after?.status as { conditions?: Condition[] } | undefined)?.conditions, ClusterConditions.Available)?.status === "Unknown" &&
    findCondition((change.before?.status as { conditions?: Condition[] } | undefined)?.conditions, ClusterConditions.Available)?.status !== "Unknown"
      ? true
      : null,
  async run(env, _owed, target) {
    const cluster = target.change?.after ?? (await admittedStoreOf(env, ManagedClusterKind).get("", target.name));
    const available = findCondition((cluster?.status as { conditions?: Condition[] } | undefined)?.conditions, ClusterConditions.Available);
    if (!cluster || available?.status !== "Unknown") return;
    const { items } = await admittedStoreOf(env, ManagedClusterAddOnKind).list(target.name);
    const addons = items.map((a) => ({
      name: a.metadata.name,
      available: { status: "Unknown" as const, reason: available.reason, message: available.message },
    }));
    await writeAvailable(env, target.name, addons, clock.now(), true);
  },
};
