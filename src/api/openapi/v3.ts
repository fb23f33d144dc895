/** The OpenAPI 3.0 document of one group-version (kube-apiserver's `/openapi/v3/apis/<g>/<v>`). */
import { servedGroups, servedKinds } from "../../kinds/index.ts";
import { auditOpenAPI } from "../../audit/openapi.ts";
import { AUDIT_GROUP, AUDIT_VERSION } from "../../audit/routes.ts";
import { type JsonSchema, META_SCHEMAS, refTo, schemaName } from "./names.ts";
import { kindSchema, subresourceSchema, listSchema, metaSchemas } from "./schemas.ts";
import { P, kindPaths } from "./paths.ts";

/** Every served group-version (custom resources' included), in KINDS order. */
export function groupVersions(): { group: string; version: string }[] {
  return servedGroups().flatMap((g) => g.versions.map((version) => ({ group: g.group, version })));
}

/**
 * The OpenAPI 3.0 document of one group-version (kube-apiserver's `/openapi/v3/apis/<g>/<v>`), or
 * null when the hub serves no kind in it.
 */
export function openAPIV3(group: string, version: string): JsonSchema | null {
  const defs = servedKinds().filter((k) => k.group === group && k.version === version);
  if (defs.length === 0) return null;
  const schemas: Record<string, JsonSchema> = {};
  const paths: Record<string, JsonSchema> = {};
  for (const def of defs) {
    schemas[schemaName(def.group, def.version, def.kind)] = kindSchema(def);
    Object.assign(schemas, def.openAPI?.().components);
    if (!def.createOnly) schemas[schemaName(def.group, def.version, def.listKind)] = listSchema(def);
    for (const sub of def.createSubresources ?? []) schemas[schemaName(sub.group, sub.version, sub.kind)] = subresourceSchema(sub);
    Object.assign(paths, kindPaths(def));
  }
  if (group === AUDIT_GROUP && version === AUDIT_VERSION) {
    const audit = auditOpenAPI({
      ref: refTo,
      name: schemaName,
      objectMeta: META_SCHEMAS.ObjectMeta,
      listMeta: META_SCHEMAS.ListMeta,
      status: META_SCHEMAS.Status,
      listParameters: [P.labelSelector, P.fieldSelector, P.watch, P.resourceVersion, P.timeoutSeconds, P.allowWatchBookmarks],
    });
    Object.assign(schemas, audit.schemas);
    Object.assign(paths, audit.paths);
  }
  Object.assign(schemas, metaSchemas(group, version));
  const sorted = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  return {
    openapi: "3.0.0",
    info: { title: "Flotilla", version: "v0.1.0", description: `Flotilla hub API, ${group ? `${group}/${version}` : version}.` },
    paths,
    components: {
      schemas: sorted,
      securitySchemes: { BearerToken: { type: "apiKey", description: "Bearer Token authentication", name: "authorization", in: "header" } },
    },
    security: [{ BearerToken: [] }],
  };
}
