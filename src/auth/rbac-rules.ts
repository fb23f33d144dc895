/**
 * RBAC rule matching and covering, as kube-apiserver does them, pure: a request against one rule
 * (`pkg/apis/rbac/v1/evaluation_helpers.go`: VerbMatches, APIGroupMatches, ResourceMatches with
 * `resource/subresource` and `*\/subresource`, ResourceNameMatches, NonResourceURLMatches), rules
 * compiled once for the evaluator (src/auth/rbac.ts), and whether one set of rules covers another
 * (`component-helpers/auth/rbac/validation/policy_comparator.go` Covers, used by the escalation
 * checks), with the compact rule strings kube-apiserver's messages show.
 */
import { type PolicyRule, type RequestAttributes, isNonResourceRequest } from "./rbac-types.ts";

// ---------------------------------------------------------------------------
// Rule matching
// ---------------------------------------------------------------------------

/** A rule's list field (`verbs`, `apiGroups`, ...), nil read as empty (Go's nil slice). */
export function list(xs: readonly string[] | null | undefined): readonly string[] {
  return xs ?? [];
}

/**
 * Kubernetes' RuleAllows: whether one rule allows a request. Verbs, API groups and resources
 * match exactly or by `*`; a request for `resource/subresource` matches the rule resource
 * `resource/subresource` or `*\/subresource` (never plain `resource`); `resourceNames`, when set,
 * must contain the request's name; a non-resource path matches exactly, by `*`, or by a rule
 * ending in `*` whose text before the `*` is a prefix of the path. Case-sensitive throughout.
 *
 * @example
 * ruleAllows({ verbs: ["get"], apiGroups: [""], resources: ["pods/status"] },
 *   { verb: "get", apiGroup: "", resource: "pods", subresource: "status" }) // true
 * ruleAllows({ verbs: ["get"], nonResourceURLs: ["/apis/*"] }, { verb: "get", path: "/apis" }) // false
 */
export function ruleAllows(rule: PolicyRule, attrs: RequestAttributes): boolean {
  return compileRule(rule).allows(compileRequest(attrs));
}

/** A request prepared once for matching against many rules. */
export interface PreparedRequest {
  nonResource: boolean;
  verb: string;
  apiGroup: string;
  /** `resource` or `resource/subresource`. */
  combined: string;
  /** `*\/subresource` when there is a subresource, else null. */
  subWildcard: string | null;
  name: string;
  path: string;
  namespace: string;
}

/** `attrs` prepared once (lower-cased forms, `resource/subresource`, `*\/subresource`) for matching against many compiled rules. */
export function compileRequest(attrs: RequestAttributes): PreparedRequest {
  if (isNonResourceRequest(attrs)) {
    return { nonResource: true, verb: attrs.verb, apiGroup: "", combined: "", subWildcard: null, name: "", path: attrs.path, namespace: "" };
  }
  const sub = attrs.subresource ?? "";
  return {
    nonResource: false,
    verb: attrs.verb,
    apiGroup: attrs.apiGroup,
    combined: sub ? `${attrs.resource}/${sub}` : attrs.resource,
    subWildcard: sub ? `*/${sub}` : null,
    name: attrs.name ?? "",
    path: "",
    namespace: attrs.namespace ?? "",
  };
}

/** A rule with its lists turned into sets, so that a check is a few hash lookups. */
export class CompiledRule {
  private readonly anyVerb: boolean;
  private readonly verbs: ReadonlySet<string>;
  private readonly anyGroup: boolean;
  private readonly groups: ReadonlySet<string>;
  private readonly anyResource: boolean;
  private readonly resources: ReadonlySet<string>;
  private readonly names: ReadonlySet<string> | null;
  private readonly anyURL: boolean;
  private readonly urls: ReadonlySet<string>;
  private readonly urlPrefixes: readonly string[];

