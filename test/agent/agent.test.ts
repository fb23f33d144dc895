/**
 * Tests of the member-cluster agent (agent/src). The Kubernetes side always goes over HTTP to
 * the simulated cluster (agent/sim) over the agent's own transport (kube.ts). The hub side is a tiny
 * local HTTP stub of docs/agent-protocol.md, used only for backoff / log-once behaviour and
 * 401/403/409 handling; the real hub is exercised by the end-to-end tests.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { calculateJwkThumbprint, decodeProtectedHeader, importJWK, jwtVerify, type JWK } from "jose";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { AgentFatalError, rotateKey, startAgent, type AgentHandle } from "../../agent/src/agent.ts";
import { Backoff, heartbeatDelayMs, ReconnectBackoff, RECONNECT_STABLE_MS } from "../../agent/src/backoff.ts";
import { runCli } from "../../agent/src/cli.ts";
import { CREDENTIALS_SECRET_NAME, generateAgentKeyPair, loadCredentials, signAgentToken, storeCredentials } from "../../agent/src/credentials.ts";
import { hubAbsent, type HubResult, type WorksResponse } from "../../agent/src/hub-client.ts";
import { PollTransport } from "../../agent/src/transport/poll.ts";
import type {
  ClusterClaim,
  ClusterInfo,
  DeliveredWork,
  HeartbeatAnswer,
  HeartbeatRequest,
  WorkStatusAnswer,
  WorksAnswer,
} from "../../src/agent-api/protocol.ts";
import { getClusterIdentity } from "../../agent/src/identity.ts";
import { rawGet, type KubeConfig } from "../../agent/src/kube.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { ConditionLog, createLogger, type Logger } from "../../agent/src/log.ts";
import { formatQuantity, parseQuantityExact as parseQuantity, sumQuantities, sumResourceLists } from "../../src/k8s/quantity.ts";
import {
  HealthTracker,
  buildClusterClaims,
  CLUSTER_CLAIM_PATH,
  inferPlatform,
  inferProduct,
  listClusterClaims,
  collectClusterStatus,
  collectNodeResources,
  parseClaimFlag,
  probeKubeApiServer,
} from "../../agent/src/status.ts";

// ---------------------------------------------------------------------------------------------
// helpers

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function sim(opts: Parameters<typeof startSimulatedCluster>[0] = {}): Promise<{ cluster: SimulatedCluster; kc: KubeConfig }> {
  const cluster = await startSimulatedCluster(opts);
  cleanups.push(() => cluster.close());
  return { cluster, kc: kubeConfigFromYaml(cluster.kubeconfigYaml) };
}

function memoryLogger(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  return { log: createLogger({ write: (l) => lines.push(l) }), lines };
}

const count = (lines: string[], re: RegExp): number => lines.filter((l) => re.test(l)).length;

async function until(cond: () => boolean, timeoutMs = 10_000, what = "condition"): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const FAST = { acceptancePollMs: 20, backoffBaseMs: 10, backoffCapMs: 40, healthCheckPeriodMs: 50, healthRecheckMs: 20, requestTimeoutMs: 2_000 };

interface StubRequest {
  method: string;
  path: string;
  body: Record<string, unknown> | undefined;
  kid?: string;
}

type StubAnswer = { status: number; json?: unknown } | "destroy";

/** The works side of {@link hubStub}: what `GET .../works` serves and what the agent sent back. */
interface StubWorks {
  /** The works ETag; change it (with `works`) through `setWorks`. */
  etag: string;
  works: unknown[];
  leaving: boolean;
  /** Bodies of `PUT .../works/{work}/status`, by work name, in arrival order. */
  statuses: Map<string, Array<{ uid: string; status: Record<string, unknown> }>>;
  /** Whether `POST .../left` was called. */
  left: boolean;
}

/**
 * A minimal hub speaking the agent protocol (its answers typed by src/agent-api/protocol.ts):
 * registration stores the public key, agent JWTs are verified with jose against it (401
 * otherwise), works are served with ETag (304 when `If-None-Match` matches; no long-poll), and
 * `answer` may override any reply.
 */
async function hubStub(answer: (req: StubRequest, n: number) => StubAnswer | undefined = () => undefined) {
  const requests: StubRequest[] = [];
  const keys = new Map<string, JWK>();
  const state = { accepted: false, lease: 1 };
  const works: StubWorks = { etag: "0", works: [], leaving: false, statuses: new Map(), left: false };
  const setWorks = (items: unknown[], leaving = works.leaving): void => {
    works.works = items;
    works.leaving = leaving;
    works.etag = String(Number(works.etag) + 1);
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const body = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
        const r: StubRequest = { method: req.method ?? "", path: req.url ?? "", body };
        const auth = (req.headers.authorization ?? "").replace(/^Bearer /, "");
        const send = (status: number, json: unknown) => {
          res.writeHead(status, { "content-type": "application/json" });
          res.end(JSON.stringify(json));
        };
        const failure = (code: number, reason: string, message: string) =>
          send(code, { kind: "Status", apiVersion: "v1", status: "Failure", message, reason, code });
        if (r.path !== "/agent/v1/register") {
          try {
            r.kid = decodeProtectedHeader(auth).kid;
            const jwk = r.kid ? keys.get(r.kid) : undefined;
            if (!jwk) throw new Error("unknown key");
            await jwtVerify(auth, await importJWK(jwk, "ES256"), { audience: "flotilla", maxTokenAge: 60 });
          } catch {
            requests.push(r);
            const o = answer(r, requests.length);
            if (o === "destroy") return void req.socket.destroy();
            if (o) return send(o.status, o.json);
            return failure(401, "Unauthorized", "invalid agent credential");
          }
        }
        requests.push(r);
        const o = answer(r, requests.length);
        if (o === "destroy") return void req.socket.destroy();
        if (o) return send(o.status, o.json);
        if (r.path === "/agent/v1/register") {
          const pk = body?.publicKey as JWK;
          keys.set(await calculateJwkThumbprint(pk, "sha256"), pk);
          return send(201, {
            clusterName: String(body?.clusterName),
            hubAcceptsClient: state.accepted,
            denied: false,
            joined: false,
            leaseDurationSeconds: state.lease,
            keyPending: false,
          } satisfies ClusterInfo);
        }
        const url = new URL(r.path, "http://stub");
        if (r.method === "GET" && url.pathname.endsWith("/works")) {
          if (!state.accepted) return failure(403, "Forbidden", "cluster c1 is not accepted");
          const tag = `"${works.etag}"`;
          if (req.headers["if-none-match"] === tag) {
            res.writeHead(304, { etag: tag });
            return void res.end();
          }
          res.setHeader("etag", tag);
          return send(200, { etag: works.etag, leaving: works.leaving, works: works.works as DeliveredWork[] } satisfies WorksAnswer);
        }
        if (r.method === "PUT" && /\/works\/[^/]+\/status$/.test(url.pathname)) {
          const name = decodeURIComponent(url.pathname.split("/").at(-2) ?? "");
          const list = works.statuses.get(name) ?? [];
          list.push(body as { uid: string; status: Record<string, unknown> });
          works.statuses.set(name, list);
          return send(200, { resourceVersion: String(list.length) } satisfies WorkStatusAnswer);
        }
        if (r.method === "POST" && url.pathname.endsWith("/left")) {
          if (!works.leaving) return failure(409, "Conflict", "cluster c1 is not leaving");
          works.left = true;
          return send(200, {});
        }
        if (r.method === "GET") {
          return send(200, {
            clusterName: "c1",
            hubAcceptsClient: state.accepted,
            denied: false,
            joined: state.accepted,
            leaseDurationSeconds: state.lease,
            keyPending: false,
          } satisfies ClusterInfo);
        }
        if (r.path.endsWith("/heartbeat")) {
          if (!state.accepted) return failure(403, "Forbidden", "cluster c1 is not accepted");
          return send(200, { leaseDurationSeconds: state.lease, worksEtag: works.etag, leaving: works.leaving } satisfies HeartbeatAnswer);
        }
        return failure(404, "NotFound", "no such endpoint");
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests, state, keys, works, setWorks };
}

