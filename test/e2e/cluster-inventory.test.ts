/**
 * The cluster inventory API as its consumers read it: kubectl and @kubernetes/client-node's
 * informer (what MultiKueue-style Node controllers and multicluster-runtime's providers run)
 * against a real hub (`wrangler dev` over HTTPS), watching ClusterProfiles appear, change and
 * disappear as clusters and bindings do; with the ManagedClusterSet columns kubectl prints and the
 * Warning kubectl shows for a ManifestWork no cluster will apply.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { CustomObjectsApi, KubeConfig, makeInformer, type KubernetesObject } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { waitFor, BINDINGS, writeAdminKubeconfig } from "./support.ts";

const run = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), "flotilla-inventory-"));
const G = "cluster.open-cluster-management.io";
const MC = `/apis/${G}/v1/managedclusters`;
const MCSET = `/apis/${G}/v1beta2/managedclustersets`;
const NS = "kueue-system";

/** What this test reads of a ClusterProfile through client-node. */
type Profile = KubernetesObject & { status?: { conditions?: { type: string; status: string }[] } };

let hub: Hub;
let kubeconfig: string;

async function kubectl(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run("kubectl", ["--kubeconfig", kubeconfig, ...args], { cwd: dir });
}

/** kubectl's view of the namespace's ClusterProfiles: name → ControlPlaneHealthy status. */
async function profiles(): Promise<Record<string, string>> {
  const { stdout } = await kubectl("get", "clusterprofiles.multicluster.x-k8s.io", "-n", NS, "-o", "json");
  const list = JSON.parse(stdout) as { items: { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } }[] };
  return Object.fromEntries(list.items.map((p) => [p.metadata.name, p.status?.conditions?.find((c) => c.type === "ControlPlaneHealthy")?.status ?? ""]));
}

async function cluster(name: string, set: string, available: string): Promise<void> {
  const created = await admin(hub, "POST", MC, {
    apiVersion: `${G}/v1`,
    kind: "ManagedCluster",
    metadata: { name, labels: { [`${G}/clusterset`]: set } },
    spec: { hubAcceptsClient: true },
  });
  expect(created.status).toBe(201);
  await setAvailable(name, available);
}

async function setAvailable(name: string, status: string): Promise<void> {
  const cond = { type: "ManagedClusterConditionAvailable", status, reason: "Test", message: "test", lastTransitionTime: "2026-01-01T00:00:00Z" };
  const r = await admin(
    hub,
    "PATCH",
    `${MC}/${name}/status`,
    { status: { conditions: [cond], version: { kubernetes: "v1.31.0" }, clusterClaims: [{ name: "id.k8s.io", value: `id-${name}` }] } },
    "application/merge-patch+json",
  );
  expect(r.status).toBe(200);
}

beforeAll(async () => {
  hub = await startHub({ https: true });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
  await createNamespaces(hub, NS, "nowhere");
  expect((await admin(hub, "POST", MCSET, { apiVersion: `${G}/v1beta2`, kind: "ManagedClusterSet", metadata: { name: "gpu" } })).status).toBe(201);
  await cluster("gpu-1", "gpu", "True");
}, 120_000);

afterAll(async () => {
  await hub?.stop();
});

