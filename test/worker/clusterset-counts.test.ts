/**
 * ManagedClusterSet member counts (src/clusterprofile/set-counts.ts): kept in the batch of each
 * write that changes a cluster's membership, so that a cluster's change reads a constant number
 * of D1 rows for them whatever the sets' sizes (architecture rule: no code path that runs for one
 * cluster's change reads every cluster), exact under concurrent writes, and free for writes that
 * leave labels alone. Rows are D1's own figure (`meta.rows_read`) for the statements that touch
 * the counts, measured through a D1 binding that records them.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/env.ts";
import { ManagedClusterKind } from "../../src/kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "../../src/kinds/managedclusterset.ts";
import { writeStored, writeStoredMany } from "../../src/store/d1/write.ts";
import { call, condition, MC, MCSET, merge } from "./helpers.ts";

const G = "cluster.open-cluster-management.io";
const CS = `${G}/clusterset`;

/** A statement D1 ran, with its SQL and D1's rows read and written. */
interface Ran {
  sql: string;
  rowsRead: number;
  rowsWritten: number;
}

/**
 * `env` with a D1 binding that records, for each statement run by `all`, `run` or `batch`, its SQL
 * and D1's `meta.rows_read`/`rows_written` (reads by `first` and `raw` carry no meta and are not
 * recorded; the counts' statements use neither).
 */
