/**
 * A proxied WebSocket stream (docs/proxy.md "WebSocket streams"): `kubectl exec`, `attach`, `cp`
 * (Kubernetes' `v5.channel.k8s.io` subprotocol, KEP-4006) and `port-forward` (SPDY tunnelled over
 * a WebSocket, `SPDY/3.1+portforward.k8s.io`, since 1.31) through the hub. The Worker hands the
 * client's upgrade to the cluster's object (src/api/proxy.ts); the object sends `proxy-open` with
 * `websocket: true`, the agent opens the same WebSocket to its member's API server and answers
 * `proxy-head` 101 with the subprotocol the member chose (or the member's refusal, passed on as
 * its status and body). The object then accepts the client's WebSocket and relays messages as
 * binary frames on the channel, each one whole message (the subprotocols frame by message: the
 * first byte of a `v5.channel.k8s.io` message is its channel), its payload prefixed with the
 * message's kind ({@link PROXY_WS_BINARY}, {@link PROXY_WS_TEXT}).
 *
 * Flow control, both ways, in the stream's credit window ({@link PROXY_WINDOW_BYTES}):
 * - agent to client: the agent sends within the credit the object grants back (`proxy-credit`)
 *   once it handed the message to the client's socket;
 * - client to agent: the object sends within the credit the agent grants back (`proxy-credit`
 *   from the agent, once written to the member's socket). A Worker cannot stop reading its
 *   client's WebSocket, so what the credit does not cover waits here, at most
 *   {@link PROXY_WS_QUEUE_BYTES}: a client sending faster than that (a flood) has its stream
 *   closed with 1008. A message over {@link PROXY_FRAME_BYTES} closes the stream with 1009
 *   (kubectl's and kube-apiserver's messages are at most 32 KiB).
 *
 * Closing: the client closing (or going away) sends `proxy-cancel`, and the agent closes the
 * member's WebSocket; `proxy-end` from the agent closes the client's WebSocket (1000, or 1011 with
 * the error); the channel closing closes the client's WebSocket with 1011.
 *
 * Why the client's socket is accepted with `accept()`, not the Hibernation API
 * (`ctx.acceptWebSocket`, which the agent's channel uses): a stream's state (its credit both
 * ways, the client's queued messages, which channel stream it is) lives in this object's memory,
 * and the agent keeps streaming the member's side meanwhile; an object that hibernated during an
 * idle `exec` would come back without it and the session would break. So an open exec, attach,
 * cp or port-forward keeps its cluster's object in memory (billed duration) until it closes;
 * the object hibernates again once the last one closed, and a cluster no one proxies to costs
 * nothing (docs/proxy.md, docs/scale.md).
 */
import { ApiError } from "../../src/k8s/errors.ts";
import {
  PROXY_FRAME_BYTES,
  PROXY_WINDOW_BYTES,
  PROXY_WS_BINARY,
  PROXY_WS_QUEUE_BYTES,
  PROXY_WS_TEXT,
  proxyFrame,
  type HubMessage,
  type ProxyAgentMessage,
} from "../../src/agent-api/channel-protocol.ts";

/** Most bytes of a member's refusal (a non-101 answer to the upgrade) passed back to the client. */
const REFUSAL_BODY_BYTES = 64 * 1024;

/** What a {@link SocketStream} needs of its cluster's streams. */
export interface SocketStreamHost {
  /** The cluster's name (for messages). */
  cluster(): string;
  /** The stream ended: its number is free. */
  done(id: number): void;
}

/** One proxied WebSocket stream; see the module comment. */
export class SocketStream {
  /** Whether the agent answered its head. */
  headed = false;
  /** The client's WebSocket (the server end of the pair), once the member accepted the upgrade. */
  private client: WebSocket | undefined;
  /** The member refused the upgrade: its status, headers and body so far, passed on at the end. */
  private refusal: { status: number; headers: Headers; body: Uint8Array[]; size: number } | undefined;
  /** Bytes the agent may still send to the client without more credit. */
  private recvCredit = PROXY_WINDOW_BYTES;
  /** Bytes handed to the client since the last grant to the agent. */
  private toGrant = 0;
  private grantScheduled = false;
  /** Bytes the object may still send to the agent (the agent's grants). */
  private sendCredit = PROXY_WINDOW_BYTES;
  /** The client's messages waiting for the agent's credit (kind byte first). */
  private queue: Uint8Array[] = [];
  private queued = 0;
  private finished = false;
  timer: ReturnType<typeof setTimeout> | null = null;

