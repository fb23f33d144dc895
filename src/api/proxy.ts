/**
 * The proxy to each member cluster's Kubernetes API (docs/proxy.md), carried over the cluster's
 * agent channel, at two prefixes:
 *
 * - `/apis/cluster.karmada.io/v1alpha1/clusters/{name}/proxy/{path}`: Karmada's (its aggregated
 *   API's `clusters/proxy` subresource, karmada-io/karmada `pkg/util/proxy/proxy.go`), authorized
 *   as the RBAC subresource `clusters/proxy` of group `cluster.karmada.io`;
 * - `/clusters/{name}/proxy/{path}`: Flotilla's shorter one, authorized as `managedclusters/proxy`
 *   of group `cluster.open-cluster-management.io`.
 *
 * kubectl reaches a member by putting a prefix in its kubeconfig's `server`. The request is
 * authenticated and impersonated as every API request (src/auth/request.ts); RBAC decides with
 * the verb of its method (GET get, POST create, PUT update, PATCH patch, DELETE delete, as
 * kube-apiserver's RequestInfo does for a named subresource) on the cluster's name. The member's
 * path is checked ({@link memberPath}: no `.` or `..` segment, no scheme or authority), the
 * request's credentials and `Impersonate-*` headers are dropped, and the cluster's object runs it
 * over the channel (durable-objects/cluster/proxy.ts), where the agent impersonates the hub user
 * on its cluster. Every proxied request is audited (src/audit/middleware.ts).
 */
import { Hono, type Context } from "hono";
import type { ApiEnv } from "./context.ts";
import { ApiError, badRequest } from "../k8s/errors.ts";
import { bearerToken } from "../auth/credentials.ts";
import { authenticateRequest, impersonatedUser } from "../auth/request.ts";
import { authorizeRequest } from "../auth/rbac-store.ts";
import type { ResourceAttributes } from "../auth/rbac-types.ts";
import { ensureBuiltins } from "./builtins.ts";
import { statusResponse } from "./request.ts";
import { PROXY_MAX_BODY_BYTES, type ProxyUser } from "../agent-api/channel-protocol.ts";
import { PROXY_REQUEST_HEADER, type ProxyRequest } from "../../durable-objects/cluster/proxy.ts";

/** Karmada's cluster API group, whose `clusters/proxy` subresource the Karmada prefix is. */
export const KARMADA_CLUSTER_GROUP = "cluster.karmada.io";
/** OCM's cluster API group, whose `managedclusters/proxy` subresource Flotilla's prefix is. */
export const OCM_CLUSTER_GROUP = "cluster.open-cluster-management.io";

/** The request headers passed to the member (lower case); everything else (credentials, `Impersonate-*`, cookies) stays at the hub. */
const PASSED_REQUEST_HEADERS = new Set(["accept", "content-type", "user-agent", "kubectl-command", "kubectl-session", "x-request-id"]);

/** The impersonation extra by which the member learns which hub a request came through. */
export const HUB_EXTRA = "flotilla.io/hub";

/** A DNS-1123 subdomain, as a ManagedCluster's name is. */
const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The kind of upgrade a request asks for: `websocket` (exec, attach, cp, port-forward over
 * WebSocket, KEP-4006), `other` (SPDY/3.1, or anything else the hub cannot serve), or null.
 */
function upgradeOf(req: Request): "websocket" | "other" | null {
  const upgrade = (req.headers.get("upgrade") ?? "").trim().toLowerCase();
  if (!upgrade) return null;
  return upgrade === "websocket" ? "websocket" : "other";
}

/**
 * The answer to an upgrade the hub cannot serve (kubectl's SPDY/3.1, tried by kubectl before
 * 1.30, by 1.30's port-forward, or when its WebSocket attempt failed): kube-apiserver answers an
 * upgrade it cannot make with 400 `BadRequest` (apimachinery `pkg/util/httpstream/spdy`
 * `responseUpgrader`, "unable to upgrade"); the message says what works instead.
 */
