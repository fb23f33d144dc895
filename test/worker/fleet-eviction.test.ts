// KubeFleet's evictions and disruption budgets over the HTTP API, in workerd (docs/kubefleet.md
// "Evictions, budgets, drain"). Ported from kubefleet-dev/kubefleet:
// - `pkg/controllers/clusterresourceplacementeviction/controller_test.go`: TestIsEvictionAllowed
//   (all 41 cases, the budget's arithmetic), TestValidateEviction (CRP not found, deleting CRP,
//   PickFixed CRP, CRB not found, valid) and TestExecuteEviction (scheduled binding, deleting binding,
//   failed to apply, failed to be available, no PDB, PickAll with a misconfigured PDB);
// - `pkg/utils/validator` and the webhooks' tests (clusterresourceplacementeviction,
//   clusterresourceplacementdisruptionbudget validating webhooks): PickFixed and deleting CRP
//   evictions denied, a PickAll CRP's budget with maxUnavailable or a percentage minAvailable denied,
//   a missing CRP allowed; the CRDs' CEL rules (both fields, the value patterns, immutability);
// - `test/e2e/placement_eviction_test.go`'s flows, driven here through real placements and
//   reported works: a PickN placement's eviction blocked by its budget, then allowed, its cluster
//   tainted so the placement is re-filled elsewhere; a PickAll placement's cluster picked again when
//   not tainted.
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sweepOutbox } from "../../src/store/outbox.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { decideEviction, evictionAllowed } from "../../src/fleet/eviction-decide.ts";
import { EvictionMessages as M } from "../../src/kinds/fleet-eviction.ts";
import {
  call,
  condition,
  createCluster,
  createNamespaces,
  MC,
  merge,
  createFleetPlacement,
  fleetBindingsOf as bindingsOf,
  fleetPlacementRun as placementRun,
  fleetWorkClusters as worksOf,
  reportFleetApplied as reportAll,
  withPlacementObjectsGone,
} from "./helpers.ts";

const G = "/apis/placement.kubernetes-fleet.io/v1beta1";
const CRPE = (name = "") => `${G}/clusterresourceplacementevictions${name ? `/${name}` : ""}`;
const CRPDB = (name = "") => `${G}/clusterresourceplacementdisruptionbudgets${name ? `/${name}` : ""}`;
const TRACKING = "kubernetes-fleet.io/parent-CRP";

// ---- the decision, as KubeFleet's unit tests drive it ----

const at = "2026-01-01T00:00:00Z";
const available = { type: "Available", status: "True", reason: "available", message: "", lastTransitionTime: at };
function binding(name: string, state: string, cluster: string, conditions: Record<string, unknown>[] = []): KubeObject {
  return {
    apiVersion: "placement.kubernetes-fleet.io/v1beta1",
    kind: "ClusterResourceBinding",
    metadata: { name, labels: { [TRACKING]: "test-crp" } },
    spec: { state, targetCluster: cluster },
    status: { conditions },
  } as unknown as KubeObject;
}
// TestIsEvictionAllowed's bindings.
const B: Record<string, KubeObject> = {
  S: binding("scheduled-binding", "Scheduled", "test-cluster-1"),
  A: binding("bound-available-binding", "Bound", "test-cluster-2", [available]),
  A2: binding("another-bound-available-binding", "Bound", "test-cluster-3", [available]),
  U: binding("bound-unavailable-binding", "Bound", "test-cluster-4"),
  UA: binding("unscheduled-available-binding", "Unscheduled", "test-cluster-5", [available]),
};
const crpOf = (n: number | "PickAll") => ({
  metadata: { name: "test-crp" },
  spec: { policy: n === "PickAll" ? { placementType: "PickAll" } : { placementType: "PickN", numberOfClusters: n } },
});

