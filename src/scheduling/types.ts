/**
 * Plain-data input and output types of the Placement scheduling core.
 *
 * The Placement spec types mirror Open Cluster Management's
 * `cluster.open-cluster-management.io/v1beta1` Placement JSON field for field, so a
 * stored Placement's `spec` can be passed in unchanged. Cluster data is a flattened
 * view of a ManagedCluster (`cluster.open-cluster-management.io/v1`) that the caller
 * builds from the stored object: nothing here reads storage or the clock.
 *
 * @module
 */

/**
 * A Kubernetes `metav1.LabelSelector` as JSON. An absent or empty selector
 * (no `matchLabels` and no `matchExpressions`) selects everything, as
 * `metav1.LabelSelectorAsSelector` does for a non-nil empty selector.
 */
export interface LabelSelector {
  matchLabels?: Readonly<Record<string, string>>;
  matchExpressions?: readonly LabelSelectorRequirement[];
}

/** One `metav1.LabelSelectorRequirement`: `operator` is In, NotIn, Exists or DoesNotExist. */
export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: readonly string[];
}

/**
 * A taint's effect (`cluster.open-cluster-management.io/v1` `Taint.effect`):
 * - `NoSelect`: clusters are not selected unless tolerated, and a cluster that is
 *   already selected is removed at the next schedule;
 * - `NoSelectIfNew`: like NoSelect, but clusters already in the placement's decisions stay;
 * - `PreferNoSelect`: OCM's scheduler ignores it (always passes, no score effect).
 */
export type TaintEffect = "NoSelect" | "PreferNoSelect" | "NoSelectIfNew";

/** A ManagedCluster taint (`spec.taints[]`). */
export interface Taint {
  key: string;
  /** Missing means the empty string. */
  value?: string;
  effect: TaintEffect;
  /**
   * RFC 3339 time the taint was added (`timeAdded`), the start of `tolerationSeconds`.
   * Missing or unparsable means Go's zero time (0001-01-01T00:00:00Z), so any finite
   * `tolerationSeconds` has long expired.
   */
  timeAdded?: string;
}

/**
 * The scheduling view of one ManagedCluster.
 *
 * Cluster names must be unique within one {@link ScheduleInput.clusters} array (not checked).
 */
export interface SchedulingCluster {
  /** `metadata.name`. */
  name: string;
  /** `metadata.labels`; missing means none. */
  labels?: Readonly<Record<string, string>>;
  /** `status.clusterClaims` as name → value; missing means none. */
  claims?: Readonly<Record<string, string>>;
  /** `spec.taints`; missing means none. */
  taints?: readonly Taint[];
  /**
   * `status.allocatable`: resource name (`cpu`, `memory`, …) → Kubernetes quantity
   * string ("4", "3800m", "16Gi", "1e3", "500M", …).
   */
  allocatable?: Readonly<Record<string, string>>;
  /** `status.capacity`, same shape as {@link SchedulingCluster.allocatable}. */
  capacity?: Readonly<Record<string, string>>;
  /** `status.version.kubernetes` (e.g. "v1.30.2"), which CEL selectors read; missing means unknown. */
  kubernetesVersion?: string;
  /** True when `metadata.deletionTimestamp` is set: OCM never schedules to such a cluster. */
  deleting?: boolean;
  /**
   * Names of the ManagedClusterSets this cluster belongs to (by the exclusive
   * `cluster.open-cluster-management.io/clusterset` label or by a set's label selector,
   * including `global`), as computed by the caller.
   */
  clusterSets: readonly string[];
}

/** `ClusterClaimSelector`: only `matchExpressions`, evaluated against the cluster's claims. */
export interface ClaimSelector {
  matchExpressions?: readonly LabelSelectorRequirement[];
}

/** `ClusterSelector.celSelector`: CEL expressions over `managedCluster` (ANDed; src/cel). */
export interface CelSelector {
  celExpressions?: readonly string[];
}

/** `ClusterSelector`: its label, claim and CEL parts are ANDed. */
export interface ClusterSelector {
  labelSelector?: LabelSelector;
  claimSelector?: ClaimSelector;
  celSelector?: CelSelector;
}

