/**
 * `flotilla placement status` against a real hub (`wrangler dev`): a ClusterResourcePlacement
 * PickN 2 of 3 ManagedClusters, one cluster's work reported Applied and Available (as its agent
 * would), the other not yet; a ResourcePlacement PickFixed naming a cluster that does not exist.
 * The tables (conditions, selected resources, one row per cluster), `-o json` and `-o yaml`, and
 * the failures (no such placement, with a hint; a bad -o).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { admin, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { createAvailableCluster, merge, waitFor } from "../e2e/support.ts";
import { flotilla } from "./support.ts";

const G = "/apis/placement.kubernetes-fleet.io/v1";
const WORKS = "/apis/work.open-cluster-management.io/v1";

describe("flotilla placement status (real hub)", () => {
  let hub: Hub;
  let reported: string;
  let waiting: string;

  beforeAll(async () => {
    hub = await startHub();
    for (const name of ["m1", "m2", "m3"]) {
      await createAvailableCluster(hub, name, { env: name === "m3" ? "dev" : "prod" });
    }
    await createNamespaces(hub, "shop", "team");
    const cm = await admin(hub, "POST", "/api/v1/namespaces/shop/configmaps", {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "menu" },
      data: { soup: "tomato" },
    });
    expect(cm.status).toBe(201);
    const crp = await admin(hub, "POST", `${G}/clusterresourceplacements`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "shop" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "shop" }],
        policy: {
          placementType: "PickN",
          numberOfClusters: 2,
          affinity: {
            clusterAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { env: "prod" } } }] },
            },
          },
        },
      },
    });
    expect(crp.status, JSON.stringify(crp.body)).toBe(201);
    // One agent's report: m1's work Applied and Available at its generation; m2's agent has not reported.
    reported = "m1";
    waiting = "m2";
    const work = `${WORKS}/namespaces/${reported}/manifestworks/shop-work`;
    await waitFor("shop's work in m1", async () => {
      if ((await admin(hub, "GET", work)).status === 200) return true;
      throw new Error(JSON.stringify((await admin(hub, "GET", `${G}/clusterresourceplacements/shop`)).body.status));
    });
    const gen = (await admin(hub, "GET", work)).body.metadata.generation;
    const at = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    const c = (type: string) => ({ type, status: "True", observedGeneration: gen, reason: "Test", message: "", lastTransitionTime: at });
    expect((await admin(hub, "PATCH", `${work}/status`, { status: { conditions: [c("Applied"), c("Available")] } }, merge)).status).toBe(200);
    await waitFor("m1 Available in the placement's status", async () => {
      const s = (await admin(hub, "GET", `${G}/clusterresourceplacements/shop`)).body.status;
      const m1 = (s?.placementStatuses ?? []).find((p: { clusterName?: string }) => p.clusterName === "m1");
      return (m1?.conditions ?? []).some((x: { type: string; status: string }) => x.type === "Available" && x.status === "True");
    });
    const settings = await admin(hub, "POST", "/api/v1/namespaces/team/configmaps", {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "settings" },
      data: { mode: "blue" },
    });
    expect(settings.status).toBe(201);
    const rp = await admin(hub, "POST", `${G}/namespaces/team/resourceplacements`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourcePlacement",
      metadata: { name: "fixed" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "settings" }],
        policy: { placementType: "PickFixed", clusterNames: ["m3", "gone"] },
      },
    });
    expect(rp.status, JSON.stringify(rp.body)).toBe(201);
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it("prints a ClusterResourcePlacement's conditions, selected resources and per-cluster table", async () => {
    const r = await flotilla(["placement", "status", "shop"], { hub });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toBe("ClusterResourcePlacement shop: generation 1, policy PickN 2, resource index 0");
    expect(r.stdout).toMatch(/^Scheduled\s+True\s+SchedulingPolicyFulfilled\s+1\s+\S+$/m);
    expect(r.stdout).toMatch(/^Applied\s+Unknown\s+ApplyPending\s+1\s/m);
    // The namespace with its content (selectionScope NamespaceWithResources), in apply order.
    expect(r.stdout).toContain("Selected resources (2):\n");
    expect(r.stdout).toMatch(/^KIND\s+NAMESPACE\s+NAME\s+APIVERSION\s+ENVELOPE\nNamespace\s+-\s+shop\s+v1\s+-\nConfigMap\s+shop\s+menu\s+v1\s+-$/m);
    expect(r.stdout).toContain("Clusters (2):\n");
    expect(r.stdout).toMatch(/^CLUSTER\s+SCHEDULED\s+ROLLOUT\s+APPLIED\s+AVAILABLE\s+FAILED\s+DRIFTED\s+INDEX\s+WAITING$/m);
    expect(r.stdout).toMatch(new RegExp(`^${reported}\\s+True\\s+True\\s+True\\s+True\\s+0\\s+0\\s+0\\s+-$`, "m"));
    expect(r.stdout).toMatch(new RegExp(`^${waiting}\\s+True\\s+True\\s+Unknown\\s+-\\s+0\\s+0\\s+0\\s+Applied: ApplyPending$`, "m"));
    // m3 (env=dev) is not one of them.
    expect(r.stdout).not.toMatch(/^m3\s/m);
    expect(r.stderr).toBe("");
  });

  it("prints the same as data with -o json and -o yaml", async () => {
    const r = await flotilla(["placement", "status", "shop", "-o", "json"], { hub });
    expect(r.code, r.stderr).toBe(0);
    const s = JSON.parse(r.stdout);
    expect(s).toMatchObject({
      kind: "ClusterResourcePlacement",
      name: "shop",
      generation: 1,
      placementType: "PickN",
      numberOfClusters: 2,
      observedResourceIndex: "0",
      selectedResources: [
        { version: "v1", kind: "Namespace", name: "shop" },
        { version: "v1", kind: "ConfigMap", namespace: "shop", name: "menu" },
      ],
    });
    expect(s.namespace).toBeUndefined();
    expect(s.conditions.map((c: { type: string }) => c.type)).toEqual(["Scheduled", "RolloutStarted", "Overridden", "WorkSynchronized", "Applied"]);
    expect(s.clusters).toEqual([
      {
        cluster: reported,
        scheduled: "True",
        rolloutStarted: "True",
        workSynchronized: "True",
        applied: "True",
        available: "True",
        failed: 0,
        drifted: 0,
        observedResourceIndex: "0",
        waiting: null,
        message: null,
      },
      {
        cluster: waiting,
        scheduled: "True",
        rolloutStarted: "True",
        workSynchronized: "True",
        applied: "Unknown",
        available: "-",
        failed: 0,
        drifted: 0,
        observedResourceIndex: "0",
        waiting: "Applied: ApplyPending",
        message: "In the process of applying the resources on the member cluster",
      },
    ]);
    const y = await flotilla(["placement", "status", "shop", "-o", "yaml"], { hub });
    expect(y.code, y.stderr).toBe(0);
    expect(parseYaml(y.stdout)).toEqual(s);
  });

  it("prints a ResourcePlacement with -n, a cluster not found as (none)", async () => {
    const r = await flotilla(["placement", "status", "fixed", "-n", "team"], { hub });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split("\n")[0]).toBe("ResourcePlacement team/fixed: generation 1, policy PickFixed, resource index 0");
    expect(r.stdout).toMatch(/^Scheduled\s+False\s+SchedulingPolicyUnfulfilled\s+1\s/m);
    expect(r.stdout).toContain("Selected resources (1):\n");
    expect(r.stdout).toMatch(/^ConfigMap\s+team\s+settings\s+v1\s+-$/m);
    expect(r.stdout).toContain("Clusters (1 of 2 wanted):\n");
    expect(r.stdout).toMatch(/^m3\s+True\s+True\s+Unknown\s+-\s+0\s+0\s+0\s+Applied: ApplyPending$/m);
    expect(r.stdout).toMatch(/^\(none\)\s+False\s+-\s+-\s+-\s+0\s+0\s+-\s+Scheduled: ScheduleFailed$/m);
    const j = JSON.parse((await flotilla(["placement", "status", "fixed", "-n", "team", "-o", "json"], { hub })).stdout);
    expect(j).toMatchObject({ kind: "ResourcePlacement", namespace: "team", name: "fixed" });
    expect(j.clusters[1]).toMatchObject({ cluster: null, scheduled: "False", message: 'Specified cluster "gone" is not found' });
  });

  it("fails with a hint for a placement that does not exist, and with usage errors", async () => {
    const missing = await flotilla(["placement", "status", "nope"], { hub });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toContain('Error: clusterresourceplacements.placement.kubernetes-fleet.io "nope" not found');
    expect(missing.stderr).toContain("Hint: no ClusterResourcePlacement nope; list them with `kubectl get crp` (a ResourcePlacement needs -n NAMESPACE)");
    // The RP exists in team, not as a ClusterResourcePlacement.
    const rpWithoutNs = await flotilla(["placement", "status", "fixed"], { hub });
    expect(rpWithoutNs.code).toBe(1);
    const wrongNs = await flotilla(["placement", "status", "fixed", "-n", "shop"], { hub });
    expect(wrongNs.code).toBe(1);
    expect(wrongNs.stderr).toContain("Hint: no ResourcePlacement fixed in namespace shop; list them with `kubectl get rp -n shop`");
    const badOutput = await flotilla(["placement", "status", "shop", "-o", "wide"], { hub });
    expect(badOutput.code).toBe(2);
    const noName = await flotilla(["placement", "status"], { hub });
    expect(noName.code).toBe(2);
  });
});
