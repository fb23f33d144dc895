/**
 * ServiceAccount tokens as Kubernetes' TokenRequest (`authentication.k8s.io/v1`) issues and
 * kube-apiserver verifies them, as a pure module: JWTs signed ES256 with the hub's key, bound to
 * the ServiceAccount's UID, and the issuer discovery document and JWKS the hub publishes so other
 * systems can trust them.
 *
 * Semantics sources (facts carried over, not code): the Kubernetes documentation (TokenRequest v1,
 * "Managing Service Accounts", "Service account issuer discovery", `kubectl create token`);
 * `pkg/apis/authentication/v1` defaults (`expirationSeconds` 3600, audiences default to the API
 * server's) and `pkg/apis/authentication/validation` (at least 10 minutes, at most 2^32 seconds);
 * `pkg/serviceaccount/claims.go` and `jwt.go` (the claims: `iss`, `sub`, `aud`, `exp`, `iat`,
 * `nbf`, `jti`, `kubernetes.io: {namespace, serviceaccount: {name, uid}}`; verification: the
 * issuer, an audience shared with the API audiences, 60 s of leeway on `exp`, `nbf` and `iat`,
 * the ServiceAccount looked up by namespace and name with a matching UID, else the token is dead;
 * the user `system:serviceaccount:NS:NAME` with the SA's UID, groups `system:serviceaccounts` and
 * `system:serviceaccounts:NS`, extra `authentication.kubernetes.io/credential-id: JTI=<jti>`);
 * `pkg/serviceaccount/openidmetadata.go` (the discovery document and the JWKS, keys with
 * `use: sig`).
 *
 * The hub's signing key is a secret, handled as the Secret encryption keys are
 * (docs/encryption.md): a Worker secret (`FLOTILLA_SERVICE_ACCOUNT_KEYS`, a JWK Set whose first
 * key signs and every key verifies, so a key is rotated by adding one first), or, without it, a
 * key the hub generates once and keeps sealed in D1 (src/auth/serviceaccounts.ts); never logged,
 * never in an error message. The public half is published.
 */
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT, type CryptoKey, type JWK, type JWTPayload } from "jose";
import { z } from "zod";
import { invalid } from "../k8s/errors.ts";
import { rfc3339 } from "../k8s/meta.ts";
import { AuthenticationFailure, peekIssuer, type Authenticator, type UserInfo } from "./authn.ts";
import { serviceAccountGroups, serviceAccountUsername } from "./rbac-types.ts";

/** The only algorithm the hub signs ServiceAccount tokens with. */
export const SERVICE_ACCOUNT_TOKEN_ALG = "ES256";
/** A TokenRequest's default `expirationSeconds` (Kubernetes: one hour). */
export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;
/** The least `expirationSeconds` a TokenRequest may ask (Kubernetes: 10 minutes). */
export const MIN_TOKEN_EXPIRATION_SECONDS = 600;
/** The most `expirationSeconds` a TokenRequest may ask (Kubernetes: 2^32 seconds). */
export const MAX_TOKEN_EXPIRATION_SECONDS = 2 ** 32;
/** The leeway on `exp`, `nbf` and `iat` when verifying, seconds (go-jose's default, as kube-apiserver). */
export const SERVICE_ACCOUNT_TOKEN_LEEWAY_SECONDS = 60;
/** The path the hub's JWKS is served at (kube-apiserver's). */
export const JWKS_PATH = "/openid/v1/jwks";
/** The path the hub's issuer discovery document is served at. */
export const DISCOVERY_PATH = "/.well-known/openid-configuration";
/** The user extra key that names the token a request authenticated with (`JTI=<jti>`). */
export const CREDENTIAL_ID_EXTRA = "authentication.kubernetes.io/credential-id";

// ---------------------------------------------------------------------------
// The hub's keys
// ---------------------------------------------------------------------------

/** The hub's ServiceAccount token keys, ready to use. */
export interface HubKeys {
  /** The key new tokens are signed with: its key ID (the public key's JWK thumbprint) and private key. */
  signing: { kid: string; privateKey: CryptoKey };
  /** Every public key a token may verify with (the signing key's first), with `kid`, `alg` and `use`. */
  publicJwks: readonly JWK[];
}

