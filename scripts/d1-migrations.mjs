// Whether a local D1 database (`wrangler dev --persist-to <state>`) already has every migration
// applied, read straight from Miniflare's SQLite file: `npm start` (scripts/start.mjs) then skips
// `wrangler d1 migrations apply`, which would find nothing to do but still starts wrangler and a
// workerd of its own to find that out (about 2 s of CPU; 5 s of a hub's start-up under load on
// the project's 2-core machine, on every start and restart of a hub on existing state).
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";

/** Miniflare's folder of D1 databases under a `--persist-to` folder (one SQLite file per database). */
const D1_FOLDER = path.join("v3", "d1", "miniflare-D1DatabaseObject");
/** The table wrangler records applied migrations in (wrangler.toml's `migrations_table`, default `d1_migrations`). */
const MIGRATIONS_TABLE = "d1_migrations";

/**
 * Whether the one local D1 database under `stateDir` records every `.sql` file of
 * `migrationsDir` as applied, as `wrangler d1 migrations apply --local` decides what is left to
 * apply (the names of the files against the `name` column of `d1_migrations`). Any doubt answers
 * false, so that the caller runs wrangler as before: no database yet, more than one database
 * file, no migrations table, a file SQLite cannot open read-only, a Node without `node:sqlite`.
 * Opens the database read-only and writes nothing.
 *
 * @param {string} stateDir the `--persist-to` folder (`FLOTILLA_STATE_DIR`).
 * @param {string} migrationsDir the folder of the migrations' `.sql` files (wrangler.toml's `migrations_dir`).
 * @returns {Promise<boolean>} true when nothing is left to apply.
 * @example
 * if (!(await allMigrationsApplied(stateDir, path.join(root, "migrations")))) runWranglerMigrationsApply();
 */
export async function allMigrationsApplied(stateDir, migrationsDir) {
  try {
    const dir = path.join(stateDir, D1_FOLDER);
    if (!existsSync(dir)) return false;
    const files = readdirSync(dir).filter((n) => n.endsWith(".sqlite") && n !== "metadata.sqlite");
    if (files.length !== 1) return false;
    const wanted = readdirSync(migrationsDir).filter((n) => n.endsWith(".sql"));
    const { DatabaseSync } = await importSqlite();
    const db = new DatabaseSync(path.join(dir, files[0]), { readOnly: true });
    try {
      const applied = new Set(
        db
          .prepare(`SELECT name FROM ${MIGRATIONS_TABLE}`)
          .all()
          .map((r) => r.name),
      );
      return wanted.every((n) => applied.has(n));
    } finally {
      db.close();
    }
  } catch {
    return false;
  }
}

/** `node:sqlite`, without the ExperimentalWarning Node 22 prints on its first import (only that warning is held back). */
async function importSqlite() {
  const emit = process.emitWarning;
  process.emitWarning = (warning, ...rest) => {
    if (/SQLite is an experimental feature/.test(String(warning))) return;
    emit.call(process, warning, ...rest);
  };
  try {
    return await import("node:sqlite");
  } finally {
    process.emitWarning = emit;
  }
}
