/**
 * The shapes that cross ClusterObject's RPC boundary (src/agent-api/routes.ts, src/api/resources.ts
 * and the tests read them), and the storage cost each call reports.
 */
import type { JWK } from "jose";
import { ApiError, type Status } from "../../src/k8s/errors.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import type { ClusterInfo, Heartbeat } from "../../src/agent-api/protocol.ts";

/** A result crossing the RPC boundary: a value, or a Kubernetes Status (errors as values). */
export type Result<T> = { ok: true; value: T } | { ok: false; status: Status };

/**
 * Storage cost of one call: rows written to the object's SQLite, queries this object sent to D1,
 * and scheduler runs it triggered (each reads the index and writes what changed).
 */
export interface Cost {
  rowsWritten: number;
  d1Queries: number;
  schedulerRuns: number;
}

/** A cost of nothing, to count from. @returns a new Cost of zeros */
export function noCost(): Cost {
  return { rowsWritten: 0, d1Queries: 0, schedulerRuns: 0 };
}

/** The outcome of an admin write (the store's, src/store/store.ts). */
export type { WriteOutcome } from "../../src/store/store.ts";

/**
 * What the agent learns about its registration (GET /agent/v1/clusters/{name}): the protocol's
 * `ClusterInfo` (src/agent-api/protocol.ts). `keyPending` is true while the key the agent
 * authenticated with (or registered) waits for an admin to accept it; such a key may only read this.
 */
export type RegistrationInfo = ClusterInfo;

/**
 * How a registration ended: a new cluster (`created`), the cluster's current key registered
 * again (`confirmed`, an agent restart), or a new key for a known cluster held until an admin
 * accepts it (`pending`).
 */
export type RegistrationOutcome = "created" | "confirmed" | "pending";

/**
 * Registration input, already checked by the Worker: the bootstrap token, the cluster ID index,
 * and the proof that the caller holds `publicKey`'s private key (`kid` is its thumbprint).
 */
export interface RegisterInput {
  clusterName: string;
  clusterId: string;
  publicKey: JWK;
  kid: string;
  claims: { name: string; value: string }[];
  autoApprove: boolean;
}

/** What an agent request asks for once its JWT is verified. */
export type AgentAction =
  | { action: "info" }
  /** `colo`: the edge location the heartbeat reached (src/edge.ts), recorded on the ManagedCluster when it changed. */
  | { action: "heartbeat"; heartbeat: Heartbeat; colo?: string }
  | { action: "rotate-key"; publicKey: JWK; kid: string }
  | { action: "works"; ifNoneMatch?: string; waitMs: number }
  | { action: "report" }
  | { action: "left" };

/**
 * The works state of a cluster as the Durable Object knows it: the works ETag (an opaque string
 * that changes whenever a work in the cluster's namespace is created, changes spec or metadata, or
 * is deleted), whether the cluster is leaving, and whether `etag` differs from the `If-None-Match`
 * the agent sent (when false the Worker answers 304 without reading D1). When it differs, `works`
 * are the namespace's works (src/work/namespace-deliverables.ts), unless the namespace holds too many
 * bytes of them: the Worker reads them from D1 then.
 */
export interface WorksState {
  etag: string;
  leaving: boolean;
  changed: boolean;
  works?: KubeObject[];
}

/**
 * An error as a failed Result: an ApiError becomes its Status.
 * @throws the error itself when it is not an ApiError (a bug, not an answer)
 */
export function errorResult(e: unknown): { ok: false; status: Status } {
  if (e instanceof ApiError) return { ok: false, status: e.toStatus() };
  throw e;
}
