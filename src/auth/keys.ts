/**
 * An agent's key as the hub sees it: importing and checking a registered public key, verifying a
 * proof of possession (a JWT signed by the key being registered or rotated to, as OCM's CSR is
 * signed by its key), and the hub's key tags (an HMAC over cluster name and key ID that lets the
 * Worker refuse strangers before any Durable Object is touched). docs/agent-protocol.md
 * "Identity".
 */
import { calculateJwkThumbprint, decodeProtectedHeader, importJWK, jwtVerify, type JWK } from "jose";
import { badRequest, invalid } from "../k8s/errors.ts";
import { CLOCK_SKEW_SECONDS, MAX_TOKEN_LIFETIME_SECONDS, REGISTRATION_AUDIENCE } from "../agent-api/protocol.ts";
import type { Env } from "../env.ts";

const registrationRef = { group: "flotilla.dev", plural: "registrations", kind: "Registration" };

/**
 * Imports a public P-256 JWK for ES256 verification. WebCrypto refuses a point that is not on the
 * curve, so a key that imports is a usable one.
 *
 * @throws ApiError 422 naming `publicKey` when the key does not import.
 */
export async function importPublicKey(jwk: JWK, field = "publicKey"): Promise<CryptoKey> {
  try {
    const key = await importJWK({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, "ES256");
    if (key instanceof Uint8Array) throw new Error("not an asymmetric key");
    return key;
  } catch {
    throw invalid(registrationRef, [{ field, message: "not a valid EC P-256 public key (the point is not on the curve)" }]);
  }
}

/** What a proof of possession must say. */
export interface ProofClaims {
  /** The cluster name the key is registered for (`iss` and `sub`). */
  clusterName: string;
  /** The cluster ID (`cid`); absent for a rotation, which does not name it. */
  clusterId?: string;
  /** Current time, epoch milliseconds. */
  now: number;
}

/**
 * Verifies a proof of possession of `publicKey`'s private key: a compact JWS with header
 * `{alg: "ES256", kid: <thumbprint of publicKey>}` and claims `{iss, sub: clusterName,
 * aud: "flotilla-registration", cid: clusterId, iat, exp, jti}`, at most 60 s long, not dated
 * beyond the 30 s clock skew. Returns the key's thumbprint (the key ID).
 *
 * @throws ApiError 422 (the key does not import), 400 (the proof does not verify).
 */
export async function verifyProof(proof: string, publicKey: JWK, claims: ProofClaims): Promise<string> {
  const key = await importPublicKey(publicKey);
  const kid = await calculateJwkThumbprint({ kty: publicKey.kty, crv: publicKey.crv, x: publicKey.x, y: publicKey.y });
  const refuse = (why: string) => badRequest(`proof: the proof of possession is not valid: ${why}`, "proof");
  let header;
  try {
    header = decodeProtectedHeader(proof);
  } catch {
    throw refuse("not a compact JWS");
  }
  if (header.kid !== kid) throw refuse("its kid is not the thumbprint of publicKey");
  let payload;
  try {
    ({ payload } = await jwtVerify(proof, key, {
      algorithms: ["ES256"],
      audience: REGISTRATION_AUDIENCE,
      issuer: claims.clusterName,
      subject: claims.clusterName,
      clockTolerance: CLOCK_SKEW_SECONDS,
      requiredClaims: ["exp", "iat", "jti"],
      currentDate: new Date(claims.now),
    }));
  } catch (e) {
    throw refuse((e as Error).message);
  }
  checkTimes(payload.iat!, payload.exp!, claims.now, refuse);
  if (claims.clusterId !== undefined && payload.cid !== claims.clusterId) throw refuse("its cid is not the clusterId");
  return kid;
}

/**
 * Checks a JWT's `iat`/`exp` (seconds) against `now` (epoch milliseconds): at most
 * MAX_TOKEN_LIFETIME_SECONDS long and not issued more than CLOCK_SKEW_SECONDS in the future (a
 * token dated ahead would otherwise outlive its 60 s).
 *
 * @throws what `refuse` builds.
 */
export function checkTimes(iat: number, exp: number, now: number, refuse: (why: string) => Error): void {
  if (exp - iat > MAX_TOKEN_LIFETIME_SECONDS) throw refuse(`it lives longer than ${MAX_TOKEN_LIFETIME_SECONDS} seconds`);
  if (iat * 1000 > now + CLOCK_SKEW_SECONDS * 1000) throw refuse("it is issued in the future");
}

const encoder = new TextEncoder();
const tagKeys = new Map<string, Promise<CryptoKey>>();

/**
 * The secret key tags are made with: `AGENT_KEY_TAG_SECRET` when set, else derived from the admin
 * token (HMAC-SHA256 with a fixed label), else none (every agent request then takes the D1 check).
 */
function tagKey(env: Env): Promise<CryptoKey> | null {
  const secret = env.AGENT_KEY_TAG_SECRET ?? env.FLOTILLA_ADMIN_TOKEN;
  if (!secret) return null;
  const id = `${env.AGENT_KEY_TAG_SECRET ? "s" : "a"}:${secret}`;
  let key = tagKeys.get(id);
  if (!key) {
    key = (async () => {
      let raw: ArrayBuffer | Uint8Array = encoder.encode(secret);
      if (!env.AGENT_KEY_TAG_SECRET) {
        const base = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
        raw = await crypto.subtle.sign("HMAC", base, encoder.encode("flotilla.dev/agent-key-tag"));
      }
      return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    })();
    tagKeys.clear();
    tagKeys.set(id, key);
  }
  return key;
}

function base64url(bytes: ArrayBuffer): string {
  let s = "";
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function tagMessage(clusterName: string, kid: string): Uint8Array {
  return encoder.encode(`flotilla.dev/agent-key-tag/v1\0${clusterName}\0${kid}`);
}

/**
 * The key tag of (cluster, key ID): base64url HMAC-SHA256 under the hub's tag secret, or null when
 * the hub has no secret to make tags with.
 */
export async function keyTag(env: Env, clusterName: string, kid: string): Promise<string | null> {
  const key = tagKey(env);
  if (!key) return null;
  return base64url(await crypto.subtle.sign("HMAC", await key, tagMessage(clusterName, kid)));
}

/** Whether `tag` is the key tag of (cluster, key ID); the HMAC is checked in constant time (WebCrypto verify). */
export async function checkKeyTag(env: Env, clusterName: string, kid: string, tag: string): Promise<boolean> {
  const key = tagKey(env);
  if (!key || !/^[A-Za-z0-9_-]{43}$/.test(tag)) return false;
  const bin = atob(tag.replace(/-/g, "+").replace(/_/g, "/") + "=");
  const bytes = Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
  return crypto.subtle.verify("HMAC", await key, bytes, tagMessage(clusterName, kid));
}
