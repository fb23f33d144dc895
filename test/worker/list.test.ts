import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { awaitResourceVersion, database, FUTURE_RESOURCE_VERSION_WAIT_MS, LIST_CHUNK_ROWS, listPage } from "../../src/store/d1/objects.ts";
import { clock } from "../../src/clock.ts";
import { PlacementKind } from "../../src/kinds/placement.ts";
import { call, createNamespaces, MC } from "./helpers.ts";

const PLACEMENTS = "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/paging/placements";

beforeAll(async () => {
  await createNamespaces("paging", "pg", "pg-x");
  for (const name of ["p-c", "p-a", "p-e", "p-b", "p-d"]) {
    const r = await call("POST", PLACEMENTS, { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name }, spec: {} });
    expect(r.status).toBe(201);
  }
  for (const name of ["page-2", "page-1", "page-3"]) {
    expect(
      (
        await call("POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name, labels: { paging: "yes" } },
          spec: {},
        })
      ).status,
    ).toBe(201);
  }
});

/** Follows `continue` tokens with `limit` and returns the pages' item names. */
async function pages(path: string, limit: number): Promise<string[][]> {
  const out: string[][] = [];
  let token: string | undefined;
  for (let i = 0; i < 10; i++) {
    const sep = path.includes("?") ? "&" : "?";
    const r = await call("GET", `${path}${sep}limit=${limit}${token ? `&continue=${encodeURIComponent(token)}` : ""}`);
    expect(r.status).toBe(200);
    out.push(r.body.items.map((o: { metadata: { name: string } }) => o.metadata.name));
    token = r.body.metadata.continue;
    // As the apiserver: the count of what remains, unless a selector makes it unknown.
    if (token && !path.includes("Selector=")) expect(r.body.metadata.remainingItemCount).toBeGreaterThan(0);
    if (path.includes("Selector=")) expect(r.body.metadata.remainingItemCount).toBeUndefined();
    if (!token) break;
  }
  return out;
}

describe("list chunking with limit and continue", () => {
  it("pages a namespaced list in name order and ends without a token", async () => {
    expect(await pages(PLACEMENTS, 2)).toEqual([["p-a", "p-b"], ["p-c", "p-d"], ["p-e"]]);
  });

  it("pages a cluster-scoped list under a label selector", async () => {
    expect(await pages(`${MC}?labelSelector=paging%3Dyes`, 2)).toEqual([["page-1", "page-2"], ["page-3"]]);
  });

  it("counts the items after a page", async () => {
    const first = await call("GET", `${PLACEMENTS}?limit=2`);
    expect(first.body.metadata.remainingItemCount).toBe(3);
    const second = await call("GET", `${PLACEMENTS}?limit=2&continue=${first.body.metadata.continue}`);
    expect(second.body.metadata.remainingItemCount).toBe(1);
  });

  it("pages across namespaces in (namespace, name) order, and takes tokens naming a namespace/name", async () => {
    for (const [ns, name] of [
      ["pg", "b"],
      ["pg-x", "a"],
      ["pg", "a"],
      ["pg-x", "c"],
    ]) {
      const r = await call("POST", `/apis/cluster.open-cluster-management.io/v1beta1/namespaces/${ns}/placements`, {
        apiVersion: "cluster.open-cluster-management.io/v1beta1",
        kind: "Placement",
        metadata: { name, labels: { across: "yes" } },
        spec: {},
      });
      expect(r.status).toBe(201);
    }
    const all = "/apis/cluster.open-cluster-management.io/v1beta1/placements?labelSelector=across%3Dyes";
    expect(await pages(all, 3)).toEqual([["a", "b", "a"], ["c"]]);
    // A token as earlier hubs wrote it: {"start": "<namespace>/<name>"}.
    const token = btoa(JSON.stringify({ v: "flotilla.dev/v1", start: "pg/b" })).replace(/=+$/, "");
    const rest = await call("GET", `${all}&limit=5&continue=${token}`);
    expect(rest.body.items.map((o: { metadata: { namespace: string; name: string } }) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      "pg-x/a",
      "pg-x/c",
    ]);
  });

  it("returns everything with no limit, or a limit larger than the list", async () => {
    const all = await call("GET", `${PLACEMENTS}?limit=50`);
    expect(all.body.items).toHaveLength(5);
    expect(all.body.metadata.continue).toBeUndefined();
  });

  it("refuses a malformed limit or continue token with 400", async () => {
    const badLimit = await call("GET", `${PLACEMENTS}?limit=-3`);
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.details.causes[0].field).toBe("limit");
    const badToken = await call("GET", `${PLACEMENTS}?limit=2&continue=not-a-token`);
    expect(badToken.status).toBe(400);
    expect(badToken.body.reason).toBe("BadRequest");
  });
});

