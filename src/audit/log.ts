/**
 * The audit log's storage in D1 (table `audit_events`, migrations/0009_audit_events.sql): append,
 * retention, and the reads behind the AuditEvents API (src/audit/routes.ts).
 *
 * Why an append-only log beside the store and not API objects through src/store: an audit
 * record is not an object anyone creates, updates or deletes through the API (the API serves only
 * list and watch), it records the write path rather than taking part in it, and it must never
 * fail, delay or re-enter the request it records. Going through the store would give each
 * recorded write a second write on the global resourceVersion counter, an `events` row and an
 * outbox row, and would audit the audit (kube-apiserver likewise hands its events to a log or
 * webhook backend, never to etcd). So a record is one INSERT, in the batch of the write it records
 * when that write commits (src/store/types.ts `CommitAudit`), else run after the response
 * (`ctx.waitUntil`), with its own sequence (`seq`, the AuditEvents' resourceVersion), as the
 * `events` change log lives beside `objects` (src/store/d1/objects.ts).
 *
 * Retention: an insert also deletes, in the same D1 batch, at most
 * {@link RETENTION_DELETE_BATCH} rows received before now minus `FLOTILLA_AUDIT_RETENTION_DAYS`
 * (default {@link DEFAULT_AUDIT_RETENTION_DAYS}), found through the `received_at` index, when it
 * is the isolate's first in {@link AUDIT_EXPIRY_INTERVAL_MS} or its
 * {@link AUDIT_EXPIRY_EVERY_APPENDS}th since its last such delete ({@link auditLimits}): expired
 * rows go on write, at least twice as fast as the isolate's rows come in, with no timer, no
 * per-heartbeat cost and no scan of the table, and a burst of writes (a `kubectl apply` of
 * hundreds of objects) pays the delete once in 50 records, not with each. The retention is our
 * own policy (kube-apiserver's log backend rotates files by `--audit-log-maxage`), not an
 * upstream field's.
 */
import { badRequest } from "../k8s/errors.ts";
import type { Env } from "../env.ts";
import { storageOf, type AuditAppendLimits, type AuditRow } from "../store/storage.ts";
import type { AuditEvent } from "./event.ts";

/** Days an audit record is kept when `FLOTILLA_AUDIT_RETENTION_DAYS` is unset or invalid. */
export const DEFAULT_AUDIT_RETENTION_DAYS = 30;
/** Most expired rows one insert deletes (the `received_at` index finds them; no scan). */
export const RETENTION_DELETE_BATCH = 100;
/** An isolate's append deletes expired rows when its last such delete is this many milliseconds old (a minute) or more. */
export const AUDIT_EXPIRY_INTERVAL_MS = 60_000;
/**
 * An isolate's append deletes expired rows when it is this many appends after its last such
 * delete, however soon: with {@link RETENTION_DELETE_BATCH} (100) a delete, an isolate can delete
 * twice as many expired rows as it appends.
 */
export const AUDIT_EXPIRY_EVERY_APPENDS = 50;
/**
 * Most failed authentications (401) recorded in any minute (by the time they were received):
 * anyone may cause one, so their records are bounded (about 86,000 a day at most).
 */
export const AUTH_FAILURE_RECORDS_PER_MINUTE = 60;
/** Rows read per query when a list has no limit, or per watch poll. */
export const AUDIT_READ_CHUNK = 500;

const DAY_MS = 86_400_000;

/**
 * The retention, in days, from `FLOTILLA_AUDIT_RETENTION_DAYS`: a positive number (fractions
 * allowed); unset, empty or anything else is {@link DEFAULT_AUDIT_RETENTION_DAYS}.
 */
export function auditRetentionDays(value: string | undefined): number {
  const days = value === undefined || value.trim() === "" ? NaN : Number(value);
  return Number.isFinite(days) && days > 0 ? days : DEFAULT_AUDIT_RETENTION_DAYS;
}

