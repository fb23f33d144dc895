/**
 * The sums of `npm run profile:top` (scripts/profile-summary.ts): each sample weighs the time to
 * the next one, capped, and the time over the cap is reported as gaps, not as the work of the
 * function sampled before the pause.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_CAP_US, summarize, type Profile } from "../../scripts/profile-summary.ts";

const frame = (functionName: string, url = "") => ({ functionName, scriptId: "1", url, lineNumber: 0, columnNumber: 0 });

/**
 * Root with three children: `work` (every 500 µs), `setTimeout` (then 277 ms unsampled) and
 * `(idle)`; samples: work, work, setTimeout, work, idle (then 900 ms unsampled), work.
 */
const PROFILE: Profile = {
  nodes: [
    { id: 1, callFrame: frame("(root)"), children: [2, 3, 4] },
    { id: 2, callFrame: frame("work", "index.js") },
    { id: 3, callFrame: frame("setTimeout") },
    { id: 4, callFrame: frame("(idle)") },
  ],
  startTime: 0,
  endTime: 279_500 + 900_000 + 500,
  samples: [2, 2, 3, 2, 4, 2],
  timeDeltas: [0, 500, 500, 277_000, 500, 900_000],
};

/** The mean sample interval, the last sample's weight before the cap. */
const MEAN_US = PROFILE.endTime / PROFILE.samples.length;

describe("profile summary", () => {
  it("caps each sample's weight and reports the rest as gaps", () => {
    const s = summarize("p", PROFILE, { "1": [[0, "src/work.ts"]] }, { capUs: DEFAULT_CAP_US });
    expect(s.functions.get("setTimeout (native)")).toBe(5_000);
    // The last sample weighs the profile's mean interval (196.8 ms here), capped too.
    expect(s.functions.get("work src/work.ts")).toBe(500 + 500 + 500 + 5_000);
    expect(s.gapsUs).toBeCloseTo(277_000 - 5_000 + (900_000 - 5_000) + (MEAN_US - 5_000));
    expect(s.gapSamples).toBe(3);
    expect(s.busyGapsUs).toBeCloseTo(277_000 - 5_000 + (MEAN_US - 5_000));
    expect(s.busyUs).toBe(500 + 500 + 5_000 + 500 + 5_000);
    expect(s.totalUs).toBe(s.busyUs + 5_000);
  });

  it("without a cap weighs each sample by its whole delta, as before", () => {
    const s = summarize("p", PROFILE, {}, { capUs: Infinity });
    expect(s.functions.get("setTimeout (native)")).toBe(277_000);
    expect(s.gapsUs).toBe(0);
    expect(s.totalUs).toBeCloseTo(500 + 500 + 277_000 + 500 + 900_000 + MEAN_US);
  });

  it("under a function counts only its samples, capped", () => {
    const s = summarize("p", PROFILE, {}, { capUs: 1_000, under: "setTimeout" });
    expect(s.totalUs).toBe(1_000);
    expect(s.gapsUs).toBe(276_000);
    expect(s.inclusive.get("setTimeout (native)")).toBe(1_000);
  });
});
