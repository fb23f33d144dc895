/**
 * The HTTP front of the simulated cluster: kube-apiserver's REST paths over plain HTTP/1.1 with
 * JSON bodies. Routes `/version`, health (`/livez`, `/healthz`, `/readyz`), discovery, OpenAPI v3,
 * and `/api/v1/...` + `/apis/{group}/{version}/...` resource paths (collections, objects, `/status`,
 * `/scale`, `?watch=true`) onto a {@link Cluster}. Every error is a Kubernetes `Status`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { parse as parseYaml } from "yaml";
import type { Cluster, DeleteOptions, Target } from "./cluster.ts";
import { SYSTEM_MASTERS, type RequestAttributes } from "../../src/auth/rbac-types.ts";
import type { SimAuth, UserInfo } from "./auth.ts";
import { ApiError, badRequest, methodNotAllowed, pathNotFound } from "./errors.ts";
import { openapiV3Doc, openapiV3Root } from "./openapi.ts";
import { apiGroupDoc, apiGroupListDoc, apiResourceListDoc, apiVersionsDoc, groupVersion, type ResourceType } from "./resources.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { toTable, wantsTable } from "./table.ts";
import { serveLog } from "./logs.ts";
import { isObj, type KubeObject, type Obj } from "./types.ts";

/** What the HTTP layer needs besides the cluster. */
export interface ServerContext {
  cluster: Cluster;
  /** Authentication, impersonation and RBAC (auth.ts). */
  auth: SimAuth;
  /** e.g. `v1.31.2`. */
  kubernetesVersion: string;
  healthy: () => boolean;
  /** `host:port` this server is reachable at (for `/api` serverAddressByClientCIDRs). */
  address: () => string;
  /** The exec, attach and port-forward streams served (stream.ts), answered at `GET /sim/streams`. */
  streams?: { opened: number; open: number; requests: number };
}

/** Longest a watch stays open without `timeoutSeconds`, in seconds (kube-apiserver picks 30-60 min). */
const MAX_WATCH_SECONDS = 1800;
/** Interval between BOOKMARK events on watches that allow them, in milliseconds. */
const BOOKMARK_INTERVAL_MS = 10_000;

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const data = JSON.stringify(body);
  res.writeHead(code, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data), "Cache-Control": "no-cache, private" });
  res.end(data);
}

function sendText(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, { "Content-Type": "text/plain; charset=utf-8", "Content-Length": Buffer.byteLength(text), "X-Content-Type-Options": "nosniff" });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function decodeBody(raw: string, contentType: string | undefined): unknown {
  if (raw.trim() === "") return undefined;
  try {
    return contentType && /yaml/.test(contentType) ? parseYaml(raw) : JSON.parse(raw);
  } catch (e) {
    throw badRequest(`error decoding body: ${(e as Error).message}`);
  }
}

/** The field manager for a non-apply write: `?fieldManager=`, else the User-Agent up to its first `/` (kube-apiserver's default). */
function managerOf(req: IncomingMessage, q: URLSearchParams): string {
  const fm = q.get("fieldManager");
  if (fm) return fm;
  const ua = req.headers["user-agent"] ?? "";
  const prefix = ua.split("/")[0]?.trim() ?? "";
  return prefix.slice(0, 128) || "unknown";
}

function deleteOptions(body: unknown, q: URLSearchParams): DeleteOptions {
  if (isObj(body)) {
    const pre = isObj(body.preconditions) ? body.preconditions : undefined;
    const opts: DeleteOptions = { dryRun: Array.isArray(body.dryRun) && body.dryRun.includes("All") };
    if (typeof body.propagationPolicy === "string") opts.propagationPolicy = body.propagationPolicy;
    if (typeof body.orphanDependents === "boolean") opts.orphanDependents = body.orphanDependents;
    if (pre) {
      opts.preconditions = {};
      if (typeof pre.uid === "string") opts.preconditions.uid = pre.uid;
      if (typeof pre.resourceVersion === "string") opts.preconditions.resourceVersion = pre.resourceVersion;
    }
    return opts;
  }
  const opts: DeleteOptions = { dryRun: q.getAll("dryRun").includes("All") };
  const pp = q.get("propagationPolicy");
  if (pp) opts.propagationPolicy = pp;
  const od = q.get("orphanDependents");
  if (od !== null) opts.orphanDependents = od === "true";
  return opts;
}

