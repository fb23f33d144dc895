/**
 * Starts a real hub (`npm start`, i.e. `wrangler dev` on workerd with a local D1) in a child
 * process, for end-to-end tests and benchmarks, and a small admin client for it.
 *
 * A 500 is a bug everywhere: every hub started here has its output scanned for 5xx answers and
 * hung-code cancellations (see {@link serverErrorsIn}); the node-side test suites fail a test file
 * whose hubs logged one it did not declare (`expectedServerErrors`), through
 * test/hub-log.setup.ts; benchmarks print a count when the hub stops.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { descendants } from "./proc.mjs";
import { cpSync, createWriteStream, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Options of {@link startHub}. */
export interface HubOptions {
  /** State folder (default: a fresh temporary folder, i.e. a fresh hub). */
  stateDir?: string;
  /** Lease grace multiplier (`FLOTILLA_LEASE_GRACE_MULTIPLIER`), default the hub's (5). */
  graceMultiplier?: number;
  /** Leave timeout in seconds (`FLOTILLA_LEAVE_TIMEOUT_SECONDS`), default the hub's (900). */
  leaveTimeoutSeconds?: number;
  /** How long to wait for the hub to answer, in milliseconds (default 90 000). */
  startTimeoutMs?: number;
  /** Serve HTTPS with the local CA (`FLOTILLA_HTTPS=1`). */
  https?: boolean;
  /** Port to listen on (default: a free one); a restarted hub takes its predecessor's. */
  port?: number;
  /** Admin token (default: a fresh random one); a restarted hub keeps its clients' by taking its predecessor's. */
  adminToken?: string;
  /**
   * Whether the hub prints a line per request (`FLOTILLA_LOG_REQUESTS=1`), default true: the
   * server-error check ({@link serverErrorsIn}) and `stop`'s wait for the last answers' lines read
   * them. false: the hub as `npm start` runs by default (no request lines: a benchmark of the
   * hub as users run it); 5xx answers are then not seen, only hung-code cancellations.
   */
  logRequests?: boolean;
  /** Extra environment of `npm start` (e.g. the `FLOTILLA_OIDC_*` settings). */
  env?: Record<string, string>;
  /** Extra arguments of `wrangler dev` (`npm start` passes them on), e.g. `--config` of another entry. */
  wranglerArgs?: string[];
  /**
   * A file that gets a copy of everything the hub prints, as it prints it (a benchmark's record;
   * written anew). Default `<stateDir>/hub.log`, appended to: a hub restarted on the same state
   * adds to its predecessor's.
   */
  logFile?: string;
  /**
   * 5xx answers the caller provokes on purpose (e.g. requests in flight while workerd is killed).
   * Any other 5xx or hung-code cancellation in the hub's log fails the test file that started it.
   */
  expectedServerErrors?: ExpectedServerError[];
}

/**
 * A 5xx answer a test provokes on purpose, matched against wrangler's request lines
 * (`[wrangler:info] GET /path 500 Internal Server Error (12ms)`: method, path without the query,
 * status). Keep it narrow: one path pattern and the statuses the test's scenario explains.
 */
export interface ExpectedServerError {
  /** The request method (e.g. "PUT"); any method when absent. */
  method?: string;
  /** The request path, without the query string (e.g. `/^\/agent\/v1\/clusters\/[^/]+\/heartbeat$/`). */
  path: RegExp;
  /** The expected status or statuses (5xx). */
  status: number | readonly number[];
  /** Why the scenario produces it (for the reader of the test). */
  why: string;
}

/** One line of a hub's log that reports a server error. */
export interface ServerErrorLine {
  /** "5xx": a request line with a 5xx status; "hung": workerd cancelled a request whose code hung. */
  kind: "5xx" | "hung";
  /** The log line, without terminal colours. */
  line: string;
  /** The request line's method, path and status ("5xx" lines only). */
  method?: string;
  path?: string;
  status?: number;
  /** Whether an {@link ExpectedServerError} declared it. */
  expected: boolean;
}

