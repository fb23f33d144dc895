import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { countedLeaseSeconds, leaseRule, pingCheckDelayMs } from "../../durable-objects/cluster/lease.ts";
import { Timers } from "../../durable-objects/timers.ts";
import { ClusterObject } from "../../durable-objects/cluster.ts";
import type { Env } from "../../src/env.ts";
import { call, condition, createToken, MC, register, withClockAhead } from "./helpers.ts";

describe("the lease rule (OCM's hub lease controller)", () => {
  // [last renewal ms, lease seconds, grace multiplier, now ms] -> [expired, expires at ms]
  const cases: [string, [number, number, number, number], [boolean, number]][] = [
    ["just renewed", [1_000, 60, 5, 1_000], [false, 301_000]],
    ["a millisecond before 5 x 60 s", [1_000, 60, 5, 300_999], [false, 301_000]],
    ["exactly at 5 x 60 s", [1_000, 60, 5, 301_000], [true, 301_000]],
    ["long after", [1_000, 60, 5, 10_000_000], [true, 301_000]],
    ["a 1 s lease, 4 s later", [0, 1, 5, 4_000], [false, 5_000]],
    ["a 1 s lease, 6 s later", [0, 1, 5, 6_000], [true, 5_000]],
    ["another multiplier", [0, 10, 2, 19_999], [false, 20_000]],
    ["a clock behind the renewal", [50_000, 1, 5, 40_000], [false, 55_000]],
  ];
  for (const [name, [renew, seconds, multiplier, now], [expired, expiresAtMs]] of cases) {
    it(name, () => {
      expect(leaseRule(renew, seconds, multiplier, now)).toEqual({ expired, expiresAtMs });
    });
  }

  it("counts the longer of the spec's interval (0: OCM's default 60 s) and the one the agent was last told", () => {
    expect(countedLeaseSeconds(1, 60)).toBe(60);
    expect(countedLeaseSeconds(30, 1)).toBe(30);
    expect(countedLeaseSeconds(0)).toBe(60);
    expect(countedLeaseSeconds(undefined, 5)).toBe(60);
  });

  it("checks a lease the pings renew half a ping interval after its expiry, never more than 1.2 x grace after the last pong", () => {
    expect(pingCheckDelayMs(60, 5)).toBe(30_000);
    expect(pingCheckDelayMs(2, 5)).toBe(1_000);
    expect(pingCheckDelayMs(1, 2)).toBe(200);
    for (const [seconds, multiplier] of [
      [60, 5],
      [2, 5],
      [1, 2],
      [10, 1],
      [60, 100],
    ] as const) {
      const grace = seconds * multiplier * 1000;
      expect(grace + pingCheckDelayMs(seconds, multiplier)).toBeLessThanOrEqual(1.1 * grace);
    }
  });
});

describe("the timers table (one alarm owner)", () => {
  it("arms the earliest timer; moves, cancels and re-arms; keeps its rows across instances", async () => {
    // An object with no cluster: its own alarm does nothing when it fires.
    const stub = env.CLUSTERS.getByName("timers-unit");
    await runInDurableObject(stub, async (_o, state) => {
      const base = Date.now() + 3_600_000;
      let now = base;
      const written: number[] = [];
      const timers = new Timers(
        state.storage,
        () => now,
        (rows) => written.push(rows),
      );
      timers.create();
      timers.set("a", base + 5_000);
      timers.set("b", base + 3_000);
      await timers.nextAlarm();
      expect(await state.storage.getAlarm()).toBe(base + 3_000);
      // A later time changes nothing, an earlier one wins.
      const before = written.length;
      timers.setEarlier("a", base + 6_000);
      expect(written.length).toBe(before);
      expect(timers.get("a")).toBe(base + 5_000);
      timers.setEarlier("a", base + 2_000);
      await timers.nextAlarm();
      expect(await state.storage.getAlarm()).toBe(base + 2_000);
      // Cancelling the earliest re-arms at the next one, later.
      timers.cancel("a");
      await timers.nextAlarm();
      expect(await state.storage.getAlarm()).toBe(base + 3_000);
      // `also` (a due time kept outside the table) counts when earlier.
      await timers.nextAlarm(base + 1_000);
      expect(await state.storage.getAlarm()).toBe(base + 1_000);
      await timers.nextAlarm();
      expect(await state.storage.getAlarm()).toBe(base + 3_000);
      // Nothing armed again when nothing changed: no storage write.
      const settled = written.length;
      await timers.nextAlarm();
      expect(written.length).toBe(settled);
      // Due ones, earliest first.
      timers.set("c", base + 4_000);
      now = base + 10_000;
      expect(timers.due(base + 3_500)).toEqual(["b"]);
      expect(timers.due(now)).toEqual(["b", "c"]);
      // A due time in the past arms the alarm just after now.
      timers.set("d", base + 1);
      await timers.nextAlarm();
      expect(await state.storage.getAlarm()).toBe(base + 10_001);
      // Another instance over the same storage reads the same rows.
      const again = new Timers(state.storage, () => now);
      expect(again.earliest()).toBe(base + 1);
      expect(again.due(now)).toEqual(["d", "b", "c"]);
      // "earlier" never moves the alarm later nor removes it; it brings it forward.
      timers.cancel("d");
      await timers.nextAlarm(null, "earlier");
      expect(await state.storage.getAlarm()).toBe(base + 10_001);
      timers.set("e", base + 20_000);
      now = base;
      await timers.nextAlarm(base + 500, "earlier");
      expect(await state.storage.getAlarm()).toBe(base + 500);
      timers.cancel("e");
      // No timers: no alarm.
      for (const purpose of ["b", "c"]) timers.cancel(purpose);
      await timers.nextAlarm();
      expect(await state.storage.getAlarm()).toBeNull();
    });
  });
});