/** The attributes of an access review's `spec` (`resourceAttributes` or `nonResourceAttributes`). */
function reviewAttributes(spec: Obj, namespace: string | undefined): RequestAttributes {
  const ra = isObj(spec.resourceAttributes) ? spec.resourceAttributes : undefined;
  const str = (o: Obj | undefined, k: string): string => (o && typeof o[k] === "string" ? o[k] : "");
  if (!ra && isObj(spec.nonResourceAttributes)) return { verb: str(spec.nonResourceAttributes, "verb"), path: str(spec.nonResourceAttributes, "path") };
  return {
    verb: str(ra, "verb"),
    apiGroup: str(ra, "group"),
    resource: str(ra, "resource"),
    subresource: str(ra, "subresource"),
    name: str(ra, "name"),
    namespace: namespace ?? str(ra, "namespace"),
  };
}

/**
 * The answer to a review API, by the requesting user and the cluster's RBAC (auth.ts): who the
 * user is (SelfSubjectReview; a TokenReview says the cluster admin), whether a user may do
 * something (SelfSubjectAccessReview for the requester, SubjectAccessReview and
 * LocalSubjectAccessReview for `spec.user`/`spec.groups`), what it may do (SelfSubjectRulesReview).
 */
function reviewResponse(ctx: ServerContext, rt: ResourceType, body: unknown, user: UserInfo, namespace: string | undefined): Obj {
  const req: Obj = isObj(body) ? body : {};
  const spec: Obj = isObj(req.spec) ? req.spec : {};
  const info = (u: UserInfo) => ({ username: u.name, groups: [...(u.groups ?? [])], ...(u.uid ? { uid: u.uid } : {}), ...(u.extra ? { extra: u.extra } : {}) });
  const decide = (u: UserInfo): Obj => (ctx.auth.allowed(u, reviewAttributes(spec, namespace)) ? { allowed: true } : { allowed: false });
  const subject = (): UserInfo => ({
    name: typeof spec.user === "string" ? spec.user : "",
    groups: Array.isArray(spec.groups) ? spec.groups.filter((g): g is string => typeof g === "string") : [],
  });
  const status: Obj =
    rt.kind === "SelfSubjectReview"
      ? { userInfo: info(user) }
      : rt.kind === "TokenReview"
        ? { authenticated: true, user: info({ name: "kubernetes-admin", groups: [SYSTEM_MASTERS, "system:authenticated"] }), audiences: [] }
        : rt.kind === "SelfSubjectRulesReview"
          ? (user.groups ?? []).includes(SYSTEM_MASTERS)
            ? // system:masters holds everything ahead of RBAC; kube-apiserver lists it as `*`.
              {
                resourceRules: [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }],
                nonResourceRules: [{ verbs: ["*"], nonResourceURLs: ["*"] }],
                incomplete: false,
              }
            : ({ ...ctx.auth.rulesReview(user, typeof spec.namespace === "string" ? spec.namespace : "") } as Obj)
          : rt.kind === "SelfSubjectAccessReview"
            ? decide(user)
            : decide(subject());
  return { ...req, kind: rt.kind, apiVersion: groupVersion(rt), metadata: { creationTimestamp: null }, status };
}

/** kube-apiserver's RequestInfo verb of a resource request. */
function verbOf(method: string, r: Route, q: URLSearchParams): string {
  const watch = q.get("watch") === "true" || q.get("watch") === "1";
  switch (method) {
    case "GET":
    case "HEAD":
      return watch ? "watch" : r.name === undefined ? "list" : "get";
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return r.name === undefined ? "deletecollection" : "delete";
    default:
      return method.toLowerCase();
  }
}

interface Route {
  rt: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
}

