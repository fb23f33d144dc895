/** The fleet's figures as the hub's `/metrics` (src/metrics) exposes them, for the fleet view's counts. */
import { MC } from "./format.ts";

/** Fleet-wide figures from `/metrics`: the fleet's size, clusters by availability and by edge location. */
export interface FleetCounts {
  total?: number;
  byState: Record<string, number>;
  byColo: Record<string, number>;
}

const STATE_OF: Record<string, string> = { True: "Available", False: "Unavailable", Unknown: "Unknown" };

/**
 * Reads the fleet's figures from the hub's Prometheus text (src/metrics): `acm_managed_cluster_count`
 * (the fleet's size), `flotilla_managed_clusters{condition="ManagedClusterConditionAvailable",status}`
 * (by availability; clusters without the condition yet, e.g. not accepted, count as "No status")
 * and `flotilla_managed_clusters_by_location{location,available}` (by edge location, "" unknown).
 * Null when the text has none of them (a hub without metrics).
 */
export function parseFleetMetrics(text: string): FleetCounts | null {
  const byState: Record<string, number> = {};
  const byColo: Record<string, number> = {};
  let total: number | undefined;
  let found = false;
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s+([\d.eE+-]+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    const v = Number(m[3]);
    if (m[1] === "acm_managed_cluster_count") {
      total = v;
      found = true;
    } else if (m[1] === "flotilla_managed_clusters" && labels.condition === MC.Available && labels.status) {
      const s = STATE_OF[labels.status] ?? labels.status;
      byState[s] = (byState[s] ?? 0) + v;
      found = true;
    } else if (m[1] === "flotilla_managed_clusters_by_location") {
      const colo = labels.location || "unknown";
      byColo[colo] = (byColo[colo] ?? 0) + v;
      found = true;
    }
  }
  if (!found) return null;
  const counted = Object.values(byState).reduce((a, b) => a + b, 0);
  if (total !== undefined && total > counted) byState["No status"] = total - counted;
  return { total, byState, byColo };
}
