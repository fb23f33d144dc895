/**
 * The agent protocol's answers, hub -> agent (docs/agent-protocol.md): the bodies of the hub's
 * 2xx answers, which the agent decodes with these schemas. Part of src/agent-api/protocol.ts (which
 * re-exports everything here; import from there, except in the agent's run-time code): written
 * with zod/mini so that the agent, which imports only this module at run time, does not load
 * classic zod (see protocol.ts).
 *
 * Answers are tolerant (an agent drops fields a newer hub adds; a delivered work keeps all of its
 * own) but every documented field is checked, so a malformed answer is an error the agent
 * reports, never a crash.
 */
import * as z from "zod/mini";

/** `leaseDurationSeconds` as the hub tells it: whole seconds >= 0 (0 means OCM's default, 60). */
const leaseSeconds = z.int().check(z.minimum(0));
/** A proxied stream's number (docs/proxy.md "On the channel"). */
const proxyStream = z.int().check(z.minimum(1), z.maximum(0xffffffff));
/** An opaque works ETag. */
const etag = z.string().check(z.minLength(1), z.maxLength(256));

/**
 * Answer of POST /agent/v1/register (201 a new cluster, 200 the same key again, 202 a new key
 * held until an admin accepts it) and of GET /agent/v1/clusters/{name}: what the agent learns
 * about its registration. `denied`: HubAcceptedManagedCluster=False (reason
 * HubClusterAdminDenied); `joined`: ManagedClusterJoined=True; `keyPending`: the key the agent
 * registered or signed with waits for `flotilla accept <cluster> --key <kid>`.
 */
export const ClusterInfoSchema = z.object({
  clusterName: z.string().check(z.minLength(1)),
  hubAcceptsClient: z.boolean(),
  denied: z.boolean(),
  joined: z.boolean(),
  leaseDurationSeconds: leaseSeconds,
  keyPending: z.boolean(),
});

/** A registration or info answer. */
export type ClusterInfo = z.infer<typeof ClusterInfoSchema>;

/**
 * Answer of POST /agent/v1/clusters/{name}/heartbeat: the lease duration (seconds) until the
 * next heartbeat, the cluster's works ETag (opaque; a value other than the agent's last one
 * means its works changed: the poll transport fetches them then, and only then) and whether the
 * cluster is leaving (docs/agent-protocol.md "Leave").
 */
export const HeartbeatAnswerSchema = z.object({
  leaseDurationSeconds: leaseSeconds,
  worksEtag: etag,
  leaving: z.boolean(),
});

/** A heartbeat answer. */
export type HeartbeatAnswer = z.infer<typeof HeartbeatAnswerSchema>;

/** Answer of POST /agent/v1/clusters/{name}/rotate-key: the RFC 7638 thumbprint of the new key. */
export const RotateKeyAnswerSchema = z.object({ kid: z.string().check(z.minLength(1), z.maxLength(128)) });

/** A key rotation answer. */
export type RotateKeyAnswer = z.infer<typeof RotateKeyAnswerSchema>;

/**
 * A ManifestWork as a works answer delivers it: the stored object without `status`, every field
 * kept. Only what the agent keys on is checked here (a name and a uid, a spec object); the
 * spec's shape was validated when it was written, and the agent's work controller reads it
 * defensively.
 */
export const DeliveredWorkSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string().check(z.minLength(1)), uid: z.string().check(z.minLength(1)) }),
  spec: z.looseObject({}),
});

/** A delivered ManifestWork. */
export type DeliveredWork = z.infer<typeof DeliveredWorkSchema>;

/**
 * A replicated Policy (`policy.open-cluster-management.io/v1`, `<rootns>.<rootname>` in the
 * cluster's namespace) as the works delivery carries it: the stored object without `status`. Only
 * what the agent keys on is checked (name, uid, a spec object); the agent reads the spec
 * defensively (agent/src/policy/).
 */
export const DeliveredPolicySchema = z.looseObject({
  metadata: z.looseObject({ name: z.string().check(z.minLength(1)), uid: z.string().check(z.minLength(1)), generation: z.optional(z.number()) }),
  spec: z.looseObject({}),
});

/** A delivered replicated Policy. */
export type DeliveredPolicy = z.infer<typeof DeliveredPolicySchema>;

/**
 * Answer 200 of GET /agent/v1/clusters/{name}/works (header `ETag: "<etag>"` too): the works
 * ETag, whether the cluster is leaving, every ManifestWork of the cluster's namespace and, since
 * issue 32, its replicated Policies (`policies`, absent from older hubs: none). The ETag covers
 * both. A 304 (the `If-None-Match` ETag still matches) has no body.
 */
export const WorksAnswerSchema = z.object({
  etag,
  leaving: z.boolean(),
  works: z.array(DeliveredWorkSchema),
  policies: z.optional(z.array(DeliveredPolicySchema)),
});

/** A works answer. */
export type WorksAnswer = z.infer<typeof WorksAnswerSchema>;

/**
 * Answer 200 of PUT /agent/v1/clusters/{name}/works/{work}/status: the work's new
 * `resourceVersion` ("" when the report changed nothing the hub stores); with `stale: true` and
 * the `sequence` last committed when the report's sequence was not newer than it (nothing
 * written: docs/agent-protocol.md "Report order").
 */
