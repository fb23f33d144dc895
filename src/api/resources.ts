/**
 * The generic Kubernetes resource endpoints, shared by every kind (after the apiserver's generic
 * registry): `/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/status]]` with get, list
 * (labelSelector, fieldSelector), create, update, merge patch, server-side apply and delete.
 * D1-stored kinds commit through the D1 store; ManagedCluster goes through its Durable Object; a
 * computed kind (a cluster's Lease, `KindDefinition.computed`) is read through its reader
 * (src/api/leases.ts) with the same selectors, paging and answer forms, and is never written.
 */
import { Hono } from "hono";
import { alreadyExists, ApiError, badRequest, methodNotAllowed, notFound } from "../k8s/errors.ts";
import { apiVersionOf, type KindDefinition } from "../k8s/kind.ts";
import { matches, parseSelector, SelectorParseError } from "../k8s/labels.ts";
import { FieldSelectorError, matchesFields, parseFieldSelector, type FieldRequirement } from "../k8s/fields.ts";
import { isJsonObject, type KubeObject } from "../k8s/meta.ts";
import { LIST_CHUNK_ROWS, parseResourceVersion, type LabelIndexRequirement } from "../store/store.ts";
import { computeWrite, decode, type WriteRequest } from "../k8s/write.ts";
import { isDNS1123Label } from "../k8s/validation.ts";
import { findKind, KINDS, servedGroups } from "../kinds/index.ts";
import { FINALIZE_EXTRA, NamespaceKind } from "../kinds/namespace.ts";
import { admitNamespace } from "../namespaces/lifecycle.ts";
import { randomToken, sha256Hex, takeChosenToken } from "../kinds/bootstraptoken.ts";
import { bearerToken } from "../auth/credentials.ts";
import { apiAccess } from "../auth/request.ts";
import { authorizeRequest, isPrivileged, rbacWriteExtras } from "../auth/rbac-store.ts";
import { isNonResourceRequest, RBAC_GROUP } from "../auth/rbac.ts";
import { admitBindingCreate, admitClusterWrite, type ClusterTransition } from "../auth/ocm-admission.ts";
import { viewFilter } from "../auth/clusterview.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ManagedClusterSetBindingKind } from "../kinds/placement.ts";
import { ensureBuiltins } from "./builtins.ts";
import { answerReview } from "./reviews.ts";
import { clusterLeases, type ComputedReader } from "./leases.ts";
import { LeaseKind } from "../kinds/lease.ts";
import type { ApiContext, ApiEnv } from "./context.ts";
import { ServiceAccountKind } from "../kinds/serviceaccount.ts";
import { EventsV1EventKind } from "../kinds/event.ts";
import { createToken } from "../auth/serviceaccounts.ts";
import { clock } from "../clock.ts";
import { storageOf } from "../store/storage.ts";
import { AUDIT_DISCOVERY, AUDIT_GROUP, AUDIT_RESOURCE, AUDIT_VERSION, serveAuditEvents } from "../audit/routes.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { orphanWorkWarning } from "../work/orphan-warning.ts";
import { toTable } from "../k8s/table.ts";
import { mediaRanges, negotiate, partialObjectMetadata, partialObjectMetadataList, type Answering } from "./negotiate.ts";
import { checkWatchListOptions, clientOf, watchResponse } from "./watch.ts";
import { dropUnknownFields, fieldValidationOf, unknownFieldMessages, warningHeader } from "./fieldvalidation.ts";
import { decodesProtobuf } from "./protobuf.ts";
import { decodeDelete, decodeObjectBody, decodePatch, fieldManagerOf, decodePathSegment, queryFlag, statusResponse } from "./request.ts";

type Ctx = ApiContext;

interface Target {
  def: KindDefinition;
  namespace: string;
  name?: string;
  subresource?: "status";
  /** A Namespace's `finalize` subresource (PUT only): the write changes `spec.finalizers` alone. */
  finalize?: boolean;
  /** A list or watch through a view (`KindDefinition.viewOf`): the view's kind, and what the user may see. */
  view?: { def: KindDefinition; visible: (obj: KubeObject) => boolean };
  /** A ServiceAccount's `token` subresource (POST only): a TokenRequest (src/auth/serviceaccounts.ts). */
  token?: boolean;
}

