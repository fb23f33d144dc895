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
 * - the agents back, without a bootstrap token (the token is deleted before the crash), each
 *   having dialled its WebSocket channel again by itself;
 * - the work status reports in flight on the channels at the kill not lost: the burst creates and
 *   updates ManifestWorks, and workerd is killed while an agent's report is sent and not
 *   acknowledged (seen in the kernel's socket queues, see `killWithReportInFlight`); the agents
 *   send the unanswered ones again on their next connection (their log says how many), and every
 *   work ends Applied=True at its latest generation (observedGeneration), with no work applied
 *   twice at one generation (the agent's log lines of each spec it applies).
 * It prints what the crash left behind (writes without an answer, outbox rows, cluster objects
 * with a commit in flight) and how long the hub took to finish it. Every wait has a deadline.
 */
import { readdirSync, readFileSync, readlinkSync, existsSync, mkdtempSync } from "node:fs";
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
/** The burst's write slots that update a ManifestWork created before it (bumping its generation). */
const isUpdate = (i: number) => i % 4 === 1 && Math.floor(i / 4) % 2 === 1;
const workOf = (i: number, data: Record<string, string>) => ({ apiVersion: "work.open-cluster-management.io/v1", kind: "ManifestWork", metadata: { name: `w-${i}` }, spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `w-${i}`, namespace: "default" }, data }] } } });
/** How many of the agent's log lines from offset `from` on match `re`. */
const lines = (a: AgentProcess, re: RegExp, from = 0): number => a.output().slice(from).split("\n").filter((l) => re.test(l)).length;
const CONNECTED_WS = /connected to the hub over WebSocket/;
const RESENT = /sending again (\d+) request\(s\) left without an answer/;

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

/**
 * The unread bytes of an agent's connections to the hub on `hubPort` (receive queues in
 * /proc/net/tcp): `agent`, what the hub sent that the agent (process `pid`) has not read;
 * `hub`, what the agent sent that the hub has not read. While the agent idles on its channel it
 * makes no HTTP request and pings once a lease (60 s), so these are channel messages: works
 * pushed, and reports or status sent.
 */
