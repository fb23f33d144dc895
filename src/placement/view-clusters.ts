/**
 * The scheduler view's ManagedClusters (src/placement/view.ts): each cluster's record, compactly
 * (its strings interned), and the label index (label key → value → cluster names) that a
 * placement's candidates come from. A ManagedClusterSet with the exclusive
 * `cluster.open-cluster-management.io/clusterset` label is one entry of the index.
 *
 * Each index entry also carries the last PlacementDecisions version that changed the
 * ClusterDecision count of one of its clusters, so that a placement with the Balance prioritizer
 * can tell whether a count of one of its candidates moved ({@link ClusterIndex.sourceStamp}).
 */
import type { LabelSelectorRequirementSet } from "../k8s/labels.ts";
import type { ClusterView } from "./plan.ts";

/** A cluster as the view keeps it: its scheduling view, set membership and resourceVersion. */
export interface ClusterRecord extends ClusterView {
  /** The sets it belongs to, valid while `setsAt` equals the view's sets version. */
  clusterSets: readonly string[];
  setsAt: number;
  rv: number;
}

/** One label value's clusters, and the last decisions version that changed one of their counts. */
interface Bucket {
  names: Set<string>;
  countStamp: number;
}

/** One label key's values. `size`: clusters having the key; `goneStamp`: the highest stamp of a bucket that emptied. */
interface KeyIndex {
  values: Map<string, Bucket>;
  size: number;
  countStamp: number;
  goneStamp: number;
}

/** A candidate source: every cluster, or the union of label index entries (a value, or every value of a key). */
export type Source = "all" | { key: string; value?: string }[];

const EMPTY_TAINTS: ClusterView["taints"] = Object.freeze([]) as unknown as ClusterView["taints"];
/** An empty string record, shared. */
export const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

/** The view's clusters by name, their label index and the string pool their records share. */
export class ClusterIndex {
  /** Every cluster's record by name (read directly on hot paths; written only through this class). */
  readonly records = new Map<string, ClusterRecord>();
  private readonly labelIndex = new Map<string, KeyIndex>();
  private readonly strings = new Map<string, string>();
  /** The last decisions version that changed any cluster's count: the stamp of the "all" source. */
  private globalCountStamp = 0;

  /** Number of clusters. */
  get size(): number {
    return this.records.size;
  }

  /**
   * Stores a cluster's view at `rv` (undefined: keeps the version held), replacing its record
   * and its index entries.
   */
  put(name: string, view: ClusterView, rv: number | undefined): void {
    const before = this.records.get(name);
    if (before) this.unindex(before);
    const record: ClusterRecord = {
      name: before?.name ?? this.intern(name),
      labels: this.internRecord(view.labels),
      claims: this.internRecord(view.claims),
      taints: view.taints && view.taints.length > 0 ? view.taints.map((t) => ({ ...t, key: this.intern(t.key) })) : EMPTY_TAINTS,
      allocatable: this.internRecord(view.allocatable),
      capacity: this.internRecord(view.capacity),
      kubernetesVersion: view.kubernetesVersion === undefined ? undefined : this.intern(view.kubernetesVersion),
      deleting: view.deleting === true,
      clusterSets: [],
      setsAt: -1,
      rv: rv ?? before?.rv ?? 0,
    };
    this.records.set(record.name, record);
    this.index(record);
  }

  /** Removes a cluster and its index entries. */
  remove(name: string): void {
    const before = this.records.get(name);
    if (before) this.unindex(before);
    this.records.delete(name);
  }

  /**
   * One copy of each label, claim and quantity string (most repeat across the fleet). The pool
   * is dropped when it outgrows the fleet, so values that change over time cannot grow it
   * without bound; strings already shared stay shared.
   */
  private intern(s: string): string {
    const hit = this.strings.get(s);
    if (hit !== undefined) return hit;
    if (this.strings.size > 4 * this.records.size + 10_000) this.strings.clear();
    this.strings.set(s, s);
    return s;
  }

