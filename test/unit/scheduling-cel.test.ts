// Table tests of Placement `celSelector` (src/cel + src/scheduling), translated from OCM's own
// cases: ocm `pkg/placement/plugins/predicate/predicate_test.go` (the CEL rows),
// `pkg/placement/helpers/cel_test.go`, `test/integration/placement/predicate_test.go` (the CEL
// selector change), and sdk-go `pkg/cel/library/managedcluster_test.go` and `json_test.go`.
// Expected values are OCM's; the cluster objects are built as OCM's test builders build them.
import { describe, expect, it } from "vitest";
import { compileClusterExpression, estimateCost, matchCluster, PER_CALL_LIMIT, toCel } from "../../src/cel/index.ts";
import { celScoreLookup, managedClusterObject, schedule } from "../../src/scheduling/index.ts";
import type { AddOnPlacementScoreInput, ClusterSelector, ScheduleInput, SchedulingCluster } from "../../src/scheduling/index.ts";

const NOW = new Date("2026-01-01T12:00:00Z");

function cluster(name: string, extra: Partial<SchedulingCluster> = {}): SchedulingCluster {
  return { name, clusterSets: ["default"], ...extra };
}

type Scores = Record<string, Record<string, AddOnPlacementScoreInput>>;

function decide(selector: ClusterSelector[], clusters: SchedulingCluster[], scores: Scores = {}): ScheduleInput {
  return {
    placement: { name: "test", spec: { predicates: selector.map((requiredClusterSelector) => ({ requiredClusterSelector })) } },
    clusters,
    boundClusterSets: ["default"],
    addOnPlacementScores: scores,
  };
}

const score = (value: number): AddOnPlacementScoreInput => ({ scores: { "test-score": value } });

describe("OCM predicate_test.go: CEL rows", () => {
  const cases: { name: string; selectors: ClusterSelector[]; clusters: SchedulingCluster[]; scores?: Scores; expected: string[]; misconfigured?: RegExp }[] = [
    {
      name: "match with CEL expression on labels",
      selectors: [{ celSelector: { celExpressions: ['managedCluster.metadata.labels["region"] == "us-east-1"'] } }],
      clusters: [cluster("cluster1", { labels: { region: "us-east-1" } }), cluster("cluster2", { labels: { region: "us-west-1" } })],
      expected: ["cluster1"],
    },
    {
      name: "match with CEL expression on claims",
      selectors: [{ celSelector: { celExpressions: ['managedCluster.status.clusterClaims.exists(c, c.name == "cloud" && c.value == "Amazon")'] } }],
      clusters: [cluster("cluster1", { claims: { cloud: "Amazon" } }), cluster("cluster2", { claims: { cloud: "Google" } })],
      expected: ["cluster1"],
    },
    {
      name: "match with CEL score expression",
      selectors: [{ celSelector: { celExpressions: ["managedCluster.scores(\"test-addon\").filter(s, s.name == 'test-score').all(e, e.value > 80)"] } }],
      clusters: [cluster("cluster1"), cluster("cluster2")],
      scores: { cluster1: { "test-addon": score(90) }, cluster2: { "test-addon": score(70) } },
      expected: ["cluster1"],
    },
    {
      name: "match with multiple CEL expressions",
      selectors: [
        {
          celSelector: {
            celExpressions: [
              'managedCluster.metadata.labels["env"] == "prod"',
              "managedCluster.scores(\"test-addon\").filter(s, s.name == 'test-score').all(e, e.value > 80)",
            ],
          },
        },
      ],
      clusters: [cluster("cluster1", { labels: { env: "prod" } }), cluster("cluster2", { labels: { env: "prod" } })],
      scores: { cluster1: { "test-addon": score(90) }, cluster2: { "test-addon": score(70) } },
      expected: ["cluster1"],
    },
    {
      name: "match with CEL expression and other selectors",
      selectors: [
        {
          labelSelector: { matchLabels: { env: "prod" } },
          celSelector: { celExpressions: ['managedCluster.status.clusterClaims.exists(c, c.name == "cloud" && c.value == "Amazon")'] },
        },
      ],
      clusters: [
        cluster("cluster1", { labels: { env: "prod" }, claims: { cloud: "Amazon" } }),
        cluster("cluster2", { labels: { env: "prod" }, claims: { cloud: "Azure" } }),
      ],
      expected: ["cluster1"],
    },
    {
      name: "invalid CEL expression → no cluster, Misconfigured",
      selectors: [{ celSelector: { celExpressions: ["invalid.expression"] } }],
      clusters: [cluster("cluster1")],
      expected: [],
      misconfigured: /^Predicate:compilation failed: /,
    },
    {
      name: "empty CEL expressions → every cluster",
      selectors: [{ celSelector: { celExpressions: [] } }],
      clusters: [cluster("cluster1")],
      expected: ["cluster1"],
    },
    {
      name: "a missing AddOnPlacementScore is an evaluation error → no match (not Misconfigured)",
      selectors: [{ celSelector: { celExpressions: ['managedCluster.scores("absent").all(e, e.value > 0)'] } }],
      clusters: [cluster("cluster1")],
      expected: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = schedule(decide(c.selectors, c.clusters, c.scores), NOW);
      expect(r.decisions).toEqual(c.expected);
      const mis = r.conditions.find((x) => x.type === "PlacementMisconfigured");
      if (c.misconfigured) {
        expect(mis?.status).toBe("True");
        expect(mis?.message).toMatch(c.misconfigured);
      } else {
        expect(mis?.status).toBe("False");
      }
    });
  }
});

