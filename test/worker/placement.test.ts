import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { clock } from "../../src/clock.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { commitObject, database, getObject } from "../../src/store/d1/objects.ts";
import { resourceKey } from "../../src/k8s/kind.ts";
import { ManagedClusterKind } from "../../src/kinds/managedcluster.ts";
import { PlacementKind } from "../../src/kinds/placement.ts";
import type { RunResult, Trigger } from "../../src/placement/plan.ts";
import { clusterView } from "../../src/placement/reads.ts";
import { schedulingHook } from "../../src/placement/controller.ts";
import { registerAfterCommitHook, type Change } from "../../src/store/hooks.ts";
import { writeStored } from "../../src/store/d1/write.ts";
import type { Env } from "../../src/env.ts";
import { triggerForChange } from "../../src/placement/changes.ts";
import { RESYNC_INTERVAL_MS } from "../../durable-objects/scheduler.ts";
import {
  agentKeys,
  call,
  condition,
  createNamespaces,
  createToken,
  MC,
  MCSET,
  register,
  scheduled,
  withClockAhead,
  merge,
  PLACEMENTS,
  DECISIONS,
  BINDINGS,
  createCluster,
  decided,
} from "./helpers.ts";
import { waitFor } from "../wait.ts";

const G = "/apis/cluster.open-cluster-management.io";

const available = (status: "True" | "False" | "Unknown") => ({
  type: "ManagedClusterConditionAvailable",
  status,
  reason: "Test",
  message: "test",
  lastTransitionTime: "2026-01-01T00:00:00Z",
});

/** An accepted, Available cluster with `memory` allocatable (of 64Gi) and 4 CPUs. */
const cluster = (name: string, labels: Record<string, string>, memory: string) =>
  createCluster(name, labels, { conditions: [available("True")], allocatable: { cpu: "4", memory }, capacity: { cpu: "4", memory: "64Gi" } });

beforeAll(async () => {
  await createNamespaces("apps", "bulk");
  const set = await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "prod" } });
  expect(set.status).toBe(201);
  const cs = "cluster.open-cluster-management.io/clusterset";
  await cluster("p1", { [cs]: "prod", env: "prod" }, "8Gi");
  await cluster("p2", { [cs]: "prod", env: "prod" }, "16Gi");
  await cluster("p3", { [cs]: "prod", env: "prod" }, "32Gi");
  await cluster("p4", { [cs]: "prod", env: "dev" }, "64Gi");
  await cluster("other1", { env: "prod" }, "64Gi");
  const b = await call("POST", BINDINGS("apps"), {
    apiVersion: "cluster.open-cluster-management.io/v1beta2",
    kind: "ManagedClusterSetBinding",
    metadata: { name: "prod" },
    spec: { clusterSet: "prod" },
  });
  expect(b.status).toBe(201);
});

