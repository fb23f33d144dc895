/**
 * The agent channel's messages (docs/agent-protocol.md "Channel"): one WebSocket per cluster,
 * `GET /agent/v1/clusters/{name}/connect` with the subprotocol {@link CHANNEL_SUBPROTOCOL},
 * accepted by the cluster's Durable Object with the WebSocket Hibernation API. Every frame is a
 * UTF-8 text frame holding one JSON object with a `type`, except the application ping
 * ({@link CHANNEL_PING}), which the runtime answers with {@link CHANNEL_PONG} without waking the
 * object. Shared by the hub (src/agent-api/channel.ts, durable-objects/cluster/connection.ts) and the
 * agent; the bodies reuse the HTTP protocol's schemas (src/agent-api/protocol.ts), so a status message
 * is validated exactly as a heartbeat is and a report as `PUT .../works/{work}/status` is.
 */
import { z } from "zod";
import { AddonStatusSchema, AddonTokenRequestSchema, HeartbeatSchema, PolicyComplianceReportSchema, WorkStatusReportSchema } from "./protocol.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { Status } from "../k8s/errors.ts";
import type { ChannelHubMessage } from "./protocol-answers.ts";
import { PROXY_INLINE_BYTES } from "./channel-constants.ts";

// The constants (subprotocol, ping and pong, sizes, close codes) are defined in
// ./channel-constants.ts, which loads no zod (the agent imports it at run time), and re-exported.
export * from "./channel-constants.ts";

/** Request id of a message the hub answers: chosen by the agent, echoed in the answer. */
const requestId = z.string().min(1).max(64);

/** `hello`: first message after connecting: the works ETag the agent holds (none: it holds no works yet). */
export const HelloMessageSchema = z.strictObject({ type: z.literal("hello"), worksEtag: z.string().max(128).optional() });
/** `status`: the cluster's status when it changed: a heartbeat's body (src/agent-api/protocol.ts `HeartbeatSchema`). */
export const StatusMessageSchema = z.strictObject({ type: z.literal("status"), id: requestId, status: z.unknown() });
/** `report`: a work's status as the agent observed it: the body of `PUT .../works/{work}/status`, with the work's name. */
export const ReportMessageSchema = z.strictObject({ type: z.literal("report"), id: requestId, work: z.string().min(1).max(253), report: z.unknown() });
/** `left`: the agent removed what the cluster's works applied and leaves (as `POST .../left`). */
export const LeftMessageSchema = z.strictObject({ type: z.literal("left"), id: requestId });

/** `addon-status`: the `Available` condition of add-ons whose health changed (the body of `POST .../addons/status`). */
export const AddonStatusMessageSchema = z.strictObject({ type: z.literal("addon-status"), id: requestId, status: z.unknown() });
/** `addon-token`: a token for add-on `addon`'s registration (the body of `POST .../addons/{addon}/token`). */
export const AddonTokenMessageSchema = z.strictObject({
  type: z.literal("addon-token"),
  id: requestId,
  addon: z.string().min(1).max(63),
  request: z.unknown(),
});

/**
 * `compliance`: the compliance of the replicated Policy `policy` changed: the body of
 * `PUT .../policies/{policy}/status` (src/agent-api/protocol.ts `PolicyComplianceReportSchema`).
 */
export const ComplianceMessageSchema = z.strictObject({
  type: z.literal("compliance"),
  id: requestId,
  policy: z.string().min(1).max(253),
  report: z.unknown(),
});

/** A proxied stream's number (src/agent-api/channel-constants.ts `PROXY_STREAM_ID_BYTES`): chosen by the hub. */
const streamId = z.number().int().min(1).max(0xffffffff);
/** HTTP headers as a proxied stream carries them: lower-case name to values. */
const proxyHeaders = z.record(z.string().max(256), z.array(z.string().max(8192)).max(64));

/**
 * `proxy-head`: the member cluster's answer to a proxied request `stream` began (docs/proxy.md):
 * its HTTP status and the headers the proxy passes on. Its body follows in binary frames, then
 * `proxy-end`; or, when the hub's `proxy-open` said `inline: true` and the whole answer was at
 * hand, `end: true` says the answer is complete here, its body (at most `PROXY_INLINE_BYTES`,
 * base64) in `body`.
 */
export const ProxyHeadMessageSchema = z.strictObject({
  type: z.literal("proxy-head"),
  stream: streamId,
  status: z.number().int().min(100).max(599),
  headers: proxyHeaders,
  body: z
    .string()
    .max(Math.ceil(PROXY_INLINE_BYTES / 3) * 4)
    .optional(),
  end: z.literal(true).optional(),
});
/**
 * `proxy-end`: the proxied stream `stream` ended: its body is complete, or `error` says why the
 * agent could not send it (the member cluster unreachable, a refused path).
 */
export const ProxyEndMessageSchema = z.strictObject({ type: z.literal("proxy-end"), stream: streamId, error: z.string().max(4096).optional() });
/**
 * `proxy-credit` from the agent: on a WebSocket stream (exec, attach, port-forward), the agent
 * wrote `bytes` more of what the hub relayed from its client to the member's WebSocket: the hub
 * may send that many more (docs/proxy.md "WebSocket streams").
 */
export const ProxyAgentCreditMessageSchema = z.strictObject({
  type: z.literal("proxy-credit"),
  stream: streamId,
  bytes: z.number().int().min(0).max(0xffffffff),
});

/**
 * A message from the agent, checked for its envelope only: its body (`status`, `report`) is
 * validated as the matching HTTP body is, so a bad body is answered with a Status (400, 422)
 * and the connection stays.
 */
