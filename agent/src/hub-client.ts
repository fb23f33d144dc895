/**
 * Client for the hub's agent API (`/agent/v1`, docs/agent-protocol.md). Every call returns a
 * result value instead of throwing: `{ok: true, status, value}` or `{ok: false, error}` where
 * `error.kind` classifies the failure the way the agent's loop reacts to it.
 */
import type { JWK } from "jose";
import type * as z from "zod/mini";
import type { AddonStatusRequest, AddonTokenRequest, HeartbeatRequest, RegisterRequest, WorkStatusReport } from "../../src/agent-api/protocol.ts";
// The answer schemas' own module (zod/mini), not protocol.ts: the agent loads no classic zod.
import {
  AddonStatusAnswerSchema,
  AddonTokenAnswerSchema,
  ClusterInfoSchema,
  HeartbeatAnswerSchema,
  LeftAnswerSchema,
  PolicyStatusAnswerSchema,
  RotateKeyAnswerSchema,
  WorkStatusAnswerSchema,
  WorksAnswerSchema,
  type AddonStatusAnswer,
  type AddonTokenAnswer,
  type ClusterInfo,
  type HeartbeatAnswer,
  type LeftAnswer,
  type PolicyComplianceReport,
  type PolicyStatusAnswer,
  type RotateKeyAnswer,
  type WorkStatusAnswer,
  type WorksAnswer,
} from "../../src/agent-api/protocol-answers.ts";
import { ecJwkThumbprint, jwsHeader } from "./credentials.ts";
import { httpFetch, type HubFetch, type HubResponse } from "./http-fetch.ts";

/**
 * Answer of `GET /agent/v1/clusters/{name}/works`: `changed: false` for a 304 (the works are as
 * the agent's ETag says), else the hub's list ({@link WorksAnswer}).
 */
export type WorksResponse = { changed: false; etag: string } | ({ changed: true } & WorksAnswer);

/**
 * How a call failed, as the agent reacts to it:
 * - `unreachable`: network error, timeout, 5xx or 429 → retry with backoff, log once;
 * - `unauthorized`: 401 (bad bootstrap token, or the cluster's key is not/no longer registered);
 * - `forbidden`: 403 (not accepted, denied, or another cluster's endpoint);
 * - `conflict`: 409 (cluster ID or name taken);
 * - `invalid`: 400/422 (the hub rejected the body);
 * - `other`: any other status, or a 2xx answer that is not the documented JSON (the answer
 *   schemas of src/agent-api/protocol.ts: a malformed answer is reported as a failure, never thrown).
 */
export type HubFailureKind = "unreachable" | "unauthorized" | "forbidden" | "conflict" | "invalid" | "other";

/** A failed hub call. */
export interface HubFailure {
  kind: HubFailureKind;
  /** HTTP status, absent for network errors. */
  status?: number;
  /** The Status object's `reason` (e.g. `Forbidden`), when the hub sent one. */
  reason?: string;
  /** The Status object's `message`, or a description of the network error. */
  message: string;
  /** The `Retry-After` header in milliseconds, when present on 429/503. */
  retryAfterMs?: number;
}

/** Result of a hub call: the decoded answer, or a classified failure. */
export type HubResult<T> = { ok: true; status: number; value: T } | { ok: false; error: HubFailure };

/** OpenSSL's codes for a server certificate that does not verify against the trusted CAs (Node's `err.code`). */
const UNTRUSTED_CERTIFICATE = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
]);

/**
 * A hint for a hub whose certificate does not verify (`e` or its `cause` carries one of the codes
 * above): how to trust the hub's CA. Empty for any other error.
 */
export function tlsHint(e: Error): string {
  const code = (x: unknown) => (x && typeof x === "object" && "code" in x ? String((x as { code: unknown }).code) : "");
  if (!UNTRUSTED_CERTIFICATE.has(code(e)) && !UNTRUSTED_CERTIFICATE.has(code(e.cause))) return "";
  return " (the hub's certificate is not signed by a CA this agent trusts: run the agent with NODE_EXTRA_CA_CERTS=<the hub's CA file>; a local `FLOTILLA_HTTPS=1 npm start` hub writes it to <state folder>/tls/ca.crt)";
}

/** Options of {@link HubClient}. */
export interface HubClientOptions {
  /** Base URL of the hub, e.g. `http://127.0.0.1:8787` (a trailing slash is ignored). */
  hubUrl: string;
  /** Per-request timeout in milliseconds; default 15 000. */
  timeoutMs?: number;
  /** The fetch implementation; default {@link httpFetch} (node:http(s); the global `fetch` works too). */
  fetch?: HubFetch;
}

