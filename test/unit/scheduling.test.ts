// Table-driven tests of the pure Placement scheduler (src/scheduling) against OCM's
// semantics. Every expected value is worked out by hand from OCM's formulas (see the
// comment on each row), never captured from this implementation's output.
import { describe, expect, it } from "vitest";
import { schedule } from "../../src/scheduling/index.ts";
import type { PlacementSpec, PrioritizerConfig, ScheduleInput, ScheduleResult, SchedulingCluster, Taint, Toleration } from "../../src/scheduling/index.ts";

const NOW = new Date("2026-01-01T12:00:00Z");
const NOW_MS = NOW.getTime();
const iso = (offsetSeconds: number): string => new Date(NOW_MS + offsetSeconds * 1000).toISOString().replace(".000Z", "Z");

function cluster(name: string, extra: Partial<SchedulingCluster> = {}): SchedulingCluster {
  return { name, clusterSets: ["default"], ...extra };
}

function input(spec: PlacementSpec, clusters: SchedulingCluster[], extra: Partial<ScheduleInput> = {}): ScheduleInput {
  return { placement: { name: "p", spec }, clusters, boundClusterSets: ["default"], ...extra };
}

const names = (...n: string[]): SchedulingCluster[] => n.map((x) => cluster(x));
/** Exact mode with only the given prioritizers (so expected totals are easy to compute). */
const exact = (...configurations: PrioritizerConfig[]): PlacementSpec["prioritizerPolicy"] => ({
  mode: "Exact",
  configurations,
});

const satisfied = (r: ScheduleResult) => r.conditions[1];
const misconfigured = (r: ScheduleResult) => r.conditions[0];

describe("cluster sets and candidates", () => {
  const cases: { name: string; in: ScheduleInput; decisions: string[]; reason: string; message: string }[] = [
    {
      name: "no valid binding → NoManagedClusterSetBindings",
      in: input({}, names("a"), { boundClusterSets: [] }),
      decisions: [],
      reason: "NoManagedClusterSetBindings",
      message: "No valid ManagedClusterSetBindings found in placement namespace",
    },
    {
      name: "spec.clusterSets not bound → NoIntersection (spec order in the message)",
      in: input({ clusterSets: ["y", "x"] }, names("a")),
      decisions: [],
      reason: "NoIntersection",
      message: "None of ManagedClusterSets [y,x] is bound to placement namespace",
    },
    {
      name: "bound sets without members → AllManagedClusterSetsEmpty (sorted set names)",
      in: input({}, [cluster("a", { clusterSets: ["other"] })], { boundClusterSets: ["zeta", "alpha"] }),
      decisions: [],
      reason: "AllManagedClusterSetsEmpty",
      message: "All ManagedClusterSets [alpha,zeta] have no member ManagedCluster",
    },
    {
      name: "spec.clusterSets narrows the bound sets",
      in: input({ clusterSets: ["b"] }, [cluster("a1", { clusterSets: ["a"] }), cluster("b1", { clusterSets: ["b"] })], { boundClusterSets: ["a", "b"] }),
      decisions: ["b1"],
      reason: "AllDecisionsScheduled",
      message: "All cluster decisions scheduled",
    },
    {
      name: "empty spec.clusterSets means every bound set; a cluster in two sets counts once",
      in: input({}, [cluster("a1", { clusterSets: ["a", "b"] }), cluster("b1", { clusterSets: ["b"] }), cluster("c1", { clusterSets: ["c"] })], {
        boundClusterSets: ["a", "b"],
      }),
      decisions: ["a1", "b1"],
      reason: "AllDecisionsScheduled",
      message: "All cluster decisions scheduled",
    },
    {
      name: "deleting clusters are never candidates, even if decided",
      in: input({}, [cluster("a", { deleting: true }), cluster("b")], { existingDecisions: ["a"] }),
      decisions: ["b"],
      reason: "AllDecisionsScheduled",
      message: "All cluster decisions scheduled",
    },
    {
      name: "only deleting clusters → AllManagedClusterSetsEmpty",
      in: input({}, [cluster("a", { deleting: true })]),
      decisions: [],
      reason: "AllManagedClusterSetsEmpty",
      message: "All ManagedClusterSets [default] have no member ManagedCluster",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = schedule(c.in, NOW);
      expect(r.decisions).toEqual(c.decisions);
      expect(satisfied(r)).toEqual({
        type: "PlacementSatisfied",
        status: c.reason === "AllDecisionsScheduled" ? "True" : "False",
        reason: c.reason,
        message: c.message,
      });
      expect(misconfigured(r)).toEqual({
        type: "PlacementMisconfigured",
        status: "False",
        reason: "Succeedconfigured",
        message: "Placement configurations check pass",
      });
    });
  }
});

describe("Predicate filter", () => {
  const fleet = [
    cluster("a", { labels: { env: "prod", tier: "gold" }, claims: { "region.k8s.io": "us-east-1" } }),
    cluster("b", { labels: { env: "prod" }, claims: { "region.k8s.io": "eu-west-1" } }),
    cluster("c", { labels: { env: "dev" } }),
    cluster("d"),
  ];
  const cases: { name: string; spec: PlacementSpec; decisions: string[] }[] = [
    { name: "no predicates → all", spec: {}, decisions: ["a", "b", "c", "d"] },
    { name: "empty requiredClusterSelector → all", spec: { predicates: [{}] }, decisions: ["a", "b", "c", "d"] },
    { name: "matchLabels", spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { env: "prod" } } } }] }, decisions: ["a", "b"] },
    {
      name: "predicates are ORed",
      spec: {
        predicates: [
          { requiredClusterSelector: { labelSelector: { matchLabels: { env: "dev" } } } },
          { requiredClusterSelector: { labelSelector: { matchLabels: { tier: "gold" } } } },
        ],
      },
      decisions: ["a", "c"],
    },
    {
      name: "label and claim selectors inside one predicate are ANDed",
      spec: {
        predicates: [
          {
            requiredClusterSelector: {
              labelSelector: { matchLabels: { env: "prod" } },
              claimSelector: { matchExpressions: [{ key: "region.k8s.io", operator: "In", values: ["eu-west-1"] }] },
            },
          },
        ],
      },
      decisions: ["b"],
    },
    {
      name: "claim selector alone (Exists)",
      spec: { predicates: [{ requiredClusterSelector: { claimSelector: { matchExpressions: [{ key: "region.k8s.io", operator: "Exists" }] } } }] },
      decisions: ["a", "b"],
    },
    {
      name: "NotIn matches clusters without the label",
      spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchExpressions: [{ key: "env", operator: "NotIn", values: ["prod"] }] } } }] },
      decisions: ["c", "d"],
    },
    {
      name: "DoesNotExist",
      spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchExpressions: [{ key: "env", operator: "DoesNotExist" }] } } }] },
      decisions: ["d"],
    },
    {
      name: "labels are not claims",
      spec: { predicates: [{ requiredClusterSelector: { claimSelector: { matchExpressions: [{ key: "env", operator: "Exists" }] } } }] },
      decisions: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(schedule(input(c.spec, fleet), NOW).decisions).toEqual(c.decisions);
    });
  }

  it("nothing matches → NoManagedClusterMatched", () => {
    const r = schedule(input({ predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { env: "qa" } } } }] }, fleet), NOW);
    expect(satisfied(r)).toEqual({
      type: "PlacementSatisfied",
      status: "False",
      reason: "NoManagedClusterMatched",
      message: "No ManagedCluster matches any of the cluster predicate",
    });
    expect(r.numberOfSelectedClusters).toBe(0);
    // One empty PlacementDecision still exists.
    expect(r.placementDecisions).toEqual([
      {
        name: "p-decision-1",
        labels: {
          "cluster.open-cluster-management.io/placement": "p",
          "cluster.open-cluster-management.io/decision-group-name": "",
          "cluster.open-cluster-management.io/decision-group-index": "0",
        },
        decisions: [],
      },
    ]);
    expect(r.decisionGroupStatus).toEqual([{ decisionGroupIndex: 0, decisionGroupName: "", decisions: ["p-decision-1"], clusterCount: 0 }]);
  });

  it("an invalid label selector is Misconfigured (plugin Predicate) and selects nothing", () => {
    const r = schedule(
      input({ predicates: [{ requiredClusterSelector: { labelSelector: { matchExpressions: [{ key: "env", operator: "In", values: [] }] } } }] }, fleet),
      NOW,
    );
    expect(r.status.code).toBe("Misconfigured");
    expect(r.status.plugin).toBe("Predicate");
    expect(misconfigured(r).status).toBe("True");
    expect(misconfigured(r).reason).toBe("Misconfigured");
    expect(misconfigured(r).message).toMatch(/^Predicate:.*matchExpressions\[0\]\.values/);
    expect(r.decisions).toEqual([]);
    // OCM's condition switch only special-cases Error, so a misconfigured schedule reads "no match".
    expect(satisfied(r).reason).toBe("NoManagedClusterMatched");
  });

  it("filters are skipped (so not validated) when there is no candidate, as in OCM", () => {
    const r = schedule(
      input({ predicates: [{ requiredClusterSelector: { celSelector: { celExpressions: ["true"] } } }], tolerations: [{ operator: "Equal" }] }, fleet, {
        boundClusterSets: [],
      }),
      NOW,
    );
    expect(misconfigured(r).status).toBe("False");
    expect(satisfied(r).reason).toBe("NoManagedClusterSetBindings");
  });
});

