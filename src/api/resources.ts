/**
 * The generic Kubernetes resource endpoints, shared by every kind (after the apiserver's generic
 * registry): `/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/status]]` with get, list
 * (labelSelector, fieldSelector), create, update, merge patch, server-side apply and delete.
 * D1-stored kinds commit through the D1 store; ManagedCluster goes through its Durable Object; a
 * computed kind (a cluster's Lease, `KindDefinition.computed`) is read through its reader
 * (src/api/leases.ts) with the same selectors, paging and answer forms, and is never written.
 */
import { Hono } from "hono";
import { ApiError, methodNotAllowed } from "../k8s/errors.ts";
import { acceptsStrategicMergePatch, apiVersionOf } from "../k8s/kind.ts";
import { servedGroups } from "../kinds/index.ts";
import { apiAccess } from "../auth/request.ts";
import { ensureBuiltins } from "./builtins.ts";
import type { ApiEnv } from "./context.ts";
import { AUDIT_GROUP, AUDIT_RESOURCE, AUDIT_VERSION, serveAuditEvents } from "../audit/routes.ts";
import { negotiate } from "./negotiate.ts";
import { decodesProtobuf } from "./protobuf.ts";
import { decodeDelete, decodeObjectBody, decodePatch, fieldManagerOf, queryFlag, statusResponse } from "./request.ts";
import { type Ctx, type Target, resolve } from "./resource/target.ts";
import { syncCustomKinds } from "../kinds/sync.ts";
import { notServed } from "./resource/answer.ts";
import { list, get } from "./resource/read.ts";
import { write, review, deleteCollection } from "./resource/write.ts";
import { createSubresource } from "./resource/subresources.ts";
import { serveScale } from "./scale.ts";
import { servePlacementRender } from "./placement-render.ts";
import { resourceList, wantsAggregatedDiscovery, aggregatedDiscovery } from "./resource/discovery.ts";
import { requestUrl } from "../k8s/request-url.ts";

/**
 * {@link resolve}, and when the path names nothing this isolate serves (404), once more after a
 * check of the custom kinds (src/kinds/sync.ts `syncCustomKinds`) if that changed them: a CRD
 * another isolate made or changed within the custom kinds' cache age is served at once.
 * @throws ApiError as {@link resolve}; errors of D1
 */
async function resolveFresh(c: Ctx, group: string, version: string, rest: string[]): Promise<Target> {
  try {
    return resolve(group, version, rest);
  } catch (e) {
    if (!(e instanceof ApiError && e.code === 404) || !(await syncCustomKinds(c.env))) throw e;
    return resolve(group, version, rest);
  }
}

/** `resourceList` of a group-version, checked once more as {@link resolveFresh} when nothing is served there. */
async function resourceListFresh(c: Ctx, group: string, version: string): Promise<ReturnType<typeof resourceList>> {
  try {
    return resourceList(group, version);
  } catch (e) {
    if (!(e instanceof ApiError && e.code === 404) || !(await syncCustomKinds(c.env))) throw e;
    return resourceList(group, version);
  }
}

/** Serves one request on a resource path: `prefix` is what precedes the resource part (`/apis/{group}/{version}/`). */
async function serve(c: Ctx, group: string, version: string, prefix: string): Promise<Response> {
  const rest = requestUrl(c.req.raw)
    .pathname.slice(prefix.length)
    .split("/")
    .filter((s) => s !== "");
  const t = await resolveFresh(c, group, version, rest);
  const method = c.req.method;
  const warnings: string[] = [];
  // As kube-apiserver, an answer the client cannot take is refused (406) before anything is done.
  negotiate(c.req.header("accept"), method === "GET" && t.name === undefined ? (queryFlag(c.req.query("watch")) ? "watch" : "list") : "object");
  if (t.update && method !== "PUT") throw methodNotAllowed(`${method} is not allowed on the ${t.update.name} subresource`);
  if (t.def.createOnly) return review(c, t, method, warnings);
  if (t.scale) return serveScale(c, t.def, t.namespace, t.name!);
  if (t.render) return servePlacementRender(c, t);
  if (t.def.viewOf && (method !== "GET" || t.name !== undefined)) throw methodNotAllowed("the server does not allow this method on the requested resource");
  if (t.def.computed && method !== "GET") throw notServed(t.def, t.def.computed.refusal);
  if (t.create) {
    if (method !== "POST") throw methodNotAllowed(`${method} is not allowed on the ${t.create.name} subresource`);
    return createSubresource(c, t, t.create, warnings);
  }
  if (method === "GET") return t.name === undefined ? list(c, t) : get(c, t);
  if (method === "POST") {
    if (t.name !== undefined) throw methodNotAllowed("POST is only allowed on a collection");
    const fieldManager = fieldManagerOf(c, "CreateOptions");
    return write(c, t, { verb: "create", body: await decodeObjectBody(c, warnings, decodesProtobuf(apiVersionOf(t.def), t.def.kind)), fieldManager }, warnings);
  }
  if (method === "DELETE" && t.name === undefined && !t.subresource) return deleteCollection(c, t);
  if (t.name === undefined) throw methodNotAllowed(`${method} is not allowed on a collection`);
  if (method === "PUT") {
    const fieldManager = fieldManagerOf(c, "UpdateOptions");
    return write(
      c,
      t,
      { verb: "update", body: await decodeObjectBody(c, warnings, decodesProtobuf(apiVersionOf(t.def), t.def.kind)), subresource: t.subresource, fieldManager },
      warnings,
    );
  }
  if (method === "PATCH") return write(c, t, await decodePatch(c, t.subresource, warnings, acceptsStrategicMergePatch(t.def)), warnings);
  if (method === "DELETE") {
    if (t.subresource) throw methodNotAllowed("DELETE is not allowed on the status subresource");
    return write(c, t, await decodeDelete(c));
  }
  throw methodNotAllowed(`${method} is not allowed`);
}

