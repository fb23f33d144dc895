/**
 * OCM's multi-tenancy checks, as its hub's validating webhooks make them with a
 * SubjectAccessReview for the requesting user (open-cluster-management-io/ocm
 * `pkg/registration/webhook/v1/managedcluster_validating.go` and
 * `pkg/registration/webhook/v1beta2/managedclustersetbinding_validating.go`; facts carried over,
 * not code):
 *
 * - a ManagedCluster whose `cluster.open-cluster-management.io/clusterset` label is set, changed
 *   or removed (at create: set at all) needs `create` on `managedclustersets/join` (group
 *   `cluster.open-cluster-management.io`) named after the set it leaves and the set it joins;
 * - a ManagedCluster whose `spec.hubAcceptsClient` becomes true (at create: is true) needs
 *   `update` on `managedclusters/accept` of group `register.open-cluster-management.io`, named
 *   after the cluster;
 * - a ManagedClusterSetBinding created needs `create` on `managedclustersets/bind` named after its
 *   `spec.clusterSet` (an update needs nothing more).
 *
 * The refusals are 403 Forbidden worded as OCM's. The checks run for users of the API (kubectl,
 * pipelines); the hub's own writers (controllers, agents' registration) are not users and are not
 * checked, and `system:masters` passes them as it passes RBAC (src/auth/rbac-store.ts `decide`).
 *
 * OCM's work webhook's check (a ManifestWork's `executor` needs `execute-as`) is
 * src/kinds/manifestwork-executor.ts: it runs inside the D1 write, as the RBAC kinds' escalation check does,
 * on the object as stored, so it needs no admitted transition.
 *
 * A ManagedCluster lives in its Durable Object, where its write is computed; the Worker computes
 * the same write on the object it read to learn what changes, checks that, and hands the object
 * the {@link ClusterTransition} it admitted: should the object find another transition (a write
 * came in between), it answers 409 Conflict and the client tries again, as after any lost race.
 */
import { ApiError } from "../k8s/errors.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { computeWrite, type WriteRequest } from "../k8s/write.ts";
import { CLUSTERSET_LABEL, ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ManagedClusterSetBindingKind } from "../kinds/placement.ts";
import type { Env } from "../env.ts";
import { decide, isPrivileged } from "./rbac-store.ts";
import type { UserInfo } from "./rbac-types.ts";
import type { ClusterTransition } from "../store/store.ts";

/** The API group of ManagedClusters, sets and bindings. */
export const CLUSTER_GROUP = "cluster.open-cluster-management.io";
/** The API group of the `managedclusters/accept` permission (OCM's registration webhook). */
export const REGISTER_GROUP = "register.open-cluster-management.io";

/** What a ManagedCluster write changes of what OCM guards (declared with the store, which carries it to the cluster's object). */
export type { ClusterTransition };

function setOf(obj: KubeObject | null): string {
  return obj?.metadata.labels?.[CLUSTERSET_LABEL] ?? "";
}

function acceptsClient(obj: KubeObject | null): boolean {
  return (obj?.spec as { hubAcceptsClient?: unknown } | undefined)?.hubAcceptsClient === true;
}

/** The {@link ClusterTransition} of a ManagedCluster write from `before` (null: create) to `after` (null: delete). */
export function clusterTransition(before: KubeObject | null, after: KubeObject | null): ClusterTransition {
  if (!after) return { clusterSet: null, accepts: false };
  const from = setOf(before);
  const to = setOf(after);
  return { clusterSet: from === to ? null : [from, to], accepts: acceptsClient(after) && !acceptsClient(before) };
}

/**
 * Whether the transition a write makes (`actual`) asks for no permission beyond those checked for
 * `admitted`: the same cluster set change or none, and acceptance only when it was admitted.
 */
export function transitionCovered(actual: ClusterTransition, admitted: ClusterTransition): boolean {
  if (actual.accepts && !admitted.accepts) return false;
  if (actual.clusterSet === null) return true;
  return admitted.clusterSet !== null && actual.clusterSet[0] === admitted.clusterSet[0] && actual.clusterSet[1] === admitted.clusterSet[1];
}

/** OCM's 403: `<resource>.<group> "<name>" is forbidden: <why>`. */
function forbiddenBy(resource: string, name: string, why: string): ApiError {
  return new ApiError(403, "Forbidden", `${resource}.${CLUSTER_GROUP} ${JSON.stringify(name)} is forbidden: ${why}`, {
    name,
    group: CLUSTER_GROUP,
    kind: resource,
  });
}

async function allowed(env: Env, user: UserInfo, apiGroup: string, resource: string, subresource: string, verb: string, name: string): Promise<boolean> {
  return (await decide(env, user, { verb, apiGroup, resource, subresource, name, namespace: "" })).allowed;
}