describe("TaintToleration filter", () => {
  const taint = (key: string, effect: Taint["effect"], extra: Partial<Taint> = {}): Taint => ({ key, effect, timeAdded: iso(-60), ...extra });
  const fleet = (t: Taint): SchedulingCluster[] => [cluster("tainted", { taints: [t] }), cluster("clean")];

  const cases: { name: string; taint: Taint; tolerations?: Toleration[]; decided?: boolean; selected: boolean }[] = [
    { name: "NoSelect, no toleration → dropped", taint: taint("k", "NoSelect"), selected: false },
    { name: "NoSelect drops even a decided cluster", taint: taint("k", "NoSelect"), decided: true, selected: false },
    {
      name: "NoSelect, Equal key+value → kept",
      taint: taint("k", "NoSelect", { value: "v" }),
      tolerations: [{ key: "k", operator: "Equal", value: "v" }],
      selected: true,
    },
    { name: "operator defaults to Equal", taint: taint("k", "NoSelect", { value: "v" }), tolerations: [{ key: "k", value: "v" }], selected: true },
    {
      name: "Equal with another value → dropped",
      taint: taint("k", "NoSelect", { value: "v" }),
      tolerations: [{ key: "k", operator: "Equal", value: "w" }],
      selected: false,
    },
    {
      name: "Equal with empty value does not match a non-empty taint value",
      taint: taint("k", "NoSelect", { value: "v" }),
      tolerations: [{ key: "k", operator: "Equal" }],
      selected: false,
    },
    {
      name: "Equal with empty value matches an empty taint value",
      taint: taint("k", "NoSelect"),
      tolerations: [{ key: "k", operator: "Equal" }],
      selected: true,
    },
    { name: "Exists matches any value", taint: taint("k", "NoSelect", { value: "v" }), tolerations: [{ key: "k", operator: "Exists" }], selected: true },
    { name: "Exists with empty key matches every taint", taint: taint("k", "NoSelect", { value: "v" }), tolerations: [{ operator: "Exists" }], selected: true },
    { name: "other key → dropped", taint: taint("k", "NoSelect"), tolerations: [{ key: "j", operator: "Exists" }], selected: false },
    { name: "matching effect", taint: taint("k", "NoSelect"), tolerations: [{ key: "k", operator: "Exists", effect: "NoSelect" }], selected: true },
    {
      name: "other effect → dropped",
      taint: taint("k", "NoSelect"),
      tolerations: [{ key: "k", operator: "Exists", effect: "NoSelectIfNew" }],
      selected: false,
    },
    { name: "NoSelectIfNew drops a new cluster", taint: taint("k", "NoSelectIfNew"), selected: false },
    { name: "NoSelectIfNew keeps a decided cluster", taint: taint("k", "NoSelectIfNew"), decided: true, selected: true },
    { name: "NoSelectIfNew tolerated for a new cluster", taint: taint("k", "NoSelectIfNew"), tolerations: [{ key: "k", operator: "Exists" }], selected: true },
    { name: "PreferNoSelect always passes", taint: taint("k", "PreferNoSelect"), selected: true },
    // timeAdded = now − 60 s.
    {
      name: "tolerationSeconds 300: tolerated until timeAdded+300 s",
      taint: taint("k", "NoSelect"),
      tolerations: [{ key: "k", operator: "Exists", tolerationSeconds: 300 }],
      selected: true,
    },
    {
      name: "tolerationSeconds 30: expired 30 s ago",
      taint: taint("k", "NoSelect"),
      tolerations: [{ key: "k", operator: "Exists", tolerationSeconds: 30 }],
      selected: false,
    },
    {
      name: "tolerationSeconds 60: expires exactly now → not tolerated (now < expiry is strict)",
      taint: taint("k", "NoSelect"),
      tolerations: [{ key: "k", operator: "Exists", tolerationSeconds: 60 }],
      selected: false,
    },
    {
      name: "tolerationSeconds applies to NoSelectIfNew too (code, not API docs)",
      taint: taint("k", "NoSelectIfNew"),
      tolerations: [{ key: "k", operator: "Exists", tolerationSeconds: 30 }],
      selected: false,
    },
    {
      name: "an expired toleration falls through to the next one",
      taint: taint("k", "NoSelect"),
      tolerations: [
        { key: "k", operator: "Exists", tolerationSeconds: 30 },
        { key: "k", operator: "Exists" },
      ],
      selected: true,
    },
    {
      name: "missing timeAdded is Go's zero time: any tolerationSeconds has expired",
      taint: { key: "k", effect: "NoSelect" },
      tolerations: [{ key: "k", operator: "Exists", tolerationSeconds: 10 ** 9 }],
      selected: false,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = schedule(input({ tolerations: c.tolerations }, fleet(c.taint), { existingDecisions: c.decided ? ["tainted"] : [] }), NOW);
      expect(r.decisions.includes("tainted")).toBe(c.selected);
      expect(r.decisions.includes("clean")).toBe(true);
    });
  }

  it("a cluster must tolerate every one of its taints", () => {
    const c = cluster("a", { taints: [taint("k1", "NoSelect"), taint("k2", "NoSelect")] });
    expect(schedule(input({ tolerations: [{ key: "k1", operator: "Exists" }] }, [c]), NOW).decisions).toEqual([]);
    expect(
      schedule(
        input(
          {
            tolerations: [
              { key: "k1", operator: "Exists" },
              { key: "k2", operator: "Exists" },
            ],
          },
          [c],
        ),
        NOW,
      ).decisions,
    ).toEqual(["a"]);
  });

  const invalid: { name: string; tolerations: Toleration[]; message: string }[] = [
    {
      name: "empty key with Equal",
      tolerations: [{ operator: "Equal", value: "x" }],
      message: "TaintToleration:If the key is empty, operator must be Exists.",
    },
    { name: "empty key, operator defaulted", tolerations: [{}], message: "TaintToleration:If the key is empty, operator must be Exists." },
    {
      name: "Exists with a value",
      tolerations: [{ key: "k", operator: "Exists", value: "v" }],
      message: "TaintToleration:If the operator is Exists, the value should be empty.",
    },
    {
      name: "first invalid toleration wins",
      tolerations: [{ key: "k", operator: "Exists", value: "v" }, { operator: "Equal" }],
      message: "TaintToleration:If the operator is Exists, the value should be empty.",
    },
  ];
  for (const c of invalid) {
    it(`invalid tolerations → Misconfigured: ${c.name}`, () => {
      const r = schedule(input({ tolerations: c.tolerations }, names("a")), NOW);
      expect(misconfigured(r)).toEqual({ type: "PlacementMisconfigured", status: "True", reason: "Misconfigured", message: c.message });
      expect(r.decisions).toEqual([]);
      expect(r.requeueAt).toBeUndefined();
    });
  }
});

