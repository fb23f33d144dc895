/**
 * The agent protocol, defined once (docs/agent-protocol.md): its constants, the HTTP bodies in
 * both directions (what the agent sends and what the hub answers); the messages of the WebSocket
 * channel are in ./channel-protocol.ts (their constants in ./channel-constants.ts, the hub's
 * messages as the agent decodes them in ./protocol-answers.ts). The hub (src/agent-api/routes.ts, durable-objects/) decodes requests with
 * these schemas; the agent (agent/src/hub-client.ts, bundled by esbuild) decodes answers with
 * them; the benchmarks (bench/) build their requests with these types.
 *
 * Requests are strict (an unknown field is 400, as Kubernetes' strict decoding); answers are
 * tolerant (an agent drops fields a newer hub adds; a delivered work keeps all of its own) but
 * every documented field is checked, so a malformed answer is an error the agent reports, never
 * a crash.
 */
import * as z from "zod";
import { ApiError, invalid } from "../k8s/errors.ts";
import { addFieldErrors, checkSchema } from "../k8s/meta.ts";
import { isRfc3339DateTime, validateResourceList } from "../k8s/validation.ts";

/**
 * Decodes a request body (or a channel message's payload) with its schema, strictly, as
 * kube-apiserver's strict decoding: the hub's routes (src/agent-api/routes.ts) and the cluster's
 * channel (durable-objects/cluster/connection.ts) decode every agent request with it.
 *
 * @param what the plural the errors name (`workstatuses`, `heartbeats`, ...).
 * @returns the parsed body, with the schema's defaults.
 * @throws ApiError 400 `BadRequest` "strict decoding error" naming each unknown field; 422
 *   `Invalid` with one cause per field that fails the schema.
 */
export function decode<T extends z.ZodType>(schema: T, body: unknown, what: string): z.infer<T> {
  const check = checkSchema(schema, body);
  if (check.unknownFields.length > 0) {
    throw new ApiError(400, "BadRequest", `strict decoding error: ${check.unknownFields.map((f) => `unknown field "${f}"`).join(", ")}`, {
      causes: check.unknownFields.map((f) => ({ reason: "FieldValueInvalid", message: "unknown field", field: f })),
    });
  }
  if (check.causes.length > 0) throw invalid({ group: "flotilla.dev", plural: what, kind: what }, check.causes);
  // The check parsed it already (no unknown field, no cause: it passed).
  return check.value as z.infer<T>;
}

/** The `aud` every agent JWT carries. */
export const AGENT_AUDIENCE = "flotilla";
/** Longest lifetime (exp - iat) an agent JWT may have, in seconds. */
export const MAX_TOKEN_LIFETIME_SECONDS = 60;
/** Clock skew tolerated when checking an agent JWT's times, in seconds. */
export const CLOCK_SKEW_SECONDS = 30;
/** The `aud` of a registration proof (a JWT signed by the key being registered). */
export const REGISTRATION_AUDIENCE = "flotilla-registration";
/**
 * The protected-header parameter of an agent JWT that carries the hub's key tag: an HMAC the hub
 * issued for (cluster name, key ID) that lets the Worker refuse strangers before any Durable
 * Object is touched (docs/agent-protocol.md "Identity").
 */
export const KEY_TAG_HEADER_PARAM = "ktag";
/** The response header by which the hub hands an agent the key tag of the key it authenticated with (or registered, or rotated to). */
export const KEY_TAG_RESPONSE_HEADER = "flotilla-key-tag";

const claim = z.strictObject({ name: z.string().min(1).max(253), value: z.string().min(1).max(1024) });
/**
 * A resource list an agent reports (`capacity`, `allocatable`): at most 64 resources, each a
 * quantity >= 0 and below 2^63 parsed by the hub's one quantity parser (422 naming the entry,
 * e.g. `capacity[cpu]`; src/k8s/validation.ts `validateResourceList`).
 */
const quantityMap = z
  .record(z.string().min(1).max(253), z.string().min(1).max(64))
  .refine((m) => Object.keys(m).length <= 64, "must have at most 64 resources")
  .superRefine((m, ctx) => addFieldErrors(ctx, m, validateResourceList(m, "", { bounded: true })));

/** 32 bytes in unpadded base64url: one P-256 coordinate (RFC 7518 section 6.2.1.2). */
const coordinate = z.string().regex(/^[A-Za-z0-9_-]{43}$/, "must be 32 bytes in unpadded base64url (a P-256 coordinate)");

