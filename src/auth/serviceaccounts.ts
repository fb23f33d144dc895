/**
 * ServiceAccounts as identities, wired to the hub (the pure parts are src/auth/serviceaccount-token.ts):
 *
 * - the hub's signing keys ({@link hubKeySource}): the Worker secret
 *   `FLOTILLA_SERVICE_ACCOUNT_KEYS` (a JWK Set: its first key, a private EC P-256 JWK, signs; every
 *   key, private or public, verifies, so a key is rotated by putting a new one first and keeping
 *   the old one after it until the tokens it signed expired) when set; otherwise one key the hub
 *   generates on first use and keeps in D1 (`hub_secrets`, migrations/0008_serviceaccounts.sql),
 *   sealed with the Secrets' encryption keys (`FLOTILLA_ENCRYPTION_KEYS`, src/k8s/encryption.ts),
 *   so that it survives restarts and every isolate signs with the same key;
 * - the issuer ({@link issuerOf}): `FLOTILLA_SERVICE_ACCOUNT_ISSUER` when set (kube-apiserver's
 *   `--service-account-issuer`), else the origin of the request (the hub's URL);
 * - the TokenRequest subresource (`POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token`,
 *   {@link createToken}), as kube-apiserver's `TokenREST.Create`;
 * - the issuer discovery document and JWKS (`GET /.well-known/openid-configuration`,
 *   `GET /openid/v1/jwks`, {@link serviceAccountIssuerRoutes}), unauthenticated, as
 *   kube-apiserver's ServiceAccountIssuerDiscovery serves them;
 * - {@link serviceAccountAuthenticator}: the hub's tokens, verified, and alive only while their
 *   ServiceAccount exists with the UID they were issued for (one primary-key read of D1 per
 *   request, of two columns);
 * - the `default` ServiceAccount of every namespace ({@link defaultServiceAccountHook}), as
 *   kube-controller-manager's serviceaccounts controller keeps it: created with the namespace, and
 *   again when it is deleted while its namespace is active.
 *
 * Semantics sources (facts carried over, not code): `pkg/registry/core/serviceaccount/storage/
 * token.go` (the order of checks: the body's name and namespace, the ServiceAccount, the body's
 * UID, the spec's validation), `pkg/serviceaccount/claims.go` (a ServiceAccount deleted more than
 * 60 s ago no longer authenticates, even while a finalizer keeps it), `pkg/routes/openidmetadata.go`
 * (content types and `Cache-Control: public, max-age=3600`).
 */
import { Hono } from "hono";
import { ApiError, conflict, invalid, notFound } from "../k8s/errors.ts";
import { isJsonObject } from "../k8s/meta.ts";
import { EncryptionError, keyringOf } from "../k8s/encryption.ts";
import { resourceKey } from "../k8s/kind.ts";
import { ServiceAccountKind } from "../kinds/serviceaccount.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { storeOf } from "../store/store.ts";
import { storageOf } from "../store/storage.ts";
import type { AfterCommitHook } from "../store/hooks.ts";
import { NamespaceKind } from "../kinds/namespace.ts";
import { clock } from "../clock.ts";
import type { Env } from "../env.ts";
import { peekIssuer, type Authenticator } from "./authn.ts";
import {
  DISCOVERY_PATH,
  generateHubKey,
  issuerDiscoveryDocument,
  issuerJwks,
  JWKS_PATH,
  parseHubKeys,
  SERVICE_ACCOUNT_TOKEN_LEEWAY_SECONDS,
  serveTokenRequest,
  serviceAccountTokenAuthenticator,
  type HubKeys,
  type HubKeySource,
  type ServiceAccountIssuer,
  type ServiceAccountLookup,
} from "./serviceaccount-token.ts";

/** The `hub_secrets` row of the generated signing key (a JWK Set, sealed). */
const SIGNING_KEY_ROW = "service-account-signing-key";
/** What the sealed row is bound to (the additional authenticated data of its AES-GCM seal). */
const SIGNING_KEY_CONTEXT = `/hub_secrets/${SIGNING_KEY_ROW}`;

