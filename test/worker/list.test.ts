import { beforeAll, describe, expect, it } from "vitest";
import { call, MC } from "./helpers.ts";

const PLACEMENTS = "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/paging/placements";

beforeAll(async () => {
  for (const name of ["p-c", "p-a", "p-e", "p-b", "p-d"]) {
    const r = await call("POST", PLACEMENTS, { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name }, spec: {} });
    expect(r.status).toBe(201);
  }
  for (const name of ["page-2", "page-1", "page-3"]) {
    expect((await call("POST", MC, { apiVersion: "cluster.open-cluster-management.io/v1", kind: "ManagedCluster", metadata: { name, labels: { paging: "yes" } }, spec: {} })).status).toBe(201);
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
    if (token) expect(r.body.metadata.remainingItemCount).toBeGreaterThan(0);
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
