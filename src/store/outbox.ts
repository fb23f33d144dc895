/**
 * The after-commit outbox (the transactional outbox pattern): a write that owes after-commit
 * work commits an outbox row in the same atomic D1 batch (src/store/d1/objects.ts `commitObject`), the
 * writer runs the hooks, and the row is deleted once they all finished. A row left behind (the
 * process crashed between the commit and the end of its hooks, or a hook failed) is found by a
 * sweep and run again, so no committed write stays unprocessed:
 * - at start: the first request an isolate serves sweeps every row committed before it started
 *   (in the background, `waitUntil`; src/index.ts);
 * - periodically while rows are left: the scheduler object's alarm (durable-objects/scheduler.ts)
 *   sweeps the rows that are due and sets itself again for the next one.
 * Hooks are idempotent, so a row run twice (a sweep racing a slow writer) does no harm.
 */
import { and, asc, eq, gt, inArray, lt, lte, min, sql } from "drizzle-orm";
import { bind, builder, compiled } from "../db/compiled.ts";
import { outbox } from "../db/schema.ts";
import { database } from "./d1/objects.ts";
import type { Env } from "../env.ts";
import { hookNamed, type Change, type HookTarget, type SharedReads } from "./hooks.ts";
import { clock } from "../clock.ts";
import { setSchedulerTimer } from "../timers.ts";

/** The scheduler object's timer of the periodic sweep (the manifest's `outbox-sweep`, src/controllers.ts). */
export const OUTBOX_SWEEP_TIMER = "outbox-sweep";

/** How long a writer owns the row of its own commit before a sweep may take it, in milliseconds. */
export const OUTBOX_GRACE_MS = 60_000;
/** First retry delay of a row whose hook failed, in milliseconds (doubling per sweep, up to {@link MAX_RETRY_MS}). */
const RETRY_MS = 2_000;
/** Longest retry delay, in milliseconds. */
const MAX_RETRY_MS = 300_000;
/** Rows one sweep takes at a time (their hooks run concurrently). */
const SWEEP_BATCH = 32;

/** One outbox row: its id, the written object, and hook name to what the write owes it. */
export interface OwedWork {
  id: string;
  resource: string;
  namespace: string;
  name: string;
  hooks: Record<string, unknown>;
}

/** How {@link runOwed} runs an outbox row's hooks. */
export interface RunOwedOptions {
  /** A sweep runs the row again (after a crash or a failure): see `HookTarget.recovering`. */
  recovering: boolean;
  /** When a row left unfinished is due again (epoch milliseconds; unchanged when undefined). */
  retryAt?: number;
  /** The committed change, when the writer runs its own row (see `HookTarget`). */
  change?: Change;
  /** Whether the writer waits for the hooks' effects (`HookTarget.writerWaits`; default false). */
  writerWaits?: boolean;
  /** False leaves a finished row for the caller to delete with others ({@link deleteOutboxRows}); default true. */
  deleteWhenFinished?: boolean;
  /** Reads shared with the hooks of commits finished together (`HookTarget.reads`). */
  reads?: SharedReads;
}

/**
 * Runs the hooks `work` names, in order, and deletes its row once they all finished (see
 * {@link RunOwedOptions}). A hook that asks to be requeued is kept silently; one that throws (or is
 * not registered) is logged and kept: the row
 * then names only the unfinished hooks, is due again at `opts.retryAt` and the sweep is set for
 * it. Never throws for a hook's failure: the write it belongs to has committed. A hook that took
 * the row over (`HookOutcome.tookRow`, only when it is the row's one hook and the writer runs it)
 * finishes without the row being deleted here: the hook's queue deletes it.
 * Returns whether a hook rewrote the written object, whether every hook finished, and whether
 * the row was taken over (`tookRow`: the caller must not delete it either).
 */
