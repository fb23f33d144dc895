/**
 * The rollout engine of a ManifestWorkReplicaSet, after OCM's sdk `pkg/apis/cluster/v1alpha1/rollout.go`
 * (../shared/reference/ocm-semantics.md section 4). Pure: no I/O, the time is an argument.
 *
 * Given a placement's decision groups, a rollout strategy and the rollout status of the clusters
 * whose work already carries the template's current content, it says which clusters get the
 * template now and when to look again for time-based transitions (minSuccessTime soak,
 * progressDeadline timeouts). All times are epoch milliseconds; durations in the API are Go
 * duration strings ("30s", "1h30m", "None").
 *
 * @example
 * const r = computeRollout({ type: "Progressive", progressive: { maxConcurrency: 1 } },
 *   [{ index: 0, name: "", clusters: ["a", "b"] }], [], Date.now());
 * // r.toApply = ["a"]
 */
import { canonicalJson } from "../k8s/canonical-json.ts";
import { GO_DURATION, parseGoDuration } from "../k8s/duration.ts";

export { GO_DURATION };

/** OCM's per-cluster rollout statuses (`RolloutStatus`); Skip is never produced here. */
export type RolloutStatus = "ToApply" | "Progressing" | "Succeeded" | "Failed" | "TimeOut";

/**
 * The rollout status of one cluster whose work is at the template's current content.
 * `sinceMs` (epoch ms) is when it entered that status: for Progressing and Failed, when the
 * current template was written to its work (progressDeadline counts from there); for Succeeded,
 * when it became Succeeded (minSuccessTime counts from there).
 */
export interface ClusterRolloutStatus {
  cluster: string;
  status: RolloutStatus;
  sinceMs: number;
}

/** One decision group of a placement: its 0-based index, its name ("" for the remainder) and its clusters. */
export interface DecisionGroup {
  index: number;
  name: string;
  clusters: string[];
}

/** An integer, or a percentage string such as "25%" (Kubernetes IntOrString). */
export type IntOrPercent = number | string;

/** `RolloutConfig` (cluster.open-cluster-management.io/v1alpha1). */
export interface RolloutConfig {
  /** Soak time after success, a Go duration ("0" default). */
  minSuccessTime?: string;
  /** How long a cluster may stay Progressing or Failed before it is TimeOut, a Go duration or "None" (default). */
  progressDeadline?: string;
  /** Failures (Failed or TimeOut) tolerated before the rollout stops, int or percent (default 0). */
  maxFailures?: IntOrPercent;
}

/** `MandatoryDecisionGroup`: `groupName` is tried before `groupIndex`. */
export interface MandatoryDecisionGroup {
  groupName?: string;
  groupIndex?: number;
}

/** `RolloutStrategy` (cluster.open-cluster-management.io/v1alpha1); `type` defaults to All. */
export interface RolloutStrategy {
  type?: "All" | "Progressive" | "ProgressivePerGroup";
  all?: RolloutConfig;
  progressive?: RolloutConfig & { mandatoryDecisionGroups?: MandatoryDecisionGroup[]; maxConcurrency?: IntOrPercent };
  progressivePerGroup?: RolloutConfig & { mandatoryDecisionGroups?: MandatoryDecisionGroup[] };
}

/**
 * The outcome of {@link computeRollout}:
 * - `toApply`: clusters that get the template's current content now (no work yet, or an older
 *   content), in alphabetical order;
 * - `rollingOut`: every cluster in OCM's `ClustersToRollout` (toApply plus those in flight:
 *   Progressing, Failed before its deadline, Succeeded inside minSuccessTime);
 * - `timedOut`: clusters Progressing or Failed past progressDeadline (OCM `ClustersTimeOut`);
 * - `maxFailureBreach`: more failures than maxFailures allows, the rollout stopped;
 * - `recheckAfterMs`: milliseconds from `nowMs` until the earliest time-based transition
 *   (a deadline or a soak ending), absent when none is pending.
 */
export interface RolloutResult {
  toApply: string[];
  rollingOut: string[];
  timedOut: string[];
  maxFailureBreach: boolean;
  recheckAfterMs?: number;
}

