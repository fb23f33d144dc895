// KubeFleet's staged update runs over the HTTP API, in workerd: the kinds' validation (the CRDs'
// CEL rules: state transitions, immutable fields, stage tasks), a run's initialization and its
// failures (KubeFleet's initialization_test.go cases), execution stage by stage with
// maxConcurrency, before- and after-stage tasks (TimedWait on the injected clock, Approval set with
// a status patch as kubectl does), stop and resume, a rollback to an older snapshot index, and
// clusters that join or leave the placement mid-run (kubefleet#733: the run never stalls).
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { sweepOutbox } from "../../src/store/outbox.ts";
import {
  call,
  condition,
  createCluster,
  createNamespaces,
  merge,
  withClockAhead,
  reportApplied as report,
  fleetWorksOf as worksOf,
  withPlacementObjectsGone,
} from "./helpers.ts";

const G = "/apis/placement.kubernetes-fleet.io";
const CRP = (name = "") => `${G}/v1/clusterresourceplacements${name ? `/${name}` : ""}`;
const CSUS = (name = "") => `${G}/v1/clusterstagedupdatestrategies${name ? `/${name}` : ""}`;
const CSUR = (name = "") => `${G}/v1/clusterstagedupdateruns${name ? `/${name}` : ""}`;
const CAR = (name = "") => `${G}/v1/clusterapprovalrequests${name ? `/${name}` : ""}`;
const SUR = (ns: string, name = "") => `${G}/v1beta1/namespaces/${ns}/stagedupdateruns${name ? `/${name}` : ""}`;
const SUS = (ns: string, name = "") => `${G}/v1beta1/namespaces/${ns}/stagedupdatestrategies${name ? `/${name}` : ""}`;
const WORK = (cluster: string, name: string) => `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks/${name}`;
const TRACKING = "kubernetes-fleet.io/parent-CRP";
const INDEX = "kubernetes-fleet.io/parent-resource-snapshot-index";

/** Runs a placement's controller now. */
async function placementRun(name: string) {
  await env.REPLICASETS.getByName(`placement:/${name}`).reconcile("placement:", name);
}

/** Runs a ClusterStagedUpdateRun's controller now (its object's run). */
async function runNow(name: string) {
  await env.REPLICASETS.getByName(`updaterun:/${name}`).reconcile("updaterun:", name);
}

async function indexes(tracking: string): Promise<Record<string, string>> {
  const ws = await worksOf(tracking);
  return Object.fromEntries(Object.entries(ws).map(([c, w]) => [c, w.metadata.labels[INDEX]]));
}

/** Reports every work of `tracking` Applied and Available, then runs the placement and the run. */
async function reportAll(tracking: string, run: string) {
  for (const c of Object.keys(await worksOf(tracking))) await report(c, `${tracking}-work`);
  await placementRun(tracking);
  await runNow(run);
}

/** Approves an approval request as KubeFleet's docs show (`kubectl patch ... --subresource=status`). */
async function approve(name: string, path = CAR(name)) {
  const at = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  const r = await call(
    "PATCH",
    `${path}/status`,
    { status: { conditions: [{ type: "Approved", status: "True", reason: "lgtm", message: "lgtm", lastTransitionTime: at, observedGeneration: 1 }] } },
    merge,
  );
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.headers.get("audit-id");
}

async function getRun(name: string) {
  const r = await call("GET", CSUR(name));
  expect(r.status).toBe(200);
  return r.body;
}

/** A namespace `ns` with a ConfigMap, and an External ClusterResourcePlacement `name` of it on the clusters labelled `group=<group>`. */
async function externalPlacement(name: string, ns: string, group: string) {
  await createNamespaces(ns);
  expect(
    (await call("POST", `/api/v1/namespaces/${ns}/configmaps`, { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" }, data: { v: "1" } })).status,
  ).toBe(201);
  const r = await call("POST", CRP(), {
    apiVersion: "placement.kubernetes-fleet.io/v1",
    kind: "ClusterResourcePlacement",
    metadata: { name },
    spec: {
      resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: ns }],
      policy: {
        placementType: "PickAll",
        affinity: {
          clusterAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { group } } }] } },
        },
      },
      strategy: { type: "External" },
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}

