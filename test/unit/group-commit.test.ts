/**
 * Group commit (src/store/group-commit.ts): a write to an idle store goes at once and alone; writes
 * that arrive while a commit is in flight go together once it returns, each answered with its own
 * output; a group whose commit fails, or that is not heard of in time, commits each write alone.
 */
import { describe, expect, it, vi } from "vitest";
import { CommitGroups, SendGroups } from "../../src/store/group-commit.ts";

/** A commit function whose calls the test answers: each call is recorded with its items. */
function controlled() {
  const calls: { items: string[]; answer: () => void; fail: () => void }[] = [];
  const commit = (items: string[]) =>
    new Promise<string[]>((resolve, reject) => {
      calls.push({ items: [...items], answer: () => resolve(items.map((i) => `ok:${i}`)), fail: () => reject(new Error("D1 failed")) });
    });
  return { calls, commit };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("CommitGroups", () => {
  it("sends a write to an idle store at once, alone", async () => {
    const { calls, commit } = controlled();
    const g = new CommitGroups(commit, 50);
    const a = g.run("a");
    await tick();
    expect(calls.map((c) => c.items)).toEqual([["a"]]);
    calls[0]!.answer();
    expect(await a).toBe("ok:a");
  });

  it("groups the writes that arrive while a commit is in flight into one call, each answered with its own output", async () => {
    const { calls, commit } = controlled();
    const g = new CommitGroups(commit, 50);
    const first = g.run("a");
    const rest = ["b", "c", "d"].map((i) => g.run(i));
    await tick();
    expect(calls.map((c) => c.items)).toEqual([["a"]]);
    calls[0]!.answer();
    await tick();
    expect(calls.map((c) => c.items)).toEqual([["a"], ["b", "c", "d"]]);
    // Meanwhile the next group gathers.
    const later = g.run("e");
    calls[1]!.answer();
    expect(await first).toBe("ok:a");
    expect(await Promise.all(rest)).toEqual(["ok:b", "ok:c", "ok:d"]);
    await tick();
    expect(calls.map((c) => c.items)).toEqual([["a"], ["b", "c", "d"], ["e"]]);
    calls[2]!.answer();
    expect(await later).toBe("ok:e");
    expect(g.counts).toEqual({ calls: 3, items: 5 });
  });

  it("starts the next group when the waiting one is full; each group waits for the commit before it", async () => {
    const { calls, commit } = controlled();
    const g = new CommitGroups(commit, 2);
    const all = ["a", "b", "c", "d", "e"].map((i) => g.run(i));
    await tick();
    expect(calls.map((c) => c.items)).toEqual([["a"]]);
    calls[0]!.answer();
    await tick();
    expect(calls.map((c) => c.items)).toEqual([["a"], ["b", "c"]]);
    calls[1]!.answer();
    await tick();
    expect(calls.map((c) => c.items)).toEqual([["a"], ["b", "c"], ["d", "e"]]);
    calls[2]!.answer();
    expect(await Promise.all(all)).toEqual(["ok:a", "ok:b", "ok:c", "ok:d", "ok:e"]);
    // Idle again: the next write goes at once.
    const f = g.run("f");
    await tick();
    expect(calls.map((c) => c.items)).toHaveLength(4);
    calls[3]!.answer();
    expect(await f).toBe("ok:f");
  });

  it("with a budget of bytes, starts the next group when an item would take the waiting one past it", async () => {
    const { calls, commit } = controlled();
    // Items' sizes are their lengths; at most 5 bytes to a group (an item over it goes alone).
    const g = new CommitGroups(commit, 50, undefined, { sizeOf: (i: string) => i.length, maxBytes: () => 5 });
    const all = ["a", "bb", "ccc", "dd", "eeeeeee", "f"].map((i) => g.run(i));
    await tick();
    expect(calls.map((c) => c.items)).toEqual([["a"]]);
    for (let n = 0; n < 4; n++) {
      calls[n]!.answer();
      await tick();
    }
    expect(calls.map((c) => c.items)).toEqual([["a"], ["bb", "ccc"], ["dd"], ["eeeeeee"], ["f"]]);
    calls[4]!.answer();
    expect(await Promise.all(all)).toEqual(["ok:a", "ok:bb", "ok:ccc", "ok:dd", "ok:eeeeeee", "ok:f"]);
  });

  it("commits each write of a group alone when the group's commit fails; a write alone gets its error", async () => {
    const { calls, commit } = controlled();
    const g = new CommitGroups(commit, 50);
    const first = g.run("a");
    const rest = ["b", "c"].map((i) => g.run(i));
    await tick();
    calls[0]!.fail();
    await expect(first).rejects.toThrow("D1 failed");
    await tick();
    expect(calls[1]!.items).toEqual(["b", "c"]);
    calls[1]!.fail();
    await tick();
    await tick();
    expect(
      calls
        .slice(2)
        .map((c) => c.items)
        .sort(),
    ).toEqual([["b"], ["c"]]);
    calls[2]!.answer();
    calls[3]!.answer();
    expect((await Promise.all(rest)).sort()).toEqual(["ok:b", "ok:c"]);
  });

  it("stops waiting after the wait limit: for a commit in flight that never returns, and for a group never heard of", async () => {
    vi.useFakeTimers();
    try {
      const { calls, commit } = controlled();
      const g = new CommitGroups(commit, 50, 30);
      void g.run("stuck");
      const leader = g.run("b");
      const member = g.run("c");
      await vi.advanceTimersByTimeAsync(29);
      expect(calls.map((c) => c.items)).toEqual([["stuck"]]);
      await vi.advanceTimersByTimeAsync(1);
      // The leader went on without the stuck commit; its group's call never returns either.
      expect(calls.map((c) => c.items)).toEqual([["stuck"], ["b", "c"]]);
      await vi.advanceTimersByTimeAsync(29);
      expect(calls).toHaveLength(2);
      await vi.advanceTimersByTimeAsync(1);
      // The member gave up on its group (twice the limit) and committed alone.
      expect(calls.map((c) => c.items)).toEqual([["stuck"], ["b", "c"], ["c"]]);
      calls[2]!.answer();
      expect(await member).toBe("ok:c");
      calls[1]!.answer();
      expect(await leader).toBe("ok:b");
    } finally {
      vi.useRealTimers();
    }
  });

  it("does not wait again on a commit in flight for longer than the limit (its request may be gone): a write then goes at once", async () => {
    vi.useFakeTimers();
    try {
      const { calls, commit } = controlled();
      const g = new CommitGroups(commit, 50, 30);
      void g.run("stuck");
      await vi.advanceTimersByTimeAsync(10);
      // A group formed now waits for the stuck commit until 30 ms after it was sent, not 30 ms from now.
      void g.run("b");
      await vi.advanceTimersByTimeAsync(19);
      expect(calls.map((c) => c.items)).toEqual([["stuck"]]);
      await vi.advanceTimersByTimeAsync(1);
      expect(calls.map((c) => c.items)).toEqual([["stuck"], ["b"]]);
      // Its commit never returns either: 30 ms after it was sent, a write no longer waits for it.
      await vi.advanceTimersByTimeAsync(30);
      const late = g.run("c");
      await vi.advanceTimersByTimeAsync(0);
      expect(calls.map((c) => c.items)).toEqual([["stuck"], ["b"], ["c"]]);
      calls[2]!.answer();
      expect(await late).toBe("ok:c");
    } finally {
      vi.useRealTimers();
    }
  });
});

/** A send function whose calls the test settles: each call is recorded with its items. */
function controlledSends() {
  const calls: { items: string[]; answer: () => void; fail: () => void }[] = [];
  const send = (items: string[]) =>
    new Promise<void>((resolve, reject) => {
      calls.push({ items: [...items], answer: () => resolve(), fail: () => reject(new Error("send failed")) });
    });
  return { calls, send };
}

describe("SendGroups", () => {
  it("sends an item at once when nothing is in flight; only a group's first item waits, for its group's send", async () => {
    const { calls, send } = controlledSends();
    const g = new SendGroups(send, 50);
    const first = g.add("a");
    expect(first).not.toBeNull();
    expect(calls.map((c) => c.items)).toEqual([["a"]]);
    // Items arriving meanwhile: the first leads the next group, the others return at once.
    const leader = g.add("b");
    expect(leader).not.toBeNull();
    expect(g.add("c")).toBeNull();
    expect(g.add("d")).toBeNull();
    let led = false;
    void leader!.then(() => (led = true));
    await tick();
    expect(calls.map((c) => c.items)).toEqual([["a"]]);
    calls[0]!.answer();
    await first;
    await tick();
    expect(calls.map((c) => c.items)).toEqual([["a"], ["b", "c", "d"]]);
    expect(led).toBe(false);
    calls[1]!.answer();
    await leader;
    expect(g.counts).toEqual({ calls: 2, items: 4 });
    // Idle again: the next item goes at once.
    const e = g.add("e");
    expect(calls.map((c) => c.items)).toHaveLength(3);
    calls[2]!.answer();
    await e;
  });

  it("starts the next group when the waiting one is full, and a failed send fails only its leader", async () => {
    const { calls, send } = controlledSends();
    const g = new SendGroups(send, 2);
    const adds = ["a", "b", "c", "d", "e"].map((i) => g.add(i));
    expect(adds.map((p) => p !== null)).toEqual([true, true, false, true, false]);
    calls[0]!.fail();
    await expect(adds[0]).rejects.toThrow("send failed");
    await tick();
    expect(calls.map((c) => c.items)).toEqual([["a"], ["b", "c"]]);
    calls[1]!.answer();
    await adds[1];
    await tick();
    expect(calls.map((c) => c.items)).toEqual([["a"], ["b", "c"], ["d", "e"]]);
    calls[2]!.answer();
    await adds[3];
  });

  it("does not wait for a send in flight longer than the limit", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      const { calls, send } = controlledSends();
      const g = new SendGroups(send, 50, 1_000);
      void g.add("a");
      vi.setSystemTime(Date.now() + 1_000);
      const b = g.add("b");
      expect(calls.map((c) => c.items)).toEqual([["a"], ["b"]]);
      calls[1]!.answer();
      await b;
    } finally {
      vi.useRealTimers();
    }
  });
});
