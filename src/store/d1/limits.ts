/**
 * What D1 refuses, as the store's named limits: every write the store sends to D1 is built to stay
 * within them (src/store/d1/objects.ts), because the local D1 (plain SQLite under `wrangler dev`
 * and the tests) enforces none of the byte limits and so would never show a write that production
 * D1 refuses. Sources: Cloudflare's D1 limits page (developers.cloudflare.com/d1/platform/limits/,
 * ../shared/reference/edge-platform.md §2.1): a string, BLOB or row of at most 2,000,000 bytes
 * (2 MB); an SQL statement of at most 100,000 bytes (100 KB); at most 100 bound parameters per
 * statement; 30 s per query, a whole `batch()` included. The limits page names no size for a
 * request or a batch as a whole; the binding's call crosses the Workers runtime, whose RPC
 * messages are refused past 32 MiB ("incoming RPC message exceeds size limit"), so a batch is
 * kept well under that ({@link D1Limits.batchBytes}).
 *
 * Tests set smaller limits ({@link setD1Limits}) to exercise, on the local D1, the paths a hub at
 * the real limits takes only with megabytes of data.
 */

/** The byte and count limits the store builds its D1 statements and batches to. */
export interface D1Limits {
  /** Largest row, string or BLOB D1 stores, in bytes (UTF-8): 2,000,000 (D1 limits page). */
  rowBytes: number;
  /** Largest SQL statement text, in bytes: 100,000 (D1 limits page). */
  statementBytes: number;
  /** Most bound parameters in one statement: 100 (D1 limits page). */
  boundParameters: number;
  /**
   * Most bytes of bound values the store sends in one D1 `batch()` call: 24 MiB, three quarters of
   * the 32 MiB a Workers RPC message may carry, the rest left to the statements' text and the
   * call's own encoding. Not a documented D1 limit (D1 documents none for a request); a batch this
   * size also stays far inside D1's 30 s per batch (SQLite writes megabytes in milliseconds).
   */
  batchBytes: number;
  /**
   * Largest stored object (its JSON row body, UTF-8), in bytes: 16 MiB. An object and the rows
   * that carry it commit in one batch (never half a write), so it must fit one with room to
   * spare; a write of a larger object is refused with 413 RequestEntityTooLarge before anything
   * is sent. At about 1.5 KB per cluster, a KubeFleet placement's status reaches it past 10,000
   * clusters.
   */
  objectBytes: number;
}

/** The limits of Cloudflare's D1 (see the module comment for each value's source). */
export const D1_LIMITS: Readonly<D1Limits> = Object.freeze({
  rowBytes: 2_000_000,
  statementBytes: 100_000,
  boundParameters: 100,
  batchBytes: 24 * 1024 * 1024,
  objectBytes: 16 * 1024 * 1024,
});

let current: Readonly<D1Limits> = D1_LIMITS;

/** The limits the store builds to now: {@link D1_LIMITS} unless a test set others. */
export function d1Limits(): Readonly<D1Limits> {
  return current;
}

/**
 * Sets the limits the store builds to (for tests: small limits reach the large-object paths with
 * small objects); `undefined` restores {@link D1_LIMITS}. Returns the limits set before.
 */
export function setD1Limits(limits: Partial<D1Limits> | undefined): Readonly<D1Limits> {
  const before = current;
  current = limits ? Object.freeze({ ...D1_LIMITS, ...limits }) : D1_LIMITS;
  return before;
}

/**
 * The length of `text` in UTF-8 bytes, counted without encoding it (a lone surrogate counts 3, as
 * the encoder writes U+FFFD for it).
 */
export function utf8Bytes(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // the pair: 4 bytes for 2 units
      i++;
    } else n += 2;
  }
  return n;
}

/**
 * A bound on the UTF-8 bytes of `text` that costs nothing for short text: its exact length in
 * bytes when it may exceed `care` bytes, else 3 bytes per UTF-16 unit (never less than the exact
 * length). For sums compared with a batch's budget, where small values' exact sizes do not matter.
 */
export function utf8BytesAtMost(text: string, care = 16 * 1024): number {
  return text.length * 3 <= care ? text.length * 3 : utf8Bytes(text);
}

/**
 * Splits `text` into consecutive pieces of at most `maxBytes` UTF-8 bytes each (joined, they give
 * `text` back), never between the two halves of a surrogate pair.
 * @throws Error when `maxBytes` is below 4 (a character may need 4)
 */
export function splitUtf8(text: string, maxBytes: number): string[] {
  if (maxBytes < 4) throw new Error(`splitUtf8: maxBytes ${maxBytes} is below 4`);
  const out: string[] = [];
  let start = 0;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (bytes + size > maxBytes) {
      out.push(text.slice(start, i));
      start = i;
      bytes = 0;
    }
    bytes += size;
    if (pair) i++;
  }
  if (start < text.length || out.length === 0) out.push(text.slice(start));
  return out;
}
