/**
 * Which requests reach the Worker without the static-assets check (wrangler.toml `[assets]`
 * `run_worker_first`, issue 42). Without the setting, Workers' asset router asks the asset worker
 * for every request whether a file of its path exists (an RPC between isolates and a manifest
 * lookup) before it hands the request to the Worker; the Kubernetes API, the agents' API and the
 * proxy have no file under them, so they go to the Worker first. The dashboard's files keep being
 * served as assets.
 *
 * The rules are matched as the router matches them (workers-shared's `generateGlobOnlyRuleRegExp`:
 * the whole path, `*` any characters, `/` included; a rule starting `!/` sends its paths to the
 * assets).
 */
import path from "node:path";
import { experimental_readRawConfig } from "wrangler";
import { describe, expect, it } from "vitest";

const root = path.join(import.meta.dirname, "..", "..");

/** Whether `pathname` matches a glob rule of `run_worker_first`, as the asset router reads it. */
function matches(rule: string, pathname: string): boolean {
  const source = rule
    .split("*")
    .map((s) => s.replace(/[-/\\^$*+?.()|[\]{}]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${source}$`).test(pathname);
}

/** Whether the router hands a request for `pathname` to the Worker without asking the asset worker. */
function workerFirst(rules: readonly string[] | boolean | undefined, pathname: string): boolean {
  if (typeof rules === "boolean") return rules;
  if (!rules) return false;
  if (rules.some((r) => r.startsWith("!/") && matches(r.slice(1), pathname))) return false;
  return rules.some((r) => r.startsWith("/") && matches(r, pathname));
}

describe("wrangler.toml [assets] run_worker_first", () => {
  const { rawConfig } = experimental_readRawConfig({ config: path.join(root, "wrangler.toml") });
  const rules = rawConfig.assets?.run_worker_first;

  it.each([
    "/api",
    "/api/v1/namespaces/bench-apply/configmaps/absent-1",
    "/api/v1/namespaces/bench-apply",
    "/apis",
    "/apis/apps/v1/namespaces/bench-apply/deployments",
    "/agent/v1/clusters/c1/works",
    "/clusters/c1/proxy/api/v1/pods",
  ])("sends %s to the Worker without the asset check", (pathname) => {
    expect(workerFirst(rules, pathname)).toBe(true);
  });

  it.each(["/ui/assets/app.js", "/ui/assets/app.css", "/ui/assets/chunks/placements-EZPEU6P7.js"])("leaves %s to the assets", (pathname) => {
    expect(workerFirst(rules, pathname)).toBe(false);
  });
});
