/** The Swagger 2.0 document of the whole API (kube-apiserver's `/openapi/v2`), converted from the v3 documents. */
import { type JsonSchema, type GroupVersionKind, isObj } from "./names.ts";
import { groupVersions, openAPIV3 } from "./v3.ts";

/** Rewrites an OpenAPI 3.0 schema into Swagger 2.0's dialect (refs to `#/definitions/`, no nullable/anyOf). */
function toV2Schema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toV2Schema);
  if (!isObj(node)) return node;
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "$ref" && typeof v === "string") out.$ref = v.replace("#/components/schemas/", "#/definitions/");
    else if (k === "nullable") out["x-nullable"] = v;
    else if (k === "anyOf" && Array.isArray(v)) {
      const types = new Set(v.map((s) => (isObj(s) ? s.type : undefined)));
      out.type = "string";
      if (types.has("integer") && types.has("string")) out.format = "int-or-string";
    } else out[k] = toV2Schema(v);
  }
  return out;
}

/** Converts one v3 operation to Swagger 2.0 (body parameter, consumes/produces, response schemas). */
function toV2Operation(op: JsonSchema): JsonSchema {
  const { requestBody, responses, parameters, ...rest } = op as { requestBody?: JsonSchema; responses: Record<string, JsonSchema>; parameters: JsonSchema[] };
  const params: JsonSchema[] = parameters.map((p) => {
    const { schema, ...pr } = p as { schema: JsonSchema };
    return { ...pr, ...schema };
  });
  const content = (requestBody?.content ?? {}) as Record<string, { schema: JsonSchema }>;
  const consumes = Object.keys(content);
  if (consumes.length > 0)
    params.push({ name: "body", in: "body", required: requestBody?.required === true, schema: toV2Schema(Object.values(content)[0]!.schema) });
  const v2Responses: Record<string, JsonSchema> = {};
  for (const [code, r] of Object.entries(responses)) {
    const schema = (r.content as Record<string, { schema: JsonSchema }> | undefined)?.["application/json"]?.schema;
    v2Responses[code] = { description: r.description, ...(schema ? { schema: toV2Schema(schema) } : {}) };
  }
  return {
    ...rest,
    ...(consumes.length > 0 ? { consumes } : {}),
    produces: ["application/json"],
    schemes: ["https"],
    parameters: params,
    responses: v2Responses,
  };
}

/**
 * One Swagger 2.0 document for every served group-version (kube-apiserver's `/openapi/v2`),
 * converted from each group-version's v3 document as `v3` gives it ({@link openAPIV3} by default;
 * the routes pass the documents they built already, parsed from their JSON, rather than build
 * them again). The v3 documents are read, never changed.
 */
export function openAPIV2(v3: (group: string, version: string) => JsonSchema = (g, v) => openAPIV3(g, v)!): JsonSchema {
  const definitions: Record<string, unknown> = {};
  const paths: Record<string, JsonSchema> = {};
  for (const { group, version } of groupVersions()) {
    const doc = v3(group, version);
    const components = doc.components as { schemas: Record<string, JsonSchema> };
    for (const [name, s] of Object.entries(components.schemas)) {
      const prev = definitions[name] as JsonSchema | undefined;
      const next = toV2Schema(s) as JsonSchema;
      // DeleteOptions lists every group-version it is served in.
      if (prev && Array.isArray(prev["x-kubernetes-group-version-kind"]) && Array.isArray(next["x-kubernetes-group-version-kind"])) {
        const all = [...prev["x-kubernetes-group-version-kind"], ...next["x-kubernetes-group-version-kind"]] as GroupVersionKind[];
        next["x-kubernetes-group-version-kind"] = all.filter(
          (g, i) => all.findIndex((h) => h.group === g.group && h.version === g.version && h.kind === g.kind) === i,
        );
      }
      definitions[name] = next;
    }
    for (const [path, item] of Object.entries(doc.paths as Record<string, JsonSchema>)) {
      paths[path] = Object.fromEntries(Object.entries(item).map(([verb, op]) => [verb, toV2Operation(op as JsonSchema)]));
    }
  }
  return {
    swagger: "2.0",
    info: { title: "Flotilla", version: "v0.1.0" },
    paths,
    definitions: Object.fromEntries(Object.entries(definitions).sort(([a], [b]) => a.localeCompare(b))),
    securityDefinitions: { BearerToken: { type: "apiKey", description: "Bearer Token authentication", name: "authorization", in: "header" } },
    security: [{ BearerToken: [] }],
  };
}
