/**
 * The test kit's agent processes: `flotilla-agent` started as a child process against a hub that a
 * test started (scripts/hub-process.ts `startHub`), its output collected, and its exit awaited.
 * Node only (end-to-end, CLI, agent and crash tests).
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Hub } from "../../scripts/hub-process.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** A running `flotilla-agent` process, its output so far, and its exit. */
export interface AgentProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/**
 * Starts `flotilla-agent --simulate` against `hub` with extra CLI arguments (without `--simulate`
 * when `simulate` is false: the arguments then name the member cluster, e.g. `--kubeconfig`). For
 * an HTTPS hub the hub's local CA is trusted through NODE_EXTRA_CA_CERTS.
 */
export function startAgent(hub: Pick<Hub, "url" | "caFile">, args: string[], simulate = true): AgentProcess {
  const child = spawn(process.execPath, [path.join(root, "agent/bin/flotilla-agent.js"), "--hub-url", hub.url, ...(simulate ? ["--simulate"] : []), ...args], {
    cwd: root,
    env: { ...process.env, FLOTILLA_BOOTSTRAP_TOKEN: "", ...(hub.caFile ? { NODE_EXTRA_CA_CERTS: hub.caFile } : {}) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => out, exited };
}

/** Stops an agent with SIGTERM and waits for it to exit. */
export async function stopAgent(a: AgentProcess): Promise<void> {
  if (a.child.exitCode === null) a.child.kill("SIGTERM");
  await a.exited;
}
