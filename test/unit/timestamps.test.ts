/** metav1.Time and MicroTime parsing as Go's time.Parse with apimachinery's layouts (src/k8s/timestamps.ts). */
import { describe, expect, it } from "vitest";
import { parseKubeTime } from "../../src/k8s/timestamps.ts";

describe("parseKubeTime", () => {
  it.each([
    ["2026-11-26T10:00:00Z", false, "2026-11-26T10:00:00Z"],
    ["2026-11-26T10:00:00.999999999Z", false, "2026-11-26T10:00:00Z"],
    ["2026-11-26T11:30:00+01:30", false, "2026-11-26T10:00:00Z"],
    ["2026-01-01T00:30:00+01:00", false, "2025-12-31T23:30:00Z"],
    ["2024-02-29T00:00:00Z", false, "2024-02-29T00:00:00Z"],
    ["0001-01-01T00:00:00Z", false, null],
    ["2026-11-26T10:00:00.123456Z", true, "2026-11-26T10:00:00.123456Z"],
    ["2026-11-26T12:00:00,123456+02:00", true, "2026-11-26T10:00:00.123456Z"],
    ["0001-01-01T00:00:00.000000Z", true, null],
  ] as const)("%s (micro %s) is %s", (value, micro, want) => {
    expect(parseKubeTime(value, micro)).toEqual({ ok: true, value: want });
  });

  it.each([
    ["yesterday", false, "cannot parse"],
    ["2026-11-26 10:00:00Z", false, "cannot parse"],
    ["2026-11-26t10:00:00z", false, "cannot parse"],
    ["2026-11-26T10:00:00+0100", false, "cannot parse"],
    ["2026-13-01T00:00:00Z", false, "month out of range"],
    ["2025-02-29T00:00:00Z", false, "day out of range"],
    ["2026-11-26T24:00:00Z", false, "hour out of range"],
    ["2026-11-26T10:60:00Z", false, "minute out of range"],
    ["2026-11-26T10:00:60Z", false, "second out of range"],
    ["2026-11-26T10:00:00Z", true, 'cannot parse "Z" as ".000000"'],
    ["2026-11-26T10:00:00.123Z", true, 'cannot parse ".123Z" as ".000000"'],
    ["2026-11-26T10:00:00.1234567Z", true, 'as ".000000"'],
  ] as const)("%s (micro %s) is refused: %s", (value, micro, why) => {
    const r = parseKubeTime(value, micro);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toContain(why);
    expect(!r.ok && r.error).toMatch(/^parsing time "/);
  });
});
