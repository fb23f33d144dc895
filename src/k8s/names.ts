/**
 * Generated names (`metadata.generateName`), as apimachinery's `SimpleNameGenerator` makes them,
 * for the hub and the simulated cluster alike.
 */

/** apimachinery `utilrand`'s alphabet: no vowels (no words), no look-alikes (0, 1, 3). */
export const GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";
/** Random characters appended to the prefix. */
export const GENERATED_SUFFIX_LENGTH = 5;
/** The longest prefix kept (63 − 5); a longer one is cut, as apimachinery cuts it. */
export const MAX_GENERATED_PREFIX_LENGTH = 58;

/**
 * A name for `generateName` `prefix`: the prefix (cut to 58 characters) and five random
 * characters of {@link GENERATE_ALPHABET}, from the platform CSPRNG without modulo bias.
 * @example generatedName("web-") // "web-x7k2q"
 */
export function generatedName(prefix: string): string {
  const base = prefix.length > MAX_GENERATED_PREFIX_LENGTH ? prefix.slice(0, MAX_GENERATED_PREFIX_LENGTH) : prefix;
  const n = GENERATE_ALPHABET.length;
  const limit = 256 - (256 % n);
  let suffix = "";
  const bytes = new Uint8Array(16);
  while (suffix.length < GENERATED_SUFFIX_LENGTH) {
    crypto.getRandomValues(bytes);
    for (const b of bytes) if (b < limit && suffix.length < GENERATED_SUFFIX_LENGTH) suffix += GENERATE_ALPHABET[b % n];
  }
  return base + suffix;
}
