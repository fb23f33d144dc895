/**
 * Reading the clusters' Leases (`coordination.k8s.io/v1` `leases`, src/kinds/lease.ts) as an OCM
 * hub serves them: `managed-cluster-lease` in each cluster's namespace, computed from the lease
 * the cluster's Durable Object keeps (durable-objects/cluster/lease.ts), never stored.
 *
 * - Existence: the Lease in namespace X exists exactly when ManagedCluster X exists and its object
 *   holds a lease, which it starts when the cluster is first accepted (a HubAccepted condition
 *   appears) and keeps until the cluster is removed, as OCM's hub lease controller creates the
 *   lease of an accepted cluster and leaves it. Any other name, or a namespace without such a
 *   cluster, is 404.
 * - Get: one call to that cluster's object, nothing read from D1.
 * - List in one namespace: 0 or 1 item, the same one call (none when the selectors already rule
 *   the Lease out by its name, namespace or labels).
 * - List across namespaces: pages through the ManagedClusters in the D1 index in name order
 *   (`limit` and `continue` as every list; the token names the last Lease's namespace and name),
 *   keeping those that hold a lease and whose Lease the selectors select by name, namespace and
 *   labels, and reads only that page's objects, at most {@link LEASE_PAGE_CLUSTERS} per request:
 *   a list without a `limit`, or with a larger one, answers that many with a `continue` token
 *   (each read is a subrequest of the Worker's invocation; kubectl pages by 500 anyway).
 * - renewTime: the last renewal, the channel's last ping included (read from the runtime's
 *   auto-response timestamp by the same `Lease.renewedMs` the lease check uses,
 *   durable-objects/cluster/lease.ts), so serving
 *   it adds nothing to an idle cluster's heartbeats or pings.
 * - resourceVersion: the renewal in epoch milliseconds (it changes exactly when renewTime does);
 *   a list's is the time it was read (no item is newer). These versions are not the D1 counter's,
 *   so a get or list from a `resourceVersion` is answered at once with the current lease (which is
 *   never older than any version served before). `uid`: a name-based UUID of the cluster's uid,
 *   stable for the cluster's life.
 * - Writes and watch are 405 (src/api/resource/read.ts and write.ts, the kind's `computed` refusals).
 */
import type { Env } from "../env.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { LIST_CHUNK_ROWS, type StoreKey } from "../store/store.ts";
import { CLUSTER_LEASE_NAME, clusterLease, LeaseKind, leaseSkeleton, type ClusterLeaseRecord } from "../kinds/lease.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { holdsLease } from "../../durable-objects/cluster/lease.ts";
import { clock } from "../clock.ts";
import { admittedStoreOf } from "../admission/store.ts";

/** Most clusters' objects one list of Leases across namespaces reads (one page). */
export const LEASE_PAGE_CLUSTERS = LIST_CHUNK_ROWS;

/** What a list of a computed kind is asked for (src/api/resource/read.ts parses it as for every kind). */
export interface ComputedListOptions {
  /** Start after this (namespace, name) key, exclusive: where a `continue` token points. */
  after?: StoreKey;
  /** Most items; undefined: as many as one page holds. */
  limit?: number;
  /** The request's label and field selectors, on the object as served. */
  filter: (obj: KubeObject) => boolean;
}

/** A page of a computed kind: its items, the list's resourceVersion, and where the next page starts (never a remaining count). */
export interface ComputedPage {
  items: KubeObject[];
  resourceVersion: string;
  next?: StoreKey;
  remaining?: undefined;
}

/** How src/api/resource/read.ts reads a computed kind's objects (`KindDefinition.computed`). */
export interface ComputedReader {
  /** The object at (namespace, name), or null. */
  get(env: Env, namespace: string, name: string): Promise<KubeObject | null>;
  /** One page of the objects in `namespace` (undefined: all namespaces). */
  list(env: Env, namespace: string | undefined, opts: ComputedListOptions): Promise<ComputedPage>;
}

/**
 * A name-based UUID (RFC 9562 version 8: SHA-256 of the name, version and variant bits set) of
 * the Lease of the cluster whose uid is `clusterUid`: the same for the cluster's life, distinct
 * from the cluster's own.
 */
async function leaseUid(clusterUid: string): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${clusterUid}/leases.coordination.k8s.io/${CLUSTER_LEASE_NAME}`)),
  );
  const b = digest.slice(0, 16);
  b[6] = (b[6]! & 0x0f) | 0x80;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Cluster `cluster`'s Lease, read from its Durable Object (one call), or null when it holds none. */
async function readLease(env: Env, cluster: string): Promise<KubeObject | null> {
  const record = (await env.CLUSTERS.getByName(cluster).servedLease()) as ClusterLeaseRecord | null;
  return record ? clusterLease(record, await leaseUid(record.clusterUid)) : null;
}

/** Whether the Lease in namespace `namespace` sorts after `key` in (namespace, name) order. */
function isAfter(namespace: string, key: StoreKey | undefined): boolean {
  return !key || namespace > key.namespace || (namespace === key.namespace && CLUSTER_LEASE_NAME > key.name);
}

/** The list's resourceVersion: the time it was read, in epoch milliseconds, and never below an item's. */
function listVersion(items: KubeObject[]): string {
  return String(Math.max(clock.now(), ...items.map((o) => Number(o.metadata.resourceVersion))));
}

/**
 * The clusters' Leases (see the module comment).
 * @throws errors of D1 and of the Durable Object calls
 */
export const clusterLeases: ComputedReader = {
  async get(env, namespace, name) {
    return name === CLUSTER_LEASE_NAME ? readLease(env, namespace) : null;
  },

  async list(env, namespace, opts) {
    if (namespace !== undefined) {
      const lease = isAfter(namespace, opts.after) && opts.filter(leaseSkeleton(namespace)) ? await readLease(env, namespace) : null;
      const items = lease && opts.filter(lease) ? [lease] : [];
      return { items, resourceVersion: listVersion(items) };
    }
    const limit = Math.min(opts.limit ?? LEASE_PAGE_CLUSTERS, LEASE_PAGE_CLUSTERS);
    // A key (X, name) continues after cluster X (the Lease of X is the only object in X).
    const after = opts.after ? { namespace: "", name: opts.after.namespace } : undefined;
    const page = await admittedStoreOf(env, ManagedClusterKind).listPage("", {
      after,
      limit,
      filter: (mc) => holdsLease(mc) && opts.filter(leaseSkeleton(mc.metadata.name)),
    });
    const read = await Promise.all(page.items.map((mc) => readLease(env, mc.metadata.name)));
    const items = read.filter((o): o is KubeObject => o !== null && opts.filter(o));
    const next = page.next ? { namespace: page.next.name, name: CLUSTER_LEASE_NAME } : undefined;
    return { items, resourceVersion: listVersion(items), ...(next ? { next } : {}) };
  },
};

/** The reader of each computed kind (`KindDefinition.computed`), for the generic resource endpoints (src/api/resource/read.ts). */
export const COMPUTED_READERS: ReadonlyMap<KindDefinition, ComputedReader> = new Map<KindDefinition, ComputedReader>([[LeaseKind, clusterLeases]]);