export function unsupportedUpgrade(upgrade: string): ApiError {
  return badRequest(
    `unable to upgrade: the hub serves exec, attach, cp and port-forward over WebSocket only, not ${JSON.stringify(upgrade.slice(0, 40))} ` +
      "(Cloudflare Workers cannot serve SPDY): use kubectl 1.30 or newer for exec, attach and cp, 1.31 or newer for port-forward, " +
      "without KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false or KUBECTL_PORT_FORWARD_WEBSOCKETS=false",
  );
}

/** A Pod's streaming subresource (exec, attach, portforward), served only over a WebSocket upgrade. */
const STREAMING_SUBRESOURCE = /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/(exec|attach|portforward)\/?$/;

/** The RBAC verb of a proxied request's method (kube-apiserver's RequestInfo for a named subresource). */
function verbOf(method: string): string {
  switch (method) {
    case "GET":
    case "HEAD":
      return "get";
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return "delete";
    default:
      return "";
  }
}

/**
 * The member's path of a proxied request: what follows `/proxy` in the hub's raw path (`/` when
 * nothing does), kept encoded as sent.
 * @throws ApiError 400 when a segment is `.` or `..` (plain or percent-encoded: the path would
 *   leave the member's API for another of the hub's), holds a backslash or NUL, or the path
 *   starts with `//` or a scheme (`http:`): an absolute URL, which the proxy never follows
 */
export function memberPath(rest: string): string {
  const path = rest === "" ? "/" : rest;
  if (!path.startsWith("/")) throw badRequest(`the proxied path ${JSON.stringify(path)} must be absolute`);
  if (path.startsWith("//") || /^\/+[a-zA-Z][a-zA-Z0-9+.-]*:/.test(path)) {
    throw badRequest(`the proxied path ${JSON.stringify(path.slice(0, 200))} is an absolute URL: the proxy only reaches the cluster's own API server`);
  }
  for (const raw of path.split("/")) {
    let seg: string;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      throw badRequest(`the proxied path has a malformed escape: ${JSON.stringify(raw.slice(0, 100))}`);
    }
    if (seg === "." || seg === "..") throw badRequest(`the proxied path may not hold a "${seg}" segment: it would leave the cluster's API`);
    if (/[\\\0]/.test(seg) || seg.includes("/")) throw badRequest(`the proxied path may not hold a backslash, NUL or encoded "/" in a segment`);
  }
  return path;
}

/** Reads a request body of at most {@link PROXY_MAX_BODY_BYTES}, as base64 (undefined when empty). @throws ApiError 413 */
async function bodyOf(req: Request): Promise<string | undefined> {
  if (!req.body) return undefined;
  const declared = Number(req.headers.get("content-length") ?? "0");
  const tooLarge = () => new ApiError(413, "RequestEntityTooLarge", `a proxied request's body may have at most ${PROXY_MAX_BODY_BYTES} bytes`);
  if (declared > PROXY_MAX_BODY_BYTES) throw tooLarge();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > PROXY_MAX_BODY_BYTES) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  if (size === 0) return undefined;
  let binary = "";
  for (const chunk of chunks) for (let i = 0; i < chunk.length; i += 0x8000) binary += String.fromCharCode(...chunk.subarray(i, i + 0x8000));
  return btoa(binary);
}

/**
 * Serves one proxied request under `prefix` (the path up to and including `/proxy`) to cluster
 * `name`, authorized as `resource/proxy` of `apiGroup` (see the module comment).
 */
