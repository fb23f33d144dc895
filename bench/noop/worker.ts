/**
 * The no-op Worker of the benchmarks: it answers the agent protocol with the least work (no
 * credential check, no storage), so that timing the same agent traffic against it and against
 * the hub, in the same run on the same machine, separates the hub's cost from what the machine
 * (one local workerd, wrangler's proxy, the client's own signing, HTTP and WebSockets) can carry
 * at all.
 *
 * HTTP (the poll transport, bench:propagation `BENCH_TRANSPORT=poll`):
 * - `POST /agent/v1/clusters/{name}/heartbeat`: 200 `{"leaseDurationSeconds":60,"worksEtag":<generation>,"leaving":false}`;
 * - `GET /agent/v1/clusters/{name}/works?waitSeconds=N` with `If-None-Match`: while the works
 *   generation is the ETag's, waits up to N seconds (as the hub's long-poll did) and answers 304;
 *   otherwise 200 with one work at the current generation;
 * - `PUT /agent/v1/clusters/{name}/works/{work}/status`: 200.
 *
 * The channel (the ws transport, docs/agent-protocol.md "Channel"):
 * - `GET /agent/v1/clusters/{name}/connect`: handed to the cluster's own {@link NoopClusterObject}
 *   (one Durable Object per cluster, as the hub's), which accepts the WebSocket with the
 *   Hibernation API (`ctx.acceptWebSocket`) and has the runtime answer `ping` with `pong`
 *   (`setWebSocketAutoResponse`) without waking it; it answers `hello` with `welcome` (and the
 *   works when the agent's ETag is not the current generation), `status` and `report` with `ack`.
 *   No credential is checked and nothing is stored.
 *
 * `POST /bump`: the next works generation. Every waiting poll wakes, and every cluster object
 * that accepted a connection is told (`POST /push` to each, 64 at a time, the hub's fan-out from
 * a replica set to its clusters' objects), and pushes the works to its agent.
 *
 * `GET /healthz`: 200 (what the benchmarks probe).
 *
 * The Kubernetes API, as `kubectl apply -f` uses it (bench:kinds), with the least work: an
 * object's GET answers what was last written to its path (200) or a NotFound Status (404); a
 * POST to a collection keeps the body under `<collection>/<metadata.name>` and answers it (201);
 * a PATCH (a server-side apply) keeps the body and answers it (200); nothing is validated,
 * defaulted or merged. Any other GET (discovery, OpenAPI, `/version`) is answered from a copy of
 * the hub's answer: the first request for a path and `Accept` is fetched from
 * `BENCH_FORWARD_URL` (the benchmark's plain-HTTP forwarder to the hub, which adds the
 * credential) and kept for the isolate's life, so that kubectl's discovery is the hub's.
 *
 * With the variable `BENCH_FLOOR=1` it is the platform floor instead (bench/noop/floor.ts): the
 * channel goes to a {@link FloorClusterObject} per cluster, which stores what it must, and the
 * Kubernetes API's object requests are answered from its D1; `/bump` and the HTTP agent routes
 * stay the no-op's.
 *
 * In local workerd the Worker and its objects share one isolate: the generation and the names of
 * the connected clusters are module variables that both read (the hub keeps them in storage).
 */
import { DurableObject } from "cloudflare:workers";
import type { HeartbeatAnswer, WorkStatusAnswer, WorksAnswer } from "../../src/agent-api/protocol.ts";
import { CHANNEL_PING, CHANNEL_PONG, CHANNEL_SUBPROTOCOL } from "../../src/agent-api/channel-constants.ts";
import type { HubMessage } from "../../src/agent-api/channel-protocol.ts";
import { FloorClusterObject, floorKube, floorRoutes, type FloorEnv } from "./floor.ts";

export { FloorClusterObject };

interface Env extends FloorEnv {
  NOOP_CLUSTERS: DurableObjectNamespace<NoopClusterObject>;
  /** "1": the platform floor (bench/noop/floor.ts) answers the channel and the Kubernetes API's objects. */
  BENCH_FLOOR?: string;
  /** The benchmark's forwarder to the hub, for discovery and OpenAPI (see the module comment); unset: 404. */
  BENCH_FORWARD_URL?: string;
}

