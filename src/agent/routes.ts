/**
 * The agent API (`/agent/v1`, docs/agent-protocol.md): registration with a bootstrap token, and
 * the calls an agent signs with its own key (info, heartbeat, key rotation). The heartbeat goes
 * straight to the cluster's Durable Object: the Worker touches no D1 on that path.
 */
import { Hono, type Context } from "hono";
import type { z } from "zod";
import { ApiError, conflict, invalid, unauthorized } from "../k8s/errors.ts";
import { resourceKey } from "../k8s/kind.ts";
import { checkSchema, type KubeObject } from "../k8s/meta.ts";
import { database, getObject } from "../k8s/store.ts";
import { isDNS1123Label } from "../k8s/validation.ts";
import { BootstrapTokenKind, parseToken, sha256Hex } from "../kinds/bootstraptoken.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { agentSubject, bearerToken, safeEqual } from "../auth/credentials.ts";
import type { AgentAction, Cost, RegistrationInfo, Result } from "../../durable-objects/cluster.ts";
import type { Env } from "../env.ts";
import { parseJson, readBody, statusResponse } from "../api/request.ts";
import { HeartbeatSchema, RegisterSchema, RotateKeySchema } from "./protocol.ts";

type Ctx = Context<{ Bindings: Env }>;

/** Largest agent request body, in bytes. */
const AGENT_BODY_LIMIT = 256 * 1024;

function decode<T extends z.ZodType>(schema: T, body: unknown, what: string): z.infer<T> {
  const check = checkSchema(schema, body);
  if (check.unknownFields.length > 0) {
    throw new ApiError(400, "BadRequest", `strict decoding error: ${check.unknownFields.map((f) => `unknown field "${f}"`).join(", ")}`, {
      causes: check.unknownFields.map((f) => ({ reason: "FieldValueInvalid", message: "unknown field", field: f })),
    });
  }
  if (check.causes.length > 0) throw invalid({ group: "flotilla.dev", plural: what, kind: what }, check.causes);
  return schema.parse(body);
}

/**
 * Checks a bootstrap token (`<id>.<secret>`): the BootstrapToken object must exist, the secret's
 * hash match, and it must not have expired. Returns the token object.
 *
 * @throws ApiError 401
 */
async function checkBootstrapToken(c: Ctx, token: string | null): Promise<KubeObject> {
  const parsed = token ? parseToken(token) : null;
  if (!parsed) throw unauthorized("a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16} is required");
  const obj = await getObject(database(c.env.DB), BootstrapTokenKind, { namespace: "", name: parsed.id });
  const status = (obj?.status ?? {}) as { secretHash?: string; expirationTimestamp?: string };
  const ok = obj && status.secretHash && (await safeEqual(await sha256Hex(parsed.secret), status.secretHash));
  if (!ok) throw unauthorized("invalid bootstrap token");
  if (status.expirationTimestamp && Date.parse(status.expirationTimestamp) <= Date.now()) throw unauthorized("bootstrap token has expired");
  return obj!;
}

/**
 * Claims (cluster name, cluster ID) in the D1 index. The unique constraints make this atomic: a
 * cluster ID already held by another name, or a name already held by another ID, is 409 naming the
 * existing cluster (Karmada's ClusterID check without its list-then-create race). The same pair
 * again (an agent restart) is accepted.
 *
 * @throws ApiError 409
 */