describe("requeue at the next toleration expiry", () => {
  const t = (key: string, effect: Taint["effect"], addedSecondsAgo: number): Taint => ({ key, effect, timeAdded: iso(-addedSecondsAgo) });
  const cases: { name: string; clusters: SchedulingCluster[]; tolerations: Toleration[]; decided: string[]; requeueAt?: number }[] = [
    {
      name: "decided cluster tolerated for 300 s from timeAdded (60 s ago) → now+240 s",
      clusters: [cluster("a", { taints: [t("k", "NoSelect", 60)] })],
      tolerations: [{ key: "k", operator: "Exists", tolerationSeconds: 300 }],
      decided: ["a"],
      requeueAt: NOW_MS + 240_000,
    },
    {
      name: "undecided clusters do not count",
      clusters: [cluster("a", { taints: [t("k", "NoSelect", 60)] })],
      tolerations: [{ key: "k", operator: "Exists", tolerationSeconds: 300 }],
      decided: [],
    },
    {
      name: "earliest expiry over decided clusters and their taints",
      clusters: [
        cluster("a", { taints: [t("k", "NoSelect", 60)] }), // 300 − 60 = 240 s
        cluster("b", { taints: [t("k", "NoSelect", 200), t("j", "NoSelect", 0)] }), // min(100 s, forever)
        cluster("c", { taints: [t("k", "NoSelect", 290)] }), // 10 s, but not decided
      ],
      tolerations: [
        { key: "k", operator: "Exists", tolerationSeconds: 300 },
        { key: "j", operator: "Exists" },
      ],
      decided: ["a", "b"],
      requeueAt: NOW_MS + 100_000,
    },
    {
      name: "the first tolerating toleration decides: a bounded one before an unbounded one requeues",
      clusters: [cluster("a", { taints: [t("k", "NoSelect", 60)] })],
      tolerations: [
        { key: "k", operator: "Exists", tolerationSeconds: 300 },
        { key: "k", operator: "Exists" },
      ],
      decided: ["a"],
      requeueAt: NOW_MS + 240_000,
    },
    {
      name: "an unbounded toleration first means no requeue",
      clusters: [cluster("a", { taints: [t("k", "NoSelect", 60)] })],
      tolerations: [
        { key: "k", operator: "Exists" },
        { key: "k", operator: "Exists", tolerationSeconds: 300 },
      ],
      decided: ["a"],
    },
    {
      name: "NoSelectIfNew on a decided cluster is tolerated without expiry",
      clusters: [cluster("a", { taints: [t("k", "NoSelectIfNew", 60)] })],
      tolerations: [{ key: "k", operator: "Exists", tolerationSeconds: 300 }],
      decided: ["a"],
    },
    {
      name: "a decided cluster outside the eligible sets still counts (OCM reads every cluster)",
      clusters: [cluster("a", { clusterSets: ["other"], taints: [t("k", "NoSelect", 0)] }), cluster("b")],
      tolerations: [{ key: "k", operator: "Exists", tolerationSeconds: 50 }],
      decided: ["a"],
      requeueAt: NOW_MS + 50_000,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = schedule(input({ tolerations: c.tolerations }, c.clusters, { existingDecisions: c.decided }), NOW);
      expect(r.requeueAt).toBe(c.requeueAt);
      expect(r.requeueAfterMs).toBe(c.requeueAt === undefined ? undefined : c.requeueAt - NOW_MS);
    });
  }
});

