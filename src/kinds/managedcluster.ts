/**
 * ManagedCluster (`cluster.open-cluster-management.io/v1`, cluster-scoped, short name `mcl`),
 * with OCM's fields, defaults and hub-side rules (`api:cluster/v1/types.go`, the registration
 * webhooks and hub controllers; see ../shared/reference/ocm-semantics.md sections 1-2).
 */
import { z } from "zod";
import { badRequest, type StatusCause } from "../k8s/errors.ts";
import type { KindDefinition, WriteContext } from "../k8s/kind.ts";
import { addFieldErrors, ConditionsSchema, ObjectMetaSchema, rfc3339, setCondition, findCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { isQualifiedName, validateResourceList } from "../k8s/validation.ts";
import { decodeBase64 } from "./secret.ts";
import { TAINT_EFFECTS } from "./managedcluster-taints.ts";

/** Label naming a cluster's exclusive ManagedClusterSet. */
export const CLUSTERSET_LABEL = "cluster.open-cluster-management.io/clusterset";
/** Built-in taint for a cluster whose agent reports its kube-apiserver unhealthy (Available=False). */
export const TAINT_UNAVAILABLE = "cluster.open-cluster-management.io/unavailable";
/** Built-in taint for a cluster whose lease stopped (Available=Unknown or missing). */
export const TAINT_UNREACHABLE = "cluster.open-cluster-management.io/unreachable";
/**
 * Annotation in which hubs before the identity fix recorded the cluster ID. The ID is no secret
 * and never authorises anything, so it is no longer served: the hub drops the annotation from
 * what it serves and at the object's next write (the ID stays in the D1 `cluster_identities`
 * index, which keeps one cluster per ID).
 */
export const LEGACY_CLUSTER_ID_ANNOTATION = "flotilla.dev/cluster-id";
/**
 * Annotation set by the hub (never by users) while a registration for this cluster with a new key
 * waits for an admin: the key's ID (RFC 7638 thumbprint). OCM holds such a registration as a
 * pending CertificateSigningRequest.
 */
export const PENDING_KEY_ANNOTATION = "flotilla.dev/pending-key-id";
/**
 * Annotation an admin sets to accept the pending key (`flotilla accept <cluster> --key <kid>`):
 * its value must be the pending key's ID; the hub then makes that key the cluster's only key and
 * removes both annotations. OCM: approving the cluster's new CSR.
 */
export const ACCEPT_KEY_ANNOTATION = "flotilla.dev/accept-key-id";

/** OCM condition types and reasons used on ManagedCluster. */
export const Conditions = {
  HubAccepted: "HubAcceptedManagedCluster",
  Joined: "ManagedClusterJoined",
  Available: "ManagedClusterConditionAvailable",
} as const;

const quantity = z.union([z.string(), z.number()]);
/** A resource list of a ManagedCluster's status: each value parsed as a quantity (422 `status.capacity[cpu]` for a malformed one, as the CRD's quantity pattern refuses it). */
const resourceList = z.record(z.string(), quantity).superRefine((m, ctx) => addFieldErrors(ctx, m, validateResourceList(m, "")));

/** A ManagedCluster taint: effects NoSelect, PreferNoSelect, NoSelectIfNew; `timeAdded` is stamped by the hub. */
export const TaintSchema = z.strictObject({
  key: z.string().min(1).max(316),
  value: z.string().max(1024).optional(),
  effect: z.enum(TAINT_EFFECTS),
  timeAdded: z.string().nullable().optional(),
});

/** A ManagedCluster taint value. */
export type Taint = z.infer<typeof TaintSchema>;

/** A cluster claim reported by the agent: name 1-253, value 1-1024 characters. */
export const ClusterClaimSchema = z.strictObject({
  name: z.string().min(1).max(253),
  value: z.string().min(1).max(1024),
});

/** `spec` of a ManagedCluster. */
export const ManagedClusterSpecSchema = z.strictObject({
  managedClusterClientConfigs: z
    // caBundle is `[]byte` in OCM's Go type (CRD format byte): standard base64, as the apiserver decodes it.
    .array(
      z.strictObject({
        url: z.string().min(1),
        caBundle: z
          .string()
          .refine((v) => decodeBase64(v) !== null, "illegal base64 data: must be standard base64 with padding")
          .optional(),
      }),
    )
    .optional(),
  hubAcceptsClient: z.boolean().optional(),
  leaseDurationSeconds: z.number().int().min(0).max(2147483647).optional(),
  taints: z.array(TaintSchema).optional(),
});

/** `status` of a ManagedCluster. */
export const ManagedClusterStatusSchema = z.strictObject({
  conditions: ConditionsSchema.optional(),
  capacity: resourceList.optional(),
  allocatable: resourceList.optional(),
  version: z.strictObject({ kubernetes: z.string().optional() }).optional(),
  clusterClaims: z.array(ClusterClaimSchema).optional(),
  managedNamespaces: z.array(z.record(z.string(), z.unknown())).optional(),
});

const ManagedClusterSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  spec: ManagedClusterSpecSchema.optional(),
  status: ManagedClusterStatusSchema.nullable().optional(),
});

