/**
 * The OIDC authenticator (src/auth/oidc.ts) against an issuer served in-process through the
 * injected `fetch` (keys made with jose): settings and kube-apiserver's prefix rules, discovery,
 * key caching and refresh on an unknown `kid`, rotation, the `exp`/`nbf`/`iss`/`aud` checks with
 * the injected clock, claim mapping and `email_verified`.
 */
import { describe, expect, it } from "vitest";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from "jose";
import { authenticate, Unauthenticated } from "../../src/auth/authn.ts";
import { IssuerKeySet, issuerUrlProblem, oidcAuthenticator, oidcUser, parseOidcSettings, type Fetch, type OidcSettings } from "../../src/auth/oidc.ts";

const ISSUER = "https://issuer.example.test";
const AUDIENCE = "flotilla";
const T0 = Date.parse("2026-11-26T10:00:00Z");

interface Signer {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

async function makeSigner(kid: string, alg = "RS256"): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" } };
}

/** An OIDC issuer served in-process: its discovery document and JWKS, with request counts. */
class FakeIssuer {
  keys: Signer[] = [];
  jwksFetches = 0;
  discoveryFetches = 0;
  discoveryIssuer = ISSUER;
  down = false;
  /** How the JWKS is answered: served, redirected elsewhere, or claimed too large. */
  jwksMode: "serve" | "redirect" | "huge" = "serve";

  constructor(readonly issuer = ISSUER) {}

  readonly fetch: Fetch = async (url) => {
    if (this.down) throw new TypeError("fetch failed");
    if (url === `${this.issuer}/.well-known/openid-configuration`) {
      this.discoveryFetches++;
      return Response.json({ issuer: this.discoveryIssuer, jwks_uri: `${this.issuer}/keys`, id_token_signing_alg_values_supported: ["RS256"] });
    }
    if (url === `${this.issuer}/keys`) {
      this.jwksFetches++;
      if (this.jwksMode === "redirect") return new Response(null, { status: 302, headers: { location: "https://evil.example.test/keys" } });
      if (this.jwksMode === "huge") return new Response("{}", { headers: { "content-length": String(10 * 1024 * 1024) } });
      return Response.json({ keys: this.keys.map((k) => k.publicJwk) });
    }
    return new Response("not found", { status: 404 });
  };

  token(signer: Signer, claims: JWTPayload, opts: { iat?: number; exp?: number; nbf?: number; header?: Record<string, unknown> } = {}): Promise<string> {
    const iat = opts.iat ?? Math.floor(T0 / 1000);
    const jwt = new SignJWT({ iss: this.issuer, aud: AUDIENCE, sub: "alice-id", ...claims })
      .setProtectedHeader({ alg: signer.publicJwk.alg!, kid: signer.kid, ...opts.header })
      .setIssuedAt(iat)
      .setExpirationTime(opts.exp ?? iat + 600);
    if (opts.nbf !== undefined) jwt.setNotBefore(opts.nbf);
    return jwt.sign(signer.privateKey);
  }
}

function settings(extra: Record<string, string> = {}): OidcSettings {
  return parseOidcSettings({ FLOTILLA_OIDC_ISSUER_URL: ISSUER, FLOTILLA_OIDC_AUDIENCE: AUDIENCE, ...extra })!;
}

async function setup(extra: Record<string, string> = {}) {
  const issuer = new FakeIssuer();
  const signer = await makeSigner("k1");
  issuer.keys = [signer];
  const authn = oidcAuthenticator(settings(extra), { fetch: issuer.fetch });
  return { issuer, signer, authn };
}

