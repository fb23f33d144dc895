/**
 * The cluster object's side of the proxy to its member cluster's API (docs/proxy.md): each
 * proxied request the Worker hands over (src/api/proxy.ts, already authenticated and authorized)
 * becomes one stream on the agent's channel, multiplexed by a stream number the object picks.
 *
 * - `proxy-open` carries the request (method, path, query, the headers the proxy passes, the body,
 *   the hub user the agent impersonates); the agent answers `proxy-head` (status, headers), the
 *   body in binary frames (src/agent-api/channel-constants.ts `proxyFrame`), then `proxy-end`.
 * - Flow control, as HTTP/2's: the agent sends at most {@link PROXY_WINDOW_BYTES} of a stream's
 *   body that the object has not granted back with `proxy-credit`; the object grants bytes as the
 *   Worker's client reads them, so a client that reads slowly holds a bounded buffer here and
 *   stops the agent's reading of its member's answer. At most {@link PROXY_MAX_STREAMS} streams
 *   are open per cluster (429 beyond). An agent sending beyond its credit, or a frame larger than
 *   {@link PROXY_FRAME_BYTES}, has that stream cancelled; the channel and other streams go on.
 * - Cancellation both ways: the client going away cancels the response body, which sends
 *   `proxy-cancel` (the agent aborts its request); `proxy-end` ends the body (with an error when
 *   the agent says so); the channel closing ends every stream.
 *
 * Streams live in memory only: a proxied request holds the object in memory while it runs (the
 * Worker's request to it is open), and an object woken from hibernation has none. An idle cluster
 * with no proxy use costs nothing more.
 */
import { ApiError } from "../../src/k8s/errors.ts";
import {
  PROXY_FRAME_BYTES,
  PROXY_MAX_STREAMS,
  PROXY_STREAM_ID_BYTES,
  PROXY_WINDOW_BYTES,
  type HubMessage,
  type ProxyAgentMessage,
  type ProxyUser,
} from "../../src/agent-api/channel-protocol.ts";
import { SocketStream } from "./proxy-socket.ts";

/** How long the agent has to answer a proxied request's head, in milliseconds (then 504). */
export const PROXY_HEAD_TIMEOUT_MS = 30_000;

/** The response headers of the member's answer that the proxy passes on (lower case). */
const PASSED_RESPONSE_HEADERS = new Set([
  "content-type",
  "cache-control",
  "warning",
  "retry-after",
  "location",
  "x-kubernetes-pf-flowschema-uid",
  "x-kubernetes-pf-prioritylevel-uid",
]);

/**
 * What the Worker hands the cluster's object for one proxied request (the JSON body of its
 * request to the object): the request as the agent is to send it, and who it acts as.
 */
export interface ProxyRequest {
  /** HTTP method. */
  method: string;
  /** The member's path, absolute, checked (src/api/proxy.ts `memberPath`). */
  path: string;
  /** The raw query, without `?`. */
  query: string;
  /** The request headers the proxy passes (lower case; never credentials or `Impersonate-*`). */
  headers: Record<string, string[]>;
  /** The body, base64, when there is one. */
  body?: string;
  /** The hub user the request was authorized as. */
  user: ProxyUser;
  /** The hub's name, passed to the member as the impersonation extra `flotilla.io/hub`. */
  hub: string;
  /** A WebSocket upgrade (exec, attach, port-forward): see cluster/proxy-socket.ts. */
  websocket?: boolean;
}

/**
 * The request header by which the Worker marks a request to the cluster's object as a proxied
 * one: `1` (the request is the JSON body), or for a WebSocket upgrade (a GET without a body) the
 * request as URI-encoded JSON.
 */
export const PROXY_REQUEST_HEADER = "x-flotilla-proxy";

/** One open stream. */
interface Stream {
  id: number;
  ws: WebSocket;
  /** Resolves the head (or a Status response) once the agent answered. */
  answered: (res: Response) => void;
  /** Whether the head came. */
  headed: boolean;
  /** Body chunks received and not yet read by the client. */
  queue: Uint8Array[];
  /** Bytes the agent may still send without more credit. */
  credit: number;
  /** Bytes the client read since the last grant. */
  toGrant: number;
  /** The end: null while open; `ok` or an error message. */
  end: { error?: string } | null;
  /** The body's controller, once the head came. */
  controller?: ReadableStreamDefaultController<Uint8Array>;
  /** A pending `pull` of the body, woken when a chunk or the end arrives. */
  wake?: () => void;
  timer: ReturnType<typeof setTimeout> | null;
  /** Whether the request is a JSON watch, whose quiet stream gets keepalive newlines. */
  watch: boolean;
  /** The keepalive's timer (a JSON watch, once its head came). */
  keepalive: ReturnType<typeof setInterval> | null;
  /** Whether the last byte handed to the client was a newline (an event boundary of a watch). */
  atBoundary: boolean;
  /** Whether a chunk went to the client since the keepalive last looked. */
  busy: boolean;
}