function unread(pid: number, hubPort: number): { agent: number; hub: number } {
  const rows = readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length > 9)
    .map((f) => ({ local: parseInt(f[1]!.split(":")[1]!, 16), remote: parseInt(f[2]!.split(":")[1]!, 16), rx: parseInt(f[4]!.split(":")[1]!, 16), inode: f[9]! }));
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const out = { agent: 0, hub: 0 };
  for (const mine of rows.filter((r) => inodes.has(r.inode) && r.remote === hubPort)) {
    out.agent += mine.rx;
    for (const theirs of rows.filter((r) => r.local === hubPort && r.remote === mine.local)) out.hub += theirs.rx;
  }
  return out;
}

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
      if (db.prepare("SELECT name FROM sqlite_master WHERE name = 'state'").get()) committingMarkers += Number((db.prepare("SELECT COUNT(*) AS n FROM state WHERE k = 'committing'").get() as { n: number }).n);
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
    // The works the burst updates, and one per cluster updated at the kill, applied before it starts.
    for (const c of CLUSTERS) expect((await admin(hub, "POST", WORKS(c), { ...workOf(0, { at: "start" }), metadata: { name: "in-flight" } })).status).toBe(201);
    for (let i = 0; i < BURST; i++) if (isUpdate(i)) expect((await admin(hub, "POST", WORKS(CLUSTERS[i % CLUSTERS.length]!), workOf(i, { i: String(i) }))).status).toBe(201);
    await waitFor("the works the burst updates applied", async () => {
      for (const c of CLUSTERS) if (!((await admin(hub, "GET", WORKS(c))).body.items as Json[]).every((w) => cond(w, "Applied")?.status === "True")) return false;
      return true;
    }, 120_000);
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
      } else if (isUpdate(i)) {
        const name = `w-${i}`;
        writes.push({
          what: `update ManifestWork ${cluster}/${name}`,
          run: () => admin(hub, "PATCH", `${WORKS(cluster)}/${name}`, { spec: workOf(i, { i: String(i), updated: "yes" }).spec }, merge),
          present: async () => (await admin(hub, "GET", `${WORKS(cluster)}/${name}`)).body?.spec?.workload?.manifests?.[0]?.data?.updated === "yes",
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

    // The burst, IN_FLIGHT writes at a time; workerd is killed once KILL_AFTER writes were
    // answered, with a work status report in flight on every channel: the agents are stopped
    // (SIGSTOP), a work of each is updated and pushed to it (unread on its socket), workerd is
    // stopped, the agents resume, apply the update and send their reports, which workerd cannot
    // acknowledge (unread on its side); then workerd is killed.
    const hubPort = Number(new URL(hub.url).port);
    let answered = 0;
    let killed: Promise<void> | null = null;
    const signalWorkerd = (signal: NodeJS.Signals) => {
      const pids = descendants(hub.pid).filter((p) => /(^|\/)workerd\b/.test(commandOf(p).split(" ")[0] ?? ""));
      expect(pids.length, "a workerd process below the hub").toBeGreaterThan(0);
      for (const p of pids) process.kill(p, signal);
    };
    const signalAgents = (signal: NodeJS.Signals) => {
      for (const a of agents) a.child.kill(signal);
    };
    // While the update is prepared the burst holds back its next writes; they go once it is
    // pushed, and workerd is stopped after a few of them were answered, so writes are in flight
    // (some committed) at the kill, as before.
    let gate: Promise<void> = Promise.resolve();
    const killWithReportInFlight = async () => {
      let open!: () => void;
      gate = new Promise<void>((r) => (open = r));
      signalAgents("SIGSTOP");
      try {
        // A change each agent must report: the hub answers the update, then pushes it (the
        // bytes unread on the stopped agent's side grow).
        const before = agents.map((a) => unread(a.child.pid!, hubPort).agent);
        for (const c of CLUSTERS) expect((await admin(hub, "PATCH", `${WORKS(c)}/in-flight`, { spec: workOf(0, { at: "kill" }).spec }, merge)).status).toBe(200);
        await waitFor("the update pushed to every stopped agent", async () => agents.every((a, k) => unread(a.child.pid!, hubPort).agent > before[k]!), 30_000, 20);
        const resumedAt = answered;
        open();
        await waitFor("more of the burst answered", async () => answered >= resumedAt + IN_FLIGHT / 4, 30_000, 5);
        signalWorkerd("SIGSTOP");
      } finally {
        open();
        signalAgents("SIGCONT");
      }
      // Each agent applies the update and sends its report, which the stopped workerd cannot
      // acknowledge (it sits unread on the hub's side); then workerd is killed.
      try {
        await waitFor("every agent's report of the update sent and not read by the hub", async () => agents.every((a) => /work changed; applying it work=in-flight /.test(a.output()) && unread(a.child.pid!, hubPort).hub > 0), 30_000, 20);
      } finally {
        killedAfterMs = Date.now() - burstStarted;
        signalWorkerd("SIGKILL");
      }
    };
    const connectedBefore = agents.map((a) => lines(a, CONNECTED_WS));
    expect(connectedBefore.every((n) => n > 0), "every agent on the WebSocket channel before the burst").toBe(true);
    const logFrom = agents.map((a) => a.output().length);
    let next = 0;
    const burstStarted = Date.now();
    let killedAfterMs = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < writes.length) {
          await gate;
          if (next >= writes.length) break;
          const w = writes[next++]!;
          try {
            const r = await w.run();
            w.acked = r.status >= 200 && r.status < 300;
            if (!w.acked && !killed) throw new Error(`${w.what} answered ${r.status}: ${JSON.stringify(r.body)}`);
          } catch (e) {
            if (!killed) throw e;
            w.acked = false;
          }
          if (++answered === KILL_AFTER && !killed) killed = killWithReportInFlight();
        }
      }),
    );
    expect(killed).not.toBeNull();
    await killed;
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

    // Every committed ManifestWork is delivered: its agent applied it and reports it, at its
    // latest generation (the reports in flight at the kill, sent again, are not lost).
    await waitFor("every committed ManifestWork applied by its agent at its generation", async () => {
      for (const c of CLUSTERS) {
        const items = (await admin(hub, "GET", WORKS(c))).body.items as Json[];
        if (!items.every((w) => cond(w, "Applied")?.status === "True" && cond(w, "Applied")?.observedGeneration === w.metadata.generation)) return false;
      }
      return true;
    }, 120_000);

    // Each agent dialled its channel again by itself (not a poll agent from here on).
    await waitFor("every agent connected again over WebSocket", async () => agents.every((a, k) => lines(a, CONNECTED_WS) > connectedBefore[k]!), 120_000);
    const resent = agents.map((a, k) =>
      a
        .output()
        .slice(logFrom[k])
        .split("\n")
        .reduce((n, l) => n + Number(RESENT.exec(l)?.[1] ?? 0), 0),
    );
    // The report in flight at the kill went again on the new connection (its agent's log says so).
    expect(
      Math.min(...resent),
      `requests sent again after the restart; agents' logs since the burst:\n${agents.map((a, k) => a.output().slice(logFrom[k])).join("\n---\n")}`,
    ).toBeGreaterThan(0);

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
    // No work applied again for a spec it already applied: the reconnect re-delivers the works,
    // and the unchanged ones are not applied as changed (the agent logs each spec it applies).
    for (const a of agents) {
      const applied = a
        .output()
        .split("\n")
        .flatMap((l) => /(?:applying work|work changed; applying it) work=(\S+) generation=(\d+)/.exec(l)?.slice(1, 3).join("@") ?? []);
      expect(applied.filter((x, k) => applied.indexOf(x) !== k), "works applied twice at one generation").toEqual([]);
      expect(applied.length).toBeGreaterThan(0);
    }
    const recoveredMs = Date.now() - restartedAt;

    console.log(
      `crash test: ${writes.length} writes, ${IN_FLIGHT} in flight, workerd killed ${killedAfterMs} ms into the burst; ` +
        `${writes.filter((w) => w.acked).length} acknowledged, ${unacked.length} without an answer ` +
        `(${committedUnacked.length} of them committed: ${committedUnacked.join(", ") || "none"}); ` +
        `${resent.reduce((a, b) => a + b, 0)} requests in flight on the channels at the kill sent again (per agent: ${resent.join(", ")}); ` +
        `the crash left ${left.outboxRows} outbox rows and ${left.committingMarkers} cluster objects with a commit in flight; ` +
        `the hub answered ${startedMs} ms after the restart began, and all was finished and checked after ${recoveredMs} ms`,
    );
  }, 600_000);
});