describe("a list reads what its page needs", () => {
  const BIG = 1200;
  beforeAll(async () => {
    // Rows written directly: 1,200 Placements in namespace "big", every 100th labelled "hit".
    const stmts = [];
    for (let i = 0; i < BIG; i++) {
      const name = `p-${String(i).padStart(4, "0")}`;
      const body = {
        apiVersion: "cluster.open-cluster-management.io/v1beta1",
        kind: "Placement",
        metadata: { name, namespace: "big", uid: `u-${i}`, labels: { hit: i % 100 === 99 ? "yes" : "no" } },
        spec: {},
      };
      stmts.push(
        env.DB.prepare(
          "INSERT INTO objects (resource, namespace, name, uid, resource_version, body) VALUES ('cluster.open-cluster-management.io/placements', 'big', ?, ?, 1, ?)",
        ).bind(name, `u-${i}`, JSON.stringify(body)),
      );
    }
    await env.DB.batch(stmts);
  });

  it("reads limit + 1 rows for an unfiltered page, whatever the collection's size", async () => {
    const db = database(env.DB);
    const page = await listPage(db, PlacementKind, "big", { limit: 10, countRemaining: true });
    expect(page.items.map((o) => o.metadata.name)).toEqual(Array.from({ length: 10 }, (_, i) => `p-000${i}`));
    expect(page.rowsRead).toBe(11);
    expect(page.next).toEqual({ namespace: "big", name: "p-0009" });
    expect(page.remaining).toBe(BIG - 10);
    const last = await listPage(db, PlacementKind, "big", { limit: 10, after: { namespace: "big", name: "p-1194" } });
    expect(last.items).toHaveLength(5);
    expect(last.rowsRead).toBe(5);
    expect(last.next).toBeUndefined();

    const http = await call("GET", "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/big/placements?limit=10");
    expect(http.body.items).toHaveLength(10);
    expect(http.body.metadata.remainingItemCount).toBe(BIG - 10);
  });

  it("reads a filtered page in growing chunks only as far as the page needs", async () => {
    const hit = (o: { metadata: { labels?: Record<string, string> } }) => o.metadata.labels?.hit === "yes";
    const page = await listPage(database(env.DB), PlacementKind, "big", { limit: 3, filter: hit });
    expect(page.items.map((o) => o.metadata.name)).toEqual(["p-0099", "p-0199", "p-0299"]);
    expect(page.next).toEqual({ namespace: "big", name: "p-0299" });
    // Chunks of 4, 8, 16, 32, 64, 128, 256 rows: the third hit is in the last one.
    expect(page.rowsRead).toBe(508);
    expect(page.rowsRead).toBeLessThan(BIG);
    const all = await listPage(database(env.DB), PlacementKind, "big", { filter: hit });
    expect(all.items).toHaveLength(12);
    expect(all.rowsRead).toBe(BIG);
    expect(LIST_CHUNK_ROWS).toBe(500);
  });

  it("streams a watch's initial ADDED events page by page", async () => {
    const res = await exports.default.fetch(
      "https://hub.test/apis/cluster.open-cluster-management.io/v1beta1/namespaces/big/placements?watch=true&timeoutSeconds=1",
      {
        headers: { authorization: "Bearer test-admin-token" },
      },
    );
    const events = (await res.text())
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as { type: string; object: { metadata: { name: string } } });
    expect(events).toHaveLength(BIG);
    expect(events.every((e) => e.type === "ADDED")).toBe(true);
    expect(new Set(events.map((e) => e.object.metadata.name)).size).toBe(BIG);
  });
});

