// Placement `celSelector` inside workerd: the scheduler compiles and evaluates OCM's cluster CEL
// library (src/cel, @marcbachmann/cel-js, no eval) on write, reports an expression that does not
// compile as Misconfigured, and runs a placement again when an AddOnPlacementScore its
// `managedCluster.scores(...)` reads changes.
import { beforeAll, describe, expect, it } from "vitest";
import { call, condition, createNamespaces, MC, MCSET, merge, decided } from "./helpers.ts";

const G = "/apis/cluster.open-cluster-management.io";
const PLACEMENTS = `${G}/v1beta1/namespaces/cel/placements`;
const scoreOf = (cluster: string) => `${G}/v1alpha1/namespaces/${cluster}/addonplacementscores`;

function placement(name: string, celExpressions: string[]) {
  return {
    apiVersion: "cluster.open-cluster-management.io/v1beta1",
    kind: "Placement",
    metadata: { name },
    spec: { predicates: [{ requiredClusterSelector: { celSelector: { celExpressions } } }] },
  };
}

beforeAll(async () => {
  await createNamespaces("cel");
  expect(
    (await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "celset" } })).status,
  ).toBe(201);
  const cs = "cluster.open-cluster-management.io/clusterset";
  for (const [name, version, region] of [
    ["k1", "v1.29.4", "us-east-1"],
    ["k2", "v1.31.0", "eu-west-1"],
  ] as const) {
    expect(
      (
        await call("POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name, labels: { [cs]: "celset" } },
          spec: { hubAcceptsClient: true },
        })
      ).status,
    ).toBe(201);
    const available = { type: "ManagedClusterConditionAvailable", status: "True", reason: "Test", message: "test", lastTransitionTime: "2026-01-01T00:00:00Z" };
    const status = {
      status: { conditions: [available], version: { kubernetes: version }, clusterClaims: [{ name: "region.open-cluster-management.io", value: region }] },
    };
    expect((await call("PATCH", `${MC}/${name}/status`, status, merge)).status).toBe(200);
  }
  const binding = {
    apiVersion: "cluster.open-cluster-management.io/v1beta2",
    kind: "ManagedClusterSetBinding",
    metadata: { name: "celset" },
    spec: { clusterSet: "celset" },
  };
  expect((await call("POST", `${G}/v1beta2/namespaces/cel/managedclustersetbindings`, binding)).status).toBe(201);
});

describe("celSelector in the scheduler", () => {
  it("selects by claims and by the Kubernetes version", async () => {
    expect(
      (
        await call(
          "POST",
          PLACEMENTS,
          placement("eu", ['managedCluster.status.clusterClaims.exists(c, c.name == "region.open-cluster-management.io" && c.value.startsWith("eu-"))']),
        )
      ).status,
    ).toBe(201);
    expect(await decided("cel", "eu")).toEqual(["k2"]);
    expect(
      (await call("POST", PLACEMENTS, placement("old", ['semver(managedCluster.status.version.kubernetes, true).isLessThan(semver("1.30.0"))']))).status,
    ).toBe(201);
    expect(await decided("cel", "old")).toEqual(["k1"]);
  });

  it("an expression that does not compile: accepted, then Misconfigured with OCM's message", async () => {
    expect((await call("POST", PLACEMENTS, placement("broken", ["invalid.expression"]))).status).toBe(201);
    const p = (await call("GET", `${PLACEMENTS}/broken`)).body;
    expect(condition(p, "PlacementMisconfigured")).toMatchObject({ status: "True", reason: "Misconfigured" });
    expect(condition(p, "PlacementMisconfigured")?.message).toMatch(/^Predicate:compilation failed: ERROR: <input>:1:1: undeclared reference to 'invalid'/);
    expect(await decided("cel", "broken")).toEqual([]);
  });

  it("managedCluster.scores() reads AddOnPlacementScores, and a score write runs the placement again", async () => {
    for (const c of ["k1", "k2"]) {
      expect(
        (await call("POST", scoreOf(c), { apiVersion: "cluster.open-cluster-management.io/v1alpha1", kind: "AddOnPlacementScore", metadata: { name: "gpu" } }))
          .status,
      ).toBe(201);
    }
    await call("PATCH", `${scoreOf("k1")}/gpu/status`, { status: { scores: [{ name: "free", value: 90 }] } }, merge);
    await call("PATCH", `${scoreOf("k2")}/gpu/status`, { status: { scores: [{ name: "free", value: 10 }] } }, merge);
    expect((await call("POST", PLACEMENTS, placement("gpu", ["managedCluster.scores(\"gpu\").filter(s, s.name == 'free').all(e, e.value > 50)"]))).status).toBe(
      201,
    );
    expect(await decided("cel", "gpu")).toEqual(["k1"]);
    await call("PATCH", `${scoreOf("k2")}/gpu/status`, { status: { scores: [{ name: "free", value: 80 }] } }, merge);
    expect(await decided("cel", "gpu")).toEqual(["k1", "k2"]);
  });
});
