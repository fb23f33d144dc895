/**
 * The RBAC kinds (`rbac.authorization.k8s.io/v1`): Role and RoleBinding (namespaced),
 * ClusterRole and ClusterRoleBinding (cluster-scoped), stored in D1 and evaluated by
 * src/auth/rbac.ts. Validation as Kubernetes' `pkg/apis/rbac/validation` (facts, not code):
 *
 * - names are path segment names (`system:discovery` is a valid name);
 * - a rule needs verbs; a rule with nonResourceURLs may not name apiGroups or resources and is
 *   refused in a Role; a rule without them needs at least one apiGroup and one resource;
 * - an aggregationRule needs at least one selector, each a valid label selector;
 * - a binding's roleRef names the `rbac.authorization.k8s.io` group, kind `Role` or `ClusterRole`
 *   (`ClusterRole` only in a ClusterRoleBinding) and a name, and cannot change after create;
 * - subjects: `User` and `Group` (apiGroup `rbac.authorization.k8s.io`, defaulted), and
 *   `ServiceAccount` (apiGroup `""`; a namespace required in a ClusterRoleBinding).
 *
 * A ClusterRole's aggregated rules are written to its `rules` by the aggregation hook
 * (src/auth/rbac-store.ts), as Kubernetes' clusterrole-aggregation controller does.
 */
import { ApiError, type StatusCause } from "../k8s/errors.ts";
import type { KindDefinition, WriteContext } from "../k8s/kind.ts";
import { validateLabelSelector } from "../k8s/labels.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { fieldInvalid, fieldNotSupported, fieldRequired, isDNS1123Subdomain, pathSegmentNameErrors, type FieldError } from "../k8s/validation.ts";
import { ClusterRoleSchema, RoleBindingSchema, RoleSchema } from "../auth/rbac-schemas.ts";
import { RBAC_GROUP, type AggregationRule, type Decision, type PolicyRule, type RoleRef, type Subject, type UserInfo } from "../auth/rbac-types.ts";
import { type RbacAuthorizer } from "../auth/rbac.ts";

/**
 * The `counters` row every RBAC write sets to its resourceVersion (`KindDefinition.changeCounter`):
 * the freshness check of the cached authorizer (src/auth/rbac-store.ts).
 */
export const RBAC_CHANGE_COUNTER = 2;

const AGE = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" } as const;

function causes(errs: FieldError[]): StatusCause[] {
  return errs.map((e) => ({ field: e.field, message: e.message, reason: e.reason }));
}

