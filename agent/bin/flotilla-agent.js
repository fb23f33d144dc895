#!/usr/bin/env node
// Launcher of the Flotilla member-cluster agent: runs the bundle `npm run build` writes
// (scripts/build-agent.mjs); no TypeScript is compiled at start.
await import("../../dist/agent/flotilla-agent.mjs").catch((err) => {
  if (err?.code !== "ERR_MODULE_NOT_FOUND" || !String(err.message).includes("dist/agent/flotilla-agent.mjs")) throw err;
  console.error("flotilla-agent: dist/agent/flotilla-agent.mjs is missing; run `npm run build` first");
  process.exit(1);
});
