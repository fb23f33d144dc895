/**
 * The agent's hub credential: an ES256 (P-256) key pair kept in the Secret
 * `flotilla-hub-credentials` in the agent's namespace on the member cluster, and the
 * short-lived JWT signed with it on every hub request (docs/agent-protocol.md, "Identity").
 *
 * This plays the part of OCM's `hub-kubeconfig-secret` (keys `cluster-name`, `tls.key`, …):
 * with it a restarted agent neither re-registers nor needs the bootstrap token.
 */
import { createHash, createPrivateKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from "node:crypto";
import type { JWK } from "jose";
import type { PublicJwk } from "../../src/agent-api/protocol.ts";
import { isConflict, isNotFound, type KubeConfig } from "./kube.ts";

/** Name of the Secret holding the agent's hub credentials. */
export const CREDENTIALS_SECRET_NAME = "flotilla-hub-credentials";
/**
 * Name of the Secret the install manifests create with the agent's configuration (`hub-url`,
 * `cluster-name`, `bootstrap-token`). The agent reads its `bootstrap-token` again when the hub
 * refuses its credentials ({@link loadBootstrapToken}), so a token put there later is used
 * without a restart.
 */
export const BOOTSTRAP_SECRET_NAME = "flotilla-bootstrap";
/** The agent's namespace when `--namespace` is not given. */
export const DEFAULT_AGENT_NAMESPACE = "flotilla-agent";
/** `aud` claim of every agent JWT. */
export const AGENT_TOKEN_AUDIENCE = "flotilla";
/** Lifetime of an agent JWT in seconds (`exp - iat`); the hub refuses more than 60. */
export const AGENT_TOKEN_TTL_SECONDS = 60;

/** An ES256 key pair in the forms the agent needs. */
export interface AgentKeyPair {
  /** Private JWK (`kty: "EC"`, `crv: "P-256"`, with `d`); never leaves the member cluster. */
  privateJwk: JWK;
  /** Public JWK (`kty`, `crv`, `x`, `y` only), as sent to the hub (src/agent-api/protocol.ts `PublicJwkSchema`). */
  publicJwk: PublicJwk;
  /** RFC 7638 SHA-256 thumbprint of the public JWK (base64url), used as the JWT `kid`. */
  kid: string;
  /** The private key, imported for signing (node:crypto). */
  signingKey: KeyObject;
}

/** Everything stored in the credentials Secret, with the key pair ready to use. */
export interface AgentCredentials {
  /** Secret key `cluster-name`: the ManagedCluster name registered at the hub. */
  clusterName: string;
  /** Secret key `cluster-id`: the cluster ID registered at the hub. */
  clusterId: string;
  /** Secret key `hub-url`: the hub these credentials belong to. */
  hubUrl: string;
  /** Secret keys `private-key` and `public-key`. */
  key: AgentKeyPair;
}

/** The credentials Secret exists but is unusable (a key missing, or a bad private key); a human must fix or delete it. */
export class CredentialsSecretError extends Error {
  override name = "CredentialsSecretError";
}

/**
 * Only the public members of an EC P-256 JWK (drops `d` and any metadata).
 * @throws Error when the JWK is not an EC P-256 key with `x` and `y`.
 */
export function publicJwkOf(jwk: JWK): PublicJwk {
  const { kty, crv, x, y } = jwk;
  if (kty !== "EC" || crv !== "P-256" || typeof x !== "string" || typeof y !== "string") throw new Error("not an EC P-256 JWK");
  return { kty: "EC", crv: "P-256", x, y };
}

/**
 * The RFC 7638 SHA-256 thumbprint of an EC public JWK (base64url): the hash of
 * `{"crv","kty","x","y"}` in that order, without whitespace.
 *
 * @throws Error when the JWK is not an EC key with `crv`, `x` and `y`.
 */
export function ecJwkThumbprint(jwk: JWK): string {
  if (jwk.kty !== "EC" || typeof jwk.crv !== "string" || typeof jwk.x !== "string" || typeof jwk.y !== "string") {
    throw new Error("not an EC public JWK");
  }
  return createHash("sha256")
    .update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }))
    .digest("base64url");
}

/**
 * Builds an {@link AgentKeyPair} from a stored private JWK.
 *
 * @param privateJwk an EC P-256 private JWK (with `d`).
 * @throws Error when the JWK is not a usable P-256 private key.
 */
export async function keyPairFromJwk(privateJwk: JWK): Promise<AgentKeyPair> {
  if (privateJwk.kty !== "EC" || privateJwk.crv !== "P-256" || typeof privateJwk.d !== "string") {
    throw new Error("private key is not an EC P-256 private JWK");
  }
  const publicJwk = publicJwkOf(privateJwk);
  const signingKey = createPrivateKey({ key: { kty: "EC", crv: "P-256", x: String(publicJwk.x), y: String(publicJwk.y), d: privateJwk.d }, format: "jwk" });
  return { privateJwk: { ...publicJwk, d: privateJwk.d }, publicJwk, kid: ecJwkThumbprint(publicJwk), signingKey };
}

