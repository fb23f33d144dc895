/**
 * MetricsObject: the one Durable Object (named "metrics") that keeps the hub's counters and
 * histograms for `/metrics` (src/metrics/families.ts `COUNTED`), so that they survive isolate
 * restarts. Isolates send it their batches (src/metrics/recorder.ts: at most one a second per
 * isolate, each series once), which it adds to its totals in its SQLite, one row per series
 * (family and labels; a histogram's buckets, sum and count in one row), in one transaction per
 * batch. A scrape reads every row.
 *
 * At most {@link MAX_SERIES} series are kept: the families' labels are bounded (verbs, served
 * resources, response codes, results), so more means a bug; a series past the limit is dropped
 * and logged rather than growing storage.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../src/env.ts";
import { addValues, type Cell } from "../src/metrics/exposition.ts";
import type { BatchCell } from "../src/metrics/recorder.ts";

/** The most series (rows) the object keeps. */
export const MAX_SERIES = 20_000;

/** The metrics Durable Object; see the module comment. */
export class MetricsObject extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS series (family TEXT NOT NULL, labels TEXT NOT NULL, cell TEXT NOT NULL, PRIMARY KEY (family, labels)) WITHOUT ROWID",
    );
  }

  /**
   * Adds a batch of cells (family name, label part, values: src/metrics/exposition.ts `Cell`) to
   * the stored totals, in one transaction. Cells of a series it does not keep yet are added while
   * fewer than {@link MAX_SERIES} are kept.
   */
  add(batch: BatchCell[]): void {
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      let kept: number | null = null;
      for (const [family, labels, values] of batch) {
        if (!Array.isArray(values) || !values.every((v) => typeof v === "number" && Number.isFinite(v))) continue;
        const row = sql.exec<{ cell: string }>("SELECT cell FROM series WHERE family = ? AND labels = ?", family, labels).toArray()[0];
        if (row) {
          sql.exec(
            "UPDATE series SET cell = ? WHERE family = ? AND labels = ?",
            JSON.stringify(addValues(JSON.parse(row.cell) as number[], values)),
            family,
            labels,
          );
          continue;
        }
        kept ??= sql.exec<{ n: number }>("SELECT count(*) AS n FROM series").one().n;
        if (kept >= MAX_SERIES) {
          console.error(`metrics: series ${family}${labels} dropped: ${MAX_SERIES} series kept already`);
          continue;
        }
        sql.exec("INSERT INTO series (family, labels, cell) VALUES (?, ?, ?)", family, labels, JSON.stringify(values));
        kept++;
      }
    });
  }

  /** Every stored series. */
  series(): Cell[] {
    return this.ctx.storage.sql
      .exec<{ family: string; labels: string; cell: string }>("SELECT family, labels, cell FROM series")
      .toArray()
      .map((r) => ({ family: r.family, labels: r.labels, values: JSON.parse(r.cell) as number[] }));
  }
}
