/**
 * The crash test (`npm run test:crash`): a real hub (`wrangler dev` on workerd, local D1) with
 * three real agents (`flotilla-agent --simulate`), a burst of writes (Placement creates,
 * ManifestWork creates, label changes on clusters and placements), and `kill -9` of the workerd
 * process in the middle of the burst. The hub is then started again on the same state folder
 * and port, and must have:
 * - every acknowledged write (created objects, applied labels);
 * - every committed Placement scheduled (status and decisions), acknowledged or not;
 * - every committed ManifestWork delivered (its agent reports it Applied);
 * - each ManagedCluster as its Durable Object serves it equal to its D1 row;
 * - the agents back, without a bootstrap token (the token is deleted before the crash).
 * It prints what the crash left behind (writes without an answer, outbox rows, cluster objects
 * with a commit in flight) and how long the hub took to finish it. Every wait has a deadline.
 */
import { readdirSync, readFileSync, existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { descendants } from "../../scripts/proc.mjs";
import { cond, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess } from "../e2e/support.ts";

const G = "/apis/cluster.open-cluster-management.io";
const NS = "crash";
const PLACEMENTS = `${G}/v1beta1/namespaces/${NS}/placements`;
const DECISIONS = `${G}/v1beta1/namespaces/${NS}/placementdecisions`;
const WORKS = (cluster: string) => `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks`;
const CLUSTERS = ["k1", "k2", "k3"];
/** Writes in the burst, how many are in flight at once, and how many answers come before the kill. */
const BURST = Number(process.env.CRASH_BURST ?? 90);
const IN_FLIGHT = 24;
const KILL_AFTER = Math.floor(BURST * 0.35);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** One write of the burst and what became of it. */
interface BurstWrite {
  what: string;
  run: () => Promise<{ status: number; body: Json }>;
  /** Whether the hub's state shows the write (for an acknowledged write: must be true). */
  present: () => Promise<boolean>;
  acked?: boolean;
}

const commandOf = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
  } catch {
    return "";
  }
};
const alive = (pid: number): boolean => existsSync(`/proc/${pid}`) && !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));

/** SIGKILLs the hub's whole process tree (start.mjs, wrangler, workerd) and waits until it is gone. */
async function killTree(hub: Hub): Promise<void> {
  const pids = [hub.pid, ...descendants(hub.pid)];
  for (const p of pids) {
    try {
      process.kill(p, "SIGKILL");
    } catch {
      // already gone
    }
  }
  await waitFor("the old hub's processes to be gone", async () => pids.every((p) => !alive(p)), 20_000);
}

/** What the crash left in the hub's state folder: outbox rows in D1, cluster objects with a commit in flight. */
function leftovers(stateDir: string): { outboxRows: number; committingMarkers: number } {
  const files = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith(".sqlite")).map((e) => path.join(e.parentPath, e.name)) : []);
  let outboxRows = 0;
  let committingMarkers = 0;
  for (const file of files(path.join(stateDir, "v3", "d1"))) {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      if (db.prepare("SELECT name FROM sqlite_master WHERE name = 'outbox'").get()) outboxRows += Number((db.prepare("SELECT COUNT(*) AS n FROM outbox").get() as { n: number }).n);
    } finally {
      db.close();
    }
  }
  for (const file of files(path.join(stateDir, "v3", "do")).filter((f) => f.includes("ClusterObject"))) {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      if (db.prepare("SELECT name FROM sqlite_master WHERE name = 'state'").get()) committingMarkers += Number((db.prepare(`SELECT COUNT(*) AS n FROM state WHERE k = 'committing'${db.prepare("SELECT sql FROM sqlite_master WHERE name = 'state'").get()?.sql?.toString().includes("pending") ? " OR pending IS NOT NULL" : ""}`).get() as { n: number }).n);
    } finally {
      db.close();
    }
  }
  return { outboxRows, committingMarkers };
}

