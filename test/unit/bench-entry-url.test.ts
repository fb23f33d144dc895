/**
 * bench/channel-fleet.ts `entryUrl` finds the Worker's own socket among the listening sockets of
 * its workerd without dialling the ones opened after it. wrangler's workerd also listens on the
 * DevTools inspector and on workerd's debug port, a Cap'n Proto RPC server: an HTTP request sent
 * there is read as a Cap'n Proto frame claiming some 63 billion words, and workerd logs "RPC
 * connection broken ...; incoming RPC message exceeds size limit" (the log line of the 1,000-cluster
 * bench:crp runs of 2026-11-29/30, which reads like a failure of the hub's own RPC).
 *
 * A stand-in process opens its sockets in workerd's order: the Worker's (HTTP, 200 on /healthz),
 * the inspector's (HTTP, 404), then raw TCP listeners standing in for the debug port, which report
 * any byte they receive. Before, every socket was dialled in /proc/net/tcp's order (by the port's
 * hash): with 12 raw listeners, one of them came before the Worker's socket almost always.
 * Linux only (/proc).
 */
import { fork, type ChildProcess } from "node:child_process";
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { entryUrl, listeningPorts } from "../../bench/channel-fleet.ts";

/** The stand-in: opens its listeners one after another, then tells its parent the ports; reports bytes a raw listener received. */
const STAND_IN = `
const http = require("node:http");
const net = require("node:net");
const listen = (server) => new Promise((r) => server.listen(0, "127.0.0.1", () => r(server.address().port)));
(async () => {
  const entry = await listen(http.createServer((req, res) => res.writeHead(req.url === "/healthz" ? 200 : 404).end("ok")));
  const inspector = await listen(http.createServer((req, res) => res.writeHead(404).end()));
  const raw = [];
  for (let i = 0; i < 12; i++)
    raw.push(await listen(net.createServer((s) => s.on("data", (d) => process.send({ received: d.length })))));
  process.on("message", () => process.send({ pong: true }));
  process.send({ entry, inspector, raw });
})();
`;

/**
 * A ping to the stand-in and its answer: the child's reports of bytes received before it were
 * sent before the answer, and the IPC channel keeps their order.
 */
function roundTrip(c: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (m: { pong?: boolean }) => {
      if (!m.pong) return;
      c.off("message", onMessage);
      resolve();
    };
    c.on("message", onMessage);
    c.send("ping");
  });
}

describe("bench entryUrl", () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill("SIGKILL");
    child = undefined;
  });

  it("answers the first socket that serves /healthz and dials none opened after it", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "flotilla-entry-"));
    const file = path.join(dir, "stand-in.cjs");
    writeFileSync(file, STAND_IN);
    const received: number[] = [];
    const c = fork(file, [], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
    child = c;
    const ports = await new Promise<{ entry: number; inspector: number; raw: number[] }>((resolve) =>
      c.on("message", (m: { entry?: number; inspector: number; raw: number[]; received?: number; pong?: boolean }) => {
        if (m.received !== undefined) received.push(m.received);
        else if (m.entry !== undefined) resolve(m as { entry: number; inspector: number; raw: number[] });
      }),
    );
    // Listed in the order the process opened them (ascending descriptor), whatever /proc/net/tcp's order.
    expect(listeningPorts(c.pid!)).toEqual([ports.entry, ports.inspector, ...ports.raw]);
    expect(await entryUrl(c.pid!, "/healthz", 10_000)).toBe(`http://127.0.0.1:${ports.entry}`);
    await roundTrip(c);
    expect(received).toEqual([]);
  });

  it("tries again later, rather than dial on, when the first socket that answers HTTP is not the Worker's", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "flotilla-entry-"));
    const file = path.join(dir, "stand-in.cjs");
    // The Worker's socket answers 503 (not ready) on /healthz.
    writeFileSync(file, STAND_IN.replace('req.url === "/healthz" ? 200 : 404', "503"));
    const received: number[] = [];
    const c = fork(file, [], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
    child = c;
    await new Promise<void>((resolve) =>
      c.on("message", (m: { received?: number; entry?: number }) => {
        if (m.received !== undefined) received.push(m.received);
        else if (m.entry !== undefined) resolve();
      }),
    );
    await expect(entryUrl(c.pid!, "/healthz", 1_000)).rejects.toThrow(/answered \/healthz with 503/);
    await roundTrip(c);
    expect(received).toEqual([]);
  });
});
