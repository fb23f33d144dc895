/**
 * `watch=true` on a list: a stream of `{"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR",
 * "object": ...}` lines, as the apiserver sends them, read from the D1 event log. Without a
 * `resourceVersion` (or with "0") it starts with ADDED events for the current objects; from a
 * resourceVersion older than the kept log it sends an ERROR event with a 410 Expired Status, so
 * that clients (client-go reflectors, `kubectl get -w`, `kubectl wait`) list again.
 *
 * The log is polled every second (one D1 read per watcher per second).
 */
import type { DrizzleD1Database } from "drizzle-orm/d1";
import { ApiError, badRequest } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { EVENT_RETENTION, listObjects, readEvents } from "../k8s/store.ts";
import { apiVersionOf } from "../k8s/kind.ts";

/** Poll interval of the event log, in milliseconds. */
export const WATCH_POLL_MS = 1000;
/** Longest watch, in seconds (a client may ask for less with `timeoutSeconds`). */
export const MAX_WATCH_SECONDS = 1800;
/** Interval between BOOKMARK events when the client allows them, in milliseconds. */
const BOOKMARK_MS = 15_000;

/** What a watch request asked for. */
export interface WatchOptions {
  resourceVersion?: string;
  timeoutSeconds?: string;
  allowWatchBookmarks?: boolean;
}

/**
 * Starts a watch and returns its streaming response. `filter` applies the request's label and field
 * selectors; `present` turns an object into what is sent (fields never served stripped, or a
 * one-row Table when the client asked for tables, as `kubectl get -w` does). `waitUntil` keeps the stream's writer
 * alive after the response is returned.
 *
 * @throws ApiError 400 for a malformed resourceVersion or timeoutSeconds.
 */
export function watchResponse(
  db: DrizzleD1Database,
  def: KindDefinition,
  namespace: string | undefined,
  filter: (o: KubeObject) => boolean,
  present: (o: KubeObject) => unknown,
  opts: WatchOptions,
  waitUntil: (p: Promise<unknown>) => void,
): Response {
  const fromRv = opts.resourceVersion && opts.resourceVersion !== "0" ? Number(opts.resourceVersion) : undefined;
  if (fromRv !== undefined && (!Number.isInteger(fromRv) || fromRv < 0)) throw badRequest(`invalid resourceVersion ${JSON.stringify(opts.resourceVersion)}`, "resourceVersion");
  const timeout = opts.timeoutSeconds === undefined ? MAX_WATCH_SECONDS : Number(opts.timeoutSeconds);
  if (!Number.isFinite(timeout) || timeout < 0) throw badRequest(`invalid timeoutSeconds ${JSON.stringify(opts.timeoutSeconds)}`, "timeoutSeconds");

  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const encoder = new TextEncoder();
  const send = (type: string, object: unknown) => writer.write(encoder.encode(`${JSON.stringify({ type, object })}\n`));

  const run = async () => {
    const deadline = Date.now() + Math.min(timeout, MAX_WATCH_SECONDS) * 1000;
    let rv: number;
    if (fromRv === undefined) {
      const list = await listObjects(db, def, namespace);
      for (const o of list.items) if (filter(o)) await send("ADDED", present(o));
      rv = Number(list.resourceVersion);
    } else {
      rv = fromRv;
    }
    let lastBookmark = Date.now();
    for (;;) {
      const { events, latest } = await readEvents(db, def, namespace, rv);
      if (rv < latest - EVENT_RETENTION) {
        const gone = new ApiError(410, "Expired", `too old resource version: ${rv} (${latest - EVENT_RETENTION})`);
        await send("ERROR", gone.toStatus());
        return;
      }
      for (const e of events) {
        rv = Number(e.object.metadata.resourceVersion);
        if (filter(e.object)) await send(e.type, present(e.object));
      }
      if (events.length > 0) continue;
      if (opts.allowWatchBookmarks && Date.now() - lastBookmark >= BOOKMARK_MS) {
        await send("BOOKMARK", { kind: def.kind, apiVersion: apiVersionOf(def), metadata: { resourceVersion: String(Math.max(rv, latest)) } });
        lastBookmark = Date.now();
      }
      if (Date.now() + WATCH_POLL_MS > deadline) return;
      await new Promise((r) => setTimeout(r, WATCH_POLL_MS));
    }
  };
  waitUntil(
    run()
      .catch(() => undefined)
      .finally(() => writer.close().catch(() => undefined)),
  );
  // `content-encoding: identity`: a compressed stream would be held back until its buffer fills.
  return new Response(readable, { status: 200, headers: { "content-type": "application/json", "cache-control": "no-cache, no-transform", "content-encoding": "identity" } });
}
