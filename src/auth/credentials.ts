/**
 * Who is calling: the admin (its bearer token), an agent (a JWT signed by its cluster's key, see
 * docs/agent-protocol.md), or nobody. Contract: no or bad credential is 401, a valid credential
 * that may not do something is 403.
 */
import type { Context } from "hono";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { unauthorized } from "../k8s/errors.ts";
import { KEY_TAG_HEADER_PARAM } from "../agent-api/protocol.ts";
import type { Env } from "../env.ts";
import { storageOf } from "../store/storage.ts";
import { checkKeyTag } from "./keys.ts";
import { safeEqual } from "./authn.ts";

export { safeEqual } from "./authn.ts";

/** The bearer token of a request, or null. */
export function bearerToken(c: Context): string | null {
  const h = c.req.header("authorization") ?? "";
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1]! : null;
}

/** True when `token` is the admin token (an unset admin token admits nobody). */
export async function isAdmin(token: string | null, adminToken: string | undefined): Promise<boolean> {
  if (!token || !adminToken) return false;
  return safeEqual(token, adminToken);
}

/** The one answer to every agent credential that does not verify, whatever the reason, so that a stranger learns nothing (not even whether a cluster name is registered). */
export const INVALID_AGENT_CREDENTIAL = "invalid agent credential";

/**
 * The cluster an agent JWT claims to be from (its unverified `sub`); the cluster's Durable Object
 * verifies it.
 *
 * @throws ApiError 401 when the token is not a JWT with a `sub`.
 */
export function agentSubject(token: string): string {
  try {
    const sub = decodeJwt(token).sub;
    if (typeof sub === "string" && sub.length > 0 && sub.length <= 63) return sub;
  } catch {
    // fall through
  }
  throw unauthorized(INVALID_AGENT_CREDENTIAL);
}

/** What the Worker learned of an agent JWT before its cluster's Durable Object verifies it. */
export interface AdmittedAgentToken {
  /** The cluster it claims to be from (`sub`). */
  cluster: string;
  /** The key ID of its header (`kid`). */
  kid: string;
  /** Whether it carried the hub's key tag for (cluster, kid); if not, the answer hands the agent one. */
  tagged: boolean;
}

/**
 * Admits an agent JWT as far as the Worker can without touching the cluster's Durable Object, so
 * that no request from a stranger creates or writes one: the token's key tag (header `ktag`, an
 * HMAC the hub issued for its cluster and key ID) is checked, and a token without a valid tag is
 * admitted only when the cluster is registered (one D1 read of `cluster_identities`; agents that
 * use their tag, as they do once they have one, cost no D1 query). The Durable Object then
 * verifies the signature. `beforeLookup` runs before the D1 read, and only then (the failed
 * authentication limiter's `costly()`, src/auth/ratelimit.ts): a token with a valid tag is
 * checked without I/O and never waits on it.
 *
 * @throws ApiError 401 (the same message whatever the reason) when the token is not an agent JWT
 *   or names no registered cluster; whatever `beforeLookup` throws (429).
 */
export async function admitAgentToken(env: Env, token: string, beforeLookup?: () => Promise<void>): Promise<AdmittedAgentToken> {
  const cluster = agentSubject(token);
  let header;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    throw unauthorized(INVALID_AGENT_CREDENTIAL);
  }
  const kid = header.kid;
  if (typeof kid !== "string" || kid.length === 0 || kid.length > 128) throw unauthorized(INVALID_AGENT_CREDENTIAL);
  const tag = header[KEY_TAG_HEADER_PARAM];
  if (typeof tag === "string" && (await checkKeyTag(env, cluster, kid, tag))) return { cluster, kid, tagged: true };
  await beforeLookup?.();
  if (!(await storageOf(env).identities.has(cluster))) throw unauthorized(INVALID_AGENT_CREDENTIAL);
  return { cluster, kid, tagged: false };
}
