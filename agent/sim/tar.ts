/**
 * Enough of the tar format for `kubectl cp` against the simulated cluster (agent/sim/exec.ts):
 * kubectl runs `tar cf - PATH` in the pod to copy from it, and `tar -xmf - -C DIR` to copy to it,
 * reading and writing with Go's `archive/tar`. Regular files and directories in POSIX ustar
 * (IEEE Std 1003.1-1988 as `archive/tar` writes it), with PAX `path` records and GNU long names
 * (`L`) read, as GNU tar does; anything else is skipped. The simulator's file system is a map of
 * paths, so nothing here touches a disk.
 */

/** One entry of an archive. */
export interface TarEntry {
  /** Relative path (no leading `/`). */
  name: string;
  type: "file" | "dir";
  /** File contents (empty for a directory). */
  data: Buffer;
  /** Permission bits; default 0644 (files), 0755 (directories). */
  mode?: number;
}

const BLOCK = 512;

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

function header(e: TarEntry, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  let name = e.type === "dir" && !e.name.endsWith("/") ? `${e.name}/` : e.name;
  let prefix = "";
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf("/", name.length - 2);
    if (cut > 0 && cut <= 155 && Buffer.byteLength(name.slice(cut + 1)) <= 100) {
      prefix = name.slice(0, cut);
      name = name.slice(cut + 1);
    } else throw new Error(`tar: ${e.name}: name too long`);
  }
  h.write(name, 0, 100, "utf8");
  h.write(octal(e.mode ?? (e.type === "dir" ? 0o755 : 0o644), 8), 100, "ascii");
  h.write(octal(0, 8), 108, "ascii");
  h.write(octal(0, 8), 116, "ascii");
  h.write(octal(e.type === "dir" ? 0 : e.data.length, 12), 124, "ascii");
  h.write(octal(mtime, 12), 136, "ascii");
  h.write("        ", 148, "ascii");
  h.write(e.type === "dir" ? "5" : "0", 156, "ascii");
  h.write("ustar\0", 257, "ascii");
  h.write("00", 263, "ascii");
  h.write("root", 265, "ascii");
  h.write("root", 297, "ascii");
  h.write(prefix, 345, 155, "utf8");
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148, "ascii");
  return h;
}

/** An archive of `entries`, ended by two zero blocks. @throws Error for a name ustar cannot hold */
export function packTar(entries: TarEntry[], mtime = Math.floor(Date.now() / 1000)): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    parts.push(header(e, mtime));
    if (e.type === "file" && e.data.length > 0) {
      parts.push(e.data);
      const pad = (BLOCK - (e.data.length % BLOCK)) % BLOCK;
      if (pad) parts.push(Buffer.alloc(pad));
    }
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}

function str(b: Buffer, at: number, len: number): string {
  const s = b.subarray(at, at + len);
  const nul = s.indexOf(0);
  return s.subarray(0, nul < 0 ? len : nul).toString("utf8");
}

function num(b: Buffer, at: number, len: number): number {
  if ((b[at]! & 0x80) !== 0) {
    // Base-256 (GNU), for sizes over 8 GiB: never here, read anyway.
    let n = 0;
    for (let i = at + 1; i < at + len; i++) n = n * 256 + b[i]!;
    return n;
  }
  const s = str(b, at, len).trim();
  return s ? parseInt(s, 8) : 0;
}

/** The PAX records of an extended header's data (`LEN key=value\n`...). */
function paxRecords(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let at = 0;
  while (at < data.length) {
    const sp = data.indexOf(0x20, at);
    if (sp < 0) break;
    const len = Number(data.subarray(at, sp).toString("ascii"));
    if (!Number.isFinite(len) || len <= 0) break;
    const rec = data.subarray(sp + 1, at + len - 1).toString("utf8");
    const eq = rec.indexOf("=");
    if (eq > 0) out[rec.slice(0, eq)] = rec.slice(eq + 1);
    at += len;
  }
  return out;
}

/**
 * The entries of an archive (regular files and directories; links and devices skipped).
 * @throws Error when a header's checksum is wrong or the archive is cut short
 */
export function unpackTar(buf: Buffer): TarEntry[] {
  const out: TarEntry[] = [];
  let at = 0;
  let longName: string | undefined;
  while (at + BLOCK <= buf.length) {
    const h = buf.subarray(at, at + BLOCK);
    if (h.every((b) => b === 0)) break;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i]!;
    if (sum !== num(h, 148, 8)) throw new Error("tar: a header's checksum does not match (not a tar archive?)");
    const size = num(h, 124, 12);
    const type = String.fromCharCode(h[156]!);
    const dataAt = at + BLOCK;
    if (dataAt + size > buf.length) throw new Error("tar: unexpected end of archive");
    const data = buf.subarray(dataAt, dataAt + size);
    at = dataAt + Math.ceil(size / BLOCK) * BLOCK;
    if (type === "x") {
      const path = paxRecords(data).path;
      if (path !== undefined) longName = path;
      continue;
    }
    if (type === "g") continue;
    if (type === "L") {
      longName = str(data, 0, data.length);
      continue;
    }
    const prefix = h.subarray(257, 263).toString("ascii").startsWith("ustar") ? str(h, 345, 155) : "";
    const name = longName ?? (prefix ? `${prefix}/${str(h, 0, 100)}` : str(h, 0, 100));
    longName = undefined;
    const mode = num(h, 100, 8);
    if (type === "0" || type === "\0" || type === "7") out.push({ name, type: "file", data: Buffer.from(data), mode });
    else if (type === "5") out.push({ name: name.replace(/\/+$/, ""), type: "dir", data: Buffer.alloc(0), mode });
  }
  return out;
}
