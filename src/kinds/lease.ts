/**
 * `coordination.k8s.io/v1` Leases as an OCM hub holds them: in each accepted cluster's namespace
 * the Lease `managed-cluster-lease` (OCM's `pkg/registration/hub/lease/controller.go` creates it
 * with holderIdentity the same name and the label `open-cluster-management.io/cluster-name`; the
 * registration agent renews its `spec.renewTime`). Flotilla keeps no such object: the lease lives
 * in the cluster's Durable Object (durable-objects/cluster/lease.ts), renewed by heartbeats and by
 * the channel's pings, and the API computes the Lease from it when read (src/api/leases.ts). This
 * module holds the kind (names, schema, kubectl's columns) and the pure shape of the object.
 */
import { z } from "zod";
import type { KindDefinition } from "../k8s/kind.ts";
import { microTime, ObjectMetaSchema, type KubeObject } from "../k8s/meta.ts";
import { OCM_CLUSTER_NAME_LABEL } from "./clusterprofile.ts";

/** The API group of Leases. */
export const COORDINATION_GROUP = "coordination.k8s.io";
/** The name of a cluster's Lease in its namespace, and its holderIdentity (OCM's `LeaseName`). */
export const CLUSTER_LEASE_NAME = "managed-cluster-lease";

/** MicroTime: RFC 3339 with six fractional digits (`2006-01-02T15:04:05.000000Z07:00`). */
const MicroTimeSchema = z.string().nullable().optional();

/** `coordinationv1.LeaseSpec` (api `coordination/v1/types.go`), every field optional. */
const LeaseSpecSchema = z.strictObject({
  holderIdentity: z.string().nullable().optional().describe("The identity of the holder: for a cluster's lease, `managed-cluster-lease` (OCM's)."),
  leaseDurationSeconds: z
    .number()
    .int()
    .min(1)
    .max(2147483647)
    .nullable()
    .optional()
    .describe(
      "How long, in seconds, the holder's renewal is good for: the ManagedCluster's `spec.leaseDurationSeconds` (60 when 0). The hub marks the cluster Available=Unknown after 5 times this long without a renewal.",
    ),
  acquireTime: MicroTimeSchema.describe("When the current lease was acquired (MicroTime). Not set on a cluster's lease."),
  renewTime: MicroTimeSchema.describe(
    "When the holder last renewed the lease (MicroTime: RFC 3339 with microseconds, UTC): the agent's last heartbeat, status message or channel ping.",
  ),
  leaseTransitions: z
    .number()
    .int()
    .min(0)
    .max(2147483647)
    .nullable()
    .optional()
    .describe("How many times the lease changed holders. Not set on a cluster's lease."),
  strategy: z.string().nullable().optional().describe("The coordinated leader election strategy. Not set on a cluster's lease."),
  preferredHolder: z.string().nullable().optional().describe("The holder the coordinated leader election prefers. Not set on a cluster's lease."),
});

/** A Lease (kube-apiserver's schema; the hub serves its clusters' leases read-only). */
export const LeaseSchema = z
  .strictObject({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: ObjectMetaSchema,
    spec: LeaseSpecSchema.nullable().optional(),
  })
  .describe(
    "Lease is OCM's `managed-cluster-lease` of a member cluster, in the cluster's namespace: its renewTime is the agent's last heartbeat, status message or channel ping. Computed by the hub when read (get and list); it exists once the cluster has been accepted, and is never written through the API.",
  );

/**
 * What the cluster's Durable Object keeps of its lease, as it crosses the RPC boundary
 * (durable-objects/cluster/lease.ts `Lease.served`): the cluster's name, uid and
 * creationTimestamp (RFC 3339), the last renewal (epoch milliseconds) and the lease interval
 * (seconds).
 */
export interface ClusterLeaseRecord {
  cluster: string;
  clusterUid: string;
  clusterCreated: string;
  renewMs: number;
  leaseDurationSeconds: number;
}

/** The labels of cluster `cluster`'s Lease: OCM's `open-cluster-management.io/cluster-name`. */
function leaseLabels(cluster: string): Record<string, string> {
  return { [OCM_CLUSTER_NAME_LABEL]: cluster };
}

/**
 * The part of cluster `cluster`'s Lease that is known without reading the cluster's object (name,
 * namespace, labels): what label and field selectors look at, so a list decides which clusters'
 * objects to read before it reads them.
 */
export function leaseSkeleton(cluster: string): KubeObject {
  return {
    apiVersion: `${COORDINATION_GROUP}/v1`,
    kind: "Lease",
    metadata: { name: CLUSTER_LEASE_NAME, namespace: cluster, uid: "", resourceVersion: "", creationTimestamp: "", labels: leaseLabels(cluster) },
  };
}

/**
 * The Lease served for a cluster's lease `r`, with the object's `uid` (derived from the
 * cluster's, src/api/leases.ts): holderIdentity and name `managed-cluster-lease`, OCM's
 * cluster-name label, `leaseDurationSeconds`, `renewTime` as a MicroTime; `resourceVersion` the
 * renewal in epoch milliseconds (it changes exactly when renewTime does); `creationTimestamp` the
 * ManagedCluster's (the hub keeps no separate time for the lease's start). Pure.
 */
export function clusterLease(r: ClusterLeaseRecord, uid: string): KubeObject {
  return {
    apiVersion: `${COORDINATION_GROUP}/v1`,
    kind: "Lease",
    metadata: {
      name: CLUSTER_LEASE_NAME,
      namespace: r.cluster,
      uid,
      resourceVersion: String(r.renewMs),
      creationTimestamp: r.clusterCreated,
      labels: leaseLabels(r.cluster),
    },
    spec: { holderIdentity: CLUSTER_LEASE_NAME, leaseDurationSeconds: r.leaseDurationSeconds, renewTime: microTime(r.renewMs) },
  };
}

/** Why a write of a Lease is refused: the hub keeps each cluster's lease from its agent's heartbeats. */
const WRITE_REFUSAL =
  `the server does not allow this method on the requested resource: leases.${COORDINATION_GROUP} are kept by the hub ` +
  `from each cluster agent's heartbeats and pings, and are read-only (get and list)`;

/**
 * Why a watch of Leases is refused (kube-apiserver's words for a resource without watch): a
 * renewal by the channel's pings wakes nothing on the hub (an idle cluster costs nothing per
 * ping), so there is no event to send.
 */
const WATCH_REFUSAL =
  `watch is not supported on resources of kind "leases.${COORDINATION_GROUP}": the channel's pings renew a cluster's ` +
  `lease without waking anything on the hub, so no change is seen to stream; get or list the leases again instead`;

/**
 * `leases.coordination.k8s.io/v1`, namespaced, served read-only and computed ({@link
 * KindDefinition.computed}); `kubectl get leases` prints NAME, HOLDER, AGE as kube-apiserver's
 * printer does.
 */
export const LeaseKind: KindDefinition = {
  group: COORDINATION_GROUP,
  version: "v1",
  kind: "Lease",
  listKind: "LeaseList",
  plural: "leases",
  singular: "lease",
  shortNames: [],
  namespaced: true,
  hasStatus: false,
  schema: LeaseSchema,
  storage: "d1",
  systemOwned: true,
  computed: { refusal: WRITE_REFUSAL, watchRefusal: WATCH_REFUSAL },
  printerColumns: [
    { name: "Holder", type: "string", jsonPath: ".spec.holderIdentity" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
};
