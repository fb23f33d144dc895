/** Starts the benchmarks' no-op Worker (bench/noop/worker.ts) with `wrangler dev` on a free port. */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, hubFetch } from "../../scripts/hub-process.ts";

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

/** Options of {@link startNoopWorker}. */
export interface NoopOptions {
  /**
   * Serve HTTPS with this key and certificate (PEM files), as `FLOTILLA_HTTPS=1` serves the hub
   * (`wrangler dev --local-protocol https`); `ca` is the file of the CA that signed it.
   */
  tls?: { key: string; cert: string; ca: string };
  /** Variables of the Worker (`wrangler dev --var`), e.g. `BENCH_FORWARD_URL`. */
  vars?: Record<string, string>;
  /**
   * Whether wrangler prints a line per request, as `npm start` with `FLOTILLA_LOG_REQUESTS=1`
   * and startHub (scripts/hub-process.ts) run the hub; default true. false: `--log-level warn`,
   * as `npm start` runs the hub by default (bench:kinds, bench:apply-requests).
   */
  logRequests?: boolean;
}

/**
 * Starts the no-op Worker under `wrangler dev` (local workerd, as the hub runs) and waits until
 * it answers. @throws Error when it does not answer within 90 000 milliseconds
 */
export async function startNoopWorker(opts: NoopOptions = {}): Promise<NoopWorker> {
  const port = await freePort();
  const tls = opts.tls ? ["--local-protocol", "https", "--https-key-path", opts.tls.key, "--https-cert-path", opts.tls.cert] : [];
  const vars = Object.entries(opts.vars ?? {}).flatMap(([k, v]) => ["--var", `${k}:${v}`]);
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
      ...tls,
      ...vars,
      ...((opts.logRequests ?? true) ? [] : ["--log-level", "warn"]),
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
  const url = `${opts.tls ? "https" : "http"}://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the no-op Worker exited:\n${out}`);
    try {
      if ((await hubFetch({ url, caFile: opts.tls?.ca }, "POST", "/agent/v1/clusters/x/heartbeat")).status === 200) break;
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
