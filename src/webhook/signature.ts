/**
 * Delivery signatures: `sha256=<hex HMAC-SHA256 of the raw body>` keyed with the Secret's
 * `token`, as GitHub sends in `X-Hub-Signature-256` (and Flotilla's generic receivers in
 * `X-Signature-256`). Verified with WebCrypto and compared in constant time.
 */

const HEADER = /^sha256=([0-9a-fA-F]{64})$/;

function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** Lower-case hex of bytes. */
export function toHex(bytes: ArrayBuffer | Uint8Array): string {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The HMAC-SHA256 of `body` under `key`, as bytes (32). */
export async function hmacSha256(key: Uint8Array, body: Uint8Array): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, body));
}

/** Compares two byte strings in time that depends only on their length. */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/** The outcome of checking a signature header. */
export type SignatureCheck = { ok: true } | { ok: false; reason: string };

/**
 * Checks a `sha256=<64 hex>` header against the HMAC-SHA256 of `body` keyed with `key`.
 * A missing or malformed header, or a digest that differs, is `{ok: false, reason}`.
 */
export async function verifySignature(header: string | undefined, key: Uint8Array, body: Uint8Array, headerName: string): Promise<SignatureCheck> {
  if (!header) return { ok: false, reason: `missing ${headerName} header` };
  const m = HEADER.exec(header.trim());
  if (!m) return { ok: false, reason: `malformed ${headerName} header: expected sha256=<64 hex digits>` };
  const expected = await hmacSha256(key, body);
  return timingSafeEqual(expected, hexToBytes(m[1]!)) ? { ok: true } : { ok: false, reason: `${headerName} does not match the payload` };
}
