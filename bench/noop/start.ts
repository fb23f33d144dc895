/** Starts the benchmarks' no-op Worker (bench/noop/worker.ts) with `wrangler dev` on a free port. */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../scripts/hub-process.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");

/** A running no-op Worker: its URL and how to stop it. */
export interface NoopWorker {
  url: string;
  /** Process ID of its `wrangler dev` (its workerd processes run below it). */
  pid: number;
  /** Everything it printed so far. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts the no-op Worker under `wrangler dev` (local workerd, as the hub runs) and waits until
 * it answers. @throws Error when it does not answer within 90 000 milliseconds
 */
export async function startNoopWorker(): Promise<NoopWorker> {
  const port = await freePort();
  const wrangler = path.join(root, "node_modules/wrangler/bin/wrangler.js");
  const child: ChildProcess = spawn(
    process.execPath,
    [
      wrangler,
      "dev",
      "--config",
      path.join(here, "wrangler.toml"),
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--persist-to",
      mkdtempSync(path.join(tmpdir(), "flotilla-noop-")),
    ],
    {
      cwd: here,
      stdio: ["ignore", "pipe", "pipe"],
      // As `npm start` runs the hub: without wrangler's local explorer and observability.
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", X_LOCAL_OBSERVABILITY: "false", X_LOCAL_EXPLORER: "false" },
    },
  );
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the no-op Worker exited:\n${out}`);
    try {
      if ((await fetch(`${url}/agent/v1/clusters/x/heartbeat`, { method: "POST" })).status === 200) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`the no-op Worker did not start:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      const t = setTimeout(() => child.kill("SIGKILL"), 5000);
      child.once("exit", () => {
        clearTimeout(t);
        resolve();
      });
      child.kill("SIGTERM");
    });
  return { url, pid: child.pid!, output: () => out, stop };
}
