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
 * - a work status report in flight on a channel at the kill neither lost nor applied twice: one
 *   agent (`HOLDER`, whose namespace the burst leaves alone) holds a report sent on its connection
 *   and not acknowledged when workerd is killed (see `holdReportInFlight`); after the restart it
 *   sends it again on its new connection (its log names it), and the work ends Applied at its
 *   new generation, the agent having applied that generation once and kept reporting (no 404 or
 *   409 answer); no agent applies a work twice at one generation.
 * It prints what the crash left behind (writes without an answer, outbox rows, cluster objects
 * with a commit in flight) and how long the hub took to finish it. Every wait has a deadline.
 */
import { readdirSync, readFileSync, readlinkSync, existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { descendants } from "../../scripts/proc.mjs";
import { cond, MC, merge, startAgent, stopAgent, waitFor, WORKS, type AgentProcess } from "../e2e/support.ts";

const G = "/apis/cluster.open-cluster-management.io";
const NS = "crash";
const PLACEMENTS = `${G}/v1beta1/namespaces/${NS}/placements`;
const DECISIONS = `${G}/v1beta1/namespaces/${NS}/placementdecisions`;
const CLUSTERS = ["k1", "k2", "k3"];
/** Writes in the burst, how many are in flight at once, and how many answers come before the kill. */
const BURST = Number(process.env.CRASH_BURST ?? 90);
const IN_FLIGHT = 24;
const KILL_AFTER = Math.floor(BURST * 0.35);
/** The agent that holds a report in flight at the kill; the burst creates works in the others' namespaces only. */
const HOLDER = "k1";
const WORK_CLUSTERS = CLUSTERS.filter((c) => c !== HOLDER);
/** The holder's work updated at the kill. */
const HELD = "in-flight";
const heldWork = (data: Record<string, string>) => ({
  apiVersion: "work.open-cluster-management.io/v1",
  kind: "ManifestWork",
  metadata: { name: HELD },
  spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: HELD, namespace: "default" }, data }] } },
});
/**
 * Fewest bytes of a `works` push or a `report` frame (either carries a ManifestWork's name, uid,
 * and its ConfigMap or its condition): more than a ping, a pong or a close frame (under 130).
 */
const MESSAGE_BYTES = 200;
const CONNECTED_WS = /connected to the hub over WebSocket/;
const RESENT = /sending again (\d+) request\(s\) left without an answer by the previous connection .*requests="([^"]*)"/;
const APPLIED = /(?:applying work|work changed; applying it) work=(\S+) generation=(\d+)/;
/** The agent's log lines from offset `from` on. */
const linesOf = (a: AgentProcess, from = 0): string[] => a.output().slice(from).split("\n");

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
 * The unread bytes of process `pid`'s TCP connections to the hub on `hubPort`, from the kernel's
 * receive queues (/proc/net/tcp and tcp6): `agent`, what the hub sent that the agent has not
 * read; `hub`, what the agent sent that the hub (its listening workerd) has not read.
 */