describe("placement scheduling on write", () => {
  it("binds, selects by predicates and prioritizers, and writes decisions before the write returns", async () => {
    const binding = await call("GET", `${BINDINGS("apps")}/prod`);
    expect(condition(binding.body, "Bound")).toMatchObject({ status: "True", reason: "ClusterSetBound" });
    const p = await call("POST", PLACEMENTS("apps"), {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "web" },
      spec: {
        numberOfClusters: 2,
        predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { env: "prod" } } } }],
        prioritizerPolicy: { mode: "Exact", configurations: [{ scoreCoordinate: { builtIn: "ResourceAllocatableMemory" }, weight: 1 }] },
      },
    });
    expect(p.status).toBe(201);
    // Most allocatable memory among prod clusters of the bound set: p3 (32Gi), p2 (16Gi). other1 is not in a bound set.
    expect(await decided("apps", "web")).toEqual(["p2", "p3"]);
    const placement = (await call("GET", `${PLACEMENTS("apps")}/web`)).body;
    expect(placement.status.numberOfSelectedClusters).toBe(2);
    expect(condition(placement, "PlacementSatisfied")).toMatchObject({ status: "True", reason: "AllDecisionsScheduled" });
    const pd = (await call("GET", `${DECISIONS("apps")}/web-decision-1`)).body;
    expect(pd.metadata.labels["cluster.open-cluster-management.io/decision-group-index"]).toBe("0");
    expect(pd.metadata.ownerReferences[0]).toMatchObject({ kind: "Placement", name: "web", uid: placement.metadata.uid });
  });

  it("moves decisions when a cluster is tainted or becomes unavailable", async () => {
    await call("PATCH", `${MC}/p3`, { spec: { taints: [{ key: "maintenance", effect: "NoSelect" }] } }, merge);
    expect(await decided("apps", "web")).toEqual(["p1", "p2"]);
    await call("PATCH", `${MC}/p3`, { spec: { taints: [] } }, merge);
    expect(await decided("apps", "web")).toEqual(["p2", "p3"]);
    await call("PATCH", `${MC}/p2/status`, { status: { conditions: [available("False")] } }, merge);
    expect(await decided("apps", "web")).toEqual(["p1", "p3"]);
  });

  it("a lease that expires moves work away with no request to the placement", async () => {
    const token = await createToken({ autoApprove: true });
    const keys = await agentKeys();
    await register(token, "p5", "id-p5", keys);
    await call(
      "PATCH",
      `${MC}/p5`,
      { metadata: { labels: { "cluster.open-cluster-management.io/clusterset": "prod", env: "prod" } }, spec: { leaseDurationSeconds: 1 } },
      merge,
    );
    const hb = await call(
      "POST",
      "/agent/v1/clusters/p5/heartbeat",
      { healthy: true, allocatable: { cpu: "4", memory: "128Gi" }, capacity: { cpu: "4", memory: "128Gi" } },
      { token: await keys.sign("p5") },
    );
    expect(hb.status).toBe(200);
    // The agent's write returned before the scheduler ran (its trigger is queued); then it runs.
    await scheduled();
    expect(await decided("apps", "web")).toEqual(["p3", "p5"]);
    const stub = env.CLUSTERS.getByName("p5");
    // A minute later, far past 5 x 1 s without a renewal.
    await withClockAhead(60_000, () => runDurableObjectAlarm(stub));
    await scheduled();
    expect(await decided("apps", "web")).toEqual(["p1", "p3"]);
  });

  it("re-runs a placement when a toleration expires (scheduler alarm)", async () => {
    await call("PATCH", `${MC}/p4`, { metadata: { labels: { env: "prod" } }, spec: { taints: [{ key: "flaky", effect: "NoSelect" }] } }, merge);
    const p = await call("POST", PLACEMENTS("apps"), {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "tolerant" },
      spec: {
        predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { env: "prod" } } } }],
        tolerations: [{ key: "flaky", operator: "Exists", tolerationSeconds: 2 }],
      },
    });
    expect(p.status).toBe(201);
    expect(await decided("apps", "tolerant")).toContain("p4");
    const timeAdded = Date.parse((await call("GET", `${MC}/p4`)).body.spec.taints.find((t: { key: string }) => t.key === "flaky").timeAdded);
    const alarmAt = await runInDurableObject(env.SCHEDULER.getByName("scheduler"), (_o, state) => state.storage.getAlarm());
    // The alarm is set at the moment the toleration ends (timeAdded + tolerationSeconds).
    expect(alarmAt).toBe(timeAdded + 2000);
    await waitFor("p4 to leave the decisions once its toleration ended", async () => !(await decided("apps", "tolerant")).includes("p4"), 8000, 100);
  });

  it("paginates past 100 clusters and refuses user writes to decisions", async () => {
    const cs = "cluster.open-cluster-management.io/clusterset";
    await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "big" } });
    await call("POST", BINDINGS("bulk"), {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "big" },
      spec: { clusterSet: "big" },
    });
    for (let i = 0; i < 105; i++) {
      await call("POST", MC, {
        apiVersion: "cluster.open-cluster-management.io/v1",
        kind: "ManagedCluster",
        metadata: { name: `b${String(i).padStart(3, "0")}`, labels: { [cs]: "big" } },
      });
    }
    const p = await call("POST", PLACEMENTS("bulk"), {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "all" },
      spec: { tolerations: [{ key: "cluster.open-cluster-management.io/unreachable", operator: "Exists" }] },
    });
    expect(p.status).toBe(201);
    const pds = (await call("GET", DECISIONS("bulk"))).body.items;
    expect(pds.map((d: { metadata: { name: string } }) => d.metadata.name).sort()).toEqual(["all-decision-1", "all-decision-2"]);
    expect(pds.map((d: { status: { decisions: unknown[] } }) => d.status.decisions.length).sort()).toEqual([100, 5]);
    const create = await call("POST", DECISIONS("bulk"), {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "PlacementDecision",
      metadata: { name: "mine" },
    });
    expect(create.status).toBe(405);
    const del = await call("DELETE", `${PLACEMENTS("bulk")}/all`);
    expect(del.status).toBe(200);
    expect((await call("GET", DECISIONS("bulk"))).body.items).toHaveLength(0);
  });

  it("re-runs on AddOnPlacementScore, set and binding writes", async () => {
    const scoreOf = (cluster: string) => `${G}/v1alpha1/namespaces/${cluster}/addonplacementscores`;
    for (const c of ["p1", "p3"]) {
      const created = await call("POST", scoreOf(c), {
        apiVersion: "cluster.open-cluster-management.io/v1alpha1",
        kind: "AddOnPlacementScore",
        metadata: { name: "load" },
      });
      expect(created.status).toBe(201);
    }
    await call("PATCH", `${scoreOf("p1")}/load/status`, { status: { scores: [{ name: "free", value: 90 }] } }, merge);
    await call("PATCH", `${scoreOf("p3")}/load/status`, { status: { scores: [{ name: "free", value: 10 }] } }, merge);
    const p = await call("POST", PLACEMENTS("apps"), {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "scored" },
      spec: {
        numberOfClusters: 1,
        predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { env: "prod" } } } }],
        prioritizerPolicy: {
          mode: "Exact",
          configurations: [{ scoreCoordinate: { type: "AddOn", addOn: { resourceName: "load", scoreName: "free" } }, weight: 1 }],
        },
      },
    });
    expect(p.status).toBe(201);
    expect(await decided("apps", "scored")).toEqual(["p1"]);
    await call("PATCH", `${scoreOf("p3")}/load/status`, { status: { scores: [{ name: "free", value: 95 }] } }, merge);
    expect(await decided("apps", "scored")).toEqual(["p3"]);

    // Deleting the binding leaves the namespace without clusters; recreating it brings them back.
    await call("DELETE", `${BINDINGS("apps")}/prod`);
    expect(await decided("apps", "scored")).toEqual([]);
    const unbound = (await call("GET", `${PLACEMENTS("apps")}/scored`)).body;
    expect(condition(unbound, "PlacementSatisfied")).toMatchObject({ status: "False", reason: "NoManagedClusterSetBindings" });
    await call("POST", BINDINGS("apps"), {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "prod" },
      spec: { clusterSet: "prod" },
    });
    expect(await decided("apps", "scored")).toEqual(["p3"]);
  });
});

