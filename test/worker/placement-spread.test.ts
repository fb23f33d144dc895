// A Placement's spreadPolicy over HTTP: the CRD defaults are stored, and the scheduler spreads the
// decisions over the topology label (OCM's spread-policy design, src/scheduling/spread.ts).
import { beforeAll, describe, expect, it } from "vitest";
import { call, condition, createNamespaces, MC, MCSET, decided } from "./helpers.ts";

const G = "cluster.open-cluster-management.io";
const PLACEMENTS = `/apis/${G}/v1beta1/namespaces/spread/placements`;

beforeAll(async () => {
  await createNamespaces("spread");
  expect((await call("POST", MCSET, { apiVersion: `${G}/v1beta2`, kind: "ManagedClusterSet", metadata: { name: "zones" } })).status).toBe(201);
  // Zone a holds three clusters, zone b one: names make a-* win every tie without spreading.
  for (const [name, zone] of [
    ["a-1", "a"],
    ["a-2", "a"],
    ["a-3", "a"],
    ["b-1", "b"],
  ]) {
    const r = await call("POST", MC, {
      apiVersion: `${G}/v1`,
      kind: "ManagedCluster",
      metadata: { name, labels: { [`${G}/clusterset`]: "zones", zone } },
      spec: { hubAcceptsClient: true },
    });
    expect(r.status).toBe(201);
  }
  expect(
    (
      await call("POST", `/apis/${G}/v1beta2/namespaces/spread/managedclustersetbindings`, {
        apiVersion: `${G}/v1beta2`,
        kind: "ManagedClusterSetBinding",
        metadata: { name: "zones" },
        spec: { clusterSet: "zones" },
      })
    ).status,
  ).toBe(201);
});

describe("spreadPolicy", () => {
  const placement = (name: string, numberOfClusters: number, term: Record<string, unknown>) => ({
    apiVersion: `${G}/v1beta1`,
    kind: "Placement",
    metadata: { name },
    spec: {
      numberOfClusters,
      tolerations: [{ key: `${G}/unreachable`, operator: "Exists" }],
      spreadPolicy: { spreadConstraints: [{ topologyKey: "zone", topologyKeyType: "Label", ...term }] },
    },
  });

  it("stores the CRD defaults (maxSkew 1, ScheduleAnyway) and spreads 2 picks over both zones", async () => {
    const r = await call("POST", PLACEMENTS, placement("two", 2, {}));
    expect(r.status).toBe(201);
    expect(r.body.spec.spreadPolicy.spreadConstraints).toEqual([
      { topologyKey: "zone", topologyKeyType: "Label", maxSkew: 1, whenUnsatisfiable: "ScheduleAnyway" },
    ]);
    expect(await decided("spread", "two")).toEqual(["a-1", "b-1"]);
  });

  it("DoNotSchedule with maxSkew 1 leaves a decision unscheduled rather than exceed the skew", async () => {
    expect((await call("POST", PLACEMENTS, placement("four", 4, { whenUnsatisfiable: "DoNotSchedule" }))).status).toBe(201);
    // Zone a at 2 against b at 1; Balance prefers a-2 and a-3, which "two" did not take.
    expect(await decided("spread", "four")).toEqual(["a-2", "a-3", "b-1"]);
    const p = (await call("GET", `${PLACEMENTS}/four`)).body;
    expect(condition(p, "PlacementSatisfied")).toMatchObject({
      status: "False",
      reason: "NotAllDecisionsScheduled",
      message: "1 cluster decisions unscheduled",
    });
  });

  it("refuses a maxSkew below 1 with 422 naming the field", async () => {
    const r = await call("POST", PLACEMENTS, placement("bad", 1, { maxSkew: 0 }));
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.body.details.causes)).toContain("spec.spreadPolicy.spreadConstraints[0].maxSkew");
  });
});
