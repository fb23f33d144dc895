/**
 * The scheduler's own view of what scheduling reads, kept in memory by the SchedulerObject and
 * updated from the change each trigger carries, so that one change costs the placements it can
 * affect and their candidates, never the whole fleet.
 *
 * It holds, compactly:
 * - per ManagedCluster its {@link ClusterView} (labels, claims, taints, allocatable, capacity,
 *   deletion) and its set membership, recomputed lazily after a ManagedClusterSet changes;
 * - a label index, label key → value → cluster names (a ManagedClusterSet with the exclusive
 *   `cluster.open-cluster-management.io/clusterset` label is one entry of it);
 * - the ManagedClusterSets (compiled selectors), ManagedClusterSetBindings (by namespace and by
 *   set), Placements (by namespace), PlacementDecisions (by placement), AddOnPlacementScores;
 * - the number of ClusterDecisions per cluster over every PlacementDecision (what OCM's Balance
 *   prioritizer reads), with a histogram of those numbers for the largest one.
 *
 * A placement's candidates come from the index: the clusters of its eligible sets (an exclusive
 * set is one index entry; a label-selector set is narrowed by one of its requirements; the
 * `global` set, or any set whose selector is empty, is every cluster), or the clusters its
 * predicates' label selectors can match (one `=`, `in` or exists requirement per predicate),
 * whichever is smaller, plus the clusters of its current decisions. `schedule()` applies every
 * filter again, so a candidate list only has to be a superset; what schedule() reads of the
 * whole fleet besides it (whether the eligible sets have any cluster, the Balance counts) is
 * passed explicitly ({@link ScheduleInput.eligibleSetsHaveClusters}, a
 * {@link DecisionCountLookup}).
 *
 * Skipping: a placement enqueued only by ManagedCluster changes (OCM schedules every placement
 * bound to the cluster's sets) is not scheduled again when its previous result provably stands:
 * - it ran before on this view, and since then neither its object (but for its own status
 *   write), any ManagedClusterSet nor any ManagedClusterSetBinding changed, and its
 *   PlacementDecisions are still those it read (its decisions are an input, to Steady and
 *   NoSelectIfNew: a run that changed them runs again next time, until they settle);
 * - its result does not depend on time (no `tolerationSeconds`, no AddOn prioritizer) and its
 *   policy and predicates are valid (a Misconfigured one always runs);
 * - every cluster changed in this run is outside its decisions, and either was no candidate
 *   before nor after the change (not in an eligible set, or being deleted), or was a candidate
 *   both times and matched none of its predicates both times, or changed nothing scheduling
 *   reads; every other cluster change since its last run was proven the same way or could not
 *   enqueue it (a cluster outside every set bound to its namespace);
 * - with the Balance prioritizer: no ClusterDecision count changed on a cluster of its candidate
 *   source (tracked per label index entry) and the largest count of the other placements is the
 *   one it read.
 * The randomised equivalence test (test/unit/placement-view.test.ts) checks that every write
 * equals the full recompute's (src/placement/state.ts) after every change.
 *
 * Versions: every applied change carries the object's resourceVersion; an older one than the
 * view holds (or than a delete it saw) is ignored, so triggers that arrive out of order cannot
 * roll the view back. {@link catchUp} compares those versions with the store's log of committed
 * writes, to repair a write whose trigger never arrived.
 */
import type { LabelSelectorRequirementSet } from "../k8s/labels.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { CLUSTERSET_LABEL } from "../kinds/managedcluster.ts";
import { ManagedClusterSetBindingKind, PlacementDecisionKind, PlacementKind } from "../kinds/placement.ts";
import {
  clusterMatches,
  compileClusterSelector,
  eligibleClusterSets,
  prioritizerNames,
  type AddOnPlacementScoreInput,
  type CompiledClusterSelector,
  type DecisionCountLookup,
  type ScheduleInput,
  type SchedulingCluster,
} from "../scheduling/index.ts";
import {
  mergeTriggers,
  runPlacementController,
  type ClusterView,
  type PlacementState,
  type RunResult,
  type SaveObject,
  type Trigger,
  type ViewResource,
} from "./plan.ts";
import { clusterView, compileSetSelector, decidedClusters, decisionOwner, inCompiledSet, placementSpec, readsScore, scoreInput } from "./reads.ts";