/**
 * Appends `event` (a failed authentication only while fewer than
 * {@link AUTH_FAILURE_RECORDS_PER_MINUTE} were recorded in the minute before it) and, when
 * {@link auditLimits} says the isolate's delete is due, deletes up to
 * {@link RETENTION_DELETE_BATCH} records received more than `retentionDays` days before `now`
 * (epoch milliseconds), in one D1 batch (src/store/d1/audit-log.ts).
 * @throws errors of D1 (the caller, src/audit/middleware.ts, logs them; a request never fails for them)
 */
export async function appendAuditEvent(env: Env, event: AuditEvent, now: number, retentionDays: number): Promise<void> {
  // A failed authentication is anyone's to cause: at most AUTH_FAILURE_RECORDS_PER_MINUTE are
  // kept per minute, so strangers cannot grow the hub's storage at will (the rest are counted by
  // the failed-authentication limiter and answered all the same).
  await storageOf(env).auditLog.append(auditRowOf(event), auditLimits(now, retentionDays));
}

/** The stored row of `event`: its Event as JSON and the columns field selectors read, copied out. */
export function auditRowOf(event: AuditEvent): AuditRow {
  const ref = event.objectRef ?? {};
  return {
    auditId: event.auditID,
    receivedAt: Date.parse(event.requestReceivedTimestamp),
    username: event.user.username ?? "",
    verb: event.verb,
    resource: ref.resource ?? "",
    namespace: ref.namespace ?? "",
    code: event.responseStatus.code,
    body: JSON.stringify(event),
  };
}

/** When this isolate's append last deleted expired records (epoch milliseconds; none yet: undefined), and its appends since. */
const expiry: { lastAt: number | undefined; appendsSince: number } = { lastAt: undefined, appendsSince: 0 };

/**
 * How an append at `now` (epoch milliseconds, the injected clock) bounds the log: failed
 * authentications are kept under {@link AUTH_FAILURE_RECORDS_PER_MINUTE}; and when the isolate's
 * retention delete is due, `expiredBefore` (the records older than `retentionDays` go,
 * {@link RETENTION_DELETE_BATCH} at most). It is due at the isolate's first append, then at the
 * first append {@link AUDIT_EXPIRY_INTERVAL_MS} or more after the last delete (or before it: a
 * clock set back) and at the {@link AUDIT_EXPIRY_EVERY_APPENDS}th append since it. Each call
 * counts as an append (call it once per record to be written); a delete decided for a write
 * that then does not commit is not made up for before the next one due.
 */
export function auditLimits(now: number, retentionDays: number): AuditAppendLimits {
  const limits: AuditAppendLimits = { deleteBatch: RETENTION_DELETE_BATCH, unauthorizedPerMinute: AUTH_FAILURE_RECORDS_PER_MINUTE };
  expiry.appendsSince++;
  const last = expiry.lastAt;
  if (last !== undefined && now >= last && now - last < AUDIT_EXPIRY_INTERVAL_MS && expiry.appendsSince < AUDIT_EXPIRY_EVERY_APPENDS) return limits;
  expiry.lastAt = now;
  expiry.appendsSince = 0;
  return { ...limits, expiredBefore: now - retentionDays * DAY_MS };
}

/**
 * Replaces the stored record of `event`'s audit ID with `event`: a write whose record was
 * committed with it (src/store/types.ts `CommitAudit`) but whose answer turned out otherwise after
 * the commit (a failure of what follows it) is recorded as answered.
 * @throws errors of D1 (the caller logs them)
 */
export async function replaceAuditEvent(env: Env, event: AuditEvent): Promise<void> {
  await storageOf(env).auditLog.replace(auditRowOf(event));
}

/** One condition of a field selector on the audit log, on a copied-out column. */
export interface AuditCondition {
  column: "username" | "verb" | "resource" | "namespace" | "received_at";
  op: "=" | "!=" | ">=" | "<";
  value: string | number;
}

