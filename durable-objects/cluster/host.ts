/**
 * The narrow host that ClusterObject gives its modules (keys, lease, leave, works, state): its
 * SQLite (metered), its one alarm owner, the call's cost counters and the commit of the
 * cluster's ManagedCluster. A module never reaches the Durable Object's state or another module
 * except through this.
 */
import type { KubeObject } from "../../src/k8s/meta.ts";
import type { WriterMode } from "../../src/store/store.ts";
import type { Timers } from "../timers.ts";
import type { Cost } from "./types.ts";

/** What ClusterObject offers its modules. */
export interface ClusterHost {
  /** Runs one statement on the object's SQLite; its rows written count into {@link cost}. */
  exec(query: string, ...bindings: unknown[]): Record<string, SqlStorageValue>[];
  /** The object's timers: the one owner of its alarm (durable-objects/timers.ts). */
  readonly timers: Timers;
  /** The current call's storage cost, counted up by the modules (see `Cost`). */
  readonly cost: Cost;
  /**
   * Commits `next` (null: remove the cluster) in place of `current` through the store's write
   * path and returns what was stored (durable-objects/cluster/state.ts `ClusterState.commit`).
   * @throws ApiError 404, 409 when D1 refused the commit
   */
  commit(current: KubeObject | null, next: KubeObject | null, mode?: WriterMode): Promise<KubeObject | null>;
}
