/**
 * What the migrations health check compares (src/health/routes.ts `migrations`): every table and
 * column of the code's drizzle schema (src/db/schema.ts) against what D1 has.
 */
import { getTableConfig, type SQLiteTable } from "drizzle-orm/sqlite-core";
import * as schema from "../../db/schema.ts";

/** Every `table -> columns` the code's drizzle schema (src/db/schema.ts) declares. */
function schemaColumns(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const value of Object.values(schema)) {
    let config;
    try {
      config = getTableConfig(value as SQLiteTable);
    } catch {
      continue;
    }
    if (!config?.name || !Array.isArray(config.columns)) continue;
    out.set(
      config.name,
      config.columns.map((c) => c.name),
    );
  }
  return out;
}

/**
 * The schema's columns D1 lacks, as `table.column`, in the schema's order (empty when every
 * migration the code needs was applied): one batch, a statement per table (D1 refuses
 * pragma_table_info joined to sqlite_master, and compound SELECTs of more than a few terms).
 * @throws errors of D1
 */
export async function missingColumns(d1: D1Database): Promise<string[]> {
  const want = schemaColumns();
  const answers = await d1.batch<{ t: string; c: string }>(
    [...want.keys()].map((t) => d1.prepare("SELECT ?1 AS t, name AS c FROM pragma_table_info(?1)").bind(t)),
  );
  const have = new Set(answers.flatMap((a) => a.results).map((r) => `${r.t}.${r.c}`));
  const missing: string[] = [];
  for (const [table, columns] of want) for (const c of columns) if (!have.has(`${table}.${c}`)) missing.push(`${table}.${c}`);
  return missing;
}
