/**
 * The dashboard in a real browser: Debian's Chromium (`/usr/bin/chromium`, .ci/run installs it)
 * driven by playwright-core, on `wrangler dev` with agents on simulated member clusters. In one
 * page, never reloaded after sign-in: sign in with the admin token from the keyboard; the fleet
 * lists the three joined clusters Available, each with its lease age (read for the rows on screen
 * after the first paint); a SIGSTOPped agent turns Unknown on the open page, its lease late,
 * (lease 1 s, grace 5 x) and Available again once resumed; a fourth agent's registration appears
 * Pending and is accepted from the page; a taint added from the page keeps that cluster out of a
 * Placement, whose page says why; a progressive ManifestWorkReplicaSet's progress advances on its
 * page to every decided cluster, and mid-way through a new template's rollout the page counts
 * what the hub's condition says ("1 of 3", the clusters on the old template to apply); a
 * ServiceAccount token signs in too, and sees what its RBAC allows; a namespaced team (edit in
 * its namespace, a cluster set it may get) sees its placements, rollouts, events and its set's
 * clusters (the cluster view) without a 403. Every view is screenshotted (into a temporary folder, or into
 * `FLOTILLA_UI_SCREENSHOTS`, e.g. docs/ui, which README.md shows).
 */
import { existsSync, mkdirSync, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { cond, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess } from "./support.ts";

/** Debian's Chromium (package `chromium`); Playwright's own browser download cannot run here. */
export const CHROMIUM = process.env.FLOTILLA_CHROMIUM ?? "/usr/bin/chromium";
const G = "/apis/cluster.open-cluster-management.io";
const AVAILABLE = "ManagedClusterConditionAvailable";
/**
 * Run in the page (a script, as the test's own code has no DOM types): records in
 * `globalThis.seenProgress` each new value of a `[data-progress]` element (`<succeeded>/<total>`).
 */
const RECORD_PROGRESS = `(() => {
  const seen = [];
  globalThis.seenProgress = seen;
  const note = () => {
    for (const el of document.querySelectorAll("[data-progress]")) {
      const v = el.getAttribute("data-progress");
      if (seen[seen.length - 1] !== v) seen.push(v);
    }
  };
  new MutationObserver(note).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
})()`;
/** How long the page may take to show a change the hub made (watch delivery under a loaded machine). */
const ON_PAGE_MS = 60_000;

describe("the dashboard in Chromium (wrangler dev + agents on simulated clusters)", () => {
  let hub: Hub;
  let browser: Browser;
  let page: Page;
  let token: string;
  const agents = new Map<string, AgentProcess>();
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-ui-"));
  const shots = process.env.FLOTILLA_UI_SCREENSHOTS ? path.resolve(process.env.FLOTILLA_UI_SCREENSHOTS) : path.join(dir, "shots");
  let loads = 0;
  const errors: string[] = [];

  const shoot = async (name: string, p: Page = page) => {
    const file = path.join(shots, `${name}.png`);
    await p.screenshot({ path: file, fullPage: true });
    expect(statSync(file).size).toBeGreaterThan(5_000);
  };
  const join = (name: string) =>
    agents.set(name, startAgent(hub, ["--cluster-name", name, "--bootstrap-token", token, "--simulate-state", path.join(dir, `${name}.json`)]));
  const go = (hash: string) => page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  const stateOnPage = (name: string, state: string) => page.locator(`tr[data-cluster="${name}"] [data-state="${state}"]`);

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true });
    hub = await startHub();
    token = await createBootstrapToken(hub);
    for (const c of ["c1", "c2", "c3"]) join(c);
    for (const c of ["c1", "c2", "c3"]) {
      await waitFor(`${c} to register`, async () => (await admin(hub, "GET", `${MC}/${c}`)).status === 200);
      expect((await admin(hub, "PATCH", `${MC}/${c}`, { spec: { hubAcceptsClient: true, leaseDurationSeconds: 1 } }, merge)).status).toBe(200);
    }
    await waitFor("c1, c2 and c3 Available", async () => {
      const items = (await admin(hub, "GET", MC)).body.items as unknown[];
      return items.filter((mc) => cond(mc, AVAILABLE)?.status === "True").length === 3;
    });
    expect(existsSync(CHROMIUM)).toBe(true);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("load", () => loads++);
    page.on("pageerror", (e) => errors.push(e.message));
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    for (const a of agents.values()) {
      a.child.kill("SIGCONT");
      await stopAgent(a);
    }
    await hub?.stop();
  });

  it("sends a browser at / to the sign-in page, and signs in with the admin token from the keyboard", async () => {
    await page.goto(`${hub.url}/`);
    expect(new URL(page.url()).pathname).toBe("/ui");
    await shoot("signin");
    await page.locator("#token").focus();
    await page.keyboard.type(hub.adminToken);
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator(".user").textContent(), { timeout: ON_PAGE_MS }).toBe("flotilla:admin");
  });

  it("lists the three clusters Available in the fleet view, with their lease ages", async () => {
    for (const c of ["c1", "c2", "c3"]) await stateOnPage(c, "Available").waitFor({ timeout: ON_PAGE_MS });
    const kube = await page.locator('tr[data-cluster="c1"] td').nth(2).textContent();
    expect(kube).toMatch(/^v1\./);
    // The lease age: seconds since the agent last renewed (a 1 s lease, renewed by its pings).
    for (const c of ["c1", "c2", "c3"]) {
      const cell = page.locator(`tr[data-cluster="${c}"] td[data-lease="${c}"]`);
      await expect.poll(() => cell.textContent(), { timeout: ON_PAGE_MS }).toMatch(/^\d+s$/);
      expect(Number((await cell.textContent())!.slice(0, -1))).toBeLessThan(60);
      expect(await cell.getAttribute("title")).toMatch(/^renewed \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    }
    // Read from each cluster's Lease, one GET per row on screen, never a list of the fleet's leases.
    const reads = (await page.evaluate("performance.getEntriesByType('resource').map((e) => e.name)")) as string[];
    const leaseReads = reads.filter((u) => u.includes("/apis/coordination.k8s.io/"));
    expect(leaseReads.length).toBeGreaterThanOrEqual(3);
    for (const u of leaseReads) expect(new URL(u).pathname).toMatch(/^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/c\d\/leases\/managed-cluster-lease$/);
    await shoot("fleet");
  });

  it("turns a stopped agent's cluster Unknown on the open page without a reload, and Available once it resumes", async () => {
    const before = loads;
    agents.get("c3")!.child.kill("SIGSTOP");
    try {
      await stateOnPage("c3", "Unknown").waitFor({ timeout: ON_PAGE_MS });
      // Its lease, read again as its row changed, is past the grace (5 x 1 s); the others' are not.
      await page.locator('td[data-lease="c3"][data-late="true"]').waitFor({ timeout: ON_PAGE_MS });
      expect(await page.locator('td[data-lease="c1"]').getAttribute("data-late")).toBeNull();
      await shoot("fleet-unknown");
    } finally {
      agents.get("c3")!.child.kill("SIGCONT");
    }
    await stateOnPage("c3", "Available").waitFor({ timeout: ON_PAGE_MS });
    expect(loads).toBe(before);
  });

  it("shows a new registration Pending and accepts it from the page", async () => {
    const before = loads;
    join("c4");
    await stateOnPage("c4", "Pending").waitFor({ timeout: ON_PAGE_MS });
    await page.locator('tr[data-cluster="c4"] a').click();
    await page.locator('[data-view="cluster"]').waitFor();
    await page.getByRole("button", { name: "Accept cluster" }).click();
    await page.locator('h1 [data-state="Available"]').waitFor({ timeout: ON_PAGE_MS });
    expect(cond((await admin(hub, "GET", `${MC}/c4`)).body, "HubAcceptedManagedCluster")?.status).toBe("True");
    await page.locator('[data-condition="ManagedClusterJoined"]').waitFor();
    // Its lease: renewed seconds ago, at a MicroTime, with its duration.
    await expect.poll(() => page.locator("[data-lease-renewed]").textContent(), { timeout: ON_PAGE_MS }).toMatch(/^\d+s ago \(\d{4}-.*\.\d{6}Z\)$/);
    await shoot("cluster");
    expect(loads).toBe(before);
  });

  it("adds a taint from the page, and the Placement's page says why that cluster was not selected", async () => {
    await go("#/clusters/c2");
    await page.locator('[data-view="cluster"] h1', { hasText: "c2" }).waitFor();
    await page.locator("#taint-new").fill("maintenance=true");
    await page.getByRole("button", { name: "Add taint" }).click();
    await waitFor("c2's taint on the hub", async () =>
      ((await admin(hub, "GET", `${MC}/c2`)).body.spec.taints ?? []).some((t: { key: string }) => t.key === "maintenance"),
    );
    await page.getByRole("button", { name: "Remove taint maintenance=true:NoSelect" }).waitFor({ timeout: ON_PAGE_MS });
    // Only c2 (the cluster this view shows; the view before it showed c4) got the taint.
    expect(((await admin(hub, "GET", `${MC}/c4`)).body.spec.taints ?? []).map((t: { key: string }) => t.key)).not.toContain("maintenance");

    await createNamespaces(hub, "apps");
    expect(
      (
        await admin(hub, "POST", `${G}/v1beta2/namespaces/apps/managedclustersetbindings`, {
          apiVersion: "cluster.open-cluster-management.io/v1beta2",
          kind: "ManagedClusterSetBinding",
          metadata: { name: "default" },
          spec: { clusterSet: "default" },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await admin(hub, "POST", `${G}/v1beta1/namespaces/apps/placements`, {
          apiVersion: "cluster.open-cluster-management.io/v1beta1",
          kind: "Placement",
          metadata: { name: "web" },
          spec: { clusterSets: ["default"] },
        })
      ).status,
    ).toBe(201);
    await waitFor(
      "the placement to decide c1, c3 and c4",
      async () => (await admin(hub, "GET", `${G}/v1beta1/namespaces/apps/placements/web`)).body.status?.numberOfSelectedClusters === 3,
    );

    await go("#/placements");
    await page.locator('[data-view="placements"] a', { hasText: "web" }).waitFor({ timeout: ON_PAGE_MS });
    await shoot("placements");
    await page.locator('[data-view="placements"] a', { hasText: "web" }).click();
    const why = page.locator('tr[data-why="c2"]');
    await why.waitFor({ timeout: ON_PAGE_MS });
    expect(await why.getAttribute("data-reason")).toBe("Tainted");
    expect(await why.locator("td.msg").textContent()).toBe("tainted: maintenance=true:NoSelect not tolerated");
    expect((await page.locator("[data-selected] li").allTextContents()).sort()).toEqual(["c1", "c3", "c4"]);
    await shoot("placement");
  });

  it("shows a progressive rollout's progress advance on the page", async () => {
    const before = loads;
    await go("#/replicasets/apps/rollout");
    // Records every progress the page shows, from before the replica set exists.
    await page.evaluate(RECORD_PROGRESS);
    const configMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "web", namespace: "default" }, data: { greeting: "hello" } };
    const mwrs = {
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name: "rollout" },
      spec: {
        placementRefs: [{ name: "web", rolloutStrategy: { type: "Progressive", progressive: { maxConcurrency: 1 } } }],
        manifestWorkTemplate: { workload: { manifests: [configMap] } },
      },
    };
    expect((await admin(hub, "POST", "/apis/work.open-cluster-management.io/v1alpha1/namespaces/apps/manifestworkreplicasets", mwrs)).status).toBe(201);
    await page.locator('[data-progress="3/3"]').waitFor({ timeout: 90_000 });
    const seen = (await page.evaluate("globalThis.seenProgress ?? []")) as string[];
    const succeeded = seen.map((s) => Number(s.split("/")[0]));
    // It advanced: the page showed fewer than 3 succeeded before it showed 3, never going back.
    expect(succeeded[0]).toBeLessThan(3);
    expect(succeeded).toEqual([...succeeded].sort((a, b) => a - b));
    expect(succeeded[succeeded.length - 1]).toBe(3);
    await page.locator('[data-rollout="Succeeded"]').first().waitFor();
    await shoot("rollout");
    await go("#/replicasets");
    await page.locator('[data-view="replicasets"] a', { hasText: "rollout" }).waitFor({ timeout: ON_PAGE_MS });
    await shoot("rollouts");
    expect(loads).toBe(before);
  });

  it("mid-rollout, shows the clusters still on the old template as to apply, with the hub's count", async () => {
    const before = loads;
    await go("#/replicasets/apps/rollout");
    await page.locator('[data-progress="3/3"]').waitFor({ timeout: ON_PAGE_MS });
    // A new template, one cluster at a time, each soaking an hour: c1 gets it and succeeds, c3 and
    // c4 keep the old one (their works still Applied and Available, at their own generation).
    const path = "/apis/work.open-cluster-management.io/v1alpha1/namespaces/apps/manifestworkreplicasets/rollout";
    const configMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "web", namespace: "default" }, data: { greeting: "hola" } };
    const patch = {
      spec: {
        placementRefs: [{ name: "web", rolloutStrategy: { type: "Progressive", progressive: { maxConcurrency: 1, minSuccessTime: "1h" } } }],
        manifestWorkTemplate: { workload: { manifests: [configMap] } },
      },
    };
    expect((await admin(hub, "PATCH", path, patch, merge)).status).toBe(200);
    await waitFor("the hub to count 1 of 3 succeeded", async () =>
      /^1 of 3 clusters succeeded/.test(cond((await admin(hub, "GET", path)).body, "PlacementRolledOut")?.message ?? ""),
    );
    // The page says what the hub's condition says, not "3 of 3", all green.
    await page.locator('[data-progress="1/3"]').waitFor({ timeout: ON_PAGE_MS });
    await expect
      .poll(() => page.locator('[data-condition="PlacementRolledOut"] td.msg').textContent(), { timeout: ON_PAGE_MS })
      .toMatch(/^1 of 3 clusters succeeded/);
    expect(await page.locator('[data-cluster="c1"]').getAttribute("data-rollout")).toBe("Succeeded");
    for (const c of ["c3", "c4"]) expect(await page.locator(`[data-cluster="${c}"]`).getAttribute("data-rollout")).toBe("ToApply");
    expect(await page.getByRole("progressbar").getAttribute("aria-label")).toBe("1 of 3 clusters succeeded");
    await shoot("rollout-mid");
    expect(loads).toBe(before);
  });

  it("signs in with a ServiceAccount token and shows what its RBAC lets it read", async () => {
    const RBAC = "/apis/rbac.authorization.k8s.io/v1";
    const rbac = { apiGroup: "rbac.authorization.k8s.io" };
    expect(
      (await admin(hub, "POST", "/api/v1/namespaces/apps/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "viewer" } })).status,
    ).toBe(201);
    const rules = [{ apiGroups: ["cluster.open-cluster-management.io"], resources: ["managedclusters"], verbs: ["get", "list", "watch"] }];
    expect(
      (
        await admin(hub, "POST", `${RBAC}/clusterroles`, {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRole",
          metadata: { name: "fleet-viewer" },
          rules,
        })
      ).status,
    ).toBe(201);
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "fleet-viewer" },
      roleRef: { ...rbac, kind: "ClusterRole", name: "fleet-viewer" },
      subjects: [{ kind: "ServiceAccount", name: "viewer", namespace: "apps" }],
    };
    expect((await admin(hub, "POST", `${RBAC}/clusterrolebindings`, binding)).status).toBe(201);
    const tr = await admin(hub, "POST", "/api/v1/namespaces/apps/serviceaccounts/viewer/token", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: {},
    });
    expect(tr.status).toBe(201);
    const viewer = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await viewer.goto(`${hub.url}/ui`);
      await viewer.locator("#token").fill(tr.body.status.token);
      await viewer.getByRole("button", { name: "Sign in" }).click();
      await expect.poll(() => viewer.locator(".user").textContent(), { timeout: ON_PAGE_MS }).toBe("system:serviceaccount:apps:viewer");
      await viewer.locator('tr[data-cluster="c1"] [data-state="Available"]').waitFor({ timeout: ON_PAGE_MS });
      // Its RBAC holds no leases: the lease column shows none rather than an error.
      await expect.poll(() => viewer.locator('td[data-lease="c1"]').textContent(), { timeout: ON_PAGE_MS }).toBe("—");
      // Placements are not the viewer's to read: the page shows the hub's 403, not an empty list.
      await viewer.evaluate(`location.hash = "#/placements"`);
      await viewer.locator(".error", { hasText: "403 Forbidden" }).waitFor({ timeout: ON_PAGE_MS });
    } finally {
      await viewer.close();
    }
  });

  it("shows a namespaced team its namespace's placements, rollouts and events and its cluster set's clusters, with no 403", async () => {
    const RBAC = "/apis/rbac.authorization.k8s.io/v1";
    const rbac = { apiGroup: "rbac.authorization.k8s.io" };
    const post = async (path: string, body: Record<string, unknown>) => expect((await admin(hub, "POST", path, body)).status).toBe(201);
    // As OCM hands out access: edit in the team's namespace, bound to a cluster set the team may get.
    await createNamespaces(hub, "team");
    await post("/api/v1/namespaces/team/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "dev" } });
    await post(`${RBAC}/namespaces/team/rolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "dev-edit" },
      roleRef: { ...rbac, kind: "ClusterRole", name: "edit" },
      subjects: [{ kind: "ServiceAccount", name: "dev", namespace: "team" }],
    });
    await post(`${RBAC}/clusterroles`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "team-clusters" },
      rules: [
        { apiGroups: ["cluster.open-cluster-management.io"], resources: ["managedclustersets"], resourceNames: ["blue"], verbs: ["get"] },
        { apiGroups: ["clusterview.open-cluster-management.io"], resources: ["managedclusters", "managedclustersets"], verbs: ["list", "watch"] },
      ],
    });
    await post(`${RBAC}/clusterrolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "team-clusters" },
      roleRef: { ...rbac, kind: "ClusterRole", name: "team-clusters" },
      subjects: [{ kind: "ServiceAccount", name: "dev", namespace: "team" }],
    });
    await post(`${G}/v1beta2/managedclustersets`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSet",
      metadata: { name: "blue" },
      spec: { clusterSelector: { selectorType: "LabelSelector", labelSelector: { matchLabels: { team: "blue" } } } },
    });
    expect((await admin(hub, "PATCH", `${MC}/c1`, { metadata: { labels: { team: "blue" } } }, merge)).status).toBe(200);
    await post(`${G}/v1beta2/namespaces/team/managedclustersetbindings`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "blue" },
      spec: { clusterSet: "blue" },
    });
    await post(`${G}/v1beta1/namespaces/team/placements`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "blue-web" },
      spec: { clusterSets: ["blue"] },
    });
    const tr = await admin(hub, "POST", "/api/v1/namespaces/team/serviceaccounts/dev/token", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: {},
    });
    expect(tr.status).toBe(201);
    const dev = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const refused: string[] = [];
    dev.on("response", (r) => r.status() === 403 && refused.push(new URL(r.url()).pathname));
    try {
      await dev.goto(`${hub.url}/ui`);
      await dev.locator("#token").fill(tr.body.status.token);
      await dev.getByRole("button", { name: "Sign in" }).click();
      await expect.poll(() => dev.locator(".user").textContent(), { timeout: ON_PAGE_MS }).toBe("system:serviceaccount:team:dev");
      // The fleet: the clusters of its set, through the cluster view.
      await dev.locator('tr[data-cluster="c1"]').waitFor({ timeout: ON_PAGE_MS });
      await dev.locator("[data-clusterview]").waitFor();
      expect(await dev.locator("tr[data-cluster]").count()).toBe(1);
      // Its namespace, picked for it; its placement.
      expect(await dev.locator(".ns-picker select").inputValue()).toBe("team");
      await dev.evaluate(`location.hash = "#/placements"`);
      await dev.locator('[data-view="placements"] a', { hasText: "blue-web" }).click();
      // Its placement's page: the set's clusters through the cluster view, c1 selected.
      await dev.locator("[data-selected] li", { hasText: "c1" }).waitFor({ timeout: ON_PAGE_MS });
      // Its cluster's page, through the cluster view too.
      await dev.evaluate(`location.hash = "#/clusters/c1"`);
      await dev.locator('[data-view="cluster"] h1', { hasText: "c1" }).waitFor({ timeout: ON_PAGE_MS });
      expect(await dev.locator(".error").count()).toBe(0);
      await dev.evaluate(`location.hash = "#/replicasets"`);
      await dev.locator('[data-view="replicasets"]', { hasText: "No ManifestWorkReplicaSet." }).waitFor({ timeout: ON_PAGE_MS });
      await dev.evaluate(`location.hash = "#/events"`);
      await dev.locator('[data-view="events"]', { hasText: "In namespace team." }).waitFor({ timeout: ON_PAGE_MS });
      await dev.locator('[data-view="events"] .events', { hasText: /No events\.|Last seen/ }).waitFor({ timeout: ON_PAGE_MS });
      await shoot("team", dev);
      expect(await dev.locator(".error").count()).toBe(0);
      // What it was refused: the cluster-wide list of clusters (then read through the cluster view),
      // and what the page reads quietly (the fleet's /metrics, other namespaces' leases, the
      // cluster's Events in `default`, a grey note); never a list in its own namespace, nor a
      // cluster-wide list of the namespaced kinds.
      expect(refused).toContain("/apis/cluster.open-cluster-management.io/v1/managedclusters");
      expect(refused.filter((p) => p.includes("/namespaces/team/"))).toEqual([]);
      expect(refused.filter((p) => /\/(placements|manifestworkreplicasets|events)$/.test(p) && !p.includes("/namespaces/"))).toEqual([]);
    } finally {
      await dev.close();
    }
  });

  it("shows the events view, the fleet on a phone and in the dark theme", async () => {
    await go("#/events");
    await page.locator('[data-view="events"]').waitFor();
    // Listed (a table or "No events."), not waiting for the network to go idle: the watch stays open.
    await page.locator('[data-view="events"] .events', { hasText: /No events\.|Last seen/ }).waitFor({ timeout: ON_PAGE_MS });
    await shoot("events");
    const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, colorScheme: "dark" });
    await phone.goto(`${hub.url}/ui`);
    await phone.locator("#token").fill(hub.adminToken);
    await phone.getByRole("button", { name: "Sign in" }).click();
    await phone.locator('tr[data-cluster="c4"] [data-state="Available"]').waitFor({ timeout: ON_PAGE_MS });
    await expect.poll(() => phone.locator('td[data-lease="c4"]').textContent(), { timeout: ON_PAGE_MS }).toMatch(/^\d+s$/);
    // The dark theme follows the system's preference: the page's background is dark.
    const bg = await phone.evaluate("getComputedStyle(document.body).backgroundColor");
    expect(bg).toBe("rgb(17, 22, 28)");
    await shoot("fleet-phone-dark", phone);
    await phone.close();
    expect(errors).toEqual([]);
  });
});