/**
 * The fields an AuditEvents field selector may name, each with the column it reads:
 * `user.username`, `verb`, `objectRef.resource`, `objectRef.namespace` (`=`, `==`, `!=`) and
 * `requestReceivedTimestamp` (`>=` and `<` with an RFC 3339 time: a time range), plus
 * `metadata.name` (the audit ID, `=`/`!=`).
 */
const FIELD_COLUMNS: Record<string, AuditCondition["column"] | "audit_id"> = {
  "user.username": "username",
  verb: "verb",
  "objectRef.resource": "resource",
  "objectRef.namespace": "namespace",
  requestReceivedTimestamp: "received_at",
  "metadata.name": "audit_id",
};

/** A parsed selector: conditions on columns (`audit_id` included). */
export type AuditSelector = { column: AuditCondition["column"] | "audit_id"; op: AuditCondition["op"]; value: string | number }[];

/**
 * Parses an AuditEvents `fieldSelector`: comma-separated `field=value`, `field==value`,
 * `field!=value` on the fields of {@link FIELD_COLUMNS}, and `requestReceivedTimestamp>=TIME` /
 * `requestReceivedTimestamp<TIME` (TIME an RFC 3339 date-time, e.g. `2026-11-26T10:00:00Z`).
 * @throws ApiError 400 BadRequest (field `fieldSelector`) for an unsupported field or operator, or
 *   a time that does not parse, as src/api/resource/selectors.ts `selectorOf` answers an unsupported field
 */
export function parseAuditFieldSelector(selector: string | undefined): AuditSelector {
  const out: AuditSelector = [];
  if (!selector) return out;
  for (const part of selector.split(",")) {
    const m = /^\s*([^!=<>\s]+)\s*(==|=|!=|>=|<)\s*(.*?)\s*$/.exec(part);
    const column = m ? FIELD_COLUMNS[m[1]!] : undefined;
    if (!m || !column) throw badRequest(`field label not supported: ${part.split(/[!=<>]/)[0]!.trim()}`, "fieldSelector");
    const op = m[2] === "==" ? "=" : (m[2] as AuditCondition["op"]);
    if (column === "received_at") {
      if (op !== ">=" && op !== "<") throw badRequest(`fieldSelector: requestReceivedTimestamp takes >= and < (a time range), not ${m[2]}`, "fieldSelector");
      const t = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(m[3]!) ? Date.parse(m[3]!) : NaN;
      if (Number.isNaN(t))
        throw badRequest(
          `fieldSelector: requestReceivedTimestamp: invalid time ${JSON.stringify(m[3])}: want RFC 3339, e.g. 2026-11-26T10:00:00Z`,
          "fieldSelector",
        );
      out.push({ column, op, value: t });
    } else {
      if (op !== "=" && op !== "!=") throw badRequest(`fieldSelector: ${m[1]} takes =, == and !=, not ${m[2]}`, "fieldSelector");
      out.push({ column, op, value: m[3]! });
    }
  }
  return out;
}

/** A stored record: its sequence number and the Event. */
export interface AuditRecord {
  seq: number;
  event: AuditEvent;
}

/**
 * Reads up to `limit` records after sequence `afterSeq`, oldest first, that pass `selector`.
 * @returns the records and `latest`, the highest sequence stored (0 for an empty log)
 * @throws errors of D1
 */
export async function readAuditEvents(env: Env, selector: AuditSelector, afterSeq: number, limit: number): Promise<{ records: AuditRecord[]; latest: number }> {
  const { rows, latest } = await storageOf(env).auditLog.read(selector, afterSeq, limit);
  return { records: rows.map((r) => ({ seq: r.seq, event: JSON.parse(r.body) as AuditEvent })), latest };
}

/** The lowest sequence number the log keeps (0 for an empty log). @throws errors of D1 */
export async function oldestAuditSeq(env: Env): Promise<number> {
  return storageOf(env).auditLog.oldest();
}
