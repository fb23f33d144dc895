#!/usr/bin/env node
// Runs the Flotilla hub locally: applies the D1 migrations to the local database (those it does
// not record yet: scripts/d1-migrations.mjs), then starts
// `wrangler dev` (workerd) on 127.0.0.1 and keeps it alive. Contract (../shared/reference/contract.md):
//   PORT                         port to listen on (default 8787)
//   FLOTILLA_STATE_DIR           where state persists (default .wrangler/state)
//   FLOTILLA_ADMIN_TOKEN         the admin token (never printed); otherwise one is generated once
//                                into the state folder and printed by the start that made it
//   FLOTILLA_ENCRYPTION_KEYS     the keys that encrypt Secrets at rest (`id:base64key,...`, the
//                                first encrypts, all decrypt); otherwise one AES-256 key is
//                                generated once into <state>/encryption-keys
//   FLOTILLA_SERVICE_ACCOUNT_KEYS    the keys ServiceAccount tokens are signed with (a JWK Set, the
//                                first signs, all verify); otherwise one key is generated once and
//                                kept in the D1 database, sealed with the encryption keys
//   FLOTILLA_SERVICE_ACCOUNT_ISSUER  the tokens' issuer (`iss`); otherwise the hub's URL
//   FLOTILLA_LEASE_GRACE_MULTIPLIER  lease grace multiplier (default 5, OCM's)
//   FLOTILLA_LEAVE_TIMEOUT_SECONDS   how long a deleted cluster waits for its agent to leave (default 900)
//   FLOTILLA_AUDIT_RETENTION_DAYS    days the audit log keeps a record (default 30)
//   FLOTILLA_EVENT_TTL_SECONDS       seconds an Event is kept after its last write (default 3600)
//   FLOTILLA_FEATURE_GATES           feature gates as OCM's --feature-gates (`NilExecutorValidating=true`)
//   FLOTILLA_LOG_REQUESTS=1      print a line per request answered (wrangler's request log:
//                                `[wrangler:info] GET /api/v1/namespaces 200 OK (3ms)`); unset, the
//                                hub prints warnings and errors only (its own, wrangler's, workerd's)
//   FLOTILLA_HTTPS=1             serve HTTPS with a certificate for 127.0.0.1 and localhost signed
//                                by a local CA generated once into <state>/tls (ca.crt)
//   FLOTILLA_PUBLIC_URL          the hub's URL as clients reach it, advertised in ClusterProfiles
//                                status.accessProviders (default http(s)://127.0.0.1:PORT); with
//                                FLOTILLA_HTTPS=1 the local CA is advertised too
//                                (FLOTILLA_PUBLIC_CA_DATA, base64 PEM, to advertise another CA)
//   FLOTILLA_OIDC_ISSUER_URL     trust ID tokens of this OpenID Connect issuer (https, or http on a
//                                loopback address); OIDC is off when unset. With it:
//   FLOTILLA_OIDC_AUDIENCE       the client ID every token's `aud` must hold (required)
//   FLOTILLA_OIDC_USERNAME_CLAIM (default `sub`), FLOTILLA_OIDC_USERNAME_PREFIX (default
//                                `<issuer>#` unless the claim is `email`; `-` for none),
//   FLOTILLA_OIDC_GROUPS_CLAIM   (default `groups`), FLOTILLA_OIDC_GROUPS_PREFIX (default none),
//   FLOTILLA_OIDC_SIGNING_ALGS   (default RS256): kube-apiserver's --oidc-* flags and defaults
// Extra arguments are passed to `wrangler dev`.
//
// Secrets never appear on a command line: the Worker's variables go to wrangler through an env
// file in the state folder (<state>/hub.env, mode 0600, rewritten at every start), which
// `wrangler dev --env-file` reads.
//
// Supervision: once the hub answered, `/livez/ping` (the Worker answers; the other /livez checks
// are D1's and the scheduler's, src/health/routes.ts) is probed every PROBE_INTERVAL_MS with a
// PROBE_TIMEOUT_MS timeout. A probe that timed out while wrangler's processes kept working (they
// ran on a CPU, or were runnable and waited on a run queue for one, at least BUSY_SHARE of the
// probe's time, read from Linux's /proc) is a hub under load, not a dead one: it does not count.
// The wait counts as work: on a machine loaded beyond its cores, a busy workerd gets only its
// share of a core (an eighth at a load of 16 on 2 cores), and was stopped as dead mid-request
// when only its run time counted. After PROBE_FAILURES consecutive failures (workerd crashed and
// wrangler's own restart left the hub hanging, as it does when the entry workerd dies), or when
// wrangler exits by itself, wrangler and its workerd processes are stopped and wrangler is started
// again on the same state folder, after a backoff (1 s, doubling, at most 30 s). More than
// MAX_RESTARTS restarts within RESTART_WINDOW_MS ends `npm start` with exit code 1, so that a
// supervisor (systemd, a container runtime) takes over. A first start where wrangler exits before
// the hub ever answered (a port in use, bad arguments) ends `npm start` at once with its code.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { stripVTControlCharacters } from "node:util";
import { allMigrationsApplied } from "./d1-migrations.mjs";
import { processes, schedStat } from "./proc.mjs";
import { ensureLocalTls, untrustedHandshakeFilter } from "./tls.mjs";

