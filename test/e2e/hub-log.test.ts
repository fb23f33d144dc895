/**
 * A 500 is a bug everywhere (issue 27): the harness reads every hub's log for 5xx answers and
 * hung-code cancellations. Shown on a Worker that fails on purpose (test/e2e/faulty) under the
 * same `npm start` and `wrangler dev` as the hub, so the lines are wrangler's and workerd's own.
 */
import { describe, expect, it } from "vitest";
import { hubFetch, startHub, takeStartedHubs, unexpectedServerErrorReport } from "../../scripts/hub-process.ts";

describe("the hub log check", () => {
  it("finds 5xx answers and hung-code cancellations, and passes only the declared ones", async () => {
    const hub = await startHub({
      wranglerArgs: ["--config", "test/e2e/faulty/wrangler.toml"],
      expectedServerErrors: [{ method: "GET", path: /^\/fail\/503$/, status: 503, why: "the test asks for it" }],
    });
    try {
      expect((await hubFetch(hub, "GET", "/fail/503")).status).toBe(503);
      expect((await hubFetch(hub, "GET", "/fail/500")).status).toBe(500);
      expect((await hubFetch(hub, "POST", "/fail/503")).status).toBe(503);
      expect((await hubFetch(hub, "GET", "/hang")).status).toBe(500);
      expect((await hubFetch(hub, "GET", "/fail/404")).status).toBe(404);
    } finally {
      // stop() waits until the hub has logged every answer it gave.
      await hub.stop();
    }
    const errors = hub.serverErrors();
    expect(errors.filter((e) => e.kind === "5xx").map((e) => [e.method, e.path, e.status, e.expected])).toEqual([
      ["GET", "/fail/503", 503, true],
      ["GET", "/fail/500", 500, false],
      ["POST", "/fail/503", 503, false],
      ["GET", "/hang", 500, false],
    ]);
    expect(errors.filter((e) => e.kind === "hung")).toHaveLength(1);
    expect(errors.every((e) => !e.line.includes("\x1b"))).toBe(true);

    const report = unexpectedServerErrorReport([hub]);
    expect(report).toContain("3 unexpected 5xx answers and 1 hung-code cancellation");
    expect(report).toContain("GET /fail/500 500 Internal Server Error");
    expect(report).toContain("POST /fail/503 503 Service Unavailable");
    expect(report).toContain("your Worker's code had hung");
    expect(report).not.toContain("GET /fail/503");
    expect(report).toContain(hub.logFile);

    // This hub failed on purpose: it is taken out of the file's check (test/hub-log.setup.ts).
    expect(takeStartedHubs()).toEqual([hub]);
    expect(unexpectedServerErrorReport([])).toBeNull();
  });
});