describe("prioritizers", () => {
  const cases: {
    name: string;
    spec: PlacementSpec;
    in?: Partial<ScheduleInput>;
    clusters: SchedulingCluster[];
    decisions: string[];
    scores: Record<string, number>;
  }[] = [
    {
      // maxCount = 3. a: 3/3 → 2·trunc(100·(0.5−1)) = −100; b: 1/3 → 2·trunc(16.67) = 32;
      // c: 2/3 → 2·trunc(−16.67) = −32; d: no count → 100.
      name: "Balance",
      spec: { prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "Balance" }, weight: 1 }) },
      clusters: names("a", "b", "c", "d"),
      in: { otherDecisionCounts: { a: 3, b: 1, c: 2 } },
      decisions: ["d", "b", "c", "a"],
      scores: { a: -100, b: 32, c: -32, d: 100 },
    },
    {
      // maxCount = 4 comes from x, which is not a candidate. a: 2/4 → 0; b: 1/4 → 2·trunc(25) = 50.
      name: "Balance: maxCount over every cluster with decisions; Map input",
      spec: { prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "Balance" }, weight: 1 }) },
      clusters: names("a", "b"),
      in: {
        otherDecisionCounts: new Map([
          ["x", 4],
          ["a", 2],
          ["b", 1],
        ]),
      },
      decisions: ["b", "a"],
      scores: { a: 0, b: 50 },
    },
    {
      // The same counts as a lookup that knows its largest count (x's 4), as the scheduler's view gives them.
      name: "Balance: a count lookup with its maxCount",
      spec: { prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "Balance" }, weight: 1 }) },
      clusters: names("a", "b"),
      in: { otherDecisionCounts: { maxCount: 4, countOf: (c: string) => ({ a: 2, b: 1 })[c] } },
      decisions: ["b", "a"],
      scores: { a: 0, b: 50 },
    },
    {
      name: "Steady: 100 for already decided clusters",
      spec: { prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "Steady" }, weight: 1 }) },
      clusters: names("a", "b", "c"),
      in: { existingDecisions: ["b"] },
      decisions: ["b", "a", "c"],
      scores: { a: 0, b: 100, c: 0 },
    },
    {
      // Additive defaults Balance:1 + Steady:1. a: −100 (1 of max 1) + 100 (decided) = 0; b: 100 + 0.
      name: "Additive mode defaults to Balance:1 and Steady:1",
      spec: {},
      clusters: names("a", "b"),
      in: { otherDecisionCounts: { a: 1 }, existingDecisions: ["a"] },
      decisions: ["b", "a"],
      scores: { a: 0, b: 100 },
    },
    {
      // Steady overridden to 3: a: −100 + 300 = 200; b: 100.
      name: "Additive mode: a spec entry overrides a default weight",
      spec: { prioritizerPolicy: { mode: "Additive", configurations: [{ scoreCoordinate: { builtIn: "Steady" }, weight: 3 }] } },
      clusters: names("a", "b"),
      in: { otherDecisionCounts: { a: 1 }, existingDecisions: ["a"] },
      decisions: ["a", "b"],
      scores: { a: 200, b: 100 },
    },
    {
      // Balance weight 0 drops it: only Steady:1 remains. a: 100, b: 0.
      name: "weight 0 drops a prioritizer",
      spec: { prioritizerPolicy: { configurations: [{ scoreCoordinate: { builtIn: "Balance" }, weight: 0 }] } },
      clusters: names("a", "b"),
      in: { otherDecisionCounts: { a: 1 }, existingDecisions: ["a"] },
      decisions: ["a", "b"],
      scores: { a: 100, b: 0 },
    },
    {
      // Negative weight: Steady −2 → a: −200, b: 0.
      name: "negative weights invert a prioritizer",
      spec: { prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "Steady" }, weight: -2 }) },
      clusters: names("a", "b"),
      in: { existingDecisions: ["a"] },
      decisions: ["b", "a"],
      scores: { a: -200, b: 0 },
    },
    {
      name: "weight defaults to 1",
      spec: { prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "Steady" } }) },
      clusters: names("a", "b"),
      in: { existingDecisions: ["b"] },
      decisions: ["b", "a"],
      scores: { a: 0, b: 100 },
    },
    {
      name: "the same built-in listed twice: the last weight wins",
      spec: {
        prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "Steady" }, weight: 5 }, { scoreCoordinate: { builtIn: "Steady" }, weight: 2 }),
      },
      clusters: names("a", "b"),
      in: { existingDecisions: ["b"] },
      decisions: ["b", "a"],
      scores: { a: 0, b: 200 },
    },
    {
      name: "Exact mode without configurations: all 0, ordered by name",
      spec: { prioritizerPolicy: { mode: "Exact" } },
      clusters: names("c", "a", "b"),
      in: { otherDecisionCounts: { a: 1 }, existingDecisions: ["c"] },
      decisions: ["a", "b", "c"],
      scores: { a: 0, b: 0, c: 0 },
    },
    {
      // min 2, max 12. a: ratio 0 → −100; b: (4−2)/10 = 0.2 → trunc(−0.3·2·100) = −60;
      // c: ratio 1 → 100; d lacks capacity → no score (0 in the total).
      name: "ResourceAllocatableCPU",
      spec: { prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "ResourceAllocatableCPU" }, weight: 1 }) },
      clusters: [
        cluster("a", { allocatable: { cpu: "2" }, capacity: { cpu: "2" } }),
        cluster("b", { allocatable: { cpu: "4" }, capacity: { cpu: "4" } }),
        cluster("c", { allocatable: { cpu: "12" }, capacity: { cpu: "16" } }),
        cluster("d", { allocatable: { cpu: "100" } }),
      ],
      decisions: ["c", "d", "b", "a"],
      scores: { a: -100, b: -60, c: 100, d: 0 },
    },
    {
      // 3800m is 3800 × 0.001 = 3.8000000000000003; min 3, max 4: ratio 0.8000000000000003 → trunc(60.00000000000005) = 60.
      name: "ResourceAllocatableCPU with millicores",
      spec: { prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "ResourceAllocatableCPU" }, weight: 1 }) },
      clusters: [
        cluster("a", { allocatable: { cpu: "3800m" }, capacity: { cpu: "4" } }),
        cluster("b", { allocatable: { cpu: "4" }, capacity: { cpu: "4" } }),
        cluster("c", { allocatable: { cpu: "3" }, capacity: { cpu: "4" } }),
      ],
      decisions: ["b", "a", "c"],
      scores: { a: 60, b: 100, c: -100 },
    },
    {
      // min 0, max 10Gi: b 6Gi/10Gi = 0.6 → (0.6−0.5)·2·100 = 19.999999999999996 → 19 (not 20).
      name: "ResourceAllocatableMemory truncates in float64 (0.6 gives 19)",
      spec: { prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "ResourceAllocatableMemory" }, weight: 1 }) },
      clusters: [
        cluster("a", { allocatable: { memory: "0" }, capacity: { memory: "16Gi" } }),
        cluster("b", { allocatable: { memory: "6Gi" }, capacity: { memory: "16Gi" } }),
        cluster("c", { allocatable: { memory: "10Gi" }, capacity: { memory: "16Gi" } }),
      ],
      decisions: ["c", "b", "a"],
      scores: { a: -100, b: 19, c: 100 },
    },
    {
      name: "ResourceAllocatableMemory: max == min → everyone 100",
      spec: { prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "ResourceAllocatableMemory" }, weight: 2 }) },
      clusters: [
        cluster("b", { allocatable: { memory: "8Gi" }, capacity: { memory: "16Gi" } }),
        cluster("a", { allocatable: { memory: "8192Mi" }, capacity: { memory: "16Gi" } }),
        cluster("c", { allocatable: { memory: "garbage" }, capacity: { memory: "16Gi" } }),
      ],
      decisions: ["a", "b", "c"],
      scores: { a: 200, b: 200, c: 0 },
    },
    {
      // a: 80; b: expired → 0; c: no AddOnPlacementScore → 0; d: score named differently → 0; e: future validUntil → −20.
      name: "AddOn scores with validUntil",
      spec: { prioritizerPolicy: exact({ scoreCoordinate: { type: "AddOn", addOn: { resourceName: "usage", scoreName: "cpu" } }, weight: 1 }) },
      clusters: names("a", "b", "c", "d", "e"),
      in: {
        addOnPlacementScores: {
          a: { usage: { scores: { cpu: 80, mem: -5 } } },
          b: { usage: { scores: { cpu: 90 }, validUntil: iso(-1) } },
          d: { usage: { scores: { memory: 70 } } },
          e: { usage: { scores: { cpu: -20 }, validUntil: iso(3600) } },
        },
      },
      decisions: ["a", "b", "c", "d", "e"],
      scores: { a: 80, b: 0, c: 0, d: 0, e: -20 },
    },
    {
      name: "AddOn: validUntil equal to now is still valid (expired only after)",
      spec: { prioritizerPolicy: exact({ scoreCoordinate: { type: "AddOn", addOn: { resourceName: "usage", scoreName: "cpu" } }, weight: 3 }) },
      clusters: names("a", "b"),
      in: { addOnPlacementScores: { b: { usage: { scores: { cpu: 10 }, validUntil: iso(0) } } } },
      decisions: ["b", "a"],
      scores: { a: 0, b: 30 },
    },
    {
      // OCM keys the weight map by a struct holding the addOn pointer, so both entries apply: 10·1 + 10·2.
      name: "the same AddOn coordinate listed twice counts twice",
      spec: {
        prioritizerPolicy: exact(
          { scoreCoordinate: { type: "AddOn", addOn: { resourceName: "usage", scoreName: "cpu" } }, weight: 1 },
          { scoreCoordinate: { type: "AddOn", addOn: { resourceName: "usage", scoreName: "cpu" } }, weight: 2 },
        ),
      },
      clusters: names("a", "b"),
      in: { addOnPlacementScores: { b: { usage: { scores: { cpu: 10 } } } } },
      decisions: ["b", "a"],
      scores: { a: 0, b: 30 },
    },
    {
      // Balance (max 2): a 2/2 → −100, b none → 100, c 1/2 → 0. Steady: c. Memory ×2: a 100, b −100, c 0 (ratio 0.5).
      // a: −100 + 0 + 200 = 100; b: 100 + 0 − 200 = −100; c: 0 + 100 + 0 = 100 → a, c tie on 100: by name.
      name: "all built-ins together",
      spec: { prioritizerPolicy: { configurations: [{ scoreCoordinate: { builtIn: "ResourceAllocatableMemory" }, weight: 2 }] } },
      clusters: [
        cluster("c", { allocatable: { memory: "12Gi" }, capacity: { memory: "32Gi" } }),
        cluster("b", { allocatable: { memory: "8Gi" }, capacity: { memory: "32Gi" } }),
        cluster("a", { allocatable: { memory: "16Gi" }, capacity: { memory: "32Gi" } }),
      ],
      in: { otherDecisionCounts: { a: 2, c: 1 }, existingDecisions: ["c"] },
      decisions: ["a", "c", "b"],
      scores: { a: 100, b: -100, c: 100 },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = schedule(input(c.spec, c.clusters, c.in), NOW);
      expect(r.decisions).toEqual(c.decisions);
      expect(r.scores).toEqual(c.scores);
      const feasible = Object.fromEntries(r.feasibleClusters.map((n, i) => [n, r.feasibleScores[i]]));
      expect(feasible).toEqual(c.scores);
      expect(misconfigured(r).status).toBe("False");
    });
  }

  it("an expired AddOnPlacementScore gives OCM's Warning status", () => {
    const r = schedule(
      input(
        { prioritizerPolicy: exact({ scoreCoordinate: { type: "AddOn", addOn: { resourceName: "usage", scoreName: "cpu" } }, weight: 1 }) },
        names("a", "b", "c"),
        {
          addOnPlacementScores: { a: { usage: { scores: { cpu: 1 }, validUntil: iso(-10) } }, c: { usage: { scores: { cpu: 1 }, validUntil: iso(-10) } } },
        },
      ),
      NOW,
    );
    expect(r.status).toEqual({ code: "Warning", plugin: "AddOn/usage/cpu", message: "AddOnPlacementScores a/usage c/usage expired" });
    expect(r.warnings).toEqual(["AddOnPlacementScores a/usage c/usage expired"]);
    expect(misconfigured(r).status).toBe("False");
    expect(satisfied(r).reason).toBe("AllDecisionsScheduled");
  });

  it("explain returns each prioritizer's scores and weight", () => {
    const r = schedule(input({}, names("a", "b"), { otherDecisionCounts: { a: 1 }, existingDecisions: ["a"] }), NOW, { explain: true });
    expect(r.prioritizerResults).toEqual([
      { name: "Balance", weight: 1, scores: { a: -100, b: 100 } },
      { name: "Steady", weight: 1, scores: { a: 100, b: 0 } },
    ]);
    expect(r.prioritizers).toEqual([
      { name: "Balance", weight: 1 },
      { name: "Steady", weight: 1 },
    ]);
  });

  const invalid: { name: string; spec: PlacementSpec; message: string }[] = [
    {
      name: "weight above 10",
      spec: { prioritizerPolicy: { configurations: [{ scoreCoordinate: { builtIn: "Steady" }, weight: 11 }] } },
      message: ":spec.prioritizerPolicy.configurations[0].weight in body should be less than or equal to 10",
    },
    {
      name: "weight below −10",
      spec: {
        prioritizerPolicy: {
          configurations: [
            { scoreCoordinate: { builtIn: "Steady" }, weight: 1 },
            { scoreCoordinate: { builtIn: "Balance" }, weight: -11 },
          ],
        },
      },
      message: ":spec.prioritizerPolicy.configurations[1].weight in body should be greater than or equal to -10",
    },
    {
      name: "non-integer weight",
      spec: { prioritizerPolicy: { configurations: [{ scoreCoordinate: { builtIn: "Steady" }, weight: 1.5 }] } },
      message: ":spec.prioritizerPolicy.configurations[0].weight in body must be of type integer: 1.5",
    },
    {
      name: "an unknown built-in",
      spec: { prioritizerPolicy: { configurations: [{ scoreCoordinate: { builtIn: "Spreading" }, weight: 1 }] } },
      message: ":incorrect builtin prioritizer: Spreading",
    },
    {
      name: "unknown mode",
      spec: { prioritizerPolicy: { mode: "Fancy" as "Exact" } },
      message: ":incorrect prioritizer policy mode: Fancy",
    },
    { name: "missing scoreCoordinate", spec: { prioritizerPolicy: { configurations: [{ weight: 1 }] } }, message: ":scoreCoordinate field is required" },
    {
      name: "AddOn without addOn",
      spec: { prioritizerPolicy: { configurations: [{ scoreCoordinate: { type: "AddOn" }, weight: 1 }] } },
      message: ":addOn should not be empty",
    },
  ];
  for (const c of invalid) {
    it(`Misconfigured: ${c.name}`, () => {
      const r = schedule(input(c.spec, names("a")), NOW);
      expect(r.conditions).toEqual([
        { type: "PlacementMisconfigured", status: "True", reason: "Misconfigured", message: c.message },
        { type: "PlacementSatisfied", status: "False", reason: "NoManagedClusterMatched", message: "No ManagedCluster matches any of the cluster predicate" },
      ]);
      expect(r.decisions).toEqual([]);
      expect(r.scores).toEqual({});
    });
  }

  it("an unknown built-in with weight 0 is dropped before it is checked", () => {
    const r = schedule(input({ prioritizerPolicy: { configurations: [{ scoreCoordinate: { builtIn: "Spreading" }, weight: 0 }] } }, names("a")), NOW);
    expect(misconfigured(r).status).toBe("False");
    expect(r.decisions).toEqual(["a"]);
  });
});

