/**
 * Durations on the command line (`--ttl 1h`, `--timeout 90s`) and ages in tables (`5m`, `3h12m`).
 */

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/**
 * Parses a duration: a whole number of seconds (`3600`) or units `d`, `h`, `m`, `s` in that
 * order (`1h`, `1h30m`, `90s`, `2d`).
 *
 * @returns the duration in seconds.
 * @throws Error with a message fit for a usage error when the text is not a duration.
 */
export function parseDuration(text: string): number {
  const t = text.trim();
  if (/^\d+$/.test(t)) return Number(t);
  const re = /(\d+)([dhms])/gy;
  let total = 0;
  let matched = 0;
  let lastUnit = -1;
  for (let m = re.exec(t); m; m = re.exec(t)) {
    const order = "dhms".indexOf(m[2]!);
    if (order <= lastUnit) break;
    lastUnit = order;
    total += Number(m[1]) * UNIT_SECONDS[m[2]!]!;
    matched = re.lastIndex;
  }
  if (matched === 0 || matched !== t.length) throw new Error(`"${text}" is not a duration; use seconds (3600) or units like 90s, 5m, 1h30m, 2d`);
  return total;
}

/**
 * Renders a span of time for a table, kubectl-style: `45s`, `3m20s`, `47m`, `5h12m`, `30h`,
 * `3d4h`, `12d`.
 *
 * @param ms the span in milliseconds (negative spans, from clock skew, render as `0s`).
 */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  const d = Math.floor(h / 24);
  if (s < 120) return `${s}s`;
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (h < 3) return `${m}m`;
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  if (d < 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  return `${d}d`;
}

/**
 * The age of an RFC 3339 timestamp at `nowMs` (epoch milliseconds), as {@link formatAge}
 * renders it; `-` when the timestamp is missing or not a date.
 */
export function ageOf(timestamp: string | undefined | null, nowMs: number): string {
  if (!timestamp) return "-";
  const t = Date.parse(timestamp);
  return Number.isNaN(t) ? "-" : formatAge(nowMs - t);
}

/** Renders seconds as the shortest of `Ns`, `Nm`, `Nh`, `Nd` that is exact (`3600` → `1h`). */
export function formatSeconds(seconds: number): string {
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]] as const) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}
