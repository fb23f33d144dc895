/**
 * `watch=true` on a list: a stream of `{"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR",
 * "object": ...}` lines, as the apiserver sends them, read from the D1 event log. Without a
 * `resourceVersion` (or with "0") it starts with ADDED events for the current objects; from a
 * resourceVersion older than the kept log (or one whose events were encrypted with a key since
 * dropped) it sends an ERROR event with a 410 Expired Status, so that clients (client-go
 * reflectors, `kubectl get -w`, `kubectl wait`) list again; another failure ends the stream with an
 * ERROR event carrying its Status.
 *
 * The log is polled every second (one D1 read per watcher per second). The initial ADDED events are
 * read in pages of {@link WATCH_LIST_PAGE} objects, so a watch never holds the whole collection.
 *
 * One client (one bearer token) may hold at most {@link MAX_WATCHES_PER_CLIENT} watches open at
 * once in one Worker isolate (the unit whose memory the watches share; `npm start` runs one);
 * the next one is refused with 429 TooManyRequests and `Retry-After`, as the apiserver's
 * max-in-flight filter refuses what exceeds its limits. A watch ends, and frees its place, when the
 * client goes away: at once when the runtime reports it (the request's abort signal, the
 * response body's cancel), else at a failed write (a quiet watch writes a newline every
 * {@link WATCH_KEEPALIVE_POLLS} polls), within `WATCH_GONE_FREED_SECONDS` (src/api/watch-limits.ts);
 * a watch whose request workerd cancelled (its stream's end never runs) frees it at the latest
 * {@link WATCH_PLACE_GRACE_MS} after its timeout.
 *
 * A watch from a resourceVersion the hub has not reached yet waits up to 3 s for writes to reach
 * it (src/store/storage.ts `awaitResourceVersion`), then sends one ERROR event with kube-apiserver's
 * 504 Timeout Status "Too large resource version" (cause ResourceVersionTooLarge, src/k8s/errors.ts
 * `tooLargeResourceVersion`) and ends: the answer of its watch cache to a watch-list from such a
 * version (cacher.go `waitUntilWatchCacheFreshAndForceAllEvents`, an ERROR event because the watch
 * is already under way). The apiserver may instead hold a plain watch until the version comes
 * (api-concepts "Unavailable resource versions"); the hub answers every watch the same way, so
 * that a client resuming from a version of another database (a hub reset under it) lists again
 * instead of waiting in silence.
 */
import { ApiError, badRequest, tooManyRequests } from "../k8s/errors.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { EVENT_RETENTION, parseResourceVersion, type Store, type StoreKey } from "../store/store.ts";
import type { Storage } from "../store/storage.ts";
import { apiVersionOf } from "../k8s/kind.ts";
import { clock } from "../clock.ts";
import { MAX_WATCHES_PER_CLIENT } from "./watch-limits.ts";

/** Poll interval of the event log, in milliseconds. */
export const WATCH_POLL_MS = 1000;
/** Longest watch, in seconds (a client may ask for less with `timeoutSeconds`). */
export const MAX_WATCH_SECONDS = 1800;
/** Interval between BOOKMARK events when the client allows them, in milliseconds. */
const BOOKMARK_MS = 15_000;
/**
 * Idle polls after which a quiet watch writes a newline (JSON whitespace between events, which
 * client-go's, client-node's and the Python client's decoders skip): every poll, i.e. every
 * second. Under wrangler dev a watch learns that its client went away only from its writes (the
 * proxy in front of the Worker neither cancels the body nor aborts the request's signal; its
 * first write after the disconnect still succeeds, the next one ends the stream), so an abandoned
 * watch frees its place about two seconds after its client left. Where the runtime reports the
 * disconnect (the request's signal, the body's cancel) it frees it at once.
 */
export const WATCH_KEEPALIVE_POLLS = 1;
/** Objects read per page for the initial ADDED events. */
export const WATCH_LIST_PAGE = 500;
/** `Retry-After` of a watch refused by {@link MAX_WATCHES_PER_CLIENT}, in seconds. */
export const WATCH_RETRY_AFTER_SECONDS = 5;

/** The annotation of the BOOKMARK that ends a watch-list's initial events (apimachinery `metav1.InitialEventsAnnotationKey`). */
export const INITIAL_EVENTS_END = "k8s.io/initial-events-end";

