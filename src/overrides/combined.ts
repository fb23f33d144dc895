/**
 * KubeFleet's and Karmada's overrides together, for the renderers that serve both
 * (docs/overrides.md "One order everywhere"): KubeFleet's placements (ClusterResourcePlacement,
 * ResourcePlacement), ManifestWorkReplicaSets and template add-ons. For one object in one cluster:
 * KubeFleet's ClusterResourceOverrides then ResourceOverrides (src/overrides/kubefleet.ts,
 * KubeFleet's order), then, on what they left, Karmada's ClusterOverridePolicies then
 * OverridePolicies (src/overrides/karmada.ts, Karmada's order), all on the one engine
 * (src/overrides/engine.ts). Each source is all or nothing, and so is the pair: the first failure
 * fails the object for the cluster (the caller renders nothing there). An object a KubeFleet
 * `Delete` rule removes is not seen by Karmada's policies. Karmada's propagation policies apply
 * Karmada's alone (src/fleet/karmada/overrides.ts), as Karmada does. Pure.
 */
import type { KubeObject } from "../k8s/meta.ts";
import { MEMBER_CLUSTER_NAME_LABEL } from "../fleet/schedule.ts";
import { PROVIDER_KEY, REGION_KEY, ZONE_KEY, type KarmadaCluster } from "../fleet/karmada/schedule.ts";
import type { OverrideCluster } from "./engine.ts";
import type { ClusterOverrides, KubeFleetOverrides } from "./kubefleet.ts";
import type { AppliedOverride, KarmadaClusterOverrides, KarmadaOverrides } from "./karmada.ts";

/**
 * A member cluster as both sources read it: its name and labels (with
 * `kubernetes-fleet.io/member-cluster-name`, as KubeFleet's selectors see them), and its cluster
 * claims by name (Karmada's `provider`, `region` and `zone` come from a label of the claim's name,
 * else the claim: src/fleet/karmada/schedule.ts `karmadaClusterOf`).
 */
export interface RenderCluster extends OverrideCluster {
  claims?: Readonly<Record<string, string>>;
}

/**
 * A ManagedCluster as the overrides see it: its labels, plus `kubernetes-fleet.io/member-cluster-name`
 * (src/fleet/schedule.ts), and its cluster claims (Karmada's provider, region and zone).
 */
export function renderClusterOf(mc: KubeObject): RenderCluster {
  const claims: Record<string, string> = {};
  for (const c of ((mc.status ?? {}) as { clusterClaims?: { name: string; value: string }[] }).clusterClaims ?? []) claims[c.name] = c.value;
  return { name: mc.metadata.name, labels: { ...(mc.metadata.labels ?? {}), [MEMBER_CLUSTER_NAME_LABEL]: mc.metadata.name }, claims };
}

/** The cluster as Karmada's `targetCluster` reads it (the name label KubeFleet adds is not one of its labels). */
export function karmadaViewOf(c: RenderCluster): KarmadaCluster {
  const labels: Record<string, string> = { ...c.labels };
  if (labels[MEMBER_CLUSTER_NAME_LABEL] === c.name) delete labels[MEMBER_CLUSTER_NAME_LABEL];
  const field = (key: string) => c.labels[key] ?? c.claims?.[key];
  const provider = field(PROVIDER_KEY);
  const region = field(REGION_KEY);
  const zone = field(ZONE_KEY);
  return {
    name: c.name,
    labels,
    ...(provider ? { provider } : {}),
    ...(region ? { region } : {}),
    zones: zone
      ? zone
          .split(",")
          .map((z) => z.trim())
          .filter((z) => z)
      : [],
    taints: [],
    leaving: false,
  };
}

/** The outcome for one object in one cluster: the copy to place (null: a KubeFleet Delete), what Karmada's policies applied; or the failure. */
export type BothOutcome =
  { ok: true; object: KubeObject | null; clusterOverrides: AppliedOverride[]; overrides: AppliedOverride[] } | { ok: false; message: string };

/** Both sources' overrides of one cluster. */
export interface BothClusterOverrides {
  /** KubeFleet's side (its applicable snapshots, content keys). */
  kubefleet: ClusterOverrides;
  /** Equal for two clusters for which both sources render every object the same; "" when neither applies anything there. */
  key: string;
  /** Whether some Karmada policy has a rule matching the cluster. */
  karmadaApplies: boolean;
  /** Karmada's side's content keys (src/overrides/karmada.ts `contentKeys`). */
  karmadaContentKeys(): Map<string, string>;
  /** Applies KubeFleet's overrides, then Karmada's, to `object` (not changed). */
  apply(object: KubeObject): BothOutcome;
}

/** Both sources compiled once for a renderer's clusters. */
export interface BothOverrides {
  /** Neither source has anything for the renderer. */
  readonly empty: boolean;
  readonly kubefleet: KubeFleetOverrides;
  readonly karmada: KarmadaOverrides;
  forCluster(cluster: RenderCluster): BothClusterOverrides;
}

/** Karmada's policies for a cluster that has none matching (the key of `forCluster` with no matched rule). */
const NO_MATCH = "[]";

/** KubeFleet's `kubefleet` and Karmada's `karmada`, in that order (see the module comment). */
export function combineOverrides(kubefleet: KubeFleetOverrides, karmada: KarmadaOverrides): BothOverrides {
  return {
    empty: kubefleet.empty && karmada.empty,
    kubefleet,
    karmada,
    forCluster(cluster) {
      const kf = kubefleet.forCluster(cluster);
      const kr: KarmadaClusterOverrides | null = karmada.empty ? null : karmada.forCluster(karmadaViewOf(cluster));
      const karmadaApplies = kr !== null && kr.key !== "" && kr.key !== NO_MATCH;
      const key = kf.key === "" && !karmadaApplies ? "" : JSON.stringify([kf.key, karmadaApplies ? kr!.key : ""]);
      return {
        kubefleet: kf,
        key,
        karmadaApplies,
        karmadaContentKeys: () => (kr ? kr.contentKeys() : new Map()),
        apply(object) {
          const first = kf.key === "" ? { ok: true as const, object } : kf.apply(object);
          if (!first.ok) return { ok: false, message: first.message };
          if (first.object === null || !karmadaApplies) return { ok: true, object: first.object, clusterOverrides: [], overrides: [] };
          // KubeFleet's output, when it applied something, is a copy of this call's own: patched in place.
          const second = kr!.apply(first.object, first.object !== object);
          if (!second.ok) return second;
          return { ok: true, object: second.object, clusterOverrides: second.clusterOverrides, overrides: second.overrides };
        },
      };
    },
  };
}
