// Table-driven tests of the pure rollout engine (src/work/rollout.ts) against OCM's rollout.go
// semantics. Expected values are worked out by hand from the rules stated on each row.
import { describe, expect, it } from "vitest";
import {
  computeRollout,
  mandatoryGroups,
  parseRolloutDuration,
  rolloutSize,
  workRolloutStatus,
  type ClusterRolloutStatus,
  type DecisionGroup,
  type RolloutResult,
  type RolloutStrategy,
  type WorkCondition,
} from "../../src/work/rollout.ts";

const NOW = Date.parse("2026-01-01T12:00:00Z");
const ago = (seconds: number) => NOW - seconds * 1000;
const one = (...clusters: string[]): DecisionGroup[] => [{ index: 0, name: "", clusters }];
const progressing = (cluster: string, sinceSecondsAgo = 1): ClusterRolloutStatus => ({ cluster, status: "Progressing", sinceMs: ago(sinceSecondsAgo) });
const succeeded = (cluster: string, sinceSecondsAgo = 3600): ClusterRolloutStatus => ({ cluster, status: "Succeeded", sinceMs: ago(sinceSecondsAgo) });
const failed = (cluster: string, sinceSecondsAgo = 1): ClusterRolloutStatus => ({ cluster, status: "Failed", sinceMs: ago(sinceSecondsAgo) });

interface Case {
  name: string;
  strategy?: RolloutStrategy;
  groups: DecisionGroup[];
  existing?: ClusterRolloutStatus[];
  want: Partial<RolloutResult>;
}

function run(cases: Case[]) {
  for (const c of cases) {
    it(c.name, () => {
      const r = computeRollout(c.strategy, c.groups, c.existing ?? [], NOW);
      const got: Partial<RolloutResult> = {};
      for (const k of Object.keys(c.want) as (keyof RolloutResult)[]) (got as Record<string, unknown>)[k] = r[k];
      expect(got).toEqual(c.want);
      if (!("recheckAfterMs" in c.want)) expect(r.recheckAfterMs).toBeUndefined();
    });
  }
}

describe("All", () => {
  run([
    {
      name: "no strategy is All: every cluster at once, no recheck without a deadline",
      groups: one("c", "a", "b"),
      want: { toApply: ["a", "b", "c"], rollingOut: ["a", "b", "c"], timedOut: [], maxFailureBreach: false },
    },
    {
      name: "clusters already at the current content are not applied again",
      strategy: { type: "All" },
      groups: one("a", "b", "c"),
      existing: [succeeded("a"), progressing("b")],
      want: { toApply: ["c"], rollingOut: ["b", "c"] },
    },
    {
      name: "progressDeadline: recheck at the earliest deadline (b started 10 s ago, c starts now)",
      strategy: { type: "All", all: { progressDeadline: "30s" } },
      groups: one("a", "b", "c"),
      existing: [succeeded("a"), progressing("b", 10)],
      want: { toApply: ["c"], recheckAfterMs: 20_000 },
    },
    {
      name: "a Progressing cluster past progressDeadline is TimeOut; All still applies the rest",
      strategy: { type: "All", all: { progressDeadline: "1m" } },
      groups: one("a", "b"),
      existing: [progressing("a", 61)],
      want: { toApply: ["b"], timedOut: ["a"], recheckAfterMs: 60_000 },
    },
    {
      name: "minSuccessTime: a cluster inside its soak is still in flight and rechecked when it ends",
      strategy: { type: "All", all: { minSuccessTime: "1m" } },
      groups: one("a"),
      existing: [succeeded("a", 20)],
      want: { toApply: [], rollingOut: ["a"], recheckAfterMs: 40_000 },
    },
  ]);
});

