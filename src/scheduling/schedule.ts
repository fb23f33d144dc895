/**
 * The Placement scheduler: OCM's `pluginScheduler.Schedule` plus the parts of
 * `schedulingController.syncPlacement` that compute decisions, groups, PlacementDecision
 * pages, conditions and the requeue time. Pure and deterministic: no I/O, no clock
 * (`now` is an argument), no randomness; where OCM iterates a Go map (prioritizer
 * order) this code uses a fixed order instead.
 *
 * @module
 */

import { compareNames, generateDecisionGroups } from "./grouping.ts";
import { addOnScores, balanceScores, resourceAllocatableScores, steadyScores } from "./prioritizers.ts";
import { celScoreLookup, clusterMatches, compileClusterSelector, type CompiledClusterSelector } from "./selectors.ts";
import { DEFAULT_SPREAD_WEIGHT, spreadSelect, validateSpreadConstraints } from "./spread.ts";
import { clusterToleratedUntil, NOT_TOLERATED, validateTolerations } from "./tolerations.ts";
import type {
  PlacementCondition,
  PlacementSpec,
  PrioritizerResult,
  ScheduleInput,
  ScheduleOptions,
  ScheduleResult,
  ScheduleStatus,
  SchedulingCluster,
  ScoreCoordinate,
} from "./types.ts";

/**
 * The built-in prioritizers. `Spread` (named in the API's ScoreCoordinate docs and OCM's
 * spread-policy design) weighs the spread score of the selection step; it scores nothing
 * in the prioritizer pass.
 */
export const BUILTIN_PRIORITIZERS = ["Balance", "Steady", "ResourceAllocatableCPU", "ResourceAllocatableMemory", "Spread"] as const;

/** Smallest and largest prioritizer weight the Placement CRD accepts. */
export const MIN_WEIGHT = -10;
/** @see MIN_WEIGHT */
export const MAX_WEIGHT = 10;

interface WeightEntry {
  type: "BuiltIn" | "AddOn";
  builtIn: string;
  addOn: ScoreCoordinate["addOn"];
  weight: number;
}

type Scorer = (clusters: readonly SchedulingCluster[]) => { scores: Float64Array; warning?: string };

interface Prioritizer {
  name: string;
  weight: number;
  score: Scorer;
}

class Misconfigured {
  constructor(
    readonly plugin: string,
    readonly message: string,
  ) {}
}

/**
 * OCM's `getWeights` + `mergeWeights`. Additive (or unset) mode starts from
 * `{BuiltIn/Balance: 1, BuiltIn/Steady: 1}` and overrides or adds the spec's entries;
 * Exact uses the spec's entries only. Coordinates are keyed as OCM's Go map keys are:
 * by type and builtIn name when `addOn` is absent (so a later entry replaces an earlier
 * one), and by identity when `addOn` is present (OCM's key holds a pointer, so two AddOn
 * entries never replace each other and both score). Entries keep first-insertion order.
 */
function getWeights(spec: PlacementSpec): WeightEntry[] | Misconfigured {
  const mode = spec.prioritizerPolicy?.mode ?? "";
  const weights = new Map<string, WeightEntry>();
  if (mode === "Additive" || mode === "") {
    weights.set("BuiltIn\0Balance", { type: "BuiltIn", builtIn: "Balance", addOn: undefined, weight: 1 });
    weights.set("BuiltIn\0Steady", { type: "BuiltIn", builtIn: "Steady", addOn: undefined, weight: 1 });
    if ((spec.spreadPolicy?.spreadConstraints?.length ?? 0) > 0) {
      weights.set("BuiltIn\0Spread", { type: "BuiltIn", builtIn: "Spread", addOn: undefined, weight: DEFAULT_SPREAD_WEIGHT });
    }
  } else if (mode !== "Exact") {
    return new Misconfigured("", `incorrect prioritizer policy mode: ${String(mode)}`);
  }
  const configs = spec.prioritizerPolicy?.configurations ?? [];
  for (let i = 0; i < configs.length; i++) {
    const c = configs[i]!;
    const sc = c.scoreCoordinate;
    if (!sc) return new Misconfigured("", "scoreCoordinate field is required");
    const weight = c.weight ?? 1;
    const field = `spec.prioritizerPolicy.configurations[${i}].weight`;
    if (!Number.isInteger(weight)) return new Misconfigured("", `${field} in body must be of type integer: ${JSON.stringify(weight)}`);
    if (weight > MAX_WEIGHT) return new Misconfigured("", `${field} in body should be less than or equal to ${MAX_WEIGHT}`);
    if (weight < MIN_WEIGHT) return new Misconfigured("", `${field} in body should be greater than or equal to ${MIN_WEIGHT}`);
    const type = sc.type === "AddOn" ? "AddOn" : "BuiltIn";
    const builtIn = sc.builtIn ?? "";
    const key = sc.addOn ? `${type}\0${builtIn}\0#${i}` : `${type}\0${builtIn}`;
    weights.set(key, { type, builtIn, addOn: sc.addOn, weight });
  }
  return [...weights.values()];
}

