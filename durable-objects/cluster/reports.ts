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
 *   sequence held, so an acknowledged status is never overwritten by an older one.
 *
 * The sequence committed is kept in the object's SQLite (`report_sequences`, one row per object
 * reported with a sequence, written after the commit succeeded, in the same queue turn: nothing
 * else for the object runs between the commit and the row). Reports for different objects still
 * run concurrently (their D1 commits may share a group commit batch, src/k8s/group-commit.ts).
 */
import type { KubeObject } from "../../src/k8s/meta.ts";

/** The table of the sequences committed (created with the object's schema, again after a deleteAll). */
export const REPORTS_SCHEMA = "CREATE TABLE IF NOT EXISTS report_sequences (k TEXT PRIMARY KEY, uid TEXT NOT NULL, seq INTEGER NOT NULL) WITHOUT ROWID;";

/** What a report run here answers: the object as stored (null: nothing stored), or `stale` with the sequence held. */
export type ReportOutcome = { stale: false; object: KubeObject | null } | { stale: true; sequence: number };

/** The reports of one cluster object; see the module comment. */
export class Reports {
  /** The tail of each object's queue, by key; removed once it is the last one and settled. */
  private readonly tails = new Map<string, Promise<unknown>>();

  constructor(private readonly sql: SqlStorage) {}

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
    const run = before.then(async (): Promise<ReportOutcome> => {
      if (sequence !== undefined) {
        const held = this.held(key, uid);
        if (held !== null && held >= sequence) return { stale: true, sequence: held };
      }
      const object = await commit();
      if (forget) this.sql.exec("DELETE FROM report_sequences WHERE k = ?", key);
      else if (sequence !== undefined)
        this.sql.exec(
          "INSERT INTO report_sequences (k, uid, seq) VALUES (?, ?, ?) ON CONFLICT(k) DO UPDATE SET uid = excluded.uid, seq = excluded.seq",
          key,
          uid,
          sequence,
        );
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
    const row = this.sql.exec<{ uid: string; seq: number }>("SELECT uid, seq FROM report_sequences WHERE k = ?", key).toArray()[0];
    return row && row.uid === uid ? row.seq : null;
  }
}
