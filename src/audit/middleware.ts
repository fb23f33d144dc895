/**
 * The audit middleware: outermost on `/api` and `/apis` (src/index.ts), it lets the request run,
 * answers every response with its `Audit-Id` header (kube-apiserver's), and records the requests
 * src/audit/event.ts `isAudited` selects (writes, 403s, 401s; and every request through the proxy to a member cluster, src/api/proxy.ts) as `audit.k8s.io/v1` Events at level
 * Metadata. The record is built from what the request and its answer hold (no I/O). A write of
 * one object that commits stores it in its own D1 batch (the route hands the store the request's
 * `audit` variable, src/api/context.ts `PendingAudit`, src/store/types.ts `CommitAudit`): no D1
 * call of its own, and the record commits exactly when the write does. Any other audited request's
 * record is stored after the response (`ctx.waitUntil`): the answer never waits on D1 for it, and
 * a failure to record is logged (without the record) and never fails the request.
 *
 * What it reads of the request, after it ran: the Hono variables `authenticatedUser` and `user`
 * (src/auth/rbac.ts `UserInfo`, set by authentication; `user` is the impersonated user when the
 * request impersonated one, recorded as the event's `impersonatedUser` beside the authenticated
 * `user`, as kube-apiserver does), `attributes` (`RequestAttributes`, set by authorization) and
 * `createdName` (a create's name, set by the write: one named by `generateName` is recorded under
 * the name it got; without it a copy of the answer is read back), the response's status, and `c.error` (the ApiError a handler threw: its Status becomes the
 * event's responseStatus; an `Unauthenticated` carries the authenticators' reasons, recorded as
 * the annotation {@link AUTHN_REASONS_ANNOTATION}). When `attributes` is absent the verb and
 * objectRef come from the method and URL (`requestInfo`); a request without `user` (a failed
 * authentication, or an agent's credential refused on the API) is recorded with `user: {}`, as
 * kube-apiserver records a failed authentication. Never recorded: the bearer token, request and response
 * bodies (level Metadata), any header but `User-Agent`.
 */
import type { Context, MiddlewareHandler } from "hono";
import { ApiError, type Status } from "../k8s/errors.ts";
import { Unauthenticated } from "../auth/authn.ts";
import type { ApiVariables, PendingAudit } from "../api/context.ts";
import { clock } from "../clock.ts";
import type { Env } from "../env.ts";
import {
  AUDIT_ID_HEADER,
  AUTHN_REASONS_ANNOTATION,
  buildAuditEvent,
  COLO_ANNOTATION,
  DECISION_ANNOTATION,
  infoOfAttributes,
  isAudited,
  requestInfo,
  responseStatusOf,
  type AuditEvent,
  type RequestInfo,
} from "./event.ts";
import { appendAuditEvent, auditLimits, auditRetentionDays, auditRowOf, replaceAuditEvent } from "./log.ts";
import { edgeLocation } from "../edge.ts";
import { isNonResourceRequest } from "../auth/rbac-types.ts";
import { requestUrl } from "../k8s/request-url.ts";

/**
 * The Hono variables the audit reads (src/api/context.ts): absent when the request failed before
 * they were set (a 401 has no `user`; a request refused before authorization has no `attributes`).
 */
export type AuditVariables = Partial<ApiVariables>;

type AuditContext = Context<{ Bindings: Env; Variables: AuditVariables }>;

/** Largest response body read back for a failure's Status or a created object's name, in bytes. */
const MAX_READ_BACK_BYTES = 64 * 1024;

/** The request info, from the authorization attributes when set (else from the method and URL). */
function infoOf(c: AuditContext): RequestInfo {
  const attrs = c.get("attributes");
  return attrs ? infoOfAttributes(attrs) : requestInfo(c.req.method, c.req.url);
}

/**
 * Reads a small JSON response body back from a copy of the response: a
 * failure's Status, or the object a create made. Undefined for anything else, a body over
 * {@link MAX_READ_BACK_BYTES}, or one that does not parse.
 */
async function readBack(res: Response): Promise<Record<string, unknown> | undefined> {
  if (!(res.headers.get("content-type") ?? "").startsWith("application/json") || !res.body) return undefined;
  const length = Number(res.headers.get("content-length") ?? "0");
  if (length > MAX_READ_BACK_BYTES) return undefined;
  const text = await res.text();
  if (text.length > MAX_READ_BACK_BYTES) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The audit middleware of `/api` and `/apis` (see the module comment): records what
 * src/audit/event.ts `isAudited` selects and answers every response with `Audit-Id`. Mount it
 * before every other handler: `app.use("/api/*", auditRequests)`. The agent endpoints are not
 * audited: their failed authentications are strangers' (counted by the limiter,
 * src/auth/ratelimit.ts), and recording them would let strangers grow the hub's storage.
 */
export const auditRequests: MiddlewareHandler<{ Bindings: Env; Variables: AuditVariables }> = async (c, next) => {
  const receivedAt = clock.now();
  const auditID = crypto.randomUUID();
  c.set("audit", pendingAudit(c, auditID, receivedAt));
  await next();
  await recordAfter(c, auditID, receivedAt);
};

/** What {@link auditEventOf} records of a request besides what its context holds. */
interface Outcome {
  auditID: string;
  /** Epoch milliseconds. */
  receivedAt: number;
  /** Epoch milliseconds. */
  completedAt: number;
  /** The answer's HTTP code. */
  code: number;
  /** The answer's Status, for a failure. */
  status?: Pick<Status, "reason" | "message" | "details">;
  /** A create's name, when the path names none. */
  name?: string;
  /** The authenticators' reasons of a failed authentication. */
  authnReasons?: readonly string[];
}

