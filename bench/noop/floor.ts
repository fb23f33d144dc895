/**
 * The platform floor of the benchmarks (bench/noop/worker.ts with `BENCH_FLOOR=1`): the least
 * that any hub storing what Flotilla stores must do for the same result, with the hub's own
 * platform calls (a local D1, one Durable Object per cluster, the agent's WebSocket), so that
 * timing it beside the hub in the same run says whether a bar is within this machine's reach at
 * all (the floor under it) and by how much the hub exceeds it. The no-op Worker's other answers
 * (the channel alone, nothing stored) remain its "no-op" column.
 *
 * **A placement's create** (bench:crp's "floor" column), per cluster, nothing else:
 * - its ManifestWork written to D1: one row of {@link OBJECTS_TABLE} (resource, namespace, name,
 *   body), the work's text as the hub stores it (its spec once per batch in {@link SPECS_TABLE}
 *   keyed by its SHA-256 and the row's body without it, as src/store/d1/objects.ts stores a spec
 *   of 2 KB or more; with `inlineSpec` the whole text in the row instead), {@link BATCH_ITEMS} rows to
 *   a D1 batch (the hub's `COMMIT_BATCH_ITEMS`), each batch committed while the RPCs of the one
 *   before run ({@link HOOK_CONCURRENCY} at a time, the hub's write path's pipeline of two);
 * - one RPC to the cluster's Durable Object ({@link FloorClusterObject.deliver}) carrying the
 *   work's text, as the hub's delivery hook hands it (src/work/controller.ts, `deltaMessage`: the
 *   object without its spec, and the spec's text apart), and the object pushing it on the agent's
 *   WebSocket as a `works` message (the spec's text spliced in, never parsed);
 * - at the agent's `report`: one D1 write of the work's status (the row's body with the report's
 *   status, by key), grouped with the concurrent reports of the isolate as the hub groups them
 *   (src/store/group-commit.ts `CommitGroups`, at most {@link BATCH_ITEMS} to a batch), then the
 *   `ack`. An object that hibernated since its delivery (it then holds nothing in memory, as the
 *   hub's) reads the work's row by key first (one D1 call more).
 * No credential is checked, no watch event, label index, outbox, binding, placement status or
 * Event is written: what a simpler hub could skip or fold is left out, so the floor is a lower
 * bound of any design that stores one work per cluster and acknowledges its status once stored.
 *
 * **kubectl apply** (bench:kinds' and bench:apply-requests' "floor"): a GET of an object is one
 * D1 read of its row by key (200 with its body, or NotFound); a POST is one D1 statement, the
 * insert of the object's row (the body as sent) guarded by its namespace's existence (`INSERT ...
 * SELECT ... WHERE EXISTS`; 404 without it, 409 AlreadyExists on the key), a PATCH the same as an
 * upsert. Nothing is validated, defaulted or versioned.
 *
 * Counts (`GET /__floor`, `POST /__floor` sets them to zero): D1 calls (a batch is one), rows
 * read and written (D1's `meta`), RPCs to the cluster objects, and constructions of the cluster
 * objects (a first load, or a wake after workerd evicted the object: its hibernation, 10 s after
 * its last event, workerd `server.c++` `handleShutdown`), so that a create says whether its
 * objects were cold. `GET /__floor` also answers `idleMs`, the milliseconds since the last event
 * of any cluster object ended (0 while one runs; -1 before the first): bench:crp waits for it to
 * pass workerd's 10 s before the floor's cold create. In local workerd the Worker and its objects
 * share one isolate, so module variables see them all (as bench/meter/worker.ts).
 */
import { DurableObject } from "cloudflare:workers";
import { CommitGroups } from "../../src/store/group-commit.ts";
import { CHANNEL_PING, CHANNEL_PONG, CHANNEL_SUBPROTOCOL } from "../../src/agent-api/channel-constants.ts";
import type { HubMessage } from "../../src/agent-api/channel-protocol.ts";

/** What the floor needs of the no-op Worker's bindings. */
export interface FloorEnv {
  FLOOR_DB: D1Database;
  FLOOR_CLUSTERS: DurableObjectNamespace<FloorClusterObject>;
}

