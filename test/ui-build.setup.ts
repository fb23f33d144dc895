/**
 * vitest globalSetup of the Worker suite (vitest.config.ts): the Worker imports the dashboard's
 * files as a module (dist/ui/files.js, src/ui/routes.ts), so before the suite bundles it the
 * dashboard is built again when a file it was built from changed (scripts/build-ui.mjs
 * `--if-stale`: under 0.1 s when current, about 0.3 s otherwise). `npm ci` builds it once
 * (`prepare`); this keeps it current after a change to src/ui/app or a checkout.
 * @throws Error when the build fails (the suite does not start)
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Builds dist/ui (and its module dist/ui/files.js) when it is older than its sources. */
export default function setup(): void {
  execFileSync(process.execPath, [path.join(root, "scripts", "build-ui.mjs"), "--if-stale"], { cwd: root, stdio: "inherit" });
}
