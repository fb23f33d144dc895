/**
 * The test kit's admin kubeconfig: what `flotilla kubeconfig` prints for a hub a test started
 * (scripts/hub-process.ts `startHub`), so that kubectl and other clients reach it as the admin.
 * Node only.
 */
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Hub } from "../../scripts/hub-process.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The admin kubeconfig (YAML) of `hub`, as `flotilla kubeconfig --hub-url URL --token ADMIN
 * --ca-file CA` prints it: the admin token as the user's bearer token, the hub's local CA when it
 * serves HTTPS.
 * @throws Error when the CLI fails (its stderr in the message)
 */
export async function adminKubeconfigYaml(hub: Pick<Hub, "url" | "adminToken" | "caFile">): Promise<string> {
  const args = [path.join(root, "agent/bin/flotilla.js"), "kubeconfig", "--hub-url", hub.url, "--token", hub.adminToken];
  if (hub.caFile) args.push("--ca-file", hub.caFile);
  return (await promisify(execFile)(process.execPath, args, { cwd: root })).stdout;
}

/**
 * Writes {@link adminKubeconfigYaml} of `hub` to `<dir>/kubeconfig` (replacing it) and returns
 * that file's path.
 * @throws Error when the CLI fails
 */
export async function writeAdminKubeconfig(hub: Pick<Hub, "url" | "adminToken" | "caFile">, dir: string): Promise<string> {
  const file = path.join(dir, "kubeconfig");
  writeFileSync(file, await adminKubeconfigYaml(hub));
  return file;
}
