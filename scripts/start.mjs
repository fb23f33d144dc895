#!/usr/bin/env node
// Runs the Flotilla hub locally: applies the D1 migrations to the local database, then starts
// `wrangler dev` (workerd) on 127.0.0.1. Contract (../shared/reference/contract.md):
//   PORT                         port to listen on (default 8787)
//   FLOTILLA_STATE_DIR           where state persists (default .wrangler/state)
//   FLOTILLA_ADMIN_TOKEN         the admin token; otherwise one is generated once into the
//                                state folder and printed at start
//   FLOTILLA_LEASE_GRACE_MULTIPLIER  lease grace multiplier (default 5, OCM's)
//   FLOTILLA_LEAVE_TIMEOUT_SECONDS   how long a deleted cluster waits for its agent to leave (default 900)
//   FLOTILLA_HTTPS=1             serve HTTPS with a certificate for 127.0.0.1 and localhost signed
//                                by a local CA generated once into <state>/tls (ca.crt)
// Extra arguments are passed to `wrangler dev`.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ensureLocalTls } from "./tls.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const stateDir = path.resolve(process.env.FLOTILLA_STATE_DIR || path.join(root, ".wrangler", "state"));
const port = process.env.PORT || "8787";
const wrangler = path.join(root, "node_modules", "wrangler", "bin", "wrangler.js");
mkdirSync(stateDir, { recursive: true });

let adminToken = process.env.FLOTILLA_ADMIN_TOKEN;
const tokenFile = path.join(stateDir, "admin-token");
if (!adminToken) {
  if (existsSync(tokenFile)) adminToken = readFileSync(tokenFile, "utf8").trim();
  else {
    adminToken = randomBytes(24).toString("hex");
    writeFileSync(tokenFile, `${adminToken}\n`, { mode: 0o600 });
  }
}

const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: process.env.CI ?? "true" };
const migrate = spawnSync(process.execPath, [wrangler, "d1", "migrations", "apply", "DB", "--local", "--persist-to", stateDir], {
  cwd: root,
  env,
  encoding: "utf8",
});
if (migrate.status !== 0) {
  process.stderr.write(migrate.stdout + migrate.stderr);
  process.stderr.write("flotilla: applying the D1 migrations failed\n");
  process.exit(1);
}

const https = process.env.FLOTILLA_HTTPS === "1" || process.env.FLOTILLA_HTTPS === "true";
const tlsArgs = [];
let tls;
if (https) {
  tls = await ensureLocalTls(stateDir);
  tlsArgs.push("--local-protocol", "https", "--https-key-path", tls.key, "--https-cert-path", tls.cert);
}

const vars = ["--var", `FLOTILLA_ADMIN_TOKEN:${adminToken}`];
if (process.env.FLOTILLA_LEAVE_TIMEOUT_SECONDS) vars.push("--var", `LEAVE_TIMEOUT_SECONDS:${process.env.FLOTILLA_LEAVE_TIMEOUT_SECONDS}`);
if (process.env.FLOTILLA_LEASE_GRACE_MULTIPLIER) vars.push("--var", `LEASE_GRACE_MULTIPLIER:${process.env.FLOTILLA_LEASE_GRACE_MULTIPLIER}`);
const args = [wrangler, "dev", "--ip", "127.0.0.1", "--port", port, "--persist-to", stateDir, "--show-interactive-dev-session=false", ...tlsArgs, ...vars, ...process.argv.slice(2)];

console.log(`Flotilla hub: ${https ? "https" : "http"}://127.0.0.1:${port}`);
if (tls) console.log(`Local CA:     ${tls.ca}`);
console.log(`State:        ${stateDir}`);
console.log(`Admin token:  ${adminToken}`);
console.log(`              export FLOTILLA_ADMIN_TOKEN=${adminToken}`);

const child = spawn(process.execPath, args, { cwd: root, env, stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => child.kill(sig));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
