// Bundles the member-cluster agent, the `flotilla` CLI and the simulated cluster into plain
// JavaScript under dist/agent/ with esbuild (tree-shaken, minified identifiers kept readable in
// stack traces through names, ES modules, code split so that what only one program or only
// `--simulate` needs is loaded only there). The bins (agent/bin/*.js) run these bundles; no
// TypeScript compiler runs when the agent or the CLI starts. Run by `npm run build`, by npm's
// `prepare` (so `npm ci` builds), and by `npm test` before the tests that start the programs.
import { build } from "esbuild";
import { rmSync } from "node:fs";
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
      args.kind === "require-call" && LAZY_IN_WS.has(args.path) && /[\\/]node_modules[\\/]ws[\\/]/.test(args.importer) ? { path: args.path, namespace: "lazy-builtin" } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "lazy-builtin" }, (args) => ({
      contents: `let m; module.exports = new Proxy({}, { get: (_, k) => (m ??= require(${JSON.stringify(`node:${args.path}`)}))[k], has: (_, k) => k in (m ??= require(${JSON.stringify(`node:${args.path}`)})) });`,
      loader: "js",
    }));
  },
};

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outdir = path.join(root, "dist", "agent");
rmSync(outdir, { recursive: true, force: true });
const t0 = performance.now();
const result = await build({
  absWorkingDir: root,
  entryPoints: {
    "flotilla-agent": "agent/src/main.ts",
    flotilla: "agent/admin/main.ts",
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
const bytes = Object.entries(result.metafile.outputs)
  .filter(([f]) => f.endsWith(".mjs"))
  .reduce((n, [, o]) => n + o.bytes, 0);
console.log(`built dist/agent: ${Object.keys(result.metafile.outputs).filter((f) => f.endsWith(".mjs")).length} files, ${(bytes / 1024).toFixed(0)} KiB of JavaScript in ${(performance.now() - t0).toFixed(0)} ms`);
