/**
 * The metered hub of `npm run bench:costs` (bench/costs.ts): the hub Worker and its four Durable
 * Object classes exactly as src/index.ts exports them, with every billed unit counted on the way
 * in and out, so that the benchmark can read what one operation cost in total (the Worker, the
 * cluster's object, the scheduler and replica set objects, their alarms, and D1).
 *
 * What is counted, and how:
 * - Worker requests: each HTTP request but the meter's own (`/__meter`) and `npm start`'s
 *   liveness probes (`/livez/ping`).
 * - Durable Object requests: each RPC method call on a stub of `CLUSTERS`, `SCHEDULER`,
 *   `REPLICASETS` or `METRICS` (each one is its own RPC session, billed as one request), and each alarm
 *   invocation, per class.
 * - Durable Object wakes: each construction of an object (a first load, or after an eviction),
 *   and WebSocket messages delivered to the cluster object (`webSocketMessage`, billed as requests
 *   at 20:1; an auto-answered ping never reaches it), per class.
 * - Durable Object rows written: `rowsWritten` of every `ctx.storage.sql.exec` cursor (workerd's
 *   SQLite counts table rows and index entries, as billing does), plus one per `setAlarm`, per
 *   class. Read when `exec` returns: SQLite has made a write statement's changes by then.
 * - Time: the milliseconds from each RPC call and each D1 call to its answer, as the caller's
 *   clock saw them (workerd's clock moves only across I/O, which these calls are).
 * - D1: each `batch` or statement run is one call (one round trip); `meta.rows_read` and
 *   `meta.rows_written` of every result. `raw()` is answered from `all()` (which carries `meta`),
 *   mapped to arrays as drizzle maps batch results (src: drizzle-orm/d1/session.js
 *   `d1ToRawMapping`).
 *
 * In local workerd the Worker and its Durable Objects run in one isolate, so one module-level
 * meter sees them all. `GET /__meter` answers the counts; `POST /__meter` sets them to zero.
 * Started with `wrangler dev --config bench/meter/wrangler.toml` (the hub's settings, this entry).
 */
import hub, {
  ClusterObject as HubClusterObject,
  MetricsObject as HubMetricsObject,
  ReplicaSetObject as HubReplicaSetObject,
  SchedulerObject as HubSchedulerObject,
} from "../../src/index.ts";
import type { Env } from "../../src/env.ts";
import type { MeterCounts, ObjectClass } from "./counts.ts";

const perClass = (): Record<ObjectClass, number> => ({ cluster: 0, scheduler: 0, replicaset: 0, metrics: 0 });
const zero = (): MeterCounts => ({
  workerRequests: 0,
  doRequests: perClass(),
  doAlarms: perClass(),
  doRowsWritten: perClass(),
  doWakes: perClass(),
  doMessages: perClass(),
  doRpcMs: perClass(),
  d1Calls: 0,
  d1Ms: 0,
  d1Statements: 0,
  d1RowsRead: 0,
  d1RowsWritten: 0,
});
let meter = zero();
/** Whether to tally each statement (`BENCH_TRACE_SQL=1` among the hub's vars); set on the first request. */
let traceSql = false;

/** Adds one run of `sql` (as `key`) to the per-statement tally, when tracing. */
function tally(key: string, read: number, written: number, bytes = 0): void {
  if (!traceSql) return;
  const all = (meter.statements ??= {});
  const t = (all[key] ??= { runs: 0, read: 0, written: 0, bytes: 0 });
  t.runs += 1;
  t.read += read;
  t.written += written;
  t.bytes += bytes;
}

/** Characters of the string values bound to a statement (what it sends besides its SQL). */
const boundBytes = (values: unknown[]) => values.reduce<number>((n, v) => n + (typeof v === "string" ? v.length : 8), 0);

function addMeta(result: unknown, sql: string, bytes: number): void {
  const meta = (result as { meta?: { rows_read?: number; rows_written?: number } } | null)?.meta;
  meter.d1RowsRead += meta?.rows_read ?? 0;
  meter.d1RowsWritten += meta?.rows_written ?? 0;
  tally(sql, meta?.rows_read ?? 0, meta?.rows_written ?? 0, bytes);
}