/** Two stages: `canary` (1 cluster) with an after-stage TimedWait and Approval, then `prod` (the rest, by their `order` label, `maxConcurrency`). */
async function strategy(
  name: string,
  group: string,
  maxConcurrency: number | string = 1,
  after = [{ type: "TimedWait", waitTime: "1m" }, { type: "Approval" }],
) {
  const r = await call("POST", CSUS(), {
    apiVersion: "placement.kubernetes-fleet.io/v1",
    kind: "ClusterStagedUpdateStrategy",
    metadata: { name },
    spec: {
      stages: [
        { name: "canary", labelSelector: { matchLabels: { group, stage: "canary" } }, afterStageTasks: after },
        { name: "prod", labelSelector: { matchLabels: { group, stage: "prod" } }, sortingLabelKey: "order", maxConcurrency },
      ],
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}

async function createRun(name: string, placement: string, strategyName: string, extra: Record<string, unknown> = {}) {
  const r = await call("POST", CSUR(), {
    apiVersion: "placement.kubernetes-fleet.io/v1",
    kind: "ClusterStagedUpdateRun",
    metadata: { name },
    spec: { placementName: placement, stagedRolloutStrategyName: strategyName, ...extra },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

const setState = (name: string, state: string) => call("PATCH", CSUR(name), { spec: { state } }, merge);

async function fleetOf(group: string) {
  await createCluster(`${group}-c1`, { group, stage: "canary" });
  await createCluster(`${group}-p1`, { group, stage: "prod", order: "3" });
  await createCluster(`${group}-p2`, { group, stage: "prod", order: "1" });
  await createCluster(`${group}-p3`, { group, stage: "prod", order: "2" });
}

const stageOf = (run: KubeObject, name: string) =>
  ((run.status as { stagesStatus: { stageName: string }[] }).stagesStatus.find((s) => s.stageName === name) ?? null) as {
    stageName: string;
    clusters: { clusterName: string; conditions?: { type: string; status: string; reason: string }[] }[];
    conditions?: { type: string; status: string; reason: string }[];
    afterStageTaskStatus?: { type: string; approvalRequestName?: string; conditions?: { type: string; status: string }[] }[];
  } | null;
const clusterCond = (run: KubeObject, stage: string, cluster: string, type: string) =>
  stageOf(run, stage)!
    .clusters.find((c) => c.clusterName === cluster)!
    .conditions?.find((c) => c.type === type);

describe("staged update run kinds (KubeFleet's CRDs)", () => {
  it("serves the six kinds in v1 and v1beta1, with KubeFleet's short names", async () => {
    const d = (await call("GET", `${G}/v1`)).body.resources.map((r: { name: string; shortNames?: string[] }) => `${r.name}:${(r.shortNames ?? []).join(",")}`);
    for (const want of [
      "clusterstagedupdatestrategies:csus",
      "stagedupdatestrategies:sus",
      "clusterstagedupdateruns:csur",
      "stagedupdateruns:sur",
      "clusterapprovalrequests:careq",
      "approvalrequests:areq",
    ])
      expect(d).toContain(want);
    expect((await call("GET", `${G}/v1beta1/clusterstagedupdateruns`)).status).toBe(200);
  });

  it("refuses invalid stage tasks and stages (the CRD's CEL rules)", async () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ name: "a", afterStageTasks: [{ type: "TimedWait" }] }, "AfterStageTaskType is TimedWait, waitTime is required"],
      [{ name: "a", afterStageTasks: [{ type: "Approval", waitTime: "1m" }] }, "AfterStageTaskType is Approval, waitTime is not allowed"],
      [{ name: "a", beforeStageTasks: [{ type: "TimedWait", waitTime: "1m" }] }, "BeforeStageTaskType cannot be TimedWait"],
      [{ name: "a", maxConcurrency: 0 }, "maxConcurrency must be at least 1"],
      [{ name: "a", maxConcurrency: "0%" }, "should match"],
      [{ name: "Bad-Name" }, "should match '^[a-z0-9]+$'"],
      [{ name: "a", afterStageTasks: [{ type: "TimedWait", waitTime: "soon" }] }, "should match"],
    ];
    for (const [stage, message] of bad) {
      const r = await call("POST", CSUS(), {
        apiVersion: "placement.kubernetes-fleet.io/v1",
        kind: "ClusterStagedUpdateStrategy",
        metadata: { name: "bad" },
        spec: { stages: [stage] },
      });
      expect(r.status, JSON.stringify(stage)).toBe(422);
      expect(r.body.message).toContain(message);
    }
    const many = Array.from({ length: 32 }, (_, i) => ({ name: `s${i}` }));
    expect(
      (
        await call("POST", CSUS(), {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ClusterStagedUpdateStrategy",
          metadata: { name: "many" },
          spec: { stages: many },
        })
      ).status,
    ).toBe(422);
  });

  it("defaults state to Initialize and allows only KubeFleet's transitions; placement, index and strategy are immutable", async () => {
    const run = await createRun("transitions", "p", "s");
    expect(run.spec.state).toBe("Initialize");
    const stop = await setState("transitions", "Stop");
    expect(stop.status).toBe(422);
    expect(stop.body.message).toContain("invalid state transition: cannot transition from Initialize to Stop");
    expect((await setState("transitions", "Run")).status).toBe(200);
    const back = await setState("transitions", "Initialize");
    expect(back.status).toBe(422);
    expect(back.body.message).toContain("cannot transition from Run to Initialize");
    expect((await setState("transitions", "Stop")).status).toBe(200);
    expect((await setState("transitions", "Initialize")).body.message).toContain("cannot transition from Stop to Initialize");
    expect((await setState("transitions", "Run")).status).toBe(200);
    const immutable: [string, string, string][] = [
      ["placementName", "q", "placementName is immutable"],
      ["resourceSnapshotIndex", "3", "resourceSnapshotIndex is immutable"],
      ["stagedRolloutStrategyName", "t", "stagedRolloutStrategyName is immutable"],
    ];
    for (const [field, value, message] of immutable) {
      const r = await call("PATCH", CSUR("transitions"), { spec: { [field]: value } }, merge);
      expect(r.status).toBe(422);
      expect(r.body.message).toContain(message);
    }
    const long = await call("POST", CSUR(), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterStagedUpdateRun",
      metadata: { name: "x".repeat(64) },
      spec: { placementName: "p", stagedRolloutStrategyName: "s" },
    });
    expect(long.status).toBe(422);
    expect(long.body.message).toContain("metadata.name max length is 63");
  });

  it("keeps an approval request's spec immutable", async () => {
    const r = await call("POST", CAR(), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterApprovalRequest",
      metadata: { name: "imm" },
      spec: { parentStageRollout: "r", targetStage: "s" },
    });
    expect(r.status).toBe(201);
    const p = await call("PATCH", CAR("imm"), { spec: { targetStage: "t" } }, merge);
    expect(p.status).toBe(422);
    expect(p.body.message).toContain("The spec field is immutable");
  });
});