/**
 * A public EC P-256 JWK (ES256), as the agent registers it. Private members (`d`) are unknown
 * fields and refused. Whether the point lies on the curve is checked where the key is imported
 * (registration and rotation verify a signature made with it).
 */
export const PublicJwkSchema = z
  .object({
    kty: z.literal("EC"),
    crv: z.literal("P-256"),
    x: coordinate,
    y: coordinate,
    alg: z.literal("ES256").optional(),
    kid: z.string().max(128).optional(),
    use: z.string().optional(),
  })
  .strict();

/** A public EC P-256 JWK as the agent sends it. */
export type PublicJwk = z.infer<typeof PublicJwkSchema>;

/**
 * Body of POST /agent/v1/register. `proof` is a compact JWS signed by the private key of
 * `publicKey` (proof of possession, as a CSR is signed by its key): header `{alg: "ES256", kid:
 * <RFC 7638 thumbprint of publicKey>}`, claims `{iss: clusterName, sub: clusterName,
 * aud: "flotilla-registration", cid: clusterId, iat, exp (at most 60 s after iat), jti}`.
 */
export const RegisterSchema = z.strictObject({
  clusterName: z.string().min(1).max(63),
  clusterId: z.string().min(1).max(253),
  publicKey: PublicJwkSchema,
  proof: z.string().min(1).max(4096),
  claims: z.array(claim).max(64).optional(),
});

/** Body of POST /agent/v1/clusters/{name}/heartbeat: the agent's view of its cluster. */
export const HeartbeatSchema = z.strictObject({
  healthy: z.boolean(),
  healthMessage: z.string().max(1024).optional(),
  version: z.strictObject({ kubernetes: z.string().max(128) }).optional(),
  capacity: quantityMap.optional(),
  allocatable: quantityMap.optional(),
  clusterClaims: z.array(claim).max(64).optional(),
});

/** A validated heartbeat. */
export type Heartbeat = z.infer<typeof HeartbeatSchema>;

/**
 * Body of POST /agent/v1/clusters/{name}/rotate-key: the new key and a proof signed by it (the
 * same claims as a registration proof), so nobody rotates a cluster to a key they do not hold.
 */
export const RotateKeySchema = z.strictObject({ publicKey: PublicJwkSchema, proof: z.string().min(1).max(4096) });

/** Longest `waitSeconds` of a works long-poll, in seconds (below the usual 60 s proxy idle timeout). */
export const MAX_WORKS_WAIT_SECONDS = 55;

/**
 * Body of PUT /agent/v1/clusters/{name}/works/{work}/status: the work's `uid` as the agent last
 * saw it (a different uid means the work was deleted and created again: 409) and its status.
 * The status's shape is checked against the ManifestWork status schema by the Worker.
 *
 * `released: true` confirms a deletion (OCM's ManifestWorkFinalizeController): the work is being
 * deleted on the hub and the agent removed what it applied, as its `deleteOption` says; the hub
 * then drops the `cluster.open-cluster-management.io/manifest-work-cleanup` finalizer and the work
 * goes (its `status` is not written). 409 when the work is not being deleted. A report without it
 * is what puts that finalizer on the work, once (src/work/deletion.ts).
 */
/**
 * A report's sequence (docs/agent-protocol.md "Report order"): a positive integer that the agent
 * makes greater for each report it sends (the shipped agent: a hybrid clock, the larger of the
 * last one plus 1 and the epoch milliseconds times 1,000). The hub commits a report only when its
 * sequence is greater than the one last committed for the same object (work or policy) and uid,
 * and acknowledges an older one as stale without writing it. Absent (an agent of before): the
 * report is committed, in the order the hub received it.
 */
export const ReportSequenceSchema = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

export const WorkStatusReportSchema = z.strictObject({
  uid: z.string().min(1).max(128),
  sequence: ReportSequenceSchema.optional(),
  status: z.record(z.string(), z.unknown()),
  released: z.literal(true).optional(),
});

/** A Policy's compliance states, as OCM's: `Compliant`, `NonCompliant`, `Pending`. */
export const POLICY_COMPLIANCE_STATES = ["Compliant", "NonCompliant", "Pending"] as const;

/**
 * Body of PUT /agent/v1/clusters/{name}/policies/{policy}/status (and of the channel's
 * `compliance` message): the compliance of each template of the replicated Policy `policy` (of
 * `uid`) as the agent last evaluated it, in the Policy's template order: the template's name
 * (its `metadata.name`), its state, OCM's compliance event message (`NonCompliant; violation -
 * namespaces [foo] not found`, at most 4096 characters as OCM truncates it) and when that message
 * began (RFC 3339). Sent only when a message changed (docs/agent-protocol.md "Policies").
 */
