/**
 * RBAC against the hub's stored objects: the isolate's cached {@link RbacAuthorizer}, the check
 * every API request passes (src/auth/request.ts), the escalation checks of RBAC writes, the
 * ClusterRole aggregation (as Kubernetes' clusterrole-aggregation controller) and the bootstrap
 * policy's objects (as kube-apiserver's RBAC bootstrap at start).
 *
 * Freshness: every write of an RBAC kind sets the `counters` row {@link RBAC_CHANGE_COUNTER} to
 * its resourceVersion in the write's own D1 batch (`KindDefinition.changeCounter`). Each request
 * that needs RBAC reads that one row by key (one small D1 read) and rebuilds the isolate's
 * authorizer from the four kinds' objects only when it differs from the value the cached
 * authorizer was built at. Since the counter is read before the objects, and a write commits the
 * counter with the object, a Role or binding write is seen by the very next request in any
 * isolate; a `system:masters` request reads nothing (the privileged group is allowed before RBAC).
 */
import { ApiError } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import {
  ClusterRoleBindingKind,
  ClusterRoleKind,
  RBAC_KINDS,
  RBAC_AUTHOR_EXTRA,
  RBAC_CHANGE_COUNTER,
  RoleBindingKind,
  RoleKind,
  type RbacAuthor,
} from "../kinds/rbac.ts";
import { ManifestWorkKind, ManifestWorkReplicaSetKind } from "../kinds/manifestwork.ts";
import { AddOnDeploymentConfigKind, AddOnTemplateKind, ManagedClusterAddOnKind, ManagedClusterAddOnV1beta1Kind } from "../kinds/addon.ts";
import { ADDON_CONFIG_READER_EXTRA, type AddonConfigReader } from "../kinds/addon-admission.ts";
import type { Env } from "../env.ts";
import { featureEnabled } from "../features.ts";
import { NIL_EXECUTOR_VALIDATING_EXTRA } from "../kinds/manifestwork-executor.ts";
import type { AfterCommitHook } from "../store/hooks.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { storageOf } from "../store/storage.ts";
import { aggregateClusterRoles } from "./rbac-aggregation.ts";
import { BOOTSTRAP_CLUSTER_ROLE_BINDINGS, BOOTSTRAP_CLUSTER_ROLES } from "./rbac-bootstrap.ts";
import { coversRules } from "./rbac-rules.ts";
import {
  forbiddenError,
  SYSTEM_MASTERS,
  type AggregationRule,
  type ClusterRole,
  type ClusterRoleBinding,
  type Decision,
  type PolicyRule,
  type RequestAttributes,
  type Role,
  type RoleBinding,
  type UserInfo,
} from "./rbac-types.ts";
import { RbacAuthorizer } from "./rbac.ts";

/** The isolate's authorizer and the change counter's value it was built at. */
let cached: { counter: number; authorizer: RbacAuthorizer } | null = null;

/** True for a member of `system:masters`, whom kube-apiserver allows everything ahead of RBAC. */
export function isPrivileged(user: UserInfo): boolean {
  return (user.groups ?? []).includes(SYSTEM_MASTERS);
}

/**
 * The RBAC authorizer over the stored Roles, ClusterRoles, RoleBindings and ClusterRoleBindings,
 * cached per isolate and rebuilt when the RBAC change counter moved (see the module comment):
 * one D1 read by key per call, plus four list reads when something changed.
 * @throws errors of D1
 */
export async function rbacAuthorizer(env: Env): Promise<RbacAuthorizer> {
  const counter = await storageOf(env).changeCounter(RBAC_CHANGE_COUNTER);
  if (cached && cached.counter === counter) return cached.authorizer;
  const [roles, clusterRoles, roleBindings, clusterRoleBindings] = await Promise.all(
    [RoleKind, ClusterRoleKind, RoleBindingKind, ClusterRoleBindingKind].map(async (def) => (await admittedStoreOf(env, def).list()).items),
  );
  const authorizer = new RbacAuthorizer({
    roles: roles as unknown as Role[],
    clusterRoles: clusterRoles as unknown as ClusterRole[],
    roleBindings: roleBindings as unknown as RoleBinding[],
    clusterRoleBindings: clusterRoleBindings as unknown as ClusterRoleBinding[],
  });
  // A request that read an older counter never replaces a newer authorizer.
  if (!cached || cached.counter <= counter) cached = { counter, authorizer };
  return authorizer;
}

/**
 * Whether `user` may do what `attrs` asks: `system:masters` without any read, else the stored RBAC
 * policy ({@link rbacAuthorizer}).
 * @throws errors of D1
 */
export async function decide(env: Env, user: UserInfo, attrs: RequestAttributes): Promise<Decision> {
  if (isPrivileged(user)) return { allowed: true, reason: "" };
  return (await rbacAuthorizer(env)).authorize(user, attrs);
}

/**
 * Authorizes a request as kube-apiserver does (`system:masters`, then RBAC).
 * @throws ApiError 403 Forbidden worded as kube-apiserver's (src/auth/rbac.ts `forbiddenError`)
 *   when the request is denied; errors of D1
 */