/**
 * Checks a list's or watch's ListOptions as kube-apiserver's ListOptions validation does
 * (apimachinery `pkg/apis/meta/internalversion/validation` `ValidateListOptions`):
 * - a watch: `sendInitialEvents` needs `allowWatchBookmarks=true` and
 *   `resourceVersionMatch=NotOlderThan`; `resourceVersionMatch` needs `sendInitialEvents`;
 * - a list: `sendInitialEvents` is forbidden; `resourceVersionMatch` needs a `resourceVersion`,
 *   is forbidden with `continue`, and Exact is forbidden for resourceVersion "0";
 * - either: any other `resourceVersionMatch` than NotOlderThan and Exact is unsupported.
 * @throws ApiError 422 Invalid (kind ListOptions) naming the offending fields
 */
export function checkWatchListOptions(o: {
  watch: boolean;
  sendInitialEvents?: string;
  allowWatchBookmarks: boolean;
  resourceVersionMatch?: string;
  resourceVersion?: string;
  continue?: string;
}): void {
  const causes: { field: string; message: string; reason: string }[] = [];
  const match = o.resourceVersionMatch ?? "";
  const forbid = (field: string, why: string) => causes.push({ field, message: `Forbidden: ${why}`, reason: "FieldValueForbidden" });
  if (!o.watch && match !== "") {
    if (!o.resourceVersion) forbid("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided");
    if (o.continue) forbid("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided");
  }
  if (match !== "" && match !== "NotOlderThan" && match !== "Exact") {
    causes.push({
      field: "resourceVersionMatch",
      message: `Unsupported value: "${match}": supported values: "Exact", "NotOlderThan", ""`,
      reason: "FieldValueNotSupported",
    });
  }
  if (!o.watch && match === "Exact" && o.resourceVersion === "0")
    forbid("resourceVersionMatch", `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`);
  if (o.sendInitialEvents !== undefined) {
    if (!o.watch) forbid("sendInitialEvents", "sendInitialEvents is forbidden for list");
    if (match !== "NotOlderThan") forbid("resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
    if (!o.allowWatchBookmarks) forbid("allowWatchBookmarks", "sendInitialEvents requires setting allowWatchBookmarks to true");
  } else if (o.watch && match !== "") {
    forbid("resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided");
  }
  if (causes.length === 0) return;
  throw new ApiError(422, "Invalid", `ListOptions.meta.k8s.io "" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(", ")}`, {
    group: "meta.k8s.io",
    kind: "ListOptions",
    causes,
  });
}

/**
 * How long past its deadline a watch's place is held when the watch never released it, in
 * milliseconds: a watch whose request was cancelled (its stream's `finally` never runs) frees
 * its place then, so a cancelled request never holds a client's place for the isolate's life.
 */
const WATCH_PLACE_GRACE_MS = 60_000;

/** Open watches per client in this isolate: each place's number, and until when (epoch ms) it is held at most. */
const openWatches = new Map<string, Map<number, number>>();
let nextPlace = 0;

/**
 * The identity a watch is counted under: the hex SHA-256 of the client's bearer token (the token
 * itself is never kept).
 */
export async function clientOf(token: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Takes one of a client's watch places, held until the release this returns is called
 * (idempotent) or, at the latest, until `until` (epoch milliseconds), at `now` (epoch ms).
 * @throws ApiError 429 when the client holds them all
 */
export function acquireWatch(client: string, now: number, until: number): () => void {
  const held = openWatches.get(client) ?? new Map<number, number>();
  for (const [place, end] of held) if (end <= now) held.delete(place);
  if (held.size >= MAX_WATCHES_PER_CLIENT) {
    throw tooManyRequests(
      `too many watches: this client already holds ${MAX_WATCHES_PER_CLIENT} open watches, the most allowed at once`,
      WATCH_RETRY_AFTER_SECONDS,
    );
  }
  const place = nextPlace++;
  held.set(place, until);
  openWatches.set(client, held);
  return () => {
    held.delete(place);
    if (held.size === 0 && openWatches.get(client) === held) openWatches.delete(client);
  };
}

/** What a watch request asked for. */
export interface WatchOptions {
  resourceVersion?: string;
  timeoutSeconds?: string;
  allowWatchBookmarks?: boolean;
  /**
   * Watch-list (client-go's streaming list, KEP-3157): the current objects as ADDED events,
   * then a BOOKMARK annotated `k8s.io/initial-events-end: "true"` at the list's resourceVersion,
   * then the changes; false: only the changes after `resourceVersion` (after now without one).
   * Checked by {@link checkWatchListOptions}.
   */
  sendInitialEvents?: boolean;
  /** Who is watching ({@link clientOf}), counted against {@link MAX_WATCHES_PER_CLIENT}. */
  client: string;
  /** The request's abort signal: it aborts when the client goes away, which ends the watch and frees its place at once. */
  signal?: AbortSignal;
  /**
   * Whether an object that stops passing the watch's filter is sent as DELETED and one that
   * starts passing it as ADDED, as kube-apiserver's watch cache does for a selector
   * (`cacheWatcher.convertToWatchEvent`): set for a view (OCM's clusterview: a cluster that
   * leaves the sets the user sees goes from the user's watch). Whether the watcher was shown an
   * object is known from the initial events, or else from the object's event before the change
   * (`Store.eventBefore`); an object whose earlier state the log no longer holds counts
   * as not shown (nothing about an object the user may not see is sent).
   */
  transitions?: boolean;
}

/**
 * The response side of a watch, shared by the store's watches and the audit log's: a stream of
 * newline-delimited JSON events, and the end of the watch. The client going away (the response
 * body cancelled, so the writer's side errors, or the request's `signal` aborting: workerd's
 * `enable_request_signal`, as on Cloudflare) frees the watch's place (`release`) at once and
 * wakes {@link pause}. Under wrangler dev neither happens: a failed keepalive write ends it.
 */
export class WatchStream {
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  private readonly encoder = new TextEncoder();
  private left = false;
  private wake: () => void = () => undefined;
  private readonly closed = new Promise<void>((resolve) => (this.wake = resolve));
  private readonly leave = () => {
    this.left = true;
    this.release();
    this.wake();
  };
  /** The response body. */
  readonly readable: ReadableStream<Uint8Array>;

  constructor(
    private readonly release: () => void,
    private readonly signal?: AbortSignal,
  ) {
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    this.readable = readable;
    this.writer = writable.getWriter();
    void this.writer.closed.then(this.leave, this.leave);
    if (signal?.aborted) this.leave();
    signal?.addEventListener("abort", this.leave, { once: true });
  }

  /** Whether the client went away. */
  get gone(): boolean {
    return this.left;
  }

  /** Writes one event (`{type, object}`, a line). @throws when the client went away */
  send(type: string, object: unknown): Promise<void> {
    return this.writer.write(this.encoder.encode(`${JSON.stringify({ type, object })}\n`));
  }

  /** Writes a keepalive newline: a watch learns its client left from a failed write. @throws then */
  keepalive(): Promise<void> {
    return this.writer.write(this.encoder.encode("\n"));
  }

  /** Waits `ms` milliseconds, or less when the client goes away. */
  async pause(ms: number): Promise<void> {
    await Promise.race([new Promise((r) => setTimeout(r, ms)), this.closed]);
  }

  /**
   * Runs the watch's loop `run` after the response (`waitUntil`, the request's) and returns the
   * streaming response: an ApiError the loop throws is sent as an ERROR event (its Status), then
   * the watch's place is released and the stream closed.
   */
  respond(run: () => Promise<void>, waitUntil: (p: Promise<unknown>) => void): Response {
    waitUntil(
      run()
        .catch((e: unknown) => (e instanceof ApiError ? this.send("ERROR", e.toStatus()).catch(() => undefined) : undefined))
        .finally(() => {
          this.release();
          this.signal?.removeEventListener("abort", this.leave);
          return this.writer.close().catch(() => undefined);
        }),
    );
    // `content-encoding: identity`: a compressed stream would be held back until its buffer fills.
    return new Response(this.readable, {
      status: 200,
      headers: { "content-type": "application/json", "cache-control": "no-cache, no-transform", "content-encoding": "identity" },
    });
  }
}

/**
 * Starts a watch and returns its streaming response. `filter` applies the request's label and field
 * selectors; `present` turns an object into what is sent (fields never served stripped, or a
 * one-row Table when the client asked for tables, as `kubectl get -w` does). `waitUntil` keeps the stream's writer
 * alive after the response is returned.
 *
 * @throws ApiError 400 for a malformed resourceVersion or timeoutSeconds, 429 when the client
 *   already holds {@link MAX_WATCHES_PER_CLIENT} watches.
 */
export function watchResponse(
  store: Store,
  storage: Storage,
  namespace: string | undefined,
  filter: (o: KubeObject) => boolean,
  present: (o: KubeObject) => unknown,
  opts: WatchOptions,
  waitUntil: (p: Promise<unknown>) => void,
): Response {
  const def = store.def;
  const asked = parseResourceVersion(opts.resourceVersion);
  const timeout = opts.timeoutSeconds === undefined ? MAX_WATCH_SECONDS : Number(opts.timeoutSeconds);
  if (!Number.isFinite(timeout) || timeout < 0) throw badRequest(`invalid timeoutSeconds ${JSON.stringify(opts.timeoutSeconds)}`, "timeoutSeconds");

  const now = clock.now();
  const release = acquireWatch(opts.client, now, now + Math.min(timeout, MAX_WATCH_SECONDS) * 1000 + WATCH_PLACE_GRACE_MS);

  const stream = new WatchStream(release, opts.signal);
  // Polls since the stream last carried anything (see WATCH_KEEPALIVE_POLLS).
  let quietPolls = 0;
  const send = (type: string, object: unknown) => {
    quietPolls = 0;
    return stream.send(type, object);
  };

  const run = async () => {
    const deadline = clock.now() + Math.min(timeout, MAX_WATCH_SECONDS) * 1000;
    // A version the store has not reached: wait briefly for writes to reach it, else the ERROR
    // event kube-apiserver's watch cache sends (504 Timeout, ResourceVersionTooLarge).
    await storage.awaitResourceVersion(asked, opts.signal);
    const fromRv = asked === 0n ? undefined : Number(asked);
    let rv: number;
    // With `transitions`: whether the watcher was last shown each object, by namespace/name;
    // `listed`: every object the watcher was shown is in it (the initial events were sent).
    const shown = new Map<string, boolean>();
    let listed = false;
    if (fromRv === undefined && opts.sendInitialEvents === false) {
      // A watch-list without initial events and without a version starts from now.
      rv = (await store.events(namespace, Number.MAX_SAFE_INTEGER, 1)).latest;
    } else if (fromRv === undefined || opts.sendInitialEvents) {
      let after: StoreKey | undefined;
      let listRv: string | undefined;
      do {
        const page = await store.listPage(namespace, { after, limit: WATCH_LIST_PAGE, filter });
        listRv ??= page.resourceVersion;
        for (const o of page.items) {
          if (opts.transitions) shown.set(`${o.metadata.namespace ?? ""}/${o.metadata.name}`, true);
          await send("ADDED", present(o));
        }
        after = page.next;
      } while (after && !stream.gone);
      listed = true;
      rv = Number(listRv);
      if (opts.sendInitialEvents) {
        await send("BOOKMARK", {
          kind: def.kind,
          apiVersion: apiVersionOf(def),
          metadata: { resourceVersion: String(rv), annotations: { [INITIAL_EVENTS_END]: "true" } },
        });
      }
    } else {
      rv = fromRv;
      // A log that no longer reaches back to the version asked for (pruned, or started after it,
      // as on a hub upgraded from before the log existed) cannot replay it: 410, so the client lists.
      const start = await storage.eventLogStart();
      if (rv < start) {
        await send("ERROR", new ApiError(410, "Expired", `too old resource version: ${rv} (${start})`).toStatus());
        return;
      }
    }
    let lastBookmark = Date.now();
    for (;;) {
      let batch: Awaited<ReturnType<Store["events"]>>;
      try {
        batch = await store.events(namespace, rv);
      } catch (e) {
        // An event sealed by a key dropped since (a rotation) cannot be replayed: too old, list again.
        if (!(e instanceof ApiError && e.reason === "InternalError")) throw e;
        await send("ERROR", new ApiError(410, "Expired", `too old resource version: ${rv} (${e.message})`).toStatus());
        return;
      }
      const { events, latest } = batch;
      if (rv < latest - EVENT_RETENTION) {
        const expired = new ApiError(410, "Expired", `too old resource version: ${rv} (${latest - EVENT_RETENTION})`);
        await send("ERROR", expired.toStatus());
        return;
      }
      for (const e of events) {
        rv = Number(e.object.metadata.resourceVersion);
        if (!opts.transitions) {
          if (filter(e.object)) await send(e.type, present(e.object));
          continue;
        }
        const key = `${e.object.metadata.namespace ?? ""}/${e.object.metadata.name}`;
        const passes = filter(e.object);
        let before = shown.get(key);
        if (before === undefined && !listed) {
          const earlier = await store.eventBefore(e.object.metadata.namespace ?? "", e.object.metadata.name, rv);
          before = earlier !== null && filter(earlier);
        }
        shown.set(key, e.type !== "DELETED" && passes);
        if (e.type === "DELETED") {
          if (before || passes) await send("DELETED", present(e.object));
        } else if (passes) await send(before ? e.type : "ADDED", present(e.object));
        else if (before) await send("DELETED", present(e.object));
      }
      if (events.length > 0) continue;
      if (opts.allowWatchBookmarks && Date.now() - lastBookmark >= BOOKMARK_MS) {
        await send("BOOKMARK", { kind: def.kind, apiVersion: apiVersionOf(def), metadata: { resourceVersion: String(Math.max(rv, latest)) } });
        lastBookmark = Date.now();
      }
      if (++quietPolls >= WATCH_KEEPALIVE_POLLS) {
        quietPolls = 0;
        await stream.keepalive();
      }
      if (clock.now() + WATCH_POLL_MS > deadline || stream.gone) return;
      await stream.pause(WATCH_POLL_MS);
      if (stream.gone) return;
    }
  };
  return stream.respond(run, waitUntil);
}
