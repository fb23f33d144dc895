/**
 * A ManifestWorkReplicaSet's template per cluster with KubeFleet's ResourceOverrides applied
 * (docs/overrides.md "ManifestWorkReplicaSets"): the latest ResourceOverrideSnapshots of the
 * replica set's namespace whose `placement` names it (`scope: ManifestWorkReplicaSet`) and select
 * one of its manifests (src/overrides/kubefleet.ts `overridesForReplicaSet`), compiled once, each
 * cluster's manifests through the one patch engine (src/overrides/engine.ts). All or nothing: when
 * an override fails for one manifest in a cluster, the cluster gets no new template and the
 * failure for the replica set's `Overridden` condition (its work stays as it was). Clusters whose
 * overrides render the same share one rendering.
 *
 * After them, Karmada's ClusterOverridePolicies and the OverridePolicies of the replica set's
 * namespace (src/overrides/combined.ts: one order everywhere): to Karmada's policies a replica
 * set's manifests are objects of the replica set's namespace, whatever member namespace they name
 * (as a ResourceOverride naming the replica set selects them); what they applied is recorded on the
 * work as Karmada records it (`policy.karmada.io/applied-overrides`,
 * `policy.karmada.io/applied-cluster-overrides`).
 */
import { canonicalJson } from "../../k8s/canonical-json.ts";
import type { AppliedOverride } from "../../overrides/karmada.ts";
import type { KubeObject } from "../../k8s/meta.ts";
import { IS_LATEST_SNAPSHOT_LABEL } from "../../kinds/fleet.ts";
import { REPLICA_SET_SCOPE, ResourceOverrideSnapshotKind, type ResourceOverrideSpec } from "../../kinds/fleet-override.ts";
import { ManagedClusterKind } from "../../kinds/managedcluster.ts";
import type { Env } from "../../env.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import { MEMBER_CLUSTER_NAME_LABEL } from "../../fleet/schedule.ts";
import { compileKubeFleetOverrides, overridesForReplicaSet } from "../../overrides/kubefleet.ts";
import { compileKarmadaOverrides, policiesSelecting } from "../../overrides/karmada.ts";
import { readKarmadaPolicies } from "../../overrides/karmada-policies.ts";
import { combineOverrides, renderClusterOf, type BothOverrides, type RenderCluster } from "../../overrides/combined.ts";
import { appliedAnnotations } from "../../fleet/overrides.ts";

/**
 * The annotation on a replica set's ManifestWork naming the ResourceOverrideSnapshots applied to
 * what it carries, comma-separated (absent: none), as KubeFleet's binding lists
 * `resourceOverrideSnapshots`.
 */
export const APPLIED_OVERRIDES_ANNOTATION = "work.flotilla.dev/applied-overrides";

/** One cluster's template: the spec its work should carry, or why the overrides failed there. */
export interface ClusterTemplate {
  /** The work's spec (the replica set's template when no override applies); absent on failure. */
  template?: Record<string, unknown>;
  /** Its canonical JSON ("" on failure: never equal to a stored work's). */
  json: string;
  /** The ResourceOverrideSnapshots applied there, by name (empty: none). */
  overrides: string[];
  /** Karmada's annotations of what its policies applied there (empty: none applied). */
  karmada: Record<string, string>;
  /** Why the overrides failed for the cluster (KubeFleet's message). */
  error?: string;
}

/** The templates of a replica set per cluster. */
export interface ReplicaSetTemplates {
  /** No override names the replica set (every cluster gets the template as it is). */
  readonly empty: boolean;
  /** The template of one cluster (by name; a cluster unknown to the hub has no labels). */
  forCluster(cluster: string): ClusterTemplate;
}

type Workload = { workload?: { manifests?: unknown[] } };

/** The templates of a replica set no override names: `template` as it is for every cluster. */
function asItIs(template: Record<string, unknown>, templateJson: string): ReplicaSetTemplates {
  const plain: ClusterTemplate = { template, json: templateJson, overrides: [], karmada: {} };
  return { empty: true, forCluster: () => plain };
}

/**
 * The templates of `template` (the defaulted spec of the replica set `namespace`/`name`) per
 * cluster, for `overrides` and the clusters' labels and claims `clusters` (by name).
 */