/** A cluster as the view keeps it: its scheduling view, set membership and resourceVersion. */
interface ClusterRecord extends ClusterView {
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

interface SetRecord {
  object: KubeObject;
  rv: number;
  /** null for an ExclusiveClusterSetLabel set (members carry the clusterset label). */
  selector: LabelSelectorRequirementSet | null;
}

/** What a placement's last run read, to decide whether it may be skipped. */
interface RunStamp {
  rv: number;
  ownVersion: number;
  setsVersion: number;
  bindingsVersion: number;
  decisionsVersion: number;
  maxOthers: number;
}

/** Per-spec facts, cached by resourceVersion. */
interface PlacementInfo {
  rv: number;
  /** The compiled predicates, or null when one is invalid or has CEL (never skipped). */
  selectors: CompiledClusterSelector[] | null;
  /** Narrowing per predicate (a superset of its matches), or null when one predicate cannot be narrowed. */
  narrowing: Source | null;
  /** Whether its result can depend on the time or on AddOnPlacementScores (never skipped). */
  unskippable: boolean;
  balance: boolean;
}

interface PlacementRecord {
  object: KubeObject;
  rv: number;
  lastRun?: RunStamp;
  info?: PlacementInfo;
}

/** A candidate source: every cluster, or the union of label index entries (a value, or every value of a key). */
type Source = "all" | { key: string; value?: string }[];

const EMPTY_TAINTS: ClusterView["taints"] = Object.freeze([]) as unknown as ClusterView["taints"];
const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

const objectKey = (namespace: string, name: string) => `${namespace}/${name}`;
const byNamespaceName = (a: KubeObject, b: KubeObject) => cmp(a.metadata.namespace ?? "", b.metadata.namespace ?? "") || cmp(a.metadata.name, b.metadata.name);
function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
const rvOf = (o: KubeObject) => Number(o.metadata.resourceVersion);

/** What a cold start reads: every object of each kind, page by page (ManagedClusters as their views). */
export interface ViewSource {
  clusters(): AsyncIterable<{ view: ClusterView; resourceVersion: string }[]>;
  objects(resource: ViewResource | "placementdecisions"): AsyncIterable<KubeObject[]>;
}

/** The scheduler's incremental view; a {@link PlacementState} for the placement controller. */
export class SchedulerView implements PlacementState {
  private readonly clusters = new Map<string, ClusterRecord>();
  private readonly labelIndex = new Map<string, KeyIndex>();
  private readonly sets = new Map<string, SetRecord>();
  /** namespace → binding name → binding */
  private readonly bindings = new Map<string, Map<string, KubeObject>>();
  /** set name → namespaces with a binding of that name */
  private readonly boundNamespaces = new Map<string, Set<string>>();
  /** namespace → name → placement */
  private readonly placements = new Map<string, Map<string, PlacementRecord>>();
  /** `<namespace>/<name>` → PlacementDecision */
  private readonly decisions = new Map<string, KubeObject>();
  /** `<namespace>/<placement>` → its PlacementDecisions by name */
  private readonly decisionsByPlacement = new Map<string, Map<string, KubeObject>>();
  /** `<namespace>/<placement>` → bumped whenever one of its PlacementDecisions changes */
  private readonly ownVersions = new Map<string, number>();
  /** cluster → ClusterDecisions naming it over every PlacementDecision */
  private readonly counts = new Map<string, number>();
  /** count → clusters with that count (counts ≥ 1) */
  private readonly histogram = new Map<number, number>();
  /** cluster (namespace) → resourceName → score */
  private readonly scores: Record<string, Record<string, AddOnPlacementScoreInput>> = {};
  private readonly scoreVersions = new Map<string, number>();
  /** `<resource>\0<namespace>/<name>` → resourceVersion of a delete seen */
  private readonly tombstones = new Map<string, number>();
  private readonly membershipCache = new Map<string, readonly string[]>();
  private readonly strings = new Map<string, string>();

  private setsVersion = 0;
  private bindingsVersion = 0;
  private decisionsVersion = 0;
  private globalCountStamp = 0;

  // The current run: clusters changed (as they were before it), stamps to record, own writes to apply after it.
  private runChanges = new Map<string, ClusterRecord | undefined>();
  private runStamps = new Map<string, { ownVersion: number; decisionsVersion: number; maxOthers: number }>();
  private runWrites: { def: KindDefinition; current: KubeObject | null; stored: KubeObject | null }[] = [];
  private runStale: { def: KindDefinition; namespace: string; name: string }[] = [];

  /**
   * Builds a view from every object of `source` (the cold start).
   * @throws whatever the source throws.
   */
  static async build(source: ViewSource): Promise<SchedulerView> {
    const view = new SchedulerView();
    for await (const page of source.objects("managedclustersets")) for (const o of page) view.applySet(o.metadata.name, o, rvOf(o));
    for await (const page of source.clusters()) for (const c of page) view.applyCluster(c.view.name, c.view, Number(c.resourceVersion));
    for await (const page of source.objects("managedclustersetbindings"))
      for (const o of page) view.applyBinding(o.metadata.namespace!, o.metadata.name, o, rvOf(o));
    for await (const page of source.objects("placements")) for (const o of page) view.applyPlacement(o.metadata.namespace!, o.metadata.name, o, rvOf(o));
    for await (const page of source.objects("placementdecisions")) for (const o of page) view.applyDecision(o.metadata.namespace!, o.metadata.name, o, rvOf(o));
    for await (const page of source.objects("addonplacementscores")) for (const o of page) view.applyScore(o.metadata.namespace!, o.metadata.name, o, rvOf(o));
    view.runChanges.clear();
    return view;
  }

  /** Number of ManagedClusters in the view. */
  get clusterCount(): number {
    return this.clusters.size;
  }

  // ---- applying changes ------------------------------------------------------------------

