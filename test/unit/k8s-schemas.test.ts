/**
 * The built-in kinds' schemas (src/kinds/builtin/k8s-schemas.json) are what the installed
 * `kubernetes-models` gives (scripts/vendor-k8s-schemas.mjs `--check`): upgrading the package
 * without vendoring again fails here, naming the command.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

it("src/kinds/builtin/k8s-schemas.json is up to date with kubernetes-models", () => {
  const run = spawnSync(process.execPath, [path.join(root, "scripts", "vendor-k8s-schemas.mjs"), "--check"], { cwd: root, encoding: "utf8" });
  expect(run.stderr).toBe("");
  expect(run.status).toBe(0);
  expect(run.stdout).toContain("is up to date with kubernetes-models@");
});