// [name, numberOfClusters (or PickAll), bindings, budget, wantAllowed, wantAvailableBindings]
const ALLOWED_CASES: [string, number | "PickAll", string, { maxUnavailable?: number | string; minAvailable?: number | string }, boolean, number][] = [
  ["MaxUnavailable specified as Integer zero, one available binding - block eviction", 1, "A", { maxUnavailable: 0 }, false, 1],
  ["MaxUnavailable specified as Integer zero, one unavailable bindings - block eviction", 1, "S", { maxUnavailable: 0 }, false, 0],
  ["MaxUnavailable specified as Integer one, one unavailable binding - block eviction", 1, "S", { maxUnavailable: 1 }, false, 0],
  ["MaxUnavailable specified as Integer one, one available binding, upscaling - allow eviction", 2, "A", { maxUnavailable: 1 }, true, 1],
  ["MaxUnavailable specified as Integer one, one available, one unavailable binding - block eviction", 2, "A U", { maxUnavailable: 1 }, false, 1],
  ["MaxUnavailable specified as Integer one, two available binding - allow eviction", 1, "A UA", { maxUnavailable: 1 }, true, 2],
  [
    "MaxUnavailable specified as Integer one, available bindings greater than target, downscaling - allow eviction",
    1,
    "A A2 UA",
    { maxUnavailable: 1 },
    true,
    3,
  ],
  ["MaxUnavailable specified as Integer greater than one - block eviction", 4, "S A A2 U", { maxUnavailable: 2 }, false, 2],
  ["MaxUnavailable specified as Integer greater than one - allow eviction", 3, "S A UA", { maxUnavailable: 2 }, true, 2],
  ["MaxUnavailable specified as Integer large number greater than target number - allows eviction", 4, "S A U UA", { maxUnavailable: 10 }, true, 2],
  ["MaxUnavailable specified as percentage zero - block eviction", 2, "A UA", { maxUnavailable: "0%" }, false, 2],
  ["MaxUnavailable specified as percentage greater than zero, rounds up to 1 - block eviction", 1, "S", { maxUnavailable: "10%" }, false, 0],
  ["MaxUnavailable specified as percentage greater than zero, rounds up to 1 - allow eviction", 1, "A", { maxUnavailable: "10%" }, true, 1],
  [
    "MaxUnavailable specified as percentage greater than zero, rounds up to greater than 1 - block eviction",
    4,
    "S A U UA",
    { maxUnavailable: "40%" },
    false,
    2,
  ],
  ["MaxUnavailable specified as percentage greater than zero, rounds up to greater than 1 - allow eviction", 3, "S A UA", { maxUnavailable: "50%" }, true, 2],
  [
    "MaxUnavailable specified as percentage hundred, target number greater than bindings - allow eviction",
    10,
    "S A U A2 UA",
    { maxUnavailable: "100%" },
    true,
    3,
  ],
  ["MaxUnavailable specified as percentage hundred, target number equal to bindings - block eviction", 2, "S U", { maxUnavailable: "100%" }, false, 0],
  ["MaxUnavailable specified as percentage hundred, target number equal to bindings - allow eviction", 4, "S A U UA", { maxUnavailable: "100%" }, true, 2],
  ["MinAvailable specified as Integer zero, unavailable binding - block eviction", 2, "S", { minAvailable: 0 }, false, 0],
  ["MinAvailable specified as Integer zero, available binding - allow eviction", 2, "A", { minAvailable: 0 }, true, 1],
  ["MinAvailable specified as Integer one, unavailable binding - block eviction", 1, "S", { minAvailable: 1 }, false, 0],
  ["MinAvailable specified as Integer one, available binding, upscaling - block eviction", 2, "A", { minAvailable: 1 }, false, 1],
  ["MinAvailable specified as Integer one, one available, one unavailable binding - block eviction", 1, "A U", { minAvailable: 1 }, false, 1],
  ["MinAvailable specified as Integer one, two available bindings - allow eviction", 2, "A UA", { minAvailable: 1 }, true, 2],
  [
    "MinAvailable specified as Integer one, available bindings greater than target number, downscaling - allow eviction",
    1,
    "A A2 UA",
    { minAvailable: 1 },
    true,
    3,
  ],
  ["MinAvailable specified as Integer greater than one - block eviction", 2, "A UA", { minAvailable: 2 }, false, 2],
  ["MinAvailable specified as Integer greater than one - allow eviction", 4, "S A A2 UA", { minAvailable: 2 }, true, 3],
  [
    "MinAvailable specified as Integer greater than one, available bindings greater than target number, downscaling - block eviction",
    1,
    "A A2 UA",
    { minAvailable: 3 },
    false,
    3,
  ],
  ["MinAvailable specified as Integer large number greater than target number - blocks eviction", 5, "S A A2 U UA", { minAvailable: 10 }, false, 3],
  ["MinAvailable specified as percentage zero, all bindings are unavailable - block eviction", 2, "S U", { minAvailable: "0%" }, false, 0],
  ["MinAvailable specified as percentage zero, all bindings are available - allow eviction", 3, "A A2 UA", { minAvailable: "0%" }, true, 3],
  ["MinAvailable specified as percentage rounds upto one - block eviction", 1, "S", { minAvailable: "10%" }, false, 0],
  ["MinAvailable specified as percentage rounds upto one - allow eviction", 2, "A UA", { minAvailable: "10%" }, true, 2],
  ["MinAvailable specified as percentage greater than zero, rounds up to greater than 1 - block eviction", 3, "S A A2", { minAvailable: "40%" }, false, 2],
  ["MinAvailable specified as percentage greater than zero, rounds up to greater than 1 - allow eviction", 3, "A A2 UA", { minAvailable: "40%" }, true, 3],
  ["MinAvailable specified as percentage hundred, bindings less than target number - block eviction", 10, "A A2", { minAvailable: "100%" }, false, 2],
  ["MinAvailable specified as percentage hundred, bindings equal to target number - block eviction", 3, "A A2 UA", { minAvailable: "100%" }, false, 3],
  ["MinAvailable specified as percentage hundred, bindings greater than target number - allow eviction", 2, "A A2 UA", { minAvailable: "100%" }, true, 3],
  ["MinAvailable specified as Integer zero, available binding, PickAll CRP - allow eviction", "PickAll", "A", { minAvailable: 0 }, true, 1],
  ["MinAvailable specified as Integer one, available binding, PickAll CRP - block eviction", "PickAll", "A", { minAvailable: 1 }, false, 1],
  ["MinAvailable specified as Integer greater than one, available binding, PickAll CRP - allow eviction", "PickAll", "A A2 UA", { minAvailable: 2 }, true, 3],
];

