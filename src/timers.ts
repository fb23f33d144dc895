/**
 * The hub's timers, as Cloudflare's `agents` scheduler keeps them (`packages/agents/src/…/
 * scheduler.ts`: a row names its callback and payload, and the one alarm is a lookup): each
 * Durable Object has one `timers` table (durable-objects/timers.ts) whose rows are named
 * `<timer>` or `<timer><sep><key>` (`sep` ":" or "/"), where `<timer>` is a timer name of the
 * controller manifest (src/controllers.ts) and `<key>` its payload (an add-on's name, a work's
 * uid and name). An object's `alarm()` looks the due rows' names up in the manifest and runs
 * their handlers; it imports no feature to do so.
 *
 * A leaf module (it imports types only), so that features below the manifest can set a timer
 * without importing the objects that run it.
 */
import { SCHEDULER_NAME, type Env } from "./env.ts";

/** What a timer's handler gets when its row is due. */
export interface TimerContext {
  env: Env;
  /** The time of the alarm (epoch milliseconds, the injected clock). */
  now: number;
  /** The row's payload: what follows the timer's name and its separator ("" when none). */
  key: string;
  /** The name of the object the row is in (a cluster's name for a ClusterObject, `<ns>/<name>` for a replica set). */
  object: string;
  /** Sets a row of the same object to fire no later than `at` (epoch milliseconds). */
  setTimer(purpose: string, at: number): Promise<void>;
}

/**
 * A timer's handler: runs what is due and returns when the row is due again (epoch milliseconds),
 * or null/undefined when it is done. A handler that throws is logged and its row set again a
 * minute later ({@link TIMER_RETRY_MS}).
 */
export type TimerHandler = (ctx: TimerContext) => Promise<number | null | void>;

/** How long after a failed handler its row fires again, in milliseconds. */
export const TIMER_RETRY_MS = 60_000;

/** Splits a row's name into its timer's name and its key (see the module comment). */
export function parseTimer(purpose: string): { timer: string; key: string } {
  const at = purpose.search(/[:/]/);
  return at < 0 ? { timer: purpose, key: "" } : { timer: purpose.slice(0, at), key: purpose.slice(at + 1) };
}

/**
 * Sets the scheduler object's row `purpose` (a hub-wide timer: the outbox sweep, Events' expiry,
 * an add-on's rollout) to fire no later than `at` (epoch milliseconds).
 * @throws errors of the call to the object
 */
export async function setSchedulerTimer(env: Env, purpose: string, at: number): Promise<void> {
  await env.SCHEDULER.getByName(SCHEDULER_NAME).setTimer(purpose, at);
}