/** Keys already read, by where they came from (the secret's text, or D1 under an encryption key list). */
const loadedKeys = new Map<string, HubKeys>();

/**
 * Reads (or, the first time, generates and stores) the hub's generated signing key. Two isolates
 * that generate at once both insert-or-ignore, then read the row: both use the one that won. A row
 * sealed by an encryption key that is no longer the first is sealed again with the first.
 * @throws ApiError 500 when the row cannot be sealed or opened (no `FLOTILLA_ENCRYPTION_KEYS`, a
 *   key missing from it); the message names keys by ID only.
 */
async function storedKeys(env: Env): Promise<HubKeys> {
  const ring = keyringOf(env);
  const secrets = storageOf(env).hubSecrets;
  try {
    let value = await secrets.read(SIGNING_KEY_ROW);
    if (value === undefined) {
      const sealed = await ring.seal(JSON.stringify({ keys: [await generateHubKey()] }), SIGNING_KEY_CONTEXT);
      await secrets.insert(SIGNING_KEY_ROW, sealed, clock.now());
      value = await secrets.read(SIGNING_KEY_ROW);
      if (value === undefined) throw new Error("the service account signing key was stored but cannot be read back");
    }
    const opened = await ring.open(value, SIGNING_KEY_CONTEXT);
    if (opened.stale) {
      // Sealed by a key that is no longer the first (a rotation of FLOTILLA_ENCRYPTION_KEYS):
      // sealed again with the first one, so that the old key can be dropped (docs/encryption.md).
      const resealed = await ring.seal(opened.plaintext, SIGNING_KEY_CONTEXT);
      await secrets.replace(SIGNING_KEY_ROW, resealed, value);
    }
    return await parseHubKeys(opened.plaintext);
  } catch (e) {
    if (e instanceof EncryptionError) {
      throw new ApiError(500, "InternalError", `the hub's service account signing key cannot be kept: ${e.message} (or set FLOTILLA_SERVICE_ACCOUNT_KEYS)`);
    }
    throw e;
  }
}

/**
 * The hub's ServiceAccount token keys for `env` (see the module comment): parsed or read once per
 * isolate, then served from memory. A request never waits on another request's read (workerd
 * cancels a request that awaits I/O another, cancelled, request started): until one has finished,
 * each reads for itself.
 * @throws Error (from {@link parseHubKeys}) for a malformed `FLOTILLA_SERVICE_ACCOUNT_KEYS`; ApiError
 *   500 when the generated key cannot be kept.
 */
export function hubKeySource(env: Env): HubKeySource {
  const configured = env.FLOTILLA_SERVICE_ACCOUNT_KEYS?.trim();
  const id = configured ? `secret:${configured}` : `d1:${env.FLOTILLA_ENCRYPTION_KEYS ?? ""}`;
  return {
    async keys() {
      const cached = loadedKeys.get(id);
      if (cached) return cached;
      const keys = configured ? await parseHubKeys(configured) : await storedKeys(env);
      loadedKeys.set(id, keys);
      return keys;
    },
  };
}

/**
 * The hub's issuer (`iss` of its tokens, the `issuer` of its discovery document):
 * `FLOTILLA_SERVICE_ACCOUNT_ISSUER` when set, else the origin of `requestUrl` (the hub's URL as
 * the client reached it), or undefined when neither is known.
 */
export function issuerOf(env: Env, requestUrl?: string): string | undefined {
  const configured = env.FLOTILLA_SERVICE_ACCOUNT_ISSUER?.trim();
  if (configured) return configured;
  return requestUrl ? new URL(requestUrl).origin : undefined;
}

/** The hub as a token issuer for a request to `requestUrl`. */
function issuerFor(env: Env, requestUrl: string): ServiceAccountIssuer {
  return { issuer: issuerOf(env, requestUrl)!, keys: hubKeySource(env) };
}