function unread(pid: number, hubPort: number): { agent: number; hub: number } {
  const rows = ["/proc/net/tcp", "/proc/net/tcp6"]
    .filter((f) => existsSync(f))
    .flatMap((f) => readFileSync(f, "utf8").split("\n").slice(1))
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length > 9)
    .map((f) => ({
      local: parseInt(f[1]!.split(":").at(-1)!, 16),
      remote: parseInt(f[2]!.split(":").at(-1)!, 16),
      rx: parseInt(f[4]!.split(":")[1]!, 16),
      inode: f[9]!,
    }));
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
  const files = (dir: string): string[] =>
    existsSync(dir)
      ? readdirSync(dir, { recursive: true, withFileTypes: true })
          .filter((e) => e.isFile() && e.name.endsWith(".sqlite"))
          .map((e) => path.join(e.parentPath, e.name))
      : [];
  let outboxRows = 0;
  let committingMarkers = 0;
  for (const file of files(path.join(stateDir, "v3", "d1"))) {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      if (db.prepare("SELECT name FROM sqlite_master WHERE name = 'outbox'").get())
        outboxRows += Number((db.prepare("SELECT COUNT(*) AS n FROM outbox").get() as { n: number }).n);
    } finally {
      db.close();
    }
  }
  for (const file of files(path.join(stateDir, "v3", "do")).filter((f) => f.includes("ClusterObject"))) {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      if (db.prepare("SELECT name FROM sqlite_master WHERE name = 'state'").get())
        committingMarkers += Number(
          (
            db
              .prepare(
                `SELECT COUNT(*) AS n FROM state WHERE k = 'committing'${db.prepare("SELECT sql FROM sqlite_master WHERE name = 'state'").get()?.sql?.toString().includes("pending") ? " OR pending IS NOT NULL" : ""}`,
              )
              .get() as { n: number }
          ).n,
        );
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
    for (const c of CLUSTERS)
      agents.push(
        startAgent(hub, ["--cluster-name", c, "--bootstrap-token", token, "--simulate-state", path.join(dir, `${c}.json`), "--status-sync-interval", "1"]),
      );
    await waitFor(
      "every cluster Available",
      async () => {
        const items = (await admin(hub, "GET", MC)).body.items as Json[];
        return (
          items.filter((mc) => CLUSTERS.includes(mc.metadata.name) && cond(mc, "ManagedClusterConditionAvailable")?.status === "True").length ===
          CLUSTERS.length
        );
      },
      120_000,
    );
    // From here on the agents hold only their own keys: nothing can register with this token.
    expect((await admin(hub, "DELETE", `/apis/flotilla.dev/v1alpha1/bootstraptokens/${token.split(".")[0]}`)).status).toBe(200);
    await createNamespaces(hub, NS);
    const binding = {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "default" },
      spec: { clusterSet: "default" },
    };
    expect((await admin(hub, "POST", `${G}/v1beta2/namespaces/${NS}/managedclustersetbindings`, binding)).status).toBe(201);
    for (let i = 0; i < 3; i++) {
      expect(
        (
          await admin(hub, "POST", PLACEMENTS, {
            apiVersion: "cluster.open-cluster-management.io/v1beta1",
            kind: "Placement",
            metadata: { name: `base-${i}` },
            spec: { numberOfClusters: 1 },
          })
        ).status,
      ).toBe(201);
    }
    // The holder's work, applied before the burst: its update at the kill is a change to report.
    expect((await admin(hub, "POST", WORKS(HOLDER), heldWork({ at: "start" }))).status).toBe(201);
    await waitFor(
      "the holder's work applied",
      async () => cond((await admin(hub, "GET", `${WORKS(HOLDER)}/${HELD}`)).body, "Applied")?.status === "True",
      120_000,
    );
  }, 180_000);

  afterAll(async () => {
    for (const a of agents) await stopAgent(a);
    await hub?.stop();
  });

  it("finds and finishes every committed write after the restart", async () => {
    const writes: BurstWrite[] = [];
    for (let i = 0; i < BURST; i++) {
      const cluster = CLUSTERS[i % CLUSTERS.length]!;
      const workCluster = WORK_CLUSTERS[i % WORK_CLUSTERS.length]!;
      const kind = i % 4;
      if (kind === 0) {
        const name = `p-${i}`;
        writes.push({
          what: `create Placement ${name}`,
          run: () =>
            admin(hub, "POST", PLACEMENTS, {
              apiVersion: "cluster.open-cluster-management.io/v1beta1",
              kind: "Placement",
              metadata: { name },
              spec: { numberOfClusters: 1 + (i % 3) },
            }),
          present: async () => (await admin(hub, "GET", `${PLACEMENTS}/${name}`)).status === 200,
        });
      } else if (kind === 1) {
        const name = `w-${i}`;
        const work = {
          apiVersion: "work.open-cluster-management.io/v1",
          kind: "ManifestWork",
          metadata: { name },
          spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { i: String(i) } }] } },
        };
        writes.push({
          what: `create ManifestWork ${workCluster}/${name}`,
          run: () => admin(hub, "POST", WORKS(workCluster), work),
          present: async () => (await admin(hub, "GET", `${WORKS(workCluster)}/${name}`)).status === 200,
        });
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

    // The burst, IN_FLIGHT writes at a time. Once KILL_AFTER writes were answered, workerd is
    // stopped and killed with writes in flight and with the holder's report in flight on its channel.
    const hubPort = Number(new URL(hub.url).port);
    const holder = agents[CLUSTERS.indexOf(HOLDER)]!;
    const holderPid = holder.child.pid!;
    let answered = 0;
    let killed: Promise<void> | null = null;
    const signalWorkerd = (signal: NodeJS.Signals) => {
      const workerd = descendants(hub.pid).filter((p) => /(^|\/)workerd\b/.test(commandOf(p).split(" ")[0] ?? ""));
      expect(workerd.length, "a workerd process below the hub").toBeGreaterThan(0);
      for (const p of workerd) process.kill(p, signal);
    };
    // While the update is prepared the burst holds back its next writes (those already sent go
    // on); they go again once the update is pushed, and workerd is stopped once a few of them
    // were answered, so writes are in flight (some committed) at the kill.
    let gate: Promise<void> = Promise.resolve();
    let heldGeneration = 0;
    const holdReportInFlight = async () => {
      let open!: () => void;
      gate = new Promise<void>((r) => (open = r));
      // Stopped, the holder cannot read the update the hub pushes: it waits in its socket. The
      // burst writes nothing the holder's channel carries (no work in its namespace), so what
      // arrives there now is the push (a pong or a lease message is far smaller).
      holder.child.kill("SIGSTOP");
      try {
        const before = unread(holderPid, hubPort).agent;
        const patched = await admin(hub, "PATCH", `${WORKS(HOLDER)}/${HELD}`, { spec: heldWork({ at: "kill" }).spec }, merge);
        expect(patched.status, JSON.stringify(patched.body)).toBe(200);
        heldGeneration = patched.body.metadata.generation as number;
        expect(heldGeneration).toBeGreaterThan(1);
        await waitFor("the update pushed to the stopped holder", async () => unread(holderPid, hubPort).agent >= before + MESSAGE_BYTES, 60_000, 20);
        const resumedAt = answered;
        open();
        await waitFor("more of the burst answered", async () => answered >= resumedAt + IN_FLIGHT / 4, 60_000, 5);
        signalWorkerd("SIGSTOP");
      } finally {
        open();
        holder.child.kill("SIGCONT");
      }
      // The holder reads the update, applies it and sends its report on the same connection; the
      // stopped workerd cannot read it (it waits in the hub's socket), nor acknowledge it. Then
      // workerd is killed.
      try {
        await waitFor(
          "the holder's report of the update sent and not read by the hub",
          async () =>
            linesOf(holder).some((l) => APPLIED.exec(l)?.slice(1, 3).join("@") === `${HELD}@${heldGeneration}`) &&
            unread(holderPid, hubPort).hub >= MESSAGE_BYTES,
          60_000,
          20,
        );
      } finally {
        killedAfterMs = Date.now() - burstStarted;
        signalWorkerd("SIGKILL");
      }
    };
    const connectedBefore = agents.map((a) => linesOf(a).filter((l) => CONNECTED_WS.test(l)).length);
    expect(
      connectedBefore.every((n) => n > 0),
      "every agent on the WebSocket channel before the burst",
    ).toBe(true);
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
          if (++answered === KILL_AFTER && !killed) killed = holdReportInFlight();
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
    await waitFor(
      "every committed Placement scheduled",
      async () => {
        const items = (await admin(hub, "GET", PLACEMENTS)).body.items as Json[];
        for (const p of items) {
          const satisfied = cond(p, "PlacementSatisfied");
          if (!satisfied || satisfied.observedGeneration !== p.metadata.generation) return false;
          const decided = (
            await admin(hub, "GET", `${DECISIONS}?labelSelector=${encodeURIComponent(`cluster.open-cluster-management.io/placement=${p.metadata.name}`)}`)
          ).body.items as Json[];
          const clusters = decided.flatMap((d) => (d.status?.decisions ?? []).map((x: Json) => x.clusterName));
          if (clusters.length !== Math.min(p.spec.numberOfClusters, CLUSTERS.length) || p.status.numberOfSelectedClusters !== clusters.length) return false;
        }
        return items.length > 0;
      },
      90_000,
    );

    // Every committed ManifestWork is delivered: its agent applied it and reports it at its
    // generation (the holder's work: the report in flight at the kill, sent again, not lost).
    await waitFor(
      "every committed ManifestWork applied by its agent at its generation",
      async () => {
        for (const c of CLUSTERS) {
          const items = (await admin(hub, "GET", WORKS(c))).body.items as Json[];
          if (!items.every((w) => cond(w, "Applied")?.status === "True" && cond(w, "Applied")?.observedGeneration === w.metadata.generation)) return false;
        }
        return true;
      },
      120_000,
    );
    const held = (await admin(hub, "GET", `${WORKS(HOLDER)}/${HELD}`)).body;
    expect(held.metadata.generation).toBe(heldGeneration);
    expect((held.status.conditions as Json[]).filter((c) => c.type === "Applied")).toHaveLength(1);

    // Each agent dialled its channel again by itself (not a poll agent from here on).
    await waitFor(
      "every agent connected again over WebSocket",
      async () => agents.every((a, k) => linesOf(a).filter((l) => CONNECTED_WS.test(l)).length > connectedBefore[k]!),
      120_000,
    );
    // The holder's report went again on its new connection, and its log names it; the hub took it
    // (no 404 or 409: the agent would stop reporting the work).
    const holderLog = linesOf(holder, logFrom[CLUSTERS.indexOf(HOLDER)]);
    const resent = holderLog.flatMap((l) => RESENT.exec(l)?.[2]?.split(", ") ?? []);
    expect(resent, `the holder's log since the burst:\n${holderLog.join("\n")}`).toContain(`report ${HELD}`);
    expect(linesOf(holder).filter((l) => /no more status reports/.test(l))).toEqual([]);

    // Durable Objects and D1 agree: each ManagedCluster served by its object equals its D1 row.
    await waitFor(
      "each cluster object equal to its D1 row",
      async () => {
        const listed = (await admin(hub, "GET", MC)).body.items as Json[];
        for (const mc of listed) {
          const own = (await admin(hub, "GET", `${MC}/${mc.metadata.name}`)).body;
          if (JSON.stringify(own) !== JSON.stringify(mc)) return false;
        }
        return listed.length === CLUSTERS.length;
      },
      60_000,
    );

    // The agents are back without a bootstrap token: a work created now reaches each of them.
    for (const c of CLUSTERS) {
      const work = {
        apiVersion: "work.open-cluster-management.io/v1",
        kind: "ManifestWork",
        metadata: { name: "after-restart" },
        spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "after-restart", namespace: "default" } }] } },
      };
      expect((await admin(hub, "POST", WORKS(c), work)).status).toBe(201);
    }
    await waitFor(
      "the agents to apply a work created after the restart",
      async () => {
        for (const c of CLUSTERS) if (cond((await admin(hub, "GET", `${WORKS(c)}/after-restart`)).body, "Applied")?.status !== "True") return false;
        return true;
      },
      120_000,
    );
    for (const a of agents) expect(a.child.exitCode, a.output()).toBeNull();
    // No work applied twice at one generation: the reconnects deliver the works again, and the
    // unchanged ones are not applied as changed (the agent logs each spec it applies).
    for (const a of agents) {
      const applied = linesOf(a).flatMap((l) => APPLIED.exec(l)?.slice(1, 3).join("@") ?? []);
      expect(
        applied.filter((x, k) => applied.indexOf(x) !== k),
        "works applied twice at one generation",
      ).toEqual([]);
      expect(applied.length).toBeGreaterThan(0);
    }
    expect(linesOf(holder).filter((l) => APPLIED.exec(l)?.[1] === HELD).length, "the held work applied at its first and its new generation").toBe(2);
    const recoveredMs = Date.now() - restartedAt;

    console.log(
      `crash test: ${writes.length} writes, ${IN_FLIGHT} in flight, workerd killed ${killedAfterMs} ms into the burst; ` +
        `${writes.filter((w) => w.acked).length} acknowledged, ${unacked.length} without an answer ` +
        `(${committedUnacked.length} of them committed: ${committedUnacked.join(", ") || "none"}); ` +
        `the holder's report in flight at the kill sent again after the restart (${resent.join("; ")}); ` +
        `the crash left ${left.outboxRows} outbox rows and ${left.committingMarkers} cluster objects with a commit in flight; ` +
        `the hub answered ${startedMs} ms after the restart began, and all was finished and checked after ${recoveredMs} ms`,
    );
  }, 600_000);
});