/**
 * OCM's `getPrioritizers`: weight 0 drops an entry; unknown built-ins and empty addOn are
 * Misconfigured. `Spread` is returned apart (its weight applies in the selection step).
 */
function getPrioritizers(
  entries: readonly WeightEntry[],
  input: ScheduleInput,
  existing: ReadonlySet<string>,
  nowMs: number,
): { scorers: Prioritizer[]; spreadWeight: number } | Misconfigured {
  const out: Prioritizer[] = [];
  let spreadWeight = 0;
  for (const e of entries) {
    if (e.weight === 0) continue;
    if (e.type === "BuiltIn") {
      switch (e.builtIn) {
        case "Spread":
          spreadWeight = e.weight;
          break;
        case "Balance":
          out.push({ name: "Balance", weight: e.weight, score: (cs) => ({ scores: balanceScores(cs, input.otherDecisionCounts) }) });
          break;
        case "Steady":
          out.push({ name: "Steady", weight: e.weight, score: (cs) => ({ scores: steadyScores(cs, existing) }) });
          break;
        case "ResourceAllocatableCPU":
          out.push({ name: e.builtIn, weight: e.weight, score: (cs) => ({ scores: resourceAllocatableScores(cs, "cpu") }) });
          break;
        case "ResourceAllocatableMemory":
          out.push({ name: e.builtIn, weight: e.weight, score: (cs) => ({ scores: resourceAllocatableScores(cs, "memory") }) });
          break;
        default:
          return new Misconfigured("", `incorrect builtin prioritizer: ${e.builtIn}`);
      }
    } else {
      const addOn = e.addOn;
      if (!addOn) return new Misconfigured("", "addOn should not be empty");
      out.push({
        name: `AddOn/${addOn.resourceName}/${addOn.scoreName}`,
        weight: e.weight,
        score: (cs) => addOnScores(cs, input.addOnPlacementScores, addOn.resourceName, addOn.scoreName, nowMs),
      });
    }
  }
  return { scorers: out, spreadWeight };
}

/**
 * The prioritizers {@link schedule} runs for a spec, by name ("Balance", "Steady",
 * "ResourceAllocatableCPU", "ResourceAllocatableMemory", "AddOn/<resource>/<score>"), with
 * OCM's weight rules (`getWeights`, `getPrioritizers`: Additive defaults, weight 0 drops
 * one). Lets a caller know what a placement's scores read (the Balance prioritizer reads
 * other placements' decisions, AddOn ones read AddOnPlacementScores and the clock).
 *
 * @returns the names in evaluation order, or undefined when the policy is Misconfigured.
 */
export function prioritizerNames(spec: PlacementSpec): string[] | undefined {
  const weights = getWeights(spec);
  if (weights instanceof Misconfigured) return undefined;
  const out: string[] = [];
  for (const e of weights) {
    if (e.weight === 0) continue;
    if (e.type === "BuiltIn") {
      if (!(BUILTIN_PRIORITIZERS as readonly string[]).includes(e.builtIn)) return undefined;
      if (e.builtIn === "Spread") continue;
      out.push(e.builtIn);
    } else {
      if (!e.addOn) return undefined;
      out.push(`AddOn/${e.addOn.resourceName}/${e.addOn.scoreName}`);
    }
  }
  return out;
}