/**
 * Serves a TokenRequest (`POST /api/v1/namespaces/{namespace}/serviceaccounts/{name}/token`), as
 * kube-apiserver's TokenREST: the body's `metadata.name` and `metadata.namespace`, when set, must be
 * the path's (422); the ServiceAccount must exist (404 `serviceaccounts "NAME" not found`); the
 * body's `metadata.uid`, when set, must be the ServiceAccount's (409); then the spec is defaulted
 * and validated (422 naming `spec.expirationSeconds` or `spec.boundObjectRef`) and the token issued,
 * for `now` (epoch milliseconds). Answers the TokenRequest with `status.token` and
 * `status.expirationTimestamp` (a 201).
 * @throws ApiError 404, 409, 422 as above; 500 when the signing key cannot be read
 */
export async function createToken(env: Env, requestUrl: string, namespace: string, name: string, body: unknown, now: number): Promise<Record<string, unknown>> {
  const ref = { group: "authentication.k8s.io", kind: "TokenRequest", plural: "tokenrequests", name };
  const meta = isJsonObject(body) && isJsonObject(body.metadata) ? body.metadata : {};
  if (typeof meta.name === "string" && meta.name && meta.name !== name) {
    throw invalid(ref, [
      {
        field: "metadata.name",
        message: `Invalid value: ${JSON.stringify(meta.name)}: must match the service account name if specified`,
        reason: "FieldValueInvalid",
      },
    ]);
  }
  if (typeof meta.namespace === "string" && meta.namespace && meta.namespace !== namespace) {
    throw invalid(ref, [
      {
        field: "metadata.namespace",
        message: `Invalid value: ${JSON.stringify(meta.namespace)}: must match the service account namespace if specified`,
        reason: "FieldValueInvalid",
      },
    ]);
  }
  const sa = await admittedStoreOf(env, ServiceAccountKind).get(namespace, name);
  if (!sa) throw notFound({ group: "", plural: ServiceAccountKind.plural, name });
  const uid = sa.metadata.uid!;
  if (typeof meta.uid === "string" && meta.uid && meta.uid !== uid) {
    throw conflict(
      { group: ref.group, plural: ref.kind, name },
      `the UID in the token request (${meta.uid}) does not match the UID of the service account (${uid})`,
    );
  }
  return serveTokenRequest(issuerFor(env, requestUrl), { namespace, name, uid }, body, now);
}

/**
 * The ServiceAccount lookup of the authenticator: one read by key of the ServiceAccount (its UID
 * and deletion time). A ServiceAccount whose deletion started more than 60 s before `now` (epoch
 * milliseconds) counts as gone (kube-apiserver's `invalidIfDeletedBefore`).
 */
function lookupIn(env: Env): ServiceAccountLookup {
  return async (namespace, name) => {
    const sa = await storeOf(env, ServiceAccountKind).get(namespace, name);
    if (!sa) return undefined;
    const deleted = sa.metadata.deletionTimestamp;
    if (deleted && Date.parse(deleted) < clock.now() - SERVICE_ACCOUNT_TOKEN_LEEWAY_SECONDS * 1000) return undefined;
    return sa.metadata.uid;
  };
}

/** Whether `iss` is a bare http(s) origin (what {@link issuerOf} derives from a request). */
function isOrigin(iss: unknown): iss is string {
  if (typeof iss !== "string") return false;
  try {
    const u = new URL(iss);
    return (u.protocol === "https:" || u.protocol === "http:") && u.origin === iss;
  } catch {
    return false;
  }
}

/**
 * The hub's ServiceAccount token authenticator (Kubernetes' service account token authenticator,
 * `system:serviceaccount:NS:NAME` in groups `system:serviceaccounts` and
 * `system:serviceaccounts:NS`, extra `authentication.kubernetes.io/credential-id: JTI=<jti>`):
 * the token must be signed by one of the hub's keys, its `iss` the hub's issuer, its `aud` share
 * an audience with the API audiences (the issuer, as kube-apiserver's default `--api-audiences`),
 * `exp`/`nbf`/`iat` hold at `now` (60 s leeway), and its ServiceAccount still exist with the UID
 * it was issued for (one primary-key read per request). Without `FLOTILLA_SERVICE_ACCOUNT_ISSUER`
 * the issuer is the origin the token names, when the token is signed by one of the hub's keys
 * (the origin it was issued through: the hub's URL). A token that is not a JWT, or of another
 * issuer, is not this authenticator's (`null`).
 * @throws AuthenticationFailure (any Error) when the hub's token does not verify
 */
