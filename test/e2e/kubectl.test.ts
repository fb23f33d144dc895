/**
 * Kubernetes clients against a real hub served over HTTPS with its local CA: the real kubectl
 * binary, through a kubeconfig printed by `flotilla kubeconfig` (OCM's YAML, watches, a joining
 * cluster's `managed-cluster-lease`), and @kubernetes/client-node as a second client.
 */
import { spawn } from "node:child_process";
import {} from "node:fs";
import {} from "node:os";
import path from "node:path";
import { CustomObjectsApi, KubeConfig, Watch } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { adminKubeconfigYaml, kubectlWith, startAgent, stopAgent, waitFor, type AgentProcess, scratchDir } from "./support.ts";

const { dir, file } = scratchDir("flotilla-kubectl-");

let hub: Hub;
let kubeconfig: string;
const agents: AgentProcess[] = [];

const { kubectl, kubectlFails } = kubectlWith(() => kubeconfig, dir);

beforeAll(async () => {
  hub = await startHub({ https: true, graceMultiplier: 2 });
  const stdout = await adminKubeconfigYaml(hub);
  expect(stdout).toContain("certificate-authority-data");
  expect(stdout).not.toContain("insecure-skip-tls-verify");
  kubeconfig = file("kubeconfig", stdout);
});

afterAll(async () => {
  for (const a of agents) await stopAgent(a);
  await hub?.stop();
});