/**
 * Checks a ManagedCluster write by `user` from `before` to `after` (see the module comment) and
 * answers the transition it admitted, for the cluster's object to hold the write to.
 * @throws ApiError 403 worded as OCM's webhook: `managedclustersets/join.cluster.open-cluster-management.io
 *   "<set>" is forbidden: user "<user>" cannot add/remove a ManagedCluster to/from ManagedClusterSet
 *   "<set>"`, or `managedclusters/accept.cluster.open-cluster-management.io "<cluster>" is forbidden:
 *   user "<user>" cannot update the HubAcceptsClient field`; errors of D1
 */
export async function admitClusterWrite(
  env: Env,
  user: UserInfo,
  name: string,
  before: KubeObject | null,
  after: KubeObject | null,
): Promise<ClusterTransition> {
  const t = clusterTransition(before, after);
  if (isPrivileged(user)) return t;
  if (t.accepts && !(await allowed(env, user, REGISTER_GROUP, "managedclusters", "accept", "update", name))) {
    throw forbiddenBy("managedclusters/accept", name, `user ${JSON.stringify(user.name)} cannot update the HubAcceptsClient field`);
  }
  for (const set of t.clusterSet ?? []) {
    if (set && !(await allowed(env, user, CLUSTER_GROUP, "managedclustersets", "join", "create", set))) {
      throw forbiddenBy(
        "managedclustersets/join",
        set,
        `user ${JSON.stringify(user.name)} cannot add/remove a ManagedCluster to/from ManagedClusterSet ${JSON.stringify(set)}`,
      );
    }
  }
  return t;
}

/**
 * Checks the create of a ManagedClusterSetBinding by `user` for cluster set `clusterSet`.
 * @throws ApiError 403 `managedclustersets/bind.cluster.open-cluster-management.io "<set>" is
 *   forbidden: user "<user>" is not allowed to bind cluster set "<set>"` (OCM's wording; its
 *   webhook names the group of another package there, a slip not carried over); errors of D1
 */
export async function admitBindingCreate(env: Env, user: UserInfo, clusterSet: string): Promise<void> {
  if (isPrivileged(user) || !clusterSet) return;
  if (!(await allowed(env, user, CLUSTER_GROUP, "managedclustersets", "bind", "create", clusterSet))) {
    throw forbiddenBy(
      "managedclustersets/bind",
      clusterSet,
      `user ${JSON.stringify(user.name)} is not allowed to bind cluster set ${JSON.stringify(clusterSet)}`,
    );
  }
}

/**
 * The kinds {@link admitApiWrite} checks (OCM's webhooks of ManagedClusters and
 * ManagedClusterSetBindings): the route looks a write's kind up here and calls it for these only.
 */
export const OCM_ADMITTED_KINDS: ReadonlySet<KindDefinition> = new Set([ManagedClusterKind, ManagedClusterSetBindingKind]);

/**
 * OCM's multi-tenancy checks of an API write (`req` on object `name` of kind `def` in
 * `namespace`; `name` undefined for a create that names none) by `user`, when not in
 * `system:masters`, as OCM's validating webhooks pick the writes they check: a ManagedCluster
 * write is computed on the object as stored (`current` reads it) to learn what it changes, which
 * is checked and answered (the cluster's object holds the write to it: {@link ClusterTransition});
 * the create of a ManagedClusterSetBinding needs the bind permission. Nothing for deletes or
 * other kinds. `now` is epoch milliseconds.
 * @throws ApiError 403 as OCM's webhooks word it, the write's own 4xx; errors of `current`
 */
export async function admitApiWrite(
  env: Env,
  user: UserInfo,
  def: KindDefinition,
  namespace: string,
  name: string | undefined,
  req: WriteRequest,
  current: () => Promise<KubeObject | null>,
  now: number,
): Promise<ClusterTransition | undefined> {
  if (req.verb === "delete" || isPrivileged(user)) return undefined;
  const cluster = def === ManagedClusterKind;
  if (!cluster && (def !== ManagedClusterSetBindingKind || (req.verb !== "create" && req.subresource))) return undefined;
  const stored = req.verb === "create" || !name ? null : await current();
  if (!cluster && stored) return undefined;
  const { next } = computeWrite(def, { namespace, name }, stored, req, { now, newUid: () => crypto.randomUUID() });
  if (cluster) return admitClusterWrite(env, user, name ?? next?.metadata.name ?? "", stored, next);
  await admitBindingCreate(env, user, String((next?.spec as { clusterSet?: unknown } | undefined)?.clusterSet ?? ""));
  return undefined;
}
