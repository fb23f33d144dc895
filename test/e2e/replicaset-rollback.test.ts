/**
 * ManifestWorkReplicaSet rollback end to end (OCM's enhancement "Support Rollback for
 * ManifestWorkReplicaSet"): real kubectl and `flotilla` against a real hub (`wrangler dev`) with
 * three simulated member clusters run by real agent processes. A replica set with
 * `failureStrategy: AbortAll` rolls out a new revision that fails on one cluster (its ConfigMap
 * goes into a namespace only the other two have, so that cluster's API server refuses it and
 * its work reports Applied=False): the hub aborts and reverts the two that took it, on the
 * simulated clusters themselves; `kubectl get controllerrevisions` lists the history and
 * `flotilla replicaset undo` sets the older template back.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { flotilla } from "../cli/support.ts";
import { joinMembers, kubectlWith, scratchDir, stopAll, waitFor, writeAdminKubeconfig, type AgentProcess } from "./support.ts";

const { dir, file } = scratchDir("flotilla-rollback-");
const MEMBERS = ["rb-1", "rb-2", "rb-3"];
const MWRS = "/apis/work.open-cluster-management.io/v1alpha1/namespaces/rb/manifestworkreplicasets";
const WORK = (cluster: string, name: string) => `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks/${name}`;

let hub: Hub;
let kubeconfig: string;
const agents: AgentProcess[] = [];
const { kubectl } = kubectlWith(() => kubeconfig, dir);

beforeAll(async () => {
  hub = await startHub({ https: true, graceMultiplier: 2 });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
  const labels = { fleet: "rb", "cluster.open-cluster-management.io/clusterset": "rb" };
  await joinMembers(
    hub,
    MEMBERS.map((name) => ({ name, labels })),
    { stateDir: dir, agents },
  );
  await createNamespaces(hub, "rb");
}, 120_000);

afterAll(() => stopAll(agents, hub));

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const get = async (p: string): Promise<any> => (await admin(hub, "GET", p)).body;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const cond = (o: any, type: string) => (o?.status?.conditions ?? []).find((c: { type: string }) => c.type === type);

/** The `v` of the ConfigMap `app` in `default` a simulated cluster runs (its state file), or undefined. */
function version(cluster: string): string | undefined {
  try {
    const state = JSON.parse(readFileSync(path.join(dir, `${cluster}.json`), "utf8")) as {
      objects: { group: string; plural: string; object: { metadata: { name: string; namespace?: string }; data?: Record<string, string> } }[];
    };
    return state.objects.find(
      (o) => o.group === "" && o.plural === "configmaps" && o.object.metadata.namespace === "default" && o.object.metadata.name === "app",
    )?.object.data?.v;
  } catch {
    return undefined;
  }
}

const configMap = (v: string, namespace = "default", name = "app") => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace }, data: { v } });