  private internRecord(r: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> | undefined {
    if (r === undefined) return undefined;
    const out: Record<string, string> = {};
    let any = false;
    for (const k of Object.keys(r)) {
      out[this.intern(k)] = this.intern(r[k]!);
      any = true;
    }
    return any ? out : EMPTY;
  }

  private index(c: ClusterRecord): void {
    for (const [k, v] of Object.entries(c.labels ?? EMPTY)) {
      let ki = this.labelIndex.get(k);
      if (!ki) this.labelIndex.set(k, (ki = { values: new Map(), size: 0, countStamp: 0, goneStamp: 0 }));
      let b = ki.values.get(v);
      if (!b) ki.values.set(v, (b = { names: new Set(), countStamp: ki.goneStamp }));
      b.names.add(c.name);
      ki.size++;
    }
  }

  private unindex(c: ClusterRecord): void {
    for (const [k, v] of Object.entries(c.labels ?? EMPTY)) {
      const ki = this.labelIndex.get(k);
      const b = ki?.values.get(v);
      if (!ki || !b || !b.names.delete(c.name)) continue;
      ki.size--;
      if (b.names.size === 0) {
        ki.values.delete(v);
        if (b.countStamp > ki.goneStamp) ki.goneStamp = b.countStamp;
      }
    }
  }

  /** Records that a cluster's decision count changed at decisions version `v`, on every index entry holding it. */
  stampCount(cluster: string, v: number): void {
    this.globalCountStamp = v;
    const labels = this.records.get(cluster)?.labels;
    if (!labels) return;
    for (const [k, val] of Object.entries(labels)) {
      const ki = this.labelIndex.get(k);
      if (!ki) continue;
      ki.countStamp = v;
      const b = ki.values.get(val);
      if (b) b.countStamp = v;
    }
  }

  /**
   * The index entries that hold every cluster a label selector can match: those of its
   * `=`/`in`/exists requirement with the fewest clusters; "all" when it has none.
   */
  narrowest(sel: LabelSelectorRequirementSet): Source {
    if (sel.matchesNothing) return [];
    let best: Source = "all";
    let bestSize = Infinity;
    for (const r of sel.requirements) {
      let entries: { key: string; value?: string }[];
      let size: number;
      const ki = this.labelIndex.get(r.key);
      if (r.operator === "=" || r.operator === "==" || r.operator === "in") {
        entries = r.values.map((value) => ({ key: r.key, value }));
        size = 0;
        for (const v of r.values) size += ki?.values.get(v)?.names.size ?? 0;
      } else if (r.operator === "exists") {
        entries = [{ key: r.key }];
        size = ki?.size ?? 0;
      } else continue;
      if (size < bestSize) {
        best = entries;
        bestSize = size;
      }
    }
    return best;
  }

  /** How many clusters a source names (an upper bound: a cluster in two entries counts twice). */
  sourceSize(s: Source): number {
    if (s === "all") return this.records.size;
    let n = 0;
    for (const e of s) {
      const ki = this.labelIndex.get(e.key);
      n += e.value === undefined ? (ki?.size ?? 0) : (ki?.values.get(e.value)?.names.size ?? 0);
    }
    return n;
  }

  /** The names of a source's clusters, each once (a Set, or the index's own set for one entry: not to be modified). */
  sourceNames(s: Source): Iterable<string> {
    if (s === "all") return this.records.keys();
    if (s.length === 1 && s[0]!.value !== undefined) return this.labelIndex.get(s[0]!.key)?.values.get(s[0]!.value)?.names ?? [];
    const out = new Set<string>();
    for (const e of s) {
      const ki = this.labelIndex.get(e.key);
      if (!ki) continue;
      if (e.value !== undefined) for (const n of ki.values.get(e.value)?.names ?? []) out.add(n);
      else for (const b of ki.values.values()) for (const n of b.names) out.add(n);
    }
    return out;
  }

  /** The highest decisions version that changed a count of a cluster of the source. */
  sourceStamp(s: Source): number {
    if (s === "all") return this.globalCountStamp;
    let max = 0;
    for (const e of s) {
      const ki = this.labelIndex.get(e.key);
      if (!ki) continue;
      const v = e.value === undefined ? ki.countStamp : (ki.values.get(e.value)?.countStamp ?? ki.goneStamp);
      if (v > max) max = v;
    }
    return max;
  }
}