/** A D1 prepared statement that counts its runs and their `meta`. */
class MeteredStatement {
  /** @param native the statement itself (what `batch` must be given). */
  constructor(
    readonly native: D1PreparedStatement,
    readonly sql: string,
    readonly bytes = 0,
  ) {}

  bind(...values: unknown[]): MeteredStatement {
    return new MeteredStatement(this.native.bind(...values), this.sql, traceSql ? boundBytes(values) : 0);
  }

  private async counted<T>(run: () => Promise<T>): Promise<T> {
    meter.d1Calls += 1;
    tally(`CALL ${this.sql.replace(/\s+/g, " ").slice(0, 400)}`, 0, 0);
    meter.d1Statements += 1;
    const t0 = Date.now();
    const result = await run();
    meter.d1Ms += Date.now() - t0;
    addMeta(result, this.sql, this.bytes);
    return result;
  }

  all<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    return this.counted(() => this.native.all<T>());
  }

  run<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    return this.counted(() => this.native.run<T>());
  }

  async first<T = unknown>(column?: string): Promise<T | null> {
    const { results } = await this.all<Record<string, unknown>>();
    const row = results[0];
    if (!row) return null;
    return (column === undefined ? row : (row[column] ?? null)) as T | null;
  }

  async raw<T = unknown[]>(options?: { columnNames?: boolean }): Promise<T[]> {
    if (options?.columnNames) {
      // Not used by the hub; counted as a call without its rows.
      meter.d1Calls += 1;
      meter.d1Statements += 1;
      return this.native.raw<T>({ columnNames: true }) as Promise<T[]>;
    }
    const { results } = await this.all<Record<string, unknown>>();
    return results.map((row) => Object.keys(row).map((k) => row[k])) as T[];
  }
}

/** A D1 binding whose statements and batches count what they cost. */
function meteredD1(db: D1Database): D1Database {
  const metered = {
    prepare: (query: string) => new MeteredStatement(db.prepare(query), query),
    async batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
      meter.d1Calls += 1;
      meter.d1Statements += statements.length;
      const natives = (statements as unknown[]).map((s) => (s instanceof MeteredStatement ? s.native : s)) as D1PreparedStatement[];
      const sqls = (statements as unknown[]).map((s) => (s instanceof MeteredStatement ? s : null));
      tally(`CALL batch ${sqls.map((s) => s?.sql.replace(/\s+/g, " ").slice(0, 200) ?? "?").join(" + ")}`, 0, 0);
      const t0 = Date.now();
      const results = await db.batch<T>(natives);
      meter.d1Ms += Date.now() - t0;
      results.forEach((r, i) => addMeta(r, sqls[i]?.sql ?? "?", sqls[i]?.bytes ?? 0));
      return results;
    },
    async exec(query: string): Promise<D1ExecResult> {
      meter.d1Calls += 1;
      meter.d1Statements += 1;
      return db.exec(query);
    },
    withSession: () => {
      throw new Error("the metered hub does not support D1 sessions");
    },
    dump: () => db.dump(),
  };
  return metered as unknown as D1Database;
}