/**
 * Starts an in-process agent; against the stub hub (HTTP only, no channel) it runs the poll
 * transport unless told otherwise: these tests check the HTTP calls themselves. The ws transport
 * is tested against a real hub (test/e2e/ws-transport.test.ts).
 */
async function agent(opts: Parameters<typeof startAgent>[0]): Promise<AgentHandle> {
  const a = await startAgent({ transport: "poll", ...opts });
  cleanups.push(() => a.stop());
  return a;
}

// ---------------------------------------------------------------------------------------------
// pure parts

describe("quantities", () => {
  it.each([
    [["3800m", "4"], "7800m"],
    [["16Gi", "15Gi"], "31Gi"],
    [["4", "4", "4"], "12"],
    [["110", "110"], "220"],
    [["500m", "500m"], "1"],
    [["1Gi", "512Mi"], "1536Mi"],
    [["1.5Gi"], "1536Mi"],
    [["1000", "3000"], "4k"],
    [["1e3", "2e3"], "3e3"],
    [["0", "16Gi"], "16Gi"],
    [["100Mi", "1G"], "1104857600"],
    [["1k", "1Ki"], "2024"],
    [[], "0"],
  ])("sum %j = %s", (values, expected) => {
    expect(sumQuantities(values)).toBe(expected);
  });

  it("parses exactly and rejects garbage", () => {
    expect(parseQuantity("3800m").nanos).toBe(3_800_000_000n);
    expect(parseQuantity("1Ki")).toEqual({ nanos: 1024n * 1_000_000_000n, format: "BinarySI" });
    expect(parseQuantity("1n").nanos).toBe(1n);
    expect(parseQuantity("0.1n").nanos).toBe(1n); // sub-nano rounds up, as Kubernetes
    expect(formatQuantity(512n * 1_000_000_000n, "BinarySI")).toBe("512"); // < 1024 falls back to DecimalSI
    expect(() => parseQuantity("4 cores")).toThrow(/quantities must match/);
    expect(() => parseQuantity("")).toThrow(/quantities must match/);
  });

  it("sums resource lists per resource, skipping bad values", () => {
    expect(sumResourceLists([{ cpu: "3800m", memory: "16Gi" }, undefined, { cpu: "4", memory: "15Gi", gpu: "bad" }])).toEqual({
      cpu: "7800m",
      memory: "31Gi",
    });
  });
});

describe("backoff and lease jitter", () => {
  it("full jitter stays within a doubling ceiling capped at the cap", () => {
    const b = new Backoff(1_000, 60_000, () => 0.999999);
    const delays = Array.from({ length: 9 }, () => b.next());
    expect(delays.map((d) => Math.round(d / 1000))).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60]);
    b.reset();
    expect(b.next()).toBeLessThan(1_000);
    expect(new Backoff(1_000, 60_000, () => 0).next()).toBe(0);
    expect(new Backoff(1_000, 60_000, () => 0).next(5_000)).toBe(5_000); // Retry-After floor
  });

  it("renews every leaseDurationSeconds with up to 25 % jitter, 0 meaning 60", () => {
    expect(heartbeatDelayMs(60, () => 0)).toBe(60_000);
    expect(heartbeatDelayMs(60, () => 0.999999)).toBeCloseTo(75_000, -1);
    expect(heartbeatDelayMs(0, () => 0)).toBe(60_000);
    expect(heartbeatDelayMs(10, () => 0.5)).toBe(11_250);
  });

  it("reconnects of a fleet dropped at once spread over the first window; a flapping hub keeps the ceilings growing", () => {
    // A seeded PRNG (mulberry32): the same 10,000 draws each run.
    let seed = 28;
    const random = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const agents = Array.from({ length: 10_000 }, () => new ReconnectBackoff(1_000, 60_000, random));
    for (const r of agents) r.connected(0);
    // A deploy drops every connection at t = 60 s (each had been up a minute: the sequence starts over).
    const first = agents.map((r) => r.lost(60_000));
    expect(Math.max(...first)).toBeLessThan(1_000);
    const perTenth = new Array<number>(10).fill(0);
    for (const d of first) perTenth[Math.floor(d / 100)]!++;
    // Uniform over the first second: each 100 ms holds about 1,000 of the 10,000 dials.
    expect(Math.min(...perTenth)).toBeGreaterThan(850);
    expect(Math.max(...perTenth)).toBeLessThan(1_150);
    // A hub that takes connections and drops them at once: the ceiling doubles each time.
    const r = new ReconnectBackoff(1_000, 60_000, () => 0.999999);
    const ceilings: number[] = [];
    for (let i = 0; i < 8; i++) {
      r.connected(i * 1_000);
      ceilings.push(Math.round(r.lost(i * 1_000 + 500) / 1_000));
    }
    expect(ceilings).toEqual([1, 2, 4, 8, 16, 32, 60, 60]);
    // A connection that lasted RECONNECT_STABLE_MS starts over; a Retry-After is a floor.
    r.connected(100_000);
    expect(r.lost(100_000 + RECONNECT_STABLE_MS)).toBeLessThan(1_000);
    expect(r.failures).toBe(1);
    expect(r.lost(200_000, 5_000)).toBe(5_000);
  });

  it("ConditionLog logs a condition once and its end once", () => {
    const { log, lines } = memoryLogger();
    const c = new ConditionLog(log, "back");
    c.clear();
    c.set("down", "down!");
    c.set("down", "down!");
    c.set("down", "down!");
    c.clear();
    c.clear();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARN down!/);
    expect(lines[1]).toMatch(/INFO back\n$/);
  });

  it("json log lines carry time, level, msg and fields", () => {
    const lines: string[] = [];
    createLogger({ format: "json", write: (l) => lines.push(l) }).info("hello", { cluster: "c1", n: 2 });
    const parsed = JSON.parse(lines[0] ?? "") as Record<string, unknown>;
    expect(parsed).toMatchObject({ level: "info", msg: "hello", cluster: "c1", n: 2 });
    expect(new Date(String(parsed.time)).toISOString()).toBe(parsed.time);
  });
});

describe("claims", () => {
  it("keeps reserved claims, sorts custom ones by name and caps them at 20", () => {
    const props: ClusterClaim[] = Array.from({ length: 25 }, (_, i) => ({ name: `c${String(24 - i).padStart(2, "0")}.example.com`, value: "v" }));
    props.push({ name: "kubeversion.open-cluster-management.io", value: "v1.31.2" }, { name: "id.k8s.io", value: "x" });
    const claims = buildClusterClaims(props, [{ name: "a.example.com", value: "flag" }]);
    expect(claims.slice(0, 2).map((c) => c.name)).toEqual(["id.k8s.io", "kubeversion.open-cluster-management.io"]);
    const custom = claims.slice(2);
    expect(custom).toHaveLength(20);
    expect(custom[0]).toEqual({ name: "a.example.com", value: "flag" });
    expect(custom.map((c) => c.name)).toEqual([...custom.map((c) => c.name)].sort());
    expect(custom.at(-1)?.name).toBe("c18.example.com");
  });

  it("a --claim overrides a property of the same name; invalid claims are dropped", () => {
    const claims = buildClusterClaims(
      [
        { name: "region.example.com", value: "prop" },
        { name: "Bad_Name", value: "x" },
        { name: "big.example.com", value: "x".repeat(1025) },
      ],
      [{ name: "region.example.com", value: "flag" }],
    );
    expect(claims).toEqual([{ name: "region.example.com", value: "flag" }]);
  });

  it("parses --claim name=value, keeping '=' in the value", () => {
    expect(parseClaimFlag("k.example.com=a=b")).toEqual({ name: "k.example.com", value: "a=b" });
    expect(() => parseClaimFlag("novalue")).toThrow(/name=value/);
    expect(() => parseClaimFlag("x.example.com=")).toThrow(/1-1024/);
  });
});

