/**
 * Waiting for a condition in tests, in Node and in workerd alike: a test's outcome is decided by
 * the condition it waits for, never by how long it slept.
 */

/**
 * Polls `probe` every `intervalMs` milliseconds (default 250) until it returns a truthy value,
 * and returns that value. A probe that throws counts as not yet.
 *
 * @param what what is awaited, for the timeout's message.
 * @param timeoutMs how long to wait, in milliseconds (default 60 000).
 * @throws Error naming `what` and the last probe result after `timeoutMs` milliseconds.
 */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 60_000, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