/**
 * Generates a fresh ES256 (P-256) key pair with node:crypto.
 *
 * @returns the pair as JWKs, its thumbprint `kid` and the signing key.
 */
export async function generateAgentKeyPair(): Promise<AgentKeyPair> {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return keyPairFromJwk(privateKey.export({ format: "jwk" }) as JWK);
}

/**
 * Signs a compact JWS with ES256 (RFC 7515, RFC 7518 3.4: the signature is R || S, 64 bytes).
 * Node's own ECDSA instead of jose's WebCrypto path keeps the agent light (issue 16); the hub
 * verifies with jose.
 */
function signEs256(header: Record<string, unknown>, claims: Record<string, unknown>, key: KeyObject): string {
  const input = `${Buffer.from(JSON.stringify(header)).toString("base64url")}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`;
  const signature = sign("sha256", Buffer.from(input), { key, dsaEncoding: "ieee-p1363" });
  return `${input}.${signature.toString("base64url")}`;
}

/**
 * The protected header of a compact JWS (its first segment, decoded), without verifying it.
 *
 * @throws Error when the token is not a JWS with a JSON object header.
 */
export function jwsHeader(token: string): Record<string, unknown> {
  const first = token.split(".")[0] ?? "";
  const header: unknown = JSON.parse(Buffer.from(first, "base64url").toString("utf8"));
  if (typeof header !== "object" || header === null || Array.isArray(header)) throw new Error("the JWS header is not an object");
  return header as Record<string, unknown>;
}

/** `aud` of a proof of possession (registration and key rotation). */
export const REGISTRATION_AUDIENCE = "flotilla-registration";

/** Options of {@link signAgentToken}. */
export interface SignOptions {
  /** Current time in milliseconds since the epoch (tests); default `Date.now()`. */
  nowMs?: number;
  /** The hub's key tag for this key (sent as the `ktag` header parameter), when the hub handed one over. */
  keyTag?: string;
}

/**
 * Signs a proof of possession of `key` (docs/agent-protocol.md "Identity"): a JWT with header
 * `{alg: "ES256", kid}` and claims `{iss: name, sub: name, aud: "flotilla-registration",
 * cid: clusterId (registration only), iat, exp: iat + 60, jti}`, sent with a registration or a
 * key rotation so the hub knows the caller holds the private key.
 */
export async function signProof(clusterName: string, key: AgentKeyPair, clusterId?: string, options: SignOptions = {}): Promise<string> {
  const iat = Math.floor((options.nowMs ?? Date.now()) / 1000);
  return signEs256(
    { alg: "ES256", kid: key.kid },
    {
      ...(clusterId === undefined ? {} : { cid: clusterId }),
      iss: clusterName,
      sub: clusterName,
      aud: REGISTRATION_AUDIENCE,
      iat,
      exp: iat + AGENT_TOKEN_TTL_SECONDS,
      jti: randomUUID(),
    },
    key.signingKey,
  );
}

/**
 * Signs the per-request agent JWT (docs/agent-protocol.md): header
 * `{alg: "ES256", typ: "JWT", kid: <thumbprint>, ktag?: <the hub's key tag>}`, claims `{iss: name, sub: name,
 * aud: "flotilla", iat: now (seconds), exp: iat + 60, jti: random UUID}`. A new `jti` on every
 * call, since the hub refuses replays.
 *
 * @param clusterName the ManagedCluster name (`iss` and `sub`).
 * @param key the key pair to sign with.
 * @returns the compact JWS, to send as `Authorization: Bearer <jwt>`.
 */
export async function signAgentToken(clusterName: string, key: AgentKeyPair, options: SignOptions = {}): Promise<string> {
  const iat = Math.floor((options.nowMs ?? Date.now()) / 1000);
  return signEs256(
    { alg: "ES256", typ: "JWT", kid: key.kid, ...(options.keyTag ? { ktag: options.keyTag } : {}) },
    { iss: clusterName, sub: clusterName, aud: AGENT_TOKEN_AUDIENCE, iat, exp: iat + AGENT_TOKEN_TTL_SECONDS, jti: randomUUID() },
    key.signingKey,
  );
}

function decode(data: Record<string, string> | undefined, key: string): string | undefined {
  const v = data?.[key];
  return v === undefined ? undefined : Buffer.from(v, "base64").toString("utf8");
}

/**
 * Reads the credentials Secret `flotilla-hub-credentials` from `namespace`.
 *
 * @param kc the member cluster's configuration.
 * @param namespace the agent's namespace.
 * @returns the credentials, or `undefined` when the Secret does not exist.
 * @throws CredentialsSecretError when the Secret exists but lacks a key or holds an unusable
 *   private key (a human must look at it); the KubeError for API failures other than 404.
 */
