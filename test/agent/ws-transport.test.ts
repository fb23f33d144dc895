/**
 * The agent's ws transport (agent/src/transport/ws.ts) against a channel server made with the
 * `ws` package's WebSocketServer that speaks the hub's side of the protocol as the test says:
 * what the transport sends and how it takes what it receives, malformed frames, errors, a request
 * left unanswered by a closed connection, close codes and the fallback to poll. The real hub's
 * side is tested in test/e2e/ws-transport.test.ts and test/e2e/channel.test.ts.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import type { HubResult } from "../../agent/src/hub-client.ts";
import { createLogger } from "../../agent/src/log.ts";
import { WsTransport } from "../../agent/src/transport/ws.ts";
import type { DeliveredWork, HeartbeatAnswer, HeartbeatRequest } from "../../src/agent-api/protocol.ts";
import { waitFor } from "../wait.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A channel server: `onMessage(socket, message, connection index)` answers as the test wants. */
async function channelServer(onMessage: (ws: WebSocket, msg: Json, conn: number) => void) {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0, handleProtocols: (p) => (p.has("flotilla.agent.v1") ? "flotilla.agent.v1" : false) });
  const received: { conn: number; msg: Json }[] = [];
  const sockets: WebSocket[] = [];
  let connections = 0;
  wss.on("connection", (ws) => {
    const conn = connections++;
    sockets.push(ws);
    ws.on("message", (data) => {
      const text = String(data);
      if (text === "ping") return void ws.send("pong");
      const msg = JSON.parse(text) as Json;
      received.push({ conn, msg });
      onMessage(ws, msg, conn);
    });
  });
  await new Promise<void>((r) => wss.once("listening", r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.terminate();
        wss.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(wss.address() as AddressInfo).port}`, received, connections: () => connections };
}

/** HTTP calls of the fallback, recorded; each answers as given. */
function httpHub(url: string) {
  const calls: string[] = [];
  const ok = <T>(value: T): Promise<HubResult<T>> => Promise.resolve({ ok: true, status: 200, value });
  return {
    calls,
    hub: {
      baseUrl: url,
      noteKeyTag: () => undefined,
      live: () => Promise.resolve(true),
      heartbeat: (_n: string, _t: string, _b: HeartbeatRequest) => (
        calls.push("heartbeat"),
        ok<HeartbeatAnswer>({ leaseDurationSeconds: 60, worksEtag: "h1", leaving: false })
      ),
      getWorks: () => (calls.push("works"), ok({ changed: true as const, etag: "h1", leaving: false, works: [] as DeliveredWork[] })),
      putWorkStatus: () => (calls.push("report"), ok({ resourceVersion: "http" })),
      putPolicyStatus: () => (calls.push("compliance"), ok({ resourceVersion: "http" })),
      left: () => (calls.push("left"), ok({})),
    },
  };
}

function transportFor(url: string) {
  const lines: string[] = [];
  const abort = new AbortController();
  const { hub, calls } = httpHub(url);
  const t = new WsTransport({
    clusterName: "c1",
    hub,
    sign: () => Promise.resolve("jwt"),
    logger: createLogger({ write: (l) => lines.push(l) }),
    timing: { backoffBaseMs: 10, backoffCapMs: 40, hubProbeMs: 50, requestTimeoutMs: 2_000, random: () => 0.5 },
    signal: abort.signal,
  });
  const works: { etag: string; names: string[]; policies: string[] }[] = [];
  let leaving = 0;
  t.start({
    works: (u) => works.push({ etag: u.etag, names: u.works.map((w) => w.metadata.name), policies: u.policies.map((p) => p.metadata.name) }),
    leaving: () => leaving++,
  });
  cleanups.push(async () => {
    abort.abort();
    await t.stopped();
  });
  return { t, lines, calls, works, leaving: () => leaving };
}

const work = (name: string) => ({ metadata: { name, uid: `uid-${name}` }, spec: { workload: { manifests: [] } } });
const status: HeartbeatRequest = { healthy: true, version: { kubernetes: "v1.31.0" } };

describe("ws transport", () => {
  it("says hello, takes pushed works, drops malformed frames, sends status only when it changed, and maps an error to the HTTP failure", async () => {
    const server = await channelServer((ws, msg) => {
      if (msg.type === "hello") {
        ws.send(JSON.stringify({ type: "welcome", leaseDurationSeconds: 60, worksEtag: "e1", leaving: false }));
        ws.send(JSON.stringify({ type: "works", etag: "e1", leaving: false, works: [work("a")] }));
      } else if (msg.type === "status") {
        ws.send(JSON.stringify({ type: "ack", id: msg.id, leaseDurationSeconds: 60 }));
      } else if (msg.type === "report") {
        ws.send(
          JSON.stringify({
            type: "error",
            id: msg.id,
            status: { kind: "Status", apiVersion: "v1", status: "Failure", code: 409, reason: "Conflict", message: "another uid" },
          }),
        );
      }
    });
    const { t, calls, works } = transportFor(server.url);
    await waitFor("the pushed works", async () => works.length === 1);
    expect(works[0]).toEqual({ etag: "e1", names: ["a"], policies: [] });
    expect(server.received[0]?.msg).toEqual({ type: "hello" });

    // The first heartbeat sends the status; the same status again sends nothing.
    expect(await t.heartbeat(status)).toEqual({ ok: true, status: 200, value: { leaseDurationSeconds: 60, worksEtag: "e1", leaving: false } });
    expect(await t.heartbeat(status)).toMatchObject({ ok: true });
    expect(server.received.filter((r) => r.msg.type === "status")).toHaveLength(1);
    expect(await t.heartbeat({ ...status, healthy: false })).toMatchObject({ ok: true });
    expect(server.received.filter((r) => r.msg.type === "status")).toHaveLength(2);

    const r = await t.reportStatus("a", { uid: "uid-a", status: { conditions: [] } });
    expect(r).toEqual({ ok: false, error: { kind: "conflict", status: 409, reason: "Conflict", message: "another uid" } });
    expect(calls).toEqual([]);
    expect(server.connections()).toBe(1);
  });

  it("takes replicated Policies with the works and sends a compliance report as a message, answered with its ack", async () => {
    const policy = { metadata: { name: "default.p", uid: "uid-p" }, spec: { disabled: false, "policy-templates": [] } };
    const server = await channelServer((ws, msg) => {
      if (msg.type === "hello") {
        ws.send(JSON.stringify({ type: "welcome", leaseDurationSeconds: 60, worksEtag: "e1", leaving: false }));
        ws.send(JSON.stringify({ type: "works", etag: "e1", leaving: false, works: [work("a")], policies: [policy] }));
      } else if (msg.type === "compliance") {
        ws.send(JSON.stringify({ type: "ack", id: msg.id, resourceVersion: "42" }));
      }
    });
    const { t, calls, works } = transportFor(server.url);
    await waitFor("the pushed works and policies", async () => works.length === 1);
    expect(works[0]).toEqual({ etag: "e1", names: ["a"], policies: ["default.p"] });
    const report = {
      uid: "uid-p",
      templates: [
        { name: "t", compliant: "NonCompliant" as const, message: "NonCompliant; violation - namespaces [x] not found", timestamp: "2026-11-26T17:00:00.000Z" },
      ],
    };
    expect(await t.reportCompliance("default.p", report)).toEqual({ ok: true, status: 200, value: { resourceVersion: "42" } });
    expect(server.received.find((r) => r.msg.type === "compliance")?.msg).toEqual({ type: "compliance", id: expect.any(String), policy: "default.p", report });
    expect(calls).toEqual([]);
  });

  it("logs a malformed message and keeps the connection", async () => {
    const server = await channelServer((ws, msg) => {
      if (msg.type !== "hello") return;
      ws.send(JSON.stringify({ type: "welcome", leaseDurationSeconds: 60, worksEtag: "e1", leaving: false }));
      ws.send("not json");
      ws.send(JSON.stringify({ type: "works", etag: 5, works: "none" }));
      ws.send(JSON.stringify({ type: "works", etag: "e2", leaving: false, works: [work("b")] }));
    });
    const { lines, works } = transportFor(server.url);
    await waitFor("the good works", async () => works.some((w) => w.etag === "e2"));
    expect(lines.filter((l) => /ignoring a channel frame that is not JSON/.test(l))).toHaveLength(1);
    expect(lines.filter((l) => /ignoring a malformed channel message/.test(l))).toHaveLength(1);
    expect(server.connections()).toBe(1);
  });

  it("sends a report left unanswered by a closed connection again on the next one, with the ETag held", async () => {
    const server = await channelServer((ws, msg, conn) => {
      if (msg.type === "hello") {
        ws.send(JSON.stringify({ type: "welcome", leaseDurationSeconds: 60, worksEtag: "e1", leaving: false }));
        if (msg.worksEtag !== "e1") ws.send(JSON.stringify({ type: "works", etag: "e1", leaving: false, works: [work("a")] }));
      } else if (msg.type === "report") {
        if (conn === 0) ws.close(1001, "going away");
        else ws.send(JSON.stringify({ type: "ack", id: msg.id, resourceVersion: "7" }));
      }
    });
    const { t, works, calls, lines } = transportFor(server.url);
    await waitFor("the works", async () => works.length === 1);
    const r = await t.reportStatus("a", { uid: "uid-a", sequence: 5, status: {} });
    expect(r).toEqual({ ok: true, status: 200, value: { resourceVersion: "7" } });
    // The copy sent again carries the report's sequence: the hub answers it stale if the first one committed.
    expect(server.received.filter((x) => x.msg.type === "report").map((x) => (x.msg.report as { sequence?: number }).sequence)).toEqual([5, 5]);
    // The log names what went again (the crash test reads it).
    expect(lines.filter((l) => /sending again 1 request\(s\) left without an answer by the previous connection .*requests="report a"/.test(l))).toHaveLength(1);
    expect(lines.filter((l) => /made while not connected/.test(l))).toEqual([]);
    expect(server.connections()).toBe(2);
    const hellos = server.received.filter((x) => x.msg.type === "hello").map((x) => x.msg);
    expect(hellos).toEqual([{ type: "hello" }, { type: "hello", worksEtag: "e1" }]);
    // Not delivered again: the second connection's hello had the ETag.
    expect(works).toHaveLength(1);
    expect(server.received.filter((x) => x.msg.type === "report").map((x) => x.conn)).toEqual([0, 1]);
    expect(calls).toEqual([]);
  });

  it("on 4004 answers a waiting left as a 401 and dials no more", async () => {
    const server = await channelServer((ws, msg) => {
      if (msg.type === "hello") ws.send(JSON.stringify({ type: "welcome", leaseDurationSeconds: 60, worksEtag: "e1", leaving: true }));
      else if (msg.type === "left") ws.close(4004, "the cluster left");
    });
    const { t, leaving, lines } = transportFor(server.url);
    await waitFor("leaving", async () => leaving() > 0);
    const r = await t.left();
    expect(r).toMatchObject({ ok: false, error: { kind: "unauthorized", status: 401 } });
    await waitFor("the close logged", async () =>
      lines.some((l) => /channel closed \(4004: the cluster left\): the cluster left the hub or was removed/.test(l)),
    );
    expect(server.connections()).toBe(1);
  });

  it("falls back to poll when the upgrade is answered 426: heartbeats, works and reports over HTTP", async () => {
    const server = http.createServer((_req, res) => res.writeHead(404).end());
    server.on("upgrade", (_req, socket) => socket.end("HTTP/1.1 426 Upgrade Required\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
    const { t, lines, calls, works } = transportFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    await waitFor("the fallback", async () => lines.some((l) => /HTTP 426.*using the poll transport/.test(l)));
    const hb = await t.heartbeat(status);
    expect(hb).toMatchObject({ ok: true, value: { worksEtag: "h1" } });
    t.heartbeatAnswered((hb as { value: HeartbeatAnswer }).value);
    await waitFor("works fetched over HTTP", async () => works.length === 1);
    expect(await t.reportStatus("a", { uid: "uid-a", status: {} })).toMatchObject({ ok: true, value: { resourceVersion: "http" } });
    expect(calls).toEqual(["heartbeat", "works", "report"]);
  });
});