let generation = 1;
let waiters: (() => void)[] = [];
/** Clusters whose object accepted a connection (the ones {@link bump} tells). */
const connected = new Set<string>();

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** The one work of the no-op Worker, at the current generation (what the agent's decoder checks: name, uid, spec). */
const work = () => ({
  apiVersion: "work.open-cluster-management.io/v1",
  kind: "ManifestWork",
  metadata: { name: "bench", namespace: "noop", uid: "noop-work", generation, resourceVersion: String(generation), creationTimestamp: "2026-01-01T00:00:00Z" },
  spec: {},
});

async function bump(env: Env): Promise<Response> {
  generation++;
  const woken = waiters;
  waiters = [];
  for (const w of woken) w();
  const names = [...connected];
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < names.length) {
        const name = names[next++]!;
        const res = await env.NOOP_CLUSTERS.getByName(name).fetch("http://noop/push", { method: "POST" });
        await res.arrayBuffer();
      }
    }),
  );
  return json({ generation, told: names.length });
}

/** Objects written through the Kubernetes API, by path: their last body, as sent. */
const kubeObjects = new Map<string, string>();
/** The hub's answers to discovery and OpenAPI requests, by path, query and `Accept`. */
const discovery = new Map<string, { status: number; body: ArrayBuffer; headers: [string, string][] }>();

/**
 * The path of an object under `/api/v1/` or `/apis/{group}/{version}/`, split into its collection
 * and name (`namespaces/ns/configmaps` and `x`, `namespaces` and `ns`); null for a discovery path
 * (`/api`, `/apis/apps/v1`) and for a collection.
 */
function objectPath(pathname: string): { collection: string; name?: string } | null {
  const parts = pathname.split("/").filter((p) => p !== "");
  const rest = parts[0] === "api" ? parts.slice(2) : parts[0] === "apis" ? parts.slice(3) : null;
  if (!rest || rest.length === 0) return null;
  const prefix = parts.slice(0, parts.length - rest.length).join("/");
  // namespaces/{ns}/{plural}[/{name}] or {plural}[/{name}]
  const namespaced = rest[0] === "namespaces" && rest.length >= 3;
  const head = namespaced ? 3 : 1;
  if (rest.length === head) return { collection: `/${prefix}/${rest.join("/")}` };
  if (rest.length === head + 1) return { collection: `/${prefix}/${rest.slice(0, head).join("/")}`, name: rest[head]! };
  return null;
}

/** kube-apiserver's NotFound Status, as kubectl reads it. */
const notFound = (name: string) =>
  json(
    { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message: `"${name}" not found`, reason: "NotFound", details: { name }, code: 404 },
    404,
  );

/** The Kubernetes API of the no-op Worker (see the module comment). */
async function kube(req: Request, url: URL, env: Env): Promise<Response> {
  if (env.BENCH_FLOOR === "1") {
    const answer = await floorKube(req, url, env);
    if (answer) return answer;
  }
  const target = objectPath(url.pathname);
  if (target && req.method === "GET" && target.name !== undefined) {
    const body = kubeObjects.get(`${target.collection}/${target.name}`);
    return body === undefined ? notFound(target.name) : new Response(body, { headers: { "content-type": "application/json" } });
  }
  if (target && req.method === "POST" && target.name === undefined) {
    const body = await req.text();
    const name = (JSON.parse(body) as { metadata?: { name?: string } }).metadata?.name ?? "";
    kubeObjects.set(`${target.collection}/${name}`, body);
    return new Response(body, { status: 201, headers: { "content-type": "application/json" } });
  }
  if (target && req.method === "PATCH" && target.name !== undefined) {
    const body = await req.text();
    kubeObjects.set(`${target.collection}/${target.name}`, body);
    return new Response(body, { headers: { "content-type": "application/json" } });
  }
  if (req.method !== "GET" || !env.BENCH_FORWARD_URL) return json({ kind: "Status", code: 404 }, 404);
  const key = `${url.pathname}${url.search} ${req.headers.get("accept") ?? ""}`;
  let kept = discovery.get(key);
  if (!kept) {
    const res = await fetch(`${env.BENCH_FORWARD_URL}${url.pathname}${url.search}`, { headers: { accept: req.headers.get("accept") ?? "*/*" } });
    kept = { status: res.status, body: await res.arrayBuffer(), headers: [...res.headers].filter(([k]) => /^(content-type|etag|cache-control)$/i.test(k)) };
    discovery.set(key, kept);
  }
  return new Response(kept.body, { status: kept.status, headers: kept.headers });
}

