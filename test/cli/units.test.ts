/**
 * The CLI's pure parts: durations and ages, taint parsing and editing, tables, progress on a
 * terminal and off it, and polling with a deadline.
 */
import { describe, expect, it } from "vitest";
import { CliError } from "../../agent/cli/errors.ts";
import { renderTable } from "../../agent/cli/output.ts";
import { createProgress } from "../../agent/cli/progress.ts";
import { addTaints, parseTaintSelector, parseTaintSpec, removeTaints } from "../../src/kinds/managedcluster-taints.ts";
import { formatSeconds, parseDuration } from "../../agent/cli/time.ts";
import { humanDuration as formatAge } from "../../src/k8s/duration.ts";
import { pollUntil } from "../../agent/cli/wait.ts";
import { auditFieldSelector } from "../../agent/cli/commands/audit.ts";

describe("durations and ages", () => {
  it("parses seconds and unit durations in seconds", () => {
    expect(parseDuration("3600")).toBe(3600);
    expect(parseDuration("90s")).toBe(90);
    expect(parseDuration("5m")).toBe(300);
    expect(parseDuration("1h30m")).toBe(5400);
    expect(parseDuration("2d")).toBe(172800);
    for (const bad of ["", "1x", "m", "1h 2m", "-5", "-5m", "1d-5h"]) expect(() => parseDuration(bad), bad).toThrow(/is not a duration/);
  });

  it("renders ages like kubectl", () => {
    expect(formatAge(-5000)).toBe("0s");
    expect(formatAge(45_000)).toBe("45s");
    expect(formatAge(200_000)).toBe("3m20s");
    expect(formatAge(47 * 60_000)).toBe("47m");
    expect(formatAge((5 * 60 + 12) * 60_000)).toBe("5h12m");
    expect(formatAge(30 * 3_600_000)).toBe("30h");
    expect(formatAge(76 * 3_600_000)).toBe("3d4h");
    expect(formatAge(12 * 86_400_000)).toBe("12d");
    expect(formatSeconds(3600)).toBe("1h");
    expect(formatSeconds(90)).toBe("90s");
  });
});

describe("taints", () => {
  it("parses KEY[=VALUE]:EFFECT and KEY[:EFFECT]", () => {
    expect(parseTaintSpec("gpu=true:NoSelect")).toEqual({ key: "gpu", value: "true", effect: "NoSelect" });
    expect(parseTaintSpec("example.com/maint:PreferNoSelect")).toEqual({ key: "example.com/maint", effect: "PreferNoSelect" });
    expect(() => parseTaintSpec("gpu=true")).toThrow(/KEY\[=VALUE\]:EFFECT/);
    expect(() => parseTaintSpec("gpu:Sometimes")).toThrow(/effect must be one of/);
    expect(() => parseTaintSpec(":NoSelect")).toThrow(/no key/);
    expect(parseTaintSelector("gpu")).toEqual({ key: "gpu" });
    expect(parseTaintSelector("gpu:NoSelectIfNew")).toEqual({ key: "gpu", effect: "NoSelectIfNew" });
    expect(() => parseTaintSelector("gpu=true")).toThrow(/KEY\[:EFFECT\]/);
  });

  it("adds without timeAdded, replaces a changed value, keeps the others untouched", () => {
    const existing = [
      { key: "a", effect: "NoSelect", timeAdded: "2026-01-01T00:00:00Z" },
      { key: "b", value: "1", effect: "NoSelect", timeAdded: "2026-01-02T00:00:00Z" },
    ];
    const edit = addTaints(existing, [
      { key: "a", effect: "NoSelect" },
      { key: "b", value: "2", effect: "NoSelect" },
      { key: "c", effect: "PreferNoSelect" },
    ]);
    expect(edit.taints).toEqual([
      { key: "a", effect: "NoSelect", timeAdded: "2026-01-01T00:00:00Z" },
      { key: "b", value: "2", effect: "NoSelect" },
      { key: "c", effect: "PreferNoSelect" },
    ]);
    expect(edit.changed).toEqual(["b=2:NoSelect", "c:PreferNoSelect"]);
    expect(edit.unchanged).toEqual(["a:NoSelect"]);
    expect(existing[1]!.value).toBe("1");
  });

  it("removes by key or by key and effect, and reports what was not there", () => {
    const existing = [
      { key: "a", effect: "NoSelect" },
      { key: "a", effect: "PreferNoSelect" },
      { key: "b", effect: "NoSelect" },
    ];
    expect(removeTaints(existing, [{ key: "a", effect: "PreferNoSelect" }]).taints).toEqual([existing[0], existing[2]]);
    const all = removeTaints(existing, [{ key: "a" }, { key: "z" }]);
    expect(all.taints).toEqual([existing[2]]);
    expect(all.changed).toEqual(["a:NoSelect", "a:PreferNoSelect"]);
    expect(all.unchanged).toEqual(["z"]);
  });
});