/** wrangler's request line (miniflare's entry worker): `[wrangler:info] GET /path 500 Internal Server Error (12ms)`. */
const REQUEST_LINE = /^\[wrangler:[a-z]+\] ([A-Z]+) (\S+) (\d{3}) /;
/** workerd's message when it cancels a request whose code can never finish (a promise nobody will settle). */
const HUNG = /your Worker's code had hung/;
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

/**
 * The server errors in one line of a hub's output: a 5xx request line or a hung-code
 * cancellation, marked `expected` when one of `expected` declares it; null for any other line.
 * Hung-code cancellations are never expected: they are a request waiting on something no one
 * will finish.
 */
export function serverErrorIn(rawLine: string, expected: readonly ExpectedServerError[] = []): ServerErrorLine | null {
  const line = rawLine.replace(ANSI, "").trimEnd();
  if (HUNG.test(line)) return { kind: "hung", line, expected: false };
  const m = REQUEST_LINE.exec(line);
  if (!m || Number(m[3]) < 500) return null;
  const [method, reqPath, status] = [m[1]!, m[2]!, Number(m[3])];
  const declared = expected.some(
    (e) =>
      (e.method === undefined || e.method === method) &&
      e.path.test(reqPath) &&
      (typeof e.status === "number" ? e.status === status : e.status.includes(status)),
  );
  return { kind: "5xx", line, method, path: reqPath, status, expected: declared };
}

/** Every server error {@link serverErrorIn} finds in a hub's output, in order. */
export function serverErrorsIn(output: string, expected: readonly ExpectedServerError[] = []): ServerErrorLine[] {
  return output.split("\n").flatMap((l) => serverErrorIn(l, expected) ?? []);
}

/** A running hub. */
export interface Hub {
  url: string;
  adminToken: string;
  stateDir: string;
  /** The local CA certificate file when the hub serves HTTPS. */
  caFile?: string;
  /** Process ID of `node scripts/start.mjs`. */
  pid: number;
  /** The exit code of `npm start` once it exited (null while it runs, or when a signal ended it). */
  exitCode(): number | null;
  /** Everything the hub printed so far. */
  output(): string;
  /** The file that holds a copy of the hub's output. */
  logFile: string;
  /** The 5xx answers and hung-code cancellations the hub logged so far, expected or not. */
  serverErrors(): ServerErrorLine[];
  /**
   * Stops the hub (SIGTERM, then SIGKILL after 5 s), once the request lines of every answer it
   * gave are in its output; prints a count of unexpected server errors to stderr if there were any.
   */
  stop(): Promise<void>;
}

/** Every hub {@link startHub} started in this process since the last {@link takeStartedHubs}. */
const started: Hub[] = [];

/**
 * The hubs started since the last call (each once), for a check at the end of a test file
 * (test/hub-log.setup.ts).
 */
export function takeStartedHubs(): Hub[] {
  return started.splice(0);
}

/**
 * A failure message naming every unexpected server error of `hubs` (at most `limit` lines per
 * hub), or null when there is none.
 */
export function unexpectedServerErrorReport(hubs: readonly Hub[], limit = 20): string | null {
  const parts: string[] = [];
  for (const hub of hubs) {
    const bad = hub.serverErrors().filter((e) => !e.expected);
    if (bad.length === 0) continue;
    const counts = countByKind(bad);
    parts.push(
      `hub ${hub.url} (${hub.logFile}) logged ${counts}:\n${bad
        .slice(0, limit)
        .map((e) => `  ${e.line}`)
        .join("\n")}${bad.length > limit ? `\n  ... and ${bad.length - limit} more` : ""}`,
    );
  }
  return parts.length === 0
    ? null
    : `A 500 is a bug everywhere: unexpected server errors in the hub's log (declare one a test provokes in startHub's expectedServerErrors)\n${parts.join("\n")}`;
}

function countByKind(errors: readonly ServerErrorLine[]): string {
  const n5 = errors.filter((e) => e.kind === "5xx").length;
  const hung = errors.length - n5;
  return `${n5} unexpected 5xx answer${n5 === 1 ? "" : "s"} and ${hung} hung-code cancellation${hung === 1 ? "" : "s"}`;
}

