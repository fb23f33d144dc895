/**
 * Staged update run benchmark (`npm run bench:updaterun`): a real hub (`wrangler dev`, workerd,
 * local D1) and N channel agents (bench/channel-fleet.ts, hub-only as bench/propagation.ts's:
 * each reports Applied, Available and Progressing=False at a work's generation as soon as it
 * arrives, applying nothing). An External ClusterResourcePlacement over every cluster, a
 * ClusterStagedUpdateStrategy of 5 stages (a fifth of the clusters each, by label, maxConcurrency
 * 100%, an after-stage Approval on each but the last), a first run to put snapshot 0 everywhere,
 * then the measured run of snapshot 1; the bench approves each stage as soon as its approval
 * request appears (a merge patch of its status, as `kubectl patch --subresource=status` does).
 *
 * Prints per stage:
 * - rollout: its clusters' reports of the new generation, first to last acknowledged (ms);
 * - done after last: from its last cluster's acknowledged report to the stage's approval request
 *   (the run saw the stage complete), ms;
 * - approval to next stage: from the approval's write being answered to the next stage's first
 *   cluster receiving its work (ms; the last stage has none).
 * The issue's must-hold: each stage done within its rollout time + 2 s; approvals take effect
 * within 1 s. Figures are wall-clock on a shared 2-core machine: read the load printed beside.
 * The bench polls the run (every 50 ms) to see the approval requests, which costs the hub a little.
 *
 *   BENCH_SIZES    fleet sizes, comma-separated (default "100"); each size gets a fresh hub
 *   BENCH_STAGES   stages (default 5)
 */
import { readFileSync } from "node:fs";
import { admin, createBootstrapToken, createNamespaces, startHub, type Hub } from "../scripts/hub-process.ts";
import { ChannelFleet, entryUrl, hubProcesses, type AgentTimes } from "./channel-fleet.ts";
import { printTable } from "./table.ts";

const SIZES = (process.env.BENCH_SIZES ?? "100")
  .split(",")
  .map((s) => Number(s.trim()))
  .filter((n) => n > 0);
const STAGES = Number(process.env.BENCH_STAGES ?? 5);
const F = "/apis/placement.kubernetes-fleet.io/v1";
const MC = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
const MERGE = "application/merge-patch+json";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const epochNow = () => performance.timeOrigin + performance.now();
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]!;

function ok(r: { status: number; body: unknown }, what: string): void {
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
}

/** Runs `f` over `items`, `n` at a time. */
async function pool<T>(items: T[], n: number, f: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await f(items[next++]!);
    }),
  );
}

const stageOf = (i: number) => `s${i % STAGES}`;

/** The placement, the strategies and the selected namespace. */
async function setUp(hub: Hub, size: number): Promise<void> {
  await createNamespaces(hub, "bench-app");
  ok(
    await admin(hub, "POST", "/api/v1/namespaces/bench-app/configmaps", {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "cfg", namespace: "bench-app" },
      data: { v: "0" },
    }),
    "configmap",
  );
  ok(
    await admin(hub, "POST", `${F}/clusterresourceplacements`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "app" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "bench-app" }],
        policy: { placementType: "PickAll" },
        strategy: { type: "External" },
      },
    }),
    "placement",
  );
  const stages = Array.from({ length: STAGES }, (_, k) => ({
    name: `s${k}`,
    labelSelector: { matchLabels: { stage: `s${k}` } },
    maxConcurrency: "100%",
    ...(k < STAGES - 1 ? { afterStageTasks: [{ type: "Approval" }] } : {}),
  }));
  ok(
    await admin(hub, "POST", `${F}/clusterstagedupdatestrategies`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterStagedUpdateStrategy",
      metadata: { name: "staged" },
      spec: { stages },
    }),
    "strategy",
  );
  ok(
    await admin(hub, "POST", `${F}/clusterstagedupdatestrategies`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterStagedUpdateStrategy",
      metadata: { name: "all" },
      spec: { stages: [{ name: "all", maxConcurrency: "100%" }] },
    }),
    "strategy all",
  );
  const deadline = Date.now() + 600_000;
  while (((await admin(hub, "GET", `${F}/clusterresourcebindings`)).body.items as unknown[]).length < size) {
    if (Date.now() > deadline) throw new Error("the bindings did not appear");
    await new Promise((r) => setTimeout(r, 500));
  }
}

const run = (name: string, strategy: string) => ({
  apiVersion: "placement.kubernetes-fleet.io/v1",
  kind: "ClusterStagedUpdateRun",
  metadata: { name },
  spec: { placementName: "app", stagedRolloutStrategyName: strategy, state: "Run" },
});