describe("ClusterProfiles read by kubectl and client-node", () => {
  it("appear, change and disappear with clusters and bindings", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const api = kc.makeApiClient(CustomObjectsApi);
    const informer = makeInformer<KubernetesObject>(
      kc,
      `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${NS}/clusterprofiles`,
      () => api.listNamespacedCustomObject({ group: "multicluster.x-k8s.io", version: "v1alpha1", namespace: NS, plural: "clusterprofiles" }) as never,
    );
    const seen: string[] = [];
    for (const verb of ["add", "update", "delete"] as const) informer.on(verb, (o) => seen.push(`${verb}:${o.metadata?.name}`));
    informer.on("error", () => setTimeout(() => void informer.start().catch(() => undefined), 300));
    await informer.start();
    try {
      expect(await profiles()).toEqual({});
      const { stdout: none } = await kubectl("get", "clusterprofiles", "-n", NS);
      expect(none).toBe("");

      // A binding makes the set's clusters appear in the namespace.
      const bound = await admin(hub, "POST", BINDINGS(NS), {
        apiVersion: `${G}/v1beta2`,
        kind: "ManagedClusterSetBinding",
        metadata: { name: "gpu" },
        spec: { clusterSet: "gpu" },
      });
      expect(bound.status).toBe(201);
      expect(await profiles()).toEqual({ "gpu-1": "True" });
      await waitFor("the informer to add gpu-1", async () => seen.includes("add:gpu-1"), 30_000);
      const { stdout: table } = await kubectl("get", "clusterprofiles", "-n", NS);
      expect(table).toMatch(/^NAME\s+AGE\n/);
      expect(table).toMatch(/\ngpu-1\s+/);
      const { stdout: id } = await kubectl(
        "get",
        "clusterprofile",
        "gpu-1",
        "-n",
        NS,
        "-o",
        'jsonpath={.status.properties[?(@.name=="cluster.clusterset.k8s.io")].value}',
      );
      expect(id).toBe("id-gpu-1");

      // A new cluster of the set appears; a change of its availability shows.
      await cluster("gpu-2", "gpu", "True");
      expect(await profiles()).toEqual({ "gpu-1": "True", "gpu-2": "True" });
      await setAvailable("gpu-1", "False");
      expect(await profiles()).toEqual({ "gpu-1": "False", "gpu-2": "True" });
      await waitFor(
        "the informer to see gpu-1 unhealthy",
        async () =>
          (informer.get("gpu-1", NS) as Profile | undefined)?.status?.conditions?.some((c) => c.type === "ControlPlaneHealthy" && c.status === "False"),
        30_000,
      );

      // A cluster that leaves the set goes; the binding's removal takes the rest.
      expect(
        (await admin(hub, "PATCH", `${MC}/gpu-2`, { metadata: { labels: { [`${G}/clusterset`]: "default" } } }, "application/merge-patch+json")).status,
      ).toBe(200);
      expect(await profiles()).toEqual({ "gpu-1": "False" });
      await waitFor("the informer to delete gpu-2", async () => seen.includes("delete:gpu-2"), 30_000);
      expect((await admin(hub, "DELETE", `${BINDINGS(NS)}/gpu`)).status).toBe(200);
      expect(await profiles()).toEqual({});
      await waitFor("the informer to delete gpu-1", async () => seen.includes("delete:gpu-1") && informer.list().length === 0, 30_000);
    } finally {
      await informer.stop();
    }
  }, 180_000);

  it("refuses kubectl's writes to a ClusterProfile with MethodNotAllowed", async () => {
    const p = path.join(dir, "cp.yaml");
    writeFileSync(
      p,
      `apiVersion: multicluster.x-k8s.io/v1alpha1\nkind: ClusterProfile\nmetadata:\n  name: mine\n  namespace: ${NS}\nspec:\n  clusterManager:\n    name: me\n`,
    );
    const err = await kubectl("apply", "-f", p).then(
      () => "",
      (e: { stderr?: string }) => String(e.stderr),
    );
    expect(err).toContain("Error from server (MethodNotAllowed)");
  });
});

describe("kubectl's view of sets and works", () => {
  it("prints OCM's EMPTY column for ManagedClusterSets", async () => {
    const { stdout } = await kubectl("get", "mclset");
    expect(stdout).toMatch(/^NAME\s+EMPTY\s+AGE\n/);
    expect(stdout).toMatch(/\ngpu\s+False\s+/);
  });

  it("prints the hub's Warning for a ManifestWork in a namespace no cluster owns", async () => {
    const p = path.join(dir, "work.yaml");
    writeFileSync(
      p,
      "apiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\nmetadata:\n  name: lost\n  namespace: nowhere\nspec:\n  workload:\n    manifests:\n    - apiVersion: v1\n      kind: ConfigMap\n      metadata: {name: c, namespace: default}\n",
    );
    const { stdout, stderr } = await kubectl("create", "-f", p);
    expect(stdout).toContain("manifestwork.work.open-cluster-management.io/lost created");
    expect(stderr).toContain('Warning: no ManagedCluster named "nowhere" exists');
  });
});
