/**
 * What the agent reports in a heartbeat, collected from the member cluster the way OCM's
 * registration agent fills `ManagedCluster.status` (`pkg/registration/spoke/managedcluster`):
 * - `version.kubernetes`: the discovery `/version` `gitVersion`;
 * - `capacity`: sum over all nodes of `status.capacity`; `allocatable`: sum over nodes without
 *   `spec.unschedulable` of `status.allocatable` (not reduced by pod requests);
 * - `clusterClaims` (`claim_reconcile.go`): the `ClusterClaim` objects
 *   (`cluster.open-cluster-management.io/v1alpha1`) except those labelled
 *   `open-cluster-management.io/spoke-only`, the `about.k8s.io` ClusterProperties (which win over a
 *   ClusterClaim of the same name, as OCM's about-api support), the `--claim` flags, and the reserved
 *   claims the agent generates from what it sees (`id.k8s.io`, `kubeversion`, `platform`, `product`
 *   `.open-cluster-management.io`: a claim object of the same name wins); reserved claims always,
 *   custom claims sorted by name, capped at 20;
 * - health: `GET /livez`, falling back to `/healthz` on 404 or 403; a failure is reported only
 *   once it has persisted for the failure threshold (20 s by default).
 */
import type { ClusterClaim, HeartbeatRequest } from "../../src/agent-api/protocol.ts";
import { listClusterProperties } from "./identity.ts";
import { describeKubeError, isNotFound, type KubeConfig, type RawResponse } from "./kube.ts";
import { sumResourceLists } from "../../src/k8s/quantity.ts";
import { isDNS1123Subdomain } from "../../src/k8s/validation.ts";

/** OCM's `--max-custom-cluster-claims` default: custom claims beyond this many (by name order) are dropped. */
export const MAX_CUSTOM_CLUSTER_CLAIMS = 20;

/** Claim names OCM always keeps, outside the custom-claim cap (`claim_reconcile.go`). */
export const RESERVED_CLAIM_NAMES: readonly string[] = [
  "id.k8s.io",
  "kubeversion.open-cluster-management.io",
  "platform.open-cluster-management.io",
  "product.open-cluster-management.io",
];

/** OCM's failure threshold: an unhealthy kube-apiserver is reported only after this many seconds. */
export const DEFAULT_HEALTH_FAILURE_THRESHOLD_SECONDS = 20;

/**
 * Whether a claim fits `ManagedCluster.status.clusterClaims[]`: name a DNS-1123 subdomain of
 * 1–253 characters, value 1–1024 characters.
 */
export function isValidClaim(claim: ClusterClaim): boolean {
  return claim.name.length >= 1 && isDNS1123Subdomain(claim.name).length === 0 && claim.value.length >= 1 && claim.value.length <= 1024;
}

/**
 * Parses one `--claim name=value` flag (the value may itself contain `=`).
 *
 * @param text e.g. `region.example.com=eu-west-1`.
 * @returns the claim.
 * @throws Error with a message fit for the command line when the text is not `name=value`
 *   or the claim is invalid (see {@link isValidClaim}).
 */
export function parseClaimFlag(text: string): ClusterClaim {
  const i = text.indexOf("=");
  if (i <= 0) throw new Error(`--claim "${text}" is not name=value`);
  const claim = { name: text.slice(0, i), value: text.slice(i + 1) };
  if (!isValidClaim(claim)) {
    throw new Error(`--claim "${text}": the name must be a DNS subdomain (1-253 characters) and the value 1-1024 characters`);
  }
  return claim;
}

const byName = (a: ClusterClaim, b: ClusterClaim): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** Claims the agent reads or makes besides the ClusterProperties and flags (see {@link buildClusterClaims}). */
export interface OtherClaims {
  /** The reserved claims generated from what the agent sees ({@link generatedClaims}): the lowest precedence. */
  generated?: readonly ClusterClaim[];
  /** The member cluster's `ClusterClaim` objects (without the spoke-only ones, {@link listClusterClaims}). */
  clusterClaims?: readonly ClusterClaim[];
}

/**
 * Builds `status.clusterClaims` as OCM does: the generated reserved claims, then the ClusterClaim
 * objects, the ClusterProperties and the `--claim` flags, each overriding the one before for the
 * same name; invalid claims dropped; reserved claims (see {@link RESERVED_CLAIM_NAMES}) first and
 * always kept, then custom claims sorted by name and truncated to `maxCustom`.
 *
 * @param properties the member cluster's ClusterProperties as `{name, value}`.
 * @param flagClaims claims from `--claim name=value`.
 * @param maxCustom cap on custom claims; default 20.
 * @param other the generated claims and the ClusterClaim objects.
 * @returns the claims to report.
 */
