/**
 * A minimal OpenAPI v3 surface (`/openapi/v3` and `/openapi/v3/{api/v1|apis/<g>/<v>}`), enough for
 * kubectl: `kubectl apply`/`create` probe it to learn that the server supports the
 * `fieldValidation` query parameter (else they fail with "failed to download openapi"). Each
 * document lists the resource paths with their operations, `x-kubernetes-group-version-kind`,
 * the query parameters, and the PATCH content types. Strategic merge patch is deliberately not
 * advertised, so kubectl computes strategic patches from its compiled-in types (built-ins) or falls
 * back to JSON merge patch (custom resources), instead of needing full schemas.
 * `/openapi/v2` is not served (404).
 */
import { createHash } from "node:crypto";
import type { Registry, ResourceType } from "./resources.ts";
import type { Obj } from "./types.ts";

function gvPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

const QUERY_PARAMS = ["dryRun", "fieldManager", "fieldValidation", "pretty"].map((name) => ({
  name,
  in: "query",
  schema: { type: "string", uniqueItems: true },
}));

function op(rt: ResourceType, action: string, extraParams: Obj[] = [], requestTypes?: string[]): Obj {
  const o: Obj = {
    operationId: `${action}${rt.kind}`,
    parameters: [...QUERY_PARAMS, ...extraParams],
    responses: { "200": { description: "OK" } },
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": { group: rt.group, version: rt.version, kind: rt.kind },
  };
  if (requestTypes) o.requestBody = { content: Object.fromEntries(requestTypes.map((t) => [t, { schema: { type: "object" } }])) };
  return o;
}

/** The OpenAPI v3 document for one group/version, or undefined when it is not served. */
export function openapiV3Doc(reg: Registry, group: string, version: string, kubernetesVersion: string): Obj | undefined {
  const types = reg.all().filter((r) => r.group === group && r.version === version);
  if (types.length === 0) return undefined;
  const paths: Obj = {};
  const schemas: Obj = {};
  for (const rt of types) {
    const base = `/${gvPath(group, version)}${rt.namespaced ? "/namespaces/{namespace}" : ""}/${rt.plural}`;
    paths[base] = { get: op(rt, "list"), post: op(rt, "post", [], ["*/*"]) };
    paths[`${base}/{name}`] = {
      get: op(rt, "get"),
      put: op(rt, "put", [], ["*/*"]),
      delete: op(rt, "delete"),
      patch: op(
        rt,
        "patch",
        [{ name: "force", in: "query", schema: { type: "boolean", uniqueItems: true } }],
        ["application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"],
      ),
    };
    const id = `${group || "core"}.${version}.${rt.kind}`;
    schemas[id] = { type: "object", "x-kubernetes-group-version-kind": [{ group, version, kind: rt.kind }] };
  }
  return { openapi: "3.0.0", info: { title: "Kubernetes", version: kubernetesVersion }, paths, components: { schemas } };
}

/** The `/openapi/v3` discovery document: `{paths: {"apis/apps/v1": {serverRelativeURL}}}`, each URL carrying a content hash. */
export function openapiV3Root(reg: Registry, kubernetesVersion: string): Obj {
  const paths: Obj = {};
  for (const [group, versions] of reg.groups()) {
    for (const v of versions) {
      const doc = openapiV3Doc(reg, group, v, kubernetesVersion);
      const hash = createHash("sha512").update(JSON.stringify(doc)).digest("hex").slice(0, 128).toUpperCase();
      paths[gvPath(group, v)] = { serverRelativeURL: `/openapi/v3/${gvPath(group, v)}?hash=${hash}` };
    }
  }
  return { paths };
}
