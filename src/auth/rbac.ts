/**
 * Kubernetes RBAC (`rbac.authorization.k8s.io/v1`) evaluated exactly as kube-apiserver does it,
 * as a pure module (no I/O, no platform globals): the request is checked against a snapshot of
 * Roles, ClusterRoles, RoleBindings and ClusterRoleBindings.
 *
 * Semantics sources (facts carried over, not code):
 * - rule matching: `pkg/apis/rbac/v1/evaluation_helpers.go` (VerbMatches, APIGroupMatches,
 *   ResourceMatches with `resource/subresource` and `*\/subresource`, ResourceNameMatches,
 *   NonResourceURLMatches with a trailing `*`) and `plugin/pkg/auth/authorizer/rbac/rbac.go`
 *   (RuleAllows, the "allowed by" reason);
 * - rule resolution: `pkg/registry/rbac/validation/rule.go` (DefaultRuleResolver.VisitRulesFor:
 *   ClusterRoleBindings always, RoleBindings of the request's namespace only; a RoleBinding's
 *   roleRef may name a ClusterRole, whose rules then apply in that namespace only; subjects
 *   User, Group and ServiceAccount, a ServiceAccount subject without a namespace meaning the
 *   binding's namespace and matching the user `system:serviceaccount:NS:NAME`);
 * - the `system:masters` bypass: kube-apiserver's privileged-groups authorizer, ahead of RBAC,
 *   and `pkg/registry/rbac/escalation_check.go` EscalationAllowed;
 * - escalation prevention: `component-helpers/auth/rbac/validation/policy_comparator.go`
 *   (Covers), `pkg/registry/rbac/validation/rule.go` (ConfirmNoEscalation),
 *   `pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased/storage.go`
 *   (the `escalate` and `bind` verbs, `aggregationRule` needing full authority);
 * - aggregation: `pkg/controller/clusterroleaggregation` (an aggregated ClusterRole's rules are
 *   the union of the rules of every other ClusterRole any of its selectors matches);
 * - the built-in roles: `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go` (cluster-admin,
 *   admin, edit, view and the `system:aggregate-to-*` roles behind them, system:discovery,
 *   system:basic-user, system:public-info-viewer), written here for the kinds the hub serves.
 *
 * This module is the evaluator (`RbacAuthorizer`: rule resolution, the escalation checks); the
 * names and types are src/auth/rbac-types.ts, rule matching and covering src/auth/rbac-rules.ts,
 * aggregation src/auth/rbac-aggregation.ts, the built-in roles src/auth/rbac-bootstrap.ts. Wiring
 * (who calls `authorize` for which request, the 403 Status) lives elsewhere; this module only
 * answers.
 *
 * @example
 * const rbac = new RbacAuthorizer({ clusterRoles: BOOTSTRAP_CLUSTER_ROLES, roleBindings: [editInTeamA] });
 * rbac.authorize({ name: "alice", groups: ["system:authenticated"] },
 *   { verb: "create", apiGroup: "cluster.open-cluster-management.io", resource: "placements", namespace: "team-a" });
 * // { allowed: true, reason: 'RBAC: allowed by RoleBinding "alice-edit/team-a" of ClusterRole "edit" to User "alice"' }
 */
import {
  RBAC_GROUP,
  SYSTEM_MASTERS,
  serviceAccountUsername,
  type PolicyRule,
  type Subject,
  type RoleRef,
  type AggregationRule,
  type Role,
  type ClusterRole,
  type RoleBinding,
  type ClusterRoleBinding,
  type UserInfo,
  type RequestAttributes,
  type Decision,
} from "./rbac-types.ts";
import {
  list,
  type PreparedRequest,
  compileRequest,
  CompiledRule,
  compileRule,
  coversRules,
  quoteList,
  compactRuleString,
  compactRules,
} from "./rbac-rules.ts";
import { aggregateClusterRoles } from "./rbac-aggregation.ts";

// ---------------------------------------------------------------------------
// The evaluator
// ---------------------------------------------------------------------------

/** The RBAC objects an evaluator is built from (a consistent read of storage). */
export interface RbacSnapshot {
  roles?: readonly Role[];
  clusterRoles?: readonly ClusterRole[];
  roleBindings?: readonly RoleBinding[];
  clusterRoleBindings?: readonly ClusterRoleBinding[];
}