describe("OIDC settings (kube-apiserver's --oidc-* flags)", () => {
  it("is off without an issuer", () => {
    expect(parseOidcSettings({})).toBeNull();
    expect(parseOidcSettings({ FLOTILLA_OIDC_ISSUER_URL: "  " })).toBeNull();
  });

  it("applies kube-apiserver's defaults: claim sub, prefix '<issuer>#', groups claim groups, RS256", () => {
    expect(settings()).toEqual({
      issuerUrl: ISSUER,
      audience: AUDIENCE,
      usernameClaim: "sub",
      usernamePrefix: `${ISSUER}#`,
      groupsClaim: "groups",
      groupsPrefix: "",
      signingAlgs: ["RS256"],
    });
  });

  it("prefixes a claim other than email with the issuer by default, email not at all, '-' disables, a set prefix wins", () => {
    expect(settings({ FLOTILLA_OIDC_USERNAME_CLAIM: "name" }).usernamePrefix).toBe(`${ISSUER}#`);
    expect(settings({ FLOTILLA_OIDC_USERNAME_CLAIM: "email" }).usernamePrefix).toBe("");
    expect(settings({ FLOTILLA_OIDC_USERNAME_PREFIX: "-" }).usernamePrefix).toBe("");
    expect(settings({ FLOTILLA_OIDC_USERNAME_CLAIM: "email", FLOTILLA_OIDC_USERNAME_PREFIX: "oidc:" }).usernamePrefix).toBe("oidc:");
    expect(settings({ FLOTILLA_OIDC_GROUPS_PREFIX: "oidc:" }).groupsPrefix).toBe("oidc:");
  });

  it("requires an audience with an issuer", () => {
    expect(() => parseOidcSettings({ FLOTILLA_OIDC_ISSUER_URL: ISSUER })).toThrow(/FLOTILLA_OIDC_AUDIENCE: is required/);
  });

  it("requires https, except on a loopback address", () => {
    expect(() => parseOidcSettings({ FLOTILLA_OIDC_ISSUER_URL: "http://dex.example.com", FLOTILLA_OIDC_AUDIENCE: "a" })).toThrow(
      /FLOTILLA_OIDC_ISSUER_URL: must use the https scheme/,
    );
    for (const ok of ["https://dex.example.com", "https://dex.example.com/dex", "http://127.0.0.1:5556", "http://localhost:5556/dex", "http://[::1]:5556"]) {
      expect(issuerUrlProblem(ok), ok).toBeNull();
    }
    expect(issuerUrlProblem("https://dex.example.com?x=1")).toMatch(/query/);
    expect(issuerUrlProblem("https://dex.example.com#frag")).toMatch(/fragment/);
    expect(issuerUrlProblem("https://u:p@dex.example.com")).toMatch(/user info/);
    expect(issuerUrlProblem("dex.example.com")).toMatch(/absolute/);
    expect(issuerUrlProblem("http://127.0.0.1.example.com")).toMatch(/https/);
  });

  it("takes kube-apiserver's signing algorithms only", () => {
    expect(settings({ FLOTILLA_OIDC_SIGNING_ALGS: "RS256,ES256" }).signingAlgs).toEqual(["RS256", "ES256"]);
    expect(() => settings({ FLOTILLA_OIDC_SIGNING_ALGS: "HS256" })).toThrow(/unsupported algorithm "HS256"/);
  });
});

