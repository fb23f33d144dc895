/**
 * What OCM's cluster views (src/kinds/clusterview.ts) show a user: the ManagedClusterSets they may
 * `get` (RBAC on `cluster.open-cluster-management.io` `managedclustersets`, by resourceName or
 * all), and the ManagedClusters that belong to one of those sets (its ExclusiveClusterSetLabel or
 * LabelSelector, src/kinds/managedclusterset.ts `clusterInSet`). `system:masters` sees everything.
 * The sets are read once per request (one list of the sets, one RBAC check each against the
 * isolate's authorizer); a watch keeps the sets it found at its start, and sends a cluster that
 * leaves them (its labels changed) as DELETED, one that enters them as ADDED (src/api/watch.ts
 * `WatchOptions.transitions`).
 */
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { clusterInSet, ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import type { Env } from "../env.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { isPrivileged, rbacAuthorizer } from "./rbac-store.ts";
import type { UserInfo } from "./rbac-types.ts";

/** The ManagedClusterSets `user` may get. @throws errors of D1 */
export async function visibleClusterSets(env: Env, user: UserInfo): Promise<KubeObject[]> {
  const sets = (await admittedStoreOf(env, ManagedClusterSetKind).list("")).items;
  if (isPrivileged(user)) return sets;
  const authorizer = await rbacAuthorizer(env);
  return sets.filter(
    (s) =>
      authorizer.authorize(user, {
        verb: "get",
        apiGroup: ManagedClusterSetKind.group,
        resource: ManagedClusterSetKind.plural,
        name: s.metadata.name,
        namespace: "",
      }).allowed,
  );
}

/**
 * The filter a view of `viewed` (ManagedClusterSet or ManagedCluster) applies for `user`: an object
 * passes when the user may see it (see the module comment).
 * @throws errors of D1
 */
export async function viewFilter(env: Env, user: UserInfo, viewed: KindDefinition): Promise<(obj: KubeObject) => boolean> {
  if (isPrivileged(user)) return () => true;
  const sets = await visibleClusterSets(env, user);
  if (viewed === ManagedClusterSetKind) {
    const names = new Set(sets.map((s) => s.metadata.name));
    return (obj) => names.has(obj.metadata.name);
  }
  if (viewed === ManagedClusterKind) return (obj) => sets.some((s) => clusterInSet(s, obj.metadata.labels));
  return () => false;
}
