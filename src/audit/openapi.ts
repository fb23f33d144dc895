/**
 * The OpenAPI 3.0 schemas and paths of AuditEvents (src/audit/routes.ts), which src/api/openapi/v3.ts
 * adds to `flotilla.dev/v1alpha1`'s document (and so to `/openapi/v2`): `kubectl explain
 * auditevents` and generated clients see the fields of kube-apiserver's `audit.k8s.io/v1` Event
 * and the one path, GET (list, watch) of the collection.
 */
import type { JsonSchema } from "../api/openapi/names.ts";
import { AUDIT_GROUP, AUDIT_RESOURCE, AUDIT_VERSION } from "./routes.ts";

/** What the caller's document names the shared meta schemas, and how it references a schema. */
export interface AuditOpenAPIRefs {
  /** A `$ref` to the schema named `name`, with a description. */
  ref: (name: string, description?: string) => JsonSchema;
  /** The schema name of a kind in a group version. */
  name: (group: string, version: string, kind: string) => string;
  objectMeta: string;
  listMeta: string;
  status: string;
  /** The query parameters of a list and watch (labelSelector, fieldSelector, watch, ...). */
  listParameters: JsonSchema[];
}

const str = (description: string): JsonSchema => ({ type: "string", description });
const strings = (description: string): JsonSchema => ({ type: "array", description, items: { type: "string" } });
const userInfo = (description: string): JsonSchema => ({
  type: "object",
  description,
  properties: {
    username: str("The user's name."),
    uid: str("The user's UID."),
    groups: strings("The user's groups."),
    extra: { type: "object", description: "Extra user information.", additionalProperties: { type: "array", items: { type: "string" } } },
  },
});

/**
 * The AuditEvent and AuditEventList schemas and the collection's path item.
 * @returns `schemas` (by schema name) and `paths` (by path)
 */
export function auditOpenAPI(r: AuditOpenAPIRefs): { schemas: Record<string, JsonSchema>; paths: Record<string, JsonSchema> } {
  const kindName = r.name(AUDIT_GROUP, AUDIT_VERSION, "AuditEvent");
  const listName = r.name(AUDIT_GROUP, AUDIT_VERSION, "AuditEventList");
  const gvk = (kind: string) => ({ group: AUDIT_GROUP, version: AUDIT_VERSION, kind });
  const event: JsonSchema = {
    description:
      "One audited request (kube-apiserver's audit.k8s.io/v1 Event at level Metadata, stage ResponseComplete): a write, a denied request or a failed authentication. Served read-only: list and watch.",
    type: "object",
    properties: {
      apiVersion: str("flotilla.dev/v1alpha1."),
      kind: str("AuditEvent."),
      metadata: r.ref(
        r.objectMeta,
        "name: the audit ID; creationTimestamp: when the request was received; resourceVersion: the record's sequence number in the log.",
      ),
      level: str("The audit level: always Metadata (no request or response bodies)."),
      auditID: str("The request's unique ID, also answered as its Audit-Id response header."),
      stage: str("The stage the event was recorded at: always ResponseComplete."),
      requestURI: str("The request's path and query, as sent."),
      verb: str(
        "The Kubernetes verb (create, update, patch, delete, deletecollection, get, list, watch), or the lower-cased method of a non-resource request.",
      ),
      user: userInfo("The authenticated user (the caller, also when it impersonated another); empty after a failed authentication."),
      impersonatedUser: userInfo("The user the request acted as, when it impersonated one (Impersonate-User and the other Impersonate-* headers)."),
      sourceIPs: strings("The client's address (CF-Connecting-IP)."),
      userAgent: str("The User-Agent the client sent."),
      objectRef: {
        type: "object",
        description: "What the request targeted; absent for non-resource requests.",
        properties: {
          resource: str("Resource (plural)."),
          namespace: str("Namespace."),
          name: str("Name."),
          uid: str("UID."),
          apiGroup: str("API group; empty for the core group."),
          apiVersion: str("API version."),
          resourceVersion: str("Resource version."),
          subresource: str("Subresource, e.g. status."),
        },
      },
      responseStatus: r.ref(r.status, "The answer: its code, and for a failure the Status's status, reason and message."),
      requestReceivedTimestamp: { type: "string", format: "date-time", description: "When the request reached the hub (MicroTime)." },
      stageTimestamp: { type: "string", format: "date-time", description: "When the answer was complete (MicroTime)." },
      annotations: {
        type: "object",
        description: "flotilla.dev/colo (the edge location), authorization.k8s.io/decision, flotilla.dev/authentication-failure-reasons.",
        additionalProperties: { type: "string" },
      },
    },
    "x-kubernetes-group-version-kind": [gvk("AuditEvent")],
  };
  const list: JsonSchema = {
    description: "AuditEventList is a list of AuditEvent.",
    type: "object",
    required: ["items"],
    properties: {
      apiVersion: str("flotilla.dev/v1alpha1."),
      items: { type: "array", description: "List of auditevents.", items: r.ref(kindName) },
      kind: str("AuditEventList."),
      metadata: r.ref(r.listMeta, "Standard list metadata."),
    },
    "x-kubernetes-group-version-kind": [gvk("AuditEventList")],
  };
  const get: JsonSchema = {
    tags: ["flotillaDev_v1alpha1"],
    description:
      "list or watch AuditEvents (fieldSelector: user.username, verb, objectRef.resource, objectRef.namespace, metadata.name; requestReceivedTimestamp>= and < for a time range)",
    operationId: "listFlotillaDevV1alpha1AuditEvent",
    parameters: r.listParameters,
    responses: { "200": { description: "OK", content: { "application/json": { schema: r.ref(listName) } } }, "401": { description: "Unauthorized" } },
    "x-kubernetes-action": "list",
    "x-kubernetes-group-version-kind": gvk("AuditEvent"),
  };
  return { schemas: { [kindName]: event, [listName]: list }, paths: { [`/apis/${AUDIT_GROUP}/${AUDIT_VERSION}/${AUDIT_RESOURCE}`]: { get } } };
}
