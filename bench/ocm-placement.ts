/**
 * The benchmarks' OCM placement of every cluster (bench:propagation, bench:crp's
 * ManifestWorkReplicaSet phase): a namespace bound to the `default` ManagedClusterSet (every
 * joined cluster is in it) with a Placement of no predicates, which selects every cluster of the
 * bound sets (OCM's Placement API, cluster.open-cluster-management.io/v1beta1).
 */
import { admin, createNamespaces, type Hub } from "../scripts/hub-process.ts";

const G = "/apis/cluster.open-cluster-management.io";

/**
 * Throws unless `r` answered 2xx, naming `what`.
 * @throws Error with the status and the answer's body
 */
export function ok(r: { status: number; body: unknown }, what: string): void {
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
}

/**
 * Creates namespace `namespace`, its ManagedClusterSetBinding `default` (to the `default` set) and
 * the Placement `placement` there with an empty spec: every cluster of the set.
 * @throws Error when the hub refuses one of the writes
 */
export async function placeEveryCluster(hub: Hub, namespace: string, placement = "all"): Promise<void> {
  await createNamespaces(hub, namespace);
  ok(
    await admin(hub, "POST", `${G}/v1beta2/namespaces/${namespace}/managedclustersetbindings`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "default" },
      spec: { clusterSet: "default" },
    }),
    "binding",
  );
  ok(
    await admin(hub, "POST", `${G}/v1beta1/namespaces/${namespace}/placements`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: placement },
      spec: {},
    }),
    "placement",
  );
}

/**
 * The number of clusters Placement `namespace/placement` selected (`status.numberOfSelectedClusters`,
 * 0 before its first decision).
 * @throws Error when the hub does not answer 2xx
 */
export async function selectedClusters(hub: Hub, namespace: string, placement = "all"): Promise<number> {
  const r = await admin(hub, "GET", `${G}/v1beta1/namespaces/${namespace}/placements/${placement}`);
  ok(r, "placement");
  return (r.body as { status?: { numberOfSelectedClusters?: number } }).status?.numberOfSelectedClusters ?? 0;
}
