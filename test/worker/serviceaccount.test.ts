/**
 * ServiceAccounts (core v1) and their tokens, as kube-apiserver serves them: the kind, the
 * TokenRequest subresource, the issuer discovery document and JWKS, and the authenticator that
 * takes the tokens back (src/auth/serviceaccounts.ts), which refuses a token once its
 * ServiceAccount is gone or replaced.
 */
import { env } from "cloudflare:workers";
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { generateHubKey } from "../../src/auth/serviceaccount-token.ts";
import { createToken, hubKeySource, serviceAccountAuthenticator } from "../../src/auth/serviceaccounts.ts";
import type { Env } from "../../src/env.ts";
import { clock } from "../../src/clock.ts";
import { call, createNamespaces, withClockAhead } from "./helpers.ts";

const HUB = "https://hub.test";
const SAS = (ns: string) => `/api/v1/namespaces/${ns}/serviceaccounts`;
const TOKEN = (ns: string, name: string) => `${SAS(ns)}/${name}/token`;
const sa = (name: string, fields: Record<string, unknown> = {}) => ({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name }, ...fields });
const tokenRequest = (spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}) => ({
  apiVersion: "authentication.k8s.io/v1",
  kind: "TokenRequest",
  metadata,
  spec,
});
const hubEnv = env as unknown as Env;

