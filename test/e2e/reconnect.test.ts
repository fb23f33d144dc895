/**
 * End to end, two scenarios of a hub that goes away.
 *
 * 1. Recovery (issue 40): two agents (ws and poll) run while the hub's state is wiped (a new
 *    hub on the same port and admin token, an empty state folder). The admin re-creates the
 *    bootstrap token the agents were started with (`spec.token`) and accepts the clusters; the
 *    agents, neither restarted nor touched, register again with that token, keeping their key and
 *    cluster ID, and their clusters are Available again.
 * 2. End to end: five agent processes (`flotilla-agent --simulate`, backoff 1 s doubling to a cap
 *    of `--backoff-cap` 20 s, a third of the default 60 s so that the outage takes seconds, not
 *    minutes) lose their hub (`wrangler dev`) for longer than that cap, and the hub comes back on
 *    the same port with the same state. Each agent must heartbeat again within 10 s of the hub's
 *    return, half the cap, however far its backoff had grown: a cheap `GET /livez` probe under the
 *    backoff ends it as soon as the hub answers (issue 27; agent/src/backoff.ts `sleepProbing`).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, it } from "vitest";
import { admin, createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { cond, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess } from "./support.ts";

/** The agents' backoff cap (`--backoff-cap`), in seconds. */
const BACKOFF_CAP_SECONDS = 20;
/** The hub's outage, in milliseconds: longer than the agents' backoff cap. */
const OUTAGE_MS = BACKOFF_CAP_SECONDS * 1000 + 5_000;
/** How soon after the hub's return every agent must heartbeat again, in milliseconds. */
const BACK_WITHIN_MS = 10_000;
const NAMES = ["rc1", "rc2", "rc3", "rc4", "rc5"];

/** The times (epoch ms) of the agent's log lines from offset `from` on whose message matches `re`. */
function logTimes(output: string, from: number, re: RegExp): number[] {
  const times: number[] = [];
  for (const line of output.slice(from).split("\n")) {
    const m = /^(\S+) [A-Z]+ (.*)$/.exec(line);
    if (m && re.test(m[2]!)) times.push(Date.parse(m[1]!));
  }
  return times;
}

// The two scenarios run side by side (`describe.concurrent`), each on a hub of its own: the first
// spends most of its time waiting out the outage, the second's hub start-ups, registrations and
// leases overlap that wait instead of following it (about 30 s off the file's clock).

