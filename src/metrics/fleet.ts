/**
 * The fleet's gauges (src/metrics/families.ts `GAUGES`), counted from D1 at each scrape in one
 * batch of aggregate queries (one round trip): each reads the rows of one kind by the `objects`
 * primary key's `resource` prefix and aggregates the conditions in SQL (`json_each`), parsing each
 * body once, so nothing but grouped counts leaves D1 and no object is parsed in the Worker. ManagedClusterSets' member
 * counts are the kept counts of `clusterset_counts` (src/clusterprofile/set-counts.ts).
 *
 * The figures are the API's: a cluster counted under `condition="ManagedClusterConditionAvailable",
 * status="True"` is one `kubectl get managedclusters` shows with that condition True.
 *
 * @module
 */
import { resourceKey } from "../k8s/kind.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ManifestWorkKind, ManifestWorkReplicaSetKind } from "../kinds/manifestwork.ts";
import { PlacementKind } from "../kinds/placement.ts";
import { COLO_ANNOTATION } from "../audit/event.ts";
import { labelsPart, type Cell, type Labels, type MetricFamily } from "./exposition.ts";
import { GAUGES } from "./families.ts";

/** The annotation with the edge location (Cloudflare colo) a cluster's agent last reached. */
export const CLUSTER_COLO_ANNOTATION = COLO_ANNOTATION;

/** The `summary` counts of a ManifestWorkReplicaSet's status shown per state. */
const SUMMARY_STATES = ["total", "applied", "available", "progressing", "degraded"] as const;

/** Counts per condition type and status over one kind's objects (the works'). */
const BY_CONDITION = `SELECT json_extract(c.value, '$.type') AS t, json_extract(c.value, '$.status') AS s, count(*) AS n
  FROM objects o, json_each(o.body, '$.status.conditions') c
  WHERE o.resource = ?1 GROUP BY t, s`;

/** A condition's field of the object `o` (the condition of type ?2), or null. */
const conditionField = (field: "status" | "reason", type: string) =>
  `(SELECT json_extract(c.value, '$.${field}') FROM json_each(o.body, '$.status.conditions') c WHERE json_extract(c.value, '$.type') = '${type}' LIMIT 1)`;

/**
 * Clusters grouped by edge location and by the list of their conditions' `type` and `status`
 * (`type US status RS type US status ...`, unit and record separators): one parse of each body
 * gives the counts per location, per condition and the total.
 */
const CLUSTERS = `SELECT loc, sig, count(*) AS n FROM (
  SELECT json_extract(o.body, '$.metadata.annotations."${CLUSTER_COLO_ANNOTATION}"') AS loc,
    (SELECT group_concat(json_extract(c.value, '$.type') || char(31) || json_extract(c.value, '$.status'), char(30)) FROM json_each(o.body, '$.status.conditions') c) AS sig
  FROM objects o WHERE o.resource = ?1 AND o.namespace = '') GROUP BY loc, sig`;

const PLACEMENTS = `SELECT ${conditionField("status", "PlacementSatisfied")} AS s, ${conditionField("reason", "PlacementSatisfied")} AS r, count(*) AS n
  FROM objects o WHERE o.resource = ?1 GROUP BY s, r`;

const WORK_COUNT = "SELECT count(*) AS n FROM objects WHERE resource = ?1";

const REPLICASETS = `SELECT o.namespace AS ns, o.name AS name, json_extract(o.body, '$.status.summary') AS summary,
  ${conditionField("status", "PlacementRolledOut")} AS rolled
  FROM objects o WHERE o.resource = ?1`;

const SETS = "SELECT name, clusters FROM clusterset_counts";

function cell(family: MetricFamily, labels: Labels, value: number): Cell {
  return { family: family.name, labels: labelsPart(family.labels, labels), values: [value] };
}

type Row = Record<string, unknown>;
const str = (v: unknown): string => (typeof v === "string" ? v : v === null || v === undefined ? "" : String(v));
const num = (v: unknown): number => (typeof v === "number" ? v : Number(v) || 0);

/**
 * The fleet's gauges, as cells (src/metrics/exposition.ts), from one D1 batch: managed clusters
 * (count; by condition and status; by edge location and availability; by cluster set),
 * placements by PlacementSatisfied, ManifestWorks (count; by condition and status), and each
 * ManifestWorkReplicaSet's rollout summary.
 * @throws errors of D1
 */
export async function fleetGauges(db: D1Database): Promise<Cell[]> {
  const clusters = resourceKey(ManagedClusterKind);
  const works = resourceKey(ManifestWorkKind);
  const [clusterRows, sets, placements, workCount, worksByCondition, replicaSets] = await db.batch<Row>([
    db.prepare(CLUSTERS).bind(clusters),
    db.prepare(SETS),
    db.prepare(PLACEMENTS).bind(resourceKey(PlacementKind)),
    db.prepare(WORK_COUNT).bind(works),
    db.prepare(BY_CONDITION).bind(works),
    db.prepare(REPLICASETS).bind(resourceKey(ManifestWorkReplicaSetKind)),
  ]);
  const out: Cell[] = [];
  let clusterCount = 0;
  const byCondition = new Map<string, number>();
  const byLocation = new Map<string, number>();
  for (const r of clusterRows!.results) {
    const n = num(r.n);
    clusterCount += n;
    let available = "Unknown";
    for (const pair of str(r.sig) ? str(r.sig).split("\u001e") : []) {
      byCondition.set(pair, (byCondition.get(pair) ?? 0) + n);
      const [type, status] = pair.split("\u001f");
      if (type === "ManagedClusterConditionAvailable" && status) available = status;
    }
    const at = `${str(r.loc)}\u001f${available}`;
    byLocation.set(at, (byLocation.get(at) ?? 0) + n);
  }
  out.push(cell(GAUGES.clusterCount, {}, clusterCount));
  for (const [pair, n] of byCondition) {
    const [condition, status] = pair.split("\u001f");
    out.push(cell(GAUGES.clustersByCondition, { condition, status }, n));
  }
  for (const [at, n] of byLocation) {
    const [location, available] = at.split("\u001f");
    out.push(cell(GAUGES.clustersByLocation, { location, available }, n));
  }
  for (const r of sets!.results) out.push(cell(GAUGES.clustersBySet, { clusterset: str(r.name) }, num(r.clusters)));
  for (const r of placements!.results) out.push(cell(GAUGES.placementsBySatisfied, { status: str(r.s) || "Unknown", reason: str(r.r) }, num(r.n)));
  out.push(cell(GAUGES.workCount, {}, num(workCount!.results[0]?.n)));
  for (const r of worksByCondition!.results) out.push(cell(GAUGES.worksByCondition, { condition: str(r.t), status: str(r.s) }, num(r.n)));
  for (const r of replicaSets!.results) {
    let summary: Record<string, unknown>;
    try {
      summary = (JSON.parse(str(r.summary) || "{}") as Record<string, unknown> | null) ?? {};
    } catch {
      summary = {};
    }
    const at = { namespace: str(r.ns), name: str(r.name) };
    for (const state of SUMMARY_STATES) out.push(cell(GAUGES.rolloutClusters, { ...at, state }, num(summary[state])));
    out.push(cell(GAUGES.rolloutComplete, at, r.rolled === "True" ? 1 : 0));
  }
  return out;
}