/** One binding, its role resolved: the rules it grants, or why it grants nothing. */
interface Grant {
  kind: "ClusterRoleBinding" | "RoleBinding";
  binding: RoleBinding;
  /** The binding's namespace; `""` for a ClusterRoleBinding. */
  namespace: string;
  rules: readonly PolicyRule[];
  compiled: readonly CompiledRule[];
  error: string | null;
}

/** Bindings by the subject they name: users (ServiceAccounts by their user name) and groups. */
interface SubjectIndex {
  users: Map<string, Grant[]>;
  groups: Map<string, Grant[]>;
}

function newIndex(): SubjectIndex {
  return { users: new Map(), groups: new Map() };
}

function addTo(map: Map<string, Grant[]>, key: string, g: Grant): void {
  const xs = map.get(key);
  if (!xs) map.set(key, [g]);
  else if (xs[xs.length - 1] !== g) xs.push(g);
}

/** The user name a subject stands for, or null (a ServiceAccount with no namespace at cluster scope, an unknown kind). */
function subjectUser(s: Subject, bindingNamespace: string): string | null {
  if (s.kind === "User") return s.name;
  if (s.kind === "ServiceAccount") {
    const ns = s.namespace || bindingNamespace;
    return ns ? serviceAccountUsername(ns, s.name) : null;
  }
  return null;
}

/** Kubernetes' appliesToUser for one subject. */
function subjectApplies(s: Subject, user: UserInfo, bindingNamespace: string): boolean {
  if (s.kind === "Group") return (user.groups ?? []).includes(s.name);
  const u = subjectUser(s, bindingNamespace);
  return u !== null && u === user.name;
}

function describeSubject(s: Subject, bindingNamespace: string): string {
  if (s.kind === "ServiceAccount") return `${s.kind} ${JSON.stringify(`${s.name}/${s.namespace || bindingNamespace}`)}`;
  return `${s.kind} ${JSON.stringify(s.name)}`;
}

/** Kubernetes' aggregate error text: one message as is, several as `[a, b]`. */
function aggregateErrors(errs: readonly string[]): string {
  const uniq = [...new Set(errs)];
  return uniq.length === 1 ? uniq[0]! : `[${uniq.join(", ")}]`;
}

/** The first binding in `grants` with a rule allowing the request; resolution errors are collected. */
function scanGrants(grants: readonly Grant[] | undefined, req: PreparedRequest, errors: string[]): Grant | null {
  if (!grants) return null;
  for (const g of grants) {
    if (g.error !== null) {
      errors.push(g.error);
      continue;
    }
    for (const c of g.compiled) if (c.allows(req)) return g;
  }
  return null;
}

/** The first binding of one index applying to the user (by name, then by each group) that allows the request. */
function scanIndex(idx: SubjectIndex | undefined, user: UserInfo, req: PreparedRequest, errors: string[]): Grant | null {
  if (!idx) return null;
  const own = scanGrants(idx.users.get(user.name), req, errors);
  if (own !== null) return own;
  for (const group of user.groups ?? []) {
    const g = scanGrants(idx.groups.get(group), req, errors);
    if (g !== null) return g;
  }
  return null;
}

/** Kubernetes' description of the binding that allowed a request, naming the first subject that applies. */
function describeGrant(g: Grant, user: UserInfo): string {
  const s = (g.binding.subjects ?? []).find((x) => subjectApplies(x, user, g.namespace));
  const who = s ? describeSubject(s, g.namespace) : "";
  const name = g.kind === "RoleBinding" ? `${g.binding.metadata.name}/${g.namespace}` : g.binding.metadata.name;
  return `${g.kind} ${JSON.stringify(name)} of ${g.binding.roleRef.kind} ${JSON.stringify(g.binding.roleRef.name)} to ${who}`;
}

/** The rules of a SelfSubjectRulesReview (`authorization.k8s.io/v1` SubjectRulesReviewStatus). */
export interface RulesReview {
  resourceRules: { verbs: string[]; apiGroups: string[]; resources: string[]; resourceNames: string[] }[];
  nonResourceRules: { verbs: string[]; nonResourceURLs: string[] }[];
  incomplete: boolean;
  evaluationError: string;
}

/** A Role or ClusterRole create or update, for {@link RbacAuthorizer.checkRoleEscalation}. */
export interface RoleWrite {
  kind: "Role" | "ClusterRole";
  name: string;
  /** The Role's namespace; absent or `""` for a ClusterRole. */
  namespace?: string;
  /** The rules the object will hold. */
  rules: readonly PolicyRule[];
  /** A ClusterRole's new aggregationRule. */
  aggregationRule?: AggregationRule | null;
  /** On update, the stored ClusterRole's aggregationRule (changing or removing one needs full authority too). */
  oldAggregationRule?: AggregationRule | null;
}

