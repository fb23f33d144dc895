/**
 * Kubernetes `Status` errors (apimachinery `pkg/api/errors`): every failure the hub returns is
 * one of these, with the Kubernetes reason and HTTP code, so kubectl and client libraries
 * understand it.
 */

/** One cause of a failure: the offending field path (e.g. `spec.taints[0].timeAdded`). */
export interface StatusCause {
  reason?: string;
  message: string;
  field?: string;
}

/** `details` of a Kubernetes Status: what object the failure is about and why. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** The wire shape of a failed request (`kind: Status`, `apiVersion: v1`). */
export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure";
  message: string;
  reason: string;
  code: number;
  details?: StatusDetails;
}

/**
 * An error that becomes a Kubernetes Status response. `code` is the HTTP status (4xx/5xx) and
 * `reason` the Kubernetes StatusReason (NotFound, AlreadyExists, Conflict, Invalid, ...).
 */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
    this.name = "ApiError";
  }

  /** The Status object for this error. */
  toStatus(): Status {
    const s: Status = {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details) s.details = this.details;
    return s;
  }
}

/** Identifies the object an error is about: group, kind (or plural resource) and name. */
export interface ObjectRef {
  group: string;
  plural: string;
  kind?: string;
  name?: string;
}

function qualified(ref: ObjectRef): string {
  return ref.group ? `${ref.plural}.${ref.group}` : ref.plural;
}

/** 404 NotFound: `<plural>.<group> "<name>" not found`. */
export function notFound(ref: ObjectRef): ApiError {
  const status = notFoundStatus(ref);
  return new ApiError(status.code, status.reason, status.message, status.details);
}

/**
 * The Status of {@link notFound} (the same fields, in the same order), without making an Error:
 * what a get of an absent object answers. A `kubectl apply` of a new object starts with that get
 * (issue 42), and making an Error is not free where an inspector has the runtime capture each
 * Error's stack (`wrangler dev`: about 0.15 ms per Error in the hub's CPU profile).
 */
export function notFoundStatus(ref: ObjectRef): Status {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: `${qualified(ref)} "${ref.name ?? ""}" not found`,
    reason: "NotFound",
    code: 404,
    details: { name: ref.name, group: ref.group, kind: ref.plural },
  };
}

/** 409 AlreadyExists: `<plural>.<group> "<name>" already exists`. */
export function alreadyExists(ref: ObjectRef): ApiError {
  return new ApiError(409, "AlreadyExists", `${qualified(ref)} "${ref.name ?? ""}" already exists`, {
    name: ref.name,
    group: ref.group,
    kind: ref.plural,
  });
}

/**
 * 409 Conflict, as the apiserver's optimistic concurrency answers a stale resourceVersion:
 * `Operation cannot be fulfilled on <plural>.<group> "<name>": <why>`.
 */
export function conflict(ref: ObjectRef, why: string): ApiError {
  return new ApiError(409, "Conflict", `Operation cannot be fulfilled on ${qualified(ref)} "${ref.name ?? ""}": ${why}`, {
    name: ref.name,
    group: ref.group,
    kind: ref.plural,
  });
}

/**
 * 422 Invalid: `<Kind>.<group> "<name>" is invalid: <field>: <message>, ...`, with one cause per
 * field error (reason FieldValueInvalid, FieldValueRequired, ...).
 */
export function invalid(ref: ObjectRef, causes: StatusCause[]): ApiError {
  const kindName = ref.kind ?? ref.plural;
  const summary = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join(", ");
  return new ApiError(422, "Invalid", `${ref.group ? `${kindName}.${ref.group}` : kindName} "${ref.name ?? ""}" is invalid: ${summary}`, {
    name: ref.name,
    group: ref.group,
    kind: kindName,
    causes: causes.map((c) => ({ reason: c.reason ?? "FieldValueInvalid", message: c.message, field: c.field })),
  });
}

/** 400 BadRequest, optionally naming the offending field. */
export function badRequest(message: string, field?: string): ApiError {
  return new ApiError(400, "BadRequest", message, field ? { causes: [{ reason: "FieldValueInvalid", message, field }] } : undefined);
}

/** 401 Unauthorized: no credential, or one that does not verify. */
export function unauthorized(message = "Unauthorized"): ApiError {
  return new ApiError(401, "Unauthorized", message);
}

/** 403 Forbidden: a valid credential that may not do this. */
export function forbidden(message: string): ApiError {
  return new ApiError(403, "Forbidden", message);
}

/** 405 MethodNotAllowed. */
export function methodNotAllowed(message: string): ApiError {
  return new ApiError(405, "MethodNotAllowed", message);
}

/** 415 UnsupportedMediaType, e.g. a PATCH with a content type the resource does not take. */
export function unsupportedMediaType(contentType: string, supported: string[]): ApiError {
  return new ApiError(415, "UnsupportedMediaType", `the body of the request was in an unknown format - accepted media types include: ${supported.join(", ")}`, {
    causes: [{ reason: "FieldValueNotSupported", message: `unsupported media type ${contentType}`, field: "Content-Type" }],
  });
}

/** 413 RequestEntityTooLarge. `limitBytes` is the limit in bytes. */
export function tooLarge(limitBytes: number): ApiError {
  return new ApiError(413, "RequestEntityTooLarge", `Request entity too large: limit is ${limitBytes} bytes`);
}

/**
 * 414 with a Status, for a request target longer than `limitBytes` (`lengthBytes` long).
 * apimachinery has no reason for it, so the reason names the HTTP status, as
 * RequestEntityTooLarge does for 413.
 */
export function uriTooLong(lengthBytes: number, limitBytes: number): ApiError {
  return new ApiError(414, "RequestURITooLong", `Request-URI too long: ${lengthBytes} bytes, the limit is ${limitBytes} bytes`);
}

/**
 * 429 TooManyRequests, as the apiserver answers a request over a limit: `retryAfterSeconds` (in
 * seconds) goes into `details.retryAfterSeconds` and the `Retry-After` header.
 */
export function tooManyRequests(message: string, retryAfterSeconds: number): ApiError {
  return new ApiError(429, "TooManyRequests", message, { retryAfterSeconds });
}

/**
 * 504 Timeout for a read at a resourceVersion the store has not reached, as kube-apiserver builds
 * it (`storage.NewTooLargeResourceVersionError` in k8s.io/apiserver/pkg/storage/errors.go, on
 * apimachinery's `NewTimeoutError`): message `Timeout: Too large resource version: <requested>,
 * current: <current>`, one cause `{reason: "ResourceVersionTooLarge", message: "Too large resource
 * version"}` and `details.retryAfterSeconds` (the watch cache sends 1; the `Retry-After` header
 * carries it too). client-go's reflector recognises the cause (`IsTooLargeResourceVersion`) and
 * lists again from the latest version.
 *
 * @param requested the resourceVersion asked for, as a decimal string (it may exceed 2^53)
 * @param current the store's resourceVersion when the request gave up
 * @param retryAfterSeconds in seconds (default 1, the watch cache's `resourceVersionTooHighRetrySeconds`)
 */
export function tooLargeResourceVersion(requested: string, current: number, retryAfterSeconds = 1): ApiError {
  return new ApiError(504, "Timeout", `Timeout: Too large resource version: ${requested}, current: ${current}`, {
    causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
    retryAfterSeconds,
  });
}
