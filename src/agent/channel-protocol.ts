/**
 * The agent channel's messages (docs/agent-protocol.md "Channel"): one WebSocket per cluster,
 * `GET /agent/v1/clusters/{name}/connect` with the subprotocol {@link CHANNEL_SUBPROTOCOL},
 * accepted by the cluster's Durable Object with the WebSocket Hibernation API. Every frame is a
 * UTF-8 text frame holding one JSON object with a `type`, except the application ping
 * ({@link CHANNEL_PING}), which the runtime answers with {@link CHANNEL_PONG} without waking the
 * object. Shared by the hub (src/agent/channel.ts, durable-objects/cluster/connection.ts) and the
 * agent; the bodies reuse the HTTP protocol's schemas (src/agent/protocol.ts), so a status message
 * is validated exactly as a heartbeat is and a report as `PUT .../works/{work}/status` is.
 */
import { z } from "zod";
import { HeartbeatSchema, WorkStatusReportSchema } from "./protocol.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { Status } from "../k8s/errors.ts";

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
 * report (1,000 KiB, src/agent/routes.ts `WORK_STATUS_BODY_LIMIT`) plus 24 KiB for its envelope.
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

/** Request id of a message the hub answers: chosen by the agent, echoed in the answer. */
const requestId = z.string().min(1).max(64);

/** `hello`: first message after connecting: the works ETag the agent holds (none: it holds no works yet). */
export const HelloMessageSchema = z.strictObject({ type: z.literal("hello"), worksEtag: z.string().max(128).optional() });
/** `status`: the cluster's status when it changed: a heartbeat's body (src/agent/protocol.ts `HeartbeatSchema`). */
export const StatusMessageSchema = z.strictObject({ type: z.literal("status"), id: requestId, status: z.unknown() });
/** `report`: a work's status as the agent observed it: the body of `PUT .../works/{work}/status`, with the work's name. */
export const ReportMessageSchema = z.strictObject({ type: z.literal("report"), id: requestId, work: z.string().min(1).max(253), report: z.unknown() });
/** `left`: the agent removed what the cluster's works applied and leaves (as `POST .../left`). */
export const LeftMessageSchema = z.strictObject({ type: z.literal("left"), id: requestId });

/**
 * A message from the agent, checked for its envelope only: its body (`status`, `report`) is
 * validated as the matching HTTP body is, so a bad body is answered with a Status (400, 422)
 * and the connection stays.
 */
export const AgentMessageSchema = z.discriminatedUnion("type", [HelloMessageSchema, StatusMessageSchema, ReportMessageSchema, LeftMessageSchema]);
/** A message from the agent (envelope checked). */
export type AgentMessage = z.infer<typeof AgentMessageSchema>;

/** The schema of a `status` message's body (a heartbeat). */
export const ChannelStatusSchema = HeartbeatSchema;
/** The schema of a `report` message's body. */
export const ChannelReportSchema = WorkStatusReportSchema;

/** Messages from the hub. */
export type HubMessage =
  /** Answer to `hello`: the lease interval to ping at (seconds), the works ETag the hub holds and whether the cluster is leaving. */
  | { type: "welcome"; leaseDurationSeconds: number; worksEtag: string; leaving: boolean }
  /** The cluster's lease interval changed (an admin set `spec.leaseDurationSeconds`): ping at this interval from now on (seconds). */
  | { type: "lease"; leaseDurationSeconds: number }
  /** The namespace's works (without status), when they differ from the agent's ETag, and at each change. */
  | { type: "works"; etag: string; leaving: boolean; works: KubeObject[] }
  /** The works changed but are too large to send (see {@link CHANNEL_MAX_WORKS_MESSAGE_BYTES}): read them over HTTP. */
  | { type: "works-changed"; etag: string; leaving: boolean }
  /** A request done: `status` (with the lease interval, seconds), `report` (with the work's new resourceVersion) or `left`. */
  | { type: "ack"; id: string; resourceVersion?: string; leaseDurationSeconds?: number }
  /** A request refused: the Kubernetes Status the HTTP route would answer (400, 403, 404, 409, 422, ...). */
  | { type: "error"; id: string; status: Status };
