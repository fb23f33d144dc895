/**
 * Kubernetes RBAC's names and types (`rbac.authorization.k8s.io/v1`): the API group and the
 * built-in groups and users, Role/ClusterRole/RoleBinding/ClusterRoleBinding as plain data, the
 * user and request attributes an authorizer judges (k8s.io/apiserver `authorizer.Attributes`), and
 * the 403 Status kube-apiserver answers. Pure; the evaluator is src/auth/rbac.ts, rule matching and
 * covering src/auth/rbac-rules.ts, aggregation src/auth/rbac-aggregation.ts, the built-in roles
 * src/auth/rbac-bootstrap.ts.
 */
import type { z } from "zod";
import { ApiError } from "../k8s/errors.ts";
import type { AggregationRuleSchema, PolicyRuleSchema, RoleRefSchema, SubjectSchema } from "./rbac-schemas.ts";

// ---------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------

/** The RBAC API group, `rbac.authorization.k8s.io`. */
export const RBAC_GROUP = "rbac.authorization.k8s.io";
/** `rbac.authorization.k8s.io/v1`, the apiVersion of the four RBAC kinds. */
export const RBAC_API_VERSION = `${RBAC_GROUP}/v1`;
/** The group whose members may do anything, RBAC or not (Kubernetes `user.SystemPrivilegedGroup`). */
export const SYSTEM_MASTERS = "system:masters";
/** The group of every authenticated user (Kubernetes `user.AllAuthenticated`). */
export const ALL_AUTHENTICATED = "system:authenticated";
/** The group of anonymous requests (Kubernetes `user.AllUnauthenticated`). */
export const ALL_UNAUTHENTICATED = "system:unauthenticated";
/** The group Kubernetes' bootstrap policy gives `system:monitoring` (health paths and `/metrics`). */
export const SYSTEM_MONITORING = "system:monitoring";
/** The group of every ServiceAccount (Kubernetes `serviceaccount.AllServiceAccountsGroup`). */
export const ALL_SERVICE_ACCOUNTS = "system:serviceaccounts";
/** The prefix of a ServiceAccount's user name (`system:serviceaccount:NS:NAME`). */
export const SERVICE_ACCOUNT_USERNAME_PREFIX = "system:serviceaccount:";
/** The label by which `admin` aggregates ClusterRoles (`"true"`). */
export const AGGREGATE_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin";
/** The label by which `edit` aggregates ClusterRoles (`"true"`). */
export const AGGREGATE_TO_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit";
/** The label by which `view` aggregates ClusterRoles (`"true"`). */
export const AGGREGATE_TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view";

/**
 * The user name of a ServiceAccount, as Kubernetes' `serviceaccount.MakeUsername`.
 *
 * @example serviceAccountUsername("ci", "deployer") // "system:serviceaccount:ci:deployer"
 */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `${SERVICE_ACCOUNT_USERNAME_PREFIX}${namespace}:${name}`;
}

/**
 * The groups a ServiceAccount's user is in, as Kubernetes' `serviceaccount.MakeGroupNames`
 * (`system:authenticated` is added by authentication, not here).
 *
 * @example serviceAccountGroups("ci") // ["system:serviceaccounts", "system:serviceaccounts:ci"]
 */
export function serviceAccountGroups(namespace: string): string[] {
  return [ALL_SERVICE_ACCOUNTS, `${ALL_SERVICE_ACCOUNTS}:${namespace}`];
}

// ---------------------------------------------------------------------------
// The RBAC objects (rbac.authorization.k8s.io/v1)
// ---------------------------------------------------------------------------

/** A `rbacv1.PolicyRule` (src/auth/rbac-schemas.ts `PolicyRuleSchema`); `null` lists mean empty. */
export type PolicyRule = z.infer<typeof PolicyRuleSchema>;
/** A `rbacv1.Subject` (src/auth/rbac-schemas.ts `SubjectSchema`). */
export type Subject = z.infer<typeof SubjectSchema>;
/** A `rbacv1.RoleRef` (src/auth/rbac-schemas.ts `RoleRefSchema`). */
export type RoleRef = z.infer<typeof RoleRefSchema>;
/** A `rbacv1.AggregationRule` (src/auth/rbac-schemas.ts `AggregationRuleSchema`). */
export type AggregationRule = z.infer<typeof AggregationRuleSchema>;

/** The metadata the evaluator reads: the name, the namespace (namespaced kinds) and the labels. */
export interface RbacObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string> | null;
  annotations?: Record<string, string> | null;
}

/** A stored Role (namespaced): its rules apply in its own namespace only. */
export interface Role {
  apiVersion?: string;
  kind?: string;
  metadata: RbacObjectMeta;
  rules?: PolicyRule[] | null;
}

/** A stored ClusterRole: `rules`, or an `aggregationRule` whose selected roles' rules replace them. */
export interface ClusterRole extends Role {
  aggregationRule?: AggregationRule | null;
}

