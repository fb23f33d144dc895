/**
 * vitest globalSetup of the node-side and crash suites, whose tests start the agent, the CLI and
 * the simulator from their bundles (agent/bin/*.js run dist/agent, which `npm run build` writes):
 * before any test, the bundles are built again when any file they were built from changed
 * (scripts/build-agent.mjs `--if-stale`, which compares SHA-256 digests: under 0.1 s when current,
 * a build of about 0.25 s otherwise, on the project's 2-core machine). Without it, a suite run after a merge or a checkout that
 * nothing rebuilt tests the older agent (the crash test once failed so on main: the agent's log
 * line of requests sent again was the one from before the merge).
 * @throws Error when the build fails (the suite does not start)
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Builds dist/agent when it is older than its sources, and the dashboard's files (dist/ui/files.js,
 * a module of the Worker the tests' hubs run) likewise, once before any hub starts (`npm start` builds them
 * too, but hubs started at once would each build).
 */
export default function setup(): void {
  execFileSync(process.execPath, [path.join(root, "scripts", "build-agent.mjs"), "--if-stale"], { cwd: root, stdio: "inherit" });
  execFileSync(process.execPath, [path.join(root, "scripts", "build-ui.mjs"), "--if-stale"], { cwd: root, stdio: "inherit" });
}