describe("KubeFleet's isEvictionAllowed (TestIsEvictionAllowed)", () => {
  it.each(ALLOWED_CASES)("%s", (_name, n, bs, budget, wantAllowed, wantAvailable) => {
    const got = evictionAllowed(
      bs.split(" ").map((b) => B[b]!),
      crpOf(n),
      budget,
    );
    expect(got.allowed).toBe(wantAllowed);
    expect(got.available).toBe(wantAvailable);
  });
});

describe("KubeFleet's validateEviction and executeEviction (TestValidateEviction, TestExecuteEviction)", () => {
  const bound = binding("b", "Bound", "c1", [available]);
  it("invalid: CRP not found, deleting, PickFixed; CRB missing or doubled", () => {
    expect(decideEviction(null, [], "c1", null)).toEqual({ valid: false, message: M.invalidMissingCRP });
    expect(decideEviction({ metadata: { name: "p", deletionTimestamp: at } }, [], "c1", null)).toEqual({ valid: false, message: M.invalidDeletingCRP });
    expect(decideEviction({ metadata: { name: "p" }, spec: { policy: { placementType: "PickFixed" } } }, [bound], "c1", null)).toEqual({
      valid: false,
      message: M.invalidPickFixedCRP,
    });
    expect(decideEviction({ metadata: { name: "p" } }, [bound], "c2", null)).toEqual({ valid: false, message: M.invalidMissingCRB });
    expect(decideEviction({ metadata: { name: "p" } }, [bound, binding("b2", "Bound", "c1")], "c1", null)).toEqual({
      valid: false,
      message: M.invalidMultipleCRB,
    });
  });
  it("CRP with empty spec: valid; executed without a PDB", () => {
    expect(decideEviction({ metadata: { name: "p" }, spec: {} }, [bound], "c1", null)).toEqual({
      valid: true,
      executed: true,
      deleteBinding: bound,
      message: M.allowedNoPDB,
    });
  });
  it("scheduled binding: not executed; deleting binding: executed", () => {
    expect(decideEviction({ metadata: { name: "p" } }, [binding("b", "Scheduled", "c1")], "c1", null)).toMatchObject({
      executed: false,
      message: M.blockedMissingPlacement,
    });
    const deleting = { ...bound, metadata: { ...bound.metadata, deletionTimestamp: at } } as KubeObject;
    expect(decideEviction({ metadata: { name: "p" } }, [deleting], "c1", null)).toMatchObject({
      executed: true,
      deleteBinding: null,
      message: M.allowedPlacementRemoved,
    });
  });
  it("failed to apply, failed to be available: executed whatever the budget", () => {
    for (const type of ["Applied", "Available"]) {
      const failed = binding("b", "Bound", "c1", [{ type, status: "False", reason: "x", message: "", lastTransitionTime: at }]);
      expect(decideEviction({ metadata: { name: "p" } }, [failed], "c1", { minAvailable: 5 })).toMatchObject({
        executed: true,
        message: M.allowedPlacementFailed,
      });
    }
  });
  it("PickAll CRP with a misconfigured PDB: not executed", () => {
    for (const budget of [{ maxUnavailable: 1 }, { minAvailable: "50%" }])
      expect(decideEviction(crpOf("PickAll"), [bound], "c1", budget)).toMatchObject({ executed: false, message: M.blockedMisconfiguredPDB });
  });
});

