/**
 * The agent API (`/agent/v1`, docs/agent-protocol.md): registration with a bootstrap token, and
 * the calls an agent signs with its own key (info, heartbeat, key rotation). The heartbeat goes
 * straight to the cluster's Durable Object: the Worker touches no D1 on that path.
 */
import { Hono, type Context } from "hono";
import { ApiError, badRequest, conflict, invalid, unauthorized } from "../k8s/errors.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { deliveredWorks } from "./delivered.ts";
import { splitDelivered } from "../work/namespace-deliverables.ts";
import { readDelivered } from "../../durable-objects/cluster/works.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { storageOf } from "../store/storage.ts";
import { MANIFEST_LIMIT_BYTES } from "../kinds/manifestwork.ts";
import { isDNS1123Label } from "../k8s/validation.ts";
import { BootstrapTokenKind, parseToken, sha256Hex } from "../kinds/bootstraptoken.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { admitAgentToken, bearerToken, INVALID_AGENT_CREDENTIAL, safeEqual } from "../auth/credentials.ts";
import { keyTag, verifyProof } from "../auth/keys.ts";
import { limitAuthFailures, type FailureLimit } from "../auth/ratelimit.ts";
import { clock } from "../clock.ts";
import type { AgentAction, ClusterObject, Cost, RegistrationInfo, RegistrationOutcome, Result, WorksState } from "../../durable-objects/cluster.ts";
import type { ReportOutcome } from "../../durable-objects/cluster/reports.ts";
import type { Env } from "../env.ts";
import { parseJson, readBody, retryAfter, statusResponse } from "../api/request.ts";
import { writeAddonAvailability } from "../addons/agent-health.ts";
import { issueAddonToken } from "../addons/token-registration.ts";
import { edgeLocation } from "../edge.ts";
import {
  AddonStatusSchema,
  AddonTokenRequestSchema,
  decode,
  HeartbeatSchema,
  KEY_TAG_RESPONSE_HEADER,
  LeftSchema,
  MAX_WORKS_WAIT_SECONDS,
  PolicyComplianceReportSchema,
  RegisterSchema,
  RotateKeySchema,
  WorkStatusReportSchema,
  type AddonStatusAnswer,
  type AddonTokenAnswer,
  type ClusterInfo,
  type HeartbeatAnswer,
  type LeftAnswer,
  type PolicyStatusAnswer,
  type RotateKeyAnswer,
  type WorkStatusAnswer,
  type WorksAnswer,
} from "./protocol.ts";

type Ctx = Context<{ Bindings: Env }>;

/**
 * Largest agent request body other than a work status report (registration, heartbeat, key
 * rotation, leave), in bytes: 256 KiB, far above the largest valid heartbeat (64 claims and 64
 * resources of each list, about 100 KiB).
 */
export const AGENT_BODY_LIMIT = 256 * 1024;
/**
 * Largest work status report, in bytes: 1,000 KiB, twice OCM's 500 KiB manifest limit, since a
 * work's status mirrors each manifest's conditions and feedback; a work with its largest spec
 * and status stays within the 1.5 MiB etcd holds in one object. Checked once the request is
 * authenticated and before the body is decoded.
 */
export const WORK_STATUS_BODY_LIMIT = 2 * MANIFEST_LIMIT_BYTES;

/**
 * Checks a bootstrap token (`<id>.<secret>`): the BootstrapToken object must exist, the secret's
 * hash match, and it must not have expired. Returns the token object. Its D1 read is the costly
 * step of the failed-authentication limiter (`limit.costly()`).
 *
 * @throws ApiError 401, 429 (limited)
 */
async function checkBootstrapToken(c: Ctx, token: string | null, limit: FailureLimit): Promise<KubeObject> {
  const parsed = token ? parseToken(token) : null;
  if (!parsed) throw unauthorized("a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16} is required");
  await limit.costly();
  const obj = await admittedStoreOf(c.env, BootstrapTokenKind).get("", parsed.id);
  const status = (obj?.status ?? {}) as { secretHash?: string; expirationTimestamp?: string };
  const ok = obj && status.secretHash && (await safeEqual(await sha256Hex(parsed.secret), status.secretHash));
  if (!ok) throw unauthorized("invalid bootstrap token");
  if (status.expirationTimestamp && Date.parse(status.expirationTimestamp) <= clock.now()) throw unauthorized("bootstrap token has expired");
  return obj!;
}

/**
 * The HTTP status of each registration outcome: 201 a new cluster, 200 the same key again (an
 * agent restart), 202 a new key for a known cluster, held as pending until an admin accepts it.
 */
