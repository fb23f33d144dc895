// The scheduler's incremental view (src/placement/view.ts) against the full recompute
// (src/placement/state.ts, OCM's read-everything path): over randomised fleets and sequences of
// changes, both run the same placement controller on the same trigger, each over its own copy of
// the store, and after every change every object both stores hold (decisions, Placement status
// and conditions, binding conditions), the resourceVersion counter, the requeue times and the
// placements whose decisions changed must be identical.
import { describe, expect, it, vi } from "vitest";
import type { KindDefinition } from "../../src/k8s/kind.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { CLUSTERSET_LABEL, ManagedClusterKind } from "../../src/kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "../../src/kinds/managedclusterset.ts";
import { AddOnPlacementScoreKind, ManagedClusterSetBindingKind, PlacementDecisionKind, PlacementKind } from "../../src/kinds/placement.ts";
import type { PlacementSpec } from "../../src/scheduling/index.ts";
import { mergeTriggers, runPlacementController, type RunResult, type Trigger, type ViewResource } from "../../src/placement/plan.ts";
import { clusterView } from "../../src/placement/reads.ts";
import { ListState } from "../../src/placement/state.ts";
import { triggerForChange, triggerForCluster } from "../../src/placement/changes.ts";
import { catchUp, runOnView, SchedulerView, type ChangeLog, type FollowedResource, type ViewSource } from "../../src/placement/view.ts";
import {
  bindingObject,
  clone,
  MemoryStore,
  NAMESPACES,
  placementObject,
  Random,
  randomCluster,
  randomSpec,
  randomStatus,
  randomTaints,
  scoreObject,
  SET_NAMES,
  setObject,
} from "./fleet.ts";

const START = Date.parse("2026-01-01T00:00:00Z");
const KINDS: Record<ViewResource | "placementdecisions", KindDefinition> = {
  placements: PlacementKind,
  managedclustersets: ManagedClusterSetKind,
  managedclustersetbindings: ManagedClusterSetBindingKind,
  addonplacementscores: AddOnPlacementScoreKind,
  placementdecisions: PlacementDecisionKind,
};

/** The cold-start source over a memory store (pages of 7, to cross page boundaries). */
function memorySource(store: MemoryStore, reads: { count: number }): ViewSource {
  async function* paged<T>(items: T[]): AsyncIterable<T[]> {
    reads.count++;
    for (let i = 0; i < items.length; i += 7) yield items.slice(i, i + 7);
  }
  return {
    clusters: () => paged(store.list(ManagedClusterKind).map((c) => ({ view: clusterView(c), resourceVersion: c.metadata.resourceVersion! }))),
    objects: (resource) => paged(store.list(KINDS[resource])),
  };
}

/** The store's commit log as the view's consistency check reads it (D1's `events` table). */
function memoryLog(store: MemoryStore): ChangeLog {
  return {
    async since(version) {
      const last = new Map<string, { resource: FollowedResource; namespace: string; name: string; resourceVersion: number }>();
      for (const e of store.log) {
        if (e.resourceVersion > version)
          last.set(`${e.plural}\0${e.namespace}/${e.name}`, {
            resource: e.plural as FollowedResource,
            namespace: e.namespace,
            name: e.name,
            resourceVersion: e.resourceVersion,
          });
      }
      return { latest: store.counter, expired: false, changed: [...last.values()] };
    },
    read: async (resource, namespace, name) => store.getByPlural(resource, namespace, name),
  };
}

/** The first object two stores hold differently, among those either wrote, or the counters. */
function firstDifference(full: MemoryStore, inc: MemoryStore): string | undefined {
  for (const k of new Set([...full.takeWritten(), ...inc.takeWritten()])) {
    const p = full.dump(k);
    const q = inc.dump(k);
    if (p !== q) return `${k.replace("\0", " ")}\n  full:        ${p}\n  incremental: ${q}`;
  }
  return full.counter === inc.counter ? undefined : `counter ${full.counter} != ${inc.counter}`;
}

const sorted = (xs: Iterable<string>) => [...xs].sort();

class World {
  readonly full = new MemoryStore();
  readonly inc = new MemoryStore();
  view!: SchedulerView;
  now = START;
  readonly requeueFull = new Map<string, number>();
  readonly requeueInc = new Map<string, number>();
  readonly reads = { count: 0 };
  stats = { runs: 0, scheduled: 0, skipped: 0, repaired: 0 };
  /** Triggers of writes whose trigger was lost (the full recompute gets them with the next run). */
  lost: Trigger[] = [];
  watermark = 0;
  step = "";
  clusterSeq = 0;

