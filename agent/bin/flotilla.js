#!/usr/bin/env node
// Launcher of `flotilla`, the Flotilla admin CLI: runs the bundle `npm run build` writes
// (scripts/build-agent.mjs); no TypeScript is compiled at start.
await import("../../dist/agent/flotilla.mjs").catch((err) => {
  if (err?.code !== "ERR_MODULE_NOT_FOUND" || !String(err.message).includes("dist/agent/flotilla.mjs")) throw err;
  console.error("flotilla: dist/agent/flotilla.mjs is missing; run `npm run build` first");
  process.exit(1);
});
