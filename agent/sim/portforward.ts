/**
 * `kubectl port-forward` against the simulated cluster: `pods/{name}/portforward` over a
 * WebSocket with the subprotocol `SPDY/3.1+portforward.k8s.io` (since Kubernetes 1.31, KEP-4006):
 * SPDY/3.1 tunnelled in the WebSocket's binary messages (client-go
 * `tools/portforward/tunneling_connection.go`), carrying the `portforward.k8s.io` protocol
 * (kubelet's `pkg/kubelet/cri/streaming/portforward/httpstream.go`): for each connection to the
 * local port, kubectl opens two SPDY streams with the headers `streamType` (`error`, `data`),
 * `port` and `requestID`; the server replies to each (SYN_REPLY), copies the data stream to the
 * Pod's port and back, writes any failure on the error stream, and closes both.
 *
 * Every port of a simulated Pod is an echo server: what the data stream carries comes back on it;
 * the client closing its side (FIN) closes the server's side of both streams.
 *
 * SPDY/3.1 as needed for that (draft-mbelshe-httpbis-spdy-00, SPDY/3.1's session flow control):
 * control frames SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING (echoed), GOAWAY, HEADERS,
 * WINDOW_UPDATE (sent back for the bytes read, so a client that keeps to flow control never
 * stalls), and data frames. Header blocks are zlib-compressed with SPDY/3's dictionary, one zlib
 * stream per direction for the session.
 */
import zlib from "node:zlib";
import type { WebSocket } from "ws";

const LENGTH_PREFIXED = [
  "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding", "accept-language",
  "accept-ranges", "age", "allow", "authorization", "cache-control", "connection", "content-base", "content-encoding",
  "content-language", "content-length", "content-location", "content-md5", "content-range", "content-type", "date", "etag",
  "expect", "expires", "from", "host", "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since",
  "last-modified", "location", "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
  "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via", "warning",
  "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie",
  "keep-alive", "origin",
]; // prettier-ignore
const RAW_TAIL =
  "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505" +
  "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized403 Forbidden" +
  "404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable" +
  "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT" +
  "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript," +
  "publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";

/** SPDY/3's header compression dictionary (the protocol's section 2.6.10.1). */
export const SPDY3_DICTIONARY: Buffer = (() => {
  const parts: Buffer[] = [];
  for (const s of LENGTH_PREFIXED) {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(s.length);
    parts.push(len, Buffer.from(s, "latin1"));
  }
  parts.push(Buffer.from(RAW_TAIL, "latin1"));
  return Buffer.concat(parts);
})();

const SYN_STREAM = 1;
const SYN_REPLY = 2;
const RST_STREAM = 3;
const PING = 6;
const WINDOW_UPDATE = 9;
const FLAG_FIN = 1;
/** Largest frame accepted (SPDY's 24-bit length allows 16 MiB; kubectl sends at most 32 KiB). */
const MAX_FRAME = 1024 * 1024;

/** A zlib stream (one direction of a session) fed a block at a time with a sync flush. */
class Zstream {
  private chain: Promise<unknown> = Promise.resolve();
  constructor(private readonly z: zlib.Inflate | zlib.Deflate) {
    z.on("error", () => undefined);
  }

  /** The output of `data` (in order with earlier blocks). */
  block(data: Buffer): Promise<Buffer> {
    const run = () =>
      new Promise<Buffer>((resolve, reject) => {
        const out: Buffer[] = [];
        const onData = (c: Buffer) => out.push(c);
        const onError = (e: Error) => {
          this.z.off("data", onData);
          reject(e);
        };
        this.z.on("data", onData);
        this.z.once("error", onError);
        this.z.write(data);
        this.z.flush(zlib.constants.Z_SYNC_FLUSH, () => {
          this.z.off("data", onData);
          this.z.off("error", onError);
          resolve(Buffer.concat(out));
        });
      });
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  close(): void {
    this.z.close();
  }
}

/** Reads a SPDY/3 header block (uncompressed): name to values. */
function parseHeaders(b: Buffer): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  let at = 0;
  const n = b.readUInt32BE(at);
  at += 4;
  for (let i = 0; i < n; i++) {
    const kl = b.readUInt32BE(at);
    const k = b.toString("utf8", at + 4, at + 4 + kl).toLowerCase();
    at += 4 + kl;
    const vl = b.readUInt32BE(at);
    const v = b.toString("utf8", at + 4, at + 4 + vl);
    at += 4 + vl;
    out[k] = v.split("\0");
  }
  return out;
}

function control(type: number, flags: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(8);
  h.writeUInt16BE(0x8003, 0);
  h.writeUInt16BE(type, 2);
  h.writeUInt32BE(payload.length, 4);
  h[4] = flags;
  return Buffer.concat([h, payload]);
}

