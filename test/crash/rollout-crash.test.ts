/**
 * The crash test, extended to rollouts (`npm run test:crash`): a real hub (`wrangler dev`) with
 * three real agents (`flotilla-agent --simulate`), killed with `kill -9` (its whole process tree)
 * twice and started again on the same state folder and port:
 * - during a KubeFleet staged update run's stage (one cluster at a time; killed as soon as the
 *   first cluster is bound to the new snapshot, the third not started);
 * - during a ManifestWorkReplicaSet's `failureStrategy: AbortAll` abort (killed as soon as the
 *   abort is committed, while its clusters go back to the current revision).
 * After each restart every cluster must end on the right revision (on the simulated cluster
 * itself, its state file), each cluster having applied each generation of its work at most once
 * (the agents log each spec they apply): no cluster skipped, applied twice or left
 * half-rolled-back. Every wait has a deadline.
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { descendants } from "../../scripts/proc.mjs";
import { cond, MC, merge, startAgent, stopAgent, waitFor, WORKS, type AgentProcess } from "../e2e/support.ts";

const CLUSTERS = ["x1", "x2", "x3"];
const F = "/apis/placement.kubernetes-fleet.io/v1";
const MWRS = "/apis/work.open-cluster-management.io/v1alpha1/namespaces/rb/manifestworkreplicasets";
const HASH_LABEL = "work.open-cluster-management.io/controller-hash";
const APPLIED = /(?:applying work|work changed; applying it) work=(\S+) generation=(\d+)/;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

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

describe("kill -9 of the hub during a staged update run's stage and during an AbortAll revert", () => {
  let hub: Hub;
  const agents: AgentProcess[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-rollout-crash-"));
  const get = async (p: string): Promise<Json> => (await admin(hub, "GET", p)).body;
  /** An object a simulated cluster runs (its state file), or undefined. */
  const onCluster = (cluster: string, plural: string, namespace: string, name: string): Json => {
    try {
      const state = JSON.parse(readFileSync(path.join(dir, `${cluster}.json`), "utf8")) as { objects: { group: string; plural: string; object: Json }[] };
      return state.objects.find((o) => o.group === "" && o.plural === plural && o.object.metadata.namespace === namespace && o.object.metadata.name === name)
        ?.object;
    } catch {
      return undefined;
    }
  };
  /** The generations of `work` each agent applied, in order (its log). */
  const applies = (work: string): Record<string, number[]> =>
    Object.fromEntries(
      CLUSTERS.map((c, k) => [
        c,
        agents[k]!.output()
          .split("\n")
          .flatMap((l) => {
            const m = APPLIED.exec(l);
            return m && m[1] === work ? [Number(m[2])] : [];
          }),
      ]),
    );
  const restart = async () => {
    await killTree(hub);
    hub = await startHub({ stateDir: hub.stateDir, port: Number(new URL(hub.url).port), adminToken: hub.adminToken });
  };

  beforeAll(async () => {
    hub = await startHub();
    const token = await createBootstrapToken(hub, { autoApprove: true });
    for (const c of CLUSTERS)
      agents.push(
        startAgent(hub, ["--cluster-name", c, "--bootstrap-token", token, "--simulate-state", path.join(dir, `${c}.json`), "--status-sync-interval", "1"]),
      );
    await waitFor(
      "every cluster Available",
      async () =>
        ((await get(MC)).items as Json[]).filter((mc) => CLUSTERS.includes(mc.metadata.name) && cond(mc, "ManagedClusterConditionAvailable")?.status === "True")
          .length === CLUSTERS.length,
      120_000,
    );
    for (const [k, c] of CLUSTERS.entries())
      expect((await admin(hub, "PATCH", `${MC}/${c}`, { metadata: { labels: { fleet: "crash", order: String(k + 1) } } }, merge)).status).toBe(200);
    await createNamespaces(hub, "app", "rb");
  }, 180_000);

  afterAll(async () => {
    for (const a of agents) await stopAgent(a);
    await hub?.stop();
  });

  it("a staged update run killed mid-stage finishes after the restart: every cluster on the new snapshot, each applied once", async () => {
    const post = async (p: string, body: unknown) => expect((await admin(hub, "POST", p, body)).status, p).toBe(201);
    await post("/api/v1/namespaces/app/secrets", {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "settings", namespace: "app" },
      stringData: { mode: "blue" },
    });
    await post(`${F}/clusterresourceplacements`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "app" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "app" }],
        policy: {
          placementType: "PickAll",
          affinity: {
            clusterAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { fleet: "crash" } } }] },
            },
          },
        },
        strategy: { type: "External" },
      },
    });
    await post(`${F}/clusterstagedupdatestrategies`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterStagedUpdateStrategy",
      metadata: { name: "one-by-one" },
      spec: { stages: [{ name: "all", labelSelector: { matchLabels: { fleet: "crash" } }, sortingLabelKey: "order", maxConcurrency: 1 }] },
    });
    const runBody = (name: string) => ({
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterStagedUpdateRun",
      metadata: { name },
      spec: { placementName: "app", stagedRolloutStrategyName: "one-by-one", state: "Run" },
    });
    const mode = (c: string): string | undefined => {
      const s = onCluster(c, "secrets", "app", "settings");
      return s?.stringData?.mode ?? (s?.data?.mode ? Buffer.from(s.data.mode, "base64").toString() : undefined);
    };
    const indexes = async (): Promise<Record<string, string>> =>
      Object.fromEntries(
        (
          (await get(`/apis/work.open-cluster-management.io/v1/manifestworks?labelSelector=${encodeURIComponent("kubernetes-fleet.io/parent-CRP=app")}`))
            .items as Json[]
        ).map((w) => [w.metadata.namespace, w.metadata.labels["kubernetes-fleet.io/parent-resource-snapshot-index"]]),
      );
    await waitFor("the bindings", async () => ((await get(`${F}/clusterresourcebindings`)).items as unknown[]).length === 3, 60_000);
    await post(`${F}/clusterstagedupdateruns`, runBody("run-1"));
    await waitFor("run-1 succeeded", async () => cond(await get(`${F}/clusterstagedupdateruns/run-1`), "Succeeded")?.status === "True", 120_000);
    for (const c of CLUSTERS) await waitFor(`${c} runs blue`, async () => mode(c) === "blue", 30_000);
    const works = (
      await get(`/apis/work.open-cluster-management.io/v1/manifestworks?labelSelector=${encodeURIComponent("kubernetes-fleet.io/parent-CRP=app")}`)
    ).items as Json[];
    const workName = works[0].metadata.name as string;

    // Snapshot 1, rolled out by run-2 one cluster at a time; x2's agent is paused, so the stage
    // stays open at the kill: x1 updated, x2 bound to snapshot 1 and unfinished, x3 not started.
    expect((await admin(hub, "PATCH", "/api/v1/namespaces/app/secrets/settings", { stringData: { mode: "green" } }, merge)).status).toBe(200);
    await waitFor("snapshot 1", async () => (await admin(hub, "GET", `${F}/clusterresourcesnapshots/app-1-snapshot`)).status === 200, 60_000);
    // Killed as soon as x1 is bound to snapshot 1: x1 updating (or done), x3 not started (one
    // cluster at a time). An agent is not paused for it: a paused agent's own requests to its
    // simulated cluster fail when it runs again, which KubeFleet counts as the cluster's failure.
    await post(`${F}/clusterstagedupdateruns`, runBody("run-2"));
    await waitFor("x1 bound to snapshot 1", async () => (await indexes()).x1 === "1", 60_000, 10);
    const atKill = await indexes();
    await restart();
    expect(atKill.x3).toBe("0");
    try {
      await waitFor(
        "run-2 succeeded after the restart",
        async () => cond(await get(`${F}/clusterstagedupdateruns/run-2`), "Succeeded")?.status === "True",
        180_000,
      );
    } catch (e) {
      const works = (
        (await get(`/apis/work.open-cluster-management.io/v1/manifestworks?labelSelector=${encodeURIComponent("kubernetes-fleet.io/parent-CRP=app")}`))
          .items as Json[]
      ).map((w) => ({ ns: w.metadata.namespace, gen: w.metadata.generation, labels: w.metadata.labels, conditions: w.status?.conditions }));
      const bindings = ((await get(`${F}/clusterresourcebindings`)).items as Json[]).map((b) => ({
        name: b.metadata.name,
        spec: b.spec,
        conditions: b.status?.conditions,
      }));
      console.log(
        `at the kill ${JSON.stringify(atKill)}\nrun-2: ${JSON.stringify((await get(`${F}/clusterstagedupdateruns/run-2`)).status, null, 1)}\nworks: ${JSON.stringify(works, null, 1)}\nbindings: ${JSON.stringify(bindings, null, 1)}\nx2 log: ${agents[1]!.output().slice(-3000)}`,
      );
      throw e;
    }
    expect(await indexes()).toEqual({ x1: "1", x2: "1", x3: "1" });
    for (const c of CLUSTERS) await waitFor(`${c} runs green`, async () => mode(c) === "green", 60_000);
    // Each cluster applied generation 1 (run-1) and generation 2 (run-2) of its work, each once.
    await waitFor(
      "every work applied at its generation",
      async () =>
        (
          await Promise.all(
            CLUSTERS.map(async (c) => {
              const w = await get(`${WORKS(c)}/${workName}`);
              return cond(w, "Applied")?.status === "True" && cond(w, "Applied")?.observedGeneration === w.metadata.generation;
            }),
          )
        ).every(Boolean),
      60_000,
    );
    const counted = applies(workName);
    for (const c of CLUSTERS) expect(counted[c], `${c} applies of ${workName}`).toEqual([1, 2]);
    console.log(
      `rollout crash test: run-2 killed mid-stage at ${JSON.stringify(atKill)}; after the restart every cluster on snapshot 1, applies ${JSON.stringify(counted)}`,
    );
  }, 600_000);

  it("a replica set killed during its AbortAll revert ends with every cluster back on the current revision, each generation applied once", async () => {
    // x1 and x2 have the namespace `extra`; x3 does not, so revision 2 (a ConfigMap there) fails on x3.
    for (const c of ["x1", "x2"]) {
      const w = await admin(hub, "POST", WORKS(c), {
        apiVersion: "work.open-cluster-management.io/v1",
        kind: "ManifestWork",
        metadata: { name: "extra-ns" },
        spec: { workload: { manifests: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "extra" } }] } },
      });
      expect(w.status).toBe(201);
    }
    await waitFor(
      "the extra namespaces",
      async () =>
        ["x1", "x2"].every((c) => onCluster(c, "namespaces", "", "extra") !== undefined) ||
        (await Promise.all(["x1", "x2"].map(async (c) => cond(await get(`${WORKS(c)}/extra-ns`), "Applied")?.status === "True"))).every(Boolean),
      60_000,
    );
    expect(
      (
        await admin(hub, "POST", "/apis/cluster.open-cluster-management.io/v1beta2/namespaces/rb/managedclustersetbindings", {
          apiVersion: "cluster.open-cluster-management.io/v1beta2",
          kind: "ManagedClusterSetBinding",
          metadata: { name: "default" },
          spec: { clusterSet: "default" },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await admin(hub, "POST", "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/rb/placements", {
          apiVersion: "cluster.open-cluster-management.io/v1beta1",
          kind: "Placement",
          metadata: { name: "rb" },
          spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { fleet: "crash" } } } }] },
        })
      ).status,
    ).toBe(201);
    const cm = (v: string, namespace = "default", name = "app") => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace }, data: { v } });
    const template = (manifests: unknown[]) => ({ workload: { manifests } });
    expect(
      (
        await admin(hub, "POST", MWRS, {
          apiVersion: "work.open-cluster-management.io/v1alpha1",
          kind: "ManifestWorkReplicaSet",
          metadata: { name: "web" },
          spec: { placementRefs: [{ name: "rb", rolloutStrategy: { type: "All", failureStrategy: "AbortAll" } }], manifestWorkTemplate: template([cm("1")]) },
        })
      ).status,
    ).toBe(201);
    await waitFor(
      "revision 1 current",
      async () => {
        const m = await get(`${MWRS}/web`);
        return !!m.status?.currentRevision && m.status.currentRevision === m.status.updateRevision;
      },
      120_000,
    );
    const good = (await get(`${MWRS}/web`)).status.currentRevision as string;

    expect((await admin(hub, "PATCH", `${MWRS}/web`, { spec: { manifestWorkTemplate: template([cm("2"), cm("2", "extra", "more")]) } }, merge)).status).toBe(
      200,
    );
    // Killed as soon as the abort is committed: the revert is under way (or about to be).
    await waitFor("the abort committed", async () => !!(await get(`${MWRS}/web`)).status?.abortedTime, 120_000, 10);
    const backAtKill = CLUSTERS.filter((c) => onCluster(c, "configmaps", "default", "app")?.data?.v === "1");
    await restart();

    await waitFor(
      "every work back at the current revision, applied at its generation",
      async () =>
        (
          await Promise.all(
            CLUSTERS.map(async (c) => {
              const w = await get(`${WORKS(c)}/rb.web`);
              return (
                w.metadata.labels[HASH_LABEL] === good &&
                cond(w, "Applied")?.status === "True" &&
                cond(w, "Applied")?.observedGeneration === w.metadata.generation
              );
            }),
          )
        ).every(Boolean),
      180_000,
    );
    for (const c of CLUSTERS) await waitFor(`${c} back at revision 1`, async () => onCluster(c, "configmaps", "default", "app")?.data?.v === "1", 60_000);
    // Nothing of revision 2 is left on a cluster (not half-rolled-back).
    for (const c of ["x1", "x2"])
      await waitFor(`${c} without revision 2's ConfigMap`, async () => onCluster(c, "configmaps", "extra", "more") === undefined, 60_000);
    const m = await get(`${MWRS}/web`);
    expect(m.status.currentRevision).toBe(good);
    expect(m.status.abortedTime).toBeDefined();
    // Each generation of each cluster's work applied at most once, the last one (the revert) once.
    const counted = applies("rb.web");
    for (const c of CLUSTERS) {
      const gens = counted[c]!;
      expect(
        gens.filter((g, k) => gens.indexOf(g) !== k),
        `${c} applied a generation twice: ${gens.join(",")}`,
      ).toEqual([]);
      const w = await get(`${WORKS(c)}/rb.web`);
      expect(gens.at(-1), c).toBe(w.metadata.generation);
    }
    console.log(`rollout crash test: killed at the abort with ${backAtKill.length} of 3 clusters already back; applies of rb.web ${JSON.stringify(counted)}`);
  }, 600_000);
});
