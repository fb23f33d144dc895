/**
 * The scheduler's own view of what scheduling reads, kept in memory by the SchedulerObject and
 * updated from the change each trigger carries, so that one change costs the placements it can
 * affect and their candidates, never the whole fleet.
 *
 * It holds, compactly, in one module per concern:
 * - the ManagedClusters, each's {@link ClusterView} (labels, claims, taints, allocatable,
 *   capacity, deletion), and a label index, label key → value → cluster names
 *   (src/placement/view-clusters.ts); a cluster's set membership is recomputed lazily after a
 *   ManagedClusterSet changes;
 * - the ManagedClusterSets (compiled selectors) and ManagedClusterSetBindings (by namespace and
 *   by set) (src/placement/view-sets.ts);
 * - the PlacementDecisions (by placement), and the number of ClusterDecisions per cluster over
 *   every PlacementDecision (what OCM's Balance prioritizer reads), with a histogram of those
 *   numbers for the largest one (src/placement/view-decisions.ts);
 * - the Placements (by namespace), each with what its last run read, to skip a run whose result
 *   provably stands (src/placement/view-skip.ts says when), and the AddOnPlacementScores (here).
 * This module joins them: it applies the changes, answers the placement controller
 * ({@link PlacementState}: which placements a change enqueues, each's candidates) and records a
 * run's own writes.
 *
 * A placement's candidates come from the index: the clusters of its eligible sets (an exclusive
 * set is one index entry; a label-selector set is narrowed by one of its requirements; the
 * `global` set, or any set whose selector is empty, is every cluster), or the clusters its
 * predicates' label selectors can match (one `=`, `in` or exists requirement per predicate),
 * whichever is smaller, plus the clusters of its current decisions. `schedule()` applies every
 * filter again, so a candidate list only has to be a superset; what schedule() reads of the
 * whole fleet besides it (whether the eligible sets have any cluster, the Balance counts) is
 * passed explicitly ({@link ScheduleInput.eligibleSetsHaveClusters}, a `DecisionCountLookup`).
 *
 * Versions: every applied change carries the object's resourceVersion; an older one than the
 * view holds (or than a delete it saw) is ignored, so triggers that arrive out of order cannot
 * roll the view back. {@link catchUp} (src/placement/view-catch-up.ts) compares those versions
 * with the store's log of committed writes, to repair a write whose trigger never arrived.
 */
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { CLUSTERSET_LABEL } from "../kinds/managedcluster.ts";
import { ManagedClusterSetBindingKind, PlacementDecisionKind, PlacementKind } from "../kinds/placement.ts";
import { clusterMatches, eligibleClusterSets, type AddOnPlacementScoreInput, type ScheduleInput, type SchedulingCluster } from "../scheduling/index.ts";
import { runPlacementController, type ClusterView, type PlacementState, type RunResult, type SaveObject, type Trigger, type ViewResource } from "./plan.ts";
import { byNamespaceName, clusterView, decidedClusters, decisionOwner, objectKey, placementSpec, readsScore, scoreInput } from "./reads.ts";
import type { FollowedResource } from "./view-catch-up.ts";
import { ClusterIndex, type ClusterRecord, type Source } from "./view-clusters.ts";
import { DecisionIndex } from "./view-decisions.ts";
import { inSet, SetIndex, type SetRecord } from "./view-sets.ts";
import { placementInfo, sameView, type PlacementInfo, type PlacementRecord } from "./view-skip.ts";

export { catchUp, type ChangeLog, type FollowedResource } from "./view-catch-up.ts";

const rvOf = (o: KubeObject) => Number(o.metadata.resourceVersion);

/** What a cold start reads: every object of each kind, page by page (ManagedClusters as their views). */
export interface ViewSource {
  clusters(): AsyncIterable<{ view: ClusterView; resourceVersion: string }[]>;
  objects(resource: ViewResource | "placementdecisions"): AsyncIterable<KubeObject[]>;
}

/** The scheduler's incremental view; a {@link PlacementState} for the placement controller. */
export class SchedulerView implements PlacementState {
  private readonly clusters = new ClusterIndex();
  private readonly sets = new SetIndex();
  private readonly decisions = new DecisionIndex(this.clusters);
  /** namespace → name → placement */
  private readonly placements = new Map<string, Map<string, PlacementRecord>>();
  /** cluster (namespace) → resourceName → score */
  private readonly scores: Record<string, Record<string, AddOnPlacementScoreInput>> = {};
  private readonly scoreVersions = new Map<string, number>();
  /** `<resource>\0<namespace>/<name>` → resourceVersion of a delete seen */
  private readonly tombstones = new Map<string, number>();

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
        return this.clusters.records.get(name)?.rv ?? 0;
      case "managedclustersets":
        return this.sets.sets.get(name)?.rv ?? 0;
      case "managedclustersetbindings":
        return rvOrZero(this.sets.bindings.get(namespace)?.get(name));
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

