/**
 * `npm start`'s supervisor on a loaded machine: a hub whose processes have work but wait for a CPU
 * (the machine's other processes take the cores) is busy, not dead, and is not restarted under a
 * request in flight; a hub whose processes are stopped (they neither run nor wait) is still
 * restarted. Linux only (taskset, renice, /proc).
 *
 * Before, only the CPU time wrangler's processes used during a timed-out probe counted as busy (a
 * quarter of a core): at a load of 10-16 on 2 cores a busy workerd gets an eighth of one, so the
 * supervisor stopped it as dead after three probes, and a 1,000-cluster placement's create failed
 * with its socket closed (bench:crp, 2026-11-29/30).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { admin, startHub, workerdPids, type Hub } from "../../scripts/hub-process.ts";
import { descendants } from "../../scripts/proc.mjs";
import { waitFor } from "./support.ts";

/** The supervisor's consecutive failed probes before a restart (scripts/start.mjs PROBE_FAILURES). */
const PROBE_FAILURES = 3;

/**
 * Lowers the CPU share of the hub's processes: their scheduling group at nice 19 (wrangler runs
 * them in a session of their own, and Linux's autogroups share the CPU between sessions before
 * the nice of a thread counts), and each thread at nice 19 where the kernel has no autogroups.
 */
function lowerHubPriority(hub: Hub): void {
  for (const pid of descendants(hub.pid)) {
    try {
      writeFileSync(`/proc/${pid}/autogroup`, "19");
    } catch {
      // ended meanwhile, or a kernel without autogroups
    }
    for (const tid of threads(pid)) spawnSync("renice", ["-n", "19", "-p", tid]);
  }
}

/** The threads of process `pid` (none once it ended). */
function threads(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
}

/** Started, and seen up by `npm start`'s supervisor: its probes count from then on. */
async function startSupervisedHub(): Promise<Hub> {
  const h = await startHub();
  await waitFor("npm start to see the hub answer", async () => h.output().includes("flotilla: the hub answers"), 60_000);
  return h;
}

/** Runs `cmd`, failing the test on a non-zero exit. */
function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${r.stderr || r.error}`);
}

/** 200 from /livez/ping within 2 s, else false. */
async function live(hub: Hub): Promise<boolean> {
  try {
    return (await fetch(`${hub.url}/livez/ping`, { signal: AbortSignal.timeout(2000) })).status === 200;
  } catch {
    return false;
  }
}

describe("npm start on a loaded machine", () => {
  let hub: Hub | undefined;
  const hogs: ChildProcess[] = [];
  afterEach(async () => {
    for (const h of hogs.splice(0)) h.kill("SIGKILL");
    await hub?.stop();
    hub = undefined;
  });

  it("keeps a hub whose processes wait for a CPU, and says so, rather than restarting it as dead", { timeout: 300_000 }, async () => {
    hub = await startSupervisedHub();
    const h = hub;
    const before = workerdPids(h);
    // The hub's threads on CPU 0 at the lowest priority, beside three busy loops there: they get
    // some 0.5 % of that core (a probe's figures: about 15 ms run in 3 s), as a busy hub gets a
    // small share of a machine loaded far past its cores. Requests keep the Worker with work to
    // do meanwhile.
    for (const pid of descendants(h.pid)) run("taskset", ["-a", "-p", "-c", "0", String(pid)]);
    lowerHubPriority(h);
    for (let i = 0; i < 3; i++) hogs.push(spawn("taskset", ["-c", "0", process.execPath, "-e", "for(;;){}"], { stdio: "ignore" }));
    let loading = true;
    const requests = Array.from({ length: 4 }, async () => {
      while (loading) await admin(h, "GET", "/api/v1/namespaces").catch(() => undefined);
    });
    try {
      const outcome = await waitFor(
        `${PROBE_FAILURES} probes timed out on the starved hub, or a restart`,
        async () => {
          const out = h.output();
          if (out.includes("restarting wrangler")) return "restarted";
          return (out.match(/but the hub is busy/g) ?? []).length >= PROBE_FAILURES ? "kept" : false;
        },
        120_000,
        500,
      );
      expect(outcome, h.output()).toBe("kept");
    } finally {
      loading = false;
      for (const hog of hogs.splice(0)) hog.kill("SIGKILL");
    }
    await Promise.all(requests);
    await waitFor("the hub to answer /livez/ping once the load is gone", () => live(h), 60_000);
    expect(workerdPids(h).sort()).toEqual(before.sort());
    expect(h.output()).not.toContain("restarting wrangler");
  });

  it("still restarts a hub whose processes are stopped (neither running nor waiting for a CPU)", { timeout: 300_000 }, async () => {
    hub = await startSupervisedHub();
    const h = hub;
    const stopped = workerdPids(h);
    for (const pid of stopped) process.kill(pid, "SIGSTOP");
    await waitFor("npm start to restart wrangler", async () => h.output().includes("restarting wrangler"), 120_000, 500);
    expect(h.output()).toMatch(/did not answer \/livez 3 times in a row \(the last time, wrangler's processes ran \d+ ms and waited \d+ ms/);
    await waitFor("the restarted hub to answer /livez/ping", async () => (await live(h)) && workerdPids(h).every((p) => !stopped.includes(p)), 180_000);
  });
});