/**
 * How often a quiet JSON watch gets a keepalive newline, in milliseconds (JSON whitespace between
 * events, which client-go's and the other clients' decoders skip, as the hub's own watches write:
 * src/api/watch.ts `WATCH_KEEPALIVE_POLLS`). Where the runtime does not report a client's
 * disconnect (wrangler dev), the write that fails is what ends the stream and frees its place.
 */
export const PROXY_KEEPALIVE_MS = 1000;

/** Whether a raw query asks for a watch (`watch=true` or `watch=1`). */
function isWatch(query: string): boolean {
  return new URLSearchParams(query).getAll("watch").some((v) => v === "1" || v.toLowerCase() === "true");
}

/** A Kubernetes Status answer (JSON) of `e`. */
export function statusAnswer(e: ApiError, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(e.toStatus()), { status: e.code, headers: { "content-type": "application/json", ...headers } });
}

/** The proxied streams of one cluster's channel; see the module comment. */
export class ProxyStreams {
  private readonly streams = new Map<number, Stream>();
  /** The WebSocket streams (cluster/proxy-socket.ts), numbered from the same sequence. */
  private readonly sockets = new Map<number, SocketStream>();
  private next = 1;

  /**
   * @param cluster the cluster's name (for messages)
   * @param socket the agent's open channel, or undefined when its agent is not connected
   */
  constructor(
    private readonly cluster: () => string,
    private readonly socket: () => WebSocket | undefined,
  ) {}

  /** How many streams are open. */
  get open(): number {
    return this.streams.size + this.sockets.size;
  }

  /**
   * Runs one proxied request over the channel: resolves to the member's answer, its body streamed
   * as the agent sends it, or to a Status: 503 when the agent is not connected, 429 when
   * {@link PROXY_MAX_STREAMS} are open, 504 when the agent does not answer within
   * {@link PROXY_HEAD_TIMEOUT_MS}, 502 when it ends the stream without an answer.
   */
  handle(req: ProxyRequest): Promise<Response> {
    const ws = this.socket();
    const name = this.cluster();
    if (!ws) {
      return Promise.resolve(
        statusAnswer(
          new ApiError(
            503,
            "ServiceUnavailable",
            `cluster ${name} has no agent connected to the hub's channel: the proxy reaches a member cluster only through its agent's WebSocket (an agent using the poll transport, or disconnected, cannot be reached)`,
          ),
        ),
      );
    }
    if (this.open >= PROXY_MAX_STREAMS) {
      return Promise.resolve(
        statusAnswer(
          new ApiError(429, "TooManyRequests", `cluster ${name} has ${PROXY_MAX_STREAMS} proxied requests open, the most allowed; try again later`),
          {
            "retry-after": "1",
          },
        ),
      );
    }
    const id = this.allocate();
    if (req.websocket) return this.upgrade(id, ws, req);
    return new Promise<Response>((resolve) => {
      const s: Stream = {
        id,
        ws,
        answered: resolve,
        headed: false,
        queue: [],
        credit: PROXY_WINDOW_BYTES,
        toGrant: 0,
        end: null,
        timer: null,
        watch: isWatch(req.query),
        keepalive: null,
        atBoundary: true,
        busy: false,
      };
      this.streams.set(id, s);
      s.timer = setTimeout(() => {
        if (s.headed) return;
        this.cancel(s, "no answer in time");
        resolve(
          statusAnswer(
            new ApiError(504, "Timeout", `the agent of cluster ${name} did not answer the proxied request within ${PROXY_HEAD_TIMEOUT_MS / 1000} s`),
          ),
        );
      }, PROXY_HEAD_TIMEOUT_MS);
      const open: HubMessage = { type: "proxy-open", stream: id, ...req, inline: true };
      if (!sendTo(ws, JSON.stringify(open))) {
        this.drop(s);
        resolve(statusAnswer(new ApiError(503, "ServiceUnavailable", `cluster ${name}'s agent channel closed`)));
      }
    });
  }

