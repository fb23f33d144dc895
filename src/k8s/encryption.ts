/**
 * Encryption at rest, after kube-apiserver's EncryptionConfiguration `aesgcm` provider
 * (`k8s.io/apiserver/pkg/storage/value/encrypt/aes`): AES-GCM with a random 96-bit nonce per
 * value, the key's ID stored with the ciphertext, and a list of keys of which the first encrypts
 * and all decrypt, so that keys can be rotated without losing what older keys sealed.
 *
 * A sealed value is the text `k8s:enc:aesgcm:v1:<keyID>:<base64(nonce ‖ ciphertext ‖ tag)>`, as
 * the apiserver prefixes what it stores in etcd. The additional authenticated data names the
 * object the value belongs to (the apiserver uses the etcd key), so a ciphertext copied onto
 * another object does not decrypt.
 *
 * The keys come from the Worker secret `FLOTILLA_ENCRYPTION_KEYS`: `id:base64key[,id:base64key...]`,
 * each key 16, 24 or 32 bytes (AES-128/192/256), IDs of letters, digits, `-`, `_` and `.`. Rotation
 * (docs/encryption.md): put a new key first, rewrite every sealed object, then drop the old key.
 */

/** The prefix of every value sealed by this provider, before the key ID. */
export const AESGCM_PREFIX = "k8s:enc:aesgcm:v1:";

/** The environment variable (a Worker secret) the keys are read from. */
const KEYS_VARIABLE = "FLOTILLA_ENCRYPTION_KEYS";

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** An imported AES-GCM key (WebCrypto's CryptoKey, named through the call that makes it). */
type AesKey = ReturnType<typeof crypto.subtle.importKey>;
const NONCE_BYTES = 12;

/**
 * A failure to seal or open a value: no or malformed keys, an unknown key ID, or a value that does
 * not authenticate. The message names keys by ID only, never key material or plaintext.
 */
export class EncryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EncryptionError";
  }
}

/** What opening a value gives: the plaintext and whether it should be sealed again (not by the primary key). */
export interface Opened {
  plaintext: string;
  stale: boolean;
}

function base64Bytes(s: string): Uint8Array | null {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) return null;
  const bin = atob(s);
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function bytesBase64(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

/** Whether a stored value was sealed by this provider (carries the `k8s:enc:aesgcm:v1:` prefix). */
export function isSealed(value: unknown): value is string {
  return typeof value === "string" && value.startsWith(AESGCM_PREFIX);
}

/**
 * The keys of `FLOTILLA_ENCRYPTION_KEYS`. Built from the variable's text without checking it; a
 * malformed list is reported by the first seal or open (so that a hub with a bad key still serves
 * everything that is not encrypted). AES keys are imported once, on first use.
 */
export class Keyring {
  private parsed?: { ids: string[]; keys: Map<string, AesKey> };

  /** @param spec the variable's text; undefined or empty when no key is configured. */
  constructor(private readonly spec: string | undefined) {}

  /** @throws EncryptionError when no key is configured or the list is malformed. */
  private keys(): { ids: string[]; keys: Map<string, AesKey> } {
    if (this.parsed) return this.parsed;
    if (!this.spec?.trim()) throw new EncryptionError(`no encryption key is configured: set the Worker secret ${KEYS_VARIABLE}`);
    const ids: string[] = [];
    const keys = new Map<string, AesKey>();
    this.spec.split(",").forEach((entry, i) => {
      const at = `${KEYS_VARIABLE} entry ${i + 1}`;
      const colon = entry.indexOf(":");
      const id = entry.slice(0, colon).trim();
      const raw = colon < 0 ? null : base64Bytes(entry.slice(colon + 1).trim());
      if (colon < 0 || !KEY_ID.test(id))
        throw new EncryptionError(`${at} is malformed: expected <id>:<base64 key> with an ID of letters, digits, '-', '_' or '.'`);
      if (keys.has(id)) throw new EncryptionError(`${at}: key ID "${id}" appears twice`);
      if (!raw || ![16, 24, 32].includes(raw.length)) throw new EncryptionError(`${at} (key "${id}"): the key must be 16, 24 or 32 bytes of standard base64`);
      ids.push(id);
      keys.set(id, crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]));
    });
    this.parsed = { ids, keys };
    return this.parsed;
  }

  /**
   * Seals `plaintext` with the primary key, bound to `context` (the object's identity).
   * @throws EncryptionError when no key is configured or the list is malformed.
   */
  async seal(plaintext: string, context: string): Promise<string> {
    const { ids, keys } = this.keys();
    const id = ids[0]!;
    const nonce = crypto.getRandomValues(new Uint8Array(NONCE_BYTES));
    const sealed = new Uint8Array(
      await crypto.subtle.encrypt(
        { name: "AES-GCM", iv: nonce, additionalData: new TextEncoder().encode(context) },
        await keys.get(id)!,
        new TextEncoder().encode(plaintext),
      ),
    );
    const out = new Uint8Array(NONCE_BYTES + sealed.length);
    out.set(nonce);
    out.set(sealed, NONCE_BYTES);
    return `${AESGCM_PREFIX}${id}:${bytesBase64(out)}`;
  }

  /**
   * Opens a value sealed by {@link Keyring.seal} for the same `context`; `stale` says it was
   * sealed by a key other than the primary one.
   * @throws EncryptionError for an unknown key ID, a malformed value, or one that does not
   *   authenticate (tampered, or sealed for another object).
   */
  async open(value: string, context: string): Promise<Opened> {
    const rest = value.slice(AESGCM_PREFIX.length);
    const colon = rest.indexOf(":");
    const id = rest.slice(0, Math.max(colon, 0));
    const { ids, keys } = this.keys();
    const key = keys.get(id);
    if (!key) throw new EncryptionError(`the value was encrypted with key "${id}", which is not in ${KEYS_VARIABLE} (its keys: ${ids.join(", ")})`);
    const bytes = base64Bytes(rest.slice(colon + 1));
    if (!bytes || bytes.length < NONCE_BYTES + 16) throw new EncryptionError(`the value encrypted with key "${id}" is malformed`);
    let plain: ArrayBuffer;
    try {
      plain = await crypto.subtle.decrypt(
        { name: "AES-GCM", iv: bytes.slice(0, NONCE_BYTES), additionalData: new TextEncoder().encode(context) },
        await key,
        bytes.slice(NONCE_BYTES),
      );
    } catch {
      throw new EncryptionError(`the value encrypted with key "${id}" does not authenticate (altered, or copied from another object)`);
    }
    return { plaintext: new TextDecoder().decode(plain), stale: id !== ids[0] };
  }
}

const keyrings = new Map<string, Keyring>();

/**
 * The keyring of a Worker environment (`FLOTILLA_ENCRYPTION_KEYS`), one per distinct value per
 * isolate, so that keys are imported once.
 */
export function keyringOf(env: { FLOTILLA_ENCRYPTION_KEYS?: string }): Keyring {
  const spec = env.FLOTILLA_ENCRYPTION_KEYS ?? "";
  let ring = keyrings.get(spec);
  if (!ring) {
    ring = new Keyring(spec);
    keyrings.set(spec, ring);
  }
  return ring;
}
