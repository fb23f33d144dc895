/**
 * Kubernetes resource quantities (`k8s.io/apimachinery/pkg/api/resource.Quantity`): parse,
 * add and format, exactly (bigint arithmetic, no floating point).
 *
 * Values are held in nano-units (10^-9), the finest scale Kubernetes keeps; a finer fraction
 * rounds up, as Kubernetes does. Three formats exist, as in Kubernetes: `DecimalSI`
 * (`m`, `k`, `M`, `G`, `T`, `P`, `E`, and `n`, `u`), `BinarySI` (`Ki`, `Mi`, `Gi`, `Ti`, `Pi`,
 * `Ei`) and `DecimalExponent` (`1e3`, `1E3`).
 */

/** The three quantity formats of Kubernetes. */
export type QuantityFormat = "DecimalSI" | "BinarySI" | "DecimalExponent";

/** A parsed quantity: its exact value in nano-units (value × 10^9) and the format it was written in. */
export interface Quantity {
  /** The value multiplied by 10^9 (so `"1"` is `1_000_000_000n`, `"3800m"` is `3_800_000_000n`). */
  nanos: bigint;
  /** The format of the text it came from; used to choose how a sum is written. */
  format: QuantityFormat;
}

const NANO = 1_000_000_000n;

const DECIMAL_SUFFIXES: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const BINARY_SUFFIXES: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

const QUANTITY_RE = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE])?$/;

function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

/** Divides rounding toward +infinity (Kubernetes rounds sub-nano fractions up). */
function divCeil(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a > 0n ? q + 1n : q;
}

/**
 * Parses a Kubernetes quantity string.
 *
 * @param text e.g. `"3800m"`, `"4"`, `"16Gi"`, `"1.5Gi"`, `"1e3"`, `"128974848"`.
 * @returns the exact value in nano-units and the format of the text.
 * @throws Error `invalid quantity "<text>"` when the text is not a quantity.
 * @example
 * parseQuantity("3800m"); // { nanos: 3_800_000_000n, format: "DecimalSI" }
 */
export function parseQuantity(text: string): Quantity {
  const m = QUANTITY_RE.exec(text.trim());
  if (!m) throw new Error(`invalid quantity "${text}"`);
  const sign = m[1] === "-" ? -1n : 1n;
  const num = m[2] ?? "0";
  const suffix = m[3] ?? "";
  const [intPart = "", fracPart = ""] = num.split(".");
  const digits = BigInt((intPart || "0") + fracPart);
  let format: QuantityFormat;
  let exp10 = -fracPart.length;
  let exp2 = 0;
  if (suffix in BINARY_SUFFIXES) {
    format = "BinarySI";
    exp2 = BINARY_SUFFIXES[suffix] ?? 0;
  } else if (/^[eE]/.test(suffix)) {
    format = "DecimalExponent";
    exp10 += Number(suffix.slice(1));
  } else {
    format = "DecimalSI";
    exp10 += DECIMAL_SUFFIXES[suffix] ?? 0;
  }
  // value = digits × 10^exp10 × 2^exp2; nanos = value × 10^9.
  let numerator = digits * (1n << BigInt(exp2));
  const scale = exp10 + 9;
  if (scale >= 0) numerator *= pow10(scale);
  else numerator = divCeil(numerator, pow10(-scale));
  return { nanos: sign * numerator, format };
}

function formatDecimal(nanos: bigint, exponentStyle: boolean): string {
  if (nanos === 0n) return "0";
  const neg = nanos < 0n;
  const abs = neg ? -nanos : nanos;
  // Largest power of 1000 (from 10^18 down to 10^-9) that keeps the mantissa an integer.
  for (let e = 18; e >= -9; e -= 3) {
    const unit = pow10(e + 9);
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
    if (abs % NANO === 0n && abs >= 1024n * NANO) {
      const whole = abs / NANO;
      const suffixes = Object.entries(BINARY_SUFFIXES).sort((a, b) => b[1] - a[1]);
      for (const [suffix, shift] of suffixes) {
        const unit = 1n << BigInt(shift);
        if (whole % unit === 0n) return `${nanos < 0n ? "-" : ""}${whole / unit}${suffix}`;
      }
      return `${nanos / NANO}`;
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
    const q = parseQuantity(v);
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
export function sumResourceLists(
  lists: ReadonlyArray<Readonly<Record<string, string>> | undefined>,
): Record<string, string> {
  const acc = new Map<string, { nanos: bigint; format: QuantityFormat }>();
  for (const list of lists) {
    if (!list) continue;
    for (const [name, text] of Object.entries(list)) {
      let q: Quantity;
      try {
        q = parseQuantity(text);
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
