/**
 * Timing helpers of the agent loop: capped exponential backoff with full jitter (for an
 * unreachable hub or kube-apiserver), the lease renew jitter of OCM's `wait.JitterUntil(…, 0.25)`,
 * a sleep that can be cut short, and a backoff sleep that a cheap probe ends as soon as an absent
 * hub is back.
 */

/** Random source returning a number in [0, 1); `Math.random` by default, injectable for tests. */
export type Random = () => number;

/**
 * Capped exponential backoff with full jitter ("AWS full jitter"): the n-th consecutive
 * failure (n from 0) waits a uniformly random time in [0, min(cap, base × 2^n)].
 *
 * @example
 * const b = new Backoff(1_000, 60_000);
 * await sleep(b.next()); // 0–1 s, then 0–2 s, 0–4 s, … never more than 60 s
 * b.reset();             // after a success
 */
export class Backoff {
  private attempt = 0;

  /**
   * @param baseMs first ceiling in milliseconds (e.g. 1 000).
   * @param capMs largest ceiling in milliseconds (e.g. 60 000).
   * @param random random source in [0, 1).
   */
  constructor(
    private readonly baseMs: number,
    private readonly capMs: number,
    private readonly random: Random = Math.random,
  ) {}

  /** The ceiling (milliseconds) for the current attempt, without jitter. */
  ceilingMs(): number {
    return Math.min(this.capMs, this.baseMs * 2 ** Math.min(this.attempt, 52));
  }

  /**
   * The delay before the next retry, in milliseconds, and counts the attempt.
   *
   * @param atLeastMs a floor, e.g. the hub's `Retry-After`; still capped at `capMs`.
   */
  next(atLeastMs = 0): number {
    const delay = this.random() * this.ceilingMs();
    this.attempt++;
    return Math.min(this.capMs, Math.max(delay, atLeastMs));
  }

  /** Number of consecutive failures counted since the last {@link reset}. */
  get failures(): number {
    return this.attempt;
  }

  /** Starts over after a success. */
  reset(): void {
    this.attempt = 0;
  }
}

/**
 * How long a connection must have stayed up, in milliseconds, for its loss to start the
 * reconnect backoff over (30 000): a hub that accepts connections and drops them at once keeps
 * its agents' ceilings growing instead of being dialled again within a second each time.
 */
export const RECONNECT_STABLE_MS = 30_000;

/**
 * The reconnect policy of a long-lived connection to the hub (the WebSocket transport's; issue
 * 28): capped exponential backoff with full jitter, from the FIRST attempt. When a hub restart,
 * a deploy or an evicted object drops every agent's connection at once, each agent waits a
 * uniformly random time in [0, base] before it dials again, then [0, 2 x base], ... up to
 * [0, cap], so N agents arrive at N / base per millisecond on average rather than all within
 * the same instant ("AWS full jitter"). A connection that stayed up at least `stableMs` starts
 * the sequence over when it is lost; one dropped sooner continues it.
 *
 * @example
 * const r = new ReconnectBackoff(1_000, 60_000);
 * r.connected(Date.now());
 * // ... the connection closes:
 * await sleeper.sleep(r.lost(Date.now())); // 0–1 s after a stable connection, growing otherwise
 */
export class ReconnectBackoff {
  private readonly backoff: Backoff;
  private upSince: number | undefined;

  /**
   * @param baseMs first ceiling in milliseconds (e.g. 1 000; the window the first reconnects of a
   *   fleet spread over).
   * @param capMs largest ceiling in milliseconds (e.g. 60 000).
   * @param random random source in [0, 1).
   * @param stableMs how long a connection must last (ms) for its loss to start over; default {@link RECONNECT_STABLE_MS}.
   */
  constructor(
    baseMs: number,
    capMs: number,
    random: Random = Math.random,
    private readonly stableMs = RECONNECT_STABLE_MS,
  ) {
    this.backoff = new Backoff(baseMs, capMs, random);
  }

  /** The connection is up, at `now` (epoch milliseconds). */
  connected(now: number): void {
    this.upSince = now;
  }

  /**
   * The connection was lost (or a dial failed) at `now` (epoch milliseconds): the delay before
   * the next dial, in milliseconds.
   *
   * @param atLeastMs a floor, e.g. a `Retry-After` or a close code's advice; still capped.
   */
  lost(now: number, atLeastMs = 0): number {
    if (this.upSince !== undefined && now - this.upSince >= this.stableMs) this.backoff.reset();
    this.upSince = undefined;
    return this.backoff.next(atLeastMs);
  }