export async function runOwed(env: Env, work: OwedWork, opts: RunOwedOptions): Promise<{ rewrote: boolean; finished: boolean; tookRow: boolean }> {
  const { recovering, retryAt, change, writerWaits = false, deleteWhenFinished = true, reads } = opts;
  let rewrote = false;
  let tookRow = false;
  const left: Record<string, unknown> = {};
  const names = Object.keys(work.hooks);
  const outboxRow = recovering ? undefined : { id: work.id, only: names.length === 1 };
  const target: HookTarget = { resource: work.resource, namespace: work.namespace, name: work.name, recovering, writerWaits, change, outbox: outboxRow, reads };
  for (const [name, owed] of Object.entries(work.hooks)) {
    const hook = hookNamed(name);
    if (!hook) {
      console.error(`outbox: no after-commit hook named ${name} is registered; ${work.resource} ${work.namespace}/${work.name} keeps owing it`);
      left[name] = owed;
      continue;
    }
    try {
      const outcome = await hook.run(env, owed, target);
      if (outcome?.rewrote) rewrote = true;
      if (outcome?.requeue) left[name] = owed;
      else if (outcome?.tookRow && outboxRow?.only) tookRow = true;
    } catch (e) {
      console.error(`outbox: after-commit hook ${name} of ${work.resource} ${work.namespace}/${work.name} failed; a sweep runs it again`, e);
      left[name] = owed;
    }
  }
  const db = database(env.DB);
  const finished = Object.keys(left).length === 0;
  try {
    if (finished) {
      if (deleteWhenFinished && !tookRow) await bind(env.DB, deleteRowsShape(), { ids: JSON.stringify([work.id]) }).run();
    } else {
      await db
        .update(outbox)
        .set({ hooks: JSON.stringify(left), ...(retryAt !== undefined ? { dueAt: retryAt } : {}) })
        .where(eq(outbox.id, work.id));
      if (retryAt !== undefined) await armSweep(env, retryAt);
    }
  } catch (e) {
    // The row stays as it was: a sweep runs its hooks again, which they allow.
    console.error(`outbox: could not settle the row of ${work.resource} ${work.namespace}/${work.name}`, e);
  }
  return { rewrote, finished, tookRow };
}

/** Deletes the rows whose ids the JSON array `ids` holds: one bound parameter for any number of rows. */
const deleteRowsShape = compiled(() =>
  builder.delete(outbox).where(inArray(outbox.id, builder.select({ id: sql<string>`value` }).from(sql`json_each(${sql.placeholder("ids")})`))),
);

/**
 * Deletes the outbox rows `ids` (whose hooks all finished) in one statement. A failure is logged
 * and the sweep is set for when the rows are due: a row left is run again, which its hooks allow.
 */
export async function deleteOutboxRows(env: Env, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  try {
    await bind(env.DB, deleteRowsShape(), { ids: JSON.stringify(ids) }).run();
  } catch (e) {
    console.error(`outbox: could not delete ${ids.length} finished rows; a sweep runs them again`, e);
    await armSweep(env, clock.now() + OUTBOX_GRACE_MS);
  }
}

/** A request's `ExecutionContext.waitUntil`: keeps the request's work going after its answer. */
export type WaitUntil = (p: Promise<unknown>) => void;

/** How long a finished row waits to be deleted with others ({@link deferOutboxDelete}), in milliseconds. */
const DEFERRED_DELETE_MS = 20;
/** Most rows one deferred deletion takes (their ids are one JSON parameter). */
const DEFERRED_DELETE_MAX_ROWS = 500;
/**
 * How long after its start a deferred deletion that has not run counts as lost, in milliseconds:
 * its request was cancelled, and its timer with it. Later rows then start a new one.
 */
const DEFERRED_DELETE_LOST_MS = 50 * DEFERRED_DELETE_MS;
/** The rows this isolate's next deferred deletion takes, and when it was set (epoch ms). */
let deferred: { ids: string[]; at: number } | null = null;

/**
 * Deletes the outbox row `id`, whose hooks all finished, {@link DEFERRED_DELETE_MS} later together
 * with the rows that other writes of this isolate finished meanwhile: one D1 statement for many
 * agent status reports instead of one each. The first row of a group schedules the deletion in
 * its own request (`waitUntil`, the request's `ExecutionContext.waitUntil`), so no request waits
 * on another's I/O. Until then the row is an ordinary finished row: a sweep that finds it (the
 * isolate died first, or the request that was to delete it was cancelled: its group is then
 * given up after {@link DEFERRED_DELETE_LOST_MS}) runs its hooks again, which they allow; so does
 * a deletion that fails ({@link deleteOutboxRows}).
 */
export function deferOutboxDelete(env: Env, id: string, waitUntil: WaitUntil): void {
  const now = clock.now();
  if (deferred && deferred.ids.length < DEFERRED_DELETE_MAX_ROWS && now - deferred.at < DEFERRED_DELETE_LOST_MS) {
    deferred.ids.push(id);
    return;
  }
  const group = (deferred = { ids: [id], at: now });
  waitUntil(
    new Promise((resolve) => setTimeout(resolve, DEFERRED_DELETE_MS)).then(() => {
      if (deferred === group) deferred = null;
      return deleteOutboxRows(env, group.ids);
    }),
  );
}