  constructor(
    readonly seed: number,
    readonly r: Random,
  ) {}

  async coldStart(): Promise<void> {
    this.watermark = this.inc.counter;
    this.view = await SchedulerView.build(memorySource(this.inc, this.reads));
  }

  /** Commits the same write to both stores; returns the stored object of the full one. */
  private commit(def: KindDefinition, next: KubeObject | null, current: KubeObject | null): KubeObject | null {
    const a = this.full.commit(def, next === null ? null : clone(next), current === null ? null : clone(current));
    const b = this.inc.commit(def, next === null ? null : clone(next), current === null ? null : clone(current));
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
    return a;
  }

  async writeCluster(next: KubeObject | null, current: KubeObject | null): Promise<void> {
    const stored = this.commit(ManagedClusterKind, next, current);
    await this.run(triggerForCluster(current, stored));
  }

  async writeObject(def: KindDefinition, next: KubeObject | null, current: KubeObject | null): Promise<void> {
    const stored = this.commit(def, next, current);
    const o = (next ?? current)!;
    await this.run(triggerForChange({ def, namespace: o.metadata.namespace ?? "", name: o.metadata.name, before: current, after: stored }));
  }

  async run(trigger: Trigger | null): Promise<void> {
    if (!trigger) return;
    // The full recompute gets the lost writes' triggers; the view finds them in the commit log.
    const fullTrigger = this.lost.reduce(mergeTriggers, clone(trigger));
    this.lost = [];
    const caught = await catchUp(this.view, memoryLog(this.inc), this.watermark);
    expect(caught).toBeDefined();
    this.watermark = caught!.watermark;
    if (caught!.trigger.clusters?.length || caught!.trigger.objects?.length) this.stats.repaired++;
    const full = await runPlacementController(new ListState(this.full.lists()), this.full.saver(), fullTrigger, this.now);
    const inc = await runOnView(this.view, mergeTriggers(clone(trigger), caught!.trigger), this.now, this.inc.saver());
    for (const s of this.view.takeStale()) this.view.applyObject(s.def, s.namespace, s.name, this.inc.get(s.def, s.namespace, s.name));
    this.record(this.requeueFull, full);
    this.record(this.requeueInc, inc);
    this.stats.runs++;
    this.stats.scheduled += inc.scheduled.length;
    this.stats.skipped += inc.skipped.length;
    const where = `seed ${this.seed}, ${this.step}, trigger ${JSON.stringify(fullTrigger).slice(0, 400)}, skipped ${inc.skipped.join(",")}`;
    const difference = firstDifference(this.full, this.inc);
    if (difference !== undefined) expect.fail(`${where}: stores differ at ${difference}`);
    expect(sorted([...inc.scheduled, ...inc.skipped]), where).toEqual(sorted(full.scheduled));
    expect(sorted(inc.decisionsChanged), where).toEqual(sorted(full.decisionsChanged));
    expect(sorted([...this.requeueInc].map(([k, v]) => `${k}@${v}`)), where).toEqual(sorted([...this.requeueFull].map(([k, v]) => `${k}@${v}`)));
    expect(inc.writes, where).toBe(full.writes);
  }

  /** What the SchedulerObject keeps in its requeue table: each scheduled placement's due time. */
  private record(table: Map<string, number>, r: RunResult): void {
    for (const p of r.scheduled) {
      const due = r.requeue[p];
      if (due === undefined) table.delete(p);
      else table.set(p, due);
    }
  }

  /** The scheduler alarm: placements whose toleration expired run again. */
  async alarm(): Promise<void> {
    const due = [...this.requeueFull].filter(([, at]) => at <= this.now).map(([k]) => k);
    for (const k of due) {
      this.requeueFull.delete(k);
      this.requeueInc.delete(k);
    }
    if (due.length > 0) await this.run({ placements: due });
  }

  clusters(): KubeObject[] {
    return this.full.list(ManagedClusterKind);
  }

  async addCluster(): Promise<void> {
    await this.writeCluster(randomCluster(this.r, `c${String(this.clusterSeq++).padStart(3, "0")}`, this.now), null);
  }

