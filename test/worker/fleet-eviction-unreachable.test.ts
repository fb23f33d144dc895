// Flotilla's automatic path for KubeFleet's placements (docs/kubefleet.md "Evictions, budgets,
// drain"; src/fleet/eviction-unreachable.ts): a PickN placement leaves a cluster whose hub taint
// (`cluster.open-cluster-management.io/unreachable`, set when its Available condition turns
// Unknown) outlasts the placement's toleration, through a ClusterResourcePlacementEviction decided
// as any other (its budget honoured). The timer's run is called with the injected clock's times.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { SCHEDULER_NAME } from "../../src/env.ts";
import { AUTOMATIC_EVICTION_RETRY_MS, checkUnreachableCluster } from "../../src/fleet/eviction-unreachable.ts";
import { planPlacement } from "../../src/fleet/controller.ts";
import { ClusterResourceBindingKind } from "../../src/kinds/fleet.ts";
import { EvictionMessages as M, EVICTION_BLOCKED_ANNOTATION } from "../../src/kinds/fleet-eviction.ts";
import {
  AVAILABLE,
  call,
  condition,
  createCluster,
  MC,
  merge,
  createFleetPlacement,
  fleetBindingsOf as bindingsOf,
  fleetPlacementRun as placementRun,
  fleetWorkClusters as worksOf,
  reportFleetApplied as reportAll,
} from "./helpers.ts";

const G = "/apis/placement.kubernetes-fleet.io/v1beta1";
const CRP = (name = "") => `/apis/placement.kubernetes-fleet.io/v1/clusterresourceplacements${name ? `/${name}` : ""}`;
const CRPE = (name = "") => `${G}/clusterresourceplacementevictions${name ? `/${name}` : ""}`;
const CRPDB = `${G}/clusterresourceplacementdisruptionbudgets`;
const UNREACHABLE = "cluster.open-cluster-management.io/unreachable";