/** The first retry time of a row whose hook failed at `now` (epoch milliseconds). */
export function retryTime(now: number): number {
  return now + RETRY_MS;
}

/**
 * Sweeps the outbox at `now` (epoch milliseconds): takes the rows that are due and, when
 * `startedAt` is given (an isolate's start, epoch milliseconds), every row committed before it,
 * oldest first, in batches; pushes each taken row's due time back (doubling per attempt) so
 * that a concurrent sweep leaves it alone, and runs its hooks (`recovering`).
 * Returns how many rows finished and when the next row left is due (epoch ms, or null).
 * @throws errors of D1 (the rows stay, for the next sweep)
 */
export async function sweepOutbox(env: Env, now: number, startedAt?: number): Promise<{ finished: number; nextDue: number | null }> {
  const db = database(env.DB);
  if (startedAt !== undefined)
    await db
      .update(outbox)
      .set({ dueAt: now })
      .where(and(lt(outbox.createdAt, startedAt), gt(outbox.dueAt, now)));
  let finished = 0;
  for (;;) {
    const claimed = await db
      .update(outbox)
      .set({ attempts: sql`${outbox.attempts} + 1`, dueAt: sql`${now} + min(${MAX_RETRY_MS}, ${RETRY_MS} << min(${outbox.attempts}, 16))` })
      .where(
        inArray(outbox.id, db.select({ id: outbox.id }).from(outbox).where(lte(outbox.dueAt, now)).orderBy(asc(outbox.resourceVersion)).limit(SWEEP_BATCH)),
      )
      .returning();
    if (claimed.length === 0) break;
    const results = await Promise.all(
      claimed.map((r) =>
        runOwed(
          env,
          { id: r.id, resource: r.resource, namespace: r.namespace, name: r.name, hooks: JSON.parse(r.hooks) as Record<string, unknown> },
          { recovering: true },
        ),
      ),
    );
    finished += results.filter((r) => r.finished).length;
    if (claimed.length < SWEEP_BATCH) break;
  }
  const [next] = await db.select({ due: min(outbox.dueAt) }).from(outbox);
  return { finished, nextDue: next?.due ?? null };
}

/**
 * Sets the periodic sweep (the scheduler object's {@link OUTBOX_SWEEP_TIMER} timer) to run no later
 * than `at` (epoch milliseconds). Failures are logged: the next isolate's start sweeps anyway.
 */
export async function armSweep(env: Env, at: number): Promise<void> {
  try {
    await setSchedulerTimer(env, OUTBOX_SWEEP_TIMER, at);
  } catch (e) {
    console.error("outbox: could not set the sweep", e);
  }
}

/**
 * How long the sweep at an isolate's start may take before a later request starts it again, in
 * milliseconds: the request that ran it may have been cancelled, and its sweep with it.
 */
const RECOVERY_LOST_MS = 60_000;
/** The sweep at this isolate's start: when it was last started (epoch ms), and whether it finished. */
let recovery: { at: number; done: boolean } | null = null;
/** The isolate's start (epoch ms, its first request's time): the sweep takes the rows committed before it. */
let isolateStart: number | null = null;

/**
 * The sweep at an isolate's start: the first call (the isolate's first request, at `now`, epoch
 * milliseconds) sweeps every row committed before it in the background (`waitUntil`), and sets
 * the periodic sweep for what is left. Later calls do nothing, unless that sweep failed, or has
 * not finished within {@link RECOVERY_LOST_MS} (its request was cancelled): the next request then
 * sweeps again (concurrent sweeps leave each other's rows alone). Nothing awaits another
 * request's sweep.
 */
export function recoverAtStart(env: Env, now: number, waitUntil: WaitUntil): void {
  if (recovery && (recovery.done || now - recovery.at < RECOVERY_LOST_MS)) return;
  isolateStart ??= now;
  const startedAt = isolateStart;
  const mine: { at: number; done: boolean } = { at: now, done: false };
  recovery = mine;
  waitUntil(
    (async () => {
      const { nextDue } = await sweepOutbox(env, now, startedAt);
      if (nextDue !== null) await armSweep(env, nextDue);
      mine.done = true;
    })().catch((e: unknown) => {
      console.error("outbox: the sweep at start failed; the next request tries again", e);
      if (recovery === mine) recovery = null;
    }),
  );
}
