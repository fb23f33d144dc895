/**
 * Kubernetes resource quantities ("4", "3800m", "16Gi", "1e3", "500M", "1.5Gi"), one parser
 * (apimachinery `resource.ParseQuantity`'s grammar) for the hub, the agent and the simulated
 * cluster, giving:
 * - the float64 that apimachinery's `Quantity.AsApproximateFloat64()` returns, which is what
 *   OCM's ResourceAllocatable prioritizers compare ({@link parseQuantity});
 * - the exact value in nano-units with its format, for sums written back as quantities
 *   ({@link parseQuantityExact}, {@link formatQuantity}, {@link sumQuantities}, {@link sumResourceLists}).
 *
 * The value is reproduced bit for bit, including its rounding: a quantity parses into
 * an integer and a power-of-ten scale (the fast int64 path of `ParseQuantity`), or, when
 * that path does not apply, into a decimal rounded up to nano units; the float is then
 * `integer × 10^scale`. So "3800m" gives 3800 × 0.001 = 3.8000000000000003, not 3.8.
 *
 * @module
 */

/** The three quantity formats of Kubernetes (apimachinery `resource.Format`). */
export type QuantityFormat = "DecimalSI" | "BinarySI" | "DecimalExponent";

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
  const { num, denom, base, exponent, negative } = lex(input);
  return approximate(num, denom, base, exponent, negative);
}

/** The pieces of a quantity: sign, integer digits (no leading zeros), fraction digits, base and exponent of its suffix. */
interface Lexed {
  negative: boolean;
  num: string;
  denom: string;
  base: 2 | 10;
  exponent: number;
  format: QuantityFormat;
}

function lex(input: string): Lexed {
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
  let format: QuantityFormat;
  const known = Object.hasOwn(SUFFIXES, suffix) ? SUFFIXES[suffix] : undefined;
  if (known) {
    [base, exponent] = known;
    format = base === 2 ? "BinarySI" : "DecimalSI";
  } else if (/^[eE][+-]?[0-9]+$/.test(suffix)) {
    base = 10;
    exponent = Number.parseInt(suffix.slice(1), 10);
    if (!Number.isSafeInteger(exponent)) throw new QuantityError(input);
    format = "DecimalExponent";
  } else {
    throw new QuantityError(input);
  }
  return { negative, num, denom, base, exponent, format };
}

