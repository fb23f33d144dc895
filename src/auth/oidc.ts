/**
 * OpenID Connect ID tokens as kube-apiserver's `--oidc-*` flags define them, as a pure module: the
 * settings (`FLOTILLA_OIDC_*`, parsed with zod), the issuer's keys (discovery, JWKS, cached,
 * refreshed on an unknown `kid`) fetched through an injected `fetch`, and the authenticator that
 * maps a verified token's claims to a user.
 *
 * Semantics sources (facts carried over, not code): the Kubernetes authentication documentation
 * ("OpenID Connect Tokens": the flags, their defaults and prefix rules, `email_verified`);
 * `k8s.io/apiserver/plugin/pkg/authenticator/token/oidc` (a token whose `iss` is not the issuer is
 * not this authenticator's; a groups claim may be one string or a list of strings; the discovery
 * document's `issuer` must equal the configured URL); `github.com/coreos/go-oidc` (the `aud` must
 * contain the client ID, `exp` is required and checked without leeway, `nbf` with 5 minutes of
 * leeway, only the configured signing algorithms are accepted, a token without `kid` is tried
 * against every key, an unknown `kid` makes the key set be fetched again).
 */
import { importJWK, jwtVerify, type CryptoKey, type JWK, type JWTPayload } from "jose";
import { z } from "zod";
import { AuthenticationFailure, peekIssuer, type Authenticator, type UserInfo } from "./authn.ts";

// ---------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------

/** The signing algorithms kube-apiserver's `--oidc-signing-algs` accepts (its default: `RS256`). */
export const OIDC_SIGNING_ALGS = ["RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512"] as const;

/** The hub's OIDC settings as environment variables (wrangler.toml vars, `npm start` environment). */
export interface OidcEnv {
  /** `--oidc-issuer-url`: https (or http on a loopback address); OIDC is off when unset. */
  FLOTILLA_OIDC_ISSUER_URL?: string;
  /** `--oidc-client-id`: the audience every token must carry (required with an issuer). */
  FLOTILLA_OIDC_AUDIENCE?: string;
  /** `--oidc-username-claim` (default `sub`). */
  FLOTILLA_OIDC_USERNAME_CLAIM?: string;
  /** `--oidc-username-prefix` (default: `<issuer>#` unless the claim is `email`; `-`: none). */
  FLOTILLA_OIDC_USERNAME_PREFIX?: string;
  /** `--oidc-groups-claim` (default `groups`). */
  FLOTILLA_OIDC_GROUPS_CLAIM?: string;
  /** `--oidc-groups-prefix` (default none). */
  FLOTILLA_OIDC_GROUPS_PREFIX?: string;
  /** `--oidc-signing-algs`: comma-separated (default `RS256`). */
  FLOTILLA_OIDC_SIGNING_ALGS?: string;
}

/** The parsed OIDC settings (see {@link parseOidcSettings}). */
export interface OidcSettings {
  /** The issuer URL exactly as configured; tokens' `iss` must equal it. */
  issuerUrl: string;
  /** The client ID tokens' `aud` must contain. */
  audience: string;
  usernameClaim: string;
  /** The effective prefix ("" for none), defaults already applied. */
  usernamePrefix: string;
  groupsClaim: string;
  groupsPrefix: string;
  signingAlgs: readonly string[];
}

const LOOPBACK_HOSTS = new Set(["localhost", "[::1]"]);

/**
 * True when `hostname` (as `URL.hostname` writes it) is a loopback address: `localhost`,
 * `127.0.0.0/8` or `[::1]`.
 */
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname.toLowerCase()) || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/**
 * Why `value` is not a URL the hub fetches an issuer's documents from, or null when it is: it must
 * be an absolute `https` URL (or `http` on a loopback address, for local use) without user info,
 * query or fragment (kube-apiserver's issuer URL validation, with Flotilla's loopback exception).
 */
export function issuerUrlProblem(value: string): string | null {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return "must be an absolute URL";
  }
  if (u.protocol !== "https:" && !(u.protocol === "http:" && isLoopbackHost(u.hostname))) return "must use the https scheme (http only on a loopback address)";
  if (u.username || u.password) return "must not contain user info";
  if (u.search || value.includes("?")) return "must not contain a query";
  if (u.hash || value.includes("#")) return "must not contain a fragment";
  return null;
}

