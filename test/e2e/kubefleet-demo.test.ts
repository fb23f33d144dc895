/**
 * The KubeFleet demo of issue 42, end to end: the README's `kubefleet-demo-crd.yaml` (a
 * CustomResourceDefinition, `widgets.demo.example.com`) and `kubefleet-demo.yaml` (a Namespace
 * with a ConfigMap, a Deployment, a Service and one `Widget`, and a ClusterResourcePlacement PickN
 * 2 of the clusters labelled `fleet=demo` selecting the CRD by a cluster-scoped selector and the
 * namespace) applied with the real kubectl to a real hub (`wrangler dev`, HTTPS) with three
 * simulated member clusters, each run by a real agent process. It checks the member clusters' own
 * API, not only the hub's status:
 *
 * - the objects, the CRD and the custom resource included, are on exactly 2 of the 3 clusters, the
 *   ones the placement reports;
 * - the placement is Applied and Available only once the agents saw the Deployments' replicas
 *   ready (the simulated clusters make them ready {@link READY_DELAY_MS} after a change, as kwok);
 * - an edit of the ConfigMap on the hub rolls out under `maxUnavailable: 1` of 2: replaying the
 *   hub's watch of the works (in resourceVersion order, the order of the commits), at no point is
 *   more than one cluster's work out of date or not yet Available, and the second cluster is
 *   updated only after the first is Available again (KubeFleet's rollout controller,
 *   `pickBindingsToRoll`);
 * - deleting the placement removes the objects from the clusters, the CRD included (the agents
 *   delete what the works applied, as KubeFleet's work applier does; the CRD's deletion takes its
 *   custom resources with it, as kube-apiserver's does).
 */
import { readFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { admin, startHub, type Hub } from "../../scripts/hub-process.ts";
import { joinMembers, type Member, cond, kubectlWith, scratchDir, stopAgent, waitFor, type AgentProcess, writeAdminKubeconfig } from "./support.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const { dir, file } = scratchDir("flotilla-kubefleet-demo-");
const CRP = "/apis/placement.kubernetes-fleet.io/v1/clusterresourceplacements/demo";
const WORKS = "/apis/work.open-cluster-management.io/v1/manifestworks";
const BY_CRP = `labelSelector=${encodeURIComponent("kubernetes-fleet.io/parent-CRP=demo")}`;
const INDEX_LABEL = "kubernetes-fleet.io/parent-resource-snapshot-index";
const CLUSTERS = ["member-1", "member-2", "member-3"];
/** Milliseconds until a simulated cluster's Deployment is ready after a change. */
const READY_DELAY_MS = 1500;
/** The placement's `numberOfClusters` and `maxUnavailable` (in the README's YAML). */
const TARGET = 2;
const MAX_UNAVAILABLE = 1;

/** The README's `<!-- file: <name> -->` block: the demo a reader runs, verbatim. */
function demoYaml(name: string): string {
  const lines = readFileSync(path.join(root, "README.md"), "utf8").split("\n");
  const at = lines.findIndex((l) => l.trim() === `<!-- file: ${name} -->`);
  expect(at, `the README's ${name} block`).toBeGreaterThan(0);
  expect(lines[at + 1]).toBe("```yaml");
  const end = lines.indexOf("```", at + 2);
  return `${lines.slice(at + 2, end).join("\n")}\n`;
}

let hub: Hub;
let kubeconfig: string;
const sims = new Map<string, SimulatedCluster>();
const agents: AgentProcess[] = [];
const { kubectl } = kubectlWith(() => kubeconfig, dir);

/** GET on a member cluster's own API: the status and the object (null when not 200). */
async function member(cluster: string, apiPath: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${sims.get(cluster)!.url}${apiPath}`);
  return { status: res.status, body: res.status === 200 ? await res.json() : null };
}

const CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.demo.example.com";
const WIDGET_PATH = "/apis/demo.example.com/v1/namespaces/demo/widgets/web";
const MEMBER_OBJECTS = [
  CRD_PATH,
  WIDGET_PATH,
  "/api/v1/namespaces/demo",
  "/api/v1/namespaces/demo/configmaps/web-config",
  "/apis/apps/v1/namespaces/demo/deployments/web",
  "/api/v1/namespaces/demo/services/web",
];

/** The clusters holding each of the demo's objects (by their own API). */
async function holders(): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const p of MEMBER_OBJECTS) {
    out[p] = [];
    for (const c of CLUSTERS) if ((await member(c, p)).status === 200) out[p]!.push(c);
  }
  return out;
}

const crp = async (): Promise<Json> => (await admin(hub, "GET", CRP)).body;
const works = async (): Promise<Json[]> => (await admin(hub, "GET", `${WORKS}?${BY_CRP}`)).body.items;

/** A work is ready as KubeFleet's rollout judges a binding: Applied and Available at its generation. */
const workReady = (w: Json) =>
  ["Applied", "Available"].every((t) =>
    (w.status?.conditions ?? []).some((c: Json) => c.type === t && c.status === "True" && c.observedGeneration === w.metadata.generation),
  );

/**
 * Watches the hub's collection at `apiPath` (a query string included) from `resourceVersion`,
 * calling `onEvent` for each event, in the order the hub sends them; `stop()` ends it. A watch the
 * hub ends is resumed from the last resourceVersion seen; an ERROR event, or a tenth connection
 * failure in a row, ends it (`error()` says it).
 */
function watch(
  apiPath: string,
  resourceVersion: string,
  onEvent: (e: { type: string; object: Json }) => void,
): { stop: () => void; error: () => string | null } {
  let stopped = false;
  let error: string | null = null;
  let rv = resourceVersion;
  let failures = 0;
  let current: ReturnType<typeof httpsRequest> | undefined;
  const open = () => {
    if (stopped) return;
    const req = httpsRequest(
      `${hub.url}${apiPath}&watch=true&resourceVersion=${rv}`,
      { headers: { authorization: `Bearer ${hub.adminToken}` }, ca: readFileSync(hub.caFile!) },
      (res) => {
        res.setEncoding("utf8");
        let buf = "";
        res.on("data", (d: string) => {
          buf += d;
          for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
            const line = buf.slice(0, i).trim();
            buf = buf.slice(i + 1);
            if (!line) continue;
            const e = JSON.parse(line) as { type: string; object: Json };
            if (e.type === "ERROR") {
              error ??= `the watch sent ${JSON.stringify(e.object)}`;
              stopped = true;
              continue;
            }
            if (e.object?.metadata?.resourceVersion) rv = e.object.metadata.resourceVersion;
            if (e.type !== "BOOKMARK") onEvent(e);
          }
        });
        res.on("end", open);
      },
    );
    req.on("response", () => {
      failures = 0;
    });
    req.on("error", (e) => {
      if (stopped) return;
      if (++failures >= 10) {
        error ??= `the watch failed to connect 10 times: ${String(e)}`;
        stopped = true;
      } else setImmediate(open);
    });
    req.end();
    current = req;
  };
  open();
  return {
    stop: () => {
      stopped = true;
      current?.destroy();
    },
    error: () => error,
  };
}

beforeAll(async () => {
  hub = await startHub({ https: true, graceMultiplier: 2 });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
  const members: Member[] = [];
  for (const name of CLUSTERS) {
    const sim = await startSimulatedCluster({ statePath: path.join(dir, `${name}.json`), readyDelayMs: READY_DELAY_MS });
    sims.set(name, sim);
    members.push({ name, labels: { fleet: "demo" }, args: ["--kubeconfig", sim.kubeconfigPath], simulate: false });
  }
  await joinMembers(hub, members, { agents });
}, 180_000);

afterAll(async () => {
  for (const a of agents) await stopAgent(a);
  for (const s of sims.values()) await s.close();
  await hub?.stop();
});

describe("the KubeFleet demo: kubectl, wrangler dev, agents on simulated clusters", () => {
  it("places the app on 2 of 3 clusters, Available once ready, rolls an edit out under maxUnavailable, removes it", { timeout: 300_000 }, async () => {
    // 1. The CRD's YAML, then the app's objects and the placement.
    const started = Date.now();
    expect(await kubectl("apply", "-f", file("kubefleet-demo-crd.yaml", demoYaml("kubefleet-demo-crd.yaml")))).toContain(
      "customresourcedefinition.apiextensions.k8s.io/widgets.demo.example.com created",
    );
    expect(await kubectl("wait", "crd/widgets.demo.example.com", "--for=condition=Established")).toContain("condition met");
    const applied = await kubectl("apply", "-f", file("kubefleet-demo.yaml", demoYaml("kubefleet-demo.yaml")));
    for (const line of [
      "namespace/demo created",
      "configmap/web-config created",
      "deployment.apps/web created",
      "service/web created",
      "widget.demo.example.com/web created",
      "clusterresourceplacement.placement.kubernetes-fleet.io/demo created",
    ])
      expect(applied).toContain(line);

    // 2. Applied and Available, from the agents: not before the simulated Deployments are ready.
    const available = await waitFor("the placement Available", async () => {
      const c = await crp();
      return cond(c, "ClusterResourcePlacementAvailable")?.status === "True" && c;
    });
    const availableMs = Date.now() - started;
    expect(availableMs).toBeGreaterThanOrEqual(READY_DELAY_MS);
    expect(cond(available, "ClusterResourcePlacementScheduled")).toMatchObject({ status: "True", reason: "SchedulingPolicyFulfilled" });
    expect(cond(available, "ClusterResourcePlacementApplied")).toMatchObject({ status: "True", reason: "ApplySucceeded" });
    expect(cond(available, "ClusterResourcePlacementAvailable")).toMatchObject({ status: "True", reason: "ResourceAvailable" });
    expect(available.status.selectedResources.map((r: Json) => `${r.kind}/${r.name}`)).toEqual([
      "Namespace/demo",
      "ConfigMap/web-config",
      "CustomResourceDefinition/widgets.demo.example.com",
      "Service/web",
      "Deployment/web",
      "Widget/web",
    ]);
    const picked: string[] = available.status.placementStatuses.map((s: Json) => s.clusterName).sort();
    expect(picked).toHaveLength(TARGET);
    for (const s of available.status.placementStatuses)
      expect(s.conditions.find((c: Json) => c.type === "Available")).toMatchObject({ status: "True", reason: "AllWorkAreAvailable" });

    // 3. On the member clusters themselves: every object on exactly the 2 picked clusters, the
    //    Deployments' replicas ready (what the agents judged availability by).
    const onClusters = await holders();
    for (const p of MEMBER_OBJECTS) expect(onClusters[p], p).toEqual(picked);
    for (const c of picked) {
      const d = (await member(c, "/apis/apps/v1/namespaces/demo/deployments/web")).body;
      expect(d.status).toMatchObject({ replicas: 2, readyReplicas: 2, availableReplicas: 2, observedGeneration: d.metadata.generation });
      expect((await member(c, "/api/v1/namespaces/demo/configmaps/web-config")).body.data).toEqual({ greeting: "hello" });
    }
    const table = await kubectl("get", "crp", "demo");
    expect(table).toMatch(/\ndemo\s+1\s+True\s+1\s+True\s+1\s/);

    // 4. Edit the ConfigMap on the hub; replay the works' watch to check the rollout's order.
    const list = (await admin(hub, "GET", `${WORKS}?${BY_CRP}`)).body;
    const state = new Map<string, Json>(list.items.map((w: Json) => [w.metadata.namespace, w]));
    const readyCount = () => [...state.values()].filter(workReady).length;
    expect(readyCount()).toBe(TARGET);
    let minReady = readyCount();
    // Each cluster's first event with the new snapshot, and its first with that snapshot ready.
    const steps: string[] = [];
    const step = (s: string) => {
      if (!steps.includes(s)) steps.push(s);
    };
    const w = watch(`${WORKS}?${BY_CRP}`, list.metadata.resourceVersion, (e) => {
      const cluster = e.object.metadata.namespace as string;
      if (e.type === "DELETED") state.delete(cluster);
      else state.set(cluster, e.object);
      const after = state.get(cluster);
      if (after && after.metadata.labels?.[INDEX_LABEL] === "1") {
        step(`update ${cluster}`);
        if (workReady(after)) step(`ready ${cluster}`);
      }
      minReady = Math.min(minReady, readyCount());
    });
    const edited = Date.now();
    try {
      expect(await kubectl("patch", "configmap", "web-config", "-n", "demo", "--type", "merge", "-p", '{"data":{"greeting":"hi"}}')).toContain("patched");
      await waitFor("the edit rolled out, as the watch saw it", async () => {
        const c = await crp();
        if (w.error()) throw new Error(w.error()!);
        return (
          c.status?.observedResourceIndex === "1" &&
          cond(c, "ClusterResourcePlacementAvailable")?.status === "True" &&
          steps.filter((s) => s.startsWith("ready ")).length === TARGET
        );
      });
    } finally {
      w.stop();
    }
    console.log(`kubefleet demo: Available ${availableMs} ms after kubectl apply; the edit rolled out in ${Date.now() - edited} ms (${steps.join(", ")})`);
    // KubeFleet's rollout: at most maxUnavailable of the target not ready at once, so the second
    // cluster gets the new snapshot only once the first is ready with it.
    expect(w.error()).toBeNull();
    expect(minReady).toBeGreaterThanOrEqual(TARGET - MAX_UNAVAILABLE);
    expect(steps).toHaveLength(2 * TARGET);
    const [first, second] = [steps[0]!.split(" ")[1]!, steps[2]!.split(" ")[1]!];
    expect(steps).toEqual([`update ${first}`, `ready ${first}`, `update ${second}`, `ready ${second}`]);
    expect([first, second].sort()).toEqual(picked);
    for (const c of picked) expect((await member(c, "/api/v1/namespaces/demo/configmaps/web-config")).body.data).toEqual({ greeting: "hi" });
    expect((await holders())["/api/v1/namespaces/demo"]).toEqual(picked);
    expect(await kubectl("get", "clusterresourcesnapshots", "-l", "kubernetes-fleet.io/parent-CRP=demo", "-o", "name")).toContain("demo-1-snapshot");

    // 5. Deleting the placement removes the objects from the clusters, the CRD included; with the
    //    CRD go its custom resources (listed across namespaces on each cluster's own API).
    expect(await kubectl("delete", "crp", "demo")).toContain("deleted");
    expect((await admin(hub, "GET", CRP)).status).toBe(404);
    await waitFor("the objects gone from the clusters", async () => Object.values(await holders()).every((cs) => cs.length === 0));
    await waitFor("the works gone", async () => (await works()).length === 0);
    for (const c of CLUSTERS) {
      const crds = (await member(c, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")).body.items as Json[];
      expect(
        crds.map((d) => d.metadata.name),
        c,
      ).not.toContain("widgets.demo.example.com");
      expect((await member(c, "/apis/demo.example.com/v1/widgets")).status, c).toBe(404);
    }
    // The hub keeps its templates.
    expect((await admin(hub, "GET", "/apis/apps/v1/namespaces/demo/deployments/web")).status).toBe(200);
    expect((await admin(hub, "GET", CRD_PATH)).status).toBe(200);
    expect((await admin(hub, "GET", WIDGET_PATH)).status).toBe(200);
  });
});