/** One `spec.predicates[]` entry; the entries of `spec.predicates` are ORed. */
export interface ClusterPredicate {
  requiredClusterSelector?: ClusterSelector;
}

/** `scoreCoordinate.addOn`: which AddOnPlacementScore (by name) and which score in it. */
export interface AddOnScoreCoordinate {
  resourceName: string;
  scoreName: string;
}

/**
 * `ScoreCoordinate`. `type` defaults to `BuiltIn` (the CRD default). BuiltIn names:
 * `Balance`, `Steady`, `ResourceAllocatableCPU`, `ResourceAllocatableMemory`, and
 * `Spread` (the weight of the spread score, see src/scheduling/spread.ts).
 */
export interface ScoreCoordinate {
  type?: "BuiltIn" | "AddOn";
  builtIn?: string;
  addOn?: AddOnScoreCoordinate;
}

/** `prioritizerPolicy.configurations[]`. `weight` defaults to 1 (the CRD default), range [-10, 10]. */
export interface PrioritizerConfig {
  scoreCoordinate?: ScoreCoordinate;
  weight?: number;
}

/** `spec.prioritizerPolicy`. `mode` defaults to `Additive`. */
export interface PrioritizerPolicy {
  mode?: "Additive" | "Exact";
  configurations?: readonly PrioritizerConfig[];
}

/** `spec.tolerations[]`. `operator` defaults to `Equal`; an empty `effect` matches every effect. */
export interface Toleration {
  key?: string;
  operator?: "Equal" | "Exists";
  value?: string;
  effect?: TaintEffect | "";
  /** Seconds after the taint's `timeAdded` during which it is tolerated; missing means forever. */
  tolerationSeconds?: number | null;
}

/** `groupClusterSelector` of a decision group: label and claim selectors only (no CEL). */
export interface GroupClusterSelector {
  labelSelector?: LabelSelector;
  claimSelector?: ClaimSelector;
}

/** `decisionStrategy.groupStrategy.decisionGroups[]`. */
export interface DecisionGroupSpec {
  groupName: string;
  groupClusterSelector?: GroupClusterSelector;
}

/** `decisionStrategy.groupStrategy`. */
export interface GroupStrategy {
  decisionGroups?: readonly DecisionGroupSpec[];
  /** An integer count or a percentage string such as "25%"; missing means "100%". */
  clustersPerDecisionGroup?: number | string;
}

/**
 * One `spec.spreadPolicy.spreadConstraints[]` term (`SpreadConstraintsTerm`).
 * `maxSkew` defaults to 1 and `whenUnsatisfiable` to `ScheduleAnyway` (the CRD defaults).
 */
export interface SpreadConstraint {
  /** A label key or a cluster claim name, per {@link SpreadConstraint.topologyKeyType}. */
  topologyKey: string;
  topologyKeyType: "Label" | "Claim";
  maxSkew?: number;
  whenUnsatisfiable?: "DoNotSchedule" | "ScheduleAnyway";
}

/** `spec.spreadPolicy`: terms in order of importance (at most 8). */
export interface SpreadPolicy {
  spreadConstraints?: readonly SpreadConstraint[];
}

/** `spec.decisionStrategy`. */
export interface DecisionStrategy {
  groupStrategy?: GroupStrategy;
}

/** `Placement.spec` (v1beta1). Fields the scheduler does not read may be present. */
export interface PlacementSpec {
  /** Restricts the bound ManagedClusterSets; empty or missing means all bound sets. */
  clusterSets?: readonly string[];
  /** Missing (or null) means every feasible cluster. */
  numberOfClusters?: number | null;
  predicates?: readonly ClusterPredicate[];
  prioritizerPolicy?: PrioritizerPolicy;
  tolerations?: readonly Toleration[];
  decisionStrategy?: DecisionStrategy;
  spreadPolicy?: SpreadPolicy;
}