export const AgentMessageSchema = z.discriminatedUnion("type", [
  HelloMessageSchema,
  StatusMessageSchema,
  ReportMessageSchema,
  LeftMessageSchema,
  ComplianceMessageSchema,
  AddonStatusMessageSchema,
  AddonTokenMessageSchema,
  ProxyHeadMessageSchema,
  ProxyEndMessageSchema,
  ProxyAgentCreditMessageSchema,
]);
/** A message from the agent (envelope checked). */
export type AgentMessage = z.infer<typeof AgentMessageSchema>;
/** The agent's messages of a proxied stream (no request id: the stream number says which). */
export type ProxyAgentMessage = Extract<AgentMessage, { type: "proxy-head" | "proxy-end" | "proxy-credit" }>;

/**
 * Who a proxied request acts as on the member cluster (docs/proxy.md "Who may do what"): the hub
 * user the request was authorized as (after the hub's own impersonation), which the agent
 * impersonates (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`).
 */
export interface ProxyUser {
  name: string;
  groups: string[];
  uid?: string;
  extra?: Record<string, string[]>;
}

/** The schema of a `status` message's body (a heartbeat). */
export const ChannelStatusSchema = HeartbeatSchema;
/** The schema of a `report` message's body. */
export const ChannelReportSchema = WorkStatusReportSchema;
/** The schema of a `compliance` message's body. */
export const ChannelComplianceSchema = PolicyComplianceReportSchema;
/** The schema of an `addon-status` message's body. */
export const ChannelAddonStatusSchema = AddonStatusSchema;
/** The schema of an `addon-token` message's body. */
export const ChannelAddonTokenSchema = AddonTokenRequestSchema;

/** Messages from the hub. */
export type HubMessage =
  /** Answer to `hello`: the lease interval to ping at (seconds), the works ETag the hub holds and whether the cluster is leaving. */
  | { type: "welcome"; leaseDurationSeconds: number; worksEtag: string; leaving: boolean }
  /** The cluster's lease interval changed (an admin set `spec.leaseDurationSeconds`): ping at this interval from now on (seconds). */
  | { type: "lease"; leaseDurationSeconds: number }
  /** The namespace's works and replicated Policies (without status), when they differ from the agent's ETag, and at each change. */
  | { type: "works"; etag: string; leaving: boolean; works: KubeObject[]; policies?: KubeObject[] }
  /** The works changed but are too large to send (see {@link CHANNEL_MAX_WORKS_MESSAGE_BYTES}): read them over HTTP. */
  | { type: "works-changed"; etag: string; leaving: boolean }
  /**
   * A request done: `status` (with the lease interval, seconds), `report` and `compliance` (with
   * the object's new resourceVersion), `left`, `addon-status`, or `addon-token` (with the token
   * and when it expires); a `report` or `compliance` whose sequence was not newer than the one last
   * committed is acknowledged with `stale: true` and that `sequence`, nothing written
   * (docs/agent-protocol.md "Report order").
   */
  | {
      type: "ack";
      id: string;
      resourceVersion?: string;
      leaseDurationSeconds?: number;
      token?: string;
      expirationTimestamp?: string;
      stale?: boolean;
      sequence?: number;
    }
  /** A request refused: the Kubernetes Status the HTTP route would answer (400, 403, 404, 409, 422, ...). */
  | { type: "error"; id: string; status: Status }
  /**
   * A proxied request (docs/proxy.md): `method` on the member's `path` (absolute, checked by the
   * hub: no `.` or `..` segment) with `query` (raw, without `?`), the headers the proxy passes,
   * `body` (base64, at most `PROXY_MAX_BODY_BYTES` decoded), as `user` with the hub's name `hub`.
   */
  | {
      type: "proxy-open";
      stream: number;
      method: string;
      path: string;
      query: string;
      headers: Record<string, string[]>;
      body?: string;
      /**
       * A WebSocket upgrade (exec, attach, port-forward; docs/proxy.md "WebSocket streams"): the
       * agent opens a WebSocket to the member offering the client's subprotocols
       * (`headers["sec-websocket-protocol"]`), answers `proxy-head` 101 with the one chosen, then
       * each message is one binary frame each way.
       */
      websocket?: boolean;
      /**
       * The hub takes a complete small answer inline: a `proxy-head` with `end: true` and its
       * body (at most `PROXY_INLINE_BYTES`). An agent that does not know it ignores it.
       */
      inline?: boolean;
      user: ProxyUser;
      hub: string;
    }
  /** The hub's client read `bytes` more of stream `stream`'s body: the agent may send that many more. */
  | { type: "proxy-credit"; stream: number; bytes: number }
  /** The hub's client went away (or the stream broke a limit): the agent aborts its request. */
  | { type: "proxy-cancel"; stream: number; reason: string };

/**
 * Every message the hub sends is one the agent's decoder (src/agent-api/protocol-answers.ts
 * `ChannelHubMessageSchema`, zod/mini) is written to accept: checked at compile time, field by
 * field except the works themselves, which are KubeObjects (the decoder checks their name, uid
 * and spec at run time).
 */
type HubMessageShape<M> = M extends { works: unknown }
  ? Omit<M, "works" | "policies"> & { works: unknown[]; policies?: unknown[] }
  : M extends { status: Status }
    ? Omit<M, "status"> & { status: { code: number; reason?: string; message?: string } }
    : M;
type DecodedShape<M> = M extends { works: unknown } ? Omit<M, "works" | "policies"> & { works: unknown[]; policies?: unknown[] } : M;
export type HubMessagesDecodable = HubMessageShape<HubMessage> extends DecodedShape<ChannelHubMessage> ? true : never;
true satisfies HubMessagesDecodable;