/** A RoleBinding or ClusterRoleBinding create or update, for {@link RbacAuthorizer.checkBindingEscalation}. */
export interface BindingWrite {
  /** The RoleBinding's namespace; `""` for a ClusterRoleBinding. */
  namespace: string;
  roleRef: RoleRef;
}

/** cluster-admin's rules: what setting an aggregationRule requires (Kubernetes' `fullAuthority`). */
const FULL_AUTHORITY: readonly PolicyRule[] = [
  { verbs: ["*"], apiGroups: ["*"], resources: ["*"] },
  { verbs: ["*"], nonResourceURLs: ["*"] },
];

function hasAggregationRule(a: AggregationRule | null | undefined): boolean {
  return !!a && (a.clusterRoleSelectors ?? []).length > 0;
}

/**
 * The RBAC authorizer over one snapshot: ClusterRoles aggregated, roles resolved and bindings
 * indexed by subject (user name, ServiceAccount user name, group; per namespace for
 * RoleBindings) at construction, so that a check looks up only the bindings naming the user or
 * one of their groups. Immutable: build a new one when the RBAC objects change.
 *
 * A check costs a few microseconds with 1,000 roles and 1,000 bindings (`npm run bench:authz`).
 *
 * @example
 * const rbac = new RbacAuthorizer({ clusterRoles: BOOTSTRAP_CLUSTER_ROLES, clusterRoleBindings: BOOTSTRAP_CLUSTER_ROLE_BINDINGS });
 * rbac.authorize({ name: "bob", groups: ["system:authenticated"] }, { verb: "get", path: "/apis" }).allowed // true (system:discovery)
 */
export class RbacAuthorizer {
  private readonly roles = new Map<string, Role>();
  private readonly clusterRules: Map<string, readonly PolicyRule[]>;
  private readonly cluster = newIndex();
  private readonly namespaces = new Map<string, SubjectIndex>();
  private readonly compiled = new WeakMap<PolicyRule, CompiledRule>();
  /** Problems found while building (selectors that do not parse, aggregations that did not settle). */
  readonly buildErrors: readonly string[];

  constructor(snapshot: RbacSnapshot) {
    for (const r of snapshot.roles ?? []) this.roles.set(`${r.metadata.namespace ?? ""}/${r.metadata.name}`, r);
    const agg = aggregateClusterRoles(snapshot.clusterRoles ?? []);
    this.clusterRules = agg.rules;
    this.buildErrors = agg.errors;
    for (const b of snapshot.clusterRoleBindings ?? []) this.index(this.cluster, "ClusterRoleBinding", b, "");
    for (const b of snapshot.roleBindings ?? []) {
      const ns = b.metadata.namespace ?? "";
      if (!ns) continue;
      let idx = this.namespaces.get(ns);
      if (!idx) this.namespaces.set(ns, (idx = newIndex()));
      this.index(idx, "RoleBinding", b, ns);
    }
  }

  private index(idx: SubjectIndex, kind: Grant["kind"], binding: RoleBinding, namespace: string): void {
    const resolved = this.roleRefRules(binding.roleRef, namespace);
    const rules = "rules" in resolved ? resolved.rules : [];
    const grant: Grant = {
      kind,
      binding,
      namespace,
      rules,
      compiled: rules.map((r) => compileRule(r, this.compiled)),
      error: "error" in resolved ? resolved.error : null,
    };
    for (const s of binding.subjects ?? []) {
      if (s.kind === "Group") addTo(idx.groups, s.name, grant);
      else {
        const u = subjectUser(s, namespace);
        if (u !== null) addTo(idx.users, u, grant);
      }
    }
  }

