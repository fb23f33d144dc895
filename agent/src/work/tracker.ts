/**
 * Which applied objects may have changed since the agent last read or wrote them, learnt from
 * watches instead of re-reading every object every status-sync period (issue 16; OCM's work
 * agent moved its status feedback to informers for the same reason).
 *
 * One watch per collection (group/version/resource and namespace) the works apply to, started
 * from a resourceVersion (a `limit=1` list gives the current one) with bookmarks, resumed from
 * the last version seen when the server ends it, and restarted from a fresh list after a
 * `410 Expired`. The tracker keeps, per object the agent holds, only the resourceVersion it
 * knows and whether an event said something else happened since: never the objects themselves.
 *
 * The tracker only ever saves reads: an object is "unchanged" only while its collection's watch
 * runs and no event for it arrived since the agent's own read. Whenever a watch breaks, every
 * object of its collection counts as changed until it runs again, so the controller reads them
 * as it did before (drift is repaired at worst one pass later than an event would tell).
 *
 * A collection can also be watched whole ({@link LiveTracker.watchCollection}): every event of any
 * object in it is reported, as the policy controller needs for a ConfigurationPolicy object
 * template without a name and for a namespaceSelector (OCM's config-policy-controller watches the
 * same through its dynamic watcher). {@link LiveTracker.onResync} tells when a collection's watch
 * (re)started from a fresh list, i.e. when events may have been missed.
 */
import { Sleeper } from "../backoff.ts";
import { describeKubeError, KubeError, type KubeConfig } from "../kube.ts";
import type { Logger } from "../log.ts";
import { resourcePath, type GroupVersionResource, type ObjectRef } from "./dynamic.ts";
import { isObj } from "./types.ts";

/** Longest a watch request stays open before the tracker renews it, in seconds (plus up to 50 % jitter). */
export const WATCH_TIMEOUT_SECONDS = 300;
/** Backoff after a failed watch, in milliseconds: first and largest delay. */
const RETRY_BASE_MS = 1_000;
const RETRY_CAP_MS = 30_000;

interface Collection {
  gvr: GroupVersionResource;
  namespace: string;
  /** Name → the resourceVersion the agent read or wrote last (undefined while a read is under way). */
  tracked: Map<string, string | undefined>;
  /** Names an event reported a change of since the agent's last read. */
  dirty: Set<string>;
  /** Watched whole: every object's events are reported, tracked or not. */
  whole: boolean;
  /** Whether the watch is running from a known resourceVersion. */
  synced: boolean;
  /** The last resourceVersion the watch delivered (events and bookmarks). */
  rv: string | undefined;
  abort: AbortController;
}

function keyOf(gvr: GroupVersionResource, namespace: string): string {
  return `${gvr.group}/${gvr.version}/${gvr.resource}/${namespace}`;
}

/**
 * Tracks applied objects through watches.
 *
 * @example
 * const t = new LiveTracker(kc, log, signal);
 * if (!t.unchanged(ref)) { t.beginRead(ref); const o = await client.get(ref); t.note(ref, rvOf(o)); }
 */
export class LiveTracker {
  private readonly collections = new Map<string, Collection>();
  private listener: ((ref: ObjectRef) => void) | undefined;
  private resyncListener: ((gvr: GroupVersionResource, namespace: string) => void) | undefined;

  /**
   * @param kc the member cluster's transport.
   * @param log where a watch's failures are logged (once per collection and state change).
   * @param signal ends every watch.
   * @param random jitter source in [0, 1).
   */
  constructor(
    private readonly kc: KubeConfig,
    private readonly log: Logger,
    private readonly signal?: AbortSignal,
    private readonly random: () => number = Math.random,
  ) {}

  /**
   * Calls `listener` with each tracked object an event reports changed (after it is marked
   * changed), and with each object of a collection watched whole that an event concerns.
   */
  onChange(listener: (ref: ObjectRef) => void): void {
    this.listener = listener;
  }

  /**
   * Calls `listener` each time a collection's watch starts from a fresh list (its first start,
   * after a `410 Expired`, after a failure): changes made before it may not have been reported.
   */
  onResync(listener: (gvr: GroupVersionResource, namespace: string) => void): void {
    this.resyncListener = listener;
  }

  /**
   * Watches the whole collection (`namespace` "" for every namespace or a cluster-scoped kind):
   * every ADDED, MODIFIED or DELETED event of any of its objects goes to the {@link onChange}
   * listener. Kept until a {@link retain} call leaves it out.
   */
  watchCollection(gvr: GroupVersionResource, namespace: string): void {
    this.collection(gvr, namespace).whole = true;
  }

  /**
   * Whether the collection's watch runs from a known resourceVersion (false while it is being
   * (re)started or after a failure, and for a collection not watched).
   */
  synced(gvr: GroupVersionResource, namespace: string): boolean {
    return this.collections.get(keyOf(gvr, namespace))?.synced === true;
  }

  /** Whether the collection's watch runs and nothing happened to `ref` since the agent's last read or write. */
  unchanged(ref: ObjectRef): boolean {
    const c = this.collections.get(keyOf(ref, ref.namespace));
    return c !== undefined && c.synced && c.tracked.get(ref.name) !== undefined && !c.dirty.has(ref.name);
  }

  /**
   * Call before reading or writing `ref`: starts watching its collection when needed and forgets
   * earlier events for it (an event that arrives from now on marks it changed again).
   */
  beginRead(ref: ObjectRef): void {
    const c = this.collection(ref, ref.namespace);
    c.dirty.delete(ref.name);
    c.tracked.set(ref.name, undefined);
  }

