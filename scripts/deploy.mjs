// `npm run deploy [-- --env NAME] [-- --dry-run]`: deploys the hub to Cloudflare from a clean clone
// (after `npm ci`), with nothing of the operator's in the tracked files:
//
//   1. builds the dashboard (scripts/build-ui.mjs writes dist/ui/files.js, a module the Worker
//      imports: its files are part of the Worker's bundle); wrangler bundles the Worker itself;
//   2. writes the configuration of environment NAME (default `production`) to
//      dist/deploy/NAME/wrangler.json: wrangler.toml with the operator's settings (below);
//   3. applies the D1 migrations to that environment's database (`wrangler d1 migrations apply
//      --remote`): migrations go first, so the code deployed next finds the schema it needs;
//   4. `wrangler deploy` of that configuration.
//
// With --dry-run it does 1, 2 and `wrangler deploy --dry-run` (bundles the Worker, the dashboard's files in it,
// and checks the configuration, offline, with no Cloudflare account) and nothing remote; CI runs
// it so (test/e2e/deploy.test.ts).
//
// The operator's settings of environment NAME come from the untracked file .flotilla/deploy/NAME.env
// (KEY=value lines; .flotilla/ is git-ignored) and from the process environment, which wins:
//   FLOTILLA_WORKER_NAME      the Worker's name (default `flotilla` for production, `flotilla-NAME` else)
//   FLOTILLA_D1_DATABASE      the D1 database's name (default: the Worker's name); wrangler finds it by
//                             name (create it once with `npx wrangler d1 create <name>`)
//   FLOTILLA_D1_DATABASE_ID   its id, to pin it instead of looking it up by name (optional)
//   FLOTILLA_DOMAINS          custom domains of the hub, comma-separated (optional; Cloudflare makes the
//                             DNS record and the certificate; the zone must be in the account)
//   FLOTILLA_WORKERS_DEV      `false` to turn the workers.dev URL off (default on)
//   CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_API_TOKEN   wrangler's own (or `npx wrangler login`)
// and, from the file only, any other KEY=value is a hub setting (a [vars] entry of wrangler.toml,
// e.g. FLOTILLA_OIDC_ISSUER_URL), set for that environment. Secrets never go here: they are put with
// `npx wrangler secret put NAME -c dist/deploy/NAME/wrangler.json` once the Worker exists.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs, parseEnv } from "node:util";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Settings read from the process environment or the file; every other key of the file is a var. */
const SETTINGS = ["FLOTILLA_WORKER_NAME", "FLOTILLA_D1_DATABASE", "FLOTILLA_D1_DATABASE_ID", "FLOTILLA_DOMAINS", "FLOTILLA_WORKERS_DEV"];

const { values } = parseArgs({
  options: { env: { type: "string", default: "production" }, "dry-run": { type: "boolean", default: false }, help: { type: "boolean", default: false } },
});
if (values.help) {
  console.log(
    readFileSync(fileURLToPath(import.meta.url), "utf8")
      .split("\nimport ")[0]
      .replace(/^\/\/ ?/gm, ""),
  );
  process.exit(0);
}
const envName = values.env;
if (!/^[a-z0-9][a-z0-9-]{0,30}$/.test(envName)) {
  console.error(`deploy: --env ${JSON.stringify(envName)}: a lowercase name of letters, digits and dashes`);
  process.exit(2);
}
const dryRun = values["dry-run"];

// ---- settings ------------------------------------------------------------------------------
const settingsFile = path.join(root, ".flotilla", "deploy", `${envName}.env`);
const fromFile = existsSync(settingsFile) ? parseEnv(readFileSync(settingsFile, "utf8")) : {};
const setting = (key) => process.env[key] ?? fromFile[key];
const workerName = setting("FLOTILLA_WORKER_NAME") ?? (envName === "production" ? "flotilla" : `flotilla-${envName}`);
const databaseName = setting("FLOTILLA_D1_DATABASE") ?? workerName;
const databaseId = setting("FLOTILLA_D1_DATABASE_ID");
const domains = (setting("FLOTILLA_DOMAINS") ?? "")
  .split(",")
  .map((d) => d.trim())
  .filter(Boolean);
