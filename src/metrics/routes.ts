/**
 * `GET /metrics` (Prometheus text exposition format 0.0.4) and the middlewares that count the
 * hub's requests for it:
 *
 * - {@link countApiRequests} on `/api` and `/apis`: kube-apiserver's `apiserver_request_total`
 *   and `apiserver_request_duration_seconds`, labelled as kube-apiserver labels them (verb as
 *   its `CleanVerb`: the method, `LIST` for a collection GET, `WATCH`, `APPLY` for a server-side
 *   apply; scope `resource`, `namespace` or `cluster`; `dry_run`; component `apiserver`). A
 *   resource the hub does not serve is counted without group, version, resource and
 *   subresource, so strangers cannot grow the series;
 * - {@link countAgentRequests} on `/agent/v1`: requests by route and code, heartbeats and
 *   registrations by code;
 * - {@link countWebhookDeliveries} on `/hooks`: deliveries by result and code.
 *
 * `/metrics` is authorized as kube-apiserver authorizes it: the nonResourceURL `/metrics` with
 * verb `get` (the bootstrap ClusterRole `system:monitoring`, bound to the group
 * `system:monitoring`, grants it; so does cluster-admin). It shows the counters and histograms
 * the metrics object keeps (durable-objects/metrics.ts, after this isolate's own batch is sent)
 * and the fleet's gauges counted from D1 (src/metrics/fleet.ts).
 *
 * @module
 */
import { Hono, type MiddlewareHandler } from "hono";
import type { ApiEnv } from "../api/context.ts";
import { ensureBuiltins } from "../api/builtins.ts";
import { apiAccess } from "../auth/request.ts";
import { isNonResourceRequest, type RequestAttributes } from "../auth/rbac-types.ts";
import { requestAttributes } from "../auth/requestinfo.ts";
import { KINDS } from "../kinds/index.ts";
import type { Env } from "../env.ts";
import { EXPOSITION_CONTENT_TYPE, renderExposition, type Cell } from "./exposition.ts";
import { ALL_FAMILIES, COUNTED } from "./families.ts";
import { fleetGauges } from "./fleet.ts";
import { count, countAndObserve, flushMetrics, flushSoon, METRICS_OBJECT } from "./recorder.ts";
import { requestUrl } from "../k8s/request-url.ts";

/** `group/version/plural` of every served kind: the resources whose requests are labelled by resource. */
const SERVED = new Set(KINDS.map((k) => `${k.group}/${k.version}/${k.plural}`));

/** The labels kube-apiserver gives a request (without `code`). */
export type RequestLabels = {
  verb: string;
  dry_run: string;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  scope: string;
  component: string;
};

/**
 * The labels of an API request as kube-apiserver's request metrics give them (see the module
 * comment): `method`, the request URL, its `Content-Type`, the authorization attributes (derived
 * from the method and URL when the request failed before they were set) and the response `code`.
 * Pure.
 * @example requestLabels("GET", new URL("https://hub/apis/cluster.open-cluster-management.io/v1/managedclusters"), undefined, undefined, 200).verb // "LIST"
 */
export function requestLabels(
  method: string,
  url: URL,
  contentType: string | undefined,
  attributes: RequestAttributes | undefined,
  code: number,
): RequestLabels {
  const attrs = attributes ?? requestAttributes(method, url);
  const upper = method.toUpperCase() === "HEAD" ? "GET" : method.toUpperCase();
  // No query (every GET kubectl apply makes): no dryRun, and no URLSearchParams made to say so.
  const dryRun = url.search === "" ? "" : [...new Set(url.searchParams.getAll("dryRun"))].sort().join(",");
  const base = { dry_run: dryRun, component: "apiserver" };
  if (isNonResourceRequest(attrs)) return { ...base, verb: upper, group: "", version: "", resource: "", subresource: "", scope: "" };
  let verb = upper;
  if (attrs.verb === "watch") verb = "WATCH";
  else if (attrs.verb === "list") verb = "LIST";
  else if (upper === "PATCH" && (contentType ?? "").split(";")[0]!.trim() === "application/apply-patch+yaml") verb = "APPLY";
  const scope = attrs.name || attrs.verb === "create" ? "resource" : attrs.namespace ? "namespace" : "cluster";
  const served = SERVED.has(`${attrs.apiGroup}/${attrs.apiVersion ?? ""}/${attrs.resource}`);
  if (!served) return { ...base, verb, group: "", version: "", resource: "", subresource: "", scope };
  return {
    ...base,
    verb,
    group: attrs.apiGroup,
    version: attrs.apiVersion ?? "",
    resource: attrs.resource,
    subresource: code === 404 ? "" : (attrs.subresource ?? ""),
    scope,
  };
}

/** Seconds since `startMs` (`performance.now()` milliseconds: elapsed time, not the injected clock a test may move). */
function since(startMs: number): number {
  return Math.max(0, performance.now() - startMs) / 1000;
}

/** Sends the isolate's batch after the response, when the request has a context to wait in (not so for a test calling the app directly). */
function flushAfter(c: { env: Env; readonly executionCtx: { waitUntil(p: Promise<unknown>): void } }): void {
  let ctx: { waitUntil(p: Promise<unknown>): void };
  try {
    ctx = c.executionCtx;
  } catch {
    return;
  }
  flushSoon(c.env, (p) => ctx.waitUntil(p));
}

