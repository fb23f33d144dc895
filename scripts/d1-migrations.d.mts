/**
 * Whether the one local D1 database under `stateDir` (a `wrangler dev --persist-to` folder)
 * records every `.sql` file of `migrationsDir` as applied in wrangler's `d1_migrations` table;
 * false on any doubt (no database, several, no table, unreadable, no `node:sqlite`). Read-only.
 */
export function allMigrationsApplied(stateDir: string, migrationsDir: string): Promise<boolean>;
