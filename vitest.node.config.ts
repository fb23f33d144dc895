import { defineConfig } from "vitest/config";

// Node-side tests: pure modules (test/unit), the agent and the simulated member
// cluster (test/agent), and end-to-end runs against `wrangler dev` (test/e2e).
export default defineConfig({
  test: {
    include: ["test/unit/**/*.test.ts", "test/agent/**/*.test.ts", "test/e2e/**/*.test.ts", "test/cli/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    // Fails a file whose hubs logged a 5xx or a hung-code cancellation it did not declare.
    setupFiles: ["test/hub-log.setup.ts"],
    // Builds the agent's bundles again when their sources changed (the tests start them).
    globalSetup: ["test/agent-bundle.setup.ts"],
  },
});
