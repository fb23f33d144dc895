/**
 * Starts a real hub (`npm start`, i.e. `wrangler dev` on workerd with a local D1) in a child
 * process, for end-to-end tests and benchmarks, and a small admin client for it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { descendants } from "./proc.mjs";
import { createWriteStream, mkdtempSync, readFileSync } from "node:fs";
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
  /** Extra arguments of `wrangler dev` (`npm start` passes them on), e.g. `--config` of another entry. */
  wranglerArgs?: string[];
  /** A file that gets a copy of everything the hub prints, as it prints it (a benchmark's record). */
  logFile?: string;
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
  /** Stops the hub (SIGTERM, then SIGKILL after 5 s). */
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/**
 * Starts `node scripts/start.mjs` on a free port and waits until `/healthz` answers.
 *
 * @throws Error when the hub exits or does not answer within `startTimeoutMs`.
 */
export async function startHub(opts: HubOptions = {}): Promise<Hub> {
  const port = opts.port ?? (await freePort());
  const stateDir = opts.stateDir ?? mkdtempSync(path.join(tmpdir(), "flotilla-hub-"));
  const adminToken = opts.adminToken ?? `admin-${Math.random().toString(36).slice(2)}`;
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), FLOTILLA_STATE_DIR: stateDir, FLOTILLA_ADMIN_TOKEN: adminToken };
  if (opts.graceMultiplier !== undefined) env.FLOTILLA_LEASE_GRACE_MULTIPLIER = String(opts.graceMultiplier);
  if (opts.leaveTimeoutSeconds !== undefined) env.FLOTILLA_LEAVE_TIMEOUT_SECONDS = String(opts.leaveTimeoutSeconds);
  if (opts.https) env.FLOTILLA_HTTPS = "1";
  const child = spawn(process.execPath, [path.join(root, "scripts", "start.mjs"), ...(opts.wranglerArgs ?? [])], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], detached: false });
  let out = "";
  const log = opts.logFile ? createWriteStream(opts.logFile) : undefined;
  child.stdout!.on("data", (d: Buffer) => ((out += d.toString()), log?.write(d)));
  child.stderr!.on("data", (d: Buffer) => ((out += d.toString()), log?.write(d)));
  const url = `${opts.https ? "https" : "http"}://127.0.0.1:${port}`;
  const caFile = opts.https ? path.join(stateDir, "tls", "ca.crt") : undefined;
  const deadline = Date.now() + (opts.startTimeoutMs ?? 90_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`hub exited with ${child.exitCode}:\n${out}`);
    try {
      const r = await hubFetch({ url, caFile }, "GET", "/healthz");
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
  return { url, adminToken, stateDir, caFile, pid: child.pid!, exitCode: () => child.exitCode, output: () => out, stop: () => stopProcess(child) };
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
export async function hubFetch(hub: { url: string; caFile?: string }, method: string, apiPath: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; text: string }> {
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

/** Creates a BootstrapToken and returns its secret (`<id>.<secret>`). @throws Error on failure */
export async function createBootstrapToken(hub: Hub, spec: Record<string, unknown> = {}): Promise<string> {
  const r = await admin(hub, "POST", "/apis/flotilla.dev/v1alpha1/bootstraptokens", { apiVersion: "flotilla.dev/v1alpha1", kind: "BootstrapToken", spec });
  if (r.status !== 201) throw new Error(`creating a bootstrap token failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.status.token as string;
}
