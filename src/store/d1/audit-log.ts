/**
 * The audit log's statements in D1 (table `audit_events`, migrations/0009_audit_events.sql):
 * append with retention, reads after a sequence number, the oldest sequence kept. What a record
 * holds, why the log sits beside the objects and its policies (retention, the bound on failed
 * authentications) are src/audit/log.ts's; this module only speaks SQL.
 */

import { sql, type SQL } from "drizzle-orm";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import type { Renderable } from "../../db/compiled.ts";
import { guardedShape, type GuardedBinder } from "./objects.ts";

/** One audit record as stored: the columns a field selector reads, and the Event's JSON (`body`). */
export interface AuditRow {
  auditId: string;
  /** When the request was received, epoch milliseconds. */
  receivedAt: number;
  username: string;
  verb: string;
  resource: string;
  namespace: string;
  /** The response's HTTP status code. */
  code: number;
  /** The audit Event, as JSON text. */
  body: string;
}

/** How one append bounds the log (src/audit/log.ts sets them). */
export interface AuditAppendLimits {
  /**
   * Rows received before this time (epoch milliseconds) are expired: up to `deleteBatch` of them
   * go with the insert. Absent: the insert deletes nothing (src/audit/log.ts `auditLimits` decides when).
   */
  expiredBefore?: number;
  /** Most expired rows one append deletes (the `received_at` index finds them; no scan). */
  deleteBatch: number;
  /** For a row with code 401: inserted only while fewer 401 rows were received in the 60 s (60,000 ms) before it. */
  unauthorizedPerMinute: number;
}

/** One condition on a copied-out column of the log. */
export interface AuditColumnCondition {
  column: "audit_id" | "username" | "verb" | "resource" | "namespace" | "received_at";
  op: "=" | "!=" | ">=" | "<";
  value: string | number;
}

const COLUMNS = "audit_id, received_at, username, verb, resource, namespace, code, body";
const p = sql.placeholder;
const dialect = new SQLiteSyncDialect();
const raw = (statement: SQL): Renderable => ({ toSQL: () => dialect.sqlToQuery(statement) });
const ALLOWED_COLUMNS = new Set<AuditColumnCondition["column"]>(["audit_id", "username", "verb", "resource", "namespace", "received_at"]);
const ALLOWED_OPS = new Set<AuditColumnCondition["op"]>(["=", "!=", ">=", "<"]);

/**
 * A write's audit row inserted in the write's own batch, under its guard (a {@link guardedShape}):
 * the record is stored exactly when the write commits.
 */
const auditInsertShape = guardedShape((cond) =>
  raw(
    sql`INSERT INTO audit_events (${sql.raw(COLUMNS)}) SELECT ${p("auditId")}, ${p("auditReceivedAt")}, ${p("auditUsername")}, ${p("auditVerb")}, ${p("auditResource")}, ${p("auditNamespace")}, ${p("auditCode")}, ${p("auditBody")} WHERE ${cond}`,
  ),
);
/** The retention delete of {@link appendAuditRow}, under a write's guard. */
const auditExpiryShape = guardedShape((cond) =>
  raw(
    sql`DELETE FROM audit_events WHERE seq IN (SELECT seq FROM audit_events WHERE received_at < ${p("auditExpiredBefore")} ORDER BY received_at LIMIT ${p("auditDeleteBatch")}) AND ${cond}`,
  ),
);

/**
 * The statements that store `row` (never a 401's: those are bounded per minute, and no write
 * commits for them) with the retention of `limits` (the delete only with `expiredBefore`), as
 * {@link appendAuditRow} does, for a commit's own batch (`CommitExtras.extra`): bound by the
 * commit's `guarded`, they take effect only when the write does, so a write and its audit record
 * commit together or not at all.
 */
