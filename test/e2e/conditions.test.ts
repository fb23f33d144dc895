/**
 * CEL end to end: a real hub (`wrangler dev`) and two real agent processes on simulated member
 * clusters. A Placement picks the clusters with a `celSelector`; a ManifestWorkReplicaSet rolls a
 * Deployment out Progressive (maxConcurrency 1) with a CEL `conditionRules` entry that keeps the
 * work `Progressing` until the Deployment carries a `Warmed=True` condition, and a JsonRaw
 * feedback rule scraped by `Watch`. The agents' status sync interval is 120 s, so what reaches
 * the hub sooner came from the watch. It checks, in order: the CEL placement decides both
 * clusters; the rollout holds at the first cluster while its rule says Progressing; warming the
 * first cluster's Deployment (a status write on the member cluster) reaches the hub as JsonRaw
 * feedback and a rule-made Progressing=False, and the rollout moves to the second cluster;
 * warming that one completes the rollout.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { DynamicClient } from "../../agent/src/work/dynamic.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { admin, createBootstrapToken, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { cond, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess, WORKS } from "./support.ts";

const G = "/apis/cluster.open-cluster-management.io";
const MWRS = "/apis/work.open-cluster-management.io/v1alpha1/namespaces/batch/manifestworkreplicasets";
const MWRS_LABEL = "work.open-cluster-management.io/manifestworkreplicaset";
const CLUSTERS = ["c1", "c2"];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const gate = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "gate", namespace: "default" },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: "gate" } },
    template: { metadata: { labels: { app: "gate" } }, spec: { containers: [{ name: "gate", image: "nginx" }] } },
  },
};
const manifestConfigs = [
  {
    resourceIdentifier: { group: "apps", resource: "deployments", name: "gate", namespace: "default" },
    feedbackScrapeType: "Watch",
    feedbackRules: [{ type: "JSONPaths", jsonPaths: [{ name: "conditionTypes", path: ".status.conditions[*].type" }] }],
    conditionRules: [
      {
        type: "CEL",
        condition: "Progressing",
        celExpressions: [
          "!(has(object.status) && hasConditions(object.status) && object.status.conditions.exists(c, c.type == 'Warmed' && c.status == 'True'))",
        ],
        messageExpression: 'result ? "warming up" : "warmed"',
      },
    ],
  },
];

describe("CEL placements, condition rules and watched feedback (wrangler dev + 2 agent processes)", () => {
  let hub: Hub;
  const sims = new Map<string, SimulatedCluster>();
  const agents = new Map<string, AgentProcess>();
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-cel-"));

  const workOf = async (c: string): Promise<Json | undefined> => {
    const r = await admin(hub, "GET", `${WORKS(c)}?labelSelector=${encodeURIComponent(`${MWRS_LABEL}=batch.gate`)}`);
    return r.body.items?.[0];
  };
  const progressing = (w: Json) => (w?.status?.conditions ?? []).find((x: Json) => x.type === "Progressing" && x.observedGeneration === w.metadata.generation);
  const feedbackOf = (w: Json) => w?.status?.resourceStatus?.manifests?.[0]?.statusFeedback?.values?.find((v: Json) => v.name === "conditionTypes");
  /** Adds a `Warmed=True` condition to the Deployment's status on a member cluster, as its controller would. */
  const warm = async (c: string) => {
    const dyn = new DynamicClient(kubeConfigFromYaml(sims.get(c)!.kubeconfigYaml));
    const ref = { group: "apps", version: "v1", resource: "deployments", namespace: "default", name: "gate" };
    const cur = (await dyn.get(ref)) as Json;
    const conditions = [...(cur.status?.conditions ?? []), { type: "Warmed", status: "True", reason: "CacheFilled", message: "caches are warm" }];
    await dyn.request("PUT", "/apis/apps/v1/namespaces/default/deployments/gate/status", { body: { ...cur, status: { ...cur.status, conditions } } });
  };

  beforeAll(async () => {
    hub = await startHub();
    const token = await createBootstrapToken(hub);
    for (const c of CLUSTERS) {
      sims.set(c, await startSimulatedCluster({ statePath: path.join(dir, `${c}.json`) }));
      agents.set(
        c,
        startAgent(hub, ["--cluster-name", c, "--bootstrap-token", token, "--kubeconfig", sims.get(c)!.kubeconfigPath, "--status-sync-interval", "120"], false),
      );
    }
    for (const c of CLUSTERS) {
      await waitFor(`${c} to register`, async () => (await admin(hub, "GET", `${MC}/${c}`)).status === 200);
      expect(
        (await admin(hub, "PATCH", `${MC}/${c}`, { metadata: { labels: { tier: "batch" } }, spec: { hubAcceptsClient: true, leaseDurationSeconds: 1 } }, merge))
          .status,
      ).toBe(200);
    }
    await waitFor("both clusters Available with a Kubernetes version", async () => {
      const items = (await admin(hub, "GET", `${MC}?labelSelector=tier%3Dbatch`)).body.items as Json[];
      return items.filter((mc) => cond(mc, "ManagedClusterConditionAvailable")?.status === "True" && mc.status?.version?.kubernetes).length === 2;
    });
  }, 120_000);

  afterAll(async () => {
    for (const a of agents.values()) await stopAgent(a);
    for (const s of sims.values()) await s.close();
    await hub?.stop();
  });

  it("selects by CEL, holds the rollout on a rule-made Progressing, and reports watched JsonRaw feedback", async () => {
    await createNamespaces(hub, "batch");
    const binding = {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "default" },
      spec: { clusterSet: "default" },
    };
    expect((await admin(hub, "POST", `${G}/v1beta2/namespaces/batch/managedclustersetbindings`, binding)).status).toBe(201);

    // --- An expression that does not compile: Misconfigured, as OCM's Predicate plugin reports it.
    const bad = {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "bad" },
      spec: { predicates: [{ requiredClusterSelector: { celSelector: { celExpressions: ["xxxx.expression"] } } }] },
    };
    expect((await admin(hub, "POST", `${G}/v1beta1/namespaces/batch/placements`, bad)).status).toBe(201);
    const misconfigured = await waitFor("the bad placement Misconfigured", async () => {
      const p = (await admin(hub, "GET", `${G}/v1beta1/namespaces/batch/placements/bad`)).body;
      const c = cond(p, "PlacementMisconfigured");
      return c?.status === "True" && c;
    });
    expect(misconfigured.message).toMatch(/^Predicate:compilation failed: ERROR: <input>:1:1: undeclared reference to 'xxxx'/);

    // --- A CEL placement over labels and the reported Kubernetes version.
    const celExpressions = [
      'managedCluster.metadata.labels["tier"] == "batch"',
      'semver(managedCluster.status.version.kubernetes, true).isGreaterThan(semver("1.0.0"))',
    ];
    const placement = {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "gate" },
      spec: { predicates: [{ requiredClusterSelector: { celSelector: { celExpressions } } }] },
    };
    expect((await admin(hub, "POST", `${G}/v1beta1/namespaces/batch/placements`, placement)).status).toBe(201);
    await waitFor("two CEL decisions", async () => {
      const r = await admin(
        hub,
        "GET",
        `${G}/v1beta1/namespaces/batch/placementdecisions?labelSelector=${encodeURIComponent("cluster.open-cluster-management.io/placement=gate")}`,
      );
      const d = (r.body.items as Json[]).flatMap((x) => x.status.decisions.map((y: Json) => y.clusterName)).sort();
      return d.join(",") === "c1,c2";
    });

    // --- The replica set: Progressive, one cluster at a time; c1 first.
    const mwrs = {
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name: "gate" },
      spec: {
        placementRefs: [{ name: "gate", rolloutStrategy: { type: "Progressive", progressive: { maxConcurrency: 1 } } }],
        manifestWorkTemplate: { workload: { manifests: [gate] }, manifestConfigs },
      },
    };
    expect((await admin(hub, "POST", MWRS, mwrs)).status).toBe(201);
    const first = await waitFor("c1's work Progressing by its rule, with feedback", async () => {
      const w = await workOf("c1");
      return progressing(w)?.status === "True" && feedbackOf(w) && w;
    });
    expect(progressing(first)).toMatchObject({ reason: "ConditionRulesAggregated", message: "warming up" });
    expect(first.status.resourceStatus.manifests[0].conditions.find((x: Json) => x.type === "Progressing")).toMatchObject({
      status: "True",
      reason: "ConditionRuleEvaluated",
    });
    // JsonRaw feedback: several matches are one JSON list.
    expect(feedbackOf(first)).toEqual({ name: "conditionTypes", fieldValue: { type: "JsonRaw", jsonRaw: '["Available","Progressing"]' } });
    // While c1 is progressing, c2 gets nothing (maxConcurrency 1).
    expect(await workOf("c2")).toBeUndefined();

    // --- Warm c1: the watch reports it long before the 120 s status sync; the rollout moves on.
    await warm("c1");
    const warmed = await waitFor(
      "c1's warmed status at the hub",
      async () => {
        const w = await workOf("c1");
        return progressing(w)?.status === "False" && w;
      },
      60_000,
    );
    expect(progressing(warmed)?.message).toBe("warmed");
    expect(feedbackOf(warmed)?.fieldValue).toEqual({ type: "JsonRaw", jsonRaw: '["Available","Progressing","Warmed"]' });
    await waitFor("c2's work Progressing by its rule", async () => progressing(await workOf("c2"))?.status === "True");
    const rolling = (await admin(hub, "GET", `${MWRS}/gate`)).body;
    expect(cond(rolling, "PlacementRolledOut")?.status).toBe("False");

    // --- Warm c2: the rollout is complete.
    await warm("c2");
    await waitFor("c2 warmed", async () => progressing(await workOf("c2"))?.status === "False", 60_000);
    await waitFor("the rollout complete", async () => cond((await admin(hub, "GET", `${MWRS}/gate`)).body, "PlacementRolledOut")?.status === "True");
  }, 240_000);
});
