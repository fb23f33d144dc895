/**
 * The proxy to a member cluster's API over its agent's channel (src/api/proxy.ts,
 * durable-objects/cluster/proxy.ts; docs/proxy.md), in workerd with a scripted agent on a real
 * channel: what `proxy-open` carries (and never: credentials, `Impersonate-*`), the answer streamed
 * back in binary frames, flow control (credit granted as the client reads; an agent sending beyond
 * its credit, or an oversized frame, has its stream cancelled and the channel goes on),
 * cancellation both ways, 503 without an agent, hostile paths.
 */
import { exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { CHANNEL_SUBPROTOCOL, PROXY_FRAME_BYTES, PROXY_WINDOW_BYTES, proxyFrame } from "../../src/agent-api/channel-protocol.ts";
import { ADMIN, channelHeaders, joined, type AgentKeys } from "./helpers.ts";
import { waitFor } from "../wait.ts";

/* eslint-disable @typescript-eslint/no-explicit-any */

interface Agent {
  ws: WebSocket;
  messages: any[];
  closed: { code: number } | null;
  next(match: (m: any) => boolean): Promise<any>;
  send(m: unknown): void;
}

const open: Agent[] = [];
afterEach(() => {
  for (const a of open.splice(0)) if (!a.closed) a.ws.close(1000, "test done");
});

async function connect(name: string, keys: AgentKeys): Promise<Agent> {
  const res = await exports.default.fetch(`https://hub.test/agent/v1/clusters/${name}/connect`, { headers: channelHeaders(await keys.sign(name)) });
  expect(res.status).toBe(101);
  expect(res.headers.get("sec-websocket-protocol")).toBe(CHANNEL_SUBPROTOCOL);
  const ws = res.webSocket!;
  const agent: Agent = {
    ws,
    messages: [],
    closed: null,
    send: (m) => ws.send(typeof m === "string" ? m : JSON.stringify(m)),
    async next(match) {
      let found: any;
      await waitFor("a channel message", async () => (found = agent.messages.find(match)) !== undefined || agent.closed !== null, 10_000, 5);
      if (found === undefined) throw new Error(`closed before the message came; got ${JSON.stringify(agent.messages)}`);
      agent.messages.splice(agent.messages.indexOf(found), 1);
      return found;
    },
  };
  ws.accept();
  ws.addEventListener("message", (e) => {
    if (typeof e.data === "string") agent.messages.push(JSON.parse(e.data));
  });
  ws.addEventListener("close", (e) => (agent.closed = { code: e.code }));
  open.push(agent);
  agent.send({ type: "hello" });
  await agent.next((m) => m.type === "welcome");
  return agent;
}

const get = (path: string, headers: Record<string, string> = {}) =>
  exports.default.fetch(`https://hub.test${path}`, { headers: { authorization: `Bearer ${ADMIN}`, ...headers } });

const bytes = (n: number, fill = 0x61) => new Uint8Array(n).fill(fill);

describe("the proxy over the agent's channel", () => {
  it("answers 503 with a Status when the cluster has no agent connected", async () => {
    await joined("px1", { heartbeat: false });
    const res = await get("/clusters/px1/proxy/api/v1/namespaces");
    expect(res.status).toBe(503);
    const status: any = await res.json();
    expect(status).toMatchObject({ kind: "Status", reason: "ServiceUnavailable" });
    expect(status.message).toContain("cluster px1 has no agent connected");
  });

  it("carries a request to the agent without credentials or Impersonate headers and streams its answer back", async () => {
    const keys = await joined("px2", { heartbeat: false });
    const agent = await connect("px2", keys);
    const pending = get("/apis/cluster.karmada.io/v1alpha1/clusters/px2/proxy/api/v1/namespaces?limit=5", {
      accept: "application/json",
      cookie: "a=b",
    });
    const open = await agent.next((m) => m.type === "proxy-open");
    expect(open).toMatchObject({ method: "GET", path: "/api/v1/namespaces", query: "limit=5", hub: "hub.test" });
    expect(open.user.name).toBe("flotilla:admin");
    expect(Object.keys(open.headers).sort()).toEqual(["accept"]);
    agent.send({ type: "proxy-head", stream: open.stream, status: 200, headers: { "content-type": ["application/json"], "set-cookie": ["x=y"] } });
    agent.ws.send(proxyFrame(open.stream, new TextEncoder().encode('{"kind":"NamespaceList",')));
    agent.ws.send(proxyFrame(open.stream, new TextEncoder().encode('"items":[]}')));
    agent.send({ type: "proxy-end", stream: open.stream });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(await res.json()).toEqual({ kind: "NamespaceList", items: [] });

    // The whole answer inline (`inline: true` in the open): one head with `end` and the body.
    expect(open.inline).toBe(true);
    const pending2 = get("/clusters/px2/proxy/api/v1/namespaces/default");
    const open2 = await agent.next((m) => m.type === "proxy-open" && m.path === "/api/v1/namespaces/default");
    const inline = JSON.stringify({ kind: "Namespace", metadata: { name: "default" } });
    agent.send({ type: "proxy-head", stream: open2.stream, status: 200, headers: { "content-type": ["application/json"] }, body: btoa(inline), end: true });
    const res2 = await pending2;
    expect(res2.status).toBe(200);
    expect(await res2.text()).toBe(inline);
    // A late frame or end of that stream is dropped; a body without `end` breaks the stream (502).
    agent.ws.send(proxyFrame(open2.stream, new TextEncoder().encode("late")));
    agent.send({ type: "proxy-end", stream: open2.stream });
    const pending3 = get("/clusters/px2/proxy/api/v1/namespaces/kube-system");
    const open3 = await agent.next((m) => m.type === "proxy-open" && m.path === "/api/v1/namespaces/kube-system");
    agent.send({ type: "proxy-head", stream: open3.stream, status: 200, headers: {}, body: btoa("x") });
    expect((await pending3).status).toBe(502);
    expect((await agent.next((m) => m.type === "proxy-cancel" && m.stream === open3.stream)).reason).toContain("no end");
    // An empty inline answer and a 204 carry no body.
    const pending4 = get("/clusters/px2/proxy/api/v1/namespaces/empty");
    const open4 = await agent.next((m) => m.type === "proxy-open" && m.path === "/api/v1/namespaces/empty");
    agent.send({ type: "proxy-head", stream: open4.stream, status: 204, headers: {}, end: true });
    const res4 = await pending4;
    expect(res4.status).toBe(204);
    expect(await res4.text()).toBe("");
    expect(agent.closed).toBeNull();
  });

  it("grants credit as the client reads; a stream over its credit or with an oversized frame is cancelled, the channel goes on", async () => {
    const keys = await joined("px3", { heartbeat: false });
    const agent = await connect("px3", keys);
    const pending = get("/clusters/px3/proxy/api/v1/pods?watch=1");
    const open = await agent.next((m) => m.type === "proxy-open");
    agent.send({ type: "proxy-head", stream: open.stream, status: 200, headers: { "content-type": ["application/json"] } });
    const res = await pending;
    const reader = res.body!.getReader();
    // The whole window, in frames of the largest size: all of it may go without a grant.
    for (let sent = 0; sent < PROXY_WINDOW_BYTES; sent += PROXY_FRAME_BYTES) agent.ws.send(proxyFrame(open.stream, bytes(PROXY_FRAME_BYTES)));
    let read = 0;
    while (read < PROXY_WINDOW_BYTES) {
      const { value } = await reader.read();
      read += value!.byteLength;
    }
    const credit = await agent.next((m) => m.type === "proxy-credit" && m.stream === open.stream);
    expect(credit.bytes).toBeGreaterThan(0);
    expect(credit.bytes).toBeLessThanOrEqual(PROXY_WINDOW_BYTES);

    // An agent that ignores its credit: a client that reads nothing, and 1 MiB beyond the window
    // at once. The stream is cancelled (the hub holds no more than the window), the client's body fails.
    const pendingFlood = get("/clusters/px3/proxy/api/v1/pods?watch=1");
    const flood = await agent.next((m) => m.type === "proxy-open");
    agent.send({ type: "proxy-head", stream: flood.stream, status: 200, headers: {} });
    const floodRes = await pendingFlood;
    for (let sent = 0; sent < PROXY_WINDOW_BYTES + 1024 * 1024; sent += PROXY_FRAME_BYTES) agent.ws.send(proxyFrame(flood.stream, bytes(PROXY_FRAME_BYTES)));
    const cancel = await agent.next((m) => m.type === "proxy-cancel" && m.stream === flood.stream);
    expect(cancel.reason).toContain("credit");
    await expect(floodRes.text()).rejects.toThrow();
    await reader.cancel();

    // An oversized frame on another stream: cancelled, the channel still serves.
    const pending2 = get("/clusters/px3/proxy/api/v1/pods");
    const open2 = await agent.next((m) => m.type === "proxy-open");
    agent.send({ type: "proxy-head", stream: open2.stream, status: 200, headers: {} });
    const res2 = await pending2;
    agent.ws.send(proxyFrame(open2.stream, bytes(PROXY_FRAME_BYTES + 1)));
    expect((await agent.next((m) => m.type === "proxy-cancel" && m.stream === open2.stream)).reason).toContain("over the");
    await expect(res2.text()).rejects.toThrow();
    expect(agent.closed).toBeNull();

    const pending3 = get("/clusters/px3/proxy/version");
    const open3 = await agent.next((m) => m.type === "proxy-open" && m.path === "/version");
    agent.send({ type: "proxy-head", stream: open3.stream, status: 200, headers: {} });
    agent.ws.send(proxyFrame(open3.stream, new TextEncoder().encode("ok")));
    agent.send({ type: "proxy-end", stream: open3.stream });
    expect(await (await pending3).text()).toBe("ok");
  });

  it("cancels both ways: the client going away tells the agent; the agent's end or error reaches the client", async () => {
    const keys = await joined("px4", { heartbeat: false });
    const agent = await connect("px4", keys);
    const pending = get("/clusters/px4/proxy/api/v1/pods?watch=true");
    const open = await agent.next((m) => m.type === "proxy-open");
    agent.send({ type: "proxy-head", stream: open.stream, status: 200, headers: { "content-type": ["application/json"] } });
    const res = await pending;
    await res.body!.cancel();
    expect((await agent.next((m) => m.type === "proxy-cancel" && m.stream === open.stream)).stream).toBe(open.stream);

    const pending2 = get("/clusters/px4/proxy/api/v1/nodes");
    const open2 = await agent.next((m) => m.type === "proxy-open");
    agent.send({ type: "proxy-end", stream: open2.stream, error: "connect ECONNREFUSED" });
    const res2 = await pending2;
    expect(res2.status).toBe(502);
    expect(((await res2.json()) as any).message).toContain("ECONNREFUSED");

    const pending3 = get("/clusters/px4/proxy/api/v1/nodes");
    await agent.next((m) => m.type === "proxy-open");
    agent.ws.close(1000, "agent stopping");
    const res3 = await pending3;
    expect(res3.status).toBe(503);
  });

  it("refuses paths that would leave the member's API, and methods it does not serve", async () => {
    await joined("px5", { heartbeat: false });
    for (const p of ["/clusters/px5/proxy//evil.example/x", "/clusters/px5/proxy/http:%2F%2Fevil/x", "/clusters/px5/proxy/api/..%2fsecrets"]) {
      const res = await get(p);
      expect({ p, status: res.status }).toEqual({ p, status: 400 });
    }
    const res = await exports.default.fetch("https://hub.test/clusters/px5/proxy/api", { method: "OPTIONS", headers: { authorization: `Bearer ${ADMIN}` } });
    expect(res.status).toBe(405);
    const anon = await exports.default.fetch("https://hub.test/clusters/px5/proxy/api");
    expect(anon.status).toBe(401);
  });
});
