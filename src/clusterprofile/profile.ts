/**
 * The ClusterProfile of one ManagedCluster in one namespace, as OCM's clusterprofile
 * controllers write it (`pkg/registration/hub/clusterprofile`: the lifecycle controller creates
 * it, the status controller keeps its labels and status), in the shape of SIG Multicluster's
 * cluster inventory API (`multicluster.x-k8s.io/v1alpha1`). Pure: no I/O, the time is an argument.
 *
 * @module
 */
import { rfc3339, setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import {
  CLUSTER_INVENTORY_CLUSTERSET_LABEL,
  CLUSTER_MANAGER_LABEL,
  CLUSTER_MANAGER_NAME,
  ClusterProfileKind,
  CONTROL_PLANE_HEALTHY,
  OCM_CLUSTER_NAME_LABEL,
} from "../kinds/clusterprofile.ts";
import { CLUSTERSET_LABEL, type ManagedClusterStatus } from "../kinds/managedcluster.ts";

/** OCM's reserved claim holding the cluster ID (KEP-2149), shown as the `cluster.clusterset.k8s.io` property. */
export const CLUSTER_ID_CLAIM = "id.k8s.io";
/** The About API's ClusterProperty name of the cluster ID (KEP-2149). */
export const CLUSTER_ID_PROPERTY = "cluster.clusterset.k8s.io";

/**
 * The name of the access provider the hub advertises in each profile's `status.accessProviders`
 * (cluster-inventory-api `apis/v1alpha1` `AccessProvider.name`): a consumer's provider file
 * (`pkg/access` `Config.Providers[].name`) names it to run `flotilla credentials` (docs/proxy.md).
 */
export const FLOTILLA_ACCESS_PROVIDER = "flotilla";

/**
 * How the hub is reached from outside, for the access it advertises: its URL (`https://hub:8787`,
 * no trailing slash) and, when it serves its own TLS, its CA (PEM, base64: a kubeconfig's
 * `certificate-authority-data`).
 */
export interface HubAccess {
  url: string;
  caData?: string;
}

/**
 * The hub's {@link HubAccess} from its settings (`FLOTILLA_PUBLIC_URL`, `FLOTILLA_PUBLIC_CA_DATA`),
 * or undefined when no public URL is set (the hub cannot know how it is reached, so it advertises
 * no access). A trailing `/` of the URL is dropped; a URL that is not http(s) is ignored.
 */
export function hubAccessOf(env: { FLOTILLA_PUBLIC_URL?: string; FLOTILLA_PUBLIC_CA_DATA?: string }): HubAccess | undefined {
  const raw = env.FLOTILLA_PUBLIC_URL?.trim();
  if (!raw || !/^https?:\/\/[^/]/.test(raw)) return undefined;
  const url = raw.replace(/\/+$/, "");
  const caData = env.FLOTILLA_PUBLIC_CA_DATA?.trim();
  return caData ? { url, caData } : { url };
}

/**
 * The profile's `status.accessProviders` for cluster `name`: one provider,
 * {@link FLOTILLA_ACCESS_PROVIDER}, whose `cluster` (a kubeconfig v1 `Cluster`, as the API's
 * `AccessProvider.cluster`) has `server` = the hub's proxy prefix for the cluster
 * (`<url>/clusters/<name>/proxy`, docs/proxy.md) and `certificate-authority-data` when the hub
 * has its own CA.
 */
export function accessProvidersOf(name: string, hub: HubAccess): { name: string; cluster: Record<string, string> }[] {
  const cluster: Record<string, string> = { server: `${hub.url}/clusters/${encodeURIComponent(name)}/proxy` };
  if (hub.caData) cluster["certificate-authority-data"] = hub.caData;
  return [{ name: FLOTILLA_ACCESS_PROVIDER, cluster }];
}

const JOINED = "ManagedClusterJoined";
const AVAILABLE = "ManagedClusterConditionAvailable";

/**
 * The properties of a cluster: each claim as `{name, value}` in the cluster's order, and the
 * `id.k8s.io` claim also as `cluster.clusterset.k8s.io` unless a claim of that name exists.
 * Entries the API would refuse (empty value, name over 253 or value over 1024 characters) and
 * later duplicates of a name (the list is a map keyed by name) are left out.
 */
export function propertiesOf(claims: readonly { name: string; value: string }[] | undefined): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  const seen = new Set<string>();
  const add = (name: string, value: string) => {
    if (seen.has(name) || name.length === 0 || name.length > 253 || value.length === 0 || value.length > 1024) return;
    seen.add(name);
    out.push({ name, value });
  };
  for (const c of claims ?? []) add(c.name, c.value);
  const id = claims?.find((c) => c.name === CLUSTER_ID_CLAIM)?.value;
  if (id !== undefined) add(CLUSTER_ID_PROPERTY, id);
  return out;
}

