/**
 * The sequence the agent stamps on each work status and policy compliance report
 * (docs/agent-protocol.md "Report order"): the hub commits a report only when its sequence is
 * greater than the one it last committed for the same object, so a copy of an older report that
 * reaches it late (sent again after a reconnect, an HTTP request that lingered) never overwrites a
 * newer one it acknowledged.
 *
 * A hybrid clock, so that it keeps growing across restarts of the agent without storing anything:
 * each sequence is the larger of the last one plus 1 and the epoch milliseconds times 1,000 (a
 * restarted agent starts above whatever its previous process sent, unless that one sent more than
 * 1,000 reports per millisecond it ran, or the clock went back). When the hub answers that a
 * report was stale (it holds a sequence at least as large: the clock went back), the clock
 * {@link ReportSequence.learn}s the hub's and the report goes again with a greater one.
 */
export class ReportSequence {
  private last = 0;
  /** Whether the hub refused the field (a hub of before issue 39): reports then go without it. */
  refused = false;

  constructor(private readonly nowMs: () => number = Date.now) {}

  /** The next sequence: greater than every one returned or learned before. */
  next(): number {
    this.last = Math.max(this.last + 1, Math.floor(this.nowMs()) * 1000);
    return this.last;
  }

  /** Takes in a sequence the hub holds (a stale answer's): the next one is greater. */
  learn(held: number | undefined): void {
    if (typeof held === "number" && Number.isSafeInteger(held) && held > this.last) this.last = held;
  }
}

/** The agent process's clock (one for all its works and policies: it only has to grow per object). */
export const reportSequence = new ReportSequence();

/**
 * Sends a report stamped with the next sequence (`send(sequence)`), and once more with a greater
 * one when the hub answers that it was stale although it is the newest this agent has (its clock
 * is behind the hub's record: a restart after the clock went back). A hub of before issue 39
 * refuses the field (400 `unknown field "sequence"`): the report goes again without it, and so do
 * the process's later ones (`send(undefined)`). Returns the last answer.
 */
export async function sendInOrder<T extends { ok: boolean; value?: { stale?: boolean; sequence?: number }; error?: { status?: number; message: string } }>(
  send: (sequence: number | undefined) => Promise<T>,
  clock: ReportSequence = reportSequence,
): Promise<T> {
  if (clock.refused) return send(undefined);
  const first = await send(clock.next());
  if (!first.ok && first.error?.status === 400 && first.error.message.includes('unknown field "sequence"')) {
    clock.refused = true;
    return send(undefined);
  }
  if (!first.ok || !first.value?.stale) return first;
  clock.learn(first.value.sequence);
  return send(clock.next());
}
