/**
 * Builds the project's container images without a container runtime, as exactly as a builder
 * would up to the base image: the build context is what the ignore file admits (parsed by
 * `@balena/dockerignore`, a port of Docker's own matcher) copied into an empty folder, and each
 * stage's instructions (parsed by `dockerfile-ast`) run in a folder standing for the stage's
 * root file system: `COPY` as written (from that context, or `--from` an earlier stage), `RUN`
 * with `/bin/sh -c` in its `WORKDIR`, `ENV` and `ARG` as the builder expands them. The base
 * image itself cannot be pulled: a `node:<major>...` base is stood in for by this machine's
 * Node, which must be of the same major version. The test that runs it is
 * test/agent/install.test.ts; the agent bench and that file run the image as parsed by
 * scripts/agent-image.ts.
 *
 *   node --import tsx scripts/image-build.ts context            # writes .dockerignore from agent/shared-modules.json
 *   node --import tsx scripts/image-build.ts build [FILE ...]   # builds each Containerfile (default: all), prints its root
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DockerfileParser, type Copy, type Env, type Instruction } from "dockerfile-ast";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** `@balena/dockerignore` (CommonJS: its `module.exports` is the factory its types call `default`). */
const ignore = createRequire(import.meta.url)("@balena/dockerignore") as typeof import("@balena/dockerignore").default;

/** The declaration of the hub modules the agent's bundle reads (see its `description`). */
export const SHARED_MODULES_FILE = "agent/shared-modules.json";

/** The repository files of {@link SHARED_MODULES_FILE}: paths from the repository root, sorted. */
export function sharedModules(): string[] {
  const decl = JSON.parse(fs.readFileSync(path.join(root, SHARED_MODULES_FILE), "utf8")) as { modules: string[] };
  return [...decl.modules].sort();
}

/**
 * The text of `.dockerignore`: the build context of agent/Containerfile is the lock file, the
 * agent's sources, the bundler script and exactly the shared hub modules.
 *
 * @param modules the shared modules ({@link sharedModules}).
 */
export function agentDockerignore(modules: readonly string[] = sharedModules()): string {
  return [
    "# Build context of agent/Containerfile (docker build -f agent/Containerfile .): the lock file, the",
    "# agent's sources, the bundler script and the hub modules the agent shares, as declared in",
    `# ${SHARED_MODULES_FILE}. Written by \`npm run image:context\` from that file; do not edit by hand`,
    "# (test/agent/install.test.ts fails when this file and the declaration differ).",
    "**",
    "!package.json",
    "!package-lock.json",
    "!scripts/build-agent.mjs",
    "!agent/**",
    ...modules.map((m) => `!${m}`),
    "",
  ].join("\n");
}

/** The Containerfiles and Dockerfiles of the repository (tracked or not, outside node_modules, dist and dot folders). */
export function containerfiles(dir = root): string[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile() && /^(Containerfile|Dockerfile)(\..+)?$|\.(Containerfile|Dockerfile)$/.test(d.name))
    .map((d) => path.relative(dir, path.join(d.parentPath, d.name)).split(path.sep).join("/"))
    .filter((f) => !f.split("/").some((part) => part === "node_modules" || part === "dist" || part.startsWith(".")))
    .sort();
}

/**
 * The ignore file a builder reads for `containerfile` with `contextDir` as its context: Docker's
 * `<Containerfile>.dockerignore` beside it, else `.containerignore` (Buildah, Podman), else
 * `.dockerignore` at the context's root; null when there is none.
 */
export function ignoreFileFor(containerfile: string, contextDir = root): string | null {
  const candidates = [
    `${path.resolve(contextDir, containerfile)}.dockerignore`,
    path.join(contextDir, ".containerignore"),
    path.join(contextDir, ".dockerignore"),
  ];
  return candidates.find((f) => fs.existsSync(f)) ?? null;
}

/**
 * The files of the build context: every file (and symbolic link) under `contextDir` that the
 * ignore file admits, as paths relative to it with `/`, sorted.
 */