async function evictionRun(placement: string) {
  await env.REPLICASETS.getByName(`eviction:/${placement}`).reconcile("eviction:", placement);
}
const placement = (name: string, policy: Record<string, unknown>) => createFleetPlacement(name, `${name}-ns`, policy);
/** Sets the cluster's Available condition (Unknown: OCM's lease controller's; the hub adds or removes its unreachable taint). */
async function setAvailable(cluster: string, status: "True" | "Unknown") {
  const conditions = [status === "True" ? AVAILABLE : { ...AVAILABLE, status: "Unknown", reason: "ManagedClusterLeaseUpdateStopped", message: "stopped" }];
  expect((await call("PATCH", `${MC}/${cluster}/status`, { status: { conditions } }, merge)).status).toBe(200);
  const mc = (await call("GET", `${MC}/${cluster}`)).body;
  const taint = (mc.spec.taints ?? []).find((t: { key: string }) => t.key === UNREACHABLE);
  expect(!!taint).toBe(status === "Unknown");
  return taint as { timeAdded: string } | undefined;
}
async function evictionsOf(placementName: string): Promise<KubeObject[]> {
  const r = await call("GET", CRPE());
  return r.body.items.filter((e: KubeObject) => (e.spec as { placementName: string }).placementName === placementName);
}
async function placementEvents(name: string): Promise<string[]> {
  const r = await call(
    "GET",
    `/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${name},involvedObject.kind=ClusterResourcePlacement`)}`,
  );
  expect(r.status).toBe(200);
  return r.body.items.map((e: { type: string; reason: string; message: string }) => `${e.type} ${e.reason}: ${e.message}`);
}
const pickN = (label: string, seconds: number) => ({
  placementType: "PickN",
  numberOfClusters: 2,
  affinity: {
    clusterAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { [label]: "1" } } }] } },
  },
  tolerations: [{ key: UNREACHABLE, operator: "Exists", tolerationSeconds: seconds }],
});

describe("the automatic path: a cluster unreachable past a placement's toleration", () => {
  it("a PickN placement is moved within its budget; the eviction, its Events and metrics say so", async () => {
    for (const c of ["ur-m1", "ur-m2", "ur-m3"]) await createCluster(c, { urm: "1" });
    await placement("ur-moved", pickN("urm", 0));
    await reportAll("ur-moved");
    const first = await worksOf("ur-moved");
    expect(first).toHaveLength(2);
    expect(
      (
        await call("POST", CRPDB, {
          apiVersion: `placement.kubernetes-fleet.io/v1beta1`,
          kind: "ClusterResourcePlacementDisruptionBudget",
          metadata: { name: "ur-moved" },
          spec: { minAvailable: 1 },
        })
      ).status,
    ).toBe(201);
    const victim = first[0]!;
    await setAvailable(victim, "Unknown");
    const now = Date.now();
    expect(await checkUnreachableCluster(env, victim, now)).toBe(now + AUTOMATIC_EVICTION_RETRY_MS);
    await evictionRun("ur-moved");
    const [eviction] = await evictionsOf("ur-moved");
    expect(eviction!.metadata.name).toMatch(/^unreachable-eviction-ur-moved-ur-m\d-[0-9a-f]{8}$/);
    expect(eviction!.metadata.labels?.["flotilla.dev/automatic-eviction"]).toBe("unreachable");
    expect(condition(eviction, "Executed")).toMatchObject({ status: "True", message: M.allowedPDB(2, 2) });
    await placementRun("ur-moved");
    const after = await worksOf("ur-moved");
    expect(after).toHaveLength(2);
    expect(after).not.toContain(victim);
    // The placement's Event, the eviction's metrics.
    expect((await placementEvents("ur-moved")).join("\n")).toContain(
      `Normal ClusterResourcePlacementEvictionExecuted: Automatic eviction (cluster ${victim} unreachable`,
    );
    const metrics = (await call("GET", "/metrics")).body as string;
    expect(metrics).toContain(`fleet_workload_eviction_complete{name="${eviction!.metadata.name}",isCompleted="true",isValid="true"}`);
    // Done: nothing more is due for the cluster.
    expect(await checkUnreachableCluster(env, victim, now + 1000)).toBeNull();
  });

  it("a budget that refuses it: the cluster's Evicted condition and a Warning Event, nothing moved; retried, then moved once allowed", async () => {
    for (const c of ["ub-m1", "ub-m2", "ub-m3"]) await createCluster(c, { ubm: "1" });
    await placement("ur-blocked", pickN("ubm", 0));
    await reportAll("ur-blocked");
    const first = await worksOf("ur-blocked");
    expect(
      (
        await call("POST", CRPDB, {
          apiVersion: `placement.kubernetes-fleet.io/v1beta1`,
          kind: "ClusterResourcePlacementDisruptionBudget",
          metadata: { name: "ur-blocked" },
          spec: { minAvailable: 2 },
        })
      ).status,
    ).toBe(201);
    const victim = first[0]!;
    await setAvailable(victim, "Unknown");
    const now = Date.now();
    await checkUnreachableCluster(env, victim, now);
    await evictionRun("ur-blocked");
    const [eviction] = await evictionsOf("ur-blocked");
    expect(condition(eviction, "Executed")).toMatchObject({
      status: "False",
      reason: "ClusterResourcePlacementEvictionNotExecuted",
      message: M.blockedPDB(2, 2),
    });
    await placementRun("ur-blocked");
    expect(await worksOf("ur-blocked")).toEqual(first);
    const crp = (await call("GET", CRP("ur-blocked"))).body;
    const status = { status: crp.status.placementStatuses.find((s: { clusterName: string }) => s.clusterName === victim) };
    expect(condition(status, "Evicted")).toMatchObject({ status: "False", reason: "ClusterResourcePlacementEvictionNotExecuted" });
    expect(condition(status, "Evicted").message).toContain(`cluster ${victim} unreachable (taint ${UNREACHABLE}:NoSelect since `);
    expect(condition(status, "Evicted").message).toContain(M.blockedPDB(2, 2));
    expect((await placementEvents("ur-blocked")).join("\n")).toContain("Warning ClusterResourcePlacementEvictionNotExecuted: Automatic eviction");
    const metrics = (await call("GET", "/metrics")).body as string;
    expect(metrics).toMatch(/flotilla_placement_evictions\{result="refused"\} [1-9]/);
    // Before the retry is due, nothing is made again.
    const retryAt = await checkUnreachableCluster(env, victim, now + 1000);
    expect(retryAt).toBeGreaterThan(now + 1000);
    expect((await evictionsOf("ur-blocked")).map((e) => e.metadata.uid)).toEqual([eviction!.metadata.uid]);
    // The budget loosened, the retry moves it.
    expect((await call("PATCH", `${CRPDB}/ur-blocked`, { spec: { minAvailable: 1 } }, merge)).status).toBe(200);
    await checkUnreachableCluster(env, victim, retryAt!);
    await evictionRun("ur-blocked");
    const [again] = await evictionsOf("ur-blocked");
    expect(again!.metadata.uid).not.toBe(eviction!.metadata.uid);
    expect(condition(again, "Executed")).toMatchObject({ status: "True" });
    await placementRun("ur-blocked");
    expect(await worksOf("ur-blocked")).not.toContain(victim);
    expect(await worksOf("ur-blocked")).toHaveLength(2);
  });

  it("a refusal's mark put on a binding or taken off owes its placement a prompt run (the commit's outbox row); a status write does not", () => {
    const binding = (annotations: Record<string, string>, status: Record<string, unknown> = {}): KubeObject => ({
      apiVersion: "placement.kubernetes-fleet.io/v1beta1",
      kind: "ClusterResourceBinding",
      metadata: {
        name: "p-m1-abc",
        uid: "u1",
        resourceVersion: "1",
        creationTimestamp: "2026-01-01T00:00:00Z",
        labels: { "kubernetes-fleet.io/parent-CRP": "p" },
        annotations,
      },
      spec: { state: "Bound", targetCluster: "m1" },
      status,
    });
    const change = (before: KubeObject, after: KubeObject) => ({ def: ClusterResourceBindingKind, namespace: "", name: "p-m1-abc", before, after });
    const marked = binding({ [EVICTION_BLOCKED_ANNOTATION]: '{"reason":"r","message":"m"}' });
    expect(planPlacement(change(binding({}), marked))).toEqual({ namespace: "", name: "p", prompt: true });
    expect(planPlacement(change(marked, binding({})))).toEqual({ namespace: "", name: "p", prompt: true });
    expect(planPlacement(change(binding({}), binding({}, { conditions: [AVAILABLE] })))).toBeNull();
  });

  it("a taint removed before the deadline moves nothing; the deadline is a timer, not a scan", async () => {
    for (const c of ["ut-m1", "ut-m2", "ut-m3"]) await createCluster(c, { utm: "1" });
    await placement("ur-early", pickN("utm", 60));
    await reportAll("ur-early");
    const first = await worksOf("ur-early");
    const victim = first[0]!;
    const taint = await setAvailable(victim, "Unknown");
    const deadline = Date.parse(taint!.timeAdded) + 60_000;
    // The taint's change set the cluster's timer in the scheduler object; its run sets it at the deadline.
    expect(await checkUnreachableCluster(env, victim, Date.now())).toBe(deadline);
    const rows = await runInDurableObject(env.SCHEDULER.getByName(SCHEDULER_NAME), (_o, state) =>
      state.storage.sql
        .exec<{ purpose: string }>("SELECT purpose FROM timers")
        .toArray()
        .map((r) => r.purpose),
    );
    expect(rows).toContain(`unreachable-eviction:${victim}`);
    await setAvailable(victim, "True");
    expect(await checkUnreachableCluster(env, victim, deadline + 1000)).toBeNull();
    expect(await evictionsOf("ur-early")).toEqual([]);
    await placementRun("ur-early");
    expect(await worksOf("ur-early")).toEqual(first);
  });

  it("PickFixed never moves; PickAll keeps an unreachable cluster (KubeFleet); a PickN placement without a toleration keeps it too", async () => {
    await createCluster("uf-m1", { ufm: "1" });
    await createCluster("uf-m2", { ufm: "1" });
    await placement("ur-fixed", { placementType: "PickFixed", clusterNames: ["uf-m1"] });
    const affinity = {
      clusterAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { ufm: "1" } } }] } },
    };
    await placement("ur-all", { placementType: "PickAll", affinity, tolerations: [{ key: UNREACHABLE, operator: "Exists", tolerationSeconds: 0 }] });
    await placement("ur-none", { placementType: "PickN", numberOfClusters: 2, affinity });
    for (const p of ["ur-fixed", "ur-all", "ur-none"]) await reportAll(p);
    await setAvailable("uf-m1", "Unknown");
    expect(await checkUnreachableCluster(env, "uf-m1", Date.now() + 3_600_000)).toBeNull();
    for (const p of ["ur-fixed", "ur-all", "ur-none"]) {
      expect(await evictionsOf(p)).toEqual([]);
      await placementRun(p);
      expect(await worksOf(p)).toContain("uf-m1");
      expect((await bindingsOf(p)).every((b) => !b.metadata.annotations?.[EVICTION_BLOCKED_ANNOTATION])).toBe(true);
    }
  });
});
