/**
 * Durations, one implementation for the hub, the agent, the CLI and the simulated cluster:
 * Go's `time.ParseDuration` (what `metav1.Duration` decodes, and what kubectl's duration flags
 * take) and apimachinery's `duration.HumanDuration` (how kubectl and kube-apiserver print ages).
 * Milliseconds throughout.
 */

/** The unsigned Go duration pattern a CRD schema allows: "0", or number-unit pairs such as "1h30m", "1.5s", "300ms". */
export const GO_DURATION = /^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$/;

const UNIT_MS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A text that is not a Go duration; the message is Go's (`time: invalid duration "x"`). */
export class DurationError extends Error {
  override readonly name = "DurationError";
}

/**
 * Parses a Go duration (`time.ParseDuration`): an optional sign, then one or more decimal numbers
 * each with a unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`), e.g. `"1h30m"`, `"1.5s"`, `"-300ms"`;
 * `"0"` alone needs no unit.
 * @returns the duration in milliseconds (fractional below 1 ms)
 * @throws DurationError `time: invalid duration "<text>"`, `time: missing unit in duration "<text>"`, `time: unknown unit "<u>" in duration "<text>"`
 */
export function parseGoDuration(text: string): number {
  const quoted = JSON.stringify(text);
  let s = text;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    sign = s[0] === "-" ? -1 : 1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") throw new DurationError(`time: invalid duration ${quoted}`);
  let total = 0;
  while (s !== "") {
    const num = /^([0-9]*)(\.([0-9]*))?/.exec(s);
    const digits = num?.[0] ?? "";
    if (digits === "" || digits === "." || !/[0-9]/.test(digits)) throw new DurationError(`time: invalid duration ${quoted}`);
    s = s.slice(digits.length);
    const unit = /^[^0-9.]*/.exec(s)?.[0] ?? "";
    if (unit === "") throw new DurationError(`time: missing unit in duration ${quoted}`);
    const size = UNIT_MS[unit];
    if (size === undefined) throw new DurationError(`time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`);
    total += Number(digits.endsWith(".") ? digits.slice(0, -1) : digits) * size;
    s = s.slice(unit.length);
  }
  return sign * total;
}

/**
 * A duration as Kubernetes prints ages (apimachinery `duration.HumanDuration`): `45s`, `5m30s`,
 * `12m`, `5h10m`, `30h`, `3d4h`, `200d`, `2y100d`, `9y`. `ms` is in milliseconds; a negative
 * span (clock skew) prints as `0s`.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const minutes = Math.floor(seconds / 60);
  const hours = Math.floor(minutes / 60);
  const days = Math.floor(hours / 24);
  const years = Math.floor(days / 365);
  const with2 = (a: number, ua: string, b: number, ub: string) => (b === 0 ? `${a}${ua}` : `${a}${ua}${b}${ub}`);
  if (seconds < 120) return `${seconds}s`;
  if (minutes < 10) return with2(minutes, "m", seconds % 60, "s");
  if (minutes < 180) return `${minutes}m`;
  if (hours < 8) return with2(hours, "h", minutes % 60, "m");
  if (hours < 48) return `${hours}h`;
  if (hours < 192) return with2(days, "d", hours % 24, "h");
  if (days < 365 * 2) return `${days}d`;
  if (days < 365 * 8) return with2(years, "y", days % 365, "d");
  return `${years}y`;
}