export function contextFiles(contextDir: string, ignoreFile: string | null): string[] {
  const all = fs
    .readdirSync(contextDir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile() || d.isSymbolicLink())
    .map((d) => path.relative(contextDir, path.join(d.parentPath, d.name)).split(path.sep).join("/"));
  if (!ignoreFile) return all.sort();
  return ignore().add(fs.readFileSync(ignoreFile, "utf8")).filter(all).sort();
}

/** One stage as built: its name and the folder standing for its root file system. */
export interface BuiltStage {
  /** `AS <name>`, or the stage's index as a string. */
  name: string;
  /** The base image reference after ARG expansion (e.g. `node:22-bookworm-slim`) or an earlier stage's name. */
  base: string;
  /** The folder standing for `/` of the stage. */
  root: string;
  /** The stage's final `WORKDIR` (an absolute path in the image). */
  workdir: string;
  /** The stage's `ENV`. */
  env: Record<string, string>;
  /** `ENTRYPOINT` in exec form, if the stage has one. */
  entrypoint?: string[];
}

/** The result of {@link buildImage}. */
export interface ImageBuild {
  /** The Containerfile, from the repository root. */
  containerfile: string;
  /** The ignore file read (absolute), or null. */
  ignoreFile: string | null;
  /** The files of the build context ({@link contextFiles}). */
  context: string[];
  /** The folder holding only the build context. */
  contextDir: string;
  /** Every stage, in order; the last is the image. */
  stages: BuiltStage[];
  /** The image: the last stage. */
  image: BuiltStage;
  /** The temporary folder holding all of it; remove it when done. */
  dir: string;
  /** What the `RUN` commands printed. */
  log: string;
}

/** Options of {@link buildImage}. */
export interface BuildOptions {
  /** The build context (default: the repository root, as `docker build -f <file> .` there). */
  contextDir?: string;
  /** Where to make the temporary folder (default the OS's). */
  tmpDir?: string;
  /**
   * Environment added to that of `RUN` commands on this machine only (e.g. `npm_config_prefer_offline`
   * so that `npm ci` takes packages from the local npm cache); a builder's `RUN` has PATH, HOME
   * and the stage's ENV and ARG, and here also the machine's proxy and CA settings.
   */
  runEnv?: Record<string, string>;
  /** `--build-arg` values. */
  buildArgs?: Record<string, string>;
}

/**
 * This machine's way to the network (proxies, extra CA certificates, npm's settings), which a
 * builder's daemon would provide to `RUN` in its own way.
 */
function networkEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (e): e is [string, string] => e[1] !== undefined && /^(NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|(HTTPS?|NO|ALL)_PROXY|npm_config_.+)$/i.test(e[0]),
    ),
  );
}

/** `$VAR` and `${VAR}` (with `:-default`) expanded as a builder does in FROM, COPY, WORKDIR and ENV. */
function expand(text: string, vars: Record<string, string>): string {
  return text.replace(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g, (_, a?: string, def?: string, b?: string) => {
    const v = vars[(a ?? b)!];
    return v !== undefined && v !== "" ? v : (def ?? "");
  });
}

/** The folder standing for `imagePath` (absolute, or relative to `workdir`) in a stage rooted at `stageRoot`. */
function inStage(stageRoot: string, workdir: string, imagePath: string): string {
  const abs = path.posix.resolve(workdir, imagePath);
  return path.join(stageRoot, abs);
}

/** Runs one shell or exec form `RUN`; rejects with its output when it fails. */
function run(argv: string[], cwd: string, env: Record<string, string>, log: (s: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) => {
      log(out);
      if (code === 0) resolve();
      else reject(new Error(`RUN ${argv.join(" ")} exited with ${code}:\n${out}`));
    });
  });
}

