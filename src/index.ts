/**
 * The Flotilla hub Worker: OCM's API served with Kubernetes conventions (`/apis/...`), the agent
 * API (`/agent/v1/...`), and the per-cluster Durable Object class.
 */
import { Hono } from "hono";
import { ApiError } from "./k8s/errors.ts";
import { checkRequestTarget, statusResponse, yamlResponses } from "./api/request.ts";
import { coreRoutes, resourceRoutes } from "./api/resources.ts";
import { openapiRoutes } from "./api/openapi.ts";
import { docsRoutes } from "./api/docs.ts";
import { uiRoutes } from "./ui/routes.ts";
import { serviceAccountIssuerRoutes } from "./auth/serviceaccounts.ts";
import { agentRoutes } from "./agent-api/routes.ts";
import { channelRoutes } from "./agent-api/channel.ts";
import { proxyRoutes } from "./api/proxy.ts";
import { webhookRoutes } from "./webhook/receiver.ts";
import type { Env } from "./env.ts";
import { recoverAtStart } from "./store/outbox.ts";
import { installControllers } from "./controllers.ts";
import { clock } from "./clock.ts";
import { auditRequests } from "./audit/middleware.ts";
import { healthRoutes } from "./health/routes.ts";
import { countAgentRequests, countApiRequests, countWebhookDeliveries, metricsRoutes } from "./metrics/routes.ts";
import { requestUrl } from "./k8s/request-url.ts";

export { ClusterObject } from "../durable-objects/cluster.ts";
export { SchedulerObject } from "../durable-objects/scheduler.ts";
export { ReplicaSetObject } from "../durable-objects/replicaset.ts";
export { MetricsObject } from "../durable-objects/metrics.ts";

/**
 * What `/version` answers (apimachinery `version.Info`): the Kubernetes API level Flotilla's API
 * conventions follow, tagged with Flotilla's own version.
 */
export const VERSION = {
  major: "1",
  minor: "32",
  gitVersion: "v1.32.0-flotilla.0.1.0",
  gitCommit: "",
  gitTreeState: "clean",
  buildDate: "2026-11-22T00:00:00Z",
  goVersion: "",
  compiler: "workerd",
  platform: "cloudflare/workers",
};

/** Builds the hub's Hono app. */
export function createApp(): Hono<{ Bindings: Env }> {
  // Not strict: a path answers with or without a trailing slash (`/version/`, `/apis/`, as the
  // Python client asks for discovery), as kube-apiserver's routes do.
  const app = new Hono<{ Bindings: Env }>({ strict: false });
  // Every path (API, agent, webhooks): an overlong target or a malformed escape is refused before routing.
  app.use("*", async (c, next) => {
    checkRequestTarget(requestUrl(c.req.raw));
    await next();
  });
  // Health (kube-apiserver's /livez, /readyz, /healthz with their checks), unauthenticated.
  app.route("/", healthRoutes());
  // Like the apiserver, /version is public (system:public-info-viewer).
  app.get("/version", (c) => c.json(VERSION));
  app.route("/", openapiRoutes());
  app.route("/", docsRoutes());
  // Prometheus metrics (get on the nonResourceURL /metrics) and the counting of requests for them.
  app.route("/", metricsRoutes());
  app.use("/api/*", countApiRequests);
  app.use("/apis/*", countApiRequests);
  app.use("/agent/v1/*", countAgentRequests);
  app.use("/hooks/*", countWebhookDeliveries);
  // The dashboard (/ui) and `/`: a browser is sent to the dashboard, an API client gets RootPaths.
  app.route("/", uiRoutes());
  // Outermost on the Kubernetes API: the audit log (src/audit) sees every answer, errors included.
  app.use("/api/*", auditRequests);
  app.use("/apis/*", auditRequests);
  app.use("/clusters/*", auditRequests);
  // ServiceAccount issuer discovery (OIDC discovery document and JWKS), public as kube-apiserver's.
  app.route("/", serviceAccountIssuerRoutes());
  // The proxy to each member cluster's API over its agent's channel (docs/proxy.md): before the
  // YAML middleware, so that an answer passes as the member sent it.
  app.route("/", proxyRoutes());
  // YAML out for the Kubernetes API when a client asks for it (`Accept: application/yaml`).
  app.use("/api/*", yamlResponses);
  app.use("/apis/*", yamlResponses);
  app.route("/api", coreRoutes());
  app.route("/apis", resourceRoutes());
  // Webhook receivers: no bearer token, the delivery's HMAC signature is the credential.
  app.route("/hooks", webhookRoutes());
  app.route("/agent/v1", channelRoutes());
  app.route("/agent/v1", agentRoutes());
  app.notFound(() => statusResponse(new ApiError(404, "NotFound", "the server could not find the requested resource")));
  app.onError((err) => {
    if (err instanceof ApiError) return statusResponse(err);
    console.error("internal error", err);
    return statusResponse(new ApiError(500, "InternalError", "Internal error occurred"));
  });
  return app;
}

// The controllers' hooks, in the manifest's order (src/controllers.ts): the Worker and the Durable
// Objects (one isolate per script) see the same ones.
installControllers();
const app = createApp();

export default {
  fetch: (req: Request, env: Env, ctx: ExecutionContext) => {
    // What writes committed before this isolate started still owe runs in the background.
    recoverAtStart(env, clock.now(), (p) => ctx.waitUntil(p));
    return app.fetch(req, env, ctx);
  },
} satisfies ExportedHandler<Env>;
