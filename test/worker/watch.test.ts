import { describe, expect, it } from "vitest";
import { call, MC, silentD1 } from "./helpers.ts";
import { env, exports } from "cloudflare:workers";
import { WATCH_RETRY_AFTER_SECONDS, watchResponse } from "../../src/api/watch.ts";
import { MAX_WATCHES_PER_CLIENT } from "../../src/api/watch-limits.ts";
import { storeOf } from "../../src/store/store.ts";
import { storageOf } from "../../src/store/storage.ts";
import { ManagedClusterKind } from "../../src/kinds/managedcluster.ts";
import { clock } from "../../src/clock.ts";
import { waitFor } from "../wait.ts";

const mc = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: "cluster.open-cluster-management.io/v1",
  kind: "ManagedCluster",
  metadata: { name, labels },
});

/** Reads watch events from a streaming response until `n` events arrived. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function readEvents(res: Response, n: number): Promise<any[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  const out = [];
  while (out.length < n) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      // Blank lines are the keepalives of a quiet watch.
      if (buf.slice(0, i).trim()) out.push(JSON.parse(buf.slice(0, i)));
      buf = buf.slice(i + 1);
    }
  }
  await reader.cancel();
  return out;
}

const watch = (query: string) => exports.default.fetch(`https://hub.test${MC}?watch=true&${query}`, { headers: { authorization: "Bearer test-admin-token" } });

describe("watch and tables", () => {
  it("streams ADDED for the current objects, then changes after the list's resourceVersion", async () => {
    await call("POST", MC, mc("w1", { team: "w" }));
    const list = await call("GET", `${MC}?labelSelector=team%3Dw`);
    const res = await watch("labelSelector=team%3Dw");
    const pending = readEvents(res, 3);
    await call("PATCH", `${MC}/w1`, { metadata: { labels: { team: "w", x: "1" } } }, { contentType: "application/merge-patch+json" });
    await call("DELETE", `${MC}/w1`);
    const events = await pending;
    expect(events.map((e) => `${e.type}:${e.object.metadata.name}`)).toEqual(["ADDED:w1", "MODIFIED:w1", "DELETED:w1"]);
    expect(Number(events[1]!.object.metadata.resourceVersion)).toBeGreaterThan(Number(list.body.metadata.resourceVersion));
  });

  it("resumes from a resourceVersion and answers 410 Expired for one too old", async () => {
    const created = await call("POST", MC, mc("w2", { team: "r" }));
    const rv = created.body.metadata.resourceVersion;
    await call("PATCH", `${MC}/w2`, { spec: { leaseDurationSeconds: 30 } }, { contentType: "application/merge-patch+json" });
    const resumed = await readEvents(await watch(`labelSelector=team%3Dr&resourceVersion=${rv}`), 1);
    expect(resumed[0]).toMatchObject({ type: "MODIFIED", object: { metadata: { name: "w2" } } });
    // The log keeps the last 10,000 resourceVersions: move the counter past that.
    await env.DB.prepare("UPDATE counters SET value = value + 20000 WHERE id = 1").run();
    const tooOld = await readEvents(await watch(`resourceVersion=${rv}&timeoutSeconds=5`), 1);
    expect(tooOld[0]).toMatchObject({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } });
  });

  it("serves Tables with the printer columns OCM declares", async () => {
    await call("POST", MC, mc("t1"));
    const headers = { accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" };
    const res = await exports.default.fetch(`https://hub.test${MC}/t1`, { headers: { ...headers, authorization: "Bearer test-admin-token" } });
    const table = (await res.json()) as { kind: string; columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] };
    expect(table.kind).toBe("Table");
    expect(table.columnDefinitions.map((c) => c.name)).toEqual(["Name", "Hub Accepted", "Managed Cluster URLs", "Joined", "Available", "Age"]);
    expect(table.rows[0]!.cells[0]).toBe("t1");
    expect(table.rows[0]!.cells[1]).toBe(false);
    expect(String(table.rows[0]!.cells[5])).toMatch(/^\d+s$/);
  });

  it("serves /version without credentials", async () => {
    const r = await call("GET", "/version", undefined, { token: null });
    expect(r.status).toBe(200);
    expect(r.body.gitVersion).toMatch(/^v1\./);
  });

  it("a watch whose request was cancelled holds its client's place no longer than its timeout and a minute (issue 27)", async () => {
    // Watches whose requests are gone: their D1 reads never answer and their streams never end.
    const start = () =>
      watchResponse(
        storeOf({ ...env, DB: silentD1() }, ManagedClusterKind),
        storageOf({ ...env, DB: silentD1() }),
        undefined,
        () => true,
        (o) => o,
        { timeoutSeconds: "5", client: "cancelled-watches" },
        () => undefined,
      );
    for (let i = 0; i < MAX_WATCHES_PER_CLIENT; i++) expect(start().status).toBe(200);
    expect(() => start()).toThrow(expect.objectContaining({ code: 429 }));
    const real = clock.now;
    try {
      clock.now = () => real() + 5_000 + 60_000;
      expect(start().status).toBe(200);
    } finally {
      clock.now = real;
    }
  });

  it(`refuses a client's watch beyond ${MAX_WATCHES_PER_CLIENT} open ones with 429 and Retry-After, and frees a place when a watch's client goes away`, async () => {
    const open: Response[] = [];
    for (let i = 0; i < MAX_WATCHES_PER_CLIENT; i++) {
      const res = await watch("timeoutSeconds=120");
      expect(res.status).toBe(200);
      open.push(res);
    }
    const refused = await watch("timeoutSeconds=120");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe(String(WATCH_RETRY_AFTER_SECONDS));
    expect(await refused.json()).toMatchObject({
      kind: "Status",
      reason: "TooManyRequests",
      code: 429,
      details: { retryAfterSeconds: WATCH_RETRY_AFTER_SECONDS },
    });

    await open.pop()!.body!.cancel();
    // The freed place is taken again once the hub has seen the cancelled watch end.
    const again = await waitFor(
      "a watch place to be freed",
      async () => {
        const r = await watch("timeoutSeconds=120");
        if (r.status === 200) return r;
        await r.body?.cancel();
        return undefined;
      },
      10_000,
      50,
    );
    expect(again.status).toBe(200);
    open.push(again);
    await Promise.all(open.map((r) => r.body!.cancel()));
  });
});

describe("watch as informers expect", () => {
  const base = (query: string) => exports.default.fetch(`https://hub.test${MC}?${query}`, { headers: { authorization: "Bearer test-admin-token" } });

  it("watch-list: initial ADDED events end with the annotated BOOKMARK at the list's version", async () => {
    await call("POST", MC, mc("wl1", { wl: "x" }));
    await call("POST", MC, mc("wl2", { wl: "x" }));
    const res = await base("watch=1&labelSelector=wl%3Dx&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan");
    const events = await readEvents(res, 3);
    expect(events.map((e) => e.type)).toEqual(["ADDED", "ADDED", "BOOKMARK"]);
    expect(events[2].object.metadata.annotations).toEqual({ "k8s.io/initial-events-end": "true" });
    expect(Number(events[2].object.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(events[1].object.metadata.resourceVersion));
  });

  it("refuses watch-list options as ListOptions validation does (422)", async () => {
    for (const q of [
      "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
      "watch=1&sendInitialEvents=true&allowWatchBookmarks=true",
      "sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan",
      "watch=1&resourceVersionMatch=NotOlderThan",
      "watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=Newest",
    ]) {
      const res = await base(q);
      expect(res.status, q).toBe(422);
      const status = await res.json<{ reason: string; details: { kind: string } }>();
      expect(status.reason).toBe("Invalid");
      expect(status.details.kind).toBe("ListOptions");
    }
  });

  it("answers 410 Expired for a version the log cannot replay, never silence", async () => {
    await call("POST", MC, mc("wl3"));
    // As on a hub whose log began after its first writes (an upgrade), or pruned: the oldest event is far ahead.
    await env.DB.prepare("DELETE FROM events WHERE resource_version < (SELECT value FROM counters WHERE id = 1)").run();
    const events = await readEvents(await base("watch=true&resourceVersion=1&timeoutSeconds=5"), 1);
    expect(events[0]).toMatchObject({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } });
  });

  it("from a version the hub has not reached: the ERROR event of kube-apiserver's watch cache (504 Timeout, ResourceVersionTooLarge), never silence", async () => {
    const now = Number((await call("GET", `${MC}?limit=1`)).body.metadata.resourceVersion);
    const ahead = String(now + 1_000_000);
    const queries = [
      `watch=1&resourceVersion=${ahead}`,
      `watch=1&resourceVersion=${ahead}&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`,
      "watch=1&resourceVersion=18446744073709551615",
    ];
    const answers = await Promise.all(queries.map((q) => base(q)));
    for (const [i, res] of answers.entries()) {
      // As the watch cache answers once the watch is under way: 200, then one ERROR event, then the end.
      expect(res.status, queries[i]).toBe(200);
      const events = (await res.text())
        .split("\n")
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l));
      expect(events, queries[i]).toEqual([
        {
          type: "ERROR",
          object: {
            kind: "Status",
            apiVersion: "v1",
            metadata: {},
            status: "Failure",
            code: 504,
            reason: "Timeout",
            message: expect.stringMatching(new RegExp(`^Timeout: Too large resource version: ${i === 2 ? "18446744073709551615" : ahead}, current: \\d+$`)),
            details: { causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }], retryAfterSeconds: 1 },
          },
        },
      ]);
    }
  });

  it("from a version a write is about to reach: waits for it, then streams what follows it", async () => {
    await call("POST", MC, mc("fut1", { fut: "x" }));
    const now = Number((await call("GET", `${MC}?limit=1`)).body.metadata.resourceVersion);
    const res = await base(`watch=1&labelSelector=fut%3Dx&resourceVersion=${now + 1}&timeoutSeconds=20`);
    const pending = readEvents(res, 1);
    // The first write makes version now + 1 (the watch starts after it), the second is streamed.
    await call("PATCH", `${MC}/fut1`, { metadata: { labels: { fut: "x", step: "1" } } }, { contentType: "application/merge-patch+json" });
    await call("PATCH", `${MC}/fut1`, { metadata: { labels: { fut: "x", step: "2" } } }, { contentType: "application/merge-patch+json" });
    const [event] = await pending;
    expect(event).toMatchObject({ type: "MODIFIED", object: { metadata: { name: "fut1", labels: { step: "2" } } } });
  });

  it("sendInitialEvents=false without a version sends only later changes", async () => {
    await call("POST", MC, mc("wl4", { wl: "late" }));
    const res = await base("watch=1&labelSelector=wl%3Dlate&sendInitialEvents=false&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan");
    const pending = readEvents(res, 1);
    // The watch starts from "now" once it has read the counter: wait for a change to reach it.
    await waitFor("the watch to see a change", async () => {
      await call(
        "PATCH",
        `${MC}/wl4`,
        { metadata: { labels: { wl: "late", n: String(Math.random()).slice(2, 8) } } },
        { contentType: "application/merge-patch+json" },
      );
      return Promise.race([pending, new Promise((r) => setTimeout(() => r(undefined), 1500))]);
    });
    expect((await pending)[0].type).toBe("MODIFIED");
  });
});