/** The objects' table: a row per object by key, as the hub's `objects` (without its versions and indexes). */
export const OBJECTS_TABLE = "objects";
/** Large specs stored once, by the SHA-256 of their text (the hub's `shared_specs`, migrations/0013). */
export const SPECS_TABLE = "specs";
/** Rows per D1 batch: the hub's `COMMIT_BATCH_ITEMS` (src/store/d1/objects.ts). */
export const BATCH_ITEMS = 50;
/** RPCs to the cluster objects in flight at once: the hub's write path's `HOOK_CONCURRENCY` (src/store/d1/write.ts). */
export const HOOK_CONCURRENCY = 32;
/** The resource key of ManifestWorks in {@link OBJECTS_TABLE}. */
const WORKS = "work.open-cluster-management.io/manifestworks";
/** The resource key of Namespaces in {@link OBJECTS_TABLE}. */
const NAMESPACES = "api/v1/namespaces";

/** What the floor counted since the last reset (`GET /__floor`). */
export interface FloorCounts {
  d1Calls: number;
  d1RowsRead: number;
  d1RowsWritten: number;
  /** RPCs to the cluster objects. */
  doRequests: number;
  /** Cluster objects constructed: a first load, or a wake after eviction (a cold object). */
  constructions: number;
}

const zero = (): FloorCounts => ({ d1Calls: 0, d1RowsRead: 0, d1RowsWritten: 0, doRequests: 0, constructions: 0 });
let counts: FloorCounts = zero();

/** Cluster objects' events running now (a constructor, an RPC, a fetch, a WebSocket message). */
let activeEvents = 0;
/** When the last cluster object's event ended (epoch milliseconds; workerd's clock, which moves on I/O); 0 before any. */
let lastEventEnd = 0;

/** Runs one event of a cluster object, keeping {@link activeEvents} and {@link lastEventEnd}. */
async function objectEvent<T>(fn: () => Promise<T>): Promise<T> {
  activeEvents++;
  try {
    return await fn();
  } finally {
    activeEvents--;
    lastEventEnd = Date.now();
  }
}

/** Milliseconds since the last cluster object's event ended: 0 while one runs, -1 before the first. */
const idleMs = () => (activeEvents > 0 ? 0 : lastEventEnd === 0 ? -1 : Date.now() - lastEventEnd);

/** Adds a D1 call's results (one call: a statement or a batch) to {@link counts}. */
function counted<T extends D1Result | D1Result[]>(result: T): T {
  counts.d1Calls++;
  for (const r of Array.isArray(result) ? result : [result]) {
    counts.d1RowsRead += r.meta?.rows_read ?? 0;
    counts.d1RowsWritten += r.meta?.rows_written ?? 0;
  }
  return result;
}

let schema: Promise<void> | undefined;

/** Creates the floor's two tables once per isolate (not counted: done before a measure). */
function ensureSchema(db: D1Database): Promise<void> {
  schema ??= db
    .batch([
      db.prepare(
        `CREATE TABLE IF NOT EXISTS ${OBJECTS_TABLE} (resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL, spec_ref TEXT, PRIMARY KEY (resource, namespace, name)) WITHOUT ROWID`,
      ),
      db.prepare(`CREATE TABLE IF NOT EXISTS ${SPECS_TABLE} (hash TEXT PRIMARY KEY NOT NULL, body TEXT NOT NULL)`),
    ])
    .then(() => undefined);
  return schema;
}

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** The work the placement's create delivers (`POST /floor/setup`): the work's text without its spec, and the spec's text. */
interface WorkTemplate {
  /** The work as JSON text without `spec` (the hub's `deltaMessage` has `"spec":null` there). */
  work: Record<string, unknown>;
  specJson: string;
  /** Store the spec in each row's body rather than once per batch. */
  inlineSpec: boolean;
}

let template: WorkTemplate | undefined;