  /**
   * @param id the stream's number
   * @param ws the agent's channel
   * @param answered resolves the Worker's request: 101 with the client's socket, or a Status
   * @param host the cluster's streams
   */
  constructor(
    readonly id: number,
    readonly ws: WebSocket,
    private readonly answered: (res: Response) => void,
    private readonly host: SocketStreamHost,
  ) {}

  /** Handles `proxy-head`, `proxy-end` or the agent's `proxy-credit` of this stream. */
  message(msg: ProxyAgentMessage): void {
    if (this.finished) return;
    if (msg.type === "proxy-head") {
      if (this.headed) return this.fail("the agent sent a second head");
      this.headed = true;
      if (this.timer !== null) clearTimeout(this.timer);
      if (msg.status !== 101) {
        const headers = new Headers();
        const type = msg.headers["content-type"]?.[0];
        if (type) headers.set("content-type", type);
        this.refusal = { status: msg.status, headers, body: [], size: 0 };
        return;
      }
      const pair = new WebSocketPair();
      const [client, server] = [pair[0], pair[1]];
      // Binary messages as ArrayBuffers (the runtime's default is a Blob under the standard binaryType).
      server.binaryType = "arraybuffer";
      server.accept();
      this.client = server;
      server.addEventListener("message", (e) => this.fromClient(e.data));
      server.addEventListener("close", (e) => this.clientClosed(`the client closed the WebSocket (${e.code})`));
      server.addEventListener("error", () => this.clientClosed("the client's WebSocket failed"));
      const headers = new Headers();
      const protocol = msg.headers["sec-websocket-protocol"]?.[0];
      if (protocol) headers.set("sec-websocket-protocol", protocol);
      this.answered(new Response(null, { status: 101, webSocket: client, headers }));
      return;
    }
    if (msg.type === "proxy-credit") {
      this.sendCredit = Math.min(PROXY_WINDOW_BYTES, this.sendCredit + msg.bytes);
      this.pump();
      return;
    }
    // proxy-end
    if (!this.headed) {
      this.answer(
        502,
        "BadGateway",
        `the agent of cluster ${this.host.cluster()} could not open the WebSocket: ${msg.error ?? "it ended the stream without an answer"}`,
      );
      return;
    }
    if (this.refusal) {
      const r = this.refusal;
      this.end();
      const body = new Uint8Array(r.size);
      let at = 0;
      for (const b of r.body) {
        body.set(b, at);
        at += b.byteLength;
      }
      this.answered(new Response(body, { status: r.status, headers: r.headers }));
      return;
    }
    this.closeClient(msg.error === undefined ? 1000 : 1011, msg.error ?? "");
    this.end();
  }

  /** A binary frame of this stream from the agent: a message for the client (or the refusal's body). */
  data(payload: Uint8Array): void {
    if (this.finished) return;
    if (!this.headed) return this.fail("data before the stream's head");
    if (this.refusal) {
      if (this.refusal.size + payload.byteLength <= REFUSAL_BODY_BYTES) {
        this.refusal.body.push(payload.slice());
        this.refusal.size += payload.byteLength;
      }
      return;
    }
    const size = payload.byteLength - 1;
    if (size < 0 || size > PROXY_FRAME_BYTES) return this.fail(`a frame of ${payload.byteLength} bytes, over the ${PROXY_FRAME_BYTES} allowed`);
    if (size > this.recvCredit) return this.fail(`the agent sent ${size} bytes with ${this.recvCredit} bytes of credit`);
    this.recvCredit -= size;
    const kind = payload[0];
    try {
      if (kind === PROXY_WS_TEXT) this.client?.send(new TextDecoder().decode(payload.subarray(1)));
      else if (kind === PROXY_WS_BINARY) this.client?.send(payload.slice(1));
      else return this.fail(`a message of unknown kind ${kind}`);
    } catch {
      return this.clientClosed("the client's WebSocket is closed");
    }
    // The runtime's send does not wait for the client: granted back in batches, after the events
    // already queued (the channel's other messages) had their turn.
    this.toGrant += size;
    if (!this.grantScheduled) {
      this.grantScheduled = true;
      setTimeout(() => this.grant(), 0);
    }
  }