const trimmed = z
  .string()
  .transform((s) => s.trim())
  .optional();

const OidcEnvSchema = z
  .object({
    FLOTILLA_OIDC_ISSUER_URL: z.string().trim().min(1),
    FLOTILLA_OIDC_AUDIENCE: z
      .string({ error: "is required when FLOTILLA_OIDC_ISSUER_URL is set" })
      .trim()
      .min(1, "is required when FLOTILLA_OIDC_ISSUER_URL is set"),
    FLOTILLA_OIDC_USERNAME_CLAIM: trimmed,
    FLOTILLA_OIDC_USERNAME_PREFIX: z.string().optional(),
    FLOTILLA_OIDC_GROUPS_CLAIM: trimmed,
    FLOTILLA_OIDC_GROUPS_PREFIX: z.string().optional(),
    FLOTILLA_OIDC_SIGNING_ALGS: trimmed,
  })
  .superRefine((env, ctx) => {
    const problem = issuerUrlProblem(env.FLOTILLA_OIDC_ISSUER_URL);
    if (problem) ctx.addIssue({ code: "custom", path: ["FLOTILLA_OIDC_ISSUER_URL"], message: problem });
    for (const alg of (env.FLOTILLA_OIDC_SIGNING_ALGS || "RS256").split(",").map((a) => a.trim())) {
      if (!(OIDC_SIGNING_ALGS as readonly string[]).includes(alg)) {
        ctx.addIssue({
          code: "custom",
          path: ["FLOTILLA_OIDC_SIGNING_ALGS"],
          message: `unsupported algorithm ${JSON.stringify(alg)}, supported: ${OIDC_SIGNING_ALGS.join(", ")}`,
        });
      }
    }
  });

/**
 * Parses the hub's OIDC settings, applying kube-apiserver's defaults: username claim `sub`;
 * username prefix, when unset, `<issuer URL>#` for any claim but `email` (no prefix for `email`),
 * and `-` meaning no prefix at all; groups claim `groups` (the issue's default; kube-apiserver's
 * flag has none); no groups prefix; signing algorithms `RS256`. Returns null when
 * `FLOTILLA_OIDC_ISSUER_URL` is unset or empty (OIDC off).
 *
 * @example parseOidcSettings({ FLOTILLA_OIDC_ISSUER_URL: "https://dex.example.com", FLOTILLA_OIDC_AUDIENCE: "flotilla" })
 * // { issuerUrl: "https://dex.example.com", audience: "flotilla", usernameClaim: "sub",
 * //   usernamePrefix: "https://dex.example.com#", groupsClaim: "groups", groupsPrefix: "", signingAlgs: ["RS256"] }
 * @throws Error naming each bad variable and why (an https issuer, a missing audience, an unknown
 *   algorithm); the message never repeats a value other than an algorithm name.
 */
export function parseOidcSettings(env: OidcEnv): OidcSettings | null {
  if (!env.FLOTILLA_OIDC_ISSUER_URL?.trim()) return null;
  const parsed = OidcEnvSchema.safeParse(env);
  if (!parsed.success) {
    const why = parsed.error.issues.map((i) => `${String(i.path[0] ?? "OIDC settings")}: ${i.message}`).join("; ");
    throw new Error(`invalid OIDC settings: ${why}`);
  }
  const e = parsed.data;
  const usernameClaim = e.FLOTILLA_OIDC_USERNAME_CLAIM || "sub";
  const rawPrefix = e.FLOTILLA_OIDC_USERNAME_PREFIX;
  let usernamePrefix: string;
  if (rawPrefix === "-") usernamePrefix = "";
  else if (rawPrefix) usernamePrefix = rawPrefix;
  else usernamePrefix = usernameClaim === "email" ? "" : `${e.FLOTILLA_OIDC_ISSUER_URL}#`;
  return {
    issuerUrl: e.FLOTILLA_OIDC_ISSUER_URL,
    audience: e.FLOTILLA_OIDC_AUDIENCE,
    usernameClaim,
    usernamePrefix,
    groupsClaim: e.FLOTILLA_OIDC_GROUPS_CLAIM || "groups",
    groupsPrefix: e.FLOTILLA_OIDC_GROUPS_PREFIX ?? "",
    signingAlgs: (e.FLOTILLA_OIDC_SIGNING_ALGS || "RS256").split(",").map((a) => a.trim()),
  };
}