export const PolicyComplianceReportSchema = z.strictObject({
  uid: z.string().min(1).max(128),
  sequence: ReportSequenceSchema.optional(),
  templates: z
    .array(
      z.strictObject({
        name: z.string().min(1).max(253),
        compliant: z.enum(POLICY_COMPLIANCE_STATES),
        message: z.string().max(4096),
        timestamp: z.string().max(64).refine(isRfc3339DateTime, "must be an RFC 3339 date-time (e.g. '2026-01-01T00:00:00Z')"),
      }),
    )
    .max(256),
});

/** Body of POST /agent/v1/clusters/{name}/left (empty). */
export const LeftSchema = z.strictObject({});

/** A condition status (metav1.ConditionStatus). */
const conditionStatus = z.enum(["True", "False", "Unknown"]);
/** A condition reason as apimachinery's `ValidateConditions` checks it: 1–1024 characters, CamelCase. */
const conditionReason = z
  .string()
  .min(1)
  .max(1024)
  .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/, "a condition reason must start with a letter and hold only letters, digits, '_', ',' and ':'");

/**
 * Body of POST /agent/v1/clusters/{name}/addons/status (and of the channel's `addon-status`
 * message): the `Available` condition of each add-on whose health the agent checks (mode `Lease`:
 * OCM's registration agent's addon lease controller, agent/src/addon/health.ts), sent only when it
 * changed. `name` is the ManagedClusterAddOn's name (a DNS label); at most 256 add-ons a message.
 */
export const AddonStatusSchema = z.strictObject({
  addons: z
    .array(
      z.strictObject({
        name: z.string().min(1).max(63),
        available: z.strictObject({ status: conditionStatus, reason: conditionReason, message: z.string().max(32 * 1024) }),
      }),
    )
    .max(256),
});

/** An add-on status report as the agent sends it. */
export type AddonStatusRequest = z.input<typeof AddonStatusSchema>;

/**
 * Body of POST /agent/v1/clusters/{name}/addons/{addon}/token (and of the channel's
 * `addon-token` message): the token's requested lifetime in seconds (OCM's
 * `--addon-token-expiration-seconds`: default one year, at least 600, at most 2^32, as a
 * TokenRequest's `expirationSeconds`).
 */
export const AddonTokenRequestSchema = z.strictObject({
  expirationSeconds: z
    .number()
    .int()
    .min(600)
    .max(2 ** 32)
    .optional(),
});

/** An add-on token request as the agent sends it. */
export type AddonTokenRequest = z.input<typeof AddonTokenRequestSchema>;

/** A registration request as the agent sends it. */
export type RegisterRequest = z.input<typeof RegisterSchema>;
/** A heartbeat as the agent sends it (the hub's parsed value is {@link Heartbeat}). */
export type HeartbeatRequest = z.input<typeof HeartbeatSchema>;
/** A key rotation request. */
export type RotateKeyRequest = z.input<typeof RotateKeySchema>;
/** A work status report as the agent sends it. */
export type WorkStatusReport = z.input<typeof WorkStatusReportSchema>;
/** A policy compliance report as the agent sends it. */
export type PolicyComplianceReportRequest = z.input<typeof PolicyComplianceReportSchema>;
/** A cluster claim (OCM `ManagedCluster.status.clusterClaims[]`): name 1–253, value 1–1024 characters. */
export type ClusterClaim = z.infer<typeof claim>;

// ---- Answers: hub -> agent (HTTP bodies of 2xx answers; errors are Kubernetes Status objects) ----
//
// Defined in ./protocol-answers.ts with zod/mini and re-exported here: the agent imports that
// module alone at run time (a type import of this one is erased), so its bundle carries zod/mini
// (25 KiB) and not the request schemas' classic zod (138 KiB and about 5 MiB of resident memory
// in the agent; npm run bench:agent).
export * from "./protocol-answers.ts";

// ---- WebSocket channel messages (issue 28: GET /agent/v1/clusters/{name}/connect) ----
//
// The channel's messages (both directions: status, works pushed, reports and `left` with their
// request ids and acknowledgements, close codes) are defined here, beside the HTTP bodies above,
// reusing them (a status message carries a HeartbeatRequest, a report a WorkStatusReport). The
// agent's transport interface for them is agent/src/transport.ts.