/** A ManagedCluster's spec as stored (after defaults). */
export interface ManagedClusterSpec {
  hubAcceptsClient: boolean;
  leaseDurationSeconds: number;
  taints?: Taint[];
  managedClusterClientConfigs?: { url: string; caBundle?: string }[];
}

/** A ManagedCluster's status as stored. */
export interface ManagedClusterStatus {
  conditions?: Condition[];
  capacity?: Record<string, string>;
  allocatable?: Record<string, string>;
  version?: { kubernetes?: string };
  clusterClaims?: { name: string; value: string }[];
}

/** The empty spec or status a read of an object without one gets (frozen: a write to it throws). */
const NONE: Readonly<Record<string, never>> = Object.freeze({});

/**
 * A ManagedCluster's spec, typed, for reading: an object without one gives a frozen empty spec.
 * Never changes `obj`, which may be a Durable Object's frozen copy.
 */
export function specOf(obj: KubeObject): ManagedClusterSpec {
  return (obj.spec ?? NONE) as unknown as ManagedClusterSpec;
}

/**
 * A ManagedCluster's status, typed, for reading (a pending cluster has none yet: a frozen empty
 * status then). Never changes `obj`, which may be a Durable Object's frozen copy; to change the
 * status of a copy being written, use {@link writableStatusOf}.
 */
export function statusOf(obj: KubeObject): Readonly<ManagedClusterStatus> {
  return (obj.status ?? NONE) as ManagedClusterStatus;
}

/**
 * The status of a ManagedCluster being written, for changing: created empty on `obj` when missing.
 *
 * @throws TypeError when `obj` is frozen (a stored object is changed only on a copy).
 */
export function writableStatusOf(obj: KubeObject): ManagedClusterStatus {
  obj.status ??= {};
  return obj.status as ManagedClusterStatus;
}

function sameTaint(a: Taint, b: Taint): boolean {
  return a.key === b.key && (a.value ?? "") === (b.value ?? "") && a.effect === b.effect;
}

/**
 * Stamps `timeAdded` on taints as OCM's mutating webhook does: a new or changed taint gets the
 * current time; an unchanged taint keeps its old time. A client-set `timeAdded` on a new or changed
 * taint is refused with 400 `It is not allowed to set TimeAdded of Taint "<keys>"`.
 *
 * @throws ApiError 400
 */
export function stampTaints(obj: KubeObject, old: KubeObject | undefined, nowMs: number): void {
  const taints = specOf(obj).taints;
  if (!taints) return;
  const oldTaints = old ? (specOf(old).taints ?? []) : [];
  const refused: string[] = [];
  let firstIndex = -1;
  taints.forEach((t, i) => {
    const prev = oldTaints.find((o) => sameTaint(o, t));
    if (prev) {
      if (t.timeAdded == null) t.timeAdded = prev.timeAdded ?? rfc3339(nowMs);
      else if (t.timeAdded !== prev.timeAdded) {
        refused.push(t.key);
        if (firstIndex < 0) firstIndex = i;
      }
      return;
    }
    if (t.timeAdded != null) {
      refused.push(t.key);
      if (firstIndex < 0) firstIndex = i;
    } else t.timeAdded = rfc3339(nowMs);
  });
  if (refused.length > 0) {
    throw badRequest(`It is not allowed to set TimeAdded of Taint "${refused.join(",")}"`, `spec.taints[${firstIndex}].timeAdded`);
  }
}

function validate(obj: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = specOf(obj);
  spec.taints?.forEach((t, i) => {
    for (const m of isQualifiedName(t.key)) causes.push({ field: `spec.taints[${i}].key`, message: `Invalid value: ${JSON.stringify(t.key)}: ${m}` });
  });
  const seen = new Set<string>();
  spec.taints?.forEach((t, i) => {
    const k = `${t.key}:${t.effect}`;
    if (seen.has(k))
      causes.push({ field: `spec.taints[${i}]`, message: `Duplicate value: taint ${t.key} with effect ${t.effect}`, reason: "FieldValueDuplicate" });
    seen.add(k);
  });
  spec.managedClusterClientConfigs?.forEach((c, i) => {
    let ok: boolean;
    try {
      ok = new URL(c.url).protocol === "https:";
    } catch {
      ok = false;
    }
    if (!ok)
      causes.push({ field: `spec.managedClusterClientConfigs[${i}].url`, message: `Invalid value: ${JSON.stringify(c.url)}: url must be a valid https URL` });
  });
  return causes;
}

