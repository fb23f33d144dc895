/**
 * A 500 is a bug everywhere (issue 27): the harness reads every hub's log for 5xx answers and
 * hung-code cancellations. Shown on a Worker that fails on purpose (test/e2e/faulty) under the
 * same `npm start` and `wrangler dev` as the hub, so the lines are wrangler's and workerd's own.
 */
import { describe, expect, it } from "vitest";
import { hubFetch, startHub, takeStartedHubs, unexpectedServerErrorReport } from "../../scripts/hub-process.ts";
import { waitFor } from "../wait.ts";

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

  it("has no line per request unless FLOTILLA_LOG_REQUESTS=1; the Worker's warnings and errors and hung code show all the same", async () => {
    // `npm start` as run by default: wrangler at --log-level warn (scripts/start.mjs).
    const hub = await startHub({ wranglerArgs: ["--config", "test/e2e/faulty/wrangler.toml"], logRequests: false });
    try {
      expect((await hubFetch(hub, "GET", "/fail/404")).status).toBe(404);
      expect((await hubFetch(hub, "GET", "/fail/500")).status).toBe(500);
      expect((await hubFetch(hub, "GET", "/say/quiet")).status).toBe(200);
      expect((await hubFetch(hub, "GET", "/hang")).status).toBe(500);
      await waitFor(
        "the Worker's error and the hung-code cancellation in the log",
        async () => hub.output().includes("error:quiet") && hub.serverErrors().some((e) => e.kind === "hung"),
      );
      // The answers are a round trip back: a request line, had there been one, was printed by now.
      expect((await hubFetch(hub, "GET", "/say/last")).status).toBe(200);
      await waitFor("the last request's error in the log", async () => hub.output().includes("error:last"));
    } finally {
      await hub.stop();
    }
    const output = hub.output();
    expect(output).toContain("warn:quiet");
    expect(output).toContain("error:quiet");
    expect(output).not.toContain("log:quiet");
    expect(output).not.toMatch(/\[wrangler:[a-z]+\] (GET|POST) \//);
    expect(output).not.toContain("/fail/404");
    expect(hub.serverErrors().map((e) => e.kind)).toEqual(["hung"]);
    expect(takeStartedHubs()).toEqual([hub]);

    // With FLOTILLA_LOG_REQUESTS=1 (startHub's default), each answer has its line, the Worker's console.log too.
    const logged = await startHub({ wranglerArgs: ["--config", "test/e2e/faulty/wrangler.toml"] });
    try {
      expect((await hubFetch(logged, "GET", "/fail/404")).status).toBe(404);
      expect((await hubFetch(logged, "GET", "/say/loud")).status).toBe(200);
    } finally {
      await logged.stop();
    }
    expect(logged.output()).toMatch(/\[wrangler:info\] GET \/fail\/404 404 Not Found/);
    expect(logged.output()).toContain("log:loud");
    expect(logged.serverErrors()).toEqual([]);
    expect(takeStartedHubs()).toEqual([logged]);
  });
});
