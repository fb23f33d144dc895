/**
 * The aggregate reads behind the fleet's gauges (src/metrics/fleet.ts turns their rows into
 * series): one D1 batch of grouped queries over the `objects` rows of a few kinds, by the primary
 * key's `resource` prefix, aggregating the conditions in SQL (`json_each`) so that each body is
 * parsed once, inside D1, and only grouped counts or a few columns per object leave it; the
 * cluster sets' counts from `clusterset_counts` (src/store/d1/set-counts.ts).
 */

/** The `resource` keys (`<group>/<plural>`, src/k8s/kind.ts `resourceKey`) of the kinds the gauges read, and the JSON keys they read. */
export interface FleetGaugeKeys {
  clusters: string;
  placements: string;
  works: string;
  replicaSets: string;
  policies: string;
  addOns: string;
  /** ClusterStagedUpdateRuns and StagedUpdateRuns. */
  updateRuns: [string, string];
  /** ClusterApprovalRequests and ApprovalRequests. */
  approvals: [string, string];
  evictions: string;
  /** The annotation whose value is a cluster's edge location. */
  coloAnnotation: string;
  /** The label naming a replica Policy's root (`<rootns>.<rootname>`). */
  rootPolicyLabel: string;
}

/** A row of one of the gauge queries: the columns each query's comment names. */
export type GaugeRow = Record<string, unknown>;

/** The rows of each gauge query (see each field's query in this module). */
export interface FleetGaugeRows {
  /** `loc`, `sig` (each condition's `type US status`, joined by RS), `n`: clusters by edge location and conditions. */
  clusters: GaugeRow[];
  /** `name`, `clusters`: each set's member count. */
  sets: GaugeRow[];
  /** `s`, `r`, `n`: Placements by their PlacementSatisfied status and reason. */
  placements: GaugeRow[];
  /** `n`: the number of works. */
  workCount: GaugeRow[];
  /** `t`, `s`, `n`: works' conditions by type and status. */
  worksByCondition: GaugeRow[];
  /** `ns`, `name`, `summary` (JSON), `rolled`: each ManifestWorkReplicaSet. */
  replicaSets: GaugeRow[];
  /** `ns`, `name`, `root`, `c` (`status.compliant`): each Policy not disabled. */
  policies: GaugeRow[];
  /** `ns`, `name`, `s` (Available's status): each ManagedClusterAddOn. */
  addOns: GaugeRow[];
  /** `ns`, `name`, `gen`, `state`, `conds` (JSON): each staged update run. */
  updateRuns: GaugeRow[];
  /** `ns`, `approved` (0/1), `n`: approval requests. */
  approvals: GaugeRow[];
  /** `name`, `v` (Valid), `x` (Executed), `t` (latest transition): each eviction. */
  evictions: GaugeRow[];
}

/** A condition's field of the object `o` (the condition of type `type`), or null. */
const conditionField = (field: "status" | "reason", type: string) =>
  `(SELECT json_extract(c.value, '$.${field}') FROM json_each(o.body, '$.status.conditions') c WHERE json_extract(c.value, '$.type') = '${type}' LIMIT 1)`;

const BY_CONDITION = `SELECT json_extract(c.value, '$.type') AS t, json_extract(c.value, '$.status') AS s, count(*) AS n
  FROM objects o, json_each(o.body, '$.status.conditions') c
  WHERE o.resource = ?1 GROUP BY t, s`;

/** ?2: the JSON path of the edge location annotation. */
const CLUSTERS = `SELECT loc, sig, count(*) AS n FROM (
  SELECT json_extract(o.body, ?2) AS loc,
    (SELECT group_concat(json_extract(c.value, '$.type') || char(31) || json_extract(c.value, '$.status'), char(30)) FROM json_each(o.body, '$.status.conditions') c) AS sig
  FROM objects o WHERE o.resource = ?1 AND o.namespace = '') GROUP BY loc, sig`;