/**
 * The eligible ManagedClusterSets of a placement (OCM `schedule.go`): the bound sets ∩
 * `spec.clusterSets` (all bound sets when it is empty), de-duplicated and sorted by name.
 */
export function eligibleClusterSets(spec: PlacementSpec, bound: readonly string[]): string[] {
  const boundSet = new Set(bound);
  const wanted = spec.clusterSets && spec.clusterSets.length > 0 ? spec.clusterSets.filter((s) => boundSet.has(s)) : bound;
  return [...new Set(wanted)].sort(compareNames);
}

/**
 * Indices of the best `k` clusters, best first: total score descending, then name
 * ascending. A bounded heap when k is small, a full sort otherwise.
 */
function selectTop(names: readonly string[], total: Float64Array, k: number): number[] {
  const n = names.length;
  const cmp = (a: number, b: number): number => total[b]! - total[a]! || compareNames(names[a]!, names[b]!);
  if (k <= 0) return [];
  if (k * 4 >= n) {
    const all = fullOrder(names, total) ?? Array.from({ length: n }, (_, i) => i).sort(cmp);
    return k < n ? all.slice(0, k) : all;
  }
  // Max-heap on cmp: the root is the worst of the kept k.
  const heap: number[] = [];
  const worse = (a: number, b: number): boolean => cmp(a, b) > 0;
  for (let i = 0; i < n; i++) {
    if (heap.length < k) {
      heap.push(i);
      let j = heap.length - 1;
      while (j > 0) {
        const p = (j - 1) >> 1;
        if (!worse(heap[j]!, heap[p]!)) break;
        [heap[j], heap[p]] = [heap[p]!, heap[j]!];
        j = p;
      }
    } else if (cmp(i, heap[0]!) < 0) {
      heap[0] = i;
      let j = 0;
      for (;;) {
        const l = 2 * j + 1;
        const r = l + 1;
        let m = j;
        if (l < k && worse(heap[l]!, heap[m]!)) m = l;
        if (r < k && worse(heap[r]!, heap[m]!)) m = r;
        if (m === j) break;
        [heap[j], heap[m]] = [heap[m]!, heap[j]!];
        j = m;
      }
    }
  }
  return heap.sort(cmp);
}

/**
 * All indices in selection order, computed as: names in native (code-unit) sort order,
 * then a stable sort by total descending. Much faster than a comparator on names for
 * large fleets. Returns undefined when names are not unique.
 */
function fullOrder(names: readonly string[], total: Float64Array): number[] | undefined {
  const index = new Map<string, number>();
  for (let i = 0; i < names.length; i++) index.set(names[i]!, i);
  if (index.size !== names.length) return undefined;
  const order = [...names].sort().map((name) => index.get(name)!);
  return order.sort((a, b) => total[b]! - total[a]!);
}

interface SchedulerOutcome {
  status: ScheduleStatus;
  selected: SchedulingCluster[];
  unscheduled: number;
  feasible: string[];
  feasibleScores: number[];
  scores: Record<string, number>;
  prioritizers: { name: string; weight: number }[];
  prioritizerResults?: PrioritizerResult[];
  warnings: string[];
  requeueAt?: number;
}

function failed(m: Misconfigured, warnings: string[] = []): SchedulerOutcome {
  return {
    status: { code: "Misconfigured", plugin: m.plugin, message: m.message },
    selected: [],
    unscheduled: 0,
    feasible: [],
    feasibleScores: [],
    scores: {},
    prioritizers: [],
    warnings,
  };
}

/**
 * OCM's `pluginScheduler.Schedule` over the candidate clusters. `available` tells whether
 * the eligible sets have any candidate at all (`candidates` may be a pre-filtered subset).
 */
