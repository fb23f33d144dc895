// A seeded random fleet for the scheduler tests: an in-memory object store with D1's commit
// rules (global resourceVersion counter, optimistic concurrency), generators of ManagedClusters,
// sets, bindings, Placements and AddOnPlacementScores, and random changes to them.
import { alreadyExists, ApiError, conflict, notFound } from "../../src/k8s/errors.ts";
import type { KindDefinition } from "../../src/k8s/kind.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { CLUSTERSET_LABEL, ManagedClusterKind } from "../../src/kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "../../src/kinds/managedclusterset.ts";
import { AddOnPlacementScoreKind, ManagedClusterSetBindingKind, PlacementDecisionKind, PlacementKind } from "../../src/kinds/placement.ts";
import type { SaveObject } from "../../src/placement/plan.ts";
import type { HubLists } from "../../src/placement/state.ts";
import type { PlacementSpec } from "../../src/scheduling/index.ts";

/** mulberry32: a small seeded PRNG returning [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Random {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = rng(seed);
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  subset<T>(xs: readonly T[], p = 0.5): T[] {
    return xs.filter(() => this.next() < p);
  }
}

/** A deep copy of plain JSON data (faster than structuredClone in Node). */
export const clone = <T>(o: T): T => (o === undefined ? o : (JSON.parse(JSON.stringify(o)) as T));

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** An in-memory store with the D1 index's commit rules (src/store/d1/objects.ts `commitObject`). */
export class MemoryStore {
  counter = 0;
  private readonly kinds = new Map<string, Map<string, KubeObject>>();
  /** `<plural>\0<namespace>/<name>` of every object written since the last {@link MemoryStore.takeWritten}. */
  private written = new Set<string>();
  /** Every commit, as D1's `events` table records it. */
  readonly log: { plural: string; namespace: string; name: string; resourceVersion: number }[] = [];

  private table(def: KindDefinition): Map<string, KubeObject> {
    let t = this.kinds.get(def.plural);
    if (!t) this.kinds.set(def.plural, (t = new Map()));
    return t;
  }

  get(def: KindDefinition, namespace: string, name: string): KubeObject | null {
    const o = this.table(def).get(`${namespace}/${name}`);
    return o ? clone(o) : null;
  }

  /** Every object of a kind in (namespace, name) order (stored objects are replaced, never changed, so they are shared). */
  list(def: KindDefinition): KubeObject[] {
    return [...this.table(def).values()].sort((a, b) => cmp(a.metadata.namespace ?? "", b.metadata.namespace ?? "") || cmp(a.metadata.name, b.metadata.name));
  }

