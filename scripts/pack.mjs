// `npm run pack`: the installable package of the `flotilla` CLI and the `flotilla-agent` agent,
// dist/flotilla-<version>.tgz. It holds the two launchers (agent/bin/*.js), the bundles they run
// (dist/agent/*.mjs and their chunks, which scripts/build-agent.mjs writes with every library
// they use inside) and the licences of those libraries: no TypeScript, no tests, and no
// dependencies, so `npm install -g dist/flotilla-<version>.tgz` installs one package and nothing of
// the hub's toolchain (wrangler, workerd). The repository's own package.json stays the private
// workspace of the hub, whose `dependencies` are what the Worker and the bundles are built from.
//
// The package is laid out in dist/pkg/ (package.json written here) and packed there with `npm pack`;
// it prints the tarball's path. test/agent/install.test.ts installs it into an empty folder and runs both
// programs against a hub.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const pkgDir = path.join(root, "dist", "pkg");
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));

execFileSync(process.execPath, [path.join(root, "scripts", "build-agent.mjs"), "--if-stale"], { stdio: "inherit" });

rmSync(pkgDir, { recursive: true, force: true });
mkdirSync(pkgDir, { recursive: true });
for (const bin of Object.values(pkg.bin)) cpSync(path.join(root, bin), path.join(pkgDir, bin));
// The bundles, without their source maps (which name the repository's files, not the package's).
cpSync(path.join(root, "dist", "agent"), path.join(pkgDir, "dist", "agent"), {
  recursive: true,
  filter: (src) => !src.endsWith(".map"),
});

// The licences of the libraries inside the bundles: every package esbuild read a file of.
const inputs = Object.keys(JSON.parse(readFileSync(path.join(root, "dist", "agent-inputs.json"), "utf8")).files);
const packages = [
  ...new Set(
    inputs
      .filter((f) => f.startsWith("node_modules/") && !f.startsWith("node_modules/esbuild/"))
      .map((f) => {
        const parts = f.split("/");
        return parts.slice(0, parts[1].startsWith("@") ? 3 : 2).join("/");
      }),
  ),
].sort();
const notices = packages.map((dir) => {
  const meta = JSON.parse(readFileSync(path.join(root, dir, "package.json"), "utf8"));
  const file = readdirSync(path.join(root, dir)).find((f) => /^(licen[cs]e|copying)(\..*)?$/i.test(f));
  const text = file ? readFileSync(path.join(root, dir, file), "utf8").trim() : `License: ${meta.license ?? "see the package"}`;
  return `${meta.name}@${meta.version} (${meta.license ?? "unknown"})\n\n${text}\n`;
});
writeFileSync(path.join(pkgDir, "THIRD_PARTY_LICENSES.txt"), `Libraries bundled into dist/agent/*.mjs\n\n${notices.join("\n" + "-".repeat(72) + "\n\n")}`);

writeFileSync(
  path.join(pkgDir, "README.md"),
  `# ${pkg.name} ${pkg.version}: the Flotilla CLI and agent

- \`flotilla\`: the admin CLI of a Flotilla hub (\`flotilla --help\`).
- \`flotilla-agent\`: the member-cluster agent (\`flotilla-agent --help\`; \`flotilla-agent install\`
  prints the manifests that run it in a cluster, \`--simulate\` runs it against a simulated cluster).

Node.js ${pkg.engines.node}. Self-contained bundles: the package has no dependencies.
The hub, its deployment and the agent's container image: the Flotilla repository's README.md and
docs/install.md.
`,
);

const manifest = {
  name: pkg.name,
  version: pkg.version,
  description: "The Flotilla admin CLI (flotilla) and member-cluster agent (flotilla-agent), bundled: no dependencies.",
  type: "module",
  engines: pkg.engines,
  bin: pkg.bin,
  files: [...Object.values(pkg.bin), "dist/agent/", "THIRD_PARTY_LICENSES.txt"],
};
writeFileSync(path.join(pkgDir, "package.json"), JSON.stringify(manifest, null, 2) + "\n");

const out = JSON.parse(execFileSync("npm", ["pack", "--json", "--pack-destination", path.join(root, "dist")], { cwd: pkgDir, encoding: "utf8" }));
const tarball = path.join(root, "dist", out[0].filename);
if (!existsSync(tarball)) throw new Error(`npm pack wrote no ${tarball}`);
console.log(`${path.relative(root, tarball)}: ${out[0].entryCount} files, ${(out[0].size / 1024).toFixed(0)} KiB`);
