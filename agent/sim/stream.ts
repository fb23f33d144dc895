/**
 * The simulated cluster's streaming subresources over WebSocket, as kube-apiserver serves them to
 * kubectl 1.30+ (KEP-4006; client-go `tools/remotecommand/websocket.go`, apimachinery
 * `pkg/util/httpstream/wsstream`):
 *
 * - `pods/{name}/exec` and `pods/{name}/attach` with the subprotocol `v5.channel.k8s.io` (or
 *   `v4.channel.k8s.io`): each message is one channel byte then data. Channel 0 is stdin, 1
 *   stdout, 2 stderr (none with a TTY), 3 the error channel (the process's end as a `Status`
 *   JSON: `Success`, or `Failure` with reason `NonZeroExitCode` and the code as cause `ExitCode`),
 *   4 resize (`{"Width":W,"Height":H}`); v5's channel 255 closes a stream (`[255, 0]`: stdin
 *   ended). Query: `command` (repeated; exec), `container`, `stdin`, `stdout`, `stderr`, `tty`.
 *   The processes are agent/sim/exec.ts's.
 * - `pods/{name}/portforward` with `SPDY/3.1+portforward.k8s.io`: SPDY tunnelled in the
 *   WebSocket's binary messages (client-go `tools/portforward/tunneling_connection.go`), served by
 *   agent/sim/portforward.ts: every port of the Pod is an echo server.
 *
 * Authorization as kube-apiserver's: verb `create` on `pods/exec`, `pods/attach`,
 * `pods/portforward` (AuthorizePodWebsocketUpgradeCreatePermission). A refusal before the upgrade
 * is an HTTP answer with a Status (403, 404, 400); an upgrade that is not a WebSocket (SPDY/3.1)
 * is 400: the simulated cluster speaks only WebSocket.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import type { Cluster } from "./cluster.ts";
import type { SimAuth } from "./auth.ts";
import { ApiError, badRequest } from "./errors.ts";
import { PodFiles, SimProcess, STDIN_HIGH_WATER } from "./exec.ts";
import { servePortForward } from "./portforward.ts";

/** The remote command subprotocols served, best first. */
const CHANNEL_PROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io"];
/** The port-forward subprotocol (SPDY tunnelled over WebSocket). */
export const PORT_FORWARD_PROTOCOL = "SPDY/3.1+portforward.k8s.io";
/** Output held in a socket's buffer before a process waits (backpressure). */
const HIGH_WATER = 256 * 1024;

const STATUS_TEXT: Record<number, string> = { 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 500: "Internal Server Error" };

/** Counts of the streams served (`GET /sim/streams`: what the member saw). */
export interface StreamStats {
  /** Upgrades accepted since start. */
  opened: number;
  /** Streams open now. */
  open: number;
  /** Upgrade requests seen (accepted or refused). */
  requests: number;
}

/** Writes `ws`'s output and waits while its buffer is above {@link HIGH_WATER}. */
export async function drained(ws: WebSocket): Promise<void> {
  while (ws.bufferedAmount > HIGH_WATER && ws.readyState === ws.OPEN) await new Promise((r) => setTimeout(r, 2));
}

