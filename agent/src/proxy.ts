/**
 * The agent's side of the hub's proxy to its member cluster's API (docs/proxy.md): each
 * `proxy-open` on the channel is one request to the cluster's kube-apiserver, made with the
 * agent's own credentials and impersonating the hub user (as Karmada's
 * `pkg/util/proxy/proxy.go` and OCM's cluster-proxy `pkg/serviceproxy` do):
 *
 * - `Impersonate-User` the hub user, `Impersonate-Group` each of its groups but
 *   `system:authenticated` (which the member adds itself), `Impersonate-Uid` its uid, its extras
 *   as `Impersonate-Extra-*`, and the extra `flotilla.io/hub` naming the hub; any `Impersonate-*`,
 *   `Authorization` or cookie header in the request is dropped (the hub never passes them either).
 *   The member's RBAC then decides, so the agent's ServiceAccount needs `impersonate` on users,
 *   groups and userextras (docs/proxy.md "On the member").
 * - The answer goes back as `proxy-head`, the body in binary frames of at most
 *   `PROXY_FRAME_BYTES`, within the stream's credit (`PROXY_WINDOW_BYTES`, granted back by the hub
 *   as its client reads): when the credit runs out the agent stops reading the member's answer, so
 *   a large `logs -f` or watch holds a bounded buffer and never crowds out the channel's other
 *   messages. Then `proxy-end`.
 * - `proxy-cancel`, or the channel closing, aborts the member request.
 *
 * At most `PROXY_MAX_STREAMS` streams run at once (the hub enforces the same); a path that is not
 * absolute, or would leave the cluster's API server, is refused before any request.
 */
import type http from "node:http";
import { PROXY_FRAME_BYTES, PROXY_INLINE_BYTES, PROXY_MAX_STREAMS, PROXY_WINDOW_BYTES, proxyFrame } from "../../src/agent-api/channel-constants.ts";
import type { ChannelHubMessage } from "../../src/agent-api/protocol-answers.ts";
import { SocketStream, type ChannelSend } from "./proxy-socket.ts";
import type { KubeConfig } from "./kube.ts";
import type { Logger } from "./log.ts";

/** The impersonation extra naming the hub a request came through. */
export const HUB_EXTRA = "flotilla.io/hub";

/** The request headers passed to the member (lower case). */
const PASSED_REQUEST_HEADERS = new Set(["accept", "content-type", "user-agent", "kubectl-command", "kubectl-session", "x-request-id"]);
/** Response headers never passed back (hop by hop, or the member's own framing). */
const HOP_HEADERS = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "upgrade", "proxy-connection", "te", "trailer", "set-cookie"]);

type ProxyOpen = Extract<ChannelHubMessage, { type: "proxy-open" }>;

export type { ChannelSend } from "./proxy-socket.ts";

interface Stream {
  abort: AbortController;
  /** Bytes the hub allows to be sent. */
  credit: number;
  /** Body bytes read from the member and not yet sent (over the credit): at most the rest of one read. */
  pending: Buffer[];
  /** The member's answer, once its head came (its body waits in it for credit). */
  res?: http.IncomingMessage;
  /** Sends what the credit allows (set while the body streams). */
  flush?: () => void;
}

/** The `Impersonate-*` headers of a hub user (see the module comment). */
export function impersonationHeaders(user: ProxyOpen["user"], hub: string): Record<string, string | string[]> {
  const h: Record<string, string | string[]> = { "impersonate-user": user.name };
  const groups = user.groups.filter((g) => g !== "system:authenticated");
  if (groups.length) h["impersonate-group"] = groups;
  if (user.uid) h["impersonate-uid"] = user.uid;
  const extra: Record<string, string[]> = { ...(user.extra ?? {}), [HUB_EXTRA]: [hub] };
  for (const [k, v] of Object.entries(extra)) h[`impersonate-extra-${encodeURIComponent(k)}`] = v;
  return h;
}

/**
 * The checked member path of a `proxy-open` (with its query): absolute, no `.` or `..` segment,
 * no scheme or authority (the hub checks the same; checked again here, never trusted).
 * @returns the path and query, or null when refused
 */
export function checkedPath(path: string, query: string): string | null {
  if (!path.startsWith("/") || path.startsWith("//") || /^\/+[a-zA-Z][a-zA-Z0-9+.-]*:/.test(path)) return null;
  for (const raw of path.split("/")) {
    let seg: string;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (seg === "." || seg === ".." || /[\\\0/]/.test(seg)) return null;
  }
  return query ? `${path}?${query}` : path;
}

/**
 * The body of `res` when the whole of it already arrived with its head (`complete`: the HTTP
 * parser saw the message's end in what the socket gave it) and is at most `PROXY_INLINE_BYTES`:
 * read out of the response's buffer at once, and the response drained so that its socket goes
 * back to the pool. Undefined otherwise (a stream, or a large answer): nothing is read. No timer:
 * a watch or `logs -f`, never complete, has its head sent as it came.
 */
