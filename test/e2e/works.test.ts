/**
 * Works reach clusters, end to end: a real hub (`wrangler dev`), three real agent processes, each
 * on its own simulated member cluster (started here, so the test reads what the agents applied
 * through @kubernetes/client-node), a Placement and a ManifestWorkReplicaSet holding a Namespace,
 * a Deployment, a Service and a ConfigMap. It checks, in order: the objects appear on the decided
 * clusters only, with Deployment feedback (WellKnownStatus and a JSONPath rule) in the works'
 * status; a Progressive rollout with maxConcurrency 1 updates one cluster at a time; a signed
 * webhook sets a new image that reaches every decided cluster; a tainted cluster loses its work
 * and the objects there; a deleted cluster leaves clean; Orphan leaves the objects behind.
 */
import { createHmac, randomUUID } from "node:crypto";
import { AppsV1Api, CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, createNamespaces, hubFetch, startHub, type Hub } from "../../scripts/hub-process.ts";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { bindClusterSet, accept, waitAvailable, cond, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess, WORKS } from "./support.ts";

const G = "/apis/cluster.open-cluster-management.io";
const MWRS = "/apis/work.open-cluster-management.io/v1alpha1/namespaces/apps/manifestworkreplicasets";
const MWRS_LABEL = "work.open-cluster-management.io/manifestworkreplicaset";
const CLUSTERS = ["c1", "c2", "c3"];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** The workload the replica set carries: a namespace, a Deployment, a Service and a ConfigMap. */
function manifests(image: string): Json[] {
  return [
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: "web" },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "web" } },
        template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image }] } },
      },
    },
    { apiVersion: "v1", kind: "Service", metadata: { name: "web", namespace: "web" }, spec: { selector: { app: "web" }, ports: [{ port: 80 }] } },
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "web", namespace: "web" }, data: { greeting: "hello" } },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "web" } },
  ];
}

const feedback = [
  {
    resourceIdentifier: { group: "apps", resource: "deployments", name: "web", namespace: "web" },
    feedbackRules: [{ type: "WellKnownStatus" }, { type: "JSONPaths", jsonPaths: [{ name: "image", path: ".spec.template.spec.containers[0].image" }] }],
  },
];