describe("kubectl against the hub", () => {
  it("applies OCM YAML client-side and server-side, and reads it back as a table and as YAML", async () => {
    const mcl = file(
      "mcl.yaml",
      "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: kc1\n  labels:\n    env: dev\nspec:\n  hubAcceptsClient: true\n",
    );
    expect(await kubectl("apply", "-f", mcl)).toContain("managedcluster.cluster.open-cluster-management.io/kc1 created");
    const table = await kubectl("get", "mcl");
    expect(table).toMatch(/^NAME\s+HUB ACCEPTED\s+MANAGED CLUSTER URLS\s+JOINED\s+AVAILABLE\s+AGE/);
    expect(table).toMatch(/\nkc1\s+true\s/);
    const yaml = await kubectl("get", "managedclusters", "kc1", "-o", "yaml");
    expect(yaml).toContain("kind: ManagedCluster");
    expect(yaml).toContain("leaseDurationSeconds: 60");

    const placement = file(
      "placement.yaml",
      [
        "apiVersion: v1",
        "kind: Namespace",
        "metadata:",
        "  name: apps",
        "---",
        "apiVersion: cluster.open-cluster-management.io/v1beta2",
        "kind: ManagedClusterSet",
        "metadata:",
        "  name: dev",
        "---",
        "apiVersion: cluster.open-cluster-management.io/v1beta2",
        "kind: ManagedClusterSetBinding",
        "metadata:",
        "  name: dev",
        "  namespace: apps",
        "spec:",
        "  clusterSet: dev",
        "---",
        "apiVersion: cluster.open-cluster-management.io/v1beta1",
        "kind: Placement",
        "metadata:",
        "  name: web",
        "  namespace: apps",
        "spec:",
        "  predicates:",
        "  - requiredClusterSelector:",
        "      labelSelector:",
        "        matchLabels:",
        "          env: dev",
        "  tolerations:",
        "  - key: cluster.open-cluster-management.io/unreachable",
        "    operator: Exists",
        "",
      ].join("\n"),
    );
    const applied = await kubectl("apply", "--server-side", "-f", placement);
    expect(applied).toContain("placement.cluster.open-cluster-management.io/web serverside-applied");
    expect(
      await kubectl("patch", "mcl", "kc1", "--type", "merge", "-p", '{"metadata":{"labels":{"cluster.open-cluster-management.io/clusterset":"dev"}}}'),
    ).toContain("patched");
    const decisions = await kubectl(
      "get",
      "placementdecisions",
      "-n",
      "apps",
      "-l",
      "cluster.open-cluster-management.io/placement=web",
      "-o",
      "jsonpath={.items[*].status.decisions[*].clusterName}",
    );
    expect(decisions.trim()).toBe("kc1");
    expect(await kubectl("label", "mcl", "kc1", "env=prod", "--overwrite")).toContain("labeled");
    const after = await kubectl(
      "get",
      "placementdecisions",
      "-n",
      "apps",
      "-l",
      "cluster.open-cluster-management.io/placement=web",
      "-o",
      "jsonpath={.items[*].status.decisions[*].clusterName}",
    );
    expect(after.trim()).toBe("");
  });

  it("server-side apply from two field managers conflicts as Kubernetes does, and --force-conflicts takes ownership", async () => {
    const yaml = (n: number, label: string) =>
      [
        "apiVersion: cluster.open-cluster-management.io/v1beta1",
        "kind: Placement",
        "metadata:",
        "  name: shared",
        "  namespace: ssa",
        "  labels:",
        `    owner: ${label}`,
        "spec:",
        `  numberOfClusters: ${n}`,
        "",
      ].join("\n");
    await kubectl("create", "namespace", "ssa");
    expect(await kubectl("apply", "--server-side", "--field-manager=team-a", "-f", file("ssa-a.yaml", yaml(1, "a")))).toContain(
      "placement.cluster.open-cluster-management.io/shared serverside-applied",
    );
    const conflict = await kubectlFails("apply", "--server-side", "--field-manager=team-b", "-f", file("ssa-b.yaml", yaml(2, "b")));
    expect(conflict).toContain('Apply failed with 2 conflicts: conflicts with "team-a":\n- .metadata.labels.owner\n- .spec.numberOfClusters');
    expect(conflict).toContain("--force-conflicts");
    expect(await kubectl("get", "placement", "shared", "-n", "ssa", "-o", "jsonpath={.spec.numberOfClusters}")).toBe("1");
    expect(await kubectl("apply", "--server-side", "--field-manager=team-b", "--force-conflicts", "-f", path.join(dir, "ssa-b.yaml"))).toContain(
      "serverside-applied",
    );
    const shown = await kubectl("get", "placement", "shared", "-n", "ssa", "-o", "yaml", "--show-managed-fields");
    expect(shown).toMatch(
      /managedFields:\n\s+- apiVersion: cluster.open-cluster-management.io\/v1beta1\n\s+fieldsType: FieldsV1\n\s+fieldsV1:\n\s+f:metadata:\n\s+f:labels:\n\s+f:owner: \{\}\n\s+f:spec:\n\s+f:numberOfClusters: \{\}\n\s+manager: team-b\n\s+operation: Apply/,
    );
    expect(shown).not.toContain("manager: team-a");
    expect(await kubectl("get", "placement", "shared", "-n", "ssa", "-o", "jsonpath={.spec.numberOfClusters} {.metadata.labels.owner}")).toBe("2 b");
    // Without --show-managed-fields kubectl hides them, as against kube-apiserver.
    expect(await kubectl("get", "placement", "shared", "-n", "ssa", "-o", "yaml")).not.toContain("managedFields");
    // A client-side edit is an Update by kubectl's manager, and takes the field from team-b.
    expect(await kubectl("label", "placement", "shared", "-n", "ssa", "owner=c", "--overwrite")).toContain("labeled");
    const labelled = await kubectl(
      "get",
      "placement",
      "shared",
      "-n",
      "ssa",
      "-o",
      "jsonpath={.metadata.managedFields[*].manager}/{.metadata.managedFields[*].operation}",
    );
    expect(labelled).toBe("team-b kubectl-label/Apply Update");
  });

  it("explains the OCM kinds from the OpenAPI document", async () => {
    const explained = await kubectl("explain", "placement.spec");
    expect(explained).toContain("numberOfClusters");
    expect(explained).toContain("predicates");
  });

  it("refuses invalid input with the server's message", async () => {
    const bad = file("bad.yaml", "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: Bad_Name\n");
    expect(await kubectlFails("apply", "-f", bad)).toMatch(/Bad_Name|invalid/i);
  });

  it("watches a change (get -w) and waits for a joining cluster to be Available", async () => {
    const watcher = spawn("kubectl", ["--kubeconfig", kubeconfig, "get", "mcl", "kc1", "-w"], { stdio: ["ignore", "pipe", "pipe"] });
    let seen = "";
    watcher.stdout.on("data", (d: Buffer) => (seen += d.toString()));
    await waitFor("the initial row", async () => seen.includes("kc1"));
    await kubectl("patch", "mcl", "kc1", "--type", "merge", "-p", '{"spec":{"hubAcceptsClient":false}}');
    await waitFor("the watch to show the change", async () => /kc1\s+false/.test(seen), 20_000);
    watcher.kill();

    const token = await createBootstrapToken(hub);
    const agent = startAgent({ url: hub.url, caFile: hub.caFile }, [
      "--cluster-name",
      "joiner",
      "--bootstrap-token",
      token,
      "--simulate-state",
      path.join(dir, "joiner.json"),
    ]);
    agents.push(agent);
    await waitFor("the cluster to register", async () =>
      (await kubectl("get", "mcl", "-o", "name")).includes("managedcluster.cluster.open-cluster-management.io/joiner"),
    );
    await kubectl("patch", "mcl", "joiner", "--type", "merge", "-p", '{"spec":{"hubAcceptsClient":true,"leaseDurationSeconds":1}}');
    const waited = await kubectl("wait", "--for=condition=ManagedClusterConditionAvailable", "mcl/joiner", "--timeout=60s");
    expect(waited).toContain("condition met");
    // OCM's lease of the accepted cluster, as `kubectl get lease -n <cluster>` shows it on an OCM hub.
    const leases = await kubectl("get", "lease", "-n", "joiner");
    expect(leases).toMatch(/^NAME\s+HOLDER\s+AGE\n/);
    expect(leases).toMatch(/\nmanaged-cluster-lease\s+managed-cluster-lease\s+\d+\w/);
    expect(await kubectl("get", "lease", "-A", "-o", "name")).toContain("lease.coordination.k8s.io/managed-cluster-lease");
    const renewed = await kubectl("get", "lease", "managed-cluster-lease", "-n", "joiner", "-o", "jsonpath={.spec.holderIdentity} {.spec.renewTime}");
    expect(renewed).toMatch(/^managed-cluster-lease \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(Date.now() - Date.parse(renewed.split(" ")[1]!)).toBeLessThan(60_000);
    expect(await kubectlFails("delete", "lease", "managed-cluster-lease", "-n", "joiner")).toContain("MethodNotAllowed");
    expect(await kubectl("delete", "mcl", "joiner")).toContain("deleted");
    expect(await kubectlFails("get", "mcl", "joiner")).toContain("NotFound");
  });
});

describe("@kubernetes/client-node against the hub", () => {
  it("lists and watches ManagedClusters", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const api = kc.makeApiClient(CustomObjectsApi);
    const list = (await api.listClusterCustomObject({ group: "cluster.open-cluster-management.io", version: "v1", plural: "managedclusters" })) as {
      items: { metadata: { name: string } }[];
      metadata: { resourceVersion: string };
    };
    expect(list.items.map((i) => i.metadata.name)).toContain("kc1");
    const events: string[] = [];
    const watch = new Watch(kc);
    const req = await watch.watch(
      "/apis/cluster.open-cluster-management.io/v1/managedclusters",
      { resourceVersion: list.metadata.resourceVersion },
      (type, obj: { metadata: { name: string } }) => events.push(`${type}:${obj.metadata.name}`),
      () => undefined,
    );
    await kubectl("label", "mcl", "kc1", "watched=yes");
    await waitFor("the client-node watch event", async () => events.includes("MODIFIED:kc1"), 20_000);
    req.abort();
  });
});