describe("Progressive", () => {
  const mc = (maxConcurrency: number | string | undefined, extra: Record<string, unknown> = {}): RolloutStrategy => ({
    type: "Progressive",
    progressive: { maxConcurrency, ...extra },
  });
  run([
    {
      name: "maxConcurrency 1 starts with the first cluster in alphabetical order",
      strategy: mc(1),
      groups: one("c", "b", "a"),
      want: { toApply: ["a"], rollingOut: ["a"] },
    },
    { name: "Go string order: cluster10 before cluster2", strategy: mc(1), groups: one("cluster2", "cluster10"), want: { toApply: ["cluster10"] } },
    {
      name: "maxConcurrency 1 waits while the first is Progressing",
      strategy: mc(1),
      groups: one("a", "b", "c"),
      existing: [progressing("a")],
      want: { toApply: [], rollingOut: ["a"] },
    },
    {
      name: "maxConcurrency 1 advances once the first Succeeded",
      strategy: mc(1),
      groups: one("a", "b", "c"),
      existing: [succeeded("a")],
      want: { toApply: ["b"], rollingOut: ["b"] },
    },
    {
      name: "maxConcurrency 2 fills the free slot",
      strategy: mc(2),
      groups: one("a", "b", "c", "d"),
      existing: [succeeded("a"), progressing("b")],
      want: { toApply: ["c"], rollingOut: ["b", "c"] },
    },
    { name: "maxConcurrency 50% of 4 is 2", strategy: mc("50%"), groups: one("a", "b", "c", "d"), want: { toApply: ["a", "b"] } },
    { name: "maxConcurrency 30% of 4 rounds up to 2", strategy: mc("30%"), groups: one("a", "b", "c", "d"), want: { toApply: ["a", "b"] } },
    { name: "maxConcurrency 25% of 4 is 1", strategy: mc("25%"), groups: one("a", "b", "c", "d"), want: { toApply: ["a"] } },
    { name: "maxConcurrency unset is all clusters", strategy: mc(undefined), groups: one("a", "b", "c"), want: { toApply: ["a", "b", "c"] } },
    { name: "maxConcurrency 0 is all clusters (OCM: ≤ 0 falls back to the total)", strategy: mc(0), groups: one("a", "b"), want: { toApply: ["a", "b"] } },
    { name: "maxConcurrency above the total is the total", strategy: mc(10), groups: one("a", "b"), want: { toApply: ["a", "b"] } },
    {
      name: "minSuccessTime: Succeeded inside the soak holds the slot, recheck when it ends",
      strategy: mc(1, { minSuccessTime: "1m" }),
      groups: one("a", "b"),
      existing: [succeeded("a", 30)],
      want: { toApply: [], rollingOut: ["a"], recheckAfterMs: 30_000 },
    },
    {
      name: "minSuccessTime: after the soak the next cluster starts",
      strategy: mc(1, { minSuccessTime: "1m" }),
      groups: one("a", "b"),
      existing: [succeeded("a", 90)],
      want: { toApply: ["b"] },
    },
    {
      name: "progressDeadline with maxFailures 0: a timeout stops the rollout",
      strategy: mc(1, { progressDeadline: "1m" }),
      groups: one("a", "b", "c"),
      existing: [progressing("a", 120)],
      want: { toApply: [], rollingOut: [], timedOut: ["a"], maxFailureBreach: true },
    },
    {
      name: "progressDeadline with maxFailures 1: a timeout frees its slot for the next cluster",
      strategy: mc(1, { progressDeadline: "1m", maxFailures: 1 }),
      groups: one("a", "b", "c"),
      existing: [progressing("a", 120)],
      want: { toApply: ["b"], timedOut: ["a"], maxFailureBreach: false, recheckAfterMs: 60_000 },
    },
    {
      name: "maxFailures 1: a second timeout breaches and nothing more starts",
      strategy: mc(1, { progressDeadline: "1m", maxFailures: 1 }),
      groups: one("a", "b", "c"),
      existing: [progressing("a", 180), progressing("b", 61)],
      want: { toApply: [], timedOut: ["a", "b"], maxFailureBreach: true },
    },
    {
      name: "Progressing inside the deadline is rechecked at the deadline",
      strategy: mc(1, { progressDeadline: "1m" }),
      groups: one("a", "b"),
      existing: [progressing("a", 45)],
      want: { toApply: [], rollingOut: ["a"], recheckAfterMs: 15_000 },
    },
    {
      name: "maxFailures 50% of 4 tolerates a timeout and a failure; the failed one still holds a slot",
      strategy: mc(2, { progressDeadline: "1m", maxFailures: "50%" }),
      groups: one("a", "b", "c", "d"),
      existing: [progressing("a", 120), failed("b", 10)],
      want: { toApply: ["c"], rollingOut: ["b", "c"], timedOut: ["a"], maxFailureBreach: false, recheckAfterMs: 50_000 },
    },
    {
      name: "a Failed cluster with maxFailures 0 breaches at once",
      strategy: mc(1),
      groups: one("a", "b"),
      existing: [failed("a")],
      want: { toApply: [], rollingOut: ["a"], maxFailureBreach: true },
    },
    {
      name: "statuses of clusters no longer decided are ignored",
      strategy: mc(1),
      groups: one("b", "c"),
      existing: [progressing("a")],
      want: { toApply: ["b"] },
    },
  ]);

  const groups: DecisionGroup[] = [
    { index: 0, name: "canary", clusters: ["x"] },
    { index: 1, name: "", clusters: ["a", "b"] },
  ];
  run([
    {
      name: "mandatory group first, all its clusters at once",
      strategy: mc(1, { mandatoryDecisionGroups: [{ groupName: "canary" }] }),
      groups: [{ index: 0, name: "canary", clusters: ["y", "x"] }, groups[1]!],
      want: { toApply: ["x", "y"] },
    },
    {
      name: "the rest waits while the mandatory group is in flight",
      strategy: mc(1, { mandatoryDecisionGroups: [{ groupName: "canary" }] }),
      groups,
      existing: [progressing("x")],
      want: { toApply: [], rollingOut: ["x"] },
    },
    {
      name: "after the mandatory group succeeded the rest goes by maxConcurrency",
      strategy: mc(1, { mandatoryDecisionGroups: [{ groupName: "canary" }] }),
      groups,
      existing: [succeeded("x")],
      want: { toApply: ["a"] },
    },
    {
      name: "a mandatory timeout stops everything even with maxFailures",
      strategy: mc(1, { mandatoryDecisionGroups: [{ groupName: "canary" }], progressDeadline: "1m", maxFailures: 5 }),
      groups,
      existing: [progressing("x", 120)],
      want: { toApply: [], timedOut: ["x"], maxFailureBreach: true },
    },
    { name: "a mandatory group named by index", strategy: mc(1, { mandatoryDecisionGroups: [{ groupIndex: 1 }] }), groups, want: { toApply: ["a", "b"] } },
    { name: "an unknown mandatory group is ignored", strategy: mc(1, { mandatoryDecisionGroups: [{ groupName: "nope" }] }), groups, want: { toApply: ["a"] } },
  ]);
});