describe("selection", () => {
  it("ties are broken by name in plain code-unit order", () => {
    const r = schedule(input({}, names("cluster-2", "cluster-10", "cluster-1", "Cluster-3")), NOW);
    expect(r.decisions).toEqual(["Cluster-3", "cluster-1", "cluster-10", "cluster-2"]);
  });

  const cases: { name: string; numberOfClusters: number | null | undefined; decisions: string[]; unscheduled: number; condition: [string, string, string] }[] =
    [
      {
        name: "nil numberOfClusters selects all",
        numberOfClusters: undefined,
        decisions: ["a", "b", "c"],
        unscheduled: 0,
        condition: ["True", "AllDecisionsScheduled", "All cluster decisions scheduled"],
      },
      {
        name: "null numberOfClusters selects all",
        numberOfClusters: null,
        decisions: ["a", "b", "c"],
        unscheduled: 0,
        condition: ["True", "AllDecisionsScheduled", "All cluster decisions scheduled"],
      },
      {
        name: "numberOfClusters 2 of 3",
        numberOfClusters: 2,
        decisions: ["a", "b"],
        unscheduled: 0,
        condition: ["True", "AllDecisionsScheduled", "All cluster decisions scheduled"],
      },
      {
        name: "numberOfClusters larger than the feasible set",
        numberOfClusters: 5,
        decisions: ["a", "b", "c"],
        unscheduled: 2,
        condition: ["False", "NotAllDecisionsScheduled", "2 cluster decisions unscheduled"],
      },
      {
        name: "numberOfClusters 0 selects none (reported as no match, as OCM does)",
        numberOfClusters: 0,
        decisions: [],
        unscheduled: 0,
        condition: ["False", "NoManagedClusterMatched", "No ManagedCluster matches any of the cluster predicate"],
      },
    ];
  for (const c of cases) {
    it(c.name, () => {
      const r = schedule(input({ numberOfClusters: c.numberOfClusters }, names("c", "a", "b")), NOW);
      expect(r.decisions).toEqual(c.decisions);
      expect(r.numberOfSelectedClusters).toBe(c.decisions.length);
      expect(r.unscheduled).toBe(c.unscheduled);
      expect([satisfied(r).status, satisfied(r).reason, satisfied(r).message]).toEqual(c.condition);
    });
  }

  it("a negative numberOfClusters is Misconfigured", () => {
    const r = schedule(input({ numberOfClusters: -1 }, names("a")), NOW);
    expect(misconfigured(r).message).toBe(":spec.numberOfClusters in body should be greater than or equal to 0");
    expect(r.decisions).toEqual([]);
  });

  it("PickN over many clusters picks the top scores (heap path), ties by name", () => {
    // AddOn score of cluster i is ((i × 37) mod 201) − 100: every value −100..100 appears once per
    // 201 clusters, so with 1,000 clusters each of the top values 100, 99 appears 4–5 times.
    const clusters: SchedulingCluster[] = [];
    const scores: Record<string, { usage: { scores: Record<string, number> } }> = {};
    for (let i = 0; i < 1000; i++) {
      const name = `c${String(i).padStart(4, "0")}`;
      clusters.push(cluster(name));
      scores[name] = { usage: { scores: { s: ((i * 37) % 201) - 100 } } };
    }
    // Score 100 ⇔ 37·i ≡ 200 (mod 201) ⇔ i ≡ 200·37⁻¹ ≡ 200·163 ≡ 38 (mod 201): i = 38, 239, 440, 641, 842.
    // Score 99 ⇔ i ≡ 199·163 ≡ 76 (mod 201): i = 76, 277, 478, 679, 880.
    const r = schedule(
      input(
        { numberOfClusters: 7, prioritizerPolicy: exact({ scoreCoordinate: { type: "AddOn", addOn: { resourceName: "usage", scoreName: "s" } }, weight: 1 }) },
        clusters,
        {
          addOnPlacementScores: scores,
        },
      ),
      NOW,
    );
    expect(r.decisions).toEqual(["c0038", "c0239", "c0440", "c0641", "c0842", "c0076", "c0277"]);
    expect(r.scores).toEqual({ c0038: 100, c0239: 100, c0440: 100, c0641: 100, c0842: 100, c0076: 99, c0277: 99 });
  });
});