function route(ctx: ServerContext, segs: string[]): Route | undefined {
  let group: string;
  let version: string;
  let rest: string[];
  if (segs[0] === "api" && segs.length >= 3) {
    group = "";
    version = segs[1] ?? "";
    rest = segs.slice(2);
  } else if (segs[0] === "apis" && segs.length >= 4) {
    group = segs[1] ?? "";
    version = segs[2] ?? "";
    rest = segs.slice(3);
  } else return undefined;
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length >= 3 && !(rest.length === 3 && (rest[2] === "status" || rest[2] === "finalize"))) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  if (rest.length > 3) return undefined;
  const rt = ctx.cluster.registry.byPlural(group, version, rest[0] ?? "");
  if (!rt) return undefined;
  if (namespace !== undefined && !rt.namespaced) return undefined;
  const name = rest[1];
  if (name !== undefined && rt.namespaced && namespace === undefined) return undefined;
  const subresource = rest[2];
  if (subresource === "status" && !rt.statusSubresource) return undefined;
  if (subresource === "scale" && !["Deployment", "StatefulSet", "ReplicaSet"].includes(rt.kind)) return undefined;
  if (subresource === "log" && rt.kind !== "Pod") return undefined;
  if (subresource !== undefined && subresource !== "status" && subresource !== "scale" && subresource !== "log") return undefined;
  return { rt, namespace, name, subresource };
}

function serveWatch(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, r: Route, q: URLSearchParams): void {
  const { cluster } = ctx;
  const store = cluster.store;
  const lm = parseLabelSelector(q.get("labelSelector"));
  const fm = parseFieldSelector(q.get("fieldSelector"));
  const table = wantsTable(req.headers.accept);
  const matches = (o: KubeObject): boolean =>
    (r.namespace === undefined || o.metadata.namespace === r.namespace) && lm(o) && fm(o) && (r.name === undefined || o.metadata.name === r.name);
  res.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache, private", "Transfer-Encoding": "chunked" });
  // Send the headers now: clients (client-node's Watch) wait for them before reading events.
  res.flushHeaders();
  const send = (type: string, obj: Obj): void => {
    let object: Obj = obj;
    if (table && type !== "ERROR" && type !== "BOOKMARK")
      object = toTable(r.rt, [obj as KubeObject], String((obj as KubeObject).metadata.resourceVersion), q.get("includeObject"));
    res.write(`${JSON.stringify({ type, object })}\n`);
  };
  const rvParam = q.get("resourceVersion");
  const queued: Array<() => void> = [];
  let ready = false;
  const unsubscribe = store.subscribe((e) => {
    if (e.group !== r.rt.group || e.plural !== r.rt.plural) return;
    const obj = cluster.present(r.rt, e.object);
    if (!matches(obj)) return;
    const fn = () => send(e.type, obj);
    if (ready) fn();
    else queued.push(fn);
  });
  if (!rvParam || rvParam === "0") {
    for (const o of cluster.list(r.rt, r.namespace).items) if (matches(o)) send("ADDED", o);
  } else {
    const since = Number(rvParam);
    if (!Number.isFinite(since) || since < store.oldestWatchableRv()) {
      send("ERROR", new ApiError(410, "Expired", `too old resource version: ${rvParam} (${store.oldestWatchableRv() + 1})`).toStatus() as unknown as Obj);
      unsubscribe();
      res.end();
      return;
    }
    for (const e of store.eventsSince(since)) {
      if (e.group !== r.rt.group || e.plural !== r.rt.plural) continue;
      const obj = cluster.present(r.rt, e.object);
      if (matches(obj)) send(e.type, obj);
    }
  }
  ready = true;
  for (const fn of queued) fn();
  const timeout = Math.min(Number(q.get("timeoutSeconds") ?? MAX_WATCH_SECONDS) || MAX_WATCH_SECONDS, MAX_WATCH_SECONDS);
  const bookmarks =
    q.get("allowWatchBookmarks") === "true"
      ? setInterval(
          () => send("BOOKMARK", { kind: r.rt.kind, apiVersion: groupVersion(r.rt), metadata: { resourceVersion: String(store.currentRv()) } }),
          BOOKMARK_INTERVAL_MS,
        )
      : undefined;
  const finish = (): void => {
    clearTimeout(timer);
    if (bookmarks) clearInterval(bookmarks);
    unsubscribe();
    if (!res.writableEnded) res.end();
  };
  const timer = setTimeout(finish, timeout * 1000);
  req.on("close", finish);
  res.on("close", finish);
}

