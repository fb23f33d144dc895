/**
 * A request's authorization attributes as kube-apiserver derives them (its RequestInfo resolver,
 * `k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`; facts carried over, not code), as a
 * pure function of the method and URL:
 *
 * - a path under `/api/{version}/...` or `/apis/{group}/{version}/...` with at least a resource is
 *   a resource request; anything else (`/api`, `/api/v1`, `/apis`, `/apis/{group}[/{version}]`,
 *   `/openapi/v3`, `/docs`) is a non-resource request whose verb is the lower-cased method;
 * - `/namespaces/{ns}/{resource}...` sets the namespace; `/namespaces/{ns}` and its `status` and
 *   `finalize` subresources address the Namespace itself (namespace = its name);
 * - the rest is `resource[/name[/subresource]]`; the verb comes from the method (POST create, GET
 *   and HEAD get, PUT update, PATCH patch, DELETE delete); a get without a name is `list`, or
 *   `watch` with `?watch=true`; a list or watch whose `fieldSelector` requires
 *   `metadata.name=X` carries name X; a delete without a name is `deletecollection`;
 * - the legacy `/watch/` path prefix (`/apis/{g}/{v}/watch/...`) is the verb `watch`;
 * - Flotilla's one exception: the `render` subresource of a KubeFleet placement, an OCM
 *   ManifestWorkReplicaSet or a template add-on's ClusterManagementAddOn or ManagedClusterAddOn
 *   (a dry run, src/api/placement-render.ts) is a read of the object itself (no subresource), so
 *   that whoever may read a placement (or an add-on) may see what it renders.
 */
import type { NonResourceAttributes, RequestAttributes, ResourceAttributes } from "./rbac-types.ts";

/** The path segments kube-apiserver's RequestInfo treats as API prefixes. */
const API_PREFIXES = new Set(["api", "apis"]);
/** The prefix without an API group (the core group). */
const GROUPLESS_PREFIX = "api";
/** The read-only subresource of a KubeFleet placement, a ManifestWorkReplicaSet or an add-on that is its dry run for one cluster (authorized as a read of it). */
export const PLACEMENT_RENDER_SUBRESOURCE = "render";
/** The resources that have it, by API group: KubeFleet's placements, OCM's ManifestWorkReplicaSets and add-ons. */
const RENDERED_PLACEMENTS: Readonly<Record<string, ReadonlySet<string>>> = {
  "placement.kubernetes-fleet.io": new Set(["clusterresourceplacements", "resourceplacements"]),
  "work.open-cluster-management.io": new Set(["manifestworkreplicasets"]),
  "addon.open-cluster-management.io": new Set(["clustermanagementaddons", "managedclusteraddons"]),
};
/** Subresources of a namespace addressed as `/namespaces/{ns}/{sub}`. */
const NAMESPACE_SUBRESOURCES = new Set(["status", "finalize"]);

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function methodVerb(method: string): string {
  switch (method.toUpperCase()) {
    case "POST":
      return "create";
    case "GET":
    case "HEAD":
      return "get";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return "delete";
    default:
      return "";
  }
}

/** Whether a query value turns a flag on (`watch=true`, `watch=1`, ...; `false` and `0` do not). */
function flagOn(value: string | null): boolean {
  return value !== null && !(value === "0" || value.toLowerCase() === "false");
}

/**
 * The name a `fieldSelector` requires exactly (`metadata.name=X` or `metadata.name==X` among its
 * comma-separated requirements), when X is a valid path segment name; else undefined.
 */
function exactName(fieldSelector: string | null): string | undefined {
  if (!fieldSelector) return undefined;
  let name: string | undefined;
  for (const part of fieldSelector.split(",")) {
    const m = /^\s*metadata\.name\s*(==|=)\s*(.*?)\s*$/.exec(part);
    if (m) name = m[2]!;
  }
  if (name === undefined || name === "" || name === "." || name === ".." || /[/%]/.test(name)) return undefined;
  return name;
}

/**
 * The authorization attributes of a request (kube-apiserver's RequestInfo, see the module
 * comment). Never throws: a path it cannot read is a non-resource request.
 *
 * @param method the HTTP method, e.g. `GET`
 * @param url the request URL (its path and query are read)
 * @example requestAttributes("GET", new URL("https://hub/apis/cluster.open-cluster-management.io/v1beta1/namespaces/team-a/placements?watch=1"))
 * // { verb: "watch", apiGroup: "cluster.open-cluster-management.io", apiVersion: "v1beta1", resource: "placements", namespace: "team-a" }
 */
export function requestAttributes(method: string, url: URL): RequestAttributes {
  const nonResource: NonResourceAttributes = { verb: method.toLowerCase(), path: url.pathname };
  let parts = url.pathname
    .split("/")
    .filter((s) => s !== "")
    .map(decodeSegment);
  if (parts.length < 3 || !API_PREFIXES.has(parts[0]!)) return nonResource;
  const prefix = parts[0]!;
  parts = parts.slice(1);
  let apiGroup = "";
  if (prefix !== GROUPLESS_PREFIX) {
    if (parts.length < 3) return nonResource;
    apiGroup = parts[0]!;
    parts = parts.slice(1);
  }
  const apiVersion = parts[0]!;
  parts = parts.slice(1);
  let verb: string;
  if (parts[0] === "watch" && parts.length >= 2) {
    verb = "watch";
    parts = parts.slice(1);
  } else verb = methodVerb(method);
  let namespace = "";
  if (parts[0] === "namespaces" && parts.length > 1) {
    namespace = parts[1]!;
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2]!)) parts = parts.slice(2);
  }
  const attrs: ResourceAttributes = { verb, apiGroup, apiVersion, resource: parts[0] ?? "", namespace };
  if (parts.length >= 2) attrs.name = parts[1]!;
  if (parts.length >= 3) attrs.subresource = parts[2]!;
  if (!attrs.name && attrs.verb === "get") {
    attrs.verb = flagOn(url.searchParams.get("watch")) ? "watch" : "list";
    const name = exactName(url.searchParams.get("fieldSelector"));
    if (name !== undefined) attrs.name = name;
  }
  if (!attrs.name && attrs.verb === "delete") attrs.verb = "deletecollection";
  if (
    attrs.subresource === PLACEMENT_RENDER_SUBRESOURCE &&
    attrs.verb === "get" &&
    RENDERED_PLACEMENTS[apiGroup]?.has(attrs.resource) === true &&
    parts.length === 3
  )
    delete attrs.subresource;
  return attrs;
}
