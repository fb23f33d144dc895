/**
 * The dashboard's staged update runs in a real browser (Debian's Chromium driven by
 * playwright-core, as test/e2e/ui.test.ts), on `wrangler dev` with agents on two simulated member
 * clusters (canary-1, prod-1). In namespace `team` a ResourcePlacement with `strategy.type:
 * External` places a ConfigMap, rolled out by a StagedUpdateRun in two stages: canary, then an
 * Approval, then prod. Three users have the run's page open: the admin, `dev` (the namespace's
 * `view` plus `update` on `approvalrequests/status`) and `viewer` (`view` only). Mid-change (the
 * canary updated, the approval waiting): every page shows the canary stage Waiting with canary-1
 * Succeeded, prod not started and the approval waiting; dev and the admin see an Approve button,
 * the viewer a note instead. Dev approves on the page: without a reload, every page comes to rest
 * (both stages Succeeded, the run Succeeded, no approval waiting), the ConfigMap is on prod-1, and
 * the approval request's condition names dev. The list view shows the run to the admin and dev.
 * Screenshots go to a temporary folder, or to `FLOTILLA_UI_SCREENSHOTS`.
 */
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn as dashboardSignIn } from "../kit/dashboard.ts";
import { admin, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { joinMembers, cond, stopAgent, waitFor, type AgentProcess } from "./support.ts";

/** Debian's Chromium (package `chromium`), as test/e2e/ui.test.ts. */
const CHROMIUM = process.env.FLOTILLA_CHROMIUM ?? "/usr/bin/chromium";
const FLEET = "/apis/placement.kubernetes-fleet.io/v1";
const RBAC = "/apis/rbac.authorization.k8s.io/v1";
/** How long a page may take to show a change the hub made (watch delivery under a loaded machine). */
const ON_PAGE_MS = 60_000;

describe("staged update runs on the dashboard in Chromium (wrangler dev + agents)", () => {
  let hub: Hub;
  let browser: Browser;
  const pages: Record<"admin" | "dev" | "viewer", Page> = {} as never;
  const tokens: Record<string, string> = {};
  const agents: AgentProcess[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-ui-runs-"));
  const shots = process.env.FLOTILLA_UI_SCREENSHOTS ? path.resolve(process.env.FLOTILLA_UI_SCREENSHOTS) : path.join(dir, "shots");
  const errors: string[] = [];

  const shoot = (name: string, p: Page) => screenshot(shots, name, p);
  const post = async (p: string, body: Record<string, unknown>) => {
    const r = await admin(hub, "POST", p, body);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  };
  const signIn = (p: Page, token: string, user: string) => dashboardSignIn(p, hub.url, token, user, ON_PAGE_MS);
  /** A namespaced ServiceAccount in `team` bound to `view`, with a token. */
  const user = async (name: string) => {
    await post("/api/v1/namespaces/team/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name } });
    await post(`${RBAC}/namespaces/team/rolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: `${name}-view` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
      subjects: [{ kind: "ServiceAccount", name, namespace: "team" }],
    });
    const tr = await admin(hub, "POST", `/api/v1/namespaces/team/serviceaccounts/${name}/token`, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: {},
    });
    expect(tr.status).toBe(201);
    tokens[name] = tr.body.status.token as string;
  };
  /** The ConfigMap `settings` a simulated cluster runs (its state file), or undefined. */
  const onCluster = (cluster: string): Record<string, string> | undefined => {
    try {
      const state = JSON.parse(readFileSync(path.join(dir, `${cluster}.json`), "utf8")) as {
        objects: { group: string; plural: string; object: { metadata: { name: string; namespace?: string }; data?: Record<string, string> } }[];
      };
      return state.objects.find((o) => o.group === "" && o.plural === "configmaps" && o.object.metadata.name === "settings")?.object.data;
    } catch {
      return undefined;
    }
  };
  const stage = (p: Page, name: string, state: string) => p.locator(`[data-view="updaterun"] [data-stage="${name}"][data-stage-state="${state}"]`);

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true });
    hub = await startHub();
    const members = [
      ["canary-1", "canary"],
      ["prod-1", "prod"],
    ].map(([name, tier]) => ({ name: name!, labels: { tier: tier! } }));
    await joinMembers(hub, members, { stateDir: dir, agents });

    // The namespace on both clusters, then its ConfigMap by an External ResourcePlacement.
    await createNamespaces(hub, "team");
    await post(`${FLEET}/clusterresourceplacements`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "team-namespace" },
      spec: { resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "team", selectionScope: "NamespaceOnly" }] },
    });
    await waitFor("the namespace placed", async () => {
      const crp = (await admin(hub, "GET", `${FLEET}/clusterresourceplacements/team-namespace`)).body;
      return cond(crp, "ClusterResourcePlacementAvailable")?.status === "True";
    });
    await post("/api/v1/namespaces/team/configmaps", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings" }, data: { mode: "blue" } });
    await post(`${FLEET}/namespaces/team/resourceplacements`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourcePlacement",
      metadata: { name: "app" },
      spec: { resourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "settings" }], strategy: { type: "External" } },
    });
    await post(`${FLEET}/namespaces/team/stagedupdatestrategies`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "StagedUpdateStrategy",
      metadata: { name: "two-stages" },
      spec: {
        stages: [
          { name: "canary", labelSelector: { matchLabels: { tier: "canary" } }, afterStageTasks: [{ type: "Approval" }] },
          { name: "prod", labelSelector: { matchLabels: { tier: "prod" } } },
        ],
      },
    });

    await user("dev");
    await user("viewer");
    // dev approves: update on the approval requests' status subresource, beside view.
    await post(`${RBAC}/namespaces/team/roles`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "approver" },
      rules: [{ apiGroups: ["placement.kubernetes-fleet.io"], resources: ["approvalrequests/status"], verbs: ["get", "update", "patch"] }],
    });
    await post(`${RBAC}/namespaces/team/rolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "dev-approver" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "approver" },
      subjects: [{ kind: "ServiceAccount", name: "dev", namespace: "team" }],
    });

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    for (const who of ["admin", "dev", "viewer"] as const) {
      pages[who] = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      pages[who].on("pageerror", (e) => errors.push(`${who}: ${e.message}`));
    }
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    for (const a of agents) await stopAgent(a);
    await hub?.stop();
  });

  it("shows a run mid-change: the canary updated, prod waiting on an approval only dev and the admin may give", async () => {
    await signIn(pages.admin, hub.adminToken, "flotilla:admin");
    await signIn(pages.dev, tokens.dev!, "system:serviceaccount:team:dev");
    await signIn(pages.viewer, tokens.viewer!, "system:serviceaccount:team:viewer");
    for (const p of Object.values(pages)) await p.evaluate(`location.hash = "#/updateruns/team/run-1"`);
    // The run is created while the pages are open (they wait for it).
    await post(`${FLEET}/namespaces/team/stagedupdateruns`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "StagedUpdateRun",
      metadata: { name: "run-1" },
      spec: { placementName: "app", stagedRolloutStrategyName: "two-stages", state: "Run" },
    });
    for (const [who, p] of Object.entries(pages)) {
      await stage(p, "canary", "Waiting").waitFor({ timeout: ON_PAGE_MS });
      await p.locator('[data-stage="canary"] tr[data-cluster="canary-1"][data-cluster-state="Succeeded"]').waitFor({ timeout: ON_PAGE_MS });
      await p.locator('[data-stage="prod"] tr[data-cluster="prod-1"][data-cluster-state="Pending"]').waitFor({ timeout: ON_PAGE_MS });
      expect(await stage(p, "prod", "NotStarted").count(), who).toBe(1);
      await p.locator('[data-approval="run-1-after-canary"]').waitFor({ timeout: ON_PAGE_MS });
      await p.locator('[data-task="after/Approval"][data-task-state="Waiting"]').waitFor({ timeout: ON_PAGE_MS });
      expect(await p.locator("[data-run-state]").textContent()).toBe("Run");
    }
    expect(onCluster("canary-1")).toEqual({ mode: "blue" });
    expect(onCluster("prod-1")).toBeUndefined();
    // Who may approve: an Approve button for the admin and dev, a note for the viewer.
    for (const who of ["admin", "dev"] as const)
      await pages[who].locator('[data-can-approve="true"] [data-approve="run-1-after-canary"]').waitFor({ timeout: ON_PAGE_MS });
    await pages.viewer.locator('[data-can-approve="false"]').waitFor({ timeout: ON_PAGE_MS });
    expect(await pages.viewer.locator("[data-approve]").count()).toBe(0);
    expect(await pages.viewer.locator('[data-approval="run-1-after-canary"]').textContent()).toContain("Approving needs update on approvalrequests/status");
    await shoot("updaterun-waiting-admin", pages.admin);
    await shoot("updaterun-waiting-viewer", pages.viewer);
  });

  it("dev approves on the page: every page comes to rest with both stages Succeeded", async () => {
    await pages.dev.locator('[data-approve="run-1-after-canary"]').click();
    for (const p of Object.values(pages)) {
      await stage(p, "prod", "Succeeded").waitFor({ timeout: ON_PAGE_MS });
      await stage(p, "canary", "Succeeded").waitFor({ timeout: ON_PAGE_MS });
      await p.locator('[data-view="updaterun"] h1 [data-state="True"]').waitFor({ timeout: ON_PAGE_MS });
      await p.locator('[data-approvals="0"]').waitFor({ timeout: ON_PAGE_MS });
      await p.locator('[data-task="after/Approval"][data-task-state="Approved"]').waitFor({ timeout: ON_PAGE_MS });
    }
    await waitFor("the ConfigMap on prod-1", async () => onCluster("prod-1")?.mode === "blue", ON_PAGE_MS);
    // The approval names who gave it, as `flotilla approve` does.
    const request = (await admin(hub, "GET", `${FLEET}/namespaces/team/approvalrequests/run-1-after-canary`)).body;
    expect(cond(request, "Approved")).toMatchObject({
      status: "True",
      reason: "ApprovedOnDashboard",
      message: "approved by system:serviceaccount:team:dev with the Flotilla dashboard",
    });
    await shoot("updaterun-done-dev", pages.dev);
  });

  it("lists the run for the admin and for dev in their namespace", async () => {
    for (const who of ["admin", "dev"] as const) {
      const p = pages[who];
      await p.evaluate(`location.hash = "#/updateruns"`);
      const row = p.locator('[data-view="updateruns"] tr[data-run="team/run-1"]');
      await row.waitFor({ timeout: ON_PAGE_MS });
      await row.locator('[data-state="True"]').first().waitFor({ timeout: ON_PAGE_MS });
      expect(await row.locator("td").nth(1).textContent(), who).toBe("app");
    }
    // The viewer's list has no cluster-scoped runs (it may not list across namespaces).
    await pages.viewer.evaluate(`location.hash = "#/updateruns"`);
    await pages.viewer.getByText("Cluster-scoped: shown to users who may list across namespaces.").waitFor({ timeout: ON_PAGE_MS });
    await shoot("updateruns-list", pages.admin);
    expect(errors).toEqual([]);
  });
});
