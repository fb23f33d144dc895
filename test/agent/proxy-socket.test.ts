/**
 * The proxy's WebSocket streams on the agent's side (agent/src/proxy-socket.ts) against a real
 * simulated cluster, and the simulated cluster's streams (agent/sim/stream.ts) with the real
 * kubectl 1.32 straight at it: the member's subprotocol goes back in `proxy-head` 101 (port-forward's
 * `SPDY/3.1+portforward.k8s.io` too, which is no RFC 7230 token); each message is one frame with
 * its kind; the member's output stops at the stream's credit until the hub grants more; the hub's
 * messages reach the member and are granted back; a refused upgrade passes the member's Status;
 * `proxy-cancel` closes the member's socket. Directly: `kubectl exec`, `cp` both ways and
 * `port-forward` against the simulator; resize and the exit code's Status at the protocol level.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { PROXY_STREAM_ID_BYTES, PROXY_WINDOW_BYTES, PROXY_WS_BINARY, proxyFrame } from "../../src/agent-api/channel-constants.ts";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { ProxyServer } from "../../agent/src/proxy.ts";
import type { ChannelHubMessage } from "../../src/agent-api/protocol-answers.ts";
import { createLogger } from "../../agent/src/log.ts";
import { waitFor } from "../wait.ts";

/* eslint-disable @typescript-eslint/no-explicit-any */

/** kubectl 1.32 (the 1.32 binary beside a version-dispatching `kubectl`, when there is one). */
const KUBECTL = (() => {
  for (const d of (process.env.PATH ?? "").split(":")) {
    const k = path.join(d, "kubectl");
    if (!existsSync(k)) continue;
    const pinned = path.join(path.dirname(realpathSync(k)), "kubectl.1.32");
    return existsSync(pinned) ? pinned : k;
  }
  return "kubectl";
})();

let sim: SimulatedCluster;
const dir = mkdtempSync(path.join(tmpdir(), "flotilla-proxy-socket-"));
beforeAll(async () => {
  sim = await startSimulatedCluster({ nodes: 1 });
  const r = await kubectlRun(
    ["apply", "-f", "-"],
    "apiVersion: v1\nkind: Pod\nmetadata: {name: shell, namespace: default}\nspec:\n  containers: [{name: app, image: busybox, stdin: true}]\n",
  );
  expect(r.code, r.err).toBe(0);
});
afterAll(async () => {
  await sim?.close();
});

function kubectlRun(args: string[], input?: string): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(KUBECTL, ["--kubeconfig", sim.kubeconfigPath, ...args], { cwd: dir });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("close", (code) => resolve({ code: code ?? -1, out, err }));
    child.stdin.end(input ?? "");
  });
}

/** A ProxyServer whose channel is what it sent: JSON messages, and each stream's frames. */
function server() {
  const texts: any[] = [];
  const frames = new Map<number, Buffer[]>();
  const proxy = new ProxyServer(kubeConfigFromYaml(sim.kubeconfigYaml), createLogger({ write: () => undefined }));
  const send = (frame: string | Uint8Array): boolean => {
    if (typeof frame === "string") texts.push(JSON.parse(frame));
    else {
      const id = new DataView(frame.buffer, frame.byteOffset).getUint32(0);
      const list = frames.get(id) ?? [];
      list.push(Buffer.from(frame.subarray(PROXY_STREAM_ID_BYTES)));
      frames.set(id, list);
    }
    return true;
  };
  /** Stream `id`'s messages from the member (kind byte first). */
  const messages = (id: number) => frames.get(id) ?? [];
  /** What the member wrote on a v5 channel of stream `id`. */
  const channel = (id: number, ch: number) =>
    Buffer.concat(
      messages(id)
        .filter((m) => m[0] === PROXY_WS_BINARY && m[1] === ch)
        .map((m) => m.subarray(2)),
    ).toString();
  const toMember = (id: number, bytes: Buffer) => proxy.data(Buffer.from(proxyFrame(id, Buffer.concat([Buffer.from([PROXY_WS_BINARY]), bytes]))));
  return { proxy, send, texts, messages, channel, toMember };
}

const admin = { name: "flotilla:admin", groups: ["system:masters", "system:authenticated"] };
const open = (stream: number, path: string, query: string, protocols: string) =>
  ({
    type: "proxy-open",
    stream,
    method: "GET",
    path,
    query,
    headers: { "sec-websocket-protocol": [protocols] },
    user: admin,
    hub: "hub.example",
    websocket: true,
  }) satisfies ChannelHubMessage;