describe("ProgressivePerGroup", () => {
  const groups: DecisionGroup[] = [
    { index: 1, name: "", clusters: ["d", "c"] },
    { index: 0, name: "", clusters: ["b", "a"] },
  ];
  const ppg = (extra: Record<string, unknown> = {}): RolloutStrategy => ({ type: "ProgressivePerGroup", progressivePerGroup: extra });
  run([
    { name: "the first group by index, all its clusters at once", strategy: ppg(), groups, want: { toApply: ["a", "b"] } },
    {
      name: "the next group waits while one of the first is in flight",
      strategy: ppg(),
      groups,
      existing: [succeeded("a"), progressing("b")],
      want: { toApply: [], rollingOut: ["b"] },
    },
    {
      name: "the next group starts when the first succeeded",
      strategy: ppg(),
      groups,
      existing: [succeeded("a"), succeeded("b")],
      want: { toApply: ["c", "d"] },
    },
    {
      name: "maxFailures 0: a failure in the group breaches",
      strategy: ppg(),
      groups,
      existing: [failed("a"), succeeded("b")],
      want: { toApply: [], maxFailureBreach: true },
    },
    {
      name: "maxFailures 1: a failed cluster is tolerated and the next group starts",
      strategy: ppg({ maxFailures: 1 }),
      groups,
      existing: [failed("a"), succeeded("b")],
      want: { toApply: ["c", "d"], maxFailureBreach: false },
    },
    {
      name: "maxFailures 50% per group: one timeout of two is tolerated",
      strategy: ppg({ maxFailures: "50%", progressDeadline: "1m" }),
      groups,
      existing: [progressing("a", 120), succeeded("b")],
      want: { toApply: ["c", "d"], timedOut: ["a"], recheckAfterMs: 60_000 },
    },
    {
      name: "mandatory group by name goes first, then the others by index",
      strategy: ppg({ mandatoryDecisionGroups: [{ groupName: "late" }] }),
      groups: [
        { index: 0, name: "", clusters: ["a"] },
        { index: 1, name: "late", clusters: ["z"] },
      ],
      want: { toApply: ["z"] },
    },
    {
      name: "after the mandatory group, the first other group",
      strategy: ppg({ mandatoryDecisionGroups: [{ groupName: "late" }] }),
      groups: [
        { index: 0, name: "", clusters: ["a"] },
        { index: 1, name: "late", clusters: ["z"] },
        { index: 2, name: "", clusters: ["b"] },
      ],
      existing: [succeeded("z")],
      want: { toApply: ["a"] },
    },
  ]);
});

