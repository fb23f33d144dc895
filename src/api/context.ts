/**
 * The Hono context of a Kubernetes API request (`/api`, `/apis`, `/openapi/*`, `/docs`): the
 * Worker's bindings and the request's identity and authorization attributes, set by the
 * authentication and authorization middleware (src/auth/request.ts):
 *
 * - `user`: the user the request acts as (Kubernetes `user.Info`, src/auth/rbac.ts `UserInfo`):
 *   the authenticated user, set once authentication succeeded (a failed one throws
 *   `Unauthenticated`, a 401), then replaced by the impersonated user when the request
 *   impersonates one (src/auth/impersonation.ts); every authorization and review uses it;
 * - `authenticatedUser`: the user the credential proved, set with `user` and kept when `user`
 *   becomes an impersonated one (the audit log records both);
 * - `attributes`: what the request asks (Kubernetes `authorizer.Attributes`, src/auth/rbac.ts
 *   `RequestAttributes`: verb, apiGroup, resource, subresource, namespace, name; or a path), as
 *   kube-apiserver's RequestInfo derives them (src/auth/requestinfo.ts), set before it is
 *   authorized (a denial throws the ApiError of `forbiddenError`, a 403);
 * - `createdName`: the name of the object a create made (set by the write once stored; a create
 *   may name it by `generateName`), which the audit log records as its objectRef's name without
 *   reading the answer back (src/audit/middleware.ts);
 * - `audit`: the request's audit record as a write may commit it in its own D1 batch (set by the
 *   audit middleware, src/audit/middleware.ts; {@link PendingAudit}).
 */
import type { Context } from "hono";
import type { RequestAttributes, UserInfo } from "../auth/rbac-types.ts";
import type { Env } from "../env.ts";
import type { CommitAudit } from "../store/types.ts";

/**
 * The audit record of a request's write, which the write hands to the store
 * (src/store/types.ts `CommitAudit`, `WriteOptions.audit`) so that the record commits with it;
 * once the store marked it `committed` (the HTTP code it was recorded with), the audit
 * middleware stores nothing more, unless the answer's code differs.
 */
export type PendingAudit = CommitAudit;

/** The context variables of an API request (see the module comment). */
export interface ApiVariables {
  user: UserInfo;
  authenticatedUser: UserInfo;
  attributes: RequestAttributes;
  createdName?: string;
  audit?: PendingAudit;
}

/** The Hono environment of the API routes: bindings and {@link ApiVariables}. */
export interface ApiEnv {
  Bindings: Env;
  Variables: ApiVariables;
}

/** A request context of the API routes. */
export type ApiContext = Context<ApiEnv>;
