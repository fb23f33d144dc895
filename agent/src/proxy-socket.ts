/**
 * The agent's side of a proxied WebSocket stream (docs/proxy.md "WebSocket streams"): `kubectl
 * exec`, `attach`, `cp` (`v5.channel.k8s.io`) and `port-forward` (`SPDY/3.1+portforward.k8s.io`)
 * through the hub. On a `proxy-open` with `websocket: true` the agent opens the same WebSocket to
 * its member's API server (its own credentials, impersonating the hub user: proxy.ts
 * `impersonationHeaders`), offering the client's subprotocols, and answers `proxy-head` 101 with
 * the one the member chose; a member that refuses the upgrade has its status and body passed on
 * (`proxy-head`, the body, `proxy-end`).
 *
 * Then each message is one binary frame each way (the stream's number, the message's kind byte,
 * the message). Flow control in the stream's credit window, both ways: the agent sends the
 * member's messages within the credit the hub grants back, pausing the member's socket when it
 * runs out; it grants the hub credit back (`proxy-credit`) once a message from the hub was
 * written to the member's socket. A message over `PROXY_FRAME_BYTES` closes the stream.
 * `proxy-cancel` or the channel closing closes the member's socket; the member closing it sends
 * `proxy-end` (with the close's code and reason when it is not a normal close).
 */
import type { WebSocket } from "ws";
import { PROXY_FRAME_BYTES, PROXY_WINDOW_BYTES, PROXY_WS_BINARY, PROXY_WS_TEXT, proxyFrame } from "../../src/agent-api/channel-constants.ts";
import type { Logger } from "./log.ts";

/** Sends a frame on the channel (text: a JSON message; binary: a stream's frame); false when it is not open. */
export type ChannelSend = (frame: string | Uint8Array) => boolean;

/** Most bytes of a member's refusal body passed back. */
const REFUSAL_BODY_BYTES = 64 * 1024;

/** One proxied WebSocket stream of the agent; see the module comment. */
export class SocketStream {
  /** Bytes the hub allows to be sent. */
  private credit = PROXY_WINDOW_BYTES;
  /** The member's messages waiting for credit (kind byte first). */
  private pending: Uint8Array[] = [];
  /** Bytes written to the member since the last grant to the hub. */
  private toGrant = 0;
  private grantScheduled = false;
  private member: WebSocket | undefined;
  private opened = false;
  private ended = false;

  /**
   * @param id the stream's number
   * @param send writes on the channel
   * @param logger the agent's logger
   * @param done called once when the stream ended (its number is free)
   */
  constructor(
    readonly id: number,
    private readonly send: ChannelSend,
    private readonly logger: Logger,
    private readonly done: () => void,
  ) {}