  /**
   * Applies the changes a trigger carries (clusters' views, written objects). Changes without
   * their object must have been resolved first (src/placement/view-d1.ts `resolveTrigger`);
   * those still without one are ignored.
   */
  applyTrigger(trigger: Trigger): void {
    for (const c of trigger.clusters ?? []) {
      if (c.after === undefined) continue;
      this.applyCluster(c.name, c.after, c.resourceVersion === undefined ? undefined : Number(c.resourceVersion));
    }
    for (const o of trigger.objects ?? []) {
      if (o.object === undefined) continue;
      const rv = o.object ? rvOf(o.object) : o.resourceVersion === undefined ? undefined : Number(o.resourceVersion);
      switch (o.resource) {
        case "managedclustersets":
          this.applySet(o.name, o.object, rv);
          break;
        case "managedclustersetbindings":
          this.applyBinding(o.namespace, o.name, o.object, rv);
          break;
        case "placements":
          this.applyPlacement(o.namespace, o.name, o.object, rv);
          break;
        case "addonplacementscores":
          this.applyScore(o.namespace, o.name, o.object, rv);
          break;
      }
    }
  }

  /**
   * Applies a committed write of an object read back (a point read after a conflict, or a
   * missed write). `object` null means it does not exist.
   */
  applyObject(def: KindDefinition, namespace: string, name: string, object: KubeObject | null): void {
    const rv = object ? rvOf(object) : this.versionOf(def.plural, namespace, name);
    if (def === PlacementDecisionKind) this.applyDecision(namespace, name, object, rv);
    else if (def === PlacementKind) this.applyPlacement(namespace, name, object, rv);
    else if (def === ManagedClusterSetBindingKind) this.applyBinding(namespace, name, object, rv);
  }

  /** The resourceVersion the view holds for an object (0 when it holds none). */
  versionOf(resource: string, namespace: string, name: string): number {
    switch (resource) {
      case "managedclusters":
        return this.clusters.get(name)?.rv ?? 0;
      case "managedclustersets":
        return this.sets.get(name)?.rv ?? 0;
      case "managedclustersetbindings":
        return rvOrZero(this.bindings.get(namespace)?.get(name));
      case "placements":
        return this.placements.get(namespace)?.get(name)?.rv ?? 0;
      case "placementdecisions":
        return rvOrZero(this.decisions.get(objectKey(namespace, name)));
      case "addonplacementscores":
        return this.scoreVersions.get(objectKey(namespace, name)) ?? 0;
      default:
        return 0;
    }
  }

  /**
   * Whether a change at `rv` is newer than what the view holds (the object, or a delete of it).
   * A delete at `rv` (the deleted object's version) applies unless the view holds a newer
   * object. An unknown version always applies.
   */
  private fresh(resource: string, namespace: string, name: string, rv: number | undefined, deleting: boolean): boolean {
    if (rv === undefined || Number.isNaN(rv)) return true;
    const held = this.versionOf(resource, namespace, name);
    const tomb = this.tombstones.get(`${resource}\0${namespace}/${name}`) ?? 0;
    return deleting ? held <= rv : rv > held && rv > tomb;
  }

  private tombstone(resource: string, namespace: string, name: string, rv: number | undefined): void {
    if (rv !== undefined && !Number.isNaN(rv)) this.tombstones.set(`${resource}\0${namespace}/${name}`, rv);
  }

