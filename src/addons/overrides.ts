/**
 * KubeFleet's ClusterResourceOverrides on template add-ons (docs/overrides.md "Template add-ons"):
 * a ClusterResourceOverride names a ClusterManagementAddOn by `placement: {name, scope:
 * ClusterManagementAddOn}` and selects manifests of the add-on's rendered work
 * (src/addons/render.ts) by group, version, kind and name, in any namespace; each cluster's
 * manifests go through the one patch engine (src/overrides/kubefleet.ts, src/overrides/engine.ts),
 * all or nothing per cluster.
 *
 * Rollout: the overrides that apply to a cluster are part of its desired configs, as OCM's
 * add-on manager rolls configs out (src/addons/manager.ts): one `configReferences[]` entry per
 * applicable override, group `placement.kubernetes-fleet.io`, resource
 * `clusterresourceoverrides`, the override's name, and a spec hash of what the override does
 * there (its selectors, the rules matching the cluster, the values of the variables they use).
 * A change of an override changes the hash of the clusters it touches only, and those are rolled
 * out by the add-on's install strategy (its placements' `rolloutStrategy`) like a changed config.
 *
 * Karmada's ClusterOverridePolicies apply after them (src/overrides/combined.ts: one order
 * everywhere; an OverridePolicy is namespaced and the add-on is not, as a ResourceOverride may not
 * name it), selecting the rendered manifests by their own apiVersion, kind, namespace, name and
 * labels; each policy with a rule matching the cluster is among its desired configs too (group
 * `policy.karmada.io`, resource `clusteroverridepolicies`, the hash of its selectors and the rules
 * matching the cluster), so a policy's change is rolled out the same way.
 */
import type { KubeObject } from "../k8s/meta.ts";
import { FLEET_GROUP, IS_LATEST_SNAPSHOT_LABEL } from "../kinds/fleet.ts";
import { ADDON_SCOPE, ClusterResourceOverrideSnapshotKind, OVERRIDE_TRACKING_LABEL, type ClusterResourceOverrideSpec } from "../kinds/fleet-override.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { sha256Hex } from "../kinds/bootstraptoken.ts";
import type { Env } from "../env.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { MEMBER_CLUSTER_NAME_LABEL } from "../fleet/schedule.ts";
import { compileKubeFleetOverrides, overridesForAddon } from "../overrides/kubefleet.ts";
import { compileKarmadaOverrides, type AppliedOverride } from "../overrides/karmada.ts";
import { readKarmadaPolicies } from "../overrides/karmada-policies.ts";
import { combineOverrides, renderClusterOf, type BothClusterOverrides, type BothOverrides, type RenderCluster } from "../overrides/combined.ts";
import { KARMADA_POLICY_GROUP } from "../kinds/karmada.ts";
import { appliedAnnotations } from "../fleet/overrides.ts";

/** The group of an override's entry in an add-on's `configReferences` (KubeFleet's). */
export const OVERRIDE_CONFIG_GROUP = FLEET_GROUP;
/** The resource of an override's entry in an add-on's `configReferences`. */
export const OVERRIDE_CONFIG_RESOURCE = "clusterresourceoverrides";

/** The group of a Karmada ClusterOverridePolicy's entry in an add-on's `configReferences`. */
export const KARMADA_OVERRIDE_CONFIG_GROUP = KARMADA_POLICY_GROUP;
/** The resource of a Karmada ClusterOverridePolicy's entry in an add-on's `configReferences`. */
export const KARMADA_OVERRIDE_CONFIG_RESOURCE = "clusteroverridepolicies";

/** An override's entry among a cluster's desired configs: its name and the hash of what it does there. */
export interface OverrideConfig {
  group: typeof OVERRIDE_CONFIG_GROUP | typeof KARMADA_OVERRIDE_CONFIG_GROUP;
  resource: typeof OVERRIDE_CONFIG_RESOURCE | typeof KARMADA_OVERRIDE_CONFIG_RESOURCE;
  name: string;
  specHash: string;
}

/** Whether a config reference is an override's entry ({@link OverrideConfig}): KubeFleet's or Karmada's. */
export const isOverrideConfig = (c: { group?: string; resource: string }): boolean =>
  (c.group === OVERRIDE_CONFIG_GROUP && c.resource === OVERRIDE_CONFIG_RESOURCE) ||
  (c.group === KARMADA_OVERRIDE_CONFIG_GROUP && c.resource === KARMADA_OVERRIDE_CONFIG_RESOURCE);

/** The overrides of one add-on, compiled once for its clusters. */
export interface AddonOverrides {
  /** No ClusterResourceOverride names the add-on, and there is no ClusterOverridePolicy. */
  readonly empty: boolean;
  /** The overrides of one cluster (by name; a cluster the hub does not know has only its name label). */
  forCluster(cluster: string): BothClusterOverrides;
  /** The desired-config entries of the overrides that apply to `cluster`, by override name. */
  configsOf(cluster: string): Promise<OverrideConfig[]>;
}