async function measure(size: number): Promise<string[][]> {
  const names = Array.from({ length: size }, (_, i) => `ur-${String(i).padStart(5, "0")}`);
  const fleet = await ChannelFleet.start(names);
  const hub = await startHub({ graceMultiplier: 100 });
  try {
    const token = await createBootstrapToken(hub, { autoApprove: true });
    await fleet.register(hub.url, token);
    await pool(names, 16, async (n) =>
      ok(await admin(hub, "PATCH", `${MC}/${n}`, { metadata: { labels: { stage: stageOf(names.indexOf(n)) } } }, MERGE), `label ${n}`),
    );
    const procs = hubProcesses(hub.pid, hub.url);
    await fleet.connect(await entryUrl(procs.worker));
    await setUp(hub, size);
    ok(await admin(hub, "POST", `${F}/clusterstagedupdateruns`, run("first", "all")), "first run");
    await fleet.reported(1);
    console.log(`fleet of ${size}: snapshot 0 everywhere`);

    ok(await admin(hub, "PATCH", "/api/v1/namespaces/bench-app/configmaps/cfg", { data: { v: "1" } }, MERGE), "update");
    const snapDeadline = Date.now() + 120_000;
    while ((await admin(hub, "GET", `${F}/clusterresourcesnapshots/app-1-snapshot`)).status !== 200) {
      if (Date.now() > snapDeadline) throw new Error("snapshot 1 did not appear");
      await new Promise((r) => setTimeout(r, 100));
    }
    const requested: number[] = [];
    const approved: number[] = [];
    let stop = false;
    // Approves each stage's request as soon as it appears.
    const approver = (async () => {
      let k = 0;
      while (!stop && k < STAGES - 1) {
        const r = await admin(hub, "GET", `${F}/clusterapprovalrequests/measured-after-s${k}`);
        if (r.status === 200) {
          requested[k] = epochNow();
          const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
          const cond = {
            type: "Approved",
            status: "True",
            reason: "bench",
            message: "bench",
            lastTransitionTime: now,
            observedGeneration: r.body.metadata.generation ?? 1,
          };
          ok(await admin(hub, "PATCH", `${F}/clusterapprovalrequests/measured-after-s${k}/status`, { status: { conditions: [cond] } }, MERGE), "approve");
          approved[k] = epochNow();
          k++;
          continue;
        }
        await new Promise((res) => setTimeout(res, 50));
      }
    })();
    const t0 = epochNow();
    ok(await admin(hub, "POST", `${F}/clusterstagedupdateruns`, run("measured", "staged")), "measured run");
    let times: AgentTimes[];
    try {
      times = await fleet.reported(2);
    } finally {
      stop = true;
      await approver;
    }
    const doneDeadline = Date.now() + 120_000;
    let ended = NaN;
    for (;;) {
      const r = (await admin(hub, "GET", `${F}/clusterstagedupdateruns/measured`)).body;
      if ((r.status?.conditions ?? []).some((c: Json) => c.type === "Succeeded" && c.status === "True")) {
        ended = epochNow();
        break;
      }
      if (Date.now() > doneDeadline) throw new Error("the run did not succeed");
      await new Promise((res) => setTimeout(res, 50));
    }
    const rows: string[][] = [];
    for (let k = 0; k < STAGES; k++) {
      const mine = times.filter((_, i) => i % STAGES === k);
      const first = Math.min(...mine.map((t) => t.done));
      const last = Math.max(...mine.map((t) => t.done));
      const firstWoken = Math.min(...mine.map((t) => t.woken));
      const doneAt = k < STAGES - 1 ? requested[k]! : ended;
      const nextWoken = k < STAGES - 1 ? Math.min(...times.filter((_, i) => i % STAGES === k + 1).map((t) => t.woken)) : NaN;
      rows.push([
        String(size),
        `s${k} (${mine.length})`,
        (firstWoken - (k === 0 ? t0 : approved[k - 1]!)).toFixed(0),
        (last - first).toFixed(0),
        (doneAt - last).toFixed(0),
        k < STAGES - 1 ? (nextWoken - approved[k]!).toFixed(0) : "-",
      ]);
    }
    console.log(`fleet of ${size}: the run took ${((ended - t0) / 1000).toFixed(1)} s (load ${loadAverage()})`);
    return rows;
  } finally {
    await fleet.disconnect().catch(() => undefined);
    await fleet.stop().catch(() => undefined);
    await hub.stop();
  }
}

const rows: string[][] = [];
for (const size of SIZES) rows.push(...(await measure(size)));
printTable(
  `Staged update run, ${STAGES} stages (an approval after each but the last)`,
  ["clusters", "stage", "start (ms)", "rollout first→last (ms)", "done after last (ms)", "approval → next stage (ms)"],
  rows,
);
console.log(
  "start: from the run's creation (stage 0) or the previous stage's approval to the stage's first work delivered; done after last: the stage's last report to its approval request (the last stage: to the run's Succeeded); a bound of (rollout + 2000) on done-after-last and of 1000 on approval → next stage is the issue's must-hold",
);