  /** One random change; returns its description. */
  async change(): Promise<string> {
    const r = this.r;
    const clusters = this.clusters();
    const c = clusters.length > 0 ? r.pick(clusters) : undefined;
    const kind = r.int(0, 21);
    if (!c || kind === 0) {
      await this.addCluster();
      return "cluster add";
    }
    const next = clone(c);
    switch (kind) {
      case 1:
        await this.writeCluster(null, c);
        return `cluster delete ${c.metadata.name}`;
      case 2:
        next.metadata.deletionTimestamp = new Date(this.now).toISOString();
        await this.writeCluster(next, c);
        return `cluster deleting ${c.metadata.name}`;
      case 3:
      case 4:
      case 5: {
        const labels = (next.metadata.labels ??= {});
        const key = r.pick(["region", "env", "tier", "gpu", CLUSTERSET_LABEL]);
        const values: Record<string, string[]> = {
          region: ["us", "eu", "ap"],
          env: ["prod", "dev", "test"],
          tier: ["1", "2", "3"],
          gpu: ["true"],
          [CLUSTERSET_LABEL]: ["default", "prod", "edge"],
        };
        if (r.chance(0.2)) delete labels[key];
        else labels[key] = r.pick(values[key]!);
        await this.writeCluster(next, c);
        return `cluster label ${c.metadata.name} ${key}`;
      }
      case 6:
        next.spec = { ...next.spec, taints: randomTaints(r, this.now) };
        await this.writeCluster(next, c);
        return `cluster taints ${c.metadata.name}`;
      case 7: {
        const st = next.status as { conditions: { status: string }[] };
        st.conditions[0]!.status = st.conditions[0]!.status === "True" ? "False" : "True";
        await this.writeCluster(next, c);
        return `cluster availability ${c.metadata.name}`;
      }
      case 8:
        next.status = { ...randomStatus(r), conditions: (c.status as { conditions: unknown }).conditions };
        await this.writeCluster(next, c);
        return `cluster allocatable/claims ${c.metadata.name}`;
      case 9:
      case 10: {
        const ns = r.pick(NAMESPACES);
        const name = `p${r.int(0, 7)}`;
        const current = this.full.get(PlacementKind, ns, name);
        if (current && r.chance(0.3)) {
          await this.writeObject(PlacementKind, null, current);
          return `placement delete ${ns}/${name}`;
        }
        const spec = randomSpec(r);
        const p = current
          ? { ...current, spec: spec as Record<string, unknown>, metadata: { ...current.metadata, generation: (current.metadata.generation ?? 1) + 1 } }
          : placementObject(ns, name, spec);
        await this.writeObject(PlacementKind, p, current);
        return `placement ${current ? "update" : "create"} ${ns}/${name}`;
      }
      case 11: {
        const name = r.pick(SET_NAMES);
        const current = this.full.get(ManagedClusterSetKind, "", name);
        if (current && r.chance(0.4)) {
          await this.writeObject(ManagedClusterSetKind, null, current);
          return `set delete ${name}`;
        }
        await this.writeObject(ManagedClusterSetKind, setObject(name, r.int(0, 1)), current);
        return `set write ${name}`;
      }
      case 12: {
        const ns = r.pick(NAMESPACES);
        const set = r.pick(SET_NAMES);
        const current = this.full.get(ManagedClusterSetBindingKind, ns, set);
        await this.writeObject(ManagedClusterSetBindingKind, current ? null : bindingObject(ns, set), current);
        return `binding ${current ? "delete" : "create"} ${ns}/${set}`;
      }
      case 13: {
        const current = this.full.get(AddOnPlacementScoreKind, c.metadata.name, "load");
        if (current && r.chance(0.3)) {
          await this.writeObject(AddOnPlacementScoreKind, null, current);
          return `score delete ${c.metadata.name}`;
        }
        const s = scoreObject(c.metadata.name, r, this.now);
        if (current) s.metadata.resourceVersion = current.metadata.resourceVersion;
        await this.writeObject(AddOnPlacementScoreKind, s, current);
        return `score write ${c.metadata.name}`;
      }
      case 14:
        await this.coldStart();
        return "scheduler restart";
      case 15:
        this.now += this.r.int(60, 600) * 1000;
        await this.alarm();
        return "time passes";
      case 16: {
        // A write the scheduler never hears of; the next run (whatever starts it) repairs it.
        const labels = (next.metadata.labels ??= {});
        labels.env = r.pick(["prod", "dev", "test"]);
        labels.tier = r.pick(["1", "2", "3"]);
        const t = triggerForCluster(c, this.commit(ManagedClusterKind, next, c));
        if (t) this.lost.push(t);
        await this.run({ placements: [] });
        return `lost cluster write ${c.metadata.name}`;
      }
      case 17: {
        const ns = r.pick(NAMESPACES);
        const current = this.full.list(PlacementKind).find((p) => p.metadata.namespace === ns);
        if (!current) return "no placement to lose a write of";
        const p = {
          ...current,
          spec: randomSpec(r) as Record<string, unknown>,
          metadata: { ...current.metadata, generation: (current.metadata.generation ?? 1) + 1 },
        };
        const stored = this.commit(PlacementKind, p, current);
        this.lost.push(triggerForChange({ def: PlacementKind, namespace: ns, name: current.metadata.name, before: current, after: stored })!);
        await this.run({ placements: [] });
        return `lost placement write ${ns}/${current.metadata.name}`;
      }
      case 18:
        // A status write of the Kubernetes version (read by CEL selectors only).
        next.status = { ...next.status, version: { kubernetes: `v1.${r.int(28, 31)}.0` } };
        await this.writeCluster(next, c);
        return `cluster version ${c.metadata.name}`;
      default: {
        // Several clusters changed before the scheduler ran: one merged trigger.
        const picks = r.subset(clusters, 0.3).slice(0, 4);
        const triggers: Trigger[] = [];
        for (const p of picks) {
          const n = clone(p);
          const labels = (n.metadata.labels ??= {});
          if (r.chance(0.5)) labels.env = r.pick(["prod", "dev", "test"]);
          else n.spec = { ...n.spec, taints: randomTaints(r, this.now) };
          const t = triggerForCluster(p, this.commit(ManagedClusterKind, n, p));
          if (t) triggers.push(t);
        }
        if (triggers.length > 0) await this.run(triggers.reduce((a, b) => ({ ...a, clusters: [...(a.clusters ?? []), ...(b.clusters ?? [])] })));
        return `merged cluster changes ${picks.length}`;
      }
    }
  }