describe("OCM integration predicate_test.go: a CEL selector that changes", () => {
  it("first Misconfigured with 0 decisions, then the cluster whose demo score is above 80", () => {
    const clusters = [cluster("cluster1"), cluster("cluster2")];
    const scores: Scores = { cluster1: { demo: { scores: { demo: 70 } } }, cluster2: { demo: { scores: { demo: 90 } } } };
    const bad = schedule(
      {
        ...decide([{ celSelector: { celExpressions: ["xxxx.expression"] } }], clusters, scores),
        placement: {
          name: "p",
          spec: { numberOfClusters: 1, predicates: [{ requiredClusterSelector: { celSelector: { celExpressions: ["xxxx.expression"] } } }] },
        },
      },
      NOW,
    );
    expect(bad.decisions).toEqual([]);
    expect(bad.conditions.find((x) => x.type === "PlacementMisconfigured")?.status).toBe("True");
    const expr = "managedCluster.scores(\"demo\").filter(s, s.name == 'demo').all(e, e.value > 80)";
    const good = schedule(
      {
        ...decide([], clusters, scores),
        placement: { name: "p", spec: { numberOfClusters: 1, predicates: [{ requiredClusterSelector: { celSelector: { celExpressions: [expr] } } }] } },
      },
      NOW,
    );
    expect(good.decisions).toEqual(["cluster2"]);
  });
});

