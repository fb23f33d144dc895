/**
 * A dry run of a ManifestWorkReplicaSet for one cluster (docs/overrides.md "Seeing the rendered
 * objects"): what the replica set's deploy step would write in that cluster's namespace now,
 * through the same code its run uses (src/work/replicaset/revisions.ts `defaultedTemplate`,
 * src/work/replicaset/overrides.ts `replicaSetTemplates`), without writing anything: the
 * manifests of the cluster's work (the ResourceOverrides naming the replica set applied), the
 * template's manifests beside them, the ResourceOverrideSnapshots applied there, or the
 * override's failure. Served as the `render` subresource of a ManifestWorkReplicaSet
 * (src/api/placement-render.ts), in the shape of a placement's (src/fleet/dry-run.ts
 * `PlacementRender`), which `flotilla replicaset render` and the dashboard read.
 */
import { canonicalJson } from "../../k8s/canonical-json.ts";
import type { KubeObject } from "../../k8s/meta.ts";
import { ManagedClusterKind } from "../../kinds/managedcluster.ts";
import { ManifestWorkKind, ManifestWorkReplicaSetKind, MWRS_LABEL } from "../../kinds/manifestwork.ts";
import type { Env } from "../../env.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import { PLACEMENT_RENDER_API_VERSION, PLACEMENT_RENDER_KIND, type PlacementRender } from "../../fleet/dry-run.ts";
import { defaultedTemplate } from "./revisions.ts";
import { generatedWorkName, replicaSetKey } from "./names.ts";
import { replicaSetTemplates } from "./overrides.ts";
import { APPLIED_CLUSTER_OVERRIDES_ANNOTATION, APPLIED_OVERRIDES_ANNOTATION } from "../../kinds/karmada-override.ts";
import type { AppliedOverride } from "../../overrides/karmada.ts";
import type { ReplicaSetSpec } from "./run.ts";

/** Karmada's applied-overrides annotation read back (absent: none). */
const appliedOf = (json: string | undefined): AppliedOverride[] => (json ? (JSON.parse(json) as AppliedOverride[]) : []);

const manifestsOf = (spec: Record<string, unknown> | undefined) =>
  ((spec as { workload?: { manifests?: KubeObject[] } } | undefined)?.workload?.manifests ?? []) as KubeObject[];

/**
 * Renders the ManifestWorkReplicaSet `namespace`/`name` for `cluster`, as its next run would.
 * `scheduled` says whether the replica set has its work in the cluster's namespace now.
 * @returns `{missing}` when the replica set or the ManagedCluster does not exist
 * @throws errors of D1
 */
export async function dryRunReplicaSet(
  env: Env,
  namespace: string,
  name: string,
  cluster: string,
): Promise<PlacementRender | { missing: "placement" | "cluster" }> {
  const workName = generatedWorkName(namespace, name);
  const [mwrs, mc, work] = await Promise.all([
    admittedStoreOf(env, ManifestWorkReplicaSetKind).get(namespace, name),
    admittedStoreOf(env, ManagedClusterKind).get("", cluster),
    admittedStoreOf(env, ManifestWorkKind).get(cluster, workName),
  ]);
  if (!mwrs) return { missing: "placement" };
  if (!mc) return { missing: "cluster" };
  const template = defaultedTemplate(((mwrs.spec ?? {}) as ReplicaSetSpec).manifestWorkTemplate);
  const rendered = (await replicaSetTemplates(env, namespace, name, template, canonicalJson(template))).forCluster(cluster);
  const base: PlacementRender = {
    apiVersion: PLACEMENT_RENDER_API_VERSION,
    kind: PLACEMENT_RENDER_KIND,
    placement: { kind: ManifestWorkReplicaSetKind.kind, namespace, name },
    cluster,
    scheduled: !!work && work.metadata.labels?.[MWRS_LABEL] === replicaSetKey(namespace, name),
    template: manifestsOf(template),
    objects: [],
    works: [],
    clusterResourceOverrides: [],
    resourceOverrides: rendered.overrides.map((o) => ({ name: o, namespace })),
    appliedClusterOverrides: appliedOf(rendered.karmada[APPLIED_CLUSTER_OVERRIDES_ANNOTATION]),
    appliedOverrides: appliedOf(rendered.karmada[APPLIED_OVERRIDES_ANNOTATION]),
  };
  if (rendered.error !== undefined || !rendered.template) return { ...base, error: rendered.error ?? "the template could not be rendered" };
  return { ...base, objects: manifestsOf(rendered.template), works: [{ name: workName, spec: rendered.template }] };
}