/** Interval between two `/livez` probes, in milliseconds. */
const PROBE_INTERVAL_MS = 2_000;
/** A probe that has not answered 200 within this many milliseconds failed. */
const PROBE_TIMEOUT_MS = 3_000;
/** Consecutive failed probes after which the hub counts as dead. */
const PROBE_FAILURES = 3;
/**
 * Share of the probe's time wrangler's processes must have run or waited runnable for a CPU
 * (summed over their threads) during a timed-out probe for it to count as busy, not dead.
 */
const BUSY_SHARE = 0.25;
/** How long a (re)started wrangler may take to answer its first probe, in milliseconds. */
const START_TIMEOUT_MS = 180_000;
/** Restarts allowed within RESTART_WINDOW_MS before giving up with exit code 1. */
const MAX_RESTARTS = 5;
/** The window of MAX_RESTARTS, in milliseconds (10 minutes). */
const RESTART_WINDOW_MS = 10 * 60_000;
/** First restart backoff and its cap, in milliseconds (doubling in between). */
const BACKOFF_MS = 1_000;
const BACKOFF_CAP_MS = 30_000;
/** The OIDC settings `npm start` passes to the Worker unchanged (src/auth/oidc.ts `OidcEnv`). */
const OIDC_VARS = [
  "FLOTILLA_OIDC_ISSUER_URL",
  "FLOTILLA_OIDC_AUDIENCE",
  "FLOTILLA_OIDC_USERNAME_CLAIM",
  "FLOTILLA_OIDC_USERNAME_PREFIX",
  "FLOTILLA_OIDC_GROUPS_CLAIM",
  "FLOTILLA_OIDC_GROUPS_PREFIX",
  "FLOTILLA_OIDC_SIGNING_ALGS",
];

/** How long wrangler gets to stop after SIGTERM before its process group is killed, in milliseconds. */
const STOP_GRACE_MS = 5_000;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const stateDir = path.resolve(process.env.FLOTILLA_STATE_DIR || path.join(root, ".wrangler", "state"));
const port = process.env.PORT || "8787";
const wrangler = path.join(root, "node_modules", "wrangler", "bin", "wrangler.js");
mkdirSync(stateDir, { recursive: true });

/** A value from the environment, or one generated once into `<state>/<file>` (mode 0600). */
function kept(envValue, file, generate) {
  if (envValue) return envValue;
  const p = path.join(stateDir, file);
  if (existsSync(p)) return readFileSync(p, "utf8").trim();
  const value = generate();
  writeFileSync(p, `${value}\n`, { mode: 0o600 });
  return value;
}