function classify(status: number): HubFailureKind {
  if (status === 429 || status >= 500) return "unreachable";
  if (status === 401) return "unauthorized";
  if (status === 403) return "forbidden";
  if (status === 409) return "conflict";
  if (status === 400 || status === 422) return "invalid";
  return "other";
}

/**
 * The failure a Kubernetes `Status` answer means, classified as an HTTP answer with its `code` is
 * (the channel's `error` messages carry the Status the HTTP route would answer, so a refused report
 * is the same failure over either transport: 404 gone, 409 replaced, 422 invalid, ...).
 */
export function failureFromStatus(status: { code: number; reason?: string; message?: string }): HubFailure {
  const error: HubFailure = { kind: classify(status.code), status: status.code, message: status.message || `HTTP ${status.code}` };
  if (status.reason) error.reason = status.reason;
  return error;
}

/**
 * Whether a failed hub call means the hub is not there at all, rather than there and failing:
 * no answer (connection refused or reset, a timeout), or a 502/503/504 without a Kubernetes
 * Status (a proxy or the edge answering for a hub it cannot reach). Only then may a probe
 * ({@link HubClient.live}) cut the agent's backoff short: a hub that answers 5xx or 429 itself
 * is up, and its backoff and `Retry-After` stand.
 */
export function hubAbsent(e: HubFailure): boolean {
  if (e.kind !== "unreachable") return false;
  if (e.status === undefined) return true;
  return (e.status === 502 || e.status === 503 || e.status === 504) && e.reason === undefined;
}

/**
 * Whether a failed call is the hub's own definitive refusal of the agent's credentials: a 401
 * whose body is the hub's Kubernetes Status with reason `Unauthorized` (src/k8s/errors.ts
 * `unauthorized`). A 401 from anything in between (a proxy, an edge, a gateway in front of a
 * hub still starting) carries no such Status and does not count, nor does any other failure
 * (network, 5xx, 429). The agent registers again with its bootstrap token only after several of
 * these in a row (agent.ts, "Recovery" in docs/agent-protocol.md).
 */
