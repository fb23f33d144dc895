/**
 * Who is calling: the admin (its bearer token), an agent (a JWT signed by its cluster's key, see
 * docs/agent-protocol.md), or nobody. Contract: no or bad credential is 401, a valid credential
 * that may not do something is 403.
 */
import type { Context } from "hono";
import { decodeJwt } from "jose";
import { unauthorized } from "../k8s/errors.ts";

/** The bearer token of a request, or null. */
export function bearerToken(c: Context): string | null {
  const h = c.req.header("authorization") ?? "";
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1]! : null;
}

/** Constant-time string comparison (both strings are hashed first so lengths do not leak). */
export async function safeEqual(a: string, b: string): Promise<boolean> {
  const enc = new TextEncoder();
  const [ha, hb] = await Promise.all([crypto.subtle.digest("SHA-256", enc.encode(a)), crypto.subtle.digest("SHA-256", enc.encode(b))]);
  const x = new Uint8Array(ha);
  const y = new Uint8Array(hb);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}

/** True when `token` is the admin token (an unset admin token admits nobody). */
export async function isAdmin(token: string | null, adminToken: string | undefined): Promise<boolean> {
  if (!token || !adminToken) return false;
  return safeEqual(token, adminToken);
}

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
  throw unauthorized("invalid bearer token");
}
