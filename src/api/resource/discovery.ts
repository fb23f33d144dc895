/**
 * API discovery of the generic resource endpoints: APIResourceList per group version and
 * aggregated discovery (apidiscovery.k8s.io), as kube-apiserver serves them.
 */
import { ApiError } from "../../k8s/errors.ts";
import { type KindDefinition } from "../../k8s/kind.ts";
import { servedGroups, servedKinds } from "../../kinds/index.ts";
import { AUDIT_DISCOVERY, AUDIT_GROUP, AUDIT_VERSION } from "../../audit/routes.ts";
import { mediaRanges } from "../negotiate.ts";

/** The verbs discovery lists for a kind: read-only for what the hub alone writes; no deletecollection of namespaces (as kube-apiserver's). */
function verbsOf(k: KindDefinition): string[] {
  if (k.createOnly) return ["create"];
  if (k.viewOf) return ["list", "watch"];
  if (k.computed) return ["get", "list"];
  if (k.systemOwned) return ["get", "list", "watch"];
  const all = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
  return k.deleteCollectionRefusal !== undefined ? all.filter((v) => v !== "deletecollection") : all;
}

function discoveryResources(group: string, version: string) {
  const audit = group === AUDIT_GROUP && version === AUDIT_VERSION ? [AUDIT_DISCOVERY] : [];
  return [
    ...servedKinds()
      .filter((k) => k.group === group && k.version === version)
      .flatMap((k) => {
        const main = {
          name: k.plural,
          singularName: k.singular,
          namespaced: k.namespaced,
          kind: k.kind,
          verbs: verbsOf(k),
          shortNames: k.shortNames,
          ...(k.categories ? { categories: k.categories } : {}),
        };
        const status = k.hasStatus
          ? [{ name: `${k.plural}/status`, singularName: "", namespaced: k.namespaced, kind: k.kind, verbs: ["get", "patch", "update"] }]
          : [];
        const updated = (k.updateSubresources ?? []).map((s) => ({
          name: `${k.plural}/${s.name}`,
          singularName: "",
          namespaced: k.namespaced,
          kind: k.kind,
          verbs: ["update"],
        }));
        const created = (k.createSubresources ?? []).map((s) => ({
          name: `${k.plural}/${s.name}`,
          singularName: "",
          namespaced: k.namespaced,
          group: s.group,
          version: s.version,
          kind: s.kind,
          verbs: ["create"],
        }));
        const scale = k.scale
          ? [
              {
                name: `${k.plural}/scale`,
                singularName: "",
                namespaced: k.namespaced,
                group: "autoscaling",
                version: "v1",
                kind: "Scale",
                verbs: ["get", "patch", "update"],
              },
            ]
          : [];
        return [main, ...updated, ...status, ...scale, ...created];
      }),
    ...audit,
  ];
}

/** The APIResourceList of a group version ("" for the core group). @throws ApiError 404 when nothing is served there */
export function resourceList(group: string, version: string) {
  const resources = discoveryResources(group, version);
  if (resources.length === 0) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion: group ? `${group}/${version}` : version, resources };
}

/** The media type of aggregated discovery (apidiscovery.k8s.io), v2 or v2beta1. */
function aggregatedDiscoveryType(version: string): string {
  return `application/json;g=apidiscovery.k8s.io;v=${version};as=APIGroupDiscoveryList`;
}

/**
 * The apidiscovery.k8s.io version an `Accept` header asks for first (`v2`, `v2beta1`), or null when
 * it prefers the unaggregated documents (APIVersions, APIGroupList): kube-apiserver's choice
 * between the two forms of `/api` and `/apis`.
 */
export function wantsAggregatedDiscovery(accept: string | undefined): string | null {
  for (const r of mediaRanges(accept ?? "")) {
    if (r.type === "application/json" && r.params.get("as") === "APIGroupDiscoveryList" && r.params.get("g") === "apidiscovery.k8s.io") {
      const v = r.params.get("v");
      if (v === "v2" || v === "v2beta1") return v;
      continue;
    }
    if (r.type === "application/json" || r.type === "*/*" || r.type === "application/*") return null;
  }
  return null;
}

/** A kind's subresources in aggregated discovery: a Namespace's `finalize`, `status`, a custom resource's `scale`, and those created with another kind (a ServiceAccount's `token`). */
function subresourcesOf(k: KindDefinition, responseKind: { group: string; version: string; kind: string }) {
  const subresources = [
    ...(k.updateSubresources ?? []).map((s) => ({ subresource: s.name, responseKind, verbs: ["update"] })),
    ...(k.hasStatus ? [{ subresource: "status", responseKind, verbs: ["get", "patch", "update"] }] : []),
    ...(k.scale ? [{ subresource: "scale", responseKind: { group: "autoscaling", version: "v1", kind: "Scale" }, verbs: ["get", "patch", "update"] }] : []),
    ...(k.createSubresources ?? []).map((s) => ({
      subresource: s.name,
      responseKind: { group: s.group, version: s.version, kind: s.kind },
      verbs: ["create"],
    })),
  ];
  return subresources.length > 0 ? { subresources } : {};
}

/**
 * Aggregated discovery (KEP-3352, `apidiscovery.k8s.io` APIGroupDiscoveryList) of the core group
 * (`core`: what `/api` answers) or of every other group (`/apis`): each group with its versions in
 * preference order, each version with its resources (scope, kinds, verbs, short names, the status
 * subresource), so that a client learns the whole API in two requests instead of one per version.
 */
export function aggregatedDiscovery(core: boolean, version: string) {
  const items = servedGroups()
    .filter((g) => (g.group === "") === core)
    .map((g) => ({
      metadata: { name: g.group, creationTimestamp: null },
      versions: g.versions.map((v) => ({
        version: v,
        freshness: "Current",
        resources: servedKinds()
          .filter((k) => k.group === g.group && k.version === v)
          .map((k) => {
            const responseKind = { group: g.group, version: v, kind: k.kind };
            return {
              resource: k.plural,
              responseKind,
              scope: k.namespaced ? "Namespaced" : "Cluster",
              singularResource: k.singular,
              verbs: verbsOf(k),
              ...(k.shortNames?.length ? { shortNames: k.shortNames } : {}),
              ...(k.categories ? { categories: k.categories } : {}),
              ...subresourcesOf(k, responseKind),
            };
          })
          .concat(g.group === AUDIT_GROUP && v === AUDIT_VERSION ? [auditAggregated()] : []),
      })),
    }));
  return new Response(JSON.stringify({ kind: "APIGroupDiscoveryList", apiVersion: `apidiscovery.k8s.io/${version}`, metadata: {}, items }), {
    headers: { "content-type": aggregatedDiscoveryType(version) },
  });
}

/** AuditEvents (src/audit/routes.ts) in aggregated discovery: cluster-scoped, list and watch. */
function auditAggregated() {
  const { name, singularName, kind, verbs } = AUDIT_DISCOVERY;
  return { resource: name, responseKind: { group: AUDIT_GROUP, version: AUDIT_VERSION, kind }, scope: "Cluster", singularResource: singularName, verbs };
}