function runScheduler(
  input: ScheduleInput,
  candidates: readonly SchedulingCluster[],
  available: boolean,
  existing: ReadonlySet<string>,
  nowMs: number,
  explain: boolean,
): SchedulerOutcome {
  const spec = input.placement.spec;
  let filtered: readonly SchedulingCluster[] = candidates;

  // Filter 1: Predicate. Selectors are only built when there is something to filter.
  const predicates = spec.predicates ?? [];
  if (predicates.length > 0 && available) {
    const selectors: CompiledClusterSelector[] = [];
    for (const p of predicates) {
      const rcs = p.requiredClusterSelector;
      try {
        selectors.push(compileClusterSelector(rcs?.labelSelector, rcs?.claimSelector, rcs?.celSelector));
      } catch (e) {
        return failed(new Misconfigured("Predicate", e instanceof Error ? e.message : String(e)));
      }
    }
    const scores = celScoreLookup(input.addOnPlacementScores);
    filtered = filtered.filter((c) => {
      for (const s of selectors) if (clusterMatches(s, c, scores)) return true;
      return false;
    });
  }

  // Filter 2: TaintToleration.
  const tolerations = spec.tolerations ?? [];
  if (filtered.length > 0) {
    const invalid = validateTolerations(tolerations);
    if (invalid !== undefined) return failed(new Misconfigured("TaintToleration", invalid));
    filtered = filtered.filter(
      (c) => !c.taints || c.taints.length === 0 || clusterToleratedUntil(c, tolerations, existing.has(c.name), nowMs) !== NOT_TOLERATED,
    );
  }

  // Prioritize.
  const weights = getWeights(spec);
  if (weights instanceof Misconfigured) return failed(weights);
  const got = getPrioritizers(weights, input, existing, nowMs);
  if (got instanceof Misconfigured) return failed(got);
  const prioritizers = got.scorers;
  const spreadTerms = spec.spreadPolicy?.spreadConstraints ?? [];
  const spreadInvalid = validateSpreadConstraints(spreadTerms);
  if (spreadInvalid !== undefined) return failed(new Misconfigured("Spread", spreadInvalid));

  const n = filtered.length;
  const names = filtered.map((c) => c.name);
  const total = new Float64Array(n);
  const warnings: string[] = [];
  let status: ScheduleStatus = { code: "Success", plugin: "", message: "" };
  const results: PrioritizerResult[] | undefined = explain ? [] : undefined;
  for (const p of prioritizers) {
    const { scores, warning } = p.score(filtered);
    if (warning !== undefined) {
      warnings.push(warning);
      status = { code: "Warning", plugin: p.name, message: warning };
    }
    for (let i = 0; i < n; i++) {
      const s = scores[i]!;
      if (s === s) total[i] = total[i]! + s * p.weight;
    }
    if (results) {
      const rec: Record<string, number> = {};
      for (let i = 0; i < n; i++) if (!Number.isNaN(scores[i]!)) rec[names[i]!] = scores[i]!;
      results.push({ name: p.name, weight: p.weight, scores: rec });
    }
  }

  // Select.
  const wanted = spec.numberOfClusters;
  if (wanted !== undefined && wanted !== null) {
    if (!Number.isInteger(wanted))
      return failed(new Misconfigured("", `spec.numberOfClusters in body must be of type integer: ${JSON.stringify(wanted)}`), warnings);
    if (wanted < 0) return failed(new Misconfigured("", `spec.numberOfClusters in body should be greater than or equal to 0`), warnings);
  }
  const k = wanted === undefined || wanted === null ? n : Math.min(wanted, n);
  const top = spreadTerms.length > 0 ? spreadSelect(filtered, total, k, spreadTerms, got.spreadWeight) : selectTop(names, total, k);
  const selected = top.map((i) => filtered[i]!);
  const scores: Record<string, number> = {};
  for (const i of top) scores[names[i]!] = total[i]! + 0;
  const feasibleScores = Array.from(total, (v) => v + 0);

  // Requeue: the earliest expiry of a temporary toleration on a currently decided cluster.
  let requeueAt = Infinity;
  if (existing.size > 0) {
    for (const c of input.clusters) {
      if (!existing.has(c.name) || !c.taints || c.taints.length === 0) continue;
      const until = clusterToleratedUntil(c, tolerations, true, nowMs);
      if (until !== NOT_TOLERATED && until < requeueAt) requeueAt = until;
    }
  }

  const outcome: SchedulerOutcome = {
    status,
    selected,
    unscheduled: wanted === undefined || wanted === null ? 0 : wanted - selected.length,
    feasible: names,
    feasibleScores,
    scores,
    prioritizers:
      got.spreadWeight !== 0
        ? [...prioritizers.map((p) => ({ name: p.name, weight: p.weight })), { name: "Spread", weight: got.spreadWeight }]
        : prioritizers.map((p) => ({ name: p.name, weight: p.weight })),
    warnings,
  };
  if (results) outcome.prioritizerResults = results;
  if (Number.isFinite(requeueAt)) outcome.requeueAt = requeueAt;
  return outcome;
}

