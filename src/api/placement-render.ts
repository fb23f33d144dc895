/**
 * The `render` subresource of a KubeFleet placement (Flotilla's; docs/overrides.md "Seeing the
 * rendered objects"): `GET /apis/placement.kubernetes-fleet.io/{v1,v1beta1}/clusterresourceplacements/{name}/render?cluster=C`
 * (a ResourcePlacement's under its namespace) answers a `flotilla.dev/v1alpha1` PlacementRender,
 * the dry run of src/fleet/dry-run.ts: the objects cluster C's agent would receive, the template
 * they come from and the overrides applied. Authorized as a read (`get`) of the placement itself
 * (src/auth/requestinfo.ts): whoever may read the placement may see what it renders. Writes nothing.
 * A ManifestWorkReplicaSet has the same subresource, in the same shape
 * (`/apis/work.open-cluster-management.io/v1alpha1/namespaces/{ns}/manifestworkreplicasets/{name}/render?cluster=C`,
 * src/work/replicaset/dry-run.ts), and so do a template add-on's ClusterManagementAddOn
 * (`/apis/addon.open-cluster-management.io/{v1alpha1,v1beta1}/clustermanagementaddons/{name}/render?cluster=C`)
 * and ManagedClusterAddOn (`.../namespaces/{cluster}/managedclusteraddons/{name}/render`, whose
 * cluster is its namespace: `cluster`, when given, must name it), src/addons/dry-run.ts.
 */
import { badRequest, methodNotAllowed, notFound } from "../k8s/errors.ts";
import { clock } from "../clock.ts";
import { dryRunAddon } from "../addons/dry-run.ts";
import { dryRunPlacement } from "../fleet/dry-run.ts";
import { dryRunReplicaSet } from "../work/replicaset/dry-run.ts";
import { json } from "./resource/answer.ts";
import type { Ctx, Target } from "./resource/target.ts";

/**
 * Serves a request on the `render` subresource of placement (or ManifestWorkReplicaSet, or add-on) `t`.
 * @throws ApiError 405 (not a GET), 400 (no `cluster` query parameter; a ManagedClusterAddOn's
 *   naming another cluster), 404 (no such placement, add-on or ManagedCluster)
 */
export async function servePlacementRender(c: Ctx, t: Target): Promise<Response> {
  if (c.req.method !== "GET") throw methodNotAllowed(`${c.req.method} is not allowed on the render subresource`);
  const kind = t.def.kind;
  const asked = c.req.query("cluster");
  // A ManagedClusterAddOn renders for the cluster of its namespace.
  const cluster = kind === "ManagedClusterAddOn" ? (asked ?? t.namespace) : asked;
  if (!cluster) throw badRequest("the render subresource needs the query parameter cluster: the ManagedCluster to render for", "cluster");
  if (kind === "ManagedClusterAddOn" && cluster !== t.namespace)
    throw badRequest(
      `a ManagedClusterAddOn renders for the cluster of its namespace only: cluster ${JSON.stringify(cluster)} is not ${JSON.stringify(t.namespace)}`,
      "cluster",
    );
  const r =
    kind === "ManifestWorkReplicaSet"
      ? await dryRunReplicaSet(c.env, t.namespace, t.name!, cluster)
      : kind === "ClusterManagementAddOn" || kind === "ManagedClusterAddOn"
        ? await dryRunAddon(c.env, t.name!, cluster, kind)
        : await dryRunPlacement(c.env, { namespace: t.namespace, name: t.name! }, cluster, clock.now());
  if ("missing" in r) {
    throw r.missing === "placement"
      ? notFound({ group: t.def.group, plural: t.def.plural, name: t.name! })
      : notFound({ group: "cluster.open-cluster-management.io", plural: "managedclusters", name: cluster });
  }
  return json(r);
}