/** A stored RoleBinding (namespaced): grants its role's rules to its subjects in its namespace. */
export interface RoleBinding {
  apiVersion?: string;
  kind?: string;
  metadata: RbacObjectMeta;
  subjects?: Subject[] | null;
  roleRef: RoleRef;
}

/** A stored ClusterRoleBinding: grants a ClusterRole's rules to its subjects in every namespace and cluster-wide. */
export type ClusterRoleBinding = RoleBinding;

// ---------------------------------------------------------------------------
// Users and request attributes (k8s.io/apiserver authorizer.Attributes)
// ---------------------------------------------------------------------------

/**
 * An authenticated user (Kubernetes `user.Info`): `name` (e.g. `alice`, `flotilla:admin`,
 * `system:serviceaccount:ci:deployer`), `groups`, an optional `uid` and `extra` values.
 */
export interface UserInfo {
  name: string;
  uid?: string;
  groups?: readonly string[];
  extra?: Readonly<Record<string, readonly string[]>>;
}

/**
 * A resource request (`authorizer.Attributes` with `IsResourceRequest() == true`). `verb` is the
 * Kubernetes verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
 * `deletecollection`, or a special verb such as `bind`, `escalate`, `impersonate`); `apiGroup` is
 * `""` for the core group; `subresource` e.g. `status`; `name` is empty for list, watch and
 * create (a list or watch restricted by `fieldSelector=metadata.name=X` carries `name: X`, as
 * kube-apiserver's RequestInfo does); `namespace` is empty for cluster-scoped resources and for
 * requests across all namespaces.
 */
export interface ResourceAttributes {
  verb: string;
  apiGroup: string;
  apiVersion?: string;
  resource: string;
  subresource?: string;
  name?: string;
  namespace?: string;
}

/** A non-resource request (`/version`, `/openapi/v3`, `/apis`, ...): the verb (`get`, `post`, ...) and the path. */
export interface NonResourceAttributes {
  verb: string;
  path: string;
}

/** What is asked: a resource request or a non-resource request. */
export type RequestAttributes = ResourceAttributes | NonResourceAttributes;

/** True for a non-resource request. */
export function isNonResourceRequest(attrs: RequestAttributes): attrs is NonResourceAttributes {
  return typeof (attrs as NonResourceAttributes).path === "string";
}

/**
 * An authorization answer. `reason` is Kubernetes' text: for an RBAC allow
 * `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to Group "z"`; for a
 * `system:masters` member `""` (the privileged-groups authorizer gives none); for a denial `""`,
 * or `RBAC: <errors>` when a binding that applies to the user names a role that does not exist.
 */
export interface Decision {
  allowed: boolean;
  reason: string;
}

/**
 * The 403 kube-apiserver answers a denied request with (`responsewriters.Forbidden` and
 * `apierrors.NewForbidden`): reason `Forbidden`, details `{group, kind: resource, name}`, and the
 * message `<resource>[.<group>] ["<name>"] is forbidden: User "<user>" cannot <verb> resource
 * "<resource>[/<subresource>]" in API group "<group>" in the namespace "<ns>"` (or `at the
 * cluster scope`), or for a path `forbidden: User "<user>" cannot <verb> path "<path>"`; a
 * non-empty `reason` (the {@link Decision}'s) is appended after `: `.
 *
 * @example
 * forbiddenError({ name: "alice" }, { verb: "create", apiGroup: "cluster.open-cluster-management.io", resource: "placements", namespace: "team-b" }).message
 * // 'placements.cluster.open-cluster-management.io is forbidden: User "alice" cannot create resource "placements" in API group "cluster.open-cluster-management.io" in the namespace "team-b"'
 */
export function forbiddenError(user: UserInfo, attrs: RequestAttributes, reason = ""): ApiError {
  const tail = reason ? `: ${reason}` : "";
  if (isNonResourceRequest(attrs))
    return new ApiError(403, "Forbidden", `forbidden: User ${JSON.stringify(user.name)} cannot ${attrs.verb} path ${JSON.stringify(attrs.path)}${tail}`);
  const combined = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  const scope = attrs.namespace ? `in the namespace ${JSON.stringify(attrs.namespace)}` : "at the cluster scope";
  const why = `User ${JSON.stringify(user.name)} cannot ${attrs.verb} resource ${JSON.stringify(combined)} in API group ${JSON.stringify(attrs.apiGroup)} ${scope}${tail}`;
  const qualified = attrs.apiGroup ? `${attrs.resource}.${attrs.apiGroup}` : attrs.resource;
  const subject = attrs.name ? `${qualified} ${JSON.stringify(attrs.name)}` : qualified;
  const details = { ...(attrs.apiGroup ? { group: attrs.apiGroup } : {}), kind: attrs.resource, ...(attrs.name ? { name: attrs.name } : {}) };
  return new ApiError(403, "Forbidden", `${subject} is forbidden: ${why}`, details);
}
