/**
 * OCM's decision groups and PlacementDecision pagination
 * (`scheduling_controller.go` `generatePlacementDecisionsAndStatus`).
 *
 * @module
 */

import { clusterMatches, compileClusterSelector, type CompiledClusterSelector } from "./selectors.ts";
import type { DecisionGroup, DecisionGroupStatus, GroupStrategy, PlacementDecisionPage, SchedulingCluster } from "./types.ts";

/** OCM's `maxNumOfClusterDecisions`: ClusterDecisions per PlacementDecision. */
export const MAX_DECISIONS_PER_PLACEMENT_DECISION = 100;
/** Label naming the owning Placement on each PlacementDecision. */
export const PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement";
/** Label carrying the decision group name ("" for the remainder group). */
export const DECISION_GROUP_NAME_LABEL = "cluster.open-cluster-management.io/decision-group-name";
/** Label carrying the 0-based decision group index. */
export const DECISION_GROUP_INDEX_LABEL = "cluster.open-cluster-management.io/decision-group-index";

/** Plain code-unit string order (Go's string order for the ASCII names Kubernetes allows). */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * OCM's `calculateLength`: the number of clusters per decision group.
 *
 * @param value `clustersPerDecisionGroup`: an integer, a percentage string ("25%"), or undefined ("100%").
 * @param total the number of selected clusters.
 * @returns `{length}` where an integer is taken as is and a percentage as
 *   `ceil(pct/100 × total)`, then anything ≤ 0 or > total becomes `total`; or `{error}`
 *   with OCM's message "<value> invalid type: string is not a percentage" for a string
 *   without "%" or an unparsable percentage (and, Flotilla's addition, a non-integer number).
 */
export function calculateGroupLength(value: number | string | undefined, total: number): { length: number } | { error: string } {
  let length = total;
  if (typeof value === "number") {
    if (!Number.isInteger(value)) return { error: `${value} invalid type: string is not a percentage` };
    length = value;
  } else if (typeof value === "string") {
    if (!value.endsWith("%")) return { error: `${value} invalid type: string is not a percentage` };
    const f = parseGoFloat(value.slice(0, -1));
    if (f === undefined) return { error: `${value} invalid type: string is not a percentage` };
    const l = Math.ceil((f / 100) * total);
    // Go's int(NaN or ±Inf) is the minimum int64 on amd64, which the next check maps to total.
    length = Number.isFinite(l) ? l : 0;
  }
  if (length <= 0 || length > total) length = total;
  return { length };
}

// strconv.ParseFloat for the decimal forms plus inf/infinity/nan (hex floats not supported).
function parseGoFloat(s: string): number | undefined {
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return Number(s);
  const lower = s.toLowerCase();
  if (/^[+]?(inf|infinity)$/.test(lower)) return Infinity;
  if (/^-(inf|infinity)$/.test(lower)) return -Infinity;
  if (lower === "nan") return Number.NaN;
  return undefined;
}

/** The result of {@link generateDecisionGroups}. */
export interface GroupingResult {
  groups: DecisionGroup[];
  status: DecisionGroupStatus[];
  pages: PlacementDecisionPage[];
  /** Set when the group strategy is misconfigured (OCM reports it with plugin ""). */
  error?: string;
}

/**
 * Groups the selected clusters and pages them into PlacementDecisions, as OCM does:
 * 1. group length L from {@link calculateGroupLength} over the number selected;
 * 2. each `decisionGroups[i]`, in order, takes the still-unassigned selected clusters its
 *    `groupClusterSelector` (labels AND claims) matches;
 * 3. the rest form the unnamed ("") group;
 * 4. each group is sorted by name and chunked by L, every chunk one decision group (0-based
 *    index over all chunks); a group that matched nothing produces no chunk; with no chunk
 *    at all there is one empty "" group;
 * 5. each chunk is split into PlacementDecisions of at most 100, named
 *    `<placement>-decision-<n>` with n counting from 1 across all chunks; an empty chunk
 *    still gets one (empty) PlacementDecision.
 *
 * On a misconfigured strategy OCM keeps the groups built so far (none when the length is
 * invalid) and reports the error; this function does the same.
 *
 * @param selected the selected clusters (any order).
 */
export function generateDecisionGroups(placementName: string, selected: readonly SchedulingCluster[], strategy: GroupStrategy | undefined): GroupingResult {
  const chunks: { name: string; clusters: string[] }[] = [];
  let error: string | undefined;
  const len = calculateGroupLength(strategy?.clustersPerDecisionGroup, selected.length);
  if ("error" in len) {
    error = len.error;
  } else {
    const assigned = new Set<string>();
    for (const g of strategy?.decisionGroups ?? []) {
      let sel: CompiledClusterSelector;
      try {
        sel = compileClusterSelector(g.groupClusterSelector?.labelSelector, g.groupClusterSelector?.claimSelector);
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
        break;
      }
      const matched: string[] = [];
      for (const c of selected) {
        if (assigned.has(c.name) || !clusterMatches(sel, c)) continue;
        matched.push(c.name);
        assigned.add(c.name);
      }
      pushChunks(chunks, g.groupName ?? "", matched, len.length);
    }
    if (error === undefined) {
      const rest: string[] = [];
      for (const c of selected) if (!assigned.has(c.name)) rest.push(c.name);
      pushChunks(chunks, "", rest, len.length);
      if (chunks.length === 0) chunks.push({ name: "", clusters: [] });
    }
  }
  const groups: DecisionGroup[] = [];
  const status: DecisionGroupStatus[] = [];
  const pages: PlacementDecisionPage[] = [];
  let pdIndex = 1;
  chunks.forEach((chunk, groupIndex) => {
    const names: string[] = [];
    for (let start = 0; start === 0 || start < chunk.clusters.length; start += MAX_DECISIONS_PER_PLACEMENT_DECISION) {
      const name = `${placementName}-decision-${pdIndex++}`;
      names.push(name);
      pages.push({
        name,
        labels: {
          [PLACEMENT_LABEL]: placementName,
          [DECISION_GROUP_NAME_LABEL]: chunk.name,
          [DECISION_GROUP_INDEX_LABEL]: String(groupIndex),
        },
        decisions: chunk.clusters.slice(start, start + MAX_DECISIONS_PER_PLACEMENT_DECISION).map((clusterName) => ({ clusterName, reason: "" })),
      });
    }
    groups.push({ groupName: chunk.name, groupIndex, clusters: chunk.clusters, placementDecisions: names });
    status.push({ decisionGroupIndex: groupIndex, decisionGroupName: chunk.name, decisions: [...names], clusterCount: chunk.clusters.length });
  });
  return error === undefined ? { groups, status, pages } : { groups, status, pages, error };
}

function pushChunks(out: { name: string; clusters: string[] }[], name: string, clusters: string[], length: number): void {
  if (clusters.length === 0) return;
  clusters.sort(); // the default sort is plain code-unit order, like compareNames but native
  for (let i = 0; i < clusters.length; i += length) out.push({ name, clusters: clusters.slice(i, i + length) });
}