describe("works reach clusters (wrangler dev + 3 agent processes on simulated clusters)", () => {
  let hub: Hub;
  const sims = new Map<string, SimulatedCluster>();
  const agents = new Map<string, AgentProcess>();
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-works-"));

  const apps = (c: string) => {
    const kc = new KubeConfig();
    kc.loadFromString(sims.get(c)!.kubeconfigYaml);
    return kc.makeApiClient(AppsV1Api);
  };
  const core = (c: string) => {
    const kc = new KubeConfig();
    kc.loadFromString(sims.get(c)!.kubeconfigYaml);
    return kc.makeApiClient(CoreV1Api);
  };
  /** The Deployment's image on a member cluster, or null when it is not there. */
  const imageOn = async (c: string): Promise<string | null> => {
    try {
      const d = await apps(c).readNamespacedDeployment({ name: "web", namespace: "web" });
      return d.spec?.template.spec?.containers[0]?.image ?? null;
    } catch {
      return null;
    }
  };
  const configMapOn = async (c: string): Promise<boolean> => {
    try {
      await core(c).readNamespacedConfigMap({ name: "web", namespace: "web" });
      return true;
    } catch {
      return false;
    }
  };
  const decisions = async (): Promise<string[]> => {
    const r = await admin(
      hub,
      "GET",
      `${G}/v1beta1/namespaces/apps/placementdecisions?labelSelector=${encodeURIComponent("cluster.open-cluster-management.io/placement=web")}`,
    );
    return r.body.items.flatMap((d: Json) => d.status.decisions.map((x: Json) => x.clusterName)).sort();
  };
  /** The replica set's work in a cluster's namespace, or undefined. */
  const workOf = async (c: string): Promise<Json | undefined> => {
    const r = await admin(hub, "GET", `${WORKS(c)}?labelSelector=${encodeURIComponent(`${MWRS_LABEL}=apps.web`)}`);
    return r.body.items?.[0];
  };
  const workImage = (w: Json): string | undefined =>
    w?.spec?.workload?.manifests?.find((m: Json) => m.kind === "Deployment")?.spec.template.spec.containers[0].image;
  /** Applied, Available and done progressing, all at the work's current generation. */
  const workDone = (w: Json): boolean => {
    const current = (t: string, s: string) => cond(w, t)?.status === s && cond(w, t)?.observedGeneration === w.metadata.generation;
    return current("Applied", "True") && current("Available", "True") && current("Progressing", "False");
  };
  const setTaint = async (c: string, taints: Json[]) => expect((await admin(hub, "PATCH", `${MC}/${c}`, { spec: { taints } }, merge)).status).toBe(200);

  const startAgentOn = (c: string, token: string): AgentProcess =>
    startAgent(hub, ["--cluster-name", c, "--bootstrap-token", token, "--kubeconfig", sims.get(c)!.kubeconfigPath, "--status-sync-interval", "1"], false);

  beforeAll(async () => {
    hub = await startHub();
    const token = await createBootstrapToken(hub);
    for (const c of CLUSTERS) {
      sims.set(c, await startSimulatedCluster({ statePath: path.join(dir, `${c}.json`) }));
      agents.set(c, startAgentOn(c, token));
    }
    // A 1 s lease: the agents' poll transport learns of a works change at its next heartbeat.
    await Promise.all(CLUSTERS.map((c) => accept(hub, { name: c, labels: { tier: "web" }, spec: { leaseDurationSeconds: 1 } })));
    await waitAvailable(hub, 3, `${MC}?labelSelector=tier%3Dweb`);
  }, 120_000);

  afterAll(async () => {
    for (const a of agents.values()) await stopAgent(a);
    for (const s of sims.values()) await s.close();
    await hub?.stop();
  });

  it("applies, feeds back, rolls out, takes webhooks, moves off taints, leaves clean and orphans", async () => {
    // --- A placement of two clusters and a replica set: objects on the decided clusters only.
    await createNamespaces(hub, "apps");
    await bindClusterSet(hub, "apps", "default");
    const placement = {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "web" },
      spec: { numberOfClusters: 2, predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { tier: "web" } } } }] },
    };
    expect((await admin(hub, "POST", `${G}/v1beta1/namespaces/apps/placements`, placement)).status).toBe(201);
    const decided = await waitFor("two decisions", async () => {
      const d = await decisions();
      return d.length === 2 && d;
    });
    const [other] = CLUSTERS.filter((c) => !decided.includes(c));
    const mwrs = {
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name: "web" },
      spec: {
        placementRefs: [{ name: "web", rolloutStrategy: { type: "All" } }],
        manifestWorkTemplate: { workload: { manifests: manifests("nginx:1.25") }, manifestConfigs: feedback },
      },
    };
    expect((await admin(hub, "POST", MWRS, mwrs)).status).toBe(201);
    for (const c of decided) {
      await waitFor(`the Deployment on ${c}`, async () => (await imageOn(c)) === "nginx:1.25");
      expect(await configMapOn(c)).toBe(true);
      expect((await core(c).readNamespacedService({ name: "web", namespace: "web" })).spec?.ports?.[0]?.port).toBe(80);
    }
    expect(await imageOn(other!)).toBeNull();
    expect(await configMapOn(other!)).toBe(false);
    // Traceability: on a member cluster, `kubectl get deploy -l <placement label>` finds what the placement put there.
    for (const c of decided) {
      const list = await apps(c).listDeploymentForAllNamespaces({ labelSelector: "work.open-cluster-management.io/placementname=web" });
      expect(list.items.map((d) => [d.metadata?.namespace, d.metadata?.name])).toEqual([["web", "web"]]);
      expect(list.items[0]!.metadata?.labels).toMatchObject({ [MWRS_LABEL]: "apps.web", "work.flotilla.dev/manifestwork": (await workOf(c)).metadata.name });
      expect(list.items[0]!.metadata?.annotations?.["work.flotilla.dev/manifestwork"]).toBe(`${c}/${(await workOf(c)).metadata.name}`);
    }

    // --- Status feedback: WellKnownStatus and the JSONPath rule, in every decided cluster's work.
    for (const c of decided) {
      const values = await waitFor(`feedback from ${c}`, async () => {
        const w = await workOf(c);
        const deployment = w?.status?.resourceStatus?.manifests?.find((m: Json) => m.resourceMeta.kind === "Deployment");
        const v = deployment?.statusFeedback?.values as Json[] | undefined;
        return v?.some((x) => x.name === "ReadyReplicas") && v?.some((x) => x.name === "image") && v;
      });
      expect(values).toContainEqual({ name: "ReadyReplicas", fieldValue: { type: "Integer", integer: 2 } });
      expect(values).toContainEqual({ name: "Replicas", fieldValue: { type: "Integer", integer: 2 } });
      expect(values).toContainEqual({ name: "image", fieldValue: { type: "String", string: "nginx:1.25" } });
    }
    await waitFor("both works done", async () => (await Promise.all(decided.map(workOf))).every(workDone));

    // --- A template change rolls out Progressive, maxConcurrency 1: never two clusters in flight.
    const progressive = {
      spec: {
        placementRefs: [{ name: "web", rolloutStrategy: { type: "Progressive", progressive: { maxConcurrency: 1 } } }],
        manifestWorkTemplate: { workload: { manifests: manifests("nginx:1.26") }, manifestConfigs: feedback },
      },
    };
    expect((await admin(hub, "PATCH", `${MWRS}/web`, progressive, merge)).status).toBe(200);
    const order: string[] = [];
    await waitFor(
      "the rollout to finish",
      async () => {
        const works = await Promise.all(decided.map(async (c) => ({ c, w: await workOf(c) })));
        const inFlight = works.filter(({ w }) => workImage(w) === "nginx:1.26" && !workDone(w));
        expect(inFlight.length).toBeLessThanOrEqual(1);
        for (const { c, w } of works) if (workImage(w) === "nginx:1.26" && !order.includes(c)) order.push(c);
        return works.every(({ w }) => workImage(w) === "nginx:1.26" && workDone(w));
      },
      90_000,
    );
    expect(order).toEqual([...decided].sort());
    for (const c of decided) expect(await imageOn(c)).toBe("nginx:1.26");

    // --- A signed webhook sets the image from its payload; it reaches every decided cluster.
    const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "hook" }, stringData: { token: "s3cret" } };
    expect((await admin(hub, "POST", "/api/v1/namespaces/apps/secrets", secret)).status).toBe(201);
    const receiver = {
      apiVersion: "flotilla.dev/v1alpha1",
      kind: "WebhookReceiver",
      metadata: { name: "release" },
      spec: {
        type: "generic",
        secretRef: { name: "hook" },
        target: { apiVersion: "work.open-cluster-management.io/v1alpha1", kind: "ManifestWorkReplicaSet", name: "web" },
        action: {
          type: "JSONPatch",
          patch: [
            { op: "replace", path: "/spec/manifestWorkTemplate/workload/manifests/0/spec/template/spec/containers/0/image", value: "nginx:{{ .release.tag }}" },
          ],
        },
      },
    };
    const created = await admin(hub, "POST", "/apis/flotilla.dev/v1alpha1/namespaces/apps/webhookreceivers", receiver);
    expect(created.status).toBe(201);
    const hookPath = await waitFor(
      "the webhook path",
      async () =>
        (await admin(hub, "GET", "/apis/flotilla.dev/v1alpha1/namespaces/apps/webhookreceivers/release")).body.status?.webhookPath as string | undefined,
    );
    const payload = JSON.stringify({ release: { tag: "1.27" } });
    const sign = (body: string) => `sha256=${createHmac("sha256", "s3cret").update(body).digest("hex")}`;
    const forged = await hubFetch(
      hub,
      "POST",
      hookPath,
      { "content-type": "application/json", "x-signature-256": sign("{}"), "x-delivery-id": randomUUID() },
      payload,
    );
    expect(forged.status).toBe(401);
    const delivery = randomUUID();
    const hook = await hubFetch(
      hub,
      "POST",
      hookPath,
      { "content-type": "application/json", "x-signature-256": sign(payload), "x-delivery-id": delivery },
      payload,
    );
    expect(hook.status).toBe(200);
    const replay = await hubFetch(
      hub,
      "POST",
      hookPath,
      { "content-type": "application/json", "x-signature-256": sign(payload), "x-delivery-id": delivery },
      payload,
    );
    expect(replay.status).toBe(409);
    for (const c of decided) await waitFor(`nginx:1.27 on ${c}`, async () => (await imageOn(c)) === "nginx:1.27", 90_000);

    // --- A NoSelect taint moves the work away: its objects are deleted there and appear on the third cluster.
    const [tainted, kept] = decided as [string, string];
    await setTaint(tainted, [{ key: "example.com/maintenance", effect: "NoSelect" }]);
    await waitFor(`decisions without ${tainted}`, async () => JSON.stringify(await decisions()) === JSON.stringify([kept, other!].sort()));
    await waitFor(`the objects gone from ${tainted}`, async () => (await imageOn(tainted)) === null && !(await configMapOn(tainted)));
    await waitFor(`the objects on ${other}`, async () => (await imageOn(other!)) === "nginx:1.27");

    // --- A deleted cluster leaves clean: the agent removes what works applied, then the hub forgets it.
    expect((await admin(hub, "DELETE", `${MC}/${kept}`)).status).toBe(200);
    await waitFor(`${kept} to be gone from the hub`, async () => (await admin(hub, "GET", `${MC}/${kept}`)).status === 404, 90_000);
    expect(await imageOn(kept)).toBeNull();
    expect(await configMapOn(kept)).toBe(false);
    expect((await admin(hub, "GET", WORKS(kept))).body.items).toEqual([]);
    expect(await agents.get(kept)!.exited).toBe(0);

    // --- Orphan: with deleteOption Orphan, a cluster that leaves the decisions keeps the objects.
    const orphan = {
      spec: {
        manifestWorkTemplate: { deleteOption: { propagationPolicy: "Orphan" }, workload: { manifests: manifests("nginx:1.27") }, manifestConfigs: feedback },
      },
    };
    expect((await admin(hub, "PATCH", `${MWRS}/web`, orphan, merge)).status).toBe(200);
    await waitFor(
      `${other}'s work to carry Orphan and be done`,
      async () => {
        const w = await workOf(other!);
        return w?.spec?.deleteOption?.propagationPolicy === "Orphan" && workDone(w);
      },
      90_000,
    );
    await setTaint(tainted, []);
    const otherAgent = agents.get(other!)!;
    const mark = otherAgent.output().length;
    await setTaint(other!, [{ key: "example.com/maintenance", effect: "NoSelect" }]);
    await waitFor(`decisions to be ${tainted} only`, async () => JSON.stringify(await decisions()) === JSON.stringify([tainted]));
    await waitFor(`${other}'s work to be deleted`, async () => (await workOf(other!)) === undefined);
    await waitFor(`the objects back on ${tainted}`, async () => (await imageOn(tainted)) === "nginx:1.27");
    // The agent on `other` has seen its work go (its log says what it let go of, agent/src/work/
    // controller.ts `logRelease`: waited for, not slept on); the orphaned objects stay.
    const released = await waitFor(
      `${other}'s agent to release its work`,
      async () => /work \S+ deleted on the hub: deleted \d+, orphaned \d+/.exec(otherAgent.output().slice(mark)) ?? undefined,
    );
    expect(released[0]).toMatch(/deleted 0, orphaned [1-9]/);
    expect(await imageOn(other!)).toBe("nginx:1.27");
    expect(await configMapOn(other!)).toBe(true);
  }, 600_000);
});
