/**
 * The hub's one clock. Code that needs the time takes it from `clock.now()` (epoch milliseconds)
 * or from a `now` parameter its caller read here, so that a test can set the time by replacing
 * `clock.now` instead of sleeping.
 */
export const clock = {
  /** Current time, epoch milliseconds. */
  now: (): number => Date.now(),
};
