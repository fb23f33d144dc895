/**
 * metav1.Time and metav1.MicroTime as kube-apiserver decodes and serialises them
 * (`k8s.io/apimachinery/pkg/apis/meta/v1/time.go`, `micro_time.go`): a Time is parsed with Go's
 * `time.Parse(time.RFC3339, s)` (`2006-01-02T15:04:05Z07:00`, a fraction of any length accepted
 * after the seconds) and written back in UTC to the second; a MicroTime is parsed with the layout
 * `2006-01-02T15:04:05.000000Z07:00` (exactly six fractional digits) and written back in UTC with
 * six. Go's range checks hold (month 1-12, the day within its month, hour < 24, minute and second
 * < 60, a zone offset of at most 24:60); the zero time `0001-01-01T00:00:00Z` is "unset" (written
 * as null, so not stored). Pure.
 */

/** Go's `time.RFC3339`, the layout a metav1.Time is parsed with. */
export const RFC3339_LAYOUT = "2006-01-02T15:04:05Z07:00";
/** apimachinery's `RFC3339Micro`, the layout a metav1.MicroTime is parsed with. */
export const RFC3339_MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00";

/** The outcome of parsing: the canonical form (null for the zero time), or Go's parse error text. */
export type TimeParse = { ok: true; value: string | null } | { ok: false; error: string };

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:([.,])(\d+))?(Z|[+-]\d{2}:\d{2})$/;

function daysIn(month: number, year: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

const pad = (n: number, width: number) => String(n).padStart(width, "0");

/**
 * Parses `value` as a metav1.Time (`micro` false) or MicroTime (`micro` true) and returns its
 * canonical serialisation: UTC, `Z`, no fraction for a Time, six digits for a MicroTime; null for
 * Go's zero time. A string that Go's parser refuses gives Go's error text
 * (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"`, or
 * `parsing time "x": month out of range`).
 *
 * @example
 * parseKubeTime("2026-01-01T01:00:00.5+01:00", false) // { ok: true, value: "2026-01-01T00:00:00Z" }
 * parseKubeTime("2026-01-01T00:00:00Z", true)         // { ok: false, error: 'parsing time ... cannot parse "Z" as ".000000"' }
 */
export function parseKubeTime(value: string, micro: boolean): TimeParse {
  const layout = micro ? RFC3339_MICRO_LAYOUT : RFC3339_LAYOUT;
  const m = DATE_TIME.exec(value);
  if (!m)
    return {
      ok: false,
      error: `parsing time ${JSON.stringify(value)} as ${JSON.stringify(layout)}: cannot parse ${JSON.stringify(value)} as ${JSON.stringify(layout)}`,
    };
  const [, ys, mos, ds, hs, mis, ss, , frac, zone] = m;
  if (micro && frac?.length !== 6) {
    const rest = value.slice(19);
    return { ok: false, error: `parsing time ${JSON.stringify(value)} as ${JSON.stringify(layout)}: cannot parse ${JSON.stringify(rest)} as ".000000"` };
  }
  const [year, month, day, hour, minute, second] = [ys, mos, ds, hs, mis, ss].map(Number) as [number, number, number, number, number, number];
  const range = (what: string): TimeParse => ({ ok: false, error: `parsing time ${JSON.stringify(value)}: ${what} out of range` });
  if (month < 1 || month > 12) return range("month");
  if (hour > 23) return range("hour");
  if (minute > 59) return range("minute");
  if (second > 59) return range("second");
  let offset = 0;
  if (zone !== "Z") {
    const zh = Number(zone!.slice(1, 3));
    const zm = Number(zone!.slice(4, 6));
    if (zh > 24) return range("time zone offset hour");
    if (zm > 60) return range("time zone offset minute");
    offset = (zone!.startsWith("-") ? -1 : 1) * (zh * 60 + zm);
  }
  if (day < 1 || day > daysIn(month, year)) return range("day");
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute - offset, second, 0);
  const y = d.getUTCFullYear();
  if (y < 0 || y > 9999) return { ok: false, error: "Time.MarshalJSON: year outside of range [0,9999]" };
  const base = `${pad(y, 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`;
  const fraction = micro ? frac! : "";
  if (base === "0001-01-01T00:00:00" && /^0*$/.test(frac ?? "")) return { ok: true, value: null };
  return { ok: true, value: micro ? `${base}.${fraction}Z` : `${base}Z` };
}
