// Bundles the dashboard (src/ui/app, Preact + TypeScript) with esbuild into dist/ui/ui/assets/,
// which wrangler.toml's `[assets]` serves as Workers static assets at /ui/assets/* (nothing comes
// from a CDN). The page itself (`/ui`) is served by the Worker (src/ui/routes.ts). Code split: the
// fleet view loads first, the placement view (which bundles the hub's scheduling modules) when
// opened. Run by `npm run build`, by `npm start` (scripts/start.mjs) and by the test suites'
// global setups; `--if-stale` builds only when a file it was built from changed (SHA-256 of every
// input, as scripts/build-agent.mjs records them, in dist/ui-inputs.json).
//
// The files it reads from the hub's modules (src/ outside src/ui/app, agent/) must be those
// src/ui/app/shared-modules.json declares: the build fails when they differ (`npm run lint` checks
// the same declaration on the import graph, .dependency-cruiser.js).
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outdir = path.join(root, "dist", "ui", "ui", "assets");
const manifest = path.join(root, "dist", "ui-inputs.json");
const BUILD_FILES = ["scripts/build-ui.mjs", "src/ui/app/shared-modules.json", "node_modules/esbuild/package.json"];
const sha256 = (file) =>
  createHash("sha256")
    .update(readFileSync(path.join(root, file)))
    .digest("hex");

function current() {
  if (!existsSync(manifest)) return false;
  try {
    const files = JSON.parse(readFileSync(manifest, "utf8")).files;
    return Object.entries(files).every(([file, hash]) => existsSync(path.join(root, file)) && sha256(file) === hash);
  } catch {
    return false;
  }
}

if (process.argv.includes("--if-stale") && current()) process.exit(0);
rmSync(manifest, { force: true });
rmSync(path.join(root, "dist", "ui"), { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });
const t0 = performance.now();
const result = await build({
  absWorkingDir: root,
  entryPoints: { app: "src/ui/app/main.tsx" },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "browser",
  target: ["es2022", "chrome110", "firefox110", "safari16"],
  jsx: "automatic",
  jsxImportSource: "preact",
  minify: true,
  sourcemap: "linked",
  legalComments: "linked",
  chunkNames: "chunks/[name]-[hash]",
  metafile: true,
  logLevel: "warning",
});
// The hub modules the bundle read must be exactly those src/ui/app/shared-modules.json declares.
const declared = JSON.parse(readFileSync(path.join(root, "src", "ui", "app", "shared-modules.json"), "utf8")).modules;
const read = Object.keys(result.metafile.inputs).filter((f) => /^(src|agent|durable-objects)\//.test(f) && !f.startsWith("src/ui/app/"));
const undeclared = read.filter((f) => !declared.includes(f));
const unused = declared.filter((f) => !read.includes(f));
if (undeclared.length > 0 || unused.length > 0) {
  rmSync(path.join(root, "dist", "ui"), { recursive: true, force: true });
  console.error(
    [
      "build-ui: src/ui/app/shared-modules.json does not match the hub modules the dashboard's bundle reads.",
      ...undeclared.map((f) => `  read but not declared: ${f}`),
      ...unused.map((f) => `  declared but not read: ${f}`),
    ].join("\n"),
  );
  process.exit(1);
}
const recorded = [
  ...Object.keys(result.metafile.inputs).filter((f) => existsSync(path.join(root, f))),
  ...BUILD_FILES,
  ...Object.keys(result.metafile.outputs),
];
writeFileSync(manifest, JSON.stringify({ files: Object.fromEntries(recorded.sort().map((f) => [f, sha256(f)])) }, null, 1) + "\n");
const js = Object.entries(result.metafile.outputs).filter(([f]) => f.endsWith(".js"));
console.log(
  `built dist/ui: ${js.length} files, ${(js.reduce((n, [, o]) => n + o.bytes, 0) / 1024).toFixed(0)} KiB of JavaScript in ${(performance.now() - t0).toFixed(0)} ms`,
);
