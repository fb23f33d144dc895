/**
 * KubeFleet's drain end to end: real kubectl and `flotilla drain` against a real hub (`wrangler
 * dev`) with four simulated member clusters run by real agent processes. A PickN placement `app`
 * (2 clusters, budget minAvailable 1) and a PickN placement `pinned` (1 cluster, the drained one
 * only, budget minAvailable 1) share member m1. `flotilla drain m1` cordons it (KubeFleet's cordon
 * taint, NoSelect), evicts `app` (its budget allows one disruption: the placement is re-filled on
 * m3 and its objects leave m1) and refuses `pinned` (evicting it would leave none available),
 * saying so and exiting 1; `flotilla uncordon m1` removes the taint. The automatic path: two PickN
 * placements tolerating the hub's unreachable taint for 0 s run on member m4 (its lease lowered
 * to 1 s while its agent is connected); once m4's agent stops and its lease expires, `auto` (no
 * budget) leaves m4 for m2, and `held` (budget minAvailable 1) stays, its status (m4's `Evicted`
 * False condition) and Events saying why. The dashboard (Debian's
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
import {
  joinMembers,
  kubectlWith,
  MC,
  merge,
  scratchDir,
  stopAgent,
  stopAll,
  waitFor,
  writeAdminKubeconfig,
  type AgentProcess,
  type Member,
} from "./support.ts";

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const { dir, file } = scratchDir("flotilla-drain-");
const G = "/apis/placement.kubernetes-fleet.io/v1beta1";
const WORKS = "/apis/work.open-cluster-management.io/v1/manifestworks";
const MEMBERS = ["m1", "m2", "m3", "m4"];

let hub: Hub;
let kubeconfig: string;
const agents: AgentProcess[] = [];
const { kubectl } = kubectlWith(() => kubeconfig, dir);

beforeAll(async () => {
  hub = await startHub({ https: true, graceMultiplier: 2 });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
  // m3 joins the app's clusters later, so that the app starts on m1 and m2; m4 is the automatic path's.
  const members = MEMBERS.map((name): Member => ({ name, labels: name === "m3" ? {} : name === "m4" ? { auto: "1" } : { fleet: "drain" } }));
  await joinMembers(hub, members, { stateDir: dir, agents });
  // m4's lease is lowered to 1 s once its agent is connected over the channel (a `lease` message
  // tells it): the hub counts the old interval until the agent's next ping, which it must keep
  // when the connection closes (test/worker/channel.test.ts "a closed connection's last ping").
  const m4 = agents[MEMBERS.indexOf("m4")]!;
  await waitFor("m4's channel connected", async () => m4.output().includes("connected to the hub over WebSocket"), 60_000);
  expect((await admin(hub, "PATCH", `${MC}/m4`, { spec: { leaseDurationSeconds: 1 } }, merge)).status).toBe(200);
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
/** `text` as a regular expression that matches it literally. */
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
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

  it("the automatic path: a stopped agent's cluster, unreachable past the toleration, is left as far as each budget allows", async () => {
    const tolerating = (name: string, budget: boolean) => {
      const yaml = placementYaml(name, 1, "auto: '1'").replace(
        "    numberOfClusters: 1",
        "    numberOfClusters: 1\n    tolerations: [{key: cluster.open-cluster-management.io/unreachable, operator: Exists, tolerationSeconds: 0}]",
      );
      return budget ? yaml : `${yaml.split("\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1")[0]!}\n`;
    };
    // `auto` has no budget; `held`'s (minAvailable 1) allows no disruption of its one cluster.
    await kubectl("apply", "-f", file("auto.yaml", tolerating("auto", false)));
    await kubectl("apply", "-f", file("held.yaml", tolerating("held", true)));
    for (const p of ["auto", "held"])
      await waitFor(`${p} on m4, Available`, async () => (await worksOn(p)).join() === "m4" && (await allAvailable(p, 1)), 60_000);
    expect((await admin(hub, "PATCH", `${MC}/m2`, { metadata: { labels: { auto: "1" } } }, merge)).status).toBe(200);
    // m4's agent stops; with its 1 s lease the hub marks it unreachable (Available Unknown, the taint) within seconds.
    await stopAgent(agents[MEMBERS.indexOf("m4")]!);
    await waitFor(
      "the automatic evictions decided: auto's executed, held's refused",
      async () => {
        const listed = await kubectl("get", "clusterresourceplacementevictions");
        return /unreachable-eviction-auto-m4-[0-9a-f]{8}\s+True\s+True/.test(listed) && /unreachable-eviction-held-m4-[0-9a-f]{8}\s+True\s+False/.test(listed);
      },
      60_000,
    );
    const taint = ((await get(`${MC}/m4`)).spec.taints as { key: string; timeAdded: string }[]).find(
      (t) => t.key === "cluster.open-cluster-management.io/unreachable",
    )!;
    const cause = `cluster m4 unreachable (taint cluster.open-cluster-management.io/unreachable:NoSelect since ${taint.timeAdded}) past the placement's toleration of 0s`;
    // Its work on m4 stays, being deleted, until an agent confirms; the binding moves and m2 runs it.
    const boundTo = async (p: string) =>
      (
        (await get(`${G}/clusterresourcebindings?labelSelector=${encodeURIComponent(`kubernetes-fleet.io/parent-CRP=${p}`)}`)).items as {
          spec: { targetCluster: string };
        }[]
      ).map((b) => b.spec.targetCluster);
    await waitFor("auto bound to m2", async () => (await boundTo("auto")).join() === "m2", 60_000);
    await waitFor("m2 runs auto", async () => runs("m2", "auto", "cfg"), 60_000);
    // held stays on m4: its status says why on the cluster (Evicted False), and so do its Events.
    type Status = { clusterName: string; conditions?: { type: string; status: string; reason: string; message: string }[] };
    const evicted = async () =>
      ((await get(`/apis/placement.kubernetes-fleet.io/v1/clusterresourceplacements/held`)).status?.placementStatuses as Status[] | undefined)
        ?.find((s) => s.clusterName === "m4")
        ?.conditions?.find((c) => c.type === "Evicted");
    const refusal = await waitFor("held's refusal in its status", evicted, 60_000);
    expect(refusal).toMatchObject({ status: "False", reason: "ClusterResourcePlacementEvictionNotExecuted" });
    expect(refusal.message).toMatch(
      new RegExp(
        `^${escape(cause)}: Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: [01], totalPlacements: 1$`,
      ),
    );
    expect(await boundTo("held")).toEqual(["m4"]);
    const events = async (p: string) =>
      (
        (
          await get(
            `/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(`involvedObject.kind=ClusterResourcePlacement,involvedObject.name=${p}`)}`,
          )
        ).items as { type: string; reason: string; message: string }[]
      ).map((e) => `${e.type} ${e.reason}: ${e.message}`);
    expect(await events("auto")).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^Normal ClusterResourcePlacementEvictionExecuted: Automatic eviction \\(${escape(cause)}\\) unreachable-eviction-auto-m4-[0-9a-f]{8} of cluster m4: Eviction is allowed, no ClusterResourcePlacementDisruptionBudget specified$`,
        ),
      ),
    );
    expect(await events("held")).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^Warning ClusterResourcePlacementEvictionNotExecuted: Automatic eviction \\(${escape(cause)}\\) unreachable-eviction-held-m4-[0-9a-f]{8} of cluster m4: Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget`,
        ),
      ),
    );
    expect(await kubectl("describe", "clusterresourceplacement", "auto")).toContain("ClusterResourcePlacementEvictionExecuted");
    expect(await kubectl("describe", "clusterresourceplacement", "held")).toContain("ClusterResourcePlacementEvictionNotExecuted");
  }, 120_000);

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
