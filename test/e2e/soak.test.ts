/**
 * A randomised soak against a real hub (`wrangler dev`), issue 27: admin writers (creates, merge
 * patches, updates with a stale resourceVersion, deletes of a few Secrets, Placements and
 * ManifestWorks, so that writers collide), simulated agents (heartbeats, works polls, status
 * reports, two at a time on one work now and then) and watches that open, read and end, all at
 * once for `SOAK_SECONDS` (default 60). No request may get a 5xx, and the hub must log no
 * cancellation of hung code. The mix is drawn from `SOAK_SEED` (default: a random one, printed),
 * so a failing run is replayed with the seed it printed: `SOAK_SEED=<seed> npm run soak`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNamespaces, hubFetch, startHub, type Hub } from "../../scripts/hub-process.ts";
import { adminCall, appliedStatus, autoApproveToken, manifestWork, PATHS, registerAgent, ServerErrors, statusOf, tokenOf, type LoadAgent } from "./load.ts";
import { merge } from "./support.ts";
import { rng } from "../unit/fleet.ts";

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const SEED = Number(process.env.SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
const NS = "soak";
const AGENTS = 3;
const ADMIN_WRITERS = 4;
const WATCHERS = 3;
/** Names each kind's writers pick from: few, so that they collide. */
const NAMES = 4;

describe(`randomised soak of writers, agents and watches (wrangler dev, ${SECONDS} s, seed ${SEED})`, () => {
  let hub: Hub;
  const agents: LoadAgent[] = [];
  const errors = new ServerErrors();
  const counts = new Map<string, number>();
  const count = (what: string) => counts.set(what, (counts.get(what) ?? 0) + 1);

  beforeAll(async () => {
    console.log(`soak: seed ${SEED} (replay with SOAK_SEED=${SEED}), ${SECONDS} s`);
    hub = await startHub({ graceMultiplier: 100 });
    await createNamespaces(hub, NS);
    const token = await autoApproveToken(hub);
    for (let i = 0; i < AGENTS; i++) agents.push(await registerAgent(hub, token, `soak-${i}`));
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it(
    "answers no request with a 5xx and logs no hung code",
    async () => {
      const rand = rng(SEED);
      /** Each loop draws from its own generator, seeded from the run's: its choices do not depend on the others' timing. */
      const fork = () => rng(Math.floor(rand() * 2 ** 31));
      const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
      const deadline = Date.now() + SECONDS * 1000;
      const running = () => Date.now() < deadline;
      const pause = (r: () => number, maxMs: number) => new Promise((resolve) => setTimeout(resolve, r() * maxMs));

      const adminWriter = async (r: () => number) => {
        while (running()) {
          const kind = pick(r, ["secret", "placement", "work"] as const);
          const name = `${kind}-${Math.floor(r() * NAMES)}`;
          const agent = pick(r, agents);
          const collection = kind === "secret" ? PATHS.secrets(NS) : kind === "placement" ? PATHS.placements(NS) : PATHS.works(agent.name);
          const path = `${collection}/${name}`;
          const body =
            kind === "secret"
              ? { apiVersion: "v1", kind: "Secret", metadata: { name }, stringData: { v: String(r()) } }
              : kind === "placement"
                ? {
                    apiVersion: "cluster.open-cluster-management.io/v1beta1",
                    kind: "Placement",
                    metadata: { name },
                    spec: { numberOfClusters: 1 + Math.floor(r() * AGENTS) },
                  }
                : manifestWork(name, { v: String(r()) });
          const op = pick(r, ["create", "create", "patch", "patch", "patch", "stale-update", "delete"] as const);
          count(`admin ${op}`);
          if (op === "create") await adminCall(hub, errors, "POST", collection, body);
          else if (op === "patch")
            await adminCall(hub, errors, "PATCH", path, { metadata: { labels: { [`l${Math.floor(r() * 8)}`]: String(Math.floor(r() * 100)) } } }, merge);
          else if (op === "delete") await adminCall(hub, errors, "DELETE", path);
          else {
            const got = await adminCall(hub, errors, "GET", path);
            if (got.status === 200) {
              await pause(r, 50);
              await adminCall(hub, errors, "PUT", path, { ...got.body, metadata: { ...got.body.metadata, annotations: { touched: String(r()) } } });
            }
          }
          await pause(r, 30);
        }
      };

      const agentLoop = async (r: () => number, agent: LoadAgent) => {
        let etag: string | undefined;
        let works: { metadata: { name: string; uid: string; generation?: number } }[] = [];
        let beatAt = 0;
        while (running()) {
          if (Date.now() >= beatAt) {
            count("agent heartbeat");
            statusOf(errors, `${agent.name} heartbeat`, await agent.client.heartbeat(agent.name, await tokenOf(agent), { healthy: true }));
            beatAt = Date.now() + 1000 + r() * 2000;
          }
          count("agent poll");
          const polled = await agent.client.getWorks(agent.name, await tokenOf(agent), etag, Math.floor(r() * 3));
          statusOf(errors, `${agent.name} works poll`, polled);
          if (polled.ok && polled.value.changed) {
            etag = polled.value.etag;
            works = polled.value.works as typeof works;
          }
          if (works.length > 0) {
            const w = pick(r, works);
            const report = async () => {
              count("agent report");
              const res = await agent.client.putWorkStatus(agent.name, w.metadata.name, await tokenOf(agent), {
                uid: w.metadata.uid,
                status: appliedStatus(w.metadata.generation ?? 1, `soak ${r()}`),
              });
              statusOf(errors, `${agent.name} report ${w.metadata.name}`, res);
            };
            // Now and then two reports of one work at once, as a retried report meets its original.
            await (r() < 0.3 ? Promise.all([report(), report()]) : report());
          }
          await pause(r, 100);
        }
      };

      const watcher = async (r: () => number) => {
        while (running()) {
          const collection = pick(r, [PATHS.secrets(NS), PATHS.placements(NS), PATHS.works(pick(r, agents).name)]);
          const timeout = 1 + Math.floor(r() * 5);
          count("watch");
          const res = await fetch(`${hub.url}${collection}?watch=true&timeoutSeconds=${timeout}`, { headers: { authorization: `Bearer ${hub.adminToken}` } });
          errors.note(`watch ${collection}`, res.status);
          // Read to the end (the timeout), or give up early now and then, as a client that goes away.
          if (r() < 0.3) {
            await pause(r, timeout * 1000);
            await res.body?.cancel();
          } else {
            const text = await res.text();
            for (const line of text.split("\n")) {
              if (!line.trim()) continue;
              const event = JSON.parse(line) as { type: string; object: { code?: number } };
              if (event.type === "ERROR" && (event.object.code ?? 0) >= 500) errors.note(`watch ${collection} event`, event.object.code!, event.object);
            }
          }
        }
      };

      await Promise.all([
        ...Array.from({ length: ADMIN_WRITERS }, () => adminWriter(fork())),
        ...agents.map((a) => agentLoop(fork(), a)),
        ...Array.from({ length: WATCHERS }, () => watcher(fork())),
      ]);
      console.log(`soak: seed ${SEED}: ${[...counts].map(([k, v]) => `${k} ${v}`).join(", ")}`);
      expect(errors.seen, `seed ${SEED}`).toEqual([]);
      // The hub is still writable and readable.
      expect((await hubFetch(hub, "GET", "/healthz")).status).toBe(200);
      expect(hub.output(), `seed ${SEED}`).not.toMatch(/had hung/);
    },
    (SECONDS + 120) * 1000,
  );
});
