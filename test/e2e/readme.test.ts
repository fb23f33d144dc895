/**
 * The README is tested (issue 40): its ```sh and ```bash blocks run verbatim, in the README's
 * order, in bash, against a hub this test starts, so an example that fails fails the build.
 *
 * Conventions, an HTML comment on the line right before a block's opening fence:
 * - `<!-- not run: <why> -->`: the block is not run (it deploys to Cloudflare, it needs an OpenID
 *   Connect issuer, ...). Say why.
 * - `<!-- hub: <anything> -->`: the block starts the hub (`npm start`, `FLOTILLA_HTTPS=1 npm
 *   start`). The test starts it instead, the way `npm start` does (scripts/hub-process.ts runs
 *   scripts/start.mjs), on one state folder and one port for the whole README, with HTTPS when the
 *   block sets `FLOTILLA_HTTPS=1`; a later hub block stops the hub and starts it again on the same
 *   state, as a reader restarting `npm start` does.
 * - `<!-- file: <name> -->` before a block of another language (the YAML a later command applies
 *   as `kubectl apply -f <name>`): the script writes it to that file, as a reader saves it.
 * - Every other sh/bash block runs, verbatim (a block indented in a list item loses that indent).
 *
 * How they run: the blocks between two hub blocks run as one bash script (`set -eo pipefail`: any
 * command that fails fails the test, naming the README line of its block) in the clone's folder,
 * as a newcomer's second shell after `npm ci`: the test's PATH (Node 22, no node_modules/.bin: the
 * README says `npx`), HOME a fresh folder, no FLOTILLA_* or KUBECONFIG of the caller, and the
 * hub's `PORT` and `FLOTILLA_STATE_DIR` (the README's commands honour both, defaulting to 8787
 * and .wrangler/state). The hub's admin token is in `<state>/admin-token`, as `npm start` writes
 * it. What a script exports is exported to the next one. Background jobs (agents) keep running
 * until the end, then every process group the scripts started is stopped. What the README writes
 * in the clone (`.flotilla/sim/cluster{1,2,3,4}.json`, `*.kubeconfig`, `hello.yaml`,
 * `kubefleet-demo-crd.yaml`, `kubefleet-demo.yaml`) is moved aside first and put back after.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, startHub, type Hub } from "../../scripts/hub-process.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** A fenced block of the README and what to do with it. */
interface Block {
  /** 1-based line of the opening fence. */
  line: number;
  /** `run`, `skip` (not run), `hub` (the test starts the hub) or `file` (saved as `file`). */
  mode: "run" | "skip" | "hub" | "file";
  code: string;
  /** The file a `file` block is saved as. */
  file?: string;
}

/** The README's sh/bash blocks with their directives (see the header). */
export function readmeBlocks(markdown: string): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j]!)) body.push(lines[j++]!.slice(indent));
    const before = (lines[i - 1] ?? "").trim();
    const file = /^<!--\s*file:\s*(\S+)\s*-->$/.exec(before)?.[1];
    if (file) blocks.push({ line: i + 1, mode: "file", code: body.join("\n"), file });
    else if (open[2] === "sh" || open[2] === "bash") {
      const mode = /^<!--\s*not run:/.test(before) ? "skip" : /^<!--\s*hub:/.test(before) ? "hub" : "run";
      blocks.push({ line: i + 1, mode, code: body.join("\n") });
    }
    i = j;
  }
  return blocks;
}

/** Runs `script` in bash, in its own process group; resolves with its exit code and output. */
function bash(script: string, env: NodeJS.ProcessEnv, groups: number[]): Promise<{ code: number | null; output: string }> {
  const child = spawn("bash", ["-c", script], { cwd: root, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  if (child.pid) groups.push(child.pid);
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, output })));
}