/** An instruction's JSON exec form (`["a", "b"]`), or null when it is in shell form. */
function execForm(instruction: Instruction): string[] | null {
  const text = instruction.getArgumentsContent()?.trim() ?? "";
  if (!text.startsWith("[")) return null;
  const parsed = JSON.parse(text) as unknown;
  if (!Array.isArray(parsed) || !parsed.every((s) => typeof s === "string")) throw new Error(`${instruction.getKeyword()}: not an exec form: ${text}`);
  return parsed;
}

/**
 * Builds `containerfile` as described at the top of this file.
 *
 * @param containerfile the Containerfile's path from the repository root.
 * @throws Error when a source of a COPY is not in the context or the earlier stage, a RUN fails,
 *   an instruction is one this reproduction does not handle (ADD, wildcards, heredocs, mounts), or
 *   the base image is not a `node:<major>` image of this machine's Node major.
 */
export async function buildImage(containerfile: string, opts: BuildOptions = {}): Promise<ImageBuild> {
  const contextDir = opts.contextDir ?? root;
  const ignoreFile = ignoreFileFor(containerfile, contextDir);
  const context = contextFiles(contextDir, ignoreFile);
  const dir = fs.mkdtempSync(path.join(opts.tmpDir ?? os.tmpdir(), "flotilla-image-"));
  const ctx = path.join(dir, "context");
  fs.mkdirSync(ctx, { recursive: true });
  for (const f of context) {
    fs.mkdirSync(path.dirname(path.join(ctx, f)), { recursive: true });
    fs.cpSync(path.join(contextDir, f), path.join(ctx, f), { verbatimSymlinks: true });
  }
  let log = "";
  const doc = DockerfileParser.parse(fs.readFileSync(path.join(contextDir, containerfile), "utf8"));
  const globalArgs: Record<string, string> = {};
  const stages: BuiltStage[] = [];
  let stage: (BuiltStage & { args: Record<string, string> }) | undefined;
  for (const ins of doc.getInstructions()) {
    const keyword = ins.getKeyword().toUpperCase();
    const vars = { ...globalArgs, ...(stage ? { ...stage.args, ...stage.env } : {}) };
    const argText = ins.getArgumentsContent() ?? "";
    if (keyword === "ARG") {
      const [name, def] = argText.trim().split(/=(.*)/s) as [string, string | undefined];
      const value = opts.buildArgs?.[name] ?? (def !== undefined ? expand(def, vars) : (globalArgs[name] ?? ""));
      if (stage) stage.args[name] = value;
      else globalArgs[name] = value;
      continue;
    }
    if (keyword === "FROM") {
      const words = ins.getArguments().map((a) => a.getValue());
      const base = expand(words[0]!, globalArgs);
      const name = words[1]?.toUpperCase() === "AS" ? words[2]! : String(stages.length);
      const stageRoot = path.join(dir, "stages", String(stages.length));
      fs.mkdirSync(stageRoot, { recursive: true });
      const parent = stages.find((s) => s.name === base);
      if (parent) fs.cpSync(parent.root, stageRoot, { recursive: true, verbatimSymlinks: true });
      else {
        const m = /^(?:docker\.io\/(?:library\/)?)?node:(\d+)(?:[-.@]|$)/.exec(base);
        if (!m || m[1] !== process.versions.node.split(".")[0])
          throw new Error(`${containerfile}: base image ${base} cannot be stood in for by this machine's Node ${process.version}`);
      }
      stage = { name, base, root: stageRoot, workdir: parent?.workdir ?? "/", env: { ...(parent?.env ?? {}) }, args: {} };
      stages.push(stage);
      continue;
    }
    if (!stage) throw new Error(`${containerfile}: ${keyword} before FROM`);
    switch (keyword) {
      case "WORKDIR":
        stage.workdir = path.posix.resolve(stage.workdir, expand(argText.trim(), vars));
        fs.mkdirSync(inStage(stage.root, "/", stage.workdir), { recursive: true });
        break;
      case "ENV":
        for (const p of (ins as Env).getProperties()) stage.env[p.getName()] = expand(p.getValue() ?? "", vars);
        break;
      case "COPY": {
        const copy = ins as Copy;
        if (copy.getFlags().some((f) => !["from", "chown", "chmod"].includes(f.getName())))
          throw new Error(`${containerfile}: COPY flags beyond --from, --chown, --chmod: ${argText}`);
        const words = copy.getArguments().map((a) => expand(a.getValue(), vars));
        const dest = words.pop()!;
        const fromName =
          copy
            .getFlags()
            .find((f) => f.getName() === "from")
            ?.getValue() ?? undefined;
        const from = fromName === undefined ? undefined : stages.find((s) => s.name === fromName);
        if (fromName !== undefined && !from) throw new Error(`${containerfile}: COPY --from=${fromName}: no such stage`);
        const target = inStage(stage.root, stage.workdir, dest);
        const intoDir = dest.endsWith("/") || words.length > 1;
        for (const src of words) {
          if (/[*?[]/.test(src)) throw new Error(`${containerfile}: COPY wildcards are not reproduced: ${src}`);
          const source = from ? inStage(from.root, "/", src) : path.join(ctx, path.posix.normalize(src));
          if (!from && path.relative(ctx, source).startsWith("..")) throw new Error(`${containerfile}: COPY ${src}: outside the build context`);
          if (!fs.existsSync(source))
            throw new Error(
              from
                ? `${containerfile}: COPY --from=${fromName} ${src}: not found in stage ${fromName}`
                : `${containerfile}: COPY ${src}: not found in the build context${ignoreFile ? ` (${path.relative(contextDir, ignoreFile)} does not admit it)` : ""}`,
            );
          const to = fs.statSync(source).isDirectory() ? target : intoDir ? path.join(target, path.basename(source)) : target;
          fs.mkdirSync(fs.statSync(source).isDirectory() ? to : path.dirname(to), { recursive: true });
          fs.cpSync(source, to, { recursive: true, verbatimSymlinks: true });
        }
        break;
      }
      case "RUN": {
        if (/^\s*--/.test(argText)) throw new Error(`${containerfile}: RUN flags (--mount, ...) are not reproduced: ${argText}`);
        const argv = execForm(ins) ?? ["/bin/sh", "-c", argText];
        const env: Record<string, string> = {
          ...networkEnv(),
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? "/root",
          ...stage.args,
          ...stage.env,
          ...(opts.runEnv ?? {}),
        };
        const cwd = inStage(stage.root, "/", stage.workdir);
        await run(argv, cwd, env, (s) => (log += s));
        break;
      }
      case "ENTRYPOINT": {
        const argv = execForm(ins);
        if (!argv) throw new Error(`${containerfile}: ENTRYPOINT in shell form is not reproduced`);
        stage.entrypoint = argv;
        break;
      }
      case "ADD":
        throw new Error(`${containerfile}: ADD is not reproduced; use COPY`);
      default:
        // USER, LABEL, EXPOSE, CMD, HEALTHCHECK, ...: metadata with no effect on the files.
        break;
    }
  }
  if (!stage) throw new Error(`${containerfile}: no FROM`);
  return { containerfile, ignoreFile, context, contextDir: ctx, stages, image: stage, dir, log };
}

/** Whether this module was run as a script (`node --import tsx scripts/image-build.ts ...`). */
const main = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (main) {
  const [command, ...files] = process.argv.slice(2);
  if (command === "context") {
    fs.writeFileSync(path.join(root, ".dockerignore"), agentDockerignore());
    console.log(`wrote .dockerignore from ${SHARED_MODULES_FILE}`);
  } else if (command === "build") {
    for (const file of files.length > 0 ? files : containerfiles()) {
      const t0 = performance.now();
      const built = await buildImage(file, { runEnv: { npm_config_prefer_offline: "true" } });
      console.log(
        `${file}: ${built.context.length} files of context, built in ${((performance.now() - t0) / 1000).toFixed(1)} s; the image's files: ${built.image.root}`,
      );
    }
  } else {
    console.error("usage: node --import tsx scripts/image-build.ts context | build [Containerfile ...]");
    process.exit(2);
  }
}