// ---------------------------------------------------------------------------
// The issuer's keys
// ---------------------------------------------------------------------------

/** A `fetch` (the platform's, or a test's that serves an issuer in-process). */
export type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

/** Timings of {@link IssuerKeySet}, milliseconds. */
export interface KeySetTimings {
  /** Least time between two fetches of the keys (an unknown `kid` within it fails without a fetch). Default 10 000. */
  cooldownMs?: number;
  /** Age after which cached keys are fetched again before use (kept if that fetch fails). Default 600 000. */
  maxAgeMs?: number;
  /** Time limit of one HTTP request. Default 5 000. */
  timeoutMs?: number;
}

const DiscoverySchema = z.looseObject({ issuer: z.string(), jwks_uri: z.string() });
const JwksSchema = z.looseObject({
  keys: z.array(z.looseObject({ kty: z.string(), kid: z.string().optional(), use: z.string().optional(), alg: z.string().optional() })),
});

/** The largest discovery document or JWKS read, in bytes (a hostile issuer cannot fill memory). */
const MAX_DOCUMENT_BYTES = 256 * 1024;

async function fetchJson(fetchFn: Fetch, url: string, timeoutMs: number): Promise<unknown> {
  // Redirects are not followed ("manual": a 3xx is not ok), so the issuer's documents come from where it said.
  const res = await fetchFn(url, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
  if (!res.ok || Number(res.headers.get("content-length") ?? 0) > MAX_DOCUMENT_BYTES) {
    await res.body?.cancel();
    throw new Error(`GET ${url}: ${res.ok ? `document larger than ${MAX_DOCUMENT_BYTES} bytes` : `HTTP ${res.status}`}`);
  }
  const text = await res.text();
  if (text.length > MAX_DOCUMENT_BYTES) throw new Error(`GET ${url}: document larger than ${MAX_DOCUMENT_BYTES} bytes`);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`GET ${url}: not JSON`);
  }
}

/**
 * An OIDC issuer's signing keys: discovery (`<issuer>/.well-known/openid-configuration`, whose
 * `issuer` must equal the configured one and whose `jwks_uri` must be https, or http on a loopback
 * address), then the JWKS at `jwks_uri`. Keys are cached; a token whose `kid` is not among them
 * makes the set be fetched again (at most once per `cooldownMs`, concurrent callers sharing one
 * fetch), and a set older than `maxAgeMs` is fetched again before use (a key the issuer removed
 * stops verifying). Times come from the `now` each call passes (src/clock.ts).
 */
export class IssuerKeySet {
  private keys: JWK[] | null = null;
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private attemptedAt = Number.NEGATIVE_INFINITY;
  private inFlight: Promise<void> | null = null;
  private readonly imported = new Map<string, Promise<CryptoKey>>();
  private readonly cooldownMs: number;
  private readonly maxAgeMs: number;
  private readonly timeoutMs: number;

  constructor(
    readonly issuerUrl: string,
    private readonly fetchFn: Fetch = (input, init) => fetch(input, init),
    timings: KeySetTimings = {},
  ) {
    this.cooldownMs = timings.cooldownMs ?? 10_000;
    this.maxAgeMs = timings.maxAgeMs ?? 600_000;
    this.timeoutMs = timings.timeoutMs ?? 5_000;
  }

  /**
   * The cached keys that may have signed a token with header `kid` (all keys when it has none),
   * fetching the set first when there is none yet, it is older than `maxAgeMs`, or (outside the
   * cooldown) no cached key has this `kid`.
   *
   * @throws Error when the set cannot be had at all (discovery or JWKS unreachable or invalid).
   */
  async candidates(kid: string | undefined, now: number): Promise<JWK[]> {
    const stale = this.keys === null || now - this.fetchedAt >= this.maxAgeMs;
    if (stale) await this.refresh(now, this.keys !== null);
    let found = this.select(kid);
    if (found.length === 0 && kid !== undefined && !stale) {
      await this.refresh(now, true);
      found = this.select(kid);
    }
    return found;
  }