/**
 * Where the hub's keys come from (a Worker secret, a test's fixture); the step that wires
 * ServiceAccounts binds it to storage. Called per token issued or verified, so it should cache.
 */
export interface HubKeySource {
  keys(): Promise<HubKeys>;
}

const EcPrivateJwk = z.looseObject({ kty: z.literal("EC"), crv: z.literal("P-256"), x: z.string(), y: z.string(), d: z.string() });
const EcPublicJwk = z.looseObject({ kty: z.literal("EC"), crv: z.literal("P-256"), x: z.string(), y: z.string() });

/**
 * Generates a new signing key: a private EC P-256 JWK (to be kept as a secret, e.g. one entry of
 * `FLOTILLA_SERVICE_ACCOUNT_KEYS`).
 */
export async function generateHubKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair(SERVICE_ACCOUNT_TOKEN_ALG, { extractable: true });
  const jwk = await exportJWK(privateKey);
  return { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, d: jwk.d };
}

/**
 * Reads the hub's keys from a JWK Set (`{"keys": [...]}`): the first key, a private EC P-256 JWK,
 * signs; every key (private or public, P-256) verifies. Key IDs are the keys' JWK thumbprints
 * (RFC 7638), whatever `kid` the set gives.
 *
 * @throws Error saying what is wrong (not JSON, no key, a key that is not P-256, a first key
 *   without its private part); the message never holds key material.
 */
export async function parseHubKeys(jwkSet: string): Promise<HubKeys> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(jwkSet);
  } catch {
    throw new Error("FLOTILLA_SERVICE_ACCOUNT_KEYS: not JSON (expected a JWK Set)");
  }
  const set = z.looseObject({ keys: z.array(z.unknown()).min(1) }).safeParse(parsed);
  if (!set.success) throw new Error("FLOTILLA_SERVICE_ACCOUNT_KEYS: expected a JWK Set with at least one key");
  const first = EcPrivateJwk.safeParse(set.data.keys[0]);
  if (!first.success) throw new Error("FLOTILLA_SERVICE_ACCOUNT_KEYS: keys[0] must be a private EC P-256 JWK (it signs)");
  const publicJwks: JWK[] = [];
  for (const [i, k] of set.data.keys.entries()) {
    const pub = EcPublicJwk.safeParse(k);
    if (!pub.success) throw new Error(`FLOTILLA_SERVICE_ACCOUNT_KEYS: keys[${i}] is not an EC P-256 JWK`);
    publicJwks.push(await publicJwk({ kty: "EC", crv: "P-256", x: pub.data.x, y: pub.data.y }));
  }
  let privateKey;
  try {
    privateKey = await importJWK({ kty: "EC", crv: "P-256", x: first.data.x, y: first.data.y, d: first.data.d }, SERVICE_ACCOUNT_TOKEN_ALG);
  } catch {
    throw new Error("FLOTILLA_SERVICE_ACCOUNT_KEYS: keys[0] does not import as an ES256 private key");
  }
  if (privateKey instanceof Uint8Array) throw new Error("FLOTILLA_SERVICE_ACCOUNT_KEYS: keys[0] is not an asymmetric key");
  return { signing: { kid: publicJwks[0]!.kid!, privateKey }, publicJwks };
}

async function publicJwk(pub: JWK): Promise<JWK> {
  return { ...pub, kid: await calculateJwkThumbprint(pub), alg: SERVICE_ACCOUNT_TOKEN_ALG, use: "sig" };
}

/** A {@link HubKeySource} over fixed keys (a parsed secret, a test's keys). */
export function staticKeySource(keys: HubKeys): HubKeySource {
  return { keys: () => Promise.resolve(keys) };
}

// ---------------------------------------------------------------------------
// Issuing (TokenRequest)
// ---------------------------------------------------------------------------

/** The hub as a ServiceAccount token issuer. */
export interface ServiceAccountIssuer {
  /** `iss` of every token (kube-apiserver `--service-account-issuer`): the hub's URL. */
  issuer: string;
  /** The audiences the hub accepts (kube-apiserver `--api-audiences`; default `[issuer]`). */
  apiAudiences?: readonly string[];
  /** The longest token issued, seconds (`--service-account-max-token-expiration`); longer requests are cut to it. Default none. */
  maxExpirationSeconds?: number;
  keys: HubKeySource;
}