// OCM's spread policy (enhancement 70 "Spread Policy across Failure-domains in Placement APIs"):
// its worked example and its use cases 2–4, translated to rows. Upstream OCM's scheduler has no
// spread selector yet, so these come from the accepted design's text, worked by hand.
describe("spread policy (OCM enhancement 70)", () => {
  const at = (name: string, labels: Record<string, string>, claims?: Record<string, string>) => cluster(name, claims ? { labels, claims } : { labels });
  const zone = (z: string) => ({ region: z.replace(/-1[a-z]$/, ""), zone: z });
  const addOn = (weight: number) => ({ scoreCoordinate: { type: "AddOn" as const, addOn: { resourceName: "prio", scoreName: "s" } }, weight });
  const scored = (values: Record<string, number>) => Object.fromEntries(Object.entries(values).map(([c, v]) => [c, { prio: { scores: { s: v } } }]));

  it("the design's implementation example: c1 first, then c5 (c2 would break the zone skew, c3 loses on region)", () => {
    // Prioritizer 50/50/0/0/50; regions first (ScheduleAnyway), zones maxSkew 1 DoNotSchedule, Spread weight 2.
    // Second pick: c2 excluded (us-east-1a would be 2 against 0); c3 region 0 + zone 63 = 63, c4/c5 region 63<<6 = 4032;
    // normalized c3 −100, c4/c5 +100; finals c3 −200, c4 200, c5 250.
    const clusters = [
      at("c1", zone("us-east-1a")),
      at("c2", zone("us-east-1a")),
      at("c3", zone("us-east-1b")),
      at("c4", zone("us-west-1a")),
      at("c5", zone("us-west-1a")),
    ];
    const spec: PlacementSpec = {
      numberOfClusters: 2,
      prioritizerPolicy: exact(addOn(1), { scoreCoordinate: { builtIn: "Spread" }, weight: 2 }),
      spreadPolicy: {
        spreadConstraints: [
          { topologyKey: "region", topologyKeyType: "Label" },
          { topologyKey: "zone", topologyKeyType: "Label", maxSkew: 1, whenUnsatisfiable: "DoNotSchedule" },
        ],
      },
    };
    const r = schedule(input(spec, clusters, { addOnPlacementScores: scored({ c1: 50, c2: 50, c3: 0, c4: 0, c5: 50 }) }), NOW);
    expect(r.decisions).toEqual(["c1", "c5"]);
    expect(r.scores).toEqual({ c1: 50, c5: 50 });
    expect(r.prioritizers).toEqual([
      { name: "AddOn/prio/s", weight: 1 },
      { name: "Spread", weight: 2 },
    ]);
    expect(satisfied(r).reason).toBe("AllDecisionsScheduled");
  });

  it("use case 2, even spread: 4 clusters of us-east are 2 per zone", () => {
    const clusters = ["a1", "a2", "a3"]
      .map((n) => at(`east-1a-${n}`, zone("us-east-1a")))
      .concat(
        ["b1", "b2", "b3"].map((n) => at(`east-1b-${n}`, zone("us-east-1b"))),
        [at("west-1", zone("us-west-1a"))],
      );
    const spec: PlacementSpec = {
      numberOfClusters: 4,
      predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { region: "us-east" } } } }],
      spreadPolicy: { spreadConstraints: [{ topologyKey: "zone", topologyKeyType: "Label" }] },
    };
    const r = schedule(input(spec, clusters), NOW);
    expect(r.decisions).toEqual(["east-1a-a1", "east-1b-b1", "east-1a-a2", "east-1b-b2"]);
    expect(r.prioritizers).toEqual([
      { name: "Balance", weight: 1 },
      { name: "Steady", weight: 1 },
      { name: "Spread", weight: 2 },
    ]);
  });

  const useCase3 = (maxSkew: number) => ({
    numberOfClusters: 4,
    predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { region: "us-east" } } } }],
    spreadPolicy: { spreadConstraints: [{ topologyKey: "zone", topologyKeyType: "Label" as const, maxSkew, whenUnsatisfiable: "DoNotSchedule" as const }] },
  });
  const useCase3Clusters = () => [at("a1", zone("us-east-1a")), at("a2", zone("us-east-1a")), at("a3", zone("us-east-1a")), at("b1", zone("us-east-1b"))];

  it("use case 3, max skew 2: 3 + 1 is within the skew, all 4 are scheduled", () => {
    const r = schedule(input(useCase3(2), useCase3Clusters()), NOW);
    expect(r.decisions).toEqual(["a1", "b1", "a2", "a3"]);
    expect([satisfied(r).status, satisfied(r).reason]).toEqual(["True", "AllDecisionsScheduled"]);
  });

  it("use case 3, max skew 1 with DoNotSchedule: 2 + 1 and one decision unscheduled", () => {
    const r = schedule(input(useCase3(1), useCase3Clusters()), NOW);
    expect(r.decisions).toEqual(["a1", "b1", "a2"]);
    expect(r.unscheduled).toBe(1);
    expect(satisfied(r)).toEqual({
      type: "PlacementSatisfied",
      status: "False",
      reason: "NotAllDecisionsScheduled",
      message: "1 cluster decisions unscheduled",
    });
  });

  it("use case 3 with ScheduleAnyway: the skew is exceeded rather than a decision left out", () => {
    const spec = useCase3(1);
    spec.spreadPolicy.spreadConstraints[0]!.whenUnsatisfiable = "ScheduleAnyway" as "DoNotSchedule";
    const r = schedule(input(spec, useCase3Clusters()), NOW);
    expect(r.decisions).toEqual(["a1", "b1", "a2", "a3"]);
  });

  it("use case 4, joint spread: regions first, then zones within a region", () => {
    // Picks: e1a-1 (all equal, by name); w1a-1 (region us-west 63<<6); e1b-1 (regions even, zone 1b 63);
    // w1a-2 (region us-west behind again).
    const clusters = [
      at("e1a-1", zone("us-east-1a")),
      at("e1a-2", zone("us-east-1a")),
      at("e1b-1", zone("us-east-1b")),
      at("e1b-2", zone("us-east-1b")),
      at("w1a-1", zone("us-west-1a")),
      at("w1a-2", zone("us-west-1a")),
      at("w1a-3", zone("us-west-1a")),
    ];
    const spec: PlacementSpec = {
      numberOfClusters: 4,
      spreadPolicy: {
        spreadConstraints: [
          { topologyKey: "region", topologyKeyType: "Label" },
          { topologyKey: "zone", topologyKeyType: "Label" },
        ],
      },
    };
    expect(schedule(input(spec, clusters), NOW).decisions).toEqual(["e1a-1", "w1a-1", "e1b-1", "w1a-2"]);
  });

  it("zones are compared within their region: the same zone name under two regions is two topologies", () => {
    // Regions r1 {z} and r2 {y, z}. Picking b puts r1/z at 2, but r1/z has no sibling, so
    // maxSkew 1 holds; were zones compared across regions, z (1) against y (0) would exclude b.
    const clusters = [
      at("a", { region: "r1", zone: "z" }),
      at("b", { region: "r1", zone: "z" }),
      at("c", { region: "r2", zone: "y" }),
      at("d", { region: "r2", zone: "z" }),
    ];
    const spec: PlacementSpec = {
      prioritizerPolicy: exact(),
      spreadPolicy: {
        spreadConstraints: [
          { topologyKey: "region", topologyKeyType: "Label", maxSkew: 5, whenUnsatisfiable: "DoNotSchedule" },
          { topologyKey: "zone", topologyKeyType: "Label", whenUnsatisfiable: "DoNotSchedule" },
        ],
      },
    };
    expect(schedule(input(spec, clusters), NOW).decisions).toEqual(["a", "b", "c", "d"]);
  });

  it("a Claim topology key spreads by the cluster claim", () => {
    const clusters = [at("a", {}, { platform: "AWS" }), at("b", {}, { platform: "AWS" }), at("c", {}, { platform: "GCP" })];
    const spec: PlacementSpec = { numberOfClusters: 2, spreadPolicy: { spreadConstraints: [{ topologyKey: "platform", topologyKeyType: "Claim" }] } };
    expect(schedule(input(spec, clusters), NOW).decisions).toEqual(["a", "c"]);
  });

  it("DoNotSchedule never picks a cluster without the topology key; ScheduleAnyway may", () => {
    const clusters = [at("a", { zone: "z1" }), at("b", {}), at("c", { zone: "z2" })];
    const term = (w: "DoNotSchedule" | "ScheduleAnyway"): PlacementSpec => ({
      spreadPolicy: { spreadConstraints: [{ topologyKey: "zone", topologyKeyType: "Label", whenUnsatisfiable: w }] },
    });
    expect(schedule(input(term("DoNotSchedule"), clusters), NOW).decisions).toEqual(["a", "c"]);
    expect(
      schedule(input(term("ScheduleAnyway"), clusters), NOW)
        .decisions.slice()
        .sort(),
    ).toEqual(["a", "b", "c"]);
  });

  it("without numberOfClusters every feasible cluster the DoNotSchedule skew allows is picked", () => {
    const spec: PlacementSpec = {
      spreadPolicy: { spreadConstraints: [{ topologyKey: "zone", topologyKeyType: "Label", whenUnsatisfiable: "DoNotSchedule" }] },
    };
    const r = schedule(input(spec, useCase3Clusters()), NOW);
    expect(r.decisions).toEqual(["a1", "b1", "a2"]);
    expect(r.numberOfFeasibleClusters).toBe(4);
    expect(satisfied(r).reason).toBe("AllDecisionsScheduled");
  });

  it("Exact mode without Spread keeps only the DoNotSchedule limit (spread weight 0)", () => {
    const clusters = [at("a1", { zone: "A" }), at("a2", { zone: "A" }), at("b1", { zone: "B" })];
    const spec: PlacementSpec = {
      numberOfClusters: 3,
      prioritizerPolicy: exact(),
      spreadPolicy: { spreadConstraints: [{ topologyKey: "zone", topologyKeyType: "Label", whenUnsatisfiable: "DoNotSchedule" }] },
    };
    const r = schedule(input(spec, clusters), NOW);
    expect(r.decisions).toEqual(["a1", "b1", "a2"]);
    expect(r.prioritizers).toEqual([]);
  });

  it("the Spread weight is weighed against the prioritizers: default 2 beats Steady 1, Steady 10 beats Spread 1", () => {
    const clusters = [at("a1", { zone: "A" }), at("a2", { zone: "A" }), at("b1", { zone: "B" })];
    const spread = { spreadConstraints: [{ topologyKey: "zone", topologyKeyType: "Label" as const }] };
    // Additive: Steady gives a1, a2 100; second pick a2 = 100 + 2 × −100, b1 = 0 + 2 × 100.
    const additive = schedule(input({ numberOfClusters: 2, spreadPolicy: spread }, clusters, { existingDecisions: ["a1", "a2"] }), NOW);
    expect(additive.decisions).toEqual(["a1", "b1"]);
    const steady = schedule(
      input(
        {
          numberOfClusters: 2,
          spreadPolicy: spread,
          prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "Steady" }, weight: 10 }, { scoreCoordinate: { builtIn: "Spread" }, weight: 1 }),
        },
        clusters,
        {
          existingDecisions: ["a1", "a2"],
        },
      ),
      NOW,
    );
    expect(steady.decisions).toEqual(["a1", "a2"]);
  });

  const invalidTerms: { name: string; term: Record<string, unknown>; message: string }[] = [
    {
      name: "unknown topologyKeyType",
      term: { topologyKey: "zone", topologyKeyType: "Zone" },
      message: 'Spread:spec.spreadPolicy.spreadConstraints[0].topologyKeyType: Unsupported value: "Zone"',
    },
    {
      name: "maxSkew 0",
      term: { topologyKey: "zone", topologyKeyType: "Label", maxSkew: 0 },
      message: "Spread:spec.spreadPolicy.spreadConstraints[0].maxSkew in body should be greater than or equal to 1",
    },
    {
      name: "empty topologyKey",
      term: { topologyKey: "", topologyKeyType: "Label" },
      message: "Spread:spec.spreadPolicy.spreadConstraints[0].topologyKey: Required value",
    },
  ];
  for (const c of invalidTerms) {
    it(`Misconfigured (plugin Spread): ${c.name}`, () => {
      const r = schedule(input({ spreadPolicy: { spreadConstraints: [c.term as never] } }, names("a")), NOW);
      expect(misconfigured(r).message).toBe(c.message);
      expect(r.decisions).toEqual([]);
    });
  }
});