describe("ManifestWorkReplicaSet rollback with kubectl, flotilla, wrangler dev and agents", () => {
  it("AbortAll: a new revision failing on one cluster reverts the others; history and undo", async () => {
    // rb-1 and rb-2 have the namespace `extra` (a ManifestWork of their own); rb-3 does not.
    for (const c of ["rb-1", "rb-2"]) {
      const w = await admin(hub, "POST", `/apis/work.open-cluster-management.io/v1/namespaces/${c}/manifestworks`, {
        apiVersion: "work.open-cluster-management.io/v1",
        kind: "ManifestWork",
        metadata: { name: "extra-ns" },
        spec: { workload: { manifests: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "extra" } }] } },
      });
      expect(w.status).toBe(201);
    }
    await waitFor(
      "the extra namespaces",
      async () => (await Promise.all(["rb-1", "rb-2"].map(async (c) => cond(await get(WORK(c, "extra-ns")), "Applied")?.status === "True"))).every(Boolean),
      30_000,
    );

    const setup = file(
      "rb.yaml",
      [
        "apiVersion: cluster.open-cluster-management.io/v1beta2",
        "kind: ManagedClusterSet",
        "metadata: {name: rb}",
        "---",
        "apiVersion: cluster.open-cluster-management.io/v1beta2",
        "kind: ManagedClusterSetBinding",
        "metadata: {name: rb, namespace: rb}",
        "spec: {clusterSet: rb}",
        "---",
        "apiVersion: cluster.open-cluster-management.io/v1beta1",
        "kind: Placement",
        "metadata: {name: rb, namespace: rb}",
        "spec: {predicates: [{requiredClusterSelector: {labelSelector: {matchLabels: {fleet: rb}}}}]}",
        "",
      ].join("\n"),
    );
    await kubectl("apply", "-f", setup);
    const mwrs = (manifests: unknown[]) =>
      JSON.stringify({
        apiVersion: "work.open-cluster-management.io/v1alpha1",
        kind: "ManifestWorkReplicaSet",
        metadata: { name: "web", namespace: "rb" },
        spec: {
          placementRefs: [{ name: "rb", rolloutStrategy: { type: "All", all: { progressDeadline: "None" }, failureStrategy: "AbortAll" } }],
          manifestWorkTemplate: { workload: { manifests } },
        },
      });
    expect(await kubectl("apply", "-f", file("v1.json", mwrs([configMap("1")])))).toContain(
      "manifestworkreplicaset.work.open-cluster-management.io/web created",
    );
    await waitFor("revision 1 everywhere", async () => MEMBERS.every((c) => version(c) === "1"), 60_000);
    await waitFor(
      "revision 1 current",
      async () => {
        const m = await get(`${MWRS}/web`);
        return !!m.status?.currentRevision && m.status.currentRevision === m.status.updateRevision;
      },
      30_000,
    );
    const good = (await get(`${MWRS}/web`)).status.currentRevision as string;

    // Revision 2 adds a ConfigMap in `extra`: rb-3's API server refuses it (no such namespace).
    expect(await kubectl("apply", "-f", file("v2.json", mwrs([configMap("2"), configMap("2", "extra", "more")])))).toContain("configured");
    await waitFor("the abort", async () => !!(await get(`${MWRS}/web`)).status?.abortedTime, 60_000);
    const aborted = await get(`${MWRS}/web`);
    expect(aborted.status.currentRevision).toBe(good);
    expect(aborted.status.updateRevision).not.toBe(good);
    expect(cond(aborted, "Progressing")).toMatchObject({ status: "False", reason: "RolloutAborted" });
    // Every cluster goes back to revision 1, on the clusters themselves.
    await waitFor("every cluster back at revision 1", async () => MEMBERS.every((c) => version(c) === "1"), 60_000);
    await waitFor(
      "the works report revision 1 applied",
      async () =>
        (
          await Promise.all(
            MEMBERS.map(async (c) => {
              const w = await get(WORK(c, "rb.web"));
              return (
                w.metadata.labels["work.open-cluster-management.io/controller-hash"] === good &&
                cond(w, "Applied")?.status === "True" &&
                cond(w, "Applied")?.observedGeneration === w.metadata.generation
              );
            }),
          )
        ).every(Boolean),
      60_000,
    );
    expect((await get(`${MWRS}/web`)).spec.manifestWorkTemplate.workload.manifests).toHaveLength(2);

    // The history, as kubectl shows it; the undo sets revision 1's template back into the spec.
    const revisions = await kubectl("get", "controllerrevisions", "-n", "rb");
    expect(revisions).toMatch(new RegExp(`web-${good}\\s+manifestworkreplicaset.work.open-cluster-management.io/web\\s+1`));
    const undo = await flotilla(["replicaset", "undo", "web", "-n", "rb"], { hub, env: { FLOTILLA_CA_FILE: hub.caFile! } });
    expect(undo.stderr).toBe("");
    expect(undo.stdout).toContain("manifestworkreplicaset.work.open-cluster-management.io/web rolled back (to revision 1)");
    await waitFor(
      "the undo rolled out",
      async () => {
        const m = await get(`${MWRS}/web`);
        return m.status?.updateRevision === good && m.status?.currentRevision === good && !m.status?.abortedTime;
      },
      60_000,
    );
    const history = await flotilla(["replicaset", "history", "web", "-n", "rb"], { hub, env: { FLOTILLA_CA_FILE: hub.caFile! } });
    expect(history.stdout).toMatch(new RegExp(`3\\s+web-${good}\\s+current, update`));
    expect(MEMBERS.map(version)).toEqual(["1", "1", "1"]);
  });
});
