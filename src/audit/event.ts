/**
 * The audit log's records as pure values: kube-apiserver's `audit.k8s.io/v1` Event at level
 * Metadata, the Kubernetes request info (verb and object reference) a request's method and URL
 * give, and which requests are recorded. No I/O; src/audit/log.ts stores the events and
 * src/audit/middleware.ts builds them around each request.
 *
 * Semantics sources (facts carried over, not code): `k8s.io/apiserver/pkg/apis/audit/v1/types.go`
 * (the Event's fields, `Audit-ID`, MicroTime timestamps with six fractional digits),
 * `k8s.io/apiserver/pkg/endpoints/request/requestinfo.go` (RequestInfoFactory: verbs from the
 * method and the path, `namespaces/{ns}/...`, subresources, the lower-cased method as the verb of a
 * non-resource request), `k8s.io/apiserver/pkg/endpoints/filters/authn_audit.go` (a failed
 * authentication's responseStatus message "Authentication failed, attempted: bearer"),
 * `k8s.io/apiserver/pkg/audit/request.go` (a successful response's status is only its code) and
 * the authorization filter's audit annotations `authorization.k8s.io/decision` and `.../reason`.
 */
import type { Status } from "../k8s/errors.ts";
import { microTime } from "../k8s/meta.ts";
import { requestAttributes } from "../auth/requestinfo.ts";
import { isNonResourceRequest, type RequestAttributes } from "../auth/rbac-types.ts";

/** The apiVersion of a stored event, `audit.k8s.io/v1`. */
export const AUDIT_API_VERSION = "audit.k8s.io/v1";
/** The response header that carries a request's audit ID (kube-apiserver's `Audit-ID`). */
export const AUDIT_ID_HEADER = "Audit-Id";
/** The audit annotation with the Cloudflare location (`request.cf.colo`, e.g. `FRA`) that served the request (src/edge.ts). */
export { COLO_ANNOTATION } from "../edge.ts";
/** The audit annotation with why each authenticator refused a 401's token (never the token). */
export const AUTHN_REASONS_ANNOTATION = "flotilla.dev/authentication-failure-reasons";
/** kube-apiserver's audit annotation of the authorizer's decision: `allow` or `forbid`. */
export const DECISION_ANNOTATION = "authorization.k8s.io/decision";
/** kube-apiserver's audit annotation of the authorizer's reason. */
export const REASON_ANNOTATION = "authorization.k8s.io/reason";

/** The verbs whose requests are recorded whatever their answer (kube-apiserver's mutating verbs). */
export const WRITE_VERBS: ReadonlySet<string> = new Set(["create", "update", "patch", "delete", "deletecollection"]);

