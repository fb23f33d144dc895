/**
 * `npm start` skips `wrangler d1 migrations apply` only when the state folder's local D1 database
 * records every migration (scripts/d1-migrations.mjs): a database that lacks one, or anything it
 * cannot read for sure, still goes through wrangler.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { allMigrationsApplied } from "../../scripts/d1-migrations.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const MIGRATIONS = path.join(root, "migrations");
const NAMES = readdirSync(MIGRATIONS).filter((n) => n.endsWith(".sql"));
const made: string[] = [];

/** A state folder as `wrangler dev --persist-to` leaves it: one D1 file whose `d1_migrations` holds `applied` (undefined: no such table). */
function stateWith(applied: string[] | undefined, files = ["0123abcd.sqlite"]): string {
  const state = mkdtempSync(path.join(tmpdir(), "flotilla-d1-migrations-"));
  made.push(state);
  const dir = path.join(state, "v3", "d1", "miniflare-D1DatabaseObject");
  mkdirSync(dir, { recursive: true });
  new DatabaseSync(path.join(dir, "metadata.sqlite")).close();
  for (const f of files) {
    const db = new DatabaseSync(path.join(dir, f));
    db.exec("CREATE TABLE objects (id INTEGER)");
    if (applied) {
      db.exec("CREATE TABLE d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)");
      const insert = db.prepare("INSERT INTO d1_migrations (name) VALUES (?)");
      for (const n of applied) insert.run(n);
    }
    db.close();
  }
  return state;
}

afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

describe("allMigrationsApplied (npm start's skip of wrangler's migrations apply)", () => {
  it("is true when the database records every migration of migrations/", async () => {
    expect(NAMES.length).toBeGreaterThan(1);
    expect(await allMigrationsApplied(stateWith(NAMES), MIGRATIONS)).toBe(true);
  });

  it("is false when one migration is not recorded (the newest, or one in the middle)", async () => {
    expect(await allMigrationsApplied(stateWith(NAMES.slice(0, -1)), MIGRATIONS)).toBe(false);
    expect(await allMigrationsApplied(stateWith(NAMES.filter((_, i) => i !== 1)), MIGRATIONS)).toBe(false);
  });

  it("is false for an empty state folder, a database without the migrations table, two databases, or a file that is no database", async () => {
    const empty = mkdtempSync(path.join(tmpdir(), "flotilla-d1-migrations-"));
    made.push(empty);
    expect(await allMigrationsApplied(empty, MIGRATIONS)).toBe(false);
    expect(await allMigrationsApplied(stateWith(undefined), MIGRATIONS)).toBe(false);
    expect(await allMigrationsApplied(stateWith(NAMES, ["a.sqlite", "b.sqlite"]), MIGRATIONS)).toBe(false);
    const garbled = stateWith(NAMES);
    const dir = path.join(garbled, "v3", "d1", "miniflare-D1DatabaseObject");
    const file = readdirSync(dir).find((n) => n !== "metadata.sqlite")!;
    writeFileSync(path.join(dir, file), "not a database");
    expect(await allMigrationsApplied(garbled, MIGRATIONS)).toBe(false);
  });
});