describe("OCM cel_test.go: CELSelector compile and validate", () => {
  const match = (exprs: string[], c: SchedulingCluster): boolean => matchCluster(exprs.map(compileClusterExpression), managedClusterObject(c), undefined);
  const cases: { name: string; expressions: string[]; cluster: SchedulingCluster; match: boolean }[] = [
    {
      name: "valid expression matches",
      expressions: ['managedCluster.metadata.labels["env"] == "prod"'],
      cluster: cluster("c", { labels: { env: "prod" } }),
      match: true,
    },
    {
      name: "valid expression no match",
      expressions: ['managedCluster.metadata.labels["env"] == "prod"'],
      cluster: cluster("c", { labels: { env: "dev" } }),
      match: false,
    },
    {
      name: "multiple expressions all match (semver library)",
      expressions: ['managedCluster.metadata.labels["env"] == "prod"', 'semver(managedCluster.metadata.labels["version"]).isLessThan(semver("1.31.0"))'],
      cluster: cluster("c", { labels: { env: "prod", version: "1.30.0" } }),
      match: true,
    },
    {
      name: "multiple expressions one fails",
      expressions: ['managedCluster.metadata.labels["env"] == "prod"', 'semver(managedCluster.metadata.labels["version"]).isGreaterThan(semver("1.31.0"))'],
      cluster: cluster("c", { labels: { env: "prod", version: "1.30.0" } }),
      match: false,
    },
    {
      name: "a missing label is an evaluation error → no match",
      expressions: ['managedCluster.metadata.labels["env"] == "prod"'],
      cluster: cluster("c"),
      match: false,
    },
    { name: "empty expressions", expressions: [], cluster: cluster("c"), match: true },
    { name: "a non-bool result → no match", expressions: ['managedCluster.metadata.name + "x"'], cluster: cluster("c"), match: false },
  ];
  for (const c of cases) it(c.name, () => expect(match(c.expressions, c.cluster)).toBe(c.match));

  it("invalid expression: a compile error", () => {
    expect(() => compileClusterExpression("invalid.expression")).toThrow(/^compilation failed: /);
  });

  it("running out of cost budget → no match (an expression past the per-call limit is not evaluated)", () => {
    const labels: Record<string, string> = {};
    for (let i = 0; i < 1000; i++) labels[`k${i}`] = "v";
    const c = cluster("c", { labels });
    // 1000 × 1000 × 1000 iterations: far past the limit, so it must be refused, not run.
    const heavy = "managedCluster.metadata.labels.all(a, managedCluster.metadata.labels.all(b, managedCluster.metadata.labels.all(x, a != '' || b != x)))";
    const compiled = compileClusterExpression(heavy);
    expect(estimateCost(compiled.program.ast, { collection: 1000, string: 4 })).toBeGreaterThan(PER_CALL_LIMIT);
    expect(matchCluster([compiled], managedClusterObject(c), undefined)).toBe(false);
    // The same shape over a small map stays within budget and is evaluated.
    expect(matchCluster([compiled], managedClusterObject(cluster("d", { labels: { a: "v" } })), undefined)).toBe(true);
  });
});

