// Bundles the dashboard (src/ui/app, Preact + TypeScript) with esbuild into dist/ui/assets/, and
// writes those files (less the source maps) as ES modules: each file's text in dist/ui/files/<n>.js,
// and their index dist/ui/files.js (with its types, dist/ui/files.d.ts), which the Worker imports
// (src/ui/routes.ts serves them at /ui/assets/*, with the page at /ui): the dashboard's files are
// part of the Worker's bundle, nothing comes from a CDN or from Workers static assets (each
// request under `wrangler dev` passed two more isolates with `[assets]`: docs/scale.md "kubectl
// apply"). Code split: the fleet view loads first, the placement view (which bundles the
// hub's scheduling modules) when opened. Run by `npm ci` (`prepare`: `npm run typecheck`, the
// lint and the Worker's tests need the module), `npm run build`, `npm start` (scripts/start.mjs),
// `npm run typecheck` and the test suites' global setups; `--if-stale` builds only when a file it
// was built from or wrote changed (SHA-256 of every input and output, as scripts/build-agent.mjs
// records them, in dist/ui-inputs.json).
//
// The files it reads from the hub's modules (src/ outside src/ui/app, agent/) must be those
// src/ui/app/shared-modules.json declares: the build fails when they differ (`npm run lint` checks
// the same declaration on the import graph, .dependency-cruiser.js).
import { build } from "esbuild";
import { TextDecoder } from "node:util";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outdir = path.join(root, "dist", "ui", "assets");
/** The generated module the Worker imports, and its declaration. */
const moduleFile = path.join("dist", "ui", "files.js");
const declarationFile = path.join("dist", "ui", "files.d.ts");
const bodiesDir = path.join("dist", "ui", "files");
const manifest = path.join(root, "dist", "ui-inputs.json");
/** The media types of the files esbuild writes, as Workers static assets answer them. */
const MEDIA_TYPES = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
};
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
  sourcemap: "external",
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
// The module: every file esbuild wrote but the source maps, by its path under /ui/assets/, with
// its media type and ETag. The maps (2.4 MB, 0.5 MiB gzipped: they would double the Worker's
// upload and add to every isolate's parse, docs/scale.md; the placement chunk's alone, 2 MB, is
// more than the Worker tests' runner can load as one module) stay in dist/ui/assets for local
// debugging and are not referenced by the files (`sourcemap: "external"`). The files are text
// (UTF-8: esbuild's JavaScript and CSS); a file of another kind fails the build.
const outputs = Object.keys(result.metafile.outputs).sort();
const served = outputs.filter((f) => !f.endsWith(".map"));
const utf8 = new TextDecoder("utf-8", { fatal: true });
const files = served.map((file) => {
  const bytes = readFileSync(path.join(root, file));
  const name = path.relative(outdir, path.join(root, file)).split(path.sep).join("/");
  const type = MEDIA_TYPES[path.extname(name)];
  if (!type) throw new Error(`build-ui: no media type for ${name}: add its extension to MEDIA_TYPES`);
  // Workers static assets' ETag is 32 hex digits of a SHA-256 too (of the file and its extension).
  const etag = createHash("sha256").update(bytes).digest("hex").slice(0, 32);
  return { name, type, etag, body: utf8.decode(bytes) };
});
// One module per file (dist/ui/files/<n>.js, its text as the default export) and an index of them:
// each module stays as small as its file, which the Worker tests' runner needs (it sends each
// module to workerd in one WebSocket message, which has a size limit: a 2 MB module failed with
// "Message is too large", 1.2 MB passed).
mkdirSync(path.join(root, bodiesDir), { recursive: true });
const bodyFiles = files.map((f, i) => {
  const file = path.join(bodiesDir, `${i}.js`);
  writeFileSync(path.join(root, file), `// ${f.name} (generated by scripts/build-ui.mjs)\nexport default ${JSON.stringify(f.body)};\n`);
  return file;
});
writeFileSync(
  path.join(root, moduleFile),
  [
    "// Generated by scripts/build-ui.mjs from src/ui/app: the dashboard's files, served by src/ui/routes.ts. Do not edit.",
    ...files.map((_, i) => `import body${i} from "./files/${i}.js";`),
    "export default {",
    ...files.map((f, i) => `  ${JSON.stringify(f.name)}: { type: ${JSON.stringify(f.type)}, etag: ${JSON.stringify(f.etag)}, body: body${i} },`),
    "};",
    "",
  ].join("\n"),
);
writeFileSync(
  path.join(root, declarationFile),
  [
    "// Generated by scripts/build-ui.mjs: the type of dist/ui/files.js. Do not edit.",
    "/** One file of the dashboard: its media type (`Content-Type`), ETag (32 hex digits of its SHA-256, without quotes) and text (UTF-8). */",
    "export interface DashboardFile {",
    "  readonly type: string;",
    "  readonly etag: string;",
    "  readonly body: string;",
    "}",
    "/** The dashboard's files by their path under /ui/assets/ (`app.js`, `chunks/placements-<hash>.js`, ...). */",
    "declare const files: Readonly<Record<string, DashboardFile>>;",
    "export default files;",
    "",
  ].join("\n"),
);
const recorded = [
  ...Object.keys(result.metafile.inputs).filter((f) => existsSync(path.join(root, f))),
  ...BUILD_FILES,
  ...outputs,
  ...bodyFiles,
  moduleFile,
  declarationFile,
];
writeFileSync(manifest, JSON.stringify({ files: Object.fromEntries(recorded.sort().map((f) => [f, sha256(f)])) }, null, 1) + "\n");
const js = Object.entries(result.metafile.outputs).filter(([f]) => f.endsWith(".js"));
console.log(
  `built dist/ui: ${js.length} files, ${(js.reduce((n, [, o]) => n + o.bytes, 0) / 1024).toFixed(0)} KiB of JavaScript, ${files.length} files in ${moduleFile} in ${(performance.now() - t0).toFixed(0)} ms`,
);
