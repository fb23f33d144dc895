/**
 * The hub's placement controller: the I/O shell around the pure scheduling core
 * (src/scheduling). Given what changed, it reads the current state from the D1 index, picks the
 * placements the change can affect (as OCM's enqueue rules do), schedules each, and writes the
 * Placement status, its PlacementDecisions and the ManagedClusterSetBinding `Bound` conditions,
 * each only when it changed.
 */
import type { DrizzleD1Database } from "drizzle-orm/d1";
import { ApiError } from "../k8s/errors.ts";
import { resourceKey, type KindDefinition } from "../k8s/kind.ts";
import { rfc3339, setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { database, listObjects } from "../k8s/store.ts";
import { commitChange, type Committed } from "../store/write.ts";
import type { Env } from "../env.ts";
import { ManagedClusterKind, type ManagedClusterSpec, type ManagedClusterStatus } from "../kinds/managedcluster.ts";
import { clusterInSet, ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import { AddOnPlacementScoreKind, ManagedClusterSetBindingKind, PlacementDecisionKind, PlacementKind } from "../kinds/placement.ts";
import { clusterToleratedUntil, PLACEMENT_LABEL, schedule, type AddOnPlacementScoreInput, type PlacementSpec, type SchedulingCluster } from "../scheduling/index.ts";

/**
 * What changed, so that only the placements it can affect are scheduled again:
 * - `placements`: `<namespace>/<name>` of placements written (or deleted);
 * - `clusters`: clusters written, with every set they belonged to before or after the write;
 * - `sets`: ManagedClusterSets written; `namespaces`: namespaces whose bindings were written;
 * - `scores`: AddOnPlacementScores written (`cluster` = their namespace, `resourceName` = name).
 */
export interface Trigger {
  placements?: string[];
  clusters?: { name: string; labelsBefore?: Record<string, string>; labelsAfter?: Record<string, string> }[];
  sets?: string[];
  namespaces?: string[];
  scores?: { cluster: string; resourceName: string }[];
}

/** Merges triggers (set union per field). */
export function mergeTriggers(a: Trigger, b: Trigger): Trigger {
  return {
    placements: [...new Set([...(a.placements ?? []), ...(b.placements ?? [])])],
    clusters: [...(a.clusters ?? []), ...(b.clusters ?? [])],
    sets: [...new Set([...(a.sets ?? []), ...(b.sets ?? [])])],
    namespaces: [...new Set([...(a.namespaces ?? []), ...(b.namespaces ?? [])])],
    scores: [...(a.scores ?? []), ...(b.scores ?? [])],
  };
}

/**
 * The result of one run: placements scheduled, objects written, the earliest toleration expiry
 * per placement (epoch ms), `decisionsChanged`: the placements (`<namespace>/<name>`) whose
 * PlacementDecisions or status.decisionGroups were written or deleted (what replica sets read),
 * and `statusWritten`: the objects whose status the run wrote (Placements, bindings), as
 * `<group>/<plural>/<namespace>/<name>`.
 */
export interface RunResult {
  scheduled: string[];
  writes: number;
  requeue: Record<string, number>;
  decisionsChanged: string[];
  statusWritten: string[];
}

/**
 * What one run writes with: the store (every write goes through the store's commit, so it owes
 * what any writer's would), its time (epoch ms), the commits that owe after-commit work (run
 * after the run, outside the scheduler's queue) and the objects whose status it wrote.
 */
interface RunContext {
  env: Env;
  db: DrizzleD1Database;
  nowMs: number;
  owing: Committed[];
  statusWritten: Set<string>;
}

interface HubState {
  clusters: KubeObject[];
  sets: KubeObject[];
  bindings: KubeObject[];
  placements: KubeObject[];
  decisions: KubeObject[];
  scores: KubeObject[];
}

async function loadState(db: DrizzleD1Database): Promise<HubState> {
  const [clusters, sets, bindings, placements, decisions, scores] = await Promise.all(
    [ManagedClusterKind, ManagedClusterSetKind, ManagedClusterSetBindingKind, PlacementKind, PlacementDecisionKind, AddOnPlacementScoreKind].map((k) =>
      listObjects(db, k, k.namespaced ? undefined : ""),
    ),
  );
  return {
    clusters: clusters!.items,
    sets: sets!.items,
    bindings: bindings!.items,
    placements: placements!.items,
    decisions: decisions!.items,
    scores: scores!.items,
  };
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

/** The placements a trigger can affect (OCM `enqueue.go` rules). */
function affected(state: HubState, t: Trigger): KubeObject[] {
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
  return state.placements.filter((p) => {
    if (wanted.has(key(p)) || namespaces.has(p.metadata.namespace!)) return true;
    const resources = scoreNamespaces.get(p.metadata.namespace!);
    if (!resources) return false;
    const configs = ((p.spec as PlacementSpec | undefined)?.prioritizerPolicy?.configurations ?? []);
    return configs.some((c) => c.scoreCoordinate?.type === "AddOn" && resources.has(c.scoreCoordinate.addOn?.resourceName ?? ""));
  });
}

function schedulingCluster(c: KubeObject, sets: KubeObject[]): SchedulingCluster {
  const spec = (c.spec ?? {}) as unknown as ManagedClusterSpec;
  const status = (c.status ?? {}) as ManagedClusterStatus;
  const claims: Record<string, string> = {};
  for (const cl of status.clusterClaims ?? []) claims[cl.name] = cl.value;
  return {
    name: c.metadata.name,
    labels: c.metadata.labels,
    claims,
    taints: (spec.taints ?? []).map((t) => ({ key: t.key, value: t.value, effect: t.effect, timeAdded: t.timeAdded ?? undefined })),
    allocatable: status.allocatable,
    capacity: status.capacity,
    deleting: Boolean(c.metadata.deletionTimestamp),
    clusterSets: setsOf(sets, c.metadata.labels),
  };
}

function scoreInputs(scores: KubeObject[]): Record<string, Record<string, AddOnPlacementScoreInput>> {
  const out: Record<string, Record<string, AddOnPlacementScoreInput>> = {};
  for (const s of scores) {
    const st = (s.status ?? {}) as { scores?: { name: string; value: number }[]; validUntil?: string | null };
    const values: Record<string, number> = {};
    for (const v of st.scores ?? []) values[v.name] = v.value;
    (out[s.metadata.namespace!] ??= {})[s.metadata.name] = { scores: values, validUntil: st.validUntil ?? undefined };
  }
  return out;
}

async function save(run: RunContext, def: KindDefinition, current: KubeObject | null, next: KubeObject | null): Promise<boolean> {
  if (current && next && JSON.stringify(current) === JSON.stringify(next)) return false;
  const k = { namespace: (next ?? current)!.metadata.namespace ?? "", name: (next ?? current)!.metadata.name };
  try {
    const committed = await commitChange(run.env, def, k, current, next, run.nowMs);
    if (committed.owed) run.owing.push(committed);
    if (current && next && def !== PlacementDecisionKind) run.statusWritten.add(`${resourceKey(def)}/${k.namespace}/${k.name}`);
  } catch (e) {
    // A concurrent user write to the same object triggers its own run; this one yields.
    if (e instanceof ApiError && (e.reason === "Conflict" || e.reason === "AlreadyExists" || e.reason === "NotFound")) return false;
    throw e;
  }
  return true;
}

function newObject(def: KindDefinition, namespace: string, name: string, nowMs: number): KubeObject {
  return {
    apiVersion: `${def.group}/${def.version}`,
    kind: def.kind,
    metadata: { name, namespace, uid: crypto.randomUUID(), resourceVersion: "", creationTimestamp: rfc3339(nowMs), generation: 1 },
  };
}

async function updateBindings(run: RunContext, state: HubState): Promise<number> {
  let writes = 0;
  const now = rfc3339(run.nowMs);
  const setNames = new Set(state.sets.map((s) => s.metadata.name));
  for (const b of state.bindings) {
    const next = structuredClone(b);
    const conditions = ((next.status ??= {}).conditions ??= []) as Condition[];
    const found = setNames.has(b.metadata.name);
    setCondition(
      conditions,
      found
        ? { type: "Bound", status: "True", reason: "ClusterSetBound", message: "" }
        : { type: "Bound", status: "False", reason: "ClusterSetNotFound", message: "" },
      now,
    );
    if (await save(run, ManagedClusterSetBindingKind, b, next)) writes++;
  }
  return writes;
}

async function schedulePlacement(run: RunContext, state: HubState, placement: KubeObject, clusters: SchedulingCluster[], scores: ReturnType<typeof scoreInputs>): Promise<{ writes: number; requeueAt?: number; decisionsChanged: boolean }> {
  const nowMs = run.nowMs;
  const ns = placement.metadata.namespace!;
  const name = placement.metadata.name;
  const own = state.decisions.filter((d) => d.metadata.namespace === ns && d.metadata.labels?.[PLACEMENT_LABEL] === name);
  const ownNames = new Set(own.map((d) => d.metadata.name));
  const existingDecisions = own.flatMap((d) => ((d.status as { decisions?: { clusterName: string }[] } | undefined)?.decisions ?? []).map((x) => x.clusterName));
  const counts = new Map<string, number>();
  for (const d of state.decisions) {
    if (d.metadata.namespace === ns && ownNames.has(d.metadata.name)) continue;
    for (const x of (d.status as { decisions?: { clusterName: string }[] } | undefined)?.decisions ?? []) counts.set(x.clusterName, (counts.get(x.clusterName) ?? 0) + 1);
  }
  const setNames = new Set(state.sets.map((s) => s.metadata.name));
  const bound = state.bindings.filter((b) => b.metadata.namespace === ns && setNames.has(b.metadata.name)).map((b) => b.metadata.name);
  const result = schedule(
    { placement: { name, spec: (placement.spec ?? {}) as PlacementSpec }, clusters, boundClusterSets: bound, existingDecisions, otherDecisionCounts: counts, addOnPlacementScores: scores },
    new Date(nowMs),
  );

  let writes = 0;
  let decisionsChanged = false;
  const now = rfc3339(nowMs);
  const desired = new Set<string>();
  for (const page of result.placementDecisions) {
    desired.add(page.name);
    const current = own.find((d) => d.metadata.name === page.name) ?? null;
    const next = current ? structuredClone(current) : newObject(PlacementDecisionKind, ns, page.name, nowMs);
    next.metadata.labels = { ...(next.metadata.labels ?? {}), ...page.labels };
    next.metadata.ownerReferences = [{ apiVersion: `${PlacementKind.group}/${PlacementKind.version}`, kind: "Placement", name, uid: placement.metadata.uid, controller: true, blockOwnerDeletion: true }];
    next.status = { decisions: page.decisions };
    if (await save(run, PlacementDecisionKind, current, next)) {
      writes++;
      decisionsChanged = true;
    }
  }
  for (const d of own) {
    if (!desired.has(d.metadata.name) && (await save(run, PlacementDecisionKind, d, null))) {
      writes++;
      decisionsChanged = true;
    }
  }
  const groupsBefore = JSON.stringify((placement.status as { decisionGroups?: unknown } | undefined)?.decisionGroups ?? null);

  const next = structuredClone(placement);
  const status = (next.status ??= {}) as { numberOfSelectedClusters?: number; decisionGroups?: unknown[]; conditions?: Condition[] };
  status.numberOfSelectedClusters = result.numberOfSelectedClusters;
  status.decisionGroups = result.decisionGroupStatus;
  const conditions = (status.conditions ??= []);
  for (const c of result.conditions) setCondition(conditions, { ...c, observedGeneration: placement.metadata.generation }, now);
  if (await save(run, PlacementKind, placement, next)) {
    writes++;
    if (JSON.stringify(status.decisionGroups ?? null) !== groupsBefore) decisionsChanged = true;
  }
  // OCM requeues at the earliest toleration expiry among the placement's decisions; it learns the
  // new decisions from the PlacementDecision events of its own write, here they are at hand.
  let requeueAt = result.requeueAt ?? Infinity;
  const tolerations = (placement.spec as PlacementSpec | undefined)?.tolerations ?? [];
  if (tolerations.some((t) => t.tolerationSeconds != null)) {
    const byName = new Map(clusters.map((c) => [c.name, c]));
    for (const n of result.decisions) {
      const until = clusterToleratedUntil(byName.get(n)!, tolerations, true, nowMs);
      if (until > nowMs && until < requeueAt) requeueAt = until;
    }
  }
  return { writes, requeueAt: Number.isFinite(requeueAt) ? requeueAt : undefined, decisionsChanged };
}

async function deleteOrphanDecisions(run: RunContext, state: HubState, gone: string[], changed: Set<string>): Promise<number> {
  let writes = 0;
  for (const k of gone) {
    const [ns, name] = k.split("/") as [string, string];
    for (const d of state.decisions) {
      if (d.metadata.namespace === ns && d.metadata.labels?.[PLACEMENT_LABEL] === name && (await save(run, PlacementDecisionKind, d, null))) {
        writes++;
        changed.add(k);
      }
    }
  }
  return writes;
}

/**
 * Runs the controller for one trigger: reads the state, schedules every affected placement, and
 * writes what changed through the store (src/store/write.ts `commitChange`). Placements that no
 * longer exist lose their PlacementDecisions (OCM's owner-reference garbage collection). `nowMs`
 * is epoch milliseconds. Also returns the commits that owe after-commit work: the caller runs
 * them (`finishCommit`) outside the scheduler's queue, since a hook may wait for the scheduler.
 * The run's own writes (statuses, decisions) owe none today (see src/placement/triggers.ts).
 */
export async function runPlacementController(env: Env, trigger: Trigger, nowMs: number): Promise<{ result: RunResult; owing: Committed[] }> {
  const run: RunContext = { env, db: database(env.DB), nowMs, owing: [], statusWritten: new Set() };
  const state = await loadState(run.db);
  let writes = 0;
  if ((trigger.sets?.length ?? 0) > 0 || (trigger.namespaces?.length ?? 0) > 0) writes += await updateBindings(run, state);
  const existing = new Set(state.placements.map(key));
  const decisionsChanged = new Set<string>();
  writes += await deleteOrphanDecisions(run, state, (trigger.placements ?? []).filter((p) => !existing.has(p)), decisionsChanged);
  const targets = affected(state, trigger);
  const clusters = state.clusters.map((c) => schedulingCluster(c, state.sets));
  const scores = scoreInputs(state.scores);
  const requeue: Record<string, number> = {};
  for (const p of targets) {
    const r = await schedulePlacement(run, state, p, clusters, scores);
    writes += r.writes;
    if (r.requeueAt !== undefined) requeue[key(p)] = r.requeueAt;
    if (r.decisionsChanged) decisionsChanged.add(key(p));
  }
  return {
    result: { scheduled: targets.map(key), writes, requeue, decisionsChanged: [...decisionsChanged], statusWritten: [...run.statusWritten] },
    owing: run.owing,
  };
}