describe("sdk-go managedcluster_test.go and json_test.go", () => {
  const scores = celScoreLookup({ test: { "test-score": { scores: { cpu: 3, memory: 4 } } } });
  const evalOn = (expr: string, c: SchedulingCluster): boolean => matchCluster([compileClusterExpression(expr)], managedClusterObject(c), scores.lookup);
  const version = String.raw`'^1\\.(14|15)\\.\\d+$'`;
  const cases: { name: string; expr: string; cluster: SchedulingCluster; value: boolean }[] = [
    {
      name: "match with label",
      expr: `managedCluster.metadata.labels["version"].matches(${version})`,
      cluster: cluster("test", { labels: { version: "1.14.3" } }),
      value: true,
    },
    {
      name: "not match with label",
      expr: `managedCluster.metadata.labels["version"].matches(${version})`,
      cluster: cluster("test", { labels: { version: "1.16.3" } }),
      value: false,
    },
    {
      name: "match with claim",
      expr: `managedCluster.status.clusterClaims.exists(c, c.name == "version" && c.value.matches(${version}))`,
      cluster: cluster("test", { claims: { version: "1.14.3" } }),
      value: true,
    },
    {
      name: "not match with claim",
      expr: `managedCluster.status.clusterClaims.exists(c, c.name == "version" && c.value.matches(${version}))`,
      cluster: cluster("test", { claims: { version: "1.16.3" } }),
      value: false,
    },
    {
      name: "match with score value",
      expr: "managedCluster.scores(\"test-score\").filter(s, s.name == 'cpu').all(e, e.value == 3)",
      cluster: cluster("test"),
      value: true,
    },
    {
      name: "not match with score value",
      expr: "managedCluster.scores(\"test-score\").filter(s, s.name == 'cpu').all(e, e.value > 3)",
      cluster: cluster("test"),
      value: false,
    },
    {
      name: "invalid score name (runtime error)",
      expr: "managedCluster.scores(\"invalid-score\").filter(s, s.name == 'cpu').size() == 0",
      cluster: cluster("test"),
      value: false,
    },
    {
      name: "match with json",
      expr: 'managedCluster.status.clusterClaims.exists(c, c.name == "sku.gpu.kubernetes-fleet.io" && c.value.parseJSON().H100.exists(e, e.Standard_NC96ads_H100_v4 == 2))',
      cluster: cluster("test", {
        claims: {
          "sku.gpu.kubernetes-fleet.io":
            '{"H100":[{"Standard_NC48ads_H100_v4":10},{"Standard_NC96ads_H100_v4":2}],"A100":[{"Standard_NC48ads_A100_v4":50},{"Standard_NC96ads_A100_v4":20}]}',
        },
      }),
      value: true,
    },
    { name: "parse simple object", expr: `'{"key": "value"}'.parseJSON().key == "value"`, cluster: cluster("test"), value: true },
    { name: "parse nested object", expr: `'{"nested": {"key": "value"}}'.parseJSON().nested.key == "value"`, cluster: cluster("test"), value: true },
    { name: "parse array", expr: "'[1, 2, 3]'.parseJSON()[0] == 1 && '[1, 2, 3]'.parseJSON()[1] == 2", cluster: cluster("test"), value: true },
    {
      name: "parse array of objects",
      expr: `'[{"id": 1}, {"id": 2}]'.parseJSON()[0].id == 1 && '[{"id": 1}, {"id": 2}]'.parseJSON()[1].id == 2`,
      cluster: cluster("test"),
      value: true,
    },
    { name: "invalid json syntax (runtime error)", expr: "'{invalid json}'.parseJSON() == {}", cluster: cluster("test"), value: false },
  ];
  for (const c of cases) it(c.name, () => expect(evalOn(c.expr, c.cluster)).toBe(c.value));

  it("undeclared functions and non-string parseJSON do not compile", () => {
    expect(() => compileClusterExpression(`managedCluster.metadata.labels["version"].matchessssss(${version})`)).toThrow(/compilation failed/);
    expect(() => compileClusterExpression("123.parseJSON()")).toThrow(/compilation failed/);
  });
});

describe("Flotilla's additions", () => {
  it("the Kubernetes version of the cluster is status.version.kubernetes, compared with semver", () => {
    const expr = 'semver(managedCluster.status.version.kubernetes, true).isGreaterThan(semver("1.29.0"))';
    const r = schedule(
      decide(
        [{ celSelector: { celExpressions: [expr] } }],
        [cluster("old", { kubernetesVersion: "v1.28.3" }), cluster("new", { kubernetesVersion: "v1.30.1" })],
      ),
      NOW,
    );
    expect(r.decisions).toEqual(["new"]);
  });

  it("quantities compare as Kubernetes quantities", () => {
    const expr = 'quantity(managedCluster.status.allocatable["memory"]).isGreaterThan(quantity("1Gi"))';
    const r = schedule(
      decide(
        [{ celSelector: { celExpressions: [expr] } }],
        [cluster("small", { allocatable: { memory: "1000Mi" } }), cluster("big", { allocatable: { memory: "2Gi" } })],
      ),
      NOW,
    );
    expect(r.decisions).toEqual(["big"]);
  });

  it("a regular expression with nested quantifiers is refused at compile time", () => {
    expect(() => compileClusterExpression("managedCluster.metadata.name.matches('^(a+)+$')")).toThrow(/nests quantifiers/);
  });

  it("JSON integers are CEL ints", () => {
    expect(toCel({ a: [1, 2.5] })).toEqual({ a: [1n, 2.5] });
  });
});
