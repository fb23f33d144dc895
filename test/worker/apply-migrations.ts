import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { installControllers } from "../../src/controllers.ts";

// Setup files run before each test file; applying migrations is idempotent.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
// The controllers' hooks, as the Worker's entry installs them (src/index.ts), for the test files
// that write through the store before any request reaches the Worker (idempotent).
installControllers();