/** Default lease duration in seconds (OCM `+kubebuilder:default=60`). */
export const DEFAULT_LEASE_DURATION_SECONDS = 60;

/** The ManagedCluster kind. Stored by the cluster's Durable Object, indexed in D1. */
export const ManagedClusterKind: KindDefinition = {
  group: "cluster.open-cluster-management.io",
  version: "v1",
  kind: "ManagedCluster",
  listKind: "ManagedClusterList",
  plural: "managedclusters",
  singular: "managedcluster",
  shortNames: ["mcl", "mcls"],
  namespaced: false,
  hasStatus: true,
  nameIsLabel: true,
  schema: ManagedClusterSchema,
  storage: "cluster",
  printerColumns: [
    { name: "Hub Accepted", type: "boolean", jsonPath: ".spec.hubAcceptsClient" },
    { name: "Managed Cluster URLs", type: "string", jsonPath: ".spec.managedClusterClientConfigs[*].url" },
    { name: "Joined", type: "string", jsonPath: '.status.conditions[?(@.type=="ManagedClusterJoined")].status' },
    { name: "Available", type: "string", jsonPath: '.status.conditions[?(@.type=="ManagedClusterConditionAvailable")].status' },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  defaults(obj) {
    obj.spec ??= {};
    obj.spec.hubAcceptsClient ??= false;
    obj.spec.leaseDurationSeconds ??= DEFAULT_LEASE_DURATION_SECONDS;
    // OCM's DefaultClusterSet webhook: a cluster without a set label joins `default`.
    obj.metadata.labels ??= {};
    obj.metadata.labels[CLUSTERSET_LABEL] ??= "default";
  },
  validate,
  prepareForCreate(obj, ctx: WriteContext) {
    stampTaints(obj, undefined, ctx.now);
  },
  prepareForUpdate(obj, old, ctx: WriteContext) {
    stampTaints(obj, old, ctx.now);
  },
  present(obj) {
    if (obj.metadata.annotations?.[LEGACY_CLUSTER_ID_ANNOTATION] === undefined) return obj;
    const { [LEGACY_CLUSTER_ID_ANNOTATION]: _id, ...annotations } = obj.metadata.annotations;
    const { annotations: _all, ...metadata } = obj.metadata;
    return { ...obj, metadata: Object.keys(annotations).length > 0 ? { ...metadata, annotations } : metadata };
  },
};

/**
 * The hub controllers of OCM applied to one ManagedCluster after any write (pure; mutates `obj`):
 * - accept/deny (`pkg/registration/hub/managedcluster`): `hubAcceptsClient` true gives
 *   `HubAcceptedManagedCluster=True` (HubClusterAdminAccepted); false after having been accepted
 *   gives False (HubClusterAdminDenied);
 * - taints (`pkg/registration/hub/taint`): Available missing or Unknown adds the NoSelect taint
 *   `unreachable` and removes `unavailable`; False adds `unavailable` and removes `unreachable`;
 *   True removes both. Added taints carry `timeAdded = now`.
 * `nowMs` is epoch milliseconds.
 */
export function reconcileManagedCluster(obj: KubeObject, nowMs: number): void {
  const now = rfc3339(nowMs);
  const spec = specOf(obj);
  const status = writableStatusOf(obj);
  const conditions = (status.conditions ??= []);
  const accepted = findCondition(conditions, Conditions.HubAccepted);
  if (spec.hubAcceptsClient) {
    setCondition(
      conditions,
      { type: Conditions.HubAccepted, status: "True", reason: "HubClusterAdminAccepted", message: "Accepted by hub cluster admin" },
      now,
    );
  } else if (accepted) {
    setCondition(conditions, { type: Conditions.HubAccepted, status: "False", reason: "HubClusterAdminDenied", message: "Denied by hub cluster admin" }, now);
  }
  const available = findCondition(conditions, Conditions.Available)?.status;
  const want = available === "True" ? undefined : available === "False" ? TAINT_UNAVAILABLE : TAINT_UNREACHABLE;
  let taints = (spec.taints ?? []).filter((t) => (t.key !== TAINT_UNAVAILABLE && t.key !== TAINT_UNREACHABLE) || t.key === want);
  if (want && !taints.some((t) => t.key === want && t.effect === "NoSelect")) {
    taints = [...taints, { key: want, effect: "NoSelect", timeAdded: now }];
  }
  if (taints.length > 0 || spec.taints) spec.taints = taints;
  if (conditions.length === 0) delete status.conditions;
  if (Object.keys(status).length === 0) delete obj.status;
}
