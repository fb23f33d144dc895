/**
 * The Worker tests' kit: HTTP calls into the hub inside workerd, agent keys, joined clusters,
 * and what the hub stored. API paths shared with the Node suites are in ../kit/api.ts.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from "jose";
import { waitFor } from "../wait.ts";
import { clock } from "../../src/clock.ts";
import { CHANNEL_SUBPROTOCOL } from "../../src/agent-api/channel-protocol.ts";
import { BINDINGS, DECISIONS, MC, MERGE_PATCH, PLACEMENTS, WORKS } from "../kit/api.ts";
import type { Env } from "../../src/env.ts";
import { ReplicaSetObject } from "../../durable-objects/replicaset.ts";

export { BINDINGS, DECISIONS, MC, MERGE_PATCH, MWRS, PLACEMENTS, POLICIES, SECRETS, WORKS } from "../kit/api.ts";
export const ADMIN = "test-admin-token";
export const MCSET = "/apis/cluster.open-cluster-management.io/v1beta2/managedclustersets";
export const TOKENS = "/apis/flotilla.dev/v1alpha1/bootstraptokens";

export interface CallOptions {
  token?: string | null;
  contentType?: string;
  raw?: string;
  /** Extra request headers (e.g. `cf-connecting-ip`, the source address rate limits count by). */
  headers?: Record<string, string>;
}

/** Calls the hub; returns status, parsed JSON body and headers. */
export async function call(method: string, path: string, body?: unknown, opts: CallOptions = {}) {
  const headers: Record<string, string> = { ...opts.headers };
  const token = opts.token === undefined ? ADMIN : opts.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let payload: string | undefined = opts.raw;
  if (body !== undefined && payload === undefined) payload = typeof body === "string" ? body : JSON.stringify(body);
  if (payload !== undefined || opts.contentType !== undefined) headers["content-type"] ??= opts.contentType ?? "application/json";
  const res = await exports.default.fetch(`https://hub.test${path}`, { method, headers, body: payload });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = text;
  }
  return { status: res.status, body: json, headers: res.headers };
}

/** An agent identity: ES256 key pair and a signer of per-request JWTs. */
export interface AgentKeys {
  publicJwk: JWK;
  kid: string;
  /** The hub's key tag for this key, once an answer handed it over (sent as the `ktag` header parameter). */
  tag?: string;
  sign(
    cluster: string,
    opts?: { jti?: string; lifetimeSeconds?: number; iatOffsetSeconds?: number; aud?: string; sub?: string; tag?: string | null },
  ): Promise<string>;
  /** A proof of possession for a registration or rotation (docs/agent-protocol.md). */
  proof(cluster: string, clusterId?: string, opts?: { iatOffsetSeconds?: number; lifetimeSeconds?: number; aud?: string }): Promise<string>;
}

export async function agentKeys(): Promise<AgentKeys> {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const keys: AgentKeys = {
    publicJwk,
    kid,
    async proof(cluster, clusterId, o = {}) {
      const iat = Math.floor(Date.now() / 1000) + (o.iatOffsetSeconds ?? 0);
      return new SignJWT(clusterId === undefined ? {} : { cid: clusterId })
        .setProtectedHeader({ alg: "ES256", kid })
        .setIssuer(cluster)
        .setSubject(cluster)
        .setAudience(o.aud ?? "flotilla-registration")
        .setIssuedAt(iat)
        .setExpirationTime(iat + (o.lifetimeSeconds ?? 60))
        .setJti(crypto.randomUUID())
        .sign(privateKey);
    },
    async sign(cluster, o = {}) {
      const iat = Math.floor(Date.now() / 1000) + (o.iatOffsetSeconds ?? 0);
      const tag = o.tag === undefined ? keys.tag : o.tag;
      return new SignJWT({})
        .setProtectedHeader({ alg: "ES256", typ: "JWT", kid, ...(tag ? { ktag: tag } : {}) })
        .setIssuer(cluster)
        .setSubject(o.sub ?? cluster)
        .setAudience(o.aud ?? "flotilla")
        .setIssuedAt(iat)
        .setExpirationTime(iat + (o.lifetimeSeconds ?? 60))
        .setJti(o.jti ?? crypto.randomUUID())
        .sign(privateKey);
    },
  };
  return keys;
}

