/**
 * Durations on the command line (`--ttl 1h`, `--timeout 90s`) and ages in tables (`5m`, `3h12m`).
 */

import { DurationError, humanDuration, parseGoDuration } from "../../src/k8s/duration.ts";

/**
 * Parses a duration: a whole number of seconds (`3600`), or a Go duration as kubectl's flags take
 * (`90s`, `5m`, `1h30m`; src/k8s/duration.ts), optionally led by whole days (`2d`, `1d12h`).
 *
 * @returns the duration in whole seconds (at least 0).
 * @throws Error with a message fit for a usage error when the text is not a duration.
 */
export function parseDuration(text: string): number {
  const t = text.trim();
  if (/^\d+$/.test(t)) return Number(t);
  const bad = new Error(`"${text}" is not a duration; use seconds (3600) or units like 90s, 5m, 1h30m, 2d`);
  const days = /^(\d+)d(.*)$/.exec(t);
  let ms: number;
  try {
    ms = (days ? Number(days[1]) * 86_400_000 : 0) + (days && days[2] === "" ? 0 : parseGoDuration(days ? days[2]! : t));
  } catch (e) {
    if (e instanceof DurationError) throw bad;
    throw e;
  }
  if (!(ms >= 0) || (days && /^[+-]/.test(days[2]!))) throw bad;
  return Math.floor(ms / 1000);
}

/**
 * The age of an RFC 3339 timestamp at `nowMs` (epoch milliseconds), as kubectl renders it
 * (`humanDuration`); `-` when the timestamp is missing or not a date.
 */
export function ageOf(timestamp: string | undefined | null, nowMs: number): string {
  if (!timestamp) return "-";
  const t = Date.parse(timestamp);
  return Number.isNaN(t) ? "-" : humanDuration(nowMs - t);
}

/** Renders seconds as the shortest of `Ns`, `Nm`, `Nh`, `Nd` that is exact (`3600` → `1h`). */
export function formatSeconds(seconds: number): string {
  for (const [unit, size] of [
    ["d", 86400],
    ["h", 3600],
    ["m", 60],
  ] as const) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}
