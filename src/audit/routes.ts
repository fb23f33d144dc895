/**
 * Reading the audit log through the API: `flotilla.dev/v1alpha1` AuditEvents at
 * `/apis/flotilla.dev/v1alpha1/auditevents`, cluster-scoped, list and watch only (every other
 * method, and any path below the collection, is 405 MethodNotAllowed, kube-apiserver's answer to
 * a verb a resource does not serve). Each AuditEvent is a stored `audit.k8s.io/v1` Event
 * (src/audit/event.ts) with `apiVersion: flotilla.dev/v1alpha1`, `kind: AuditEvent` and
 * `metadata` (`name`: the audit ID; `creationTimestamp`: when the request was received, to the
 * second; `resourceVersion`: the record's sequence number in the log).
 *
 * - list: oldest first; `limit` and `continue` page it (the token carries the last sequence
 *   number read); `fieldSelector` on `user.username`, `verb`, `objectRef.resource`,
 *   `objectRef.namespace`, `metadata.name` (`=`, `==`, `!=`) and `requestReceivedTimestamp`
 *   (`>=` and `<` an RFC 3339 time: a time range); anything else 400 (src/audit/log.ts
 *   `parseAuditFieldSelector`). `labelSelector` is accepted and selects nothing out (audit
 *   events carry no labels) unless it requires a label, then nothing matches.
 * - `Accept: ...;as=Table;g=meta.k8s.io` answers the Table `kubectl get auditevents` prints: Time,
 *   User, Verb, Resource, Object (namespace/name), Code, and at priority 1 (`-o wide`) the audit ID
 *   and the source address.
 * - watch: ADDED events of the records after `resourceVersion` (from the start of the kept log
 *   when it is absent or "0"), polled every second (src/api/watch.ts `WATCH_POLL_MS`), counted
 *   against the client's open watches as every watch is; a resourceVersion older than the kept
 *   log gets an ERROR event with 410 Expired.
 *
 * Who may read: whoever the `/apis` authorization admits (today the admin token). For RBAC the
 * request is resource `auditevents` in API group `flotilla.dev` with verb `list` or `watch`:
 * `cluster-admin` holds it, the aggregated `admin`, `edit` and `view` do not (src/auth/rbac.ts).
 */
import type { Context } from "hono";
import { ApiError, badRequest } from "../k8s/errors.ts";
import { matches, parseSelector, SelectorParseError } from "../k8s/labels.ts";
import { clock } from "../clock.ts";
import type { ApiEnv } from "../api/context.ts";
import { bearerToken } from "../auth/credentials.ts";
import { negotiate, partialObjectMetadataList } from "../api/negotiate.ts";
import { queryFlag } from "../api/request.ts";
import { rowObject } from "../k8s/table.ts";
import { acquireWatch, checkWatchListOptions, clientOf, INITIAL_EVENTS_END, MAX_WATCH_SECONDS, WATCH_POLL_MS, WatchStream } from "../api/watch.ts";
import type { AuditEvent } from "./event.ts";
import { AUDIT_READ_CHUNK, oldestAuditSeq, parseAuditFieldSelector, readAuditEvents, type AuditRecord, type AuditSelector } from "./log.ts";

/** The API group of AuditEvents. */
export const AUDIT_GROUP = "flotilla.dev";
/** The version AuditEvents are served at. */
export const AUDIT_VERSION = "v1alpha1";
/** The resource (plural) of AuditEvents. */
export const AUDIT_RESOURCE = "auditevents";
/** `flotilla.dev/v1alpha1`. */
const API_VERSION = `${AUDIT_GROUP}/${AUDIT_VERSION}`;

/** AuditEvents in a group version's discovery (APIResourceList form): list and watch only. */
export const AUDIT_DISCOVERY = {
  name: AUDIT_RESOURCE,
  singularName: "auditevent",
  namespaced: false,
  kind: "AuditEvent",
  verbs: ["list", "watch"],
  shortNames: [] as string[],
};

/** An AuditEvent as served: the stored Event with this API's apiVersion, kind and metadata. */
export type ServedAuditEvent = Omit<AuditEvent, "kind" | "apiVersion"> & {
  apiVersion: typeof API_VERSION;
  kind: "AuditEvent";
  metadata: { name: string; creationTimestamp: string; resourceVersion: string };
};

/** The AuditEvent a stored record is served as. */
export function auditEventObject(record: AuditRecord): ServedAuditEvent {
  const { kind: _kind, apiVersion: _apiVersion, ...fields } = record.event;
  return {
    apiVersion: API_VERSION,
    kind: "AuditEvent",
    metadata: {
      name: record.event.auditID,
      creationTimestamp: record.event.requestReceivedTimestamp.replace(/\.\d+Z$/, "Z"),
      resourceVersion: String(record.seq),
    },
    ...fields,
  };
}