describe("OIDC tokens", () => {
  it("authenticates a good token: user <issuer>#sub, groups from the groups claim, plus system:authenticated", async () => {
    const { issuer, signer, authn } = await setup();
    const token = await issuer.token(signer, { groups: ["dev", "ops"] });
    expect(await authn(token, T0)).toEqual({ name: `${ISSUER}#alice-id`, groups: ["dev", "ops"] });
    expect(await authenticate([authn], token, T0)).toEqual({ name: `${ISSUER}#alice-id`, groups: ["dev", "ops", "system:authenticated"] });
  });

  it("caches the keys: a second token costs no fetch", async () => {
    const { issuer, signer, authn } = await setup();
    await authn(await issuer.token(signer, {}), T0);
    await authn(await issuer.token(signer, { sub: "bob" }), T0 + 1000);
    expect(issuer.discoveryFetches).toBe(1);
    expect(issuer.jwksFetches).toBe(1);
  });

  it("leaves a token of another issuer, or not a JWT, to the next authenticator", async () => {
    const { signer, authn } = await setup();
    const other = new FakeIssuer("https://other.example.test");
    expect(await authn(await other.token(signer, {}), T0)).toBeNull();
    expect(await authn("not-a-jwt", T0)).toBeNull();
  });

  it("refuses a wrong audience, an expired token and one not valid yet (nbf beyond 5 minutes)", async () => {
    const { issuer, signer, authn } = await setup();
    const now = Math.floor(T0 / 1000);
    await expect(authn(await issuer.token(signer, { aud: "someone-else" }), T0)).rejects.toThrow(/aud/);
    await expect(authn(await issuer.token(signer, { aud: ["someone-else", AUDIENCE] }), T0)).resolves.toMatchObject({ name: `${ISSUER}#alice-id` });
    await expect(authn(await issuer.token(signer, {}, { iat: now - 700, exp: now - 1 }), T0)).rejects.toThrow(/expired|exp/);
    // exp has no leeway: one second past it is expired; exactly at it still valid (go-oidc's Before).
    await expect(authn(await issuer.token(signer, {}, { iat: now - 600, exp: now }), T0)).resolves.not.toBeNull();
    await expect(authn(await issuer.token(signer, {}, { nbf: now + 301 }), T0)).rejects.toThrow(/nbf/);
    await expect(authn(await issuer.token(signer, {}, { nbf: now + 299 }), T0)).resolves.not.toBeNull();
  });

  it("refuses a token whose iss claims the issuer but whose signature is another key's", async () => {
    const { issuer, authn } = await setup();
    const forger = await makeSigner("k1");
    await expect(authn(await issuer.token(forger, {}), T0)).rejects.toThrow(/signature/);
  });

  it("refuses an algorithm outside the settings", async () => {
    const { issuer, authn } = await setup();
    const ec = await makeSigner("ec1", "ES256");
    issuer.keys.push(ec);
    await expect(authn(await issuer.token(ec, {}), T0)).rejects.toThrow(/unsupported algorithm "ES256"/);
  });

  it("fetches the keys again on an unknown kid, then refuses; within the cooldown it does not fetch", async () => {
    const { issuer, signer, authn } = await setup();
    await authn(await issuer.token(signer, {}), T0);
    const stranger = await makeSigner("unknown");
    await expect(authn(await issuer.token(stranger, {}), T0 + 20_000)).rejects.toThrow(/no key with kid "unknown"/);
    expect(issuer.jwksFetches).toBe(2);
    await expect(authn(await issuer.token(stranger, {}), T0 + 21_000)).rejects.toThrow(/no key with kid "unknown"/);
    expect(issuer.jwksFetches).toBe(2);
  });

  it("follows a key rotation at the issuer: the new kid is fetched, the removed key stops verifying", async () => {
    const { issuer, signer, authn } = await setup();
    const oldToken = await issuer.token(signer, {});
    expect(await authn(oldToken, T0)).not.toBeNull();
    const next = await makeSigner("k2");
    issuer.keys = [next];
    expect(await authn(await issuer.token(next, {}), T0 + 15_000)).toMatchObject({ name: `${ISSUER}#alice-id` });
    expect(issuer.jwksFetches).toBe(2);
    await expect(authn(oldToken, T0 + 40_000)).rejects.toThrow(/no key with kid "k1"/);
  });

  it("fetches a stale key set again before use, and keeps it when the issuer is down", async () => {
    const { issuer, signer, authn } = await setup();
    await authn(await issuer.token(signer, {}), T0);
    await authn(await issuer.token(signer, {}, { iat: Math.floor(T0 / 1000) + 601 }), T0 + 601_000);
    expect(issuer.jwksFetches).toBe(2);
    issuer.down = true;
    expect(await authn(await issuer.token(signer, {}, { iat: Math.floor(T0 / 1000) + 1300 }), T0 + 1_300_000)).not.toBeNull();
  });

  it("verifies a token without kid against every key", async () => {
    const { issuer, signer, authn } = await setup();
    issuer.keys = [await makeSigner("k0"), signer];
    const token = await new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: "x" })
      .setProtectedHeader({ alg: "RS256" })
      .setIssuedAt(Math.floor(T0 / 1000))
      .setExpirationTime(Math.floor(T0 / 1000) + 60)
      .sign(signer.privateKey);
    expect(await authn(token, T0)).toMatchObject({ name: `${ISSUER}#x` });
  });

  it("refuses when discovery names another issuer, and retries discovery after the cooldown", async () => {
    const { issuer, signer, authn } = await setup();
    issuer.discoveryIssuer = "https://evil.example.test";
    const token = await issuer.token(signer, {}, { exp: Math.floor(T0 / 1000) + 3600 });
    await expect(authn(token, T0)).rejects.toThrow(/issuer "https:\/\/evil.example.test" is not/);
    await expect(authn(token, T0 + 1000)).rejects.toThrow(/could not be fetched/);
    expect(issuer.discoveryFetches).toBe(1);
    issuer.discoveryIssuer = ISSUER;
    expect(await authn(token, T0 + 11_000)).not.toBeNull();
  });

  it("does not follow a redirect of the JWKS, nor read a document over its size limit", async () => {
    for (const mode of ["redirect", "huge"] as const) {
      const { issuer, signer, authn } = await setup();
      issuer.jwksMode = mode;
      await expect(authn(await issuer.token(signer, {}), T0), mode).rejects.toThrow(mode === "redirect" ? /HTTP 302/ : /larger than/);
    }
  });

  it("shares one fetch among concurrent first requests", async () => {
    const { issuer, signer, authn } = await setup();
    const tokens = await Promise.all([1, 2, 3].map((i) => issuer.token(signer, { sub: `u${i}` })));
    const users = await Promise.all(tokens.map((t) => authn(t, T0)));
    expect(users.map((u) => u?.name)).toEqual([1, 2, 3].map((i) => `${ISSUER}#u${i}`));
    expect(issuer.jwksFetches).toBe(1);
  });

  it("shares a key set between authenticators", async () => {
    const issuer = new FakeIssuer();
    const signer = await makeSigner("k1");
    issuer.keys = [signer];
    const keySet = new IssuerKeySet(ISSUER, issuer.fetch);
    const a = oidcAuthenticator(settings(), { keySet });
    const b = oidcAuthenticator(settings({ FLOTILLA_OIDC_USERNAME_PREFIX: "-" }), { keySet });
    const token = await issuer.token(signer, {});
    expect((await a(token, T0))?.name).toBe(`${ISSUER}#alice-id`);
    expect((await b(token, T0))?.name).toBe("alice-id");
    expect(issuer.jwksFetches).toBe(1);
  });
});