describe("core ServiceAccount: /api/v1/namespaces/{ns}/serviceaccounts", () => {
  beforeAll(() => createNamespaces("sa-crud", "sa-tok", "sa-auth"));

  it("creates, reads, lists as kubectl's table (NAME, SECRETS, AGE), updates and deletes; secrets keep their names only", async () => {
    const created = await call(
      "POST",
      SAS("sa-crud"),
      sa("builder", {
        secrets: [{ name: "s1", namespace: "other", kind: "Secret", uid: "u" }],
        imagePullSecrets: [{ name: "pull" }],
        automountServiceAccountToken: false,
      }),
    );
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "builder", namespace: "sa-crud" },
      secrets: [{ name: "s1" }],
      imagePullSecrets: [{ name: "pull" }],
      automountServiceAccountToken: false,
    });
    expect(created.body.secrets[0]).toEqual({ name: "s1" });
    expect(created.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);

    expect((await call("GET", `${SAS("sa-crud")}/builder`)).body.metadata.uid).toBe(created.body.metadata.uid);
    expect((await call("POST", SAS("sa-crud"), sa("plain"))).status).toBe(201);
    const table = await call("GET", SAS("sa-crud"), undefined, { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } });
    expect(table.status).toBe(200);
    expect(table.body.columnDefinitions.map((c: { name: string }) => c.name)).toEqual(["Name", "Secrets", "Age"]);
    expect(table.body.rows.map((r: { cells: unknown[] }) => r.cells.slice(0, 2))).toEqual([
      ["builder", 1],
      ["default", 0],
      ["plain", 0],
    ]);

    const patched = await call(
      "PATCH",
      `${SAS("sa-crud")}/plain`,
      { secrets: [{ name: "s2", fieldPath: "x" }] },
      { contentType: "application/merge-patch+json" },
    );
    expect(patched.status).toBe(200);
    expect(patched.body.secrets).toEqual([{ name: "s2" }]);
    expect((await call("DELETE", `${SAS("sa-crud")}/plain`)).status).toBe(200);
    expect((await call("GET", `${SAS("sa-crud")}/plain`)).status).toBe(404);
  });

  it("gives every namespace its `default` ServiceAccount, again when it is deleted, and none once the namespace terminates", async () => {
    await createNamespaces("sa-default");
    const first = await call("GET", `${SAS("sa-default")}/default`);
    expect(first.status).toBe(200);
    expect((await call("GET", `${SAS("default")}/default`)).status).toBe(200);
    expect((await call("DELETE", `${SAS("sa-default")}/default`)).status).toBe(200);
    const again = await call("GET", `${SAS("sa-default")}/default`);
    expect(again.status).toBe(200);
    expect(again.body.metadata.uid).not.toBe(first.body.metadata.uid);
    expect((await call("DELETE", "/api/v1/namespaces/sa-default")).status).toBe(200);
    expect((await call("GET", "/api/v1/namespaces/sa-default")).status).toBe(404);
    expect((await call("GET", `${SAS("sa-default")}/default`)).status).toBe(404);
  });

  it("refuses a ServiceAccount in a namespace that does not exist (NamespaceLifecycle) and unknown fields", async () => {
    const r = await call("POST", SAS("sa-nowhere"), sa("x"));
    expect(r.status).toBe(404);
    expect(r.body.message).toBe('namespaces "sa-nowhere" not found');
    const bad = await call("POST", `${SAS("sa-crud")}?fieldValidation=Strict`, sa("y", { spec: {} }));
    expect(bad.status).toBe(400);
  });

  it("is in discovery with its token subresource (a TokenRequest of authentication.k8s.io/v1)", async () => {
    const list = (await call("GET", "/api/v1")).body.resources as { name: string; kind: string; group?: string; verbs: string[]; shortNames?: string[] }[];
    expect(list.find((r) => r.name === "serviceaccounts")).toMatchObject({
      kind: "ServiceAccount",
      shortNames: ["sa"],
      verbs: expect.arrayContaining(["create", "get", "list", "watch", "delete"]),
    });
    expect(list.find((r) => r.name === "serviceaccounts/token")).toMatchObject({
      kind: "TokenRequest",
      group: "authentication.k8s.io",
      version: "v1",
      verbs: ["create"],
    });
    const agg = await call("GET", "/api", undefined, { headers: { accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" } });
    const res = agg.body.items[0].versions[0].resources.find((r: { resource: string }) => r.resource === "serviceaccounts");
    expect(res.subresources).toEqual([
      { subresource: "token", responseKind: { group: "authentication.k8s.io", version: "v1", kind: "TokenRequest" }, verbs: ["create"] },
    ]);
  });

  it("is in the core group's OpenAPI documents, with the token subresource's POST of a TokenRequest", async () => {
    const v3 = (await call("GET", "/openapi/v3/api/v1")).body;
    const sa = v3.components.schemas["io.k8s.api.core.v1.ServiceAccount"];
    expect(sa["x-kubernetes-group-version-kind"]).toEqual([{ group: "", version: "v1", kind: "ServiceAccount" }]);
    expect(Object.keys(sa.properties)).toEqual(expect.arrayContaining(["secrets", "imagePullSecrets", "automountServiceAccountToken"]));
    const post = v3.paths["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"].post;
    expect(post).toMatchObject({
      "x-kubernetes-action": "post",
      "x-kubernetes-group-version-kind": { group: "authentication.k8s.io", version: "v1", kind: "TokenRequest" },
    });
    const ref = post.requestBody.content["application/json"].schema.$ref as string;
    const tr = v3.components.schemas[ref.replace("#/components/schemas/", "")];
    expect(Object.keys(tr.properties.spec.properties)).toEqual(["audiences", "expirationSeconds", "boundObjectRef"]);
    const v2 = (await call("GET", "/openapi/v2")).body;
    expect(v2.paths["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"].post.parameters.some((p: { in: string }) => p.in === "body")).toBe(true);
  });
});

describe("TokenRequest: POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token", () => {
  let uid: string;
  beforeAll(async () => {
    await createNamespaces("sa-tok");
    uid = (await call("POST", SAS("sa-tok"), sa("deployer"))).body.metadata.uid;
  });

  it("issues a token with Kubernetes' defaults: one hour, the hub's own audience, bound to the ServiceAccount's UID", async () => {
    const before = Math.floor(Date.now() / 1000);
    const r = await call("POST", TOKEN("sa-tok", "deployer"), tokenRequest());
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      kind: "TokenRequest",
      apiVersion: "authentication.k8s.io/v1",
      metadata: { name: "deployer", namespace: "sa-tok" },
      spec: { audiences: [HUB], expirationSeconds: 3600, boundObjectRef: null },
      status: { token: expect.any(String), expirationTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/) },
    });
    const claims = decodeJwt(r.body.status.token);
    expect(decodeProtectedHeader(r.body.status.token)).toMatchObject({ alg: "ES256", kid: expect.any(String) });
    expect(claims).toMatchObject({
      iss: HUB,
      sub: "system:serviceaccount:sa-tok:deployer",
      aud: [HUB],
      "kubernetes.io": { namespace: "sa-tok", serviceaccount: { name: "deployer", uid } },
    });
    expect(claims.exp! - claims.iat!).toBe(3600);
    expect(claims.iat!).toBeGreaterThanOrEqual(before);
    expect(Date.parse(r.body.status.expirationTimestamp) / 1000).toBe(claims.exp);
  });

  it("takes audiences and expirationSeconds (kubectl create token --audience --duration), also with name and namespace in the body", async () => {
    const r = await call(
      "POST",
      TOKEN("sa-tok", "deployer"),
      tokenRequest({ audiences: ["vault", "ci"], expirationSeconds: 600 }, { name: "deployer", namespace: "sa-tok" }),
    );
    expect(r.status).toBe(201);
    expect(r.body.spec).toMatchObject({ audiences: ["vault", "ci"], expirationSeconds: 600 });
    const claims = decodeJwt(r.body.status.token);
    expect(claims.aud).toEqual(["vault", "ci"]);
    expect(claims.exp! - claims.iat!).toBe(600);
  });

  it("answers 404 for a ServiceAccount that does not exist", async () => {
    const r = await call("POST", TOKEN("sa-tok", "nobody"), tokenRequest());
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({
      kind: "Status",
      reason: "NotFound",
      message: 'serviceaccounts "nobody" not found',
      details: { name: "nobody", kind: "serviceaccounts" },
    });
  });

  it("answers 422 for an expirationSeconds under 10 minutes or over 2^32 seconds, naming the field", async () => {
    const short = await call("POST", TOKEN("sa-tok", "deployer"), tokenRequest({ expirationSeconds: 599 }));
    expect(short.status).toBe(422);
    expect(short.body).toMatchObject({
      reason: "Invalid",
      message: 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes',
    });
    expect(short.body.details.causes).toEqual([expect.objectContaining({ field: "spec.expirationSeconds" })]);
    const zero = await call("POST", TOKEN("sa-tok", "deployer"), tokenRequest({ expirationSeconds: 0 }));
    expect(zero.status).toBe(422);
    const long = await call("POST", TOKEN("sa-tok", "deployer"), tokenRequest({ expirationSeconds: 2 ** 32 + 1 }));
    expect(long.status).toBe(422);
    expect(long.body.message).toContain("may not specify a duration larger than 2^32 seconds");
  });

  it("answers 422 for a body naming another ServiceAccount or namespace, or a boundObjectRef; 409 for another UID; 405 for GET", async () => {
    const name = await call("POST", TOKEN("sa-tok", "deployer"), tokenRequest({}, { name: "default" }));
    expect(name.status).toBe(422);
    expect(name.body.message).toBe(
      'TokenRequest.authentication.k8s.io "deployer" is invalid: metadata.name: Invalid value: "default": must match the service account name if specified',
    );
    const ns = await call("POST", TOKEN("sa-tok", "deployer"), tokenRequest({}, { namespace: "default" }));
    expect(ns.status).toBe(422);
    expect(ns.body.details.causes[0].field).toBe("metadata.namespace");
    const bound = await call("POST", TOKEN("sa-tok", "deployer"), tokenRequest({ boundObjectRef: { kind: "Secret", apiVersion: "v1", name: "s" } }));
    expect(bound.status).toBe(422);
    expect(bound.body.details.causes[0].field).toBe("spec.boundObjectRef");
    const otherUid = await call("POST", TOKEN("sa-tok", "deployer"), tokenRequest({}, { uid: "00000000-0000-4000-8000-000000000000" }));
    expect(otherUid.status).toBe(409);
    expect((await call("GET", TOKEN("sa-tok", "deployer"))).status).toBe(405);
  });

  it("needs a credential like every API request", async () => {
    expect((await call("POST", TOKEN("sa-tok", "deployer"), tokenRequest(), { token: null })).status).toBe(401);
  });
});