/** An `AddOnPlacementScore` (namespace = cluster name) reduced to what the AddOn prioritizer reads. */
export interface AddOnPlacementScoreInput {
  /** `status.scores[]` as name → value (an int32 in the CRD, range [-100, 100]). */
  scores: Readonly<Record<string, number>>;
  /** RFC 3339 `status.validUntil`; after it the score counts as 0. Missing means valid forever. */
  validUntil?: string;
}

/**
 * Cluster name → count, as a plain object, a Map (a Map is much faster to iterate
 * when it has tens of thousands of entries), or a {@link DecisionCountLookup} that
 * knows its largest count without iterating.
 */
export type DecisionCounts = Readonly<Record<string, number>> | ReadonlyMap<string, number> | DecisionCountLookup;

/**
 * Decision counts kept by an index (the scheduler's view): `countOf` answers one
 * cluster (undefined or ≤ 0 means none) and `maxCount` is the largest count over every
 * cluster, so the Balance prioritizer reads only the clusters it scores.
 */
export interface DecisionCountLookup {
  /** The largest count over every cluster (0 when there is none). */
  readonly maxCount: number;
  /** The count of one cluster; undefined when it has none. */
  countOf(cluster: string): number | undefined;
}

/** Everything {@link schedule} needs for one Placement. */
export interface ScheduleInput {
  /** The Placement: its name (for PlacementDecision names and labels) and its spec. */
  placement: { name: string; spec: PlacementSpec };
  /**
   * Every ManagedCluster the hub knows (deleting ones included: they are skipped as
   * candidates but still read when computing the requeue time of existing decisions),
   * or, with {@link ScheduleInput.eligibleSetsHaveClusters}, a subset of them that holds
   * at least every cluster of an eligible set that can pass the filters and every
   * cluster of `existingDecisions` (for example candidates taken from a label index).
   */
  clusters: readonly SchedulingCluster[];
  /**
   * Set when `clusters` is such a subset: whether any cluster that is not being deleted
   * belongs to an eligible set (what tells OCM's AllManagedClusterSetsEmpty from
   * NoManagedClusterMatched, and whether the predicates are evaluated at all). Unset,
   * it is computed from `clusters`.
   */
  eligibleSetsHaveClusters?: boolean;
  /**
   * Names of the ManagedClusterSets bound to the placement's namespace by a valid
   * ManagedClusterSetBinding (one whose ManagedClusterSet exists; its `Bound` condition
   * is not consulted, as in OCM).
   */
  boundClusterSets: readonly string[];
  /** Cluster names in this placement's current PlacementDecisions (for Steady and NoSelectIfNew). */
  existingDecisions?: readonly string[];
  /**
   * For the Balance prioritizer: cluster name → number of ClusterDecisions naming that
   * cluster in every PlacementDecision of the hub except this placement's own. Entries
   * of 0 or less are treated as absent.
   */
  otherDecisionCounts?: DecisionCounts;
  /** cluster name → AddOnPlacementScore name (`resourceName`) → the score object. */
  addOnPlacementScores?: Readonly<Record<string, Readonly<Record<string, AddOnPlacementScoreInput>>>>;
}

/** The outcome code of a scheduling run, as OCM's `framework.Status` codes (Error cannot happen here). */
export type ScheduleStatusCode = "Success" | "Warning" | "Misconfigured";

/** OCM's `framework.Status`: `plugin` is "Predicate", "TaintToleration", "AddOn/<r>/<s>" or "". */
export interface ScheduleStatus {
  code: ScheduleStatusCode;
  plugin: string;
  message: string;
}

/** A Placement status condition without `lastTransitionTime` (the caller sets it). */
export interface PlacementCondition {
  type: "PlacementSatisfied" | "PlacementMisconfigured";
  status: "True" | "False";
  reason: string;
  message: string;
}

/** One decision group: a chunk of selected clusters, sorted by name. */
export interface DecisionGroup {
  /** `decisionGroups[i].groupName`, or "" for the remainder group. */
  groupName: string;
  /** 0-based index over all chunks. */
  groupIndex: number;
  /** Cluster names in plain code-unit string order. */
  clusters: string[];
  /** Names of the PlacementDecisions holding this group. */
  placementDecisions: string[];
}