  /** Commits like `commitObject`: expectedRv null creates; otherwise the stored version must match. */
  commit(def: KindDefinition, next: KubeObject | null, current: KubeObject | null): KubeObject | null {
    const o = (next ?? current)!;
    const k = `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
    const t = this.table(def);
    const held = t.get(k);
    const ref = { group: def.group, plural: def.plural, name: o.metadata.name };
    if (current === null) {
      if (held) throw alreadyExists(ref);
    } else {
      if (!held) throw notFound(ref);
      if (held.metadata.resourceVersion !== current.metadata.resourceVersion) throw conflict(ref, "stale");
    }
    this.counter++;
    this.written.add(`${def.plural}\0${k}`);
    this.log.push({ plural: def.plural, namespace: o.metadata.namespace ?? "", name: o.metadata.name, resourceVersion: this.counter });
    if (next === null) {
      t.delete(k);
      return null;
    }
    // Nothing changes a stored object in place (the controller copies what it changes).
    const stored = { ...next, metadata: { ...next.metadata, resourceVersion: String(this.counter) } };
    t.set(k, stored);
    return stored;
  }

  /** Reads one object by plural. */
  getByPlural(plural: string, namespace: string, name: string): KubeObject | null {
    return this.kinds.get(plural)?.get(`${namespace}/${name}`) ?? null;
  }

  lists(): HubLists {
    return {
      clusters: this.list(ManagedClusterKind),
      sets: this.list(ManagedClusterSetKind),
      bindings: this.list(ManagedClusterSetBindingKind),
      placements: this.list(PlacementKind),
      decisions: this.list(PlacementDecisionKind),
      scores: this.list(AddOnPlacementScoreKind),
    };
  }

  /** The keys written since the last call. */
  takeWritten(): Set<string> {
    const out = this.written;
    this.written = new Set();
    return out;
  }

  /** One object by written key, its uid removed (PlacementDecisions get random ones), as comparable JSON. */
  dump(writtenKey: string): string {
    const [plural, k] = writtenKey.split("\0") as [string, string];
    const o = this.kinds.get(plural)?.get(k);
    return o ? JSON.stringify({ ...o, metadata: { ...o.metadata, uid: undefined } }) : "absent";
  }

  /** The controller's writer over this store, as `save` in src/placement/controller.ts. */
  saver(): SaveObject {
    return async (def, current, next) => {
      if (current && next && JSON.stringify(current) === JSON.stringify(next)) return { written: false, conflict: false };
      try {
        return { written: true, stored: this.commit(def, next, current) };
      } catch (e) {
        if (e instanceof ApiError && (e.reason === "Conflict" || e.reason === "AlreadyExists" || e.reason === "NotFound"))
          return { written: false, conflict: true };
        throw e;
      }
    };
  }
}

export const G = "cluster.open-cluster-management.io";
export const NAMESPACES = ["ns-a", "ns-b", "ns-c"];
export const SET_NAMES = ["default", "global", "prod", "edge", "eu", "big", "gpu", "ghost"];
const REGIONS = ["us", "eu", "ap"];
const ENVS = ["prod", "dev", "test"];
const TIERS = ["1", "2", "3"];
const EXCLUSIVE = ["default", "prod", "edge"];

export function meta(name: string, namespace?: string, labels?: Record<string, string>): KubeObject["metadata"] {
  const m: KubeObject["metadata"] = {
    name,
    uid: `uid-${namespace ?? ""}-${name}`,
    resourceVersion: "",
    creationTimestamp: "2026-01-01T00:00:00Z",
    generation: 1,
  };
  if (namespace !== undefined) m.namespace = namespace;
  if (labels) m.labels = labels;
  return m;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/** A random ManagedCluster object. */
export function randomCluster(r: Random, name: string, nowMs: number): KubeObject {
  const labels: Record<string, string> = { region: r.pick(REGIONS), env: r.pick(ENVS), tier: r.pick(TIERS) };
  if (r.chance(0.3)) labels.gpu = "true";
  if (r.chance(0.9)) labels[CLUSTERSET_LABEL] = r.pick(EXCLUSIVE);
  const c: KubeObject = {
    apiVersion: `${G}/v1`,
    kind: "ManagedCluster",
    metadata: meta(name, undefined, labels),
    spec: { hubAcceptsClient: true, leaseDurationSeconds: 60, taints: randomTaints(r, nowMs) },
    status: randomStatus(r),
  };
  if (r.chance(0.04)) c.metadata.deletionTimestamp = iso(nowMs);
  return c;
}

export function randomTaints(r: Random, nowMs: number): unknown[] {
  const taints: { key: string; value?: string; effect: string; timeAdded?: string }[] = [];
  const at = () => (r.chance(0.1) ? undefined : iso(nowMs - r.int(0, 900) * 1000));
  if (r.chance(0.2)) taints.push({ key: `${G}/unreachable`, effect: "NoSelect", timeAdded: at() });
  if (r.chance(0.15)) taints.push({ key: "maint", value: r.pick(["true", ""]), effect: "NoSelectIfNew", timeAdded: at() });
  if (r.chance(0.1)) taints.push({ key: "gpu", effect: "PreferNoSelect", timeAdded: at() });
  return taints;
}

export function randomStatus(r: Random): Record<string, unknown> {
  const cpu = r.int(2, 8);
  const mem = r.int(4, 16);
  const allocatable: Record<string, string> = { cpu: `${cpu * 1000 - r.int(0, 3) * 100}m` };
  const capacity: Record<string, string> = { cpu: String(cpu) };
  if (r.chance(0.85)) allocatable.memory = `${mem - r.int(0, 2)}Gi`;
  if (r.chance(0.85)) capacity.memory = `${mem}Gi`;
  return {
    conditions: [
      {
        type: "ManagedClusterConditionAvailable",
        status: r.pick(["True", "True", "False"]),
        reason: "T",
        message: "t",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      },
    ],
    clusterClaims: r.subset(
      [
        { name: "platform", value: r.pick(["AWS", "GCP"]) },
        { name: "version", value: r.pick(["1.29", "1.30"]) },
      ],
      0.7,
    ),
    allocatable,
    capacity,
  };
}

export function setObject(name: string, variant = 0): KubeObject {
  let clusterSelector: Record<string, unknown>;
  if (EXCLUSIVE.includes(name)) clusterSelector = { selectorType: "ExclusiveClusterSetLabel" };
  else if (name === "global") clusterSelector = { selectorType: "LabelSelector", labelSelector: {} };
  else if (name === "eu") clusterSelector = { selectorType: "LabelSelector", labelSelector: { matchLabels: { region: variant % 2 ? "ap" : "eu" } } };
  else if (name === "big")
    clusterSelector = {
      selectorType: "LabelSelector",
      labelSelector: { matchExpressions: [{ key: "tier", operator: variant % 2 ? "NotIn" : "In", values: ["2", "3"] }] },
    };
  else clusterSelector = { selectorType: "LabelSelector", labelSelector: { matchExpressions: [{ key: "gpu", operator: "Exists" }] } };
  return { apiVersion: `${G}/v1beta2`, kind: "ManagedClusterSet", metadata: meta(name), spec: { clusterSelector } };
}

export function bindingObject(namespace: string, set: string): KubeObject {
  return { apiVersion: `${G}/v1beta2`, kind: "ManagedClusterSetBinding", metadata: meta(set, namespace), spec: { clusterSet: set } };
}

function randomLabelSelector(r: Random): Record<string, unknown> {
  const pick = r.int(0, 5);
  if (pick === 0) return { matchLabels: { env: r.pick(ENVS) } };
  if (pick === 1) return { matchLabels: { region: r.pick(REGIONS), env: r.pick(ENVS) } };
  if (pick === 2) return { matchExpressions: [{ key: "tier", operator: "In", values: r.subset(TIERS, 0.6).concat("1") }] };
  if (pick === 3) return { matchExpressions: [{ key: "env", operator: "NotIn", values: ["dev"] }] };
  if (pick === 4) return { matchExpressions: [{ key: "gpu", operator: r.pick(["Exists", "DoesNotExist"]) }] };
  return { matchExpressions: [{ key: CLUSTERSET_LABEL, operator: "In", values: r.subset(EXCLUSIVE, 0.5).concat("edge") }] };
}

/** A random Placement spec over the fleet's vocabulary (sometimes misconfigured on purpose). */
export function randomSpec(r: Random): PlacementSpec {
  const spec: Record<string, unknown> = {};
  if (r.chance(0.4)) spec.clusterSets = r.subset(SET_NAMES, 0.4);
  if (r.chance(0.6)) spec.numberOfClusters = r.chance(0.02) ? -1 : r.int(0, 6);
  const predicates: unknown[] = [];
  const n = r.pick([0, 1, 1, 1, 2]);
  for (let i = 0; i < n; i++) {
    const rcs: Record<string, unknown> = {};
    if (r.chance(0.85)) rcs.labelSelector = r.chance(0.03) ? { matchExpressions: [{ key: "env", operator: "Bogus" }] } : randomLabelSelector(r);
    if (r.chance(0.3)) rcs.claimSelector = { matchExpressions: [{ key: "platform", operator: "In", values: [r.pick(["AWS", "GCP"])] }] };
    if (r.chance(0.03)) rcs.celSelector = { celExpressions: ["true"] };
    predicates.push({ requiredClusterSelector: rcs });
  }
  if (predicates.length > 0) spec.predicates = predicates;
  if (r.chance(0.6)) {
    const configurations: unknown[] = [];
    for (let i = r.int(0, 3); i > 0; i--) {
      const kind = r.int(0, 4);
      const weight = r.int(-2, 3);
      if (kind === 4) configurations.push({ scoreCoordinate: { type: "AddOn", addOn: { resourceName: "load", scoreName: "cpu" } }, weight });
      else
        configurations.push({
          scoreCoordinate: { type: "BuiltIn", builtIn: ["Balance", "Steady", "ResourceAllocatableCPU", "ResourceAllocatableMemory"][kind] },
          weight,
        });
    }
    spec.prioritizerPolicy = { mode: r.pick(["Additive", "Exact", undefined]), configurations };
  }
  const tolerations: unknown[] = [];
  if (r.chance(0.4)) tolerations.push({ key: `${G}/unreachable`, operator: "Exists", ...(r.chance(0.5) ? { tolerationSeconds: r.int(60, 900) } : {}) });
  if (r.chance(0.3)) tolerations.push({ key: "maint", operator: "Equal", value: "true" });
  if (r.chance(0.05)) tolerations.push({ operator: "Exists" });
  if (tolerations.length > 0) spec.tolerations = tolerations;
  if (r.chance(0.15)) {
    spec.decisionStrategy = {
      groupStrategy: {
        clustersPerDecisionGroup: r.pick([2, "50%", undefined]),
        decisionGroups: [{ groupName: "canary", groupClusterSelector: { labelSelector: { matchLabels: { env: "dev" } } } }],
      },
    };
  }
  if (r.chance(0.2)) {
    // Spread terms over the fleet's region label and platform claim (OCM enhancement 70).
    const terms: unknown[] = [
      { topologyKey: "region", topologyKeyType: "Label", maxSkew: r.int(1, 2), whenUnsatisfiable: r.pick(["DoNotSchedule", "ScheduleAnyway", undefined]) },
    ];
    if (r.chance(0.5)) terms.push({ topologyKey: "platform", topologyKeyType: "Claim", whenUnsatisfiable: r.pick(["DoNotSchedule", "ScheduleAnyway"]) });
    spec.spreadPolicy = { spreadConstraints: terms };
  }
  return spec as PlacementSpec;
}

export function placementObject(namespace: string, name: string, spec: PlacementSpec): KubeObject {
  return { apiVersion: `${G}/v1beta1`, kind: "Placement", metadata: meta(name, namespace), spec: spec as Record<string, unknown> };
}

export function scoreObject(cluster: string, r: Random, nowMs: number): KubeObject {
  const status: Record<string, unknown> = { scores: [{ name: "cpu", value: r.int(-100, 100) }] };
  if (r.chance(0.3)) status.validUntil = iso(nowMs + r.int(-300, 600) * 1000);
  return { apiVersion: `${G}/v1alpha1`, kind: "AddOnPlacementScore", metadata: meta("load", cluster), status };
}
