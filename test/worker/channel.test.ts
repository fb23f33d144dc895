/**
 * The agent channel (docs/agent-protocol.md "Channel"), inside workerd: first the platform facts it
 * stands on (WebSocket Hibernation API: acceptWebSocket through the Worker, auto-response without
 * waking the object, its timestamp, wake on message after eviction, attachments kept), then the
 * channel itself: authentication, replacement, the lease renewed by pings, status, works pushed,
 * reports, leave and the close codes.
 */
import { evictDurableObject, listDurableObjectIds, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { ClusterObject } from "../../durable-objects/cluster.ts";
import { ATTACHMENT_WORKS_MAX_CHARS, AttachmentPicture, type ConnectionAttachment } from "../../durable-objects/cluster/connection.ts";
import { WorksDelivery } from "../../durable-objects/cluster/works.ts";
import type { KeptEntries } from "../../src/work/namespace-deliverables.ts";
import { CHANNEL_MAX_MESSAGE_BYTES, CHANNEL_PING, CHANNEL_PONG, CHANNEL_SUBPROTOCOL, CloseCodes } from "../../src/agent-api/channel-protocol.ts";
import { clock } from "../../src/clock.ts";
import { deliveredWorks } from "../../src/agent-api/delivered.ts";
import { MANIFEST_WORK_CLEANUP_FINALIZER } from "../../src/work/deletion.ts";
import {
  agentKeys,
  call,
  channelHeaders,
  condition,
  createToken,
  MC,
  register,
  snapshot,
  withClockAhead,
  type AgentKeys,
  joined,
  merge,
  WORKS,
} from "./helpers.ts";
import { waitFor } from "../wait.ts";

const work = (name: string) => ({
  apiVersion: "work.open-cluster-management.io/v1",
  kind: "ManifestWork",
  metadata: { name },
  spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { a: "1" } }] } },
});

/* eslint-disable @typescript-eslint/no-explicit-any */

/** One agent connection as a test sees it: every frame received, and how it closed. */
interface Conn {
  ws: WebSocket;
  frames: string[];
  messages: any[];
  closed: { code: number; reason: string } | null;
  send(m: unknown): void;
  /** Waits for (and returns) the first message received since `from` that matches. */
  next(match: (m: any) => boolean, from?: number): Promise<any>;
}

async function upgrade(name: string, headers: Record<string, string>, path = `/agent/v1/clusters/${name}/connect`): Promise<Response> {
  return exports.default.fetch(`https://hub.test${path}`, { headers });
}

/** Dials the channel as the agent does; fails the test unless the hub answers 101. */
async function connect(name: string, keys: AgentKeys): Promise<Conn> {
  const res = await upgrade(name, channelHeaders(await keys.sign(name)));
  expect(res.status, res.status === 101 ? "" : await res.text()).toBe(101);
  expect(res.headers.get("sec-websocket-protocol")).toBe(CHANNEL_SUBPROTOCOL);
  const ws = res.webSocket!;
  const conn: Conn = {
    ws,
    frames: [],
    messages: [],
    closed: null,
    send: (m) => ws.send(typeof m === "string" ? m : JSON.stringify(m)),
    async next(match, from = 0) {
      let found: any;
      await waitFor(
        "a channel message",
        async () => {
          found = conn.messages.slice(from).find(match);
          return found !== undefined || conn.closed !== null;
        },
        10_000,
        5,
      );
      if (found === undefined) throw new Error(`closed ${JSON.stringify(conn.closed)} before the message came; got ${JSON.stringify(conn.messages)}`);
      return found;
    },
  };
  ws.accept();
  ws.addEventListener("message", (e) => {
    const text = typeof e.data === "string" ? e.data : "";
    conn.frames.push(text);
    try {
      conn.messages.push(JSON.parse(text));
    } catch {
      conn.messages.push(text);
    }
  });
  ws.addEventListener("close", (e) => {
    conn.closed = { code: e.code, reason: e.reason };
  });
  open.push(conn);
  return conn;
}

const open: Conn[] = [];
afterEach(() => {
  for (const c of open.splice(0)) if (!c.closed) c.ws.close(1000, "test done");
});

async function closedWith(conn: Conn): Promise<number> {
  await waitFor("the connection to close", async () => conn.closed !== null, 10_000, 5);
  return conn.closed!.code;
}

/** How many ClusterObjects were constructed: counted on the constructor's one call of `connectionHost`. */
let constructions = 0;
const proto = ClusterObject.prototype as unknown as { connectionHost: (...a: unknown[]) => unknown };
const realHost = proto.connectionHost;
proto.connectionHost = function (this: unknown, ...a: unknown[]) {
  constructions++;
  return realHost.apply(this, a);
};

/** How many times each cluster's object read its namespace's works from D1 (`WorksDelivery.current` answered `read`). */
const worksReads = new Map<string, number>();
const worksProto = WorksDelivery.prototype as unknown as { current: (name: string) => Promise<{ read: boolean } | null> };
const realCurrent = worksProto.current;
worksProto.current = async function (this: unknown, name: string) {
  const answer = await realCurrent.call(this, name);
  if (answer?.read) worksReads.set(name, (worksReads.get(name) ?? 0) + 1);
  return answer;
};

/**
 * Counts the D1 statements of this isolate that read a row of `objects` named `name` (the D1
 * binding's statements, `first`, `all`, `raw` and `batch`), until `stop`.
 */
function countObjectReads(name: string): { readonly count: number; stop(): void } {
  const stmtProto = Object.getPrototypeOf(env.DB.prepare("SELECT 1")) as Record<string, (...a: unknown[]) => unknown>;
  const dbProto = Object.getPrototypeOf(env.DB) as Record<string, (...a: unknown[]) => unknown>;
  const reads = (s: unknown) => {
    const { statement, params } = s as { statement?: string; params?: unknown[] };
    return /^\s*select/i.test(statement ?? "") && /from "objects"/.test(statement ?? "") && (params ?? []).includes(name);
  };
  let count = 0;
  const saved: [Record<string, (...a: unknown[]) => unknown>, string, (...a: unknown[]) => unknown][] = [];
  for (const m of ["first", "all", "raw", "run"]) {
    const real = stmtProto[m]!;
    saved.push([stmtProto, m, real]);
    stmtProto[m] = function (this: unknown, ...a: unknown[]) {
      if (reads(this)) count++;
      return real.apply(this, a);
    };
  }
  const realBatch = dbProto.batch!;
  saved.push([dbProto, "batch", realBatch]);
  dbProto.batch = function (this: unknown, ...a: unknown[]) {
    count += (a[0] as unknown[]).filter(reads).length;
    return realBatch.apply(this, a);
  };
  return {
    get count() {
      return count;
    },
    stop: () => {
      for (const [proto, m, real] of saved) proto[m] = real;
    },
  };
}