describe("issuer discovery: /.well-known/openid-configuration and /openid/v1/jwks", () => {
  it("serves both without a credential, as kube-apiserver, and a token verifies against the served JWKS", async () => {
    const disc = await call("GET", "/.well-known/openid-configuration", undefined, { token: null });
    expect(disc.status).toBe(200);
    expect(disc.headers.get("content-type")).toBe("application/json");
    expect(disc.headers.get("cache-control")).toBe("public, max-age=3600");
    expect(disc.body).toEqual({
      issuer: HUB,
      jwks_uri: `${HUB}/openid/v1/jwks`,
      response_types_supported: ["id_token"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: ["ES256"],
    });
    const jwks = await call("GET", "/openid/v1/jwks", undefined, { token: null });
    expect(jwks.status).toBe(200);
    expect(jwks.headers.get("content-type")).toBe("application/jwk-set+json");
    expect(jwks.body.keys.length).toBeGreaterThanOrEqual(1);
    for (const k of jwks.body.keys) {
      expect(k).toMatchObject({ kty: "EC", crv: "P-256", use: "sig", alg: "ES256", kid: expect.any(String) });
      expect(k.d).toBeUndefined();
    }
    await createNamespaces("sa-disc");
    expect((await call("POST", SAS("sa-disc"), sa("reader"))).status).toBe(201);
    const token = (await call("POST", TOKEN("sa-disc", "reader"), tokenRequest())).body.status.token;
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks.body), { issuer: disc.body.issuer, audience: HUB });
    expect(payload.sub).toBe("system:serviceaccount:sa-disc:reader");
  });

  it("keeps the generated signing key sealed in D1 (with FLOTILLA_ENCRYPTION_KEYS), the same for every read", async () => {
    const first = (await call("GET", "/openid/v1/jwks", undefined, { token: null })).body;
    const row = await env.DB.prepare("SELECT value FROM hub_secrets WHERE name = 'service-account-signing-key'").first<{ value: string }>();
    expect(row!.value.startsWith("k8s:enc:aesgcm:v1:test1:")).toBe(true);
    expect(row!.value).not.toContain('"d"');
    expect((await call("GET", "/openid/v1/jwks", undefined, { token: null })).body).toEqual(first);
  });

  it("seals the generated key again with the first encryption key once the keys rotate, so the old one can be dropped", async () => {
    const before = (await hubKeySource(hubEnv).keys()).publicJwks;
    const rotated = { ...hubEnv, FLOTILLA_ENCRYPTION_KEYS: `new1:${btoa("0123456789abcdef0123456789abcdef")},${hubEnv.FLOTILLA_ENCRYPTION_KEYS}` };
    expect((await hubKeySource(rotated).keys()).publicJwks).toEqual(before);
    const row = await env.DB.prepare("SELECT value FROM hub_secrets WHERE name = 'service-account-signing-key'").first<{ value: string }>();
    expect(row!.value.startsWith("k8s:enc:aesgcm:v1:new1:")).toBe(true);
    const onlyNew = { ...hubEnv, FLOTILLA_ENCRYPTION_KEYS: `new1:${btoa("0123456789abcdef0123456789abcdef")}` };
    expect((await hubKeySource(onlyNew).keys()).publicJwks).toEqual(before);
    // Back to the test key, for what follows.
    await hubKeySource({ ...hubEnv, FLOTILLA_ENCRYPTION_KEYS: `${hubEnv.FLOTILLA_ENCRYPTION_KEYS},${onlyNew.FLOTILLA_ENCRYPTION_KEYS}` }).keys();
  });

  it("without FLOTILLA_SERVICE_ACCOUNT_KEYS and FLOTILLA_ENCRYPTION_KEYS, refuses with 500 naming the missing setting, never the key", async () => {
    const err = await hubKeySource({ ...hubEnv, FLOTILLA_ENCRYPTION_KEYS: undefined })
      .keys()
      .catch((e: unknown) => e as { code: number; message: string });
    expect(err).toMatchObject({ code: 500, message: expect.stringContaining("FLOTILLA_ENCRYPTION_KEYS") });
    expect((err as { message: string }).message).toContain("FLOTILLA_SERVICE_ACCOUNT_KEYS");
    expect((err as { message: string }).message).not.toMatch(/"d"|k8s:enc/);
  });

  it("publishes every key of FLOTILLA_SERVICE_ACCOUNT_KEYS (rotation: the new key signs, the old one still verifies)", async () => {
    const fresh = await generateHubKey();
    const old = await generateHubKey();
    const keys = await hubKeySource({
      ...hubEnv,
      FLOTILLA_SERVICE_ACCOUNT_KEYS: JSON.stringify({ keys: [fresh, { kty: old.kty, crv: old.crv, x: old.x, y: old.y }] }),
    }).keys();
    expect(keys.publicJwks.map((k) => k.x)).toEqual([fresh.x, old.x]);
    expect(keys.publicJwks.every((k) => k.d === undefined)).toBe(true);

    // A token signed by the old key verifies once the new key signs, until the old key is dropped.
    await createNamespaces("sa-rot");
    expect((await call("POST", SAS("sa-rot"), sa("bot"))).status).toBe(201);
    const withKeys = (keys: unknown[]) => ({ ...hubEnv, FLOTILLA_SERVICE_ACCOUNT_ISSUER: HUB, FLOTILLA_SERVICE_ACCOUNT_KEYS: JSON.stringify({ keys }) });
    const before = withKeys([old]);
    const during = withKeys([fresh, { kty: old.kty, crv: old.crv, x: old.x, y: old.y }]);
    const after = withKeys([fresh]);
    const oldToken = ((await createToken(before, HUB, "sa-rot", "bot", tokenRequest(), clock.now())).status as { token: string }).token;
    const newToken = ((await createToken(during, HUB, "sa-rot", "bot", tokenRequest(), clock.now())).status as { token: string }).token;
    expect(await serviceAccountAuthenticator(during)(oldToken, clock.now())).toMatchObject({ name: "system:serviceaccount:sa-rot:bot" });
    expect(await serviceAccountAuthenticator(after)(newToken, clock.now())).toMatchObject({ name: "system:serviceaccount:sa-rot:bot" });
    await expect(serviceAccountAuthenticator(after)(oldToken, clock.now())).rejects.toThrow(/unknown key/);
  });
});