/** The ServiceAccount a token is issued for. */
export interface ServiceAccountRef {
  namespace: string;
  name: string;
  uid: string;
}

/** What a token is asked for (a TokenRequest's spec, already validated). */
export interface TokenSpec {
  /** Intended audiences; empty or absent: the API audiences. */
  audiences?: readonly string[];
  /** Requested lifetime, seconds (default 3600, at least 600). */
  expirationSeconds?: number;
}

/** An issued token and when it expires (epoch milliseconds and RFC 3339). */
export interface IssuedToken {
  token: string;
  audiences: string[];
  expirationSeconds: number;
  expiresAt: number;
  expirationTimestamp: string;
}

function apiAudiences(iss: ServiceAccountIssuer): string[] {
  return iss.apiAudiences && iss.apiAudiences.length > 0 ? [...iss.apiAudiences] : [iss.issuer];
}

/**
 * Issues a ServiceAccount token (what TokenRequest does once the request is valid): an ES256 JWT,
 * header `kid` the signing key's ID, claims `iss`, `sub` = `system:serviceaccount:NS:NAME`, `aud`
 * (the requested audiences, else the API audiences), `iat` = `nbf` = `now`, `exp` = `now` +
 * expirationSeconds (cut to the issuer's maximum), a fresh `jti`, and `kubernetes.io:
 * {namespace, serviceaccount: {name, uid}}`. `now` is epoch milliseconds.
 */
export async function issueServiceAccountToken(issuer: ServiceAccountIssuer, sa: ServiceAccountRef, spec: TokenSpec, now: number): Promise<IssuedToken> {
  const { signing } = await issuer.keys.keys();
  const audiences = spec.audiences && spec.audiences.length > 0 ? [...spec.audiences] : apiAudiences(issuer);
  let expirationSeconds = spec.expirationSeconds ?? DEFAULT_TOKEN_EXPIRATION_SECONDS;
  if (issuer.maxExpirationSeconds !== undefined) expirationSeconds = Math.min(expirationSeconds, issuer.maxExpirationSeconds);
  const iat = Math.floor(now / 1000);
  const exp = iat + expirationSeconds;
  const token = await new SignJWT({ "kubernetes.io": { namespace: sa.namespace, serviceaccount: { name: sa.name, uid: sa.uid } } })
    .setProtectedHeader({ alg: SERVICE_ACCOUNT_TOKEN_ALG, kid: signing.kid, typ: "JWT" })
    .setIssuer(issuer.issuer)
    .setSubject(serviceAccountUsername(sa.namespace, sa.name))
    .setAudience(audiences)
    .setIssuedAt(iat)
    .setNotBefore(iat)
    .setExpirationTime(exp)
    .setJti(crypto.randomUUID())
    .sign(signing.privateKey);
  return { token, audiences, expirationSeconds, expiresAt: exp * 1000, expirationTimestamp: rfc3339(exp * 1000) };
}

const TOKEN_REQUEST_REF = { group: "authentication.k8s.io", kind: "TokenRequest", plural: "tokenrequests" };

/** A TokenRequest (`authentication.k8s.io/v1`) as a client sends it: only `spec` matters. */
export const TokenRequestSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.looseObject({}).optional(),
  spec: z
    .looseObject({
      audiences: z.array(z.string()).nullable().optional(),
      expirationSeconds: z.number().int().nullable().optional(),
      boundObjectRef: z.unknown().optional(),
    })
    .optional(),
});

/**
 * Serves a TokenRequest for a ServiceAccount (`POST .../serviceaccounts/{name}/token`): defaults
 * `spec` as Kubernetes (`expirationSeconds` 3600, `audiences` the API audiences), validates it as
 * Kubernetes (at least 10 minutes, at most 2^32 seconds), issues the token and answers the
 * TokenRequest with `status.token` and `status.expirationTimestamp`. `now` is epoch milliseconds.
 *
 * @throws ApiError 422 Invalid naming `spec.expirationSeconds` (too short, too long) or
 *   `spec.boundObjectRef` (the hub binds tokens to their ServiceAccount only), 400 when the body
 *   is not a TokenRequest.
 */
