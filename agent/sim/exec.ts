/**
 * The processes `kubectl exec` and `kubectl attach` reach in the simulated cluster's Pods
 * (agent/sim/stream.ts serves the protocol): a shell-like echo, enough for an operator's and a
 * test's habits, over a file system kept per Pod in memory.
 *
 * - `sh` (or `bash`, `/bin/sh`) without arguments reads lines on stdin and runs each as a
 *   command; `sh -c SCRIPT` runs the script's commands (`;` or newlines between them); any other
 *   command line runs once. With a TTY the shell echoes what it reads (a terminal's echo, `\r`
 *   ending a line) and prints a prompt `# `.
 * - Commands: `echo ARGS`, `cat [FILE...]` (no file: stdin to stdout until its end), `head -c N
 *   /dev/zero` (N bytes, as fast as the client reads), `hostname`, `pwd`, `ls [DIR]`,
 *   `stty size` (the terminal's size from the resize channel), `test -d|-f|-e PATH`,
 *   `sleep SECONDS`, `tar cf - PATH` and `tar [-]x[m]f - [-C DIR]` (kubectl cp: agent/sim/tar.ts),
 *   `exit [CODE]`, `true`, `false`; anything else is `sh: NAME: not found` (127). A line that is
 *   not a known command in the interactive shell is echoed back as it came (the "echo" shell).
 *
 * The exit code goes back as the protocol's error channel says (stream.ts): 0 success, else
 * `NonZeroExitCode`.
 */

import { packTar, unpackTar, type TarEntry } from "./tar.ts";

/** The files of one container, by absolute path; directories as a set. */
export class PodFiles {
  readonly files = new Map<string, Buffer>();
  readonly dirs = new Set<string>(["/", "/tmp", "/etc", "/root", "/var", "/var/log"]);

  /** Whether `p` is a directory. */
  isDir(p: string): boolean {
    return this.dirs.has(normalize(p));
  }

  /** Writes a file, making its parent directories. */
  write(p: string, data: Buffer): void {
    const path = normalize(p);
    this.mkdirs(parent(path));
    this.files.set(path, data);
  }

  /** Makes a directory and its parents. */
  mkdirs(p: string): void {
    let path = normalize(p);
    while (!this.dirs.has(path)) {
      this.dirs.add(path);
      path = parent(path);
    }
  }

  /** The names directly in directory `p`, sorted. */
  list(p: string): string[] {
    const dir = normalize(p);
    const prefix = dir === "/" ? "/" : `${dir}/`;
    const names = new Set<string>();
    for (const k of [...this.files.keys(), ...this.dirs]) {
      if (k !== dir && k.startsWith(prefix)) names.add(k.slice(prefix.length).split("/")[0]!);
    }
    return [...names].sort();
  }
}

/** `p` made absolute and clean (no `.`, `..`, doubled or trailing `/`). */
export function normalize(p: string, cwd = "/"): string {
  const parts: string[] = [];
  for (const seg of (p.startsWith("/") ? p : `${cwd}/${p}`).split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") parts.pop();
    else parts.push(seg);
  }
  return `/${parts.join("/")}`;
}

function parent(p: string): string {
  const i = p.lastIndexOf("/");
  return i <= 0 ? "/" : p.slice(0, i);
}

/** Where a process writes, and how it learns that the client keeps up. */
export interface ProcessIO {
  stdout(data: Buffer | string): void;
  /** With a TTY there is no stderr: it goes to stdout. */
  stderr(data: Buffer | string): void;
  /** Resolves once the output written so far is mostly sent (backpressure for bulk output). */
  drained(): Promise<void>;
}

/** Splits a command line into words (single and double quotes, backslash escapes). */
export function words(line: string): string[] {
  const out: string[] = [];
  let cur = "";
  let any = false;
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === "\\" && quote === '"' && i + 1 < line.length) cur += line[++i];
      else cur += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      any = true;
    } else if (c === "\\" && i + 1 < line.length) {
      cur += line[++i];
      any = true;
    } else if (/\s/.test(c)) {
      if (any || cur) out.push(cur);
      cur = "";
      any = false;
    } else cur += c;
  }
  if (any || cur) out.push(cur);
  return out;
}

/**
 * Stdin a process holds unread before its session stops reading the socket (a pipe's buffer, as
 * the kubelet's: the client's writes then wait on TCP).
 */
export const STDIN_HIGH_WATER = 1024 * 1024;

const SHELLS = new Set(["sh", "bash", "/bin/sh", "/bin/bash", "ash", "/bin/ash"]);

/** One running process; see the module comment. */
export class SimProcess {
  private chunks: Buffer[] = [];
  private eof = false;
  private wake: (() => void) | undefined;
  private killed = false;
  private size = { width: 80, height: 24 };
  private sleeping: (() => void) | undefined;

