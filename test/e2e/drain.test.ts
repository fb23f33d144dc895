/**
 * KubeFleet's drain end to end: real kubectl and `flotilla drain` against a real hub (`wrangler
 * dev`) with three simulated member clusters run by real agent processes. A PickN placement `app`
 * (2 clusters, budget minAvailable 1) and a PickN placement `pinned` (1 cluster, the drained one
 * only, budget minAvailable 1) share member m1. `flotilla drain m1` cordons it (KubeFleet's cordon
 * taint, NoSelect), evicts `app` (its budget allows one disruption: the placement is re-filled on
 * m3 and its objects leave m1) and refuses `pinned` (evicting it would leave none available),
 * saying so and exiting 1; `flotilla uncordon m1` removes the taint. (The automatic path, a
 * cluster unreachable past a placement's toleration, is tested in
 * test/worker/fleet-eviction-unreachable.test.ts with the injected clock.) The dashboard (Debian's
 * Chromium driven by playwright-core, as test/e2e/ui.test.ts) lists the drain's evictions, decided,
 * and the budgets on the placements' page.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, startHub, type Hub } from "../../scripts/hub-process.ts";
import { joinMembers, kubectlWith, MC, merge, scratchDir, stopAll, waitFor, writeAdminKubeconfig, type AgentProcess, type Member } from "./support.ts";

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const { dir, file } = scratchDir("flotilla-drain-");
const G = "/apis/placement.kubernetes-fleet.io/v1beta1";
const WORKS = "/apis/work.open-cluster-management.io/v1/manifestworks";
const MEMBERS = ["m1", "m2", "m3"];

let hub: Hub;
let kubeconfig: string;
const agents: AgentProcess[] = [];
const { kubectl } = kubectlWith(() => kubeconfig, dir);

beforeAll(async () => {
  hub = await startHub({ https: true, graceMultiplier: 2 });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
  // m3 joins the app's clusters later, so that the app starts on m1 and m2.
  const members = MEMBERS.map((name): Member => ({
    name,
    labels: name === "m3" ? {} : name === "m4" ? { auto: "1" } : { fleet: "drain" },
    ...(name === "m4" ? { spec: { leaseDurationSeconds: 1 } } : {}),
  }));
  await joinMembers(hub, members, { stateDir: dir, agents });
}, 120_000);

afterAll(() => stopAll(agents, hub));

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const get = async (p: string): Promise<any> => (await admin(hub, "GET", p)).body;
/** The clusters with a work of placement `p`. */
const worksOn = async (p: string): Promise<string[]> =>
  ((await get(`${WORKS}?labelSelector=${encodeURIComponent(`kubernetes-fleet.io/parent-CRP=${p}`)}`)).items as { metadata: { namespace: string } }[])
    .map((w) => w.metadata.namespace)
    .sort();
