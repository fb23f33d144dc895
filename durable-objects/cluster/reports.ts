/**
 * The order of an agent's reports (docs/agent-protocol.md "Report order"): every work status
 * report and policy compliance report of the cluster, over the channel or over HTTP, is run here,
 * in the cluster's object, so that
 * - reports for one object (a work, a replicated Policy) run one after the other, in the order
 *   they reached the object: a frame received after another on the channel (the frames of one
 *   socket are otherwise handled concurrently) commits after it, and never on an older read;
 * - a report that carries a `sequence` is committed only when it is greater than the sequence
 *   last committed for the same object and uid; an older or equal one (a copy sent again after a
 *   reconnect, an HTTP request that lingered) is acknowledged as stale, nothing written, with the
 *   sequence held, so an acknowledged status is never overwritten by an older one;
 * - a report whose turn comes while a newer one for the same object and uid already waits behind
 *   it (sent later with a greater sequence, or both without one and received later) is
 *   acknowledged without being written (resourceVersion ""): the newer one carries the newer
 *   state, so reports pipelined for one object cost about two commits, not one each.
 *
 * The sequence committed is kept in the object's SQLite (`report_sequences`, one row per object
 * reported with a sequence, written after the commit succeeded, in the same queue turn: nothing
 * else for the object runs between the commit and the row). The table is created at the first
 * sequence to keep, not with the object's schema: an object whose agent never sent one (an older
 * agent, the HTTP-only tools) never has it, and waking an object creates nothing. Reports for different objects still
 * run concurrently (their D1 commits may share a group commit batch, src/store/group-commit.ts).
 */
import type { KubeObject } from "../../src/k8s/meta.ts";

/** The table of the sequences committed (created at the first sequence to keep, again after a deleteAll). */
export const REPORTS_SCHEMA = "CREATE TABLE IF NOT EXISTS report_sequences (k TEXT PRIMARY KEY, uid TEXT NOT NULL, seq INTEGER NOT NULL) WITHOUT ROWID;";

/** What a report run here answers: the object as stored (null: nothing stored), or `stale` with the sequence held. */
export type ReportOutcome = { stale: false; object: KubeObject | null } | { stale: true; sequence: number };

/** The reports of one cluster object; see the module comment. */
export class Reports {
  /** The tail of each object's queue, by key; removed once it is the last one and settled. */
  private readonly tails = new Map<string, Promise<unknown>>();
  /** The reports queued for each key and not yet started, in arrival order. */
  private readonly waiting = new Map<string, Waiting[]>();
  /** Whether `report_sequences` exists: undefined until first asked (one read of the schema). */
  private exists: boolean | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** The object's storage was emptied (`deleteAll`): the table is gone, and created again when needed. */
  reset(): void {
    this.exists = false;
  }

  /** Whether the table exists (read from the schema once per object instance). */
  private hasTable(): boolean {
    this.exists ??= this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'report_sequences'").toArray().length > 0;
    return this.exists;
  }

  /**
   * Runs `commit` for the report of object `key` (`work/<name>` or `policy/<name>`) of `uid` after
   * every report of the same key that reached the object before it, unless `sequence` (when
   * given) is not greater than the one last committed for the key and uid: it is then answered
   * stale without running. After a commit that succeeded, `sequence` becomes the key's;
   * `forget` (a work released: it goes) removes the key's row instead.
   * @throws what `commit` throws (nothing is recorded then)
   */
  run(key: string, uid: string, sequence: number | undefined, commit: () => Promise<KubeObject | null>, forget = false): Promise<ReportOutcome> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const me: Waiting = { uid, sequence, forget };
    const queued = this.waiting.get(key) ?? [];
    queued.push(me);
    this.waiting.set(key, queued);
    const run = before.then(async (): Promise<ReportOutcome> => {
      // The queue runs in arrival order: this report is the first one waiting; what stays, came later.
      queued.splice(0, queued.indexOf(me) + 1);
      if (queued.length === 0 && this.waiting.get(key) === queued) this.waiting.delete(key);
      if (queued.some((later) => supersedes(later, me))) return { stale: false, object: null };
      if (sequence !== undefined) {
        const held = this.held(key, uid);
        if (held !== null && held >= sequence) return { stale: true, sequence: held };
      }
      const object = await commit();
      if (forget) {
        if (this.hasTable()) this.sql.exec("DELETE FROM report_sequences WHERE k = ?", key);
      } else if (sequence !== undefined) {
        if (!this.hasTable()) {
          this.sql.exec(REPORTS_SCHEMA);
          this.exists = true;
        }
        this.sql.exec(
          "INSERT INTO report_sequences (k, uid, seq) VALUES (?, ?, ?) ON CONFLICT(k) DO UPDATE SET uid = excluded.uid, seq = excluded.seq",
          key,
          uid,
          sequence,
        );
      }
      return { stale: false, object };
    });
    const tail = run.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return run;
  }

  /** The sequence last committed for `key` and `uid`, or null (none, or one of another uid: the object was replaced). */
  private held(key: string, uid: string): number | null {
    if (!this.hasTable()) return null;
    const row = this.sql.exec<{ uid: string; seq: number }>("SELECT uid, seq FROM report_sequences WHERE k = ?", key).toArray()[0];
    return row && row.uid === uid ? row.seq : null;
  }
}

/** A report waiting for its turn. */
interface Waiting {
  uid: string;
  sequence: number | undefined;
  forget: boolean;
}

/** Whether `later` (received after `report`) makes `report` needless: the same uid, newer by sequence, or both without one. */
function supersedes(later: Waiting, report: Waiting): boolean {
  if (later.uid !== report.uid || later.forget || report.forget) return false;
  if (report.sequence === undefined) return later.sequence === undefined;
  return later.sequence !== undefined && later.sequence > report.sequence;
}