describe("decision groups and PlacementDecisions", () => {
  const labeled = (name: string, labels: Record<string, string> = {}, claims: Record<string, string> = {}) => cluster(name, { labels, claims });
  const pd = (n: number, group: string, index: number, clusters: string[]) => ({
    name: `p-decision-${n}`,
    labels: {
      "cluster.open-cluster-management.io/placement": "p",
      "cluster.open-cluster-management.io/decision-group-name": group,
      "cluster.open-cluster-management.io/decision-group-index": String(index),
    },
    decisions: clusters.map((clusterName) => ({ clusterName, reason: "" })),
  });
  const fleet = [
    labeled("c1", { canary: "true" }),
    labeled("c2"),
    labeled("c3", { canary: "true" }),
    labeled("c4", {}, { zone: "z1" }),
    labeled("c10", { canary: "true" }),
  ];

  const cases: { name: string; strategy: NonNullable<PlacementSpec["decisionStrategy"]>["groupStrategy"]; groups: [string, string[]][] }[] = [
    { name: "default: one unnamed group, sorted by name (c10 < c2)", strategy: undefined, groups: [["", ["c1", "c10", "c2", "c3", "c4"]]] },
    {
      name: "named group + remainder",
      strategy: { decisionGroups: [{ groupName: "canary", groupClusterSelector: { labelSelector: { matchLabels: { canary: "true" } } } }] },
      groups: [
        ["canary", ["c1", "c10", "c3"]],
        ["", ["c2", "c4"]],
      ],
    },
    {
      // L = 2: canary [c1,c10],[c3]; rest [c2,c4].
      name: "int clustersPerDecisionGroup chunks every group",
      strategy: {
        clustersPerDecisionGroup: 2,
        decisionGroups: [{ groupName: "canary", groupClusterSelector: { labelSelector: { matchLabels: { canary: "true" } } } }],
      },
      groups: [
        ["canary", ["c1", "c10"]],
        ["canary", ["c3"]],
        ["", ["c2", "c4"]],
      ],
    },
    {
      // L = ceil(25/100 × 5) = ceil(1.25) = 2.
      name: "percent clustersPerDecisionGroup rounds up",
      strategy: { clustersPerDecisionGroup: "25%" },
      groups: [
        ["", ["c1", "c10"]],
        ["", ["c2", "c3"]],
        ["", ["c4"]],
      ],
    },
    {
      // L = ceil(1/100 × 5) = 1.
      name: "1% gives groups of one",
      strategy: { clustersPerDecisionGroup: "1%" },
      groups: [
        ["", ["c1"]],
        ["", ["c10"]],
        ["", ["c2"]],
        ["", ["c3"]],
        ["", ["c4"]],
      ],
    },
    { name: "100%", strategy: { clustersPerDecisionGroup: "100%" }, groups: [["", ["c1", "c10", "c2", "c3", "c4"]]] },
    { name: "an int above the total means the total", strategy: { clustersPerDecisionGroup: 50 }, groups: [["", ["c1", "c10", "c2", "c3", "c4"]]] },
    { name: "0 means the total", strategy: { clustersPerDecisionGroup: 0 }, groups: [["", ["c1", "c10", "c2", "c3", "c4"]]] },
    {
      name: "a group matching nothing yields no group; a cluster goes to the first group that matches; claims select",
      strategy: {
        decisionGroups: [
          { groupName: "none", groupClusterSelector: { labelSelector: { matchLabels: { canary: "false" } } } },
          { groupName: "zone", groupClusterSelector: { claimSelector: { matchExpressions: [{ key: "zone", operator: "Exists" }] } } },
          { groupName: "c", groupClusterSelector: { labelSelector: { matchExpressions: [{ key: "canary", operator: "Exists" }] } } },
          { groupName: "again", groupClusterSelector: { labelSelector: { matchLabels: { canary: "true" } } } },
        ],
      },
      groups: [
        ["zone", ["c4"]],
        ["c", ["c1", "c10", "c3"]],
        ["", ["c2"]],
      ],
    },
    {
      name: "every cluster in named groups: no remainder group",
      strategy: { decisionGroups: [{ groupName: "all", groupClusterSelector: {} }] },
      groups: [["all", ["c1", "c10", "c2", "c3", "c4"]]],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = schedule(input({ decisionStrategy: { groupStrategy: c.strategy } }, fleet), NOW);
      expect(r.decisionGroups).toEqual(
        c.groups.map(([groupName, clusters], i) => ({ groupName, groupIndex: i, clusters, placementDecisions: [`p-decision-${i + 1}`] })),
      );
      expect(r.decisionGroupStatus).toEqual(
        c.groups.map(([name, clusters], i) => ({
          decisionGroupIndex: i,
          decisionGroupName: name,
          decisions: [`p-decision-${i + 1}`],
          clusterCount: clusters.length,
        })),
      );
      expect(r.placementDecisions).toEqual(c.groups.map(([name, clusters], i) => pd(i + 1, name, i, clusters)));
      expect(misconfigured(r).status).toBe("False");
    });
  }

  it("groups are computed over the selected clusters only", () => {
    // Exact + Steady: c3 and c4 are decided and win; numberOfClusters 2.
    const r = schedule(
      input(
        {
          numberOfClusters: 2,
          prioritizerPolicy: exact({ scoreCoordinate: { builtIn: "Steady" }, weight: 1 }),
          decisionStrategy: {
            groupStrategy: { decisionGroups: [{ groupName: "canary", groupClusterSelector: { labelSelector: { matchLabels: { canary: "true" } } } }] },
          },
        },
        fleet,
        { existingDecisions: ["c4", "c3"] },
      ),
      NOW,
    );
    expect(r.decisions).toEqual(["c3", "c4"]);
    expect(r.placementDecisions).toEqual([pd(1, "canary", 0, ["c3"]), pd(2, "", 1, ["c4"])]);
  });

  it("250 clusters → 3 PlacementDecisions of 100, 100, 50", () => {
    const many = Array.from({ length: 250 }, (_, i) => cluster(`c${String(i).padStart(3, "0")}`));
    const r = schedule(input({}, many), NOW);
    const all = many.map((c) => c.name);
    expect(r.numberOfSelectedClusters).toBe(250);
    expect(r.placementDecisions).toEqual([pd(1, "", 0, all.slice(0, 100)), pd(2, "", 0, all.slice(100, 200)), pd(3, "", 0, all.slice(200))]);
    expect(r.decisionGroupStatus).toEqual([
      { decisionGroupIndex: 0, decisionGroupName: "", decisions: ["p-decision-1", "p-decision-2", "p-decision-3"], clusterCount: 250 },
    ]);
  });

  it("pagination inside groups: 250 clusters in groups of 120 → PDs 1–5 across 3 groups", () => {
    const many = Array.from({ length: 250 }, (_, i) => cluster(`c${String(i).padStart(3, "0")}`));
    const all = many.map((c) => c.name);
    const r = schedule(input({ decisionStrategy: { groupStrategy: { clustersPerDecisionGroup: 120 } } }, many), NOW);
    expect(r.placementDecisions).toEqual([
      pd(1, "", 0, all.slice(0, 100)),
      pd(2, "", 0, all.slice(100, 120)),
      pd(3, "", 1, all.slice(120, 220)),
      pd(4, "", 1, all.slice(220, 240)),
      pd(5, "", 2, all.slice(240, 250)),
    ]);
    expect(r.decisionGroupStatus).toEqual([
      { decisionGroupIndex: 0, decisionGroupName: "", decisions: ["p-decision-1", "p-decision-2"], clusterCount: 120 },
      { decisionGroupIndex: 1, decisionGroupName: "", decisions: ["p-decision-3", "p-decision-4"], clusterCount: 120 },
      { decisionGroupIndex: 2, decisionGroupName: "", decisions: ["p-decision-5"], clusterCount: 10 },
    ]);
  });

  const badLength: { value: number | string; message: string }[] = [
    { value: "3", message: ":3 invalid type: string is not a percentage" },
    { value: "abc%", message: ":abc% invalid type: string is not a percentage" },
    { value: 1.5, message: ":1.5 invalid type: string is not a percentage" },
  ];
  for (const c of badLength) {
    it(`clustersPerDecisionGroup ${JSON.stringify(c.value)} → Misconfigured, no PlacementDecision`, () => {
      const r = schedule(input({ decisionStrategy: { groupStrategy: { clustersPerDecisionGroup: c.value } } }, fleet), NOW);
      expect(misconfigured(r)).toEqual({ type: "PlacementMisconfigured", status: "True", reason: "Misconfigured", message: c.message });
      // OCM still reports the scheduled decisions in the status, but builds no PlacementDecision.
      expect(r.numberOfSelectedClusters).toBe(5);
      expect(satisfied(r).reason).toBe("AllDecisionsScheduled");
      expect(r.placementDecisions).toEqual([]);
      expect(r.decisionGroups).toEqual([]);
    });
  }

  it("an invalid group selector keeps the groups built before it", () => {
    const r = schedule(
      input(
        {
          decisionStrategy: {
            groupStrategy: {
              decisionGroups: [
                { groupName: "canary", groupClusterSelector: { labelSelector: { matchLabels: { canary: "true" } } } },
                { groupName: "bad", groupClusterSelector: { labelSelector: { matchExpressions: [{ key: "x", operator: "Bogus" }] } } },
              ],
            },
          },
        },
        fleet,
      ),
      NOW,
    );
    expect(misconfigured(r).status).toBe("True");
    expect(misconfigured(r).message).toMatch(/^:.*operator/);
    expect(r.placementDecisions).toEqual([pd(1, "canary", 0, ["c1", "c10", "c3"])]);
  });
});

