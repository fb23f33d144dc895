/**
 * ServiceAccount tokens (src/auth/serviceaccount-token.ts): TokenRequest defaults and validation,
 * the claims of Kubernetes' bound tokens, verification with the injected clock (60 s leeway),
 * revocation by the ServiceAccount's UID, key rotation, and the published discovery document and
 * JWKS (which another party can verify a token with).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, generateKeyPair, jwtVerify, SignJWT } from "jose";
import { ApiError } from "../../src/k8s/errors.ts";
import {
  CREDENTIAL_ID_EXTRA,
  generateHubKey,
  issuerDiscoveryDocument,
  issuerJwks,
  issueServiceAccountToken,
  parseHubKeys,
  serveTokenRequest,
  serviceAccountTokenAuthenticator,
  staticKeySource,
  type HubKeys,
  type ServiceAccountIssuer,
  type ServiceAccountLookup,
} from "../../src/auth/serviceaccount-token.ts";

const HUB = "https://hub.example.test";
const T0 = Date.parse("2026-11-26T10:00:00Z");
const SA = { namespace: "ci", name: "deployer", uid: "0d4691ed-659b-4935-a832-355f77ee47cc" };

let keys: HubKeys;
let issuer: ServiceAccountIssuer;

/** A store of ServiceAccounts: namespace/name → uid. */
function store(entries: Record<string, string> = { "ci/deployer": SA.uid }): { lookup: ServiceAccountLookup; sas: Map<string, string> } {
  const sas = new Map(Object.entries(entries));
  return { sas, lookup: (ns, name) => Promise.resolve(sas.get(`${ns}/${name}`)) };
}

beforeAll(async () => {
  keys = await parseHubKeys(JSON.stringify({ keys: [await generateHubKey()] }));
  issuer = { issuer: HUB, keys: staticKeySource(keys) };
});

describe("hub keys (FLOTILLA_SERVICE_ACCOUNT_KEYS)", () => {
  it("signs with the first key and verifies with all, key IDs being thumbprints", async () => {
    const a = await generateHubKey();
    const b = await generateHubKey();
    const parsed = await parseHubKeys(JSON.stringify({ keys: [a, { kty: b.kty, crv: b.crv, x: b.x, y: b.y, kid: "ignored" }] }));
    expect(parsed.publicJwks).toHaveLength(2);
    expect(parsed.signing.kid).toBe(parsed.publicJwks[0]!.kid);
    expect(parsed.publicJwks[1]!.kid).not.toBe("ignored");
    expect(parsed.publicJwks.every((k) => k.d === undefined && k.use === "sig" && k.alg === "ES256")).toBe(true);
  });

  it("refuses what is not a usable set, never echoing key material", async () => {
    const a = await generateHubKey();
    const secretish = `{"keys":[{"d":"${a.d}"`;
    const err = (await parseHubKeys(secretish).catch((e: unknown) => e)) as Error;
    expect(err.message).toBe("FLOTILLA_SERVICE_ACCOUNT_KEYS: not JSON (expected a JWK Set)");
    expect(err.message).not.toContain(a.d);
    await expect(parseHubKeys(JSON.stringify({ keys: [] }))).rejects.toThrow(/at least one key/);
    await expect(parseHubKeys(JSON.stringify({ keys: [{ kty: a.kty, crv: a.crv, x: a.x, y: a.y }] }))).rejects.toThrow(
      /keys\[0\] must be a private EC P-256 JWK/,
    );
    await expect(parseHubKeys(JSON.stringify({ keys: [a, { kty: "RSA", n: "x", e: "AQAB" }] }))).rejects.toThrow(/keys\[1\] is not an EC P-256 JWK/);
  });
});