describe("kill -9 of workerd during a burst of writes, restart on the same state", () => {
  let hub: Hub;
  const agents: AgentProcess[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-crash-"));

  beforeAll(async () => {
    hub = await startHub();
    const token = await createBootstrapToken(hub, { autoApprove: true });
    for (const c of CLUSTERS) agents.push(startAgent(hub, ["--cluster-name", c, "--bootstrap-token", token, "--simulate-state", path.join(dir, `${c}.json`), "--status-sync-interval", "1"]));
    await waitFor("every cluster Available", async () => {
      const items = (await admin(hub, "GET", MC)).body.items as Json[];
      return items.filter((mc) => CLUSTERS.includes(mc.metadata.name) && cond(mc, "ManagedClusterConditionAvailable")?.status === "True").length === CLUSTERS.length;
    }, 120_000);
    // From here on the agents hold only their own keys: nothing can register with this token.
    expect((await admin(hub, "DELETE", `/apis/flotilla.dev/v1alpha1/bootstraptokens/${token.split(".")[0]}`)).status).toBe(200);
    const binding = { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSetBinding", metadata: { name: "default" }, spec: { clusterSet: "default" } };
    expect((await admin(hub, "POST", `${G}/v1beta2/namespaces/${NS}/managedclustersetbindings`, binding)).status).toBe(201);
    for (let i = 0; i < 3; i++) {
      expect((await admin(hub, "POST", PLACEMENTS, { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name: `base-${i}` }, spec: { numberOfClusters: 1 } })).status).toBe(201);
    }
  }, 180_000);

  afterAll(async () => {
    for (const a of agents) await stopAgent(a);
    await hub?.stop();
  });

  it("finds and finishes every committed write after the restart", async () => {
    const writes: BurstWrite[] = [];
    for (let i = 0; i < BURST; i++) {
      const cluster = CLUSTERS[i % CLUSTERS.length]!;
      const kind = i % 4;
      if (kind === 0) {
        const name = `p-${i}`;
        writes.push({
          what: `create Placement ${name}`,
          run: () => admin(hub, "POST", PLACEMENTS, { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name }, spec: { numberOfClusters: 1 + (i % 3) } }),
          present: async () => (await admin(hub, "GET", `${PLACEMENTS}/${name}`)).status === 200,
        });
      } else if (kind === 1) {
        const name = `w-${i}`;
        const work = { apiVersion: "work.open-cluster-management.io/v1", kind: "ManifestWork", metadata: { name }, spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { i: String(i) } }] } } };
        writes.push({ what: `create ManifestWork ${cluster}/${name}`, run: () => admin(hub, "POST", WORKS(cluster), work), present: async () => (await admin(hub, "GET", `${WORKS(cluster)}/${name}`)).status === 200 });
      } else if (kind === 2) {
        const label = `burst-${i}`;
        writes.push({
          what: `label ManagedCluster ${cluster} ${label}`,
          run: () => admin(hub, "PATCH", `${MC}/${cluster}`, { metadata: { labels: { [label]: "yes" } } }, merge),
          present: async () => (await admin(hub, "GET", `${MC}/${cluster}`)).body?.metadata?.labels?.[label] === "yes",
        });
      } else {
        const placement = `base-${i % 3}`;
        const label = `burst-${i}`;
        writes.push({
          what: `label Placement ${placement} ${label}`,
          run: () => admin(hub, "PATCH", `${PLACEMENTS}/${placement}`, { metadata: { labels: { [label]: "yes" } } }, merge),
          present: async () => (await admin(hub, "GET", `${PLACEMENTS}/${placement}`)).body?.metadata?.labels?.[label] === "yes",
        });
      }
    }

    // The burst, IN_FLIGHT writes at a time; workerd is killed once KILL_AFTER writes were answered.
    let answered = 0;
    let killed: Promise<void> | null = null;
    const killWorkerd = () => {
      const workerd = descendants(hub.pid).filter((p) => /(^|\/)workerd\b/.test(commandOf(p).split(" ")[0] ?? ""));
      expect(workerd.length, "a workerd process below the hub").toBeGreaterThan(0);
      for (const p of workerd) process.kill(p, "SIGKILL");
    };
    let next = 0;
    const burstStarted = Date.now();
    let killedAfterMs = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < writes.length) {
          const w = writes[next++]!;
          try {
            const r = await w.run();
            w.acked = r.status >= 200 && r.status < 300;
            if (!w.acked && !killed) throw new Error(`${w.what} answered ${r.status}: ${JSON.stringify(r.body)}`);
          } catch (e) {
            if (!killed) throw e;
            w.acked = false;
          }
          if (++answered === KILL_AFTER && !killed) {
            killedAfterMs = Date.now() - burstStarted;
            killed = Promise.resolve(killWorkerd());
          }
        }
      }),
    );
    expect(killed).not.toBeNull();
    await killTree(hub);
    const left = leftovers(hub.stateDir);

    const restartedAt = Date.now();
    hub = await startHub({ stateDir: hub.stateDir, port: Number(new URL(hub.url).port) });
    const startedMs = Date.now() - restartedAt;

    // Every acknowledged write is there.
    for (const w of writes.filter((x) => x.acked)) expect(await w.present(), w.what).toBe(true);
    const unacked = writes.filter((w) => !w.acked);
    const committedUnacked: string[] = [];
    for (const w of unacked) if (await w.present()) committedUnacked.push(w.what);

    // Every committed Placement is scheduled: status at its generation, and its decisions.
    await waitFor("every committed Placement scheduled", async () => {
      const items = (await admin(hub, "GET", PLACEMENTS)).body.items as Json[];
      for (const p of items) {
        const satisfied = cond(p, "PlacementSatisfied");
        if (!satisfied || satisfied.observedGeneration !== p.metadata.generation) return false;
        const decided = (await admin(hub, "GET", `${DECISIONS}?labelSelector=${encodeURIComponent(`cluster.open-cluster-management.io/placement=${p.metadata.name}`)}`)).body.items as Json[];
        const clusters = decided.flatMap((d) => (d.status?.decisions ?? []).map((x: Json) => x.clusterName));
        if (clusters.length !== Math.min(p.spec.numberOfClusters, CLUSTERS.length) || p.status.numberOfSelectedClusters !== clusters.length) return false;
      }
      return items.length > 0;
    }, 90_000);

    // Every committed ManifestWork is delivered: its agent applied it and reports it.
    await waitFor("every committed ManifestWork applied by its agent", async () => {
      for (const c of CLUSTERS) {
        const items = (await admin(hub, "GET", WORKS(c))).body.items as Json[];
        if (!items.every((w) => cond(w, "Applied")?.status === "True")) return false;
      }
      return true;
    }, 120_000);

    // Durable Objects and D1 agree: each ManagedCluster served by its object equals its D1 row.
    await waitFor("each cluster object equal to its D1 row", async () => {
      const listed = (await admin(hub, "GET", MC)).body.items as Json[];
      for (const mc of listed) {
        const own = (await admin(hub, "GET", `${MC}/${mc.metadata.name}`)).body;
        if (JSON.stringify(own) !== JSON.stringify(mc)) return false;
      }
      return listed.length === CLUSTERS.length;
    }, 60_000);

    // The agents are back without a bootstrap token: a work created now reaches each of them.
    for (const c of CLUSTERS) {
      const work = { apiVersion: "work.open-cluster-management.io/v1", kind: "ManifestWork", metadata: { name: "after-restart" }, spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "after-restart", namespace: "default" } }] } } };
      expect((await admin(hub, "POST", WORKS(c), work)).status).toBe(201);
    }
    await waitFor("the agents to apply a work created after the restart", async () => {
      for (const c of CLUSTERS) if (cond((await admin(hub, "GET", `${WORKS(c)}/after-restart`)).body, "Applied")?.status !== "True") return false;
      return true;
    }, 120_000);
    for (const a of agents) expect(a.child.exitCode, a.output()).toBeNull();
    const recoveredMs = Date.now() - restartedAt;

    console.log(
      `crash test: ${writes.length} writes, ${IN_FLIGHT} in flight, workerd killed ${killedAfterMs} ms into the burst; ` +
        `${writes.filter((w) => w.acked).length} acknowledged, ${unacked.length} without an answer ` +
        `(${committedUnacked.length} of them committed: ${committedUnacked.join(", ") || "none"}); ` +
        `the crash left ${left.outboxRows} outbox rows and ${left.committingMarkers} cluster objects with a commit in flight; ` +
        `the hub answered ${startedMs} ms after the restart began, and all was finished and checked after ${recoveredMs} ms`,
    );
  }, 600_000);
});
