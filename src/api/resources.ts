/**
 * The generic Kubernetes resource endpoints, shared by every kind (after the apiserver's generic
 * registry): `/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/status]]` with get, list
 * (labelSelector, fieldSelector), create, update, merge patch, server-side apply and delete.
 * D1-stored kinds commit through the D1 store; ManagedCluster goes through its Durable Object.
 */
import { Hono, type Context } from "hono";
import { alreadyExists, ApiError, badRequest, forbidden, methodNotAllowed, notFound, unauthorized } from "../k8s/errors.ts";
import { apiVersionOf, type KindDefinition } from "../k8s/kind.ts";
import { matches, parseSelector, SelectorParseError } from "../k8s/labels.ts";
import { isJsonObject, type KubeObject } from "../k8s/meta.ts";
import { awaitResourceVersion, LIST_CHUNK_ROWS, listPage, parseResourceVersion, type LabelIndexRequirement } from "../k8s/store.ts";
import { computeWrite, type WriteRequest } from "../k8s/write.ts";
import { isDNS1123Label } from "../k8s/validation.ts";
import { findKind, KINDS, servedGroups } from "../kinds/index.ts";
import { BUILTIN_CLUSTER_SETS, ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import { BUILTIN_NAMESPACES, FINALIZE_EXTRA, NamespaceKind } from "../kinds/namespace.ts";
import { ensureNamespace } from "../namespaces/controller.ts";
import { admitNamespace } from "../namespaces/lifecycle.ts";
import { randomToken, sha256Hex } from "../kinds/bootstraptoken.ts";
import { admitAgentToken, bearerToken, isAdmin } from "../auth/credentials.ts";
import { limitAuthFailures } from "../auth/ratelimit.ts";
import { clock } from "../clock.ts";
import type { Env } from "../env.ts";
import type { Result } from "../../durable-objects/cluster.ts";
import { store } from "../store/write.ts";
import { AUDIT_DISCOVERY, AUDIT_GROUP, AUDIT_RESOURCE, AUDIT_VERSION, serveAuditEvents } from "../audit/routes.ts";
import { storeOf } from "../store/store.ts";
import { toTable } from "../k8s/table.ts";
import { mediaRanges, negotiate, partialObjectMetadata, partialObjectMetadataList, type Answering } from "./negotiate.ts";
import { checkWatchListOptions, clientOf, watchResponse } from "./watch.ts";
import { dropUnknownFields, fieldValidationOf, unknownFieldMessages, warningHeader } from "./fieldvalidation.ts";
import { decodesProtobuf } from "./protobuf.ts";
import { decodeDelete, decodeObjectBody, decodePatch, decodePathSegment, queryFlag, statusResponse } from "./request.ts";

type Ctx = Context<{ Bindings: Env }>;

interface Target {
  def: KindDefinition;
  namespace: string;
  name?: string;
  subresource?: "status";
  /** A Namespace's `finalize` subresource (PUT only): the write changes `spec.finalizers` alone. */
  finalize?: boolean;
}

function present(def: KindDefinition, obj: KubeObject): KubeObject {
  return def.present ? def.present(obj) : obj;
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/**
 * Parses the (still percent-encoded) path segments after `/apis/{group}/{version}/`.
 * @throws ApiError 404 (no such resource), 400 (malformed escape, invalid namespace)
 */
function resolve(group: string, version: string, encoded: string[]): Target {
  let namespace = "";
  let parts = encoded.map(decodePathSegment);
  // `/api/v1/namespaces/{name}/status` and `.../finalize` address a Namespace, not a namespace's objects.
  const namespaceSub = group === "" && parts[0] === "namespaces" && parts.length === 3 && (parts[2] === "status" || parts[2] === "finalize");
  if (parts[0] === "namespaces" && parts.length >= 3 && !namespaceSub) {
    namespace = parts[1]!;
    parts = parts.slice(2);
  }
  const [plural, name, sub, ...extra] = parts;
  const def = plural ? findKind(group, version, plural) : undefined;
  if (def === NamespaceKind && sub === "finalize" && extra.length === 0) return { def, namespace, name, finalize: true };
  if (!def || extra.length > 0 || (sub !== undefined && sub !== "status")) {
    throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  }
  if (def.namespaced && !namespace && name !== undefined) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  if (!def.namespaced && namespace) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  if (namespace) {
    const errs = isDNS1123Label(namespace);
    if (errs.length > 0) throw badRequest(`invalid namespace ${JSON.stringify(namespace)}: ${errs.join("; ")}`, "metadata.namespace");
  }
  if (sub === "status" && !def.hasStatus) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  return { def, namespace, name, subresource: sub as "status" | undefined };
}

/** Whether a request of this isolate has found or created the built-in ManagedClusterSets and namespaces. */
let builtinsDone = false;

/**
 * Creates the built-in namespaces (`default`, `kube-system`, `kube-public`, `kube-node-lease`, as
 * kube-apiserver does at start) and ManagedClusterSets `default` and `global` when absent, through the write
 * path, until one request of the isolate has seen them there. Each request that comes before that
 * checks for itself (a create that loses the race gets AlreadyExists, which is fine): a request
 * never awaits another's promise, which workerd would cancel as hung had that request been
 * cancelled meanwhile (issue 27).
 * @throws errors of D1 (the next request checks again)
 */
async function ensureBuiltins(env: Env): Promise<void> {
  if (builtinsDone) return;
  for (const ns of BUILTIN_NAMESPACES) await ensureNamespace(env, ns);
  const sets = storeOf(env, ManagedClusterSetKind);
  for (const set of BUILTIN_CLUSTER_SETS) {
    if (await sets.get("", set.name)) continue;
    try {
      await sets.write("", set.name, { verb: "create", body: { metadata: { name: set.name }, spec: set.spec } });
    } catch (e) {
      if (!(e instanceof ApiError && e.reason === "AlreadyExists")) throw e;
    }
  }
  builtinsDone = true;
}

/**
 * Authorises a request on `/apis`: the admin token may do anything; a valid agent credential
 * gets 403 (agents use `/agent/v1`); anything else 401. A token that names no registered cluster
 * never reaches a Durable Object. Failed authentications are limited by source address and
 * presented token (src/auth/ratelimit.ts): the admin token is always evaluated, so wrong tokens
 * from its address never lock the admin out; they are answered 429 once over the limit.
 *
 * @throws ApiError 401, 403, 429
 */
async function authorize(c: Ctx): Promise<void> {
  const token = bearerToken(c);
  const sub = await limitAuthFailures(c.env, c.req.raw, "api", token, clock.now(), async (limit) => {
    if (!token) throw unauthorized();
    if (await isAdmin(token, c.env.FLOTILLA_ADMIN_TOKEN)) return null;
    try {
      const admitted = await admitAgentToken(c.env, token, limit.costly);
      const res = (await c.env.CLUSTERS.getByName(admitted.cluster).agent(token, admitted.cluster, admitted.cluster, { action: "info" })) as Result<unknown>;
      if (!res.ok) throw unauthorized(res.status.message);
      return admitted.cluster;
    } catch (e) {
      // As kube-apiserver: one answer for every credential that fails, whatever it looked like.
      if (e instanceof ApiError && e.code === 401) throw unauthorized();
      throw e;
    }
  });
  if (sub !== null) throw forbidden(`cluster ${sub}'s agent credential may only use /agent/v1`);
}

/**
 * The requirement of a parsed label selector that the label index answers (src/k8s/store.ts
 * `listPage`): its first `=`, `==` or `in` requirement (a set of values: the most selective kind),
 * else its first `exists`; undefined when it has none (only `!=`, `notin`, `!key`: a scan).
 */
function indexRequirement(sel: ReturnType<typeof parseSelector>): LabelIndexRequirement | undefined {
  const exact = sel.requirements.find((r) => r.operator === "=" || r.operator === "==" || r.operator === "in");
  if (exact) return { key: exact.key, values: [...exact.values] };
  const exists = sel.requirements.find((r) => r.operator === "exists");
  return exists ? { key: exists.key } : undefined;
}

/**
 * The request's `labelSelector` and `fieldSelector` (metadata.name, metadata.namespace): the
 * filter a listed object must pass, and the label requirement the label index reads rows by.
 * @throws ApiError 400 for a selector that does not parse, or an unsupported field
 */
function selectorOf(c: Ctx): { filter: (obj: KubeObject) => boolean; index?: LabelIndexRequirement } {
  const ls = c.req.query("labelSelector");
  const fs = c.req.query("fieldSelector");
  let labelSel: ReturnType<typeof parseSelector> | null = null;
  if (ls) {
    try {
      labelSel = parseSelector(ls);
    } catch (e) {
      if (e instanceof SelectorParseError) throw badRequest(`unable to parse requirement: ${e.message}`, "labelSelector");
      throw e;
    }
  }
  const fields: [string, string, boolean][] = [];
  if (fs) {
    for (const part of fs.split(",")) {
      const m = /^\s*([^!=\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(part);
      if (!m || !["metadata.name", "metadata.namespace"].includes(m[1]!)) {
        throw badRequest(`field label not supported: ${part.split(/[!=]/)[0]}`, "fieldSelector");
      }
      fields.push([m[1]!, m[3]!, m[2] !== "!="]);
    }
  }
  const filter = (obj: KubeObject) => {
    if (labelSel && !matches(labelSel, obj.metadata.labels ?? {})) return false;
    for (const [f, v, eq] of fields) {
      const actual = f === "metadata.name" ? obj.metadata.name : obj.metadata.namespace ?? "";
      if ((actual === v) !== eq) return false;
    }
    return true;
  };
  return { filter, index: labelSel ? indexRequirement(labelSel) : undefined };
}

async function list(c: Ctx, t: Target): Promise<Response> {
  const { filter, index } = selectorOf(c);
  const namespace = t.def.namespaced ? t.namespace || undefined : "";
  const watching = queryFlag(c.req.query("watch"));
  const sendInitialEvents = c.req.query("sendInitialEvents");
  const resourceVersion = c.req.query("resourceVersion");
  checkWatchListOptions({ watch: watching, sendInitialEvents, allowWatchBookmarks: queryFlag(c.req.query("allowWatchBookmarks")), resourceVersionMatch: c.req.query("resourceVersionMatch"), resourceVersion, continue: c.req.query("continue") });
  if (watching) {
    return watchResponse(
      store(c.env),
      t.def,
      namespace,
      filter,
      (o) => shape(c, t.def, o, "watch"),
      {
        resourceVersion,
        timeoutSeconds: c.req.query("timeoutSeconds"),
        allowWatchBookmarks: queryFlag(c.req.query("allowWatchBookmarks")),
        sendInitialEvents: sendInitialEvents === undefined ? undefined : queryFlag(sendInitialEvents),
        client: await clientOf(bearerToken(c) ?? ""),
        signal: c.req.raw.signal,
      },
      (p) => c.executionCtx.waitUntil(p),
    );
  }
  const asked = parseResourceVersion(resourceVersion);
  const limit = limitOf(c.req.query("limit"));
  const after = continueKey(c.req.query("continue"));
  // As the etcd3 store: a continued list carries its version in the token, not in resourceVersion.
  if (after && asked !== 0n) throw badRequest("specifying resource version is not allowed when using continue", "resourceVersion");
  // A list from a resourceVersion answers data at least that new (NotOlderThan; an Exact match,
  // or a legacy one with a limit, is served at the current version): a version the store has not
  // reached gets kube-apiserver's 504 "Too large resource version" after a brief wait.
  await awaitResourceVersion(store(c.env), asked, c.req.raw.signal);
  // As the apiserver: remainingItemCount only when no selector filters the rows.
  const selected = Boolean(c.req.query("labelSelector") || c.req.query("fieldSelector"));
  const page = await listPage(store(c.env), t.def, namespace, { after, limit, filter, countRemaining: !selected, index });
  const shown = page.items.map((o) => present(t.def, o));
  const listMeta = {
    resourceVersion: page.resourceVersion,
    ...(page.next ? { continue: continueToken(page.next), ...(page.remaining !== undefined ? { remainingItemCount: page.remaining } : {}) } : {}),
  };
  const form = negotiate(c.req.header("accept"), "list");
  if (form.kind === "table") {
    const table = toTable(t.def, shown, page.resourceVersion, c.req.query("includeObject"), clock.now());
    return json({ ...table, metadata: { ...table.metadata, ...listMeta } });
  }
  if (form.kind === "metadata") return json(partialObjectMetadataList(shown, listMeta, form.version));
  return json({ apiVersion: apiVersionOf(t.def), kind: t.def.listKind, metadata: listMeta, items: shown });
}

/**
 * Kubernetes list chunking (`limit`, apiserver `ListOptions`): absent, empty or 0 means no limit.
 * @throws ApiError 400 for a value that is not a non-negative integer
 */
function limitOf(limitParam: string | undefined): number | undefined {
  if (limitParam === undefined || limitParam === "" || limitParam === "0") return undefined;
  const limit = Number(limitParam);
  if (!Number.isInteger(limit) || limit < 0) throw badRequest(`limit: Invalid value: ${JSON.stringify(limitParam)}: must be a non-negative integer`, "limit");
  return limit;
}

/**
 * The `continue` token of a page that ends at `last`: base64url of `{"v":"flotilla.dev/v1","start":"<namespace>/<name>"}`.
 * A continued list starts after that key in the current state (the apiserver serves a snapshot at
 * the first page's resourceVersion; here later writes may show up, which clients that re-list tolerate).
 */
function continueToken(last: { namespace: string; name: string }): string {
  return btoa(JSON.stringify({ v: "flotilla.dev/v1", start: `${last.namespace}/${last.name}` })).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The key a `continue` token starts after (namespaces hold no `/`). @throws ApiError 400 for a malformed token */
function continueKey(continueParam: string | undefined): { namespace: string; name: string } | undefined {
  if (!continueParam) return undefined;
  let start: unknown;
  try {
    start = (JSON.parse(atob(continueParam.replace(/-/g, "+").replace(/_/g, "/"))) as { start?: unknown }).start;
  } catch {
    start = undefined;
  }
  const slash = typeof start === "string" ? start.indexOf("/") : -1;
  if (typeof start !== "string" || slash < 0) throw badRequest("continue key is not valid: the token is malformed", "continue");
  return { namespace: start.slice(0, slash), name: start.slice(slash + 1) };
}

async function get(c: Ctx, t: Target): Promise<Response> {
  const ref = { group: t.def.group, plural: t.def.plural, name: t.name };
  // A get from a resourceVersion, as kube-apiserver's (watch cache `WaitUntilFreshAndGet`): the
  // object as it is now once the hub has reached that version, else 504 Too large resource version.
  await awaitResourceVersion(store(c.env), parseResourceVersion(c.req.query("resourceVersion")), c.req.raw.signal);
  const obj = await storeOf(c.env, t.def).get(t.namespace, t.name!);
  if (!obj) throw notFound(ref);
  return json(shape(c, t.def, obj, "object"));
}

/**
 * An object as the request's `Accept` asks for it (src/api/negotiate.ts): as served (the kind's
 * `present`), as a one-row Table, or its PartialObjectMetadata. `answering` is what the request
 * answers (an object, or a watch's event objects).
 * @throws ApiError 406 when the Accept header names nothing the hub serves
 */
function shape(c: Ctx, def: KindDefinition, obj: KubeObject, answering: Answering): unknown {
  const form = negotiate(c.req.header("accept"), answering);
  const shown = present(def, obj);
  if (form.kind === "table") return toTable(def, [shown], obj.metadata.resourceVersion, c.req.query("includeObject"), clock.now());
  if (form.kind === "metadata") return partialObjectMetadata(shown, form.version);
  return shown;
}

/** Runs a decoded write; `warnings` (from decoding the body under `fieldValidation=Warn`) become `Warning` headers. */
async function write(c: Ctx, t: Target, req: WriteRequest, warnings: string[] = []): Promise<Response> {
  if (t.def.systemOwned) throw methodNotAllowed(`${t.def.plural}.${t.def.group} are written by the hub's scheduler only`);
  const mode = req.verb === "delete" ? "Strict" : fieldValidationOf(c);
  const dropped = dropUnknownFields(t.def.schema, req, mode);
  const dryRun = c.req.queries("dryRun") ?? [];
  for (const v of dryRun) if (v !== "All") throw badRequest(`dryRun: Unsupported value: ${JSON.stringify(v)}: supported values: "All"`, "dryRun");
  const response = dryRun.length > 0 ? await writeDryRun(c, t, req) : await writeValidated(c, t, req);
  if (mode === "Warn") warnings.push(...unknownFieldMessages(dropped));
  for (const w of warnings) response.headers.append("Warning", warningHeader(w));
  return response;
}

async function writeValidated(c: Ctx, t: Target, req: WriteRequest): Promise<Response> {
  let name = t.name;
  let extras: Record<string, unknown> | undefined;
  let secret: string | undefined;
  if (req.verb === "create") {
    const meta = isJsonObject(req.body) && isJsonObject(req.body.metadata) ? req.body.metadata : {};
    name = typeof meta.name === "string" && meta.name ? meta.name : undefined;
    if (t.def === findKind("flotilla.dev", "v1alpha1", "bootstraptokens")) {
      secret = randomToken(16);
      extras = { secretHash: await sha256Hex(secret) };
    }
  }
  if (t.finalize) extras = { [FINALIZE_EXTRA]: true };
  const outcome = await storeOf(c.env, t.def).write(t.namespace, name, req, { extras });
  if (!outcome.object) {
    return json({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", details: { name, group: t.def.group, kind: t.def.plural } });
  }
  const out = structuredClone(outcome.object);
  if (secret && outcome.created) out.status = { ...(out.status ?? {}), token: `${outcome.object.metadata.name}.${secret}` };
  return json(shape(c, t.def, out, "object"), outcome.created ? 201 : 200);
}

/**
 * `dryRun=All` (apiserver): the write is decoded, defaulted and validated exactly as a real one
 * and the answer is the object that would be stored, but nothing is stored and nothing is
 * triggered. Server-set fields computed at commit (resourceVersion, the hub controllers'
 * conditions) are absent or stale in the answer. @throws ApiError as the real write would
 */
async function writeDryRun(c: Ctx, t: Target, req: WriteRequest): Promise<Response> {
  const meta = req.verb === "create" && isJsonObject(req.body) && isJsonObject(req.body.metadata) ? req.body.metadata : {};
  const name = req.verb === "create" ? (typeof meta.name === "string" ? meta.name : undefined) : t.name;
  const current = name ? await storeOf(c.env, t.def).get(t.namespace, name) : null;
  const ref = { group: t.def.group, plural: t.def.plural, name };
  // NamespaceLifecycle admits a dry run as a real write.
  await admitNamespace(c.env, t.def, t.namespace, name, req, () => Promise.resolve(current !== null));
  if (req.verb === "create" && current) throw alreadyExists(ref);
  const extras = t.finalize ? { [FINALIZE_EXTRA]: true } : req.verb === "create" && t.def === findKind("flotilla.dev", "v1alpha1", "bootstraptokens") ? { secretHash: "" } : undefined;
  const ctx = { now: Date.now(), newUid: () => crypto.randomUUID(), extras };
  const { next, created } = computeWrite(t.def, { namespace: t.namespace, name }, req.verb === "create" ? null : current, req, ctx);
  if (next && next !== current && t.def.finalize) await t.def.finalize(next, req.verb === "create" ? null : current, ctx);
  const shown = next ?? current;
  if (!shown) throw notFound(ref);
  return json(shape(c, t.def, shown, "object"), created ? 201 : 200);
}

/** How many objects of a deletecollection are deleted at once. */
const DELETE_COLLECTION_CONCURRENCY = 8;

/**
 * DELETE on a collection (kube-apiserver's `deletecollection`): deletes each object that a list
 * with the request's `labelSelector` and `fieldSelector` selects, one by one as a DELETE of it
 * would (DeleteOptions preconditions, `dryRun`, finalizers, an accepted cluster's leave, the
 * after-commit hooks), and answers the list of those objects as their deletes left them (with
 * `deletionTimestamp` while a finalizer holds one). An object gone meanwhile is skipped; the
 * first other refusal is the answer. The path of a namespaced kind must name a namespace
 * (kube-apiserver serves deletecollection on namespaced paths only).
 * @throws ApiError 405 (system-owned kind, or all namespaces), 400 (bad selector or options)
 */
async function deleteCollection(c: Ctx, t: Target): Promise<Response> {
  if (t.def.namespaced && !t.namespace) throw methodNotAllowed("DELETE is not allowed on a collection across all namespaces");
  if (t.def.systemOwned) throw methodNotAllowed(`${t.def.plural}.${t.def.group} are written by the hub's scheduler only`);
  if (t.def === NamespaceKind) throw methodNotAllowed("DELETE is not allowed on the namespaces collection: delete each namespace");
  const req = await decodeDelete(c);
  const { filter, index } = selectorOf(c);
  const deleted: KubeObject[] = [];
  let after: { namespace: string; name: string } | undefined;
  let resourceVersion: string;
  do {
    const page = await listPage(store(c.env), t.def, t.namespace, { after, limit: LIST_CHUNK_ROWS, filter, index });
    resourceVersion = page.resourceVersion;
    for (let i = 0; i < page.items.length; i += DELETE_COLLECTION_CONCURRENCY) {
      const batch = page.items.slice(i, i + DELETE_COLLECTION_CONCURRENCY);
      const answers = await Promise.all(batch.map((o) => write(c, { ...t, name: o.metadata.name }, req)));
      for (const [j, res] of answers.entries()) {
        if (res.status === 404) continue;
        if (res.status >= 300) return res;
        const body = (await res.json()) as KubeObject;
        // A delete that removed the object at once answers a Status: the object is shown as listed.
        deleted.push(body.kind === "Status" ? present(t.def, batch[j]!) : body);
      }
    }
    after = page.next;
  } while (after);
  return json({ apiVersion: apiVersionOf(t.def), kind: t.def.listKind, metadata: { resourceVersion }, items: deleted });
}

/** The verbs discovery lists for a kind: read-only for what the hub alone writes; no deletecollection of namespaces (as kube-apiserver's). */
function verbsOf(k: KindDefinition): string[] {
  if (k.systemOwned) return ["get", "list", "watch"];
  const all = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
  return k === NamespaceKind ? all.filter((v) => v !== "deletecollection") : all;
}

function discoveryResources(group: string, version: string) {
  const audit = group === AUDIT_GROUP && version === AUDIT_VERSION ? [AUDIT_DISCOVERY] : [];
  return [...KINDS.filter((k) => k.group === group && k.version === version).flatMap((k) => {
    const main = { name: k.plural, singularName: k.singular, namespaced: k.namespaced, kind: k.kind, verbs: verbsOf(k), shortNames: k.shortNames };
    const status = k.hasStatus ? [{ name: `${k.plural}/status`, singularName: "", namespaced: k.namespaced, kind: k.kind, verbs: ["get", "patch", "update"] }] : [];
    const finalize = k === NamespaceKind ? [{ name: `${k.plural}/finalize`, singularName: "", namespaced: false, kind: k.kind, verbs: ["update"] }] : [];
    return [main, ...finalize, ...status];
  }), ...audit];
}

/** Serves one request on a resource path: `prefix` is what precedes the resource part (`/apis/{group}/{version}/`). */
async function serve(c: Ctx, group: string, version: string, prefix: string): Promise<Response> {
  const rest = new URL(c.req.url).pathname.slice(prefix.length).split("/").filter((s) => s !== "");
  const t = resolve(group, version, rest);
  const method = c.req.method;
  const warnings: string[] = [];
  // As kube-apiserver, an answer the client cannot take is refused (406) before anything is done.
  negotiate(c.req.header("accept"), method === "GET" && t.name === undefined ? (queryFlag(c.req.query("watch")) ? "watch" : "list") : "object");
  if (t.finalize && method !== "PUT") throw methodNotAllowed(`${method} is not allowed on the finalize subresource`);
  if (method === "GET") return t.name === undefined ? list(c, t) : get(c, t);
  if (method === "POST") {
    if (t.name !== undefined) throw methodNotAllowed("POST is only allowed on a collection");
    return write(c, t, { verb: "create", body: await decodeObjectBody(c, warnings, decodesProtobuf(apiVersionOf(t.def), t.def.kind)) }, warnings);
  }
  if (method === "DELETE" && t.name === undefined && !t.subresource) return deleteCollection(c, t);
  if (t.name === undefined) throw methodNotAllowed(`${method} is not allowed on a collection`);
  if (method === "PUT") {
    return write(c, t, { verb: "update", body: await decodeObjectBody(c, warnings, decodesProtobuf(apiVersionOf(t.def), t.def.kind)), subresource: t.subresource }, warnings);
  }
  // kube-apiserver takes strategic merge patches for its built-in (core) kinds, not for custom resources.
  if (method === "PATCH") return write(c, t, await decodePatch(c, t.subresource, warnings, t.def.group === ""), warnings);
  if (method === "DELETE") {
    if (t.subresource) throw methodNotAllowed("DELETE is not allowed on the status subresource");
    return write(c, t, await decodeDelete(c));
  }
  throw methodNotAllowed(`${method} is not allowed`);
}

/**
 * The `/api` routes of the core group (group "", version v1; e.g. Secrets), as the apiserver's
 * legacy API: `GET /api` (APIVersions), `GET /api/v1` (APIResourceList) and the generic resource
 * endpoints `/api/v1[/namespaces/{ns}]/{plural}[/{name}]`, with the same authorisation.
 *
 * @example app.route("/api", coreRoutes());
 */
export function coreRoutes(): Hono<{ Bindings: Env }> {
  const app = apiApp();
  const versions = servedGroups().find((g) => g.group === "")?.versions ?? [];
  app.get("/", (c) => {
    const aggregated = wantsAggregatedDiscovery(c.req.header("accept"));
    return aggregated ? aggregatedDiscovery(true, aggregated) : c.json({ kind: "APIVersions", versions, serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: new URL(c.req.url).host }] });
  });
  app.get("/:version", (c) => c.json(resourceList("", c.req.param("version"))));
  app.all("/:version/*", (c) => serve(c, "", c.req.param("version"), `/api/${c.req.param("version")}/`));
  return app;
}

/** A Hono app for `/api` or `/apis`: every request authorised, errors as Status objects. */
function apiApp(): Hono<{ Bindings: Env }> {
  const app = new Hono<{ Bindings: Env }>();
  app.use("*", async (c, next) => {
    await authorize(c);
    await ensureBuiltins(c.env);
    await next();
  });
  app.onError((err) => {
    if (err instanceof ApiError) return statusResponse(err);
    throw err;
  });
  return app;
}

/** The APIResourceList of a group version ("" for the core group). @throws ApiError 404 when nothing is served there */
function resourceList(group: string, version: string) {
  const resources = discoveryResources(group, version);
  if (resources.length === 0) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion: group ? `${group}/${version}` : version, resources };
}

/** The media type of aggregated discovery (apidiscovery.k8s.io), v2 or v2beta1. */
function aggregatedDiscoveryType(version: string): string {
  return `application/json;g=apidiscovery.k8s.io;v=${version};as=APIGroupDiscoveryList`;
}

/**
 * The apidiscovery.k8s.io version an `Accept` header asks for first (`v2`, `v2beta1`), or null when
 * it prefers the unaggregated documents (APIVersions, APIGroupList): kube-apiserver's choice
 * between the two forms of `/api` and `/apis`.
 */
function wantsAggregatedDiscovery(accept: string | undefined): string | null {
  for (const r of mediaRanges(accept ?? "")) {
    if (r.type === "application/json" && r.params.get("as") === "APIGroupDiscoveryList" && r.params.get("g") === "apidiscovery.k8s.io") {
      const v = r.params.get("v");
      if (v === "v2" || v === "v2beta1") return v;
      continue;
    }
    if (r.type === "application/json" || r.type === "*/*" || r.type === "application/*") return null;
  }
  return null;
}

/** A kind's subresources in aggregated discovery: a Namespace's `finalize`, and `status`. */
function subresourcesOf(k: KindDefinition, responseKind: { group: string; version: string; kind: string }) {
  const subresources = [
    ...(k === NamespaceKind ? [{ subresource: "finalize", responseKind, verbs: ["update"] }] : []),
    ...(k.hasStatus ? [{ subresource: "status", responseKind, verbs: ["get", "patch", "update"] }] : []),
  ];
  return subresources.length > 0 ? { subresources } : {};
}

/**
 * Aggregated discovery (KEP-3352, `apidiscovery.k8s.io` APIGroupDiscoveryList) of the core group
 * (`core`: what `/api` answers) or of every other group (`/apis`): each group with its versions in
 * preference order, each version with its resources (scope, kinds, verbs, short names, the status
 * subresource), so that a client learns the whole API in two requests instead of one per version.
 */
function aggregatedDiscovery(core: boolean, version: string) {
  const items = servedGroups()
    .filter((g) => (g.group === "") === core)
    .map((g) => ({
      metadata: { name: g.group, creationTimestamp: null },
      versions: g.versions.map((v) => ({
        version: v,
        freshness: "Current",
        resources: KINDS.filter((k) => k.group === g.group && k.version === v).map((k) => {
          const responseKind = { group: g.group, version: v, kind: k.kind };
          return {
            resource: k.plural,
            responseKind,
            scope: k.namespaced ? "Namespaced" : "Cluster",
            singularResource: k.singular,
            verbs: verbsOf(k),
            ...(k.shortNames?.length ? { shortNames: k.shortNames } : {}),
            ...subresourcesOf(k, responseKind),
          };
        }).concat(g.group === AUDIT_GROUP && v === AUDIT_VERSION ? [auditAggregated()] : []),
      })),
    }));
  return new Response(JSON.stringify({ kind: "APIGroupDiscoveryList", apiVersion: `apidiscovery.k8s.io/${version}`, metadata: {}, items }), {
    headers: { "content-type": aggregatedDiscoveryType(version) },
  });
}

/** AuditEvents (src/audit/routes.ts) in aggregated discovery: cluster-scoped, list and watch. */
function auditAggregated() {
  const { name, singularName, kind, verbs } = AUDIT_DISCOVERY;
  return { resource: name, responseKind: { group: AUDIT_GROUP, version: AUDIT_VERSION, kind }, scope: "Cluster", singularResource: singularName, verbs };
}

/** The `/apis` routes: discovery documents and the generic resource endpoints. */
export function resourceRoutes(): Hono<{ Bindings: Env }> {
  const app = apiApp();

  app.get("/", (c) => {
    const aggregated = wantsAggregatedDiscovery(c.req.header("accept"));
    if (aggregated) return aggregatedDiscovery(false, aggregated);
    return c.json({
      kind: "APIGroupList",
      apiVersion: "v1",
      groups: servedGroups().filter((g) => g.group !== "").map((g) => ({
        name: g.group,
        versions: g.versions.map((v) => ({ groupVersion: `${g.group}/${v}`, version: v })),
        preferredVersion: { groupVersion: `${g.group}/${g.versions[0]}`, version: g.versions[0] },
      })),
    });
  });

  app.get("/:group/:version", (c) => c.json(resourceList(c.req.param("group"), c.req.param("version"))));

  // The audit log (src/audit): not a stored kind; list and watch only.
  app.all(`/${AUDIT_GROUP}/${AUDIT_VERSION}/${AUDIT_RESOURCE}`, (c) => serveAuditEvents(c, []));
  app.all(`/${AUDIT_GROUP}/${AUDIT_VERSION}/${AUDIT_RESOURCE}/*`, (c) =>
    serveAuditEvents(c, new URL(c.req.url).pathname.split("/").slice(5).filter((s) => s !== "")),
  );

  app.all("/:group/:version/*", (c) => {
    const { group, version } = c.req.param();
    return serve(c, group, version, `/apis/${group}/${version}/`);
  });
  return app;
}
