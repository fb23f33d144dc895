/**
 * The end-to-end tests' kit: kubectl, scratch files and polling, and (re-exported) the pieces of
 * ../kit/ they share with the CLI, agent and crash tests: API paths (api.ts), agent processes
 * (agents.ts), member clusters joined to a hub (members.ts), cluster sets (clustersets.ts) and the
 * admin kubeconfig (kubeconfig.ts).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

/** The collection path of ManagedClusters (../kit/api.ts `MC`). */
export { MC } from "../kit/api.ts";
/** The content type of a JSON merge patch (../kit/api.ts `MERGE_PATCH`). */
export { MERGE_PATCH as merge } from "../kit/api.ts";

export { startAgent, stopAgent, type AgentProcess } from "../kit/agents.ts";
export { waitFor } from "../wait.ts";
export { accept, createAvailableCluster, joinMembers, stopAll, waitAvailable, type Member } from "../kit/members.ts";
export { adminKubeconfigYaml, writeAdminKubeconfig } from "../kit/kubeconfig.ts";
export { bindClusterSet, createClusterSet } from "../kit/clustersets.ts";
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
