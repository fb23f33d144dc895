/**
 * The agent channel's constants (docs/agent-protocol.md "Channel"): its subprotocol, the
 * application ping and pong, its size limits and its close codes. Part of
 * src/agent-api/channel-protocol.ts (which re-exports everything here; import from there, except in
 * the agent's run-time code): kept free of zod so that the agent, which imports only this module
 * and src/agent-api/protocol-answers.ts at run time, does not load classic zod.
 */

/** The WebSocket subprotocol (`Sec-WebSocket-Protocol`) of this version of the channel. A later, incompatible version gets a new name. */
export const CHANNEL_SUBPROTOCOL = "flotilla.agent.v1";

/**
 * The application ping an agent sends every `leaseDurationSeconds` (a text frame). The hub's
 * runtime answers it with {@link CHANNEL_PONG} without waking the cluster's object, and the time
 * of that answer renews the lease (OCM's lease renewal; Cloudflare `setWebSocketAutoResponse`).
 */
export const CHANNEL_PING = "ping";
/** The hub's answer to {@link CHANNEL_PING}. */
export const CHANNEL_PONG = "pong";

/**
 * Largest frame an agent may send, in bytes (UTF-8 length of the text frame): a work status
 * report (1,000 KiB, src/agent-api/routes.ts `WORK_STATUS_BODY_LIMIT`) plus 24 KiB for its envelope.
 * A larger frame closes the connection with 1009 (RFC 6455 "message too big").
 */
export const CHANNEL_MAX_MESSAGE_BYTES = 1000 * 1024 + 24 * 1024;

/**
 * Largest `works` message the hub sends, in bytes: above it (a namespace with many or large works)
 * the hub sends `works-changed` instead and the agent reads its works with
 * `GET /agent/v1/clusters/{name}/works`, which has no such bound.
 */
export const CHANNEL_MAX_WORKS_MESSAGE_BYTES = 1024 * 1024;

/**
 * Close codes the hub uses (RFC 6455 section 7.4.2: 4000-4999 are the application's own). On
 * each, the agent acts as it does on the matching HTTP answer.
 */
export const CloseCodes = {
  /** A newer connection of the same cluster replaced this one: do not reconnect from this process. */
  Replaced: 4000,
  /** The key this connection authenticated with was replaced by a rotation: reconnect signing with the new key. */
  KeyRotated: 4001,
  /** An admin accepted another (pending) key for the cluster: this key stops (HTTP: 401); register again. */
  KeyReplaced: 4002,
  /** The hub no longer accepts the cluster (`hubAcceptsClient` false, HTTP: 403): poll the registration info until accepted. */
  Denied: 4003,
  /** The cluster left (the agent confirmed, or the leave timed out) or was removed (HTTP: 401): stop. */
  Left: 4004,
  /** The agent sent a frame that is not a channel message (not JSON, unknown `type`, no `id`): reconnect with a fixed agent. */
  BadMessage: 4005,
} as const;

/**
 * The proxy's streams on the channel (docs/proxy.md "On the channel"): a request to a member
 * cluster's API through the hub is one stream, numbered by the hub. The hub sends `proxy-open`
 * (the request) and `proxy-credit` / `proxy-cancel`; the agent answers `proxy-head` (status and
 * headers), then the body in binary frames, then `proxy-end`. A binary frame is the stream's
 * number as 4 bytes big-endian, then at most {@link PROXY_FRAME_BYTES} bytes of its body.
 */
export const PROXY_STREAM_ID_BYTES = 4;
/** Most body bytes in one binary frame of a proxied stream. */
export const PROXY_FRAME_BYTES = 64 * 1024;
/**
 * A stream's credit window, in bytes: the agent sends at most this many body bytes the hub has
 * not granted back with `proxy-credit` (granted as its client reads them), so a stream whose
 * client reads slowly holds at most this much in the hub and stops its agent's reading.
 */
export const PROXY_WINDOW_BYTES = 256 * 1024;
/**
 * Most streams open at once per cluster: a further request is answered 429 with Retry-After. With
 * {@link PROXY_WINDOW_BYTES} this bounds the bytes in flight per cluster (8 MiB).
 */
export const PROXY_MAX_STREAMS = 32;
/**
 * Most body bytes of an answer the agent may send inline, in its `proxy-head` (base64 `body`,
 * `end: true`), when the hub's `proxy-open` says `inline: true` and the member's whole answer had
 * arrived by the time its head did (a `get` or a small list): one channel message, so one event
 * of the cluster's object, where a head, a frame and an end are three.
 */
export const PROXY_INLINE_BYTES = 64 * 1024;
/** Largest request body the proxy carries, in bytes (kube-apiserver's own limit, 3 MiB). */
export const PROXY_MAX_BODY_BYTES = 3 * 1024 * 1024;

/**
 * A WebSocket stream's message kinds (docs/proxy.md "WebSocket streams"): each message of an
 * upgraded stream is one binary frame each way, whose payload starts with one of these bytes
 * (RFC 6455's opcodes) and then holds the message.
 */
export const PROXY_WS_TEXT = 1;
/** See {@link PROXY_WS_TEXT}. */
export const PROXY_WS_BINARY = 2;
/**
 * Most bytes of a WebSocket stream's client messages the hub holds beyond the agent's credit: a
 * Worker cannot stop reading its client's WebSocket, so a client that sends faster than the
 * member takes (a flood) has its stream closed (1008) past this bound.
 */
export const PROXY_WS_QUEUE_BYTES = 8 * 1024 * 1024;

/** Writes a proxied stream's binary frame: its number (4 bytes big-endian) then `payload`. */
export function proxyFrame(stream: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(PROXY_STREAM_ID_BYTES + payload.byteLength);
  new DataView(out.buffer).setUint32(0, stream >>> 0);
  out.set(payload, PROXY_STREAM_ID_BYTES);
  return out;
}