let adminTokenGenerated = false;
const adminToken = kept(process.env.FLOTILLA_ADMIN_TOKEN, "admin-token", () => {
  adminTokenGenerated = true;
  return randomBytes(24).toString("hex");
});
// AES-256-GCM, as kube-apiserver's EncryptionConfiguration `aesgcm` provider (src/k8s/encryption.ts).
const encryptionKeys = kept(process.env.FLOTILLA_ENCRYPTION_KEYS, "encryption-keys", () => `key1:${randomBytes(32).toString("base64")}`);

// wrangler itself gets no FLOTILLA_* variable: the Worker reads its settings from the env file.
const env = {};
for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("FLOTILLA_")) env[k] = v;
// wrangler's local dashboards are off: its local explorer wraps every Durable Object class, and
// its local observability streams a tail event of every invocation to a collector Worker in the
// same workerd, which took about 14 % of workerd's CPU under bench:propagation (perf). Neither is
// part of the hub, nor of what Cloudflare runs.
// The hub reads nothing of `request.cf`, so wrangler does not fetch its sample from
// workers.cloudflare.com at each start (offline, that fetch printed two stack traces).
Object.assign(env, {
  WRANGLER_SEND_METRICS: "false",
  CI: process.env.CI ?? "true",
  X_LOCAL_OBSERVABILITY: "false",
  X_LOCAL_EXPLORER: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
});

// The dashboard's files (dist/ui/files.js, a module of the Worker: src/ui/routes.ts), built again
// when their sources changed, before wrangler bundles the Worker.
const ui = spawnSync(process.execPath, [path.join(root, "scripts", "build-ui.mjs"), "--if-stale"], { cwd: root, stdio: "inherit" });
if (ui.status !== 0) {
  console.error("building the dashboard (scripts/build-ui.mjs) failed");
  process.exit(1);
}

// A state folder whose database records every migration (a restart, a copy of a migrated one)
// skips wrangler's own check, which would apply nothing: scripts/d1-migrations.mjs.
if (!(await allMigrationsApplied(stateDir, path.join(root, "migrations")))) {
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
}

const https = process.env.FLOTILLA_HTTPS === "1" || process.env.FLOTILLA_HTTPS === "true";
const tlsArgs = [];
let tls;
if (https) {
  tls = await ensureLocalTls(stateDir);
  tlsArgs.push("--local-protocol", "https", "--https-key-path", tls.key, "--https-cert-path", tls.cert);
}

