// Bundles the member-cluster agent, the `flotilla` CLI and the simulated cluster into plain
// JavaScript under dist/agent/ with esbuild (tree-shaken, minified identifiers kept readable in
// stack traces through names, ES modules, code split so that what only one program or only
// `--simulate` needs is loaded only there). The bins (agent/bin/*.js) run these bundles; no
// TypeScript compiler runs when the agent or the CLI starts. Run by `npm run build`, by npm's
// `prepare` (so `npm ci` builds), and by `npm test` before the tests that start the programs.
//
// Each build records the SHA-256 of every file it read (esbuild's metafile inputs, this script
// and esbuild's version) and of every file it wrote in dist/agent-inputs.json. With `--if-stale`
// it builds only when one of them changed since (or there is no record): the node-side and crash suites run it before their
// tests (test/agent-bundle.setup.ts), so a test never starts a bundle older than the sources,
// e.g. after a merge or a checkout, when nothing ran `npm run build`.
//
// The files it reads under src/ (the hub modules the agent shares) must be those
// agent/shared-modules.json declares, from which .dockerignore admits them to the image's build
// context: the build fails when they differ.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Node's built-in modules are loaded with require(), not import: an ES import of a built-in
 * evaluates every export, and some are lazy getters that load much more (an import of
 * `node:http` reads `http.WebSocket`, which loads undici, TLS, HTTP/2 and zlib: 113 internal
 * modules instead of 38, several MiB of resident memory in an agent that needs none of them).
 */
const builtinsAsRequire = {
  name: "builtins-as-require",
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) => {
      if (args.namespace === "builtin-require" || args.kind === "require-call") return { path: args.path, external: true };
      return args.kind === "import-statement" ? { path: args.path, namespace: "builtin-require" } : undefined;
    });
    b.onLoad({ filter: /.*/, namespace: "builtin-require" }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)});`, loader: "js" }));
  },
};

/**
 * The `ws` package requires `https` and `tls` (for `wss:` only) and `zlib` (for permessage-deflate,
 * which the agent turns off) when it loads. In the agent bundle they load at their first use
 * instead, as the agent's own HTTP clients load `node:https` only for an `https:` URL: a
 * connection to an `http:` hub does not pay TLS's 2.6 MiB of resident memory and zlib's 0.4 MiB
 * (an `https:` hub or member cluster loads TLS either way). `npm run bench:agent` measures it.
 */
const LAZY_IN_WS = new Set(["https", "tls", "zlib"]);
const lazyBuiltinsInWs = {
  name: "lazy-builtins-in-ws",
  setup(b) {
    b.onResolve({ filter: /^(https|tls|zlib)$/ }, (args) =>
      args.kind === "require-call" && LAZY_IN_WS.has(args.path) && /[\\/]node_modules[\\/]ws[\\/]/.test(args.importer)
        ? { path: args.path, namespace: "lazy-builtin" }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "lazy-builtin" }, (args) => ({
      contents: `let m; module.exports = new Proxy({}, { get: (_, k) => (m ??= require(${JSON.stringify(`node:${args.path}`)}))[k], has: (_, k) => k in (m ??= require(${JSON.stringify(`node:${args.path}`)})) });`,
      loader: "js",
    }));
  },
};

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outdir = path.join(root, "dist", "agent");
/** `{ files: { <path from the repository root>: <SHA-256 hex> } }` of the last build's inputs and outputs. */
const manifest = path.join(root, "dist", "agent-inputs.json");
/** Files the build depends on beside esbuild's inputs. */
const BUILD_FILES = ["scripts/build-agent.mjs", "agent/shared-modules.json", "node_modules/esbuild/package.json"];
const sha256 = (file) =>
  createHash("sha256")
    .update(readFileSync(path.join(root, file)))
    .digest("hex");

/** Whether the bundle in dist/agent is the one the last build wrote, from the files as they are now. */
function current() {
  if (!existsSync(manifest)) return false;
  let files;
  try {
    files = JSON.parse(readFileSync(manifest, "utf8")).files;
  } catch {
    return false;
  }
  if (!files || typeof files !== "object") return false;
  return Object.entries(files).every(([file, hash]) => existsSync(path.join(root, file)) && sha256(file) === hash);
}

if (process.argv.includes("--if-stale") && current()) process.exit(0);
rmSync(manifest, { force: true });
rmSync(outdir, { recursive: true, force: true });
const t0 = performance.now();
const result = await build({
  absWorkingDir: root,
  entryPoints: {
    "flotilla-agent": "agent/src/main.ts",
    flotilla: "agent/cli/main.ts",
    "flotilla-sim": "agent/sim/main.ts",
  },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node22",
  minifySyntax: true,
  minifyWhitespace: true,
  keepNames: true,
  sourcemap: "linked",
  legalComments: "linked",
  chunkNames: "chunks/[name]-[hash]",
  // .mjs: ES modules wherever the files are copied, with no package.json beside them.
  outExtension: { ".js": ".mjs" },
  metafile: true,
  plugins: [lazyBuiltinsInWs, builtinsAsRequire],
  // CommonJS dependencies (yaml, commander) call require() for Node's built-ins.
  banner: { js: 'import { createRequire as __flotillaCreateRequire } from "node:module"; const require = __flotillaCreateRequire(import.meta.url);' },
  logLevel: "warning",
});
// The hub modules the bundle read must be exactly those agent/shared-modules.json declares: the
// image's build context (.dockerignore, written from that file) holds only those under src/.
const declared = JSON.parse(readFileSync(path.join(root, "agent", "shared-modules.json"), "utf8")).modules;
const read = Object.keys(result.metafile.inputs).filter((f) => f.startsWith("src/"));
const undeclared = read.filter((f) => !declared.includes(f));
const unused = declared.filter((f) => !read.includes(f));
if (undeclared.length > 0 || unused.length > 0) {
  rmSync(outdir, { recursive: true, force: true });
  console.error(
    [
      "build-agent: agent/shared-modules.json does not match the hub modules the agent's bundle reads.",
      ...undeclared.map((f) => `  read but not declared: ${f}`),
      ...unused.map((f) => `  declared but not read: ${f}`),
      "Fix the list, then run `npm run image:context` to write .dockerignore (the image's build context) from it.",
    ].join("\n"),
  );
  process.exit(1);
}
// Inputs outside the file system (this script's `builtin-require:` and `lazy-builtin:` modules) are
// made by the plugins above, which BUILD_FILES covers.
const recorded = [
  ...Object.keys(result.metafile.inputs).filter((f) => existsSync(path.join(root, f))),
  ...BUILD_FILES,
  ...Object.keys(result.metafile.outputs),
];
writeFileSync(manifest, JSON.stringify({ files: Object.fromEntries(recorded.sort().map((f) => [f, sha256(f)])) }, null, 1) + "\n");
const bytes = Object.entries(result.metafile.outputs)
  .filter(([f]) => f.endsWith(".mjs"))
  .reduce((n, [, o]) => n + o.bytes, 0);
console.log(
  `built dist/agent: ${Object.keys(result.metafile.outputs).filter((f) => f.endsWith(".mjs")).length} files, ${(bytes / 1024).toFixed(0)} KiB of JavaScript in ${(performance.now() - t0).toFixed(0)} ms`,
);