/** The audit Event of the request of `c` with outcome `o` (no I/O). */
function auditEventOf(c: AuditContext, o: Outcome): AuditEvent {
  const info = infoOf(c);
  const acting = c.get("user");
  const user = c.get("authenticatedUser") ?? acting;
  const impersonated = acting && acting !== user ? acting : undefined;
  if (o.code < 300 && info.objectRef && !info.objectRef.name && o.name !== undefined) info.objectRef.name = o.name;
  const url = requestUrl(c.req.raw);
  const annotations: Record<string, string> = {};
  const colo = edgeLocation(c.req.raw);
  if (colo) annotations[COLO_ANNOTATION] = colo;
  if (o.authnReasons && o.authnReasons.length > 0) annotations[AUTHN_REASONS_ANNOTATION] = o.authnReasons.join("; ");
  const who = o.code === 401 ? undefined : user;
  if (o.code === 403) annotations[DECISION_ANNOTATION] = "forbid";
  else if (who) annotations[DECISION_ANNOTATION] = "allow";
  return buildAuditEvent({
    auditID: o.auditID,
    requestURI: url.pathname + url.search,
    info,
    sourceIP: c.req.header("cf-connecting-ip")?.trim(),
    userAgent: c.req.header("user-agent"),
    responseStatus: responseStatusOf(o.code, o.status, c.req.header("authorization")),
    receivedAt: o.receivedAt,
    completedAt: o.completedAt,
    user: who,
    impersonatedUser: who ? impersonated : undefined,
    annotations,
  });
}

/**
 * The request's audit record as its write commits it (src/api/context.ts `PendingAudit`): built
 * when the commit is prepared, with the object's name and the code the write answers on success,
 * stamped then (the answer follows the commit with no further I/O); its retention `limits` are
 * decided then too (read once per commit prepared: a request that commits nothing, a read, counts
 * as no append of the isolate's, src/audit/log.ts `auditLimits`).
 */
function pendingAudit(c: AuditContext, auditID: string, receivedAt: number): PendingAudit {
  return {
    row: (name, code) => auditRowOf(auditEventOf(c, { auditID, receivedAt, completedAt: clock.now(), code, name })),
    get limits() {
      return auditLimits(clock.now(), auditRetentionDays(c.env.FLOTILLA_AUDIT_RETENTION_DAYS));
    },
  };
}

/**
 * Sets the response's `Audit-Id` and, when the request is audited and its write did not commit
 * its record already with the code answered, stores its record after the response
 * (`waitUntil`). The one thing read before the response goes out is, for a create or a failure
 * without its error at hand, the small JSON body the handler already built in memory (a copy; no
 * I/O), so that the record never waits on the client reading its answer. Never throws.
 */
async function recordAfter(c: AuditContext, auditID: string, receivedAt: number): Promise<void> {
  const completedAt = clock.now();
  try {
    try {
      c.res.headers.set(AUDIT_ID_HEADER, auditID);
    } catch {
      // Immutable headers (a response passed through from elsewhere): answer a copy (a proxied
      // WebSocket's 101 keeps its socket).
      const headers = new Headers(c.res.headers);
      headers.set(AUDIT_ID_HEADER, auditID);
      c.res = c.res.webSocket
        ? new Response(null, { status: 101, webSocket: c.res.webSocket, headers })
        : new Response(c.res.body, { status: c.res.status, statusText: c.res.statusText, headers });
    }
    const code = c.res.status;
    const committed = c.get("audit")?.committed;
    // Committed with the write, as answered: nothing more to store.
    if (committed === code) return;
    // Every request through the proxy to a member cluster is recorded (docs/proxy.md), reads too.
    // A read that authorization let through (nearly every request) is decided from its
    // attributes as set, without building the record's request info.
    const attrs = c.get("attributes");
    if (attrs && !isAudited(attrs.verb, code) && (isNonResourceRequest(attrs) || attrs.subresource !== "proxy")) return;
    const info = infoOf(c);
    if (!isAudited(info.verb, code) && info.objectRef?.subresource !== "proxy") return;
    const failure = c.error instanceof ApiError ? c.error : undefined;
    // Everything is read and built now: the request and response are not to be touched once
    // answered, and no header but what the record shows is kept.
    // A create's name, as the write set it (no copy of the answer read back).
    const created = code < 300 ? c.get("createdName") : undefined;
    const readsBack = (!failure && code >= 400) || (code < 300 && info.verb === "create" && !info.objectRef?.name && created === undefined);
    const body = readsBack ? await readBack(c.res.clone()) : undefined;
    let status: Pick<Status, "reason" | "message" | "details"> | undefined = failure?.toStatus();
    if (!status && body?.kind === "Status") status = body as unknown as Status;
    const bodyName = (body?.metadata as { name?: unknown } | undefined)?.name;
    const event = auditEventOf(c, {
      auditID,
      receivedAt,
      completedAt,
      code,
      status,
      name: created ?? (typeof bodyName === "string" ? bodyName : undefined),
      authnReasons: failure instanceof Unauthenticated ? failure.reasons : undefined,
    });
    const store = async () => {
      if (committed !== undefined) await replaceAuditEvent(c.env, event);
      else await appendAuditEvent(c.env, event, clock.now(), auditRetentionDays(c.env.FLOTILLA_AUDIT_RETENTION_DAYS));
    };
    c.executionCtx.waitUntil(
      store().catch((e: unknown) => {
        // The error's message only: never the event (it names the user) nor the request.
        console.error("audit: a record was not stored:", e instanceof Error ? e.message : String(e));
      }),
    );
  } catch (e) {
    console.error("audit: a request was not recorded:", e instanceof Error ? e.message : String(e));
  }
}