/**
 * kill -9 of workerd while a placement's evictions are being decided (issue 44, docs/kubefleet.md
 * "Evictions, budgets, drain"), restart on the same state. A PickN placement on two of three
 * clusters (budget minAvailable 1), both of its clusters cordoned, and an eviction for each created
 * at once, workerd killed as soon as both creates are answered. After the restart every eviction
 * is decided (none left pending: the after-commit hook's outbox row wakes the evictions again),
 * each executed one's cluster has lost the placement's work and binding and runs none of its
 * objects, each refused one's cluster keeps them, and the placement ends on two clusters (re-filled
 * on the third): no cluster evicted twice or left half-evicted.
 */
describe("kill -9 of workerd during a placement's evictions, restart on the same state", () => {
  let hub: Hub;
  const agents: AgentProcess[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-crash-evict-"));
  const members = ["v1", "v2", "v3"];
  const F = "/apis/placement.kubernetes-fleet.io/v1beta1";
  const works = async (): Promise<string[]> =>
    (
      (
        await admin(
          hub,
          "GET",
          `/apis/work.open-cluster-management.io/v1/manifestworks?labelSelector=${encodeURIComponent("kubernetes-fleet.io/parent-CRP=evc")}`,
        )
      ).body.items as Json[]
    )
      .filter((w) => !w.metadata.deletionTimestamp)
      .map((w) => w.metadata.namespace as string)
      .sort();
  const runs = (cluster: string): boolean => {
    try {
      const state = JSON.parse(readFileSync(path.join(dir, `${cluster}.json`), "utf8")) as Json;
      return (state.objects as Json[]).some((o) => o.plural === "configmaps" && o.object.metadata.namespace === "evc");
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    hub = await startHub();
    const token = await createBootstrapToken(hub, { autoApprove: true });
    for (const c of members) agents.push(startAgent(hub, ["--cluster-name", c, "--bootstrap-token", token, "--simulate-state", path.join(dir, `${c}.json`)]));
    await waitFor(
      "every cluster Available",
      async () =>
        ((await admin(hub, "GET", MC)).body.items as Json[]).filter((mc) => cond(mc, "ManagedClusterConditionAvailable")?.status === "True").length ===
        members.length,
      120_000,
    );
    await createNamespaces(hub, "evc");
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" }, data: { v: "1" } };
    expect((await admin(hub, "POST", "/api/v1/namespaces/evc/configmaps", cm)).status).toBe(201);
    const crp = {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "evc" },
      spec: { resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "evc" }], policy: { placementType: "PickN", numberOfClusters: 2 } },
    };
    expect((await admin(hub, "POST", "/apis/placement.kubernetes-fleet.io/v1/clusterresourceplacements", crp)).status).toBe(201);
    const budget = {
      apiVersion: `placement.kubernetes-fleet.io/v1beta1`,
      kind: "ClusterResourcePlacementDisruptionBudget",
      metadata: { name: "evc" },
      spec: { minAvailable: 1 },
    };
    expect((await admin(hub, "POST", `${F}/clusterresourceplacementdisruptionbudgets`, budget)).status).toBe(201);
    await waitFor(
      "the placement on two clusters, Available",
      async () => {
        const items = (await admin(hub, "GET", `${F}/clusterresourcebindings`)).body.items as Json[];
        return items.length === 2 && items.every((b) => cond(b, "Available")?.status === "True");
      },
      120_000,
    );
  }, 180_000);

  afterAll(async () => {
    for (const a of agents) await stopAgent(a);
    await hub?.stop();
  });

  it("decides every eviction once, and each cluster is evicted wholly or not at all", async () => {
    const placed = await works();
    expect(placed).toHaveLength(2);
    const spare = members.find((m) => !placed.includes(m))!;
    for (const c of placed)
      expect(
        (await admin(hub, "PATCH", `${MC}/${c}`, { spec: { taints: [{ key: "cordon-key", value: "cordon-value", effect: "NoSelect" }] } }, merge)).status,
      ).toBe(200);
    const created = await Promise.all(
      placed.map((c) =>
        admin(hub, "POST", `${F}/clusterresourceplacementevictions`, {
          apiVersion: "placement.kubernetes-fleet.io/v1beta1",
          kind: "ClusterResourcePlacementEviction",
          metadata: { name: `evict-${c}` },
          spec: { placementName: "evc", clusterName: c },
        }),
      ),
    );
    for (const r of created) expect(r.status).toBe(201);
    await killTree(hub);
    hub = await startHub({ stateDir: hub.stateDir, port: Number(new URL(hub.url).port) });

    const decided = async (): Promise<Json[]> => {
      const items = (await admin(hub, "GET", `${F}/clusterresourceplacementevictions`)).body.items as Json[];
      return items.filter((e) => cond(e, "Executed") !== undefined || cond(e, "Valid")?.status === "False");
    };
    await waitFor("both evictions decided", async () => (await decided()).length === 2, 120_000);
    const evictions = await decided();
    for (const e of evictions) expect(cond(e, "Valid")?.status, JSON.stringify(e.status)).toBe("True");
    const executed = evictions.filter((e) => cond(e, "Executed")?.status === "True").map((e) => e.spec.clusterName as string);
    const refused = evictions.filter((e) => cond(e, "Executed")?.status === "False").map((e) => e.spec.clusterName as string);
    expect(executed.length).toBeGreaterThanOrEqual(1);
    console.log(`crash test (evictions): decided: executed on ${executed.join(", ")}; refused on ${refused.join(", ") || "none"}; spare ${spare}`);
    // The placement ends on two clusters: the refused ones and the spare it re-filled on.
    await waitFor("the placement re-filled", async () => (await works()).join() === [...refused, spare].sort().join() && (await works()).length === 2, 120_000);
    const bindings = ((await admin(hub, "GET", `${F}/clusterresourcebindings`)).body.items as Json[]).map((b) => b.spec.targetCluster as string).sort();
    expect(bindings).toEqual([...refused, spare].sort());
    await waitFor("the evicted clusters no longer run the placement's objects", async () => executed.every((c) => !runs(c)) && runs(spare), 120_000);
    for (const c of refused) expect(runs(c)).toBe(true);
    console.log(`crash test (evictions): executed on ${executed.join(", ")}; refused on ${refused.join(", ") || "none"}; re-filled on ${spare}`);
  }, 600_000);
});
