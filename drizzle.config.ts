import { defineConfig } from "drizzle-kit";

// Migrations are generated with `npm run db:generate` and applied by wrangler
// (`wrangler d1 migrations apply`) and, in tests, by applyD1Migrations.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