/** `authenticationv1.UserInfo` as audit events carry it (fields left out when empty). */
export interface AuditUser {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** `auditv1.ObjectReference`: what a resource request targets (fields left out when empty). */
export interface AuditObjectReference {
  resource?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiGroup?: string;
  apiVersion?: string;
  resourceVersion?: string;
  subresource?: string;
}

/** A `metav1.Status` as an event's `responseStatus`: only `code` for a success. */
export interface AuditResponseStatus {
  metadata: Record<string, never>;
  status?: "Failure";
  message?: string;
  reason?: string;
  code: number;
  details?: Status["details"];
}

/** An `audit.k8s.io/v1` Event at level Metadata, stage ResponseComplete (no request or response bodies). */
export interface AuditEvent {
  kind: "Event";
  apiVersion: typeof AUDIT_API_VERSION;
  level: "Metadata";
  auditID: string;
  stage: "ResponseComplete";
  requestURI: string;
  verb: string;
  /** The authenticated user (the caller, also when it impersonated another). */
  user: AuditUser;
  /** The user the request acted as, when it impersonated one (kube-apiserver's `impersonatedUser`). */
  impersonatedUser?: AuditUser;
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: AuditObjectReference;
  responseStatus: AuditResponseStatus;
  /** MicroTime (RFC 3339, six fractional digits, UTC). */
  requestReceivedTimestamp: string;
  /** MicroTime (RFC 3339, six fractional digits, UTC). */
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

/** What kube-apiserver's RequestInfoFactory derives from a request: its verb and, for a resource request, its target. */
export interface RequestInfo {
  verb: string;
  /** Absent for a non-resource request (`/api`, `/apis/{group}`, a group version's discovery). */
  objectRef?: AuditObjectReference;
}

/**
 * The request info of a request on `/api` or `/apis`: its verb and objectRef, from the
 * authorization attributes kube-apiserver's RequestInfo derives (src/auth/requestinfo.ts
 * `requestAttributes`); a non-resource request has only its verb (the lower-cased method).
 */
export function requestInfo(method: string, url: string): RequestInfo {
  return infoOfAttributes(requestAttributes(method, new URL(url)));
}

/** The request info of authorization attributes (see {@link requestInfo}). */
export function infoOfAttributes(attrs: RequestAttributes): RequestInfo {
  if (isNonResourceRequest(attrs)) return { verb: attrs.verb };
  const objectRef: AuditObjectReference = { resource: attrs.resource };
  if (attrs.namespace) objectRef.namespace = attrs.namespace;
  if (attrs.name) objectRef.name = attrs.name;
  if (attrs.apiGroup) objectRef.apiGroup = attrs.apiGroup;
  if (attrs.apiVersion) objectRef.apiVersion = attrs.apiVersion;
  if (attrs.subresource) objectRef.subresource = attrs.subresource;
  return { verb: attrs.verb, objectRef };
}

/**
 * Whether a request is recorded: every write (the verbs of {@link WRITE_VERBS}, dry runs and
 * failed ones included, as kube-apiserver audits every request its policy selects), every denied
 * request (403) and every failed authentication (401). Reads that succeed or fail otherwise are not.
 */
export function isAudited(verb: string, code: number): boolean {
  return WRITE_VERBS.has(verb) || code === 401 || code === 403;
}

/** An epoch-milliseconds time as a Kubernetes MicroTime (src/k8s/meta.ts). */
export { microTime };

/**
 * The responseStatus message of a failed authentication, as kube-apiserver's failed-authentication
 * audit writes it: `Authentication failed, attempted: bearer` when an `Authorization: Bearer ...`
 * header was sent, else `Authentication failed, no credentials provided`.
 */
export function authenticationFailureMessage(authorization: string | null | undefined): string {
  const parts = (authorization ?? "").trim().split(" ");
  return parts.length > 1 && parts[0]!.toLowerCase() === "bearer"
    ? "Authentication failed, attempted: bearer"
    : "Authentication failed, no credentials provided";
}

/**
 * An event's responseStatus: `{metadata: {}, code}` for a success (below 400); for a failure the
 * answered Status's `status`, `reason`, `message` and `details` (`failure`, when known; else only
 * the code and `Failure`); for a 401 the message is {@link authenticationFailureMessage}'s.
 */
export function responseStatusOf(
  code: number,
  failure: Pick<Status, "reason" | "message" | "details"> | undefined,
  authorization: string | null | undefined,
): AuditResponseStatus {
  if (code < 400) return { metadata: {}, code };
  const out: AuditResponseStatus = { metadata: {}, status: "Failure", code };
  if (failure?.reason) out.reason = failure.reason;
  if (code === 401) out.message = authenticationFailureMessage(authorization);
  else if (failure?.message) out.message = failure.message;
  if (failure?.details && code !== 401) out.details = failure.details;
  return out;
}

/** A user as {@link buildAuditEvent} takes it (src/auth/rbac.ts `UserInfo`). */
export interface AuditInputUser {
  name: string;
  uid?: string;
  groups?: readonly string[];
  extra?: Readonly<Record<string, readonly string[]>>;
}

/** `authenticationv1.UserInfo` of a user, empty fields left out. */
function auditUser(u: AuditInputUser | undefined): AuditUser {
  const user: AuditUser = {};
  if (!u) return user;
  user.username = u.name;
  if (u.uid) user.uid = u.uid;
  if (u.groups?.length) user.groups = [...u.groups];
  if (u.extra && Object.keys(u.extra).length > 0) user.extra = Object.fromEntries(Object.entries(u.extra).map(([k, v]) => [k, [...v]]));
  return user;
}

/** What {@link buildAuditEvent} records of one request. */
export interface AuditInput {
  auditID: string;
  /** The path and query as sent. */
  requestURI: string;
  info: RequestInfo;
  /** The authenticated user; absent (recorded as `{}`) when authentication failed or is unknown. */
  user?: AuditInputUser;
  /** The user the request acted as when it impersonated one (src/auth/impersonation.ts); absent otherwise. */
  impersonatedUser?: AuditInputUser;
  /** The client's address (src/auth/ratelimit.ts `sourceAddress`'s source: `CF-Connecting-IP`). */
  sourceIP?: string;
  userAgent?: string;
  responseStatus: AuditResponseStatus;
  /** Epoch milliseconds. */
  receivedAt: number;
  /** Epoch milliseconds. */
  completedAt: number;
  annotations?: Record<string, string>;
}

/**
 * Builds the Event of one request (level Metadata, stage ResponseComplete), empty fields left out:
 * `user` the authenticated user, and `impersonatedUser` the one it acted as when it impersonated
 * one (kube-apiserver's `audit.LogImpersonatedUser`).
 */
export function buildAuditEvent(input: AuditInput): AuditEvent {
  const user = auditUser(input.user);
  // In the field order kube-apiserver writes an Event.
  return {
    kind: "Event",
    apiVersion: AUDIT_API_VERSION,
    level: "Metadata",
    auditID: input.auditID,
    stage: "ResponseComplete",
    requestURI: input.requestURI,
    verb: input.info.verb,
    user,
    ...(input.impersonatedUser ? { impersonatedUser: auditUser(input.impersonatedUser) } : {}),
    ...(input.sourceIP ? { sourceIPs: [input.sourceIP] } : {}),
    ...(input.userAgent ? { userAgent: input.userAgent } : {}),
    ...(input.info.objectRef ? { objectRef: input.info.objectRef } : {}),
    responseStatus: input.responseStatus,
    requestReceivedTimestamp: microTime(input.receivedAt),
    stageTimestamp: microTime(input.completedAt),
    ...(input.annotations && Object.keys(input.annotations).length > 0 ? { annotations: input.annotations } : {}),
  };
}
