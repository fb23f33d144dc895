/**
 * A placement object's copy of its placement's ManifestWorks (KubeFleet's controllers read their
 * Works from an informer's cache; here the placement's Durable Object keeps them between runs, as
 * a replica set's object keeps its works: src/work/replicaset/works-cache.ts), so that a run
 * reads none of them back: a work is some 30 KB for a namespace of 50 objects, and a run at 1,000
 * clusters read 30 MB.
 *
 * Filled by a run's full read (when empty, stale or invalidated; the changes that come while it
 * reads are applied on top of it), then kept by the run's own
 * writes and by the changes the after-commit hook hands over ({@link PlacementWorkChange}): an
 * agent's status report carries the work as stored without its spec (the spec of the copy held
 * is kept when the uid and generation are the same: a ManifestWork's generation moves with its
 * spec). A change that comes without the work (a hook run again by the outbox sweep), a report
 * of a work not held or of another generation, or a lost write race empties it, and so does
 * {@link PLACEMENT_WORKS_RESYNC_MS} without a full read, as an informer relists; a newer
 * resourceVersion never gives way to an older one.
 */
import type { KubeObject } from "../k8s/meta.ts";

/** How long a {@link PlacementWorksCache} is trusted before a run reads the works again, in milliseconds. */
export const PLACEMENT_WORKS_RESYNC_MS = 60_000;

/**
 * How long the ManagedClusters a run read serve the next runs that only status reports asked for,
 * in milliseconds (the rollout's runs): a change of a cluster that may matter to a placement
 * (labels, taints, acceptance, deletion: src/fleet/controller.ts `planPlacement`), of a selected
 * object, or the placement's own write makes the next run read them again. What changes no
 * placement at once (capacity, allocatable, claims) is read at most this late, as KubeFleet's
 * scheduler reads the properties its informer last saw.
 */
export const PLACEMENT_CLUSTERS_RESYNC_MS = 10_000;

/**
 * One change of a placement's work as the after-commit hook hands it to the placement's object:
 * `work` the work as stored without its spec (a status report), `removed` a work deleted; neither:
 * unknown (a sweep's run), and the next run reads every work. `prompt`: the run is due at once
 * (a selected object changed), not after the object's share of time for runs that status reports
 * ask for.
 */
export interface PlacementWorkChange {
  work?: KubeObject;
  removed?: { namespace: string; name: string };
  prompt?: boolean;
}

/** The work as a notification carries it: everything but its spec (the object's copy has it). */
export function withoutSpec(work: KubeObject): KubeObject {
  const { spec: _spec, ...rest } = work as KubeObject & { spec?: unknown };
  return rest as KubeObject;
}

const keyOf = (namespace: string, name: string) => `${namespace}/${name}`;

/** See the module comment. One per placement object. */
export class PlacementWorksCache {
  private works: Map<string, KubeObject> | null = null;
  private filledAt = 0;
  /** A full read under way: the changes that came meanwhile (applied on top of it), or stale (kept not at all). */
  private filling: { changes: PlacementWorkChange[]; stale: boolean } | null = null;
  /**
   * Reports of works not held yet, by key: a run's own writes are taken in once all of them
   * committed, and the agents of the first clusters report before that. A run's write of the
   * same work (uid and generation) takes the report on; one left over makes the next run read.
   */
  private unheld = new Map<string, KubeObject>();
  /** The ManagedClusters the last run read, and when (epoch ms). */
  private clusters: { items: KubeObject[]; at: number } | null = null;
  /**
   * Moves with every change but a work's status report (a selected object, a cluster, an
   * override, the placement's own write, an update run's or an eviction's notification, a lost
   * race): what a run kept ({@link keepRun}) serves the next runs only while it has not moved.
   */
  private epoch = 0;
  /** What the last run kept for the next report-driven runs, at which {@link epoch} and when (epoch ms). */
  private run: { value: unknown; epoch: number; at: number } | null = null;

  /** The change epoch a run starts at (hand it to {@link keepRun}). */
  runEpoch(): number {
    return this.epoch;
  }

  /**
   * What a run kept for the next ones (src/fleet/controller.ts: the selection, snapshots,
   * overrides, bindings and per-cluster status of a placement), or null: nothing but status
   * reports of its works may have come since, within {@link PLACEMENT_WORKS_RESYNC_MS} of `now`
   * (epoch ms), or the run reads everything again.
   */
  heldRun<T>(now: number): T | null {
    const r = this.run;
    if (!r || r.epoch !== this.epoch || now - r.at > PLACEMENT_WORKS_RESYNC_MS || now < r.at) return null;
    return r.value as T;
  }

  /**
   * Keeps `value` for the next report-driven runs, read at `epoch` ({@link runEpoch} at the run's
   * start) and `now` (epoch ms, when it was read); kept not at all when a change came meanwhile.
   * A run that reuses what was kept passes the time it was first read, so it expires as read.
   */
  keepRun(value: unknown, epoch: number, now: number): void {
    this.run = epoch === this.epoch ? { value, epoch, at: now } : null;
  }

