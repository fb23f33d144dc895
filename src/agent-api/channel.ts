/**
 * The Worker's side of the agent channel (docs/agent-protocol.md "Channel"):
 * `GET /agent/v1/clusters/{name}/connect`, a WebSocket upgrade with the subprotocol
 * {@link CHANNEL_SUBPROTOCOL}. The Worker checks the upgrade and admits the token as it admits
 * every agent request (src/agent-api/routes.ts `agentResult`: key tag, else a registered cluster; the
 * failed-authentication limiter; the same 401 for every stranger, who reaches no Durable Object),
 * then hands the request to the cluster's object, which verifies the JWT and accepts the socket
 * (durable-objects/cluster/connection.ts).
 */
import { Hono } from "hono";
import { ApiError, badRequest, unauthorized } from "../k8s/errors.ts";
import { admitAgentToken, bearerToken, INVALID_AGENT_CREDENTIAL } from "../auth/credentials.ts";
import { keyTag } from "../auth/keys.ts";
import { limitAuthFailures } from "../auth/ratelimit.ts";
import { statusResponse } from "../api/request.ts";
import { clock } from "../clock.ts";
import type { Env } from "../env.ts";
import { CHANNEL_SUBPROTOCOL } from "./channel-protocol.ts";
import { KEY_TAG_RESPONSE_HEADER } from "./protocol.ts";
import { CHANNEL_CLUSTER_HEADER, CHANNEL_COLO_HEADER, CHANNEL_TARGET_HEADER } from "../../durable-objects/cluster/connection.ts";
import { edgeLocation } from "../edge.ts";

/**
 * Checks that a request is a WebSocket upgrade that offers {@link CHANNEL_SUBPROTOCOL}.
 * @throws ApiError 426 UpgradeRequired (not an upgrade; RFC 9110 section 15.5.22), 400 (no or
 *   another subprotocol, a bad WebSocket version)
 */
function checkUpgrade(req: Request): void {
  const upgrade = req.headers.get("upgrade") ?? "";
  if (upgrade.toLowerCase() !== "websocket")
    throw new ApiError(426, "UpgradeRequired", `this endpoint is a WebSocket upgrade (Upgrade: websocket, Sec-WebSocket-Protocol: ${CHANNEL_SUBPROTOCOL})`);
  const version = req.headers.get("sec-websocket-version");
  if (version !== null && version.trim() !== "13")
    throw badRequest(`Sec-WebSocket-Version: Unsupported value: ${JSON.stringify(version)}: supported values: "13"`, "Sec-WebSocket-Version");
  const offered = (req.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim());
  if (!offered.includes(CHANNEL_SUBPROTOCOL)) {
    throw badRequest(
      `Sec-WebSocket-Protocol: Unsupported value: ${JSON.stringify(offered.filter(Boolean).join(", "))}: supported values: "${CHANNEL_SUBPROTOCOL}"`,
      "Sec-WebSocket-Protocol",
    );
  }
}

/**
 * Answers the upgrade: the cluster object's 101 (with the key tag for a token that lacked it, as
 * every agent answer hands it over) or its refusal (403 pending, retired or not accepted).
 * @throws ApiError 426/400 (see {@link checkUpgrade}), 401 (any credential that does not verify), 429
 */
async function connect(req: Request, env: Env, target: string, token: string | null): Promise<Response> {
  checkUpgrade(req);
  return limitAuthFailures(env, req, "agent", token, clock.now(), async (limit) => {
    if (!token) throw unauthorized(INVALID_AGENT_CREDENTIAL);
    const admitted = await admitAgentToken(env, token, limit.costly);
    const headers = new Headers(req.headers);
    headers.set(CHANNEL_CLUSTER_HEADER, admitted.cluster);
    headers.set(CHANNEL_TARGET_HEADER, target);
    const colo = edgeLocation(req);
    if (colo) headers.set(CHANNEL_COLO_HEADER, colo);
    else headers.delete(CHANNEL_COLO_HEADER);
    const res = await env.CLUSTERS.getByName(admitted.cluster).fetch(new Request(req.url, { method: "GET", headers }));
    if (res.status === 401) throw unauthorized(INVALID_AGENT_CREDENTIAL);
    if (res.status !== 101 || admitted.tagged) return res;
    const tag = await keyTag(env, admitted.cluster, admitted.kid);
    if (!tag) return res;
    const out = new Headers(res.headers);
    out.set(KEY_TAG_RESPONSE_HEADER, tag);
    return new Response(null, { status: 101, webSocket: res.webSocket, headers: out });
  });
}

/** The channel's route, mounted under `/agent/v1` (src/index.ts). */
export function channelRoutes(): Hono<{ Bindings: Env }> {
  const app = new Hono<{ Bindings: Env }>();
  app.get("/clusters/:name/connect", (c) => connect(c.req.raw, c.env, c.req.param("name"), bearerToken(c)));
  app.onError((err) => {
    if (!(err instanceof ApiError)) throw err;
    const res = statusResponse(err);
    if (err.code === 426) res.headers.set("upgrade", "websocket");
    return res;
  });
  return app;
}
