/**
 * Group commit, as databases do it for their log: writes that arrive while a commit is in flight
 * wait for it to return and then go together, in one atomic D1 batch, so that many concurrent
 * writes (a fleet's agents reporting status during a rollout) cost about one D1 round trip per
 * round trip of the one before, instead of one each. A write that finds no commit in flight goes
 * at once, alone: grouping never delays a write to an idle store.
 *
 * The first write to wait leads its group: once the commit in flight has returned, it sends the
 * group from its own request, and the others of the group wait for that batch. Each write keeps
 * its own precondition in the batch (src/store/d1/objects.ts `commitObjects`), so one that lost its race
 * changes nothing and the others still commit. A leader waits for the commit before it until
 * {@link GROUP_WAIT_LIMIT_MS} after that commit was sent, and a group takes writes for that long
 * at most: a commit or a group older than that may be a cancelled request's, and is not waited
 * for. Should a group's batch fail as a whole, or a waiting write not hear of its group within
 * twice the limit (its leader's request was cancelled), that write commits again alone: committed
 * already, it is refused by its precondition rather than done twice.
 *
 * Leaders and waiters wait on another request's promise, but never on it alone: each also waits
 * on a timer of its own request, so workerd never cancels it as hung (a request with nothing of
 * its own pending), and a leader's request that was cancelled costs its group's writes a wait,
 * not an answer. workerd runs a waiter's continuation in the waiter's own request when the
 * leader settles the group; a waiter that gave up and answered meanwhile is dropped with a
 * warning, and its write, committed or not, was settled on its own.
 */

import { clock } from "../clock.ts";

/** Longest a grouped write waits for a commit before it, or for its group's, in milliseconds. */
export const GROUP_WAIT_LIMIT_MS = 10_000;

type Settled<O> = { outs: O[] } | { failed: true };

interface Group<I, O> {
  items: I[];
  /** The items' sizes in all ({@link GroupBudget}). */
  bytes: number;
  /** When the group was started (epoch ms): it takes writes for {@link GROUP_WAIT_LIMIT_MS} at most. */
  since: number;
  done: Promise<Settled<O>>;
  settle(s: Settled<O>): void;
}

/** Whether `p` settled within `ms` milliseconds (its outcome does not matter). */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/** The isolate's groups made by {@link groupsOfDatabase}, by D1 database and name. */
const perDatabase = new WeakMap<object, Map<string, CommitGroups<unknown, unknown>>>();

/**
 * The isolate's {@link CommitGroups} named `name` for the D1 database `d1` (its binding, a
 * `D1Database`; typed `object` so that this module needs no Workers types), made by `make` on
 * first use: the store's commits (src/store/d1/objects.ts) and each feature that groups its own
 * writes per database ({@link commitGroupsOf}) get theirs here. A test's other binding gets groups
 * of its own.
 */
export function groupsOfDatabase<I, O>(d1: object, name: string, make: () => CommitGroups<I, O>): CommitGroups<I, O> {
  let byName = perDatabase.get(d1);
  if (!byName) perDatabase.set(d1, (byName = new Map()));
  let groups = byName.get(name) as CommitGroups<I, O> | undefined;
  if (!groups) {
    groups = make();
    byName.set(name, groups as CommitGroups<unknown, unknown>);
  }
  return groups;
}

/**
 * {@link groupsOfDatabase} for a feature above the store that groups its own writes per D1
 * database, as the store's commits are grouped (the Events recorder, src/events/record.ts),
 * without holding the binding itself: the groups named `name` for the database of `env` (the
 * Worker's `Env`, whose `DB` is the binding).
 */
export function commitGroupsOf<I, O>(env: { readonly DB: object }, name: string, make: () => CommitGroups<I, O>): CommitGroups<I, O> {
  return groupsOfDatabase(env.DB, name, make);
}

/**
 * A budget of bytes per group, besides its count of items: `sizeOf(item)` is an item's size and
 * `maxBytes()` the most a group's items may add up to (an item alone may exceed it: it goes alone).
 */
export interface GroupBudget<I> {
  sizeOf(item: I): number;
  maxBytes(): number;
}

/**
 * Groups the items of concurrent callers of {@link run} into calls of `commit` (see the module
 * comment): `commit(items)` must answer one output per item, in order, or throw when nothing of
 * the call took effect. At most `maxItems` items go in one call, and with a `budget` at most its
 * bytes (a group that an item would take past them takes no more); a caller that finds the waiting
 * group full starts the next one, which waits for that group's commit (one commit in flight at a
 * time, but for writes that go alone after a failure or a wait past the limit).
 */
export class CommitGroups<I, O> {
  /**
   * The last commit sent or scheduled (a group's), and when (epoch ms), until it settles: the next
   * group waits for it, until the wait limit from `since` at most.
   */
  private tail: { p: Promise<unknown>; since: number } | null = null;
  /** The group still taking writes, if any. */
  private waiting: Group<I, O> | null = null;
  /** Calls of `commit` made so far, and items they carried (for tests and benchmarks). */
  readonly counts = { calls: 0, items: 0 };

  constructor(
    private readonly commit: (items: I[]) => Promise<O[]>,
    private readonly maxItems: number,
    private readonly waitLimitMs = GROUP_WAIT_LIMIT_MS,
    private readonly budget?: GroupBudget<I>,
  ) {}