const PLACEMENTS = `SELECT ${conditionField("status", "PlacementSatisfied")} AS s, ${conditionField("reason", "PlacementSatisfied")} AS r, count(*) AS n
  FROM objects o WHERE o.resource = ?1 GROUP BY s, r`;

const WORK_COUNT = "SELECT count(*) AS n FROM objects WHERE resource = ?1";

const REPLICASETS = `SELECT o.namespace AS ns, o.name AS name, json_extract(o.body, '$.status.summary') AS summary,
  ${conditionField("status", "PlacementRolledOut")} AS rolled
  FROM objects o WHERE o.resource = ?1`;

const SETS = "SELECT name, clusters FROM clusterset_counts";

/** ?2: the JSON path of the root-policy label. */
const POLICIES = `SELECT o.namespace AS ns, o.name AS name, json_extract(o.body, ?2) AS root,
  json_extract(o.body, '$.status.compliant') AS c
  FROM objects o WHERE o.resource = ?1 AND coalesce(json_extract(o.body, '$.spec.disabled'), 0) = 0`;

const ADDONS = `SELECT o.namespace AS ns, o.name AS name, ${conditionField("status", "Available")} AS s
  FROM objects o WHERE o.resource = ?1`;

const UPDATE_RUNS = `SELECT o.namespace AS ns, o.name AS name, json_extract(o.body, '$.metadata.generation') AS gen,
  json_extract(o.body, '$.spec.state') AS state, json_extract(o.body, '$.status.conditions') AS conds
  FROM objects o WHERE o.resource IN (?1, ?2)`;

const APPROVALS = `SELECT o.namespace AS ns, coalesce(${conditionField("status", "Approved")}, '') = 'True' AS approved, count(*) AS n
  FROM objects o WHERE o.resource IN (?1, ?2) GROUP BY ns, approved`;

const EVICTIONS = `SELECT o.name AS name, ${conditionField("status", "Valid")} AS v, ${conditionField("status", "Executed")} AS x,
  (SELECT max(json_extract(c.value, '$.lastTransitionTime')) FROM json_each(o.body, '$.status.conditions') c) AS t
  FROM objects o WHERE o.resource = ?1`;

/** The JSON path (SQLite's) of key `key` of the object at `path`, quoted. */
const keyPath = (path: string, key: string) => `${path}.${JSON.stringify(key)}`;

/**
 * The gauges' rows, in one D1 batch (see {@link FleetGaugeRows}).
 * @throws errors of D1
 */
export async function readFleetGaugeRows(d1: D1Database, keys: FleetGaugeKeys): Promise<FleetGaugeRows> {
  const [clusters, sets, placements, workCount, worksByCondition, replicaSets, policies, addOns, updateRuns, approvals, evictions] = await d1.batch<GaugeRow>([
    d1.prepare(CLUSTERS).bind(keys.clusters, keyPath("$.metadata.annotations", keys.coloAnnotation)),
    d1.prepare(SETS),
    d1.prepare(PLACEMENTS).bind(keys.placements),
    d1.prepare(WORK_COUNT).bind(keys.works),
    d1.prepare(BY_CONDITION).bind(keys.works),
    d1.prepare(REPLICASETS).bind(keys.replicaSets),
    d1.prepare(POLICIES).bind(keys.policies, keyPath("$.metadata.labels", keys.rootPolicyLabel)),
    d1.prepare(ADDONS).bind(keys.addOns),
    d1.prepare(UPDATE_RUNS).bind(...keys.updateRuns),
    d1.prepare(APPROVALS).bind(...keys.approvals),
    d1.prepare(EVICTIONS).bind(keys.evictions),
  ]);
  const rows = (r: D1Result<GaugeRow> | undefined) => r?.results ?? [];
  return {
    clusters: rows(clusters),
    sets: rows(sets),
    placements: rows(placements),
    workCount: rows(workCount),
    worksByCondition: rows(worksByCondition),
    replicaSets: rows(replicaSets),
    policies: rows(policies),
    addOns: rows(addOns),
    updateRuns: rows(updateRuns),
    approvals: rows(approvals),
    evictions: rows(evictions),
  };
}