async function ping(conn: Conn): Promise<void> {
  const from = conn.frames.length;
  conn.send(CHANNEL_PING);
  await waitFor("the pong", async () => conn.frames.slice(from).includes(CHANNEL_PONG), 10_000, 5);
}

async function agentSocketCount(name: string): Promise<number> {
  return runInDurableObject(env.CLUSTERS.getByName(name), (_o, state) => state.getWebSockets("agent").length);
}

describe("platform facts the channel stands on (workerd, @cloudflare/vitest-plugin 1.5.0)", () => {
  it("an upgrade through the Worker reaches the cluster object, which accepts it with acceptWebSocket", async () => {
    const keys = await joined("fact1", { heartbeat: false });
    const conn = await connect("fact1", keys);
    expect(await agentSocketCount("fact1")).toBe(1);
    conn.send({ type: "hello" });
    expect(await conn.next((m) => m.type === "welcome")).toMatchObject({ leaseDurationSeconds: 60, leaving: false });
  });

  it("a ping is answered by the auto-response without waking an evicted object, and its timestamp advances", async () => {
    const keys = await joined("fact2", { heartbeat: false });
    const conn = await connect("fact2", keys);
    const stub = env.CLUSTERS.getByName("fact2");
    const before = await runInDurableObject(stub, (_o, state) => state.getWebSockets("agent").map((ws) => state.getWebSocketAutoResponseTimestamp(ws)));
    expect(before).toEqual([null]);
    await evictDurableObject(stub);
    const built = constructions;
    await ping(conn);
    await ping(conn);
    // The pongs came back and no ClusterObject was constructed: the object stayed asleep.
    expect(constructions).toBe(built);
    const first = await runInDurableObject(stub, (_o, state) => state.getWebSocketAutoResponseTimestamp(state.getWebSockets("agent")[0]!)!.getTime());
    expect(constructions).toBe(built + 1); // runInDurableObject woke it
    expect(first).toBeGreaterThan(Date.now() - 10_000);
    await new Promise((r) => setTimeout(r, 5)); // the runtime clock advances between events
    await ping(conn);
    const second = await runInDurableObject(stub, (_o, state) => state.getWebSocketAutoResponseTimestamp(state.getWebSockets("agent")[0]!)!.getTime());
    expect(second).toBeGreaterThan(first);
    expect(conn.closed).toBeNull();
  });

  it("a message wakes an evicted object (its constructor runs again), the socket stays open, its attachment survives", async () => {
    const keys = await joined("fact3", { heartbeat: false });
    const conn = await connect("fact3", keys);
    const stub = env.CLUSTERS.getByName("fact3");
    await evictDurableObject(stub);
    const built = constructions;
    conn.send({ type: "hello" });
    await conn.next((m) => m.type === "welcome");
    expect(constructions).toBe(built + 1);
    expect(conn.closed).toBeNull();
    await evictDurableObject(stub);
    const attachment = await runInDurableObject(stub, (_o, state) => state.getWebSockets("agent")[0]!.deserializeAttachment());
    expect(attachment).toMatchObject({ cluster: "fact3", kid: keys.kid });
  });
});

