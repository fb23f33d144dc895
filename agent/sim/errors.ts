/**
 * Kubernetes `Status` errors, in the shapes kube-apiserver produces
 * (apimachinery `pkg/api/errors`): reason, code, message wording and `details`.
 */

import { ApiError, type StatusCause, type StatusDetails } from "../../src/k8s/errors.ts";

// The Status error type is the hub's own (src/k8s/errors.ts): one definition of the wire shape.
export { ApiError, type StatusCause, type StatusDetails };

/** Identifies a resource in error messages: API group ("" for core) and plural resource name. */
export interface ResourceRef {
  group: string;
  plural: string;
}

/** `plural.group` as Kubernetes prints a resource in messages (`deployments.apps`, or `secrets` for core). */
export function qualifiedResource(r: ResourceRef): string {
  return r.group ? `${r.plural}.${r.group}` : r.plural;
}

function details(r: ResourceRef, name: string): StatusDetails {
  const d: StatusDetails = { name, kind: r.plural };
  if (r.group) d.group = r.group;
  return d;
}

/** 404 NotFound: `deployments.apps "x" not found`. */
export function notFound(r: ResourceRef, name: string): ApiError {
  return new ApiError(404, "NotFound", `${qualifiedResource(r)} "${name}" not found`, details(r, name));
}

/** 409 AlreadyExists: `secrets "x" already exists`. */
export function alreadyExists(r: ResourceRef, name: string): ApiError {
  return new ApiError(409, "AlreadyExists", `${qualifiedResource(r)} "${name}" already exists`, details(r, name));
}

/** 409 Conflict for optimistic concurrency (stale `metadata.resourceVersion`), worded as kube-apiserver does. */
export function conflict(
  r: ResourceRef,
  name: string,
  why = "the object has been modified; please apply your changes to the latest version and try again",
): ApiError {
  return new ApiError(409, "Conflict", `Operation cannot be fulfilled on ${qualifiedResource(r)} "${name}": ${why}`, details(r, name));
}

/**
 * 422 Invalid: `Kind.group "name" is invalid: field: message`. `kindGroup` is e.g. `Deployment.apps`
 * or `PatchOptions.meta.k8s.io`; each cause becomes a line of the message.
 */
export function invalid(kind: string, group: string, name: string, causes: StatusCause[]): ApiError {
  const qk = group ? `${kind}.${group}` : kind;
  const text = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  const msg = `${qk} "${name}" is invalid: ${text.length === 1 ? text[0] : `[${text.join(", ")}]`}`;
  const d: StatusDetails = { name, kind, causes };
  if (group) d.group = group;
  return new ApiError(422, "Invalid", msg, d);
}

/** 400 BadRequest with a free-form message. */
export function badRequest(message: string): ApiError {
  return new ApiError(400, "BadRequest", message);
}

/** 403 Forbidden for `r`/`name` with the given explanation. */
export function forbidden(r: ResourceRef, name: string, why: string): ApiError {
  return new ApiError(403, "Forbidden", `${qualifiedResource(r)} "${name}" is forbidden: ${why}`, details(r, name));
}

/** 405 MethodNotAllowed. */
export function methodNotAllowed(): ApiError {
  return new ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
}

/** 415 UnsupportedMediaType for a Content-Type the endpoint does not accept. */
export function unsupportedMediaType(contentType: string): ApiError {
  return new ApiError(
    415,
    "UnsupportedMediaType",
    `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got ${contentType})`,
  );
}

/** 404 for a URL that matches no served resource (what kube-apiserver answers for unknown paths). */
export function pathNotFound(): ApiError {
  return new ApiError(404, "NotFound", "the server could not find the requested resource", {});
}