/** What {@link FloorClusterObject.deliver} is handed: the work's text without spec, its spec's text, its version. */
export interface FloorDelivery {
  /** The work's namespace (the cluster's name) and name. */
  namespace: string;
  name: string;
  resourceVersion: number;
  json: string;
  specJson: string;
  /** The row's body carries the spec (`inlineSpec`): a status write rewrites it with the spec. */
  inline: boolean;
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The placement's create on the floor (see the module comment) for each of `clusters`: their works
 * written 50 to a D1 batch, each batch's RPCs to the clusters' objects run while the next batch
 * commits. Answers once every object was handed its work (the agents' reports come after).
 */
async function createWorks(env: FloorEnv, clusters: string[]): Promise<Response> {
  const t = template;
  if (!t) return json({ error: "POST /floor/setup first" }, 409);
  const db = env.FLOOR_DB;
  const hash = await sha256Hex(t.specJson);
  const name = String((t.work.metadata as { name?: string }).name);
  let resourceVersion = 1000;
  let inFlight: Promise<void> = Promise.resolve();
  for (let start = 0; start < clusters.length; start += BATCH_ITEMS) {
    const chunk = clusters.slice(start, start + BATCH_ITEMS);
    const rows = chunk.map((cluster) => {
      const json = JSON.stringify({ ...t.work, metadata: { ...(t.work.metadata as object), namespace: cluster, uid: crypto.randomUUID() } });
      return { cluster, json, rv: ++resourceVersion };
    });
    const statements = rows.map((r) =>
      t.inlineSpec
        ? db
            .prepare(`INSERT INTO ${OBJECTS_TABLE} (resource, namespace, name, body) VALUES (?, ?, ?, ?)`)
            .bind(WORKS, r.cluster, name, `${r.json.slice(0, -1)},"spec":${t.specJson}}`)
        : db
            .prepare(`INSERT INTO ${OBJECTS_TABLE} (resource, namespace, name, body, spec_ref) VALUES (?, ?, ?, ?, ?)`)
            .bind(WORKS, r.cluster, name, r.json, hash),
    );
    if (!t.inlineSpec) statements.unshift(db.prepare(`INSERT OR IGNORE INTO ${SPECS_TABLE} (hash, body) VALUES (?, ?)`).bind(hash, t.specJson));
    counted(await db.batch(statements));
    // The write path's pipeline of two: this batch's RPCs start once the ones before are done.
    await inFlight;
    inFlight = pool(rows, HOOK_CONCURRENCY, async (r) => {
      counts.doRequests++;
      await env.FLOOR_CLUSTERS.getByName(r.cluster).deliver({
        namespace: r.cluster,
        name,
        resourceVersion: r.rv,
        json: r.json,
        specJson: t.specJson,
        inline: t.inlineSpec,
      });
    });
  }
  await inFlight;
  return json({ clusters: clusters.length });
}

/** Runs `fn` on each of `items`, `n` at a time. */
async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** A status write of a work: its row's new body, by key. */
interface StatusWrite {
  namespace: string;
  name: string;
  body: string;
}

/** The isolate's grouped status writes (as src/store/d1/objects.ts groups the hub's, per D1 binding). */
let statusGroups: CommitGroups<StatusWrite, boolean> | undefined;

function statusWrites(db: D1Database): CommitGroups<StatusWrite, boolean> {
  statusGroups ??= new CommitGroups(async (items: StatusWrite[]) => {
    const results = counted(
      await db.batch(
        items.map((w) =>
          db.prepare(`UPDATE ${OBJECTS_TABLE} SET body = ? WHERE resource = ? AND namespace = ? AND name = ?`).bind(w.body, WORKS, w.namespace, w.name),
        ),
      ),
    );
    return results.map((r) => (r.meta?.changes ?? 0) > 0);
  }, BATCH_ITEMS);
  return statusGroups;
}

/** The key of an object's row from its API path, or null for a path that names no object or collection. */
function kubeKey(pathname: string): { resource: string; namespace: string; name?: string } | null {
  const parts = pathname.split("/").filter((p) => p !== "");
  const rest = parts[0] === "api" ? parts.slice(2) : parts[0] === "apis" ? parts.slice(3) : null;
  if (!rest || rest.length === 0) return null;
  const prefix = parts.slice(0, parts.length - rest.length).join("/");
  const namespaced = rest[0] === "namespaces" && rest.length >= 3;
  const [namespace, plural, name, extra] = namespaced ? [rest[1]!, rest[2]!, rest[3], rest[4]] : ["", rest[0]!, rest[1], rest[2]];
  if (extra !== undefined) return null;
  return { resource: `${prefix}/${plural}`, namespace, ...(name === undefined ? {} : { name }) };
}

/** kube-apiserver's Status of a failed request. */
const status = (code: number, reason: string, message: string, name: string) =>
  json({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, details: { name }, code }, code);

/**
 * The Kubernetes API on the floor (see the module comment): answers an object's GET, a POST to a
 * collection and a PATCH of an object; null for anything else (discovery, OpenAPI: the no-op
 * Worker's forwarded answers).
 */
export async function floorKube(req: Request, url: URL, env: FloorEnv): Promise<Response | null> {
  const key = kubeKey(url.pathname);
  if (!key) return null;
  const db = env.FLOOR_DB;
  await ensureSchema(db);
  if (req.method === "GET" && key.name !== undefined) {
    const row = counted(
      await db.prepare(`SELECT body FROM ${OBJECTS_TABLE} WHERE resource = ? AND namespace = ? AND name = ?`).bind(key.resource, key.namespace, key.name).all<{
        body: string;
      }>(),
    ).results[0];
    return row ? new Response(row.body, { headers: { "content-type": "application/json" } }) : status(404, "NotFound", `"${key.name}" not found`, key.name);
  }
  const create = req.method === "POST" && key.name === undefined;
  const apply = req.method === "PATCH" && key.name !== undefined;
  if (!create && !apply) return null;
  const body = await req.text();
  const name = key.name ?? (JSON.parse(body) as { metadata?: { name?: string } }).metadata?.name ?? "";
  // One statement: the row, guarded by its namespace's existence (none for a cluster-scoped object).
  const guard = key.namespace === "" ? "WHERE true" : `WHERE EXISTS (SELECT 1 FROM ${OBJECTS_TABLE} WHERE resource = ? AND namespace = '' AND name = ?)`;
  const upsert = apply ? " ON CONFLICT (resource, namespace, name) DO UPDATE SET body = excluded.body" : "";
  const binds = [key.resource, key.namespace, name, body, ...(key.namespace === "" ? [] : [NAMESPACES, key.namespace])];
  let changes: number;
  try {
    changes = counted(
      await db
        .prepare(`INSERT INTO ${OBJECTS_TABLE} (resource, namespace, name, body) SELECT ?, ?, ?, ? ${guard}${upsert}`)
        .bind(...binds)
        .run(),
    ).meta.changes;
  } catch (e) {
    counts.d1Calls++; // a call all the same, refused by the key
    if (/UNIQUE|constraint/i.test(String(e))) return status(409, "AlreadyExists", `"${name}" already exists`, name);
    throw e;
  }
  if (changes === 0) return status(404, "NotFound", `namespaces "${key.namespace}" not found`, key.namespace);
  return new Response(body, { status: create ? 201 : 200, headers: { "content-type": "application/json" } });
}

/**
 * The floor's own routes: `POST /floor/setup` (the placement's work, `{work, specJson,
 * inlineSpec?}`; creates the tables), `POST /floor/create` (the placement's create for every
 * connected cluster), `GET /__floor` (the counts) and `POST /__floor` (zero them). Null for any
 * other path.
 */
export async function floorRoutes(req: Request, url: URL, env: FloorEnv, clusters: () => string[]): Promise<Response | null> {
  if (url.pathname === "/__floor") {
    if (req.method === "POST") counts = zero();
    return json({ ...counts, idleMs: idleMs() });
  }
  if (req.method !== "POST") return null;
  if (url.pathname === "/floor/setup") {
    await ensureSchema(env.FLOOR_DB);
    const body = (await req.json()) as { work?: Record<string, unknown>; specJson?: string; inlineSpec?: boolean };
    if (!body.work || typeof body.specJson !== "string") return json({ error: "work and specJson" }, 400);
    const { spec: _spec, status: _status, ...work } = body.work;
    template = { work, specJson: body.specJson, inlineSpec: body.inlineSpec === true };
    return json({ ok: true });
  }
  if (url.pathname === "/floor/create") return createWorks(env, [...clusters()].sort());
  return null;
}

const send = (ws: WebSocket, msg: HubMessage | string) => {
  try {
    ws.send(typeof msg === "string" ? msg : JSON.stringify(msg));
  } catch {
    // closed meanwhile: the agent says hello again
  }
};

/** One cluster's channel on the floor: the hub's ClusterObject's least (see the module comment). */
export class FloorClusterObject extends DurableObject<FloorEnv> {
  /** The work it was handed (its text without spec, the spec's text), as the hub's object holds its picture. */
  private work: FloorDelivery | undefined;

  constructor(ctx: DurableObjectState, env: FloorEnv) {
    super(ctx, env);
    counts.constructions++;
    lastEventEnd = Date.now();
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(CHANNEL_PING, CHANNEL_PONG));
  }

  /** The `works` message of the work held, its spec's text spliced in. */
  private worksMessage(w: FloorDelivery): string {
    return `{"type":"works","etag":"${w.resourceVersion}","leaving":false,"works":[${w.json.slice(0, -1)},"spec":${w.specJson}}]}`;
  }

  /** The delivery hook's call: keeps the work and pushes it to the connected agent. */
  deliver(d: FloorDelivery): Promise<void> {
    return objectEvent(async () => {
      this.work = d;
      const msg = this.worksMessage(d);
      for (const ws of this.ctx.getWebSockets()) send(ws, msg);
    });
  }

  override fetch(req: Request): Promise<Response> {
    return objectEvent(() => this.accept(req));
  }

  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): Promise<void> {
    return objectEvent(() => this.message(ws, data));
  }