async function serveResource(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, r: Route, q: URLSearchParams): Promise<void> {
  const { cluster } = ctx;
  const method = req.method ?? "GET";
  const accept = req.headers.accept;
  const contentType = req.headers["content-type"] ?? "";
  const dryRun = q.getAll("dryRun").includes("All");
  const manager = managerOf(req, q);
  const user = ctx.auth.userOf(req);
  const attrs = {
    verb: verbOf(method, r, q),
    apiGroup: r.rt.group,
    resource: r.rt.plural,
    subresource: r.subresource ?? "",
    name: r.name ?? "",
    namespace: r.namespace ?? "",
  };
  if (r.rt.review) {
    // Self reviews are every authenticated user's (system:basic-user); the others are RBAC's.
    if (!r.rt.kind.startsWith("Self")) ctx.auth.authorize(user, attrs);
    if (method !== "POST" || r.name !== undefined) throw methodNotAllowed();
    return sendJson(res, 201, reviewResponse(ctx, r.rt, decodeBody(await readBody(req), contentType), user, r.namespace));
  }
  ctx.auth.authorize(user, attrs);
  if (r.name === undefined) {
    if (method === "GET") {
      if (q.get("watch") === "true" || q.get("watch") === "1") return serveWatch(ctx, req, res, r, q);
      const { items, resourceVersion } = cluster.list(r.rt, r.namespace, q.get("labelSelector") ?? undefined, q.get("fieldSelector") ?? undefined);
      if (wantsTable(accept)) return sendJson(res, 200, toTable(r.rt, items, resourceVersion, q.get("includeObject")));
      return sendJson(res, 200, { kind: r.rt.listKind, apiVersion: groupVersion(r.rt), metadata: { resourceVersion }, items });
    }
    if (method === "POST") {
      if (r.rt.namespaced && r.namespace === undefined) throw methodNotAllowed();
      const body = decodeBody(await readBody(req), contentType);
      const created = cluster.create(r.rt, r.namespace ?? "", body, { manager, dryRun });
      return sendJson(res, 201, created);
    }
    if (method === "DELETE") {
      const body = decodeBody(await readBody(req), contentType);
      return sendJson(
        res,
        200,
        cluster.deleteCollection(r.rt, r.namespace, q.get("labelSelector") ?? undefined, q.get("fieldSelector") ?? undefined, deleteOptions(body, q)),
      );
    }
    throw methodNotAllowed();
  }
  const t: Target = { rt: r.rt, namespace: r.namespace ?? "", name: r.name };
  if (r.subresource === "log") {
    if (method !== "GET") throw methodNotAllowed();
    return serveLog(req, res, cluster.get(t), q);
  }
  if (r.subresource === "scale") {
    if (method === "GET") return sendJson(res, 200, cluster.getScale(t));
    if (method === "PUT" || method === "PATCH")
      return sendJson(res, 200, cluster.updateScale(t, method, contentType, await readBody(req), { manager, dryRun }));
    throw methodNotAllowed();
  }
  switch (method) {
    case "GET": {
      if (q.get("watch") === "true" || q.get("watch") === "1") return serveWatch(ctx, req, res, r, q);
      const obj = cluster.get(t);
      if (wantsTable(accept) && r.subresource === undefined)
        return sendJson(res, 200, toTable(r.rt, [obj], obj.metadata.resourceVersion, q.get("includeObject")));
      return sendJson(res, 200, obj);
    }
    case "PUT": {
      const body = decodeBody(await readBody(req), contentType);
      return sendJson(res, 200, cluster.update(t, body, r.subresource, { manager, dryRun }));
    }
    case "PATCH": {
      // A server-side apply that creates the object also needs `create` (kube-apiserver's patch handler).
      if (/apply-patch/.test(contentType) && r.subresource === undefined && !cluster.store.get(t.rt.group, t.rt.plural, t.namespace, t.name))
        ctx.auth.authorize(user, { ...attrs, verb: "create" });
      const raw = await readBody(req);
      const force = q.get("force");
      const opts = { manager, dryRun, fieldManagerGiven: !!q.get("fieldManager"), ...(force !== null ? { force: force === "true" } : {}) };
      const { object, created } = cluster.patch(t, r.subresource, contentType, raw, opts);
      return sendJson(res, created ? 201 : 200, object);
    }
    case "DELETE": {
      if (r.subresource !== undefined) throw methodNotAllowed();
      const body = decodeBody(await readBody(req), contentType);
      return sendJson(res, 200, cluster.delete(t, deleteOptions(body, q)).body);
    }
    default:
      throw methodNotAllowed();
  }
}

