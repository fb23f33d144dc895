/**
 * The works a cluster's Durable Object keeps for its polls (src/work/namespace-deliverables.ts): filled
 * by one read, then kept by delivered changes that arrive in any order, during a fill too; a
 * change without its object forgets everything, and a namespace over the byte bound is not kept.
 * Randomised: after any interleaving of changes and a fill, the picture equals the last state.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/k8s/meta.ts";
import {
  NAMESPACE_WORKS_MAX_BYTES,
  NamespaceDeliverables,
  type DeliverableDelta,
  type DeliverablesRead,
  type KeptEntries,
  type KeptPicture,
} from "../../src/work/namespace-deliverables.ts";

const work = (name: string, rv: number, extra = ""): KubeObject => ({
  apiVersion: "work.open-cluster-management.io/v1",
  kind: "ManifestWork",
  metadata: { name, namespace: "c1", uid: `u-${name}`, resourceVersion: String(rv), creationTimestamp: "2026-01-01T00:00:00Z" },
  spec: { note: extra },
});
const put = (w: KubeObject): DeliverableDelta => ({ name: w.metadata.name, resourceVersion: Number(w.metadata.resourceVersion), object: w });
const removed = (name: string, rv: number): DeliverableDelta => ({ name, resourceVersion: rv, object: null });
/** A read of `items` at the store's resourceVersion `rv`. */
const at =
  (rv: number, ...items: KubeObject[]) =>
  async (): Promise<DeliverablesRead> => ({ items, resourceVersion: rv });
const names = (r: { works: KubeObject[] } | null) => r?.works.map((w) => `${w.metadata.name}@${w.metadata.resourceVersion}`);

/** A read that resolves when the test says, to interleave changes with a fill. */
function deferredRead(): { read: () => Promise<DeliverablesRead>; resolve: (items: KubeObject[], resourceVersion: number) => void; calls: () => number } {
  let calls = 0;
  let resolve!: (read: DeliverablesRead) => void;
  return {
    read: () => {
      calls++;
      return new Promise((r) => (resolve = r));
    },
    resolve: (items, resourceVersion) => resolve({ items, resourceVersion }),
    calls: () => calls,
  };
}

/** Kept entries in memory, copied as storage copies them. */
function memoryPicture(): KeptPicture & { text: () => string | undefined } {
  let row: string | undefined;
  return {
    text: () => row,
    load: () => (row === undefined ? null : (JSON.parse(row) as KeptEntries)),
    save: (kept) => void (row = JSON.stringify(kept)),
    clear: () => void (row = undefined),
  };
}

/** A read that fails the test: the picture must answer without one. */
const noRead = async (): Promise<DeliverablesRead> => {
  throw new Error("read D1");
};

