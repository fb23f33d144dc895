/**
 * The admin token and the authentication chain (src/auth/authn.ts): the admin token is
 * `flotilla:admin` in `system:masters`; the chain tries OIDC, ServiceAccount tokens and the admin
 * token in order and answers every failure with the same 401 `Unauthorized` Status.
 */
import { describe, expect, it } from "vitest";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { adminAuthenticator, authenticate, safeEqual, Unauthenticated, withAuthenticatedGroup, type Authenticator } from "../../src/auth/authn.ts";
import { oidcAuthenticator, parseOidcSettings, type Fetch } from "../../src/auth/oidc.ts";
import {
  generateHubKey,
  issueServiceAccountToken,
  parseHubKeys,
  serviceAccountTokenAuthenticator,
  staticKeySource,
} from "../../src/auth/serviceaccount-token.ts";

const ADMIN_TOKEN = "s3cr3t-admin-token-0123456789abcdef";
const T0 = Date.parse("2026-11-26T10:00:00Z");

describe("the admin token", () => {
  it("is flotilla:admin in system:masters (and system:authenticated through the chain)", async () => {
    const admin = adminAuthenticator(ADMIN_TOKEN);
    expect(await admin(ADMIN_TOKEN, T0)).toEqual({ name: "flotilla:admin", groups: ["system:masters"] });
    expect(await authenticate([admin], ADMIN_TOKEN, T0)).toEqual({ name: "flotilla:admin", groups: ["system:masters", "system:authenticated"] });
  });

  it("is not anyone else's token, and an unset admin token admits nobody", async () => {
    expect(await adminAuthenticator(ADMIN_TOKEN)(`${ADMIN_TOKEN}x`, T0)).toBeNull();
    expect(await adminAuthenticator(ADMIN_TOKEN)(ADMIN_TOKEN.slice(0, -1), T0)).toBeNull();
    expect(await adminAuthenticator(undefined)("", T0)).toBeNull();
    expect(await adminAuthenticator("")("", T0)).toBeNull();
  });

  it("compares by hashes (safeEqual), whatever the lengths", async () => {
    expect(await safeEqual("a", "a")).toBe(true);
    expect(await safeEqual("a", "ab")).toBe(false);
    expect(await safeEqual("", "")).toBe(true);
  });

  it("adds system:authenticated once", () => {
    expect(withAuthenticatedGroup({ name: "u", groups: ["system:authenticated", "g"] }).groups).toEqual(["system:authenticated", "g"]);
    expect(withAuthenticatedGroup({ name: "u" }).groups).toEqual(["system:authenticated"]);
  });
});

describe("the chain", () => {
  async function chain() {
    const issuerUrl = "https://issuer.example.test";
    const { privateKey, publicKey } = await generateKeyPair("RS256");
    const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    const serve: Fetch = (url) =>
      Promise.resolve(
        url === `${issuerUrl}/.well-known/openid-configuration`
          ? Response.json({ issuer: issuerUrl, jwks_uri: `${issuerUrl}/jwks` })
          : url === `${issuerUrl}/jwks`
            ? Response.json({ keys: [jwk] })
            : new Response("not found", { status: 404 }),
      );
    const oidc = oidcAuthenticator(
      parseOidcSettings({ FLOTILLA_OIDC_ISSUER_URL: issuerUrl, FLOTILLA_OIDC_AUDIENCE: "flotilla", FLOTILLA_OIDC_USERNAME_PREFIX: "oidc:" })!,
      { fetch: serve },
    );
    const hub = { issuer: "https://hub.example.test", keys: staticKeySource(await parseHubKeys(JSON.stringify({ keys: [await generateHubKey()] }))) };
    const sas = new Map([["ci/deployer", "uid-1"]]);
    const sa = serviceAccountTokenAuthenticator(hub, (ns, name) => Promise.resolve(sas.get(`${ns}/${name}`)));
    const authenticators: Authenticator[] = [oidc, sa, adminAuthenticator(ADMIN_TOKEN)];
    const oidcToken = (claims: Record<string, unknown>, exp = Math.floor(T0 / 1000) + 600) =>
      new SignJWT({ iss: issuerUrl, aud: "flotilla", ...claims }).setProtectedHeader({ alg: "RS256", kid: "k1" }).setExpirationTime(exp).sign(privateKey);
    const saToken = async () => (await issueServiceAccountToken(hub, { namespace: "ci", name: "deployer", uid: "uid-1" }, {}, T0)).token;
    return { authenticators, oidcToken, saToken, sas };
  }

  it("answers each kind of token with its user", async () => {
    const { authenticators, oidcToken, saToken } = await chain();
    expect(await authenticate(authenticators, await oidcToken({ sub: "alice", groups: ["dev"] }), T0)).toEqual({
      name: "oidc:alice",
      groups: ["dev", "system:authenticated"],
    });
    expect(await authenticate(authenticators, await saToken(), T0)).toMatchObject({
      name: "system:serviceaccount:ci:deployer",
      uid: "uid-1",
      groups: ["system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"],
    });
    expect(await authenticate(authenticators, ADMIN_TOKEN, T0)).toEqual({ name: "flotilla:admin", groups: ["system:masters", "system:authenticated"] });
  });

  it("answers every failure with the same 401 Unauthorized Status, whatever failed", async () => {
    const { authenticators, oidcToken, saToken, sas } = await chain();
    const revoked = await saToken();
    sas.delete("ci/deployer");
    const failures: [string, string | null][] = [
      ["no token", null],
      ["empty token", ""],
      ["a wrong admin token", `${ADMIN_TOKEN}0`],
      ["garbage", "definitely-not-a-token"],
      ["an expired OIDC token", await oidcToken({ sub: "alice" }, Math.floor(T0 / 1000) - 10)],
      ["an OIDC token for another audience", await oidcToken({ sub: "alice", aud: "other" })],
      ["an OIDC token without its username claim", await oidcToken({})],
      ["a token of a deleted ServiceAccount", revoked],
    ];
    const statuses = [];
    for (const [what, token] of failures) {
      const err = await authenticate(authenticators, token, T0).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, what).toBeInstanceOf(Unauthenticated);
      statuses.push((err as Unauthenticated).toStatus());
      // The reasons are for the log; none carries the token.
      if (token) for (const r of (err as Unauthenticated).reasons) expect(r).not.toContain(token);
    }
    expect(new Set(statuses.map((s) => JSON.stringify(s))).size).toBe(1);
    expect(statuses[0]).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: "Unauthorized",
      reason: "Unauthorized",
      code: 401,
    });
  });

  it("tries the next authenticator after one that throws", async () => {
    const broken: Authenticator = () => Promise.reject(new Error("issuer unreachable"));
    expect(await authenticate([broken, adminAuthenticator(ADMIN_TOKEN)], ADMIN_TOKEN, T0)).toMatchObject({ name: "flotilla:admin" });
    const err = (await authenticate([broken], ADMIN_TOKEN, T0).catch((e: unknown) => e)) as Unauthenticated;
    expect(err.reasons).toEqual(["issuer unreachable"]);
  });
});
