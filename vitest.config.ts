import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Worker tests: run inside workerd with real Durable Object storage and a local D1 that has the
// project's migrations applied (test/worker/apply-migrations.ts).
export default defineConfig(async () => ({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          TEST_MIGRATIONS: await readD1Migrations(path.join(import.meta.dirname, "migrations")),
          FLOTILLA_ADMIN_TOKEN: "test-admin-token",
          // Encrypts Secrets at rest in the tests (AES-256; the ID "test1" is what stored values carry).
          FLOTILLA_ENCRYPTION_KEYS: "test1:dGVzdC1rZXktdGhhdC1pcy0zMi1ieXRlcy1sb25nISE=",
          // OIDC users for the authorization tests (test/worker/authz.test.ts serves this issuer's
          // discovery and keys by standing in for fetch).
          FLOTILLA_OIDC_ISSUER_URL: "https://issuer.test",
          FLOTILLA_OIDC_AUDIENCE: "flotilla",
          FLOTILLA_OIDC_USERNAME_PREFIX: "oidc:",
        },
      },
    }),
  ],
  test: {
    include: ["test/worker/**/*.test.ts"],
    setupFiles: ["./test/worker/apply-migrations.ts"],
    // The dashboard's files are a module of the Worker (dist/ui/files.js): built when stale.
    globalSetup: ["./test/ui-build.setup.ts"],
    testTimeout: 30_000,
  },
}));