describe("flotilla audit's field selector", () => {
  const now = Date.UTC(2026, 10, 26, 12, 0, 0);
  it("turns the flags into the AuditEvents field selectors, --since into a time range's start", () => {
    expect(auditFieldSelector({}, now)).toBeUndefined();
    expect(auditFieldSelector({ user: "alice", verb: "delete", resource: "placements", namespace: "team-a", since: "1h30m" }, now)).toBe(
      "user.username=alice,verb=delete,objectRef.resource=placements,objectRef.namespace=team-a,requestReceivedTimestamp>=2026-11-26T10:30:00.000Z",
    );
  });
  it("refuses a --since that is not a duration and a value with a comma, as usage errors", () => {
    expect(() => auditFieldSelector({ since: "yesterday" }, now)).toThrow(/--since: "yesterday" is not a duration/);
    expect(() => auditFieldSelector({ user: "a,b" }, now)).toThrow(CliError);
  });
});

describe("tables", () => {
  it("pads every column but the last to its widest cell, three spaces apart", () => {
    expect(
      renderTable(
        ["NAME", "X"],
        [
          ["a", "1"],
          ["longer", "22"],
        ],
      ),
    ).toBe("NAME     X\na        1\nlonger   22\n");
  });
});

describe("progress", () => {
  const sink = (isTTY: boolean) => {
    const writes: string[] = [];
    return { writes, stream: { isTTY, write: (s: string) => writes.push(s) } };
  };

  it("off a terminal, writes one plain line per change and nothing on stop", () => {
    const { writes, stream } = sink(false);
    const p = createProgress(stream);
    p.update("waiting for a");
    p.update("waiting for a");
    p.update("waiting for b");
    p.stop();
    p.update("after stop");
    expect(writes).toEqual(["waiting for a\n", "waiting for b\n"]);
  });

  it("on a terminal, draws a spinner line in place, redraws it, and clears it on stop", async () => {
    const { writes, stream } = sink(true);
    const p = createProgress(stream, { intervalMs: 10 });
    p.update("waiting");
    await new Promise((r) => setTimeout(r, 50));
    p.stop();
    expect(writes.length).toBeGreaterThan(2);
    expect(writes[0]!.startsWith("\r\x1b[K")).toBe(true);
    expect(writes[0]!.slice(4)).toMatch(/^\S waiting$/);
    expect(new Set(writes.slice(0, -1).map((w) => w.slice(4, 5))).size).toBeGreaterThan(1);
    expect(writes.at(-1)).toBe("\r\x1b[K");
    expect(writes.every((w) => !w.includes("\n"))).toBe(true);
  });
});

describe("pollUntil", () => {
  const quiet = { update: () => undefined, stop: () => undefined };

  it("returns the value once the probe is done", async () => {
    let n = 0;
    const v = await pollUntil({
      probe: async () => (++n >= 3 ? { done: true, state: "", value: n } : { done: false, state: `try ${n}` }),
      progress: quiet,
      deadlineMs: Date.now() + 10_000,
      timeoutSeconds: 10,
      intervalMs: 1,
      timeoutHint: "h",
    });
    expect(v).toBe(3);
  });

  it("times out with the last state and the hint", async () => {
    const err = await pollUntil({
      probe: async () => ({ done: false, state: "waiting for x" }),
      progress: quiet,
      deadlineMs: Date.now() + 30,
      timeoutSeconds: 120,
      intervalMs: 5,
      timeoutHint: "do y",
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).message).toBe("timed out after 2m waiting for x");
    expect((err as CliError).hint).toBe("do y");
  });
});
