/**
 * The add-on manager's after-commit hook (src/store/hooks.ts): which run of src/addons/manager.ts
 * a committed write calls for, and runs it before the writer returns (each run is proportional to
 * one add-on: its ManagedClusterAddOns, read by name, or one of them).
 *
 * - a ClusterManagementAddOn created, its spec changed (generation), its deletion started or the
 *   object removed: its run;
 * - a ManagedClusterAddOn created, its spec changed, its deletion started or removed: its own run
 *   (its work), after its ClusterManagementAddOn's when installed by placements (its configs'
 *   rollout); a status change that moves its `Progressing` condition: its ClusterManagementAddOn's
 *   run (a progressive rollout goes on);
 * - a work labelled `open-cluster-management.io/addon-name` whose status changed (the agent's
 *   report), or that was deleted: its ManagedClusterAddOn's run;
 * - an AddOnTemplate or AddOnDeploymentConfig created, changed or removed: the run of every
 *   ClusterManagementAddOn (a handful), whose runs roll the new content out;
 * - a ManagedCluster whose labels changed: the runs of the add-ons a ClusterResourceOverride names
 *   (src/addons/overrides.ts: the cluster's rendering may change), for that cluster;
 * A PlacementDecision whose decisions moved wakes the manager through its own hook
 * (src/placement/consumers.ts `addonDecisionHook`: the runs of the ClusterManagementAddOns
 * installed by its placement, when one names it). The manager's own status writes of either add-on kind call for nothing else.
 */
import { clock } from "../clock.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { ADDON_GROUP, ClusterManagementAddOnKind, ManagedClusterAddOnKind } from "../kinds/addon.ts";
import { ManifestWorkKind } from "../kinds/manifestwork.ts";
import type { AfterCommitHook, Change, HookTarget } from "../store/hooks.ts";
import type { Env } from "../env.ts";
import { addonOverridesChanged, addonsForPlacements, runClusterManagementAddOn, runManagedClusterAddOn } from "./manager.ts";
import { addonsWithOverrides } from "./overrides.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ADDON_NAME_LABEL } from "./render.ts";
import { admittedStoreOf } from "../admission/store.ts";

/** What a change owes the manager: the add-on runs to make. */
interface AddonOwed {
  cma?: string;
  /** The ClusterManagementAddOn's run is for a change of one of its ManagedClusterAddOns. */
  byAddon?: true;
  mca?: { namespace: string; name: string };
  configs?: true;
  /**
   * A placement (`<namespace>/<name>`) whose decisions moved: the add-ons it installs. Planned
   * before the decision's own hook (src/placement/consumers.ts `addonDecisionHook`); still run
   * for an outbox row written then.
   */
  placement?: string;
  /** A ManagedCluster whose labels changed: the add-ons overrides name, in that cluster. */
  relabeled?: string;
}

function specChanged(before: KubeObject | null, after: KubeObject | null): boolean {
  if (!before || !after) return true;
  if (before.metadata.generation !== after.metadata.generation) return true;
  return !before.metadata.deletionTimestamp && !!after.metadata.deletionTimestamp;
}

const progressingOf = (o: KubeObject | null) =>
  JSON.stringify(
    ((o?.status as { conditions?: { type: string; status: string; reason?: string }[] } | undefined)?.conditions ?? [])
      .filter((c) => c.type === "Progressing")
      .map((c) => [c.status, c.reason]),
  );

/** The runs a committed change calls for (see the module comment), or null. */
export function planAddons(change: Change): AddonOwed | null {
  const { def, namespace, name, before, after } = change;
  if (def.group === ADDON_GROUP) {
    if (def.kind === "ClusterManagementAddOn") return specChanged(before, after) ? { cma: name } : null;
    if (def.kind === "ManagedClusterAddOn") {
      if (specChanged(before, after)) return { cma: name, byAddon: true, mca: { namespace, name } };
      return progressingOf(before) !== progressingOf(after) ? { cma: name, byAddon: true } : null;
    }
    if (def.kind === "AddOnTemplate" || def.kind === "AddOnDeploymentConfig")
      return specChanged(before, after) || JSON.stringify(before?.spec) !== JSON.stringify(after?.spec) ? { configs: true } : null;
    return null;
  }
  if (def === ManagedClusterKind)
    return before && after && JSON.stringify(before.metadata.labels ?? {}) !== JSON.stringify(after.metadata.labels ?? {}) ? { relabeled: name } : null;
  if (def !== ManifestWorkKind) return null;
  const addon = (after ?? before)?.metadata.labels?.[ADDON_NAME_LABEL];
  if (!addon) return null;
  const statusChanged = before && after && JSON.stringify(before.status ?? null) !== JSON.stringify(after.status ?? null);
  if (statusChanged || !after) return { mca: { namespace, name: addon } };
  return null;
}

/** Runs what {@link planAddons} owed. */
async function runAddons(env: Env, owed: AddonOwed, target: HookTarget): Promise<void> {
  const now = clock.now();
  if (owed.placement) return addonsForPlacements(env, [owed.placement], undefined, target);
  if (owed.relabeled) {
    for (const addon of await addonsWithOverrides(env)) await addonOverridesChanged(env, addon, owed.relabeled);
    return;
  }
  if (owed.configs) {
    const { items } = await admittedStoreOf(env, ClusterManagementAddOnKind).list("");
    for (const c of items) {
      await runClusterManagementAddOn(env, c.metadata.name, now);
      // ManagedClusterAddOns no placement governs take a config's new content at once.
      for (const m of await admittedStoreOf(env, ManagedClusterAddOnKind).listNamed(c.metadata.name))
        await runManagedClusterAddOn(env, m.metadata.namespace!, c.metadata.name, now);
    }
    return;
  }
  if (owed.cma) await runClusterManagementAddOn(env, owed.cma, now, !owed.byAddon);
  if (owed.mca) await runManagedClusterAddOn(env, owed.mca.namespace, owed.mca.name, now);
}

/** The add-on manager's hook (idempotent: every run reads the current state). */
export const addonHook: AfterCommitHook<AddonOwed> = {
  name: "addons",
  plan: planAddons,
  async run(env, owed, target) {
    await runAddons(env, owed, target);
    // The manager writes the add-on objects' status: the writer reads its object back.
    return { rewrote: target.resource.startsWith(`${ADDON_GROUP}/`) };
  },
};