export function definitiveRefusal(e: HubFailure): boolean {
  return e.kind === "unauthorized" && e.status === 401 && e.reason === "Unauthorized";
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `"abc"` or `W/"abc"` → `abc`; undefined for a missing header. */
function unquote(etag: string | null): string | undefined {
  if (etag === null) return undefined;
  const m = /^(?:W\/)?"(.*)"$/.exec(etag.trim());
  return m ? m[1] : etag.trim();
}

/** The first problems of a schema check, for a log line: `works[0].metadata.uid: expected string, ...`. */
function describeIssues(error: z.core.$ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length > 0 ? `${i.path.join(".")}: ` : ""}${i.message}`)
    .join("; ");
}

/**
 * Talks to the hub's `/agent/v1` endpoints (with {@link httpFetch} unless told otherwise). Credentials are passed per call
 * (a fresh JWT each time, since the hub refuses a reused `jti`).
 *
 * @example
 * const hub = new HubClient({ hubUrl: "http://127.0.0.1:8787" });
 * const r = await hub.getCluster("c1", await signAgentToken("c1", key));
 * if (r.ok && r.value.hubAcceptsClient) startHeartbeats();
 */
export class HubClient {
  private readonly base: string;
  private readonly timeoutMs: number;
  private readonly fetchImpl: HubFetch;
  /** Key tags the hub handed over (`flotilla-key-tag` answer header), by key ID. */
  private readonly keyTags = new Map<string, string>();

  /**
   * The hub's key tag for `kid`, once an answer handed it over: the agent sends it in its JWT
   * header (`ktag`) so the hub admits its requests without a D1 read (docs/agent-protocol.md).
   */
  keyTag(kid: string): string | undefined {
    return this.keyTags.get(kid);
  }

  /**
   * Keeps the key tag an answer other than a fetch's handed over (the channel's 101 answer): the
   * tag of the key `bearer` (a JWT) was signed with.
   */
  noteKeyTag(bearer: string, tag: string): void {
    try {
      const kid = jwsHeader(bearer).kid;
      if (typeof kid === "string") this.keyTags.set(kid, tag);
    } catch {
      // not a JWT: nothing to tag
    }
  }

  /** The hub's base URL (without a trailing slash). */
  get baseUrl(): string {
    return this.base;
  }

  /** @param options hub URL, timeout (ms) and fetch implementation. */
  constructor(options: HubClientOptions) {
    this.base = options.hubUrl.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? 15_000;
    this.fetchImpl = options.fetch ?? httpFetch;
  }

  /**
   * `GET /livez` without credentials: whether the hub answers 2xx within `timeoutMs`
   * milliseconds (default: the client's timeout). The cheap probe an agent backing off from an
   * absent hub sends every few seconds ({@link hubAbsent}). Never rejects.
   */
  async live(timeoutMs = this.timeoutMs): Promise<boolean> {
    try {
      const res = await this.fetchImpl(`${this.base}/livez`, { method: "GET", headers: { accept: "text/plain" }, signal: AbortSignal.timeout(timeoutMs) });
      await res.text().catch(() => "");
      return res.status >= 200 && res.status < 300;
    } catch {
      return false;
    }
  }

  /**
   * `POST /agent/v1/register` with the bootstrap token (`Bearer <id>.<secret>`).
   * 201/200 → registered; 202 → the key waits for an admin; 401 bad/expired token; 409 ID or
   * name taken; 422 invalid body.
   */
  async register(bootstrapToken: string, body: RegisterRequest): Promise<HubResult<ClusterInfo>> {
    return this.call("POST", "/agent/v1/register", bootstrapToken, body, ClusterInfoSchema, { tagKid: ecJwkThumbprint(body.publicKey) });
  }

  /** `GET /agent/v1/clusters/{name}` with an agent JWT; answers before acceptance too. */
  getCluster(name: string, token: string): Promise<HubResult<ClusterInfo>> {
    return this.call("GET", `/agent/v1/clusters/${encodeURIComponent(name)}`, token, undefined, ClusterInfoSchema);
  }

  /**
   * `POST /agent/v1/clusters/{name}/heartbeat`: renews the lease and reports status; answers the
   * lease duration, the works ETag and whether the cluster is leaving; 403 when not accepted.
   */
  heartbeat(name: string, token: string, body: HeartbeatRequest): Promise<HubResult<HeartbeatAnswer>> {
    return this.call("POST", `/agent/v1/clusters/${encodeURIComponent(name)}/heartbeat`, token, body, HeartbeatAnswerSchema);
  }

  /**
   * `GET /agent/v1/clusters/{name}/works` with `If-None-Match: "<etag>"` when an ETag is known:
   * 200 `{etag, leaving, works}` when the works differ from that ETag, else 304. The agent calls
   * it only when a heartbeat answer's `worksEtag` differs from the ETag it holds, and never asks
   * the hub to hold the request.
   *
   * @param etag the ETag of the last 200 answer (without quotes), or undefined for a full list.
   * @param waitSeconds a long-poll (0–55 seconds) for the tests and benchmarks that exercise the
   *   hub's; the agent never passes it (no `waitSeconds` is sent then).
   */
  async getWorks(name: string, token: string, etag: string | undefined, waitSeconds?: number): Promise<HubResult<WorksResponse>> {
    const wait = waitSeconds === undefined ? undefined : Math.max(0, Math.min(55, Math.floor(waitSeconds)));
    const headers: Record<string, string> = etag !== undefined ? { "if-none-match": `"${etag}"` } : {};
    const path = `/agent/v1/clusters/${encodeURIComponent(name)}/works${wait === undefined ? "" : `?waitSeconds=${wait}`}`;
    let notModified: WorksResponse | undefined;
    const r = await this.call("GET", path, token, undefined, WorksAnswerSchema, {
      headers,
      timeoutMs: (wait ?? 0) * 1000 + this.timeoutMs,
      notModified: (res) => {
        notModified = { changed: false, etag: etag ?? unquote(res.headers.get("etag")) ?? "" };
      },
    });
    if (!r.ok) return r;
    return { ok: true, status: r.status, value: notModified ?? { changed: true, ...r.value } };
  }

  /**
   * `PUT /agent/v1/clusters/{name}/works/{work}/status` with `{uid, status}`: 200
   * `{resourceVersion}`; 404 (kind `other`, status 404) the work is gone; 409 (kind `conflict`)
   * the uid differs, the work was replaced.
   */
  putWorkStatus(name: string, work: string, token: string, body: WorkStatusReport): Promise<HubResult<WorkStatusAnswer>> {
    return this.call("PUT", `/agent/v1/clusters/${encodeURIComponent(name)}/works/${encodeURIComponent(work)}/status`, token, body, WorkStatusAnswerSchema);
  }

  /**
   * `PUT /agent/v1/clusters/{name}/policies/{policy}/status` with a compliance report: 200
   * `{resourceVersion}`; 404 the replicated Policy is gone; 409 its uid differs.
   */
  putPolicyStatus(name: string, policy: string, token: string, body: PolicyComplianceReport): Promise<HubResult<PolicyStatusAnswer>> {
    return this.call(
      "PUT",
      `/agent/v1/clusters/${encodeURIComponent(name)}/policies/${encodeURIComponent(policy)}/status`,
      token,
      body,
      PolicyStatusAnswerSchema,
    );
  }

  /** `POST /agent/v1/clusters/{name}/left` with `{}`: 200 once the hub took note; 409 when the cluster is not leaving. */
  left(name: string, token: string): Promise<HubResult<LeftAnswer>> {
    return this.call("POST", `/agent/v1/clusters/${encodeURIComponent(name)}/left`, token, {}, LeftAnswerSchema);
  }

  /**
   * `POST /agent/v1/clusters/{name}/addons/status` with the changed `Available` conditions of the
   * cluster's add-ons: 200 `{}`; 403 when the cluster is not accepted; 400/422 an invalid body.
   */
  addonStatus(name: string, token: string, body: AddonStatusRequest): Promise<HubResult<AddonStatusAnswer>> {
    return this.call("POST", `/agent/v1/clusters/${encodeURIComponent(name)}/addons/status`, token, body, AddonStatusAnswerSchema);
  }

  /**
   * `POST /agent/v1/clusters/{name}/addons/{addon}/token`: a token of the add-on's ServiceAccount
   * (`{token, expirationTimestamp}`, a secret: never logged); 404 no such add-on, 409 an add-on
   * without a `kubeClient` registration or being deleted.
   */
  addonToken(name: string, addon: string, token: string, body: AddonTokenRequest): Promise<HubResult<AddonTokenAnswer>> {
    return this.call("POST", `/agent/v1/clusters/${encodeURIComponent(name)}/addons/${encodeURIComponent(addon)}/token`, token, body, AddonTokenAnswerSchema);
  }

  /**
   * `POST /agent/v1/clusters/{name}/rotate-key` signed with the current key, with a proof signed
   * by the new one ({@link signProof}); the old key stays valid 5 minutes.
   */
  async rotateKey(name: string, token: string, publicKey: JWK, proof: string): Promise<HubResult<RotateKeyAnswer>> {
    return this.call("POST", `/agent/v1/clusters/${encodeURIComponent(name)}/rotate-key`, token, { publicKey, proof }, RotateKeyAnswerSchema, {
      tagKid: ecJwkThumbprint(publicKey),
    });
  }

  /**
   * One hub call: sends `body` as JSON, decodes a 2xx answer with `answer` (an answer schema of
   * src/agent-api/protocol.ts; a body it refuses is a failure of kind `other`) and an error answer as
   * a Kubernetes Status. A 304, for a call that expects one (`notModified`, which is told), is
   * ok with no value. Never rejects.
   */
  private async call<T>(
    method: "GET" | "POST" | "PUT",
    path: string,
    bearer: string,
    body: unknown,
    answer: z.ZodMiniType<T>,
    extra: { headers?: Record<string, string>; timeoutMs?: number; tagKid?: string; notModified?: (res: HubResponse) => void } = {},
  ): Promise<HubResult<T>> {
    let res: HubResponse;
    const timeoutMs = extra.timeoutMs ?? this.timeoutMs;
    try {
      res = await this.fetchImpl(this.base + path, {
        method,
        headers: {
          authorization: `Bearer ${bearer}`,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...extra.headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      const cause = e.cause instanceof Error ? `: ${e.cause.message}` : "";
      const message = e.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : `${e.message}${cause}${tlsHint(e)}`;
      return { ok: false, error: { kind: "unreachable", message } };
    }
    const tag = res.headers.get("flotilla-key-tag");
    if (tag && res.status < 400) {
      let kid = extra.tagKid;
      try {
        const k = jwsHeader(bearer).kid;
        kid ??= typeof k === "string" ? k : undefined;
      } catch {
        // not a JWT: nothing to tag
      }
      if (kid) this.keyTags.set(kid, tag);
    }
    if (res.status === 304 && extra.notModified) {
      await res.body?.cancel().catch(() => undefined);
      extra.notModified(res);
      return { ok: true, status: 304, value: undefined as T };
    }
    const text = await res.text().catch(() => "");
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (res.status >= 200 && res.status < 300) {
      const checked = answer.safeParse(parsed);
      if (!checked.success) {
        const why = parsed === undefined ? `not JSON: ${text.slice(0, 200)}` : describeIssues(checked.error);
        return { ok: false, error: { kind: "other", status: res.status, message: `malformed answer to ${method} ${path.replace(/\?.*$/, "")}: ${why}` } };
      }
      return { ok: true, status: res.status, value: checked.data };
    }
    const status = isRecord(parsed) ? parsed : {};
    const error: HubFailure = {
      kind: classify(res.status),
      status: res.status,
      message:
        typeof status.message === "string" && status.message
          ? status.message
          : `HTTP ${res.status}${text && !isRecord(parsed) ? `: ${text.slice(0, 200)}` : ""}`,
    };
    if (typeof status.reason === "string") error.reason = status.reason;
    const retryAfter = res.headers.get("retry-after");
    if (retryAfter && /^\d+$/.test(retryAfter)) error.retryAfterMs = Number(retryAfter) * 1000;
    return { ok: false, error };
  }
}