/** The streaming subresources of one simulated cluster; see the module comment. */
export class SimStreams {
  /** The subprotocol chosen for each upgrade request (answered in the `headers` event). */
  private readonly chosen = new WeakMap<IncomingMessage, string>();
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 1024 * 1024 });
  private readonly files = new Map<string, PodFiles>();
  private readonly live = new Set<WebSocket>();
  readonly stats: StreamStats = { opened: 0, open: 0, requests: 0 };

  constructor(
    private readonly cluster: Cluster,
    private readonly auth: SimAuth,
  ) {
    this.wss.on("headers", (headers, req) => {
      const p = this.chosen.get(req);
      if (p) headers.push(`Sec-WebSocket-Protocol: ${p}`);
    });
  }

  /** The files of a Pod's container (made at its first use). */
  filesOf(namespace: string, pod: string, container: string): PodFiles {
    const key = `${namespace}/${pod}/${container}`;
    let f = this.files.get(key);
    if (!f) this.files.set(key, (f = new PodFiles()));
    return f;
  }

  /** Handles the HTTP server's `upgrade` event. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.stats.requests++;
    try {
      this.accept(req, socket, head);
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError(500, "InternalError", `Internal error occurred: ${e instanceof Error ? e.message : String(e)}`);
      const body = JSON.stringify(err.toStatus());
      socket.end(
        `HTTP/1.1 ${err.code} ${STATUS_TEXT[err.code] ?? "Error"}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
  }

  /** Ends every stream (the cluster stops). */
  close(): void {
    for (const ws of this.live) ws.terminate();
    this.wss.close();
  }

  private accept(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? "/", "http://sim.local");
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/(exec|attach|portforward)\/?$/.exec(url.pathname);
    if (!m) throw badRequest(`the simulated cluster serves WebSocket upgrades only on pods' exec, attach and portforward, not ${url.pathname}`);
    const [, namespace, name, sub] = m.map((s) => decodeURIComponent(s)) as [string, string, string, "exec" | "attach" | "portforward"];
    const user = this.auth.userOf(req);
    this.auth.authorize(user, { verb: "create", apiGroup: "", resource: "pods", subresource: sub, name, namespace });
    const rt = this.cluster.registry.byPlural("", "v1", "pods")!;
    const pod = this.cluster.get({ rt, namespace, name }) as { spec?: { containers?: { name?: string }[] } };
    if ((req.headers.upgrade ?? "").toLowerCase() !== "websocket") {
      throw badRequest(`unable to upgrade: the simulated cluster serves ${sub} over WebSocket only, not ${JSON.stringify(req.headers.upgrade ?? "")}`);
    }
    const offered = (req.headers["sec-websocket-protocol"] ?? "")
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean);
    const q = url.searchParams;
    let protocol: string | undefined;
    if (sub === "portforward") protocol = offered.includes(PORT_FORWARD_PROTOCOL) ? PORT_FORWARD_PROTOCOL : undefined;
    else protocol = CHANNEL_PROTOCOLS.find((p) => offered.includes(p));
    if (!protocol) throw badRequest(`unable to upgrade: none of the subprotocols ${JSON.stringify(offered)} is supported for ${sub}`);
    const containers = (pod.spec?.containers ?? []).map((c) => c.name ?? "");
    const container = q.get("container") || containers[0] || "";
    if (sub !== "portforward" && !containers.includes(container)) throw badRequest(`container ${container} is not valid for pod ${name}`);
    const argv = sub === "exec" ? q.getAll("command") : ["sh"];
    if (sub === "exec" && argv.length === 0) throw badRequest("you must specify at least 1 command");
    const chosen = protocol;
    // `ws` parses the offered subprotocols as RFC 7230 tokens, which port-forward's (`SPDY/3.1+...`,
    // a `/`) is not: it never sees them, and the chosen one is answered here.
    this.chosen.set(req, chosen);
    delete req.headers["sec-websocket-protocol"];
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      this.stats.opened++;
      this.stats.open++;
      this.live.add(ws);
      ws.on("close", () => {
        this.stats.open--;
        this.live.delete(ws);
      });
      if (sub === "portforward") return servePortForward(ws, drained);
      this.session(ws, chosen, argv, name, this.filesOf(namespace, name, container), q);
    });
  }

  /** An exec or attach session over `v5.channel.k8s.io` / `v4.channel.k8s.io`. */
  private session(ws: WebSocket, protocol: string, argv: string[], pod: string, fs: PodFiles, q: URLSearchParams): void {
    const flag = (k: string) => q.get(k) === "true" || q.get(k) === "1";
    const tty = flag("tty");
    const wantStdin = flag("stdin");
    const send = (channel: number, data: Buffer | string) => {
      if (ws.readyState !== ws.OPEN) return;
      const b = typeof data === "string" ? Buffer.from(data) : data;
      ws.send(Buffer.concat([Buffer.from([channel]), b]));
    };
    const proc = new SimProcess(
      argv,
      pod,
      fs,
      {
        stdout: (d) => send(1, d),
        stderr: (d) => (tty ? send(1, d) : flag("stderr") ? send(2, d) : undefined),
        drained: () => drained(ws),
      },
      tty,
    );
    if (!wantStdin) proc.stdinEnd();
    proc.onDrain = () => {
      if (ws.isPaused) ws.resume();
    };
    ws.on("message", (data: Buffer, isBinary) => {
      if (!isBinary || data.length === 0) return;
      const channel = data[0];
      if (channel === 0 && wantStdin) {
        proc.stdin(data.subarray(1));
        // A process that does not read its stdin stops the socket's reading, as a full pipe would.
        if (proc.buffered >= STDIN_HIGH_WATER) ws.pause();
      } else if (channel === 4) {
        try {
          const size = JSON.parse(data.subarray(1).toString("utf8")) as { Width?: number; Height?: number };
          proc.resize(Number(size.Width ?? 80), Number(size.Height ?? 24));
        } catch {
          // A malformed resize is ignored, as kubelet's.
        }
      } else if (channel === 255 && protocol === "v5.channel.k8s.io" && data[1] === 0) proc.stdinEnd();
    });
    ws.on("close", () => proc.kill());
    void proc.run().then(async (code) => {
      await drained(ws);
      const status =
        code === 0
          ? { metadata: {}, status: "Success" }
          : {
              metadata: {},
              status: "Failure",
              message: `command terminated with non-zero exit code: error executing command [${argv.join(" ")}], exit code ${code}`,
              reason: "NonZeroExitCode",
              details: { causes: [{ reason: "ExitCode", message: String(code) }] },
            };
      send(3, JSON.stringify(status));
      // A socket whose reading stopped (stdin never read) cannot see the close's answer: ended outright.
      if (ws.isPaused) ws.terminate();
      else if (ws.readyState === ws.OPEN) ws.close(1000);
    });
  }
}
