/**
 * The scheduler view's PlacementDecisions (src/placement/view.ts): each by name and by its
 * placement, a version per placement bumped when one of its decisions changes, and the number of
 * ClusterDecisions per cluster over every PlacementDecision (what OCM's Balance prioritizer
 * reads, `pkg/placement/controllers/scheduling/plugins/balance`), with a histogram of those
 * numbers for the largest one.
 */
import type { KubeObject } from "../k8s/meta.ts";
import type { DecisionCountLookup } from "../scheduling/index.ts";
import { byNamespaceName, decidedClusters, decisionOwner, objectKey } from "./reads.ts";
import type { ClusterIndex } from "./view-clusters.ts";

/** The PlacementDecisions the view holds, and the Balance counts over them. */
export class DecisionIndex {
  /** `<namespace>/<name>` → PlacementDecision */
  private readonly decisions = new Map<string, KubeObject>();
  /** `<namespace>/<placement>` → its PlacementDecisions by name */
  private readonly byPlacement = new Map<string, Map<string, KubeObject>>();
  /** `<namespace>/<placement>` → bumped whenever one of its PlacementDecisions changes */
  private readonly ownVersions = new Map<string, number>();
  /** cluster → ClusterDecisions naming it over every PlacementDecision */
  private readonly counts = new Map<string, number>();
  /** count → clusters with that count (counts ≥ 1) */
  private readonly histogram = new Map<number, number>();
  /** Bumped by every change of a count; the version stamped on the clusters' index entries. */
  private countsVersion = 0;

  /** @param clusters the index whose entries get a stamp when a count of one of their clusters changes */
  constructor(private readonly clusters: ClusterIndex) {}

  /** The decisions version: bumped whenever a ClusterDecision count changes. */
  get version(): number {
    return this.countsVersion;
  }

  /** A PlacementDecision by `<namespace>/<name>`, or undefined. */
  get(key: string): KubeObject | undefined {
    return this.decisions.get(key);
  }

  /** The version of a placement's own decisions (`<namespace>/<placement>`; 0 before any). */
  ownVersion(placementKey: string): number {
    return this.ownVersions.get(placementKey) ?? 0;
  }

  /** A placement's PlacementDecisions, by namespace and name. */
  of(namespace: string, placement: string): KubeObject[] {
    return [...(this.byPlacement.get(objectKey(namespace, placement))?.values() ?? [])].sort(byNamespaceName);
  }

  /** Stores a PlacementDecision (null: removes it), moving its placement's version and the counts of the clusters it adds or drops. */
  apply(namespace: string, name: string, object: KubeObject | null): void {
    const k = objectKey(namespace, name);
    const before = this.decisions.get(k);
    const diff = new Map<string, number>();
    if (before) {
      const owner = decisionOwner(before);
      if (owner !== undefined) {
        const pk = objectKey(namespace, owner);
        const own = this.byPlacement.get(pk);
        own?.delete(name);
        if (own?.size === 0) this.byPlacement.delete(pk);
        this.ownVersions.set(pk, (this.ownVersions.get(pk) ?? 0) + 1);
      }
      for (const c of decidedClusters(before)) diff.set(c, (diff.get(c) ?? 0) - 1);
    }
    if (object === null) this.decisions.delete(k);
    else {
      this.decisions.set(k, object);
      const owner = decisionOwner(object);
      if (owner !== undefined) {
        const pk = objectKey(namespace, owner);
        let own = this.byPlacement.get(pk);
        if (!own) this.byPlacement.set(pk, (own = new Map()));
        own.set(name, object);
        this.ownVersions.set(pk, (this.ownVersions.get(pk) ?? 0) + 1);
      }
      for (const c of decidedClusters(object)) diff.set(c, (diff.get(c) ?? 0) + 1);
    }
    let changed = false;
    for (const [c, d] of diff) {
      if (d === 0) continue;
      if (!changed) {
        this.countsVersion++;
        changed = true;
      }
      const old = this.counts.get(c) ?? 0;
      const now = old + d;
      if (old > 0) this.histogramAdd(old, -1);
      if (now > 0) {
        this.histogramAdd(now, 1);
        this.counts.set(c, now);
      } else this.counts.delete(c);
      this.clusters.stampCount(c, this.countsVersion);
    }
  }

  private histogramAdd(count: number, d: number): void {
    const n = (this.histogram.get(count) ?? 0) + d;
    if (n > 0) this.histogram.set(count, n);
    else this.histogram.delete(count);
  }

  /** Other placements' ClusterDecisions per cluster: every count minus those of `own` (a placement's decisions). */
  otherCounts(own: readonly KubeObject[]): DecisionCountLookup {
    const counts = this.counts;
    const mine = new Map<string, number>();
    for (const d of own) for (const c of decidedClusters(d)) mine.set(c, (mine.get(c) ?? 0) + 1);
    let maxCount = 0;
    const atCount = new Map<number, number>();
    for (const [c, n] of mine) {
      const g = counts.get(c) ?? 0;
      if (g - n > maxCount) maxCount = g - n;
      atCount.set(g, (atCount.get(g) ?? 0) + 1);
    }
    const sorted = [...this.histogram.keys()].sort((a, b) => b - a);
    for (const k of sorted) {
      if (k <= maxCount) break;
      if (this.histogram.get(k)! - (atCount.get(k) ?? 0) > 0) {
        maxCount = k;
        break;
      }
    }
    return {
      maxCount,
      countOf: (c) => {
        const n = (counts.get(c) ?? 0) - (mine.get(c) ?? 0);
        return n > 0 ? n : undefined;
      },
    };
  }
}