/**
 * The request-counting middleware of `/api` and `/apis` (see the module comment): counts the
 * request after it ran, with its response code; times it unless it is a WATCH or CONNECT.
 */
export const countApiRequests: MiddlewareHandler<{ Bindings: Env; Variables: Partial<ApiEnv["Variables"]> }> = async (c, next) => {
  const start = performance.now();
  try {
    await next();
  } finally {
    try {
      const code = c.res.status;
      const labels = requestLabels(c.req.method, requestUrl(c.req.raw), c.req.header("content-type"), c.get("attributes"), code);
      // apiserver_request_total's labels are the duration's and `code`: their label part is built once.
      const seconds = labels.verb !== "WATCH" && labels.verb !== "CONNECT" ? since(start) : undefined;
      countAndObserve(COUNTED.apiRequests, COUNTED.apiRequestDuration, labels, ["code", String(code)], seconds);
      flushAfter(c);
    } catch (e) {
      console.error("metrics: a request was not counted:", e instanceof Error ? e.message : String(e));
    }
  }
};

/** The agent route of a path under `/agent/v1` (a bounded set of names). */
export function agentRoute(path: string): string {
  const p = path.replace(/^\/agent\/v1/, "").replace(/\/+$/, "");
  if (p === "/register") return "register";
  const m = /^\/clusters\/[^/]+(?:\/(.*))?$/.exec(p);
  if (!m) return "other";
  const rest = m[1] ?? "";
  if (rest === "") return "info";
  if (/^works\/[^/]+\/status$/.test(rest)) return "workstatus";
  return ["heartbeat", "works", "left", "rotate-key", "connect"].includes(rest) ? rest : "other";
}

/**
 * The request-counting middleware of `/agent/v1`: `flotilla_agent_requests_total` by route and
 * code, and for `heartbeat` and `register` their own counters. Counted in memory and sent in the
 * isolate's batch after the response (src/metrics/recorder.ts).
 */
export const countAgentRequests: MiddlewareHandler<{ Bindings: Env }> = async (c, next) => {
  try {
    await next();
  } finally {
    try {
      const code = c.res.status;
      const route = agentRoute(requestUrl(c.req.raw).pathname);
      count(COUNTED.agentRequests, { route, transport: route === "connect" ? "channel" : "http", code });
      if (route === "heartbeat") count(COUNTED.heartbeats, { transport: "http", code });
      if (route === "register") count(COUNTED.registrations, { code });
      flushAfter(c);
    } catch (e) {
      console.error("metrics: an agent request was not counted:", e instanceof Error ? e.message : String(e));
    }
  }
};

/** The result of a webhook delivery answered `code`: accepted (2xx), replayed (409), refused. */
export function deliveryResult(code: number): string {
  return code < 300 ? "accepted" : code === 409 ? "replayed" : "refused";
}

/** The delivery-counting middleware of `/hooks`: `flotilla_webhook_deliveries_total` by result and code. */
export const countWebhookDeliveries: MiddlewareHandler<{ Bindings: Env }> = async (c, next) => {
  try {
    await next();
  } finally {
    try {
      const code = c.res.status;
      count(COUNTED.webhookDeliveries, { result: deliveryResult(code), code });
      flushAfter(c);
    } catch (e) {
      console.error("metrics: a delivery was not counted:", e instanceof Error ? e.message : String(e));
    }
  }
};

/**
 * Everything `/metrics` shows, as text format 0.0.4: this isolate's batch is sent first, then
 * the metrics object's series and the fleet's gauges are read at once. `timing` is a
 * `Server-Timing` value: when the counters and the D1 gauges had arrived, and the total
 * (milliseconds from the start; workerd's clock moves on I/O only).
 * @throws errors of D1 or of the metrics object
 */
export async function scrape(env: Env): Promise<{ text: string; timing: string }> {
  const t0 = performance.now();
  await flushMetrics(env);
  const timed = async <T>(p: Promise<T>): Promise<[T, number]> => [await p, Math.round(performance.now() - t0)];
  const [[counted, objectMs], [gauges, d1Ms]] = await Promise.all([
    timed(env.METRICS ? env.METRICS.getByName(METRICS_OBJECT).series() : Promise.resolve([] as Cell[])),
    timed(fleetGauges(env)),
  ]);
  const text = renderExposition(ALL_FAMILIES, [...(counted as Cell[]), ...gauges]);
  return { text, timing: `counters;dur=${objectMs}, d1;dur=${d1Ms}, total;dur=${Math.round(performance.now() - t0)}` };
}

/**
 * The `/metrics` route (mount with `app.route("/", metricsRoutes())`): authenticated, and
 * authorized as `get` on the nonResourceURL `/metrics` (see the module comment).
 */
export function metricsRoutes(): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>();
  app.use("/metrics", apiAccess(ensureBuiltins));
  app.get("/metrics", async (c) => {
    const { text, timing } = await scrape(c.env);
    return new Response(text, {
      headers: { "content-type": EXPOSITION_CONTENT_TYPE, "cache-control": "no-store", "x-content-type-options": "nosniff", "server-timing": timing },
    });
  });
  return app;
}
