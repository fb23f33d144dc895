/**
 * Authentication and authorization of the Kubernetes API's requests (`/api`, `/apis` with watch
 * and discovery, `/openapi/*`, `/docs`), as kube-apiserver's handler chain: the bearer token is
 * authenticated by a chain of authenticators ({@link authenticatorsFor}), the request's
 * attributes are derived (src/auth/requestinfo.ts), and RBAC decides (src/auth/rbac-store.ts).
 * The public paths (`/version`, `/healthz`, `/livez`, `/readyz`: Kubernetes'
 * system:public-info-viewer) and the agent and webhook routes do not pass here.
 *
 * Failed authentication: every failure is the same 401 `Unauthorized` Status (src/auth/authn.ts
 * `Unauthenticated`) and counts toward the failed-authentication limit (src/auth/ratelimit.ts);
 * the admin token is evaluated first and without I/O, so wrong tokens from its address never
 * lock the admin out. A valid agent credential is not a user: it gets 403 (agents use
 * `/agent/v1`), impersonation headers or not: an agent has no RBAC identity to be granted
 * `impersonate`.
 *
 * Impersonation (`Impersonate-User` and the rest, src/auth/impersonation.ts) follows
 * authentication, as kube-apiserver's filter chain has it: the authenticated user must be allowed
 * the `impersonate` checks, and the request is then authorized, served and reviewed as the
 * impersonated user (the audit log records both).
 */
import type { MiddlewareHandler } from "hono";
import type { ApiEnv } from "../api/context.ts";
import type { Env } from "../env.ts";
import { forbidden, unauthorized, ApiError } from "../k8s/errors.ts";
import { clock } from "../clock.ts";
import type { Result } from "../../durable-objects/cluster.ts";
import { adminAuthenticator, authenticate, Unauthenticated, type Authenticator } from "./authn.ts";
import { admitAgentToken, bearerToken } from "./credentials.ts";
import { IssuerKeySet, oidcAuthenticator, parseOidcSettings } from "./oidc.ts";
import { limitAuthFailures } from "./ratelimit.ts";
import { serviceAccountAuthenticator } from "./serviceaccounts.ts";
import { authorizeRequest, isPrivileged, rbacAuthorizer } from "./rbac-store.ts";
import { requestAttributes } from "./requestinfo.ts";
import { impersonate } from "./impersonation.ts";
import type { RbacAuthorizer } from "./rbac.ts";
import type { UserInfo } from "./rbac-types.ts";
import { requestUrl } from "../k8s/request-url.ts";

/** The isolate's OIDC authenticator, with the settings it was made for (its issuer's keys cached with it). */
let oidc: { key: string; authenticator: Authenticator | null } | null = null;

/**
 * The OIDC authenticator of the hub's settings (`FLOTILLA_OIDC_*`, src/auth/oidc.ts), or null when
 * `FLOTILLA_OIDC_ISSUER_URL` is unset. Made once per isolate (the issuer's key set, with its
 * discovery and JWKS, is cached in it). Settings that do not parse are logged once (the message
 * holds no secret) and admit nobody: OIDC tokens then get the 401 of any unknown token.
 */
function oidcFor(env: Env): Authenticator | null {
  const key = JSON.stringify([
    env.FLOTILLA_OIDC_ISSUER_URL,
    env.FLOTILLA_OIDC_AUDIENCE,
    env.FLOTILLA_OIDC_USERNAME_CLAIM,
    env.FLOTILLA_OIDC_USERNAME_PREFIX,
    env.FLOTILLA_OIDC_GROUPS_CLAIM,
    env.FLOTILLA_OIDC_GROUPS_PREFIX,
    env.FLOTILLA_OIDC_SIGNING_ALGS,
  ]);
  if (oidc?.key === key) return oidc.authenticator;
  let authenticator: Authenticator | null = null;
  try {
    const settings = parseOidcSettings(env);
    if (settings) authenticator = oidcAuthenticator(settings, { keySet: new IssuerKeySet(settings.issuerUrl) });
  } catch (e) {
    console.error(`OIDC authentication is off: ${(e as Error).message}`);
  }
  oidc = { key, authenticator };
  return authenticator;
}