export function serviceAccountAuthenticator(env: Env): Authenticator {
  const keys = hubKeySource(env);
  const lookup = lookupIn(env);
  const byIssuer = new Map<string, Authenticator>();
  return async (token, at) => {
    let issuer = env.FLOTILLA_SERVICE_ACCOUNT_ISSUER?.trim();
    if (!issuer) {
      const peeked = peekIssuer(token);
      if (!peeked || !isOrigin(peeked.iss)) return null;
      const kid = peeked.header.kid;
      if (!(await keys.keys()).publicJwks.some((k) => k.kid === kid)) return null;
      issuer = peeked.iss;
    }
    let authn = byIssuer.get(issuer);
    if (!authn) {
      authn = serviceAccountTokenAuthenticator({ issuer, keys }, lookup);
      if (byIssuer.size < 16) byIssuer.set(issuer, authn);
    }
    return authn(token, at);
  };
}

/**
 * `GET /.well-known/openid-configuration` (`application/json`) and `GET /openid/v1/jwks`
 * (`application/jwk-set+json`), unauthenticated, with `Cache-Control: public, max-age=3600`, as
 * kube-apiserver serves its ServiceAccount issuer discovery.
 *
 * @example app.route("/", serviceAccountIssuerRoutes());
 */
export function serviceAccountIssuerRoutes(): Hono<{ Bindings: Env }> {
  const app = new Hono<{ Bindings: Env }>();
  const headers = (type: string) => ({ "content-type": type, "cache-control": "public, max-age=3600" });
  app.get(DISCOVERY_PATH, (c) => new Response(JSON.stringify(issuerDiscoveryDocument(issuerFor(c.env, c.req.url))), { headers: headers("application/json") }));
  app.get(
    JWKS_PATH,
    async (c) => new Response(JSON.stringify(await issuerJwks(issuerFor(c.env, c.req.url))), { headers: headers("application/jwk-set+json") }),
  );
  return app;
}

/** The ServiceAccount every namespace has (kube-controller-manager's `--service-account-names` default). */
export const DEFAULT_SERVICE_ACCOUNT = "default";

/**
 * The serviceaccounts controller as an after-commit hook (src/store/hooks.ts): owed by a
 * namespace's create and by the delete of a namespace's `default` ServiceAccount; creates that
 * ServiceAccount when it is missing. A namespace gone or terminating meanwhile is left alone
 * (NamespaceLifecycle refuses the create, and the namespace controller deletes what it holds).
 * One indexed read, and one write when the ServiceAccount is missing.
 */
export const defaultServiceAccountHook: AfterCommitHook<true> = {
  name: "serviceaccount-default",
  plan: (change) =>
    (change.def === NamespaceKind && !change.before && change.after) ||
    (change.def === ServiceAccountKind && change.name === DEFAULT_SERVICE_ACCOUNT && change.before && !change.after)
      ? true
      : null,
  async run(env, _owed, target) {
    const namespace = target.resource === resourceKey(NamespaceKind) ? target.name : target.namespace;
    const accounts = admittedStoreOf(env, ServiceAccountKind);
    if (await accounts.get(namespace, DEFAULT_SERVICE_ACCOUNT)) return;
    try {
      await accounts.write(namespace, DEFAULT_SERVICE_ACCOUNT, {
        verb: "create",
        body: { apiVersion: "v1", kind: ServiceAccountKind.kind, metadata: { name: DEFAULT_SERVICE_ACCOUNT } },
      });
    } catch (e) {
      // Created meanwhile; or the namespace is gone (404) or terminating (403).
      if (e instanceof ApiError && (e.reason === "AlreadyExists" || e.code === 404 || e.code === 403)) return;
      throw e;
    }
  },
};