  /**
   * Commits `item`, alone or in a group, and answers its output.
   * @throws what `commit` throws for the item committed alone
   */
  async run(item: I): Promise<O> {
    const now = clock.now();
    // A group still taking writes after the limit lost its leader (its request was cancelled
    // while it waited): it takes no more.
    if (this.waiting && now - this.waiting.since >= this.waitLimitMs) this.waiting = null;
    const joined = this.waiting;
    const size = this.budget ? this.budget.sizeOf(item) : 0;
    if (joined && joined.items.length < this.maxItems && (!this.budget || joined.bytes + size <= this.budget.maxBytes())) {
      const index = joined.items.push(item) - 1;
      joined.bytes += size;
      let settled: Settled<O> | undefined;
      void joined.done.then((s) => (settled = s));
      // Its leader may wait out the limit for the commit before, then its group's commit.
      if (!(await settledWithin(joined.done, 2 * this.waitLimitMs)) || !settled || "failed" in settled) return this.alone(item);
      return settled.outs[index]!;
    }
    const before = this.tail;
    // A commit in flight for longer than the limit is not waited for (its request may be gone).
    if (!before || now - before.since >= this.waitLimitMs) return this.alone(item);
    let settle!: (s: Settled<O>) => void;
    const group: Group<I, O> = { items: [item], bytes: size, since: now, done: new Promise((resolve) => (settle = resolve)), settle };
    this.waiting = group;
    const tail = this.track(group.done, now);
    await settledWithin(before.p, before.since + this.waitLimitMs - now);
    if (this.waiting === group) this.waiting = null;
    // The next group waits for this one's commit from when it is sent.
    tail.since = clock.now();
    try {
      const outs = await this.send(group.items);
      group.settle({ outs });
      return outs[0]!;
    } catch (e) {
      group.settle({ failed: true });
      if (group.items.length === 1) throw e;
      return this.alone(item);
    }
  }

  private async alone(item: I): Promise<O> {
    const call = this.send([item]);
    if (!this.waiting) this.track(call, clock.now());
    return (await call)[0]!;
  }

  private send(items: I[]): Promise<O[]> {
    this.counts.calls++;
    this.counts.items += items.length;
    return this.commit(items);
  }

  /** Makes `p`, sent or scheduled at `since` (epoch ms), the commit the next group waits for, until it settles; returns its record. */
  private track(p: Promise<unknown>, since: number): { p: Promise<unknown>; since: number } {
    const tail = { p, since };
    this.tail = tail;
    const clear = () => {
      if (this.tail === tail) this.tail = null;
    };
    p.then(clear, clear);
    return tail;
  }
}

/**
 * Group sends whose callers do not wait for them: as {@link CommitGroups}, items that arrive while
 * a send is in flight go together in the next one, but only the item that starts a group (its
 * leader) waits, for the send before (until {@link GROUP_WAIT_LIMIT_MS} after it started) and then
 * for its group's; the others return at once. For work whose durable record is elsewhere (an
 * outbox row the send deletes once done): a lost group (its leader's request cancelled, or its
 * send failed) leaves the records, and whoever keeps them (the outbox sweep) does the work again.
 * No waiter holds a timer of its own (a joined item waits on nothing), which is what a
 * {@link CommitGroups} waiter costs per item.
 */
export class SendGroups<I> {
  /** The last send started, and when (epoch ms), until it settles: the next group's leader waits for it. */
  private tail: { p: Promise<unknown>; since: number } | null = null;
  /** The group still taking items, and when it was started (epoch ms). */
  private waiting: { items: I[]; since: number } | null = null;
  /** Sends made so far, and items they carried (for tests and benchmarks). */
  readonly counts = { calls: 0, items: 0 };

  constructor(
    private readonly send: (items: I[]) => Promise<void>,
    private readonly maxItems: number,
    private readonly waitLimitMs = GROUP_WAIT_LIMIT_MS,
  ) {}

  /**
   * Adds `item` to the group taking items and answers null (another caller sends it), or starts a
   * group and answers the promise of its send, which the caller must await (it resolves once the
   * group was sent, and rejects with what the send threw).
   */
  add(item: I): Promise<void> | null {
    const now = clock.now();
    const joined = this.waiting;
    if (joined && now - joined.since < this.waitLimitMs && joined.items.length < this.maxItems) {
      joined.items.push(item);
      return null;
    }
    const group = { items: [item], since: now };
    const before = this.tail;
    if (!before || now - before.since >= this.waitLimitMs) return this.start(group.items);
    this.waiting = group;
    return this.lead(group, before, now);
  }

  private async lead(group: { items: I[] }, before: { p: Promise<unknown>; since: number }, now: number): Promise<void> {
    const started = this.track();
    await settledWithin(before.p, before.since + this.waitLimitMs - now);
    if (this.waiting === group) this.waiting = null;
    started.since = clock.now();
    await this.sendNow(group.items, started);
  }

  private start(items: I[]): Promise<void> {
    return this.sendNow(items, this.track());
  }

  /** Sends `items`, resolving the record `tail` (made by {@link track}) once settled. */
  private async sendNow(items: I[], tail: { p: Promise<unknown>; since: number; settle?: () => void }): Promise<void> {
    this.counts.calls++;
    this.counts.items += items.length;
    try {
      await this.send(items);
    } finally {
      tail.settle?.();
    }
  }

  /** A record of the send about to start (or be waited for), the one the next group's leader waits for until it settles. */
  private track(): { p: Promise<unknown>; since: number; settle?: () => void } {
    let settle!: () => void;
    const p = new Promise<void>((resolve) => (settle = resolve));
    const tail = { p, since: clock.now(), settle };
    this.tail = tail;
    void p.then(() => {
      if (this.tail === tail) this.tail = null;
    });
    return tail;
  }
}
