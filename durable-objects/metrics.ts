/**
 * MetricsObject: the one Durable Object (named "metrics") that keeps the hub's counters and
 * histograms for `/metrics` (src/metrics/families.ts `COUNTED`), so that they survive isolate
 * restarts. Isolates send it their batches (src/metrics/recorder.ts: at most one a second per
 * isolate, each series once).
 *
 * Storage is billed by the row written, and a batch after one change (a heartbeat that changed the
 * cluster's status, a Placement's update) touches about five series: rather than one row per
 * series and batch, a batch is appended as one row (`batches`), and every {@link FOLD_BATCHES}
 * batches they are folded into the totals, one row per series (`series`; a histogram's buckets,
 * sum and count in one row), in one transaction: about two rows written per batch (its insert
 * and, later, its delete) and each series' row once per fold. A scrape reads the totals and the
 * batches not folded yet, and adds them up.
 *
 * At most {@link MAX_SERIES} series are kept: the families' labels are bounded (verbs, served
 * resources, response codes, results), so more means a bug; a series past the limit is dropped
 * and logged at the fold rather than growing storage.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../src/env.ts";
import { addValues, type Cell } from "../src/metrics/exposition.ts";
import type { BatchCell } from "../src/metrics/recorder.ts";

/** The most series (rows of `series`) the object keeps. */
export const MAX_SERIES = 20_000;

/** How many appended batches are folded into the totals at once. */
export const FOLD_BATCHES = 32;

/** Whether `batch` is a well-formed batch: cells of a family name, a label part and finite numbers. */
function validCells(batch: unknown): BatchCell[] {
  if (!Array.isArray(batch)) return [];
  return batch.filter(
    (c): c is BatchCell =>
      Array.isArray(c) &&
      typeof c[0] === "string" &&
      typeof c[1] === "string" &&
      Array.isArray(c[2]) &&
      c[2].every((v: unknown) => typeof v === "number" && Number.isFinite(v)),
  );
}

/** The metrics Durable Object; see the module comment. */
export class MetricsObject extends DurableObject<Env> {
  /** Rows in `batches` (appended, not folded yet). */
  private appended: number;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const sql = ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS series (family TEXT NOT NULL, labels TEXT NOT NULL, cell TEXT NOT NULL, PRIMARY KEY (family, labels)) WITHOUT ROWID");
    sql.exec("CREATE TABLE IF NOT EXISTS batches (id INTEGER PRIMARY KEY, cells TEXT NOT NULL)");
    this.appended = sql.exec<{ n: number }>("SELECT count(*) AS n FROM batches").one().n;
  }

  /**
   * Adds a batch of cells (family name, label part, values: src/metrics/exposition.ts `Cell`):
   * appended as one row; the appended batches are folded into the totals once there are
   * {@link FOLD_BATCHES}. Malformed cells are left out.
   */
  add(batch: BatchCell[]): void {
    const cells = validCells(batch);
    if (cells.length === 0) return;
    this.ctx.storage.transactionSync(() => {
      this.ctx.storage.sql.exec("INSERT INTO batches (cells) VALUES (?)", JSON.stringify(cells));
      this.appended++;
      if (this.appended >= FOLD_BATCHES) this.fold();
    });
  }

  /**
   * Folds the appended batches into the totals (one row per series touched) and deletes them.
   * Cells of a series not kept yet are added while fewer than {@link MAX_SERIES} are kept.
   */
  private fold(): void {
    const sql = this.ctx.storage.sql;
    const sums = this.appendedSums();
    let kept: number | null = null;
    for (const [key, [family, labels, values]] of sums) {
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
        console.error(`metrics: series ${key} dropped: ${MAX_SERIES} series kept already`);
        continue;
      }
      sql.exec("INSERT INTO series (family, labels, cell) VALUES (?, ?, ?)", family, labels, JSON.stringify(values));
      kept++;
    }
    sql.exec("DELETE FROM batches");
    this.appended = 0;
  }

  /** The appended batches added up, by `family + labels`. */
  private appendedSums(): Map<string, BatchCell> {
    const sums = new Map<string, BatchCell>();
    for (const { cells } of this.ctx.storage.sql.exec<{ cells: string }>("SELECT cells FROM batches ORDER BY id")) {
      for (const [family, labels, values] of JSON.parse(cells) as BatchCell[]) {
        const key = family + labels;
        const sum = sums.get(key);
        if (sum) addValues(sum[2], values);
        else sums.set(key, [family, labels, [...values]]);
      }
    }
    return sums;
  }

  /** Every series: the stored totals with the batches not folded yet added (each series once). */
  series(): Cell[] {
    const out = new Map<string, Cell>();
    for (const r of this.ctx.storage.sql.exec<{ family: string; labels: string; cell: string }>("SELECT family, labels, cell FROM series")) {
      out.set(r.family + r.labels, { family: r.family, labels: r.labels, values: JSON.parse(r.cell) as number[] });
    }
    for (const [key, [family, labels, values]] of this.appendedSums()) {
      const cell = out.get(key);
      if (cell) addValues(cell.values, values);
      else if (out.size < MAX_SERIES) out.set(key, { family, labels, values });
    }
    return [...out.values()];
  }
}
