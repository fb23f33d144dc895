/**
 * The benchmarks' platform floor (bench/noop/floor.ts, the no-op Worker with `BENCH_FLOOR=1`),
 * under `wrangler dev`: what it stores and counts is what bench:crp, bench:kinds and
 * bench:apply-requests set beside the hub, so it must do the work it claims (a D1 call per
 * request, the rows written, the works pushed and their status written before the ack).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNoopWorker, type NoopWorker } from "../../bench/noop/start.ts";
import { ChannelFleet, entryUrl, hubProcesses } from "../../bench/channel-fleet.ts";

interface Counts {
  d1Calls: number;
  d1RowsRead: number;
  d1RowsWritten: number;
  doRequests: number;
  constructions: number;
  idleMs: number;
}

describe("the platform floor", () => {
  let floor: NoopWorker;
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${floor.url}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await r.text();
    return { status: r.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
  };
  const counts = async (reset = false) => (await call(reset ? "POST" : "GET", "/__floor")).body as unknown as Counts;

  beforeAll(async () => {
    floor = await startNoopWorker({ vars: { BENCH_FLOOR: "1" } });
  });
  afterAll(async () => {
    await floor?.stop();
  });

  it("answers kubectl's requests from its D1, one call each", async () => {
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "floor" }, data: { k: "v" } };
    // No namespace yet: the create is refused, nothing stored.
    expect((await call("POST", "/api/v1/namespaces/floor/configmaps", cm)).status).toBe(404);
    await counts(true);
    expect((await call("POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: "floor" } })).status).toBe(201);
    expect((await call("GET", "/api/v1/namespaces/floor/configmaps/a")).status).toBe(404);
    const created = await call("POST", "/api/v1/namespaces/floor/configmaps", cm);
    expect(created.status).toBe(201);
    expect(created.body).toEqual(cm);
    expect((await call("POST", "/api/v1/namespaces/floor/configmaps", cm)).status).toBe(409);
    const read = await call("GET", "/api/v1/namespaces/floor/configmaps/a");
    expect(read).toEqual({ status: 200, body: cm });
    const applied = { ...cm, data: { k: "w" } };
    expect((await call("PATCH", "/api/v1/namespaces/floor/configmaps/a", applied)).status).toBe(200);
    expect((await call("GET", "/api/v1/namespaces/floor/configmaps/a")).body).toEqual(applied);
    const c = await counts();
    // namespace POST, GET, POST, POST (refused), GET, PATCH, GET: one D1 call each.
    expect(c.d1Calls).toBe(7);
    expect(c.d1RowsWritten).toBeGreaterThanOrEqual(3);
  });

  it("writes each cluster's work, pushes it, and writes its status before the ack", async () => {
    const fleet = await ChannelFleet.start(["floor-a", "floor-b", "floor-c"]);
    try {
      await fleet.connect(await entryUrl(hubProcesses(floor.pid, floor.url).worker));
      const spec = {
        workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "default" }, data: { big: "y".repeat(4096) } }] },
      };
      const work = {
        apiVersion: "work.open-cluster-management.io/v1",
        kind: "ManifestWork",
        metadata: { name: "bench-work", namespace: "floor-a", uid: "u-1", generation: 1, resourceVersion: "7" },
        spec,
        status: { conditions: [] },
      };
      expect((await call("POST", "/floor/setup", { work, specJson: JSON.stringify(spec) })).status).toBe(200);
      await counts(true);
      expect((await call("POST", "/floor/create")).body).toEqual({ clusters: 3 });
      const times = await fleet.reported(1, 60_000, "bench-work");
      expect(times).toHaveLength(3);
      expect((await fleet.stats()).reportsAcked).toBe(3);
      const c = await counts();
      // One batch of works (the spec once, three rows), one object call per cluster, and the three
      // status writes (in one to three groups) before their acks.
      expect(c.doRequests).toBe(3);
      expect(c.d1Calls).toBeGreaterThanOrEqual(2);
      expect(c.d1Calls).toBeLessThanOrEqual(4);
      expect(c.d1RowsWritten).toBeGreaterThanOrEqual(6);
      // The objects the connect built were in memory: none was built again for the create.
      expect(c.constructions).toBe(0);
    } finally {
      await fleet.stop();
    }
  });

  it("counts the cluster objects built again after workerd evicted them (a cold create)", async () => {
    const fleet = await ChannelFleet.start(["cold-a", "cold-b"]);
    try {
      await counts(true);
      await fleet.connect(await entryUrl(hubProcesses(floor.pid, floor.url).worker));
      // The connect built each cluster's object once.
      expect((await counts()).constructions).toBe(2);
      const spec = { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "default" }, data: { k: "v" } }] } };
      const work = {
        apiVersion: "work.open-cluster-management.io/v1",
        kind: "ManifestWork",
        metadata: { name: "cold-work", namespace: "cold-a", uid: "u-2", generation: 1 },
        spec,
      };
      expect((await call("POST", "/floor/setup", { work, specJson: JSON.stringify(spec) })).status).toBe(200);
      // workerd evicts an object 10 s after its last event (its pings are answered without it):
      // the floor tells how long its objects have had none.
      await expect.poll(async () => (await counts()).idleMs, { timeout: 60_000, interval: 500 }).toBeGreaterThanOrEqual(11_000);
      await counts(true);
      // The create goes to every cluster that ever connected to this Worker (the test before's too).
      const created = (await call("POST", "/floor/create")).body as { clusters: number };
      expect(await fleet.reported(1, 60_000, "cold-work")).toHaveLength(2);
      const c = await counts();
      // Each object was built again by the create's call into it, then took its agent's report.
      expect(c.doRequests).toBe(created.clusters);
      expect(c.constructions).toBe(created.clusters);
    } finally {
      await fleet.stop();
    }
  });
});