export async function serveTokenRequest(issuer: ServiceAccountIssuer, sa: ServiceAccountRef, body: unknown, now: number): Promise<Record<string, unknown>> {
  const parsed = TokenRequestSchema.safeParse(body ?? {});
  if (!parsed.success)
    throw invalid(
      { ...TOKEN_REQUEST_REF, name: "" },
      parsed.error.issues.map((i) => ({ field: i.path.join("."), message: i.message })),
    );
  const spec = parsed.data.spec ?? {};
  const expirationSeconds = spec.expirationSeconds ?? DEFAULT_TOKEN_EXPIRATION_SECONDS;
  const causes = [];
  if (expirationSeconds < MIN_TOKEN_EXPIRATION_SECONDS)
    causes.push({ field: "spec.expirationSeconds", message: `Invalid value: ${expirationSeconds}: may not specify a duration less than 10 minutes` });
  if (expirationSeconds > MAX_TOKEN_EXPIRATION_SECONDS)
    causes.push({ field: "spec.expirationSeconds", message: `Invalid value: ${expirationSeconds}: may not specify a duration larger than 2^32 seconds` });
  if (spec.boundObjectRef != null)
    causes.push({
      field: "spec.boundObjectRef",
      message: "Unsupported value: tokens are bound to their ServiceAccount only",
      reason: "FieldValueNotSupported",
    });
  // As TokenREST: the spec's validation errors name no object (`TokenRequest.authentication.k8s.io "" is invalid`).
  if (causes.length > 0) throw invalid({ ...TOKEN_REQUEST_REF, name: "" }, causes);
  const issued = await issueServiceAccountToken(issuer, sa, { audiences: spec.audiences ?? undefined, expirationSeconds }, now);
  return {
    kind: "TokenRequest",
    apiVersion: "authentication.k8s.io/v1",
    metadata: { name: sa.name, namespace: sa.namespace, creationTimestamp: rfc3339(now) },
    spec: { audiences: issued.audiences, expirationSeconds: issued.expirationSeconds, boundObjectRef: null },
    status: { token: issued.token, expirationTimestamp: issued.expirationTimestamp },
  };
}

// ---------------------------------------------------------------------------
// Verifying
// ---------------------------------------------------------------------------

/**
 * The UID of the ServiceAccount NAME in namespace NS as the hub stores it now, or undefined when
 * there is none (deleted, or never created).
 */
export type ServiceAccountLookup = (namespace: string, name: string) => Promise<string | undefined>;

const PrivateClaims = z.looseObject({
  "kubernetes.io": z.looseObject({
    namespace: z.string().min(1),
    serviceaccount: z.looseObject({ name: z.string().min(1), uid: z.string().min(1) }),
  }),
});

/**
 * The ServiceAccount token authenticator. A token that is not a JWT, or whose (unverified) `iss`
 * is not the hub's issuer, is not this authenticator's (`null`). Otherwise: the `kid` must name one
 * of the hub's keys and the ES256 signature verify; `aud` must share an audience with the API
 * audiences; `exp`, `nbf` and `iat` are checked against `now` (epoch milliseconds) with 60 s of
 * leeway; `sub` must be the `kubernetes.io` claim's ServiceAccount; and `lookup` must find that
 * ServiceAccount with the token's UID (a deleted ServiceAccount, or one recreated under the same
 * name, revokes its tokens). The user is `system:serviceaccount:NS:NAME` with the ServiceAccount's
 * UID, groups `system:serviceaccounts` and `system:serviceaccounts:NS`, and extra
 * `authentication.kubernetes.io/credential-id: ["JTI=<jti>"]` when the token has a `jti`.
 *
 * @throws AuthenticationFailure saying why the hub's token does not verify.
 */