  async populate(): Promise<void> {
    const r = this.r;
    for (const name of SET_NAMES)
      if (name === "default" || name === "global" || r.chance(0.6)) await this.writeObject(ManagedClusterSetKind, setObject(name), null);
    for (const ns of NAMESPACES)
      for (const set of r.subset(SET_NAMES, 0.35)) await this.writeObject(ManagedClusterSetBindingKind, bindingObject(ns, set), null);
    for (let i = r.int(3, 24); i > 0; i--) await this.addCluster();
    for (let i = r.int(2, 8); i > 0; i--) {
      const ns = r.pick(NAMESPACES);
      const name = `p${r.int(0, 7)}`;
      if (!this.full.get(PlacementKind, ns, name)) await this.writeObject(PlacementKind, placementObject(ns, name, randomSpec(r)), null);
    }
    for (const c of r.subset(this.clusters(), 0.3)) await this.writeObject(AddOnPlacementScoreKind, scoreObject(c.metadata.name, r, this.now), null);
  }
}

describe("incremental scheduler view", () => {
  it("decides exactly as the full recompute over randomised fleets and change sequences", async () => {
    const SEEDS = 250;
    const STEPS = 40;
    const total = { runs: 0, scheduled: 0, skipped: 0, repaired: 0, coldStarts: 0 };
    for (let seed = 1; seed <= SEEDS; seed++) {
      const w = new World(seed, new Random(seed));
      await w.coldStart();
      w.step = "populate";
      await w.populate();
      for (let i = 0; i < STEPS; i++) {
        w.now += w.r.int(0, 90) * 1000;
        w.step = `step ${i}`;
        w.step = `step ${i}: ${await w.change()}`;
      }
      total.runs += w.stats.runs;
      total.scheduled += w.stats.scheduled;
      total.skipped += w.stats.skipped;
      total.repaired += w.stats.repaired;
      total.coldStarts += w.reads.count;
    }
    // The comparison is not vacuous: many runs, and the skipping rule was exercised often.
    expect(total.runs).toBeGreaterThan(SEEDS * STEPS * 0.8);
    expect(total.skipped).toBeGreaterThan(total.runs / 10);
    expect(total.scheduled).toBeGreaterThan(total.skipped);
    expect(total.repaired).toBeGreaterThan(SEEDS);
  });

  it("reads D1 only at a cold start and schedules a label change over its candidates only", async () => {
    const r = new Random(7);
    const w = new World(7, r);
    await w.coldStart();
    await w.writeObject(ManagedClusterSetKind, setObject("default"), null);
    await w.writeObject(ManagedClusterSetBindingKind, bindingObject("ns-a", "default"), null);
    for (let i = 0; i < 400; i++) {
      const c = randomCluster(r, `c${String(i).padStart(3, "0")}`, w.now);
      c.metadata.labels = { "cluster.open-cluster-management.io/clusterset": "default", app: `a${i % 40}` };
      c.spec = { hubAcceptsClient: true, taints: [] };
      w.clusterSeq++;
      await w.writeCluster(c, null);
    }
    for (let i = 0; i < 40; i++) {
      await w.writeObject(
        PlacementKind,
        placementObject("ns-a", `app${i}`, {
          numberOfClusters: 3,
          predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { app: `a${i}` } } } }],
        }),
        null,
      );
    }
    const reads = w.reads.count;
    const spy = vi.spyOn(w.view, "scheduleInput");
    // Settle: a placement whose decisions or Balance inputs moved since it last ran runs once
    // more (its decisions are an input too), then its result stands.
    const c5 = w.full.get(ManagedClusterKind, "", "c005")!;
    await w.writeCluster({ ...c5, metadata: { ...c5.metadata, labels: { ...c5.metadata.labels, app: "a1" } } }, c5);
    for (let i = 0; i < 2; i++) {
      const c9 = w.full.get(ManagedClusterKind, "", "c399")!;
      const st = clone(c9.status) as { conditions: { status: string }[] };
      st.conditions[0]!.status = st.conditions[0]!.status === "True" ? "False" : "True";
      await w.writeCluster({ ...c9, status: st as unknown as Record<string, unknown> }, c9);
    }
    spy.mockClear();
    const before = w.stats.skipped;
    const c = w.full.get(ManagedClusterKind, "", "c007")!;
    await w.writeCluster({ ...c, metadata: { ...c.metadata, labels: { ...c.metadata.labels, app: "a2" } } }, c);
    // The cluster moved from a7 to a2: those two placements run, the 38 others are skipped.
    expect(spy.mock.calls.map(([p]) => p.metadata.name).sort()).toEqual(["app2", "app7"]);
    expect(w.stats.skipped - before).toBe(38);
    for (const result of spy.mock.results) expect((result.value as { clusters: unknown[] }).clusters.length).toBeLessThan(20);
    expect(w.reads.count).toBe(reads);
    expect(w.view.clusterCount).toBe(400);
  });

  it("runs a Balance placement again when the largest count moves outside its candidates", async () => {
    // P (Exact: Balance ×3, ResourceAllocatableMemory ×2, one of app=a) weighs x (decided once by
    // S, most memory) against y. While the largest count of other decisions is 1, x scores
    // 3×(−100) + 2×100 = −100 and y 3×100 + 2×(−100) = 100: P takes y. Once R1 and R2 both
    // decide z (app=b, outside P's candidates) the largest count is 2, x's Balance score is 0 and
    // x (200) beats y (100): a change that cannot touch P's candidates must still run P again.
    const w = new World(11, new Random(11));
    await w.coldStart();
    await w.writeObject(ManagedClusterSetKind, setObject("default"), null);
    await w.writeObject(ManagedClusterSetBindingKind, bindingObject("ns-a", "default"), null);
    const mc = (name: string, labels: Record<string, string>, memory: string): KubeObject => ({
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name, uid: name, resourceVersion: "", creationTimestamp: "2026-01-01T00:00:00Z", labels: { [CLUSTERSET_LABEL]: "default", ...labels } },
      spec: { hubAcceptsClient: true },
      status: { allocatable: { memory }, capacity: { memory } },
    });
    await w.writeCluster(mc("x", { app: "a", pick: "s" }, "16Gi"), null);
    await w.writeCluster(mc("y", { app: "a" }, "8Gi"), null);
    await w.writeCluster(mc("z", { app: "b" }, "8Gi"), null);
    await w.writeCluster(mc("idle", { app: "c" }, "8Gi"), null);
    const one = (labels: Record<string, string>, prioritizerPolicy?: PlacementSpec["prioritizerPolicy"]): PlacementSpec => ({
      numberOfClusters: 1,
      predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: labels } } }],
      prioritizerPolicy,
    });
    await w.writeObject(PlacementKind, placementObject("ns-a", "s", one({ pick: "s" })), null);
    const weights = {
      mode: "Exact" as const,
      configurations: [
        { scoreCoordinate: { builtIn: "Balance" }, weight: 3 },
        { scoreCoordinate: { builtIn: "ResourceAllocatableMemory" }, weight: 2 },
      ],
    };
    await w.writeObject(PlacementKind, placementObject("ns-a", "p", one({ app: "a" }, weights)), null);
    const idle = async (app: string) => {
      const c = w.full.get(ManagedClusterKind, "", "idle")!;
      await w.writeCluster({ ...c, metadata: { ...c.metadata, labels: { ...c.metadata.labels, app } } }, c);
    };
    await idle("d");
    await idle("e");
    const decided = () => JSON.stringify(w.full.get(PlacementDecisionKind, "ns-a", "p-decision-1")?.status);
    expect(decided()).toContain('"y"');
    const skipped = w.stats.skipped;
    await idle("f");
    expect(w.stats.skipped - skipped).toBe(2);
    await w.writeObject(PlacementKind, placementObject("ns-a", "r1", one({ app: "b" })), null);
    await w.writeObject(PlacementKind, placementObject("ns-a", "r2", one({ app: "b" })), null);
    await idle("g");
    expect(decided()).toContain('"x"');
  });

  it("checks itself against the commit log: repairs a missed write, and asks for a rebuild it cannot repair", async () => {
    const w = new World(3, new Random(3));
    await w.coldStart();
    await w.populate();
    const log = memoryLog(w.inc);
    let reads = 0;
    const counting: ChangeLog = { since: (v) => log.since(v), read: (...a) => (reads++, log.read(...a)) };
    // A status write that changes nothing scheduling reads is read once, then known.
    const c = w.clusters()[0]!;
    await w.writeCluster({ ...c, metadata: { ...c.metadata, annotations: { note: "not read by scheduling" } } }, c);
    const first = await catchUp(w.view, counting, w.watermark);
    expect(first?.trigger).toEqual({});
    expect(reads).toBe(1);
    const again = await catchUp(w.view, counting, w.watermark);
    expect(again?.trigger).toEqual({});
    expect(reads).toBe(1);
    // A label write whose trigger never came becomes the trigger it should have carried.
    const d = w.full.get(ManagedClusterKind, "", c.metadata.name)!;
    const stored = w.inc.commit(ManagedClusterKind, { ...d, metadata: { ...d.metadata, labels: { ...d.metadata.labels, env: "elsewhere" } } }, d);
    const missed = await catchUp(w.view, counting, first!.watermark);
    expect(missed?.trigger.clusters).toEqual(triggerForCluster(d, stored)!.clusters);
    expect(missed?.watermark).toBe(w.inc.counter);
    // A log that no longer reaches the watermark, or a store behind it: rebuild.
    expect(await catchUp(w.view, { ...log, since: async () => ({ latest: w.inc.counter, expired: true, changed: [] }) }, w.watermark)).toBeUndefined();
    expect(await catchUp(w.view, log, w.inc.counter + 1)).toBeUndefined();
  });

  it("ignores a change older than the one it holds, and a late delete", async () => {
    const view = await SchedulerView.build({ clusters: async function* () {}, objects: async function* () {} });
    const p = (rv: string, n: number) => ({
      ...placementObject("ns", "p", { numberOfClusters: n }),
      metadata: { ...placementObject("ns", "p", {}).metadata, resourceVersion: rv },
    });
    view.applyTrigger({ objects: [{ resource: "placements", namespace: "ns", name: "p", object: p("5", 1) }] });
    view.applyTrigger({ objects: [{ resource: "placements", namespace: "ns", name: "p", object: p("3", 2) }] });
    expect(view.versionOf("placements", "ns", "p")).toBe(5);
    view.applyTrigger({ objects: [{ resource: "placements", namespace: "ns", name: "p", object: null, resourceVersion: "4" }] });
    expect(view.hasPlacement("ns", "p")).toBe(true);
    view.applyTrigger({ objects: [{ resource: "placements", namespace: "ns", name: "p", object: null, resourceVersion: "5" }] });
    expect(view.hasPlacement("ns", "p")).toBe(false);
    view.applyTrigger({ objects: [{ resource: "placements", namespace: "ns", name: "p", object: p("5", 1) }] });
    expect(view.hasPlacement("ns", "p")).toBe(false);
    view.applyTrigger({ objects: [{ resource: "placements", namespace: "ns", name: "p", object: p("9", 1) }] });
    expect(view.hasPlacement("ns", "p")).toBe(true);
  });
});