export default {
  async fetch(req: Request, env: Env): Promise<Response> {
    const url = new URL(req.url);
    if (/^\/(api|apis|openapi|version)(\/|$)/.test(url.pathname)) return kube(req, url, env);
    if (req.method === "POST" && url.pathname === "/bump") return bump(env);
    if (env.BENCH_FLOOR === "1") {
      const answer = await floorRoutes(req, url, env, () => [...connected]);
      if (answer) return answer;
    }
    if (url.pathname === "/healthz") return new Response("ok");
    const c = /^\/agent\/v1\/clusters\/([^/]+)\/connect$/.exec(url.pathname);
    if (c) {
      if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") return json({ kind: "Status", code: 426 }, 426);
      connected.add(c[1]!);
      return (env.BENCH_FLOOR === "1" ? env.FLOOR_CLUSTERS : env.NOOP_CLUSTERS).getByName(c[1]!).fetch(req);
    }
    const m = /^\/agent\/v1\/clusters\/([^/]+)\/(heartbeat|works)(?:\/([^/]+)\/status)?$/.exec(url.pathname);
    if (!m) return json({ kind: "Status", code: 404 }, 404);
    if (m[2] === "heartbeat") return json({ leaseDurationSeconds: 60, worksEtag: String(generation), leaving: false } satisfies HeartbeatAnswer);
    if (req.method === "PUT") {
      await req.arrayBuffer();
      return json({ resourceVersion: String(generation) } satisfies WorkStatusAnswer);
    }
    const etag = (req.headers.get("if-none-match") ?? "").replace(/"/g, "");
    const wait = Number(url.searchParams.get("waitSeconds") ?? "0") * 1000;
    if (etag === String(generation) && wait > 0) {
      await Promise.race([new Promise<void>((r) => waiters.push(r)), new Promise((r) => setTimeout(r, wait))]);
    }
    if (etag === String(generation)) return new Response(null, { status: 304, headers: { etag: `"${generation}"` } });
    return json({ etag: String(generation), leaving: false, works: [work()] } satisfies WorksAnswer);
  },
};

const send = (ws: WebSocket, msg: HubMessage) => {
  try {
    ws.send(JSON.stringify(msg));
  } catch {
    // closed meanwhile: the agent says hello again
  }
};

/** One cluster's channel on the no-op Worker; see the module comment. */
export class NoopClusterObject extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(CHANNEL_PING, CHANNEL_PONG));
  }

  override async fetch(req: Request): Promise<Response> {
    if (new URL(req.url).pathname === "/push") {
      for (const ws of this.ctx.getWebSockets()) send(ws, { type: "works", etag: String(generation), leaving: false, works: [work()] });
      return new Response(null, { status: 204 });
    }
    for (const old of this.ctx.getWebSockets()) old.close(4000, "replaced");
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server);
    return new Response(null, { status: 101, webSocket: client, headers: { "sec-websocket-protocol": CHANNEL_SUBPROTOCOL } });
  }

  override async webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): Promise<void> {
    if (typeof data !== "string") return;
    const msg = JSON.parse(data) as { type: string; id?: string; worksEtag?: string };
    if (msg.type === "hello") {
      send(ws, { type: "welcome", leaseDurationSeconds: 60, worksEtag: String(generation), leaving: false });
      if (msg.worksEtag !== String(generation)) send(ws, { type: "works", etag: String(generation), leaving: false, works: [work()] });
    } else if (msg.type === "status") {
      send(ws, { type: "ack", id: msg.id!, leaseDurationSeconds: 60 });
    } else if (msg.type === "report") {
      send(ws, { type: "ack", id: msg.id!, resourceVersion: String(generation) });
    }
  }
}