/** Builds the request handler for `http.createServer`. Never throws; failures become `Status` responses (500 InternalError for bugs). */
export function createHandler(ctx: ServerContext): (req: IncomingMessage, res: ServerResponse) => void {
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://sim.local");
    const path = url.pathname.replace(/\/+$/, "") || "/";
    const segs = path
      .split("/")
      .filter((s) => s.length > 0)
      .map(decodeURIComponent);
    const q = url.searchParams;
    const reg = ctx.cluster.registry;
    const r = route(ctx, segs);
    // Resource requests are authorized with their attributes (serveResource); the others by path.
    if (!r) ctx.auth.authorize(ctx.auth.userOf(req), { verb: (req.method ?? "GET").toLowerCase(), path });
    if (path === "/livez" || path === "/healthz" || path === "/readyz" || /^\/(livez|healthz|readyz)\//.test(path)) {
      return ctx.healthy() ? sendText(res, 200, "ok") : sendText(res, 500, `[-]etcd failed: reason withheld\n${segs[0] ?? "healthz"} check failed\n`);
    }
    if (path === "/version") {
      const m = /^v(\d+)\.(\d+)/.exec(ctx.kubernetesVersion);
      return sendJson(res, 200, {
        major: m?.[1] ?? "1",
        minor: m?.[2] ?? "31",
        gitVersion: ctx.kubernetesVersion,
        gitCommit: "0000000000000000000000000000000000000000",
        gitTreeState: "clean",
        buildDate: "2024-10-22T20:28:14Z",
        goVersion: "go1.22.8",
        compiler: "gc",
        platform: "linux/amd64",
      });
    }
    if (path === "/api") return sendJson(res, 200, apiVersionsDoc(ctx.address()));
    // The simulator's own: what its streams saw (tests look through the hub's proxy).
    if (path === "/sim/streams" && ctx.streams) return sendJson(res, 200, ctx.streams);
    if (path === "/apis") return sendJson(res, 200, apiGroupListDoc(reg));
    if (segs[0] === "openapi") {
      if (segs[1] === "v3" && segs.length === 2) return sendJson(res, 200, openapiV3Root(reg, ctx.kubernetesVersion));
      if (segs[1] === "v3") {
        const doc =
          segs[2] === "api"
            ? openapiV3Doc(reg, "", segs[3] ?? "", ctx.kubernetesVersion)
            : openapiV3Doc(reg, segs[3] ?? "", segs[4] ?? "", ctx.kubernetesVersion);
        if (doc) return sendJson(res, 200, doc);
      }
      throw pathNotFound();
    }
    if (segs[0] === "api" && segs.length === 2) {
      const doc = apiResourceListDoc(reg, "", segs[1] ?? "");
      if (doc) return sendJson(res, 200, doc);
      throw pathNotFound();
    }
    if (segs[0] === "apis" && segs.length === 2) {
      const doc = apiGroupDoc(reg, segs[1] ?? "");
      if (doc) return sendJson(res, 200, doc);
      throw pathNotFound();
    }
    if (segs[0] === "apis" && segs.length === 3) {
      const doc = apiResourceListDoc(reg, segs[1] ?? "", segs[2] ?? "");
      if (doc) return sendJson(res, 200, doc);
      throw pathNotFound();
    }
    if (!r) throw pathNotFound();
    await serveResource(ctx, req, res, r, q);
  };
  return (req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (res.headersSent) {
        res.end();
        return;
      }
      if (e instanceof ApiError) return sendJson(res, e.code, e.toStatus());
      const err = new ApiError(500, "InternalError", `Internal error occurred: ${e instanceof Error ? e.message : String(e)}`);
      sendJson(res, 500, err.toStatus());
    });
  };
}