export function buildClusterClaims(
  properties: readonly ClusterClaim[],
  flagClaims: readonly ClusterClaim[],
  maxCustom = MAX_CUSTOM_CLUSTER_CLAIMS,
  other: OtherClaims = {},
): ClusterClaim[] {
  const merged = new Map<string, string>();
  for (const c of [...(other.generated ?? []), ...(other.clusterClaims ?? []), ...properties, ...flagClaims]) if (isValidClaim(c)) merged.set(c.name, c.value);
  const all = [...merged].map(([name, value]) => ({ name, value })).sort(byName);
  const reserved = all.filter((c) => RESERVED_CLAIM_NAMES.includes(c.name));
  const custom = all.filter((c) => !RESERVED_CLAIM_NAMES.includes(c.name));
  return [...reserved, ...custom.slice(0, Math.max(0, maxCustom))];
}

/**
 * Reads the kube-apiserver's version (`GET /version`, `gitVersion`), what OCM puts in
 * `status.version.kubernetes`.
 *
 * @throws the KubeError when the API server cannot be read.
 */
export async function getKubernetesVersion(kc: KubeConfig): Promise<string> {
  const info = await kc.json("GET", "/version");
  if (typeof info.gitVersion !== "string") throw new Error("/version has no gitVersion");
  return info.gitVersion;
}

/** What of a Node (`v1`) the status reads. */
export interface Node {
  metadata?: { labels?: Record<string, string> };
  spec?: { unschedulable?: boolean; providerID?: string };
  status?: { capacity?: Record<string, string>; allocatable?: Record<string, string> };
}

/** The API group, version and plural of OCM's `ClusterClaim` on a managed cluster. */
export const CLUSTER_CLAIM_PATH = "/apis/cluster.open-cluster-management.io/v1alpha1/clusterclaims";
/** A ClusterClaim with this label is not reported to the hub (OCM's `labelCustomizedOnly`). */
export const SPOKE_ONLY_LABEL = "open-cluster-management.io/spoke-only";

/**
 * Lists the member cluster's `ClusterClaim` objects (`cluster.open-cluster-management.io/v1alpha1`,
 * cluster-scoped, `spec.value`) as `{name, value}`, leaving out those labelled
 * {@link SPOKE_ONLY_LABEL} and those without a value; empty when the CRD is not installed (404).
 *
 * @throws the KubeError for anything other than 404.
 */
export async function listClusterClaims(kc: KubeConfig): Promise<ClusterClaim[]> {
  let list: Record<string, unknown>;
  try {
    list = await kc.json("GET", CLUSTER_CLAIM_PATH);
  } catch (err) {
    if (isNotFound(err)) return [];
    throw err;
  }
  const out: ClusterClaim[] = [];
  for (const item of Array.isArray(list.items)
    ? (list.items as Array<{ metadata?: { name?: unknown; labels?: Record<string, string> }; spec?: { value?: unknown } }>)
    : []) {
    if (item.metadata?.labels && SPOKE_ONLY_LABEL in item.metadata.labels) continue;
    if (typeof item.metadata?.name === "string" && typeof item.spec?.value === "string" && item.spec.value !== "")
      out.push({ name: item.metadata.name, value: item.spec.value });
  }
  return out.sort(byName);
}

/** OCM's platform claim values by the scheme of the nodes' `spec.providerID`. */
const PLATFORM_BY_PROVIDER: Record<string, string> = {
  aws: "AWS",
  gce: "GCP",
  azure: "Azure",
  ibm: "IBM",
  openstack: "OpenStack",
  vsphere: "VSphere",
  ovirt: "RHV",
  alicloud: "AlibabaCloud",
};

/**
 * The infrastructure the cluster runs on, as OCM's `platform.open-cluster-management.io` claim
 * names it: from the first node's `spec.providerID` scheme (`aws://` AWS, `gce://` GCP, `azure://`
 * Azure, ...), else `Other`.
 */
export function inferPlatform(nodes: readonly Node[]): string {
  for (const n of nodes) {
    const scheme = /^([a-z0-9]+):\/\//.exec(n.spec?.providerID ?? "")?.[1];
    if (scheme) return PLATFORM_BY_PROVIDER[scheme] ?? "Other";
  }
  return "Other";
}

/**
 * The Kubernetes distribution, as OCM's `product.open-cluster-management.io` claim names it: from
 * the server's `gitVersion` (`-eks-` EKS, `-gke.` GKE, `+k3s` K3s, `+rke2` RKE2) or the nodes'
 * labels (`kubernetes.azure.com/cluster` AKS, `node.openshift.io/os_id` OpenShift,
 * `ibm-cloud.kubernetes.io/worker-id` IKS), else `Other`.
 */