describe("the ServiceAccount token authenticator", () => {
  const authn = serviceAccountAuthenticator(hubEnv);
  const issue = async (ns: string, name: string, spec: Record<string, unknown> = {}) => {
    const r = await call("POST", TOKEN(ns, name), tokenRequest(spec));
    expect(r.status).toBe(201);
    return r.body.status.token as string;
  };
  beforeAll(() => createNamespaces("sa-auth"));

  it("takes the hub's token: system:serviceaccount:NS:NAME with its groups, UID and credential ID", async () => {
    const uid = (await call("POST", SAS("sa-auth"), sa("ci"))).body.metadata.uid;
    const token = await issue("sa-auth", "ci");
    const user = await authn(token, clock.now());
    expect(user).toEqual({
      name: "system:serviceaccount:sa-auth:ci",
      uid,
      groups: ["system:serviceaccounts", "system:serviceaccounts:sa-auth"],
      extra: { "authentication.kubernetes.io/credential-id": [`JTI=${decodeJwt(token).jti}`] },
    });
  });

  it("refuses the token once its ServiceAccount is deleted, and after it is recreated with a new UID", async () => {
    expect((await call("POST", SAS("sa-auth"), sa("doomed"))).status).toBe(201);
    const token = await issue("sa-auth", "doomed");
    expect(await authn(token, clock.now())).not.toBeNull();
    expect((await call("DELETE", `${SAS("sa-auth")}/doomed`)).status).toBe(200);
    await expect(authn(token, clock.now())).rejects.toThrow(/serviceaccounts "doomed" not found/);
    expect((await call("POST", SAS("sa-auth"), sa("doomed"))).status).toBe(201);
    await expect(authn(token, clock.now())).rejects.toThrow(/does not match claim/);
    expect(await authn(await issue("sa-auth", "doomed"), clock.now())).toMatchObject({ name: "system:serviceaccount:sa-auth:doomed" });
  });

  it("refuses an expired token (clock set past exp and the 60 s leeway), and one for another audience only", async () => {
    expect((await call("POST", SAS("sa-auth"), sa("short"))).status).toBe(201);
    const token = await issue("sa-auth", "short", { expirationSeconds: 600 });
    expect(await withClockAhead(600_000, () => authn(token, clock.now()))).not.toBeNull();
    await withClockAhead(662_000, () => expect(authn(token, clock.now())).rejects.toThrow(/exp/));
    const vault = await issue("sa-auth", "short", { audiences: ["vault"] });
    await expect(authn(vault, clock.now())).rejects.toThrow(/aud/);
  });

  it("leaves a token of another issuer to the other authenticators, and refuses one signed by a stranger under the hub's issuer", async () => {
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    const kid = "stranger";
    const claims = { "kubernetes.io": { namespace: "sa-auth", serviceaccount: { name: "ci", uid: "x" } } };
    const other = await new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", kid })
      .setIssuer("https://issuer.example")
      .setSubject("system:serviceaccount:sa-auth:ci")
      .setAudience("https://issuer.example")
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(privateKey);
    expect(await authn(other, clock.now())).toBeNull();
    expect(await authn("not-a-jwt", clock.now())).toBeNull();
    expect((await exportJWK(publicKey)).kty).toBe("EC");

    // With the issuer configured, a token naming the hub's issuer but not signed by its key fails.
    const fixed = serviceAccountAuthenticator({ ...hubEnv, FLOTILLA_SERVICE_ACCOUNT_ISSUER: HUB });
    const forged = await new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", kid })
      .setIssuer(HUB)
      .setSubject("system:serviceaccount:sa-auth:ci")
      .setAudience(HUB)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(privateKey);
    await expect(fixed(forged, clock.now())).rejects.toThrow(/unknown key/);
    // ...and a hub token whose issuer is not the configured one is not its own.
    const elsewhere = serviceAccountAuthenticator({ ...hubEnv, FLOTILLA_SERVICE_ACCOUNT_ISSUER: "https://issuer.example" });
    expect(await elsewhere(await issue("sa-auth", "ci"), clock.now())).toBeNull();
  });
});