  /** Starts the member's side: `open` resolves to the member's WebSocket (see kube.ts `webSocket`). */
  async start(open: () => Promise<{ ws: WebSocket; protocol: () => string | undefined }>): Promise<void> {
    let ws: WebSocket;
    let protocol: () => string | undefined;
    try {
      ({ ws, protocol } = await open());
    } catch (e) {
      return this.end(`the member cluster's API: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (this.ended) {
      ws.terminate();
      return;
    }
    this.member = ws;
    ws.on("unexpected-response", (req, res) => {
      const headers: Record<string, string[]> = {};
      const type = res.headers["content-type"];
      if (typeof type === "string") headers["content-type"] = [type];
      this.send(JSON.stringify({ type: "proxy-head", stream: this.id, status: res.statusCode ?? 502, headers }));
      this.opened = true;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        if (size + c.length <= REFUSAL_BODY_BYTES) chunks.push(c);
        size += c.length;
      });
      res.on("end", () => {
        const body = Buffer.concat(chunks);
        if (body.length > 0) this.send(proxyFrame(this.id, body));
        req.destroy();
        this.end();
      });
      res.on("error", () => this.end("the member's answer failed"));
    });
    ws.on("open", () => {
      this.opened = true;
      const chosen = protocol();
      const headers: Record<string, string[]> = chosen ? { "sec-websocket-protocol": [chosen] } : {};
      this.send(JSON.stringify({ type: "proxy-head", stream: this.id, status: 101, headers }));
    });
    ws.on("message", (data, isBinary) => {
      const msg = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
      if (msg.length > PROXY_FRAME_BYTES) {
        this.logger.warn(`proxied WebSocket stream ${this.id}: the member sent a message of ${msg.length} bytes, over ${PROXY_FRAME_BYTES}`);
        ws.close(1009, "message too big for the hub's proxy");
        return this.end(`the member sent a message of ${msg.length} bytes, over the ${PROXY_FRAME_BYTES} allowed`);
      }
      const framed = new Uint8Array(msg.length + 1);
      framed[0] = isBinary ? PROXY_WS_BINARY : PROXY_WS_TEXT;
      framed.set(msg, 1);
      this.pending.push(framed);
      this.flush();
    });
    ws.on("close", (code, reason) => {
      this.flush();
      const why =
        code === 1000 || code === 1005 ? undefined : `the member closed the WebSocket (${code}${reason.length ? `: ${reason.toString("utf8")}` : ""})`;
      if (this.pending.length === 0) this.end(why);
      else this.closing = why ?? null;
    });
    ws.on("error", (e) => {
      if (!this.opened) this.end(`the member cluster's API: ${e.message}`);
    });
  }

  /** Set when the member closed with messages still waiting for credit: the end's error, or null. */
  private closing: string | null | undefined;

  /** The hub granted `bytes` more. */
  grant(bytes: number): void {
    this.credit += bytes;
    this.flush();
  }

  /** A message from the hub's client (kind byte first): written to the member's socket. */
  data(payload: Buffer): void {
    const ws = this.member;
    if (this.ended || !ws || payload.length < 1) return;
    const size = payload.length - 1;
    const kind = payload[0];
    const body = payload.subarray(1);
    const written = () => {
      this.toGrant += size;
      if (this.toGrant >= PROXY_WINDOW_BYTES / 4) this.sendGrant();
      else if (!this.grantScheduled) {
        this.grantScheduled = true;
        setImmediate(() => this.sendGrant());
      }
    };
    if (ws.readyState !== ws.OPEN) return;
    ws.send(kind === PROXY_WS_TEXT ? body.toString("utf8") : body, { binary: kind !== PROXY_WS_TEXT }, (err) => {
      if (!err) written();
    });
  }

  /** The hub cancelled the stream, or the channel closed: the member's socket closes. */
  cancel(): void {
    if (this.ended) return;
    this.ended = true;
    this.pending = [];
    this.member?.close(1000);
    this.member?.terminate();
    this.done();
  }

  private sendGrant(): void {
    this.grantScheduled = false;
    if (this.ended || this.toGrant === 0) return;
    this.send(JSON.stringify({ type: "proxy-credit", stream: this.id, bytes: this.toGrant }));
    this.toGrant = 0;
  }

  /** Sends the member's messages within the credit; pauses the member's socket when it runs out. */
  private flush(): void {
    if (this.ended) return;
    while (this.pending.length > 0 && this.pending[0]!.length - 1 <= this.credit) {
      const m = this.pending.shift()!;
      this.credit -= m.length - 1;
      if (!this.send(proxyFrame(this.id, m))) return this.cancel();
    }
    const ws = this.member;
    if (this.pending.length > 0) ws?.pause();
    else if (this.closing !== undefined) this.end(this.closing ?? undefined);
    else if (ws?.isPaused) ws.resume();
  }

  private end(error?: string): void {
    if (this.ended) return;
    this.ended = true;
    this.send(JSON.stringify({ type: "proxy-end", stream: this.id, ...(error !== undefined ? { error } : {}) }));
    this.member?.terminate();
    this.done();
  }
}
