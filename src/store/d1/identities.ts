/**
 * The cluster identity index in D1 (`cluster_identities`: a ManagedCluster's name and the cluster
 * ID its agent registered with, each unique): claimed at registration, looked up when an agent
 * authenticates, released when a registration fails, and removed in the same batch as its
 * ManagedCluster's deletion ({@link removeIdentityShape}).
 */
import { and, eq, sql } from "drizzle-orm";
import { builder } from "../../db/compiled.ts";
import { clusterIdentities } from "../../db/schema.ts";
import { guardedShape } from "./objects.ts";

/** The resource key (`<group>/<plural>`) of ManagedClusters' rows (src/kinds/managedcluster.ts; the store imports no kind). */
const MANAGED_CLUSTERS = "cluster.open-cluster-management.io/managedclusters";

/** A (name, cluster ID) pair of the index. */
export interface ClusterIdentity {
  name: string;
  clusterId: string;
}

/**
 * Claims (`name`, `clusterId`) if neither is held, and returns every pair holding either (the
 * claim's own when it succeeded or was held already): one atomic batch, the unique constraints
 * deciding a race.
 * @throws errors of D1
 */
export async function claimIdentity(d1: D1Database, name: string, clusterId: string): Promise<ClusterIdentity[]> {
  const [, rows] = await d1.batch<{ name: string; cluster_id: string }>([
    d1.prepare("INSERT INTO cluster_identities (name, cluster_id) VALUES (?, ?) ON CONFLICT DO NOTHING").bind(name, clusterId),
    d1.prepare("SELECT name, cluster_id FROM cluster_identities WHERE name = ? OR cluster_id = ?").bind(name, clusterId),
  ]);
  return (rows?.results ?? []).map((r) => ({ name: r.name, clusterId: r.cluster_id }));
}

/** Whether a cluster named `name` holds an identity (one read by key). @throws errors of D1 */
export async function hasIdentity(d1: D1Database, name: string): Promise<boolean> {
  return (await d1.prepare("SELECT 1 AS one FROM cluster_identities WHERE name = ?").bind(name).first()) !== null;
}

/** Releases the pair (`name`, `clusterId`) unless a ManagedCluster of that name is stored (a failed registration leaves nothing). @throws errors of D1 */
export async function releaseIdentity(d1: D1Database, name: string, clusterId: string): Promise<void> {
  await d1
    .prepare(
      "DELETE FROM cluster_identities WHERE name = ? AND cluster_id = ? AND NOT EXISTS (SELECT 1 FROM objects WHERE resource = ? AND namespace = '' AND name = ?)",
    )
    .bind(name, clusterId, MANAGED_CLUSTERS, name)
    .run();
}

/** Deletes the identity row of the cluster named by a commit's key, under its guard: a commit extra of a ManagedCluster's removal. */
export const removeIdentityShape = guardedShape((cond) =>
  builder.delete(clusterIdentities).where(and(eq(clusterIdentities.name, sql.placeholder("name")), cond)),
);