describe("the README's examples run as written", () => {
  let hub: Hub | undefined;
  const groups: number[] = [];
  const home = mkdtempSync(path.join(tmpdir(), "flotilla-readme-home-"));
  const stateDir = mkdtempSync(path.join(tmpdir(), "flotilla-readme-state-"));
  // Only the README's own files: other test files' agents may use .flotilla/sim meanwhile.
  const written = [
    ".flotilla/sim/cluster1.json",
    ".flotilla/sim/cluster2.json",
    ".flotilla/sim/cluster3.json",
    ".flotilla/sim/cluster4.json",
    "hub.kubeconfig",
    "team-a.kubeconfig",
    "ci.kubeconfig",
    "hello.yaml",
    "kubefleet-demo-crd.yaml",
    "kubefleet-demo.yaml",
  ];
  const aside = path.join(mkdtempSync(path.join(tmpdir(), "flotilla-readme-aside-")), "x");

  afterAll(async () => {
    for (const g of groups) {
      try {
        process.kill(-g, "SIGTERM");
      } catch {
        // that group has ended
      }
    }
    await hub?.stop();
    for (const f of written) {
      rmSync(path.join(root, f), { recursive: true, force: true });
      if (existsSync(`${aside}-${f.replaceAll("/", "_")}`)) renameSync(`${aside}-${f.replaceAll("/", "_")}`, path.join(root, f));
    }
  });

  it("every runnable sh block exits 0, in order, against the hub it describes", { timeout: 300_000 }, async () => {
    const blocks = readmeBlocks(readFileSync(path.join(root, "README.md"), "utf8"));
    expect(blocks.filter((b) => b.mode === "hub").length).toBeGreaterThan(0);
    expect(blocks.filter((b) => b.mode === "run").length).toBeGreaterThan(5);
    for (const f of written) if (existsSync(path.join(root, f))) renameSync(path.join(root, f), `${aside}-${f.replaceAll("/", "_")}`);

    const port = await freePort();
    const adminToken = `readme-${Math.random().toString(36).slice(2)}`;
    writeFileSync(path.join(stateDir, "admin-token"), `${adminToken}\n`, { mode: 0o600 });
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (/^(FLOTILLA_|KUBECONFIG$|HUB$|TOKEN$|npm_|VITEST|NODE_EXTRA_CA_CERTS$)/.test(k)) continue;
      env[k] = v;
    }
    Object.assign(env, { HOME: home, PORT: String(port), FLOTILLA_STATE_DIR: stateDir });
    const exports = path.join(home, "exported.sh");
    writeFileSync(exports, "");

    // Runs the blocks queued since the last hub block as one script.
    let queued: Block[] = [];
    const flush = async () => {
      if (queued.length === 0) return;
      const script = [
        "set -eo pipefail",
        `. ${JSON.stringify(exports)}`,
        ...queued.map((b) => `echo "== README.md line ${b.line}" >&2\n${b.code}`),
        `export -p > ${JSON.stringify(exports)}`,
      ].join("\n");
      const r = await bash(script, env, groups);
      const last = [...r.output.matchAll(/== README\.md line (\d+)/g)].at(-1)?.[1];
      expect(r.code, `the README block at line ${last} failed (exit ${r.code}):\n${r.output.split("\n").slice(-60).join("\n")}`).toBe(0);
      queued = [];
    };
    const started = Date.now();
    for (const b of blocks) {
      if (b.mode === "skip") continue;
      if (b.mode === "file") {
        queued.push({ ...b, code: `cat > ${JSON.stringify(b.file)} <<'README_FILE_END'\n${b.code}\nREADME_FILE_END` });
        continue;
      }
      if (b.mode === "run") {
        queued.push(b);
        continue;
      }
      await flush();
      await hub?.stop();
      hub = await startHub({ port, stateDir, adminToken, https: /FLOTILLA_HTTPS=1/.test(b.code) });
    }
    await flush();
    console.log(`readme: ${blocks.filter((b) => b.mode === "run").length} blocks ran in ${Date.now() - started} ms`);
  });
});