// ---- over HTTP ----

async function evictionRun(placement: string) {
  await env.REPLICASETS.getByName(`eviction:/${placement}`).reconcile("eviction:", placement);
}
async function evict(name: string, placementName: string, clusterName: string) {
  const r = await call("POST", CRPE(), {
    apiVersion: "placement.kubernetes-fleet.io/v1beta1",
    kind: "ClusterResourcePlacementEviction",
    metadata: { name },
    spec: { placementName, clusterName },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  await evictionRun(placementName);
  const got = await call("GET", CRPE(name));
  expect(got.status).toBe(200);
  return got.body;
}
const budgetPost = (name: string, spec: Record<string, unknown>) =>
  call("POST", CRPDB(), { apiVersion: "placement.kubernetes-fleet.io/v1beta1", kind: "ClusterResourcePlacementDisruptionBudget", metadata: { name }, spec });

const placement = createFleetPlacement;

describe("evictions and budgets over HTTP", () => {
  it("the CRDs' rules: both fields, their patterns, immutable eviction fields", async () => {
    const both = await budgetPost("rules-1", { maxUnavailable: 1, minAvailable: 1 });
    expect(both.status).toBe(422);
    expect(JSON.stringify(both.body)).toContain("Both MaxUnavailable and MinAvailable cannot be specified");
    for (const v of [-1, "101%", "5", "abc%"]) {
      const r = await budgetPost("rules-2", { minAvailable: v });
      expect(r.status, String(v)).toBe(422);
      expect(JSON.stringify(r.body)).toContain("If supplied value is String should match regex");
    }
    expect((await budgetPost("rules-3", { maxUnavailable: "100%" })).status).toBe(201);
    expect((await budgetPost("rules-4", { minAvailable: 0 })).status).toBe(201);
    const e = await evict("rules-e", "no-such-crp", "c1");
    const r = await call("PATCH", CRPE("rules-e"), { spec: { clusterName: "c2" } }, merge);
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.body)).toContain("The ClusterName field is immutable");
    expect(e.metadata.name).toBe("rules-e");
    const bad = await call("POST", CRPE(), {
      apiVersion: "placement.kubernetes-fleet.io/v1beta1",
      kind: "ClusterResourcePlacementEviction",
      metadata: { name: "rules-bad" },
      spec: { placementName: "x" },
    });
    expect(bad.status).toBe(422);
  });

  it("an eviction of a missing placement or cluster is invalid with KubeFleet's condition, not a 5xx", async () => {
    const e = await evict("missing-crp", "nope", "nowhere");
    expect(condition(e, "Valid")).toMatchObject({ status: "False", reason: "ClusterResourcePlacementEvictionInvalid", message: M.invalidMissingCRP });
    expect(condition(e, "Executed")).toBeUndefined();
    await createCluster("ev-m1", { evm: "1" });
    await placement("ev-missing", "ev-missing-ns", {
      placementType: "PickAll",
      affinity: {
        clusterAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { evm: "1" } } }] } },
      },
    });
    const e2 = await evict("missing-cluster", "ev-missing", "no-such-cluster");
    expect(condition(e2, "Valid")).toMatchObject({ status: "False", message: M.invalidMissingCRB });
    // A decided eviction is never decided again.
    await evictionRun("ev-missing");
    expect(condition((await call("GET", CRPE("missing-cluster"))).body, "Valid")?.lastTransitionTime).toBe(condition(e2, "Valid")?.lastTransitionTime);
  });

  it("the webhooks: a PickFixed placement's eviction and a PickAll placement's maxUnavailable or percentage budget are denied", async () => {
    await createCluster("ev-f1", { evf: "1" });
    await placement("ev-fixed", "ev-fixed-ns", { placementType: "PickFixed", clusterNames: ["ev-f1"] });
    const r = await call("POST", CRPE(), {
      apiVersion: "placement.kubernetes-fleet.io/v1beta1",
      kind: "ClusterResourcePlacementEviction",
      metadata: { name: "fixed" },
      spec: { placementName: "ev-fixed", clusterName: "ev-f1" },
    });
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.body)).toContain("cluster resource placement policy type PickFixed is not supported");
    // A server-side apply that would create it is checked as the create is.
    const applied = JSON.stringify({
      apiVersion: "placement.kubernetes-fleet.io/v1beta1",
      kind: "ClusterResourcePlacementEviction",
      metadata: { name: "fixed-ssa" },
      spec: { placementName: "ev-fixed", clusterName: "ev-f1" },
    });
    const ssa = await call("PATCH", `${CRPE("fixed-ssa")}?fieldManager=kubectl`, applied, { contentType: "application/apply-patch+yaml" });
    expect(ssa.status, JSON.stringify(ssa.body)).toBe(422);
    expect(JSON.stringify(ssa.body)).toContain("cluster resource placement policy type PickFixed is not supported");
    expect((await call("GET", CRPE("fixed-ssa"))).status).toBe(404);
    await placement("ev-all", "ev-all-ns", { placementType: "PickAll" });
    const mu = await budgetPost("ev-all", { maxUnavailable: 1 });
    expect(mu.status).toBe(422);
    expect(JSON.stringify(mu.body)).toContain("cluster resource placement policy type PickAll is not supported with any specified max unavailable 1");
    const pct = await budgetPost("ev-all", { minAvailable: "50%" });
    expect(pct.status).toBe(422);
    expect(JSON.stringify(pct.body)).toContain("cluster resource placement policy type PickAll is not supported with min available as a percentage 50%");
    expect((await budgetPost("ev-all", { minAvailable: 1 })).status).toBe(201);
    // Updating it to a percentage is denied too (the webhook runs on update).
    expect((await call("PATCH", CRPDB("ev-all"), { spec: { minAvailable: "10%" } }, merge)).status).toBe(422);
    // A budget whose placement does not exist is allowed.
    expect((await budgetPost("ev-none", { maxUnavailable: 1 })).status).toBe(201);
  });

  it("a PickN placement: its budget refuses an eviction, then allows one; a tainted cluster is left and the placement re-filled", async () => {
    for (const c of ["ev-n1", "ev-n2", "ev-n3"]) await createCluster(c, { evn: "1" });
    const policy = {
      placementType: "PickN",
      numberOfClusters: 2,
      affinity: {
        clusterAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { evn: "1" } } }] } },
      },
    };
    await placement("ev-pickn", "ev-pickn-ns", policy);
    const first = await worksOf("ev-pickn");
    expect(first).toHaveLength(2);
    await reportAll("ev-pickn");
    expect((await bindingsOf("ev-pickn")).every((b) => condition(b, "Available")?.status === "True")).toBe(true);
    expect((await budgetPost("ev-pickn", { minAvailable: "100%" })).status).toBe(201);
    const victim = first[0]!;
    const blocked = await evict("pickn-blocked", "ev-pickn", victim);
    expect(condition(blocked, "Valid")).toMatchObject({ status: "True", reason: "ClusterResourcePlacementEvictionValid", message: M.valid });
    expect(condition(blocked, "Executed")).toMatchObject({
      status: "False",
      reason: "ClusterResourcePlacementEvictionNotExecuted",
      message: M.blockedPDB(2, 2),
    });
    expect(await worksOf("ev-pickn")).toEqual(first);
    // The cluster is cordoned (KubeFleet's drain taint in OCM's form) and the budget loosened.
    expect(
      (await call("PATCH", `${MC}/${victim}`, { spec: { taints: [{ key: "cordon-key", value: "cordon-value", effect: "NoSelect" }] } }, merge)).status,
    ).toBe(200);
    await placementRun("ev-pickn");
    expect(await worksOf("ev-pickn")).toEqual(first);
    expect((await call("PATCH", CRPDB("ev-pickn"), { spec: { minAvailable: 1 } }, merge)).status).toBe(200);
    const done = await evict("pickn-allowed", "ev-pickn", victim);
    expect(condition(done, "Executed")).toMatchObject({
      status: "True",
      reason: "ClusterResourcePlacementEvictionExecuted",
      message: M.allowedPDB(2, 2),
    });
    await placementRun("ev-pickn");
    const now = await worksOf("ev-pickn");
    expect(now).not.toContain(victim);
    expect(now).toHaveLength(2);
    expect((await bindingsOf("ev-pickn")).map((b) => (b.spec as { targetCluster: string }).targetCluster).sort()).toEqual(now);
    // Events on the evictions, KubeFleet's reasons.
    const ev = await call("GET", `/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent("involvedObject.name=pickn-allowed")}`);
    expect(ev.status).toBe(200);
    expect(ev.body.items.map((e: { reason: string }) => e.reason)).toContain("ClusterResourcePlacementEvictionExecuted");
    const refused = await call("GET", `/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent("involvedObject.name=pickn-blocked")}`);
    expect(refused.body.items.map((e: { reason: string; type: string }) => `${e.type} ${e.reason}`)).toContain(
      "Warning ClusterResourcePlacementEvictionNotExecuted",
    );
    // The placement's Events (Flotilla's: KubeFleet's controller records none) for the refused and the executed eviction.
    const onPlacement = await call(
      "GET",
      `/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent("involvedObject.kind=ClusterResourcePlacement,involvedObject.name=ev-pickn")}`,
    );
    const lines = onPlacement.body.items.map((e: { type: string; reason: string; message: string }) => `${e.type} ${e.reason}: ${e.message}`);
    expect(lines).toContain(`Warning ClusterResourcePlacementEvictionNotExecuted: Eviction pickn-blocked of cluster ${victim}: ${M.blockedPDB(2, 2)}`);
    expect(lines).toContain(`Normal ClusterResourcePlacementEvictionExecuted: Eviction pickn-allowed of cluster ${victim}: ${M.allowedPDB(2, 2)}`);
    // /metrics: KubeFleet's eviction series, and the evictions by outcome.
    const metrics = (await call("GET", "/metrics")).body as string;
    expect(metrics).toContain('fleet_workload_eviction_complete{name="pickn-allowed",isCompleted="true",isValid="true"}');
    expect(metrics).toContain('fleet_workload_eviction_complete{name="pickn-blocked",isCompleted="true",isValid="true"}');
    expect(metrics).toMatch(/flotilla_placement_evictions\{result="executed"\} [1-9]/);
    expect(metrics).toMatch(/flotilla_placement_evictions\{result="refused"\} [1-9]/);
  });

  it("the run an executed eviction owes its placement is in the decision's commit: lost with its object, the outbox sweep runs it", async () => {
    for (const c of ["ev-k1", "ev-k2", "ev-k3"]) await createCluster(c, { evk: "1" });
    const policy = {
      placementType: "PickN",
      numberOfClusters: 2,
      affinity: {
        clusterAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { evk: "1" } } }] } },
      },
    };
    await placement("ev-lost", "ev-lost-ns", policy);
    const first = await worksOf("ev-lost");
    expect(first).toHaveLength(2);
    await reportAll("ev-lost");
    const victim = first[0]!;
    expect(
      (await call("PATCH", `${MC}/${victim}`, { spec: { taints: [{ key: "cordon-key", value: "cordon-value", effect: "NoSelect" }] } }, merge)).status,
    ).toBe(200);
    await placementRun("ev-lost");
    // The placement's object cannot be reached while the eviction is decided (as when workerd is
    // killed between the eviction's commit and the placement's run).
    const refused = await withPlacementObjectsGone(async () => {
      await call("POST", CRPE(), {
        apiVersion: "placement.kubernetes-fleet.io/v1beta1",
        kind: "ClusterResourcePlacementEviction",
        metadata: { name: "lost-run" },
        spec: { placementName: "ev-lost", clusterName: victim },
      });
      await evictionRun("ev-lost").catch(() => undefined);
    });
    expect(refused).toBeGreaterThan(0);
    expect(condition((await call("GET", CRPE("lost-run"))).body, "Executed")).toMatchObject({ status: "True", message: M.allowedNoPDB });
    expect(await worksOf("ev-lost")).toEqual(first);
    // The sweep after the restart runs the decision's outbox row: the placement runs, leaves the cluster and is re-filled.
    await env.DB.prepare("UPDATE outbox SET due_at = 0").run();
    await sweepOutbox(env, Date.now());
    await runDurableObjectAlarm(env.REPLICASETS.getByName("placement:/ev-lost"));
    const now = await worksOf("ev-lost");
    expect(now).not.toContain(victim);
    expect(now).toHaveLength(2);
  });

  it("a PickAll placement's cluster without a taint is picked again (KubeFleet's e2e)", async () => {
    await createCluster("ev-a1", { eva: "1" });
    await createCluster("ev-a2", { eva: "1" });
    const policy = {
      placementType: "PickAll",
      affinity: {
        clusterAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { eva: "1" } } }] } },
      },
    };
    await placement("ev-pickall", "ev-pickall-ns", policy);
    await reportAll("ev-pickall");
    const e = await evict("pickall-again", "ev-pickall", "ev-a1");
    expect(condition(e, "Executed")).toMatchObject({ status: "True", message: M.allowedNoPDB });
    await placementRun("ev-pickall");
    expect(await worksOf("ev-pickall")).toEqual(["ev-a1", "ev-a2"]);
    expect((await bindingsOf("ev-pickall")).map((b) => (b.spec as { targetCluster: string }).targetCluster).sort()).toEqual(["ev-a1", "ev-a2"]);
  });

  it("RBAC: cluster-scoped, so only a cluster's admins write evictions and budgets; a namespace's edit and view roles do not", async () => {
    await createNamespaces("ev-team");
    const rb = await call("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/ev-team/rolebindings", {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "alice-edit" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "edit" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "alice" }],
    });
    expect(rb.status).toBe(201);
    const asAlice = { headers: { "Impersonate-User": "alice" } };
    const e = await call(
      "POST",
      CRPE(),
      {
        apiVersion: "placement.kubernetes-fleet.io/v1beta1",
        kind: "ClusterResourcePlacementEviction",
        metadata: { name: "alice" },
        spec: { placementName: "x", clusterName: "y" },
      },
      asAlice,
    );
    expect(e.status).toBe(403);
    expect((await call("GET", CRPDB(), undefined, asAlice)).status).toBe(403);
  });
});