  constructor(readonly rule: PolicyRule) {
    const verbs = list(rule.verbs);
    this.anyVerb = verbs.includes("*");
    this.verbs = new Set(verbs);
    const groups = list(rule.apiGroups);
    this.anyGroup = groups.includes("*");
    this.groups = new Set(groups);
    const resources = list(rule.resources);
    this.anyResource = resources.includes("*");
    this.resources = new Set(resources);
    const names = list(rule.resourceNames);
    this.names = names.length > 0 ? new Set(names) : null;
    const urls = list(rule.nonResourceURLs);
    this.anyURL = urls.includes("*");
    this.urls = new Set(urls);
    // Go's strings.TrimRight(url, "*") removes every trailing '*'.
    this.urlPrefixes = urls.filter((u) => u.endsWith("*")).map((u) => u.replace(/\*+$/, ""));
  }

  allows(r: PreparedRequest): boolean {
    if (!this.anyVerb && !this.verbs.has(r.verb)) return false;
    if (r.nonResource) {
      if (this.anyURL || this.urls.has(r.path)) return true;
      for (const p of this.urlPrefixes) if (r.path.startsWith(p)) return true;
      return false;
    }
    if (!this.anyGroup && !this.groups.has(r.apiGroup)) return false;
    if (!this.anyResource && !this.resources.has(r.combined) && !(r.subWildcard !== null && this.resources.has(r.subWildcard))) return false;
    return this.names === null || this.names.has(r.name);
  }
}

/** Memoised compilation: the same rule object (shared by every binding to a role) is compiled once. */
export function compileRule(rule: PolicyRule, cache?: WeakMap<PolicyRule, CompiledRule>): CompiledRule {
  const hit = cache?.get(rule);
  if (hit) return hit;
  const c = new CompiledRule(rule);
  cache?.set(rule, c);
  return c;
}

// ---------------------------------------------------------------------------
// Covering (escalation checks)
// ---------------------------------------------------------------------------

/**
 * Kubernetes' BreakdownRule: a rule split into rules of one API group, one resource, one verb and
 * at most one resource name, plus one rule per non-resource URL and verb. A rule with resources
 * but no API groups breaks down to nothing (as in Kubernetes; validation rejects such rules).
 */
export function breakdownRule(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  const verbs = list(rule.verbs);
  const names = list(rule.resourceNames);
  for (const group of list(rule.apiGroups)) {
    for (const resource of list(rule.resources)) {
      for (const verb of verbs) {
        if (names.length > 0) for (const n of names) out.push({ apiGroups: [group], resources: [resource], verbs: [verb], resourceNames: [n] });
        else out.push({ apiGroups: [group], resources: [resource], verbs: [verb] });
      }
    }
  }
  for (const url of list(rule.nonResourceURLs)) for (const verb of verbs) out.push({ nonResourceURLs: [url], verbs: [verb] });
  return out;
}

function hasAll(set: readonly string[], wanted: readonly string[]): boolean {
  return wanted.every((w) => set.includes(w));
}

function resourcesCover(owner: readonly string[], wanted: readonly string[]): boolean {
  if (owner.includes("*") || hasAll(owner, wanted)) return true;
  for (const path of wanted) {
    if (owner.includes(path)) continue;
    const slash = path.indexOf("/");
    if (slash < 0) return false;
    if (!owner.includes(`*/${path.slice(slash + 1)}`)) return false;
  }
  return true;
}

/**
 * Kubernetes' nonResourceURLCovers: whether an owner's non-resource URL covers a path (equal, or
 * the owner ends in `*` and the path starts with the owner without its trailing `*`s).
 *
 * @example nonResourceURLCovers("/api/*", "/api/v1") // true
 * @example nonResourceURLCovers("/api/*", "/api")    // false
 */
export function nonResourceURLCovers(owner: string, path: string): boolean {
  if (owner === path) return true;
  return owner.endsWith("*") && path.startsWith(owner.replace(/\*+$/, ""));
}

