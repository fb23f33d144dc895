/**
 * What the metered hub (bench/meter/worker.ts) counts, shared with the benchmark that reads it
 * (bench/costs.ts). Types only: no Worker or Node API.
 */

/** The four Durable Object classes, as the meter names them. */
export type ObjectClass = "cluster" | "scheduler" | "replicaset" | "metrics";

/** Counts of billed units since the last reset (`GET /__meter`). */
export interface MeterCounts {
  workerRequests: number;
  doRequests: Record<ObjectClass, number>;
  doAlarms: Record<ObjectClass, number>;
  doRowsWritten: Record<ObjectClass, number>;
  /** Objects constructed (a first load, or a wake after eviction or hibernation), per class. */
  doWakes: Record<ObjectClass, number>;
  /** WebSocket messages delivered to an object (`webSocketMessage`; billed as requests at 20:1), per class. An auto-answered ping is not one. */
  doMessages: Record<ObjectClass, number>;
  /** Milliseconds from each RPC call to its answer, summed, as the caller's clock saw them (workerd's clock moves on I/O). */
  doRpcMs: Record<ObjectClass, number>;
  d1Calls: number;
  /** Milliseconds from each D1 call to its result, summed (as `doRpcMs`). */
  d1Ms: number;
  d1Statements: number;
  d1RowsRead: number;
  d1RowsWritten: number;
  /**
   * Per statement (D1 SQL text, or `do:<class>:` and the object's SQL text): runs, rows read and
   * rows written and characters of the values bound to it (strings by length, others 8) since the last reset. Only with `BENCH_TRACE_SQL=1` in the hub's environment.
   */
  statements?: Record<string, { runs: number; read: number; written: number; bytes: number }>;
}
