/**
 * Polling until something holds (`--wait`), with progress and a deadline.
 */
import { CliError } from "./errors.ts";
import type { Progress } from "./progress.ts";
import { formatSeconds } from "./time.ts";

/** What one poll found: whether the wait is over, and a line describing the current state. */
export interface PollResult<T> {
  done: boolean;
  /** The current state, shown as progress (e.g. "waiting for cluster c1 to join (Joined=False)"). */
  state: string;
  value?: T;
}

/** Options of {@link pollUntil}. */
export interface PollOptions<T> {
  /** Checks the state once; errors it throws end the wait. */
  probe: () => Promise<PollResult<T>>;
  progress: Progress;
  /** The deadline, epoch milliseconds. */
  deadlineMs: number;
  /** The whole timeout in seconds, for the message. */
  timeoutSeconds: number;
  /** Pause between polls in milliseconds (default 1000). */
  intervalMs?: number;
  /** The hint of the timeout error. */
  timeoutHint: string;
  /** The clock (epoch milliseconds), for tests. */
  now?: () => number;
}

/**
 * Polls `probe` until it reports `done`, showing its state as progress.
 *
 * @returns the `value` of the final poll.
 * @throws CliError `timed out after <timeout> <state>` when the deadline passes first; any
 *   error of `probe` (progress is cleared first).
 */
export async function pollUntil<T>(opts: PollOptions<T>): Promise<T | undefined> {
  const now = opts.now ?? Date.now;
  for (;;) {
    let r: PollResult<T>;
    try {
      r = await opts.probe();
    } catch (err) {
      opts.progress.stop();
      throw err;
    }
    if (r.done) return r.value;
    if (now() >= opts.deadlineMs) {
      opts.progress.stop();
      throw new CliError(`timed out after ${formatSeconds(opts.timeoutSeconds)} ${r.state}`, opts.timeoutHint);
    }
    opts.progress.update(r.state);
    await new Promise((resolve) => setTimeout(resolve, Math.min(opts.intervalMs ?? 1000, Math.max(0, opts.deadlineMs - now()))));
  }
}
