import { defineConfig } from "vitest/config";

// The crash test (`npm run test:crash`): a hub under wrangler dev killed with kill -9 during a
// burst of writes and started again on the same state (test/crash).
export default defineConfig({
  test: {
    include: ["test/crash/**/*.test.ts"],
    testTimeout: 600_000,
    hookTimeout: 180_000,
    fileParallelism: false,
    // Fails a file whose hubs logged a 5xx or a hung-code cancellation it did not declare.
    setupFiles: ["test/hub-log.setup.ts"],
    // Builds the agent's bundles again when their sources changed (the tests start them).
    globalSetup: ["test/agent-bundle.setup.ts"],
  },
});