function metered(): { env: Env; ran: Ran[] } {
  const ran: Ran[] = [];
  const inner = (env as unknown as Env).DB;
  const targets = new WeakMap<object, D1PreparedStatement>();
  const record = (sql: string, r: D1Result) => ran.push({ sql, rowsRead: r.meta.rows_read ?? 0, rowsWritten: r.meta.rows_written ?? 0 });
  const wrap = (stmt: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const proxy = new Proxy(stmt, {
      get(target, key) {
        if (key === "bind") return (...args: unknown[]) => wrap(target.bind(...args), sql);
        if (key === "all" || key === "run")
          return async () => {
            const r = await target[key]();
            record(sql, r);
            return r;
          };
        const v = Reflect.get(target, key, target) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    targets.set(proxy, stmt);
    sqls.set(proxy, sql);
    return proxy;
  };
  const sqls = new WeakMap<object, string>();
  const DB = new Proxy(inner, {
    get(target, key) {
      if (key === "prepare") return (sql: string) => wrap(target.prepare(sql), sql);
      if (key === "batch")
        return async (statements: D1PreparedStatement[]) => {
          const results = await target.batch(statements.map((s) => targets.get(s) ?? s));
          results.forEach((r, i) => record(sqls.get(statements[i]!) ?? "?", r));
          return results;
        };
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { env: { ...(env as unknown as Env), DB }, ran };
}

const clusterBody = (name: string, labels: Record<string, string>) => ({
  apiVersion: `${G}/v1`,
  kind: "ManagedCluster",
  metadata: { name, labels },
  spec: { hubAcceptsClient: true },
});

/** Creates one cluster through the store's write path (its batch and its hooks) with a metered D1; returns the statements recorded. */
async function register(name: string, labels: Record<string, string> = {}, prune = false): Promise<Ran[]> {
  const m = metered();
  // The commit's draw of the watch log's pruning (src/store/d1/objects.ts `PRUNE_PROBABILITY`), fixed.
  const draw = vi.spyOn(Math, "random").mockReturnValue(prune ? 0 : 0.999999);
  try {
    await writeStored(m.env, ManagedClusterKind, "", name, { verb: "create", body: clusterBody(name, labels) });
  } finally {
    draw.mockRestore();
  }
  // Left out: the watch log's pruning and the sweeps of the shared specs and body pieces, which a
  // commit adds now and then at random (pruneStatements in src/store/d1/objects.ts).
  return m.ran.filter((r) => !/^(delete from "events"|delete from "(shared_specs|body_chunks)"|update "(shared_specs|body_chunks)")/i.test(r.sql));
}
const ofCounts = (rs: Ran[]) => rs.filter((r) => r.sql.includes("clusterset_counts"));

const sum = (rs: Ran[], f: (r: Ran) => number) => rs.reduce((n, r) => n + f(r), 0);
const setCondition = async (name: string) => condition((await call("GET", `${MCSET}/${name}`)).body, "ClusterSetEmpty");
const counts = async () =>
  Object.fromEntries(
    (await env.DB.prepare("SELECT name, clusters FROM clusterset_counts").all<{ name: string; clusters: number }>()).results.map((r) => [r.name, r.clusters]),
  );

beforeAll(async () => {
  // The first request makes the built-in sets (default, global).
  expect((await call("GET", MCSET)).status).toBe(200);
  expect(
    (
      await call("POST", MCSET, {
        apiVersion: `${G}/v1beta2`,
        kind: "ManagedClusterSet",
        metadata: { name: "gold" },
        spec: { clusterSelector: { selectorType: "LabelSelector", labelSelector: { matchExpressions: [{ key: "tier", operator: "In", values: ["gold"] }] } } },
      })
    ).status,
  ).toBe(201);
});

describe("ManagedClusterSet counts", () => {
  it("cost a registration the same rows at the 200th cluster as at the 2nd", async () => {
    await register("c-1");
    const secondAll = await register("c-2");
    const second = ofCounts(secondAll);
    // 197 more, committed in batches.
    const more = await writeStoredMany(
      env as unknown as Env,
      ManagedClusterKind,
      Array.from({ length: 197 }, (_, i) => ({ namespace: "", name: `c-${i + 3}`, req: { verb: "create" as const, body: clusterBody(`c-${i + 3}`, {}) } })),
    );
    expect(more.every((r) => r !== "lost")).toBe(true);
    // The 200th commit draws the pruning, the 2nd did not: what it adds is left out of both.
    const lastAll = await register("c-200", {}, true);
    const last = ofCounts(lastAll);

    // The batch's UPDATE over the sets' rows, and one read of each set's row that moved.
    expect(sum(second, (r) => r.rowsRead)).toBeGreaterThan(0);
    expect(sum(last, (r) => r.rowsRead)).toBe(sum(second, (r) => r.rowsRead));
    expect(sum(last, (r) => r.rowsWritten)).toBe(sum(second, (r) => r.rowsWritten));
    expect(last.length).toBe(second.length);
    // The hook read one row for each set the cluster joined (default, global).
    expect(last.filter((r) => r.sql.startsWith("SELECT")).map((r) => r.rowsRead)).toEqual([1, 1]);
    // A few rows per set (there are 3), none per member: 16 on this machine's D1.
    expect(sum(last, (r) => r.rowsRead)).toBeLessThanOrEqual(24);
    // And the registration as a whole, as far as it is recorded (its batch, its hooks' writes and
    // their reads by `all`): the same statements and rows (30, 78 read, 38 written on this machine).
    expect(lastAll.length).toBe(secondAll.length);
    expect(sum(lastAll, (r) => r.rowsRead)).toBe(sum(secondAll, (r) => r.rowsRead));
    expect(sum(lastAll, (r) => r.rowsWritten)).toBe(sum(secondAll, (r) => r.rowsWritten));

    expect(await counts()).toMatchObject({ default: 200, global: 200, gold: 0 });
    expect(await setCondition("default")).toMatchObject({ status: "False", reason: "ClustersSelected", message: "200 ManagedClusters selected" });
    expect(await setCondition("global")).toMatchObject({ status: "False", message: "200 ManagedClusters selected" });
    expect(await setCondition("gold")).toMatchObject({ status: "True", reason: "NoClusterMatched", message: "No ManagedCluster selected" });
  });

  it("add nothing to a write that leaves the labels alone (a status report)", async () => {
    const m = metered();
    const cond = {
      type: "ManagedClusterConditionAvailable",
      status: "True",
      reason: "ManagedClusterAvailable",
      message: "Managed cluster is available",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    };
    await writeStored(m.env, ManagedClusterKind, "", "c-7", {
      verb: "patch",
      patchType: "merge",
      patch: { status: { conditions: [cond] } },
      subresource: "status",
    });
    expect(m.ran.length).toBeGreaterThan(0);
    expect(m.ran.filter((r) => r.sql.includes("clusterset_counts"))).toEqual([]);
  });

  it("follow relabelling and deletion, set by set", async () => {
    expect((await call("POST", MC, clusterBody("r-1", {}))).status).toBe(201);
    expect(await counts()).toMatchObject({ default: 201, global: 201, gold: 0 });
    expect((await call("PATCH", `${MC}/r-1`, { metadata: { labels: { tier: "gold", [CS]: "gold" } } }, merge)).status).toBe(200);
    // r-1 left `default` (its clusterset label names another set) and joined `gold` by its tier.
    expect(await counts()).toMatchObject({ default: 200, global: 201, gold: 1 });
    expect(await setCondition("gold")).toMatchObject({ status: "False", message: "1 ManagedClusters selected" });
    expect((await call("PATCH", `${MC}/r-1`, { metadata: { labels: { tier: "silver" } } }, merge)).status).toBe(200);
    expect(await counts()).toMatchObject({ default: 200, gold: 0 });
    expect(await setCondition("gold")).toMatchObject({ status: "True", message: "No ManagedCluster selected" });
    expect((await call("DELETE", `${MC}/r-1`)).status).toBe(200);
    // Being deleted, held by its finalizer: still counted, as OCM lists it.
    expect(await counts()).toMatchObject({ global: 201 });
    expect((await call("PATCH", `${MC}/r-1`, { metadata: { finalizers: null } }, merge)).status).toBe(200);
    expect((await call("GET", `${MC}/r-1`)).status).toBe(404);
    expect(await counts()).toMatchObject({ default: 200, global: 200 });
    expect(await setCondition("global")).toMatchObject({ message: "200 ManagedClusters selected" });
  });

  it("are exact when clusters and a set that selects them are written at the same time", async () => {
    const d1 = env as unknown as Env;
    const labels = { tier: "platinum" };
    const set = {
      apiVersion: `${G}/v1beta2`,
      kind: "ManagedClusterSet",
      metadata: { name: "platinum" },
      spec: { clusterSelector: { selectorType: "LabelSelector", labelSelector: { matchLabels: labels } } },
    };
    // Through the store's write path, all at once: 8 clusters created, 8 relabelled, the set created among them.
    await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => writeStored(d1, ManagedClusterKind, "", `p-${i}`, { verb: "create", body: clusterBody(`p-${i}`, labels) })),
      writeStored(d1, ManagedClusterSetKind, "", "platinum", { verb: "create", body: set }),
      ...Array.from({ length: 8 }, (_, i) =>
        writeStored(d1, ManagedClusterKind, "", `c-${i + 10}`, { verb: "patch", patchType: "merge", patch: { metadata: { labels } } }),
      ),
    ]);
    expect(await counts()).toMatchObject({ platinum: 16, global: 208, default: 208 });
    expect(await setCondition("platinum")).toMatchObject({ status: "False", message: "16 ManagedClusters selected" });
    // A selector change counts the set anew in its own batch; a removed set loses its row.
    expect(
      (
        await call(
          "PATCH",
          `${MCSET}/platinum`,
          { spec: { clusterSelector: { labelSelector: { matchLabels: labels, matchExpressions: [{ key: "zone", operator: "DoesNotExist" }] } } } },
          merge,
        )
      ).status,
    ).toBe(200);
    expect(await counts()).toMatchObject({ platinum: 16 });
    await writeStored(d1, ManagedClusterKind, "", "p-0", { verb: "patch", patchType: "merge", patch: { metadata: { labels: { zone: "a" } } } });
    expect(await counts()).toMatchObject({ platinum: 15 });
    expect(await setCondition("platinum")).toMatchObject({ message: "15 ManagedClusters selected" });
    expect((await call("DELETE", `${MCSET}/platinum`)).status).toBe(200);
    expect((await counts()).platinum).toBeUndefined();
  });
});