/** Creates a bootstrap token and returns its secret. */
export async function createToken(spec: Record<string, unknown> = {}): Promise<string> {
  const r = await call("POST", TOKENS, { apiVersion: "flotilla.dev/v1alpha1", kind: "BootstrapToken", spec });
  if (r.status !== 201) throw new Error(`token create failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.status.token as string;
}

/** Registers an agent and returns its keys. */
export async function register(token: string, clusterName: string, clusterId: string, keys?: AgentKeys) {
  const k = keys ?? (await agentKeys());
  const proof = await k.proof(clusterName, clusterId);
  const r = await call(
    "POST",
    "/agent/v1/register",
    { clusterName, clusterId, publicKey: k.publicJwk, proof, claims: [{ name: "region", value: "eu" }] },
    { token },
  );
  const tag = r.headers.get("flotilla-key-tag");
  if (tag && r.status < 300) k.tag = tag;
  return { keys: k, res: r };
}

/** {@link call}'s options of a JSON merge patch (RFC 7386). */
export const merge: CallOptions = { contentType: MERGE_PATCH };

/** Options of {@link joined}. */
export interface JoinOptions {
  /** Send one heartbeat after registering (default true). */
  heartbeat?: boolean;
  /** Then wait until the cluster's namespace exists (default false; implies `heartbeat`). */
  namespace?: boolean;
}

/**
 * Registers cluster `name` (cluster ID `id-<name>`) with a fresh auto-approving bootstrap token,
 * as its agent does, expecting 201; then, unless `heartbeat` is false, sends one healthy
 * heartbeat, expecting 200; with `namespace`, waits (10 s at most) until the hub created the
 * cluster's namespace.
 * @returns the agent's keys (with the hub's key tag)
 */
export async function joined(name: string, opts: JoinOptions = {}): Promise<AgentKeys> {
  const { keys, res } = await register(await createToken({ autoApprove: true }), name, `id-${name}`);
  expect(res.status).toBe(201);
  if (opts.heartbeat === false && !opts.namespace) return keys;
  expect((await call("POST", `/agent/v1/clusters/${name}/heartbeat`, { healthy: true }, { token: await keys.sign(name) })).status).toBe(200);
  if (opts.namespace) await waitFor(`namespace ${name}`, async () => (await call("GET", `/api/v1/namespaces/${name}`)).status === 200, 10_000, 50);
  return keys;
}

/** OCM's Available condition of a ManagedCluster, status True (what the registration agent reports). */
export const AVAILABLE = {
  type: "ManagedClusterConditionAvailable",
  status: "True",
  reason: "Test",
  message: "test",
  lastTransitionTime: "2026-01-01T00:00:00Z",
};

/**
 * Creates an accepted ManagedCluster `name` with `labels` over the admin API, then merges
 * `status` into its status (default: Available True), as its agent's reports would; expects 201
 * and 200.
 */
export async function createCluster(
  name: string,
  labels: Record<string, string> = {},
  status: Record<string, unknown> = { conditions: [AVAILABLE] },
): Promise<void> {
  const created = await call("POST", MC, {
    apiVersion: "cluster.open-cluster-management.io/v1",
    kind: "ManagedCluster",
    metadata: { name, labels },
    spec: { hubAcceptsClient: true },
  });
  expect(created.status).toBe(201);
  expect((await call("PATCH", `${MC}/${name}/status`, { status }, merge)).status).toBe(200);
}

/**
 * The names of the clusters the PlacementDecisions of Placement `namespace/placement` list
 * (by OCM's `cluster.open-cluster-management.io/placement` label), sorted; expects 200.
 */
export async function decided(namespace: string, placement: string): Promise<string[]> {
  const r = await call("GET", `${DECISIONS(namespace)}?labelSelector=${encodeURIComponent(`cluster.open-cluster-management.io/placement=${placement}`)}`);
  expect(r.status).toBe(200);
  return r.body.items.flatMap((d: { status: { decisions: { clusterName: string }[] } }) => d.status.decisions.map((x) => x.clusterName)).sort();
}

/**
 * Binds ManagedClusterSet `fleet` to namespace `ns` (a ManagedClusterSetBinding named `fleet`; one
 * that exists already is fine) and creates Placement `ns/name` selecting the clusters with labels
 * `matchLabels` (OCM's `requiredClusterSelector`); expects the Placement's create to answer 201.
 */
export async function placeByLabels(ns: string, name: string, matchLabels: Record<string, string>): Promise<void> {
  await call("POST", BINDINGS(ns), {
    apiVersion: "cluster.open-cluster-management.io/v1beta2",
    kind: "ManagedClusterSetBinding",
    metadata: { name: "fleet" },
    spec: { clusterSet: "fleet" },
  });
  const p = await call("POST", PLACEMENTS(ns), {
    apiVersion: "cluster.open-cluster-management.io/v1beta1",
    kind: "Placement",
    metadata: { name },
    spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels } } }] },
  });
  expect(p.status).toBe(201);
}

/**
 * Reports ManifestWork `cluster/name` Applied and Available (status True, reason `Test`) at its
 * current generation, as its agent would (a merge patch of its status); expects 200.
 */
export async function reportApplied(cluster: string, name: string): Promise<void> {
  const path = `${WORKS(cluster)}/${name}`;
  const w = (await call("GET", path)).body;
  const gen = w.metadata.generation;
  const at = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  const cond = (type: string) => ({ type, status: "True", observedGeneration: gen, reason: "Test", message: "", lastTransitionTime: at });
  const r = await call("PATCH", `${path}/status`, { status: { conditions: [cond("Applied"), cond("Available")] } }, { contentType: MERGE_PATCH });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

/**
 * The ManifestWorks a KubeFleet placement made, in every cluster namespace, by cluster: those
 * labelled `kubernetes-fleet.io/parent-CRP=<tracking>` (the placement's tracking name); expects 200.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function fleetWorksOf(tracking: string): Promise<Record<string, any>> {
  const r = await call(
    "GET",
    `/apis/work.open-cluster-management.io/v1/manifestworks?labelSelector=${encodeURIComponent(`kubernetes-fleet.io/parent-CRP=${tracking}`)}`,
  );
  expect(r.status).toBe(200);
  return Object.fromEntries(r.body.items.map((w: { metadata: { namespace: string } }) => [w.metadata.namespace, w]));
}

/** The condition of `type` in an object's `status.conditions`, if any. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function condition(obj: any, type: string) {
  return (obj?.status?.conditions ?? []).find((c: { type: string }) => c.type === type);
}

/**
 * Everything the hub has stored in D1 (objects, cluster identities, the newest object's
 * resourceVersion, webhook deliveries), to prove a refused request changed nothing. Events are
 * left out: a refusal may be recorded as one (src/events/record.ts).
 */
export async function snapshot(): Promise<string> {
  const rows = await env.DB.batch([
    env.DB.prepare("SELECT resource, namespace, name, resource_version, body FROM objects WHERE resource <> '/events' ORDER BY resource, namespace, name"),
    env.DB.prepare("SELECT name, cluster_id FROM cluster_identities ORDER BY name"),
    env.DB.prepare("SELECT MAX(resource_version) AS value FROM objects WHERE resource <> '/events'"),
    env.DB.prepare("SELECT receiver_uid, delivery_id FROM webhook_deliveries ORDER BY receiver_uid, delivery_id"),
  ]);
  return JSON.stringify(rows.map((r) => r.results));
}

/**
 * Waits until the scheduler has run every trigger that agents' writes queued (a heartbeat's
 * status, a lease expiry: they do not wait for scheduling, src/store/d1/write.ts `WriterMode`),
 * running its alarm rather than waiting for it to fire: those it stored, and those whose outbox
 * rows it took over (`enqueueOwed`: the rows, not yet due, are gone once their run finished).
 * @throws Error when triggers are still queued after 10 000 milliseconds.
 */
export async function scheduled(): Promise<void> {
  const stub = env.SCHEDULER.getByName("scheduler");
  await waitFor(
    "the scheduler's queued triggers to run",
    async () => {
      const left = await runInDurableObject(stub, (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM pending_triggers").one().n);
      const owed = (await env.DB.prepare("SELECT COUNT(*) AS n FROM outbox WHERE due_at > ?").bind(Date.now()).first<{ n: number }>())!.n;
      if (left === 0 && owed === 0) return true;
      if (left === 0) return false;
      await runDurableObjectAlarm(stub);
      return false;
    },
    10_000,
    20,
  );
}

/**
 * A D1 binding whose queries never answer: what a request's work sees of D1 once workerd
 * cancelled the request (its I/O is dropped, and the work's promises never settle).
 */
export function silentD1(): D1Database {
  const never = () => new Promise<never>(() => {});
  const statement: D1PreparedStatement = new Proxy({} as D1PreparedStatement, { get: (_, p) => (p === "bind" ? () => statement : never) });
  return new Proxy(env.DB, { get: (target, p) => (p === "prepare" ? () => statement : p === "batch" || p === "exec" ? never : Reflect.get(target, p)) });
}

/**
 * Runs `fn` with the hub's clock (src/clock.ts) `aheadMs` milliseconds ahead of the real time,
 * then puts the clock back: how a test lets a lease expire or a deadline pass without waiting.
 * @returns what `fn` returns
 */
export async function withClockAhead<T>(aheadMs: number, fn: () => Promise<T>): Promise<T> {
  const real = clock.now;
  clock.now = () => real() + aheadMs;
  try {
    return await fn();
  } finally {
    clock.now = real;
  }
}

/** The core v1 Namespaces collection. */
export const NAMESPACES = "/api/v1/namespaces";

/**
 * Creates namespaces (as a user does before creating objects in them: NamespaceLifecycle refuses a
 * create in one that does not exist); one that exists already is fine.
 * @throws Error when the hub refuses a create for another reason
 */
export async function createNamespaces(...names: string[]): Promise<void> {
  for (const name of names) {
    const r = await call("POST", NAMESPACES, { apiVersion: "v1", kind: "Namespace", metadata: { name } });
    if (r.status !== 201 && !(r.status === 409 && r.body?.reason === "AlreadyExists"))
      throw new Error(`creating namespace ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  }
}