describe("a list or get from a resourceVersion (kube-apiserver's NotOlderThan and its Too large resource version)", () => {
  const current = async () => Number((await call("GET", `${PLACEMENTS}?limit=1`)).body.metadata.resourceVersion);
  /** The Status kube-apiserver's storage.NewTooLargeResourceVersionError gives, with the watch cache's retry of 1 s. */
  const tooLarge = (requested: string) => ({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    code: 504,
    reason: "Timeout",
    message: expect.stringMatching(new RegExp(`^Timeout: Too large resource version: ${requested}, current: \\d+$`)),
    details: { causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }], retryAfterSeconds: 1 },
  });

  it("answers 504 Timeout with cause ResourceVersionTooLarge for a version the hub has not reached, whatever the match", async () => {
    const ahead = String((await current()) + 1_000_000);
    const queries = [
      `resourceVersion=${ahead}`,
      `resourceVersion=${ahead}&resourceVersionMatch=NotOlderThan`,
      `resourceVersion=${ahead}&resourceVersionMatch=Exact`,
      `resourceVersion=${ahead}&limit=2`,
      "resourceVersion=18446744073709551615",
    ];
    const answers = await Promise.all(queries.map((q) => call("GET", `${PLACEMENTS}?${q}`)));
    for (const [i, r] of answers.entries()) {
      expect(r.status, queries[i]).toBe(504);
      expect(r.headers.get("retry-after"), queries[i]).toBe("1");
      expect(r.body, queries[i]).toEqual(tooLarge(i === 4 ? "18446744073709551615" : ahead));
    }
    // The current number is the hub's version at the answer, below the one asked for.
    expect(Number(/current: (\d+)$/.exec(answers[0]!.body.message)![1])).toBeLessThan(Number(ahead));
  });

  it("serves a version the hub has reached, and waits for one a write is about to reach", async () => {
    const now = await current();
    const same = await call("GET", `${PLACEMENTS}?resourceVersion=${now}`);
    expect(same.status).toBe(200);
    expect(Number(same.body.metadata.resourceVersion)).toBeGreaterThanOrEqual(now);
    // One version ahead: the list waits while a create makes it, then shows the new object.
    const pending = call("GET", `${PLACEMENTS}?resourceVersion=${now + 1}&resourceVersionMatch=NotOlderThan`);
    expect(
      (await call("POST", PLACEMENTS, { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name: "p-f" }, spec: {} }))
        .status,
    ).toBe(201);
    const waited = await pending;
    expect(waited.status).toBe(200);
    expect(Number(waited.body.metadata.resourceVersion)).toBeGreaterThanOrEqual(now + 1);
    expect(waited.body.items.map((o: { metadata: { name: string } }) => o.metadata.name)).toContain("p-f");
  });

  it("a get from a version the hub has not reached: the same 504; from one it has: the object", async () => {
    const now = await current();
    const [ahead, reached] = await Promise.all([
      call("GET", `${PLACEMENTS}/p-a?resourceVersion=${now + 1_000_000}`),
      call("GET", `${PLACEMENTS}/p-a?resourceVersion=${now}`),
    ]);
    expect(ahead.status).toBe(504);
    expect(ahead.body).toEqual(tooLarge(String(now + 1_000_000)));
    expect(reached.status).toBe(200);
    expect(reached.body.metadata.name).toBe("p-a");
  });

  it("checks resourceVersion, resourceVersionMatch and continue together as kube-apiserver's TestListOptions expects", async () => {
    const token = (await call("GET", `${PLACEMENTS}?limit=2`)).body.metadata.continue as string;
    const cases: [string, number, string][] = [
      ["resourceVersionMatch=NotOlderThan", 422, "resourceVersionMatch is forbidden unless resourceVersion is provided"],
      ["resourceVersionMatch=Exact&limit=2", 422, "resourceVersionMatch is forbidden unless resourceVersion is provided"],
      [`resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=2&continue=${token}`, 422, "resourceVersionMatch is forbidden when continue is provided"],
      ["resourceVersion=0&resourceVersionMatch=InvalidMatch", 422, "supported values"],
      ["resourceVersion=0&resourceVersionMatch=Exact", 422, 'resourceVersionMatch \\"exact\\" is forbidden for resourceVersion \\"0\\"'],
      ["resourceVersion=invalid&continue=invalidContinueToken", 400, "Invalid value"],
      ["resourceVersion=invalid&resourceVersionMatch=NotOlderThan", 400, "Invalid value"],
      ["continue=invalidContinueToken", 400, "continue key is not valid"],
      [`resourceVersion=1&limit=2&continue=${token}`, 400, "specifying resource version is not allowed when using continue"],
    ];
    for (const [query, status, message] of cases) {
      const r = await call("GET", `${PLACEMENTS}?${query}`);
      expect(r.status, query).toBe(status);
      expect(JSON.stringify(r.body.message), query).toContain(message);
    }
    // Version "0" with a continue token is allowed (the token carries the version).
    expect((await call("GET", `${PLACEMENTS}?resourceVersion=0&limit=2&continue=${token}`)).status).toBe(200);
  });

  it("waits on the injected clock, and not at all once the client went away", async () => {
    const db = database(env.DB);
    const ahead = BigInt((await current()) + 1_000_000);
    // The clock jumps past the wait at its first look: the answer comes after one re-read, not 3 s.
    const real = clock.now;
    let looks = 0;
    clock.now = () => real() + (looks++ > 0 ? FUTURE_RESOURCE_VERSION_WAIT_MS : 0);
    try {
      await expect(awaitResourceVersion(db, ahead)).rejects.toMatchObject({
        code: 504,
        reason: "Timeout",
        details: { causes: [{ reason: "ResourceVersionTooLarge" }] },
      });
    } finally {
      clock.now = real;
    }
    expect(looks).toBe(2);
    // An aborted request (its client gone) is answered at once, whatever the clock says.
    await expect(awaitResourceVersion(db, ahead, AbortSignal.abort())).rejects.toMatchObject({ code: 504 });
    // Version 0 asks for nothing; one already reached returns the counter.
    expect(await awaitResourceVersion(db, 0n)).toBe(0);
    expect(await awaitResourceVersion(db, 1n)).toBeGreaterThanOrEqual(1);
  });

  it("refuses a resourceVersion that is not an unsigned 64-bit integer with 400", async () => {
    for (const rv of ["abc", "-1", "1.5", "18446744073709551616"]) {
      for (const path of [PLACEMENTS, `${PLACEMENTS}/p-a`]) {
        const r = await call("GET", `${path}?resourceVersion=${rv}`);
        expect(r.status, `${path} ${rv}`).toBe(400);
        expect(r.body.details.causes[0].field, rv).toBe("resourceVersion");
      }
    }
  });
});