  /** Opens a WebSocket stream (cluster/proxy-socket.ts): resolves to the 101 with the client's socket, or a Status. */
  private upgrade(id: number, ws: WebSocket, req: ProxyRequest): Promise<Response> {
    const name = this.cluster();
    return new Promise<Response>((resolve) => {
      const s = new SocketStream(id, ws, resolve, { cluster: () => name, done: (n) => this.sockets.delete(n) });
      this.sockets.set(id, s);
      s.timer = setTimeout(() => s.timedOut(PROXY_HEAD_TIMEOUT_MS), PROXY_HEAD_TIMEOUT_MS);
      const open: HubMessage = { type: "proxy-open", stream: id, ...req, websocket: true };
      if (!sendTo(ws, JSON.stringify(open))) s.closed();
    });
  }

  /** A stream number not in use (1 .. 2^32-1, wrapping). */
  private allocate(): number {
    for (;;) {
      const id = this.next;
      this.next = this.next >= 0xffffffff ? 1 : this.next + 1;
      if (!this.streams.has(id) && !this.sockets.has(id)) return id;
    }
  }

  /** Handles `proxy-head`, `proxy-end` or `proxy-credit` from the agent on `ws`. */
  message(ws: WebSocket, msg: ProxyAgentMessage): void {
    const socket = this.sockets.get(msg.stream);
    if (socket && socket.ws === ws) return socket.message(msg);
    if (msg.type === "proxy-credit") return; // Only WebSocket streams take the agent's credit.
    const s = this.streams.get(msg.stream);
    if (!s || s.ws !== ws) {
      // A stream this object does not know (ended, or from before a restart): nothing to do but
      // tell the agent to stop it.
      if (msg.type === "proxy-head") sendTo(ws, JSON.stringify({ type: "proxy-cancel", stream: msg.stream, reason: "unknown stream" } satisfies HubMessage));
      return;
    }
    if (msg.type === "proxy-head") {
      if (s.headed) return this.fail(s, "the agent sent a second head");
      if (msg.body !== undefined && !msg.end) return this.fail(s, "a head with a body but no end");
      s.headed = true;
      clearTimeout(s.timer);
      // `identity`: a compressed stream (a watch, `logs -f`) would be held back until its buffer fills.
      const headers = new Headers({ "content-encoding": "identity" });
      for (const [k, values] of Object.entries(msg.headers)) {
        if (!PASSED_RESPONSE_HEADERS.has(k.toLowerCase())) continue;
        for (const v of values) headers.append(k, v);
      }
      const nullBody = msg.status === 204 || msg.status === 304 || msg.status < 200;
      if (msg.end) {
        // The whole answer in one message (`inline`): no body stream, no credit, nothing to cancel.
        this.drop(s);
        s.end = {};
        let body: Uint8Array | null = null;
        if (!nullBody && msg.body) {
          try {
            body = Uint8Array.from(atob(msg.body), (c) => c.charCodeAt(0));
          } catch {
            s.answered(statusAnswer(new ApiError(502, "BadGateway", `the agent of cluster ${this.cluster()} sent a body that is not base64`)));
            return;
          }
        }
        s.answered(new Response(nullBody ? null : (body ?? new Uint8Array(0)), { status: msg.status, headers }));
        return;
      }
      const body = new ReadableStream<Uint8Array>(
        {
          start: (controller) => {
            s.controller = controller;
          },
          pull: () =>
            new Promise<void>((wake) => {
              s.wake = wake;
              this.drain(s);
            }),
          cancel: () => {
            if (!s.end) this.cancel(s, "the client went away");
          },
        },
        { highWaterMark: 0 },
      );
      if (s.watch && (headers.get("content-type") ?? "").startsWith("application/json")) {
        s.keepalive = setInterval(() => this.keepalive(s), PROXY_KEEPALIVE_MS);
      }
      if (nullBody) this.cancel(s, "no body");
      s.answered(new Response(nullBody ? null : body, { status: msg.status, headers }));
      return;
    }
    // proxy-end
    s.end = msg.error !== undefined ? { error: msg.error } : {};
    if (!s.headed) {
      clearTimeout(s.timer);
      this.streams.delete(s.id);
      s.answered(
        statusAnswer(
          new ApiError(
            502,
            "BadGateway",
            `the agent of cluster ${this.cluster()} could not proxy the request: ${msg.error ?? "it ended the stream without an answer"}`,
          ),
        ),
      );
      return;
    }
    this.drain(s);
  }