function dataFrame(stream: number, flags: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(8);
  h.writeUInt32BE(stream & 0x7fffffff, 0);
  h.writeUInt32BE(payload.length, 4);
  h[4] = flags;
  return Buffer.concat([h, payload]);
}

interface PfStream {
  type: string;
  requestId: string;
  port: string;
  /** Whether the server closed its side. */
  closed: boolean;
}

/**
 * Serves one port-forward session on `ws` (see the module comment); `drained` resolves once the
 * socket's output is mostly sent (the echo's backpressure).
 */
export function servePortForward(ws: WebSocket, drained: (ws: WebSocket) => Promise<void>): void {
  const inflate = new Zstream(zlib.createInflate({ dictionary: SPDY3_DICTIONARY }));
  const deflate = new Zstream(zlib.createDeflate({ dictionary: SPDY3_DICTIONARY }));
  const streams = new Map<number, PfStream>();
  let buf: Buffer = Buffer.alloc(0);
  let chain: Promise<void> = Promise.resolve();
  const send = (frame: Buffer) => {
    if (ws.readyState === ws.OPEN) ws.send(frame);
  };
  const fail = (why: string) => {
    ws.close(1002, why.slice(0, 120));
  };
  const closeSide = (id: number) => {
    const s = streams.get(id);
    if (!s || s.closed) return;
    s.closed = true;
    send(dataFrame(id, FLAG_FIN, Buffer.alloc(0)));
  };

  const handle = async (frame: Buffer): Promise<void> => {
    if ((frame[0]! & 0x80) === 0) {
      const id = frame.readUInt32BE(0) & 0x7fffffff;
      const flags = frame[4]!;
      const payload = frame.subarray(8);
      const s = streams.get(id);
      if (!s) return;
      if (payload.length > 0) {
        const wu = Buffer.alloc(8);
        wu.writeUInt32BE(id, 0);
        wu.writeUInt32BE(payload.length, 4);
        send(control(WINDOW_UPDATE, 0, wu));
        const session = Buffer.alloc(8);
        session.writeUInt32BE(payload.length, 4);
        send(control(WINDOW_UPDATE, 0, session));
        // The Pod's port echoes.
        if (s.type === "data" && !s.closed) {
          send(dataFrame(id, 0, payload));
          await drained(ws);
        }
      }
      if (flags & FLAG_FIN) {
        // The client is done with this stream: the echo closes its side, and the pair's error stream.
        closeSide(id);
        if (s.type === "data") for (const [other, o] of streams) if (o.requestId === s.requestId && o.type === "error") closeSide(other);
      }
      return;
    }
    const type = frame.readUInt16BE(2);
    const payload = frame.subarray(8);
    if (type === SYN_STREAM) {
      const id = payload.readUInt32BE(0) & 0x7fffffff;
      const headers = parseHeaders(await inflate.block(payload.subarray(10)));
      const s: PfStream = {
        type: headers.streamtype?.[0] ?? "",
        requestId: headers.requestid?.[0] ?? "",
        port: headers.port?.[0] ?? "",
        closed: false,
      };
      streams.set(id, s);
      const block = await deflate.block(Buffer.alloc(4));
      const reply = Buffer.alloc(4);
      reply.writeUInt32BE(id, 0);
      send(control(SYN_REPLY, 0, Buffer.concat([reply, block])));
      if (!/^\d+$/.test(s.port) || Number(s.port) < 1 || Number(s.port) > 65535) {
        if (s.type === "error") {
          send(dataFrame(id, 0, Buffer.from(`invalid port ${JSON.stringify(s.port)}`)));
          closeSide(id);
        }
      }
      return;
    }
    if (type === PING) return send(frame);
    if (type === RST_STREAM) {
      streams.delete(payload.readUInt32BE(0) & 0x7fffffff);
      return;
    }
    // SETTINGS, NOOP, GOAWAY, HEADERS, WINDOW_UPDATE: nothing to do for an echo.
  };

  ws.on("message", (data: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, data]) : data;
    for (;;) {
      if (buf.length < 8) return;
      const len = buf.readUInt32BE(4) & 0xffffff;
      if (len > MAX_FRAME) return fail("SPDY frame too large");
      if (buf.length < 8 + len) return;
      const frame = buf.subarray(0, 8 + len);
      buf = buf.subarray(8 + len);
      chain = chain.then(() => handle(frame)).catch((e: unknown) => fail(`SPDY: ${e instanceof Error ? e.message : String(e)}`));
    }
  });
  ws.on("close", () => {
    inflate.close();
    deflate.close();
  });
}
