/**
 * Kubernetes resource quantities ("4", "3800m", "16Gi", "1e3", "500M", "1.5Gi") as the
 * float64 that apimachinery's `Quantity.AsApproximateFloat64()` returns, which is what
 * OCM's ResourceAllocatable prioritizers compare.
 *
 * The value is reproduced bit for bit, including its rounding: a quantity parses into
 * an integer and a power-of-ten scale (the fast int64 path of `ParseQuantity`), or, when
 * that path does not apply, into a decimal rounded up to nano units; the float is then
 * `integer × 10^scale`. So "3800m" gives 3800 × 0.001 = 3.8000000000000003, not 3.8.
 *
 * @module
 */

/** Thrown by {@link parseQuantity} for a string that is not a Kubernetes quantity. */
export class QuantityError extends Error {
  constructor(input: string) {
    super(`quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': ${JSON.stringify(input)}`);
    this.name = "QuantityError";
  }
}

// Suffix → [base, exponent]. Base 2 exponents are multiples of 10.
const SUFFIXES: Readonly<Record<string, readonly [2 | 10, number]>> = {
  "": [10, 0],
  n: [10, -9],
  u: [10, -6],
  m: [10, -3],
  k: [10, 3],
  M: [10, 6],
  G: [10, 9],
  T: [10, 12],
  P: [10, 15],
  E: [10, 18],
  Ki: [2, 10],
  Mi: [2, 20],
  Gi: [2, 30],
  Ti: [2, 40],
  Pi: [2, 50],
  Ei: [2, 60],
};

const POS_POW10: number[] = [];
const NEG_POW10: number[] = [];
for (let k = 0; k <= 22; k++) {
  // Number literals parse to the nearest double, which is what Go's math.Pow(10, ±k) returns.
  POS_POW10.push(Number(`1e${k}`));
  NEG_POW10.push(Number(`1e-${k}`));
}

function pow10(k: number): number {
  if (k >= 0) return k <= 22 ? POS_POW10[k]! : 10 ** k;
  return -k <= 22 ? NEG_POW10[-k]! : 10 ** k;
}

const NANO = -9;
const MAX_INT64 = (1n << 63n) - 1n;
// apimachinery caps quantities at 2^63-1 (in units, scale 0); expressed at nano scale.
const MAX_AT_NANO = MAX_INT64 * 10n ** 9n;

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/**
 * Parses a Kubernetes quantity string into the float64 `AsApproximateFloat64()` gives.
 *
 * Accepted: an optional sign, digits with an optional fraction (".5", "1.", "1.50"),
 * then one suffix: none, a decimal SI suffix (n u m k M G T P E), a binary SI suffix
 * (Ki Mi Gi Ti Pi Ei) or a decimal exponent (e3, E-2).
 *
 * @param input the quantity, e.g. "16Gi"; whitespace is not allowed.
 * @returns the approximate value in the quantity's base unit (cores, bytes, …).
 * @throws {QuantityError} when `input` is not a quantity.
 * @example parseQuantity("16Gi") // 17179869184
 */
export function parseQuantity(input: string): number {
  const end = input.length;
  let pos = 0;
  let negative = false;
  if (pos < end && (input.charCodeAt(pos) === 43 || input.charCodeAt(pos) === 45)) {
    negative = input.charCodeAt(pos) === 45;
    pos++;
  }
  // Integer part without leading zeros.
  while (pos < end && input.charCodeAt(pos) === 48) pos++;
  const numStart = pos;
  while (pos < end && isDigit(input.charCodeAt(pos))) pos++;
  let num = input.slice(numStart, pos);
  const sawIntDigits = pos > 0 && isDigit(input.charCodeAt(pos - 1));
  let denom = "";
  if (pos < end && input.charCodeAt(pos) === 46) {
    pos++;
    const denomStart = pos;
    while (pos < end && isDigit(input.charCodeAt(pos))) pos++;
    denom = input.slice(denomStart, pos);
  }
  if (!sawIntDigits && denom.length === 0) throw new QuantityError(input);
  if (num.length === 0) num = "0";

  const suffix = input.slice(pos);
  let base: 2 | 10;
  let exponent: number;
  const known = Object.hasOwn(SUFFIXES, suffix) ? SUFFIXES[suffix] : undefined;
  if (known) {
    [base, exponent] = known;
  } else if (/^[eE][+-]?[0-9]+$/.test(suffix)) {
    base = 10;
    exponent = Number.parseInt(suffix.slice(1), 10);
    if (!Number.isSafeInteger(exponent)) throw new QuantityError(input);
  } else {
    throw new QuantityError(input);
  }

  // Fast path: an int64 `value × mantissa` at `scale` (apimachinery's int64Amount).
  let scale: number;
  let precision: number;
  let mantissa = 1n;
  if (base === 10) {
    scale = exponent;
    precision = 18 - (num.length + denom.length);
  } else {
    scale = 0;
    if (denom.length === 0) {
      mantissa = 1n << BigInt(exponent);
      precision = 15 - num.length - Math.trunc((exponent * 3) / 10) - 1;
    } else {
      precision = -1;
    }
  }
  if (precision >= 0) {
    scale -= denom.length;
    if (scale >= NANO) {
      const shifted = num + denom;
      let result: number;
      if (mantissa === 1n && shifted.length <= 15) {
        result = Number(shifted);
      } else {
        const big = BigInt(shifted) * mantissa;
        if (big > MAX_INT64) return slowPath(num, denom, base, exponent, negative);
        result = Number(big);
      }
      if (negative) result = -result;
      return scale === 0 ? result + 0 : result * pow10(scale) + 0;
    }
  }
  return slowPath(num, denom, base, exponent, negative);
}

// apimachinery's inf.Dec path: exact decimal, rounded up (away from zero) to nano units,
// capped at 2^63-1; the float is unscaled × 10^-9.
function slowPath(num: string, denom: string, base: 2 | 10, exponent: number, negative: boolean): number {
  let unscaled = BigInt(num + denom);
  let scale = denom.length; // value = unscaled × 10^-scale
  if (base === 10) {
    scale -= exponent;
  } else {
    unscaled *= 1n << BigInt(exponent);
  }
  if (unscaled === 0n) return 0;
  if (scale > 9) {
    const div = 10n ** BigInt(scale - 9);
    unscaled = (unscaled + div - 1n) / div;
  } else if (scale < 9) {
    unscaled *= 10n ** BigInt(9 - scale);
  }
  // The cap replaces the value by 2^63-1 at scale 0, so no 10^-9 factor applies.
  const f = unscaled > MAX_AT_NANO ? Number(MAX_INT64) : Number(unscaled) * pow10(NANO);
  return negative ? -f : f;
}

/**
 * Like {@link parseQuantity} but returns undefined instead of throwing. Results are
 * memoised in a small bounded cache, since fleets repeat the same few quantity strings.
 *
 * @param input the quantity string, or undefined.
 * @returns the approximate float value, or undefined when missing or invalid.
 */
export function tryParseQuantity(input: string | undefined): number | undefined {
  if (input === undefined) return undefined;
  const hit = cache.get(input);
  if (hit !== undefined || cache.has(input)) return hit;
  let value: number | undefined;
  try {
    value = parseQuantity(input);
  } catch {
    value = undefined;
  }
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(input, value);
  return value;
}

const CACHE_LIMIT = 8192;
const cache = new Map<string, number | undefined>();
