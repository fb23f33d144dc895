/**
 * The metrics recorder's sends from a Durable Object (src/metrics/recorder.ts `flushSoon` with no
 * delay): an event after a quiet spell is sent at once; the events of a burst go in one send per
 * `OBJECT_FLUSH_GAP_MS`, each counted once.
 */
import { describe, expect, it } from "vitest";
import { count, countAndObserve, flushSoon, observe, OBJECT_FLUSH_GAP_MS, takeBatch, type BatchCell } from "../../src/metrics/recorder.ts";
import { COUNTED } from "../../src/metrics/families.ts";
import type { MetricFamily } from "../../src/metrics/exposition.ts";
import type { Env } from "../../src/env.ts";

const FAMILY = { name: "recorder_test_total", type: "counter", help: "test", labels: [] } as const satisfies MetricFamily;

/** A metrics object that records the batches it gets. */
function metricsObject() {
  const adds: BatchCell[][] = [];
  const env = { METRICS: { getByName: () => ({ add: async (b: BatchCell[]) => void adds.push(b) }) } } as unknown as Pick<Env, "METRICS">;
  return { adds, env };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("metrics sends from an object", () => {
  it("sends an event after a quiet spell at once, and a burst once per gap", async () => {
    const { adds, env } = metricsObject();
    const kept: Promise<unknown>[] = [];
    const waitUntil = (p: Promise<unknown>) => void kept.push(p);
    await sleep(OBJECT_FLUSH_GAP_MS);
    count(FAMILY);
    flushSoon(env, waitUntil, 0);
    await sleep(5);
    expect(adds).toHaveLength(1);

    // 60 events over about 600 ms: one send per gap at most (and the first of them waits the gap).
    const started = performance.now();
    for (let i = 0; i < 60; i++) {
      count(FAMILY);
      flushSoon(env, waitUntil, 0);
      await sleep(10);
    }
    for (let n = 0; n < kept.length; n = kept.length) await Promise.all(kept.slice(n));
    const elapsed = performance.now() - started;
    expect(adds.length - 1).toBeLessThanOrEqual(Math.ceil(elapsed / OBJECT_FLUSH_GAP_MS) + 1);
    expect(adds.length - 1).toBeGreaterThanOrEqual(2);
    const total = adds.flat().reduce((sum, [family, , values]) => sum + (family === FAMILY.name ? values[0]! : 0), 0);
    expect(total).toBe(61);
  });
});

describe("an API request's cells", () => {
  it("counts a request and its duration with one label part: the same cells as count and observe", () => {
    const cases = [
      { verb: "GET", dry_run: "", group: "", version: "v1", resource: "configmaps", subresource: "", scope: "resource", component: "apiserver" },
      { verb: "LIST", dry_run: "All", group: "apps", version: "v1", resource: "deployments", subresource: "", scope: "namespace", component: "apiserver" },
      { verb: "WATCH", dry_run: "", group: "", version: "", resource: "", subresource: "", scope: "", component: "apiserver" },
      { verb: 'odd "verb"\n', dry_run: "", group: "a\\b", version: "", resource: "", subresource: "status", scope: "cluster", component: "apiserver" },
    ];
    for (const [i, labels] of cases.entries()) {
      const code = [200, 404, 201, 500][i]!;
      const seconds = i === 2 ? undefined : 0.0042 * (i + 1);
      takeBatch();
      count(COUNTED.apiRequests, { ...labels, code });
      if (seconds !== undefined) observe(COUNTED.apiRequestDuration, labels, seconds);
      const separate = takeBatch();
      countAndObserve(COUNTED.apiRequests, COUNTED.apiRequestDuration, labels, ["code", String(code)], seconds);
      expect(takeBatch()).toEqual(separate);
    }
  });
});