describe("the agent channel", () => {
  it("refuses what is not an upgrade (426) or lacks the subprotocol (400); strangers get 401 and create nothing", async () => {
    const keys = await joined("ch1", { heartbeat: false });
    const token = await keys.sign("ch1");
    const plain = await upgrade("ch1", { authorization: `Bearer ${token}` });
    expect(plain.status).toBe(426);
    expect(plain.headers.get("upgrade")).toBe("websocket");
    expect((await plain.json<any>()).reason).toBe("UpgradeRequired");
    const wrong = await upgrade("ch1", channelHeaders(token, "flotilla.agent.v0"));
    expect(wrong.status).toBe(400);
    expect((await wrong.json<any>()).details.causes[0].field).toBe("Sec-WebSocket-Protocol");

    const before = await snapshot();
    const idsBefore = (await listDurableObjectIds(env.CLUSTERS)).length;
    const stranger = await agentKeys();
    for (const t of [null, "not-a-jwt", await stranger.sign("nobody-here"), await stranger.sign("ch1", { tag: null })]) {
      const r = await upgrade(t === null ? "ch1" : "nobody-here", channelHeaders(t));
      expect(r.status).toBe(401);
      expect((await r.json<any>()).message).toBe("invalid agent credential");
    }
    expect(await snapshot()).toBe(before);
    expect((await listDurableObjectIds(env.CLUSTERS)).length).toBe(idsBefore);
    // Another cluster's credential may not connect to this one.
    const other = await joined("ch1b", { heartbeat: false });
    const cross = await upgrade("ch1", channelHeaders(await other.sign("ch1b")));
    expect(cross.status).toBe(403);
  });

  it("a token without the key tag connects and is handed the tag; a replayed token is refused", async () => {
    const keys = await joined("ch2", { heartbeat: false });
    const token = await keys.sign("ch2", { tag: null });
    const res = await upgrade("ch2", channelHeaders(token));
    expect(res.status).toBe(101);
    expect(res.headers.get("flotilla-key-tag")).toBe(keys.tag);
    res.webSocket!.accept();
    res.webSocket!.close(1000);
    expect((await upgrade("ch2", channelHeaders(token))).status).toBe(401);
  });

  it("a pending or not accepted cluster may not connect (403)", async () => {
    const token = await createToken();
    const { keys } = await register(token, "ch3", "id-ch3");
    const r = await upgrade("ch3", channelHeaders(await keys.sign("ch3")));
    expect(r.status).toBe(403);
  });

  it("a second connection replaces the first (close 4000)", async () => {
    const keys = await joined("ch4", { heartbeat: false });
    const first = await connect("ch4", keys);
    const second = await connect("ch4", keys);
    expect(await closedWith(first)).toBe(CloseCodes.Replaced);
    expect(second.closed).toBeNull();
    await waitFor("one agent socket", async () => (await agentSocketCount("ch4")) === 1, 5_000, 10);
  });

  it("pings renew the lease without waking the object; without them the lease runs out (Unknown)", async () => {
    const keys = await joined("ch5", { heartbeat: false });
    await call("PATCH", `${MC}/ch5`, { spec: { leaseDurationSeconds: 1 } }, merge);
    const conn = await connect("ch5", keys);
    conn.send({ type: "status", id: "s1", status: { healthy: true } });
    await conn.next((m) => m.id === "s1");
    const stub = env.CLUSTERS.getByName("ch5");
    // The last renewal that wrote anything was 6 s ago (over 5 x 1 s); only pings since.
    await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec("UPDATE state SET v = ? WHERE k = 'lease'", JSON.stringify({ renewMs: Date.now() - 6000, toldSeconds: 1 }));
    });
    await evictDurableObject(stub);
    const built = constructions;
    await ping(conn);
    expect(constructions).toBe(built);
    // The lease check with only pings: one row written (the next alarm), no D1 query.
    const takeCost = () => runInDurableObject(stub, (o) => (o as unknown as { takeCost(): { rowsWritten: number; d1Queries: number } }).takeCost());
    await takeCost();
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await takeCost()).toMatchObject({ rowsWritten: 1, d1Queries: 0 });
    const next = await runInDurableObject(stub, (_o, state) => state.storage.getAlarm());
    // Set at the last pong plus the grace (5 x 1 s) plus half a ping interval (0.5 s): the
    // check lands after the next ping, within 1.1 x grace of the last pong.
    const pong = await runInDurableObject(stub, (_o, state) => state.getWebSocketAutoResponseTimestamp(state.getWebSockets("agent")[0]!)!.getTime());
    expect(next).toBe(pong + 5000 + 500); // not the HTTP renewal 6 s ago plus 5 s
    expect(condition((await call("GET", `${MC}/ch5`)).body, "ManagedClusterConditionAvailable").status).toBe("True");
    // A connection that stays open but is silent (a stopped agent): 6 s later by the hub's clock.
    const real = clock.now;
    try {
      clock.now = () => real() + 6000;
      await runDurableObjectAlarm(stub);
    } finally {
      clock.now = real;
    }
    const obj = (await call("GET", `${MC}/ch5`)).body;
    expect(condition(obj, "ManagedClusterConditionAvailable")).toMatchObject({ status: "Unknown", reason: "ManagedClusterLeaseUpdateStopped" });
    expect(conn.closed).toBeNull();
  });

  it("a status message commits as a heartbeat does and is acknowledged; a bad one gets the heartbeat's 422", async () => {
    const keys = await joined("ch6", { heartbeat: false });
    const conn = await connect("ch6", keys);
    conn.send({
      type: "status",
      id: "a",
      status: { healthy: true, version: { kubernetes: "v1.31.2" }, capacity: { cpu: "12" }, allocatable: { cpu: "11400m" } },
    });
    expect(await conn.next((m) => m.id === "a")).toEqual({ type: "ack", id: "a", leaseDurationSeconds: 60 });
    const obj = (await call("GET", `${MC}/ch6`)).body;
    expect(condition(obj, "ManagedClusterConditionAvailable")).toMatchObject({ status: "True" });
    expect(condition(obj, "ManagedClusterJoined")).toMatchObject({ status: "True" });
    expect(obj.status.version.kubernetes).toBe("v1.31.2");
    expect(obj.status.allocatable).toEqual({ cpu: "11400m" });

    conn.send({ type: "status", id: "b", status: { healthy: true, capacity: { cpu: "lots" } } });
    const bad = await conn.next((m) => m.id === "b");
    expect(bad.type).toBe("error");
    expect(bad.status).toMatchObject({ kind: "Status", code: 422 });
    expect(bad.status.details.causes[0].field).toBe("capacity[cpu]");
    conn.send({ type: "status", id: "c", status: { healthy: true, extra: 1 } });
    expect((await conn.next((m) => m.id === "c")).status.code).toBe(400);
    expect(conn.closed).toBeNull();
  });

  it("a status change writes 2 rows in the cluster object and no lease row while the pings renew; once they let the lease expire, it renews", async () => {
    const keys = await joined("ch6r", { heartbeat: false });
    await call("PATCH", `${MC}/ch6r`, { spec: { leaseDurationSeconds: 1 } }, merge);
    const conn = await connect("ch6r", keys);
    conn.send({ type: "status", id: "s0", status: { healthy: true } });
    await conn.next((m) => m.id === "s0");
    const stub = env.CLUSTERS.getByName("ch6r");
    const lease = () =>
      runInDurableObject(
        stub,
        (_o, state) => JSON.parse(state.storage.sql.exec<{ v: string }>("SELECT v FROM state WHERE k = 'lease'").one().v) as { renewMs: number },
      );
    const takeCost = () => runInDurableObject(stub, (o) => (o as unknown as { takeCost(): { rowsWritten: number; d1Queries: number } }).takeCost());
    await ping(conn);
    const renewed = (await lease()).renewMs;
    await takeCost();
    conn.send({ type: "status", id: "s1", status: { healthy: true, version: { kubernetes: "v1.31.9" } } });
    await conn.next((m) => m.id === "s1");
    // The commit marker in the object row, then the object (which clears it); no lease row.
    expect(await takeCost()).toEqual(expect.objectContaining({ rowsWritten: 2 }));
    expect((await lease()).renewMs).toBe(renewed);
    // The pings alone let the lease expire (6 s later by the hub's clock, over 5 x 1 s): a
    // status message then renews it (one row more), as an agent resumed after SIGSTOP needs.
    const real = clock.now;
    try {
      clock.now = () => real() + 6000;
      conn.send({ type: "status", id: "s2", status: { healthy: true, version: { kubernetes: "v1.31.10" } } });
      await conn.next((m) => m.id === "s2");
    } finally {
      clock.now = real;
    }
    expect((await takeCost()).rowsWritten).toBe(3);
    expect((await lease()).renewMs).toBeGreaterThan(renewed + 5000);
  });

  it("pushes works: on hello when the agent's ETag differs, and at once when the admin creates, changes or deletes one", async () => {
    const keys = await joined("ch7", { heartbeat: false });
    expect((await call("POST", WORKS("ch7"), work("w0"))).status).toBe(201);
    const conn = await connect("ch7", keys);
    conn.send({ type: "hello" });
    const welcome = await conn.next((m) => m.type === "welcome");
    const first = await conn.next((m) => m.type === "works");
    expect(first.etag).toBe(welcome.worksEtag);
    expect(first.works.map((w: any) => w.metadata.name)).toEqual(["w0"]);
    expect(first.works[0].status).toBeUndefined();

    const from = conn.messages.length;
    expect((await call("POST", WORKS("ch7"), work("w1"))).status).toBe(201);
    const pushed = await conn.next((m) => m.type === "works", from);
    expect(pushed.works.map((w: any) => w.metadata.name)).toEqual(["w0", "w1"]);
    expect(pushed.etag).not.toBe(first.etag);

    const from2 = conn.messages.length;
    expect((await call("DELETE", `${WORKS("ch7")}/w0`)).status).toBe(200);
    const afterDelete = await conn.next((m) => m.type === "works", from2);
    expect(afterDelete.works.map((w: any) => w.metadata.name)).toEqual(["w1"]);

    // Reconnecting with the ETag it holds, the agent gets no works again.
    const again = await connect("ch7", keys);
    again.send({ type: "hello", worksEtag: afterDelete.etag });
    expect((await again.next((m) => m.type === "welcome")).worksEtag).toBe(afterDelete.etag);
    again.send({ type: "status", id: "x", status: { healthy: true } });
    await again.next((m) => m.id === "x");
    expect(again.messages.filter((m) => m.type === "works")).toEqual([]);
  });

  it("a works change writes nothing to the object; after its eviction, hello with the held ETag gets the works again, those made meanwhile included", async () => {
    const keys = await joined("ch7e", { heartbeat: false });
    expect((await call("POST", WORKS("ch7e"), work("w0"))).status).toBe(201);
    const stub = env.CLUSTERS.getByName("ch7e");
    const etagRow = () =>
      runInDurableObject(stub, (_o, state) => state.storage.sql.exec<{ v: string }>("SELECT v FROM state WHERE k = 'worksEtag'").toArray()[0]?.v ?? null);
    const conn = await connect("ch7e", keys);
    conn.send({ type: "hello" });
    await conn.next((m) => m.type === "works");
    const from = conn.messages.length;
    expect((await call("POST", WORKS("ch7e"), work("w1"))).status).toBe(201);
    const pushed = await conn.next((m) => m.type === "works", from);
    expect(pushed.works.map((w: any) => w.metadata.name)).toEqual(["w0", "w1"]);
    // The channel's ETag lives in memory only (durable-objects/cluster/works.ts).
    expect(await etagRow()).toBeNull();

    // Evicted with no change since: the object makes another ETag, and the agent gets its works again.
    await evictDurableObject(stub);
    const back = await connect("ch7e", keys);
    back.send({ type: "hello", worksEtag: pushed.etag });
    const welcome = await back.next((m) => m.type === "welcome");
    expect(welcome.worksEtag).not.toBe(pushed.etag);
    const resent = await back.next((m) => m.type === "works");
    expect(resent.etag).toBe(welcome.worksEtag);
    expect(resent.works.map((w: any) => w.metadata.name)).toEqual(["w0", "w1"]);

    // A change while the agent is away and the object is evicted after it: the agent converges.
    back.ws.close(1000, "away");
    await closedWith(back);
    expect((await call("POST", WORKS("ch7e"), work("w2"))).status).toBe(201);
    expect((await call("DELETE", `${WORKS("ch7e")}/w0`)).status).toBe(200);
    await evictDurableObject(stub);
    const again = await connect("ch7e", keys);
    again.send({ type: "hello", worksEtag: resent.etag });
    const latest = await again.next((m) => m.type === "works");
    expect(latest.works.map((w: any) => w.metadata.name)).toEqual(["w1", "w2"]);
    expect(await etagRow()).toBeNull();
  });

  it("a woken object pushes the change that is its namespace's only news from what its socket kept, without reading D1; a warm change writes no row", async () => {
    const keys = await joined("chk1", { heartbeat: false });
    const stub = env.CLUSTERS.getByName("chk1");
    const takeCost = () => runInDurableObject(stub, (o) => (o as unknown as { takeCost(): { rowsWritten: number; d1Queries: number } }).takeCost());
    const stateRows = () => runInDurableObject(stub, (_o, state) => state.storage.sql.exec("SELECT k, v, pending FROM state ORDER BY k").toArray());
    const kept = () =>
      runInDurableObject(stub, (_o, state) => {
        const works = (state.getWebSockets("agent")[0]!.deserializeAttachment() as ConnectionAttachment).works;
        return works === undefined ? null : (JSON.parse(works) as KeptEntries);
      });
    const reads = () => worksReads.get("chk1") ?? 0;
    const pushed = async (write: () => Promise<{ status: number }>) => {
      const from = conn.messages.length;
      expect((await write()).status).toBeLessThan(300);
      const m = await conn.next((x) => x.type === "works", from);
      return { names: m.works.map((w: any) => w.metadata.name), works: m.works, etag: m.etag };
    };
    const conn = await connect("chk1", keys);
    conn.send({ type: "hello" });
    expect((await conn.next((m) => m.type === "works")).works).toEqual([]);
    expect(reads()).toBe(1); // the first push reads the namespace (empty)

    // Warm: the new work is pushed from memory, and nothing is written to the object's storage.
    await takeCost();
    const rows = await stateRows();
    expect((await pushed(() => call("POST", WORKS("chk1"), work("w0")))).names).toEqual(["w0"]);
    expect(await takeCost()).toMatchObject({ rowsWritten: 0, d1Queries: 0 });
    expect(await stateRows()).toEqual(rows);
    expect(reads()).toBe(1);

    // Hibernated, woken by the update of its only work: pushed without a read, nothing written.
    await evictDurableObject(stub);
    const built = constructions;
    const patch = {
      spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "w0", namespace: "default" }, data: { a: "2" } }] } },
    };
    const updated = await pushed(() => call("PATCH", `${WORKS("chk1")}/w0`, patch, merge));
    expect(constructions).toBe(built + 1);
    expect(updated.names).toEqual(["w0"]);
    expect(updated.works[0].spec.workload.manifests[0].data).toEqual({ a: "2" });
    expect(reads()).toBe(1);
    expect(await stateRows()).toEqual(rows);
    // Kept with the socket, in memory: the work's name and resourceVersion.
    expect((await kept())!.entries).toEqual([["w0", Number(updated.works[0].metadata.resourceVersion)]]);

    // Hibernated, woken by a second work: not the only news (w0's object was not kept), so D1 is read.
    await evictDurableObject(stub);
    expect((await pushed(() => call("POST", WORKS("chk1"), work("w1")))).names).toEqual(["w0", "w1"]);
    expect(reads()).toBe(2);

    // w1 removed (warm), then, hibernated, the removal of the only work left: no read, and w1 does not come back.
    expect((await pushed(() => call("DELETE", `${WORKS("chk1")}/w1`))).names).toEqual(["w0"]);
    await evictDurableObject(stub);
    expect((await pushed(() => call("DELETE", `${WORKS("chk1")}/w0`))).names).toEqual([]);
    expect(reads()).toBe(2);
    // Hibernated, woken by a new work of the now empty namespace: no read.
    await evictDurableObject(stub);
    expect((await pushed(() => call("POST", WORKS("chk1"), work("w2")))).names).toEqual(["w2"]);
    expect(reads()).toBe(2);

    // The outbox sweep's change without its work, on a hibernated object: what was kept is forgotten, the push reads D1.
    await evictDurableObject(stub);
    const from = conn.messages.length;
    await stub.deliverablesChanged();
    expect((await conn.next((m) => m.type === "works", from)).works.map((w: any) => w.metadata.name)).toEqual(["w2"]);
    expect(reads()).toBe(3);
    expect(await stateRows()).toEqual(rows);
  });

  it("a reconnect keeps what the earlier connection kept of the works; a poll agent's object keeps nothing and reads D1", async () => {
    const keys = await joined("chk2", { heartbeat: false });
    const stub = env.CLUSTERS.getByName("chk2");
    const reads = () => worksReads.get("chk2") ?? 0;
    const conn = await connect("chk2", keys);
    conn.send({ type: "hello" });
    expect((await conn.next((m) => m.type === "works")).works).toEqual([]);
    expect(reads()).toBe(1);
    // Hibernated, then the agent reconnects (the new connection replaces the old one) and the object hibernates again.
    await evictDurableObject(stub);
    const again = await connect("chk2", keys);
    expect(await closedWith(conn)).toBe(CloseCodes.Replaced);
    await evictDurableObject(stub);
    again.send({ type: "hello" });
    expect((await again.next((m) => m.type === "works")).works).toEqual([]);
    await evictDurableObject(stub);
    const from = again.messages.length;
    expect((await call("POST", WORKS("chk2"), work("w0"))).status).toBe(201);
    expect((await again.next((m) => m.type === "works", from)).works.map((w: any) => w.metadata.name)).toEqual(["w0"]);
    expect(reads()).toBe(1);

    // Without a connection nothing is kept: the agent gone, a woken object reads D1 for a poll.
    again.ws.close(1000, "away");
    await closedWith(again);
    await evictDurableObject(stub);
    expect((await call("POST", WORKS("chk2"), work("w1"))).status).toBe(201);
    const polled = await exports.default.fetch("https://hub.test/agent/v1/clusters/chk2/works", {
      headers: { authorization: `Bearer ${await keys.sign("chk2")}` },
    });
    expect(polled.status).toBe(200);
    expect(polled.headers.get("x-flotilla-d1-queries")).toBe("1");
    expect(((await polled.json()) as any).works.map((w: any) => w.metadata.name)).toEqual(["w0", "w1"]);
  });

  it("the works picture is kept alike on every connection, or on none: not over its bound, not where connections differ, not without one", () => {
    const socket = (cluster: string) => {
      const ws = Object.values(new WebSocketPair())[1] as WebSocket;
      ws.serializeAttachment({ cluster, kid: "k", connectedMs: 1, toldSeconds: 60, origin: "https://hub.test" } satisfies ConnectionAttachment);
      return ws;
    };
    const sockets = [socket("a"), socket("a")];
    const picture = new AttachmentPicture(() => sockets);
    expect(picture.load()).toBeNull();
    const small: KeptEntries = {
      asOf: 3,
      entries: [
        ["w0", 2],
        ["w1", 3, 1],
      ],
    };
    picture.save(small);
    for (const ws of sockets)
      expect(ws.deserializeAttachment()).toEqual({
        cluster: "a",
        kid: "k",
        connectedMs: 1,
        toldSeconds: 60,
        origin: "https://hub.test",
        works: JSON.stringify(small),
      });
    expect(new AttachmentPicture(() => sockets).load()).toEqual(small);
    // As large as it may be: the runtime takes it (its 16 KiB bound holds).
    const entries = (n: number, len: number) => Array.from({ length: n }, (_, i) => [`${i}-${"x".repeat(len)}`, 100_000 + i] as [string, number]);
    const atBound: KeptEntries = { asOf: 100_000, entries: entries(Math.floor((ATTACHMENT_WORKS_MAX_CHARS - 30) / 270), 253) };
    expect(JSON.stringify(atBound).length).toBeLessThanOrEqual(ATTACHMENT_WORKS_MAX_CHARS);
    picture.save(atBound);
    expect(new AttachmentPicture(() => sockets).load()).toEqual(atBound);
    // Over it: nothing is kept, on any connection.
    picture.save({ asOf: 100_000, entries: entries(Math.ceil(ATTACHMENT_WORKS_MAX_CHARS / 260), 253) });
    for (const ws of sockets) expect((ws.deserializeAttachment() as ConnectionAttachment).works).toBeUndefined();
    expect(new AttachmentPicture(() => sockets).load()).toBeNull();
    // Connections that differ (one kept nothing) give nothing; nor does no connection.
    picture.save(small);
    const other = socket("a");
    expect(new AttachmentPicture(() => [...sockets, other]).load()).toBeNull();
    expect(new AttachmentPicture(() => []).load()).toBeNull();
    picture.clear();
    for (const ws of sockets)
      expect(ws.deserializeAttachment()).toEqual({ cluster: "a", kid: "k", connectedMs: 1, toldSeconds: 60, origin: "https://hub.test" });
  });

  it("a namespace of works too large to keep is announced with works-changed, read over HTTP", async () => {
    const keys = await joined("ch7b", { heartbeat: false });
    const big = work("big");
    big.spec.workload.manifests[0]!.data = { a: "x".repeat(300 * 1024) };
    expect((await call("POST", WORKS("ch7b"), big)).status).toBe(201);
    const conn = await connect("ch7b", keys);
    conn.send({ type: "hello" });
    const changed = await conn.next((m) => m.type === "works" || m.type === "works-changed");
    expect(changed.type).toBe("works-changed");
    const polled = await exports.default.fetch("https://hub.test/agent/v1/clusters/ch7b/works", {
      headers: { authorization: `Bearer ${await keys.sign("ch7b")}` },
    });
    expect(polled.status).toBe(200);
    expect(((await polled.json()) as any).etag).toBe(changed.etag);
  });

  it("a new lease interval is sent to the connected agent and counts from then", async () => {
    const keys = await joined("ch7c", { heartbeat: false });
    const conn = await connect("ch7c", keys);
    expect((await call("PATCH", `${MC}/ch7c`, { spec: { leaseDurationSeconds: 7 } }, merge)).status).toBe(200);
    expect(await conn.next((m) => m.type === "lease")).toEqual({ type: "lease", leaseDurationSeconds: 7 });
    const lease = await runInDurableObject(env.CLUSTERS.getByName("ch7c"), (_o, state) =>
      JSON.parse(state.storage.sql.exec<{ v: string }>("SELECT v FROM state WHERE k = 'lease'").one().v),
    );
    expect(lease.toldSeconds).toBe(7);
    // An unrelated change sends nothing more.
    expect((await call("PATCH", `${MC}/ch7c`, { metadata: { labels: { a: "b" } } }, merge)).status).toBe(200);
    conn.send({ type: "status", id: "z", status: { healthy: true } });
    expect(await conn.next((m) => m.id === "z")).toMatchObject({ leaseDurationSeconds: 7 });
    expect(conn.messages.filter((m) => m.type === "lease")).toHaveLength(1);
  });

  it("a shortened lease interval gives the agent one old lease of grace; from its next renewal the new one counts", async () => {
    const keys = await joined("ch7d", { heartbeat: false });
    await call("PATCH", `${MC}/ch7d`, { spec: { leaseDurationSeconds: 4 } }, merge); // grace 5 x 4 s
    const conn = await connect("ch7d", keys);
    conn.send({ type: "status", id: "s0", status: { healthy: true } });
    await conn.next((m) => m.id === "s0");
    await ping(conn);
    const stub = env.CLUSTERS.getByName("ch7d");
    const from = conn.messages.length;
    expect((await call("PATCH", `${MC}/ch7d`, { spec: { leaseDurationSeconds: 1 } }, merge)).status).toBe(200); // grace 5 x 1 s
    expect(await conn.next((m) => m.type === "lease", from)).toEqual({ type: "lease", leaseDurationSeconds: 1 });
    const available = async () => condition((await call("GET", `${MC}/ch7d`)).body, "ManagedClusterConditionAvailable");
    // 6 s after the last ping by the hub's clock: past the new grace, within the old one.
    await withClockAhead(6000, () => runDurableObjectAlarm(stub));
    expect(await available()).toMatchObject({ status: "True" });
    // The agent renews once it learnt the new interval (a ping after the lease message): the
    // new grace counts from then on.
    const toldAt = await runInDurableObject(
      stub,
      (_o, state) => JSON.parse(state.storage.sql.exec<{ v: string }>("SELECT v FROM state WHERE k = 'lease'").one().v).toldAtMs as number,
    );
    const pongAt = () => runInDurableObject(stub, (_o, state) => state.getWebSocketAutoResponseTimestamp(state.getWebSockets("agent")[0]!)!.getTime());
    await waitFor("a ping after the lease message", async () => (await ping(conn), (await pongAt()) > toldAt), 5_000, 5);
    await withClockAhead(6000, () => runDurableObjectAlarm(stub));
    expect(await available()).toMatchObject({ status: "Unknown", reason: "ManagedClusterLeaseUpdateStopped" });
  });

  it("a closed connection's last ping stays the renewal: a shortened lease the agent renewed at runs out by the new interval", async () => {
    // The agent connected at the default interval (60 s); lowered to 1 s while it is connected.
    const keys = await joined("ch7f", { heartbeat: false });
    const conn = await connect("ch7f", keys);
    conn.send({ type: "status", id: "s0", status: { healthy: true } });
    await conn.next((m) => m.id === "s0");
    const stub = env.CLUSTERS.getByName("ch7f");
    const from = conn.messages.length;
    expect((await call("PATCH", `${MC}/ch7f`, { spec: { leaseDurationSeconds: 1 } }, merge)).status).toBe(200); // grace 5 x 1 s, was 5 x 60 s
    expect(await conn.next((m) => m.type === "lease", from)).toEqual({ type: "lease", leaseDurationSeconds: 1 });
    const toldAt = await runInDurableObject(
      stub,
      (_o, state) => JSON.parse(state.storage.sql.exec<{ v: string }>("SELECT v FROM state WHERE k = 'lease'").one().v).toldAtMs as number,
    );
    const pongAt = () => runInDurableObject(stub, (_o, state) => state.getWebSocketAutoResponseTimestamp(state.getWebSockets("agent")[0]!)!.getTime());
    await waitFor("a ping after the lease message", async () => (await ping(conn), (await pongAt()) > toldAt), 5_000, 5);
    const lastPong = await pongAt();
    // The agent stops: its connection closes, and the runtime forgets the socket's last pong.
    conn.ws.close(1000, "agent stopping");
    await closedWith(conn);
    await waitFor("the hub's socket gone", async () => (await agentSocketCount("ch7f")) === 0, 5_000, 5);
    const lease = await runInDurableObject(stub, (_o, state) =>
      JSON.parse(state.storage.sql.exec<{ v: string }>("SELECT v FROM state WHERE k = 'lease'").one().v),
    );
    expect(lease.renewMs).toBe(lastPong);
    // 6 s later by the hub's clock: past the new grace (5 s) from that pong, within the old one (300 s).
    expect(await runInDurableObject(stub, (_o, state) => state.storage.getAlarm())).toBe(lastPong + 5000);
    await withClockAhead(6000, () => runDurableObjectAlarm(stub));
    const available = condition((await call("GET", `${MC}/ch7f`)).body, "ManagedClusterConditionAvailable");
    expect(available).toMatchObject({ status: "Unknown", reason: "ManagedClusterLeaseUpdateStopped" });
  });

  it("a report over the channel commits (ack with the resourceVersion); a stale uid gets 409, a missing work 404", async () => {
    const keys = await joined("ch8", { heartbeat: false });
    const created = await call("POST", WORKS("ch8"), work("r1"));
    const uid = created.body.metadata.uid;
    const conn = await connect("ch8", keys);
    const status = {
      conditions: [
        {
          type: "Applied",
          status: "True",
          reason: "AppliedManifestWorkComplete",
          message: "Apply manifest work complete",
          lastTransitionTime: "2026-11-26T00:00:00Z",
        },
      ],
    };
    conn.send({ type: "report", id: "r", work: "r1", report: { uid, status } });
    const ack = await conn.next((m) => m.id === "r");
    expect(ack.type, JSON.stringify(ack)).toBe("ack");
    const stored = (await call("GET", `${WORKS("ch8")}/r1`)).body;
    expect(ack.resourceVersion).toBe(stored.metadata.resourceVersion);
    expect(condition(stored, "Applied")).toMatchObject({ status: "True" });

    conn.send({ type: "report", id: "s", work: "r1", report: { uid: "another-uid", status } });
    expect((await conn.next((m) => m.id === "s")).status).toMatchObject({ code: 409, reason: "Conflict" });
    conn.send({ type: "report", id: "t", work: "gone", report: { uid, status } });
    expect((await conn.next((m) => m.id === "t")).status).toMatchObject({ code: 404, reason: "NotFound" });
  });

  it("a report writes on the work its object pushed, without reading it from D1, though the isolate's copies dropped it", async () => {
    const keys = await joined("ch8r", { heartbeat: false });
    const conn = await connect("ch8r", keys);
    conn.send({ type: "hello" });
    await conn.next((m) => m.type === "works");
    // Held by the agent's cleanup finalizer from its create, as a placement's works are.
    const body = { ...work("pw"), metadata: { name: "pw", finalizers: [MANIFEST_WORK_CLEANUP_FINALIZER] } };
    const from = conn.messages.length;
    const uid = (await call("POST", WORKS("ch8r"), body)).body.metadata.uid;
    await conn.next((m) => m.type === "works" && m.works.length === 1, from);
    // The isolate's copies are bounded overall: at 1,000 clusters the other clusters' pushes evict this one's.
    deliveredWorks.forget("ch8r", "pw");
    const reads = countObjectReads("pw");
    try {
      const report = async (id: string, reason: string) => {
        const status = { conditions: [{ type: "Applied", status: "True", reason, message: "done", lastTransitionTime: "2026-11-26T00:00:00Z" }] };
        conn.send({ type: "report", id, work: "pw", report: { uid, status } });
        const ack = await conn.next((m) => m.id === id);
        expect(ack.type, JSON.stringify(ack)).toBe("ack");
        return ack.resourceVersion as string;
      };
      await report("p1", "First");
      const rv = await report("p2", "Second");
      expect(reads.count).toBe(0);
      const stored = (await call("GET", `${WORKS("ch8r")}/pw`)).body;
      expect(stored.metadata.resourceVersion).toBe(rv);
      expect(condition(stored, "Applied")).toMatchObject({ status: "True", reason: "Second" });
    } finally {
      reads.stop();
    }
  });

  it("the first report of a work without the cleanup finalizer (a replica set's) puts it on the pushed work without reading it from D1, and the update is pushed", async () => {
    const keys = await joined("ch8f", { heartbeat: false });
    const conn = await connect("ch8f", keys);
    conn.send({ type: "hello" });
    await conn.next((m) => m.type === "works");
    let from = conn.messages.length;
    const uid = (await call("POST", WORKS("ch8f"), work("rw"))).body.metadata.uid;
    const created = (await conn.next((m) => m.type === "works" && m.works.length === 1, from)).works[0];
    expect(created.metadata.finalizers).toBeUndefined();
    deliveredWorks.forget("ch8f", "rw");
    const reads = countObjectReads("rw");
    try {
      const report = async (id: string, reason: string) => {
        const status = { conditions: [{ type: "Applied", status: "True", reason, message: "done", lastTransitionTime: "2026-11-26T00:00:00Z" }] };
        conn.send({ type: "report", id, work: "rw", report: { uid, status } });
        const ack = await conn.next((m) => m.id === id);
        expect(ack.type, JSON.stringify(ack)).toBe("ack");
        return ack.resourceVersion as string;
      };
      from = conn.messages.length;
      await report("f1", "First");
      // The finalizer's update reaches the agent (OCM's agent adds it at its first sight of the work).
      const held = (await conn.next((m) => m.type === "works" && m.works[0]?.metadata.finalizers, from)).works[0];
      expect(held.metadata.finalizers).toEqual([MANIFEST_WORK_CLEANUP_FINALIZER]);
      const rv = await report("f2", "Second");
      expect(reads.count).toBe(0);
      const stored = (await call("GET", `${WORKS("ch8f")}/rw`)).body;
      expect(stored.metadata.finalizers).toEqual([MANIFEST_WORK_CLEANUP_FINALIZER]);
      expect(stored.metadata.resourceVersion).toBe(rv);
      expect(condition(stored, "Applied")).toMatchObject({ status: "True", reason: "Second" });
    } finally {
      reads.stop();
    }
  });

  it("concurrent reports all commit and are acknowledged, each with its own resourceVersion", async () => {
    const keys = await joined("ch8b", { heartbeat: false });
    const uids: string[] = [];
    for (let i = 0; i < 8; i++) uids.push((await call("POST", WORKS("ch8b"), work(`c${i}`))).body.metadata.uid);
    const conn = await connect("ch8b", keys);
    const status = {
      conditions: [{ type: "Applied", status: "True", reason: "AppliedManifestWorkComplete", message: "done", lastTransitionTime: "2026-11-26T00:00:00Z" }],
    };
    uids.forEach((uid, i) => conn.send({ type: "report", id: `q${i}`, work: `c${i}`, report: { uid, status } }));
    const acks = await Promise.all(uids.map((_, i) => conn.next((m) => m.id === `q${i}`)));
    expect(acks.map((a) => a.type)).toEqual(uids.map(() => "ack"));
    expect(new Set(acks.map((a) => a.resourceVersion)).size).toBe(uids.length);
    for (let i = 0; i < uids.length; i++) expect(condition((await call("GET", `${WORKS("ch8b")}/c${i}`)).body, "Applied")).toMatchObject({ status: "True" });
  });

  it("closes for a bad message (4005) and for one over the size limit (1009)", async () => {
    const keys = await joined("ch9", { heartbeat: false });
    const conn = await connect("ch9", keys);
    conn.send("{not json");
    expect(await closedWith(conn)).toBe(CloseCodes.BadMessage);
    const conn2 = await connect("ch9", keys);
    conn2.send({ type: "launch", id: "1" });
    expect(await closedWith(conn2)).toBe(CloseCodes.BadMessage);
    const conn3 = await connect("ch9", keys);
    conn3.send({ type: "status", id: "big", status: { healthy: true, healthMessage: "x".repeat(CHANNEL_MAX_MESSAGE_BYTES) } });
    expect(await closedWith(conn3)).toBe(1009);
    const conn4 = await connect("ch9", keys);
    conn4.ws.send(new Uint8Array([1, 2, 3]));
    expect(await closedWith(conn4)).toBe(CloseCodes.BadMessage);
  });

  it("a rotation closes the old key's connection (4001); the new key connects", async () => {
    const keys = await joined("ch10", { heartbeat: false });
    const conn = await connect("ch10", keys);
    const next = await agentKeys();
    const r = await call(
      "POST",
      "/agent/v1/clusters/ch10/rotate-key",
      { publicKey: next.publicJwk, proof: await next.proof("ch10") },
      { token: await keys.sign("ch10") },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    next.tag = r.headers.get("flotilla-key-tag") ?? undefined;
    expect(await closedWith(conn)).toBe(CloseCodes.KeyRotated);
    // The retired key still answers HTTP during its grace, but holds no connection.
    expect((await upgrade("ch10", channelHeaders(await keys.sign("ch10")))).status).toBe(403);
    const fresh = await connect("ch10", next);
    fresh.send({ type: "hello" });
    await fresh.next((m) => m.type === "welcome");
  });

  it("accepting a pending key closes the old key's connection (4002); denying closes with 4003", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys } = await register(token, "ch11", "id-ch11");
    const conn = await connect("ch11", keys);
    const { keys: newer, res } = await register(token, "ch11", "id-ch11");
    expect(res.status).toBe(202);
    expect((await call("PATCH", `${MC}/ch11`, { metadata: { annotations: { "flotilla.dev/accept-key-id": newer.kid } } }, merge)).status).toBe(200);
    expect(await closedWith(conn)).toBe(CloseCodes.KeyReplaced);
    const conn2 = await connect("ch11", newer);
    expect((await call("PATCH", `${MC}/ch11`, { spec: { hubAcceptsClient: false } }, merge)).status).toBe(200);
    expect(await closedWith(conn2)).toBe(CloseCodes.Denied);
  });

  it("left over the channel is acknowledged, then the leave's end closes the connection (4004)", async () => {
    const keys = await joined("ch12", { heartbeat: false });
    const conn = await connect("ch12", keys);
    conn.send({ type: "left", id: "early" });
    expect((await conn.next((m) => m.id === "early")).status).toMatchObject({ code: 409 });
    conn.send({ type: "status", id: "hb", status: { healthy: true } });
    await conn.next((m) => m.id === "hb");
    const from = conn.messages.length;
    expect((await call("DELETE", `${MC}/ch12`)).status).toBe(200);
    // The start of the leave is pushed (leaving: true).
    expect((await conn.next((m) => m.type === "works" || m.type === "works-changed", from)).leaving).toBe(true);
    conn.send({ type: "left", id: "bye" });
    expect(await conn.next((m) => m.id === "bye")).toEqual({ type: "ack", id: "bye" });
    expect(await closedWith(conn)).toBe(CloseCodes.Left);
    expect((await call("GET", `${MC}/ch12`)).status).toBe(404);
  });
});

