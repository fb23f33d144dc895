/**
 * A 500 is a bug everywhere (issue 27): after each test file of the node-side suites, every hub the
 * file started (scripts/hub-process.ts `startHub`) is stopped if it still runs, and the file fails
 * when a hub's log holds a 5xx answer or a hung-code cancellation that the file did not declare
 * in `startHub`'s `expectedServerErrors`. The failure names the log lines and the log file.
 */
import { afterAll } from "vitest";
import { takeStartedHubs, unexpectedServerErrorReport } from "../scripts/hub-process.ts";

afterAll(async () => {
  const hubs = takeStartedHubs();
  // stop() is idempotent: a hub the file stopped already is not stopped twice.
  await Promise.all(hubs.map((h) => h.stop()));
  const report = unexpectedServerErrorReport(hubs);
  if (report) throw new Error(report);
}, 60_000);