/**
 * The hub's chain of token authenticators, in the order they are tried (Kubernetes' union
 * authenticator): the admin token (user `flotilla:admin`, group `system:masters`), the hub's
 * own ServiceAccount tokens (src/auth/serviceaccounts.ts: `system:serviceaccount:NS:NAME`), then
 * OIDC when `FLOTILLA_OIDC_ISSUER_URL` is set. The ServiceAccount authenticator is made when a
 * token reaches it (the admin token, answered first, never does).
 */
export function authenticatorsFor(env: Env): Authenticator[] {
  let serviceAccounts: Authenticator | undefined;
  const chain: Authenticator[] = [
    adminAuthenticator(env.FLOTILLA_ADMIN_TOKEN),
    (token, now) => (serviceAccounts ??= serviceAccountAuthenticator(env))(token, now),
  ];
  const o = oidcFor(env);
  if (o) chain.push(o);
  return chain;
}

/**
 * Authenticates an API request's bearer token (`token`, null when it sent none) with {@link authenticatorsFor}, within the
 * failed-authentication limit. Resolves to the user (with `system:authenticated`).
 * @throws ApiError 401 `Unauthorized` (the same whatever failed), 403 for a valid agent
 *   credential, 429 once failures from the address or of the token are over the limit
 */
export async function authenticateRequest(env: Env, req: Request, token: string | null): Promise<UserInfo> {
  const agent = await limitAuthFailures(env, req, "api", token, clock.now(), async (limit) => {
    try {
      return { user: await authenticate(authenticatorsFor(env), token, clock.now()) };
    } catch (e) {
      if (!(e instanceof Unauthenticated) || !token) throw e;
      // Not a user: perhaps an agent's credential, which may not use this API.
      try {
        const admitted = await admitAgentToken(env, token, limit.costly);
        const res = (await env.CLUSTERS.getByName(admitted.cluster).agent(token, admitted.cluster, admitted.cluster, { action: "info" })) as Result<unknown>;
        if (!res.ok) throw unauthorized(res.status.message);
        return { cluster: admitted.cluster };
      } catch (agentError) {
        // As kube-apiserver: one answer for every credential that fails, whatever it looked like.
        if (agentError instanceof ApiError && agentError.code === 401) throw e;
        throw agentError;
      }
    }
  });
  if ("cluster" in agent) throw forbidden(`cluster ${agent.cluster}'s agent credential may only use /agent/v1`);
  return agent.user;
}

/**
 * The user a request authenticated as `requestor` acts as, given its impersonation headers
 * (src/auth/impersonation.ts `impersonate`, with the hub's authorizer: `system:masters`, then
 * RBAC). `requestor` itself when the request impersonates no one. The bootstrap policy must
 * exist (src/api/builtins.ts `ensureBuiltins`).
 * @throws ApiError 400 (groups, extras or uid without a user), 403 (an `impersonate` check
 *   denied); errors of D1
 */
export function impersonatedUser(env: Env, requestor: UserInfo, headers: Headers): Promise<UserInfo> {
  // One read of the RBAC change counter for all the checks of one request (none for system:masters).
  let rbac: Promise<RbacAuthorizer> | undefined;
  return impersonate(requestor, headers, async (user, attrs) =>
    isPrivileged(user) ? { allowed: true, reason: "" } : (await (rbac ??= rbacAuthorizer(env))).authorize(user, attrs),
  );
}

/**
 * The middleware of every Kubernetes API route: authenticates the request (sets `user` and
 * `authenticatedUser`), derives its attributes (sets `attributes`), runs `prepare` (the hub's
 * built-in objects, the bootstrap policy among them), applies impersonation (sets `user` to the
 * impersonated user, {@link impersonatedUser}), and authorizes it with RBAC as `user`.
 * @throws ApiError 401, 403, 429 (see {@link authenticateRequest} and src/auth/rbac-store.ts);
 *   400 and 403 of impersonation
 */
export function apiAccess(prepare: (env: Env) => Promise<void>): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const authenticated = await authenticateRequest(c.env, c.req.raw, bearerToken(c));
    c.set("authenticatedUser", authenticated);
    c.set("user", authenticated);
    const attributes = requestAttributes(c.req.method, requestUrl(c.req.raw));
    c.set("attributes", attributes);
    await prepare(c.env);
    const user = await impersonatedUser(c.env, authenticated, c.req.raw.headers);
    c.set("user", user);
    await authorizeRequest(c.env, user, attributes);
    await next();
  };
}
