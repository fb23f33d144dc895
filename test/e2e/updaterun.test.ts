/**
 * KubeFleet's staged update runs end to end: real kubectl against a real hub (`wrangler dev`) with
 * four simulated member clusters run by real agent processes. An External placement is rolled out
 * by a ClusterStagedUpdateRun in two stages (canary: 1 cluster, then prod: 3) with an after-stage
 * TimedWait and Approval: the prod stage starts only after `kubectl patch --subresource=status`
 * approves; a second run is stopped mid-stage and stops; a third run with the previous resource
 * snapshot index rolls every cluster back (the objects on the clusters included).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, startHub, type Hub } from "../../scripts/hub-process.ts";
import { joinMembers, kubectlWith, scratchDir, stopAll, waitFor, writeAdminKubeconfig, type AgentProcess } from "./support.ts";

const { dir, file } = scratchDir("flotilla-updaterun-");
const G = "/apis/placement.kubernetes-fleet.io/v1";
const WORKS = "/apis/work.open-cluster-management.io/v1/manifestworks";
const MEMBERS: [string, Record<string, string>][] = [
  ["canary-1", { stage: "canary" }],
  ["prod-1", { stage: "prod", order: "1" }],
  ["prod-2", { stage: "prod", order: "2" }],
  ["prod-3", { stage: "prod", order: "3" }],
];

let hub: Hub;
let kubeconfig: string;
const agents: AgentProcess[] = [];
const { kubectl } = kubectlWith(() => kubeconfig, dir);

beforeAll(async () => {
  hub = await startHub({ https: true, graceMultiplier: 2 });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
  await joinMembers(
    hub,
    MEMBERS.map(([name, labels]) => ({ name, labels: { ...labels, fleet: "runs" } })),
    { stateDir: dir, agents },
  );
}, 120_000);

afterAll(() => stopAll(agents, hub));

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const get = async (p: string): Promise<any> => (await admin(hub, "GET", p)).body;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const cond = (o: any, type: string) => (o?.status?.conditions ?? []).find((c: { type: string }) => c.type === type);
/** The resource snapshot index each cluster's work carries. */
const indexes = async (): Promise<Record<string, string>> =>
  Object.fromEntries(
    (
      (await get(`${WORKS}?labelSelector=${encodeURIComponent("kubernetes-fleet.io/parent-CRP=app")}`)).items as {
        metadata: { namespace: string; labels: Record<string, string> };
      }[]
    ).map((w) => [w.metadata.namespace, w.metadata.labels["kubernetes-fleet.io/parent-resource-snapshot-index"]!]),
  );