describe("OIDC claim mapping (Kubernetes' documented cases)", () => {
  const claims = { sub: "1234", email: "jane@example.com", name: "Jane Doe", groups: ["engineering", "infra"] };

  it.each([
    [{}, `${ISSUER}#1234`],
    [{ FLOTILLA_OIDC_USERNAME_PREFIX: "oidc:" }, "oidc:1234"],
    [{ FLOTILLA_OIDC_USERNAME_PREFIX: "-" }, "1234"],
    [{ FLOTILLA_OIDC_USERNAME_CLAIM: "email" }, "jane@example.com"],
    [{ FLOTILLA_OIDC_USERNAME_CLAIM: "email", FLOTILLA_OIDC_USERNAME_PREFIX: "oidc:" }, "oidc:jane@example.com"],
    [{ FLOTILLA_OIDC_USERNAME_CLAIM: "name" }, `${ISSUER}#Jane Doe`],
  ])("settings %j name the user %s", (extra, name) => {
    expect(oidcUser(settings(extra), claims).name).toBe(name);
  });

  it("prefixes groups, takes a single string as one group, none when the claim is absent", () => {
    expect(oidcUser(settings({ FLOTILLA_OIDC_GROUPS_PREFIX: "oidc:" }), claims).groups).toEqual(["oidc:engineering", "oidc:infra"]);
    expect(oidcUser(settings(), { sub: "1", groups: "team1" }).groups).toEqual(["team1"]);
    expect(oidcUser(settings(), { sub: "1" }).groups).toEqual([]);
    expect(oidcUser(settings({ FLOTILLA_OIDC_GROUPS_CLAIM: "roles" }), { sub: "1", roles: ["r"], groups: ["g"] }).groups).toEqual(["r"]);
    expect(() => oidcUser(settings(), { sub: "1", groups: [1, 2] })).toThrow(/neither a string nor a list of strings/);
  });

  it("requires the username claim, a non-empty string", () => {
    expect(() => oidcUser(settings({ FLOTILLA_OIDC_USERNAME_CLAIM: "email" }), { sub: "1" })).toThrow(/claim "email" not present/);
    expect(() => oidcUser(settings(), { sub: "" })).toThrow(/empty/);
    expect(() => oidcUser(settings({ FLOTILLA_OIDC_USERNAME_CLAIM: "n" }), { n: 5 })).toThrow(/not a string/);
  });

  it("with the email claim, requires email_verified to be true when present", () => {
    const email = settings({ FLOTILLA_OIDC_USERNAME_CLAIM: "email" });
    expect(oidcUser(email, { email: "a@x.io", email_verified: true }).name).toBe("a@x.io");
    expect(oidcUser(email, { email: "a@x.io" }).name).toBe("a@x.io");
    expect(() => oidcUser(email, { email: "a@x.io", email_verified: false })).toThrow(/email not verified/);
    expect(() => oidcUser(email, { email: "a@x.io", email_verified: "true" })).toThrow(/email_verified/);
    // Only the email claim looks at email_verified.
    expect(oidcUser(settings(), { sub: "1", email_verified: false }).name).toBe(`${ISSUER}#1`);
  });

  it("refuses system: user names and groups (Kubernetes' recommended user validation rule)", () => {
    expect(() => oidcUser(settings({ FLOTILLA_OIDC_USERNAME_PREFIX: "-" }), { sub: "system:serviceaccount:ci:deployer" })).toThrow(/reserved system: prefix/);
    expect(() => oidcUser(settings(), { sub: "1", groups: ["system:masters"] })).toThrow(/reserved system: prefix/);
    expect(oidcUser(settings({ FLOTILLA_OIDC_GROUPS_PREFIX: "oidc:" }), { sub: "1", groups: ["system:masters"] }).groups).toEqual(["oidc:system:masters"]);
  });

  it("an email-claim token whose email is not verified is a uniform 401 through the chain", async () => {
    const { issuer, signer, authn } = await setup({ FLOTILLA_OIDC_USERNAME_CLAIM: "email" });
    const token = await issuer.token(signer, { email: "a@x.io", email_verified: false });
    const err = await authenticate([authn], token, T0).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Unauthenticated);
    expect((err as Unauthenticated).toStatus()).toMatchObject({ code: 401, reason: "Unauthorized", message: "Unauthorized" });
    expect((err as Unauthenticated).reasons).toEqual(["oidc: email not verified"]);
  });
});