describe("helpers", () => {
  it("parses durations to milliseconds", () => {
    expect(parseRolloutDuration("1h30m", 0)).toBe(5_400_000);
    expect(parseRolloutDuration("45s", 0)).toBe(45_000);
    expect(parseRolloutDuration("0", 7)).toBe(0);
    expect(parseRolloutDuration("None", Infinity)).toBe(Infinity);
    expect(parseRolloutDuration(undefined, 0)).toBe(0);
    expect(() => parseRolloutDuration("5 minutes", 0)).toThrow();
    // metav1.Duration also takes decimals and sub-second units (Go's time.ParseDuration).
    expect(parseRolloutDuration("1.5s", 0)).toBe(1500);
    expect(parseRolloutDuration("300ms", 0)).toBe(300);
    expect(parseRolloutDuration("2m0.5s", 0)).toBe(120_500);
    expect(() => parseRolloutDuration("10", 0)).toThrow();
  });
  it("sizes like calculateRolloutSize", () => {
    expect(rolloutSize("34%", 3, 3)).toBe(2);
    expect(rolloutSize(-1, 3, 3)).toBe(3);
    expect(rolloutSize(5, 3, 0)).toBe(0);
    expect(rolloutSize(5, 3, 0, true)).toBe(3);
    expect(rolloutSize("bad", 3, 3)).toBe(3);
  });
  it("groupName is tried before groupIndex", () => {
    const gs: DecisionGroup[] = [
      { index: 0, name: "canary", clusters: ["x"] },
      { index: 1, name: "", clusters: ["a"] },
    ];
    expect(mandatoryGroups(gs, [{ groupName: "canary", groupIndex: 1 }]).map((g) => g.index)).toEqual([0]);
    expect(mandatoryGroups(gs, [{ groupIndex: 1 }]).map((g) => g.index)).toEqual([1]);
  });
});

describe("a cluster's status from its work", () => {
  const W = ago(100);
  const t = (secondsAgo: number) => new Date(ago(secondsAgo)).toISOString();
  const c = (type: string, status: string, observedGeneration = 2, ltt = t(50)): WorkCondition => ({
    type,
    status,
    observedGeneration,
    lastTransitionTime: ltt,
  });
  const cases: { name: string; current?: boolean; conditions?: WorkCondition[]; status: string; since?: number }[] = [
    { name: "not at the current content: ToApply", current: false, conditions: [c("Applied", "True"), c("Available", "True")], status: "ToApply" },
    { name: "no report yet: Progressing since written", conditions: [], status: "Progressing", since: W },
    {
      name: "Applied and Available at the generation, no Progressing: Succeeded",
      conditions: [c("Applied", "True", 2, t(60)), c("Available", "True", 2, t(40))],
      status: "Succeeded",
      since: ago(40),
    },
    {
      name: "Progressing=False at the generation: Succeeded",
      conditions: [c("Applied", "True"), c("Available", "True"), c("Progressing", "False", 2, t(10))],
      status: "Succeeded",
      since: ago(10),
    },
    {
      name: "Succeeded since no earlier than the write",
      conditions: [c("Applied", "True", 2, t(500)), c("Available", "True", 2, t(500))],
      status: "Succeeded",
      since: W,
    },
    {
      name: "Progressing=True: Progressing",
      conditions: [c("Applied", "True"), c("Available", "True"), c("Progressing", "True")],
      status: "Progressing",
      since: W,
    },
    { name: "conditions of an older generation: Progressing", conditions: [c("Applied", "True", 1), c("Available", "True", 1)], status: "Progressing" },
    {
      name: "a stale Progressing=False does not count as absent",
      conditions: [c("Applied", "True"), c("Available", "True"), c("Progressing", "False", 1)],
      status: "Progressing",
    },
    {
      name: "Degraded=True at the generation: Failed",
      conditions: [c("Applied", "True"), c("Available", "True"), c("Progressing", "False"), c("Degraded", "True")],
      status: "Failed",
      since: W,
    },
    { name: "Applied=False at the generation: Failed", conditions: [c("Applied", "False")], status: "Failed" },
    { name: "Applied=False of an older generation: Progressing", conditions: [c("Applied", "False", 1)], status: "Progressing" },
  ];
  for (const x of cases) {
    it(x.name, () => {
      const s = workRolloutStatus("a", x.current ?? true, 2, x.conditions, W);
      expect(s.status).toBe(x.status);
      if (x.since !== undefined) expect(s.sinceMs).toBe(x.since);
    });
  }
});