/**
 * The headers of the agent channel's WebSocket upgrade (docs/agent-protocol.md "Channel"): the
 * channel's subprotocol (or `protocol`) and, when given, the agent's bearer `token`.
 */
export function channelHeaders(token: string | null, protocol = CHANNEL_SUBPROTOCOL): Record<string, string> {
  return {
    upgrade: "websocket",
    connection: "Upgrade",
    "sec-websocket-version": "13",
    "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
    "sec-websocket-protocol": protocol,
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  };
}

/**
 * Sends cluster `name`'s channel upgrade through the Worker as the agent does, with `token`
 * (the agent's signed token) and `extra` headers; `cf` is the request's Cloudflare properties
 * (e.g. `{ colo: "AMS" }`). Resolves the Worker's answer (101 with `webSocket` when accepted).
 */
export function dialChannel(name: string, token: string | null, extra: Record<string, string> = {}, cf?: Record<string, unknown>): Promise<Response> {
  return exports.default.fetch(`https://hub.test/agent/v1/clusters/${name}/connect`, {
    headers: { ...channelHeaders(token), ...extra },
    ...(cf ? { cf } : {}),
  });
}

/** The KubeFleet placement label on what a ClusterResourcePlacement made (its bindings, works). */
const FLEET_TRACKING = "kubernetes-fleet.io/parent-CRP";