/** One dotenv line `KEY='value'` (single quotes are literal in dotenv). @throws Error for a value dotenv cannot carry */
function dotenvLine(key, value) {
  if (/['\r\n]/.test(value)) throw new Error(`${key} must not contain a single quote or a line break`);
  return `${key}='${value}'\n`;
}

const vars = { FLOTILLA_ADMIN_TOKEN: adminToken, FLOTILLA_ENCRYPTION_KEYS: encryptionKeys };
// ServiceAccount tokens (src/auth/serviceaccounts.ts): without these, the hub generates its signing
// key once and keeps it in D1 (sealed with the encryption keys), and its issuer is its URL.
for (const k of ["FLOTILLA_SERVICE_ACCOUNT_KEYS", "FLOTILLA_SERVICE_ACCOUNT_ISSUER"]) if (process.env[k]) vars[k] = process.env[k];
if (process.env.FLOTILLA_LEAVE_TIMEOUT_SECONDS) vars.LEAVE_TIMEOUT_SECONDS = process.env.FLOTILLA_LEAVE_TIMEOUT_SECONDS;
if (process.env.FLOTILLA_LEASE_GRACE_MULTIPLIER) vars.LEASE_GRACE_MULTIPLIER = process.env.FLOTILLA_LEASE_GRACE_MULTIPLIER;
// OIDC authentication (src/auth/oidc.ts), as kube-apiserver's --oidc-* flags: passed on as they are.
for (const k of OIDC_VARS) if (process.env[k]) vars[k] = process.env[k];
if (process.env.FLOTILLA_AUDIT_RETENTION_DAYS) vars.FLOTILLA_AUDIT_RETENTION_DAYS = process.env.FLOTILLA_AUDIT_RETENTION_DAYS;
if (process.env.FLOTILLA_EVENT_TTL_SECONDS) vars.FLOTILLA_EVENT_TTL_SECONDS = process.env.FLOTILLA_EVENT_TTL_SECONDS;
if (process.env.FLOTILLA_FEATURE_GATES) vars.FLOTILLA_FEATURE_GATES = process.env.FLOTILLA_FEATURE_GATES;
// What ClusterProfiles advertise in status.accessProviders (src/clusterprofile/profile.ts).
vars.FLOTILLA_PUBLIC_URL = process.env.FLOTILLA_PUBLIC_URL || `${https ? "https" : "http"}://127.0.0.1:${port}`;
const publicCa = process.env.FLOTILLA_PUBLIC_CA_DATA || (tls && !process.env.FLOTILLA_PUBLIC_URL ? readFileSync(tls.ca).toString("base64") : "");
if (publicCa) vars.FLOTILLA_PUBLIC_CA_DATA = publicCa;
const envFile = path.join(stateDir, "hub.env");
try {
  if (existsSync(envFile)) chmodSync(envFile, 0o600);
  writeFileSync(
    envFile,
    Object.entries(vars)
      .map(([k, v]) => dotenvLine(k, v))
      .join(""),
    { mode: 0o600 },
  );
} catch (e) {
  process.stderr.write(`flotilla: ${e.message}\n`);
  process.exit(1);
}

/**
 * Whether wrangler prints a line per request (`FLOTILLA_LOG_REQUESTS=1`; default: no). Its request
 * log is an HTTP request per answer from wrangler's proxy workerd to wrangler's Node process,
 * which prints it, and the line copied again here: about 1.5 ms of the machine's CPU per request,
 * a third of a GET's CPU in all (docs/scale.md "`kubectl apply` of ordinary objects"). Without
 * it wrangler runs at `--log-level warn`: the Worker logs only warnings and errors (console.warn,
 * console.error; nothing of the hub's logs below that), and wrangler's and workerd's own warnings
 * and errors still show. kube-apiserver, likewise, logs each request only at a raised verbosity
 * (its httplog, `-v=3`). A `--log-level` among the extra arguments, or `WRANGLER_LOG`, decides instead.
 */
const logRequests = process.env.FLOTILLA_LOG_REQUESTS === "1" || process.env.FLOTILLA_LOG_REQUESTS === "true";
const logLevelGiven = process.env.WRANGLER_LOG !== undefined || process.argv.slice(2).some((a) => a === "--log-level" || a.startsWith("--log-level="));
const logArgs = logRequests || logLevelGiven ? [] : ["--log-level", "warn"];

const args = [
  wrangler,
  "dev",
  "--ip",
  "127.0.0.1",
  "--port",
  port,
  "--persist-to",
  stateDir,
  "--env-file",
  envFile,
  "--show-interactive-dev-session=false",
  ...tlsArgs,
  ...logArgs,
  ...process.argv.slice(2),
];
const url = `${https ? "https" : "http"}://127.0.0.1:${port}`;

console.log(`Flotilla hub: ${url}`);
if (tls) console.log(`Local CA:     ${tls.ca}`);
console.log(`State:        ${stateDir}`);
// This output is the hub's log, which holds no token (issue 29): a token given in the environment
// is never printed, a generated one only by the start that generated it (the contract's "printed
// at start"); later starts name the file that keeps it.
const tokenFile = path.join(stateDir, "admin-token");
if (process.env.FLOTILLA_ADMIN_TOKEN) {
  console.log("Admin token:  the value of FLOTILLA_ADMIN_TOKEN");
} else if (adminTokenGenerated) {
  console.log(`Admin token:  ${adminToken} (generated, kept in ${tokenFile})`);
  console.log(`              export FLOTILLA_ADMIN_TOKEN=$(cat ${tokenFile})`);
} else {
  console.log(`Admin token:  kept in ${tokenFile}`);
  console.log(`              export FLOTILLA_ADMIN_TOKEN=$(cat ${tokenFile})`);
}

const ca = tls ? readFileSync(tls.ca) : undefined;

/**
 * `GET /livez/ping`: resolves "ok" when it answers 200 within PROBE_TIMEOUT_MS, "timeout" when it does
 * not answer in time, "failed" otherwise (refused, reset, another status).
 */
function probe() {
  return new Promise((resolve) => {
    let timedOut = false;
    const req = (https ? httpsRequest : httpRequest)(`${url}/livez/ping`, { method: "GET", ca, timeout: PROBE_TIMEOUT_MS }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode === 200 ? "ok" : "failed"));
      res.on("error", () => resolve(timedOut ? "timeout" : "failed"));
    });
    req.on("timeout", () => {
      timedOut = true;
      req.destroy(new Error("timeout"));
    });
    req.on("error", () => resolve(timedOut ? "timeout" : "failed"));
    req.end();
  });
}

