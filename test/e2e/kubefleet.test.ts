/**
 * KubeFleet's ClusterResourcePlacement end to end: real kubectl against a real hub (`wrangler
 * dev`) with three simulated member clusters run by real agent processes. The objects of a
 * namespace are applied to the hub, a PickN 2 placement puts them on exactly two clusters, the
 * agents apply them and report, the placement says Applied and Available; a change of one object
 * rolls out under maxUnavailable; deleting the placement removes the works. (Until the hub stores
 * Deployments, the demo places a Namespace, a Secret and a Role.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, startHub, type Hub } from "../../scripts/hub-process.ts";
import { joinMembers, kubectlWith, scratchDir, stopAll, waitFor, writeAdminKubeconfig, type AgentProcess } from "./support.ts";

const { dir, file } = scratchDir("flotilla-kubefleet-");
const CRP = "/apis/placement.kubernetes-fleet.io/v1/clusterresourceplacements";
const WORKS = "/apis/work.open-cluster-management.io/v1/manifestworks";

let hub: Hub;
let kubeconfig: string;
const agents: AgentProcess[] = [];
const { kubectl } = kubectlWith(() => kubeconfig, dir);

beforeAll(async () => {
  // HTTPS with the hub's local CA, as kubectl.test.ts: kubectl sends no bearer token to a plain-HTTP server.
  hub = await startHub({ https: true, graceMultiplier: 2 });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
  const members = [
    ["member-1", "prod"],
    ["member-2", "prod"],
    ["member-3", "dev"],
  ].map(([name, env]) => ({ name: name!, labels: { env: env! } }));
  await joinMembers(hub, members, { stateDir: dir, agents });
});

afterAll(() => stopAll(agents, hub));

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const crp = async (): Promise<any> => (await admin(hub, "GET", `${CRP}/demo`)).body;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const cond = (o: any, type: string) => (o?.status?.conditions ?? []).find((c: { type: string }) => c.type === type);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const works = async (): Promise<any[]> =>
  (await admin(hub, "GET", `${WORKS}?labelSelector=${encodeURIComponent("kubernetes-fleet.io/parent-CRP=demo")}`)).body.items;

describe("a ClusterResourcePlacement with kubectl, wrangler dev and agents", () => {
  it("places a namespace's objects on 2 of 3 clusters, reports Available, rolls a change out, removes them", async () => {
    const app = file(
      "app.yaml",
      [
        "apiVersion: v1",
        "kind: Namespace",
        "metadata: {name: demo}",
        "---",
        "apiVersion: v1",
        "kind: Secret",
        "metadata: {name: settings, namespace: demo}",
        "stringData: {mode: blue}",
        "---",
        "apiVersion: rbac.authorization.k8s.io/v1",
        "kind: Role",
        "metadata: {name: reader, namespace: demo}",
        "rules: [{apiGroups: [''], resources: [secrets], verbs: [get]}]",
        "",
      ].join("\n"),
    );
    expect(await kubectl("apply", "-f", app)).toContain("namespace/demo created");
    const placement = file(
      "crp.yaml",
      [
        "apiVersion: placement.kubernetes-fleet.io/v1",
        "kind: ClusterResourcePlacement",
        "metadata: {name: demo}",
        "spec:",
        "  resourceSelectors: [{group: '', version: v1, kind: Namespace, name: demo}]",
        "  policy:",
        "    placementType: PickN",
        "    numberOfClusters: 2",
        "    affinity:",
        "      clusterAffinity:",
        "        preferredDuringSchedulingIgnoredDuringExecution:",
        "        - weight: 20",
        "          preference: {labelSelector: {matchLabels: {env: prod}}}",
        "  strategy:",
        "    rollingUpdate: {maxUnavailable: 1, unavailablePeriodSeconds: 1}",
        "",
      ].join("\n"),
    );
    expect(await kubectl("apply", "-f", placement)).toContain("clusterresourceplacement.placement.kubernetes-fleet.io/demo created");

    expect((await works()).map((w) => w.metadata.namespace).sort()).toEqual(["member-1", "member-2"]);
    await waitFor("the placement Available", async () => cond(await crp(), "ClusterResourcePlacementAvailable")?.status === "True", 30_000);
    const c = await crp();
    expect(cond(c, "ClusterResourcePlacementApplied")).toMatchObject({ status: "True", reason: "ApplySucceeded" });
    expect(c.status.placementStatuses.map((s: { clusterName: string }) => s.clusterName)).toEqual(["member-1", "member-2"]);
    const table = await kubectl("get", "crp", "demo");
    expect(table).toMatch(/^NAME\s+GEN\s+SCHEDULED\s+SCHEDULED-GEN\s+AVAILABLE\s+AVAILABLE-GEN\s+AGE/);
    expect(table).toMatch(/\ndemo\s+1\s+True\s+1\s+True\s+1\s/);

    // Edit one object on the hub: a new resource snapshot, rolled out to both clusters in turn.
    expect(await kubectl("patch", "secret", "settings", "-n", "demo", "--type", "merge", "-p", '{"stringData":{"mode":"green"}}')).toContain("patched");
    await waitFor(
      "the change rolled out",
      async () => {
        const p = await crp();
        const ws = await works();
        return (
          p.status?.observedResourceIndex === "1" &&
          ws.length === 2 &&
          ws.every((w) => w.metadata.labels["kubernetes-fleet.io/parent-resource-snapshot-index"] === "1") &&
          cond(p, "ClusterResourcePlacementAvailable")?.status === "True"
        );
      },
      60_000,
    );
    expect(await kubectl("get", "clusterresourcesnapshots", "-l", "kubernetes-fleet.io/parent-CRP=demo", "-o", "name")).toContain("demo-1-snapshot");

    expect(await kubectl("delete", "crp", "demo")).toContain("deleted");
    await waitFor("the works gone", async () => (await works()).length === 0, 30_000);
    expect((await admin(hub, "GET", `${CRP}/demo`)).status).toBe(404);
  });
});
