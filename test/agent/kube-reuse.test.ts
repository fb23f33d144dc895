/**
 * The agent's client of its member cluster (agent/src/kube.ts) and a kept-alive socket the
 * server closes as the client reuses it (their idle timeouts crossing, as under load): an
 * idempotent request goes again once on a new socket; a POST fails as it did.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeConfig } from "../../agent/src/kube.ts";

let server: net.Server;
let url = "";
let connections = 0;

beforeAll(async () => {
  // Each connection answers its first request (kept alive) and drops the socket at its second.
  server = net.createServer((socket) => {
    connections++;
    let requests = 0;
    socket.on("data", () => {
      requests++;
      if (requests > 1) return socket.destroy();
      socket.write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});
afterAll(() => server.close());

describe("a kept-alive socket closed as it is reused", () => {
  it("sends an idempotent request again on a new socket, not a POST", async () => {
    const kc = new KubeConfig({ server: url, insecureSkipTlsVerify: false });
    try {
      expect((await kc.request("GET", "/api/v1/namespaces/a")).status).toBe(200);
      expect(connections).toBe(1);
      // The second GET goes on the kept-alive socket, which the server drops: sent again on a new one.
      expect((await kc.request("GET", "/api/v1/namespaces/b")).status).toBe(200);
      expect(connections).toBe(2);
      const res = await kc.open("GET", "/api/v1/namespaces/c");
      expect(res.statusCode).toBe(200);
      res.resume();
      await new Promise((r) => res.on("end", r));
      // A POST on the reused socket is not sent again: its error is the caller's.
      await new Promise((r) => setImmediate(r));
      await expect(kc.request("POST", "/api/v1/namespaces", { body: {} })).rejects.toThrow(/socket hang up|ECONNRESET/);
    } finally {
      kc.close();
    }
  });
});
