/**
 * `flotilla placement render` against a real hub (`wrangler dev`): a ClusterResourcePlacement
 * puts namespace `shop` (a ConfigMap `menu`) on the clusters with a `region` label, and a
 * ResourceOverride sets the soup per region. The dry run for one cluster prints the override
 * snapshot applied and the objects as YAML, exactly the manifests of that cluster's work
 * (`-o json|yaml`: the hub's whole answer); for a cluster without the label, the override's
 * failure; the failures (no such cluster, with a hint; no --cluster).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { admin, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { createAvailableCluster, waitFor } from "../e2e/support.ts";
import { flotilla } from "./support.ts";

const G = "/apis/placement.kubernetes-fleet.io/v1";
const WORK = (cluster: string) => `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks/shop-work`;

describe("flotilla placement render (real hub)", () => {
  let hub: Hub;

  beforeAll(async () => {
    hub = await startHub();
    for (const [name, labels] of [
      ["r1", { region: "eu" }],
      ["r2", { region: "us" }],
      ["r3", {}],
    ] as const) {
      await createAvailableCluster(hub, name, labels);
    }
    await createNamespaces(hub, "shop");
    const cm = await admin(hub, "POST", "/api/v1/namespaces/shop/configmaps", {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "menu" },
      data: { soup: "tomato" },
    });
    expect(cm.status).toBe(201);
    const ro = await admin(hub, "POST", `${G}/namespaces/shop/resourceoverrides`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourceOverride",
      metadata: { name: "menu" },
      spec: {
        placement: { name: "shop" },
        resourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "menu" }],
        policy: {
          overrideRules: [
            {
              clusterSelector: { clusterSelectorTerms: [] },
              jsonPatchOverrides: [{ op: "replace", path: "/data/soup", value: "${MEMBER-CLUSTER-LABEL-KEY-region}-soup" }],
            },
          ],
        },
      },
    });
    expect(ro.status, JSON.stringify(ro.body)).toBe(201);
    const crp = await admin(hub, "POST", `${G}/clusterresourceplacements`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "shop" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "shop" }],
        policy: {
          placementType: "PickAll",
          affinity: {
            clusterAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                clusterSelectorTerms: [{ labelSelector: { matchExpressions: [{ key: "region", operator: "Exists" }] } }],
              },
            },
          },
        },
      },
    });
    expect(crp.status, JSON.stringify(crp.body)).toBe(201);
    await waitFor("shop's work in r1", async () => (await admin(hub, "GET", WORK("r1"))).status === 200);
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it("prints the overrides applied and the objects as the cluster's work carries them", async () => {
    const r = await flotilla(["placement", "render", "shop", "--cluster", "r1"], { hub });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toBe("ClusterResourcePlacement shop rendered for cluster r1");
    expect(lines[1]).toBe("Overrides applied: ResourceOverrideSnapshot shop/menu-0");
    expect(r.stdout).toContain("# work shop-work\n");
    const docs = parseAllDocuments(r.stdout.slice(r.stdout.indexOf("---"))).map((d) => d.toJSON());
    const work = (await admin(hub, "GET", WORK("r1"))).body;
    expect(docs).toEqual(work.spec.workload.manifests);
    expect(docs.find((d) => d.kind === "ConfigMap").data).toEqual({ soup: "eu-soup" });
    expect(r.stderr).toBe("");
  });

  it("prints the hub's whole answer with -o json and -o yaml", async () => {
    const j = await flotilla(["placement", "render", "shop", "--cluster", "r2", "-o", "json"], { hub });
    expect(j.code, j.stderr).toBe(0);
    const s = JSON.parse(j.stdout);
    expect(s).toMatchObject({
      kind: "PlacementRender",
      placement: { kind: "ClusterResourcePlacement", name: "shop" },
      cluster: "r2",
      scheduled: true,
      clusterResourceOverrides: [],
      resourceOverrides: [{ name: "menu-0", namespace: "shop" }],
    });
    expect(s.template.find((o: { kind: string }) => o.kind === "ConfigMap").data).toEqual({ soup: "tomato" });
    expect(s.objects.find((o: { kind: string }) => o.kind === "ConfigMap").data).toEqual({ soup: "us-soup" });
    await waitFor("shop's work in r2", async () => (await admin(hub, "GET", WORK("r2"))).status === 200);
    expect(s.works).toEqual([{ name: "shop-work", spec: (await admin(hub, "GET", WORK("r2"))).body.spec }]);
    const y = await flotilla(["placement", "render", "shop", "--cluster", "r2", "-o", "yaml"], { hub });
    expect(y.code, y.stderr).toBe(0);
    expect(parseYaml(y.stdout)).toEqual(s);
  });

  it("prints why an override fails for a cluster (not scheduled there)", async () => {
    const r = await flotilla(["placement", "render", "shop", "--cluster", "r3"], { hub });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      "ClusterResourcePlacement shop rendered for cluster r3 (not scheduled there: shown as it would be)\n" +
        "Overrides applied: ResourceOverrideSnapshot shop/menu-0\n" +
        'Failed: ResourceOverrideSnapshot "menu-0" failed to apply on ConfigMap "menu" in namespace "shop": label key region not found on cluster r3\n' +
        "Nothing is rendered for the cluster; it keeps the works it had.\n",
    );
  });

  it("fails with a hint for a cluster that does not exist, and with usage errors", async () => {
    const missing = await flotilla(["placement", "render", "shop", "--cluster", "nowhere"], { hub });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toContain('Error: managedclusters.cluster.open-cluster-management.io "nowhere" not found');
    expect(missing.stderr).toContain("Hint: no such ClusterResourcePlacement shop, or no ManagedCluster nowhere");
    const noPlacement = await flotilla(["placement", "render", "shop", "-n", "shop", "--cluster", "r1"], { hub });
    expect(noPlacement.code).toBe(1);
    expect(noPlacement.stderr).toContain('resourceplacements.placement.kubernetes-fleet.io "shop" not found');
    const noCluster = await flotilla(["placement", "render", "shop"], { hub });
    expect(noCluster.code).toBe(2);
    expect(noCluster.stderr).toContain("--cluster");
  });

  it("renders a ManifestWorkReplicaSet for one cluster (flotilla replicaset render)", async () => {
    const W = "/apis/work.open-cluster-management.io/v1alpha1/namespaces/shop/manifestworkreplicasets";
    const rs = await admin(hub, "POST", W, {
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name: "menu" },
      spec: {
        placementRefs: [{ name: "nowhere" }],
        manifestWorkTemplate: {
          workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "menu", namespace: "default" }, data: { soup: "tomato" } }] },
        },
      },
    });
    expect(rs.status, JSON.stringify(rs.body)).toBe(201);
    const ro = await admin(hub, "POST", `${G}/namespaces/shop/resourceoverrides`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourceOverride",
      metadata: { name: "rs-menu" },
      spec: {
        placement: { name: "menu", scope: "ManifestWorkReplicaSet" },
        resourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "menu" }],
        policy: {
          overrideRules: [
            {
              clusterSelector: { clusterSelectorTerms: [] },
              jsonPatchOverrides: [{ op: "replace", path: "/data/soup", value: "${MEMBER-CLUSTER-NAME}-soup" }],
            },
          ],
        },
      },
    });
    expect(ro.status, JSON.stringify(ro.body)).toBe(201);
    const r = await flotilla(["replicaset", "render", "menu", "-n", "shop", "--cluster", "r1"], { hub });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      "ManifestWorkReplicaSet shop/menu rendered for cluster r1 (not scheduled there: shown as it would be)\n" +
        "Overrides applied: ResourceOverrideSnapshot shop/rs-menu-0\n" +
        "---\n# work shop.menu\n" +
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: menu\n  namespace: default\ndata:\n  soup: r1-soup\n",
    );
    const j = await flotilla(["replicaset", "render", "menu", "-n", "shop", "--cluster", "r2", "-o", "json"], { hub });
    expect(j.code, j.stderr).toBe(0);
    expect(JSON.parse(j.stdout)).toMatchObject({
      kind: "PlacementRender",
      placement: { kind: "ManifestWorkReplicaSet", namespace: "shop", name: "menu" },
      cluster: "r2",
    });
    const missing = await flotilla(["replicaset", "render", "nothing", "-n", "shop", "--cluster", "r1"], { hub });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("Hint: no ManifestWorkReplicaSet nothing in namespace shop");
    expect((await flotilla(["replicaset", "render", "menu", "--cluster", "r1"], { hub })).code).toBe(2);
  });

  it("renders a template add-on for one cluster (flotilla addon render)", async () => {
    const A = "/apis/addon.open-cluster-management.io/v1alpha1";
    const t = await admin(hub, "POST", `${A}/addontemplates`, {
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
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    const cma = await admin(hub, "POST", `${A}/clustermanagementaddons`, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "greeter" },
      spec: { supportedConfigs: [{ group: "addon.open-cluster-management.io", resource: "addontemplates", defaultConfig: { name: "greeter" } }] },
    });
    expect(cma.status, JSON.stringify(cma.body)).toBe(201);
    const cro = await admin(hub, "POST", `${G}/clusterresourceoverrides`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourceOverride",
      metadata: { name: "greeter" },
      spec: {
        placement: { name: "greeter", scope: "ClusterManagementAddOn" },
        clusterResourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "greeter" }],
        policy: {
          overrideRules: [
            { clusterSelector: { clusterSelectorTerms: [] }, jsonPatchOverrides: [{ op: "replace", path: "/data/hello", value: "${MEMBER-CLUSTER-NAME}" }] },
          ],
        },
      },
    });
    expect(cro.status, JSON.stringify(cro.body)).toBe(201);
    const r = await flotilla(["addon", "render", "greeter", "--cluster", "r1"], { hub });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      "ClusterManagementAddOn greeter rendered for cluster r1 (not scheduled there: shown as it would be)\n" +
        "Overrides applied: ClusterResourceOverrideSnapshot greeter-0\n" +
        "---\n# work addon-greeter-deploy-0\n" +
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: open-cluster-management-agent-addon\n" +
        "---\n# work addon-greeter-deploy-0\n" +
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeter\n  namespace: open-cluster-management-agent-addon\ndata:\n  hello: r1\n",
    );
    const j = await flotilla(["addon", "render", "greeter", "--cluster", "r2", "-o", "json"], { hub });
    expect(j.code, j.stderr).toBe(0);
    const body = JSON.parse(j.stdout);
    expect(body).toMatchObject({ kind: "PlacementRender", placement: { kind: "ClusterManagementAddOn", name: "greeter" }, cluster: "r2" });
    expect(body.template[1].data).toEqual({ hello: "world" });
    expect(body.objects[1].data).toEqual({ hello: "r2" });
    const missing = await flotilla(["addon", "render", "nothing", "--cluster", "r1"], { hub });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("Hint: no ClusterManagementAddOn nothing");
    const noCluster = await flotilla(["addon", "render", "greeter", "--cluster", "nowhere"], { hub });
    expect(noCluster.code).toBe(1);
    expect(noCluster.stderr).toContain("not found");
    expect((await flotilla(["addon", "render", "greeter"], { hub })).code).toBe(2);
  });
});
