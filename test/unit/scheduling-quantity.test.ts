// Kubernetes quantity parsing as apimachinery's Quantity.AsApproximateFloat64() computes it.
// Expected values are written as apimachinery derives them: (integer) × 10^scale on the
// int64 fast path, or the decimal rounded up to nano units × 1e-9 on the slow path.
import { describe, expect, it } from "vitest";
import { calculateGroupLength, parseQuantity, QuantityError, tryParseQuantity } from "../../src/scheduling/index.ts";

describe("parseQuantity", () => {
  const cases: [string, number][] = [
    ["4", 4],
    ["0", 0],
    ["007", 7],
    ["+2k", 2 * 1e3],
    ["-1.5", -15 * 0.1],
    ["3800m", 3800 * 0.001], // 3.8000000000000003, as in Go
    ["100m", 100 * 0.001],
    ["0.5", 5 * 0.1],
    [".5", 5 * 0.1],
    ["1.", 1],
    ["1.50", 150 * 0.01],
    ["16Gi", 16 * 2 ** 30],
    ["2Ki", 2048],
    ["8192Mi", 8192 * 2 ** 20],
    ["1Ti", 2 ** 40],
    ["500M", 500 * 1e6],
    ["1G", 1e9],
    ["1E", 1e18],
    ["1e3", 1 * 1e3],
    ["1E3", 1 * 1e3],
    ["1e-3", 1 * 0.001],
    ["25e+2", 2500],
    ["1u", 1 * 1e-6],
    ["1n", 1 * 1e-9],
    // Slow path: a binary suffix with a fraction → exact decimal 1.5 × 2^30, at nano scale, × 1e-9.
    ["1.5Gi", 1610612736000000000 * 1e-9],
    ["1.5Ki", 1536000000000 * 1e-9],
    // Below nano precision: rounded up (away from zero) to the next nano unit.
    ["1.5n", 2 * 1e-9],
    ["5e-10", 1 * 1e-9],
    ["-1.5n", -2 * 1e-9],
    // Above 2^63−1 units: capped.
    ["100Ei", Number((1n << 63n) - 1n)],
    ["12345678901234567890", Number((1n << 63n) - 1n)],
    // 19 digits (> 18 = maxInt64Factors) takes the slow path but is representable.
    ["1234567890123456789", Number(1234567890123456789000000000n) * 1e-9],
  ];
  for (const [input, expected] of cases) {
    it(`${JSON.stringify(input)} → ${expected}`, () => {
      expect(parseQuantity(input)).toBe(expected);
      expect(tryParseQuantity(input)).toBe(expected);
    });
  }

  const invalid = ["", " ", "abc", "Gi", "1Gb", "1 Gi", "1.2.3", "--1", "+", ".", "1e", "e3", "1k1", "1Mii", "0x10", " 1"];
  for (const input of invalid) {
    it(`rejects ${JSON.stringify(input)}`, () => {
      expect(() => parseQuantity(input)).toThrow(QuantityError);
      expect(tryParseQuantity(input)).toBeUndefined();
    });
  }

  it("tryParseQuantity(undefined) is undefined", () => {
    expect(tryParseQuantity(undefined)).toBeUndefined();
  });
});

describe("calculateGroupLength", () => {
  const cases: [number | string | undefined, number, number][] = [
    [undefined, 7, 7],
    [3, 7, 3],
    [0, 7, 7],
    [-2, 7, 7],
    [10, 7, 7],
    ["25%", 7, 2], // ceil(1.75)
    ["50%", 7, 4], // ceil(3.5)
    ["100%", 7, 7],
    ["1%", 250, 3], // ceil(2.5)
    ["10%", 0, 0],
    ["33.3%", 3, 1], // ceil(0.999)
  ];
  for (const [value, total, length] of cases) {
    it(`${JSON.stringify(value)} of ${total} → ${length}`, () => {
      expect(calculateGroupLength(value, total)).toEqual({ length });
    });
  }
  it("a string without % is an error", () => {
    expect(calculateGroupLength("5", 7)).toEqual({ error: "5 invalid type: string is not a percentage" });
  });
});