/**
 * Parses a rollout duration into milliseconds: a Go duration ({@link GO_DURATION}; OCM's
 * minSuccessTime is a metav1.Duration, its progressDeadline follows the CRD pattern
 * `^(([0-9])+[h|m|s])|None$`, a subset). "None", "" and undefined give `fallback` (Infinity for
 * progressDeadline, 0 for minSuccessTime).
 * @throws Error for any other string
 */
export function parseRolloutDuration(value: string | undefined, fallback: number): number {
  if (value === undefined || value === "" || value === "None") return fallback;
  if (!GO_DURATION.test(value)) throw new Error(`invalid duration ${JSON.stringify(value)}`);
  return parseGoDuration(value);
}

/**
 * OCM's `calculateRolloutSize`: an integer as is, a percentage as `ceil(pct/100 × total)`;
 * a value ≤ 0 or above `total` gives `fallback` (maxConcurrency: total) — for maxFailures
 * (fallback 0) Flotilla caps a value above total at total instead, so "tolerate 10" over 3
 * clusters tolerates all 3.
 */
export function rolloutSize(value: IntOrPercent | undefined, total: number, fallback: number, capAtTotal = false): number {
  if (value === undefined) return fallback;
  let n: number;
  if (typeof value === "number") n = Math.trunc(value);
  else {
    const m = /^([0-9]+(?:\.[0-9]+)?)%$/.exec(value);
    if (!m) return fallback;
    n = Math.ceil((Number(m[1]) / 100) * total);
  }
  if (n > total && capAtTotal) return total;
  if (n <= 0 || n > total) return fallback;
  return n;
}

/** Statuses, resolved against the clock: Progressing/Failed past the deadline become TimeOut. */
interface Evaluated {
  cluster: string;
  status: RolloutStatus;
  /** In flight (OCM puts it in ClustersToRollout). */
  inFlight: boolean;
  /** When this cluster's next time-based transition happens (epoch ms), if any. */
  nextAt?: number;
}

