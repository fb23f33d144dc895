/**
 * Every request reaches the Worker directly (issue 42): wrangler.toml has no `[assets]`, so neither
 * `wrangler dev` nor Workers put the asset router and the asset worker (two more isolates under
 * `wrangler dev`, whatever `run_worker_first` said) before it. The dashboard's files are modules
 * of the Worker's bundle (scripts/build-ui.mjs writes dist/ui/files.js), served by
 * src/ui/routes.ts at /ui/assets/* (test/worker/ui.test.ts). The metered hub of `npm run
 * bench:costs` has none either (bench/meter/wrangler.toml mirrors the hub's settings).
 */
import path from "node:path";
import { experimental_readRawConfig } from "wrangler";
import { describe, expect, it } from "vitest";

const root = path.join(import.meta.dirname, "..", "..");

describe("wrangler.toml has no static assets", () => {
  it.each(["wrangler.toml", "bench/meter/wrangler.toml"])("%s: every path goes to the Worker, the dashboard's files too", (file) => {
    const { rawConfig } = experimental_readRawConfig({ config: path.join(root, file) });
    expect(rawConfig.assets).toBeUndefined();
    expect(rawConfig.main).toMatch(/\.ts$/);
  });
});