export async function authorizeRequest(env: Env, user: UserInfo, attrs: RequestAttributes): Promise<void> {
  const d = await decide(env, user, attrs);
  if (!d.allowed) throw forbiddenError(user, attrs, d.reason);
}

// ---------------------------------------------------------------------------
// Escalation prevention on RBAC writes
// ---------------------------------------------------------------------------

/**
 * The extras an API write of kind `def` passes to the write path so that the checks needing its
 * author run: the RBAC kinds' escalation check (src/kinds/rbac.ts `checkEscalation`), the
 * ManifestWork and ManifestWorkReplicaSet executor admission (src/kinds/manifestwork-executor.ts
 * `admitExecutor`, with the `NilExecutorValidating` gate when it is on) and the ManagedClusterAddOn
 * config admission (src/kinds/addon-admission.ts, with a reader of the templates its configs name).
 * None for other kinds and for `system:masters`.
 * @throws errors of D1
 */
export async function rbacWriteExtras(env: Env, def: KindDefinition, user: UserInfo): Promise<Record<string, unknown> | undefined> {
  const addon = def === ManagedClusterAddOnKind || def === ManagedClusterAddOnV1beta1Kind;
  const rbac = RBAC_KINDS.includes(def);
  if (!(rbac || def === ManifestWorkKind || def === ManifestWorkReplicaSetKind || addon) || isPrivileged(user)) return undefined;
  const author: RbacAuthor = { user, authorizer: await rbacAuthorizer(env) };
  const nilExecutor = !rbac && !addon && featureEnabled(env, "NilExecutorValidating");
  const extras: Record<string, unknown> = { [RBAC_AUTHOR_EXTRA]: author, ...(nilExecutor ? { [NIL_EXECUTOR_VALIDATING_EXTRA]: true } : {}) };
  if (!addon) return extras;
  // The ManagedClusterAddOn admission (src/kinds/addon-admission.ts) reads the templates its configs name.
  const read: AddonConfigReader = (resource, namespace, name) =>
    admittedStoreOf(env, resource === "addontemplates" ? AddOnTemplateKind : AddOnDeploymentConfigKind).get(namespace, name);
  return { ...extras, [ADDON_CONFIG_READER_EXTRA]: read };
}

// ---------------------------------------------------------------------------
// Aggregation (Kubernetes' clusterrole-aggregation controller)
// ---------------------------------------------------------------------------