/** Whether the placement's bindings are all Available (as the agents reported). */
const allAvailable = async (p: string, n: number): Promise<boolean> => {
  const items = (await get(`${G}/clusterresourcebindings?labelSelector=${encodeURIComponent(`kubernetes-fleet.io/parent-CRP=${p}`)}`)).items as {
    status?: { conditions?: { type: string; status: string }[] };
  }[];
  return items.length === n && items.every((b) => b.status?.conditions?.some((c) => c.type === "Available" && c.status === "True"));
};
/** Whether simulated cluster `cluster` runs ConfigMap `name` in namespace `ns` (its state file). */
function runs(cluster: string, ns: string, name: string): boolean {
  try {
    const state = JSON.parse(readFileSync(path.join(dir, `${cluster}.json`), "utf8")) as {
      objects: { group: string; plural: string; object: { metadata: { name: string; namespace?: string } } }[];
    };
    return state.objects.some((o) => o.group === "" && o.plural === "configmaps" && o.object.metadata.name === name && o.object.metadata.namespace === ns);
  } catch {
    return false;
  }
}
const flotilla = (...args: string[]) =>
  run(process.execPath, [path.join(root, "agent/bin/flotilla.js"), ...args, "--hub-url", hub.url, "--token", hub.adminToken, "--ca-file", hub.caFile!], {
    cwd: root,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" }),
  );

const placementYaml = (name: string, n: number, match: string) =>
  [
    "apiVersion: v1",
    "kind: Namespace",
    `metadata: {name: ${name}}`,
    "---",
    "apiVersion: v1",
    "kind: ConfigMap",
    `metadata: {name: cfg, namespace: ${name}}`,
    "data: {v: '1'}",
    "---",
    "apiVersion: placement.kubernetes-fleet.io/v1",
    "kind: ClusterResourcePlacement",
    `metadata: {name: ${name}}`,
    "spec:",
    `  resourceSelectors: [{group: '', version: v1, kind: Namespace, name: ${name}}]`,
    "  policy:",
    "    placementType: PickN",
    `    numberOfClusters: ${n}`,
    `    affinity: {clusterAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {clusterSelectorTerms: [{labelSelector: {matchLabels: {${match}}}}]}}}`,
    "---",
    "apiVersion: placement.kubernetes-fleet.io/v1beta1",
    "kind: ClusterResourcePlacementDisruptionBudget",
    `metadata: {name: ${name}}`,
    "spec: {minAvailable: 1}",
    "",
  ].join("\n");

describe("flotilla drain with kubectl, wrangler dev and agents", () => {
  it("moves a PickN placement off the cluster within its budget and refuses what would break it", async () => {
    await kubectl("apply", "-f", file("app.yaml", placementYaml("app", 2, "fleet: drain")));
    await kubectl("apply", "-f", file("pinned.yaml", placementYaml("pinned", 1, "kubernetes-fleet.io/member-cluster-name: m1")));
    await waitFor("app on m1 and m2, Available", async () => (await worksOn("app")).join() === "m1,m2" && (await allAvailable("app", 2)), 60_000);
    await waitFor("pinned on m1, Available", async () => (await worksOn("pinned")).join() === "m1" && (await allAvailable("pinned", 1)), 60_000);
    await waitFor("m1 runs both", async () => runs("m1", "app", "cfg") && runs("m1", "pinned", "cfg"), 30_000);
    expect((await admin(hub, "PATCH", `${MC}/m3`, { metadata: { labels: { fleet: "drain" } } }, merge)).status).toBe(200);

    const drained = await flotilla("drain", "m1", "--timeout", "2m");
    expect(drained.stdout).toContain("cluster m1 cordoned (taint cordon-key=cordon-value:NoSelect)");
    expect(drained.stdout).toMatch(
      /placement app: evicted \(eviction drain-eviction-app-m1-[0-9a-f]{8}: Eviction is allowed by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 2, totalPlacements: 2\)/,
    );
    expect(drained.stdout).toMatch(
      /placement pinned: refused \(eviction drain-eviction-pinned-m1-[0-9a-f]{8}: Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 1, totalPlacements: 1\)/,
    );
    expect(drained.code).toBe(1);
    expect(drained.stderr).toContain("drain of cluster m1 is incomplete: 1 placement(s) refused (pinned)");

    // The app leaves m1 for m3; pinned stays.
    await waitFor("app on m2 and m3", async () => (await worksOn("app")).join() === "m2,m3", 60_000);
    await waitFor("m1 no longer runs the app, m3 does", async () => !runs("m1", "app", "cfg") && runs("m3", "app", "cfg"), 60_000);
    expect(runs("m1", "pinned", "cfg")).toBe(true);
    expect(await worksOn("pinned")).toEqual(["m1"]);
    const evictions = await kubectl("get", "clusterresourceplacementevictions");
    expect(evictions).toMatch(/drain-eviction-app-m1-\S+\s+True\s+True/);
    expect(evictions).toMatch(/drain-eviction-pinned-m1-\S+\s+True\s+False/);

    const taints = async () => ((await get(`${MC}/m1`)).spec.taints ?? []) as { key: string }[];
    expect((await taints()).map((t) => t.key)).toContain("cordon-key");
    const uncordoned = await flotilla("uncordon", "m1");
    expect(uncordoned.code).toBe(0);
    expect(uncordoned.stdout).toBe("cluster m1 uncordoned\n");
    expect((await taints()).map((t) => t.key)).not.toContain("cordon-key");
  }, 240_000);

  it("the dashboard lists the evictions, decided, and the budgets", async () => {
    const browser = await chromium.launch({ executablePath: process.env.FLOTILLA_CHROMIUM ?? "/usr/bin/chromium" });
    try {
      const page = await (await browser.newContext({ ignoreHTTPSErrors: true })).newPage();
      await page.goto(`${hub.url}/ui`);
      await page.locator("#token").fill(hub.adminToken);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.locator(".user").waitFor({ timeout: 60_000 });
      await page.goto(`${hub.url}/ui#/resourceplacements`);
      const app = page.locator('tr[data-eviction^="drain-eviction-app-m1-"]').first();
      await app.waitFor({ timeout: 60_000 });
      expect(await app.locator("td").nth(0).textContent()).toBe("app");
      expect(await app.locator("td").nth(1).textContent()).toBe("m1");
      expect(await app.locator('[data-state="True"]').count()).toBe(2);
      expect(await app.textContent()).toContain("Eviction is allowed by specified ClusterResourcePlacementDisruptionBudget");
      const pinned = page.locator('tr[data-eviction^="drain-eviction-pinned-m1-"]').first();
      expect(await pinned.locator('[data-state="False"]').count()).toBe(1);
      expect(await pinned.textContent()).toContain(
        "Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 1, totalPlacements: 1",
      );
      for (const b of ["app", "pinned"]) expect(await page.locator(`tr[data-budget="${b}"] td`).nth(1).textContent()).toBe("1");
    } finally {
      await browser.close();
    }
  }, 120_000);
});