export function inferProduct(gitVersion: string | undefined, nodes: readonly Node[]): string {
  const v = gitVersion ?? "";
  if (v.includes("-eks-")) return "EKS";
  if (v.includes("-gke.")) return "GKE";
  if (v.includes("+k3s")) return "K3s";
  if (v.includes("+rke2")) return "RKE2";
  const labels = nodes.flatMap((n) => Object.keys(n.metadata?.labels ?? {}));
  if (labels.includes("kubernetes.azure.com/cluster")) return "AKS";
  if (labels.includes("node.openshift.io/os_id")) return "OpenShift";
  if (labels.includes("ibm-cloud.kubernetes.io/worker-id")) return "IKS";
  return "Other";
}

/**
 * OCM's reserved claims, generated from what the agent sees: `id.k8s.io` (the cluster ID the
 * agent registered with: no secret, it authorizes nothing), `kubeversion.open-cluster-management.io`
 * (the server's gitVersion), `platform.open-cluster-management.io` and
 * `product.open-cluster-management.io` ({@link inferPlatform}, {@link inferProduct}; only when the
 * nodes were read). A part not known is left out.
 */
export function generatedClaims(clusterId: string | undefined, gitVersion: string | undefined, nodes: readonly Node[] | undefined): ClusterClaim[] {
  const out: ClusterClaim[] = [];
  if (clusterId) out.push({ name: "id.k8s.io", value: clusterId });
  if (gitVersion) out.push({ name: "kubeversion.open-cluster-management.io", value: gitVersion });
  if (nodes) {
    out.push({ name: "platform.open-cluster-management.io", value: inferPlatform(nodes) });
    out.push({ name: "product.open-cluster-management.io", value: inferProduct(gitVersion, nodes) });
  }
  return out;
}

/** Node resources summed for `status.capacity` and `status.allocatable`. */
export interface NodeResources {
  /** Resource name → canonical quantity, summed over all nodes. */
  capacity: Record<string, string>;
  /** Resource name → canonical quantity, summed over nodes without `spec.unschedulable`. */
  allocatable: Record<string, string>;
  /** The nodes read (for the platform and product claims); absent from {@link summarizeNodes}. */
  nodes?: Node[];
}

/**
 * Sums node resources as OCM's `resource_reconcile.go`: capacity over all nodes, allocatable
 * over nodes whose `spec.unschedulable` is not true. Quantities are added exactly (`3800m` +
 * `4` = `7800m`, `16Gi` + `15Gi` = `31Gi`).
 *
 * @param nodes the cluster's nodes.
 */
export function summarizeNodes(nodes: readonly Node[]): NodeResources {
  return {
    capacity: sumResourceLists(nodes.map((n) => n.status?.capacity)),
    allocatable: sumResourceLists(nodes.filter((n) => n.spec?.unschedulable !== true).map((n) => n.status?.allocatable)),
  };
}

/**
 * Lists all nodes (`GET /api/v1/nodes`) and sums them with {@link summarizeNodes}.
 *
 * @throws the KubeError when the API server cannot be read.
 */
export async function collectNodeResources(kc: KubeConfig): Promise<NodeResources> {
  const list = await kc.json("GET", "/api/v1/nodes");
  const nodes = Array.isArray(list.items) ? (list.items as Node[]) : [];
  return { ...summarizeNodes(nodes), nodes };
}

/** Result of one kube-apiserver probe. */
export interface ProbeResult {
  /** True when `/livez` (or the `/healthz` fallback) answered 200. */
  ok: boolean;
  /** What happened, for `healthMessage` and logs. */
  message: string;
}

/**
 * Probes the kube-apiserver as OCM's available reconciler does: `GET /livez`; on 404 or 403
 * (older servers, or RBAC without `/livez`) `GET /healthz`. 200 is healthy; any other
 * status or a network error is a failure.
 *
 * @param get performs a GET on a path of the kube-apiserver (e.g. {@link rawGet} bound to a
 *   kubeconfig); may throw on network errors.
 * @returns the probe result; never throws.
 */
export async function probeKubeApiServer(get: (path: string) => Promise<RawResponse>): Promise<ProbeResult> {
  try {
    let path = "/livez";
    let res = await get(path);
    if (res.status === 404 || res.status === 403) {
      path = "/healthz";
      res = await get(path);
    }
    if (res.status === 200) return { ok: true, message: "Managed cluster is available" };
    const detail = res.body.trim().slice(0, 200);
    return { ok: false, message: `kube-apiserver is unavailable: GET ${path} returned ${res.status}${detail ? `: ${detail}` : ""}` };
  } catch (err) {
    return { ok: false, message: `kube-apiserver is unavailable: ${describeKubeError(err)}` };
  }
}