  /**
   * Handles a binary frame from the agent on `ws`: a piece of a stream's body. Returns false for a
   * frame too short to hold a stream number (not a channel message: the caller closes).
   */
  data(ws: WebSocket, frame: ArrayBuffer): boolean {
    if (frame.byteLength < PROXY_STREAM_ID_BYTES) return false;
    const id = new DataView(frame).getUint32(0);
    const socket = this.sockets.get(id);
    if (socket && socket.ws === ws) {
      socket.data(new Uint8Array(frame, PROXY_STREAM_ID_BYTES));
      return true;
    }
    const s = this.streams.get(id);
    // A stream that ended or was cancelled (the agent was told): its late frames are dropped.
    if (!s || s.ws !== ws) return true;
    const payload = new Uint8Array(frame, PROXY_STREAM_ID_BYTES);
    if (s.end) return true;
    let broken: string | undefined;
    if (!s.headed) broken = "body data outside the stream's body";
    else if (payload.byteLength > PROXY_FRAME_BYTES) broken = `a frame of ${payload.byteLength} bytes, over the ${PROXY_FRAME_BYTES} allowed`;
    else if (payload.byteLength > s.credit) broken = `the agent sent ${payload.byteLength} bytes with ${s.credit} bytes of credit`;
    if (broken !== undefined) {
      this.fail(s, broken);
      return true;
    }
    s.credit -= payload.byteLength;
    if (payload.byteLength > 0) s.queue.push(payload.slice());
    this.drain(s);
    return true;
  }

  /** The agent's channel `ws` closed: its streams end (an error for the client still reading). */
  closed(ws: WebSocket): void {
    for (const socket of [...this.sockets.values()]) if (socket.ws === ws) socket.closed();
    for (const s of [...this.streams.values()]) {
      if (s.ws !== ws) continue;
      if (!s.headed) {
        clearTimeout(s.timer);
        this.streams.delete(s.id);
        s.answered(statusAnswer(new ApiError(503, "ServiceUnavailable", `cluster ${this.cluster()}'s agent disconnected before answering`)));
        continue;
      }
      if (!s.end) s.end = { error: "the agent's channel closed" };
      this.drain(s);
    }
  }

  /** Hands the client what it waits for: the next chunk (granting credit as it goes), or the end. */
  private drain(s: Stream): void {
    if (!s.wake || !s.controller) return;
    const chunk = s.queue.shift();
    if (chunk) {
      const wake = s.wake;
      s.wake = undefined;
      s.controller.enqueue(chunk);
      s.atBoundary = chunk[chunk.byteLength - 1] === 0x0a;
      s.busy = true;
      s.toGrant += chunk.byteLength;
      // Grant in batches (a quarter window), so a stream of small frames does not double the frames.
      if (!s.end && (s.toGrant >= PROXY_WINDOW_BYTES / 4 || s.queue.length === 0)) {
        s.credit += s.toGrant;
        sendTo(s.ws, JSON.stringify({ type: "proxy-credit", stream: s.id, bytes: s.toGrant } satisfies HubMessage));
        s.toGrant = 0;
      }
      wake();
      return;
    }
    if (!s.end) return;
    const wake = s.wake;
    s.wake = undefined;
    this.drop(s);
    if (s.end.error !== undefined) s.controller.error(new Error(`cluster ${this.cluster()}: ${s.end.error}`));
    else s.controller.close();
    wake();
  }

  /** Ends a stream the agent broke: the agent is told to stop it, the client sees the body fail. */
  private fail(s: Stream, why: string): void {
    console.warn(`cluster ${this.cluster()}: proxied stream ${s.id} cancelled: ${why}`);
    sendTo(s.ws, JSON.stringify({ type: "proxy-cancel", stream: s.id, reason: why } satisfies HubMessage));
    s.queue = [];
    s.end = { error: why };
    if (!s.headed) {
      this.drop(s);
      s.answered(statusAnswer(new ApiError(502, "BadGateway", `the agent of cluster ${this.cluster()} broke the proxied stream: ${why}`)));
      return;
    }
    this.drain(s);
  }

  /** Cancels a stream from the hub's side (its client went away): the agent aborts its request. */
  private cancel(s: Stream, reason: string): void {
    sendTo(s.ws, JSON.stringify({ type: "proxy-cancel", stream: s.id, reason } satisfies HubMessage));
    this.drop(s);
  }

  /** Writes a keepalive newline on a quiet JSON watch whose client waits, at an event boundary. */
  private keepalive(s: Stream): void {
    if (s.busy) {
      s.busy = false;
      return;
    }
    if (!s.wake || !s.controller || s.queue.length > 0 || s.end || !s.atBoundary) return;
    const wake = s.wake;
    s.wake = undefined;
    s.controller.enqueue(new Uint8Array([0x0a]));
    wake();
  }

  private drop(s: Stream): void {
    if (s.keepalive !== null) clearInterval(s.keepalive);
    s.keepalive = null;
    if (s.timer !== null) clearTimeout(s.timer);
    s.queue = [];
    this.streams.delete(s.id);
  }
}

function sendTo(ws: WebSocket, text: string): boolean {
  try {
    ws.send(text);
    return true;
  } catch {
    return false;
  }
}