/**
 * The `/api` routes of the core group (group "", version v1; e.g. Secrets), as the apiserver's
 * legacy API: `GET /api` (APIVersions), `GET /api/v1` (APIResourceList) and the generic resource
 * endpoints `/api/v1[/namespaces/{ns}]/{plural}[/{name}]`, with the same authorisation.
 *
 * @example app.route("/api", coreRoutes());
 */
export function coreRoutes(): Hono<ApiEnv> {
  const app = apiApp();
  const versions = servedGroups().find((g) => g.group === "")?.versions ?? [];
  app.get("/", (c) => {
    const aggregated = wantsAggregatedDiscovery(c.req.header("accept"));
    return aggregated
      ? aggregatedDiscovery(true, aggregated)
      : c.json({ kind: "APIVersions", versions, serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: new URL(c.req.url).host }] });
  });
  app.get("/:version", (c) => c.json(resourceList("", c.req.param("version"))));
  app.all("/:version/*", (c) => serve(c, "", c.req.param("version"), `/api/${c.req.param("version")}/`));
  return app;
}

/**
 * A Hono app for `/api` or `/apis`: every request authenticated and authorized (src/auth/request.ts
 * `apiAccess`; the built-in objects made first), errors as Status objects.
 */
function apiApp(): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>();
  app.use("*", apiAccess(ensureBuiltins));
  app.onError((err) => {
    if (err instanceof ApiError) return statusResponse(err);
    throw err;
  });
  return app;
}

/** The `/apis` routes: discovery documents and the generic resource endpoints. */
export function resourceRoutes(): Hono<ApiEnv> {
  const app = apiApp();

  app.get("/", (c) => {
    const aggregated = wantsAggregatedDiscovery(c.req.header("accept"));
    if (aggregated) return aggregatedDiscovery(false, aggregated);
    return c.json({
      kind: "APIGroupList",
      apiVersion: "v1",
      groups: servedGroups()
        .filter((g) => g.group !== "")
        .map((g) => ({
          name: g.group,
          versions: g.versions.map((v) => ({ groupVersion: `${g.group}/${v}`, version: v })),
          preferredVersion: { groupVersion: `${g.group}/${g.versions[0]}`, version: g.versions[0] },
        })),
    });
  });

  app.get("/:group/:version", async (c) => c.json(await resourceListFresh(c, c.req.param("group"), c.req.param("version"))));

  // The audit log (src/audit): not a stored kind; list and watch only.
  app.all(`/${AUDIT_GROUP}/${AUDIT_VERSION}/${AUDIT_RESOURCE}`, (c) => serveAuditEvents(c, []));
  app.all(`/${AUDIT_GROUP}/${AUDIT_VERSION}/${AUDIT_RESOURCE}/*`, (c) =>
    serveAuditEvents(
      c,
      new URL(c.req.url).pathname
        .split("/")
        .slice(5)
        .filter((s) => s !== ""),
    ),
  );

  app.all("/:group/:version/*", (c) => {
    const { group, version } = c.req.param();
    return serve(c, group, version, `/apis/${group}/${version}/`);
  });
  return app;
}