/**
 * What the processes of wrangler's process group (wrangler and its workerd processes) asked of the
 * CPU so far, in milliseconds: `runMs` the time their threads ran, `waitMs` the time they were
 * runnable but waited on a run queue (null where the kernel keeps no such figure: then `runMs` is
 * /proc/<pid>/stat's CPU time), from Linux's /proc; null where /proc cannot tell (another OS).
 */
function groupDemand(proc) {
  const group = processes().filter((p) => p.pgrp === proc.pid);
  if (group.length === 0) return null;
  let runMs = 0;
  let waitMs = 0;
  for (const p of group) {
    const sched = schedStat(p.pid);
    if (sched === null || waitMs === null) {
      runMs += p.cpuMs;
      waitMs = null;
    } else {
      runMs += sched.runMs;
      waitMs += sched.waitMs;
    }
  }
  return { runMs, waitMs };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let child = null;
let stopping = false;
const restarts = [];

/**
 * The supervisor's own probes, as wrangler logs them (`[wrangler:info] GET /livez/ping 200 OK (3ms)`):
 * one every PROBE_INTERVAL_MS, nothing a person needs, so they are not passed on. A failed probe
 * (another status) still is.
 */
const PROBE_LINE = /^\[wrangler:info\] GET \/livez\/ping 200 OK\b/;

/**
 * Under HTTPS, a client that does not trust the local CA (a browser's every visit) makes wrangler
 * print a red error per connection: the first becomes one calm line naming the CA to trust, the
 * others are dropped (scripts/tls.mjs `untrustedHandshakeFilter`); one filter for both streams.
 */
const handshakes = tls ? untrustedHandshakeFilter(tls.ca) : () => undefined;

/**
 * Copies `from` to `to` line by line, without the supervisor's probe lines and with untrusted
 * handshakes told once (both matched without colours).
 */
function passOn(from, to) {
  createInterface({ input: from, crlfDelay: Infinity }).on("line", (line) => {
    const plain = stripVTControlCharacters(line);
    if (PROBE_LINE.test(plain)) return;
    const instead = handshakes(plain);
    if (instead === null) return;
    to.write(`${instead ?? line}\n`);
  });
}

/** Starts wrangler in its own process group (so that it and its workerd processes stop together). */
function startWrangler() {
  const proc = spawn(process.execPath, args, { cwd: root, env, stdio: ["inherit", "pipe", "pipe"], detached: process.platform !== "win32" });
  passOn(proc.stdout, process.stdout);
  passOn(proc.stderr, process.stderr);
  proc.exited = new Promise((resolve) => proc.once("exit", (code, signal) => resolve({ code, signal })));
  return proc;
}

/** Sends `signal` to wrangler's process group (wrangler and workerd), or to wrangler alone on Windows. */
function signalGroup(proc, signal) {
  try {
    if (process.platform === "win32") proc.kill(signal);
    else process.kill(-proc.pid, signal);
  } catch {
    // already gone
  }
}

/** Stops wrangler and its workerd processes: SIGTERM, then SIGKILL after STOP_GRACE_MS. */
async function stopWrangler(proc) {
  signalGroup(proc, "SIGTERM");
  const timer = setTimeout(() => signalGroup(proc, "SIGKILL"), STOP_GRACE_MS);
  await proc.exited;
  clearTimeout(timer);
  // workerd may outlive wrangler's exit by a moment: the group goes as a whole.
  signalGroup(proc, "SIGKILL");
}

for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, async () => {
    if (stopping) return;
    stopping = true;
    if (!child) process.exit(0);
    const { code } = await (signalGroup(child, sig), child.exited);
    signalGroup(child, "SIGKILL");
    process.exit(code ?? 0);
  });
}
process.on("exit", () => child && signalGroup(child, "SIGKILL"));