/** `status.decisionGroups[]` of the Placement, in the API's JSON shape. */
export interface DecisionGroupStatus {
  decisionGroupIndex: number;
  decisionGroupName: string;
  decisions: string[];
  /** The number of clusters in the group (OCM's JSON name `clusterCount`, Go's `ClustersCount`). */
  clusterCount: number;
}

/** One PlacementDecision object to create or update (at most 100 decisions). */
export interface PlacementDecisionPage {
  /** `<placement>-decision-<n>`, n from 1 across all groups. */
  name: string;
  /**
   * `cluster.open-cluster-management.io/placement`,
   * `cluster.open-cluster-management.io/decision-group-name` and
   * `cluster.open-cluster-management.io/decision-group-index`.
   */
  labels: Record<string, string>;
  /** `status.decisions`; `reason` is always "". */
  decisions: { clusterName: string; reason: string }[];
}

/** The scores one prioritizer gave (only with `explain`). */
export interface PrioritizerResult {
  /** "Balance", "Steady", "ResourceAllocatableCPU", "ResourceAllocatableMemory" or "AddOn/<resourceName>/<scoreName>". */
  name: string;
  weight: number;
  /** cluster → score; clusters the prioritizer gave no score are absent. */
  scores: Record<string, number>;
}

/** Options of {@link schedule}. */
export interface ScheduleOptions {
  /** Also return every prioritizer's per-cluster scores (costly for large fleets). */
  explain?: boolean;
}

/** What {@link schedule} decided for one Placement. */
export interface ScheduleResult {
  /**
   * Selected cluster names in OCM's order: total score descending, then name ascending;
   * with spread constraints, in the order the spread selection picked them.
   */
  decisions: string[];
  /** `status.numberOfSelectedClusters`. */
  numberOfSelectedClusters: number;
  /** `numberOfClusters − selected`, 0 when `numberOfClusters` is unset or scheduling failed. */
  unscheduled: number;
  /** Number of clusters that passed both filters (0 when scheduling failed). */
  numberOfFeasibleClusters: number;
  /** The clusters that passed both filters, in input order (empty when scheduling failed). */
  feasibleClusters: string[];
  /** Total weighted score of each of {@link ScheduleResult.feasibleClusters}, index-aligned. */
  feasibleScores: number[];
  /**
   * Total weighted score (Σ weight × score) of each selected cluster. Scores of every
   * feasible cluster are in {@link ScheduleResult.feasibleScores} (an object keyed by
   * 100,000 names would cost more than the rest of the schedule).
   */
  scores: Record<string, number>;
  /** The prioritizers that ran, in evaluation order, with their weights. */
  prioritizers: { name: string; weight: number }[];
  /** Per-prioritizer scores, only when {@link ScheduleOptions.explain} is set. */
  prioritizerResults?: PrioritizerResult[];
  /** The decision groups (at least one, possibly empty, unless grouping is misconfigured). */
  decisionGroups: DecisionGroup[];
  /** `status.decisionGroups` in API JSON shape. */
  decisionGroupStatus: DecisionGroupStatus[];
  /** The PlacementDecisions that should exist; any other of this placement's should be deleted. */
  placementDecisions: PlacementDecisionPage[];
  /** `[PlacementMisconfigured, PlacementSatisfied]`, in the order OCM sets them. */
  conditions: [PlacementCondition, PlacementCondition];
  /** The final status (Misconfigured, else the last Warning, else Success). */
  status: ScheduleStatus;
  /** Every warning message (expired AddOnPlacementScores), in prioritizer order. */
  warnings: string[];
  /**
   * Epoch milliseconds of the earliest instant at which a temporarily tolerated taint
   * on a cluster in `existingDecisions` stops being tolerated; undefined when none.
   */
  requeueAt?: number;
  /** `requeueAt − now` in milliseconds (always > 0); undefined when `requeueAt` is. */
  requeueAfterMs?: number;
}
