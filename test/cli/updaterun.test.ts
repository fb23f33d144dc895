/**
 * `flotilla approve` against a real hub (`wrangler dev`): an External ClusterResourcePlacement on
 * one cluster, a ClusterStagedUpdateRun whose only stage has a before-stage Approval; the run waits
 * on its approval request until `flotilla approve RUN` approves it (the condition names who), then
 * binds the cluster. The failures: no such run, no pending request for the stage named.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { createAvailableCluster, waitFor } from "../e2e/support.ts";
import { flotilla } from "./support.ts";

const G = "/apis/placement.kubernetes-fleet.io/v1";

describe("flotilla approve (real hub)", () => {
  let hub: Hub;

  beforeAll(async () => {
    hub = await startHub();
    await createAvailableCluster(hub, "a1", { env: "prod" });
    await createNamespaces(hub, "shop");
    const crp = await admin(hub, "POST", `${G}/clusterresourceplacements`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "shop" },
      spec: { resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "shop" }], strategy: { type: "External" } },
    });
    expect(crp.status).toBe(201);
    const strategy = await admin(hub, "POST", `${G}/clusterstagedupdatestrategies`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterStagedUpdateStrategy",
      metadata: { name: "gated" },
      spec: { stages: [{ name: "prod", labelSelector: { matchLabels: { env: "prod" } }, beforeStageTasks: [{ type: "Approval" }] }] },
    });
    expect(strategy.status).toBe(201);
    await waitFor("the binding", async () => (await admin(hub, "GET", `${G}/clusterresourcebindings/shop-a1`)).status === 200);
    const run = await admin(hub, "POST", `${G}/clusterstagedupdateruns`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterStagedUpdateRun",
      metadata: { name: "r1" },
      spec: { placementName: "shop", stagedRolloutStrategyName: "gated", state: "Run" },
    });
    expect(run.status).toBe(201);
    await waitFor("the approval request", async () => (await admin(hub, "GET", `${G}/clusterapprovalrequests/r1-before-prod`)).status === 200, 20_000);
  }, 120_000);

  afterAll(async () => {
    await hub?.stop();
  });

  it("refuses a run that does not exist and a stage with no pending request", async () => {
    const missing = await flotilla(["approve", "nope"], { hub });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("clusterstagedupdateruns");
    const stage = await flotilla(["approve", "r1", "--stage", "other"], { hub });
    expect(stage.code).toBe(1);
    expect(stage.stderr).toContain("ClusterStagedUpdateRun r1 has no pending approval request for stage other");
    expect(stage.stderr).toContain("prod");
  });

  it("approves the run's pending request; the run binds the stage's cluster", async () => {
    expect((await admin(hub, "GET", `${G}/clusterresourcebindings/shop-a1`)).body.spec.state).toBe("Scheduled");
    const r = await flotilla(["approve", "r1"], { hub });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("approvalrequest r1-before-prod approved (run r1, stage prod)\n");
    const request = (await admin(hub, "GET", `${G}/clusterapprovalrequests/r1-before-prod`)).body;
    const approved = request.status.conditions.find((c: { type: string }) => c.type === "Approved");
    expect(approved).toMatchObject({ status: "True", reason: "ApprovedWithFlotilla", observedGeneration: 1 });
    expect(approved.message).toMatch(/^approved by .+ with flotilla approve$/);
    await waitFor("the cluster bound", async () => (await admin(hub, "GET", `${G}/clusterresourcebindings/shop-a1`)).body.spec.state === "Bound", 10_000);
    const again = await flotilla(["approve", "r1"], { hub });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("has no pending approval request");
  });
});