function validateRules(rules: readonly PolicyRule[] | null | undefined, namespaced: boolean): FieldError[] {
  const errs: FieldError[] = [];
  (rules ?? []).forEach((r, i) => {
    const at = `rules[${i}]`;
    if ((r.verbs ?? []).length === 0) errs.push(fieldRequired(`${at}.verbs`, "verbs must contain at least one value"));
    if ((r.nonResourceURLs ?? []).length > 0) {
      if (namespaced) errs.push(fieldInvalid(`${at}.nonResourceURLs`, r.nonResourceURLs, "namespaced rules cannot apply to non-resource URLs"));
      if ((r.apiGroups ?? []).length > 0 || (r.resources ?? []).length > 0)
        errs.push(fieldInvalid(`${at}.nonResourceURLs`, r.nonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"));
      return;
    }
    if ((r.apiGroups ?? []).length === 0) errs.push(fieldRequired(`${at}.apiGroups`, "resource rules must supply at least one api group"));
    if ((r.resources ?? []).length === 0) errs.push(fieldRequired(`${at}.resources`, "resource rules must supply at least one resource"));
  });
  return errs;
}

function validateAggregation(rule: AggregationRule | null | undefined): FieldError[] {
  if (!rule) return [];
  const selectors = rule.clusterRoleSelectors ?? [];
  if (selectors.length === 0)
    return [fieldRequired("aggregationRule.clusterRoleSelectors", "at least one clusterRoleSelector required if aggregationRule is non-nil")];
  return selectors.flatMap((s, i) => validateLabelSelector(s, `aggregationRule.clusterRoleSelectors[${i}]`));
}

function validateRoleRef(ref: RoleRef, namespaced: boolean): FieldError[] {
  const errs: FieldError[] = [];
  if (ref.apiGroup !== RBAC_GROUP) errs.push(fieldNotSupported("roleRef.apiGroup", ref.apiGroup, [RBAC_GROUP]));
  const kinds = namespaced ? ["Role", "ClusterRole"] : ["ClusterRole"];
  if (!kinds.includes(ref.kind)) errs.push(fieldNotSupported("roleRef.kind", ref.kind, kinds));
  if (!ref.name) errs.push(fieldRequired("roleRef.name", ""));
  else for (const m of pathSegmentNameErrors(ref.name)) errs.push(fieldInvalid("roleRef.name", ref.name, m));
  return errs;
}

function validateSubjects(subjects: readonly Subject[] | null | undefined, namespaced: boolean): FieldError[] {
  const errs: FieldError[] = [];
  (subjects ?? []).forEach((s, i) => {
    const at = `subjects[${i}]`;
    if (!s.name) errs.push(fieldRequired(`${at}.name`, ""));
    switch (s.kind) {
      case "ServiceAccount":
        if (s.name) for (const m of isDNS1123Subdomain(s.name)) errs.push(fieldInvalid(`${at}.name`, s.name, m));
        if (s.apiGroup) errs.push(fieldNotSupported(`${at}.apiGroup`, s.apiGroup, [""]));
        if (!namespaced && !s.namespace) errs.push(fieldRequired(`${at}.namespace`, ""));
        break;
      case "User":
      case "Group":
        if (s.apiGroup !== RBAC_GROUP) errs.push(fieldNotSupported(`${at}.apiGroup`, s.apiGroup ?? "", [RBAC_GROUP]));
        break;
      default:
        errs.push(fieldNotSupported(`${at}.kind`, s.kind, ["ServiceAccount", "User", "Group"]));
    }
  });
  return errs;
}

/** Kubernetes' SetDefaults_Subject: `User` and `Group` subjects without an apiGroup get `rbac.authorization.k8s.io`. */
function defaultSubjects(obj: KubeObject): void {
  for (const s of (obj.subjects as Subject[] | null | undefined) ?? []) {
    if ((s.kind === "User" || s.kind === "Group") && !s.apiGroup) s.apiGroup = RBAC_GROUP;
    if (s.kind === "ServiceAccount" && s.apiGroup === undefined) s.apiGroup = "";
  }
}

function roleRefUnchanged(obj: KubeObject, old: KubeObject | undefined): FieldError[] {
  if (!old || JSON.stringify(obj.roleRef) === JSON.stringify(old.roleRef)) return [];
  return [fieldInvalid("roleRef", obj.roleRef, "cannot change roleRef")];
}

const rbacKind = {
  group: RBAC_GROUP,
  version: "v1",
  shortNames: [] as string[],
  hasStatus: false,
  storage: "d1" as const,
  nameIsPathSegment: true,
  changeCounter: RBAC_CHANGE_COUNTER,
};

/** The Role kind (namespaced): rules that apply in its namespace. */
export const RoleKind: KindDefinition = {
  ...rbacKind,
  kind: "Role",
  listKind: "RoleList",
  plural: "roles",
  singular: "role",
  namespaced: true,
  schema: RoleSchema,
  printerColumns: [{ name: "Created At", type: "date", jsonPath: ".metadata.creationTimestamp" }],
  validate: (obj) => causes(validateRules(obj.rules as PolicyRule[] | undefined, true)),
  finalize: (obj, old, ctx) => checkEscalation(RoleKind, obj, old, ctx),
};

/** The ClusterRole kind: rules cluster-wide (or in a namespace, through a RoleBinding), or an aggregationRule. */
export const ClusterRoleKind: KindDefinition = {
  ...rbacKind,
  kind: "ClusterRole",
  listKind: "ClusterRoleList",
  plural: "clusterroles",
  singular: "clusterrole",
  namespaced: false,
  schema: ClusterRoleSchema,
  printerColumns: [{ name: "Created At", type: "date", jsonPath: ".metadata.creationTimestamp" }],
  validate: (obj) =>
    causes([...validateRules(obj.rules as PolicyRule[] | undefined, false), ...validateAggregation(obj.aggregationRule as AggregationRule | undefined)]),
  finalize: (obj, old, ctx) => checkEscalation(ClusterRoleKind, obj, old, ctx),
};

/** The RoleBinding kind (namespaced): grants a Role of its namespace, or a ClusterRole within its namespace. */
export const RoleBindingKind: KindDefinition = {
  ...rbacKind,
  kind: "RoleBinding",
  listKind: "RoleBindingList",
  plural: "rolebindings",
  singular: "rolebinding",
  namespaced: true,
  schema: RoleBindingSchema,
  printerColumns: [{ name: "Role", type: "string", jsonPath: ".roleRef.name" }, AGE],
  defaults: defaultSubjects,
  validate: (obj, old) =>
    causes([...validateRoleRef(obj.roleRef as RoleRef, true), ...validateSubjects(obj.subjects as Subject[] | undefined, true), ...roleRefUnchanged(obj, old)]),
  finalize: (obj, old, ctx) => checkEscalation(RoleBindingKind, obj, old, ctx),
};

/** The ClusterRoleBinding kind: grants a ClusterRole everywhere. */
export const ClusterRoleBindingKind: KindDefinition = {
  ...rbacKind,
  kind: "ClusterRoleBinding",
  listKind: "ClusterRoleBindingList",
  plural: "clusterrolebindings",
  singular: "clusterrolebinding",
  namespaced: false,
  schema: RoleBindingSchema,
  printerColumns: [{ name: "Role", type: "string", jsonPath: ".roleRef.name" }, AGE],
  defaults: defaultSubjects,
  validate: (obj, old) =>
    causes([
      ...validateRoleRef(obj.roleRef as RoleRef, false),
      ...validateSubjects(obj.subjects as Subject[] | undefined, false),
      ...roleRefUnchanged(obj, old),
    ]),
  finalize: (obj, old, ctx) => checkEscalation(ClusterRoleBindingKind, obj, old, ctx),
};

// ---------------------------------------------------------------------------
// Escalation prevention
// ---------------------------------------------------------------------------

/** The key of `WriteContext.extras` under which an API write of an RBAC kind carries its author. */
export const RBAC_AUTHOR_EXTRA = "rbacAuthor";

/** What an RBAC write's escalation check needs: who writes, and the policy as it stands. */
export interface RbacAuthor {
  user: UserInfo;
  authorizer: RbacAuthorizer;
}

/** Kubernetes' IsOnlyMutatingGCFields: the update changes nothing but ownerReferences and finalizers. */
function onlyGCFields(obj: KubeObject, old: KubeObject | null): boolean {
  if (!old) return false;
  const strip = (o: KubeObject) => {
    const {
      ownerReferences: _o,
      finalizers: _f,
      resourceVersion: _r,
      generation: _g,
      managedFields: _m,
      ...meta
    } = o.metadata as unknown as Record<string, unknown>;
    return JSON.stringify({ ...o, metadata: meta });
  };
  return strip(obj) === strip(old);
}

function refused(def: KindDefinition, name: string, reason: string): ApiError {
  return new ApiError(403, "Forbidden", `${def.plural}.${def.group} ${JSON.stringify(name)} is forbidden: ${reason}`, {
    group: def.group,
    kind: def.plural,
    name,
  });
}

/**
 * Kubernetes' escalation prevention of the RBAC registries' create and update (policy-based
 * storage): a Role or ClusterRole may hold only rules its author holds, unless the author has
 * `escalate` on it (setting or changing an aggregationRule needs cluster-admin's authority); a
 * binding may only reference a role whose rules its author holds, unless the author has `bind` on
 * it. Runs as the RBAC kinds' last write step (`KindDefinition.finalize`), on the object about to
 * be stored, when the write came through the API from a user outside `system:masters`
 * ({@link rbacWriteExtras}); updates that change only ownerReferences or finalizers are not checked.
 * @throws ApiError 403 Forbidden worded as Kubernetes' (`... is attempting to grant RBAC
 *   permissions not currently held: ...`)
 */
export function checkEscalation(def: KindDefinition, obj: KubeObject, old: KubeObject | null, ctx: WriteContext): Promise<void> {
  const author = ctx.extras?.[RBAC_AUTHOR_EXTRA] as RbacAuthor | undefined;
  if (!author || obj.metadata.deletionTimestamp || onlyGCFields(obj, old)) return Promise.resolve();
  const name = obj.metadata.name;
  const namespace = obj.metadata.namespace ?? "";
  let d: Decision;
  if (def === RoleKind || def === ClusterRoleKind) {
    d = author.authorizer.checkRoleEscalation(author.user, {
      kind: def === RoleKind ? "Role" : "ClusterRole",
      name,
      namespace,
      rules: (obj.rules as PolicyRule[] | undefined) ?? [],
      aggregationRule: obj.aggregationRule as AggregationRule | undefined,
      oldAggregationRule: old?.aggregationRule as AggregationRule | undefined,
    });
  } else {
    d = author.authorizer.checkBindingEscalation(author.user, { namespace: def === RoleBindingKind ? namespace : "", roleRef: obj.roleRef as RoleRef });
  }
  if (!d.allowed) return Promise.reject(refused(def, name, d.reason));
  return Promise.resolve();
}

/** The four RBAC kinds. */
export const RBAC_KINDS: readonly KindDefinition[] = [ClusterRoleKind, ClusterRoleBindingKind, RoleKind, RoleBindingKind];