export async function loadCredentials(kc: KubeConfig, namespace: string): Promise<AgentCredentials | undefined> {
  let secret: { data?: Record<string, string>; stringData?: Record<string, string> };
  try {
    secret = await kc.json("GET", secretPath(namespace, CREDENTIALS_SECRET_NAME));
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const get = (k: string): string => {
    const v = decode(secret.data, k) ?? secret.stringData?.[k];
    if (!v) throw new CredentialsSecretError(`Secret ${namespace}/${CREDENTIALS_SECRET_NAME} has no "${k}"`);
    return v;
  };
  const clusterName = get("cluster-name");
  const clusterId = get("cluster-id");
  const hubUrl = get("hub-url");
  const privateText = get("private-key");
  let key: AgentKeyPair;
  try {
    key = await keyPairFromJwk(JSON.parse(privateText) as JWK);
  } catch (err) {
    throw new CredentialsSecretError(
      `Secret ${namespace}/${CREDENTIALS_SECRET_NAME}: private-key is not a usable EC P-256 JWK (${err instanceof Error ? err.message : String(err)})`,
      { cause: err },
    );
  }
  return { clusterName, clusterId, hubUrl, key };
}

function secretPath(namespace: string, name?: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets${name ? `/${encodeURIComponent(name)}` : ""}`;
}

function secretBody(namespace: string, creds: AgentCredentials, resourceVersion?: string): Record<string, unknown> {
  const enc = (s: string): string => Buffer.from(s, "utf8").toString("base64");
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: CREDENTIALS_SECRET_NAME,
      namespace,
      labels: { "app.kubernetes.io/managed-by": "flotilla-agent" },
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    type: "Opaque",
    data: {
      "cluster-name": enc(creds.clusterName),
      "cluster-id": enc(creds.clusterId),
      "hub-url": enc(creds.hubUrl),
      "private-key": enc(JSON.stringify(creds.key.privateJwk)),
      "public-key": enc(JSON.stringify(creds.key.publicJwk)),
    },
  };
}

/**
 * Writes the credentials Secret: creates the namespace when missing, then creates the
 * Secret, or replaces it (read-modify-write with its `resourceVersion`) when it exists.
 *
 * @param kc the member cluster's configuration.
 * @param namespace the agent's namespace.
 * @param creds what to store (keys `cluster-name`, `cluster-id`, `hub-url`, `private-key`, `public-key`).
 * @throws the KubeError when the API server refuses (e.g. RBAC, or a 409 conflict
 *   with a concurrent writer).
 */
export async function storeCredentials(kc: KubeConfig, namespace: string, creds: AgentCredentials): Promise<void> {
  try {
    await kc.json("GET", `/api/v1/namespaces/${encodeURIComponent(namespace)}`);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      await kc.json("POST", "/api/v1/namespaces", { body: { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } } });
    } catch (createErr) {
      if (!isConflict(createErr)) throw createErr;
    }
  }
  try {
    await kc.json("POST", secretPath(namespace), { body: secretBody(namespace, creds) });
    return;
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
  const existing = await kc.json("GET", secretPath(namespace, CREDENTIALS_SECRET_NAME));
  const meta = existing.metadata as { resourceVersion?: string } | undefined;
  await kc.json("PUT", secretPath(namespace, CREDENTIALS_SECRET_NAME), { body: secretBody(namespace, creds, meta?.resourceVersion) });
}

/**
 * The bootstrap token in the Secret `flotilla-bootstrap` of `namespace` (key `bootstrap-token`,
 * in `data` or `stringData`), read when the hub refuses the agent's credentials: the Secret is
 * where the install manifests put the token, and an admin may put a new one there.
 *
 * @param kc the member cluster's configuration.
 * @param namespace the agent's namespace.
 * @returns the token when the Secret exists and holds a token of kubeadm's form
 *   (`[a-z0-9]{6}.[a-z0-9]{16}`); `undefined` when it does not, or cannot be read (404, 403, the
 *   member cluster unreachable: the caller falls back to the token it was started with).
 */
export async function loadBootstrapToken(kc: KubeConfig, namespace: string): Promise<string | undefined> {
  try {
    const secret: { data?: Record<string, string>; stringData?: Record<string, string> } = await kc.json("GET", secretPath(namespace, BOOTSTRAP_SECRET_NAME));
    const token = (decode(secret.data, "bootstrap-token") ?? secret.stringData?.["bootstrap-token"] ?? "").trim();
    return /^[a-z0-9]{6}\.[a-z0-9]{16}$/.test(token) ? token : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Deletes the credentials Secret (the last step of leaving the hub, docs/agent-protocol.md
 * "Leave"); a Secret already gone is fine.
 *
 * @param kc the member cluster's configuration.
 * @param namespace the agent's namespace.
 * @throws the KubeError for anything but 404.
 */
export async function deleteCredentials(kc: KubeConfig, namespace: string): Promise<void> {
  try {
    await kc.json("DELETE", secretPath(namespace, CREDENTIALS_SECRET_NAME));
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
