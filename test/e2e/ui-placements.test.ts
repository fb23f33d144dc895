/**
 * The dashboard's KubeFleet placements in a real browser (Debian's Chromium driven by
 * playwright-core, as test/e2e/ui.test.ts), on `wrangler dev` with agents on two simulated
 * member clusters. A ClusterResourcePlacement puts namespace `shop` on both clusters; a
 * ResourcePlacement in `shop` places its ConfigMap `menu` (rolling update, maxUnavailable 1).
 * The admin sees the ClusterResourcePlacement and every namespace's ResourcePlacements listed, and
 * the ResourcePlacement's page: the object it selected and each cluster Applied and Available at
 * resource index 0. A namespaced user (`view` in `shop` only) has the same page open, and the
 * list of its namespace's ResourcePlacements, without the other namespace's, whose page answers 403.
 * Then one agent is stopped (SIGSTOP) and the ConfigMap changed on the hub: on both open pages,
 * without a reload, the placement is mid-change (resource index 1, that cluster not done); the
 * agent resumed, both pages come to rest (every cluster done at index 1, Available True).
 * A ResourceOverride adds each cluster's name to its menu: on both pages, the rendered panel shows
 * for a chosen cluster the object it gets beside the template (the override's line marked, the
 * snapshot applied named), at rest and mid-change (the new content rendered while c2 is not done).
 * A ManifestWorkReplicaSet in `shop` with a ResourceOverride naming it: its page shows the same
 * panel (its `render` subresource), to the admin and to the namespaced user.
 * A template add-on installed on both clusters with a ClusterResourceOverride naming it: the add-on
 * page (`#/addons/<name>`) lists its clusters and shows the same panel (the add-on's `render`
 * subresource): the cluster's deploy work beside the template, the override's line marked.
 * Screenshots go to a temporary folder, or to `FLOTILLA_UI_SCREENSHOTS`.
 */
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn as dashboardSignIn } from "../kit/dashboard.ts";
import { admin, createBootstrapToken, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { cond, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess } from "./support.ts";

/** Debian's Chromium (package `chromium`), as test/e2e/ui.test.ts. */
const CHROMIUM = process.env.FLOTILLA_CHROMIUM ?? "/usr/bin/chromium";
const FLEET = "/apis/placement.kubernetes-fleet.io/v1";
const RBAC = "/apis/rbac.authorization.k8s.io/v1";
/** How long a page may take to show a change the hub made (watch delivery under a loaded machine). */
const ON_PAGE_MS = 60_000;

describe("KubeFleet placements on the dashboard in Chromium (wrangler dev + agents)", () => {
  let hub: Hub;
  let browser: Browser;
  let page: Page;
  let dev: Page;
  let devToken: string;
  const agents = new Map<string, AgentProcess>();
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-ui-placements-"));
  const shots = process.env.FLOTILLA_UI_SCREENSHOTS ? path.resolve(process.env.FLOTILLA_UI_SCREENSHOTS) : path.join(dir, "shots");
  const loads = { admin: 0, dev: 0 };
  const errors: string[] = [];
  const refused: string[] = [];

  const shoot = (name: string, p: Page) => screenshot(shots, name, p);
  const post = async (p: string, body: Record<string, unknown>) => {
    const r = await admin(hub, "POST", p, body);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  };
  const signIn = (p: Page, token: string, user: string) => dashboardSignIn(p, hub.url, token, user, ON_PAGE_MS);
  /**
   * The rendered-for-a-cluster panel of a placement's page for `cluster` (chosen in its select):
   * waits until the rendered pane holds `wants` (JSON lines) and the template pane `template`.
   */
  const rendered = async (p: Page, cluster: string, wants: string[], template: string, snapshot = "shop/menu-0", kind = "ResourceOverrideSnapshot") => {
    await p.locator("[data-render-cluster]").selectOption(cluster);
    const panel = p.locator(`[data-rendered="${cluster}"][data-render-state="rendered"]`);
    await panel.waitFor({ timeout: ON_PAGE_MS });
    expect(await panel.locator("[data-overrides-applied]").getAttribute("data-overrides-applied")).toBe(`${kind} ${snapshot}`);
    for (const w of wants) await panel.locator('[data-pane="rendered"]', { hasText: w }).waitFor({ timeout: ON_PAGE_MS });
    await panel.locator('[data-pane="template"]', { hasText: template }).waitFor({ timeout: ON_PAGE_MS });
    // The override's line is marked in the rendered pane, and is not in the template.
    await panel.locator('[data-pane="rendered"] [data-changed="true"]', { hasText: `"where": "${cluster}"` }).waitFor({ timeout: ON_PAGE_MS });
    expect(await panel.locator('[data-pane="template"]').textContent()).not.toContain('"where"');
    // Only that line: the one before it, which gained a comma, is not a change.
    expect(await panel.locator('[data-pane="rendered"] [data-changed="true"]').count()).toBe(1);
  };
  /** A cluster's row on a placement's page, with the data attributes `attrs` (e.g. `[data-done="true"]`). */
  const row = (p: Page, cluster: string, attrs = "") => p.locator(`[data-view="resourceplacement"] tr[data-cluster="${cluster}"]${attrs}`);

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true });
    hub = await startHub();
    const token = await createBootstrapToken(hub);
    for (const c of ["c1", "c2"])
      agents.set(c, startAgent(hub, ["--cluster-name", c, "--bootstrap-token", token, "--simulate-state", path.join(dir, `${c}.json`)]));
    for (const c of ["c1", "c2"]) {
      await waitFor(`${c} to register`, async () => (await admin(hub, "GET", `${MC}/${c}`)).status === 200);
      expect((await admin(hub, "PATCH", `${MC}/${c}`, { spec: { hubAcceptsClient: true } }, merge)).status).toBe(200);
    }
    await waitFor("c1 and c2 Available", async () => {
      const items = (await admin(hub, "GET", MC)).body.items as unknown[];
      return items.filter((mc) => cond(mc, "ManagedClusterConditionAvailable")?.status === "True").length === 2;
    });

    // The namespace on both clusters (a ClusterResourcePlacement, NamespaceOnly), then its ConfigMap (a ResourcePlacement).
    await createNamespaces(hub, "shop", "other");
    await post("/api/v1/namespaces/shop/configmaps", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "menu" }, data: { soup: "tomato" } });
    await post("/api/v1/namespaces/other/configmaps", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "secret-recipe" }, data: { x: "1" } });
    await post(`${FLEET}/clusterresourceplacements`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "shop-namespace" },
      spec: { resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "shop", selectionScope: "NamespaceOnly" }] },
    });
    await waitFor("the namespace placed", async () => {
      const crp = (await admin(hub, "GET", `${FLEET}/clusterresourceplacements/shop-namespace`)).body;
      return cond(crp, "ClusterResourcePlacementAvailable")?.status === "True";
    });
    // Each cluster's menu says where it is (a ResourceOverride for the ResourcePlacement): the page renders it per cluster.
    await post(`${FLEET}/namespaces/shop/resourceoverrides`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourceOverride",
      metadata: { name: "menu" },
      spec: {
        placement: { name: "menu", scope: "Namespaced" },
        resourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "menu" }],
        policy: {
          overrideRules: [
            { clusterSelector: { clusterSelectorTerms: [] }, jsonPatchOverrides: [{ op: "add", path: "/data/where", value: "${MEMBER-CLUSTER-NAME}" }] },
          ],
        },
      },
    });
    await post(`${FLEET}/namespaces/shop/resourceplacements`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourcePlacement",
      metadata: { name: "menu" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "menu" }],
        strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1, maxSurge: 0, unavailablePeriodSeconds: 1 } },
      },
    });
    await post(`${FLEET}/namespaces/other/resourceplacements`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourcePlacement",
      metadata: { name: "recipe" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "secret-recipe" }],
        policy: { placementType: "PickFixed", clusterNames: ["nowhere"] },
      },
    });

    // A namespaced user: `view` in shop (KubeFleet's #508: a namespace's users read their ResourcePlacement's status).
    await post("/api/v1/namespaces/shop/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "dev" } });
    await post(`${RBAC}/namespaces/shop/rolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "dev-view" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
      subjects: [{ kind: "ServiceAccount", name: "dev", namespace: "shop" }],
    });
    const tr = await admin(hub, "POST", "/api/v1/namespaces/shop/serviceaccounts/dev/token", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: {},
    });
    expect(tr.status).toBe(201);
    devToken = tr.body.status.token;

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    dev = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("load", () => loads.admin++);
    dev.on("load", () => loads.dev++);
    for (const p of [page, dev]) p.on("pageerror", (e) => errors.push(e.message));
    dev.on("response", (r) => r.status() === 403 && refused.push(new URL(r.url()).pathname));
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    for (const a of agents.values()) {
      a.child.kill("SIGCONT");
      await stopAgent(a);
    }
    await hub?.stop();
  });

  it("lists the ClusterResourcePlacement and every namespace's ResourcePlacements for the admin", async () => {
    await signIn(page, hub.adminToken, "flotilla:admin");
    await page.evaluate(`location.hash = "#/resourceplacements"`);
    const view = page.locator('[data-view="resourceplacements"]');
    await view.locator('tr[data-placement="shop-namespace"] [data-state="True"]').first().waitFor({ timeout: ON_PAGE_MS });
    // Available on both clusters: 2 of 2 done.
    await expect.poll(() => view.locator('tr[data-placement="shop-namespace"] td.num').first().textContent(), { timeout: ON_PAGE_MS }).toBe("2/2");
    await view.locator('tr[data-placement="shop/menu"]').waitFor({ timeout: ON_PAGE_MS });
    await view.locator('tr[data-placement="other/recipe"]').waitFor({ timeout: ON_PAGE_MS });
    await shoot("resourceplacements", page);
  });

  it("shows the ResourcePlacement's selected object and each cluster Applied and Available, at rest", async () => {
    await page.locator('[data-view="resourceplacements"] tr[data-placement="shop/menu"] a').click();
    await page.locator('[data-view="resourceplacement"] h1', { hasText: "menu" }).waitFor();
    for (const c of ["c1", "c2"]) await row(page, c, '[data-done="true"]').waitFor({ timeout: ON_PAGE_MS });
    expect(await page.locator("[data-selected-resources] tbody tr").count()).toBe(1);
    expect(await page.locator('[data-selected-resources] tr[data-resource="ConfigMap/menu"] td').first().textContent()).toBe("ConfigMap");
    expect(await row(page, "c1").getAttribute("data-index")).toBe("0");
    expect(await page.locator("[data-observed-index]").textContent()).toBe("0");
    await page.locator('[data-view="resourceplacement"] h1 [data-state="True"]').waitFor();
    await page.locator('[data-condition="Available"] [data-state="True"]').waitFor();
    // KubeFleet's events, on the page.
    await page.locator('[data-view="resourceplacement"] .events tr[data-reason="PlacementRolloutCompleted"]').waitFor({ timeout: ON_PAGE_MS });
    // Each cluster's rendered object beside the template, the override's line marked.
    for (const c of ["c2", "c1"]) await rendered(page, c, [`"where": "${c}"`, '"soup": "tomato"'], '"soup": "tomato"');
    await shoot("resourceplacement", page);
  });

  it("shows a namespaced user its namespace's ResourcePlacement and its status, and not another namespace's", async () => {
    await signIn(dev, devToken, "system:serviceaccount:shop:dev");
    expect(await dev.locator(".ns-picker select").inputValue()).toBe("shop");
    await dev.evaluate(`location.hash = "#/resourceplacements"`);
    const view = dev.locator('[data-view="resourceplacements"]');
    await view.locator('tr[data-placement="shop/menu"]').waitFor({ timeout: ON_PAGE_MS });
    await view.locator("text=Cluster-scoped: shown to users who may list across namespaces.").waitFor();
    expect(await view.locator('tr[data-placement="other/recipe"]').count()).toBe(0);
    expect(await view.locator('tr[data-placement="shop-namespace"]').count()).toBe(0);
    // Another namespace's page: the hub's 403, not its status.
    await dev.evaluate(`location.hash = "#/resourceplacements/other/recipe"`);
    await dev.locator(".error", { hasText: "403 Forbidden" }).waitFor({ timeout: ON_PAGE_MS });
    expect(await dev.locator('[data-view="resourceplacement"]').count()).toBe(0);
    // Its own, at rest.
    await dev.evaluate(`location.hash = "#/resourceplacements/shop/menu"`);
    for (const c of ["c1", "c2"]) await row(dev, c, '[data-done="true"]').waitFor({ timeout: ON_PAGE_MS });
    expect(await dev.locator("[data-selected-resources] tbody tr").count()).toBe(1);
    await dev.locator('[data-view="resourceplacement"] .events tr[data-reason="PlacementRolloutCompleted"]').waitFor({ timeout: ON_PAGE_MS });
    // What its placement renders, read as a read of the placement.
    for (const c of ["c2", "c1"]) await rendered(dev, c, [`"where": "${c}"`, '"soup": "tomato"'], '"soup": "tomato"');
    await shoot("resourceplacement-namespaced", dev);
    // Refused: only the other namespace's placement; nothing of its own namespace.
    expect(refused.filter((p) => p.includes("/namespaces/shop/"))).toEqual([]);
    expect(refused).toContain(`${FLEET}/namespaces/other/resourceplacements`);
  });

  it("shows a change mid-rollout on both open pages without a reload, then at rest", async () => {
    const before = { ...loads };
    for (const p of [page, dev]) await row(p, "c2", '[data-done="true"]').waitFor({ timeout: ON_PAGE_MS });
    agents.get("c2")!.child.kill("SIGSTOP");
    try {
      expect((await admin(hub, "PATCH", "/api/v1/namespaces/shop/configmaps/menu", { data: { soup: "leek" } }, merge)).status).toBe(200);
      // Mid-change: the new resource index, c2 not done (its agent stopped), the placement not Available.
      for (const p of [page, dev]) {
        await p.locator('[data-view="resourceplacement"][data-index="1"]').waitFor({ timeout: ON_PAGE_MS });
        await row(p, "c2", '[data-done="false"]').waitFor({ timeout: ON_PAGE_MS });
        expect(await p.locator('[data-view="resourceplacement"] h1 [data-state="True"]').count()).toBe(0);
        // The panel follows: c2's rendering is the new one (what its agent will receive), while c2 is not done.
        await rendered(p, "c2", ['"where": "c2"', '"soup": "leek"'], '"soup": "leek"');
        await row(p, "c2", '[data-done="false"]').waitFor({ timeout: ON_PAGE_MS });
      }
      const rp = (await admin(hub, "GET", `${FLEET}/namespaces/shop/resourceplacements/menu`)).body;
      expect(rp.status.observedResourceIndex).toBe("1");
      expect(cond(rp, "ResourcePlacementAvailable")?.status).not.toBe("True");
      await shoot("resourceplacement-mid", page);
      await shoot("resourceplacement-mid-namespaced", dev);
    } finally {
      agents.get("c2")!.child.kill("SIGCONT");
    }
    // At rest: both clusters done at index 1, Available again.
    for (const p of [page, dev]) {
      for (const c of ["c1", "c2"]) {
        await row(p, c, '[data-done="true"][data-index="1"]').waitFor({ timeout: 90_000 });
      }
      await p.locator('[data-view="resourceplacement"] h1 [data-state="True"]').waitFor({ timeout: ON_PAGE_MS });
      await rendered(p, "c1", ['"where": "c1"', '"soup": "leek"'], '"soup": "leek"');
    }
    await shoot("resourceplacement-rest", page);
    expect(loads).toEqual(before);
    expect(errors).toEqual([]);
  });

  it("shows what a ManifestWorkReplicaSet renders for a cluster, to the admin and to the namespace's viewer", async () => {
    await post("/apis/cluster.open-cluster-management.io/v1beta2/namespaces/shop/managedclustersetbindings", {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "global" },
      spec: { clusterSet: "global" },
    });
    await post("/apis/cluster.open-cluster-management.io/v1beta1/namespaces/shop/placements", {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "specials" },
      spec: {},
    });
    await post(`${FLEET}/namespaces/shop/resourceoverrides`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourceOverride",
      metadata: { name: "specials" },
      spec: {
        placement: { name: "specials", scope: "ManifestWorkReplicaSet" },
        resourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "specials" }],
        policy: {
          overrideRules: [
            { clusterSelector: { clusterSelectorTerms: [] }, jsonPatchOverrides: [{ op: "add", path: "/data/where", value: "${MEMBER-CLUSTER-NAME}" }] },
          ],
        },
      },
    });
    await post("/apis/work.open-cluster-management.io/v1alpha1/namespaces/shop/manifestworkreplicasets", {
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name: "specials" },
      spec: {
        placementRefs: [{ name: "specials" }],
        manifestWorkTemplate: {
          workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "specials", namespace: "shop" }, data: { soup: "miso" } }] },
        },
      },
    });
    for (const p of [page, dev]) {
      await p.evaluate(`location.hash = "#/replicasets/shop/specials"`);
      await p.locator('[data-view="replicaset"] h1', { hasText: "specials" }).waitFor({ timeout: ON_PAGE_MS });
      for (const c of ["c2", "c1"]) await rendered(p, c, [`"where": "${c}"`, '"soup": "miso"'], '"soup": "miso"', "shop/specials-0");
    }
    await shoot("replicaset-rendered", page);
    await shoot("replicaset-rendered-namespaced", dev);
    expect(errors).toEqual([]);
  });

  it("shows what a template add-on renders for a cluster, beside its template", async () => {
    const A = "/apis/addon.open-cluster-management.io/v1alpha1";
    await post(`${A}/addontemplates`, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "AddOnTemplate",
      metadata: { name: "greeter" },
      spec: {
        addonName: "greeter",
        agentSpec: {
          workload: {
            manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "greeter", namespace: "{{INSTALL_NAMESPACE}}" }, data: { hello: "world" } }],
          },
        },
      },
    });
    await post(`${A}/clustermanagementaddons`, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "greeter" },
      spec: { supportedConfigs: [{ group: "addon.open-cluster-management.io", resource: "addontemplates", defaultConfig: { name: "greeter" } }] },
    });
    await post(`${FLEET}/clusterresourceoverrides`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourceOverride",
      metadata: { name: "greeter" },
      spec: {
        placement: { name: "greeter", scope: "ClusterManagementAddOn" },
        clusterResourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "greeter" }],
        policy: {
          overrideRules: [
            { clusterSelector: { clusterSelectorTerms: [] }, jsonPatchOverrides: [{ op: "add", path: "/data/where", value: "${MEMBER-CLUSTER-NAME}" }] },
          ],
        },
      },
    });
    for (const c of ["c1", "c2"])
      await post(`${A}/namespaces/${c}/managedclusteraddons`, {
        apiVersion: "addon.open-cluster-management.io/v1alpha1",
        kind: "ManagedClusterAddOn",
        metadata: { name: "greeter" },
        spec: {},
      });
    await page.evaluate(`location.hash = "#/addons"`);
    await page.locator('[data-view="addons"] a', { hasText: "greeter" }).click();
    await page.locator('[data-view="addon"] h1', { hasText: "greeter" }).waitFor({ timeout: ON_PAGE_MS });
    for (const c of ["c1", "c2"]) await page.locator(`[data-view="addon"] tr[data-addon-cluster="${c}"]`).waitFor({ timeout: ON_PAGE_MS });
    for (const c of ["c2", "c1"])
      await rendered(page, c, [`"where": "${c}"`, '"hello": "world"'], '"hello": "world"', "greeter-0", "ClusterResourceOverrideSnapshot");
    // The Overridden condition the manager sets on each cluster's add-on shows in its row.
    await page.locator('[data-view="addon"] tr[data-addon-cluster="c1"] [data-state="OverriddenSucceeded"]').waitFor({ timeout: ON_PAGE_MS });
    await shoot("addon-rendered", page);
    expect(errors).toEqual([]);
  });
});
