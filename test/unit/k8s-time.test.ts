/**
 * Kubernetes' time formats (src/k8s/meta.ts): metav1.Time (`rfc3339`, seconds) and
 * metav1.MicroTime (`microTime`, six fractional digits), checked against their plain definitions
 * over times that share a second, cross one, precede 1970 or pass the year 9999, so that
 * `rfc3339`'s kept last second never answers another second's text.
 */
import { describe, expect, it } from "vitest";
import { microTime, rfc3339 } from "../../src/k8s/meta.ts";

/** The definitions, written out: Go's `time.RFC3339` of the time truncated to the second, and `2006-01-02T15:04:05.000000Z07:00`. */
const plainRfc3339 = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
const plainMicroTime = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");

const TIMES = [
  Date.parse("2026-11-30T15:04:05.000Z"),
  Date.parse("2026-11-30T15:04:05.999Z"),
  Date.parse("2026-11-30T15:04:06.000Z"),
  Date.parse("2026-11-30T15:04:05.500Z"),
  0,
  -1,
  -1000,
  -1001,
  Date.parse("1969-07-20T20:17:40.123Z"),
  Date.parse("+012026-01-01T00:00:00.250Z"),
  1.5,
];

describe("Kubernetes' time formats", () => {
  it("rfc3339 answers each time's second, whichever second it formatted last", () => {
    for (const ms of [...TIMES, ...TIMES.slice().reverse()]) expect(rfc3339(ms)).toBe(plainRfc3339(ms));
    expect(rfc3339(Date.parse("2026-11-30T15:04:05.700Z"))).toBe("2026-11-30T15:04:05Z");
    expect(rfc3339(Date.parse("2026-11-30T15:04:06.100Z"))).toBe("2026-11-30T15:04:06Z");
  });

  it("microTime has six fractional digits", () => {
    for (const ms of TIMES) expect(microTime(ms)).toBe(plainMicroTime(ms));
    expect(microTime(Date.parse("2026-11-26T11:50:00.123Z"))).toBe("2026-11-26T11:50:00.123000Z");
  });

  it("refuses a time that is no date, as toISOString does", () => {
    expect(() => rfc3339(NaN)).toThrow(RangeError);
    expect(() => microTime(NaN)).toThrow(RangeError);
  });
});
