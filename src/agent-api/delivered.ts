/**
 * The works this isolate last handed each cluster's agent (a works poll's answer), kept so that
 * the agent's status report that follows can write on that copy instead of reading the work from
 * D1 again: one D1 query less per report, the most frequent agent write during a rollout.
 *
 * A copy is only ever a guess of what is stored. The status write carries its resourceVersion as
 * a precondition (src/store/d1/write.ts `known`), so a copy that is no longer the stored object (a
 * status write from another isolate, the work deleted or created again) is refused by the commit,
 * and the caller makes the report again on a fresh read. Correctness never depends on it.
 *
 * Bounded by bytes, least recently delivered cluster first out; a cluster whose works are large
 * is not kept at all.
 */
import type { KubeObject } from "../k8s/meta.ts";

/** Most bytes kept for all clusters, counted as the length of the works' JSON (ASCII almost all). */
export const DELIVERED_WORKS_MAX_BYTES = 8 * 1024 * 1024;
/** Most bytes kept for one cluster: a poll answer above this is not kept. */
export const DELIVERED_WORKS_MAX_CLUSTER_BYTES = 256 * 1024;

interface Entry {
  works: Map<string, KubeObject>;
  bytes: number;
}

/**
 * Works by cluster (namespace) and name, as delivered; see the module comment. One instance per
 * isolate ({@link deliveredWorks}); tests make their own.
 */
export class DeliveredWorks {
  private readonly clusters = new Map<string, Entry>();
  private total = 0;

  constructor(
    private readonly maxBytes = DELIVERED_WORKS_MAX_BYTES,
    private readonly maxClusterBytes = DELIVERED_WORKS_MAX_CLUSTER_BYTES,
  ) {}

  /** Bytes held, for tests and benchmarks. */
  get bytes(): number {
    return this.total;
  }

  /**
   * Keeps `works`, the whole of what `cluster`'s namespace holds as a poll answered it, `bytes`
   * being the length of their JSON (the poll answer's). Replaces what was kept for the cluster,
   * but for a work this isolate stored since (same uid, higher resourceVersion: the answer's copy
   * may predate a status write, src/work/namespace-deliverables.ts); keeps nothing for the cluster when
   * `bytes` is over the per-cluster bound. The objects must not be changed afterwards.
   */
  delivered(cluster: string, works: KubeObject[], bytes: number): void {
    const before = this.clusters.get(cluster)?.works;
    this.drop(cluster);
    if (bytes > this.maxClusterBytes) return;
    const newer = (w: KubeObject) => {
      const kept = before?.get(w.metadata.name);
      return kept && kept.metadata.uid === w.metadata.uid && Number(kept.metadata.resourceVersion) > Number(w.metadata.resourceVersion) ? kept : w;
    };
    this.clusters.set(cluster, { works: new Map(works.map((w) => [w.metadata.name, newer(w)])), bytes });
    this.total += bytes;
    this.evict();
  }

  /** The copy of work `name` in `cluster`'s namespace, or undefined. */
  get(cluster: string, name: string): KubeObject | undefined {
    return this.clusters.get(cluster)?.works.get(name);
  }

  /**
   * Replaces the copy of a work with the object as a write stored it (`grownBy`: bytes it may have
   * grown, the report's size), when the cluster is kept.
   */
  stored(cluster: string, work: KubeObject, grownBy: number): void {
    const entry = this.clusters.get(cluster);
    if (!entry || !entry.works.has(work.metadata.name)) return;
    entry.works.set(work.metadata.name, work);
    entry.bytes += grownBy;
    this.total += grownBy;
    if (entry.bytes > this.maxClusterBytes) this.drop(cluster);
    else this.evict();
  }

  /** Forgets the copy of one work (found stale). */
  forget(cluster: string, name: string): void {
    this.clusters.get(cluster)?.works.delete(name);
  }

  private drop(cluster: string): void {
    const entry = this.clusters.get(cluster);
    if (!entry) return;
    this.total -= entry.bytes;
    this.clusters.delete(cluster);
  }

  private evict(): void {
    for (const cluster of this.clusters.keys()) {
      if (this.total <= this.maxBytes) return;
      this.drop(cluster);
    }
  }
}

/** This isolate's delivered works. */
export const deliveredWorks = new DeliveredWorks();

/** Where a work status report finds the copy of its work to write on, and records what it stored (src/agent-api/work-report.ts). */
export type WorkCopies = Pick<DeliveredWorks, "get" | "stored" | "forget">;

/**
 * The copies a cluster's object keeps of the works it last pushed on its agent's channel (`own`:
 * durable-objects/cluster/connection.ts), in front of the isolate's {@link deliveredWorks} (what
 * a works poll answered, src/agent-api/routes.ts). A report looks its work up in `own` first; what
 * it stored or found stale is recorded in both.
 *
 * The object already holds those works (its namespace's picture, src/work/namespace-deliverables.ts),
 * so `own` costs it a map of references, and it goes with the object. The isolate's copies are
 * bounded overall ({@link DELIVERED_WORKS_MAX_BYTES}, 8 MiB): at 1,000 clusters of a 30 KB work
 * each, the channel's pushes evicted most clusters' copies before their reports came, and each such
 * report read its work, the 30 KB spec with it, from D1 again.
 */
export function workCopies(own: DeliveredWorks, shared: DeliveredWorks = deliveredWorks): WorkCopies {
  return {
    get: (cluster, name) => own.get(cluster, name) ?? shared.get(cluster, name),
    stored: (cluster, work, grownBy) => {
      own.stored(cluster, work, grownBy);
      shared.stored(cluster, work, grownBy);
    },
    forget: (cluster, name) => {
      own.forget(cluster, name);
      shared.forget(cluster, name);
    },
  };
}