describe("health probe and failure threshold", () => {
  const fake = (answers: Record<string, number>) => {
    const calls: string[] = [];
    return {
      calls,
      get: async (p: string) => {
        calls.push(p);
        return { status: answers[p] ?? 599, body: "" };
      },
    };
  };

  it("falls back from /livez to /healthz on 404 and 403 only", async () => {
    for (const code of [404, 403]) {
      const f = fake({ "/livez": code, "/healthz": 200 });
      expect((await probeKubeApiServer(f.get)).ok).toBe(true);
      expect(f.calls).toEqual(["/livez", "/healthz"]);
    }
    const bad = fake({ "/livez": 404, "/healthz": 404 });
    expect(await probeKubeApiServer(bad.get)).toMatchObject({ ok: false, message: expect.stringMatching(/\/healthz returned 404/) });
    const down = fake({ "/livez": 500, "/healthz": 200 });
    expect((await probeKubeApiServer(down.get)).ok).toBe(false);
    expect(down.calls).toEqual(["/livez"]);
    const err = await probeKubeApiServer(async () => {
      throw new Error("ECONNREFUSED");
    });
    expect(err).toMatchObject({ ok: false, message: expect.stringMatching(/ECONNREFUSED/) });
  });

  it("reports a failure only once it has persisted for the threshold", () => {
    const t = new HealthTracker(20_000);
    const down = { ok: false, message: "down" };
    expect(t.observe({ ok: true, message: "up" }, 0)).toMatchObject({ healthy: true, transient: false });
    expect(t.observe(down, 1_000)).toMatchObject({ healthy: true, transient: true });
    expect(t.observe(down, 20_999)).toMatchObject({ healthy: true, transient: true });
    expect(t.observe(down, 21_000)).toMatchObject({ healthy: false, message: "down", transient: false });
    expect(t.observe({ ok: true, message: "up" }, 22_000)).toMatchObject({ healthy: true });
    // A new failure starts a new clock.
    expect(t.observe(down, 23_000)).toMatchObject({ healthy: true, transient: true });
    expect(new HealthTracker(0).observe(down, 0).healthy).toBe(false);
  });

  it("probes the simulated kube-apiserver over HTTP and applies the threshold", async () => {
    const { cluster, kc } = await sim();
    const probe = () => probeKubeApiServer((p) => rawGet(kc, p));
    const t = new HealthTracker(300);
    expect(t.observe(await probe(), Date.now()).healthy).toBe(true);
    cluster.setHealthy(false);
    const failed = await probe();
    expect(failed).toMatchObject({ ok: false, message: expect.stringMatching(/\/livez returned 500/) });
    expect(t.observe(failed, Date.now())).toMatchObject({ healthy: true, transient: true });
    await new Promise((r) => setTimeout(r, 350));
    expect(t.observe(await probe(), Date.now())).toMatchObject({ healthy: false, transient: false });
    cluster.setHealthy(true);
    expect(t.observe(await probe(), Date.now()).healthy).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// against the simulated cluster

describe("identity", () => {
  it("falls back to the kube-system UID", async () => {
    const { kc } = await sim();
    const ns = (await kc.json("GET", "/api/v1/namespaces/kube-system")) as { metadata?: { uid?: string } };
    expect(ns.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(await getClusterIdentity(kc)).toEqual({ id: ns.metadata?.uid, source: "kube-system-uid" });
  });

  it("prefers the cluster.clusterset.k8s.io ClusterProperty", async () => {
    const { kc } = await sim({ clusterProperties: { "cluster.clusterset.k8s.io": "edge-eu-1" } });
    const ns = (await kc.json("GET", "/api/v1/namespaces/kube-system")) as { metadata?: { uid?: string } };
    const id = await getClusterIdentity(kc);
    expect(id).toEqual({ id: "edge-eu-1", source: "cluster-property" });
    expect(id.id).not.toBe(ns.metadata?.uid);
  });
});

describe("status collection", () => {
  it("sums node capacity over all nodes and allocatable over schedulable ones", async () => {
    const { kc } = await sim({ nodes: 3, kubernetesVersion: "v1.30.7" });
    // Each simulated node: capacity cpu 4, memory 16Gi, pods 110, ephemeral-storage 100Gi;
    // allocatable 3800m, 15Gi, 110, 95Gi.
    const { nodes, ...sums } = await collectNodeResources(kc);
    expect(nodes).toHaveLength(3);
    expect(sums).toEqual({
      capacity: { cpu: "12", memory: "48Gi", pods: "330", "ephemeral-storage": "300Gi" },
      allocatable: { cpu: "11400m", memory: "45Gi", pods: "330", "ephemeral-storage": "285Gi" },
    });
    await kc.json("PATCH", "/api/v1/nodes/sim-node-2", { body: { spec: { unschedulable: true } }, contentType: "application/merge-patch+json" });
    const { status, errors } = await collectClusterStatus(kc);
    expect(errors).toEqual([]);
    expect(status.version).toEqual({ kubernetes: "v1.30.7" });
    expect(status.capacity).toEqual({ cpu: "12", memory: "48Gi", pods: "330", "ephemeral-storage": "300Gi" });
    expect(status.allocatable).toEqual({ cpu: "7600m", memory: "30Gi", pods: "220", "ephemeral-storage": "190Gi" });
  });

  it("reports every ClusterProperty plus --claim flags as claims, sorted, after OCM's reserved claims it generates", async () => {
    const { kc } = await sim({ clusterProperties: { "zone.example.com": "z1", "cluster.clusterset.k8s.io": "id-1" } });
    const { status } = await collectClusterStatus(kc, [{ name: "env.example.com", value: "prod" }], undefined, "id-1");
    expect(status.clusterClaims).toEqual([
      { name: "id.k8s.io", value: "id-1" },
      { name: "kubeversion.open-cluster-management.io", value: "v1.31.2" },
      { name: "platform.open-cluster-management.io", value: "Other" },
      { name: "product.open-cluster-management.io", value: "Other" },
      { name: "cluster.clusterset.k8s.io", value: "id-1" },
      { name: "env.example.com", value: "prod" },
      { name: "zone.example.com", value: "z1" },
    ]);
  });

  it("reports ClusterClaim objects as OCM does: spoke-only ones left out, a ClusterProperty of the same name wins, a claim object overrides a generated reserved claim", async () => {
    const { kc } = await sim({ clusterProperties: { "region.example.com": "from-property" } });
    const claim = (name: string, value: string, labels?: Record<string, string>) =>
      kc.json("POST", CLUSTER_CLAIM_PATH, {
        body: {
          apiVersion: "cluster.open-cluster-management.io/v1alpha1",
          kind: "ClusterClaim",
          metadata: { name, ...(labels ? { labels } : {}) },
          spec: { value },
        },
      });
    await claim("team.example.com", "payments");
    await claim("region.example.com", "from-claim");
    await claim("secret.example.com", "local", { "open-cluster-management.io/spoke-only": "" });
    await claim("product.open-cluster-management.io", "Custom");
    expect(await listClusterClaims(kc)).toEqual([
      { name: "product.open-cluster-management.io", value: "Custom" },
      { name: "region.example.com", value: "from-claim" },
      { name: "team.example.com", value: "payments" },
    ]);
    const { status, errors } = await collectClusterStatus(kc, [], undefined, "cid-1");
    expect(errors).toEqual([]);
    expect(status.clusterClaims).toEqual([
      { name: "id.k8s.io", value: "cid-1" },
      { name: "kubeversion.open-cluster-management.io", value: "v1.31.2" },
      { name: "platform.open-cluster-management.io", value: "Other" },
      { name: "product.open-cluster-management.io", value: "Custom" },
      { name: "region.example.com", value: "from-property" },
      { name: "team.example.com", value: "payments" },
    ]);
  });

  it("infers OCM's platform and product claims from the nodes and the server version", () => {
    const node = (providerID?: string, labels?: Record<string, string>) => ({ metadata: { labels }, spec: { providerID } });
    expect(inferPlatform([node("aws:///eu-west-1a/i-0abc")])).toBe("AWS");
    expect(inferPlatform([node("gce://proj/zone/vm")])).toBe("GCP");
    expect(inferPlatform([node("azure:///subscriptions/x")])).toBe("Azure");
    expect(inferPlatform([node("kind://docker/kind/kind-control-plane")])).toBe("Other");
    expect(inferPlatform([node()])).toBe("Other");
    expect(inferProduct("v1.30.4-eks-a737599", [])).toBe("EKS");
    expect(inferProduct("v1.30.5-gke.1014001", [])).toBe("GKE");
    expect(inferProduct("v1.31.2+k3s1", [])).toBe("K3s");
    expect(inferProduct("v1.31.2", [node(undefined, { "kubernetes.azure.com/cluster": "MC_x" })])).toBe("AKS");
    expect(inferProduct("v1.31.2", [node(undefined, { "node.openshift.io/os_id": "rhcos" })])).toBe("OpenShift");
    expect(inferProduct("v1.31.2", [node()])).toBe("Other");
  });
});

describe("credentials", () => {
  it("stores the Secret (creating its namespace) and a restarted cluster loads the same key", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotilla-agent-test-"));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const statePath = path.join(dir, "c1.json");
    const first = await startSimulatedCluster({ statePath });
    const kc1 = kubeConfigFromYaml(first.kubeconfigYaml);
    expect(await loadCredentials(kc1, "agent-ns")).toBeUndefined();
    const key = await generateAgentKeyPair();
    await storeCredentials(kc1, "agent-ns", { clusterName: "c1", clusterId: "id-1", hubUrl: "http://hub", key });
    const secret = (await kc1.json("GET", `/api/v1/namespaces/agent-ns/secrets/${CREDENTIALS_SECRET_NAME}`)) as { data?: Record<string, string> };
    expect(Object.keys(secret.data ?? {}).sort()).toEqual(["cluster-id", "cluster-name", "hub-url", "private-key", "public-key"]);
    const publicStored = JSON.parse(Buffer.from(secret.data?.["public-key"] ?? "", "base64").toString()) as JWK;
    expect(publicStored.d).toBeUndefined();
    await first.close();

    const second = await startSimulatedCluster({ statePath });
    cleanups.push(() => second.close());
    const loaded = await loadCredentials(kubeConfigFromYaml(second.kubeconfigYaml), "agent-ns");
    expect(loaded).toMatchObject({ clusterName: "c1", clusterId: "id-1", hubUrl: "http://hub" });
    expect(loaded?.key.kid).toBe(key.kid);
    expect(loaded?.key.privateJwk).toEqual(key.privateJwk);
    // A second store replaces the Secret in place.
    const other = await generateAgentKeyPair();
    await storeCredentials(kubeConfigFromYaml(second.kubeconfigYaml), "agent-ns", { clusterName: "c1", clusterId: "id-1", hubUrl: "http://hub", key: other });
    expect((await loadCredentials(kubeConfigFromYaml(second.kubeconfigYaml), "agent-ns"))?.key.kid).toBe(other.kid);
  });

  it("signs JWTs as the protocol says", async () => {
    const key = await generateAgentKeyPair();
    const t1 = await signAgentToken("c1", key);
    const t2 = await signAgentToken("c1", key);
    expect(decodeProtectedHeader(t1)).toEqual({ alg: "ES256", typ: "JWT", kid: await calculateJwkThumbprint(key.publicJwk, "sha256") });
    const { payload } = await jwtVerify(t1, await importJWK(key.publicJwk, "ES256"), { audience: "flotilla", issuer: "c1", subject: "c1" });
    expect(typeof payload.iat).toBe("number");
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBeLessThanOrEqual(60);
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBeGreaterThan(0);
    expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);
    const p2 = (await jwtVerify(t2, await importJWK(key.publicJwk, "ES256"), { audience: "flotilla" })).payload;
    expect(p2.jti).not.toBe(payload.jti);
    // Another key does not verify it.
    const other = await generateAgentKeyPair();
    await expect(jwtVerify(t1, await importJWK(other.publicJwk, "ES256"))).rejects.toThrow();
  });

  it("rotateKey signs with the old key and stores the new one only after the hub agrees", async () => {
    const { kc } = await sim();
    const old = await generateAgentKeyPair();
    await storeCredentials(kc, "flotilla-agent", { clusterName: "c1", clusterId: "id", hubUrl: "http://hub", key: old });
    const seen: Array<{ token: string; publicKey: JWK }> = [];
    let refuse = true;
    const hub = {
      rotateKey: async (_name: string, token: string, publicKey: JWK) => {
        seen.push({ token, publicKey });
        if (refuse) return { ok: false as const, error: { kind: "unauthorized" as const, status: 401, message: "nope" } };
        return { ok: true as const, status: 200, value: { kid: await calculateJwkThumbprint(publicKey, "sha256") } };
      },
    };
    const { log } = memoryLogger();
    await expect(rotateKey({ kubeConfig: kc, hub, logger: log })).rejects.toThrow(/refused key rotation \(401\): nope/);
    expect((await loadCredentials(kc, "flotilla-agent"))?.key.kid).toBe(old.kid);
    refuse = false;
    const r = await rotateKey({ kubeConfig: kc, hub, logger: log });
    expect(r.oldKid).toBe(old.kid);
    expect(r.newKid).not.toBe(old.kid);
    const last = seen.at(-1);
    await jwtVerify(last?.token ?? "", await importJWK(old.publicJwk, "ES256"), { audience: "flotilla", subject: "c1" });
    expect(last?.publicKey.d).toBeUndefined();
    expect((await loadCredentials(kc, "flotilla-agent"))?.key.kid).toBe(r.newKid);
    await expect(rotateKey({ kubeConfig: kc, hub, clusterName: "other" })).rejects.toThrow(/belongs to cluster c1/);
  });
});

// ---------------------------------------------------------------------------------------------
// the loop, against a stub hub (backoff, log-once, 401/403/409)

describe("agent loop", () => {
  const TOKEN = "abcdef.0123456789abcdef";

  it("backing off from an absent hub, probes GET /livez and retries at once when it answers, whatever its backoff", async () => {
    const { kc } = await sim();
    const mode = { down: false };
    const hub = await hubStub((r) => {
      if (mode.down) return "destroy";
      if (r.path === "/livez") return { status: 200, json: {} };
      return undefined;
    });
    hub.state.accepted = true;
    const { log, lines } = memoryLogger();
    // A backoff of a minute from the first failure: without the probe nothing would be retried for up to 60 s.
    const a = await agent({
      hubUrl: hub.url,
      clusterName: "c1",
      bootstrapToken: TOKEN,
      kubeConfig: kc,
      logger: log,
      timing: { ...FAST, backoffBaseMs: 60_000, backoffCapMs: 60_000, hubProbeMs: 100 },
    });
    await until(() => count(lines, /heartbeating every 1s/) > 0, 10_000, "first heartbeat answered");
    mode.down = true;
    const downFrom = hub.requests.length;
    await until(() => count(lines, /hub unreachable/) === 1, 10_000, "a failed heartbeat");
    const heartbeats = () => hub.requests.slice(downFrom).filter((r) => r.path.endsWith("/heartbeat")).length;
    const failedHeartbeats = heartbeats();
    await until(() => hub.requests.slice(downFrom).filter((r) => r.path === "/livez").length >= 3, 10_000, "probes of the absent hub");
    // The probes run under the backoff; the heartbeat itself is not retried meanwhile.
    expect(heartbeats()).toBe(failedHeartbeats);
    mode.down = false;
    await until(() => count(lines, /hub reachable again/) === 1, 10_000, "the heartbeat made again once a probe succeeded");
    expect(heartbeats()).toBeGreaterThan(failedHeartbeats);
    expect(a.state()).toBe("heartbeating");
  });

  it("probes only a hub that is absent: one that answers 5xx or 429 itself keeps its backoff", () => {
    expect(hubAbsent({ kind: "unreachable", message: "connect ECONNREFUSED" })).toBe(true);
    expect(hubAbsent({ kind: "unreachable", status: 502, message: "bad gateway" })).toBe(true);
    expect(hubAbsent({ kind: "unreachable", status: 503, reason: "ServiceUnavailable", message: "overloaded" })).toBe(false);
    expect(hubAbsent({ kind: "unreachable", status: 500, message: "boom" })).toBe(false);
    expect(hubAbsent({ kind: "unreachable", status: 429, reason: "TooManyRequests", message: "slow down" })).toBe(false);
    expect(hubAbsent({ kind: "unauthorized", status: 401, message: "no" })).toBe(false);
  });

  it("retries an unreachable hub with backoff and logs one line per state change", async () => {
    const { kc } = await sim();
    const mode = { down: false };
    // Registration: 3 dropped connections, then 3 × 503, then normal answers.
    const hub = await hubStub((r, n) => {
      if (mode.down) return n % 2 ? "destroy" : { status: 502, json: { message: "bad gateway" } };
      if (r.path === "/agent/v1/register" && n <= 3) return "destroy";
      if (n <= 6) return { status: 503, json: { kind: "Status", message: "overloaded", code: 503 } };
      return undefined;
    });
    hub.state.accepted = true;
    const { log, lines } = memoryLogger();
    const a = await agent({ hubUrl: hub.url, clusterName: "c1", bootstrapToken: TOKEN, kubeConfig: kc, logger: log, timing: FAST });
    // The agent logs after it has the hub's answer, which can come after the stub saw the request.
    await until(() => count(lines, /heartbeating every 1s/) > 0, 10_000, "first heartbeat answered");
    expect(a.state()).toBe("heartbeating");
    expect(hub.requests.filter((r) => r.path === "/agent/v1/register")).toHaveLength(7);
    expect(count(lines, /hub unreachable/)).toBe(1);
    expect(count(lines, /hub reachable again/)).toBe(1);
    expect(count(lines, /registered with the hub/)).toBe(1);
    expect(count(lines, /cluster accepted by the hub/)).toBe(1);
    expect(count(lines, /heartbeating every 1s/)).toBe(1);
    const hb = hub.requests.find((r) => r.path.endsWith("/heartbeat"))?.body as unknown as HeartbeatRequest;
    expect(hb).toMatchObject({ healthy: true, version: { kubernetes: "v1.31.2" }, capacity: { cpu: "12", memory: "48Gi", pods: "330" } });
    expect(hb.allocatable).toEqual({ cpu: "11400m", memory: "45Gi", pods: "330", "ephemeral-storage": "285Gi" });

    // The hub goes away mid-heartbeating: several failed attempts, still one line each way.
    mode.down = true;
    const failedFrom = hub.requests.length;
    // (Counted on heartbeats: a works fetch, when one is due, fails and backs off on its own meanwhile.)
    await until(() => hub.requests.slice(failedFrom).filter((r) => r.path.endsWith("/heartbeat")).length >= 3, 10_000, "failed heartbeats");
    expect(a.state()).toBe("heartbeating");
    mode.down = false;
    const recoveredFrom = hub.requests.length;
    await until(() => count(lines, /hub reachable again/) === 2, 10_000, "recovery");
    expect(hub.requests.length).toBeGreaterThan(recoveredFrom);
    expect(count(lines, /hub unreachable/)).toBe(2);
    expect(lines.filter((l) => /unreachable/.test(l)).every((l) => /WARN/.test(l))).toBe(true);
    await a.stop();
    expect(a.state()).toBe("stopped");
  });

  it("a 409 at registration is fatal, logs the hub's message and stores nothing", async () => {
    const { kc } = await sim();
    const hub = await hubStub((r) =>
      r.path === "/agent/v1/register"
        ? {
            status: 409,
            json: {
              kind: "Status",
              apiVersion: "v1",
              status: "Failure",
              code: 409,
              reason: "Conflict",
              message: 'cluster ID "x" is already registered as cluster "other"',
            },
          }
        : undefined,
    );
    const { log, lines } = memoryLogger();
    const a = await agent({ hubUrl: hub.url, clusterName: "c1", bootstrapToken: TOKEN, kubeConfig: kc, logger: log, timing: FAST });
    await expect(a.done).rejects.toBeInstanceOf(AgentFatalError);
    await expect(a.done).rejects.toThrow(/409 Conflict.*already registered as cluster "other"/);
    expect(a.state()).toBe("failed");
    expect(hub.requests).toHaveLength(1);
    expect(count(lines, /ERROR .*already registered as cluster/)).toBe(1);
    expect(await loadCredentials(kc, "flotilla-agent")).toBeUndefined();
  });

  it("a corrupt Secret is fatal rather than retried forever", async () => {
    const { kc } = await sim();
    const key = await generateAgentKeyPair();
    await storeCredentials(kc, "flotilla-agent", { clusterName: "c1", clusterId: "i", hubUrl: "http://h", key });
    await kc.json("PATCH", `/api/v1/namespaces/flotilla-agent/secrets/${CREDENTIALS_SECRET_NAME}`, {
      body: { data: { "private-key": Buffer.from("{not json").toString("base64") } },
      contentType: "application/merge-patch+json",
    });
    await expect(loadCredentials(kc, "flotilla-agent")).rejects.toThrow(/private-key is not a usable EC P-256 JWK/);
    const { log } = memoryLogger();
    const a = await agent({ hubUrl: "http://h", clusterName: "c1", kubeConfig: kc, logger: log, timing: FAST });
    await expect(a.done).rejects.toThrow(/credentials Secret.*private-key is not a usable/);
  });

  it("without a Secret and without a bootstrap token it stops with a clear message", async () => {
    const { kc } = await sim();
    const hub = await hubStub();
    const { log } = memoryLogger();
    const a = await agent({ hubUrl: hub.url, clusterName: "c1", kubeConfig: kc, logger: log, timing: FAST });
    await expect(a.done).rejects.toThrow(/no hub credentials in Secret flotilla-agent\/flotilla-hub-credentials and no bootstrap token/);
    expect(hub.requests).toHaveLength(0);
  });

  it("waits for acceptance, returns to waiting on a 403 heartbeat, and a restart reuses the Secret", async () => {
    const { kc } = await sim();
    const hub = await hubStub();
    const { log, lines } = memoryLogger();
    const a = await agent({ hubUrl: hub.url, clusterName: "c1", bootstrapToken: TOKEN, kubeConfig: kc, logger: log, timing: FAST });
    await until(() => a.state() === "waiting-for-acceptance" && hub.requests.filter((r) => r.method === "GET").length >= 3, 10_000, "polling");
    expect(count(lines, /waiting for the hub admin to accept/)).toBe(1);
    expect(hub.requests.some((r) => r.path.endsWith("/heartbeat"))).toBe(false);
    const registered = hub.requests[0];
    expect(registered?.body).toMatchObject({ clusterName: "c1", publicKey: { kty: "EC", crv: "P-256" } });
    expect((registered?.body?.publicKey as JWK).d).toBeUndefined();

    hub.state.accepted = true;
    await until(() => a.state() === "heartbeating" && hub.requests.some((r) => r.path.endsWith("/heartbeat")), 10_000, "heartbeat");
    expect(count(lines, /cluster accepted by the hub/)).toBe(1);

    // The admin denies the cluster: heartbeats get 403 → back to waiting, logged once.
    hub.state.accepted = false;
    await until(() => a.state() === "waiting-for-acceptance", 10_000, "back to waiting");
    const since = hub.requests.length;
    await until(() => hub.requests.length >= since + 4, 10_000, "polls");
    expect(count(lines, /no longer accepts this cluster \(403\)/)).toBe(1);
    expect(count(lines, /waiting for the hub admin to accept/)).toBe(1);
    expect(hub.requests.slice(since).every((r) => r.method === "GET")).toBe(true);
    hub.state.accepted = true;
    await until(() => count(lines, /cluster accepted by the hub/) === 2, 10_000, "re-accepted");
    await a.stop();

    // Restart: no bootstrap token needed, no second registration, same key.
    const kid = hub.requests.find((r) => r.kid)?.kid;
    const registrations = hub.requests.filter((r) => r.path === "/agent/v1/register").length;
    const b = await agent({ hubUrl: hub.url, clusterName: "c1", kubeConfig: kc, logger: log, timing: FAST });
    const from = hub.requests.length;
    await until(() => hub.requests.slice(from).some((r) => r.path.endsWith("/heartbeat")), 10_000, "heartbeat after restart");
    expect(hub.requests.filter((r) => r.path === "/agent/v1/register")).toHaveLength(registrations);
    expect(hub.requests.slice(from).every((r) => r.kid === kid)).toBe(true);
    await b.stop();
  });

  it("a 401 is logged once and retried; a key rotated by another process is picked up", async () => {
    const { kc } = await sim();
    const mode = { reject: false };
    const hub = await hubStub((r) =>
      mode.reject && r.path.endsWith("/heartbeat") ? { status: 401, json: { message: "cluster c1 is not registered" } } : undefined,
    );
    hub.state.accepted = true;
    const { log, lines } = memoryLogger();
    const a = await agent({ hubUrl: hub.url, clusterName: "c1", bootstrapToken: TOKEN, kubeConfig: kc, logger: log, timing: FAST });
    await until(() => hub.requests.some((r) => r.path.endsWith("/heartbeat")), 10_000, "heartbeat");
    mode.reject = true;
    const since = hub.requests.length;
    await until(() => hub.requests.length >= since + 5, 10_000, "rejected heartbeats");
    expect(a.state()).toBe("heartbeating");
    expect(count(lines, /rejected the agent's credentials \(401\): cluster c1 is not registered/)).toBe(1);
    mode.reject = false;
    await until(() => count(lines, /accepts the agent's credentials again/) === 1, 10_000, "recovery");

    // Rotation by another process: the hub forgets the old key (as after 5 minutes); the agent
    // meets a 401, reloads the Secret and continues with the new key.
    const oldKid = (await loadCredentials(kc, "flotilla-agent"))?.key.kid;
    const rotated = await rotateKey({
      kubeConfig: kc,
      logger: log,
      hub: {
        rotateKey: async (_n: string, _t: string, publicKey: JWK) => {
          const kid = await calculateJwkThumbprint(publicKey, "sha256");
          hub.keys.set(kid, publicKey);
          return { ok: true as const, status: 200, value: { kid } };
        },
      },
    });
    if (oldKid) hub.keys.delete(oldKid);
    const from = hub.requests.length;
    await until(() => hub.requests.slice(from).some((r) => r.kid === rotated.newKid && r.path.endsWith("/heartbeat")), 10_000, "new key");
    expect(count(lines, /newer key/)).toBe(1);
    await a.stop();
  });

  it("a hub that keeps refusing the credentials (its state lost) gets the cluster registered again with the bootstrap token, same key and ID", async () => {
    const { kc } = await sim();
    const hub = await hubStub();
    hub.state.accepted = true;
    const { log, lines } = memoryLogger();
    const timing = { ...FAST, refusedForMs: 150 };
    const a = await agent({ hubUrl: hub.url, clusterName: "c1", bootstrapToken: TOKEN, kubeConfig: kc, logger: log, timing });
    await until(() => a.state() === "heartbeating" && hub.requests.some((r) => r.path.endsWith("/heartbeat")), 10_000, "heartbeat");
    const first = hub.requests.find((r) => r.path === "/agent/v1/register")!;

    // The hub forgets everything: every call is its own 401 Status (reason Unauthorized).
    hub.keys.clear();
    hub.state.accepted = false;
    await until(() => hub.requests.filter((r) => r.path === "/agent/v1/register").length === 2, 10_000, "a second registration");
    const again = hub.requests.filter((r) => r.path === "/agent/v1/register")[1]!;
    expect(again.body?.clusterId).toBe(first.body?.clusterId);
    expect(again.body?.publicKey).toEqual(first.body?.publicKey);
    await until(() => a.state() === "waiting-for-acceptance", 10_000, "waiting for acceptance again");
    expect(count(lines, /refused this cluster's credentials since .*registering again with bootstrap token abcdef \(from --bootstrap-token\)/)).toBe(1);
    expect(count(lines, /registered again with the hub; waiting for the admin to accept the cluster \(flotilla accept c1\)/)).toBe(1);
    hub.state.accepted = true;
    const from = hub.requests.length;
    await until(() => a.state() === "heartbeating" && hub.requests.slice(from).some((r) => r.path.endsWith("/heartbeat")), 10_000, "heartbeating again");
    expect(hub.requests.filter((r) => r.path === "/agent/v1/register")).toHaveLength(2);
    await a.stop();
  });

  it("a 401 that is not the hub's Status never re-registers; without a bootstrap token the agent says what to do, then takes one from the bootstrap Secret", async () => {
    const { kc } = await sim();
    const mode = { proxy: false };
    const hub = await hubStub((r) =>
      mode.proxy && r.path !== "/agent/v1/register" ? { status: 401, json: "<html>401 Authorization Required</html>" } : undefined,
    );
    hub.state.accepted = true;
    const { log, lines } = memoryLogger();
    const timing = { ...FAST, refusedForMs: 50 };
    const a = await agent({ hubUrl: hub.url, clusterName: "c1", bootstrapToken: TOKEN, kubeConfig: kc, logger: log, timing });
    await until(() => a.state() === "heartbeating" && hub.requests.some((r) => r.path.endsWith("/heartbeat")), 10_000, "heartbeat");
    // A proxy in front of the hub answers 401 without a Kubernetes Status: retried, never a registration.
    mode.proxy = true;
    let since = hub.requests.length;
    await until(() => hub.requests.slice(since).filter((r) => r.path.endsWith("/heartbeat")).length >= 5, 10_000, "refused heartbeats");
    expect(count(lines, /rejected the agent's credentials \(401\)/)).toBe(1);
    expect(hub.requests.filter((r) => r.path === "/agent/v1/register")).toHaveLength(1);
    mode.proxy = false;
    await until(() => count(lines, /accepts the agent.s credentials again/) === 1, 10_000, "recovery");
    await a.stop();

    // Restarted without a token (its Secret holds its credentials), then the hub forgets it.
    const b = await agent({ hubUrl: hub.url, clusterName: "c1", kubeConfig: kc, logger: log, timing });
    since = hub.requests.length;
    await until(() => hub.requests.slice(since).some((r) => r.path.endsWith("/heartbeat")), 10_000, "heartbeat after restart");
    hub.keys.clear();
    await until(() => count(lines, /has no bootstrap token to register again with/) === 1, 10_000, "the instructions");
    const said = lines.find((l) => /has no bootstrap token/.test(l))!;
    expect(said).toMatch(/flotilla token create/);
    expect(said).toMatch(/Secret flotilla-agent\/flotilla-bootstrap \(key bootstrap-token/);
    expect(said).toMatch(/--bootstrap-token/);
    expect(hub.requests.filter((r) => r.path === "/agent/v1/register")).toHaveLength(1);
    // The admin puts a token in the bootstrap Secret: the agent's next try registers with it.
    await kc.json("POST", "/api/v1/namespaces/flotilla-agent/secrets", {
      body: {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "flotilla-bootstrap", namespace: "flotilla-agent" },
        stringData: { "bootstrap-token": "zyxwvu.fedcba9876543210" },
      },
    });
    await until(() => hub.requests.filter((r) => r.path === "/agent/v1/register").length === 2, 10_000, "registration with the Secret's token");
    expect(count(lines, /registering again with bootstrap token zyxwvu \(from Secret flotilla-agent\/flotilla-bootstrap\)/)).toBe(1);
    expect(lines.some((l) => l.includes("fedcba9876543210") || l.includes("0123456789abcdef"))).toBe(false);
    await until(() => b.state() === "heartbeating", 10_000, "heartbeating again");
    await b.stop();
  });

  it("poll transport: an idle agent sends only heartbeats; works are fetched when the heartbeat's ETag changed, never held", async () => {
    const { kc } = await sim();
    const hub = await hubStub();
    hub.state.accepted = true;
    const { log } = memoryLogger();
    const a = await agent({
      hubUrl: hub.url,
      clusterName: "c1",
      bootstrapToken: TOKEN,
      kubeConfig: kc,
      logger: log,
      timing: FAST,
      statusSyncIntervalSeconds: 0.05,
    });
    const beats = () => hub.requests.filter((r) => r.path.endsWith("/heartbeat")).length;
    const fetches = () => hub.requests.filter((r) => r.method === "GET" && r.path.includes("/works"));
    // The first heartbeat answer's ETag is new to the agent: one fetch of the whole list.
    await until(() => fetches().length === 1, 10_000, "the first works fetch");
    const idleFrom = hub.requests.length;
    const beatsAt = beats();
    await until(() => beats() >= beatsAt + 3, 10_000, "three idle heartbeats (lease 1 s)");
    expect(
      hub.requests
        .slice(idleFrom)
        .map((r) => `${r.method} ${r.path}`)
        .every((r) => r === "POST /agent/v1/clusters/c1/heartbeat"),
    ).toBe(true);

    // A change: the next heartbeat answer carries a new ETag, and the agent fetches once.
    hub.setWorks([]);
    await until(() => fetches().length === 2, 10_000, "the fetch after the ETag changed");
    const after = beats();
    await until(() => beats() >= after + 2, 10_000, "two more heartbeats");
    expect(fetches()).toHaveLength(2);
    expect(hub.requests.some((r) => r.path.includes("waitSeconds"))).toBe(false);
    await a.stop();
  });

  it("poll transport: a heartbeat answered during a fetch with a newer ETag fetches again; one with the same ETag does not", async () => {
    const calls: (string | undefined)[] = [];
    const answers: ((v: WorksAnswer | null) => void)[] = [];
    const hub = {
      getWorks: (_name: string, _token: string, etag: string | undefined) => {
        calls.push(etag);
        return new Promise<HubResult<WorksResponse>>((resolve) =>
          answers.push((v) => resolve({ ok: true, status: v ? 200 : 304, value: v ? { changed: true, ...v } : { changed: false, etag: etag ?? "" } })),
        );
      },
      putWorkStatus: () => Promise.reject(new Error("not used")),
      left: () => Promise.reject(new Error("not used")),
    };
    const abort = new AbortController();
    cleanups.push(() => abort.abort());
    const { log } = memoryLogger();
    const t = new PollTransport({
      clusterName: "c1",
      hub,
      sign: () => Promise.resolve("jwt"),
      logger: log,
      timing: { backoffBaseMs: 10, backoffCapMs: 40, random: () => 0.5 },
      signal: abort.signal,
    });
    const delivered: string[] = [];
    t.start({ works: (u) => delivered.push(u.etag), leaving: () => undefined });
    const beat = (worksEtag: string) => t.heartbeatAnswered({ leaseDurationSeconds: 1, worksEtag, leaving: false });

    beat("e1");
    await until(() => calls.length === 1, 2_000, "the first fetch");
    expect(calls[0]).toBeUndefined();
    beat("e2"); // the hub changed again while the first fetch is in flight
    answers[0]!({ etag: "e1", leaving: false, works: [] });
    await until(() => calls.length === 2, 2_000, "a second fetch for e2");
    expect(calls[1]).toBe("e1");
    answers[1]!({ etag: "e2", leaving: false, works: [] });
    await until(() => delivered.length === 2, 2_000, "both lists delivered");
    expect(delivered).toEqual(["e1", "e2"]);
    beat("e2");
    beat("e2");
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toHaveLength(2);
    // A newer ETag the hub then answers 304 for (it went back): one fetch, nothing delivered.
    beat("e3");
    await until(() => calls.length === 3, 2_000, "a fetch for e3");
    answers[2]!(null);
    await new Promise((r) => setTimeout(r, 50));
    expect(delivered).toEqual(["e1", "e2"]);
    expect(calls).toHaveLength(3);
  });

  it("a malformed hub answer is an error the agent reports and retries, not a crash", async () => {
    const { kc } = await sim();
    const mode = { heartbeat: true, works: true };
    const hub = await hubStub((r) => {
      if (mode.heartbeat && r.path.endsWith("/heartbeat")) return { status: 200, json: { leaseDurationSeconds: "soon", worksEtag: "1", leaving: false } };
      if (mode.works && r.method === "GET" && r.path.includes("/works"))
        return { status: 200, json: { etag: "1", leaving: false, works: [{ metadata: { name: "w" }, spec: {} }] } };
      return undefined;
    });
    hub.state.accepted = true;
    const { log, lines } = memoryLogger();
    const a = await agent({ hubUrl: hub.url, clusterName: "c1", bootstrapToken: TOKEN, kubeConfig: kc, logger: log, timing: FAST });
    await until(
      () => count(lines, /malformed answer to POST \/agent\/v1\/clusters\/c1\/heartbeat: leaseDurationSeconds: /) === 1,
      10_000,
      "the heartbeat's malformed answer reported",
    );
    const since = hub.requests.length;
    await until(() => hub.requests.length >= since + 3, 10_000, "heartbeats retried");
    expect(a.state()).toBe("heartbeating");
    mode.heartbeat = false;
    await until(
      () => count(lines, /works fetch failed \(HTTP 200: malformed answer to GET \/agent\/v1\/clusters\/c1\/works: works\.0\.metadata\.uid: /) === 1,
      10_000,
      "the works answer's problem reported",
    );
    const fetchesFrom = hub.requests.length;
    await until(() => hub.requests.slice(fetchesFrom).filter((r) => r.path.includes("/works")).length >= 2, 10_000, "the fetch retried with backoff");
    mode.works = false;
    await until(() => count(lines, /works fetch succeeds again/) === 1, 10_000, "the fetch recovered");
    expect(count(lines, /malformed answer to POST/)).toBe(1);
    expect(a.state()).toBe("heartbeating");
    await a.stop();
  });

  it("reports the kube-apiserver unavailable only after the threshold, and heartbeats at once on a change", async () => {
    const { cluster, kc } = await sim();
    const hub = await hubStub();
    hub.state.accepted = true;
    hub.state.lease = 30; // long lease: only a health change can trigger an early heartbeat
    const { log, lines } = memoryLogger();
    const a = await agent({
      hubUrl: hub.url,
      clusterName: "c1",
      bootstrapToken: TOKEN,
      kubeConfig: kc,
      logger: log,
      timing: FAST,
      healthFailureThresholdSeconds: 0.3,
    });
    const beats = () => hub.requests.filter((r) => r.path.endsWith("/heartbeat")).map((r) => r.body as unknown as HeartbeatRequest);
    await until(() => beats().length === 1, 10_000, "first heartbeat");
    expect(beats()[0]?.healthy).toBe(true);
    const downAt = Date.now();
    cluster.setHealthy(false);
    await until(() => beats().length === 2, 10_000, "heartbeat after the threshold");
    expect(Date.now() - downAt).toBeGreaterThanOrEqual(300);
    expect(beats()[1]).toMatchObject({ healthy: false, healthMessage: expect.stringMatching(/\/livez returned 500/) });
    expect(count(lines, /reporting the cluster unavailable/)).toBe(1);
    cluster.setHealthy(true);
    await until(() => beats().length === 3, 10_000, "heartbeat on recovery");
    expect(beats()[2]?.healthy).toBe(true);
    expect(count(lines, /kube-apiserver healthy again/)).toBe(1);

    // The in-process rotation path surfaces the hub's refusal and keeps the old key.
    const kid = hub.requests.at(-1)?.kid;
    await expect(a.rotateKey()).rejects.toThrow(/refused key rotation \(404\): no such endpoint/);
    expect((await loadCredentials(kc, "flotilla-agent"))?.key.kid).toBe(kid);
    await a.stop();
  });
});

describe("command line", () => {
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const logs: string[] = [];
    const errs: string[] = [];
    const keys = ["FLOTILLA_HUB_URL", "FLOTILLA_CLUSTER_NAME", "FLOTILLA_BOOTSTRAP_TOKEN", "FLOTILLA_TRANSPORT"];
    const saved = Object.fromEntries(keys.map((k) => [k, process.env[k]]));
    for (const k of keys) delete process.env[k];
    Object.assign(process.env, env);
    try {
      const code = await runCli(["node", "flotilla-agent", ...args], {
        writeLog: (l) => logs.push(l),
        writeErr: (s) => errs.push(s),
        writeOut: () => undefined,
      });
      return { code, logs, errs: errs.join("") };
    } finally {
      for (const k of keys) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
    }
  };

  it("exits 2 with a clear message on bad flags", async () => {
    expect(await run(["--cluster-name", "c1"])).toMatchObject({ code: 2, errs: expect.stringMatching(/--hub-url \(or FLOTILLA_HUB_URL\) is required/) });
    expect(await run(["--hub-url", "http://h", "--cluster-name", "Bad_Name"])).toMatchObject({ code: 2, errs: expect.stringMatching(/DNS-1123 label/) });
    expect(await run(["--hub-url", "ftp://h", "--cluster-name", "c1"])).toMatchObject({ code: 2, errs: expect.stringMatching(/http or https/) });
    expect(await run(["--bogus"])).toMatchObject({ code: 2, errs: expect.stringMatching(/unknown option '--bogus'/) });
    expect(await run(["--hub-url", "http://h", "--cluster-name", "c1", "--claim", "noequals"])).toMatchObject({
      code: 2,
      errs: expect.stringMatching(/name=value/),
    });
    expect(await run(["--hub-url", "http://h", "--cluster-name", "c1", "--log-format", "xml"])).toMatchObject({ code: 2 });
    expect(await run(["--hub-url", "http://h", "--cluster-name", "c1", "--health-failure-threshold", "-1"])).toMatchObject({ code: 2 });
    expect(await run(["--hub-url", "http://h", "--cluster-name", "c1", "--backoff-cap", "0"])).toMatchObject({
      code: 2,
      errs: expect.stringMatching(/seconds > 0/),
    });
    expect(await run(["--hub-url", "http://h", "--cluster-name", "c1", "--transport", "pigeon"])).toMatchObject({
      code: 2,
      errs: expect.stringMatching(/Allowed choices are poll, ws/),
    });
    expect((await run(["--help"])).code).toBe(0);
  });

  it("--simulate with env configuration (FLOTILLA_TRANSPORT=ws): a 409 from the hub exits 1 with the hub's message as a JSON log line", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotilla-agent-cli-"));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const hub = await hubStub((r) =>
      r.path === "/agent/v1/register"
        ? { status: 409, json: { kind: "Status", code: 409, reason: "Conflict", message: 'cluster name "c1" is taken by another cluster ID' } }
        : undefined,
    );
    const { code, logs } = await run(["--simulate", "--simulate-state", path.join(dir, "state.json"), "--simulate-nodes", "2", "--log-format", "json"], {
      FLOTILLA_HUB_URL: hub.url,
      FLOTILLA_CLUSTER_NAME: "c1",
      FLOTILLA_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef",
      FLOTILLA_TRANSPORT: "ws",
    });
    expect(code).toBe(1);
    const parsed = logs.map((l) => JSON.parse(l) as { level: string; msg: string; transport?: string });
    expect(parsed.find((l) => /starting flotilla-agent/.test(l.msg))?.transport).toBe("ws");
    expect(parsed.filter((l) => l.level === "error" && /taken by another cluster ID/.test(l.msg))).toHaveLength(1);
    expect(hub.requests).toHaveLength(1);
    expect(hub.requests[0]?.body?.clusterName).toBe("c1");
    expect(fs.existsSync(path.join(dir, "state.json"))).toBe(true);
  });

  it("exits 1 when there is neither a Secret nor a bootstrap token", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotilla-agent-cli-"));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const { code, logs } = await run(["--simulate", "--simulate-state", path.join(dir, "s.json"), "--hub-url", "http://127.0.0.1:9", "--cluster-name", "c2"]);
    expect(code).toBe(1);
    expect(logs.join("")).toMatch(/ERROR no hub credentials .* pass --bootstrap-token or set FLOTILLA_BOOTSTRAP_TOKEN/);
  });
});
