/**
 * The agent's transport: how the work agent learns of its works and sends what it reports, once
 * the cluster is accepted (docs/agent-protocol.md "Transports"). Two are named:
 *
 * - `poll` (poll.ts): HTTP only. The heartbeat answer carries the works ETag
 *   and `leaving`; the works are fetched (`GET .../works` with `If-None-Match`) only when that
 *   ETag changed, and no request is ever held open. An idle agent sends its heartbeats and
 *   nothing else.
 * - `ws` (ws.ts, the default): one WebSocket per cluster (docs/agent-protocol.md "Channel"):
 *   works pushed at once, the lease renewed by an application ping the hub answers without
 *   waking anything, status sent only when it changed. When the upgrade is refused (a proxy that
 *   blocks WebSockets: a non-101 answer other than 401/403/429/5xx), it runs `poll` instead.
 *
 * The messages of both are defined once in src/agent-api/protocol.ts.
 */
import type {
  AddonStatusAnswer,
  AddonStatusRequest,
  AddonTokenAnswer,
  AddonTokenRequest,
  DeliveredPolicy,
  DeliveredWork,
  HeartbeatAnswer,
  HeartbeatRequest,
  LeftAnswer,
  PolicyComplianceReport,
  PolicyStatusAnswer,
  WorkStatusAnswer,
  WorkStatusReport,
} from "../../../src/agent-api/protocol.ts";
import type { HubResult } from "../hub-client.ts";

/** The transports `--transport` names. */
export const TRANSPORT_NAMES = ["poll", "ws"] as const;

/** A transport's name. */
export type TransportName = (typeof TRANSPORT_NAMES)[number];

/** The default transport: the WebSocket channel (with its automatic fallback to `poll`). */
export const DEFAULT_TRANSPORT: TransportName = "ws";

/** What a transport hands the work agent. */
export interface TransportEvents {
  /**
   * The cluster's works changed: `works` is the whole list of its namespace (as the hub
   * delivers it, without `status`), `policies` its replicated Policies (none from a hub before
   * issue 32), `etag` the works ETag it is at (it covers both).
   */
  works(update: { etag: string; works: DeliveredWork[]; policies: DeliveredPolicy[] }): void;
  /** The hub says the cluster is leaving (docs/agent-protocol.md "Leave"). */
  leaving(): void;
  /** A new connection was welcomed, or the hub asked for the status again: what was reported may be resent. */
  resent?(): void;
}

/**
 * A transport between the work agent and the hub. The work loop (work/loop.ts) calls
 * {@link AgentTransport.start} once the cluster is accepted, hands it every heartbeat answer,
 * and sends its reports and its `left` through it. Every call returns a result value
 * (hub-client.ts `HubResult`), never rejects.
 */
export interface AgentTransport {
  /** Which transport this is. */
  readonly name: TransportName;
  /** Starts delivering works to `events` (idempotent). */
  start(events: TransportEvents): void;
  /**
   * A heartbeat answer: its `worksEtag` other than the transport's last one means the works
   * changed (the poll transport fetches them then).
   */
  heartbeatAnswered(answer: HeartbeatAnswer): void;
  /**
   * Renews the lease and reports the cluster's status `body` (agent.ts's heartbeat loop, every
   * `leaseDurationSeconds`): `poll` sends `POST .../heartbeat`; `ws`, while connected, sends a
   * `status` message only when `body` differs from the last one the hub acknowledged (the lease
   * is renewed by its pings) and answers from what the channel told it, else falls back to the
   * HTTP heartbeat. Failures as the HTTP call's (403: no longer accepted; 401: credentials).
   */
  heartbeat(body: HeartbeatRequest): Promise<HubResult<HeartbeatAnswer>>;
  /** Forgets the works ETag held, so the next heartbeat answer brings the whole list again. */
  resync(): void;
  /** Reports a work's status: 200 `{resourceVersion}`, 404 the work is gone, 409 it was replaced. */
  reportStatus(work: string, report: WorkStatusReport): Promise<HubResult<WorkStatusAnswer>>;
  /**
   * Reports a replicated Policy's compliance (only when it changed): 200 `{resourceVersion}`, 404
   * the Policy is gone, 409 it was replaced (another uid).
   */
  reportCompliance(policy: string, report: PolicyComplianceReport): Promise<HubResult<PolicyStatusAnswer>>;
  /** Tells the hub the leave is done: 200; 409 when the cluster is not leaving. */
  left(): Promise<HubResult<LeftAnswer>>;
  /** Reports the changed `Available` conditions of the cluster's add-ons (`addon-status`): 200. */
  addonStatus(body: AddonStatusRequest): Promise<HubResult<AddonStatusAnswer>>;
  /** Asks for a token of add-on `addon`'s ServiceAccount (`addon-token`): 200 `{token, expirationTimestamp}`. */
  addonToken(addon: string, body: AddonTokenRequest): Promise<HubResult<AddonTokenAnswer>>;
  /** Settles once the transport's loops have ended (after the abort signal fired). */
  stopped(): Promise<void>;
}
