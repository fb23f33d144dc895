/**
 * A counting reverse proxy for tests and benchmarks of what an agent sends (bench/idle.ts,
 * test/e2e/ws-transport.test.ts): every HTTP request is passed to `target` and recorded as
 * `METHOD path` (query included) with its time; WebSocket upgrades are passed through as a raw
 * tunnel and counted apart, or, with `refuseUpgrades`, answered 426 as a proxy that does not pass
 * WebSockets may.
 */
import http from "node:http";
import net, { type AddressInfo } from "node:net";

/** One request the proxy saw: when (`performance.now()`, milliseconds) and `METHOD path`, or `UPGRADE path`. */
export interface SeenRequest {
  at: number;
  what: string;
}

/** A running counting proxy. */
export interface CountingProxy {
  /** The proxy's URL (http://127.0.0.1:<port>). */
  url: string;
  /** The HTTP requests and upgrades seen so far, in order. */
  seen: SeenRequest[];
  /** Upgrades asked for so far (passed through or refused). */
  upgrades(): number;
  /** Closes the proxy, its connections and tunnels. */
  close(): Promise<void>;
}

/**
 * Starts a counting proxy in front of `target` (an http:// URL) on a free port of 127.0.0.1.
 * @param opts.refuseUpgrades answer every WebSocket upgrade 426 instead of passing it through
 */
export async function startCountingProxy(target: string, opts: { refuseUpgrades?: boolean } = {}): Promise<CountingProxy> {
  const to = new URL(target);
  const seen: SeenRequest[] = [];
  let upgrades = 0;
  const tunnels = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    seen.push({ at: performance.now(), what: `${req.method} ${req.url}` });
    const up = http.request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  server.on("upgrade", (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    upgrades++;
    seen.push({ at: performance.now(), what: `UPGRADE ${req.url}` });
    if (opts.refuseUpgrades) {
      socket.end("HTTP/1.1 426 Upgrade Required\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    const upstream = net.connect(Number(to.port), to.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    tunnels.add(socket).add(upstream);
    const drop = () => {
      socket.destroy();
      upstream.destroy();
    };
    upstream.on("error", drop);
    socket.on("error", drop);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    upgrades: () => upgrades,
    close: () =>
      new Promise<void>((r) => {
        for (const t of tunnels) t.destroy();
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