  private applyCluster(name: string, view: ClusterView | null, rv: number | undefined): void {
    if (!this.fresh("managedclusters", "", name, rv, view === null)) return;
    if (!this.runChanges.has(name)) this.runChanges.set(name, this.clusters.records.get(name));
    if (view === null) {
      this.clusters.remove(name);
      this.tombstone("managedclusters", "", name, rv);
      return;
    }
    this.clusters.put(name, view, rv);
  }

  private applySet(name: string, object: KubeObject | null, rv: number | undefined): void {
    if (!this.fresh("managedclustersets", "", name, rv, object === null)) return;
    this.sets.applySet(name, object, rv);
    if (object === null) this.tombstone("managedclustersets", "", name, rv);
  }

  private applyBinding(namespace: string, name: string, object: KubeObject | null, rv: number | undefined): void {
    if (!this.fresh("managedclustersetbindings", namespace, name, rv, object === null)) return;
    this.sets.applyBinding(namespace, name, object);
    if (object === null) this.tombstone("managedclustersetbindings", namespace, name, rv);
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
    this.decisions.apply(namespace, name, object);
    if (object === null) this.tombstone("placementdecisions", namespace, name, rv);
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
        const before = this.clusters.records.get(name);
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
        const set = this.sets.sets.get(name);
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
        rec.lastRun = { rv: rec.rv, setsVersion: this.sets.setsVersion, bindingsVersion: this.sets.bindingsVersion, ...s };
      }
    }
    this.runStamps.clear();
    this.runChanges.clear();
  }

  // ---- PlacementState --------------------------------------------------------------------------

  /** OCM `enqueue.go`, from the indexes; placements enqueued only by cluster changes may be skipped. */
  affected(t: Trigger): { run: KubeObject[]; skipped: string[] } {
    const boundNamespaces = this.sets.boundNamespaces;
    const wanted = new Set(t.placements ?? []);
    const direct = new Set(t.namespaces ?? []);
    for (const s of t.sets ?? []) for (const ns of boundNamespaces.get(s) ?? []) direct.add(ns);
    const byCluster = new Set<string>();
    for (const c of t.clusters ?? []) {
      for (const labels of [c.labelsBefore, c.labelsAfter])
        for (const s of this.sets.setsOf(labels)) for (const ns of boundNamespaces.get(s) ?? []) byCluster.add(ns);
    }
    const scoreNamespaces = new Map<string, Set<string>>();
    for (const sc of t.scores ?? []) {
      for (const s of this.sets.setsOf(this.clusters.records.get(sc.cluster)?.labels)) {
        for (const ns of boundNamespaces.get(s) ?? []) {
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
    const { bindings, boundNamespaces } = this.sets;
    const out = new Set<KubeObject>();
    for (const ns of t.namespaces ?? []) for (const b of bindings.get(ns)?.values() ?? []) out.add(b);
    for (const s of t.sets ?? []) for (const ns of boundNamespaces.get(s) ?? []) out.add(bindings.get(ns)!.get(s)!);
    return [...out].sort(byNamespaceName);
  }

  hasSet(name: string): boolean {
    return this.sets.sets.has(name);
  }

  decisionsOf(namespace: string, placement: string): KubeObject[] {
    return this.decisions.of(namespace, placement);
  }

  /** The candidates from the index, the eligible sets' emptiness, and the Balance counts as a lookup. */
  scheduleInput(placement: KubeObject, own: KubeObject[]): ScheduleInput {
    const ns = placement.metadata.namespace!;
    const spec = placementSpec(placement);
    const bound = this.sets.boundSets(ns);
    const eligible = eligibleClusterSets(spec, bound);
    const existing = own.flatMap(decidedClusters);
    const counts = this.decisions.otherCounts(own);
    const k = objectKey(ns, placement.metadata.name);
    this.runStamps.set(k, { ownVersion: this.decisions.ownVersion(k), decisionsVersion: this.decisions.version, maxOthers: counts.maxCount });
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

  /** A cluster's record with its set membership brought up to date. */
  private record(c: ClusterRecord): SchedulingCluster {
    const setsVersion = this.sets.setsVersion;
    if (c.setsAt !== setsVersion) {
      c.clusterSets = this.sets.setsOf(c.labels);
      c.setsAt = setsVersion;
    }
    return c;
  }

  /** Predicates compiled once per placement version. */
  private info(namespace: string, placement: KubeObject): PlacementInfo {
    const rec = this.placements.get(namespace)?.get(placement.metadata.name);
    const rv = rvOf(placement);
    if (rec?.info && rec.info.rv === rv) return rec.info;
    const info = placementInfo(placement, rv, this.clusters);
    if (rec) rec.info = info;
    return info;
  }

  /** The index entries holding a set's members: its clusterset label's value, or its selector's narrowest entries. */
  private setSource(name: string, selector: SetRecord["selector"]): Source {
    return selector === null ? [{ key: CLUSTERSET_LABEL, value: name }] : this.clusters.narrowest(selector);
  }

  /** The source of a placement's candidates: its eligible sets' members or its predicates' matches, whichever is smaller. */
  private sourceOf(info: PlacementInfo, eligible: readonly string[]): Source {
    const bySets: { key: string; value?: string }[] = [];
    let setsAll = false;
    for (const name of eligible) {
      const s = this.sets.sets.get(name);
      if (!s) continue;
      const src = this.setSource(name, s.selector);
      if (src === "all") setsAll = true;
      else bySets.push(...src);
    }
    const fromSets: Source = setsAll ? "all" : bySets;
    if (info.narrowing === null) return fromSets;
    return this.clusters.sourceSize(info.narrowing) < this.clusters.sourceSize(fromSets) ? info.narrowing : fromSets;
  }

  private candidates(s: Source, existing: readonly string[]): SchedulingCluster[] {
    const records = this.clusters.records;
    const out: SchedulingCluster[] = [];
    const names = this.clusters.sourceNames(s);
    for (const n of names) out.push(this.record(records.get(n)!));
    if (s !== "all" && existing.length > 0) {
      const have = names instanceof Set ? names : new Set(out.map((c) => c.name));
      for (const n of new Set(existing)) {
        const c = records.get(n);
        if (c && !have.has(n)) out.push(this.record(c));
      }
    }
    return out;
  }

  /** Whether a cluster not being deleted belongs to one of the sets. */
  private anyMember(setNames: readonly string[]): boolean {
    const records = this.clusters.records;
    for (const name of setNames) {
      const s = this.sets.sets.get(name);
      if (!s) continue;
      for (const n of this.clusters.sourceNames(this.setSource(name, s.selector))) {
        const c = records.get(n)!;
        if (!c.deleting && inSet(name, s, c.labels)) return true;
      }
    }
    return false;
  }

  /** Whether a placement enqueued by this run's cluster changes provably keeps its last result (src/placement/view-skip.ts). */
  private unaffected(rec: PlacementRecord): boolean {
    const st = rec.lastRun;
    const ns = rec.object.metadata.namespace!;
    const name = rec.object.metadata.name;
    const k = objectKey(ns, name);
    if (
      !st ||
      st.rv !== rec.rv ||
      st.ownVersion !== this.decisions.ownVersion(k) ||
      st.setsVersion !== this.sets.setsVersion ||
      st.bindingsVersion !== this.sets.bindingsVersion
    )
      return false;
    const info = this.info(ns, rec.object);
    if (info.unskippable || info.selectors === null) return false;
    const eligible = eligibleClusterSets(placementSpec(rec.object), this.sets.boundSets(ns));
    const own = this.decisions.of(ns, name);
    const decided = new Set(own.flatMap(decidedClusters));
    for (const [cluster, before] of this.runChanges) {
      // Implied by the rules below while every earlier change was proven, but cheap to keep.
      if (decided.has(cluster)) return false;
      const after = this.clusters.records.get(cluster);
      if (before && after && sameView(before, after)) continue;
      const wasCandidate = before !== undefined && !before.deleting && this.sets.inAny(eligible, before.labels);
      const isCandidate = after !== undefined && !after.deleting && this.sets.inAny(eligible, after.labels);
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
      if (this.clusters.sourceStamp(this.sourceOf(info, eligible)) > st.decisionsVersion) return false;
      if (this.decisions.otherCounts(own).maxCount !== st.maxOthers) return false;
    }
    return true;
  }
}

function rvOrZero(o: KubeObject | undefined): number {
  return o ? rvOf(o) : 0;
}

function splitKey(k: string): [string, string] {
  const i = k.indexOf("/");
  return [k.slice(0, i), k.slice(i + 1)];
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