describe("a staged update run (KubeFleet's updaterun controller)", () => {
  it("initializes without rolling out, fails what KubeFleet fails, and accepts External placements", async () => {
    await fleetOf("ini");
    await externalPlacement("ini", "ini-app", "ini");
    await placementRun("ini");
    // External: scheduled, but no works until a run reaches the clusters.
    expect(Object.keys(await worksOf("ini"))).toEqual([]);
    const bindings = (await call("GET", `${G}/v1/clusterresourcebindings`)).body.items.filter((b: KubeObject) => b.metadata.labels?.[TRACKING] === "ini");
    expect(bindings.map((b: { spec: { state: string } }) => b.spec.state)).toEqual(["Scheduled", "Scheduled", "Scheduled", "Scheduled"]);
    const crp = (await call("GET", CRP("ini"))).body;
    expect(condition(crp, "ClusterResourcePlacementRolloutStarted")).toMatchObject({ status: "False" });

    await strategy("ini-s", "ini");
    await createRun("ini-run", "ini", "ini-s");
    await runNow("ini-run");
    const run = await getRun("ini-run");
    expect(condition(run, "Initialized")).toMatchObject({ status: "True", reason: "UpdateRunInitializedSuccessfully" });
    expect(run.status.resourceSnapshotIndexUsed).toBe("0");
    expect(run.status.policySnapshotIndexUsed).toBe("0");
    expect(
      run.status.stagesStatus.map((s: { stageName: string; clusters: { clusterName: string }[] }) => [s.stageName, s.clusters.map((c) => c.clusterName)]),
    ).toEqual([
      ["canary", ["ini-c1"]],
      ["prod", ["ini-p2", "ini-p3", "ini-p1"]],
    ]);
    expect(run.status.stagesStatus[0].afterStageTaskStatus).toEqual([{ type: "TimedWait" }, { type: "Approval", approvalRequestName: "ini-run-after-canary" }]);
    expect(run.status.deletionStageStatus).toEqual({ stageName: "kubernetes-fleet.io/deleteStage", clusters: [] });
    expect(condition(run, "Progressing")).toBeUndefined();
    expect(Object.keys(await worksOf("ini"))).toEqual([]);

    // Failures (initialization_test.go): each run fails to initialize with KubeFleet's message.
    const failing: [string, Record<string, unknown>, string][] = [
      ["f-noplacement", { placementName: "nope", stagedRolloutStrategyName: "ini-s" }, "parent placement not found"],
      ["f-nostrategy", { placementName: "ini", stagedRolloutStrategyName: "nope" }, "referenced updateStrategy not found: `nope`"],
      ["f-index", { placementName: "ini", stagedRolloutStrategyName: "ini-s", resourceSnapshotIndex: "7" }, "no resourceSnapshots with index `7` found"],
      [
        "f-badindex",
        { placementName: "ini", stagedRolloutStrategyName: "ini-s", resourceSnapshotIndex: "-1" },
        "invalid resource snapshot index `-1` provided",
      ],
    ];
    expect(
      (
        await call("POST", CSUS(), {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ClusterStagedUpdateStrategy",
          metadata: { name: "ini-missing" },
          spec: { stages: [{ name: "only", labelSelector: { matchLabels: { stage: "canary" } } }] },
        })
      ).status,
    ).toBe(201);
    failing.push([
      "f-missing",
      { placementName: "ini", stagedRolloutStrategyName: "ini-missing" },
      "some clusters are not placed in any stage, total 3, showing up to 10: ini-p1, ini-p2, ini-p3",
    ]);
    expect(
      (
        await call("POST", CSUS(), {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ClusterStagedUpdateStrategy",
          metadata: { name: "ini-dup" },
          spec: {
            stages: [
              { name: "a", labelSelector: { matchLabels: { group: "ini" } } },
              { name: "b", labelSelector: { matchLabels: { stage: "canary" } } },
            ],
          },
        })
      ).status,
    ).toBe(201);
    failing.push(["f-dup", { placementName: "ini", stagedRolloutStrategyName: "ini-dup" }, "cluster `ini-c1` appears in more than one stages"]);
    expect(
      (
        await call("POST", CSUS(), {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ClusterStagedUpdateStrategy",
          metadata: { name: "ini-sort" },
          spec: { stages: [{ name: "a", labelSelector: { matchLabels: { group: "ini" } }, sortingLabelKey: "stage" }] },
        })
      ).status,
    ).toBe(201);
    failing.push([
      "f-sort",
      { placementName: "ini", stagedRolloutStrategyName: "ini-sort" },
      "the sorting label `stage:canary` on cluster `ini-c1` is not valid",
    ]);
    for (const [name, spec, message] of failing) {
      const r = await call("POST", CSUR(), { apiVersion: "placement.kubernetes-fleet.io/v1", kind: "ClusterStagedUpdateRun", metadata: { name }, spec });
      expect(r.status).toBe(201);
      await runNow(name);
      const got = await getRun(name);
      expect(condition(got, "Initialized"), name).toMatchObject({ status: "False", reason: "UpdateRunInitializedFailed" });
      expect(condition(got, "Initialized").message, name).toContain(message);
    }

    // A RollingUpdate placement cannot be run.
    await createNamespaces("ini-rolling");
    expect(
      (
        await call("POST", CRP(), {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ClusterResourcePlacement",
          metadata: { name: "ini-rolling" },
          spec: {
            resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "ini-rolling" }],
            policy: { placementType: "PickFixed", clusterNames: ["ini-c1"] },
          },
        })
      ).status,
    ).toBe(201);
    await createRun("f-rolling", "ini-rolling", "ini-s");
    await runNow("f-rolling");
    expect(condition(await getRun("f-rolling"), "Initialized").message).toContain("does not have an external rollout strategy");
    // External cannot be left (KubeFleet's CEL rule).
    const leave = await call("PATCH", CRP("ini"), { spec: { strategy: { type: "RollingUpdate" } } }, merge);
    expect(leave.status).toBe(422);
    expect(leave.body.message).toContain("cannot change rollout strategy type from 'External' to other types");
  });

  it("rolls out stage by stage: canary, a TimedWait and an approval, then the rest by maxConcurrency; a second run rolls back", async () => {
    await fleetOf("two");
    await externalPlacement("two", "two-app", "two");
    await placementRun("two");
    await strategy("two-s", "two", 2);
    await createRun("two-run", "two", "two-s", { state: "Run" });
    await runNow("two-run");

    // The canary first, alone.
    expect(await indexes("two")).toEqual({ "two-c1": "0" });
    let run = await getRun("two-run");
    expect(condition(run, "Progressing")).toMatchObject({ status: "True", reason: "UpdateRunProgressing" });
    expect(clusterCond(run, "canary", "two-c1", "Started")).toMatchObject({ status: "True", reason: "ClusterUpdatingStarted" });
    expect(stageOf(run, "canary")!.conditions!.find((c) => c.type === "Progressing")).toMatchObject({ status: "True", reason: "StageUpdatingStarted" });
    const binding = (await call("GET", `${G}/v1/clusterresourcebindings/two-two-c1`)).body;
    expect(binding.spec).toMatchObject({ state: "Bound", resourceSnapshotName: "two-0-snapshot" });

    // The canary's agent reports: the stage's clusters are done, its after-stage tasks wait.
    await reportAll("two", "two-run");
    run = await getRun("two-run");
    expect(clusterCond(run, "canary", "two-c1", "Succeeded")).toMatchObject({ status: "True", reason: "ClusterUpdatingSucceeded" });
    expect(condition(run, "Progressing")).toMatchObject({
      status: "False",
      reason: "UpdateRunWaiting",
      message: "The updateRun is waiting for after-stage tasks in stage canary to complete",
    });
    expect(stageOf(run, "canary")!.conditions!.find((c) => c.type === "Progressing")).toMatchObject({ status: "False", reason: "StageUpdatingWaiting" });
    const request = (await call("GET", CAR("two-run-after-canary"))).body;
    expect(request.spec).toEqual({ parentStageRollout: "two-run", targetStage: "canary" });
    expect(request.metadata.labels).toMatchObject({
      "kubernetes-fleet.io/targetUpdateRun": "two-run",
      "kubernetes-fleet.io/targetUpdatingStage": "canary",
      "kubernetes-fleet.io/taskType": "afterStage",
    });
    // The TimedWait is the run object's named timer.
    const timers = await runInDurableObject(env.REPLICASETS.getByName("updaterun:/two-run"), (_o, state) =>
      state.storage.sql.exec<{ purpose: string; due: number }>("SELECT purpose, due FROM timers").toArray(),
    );
    expect(timers.map((t) => t.purpose)).toContain("updaterun-wait");

    // Approved before the wait ends: the prod stage still waits for the TimedWait.
    await approve("two-run-after-canary");
    await runNow("two-run");
    expect(Object.keys(await indexes("two"))).toEqual(["two-c1"]);
    expect((await call("GET", CAR("two-run-after-canary"))).body.status.conditions.map((c: { type: string }) => c.type)).toEqual([
      "Approved",
      "ApprovalAccepted",
    ]);

    // The wait ends (the clock advanced, the timer's alarm runs): prod starts, 2 at once, by `order`.
    await withClockAhead(61_000, async () => {
      await runDurableObjectAlarm(env.REPLICASETS.getByName("updaterun:/two-run"));
    });
    expect(await indexes("two")).toEqual({ "two-c1": "0", "two-p2": "0", "two-p3": "0" });
    run = await getRun("two-run");
    expect(stageOf(run, "canary")!.conditions!.find((c) => c.type === "Succeeded")).toMatchObject({ status: "True" });
    expect(stageOf(run, "canary")!.afterStageTaskStatus!.map((t) => t.conditions!.map((c) => c.type))).toEqual([
      ["WaitTimeElapsed"],
      ["ApprovalRequestCreated", "ApprovalRequestApproved"],
    ]);
    await reportAll("two", "two-run");
    expect(await indexes("two")).toEqual({ "two-c1": "0", "two-p1": "0", "two-p2": "0", "two-p3": "0" });
    await reportAll("two", "two-run");
    run = await getRun("two-run");
    expect(condition(run, "Succeeded")).toMatchObject({ status: "True", reason: "UpdateRunSucceeded" });
    expect(condition(run, "Progressing")).toMatchObject({ status: "False", reason: "UpdateRunSucceeded" });
    const events = (await call("GET", "/api/v1/namespaces/default/events")).body.items
      .filter((e: { involvedObject?: { name?: string } }) => e.involvedObject?.name === "two-run")
      .map((e: { reason: string }) => e.reason);
    for (const r of [
      "UpdateRunInitialized",
      "StageUpdatingStarted",
      "ApprovalRequestCreated",
      "ApprovalRequestApproved",
      "StageUpdatingSucceeded",
      "UpdateRunSucceeded",
    ])
      expect(events).toContain(r);

    // /metrics: KubeFleet's run status series, and the approval requests.
    const metrics = (await call("GET", "/metrics")).body as string;
    expect(metrics).toContain(
      'fleet_workload_update_run_status_last_timestamp_seconds{name="two-run",state="Run",condition="Succeeded",status="True",reason="UpdateRunSucceeded",failureType="none"}',
    );
    expect(metrics).toMatch(/flotilla_update_run_approval_requests\{approved="true"\} [1-9]/);

    // A change of the objects: a new snapshot, rolled out by no one until a run.
    expect((await call("PATCH", "/api/v1/namespaces/two-app/configmaps/cfg", { data: { v: "2" } }, merge)).status).toBe(200);
    await placementRun("two");
    expect(Object.values(await indexes("two"))).toEqual(["0", "0", "0", "0"]);
    await strategy("two-all", "two", "100%", []);
    await createRun("two-up", "two", "two-all", { state: "Run" });
    await runNow("two-up");
    await reportAll("two", "two-up");
    await reportAll("two", "two-up");
    expect(Object.values(await indexes("two"))).toEqual(["1", "1", "1", "1"]);
    expect(condition(await getRun("two-up"), "Succeeded")).toMatchObject({ status: "True" });
    expect((await worksOf("two"))["two-p1"].spec.workload.manifests.find((m: KubeObject) => m.kind === "ConfigMap").data).toEqual({ v: "2" });

    // Rollback: a run with the previous index puts every cluster back on it.
    await createRun("two-back", "two", "two-all", { state: "Run", resourceSnapshotIndex: "0" });
    await runNow("two-back");
    await reportAll("two", "two-back");
    await reportAll("two", "two-back");
    expect(Object.values(await indexes("two"))).toEqual(["0", "0", "0", "0"]);
    expect(condition(await getRun("two-back"), "Succeeded")).toMatchObject({ status: "True" });
    const works = await worksOf("two");
    for (const w of Object.values(works)) expect(w.spec.workload.manifests.find((m: KubeObject) => m.kind === "ConfigMap").data).toEqual({ v: "1" });
    expect(works["two-c1"].metadata.annotations["kubernetes-fleet.io/parent-resource-snapshot-name"]).toBe("two-0-snapshot");
  });

  it("stops mid-stage once its updating clusters finish, and resumes where it stopped", async () => {
    await fleetOf("stp");
    await externalPlacement("stp", "stp-app", "stp");
    await placementRun("stp");
    await strategy("stp-s", "stp", 1, []);
    await createRun("stp-run", "stp", "stp-s", { state: "Run" });
    await runNow("stp-run");
    await reportAll("stp", "stp-run");
    // Prod's first cluster (order 1) is updating.
    expect(Object.keys(await indexes("stp")).sort()).toEqual(["stp-c1", "stp-p2"]);
    expect((await setState("stp-run", "Stop")).status).toBe(200);
    await runNow("stp-run");
    let run = await getRun("stp-run");
    expect(condition(run, "Progressing")).toMatchObject({ status: "Unknown", reason: "UpdateRunStopping" });
    expect(stageOf(run, "prod")!.conditions!.find((c) => c.type === "Progressing")).toMatchObject({ status: "Unknown", reason: "StageUpdatingStopping" });
    await reportAll("stp", "stp-run");
    run = await getRun("stp-run");
    expect(condition(run, "Progressing")).toMatchObject({ status: "False", reason: "UpdateRunStopped" });
    expect(stageOf(run, "prod")!.conditions!.find((c) => c.type === "Progressing")).toMatchObject({ status: "False", reason: "StageUpdatingStopped" });
    expect(clusterCond(run, "prod", "stp-p2", "Succeeded")).toMatchObject({ status: "True" });
    expect(clusterCond(run, "prod", "stp-p3", "Started")).toBeUndefined();
    await runNow("stp-run");
    expect(Object.keys(await indexes("stp")).sort()).toEqual(["stp-c1", "stp-p2"]);
    // Resumed: the next cluster starts.
    expect((await setState("stp-run", "Run")).status).toBe(200);
    await runNow("stp-run");
    expect(Object.keys(await indexes("stp")).sort()).toEqual(["stp-c1", "stp-p2", "stp-p3"]);
    run = await getRun("stp-run");
    expect(clusterCond(run, "prod", "stp-p2", "Succeeded")).toMatchObject({ status: "True" });
    expect(condition(run, "Progressing")).toMatchObject({ status: "True" });
  });

  it("the placement's run a started cluster owes is in the run's commit: lost with its object, the outbox sweep renders the cluster's works", async () => {
    await fleetOf("stl");
    await externalPlacement("stl", "stl-app", "stl");
    await placementRun("stl");
    await strategy("stl-s", "stl", 1, []);
    await createRun("stl-run", "stl", "stl-s", { state: "Run" });
    // The placement's object cannot be reached while the canary starts (as when workerd is killed
    // between the run's commits and the placement's run).
    const refused = await withPlacementObjectsGone(async () => {
      await runNow("stl-run");
    });
    expect(refused).toBeGreaterThan(0);
    expect(await indexes("stl")).toEqual({});
    // After the restart: the run's object runs again, then the outbox sweep.
    await runNow("stl-run");
    expect(clusterCond(await getRun("stl-run"), "canary", "stl-c1", "Started")).toMatchObject({ status: "True" });
    await env.DB.prepare("UPDATE outbox SET due_at = 0").run();
    await sweepOutbox(env, Date.now());
    expect(Object.keys(await indexes("stl"))).toEqual(["stl-c1"]);
  });

  it("a before-stage approval holds the stage; kubectl's approval moves it at once (the approval's hook wakes the run)", async () => {
    await createCluster("bsa-a", { group: "bsa" });
    await externalPlacement("bsa", "bsa-app", "bsa");
    await placementRun("bsa");
    expect(
      (
        await call("POST", CSUS(), {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ClusterStagedUpdateStrategy",
          metadata: { name: "bsa-s" },
          spec: { stages: [{ name: "all", labelSelector: { matchLabels: { group: "bsa" } }, beforeStageTasks: [{ type: "Approval" }] }] },
        })
      ).status,
    ).toBe(201);
    await createRun("bsa-run", "bsa", "bsa-s", { state: "Run" });
    await runNow("bsa-run");
    const run = await getRun("bsa-run");
    expect(condition(run, "Progressing")).toMatchObject({
      status: "False",
      reason: "UpdateRunWaiting",
      message: "The updateRun is waiting for before-stage tasks in stage all to complete",
    });
    expect(Object.keys(await worksOf("bsa"))).toEqual([]);
    expect((await call("GET", CAR("bsa-run-before-all"))).body.metadata.labels["kubernetes-fleet.io/taskType"]).toBe("beforeStage");
    const auditID = await approve("bsa-run-before-all");
    // No explicit run: the approval's status change wakes the run's object (its alarm).
    const start = Date.now();
    for (;;) {
      if (Object.keys(await worksOf("bsa")).length === 1) break;
      expect(Date.now() - start).toBeLessThan(5000);
      await runDurableObjectAlarm(env.REPLICASETS.getByName("updaterun:/bsa-run"));
    }
    // The audit log records who approved (the status write's user and object).
    let row: { body: string } | null = null;
    for (let i = 0; i < 100 && !row; i++) {
      row = await env.DB.prepare("SELECT body FROM audit_events WHERE audit_id = ?").bind(auditID).first<{ body: string }>();
      if (!row) await new Promise((r) => setTimeout(r, 20));
    }
    const event = JSON.parse(row!.body);
    expect(event.user.username).toBeTruthy();
    expect(event.objectRef).toMatchObject({ resource: "clusterapprovalrequests", name: "bsa-run-before-all", subresource: "status" });

    // Deleting the run deletes its approval requests, then the run (its finalizer).
    expect((await call("GET", CSUR("bsa-run"))).body.metadata.finalizers).toEqual(["kubernetes-fleet.io/stagedupdaterun-finalizer"]);
    expect((await call("DELETE", CSUR("bsa-run"))).status).toBe(200);
    await runNow("bsa-run");
    expect((await call("GET", CAR("bsa-run-before-all"))).status).toBe(404);
    expect((await call("GET", CSUR("bsa-run"))).status).toBe(404);
  });

  it("never stalls when clusters join or leave mid-run (kubefleet#733)", async () => {
    await fleetOf("mem");
    await externalPlacement("mem", "mem-app", "mem");
    await placementRun("mem");
    await strategy("mem-s", "mem", 1, []);
    await createRun("mem-run", "mem", "mem-s", { state: "Run" });
    await runNow("mem-run");
    await reportAll("mem", "mem-run");
    // p2 updating; p3 leaves the placement (the hub no longer accepts it), and a new cluster joins.
    expect(
      (await call("PATCH", `/apis/cluster.open-cluster-management.io/v1/managedclusters/mem-p3`, { spec: { hubAcceptsClient: false } }, merge)).status,
    ).toBe(200);
    await createCluster("mem-p4", { group: "mem", stage: "prod", order: "0" });
    await placementRun("mem");
    await reportAll("mem", "mem-run");
    await reportAll("mem", "mem-run");
    const run = await getRun("mem-run");
    expect(condition(run, "Succeeded"), JSON.stringify(run.status.conditions)).toMatchObject({ status: "True" });
    expect(clusterCond(run, "prod", "mem-p3", "Succeeded")).toMatchObject({ status: "True", reason: "ClusterUpdatingSkipped" });
    expect(stageOf(run, "prod")!.clusters.map((c) => c.clusterName)).toEqual(["mem-p2", "mem-p3", "mem-p1"]);
    const idx = await indexes("mem");
    expect(Object.keys(idx).sort()).toEqual(["mem-c1", "mem-p1", "mem-p2"]);
    // The newcomer waits for a later run.
    expect((await call("GET", `${G}/v1/clusterresourcebindings/mem-mem-p4`)).body.spec.state).toBe("Scheduled");
  });

  it("a StagedUpdateRun rolls out a ResourcePlacement in its namespace", async () => {
    await createCluster("ns-a", { group: "nsrun" });
    await createNamespaces("team-r");
    expect(
      (await call("POST", "/api/v1/namespaces/team-r/configmaps", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { a: "1" } })).status,
    ).toBe(201);
    expect(
      (
        await call("POST", `${G}/v1/namespaces/team-r/resourceplacements`, {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ResourcePlacement",
          metadata: { name: "rp" },
          spec: {
            resourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "c" }],
            policy: { placementType: "PickFixed", clusterNames: ["ns-a"] },
            strategy: { type: "External" },
          },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await call("POST", SUS("team-r"), {
          apiVersion: "placement.kubernetes-fleet.io/v1beta1",
          kind: "StagedUpdateStrategy",
          metadata: { name: "s" },
          spec: { stages: [{ name: "one", labelSelector: {} }] },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await call("POST", SUR("team-r"), {
          apiVersion: "placement.kubernetes-fleet.io/v1beta1",
          kind: "StagedUpdateRun",
          metadata: { name: "r" },
          spec: { placementName: "rp", stagedRolloutStrategyName: "s", state: "Run" },
        })
      ).status,
    ).toBe(201);
    await env.REPLICASETS.getByName("updaterun:team-r/r").reconcile("updaterun:team-r", "r");
    const w = await call("GET", WORK("ns-a", "team-r.rp-work"));
    expect(w.status).toBe(200);
    expect(w.body.metadata.labels[INDEX]).toBe("0");
  });
});