const REGISTRATION_STATUS = { created: 201, confirmed: 200, pending: 202 } as const;

/**
 * Claims (cluster name, cluster ID) in the D1 index. The unique constraints make this atomic: a
 * cluster ID already held by another name, or a name already held by another ID, is 409 naming the
 * existing cluster (Karmada's ClusterID check without its list-then-create race). The same pair
 * again (an agent restart) is accepted.
 *
 * @throws ApiError 409
 */
async function claimIdentity(c: Ctx, name: string, clusterId: string): Promise<void> {
  const found = await storageOf(c.env).identities.claim(name, clusterId);
  if (found.some((r) => r.name === name && r.clusterId === clusterId)) return;
  const byId = found.find((r) => r.clusterId === clusterId);
  const ref = { group: ManagedClusterKind.group, plural: ManagedClusterKind.plural, name };
  if (byId) throw conflict(ref, `cluster ID ${clusterId} is already registered as ManagedCluster "${byId.name}"`);
  const byName = found.find((r) => r.name === name);
  throw conflict(ref, `the name ${name} is already registered by a cluster with another cluster ID (${byName?.clusterId ?? "unknown"})`);
}

/** An agent call's outcome: the Durable Object's result and, for a token that lacked it, the key tag to hand the agent. */
type AgentOutcome = Result<unknown> & { cost: Cost; keyTag?: string };

/**
 * Sends an agent request to the cluster's Durable Object (which verifies the JWT) and returns its
 * raw result. The Worker first admits the token (src/auth/credentials.ts: key tag, else the
 * cluster must be registered), so a stranger's request never reaches a Durable Object. Failed
 * authentications are limited by source address and presented token, never by the cluster a
 * token names (src/auth/ratelimit.ts): a token with a valid key tag is always evaluated. An
 * `action` given as a function reads and decodes the request's body: it runs only once the token
 * is authenticated on the Authorization header alone, by its key tag (an HMAC only the hub makes,
 * handed to the agent after it authenticated) or, for a token without one, by the cluster's object
 * verifying it without using it up; so a stranger's body is never read, and a tagged agent's call
 * stays one Durable Object call.
 * @throws ApiError 401 (any credential that does not verify, one message for all), 429, and
 *   what reading the body throws (413, 400, 422)
 */
async function agentResult(c: Ctx, action: AgentAction | (() => Promise<AgentAction>)): Promise<AgentOutcome> {
  const token = bearerToken(c);
  const target = c.req.param("name") ?? "";
  return limitAuthFailures(c.env, c.req.raw, "agent", token, clock.now(), async (limit) => {
    if (!token) throw unauthorized(INVALID_AGENT_CREDENTIAL);
    const admitted = await admitAgentToken(c.env, token, limit.costly);
    const stub = c.env.CLUSTERS.getByName(admitted.cluster);
    // A body is read only for a token the hub's key tag admits or the cluster's object verifies.
    if (typeof action === "function" && !admitted.tagged && !(await stub.authenticates(token, admitted.cluster))) throw unauthorized(INVALID_AGENT_CREDENTIAL);
    const act = typeof action === "function" ? await action() : action;
    const res = (await stub.agent(token, admitted.cluster, target, act)) as AgentOutcome;
    if (!res.ok && res.status.code === 401) throw unauthorized(res.status.message);
    if (res.ok && !admitted.tagged) res.keyTag = (await keyTag(c.env, admitted.cluster, admitted.kid)) ?? undefined;
    return res;
  });
}

function costHeaders(cost: Cost, extraD1Queries = 0, tag?: string): Record<string, string> {
  return {
    "content-type": "application/json",
    "x-flotilla-storage-rows-written": String(cost.rowsWritten),
    "x-flotilla-d1-queries": String(cost.d1Queries + extraD1Queries),
    "x-flotilla-scheduler-runs": String(cost.schedulerRuns),
    ...(tag ? { [KEY_TAG_RESPONSE_HEADER]: tag } : {}),
  };
}

/**
 * The answer body of each agent action the cluster's object serves, as src/agent-api/protocol.ts
 * defines it (the object's results cross the RPC boundary untyped).
 */
interface AgentAnswers {
  info: ClusterInfo;
  heartbeat: HeartbeatAnswer;
  left: LeftAnswer;
}