  /** Call with the resourceVersion the read or write returned (undefined: the object does not exist). */
  note(ref: ObjectRef, resourceVersion: string | undefined): void {
    const c = this.collections.get(keyOf(ref, ref.namespace));
    if (!c) return;
    // A missing object is tracked too: its creation by someone else is an ADDED event.
    c.tracked.set(ref.name, resourceVersion ?? "");
  }

  /**
   * Stops tracking every object not in `keep`, stops watching whole the collections not in
   * `collections`, and ends the watches of collections left with neither.
   */
  retain(keep: readonly ObjectRef[], collections: readonly (GroupVersionResource & { namespace: string })[] = []): void {
    const whole = new Set(collections.map((c) => keyOf(c, c.namespace)));
    const wanted = new Map<string, Set<string>>();
    for (const r of keep) {
      const k = keyOf(r, r.namespace);
      let s = wanted.get(k);
      if (!s) wanted.set(k, (s = new Set()));
      s.add(r.name);
    }
    for (const [k, c] of this.collections) {
      const names = wanted.get(k);
      for (const n of [...c.tracked.keys()]) {
        if (names?.has(n)) continue;
        c.tracked.delete(n);
        c.dirty.delete(n);
      }
      c.whole = whole.has(k);
      if (c.tracked.size === 0 && !c.whole) {
        c.abort.abort();
        this.collections.delete(k);
      }
    }
  }

  /** The number of watches running (for tests and logs). */
  get watches(): number {
    return this.collections.size;
  }

  /** Ends every watch. */
  close(): void {
    for (const c of this.collections.values()) c.abort.abort();
    this.collections.clear();
  }

  private collection(gvr: GroupVersionResource, namespace: string): Collection {
    const k = keyOf(gvr, namespace);
    let c = this.collections.get(k);
    if (c) return c;
    const abort = new AbortController();
    c = {
      gvr: { group: gvr.group, version: gvr.version, resource: gvr.resource },
      namespace,
      tracked: new Map(),
      dirty: new Set(),
      whole: false,
      synced: false,
      rv: undefined,
      abort,
    };
    this.collections.set(k, c);
    if (!this.signal?.aborted) void this.run(c);
    return c;
  }

  /** Everything tracked in `c` counts as changed (events may have been missed). */
  private lost(c: Collection): void {
    c.synced = false;
    for (const n of c.tracked.keys()) c.dirty.add(n);
  }

  private async run(c: Collection): Promise<void> {
    const signal = this.signal ? AbortSignal.any([this.signal, c.abort.signal]) : c.abort.signal;
    const path = resourcePath(c.gvr, c.namespace);
    const sleeper = new Sleeper(signal);
    let failures = 0;
    let logged = false;
    /** The watch starts from a fresh list (not resumed): the resync listener is told once it runs. */
    let fresh = false;
    while (!signal.aborted) {
      try {
        if (c.rv === undefined) {
          const list = await this.kc.json("GET", path, { query: { limit: "1" }, signal });
          const meta = isObj(list.metadata) ? list.metadata : {};
          if (typeof meta.resourceVersion !== "string" || !meta.resourceVersion) throw new Error(`the list of ${path} has no resourceVersion`);
          // Reads made before this version may have missed changes: read everything once more.
          this.lost(c);
          c.rv = meta.resourceVersion;
          fresh = true;
        }
        c.synced = true;
        if (fresh) this.resyncListener?.(c.gvr, c.namespace);
        fresh = false;
        let expired = false;
        const timeoutSeconds = Math.round(WATCH_TIMEOUT_SECONDS * (1 + 0.5 * this.random()));
        await this.kc.watch(
          path,
          { query: { watch: "true", resourceVersion: c.rv, allowWatchBookmarks: "true", timeoutSeconds: String(timeoutSeconds) }, signal },
          (ev) => {
            const obj = isObj(ev.object) ? ev.object : {};
            const meta = isObj(obj.metadata) ? obj.metadata : {};
            if (ev.type === "ERROR") {
              expired = obj.code === 410;
              if (!expired)
                throw new KubeError(typeof obj.code === "number" ? obj.code : 500, typeof obj.message === "string" ? obj.message : "watch error", obj);
              return;
            }
            if (typeof meta.resourceVersion === "string") c.rv = meta.resourceVersion;
            if (ev.type === "BOOKMARK" || typeof meta.name !== "string") return;
            const known = c.tracked.get(meta.name);
            const ref = { ...c.gvr, namespace: c.namespace, name: meta.name };
            if (!c.tracked.has(meta.name)) {
              if (c.whole) this.listener?.(ref);
              return;
            }
            // Our own write's event carries the version the write returned: nothing new.
            if (ev.type === "DELETED" || known !== meta.resourceVersion) {
              c.dirty.add(meta.name);
              this.listener?.(ref);
            }
          },
        );
        if (expired) {
          c.rv = undefined;
          this.lost(c);
          continue;
        }
        failures = 0;
        if (logged) {
          this.log.info(`watching ${path} again`);
          logged = false;
        }
      } catch (e) {
        if (signal.aborted) break;
        this.lost(c);
        if (e instanceof KubeError && e.code === 410) c.rv = undefined;
        if (!logged) {
          this.log.warn(`watch of ${path} failed: ${describeKubeError(e)}; reading its objects every sync until it runs again`);
          logged = true;
        }
        failures++;
        const ceiling = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** Math.min(failures - 1, 10));
        await sleeper.sleep(this.random() * ceiling);
      }
    }
    c.synced = false;
  }
}