export function auditRowStatements(guarded: GuardedBinder, row: AuditRow, limits: AuditAppendLimits): D1PreparedStatement[] {
  const insert = guarded(auditInsertShape, {
    auditId: row.auditId,
    auditReceivedAt: row.receivedAt,
    auditUsername: row.username,
    auditVerb: row.verb,
    auditResource: row.resource,
    auditNamespace: row.namespace,
    auditCode: row.code,
    auditBody: row.body,
  });
  if (limits.expiredBefore === undefined) return [insert];
  return [insert, guarded(auditExpiryShape, { auditExpiredBefore: limits.expiredBefore, auditDeleteBatch: limits.deleteBatch })];
}

/**
 * Replaces the code and body of the row of audit ID `auditId` (a write recorded in its own batch
 * whose answer turned out otherwise after its commit).
 * @throws errors of D1
 */
export async function replaceAuditRow(d1: D1Database, row: AuditRow): Promise<void> {
  await d1.prepare("UPDATE audit_events SET code = ?, body = ? WHERE audit_id = ?").bind(row.code, row.body, row.auditId).run();
}

/**
 * Inserts `row` (a 401 only under `limits.unauthorizedPerMinute`) and, given
 * `limits.expiredBefore`, deletes up to `limits.deleteBatch` expired rows, in one D1 batch.
 * @throws errors of D1
 */
export async function appendAuditRow(d1: D1Database, row: AuditRow, limits: AuditAppendLimits): Promise<void> {
  const values = [row.auditId, row.receivedAt, row.username, row.verb, row.resource, row.namespace, row.code, row.body];
  const insert =
    row.code === 401
      ? d1
          .prepare(
            `INSERT INTO audit_events (${COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE (SELECT count(*) FROM audit_events WHERE received_at >= ? AND code = 401) < ?`,
          )
          .bind(...values, row.receivedAt - 60_000, limits.unauthorizedPerMinute)
      : d1.prepare(`INSERT INTO audit_events (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`).bind(...values);
  if (limits.expiredBefore === undefined) {
    await insert.run();
    return;
  }
  await d1.batch([
    insert,
    d1
      .prepare("DELETE FROM audit_events WHERE seq IN (SELECT seq FROM audit_events WHERE received_at < ? ORDER BY received_at LIMIT ?)")
      .bind(limits.expiredBefore, limits.deleteBatch),
  ]);
}

/**
 * Up to `limit` rows after sequence `afterSeq`, oldest first, that meet every condition, and
 * `latest`, the highest sequence stored (0 for an empty log), in one D1 batch.
 * @throws Error for a column or operator not in {@link AuditColumnCondition} (never built from user text); errors of D1
 */
export async function readAuditRows(
  d1: D1Database,
  conditions: readonly AuditColumnCondition[],
  afterSeq: number,
  limit: number,
): Promise<{ rows: { seq: number; body: string }[]; latest: number }> {
  for (const c of conditions) if (!ALLOWED_COLUMNS.has(c.column) || !ALLOWED_OPS.has(c.op)) throw new Error(`audit log: no condition ${c.column} ${c.op}`);
  const where = ["seq > ?", ...conditions.map((c) => `${c.column} ${c.op} ?`)];
  const values = [afterSeq, ...conditions.map((c) => c.value)];
  const [rows, latest] = await d1.batch<{ seq: number; body: string }>([
    d1.prepare(`SELECT seq, body FROM audit_events WHERE ${where.join(" AND ")} ORDER BY seq LIMIT ?`).bind(...values, limit),
    d1.prepare("SELECT coalesce(max(seq), 0) AS seq, '' AS body FROM audit_events"),
  ]);
  return { rows: rows!.results, latest: latest!.results[0]?.seq ?? 0 };
}

/** The lowest sequence number kept (0 for an empty log). @throws errors of D1 */
export async function oldestAuditSeq(d1: D1Database): Promise<number> {
  const row = await d1.prepare("SELECT coalesce(min(seq), 0) AS seq FROM audit_events").first<{ seq: number }>();
  return row?.seq ?? 0;
}