  /** The agent's channel closed. */
  closed(): void {
    if (this.finished) return;
    if (!this.headed) return this.answer(503, "ServiceUnavailable", `cluster ${this.host.cluster()}'s agent disconnected before answering`);
    if (this.refusal) return this.answer(502, "BadGateway", `cluster ${this.host.cluster()}'s agent disconnected`);
    this.closeClient(1011, "the cluster's agent disconnected");
    this.end();
  }

  /** The agent did not answer in time. */
  timedOut(ms: number): void {
    if (this.finished || this.headed) return;
    this.cancel("no answer in time");
    this.answered(statusOf(new ApiError(504, "Timeout", `the agent of cluster ${this.host.cluster()} did not answer the upgrade within ${ms / 1000} s`)));
  }

  private grant(): void {
    this.grantScheduled = false;
    if (this.finished || this.toGrant === 0) return;
    this.recvCredit += this.toGrant;
    send(this.ws, JSON.stringify({ type: "proxy-credit", stream: this.id, bytes: this.toGrant } satisfies HubMessage));
    this.toGrant = 0;
  }

  private fromClient(data: string | ArrayBuffer): void {
    if (this.finished) return;
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : new Uint8Array(data);
    if (bytes.byteLength > PROXY_FRAME_BYTES) {
      this.closeClient(1009, `a message may have at most ${PROXY_FRAME_BYTES} bytes`);
      this.cancel(`the client sent a message of ${bytes.byteLength} bytes`);
      return;
    }
    if (this.queued + bytes.byteLength > PROXY_WS_QUEUE_BYTES) {
      this.closeClient(1008, `the client sent over ${PROXY_WS_QUEUE_BYTES} bytes more than the member took`);
      this.cancel("the client flooded the stream");
      return;
    }
    const framed = new Uint8Array(bytes.byteLength + 1);
    framed[0] = typeof data === "string" ? PROXY_WS_TEXT : PROXY_WS_BINARY;
    framed.set(bytes, 1);
    this.queue.push(framed);
    this.queued += bytes.byteLength;
    this.pump();
  }

  /** Sends the client's queued messages within the agent's credit. */
  private pump(): void {
    while (this.queue.length > 0 && this.queue[0]!.byteLength - 1 <= this.sendCredit) {
      const m = this.queue.shift()!;
      this.queued -= m.byteLength - 1;
      this.sendCredit -= m.byteLength - 1;
      if (!send(this.ws, proxyFrame(this.id, m))) return this.closed();
    }
  }

  private clientClosed(reason: string): void {
    if (this.finished) return;
    this.cancel(reason);
  }

  /** Cancels the stream from the hub's side: the agent closes the member's WebSocket. */
  private cancel(reason: string): void {
    send(this.ws, JSON.stringify({ type: "proxy-cancel", stream: this.id, reason } satisfies HubMessage));
    this.closeClient(1000, "");
    this.end();
  }

  /** The agent broke the stream: it is told to stop, the client's socket closes (or a 502). */
  private fail(why: string): void {
    console.warn(`cluster ${this.host.cluster()}: proxied WebSocket stream ${this.id} cancelled: ${why}`);
    if (!this.headed || this.refusal) {
      send(this.ws, JSON.stringify({ type: "proxy-cancel", stream: this.id, reason: why } satisfies HubMessage));
      return this.answer(502, "BadGateway", `the agent of cluster ${this.host.cluster()} broke the proxied stream: ${why}`);
    }
    send(this.ws, JSON.stringify({ type: "proxy-cancel", stream: this.id, reason: why } satisfies HubMessage));
    this.closeClient(1011, "the cluster's agent broke the stream");
    this.end();
  }

  private answer(code: number, reason: string, message: string): void {
    this.end();
    this.answered(statusOf(new ApiError(code, reason, message)));
  }

  private closeClient(code: number, reason: string): void {
    const c = this.client;
    this.client = undefined;
    if (!c) return;
    try {
      c.close(code, reason.slice(0, 120));
    } catch {
      // Already closed.
    }
  }

  private end(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.queue = [];
    this.queued = 0;
    this.host.done(this.id);
  }
}

function statusOf(e: ApiError): Response {
  return new Response(JSON.stringify(e.toStatus()), { status: e.code, headers: { "content-type": "application/json" } });
}

function send(ws: WebSocket, frame: string | Uint8Array): boolean {
  try {
    ws.send(frame);
    return true;
  } catch {
    return false;
  }
}
