/**
 * Helpers for the CLI tests: run `flotilla` as a child process in a clean environment.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Hub } from "../../scripts/hub-process.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The outcome of one CLI run. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Options of {@link flotilla}. */
export interface RunOptions {
  /** Sets FLOTILLA_HUB_URL and FLOTILLA_ADMIN_TOKEN to this hub's. */
  hub?: Hub;
  /** Extra environment (wins over `hub`). */
  env?: Record<string, string>;
  /** Kill the CLI after this many milliseconds (default 120 000). */
  timeoutMs?: number;
  /** Called with the whole stderr so far each time the CLI writes to it (to wait on what it says while it runs). */
  onStderr?: (stderr: string) => void;
}

/** A temporary folder for the tests' config files and state. */
export const scratch = mkdtempSync(path.join(tmpdir(), "flotilla-cli-"));

/**
 * The environment of a CLI run: the test process's without any FLOTILLA_* variable, with an
 * empty config home and a state folder of its own, so that nothing of the machine leaks in.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("FLOTILLA_")) env[k] = v;
  return { ...env, XDG_CONFIG_HOME: path.join(scratch, "config-home"), FLOTILLA_STATE_DIR: path.join(scratch, "state"), ...extra };
}

/** Runs `node agent/bin/flotilla.js ...args` and collects its exit code and output. */
export function flotilla(args: string[], opts: RunOptions = {}): Promise<CliRun> {
  const hubEnv: Record<string, string> = opts.hub ? { FLOTILLA_HUB_URL: opts.hub.url, FLOTILLA_ADMIN_TOKEN: opts.hub.adminToken } : {};
  const child = spawn(process.execPath, [path.join(root, "agent/bin/flotilla.js"), ...args], {
    cwd: root,
    env: cleanEnv({ ...hubEnv, ...opts.env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  return collect(child, opts.timeoutMs ?? 120_000, opts.onStderr);
}

function collect(child: ChildProcess, timeoutMs: number, onStderr?: (stderr: string) => void): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString();
    onStderr?.(stderr);
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  return new Promise((resolve) =>
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}