export function templatesFor(
  template: Record<string, unknown>,
  templateJson: string,
  overrides: BothOverrides,
  clusters: ReadonlyMap<string, RenderCluster>,
): ReplicaSetTemplates {
  if (overrides.empty) return asItIs(template, templateJson);
  const plain: ClusterTemplate = { template, json: templateJson, overrides: [], karmada: {} };
  const manifests = ((template as Workload).workload?.manifests ?? []) as KubeObject[];
  const memo = new Map<string, ClusterTemplate>();
  return {
    empty: false,
    forCluster(name) {
      const co = overrides.forCluster(clusters.get(name) ?? { name, labels: { [MEMBER_CLUSTER_NAME_LABEL]: name } });
      if (co.key === "") return plain;
      const hit = memo.get(co.key);
      if (hit) return hit;
      const names = co.kubefleet.resourceOverrides.map((r) => r.name);
      const list: KubeObject[] = [];
      const clusterItems: AppliedOverride[] = [];
      const items: AppliedOverride[] = [];
      let out: ClusterTemplate | undefined;
      for (const m of manifests) {
        // A manifest that is not an object (refused by the kind's validation) passes as it is.
        if (!m || typeof m !== "object" || typeof m.metadata !== "object" || m.metadata === null) {
          list.push(m);
          continue;
        }
        const r = co.apply(m);
        if (!r.ok) {
          out = { json: "", overrides: names, karmada: {}, error: r.message };
          break;
        }
        clusterItems.push(...r.clusterOverrides);
        items.push(...r.overrides);
        if (r.object) list.push(r.object);
      }
      if (!out) {
        const t = { ...template, workload: { ...((template as Workload).workload ?? {}), manifests: list } };
        out = { template: t, json: canonicalJson(t), overrides: names, karmada: appliedAnnotations(clusterItems, items) };
      }
      memo.set(co.key, out);
      return out;
    },
  };
}

const latest = {
  index: { key: IS_LATEST_SNAPSHOT_LABEL, values: ["true"] },
  filter: (o: KubeObject) => o.metadata.labels?.[IS_LATEST_SNAPSHOT_LABEL] === "true",
};

/**
 * The replica sets the latest ResourceOverrideSnapshots name (`placement.scope:
 * ManifestWorkReplicaSet`), each once: those a cluster's new labels may render differently.
 * @throws errors of D1
 */
export async function replicaSetsWithOverrides(env: Env): Promise<{ namespace: string; name: string }[]> {
  const { items } = await admittedStoreOf(env, ResourceOverrideSnapshotKind).listPage(undefined, latest);
  const out = new Map<string, { namespace: string; name: string }>();
  for (const o of items) {
    const placement = (o.spec as { overrideSpec?: ResourceOverrideSpec } | undefined)?.overrideSpec?.placement;
    if (placement?.scope !== REPLICA_SET_SCOPE) continue;
    const namespace = o.metadata.namespace ?? "";
    out.set(`${namespace}/${placement.name}`, { namespace, name: placement.name });
  }
  return [...out.values()];
}

/**
 * The templates of the replica set `namespace`/`name` per cluster: one read of its namespace's
 * latest ResourceOverrideSnapshots, and of the ManagedClusters only when one names it.
 * @throws errors of D1
 */
export async function replicaSetTemplates(
  env: Env,
  namespace: string,
  name: string,
  template: Record<string, unknown>,
  templateJson: string,
): Promise<ReplicaSetTemplates> {
  const manifests = ((template as Workload).workload?.manifests ?? []).filter(
    (m): m is KubeObject => !!m && typeof m === "object" && typeof (m as KubeObject).metadata === "object" && (m as KubeObject).metadata !== null,
  );
  const [{ items }, policies] = await Promise.all([
    admittedStoreOf(env, ResourceOverrideSnapshotKind).listPage(namespace, latest),
    manifests.length > 0 ? readKarmadaPolicies(env, new Set([namespace])) : Promise.resolve([]),
  ]);
  // No ResourceOverride snapshot in the namespace and no Karmada policy: nothing to compile.
  if (items.length === 0 && policies.length === 0) return asItIs(template, templateJson);
  const ros = overridesForReplicaSet(
    namespace,
    name,
    manifests,
    items.map((o) => ({ name: o.metadata.name, namespace: o.metadata.namespace ?? "", spec: (o.spec as { overrideSpec: ResourceOverrideSpec }).overrideSpec })),
  );
  const overrides = combineOverrides(
    compileKubeFleetOverrides([], ros, { replicaSet: true }),
    compileKarmadaOverrides(
      policiesSelecting(policies, manifests, () => namespace),
      { namespaceOf: () => namespace },
    ),
  );
  if (overrides.empty) return templatesFor(template, templateJson, overrides, new Map());
  const clusters = (await admittedStoreOf(env, ManagedClusterKind).list()).items.map(renderClusterOf);
  return templatesFor(template, templateJson, overrides, new Map(clusters.map((c) => [c.name, c])));
}
