/**
 * Authentication of a request's bearer token as kube-apiserver does it, as a pure module (no I/O
 * of its own, no platform bindings): each authenticator answers "this user", "not mine" or fails,
 * and a chain tries them in order (Kubernetes' union token authenticator) and answers every
 * failure with one 401 `Unauthorized` Status, whatever failed, so a caller learns nothing of which
 * users, ServiceAccounts or issuers exist.
 *
 * Semantics sources (facts carried over, not code): `k8s.io/apiserver/pkg/authentication/request/union`
 * (first authenticator that answers wins; errors are aggregated and the request is 401),
 * `.../group/authenticated_group_adder.go` (every authenticated user gets `system:authenticated`),
 * kube-apiserver's `system:masters` privileged group.
 *
 * The authenticators: {@link adminAuthenticator} (the break-glass admin token, here), the OIDC one
 * (src/auth/oidc.ts) and the ServiceAccount token one (src/auth/serviceaccount-token.ts). Not wired
 * into request handling yet: that step wires authentication and authorization (src/auth/rbac.ts)
 * together.
 */
import { decodeJwt, decodeProtectedHeader, type ProtectedHeaderParameters } from "jose";
import { ApiError } from "../k8s/errors.ts";
import { ALL_AUTHENTICATED, SYSTEM_MASTERS, type UserInfo } from "./rbac-types.ts";

export type { UserInfo } from "./rbac-types.ts";

/** The user name of the admin token's holder. */
export const ADMIN_USERNAME = "flotilla:admin";

/**
 * A token authenticator (Kubernetes `authenticator.Token`): given a bearer token and the time
 * (`now`, epoch milliseconds, from src/clock.ts), answers the user it proves, `null` when the token
 * is not of its kind (another authenticator may take it: a JWT from another issuer, say), and
 * throws (any error; {@link AuthenticationFailure} carries a reason) when the token is of its kind
 * but does not verify. It never puts the token in an error message.
 */
export type Authenticator = (token: string, now: number) => Promise<UserInfo | null>;

/**
 * A token of an authenticator's kind that does not verify. `message` is for the hub's own log and
 * the audit log only (the response is always a bare 401 `Unauthorized`); it never holds the token.
 */
/**
 * Reads a JWT's issuer (`iss` claim) and protected header without verifying anything, so that an
 * authenticator can tell whether the token is one of its issuer's before it checks it.
 * @returns the claim and header, or null for a token that is not a decodable JWT (never throws)
 */
export function peekIssuer(token: string): { iss: unknown; header: ProtectedHeaderParameters } | null {
  try {
    return { iss: decodeJwt(token).iss, header: decodeProtectedHeader(token) };
  } catch {
    return null;
  }
}

export class AuthenticationFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AuthenticationFailure";
  }
}

/**
 * The 401 every failed authentication gets (kube-apiserver's `responsewriters.Unauthorized`:
 * reason `Unauthorized`, message `Unauthorized`), the answer `/apis` gives today. `reasons` lists
 * why each authenticator refused, for the log and the audit log, never for the response body.
 */
export class Unauthenticated extends ApiError {
  constructor(readonly reasons: readonly string[]) {
    super(401, "Unauthorized", "Unauthorized");
  }
}

/** The SHA-256 digest of `s` (UTF-8). */
function digest(s: string): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
}

/** The isolate's last secret {@link safeEqual} compared against, and its digest (computed once, not per request). */
let secretDigestOf: { secret: string; digest: Promise<ArrayBuffer> } | null = null;

/** {@link digest} of `secret`, the known side of a comparison (the admin token): kept while it stays the same. */
function secretDigest(secret: string): Promise<ArrayBuffer> {
  if (secretDigestOf?.secret !== secret) secretDigestOf = { secret, digest: digest(secret) };
  return secretDigestOf.digest;
}

/**
 * Constant-time string comparison: both strings are hashed (SHA-256) first, so neither the
 * contents nor the lengths leak through timing. Resolves true when `a === b`. `b` is the known
 * side (a secret such as the admin token): its digest is kept while the same `b` comes again, so
 * the admin token costs one digest per request, not two.
 */
export async function safeEqual(a: string, b: string): Promise<boolean> {
  const [ha, hb] = await Promise.all([digest(a), secretDigest(b)]);
  const x = new Uint8Array(ha);
  const y = new Uint8Array(hb);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}

/**
 * The admin token authenticator (break-glass): the token equal to `adminToken` (compared in
 * constant time, {@link safeEqual}) is user {@link ADMIN_USERNAME} in group `system:masters`
 * (which kube-apiserver's privileged-groups authorizer lets do anything). Any other token is
 * "not mine" (`null`); an unset or empty admin token admits nobody.
 */
export function adminAuthenticator(adminToken: string | undefined): Authenticator {
  return async (token) => {
    if (!adminToken || !(await safeEqual(token, adminToken))) return null;
    return { name: ADMIN_USERNAME, groups: [SYSTEM_MASTERS] };
  };
}

/**
 * Adds `system:authenticated` to a user's groups unless it is there already (Kubernetes'
 * AuthenticatedGroupAdder, applied to every user a token authenticator proves).
 */
export function withAuthenticatedGroup(user: UserInfo): UserInfo {
  const groups = user.groups ?? [];
  return groups.includes(ALL_AUTHENTICATED) ? user : { ...user, groups: [...groups, ALL_AUTHENTICATED] };
}

/**
 * Tries `authenticators` in order on `token` (Kubernetes' union authenticator with
 * FailOnError=false): the first to answer a user wins, and the user gets `system:authenticated`;
 * an authenticator that throws counts as a refusal and the next one is tried. Resolves to the user.
 *
 * @throws {Unauthenticated} (401 `Unauthorized`, the same Status whatever failed) when the token is
 *   absent or empty, or no authenticator answers a user; its `reasons` say why each refused.
 */
export async function authenticate(authenticators: readonly Authenticator[], token: string | null | undefined, now: number): Promise<UserInfo> {
  if (!token) throw new Unauthenticated(["no bearer token"]);
  const reasons: string[] = [];
  for (const authenticator of authenticators) {
    try {
      const user = await authenticator(token, now);
      if (user) return withAuthenticatedGroup(user);
    } catch (e) {
      reasons.push(e instanceof Error ? e.message : String(e));
    }
  }
  if (reasons.length === 0) reasons.push("no authenticator recognised the token");
  throw new Unauthenticated(reasons);
}
