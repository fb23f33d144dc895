import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, call, createNamespaces, createToken, register, withClockAhead, SECRETS } from "./helpers.ts";
import { waitFor } from "../wait.ts";
import { clock } from "../../src/clock.ts";
import { isAudited, microTime, requestInfo } from "../../src/audit/event.ts";
import { AUDIT_EXPIRY_EVERY_APPENDS, AUTH_FAILURE_RECORDS_PER_MINUTE } from "../../src/audit/log.ts";
import { auditRequests, type AuditVariables } from "../../src/audit/middleware.ts";
import { Unauthenticated } from "../../src/auth/authn.ts";
import { forbiddenError, type ResourceAttributes } from "../../src/auth/rbac-types.ts";
import { statusResponse } from "../../src/api/request.ts";
import type { Env } from "../../src/env.ts";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { Hono } from "hono";
import { ApiError } from "../../src/k8s/errors.ts";

const AUDIT = "/apis/flotilla.dev/v1alpha1/auditevents";
const TABLE = { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" };
const DAY_MS = 86_400_000;
const from = (ip: string, extra: Record<string, string> = {}) => ({ "cf-connecting-ip": ip, "user-agent": "audit-test/1.0", ...extra });

/** The stored Event of a request, by its Audit-Id header, once the record (written after the response) is there. */
async function recorded(auditID: string | null) {
  expect(auditID).toMatch(/^[0-9a-f-]{36}$/);
  const row = await waitFor(`audit record ${auditID}`, () =>
    env.DB.prepare("SELECT body FROM audit_events WHERE audit_id = ?").bind(auditID).first<{ body: string }>(),
  );
  return JSON.parse(row!.body);
}

/** Makes a write, waits for its record, and returns the record's sequence number. */
async function auditedWrite(ns: string, name: string) {
  const r = await call("POST", SECRETS(ns), { apiVersion: "v1", kind: "Secret", metadata: { name } });
  expect(r.status).toBe(201);
  await recorded(r.headers.get("audit-id"));
  return r.headers.get("audit-id")!;
}

describe("audit log: request info (kube-apiserver's RequestInfoFactory)", () => {
  const u = (path: string) => `https://hub.test${path}`;
  it.each([
    ["GET", "/api/v1/namespaces", { verb: "list", objectRef: { resource: "namespaces", apiVersion: "v1" } }],
    ["GET", "/api/v1/namespaces/a", { verb: "get", objectRef: { resource: "namespaces", namespace: "a", name: "a", apiVersion: "v1" } }],
    [
      "PUT",
      "/api/v1/namespaces/a/finalize",
      { verb: "update", objectRef: { resource: "namespaces", namespace: "a", name: "a", subresource: "finalize", apiVersion: "v1" } },
    ],
    ["GET", "/api/v1/namespaces/a/secrets?watch=true", { verb: "watch", objectRef: { resource: "secrets", namespace: "a", apiVersion: "v1" } }],
    ["GET", "/api/v1/secrets?watch=0", { verb: "list", objectRef: { resource: "secrets", apiVersion: "v1" } }],
    [
      "POST",
      "/api/v1/namespaces/ci/serviceaccounts/bot/token",
      { verb: "create", objectRef: { resource: "serviceaccounts", namespace: "ci", name: "bot", subresource: "token", apiVersion: "v1" } },
    ],
    [
      "PATCH",
      "/apis/cluster.open-cluster-management.io/v1/managedclusters/c1/status",
      {
        verb: "patch",
        objectRef: { resource: "managedclusters", name: "c1", subresource: "status", apiGroup: "cluster.open-cluster-management.io", apiVersion: "v1" },
      },
    ],
    [
      "DELETE",
      "/apis/work.open-cluster-management.io/v1/namespaces/c1/manifestworks",
      { verb: "deletecollection", objectRef: { resource: "manifestworks", namespace: "c1", apiGroup: "work.open-cluster-management.io", apiVersion: "v1" } },
    ],
    [
      "DELETE",
      "/apis/work.open-cluster-management.io/v1/namespaces/c1/manifestworks/w%20x",
      { verb: "delete", objectRef: { resource: "manifestworks", namespace: "c1", name: "w x", apiGroup: "work.open-cluster-management.io", apiVersion: "v1" } },
    ],
    ["GET", "/apis", { verb: "get" }],
    ["GET", "/apis/flotilla.dev/v1alpha1", { verb: "get" }],
    ["POST", "/agent/v1/register", { verb: "post" }],
  ])("%s %s", (method, path, want) => {
    expect(requestInfo(method, u(path))).toEqual(want);
  });

  it("records writes, 401s and 403s; MicroTime has six digits", () => {
    expect(["create", "update", "patch", "delete", "deletecollection"].every((v) => isAudited(v, 200))).toBe(true);
    expect(isAudited("get", 200) || isAudited("list", 404) || isAudited("watch", 429)).toBe(false);
    expect(isAudited("get", 401) && isAudited("list", 403)).toBe(true);
    expect(microTime(Date.UTC(2026, 10, 26, 11, 50, 0, 123))).toBe("2026-11-26T11:50:00.123000Z");
  });
});

describe("audit log: the identity contract (c.var.user, c.var.attributes, Unauthenticated, forbiddenError)", () => {
  const alice = { name: "alice", uid: "u-1", groups: ["team-a", "system:authenticated"], extra: { "scopes.example.com": ["deploy"] } };
  const attrs: ResourceAttributes = {
    verb: "create",
    apiGroup: "cluster.open-cluster-management.io",
    apiVersion: "v1beta1",
    resource: "placements",
    namespace: "team-b",
  };
  /** An app shaped as the wired hub will be: the audit outermost, authentication and authorization inside, errors as Status. */
  function app(inner: (c: { set: (k: "user" | "attributes", v: unknown) => void }) => void) {
    const a = new Hono<{ Bindings: Env; Variables: AuditVariables }>();
    a.use("/apis/*", auditRequests);
    const api = new Hono<{ Bindings: Env; Variables: AuditVariables }>();
    api.use("*", async (c, next) => {
      inner({ set: (k, v) => c.set(k, v as never) });
      await next();
    });
    api.post("/*", (c) => c.json({ metadata: { name: "made" } }, 201));
    api.onError((err) => (err instanceof ApiError ? statusResponse(err) : Promise.reject(err)));
    a.route("/apis", api);
    return async (path: string) => {
      const ctx = createExecutionContext();
      const res = await a.fetch(new Request(`https://hub.test${path}`, { method: "POST", headers: { authorization: "Bearer some-oidc-jwt-3c9d" } }), env, ctx);
      await waitOnExecutionContext(ctx);
      return recorded(res.headers.get("audit-id"));
    };
  }
  const path = "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/team-b/placements";

  it("records the authenticated user (groups, uid, extra) and the authorization attributes", async () => {
    const e = await app((c) => {
      c.set("user", alice);
      c.set("attributes", attrs);
    })(path);
    expect(e).toMatchObject({
      verb: "create",
      user: { username: "alice", uid: "u-1", groups: alice.groups, extra: alice.extra },
      objectRef: { resource: "placements", namespace: "team-b", name: "made", apiGroup: "cluster.open-cluster-management.io", apiVersion: "v1beta1" },
      responseStatus: { code: 201 },
      annotations: { "authorization.k8s.io/decision": "allow" },
    });
  });

  it("decides a read from the attributes set: not recorded, unless through the proxy or denied", async () => {
    const a = new Hono<{ Bindings: Env; Variables: AuditVariables }>();
    a.use("/apis/*", auditRequests);
    a.use("/apis/*", async (c, next) => {
      const subresource = c.req.query("sub");
      c.set("user", alice);
      c.set("attributes", { ...attrs, verb: "get", name: "p1", ...(subresource ? { subresource } : {}) });
      await next();
    });
    a.get("/apis/*", (c) => (c.req.query("deny") ? statusResponse(forbiddenError(alice, { ...attrs, verb: "get", name: "p1" })) : c.json({ ok: true })));
    /** The request's record once its `waitUntil` work finished (null: none was stored). */
    const get = async (query: string) => {
      const ctx = createExecutionContext();
      const res = await a.fetch(new Request(`https://hub.test${path}/p1?${query}`), env, ctx);
      await waitOnExecutionContext(ctx);
      const row = await env.DB.prepare("SELECT body FROM audit_events WHERE audit_id = ?").bind(res.headers.get("audit-id")).first<{ body: string }>();
      return row && JSON.parse(row.body);
    };
    expect(await get("")).toBeNull();
    expect(await get("sub=status")).toBeNull();
    expect(await get("sub=proxy")).toMatchObject({ verb: "get", objectRef: { subresource: "proxy", name: "p1" }, responseStatus: { code: 200 } });
    expect(await get("deny=1")).toMatchObject({ verb: "get", responseStatus: { code: 403 }, annotations: { "authorization.k8s.io/decision": "forbid" } });
  });

  it("records a forbiddenError as a denied request by that user, with its Status", async () => {
    const e = await app((c) => {
      c.set("user", alice);
      c.set("attributes", attrs);
      throw forbiddenError(alice, attrs);
    })(path);
    expect(e).toMatchObject({
      user: { username: "alice" },
      responseStatus: { status: "Failure", reason: "Forbidden", code: 403 },
      annotations: { "authorization.k8s.io/decision": "forbid" },
    });
    expect(e.responseStatus.message).toContain('User "alice" cannot create resource "placements"');
  });

  it("records Unauthenticated with the authenticators' reasons, never the token", async () => {
    const e = await app(() => {
      throw new Unauthenticated(["oidc: token expired", "serviceaccount: not a ServiceAccount token"]);
    })(path);
    expect(e).toMatchObject({
      user: {},
      responseStatus: { reason: "Unauthorized", code: 401, message: "Authentication failed, attempted: bearer" },
      annotations: { "flotilla.dev/authentication-failure-reasons": "oidc: token expired; serviceaccount: not a ServiceAccount token" },
    });
    expect(JSON.stringify(e)).not.toContain("some-oidc-jwt-3c9d");
  });
});

describe("audit log: recording", () => {
  beforeAll(() => createNamespaces("audit-a", "audit-b"));

  it("records an allowed write as an audit.k8s.io/v1 Event at level Metadata, with Audit-Id", async () => {
    const before = clock.now();
    const r = await call(
      "POST",
      SECRETS("audit-a"),
      { apiVersion: "v1", kind: "Secret", metadata: { name: "db" }, stringData: { password: "hunter2-audit" } },
      { headers: from("203.0.113.7") },
    );
    expect(r.status).toBe(201);
    const e = await recorded(r.headers.get("audit-id"));
    expect(e).toMatchObject({
      kind: "Event",
      apiVersion: "audit.k8s.io/v1",
      level: "Metadata",
      auditID: r.headers.get("audit-id"),
      stage: "ResponseComplete",
      requestURI: "/api/v1/namespaces/audit-a/secrets",
      verb: "create",
      user: { username: "flotilla:admin", groups: ["system:masters", "system:authenticated"] },
      sourceIPs: ["203.0.113.7"],
      userAgent: "audit-test/1.0",
      // The name comes from the created object, as kube-apiserver fills objectRef from the object.
      objectRef: { resource: "secrets", namespace: "audit-a", name: "db", apiVersion: "v1" },
      responseStatus: { metadata: {}, code: 201 },
      annotations: { "authorization.k8s.io/decision": "allow" },
    });
    expect(e.responseStatus.status).toBeUndefined();
    expect(e.requestReceivedTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(e.stageTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(Date.parse(e.requestReceivedTimestamp)).toBeGreaterThanOrEqual(before - 1);
    expect(Date.parse(e.stageTimestamp)).toBeGreaterThanOrEqual(Date.parse(e.requestReceivedTimestamp));
    // Level Metadata: no request or response body, so no secret value.
    expect(JSON.stringify(e)).not.toContain("hunter2-audit");
    expect(JSON.stringify(e)).not.toContain(btoa("hunter2-audit"));
  });

  it("records subresource writes, dry runs and failed writes, with the failure's Status", async () => {
    const dry = await call("POST", `${SECRETS("audit-a")}?dryRun=All`, { apiVersion: "v1", kind: "Secret", metadata: { name: "dry" } });
    expect(dry.status).toBe(201);
    expect(await recorded(dry.headers.get("audit-id"))).toMatchObject({
      verb: "create",
      requestURI: "/api/v1/namespaces/audit-a/secrets?dryRun=All",
      responseStatus: { code: 201 },
    });

    const bad = await call("POST", SECRETS("audit-a"), { apiVersion: "v1", kind: "Secret", metadata: { name: "Not_A_Name" } });
    expect(bad.status).toBe(422);
    const e = await recorded(bad.headers.get("audit-id"));
    expect(e).toMatchObject({ verb: "create", responseStatus: { metadata: {}, status: "Failure", reason: "Invalid", code: 422 } });
    expect(e.responseStatus.message).toContain("Not_A_Name");

    // A refused Secret: its Status (and so the record) redacts the value.
    const badData = await call("POST", SECRETS("audit-a"), {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "bad-data" },
      data: { key: "zz-not-base64-value-77!" },
    });
    expect(badData.status).toBe(422);
    const redacted = await recorded(badData.headers.get("audit-id"));
    expect(redacted.responseStatus).toMatchObject({ reason: "Invalid", code: 422 });
    expect(JSON.stringify(redacted)).not.toContain("zz-not-base64-value-77");

    const ns = await call("PUT", "/api/v1/namespaces/audit-b/status", (await call("GET", "/api/v1/namespaces/audit-b")).body);
    expect(ns.status).toBe(200);
    expect(await recorded(ns.headers.get("audit-id"))).toMatchObject({
      verb: "update",
      objectRef: { resource: "namespaces", namespace: "audit-b", name: "audit-b", subresource: "status", apiVersion: "v1" },
    });

    const del = await call("DELETE", `${SECRETS("audit-a")}/missing`);
    expect(del.status).toBe(404);
    expect(await recorded(del.headers.get("audit-id"))).toMatchObject({
      verb: "delete",
      objectRef: { name: "missing" },
      responseStatus: { reason: "NotFound", code: 404 },
    });

    const all = await call("DELETE", `${SECRETS("audit-b")}?labelSelector=none%3Dhere`);
    expect(all.status).toBe(200);
    expect(await recorded(all.headers.get("audit-id"))).toMatchObject({ verb: "deletecollection", objectRef: { resource: "secrets", namespace: "audit-b" } });
  });

  it("commits a write's record with the write: there with the answer, once; a lost create recorded with its 409", async () => {
    const rowsOf = async (auditID: string | null) =>
      (await env.DB.prepare("SELECT code, body FROM audit_events WHERE audit_id = ?").bind(auditID).all<{ code: number; body: string }>()).results;
    const created = await call("POST", SECRETS("audit-a"), { apiVersion: "v1", kind: "Secret", metadata: { generateName: "batch-" } });
    expect(created.status).toBe(201);
    const name = (created.body as { metadata: { name: string } }).metadata.name;
    // In the write's own batch: stored before the answer went out, under the name the create made.
    const [row] = await rowsOf(created.headers.get("audit-id"));
    expect(row?.code).toBe(201);
    expect(JSON.parse(row!.body)).toMatchObject({
      auditID: created.headers.get("audit-id"),
      verb: "create",
      objectRef: { resource: "secrets", namespace: "audit-a", name, apiVersion: "v1" },
      responseStatus: { metadata: {}, code: 201 },
      annotations: { "authorization.k8s.io/decision": "allow" },
    });
    const patched = await call("PATCH", `${SECRETS("audit-a")}/${name}`, { metadata: { labels: { a: "b" } } }, { contentType: "application/merge-patch+json" });
    expect(patched.status).toBe(200);
    expect((await rowsOf(patched.headers.get("audit-id"))).map((r) => r.code)).toEqual([200]);

    // Two creates of one name at once: one commits (its record with it), the other is refused and recorded after its answer.
    const body = { apiVersion: "v1", kind: "Secret", metadata: { name: "batch-race" } };
    const both = await Promise.all([call("POST", SECRETS("audit-a"), body), call("POST", SECRETS("audit-a"), body)]);
    expect(both.map((r) => r.status).sort()).toEqual([201, 409]);
    const lost = both.find((r) => r.status === 409)!;
    expect(await recorded(lost.headers.get("audit-id"))).toMatchObject({ verb: "create", responseStatus: { reason: "AlreadyExists", code: 409 } });
    // Each request recorded once, with its own answer's code (a later record shows the earlier ones' stores are done).
    await auditedWrite("audit-a", "batch-after");
    for (const r of [created, patched, ...both]) expect((await rowsOf(r.headers.get("audit-id"))).map((x) => x.code)).toEqual([r.status]);
  });

  it("records failed authentications (401) with no user and kube-apiserver's message, never the token", async () => {
    const bad = await call("GET", "/apis/cluster.open-cluster-management.io/v1/managedclusters", undefined, {
      token: "not-the-admin-token-5f3a",
      headers: from("198.51.100.9"),
    });
    expect(bad.status).toBe(401);
    const e = await recorded(bad.headers.get("audit-id"));
    expect(e).toMatchObject({
      verb: "list",
      user: {},
      sourceIPs: ["198.51.100.9"],
      objectRef: { resource: "managedclusters", apiGroup: "cluster.open-cluster-management.io", apiVersion: "v1" },
      responseStatus: { metadata: {}, status: "Failure", reason: "Unauthorized", message: "Authentication failed, attempted: bearer", code: 401 },
    });
    expect(e.user.username).toBeUndefined();
    const none = await call("GET", "/apis", undefined, { token: null });
    expect(none.status).toBe(401);
    const n = await recorded(none.headers.get("audit-id"));
    expect(n).toMatchObject({ verb: "get", requestURI: "/apis", responseStatus: { message: "Authentication failed, no credentials provided", code: 401 } });
    expect(n.objectRef).toBeUndefined();
    const rows = await env.DB.prepare("SELECT body FROM audit_events").all<{ body: string }>();
    expect(rows.results.map((r) => r.body).join("\n")).not.toContain("not-the-admin-token-5f3a");
    expect(rows.results.map((r) => r.body).join("\n")).not.toContain(ADMIN);
  });

  it("records denied requests (403)", async () => {
    const { keys } = await register(await createToken({ autoApprove: true }), "audit-agent", "id-audit-agent");
    const denied = await call("GET", "/apis/cluster.open-cluster-management.io/v1/managedclusters", undefined, { token: await keys.sign("audit-agent") });
    expect(denied.status).toBe(403);
    expect(await recorded(denied.headers.get("audit-id"))).toMatchObject({
      verb: "list",
      responseStatus: { status: "Failure", reason: "Forbidden", code: 403 },
      annotations: { "authorization.k8s.io/decision": "forbid" },
    });
  });

  it("annotates the edge location that served the request (request.cf.colo)", async () => {
    const { exports } = await import("cloudflare:workers");
    const res = await exports.default.fetch(`https://hub.test${SECRETS("audit-a")}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ apiVersion: "v1", kind: "Secret", metadata: { name: "from-fra" } }),
      cf: { colo: "FRA" },
    } as RequestInit);
    expect(res.status).toBe(201);
    expect((await recorded(res.headers.get("audit-id"))).annotations).toMatchObject({ "flotilla.dev/colo": "FRA" });
  });

  it("does not audit the agent endpoints: a heartbeat writes nothing, and neither does a stranger's forged one", async () => {
    const { keys } = await register(await createToken({ autoApprove: true }), "audit-hb", "id-audit-hb");
    const before = await env.DB.prepare("SELECT coalesce(max(seq), 0) AS n FROM audit_events").first<number>("n");
    const hb = { healthy: true };
    const ok = await call("POST", "/agent/v1/clusters/audit-hb/heartbeat", hb, { token: await keys.sign("audit-hb") });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("audit-id")).toBeNull();
    const bad = await call("POST", "/agent/v1/clusters/audit-hb/heartbeat", hb, { token: "forged.agent.token-9b1e", headers: from("192.0.2.44") });
    expect(bad.status).toBe(401);
    // A write on the API after them is recorded: once it is, nothing before it was.
    const marker = await call("POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: "audit-hb-marker" } });
    expect(marker.status).toBe(201);
    await recorded(marker.headers.get("audit-id"));
    expect(await env.DB.prepare("SELECT count(*) AS n FROM audit_events WHERE seq > ?").bind(before).first("n")).toBe(1);
  });

  it("keeps at most 60 failed authentications a minute: strangers cannot grow the log at will", async () => {
    const windowStart = Date.now() - 60_000;
    const earlier = (await env.DB.prepare("SELECT count(*) AS n FROM audit_events WHERE code = 401 AND received_at >= ?")
      .bind(windowStart)
      .first<number>("n"))!;
    const before = await env.DB.prepare("SELECT coalesce(max(seq), 0) AS n FROM audit_events").first<number>("n");
    for (let i = 0; i < 70; i++) expect((await call("GET", "/apis", undefined, { token: `stranger-${i}`, headers: from(`198.51.100.${i}`) })).status).toBe(401);
    const expected = Math.max(0, AUTH_FAILURE_RECORDS_PER_MINUTE - earlier);
    await waitFor(
      "the kept failures",
      async () => (await env.DB.prepare("SELECT count(*) AS n FROM audit_events WHERE seq > ?").bind(before).first<number>("n")) === expected,
    );
    expect(await env.DB.prepare("SELECT count(*) AS n FROM audit_events WHERE code = 401 AND received_at >= ?").bind(windowStart).first("n")).toBe(
      AUTH_FAILURE_RECORDS_PER_MINUTE,
    );
  });

  it("does not record reads that succeed, though they carry an Audit-Id", async () => {
    const read = await call("GET", SECRETS("audit-a"));
    expect(read.status).toBe(200);
    const readID = read.headers.get("audit-id");
    expect(readID).toMatch(/^[0-9a-f-]{36}$/);
    await auditedWrite("audit-a", "after-read");
    expect(await env.DB.prepare("SELECT count(*) AS n FROM audit_events WHERE audit_id = ?").bind(readID).first("n")).toBe(0);
  });

  it("keeps records FLOTILLA_AUDIT_RETENTION_DAYS (30) days: an insert a minute or more after the last delete deletes the expired ones", async () => {
    const old = await auditedWrite("audit-b", "old");
    const at29 = await withClockAhead(29 * DAY_MS, () => auditedWrite("audit-b", "day29"));
    // 29 days on, the first record is within its 30 days.
    expect(await env.DB.prepare("SELECT count(*) AS n FROM audit_events WHERE audit_id = ?").bind(old).first("n")).toBe(1);
    await withClockAhead(31 * DAY_MS, () => auditedWrite("audit-b", "day31"));
    expect(await env.DB.prepare("SELECT count(*) AS n FROM audit_events WHERE audit_id = ?").bind(old).first("n")).toBe(0);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM audit_events WHERE audit_id = ?").bind(at29).first("n")).toBe(1);
  });

  it(`deletes expired records at most once a minute per isolate, or at every ${AUDIT_EXPIRY_EVERY_APPENDS}th record since`, async () => {
    const probe = async (id: string) => {
      // An expired record, older than any other (received at the epoch's first millisecond): the next delete takes it first.
      await env.DB.prepare(
        "INSERT INTO audit_events (audit_id, received_at, username, verb, resource, namespace, code, body) VALUES (?, 1, '', 'create', '', '', 201, '{}')",
      )
        .bind(id)
        .run();
      return async () => (await env.DB.prepare("SELECT count(*) AS n FROM audit_events WHERE audit_id = ?").bind(id).first("n")) === 1;
    };
    const later = 200 * DAY_MS;
    // A write long after any other: the isolate's delete is due (it deletes whatever expired).
    await withClockAhead(later, () => auditedWrite("audit-b", "minute-0"));
    const first = await probe("expired-probe-1");
    // 10 s on: not due; the expired record stays.
    await withClockAhead(later + 10_000, () => auditedWrite("audit-b", "minute-0-10s"));
    expect(await first()).toBe(true);
    // A minute on: due again.
    await withClockAhead(later + 61_000, () => auditedWrite("audit-b", "minute-1"));
    expect(await first()).toBe(false);
    // Within the same minute, the delete is due again at the AUDIT_EXPIRY_EVERY_APPENDSth record since.
    const second = await probe("expired-probe-2");
    await withClockAhead(later + 62_000, async () => {
      for (let i = 1; i < AUDIT_EXPIRY_EVERY_APPENDS; i++) await auditedWrite("audit-b", `burst-${i}`);
    });
    expect(await second()).toBe(true);
    await withClockAhead(later + 63_000, () => auditedWrite("audit-b", `burst-${AUDIT_EXPIRY_EVERY_APPENDS}`));
    expect(await second()).toBe(false);
  });
});

describe("audit log: AuditEvents API", () => {
  beforeAll(() => createNamespaces("audit-r"));

  it("is in discovery with verbs list and watch", async () => {
    const list = await call("GET", "/apis/flotilla.dev/v1alpha1");
    expect(list.body.resources).toContainEqual({
      name: "auditevents",
      singularName: "auditevent",
      namespaced: false,
      kind: "AuditEvent",
      verbs: ["list", "watch"],
      shortNames: [],
    });
    const aggregated = await call("GET", "/apis", undefined, { headers: { accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" } });
    const group = aggregated.body.items.find((g: { metadata: { name: string } }) => g.metadata.name === "flotilla.dev");
    expect(group.versions[0].resources).toContainEqual(expect.objectContaining({ resource: "auditevents", scope: "Cluster", verbs: ["list", "watch"] }));
  });

  it("is in the OpenAPI documents (v3 of flotilla.dev/v1alpha1 and v2): list and watch of the collection only", async () => {
    const v3 = (await call("GET", "/openapi/v3/apis/flotilla.dev/v1alpha1")).body;
    expect(v3.components.schemas["dev.flotilla.v1alpha1.AuditEvent"]).toMatchObject({
      "x-kubernetes-group-version-kind": [{ group: "flotilla.dev", version: "v1alpha1", kind: "AuditEvent" }],
    });
    expect(v3.components.schemas["dev.flotilla.v1alpha1.AuditEvent"].properties.user.properties.groups).toEqual({
      type: "array",
      description: "The user's groups.",
      items: { type: "string" },
    });
    expect(Object.keys(v3.paths).filter((p) => p.includes("auditevents"))).toEqual(["/apis/flotilla.dev/v1alpha1/auditevents"]);
    expect(Object.keys(v3.paths["/apis/flotilla.dev/v1alpha1/auditevents"])).toEqual(["get"]);
    const v2 = (await call("GET", "/openapi/v2")).body;
    expect(v2.definitions["dev.flotilla.v1alpha1.AuditEventList"].properties.items.items).toEqual({ $ref: "#/definitions/dev.flotilla.v1alpha1.AuditEvent" });
  });

  it("lists AuditEvents with field selectors, a time range and paging", async () => {
    const start = new Date(clock.now() - 1000).toISOString();
    const a = await auditedWrite("audit-r", "one");
    const b = await auditedWrite("audit-r", "two");
    const c = await auditedWrite("audit-r", "three");
    const all = await call(
      "GET",
      `${AUDIT}?fieldSelector=${encodeURIComponent("objectRef.namespace=audit-r,objectRef.resource=secrets,verb=create,user.username=flotilla:admin")}`,
    );
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ apiVersion: "flotilla.dev/v1alpha1", kind: "AuditEventList" });
    expect(all.body.items.map((i: { auditID: string }) => i.auditID)).toEqual([a, b, c]);
    expect(all.body.items[0]).toMatchObject({
      apiVersion: "flotilla.dev/v1alpha1",
      kind: "AuditEvent",
      metadata: { name: a },
      level: "Metadata",
      objectRef: { name: "one" },
    });
    expect(Number(all.body.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(all.body.items[2].metadata.resourceVersion));

    const ranged = await call("GET", `${AUDIT}?fieldSelector=${encodeURIComponent(`objectRef.namespace=audit-r,requestReceivedTimestamp>=${start}`)}`);
    expect(ranged.body.items).toHaveLength(3);
    const none = await call("GET", `${AUDIT}?fieldSelector=${encodeURIComponent(`objectRef.namespace=audit-r,requestReceivedTimestamp<${start}`)}`);
    expect(none.body.items).toHaveLength(0);
    expect((await call("GET", `${AUDIT}?fieldSelector=verb!%3Dcreate,objectRef.namespace%3Daudit-r`)).body.items).toHaveLength(0);

    const sel = `fieldSelector=${encodeURIComponent("objectRef.namespace=audit-r")}`;
    const p1 = await call("GET", `${AUDIT}?${sel}&limit=2`);
    expect(p1.body.items.map((i: { auditID: string }) => i.auditID)).toEqual([a, b]);
    expect(p1.body.metadata.continue).toBeTruthy();
    const p2 = await call("GET", `${AUDIT}?${sel}&limit=2&continue=${p1.body.metadata.continue}`);
    expect(p2.body.items.map((i: { auditID: string }) => i.auditID)).toEqual([c]);
    expect(p2.body.metadata.continue).toBeUndefined();
  });

  it("answers 400 for an unsupported field, a bad time or continue token, 405 for other verbs", async () => {
    const field = await call("GET", `${AUDIT}?fieldSelector=spec.secret%3Dx`);
    expect(field.status).toBe(400);
    expect(field.body).toMatchObject({ kind: "Status", reason: "BadRequest", message: "field label not supported: spec.secret" });
    expect((await call("GET", `${AUDIT}?fieldSelector=requestReceivedTimestamp>%3Dyesterday`)).status).toBe(400);
    expect((await call("GET", `${AUDIT}?fieldSelector=verb>%3Dx`)).status).toBe(400);
    expect((await call("GET", `${AUDIT}?continue=garbage`)).status).toBe(400);
    for (const [method, path] of [
      ["POST", AUDIT],
      ["DELETE", AUDIT],
      ["GET", `${AUDIT}/some-id`],
      ["PUT", `${AUDIT}/some-id`],
      ["PATCH", `${AUDIT}/some-id`],
    ] as const) {
      const r = await call(method, path, method === "GET" || method === "DELETE" ? undefined : {});
      expect(r.status, `${method} ${path}`).toBe(405);
      expect(r.body).toMatchObject({ kind: "Status", reason: "MethodNotAllowed", code: 405 });
    }
    // Not readable without the admin's credential (RBAC: resource auditevents in flotilla.dev, cluster-admin's).
    expect((await call("GET", AUDIT, undefined, { token: "nobody" })).status).toBe(401);
  });

  it("prints the Table kubectl get shows", async () => {
    const id = await auditedWrite("audit-r", "tabled");
    const t = await call("GET", `${AUDIT}?fieldSelector=metadata.name%3D${id}`, undefined, { headers: TABLE });
    expect(t.body.kind).toBe("Table");
    expect(t.body.columnDefinitions.map((c: { name: string }) => c.name)).toEqual(["Time", "User", "Verb", "Resource", "Object", "Code", "Audit-ID", "Source"]);
    expect(t.body.rows).toHaveLength(1);
    expect(t.body.rows[0].cells.slice(1, 6)).toEqual(["flotilla:admin", "create", "secrets", "audit-r/tabled", 201]);
    expect(t.body.rows[0].cells[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it("watches: ADDED for records after the resourceVersion, selected by field", async () => {
    const listed = await call("GET", AUDIT);
    const rv = listed.body.metadata.resourceVersion;
    const ac = new AbortController();
    const { exports } = await import("cloudflare:workers");
    const res = await exports.default.fetch(
      `https://hub.test${AUDIT}?watch=1&resourceVersion=${rv}&fieldSelector=objectRef.namespace%3Daudit-r&timeoutSeconds=20`,
      {
        headers: { authorization: `Bearer ${ADMIN}` },
        signal: ac.signal,
      },
    );
    expect(res.status).toBe(200);
    await call("POST", "/api/v1/namespaces/default/secrets", { apiVersion: "v1", kind: "Secret", metadata: { name: "elsewhere" } });
    const id = await auditedWrite("audit-r", "watched");
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    const event = await waitFor("the watched record", async () => {
      const { value, done } = await reader.read();
      if (done) throw new Error("watch ended");
      text += value;
      const lines = text.split("\n").filter((l) => l.trim());
      return lines.map((l) => JSON.parse(l)).find((e) => e.object?.auditID === id);
    });
    expect(event).toMatchObject({
      type: "ADDED",
      object: { kind: "AuditEvent", metadata: { name: id }, objectRef: { namespace: "audit-r", name: "watched" } },
    });
    expect(text).not.toContain("elsewhere");
    await reader.cancel();
    ac.abort();
  });

  it("watch-list ends its initial events with a BOOKMARK; a version older than the kept log is 410 Expired", async () => {
    const id = await auditedWrite("audit-r", "listed");
    const { exports } = await import("cloudflare:workers");
    const watchOnce = async (query: string) => {
      const res = await exports.default.fetch(`https://hub.test${AUDIT}?watch=1&timeoutSeconds=1&${query}`, { headers: { authorization: `Bearer ${ADMIN}` } });
      expect(res.status).toBe(200);
      return (await res.text())
        .split("\n")
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l));
    };
    const listed = await watchOnce(
      "sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&fieldSelector=objectRef.namespace%3Daudit-r",
    );
    const ids = listed.filter((e) => e.type === "ADDED").map((e) => e.object.auditID);
    expect(ids).toContain(id);
    expect(listed.find((e) => e.type === "BOOKMARK")).toMatchObject({
      object: { kind: "AuditEvent", metadata: { annotations: { "k8s.io/initial-events-end": "true" } } },
    });
    expect(listed.findIndex((e) => e.type === "BOOKMARK")).toBeGreaterThan(listed.findIndex((e) => e.object.auditID === id));
    // Records received more than 30 days before now are gone once a record is written then.
    await withClockAhead(40 * DAY_MS, () => auditedWrite("audit-r", "much-later"));
    const expired = await watchOnce("resourceVersion=1");
    expect(expired[0]).toMatchObject({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } });
  });
});