/** The Secret `settings` a simulated cluster runs (its state file), or undefined. */
function mode(cluster: string): string | undefined {
  try {
    const state = JSON.parse(readFileSync(path.join(dir, `${cluster}.json`), "utf8")) as {
      objects: { group: string; plural: string; object: { metadata: { name: string }; stringData?: Record<string, string>; data?: Record<string, string> } }[];
    };
    const s = state.objects.find((o) => o.group === "" && o.plural === "secrets" && o.object.metadata.name === "settings")?.object;
    if (!s) return undefined;
    return s.stringData?.mode ?? (s.data?.mode ? Buffer.from(s.data.mode, "base64").toString() : undefined);
  } catch {
    return undefined;
  }
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const stage = (r: any, name: string) => r.status?.stagesStatus?.find((s: { stageName: string }) => s.stageName === name);
const started = (r: unknown, name: string) =>
  (stage(r, name)?.clusters ?? []).filter((c: { conditions?: { type: string; status: string }[] }) =>
    c.conditions?.some((x) => x.type === "Started" && x.status === "True"),
  ).length as number;

const runYaml = (name: string, strategy: string, extra = "") =>
  [
    "apiVersion: placement.kubernetes-fleet.io/v1",
    "kind: ClusterStagedUpdateRun",
    `metadata: {name: ${name}}`,
    "spec:",
    "  placementName: app",
    `  stagedRolloutStrategyName: ${strategy}`,
    "  state: Run",
    ...(extra ? [`  ${extra}`] : []),
    "",
  ].join("\n");

describe("a staged update run with kubectl, wrangler dev and agents", () => {
  it("rolls out canary then prod after a TimedWait and kubectl's approval; stops mid-stage; rolls back", async () => {
    const app = file(
      "app.yaml",
      [
        "apiVersion: v1",
        "kind: Namespace",
        "metadata: {name: app}",
        "---",
        "apiVersion: v1",
        "kind: Secret",
        "metadata: {name: settings, namespace: app}",
        "stringData: {mode: blue}",
        "---",
        "apiVersion: placement.kubernetes-fleet.io/v1",
        "kind: ClusterResourcePlacement",
        "metadata: {name: app}",
        "spec:",
        "  resourceSelectors: [{group: '', version: v1, kind: Namespace, name: app}]",
        "  policy:",
        "    placementType: PickAll",
        "    affinity: {clusterAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {clusterSelectorTerms: [{labelSelector: {matchLabels: {fleet: runs}}}]}}}",
        "  strategy: {type: External}",
        "---",
        "apiVersion: placement.kubernetes-fleet.io/v1",
        "kind: ClusterStagedUpdateStrategy",
        "metadata: {name: two-stages}",
        "spec:",
        "  stages:",
        "  - name: canary",
        "    labelSelector: {matchLabels: {stage: canary}}",
        "    afterStageTasks: [{type: TimedWait, waitTime: 3s}, {type: Approval}]",
        "  - name: prod",
        "    labelSelector: {matchLabels: {stage: prod}}",
        "    sortingLabelKey: order",
        "    maxConcurrency: 1",
        "---",
        "apiVersion: placement.kubernetes-fleet.io/v1",
        "kind: ClusterStagedUpdateStrategy",
        "metadata: {name: all-at-once}",
        "spec:",
        "  stages: [{name: all, maxConcurrency: '100%'}]",
        "",
      ].join("\n"),
    );
    expect(await kubectl("apply", "-f", app)).toContain("clusterresourceplacement.placement.kubernetes-fleet.io/app created");
    // External: scheduled on the four clusters, nothing rolled out until a run.
    await waitFor("the bindings", async () => ((await get(`${G}/clusterresourcebindings`)).items as unknown[]).length === 4);
    expect(await indexes()).toEqual({});

    expect(await kubectl("apply", "-f", file("run1.yaml", runYaml("run-1", "two-stages")))).toContain(
      "clusterstagedupdaterun.placement.kubernetes-fleet.io/run-1 created",
    );
    // The canary first; its stage's after-stage tasks then wait for the TimedWait and the approval.
    await waitFor("the canary updated", async () => mode("canary-1") === "blue", 60_000);
    await waitFor("the approval request", async () => (await admin(hub, "GET", `${G}/clusterapprovalrequests/run-1-after-canary`)).status === 200, 60_000);
    expect(await indexes()).toEqual({ "canary-1": "0" });
    // Past the TimedWait, still waiting for the approval: prod has not started.
    await waitFor(
      "the TimedWait elapsed",
      async () =>
        stage(await get(`${G}/clusterstagedupdateruns/run-1`), "canary")?.afterStageTaskStatus?.[0]?.conditions?.some(
          (c: { type: string }) => c.type === "WaitTimeElapsed",
        ),
      30_000,
    );
    let r = await get(`${G}/clusterstagedupdateruns/run-1`);
    expect(cond(r, "Progressing")).toMatchObject({ status: "False", reason: "UpdateRunWaiting" });
    expect(started(r, "prod")).toBe(0);
    expect(Object.keys(await indexes())).toEqual(["canary-1"]);
    expect(await kubectl("get", "csur", "run-1")).toMatch(
      /^NAME\s+PLACEMENT\s+RESOURCE-SNAPSHOT-INDEX\s+POLICY-SNAPSHOT-INDEX\s+INITIALIZED\s+PROGRESSING\s+SUCCEEDED\s+AGE/,
    );

    // kubectl approves (KubeFleet's docs' command): prod starts, one cluster at a time, and the run succeeds.
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    expect(
      await kubectl(
        "patch",
        "clusterapprovalrequests",
        "run-1-after-canary",
        "--type=merge",
        "--subresource=status",
        "-p",
        JSON.stringify({
          status: { conditions: [{ type: "Approved", status: "True", reason: "lgtm", message: "lgtm", lastTransitionTime: now, observedGeneration: 1 }] },
        }),
      ),
    ).toContain("patched");
    await waitFor("run-1 succeeded", async () => cond(await get(`${G}/clusterstagedupdateruns/run-1`), "Succeeded")?.status === "True", 90_000);
    expect(await indexes()).toEqual({ "canary-1": "0", "prod-1": "0", "prod-2": "0", "prod-3": "0" });
    for (const [c] of MEMBERS) await waitFor(`${c} runs blue`, async () => mode(c) === "blue", 30_000);

    // A change on the hub: snapshot 1, rolled out by a run that is stopped in its prod stage.
    expect(await kubectl("patch", "secret", "settings", "-n", "app", "--type", "merge", "-p", '{"stringData":{"mode":"green"}}')).toContain("patched");
    await waitFor("snapshot 1", async () => (await admin(hub, "GET", `${G}/clusterresourcesnapshots/app-1-snapshot`)).status === 200, 30_000);
    const noWait = file(
      "no-wait.yaml",
      [
        "apiVersion: placement.kubernetes-fleet.io/v1",
        "kind: ClusterStagedUpdateStrategy",
        "metadata: {name: no-wait}",
        "spec:",
        "  stages:",
        "  - {name: canary, labelSelector: {matchLabels: {stage: canary}}}",
        "  - {name: prod, labelSelector: {matchLabels: {stage: prod}}, sortingLabelKey: order, maxConcurrency: 1}",
        "",
      ].join("\n"),
    );
    expect(await kubectl("apply", "-f", noWait)).toContain("created");
    // prod-2's agent is paused (SIGSTOP) while the run reaches it, so the stop lands mid-stage
    // however fast the machine: prod-1 done, prod-2 started and unfinished, prod-3 not started.
    const prod2 = agents[MEMBERS.findIndex(([c]) => c === "prod-2")]!;
    prod2.child.kill("SIGSTOP");
    try {
      expect(await kubectl("apply", "-f", file("run2.yaml", runYaml("run-2", "no-wait")))).toContain("created");
      await waitFor("prod-1 on snapshot 1", async () => (await indexes())["prod-1"] === "1", 60_000);
      await waitFor("prod-2 bound to snapshot 1", async () => (await indexes())["prod-2"] === "1", 60_000);
      expect(await kubectl("patch", "csur", "run-2", "--type", "merge", "-p", '{"spec":{"state":"Stop"}}')).toContain("patched");
    } finally {
      prod2.child.kill("SIGCONT");
    }
    // The stop finishes the cluster that started (prod-2, once its agent runs again) and starts no other.
    await waitFor("run-2 stopped", async () => cond(await get(`${G}/clusterstagedupdateruns/run-2`), "Progressing")?.reason === "UpdateRunStopped", 60_000);
    r = await get(`${G}/clusterstagedupdateruns/run-2`);
    const moved = started(r, "prod");
    expect(moved).toBe(2);
    const stoppedAt = await indexes();
    expect(Object.values(stoppedAt).filter((i) => i === "0").length).toBe(3 - moved);
    // It stays stopped: a later look at it moves nothing.
    await waitFor("the stop is stable", async () => {
      const again = await get(`${G}/clusterstagedupdateruns/run-2`);
      return cond(again, "Progressing")?.reason === "UpdateRunStopped" && started(again, "prod") === moved;
    });
    expect(await indexes()).toEqual(stoppedAt);

    // Rollback: a run with the previous index puts every cluster back on snapshot 0.
    expect(await kubectl("apply", "-f", file("run3.yaml", runYaml("run-3", "all-at-once", "resourceSnapshotIndex: '0'")))).toContain("created");
    await waitFor("run-3 succeeded", async () => cond(await get(`${G}/clusterstagedupdateruns/run-3`), "Succeeded")?.status === "True", 90_000);
    expect(await indexes()).toEqual({ "canary-1": "0", "prod-1": "0", "prod-2": "0", "prod-3": "0" });
    for (const [c] of MEMBERS) await waitFor(`${c} runs blue again`, async () => mode(c) === "blue", 30_000);
  });
});
