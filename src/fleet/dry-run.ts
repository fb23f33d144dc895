/**
 * A dry run of a placement for one cluster (docs/overrides.md "Seeing the rendered objects"):
 * what the placement controller would render for that cluster now, through the same code its run
 * uses (src/fleet/select.ts selection, src/fleet/override-snapshots.ts and src/fleet/overrides.ts
 * `clusterRenderer`), without writing anything: the objects as the cluster's agent would receive
 * them in its works (overrides applied), the same objects before the overrides (the template),
 * the override snapshots applied there and the rules of Karmada's override policies, or the
 * override's failure. Served as the `render`
 * subresource of a ClusterResourcePlacement or ResourcePlacement (src/api/placement-render.ts),
 * which `flotilla placement render` and the dashboard's placement page read.
 */
import type { KubeObject } from "../k8s/meta.ts";
import { ClusterResourceBindingKind, ResourceBindingKind } from "../kinds/fleet.ts";
import type { PlacementSpec } from "../kinds/fleet-validation.ts";
import { FLEET_PLACEMENT_KINDS } from "../kinds/index.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { syncCustomKinds } from "../kinds/sync.ts";
import type { Env } from "../env.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { bindingName, manifestsOf, storeSource, trackingValue, type PlacementRef } from "./controller.ts";
import { placementOverrides } from "./override-snapshots.ts";
import { clusterRenderer } from "./overrides.ts";
import { memberClusterOf } from "./schedule.ts";
import { selectResources, SelectionError } from "./select.ts";
import type { AppliedOverride } from "../overrides/karmada.ts";

/** The kind of a dry run's answer (`flotilla.dev/v1alpha1`, Flotilla's: KubeFleet has none). */
export const PLACEMENT_RENDER_KIND = "PlacementRender";
/** Its apiVersion. */
export const PLACEMENT_RENDER_API_VERSION = "flotilla.dev/v1alpha1";

/** What a placement renders for one cluster now. */
export interface PlacementRender {
  apiVersion: typeof PLACEMENT_RENDER_API_VERSION;
  kind: typeof PLACEMENT_RENDER_KIND;
  /** The placement: its kind, namespace ("" for a ClusterResourcePlacement) and name. */
  placement: { kind: string; namespace?: string; name: string };
  /** The cluster rendered for. */
  cluster: string;
  /** The placement has a binding in the cluster that is not Unscheduled (the cluster is picked). */
  scheduled: boolean;
  /** The selected objects as dispatched, envelopes opened: the template every cluster starts from. */
  template: KubeObject[];
  /** The cluster's objects, overrides applied (an object a Delete rule removes is absent): what its works carry. Empty on failure. */
  objects: KubeObject[];
  /** The works the cluster's agent would receive: their names and specs. Empty on failure. */
  works: { name: string; spec: Record<string, unknown> }[];
  /** The ClusterResourceOverrideSnapshots applied there, by name. */
  clusterResourceOverrides: string[];
  /** The ResourceOverrideSnapshots applied there. */
  resourceOverrides: { name: string; namespace: string }[];
  /**
   * The rules of Karmada's ClusterOverridePolicies applied there, after KubeFleet's overrides
   * (Karmada's `policy.karmada.io/applied-cluster-overrides`: `[{policyName, overriders}]`, by name).
   */
  appliedClusterOverrides: AppliedOverride[];
  /** The rules of Karmada's OverridePolicies applied there (`policy.karmada.io/applied-overrides`). */
  appliedOverrides: AppliedOverride[];
  /** Why the overrides (or the selection) failed for the cluster: nothing would be rendered there. */
  error?: string;
}

/**
 * Renders placement `ref` for `cluster` at `nowMs` (epoch ms), as its next run would.
 * @returns null when the placement or the ManagedCluster does not exist (`missing` says which)
 * @throws errors of D1
 */
export async function dryRunPlacement(
  env: Env,
  ref: PlacementRef,
  cluster: string,
  nowMs: number,
): Promise<PlacementRender | { missing: "placement" | "cluster" }> {
  const def = ref.namespace ? FLEET_PLACEMENT_KINDS.rp : FLEET_PLACEMENT_KINDS.crp;
  const [placement, mc, binding] = await Promise.all([
    admittedStoreOf(env, def).get(ref.namespace, ref.name),
    admittedStoreOf(env, ManagedClusterKind).get("", cluster),
    admittedStoreOf(env, ref.namespace ? ResourceBindingKind : ClusterResourceBindingKind).get(ref.namespace, bindingName(ref, cluster)),
  ]);
  if (!placement) return { missing: "placement" };
  if (!mc) return { missing: "cluster" };
  const spec = (placement.spec ?? {}) as PlacementSpec;
  const base: PlacementRender = {
    apiVersion: PLACEMENT_RENDER_API_VERSION,
    kind: PLACEMENT_RENDER_KIND,
    placement: { kind: def.kind, ...(ref.namespace ? { namespace: ref.namespace } : {}), name: ref.name },
    cluster,
    scheduled: !!binding && (binding.spec as { state?: string } | undefined)?.state !== "Unscheduled",
    template: [],
    objects: [],
    works: [],
    clusterResourceOverrides: [],
    resourceOverrides: [],
    appliedClusterOverrides: [],
    appliedOverrides: [],
  };
  await syncCustomKinds(env);
  let opened;
  try {
    opened = manifestsOf(await selectResources(storeSource(env), ref, spec.resourceSelectors ?? []));
  } catch (e) {
    if (!(e instanceof SelectionError)) throw e;
    return { ...base, error: `The resource selectors are invalid: ${e.message}` };
  }
  const manifests = opened.manifests;
  const render = clusterRenderer(
    trackingValue(ref),
    manifests,
    spec.strategy,
    await placementOverrides(env, ref, manifests),
    opened.error,
  )(memberClusterOf(mc, nowMs));
  const template = manifests.map((m) => m.object);
  const applied = {
    clusterResourceOverrides: render.clusterResourceOverrides,
    resourceOverrides: render.resourceOverrides,
    appliedClusterOverrides: render.karmada.clusterOverrides,
    appliedOverrides: render.karmada.overrides,
  };
  if (render.error !== undefined) return { ...base, template, ...applied, error: render.error };
  if (render.syncError !== undefined) return { ...base, template, ...applied, error: render.syncError };
  const objects = render.works.flatMap((w) => ((w.spec as { workload?: { manifests?: KubeObject[] } }).workload?.manifests ?? []) as KubeObject[]);
  return { ...base, template, objects, works: render.works.map((w) => ({ name: w.name, spec: w.spec })), ...applied };
}