  /** The agent's connect: its WebSocket accepted (hibernatable), an older one of the cluster's closed. */
  private async accept(req: Request): Promise<Response> {
    for (const old of this.ctx.getWebSockets()) old.close(4000, "replaced");
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server);
    // The cluster's name, kept with the socket: it outlives the object's hibernation.
    server.serializeAttachment({ cluster: decodeURIComponent(/\/clusters\/([^/]+)\/connect$/.exec(new URL(req.url).pathname)?.[1] ?? "") });
    return new Response(null, { status: 101, webSocket: client, headers: { "sec-websocket-protocol": CHANNEL_SUBPROTOCOL } });
  }

  /** One message of the agent: `hello` (welcome, and the work if it holds an older one), `status` (ack), `report` (its status written, then the ack). */
  private async message(ws: WebSocket, data: string | ArrayBuffer): Promise<void> {
    if (typeof data !== "string") return;
    const msg = JSON.parse(data) as { type: string; id?: string; worksEtag?: string; work?: string; report?: { status?: unknown } };
    const w = this.work;
    if (msg.type === "hello") {
      send(ws, { type: "welcome", leaseDurationSeconds: 60, worksEtag: w ? String(w.resourceVersion) : "0", leaving: false });
      if (w && msg.worksEtag !== String(w.resourceVersion)) send(ws, this.worksMessage(w));
    } else if (msg.type === "status") {
      send(ws, { type: "ack", id: msg.id!, leaseDurationSeconds: 60 });
    } else if (msg.type === "report") {
      // The work's row body: as handed over, or read by key when the object hibernated since
      // (it lost what it held in memory, as the hub's object does, which reads D1 then too).
      const namespace = w?.namespace ?? (ws.deserializeAttachment() as { cluster: string }).cluster;
      const stored =
        w && msg.work === w.name
          ? w.inline
            ? `${w.json.slice(0, -1)},"spec":${w.specJson}}`
            : w.json
          : counted(
              await this.env.FLOOR_DB.prepare(`SELECT body FROM ${OBJECTS_TABLE} WHERE resource = ? AND namespace = ? AND name = ?`)
                .bind(WORKS, namespace, msg.work ?? "")
                .all<{ body: string }>(),
            ).results[0]?.body;
      if (stored === undefined)
        return send(
          ws,
          `{"type":"error","id":${JSON.stringify(msg.id)},"status":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"no such work"}}`,
        );
      const body = `${stored.slice(0, -1)},"status":${JSON.stringify(msg.report?.status ?? {})}}`;
      await statusWrites(this.env.FLOOR_DB).run({ namespace, name: msg.work!, body });
      send(ws, { type: "ack", id: msg.id!, resourceVersion: String((w?.resourceVersion ?? 0) + 1) });
    }
  }
}