describe("a cluster object created before its timers table", () => {
  it("still expires its lease (its due time follows from the stored renewal), and keeps no timer row for it", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys } = await register(token, "pre-timers", "id-pre-timers");
    expect((await call("PATCH", `${MC}/pre-timers`, { spec: { leaseDurationSeconds: 1 } }, { contentType: "application/merge-patch+json" })).status).toBe(200);
    const hb = await call("POST", "/agent/v1/clusters/pre-timers/heartbeat", { healthy: true }, { token: await keys.sign("pre-timers") });
    expect(hb.status).toBe(200);
    const stub = env.CLUSTERS.getByName("pre-timers");
    // What the last main stored: its state and an alarm, no timers table.
    await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec("DROP TABLE timers");
    });
    await evictDurableObject(stub);
    expect(await withClockAhead(6_000, () => runDurableObjectAlarm(stub))).toBe(true);
    const obj = (await call("GET", `${MC}/pre-timers`)).body;
    expect(condition(obj, "ManagedClusterConditionAvailable")).toMatchObject({ status: "Unknown", reason: "ManagedClusterLeaseUpdateStopped" });
    const rows = await runInDurableObject(stub, (_o, state) => state.storage.sql.exec<{ purpose: string }>("SELECT purpose FROM timers").toArray());
    expect(rows).toEqual([]);
    // Once marked, a stopped lease sets no alarm again until the next renewal.
    expect(await runInDurableObject(stub, (_o, state) => state.storage.getAlarm())).toBeNull();
  });

  it("seeds its leave timer from a leave in progress, so the leave still times out", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys } = await register(token, "pre-leave", "id-pre-leave");
    expect((await call("POST", "/agent/v1/clusters/pre-leave/heartbeat", { healthy: true }, { token: await keys.sign("pre-leave") })).status).toBe(200);
    expect((await call("DELETE", `${MC}/pre-leave`)).status).toBe(200);
    const stub = env.CLUSTERS.getByName("pre-leave");
    await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec("DROP TABLE timers");
    });
    await evictDurableObject(stub);
    expect(await withClockAhead(900_000 + 1_000, () => runDurableObjectAlarm(stub))).toBe(true);
    expect((await call("GET", `${MC}/pre-leave`)).status).toBe(404);
  });
});

describe("a cluster object's wake", () => {
  /** Runs `fn` with `state`'s SQL `exec` calls counted into `calls` (the object's storage is one SqlStorage). */
  const counting = <T>(state: DurableObjectState, calls: string[], fn: () => T): T => {
    const sql = state.storage.sql;
    const exec = sql.exec;
    sql.exec = ((query: string, ...b: unknown[]) => (calls.push(query), exec.call(sql, query, ...b))) as typeof sql.exec;
    try {
      return fn();
    } finally {
      sql.exec = exec;
    }
  };

  it("reads its schema, its ManagedCluster and a commit's marker in one statement, and makes what is missing or old", async () => {
    const token = await createToken({ autoApprove: true });
    await register(token, "wake-schema", "id-wake-schema");
    const stub = env.CLUSTERS.getByName("wake-schema");
    await runInDurableObject(stub, async (_o, state) => {
      const calls: string[] = [];
      const woken = counting(state, calls, () => new ClusterObject(state, env as unknown as Env));
      // One statement: the schema, the ManagedCluster's row and the check for a commit in flight;
      // nothing created, altered or read again (it ran the table check, the creates, the state
      // table's migration check and the timers' create; then the marker's read, then the
      // ManagedCluster's at its first use).
      expect(calls).toHaveLength(1);
      expect(calls[0]).toContain("sqlite_master");
      calls.length = 0;
      const got = await counting(state, calls, () => woken.get("wake-schema"));
      expect(got.ok && got.value.metadata.name).toBe("wake-schema");
      expect(calls).toEqual([]);
      // A table missing (an object older than it): made at the wake, the rest kept.
      state.storage.sql.exec("DROP TABLE seen_jti");
      calls.length = 0;
      counting(state, calls, () => new ClusterObject(state, env as unknown as Env));
      expect(calls.length).toBeGreaterThan(2);
      expect(state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'seen_jti'").toArray()).toHaveLength(1);
    });
    // The object still answers as before.
    expect((await call("GET", `${MC}/wake-schema`)).status).toBe(200);
  });

  it("reads the works ETag's row in the wake's statement: the first push or status answer of a woken object runs no statement for it", async () => {
    const token = await createToken({ autoApprove: true });
    await register(token, "wake-etag", "id-wake-etag");
    const stub = env.CLUSTERS.getByName("wake-etag");
    await runInDurableObject(stub, async (_o, state) => {
      const calls: string[] = [];
      const etagOf = (o: ClusterObject) => (o as unknown as { delivery: { etag(): string } }).delivery.etag();
      // A channel agent's cluster: no row, so a new ETag, made without a statement.
      const woken = counting(state, calls, () => new ClusterObject(state, env as unknown as Env));
      expect(calls).toHaveLength(1);
      const made = counting(state, calls, () => etagOf(woken));
      expect(made).toMatch(/^[0-9a-f-]{36}$/);
      expect(calls).toHaveLength(1);
      // A poll agent's: the row handed out, read at the wake, is the ETag.
      state.storage.sql.exec("INSERT INTO state (k, v) VALUES ('worksEtag', ?)", JSON.stringify("etag-1"));
      calls.length = 0;
      const again = counting(state, calls, () => new ClusterObject(state, env as unknown as Env));
      expect(counting(state, calls, () => etagOf(again))).toBe("etag-1");
      expect(calls).toHaveLength(1);
    });
  });
});
