import { describe, expect, it } from "vitest";
import { call, MC } from "./helpers.ts";
import { env, exports } from "cloudflare:workers";
import { MAX_WATCHES_PER_CLIENT, WATCH_RETRY_AFTER_SECONDS } from "../../src/api/watch.ts";
import { waitFor } from "../wait.ts";

const mc = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: "cluster.open-cluster-management.io/v1", kind: "ManagedCluster", metadata: { name, labels } });

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
    expect(await refused.json()).toMatchObject({ kind: "Status", reason: "TooManyRequests", code: 429, details: { retryAfterSeconds: WATCH_RETRY_AFTER_SECONDS } });

    await open.pop()!.body!.cancel();
    // The freed place is taken again once the hub has seen the cancelled watch end.
    const again = await waitFor("a watch place to be freed", async () => {
      const r = await watch("timeoutSeconds=120");
      if (r.status === 200) return r;
      await r.body?.cancel();
      return undefined;
    }, 10_000, 50);
    expect(again.status).toBe(200);
    open.push(again);
    await Promise.all(open.map((r) => r.body!.cancel()));
  });
});