async function claimIdentity(c: Ctx, name: string, clusterId: string): Promise<void> {
  const [, rows] = await c.env.DB.batch<{ name: string; cluster_id: string }>([
    c.env.DB.prepare("INSERT INTO cluster_identities (name, cluster_id) VALUES (?, ?) ON CONFLICT DO NOTHING").bind(name, clusterId),
    c.env.DB.prepare("SELECT name, cluster_id FROM cluster_identities WHERE name = ? OR cluster_id = ?").bind(name, clusterId),
  ]);
  const found = rows?.results ?? [];
  if (found.some((r) => r.name === name && r.cluster_id === clusterId)) return;
  const byId = found.find((r) => r.cluster_id === clusterId);
  const ref = { group: ManagedClusterKind.group, plural: ManagedClusterKind.plural, name };
  if (byId) throw conflict(ref, `cluster ID ${clusterId} is already registered as ManagedCluster "${byId.name}"`);
  const byName = found.find((r) => r.name === name);
  throw conflict(ref, `the name ${name} is already registered by a cluster with another cluster ID (${byName?.cluster_id ?? "unknown"})`);
}

async function agentCall(c: Ctx, action: AgentAction): Promise<Response> {
  const token = bearerToken(c);
  if (!token) throw unauthorized("an agent token is required");
  const sub = agentSubject(token);
  const target = c.req.param("name") ?? "";
  const res = (await c.env.CLUSTERS.getByName(sub).agent(token, sub, target, action)) as Result<unknown> & { cost: Cost };
  const headers = {
    "content-type": "application/json",
    "x-flotilla-storage-rows-written": String(res.cost.rowsWritten),
    "x-flotilla-d1-queries": String(res.cost.d1Queries),
    "x-flotilla-scheduler-runs": String(res.cost.schedulerRuns),
  };
  if (!res.ok) return new Response(JSON.stringify(res.status), { status: res.status.code, headers });
  return new Response(JSON.stringify(res.value), { status: 200, headers });
}

/** The `/agent/v1` routes. */
export function agentRoutes(): Hono<{ Bindings: Env }> {
  const app = new Hono<{ Bindings: Env }>();

  app.post("/register", async (c) => {
    const tokenObj = await checkBootstrapToken(c, bearerToken(c));
    const body = decode(RegisterSchema, parseJson(await readBody(c, AGENT_BODY_LIMIT)), "registrations");
    const nameErrors = isDNS1123Label(body.clusterName);
    if (nameErrors.length > 0) {
      throw invalid({ group: "flotilla.dev", plural: "registrations", kind: "Registration", name: body.clusterName }, nameErrors.map((m) => ({ field: "clusterName", message: m })));
    }
    await claimIdentity(c, body.clusterName, body.clusterId);
    const res = (await c.env.CLUSTERS.getByName(body.clusterName).register({
      clusterName: body.clusterName,
      clusterId: body.clusterId,
      publicKey: body.publicKey,
      claims: body.claims ?? [],
      autoApprove: tokenObj.spec?.autoApprove === true,
    })) as Result<{ created: boolean; info: RegistrationInfo }>;
    if (!res.ok) {
      // Release the identity claimed above unless a cluster of that name exists: no half write.
      await c.env.DB.prepare(
        "DELETE FROM cluster_identities WHERE name = ? AND cluster_id = ? AND NOT EXISTS (SELECT 1 FROM objects WHERE resource = ? AND namespace = '' AND name = ?)",
      )
        .bind(body.clusterName, body.clusterId, resourceKey(ManagedClusterKind), body.clusterName)
        .run();
      return c.json(res.status, res.status.code as 400);
    }
    return c.json(res.value.info, res.value.created ? 201 : 200);
  });

  app.get("/clusters/:name", (c) => agentCall(c, { action: "info" }));

  app.post("/clusters/:name/heartbeat", async (c) => {
    const heartbeat = decode(HeartbeatSchema, parseJson(await readBody(c, AGENT_BODY_LIMIT)), "heartbeats");
    return agentCall(c, { action: "heartbeat", heartbeat });
  });

  app.post("/clusters/:name/rotate-key", async (c) => {
    const body = decode(RotateKeySchema, parseJson(await readBody(c, AGENT_BODY_LIMIT)), "keys");
    return agentCall(c, { action: "rotate-key", publicKey: body.publicKey });
  });

  app.onError((err) => {
    if (err instanceof ApiError) return statusResponse(err);
    throw err;
  });
  return app;
}