describe.concurrent("agents come back within 10 s of the hub's return, however long the outage", () => {
  const agents: AgentProcess[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-reconnect-"));
  let hub: Hub | undefined;

  afterAll(async () => {
    for (const a of agents) await stopAgent(a);
    await hub?.stop();
  });

  it(`five agents heartbeat again within ${BACK_WITHIN_MS / 1000} s of a hub down for ${OUTAGE_MS / 1000} s`, { timeout: 360_000 }, async ({ expect }) => {
    hub = await startHub();
    const { url, stateDir, adminToken } = hub;
    const port = Number(new URL(url).port);
    const token = await createBootstrapToken(hub);
    for (const name of NAMES) {
      agents.push(
        startAgent(hub, [
          "--cluster-name",
          name,
          "--bootstrap-token",
          token,
          "--backoff-cap",
          String(BACKOFF_CAP_SECONDS),
          "--simulate-state",
          path.join(dir, `${name}.json`),
        ]),
      );
    }
    for (const [i, name] of NAMES.entries()) {
      await waitFor(`${name} to wait for acceptance`, async () => /accept/i.test(agents[i]!.output()), 60_000);
      // A short lease, so that every agent's heartbeats meet the outage and back off.
      const r = await admin(hub, "PATCH", `${MC}/${name}`, { spec: { hubAcceptsClient: true, leaseDurationSeconds: 2 } }, merge);
      expect(r.status).toBe(200);
    }
    for (const [i, name] of NAMES.entries()) {
      await waitFor(`${name} to heartbeat every 2 s`, async () => /heartbeating every 2s/.test(agents[i]!.output()), 60_000);
      await waitFor(
        `${name} to be Available`,
        async () => cond((await admin(hub!, "GET", `${MC}/${name}`)).body, "ManagedClusterConditionAvailable")?.status === "True",
        30_000,
      );
    }

    const marks = agents.map((a) => a.output().length);
    const down = Date.now();
    await hub.stop();
    hub = undefined;
    for (const [i, a] of agents.entries()) {
      await waitFor(`${NAMES[i]} to see the hub gone`, async () => logTimes(a.output(), marks[i]!, /^hub unreachable/).length > 0, 30_000);
    }
    // The outage itself is the scenario, not a wait for an outcome: it outlasts the backoff cap.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, down + OUTAGE_MS - Date.now())));

    hub = await startHub({ port, stateDir, adminToken });
    const back = Date.now();
    const after = await Promise.all(
      agents.map((a, i) => waitFor(`${NAMES[i]} to heartbeat again`, async () => logTimes(a.output(), marks[i]!, /^hub reachable again/)[0], 60_000)),
    );
    const delays = after.map((t) => t - back);
    console.log(`reconnect: agents heartbeat again ${delays.map((d) => `${d} ms`).join(", ")} after the hub's return (down ${back - down} ms)`);
    // The bound is the behaviour asked for (issue 27), not a speed figure.
    for (const [i, d] of delays.entries()) expect(d, `${NAMES[i]} came back ${d} ms after the hub`).toBeLessThanOrEqual(BACK_WITHIN_MS);
    for (const name of NAMES) {
      await waitFor(
        `${name} to be Available again`,
        async () => cond((await admin(hub!, "GET", `${MC}/${name}`)).body, "ManagedClusterConditionAvailable")?.status === "True",
        30_000,
      );
    }
  });
});

describe.concurrent("a hub whose state is wiped while agents run gets every cluster back", () => {
  const agents: AgentProcess[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-recovery-"));
  const names = ["rv1", "rv2"];
  let hub: Hub | undefined;

  afterAll(async () => {
    for (const a of agents) await stopAgent(a);
    await hub?.stop();
  });

  it("the agents register again with their bootstrap token, and are Available after acceptance", { timeout: 240_000 }, async ({ expect }) => {
    hub = await startHub();
    const { url, adminToken } = hub;
    const port = Number(new URL(url).port);
    const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    const pick = (n: number) => [...randomBytes(n)].map((b) => alphabet[b % alphabet.length]).join("");
    const token = `${pick(6)}.${pick(16)}`;
    expect(await createBootstrapToken(hub, { token })).toBe(token);
    for (const [i, name] of names.entries()) {
      const transport = i === 0 ? "ws" : "poll";
      agents.push(
        startAgent(hub, ["--cluster-name", name, "--bootstrap-token", token, "--transport", transport, "--simulate-state", path.join(dir, `${name}.json`)]),
      );
    }
    const accept = async (name: string) => {
      await waitFor(`${name} to be registered`, async () => (await admin(hub!, "GET", `${MC}/${name}`)).status === 200, 60_000);
      // A short lease, so that the agents meet the wiped hub's refusals soon.
      const r = await admin(hub!, "PATCH", `${MC}/${name}`, { spec: { hubAcceptsClient: true, leaseDurationSeconds: 5 } }, merge);
      expect(r.status).toBe(200);
    };
    const available = (name: string) =>
      waitFor(
        `${name} to be Available`,
        async () => cond((await admin(hub!, "GET", `${MC}/${name}`)).body, "ManagedClusterConditionAvailable")?.status === "True",
        90_000,
      );
    for (const name of names) await accept(name);
    for (const name of names) await available(name);
    const ids = await Promise.all(
      names.map(async (n) => (await admin(hub!, "GET", `${MC}/${n}`)).body.status.clusterClaims.find((c: { name: string }) => c.name === "id.k8s.io")?.value),
    );
    const marks = agents.map((a) => a.output().length);

    // The hub's state is lost: a new hub on the same port and admin token, from an empty folder.
    await hub.stop();
    hub = await startHub({ port, adminToken });
    const wiped = Date.now();
    expect((await admin(hub, "GET", `${MC}/${names[0]}`)).status).toBe(404);
    // The admin re-creates the token the agents were installed with; nothing is done on the members.
    expect(await createBootstrapToken(hub, { token })).toBe(token);
    for (const name of names) await accept(name);
    for (const name of names) await available(name);
    console.log(`recovery: every cluster Available ${Date.now() - wiped} ms after the wiped hub started`);
    for (const [i, a] of agents.entries()) {
      expect(a.child.exitCode, `${names[i]} still runs`).toBeNull();
      expect(a.output().slice(marks[i])).toMatch(
        new RegExp(`registering again with bootstrap token ${token.split(".")[0]} \\(from --bootstrap-token\\), same key and cluster ID`),
      );
      expect(a.output()).not.toContain(token.split(".")[1]);
      const mc = (await admin(hub, "GET", `${MC}/${names[i]}`)).body;
      expect(mc.status.clusterClaims.find((c: { name: string }) => c.name === "id.k8s.io")?.value).toBe(ids[i]);
    }
  });
});