  /**
   * Kubernetes' GetRoleReferenceRules: the rules a roleRef grants in a binding's namespace (`""`
   * for a ClusterRoleBinding). A `Role` is looked up in that namespace, a `ClusterRole` by name
   * (its aggregated rules).
   *
   * @returns `{ rules }`, or `{ error }` with Kubernetes' message
   *   (`clusterrole.rbac.authorization.k8s.io "x" not found`, `unsupported role reference kind: "X"`).
   */
  roleRefRules(roleRef: RoleRef, namespace: string): { rules: readonly PolicyRule[] } | { error: string } {
    if (roleRef.kind === "Role") {
      const role = namespace ? this.roles.get(`${namespace}/${roleRef.name}`) : undefined;
      return role ? { rules: role.rules ?? [] } : { error: `role.${RBAC_GROUP} ${JSON.stringify(roleRef.name)} not found` };
    }
    if (roleRef.kind === "ClusterRole") {
      const rules = this.clusterRules.get(roleRef.name);
      return rules ? { rules } : { error: `clusterrole.${RBAC_GROUP} ${JSON.stringify(roleRef.name)} not found` };
    }
    return { error: `unsupported role reference kind: ${JSON.stringify(roleRef.kind)}` };
  }

  /** A ClusterRole's effective rules (aggregated), or undefined when there is no such ClusterRole. */
  clusterRoleRules(name: string): readonly PolicyRule[] | undefined {
    return this.clusterRules.get(name);
  }

  /**
   * Authorizes a request as kube-apiserver's `--authorization-mode=RBAC` does: a member of
   * `system:masters` is allowed everything; otherwise the request is allowed when one rule of a
   * ClusterRoleBinding applying to the user, or of a RoleBinding in the request's namespace
   * applying to the user, allows it ({@link ruleAllows}). Deny by default; there are no deny
   * rules. Non-resource requests and cluster-scoped resources see ClusterRoleBindings only.
   *
   * @example
   * rbac.authorize({ name: "alice" }, { verb: "get", apiGroup: "", resource: "secrets", namespace: "team-b", name: "s" })
   * // { allowed: false, reason: "" }
   */
  authorize(user: UserInfo, attrs: RequestAttributes): Decision {
    if ((user.groups ?? []).includes(SYSTEM_MASTERS)) return { allowed: true, reason: "" };
    const req = compileRequest(attrs);
    const errors: string[] = [];
    let hit = scanIndex(this.cluster, user, req, errors);
    if (hit === null && req.namespace) hit = scanIndex(this.namespaces.get(req.namespace), user, req, errors);
    if (hit !== null) return { allowed: true, reason: `RBAC: allowed by ${describeGrant(hit, user)}` };
    return { allowed: false, reason: errors.length ? `RBAC: ${aggregateErrors(errors)}` : "" };
  }

  /** Every binding of one index that applies to the user (by name, then by each group), each once. */
  private applying(idx: SubjectIndex | undefined, user: UserInfo, seen: Set<Grant>, out: Grant[]): void {
    if (!idx) return;
    const take = (xs: Grant[] | undefined): void => {
      for (const g of xs ?? []) {
        if (!seen.has(g)) {
          seen.add(g);
          out.push(g);
        }
      }
    };
    take(idx.users.get(user.name));
    for (const group of user.groups ?? []) take(idx.groups.get(group));
  }

