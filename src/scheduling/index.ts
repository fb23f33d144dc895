/**
 * Flotilla's pure Placement scheduling core (OCM semantics). Entry point: {@link schedule}.
 *
 * @module
 */

export { schedule, eligibleClusterSets, prioritizerNames, BUILTIN_PRIORITIZERS, MIN_WEIGHT, MAX_WEIGHT } from "./schedule.ts";
export {
  generateDecisionGroups,
  calculateGroupLength,
  compareNames,
  MAX_DECISIONS_PER_PLACEMENT_DECISION,
  PLACEMENT_LABEL,
  DECISION_GROUP_NAME_LABEL,
  DECISION_GROUP_INDEX_LABEL,
  type GroupingResult,
} from "./grouping.ts";
export { parseQuantity, tryParseQuantity, QuantityError } from "../k8s/quantity.ts";
export { balanceScores, steadyScores, resourceAllocatableScores, addOnScores, MAX_CLUSTER_SCORE } from "./prioritizers.ts";
export {
  validateTolerations,
  toleratedUntil,
  taintToleratedUntil,
  clusterToleratedUntil,
  taintTimeAddedMs,
  NOT_TOLERATED,
  GO_ZERO_TIME_MS,
} from "./tolerations.ts";
export { compileClusterSelector, clusterMatches, managedClusterObject, celScoreLookup, type CompiledClusterSelector } from "./selectors.ts";
export { spreadSelect, validateSpreadConstraints, DEFAULT_MAX_SKEW, DEFAULT_SPREAD_WEIGHT, DEFAULT_WHEN_UNSATISFIABLE } from "./spread.ts";
export type * from "./types.ts";
