/**
 * The agent protocol's constants and request schemas (docs/agent-protocol.md). Shared by the hub
 * (src/, durable-objects/) and usable by the agent.
 */
import { z } from "zod";

/** The `aud` every agent JWT carries. */
export const AGENT_AUDIENCE = "flotilla";
/** Longest lifetime (exp - iat) an agent JWT may have, in seconds. */
export const MAX_TOKEN_LIFETIME_SECONDS = 60;
/** Clock skew tolerated when checking an agent JWT's times, in seconds. */
export const CLOCK_SKEW_SECONDS = 30;

const claim = z.strictObject({ name: z.string().min(1).max(253), value: z.string().min(1).max(1024) });
const quantityMap = z.record(z.string().min(1).max(253), z.string().min(1).max(64));

/** A public EC P-256 JWK (ES256), as the agent registers it. Private members (`d`) are unknown fields and refused. */
export const PublicJwkSchema = z
  .object({
    kty: z.literal("EC"),
    crv: z.literal("P-256"),
    x: z.string().min(1).max(128),
    y: z.string().min(1).max(128),
    alg: z.literal("ES256").optional(),
    kid: z.string().max(128).optional(),
    use: z.string().optional(),
  })
  .strict();

/** Body of POST /agent/v1/register. */
export const RegisterSchema = z.strictObject({
  clusterName: z.string().min(1).max(63),
  clusterId: z.string().min(1).max(253),
  publicKey: PublicJwkSchema,
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

/** Body of POST /agent/v1/clusters/{name}/rotate-key. */
export const RotateKeySchema = z.strictObject({ publicKey: PublicJwkSchema });

/** Longest `waitSeconds` of a works long-poll, in seconds (below the usual 60 s proxy idle timeout). */
export const MAX_WORKS_WAIT_SECONDS = 55;

/**
 * Body of PUT /agent/v1/clusters/{name}/works/{work}/status: the work's `uid` as the agent last
 * saw it (a different uid means the work was deleted and created again: 409) and its status.
 * The status's shape is checked against the ManifestWork status schema by the Worker.
 */
export const WorkStatusReportSchema = z.strictObject({
  uid: z.string().min(1).max(128),
  status: z.record(z.string(), z.unknown()),
});

/** Body of POST /agent/v1/clusters/{name}/left (empty). */
export const LeftSchema = z.strictObject({});
