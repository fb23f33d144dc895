/** The `paths` of a kind in an OpenAPI 3.0 document: its operations as kube-apiserver lists them. */
import type { KindDefinition } from "../../k8s/kind.ts";
import { type JsonSchema, META_SCHEMAS, refTo, schemaName, groupVersionPath } from "./names.ts";
import { gvk } from "./schemas.ts";

type Action = "get" | "list" | "post" | "put" | "patch" | "delete";

/** A query or path parameter (OpenAPI 3.0 form). */
function param(name: string, where: "query" | "path", description: string, schema: JsonSchema = { type: "string" }): JsonSchema {
  return { name, in: where, description, ...(where === "path" ? { required: true } : {}), schema };
}

/** The query and path parameters the operations share (OpenAPI 3.0 form); `name(kind)` is the path's object name. */
export const P = {
  name: (kind: string) => param("name", "path", `name of the ${kind}`),
  namespace: param("namespace", "path", "object name and auth scope, such as for teams and projects"),
  labelSelector: param(
    "labelSelector",
    "query",
    "A selector to restrict the list of returned objects by their labels (`=`, `==`, `!=`, `in`, `notin`, `exists`, `!`). Defaults to everything.",
  ),
  fieldSelector: param(
    "fieldSelector",
    "query",
    "A selector to restrict the list of returned objects by their fields: `metadata.name` and `metadata.namespace` with `=`, `==`, `!=`. Defaults to everything.",
  ),
  watch: param(
    "watch",
    "query",
    "Watch for changes to the described resources and return them as a stream of add, update and remove notifications (newline-delimited JSON WatchEvents).",
    { type: "boolean", uniqueItems: true },
  ),
  resourceVersion: param(
    "resourceVersion",
    "query",
    "With watch: the resourceVersion after which changes are streamed (usually a list's metadata.resourceVersion); unset streams ADDED events for the current objects first.",
  ),
  timeoutSeconds: param("timeoutSeconds", "query", "Timeout for the watch call, in seconds.", { type: "integer", uniqueItems: true }),
  allowWatchBookmarks: param("allowWatchBookmarks", "query", "Requests watch events of type BOOKMARK.", { type: "boolean", uniqueItems: true }),
  fieldManager: param(
    "fieldManager",
    "query",
    "A name associated with the actor or entity that is making these changes (at most 128 printable characters). Required for apply patch.",
  ),
  fieldValidation: param(
    "fieldValidation",
    "query",
    "How the server handles unknown or duplicate fields in the body. Flotilla always validates strictly (the request's zod schema): an unknown field fails the request with 400 BadRequest, an invalid value with 422 Invalid, whatever the value of this parameter (Strict, Warn or Ignore).",
  ),
  force: param(
    "force",
    "query",
    'Force is going to "force" Apply requests: the request takes ownership of the fields other managers own instead of failing with 409 Conflict. Only with apply patch.',
    { type: "boolean", uniqueItems: true },
  ),
};

function opId(verb: string, def: KindDefinition, suffix = ""): string {
  const camel = (s: string) => s.replace(/[.-](\w)/g, (_m, c: string) => c.toUpperCase()).replace(/^\w/, (c) => c.toUpperCase());
  return `${verb}${def.group ? camel(def.group) : "Core"}${camel(def.version)}${suffix}`;
}

function jsonContent(schema: JsonSchema): JsonSchema {
  return { "application/json": { schema } };
}

function okResponses(schema: JsonSchema, created: boolean): JsonSchema {
  return {
    "200": { description: "OK", content: jsonContent(schema) },
    ...(created ? { "201": { description: "Created", content: jsonContent(schema) } } : {}),
    "401": { description: "Unauthorized" },
  };
}