const latest = {
  index: { key: IS_LATEST_SNAPSHOT_LABEL, values: ["true"] },
  filter: (o: KubeObject) => o.metadata.labels?.[IS_LATEST_SNAPSHOT_LABEL] === "true",
};

/**
 * The overrides of the add-on `addon`: one read of the latest ClusterResourceOverrideSnapshots,
 * and, only when one names the add-on, of the ManagedClusters (`cluster`: that one alone).
 * @throws errors of D1
 */
export async function addonOverrides(env: Env, addon: string, cluster?: string): Promise<AddonOverrides> {
  const [{ items }, cops] = await Promise.all([
    admittedStoreOf(env, ClusterResourceOverrideSnapshotKind).listPage(undefined, latest),
    readKarmadaPolicies(env, new Set()),
  ]);
  const parent = new Map(items.map((o) => [o.metadata.name, o.metadata.labels?.[OVERRIDE_TRACKING_LABEL] ?? o.metadata.name]));
  const cros = overridesForAddon(
    addon,
    items.map((o) => ({ name: o.metadata.name, spec: (o.spec as { overrideSpec: ClusterResourceOverrideSpec }).overrideSpec })),
  );
  const compiled: BothOverrides = combineOverrides(compileKubeFleetOverrides(cros, [], { anyNamespace: true }), compileKarmadaOverrides(cops));
  const clusters = new Map<string, RenderCluster>();
  if (!compiled.empty) {
    const mcs =
      cluster !== undefined
        ? [await admittedStoreOf(env, ManagedClusterKind).get("", cluster)].filter((m): m is KubeObject => !!m)
        : (await admittedStoreOf(env, ManagedClusterKind).list()).items;
    for (const m of mcs) clusters.set(m.metadata.name, renderClusterOf(m));
  }
  const forCluster = (name: string) => compiled.forCluster(clusters.get(name) ?? { name, labels: { [MEMBER_CLUSTER_NAME_LABEL]: name } });
  return {
    empty: compiled.empty,
    forCluster,
    async configsOf(name) {
      if (compiled.empty) return [];
      const out: OverrideConfig[] = [];
      const co = forCluster(name);
      for (const [snapshot, text] of co.kubefleet.contentKeys())
        out.push({ group: OVERRIDE_CONFIG_GROUP, resource: OVERRIDE_CONFIG_RESOURCE, name: parent.get(snapshot) ?? snapshot, specHash: await sha256Hex(text) });
      if (co.karmadaApplies)
        for (const [key, text] of co.karmadaContentKeys())
          out.push({
            group: KARMADA_OVERRIDE_CONFIG_GROUP,
            resource: KARMADA_OVERRIDE_CONFIG_RESOURCE,
            name: key.slice(key.lastIndexOf("/") + 1),
            specHash: await sha256Hex(text),
          });
      return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
  };
}

/**
 * The template add-ons the latest ClusterResourceOverrideSnapshots name, each once: those a
 * cluster's new labels may render differently.
 * @throws errors of D1
 */
export async function addonsWithOverrides(env: Env): Promise<string[]> {
  const { items } = await admittedStoreOf(env, ClusterResourceOverrideSnapshotKind).listPage(undefined, latest);
  const names = new Set<string>();
  for (const o of items) {
    const placement = (o.spec as { overrideSpec?: ClusterResourceOverrideSpec } | undefined)?.overrideSpec?.placement;
    if (placement?.scope === ADDON_SCOPE) names.add(placement.name);
  }
  return [...names];
}

/**
 * The outcome of a cluster's overrides on its rendered manifests: the new list, the snapshots
 * applied and Karmada's applied-overrides annotations (empty: none applied), or the error.
 */
export type AddonOverridden =
  { manifests: unknown[]; applied: string[]; karmada: Record<string, string>; error?: undefined } | { error: string; applied: string[] };

/** Applies `overrides` (one cluster's) to `manifests` (a rendered work's), all or nothing. */
export function applyAddonOverrides(overrides: BothClusterOverrides, manifests: readonly unknown[]): AddonOverridden {
  const applied = overrides.kubefleet.clusterResourceOverrides;
  if (overrides.key === "") return { manifests: [...manifests], applied, karmada: {} };
  const out: unknown[] = [];
  const clusterItems: AppliedOverride[] = [];
  const items: AppliedOverride[] = [];
  for (const m of manifests) {
    const o = m as KubeObject;
    if (!o || typeof o !== "object" || typeof o.metadata !== "object" || o.metadata === null) {
      out.push(m);
      continue;
    }
    const r = overrides.apply(o);
    if (!r.ok) return { error: r.message, applied };
    clusterItems.push(...r.clusterOverrides);
    items.push(...r.overrides);
    if (r.object) out.push(r.object);
  }
  return { manifests: out, applied, karmada: appliedAnnotations(clusterItems, items) };
}