describe("NamespaceDeliverables", () => {
  it("keeps what a complete picture holds across the object's hibernation: a woken object takes the namespace's only news without a read", async () => {
    const kept = memoryPicture();
    const p = new NamespaceDeliverables(kept);
    p.apply(put(work("early", 1))); // nothing held, nothing kept
    expect(kept.text()).toBeUndefined();
    expect(names(await p.current(0, at(3)))).toEqual([]);
    expect(kept.load()).toEqual({ asOf: 3, entries: [] });
    // Evicted, then woken by a new work: the namespace held nothing else, so no read.
    const q = new NamespaceDeliverables(kept);
    expect(q.takesChange({ key: "a", resourceVersion: 4, removed: false })).toBe(true);
    q.apply(put(work("a", 4)));
    expect(await q.current(0, noRead)).toMatchObject({ read: false });
    expect(kept.load()).toEqual({ asOf: 3, entries: [["a", 4]] });
    // Evicted, woken by the update of its only work: no read.
    const r = new NamespaceDeliverables(kept);
    r.apply(put(work("a", 6)));
    expect(names(await r.current(0, noRead))).toEqual(["a@6"]);
    // A change older than what was kept of its work does not prove the work: forgotten, read.
    const s2 = new NamespaceDeliverables(kept);
    expect(s2.takesChange({ key: "a", resourceVersion: 5, removed: false })).toBe(false);
    expect(kept.text()).toBeUndefined();
    expect(names(await s2.current(0, at(7, work("a", 6), work("b", 7))))).toEqual(["a@6", "b@7"]);
    // Another work is there: a change of one of them is not the only news.
    const t = new NamespaceDeliverables(kept);
    t.apply(put(work("c", 8)));
    expect(t.isComplete).toBe(false);
    expect(kept.text()).toBeUndefined();
    expect(names(await t.current(0, at(8, work("a", 6), work("b", 7), work("c", 8))))).toEqual(["a@6", "b@7", "c@8"]);
    t.apply(removed("b", 7));
    t.apply(removed("c", 8));
    // Its only work's removal, at the removed version: taken without a read.
    const u = new NamespaceDeliverables(kept);
    u.apply(removed("a", 6));
    expect(names(await u.current(0, noRead))).toEqual([]);
    // Nothing live kept: a push or poll answers without a read; an older change stays removed.
    const v = new NamespaceDeliverables(kept);
    expect(names(await v.current(0, noRead))).toEqual([]);
    const w = new NamespaceDeliverables(kept);
    w.apply(put(work("b", 5)));
    expect(names(await w.current(0, noRead))).toEqual([]);
    // A change without its object forgets what was kept.
    w.invalidate();
    expect(kept.text()).toBeUndefined();
    expect(new NamespaceDeliverables(kept).takesChange({ key: "x", resourceVersion: 99, removed: false })).toBe(false);
    // Grown past its bound: forgotten, kept entries too.
    const x = new NamespaceDeliverables(kept);
    await x.current(0, at(9));
    x.apply(put(work("d", 10, "y".repeat(NAMESPACE_WORKS_MAX_BYTES))));
    expect(kept.text()).toBeUndefined();
  });

  it("keeps nothing while a fill is under way, nor after one invalidated during it", async () => {
    const kept = memoryPicture();
    const p = new NamespaceDeliverables(kept);
    const d = deferredRead();
    const answer = p.current(0, d.read);
    p.apply(put(work("a", 4)));
    expect(kept.text()).toBeUndefined();
    p.invalidate();
    d.resolve([work("a", 3)], 3);
    await answer;
    expect(kept.text()).toBeUndefined();
    expect(new NamespaceDeliverables(kept).takesChange({ key: "b", resourceVersion: 9, removed: false })).toBe(false);
  });

  it("a life that cannot take up the kept entries forgets them before its fill reads, so a change during the fill is never missing from what is kept", async () => {
    const kept = memoryPicture();
    const p = new NamespaceDeliverables(kept);
    expect(names(await p.current(0, at(3, work("a", 2))))).toEqual(["a@2"]);
    expect(kept.load()).toEqual({ asOf: 3, entries: [["a", 2]] });
    // A new life's push or poll: a live work is kept, whose object is not, so it reads.
    const q = new NamespaceDeliverables(kept);
    const d = deferredRead();
    const answer = q.current(0, d.read);
    expect(kept.text()).toBeUndefined();
    // A change during the read, then the life ends before its fill (nothing kept to mislead the next one).
    q.apply(put(work("b", 4)));
    expect(kept.text()).toBeUndefined();
    expect(new NamespaceDeliverables(kept).takesChange({ key: "a", resourceVersion: 5, removed: false })).toBe(false);
    // The fill keeps what it and the change hold, unless no later life could take it up.
    d.resolve([work("a", 2)], 3);
    expect(names(await answer)).toEqual(["a@2", "b@4"]);
    expect(kept.text()).toBeUndefined(); // two live works: no one change could be their only news
    q.apply(removed("a", 2));
    expect(kept.load()).toEqual({
      asOf: 3,
      entries: expect.arrayContaining([
        ["a", 2, 1],
        ["b", 4],
      ]),
    });
  });

  it("reads once, then answers from the changes it is handed, sorted by name", async () => {
    const p = new NamespaceDeliverables();
    p.apply(put(work("early", 1)));
    let reads = 0;
    const read = async () => (reads++, { items: [work("b", 2), work("a", 3)], resourceVersion: 3 });
    expect(names(await p.current(0, read))).toEqual(["a@3", "b@2"]);
    expect(p.isComplete).toBe(true);
    p.apply(put(work("c", 4)));
    p.apply(put(work("a", 5)));
    p.apply(removed("b", 2));
    expect(await p.current(0, read)).toMatchObject({ read: false });
    expect(names(await p.current(0, read))).toEqual(["a@5", "c@4"]);
    expect(reads).toBe(1);
  });

  it("keeps the newest version of each work whatever the order changes arrive in, a removal included", async () => {
    const p = new NamespaceDeliverables();
    await p.current(0, at(3, work("a", 3)));
    p.apply(put(work("a", 7)));
    p.apply(put(work("a", 5)));
    expect(names(await p.current(0, at(0)))).toEqual(["a@7"]);
    p.apply(removed("a", 7));
    p.apply(put(work("a", 6)));
    p.apply(put(work("a", 7)));
    expect(names(await p.current(0, at(0)))).toEqual([]);
    p.apply(put(work("a", 9)));
    expect(names(await p.current(0, at(0)))).toEqual(["a@9"]);
  });

  it("drops a change the fill's snapshot already reflects, arriving before, during or after it", async () => {
    // w0 was updated (rv 5) and then removed (rv 6) before the read at 6: whenever the update's
    // change arrives, and even when the removal's came before the fill started, w0 stays gone.
    const p = new NamespaceDeliverables();
    p.apply(removed("w0", 5));
    const d = deferredRead();
    const answer = p.current(0, d.read);
    p.apply(put(work("w1", 4)));
    d.resolve([work("w1", 4), work("w2", 6)], 6);
    expect(names(await answer)).toEqual(["w1@4", "w2@6"]);
    p.apply(put(work("w0", 5)));
    p.apply(put(work("w2", 2)));
    expect(names(await p.current(0, at(0)))).toEqual(["w1@4", "w2@6"]);
    // An update during a fill that the snapshot shows removed is dropped too.
    const q = new NamespaceDeliverables();
    const e = deferredRead();
    const second = q.current(0, e.read);
    q.apply(put(work("w0", 5)));
    e.resolve([], 6);
    expect(names(await second)).toEqual([]);
  });

  it("takes changes made during a fill, and the fill keeps none of what they replaced", async () => {
    const p = new NamespaceDeliverables();
    const d = deferredRead();
    const first = p.current(0, d.read);
    const second = p.current(0, d.read);
    p.apply(put(work("a", 8)));
    p.apply(removed("b", 4));
    p.apply(put(work("new", 9)));
    d.resolve([work("a", 3), work("b", 4), work("c", 5)], 5);
    expect(names(await first)).toEqual(["a@8", "c@5", "new@9"]);
    expect(names(await second)).toEqual(["a@8", "c@5", "new@9"]);
    expect(d.calls()).toBe(1);
  });

  it("forgets everything on a change without its object, and a fill under way then keeps nothing", async () => {
    const p = new NamespaceDeliverables();
    await p.current(0, at(1, work("a", 1)));
    p.invalidate();
    expect(p.isComplete).toBe(false);
    const d = deferredRead();
    const answer = p.current(0, d.read);
    p.invalidate();
    d.resolve([work("a", 1)], 1);
    expect(names(await answer)).toEqual(["a@1"]);
    expect(p.isComplete).toBe(false);
    p.apply(put(work("a", 2)));
    expect(names(await p.current(0, at(3, work("a", 2), work("b", 3))))).toEqual(["a@2", "b@3"]);
    expect(p.isComplete).toBe(true);
  });

  it("keeps nothing of a failed read, and reads again at the next call", async () => {
    const p = new NamespaceDeliverables();
    await expect(p.current(0, async () => Promise.reject(new Error("D1 down")))).rejects.toThrow("D1 down");
    expect(p.isComplete).toBe(false);
    expect(names(await p.current(0, at(1, work("a", 1))))).toEqual(["a@1"]);
  });

  it("holds no namespace over its byte bound: answers null for a minute, then tries again", async () => {
    const p = new NamespaceDeliverables();
    const big = [work("a", 1, "x".repeat(NAMESPACE_WORKS_MAX_BYTES))];
    expect(await p.current(0, at(1, ...big))).toBeNull();
    expect(p.isComplete).toBe(false);
    let reads = 0;
    expect(await p.current(59_000, async () => (reads++, { items: [], resourceVersion: 1 }))).toBeNull();
    expect(reads).toBe(0);
    expect(names(await p.current(61_000, at(2, work("a", 2))))).toEqual(["a@2"]);
    // A change that grows the namespace past the bound forgets it.
    p.apply(put(work("b", 3, "y".repeat(NAMESPACE_WORKS_MAX_BYTES))));
    expect(p.isComplete).toBe(false);
  });

  it("equals the namespace's last state after any interleaving of changes with a fill (randomised)", async () => {
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let round = 0; round < 1000; round++) {
      // The store: a history of commits with rising resourceVersions.
      const stored = new Map<string, KubeObject>();
      const deltas: DeliverableDelta[] = [];
      let rv = 0;
      const commit = () => {
        const name = `w${rand(6)}`;
        rv++;
        if (stored.has(name) && rand(3) === 0) {
          const before = stored.get(name)!;
          stored.delete(name);
          deltas.push(removed(name, Number(before.metadata.resourceVersion)));
        } else {
          const w = work(name, rv);
          stored.set(name, w);
          deltas.push(put(w));
        }
      };
      for (let i = rand(10); i > 0; i--) commit();
      const kept = memoryPicture();
      let p = new NamespaceDeliverables(kept);
      // The object may be evicted (a new life over what it kept) whenever no read is under way.
      const maybeEvict = () => {
        if (rand(3) === 0) p = new NamespaceDeliverables(kept);
      };
      // Hooks of the commits so far may arrive before, during or after the fill, in any order.
      const snapshot = [...stored.values()];
      const snapshotRv = rv;
      const early = deltas.splice(0, deltas.length).sort(() => rand(3) - 1);
      const d = deferredRead();
      const cut = rand(early.length + 1);
      for (const delta of early.slice(0, cut)) {
        p.apply(delta);
        maybeEvict();
      }
      const answer = p.current(0, d.read);
      for (let i = rand(5); i > 0; i--) commit();
      const late = [...early.slice(cut), ...deltas.splice(0, deltas.length)].sort(() => rand(3) - 1);
      const during = rand(late.length + 1);
      for (const delta of late.slice(0, during)) p.apply(delta);
      d.resolve(snapshot, snapshotRv);
      await answer;
      maybeEvict();
      for (const delta of late.slice(during)) {
        p.apply(delta);
        maybeEvict();
      }
      const expected = [...stored.values()].map((w) => `${w.metadata.name}@${w.metadata.resourceVersion}`).sort();
      // A picture that forgot (an eviction whose change did not prove it) reads the store as it is now.
      const now = at(rv, ...stored.values());
      expect(names(await p.current(0, now)), `round ${round}`).toEqual(expected);
      // And a later life, woken by a push or a new work's change, too.
      expect(names(await new NamespaceDeliverables(kept).current(0, now)), `round ${round}, kept`).toEqual(expected);
      const woken = new NamespaceDeliverables(kept);
      const next = work("w9", rv + 1);
      woken.apply(put(next));
      expect(names(await woken.current(0, at(rv + 1, ...stored.values(), next))), `round ${round}, woken`).toEqual([...expected, `w9@${rv + 1}`].sort());
    }
  });
});