/** The v3 `paths` of one kind: collection, item and (when the kind has one) status subresource. */
export function kindPaths(def: KindDefinition): Record<string, JsonSchema> {
  const base = `/${groupVersionPath(def.group, def.version)}`;
  const kindRef = refTo(schemaName(def.group, def.version, def.kind));
  const listRef = refTo(schemaName(def.group, def.version, def.listKind));
  const statusRef = refTo(META_SCHEMAS.Status);
  const ns = def.namespaced ? "Namespaced" : "";
  const tag = `${def.group ? def.group.replace(/[.-](\w)/g, (_m, ch: string) => ch.toUpperCase()) : "core"}_${def.version}`;
  const scope = def.namespaced ? [P.namespace] : [];
  const writable = !def.systemOwned;
  const op = (
    action: Action,
    kind: string,
    id: string,
    description: string,
    parameters: JsonSchema[],
    responses: JsonSchema,
    requestBody?: JsonSchema,
  ): JsonSchema => ({
    tags: [tag],
    description,
    operationId: id,
    parameters,
    ...(requestBody ? { requestBody } : {}),
    responses,
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": gvk(def, kind),
  });
  const body = (schema: JsonSchema): JsonSchema => ({ content: jsonContent(schema), required: true });
  const patchBody: JsonSchema = {
    content: {
      "application/json-patch+json": { schema: refTo(META_SCHEMAS.Patch) },
      "application/merge-patch+json": { schema: refTo(META_SCHEMAS.Patch) },
      "application/apply-patch+yaml": { schema: refTo(META_SCHEMAS.Patch) },
    },
    required: true,
  };
  const writeParams = [P.fieldManager, P.fieldValidation];
  // A computed kind (a cluster's Lease) is listed, never watched.
  const listParams = def.computed
    ? [P.labelSelector, P.fieldSelector, P.resourceVersion]
    : [P.labelSelector, P.fieldSelector, P.watch, P.resourceVersion, P.timeoutSeconds, P.allowWatchBookmarks];
  const paths: Record<string, JsonSchema> = {};

  const collection = `${base}${def.namespaced ? "/namespaces/{namespace}" : ""}/${def.plural}`;
  const item = `${collection}/{name}`;
  if (def.createOnly) {
    paths[collection] = {
      post: op(
        "post",
        def.kind,
        opId("create", def, `${ns}${def.kind}`),
        `create a ${def.kind}`,
        [...scope, ...writeParams],
        okResponses(kindRef, true),
        body(kindRef),
      ),
    };
    return paths;
  }
  if (def.viewOf) {
    paths[collection] = {
      get: op(
        "list",
        def.kind,
        opId("list", def, `${ns}${def.kind}`),
        `list or watch the ${def.plural} the user may see`,
        [...scope, ...listParams],
        okResponses(listRef, false),
      ),
    };
    return paths;
  }
  paths[collection] = {
    get: op(
      "list",
      def.kind,
      opId("list", def, `${ns}${def.kind}`),
      def.computed ? `list objects of kind ${def.kind} (not watched)` : `list or watch objects of kind ${def.kind}`,
      [...scope, ...listParams],
      okResponses(listRef, false),
    ),
    ...(writable
      ? {
          post: op(
            "post",
            def.kind,
            opId("create", def, `${ns}${def.kind}`),
            `create a ${def.kind}`,
            [...scope, ...writeParams],
            okResponses(kindRef, true),
            body(kindRef),
          ),
        }
      : {}),
  };
  paths[item] = {
    get: op(
      "get",
      def.kind,
      opId("read", def, `${ns}${def.kind}`),
      `read the specified ${def.kind}`,
      [...scope, P.name(def.kind)],
      okResponses(kindRef, false),
    ),
    ...(writable
      ? {
          put: op(
            "put",
            def.kind,
            opId("replace", def, `${ns}${def.kind}`),
            `replace the specified ${def.kind}`,
            [...scope, P.name(def.kind), ...writeParams],
            okResponses(kindRef, true),
            body(kindRef),
          ),
          patch: op(
            "patch",
            def.kind,
            opId("patch", def, `${ns}${def.kind}`),
            `partially update the specified ${def.kind} (JSON merge patch, or server-side apply with application/apply-patch+yaml)`,
            [...scope, P.name(def.kind), ...(def.kind === "Namespace" && def.group === "" ? [P.fieldManager] : writeParams), P.force],
            okResponses(kindRef, true),
            patchBody,
          ),
          delete: op(
            "delete",
            def.kind,
            opId("delete", def, `${ns}${def.kind}`),
            `delete a ${def.kind}. The response is the object while finalizers remain (with deletionTimestamp set), a Status otherwise.`,
            [...scope, P.name(def.kind)],
            { "200": { description: "OK", content: jsonContent(statusRef) }, "401": { description: "Unauthorized" } },
            { content: jsonContent(refTo(META_SCHEMAS.DeleteOptions)) },
          ),
        }
      : {}),
  };
  if (def.hasStatus) {
    paths[`${item}/status`] = {
      get: op(
        "get",
        def.kind,
        opId("read", def, `${ns}${def.kind}Status`),
        `read status of the specified ${def.kind}`,
        [...scope, P.name(def.kind)],
        okResponses(kindRef, false),
      ),
      ...(writable
        ? {
            put: op(
              "put",
              def.kind,
              opId("replace", def, `${ns}${def.kind}Status`),
              `replace status of the specified ${def.kind}`,
              [...scope, P.name(def.kind), ...writeParams],
              okResponses(kindRef, true),
              body(kindRef),
            ),
            patch: op(
              "patch",
              def.kind,
              opId("patch", def, `${ns}${def.kind}Status`),
              `partially update status of the specified ${def.kind}`,
              [...scope, P.name(def.kind), ...writeParams, P.force],
              okResponses(kindRef, true),
              patchBody,
            ),
          }
        : {}),
    };
  }
  for (const sub of def.createSubresources ?? []) {
    const ref = refTo(schemaName(sub.group, sub.version, sub.kind));
    paths[`${item}/${sub.name}`] = {
      post: {
        ...op(
          "post",
          def.kind,
          opId("create", def, `${ns}${def.kind}${sub.name.replace(/^\w/, (c) => c.toUpperCase())}`),
          sub.description,
          [...scope, P.name(def.kind), ...writeParams],
          okResponses(ref, true),
          body(ref),
        ),
        "x-kubernetes-group-version-kind": { group: sub.group, version: sub.version, kind: sub.kind },
      },
    };
  }
  if (def.namespaced) {
    paths[`${base}/${def.plural}`] = {
      get: op(
        "list",
        def.kind,
        opId("list", def, `${def.kind}ForAllNamespaces`),
        `list or watch objects of kind ${def.kind} in all namespaces`,
        listParams,
        okResponses(listRef, false),
      ),
    };
  }
  return paths;
}
