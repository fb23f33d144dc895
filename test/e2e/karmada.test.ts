/**
 * Karmada's PropagationPolicy end to end (docs/karmada.md): real kubectl against a real hub
 * (`wrangler dev`, HTTPS) with three simulated member clusters, each run by a real agent process.
 * A Deployment and a ConfigMap are applied to the hub; a PropagationPolicy whose clusterAffinity
 * selects by label picks 2 of the 3 clusters; the objects appear on exactly those two (their
 * namespace with them); the ResourceBinding shows FullyApplied; deleting the policy keeps them on
 * the members, as Karmada does (its bindings and works stay, without the claim); deleting a
 * template then removes it from the members, the other staying.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, startHub, type Hub } from "../../scripts/hub-process.ts";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import type { KubeConfig } from "../../agent/src/kube.ts";
import { joinMembers, type Member, kubectlWith, scratchDir, stopAgent, waitFor, type AgentProcess, writeAdminKubeconfig } from "./support.ts";

const { dir, file } = scratchDir("flotilla-karmada-");
const RB = "/apis/work.karmada.io/v1alpha2/namespaces/kdemo/resourcebindings";

let hub: Hub;
let kubeconfig: string;
const agents: AgentProcess[] = [];
const sims: { name: string; sim: SimulatedCluster; kc: KubeConfig }[] = [];
const { kubectl } = kubectlWith(() => kubeconfig, dir);

beforeAll(async () => {
  hub = await startHub({ https: true, graceMultiplier: 2 });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
  const members: Member[] = [];
  for (const [name, env] of [
    ["kmember-1", "prod"],
    ["kmember-2", "prod"],
    ["kmember-3", "dev"],
  ] as const) {
    const sim = await startSimulatedCluster({ readyDelayMs: 200 });
    sims.push({ name, sim, kc: kubeConfigFromYaml(sim.kubeconfigYaml) });
    members.push({ name, labels: { env }, args: ["--kubeconfig", sim.kubeconfigPath, "--status-sync-interval", "0.5"], simulate: false });
  }
  await joinMembers(hub, members, { agents });
}, 120_000);

afterAll(async () => {
  for (const a of agents) await stopAgent(a);
  for (const s of sims) await s.sim.close();
  await hub?.stop();
});

/** The status code of GET `path` on a simulated cluster. */
async function onMember(kc: KubeConfig, p: string): Promise<number> {
  try {
    await kc.json("GET", p);
    return 200;
  } catch (e) {
    return (e as { code?: number }).code ?? 0;
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const cond = (o: any, type: string) => (o?.status?.conditions ?? []).find((c: { type: string }) => c.type === type);

describe("a PropagationPolicy with kubectl, wrangler dev and agents", () => {
  it("propagates a Deployment and a ConfigMap to 2 of 3 clusters by label, reports FullyApplied, keeps them when the policy goes", async () => {
    const app = file(
      "app.yaml",
      [
        "apiVersion: v1",
        "kind: Namespace",
        "metadata: {name: kdemo}",
        "---",
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata: {name: settings, namespace: kdemo}",
        "data: {mode: blue}",
        "---",
        "apiVersion: apps/v1",
        "kind: Deployment",
        "metadata: {name: nginx, namespace: kdemo, labels: {app: nginx}}",
        "spec:",
        "  replicas: 2",
        "  selector: {matchLabels: {app: nginx}}",
        "  template:",
        "    metadata: {labels: {app: nginx}}",
        "    spec: {containers: [{name: nginx, image: 'nginx:1.27'}]}",
        "",
      ].join("\n"),
    );
    expect(await kubectl("apply", "-f", app)).toContain("deployment.apps/nginx created");
    const policy = file(
      "pp.yaml",
      [
        "apiVersion: policy.karmada.io/v1alpha1",
        "kind: PropagationPolicy",
        "metadata: {name: nginx, namespace: kdemo}",
        "spec:",
        "  resourceSelectors:",
        "  - {apiVersion: apps/v1, kind: Deployment, name: nginx}",
        "  - {apiVersion: v1, kind: ConfigMap, name: settings}",
        "  placement:",
        "    clusterAffinity:",
        "      labelSelector: {matchLabels: {env: prod}}",
        "",
      ].join("\n"),
    );
    const applied = Date.now();
    expect(await kubectl("apply", "-f", policy)).toContain("propagationpolicy.policy.karmada.io/nginx created");
    expect(await kubectl("get", "pp", "-n", "kdemo")).toMatch(/^NAME\s+CONFLICT-RESOLUTION\s+PRIORITY\s+AGE\nnginx\s+Abort\s+0\s/);

    // The objects appear on exactly the two prod clusters, their namespace with them.
    const [m1, m2, m3] = sims;
    for (const m of [m1!, m2!])
      await waitFor(
        `the Deployment on ${m.name}`,
        async () =>
          (await onMember(m.kc, "/apis/apps/v1/namespaces/kdemo/deployments/nginx")) === 200 &&
          (await onMember(m.kc, "/api/v1/namespaces/kdemo/configmaps/settings")) === 200,
        30_000,
      );
    expect(await onMember(m3!.kc, "/api/v1/namespaces/kdemo")).toBe(404);

    // The ResourceBinding: scheduled on both, FullyApplied once the agents report.
    await waitFor(
      "the binding FullyApplied",
      async () => cond((await admin(hub, "GET", `${RB}/nginx-deployment`)).body, "FullyApplied")?.status === "True",
      30_000,
    );
    const fullyApplied = Date.now() - applied;
    const rb = (await admin(hub, "GET", `${RB}/nginx-deployment`)).body;
    expect(rb.spec.clusters.map((c: { name: string }) => c.name)).toEqual(["kmember-1", "kmember-2"]);
    expect(cond(rb, "Scheduled")).toMatchObject({ status: "True", reason: "Success" });
    expect(rb.status.aggregatedStatus.map((s: { clusterName: string; applied: boolean }) => [s.clusterName, s.applied])).toEqual([
      ["kmember-1", true],
      ["kmember-2", true],
    ]);
    const table = await kubectl("get", "resourcebindings.work.karmada.io", "-n", "kdemo");
    expect(table).toMatch(/^NAME\s+SCHEDULED\s+FULLYAPPLIED\s+AGE/);
    expect(table).toMatch(/\nnginx-deployment\s+True\s+True\s/);
    // The template carries Karmada's claim.
    const claimed = JSON.parse(await kubectl("get", "deployment", "nginx", "-n", "kdemo", "-o", "json"));
    expect(claimed.metadata.annotations["propagationpolicy.karmada.io/name"]).toBe("nginx");

    // Deleting the policy keeps the objects on the members (Karmada's handlePolicyDeletion clears
    // the claims only); the binding stays, without the claim.
    expect(await kubectl("delete", "pp", "nginx", "-n", "kdemo")).toContain("deleted");
    expect((await admin(hub, "GET", "/apis/policy.karmada.io/v1alpha1/namespaces/kdemo/propagationpolicies/nginx")).status).toBe(404);
    await waitFor(
      "the claim gone from the template",
      async () =>
        JSON.parse(await kubectl("get", "deployment", "nginx", "-n", "kdemo", "-o", "json")).metadata.annotations?.["propagationpolicy.karmada.io/name"] ===
        undefined,
    );
    const released = (await admin(hub, "GET", `${RB}/nginx-deployment`)).body;
    expect(released.metadata.annotations?.["propagationpolicy.karmada.io/name"]).toBeUndefined();
    expect(released.spec.clusters.map((c: { name: string }) => c.name)).toEqual(["kmember-1", "kmember-2"]);
    const works = (await admin(hub, "GET", "/apis/work.open-cluster-management.io/v1/manifestworks")).body.items as {
      metadata: { name: string; namespace: string };
    }[];
    expect(
      works
        .filter((w) => w.metadata.name === "pp.kdemo.nginx-work")
        .map((w) => w.metadata.namespace)
        .sort(),
    ).toEqual(["kmember-1", "kmember-2"]);
    for (const m of [m1!, m2!]) {
      expect(await onMember(m.kc, "/apis/apps/v1/namespaces/kdemo/deployments/nginx"), m.name).toBe(200);
      expect(await onMember(m.kc, "/api/v1/namespaces/kdemo/configmaps/settings"), m.name).toBe(200);
    }

    // Deleting the Deployment template removes it from the members (its binding goes with it); the ConfigMap stays.
    const deleting = Date.now();
    expect(await kubectl("delete", "deployment", "nginx", "-n", "kdemo")).toContain("deleted");
    for (const m of [m1!, m2!])
      await waitFor(
        `the Deployment gone from ${m.name}`,
        async () => (await onMember(m.kc, "/apis/apps/v1/namespaces/kdemo/deployments/nginx")) === 404,
        30_000,
      );
    console.info(
      `karmada e2e: kubectl apply of the policy to FullyApplied ${fullyApplied} ms; kubectl delete of the template to it gone from the members ${Date.now() - deleting} ms`,
    );
    expect((await admin(hub, "GET", `${RB}/nginx-deployment`)).status).toBe(404);
    for (const m of [m1!, m2!]) expect(await onMember(m.kc, "/api/v1/namespaces/kdemo/configmaps/settings"), m.name).toBe(200);
    expect((await admin(hub, "GET", `${RB}/settings-configmap`)).status).toBe(200);
  });
});
