/**
 * The end-to-end tests' kit: agent processes, kubectl, scratch files and polling. API paths
 * shared with the Worker tests are in ../kit/api.ts (re-exported here).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Hub } from "../../scripts/hub-process.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const MC = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
export const merge = "application/merge-patch+json";

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

export { waitFor } from "../wait.ts";
export { BINDINGS, DECISIONS, MERGE_PATCH, MWRS, PLACEMENTS, POLICIES, SECRETS, WORKS } from "../kit/api.ts";

/** A scratch folder of a test file and a writer of files in it. */
export interface Scratch {
  /** The folder: a fresh one under the system's temporary folder. */
  dir: string;
  /** Writes `text` to the file `name` in {@link dir} (replacing it) and returns the file's path. */
  file(name: string, text: string): string;
}

/** A fresh scratch folder named `<prefix>XXXXXX` under the system's temporary folder (e.g. for kubeconfigs and manifests). */
export function scratchDir(prefix: string): Scratch {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return {
    dir,
    file(name, text) {
      const p = path.join(dir, name);
      writeFileSync(p, text);
      return p;
    },
  };
}

/** A condition of an object's status by type. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const cond = (mc: any, type: string) => (mc?.status?.conditions ?? []).find((c: { type: string }) => c.type === type);
/** The keys of a ManagedCluster's taints. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const taintKeys = (mc: any): string[] => (mc?.spec?.taints ?? []).map((t: { key: string }) => t.key);

/**
 * kubectl with the kubeconfig `kubeconfig()` names (read at each call), run in `dir`:
 * `kubectl(...args)` resolves its stdout (rejects when it fails); `kubectlFails(...args)`
 * resolves the stderr of a command that must fail (throws when it succeeds).
 */
export function kubectlWith(
  kubeconfig: () => string,
  dir: string,
): { kubectl: (...args: string[]) => Promise<string>; kubectlFails: (...args: string[]) => Promise<string> } {
  const kubectl = async (...args: string[]): Promise<string> =>
    (await promisify(execFile)("kubectl", ["--kubeconfig", kubeconfig(), ...args], { cwd: dir })).stdout;
  const kubectlFails = async (...args: string[]): Promise<string> => {
    try {
      await kubectl(...args);
    } catch (e) {
      return String((e as { stderr?: string }).stderr ?? e);
    }
    throw new Error(`kubectl ${args.join(" ")} succeeded`);
  };
  return { kubectl, kubectlFails };
}