/**
 * Runs one wrangler until it is dead: resolves with the reason once it exited by itself, did not
 * answer within START_TIMEOUT_MS, or failed PROBE_FAILURES probes in a row after answering;
 * `exited` is wrangler's exit when it ended by itself before it ever answered.
 */
async function runUntilDead(proc) {
  let exited = null;
  void proc.exited.then((e) => (exited = e));
  const startDeadline = Date.now() + START_TIMEOUT_MS;
  let up = false;
  let failures = 0;
  const ended = () => ({ reason: `wrangler exited (${exited.signal ?? `code ${exited.code}`})`, exited: up ? null : exited });
  for (;;) {
    if (exited) return ended();
    const before = up ? groupDemand(proc) : null;
    const startedAt = Date.now();
    const outcome = await probe();
    if (stopping) return null;
    if (exited) return ended();
    const after = before === null ? null : groupDemand(proc);
    const elapsed = Date.now() - startedAt;
    const ran = after === null ? 0 : after.runMs - before.runMs;
    const waited = after === null || after.waitMs === null || before.waitMs === null ? 0 : after.waitMs - before.waitMs;
    const busy = outcome === "timeout" && after !== null && ran + waited >= BUSY_SHARE * elapsed;
    const spent = `wrangler's processes ran ${Math.round(ran)} ms and waited ${Math.round(waited)} ms for a CPU in the probe's ${elapsed} ms`;
    if (outcome === "ok") {
      if (!up) process.stderr.write(`flotilla: the hub answers; /livez/ping probed every ${PROBE_INTERVAL_MS / 1000} s from now on\n`);
      up = true;
      failures = 0;
    } else if (busy) {
      // Working through a backlog, or starved by the machine's load: not dead, but not known to
      // be alive either.
      process.stderr.write(
        `flotilla: /livez/ping did not answer within ${PROBE_TIMEOUT_MS / 1000} s, but the hub is busy (${spent}): not counted as a failure\n`,
      );
    } else if (up && ++failures >= PROBE_FAILURES) {
      return { reason: `the hub did not answer /livez ${PROBE_FAILURES} times in a row (the last time, ${spent})`, exited: null };
    } else if (!up && Date.now() > startDeadline) {
      return { reason: `the hub did not answer /livez within ${START_TIMEOUT_MS / 1000} seconds of starting`, exited: null };
    }
    await sleep(up ? PROBE_INTERVAL_MS : 500);
  }
}

for (let first = true; ; first = false) {
  child = startWrangler();
  const dead = await runUntilDead(child);
  if (stopping) break;
  // A first start that fails by itself (a port in use, bad arguments) is not helped by restarts.
  if (first && dead.exited) {
    signalGroup(child, "SIGKILL");
    process.exit(dead.exited.code || 1);
  }
  const { reason } = dead;
  await stopWrangler(child);
  if (stopping) break;
  const now = Date.now();
  while (restarts.length > 0 && restarts[0] < now - RESTART_WINDOW_MS) restarts.shift();
  if (restarts.length >= MAX_RESTARTS) {
    process.stderr.write(`flotilla: ${reason}; ${MAX_RESTARTS} restarts within ${RESTART_WINDOW_MS / 60_000} minutes already, giving up\n`);
    process.exit(1);
  }
  restarts.push(now);
  const backoff = Math.min(BACKOFF_MS * 2 ** (restarts.length - 1), BACKOFF_CAP_MS);
  process.stderr.write(`flotilla: ${reason}; restarting wrangler on ${stateDir} in ${backoff / 1000} s (restart ${restarts.length} of ${MAX_RESTARTS})\n`);
  await sleep(backoff);
  if (stopping) break;
}
