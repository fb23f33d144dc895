#!/usr/bin/env node
// The npm registry reachable from our machines serves workerd's Linux builds only, so
// `npm install` leaves workerd's macOS and Windows optional dependencies out of
// package-lock.json, and `npm ci` then refuses the lock as out of sync. This adds the missing
// optional entries (with their os/cpu, so npm skips them on Linux). Run it after `npm install`.
import { readFileSync, writeFileSync } from "node:fs";

const PLATFORMS = {
  "@cloudflare/workerd-darwin-64": { os: ["darwin"], cpu: ["x64"] },
  "@cloudflare/workerd-darwin-arm64": { os: ["darwin"], cpu: ["arm64"] },
  "@cloudflare/workerd-windows-64": { os: ["win32"], cpu: ["x64"] },
};
const lock = JSON.parse(readFileSync("package-lock.json", "utf8"));
let added = 0;
for (const [path, entry] of Object.entries(lock.packages)) {
  if (!path.endsWith("node_modules/workerd")) continue;
  const base = path.slice(0, -"workerd".length);
  for (const [name, platform] of Object.entries(PLATFORMS)) {
    const version = entry.optionalDependencies?.[name];
    const key = `${base}${name}`;
    if (!version || lock.packages[key]) continue;
    lock.packages[key] = { version, cpu: platform.cpu, license: "Apache-2.0", optional: true, os: platform.os, engines: { node: ">=16" } };
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : 1)));
writeFileSync("package-lock.json", `${JSON.stringify(lock, null, 2)}\n`);
console.log(`lock-platforms: added ${added} entries`);