  /** Forgets what runs kept: the next run reads everything. */
  forgetRun(): void {
    this.epoch++;
    this.run = null;
  }

  /** The ManagedClusters a run read within {@link PLACEMENT_CLUSTERS_RESYNC_MS} before `now` (epoch ms), or null: read them. */
  clustersHeld(now: number): KubeObject[] | null {
    if (!this.clusters || now - this.clusters.at > PLACEMENT_CLUSTERS_RESYNC_MS || now < this.clusters.at) return null;
    return this.clusters.items;
  }

  /** Keeps the ManagedClusters a run read at `now` (epoch ms) for the next runs. */
  keepClusters(items: KubeObject[], now: number): void {
    this.clusters = { items, at: now };
  }

  /** Forgets the ManagedClusters held: the next run reads them (a cluster, a selected object or the placement changed). */
  forgetClusters(): void {
    this.clusters = null;
    this.forgetRun();
  }

  /** The works held, by cluster (namespace), or null when a run must read them (`now` epoch ms). */
  current(now: number): Map<string, KubeObject[]> | null {
    if (this.unheld.size > 0) this.invalidate();
    if (!this.works || now - this.filledAt > PLACEMENT_WORKS_RESYNC_MS) return null;
    const out = new Map<string, KubeObject[]>();
    for (const w of this.works.values()) {
      const ns = w.metadata.namespace!;
      const list = out.get(ns);
      if (list) list.push(w);
      else out.set(ns, [w]);
    }
    for (const list of out.values()) list.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
    return out;
  }

  /** A full read starts: the changes that come before {@link fill} are applied on top of it. */
  startFill(): void {
    this.filling = { changes: [], stale: false };
  }

  /** A full read failed: nothing is held. */
  cancelFill(): void {
    this.filling = null;
    this.works = null;
  }

  /**
   * Replaces what is held with a full read made at `now` (epoch ms), then applies the changes
   * that came since {@link startFill} (the read may be older than them); keeps nothing when the
   * cache was invalidated meanwhile.
   */
  fill(works: Iterable<KubeObject>, now: number): void {
    const filling = this.filling;
    this.filling = null;
    if (filling?.stale) {
      this.works = null;
      return;
    }
    this.works = new Map();
    this.unheld.clear();
    for (const w of works) this.works.set(keyOf(w.metadata.namespace!, w.metadata.name), w);
    this.filledAt = now;
    for (const c of filling?.changes ?? []) this.take(c);
  }

  /** Takes a work as stored with its spec (the run's own write), kept only when not older than the copy held. */
  apply(work: KubeObject): void {
    if (!this.works) return;
    const key = keyOf(work.metadata.namespace!, work.metadata.name);
    const held = this.works.get(key);
    if (held && Number(held.metadata.resourceVersion) > Number(work.metadata.resourceVersion)) return;
    this.works.set(key, work);
    const report = this.unheld.get(key);
    if (!report) return;
    this.unheld.delete(key);
    if (Number(report.metadata.resourceVersion) <= Number(work.metadata.resourceVersion)) return;
    if (report.metadata.uid !== work.metadata.uid || report.metadata.generation !== work.metadata.generation) return this.invalidate();
    this.works.set(key, { ...report, spec: work.spec } as KubeObject);
  }

  /** Drops a work (deleted). */
  remove(namespace: string, name: string): void {
    this.works?.delete(keyOf(namespace, name));
  }

  /** Takes a change the hook handed over (see {@link PlacementWorkChange}). */
  take(change: PlacementWorkChange): void {
    // Only a work's status report leaves the clusters held as they are.
    if (!change.work) this.forgetClusters();
    this.filling?.changes.push(change);
    if (!this.works) return;
    if (change.removed) return this.remove(change.removed.namespace, change.removed.name);
    const w = change.work;
    if (!w) {
      if (!change.prompt) this.invalidate();
      return;
    }
    const key = keyOf(w.metadata.namespace!, w.metadata.name);
    const held = this.works.get(key);
    if (!held) {
      const earlier = this.unheld.get(key);
      if (!earlier || Number(earlier.metadata.resourceVersion) < Number(w.metadata.resourceVersion)) this.unheld.set(key, w);
      return;
    }
    if (Number(held.metadata.resourceVersion) >= Number(w.metadata.resourceVersion)) return;
    // A report of the generation a run is writing, before the run took its write in: kept until it does ({@link apply}).
    if (held.metadata.uid === w.metadata.uid && (w.metadata.generation ?? 1) > (held.metadata.generation ?? 1)) {
      const earlier = this.unheld.get(key);
      if (!earlier || Number(earlier.metadata.resourceVersion) < Number(w.metadata.resourceVersion)) this.unheld.set(key, w);
      return;
    }
    if (held.metadata.uid !== w.metadata.uid || held.metadata.generation !== w.metadata.generation) return this.invalidate();
    this.works.set(key, { ...w, spec: held.spec } as KubeObject);
  }

  /** Forgets everything: the next run reads the works again. */
  invalidate(): void {
    this.works = null;
    this.unheld.clear();
    this.clusters = null;
    this.forgetRun();
    if (this.filling) this.filling.stale = true;
  }
}