  /**
   * Kubernetes' RulesFor: every rule granted to the user in `namespace` (`""`: cluster-wide only),
   * ClusterRoleBindings' first, each binding once, in index order; `errors` names the roles
   * bindings refer to that do not exist (the rules found are still valid: RBAC only adds).
   */
  rulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; errors: string[] } {
    const rules: PolicyRule[] = [];
    const errors: string[] = [];
    const seen = new Set<Grant>();
    const grants: Grant[] = [];
    this.applying(this.cluster, user, seen, grants);
    if (namespace) this.applying(this.namespaces.get(namespace), user, seen, grants);
    for (const g of grants) {
      if (g.error !== null) errors.push(g.error);
      else rules.push(...g.rules);
    }
    return { rules, errors };
  }

  /**
   * What a SelfSubjectRulesReview answers for the user in `namespace`: the rules with resources
   * as resourceRules, those with nonResourceURLs as nonResourceRules (a rule with both appears in
   * both), `incomplete: false` (RBAC lists everything it grants) and the resolution errors.
   * `system:masters` members get cluster-admin's rules through the bootstrap binding, as in
   * Kubernetes, not through the bypass.
   */
  rulesReview(user: UserInfo, namespace: string): RulesReview {
    const { rules, errors } = this.rulesFor(user, namespace);
    const out: RulesReview = { resourceRules: [], nonResourceRules: [], incomplete: false, evaluationError: errors.length ? aggregateErrors(errors) : "" };
    for (const r of rules) {
      if (list(r.resources).length > 0) {
        out.resourceRules.push({
          verbs: [...list(r.verbs)],
          apiGroups: [...list(r.apiGroups)],
          resources: [...list(r.resources)],
          resourceNames: [...list(r.resourceNames)],
        });
      }
      if (list(r.nonResourceURLs).length > 0) out.nonResourceRules.push({ verbs: [...list(r.verbs)], nonResourceURLs: [...list(r.nonResourceURLs)] });
    }
    return out;
  }

  /**
   * Kubernetes' ConfirmNoEscalation: allowed when the user's rules in `namespace` ({@link rulesFor})
   * cover `rules` ({@link coversRules}). The denial's reason is Kubernetes' message:
   * `user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions
   * not currently held:` then one compacted missing rule per line, sorted.
   */
  confirmNoEscalation(user: UserInfo, namespace: string, rules: readonly PolicyRule[]): Decision {
    const own = this.rulesFor(user, namespace);
    const { covered, uncovered } = coversRules(own.rules, rules);
    if (covered) return { allowed: true, reason: "" };
    const missing = [...new Set(compactRules(uncovered).map(compactRuleString))].sort();
    let msg = `user ${JSON.stringify(user.name)} (groups=${quoteList(user.groups ?? [])}) is attempting to grant RBAC permissions not currently held:\n${missing.join("\n")}`;
    if (own.errors.length) msg += `; resolution errors: [${own.errors.join(" ")}]`;
    return { allowed: false, reason: msg };
  }

  /**
   * Whether the user may create or update a Role or ClusterRole with these rules (Kubernetes'
   * policy-based role storage): yes for `system:masters`; yes with the `escalate` verb on
   * `roles` / `clusterroles` (that name, that namespace); otherwise only if the user already holds
   * every rule, at the object's scope (the Role's namespace, or cluster-wide for a ClusterRole).
   * A ClusterRole that sets, changes or drops an `aggregationRule` without `escalate` needs full
   * authority (cluster-admin's rules): reason `must have cluster-admin privileges to use the
   * aggregationRule`. The caller turns a denial into a 403 on the object (and skips the check
   * for an update that only changes garbage-collection fields, as Kubernetes does).
   */
  checkRoleEscalation(user: UserInfo, write: RoleWrite): Decision {
    if ((user.groups ?? []).includes(SYSTEM_MASTERS)) return { allowed: true, reason: "" };
    const namespace = write.kind === "Role" ? (write.namespace ?? "") : "";
    const resource = write.kind === "Role" ? "roles" : "clusterroles";
    if (this.authorize(user, { verb: "escalate", apiGroup: RBAC_GROUP, apiVersion: "*", resource, name: write.name, namespace }).allowed)
      return { allowed: true, reason: "" };
    const held = this.confirmNoEscalation(user, namespace, write.rules);
    if (!held.allowed) return held;
    if (write.kind === "ClusterRole" && (hasAggregationRule(write.aggregationRule) || hasAggregationRule(write.oldAggregationRule))) {
      if (!this.confirmNoEscalation(user, "", FULL_AUTHORITY).allowed)
        return { allowed: false, reason: "must have cluster-admin privileges to use the aggregationRule" };
    }
    return { allowed: true, reason: "" };
  }

  /**
   * Whether the user may create or update a RoleBinding (in `namespace`) or ClusterRoleBinding
   * (`namespace: ""`) to `roleRef` (Kubernetes' policy-based binding storage): yes for
   * `system:masters`; yes with the `bind` verb on the referenced `roles` / `clusterroles` (by
   * name, checked in the binding's namespace, so a RoleBinding can delegate binding a ClusterRole
   * in one namespace); otherwise only if the user holds every rule the role grants, at the
   * binding's scope. A roleRef that does not resolve is refused with its error.
   */
  checkBindingEscalation(user: UserInfo, write: BindingWrite): Decision {
    if ((user.groups ?? []).includes(SYSTEM_MASTERS)) return { allowed: true, reason: "" };
    const resource = write.roleRef.kind === "ClusterRole" ? "clusterroles" : write.roleRef.kind === "Role" ? "roles" : null;
    if (resource !== null) {
      const bind = this.authorize(user, { verb: "bind", apiGroup: write.roleRef.apiGroup, resource, name: write.roleRef.name, namespace: write.namespace });
      if (bind.allowed) return { allowed: true, reason: "" };
    }
    const resolved = this.roleRefRules(write.roleRef, write.namespace);
    if ("error" in resolved) return { allowed: false, reason: resolved.error };
    return this.confirmNoEscalation(user, write.namespace, resolved.rules);
  }
}
