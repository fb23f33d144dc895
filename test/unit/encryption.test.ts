import { describe, expect, it } from "vitest";
import { AESGCM_PREFIX, EncryptionError, isSealed, Keyring, keyringOf } from "../../src/k8s/encryption.ts";

const key = (c: string, bytes = 32) => btoa(c.repeat(bytes));

describe("Keyring (AES-GCM, kube-apiserver's aesgcm provider)", () => {
  it("seals with the primary key, opens with any listed key, and says when a value is stale", async () => {
    const old = new Keyring(`k1:${key("x")}`);
    const sealed = await old.seal('{"a":"b"}', "/secrets/ns/name");
    expect(sealed.startsWith(`${AESGCM_PREFIX}k1:`)).toBe(true);
    expect(isSealed(sealed)).toBe(true);
    expect(await old.open(sealed, "/secrets/ns/name")).toEqual({ plaintext: '{"a":"b"}', stale: false });
    const rotated = new Keyring(`k2:${key("y", 16)},k1:${key("x")}`);
    expect(await rotated.open(sealed, "/secrets/ns/name")).toEqual({ plaintext: '{"a":"b"}', stale: true });
    expect((await rotated.seal("v", "c")).startsWith(`${AESGCM_PREFIX}k2:`)).toBe(true);
  });

  it("uses a fresh nonce for every value", async () => {
    const ring = new Keyring(`k:${key("z", 24)}`);
    expect(await ring.seal("same", "c")).not.toBe(await ring.seal("same", "c"));
  });

  it("refuses another object's value, an altered value and an unknown key, naming keys only", async () => {
    const ring = new Keyring(`k1:${key("x")}`);
    const sealed = await ring.seal("secret-text", "/secrets/a/b");
    await expect(ring.open(sealed, "/secrets/a/c")).rejects.toThrow(/does not authenticate/);
    const altered = sealed.slice(0, -4) + (sealed.endsWith("AAA=") ? "BBB=" : "AAA=");
    await expect(ring.open(altered, "/secrets/a/b")).rejects.toThrow(EncryptionError);
    await expect(new Keyring(`k2:${key("y")}`).open(sealed, "/secrets/a/b")).rejects.toThrow(
      'key "k1", which is not in FLOTILLA_ENCRYPTION_KEYS (its keys: k2)',
    );
    await expect(ring.open(`${AESGCM_PREFIX}k1:!!`, "c")).rejects.toThrow(/malformed/);
  });

  it("reports a missing or malformed key list without echoing key material", async () => {
    const cases: [string | undefined, RegExp][] = [
      [undefined, /no encryption key is configured/],
      ["", /no encryption key is configured/],
      ["nocolon", /entry 1 is malformed/],
      [`bad id:${key("x")}`, /entry 1 is malformed/],
      [`k1:${key("x")},k1:${key("y")}`, /key ID "k1" appears twice/],
      ["k1:not-base64!", /must be 16, 24 or 32 bytes/],
      [`k1:${key("x", 20)}`, /must be 16, 24 or 32 bytes/],
    ];
    for (const [spec, message] of cases) {
      const err = await new Keyring(spec).seal("v", "c").catch((e: unknown) => e);
      expect(err, String(spec)).toBeInstanceOf(EncryptionError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toContain(key("x"));
      expect((err as Error).message).not.toContain(key("x", 20));
    }
  });

  it("keeps one keyring per key list", () => {
    expect(keyringOf({ FLOTILLA_ENCRYPTION_KEYS: `k:${key("q")}` })).toBe(keyringOf({ FLOTILLA_ENCRYPTION_KEYS: `k:${key("q")}` }));
    expect(keyringOf({})).not.toBe(keyringOf({ FLOTILLA_ENCRYPTION_KEYS: `k:${key("q")}` }));
  });
});
