/**
 * Counting events for `/metrics` off the request's critical path: {@link count} and
 * {@link observe} only add to this isolate's batch in memory (no I/O, no await); {@link flushSoon}
 * then sends the batch to the metrics object (durable-objects/metrics.ts) after the response: in
 * the Worker at most one send scheduled per isolate, {@link FLUSH_DELAY_MS} after the first
 * event, so an isolate under load sends one batch a second whatever its request rate, each cell
 * (family and labels) once; in a Durable Object after the event that counted (a lease expiry, a
 * channel message, a scheduler run), with whatever the isolate gathered meanwhile, unless an
 * object's send is in flight or started less than {@link OBJECT_FLUSH_GAP_MS} ago: the events
 * counted meanwhile go in one batch once it finished and the gap passed, so 1,000 channel reports
 * in a burst cost a send every quarter second, not hundreds (each a call of the metrics object and
 * a row). The metrics object adds the batch to its stored totals, which
 * therefore survive isolate restarts; what an isolate counted in the last second before it was
 * evicted may be lost (a counter then reads a little low, never high).
 *
 * Nothing is counted for the agent channel's pings: the runtime answers them without running any
 * code (durable-objects/cluster/connection.ts), so an idle cluster costs the metrics nothing.
 *
 * @module
 */
import type { Env } from "../env.ts";
import { addValues, labelsPart, observation, withLabel, type Labels, type MetricFamily } from "./exposition.ts";

/** How long the first event of a batch waits before the batch is sent, in milliseconds. */
export const FLUSH_DELAY_MS = 1000;

/** The name of the one metrics object. */
export const METRICS_OBJECT = "metrics";

/** One cell of a batch: family name, label part, values (src/metrics/exposition.ts `Cell`). */
export type BatchCell = [family: string, labels: string, values: number[]];

/** This isolate's events not yet sent, by `family + labels`. */
let pending = new Map<string, BatchCell>();
/**
 * The Worker's send scheduled or in flight: its number, and when it last showed life
 * (performance.now(), milliseconds of elapsed time, not the injected clock a test may move).
 * A send whose request context ended (workerd then drops its timers and awaits, so its `finally`
 * never runs) stops showing life; after {@link STALE_SEND_MS} another one is scheduled.
 */
let sending: { id: number; aliveMs: number } | null = null;
let sends = 0;
/**
 * A Durable Object's send in flight (sent at once, without a timer): when it last showed life,
 * and `again`, set by the events counted meanwhile, whose batch it sends right after.
 */
let flushing: { aliveMs: number; again: boolean } | null = null;

/** After how long without a sign of life a scheduled send counts as dropped, in milliseconds. */
const STALE_SEND_MS = 10_000;

/**
 * In a Durable Object, the least time between the starts of two of this isolate's sends, in
 * milliseconds: an event after a quiet spell is sent at once, but the events of a burst (a fleet's
 * channel reports during a rollout) go in a send at most this often, not in one send per round
 * trip of the one before (each a call of the metrics object and a row).
 */
export const OBJECT_FLUSH_GAP_MS = 250;
/** When this isolate's last send from a Durable Object started (performance.now(), milliseconds); -Infinity: none yet. */
let lastObjectSendMs = -Infinity;

function add(family: string, labels: string, values: readonly number[]): void {
  const key = family + labels;
  const cell = pending.get(key);
  if (cell) addValues(cell[2], values);
  else pending.set(key, [family, labels, [...values]]);
}

/**
 * Adds `by` (default 1) to the counter `family` with `labels`, in this isolate's batch.
 * @example count(COUNTED.registrations, { code: 201 })
 */
export function count(family: MetricFamily & { type: "counter" }, labels: Labels = {}, by = 1): void {
  add(family.name, labelsPart(family.labels, labels), [by]);
}

/**
 * Records one observation `value` (seconds, for a `_seconds` family) of the histogram `family`
 * with `labels`, in this isolate's batch.
 */
export function observe(family: MetricFamily & { type: "histogram" }, labels: Labels, value: number): void {
  add(family.name, labelsPart(family.labels, labels), observation(family, value));
}