/** The health the agent reports (`healthy`, `healthMessage` of a heartbeat). */
export interface HealthReport {
  healthy: boolean;
  message: string;
}

/**
 * Turns probe results into reported health with OCM's failure threshold: a failure is
 * reported (healthy=false) only when failures have persisted for `thresholdMs`; until then
 * the previous report stands and the tracker is "transient" (OCM re-probes every 5 s then).
 * A success is reported at once and resets the clock. Before any success the report is
 * healthy, as a brief failure at start must not mark the cluster unavailable either.
 *
 * @example
 * const t = new HealthTracker(20_000);
 * t.observe({ ok: false, message: "down" }, 0);      // still healthy, transient
 * t.observe({ ok: false, message: "down" }, 20_000); // healthy=false
 */
export class HealthTracker {
  private report: HealthReport = { healthy: true, message: "kube-apiserver not yet probed" };
  private failingSinceMs: number | undefined;

  /** @param thresholdMs how long (milliseconds) a failure must persist before it is reported; 0 reports at once. */
  constructor(private readonly thresholdMs: number) {}

  /**
   * Records a probe result taken at `nowMs` (milliseconds).
   *
   * @returns the report to send now, and whether a failure is still within the threshold.
   */
  observe(result: ProbeResult, nowMs: number): HealthReport & { transient: boolean } {
    if (result.ok) {
      this.failingSinceMs = undefined;
      this.report = { healthy: true, message: result.message };
      return { ...this.report, transient: false };
    }
    this.failingSinceMs ??= nowMs;
    if (nowMs - this.failingSinceMs >= this.thresholdMs) {
      this.report = { healthy: false, message: result.message };
      return { ...this.report, transient: false };
    }
    return { ...this.report, transient: true };
  }

  /** The report as of the last observation. */
  current(): HealthReport {
    return { ...this.report };
  }
}

/** The status fields of a heartbeat that come from reading the cluster (health is separate). */
export type ClusterStatus = Omit<HeartbeatRequest, "healthy" | "healthMessage">;

/**
 * Reads version, node resources and ClusterProperties, and builds the heartbeat's status
 * fields. Each part is read independently: a part that fails is left out of the status and
 * its error returned, so a heartbeat still renews the lease when the API server is degraded.
 *
 * @param kc the member cluster's configuration.
 * @param flagClaims claims from `--claim`.
 * @param maxCustomClaims custom claim cap; default 20.
 * @param clusterId the cluster ID the agent registered with, for the `id.k8s.io` claim.
 * @returns the status and the errors met (as text); never throws.
 */
export async function collectClusterStatus(
  kc: KubeConfig,
  flagClaims: readonly ClusterClaim[] = [],
  maxCustomClaims = MAX_CUSTOM_CLUSTER_CLAIMS,
  clusterId?: string,
): Promise<{ status: ClusterStatus; errors: string[] }> {
  const [version, resources, properties, clusterClaims] = await Promise.allSettled([
    getKubernetesVersion(kc),
    collectNodeResources(kc),
    listClusterProperties(kc),
    listClusterClaims(kc),
  ]);
  const status: ClusterStatus = {};
  const errors: string[] = [];
  if (version.status === "fulfilled") status.version = { kubernetes: version.value };
  else errors.push(`reading /version: ${describeKubeError(version.reason)}`);
  if (resources.status === "fulfilled") {
    status.capacity = resources.value.capacity;
    status.allocatable = resources.value.allocatable;
  } else errors.push(`listing nodes: ${describeKubeError(resources.reason)}`);
  // Left out on failure rather than sent without the properties or claims, which would drop claims at the hub.
  if (properties.status === "rejected") errors.push(`listing ClusterProperties: ${describeKubeError(properties.reason)}`);
  if (clusterClaims.status === "rejected") errors.push(`listing ClusterClaims: ${describeKubeError(clusterClaims.reason)}`);
  if (properties.status === "fulfilled" && clusterClaims.status === "fulfilled") {
    const generated = generatedClaims(
      clusterId,
      version.status === "fulfilled" ? version.value : undefined,
      resources.status === "fulfilled" ? resources.value.nodes : undefined,
    );
    status.clusterClaims = buildClusterClaims(properties.value, flagClaims, maxCustomClaims, { generated, clusterClaims: clusterClaims.value });
  }
  return { status, errors };
}