  /** The imported public key of `jwk` for `alg`, cached. */
  importKey(jwk: JWK, alg: string): Promise<CryptoKey> {
    const id = `${alg}\0${JSON.stringify(jwk)}`;
    let key = this.imported.get(id);
    if (!key) {
      key = importJWK(jwk, alg).then((k) => {
        if (k instanceof Uint8Array) throw new Error("not an asymmetric key");
        return k;
      });
      key.catch(() => this.imported.delete(id));
      this.imported.set(id, key);
    }
    return key;
  }

  private select(kid: string | undefined): JWK[] {
    return (this.keys ?? []).filter((k) => (kid === undefined || k.kid === kid) && (k.use === undefined || k.use === "sig"));
  }

  /** Fetches the set unless one was fetched within the cooldown; `keepOnError` keeps the old keys when the fetch fails. */
  private async refresh(now: number, keepOnError: boolean): Promise<void> {
    if (this.inFlight) return this.inFlight;
    if (now - this.attemptedAt < this.cooldownMs) {
      if (this.keys === null) throw new Error(`the keys of ${this.issuerUrl} could not be fetched; retrying after the cooldown`);
      return;
    }
    this.attemptedAt = now;
    this.inFlight = (async () => {
      try {
        this.keys = await this.load();
        this.fetchedAt = now;
        this.imported.clear();
      } catch (e) {
        if (!keepOnError || this.keys === null) throw e;
      } finally {
        this.inFlight = null;
      }
    })();
    return this.inFlight;
  }

  private async load(): Promise<JWK[]> {
    const discoveryUrl = `${this.issuerUrl.replace(/\/+$/, "")}/.well-known/openid-configuration`;
    const discovery = DiscoverySchema.safeParse(await fetchJson(this.fetchFn, discoveryUrl, this.timeoutMs));
    if (!discovery.success) throw new Error(`${discoveryUrl}: not an OpenID provider configuration (issuer and jwks_uri are required)`);
    if (discovery.data.issuer !== this.issuerUrl)
      throw new Error(`${discoveryUrl}: issuer ${JSON.stringify(discovery.data.issuer)} is not ${JSON.stringify(this.issuerUrl)}`);
    const jwksUri = discovery.data.jwks_uri;
    const problem = issuerUrlProblem(jwksUri.split("?")[0]!);
    if (problem) throw new Error(`${discoveryUrl}: jwks_uri ${problem}`);
    const jwks = JwksSchema.safeParse(await fetchJson(this.fetchFn, jwksUri, this.timeoutMs));
    if (!jwks.success) throw new Error(`${jwksUri}: not a JWK Set`);
    return jwks.data.keys as JWK[];
  }
}

// ---------------------------------------------------------------------------
// The authenticator
// ---------------------------------------------------------------------------

/** The leeway on `nbf`, seconds (go-oidc's 5 minutes; `exp` has none). */
export const OIDC_NBF_LEEWAY_SECONDS = 300;

/** What {@link oidcAuthenticator} needs besides the settings. */
export interface OidcOptions {
  /** The `fetch` the issuer's documents are read with (default the platform's). */
  fetch?: Fetch;
  /** Cache timings of the issuer's keys. */
  timings?: KeySetTimings;
  /** A key set to share (default one made from `fetch` and `timings`). */
  keySet?: IssuerKeySet;
}

function claimString(payload: JWTPayload, claim: string): string {
  const v = payload[claim];
  if (v === undefined) throw new AuthenticationFailure(`oidc: claim ${JSON.stringify(claim)} not present`);
  if (typeof v !== "string") throw new AuthenticationFailure(`oidc: claim ${JSON.stringify(claim)} is not a string`);
  if (v === "") throw new AuthenticationFailure(`oidc: claim ${JSON.stringify(claim)} is empty`);
  return v;
}

function claimGroups(payload: JWTPayload, claim: string): string[] {
  const v = payload[claim];
  if (v === undefined || v === null) return [];
  if (typeof v === "string") return [v];
  if (Array.isArray(v) && v.every((g) => typeof g === "string")) return v as string[];
  throw new AuthenticationFailure(`oidc: claim ${JSON.stringify(claim)} is neither a string nor a list of strings`);
}

