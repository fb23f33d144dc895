/** The reads of the generic resource endpoints: get, and list or watch with paging (`limit`, `continue`). */
import { badRequest, notFoundStatus } from "../../k8s/errors.ts";
import { apiVersionOf } from "../../k8s/kind.ts";
import { type KubeObject } from "../../k8s/meta.ts";
import { parseResourceVersion } from "../../store/store.ts";
import { bearerToken } from "../../auth/credentials.ts";
import { viewFilter } from "../../auth/clusterview.ts";
import { clock } from "../../clock.ts";
import { storageOf } from "../../store/storage.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import { toTable } from "../../k8s/table.ts";
import { negotiate, partialObjectMetadataList } from "../negotiate.ts";
import { checkWatchListOptions, clientOf, watchResponse } from "../watch.ts";
import { queryFlag, statusAnswer } from "../request.ts";
import { type Ctx, type Target } from "./target.ts";
import { computedReader, notServed, present, json, shape } from "./answer.ts";
import { selectorOf } from "./selectors.ts";

/**
 * A list or watch. A kind served from another kind's objects (`KindDefinition.conversion`) reads
 * the stored kind's rows and watch log, each object converted before the selectors see it and
 * before it is answered, as kube-apiserver serves one storage in several group versions.
 */
export async function list(c: Ctx, t: Target): Promise<Response> {
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

/**
 * A GET of one object, in the form the request's `Accept` asks for.
 * @throws ApiError 404 when it does not exist, 504 when `resourceVersion` is ahead of the hub
 */
export async function get(c: Ctx, t: Target): Promise<Response> {
  const ref = { group: t.def.group, plural: t.def.plural, name: t.name };
  const asked = parseResourceVersion(c.req.query("resourceVersion"));
  const computed = computedReader(t.def);
  // A get from a resourceVersion, as kube-apiserver's (watch cache `WaitUntilFreshAndGet`): the
  // object as it is now once the hub has reached that version, else 504 Too large resource version.
  // A computed object is always read as it is now (its versions are not the D1 counter's).
  if (!computed) await storageOf(c.env).awaitResourceVersion(asked, c.req.raw.signal);
  const obj = computed ? await computed.get(c.env, t.namespace, t.name!) : await admittedStoreOf(c.env, t.def).get(t.namespace, t.name!);
  // Answered, not thrown: no Error is made for the first request of every `kubectl apply` of a new
  // object (src/k8s/errors.ts `notFoundStatus`).
  if (!obj) return statusAnswer(notFoundStatus(ref));
  return json(shape(c, t.def, obj, "object"));
}
