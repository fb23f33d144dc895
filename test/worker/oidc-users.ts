/**
 * Users for Worker tests: ID tokens of the OIDC issuer `https://issuer.test` that vitest.config.ts
 * makes the hub trust (audience `flotilla`, user names prefixed `oidc:`). {@link serveIssuer} stands
 * in for `fetch` to serve the issuer's discovery document and keys (call it in `beforeAll`, and
 * the function it returns in `afterAll`).
 */
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { call } from "./helpers.ts";

export const ISSUER = "https://issuer.test";

let privateKey: CryptoKey | undefined;

/** Makes the issuer's key and serves its discovery and JWKS through `fetch`; returns the undo. */
export async function serveIssuer(): Promise<() => void> {
  const pair = await generateKeyPair("RS256", { extractable: true });
  privateKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  const realFetch = globalThis.fetch;
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (url === `${ISSUER}/.well-known/openid-configuration`) return Response.json({ issuer: ISSUER, jwks_uri: `${ISSUER}/keys` });
    if (url === `${ISSUER}/keys`) return Response.json({ keys: [jwk] });
    return realFetch(input, init);
  }) as typeof fetch;
  return () => {
    globalThis.fetch = realFetch;
  };
}

/** An ID token of the test issuer for `sub` (user `oidc:<sub>`) in `groups`, valid 10 minutes. */
export async function idToken(sub: string, groups: string[] = []): Promise<string> {
  if (!privateKey) throw new Error("serveIssuer() first");
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ groups })
    .setProtectedHeader({ alg: "RS256", kid: "k1" })
    .setIssuer(ISSUER)
    .setSubject(sub)
    .setAudience("flotilla")
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(privateKey);
}

/** Calls the hub as OIDC user `oidc:<sub>`. */
export async function callAs(sub: string, method: string, path: string, body?: unknown, contentType?: string) {
  return call(method, path, body, { token: await idToken(sub), contentType });
}