/**
 * OCM's `newSatisfiedCondition`. Its "scheduler Error" row cannot occur in a pure
 * scheduler, and, as in OCM's code, a Misconfigured status does not take that row: a
 * misconfigured schedule selects nothing and so reports NoManagedClusterMatched.
 */
function satisfiedCondition(
  spec: PlacementSpec,
  eligible: readonly string[],
  bindings: number,
  available: boolean,
  selected: number,
  unscheduled: number,
): PlacementCondition {
  const type = "PlacementSatisfied";
  if (bindings === 0)
    return { type, status: "False", reason: "NoManagedClusterSetBindings", message: "No valid ManagedClusterSetBindings found in placement namespace" };
  if (eligible.length === 0) {
    return {
      type,
      status: "False",
      reason: "NoIntersection",
      message: `None of ManagedClusterSets [${(spec.clusterSets ?? []).join(",")}] is bound to placement namespace`,
    };
  }
  if (!available)
    return {
      type,
      status: "False",
      reason: "AllManagedClusterSetsEmpty",
      message: `All ManagedClusterSets [${eligible.join(",")}] have no member ManagedCluster`,
    };
  if (selected === 0) return { type, status: "False", reason: "NoManagedClusterMatched", message: "No ManagedCluster matches any of the cluster predicate" };
  if (unscheduled === 0) return { type, status: "True", reason: "AllDecisionsScheduled", message: "All cluster decisions scheduled" };
  return { type, status: "False", reason: "NotAllDecisionsScheduled", message: `${unscheduled} cluster decisions unscheduled` };
}

/** OCM's `newMisconfiguredCondition`: True with message "<plugin>:<message>" when Misconfigured. */
function misconfiguredCondition(status: ScheduleStatus): PlacementCondition {
  if (status.code === "Misconfigured") {
    return { type: "PlacementMisconfigured", status: "True", reason: "Misconfigured", message: `${status.plugin}:${status.message}` };
  }
  return { type: "PlacementMisconfigured", status: "False", reason: "Succeedconfigured", message: "Placement configurations check pass" };
}