  /**
   * One copy of each label, claim and quantity string (most repeat across the fleet). The pool
   * is dropped when it outgrows the fleet, so values that change over time cannot grow it
   * without bound; strings already shared stay shared.
   */
  private intern(s: string): string {
    const hit = this.strings.get(s);
    if (hit !== undefined) return hit;
    if (this.strings.size > 4 * this.clusters.size + 10_000) this.strings.clear();
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

  private applyCluster(name: string, view: ClusterView | null, rv: number | undefined): void {
    if (!this.fresh("managedclusters", "", name, rv, view === null)) return;
    const before = this.clusters.get(name);
    if (!this.runChanges.has(name)) this.runChanges.set(name, before);
    if (before) this.unindex(before);
    if (view === null) {
      this.clusters.delete(name);
      this.tombstone("managedclusters", "", name, rv);
      return;
    }
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
    this.clusters.set(record.name, record);
    this.index(record);
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

  private applySet(name: string, object: KubeObject | null, rv: number | undefined): void {
    if (!this.fresh("managedclustersets", "", name, rv, object === null)) return;
    this.setsVersion++;
    this.membershipCache.clear();
    if (object === null) {
      this.sets.delete(name);
      this.tombstone("managedclustersets", "", name, rv);
      return;
    }
    this.sets.set(name, { object, rv: rv ?? 0, selector: compileSetSelector(object) });
  }

  private applyBinding(namespace: string, name: string, object: KubeObject | null, rv: number | undefined): void {
    if (!this.fresh("managedclustersetbindings", namespace, name, rv, object === null)) return;
    let inNs = this.bindings.get(namespace);
    const before = inNs?.get(name);
    if (object === null) {
      if (before) {
        inNs!.delete(name);
        const nss = this.boundNamespaces.get(name);
        nss?.delete(namespace);
        if (nss?.size === 0) this.boundNamespaces.delete(name);
        this.bindingsVersion++;
      }
      this.tombstone("managedclustersetbindings", namespace, name, rv);
      return;
    }
    if (!inNs) this.bindings.set(namespace, (inNs = new Map()));
    inNs.set(name, object);
    let nss = this.boundNamespaces.get(name);
    if (!nss) this.boundNamespaces.set(name, (nss = new Set()));
    nss.add(namespace);
    // Scheduling reads a binding's existence and name only; its status is the scheduler's own.
    if (!before) this.bindingsVersion++;
  }

  private applyPlacement(namespace: string, name: string, object: KubeObject | null, rv: number | undefined): void {
    if (!this.fresh("placements", namespace, name, rv, object === null)) return;
    let inNs = this.placements.get(namespace);
    if (object === null) {
      inNs?.delete(name);
      if (inNs?.size === 0) this.placements.delete(namespace);
      this.tombstone("placements", namespace, name, rv);
      return;
    }
    if (!inNs) this.placements.set(namespace, (inNs = new Map()));
    const rec = inNs.get(name);
    if (rec) {
      rec.object = object;
      rec.rv = rv ?? rec.rv;
    } else inNs.set(name, { object, rv: rv ?? 0 });
  }

  private applyScore(namespace: string, name: string, object: KubeObject | null, rv: number | undefined): void {
    if (!this.fresh("addonplacementscores", namespace, name, rv, object === null)) return;
    const k = objectKey(namespace, name);
    if (object === null) {
      const inNs = this.scores[namespace];
      if (inNs) {
        delete inNs[name];
        if (Object.keys(inNs).length === 0) delete this.scores[namespace];
      }
      this.scoreVersions.delete(k);
      this.tombstone("addonplacementscores", namespace, name, rv);
      return;
    }
    (this.scores[namespace] ??= {})[name] = scoreInput(object);
    this.scoreVersions.set(k, rv ?? 0);
  }

  private applyDecision(namespace: string, name: string, object: KubeObject | null, rv: number | undefined): void {
    if (!this.fresh("placementdecisions", namespace, name, rv, object === null)) return;
    const k = objectKey(namespace, name);
    const before = this.decisions.get(k);
    const diff = new Map<string, number>();
    if (before) {
      const owner = decisionOwner(before);
      if (owner !== undefined) {
        const pk = objectKey(namespace, owner);
        const own = this.decisionsByPlacement.get(pk);
        own?.delete(name);
        if (own?.size === 0) this.decisionsByPlacement.delete(pk);
        this.ownVersions.set(pk, (this.ownVersions.get(pk) ?? 0) + 1);
      }
      for (const c of decidedClusters(before)) diff.set(c, (diff.get(c) ?? 0) - 1);
    }
    if (object === null) {
      this.decisions.delete(k);
      this.tombstone("placementdecisions", namespace, name, rv);
    } else {
      this.decisions.set(k, object);
      const owner = decisionOwner(object);
      if (owner !== undefined) {
        const pk = objectKey(namespace, owner);
        let own = this.decisionsByPlacement.get(pk);
        if (!own) this.decisionsByPlacement.set(pk, (own = new Map()));
        own.set(name, object);
        this.ownVersions.set(pk, (this.ownVersions.get(pk) ?? 0) + 1);
      }
      for (const c of decidedClusters(object)) diff.set(c, (diff.get(c) ?? 0) + 1);
    }
    let changed = false;
    for (const [c, d] of diff) {
      if (d === 0) continue;
      if (!changed) {
        this.decisionsVersion++;
        changed = true;
      }
      const old = this.counts.get(c) ?? 0;
      const now = old + d;
      if (old > 0) this.histogramAdd(old, -1);
      if (now > 0) {
        this.histogramAdd(now, 1);
        this.counts.set(c, now);
      } else this.counts.delete(c);
      this.stampCount(c);
    }
  }

  private histogramAdd(count: number, d: number): void {
    const n = (this.histogram.get(count) ?? 0) + d;
    if (n > 0) this.histogram.set(count, n);
    else this.histogram.delete(count);
  }

  /** Records that a cluster's decision count changed, on every index entry holding it. */
  private stampCount(cluster: string): void {
    const v = this.decisionsVersion;
    this.globalCountStamp = v;
    const labels = this.clusters.get(cluster)?.labels;
    if (!labels) return;
    for (const [k, val] of Object.entries(labels)) {
      const ki = this.labelIndex.get(k);
      if (!ki) continue;
      ki.countStamp = v;
      const b = ki.values.get(val);
      if (b) b.countStamp = v;
    }
  }

  /** Every placement's `<namespace>/<name>`. */
  placementKeys(): string[] {
    const out: string[] = [];
    for (const [ns, inNs] of this.placements) for (const name of inNs.keys()) out.push(objectKey(ns, name));
    return out;
  }

  /**
   * The trigger a write would have carried, for a committed write the view missed (read back
   * as `object`, null when the object is gone): the cluster's labels before are the view's. A
   * ManagedCluster write that changed nothing scheduling reads only advances the version the
   * view holds; a PlacementDecision is applied at once and its placement scheduled again.
   */
  missedChange(resource: FollowedResource, namespace: string, name: string, object: KubeObject | null): Trigger | null {
    const held = this.versionOf(resource, namespace, name);
    if (object === null && held === 0) return null;
    const rv = object ? object.metadata.resourceVersion : String(held);
    const key = objectKey(namespace, name);
    switch (resource) {
      case "managedclusters": {
        const before = this.clusters.get(name);
        const after = object ? clusterView(object) : null;
        if (before && after && sameView(before, after)) {
          before.rv = rvOf(object!);
          return null;
        }
        return { clusters: [{ name, labelsBefore: before?.labels, labelsAfter: object?.metadata.labels, after, resourceVersion: rv }] };
      }
      case "placementdecisions": {
        const owner = decisionOwner(object ?? this.decisions.get(key)!);
        this.applyDecision(namespace, name, object, Number(rv));
        return owner === undefined ? null : { placements: [objectKey(namespace, owner)] };
      }
      case "placements":
        return { placements: [key], objects: [{ resource, namespace, name, object, resourceVersion: rv }] };
      case "managedclustersets": {
        // A write of its status only (the ClusterSetEmpty condition) changes nothing scheduling reads.
        const set = this.sets.get(name);
        if (set && object && JSON.stringify(set.object.spec ?? null) === JSON.stringify(object.spec ?? null)) {
          set.object = object;
          set.rv = rvOf(object);
          return null;
        }
        return { sets: [name], objects: [{ resource, namespace, name, object, resourceVersion: rv }] };
      }
      case "managedclustersetbindings":
        return { namespaces: [namespace], objects: [{ resource, namespace, name, object, resourceVersion: rv }] };
      case "addonplacementscores":
        return { scores: [{ cluster: namespace, resourceName: name }], objects: [{ resource, namespace, name, object, resourceVersion: rv }] };
    }
  }

  // ---- runs ----------------------------------------------------------------------------------

  /**
   * Wraps the controller's writer: each committed write is applied to the view once the run
   * ends (reads within a run see the state at its start), and each conflict is remembered so
   * that the caller can read that object again ({@link SchedulerView.takeStale}).
   */
  recorder(saveObject: SaveObject): SaveObject {
    return async (def, current, next) => {
      const saved = await saveObject(def, current, next);
      if (saved.written) this.runWrites.push({ def, current, stored: saved.stored });
      else if (saved.conflict) {
        const o = (next ?? current)!;
        this.runStale.push({ def, namespace: o.metadata.namespace ?? "", name: o.metadata.name });
      }
      return saved;
    };
  }

  /** The objects whose write conflicted in the last run (to be read again), once. */
  takeStale(): { def: KindDefinition; namespace: string; name: string }[] {
    const out = this.runStale;
    this.runStale = [];
    return out;
  }

  /**
   * Ends a run: applies its own writes, and (when it completed) records what each scheduled
   * placement read, for {@link SchedulerView.affected} to skip it later.
   */
  endRun(completed: RunResult | undefined): void {
    for (const w of this.runWrites) {
      const o = (w.stored ?? w.current)!;
      const ns = o.metadata.namespace ?? "";
      const rv = w.stored ? rvOf(w.stored) : rvOf(w.current!);
      if (w.def === PlacementDecisionKind) this.applyDecision(ns, o.metadata.name, w.stored, rv);
      else if (w.def === PlacementKind) this.applyPlacement(ns, o.metadata.name, w.stored, rv);
      else if (w.def === ManagedClusterSetBindingKind) this.applyBinding(ns, o.metadata.name, w.stored, rv);
    }
    this.runWrites = [];
    for (const k of this.runStamps.keys()) {
      const [ns, name] = splitKey(k);
      const rec = this.placements.get(ns)?.get(name);
      if (rec) delete rec.lastRun;
    }
    if (completed) {
      for (const k of completed.scheduled) {
        const [ns, name] = splitKey(k);
        const rec = this.placements.get(ns)?.get(name);
        const s = this.runStamps.get(k);
        if (!rec || !s) continue;
        rec.lastRun = { rv: rec.rv, setsVersion: this.setsVersion, bindingsVersion: this.bindingsVersion, ...s };
      }
    }
    this.runStamps.clear();
    this.runChanges.clear();
  }

  // ---- PlacementState --------------------------------------------------------------------------

  /** OCM `enqueue.go`, from the indexes; placements enqueued only by cluster changes may be skipped. */
  affected(t: Trigger): { run: KubeObject[]; skipped: string[] } {
    const wanted = new Set(t.placements ?? []);
    const direct = new Set(t.namespaces ?? []);
    for (const s of t.sets ?? []) for (const ns of this.boundNamespaces.get(s) ?? []) direct.add(ns);
    const byCluster = new Set<string>();
    for (const c of t.clusters ?? []) {
      for (const labels of [c.labelsBefore, c.labelsAfter])
        for (const s of this.setsOf(labels)) for (const ns of this.boundNamespaces.get(s) ?? []) byCluster.add(ns);
    }
    const scoreNamespaces = new Map<string, Set<string>>();
    for (const sc of t.scores ?? []) {
      for (const s of this.setsOf(this.clusters.get(sc.cluster)?.labels)) {
        for (const ns of this.boundNamespaces.get(s) ?? []) {
          if (!scoreNamespaces.has(ns)) scoreNamespaces.set(ns, new Set());
          scoreNamespaces.get(ns)!.add(sc.resourceName);
        }
      }
    }
    const candidates: PlacementRecord[] = [];
    for (const ns of new Set([...direct, ...byCluster, ...scoreNamespaces.keys()]))
      for (const rec of this.placements.get(ns)?.values() ?? []) candidates.push(rec);
    for (const k of wanted) {
      const [ns, name] = splitKey(k);
      const rec = this.placements.get(ns)?.get(name);
      if (rec) candidates.push(rec);
    }
    const seen = new Set<PlacementRecord>();
    const run: KubeObject[] = [];
    const skipped: string[] = [];
    for (const rec of candidates.sort((a, b) => byNamespaceName(a.object, b.object))) {
      if (seen.has(rec)) continue;
      seen.add(rec);
      const ns = rec.object.metadata.namespace!;
      const k = objectKey(ns, rec.object.metadata.name);
      const resources = scoreNamespaces.get(ns);
      const forced = wanted.has(k) || direct.has(ns) || (resources !== undefined && readsScore(placementSpec(rec.object), resources));
      if (!forced && !byCluster.has(ns)) continue;
      if (!forced && this.unaffected(rec)) skipped.push(k);
      else run.push(rec.object);
    }
    return { run, skipped };
  }

  hasPlacement(namespace: string, name: string): boolean {
    return this.placements.get(namespace)?.has(name) ?? false;
  }

  /** The bindings in the trigger's namespaces and those named after its sets. */
  bindingsToCheck(t: Trigger): KubeObject[] {
    const out = new Set<KubeObject>();
    for (const ns of t.namespaces ?? []) for (const b of this.bindings.get(ns)?.values() ?? []) out.add(b);
    for (const s of t.sets ?? []) for (const ns of this.boundNamespaces.get(s) ?? []) out.add(this.bindings.get(ns)!.get(s)!);
    return [...out].sort(byNamespaceName);
  }

  hasSet(name: string): boolean {
    return this.sets.has(name);
  }

  decisionsOf(namespace: string, placement: string): KubeObject[] {
    return [...(this.decisionsByPlacement.get(objectKey(namespace, placement))?.values() ?? [])].sort(byNamespaceName);
  }

  /** The candidates from the index, the eligible sets' emptiness, and the Balance counts as a lookup. */
  scheduleInput(placement: KubeObject, own: KubeObject[]): ScheduleInput {
    const ns = placement.metadata.namespace!;
    const spec = placementSpec(placement);
    const bound = this.boundSets(ns);
    const eligible = eligibleClusterSets(spec, bound);
    const existing = own.flatMap(decidedClusters);
    const counts = this.otherCounts(own);
    const k = objectKey(ns, placement.metadata.name);
    this.runStamps.set(k, { ownVersion: this.ownVersions.get(k) ?? 0, decisionsVersion: this.decisionsVersion, maxOthers: counts.maxCount });
    return {
      placement: { name: placement.metadata.name, spec },
      clusters: this.candidates(this.sourceOf(this.info(ns, placement), eligible), existing),
      boundClusterSets: bound,
      existingDecisions: existing,
      otherDecisionCounts: counts,
      addOnPlacementScores: this.scores,
      eligibleSetsHaveClusters: this.anyMember(eligible),
    };
  }

  // ---- reads -------------------------------------------------------------------------------

  /** The sets bound to a namespace by a binding whose set exists, by binding name. */
  private boundSets(namespace: string): string[] {
    return [...(this.bindings.get(namespace)?.keys() ?? [])].filter((s) => this.sets.has(s)).sort(cmp);
  }

  /** The names of the sets labels belong to (as `clusterInSet`), interned per label set. */
  private setsOf(labels: Readonly<Record<string, string>> | undefined): readonly string[] {
    const out: string[] = [];
    for (const [name, s] of this.sets) if (inSet(name, s, labels)) out.push(name);
    const k = out.join("\0");
    const hit = this.membershipCache.get(k);
    if (hit) return hit;
    this.membershipCache.set(k, out);
    return out;
  }

  private record(c: ClusterRecord): SchedulingCluster {
    if (c.setsAt !== this.setsVersion) {
      c.clusterSets = this.setsOf(c.labels);
      c.setsAt = this.setsVersion;
    }
    return c;
  }

  /** Predicates compiled once per placement version. */
  private info(namespace: string, placement: KubeObject): PlacementInfo {
    const rec = this.placements.get(namespace)?.get(placement.metadata.name);
    const rv = rvOf(placement);
    if (rec?.info && rec.info.rv === rv) return rec.info;
    const spec = placementSpec(placement);
    let selectors: CompiledClusterSelector[] | null = [];
    let narrowing: Source | null = [];
    for (const p of spec.predicates ?? []) {
      const rcs = p.requiredClusterSelector;
      try {
        if ((rcs?.celSelector?.celExpressions?.length ?? 0) > 0) throw new Error("CEL");
        const compiled = compileClusterSelector(rcs?.labelSelector, rcs?.claimSelector);
        selectors?.push(compiled);
        const n = compiled.labels ? this.narrowest(compiled.labels) : null;
        if (n === null || n === "all") narrowing = null;
        else narrowing?.push(...n);
      } catch {
        selectors = null;
        narrowing = null;
      }
    }
    if ((spec.predicates ?? []).length === 0) narrowing = null;
    const names = prioritizerNames(spec);
    const info: PlacementInfo = {
      rv,
      selectors,
      narrowing,
      unskippable: names === undefined || names.some((n) => n.startsWith("AddOn/")) || (spec.tolerations ?? []).some((t) => t.tolerationSeconds != null),
      balance: names?.includes("Balance") ?? true,
    };
    if (rec) rec.info = info;
    return info;
  }

  /**
   * The index entries that hold every cluster a label selector can match: those of its
   * `=`/`in`/exists requirement with the fewest clusters; "all" when it has none.
   */
  private narrowest(sel: LabelSelectorRequirementSet): Source {
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

  private sourceSize(s: Source): number {
    if (s === "all") return this.clusters.size;
    let n = 0;
    for (const e of s) {
      const ki = this.labelIndex.get(e.key);
      n += e.value === undefined ? (ki?.size ?? 0) : (ki?.values.get(e.value)?.names.size ?? 0);
    }
    return n;
  }

  /** The source of a placement's candidates: its eligible sets' members or its predicates' matches, whichever is smaller. */
  private sourceOf(info: PlacementInfo, eligible: readonly string[]): Source {
    const bySets: { key: string; value?: string }[] = [];
    let setsAll = false;
    for (const name of eligible) {
      const s = this.sets.get(name);
      if (!s) continue;
      const src = s.selector === null ? [{ key: CLUSTERSET_LABEL, value: name }] : this.narrowest(s.selector);
      if (src === "all") setsAll = true;
      else bySets.push(...src);
    }
    const fromSets: Source = setsAll ? "all" : bySets;
    if (info.narrowing === null) return fromSets;
    return this.sourceSize(info.narrowing) < this.sourceSize(fromSets) ? info.narrowing : fromSets;
  }

  private sourceNames(s: Source): Iterable<string> {
    if (s === "all") return this.clusters.keys();
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
  private sourceStamp(s: Source): number {
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

  private candidates(s: Source, existing: readonly string[]): SchedulingCluster[] {
    const out: SchedulingCluster[] = [];
    const names = this.sourceNames(s);
    for (const n of names) out.push(this.record(this.clusters.get(n)!));
    if (s !== "all" && existing.length > 0) {
      const have = names instanceof Set ? names : new Set(out.map((c) => c.name));
      for (const n of new Set(existing)) {
        const c = this.clusters.get(n);
        if (c && !have.has(n)) out.push(this.record(c));
      }
    }
    return out;
  }

  /** Whether a cluster not being deleted belongs to one of the sets. */
  private anyMember(setNames: readonly string[]): boolean {
    for (const name of setNames) {
      const s = this.sets.get(name);
      if (!s) continue;
      const src = s.selector === null ? [{ key: CLUSTERSET_LABEL, value: name }] : this.narrowest(s.selector);
      for (const n of this.sourceNames(src)) {
        const c = this.clusters.get(n)!;
        if (!c.deleting && inSet(name, s, c.labels)) return true;
      }
    }
    return false;
  }

  /** Other placements' ClusterDecisions per cluster: every count minus the placement's own. */
  private otherCounts(own: readonly KubeObject[]): DecisionCountLookup {
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

  /** Whether a placement enqueued by this run's cluster changes provably keeps its last result (see the module doc). */
  private unaffected(rec: PlacementRecord): boolean {
    const st = rec.lastRun;
    const ns = rec.object.metadata.namespace!;
    const name = rec.object.metadata.name;
    const k = objectKey(ns, name);
    if (
      !st ||
      st.rv !== rec.rv ||
      st.ownVersion !== (this.ownVersions.get(k) ?? 0) ||
      st.setsVersion !== this.setsVersion ||
      st.bindingsVersion !== this.bindingsVersion
    )
      return false;
    const info = this.info(ns, rec.object);
    if (info.unskippable || info.selectors === null) return false;
    const eligible = eligibleClusterSets(placementSpec(rec.object), this.boundSets(ns));
    const own = this.decisionsOf(ns, name);
    const decided = new Set(own.flatMap(decidedClusters));
    for (const [cluster, before] of this.runChanges) {
      // Implied by the rules below while every earlier change was proven, but cheap to keep.
      if (decided.has(cluster)) return false;
      const after = this.clusters.get(cluster);
      if (before && after && sameView(before, after)) continue;
      const wasCandidate = before !== undefined && !before.deleting && this.inAny(eligible, before.labels);
      const isCandidate = after !== undefined && !after.deleting && this.inAny(eligible, after.labels);
      if (!wasCandidate && !isCandidate) continue;
      const selectors = info.selectors;
      if (
        wasCandidate === isCandidate &&
        selectors.length > 0 &&
        !selectors.some((s) => clusterMatches(s, before!)) &&
        !selectors.some((s) => clusterMatches(s, after!))
      )
        continue;
      return false;
    }
    if (info.balance) {
      if (this.sourceStamp(this.sourceOf(info, eligible)) > st.decisionsVersion) return false;
      if (this.otherCounts(own).maxCount !== st.maxOthers) return false;
    }
    return true;
  }

  private inAny(setNames: readonly string[], labels: Readonly<Record<string, string>> | undefined): boolean {
    for (const name of setNames) {
      const s = this.sets.get(name);
      if (s && inSet(name, s, labels)) return true;
    }
    return false;
  }
}

function rvOrZero(o: KubeObject | undefined): number {
  return o ? rvOf(o) : 0;
}

function splitKey(k: string): [string, string] {
  const i = k.indexOf("/");
  return [k.slice(0, i), k.slice(i + 1)];
}

function inSet(name: string, s: SetRecord, labels: Readonly<Record<string, string>> | undefined): boolean {
  return inCompiledSet(name, s.selector, labels);
}

function sameView(a: ClusterView, b: ClusterView): boolean {
  return (
    a.deleting === b.deleting &&
    a.kubernetesVersion === b.kubernetesVersion &&
    sameRecord(a.labels, b.labels) &&
    sameRecord(a.claims, b.claims) &&
    sameRecord(a.allocatable, b.allocatable) &&
    sameRecord(a.capacity, b.capacity) &&
    JSON.stringify(a.taints ?? []) === JSON.stringify(b.taints ?? [])
  );
}

function sameRecord(a: Readonly<Record<string, string>> | undefined, b: Readonly<Record<string, string>> | undefined): boolean {
  const ka = Object.keys(a ?? EMPTY);
  const kb = Object.keys(b ?? EMPTY);
  if (ka.length !== kb.length) return false;
  for (const k of ka) if (!Object.hasOwn(b ?? EMPTY, k) || a![k] !== b![k]) return false;
  return true;
}

/** The kinds whose writes the view follows, by plural. */
export type FollowedResource = ViewResource | "managedclusters" | "placementdecisions";

/** The store's log of committed writes (D1's `events` table), as {@link catchUp} reads it. */
export interface ChangeLog {
  /**
   * The latest committed resourceVersion, and every object of the followed kinds written after
   * `version` (with the version of its last write). `expired`: the log no longer reaches back
   * to `version` (older entries were pruned).
   */
  since(
    version: number,
  ): Promise<{ latest: number; expired: boolean; changed: { resource: FollowedResource; namespace: string; name: string; resourceVersion: number }[] }>;
  /** One object as stored now, or null. */
  read(resource: FollowedResource, namespace: string, name: string): Promise<KubeObject | null>;
}

/**
 * The consistency check of the view against the store: every object of the followed kinds
 * written after `watermark` (a version up to which the view has every write) whose version is
 * newer than the one the view holds was missed (its trigger never came); it is read back and
 * turned into the trigger it should have carried. Returns that trigger and the new watermark,
 * or undefined when the view cannot be repaired and must be rebuilt: the log was pruned past
 * the watermark, or the store's latest version is below it (the store went back in time, as
 * after a restore).
 */
export async function catchUp(view: SchedulerView, log: ChangeLog, watermark: number): Promise<{ trigger: Trigger; watermark: number } | undefined> {
  const { latest, expired, changed } = await log.since(watermark);
  if (expired || latest < watermark) return undefined;
  let trigger: Trigger = {};
  for (const c of changed) {
    if (view.versionOf(c.resource, c.namespace, c.name) >= c.resourceVersion) continue;
    const missed = view.missedChange(c.resource, c.namespace, c.name, await log.read(c.resource, c.namespace, c.name));
    if (missed) trigger = mergeTriggers(trigger, missed);
  }
  return { trigger, watermark: latest };
}

/**
 * One run on the view: applies the trigger's changes, runs the placement controller over the
 * view, and applies its own writes after it. The trigger's changes must carry their objects
 * (src/placement/view-d1.ts `resolveTrigger` reads those that do not).
 * @throws whatever `saveObject` throws (the writes committed before it are applied to the view).
 */
export async function runOnView(view: SchedulerView, trigger: Trigger, nowMs: number, saveObject: SaveObject): Promise<RunResult> {
  view.applyTrigger(trigger);
  let result: RunResult | undefined;
  try {
    result = await runPlacementController(view, view.recorder(saveObject), trigger, nowMs);
    return result;
  } finally {
    view.endRun(result);
  }
}