/** Runs ClusterResourcePlacement `name`'s reconcile in its object (`placement:/<name>`) and waits for it. */
/**
 * Runs `fn` while every KubeFleet placement's object refuses its runs and notifications (its
 * `reconcile` and `notifyPlacement` throw for the `placement:` targets), as when workerd is killed
 * between a commit and the placement's run; restores them after. Returns how many calls were refused.
 */
export async function withPlacementObjectsGone(fn: () => Promise<unknown>): Promise<number> {
  const proto = ReplicaSetObject.prototype as unknown as Record<
    "reconcile" | "notifyPlacement",
    (this: unknown, ns: string, ...rest: unknown[]) => Promise<void>
  >;
  const real = { reconcile: proto.reconcile, notifyPlacement: proto.notifyPlacement };
  let refused = 0;
  for (const m of ["reconcile", "notifyPlacement"] as const)
    proto[m] = function (this: unknown, ns: string, ...rest: unknown[]) {
      if (ns === "placement:") {
        refused++;
        throw new Error("simulated crash: the placement's object is gone");
      }
      return real[m].call(this, ns, ...rest);
    };
  try {
    await fn();
  } finally {
    Object.assign(proto, real);
  }
  return refused;
}

export async function fleetPlacementRun(name: string): Promise<void> {
  await env.REPLICASETS.getByName(`placement:/${name}`).reconcile("placement:", name);
}

