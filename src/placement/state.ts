/**
 * The full recompute: a {@link PlacementState} over complete lists of every ManagedCluster,
 * set, binding, placement, decision and score, read the way OCM's controller reads its informer
 * caches, with nothing indexed. Every read scans the lists. It is the reference the scheduler's
 * incremental view (src/placement/view.ts) is tested against (same trigger, same state, same
 * writes), and the baseline of `npm run bench:scheduler-view`.
 */
import type { KubeObject } from "../k8s/meta.ts";
import { clusterInSet } from "../kinds/managedclusterset.ts";
import { PLACEMENT_LABEL, type AddOnPlacementScoreInput, type ScheduleInput, type SchedulingCluster } from "../scheduling/index.ts";
import type { PlacementState, Trigger } from "./plan.ts";
import { clusterView, decidedClusters, placementSpec, readsScore, scoreInput } from "./reads.ts";

/** Every object of the kinds scheduling reads, each list in (namespace, name) order. */
export interface HubLists {
  clusters: KubeObject[];
  sets: KubeObject[];
  bindings: KubeObject[];
  placements: KubeObject[];
  decisions: KubeObject[];
  scores: KubeObject[];
}

const key = (o: KubeObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

function setsOf(sets: KubeObject[], labels: Record<string, string> | undefined): string[] {
  return sets.filter((s) => clusterInSet(s, labels)).map((s) => s.metadata.name);
}

/** Namespaces that have a binding to one of `setNames` (bindings to missing sets included). */
function namespacesBoundTo(bindings: KubeObject[], setNames: Set<string>): Set<string> {
  const out = new Set<string>();
  for (const b of bindings) if (setNames.has(b.metadata.name)) out.add(b.metadata.namespace!);
  return out;
}

/** A {@link PlacementState} that scans {@link HubLists} (OCM's full recompute, no index). */
export class ListState implements PlacementState {
  private clusters: SchedulingCluster[] | undefined;
  private scores: Record<string, Record<string, AddOnPlacementScoreInput>> | undefined;

  constructor(private readonly state: HubLists) {}

  /** OCM `enqueue.go`: the written placements, those bound to the written clusters' or sets' sets, and score readers. */
  affected(t: Trigger): { run: KubeObject[]; skipped: string[] } {
    const state = this.state;
    const wanted = new Set(t.placements ?? []);
    const namespaces = new Set(t.namespaces ?? []);
    const setNames = new Set(t.sets ?? []);
    for (const c of t.clusters ?? []) {
      for (const s of setsOf(state.sets, c.labelsBefore)) setNames.add(s);
      for (const s of setsOf(state.sets, c.labelsAfter)) setNames.add(s);
    }
    for (const ns of namespacesBoundTo(state.bindings, setNames)) namespaces.add(ns);
    const scoreNamespaces = new Map<string, Set<string>>();
    for (const sc of t.scores ?? []) {
      const cluster = state.clusters.find((c) => c.metadata.name === sc.cluster);
      for (const ns of namespacesBoundTo(state.bindings, new Set(setsOf(state.sets, cluster?.metadata.labels)))) {
        if (!scoreNamespaces.has(ns)) scoreNamespaces.set(ns, new Set());
        scoreNamespaces.get(ns)!.add(sc.resourceName);
      }
    }
    const run = state.placements.filter((p) => {
      if (wanted.has(key(p)) || namespaces.has(p.metadata.namespace!)) return true;
      const resources = scoreNamespaces.get(p.metadata.namespace!);
      return resources !== undefined && readsScore(placementSpec(p), resources);
    });
    return { run, skipped: [] };
  }

  hasPlacement(namespace: string, name: string): boolean {
    return this.state.placements.some((p) => p.metadata.namespace === namespace && p.metadata.name === name);
  }

  /** Every binding (a set or binding write re-checks them all). */
  bindingsToCheck(): KubeObject[] {
    return this.state.bindings;
  }

  hasSet(name: string): boolean {
    return this.state.sets.some((s) => s.metadata.name === name);
  }

  decisionsOf(namespace: string, placement: string): KubeObject[] {
    return this.state.decisions.filter((d) => d.metadata.namespace === namespace && d.metadata.labels?.[PLACEMENT_LABEL] === placement);
  }

  /** Every cluster, the decision counts of every other PlacementDecision, every score. */
  scheduleInput(placement: KubeObject, own: KubeObject[]): ScheduleInput {
    const state = this.state;
    const ns = placement.metadata.namespace!;
    const ownNames = new Set(own.map((d) => d.metadata.name));
    const counts = new Map<string, number>();
    for (const d of state.decisions) {
      if (d.metadata.namespace === ns && ownNames.has(d.metadata.name)) continue;
      for (const c of decidedClusters(d)) counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    const setNames = new Set(state.sets.map((s) => s.metadata.name));
    this.clusters ??= state.clusters.map((c) => ({ ...clusterView(c), clusterSets: setsOf(state.sets, c.metadata.labels) }));
    if (!this.scores) {
      this.scores = {};
      for (const s of state.scores) (this.scores[s.metadata.namespace!] ??= {})[s.metadata.name] = scoreInput(s);
    }
    return {
      placement: { name: placement.metadata.name, spec: placementSpec(placement) },
      clusters: this.clusters,
      boundClusterSets: state.bindings.filter((b) => b.metadata.namespace === ns && setNames.has(b.metadata.name)).map((b) => b.metadata.name),
      existingDecisions: own.flatMap(decidedClusters),
      otherDecisionCounts: counts,
      addOnPlacementScores: this.scores,
    };
  }
}