describe("reports commit in the order sent (issue 39)", () => {
  const applied = (message: string) => ({
    conditions: [{ type: "Applied", status: "True", reason: "AppliedManifestWorkComplete", message, lastTransitionTime: "2026-11-26T00:00:00Z" }],
  });
  const appliedMessage = async (ns: string, name: string) => condition((await call("GET", `${WORKS(ns)}/${name}`)).body, "Applied")?.message;

  it("reports pipelined on one socket for one work commit in arrival order: the last one sent is what stays", async () => {
    const keys = await joined("ord1", { heartbeat: false });
    const uid = (await call("POST", WORKS("ord1"), work("p"))).body.metadata.uid;
    const conn = await connect("ord1", keys);
    // No sequence (an agent of before): arrival order alone decides.
    const n = 60;
    for (let i = 0; i < n; i++) conn.send({ type: "report", id: `p${i}`, work: "p", report: { uid, status: applied(`step ${i}`) } });
    const acks = await Promise.all(Array.from({ length: n }, (_, i) => conn.next((m) => m.id === `p${i}`)));
    expect(acks.map((a) => a.type)).toEqual(acks.map(() => "ack"));
    expect(await appliedMessage("ord1", "p")).toBe(`step ${n - 1}`);
  });

  it("with sequences, pipelined reports keep the newest, and an older report re-sent after a reconnect (or over HTTP) is acknowledged as stale", async () => {
    const keys = await joined("ord2", { heartbeat: false });
    const uid = (await call("POST", WORKS("ord2"), work("q"))).body.metadata.uid;
    const conn = await connect("ord2", keys);
    const base = 1_000_000;
    const n = 40;
    for (let i = 0; i < n; i++) conn.send({ type: "report", id: `q${i}`, work: "q", report: { uid, sequence: base + i, status: applied(`step ${i}`) } });
    const acks = await Promise.all(Array.from({ length: n }, (_, i) => conn.next((m) => m.id === `q${i}`)));
    expect(acks.map((a) => a.type)).toEqual(acks.map(() => "ack"));
    expect(await appliedMessage("ord2", "q")).toBe(`step ${n - 1}`);
    const rv = (await call("GET", `${WORKS("ord2")}/q`)).body.metadata.resourceVersion;

    // The connection drops; the agent's copy of an older, unanswered report goes again on the new one.
    conn.ws.close(1000, "reconnecting");
    const again = await connect("ord2", keys);
    again.send({ type: "report", id: "old", work: "q", report: { uid, sequence: base + 5, status: applied("step 5") } });
    const stale = await again.next((m) => m.id === "old");
    expect(stale).toMatchObject({ type: "ack", stale: true, sequence: base + n - 1 });
    // The same over HTTP.
    const put = await call(
      "PUT",
      "/agent/v1/clusters/ord2/works/q/status",
      { uid, sequence: base + 3, status: applied("step 3") },
      { token: await keys.sign("ord2") },
    );
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({ stale: true, sequence: base + n - 1 });
    expect(await appliedMessage("ord2", "q")).toBe(`step ${n - 1}`);
    expect((await call("GET", `${WORKS("ord2")}/q`)).body.metadata.resourceVersion).toBe(rv);

    // A newer one commits, over either transport.
    const newer = await call(
      "PUT",
      "/agent/v1/clusters/ord2/works/q/status",
      { uid, sequence: base + n, status: applied("newer") },
      { token: await keys.sign("ord2") },
    );
    expect(newer.status).toBe(200);
    expect(newer.body.stale).toBeUndefined();
    expect(await appliedMessage("ord2", "q")).toBe("newer");

    // Pipelined, a newer report followed by a late copy of an older one: the newer stays.
    again.send({ type: "report", id: "x", work: "q", report: { uid, sequence: base + n + 5, status: applied("newest") } });
    again.send({ type: "report", id: "y", work: "q", report: { uid, sequence: base + n + 1, status: applied("late copy") } });
    expect(await again.next((m) => m.id === "x")).toMatchObject({ type: "ack" });
    expect(await again.next((m) => m.id === "y")).toMatchObject({ type: "ack", stale: true, sequence: base + n + 5 });
    expect(await appliedMessage("ord2", "q")).toBe("newest");
  });

  it("a close frame from the agent is answered with its code at once (not 1006)", async () => {
    const keys = await joined("ord3", { heartbeat: false });
    const conn = await connect("ord3", keys);
    conn.ws.close(1000, "agent stops");
    await waitFor("the close to be answered", async () => conn.closed !== null, 3_000, 5);
    expect(conn.closed!.code).toBe(1000);
  });
});