/**
 * Creates namespace `ns` with a ConfigMap `cfg`, and ClusterResourcePlacement `name` selecting it
 * with `policy` (KubeFleet's v1); runs the placement once. Expects 201s.
 */
export async function createFleetPlacement(name: string, ns: string, policy: Record<string, unknown>): Promise<void> {
  await createNamespaces(ns);
  expect(
    (await call("POST", `/api/v1/namespaces/${ns}/configmaps`, { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" }, data: { v: "1" } })).status,
  ).toBe(201);
  const r = await call("POST", "/apis/placement.kubernetes-fleet.io/v1/clusterresourceplacements", {
    apiVersion: "placement.kubernetes-fleet.io/v1",
    kind: "ClusterResourcePlacement",
    metadata: { name },
    spec: { resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: ns }], policy },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  await fleetPlacementRun(name);
}

/** The clusters (namespaces) holding a live work of placement `tracking`, sorted; expects 200. */
export async function fleetWorkClusters(tracking: string): Promise<string[]> {
  return Object.values(await fleetWorksOf(tracking))
    .filter((w) => !w.metadata.deletionTimestamp)
    .map((w) => w.metadata.namespace as string)
    .sort();
}

/** The ClusterResourceBindings of placement `tracking`; expects 200. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function fleetBindingsOf(tracking: string): Promise<Record<string, any>[]> {
  const r = await call(
    "GET",
    `/apis/placement.kubernetes-fleet.io/v1beta1/clusterresourcebindings?labelSelector=${encodeURIComponent(`${FLEET_TRACKING}=${tracking}`)}`,
  );
  expect(r.status).toBe(200);
  return r.body.items;
}

/** Reports every live work of placement `tracking` Applied and Available ({@link reportApplied}), as agents would, and runs the placement. */
export async function reportFleetApplied(tracking: string): Promise<void> {
  for (const c of await fleetWorkClusters(tracking)) await reportApplied(c, `${tracking}-work`);
  await fleetPlacementRun(tracking);
}

/**
 * The hub's `env` with a D1 binding that records its calls (the calls go through to the real
 * local D1): a batch is one call, recorded as `batch of N`; so is each statement run on its own
 * (`all`, `run`, `first`, `raw`), recorded as its SQL. For tests that count a path's D1 calls.
 */
export function countingD1(): { env: Env; calls: string[] } {
  const calls: string[] = [];
  const inner = (env as unknown as Env).DB;
  const targets = new WeakMap<object, D1PreparedStatement>();
  const wrap = (stmt: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const proxy = new Proxy(stmt, {
      get(target, key) {
        if (key === "bind") return (...args: unknown[]) => wrap(target.bind(...args), sql);
        if (key === "all" || key === "run" || key === "first" || key === "raw")
          return (...args: unknown[]) => {
            calls.push(sql);
            return (target[key] as (...a: unknown[]) => unknown)(...args);
          };
        const v = Reflect.get(target, key, target) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    targets.set(proxy, stmt);
    return proxy;
  };
  const DB = new Proxy(inner, {
    get(target, key) {
      if (key === "prepare") return (sql: string) => wrap(target.prepare(sql), sql);
      if (key === "batch")
        return (statements: D1PreparedStatement[]) => {
          calls.push(`batch of ${statements.length}`);
          return target.batch(statements.map((s) => targets.get(s) ?? s));
        };
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { env: { ...(env as unknown as Env), DB }, calls };
}