async function agentCall<A extends keyof AgentAnswers>(
  c: Ctx,
  action: ({ action: A } & AgentAction) | (() => Promise<{ action: A } & AgentAction>),
): Promise<Response> {
  const res = await agentResult(c, action);
  const headers = costHeaders(res.cost, 0, res.keyTag);
  if (!res.ok) return new Response(JSON.stringify(res.status), { status: res.status.code, headers });
  const answer = res.value as AgentAnswers[A];
  return new Response(JSON.stringify(answer), { status: 200, headers });
}

/** The ETag of `If-None-Match` without quotes or weak prefix, or undefined. */
function ifNoneMatch(c: Ctx): string | undefined {
  const h = c.req.header("if-none-match");
  if (!h) return undefined;
  return h
    .trim()
    .replace(/^W\//, "")
    .replace(/^"(.*)"$/, "$1");
}

/**
 * GET works: the Durable Object answers an unchanged ETag alone (after waiting up to
 * `waitSeconds` for a change), and a changed one with the namespace's ManifestWorks as it knows
 * them (read from D1 once after it started, then kept by each change; src/work/namespace-deliverables.ts).
 * @throws ApiError 400 for a bad waitSeconds
 */
async function getWorks(c: Ctx): Promise<Response> {
  const waitParam = c.req.query("waitSeconds");
  const wait = waitParam === undefined || waitParam === "" ? 0 : Number(waitParam);
  if (!Number.isInteger(wait) || wait < 0 || wait > MAX_WORKS_WAIT_SECONDS) {
    throw badRequest(`waitSeconds: Invalid value: ${JSON.stringify(waitParam)}: must be an integer from 0 to ${MAX_WORKS_WAIT_SECONDS}`, "waitSeconds");
  }
  const res = await agentResult(c, { action: "works", ifNoneMatch: ifNoneMatch(c), waitMs: wait * 1000 });
  if (!res.ok) return new Response(JSON.stringify(res.status), { status: res.status.code, headers: { ...costHeaders(res.cost), ...retryAfter(res.status) } });
  const state = res.value as WorksState;
  const etag = `"${state.etag}"`;
  if (!state.changed) {
    const tag: Record<string, string> = res.keyTag ? { [KEY_TAG_RESPONSE_HEADER]: res.keyTag } : {};
    return new Response(null, { status: 304, headers: { etag, "x-flotilla-d1-queries": String(res.cost.d1Queries), ...tag } });
  }
  const cluster = c.req.param("name") ?? "";
  // The cluster's object hands over the works (and replicated Policies) it knows; a namespace too
  // large for it is read here.
  const split = splitDelivered(state.works ?? (await readDelivered(c.env, cluster)).items);
  const strip = (list: KubeObject[]) =>
    list.map((w) => {
      const { status, ...rest } = w;
      void status;
      return rest;
    });
  // A WorksAnswer (src/agent-api/protocol.ts); each work is a stored ManifestWork without its status,
  // each policy a stored replicated Policy without its status (only when there are some).
  const head: Omit<WorksAnswer, "works" | "policies"> = { etag: state.etag, leaving: state.leaving };
  const body = JSON.stringify({ ...head, works: strip(split.works), ...(split.policies.length ? { policies: strip(split.policies) } : {}) });
  deliveredWorks.delivered(cluster, split.works, body.length);
  return new Response(body, { status: 200, headers: { ...costHeaders(res.cost, state.works ? 0 : 2, res.keyTag), etag } });
}

/**
 * Runs an agent's report in its cluster's object (`ClusterObject.report`), in the order of the
 * object's reports, over the channel or HTTP alike (docs/agent-protocol.md "Report order").
 * @throws ApiError what the report's write answers (404, 409, 400/422, 429)
 */
async function reportInOrder(c: Ctx, cluster: string, report: Parameters<ClusterObject["report"]>[1]): Promise<ReportOutcome> {
  const res = (await c.env.CLUSTERS.getByName(cluster).report(cluster, report)) as Result<ReportOutcome>;
  if (!res.ok) throw new ApiError(res.status.code, res.status.reason, res.status.message, res.status.details);
  return res.value;
}

/** The answer to a report: the object's new resourceVersion, or `stale` with the sequence held. */
function answerOf(outcome: ReportOutcome): WorkStatusAnswer {
  if (outcome.stale) return { resourceVersion: "", stale: true, sequence: outcome.sequence };
  return { resourceVersion: outcome.object?.metadata.resourceVersion ?? "" };
}

/**
 * PUT a work's status as the agent observed it: the agent's credential must be its cluster's and
 * the work must still be the one the agent saw (`uid`). Written through the status subresource
 * path, which validates the status like any status write (422 invalid values, 400 unknown
 * fields) and lets the replica set controller see it.
 * @throws ApiError 404 (no such work), 409 (uid differs), 400/422 (invalid status)
 */
async function putWorkStatus(c: Ctx): Promise<Response> {
  const cluster = c.req.param("name") ?? "";
  const workName = c.req.param("work") ?? "";
  // Authenticated first (the cluster's object verifies the JWT of the Authorization header), so
  // a stranger's body is never read; then read within its limit (413), then decoded.
  const res = await agentResult(c, { action: "report" });
  if (!res.ok) return new Response(JSON.stringify(res.status), { status: res.status.code, headers: costHeaders(res.cost) });
  const raw = await readBody(c, WORK_STATUS_BODY_LIMIT);
  const body = decode(WorkStatusReportSchema, parseJson(raw), "workstatuses");
  // Given the request's waitUntil, the report's commit may share a D1 batch with other reports'
  // (group commit), and its finished outbox row goes with theirs, just after.
  // Run by the cluster's object, in the order of the work's reports, as a channel report is
  // (durable-objects/cluster/reports.ts: a report whose sequence is not newer is answered stale).
  const outcome = await reportInOrder(c, cluster, { kind: "work", name: workName, body, bytes: raw.length });
  return new Response(JSON.stringify(answerOf(outcome) satisfies WorkStatusAnswer), {
    status: 200,
    headers: costHeaders(res.cost, 0, res.keyTag),
  });
}

/**
 * PUT a replicated Policy's compliance as the agent evaluated it (src/agent-api/policy-report.ts):
 * authenticated first (a stranger's body is never read), the body read within
 * {@link AGENT_BODY_LIMIT} and decoded strictly.
 * @throws ApiError 404 (no such replicated Policy), 409 (uid differs), 400/422 (invalid report), 413
 */
async function putPolicyStatus(c: Ctx): Promise<Response> {
  const cluster = c.req.param("name") ?? "";
  const policy = c.req.param("policy") ?? "";
  const res = await agentResult(c, { action: "report" });
  if (!res.ok) return new Response(JSON.stringify(res.status), { status: res.status.code, headers: costHeaders(res.cost) });
  const body = decode(PolicyComplianceReportSchema, parseJson(await readBody(c, AGENT_BODY_LIMIT)), "policystatuses");
  const outcome = await reportInOrder(c, cluster, { kind: "policy", name: policy, body });
  return new Response(JSON.stringify(answerOf(outcome) satisfies PolicyStatusAnswer), {
    status: 200,
    headers: costHeaders(res.cost, 0, res.keyTag),
  });
}

/**
 * POST the changed `Available` conditions of the cluster's add-ons (docs/agent-protocol.md
 * "Add-ons"): authenticated by the cluster's object (the cluster must be accepted) before the body
 * is read, then written on the ManagedClusterAddOns of the cluster's namespace
 * (src/addons/agent-health.ts).
 * @throws ApiError 400/422 an invalid body, 413 over 256 KiB
 */
async function postAddonStatus(c: Ctx): Promise<Response> {
  const cluster = c.req.param("name") ?? "";
  const res = await agentResult(c, { action: "report" });
  if (!res.ok) return new Response(JSON.stringify(res.status), { status: res.status.code, headers: costHeaders(res.cost) });
  const body = decode(AddonStatusSchema, parseJson(await readBody(c, AGENT_BODY_LIMIT)), "addonstatuses");
  await writeAddonAvailability(c.env, cluster, body, clock.now(), (p) => c.executionCtx.waitUntil(p));
  return new Response(JSON.stringify({} satisfies AddonStatusAnswer), { status: 200, headers: costHeaders(res.cost, 0, res.keyTag) });
}

/**
 * POST for a token of an add-on's ServiceAccount (token-based add-on registration,
 * src/addons/token-registration.ts): authenticated as above, then issued for the add-on of the
 * cluster's own namespace only. The answer holds a secret: `Cache-Control: no-store`.
 * @throws ApiError 404 no such add-on, 409 one being deleted or without a kubeClient registration, 400/422 an invalid body
 */
async function postAddonToken(c: Ctx): Promise<Response> {
  const cluster = c.req.param("name") ?? "";
  const addon = c.req.param("addon") ?? "";
  const res = await agentResult(c, { action: "report" });
  if (!res.ok) return new Response(JSON.stringify(res.status), { status: res.status.code, headers: costHeaders(res.cost) });
  const body = decode(AddonTokenRequestSchema, parseJson(await readBody(c, AGENT_BODY_LIMIT)), "addontokens");
  const issued = await issueAddonToken(c.env, cluster, addon, new URL(c.req.url).origin, body.expirationSeconds, clock.now());
  return new Response(JSON.stringify(issued satisfies AddonTokenAnswer), {
    status: 200,
    headers: { ...costHeaders(res.cost, 0, res.keyTag), "cache-control": "no-store" },
  });
}

/** The `/agent/v1` routes. */
export function agentRoutes(): Hono<{ Bindings: Env }> {
  const app = new Hono<{ Bindings: Env }>();

  app.post("/register", async (c) => {
    const token = bearerToken(c);
    const tokenObj = await limitAuthFailures(c.env, c.req.raw, "register", token, clock.now(), (limit) => checkBootstrapToken(c, token, limit));
    const body = decode(RegisterSchema, parseJson(await readBody(c, AGENT_BODY_LIMIT)), "registrations");
    const nameErrors = isDNS1123Label(body.clusterName);
    if (nameErrors.length > 0) {
      throw invalid(
        { group: "flotilla.dev", plural: "registrations", kind: "Registration", name: body.clusterName },
        nameErrors.map((m) => ({ field: "clusterName", message: m })),
      );
    }
    const kid = await verifyProof(body.proof, body.publicKey, { clusterName: body.clusterName, clusterId: body.clusterId, now: clock.now() });
    await claimIdentity(c, body.clusterName, body.clusterId);
    const res = (await c.env.CLUSTERS.getByName(body.clusterName).register({
      clusterName: body.clusterName,
      clusterId: body.clusterId,
      publicKey: body.publicKey,
      kid,
      claims: body.claims ?? [],
      autoApprove: tokenObj.spec?.autoApprove === true,
    })) as Result<{ outcome: RegistrationOutcome; info: RegistrationInfo }>;
    if (!res.ok) {
      // Release the identity claimed above unless a cluster of that name exists: no half write.
      await storageOf(c.env).identities.release(body.clusterName, body.clusterId);
      return c.json(res.status, res.status.code as 400);
    }
    const tag = await keyTag(c.env, body.clusterName, kid);
    if (tag) c.header(KEY_TAG_RESPONSE_HEADER, tag);
    return c.json(res.value.info satisfies ClusterInfo, REGISTRATION_STATUS[res.value.outcome]);
  });

  app.get("/clusters/:name", (c) => agentCall(c, { action: "info" }));

  app.post("/clusters/:name/heartbeat", (c) =>
    agentCall(c, async () => ({
      action: "heartbeat",
      heartbeat: decode(HeartbeatSchema, parseJson(await readBody(c, AGENT_BODY_LIMIT)), "heartbeats"),
      colo: edgeLocation(c.req.raw),
    })),
  );

  app.get("/clusters/:name/works", (c) => getWorks(c));

  app.put("/clusters/:name/works/:work/status", (c) => putWorkStatus(c));

  app.put("/clusters/:name/policies/:policy/status", (c) => putPolicyStatus(c));
  app.post("/clusters/:name/addons/status", (c) => postAddonStatus(c));

  app.post("/clusters/:name/addons/:addon/token", (c) => postAddonToken(c));

  app.post("/clusters/:name/left", (c) =>
    agentCall(c, async () => {
      decode(LeftSchema, parseJson(await readBody(c, AGENT_BODY_LIMIT)), "leaves");
      return { action: "left" };
    }),
  );

  app.post("/clusters/:name/rotate-key", async (c) => {
    const name = c.req.param("name");
    let kid = "";
    const res = await agentResult(c, async () => {
      const body = decode(RotateKeySchema, parseJson(await readBody(c, AGENT_BODY_LIMIT)), "keys");
      kid = await verifyProof(body.proof, body.publicKey, { clusterName: name, now: clock.now() });
      return { action: "rotate-key", publicKey: body.publicKey, kid };
    });
    // The answer hands over the tag of the new key, the one the agent signs with from now on.
    const tag = res.ok ? await keyTag(c.env, name, kid) : null;
    const headers = costHeaders(res.cost, 0, tag ?? undefined);
    if (!res.ok) return new Response(JSON.stringify(res.status), { status: res.status.code, headers });
    return new Response(JSON.stringify(res.value as RotateKeyAnswer), { status: 200, headers });
  });

  app.onError((err) => {
    if (err instanceof ApiError) return statusResponse(err);
    throw err;
  });
  return app;
}
