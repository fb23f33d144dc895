/**
 * The one implementation of each apimachinery concept the hub, agent, CLI and simulated cluster
 * share: Go durations and human ages (src/k8s/duration.ts), field selectors (src/k8s/fields.ts),
 * exact quantities (src/k8s/quantity.ts), generated names (src/k8s/names.ts).
 */
import { describe, expect, it } from "vitest";
import { humanDuration, parseGoDuration } from "../../src/k8s/duration.ts";
import { matchesFields, parseFieldSelector } from "../../src/k8s/fields.ts";
import { parseQuantityExact, sumQuantities } from "../../src/k8s/quantity.ts";

describe("Go durations (time.ParseDuration), in milliseconds", () => {
  it("parses what Go parses", () => {
    expect(parseGoDuration("1h30m")).toBe(5_400_000);
    expect(parseGoDuration("1.5s")).toBe(1500);
    expect(parseGoDuration("300ms")).toBe(300);
    expect(parseGoDuration("-2m")).toBe(-120_000);
    expect(parseGoDuration("0")).toBe(0);
    expect(parseGoDuration(".5s")).toBe(500);
    expect(parseGoDuration("1µs")).toBeCloseTo(0.001);
  });
  it("refuses what Go refuses, with Go's messages", () => {
    expect(() => parseGoDuration("")).toThrow('time: invalid duration ""');
    expect(() => parseGoDuration("5")).toThrow('time: missing unit in duration "5"');
    expect(() => parseGoDuration("2d")).toThrow('time: unknown unit "d" in duration "2d"');
    expect(() => parseGoDuration("h")).toThrow('time: invalid duration "h"');
  });
  it("prints ages as HumanDuration", () => {
    expect(humanDuration(-1)).toBe("0s");
    expect(humanDuration(200_000)).toBe("3m20s");
    expect(humanDuration(76 * 3_600_000)).toBe("3d4h");
    expect(humanDuration(400 * 86_400_000)).toBe("400d");
    expect(humanDuration(1000 * 86_400_000)).toBe("2y270d");
  });
});

describe("field selectors (fields.ParseSelector)", () => {
  it("parses =, == and != with escapes, sorted", () => {
    expect(parseFieldSelector("status.phase!=Running,metadata.name==a\\,b")).toEqual([
      { field: "metadata.name", value: "a,b", equals: true },
      { field: "status.phase", value: "Running", equals: false },
    ]);
    const reqs = parseFieldSelector("metadata.name=x");
    expect(matchesFields(reqs, () => "x")).toBe(true);
    expect(matchesFields(reqs, () => "y")).toBe(false);
    expect(parseFieldSelector("")).toEqual([]);
  });
  it("refuses what apimachinery refuses, with its messages", () => {
    expect(() => parseFieldSelector("nonsense")).toThrow("invalid selector: 'nonsense'; can't understand 'nonsense'");
    expect(() => parseFieldSelector("a=b=c")).toThrow("invalid field selector: unescaped character in value: =");
    expect(() => parseFieldSelector("a=b\\x")).toThrow("invalid field selector: invalid escape sequence: \\x");
  });
});

describe("exact quantities", () => {
  it("parse in nano-units with their format, and sum as Quantity.Add", () => {
    expect(parseQuantityExact("1.5Gi")).toEqual({ nanos: 1_610_612_736n * 1_000_000_000n, format: "BinarySI" });
    expect(parseQuantityExact("1e3")).toEqual({ nanos: 1000n * 1_000_000_000n, format: "DecimalExponent" });
    expect(parseQuantityExact("-0.1n").nanos).toBe(-1n);
    expect(sumQuantities(["3800m", "4"])).toBe("7800m");
    expect(() => parseQuantityExact(" 1")).toThrow(/quantities must match/);
  });
});