/**
 * The user a verified token's claims name, as kube-apiserver maps them: the username claim
 * (a non-empty string) after the username prefix; with the `email` claim, `email_verified`, when
 * present, must be `true`; the groups claim (absent: no groups; a string: one group; else a list of
 * strings) each after the groups prefix. A user name or group starting with `system:` is refused,
 * the user validation rule Kubernetes' documentation recommends for every JWT issuer (an issuer
 * must not mint `system:masters` or a ServiceAccount's name).
 *
 * @throws AuthenticationFailure naming the claim that does not map.
 */
export function oidcUser(settings: OidcSettings, payload: JWTPayload): UserInfo {
  const raw = claimString(payload, settings.usernameClaim);
  if (settings.usernameClaim === "email" && payload.email_verified !== undefined) {
    if (typeof payload.email_verified !== "boolean") throw new AuthenticationFailure("oidc: parse 'email_verified' claim: not a boolean");
    if (!payload.email_verified) throw new AuthenticationFailure("oidc: email not verified");
  }
  const name = settings.usernamePrefix + raw;
  const groups = claimGroups(payload, settings.groupsClaim).map((g) => settings.groupsPrefix + g);
  if (name.startsWith("system:")) throw new AuthenticationFailure("oidc: username cannot use the reserved system: prefix");
  if (groups.some((g) => g.startsWith("system:"))) throw new AuthenticationFailure("oidc: groups cannot use the reserved system: prefix");
  return { name, groups };
}

/**
 * The OIDC token authenticator. A token that is not a JWT, or whose (unverified) `iss` is not
 * the configured issuer, is not this authenticator's (`null`). Otherwise the token must: have a
 * header `alg` among the settings' signing algorithms; verify with one of the issuer's keys (by
 * `kid`; every key when it has none; an unknown `kid` fetches the keys again); carry `aud`
 * containing the audience; carry `exp` after `now` (no leeway) and any `nbf` at most 5 minutes
 * after `now`; and map to a user ({@link oidcUser}).
 *
 * @throws AuthenticationFailure (or the key set's Error) when the token is the issuer's but does
 *   not verify or map.
 */
export function oidcAuthenticator(settings: OidcSettings, options: OidcOptions = {}): Authenticator {
  const keySet = options.keySet ?? new IssuerKeySet(settings.issuerUrl, options.fetch, options.timings);
  return async (token, now) => {
    const peeked = peekIssuer(token);
    if (!peeked || peeked.iss !== settings.issuerUrl) return null;
    const header = peeked.header;
    const alg = header.alg;
    if (typeof alg !== "string" || !settings.signingAlgs.includes(alg))
      throw new AuthenticationFailure(`oidc: token signed with unsupported algorithm ${JSON.stringify(String(alg))}`);
    const kid = typeof header.kid === "string" ? header.kid : undefined;
    const candidates = (await keySet.candidates(kid, now)).filter((k) => k.alg === undefined || k.alg === alg);
    if (candidates.length === 0)
      throw new AuthenticationFailure(
        kid === undefined ? "oidc: the issuer has no key for this token" : `oidc: no key with kid ${JSON.stringify(kid)} at the issuer`,
      );
    let payload: JWTPayload | undefined;
    let lastError = "oidc: the signature does not verify";
    for (const jwk of candidates) {
      let key: CryptoKey;
      try {
        key = await keySet.importKey(jwk, alg);
      } catch {
        continue;
      }
      try {
        // nbf (and exp) with go-oidc's 5 minutes of leeway here; exp again below without any.
        ({ payload } = await jwtVerify(token, key, {
          algorithms: [alg],
          issuer: settings.issuerUrl,
          audience: settings.audience,
          requiredClaims: ["exp"],
          currentDate: new Date(now),
          clockTolerance: OIDC_NBF_LEEWAY_SECONDS,
        }));
        break;
      } catch (e) {
        lastError = `oidc: ${(e as Error).message}`;
        if ((e as { code?: string }).code !== "ERR_JWS_SIGNATURE_VERIFICATION_FAILED") throw new AuthenticationFailure(lastError);
      }
    }
    if (!payload) throw new AuthenticationFailure(lastError);
    if (typeof payload.exp !== "number" || payload.exp * 1000 < now) throw new AuthenticationFailure("oidc: token is expired");
    return oidcUser(settings, payload);
  };
}
