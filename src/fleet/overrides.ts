/**
 * A placement's works per cluster with its overrides applied (docs/overrides.md; the overrides
 * read by src/fleet/override-snapshots.ts: KubeFleet's, compiled by src/overrides/kubefleet.ts,
 * then Karmada's OverridePolicies and ClusterOverridePolicies, src/overrides/karmada.ts, in the
 * order of src/overrides/combined.ts): a renderer that gives each cluster its works
 * (src/fleet/render.ts) from its overridden objects, all or nothing: when an override fails
 * for one object, the cluster gets no new works and the failure (KubeFleet's or Karmada's message)
 * for its `Overridden` condition. Each work carries Karmada's annotations
 * `policy.karmada.io/applied-cluster-overrides` and `policy.karmada.io/applied-overrides` when a
 * policy of Karmada's applied to its objects. Clusters for which the overrides render the same
 * (the same matched rules and variable values, or none) share one rendering, so a fleet of a
 * thousand clusters renders each distinct outcome once. Pure.
 */
import { canonicalJson as canonical } from "../k8s/canonical-json.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { RolloutStrategy } from "../kinds/fleet-validation.ts";
import { APPLIED_CLUSTER_OVERRIDES_ANNOTATION, APPLIED_OVERRIDES_ANNOTATION } from "../kinds/karmada-override.ts";
import type { BothOverrides, RenderCluster } from "../overrides/combined.ts";
import { appliedOverridesJson, type AppliedOverride } from "../overrides/karmada.ts";
import { renderWorks, workName, type Manifest, type RenderedWork } from "./render.ts";
import type { MemberCluster } from "./schedule.ts";

/** The annotations Karmada's override manager records on a work (removed from a work when nothing applies any more). */
export const APPLIED_OVERRIDE_ANNOTATIONS = [APPLIED_OVERRIDES_ANNOTATION, APPLIED_CLUSTER_OVERRIDES_ANNOTATION] as const;

/** Unique items (a rule applied to several objects is listed once: the same policy and rule), in first-seen order. */
export function uniqueApplied(items: readonly AppliedOverride[]): AppliedOverride[] {
  if (items.length < 2) return [...items];
  const seen = new Map<object, Set<string>>();
  return items.filter((i) => {
    let names = seen.get(i.overriders);
    if (!names) seen.set(i.overriders, (names = new Set()));
    if (names.has(i.policyName)) return false;
    names.add(i.policyName);
    return true;
  });
}

/** Karmada's annotations for what its policies applied (none when nothing did). */
export function appliedAnnotations(clusterOverrides: readonly AppliedOverride[], overrides: readonly AppliedOverride[]): Record<string, string> {
  const out: Record<string, string> = {};
  const cop = appliedOverridesJson(uniqueApplied(clusterOverrides));
  const op = appliedOverridesJson(uniqueApplied(overrides));
  if (cop !== undefined) out[APPLIED_CLUSTER_OVERRIDES_ANNOTATION] = cop;
  if (op !== undefined) out[APPLIED_OVERRIDES_ANNOTATION] = op;
  return out;
}

/** One cluster's rendering: its works (none when every object is deleted there), or the override's failure. */
export interface ClusterRender {
  /** The works to place (empty on failure). */
  works: RenderedWork[];
  /** Canonical JSON of each work's spec (for comparison with the stored works). */
  specJson: string[];
  /** Canonical JSON of the cluster's objects, in order (what the works carry, whatever their chunks). */
  manifestsJson: string;
  /** The ClusterResourceOverrideSnapshots that apply to the cluster (KubeFleet's binding list). */
  clusterResourceOverrides: string[];
  /** The ResourceOverrideSnapshots that apply to the cluster. */
  resourceOverrides: { name: string; namespace: string }[];
  /** The rules of Karmada's ClusterOverridePolicies and OverridePolicies applied to the cluster's objects (Karmada's `[{policyName, overriders}]`). */
  karmada: { clusterOverrides: AppliedOverride[]; overrides: AppliedOverride[] };
  /** Why the overrides failed for the cluster (nothing is rendered then). */
  error?: string;
  /**
   * Why the works cannot be synchronized (nothing is rendered then): KubeFleet's work generator's
   * refusal of an envelope (src/fleet/controller.ts `manifestsOf`), reported as WorkSynchronized False.
   */
  syncError?: string;
}

const NO_KARMADA = { clusterOverrides: [], overrides: [] };

/** A cluster as the renderer reads it: a placement's member cluster (its claims among its properties), or a name, labels and claims. */
export type RendererCluster = RenderCluster | MemberCluster;

const renderClusterOf = (c: RendererCluster): RenderCluster => ("properties" in c ? { name: c.name, labels: c.labels, claims: c.properties } : c);

/**
 * The renderer of a placement's works per cluster (`base` as src/fleet/render.ts `renderWorks`):
 * each cluster's objects through its overrides, then rendered; memoised by the overrides' key.
 * `syncError` (the selection's envelopes cannot be placed) renders no works for any cluster whose
 * overrides did not fail first: its {@link ClusterRender.syncError}.
 */