function sameRules(a: readonly PolicyRule[], b: readonly PolicyRule[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Writes to each ClusterRole with an aggregationRule the union of the rules of the ClusterRoles its
 * selectors match (src/auth/rbac.ts `aggregateClusterRoles`), when its stored `rules` differ, as
 * Kubernetes' clusterrole-aggregation controller does (so `kubectl get clusterrole admin -o yaml`
 * shows them). Nothing is written when the aggregation does not settle (a cycle).
 * @throws errors of D1
 */
export async function aggregateStoredClusterRoles(env: Env): Promise<void> {
  const roles = admittedStoreOf(env, ClusterRoleKind);
  const all = (await roles.list()).items as unknown as ClusterRole[];
  const agg = aggregateClusterRoles(all);
  if (agg.errors.some((e) => e.includes("did not settle"))) return;
  for (const cr of all) {
    if (!cr.aggregationRule) continue;
    const rules = agg.rules.get(cr.metadata.name) ?? [];
    if (sameRules(rules, cr.rules ?? [])) continue;
    try {
      await roles.write("", cr.metadata.name, { verb: "patch", patchType: "merge", patch: { rules } });
    } catch (e) {
      if (!(e instanceof ApiError && (e.reason === "NotFound" || e.reason === "Conflict"))) throw e;
    }
  }
}

/** The aggregation: owed by every ClusterRole write (its labels, rules or aggregationRule may feed another). */
export const clusterRoleAggregationHook: AfterCommitHook<true> = {
  name: "clusterrole-aggregation",
  plan: (change) => {
    if (change.def !== ClusterRoleKind) return null;
    const before = change.before as unknown as ClusterRole | null;
    const after = change.after as unknown as ClusterRole | null;
    // The aggregator's own write of an aggregated role's rules feeds only roles selecting it.
    const key = (r: ClusterRole | null) => JSON.stringify([r?.metadata.labels ?? {}, r?.rules ?? [], r?.aggregationRule ?? null]);
    return key(before) === key(after) ? null : true;
  },
  async run(env) {
    await aggregateStoredClusterRoles(env);
  },
};

// ---------------------------------------------------------------------------
// Bootstrap policy (kube-apiserver's RBAC bootstrap and reconciliation)
// ---------------------------------------------------------------------------

/** The annotation that lets bootstrap reconciliation update an object (`"false"`: leave it). */
export const AUTOUPDATE_ANNOTATION = "rbac.authorization.kubernetes.io/autoupdate";

function autoupdate(obj: KubeObject): boolean {
  return obj.metadata.annotations?.[AUTOUPDATE_ANNOTATION] !== "false";
}

function missingMeta(
  obj: KubeObject,
  expected: { labels?: Record<string, string> | null; annotations?: Record<string, string> | null },
): { labels?: Record<string, string>; annotations?: Record<string, string> } | null {
  const out: { labels?: Record<string, string>; annotations?: Record<string, string> } = {};
  for (const field of ["labels", "annotations"] as const) {
    const have = obj.metadata[field] ?? {};
    const want = expected[field] ?? {};
    const add = Object.fromEntries(Object.entries(want).filter(([k]) => !(k in have)));
    if (Object.keys(add).length > 0) out[field] = add;
  }
  return Object.keys(out).length > 0 ? out : null;
}

async function tolerate(write: Promise<unknown>): Promise<void> {
  try {
    await write;
  } catch (e) {
    if (!(e instanceof ApiError && (e.reason === "AlreadyExists" || e.reason === "Conflict" || e.reason === "NotFound"))) throw e;
  }
}

/**
 * Makes the bootstrap ClusterRoles and ClusterRoleBindings (src/auth/rbac.ts) exist, as
 * kube-apiserver's RBAC bootstrap does at start: a missing one is created; an existing one whose
 * `rbac.authorization.kubernetes.io/autoupdate` annotation is not `"false"` gets what it lacks
 * (labels and annotations; rules it does not cover, or aggregation selectors, for a role; subjects
 * for a binding); one annotated `"false"` is left as it is. Then the aggregated roles' rules are
 * written ({@link aggregateStoredClusterRoles}). Two list reads when nothing is missing.
 * @throws errors of D1
 */
export async function ensureBootstrapPolicy(env: Env): Promise<void> {
  const roles = admittedStoreOf(env, ClusterRoleKind);
  const bindings = admittedStoreOf(env, ClusterRoleBindingKind);
  const [haveRoles, haveBindings] = await Promise.all([roles.list(), bindings.list()]);
  const roleByName = new Map(haveRoles.items.map((o) => [o.metadata.name, o]));
  const bindingByName = new Map(haveBindings.items.map((o) => [o.metadata.name, o]));
  let changed = false;
  // A missing aggregated role is created with its aggregated rules, so that the aggregation hook
  // its create owes finds nothing left to write.
  const missing = BOOTSTRAP_CLUSTER_ROLES.filter((r) => !roleByName.has(r.metadata.name));
  const aggregated = aggregateClusterRoles([...(haveRoles.items as unknown as ClusterRole[]), ...missing]).rules;
  for (const want of BOOTSTRAP_CLUSTER_ROLES) {
    const name = want.metadata.name;
    const have = roleByName.get(name);
    if (!have) {
      changed = true;
      const body = structuredClone(want);
      if (want.aggregationRule) body.rules = structuredClone([...(aggregated.get(name) ?? [])]);
      await tolerate(roles.write("", name, { verb: "create", body }));
      continue;
    }
    if (!autoupdate(have)) continue;
    const patch: Record<string, unknown> = {};
    const meta = missingMeta(have, want.metadata);
    if (meta) patch.metadata = meta;
    if (want.aggregationRule) {
      const selectors = have.aggregationRule ? ((have.aggregationRule as AggregationRule).clusterRoleSelectors ?? []) : [];
      const missing = (want.aggregationRule.clusterRoleSelectors ?? []).filter((s) => !selectors.some((x) => JSON.stringify(x) === JSON.stringify(s)));
      if (missing.length > 0) patch.aggregationRule = { clusterRoleSelectors: [...selectors, ...missing] };
    } else {
      const { uncovered } = coversRules((have.rules as PolicyRule[] | undefined) ?? [], want.rules ?? []);
      if (uncovered.length > 0) patch.rules = [...((have.rules as PolicyRule[] | undefined) ?? []), ...uncovered];
    }
    if (Object.keys(patch).length > 0) {
      changed = true;
      await tolerate(roles.write("", name, { verb: "patch", patchType: "merge", patch }));
    }
  }
  for (const want of BOOTSTRAP_CLUSTER_ROLE_BINDINGS) {
    const name = want.metadata.name;
    const have = bindingByName.get(name);
    if (!have) {
      await tolerate(bindings.write("", name, { verb: "create", body: structuredClone(want) }));
      continue;
    }
    if (!autoupdate(have)) continue;
    const patch: Record<string, unknown> = {};
    const meta = missingMeta(have, want.metadata);
    if (meta) patch.metadata = meta;
    const subjects = (have.subjects as RoleBinding["subjects"]) ?? [];
    const missing = (want.subjects ?? []).filter(
      (s) => !subjects.some((x) => x.kind === s.kind && x.name === s.name && (x.namespace ?? "") === (s.namespace ?? "")),
    );
    if (missing.length > 0) patch.subjects = [...subjects, ...missing];
    if (Object.keys(patch).length > 0) await tolerate(bindings.write("", name, { verb: "patch", patchType: "merge", patch }));
  }
  if (changed) await aggregateStoredClusterRoles(env);
}