/** The reader of each computed kind (`KindDefinition.computed`). */
const COMPUTED = new Map<KindDefinition, ComputedReader>([[LeaseKind, clusterLeases]]);

/** The reader of computed kind `def`, or undefined for a stored kind. */
function computedReader(def: KindDefinition): ComputedReader | undefined {
  return def.computed ? COMPUTED.get(def) : undefined;
}

/**
 * The 405 of a verb a computed kind does not serve, as kube-apiserver's `NewMethodNotSupported`
 * (details: the group and resource). `message` is the kind's refusal.
 */
function notServed(def: KindDefinition, message: string): ApiError {
  return new ApiError(405, "MethodNotAllowed", message, { group: def.group, kind: def.plural });
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
  if (def === ServiceAccountKind && sub === "token" && extra.length === 0 && namespace && isDNS1123Label(namespace).length === 0)
    return { def, namespace, name, token: true };
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

/**
 * The requirement of a parsed label selector that the label index answers (src/store/d1/objects.ts
 * `listPage`): its first `=`, `==` or `in` requirement (a set of values: the most selective kind),
 * else its first `exists`; undefined when it has none (only `!=`, `notin`, `!key`: a scan).
 */
function indexRequirement(sel: ReturnType<typeof parseSelector>): LabelIndexRequirement | undefined {
  const exact = sel.requirements.find((r) => r.operator === "=" || r.operator === "==" || r.operator === "in");
  if (exact) return { key: exact.key, values: [...exact.values] };
  const exists = sel.requirements.find((r) => r.operator === "exists");
  return exists ? { key: exists.key } : undefined;
}

/** The fields of `obj` a field selector of kind `def` may name (`KindDefinition.fieldSelectors`; else metadata.name and metadata.namespace). */
function selectableFields(def: KindDefinition, obj: KubeObject): Record<string, string> {
  return def.fieldSelectors ? def.fieldSelectors(obj) : { "metadata.name": obj.metadata.name, "metadata.namespace": obj.metadata.namespace ?? "" };
}

/** The field selector names kind `def` supports, found from an empty object of it. */
function supportedFields(def: KindDefinition): Set<string> {
  return new Set(Object.keys(selectableFields(def, { apiVersion: "", kind: "", metadata: { name: "", uid: "", resourceVersion: "", creationTimestamp: "" } })));
}

/**
 * The request's `labelSelector` and `fieldSelector` (the kind's selectable fields, by default
 * metadata.name and metadata.namespace): the filter a listed object (in the form of kind `def`)
 * must pass, and the label requirement the label index reads rows by.
 * @throws ApiError 400 for a selector that does not parse, or an unsupported field
 */
function selectorOf(c: Ctx, def: KindDefinition): { filter: (obj: KubeObject) => boolean; index?: LabelIndexRequirement } {
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
  let fields: FieldRequirement[] = [];
  if (fs) {
    try {
      fields = parseFieldSelector(fs);
    } catch (e) {
      if (e instanceof FieldSelectorError) throw badRequest(e.message, "fieldSelector");
      throw e;
    }
    const supported = supportedFields(def);
    for (const r of fields) if (!supported.has(r.field)) throw badRequest(`field label not supported: ${r.field}`, "fieldSelector");
  }
  const filter = (obj: KubeObject) => {
    if (labelSel && !matches(labelSel, obj.metadata.labels ?? {})) return false;
    if (fields.length === 0) return true;
    const values = selectableFields(def, obj);
    return matchesFields(fields, (f) => values[f] ?? "");
  };
  return { filter, index: labelSel ? indexRequirement(labelSel) : undefined };
}

/**
 * A list or watch. A kind served from another kind's objects (`KindDefinition.conversion`) reads
 * the stored kind's rows and watch log, each object converted before the selectors see it and
 * before it is answered, as kube-apiserver serves one storage in several group versions.
 */
async function list(c: Ctx, t: Target): Promise<Response> {
  if (t.def.viewOf) return list(c, { ...t, def: t.def.viewOf, view: { def: t.def, visible: await viewFilter(c.env, c.var.user, t.def.viewOf) } });
  const conv = t.def.conversion;
  const rows = conv?.storage ?? t.def;
  const served = conv ? (o: KubeObject) => conv.fromStorage(o) : (o: KubeObject) => o;
  const { filter: requested, index } = selectorOf(c, t.def);
  const visible = t.view?.visible;
  const selects = visible ? (o: KubeObject) => visible(o) && requested(o) : requested;
  const filter = conv ? (o: KubeObject) => selects(served(o)) : selects;
  const namespace = t.def.namespaced ? t.namespace || undefined : "";
  const watching = queryFlag(c.req.query("watch"));
  const sendInitialEvents = c.req.query("sendInitialEvents");
  const resourceVersion = c.req.query("resourceVersion");
  checkWatchListOptions({
    watch: watching,
    sendInitialEvents,
    allowWatchBookmarks: queryFlag(c.req.query("allowWatchBookmarks")),
    resourceVersionMatch: c.req.query("resourceVersionMatch"),
    resourceVersion,
    continue: c.req.query("continue"),
  });
  if (watching && t.def.computed) {
    parseResourceVersion(resourceVersion);
    throw notServed(t.def, t.def.computed.watchRefusal);
  }
  if (watching) {
    return watchResponse(
      admittedStoreOf(c.env, rows),
      storageOf(c.env),
      namespace,
      filter,
      (o) => shape(c, t.def, served(o), "watch"),
      {
        resourceVersion,
        timeoutSeconds: c.req.query("timeoutSeconds"),
        allowWatchBookmarks: queryFlag(c.req.query("allowWatchBookmarks")),
        sendInitialEvents: sendInitialEvents === undefined ? undefined : queryFlag(sendInitialEvents),
        client: await clientOf(bearerToken(c) ?? ""),
        signal: c.req.raw.signal,
        // A view's watch: a cluster that leaves the sets the user sees goes as DELETED (src/auth/clusterview.ts).
        transitions: visible !== undefined,
      },
      (p) => c.executionCtx.waitUntil(p),
    );
  }
  const asked = parseResourceVersion(resourceVersion);
  const limit = limitOf(c.req.query("limit"));
  const after = continueKey(c.req.query("continue"));
  // As the etcd3 store: a continued list carries its version in the token, not in resourceVersion.
  if (after && asked !== 0n) throw badRequest("specifying resource version is not allowed when using continue", "resourceVersion");
  const computed = computedReader(t.def);
  // A list from a resourceVersion answers data at least that new (NotOlderThan; an Exact match,
  // or a legacy one with a limit, is served at the current version): a version the store has not
  // reached gets kube-apiserver's 504 "Too large resource version" after a brief wait. A computed
  // kind's objects are read as they are now (its versions are not the D1 counter's).
  if (!computed) await storageOf(c.env).awaitResourceVersion(asked, c.req.raw.signal);
  // As the apiserver: remainingItemCount only when no selector filters the rows.
  const selected = Boolean(c.req.query("labelSelector") || c.req.query("fieldSelector"));
  const page = computed
    ? await computed.list(c.env, namespace, { after, limit, filter })
    : await admittedStoreOf(c.env, rows).listPage(namespace, { after, limit, filter, countRemaining: !selected && !visible, index });
  const shown = page.items.map((o) => present(t.def, served(o)));
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
  return json({ apiVersion: apiVersionOf(t.view?.def ?? t.def), kind: t.def.listKind, metadata: listMeta, items: shown });
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
  return btoa(JSON.stringify({ v: "flotilla.dev/v1", start: `${last.namespace}/${last.name}` }))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
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
  const asked = parseResourceVersion(c.req.query("resourceVersion"));
  const computed = computedReader(t.def);
  // A get from a resourceVersion, as kube-apiserver's (watch cache `WaitUntilFreshAndGet`): the
  // object as it is now once the hub has reached that version, else 504 Too large resource version.
  // A computed object is always read as it is now (its versions are not the D1 counter's).
  if (!computed) await storageOf(c.env).awaitResourceVersion(asked, c.req.raw.signal);
  const obj = computed ? await computed.get(c.env, t.namespace, t.name!) : await admittedStoreOf(c.env, t.def).get(t.namespace, t.name!);
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

/**
 * A server-side apply of an object that does not exist creates it: as kube-apiserver's patch
 * handler, the user must then also be allowed to `create` it (the request was authorized as
 * `patch`). `system:masters` is not checked (nothing is read).
 * @throws ApiError 403 as kube-apiserver words it
 */
async function authorizeCreateOnApply(c: Ctx, t: Target, req: WriteRequest): Promise<void> {
  if (req.verb !== "patch" || req.patchType !== "apply" || req.subresource || t.name === undefined || isPrivileged(c.var.user)) return;
  if (await admittedStoreOf(c.env, t.def).get(t.namespace, t.name)) return;
  const attrs = c.var.attributes;
  if (isNonResourceRequest(attrs)) return;
  await authorizeRequest(c.env, c.var.user, { ...attrs, verb: "create" });
}

/** Runs a decoded write; `warnings` (from decoding the body under `fieldValidation=Warn`) become `Warning` headers. */
async function write(c: Ctx, t: Target, req: WriteRequest, warnings: string[] = []): Promise<Response> {
  if (t.def.systemOwned) throw methodNotAllowed(`${t.def.plural}.${t.def.group} are written by the hub's scheduler only`);
  const mode = req.verb === "delete" ? "Strict" : fieldValidationOf(c);
  const dropped = dropUnknownFields(t.def.schema, req, mode);
  const dryRun = c.req.queries("dryRun") ?? [];
  for (const v of dryRun) if (v !== "All") throw badRequest(`dryRun: Unsupported value: ${JSON.stringify(v)}: supported values: "All"`, "dryRun");
  await authorizeCreateOnApply(c, t, req);
  const response = dryRun.length > 0 ? await writeDryRun(c, t, req) : await writeValidated(c, t, req);
  if (mode === "Warn") warnings.push(...unknownFieldMessages(dropped));
  const orphan = await orphanWorkWarning(c.env, t.def, t.namespace, response.status);
  if (orphan !== undefined) warnings.push(orphan);
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
      // The admin's chosen token (spec.token, write-only) or a generated one; only its hash is kept.
      secret = takeChosenToken(req.body) ?? randomToken(16);
      if (isJsonObject(req.body) && isJsonObject(req.body.metadata) && typeof req.body.metadata.name === "string") name = req.body.metadata.name;
      extras = { secretHash: await sha256Hex(secret) };
    }
  }
  if (t.finalize) extras = { [FINALIZE_EXTRA]: true };
  const rbac = await rbacWriteExtras(c.env, t.def, c.var.user);
  if (rbac) extras = { ...extras, ...rbac };
  const admitted = await admitOcm(c, t, req, name);
  const outcome = await admittedStoreOf(c.env, t.def).write(t.namespace, name, req, { extras, ...(admitted ? { admitted } : {}) });
  if (!outcome.object) {
    return json({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", details: { name, group: t.def.group, kind: t.def.plural } });
  }
  const out = structuredClone(outcome.object);
  if (secret && outcome.created) out.status = { ...(out.status ?? {}), token: `${outcome.object.metadata.name}.${secret}` };
  return json(shape(c, t.def, out, "object"), outcome.created ? 201 : 200);
}

/**
 * OCM's multi-tenancy checks of an API write (src/auth/ocm-admission.ts), for a user outside
 * `system:masters`: a ManagedCluster write is computed on the object as stored to learn what it
 * changes, which is checked and answered (the cluster's object holds the write to it); the create
 * of a ManagedClusterSetBinding needs the bind permission. Nothing for deletes or other kinds.
 * @throws ApiError 403 as OCM's webhooks word it, the write's own 4xx; errors of the store
 */
async function admitOcm(c: Ctx, t: Target, req: WriteRequest, name: string | undefined): Promise<ClusterTransition | undefined> {
  if (req.verb === "delete" || isPrivileged(c.var.user)) return undefined;
  const cluster = t.def === ManagedClusterKind;
  if (!cluster && (t.def !== ManagedClusterSetBindingKind || (req.verb !== "create" && req.subresource))) return undefined;
  const current = req.verb === "create" || !name ? null : await admittedStoreOf(c.env, t.def).get(t.namespace, name);
  if (!cluster && current) return undefined;
  const { next } = computeWrite(t.def, { namespace: t.namespace, name }, current, req, { now: clock.now(), newUid: () => crypto.randomUUID() });
  if (cluster) return admitClusterWrite(c.env, c.var.user, name ?? next?.metadata.name ?? "", current, next);
  await admitBindingCreate(c.env, c.var.user, String((next?.spec as { clusterSet?: unknown } | undefined)?.clusterSet ?? ""));
  return undefined;
}

/**
 * `dryRun=All` (apiserver): the write is decoded, defaulted and validated exactly as a real one
 * and the answer is the object that would be stored, but nothing is stored and nothing is
 * triggered. Server-set fields computed at commit (resourceVersion, the hub controllers'
 * conditions) are absent or stale in the answer. @throws ApiError as the real write would
 */
async function writeDryRun(c: Ctx, t: Target, req: WriteRequest): Promise<Response> {
  if (req.verb === "create" && t.def === findKind("flotilla.dev", "v1alpha1", "bootstraptokens")) takeChosenToken(req.body);
  const meta = req.verb === "create" && isJsonObject(req.body) && isJsonObject(req.body.metadata) ? req.body.metadata : {};
  const name = req.verb === "create" ? (typeof meta.name === "string" ? meta.name : undefined) : t.name;
  const current = name ? await admittedStoreOf(c.env, t.def).get(t.namespace, name) : null;
  const ref = { group: t.def.group, plural: t.def.plural, name };
  // NamespaceLifecycle admits a dry run as a real write.
  await admitNamespace(c.env, t.def, t.namespace, name, req, () => Promise.resolve(current !== null));
  if (req.verb === "create" && current) throw alreadyExists(ref);
  // OCM's webhooks check a dry run as a real write.
  await admitOcm(c, t, req, name);
  const extras = {
    ...(t.finalize
      ? { [FINALIZE_EXTRA]: true }
      : req.verb === "create" && t.def === findKind("flotilla.dev", "v1alpha1", "bootstraptokens")
        ? { secretHash: "" }
        : {}),
    ...(await rbacWriteExtras(c.env, t.def, c.var.user)),
  };
  const ctx = { now: Date.now(), newUid: () => crypto.randomUUID(), extras };
  const { next, created } = computeWrite(t.def, { namespace: t.namespace, name }, req.verb === "create" ? null : current, req, ctx);
  if (next && next !== current && t.def.finalize) await t.def.finalize(next, req.verb === "create" ? null : current, ctx);
  const shown = next ?? current;
  if (!shown) throw notFound(ref);
  return json(shape(c, t.def, shown, "object"), created ? 201 : 200);
}

/**
 * A request on a review kind (`createOnly`, src/api/reviews.ts): a POST on the collection is
 * decoded, checked against the kind's schema and answered; any other method is 405, as
 * kube-apiserver's create-only resources answer.
 * @throws ApiError 400 (undecodable or unknown fields), 405, 422
 */
async function review(c: Ctx, t: Target, method: string, warnings: string[]): Promise<Response> {
  if (method !== "POST" || t.name !== undefined) throw methodNotAllowed("the server does not allow this method on the requested resource");
  const body = await decodeObjectBody(c, warnings, decodesProtobuf(apiVersionOf(t.def), t.def.kind));
  const req: WriteRequest = { verb: "create", body };
  const mode = fieldValidationOf(c);
  const dropped = dropUnknownFields(t.def.schema, req, mode);
  const response = await answerReview(c, t.def, decode(t.def, req.body, undefined) as unknown as Record<string, unknown>);
  if (mode === "Warn") warnings.push(...unknownFieldMessages(dropped));
  const orphan = await orphanWorkWarning(c.env, t.def, t.namespace, response.status);
  if (orphan !== undefined) warnings.push(orphan);
  for (const w of warnings) response.headers.append("Warning", warningHeader(w));
  return response;
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
  const { filter: selects, index } = selectorOf(c, t.def);
  const conv = t.def.conversion;
  const filter = conv ? (o: KubeObject) => selects(conv.fromStorage(o)) : selects;
  const deleted: KubeObject[] = [];
  let after: { namespace: string; name: string } | undefined;
  let resourceVersion: string;
  do {
    const page = await admittedStoreOf(c.env, conv?.storage ?? t.def).listPage(t.namespace, { after, limit: LIST_CHUNK_ROWS, filter, index });
    resourceVersion = page.resourceVersion;
    for (let i = 0; i < page.items.length; i += DELETE_COLLECTION_CONCURRENCY) {
      const batch = page.items.slice(i, i + DELETE_COLLECTION_CONCURRENCY);
      const answers = await Promise.all(batch.map((o) => write(c, { ...t, name: o.metadata.name }, req)));
      for (const [j, res] of answers.entries()) {
        if (res.status === 404) continue;
        if (res.status >= 300) return res;
        const body = (await res.json()) as KubeObject;
        // A delete that removed the object at once answers a Status: the object is shown as listed.
        deleted.push(body.kind === "Status" ? present(t.def, conv ? conv.fromStorage(batch[j]!) : batch[j]!) : body);
      }
    }
    after = page.next;
  } while (after);
  return json({ apiVersion: apiVersionOf(t.def), kind: t.def.listKind, metadata: { resourceVersion }, items: deleted });
}

/** The verbs discovery lists for a kind: read-only for what the hub alone writes; no deletecollection of namespaces (as kube-apiserver's). */
function verbsOf(k: KindDefinition): string[] {
  if (k.createOnly) return ["create"];
  if (k.viewOf) return ["list", "watch"];
  if (k.computed) return ["get", "list"];
  if (k.systemOwned) return ["get", "list", "watch"];
  const all = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
  return k === NamespaceKind ? all.filter((v) => v !== "deletecollection") : all;
}

function discoveryResources(group: string, version: string) {
  const audit = group === AUDIT_GROUP && version === AUDIT_VERSION ? [AUDIT_DISCOVERY] : [];
  return [
    ...KINDS.filter((k) => k.group === group && k.version === version).flatMap((k) => {
      const main = { name: k.plural, singularName: k.singular, namespaced: k.namespaced, kind: k.kind, verbs: verbsOf(k), shortNames: k.shortNames };
      const status = k.hasStatus
        ? [{ name: `${k.plural}/status`, singularName: "", namespaced: k.namespaced, kind: k.kind, verbs: ["get", "patch", "update"] }]
        : [];
      const finalize = k === NamespaceKind ? [{ name: `${k.plural}/finalize`, singularName: "", namespaced: false, kind: k.kind, verbs: ["update"] }] : [];
      const created = (k.createSubresources ?? []).map((s) => ({
        name: `${k.plural}/${s.name}`,
        singularName: "",
        namespaced: k.namespaced,
        group: s.group,
        version: s.version,
        kind: s.kind,
        verbs: ["create"],
      }));
      return [main, ...finalize, ...status, ...created];
    }),
    ...audit,
  ];
}

/** Serves one request on a resource path: `prefix` is what precedes the resource part (`/apis/{group}/{version}/`). */
async function serve(c: Ctx, group: string, version: string, prefix: string): Promise<Response> {
  const rest = new URL(c.req.url).pathname
    .slice(prefix.length)
    .split("/")
    .filter((s) => s !== "");
  const t = resolve(group, version, rest);
  const method = c.req.method;
  const warnings: string[] = [];
  // As kube-apiserver, an answer the client cannot take is refused (406) before anything is done.
  negotiate(c.req.header("accept"), method === "GET" && t.name === undefined ? (queryFlag(c.req.query("watch")) ? "watch" : "list") : "object");
  if (t.finalize && method !== "PUT") throw methodNotAllowed(`${method} is not allowed on the finalize subresource`);
  if (t.def.createOnly) return review(c, t, method, warnings);
  if (t.def.viewOf && (method !== "GET" || t.name !== undefined)) throw methodNotAllowed("the server does not allow this method on the requested resource");
  if (t.def.computed && method !== "GET") throw notServed(t.def, t.def.computed.refusal);
  if (t.token) {
    if (method !== "POST") throw methodNotAllowed(`${method} is not allowed on the token subresource`);
    const body = await decodeObjectBody(c, warnings, decodesProtobuf("authentication.k8s.io/v1", "TokenRequest"));
    return json(await createToken(c.env, c.req.url, t.namespace, t.name!, body, clock.now()), 201);
  }
  if (method === "GET") return t.name === undefined ? list(c, t) : get(c, t);
  if (method === "POST") {
    if (t.name !== undefined) throw methodNotAllowed("POST is only allowed on a collection");
    const fieldManager = fieldManagerOf(c, "CreateOptions");
    return write(c, t, { verb: "create", body: await decodeObjectBody(c, warnings, decodesProtobuf(apiVersionOf(t.def), t.def.kind)), fieldManager }, warnings);
  }
  if (method === "DELETE" && t.name === undefined && !t.subresource) return deleteCollection(c, t);
  if (t.name === undefined) throw methodNotAllowed(`${method} is not allowed on a collection`);
  if (method === "PUT") {
    const fieldManager = fieldManagerOf(c, "UpdateOptions");
    return write(
      c,
      t,
      { verb: "update", body: await decodeObjectBody(c, warnings, decodesProtobuf(apiVersionOf(t.def), t.def.kind)), subresource: t.subresource, fieldManager },
      warnings,
    );
  }
  // kube-apiserver takes strategic merge patches for its built-in kinds (core, RBAC, events.k8s.io), not for custom resources.
  if (method === "PATCH")
    return write(
      c,
      t,
      await decodePatch(c, t.subresource, warnings, t.def.group === "" || t.def.group === RBAC_GROUP || t.def.group === EventsV1EventKind.group),
      warnings,
    );
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
export function coreRoutes(): Hono<ApiEnv> {
  const app = apiApp();
  const versions = servedGroups().find((g) => g.group === "")?.versions ?? [];
  app.get("/", (c) => {
    const aggregated = wantsAggregatedDiscovery(c.req.header("accept"));
    return aggregated
      ? aggregatedDiscovery(true, aggregated)
      : c.json({ kind: "APIVersions", versions, serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: new URL(c.req.url).host }] });
  });
  app.get("/:version", (c) => c.json(resourceList("", c.req.param("version"))));
  app.all("/:version/*", (c) => serve(c, "", c.req.param("version"), `/api/${c.req.param("version")}/`));
  return app;
}

/**
 * A Hono app for `/api` or `/apis`: every request authenticated and authorized (src/auth/request.ts
 * `apiAccess`; the built-in objects made first), errors as Status objects.
 */
function apiApp(): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>();
  app.use("*", apiAccess(ensureBuiltins));
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

/** A kind's subresources in aggregated discovery: a Namespace's `finalize`, `status`, and those created with another kind (a ServiceAccount's `token`). */
function subresourcesOf(k: KindDefinition, responseKind: { group: string; version: string; kind: string }) {
  const subresources = [
    ...(k === NamespaceKind ? [{ subresource: "finalize", responseKind, verbs: ["update"] }] : []),
    ...(k.hasStatus ? [{ subresource: "status", responseKind, verbs: ["get", "patch", "update"] }] : []),
    ...(k.createSubresources ?? []).map((s) => ({
      subresource: s.name,
      responseKind: { group: s.group, version: s.version, kind: s.kind },
      verbs: ["create"],
    })),
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
        resources: KINDS.filter((k) => k.group === g.group && k.version === v)
          .map((k) => {
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
          })
          .concat(g.group === AUDIT_GROUP && v === AUDIT_VERSION ? [auditAggregated()] : []),
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
export function resourceRoutes(): Hono<ApiEnv> {
  const app = apiApp();

  app.get("/", (c) => {
    const aggregated = wantsAggregatedDiscovery(c.req.header("accept"));
    if (aggregated) return aggregatedDiscovery(false, aggregated);
    return c.json({
      kind: "APIGroupList",
      apiVersion: "v1",
      groups: servedGroups()
        .filter((g) => g.group !== "")
        .map((g) => ({
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
    serveAuditEvents(
      c,
      new URL(c.req.url).pathname
        .split("/")
        .slice(5)
        .filter((s) => s !== ""),
    ),
  );

  app.all("/:group/:version/*", (c) => {
    const { group, version } = c.req.param();
    return serve(c, group, version, `/apis/${group}/${version}/`);
  });
  return app;
}
