/**
 * Events expire `FLOTILLA_EVENT_TTL_SECONDS` after their last write, as kube-apiserver's Events
 * expire `--event-ttl` (default one hour) after theirs (etcd leases). Without a scan of all
 * Events: each Event's last write time is kept in `event_ttl` (migration 0012, written in the
 * batch of every write of it: src/events/controller.ts), indexed by that time, and the scheduler
 * object's `event-expiry` timer (the manifest, src/controllers.ts; armed when an Event is created)
 * deletes at most {@link EXPIRY_BATCH} of the oldest expired ones per run through the store (so
 * watchers see them DELETED), then arms itself at the next expiry, or not at all once no Event is
 * left. Times are epoch milliseconds from src/clock.ts, so a test moves them.
 */
import type { KubeObject } from "../k8s/meta.ts";
import { EventKind } from "../kinds/event.ts";
import { resourceKey } from "../k8s/kind.ts";
import { storageOf } from "../store/storage.ts";
import { clock } from "../clock.ts";
import type { Env } from "../env.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { setSchedulerTimer } from "../timers.ts";

/** The scheduler object's timer of Events' expiry (the manifest's `event-expiry`, src/controllers.ts). */
export const EVENT_EXPIRY_TIMER = "event-expiry";

/** kube-apiserver's `--event-ttl` default: one hour, in seconds. */
export const DEFAULT_EVENT_TTL_SECONDS = 3600;

/** How many expired Events one run deletes at most (the next run follows at once when more are due). */
export const EXPIRY_BATCH = 100;

/**
 * The Events' time to live from `FLOTILLA_EVENT_TTL_SECONDS`, in seconds: a positive number
 * (fractions allowed), else the default {@link DEFAULT_EVENT_TTL_SECONDS}.
 */
export function eventTtlSeconds(env: Pick<Env, "FLOTILLA_EVENT_TTL_SECONDS">): number {
  const v = Number(env.FLOTILLA_EVENT_TTL_SECONDS);
  return env.FLOTILLA_EVENT_TTL_SECONDS !== undefined && env.FLOTILLA_EVENT_TTL_SECONDS !== "" && Number.isFinite(v) && v > 0 ? v : DEFAULT_EVENT_TTL_SECONDS;
}

/** When the oldest Event expires (epoch milliseconds), or null when there is none. One indexed read. */
export async function nextEventExpiry(env: Env): Promise<number | null> {
  const at = await storageOf(env).eventTtl.oldest();
  return at === null ? null : at + eventTtlSeconds(env) * 1000;
}

/**
 * Deletes, through the store, up to {@link EXPIRY_BATCH} Events last written more than the TTL
 * before `now` (epoch milliseconds), oldest first (an indexed range read of `event_ttl`). Returns
 * how many were deleted and when the next one expires (epoch milliseconds; `now` when more are
 * due already), or null when no Event is left.
 * @throws errors of D1
 */
export async function expireEvents(env: Env, now = clock.now()): Promise<{ deleted: number; nextDue: number | null }> {
  const cutoff = now - eventTtlSeconds(env) * 1000;
  const rows = await storageOf(env).eventTtl.due(resourceKey(EventKind), cutoff, EXPIRY_BATCH);
  let deleted = 0;
  const stored = rows.filter((r) => r.body !== null);
  if (stored.length > 0) {
    const out = await admittedStoreOf(env, EventKind).writeMany(
      stored.map((r) => {
        const known = JSON.parse(r.body!) as KubeObject;
        known.metadata.resourceVersion = String(r.resourceVersion);
        return { namespace: r.namespace, name: r.name, req: { verb: "delete" as const }, known };
      }),
    );
    deleted = out.filter((o) => o !== "lost").length;
  }
  // A row whose Event is gone (none should be): dropped, so that it is not read again.
  const stray = rows.filter((r) => r.body === null);
  await storageOf(env).eventTtl.drop(stray);
  const next = await nextEventExpiry(env);
  return { deleted, nextDue: next === null ? null : rows.length === EXPIRY_BATCH ? now : next };
}

/** The due time of the expiry timer this isolate last armed (epoch ms): until then it is known to be pending. */
let armedDue: number | null = null;

/**
 * Arms the expiry timer no later than when the oldest Event expires (a new Event's expiry is never
 * earlier than one already stored, so the earliest stored is the time): one indexed read and one
 * call of the scheduler object, skipped while a timer this isolate armed is still pending (a timer
 * that fires arms itself again while Events are left), so recording costs at most one call per
 * TTL per isolate. `force` arms even then (after the timer's storage was reset).
 * @throws errors of D1 or of the call
 */
export async function armEventExpiry(env: Env, opts: { now?: number; force?: boolean } = {}): Promise<void> {
  const now = opts.now ?? clock.now();
  if (!opts.force && armedDue !== null && armedDue > now) return;
  const at = await nextEventExpiry(env);
  if (at === null) return;
  await setSchedulerTimer(env, EVENT_EXPIRY_TIMER, at);
  armedDue = at;
}
