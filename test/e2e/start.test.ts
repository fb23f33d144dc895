/**
 * `npm start` as an operator runs it: no secret on any command line, watches of clients that went
 * away freed, and a hub that comes back (or exits non-zero for a supervisor) when its workerd
 * processes are killed.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, startHub, workerdPids, type Hub } from "../../scripts/hub-process.ts";
import { MAX_WATCHES_PER_CLIENT, WATCH_GONE_FREED_SECONDS } from "../../src/api/watch-limits.ts";
import { waitFor } from "./support.ts";

/** Every process's command line (arguments joined by spaces), from /proc. */
function commandLines(): string[] {
  const out: string[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      out.push(readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " "));
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

/** 200 from /livez within 2 s, else false (a crashed hub may accept connections and never answer). */
async function live(hub: Hub): Promise<boolean> {
  try {
    return (await fetch(`${hub.url}/livez`, { signal: AbortSignal.timeout(2000) })).status === 200;
  } catch {
    return false;
  }
}

const SECRETS = "/api/v1/namespaces/default/secrets";

describe("npm start", () => {
  let hub: Hub;
  beforeAll(async () => {
    hub = await startHub();
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it("puts no secret on a command line; the token and the encryption key reach the Worker through a 0600 file", async () => {
    const key = readFileSync(path.join(hub.stateDir, "encryption-keys"), "utf8").trim();
    expect(key).toMatch(/^key1:[A-Za-z0-9+/]{43}=$/);
    const lines = commandLines();
    expect(lines.some((l) => l.includes("wrangler.js dev"))).toBe(true);
    expect(lines.filter((l) => l.includes(hub.adminToken))).toEqual([]);
    expect(lines.filter((l) => l.includes(key.slice(5)))).toEqual([]);
    for (const f of ["hub.env", "encryption-keys"]) expect(statSync(path.join(hub.stateDir, f)).mode & 0o777).toBe(0o600);

    expect((await admin(hub, "GET", SECRETS)).status).toBe(200);
    expect((await admin({ ...hub, adminToken: `${hub.adminToken}x` }, "GET", SECRETS)).status).toBe(401);
    // The key reached the Worker: a Secret is stored and served.
    const created = await admin(hub, "POST", SECRETS, { apiVersion: "v1", kind: "Secret", metadata: { name: "before-crash" }, stringData: { password: "hunter2" } });
    expect(created.status).toBe(201);
  });

  it(`frees the watch place of a client that went away within ${WATCH_GONE_FREED_SECONDS} s, as the README says`, { timeout: 180_000 }, async () => {
    const url = `${hub.url}/apis/cluster.open-cluster-management.io/v1/managedclusters?watch=true`;
    const headers = { authorization: `Bearer ${hub.adminToken}` };
    // Open watches until the hub refuses one (its cap is 50 per client, src/api/watch.ts).
    const aborts: AbortController[] = [];
    let refused: Response | undefined;
    while (!refused && aborts.length <= 200) {
      const abort = new AbortController();
      const res = await fetch(url, { headers, signal: abort.signal });
      if (res.status === 200) aborts.push(abort);
      else refused = res;
    }
    expect(aborts.length).toBe(MAX_WATCHES_PER_CLIENT);
    expect(refused?.status).toBe(429);
    expect(Number(refused?.headers.get("retry-after"))).toBeGreaterThan(0);
    await refused?.body?.cancel();
    // One client goes away (its connection closes); a new watch gets its place within the bound.
    aborts.pop()!.abort();
    const again = new AbortController();
    try {
      await waitFor(
        "a watch to be accepted again",
        async () => {
          const res = await fetch(url, { headers, signal: again.signal });
          if (res.status === 200) return true;
          await res.body?.cancel();
          return false;
        },
        WATCH_GONE_FREED_SECONDS * 1000,
      );
    } finally {
      again.abort();
      for (const a of aborts) a.abort();
    }
  });

  it("answers again after its workerd processes are killed, on the same state", { timeout: 300_000 }, async () => {
    const pids = workerdPids(hub);
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) process.kill(pid, "SIGKILL");
    // Either the hub answers again (restarted by npm start) or npm start exited non-zero.
    const outcome = await waitFor(
      "the hub to answer /livez again or npm start to exit",
      async () => {
        const code = hub.exitCode();
        if (code !== null) return { exited: code };
        return workerdPids(hub).every((p) => !pids.includes(p)) && (await live(hub)) ? { live: true } : false;
      },
      240_000,
    );
    expect(outcome, hub.output()).toEqual({ live: true });
    const got = await admin(hub, "GET", `${SECRETS}/before-crash`);
    expect(got.status).toBe(200);
    expect(Buffer.from(got.body.data.password, "base64").toString()).toBe("hunter2");
  });
});