describe("the agent's WebSocket streams", () => {
  it("opens the member's WebSocket, relays messages both ways, and passes the exit Status", async () => {
    const s = server();
    s.proxy.message(
      open(1, "/api/v1/namespaces/default/pods/shell/exec", "command=sh&stdin=true&stdout=true&stderr=true", "v5.channel.k8s.io, v4.channel.k8s.io"),
      s.send,
    );
    await waitFor("the head", async () => s.texts.find((m) => m.type === "proxy-head"));
    expect(s.texts.find((m) => m.type === "proxy-head")).toEqual({
      type: "proxy-head",
      stream: 1,
      status: 101,
      headers: { "sec-websocket-protocol": ["v5.channel.k8s.io"] },
    });
    s.toMember(1, Buffer.from("\u0000echo relayed\nexit 4\n"));
    await waitFor("the end", async () => s.texts.find((m) => m.type === "proxy-end"));
    expect(s.channel(1, 1)).toBe("relayed\n");
    const status = JSON.parse(s.channel(1, 3));
    expect(status).toMatchObject({ status: "Failure", reason: "NonZeroExitCode", details: { causes: [{ reason: "ExitCode", message: "4" }] } });
    // What the hub sent was written to the member and granted back.
    expect(s.texts.filter((m) => m.type === "proxy-credit").reduce((n, m) => n + m.bytes, 0)).toBe("\u0000echo relayed\nexit 4\n".length);
    expect(s.texts.find((m) => m.type === "proxy-end")).toEqual({ type: "proxy-end", stream: 1 });
    expect(s.proxy.open).toBe(0);
  });

  it("sends the member's output within the stream's credit, then more as the hub grants it", async () => {
    const s = server();
    s.proxy.message(
      open(2, "/api/v1/namespaces/default/pods/shell/exec", "command=head&command=-c&command=1048576&command=/dev/zero&stdout=true", "v5.channel.k8s.io"),
      s.send,
    );
    const sent = () => s.messages(2).reduce((n, m) => n + m.length - 1, 0);
    await waitFor("the window filled", async () => sent() >= PROXY_WINDOW_BYTES - 32 * 1024);
    // Nothing more without credit.
    await new Promise((r) => setImmediate(r));
    expect(sent()).toBeLessThanOrEqual(PROXY_WINDOW_BYTES);
    for (let granted = 0; !s.texts.find((m) => m.type === "proxy-end");) {
      const now = sent();
      if (now > granted) {
        s.proxy.message({ type: "proxy-credit", stream: 2, bytes: now - granted }, s.send);
        granted = now;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(s.channel(2, 1).length).toBe(1024 * 1024);
  });

  it("negotiates port-forward's SPDY/3.1+portforward.k8s.io, which is no RFC 7230 token", async () => {
    const s = server();
    s.proxy.message(open(3, "/api/v1/namespaces/default/pods/shell/portforward", "", "SPDY/3.1+portforward.k8s.io"), s.send);
    await waitFor("the head", async () => s.texts.find((m) => m.type === "proxy-head"));
    expect(s.texts[0]).toMatchObject({ status: 101, headers: { "sec-websocket-protocol": ["SPDY/3.1+portforward.k8s.io"] } });
    s.proxy.message({ type: "proxy-cancel", stream: 3, reason: "the client went away" }, s.send);
    expect(s.proxy.open).toBe(0);
  });

  it("passes a refused upgrade on as the member's status and Status", async () => {
    const s = server();
    s.proxy.message(open(4, "/api/v1/namespaces/default/pods/nowhere/exec", "command=sh&stdout=true", "v5.channel.k8s.io"), s.send);
    await waitFor("the end", async () => s.texts.find((m) => m.type === "proxy-end"));
    expect(s.texts[0]).toMatchObject({ type: "proxy-head", status: 404, headers: { "content-type": ["application/json"] } });
    expect(JSON.parse(Buffer.concat(s.messages(4)).toString())).toMatchObject({ kind: "Status", reason: "NotFound" });
  });
});

describe("the simulated cluster's streams, with kubectl straight at it", () => {
  it("kubectl exec, cp both ways and port-forward", async () => {
    const r = await kubectlRun(["exec", "-i", "shell", "--", "sh"], "echo direct\nexit 2\n");
    expect(r).toMatchObject({ code: 2, out: "direct\n" });
    const data = randomBytes(100_000);
    writeFileSync(path.join(dir, "a.bin"), data);
    expect((await kubectlRun(["cp", "a.bin", "shell:/tmp/a.bin"])).code).toBe(0);
    expect((await kubectlRun(["cp", "shell:/tmp/a.bin", "b.bin"])).code).toBe(0);
    expect(readFileSync(path.join(dir, "b.bin")).equals(data)).toBe(true);
    const pf = spawn(KUBECTL, ["--kubeconfig", sim.kubeconfigPath, "port-forward", "pod/shell", ":9000"], { cwd: dir });
    let printed = "";
    pf.stdout.on("data", (d: Buffer) => (printed += d.toString()));
    try {
      await waitFor("the local port", async () => /127\.0\.0\.1:\d+ ->/.test(printed));
      const port = Number(/127\.0\.0\.1:(\d+) ->/.exec(printed)![1]);
      const echoed = await new Promise<string>((resolve, reject) => {
        let got = "";
        const sock = connect(port, "127.0.0.1", () => sock.write("ping\n"));
        sock.on("data", (d) => {
          got += d.toString();
          sock.end();
        });
        sock.on("close", () => resolve(got));
        sock.on("error", reject);
      });
      expect(echoed).toBe("ping\n");
    } finally {
      pf.kill("SIGTERM");
    }
  });

  it("resize (channel 4) reaches the terminal; v5's close signal ends stdin", async () => {
    const ws = new WebSocket(`${sim.url.replace(/^http/, "ws")}/api/v1/namespaces/default/pods/shell/exec?command=sh&stdin=true&stdout=true&tty=true`, [
      "v5.channel.k8s.io",
    ]);
    await new Promise((r, j) => (ws.once("open", r), ws.once("error", j)));
    let out = "";
    const done = new Promise<string>((resolve) => ws.on("close", () => resolve(out)));
    ws.on("message", (d: Buffer) => (out += `${d[0]}:${d.subarray(1).toString()}|`));
    ws.send(Buffer.concat([Buffer.from([4]), Buffer.from('{"Width":100,"Height":30}')]));
    ws.send(Buffer.concat([Buffer.from([0]), Buffer.from("stty size\r")]));
    await waitFor("the size", async () => out.includes("30 100"));
    ws.send(Buffer.from([255, 0]));
    expect(await done).toContain('3:{"metadata":{},"status":"Success"}');
  });
});
