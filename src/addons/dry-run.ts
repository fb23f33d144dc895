/**
 * A dry run of a template add-on for one cluster (docs/overrides.md "Seeing the rendered
 * objects"): what the add-on manager would write as the cluster's deploy work
 * (`addon-<name>-deploy-0`) once the add-on's current configs reach it, through the manager's own
 * rendering (src/addons/manager.ts `resolveConfigs`, `configObjects`, `renderAddonWork`; the
 * ClusterResourceOverrides naming the add-on, src/addons/overrides.ts), without writing anything:
 * the manifests of the work, overrides applied, the same manifests rendered without the overrides
 * (the template every cluster starts from: the AddOnTemplate with its variables, node placement,
 * registries, proxy and resources applied), the ClusterResourceOverrideSnapshots applied there, or
 * why they fail (or why nothing renders: no AddOnTemplate configured, or one that does not exist).
 * Served as the `render` subresource of a ClusterManagementAddOn or a ManagedClusterAddOn
 * (src/api/placement-render.ts), in the shape of a placement's (src/fleet/dry-run.ts
 * `PlacementRender`), which `flotilla addon render` and the dashboard's add-on page read.
 */
import type { KubeObject } from "../k8s/meta.ts";
import { ADDON_GROUP, ClusterManagementAddOnKind, ManagedClusterAddOnKind } from "../kinds/addon.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import type { Env } from "../env.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { APPLIED_CLUSTER_OVERRIDES_ANNOTATION } from "../kinds/karmada-override.ts";
import type { AppliedOverride } from "../overrides/karmada.ts";
import { PLACEMENT_RENDER_API_VERSION, PLACEMENT_RENDER_KIND, type PlacementRender } from "../fleet/dry-run.ts";
import { configObjects, decided, renderAddonWork, resolveConfigs, type CmaSpec, type ConfigRef, type PlacementStrategy } from "./manager.ts";
import { addonOverrides } from "./overrides.ts";
import { deployWorkName } from "./render.ts";

const manifestsOf = (spec: Record<string, unknown> | undefined) =>
  ((spec as { workload?: { manifests?: KubeObject[] } } | undefined)?.workload?.manifests ?? []) as KubeObject[];

/**
 * Renders the template add-on `name` for `cluster`, as the manager would once the add-on's
 * current configs reach the cluster (the configs of the ManagedClusterAddOn over those of the
 * placement that decides the cluster over the defaults). `of` says which object is asked:
 * the ClusterManagementAddOn (a cluster without the add-on is rendered as it would be, `scheduled`
 * false) or the ManagedClusterAddOn in the cluster's namespace (which must exist).
 * @returns `{missing}` when the add-on (the asked object) or the ManagedCluster does not exist
 * @throws errors of D1
 */
export async function dryRunAddon(
  env: Env,
  name: string,
  cluster: string,
  of: "ClusterManagementAddOn" | "ManagedClusterAddOn",
): Promise<PlacementRender | { missing: "placement" | "cluster" }> {
  const [cma, mca, mc] = await Promise.all([
    admittedStoreOf(env, ClusterManagementAddOnKind).get("", name),
    admittedStoreOf(env, ManagedClusterAddOnKind).get(cluster, name),
    admittedStoreOf(env, ManagedClusterKind).get("", cluster),
  ]);
  if (of === "ManagedClusterAddOn" ? !mca : !cma) return { missing: "placement" };
  if (!mc) return { missing: "cluster" };
  const base: PlacementRender = {
    apiVersion: PLACEMENT_RENDER_API_VERSION,
    kind: PLACEMENT_RENDER_KIND,
    placement: { kind: of, ...(of === "ManagedClusterAddOn" ? { namespace: cluster } : {}), name },
    cluster,
    scheduled: !!mca && !mca.metadata.deletionTimestamp,
    template: [],
    objects: [],
    works: [],
    clusterResourceOverrides: [],
    resourceOverrides: [],
    appliedClusterOverrides: [],
    appliedOverrides: [],
  };
  if (!cma) return { ...base, error: `the ClusterManagementAddOn ${name} does not exist: nothing is rendered for the add-on` };
  const spec = (cma.spec ?? {}) as CmaSpec;
  // The placement of the install strategy that decides the cluster (the first, as the manager's run picks).
  let strategy: PlacementStrategy | undefined;
  if (spec.installStrategy?.type === "Placements")
    strategy = (await decided(env, spec.installStrategy.placements ?? [])).find((p) => p.groups.some((g) => g.clusters.includes(cluster)))?.strategy;
  const configs = resolveConfigs(spec, strategy, (mca?.spec as { configs?: ConfigRef[] } | undefined)?.configs);
  const { templateRef, template, adc } = await configObjects(env, configs);
  if (!templateRef) return { ...base, error: "no AddOnTemplate is configured for the add-on" };
  if (!template) return { ...base, error: `the AddOnTemplate ${templateRef.name} does not exist` };
  const overrides = await addonOverrides(env, name, cluster);
  const input = {
    addon: name,
    cluster,
    template,
    adc,
    installNamespace: (mca?.spec as { installNamespace?: string } | undefined)?.installNamespace,
    owner: { apiVersion: `${ADDON_GROUP}/v1alpha1`, kind: "ManagedClusterAddOn", name, uid: mca?.metadata.uid ?? "" },
  };
  const rendered = renderAddonWork({ ...input, overrides });
  const plain = overrides.empty ? rendered : renderAddonWork({ ...input, overrides: { ...overrides, empty: true } });
  const cop = rendered.karmada[APPLIED_CLUSTER_OVERRIDES_ANNOTATION];
  const out = {
    ...base,
    template: manifestsOf(plain.body.spec as Record<string, unknown>),
    clusterResourceOverrides: rendered.applied,
    appliedClusterOverrides: cop ? (JSON.parse(cop) as AppliedOverride[]) : [],
  };
  if (rendered.error !== undefined) return { ...out, error: rendered.error };
  const workSpec = rendered.body.spec as Record<string, unknown>;
  return { ...out, objects: manifestsOf(workSpec), works: [{ name: deployWorkName(name), spec: workSpec }] };
}