export const WorkStatusAnswerSchema = z.object({ resourceVersion: z.string(), stale: z.optional(z.boolean()), sequence: z.optional(z.number()) });

/** A work status answer. */
export type WorkStatusAnswer = z.infer<typeof WorkStatusAnswerSchema>;

/**
 * Answer 200 of PUT /agent/v1/clusters/{name}/policies/{policy}/status (and the `ack` of a
 * `compliance` message): the replicated Policy's new `resourceVersion` ("" when nothing changed);
 * `stale` and `sequence` as in {@link WorkStatusAnswerSchema}.
 */
export const PolicyStatusAnswerSchema = z.object({ resourceVersion: z.string(), stale: z.optional(z.boolean()), sequence: z.optional(z.number()) });

/** A policy status answer. */
export type PolicyStatusAnswer = z.infer<typeof PolicyStatusAnswerSchema>;

/**
 * One template's compliance in a policy compliance report (src/agent-api/protocol.ts
 * `PolicyComplianceReportSchema`, which the hub decodes): declared here as a plain type so that
 * the agent's run-time code needs no classic zod.
 */
export interface PolicyTemplateCompliance {
  name: string;
  compliant: "Compliant" | "NonCompliant" | "Pending";
  message: string;
  /** RFC 3339: when this message began. */
  timestamp: string;
}

/** A policy compliance report as the agent sends it. */
export interface PolicyComplianceReport {
  uid: string;
  /** The report's sequence (src/agent-api/protocol.ts `ReportSequenceSchema`). */
  sequence?: number;
  templates: PolicyTemplateCompliance[];
}

/** Answer 200 of POST /agent/v1/clusters/{name}/left: an empty object. */
export const LeftAnswerSchema = z.object({});

/** A leave answer. */
export type LeftAnswer = z.infer<typeof LeftAnswerSchema>;

/** Answer 200 of POST /agent/v1/clusters/{name}/addons/status: an empty object. */
export const AddonStatusAnswerSchema = z.object({});

/** An add-on status answer. */
export type AddonStatusAnswer = z.infer<typeof AddonStatusAnswerSchema>;

/**
 * Answer 200 of POST /agent/v1/clusters/{name}/addons/{addon}/token: a ServiceAccount token of
 * the add-on's ServiceAccount `<addon>-agent` in the cluster's namespace (OCM's token-based
 * add-on registration) and when it expires (RFC 3339). A secret: the agent writes it into the
 * add-on's Secret and logs it nowhere.
 */
export const AddonTokenAnswerSchema = z.object({
  token: z.string().check(z.minLength(1), z.maxLength(8192)),
  expirationTimestamp: z.string().check(z.minLength(1)),
});

/** An add-on token answer. */
export type AddonTokenAnswer = z.infer<typeof AddonTokenAnswerSchema>;

/**
 * A message of the agent channel from the hub (src/agent-api/channel-protocol.ts `HubMessage`,
 * docs/agent-protocol.md "Channel"), as the agent decodes it: tolerant of fields a newer hub adds,
 * every documented field checked. A `works` message's works are checked as a works answer's are.
 * The `error` message's `status` is a Kubernetes Status: its `code`, `reason` and `message` are
 * what the agent reads.
 */
export const ChannelHubMessageSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("welcome"), leaseDurationSeconds: leaseSeconds, worksEtag: etag, leaving: z.boolean() }),
  z.object({ type: z.literal("lease"), leaseDurationSeconds: leaseSeconds }),
  z.object({ type: z.literal("works"), etag, leaving: z.boolean(), works: z.array(DeliveredWorkSchema), policies: z.optional(z.array(DeliveredPolicySchema)) }),
  z.object({ type: z.literal("works-changed"), etag, leaving: z.boolean() }),
  z.object({
    type: z.literal("ack"),
    id: z.string(),
    resourceVersion: z.optional(z.string()),
    leaseDurationSeconds: z.optional(leaseSeconds),
    token: z.optional(z.string()),
    expirationTimestamp: z.optional(z.string()),
    stale: z.optional(z.boolean()),
    sequence: z.optional(z.number()),
  }),
  z.object({
    type: z.literal("error"),
    id: z.string(),
    status: z.looseObject({ code: z.int(), reason: z.optional(z.string()), message: z.optional(z.string()) }),
  }),
  z.object({
    type: z.literal("proxy-open"),
    stream: proxyStream,
    method: z.string().check(z.minLength(1), z.maxLength(16)),
    path: z.string().check(z.minLength(1), z.maxLength(8192)),
    query: z.string().check(z.maxLength(16384)),
    headers: z.record(z.string(), z.array(z.string())),
    body: z.optional(z.string()),
    websocket: z.optional(z.boolean()),
    inline: z.optional(z.boolean()),
    user: z.object({
      name: z.string(),
      groups: z.array(z.string()),
      uid: z.optional(z.string()),
      extra: z.optional(z.record(z.string(), z.array(z.string()))),
    }),
    hub: z.string(),
  }),
  z.object({ type: z.literal("proxy-credit"), stream: proxyStream, bytes: z.int().check(z.minimum(0)) }),
  z.object({ type: z.literal("proxy-cancel"), stream: proxyStream, reason: z.string() }),
]);

/** A hub channel message, as the agent decodes it. */
export type ChannelHubMessage = z.infer<typeof ChannelHubMessageSchema>;