/**
 * The profile of `cluster` in `namespace`: `existing` (the stored one, or null) updated as
 * OCM's status controller does, or a new one as its lifecycle controller creates it:
 * - name = the cluster's name; labels `x-k8s.io/cluster-manager: open-cluster-management`,
 *   `multicluster.x-k8s.io/clusterset: <the cluster's cluster.open-cluster-management.io/clusterset
 *   label, or "">`, `open-cluster-management.io/cluster-name: <cluster>` merged into its labels;
 * - spec `{displayName: <cluster>, clusterManager: {name: open-cluster-management}}` (an existing
 *   profile's spec is kept: the manager is immutable);
 * - status `version.kubernetes` from the cluster's, `properties` ({@link propertiesOf}),
 *   `ControlPlaneHealthy` from `ManagedClusterConditionAvailable` and `Joined` from
 *   `ManagedClusterJoined` (status, reason, message; `lastTransitionTime` moves when the status
 *   does, as meta.SetStatusCondition), each only once the cluster has that condition;
 * - status `accessProviders` ({@link accessProvidersOf}) when `hub` is given (KEP-4322/KEP-5339).
 *
 * @param nowMs the time, epoch milliseconds (a new condition's lastTransitionTime).
 * @param hub how the hub is reached, or undefined to advertise no access.
 * @returns a new object (the inputs are not changed); server fields (uid, resourceVersion) are the
 *   existing profile's, or blank for a create.
 */
export function desiredProfile(cluster: KubeObject, namespace: string, existing: KubeObject | null, nowMs: number, hub?: HubAccess): KubeObject {
  const name = cluster.metadata.name;
  const status = (cluster.status ?? {}) as ManagedClusterStatus;
  const labels = {
    ...(existing?.metadata.labels ?? {}),
    [CLUSTER_MANAGER_LABEL]: CLUSTER_MANAGER_NAME,
    [CLUSTER_INVENTORY_CLUSTERSET_LABEL]: cluster.metadata.labels?.[CLUSTERSET_LABEL] ?? "",
    [OCM_CLUSTER_NAME_LABEL]: name,
  };
  const before = (existing?.status ?? {}) as { conditions?: Condition[] | null; version?: unknown; properties?: unknown };
  const conditions: Condition[] = structuredClone(before.conditions ?? []);
  const now = rfc3339(nowMs);
  for (const [from, to] of [
    [AVAILABLE, CONTROL_PLANE_HEALTHY],
    [JOINED, "Joined"],
  ] as const) {
    const c = status.conditions?.find((x) => x.type === from);
    if (c) setCondition(conditions, { type: to, status: c.status, reason: c.reason, message: c.message }, now);
  }
  const kubernetes = status.version?.kubernetes ?? "";
  const properties = propertiesOf(status.clusterClaims);
  const next: KubeObject = {
    apiVersion: `${ClusterProfileKind.group}/${ClusterProfileKind.version}`,
    kind: ClusterProfileKind.kind,
    metadata: existing
      ? { ...structuredClone(existing.metadata), labels }
      : { name, namespace, uid: crypto.randomUUID(), resourceVersion: "", creationTimestamp: rfc3339(nowMs), generation: 1, labels },
    spec: existing?.spec ? structuredClone(existing.spec) : { displayName: name, clusterManager: { name: CLUSTER_MANAGER_NAME } },
    status: {
      conditions,
      version: kubernetes ? { kubernetes } : {},
      ...(properties.length > 0 ? { properties } : {}),
      ...(hub ? { accessProviders: accessProvidersOf(name, hub) } : {}),
    },
  };
  return next;
}
