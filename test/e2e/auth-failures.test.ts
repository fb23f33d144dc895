/**
 * End to end (issue 27): strangers who know a cluster's name or a bootstrap token's ID cannot lock
 * out its agent or its correct secret, and on the local hub, where every client shares 127.0.0.1,
 * wrong admin tokens lock out neither the admin nor the agents. A real hub (`wrangler dev`) and
 * real agent processes; the attackers' addresses are sent as CF-Connecting-IP, which wrangler dev
 * passes on as it came (docs/agent-protocol.md "Authentication failures").
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateAgentKeyPair, signAgentToken } from "../../agent/src/credentials.ts";
import { admin, createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { cond, MC, merge, startAgent, stopAgent, taintKeys, waitFor, type AgentProcess } from "./support.ts";

/** Runs `task(i)` for i in [0, n), `width` at a time. */
async function inParallel(n: number, width: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

/** A bootstrap secret of the right form that is almost surely wrong. */
const wrongSecret = () => [...crypto.getRandomValues(new Uint8Array(16))].map((b) => "abcdefghijklmnopqrstuvwxyz0123456789"[b % 36]).join("");

describe("failed authentication locks out no valid credential (wrangler dev + agent processes)", () => {
  let hub: Hub;
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-auth-"));
  const agents: AgentProcess[] = [];
  let token: string;

  beforeAll(async () => {
    hub = await startHub();
    token = await createBootstrapToken(hub, { autoApprove: true });
    agents.push(startAgent(hub, ["--cluster-name", "victim", "--bootstrap-token", token, "--simulate-state", path.join(dir, "victim.json")]));
    await waitFor("the victim's cluster to be Available", async () => {
      const mc = (await admin(hub, "GET", `${MC}/victim`)).body;
      return cond(mc, "ManagedClusterConditionAvailable")?.status === "True";
    });
    // Heartbeats every 2 s; a lease not renewed for 10 s (5 x 2) would make it Unknown.
    expect((await admin(hub, "PATCH", `${MC}/victim`, { spec: { leaseDurationSeconds: 2 } }, merge)).status).toBe(200);
  });

  afterAll(async () => {
    for (const a of agents) await stopAgent(a);
    await hub?.stop();
  });

  it(
    "1,000 forged tokens naming the cluster and 1,000 wrong secrets for its token's ID, from 100 addresses, and wrong admin tokens from 127.0.0.1: the agent never sees a 429 and stays Available; the admin and a new agent with the correct secret go on",
    { timeout: 600_000 },
    async () => {
      const id = token.split(".")[0]!;
      const statuses = { forged: new Map<number, number>(), secrets: new Map<number, number>(), admin: new Map<number, number>() };
      const count = (m: Map<number, number>, s: number) => m.set(s, (m.get(s) ?? 0) + 1);
      let retryAfter: string | null = null;
      let available = true;
      let watching = true;
      // Watches the victim's cluster all along: it must never leave Available=True.
      // Every 500 ms until the forgeries end (waitFor's interval, the test's own deadline).
      const watch = waitFor(
        "the forgeries to end",
        async () => {
          const mc = (await admin(hub, "GET", `${MC}/victim`)).body;
          if (cond(mc, "ManagedClusterConditionAvailable")?.status !== "True" || taintKeys(mc).length > 0) available = false;
          return !watching;
        },
        600_000,
        500,
      );
      await inParallel(2_000, 8, async (i) => {
        const address = `198.51.100.${i % 100}`;
        if (i % 2 === 0) {
          const jwt = await signAgentToken("victim", await generateAgentKeyPair());
          const res = await fetch(`${hub.url}/agent/v1/clusters/victim/heartbeat`, {
            method: "POST",
            headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json", "cf-connecting-ip": address },
            body: JSON.stringify({ healthy: true }),
          });
          await res.arrayBuffer();
          count(statuses.forged, res.status);
        } else {
          const res = await fetch(`${hub.url}/agent/v1/register`, {
            method: "POST",
            headers: { authorization: `Bearer ${id}.${wrongSecret()}`, "content-type": "application/json", "cf-connecting-ip": address },
            body: JSON.stringify({ clusterName: "x", clusterId: "x" }),
          });
          await res.arrayBuffer();
          count(statuses.secrets, res.status);
        }
        if (i % 10 === 0) {
          // Wrong admin tokens with no CF-Connecting-IP: wrangler dev counts them all as 127.0.0.1,
          // the address of the admin and of every agent.
          const res = await fetch(`${hub.url}${MC}`, { headers: { authorization: `Bearer wrong-${i}` } });
          await res.arrayBuffer();
          count(statuses.admin, res.status);
          if (res.status === 429) retryAfter = res.headers.get("retry-after");
        }
      });
      watching = false;
      await watch;
      expect(statuses.forged).toEqual(new Map([[401, 1000]]));
      expect(statuses.secrets).toEqual(new Map([[401, 1000]]));
      // The admin-token guesses are refused with 429 and Retry-After once over their limit of 50 (a
      // window of the local counter is a wall-clock minute: a burst crosses it whatever came before)...
      for (let i = 0; i < 110 && !retryAfter; i++) {
        const res = await fetch(`${hub.url}${MC}`, { headers: { authorization: `Bearer wrong-again-${i}` } });
        await res.arrayBuffer();
        count(statuses.admin, res.status);
        if (res.status === 429) retryAfter = res.headers.get("retry-after");
      }
      expect(statuses.admin.get(429)).toBeGreaterThanOrEqual(1);
      expect([...statuses.admin.keys()].sort()).toEqual([401, 429]);
      expect(Number(retryAfter)).toBeGreaterThan(0);
      // ...while the admin, from the same address, is served.
      expect((await admin(hub, "GET", `${MC}/victim`)).status).toBe(200);
      expect(available).toBe(true);
      expect(agents[0]!.output()).not.toMatch(/HTTP 429/);
      // The correct secret of the attacked token registers a new agent, from 127.0.0.1 too.
      agents.push(startAgent(hub, ["--cluster-name", "newcomer", "--bootstrap-token", token, "--simulate-state", path.join(dir, "newcomer.json")]));
      await waitFor("the newcomer to be Available", async () => {
        const mc = (await admin(hub, "GET", `${MC}/newcomer`)).body;
        return cond(mc, "ManagedClusterConditionAvailable")?.status === "True";
      });
      expect(agents[1]!.output()).not.toMatch(/HTTP 429/);
    },
  );
});
