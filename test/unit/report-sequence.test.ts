/**
 * The agent's report sequence (agent/src/report-sequence.ts, docs/agent-protocol.md "Report
 * order"): it grows with each report, across a restart (a new clock) too, and a stale answer makes
 * the newest report go once more with a sequence above the hub's.
 */
import { describe, expect, it } from "vitest";
import { ReportSequence, sendInOrder } from "../../agent/src/report-sequence.ts";

/** An answer as the transports give it (agent/src/hub-client.ts `HubResult`), reduced to what is read here. */
interface Answer {
  ok: boolean;
  value?: { resourceVersion: string; stale?: boolean; sequence?: number };
  error?: { status?: number; message: string };
}

describe("report sequence", () => {
  it("grows with each report, even within one millisecond, and a restarted agent starts above its previous process", () => {
    let now = 1_800_000_000_000;
    const first = new ReportSequence(() => now);
    const a = first.next();
    const b = first.next();
    expect(a).toBe(now * 1000);
    expect(b).toBe(a + 1);
    for (let i = 0; i < 500; i++) first.next();
    const lastOfFirst = first.next();
    now += 1;
    const restarted = new ReportSequence(() => now);
    expect(restarted.next()).toBeGreaterThan(lastOfFirst);
    expect(Number.isSafeInteger(restarted.next())).toBe(true);
  });

  it("a stale answer to the newest report sends it once more with a sequence above the one the hub holds", async () => {
    const clock = new ReportSequence(() => 1_000);
    const held = 5_000_000;
    const sent: (number | undefined)[] = [];
    const answer = await sendInOrder(async (sequence): Promise<Answer> => {
      sent.push(sequence);
      return (sequence ?? 0) > held ? { ok: true, value: { resourceVersion: "7" } } : { ok: true, value: { resourceVersion: "", stale: true, sequence: held } };
    }, clock);
    expect(sent).toEqual([1_000_000, held + 1]);
    expect(answer.value).toEqual({ resourceVersion: "7" });
    expect(clock.next()).toBe(held + 2);
  });

  it("a hub that refuses the field (before issue 39) gets the report again without it, and the later ones too", async () => {
    const clock = new ReportSequence(() => 1_000);
    const sent: (number | undefined)[] = [];
    const send = async (sequence: number | undefined): Promise<Answer> => {
      sent.push(sequence);
      return sequence === undefined
        ? { ok: true, value: { resourceVersion: "3" } }
        : { ok: false, error: { status: 400, message: 'strict decoding error: unknown field "sequence"' } };
    };
    expect((await sendInOrder(send, clock)).ok).toBe(true);
    expect((await sendInOrder(send, clock)).ok).toBe(true);
    expect(sent).toEqual([1_000_000, undefined, undefined]);
  });
});
