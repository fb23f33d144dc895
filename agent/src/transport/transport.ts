/**
 * The agent's transport: how the work agent learns of its works and sends what it reports, once
 * the cluster is accepted (docs/agent-protocol.md "Transports"). Two are named:
 *
 * - `poll` (poll.ts, today's default): HTTP only. The heartbeat answer carries the works ETag
 *   and `leaving`; the works are fetched (`GET .../works` with `If-None-Match`) only when that
 *   ETag changed, and no request is ever held open. An idle agent sends its heartbeats and
 *   nothing else.
 * - `ws` (issue 28): one WebSocket per cluster. Not in this agent yet: asking for it logs one
 *   line and falls back to `poll` ({@link resolveTransport}).
 *
 * The messages of both are defined once in src/agent/protocol.ts.
 */
import type { DeliveredWork, HeartbeatAnswer, LeftAnswer, WorkStatusAnswer, WorkStatusReport } from "../../../src/agent/protocol.ts";
import type { HubResult } from "../hub-client.ts";
import type { Logger } from "../log.ts";

/** The transports `--transport` names. */
export const TRANSPORT_NAMES = ["poll", "ws"] as const;

/** A transport's name. */
export type TransportName = (typeof TRANSPORT_NAMES)[number];

/** The default transport (until the WebSocket transport lands). */
export const DEFAULT_TRANSPORT: TransportName = "poll";

/** What a transport hands the work agent. */
export interface TransportEvents {
  /**
   * The cluster's works changed: `works` is the whole list of its namespace (as the hub
   * delivers it, without `status`), `etag` the works ETag it is at.
   */
  works(update: { etag: string; works: DeliveredWork[] }): void;
  /** The hub says the cluster is leaving (docs/agent-protocol.md "Leave"). */
  leaving(): void;
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
  /** Forgets the works ETag held, so the next heartbeat answer brings the whole list again. */
  resync(): void;
  /** Reports a work's status: 200 `{resourceVersion}`, 404 the work is gone, 409 it was replaced. */
  reportStatus(work: string, report: WorkStatusReport): Promise<HubResult<WorkStatusAnswer>>;
  /** Tells the hub the leave is done: 200; 409 when the cluster is not leaving. */
  left(): Promise<HubResult<LeftAnswer>>;
  /** Settles once the transport's loops have ended (after the abort signal fired). */
  stopped(): Promise<void>;
}

/**
 * The transport the agent runs for the one asked: `ws` is not available in this agent yet, so it
 * logs one line and runs `poll`.
 */
export function resolveTransport(wanted: TransportName, log: Logger, fields: Record<string, string>): TransportName {
  if (wanted === "ws") {
    log.warn("the ws transport is not available in this agent yet; using poll (HTTP heartbeats, works fetched when their ETag changes)", fields);
    return "poll";
  }
  return wanted;
}