describe("the scheduler object", () => {
  const scheduler = () => env.SCHEDULER.getByName("scheduler");
  const db = () => database(env.DB);

  /** Creates a PickN placement of env=prod in `apps` and returns it as stored. */
  async function pickN(name: string, numberOfClusters: number): Promise<KubeObject> {
    const p = await call("POST", PLACEMENTS("apps"), {
      apiVersion: `${PlacementKind.group}/v1beta1`,
      kind: "Placement",
      metadata: { name },
      spec: { numberOfClusters, predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { env: "prod" } } } }] },
    });
    expect(p.status).toBe(201);
    expect(await decided("apps", name)).toHaveLength(numberOfClusters);
    return (await getObject(db(), PlacementKind, { namespace: "apps", name }))!;
  }

  /** Writes a placement to D1 directly, as a writer whose trigger never reached the scheduler. */
  async function commitQuietly(p: KubeObject, numberOfClusters: number): Promise<KubeObject> {
    const next = { ...p, spec: { ...p.spec, numberOfClusters }, metadata: { ...p.metadata, generation: (p.metadata.generation ?? 1) + 1 } };
    return (await commitObject(db(), PlacementKind, { namespace: "apps", name: p.metadata.name }, next, Number(p.metadata.resourceVersion)))!;
  }

  async function until(name: string, length: number): Promise<string[]> {
    return waitFor(
      `${length} decisions of ${name}`,
      async () => {
        const names = await decided("apps", name);
        return names.length === length && names;
      },
      8000,
      100,
    );
  }

  it("enqueue returns without waiting for the run; the alarm runs the stored trigger", async () => {
    const before = await pickN("queued", 1);
    const after = await commitQuietly(before, 2);
    await scheduler().enqueue(triggerForChange({ def: PlacementKind, namespace: "apps", name: "queued", before, after })!);
    await runDurableObjectAlarm(scheduler());
    expect(await until("queued", 2)).toHaveLength(2);
    const stored = await runInDurableObject(scheduler(), (_o, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM pending_triggers").one().n);
    expect(stored).toBe(0);
  });

  it("enqueueOwed runs the trigger from memory, stores nothing, and deletes the outbox row it took once the run finished", async () => {
    const before = await pickN("owed", 1);
    const after = await commitQuietly(before, 2);
    const id = "owed-row";
    await env.DB.prepare(
      "INSERT INTO outbox (id, resource_version, resource, namespace, name, hooks, created_at, due_at) VALUES (?, ?, ?, 'apps', 'owed', '{}', ?, ?)",
    )
      .bind(id, Number(after.metadata.resourceVersion), resourceKey(PlacementKind), Date.now(), Date.now() + 60_000)
      .run();
    await scheduler().enqueueOwed(triggerForChange({ def: PlacementKind, namespace: "apps", name: "owed", before, after })!, id);
    expect(await until("owed", 2)).toHaveLength(2);
    await waitFor(
      "the outbox row deleted",
      async () => (await env.DB.prepare("SELECT COUNT(*) AS n FROM outbox WHERE id = ?").bind(id).first<{ n: number }>())!.n === 0,
      5000,
      20,
    );
    const stored = await runInDurableObject(scheduler(), (_o, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM pending_triggers").one().n);
    expect(stored).toBe(0);
  });

  it("an agent's status change: its outbox row is taken over by the scheduler (no row stored there) and gone once decided", async () => {
    const token = await createToken({ autoApprove: true });
    const keys = await agentKeys();
    await register(token, "p6", "id-p6", keys);
    await call("PATCH", `${MC}/p6`, { metadata: { labels: { "cluster.open-cluster-management.io/clusterset": "prod", env: "prod" } } }, merge);
    const ids = async () => (await env.DB.prepare("SELECT id FROM outbox WHERE name = 'p6'").all<{ id: string }>()).results.map((r) => r.id);
    // A first heartbeat makes the cluster Available, which its ClusterProfiles show too (a change
    // owing two hooks, whose trigger the scheduler stores); the one below changes only what
    // scheduling reads.
    expect((await call("POST", "/agent/v1/clusters/p6/heartbeat", { healthy: true }, { token: await keys.sign("p6") })).status).toBe(200);
    await scheduled();
    await waitFor("the first heartbeat's outbox row gone", async () => (await ids()).length === 0, 5000, 20);
    const hooked: Change[] = [];
    const spy = {
      ...schedulingHook,
      run: (e: Env, owed: Trigger, target: Parameters<typeof schedulingHook.run>[2]) => (
        target.change && hooked.push(target.change),
        schedulingHook.run(e, owed, target)
      ),
    };
    registerAfterCommitHook(spy);
    try {
      const res = await call(
        "POST",
        "/agent/v1/clusters/p6/heartbeat",
        { healthy: true, allocatable: { cpu: "7", memory: "9Gi" } },
        { token: await keys.sign("p6") },
      );
      expect(res.status).toBe(200);
    } finally {
      registerAfterCommitHook(schedulingHook);
    }
    expect(hooked.length).toBeGreaterThan(0);
    await waitFor("the taken-over outbox row deleted after the run", async () => (await ids()).length === 0, 5000, 20);
    const stored = await runInDurableObject(scheduler(), (_o, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM pending_triggers").one().n);
    expect(stored).toBe(0);
  });

  it("a write whose trigger never came is scheduled by the next run after the resync interval", async () => {
    const before = await pickN("missed", 1);
    await commitQuietly(before, 2);
    expect(await decided("apps", "missed")).toHaveLength(1);
    const real = clock.now;
    try {
      clock.now = () => real() + RESYNC_INTERVAL_MS + 1000;
      const result = await scheduler().reconcile({});
      expect(result.scheduled).toContain("apps/missed");
    } finally {
      clock.now = real;
    }
    expect(await decided("apps", "missed")).toHaveLength(2);
  });
});

describe("the scheduling hook", () => {
  const PLACEMENTS_KEY = resourceKey(PlacementKind);
  const placement = (rv: string, n: number): KubeObject => ({
    apiVersion: "cluster.open-cluster-management.io/v1beta1",
    kind: "Placement",
    metadata: { name: "hooked", namespace: "apps", uid: "u-hooked", creationTimestamp: "2026-01-01T00:00:00Z", resourceVersion: rv, generation: n },
    spec: { numberOfClusters: n },
  });
  const capture = () => {
    const seen: Trigger[] = [];
    const result: RunResult = { scheduled: [], skipped: [], writes: 0, requeue: {}, decisionsChanged: [], statusWritten: [`${PLACEMENTS_KEY}/apps/hooked`] };
    const queued: Trigger[] = [];
    const fake = {
      SCHEDULER: { getByName: () => ({ reconcile: async (t: Trigger) => (seen.push(t), result), enqueue: async (t: Trigger) => void queued.push(t) }) },
    } as unknown as Env;
    return { seen, queued, fake };
  };

  it("stores only keys in the outbox; run after its commit it passes the object as stored, run by a sweep the keys", async () => {
    const change = { def: PlacementKind, namespace: "apps", name: "hooked", before: placement("5", 1), after: placement("6", 2) };
    const planned = schedulingHook.plan(change)!;
    expect(JSON.parse(JSON.stringify(planned))).toEqual({
      placements: ["apps/hooked"],
      objects: [{ resource: "placements", namespace: "apps", name: "hooked" }],
    });
    const { seen, fake } = capture();
    const target = { resource: PLACEMENTS_KEY, namespace: "apps", name: "hooked" };
    expect(await schedulingHook.run(fake, planned, { ...target, recovering: false, writerWaits: true, change })).toEqual({ rewrote: true });
    expect(seen[0]!.objects).toEqual([{ resource: "placements", namespace: "apps", name: "hooked", object: change.after }]);
    await schedulingHook.run(fake, planned, { ...target, recovering: true, writerWaits: false });
    expect(seen[1]).toEqual(planned);
    expect(schedulingHook.plan({ ...change, after: { ...change.before, status: { numberOfSelectedClusters: 1 } } })).toBeNull();
  });

  it("passes a ManagedCluster's scheduling view and resourceVersion after its commit, only its labels in the plan", async () => {
    const before: KubeObject = {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "c9", uid: "u-c9", creationTimestamp: "2026-01-01T00:00:00Z", resourceVersion: "7", labels: { env: "dev" } },
      spec: {},
    };
    const after: KubeObject = { ...before, metadata: { ...before.metadata, resourceVersion: "8", labels: { env: "prod" } } };
    const change = { def: ManagedClusterKind, namespace: "", name: "c9", before, after };
    const planned = schedulingHook.plan(change)!;
    expect(JSON.parse(JSON.stringify(planned))).toEqual({ clusters: [{ name: "c9", labelsBefore: { env: "dev" }, labelsAfter: { env: "prod" } }] });
    const { seen, fake } = capture();
    await schedulingHook.run(fake, planned, {
      resource: resourceKey(ManagedClusterKind),
      namespace: "",
      name: "c9",
      recovering: false,
      writerWaits: true,
      change,
    });
    expect(seen[0]!.clusters).toEqual([
      { name: "c9", labelsBefore: { env: "dev" }, labelsAfter: { env: "prod" }, after: clusterView(after), resourceVersion: "8" },
    ]);
  });

  it("queues an agent's change in the scheduler instead of running it, with the object as stored", async () => {
    const before: KubeObject = {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "c8", uid: "u-c8", creationTimestamp: "2026-01-01T00:00:00Z", resourceVersion: "3" },
      spec: {},
    };
    const after: KubeObject = { ...before, metadata: { ...before.metadata, resourceVersion: "4" }, status: { allocatable: { cpu: "4" } } };
    const change = { def: ManagedClusterKind, namespace: "", name: "c8", before, after };
    const planned = schedulingHook.plan(change)!;
    const { seen, queued, fake } = capture();
    expect(
      await schedulingHook.run(fake, planned, {
        resource: resourceKey(ManagedClusterKind),
        namespace: "",
        name: "c8",
        recovering: false,
        writerWaits: false,
        change,
      }),
    ).toEqual({});
    expect(seen).toHaveLength(0);
    expect(queued).toHaveLength(1);
    expect(queued[0]!.clusters).toEqual([{ name: "c8", labelsBefore: undefined, labelsAfter: undefined, after: clusterView(after), resourceVersion: "4" }]);
  });

  it("the store gives a hook run after its commit the object as stored", async () => {
    const changes: (Change | undefined)[] = [];
    registerAfterCommitHook<true>({
      name: "test-capture",
      plan: (c) => (c.def === PlacementKind && c.name === "captured" && c.before === null ? true : null),
      async run(_env, _owed, target) {
        changes.push(target.change);
      },
    });
    const { object } = await writeStored(env, PlacementKind, "apps", "captured", {
      verb: "create",
      body: { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name: "captured" }, spec: { numberOfClusters: 1 } },
    });
    expect(changes).toHaveLength(1);
    expect(changes[0]!.before).toBeNull();
    // As stored: the uid and resourceVersion the store gave it (the body had neither); the answer
    // is newer, since the scheduler then wrote the new Placement's status.
    const after = changes[0]!.after!;
    expect(after.metadata.uid).toBe(object!.metadata.uid);
    expect(Number(after.metadata.resourceVersion)).toBeGreaterThan(0);
    expect(Number(after.metadata.resourceVersion)).toBeLessThan(Number(object!.metadata.resourceVersion));
    expect(await decided("apps", "captured")).toHaveLength(1);
  });
});