describe("a pre-filtered candidate list (eligibleSetsHaveClusters)", () => {
  const spec: PlacementSpec = { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { env: "prod" } } } }] };

  it("tells an empty set from no match when the list holds no candidate", () => {
    expect(satisfied(schedule(input(spec, []), NOW)).reason).toBe("AllManagedClusterSetsEmpty");
    expect(satisfied(schedule(input(spec, [], { eligibleSetsHaveClusters: true }), NOW)).reason).toBe("NoManagedClusterMatched");
    expect(satisfied(schedule(input(spec, [], { eligibleSetsHaveClusters: false }), NOW)).reason).toBe("AllManagedClusterSetsEmpty");
  });

  it("still reports an invalid predicate when the list holds no candidate", () => {
    const bad: PlacementSpec = { predicates: [{ requiredClusterSelector: { labelSelector: { matchExpressions: [{ key: "env", operator: "Bogus" }] } } }] };
    expect(misconfigured(schedule(input(bad, [], { eligibleSetsHaveClusters: true }), NOW)).status).toBe("True");
    expect(misconfigured(schedule(input(bad, []), NOW)).status).toBe("False");
  });

  it("decides as over the whole fleet", () => {
    const fleet = [cluster("a", { labels: { env: "prod" } }), cluster("b", { labels: { env: "dev" } }), cluster("c", { labels: { env: "prod" } })];
    const whole = schedule(input({ ...spec, numberOfClusters: 1 }, fleet, { existingDecisions: ["c"] }), NOW);
    const part = schedule(input({ ...spec, numberOfClusters: 1 }, [fleet[2]!, fleet[0]!], { existingDecisions: ["c"], eligibleSetsHaveClusters: true }), NOW);
    expect(part.decisions).toEqual(["c"]);
    expect(part.conditions).toEqual(whole.conditions);
    expect(part.placementDecisions).toEqual(whole.placementDecisions);
  });
});

describe("determinism", () => {
  const fleet: SchedulingCluster[] = Array.from({ length: 60 }, (_, i) =>
    cluster(`m${i}`, {
      labels: { env: i % 2 ? "prod" : "dev" },
      allocatable: { memory: `${(i * 7) % 13}Gi`, cpu: `${(i % 5) + 1}` },
      capacity: { memory: "64Gi", cpu: "8" },
      taints: i % 9 === 0 ? [{ key: "t", effect: "NoSelectIfNew", timeAdded: iso(-10) }] : undefined,
    }),
  );
  const spec: PlacementSpec = {
    numberOfClusters: 17,
    prioritizerPolicy: {
      configurations: [
        { scoreCoordinate: { builtIn: "ResourceAllocatableMemory" }, weight: 3 },
        { scoreCoordinate: { builtIn: "ResourceAllocatableCPU" }, weight: -1 },
      ],
    },
    decisionStrategy: {
      groupStrategy: {
        clustersPerDecisionGroup: "30%",
        decisionGroups: [{ groupName: "prod", groupClusterSelector: { labelSelector: { matchLabels: { env: "prod" } } } }],
      },
    },
  };
  const extra = { existingDecisions: ["m9", "m3", "m27"], otherDecisionCounts: { m1: 3, m2: 1, m5: 2 } };

  it("the same input gives the same result, whatever the order of the clusters", () => {
    const first = schedule(input(spec, fleet, extra), NOW);
    const again = schedule(input(spec, fleet, extra), NOW);
    const reversed = schedule(input(spec, [...fleet].reverse(), extra), NOW);
    const rotated = schedule(input(spec, [...fleet.slice(23), ...fleet.slice(0, 23)], extra), NOW);
    expect(again).toEqual(first);
    expect(reversed.decisions).toEqual(first.decisions);
    expect(reversed.scores).toEqual(first.scores);
    expect(reversed.placementDecisions).toEqual(first.placementDecisions);
    expect(rotated.decisions).toEqual(first.decisions);
    expect(rotated.placementDecisions).toEqual(first.placementDecisions);
    expect(first.decisions).toHaveLength(17);
  });

  it("does not mutate its input", () => {
    const clusters = structuredClone(fleet);
    const i = input(structuredClone(spec), clusters, structuredClone(extra));
    const before = structuredClone(i);
    schedule(i, NOW);
    expect(i).toEqual(before);
  });
});
