/**
 * ClusterRole aggregation (`pkg/controller/clusterroleaggregation`): an aggregated ClusterRole's
 * rules are the union of the rules of every other ClusterRole any of its selectors matches. Pure;
 * the evaluator (src/auth/rbac.ts) resolves roles through it.
 */
import { fromLabelSelector, matches, type LabelSelectorRequirementSet } from "../k8s/labels.ts";
import { type PolicyRule, type ClusterRole } from "./rbac-types.ts";
import { list } from "./rbac-rules.ts";

// ---------------------------------------------------------------------------
// Aggregation
// ---------------------------------------------------------------------------

/** Semantic identity of a rule (nil and empty lists alike), for de-duplication. */
function ruleKey(r: PolicyRule): string {
  return JSON.stringify([list(r.verbs), list(r.apiGroups), list(r.resources), list(r.resourceNames), list(r.nonResourceURLs)]);
}

/** The outcome of aggregation: each ClusterRole's effective rules, and what could not be resolved. */
export interface AggregationResult {
  /** Every ClusterRole by name with its effective rules (an aggregated one's are the union). */
  rules: Map<string, readonly PolicyRule[]>;
  /** Selectors that do not parse and aggregations that did not settle, one message each. */
  errors: string[];
}

/**
 * The rules Kubernetes' ClusterRole aggregation controller converges to. A ClusterRole with an
 * `aggregationRule` gets, in place of its own rules, the rules of every other ClusterRole matched
 * by any of its `clusterRoleSelectors` (selectors in order, matches by name, each rule once);
 * an aggregated role that is itself selected contributes its aggregated rules, so `admin` holds
 * `edit` holds `view`. An `aggregationRule` with no selectors yields no rules. A selector that
 * does not parse leaves that role's stored rules (the controller stops on the error). In a cycle
 * of aggregated roles the roles' stored rules are the starting point, as for the controller.
 *
 * @example
 * aggregateClusterRoles([
 *   { metadata: { name: "view" }, aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [AGGREGATE_TO_VIEW]: "true" } }] } },
 *   { metadata: { name: "x", labels: { [AGGREGATE_TO_VIEW]: "true" } }, rules: [r] },
 * ]).rules.get("view") // [r]
 */
export function aggregateClusterRoles(clusterRoles: readonly ClusterRole[]): AggregationResult {
  const byName = new Map<string, ClusterRole>();
  for (const cr of clusterRoles) byName.set(cr.metadata.name, cr);
  const sorted = [...byName.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  const rules = new Map<string, readonly PolicyRule[]>();
  const errors: string[] = [];
  /** Each aggregated role's sources, in the controller's order. */
  const sources = new Map<string, string[]>();
  for (const cr of sorted) {
    rules.set(cr.metadata.name, cr.rules ?? []);
    if (!cr.aggregationRule) continue;
    let selectors: LabelSelectorRequirementSet[];
    try {
      selectors = (cr.aggregationRule.clusterRoleSelectors ?? []).map((s, i) => fromLabelSelector(s, `aggregationRule.clusterRoleSelectors[${i}]`));
    } catch (e) {
      errors.push(`clusterrole "${cr.metadata.name}": ${(e as Error).message}`);
      continue;
    }
    const from: string[] = [];
    for (const sel of selectors) for (const other of sorted) if (other !== cr && matches(sel, other.metadata.labels)) from.push(other.metadata.name);
    sources.set(cr.metadata.name, from);
  }
  // Children before parents, so that an acyclic hierarchy settles in one pass.
  const order: string[] = [];
  const state = new Map<string, 1 | 2>();
  const visit = (name: string): void => {
    if (state.has(name)) return;
    state.set(name, 1);
    for (const s of sources.get(name) ?? []) if (sources.has(s)) visit(s);
    state.set(name, 2);
    order.push(name);
  };
  for (const name of sources.keys()) visit(name);
  const union = (name: string): PolicyRule[] => {
    const out: PolicyRule[] = [];
    const seen = new Set<string>();
    for (const s of sources.get(name) ?? []) {
      for (const r of rules.get(s) ?? []) {
        const k = ruleKey(r);
        if (!seen.has(k)) {
          seen.add(k);
          out.push(r);
        }
      }
    }
    return out;
  };
  const same = (a: readonly PolicyRule[], b: readonly PolicyRule[]): boolean => a.length === b.length && a.every((r, i) => ruleKey(r) === ruleKey(b[i]!));
  let settled = false;
  for (let pass = 0; pass <= order.length + 1 && !settled; pass++) {
    settled = true;
    for (const name of order) {
      const next = union(name);
      if (!same(next, rules.get(name) ?? [])) {
        rules.set(name, next);
        settled = false;
      }
    }
  }
  if (!settled) errors.push(`clusterrole aggregation did not settle among: ${order.join(", ")}`);
  return { rules, errors };
}