export function wholeBody(res: http.IncomingMessage): Buffer | undefined {
  if (!res.complete || res.readableLength > PROXY_INLINE_BYTES) return undefined;
  const chunks: Buffer[] = [];
  for (let c = res.read() as Buffer | null; c !== null; c = res.read() as Buffer | null) chunks.push(c);
  res.resume();
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/** The proxied streams of one agent; see the module comment. */
export class ProxyServer {
  private readonly streams = new Map<number, Stream>();
  /** The WebSocket streams (exec, attach, port-forward: proxy-socket.ts). */
  private readonly sockets = new Map<number, SocketStream>();

  /**
   * @param kc the member cluster's client
   * @param logger the agent's logger
   */
  constructor(
    private readonly kc: KubeConfig,
    private readonly logger: Logger,
  ) {}

  /** How many streams are running. */
  get open(): number {
    return this.streams.size + this.sockets.size;
  }

  /**
   * Whether stream `id` holds bytes of the member's answer that wait for the hub's credit (its
   * credit spent, the member's answer paused): nothing more goes out on it until a grant.
   */
  waitingForCredit(id: number): boolean {
    const s = this.streams.get(id);
    return s !== undefined && s.credit === 0 && (s.pending.length > 0 || (s.res?.readableLength ?? 0) > 0);
  }

  /** Handles a proxy message from the hub; `send` writes on the channel it came on. */
  message(msg: Extract<ChannelHubMessage, { type: "proxy-open" | "proxy-credit" | "proxy-cancel" }>, send: ChannelSend): void {
    const socket = msg.type === "proxy-open" ? undefined : this.sockets.get(msg.stream);
    if (socket) {
      if (msg.type === "proxy-credit") socket.grant(msg.bytes);
      else socket.cancel();
      return;
    }
    switch (msg.type) {
      case "proxy-open":
        if (msg.websocket) this.upgrade(msg, send);
        else void this.run(msg, send);
        return;
      case "proxy-credit": {
        const s = this.streams.get(msg.stream);
        if (!s) return;
        s.credit += msg.bytes;
        s.flush?.();
        return;
      }
      case "proxy-cancel": {
        const s = this.streams.get(msg.stream);
        if (!s) return;
        this.streams.delete(msg.stream);
        s.abort.abort(new Error(`cancelled by the hub: ${msg.reason}`));
        return;
      }
    }
  }

  /**
   * Handles a binary frame from the hub (the stream's number, then a message for a WebSocket
   * stream's member: proxy-socket.ts); a frame of no open stream is dropped.
   */
  data(frame: Buffer): void {
    if (frame.length < 4) return;
    this.sockets.get(frame.readUInt32BE(0))?.data(frame.subarray(4));
  }

  /** Opens a WebSocket stream to the member (proxy-socket.ts). */
  private upgrade(msg: ProxyOpen, send: ChannelSend): void {
    const id = msg.stream;
    const end = (error: string) => send(JSON.stringify({ type: "proxy-end", stream: id, error }));
    if (this.streams.has(id) || this.sockets.has(id)) return void end("stream number in use");
    if (this.open >= PROXY_MAX_STREAMS) return void end(`the agent runs ${PROXY_MAX_STREAMS} proxied requests, the most allowed`);
    const target = checkedPath(msg.path, msg.query);
    if (target === null) return void end(`refused path ${JSON.stringify(msg.path.slice(0, 200))}: it would leave the cluster's API server`);
    const s = new SocketStream(id, send, this.logger, () => this.sockets.delete(id));
    this.sockets.set(id, s);
    const protocols = (msg.headers["sec-websocket-protocol"] ?? [])
      .flatMap((v) => v.split(","))
      .map((p) => p.trim())
      .filter((p) => p.length > 0);
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(msg.headers)) {
      const key = k.toLowerCase();
      if (PASSED_REQUEST_HEADERS.has(key)) headers[key] = v.length === 1 ? v[0]! : v;
    }
    Object.assign(headers, impersonationHeaders(msg.user, msg.hub));
    void s.start(() => this.kc.webSocket(target, protocols, headers));
  }

  /** The channel closed: every stream's member request is aborted. */
  closed(): void {
    for (const s of [...this.sockets.values()]) s.cancel();
    this.sockets.clear();
    for (const s of this.streams.values()) s.abort.abort(new Error("the channel closed"));
    this.streams.clear();
  }

  private async run(msg: ProxyOpen, send: ChannelSend): Promise<void> {
    const id = msg.stream;
    const end = (error?: string) => send(JSON.stringify({ type: "proxy-end", stream: id, ...(error !== undefined ? { error } : {}) }));
    if (this.streams.has(id) || this.sockets.has(id)) return void end("stream number in use");
    if (this.open >= PROXY_MAX_STREAMS) return void end(`the agent runs ${PROXY_MAX_STREAMS} proxied requests, the most allowed`);
    const target = checkedPath(msg.path, msg.query);
    if (target === null) return void end(`refused path ${JSON.stringify(msg.path.slice(0, 200))}: it would leave the cluster's API server`);
    const s: Stream = { abort: new AbortController(), credit: PROXY_WINDOW_BYTES, pending: [] };
    this.streams.set(id, s);
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(msg.headers)) {
      const key = k.toLowerCase();
      if (PASSED_REQUEST_HEADERS.has(key)) headers[key] = v.length === 1 ? v[0]! : v;
    }
    Object.assign(headers, impersonationHeaders(msg.user, msg.hub));
    const contentType = msg.headers["content-type"]?.[0];
    try {
      const res = await this.kc.open(msg.method, target, {
        headers,
        ...(msg.body !== undefined ? { body: Buffer.from(msg.body, "base64") } : {}),
        ...(contentType ? { contentType } : {}),
        accept: msg.headers.accept?.[0] ?? "*/*",
        signal: s.abort.signal,
        timeoutMs: 30_000,
      });
      if (!this.streams.has(id)) {
        res.destroy();
        return;
      }
      const out: Record<string, string[]> = {};
      for (const [k, v] of Object.entries(res.headersDistinct)) if (v && !HOP_HEADERS.has(k)) out[k] = v;
      const whole = msg.inline ? wholeBody(res) : undefined;
      if (whole) {
        // The whole answer in one message (see PROXY_INLINE_BYTES): one event of the hub's object.
        this.streams.delete(id);
        const body = whole.length > 0 ? { body: whole.toString("base64") } : {};
        send(JSON.stringify({ type: "proxy-head", stream: id, status: res.statusCode ?? 502, headers: out, ...body, end: true }));
        return;
      }
      send(JSON.stringify({ type: "proxy-head", stream: id, status: res.statusCode ?? 502, headers: out }));
      s.res = res;
      await this.pipe(id, s, res, send);
      if (this.streams.delete(id)) end();
    } catch (e) {
      if (this.streams.delete(id)) {
        const why = e instanceof Error ? e.message : String(e);
        this.logger.warn(`proxied request failed: ${why}`, { stream: id, method: msg.method, path: msg.path });
        end(`the member cluster's API: ${why}`);
      }
    }
  }

  /**
   * Sends `res`'s body on stream `id` within its credit (see the module comment): what the credit
   * does not cover waits (the member's answer paused) until the hub grants more; resolves once all
   * of it went out.
   */
  private pipe(id: number, s: Stream, res: http.IncomingMessage, send: ChannelSend): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let ended = false;
      let done = false;
      const finish = (e?: Error) => {
        if (done) return;
        done = true;
        s.flush = undefined;
        s.abort.signal.removeEventListener("abort", onAbort);
        if (e && !s.abort.signal.aborted) reject(e);
        else resolve();
      };
      const onAbort = () => {
        res.destroy();
        finish();
      };
      s.abort.signal.addEventListener("abort", onAbort, { once: true });
      // Read in paused mode: what the socket gave since the last read comes out of `res` as one
      // buffer, so a frame carries as much as the credit and PROXY_FRAME_BYTES allow (a stream
      // read chunk by chunk made a frame of each socket read, about 22 KiB: 46 frames, so 46
      // billed messages into the hub's object, per MiB). What the credit does not cover stays in
      // `res`, whose full buffer stops reading the member's socket.
      s.flush = () => {
        while (s.credit > 0) {
          const head = s.pending.shift() ?? (res.read() as Buffer | null);
          if (head === null) break;
          const n = Math.min(head.length, PROXY_FRAME_BYTES, s.credit);
          if (!send(proxyFrame(id, head.subarray(0, n)))) {
            res.destroy();
            return finish(new Error("the channel closed"));
          }
          s.credit -= n;
          if (n < head.length) s.pending.unshift(head.subarray(n));
        }
        if (ended && s.pending.length === 0) finish();
      };
      // Flushed after the event loop's current turn: the reads the socket gave in this turn go
      // out together (no timer: nothing waits for data that has not arrived).
      let scheduled = false;
      res.on("readable", () => {
        if (scheduled) return;
        scheduled = true;
        setImmediate(() => {
          scheduled = false;
          s.flush?.();
        });
      });
      res.on("end", () => {
        ended = true;
        s.flush?.();
      });
      res.on("error", (e) => finish(e));
      res.on("close", () => {
        if (!res.complete) finish(new Error("the member's answer ended early"));
      });
    });
  }
}