function approximate(num: string, denom: string, base: 2 | 10, exponent: number, negative: boolean): number {
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

// ---------------------------------------------------------------------------------------------
// Exact values (nano-units) and canonical forms
// ---------------------------------------------------------------------------------------------

/** A parsed quantity: its exact value in nano-units (value × 10^9) and the format it was written in. */
export interface Quantity {
  /** The value multiplied by 10^9 (so `"1"` is `1_000_000_000n`, `"3800m"` is `3_800_000_000n`). */
  nanos: bigint;
  /** The format of the text it came from; used to choose how a sum is written. */
  format: QuantityFormat;
}

const NANO_UNITS = 1_000_000_000n;

/**
 * Parses a quantity exactly: its value in nano-units (10^-9, the finest scale Kubernetes keeps; a
 * finer fraction rounds away from zero, as apimachinery rounds it) and its format.
 * @throws {QuantityError} when `text` is not a quantity
 * @example parseQuantityExact("3800m") // { nanos: 3_800_000_000n, format: "DecimalSI" }
 */
export function parseQuantityExact(text: string): Quantity {
  const { num, denom, base, exponent, negative, format } = lex(text);
  let numerator = BigInt(num + denom);
  let exp10 = -denom.length;
  if (base === 2) numerator *= 1n << BigInt(exponent);
  else exp10 += exponent;
  const scale = exp10 + 9;
  if (scale >= 0) numerator *= 10n ** BigInt(scale);
  else {
    const div = 10n ** BigInt(-scale);
    numerator = (numerator + div - 1n) / div;
  }
  return { nanos: negative ? -numerator : numerator, format };
}

/** The suffixes of {@link SUFFIXES} by base: exponent by suffix. */
const suffixesOf = (base: 2 | 10): Record<string, number> =>
  Object.fromEntries(Object.entries(SUFFIXES).flatMap(([s, [b, e]]) => (b === base ? [[s, e]] : [])));
const DECIMAL_SUFFIXES = suffixesOf(10);
const BINARY_SUFFIXES = suffixesOf(2);

function formatDecimal(nanos: bigint, exponentStyle: boolean): string {
  if (nanos === 0n) return "0";
  const neg = nanos < 0n;
  const abs = neg ? -nanos : nanos;
  // Largest power of 1000 (from 10^18 down to 10^-9) that keeps the mantissa an integer.
  for (let e = 18; e >= -9; e -= 3) {
    const unit = 10n ** BigInt(e + 9);
    if (abs % unit === 0n) {
      const mantissa = abs / unit;
      let suffix: string;
      if (exponentStyle) suffix = e === 0 ? "" : `e${e}`;
      else suffix = Object.entries(DECIMAL_SUFFIXES).find(([, v]) => v === e)?.[0] ?? "";
      return `${neg ? "-" : ""}${mantissa}${suffix}`;
    }
  }
  /* c8 ignore next */
  return `${nanos}n`;
}

/**
 * Writes a quantity in canonical Kubernetes form for `format`.
 *
 * - `DecimalSI`: the largest of `n u m "" k M G T P E` that keeps an integer mantissa
 *   (`7800m`, `4k`, `1500M`).
 * - `BinarySI`: the largest of `Ki … Ei` dividing the value evenly (`31Gi`, `1536Mi`); values
 *   below 1024 in magnitude or with a fractional part fall back to `DecimalSI`, as Kubernetes does.
 * - `DecimalExponent`: like `DecimalSI` with `eN` instead of a suffix (`12e6`).
 *
 * @param nanos the value × 10^9.
 * @param format the wanted format.
 * @returns the canonical string; `"0"` for zero.
 * @example
 * formatQuantity(31n * 2n ** 30n * 1_000_000_000n, "BinarySI"); // "31Gi"
 */
export function formatQuantity(nanos: bigint, format: QuantityFormat): string {
  if (format === "BinarySI") {
    const abs = nanos < 0n ? -nanos : nanos;
    if (abs % NANO_UNITS === 0n && abs >= 1024n * NANO_UNITS) {
      const whole = abs / NANO_UNITS;
      const suffixes = Object.entries(BINARY_SUFFIXES).sort((a, b) => b[1] - a[1]);
      for (const [suffix, shift] of suffixes) {
        const unit = 1n << BigInt(shift);
        if (whole % unit === 0n) return `${nanos < 0n ? "-" : ""}${whole / unit}${suffix}`;
      }
      return `${nanos / NANO_UNITS}`;
    }
    return formatDecimal(nanos, false);
  }
  return formatDecimal(nanos, format === "DecimalExponent");
}

/**
 * Adds quantities, the way `Quantity.Add` does: the sum keeps the format of the first operand
 * added while the running total was still zero (normally the first one).
 *
 * @param values quantity strings, e.g. `["3800m", "4"]`.
 * @returns the canonical sum (`"7800m"`; `["16Gi", "15Gi"]` gives `"31Gi"`); `"0"` for none.
 * @throws Error when one of the values is not a quantity.
 */
export function sumQuantities(values: readonly string[]): string {
  let total = 0n;
  let format: QuantityFormat | undefined;
  for (const v of values) {
    const q = parseQuantityExact(v);
    if (total === 0n) format = q.format;
    total += q.nanos;
  }
  return formatQuantity(total, format ?? "DecimalSI");
}

/**
 * Sums resource lists (`map[ResourceName]Quantity`, e.g. node `status.capacity`) per resource.
 *
 * @param lists resource lists; `undefined` entries are skipped.
 * @returns one canonical quantity per resource name seen, keys sorted; values that do not
 *   parse are skipped (a single bad node must not hide the cluster's capacity).
 * @example
 * sumResourceLists([{ cpu: "3800m", memory: "16Gi" }, { cpu: "4", memory: "15Gi" }]);
 * // { cpu: "7800m", memory: "31Gi" }
 */
export function sumResourceLists(lists: ReadonlyArray<Readonly<Record<string, string>> | undefined>): Record<string, string> {
  const acc = new Map<string, { nanos: bigint; format: QuantityFormat }>();
  for (const list of lists) {
    if (!list) continue;
    for (const [name, text] of Object.entries(list)) {
      let q: Quantity;
      try {
        q = parseQuantityExact(text);
      } catch {
        continue;
      }
      const prev = acc.get(name);
      if (!prev) acc.set(name, { ...q });
      else {
        if (prev.nanos === 0n) prev.format = q.format;
        prev.nanos += q.nanos;
      }
    }
  }
  const out: Record<string, string> = {};
  for (const name of [...acc.keys()].sort()) {
    const q = acc.get(name);
    if (q) out[name] = formatQuantity(q.nanos, q.format);
  }
  return out;
}
