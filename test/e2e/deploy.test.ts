/**
 * Deploying from a clean clone (issue 40): after `npm ci`, `npm run deploy` (scripts/deploy.mjs)
 * builds what the Worker serves and deploys; its `--dry-run`, which needs no Cloudflare account
 * and no network, runs here on the files a clone holds: it builds the dashboard and bundles the
 * Worker with the dashboard's files in it (no Workers static assets), with the operator's settings taken from an untracked file and nothing
 * written to the tracked ones.
 */
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "flotilla-deploy-"));

afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Every file under `dir`, relative to it with `/`, sorted. */
function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => path.relative(dir, path.join(d.parentPath, d.name)).split(path.sep).join("/"))
    .sort();
}

/** Runs a program to its end; resolves with its exit code and output. */
function runToEnd(cmd: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, out }));
  });
}

describe("npm run deploy -- --dry-run from a clean clone", () => {
  it("builds the dashboard, bundles the Worker with its files, and takes the operator's settings from an untracked file", async () => {
    // A clone: the files git would check out (tracked, and new ones not ignored), and the
    // repository's node_modules standing for `npm ci`'s.
    const clone = path.join(tmp, "clone");
    const listed = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: root, encoding: "utf8" });
    expect(listed.status).toBe(0);
    for (const f of listed.stdout.split("\0").filter(Boolean)) {
      if (!fs.existsSync(path.join(root, f))) continue; // deleted in the work tree, not yet committed
      fs.mkdirSync(path.dirname(path.join(clone, f)), { recursive: true });
      fs.copyFileSync(path.join(root, f), path.join(clone, f));
    }
    fs.symlinkSync(path.join(root, "node_modules"), path.join(clone, "node_modules"));
    expect(fs.existsSync(path.join(clone, "dist"))).toBe(false);
    const trackedConfig = fs.readFileSync(path.join(clone, "wrangler.toml"), "utf8");

    fs.mkdirSync(path.join(clone, ".flotilla", "deploy"), { recursive: true });
    fs.writeFileSync(
      path.join(clone, ".flotilla", "deploy", "staging.env"),
      ["FLOTILLA_DOMAINS=hub.staging.example.com", "FLOTILLA_OIDC_ISSUER_URL=https://issuer.example.com", "FLOTILLA_OIDC_AUDIENCE=flotilla", ""].join("\n"),
    );
    const env = { ...process.env, CLOUDFLARE_API_TOKEN: "", CLOUDFLARE_ACCOUNT_ID: "", WRANGLER_SEND_METRICS: "false" };
    const r = await runToEnd("npm", ["run", "deploy", "--", "--env", "staging", "--dry-run"], { cwd: clone, env });
    expect(r.code, r.out).toBe(0);
    // No `[assets]`: wrangler reads no assets directory, the files are modules of the bundle.
    expect(r.out).not.toMatch(/files from the assets directory/);
    expect(r.out).toContain("--dry-run: exiting now.");
    expect(r.out).toContain("env.DB (flotilla-staging)");
    expect(r.out).toContain("env.FLOTILLA_OIDC_ISSUER_URL");

    // The dashboard was built (dist/ui/assets, and the module dist/ui/files.js), and the Worker's
    // bundle holds its files: the script and its ETag as the generated module has them.
    expect(filesUnder(path.join(clone, "dist", "ui")).some((f) => /^assets\/.+\.js$/.test(f))).toBe(true);
    const bundle = fs.readFileSync(path.join(clone, "dist", "deploy", "staging", "bundle", "index.js"), "utf8");
    const appEtag = /"app\.js": \{ type: "text\/javascript; charset=utf-8", etag: "([0-9a-f]{32})"/.exec(
      fs.readFileSync(path.join(clone, "dist", "ui", "files.js"), "utf8"),
    )?.[1];
    expect(appEtag).toBeDefined();
    expect(bundle).toContain(`etag: "${appEtag}"`);
    const config = JSON.parse(fs.readFileSync(path.join(clone, "dist", "deploy", "staging", "wrangler.json"), "utf8"));
    expect(config).toMatchObject({
      name: "flotilla-staging",
      d1_databases: [{ binding: "DB", database_name: "flotilla-staging" }],
      routes: [{ pattern: "hub.staging.example.com", custom_domain: true }],
      vars: { FLOTILLA_OIDC_ISSUER_URL: "https://issuer.example.com", LEASE_GRACE_MULTIPLIER: "5" },
    });
    expect(config.d1_databases[0].database_id).toBeUndefined();
    // Nothing of the operator's went into the tracked files.
    expect(fs.readFileSync(path.join(clone, "wrangler.toml"), "utf8")).toBe(trackedConfig);
  });
});