describe("TokenRequest", () => {
  it("defaults expirationSeconds to 3600 and the audiences to the API audiences (the issuer)", async () => {
    const tr = await serveTokenRequest(issuer, SA, { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: {} }, T0);
    expect(tr).toMatchObject({
      kind: "TokenRequest",
      apiVersion: "authentication.k8s.io/v1",
      metadata: { name: "deployer", namespace: "ci", creationTimestamp: "2026-11-26T10:00:00Z" },
      spec: { audiences: [HUB], expirationSeconds: 3600, boundObjectRef: null },
      status: { expirationTimestamp: "2026-11-26T11:00:00Z" },
    });
    const token = (tr.status as { token: string }).token;
    expect(decodeProtectedHeader(token)).toEqual({ alg: "ES256", kid: keys.signing.kid, typ: "JWT" });
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({
      iss: HUB,
      sub: "system:serviceaccount:ci:deployer",
      aud: [HUB],
      iat: T0 / 1000,
      nbf: T0 / 1000,
      exp: T0 / 1000 + 3600,
      "kubernetes.io": { namespace: "ci", serviceaccount: { name: "deployer", uid: SA.uid } },
    });
    expect(claims.jti).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("takes a duration of at least 10 minutes and audiences as asked (kubectl create token --duration --audience)", async () => {
    const tr = await serveTokenRequest(issuer, SA, { spec: { expirationSeconds: 600, audiences: ["vault"] } }, T0);
    expect(tr.spec).toMatchObject({ audiences: ["vault"], expirationSeconds: 600 });
    expect(decodeJwt((tr.status as { token: string }).token)).toMatchObject({ aud: ["vault"], exp: T0 / 1000 + 600 });
  });

  it("refuses under 10 minutes or over 2^32 seconds with 422 naming spec.expirationSeconds", async () => {
    const short = (await serveTokenRequest(issuer, SA, { spec: { expirationSeconds: 599 } }, T0).catch((e: unknown) => e)) as ApiError;
    expect(short.code).toBe(422);
    expect(short.toStatus()).toMatchObject({
      reason: "Invalid",
      message: 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes',
      details: { causes: [{ field: "spec.expirationSeconds", reason: "FieldValueInvalid" }] },
    });
    await expect(serveTokenRequest(issuer, SA, { spec: { expirationSeconds: 2 ** 32 + 1 } }, T0)).rejects.toThrow(/larger than 2\^32 seconds/);
    await expect(serveTokenRequest(issuer, SA, { spec: { boundObjectRef: { kind: "Secret", name: "s" } } }, T0)).rejects.toThrow(/spec.boundObjectRef/);
    await expect(serveTokenRequest(issuer, SA, { spec: { expirationSeconds: "1h" } }, T0)).rejects.toMatchObject({ code: 422 });
  });

  it("cuts a request to the issuer's maximum expiration", async () => {
    const issued = await issueServiceAccountToken({ ...issuer, maxExpirationSeconds: 7200 }, SA, { expirationSeconds: 86_400 }, T0);
    expect(issued.expirationSeconds).toBe(7200);
    expect(issued.expiresAt).toBe(T0 + 7_200_000);
  });
});

describe("ServiceAccount token authentication", () => {
  it("verifies a token: user system:serviceaccount:NS:NAME with its uid, groups, and credential id", async () => {
    const { lookup } = store();
    const authn = serviceAccountTokenAuthenticator(issuer, lookup);
    const { token } = await issueServiceAccountToken(issuer, SA, {}, T0);
    const jti = decodeJwt(token).jti;
    expect(await authn(token, T0 + 1000)).toEqual({
      name: "system:serviceaccount:ci:deployer",
      uid: SA.uid,
      groups: ["system:serviceaccounts", "system:serviceaccounts:ci"],
      extra: { [CREDENTIAL_ID_EXTRA]: [`JTI=${jti}`] },
    });
  });

  it("expires: valid up to 60 s past exp, refused after; not valid more than 60 s before nbf/iat", async () => {
    const authn = serviceAccountTokenAuthenticator(issuer, store().lookup);
    const { token } = await issueServiceAccountToken(issuer, SA, { expirationSeconds: 600 }, T0);
    expect(await authn(token, T0 + 659_000)).not.toBeNull();
    await expect(authn(token, T0 + 661_000)).rejects.toThrow(/exp/);
    expect(await authn(token, T0 - 59_000)).not.toBeNull();
    await expect(authn(token, T0 - 61_000)).rejects.toThrow(/nbf|future/);
  });

  it("dies with its ServiceAccount: deleted, or recreated under the same name with another uid", async () => {
    const { lookup, sas } = store();
    const authn = serviceAccountTokenAuthenticator(issuer, lookup);
    const { token } = await issueServiceAccountToken(issuer, SA, {}, T0);
    expect(await authn(token, T0)).not.toBeNull();
    sas.delete("ci/deployer");
    await expect(authn(token, T0)).rejects.toThrow(/serviceaccounts "deployer" not found in namespace "ci"/);
    sas.set("ci/deployer", "11111111-2222-3333-4444-555555555555");
    await expect(authn(token, T0)).rejects.toThrow(/UID \(11111111-2222-3333-4444-555555555555\) does not match claim/);
  });

  it("is accepted only for the API audiences", async () => {
    const authn = serviceAccountTokenAuthenticator(issuer, store().lookup);
    const { token } = await issueServiceAccountToken(issuer, SA, { audiences: ["vault"] }, T0);
    await expect(authn(token, T0)).rejects.toThrow(/aud/);
    const both = await issueServiceAccountToken(issuer, SA, { audiences: ["vault", HUB] }, T0);
    expect(await authn(both.token, T0)).not.toBeNull();
    const custom = { ...issuer, apiAudiences: ["flotilla"] };
    const t = await issueServiceAccountToken(custom, SA, {}, T0);
    expect(decodeJwt(t.token).aud).toEqual(["flotilla"]);
    expect(await serviceAccountTokenAuthenticator(custom, store().lookup)(t.token, T0)).not.toBeNull();
  });

  it("leaves other issuers' tokens and non-JWTs alone, and refuses a forged or unknown-key token", async () => {
    const authn = serviceAccountTokenAuthenticator(issuer, store().lookup);
    const other = await issueServiceAccountToken({ ...issuer, issuer: "https://other.example.test" }, SA, {}, T0);
    expect(await authn(other.token, T0)).toBeNull();
    expect(await authn("opaque-token", T0)).toBeNull();
    // Signed by another key under the hub's kid: the signature fails.
    const { privateKey } = await generateKeyPair("ES256");
    const claims = decodeJwt((await issueServiceAccountToken(issuer, SA, {}, T0)).token);
    const forged = await new SignJWT(claims).setProtectedHeader({ alg: "ES256", kid: keys.signing.kid }).sign(privateKey);
    await expect(authn(forged, T0)).rejects.toThrow(/signature/);
    const unknown = await new SignJWT(claims).setProtectedHeader({ alg: "ES256", kid: "nope" }).sign(privateKey);
    await expect(authn(unknown, T0)).rejects.toThrow(/unknown key/);
    const hs = await new SignJWT(claims).setProtectedHeader({ alg: "HS256", kid: keys.signing.kid }).sign(new Uint8Array(32));
    await expect(authn(hs, T0)).rejects.toThrow(/unsupported algorithm/);
  });

  it("refuses a token whose sub is not its kubernetes.io ServiceAccount", async () => {
    const authn = serviceAccountTokenAuthenticator(issuer, store({ "ci/deployer": SA.uid, "ci/admin": "u2" }).lookup);
    const claims = decodeJwt((await issueServiceAccountToken(issuer, SA, {}, T0)).token);
    const token = await new SignJWT({ ...claims, sub: "system:serviceaccount:ci:admin" })
      .setProtectedHeader({ alg: "ES256", kid: keys.signing.kid })
      .sign(keys.signing.privateKey);
    await expect(authn(token, T0)).rejects.toThrow(/sub does not match/);
    const bare = await new SignJWT({ ...claims, "kubernetes.io": undefined })
      .setProtectedHeader({ alg: "ES256", kid: keys.signing.kid })
      .sign(keys.signing.privateKey);
    await expect(authn(bare, T0)).rejects.toThrow(/no kubernetes.io claim/);
  });

  it("survives a key rotation: tokens of the old key verify while it is listed after the new one", async () => {
    const oldKey = await generateHubKey();
    const newKey = await generateHubKey();
    const before = { issuer: HUB, keys: staticKeySource(await parseHubKeys(JSON.stringify({ keys: [oldKey] }))) };
    const after = {
      issuer: HUB,
      keys: staticKeySource(await parseHubKeys(JSON.stringify({ keys: [newKey, { kty: "EC", crv: "P-256", x: oldKey.x, y: oldKey.y }] }))),
    };
    const dropped = { issuer: HUB, keys: staticKeySource(await parseHubKeys(JSON.stringify({ keys: [newKey] }))) };
    const { token } = await issueServiceAccountToken(before, SA, {}, T0);
    expect(await serviceAccountTokenAuthenticator(after, store().lookup)(token, T0)).not.toBeNull();
    await expect(serviceAccountTokenAuthenticator(dropped, store().lookup)(token, T0)).rejects.toThrow(/unknown key/);
  });
});

describe("service account issuer discovery", () => {
  it("publishes the discovery document and a JWKS without private parts, which verifies the hub's tokens", async () => {
    expect(issuerDiscoveryDocument(issuer)).toEqual({
      issuer: HUB,
      jwks_uri: `${HUB}/openid/v1/jwks`,
      response_types_supported: ["id_token"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: ["ES256"],
    });
    const jwks = await issuerJwks(issuer);
    expect(jwks.keys).toEqual([{ kty: "EC", crv: "P-256", x: expect.any(String), y: expect.any(String), kid: keys.signing.kid, alg: "ES256", use: "sig" }]);
    expect(JSON.stringify(jwks)).not.toContain('"d"');
    // Another system trusts the hub's tokens from what it publishes.
    const { token } = await issueServiceAccountToken(issuer, SA, { audiences: ["vault"] }, T0);
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), { issuer: HUB, audience: "vault", currentDate: new Date(T0) });
    expect(payload.sub).toBe("system:serviceaccount:ci:deployer");
  });
});