function ruleCovers(owner: PolicyRule, sub: PolicyRule): boolean {
  const ownerVerbs = list(owner.verbs);
  const ownerGroups = list(owner.apiGroups);
  const ownerNames = list(owner.resourceNames);
  const subNames = list(sub.resourceNames);
  const verbs = ownerVerbs.includes("*") || hasAll(ownerVerbs, list(sub.verbs));
  const groups = ownerGroups.includes("*") || hasAll(ownerGroups, list(sub.apiGroups));
  const resources = resourcesCover(list(owner.resources), list(sub.resources));
  const urls = list(sub.nonResourceURLs).every((p) => list(owner.nonResourceURLs).some((o) => nonResourceURLCovers(o, p)));
  const names = subNames.length === 0 ? ownerNames.length === 0 : ownerNames.length === 0 || hasAll(ownerNames, subNames);
  return verbs && groups && resources && urls && names;
}

/**
 * Kubernetes' Covers: whether `owner` rules allow everything `servant` rules allow. Each servant
 * rule is broken down ({@link breakdownRule}) and each piece must be covered by one owner rule.
 * A `*` in the servant (verb, group, resource) is covered only by `*` in the owner, an owner's
 * `*\/subresource` covers any `resource/subresource`, an owner without resourceNames covers any
 * names, and an owner with names covers only those names (never "any name").
 *
 * @returns `covered`, and the broken-down servant rules no owner rule covers.
 * @example
 * coversRules([{ verbs: ["*"], apiGroups: [""], resources: ["pods"] }],
 *   [{ verbs: ["get", "list"], apiGroups: [""], resources: ["pods"] }]) // { covered: true, uncovered: [] }
 */
export function coversRules(owner: readonly PolicyRule[], servant: readonly PolicyRule[]): { covered: boolean; uncovered: PolicyRule[] } {
  const uncovered: PolicyRule[] = [];
  for (const rule of servant) for (const sub of breakdownRule(rule)) if (!owner.some((o) => ruleCovers(o, sub))) uncovered.push(sub);
  return { covered: uncovered.length === 0, uncovered };
}

/** A list as Go's `%q` of a slice prints it in kube-apiserver's messages: `["a" "b"]`. */
export function quoteList(xs: readonly string[]): string {
  return `[${xs.map((x) => JSON.stringify(x)).join(" ")}]`;
}

/**
 * Kubernetes' CompactString of a rule, as its escalation messages print it:
 * `{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}` (empty fields left out).
 */
export function compactRuleString(rule: PolicyRule): string {
  const parts: string[] = [];
  if (list(rule.apiGroups).length) parts.push(`APIGroups:${quoteList(list(rule.apiGroups))}`);
  if (list(rule.resources).length) parts.push(`Resources:${quoteList(list(rule.resources))}`);
  if (list(rule.nonResourceURLs).length) parts.push(`NonResourceURLs:${quoteList(list(rule.nonResourceURLs))}`);
  if (list(rule.resourceNames).length) parts.push(`ResourceNames:${quoteList(list(rule.resourceNames))}`);
  if (list(rule.verbs).length) parts.push(`Verbs:${quoteList(list(rule.verbs))}`);
  return `{${parts.join(", ")}}`;
}

/** Kubernetes' CompactRules: rules of one group and one resource (and nothing else) merged by verb. */
export function compactRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const out: PolicyRule[] = [];
  const simple = new Map<string, { apiGroups: string[]; resources: string[]; verbs: string[] }>();
  for (const r of rules) {
    const groups = list(r.apiGroups);
    const resources = list(r.resources);
    if (list(r.resourceNames).length === 0 && list(r.nonResourceURLs).length === 0 && groups.length === 1 && resources.length === 1) {
      const key = JSON.stringify([groups[0], resources[0]]);
      const hit = simple.get(key);
      if (hit) hit.verbs.push(...list(r.verbs));
      else simple.set(key, { apiGroups: [...groups], resources: [...resources], verbs: [...list(r.verbs)] });
    } else out.push(r);
  }
  return [...out, ...simple.values()];
}
