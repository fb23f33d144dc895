/**
 * Karmada's OverridePolicies and ClusterOverridePolicies where a propagation policy renders its
 * works (docs/overrides.md "Karmada"; the source is src/overrides/karmada.ts; the policies are
 * read by src/fleet/karmada/controller.ts): a renderer that gives each cluster its works from its
 * overridden objects, all or nothing: when a policy fails for one object, the cluster gets no new
 * works and the failure for its status. Clusters whose matched rules are the same share one
 * rendering. Pure.
 */
import type { RolloutStrategy } from "../../kinds/fleet-validation.ts";
import type { AppliedOverride, KarmadaOverrides } from "../../overrides/karmada.ts";
import { appliedAnnotations } from "../overrides.ts";
import { renderWorks, type Manifest, type RenderedWork } from "../render.ts";
import type { KarmadaCluster } from "./schedule.ts";

export { APPLIED_OVERRIDE_ANNOTATIONS } from "../overrides.ts";

/** One cluster's rendering: its works with the applied-overrides annotations, or the policy's failure (no works then). */
export interface KarmadaClusterRender {
  works: RenderedWork[];
  /** Why an override failed for the cluster (its works are left as they are). */
  error?: string;
}

/**
 * The renderer of a propagation policy's works per cluster (`base`, `manifests`, `strategy` as
 * src/fleet/render.ts `renderWorks`): the cluster's objects through its override policies, then
 * rendered, each work annotated with the policies applied to its objects
 * (`policy.karmada.io/applied-overrides`, `policy.karmada.io/applied-cluster-overrides`: Karmada's
 * JSON of `[{policyName, overriders}]`, sorted by name); memoised by the matched rules.
 */
export function karmadaClusterRenderer(
  base: string,
  manifests: readonly Manifest[],
  strategy: RolloutStrategy | undefined,
  overrides: KarmadaOverrides,
): (cluster: KarmadaCluster) => KarmadaClusterRender {
  const plain = () => ({ works: renderWorks(base, manifests, strategy) });
  if (overrides.empty) {
    const once = plain();
    return () => once;
  }
  const memo = new Map<string, KarmadaClusterRender>();
  return (cluster) => {
    const co = overrides.forCluster(cluster);
    const hit = memo.get(co.key);
    if (hit) return hit;
    const list: Manifest[] = [];
    const clusterItems: AppliedOverride[] = [];
    const items: AppliedOverride[] = [];
    let out: KarmadaClusterRender | undefined;
    for (const m of manifests) {
      const r = co.apply(m.object);
      if (!r.ok) {
        out = { works: [], error: r.message };
        break;
      }
      clusterItems.push(...r.clusterOverrides);
      items.push(...r.overrides);
      list.push(r.object === m.object ? m : { ...m, object: r.object });
    }
    if (!out) {
      const annotations = appliedAnnotations(clusterItems, items);
      out = { works: renderWorks(base, list, strategy).map((w) => ({ ...w, annotations: { ...w.annotations, ...annotations } })) };
    }
    memo.set(co.key, out);
    return out;
  };
}