  /**
   * @param argv the command (`?command=` of the request)
   * @param pod the Pod's name
   * @param fs the container's files
   * @param io where the process writes
   * @param tty whether a terminal is attached
   */
  constructor(
    private readonly argv: string[],
    private readonly pod: string,
    private readonly fs: PodFiles,
    private readonly io: ProcessIO,
    private readonly tty: boolean,
  ) {}

  /** Bytes on stdin not yet read by the process. */
  buffered = 0;
  /** Called when the process read its stdin down below {@link STDIN_HIGH_WATER} (the session resumes reading). */
  onDrain: (() => void) | undefined;

  /** Bytes on stdin. */
  stdin(data: Buffer): void {
    this.chunks.push(data);
    this.buffered += data.length;
    this.poke();
  }

  /** Stdin ended (the client closed it, or the stream ended). */
  stdinEnd(): void {
    this.eof = true;
    this.poke();
  }

  /** The terminal's new size. */
  resize(width: number, height: number): void {
    this.size = { width, height };
  }

  /** The session went away: the process ends. */
  kill(): void {
    this.killed = true;
    this.eof = true;
    this.sleeping?.();
    this.poke();
  }

  private poke(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** The next stdin chunk, or null at its end. */
  private async read(): Promise<Buffer | null> {
    for (;;) {
      const c = this.chunks.shift();
      if (c) {
        this.buffered -= c.length;
        if (this.buffered < STDIN_HIGH_WATER) this.onDrain?.();
        return c;
      }
      if (this.eof) return null;
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  /** All of stdin until its end. */
  private async readAll(): Promise<Buffer> {
    const parts: Buffer[] = [];
    for (let c = await this.read(); c; c = await this.read()) parts.push(c);
    return Buffer.concat(parts);
  }

  /** Runs the process; resolves to its exit code. */
  async run(): Promise<number> {
    const [cmd, ...args] = this.argv;
    if (cmd !== undefined && SHELLS.has(cmd)) {
      if (args[0] === "-c") return this.script(args[1] ?? "");
      if (args.length === 0 || args[0] === "-i") return this.interactive();
    }
    const r = await this.command(this.argv, false);
    return r.code;
  }

  private async script(text: string): Promise<number> {
    let code = 0;
    for (const line of text.split(/[;\n]/)) {
      const w = words(line);
      if (w.length === 0) continue;
      const r = await this.command(w, false);
      code = r.code;
      if (r.exit) break;
    }
    return code;
  }

  /** The interactive shell: a line at a time. */
  private async interactive(): Promise<number> {
    let code = 0;
    let line = "";
    if (this.tty) this.io.stdout("# ");
    for (;;) {
      const c = await this.read();
      if (this.killed) return code;
      if (c === null) {
        if (line.trim()) code = (await this.command(words(line), true)).code;
        return code;
      }
      const text = c.toString("utf8");
      for (const ch of text) {
        if (ch === "\r" || ch === "\n") {
          if (this.tty && ch === "\n" && line === "") continue;
          if (this.tty) this.io.stdout("\r\n");
          const w = words(line);
          line = "";
          if (w.length > 0) {
            const r = await this.command(w, true);
            code = r.code;
            if (r.exit || this.killed) return code;
          }
          if (this.tty) this.io.stdout("# ");
        } else if (ch === "\u0004" && this.tty && line === "") {
          return code;
        } else {
          line += ch;
          if (this.tty) this.io.stdout(ch);
        }
      }
    }
  }

  private async command(argv: string[], echoUnknown: boolean): Promise<{ code: number; exit?: boolean }> {
    const [cmd = "", ...args] = argv;
    const out = (s: string | Buffer) => this.io.stdout(typeof s === "string" && this.tty ? s.replace(/\n/g, "\r\n") : s);
    const err = (s: string) => this.io.stderr(this.tty ? s.replace(/\n/g, "\r\n") : s);
    switch (cmd) {
      case "exit":
        return { code: Number(args[0] ?? 0) & 0xff, exit: true };
      case "true":
        return { code: 0 };
      case "false":
        return { code: 1 };
      case "echo":
        out(`${args.join(" ")}\n`);
        return { code: 0 };
      case "hostname":
        out(`${this.pod}\n`);
        return { code: 0 };
      case "pwd":
        out("/\n");
        return { code: 0 };
      case "stty":
        if (args[0] === "size") {
          out(`${this.size.height} ${this.size.width}\n`);
          return { code: 0 };
        }
        return { code: 0 };
      case "ls": {
        const dir = normalize(args[0] ?? "/");
        if (this.fs.files.has(dir)) out(`${args[0]}\n`);
        else if (this.fs.isDir(dir)) {
          const names = this.fs.list(dir);
          if (names.length) out(`${names.join("\n")}\n`);
        } else {
          err(`ls: ${args[0]}: No such file or directory\n`);
          return { code: 1 };
        }
        return { code: 0 };
      }
      case "test":
      case "[": {
        const [flag, p = ""] = args;
        const path = normalize(p);
        const ok = flag === "-d" ? this.fs.isDir(path) : flag === "-f" ? this.fs.files.has(path) : this.fs.isDir(path) || this.fs.files.has(path);
        return { code: ok ? 0 : 1 };
      }
      case "sleep": {
        const ms = Math.min(Number(args[0] ?? 0) * 1000, 3_600_000);
        await new Promise<void>((r) => {
          const t = setTimeout(r, Number.isFinite(ms) ? ms : 0);
          this.sleeping = () => {
            clearTimeout(t);
            r();
          };
        });
        this.sleeping = undefined;
        return { code: 0 };
      }
      case "cat": {
        if (args.length === 0) {
          for (let c = await this.read(); c && !this.killed; c = await this.read()) {
            out(c);
            await this.io.drained();
          }
          return { code: 0 };
        }
        let code = 0;
        for (const f of args) {
          const data = this.fs.files.get(normalize(f));
          if (data) out(data);
          else {
            err(`cat: can't open '${f}': No such file or directory\n`);
            code = 1;
          }
        }
        return { code };
      }
      case "head": {
        // head -c N /dev/zero (or /dev/urandom): N bytes, as fast as the client reads them.
        const n = args[0] === "-c" ? Number(args[1]) : NaN;
        if (!Number.isFinite(n) || n < 0 || !/^\/dev\/(zero|urandom)$/.test(args[2] ?? "")) {
          err("head: usage: head -c N /dev/zero\n");
          return { code: 1 };
        }
        const chunk = Buffer.alloc(32 * 1024, args[2] === "/dev/zero" ? 0 : 0x61);
        for (let left = n; left > 0 && !this.killed; left -= chunk.length) {
          out(left >= chunk.length ? chunk : chunk.subarray(0, left));
          await this.io.drained();
        }
        return { code: 0 };
      }
      case "tar":
        return { code: await this.tar(args, err) };
      default:
        if (echoUnknown) {
          out(`${argv.join(" ")}\n`);
          return { code: 0 };
        }
        err(`sh: ${cmd}: not found\n`);
        return { code: 127 };
    }
  }

  /** `tar cf - PATH...` and `tar [-]x[m]f - [-C DIR]` (kubectl cp). */
  private async tar(args: string[], err: (s: string) => void): Promise<number> {
    const opts = args.filter((a) => !a.startsWith("--"));
    const mode = (opts[0] ?? "").replace(/^-/, "");
    if (mode.includes("c")) {
      const paths = opts.slice(2);
      const entries: TarEntry[] = [];
      for (const p of paths) {
        const abs = normalize(p);
        const rel = abs.slice(1);
        if (this.fs.files.has(abs)) entries.push({ name: rel, type: "file", data: this.fs.files.get(abs)! });
        else if (this.fs.isDir(abs)) {
          entries.push({ name: rel, type: "dir", data: Buffer.alloc(0) });
          for (const d of [...this.fs.dirs].sort()) if (d.startsWith(`${abs}/`)) entries.push({ name: d.slice(1), type: "dir", data: Buffer.alloc(0) });
          for (const [f, data] of [...this.fs.files].sort()) if (f.startsWith(`${abs}/`)) entries.push({ name: f.slice(1), type: "file", data });
        } else {
          err(`tar: ${p}: Cannot stat: No such file or directory\n`);
          return 2;
        }
      }
      if (paths.some((p) => p.startsWith("/"))) err("tar: Removing leading `/' from member names\n");
      const archive = packTar(entries);
      for (let at = 0; at < archive.length && !this.killed; at += 32 * 1024) {
        this.io.stdout(archive.subarray(at, at + 32 * 1024));
        await this.io.drained();
      }
      return 0;
    }
    if (mode.includes("x")) {
      const c = opts.indexOf("-C");
      const dir = c >= 0 ? normalize(opts[c + 1] ?? "/") : "/";
      if (!this.fs.isDir(dir)) {
        err(`tar: ${dir}: Cannot open: No such file or directory\n`);
        return 2;
      }
      let entries;
      try {
        entries = unpackTar(await this.readAll());
      } catch (e) {
        err(`${(e as Error).message}\n`);
        return 2;
      }
      for (const e of entries) {
        const target = normalize(e.name, dir);
        if (e.type === "dir") this.fs.mkdirs(target);
        else this.fs.write(target, e.data);
      }
      return 0;
    }
    err("tar: you must specify one of the '-c' or '-x' options\n");
    return 2;
  }
}