/**
 * Schedules one Placement the way OCM's placement controller does, without I/O.
 *
 * Steps (OCM `schedule.go` and `scheduling_controller.go`):
 * 1. Eligible sets: `boundClusterSets` ∩ `spec.clusterSets` (all bound sets when empty).
 *    Candidates: clusters in any eligible set, minus `deleting` ones.
 * 2. Filters, in order, each skipped when no cluster is left:
 *    - Predicate: `spec.predicates` ORed; inside one, label selector AND claim selector AND
 *      every `celSelector` expression (src/cel: OCM's cluster library, evaluated within OCM's
 *      cost budget; an error or a non-true result is a non-match). An invalid selector or a CEL
 *      expression that does not compile is Misconfigured with the error ("compilation
 *      failed: ..."), as OCM's Predicate plugin reports it.
 *    - TaintToleration: invalid tolerations are Misconfigured; NoSelect needs a toleration
 *      (even for decided clusters); NoSelectIfNew needs one unless the cluster is in
 *      `existingDecisions`; PreferNoSelect is ignored; `tolerationSeconds` counts from the
 *      taint's `timeAdded` and applies to any effect.
 * 3. Prioritizers: Additive (default: Balance 1, Steady 1, overridable) or Exact; weight 0
 *    drops one; weights outside [-10, 10] are Misconfigured (the CRD's bounds, reported with
 *    the apiserver's wording since OCM relies on admission for them); unknown built-ins
 *    are Misconfigured ("incorrect builtin prioritizer: X"). `Spread` (default weight 2 in
 *    Additive mode when `spreadPolicy.spreadConstraints` is set) weighs step 4's spread score.
 *    Every feasible cluster's total is Σ weight × score.
 * 4. Sort by total descending, ties by name ascending (code-unit order); take the first
 *    `numberOfClusters` (all when unset). A negative or non-integer `numberOfClusters` is
 *    Misconfigured (OCM would panic). With `spreadPolicy.spreadConstraints`, the picks are
 *    made one at a time by the spread selection instead (src/scheduling/spread.ts,
 *    `spreadSelect`): DoNotSchedule terms may leave picks unscheduled; invalid terms are
 *    Misconfigured (plugin "Spread").
 * 5. Requeue: the earliest `timeAdded + tolerationSeconds` among taints tolerated only
 *    temporarily on clusters in `existingDecisions` (looked up in all of `clusters`),
 *    returned as `requeueAt` in epoch milliseconds and `requeueAfterMs` (milliseconds
 *    from `now`); the caller should re-run `schedule` then (OCM's `AddAfter`).
 * 6. Decision groups and PlacementDecision pages (see `generateDecisionGroups`).
 * 7. Conditions: PlacementMisconfigured and PlacementSatisfied with OCM's reasons and
 *    messages. A Misconfigured result selects nothing, so (as in OCM's code, whose
 *    condition switch only special-cases Error) PlacementSatisfied then reads
 *    NoManagedClusterMatched unless an earlier row (bindings, intersection, empty sets)
 *    applies. A misconfigured group strategy overrides the scheduler's status.
 *
 * @param input the placement, the fleet and the other placements' decision counts.
 * @param now the current time; only used for toleration and AddOnPlacementScore expiry.
 * @param options `explain` adds per-prioritizer scores.
 * @returns the decisions and everything to write back.
 * @throws never for a bad spec or bad quantities (those are reported as Misconfigured or
 *   ignored); only a TypeError when `input` does not have the declared shape (for
 *   example a cluster without `clusterSets`).
 * @example
 * const r = schedule({ placement: { name: "p", spec: { numberOfClusters: 1 } },
 *   clusters: [{ name: "c1", clusterSets: ["default"] }], boundClusterSets: ["default"] }, new Date());
 * r.decisions; // ["c1"]
 */
export function schedule(input: ScheduleInput, now: Date, options: ScheduleOptions = {}): ScheduleResult {
  const nowMs = now.getTime();
  const spec = input.placement.spec;
  const eligible = eligibleClusterSets(spec, input.boundClusterSets);
  const eligibleSet = new Set(eligible);
  const candidates: SchedulingCluster[] = [];
  if (eligibleSet.size > 0) {
    for (const c of input.clusters) {
      if (c.deleting) continue;
      for (const s of c.clusterSets) {
        if (eligibleSet.has(s)) {
          candidates.push(c);
          break;
        }
      }
    }
  }
  const existing = new Set(input.existingDecisions ?? []);
  const available = eligibleSet.size > 0 && (input.eligibleSetsHaveClusters ?? candidates.length > 0);
  const outcome = runScheduler(input, candidates, available, existing, nowMs, options.explain === true);

  const grouping = generateDecisionGroups(input.placement.name, outcome.selected, spec.decisionStrategy?.groupStrategy);
  const status: ScheduleStatus = grouping.error !== undefined ? { code: "Misconfigured", plugin: "", message: grouping.error } : outcome.status;

  const selectedNames = outcome.selected.map((c) => c.name);
  const result: ScheduleResult = {
    decisions: selectedNames,
    numberOfSelectedClusters: selectedNames.length,
    unscheduled: outcome.unscheduled,
    numberOfFeasibleClusters: outcome.feasible.length,
    feasibleClusters: outcome.feasible,
    feasibleScores: outcome.feasibleScores,
    scores: outcome.scores,
    prioritizers: outcome.prioritizers,
    decisionGroups: grouping.groups,
    decisionGroupStatus: grouping.status,
    placementDecisions: grouping.pages,
    conditions: [
      misconfiguredCondition(status),
      satisfiedCondition(spec, eligible, new Set(input.boundClusterSets).size, available, selectedNames.length, outcome.unscheduled),
    ],
    status,
    warnings: outcome.warnings,
  };
  if (outcome.prioritizerResults) result.prioritizerResults = outcome.prioritizerResults;
  if (outcome.requeueAt !== undefined) {
    result.requeueAt = outcome.requeueAt;
    result.requeueAfterMs = outcome.requeueAt - nowMs;
  }
  return result;
}
