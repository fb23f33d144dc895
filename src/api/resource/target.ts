/**
 * The target of a request on a resource path: the kind, namespace, name and subresource that
 * `/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]` addresses.
 */
import { ApiError, badRequest } from "../../k8s/errors.ts";
import { type CreateSubresource, type KindDefinition, type UpdateSubresource } from "../../k8s/kind.ts";
import { type KubeObject } from "../../k8s/meta.ts";
import { isDNS1123Label } from "../../k8s/validation.ts";
import { findKind } from "../../kinds/index.ts";
import type { ApiContext } from "../context.ts";
import { decodePathSegment } from "../request.ts";
import { PLACEMENT_RENDER_SUBRESOURCE } from "../../auth/requestinfo.ts";

/**
 * Whether `def` has the `render` subresource: a KubeFleet ClusterResourcePlacement or
 * ResourcePlacement, an OCM ManifestWorkReplicaSet, or a template add-on's ClusterManagementAddOn
 * or ManagedClusterAddOn.
 */
const isFleetPlacement = (def: KindDefinition) =>
  (def.group === "placement.kubernetes-fleet.io" && (def.kind === "ClusterResourcePlacement" || def.kind === "ResourcePlacement")) ||
  (def.group === "work.open-cluster-management.io" && def.kind === "ManifestWorkReplicaSet") ||
  (def.group === "addon.open-cluster-management.io" && (def.kind === "ClusterManagementAddOn" || def.kind === "ManagedClusterAddOn"));

/** The Hono context of an API request. */
export type Ctx = ApiContext;

/** What a request on a resource path addresses (src/api/resource/target.ts `resolve`). */
export interface Target {
  def: KindDefinition;
  namespace: string;
  name?: string;
  subresource?: "status";
  /** A subresource written by a PUT of the object (`KindDefinition.updateSubresources`: a Namespace's `finalize`). */
  update?: UpdateSubresource;
  /** A list or watch through a view (`KindDefinition.viewOf`): the view's kind, and what the user may see. */
  view?: { def: KindDefinition; visible: (obj: KubeObject) => boolean };
  /** A subresource created with a body of another kind (`KindDefinition.createSubresources`: a ServiceAccount's `token`), POST only. */
  create?: CreateSubresource;
  /** The `scale` subresource of a kind that has one (`KindDefinition.scale`, src/api/scale.ts). */
  scale?: boolean;
  /** The `render` subresource of a KubeFleet placement, a ManifestWorkReplicaSet or an add-on (src/api/placement-render.ts). */
  render?: boolean;
}

/**
 * Parses the (still percent-encoded) path segments after `/apis/{group}/{version}/`.
 * @throws ApiError 404 (no such resource), 400 (malformed escape, invalid namespace)
 */
export function resolve(group: string, version: string, encoded: string[]): Target {
  let namespace = "";
  let parts = encoded.map(decodePathSegment);
  // `/api/v1/namespaces/{name}/status` and `.../finalize` address a Namespace, not a namespace's objects.
  const namespaceSub = group === "" && parts[0] === "namespaces" && parts.length === 3 && (parts[2] === "status" || parts[2] === "finalize");
  if (parts[0] === "namespaces" && parts.length >= 3 && !namespaceSub) {
    namespace = parts[1]!;
    parts = parts.slice(2);
  }
  const [plural, name, sub, ...extra] = parts;
  const def = plural ? findKind(group, version, plural) : undefined;
  const update = sub === undefined || extra.length > 0 ? undefined : def?.updateSubresources?.find((s) => s.name === sub);
  if (def && update) return { def, namespace, name, update };
  const create = sub === undefined || extra.length > 0 ? undefined : def?.createSubresources?.find((s) => s.name === sub);
  if (def && create && (def.namespaced ? namespace !== "" && isDNS1123Label(namespace).length === 0 : namespace === ""))
    return { def, namespace, name, create };
  if (def?.scale && sub === "scale" && name !== undefined && extra.length === 0 && def.namespaced === Boolean(namespace))
    return { def, namespace, name, scale: true };
  if (def && sub === PLACEMENT_RENDER_SUBRESOURCE && isFleetPlacement(def) && name !== undefined && extra.length === 0 && def.namespaced === Boolean(namespace))
    return { def, namespace, name, render: true };
  if (!def || extra.length > 0 || (sub !== undefined && sub !== "status")) {
    throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  }
  if (def.namespaced && !namespace && name !== undefined) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  if (!def.namespaced && namespace) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  if (namespace) {
    const errs = isDNS1123Label(namespace);
    if (errs.length > 0) throw badRequest(`invalid namespace ${JSON.stringify(namespace)}: ${errs.join("; ")}`, "metadata.namespace");
  }
  if (sub === "status" && !def.hasStatus) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  return { def, namespace, name, subresource: sub as "status" | undefined };
}