/** A Durable Object namespace whose stubs count each RPC method call as one request of `cls`. */
function meteredNamespace<T extends Rpc.DurableObjectBranded>(ns: DurableObjectNamespace<T>, cls: ObjectClass): DurableObjectNamespace<T> {
  const stub = (s: DurableObjectStub<T>) =>
    new Proxy(s, {
      get(target, prop) {
        if (prop === "then") return undefined;
        const value = Reflect.get(target, prop) as unknown;
        if (typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          meter.doRequests[cls] += 1;
          const t0 = Date.now();
          try {
            return await (Reflect.apply(value as (...a: unknown[]) => unknown, target, args) as Promise<unknown>);
          } finally {
            meter.doRpcMs[cls] += Date.now() - t0;
          }
        };
      },
    });
  return new Proxy(ns, {
    get(target, prop) {
      if (prop === "getByName") return (name: string) => stub(target.getByName(name));
      if (prop === "get") return (id: DurableObjectId, opts?: DurableObjectNamespaceGetDurableObjectOptions) => stub(target.get(id, opts));
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

const meteredEnvs = new WeakMap<Env, Env>();

/** `env` with its D1 and Durable Object bindings metered (one wrapper per original env). */
function metered(env: Env): Env {
  let m = meteredEnvs.get(env);
  if (!m) {
    m = {
      ...env,
      DB: meteredD1(env.DB),
      CLUSTERS: meteredNamespace(env.CLUSTERS, "cluster"),
      SCHEDULER: meteredNamespace(env.SCHEDULER, "scheduler"),
      REPLICASETS: meteredNamespace(env.REPLICASETS, "replicaset"),
      ...(env.METRICS ? { METRICS: meteredNamespace(env.METRICS, "metrics") } : {}),
    };
    meteredEnvs.set(env, m);
  }
  return m;
}

/**
 * Counts the rows the object's SQLite statements write and its `setAlarm` calls. Patches the
 * object's own storage handles before its class's constructor runs (which keeps `ctx.storage.sql`).
 */
function meterStorage(ctx: DurableObjectState, cls: ObjectClass): void {
  const storage = ctx.storage;
  const sql = storage.sql;
  const exec = sql.exec.bind(sql);
  Object.defineProperty(sql, "exec", {
    configurable: true,
    value: (query: string, ...bindings: unknown[]) => {
      const cursor = exec(query, ...bindings);
      // Not the object's own write: the local runtime (miniflare) records an object's name in
      // `__miniflare_do_name` each time it constructs it; Cloudflare has no such table.
      if (!query.includes("__miniflare_do_name")) {
        meter.doRowsWritten[cls] += cursor.rowsWritten;
        tally(`do:${cls}: ${query}`, cursor.rowsRead, cursor.rowsWritten, traceSql ? boundBytes(bindings) : 0);
      }
      return cursor;
    },
  });
  const setAlarm = storage.setAlarm.bind(storage);
  Object.defineProperty(storage, "setAlarm", {
    configurable: true,
    value: (at: number | Date, options?: DurableObjectSetAlarmOptions) => {
      meter.doRowsWritten[cls] += 1;
      return setAlarm(at, options);
    },
  });
}

/** The cluster's Durable Object, metered (the class names are the hub's, so its wrangler settings apply as they are). */
export class ClusterObject extends HubClusterObject {
  constructor(ctx: DurableObjectState, env: Env) {
    meterStorage(ctx, "cluster");
    meter.doWakes.cluster += 1;
    super(ctx, metered(env));
  }

  override async alarm(): Promise<void> {
    meter.doAlarms.cluster += 1;
    return super.alarm();
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    meter.doMessages.cluster += 1;
    return super.webSocketMessage(ws, message);
  }
}

/** The scheduler's Durable Object, metered. */
export class SchedulerObject extends HubSchedulerObject {
  constructor(ctx: DurableObjectState, env: Env) {
    meterStorage(ctx, "scheduler");
    meter.doWakes.scheduler += 1;
    super(ctx, metered(env));
  }

  override async alarm(): Promise<void> {
    meter.doAlarms.scheduler += 1;
    return super.alarm();
  }
}

/** The metrics' Durable Object (the counters `/metrics` serves), metered. */
export class MetricsObject extends HubMetricsObject {
  constructor(ctx: DurableObjectState, env: Env) {
    meterStorage(ctx, "metrics");
    meter.doWakes.metrics += 1;
    super(ctx, metered(env));
  }
}

/** A replica set's Durable Object, metered. */
export class ReplicaSetObject extends HubReplicaSetObject {
  constructor(ctx: DurableObjectState, env: Env) {
    meterStorage(ctx, "replicaset");
    meter.doWakes.replicaset += 1;
    super(ctx, metered(env));
  }

  override async alarm(): Promise<void> {
    meter.doAlarms.replicaset += 1;
    return super.alarm();
  }
}

export default {
  fetch(req: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response> {
    const url = new URL(req.url);
    traceSql = (env as { BENCH_TRACE_SQL?: string }).BENCH_TRACE_SQL === "1";
    if (url.pathname === "/__meter") {
      if (req.method === "POST") meter = zero();
      return Response.json(meter);
    }
    // `npm start`'s supervisor probes /livez/ping every 2 s (scripts/start.mjs): not part of any operation.
    if (url.pathname !== "/livez/ping") meter.workerRequests += 1;
    return hub.fetch(req, metered(env), ctx);
  },
} satisfies ExportedHandler<Env>;