export function serviceAccountTokenAuthenticator(issuer: ServiceAccountIssuer, lookup: ServiceAccountLookup): Authenticator {
  const audiences = apiAudiences(issuer);
  const imported = new WeakMap<JWK, Promise<CryptoKey | Uint8Array>>();
  return async (token, now) => {
    const peeked = peekIssuer(token);
    if (!peeked || peeked.iss !== issuer.issuer) return null;
    const header = peeked.header;
    if (header.alg !== SERVICE_ACCOUNT_TOKEN_ALG) throw new AuthenticationFailure("serviceaccount: token signed with an unsupported algorithm");
    const { publicJwks } = await issuer.keys.keys();
    const jwk = publicJwks.find((k) => k.kid === header.kid);
    if (!jwk) throw new AuthenticationFailure("serviceaccount: token signed by an unknown key");
    let key = imported.get(jwk);
    if (!key) imported.set(jwk, (key = importJWK(jwk, SERVICE_ACCOUNT_TOKEN_ALG)));
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, await key, {
        algorithms: [SERVICE_ACCOUNT_TOKEN_ALG],
        issuer: issuer.issuer,
        audience: audiences,
        requiredClaims: ["exp", "sub"],
        currentDate: new Date(now),
        clockTolerance: SERVICE_ACCOUNT_TOKEN_LEEWAY_SECONDS,
      }));
    } catch (e) {
      throw new AuthenticationFailure(`serviceaccount: ${(e as Error).message}`);
    }
    if (typeof payload.iat === "number" && payload.iat * 1000 > now + SERVICE_ACCOUNT_TOKEN_LEEWAY_SECONDS * 1000)
      throw new AuthenticationFailure("serviceaccount: token issued in the future");
    const priv = PrivateClaims.safeParse(payload);
    if (!priv.success) throw new AuthenticationFailure("serviceaccount: token has no kubernetes.io claim with a namespace and a serviceaccount");
    const { namespace, serviceaccount } = priv.data["kubernetes.io"];
    const username = serviceAccountUsername(namespace, serviceaccount.name);
    if (payload.sub !== username) throw new AuthenticationFailure("serviceaccount: sub does not match the kubernetes.io claim");
    const uid = await lookup(namespace, serviceaccount.name);
    if (uid === undefined) throw new AuthenticationFailure(`serviceaccount: serviceaccounts "${serviceaccount.name}" not found in namespace "${namespace}"`);
    if (uid !== serviceaccount.uid)
      throw new AuthenticationFailure(`serviceaccount: service account UID (${uid}) does not match claim (${serviceaccount.uid})`);
    const user: UserInfo = { name: username, uid, groups: serviceAccountGroups(namespace) };
    return typeof payload.jti === "string" && payload.jti ? { ...user, extra: { [CREDENTIAL_ID_EXTRA]: [`JTI=${payload.jti}`] } } : user;
  };
}

// ---------------------------------------------------------------------------
// Publishing (service account issuer discovery)
// ---------------------------------------------------------------------------

/**
 * The issuer discovery document the hub serves at `/.well-known/openid-configuration`
 * (unauthenticated, as kube-apiserver's ServiceAccountIssuerDiscovery): `issuer`, `jwks_uri`
 * (`<issuer>/openid/v1/jwks`), `response_types_supported: ["id_token"]`,
 * `subject_types_supported: ["public"]`, `id_token_signing_alg_values_supported: ["ES256"]`.
 */
export function issuerDiscoveryDocument(issuer: ServiceAccountIssuer): Record<string, unknown> {
  return {
    issuer: issuer.issuer,
    jwks_uri: `${issuer.issuer.replace(/\/+$/, "")}${JWKS_PATH}`,
    response_types_supported: ["id_token"],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: [SERVICE_ACCOUNT_TOKEN_ALG],
  };
}

/**
 * The JWK Set the hub serves at `/openid/v1/jwks`: every public key tokens may verify with
 * (`kty`, `crv`, `x`, `y`, `kid`, `alg`, `use: sig`), never a private part.
 */
export async function issuerJwks(issuer: ServiceAccountIssuer): Promise<{ keys: JWK[] }> {
  const { publicJwks } = await issuer.keys.keys();
  return { keys: publicJwks.map((k) => ({ kty: k.kty, crv: k.crv, x: k.x, y: k.y, kid: k.kid, alg: k.alg, use: k.use })) };
}
