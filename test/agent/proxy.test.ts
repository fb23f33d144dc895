/**
 * The agent's side of the proxy (agent/src/proxy.ts) against a real simulated cluster: the member
 * sees the hub user impersonated (groups, the `flotilla.io/hub` extra), never a client's
 * `Impersonate-*` or `Authorization` header; the answer goes out within the stream's credit (a
 * log of 1 MiB stops at 256 KiB until the hub grants more); a refused path never reaches the
 * member; `proxy-cancel` aborts the member's request.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROXY_STREAM_ID_BYTES, PROXY_WINDOW_BYTES } from "../../src/agent-api/channel-constants.ts";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { checkedPath, ProxyServer } from "../../agent/src/proxy.ts";
import { createLogger } from "../../agent/src/log.ts";
import { waitFor } from "../wait.ts";

/* eslint-disable @typescript-eslint/no-explicit-any */

let sim: SimulatedCluster;
beforeAll(async () => {
  sim = await startSimulatedCluster({ nodes: 1 });
});
afterAll(async () => {
  await sim?.close();
});

/** A ProxyServer whose channel is an array of what it sent. */
function server() {
  const texts: any[] = [];
  const bodies = new Map<number, Buffer[]>();
  const proxy = new ProxyServer(kubeConfigFromYaml(sim.kubeconfigYaml), createLogger({ write: () => undefined }));
  const send = (frame: string | Uint8Array): boolean => {
    if (typeof frame === "string") texts.push(JSON.parse(frame));
    else {
      const id = new DataView(frame.buffer, frame.byteOffset).getUint32(0);
      const list = bodies.get(id) ?? [];
      list.push(Buffer.from(frame.subarray(PROXY_STREAM_ID_BYTES)));
      bodies.set(id, list);
    }
    return true;
  };
  const body = (id: number) => Buffer.concat(bodies.get(id) ?? []);
  const end = (id: number) => waitFor(`stream ${id} to end`, async () => texts.find((m) => m.type === "proxy-end" && m.stream === id));
  return { proxy, send, texts, body, end };
}

const user = { name: "alice", groups: ["dev", "system:authenticated"], extra: { team: ["a"] } };
/** A hub user the member treats as its admin (group system:masters). */
const admin = { name: "flotilla:admin", groups: ["system:masters", "system:authenticated"] };

describe("the agent's proxy", () => {
  it("impersonates the hub user and drops the client's Impersonate and Authorization headers", async () => {
    const s = server();
    s.proxy.message(
      {
        type: "proxy-open",
        stream: 1,
        method: "POST",
        path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        query: "",
        headers: {
          "content-type": ["application/json"],
          "impersonate-user": ["kubernetes-admin"],
          "impersonate-group": ["system:masters"],
          authorization: ["Bearer stolen"],
        },
        body: Buffer.from(JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" })).toString("base64"),
        user,
        hub: "hub.example.com",
      },
      s.send,
    );
    expect((await s.end(1)).error).toBeUndefined();
    expect(s.texts.find((m) => m.type === "proxy-head")).toMatchObject({ stream: 1, status: 201 });
    const info = JSON.parse(s.body(1).toString()).status.userInfo;
    expect(info.username).toBe("alice");
    expect(info.groups).toEqual(["dev", "system:authenticated"]);
    expect(info.extra).toEqual({ team: ["a"], "flotilla.io/hub": ["hub.example.com"] });
  });

  it("sends no more than its credit; a grant lets more go; a cancel aborts the member's request", async () => {
    const s = server();
    const kc = kubeConfigFromYaml(sim.kubeconfigYaml);
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "big",
        namespace: "default",
        annotations: { "sim.flotilla.dev/log-lines": "0", "sim.flotilla.dev/log-follow-bytes": String(1024 * 1024) },
      },
      spec: { containers: [{ name: "app", image: "nginx" }] },
    };
    expect((await kc.request("POST", "/api/v1/namespaces/default/pods", { body: pod })).status).toBe(201);
    s.proxy.message(
      {
        type: "proxy-open",
        stream: 7,
        method: "GET",
        path: "/api/v1/namespaces/default/pods/big/log",
        query: "follow=true",
        headers: {},
        user: admin,
        hub: "h",
      },
      s.send,
    );
    await waitFor("the window to be used", async () => s.body(7).length === PROXY_WINDOW_BYTES, 5000).catch((e: Error) => {
      throw new Error(`${e.message}: ${s.body(7).length} bytes, ${JSON.stringify(s.texts)}`);
    });
    // The member's answer goes on while the credit is spent: the stream holds it back.
    await waitFor("the stream to wait for credit", async () => s.proxy.waitingForCredit(7));
    expect(s.body(7).length).toBe(PROXY_WINDOW_BYTES);
    s.proxy.message({ type: "proxy-credit", stream: 7, bytes: 100_000 }, s.send);
    await waitFor("the grant to be used", async () => s.body(7).length === PROXY_WINDOW_BYTES + 100_000);
    expect(s.proxy.open).toBe(1);
    s.proxy.message({ type: "proxy-cancel", stream: 7, reason: "client left" }, s.send);
    await waitFor("the stream to go", async () => s.proxy.open === 0);
    expect(s.texts.some((m) => m.type === "proxy-end" && m.stream === 7)).toBe(false);
  });

  it("answers a complete small answer inline in its head when the hub allows it, a stream as frames", async () => {
    const s = server();
    const open = (stream: number, path: string, query = "") =>
      s.proxy.message({ type: "proxy-open", stream, method: "GET", path, query, headers: {}, user: admin, hub: "h", inline: true }, s.send);
    open(11, "/api/v1/namespaces/default");
    const head = await waitFor("the inline head", async () => s.texts.find((m) => m.type === "proxy-head" && m.stream === 11));
    expect(head).toMatchObject({ status: 200, end: true });
    expect(JSON.parse(Buffer.from(head.body, "base64").toString()).metadata.name).toBe("default");
    expect(s.body(11).length).toBe(0);
    expect(s.texts.some((m) => m.type === "proxy-end" && m.stream === 11)).toBe(false);
    expect(s.proxy.open).toBe(0);
    // A 404 too (its Status inline); a watch is never complete at its head: frames, as without `inline`.
    open(12, "/api/v1/namespaces/nope");
    expect(await waitFor("the 404", async () => s.texts.find((m) => m.type === "proxy-head" && m.stream === 12))).toMatchObject({ status: 404, end: true });
    open(13, "/api/v1/namespaces/default/configmaps", "watch=true");
    const watchHead = await waitFor("the watch's head", async () => s.texts.find((m) => m.type === "proxy-head" && m.stream === 13));
    expect(watchHead.end).toBeUndefined();
    expect(watchHead.body).toBeUndefined();
    expect(s.proxy.open).toBe(1);
    s.proxy.message({ type: "proxy-cancel", stream: 13, reason: "done" }, s.send);
    await waitFor("the watch to go", async () => s.proxy.open === 0);
  });

  it("refuses a path that would leave the member's API before any request", async () => {
    const s = server();
    for (const [i, p] of ["/api/../../etc", "//evil/x", "/http:%2F%2Fevil", "relative", "/api/%2e%2e/x"].entries()) {
      s.proxy.message({ type: "proxy-open", stream: 100 + i, method: "GET", path: p, query: "", headers: {}, user, hub: "h" }, s.send);
      expect((await s.end(100 + i)).error).toContain("refused path");
    }
    expect(s.texts.some((m) => m.type === "proxy-head")).toBe(false);
    expect(checkedPath("/api/v1/pods", "watch=1")).toBe("/api/v1/pods?watch=1");
  });
});