const workersDev = setting("FLOTILLA_WORKERS_DEV") !== "false";
const vars = Object.fromEntries(Object.entries(fromFile).filter(([k]) => !SETTINGS.includes(k) && !k.startsWith("CLOUDFLARE_")));
// wrangler reads these from its environment.
const wranglerEnv = { ...process.env };
for (const k of ["CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN"]) if (wranglerEnv[k] === undefined && fromFile[k] !== undefined) wranglerEnv[k] = fromFile[k];

// ---- 1. build ------------------------------------------------------------------------------
execFileSync(process.execPath, [path.join(root, "scripts", "build-ui.mjs")], { stdio: "inherit", cwd: root });

// ---- 2. the environment's configuration ----------------------------------------------------
const { experimental_readRawConfig } = await import("wrangler");
const { rawConfig } = experimental_readRawConfig({ config: path.join(root, "wrangler.toml") });
const outDir = path.join(root, "dist", "deploy", envName);
mkdirSync(outDir, { recursive: true });
/** A path of wrangler.toml (relative to the repository) as seen from the generated file. */
const rebase = (p) => path.relative(outDir, path.resolve(root, p)).split(path.sep).join("/");
const dbs = rawConfig.d1_databases ?? [];
if (dbs.length !== 1 || dbs[0].binding !== "DB") throw new Error("deploy: wrangler.toml should have one [[d1_databases]], binding DB");
const config = {
  ...rawConfig,
  name: workerName,
  main: rebase(rawConfig.main),
  workers_dev: workersDev,
  vars: { ...(rawConfig.vars ?? {}), ...vars },
  // wrangler.toml's database_id names the local database (npm start, the tests); deployed, the
  // database is the operator's: by id when pinned, else found by name.
  d1_databases: [
    {
      binding: "DB",
      database_name: databaseName,
      ...(databaseId ? { database_id: databaseId } : {}),
      migrations_dir: rebase(dbs[0].migrations_dir ?? "migrations"),
    },
  ],
  ...(domains.length > 0 ? { routes: domains.map((pattern) => ({ pattern, custom_domain: true })) } : {}),
};
const configPath = path.join(outDir, "wrangler.json");
writeFileSync(configPath, JSON.stringify(config, null, 2) + "\n");
const rel = path.relative(root, configPath);
console.log(
  `deploy: ${rel}: Worker ${workerName}, D1 database ${databaseName}${databaseId ? ` (${databaseId})` : ""}` +
    `${domains.length ? `, custom domains ${domains.join(", ")}` : ""}${workersDev ? ", workers.dev on" : ", workers.dev off"}` +
    `${Object.keys(vars).length ? `, settings ${Object.keys(vars).join(", ")}` : ""}` +
    `${existsSync(settingsFile) ? ` (from ${path.relative(root, settingsFile)})` : ""}`,
);

// ---- 3 and 4 -------------------------------------------------------------------------------
const wrangler = path.join(root, "node_modules", "wrangler", "bin", "wrangler.js");
/** Runs wrangler with the generated configuration; exits with its code when it fails. */
function run(args) {
  console.log(`deploy: wrangler ${args.join(" ")}`);
  const r = spawnSync(process.execPath, [wrangler, ...args, "--config", configPath], { stdio: "inherit", cwd: root, env: wranglerEnv });
  if (r.status !== 0) {
    console.error(`deploy: wrangler ${args[0]} ${args[1] ?? ""} failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
}
if (dryRun) {
  run(["deploy", "--dry-run", "--outdir", path.join(outDir, "bundle")]);
  console.log(`deploy: dry run of ${envName} done; the Worker's bundle is in ${path.relative(root, path.join(outDir, "bundle"))}`);
} else {
  run(["d1", "migrations", "apply", "DB", "--remote"]);
  run(["deploy"]);
  console.log(
    [
      `deploy: ${envName} deployed. On a first deploy, put its secrets now (docs/install.md "Deploying the hub"):`,
      `  openssl rand -hex 32 | npx wrangler secret put FLOTILLA_ADMIN_TOKEN -c ${rel}`,
      `  echo "key1:$(openssl rand -base64 32)" | npx wrangler secret put FLOTILLA_ENCRYPTION_KEYS -c ${rel}`,
    ].join("\n"),
  );
}