type Ctx = Context<ApiEnv>;

function json(body: unknown): Response {
  return new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
}

/** `continue` token after sequence `seq`: base64url of `{"v":"flotilla.dev/v1alpha1/auditevents","seq":N}`. */
function continueToken(seq: number): string {
  return btoa(JSON.stringify({ v: `${API_VERSION}/${AUDIT_RESOURCE}`, seq }))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** @throws ApiError 400 for a malformed token */
function continueSeq(token: string | undefined): number {
  if (!token) return 0;
  let seq: unknown;
  try {
    seq = (JSON.parse(atob(token.replace(/-/g, "+").replace(/_/g, "/"))) as { seq?: unknown }).seq;
  } catch {
    seq = undefined;
  }
  if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 0) throw badRequest("continue key is not valid: the token is malformed", "continue");
  return seq;
}

/** `limit` as kube-apiserver reads it: absent, empty or 0 is no limit. @throws ApiError 400 */
function limitOf(value: string | undefined): number | undefined {
  if (value === undefined || value === "" || value === "0") return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw badRequest(`limit: Invalid value: ${JSON.stringify(value)}: must be a non-negative integer`, "limit");
  return n;
}

/** A label selector: audit events have no labels, so one with any requirement that needs a label matches nothing. @throws ApiError 400 */
function labelFilter(value: string | undefined): boolean {
  if (!value) return true;
  try {
    return matches(parseSelector(value), {});
  } catch (e) {
    if (e instanceof SelectorParseError) throw badRequest(`unable to parse requirement: ${e.message}`, "labelSelector");
    throw e;
  }
}

function cellsOf(o: ServedAuditEvent): unknown[] {
  const ref = o.objectRef ?? {};
  const resource = ref.resource ? `${ref.resource}${ref.subresource ? `/${ref.subresource}` : ""}${ref.apiGroup ? `.${ref.apiGroup}` : ""}` : "";
  const object = ref.name ? (ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name) : ref.namespace ? `${ref.namespace}/` : "";
  return [o.metadata.creationTimestamp, o.user.username ?? "", o.verb, resource, object, o.responseStatus.code, o.auditID, (o.sourceIPs ?? []).join(",")];
}

const COLUMNS = [
  { name: "Time", type: "string", format: "date-time", description: "When the hub received the request (requestReceivedTimestamp).", priority: 0 },
  { name: "User", type: "string", format: "", description: "Who made the request (user.username); empty when authentication failed.", priority: 0 },
  { name: "Verb", type: "string", format: "", description: "The Kubernetes verb.", priority: 0 },
  { name: "Resource", type: "string", format: "", description: "resource[/subresource][.group] of objectRef.", priority: 0 },
  { name: "Object", type: "string", format: "", description: "namespace/name of objectRef.", priority: 0 },
  { name: "Code", type: "integer", format: "", description: "The HTTP status answered (responseStatus.code).", priority: 0 },
  { name: "Audit-ID", type: "string", format: "name", description: "The request's audit ID (the Audit-Id response header).", priority: 1 },
  { name: "Source", type: "string", format: "", description: "The client's address (sourceIPs).", priority: 1 },
];

/** The `meta.k8s.io/v1` Table of audit events (see the module comment); `includeObject` as src/k8s/table.ts `toTable`. */
function auditTable(items: ServedAuditEvent[], listMeta: Record<string, unknown>, includeObject: string | undefined) {
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: listMeta,
    columnDefinitions: COLUMNS,
    rows: items.map((o) => ({
      cells: cellsOf(o),
      object: rowObject(o, includeObject),
    })),
  };
}

async function list(c: Ctx, selector: AuditSelector, labelsMatch: boolean): Promise<Response> {
  const limit = limitOf(c.req.query("limit"));
  let after = continueSeq(c.req.query("continue"));
  const items: ServedAuditEvent[] = [];
  let latest: number | undefined;
  let more = false;
  for (;;) {
    const want = limit === undefined ? AUDIT_READ_CHUNK : limit - items.length + 1;
    const page = await readAuditEvents(c.env, selector, after, want);
    latest = page.latest;
    if (!labelsMatch) break;
    for (const r of page.records) {
      if (limit !== undefined && items.length === limit) {
        more = true;
        break;
      }
      items.push(auditEventObject(r));
      after = r.seq;
    }
    if (more || page.records.length < want) break;
  }
  const listMeta = { resourceVersion: String(latest ?? 0), ...(more ? { continue: continueToken(after) } : {}) };
  const form = negotiate(c.req.header("accept"), "list");
  if (form.kind === "table") return json(auditTable(items, listMeta, c.req.query("includeObject")));
  if (form.kind === "metadata") return json(partialObjectMetadataList(items as never, listMeta, form.version));
  return json({ apiVersion: API_VERSION, kind: "AuditEventList", metadata: listMeta, items });
}

