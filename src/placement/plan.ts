/**
 * The hub's placement controller, as a plan over what it reads and writes: pure (no I/O of its
 * own) around the pure scheduling core (src/scheduling).
 * Given what changed, it picks the placements the change can affect (as OCM's enqueue rules
 * do), schedules each, and writes the Placement status, its PlacementDecisions and the
 * ManagedClusterSetBinding `Bound` conditions, each only when it changed.
 *
 * What the plan reads comes from a {@link PlacementState}: the scheduler's incremental view
 * (src/placement/view.ts) in production, or the full lists (src/placement/state.ts), OCM's
 * recompute-everything reference that the equivalence tests compare the view with. What it
 * writes goes through a {@link SaveObject}: D1 (src/placement/controller.ts `save`) in production.
 */
import { resourceKey, type KindDefinition } from "../k8s/kind.ts";
import { rfc3339, setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { ManagedClusterSetBindingKind, PlacementDecisionKind, PlacementKind } from "../kinds/placement.ts";
import { clusterToleratedUntil, schedule, type PlacementSpec, type ScheduleInput, type SchedulingCluster } from "../scheduling/index.ts";

/**
 * What scheduling reads of one ManagedCluster (its {@link SchedulingCluster} without the set
 * membership, which the scheduler derives from the labels and the ManagedClusterSets).
 */
export type ClusterView = Omit<SchedulingCluster, "clusterSets">;

/**
 * One ManagedCluster write. `labelsBefore` / `labelsAfter` drive OCM's enqueue rule (the
 * placements bound to the cluster's sets before or after). `after` is what scheduling reads of
 * the cluster after the write (null once deleted) and `resourceVersion` the written object's
 * (or, for a delete, the deleted object's) resourceVersion; without `after` the scheduler reads
 * the cluster itself.
 */
export interface ClusterChange {
  name: string;
  labelsBefore?: Record<string, string>;
  labelsAfter?: Record<string, string>;
  after?: ClusterView | null;
  resourceVersion?: string;
}

/** The D1-stored kinds whose objects the scheduler keeps, by their plural. */
export type ViewResource = "placements" | "managedclustersets" | "managedclustersetbindings" | "addonplacementscores";

/**
 * One committed write of a Placement, ManagedClusterSet, ManagedClusterSetBinding or
 * AddOnPlacementScore. `object` is the object after the write (with its resourceVersion), null
 * after a delete; when it is absent the scheduler reads the object itself (one keyed read).
 * `resourceVersion` is, for a delete, the deleted object's resourceVersion (so a late delete
 * never removes a newer object).
 */
export interface ObjectChange {
  resource: ViewResource;
  namespace: string;
  name: string;
  object?: KubeObject | null;
  resourceVersion?: string;
}

/**
 * What changed, so that only the placements it can affect are scheduled again:
 * - `placements`: `<namespace>/<name>` of placements written (or deleted) or due again;
 * - `clusters`: clusters written, with every set they belonged to before or after the write;
 * - `sets`: ManagedClusterSets written; `namespaces`: namespaces whose bindings were written;
 * - `scores`: AddOnPlacementScores written (`cluster` = their namespace, `resourceName` = name);
 * - `objects`: the written objects themselves, which the scheduler's view applies.
 */
export interface Trigger {
  placements?: string[];
  clusters?: ClusterChange[];
  sets?: string[];
  namespaces?: string[];
  scores?: { cluster: string; resourceName: string }[];
  objects?: ObjectChange[];
}

/** Merges triggers (set union per field; changes are kept in order). */
export function mergeTriggers(a: Trigger, b: Trigger): Trigger {
  return {
    placements: [...new Set([...(a.placements ?? []), ...(b.placements ?? [])])],
    clusters: [...(a.clusters ?? []), ...(b.clusters ?? [])],
    sets: [...new Set([...(a.sets ?? []), ...(b.sets ?? [])])],
    namespaces: [...new Set([...(a.namespaces ?? []), ...(b.namespaces ?? [])])],
    scores: [...(a.scores ?? []), ...(b.scores ?? [])],
    objects: [...(a.objects ?? []), ...(b.objects ?? [])],
  };
}

/**
 * The result of one run: placements scheduled, placements the trigger enqueued but that were
 * proven unaffected and not scheduled again (`skipped`, see src/placement/view.ts), objects
 * written, the earliest toleration expiry per scheduled placement (epoch ms), and
 * `decisionsChanged`: the placements (`<namespace>/<name>`) whose PlacementDecisions or
 * status.decisionGroups were written or deleted (what replica sets read), and `statusWritten`:
 * the objects whose status the run wrote (Placements, bindings), as
 * `<group>/<plural>/<namespace>/<name>`.
 */
export interface RunResult {
  scheduled: string[];
  skipped: string[];
  writes: number;
  requeue: Record<string, number>;
  decisionsChanged: string[];
  statusWritten: string[];
}

/**
 * What the plan reads. Every read answers for the state as it was when the run started: the
 * run's own writes are not seen by later reads of the same run (as when the whole state is
 * listed once at the start).
 */
export interface PlacementState {
  /**
   * The placements `trigger` enqueues (OCM `enqueue.go`), in (namespace, name) order: `run`
   * are scheduled; `skipped` (keys) were enqueued but cannot get another result.
   */
  affected(trigger: Trigger): { run: KubeObject[]; skipped: string[] };
  /** Whether the placement exists. */
  hasPlacement(namespace: string, name: string): boolean;
  /** The ManagedClusterSetBindings whose `Bound` condition `trigger` can change, in (namespace, name) order. */
  bindingsToCheck(trigger: Trigger): KubeObject[];
  /** Whether the ManagedClusterSet exists. */
  hasSet(name: string): boolean;
  /** The PlacementDecisions labelled with the placement (in its namespace), by name. */
  decisionsOf(namespace: string, placement: string): KubeObject[];
  /** What {@link schedule} needs for the placement, given its own PlacementDecisions. */
  scheduleInput(placement: KubeObject, own: KubeObject[]): ScheduleInput;
}

/** The outcome of one {@link SaveObject}: written (with the stored object, null after a delete), or not (`conflict` when a concurrent write won). */
export type Saved = { written: true; stored: KubeObject | null } | { written: false; conflict: boolean };

/** Commits one object the controller computed (`next` null deletes `current`). */
export type SaveObject = (def: KindDefinition, current: KubeObject | null, next: KubeObject | null) => Promise<Saved>;

const key = (o: KubeObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

function newObject(def: KindDefinition, namespace: string, name: string, nowMs: number): KubeObject {
  return {
    apiVersion: `${def.group}/${def.version}`,
    kind: def.kind,
    metadata: { name, namespace, uid: crypto.randomUUID(), resourceVersion: "", creationTimestamp: rfc3339(nowMs), generation: 1 },
  };
}

async function updateBindings(state: PlacementState, saveObject: SaveObject, trigger: Trigger, nowMs: number): Promise<number> {
  let writes = 0;
  const now = rfc3339(nowMs);
  for (const b of state.bindingsToCheck(trigger)) {
    // Copies only what changes (objects are never changed in place, so the rest is shared).
    const conditions = [...((b.status?.conditions ?? []) as Condition[])];
    const next: KubeObject = { ...b, status: { ...(b.status ?? {}), conditions } };
    setCondition(
      conditions,
      state.hasSet(b.metadata.name)
        ? { type: "Bound", status: "True", reason: "ClusterSetBound", message: "" }
        : { type: "Bound", status: "False", reason: "ClusterSetNotFound", message: "" },
      now,
    );
    if ((await saveObject(ManagedClusterSetBindingKind, b, next)).written) writes++;
  }
  return writes;
}

async function schedulePlacement(
  state: PlacementState,
  saveObject: SaveObject,
  placement: KubeObject,
  nowMs: number,
): Promise<{ writes: number; requeueAt?: number; decisionsChanged: boolean }> {
  const ns = placement.metadata.namespace!;
  const name = placement.metadata.name;
  const own = state.decisionsOf(ns, name);
  const input = state.scheduleInput(placement, own);
  const result = schedule(input, new Date(nowMs));

  let writes = 0;
  let decisionsChanged = false;
  const now = rfc3339(nowMs);
  const desired = new Set<string>();
  for (const page of result.placementDecisions) {
    desired.add(page.name);
    const current = own.find((d) => d.metadata.name === page.name) ?? null;
    const base = current ?? newObject(PlacementDecisionKind, ns, page.name, nowMs);
    const next: KubeObject = {
      ...base,
      metadata: {
        ...base.metadata,
        labels: { ...(base.metadata.labels ?? {}), ...page.labels },
        ownerReferences: [
          {
            apiVersion: `${PlacementKind.group}/${PlacementKind.version}`,
            kind: "Placement",
            name,
            uid: placement.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      status: { decisions: page.decisions },
    };
    if ((await saveObject(PlacementDecisionKind, current, next)).written) {
      writes++;
      decisionsChanged = true;
    }
  }
  for (const d of own) {
    if (!desired.has(d.metadata.name) && (await saveObject(PlacementDecisionKind, d, null)).written) {
      writes++;
      decisionsChanged = true;
    }
  }
  const groupsBefore = JSON.stringify((placement.status as { decisionGroups?: unknown } | undefined)?.decisionGroups ?? null);

  const status = { ...(placement.status ?? {}) } as { numberOfSelectedClusters?: number; decisionGroups?: unknown[]; conditions?: Condition[] };
  status.numberOfSelectedClusters = result.numberOfSelectedClusters;
  status.decisionGroups = result.decisionGroupStatus;
  const conditions = [...(status.conditions ?? [])];
  status.conditions = conditions;
  const next: KubeObject = { ...placement, status };
  for (const c of result.conditions) setCondition(conditions, { ...c, observedGeneration: placement.metadata.generation }, now);
  if ((await saveObject(PlacementKind, placement, next)).written) {
    writes++;
    if (JSON.stringify(status.decisionGroups ?? null) !== groupsBefore) decisionsChanged = true;
  }
  // OCM requeues at the earliest toleration expiry among the placement's decisions; it learns the
  // new decisions from the PlacementDecision events of its own write, here they are at hand.
  let requeueAt = result.requeueAt ?? Infinity;
  const tolerations = (placement.spec as PlacementSpec | undefined)?.tolerations ?? [];
  if (tolerations.some((t) => t.tolerationSeconds != null)) {
    const byName = new Map(input.clusters.map((c) => [c.name, c]));
    for (const n of result.decisions) {
      const until = clusterToleratedUntil(byName.get(n)!, tolerations, true, nowMs);
      if (until > nowMs && until < requeueAt) requeueAt = until;
    }
  }
  return { writes, requeueAt: Number.isFinite(requeueAt) ? requeueAt : undefined, decisionsChanged };
}

async function deleteOrphanDecisions(state: PlacementState, saveObject: SaveObject, trigger: Trigger, changed: Set<string>): Promise<number> {
  let writes = 0;
  for (const k of trigger.placements ?? []) {
    const [ns, name] = k.split("/") as [string, string];
    if (state.hasPlacement(ns, name)) continue;
    for (const d of state.decisionsOf(ns, name)) {
      if ((await saveObject(PlacementDecisionKind, d, null)).written) {
        writes++;
        changed.add(k);
      }
    }
  }
  return writes;
}

/**
 * Runs the controller for one trigger over `state`: updates the bindings' `Bound` conditions,
 * deletes the PlacementDecisions of placements that no longer exist (OCM's owner-reference
 * garbage collection), schedules every placement the trigger affects, and writes what changed
 * through `saveObject`, in that order. `nowMs` is epoch milliseconds.
 * @throws whatever `saveObject` throws; the writes before it stay committed.
 */
export async function runPlacementController(state: PlacementState, save: SaveObject, trigger: Trigger, nowMs: number): Promise<RunResult> {
  const statusWritten = new Set<string>();
  const saveObject: SaveObject = async (def, current, next) => {
    const saved = await save(def, current, next);
    if (saved.written && current && next && def !== PlacementDecisionKind)
      statusWritten.add(`${resourceKey(def)}/${current.metadata.namespace ?? ""}/${current.metadata.name}`);
    return saved;
  };
  let writes = 0;
  if ((trigger.sets?.length ?? 0) > 0 || (trigger.namespaces?.length ?? 0) > 0) writes += await updateBindings(state, saveObject, trigger, nowMs);
  const decisionsChanged = new Set<string>();
  writes += await deleteOrphanDecisions(state, saveObject, trigger, decisionsChanged);
  const { run, skipped } = state.affected(trigger);
  const requeue: Record<string, number> = {};
  for (const p of run) {
    const r = await schedulePlacement(state, saveObject, p, nowMs);
    writes += r.writes;
    if (r.requeueAt !== undefined) requeue[key(p)] = r.requeueAt;
    if (r.decisionsChanged) decisionsChanged.add(key(p));
  }
  return { scheduled: run.map(key), skipped, writes, requeue, decisionsChanged: [...decisionsChanged], statusWritten: [...statusWritten] };
}