/**
 * {@link count} and {@link observe} of one request with the histogram's label part built once:
 * `labels` is the {@link labelsPart} of `histogram`'s labels, and `counter`'s labels are the
 * histogram's with `last` after them (kube-apiserver's `apiserver_request_total` and
 * `apiserver_request_duration_seconds`: the same labels, and `code`). Adds 1 to the counter with
 * `last` = `value` and, when `seconds` is given, observes it in the histogram.
 */
export function countAndObserve(
  counter: MetricFamily & { type: "counter" },
  histogram: MetricFamily & { type: "histogram" },
  labels: Labels,
  last: [name: string, value: string],
  seconds: number | undefined,
): void {
  const part = labelsPart(histogram.labels, labels);
  add(counter.name, last[1] === "" ? part : withLabel(part, last[0], last[1]), [1]);
  if (seconds !== undefined) add(histogram.name, part, observation(histogram, seconds));
}

/** Takes this isolate's batch (leaving it empty). */
export function takeBatch(): BatchCell[] {
  const out = [...pending.values()];
  pending = new Map();
  return out;
}

/**
 * Sends this isolate's batch to the metrics object now (the scrape does, so that it shows its own
 * isolate's events). A batch that could not be sent goes back to be sent with the next one.
 * Never throws (a failure is logged); resolves false when the batch was not stored.
 */
export async function flushMetrics(env: Pick<Env, "METRICS">): Promise<boolean> {
  const batch = takeBatch();
  if (batch.length === 0 || !env.METRICS) return true;
  try {
    await env.METRICS.getByName(METRICS_OBJECT).add(batch);
    return true;
  } catch (e) {
    for (const [f, l, v] of batch) add(f, l, v);
    console.error("metrics: a batch was not stored; it goes with the next one:", e instanceof Error ? e.message : String(e));
    return false;
  }
}

/**
 * Schedules the send of this isolate's batch. With `delayMs` > 0 ({@link FLUSH_DELAY_MS} by
 * default, the Worker's requests), unless a send is already scheduled: `delayMs` after now, then
 * again while events keep coming. With 0 (a Durable Object's events: an object should keep no
 * timer alive nor wait on a request's context), the batch is sent at once, after the event's
 * answer, unless an object's send is in flight or started less than {@link OBJECT_FLUSH_GAP_MS}
 * ago: the events counted meanwhile then go in one batch once it finished and the gap passed (a
 * wait of at most the gap, under `waitUntil`, while a burst lasts), so a burst of channel
 * messages costs a send per gap, not one per round trip. `waitUntil`
 * keeps the request's (or the object's) context alive for it. Call it after counting; cheap when
 * a send is scheduled.
 */
export function flushSoon(env: Pick<Env, "METRICS">, waitUntil: (p: Promise<unknown>) => void, delayMs = FLUSH_DELAY_MS): void {
  if (pending.size === 0 || !env.METRICS) return;
  if (delayMs <= 0) {
    if (flushing && performance.now() - flushing.aliveMs < STALE_SEND_MS) {
      flushing.again = true;
      return;
    }
    const me = { aliveMs: performance.now(), again: false };
    flushing = me;
    waitUntil(
      (async () => {
        try {
          // Stops at a failed send: the batch waits for the next event's send.
          do {
            // Within the gap after the last send, the events wait for its end (one batch).
            const wait = lastObjectSendMs + OBJECT_FLUSH_GAP_MS - performance.now();
            if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
            me.again = false;
            me.aliveMs = lastObjectSendMs = performance.now();
            if (!(await flushMetrics(env))) break;
          } while (me.again && pending.size > 0);
        } finally {
          if (flushing === me) flushing = null;
        }
      })(),
    );
    return;
  }
  if (sending && performance.now() - sending.aliveMs < STALE_SEND_MS) return;
  const me = { id: ++sends, aliveMs: performance.now() };
  sending = me;
  waitUntil(
    (async () => {
      try {
        // Stops at a failed send: the batch waits for the next event's send.
        while (pending.size > 0) {
          await new Promise((resolve) => setTimeout(resolve, delayMs));
          me.aliveMs = performance.now();
          if (!(await flushMetrics(env))) break;
          me.aliveMs = performance.now();
        }
      } finally {
        if (sending?.id === me.id) sending = null;
      }
    })(),
  );
}