export function clusterRenderer(
  base: string,
  manifests: readonly Manifest[],
  strategy: RolloutStrategy | undefined,
  overrides: BothOverrides,
  syncError?: string,
): (cluster: RendererCluster) => ClusterRender {
  const memo = new Map<string, ClusterRender>();
  const render = (list: readonly Manifest[], annotations?: Record<string, string>) => {
    let works = renderWorks(base, list, strategy);
    if (annotations && Object.keys(annotations).length > 0) works = works.map((w) => ({ ...w, annotations: { ...w.annotations, ...annotations } }));
    return { works, specJson: works.map((w) => canonical(w.spec)), manifestsJson: canonical(list.map((m) => m.object)) };
  };
  return (cluster) => {
    const co = overrides.forCluster(renderClusterOf(cluster));
    const hit = memo.get(co.key);
    if (hit) return hit;
    let out: ClusterRender;
    if (co.key === "") out = { ...render(manifests), clusterResourceOverrides: [], resourceOverrides: [], karmada: NO_KARMADA };
    else {
      const list: Manifest[] = [];
      const clusterItems: AppliedOverride[] = [];
      const items: AppliedOverride[] = [];
      let error: string | undefined;
      for (const m of manifests) {
        const r = co.apply(m.object);
        if (!r.ok) {
          error = r.message;
          break;
        }
        clusterItems.push(...r.clusterOverrides);
        items.push(...r.overrides);
        if (r.object) list.push(r.object === m.object ? m : { ...m, object: r.object });
      }
      const applicable = { clusterResourceOverrides: co.kubefleet.clusterResourceOverrides, resourceOverrides: co.kubefleet.resourceOverrides };
      const karmada = { clusterOverrides: uniqueApplied(clusterItems), overrides: uniqueApplied(items) };
      out =
        error !== undefined
          ? { works: [], specJson: [], manifestsJson: "", ...applicable, karmada: NO_KARMADA, error }
          : { ...render(list, appliedAnnotations(karmada.clusterOverrides, karmada.overrides)), ...applicable, karmada };
    }
    if (syncError !== undefined && out.error === undefined) out = { ...out, works: [], specJson: [], manifestsJson: "", syncError };
    memo.set(co.key, out);
    return out;
  };
}

/** Canonical JSON of a spec object (a stored work's, kept across the copies that share it). */
const specJsonCache = new WeakMap<object, string>();

/**
 * Canonical JSON of a stored work's spec, computed once per spec object (a run compares it more
 * than once, and a work's status reports keep its spec object: src/fleet/works-cache.ts).
 */
export function storedSpecJson(w: KubeObject): string {
  const spec = (w.spec ?? {}) as object;
  let j = specJsonCache.get(spec);
  if (j !== undefined) return j;
  // A work read again (a new object) whose version was seen: a ManifestWork's generation moves with its spec.
  const version = `${w.metadata.uid}/${w.metadata.generation ?? 1}`;
  j = versionJson.get(version) ?? canonical(spec);
  specJsonCache.set(spec, j);
  if (versionJson.size >= VERSION_JSON_MAX) versionJson.clear();
  versionJson.set(version, j);
  return j;
}

/** Most work versions {@link storedSpecJson} remembers (past it, it starts afresh). */
const VERSION_JSON_MAX = 50_000;
/** Work version (`<uid>/<generation>`) → the canonical JSON of its spec (the strings are shared with the renderings'). */
const versionJson = new Map<string, string>();

/** Records `json` as the canonical JSON of `spec` (a rendered spec about to be written: its stored works share it). */
export function knowSpecJson(spec: object, json: string): void {
  specJsonCache.set(spec, json);
}

/** The chunk index of a placement's work named `name` (`<base>-work` 0, `<base>-<i>` i), or -1. */
function chunkOf(base: string, name: string): number {
  if (name === workName(base, 0)) return 0;
  const m = name.startsWith(`${base}-`) ? /^(\d+)$/.exec(name.slice(base.length + 1)) : null;
  return m ? Number(m[1]) : -1;
}

/**
 * Whether a cluster's stored works carry exactly the objects `r` renders (whatever their chunks
 * and strategy): their specs equal (the quick check), or their manifests in chunk order.
 */
export function carriesRender(base: string, works: readonly KubeObject[], r: ClusterRender): boolean {
  if (r.error !== undefined || r.syncError !== undefined) return false;
  if (works.length === r.works.length && r.works.every((rw, i) => works.some((w) => w.metadata.name === rw.name && storedSpecJson(w) === r.specJson[i])))
    return true;
  const ordered = [...works].sort((a, b) => chunkOf(base, a.metadata.name) - chunkOf(base, b.metadata.name));
  const stored = ordered.flatMap((w) => ((w.spec as { workload?: { manifests?: unknown[] } } | undefined)?.workload?.manifests ?? []) as unknown[]);
  return canonical(stored) === r.manifestsJson;
}
