/**
 * Admission of KubeFleet's evictions and disruption budgets: as KubeFleet's validating webhooks
 * (`pkg/webhook/clusterresourceplacementeviction`, `.../clusterresourceplacementdisruptionbudget`)
 * read the ClusterResourcePlacement an eviction (create) or a budget (create, update) names, the
 * write here carries it in its extras (`EVICTION_PLACEMENT_EXTRA`, null when there is none), where
 * the kind's last write step checks it (src/kinds/fleet-eviction.ts).
 */
import type { Env } from "../env.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { FLEET_GROUP } from "../kinds/fleet.ts";
import { EVICTION_PLACEMENT_EXTRA } from "../kinds/fleet-eviction.ts";
import { findKindByKind } from "../kinds/index.ts";
import { storeOf, type Store } from "../store/store.ts";

/** The placement a write names: an eviction's `spec.placementName`, a budget's own name. */
function placementNameOf(kind: string, name: string | undefined, written: unknown): string | undefined {
  const o = (written ?? {}) as { metadata?: { name?: unknown }; spec?: { placementName?: unknown } };
  if (kind === "ClusterResourcePlacementEviction") return typeof o.spec?.placementName === "string" ? o.spec.placementName : undefined;
  return name || (typeof o.metadata?.name === "string" ? o.metadata.name : undefined);
}

/**
 * `store` of ClusterResourcePlacementEvictions or ClusterResourcePlacementDisruptionBudgets with
 * the named placement read before a create (an eviction: a POST, or a server-side apply, which
 * creates the object when it does not exist; the kind's check runs on the create only) or a
 * create, update or patch (a budget) of the object, not of a subresource. For those two kinds only:
 * src/admission/store.ts `admittedStoreOf` chooses the admission of each kind once.
 */
export function evictionAdmitted(env: Env, store: Store): Store {
  const def = store.def;
  const eviction = def.kind === "ClusterResourcePlacementEviction";
  return {
    ...store,
    async write(namespace, name, req, opts) {
      // A server-side apply may create an eviction (kube-apiserver runs the create's admission then).
      const apply = req.verb === "patch" && req.patchType === "apply";
      if (req.verb === "delete" || (req.verb !== "create" && (req.subresource || (eviction && !apply)))) return store.write(namespace, name, req, opts);
      const written = req.verb === "patch" ? req.patch : req.body;
      const placementName = placementNameOf(def.kind, name, written);
      if (!placementName) return store.write(namespace, name, req, opts);
      const crpKind = findKindByKind(FLEET_GROUP, "v1beta1", "ClusterResourcePlacement")!;
      const crp: KubeObject | null = await storeOf(env, crpKind).get("", placementName);
      return store.write(namespace, name, req, { ...opts, extras: { ...opts?.extras, [EVICTION_PLACEMENT_EXTRA]: crp } });
    },
  };
}