function evaluate(s: ClusterRolloutStatus, minSuccessMs: number, deadlineMs: number, nowMs: number): Evaluated {
  switch (s.status) {
    case "ToApply":
      return { cluster: s.cluster, status: "ToApply", inFlight: true };
    case "TimeOut":
      return { cluster: s.cluster, status: "TimeOut", inFlight: false };
    case "Progressing":
    case "Failed": {
      const due = s.sinceMs + deadlineMs;
      if (nowMs >= due) return { cluster: s.cluster, status: "TimeOut", inFlight: false };
      return { cluster: s.cluster, status: s.status, inFlight: true, nextAt: Number.isFinite(due) ? due : undefined };
    }
    case "Succeeded": {
      const soakEnd = s.sinceMs + minSuccessMs;
      if (nowMs < soakEnd) return { cluster: s.cluster, status: "Succeeded", inFlight: true, nextAt: soakEnd };
      return { cluster: s.cluster, status: "Succeeded", inFlight: false };
    }
  }
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Accumulates OCM's RolloutResult while a strategy walks the clusters. */
class Walk {
  rollingOut: string[] = [];
  toApply: string[] = [];
  timedOut: string[] = [];
  nextAt = Infinity;
  constructor(
    private readonly deadlineMs: number,
    private readonly nowMs: number,
  ) {}
  /** OCM `determineRolloutStatus`: files an existing status under rollout or timeout. */
  existing(e: Evaluated): void {
    if (e.status === "ToApply") return this.apply(e.cluster);
    if (e.status === "TimeOut") this.timedOut.push(e.cluster);
    else if (e.inFlight) this.rollingOut.push(e.cluster);
    if (e.nextAt !== undefined && e.nextAt < this.nextAt) this.nextAt = e.nextAt;
  }
  /** A cluster without a work at the current content: it gets the template now. */
  apply(cluster: string): void {
    this.rollingOut.push(cluster);
    this.toApply.push(cluster);
    const due = this.nowMs + this.deadlineMs;
    if (Number.isFinite(due) && due < this.nextAt) this.nextAt = due;
  }
  result(breach: boolean): RolloutResult {
    return {
      toApply: [...this.toApply].sort(byName),
      rollingOut: [...this.rollingOut].sort(byName),
      timedOut: [...this.timedOut].sort(byName),
      maxFailureBreach: breach,
      ...(Number.isFinite(this.nextAt) ? { recheckAfterMs: Math.max(0, this.nextAt - this.nowMs) } : {}),
    };
  }
}

interface Timing {
  minSuccessMs: number;
  deadlineMs: number;
  nowMs: number;
}

/**
 * OCM `progressivePerCluster`: existing statuses in alphabetical order (in-flight ones count
 * toward `size`, failures toward `maxFailures`), then clusters without a current work in
 * alphabetical order until `size` clusters are rolling out. Stops adding on a failure breach.
 */
function perCluster(clusters: string[], size: number, maxFailures: number, existing: Map<string, ClusterRolloutStatus>, t: Timing): RolloutResult {
  const walk = new Walk(t.deadlineMs, t.nowMs);
  const sorted = [...clusters].sort(byName);
  let failures = 0;
  let breach = false;
  for (const c of sorted) {
    const s = existing.get(c);
    if (!s) continue;
    const e = evaluate(s, t.minSuccessMs, t.deadlineMs, t.nowMs);
    walk.existing(e);
    if (e.status === "Failed" || e.status === "TimeOut") {
      failures++;
      breach = failures > maxFailures;
    }
    if (walk.rollingOut.length >= size) return walk.result(breach);
  }
  if (breach) return walk.result(true);
  for (const c of sorted) {
    if (existing.has(c)) continue;
    walk.apply(c);
    if (walk.rollingOut.length >= size) break;
  }
  return walk.result(false);
}

/**
 * OCM `progressivePerGroup`: groups in index order; a group's clusters without a current work
 * are all added at once; the walk stops at the first group that still has clusters rolling out
 * (beyond its failures) or whose failures exceed `maxFailures` (int or % of the group's size).
 */
function perGroup(groups: DecisionGroup[], maxFailures: IntOrPercent, existing: Map<string, ClusterRolloutStatus>, t: Timing): RolloutResult {
  const walk = new Walk(t.deadlineMs, t.nowMs);
  const ordered = [...groups].sort((a, b) => a.index - b.index);
  const inGroups = new Set(ordered.flatMap((g) => g.clusters));
  const resolved = new Map<string, RolloutStatus>();
  for (const c of [...inGroups].sort(byName)) {
    const s = existing.get(c);
    if (!s || s.status === "ToApply") continue;
    const e = evaluate(s, t.minSuccessMs, t.deadlineMs, t.nowMs);
    walk.existing(e);
    resolved.set(c, e.status);
  }
  let totalFailures = 0;
  let breach = false;
  for (const g of ordered) {
    const clusters = [...g.clusters].sort(byName);
    const allowed = rolloutSize(maxFailures, clusters.length, 0, true);
    let groupFailures = 0;
    for (const c of clusters) {
      const status = resolved.get(c);
      if (status !== undefined) {
        if (status === "Failed" || status === "TimeOut") {
          groupFailures++;
          breach = groupFailures > allowed;
        }
        continue;
      }
      walk.apply(c);
    }
    totalFailures += groupFailures;
    if (walk.rollingOut.length - totalFailures > 0 || breach) return walk.result(breach);
  }
  return walk.result(breach);
}

/** The groups a `mandatoryDecisionGroups` list names: by groupName when set, else by groupIndex. */
export function mandatoryGroups(groups: DecisionGroup[], mandatory: MandatoryDecisionGroup[] | undefined): DecisionGroup[] {
  const out = new Set<DecisionGroup>();
  for (const m of mandatory ?? []) {
    for (const g of groups) {
      if (m.groupName ? g.name === m.groupName : m.groupIndex !== undefined && g.index === m.groupIndex) out.add(g);
    }
  }
  return [...out];
}

/**
 * Computes one step of a rollout (OCM `RolloutHandler.GetRolloutCluster`).
 *
 * - All: every decided cluster at once (maxFailures does not hold anything back).
 * - Progressive: mandatory decision groups first (in index order, all their clusters at once,
 *   zero failures tolerated: a failure or timeout there stops the rollout); then the other
 *   clusters in alphabetical order, at most `maxConcurrency` (int or % of them; default all)
 *   in flight, stopping when failures exceed `maxFailures` (int or % of them).
 * - ProgressivePerGroup: mandatory groups first (as above), then each remaining group in index
 *   order, the next one only when the previous has none in flight; `maxFailures` per group.
 *
 * @param groups the placement's decision groups (clusters deduplicated by the caller)
 * @param existing statuses of the clusters whose work carries the current content; clusters
 *   not decided any more are ignored
 * @param nowMs the current time, epoch milliseconds
 * @throws Error when a duration in the strategy does not parse (the API validates them first)
 */
export function computeRollout(strategy: RolloutStrategy | undefined, groups: DecisionGroup[], existing: ClusterRolloutStatus[], nowMs: number): RolloutResult {
  const type = strategy?.type ?? "All";
  const config: RolloutConfig & { mandatoryDecisionGroups?: MandatoryDecisionGroup[]; maxConcurrency?: IntOrPercent } =
    (type === "All" ? strategy?.all : type === "Progressive" ? strategy?.progressive : strategy?.progressivePerGroup) ?? {};
  const t: Timing = {
    minSuccessMs: parseRolloutDuration(config.minSuccessTime, 0),
    deadlineMs: parseRolloutDuration(config.progressDeadline, Infinity),
    nowMs,
  };
  const statuses = new Map(existing.map((s) => [s.cluster, s]));
  const all = [...new Set(groups.flatMap((g) => g.clusters))];
  if (type === "All") return perCluster(all, all.length, all.length, statuses, t);

  const mandatory = mandatoryGroups(groups, config.mandatoryDecisionGroups);
  if (mandatory.length > 0) {
    const r = perGroup(mandatory, 0, statuses, t);
    if (r.rollingOut.length > 0 || r.timedOut.length > 0) return r;
  }
  const mandatoryClusters = new Set(mandatory.flatMap((g) => g.clusters));
  const rest = groups.filter((g) => !mandatory.includes(g)).map((g) => ({ ...g, clusters: g.clusters.filter((c) => !mandatoryClusters.has(c)) }));
  if (type === "ProgressivePerGroup") return perGroup(rest, config.maxFailures ?? 0, statuses, t);
  const clusters = [...new Set(rest.flatMap((g) => g.clusters))];
  const size = rolloutSize(config.maxConcurrency, clusters.length, clusters.length);
  const maxFailures = rolloutSize(config.maxFailures, clusters.length, 0, true);
  return perCluster(clusters, size, maxFailures, statuses, t);
}

/** The conditions of a ManifestWork the rollout reads (metav1.Condition fields). */
export interface WorkCondition {
  type: string;
  status: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

/**
 * A cluster's rollout status from its ManifestWork, with Flotilla's success rule, which never
 * waits for a user-written condition rule (OCM's `clusterRolloutStatusFunc` stays ToApply until a
 * `Progressing` condition exists, so rollouts of templates without one never advance):
 *
 * - `current` false (no work, or its spec is not the template's current content): ToApply;
 * - Degraded=True or Applied=False, at the work's `metadata.generation`: Failed;
 * - Applied=True and Available=True at that generation, and Progressing=False at it (or no
 *   Progressing condition): Succeeded;
 * - otherwise (no report for this generation yet, still progressing): Progressing.
 *
 * A `Progressing` or `Degraded` that the work's `conditionRules` set replaces the agent's native
 * one (agent/src/work/conditions.ts), so a rule such as OCM users write for a Job or a custom
 * resource decides here as it does in OCM.
 *
 * A condition counts only when its `observedGeneration` equals `generation`.
 * `sinceMs`: for Progressing and Failed, `writtenMs` (when the current content was written);
 * for Succeeded, the latest of `writtenMs` and the lastTransitionTime of Applied, Available and
 * Progressing (epoch ms).
 */
export function workRolloutStatus(
  cluster: string,
  current: boolean,
  generation: number,
  conditions: WorkCondition[] | undefined,
  writtenMs: number,
): ClusterRolloutStatus {
  if (!current) return { cluster, status: "ToApply", sinceMs: writtenMs };
  const at = (type: string) => conditions?.find((c) => c.type === type && c.observedGeneration === generation);
  const applied = at("Applied");
  const available = at("Available");
  const progressing = at("Progressing");
  const degraded = at("Degraded");
  if (degraded?.status === "True" || applied?.status === "False") return { cluster, status: "Failed", sinceMs: writtenMs };
  const progressingAbsent = !conditions?.some((c) => c.type === "Progressing");
  if (applied?.status === "True" && available?.status === "True" && (progressing?.status === "False" || progressingAbsent)) {
    let since = writtenMs;
    for (const c of [applied, available, progressing]) {
      const t = c?.lastTransitionTime ? Date.parse(c.lastTransitionTime) : NaN;
      if (Number.isFinite(t) && t > since) since = t;
    }
    return { cluster, status: "Succeeded", sinceMs: since };
  }
  return { cluster, status: "Progressing", sinceMs: writtenMs };
}

/**
 * Annotation on a ManifestWork a ManifestWorkReplicaSet generated: when the controller last wrote
 * the template's content to it (RFC 3339 with milliseconds). progressDeadline counts from there.
 */
export const TEMPLATE_WRITTEN_ANNOTATION = "work.flotilla.dev/template-written-at";

/** A generated ManifestWork as the rollout reads it (the fields of a served ManifestWork). */
export interface RolloutWork {
  metadata: { generation?: number; creationTimestamp?: string; annotations?: Record<string, string> };
  spec?: unknown;
  status?: { conditions?: unknown };
}

/**
 * How a ManifestWorkReplicaSet's clusters stand in one placementRef's rollout: {@link classifyRollout}.
 * - `existing`: the statuses of the clusters whose work carries the template's current content
 *   (what {@link computeRollout} reads);
 * - `rollout`: the step {@link computeRollout} computes from them;
 * - `state`: every decided cluster's status as a person reads it: ToApply (no work, or a work
 *   with an older content), Progressing, Succeeded, Failed, or TimeOut (past progressDeadline);
 * - `succeeded`: how many are Succeeded at the current content (the hub's PlacementRolledOut
 *   message, "<succeeded> of <decided> clusters succeeded", adds these up over the placementRefs).
 */
export interface RolloutClassification {
  existing: ClusterRolloutStatus[];
  rollout: RolloutResult;
  state: Map<string, RolloutStatus>;
  succeeded: number;
}

/**
 * Classifies the clusters of one placementRef of a ManifestWorkReplicaSet: the one function the
 * hub's controller (src/work/replicaset.ts) and the dashboard's rollout page both use, so the two
 * never disagree. A work is at the current content when its spec equals the template (compared
 * as {@link canonicalJson}; `templateJson` is `canonicalJson(template ?? {})`, or per cluster that
 * cluster's template, its overrides applied: src/work/replicaset/overrides.ts); only such a work
 * counts toward the rollout, through {@link workRolloutStatus} (its generation, conditions and
 * {@link TEMPLATE_WRITTEN_ANNOTATION}, else its creationTimestamp, else `nowMs`); any other
 * decided cluster is ToApply, as OCM's `clusterRolloutStatusFunc` says of a work whose spec
 * differs from the template.
 *
 * @param groups the placement's decision groups (the clusters this ref owns)
 * @param works the replica set's works by cluster (namespace)
 * @param specJson a work's spec as canonical JSON (the hub passes a cached one)
 * @throws Error when a duration in the strategy does not parse ({@link computeRollout})
 */
export function classifyRollout(
  strategy: RolloutStrategy | undefined,
  groups: DecisionGroup[],
  works: ReadonlyMap<string, RolloutWork>,
  templateJson: string | ((cluster: string) => string),
  nowMs: number,
  specJson: (w: RolloutWork) => string = (w) => canonicalJson(w.spec ?? {}),
): RolloutClassification {
  const existing: ClusterRolloutStatus[] = [];
  const clusters = [...new Set(groups.flatMap((g) => g.clusters))];
  const wanted = typeof templateJson === "string" ? () => templateJson : templateJson;
  for (const c of clusters) {
    const w = works.get(c);
    if (!w || specJson(w) !== wanted(c)) continue;
    const written = Date.parse(w.metadata.annotations?.[TEMPLATE_WRITTEN_ANNOTATION] ?? w.metadata.creationTimestamp ?? "");
    existing.push(
      workRolloutStatus(c, true, w.metadata.generation ?? 1, w.status?.conditions as WorkCondition[] | undefined, Number.isFinite(written) ? written : nowMs),
    );
  }
  const rollout = computeRollout(strategy, groups, existing, nowMs);
  const state = new Map<string, RolloutStatus>(clusters.map((c) => [c, "ToApply"]));
  for (const s of existing) state.set(s.cluster, s.status);
  for (const c of rollout.timedOut) state.set(c, "TimeOut");
  return { existing, rollout, state, succeeded: existing.filter((s) => s.status === "Succeeded").length };
}