async function proxy(c: Context<ApiEnv>, name: string, apiGroup: string, resource: string, prefix: string): Promise<Response> {
  const req = c.req.raw;
  const url = new URL(req.url);
  const upgrade = upgradeOf(req);
  // An upgrade (exec, attach, port-forward) writes to the member whatever its method: `create`, as
  // kube-apiserver authorizes a WebSocket upgrade of pods/exec, attach and portforward
  // (AuthorizePodWebsocketUpgradeCreatePermission, KEP-4006).
  const verb = upgrade && req.method === "GET" ? "create" : verbOf(req.method);
  const attributes: ResourceAttributes = {
    verb,
    apiGroup,
    apiVersion: apiGroup === KARMADA_CLUSTER_GROUP ? "v1alpha1" : "v1",
    resource,
    subresource: "proxy",
    name,
    namespace: "",
  };
  c.set("attributes", attributes);
  const authenticated = await authenticateRequest(c.env, req, bearerToken(c));
  c.set("authenticatedUser", authenticated);
  c.set("user", authenticated);
  await ensureBuiltins(c.env);
  const user = await impersonatedUser(c.env, authenticated, req.headers);
  c.set("user", user);
  if (!verb) throw new ApiError(405, "MethodNotAllowed", `the proxy does not serve the method ${req.method}`);
  if (!CLUSTER_NAME.test(name) || name.length > 253) throw badRequest(`${JSON.stringify(name)} is not a cluster name`);
  await authorizeRequest(c.env, user, attributes);
  const path = memberPath(url.pathname.slice(prefix.length));
  // SPDY: its `Upgrade: SPDY/3.1` (which the runtime may drop as a hop-by-hop header), or a
  // streaming subresource asked for without a WebSocket (kubectl's SPDY requests name their
  // protocols in X-Stream-Protocol-Version).
  if (upgrade === "other" || (!upgrade && (req.headers.has("x-stream-protocol-version") || STREAMING_SUBRESOURCE.test(path)))) {
    throw unsupportedUpgrade(req.headers.get("upgrade") || "SPDY/3.1");
  }
  const headers: Record<string, string[]> = {};
  for (const [k, v] of req.headers) if (PASSED_REQUEST_HEADERS.has(k) || (upgrade && k === "sec-websocket-protocol")) (headers[k] ??= []).push(v);
  const body = upgrade ? undefined : await bodyOf(req);
  const as: ProxyUser = { name: user.name, groups: [...(user.groups ?? [])] };
  if (user.uid) as.uid = user.uid;
  if (user.extra && Object.keys(user.extra).length) as.extra = Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]]));
  const forwarded: ProxyRequest = {
    method: req.method,
    path,
    query: url.search.slice(1),
    headers,
    user: as,
    hub: url.host,
    ...(body ? { body } : {}),
    ...(upgrade ? { websocket: true } : {}),
  };
  const target = `https://cluster/${encodeURIComponent(name)}/proxy`;
  // An upgrade goes as one (a GET without a body, the request in a header): the object answers it
  // with the client's WebSocket (durable-objects/cluster/proxy-socket.ts).
  if (upgrade) {
    return c.env.CLUSTERS.getByName(name).fetch(
      new Request(target, { method: "GET", headers: { [PROXY_REQUEST_HEADER]: encodeURIComponent(JSON.stringify(forwarded)), upgrade: "websocket" } }),
    );
  }
  return c.env.CLUSTERS.getByName(name).fetch(
    new Request(target, {
      method: "POST",
      headers: { [PROXY_REQUEST_HEADER]: "1", "content-type": "application/json" },
      body: JSON.stringify(forwarded),
      signal: req.signal,
    }),
  );
}

/**
 * The proxy's routes (see the module comment), mounted at `/` by src/index.ts before the API's
 * YAML middleware (a proxied answer passes as the member sent it).
 */
export function proxyRoutes(): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>({ strict: false });
  const karmada = "/apis/cluster.karmada.io/v1alpha1/clusters/:name/proxy";
  app.all(karmada, (c) => proxy(c, c.req.param("name"), KARMADA_CLUSTER_GROUP, "clusters", prefixOf(c, 6)));
  app.all(`${karmada}/*`, (c) => proxy(c, c.req.param("name"), KARMADA_CLUSTER_GROUP, "clusters", prefixOf(c, 6)));
  app.all("/clusters/:name/proxy", (c) => proxy(c, c.req.param("name"), OCM_CLUSTER_GROUP, "managedclusters", prefixOf(c, 3)));
  app.all("/clusters/:name/proxy/*", (c) => proxy(c, c.req.param("name"), OCM_CLUSTER_GROUP, "managedclusters", prefixOf(c, 3)));
  app.onError((err) => {
    if (err instanceof ApiError) return statusResponse(err);
    throw err;
  });
  return app;
}

/** The raw path's first `segments` segments (the prefix up to `/proxy`), as sent (still encoded). */
function prefixOf(c: Context, segments: number): string {
  const path = new URL(c.req.url).pathname;
  let at = 0;
  for (let i = 0; i < segments; i++) {
    const next = path.indexOf("/", at + 1);
    at = next < 0 ? path.length : next;
  }
  return path.slice(0, at);
}