  /** Consecutive losses counted since the sequence last started over. */
  get failures(): number {
    return this.backoff.failures;
  }
}

/** OCM's lease renew jitter factor (`wait.JitterUntil(…, 0.25, …)`). */
export const LEASE_JITTER_FACTOR = 0.25;

/** OCM's default lease duration in seconds, used when the hub says 0. */
export const DEFAULT_LEASE_DURATION_SECONDS = 60;

/**
 * The wait before the next heartbeat, as `wait.JitterUntil` computes it: the lease duration
 * plus up to 25 % more, uniformly (60 s gives 60–75 s).
 *
 * @param leaseDurationSeconds the hub's `leaseDurationSeconds`; 0 or less means 60.
 * @param random random source in [0, 1).
 * @returns the wait in milliseconds.
 */
export function heartbeatDelayMs(leaseDurationSeconds: number, random: Random = Math.random): number {
  const seconds = leaseDurationSeconds > 0 ? leaseDurationSeconds : DEFAULT_LEASE_DURATION_SECONDS;
  return seconds * 1000 * (1 + LEASE_JITTER_FACTOR * random());
}

/**
 * A sleep that ends early when {@link Sleeper.wake} is called or the abort signal fires, so
 * the loop reacts at once to a health change or to stop().
 */
export class Sleeper {
  private wakeCurrent: (() => void) | undefined;

  /** @param signal aborting it ends every sleep at once. */
  constructor(private readonly signal: AbortSignal) {}

  /**
   * Sleeps `ms` milliseconds.
   *
   * @returns `"elapsed"`, `"woken"` or `"aborted"`; never rejects.
   */
  sleep(ms: number): Promise<"elapsed" | "woken" | "aborted"> {
    if (this.signal.aborted) return Promise.resolve("aborted");
    return new Promise((resolve) => {
      const done = (why: "elapsed" | "woken" | "aborted"): void => {
        clearTimeout(timer);
        this.signal.removeEventListener("abort", onAbort);
        if (this.wakeCurrent === onWake) this.wakeCurrent = undefined;
        resolve(why);
      };
      const onAbort = (): void => done("aborted");
      const onWake = (): void => done("woken");
      const timer = setTimeout(() => done("elapsed"), Math.max(0, ms));
      this.signal.addEventListener("abort", onAbort, { once: true });
      this.wakeCurrent = onWake;
    });
  }

  /** Ends the sleep in progress, if any (returns `"woken"`). */
  wake(): void {
    this.wakeCurrent?.();
  }
}

/**
 * How often an agent backing off from an absent hub probes whether it is back, in milliseconds
 * (3 000; each wait is jittered to 50–150 % of it). The probe is `GET /livez`; a hub back after
 * an outage of any length is seen within 4.5 s plus the probe's answer, and the call that failed
 * is made again at once, so agents are back within 10 s of the hub.
 */
export const HUB_PROBE_PERIOD_MS = 3_000;

/**
 * Sleeps a backoff delay of `delayMs` milliseconds, probing every `periodMs` (jittered to
 * 50–150 %) whether what failed is back; ends as soon as `probe` resolves true. The backoff
 * itself is unchanged for real work: only the probe, cheap and unauthenticated, runs at the short
 * period, and not at all once less than a period of the backoff is left.
 *
 * @param sleeper the loop's sleeper (its wake and abort end this sleep too).
 * @param probe resolves true when the hub answers; must not reject.
 * @param now the clock, epoch milliseconds (`Date.now` by default).
 * @returns `"back"` when a probe succeeded, else what the sleep ended with.
 */
export async function sleepProbing(
  sleeper: Sleeper,
  delayMs: number,
  probe: () => Promise<boolean>,
  periodMs: number = HUB_PROBE_PERIOD_MS,
  random: Random = Math.random,
  now: () => number = Date.now,
): Promise<"elapsed" | "woken" | "aborted" | "back"> {
  const deadline = now() + delayMs;
  for (;;) {
    const left = deadline - now();
    const step = periodMs * (0.5 + random());
    // What is left of the backoff is no longer than a probe period: the call itself is the probe.
    if (left <= step) return sleeper.sleep(left);
    const why = await sleeper.sleep(step);
    if (why !== "elapsed") return why;
    if (await probe()) return "back";
  }
}
