/**
 * The overrides of a placement (docs/overrides.md): the latest ClusterResourceOverrideSnapshots
 * and ResourceOverrideSnapshots (one query per kind, through the label index on
 * `kubernetes-fleet.io/is-latest-snapshot`) that concern the placement's selected objects, as
 * KubeFleet's `FetchAllMatchingOverridesForResourceSnapshot` picks them (src/overrides/kubefleet.ts),
 * and Karmada's ClusterOverridePolicies and the OverridePolicies of the selected objects'
 * namespaces (src/overrides/karmada-policies.ts), compiled together for its clusters
 * (src/overrides/combined.ts: KubeFleet's first, then Karmada's).
 */
import type { KubeObject } from "../k8s/meta.ts";
import { IS_LATEST_SNAPSHOT_LABEL } from "../kinds/fleet.ts";
import {
  ClusterResourceOverrideSnapshotKind,
  ResourceOverrideSnapshotKind,
  type ClusterResourceOverrideSpec,
  type ResourceOverrideSpec,
} from "../kinds/fleet-override.ts";
import type { Env } from "../env.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { compileKubeFleetOverrides, overridesForPlacement, type PlacementKey } from "../overrides/kubefleet.ts";
import { compileKarmadaOverrides, policiesSelecting } from "../overrides/karmada.ts";
import { readKarmadaPolicies } from "../overrides/karmada-policies.ts";
import { combineOverrides, type BothOverrides } from "../overrides/combined.ts";
import type { Manifest } from "./render.ts";

const latest = {
  index: { key: IS_LATEST_SNAPSHOT_LABEL, values: ["true"] },
  filter: (o: KubeObject) => o.metadata.labels?.[IS_LATEST_SNAPSHOT_LABEL] === "true",
};

/**
 * The overrides of `placement` for its `manifests` (the selected objects, envelopes opened),
 * KubeFleet's and Karmada's, compiled for its clusters.
 * @throws errors of D1
 */
export async function placementOverrides(env: Env, placement: PlacementKey, manifests: readonly Manifest[]): Promise<BothOverrides> {
  const objects = manifests.map((m) => m.object);
  const namespaces = new Set(objects.map((o) => o.metadata.namespace).filter((n): n is string => !!n));
  const [cros, ros, policies] = await Promise.all([
    admittedStoreOf(env, ClusterResourceOverrideSnapshotKind).listPage(undefined, latest),
    namespaces.size > 0 ? admittedStoreOf(env, ResourceOverrideSnapshotKind).listPage(undefined, latest) : Promise.resolve({ items: [] as KubeObject[] }),
    objects.length > 0 ? readKarmadaPolicies(env, namespaces) : Promise.resolve([]),
  ]);
  const specOf = <T>(o: KubeObject) => (o.spec as { overrideSpec: T }).overrideSpec;
  const picked = overridesForPlacement(
    placement,
    objects,
    cros.items.map((o) => ({ name: o.metadata.name, spec: specOf<ClusterResourceOverrideSpec>(o) })),
    ros.items
      .filter((o) => namespaces.has(o.metadata.namespace ?? ""))
      .map((o) => ({ name: o.metadata.name, namespace: o.metadata.namespace!, spec: specOf<ResourceOverrideSpec>(o) })),
  );
  return combineOverrides(compileKubeFleetOverrides(picked.cros, picked.ros), compileKarmadaOverrides(policiesSelecting(policies, objects)));
}