function watch(c: Ctx, selector: AuditSelector, labelsMatch: boolean, client: string): Response {
  const rvParam = c.req.query("resourceVersion");
  const from = rvParam === undefined || rvParam === "" ? 0 : Number(rvParam);
  if (!Number.isSafeInteger(from) || from < 0) throw badRequest(`invalid resourceVersion ${JSON.stringify(rvParam)}`, "resourceVersion");
  const timeoutParam = c.req.query("timeoutSeconds");
  const timeout = timeoutParam === undefined ? MAX_WATCH_SECONDS : Number(timeoutParam);
  if (!Number.isFinite(timeout) || timeout < 0) throw badRequest(`invalid timeoutSeconds ${JSON.stringify(timeoutParam)}`, "timeoutSeconds");
  const initialEvents = c.req.query("sendInitialEvents") === undefined ? undefined : queryFlag(c.req.query("sendInitialEvents"));
  const form = negotiate(c.req.header("accept"), "watch");
  const includeObject = c.req.query("includeObject");
  const shape = (o: ServedAuditEvent) => (form.kind === "table" ? auditTable([o], { resourceVersion: o.metadata.resourceVersion }, includeObject) : o);
  const now = clock.now();
  const deadline = now + Math.min(timeout, MAX_WATCH_SECONDS) * 1000;
  const release = acquireWatch(client, now, deadline + 60_000);
  const stream = new WatchStream(release, c.req.raw.signal);
  const send = (type: string, object: unknown) => stream.send(type, object);
  const run = async () => {
    // Watch-list (sendInitialEvents=true): every kept record, then the initial-events-end BOOKMARK.
    let rv = initialEvents === true ? 0 : from;
    if (from === 0 && initialEvents === false) {
      rv = (await readAuditEvents(c.env, [], Number.MAX_SAFE_INTEGER, 1)).latest;
    } else if (rv > 0) {
      const oldest = await oldestAuditSeq(c.env);
      if (oldest > 0 && from + 1 < oldest) {
        await send("ERROR", new ApiError(410, "Expired", `too old resource version: ${from} (${oldest - 1})`).toStatus());
        return;
      }
    }
    let initial = rv === 0 && initialEvents !== false;
    for (;;) {
      const page = await readAuditEvents(c.env, selector, rv, AUDIT_READ_CHUNK);
      for (const r of page.records) {
        rv = r.seq;
        if (labelsMatch) await send("ADDED", shape(auditEventObject(r)));
      }
      if (page.records.length === AUDIT_READ_CHUNK && !stream.gone) continue;
      rv = Math.max(rv, page.latest);
      if (initial && initialEvents) {
        await send("BOOKMARK", {
          kind: "AuditEvent",
          apiVersion: API_VERSION,
          metadata: { resourceVersion: String(rv), annotations: { [INITIAL_EVENTS_END]: "true" } },
        });
      }
      initial = false;
      // A keepalive newline each quiet poll: a watch learns its client left from a failed write.
      if (page.records.length === 0) await stream.keepalive();
      if (stream.gone || clock.now() + WATCH_POLL_MS > deadline) return;
      await stream.pause(WATCH_POLL_MS);
      if (stream.gone) return;
    }
  };
  return stream.respond(run, (p) => c.executionCtx.waitUntil(p));
}

/**
 * Serves a request on `/apis/flotilla.dev/v1alpha1/auditevents[/...]` (see the module comment).
 * `rest` is the path's segments after the collection.
 * @throws ApiError 405 for any method but GET or any path below the collection; 400 for a bad
 *   selector, limit, continue token, resourceVersion or timeoutSeconds; 406 for an Accept the hub
 *   cannot answer; 422 for inconsistent watch-list options; 429 over the client's watches
 */
export async function serveAuditEvents(c: Ctx, rest: string[]): Promise<Response> {
  if (c.req.method !== "GET" || rest.length > 0) {
    throw new ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {
      group: AUDIT_GROUP,
      kind: AUDIT_RESOURCE,
    });
  }
  const watching = queryFlag(c.req.query("watch"));
  negotiate(c.req.header("accept"), watching ? "watch" : "list");
  checkWatchListOptions({
    watch: watching,
    sendInitialEvents: c.req.query("sendInitialEvents"),
    allowWatchBookmarks: queryFlag(c.req.query("allowWatchBookmarks")),
    resourceVersionMatch: c.req.query("resourceVersionMatch"),
    resourceVersion: c.req.query("resourceVersion"),
    continue: c.req.query("continue"),
  });
  const selector = parseAuditFieldSelector(c.req.query("fieldSelector"));
  const labelsMatch = labelFilter(c.req.query("labelSelector"));
  if (watching) return watch(c, selector, labelsMatch, await clientOf(bearerToken(c) ?? ""));
  return list(c, selector, labelsMatch);
}
