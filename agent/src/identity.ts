/**
 * Cluster identity (KEP-2149 / about-api): the ClusterProperty `cluster.clusterset.k8s.io`
 * when present, otherwise the UID of the `kube-system` namespace (what Karmada's
 * `ObtainClusterID` and the KEP recommend).
 */
import { isNotFound, type KubeConfig } from "./kube.ts";

/** API group of the ClusterProperty CRD (kubernetes-sigs/about-api). */
export const CLUSTER_PROPERTY_GROUP = "about.k8s.io";
/** Served versions of ClusterProperty, in the order tried: the storage version first. */
export const CLUSTER_PROPERTY_VERSIONS = ["v1beta1", "v1alpha1"] as const;
/** Plural resource name of ClusterProperty. */
export const CLUSTER_PROPERTY_PLURAL = "clusterproperties";
/** Well-known ClusterProperty carrying the cluster's unique ID (KEP-2149). */
export const CLUSTER_ID_PROPERTY = "cluster.clusterset.k8s.io";

/** A ClusterProperty reduced to what the agent uses: `metadata.name` and `spec.value`. */
export interface ClusterProperty {
  /** `metadata.name`, e.g. `cluster.clusterset.k8s.io`. */
  name: string;
  /** `spec.value` (required by the CRD, at least one character). */
  value: string;
}

/** The cluster ID and where it came from. */
export interface ClusterIdentity {
  /** The ID sent to the hub as `clusterId`. */
  id: string;
  /** `cluster-property` when read from the `cluster.clusterset.k8s.io` ClusterProperty, else `kube-system-uid`. */
  source: "cluster-property" | "kube-system-uid";
}

function propertyValue(obj: unknown): string | undefined {
  if (typeof obj !== "object" || obj === null || !("spec" in obj)) return undefined;
  const spec = obj.spec;
  if (typeof spec !== "object" || spec === null || !("value" in spec)) return undefined;
  return typeof spec.value === "string" && spec.value.length > 0 ? spec.value : undefined;
}

/**
 * Reads one ClusterProperty by name, trying `about.k8s.io/v1beta1` then `v1alpha1`.
 *
 * @param kc the member cluster's configuration.
 * @param name the property's `metadata.name`.
 * @returns the property's value, or `undefined` when neither version serves it (CRD not
 *   installed, or no such object) or its `spec.value` is empty.
 * @throws the KubeError for anything other than 404 (e.g. the API server is down).
 */
export async function getClusterProperty(kc: KubeConfig, name: string): Promise<string | undefined> {
  for (const version of CLUSTER_PROPERTY_VERSIONS) {
    try {
      const obj: unknown = await kc.json("GET", `/apis/${CLUSTER_PROPERTY_GROUP}/${version}/${CLUSTER_PROPERTY_PLURAL}/${encodeURIComponent(name)}`);
      const value = propertyValue(obj);
      if (value !== undefined) return value;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return undefined;
}

/**
 * Lists every ClusterProperty, from the first of `v1beta1`, `v1alpha1` that is served.
 *
 * @param kc the member cluster's configuration.
 * @returns `{name, value}` pairs sorted by name; empty when the CRD is not installed.
 * @throws the KubeError for anything other than 404.
 */
export async function listClusterProperties(kc: KubeConfig): Promise<ClusterProperty[]> {
  for (const version of CLUSTER_PROPERTY_VERSIONS) {
    let list: unknown;
    try {
      list = await kc.json("GET", `/apis/${CLUSTER_PROPERTY_GROUP}/${version}/${CLUSTER_PROPERTY_PLURAL}`);
    } catch (err) {
      if (isNotFound(err)) continue;
      throw err;
    }
    const items: unknown[] = typeof list === "object" && list !== null && "items" in list && Array.isArray(list.items) ? list.items : [];
    const out: ClusterProperty[] = [];
    for (const item of items) {
      const value = propertyValue(item);
      const meta = typeof item === "object" && item !== null && "metadata" in item ? item.metadata : undefined;
      const name = typeof meta === "object" && meta !== null && "name" in meta && typeof meta.name === "string" ? meta.name : undefined;
      if (name && value !== undefined) out.push({ name, value });
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
  return [];
}

/**
 * Determines the cluster ID: the `cluster.clusterset.k8s.io` ClusterProperty
 * (`about.k8s.io/v1beta1`, else `v1alpha1`) when present, otherwise `kube-system`'s
 * `metadata.uid` (stable for the namespace's life).
 *
 * @param kc the member cluster's configuration.
 * @returns the ID and its source.
 * @throws the KubeError when the API server cannot be read, or Error when
 *   `kube-system` has no UID.
 * @example
 * const { id, source } = await getClusterIdentity(kc); // e.g. { id: "721ab723-…", source: "kube-system-uid" }
 */
export async function getClusterIdentity(kc: KubeConfig): Promise<ClusterIdentity> {
  const fromProperty = await getClusterProperty(kc, CLUSTER_ID_PROPERTY);
  if (fromProperty !== undefined) return { id: fromProperty, source: "cluster-property" };
  const ns = await kc.json("GET", "/api/v1/namespaces/kube-system");
  const uid = (ns.metadata as { uid?: string } | undefined)?.uid;
  if (!uid) throw new Error("namespace kube-system has no metadata.uid");
  return { id: uid, source: "kube-system-uid" };
}
