/**
 * Starts a real hub (`npm start`, i.e. `wrangler dev` on workerd with a local D1) in a child
 * process, for end-to-end tests and benchmarks, and a small admin client for it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
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
  /** How long to wait for the hub to answer, in milliseconds (default 90 000). */
  startTimeoutMs?: number;
}

/** A running hub. */
export interface Hub {
  url: string;
  adminToken: string;
  stateDir: string;
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
  const port = await freePort();
  const stateDir = opts.stateDir ?? mkdtempSync(path.join(tmpdir(), "flotilla-hub-"));
  const adminToken = `admin-${Math.random().toString(36).slice(2)}`;
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), FLOTILLA_STATE_DIR: stateDir, FLOTILLA_ADMIN_TOKEN: adminToken };
  if (opts.graceMultiplier !== undefined) env.FLOTILLA_LEASE_GRACE_MULTIPLIER = String(opts.graceMultiplier);
  const child = spawn(process.execPath, [path.join(root, "scripts", "start.mjs")], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], detached: false });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.startTimeoutMs ?? 90_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`hub exited with ${child.exitCode}:\n${out}`);
    try {
      const r = await fetch(`${url}/healthz`);
      if (r.ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      await stopProcess(child);
      throw new Error(`hub did not start within the timeout:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { url, adminToken, stateDir, output: () => out, stop: () => stopProcess(child) };
}

/** A response of the admin API: HTTP status and parsed JSON body. */
export interface AdminResponse {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** Calls the hub's admin API with the admin token. `contentType` defaults to JSON. */
export async function admin(hub: Hub, method: string, apiPath: string, body?: unknown, contentType = "application/json"): Promise<AdminResponse> {
  const res = await fetch(`${hub.url}${apiPath}`, {
    method,
    headers: { authorization: `Bearer ${hub.adminToken}`, ...(body !== undefined ? { "content-type": contentType } : {}) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
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