/**
 * A free TCP port on 127.0.0.1, drawn at random from 20000-32767: below Linux's ephemeral range
 * (32768-60999), which the kernel hands to outbound connections and to `listen(0)` (workerd's
 * own ports, other tests' clients), so the port is not taken between this check and the hub's bind
 * by those. Another process drawing the same port remains possible; `startHub` then retries.
 *
 * @throws Error when no free port is found in 50 draws.
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = 20000 + Math.floor(Math.random() * 12768);
    if (await isFree(port)) return port;
  }
  throw new Error("no free port in 20000-32767 after 50 draws");
}

/** Whether `port` on 127.0.0.1 can be bound now (it is closed again before this resolves). */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/**
 * Stops `child` (SIGTERM, then SIGKILL after 5 s) and waits until its output is read to the end
 * (its pipes closed, or at most 5 s after it exited: a workerd that outlived it may hold them) and
 * until the processes it started (wrangler, workerd) are gone, at most 10 s more: a hub started
 * next on the same port finds it free.
 */
async function stopProcess(child: ChildProcess): Promise<void> {
  const tree = child.pid === undefined ? [] : descendants(child.pid);
  await endProcess(child);
  const deadline = Date.now() + 10_000;
  while (tree.some(running) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** Whether process `pid` still runs (a zombie has released its sockets: it does not). */
function running(pid: number): boolean {
  try {
    return !/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

function endProcess(child: ChildProcess): Promise<void> {
  const closed = new Promise<void>((resolve) => {
    if (child.stdout!.closed && child.stderr!.closed) return resolve();
    child.once("close", () => resolve());
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
  return exited.then(() => Promise.race([closed, new Promise<void>((r) => setTimeout(r, 5000).unref())]));
}

/**
 * Sends a request to a path of its own and waits until its request line is in the hub's output
 * (at most `timeoutMs` milliseconds): wrangler prints a request line after the answer has left, so
 * the answers given before are then logged too. Errors (a hub already gone) end the wait.
 */
async function logBarrier(hub: { url: string; caFile?: string }, output: () => string, timeoutMs: number): Promise<void> {
  const marker = `/log-barrier/${randomUUID()}`;
  const deadline = Date.now() + timeoutMs;
  const timeout = new Promise<void>((r) => setTimeout(r, timeoutMs).unref());
  try {
    await Promise.race([hubFetch(hub, "GET", marker), timeout]);
  } catch {
    return;
  }
  while (!output().includes(marker) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/**
 * Starts `node scripts/start.mjs` on a free port and waits until `/livez/ping` answers (the Worker
 * serves; its other health checks, D1's and the scheduler's, are not waited for: a check that
 * fails while workerd warms up would log a 500).
 *
 * @throws Error when the hub exits or does not answer within `startTimeoutMs`.
 */
export async function startHub(opts: HubOptions = {}): Promise<Hub> {
  const stateDir = opts.stateDir ?? freshStateDir(opts);
  const adminToken = opts.adminToken ?? `admin-${Math.random().toString(36).slice(2)}`;
  for (let attempt = 1; ; attempt++) {
    const port = opts.port ?? (await freePort());
    try {
      return await startHubOn(port, stateDir, adminToken, opts);
    } catch (e) {
      // Another process bound the port between `freePort` and wrangler's bind: draw another.
      const lostRace = e instanceof HubExited && /Address already in use/.test(e.output);
      if (!lostRace || opts.port !== undefined || attempt >= 3) throw e;
    }
  }
}

/**
 * A fresh state folder for a hub of this checkout: a temporary folder holding a copy of
 * {@link migratedD1}'s local D1 database (every migration applied), so that `npm start`'s
 * `wrangler d1 migrations apply` finds nothing to do. Applying the migrations to an empty
 * database took about half of a hub's start-up on the project's 2-core machine (16 of 32 s under
 * load), and the node-side suite starts some 45 hubs. A hub started with other `wranglerArgs`
 * (another `--config`, e.g. the benchmarks' metered entry) may use another database: it gets an
 * empty folder and migrates as before.
 */
function freshStateDir(opts: HubOptions): string {
  const stateDir = mkdtempSync(path.join(tmpdir(), "flotilla-hub-"));
  if (opts.wranglerArgs === undefined) cpSync(migratedD1(), stateDir, { recursive: true });
  return stateDir;
}

/**
 * A state folder (under the system's temporary folder) holding only the local D1 database with
 * every migration of `migrations/` applied, made once per content of its `.sql` files,
 * `wrangler.toml` and wrangler's version (the folder's name carries their digest): made in a
 * folder of its own and renamed into place, so that processes making it at once leave one whole
 * copy. Never written to afterwards: hubs get copies.
 *
 * @throws Error when `wrangler d1 migrations apply` fails.
 */
function migratedD1(): string {
  const digest = createHash("sha256");
  const migrations = path.join(root, "migrations");
  for (const name of readdirSync(migrations)
    .filter((n) => n.endsWith(".sql"))
    .sort())
    digest.update(name).update(readFileSync(path.join(migrations, name)));
  digest.update(readFileSync(path.join(root, "wrangler.toml")));
  digest.update(readFileSync(path.join(root, "node_modules", "wrangler", "package.json")));
  const dir = path.join(tmpdir(), `flotilla-d1-${digest.digest("hex").slice(0, 16)}`);
  if (existsSync(dir)) return dir;
  const making = mkdtempSync(`${dir}.making-`);
  const wrangler = path.join(root, "node_modules", "wrangler", "bin", "wrangler.js");
  const env: NodeJS.ProcessEnv = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: process.env.CI ?? "true" };
  const r = spawnSync(process.execPath, [wrangler, "d1", "migrations", "apply", "DB", "--local", "--persist-to", making], { cwd: root, env, encoding: "utf8" });
  if (r.status !== 0) {
    rmSync(making, { recursive: true, force: true });
    throw new Error(`applying the D1 migrations (wrangler d1 migrations apply) failed:\n${r.stdout}${r.stderr}`);
  }
  try {
    renameSync(making, dir);
  } catch {
    // Another process made it first.
    rmSync(making, { recursive: true, force: true });
  }
  return dir;
}

/** A hub process that exited before it answered; `output` is what it printed. */
class HubExited extends Error {
  constructor(
    readonly exitCode: number,
    readonly output: string,
  ) {
    super(`hub exited with ${exitCode}:\n${output}`);
  }
}

async function startHubOn(port: number, stateDir: string, adminToken: string, opts: HubOptions): Promise<Hub> {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), FLOTILLA_STATE_DIR: stateDir, FLOTILLA_ADMIN_TOKEN: adminToken };
  if (opts.graceMultiplier !== undefined) env.FLOTILLA_LEASE_GRACE_MULTIPLIER = String(opts.graceMultiplier);
  if (opts.leaveTimeoutSeconds !== undefined) env.FLOTILLA_LEAVE_TIMEOUT_SECONDS = String(opts.leaveTimeoutSeconds);
  if (opts.https) env.FLOTILLA_HTTPS = "1";
  const logRequests = opts.logRequests ?? true;
  if (logRequests) env.FLOTILLA_LOG_REQUESTS = "1";
  else delete env.FLOTILLA_LOG_REQUESTS;
  Object.assign(env, opts.env ?? {});
  const child = spawn(process.execPath, [path.join(root, "scripts", "start.mjs"), ...(opts.wranglerArgs ?? [])], {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: false,
  });
  let out = "";
  const logFile = opts.logFile ?? path.join(stateDir, "hub.log");
  const log = createWriteStream(logFile, { flags: opts.logFile ? "w" : "a" });
  child.once("close", () => log.end());
  const expected = opts.expectedServerErrors ?? [];
  const errors: ServerErrorLine[] = [];
  const scan = (line: string) => {
    const e = serverErrorIn(line, expected);
    if (e) errors.push(e);
  };
  // Lines are scanned as they arrive; each stream keeps its unfinished last line until it ends.
  for (const stream of [child.stdout!, child.stderr!]) {
    let partial = "";
    stream.on("data", (d: Buffer) => {
      const text = d.toString();
      out += text;
      log.write(d);
      const lines = (partial + text).split("\n");
      partial = lines.pop()!;
      lines.forEach(scan);
    });
    stream.once("end", () => scan(partial));
  }
  const url = `${opts.https ? "https" : "http"}://127.0.0.1:${port}`;
  const caFile = opts.https ? path.join(stateDir, "tls", "ca.crt") : undefined;
  const deadline = Date.now() + (opts.startTimeoutMs ?? 90_000);
  for (;;) {
    if (child.exitCode !== null) throw new HubExited(child.exitCode, out);
    try {
      const r = await hubFetch({ url, caFile }, "GET", "/livez/ping");
      if (r.status === 200) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      await stopProcess(child);
      throw new Error(`hub did not start within the timeout:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  let stopping: Promise<void> | undefined;
  const stop = async (): Promise<void> => {
    if (logRequests && child.exitCode === null && child.signalCode === null) await logBarrier({ url, caFile }, () => out, 5000);
    await stopProcess(child);
    const bad = errors.filter((e) => !e.expected);
    if (bad.length > 0) process.stderr.write(`hub ${url}: ${countByKind(bad)} in its log (${logFile})\n`);
  };
  const hub: Hub = {
    url,
    adminToken,
    stateDir,
    caFile,
    pid: child.pid!,
    exitCode: () => child.exitCode,
    output: () => out,
    logFile,
    serverErrors: () => [...errors],
    stop: () => (stopping ??= stop()),
  };
  started.push(hub);
  return hub;
}

/**
 * The process IDs of the workerd processes a hub runs (descendants of its `npm start` process),
 * read from Linux's /proc: what a test kills to crash the hub.
 */
export function workerdPids(hub: Pick<Hub, "pid">): number[] {
  const command = (pid: number): string => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      return ""; // the process ended meanwhile
    }
  };
  return descendants(hub.pid).filter((pid) => /(^|\/)workerd\0/.test(command(pid)));
}

/** A response of the admin API: HTTP status and parsed JSON body. */
export interface AdminResponse {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/**
 * One HTTP request to the hub: fetch for http, node:https with the hub's local CA for https.
 * `headers` are added as given; the body is sent as is.
 */
export async function hubFetch(
  hub: { url: string; caFile?: string },
  method: string,
  apiPath: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; text: string }> {
  if (!hub.url.startsWith("https:")) {
    const res = await fetch(`${hub.url}${apiPath}`, { method, headers, body });
    return { status: res.status, text: await res.text() };
  }
  const ca = hub.caFile ? readFileSync(hub.caFile) : undefined;
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${hub.url}${apiPath}`, { method, headers, ca }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Calls the hub's admin API with the admin token. `contentType` defaults to JSON. */
export async function admin(hub: Hub, method: string, apiPath: string, body?: unknown, contentType = "application/json"): Promise<AdminResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${hub.adminToken}`, ...(body !== undefined ? { "content-type": contentType } : {}) };
  const res = await hubFetch(hub, method, apiPath, headers, body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body));
  let parsed: unknown = res.text;
  try {
    parsed = res.text ? JSON.parse(res.text) : undefined;
  } catch {
    // keep the text
  }
  return { status: res.status, body: parsed };
}

/**
 * Creates namespaces (core v1), as a user does before creating objects in them (the hub refuses
 * a create in a namespace that does not exist); one that exists already is fine.
 * @throws Error when the hub refuses a create for another reason
 */
export async function createNamespaces(hub: Hub, ...names: string[]): Promise<void> {
  for (const name of names) {
    const r = await admin(hub, "POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name } });
    if (r.status !== 201 && !(r.status === 409 && r.body?.reason === "AlreadyExists"))
      throw new Error(`creating namespace ${name} failed: ${r.status} ${JSON.stringify(r.body)}`);
  }
}

/** Creates a BootstrapToken and returns its secret (`<id>.<secret>`). @throws Error on failure */
export async function createBootstrapToken(hub: Hub, spec: Record<string, unknown> = {}): Promise<string> {
  const r = await admin(hub, "POST", "/apis/flotilla.dev/v1alpha1/bootstraptokens", { apiVersion: "flotilla.dev/v1alpha1", kind: "BootstrapToken", spec });
  if (r.status !== 201) throw new Error(`creating a bootstrap token failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.status.token as string;
}
