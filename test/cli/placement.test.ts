/**
 * `flotilla clusterset create|set|bind`, `get placements`, `get decisions` and `get works`
 * against a real hub (`wrangler dev`): success and failure output of each.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { admin, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { MC, waitFor } from "../e2e/support.ts";
import { flotilla } from "./support.ts";

const V1BETA1 = "/apis/cluster.open-cluster-management.io/v1beta1";
const V1BETA2 = "/apis/cluster.open-cluster-management.io/v1beta2";
const UNREACHABLE = "cluster.open-cluster-management.io/unreachable";

describe("flotilla: clustersets, placements, decisions and works (real hub)", () => {
  let hub: Hub;

  beforeAll(async () => {
    hub = await startHub();
    for (const name of ["east1", "east2", "west1"]) {
      const r = await admin(hub, "POST", MC, {
        apiVersion: "cluster.open-cluster-management.io/v1",
        kind: "ManagedCluster",
        metadata: { name, labels: { gpu: name === "west1" ? "true" : "false" } },
        spec: {},
      });
      expect(r.status).toBe(201);
    }
  });

  afterAll(async () => {
    await hub?.stop();
  });

  describe("clusterset", () => {
    it("create makes an ExclusiveClusterSetLabel set and says what to do next", async () => {
      const r = await flotilla(["clusterset", "create", "east"], { hub });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("clusterset east created");
      expect(r.stdout).toContain("flotilla clusterset set east --clusters c1,c2");
      expect(r.stdout).toContain("flotilla clusterset bind east --namespace NS");
      const set = (await admin(hub, "GET", `${V1BETA2}/managedclustersets/east`)).body;
      expect(set.spec.clusterSelector).toEqual({ selectorType: "ExclusiveClusterSetLabel" });
    });

    it("create --selector makes a LabelSelector set", async () => {
      const r = await flotilla(["clusterset", "create", "gpus", "--selector", "gpu=true"], { hub });
      expect(r.code, r.stderr).toBe(0);
      const set = (await admin(hub, "GET", `${V1BETA2}/managedclustersets/gpus`)).body;
      expect(set.spec.clusterSelector).toEqual({ selectorType: "LabelSelector", labelSelector: { matchLabels: { gpu: "true" } } });
    });

    it("create fails: an existing set (409 with a hint), bad selector flags (exit 2)", async () => {
      const r = await flotilla(["clusterset", "create", "east"], { hub });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`Error: managedclustersets.cluster.open-cluster-management.io "east" already exists`);
      expect(r.stderr).toContain("Hint: clusterset east exists already; add clusters with `flotilla clusterset set east --clusters ...`");
      const mixed = await flotilla(["clusterset", "create", "x", "--selector-type", "ExclusiveClusterSetLabel", "--selector", "a=b"], { hub });
      expect(mixed.code).toBe(2);
      expect(mixed.stderr).toContain("error: --selector needs --selector-type LabelSelector");
      const badType = await flotilla(["clusterset", "create", "x", "--selector-type", "Nope"], { hub });
      expect(badType.code).toBe(2);
      const badSel = await flotilla(["clusterset", "create", "x", "--selector", "novalue"], { hub });
      expect(badSel.code).toBe(2);
      expect(badSel.stderr).toContain(`"novalue" is not key=value`);
      const invalidName = await flotilla(["clusterset", "create", "Not_A_Name"], { hub });
      expect(invalidName.code).toBe(1);
      expect(invalidName.stderr).toMatch(/^Error: /);
    });

    it("set labels clusters into the set", async () => {
      const r = await flotilla(["clusterset", "set", "east", "--clusters", "east1,east2"], { hub });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe("cluster east1 is in clusterset east\ncluster east2 is in clusterset east\n");
      for (const name of ["east1", "east2"]) {
        expect((await admin(hub, "GET", `${MC}/${name}`)).body.metadata.labels["cluster.open-cluster-management.io/clusterset"]).toBe("east");
      }
    });

    it("set fails: unknown set, unknown cluster, a LabelSelector set, no --clusters", async () => {
      const noSet = await flotilla(["clusterset", "set", "nosuch", "--clusters", "east1"], { hub });
      expect(noSet.code).toBe(1);
      expect(noSet.stderr).toContain("Hint: no such clusterset; create it with `flotilla clusterset create nosuch`");
      const noCluster = await flotilla(["clusterset", "set", "east", "--clusters", "nosuch"], { hub });
      expect(noCluster.code).toBe(1);
      expect(noCluster.stderr).toContain("Hint: no such cluster; list them with `flotilla get clusters`");
      const selector = await flotilla(["clusterset", "set", "gpus", "--clusters", "east1"], { hub });
      expect(selector.code).toBe(1);
      expect(selector.stderr).toContain("Error: clusterset gpus selects clusters with a label selector");
      const missing = await flotilla(["clusterset", "set", "east"], { hub });
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain("required option '--clusters <names>' not specified");
    });

    it("bind creates the ManagedClusterSetBinding once the namespace exists; binding again is fine", async () => {
      const early = await flotilla(["clusterset", "bind", "east", "--namespace", "apps"], { hub });
      expect(early.code).toBe(1);
      expect(early.stderr).toContain('namespaces "apps" not found');
      expect(early.stderr).toContain("Hint: namespace apps does not exist; create it first with `kubectl create namespace apps`");
      await createNamespaces(hub, "apps");
      const r = await flotilla(["clusterset", "bind", "east", "--namespace", "apps"], { hub });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("clusterset east bound to namespace apps");
      const b = (await admin(hub, "GET", `${V1BETA2}/namespaces/apps/managedclustersetbindings/east`)).body;
      expect(b.spec.clusterSet).toBe("east");
      const again = await flotilla(["clusterset", "bind", "east", "-n", "apps"], { hub });
      expect(again.code).toBe(0);
      expect(again.stdout).toContain("clusterset east is already bound to namespace apps");
    });

    it("bind fails: unknown set (404 with a hint), no --namespace (exit 2), a bad namespace (400)", async () => {
      const r = await flotilla(["clusterset", "bind", "nosuch", "-n", "apps"], { hub });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("Hint: no such clusterset; create it with `flotilla clusterset create nosuch`");
      const noNs = await flotilla(["clusterset", "bind", "east"], { hub });
      expect(noNs.code).toBe(2);
      const badNs = await flotilla(["clusterset", "bind", "east", "-n", "Bad_NS"], { hub });
      expect(badNs.code).toBe(1);
      expect(badNs.stderr).toContain(`Error: invalid namespace "Bad_NS"`);
    });
  });

  describe("get placements and decisions", () => {
    beforeAll(async () => {
      const placement = (name: string, n: number) => ({
        apiVersion: "cluster.open-cluster-management.io/v1beta1",
        kind: "Placement",
        metadata: { name, namespace: "apps" },
        spec: { numberOfClusters: n, clusterSets: ["east"], tolerations: [{ key: UNREACHABLE, operator: "Exists" }] },
      });
      expect((await admin(hub, "POST", `${V1BETA1}/namespaces/apps/placements`, placement("two", 2))).status).toBe(201);
      expect((await admin(hub, "POST", `${V1BETA1}/namespaces/apps/placements`, placement("three", 3))).status).toBe(201);
      await waitFor("decisions of both placements", async () => {
        const r = await admin(hub, "GET", `${V1BETA1}/namespaces/apps/placementdecisions`);
        return r.body.items.length >= 2;
      });
    });

    it("get placements -n shows satisfied, reason and selected count", async () => {
      const r = await flotilla(["get", "placements", "-n", "apps"], { hub });
      expect(r.code, r.stderr).toBe(0);
      const lines = r.stdout.trim().split("\n");
      expect(lines[0]).toMatch(/^NAME\s+SATISFIED\s+REASON\s+SELECTED\s+AGE$/);
      expect(lines.find((l) => l.startsWith("two "))).toMatch(/^two\s+True\s+AllDecisionsScheduled\s+2\s+\d+s$/);
      expect(lines.find((l) => l.startsWith("three "))).toMatch(/^three\s+False\s+NotAllDecisionsScheduled\s+2\s+\d+s$/);
    });

    it("get placements -A adds NAMESPACE; the default namespace is `default`; -o yaml prints the list", async () => {
      const all = await flotilla(["get", "placements", "-A"], { hub });
      expect(all.stdout.split("\n")[0]).toMatch(/^NAMESPACE\s+NAME\s+SATISFIED/);
      expect(all.stdout).toMatch(/apps\s+two\s+True/);
      const def = await flotilla(["get", "placements"], { hub });
      expect(def.code).toBe(0);
      expect(def.stderr).toBe("No placements found in namespace default.\n");
      const y = parseYaml((await flotilla(["get", "placements", "-n", "apps", "two", "-o", "yaml"], { hub })).stdout);
      expect(y.kind).toBe("Placement");
      expect(y.status.numberOfSelectedClusters).toBe(2);
    });

    it("get placements fails: unknown name (404 hint), -A with -n or a name (exit 2)", async () => {
      const r = await flotilla(["get", "placements", "-n", "apps", "nosuch"], { hub });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("Hint: no such placement in that namespace; list them with `flotilla get placements -A`");
      const both = await flotilla(["get", "placements", "-A", "-n", "apps"], { hub });
      expect(both.code).toBe(2);
      expect(both.stderr).toContain("error: -A and -n exclude each other");
      const named = await flotilla(["get", "placements", "-A", "two"], { hub });
      expect(named.code).toBe(2);
      expect(named.stderr).toContain("needs a namespace");
    });

    it("get decisions shows placement, group and clusters; --placement filters; -o json", async () => {
      const r = await flotilla(["get", "decisions", "-n", "apps", "--placement", "two"], { hub });
      expect(r.code, r.stderr).toBe(0);
      const lines = r.stdout.trim().split("\n");
      expect(lines[0]).toMatch(/^NAME\s+PLACEMENT\s+GROUP\s+CLUSTERS$/);
      expect(lines).toHaveLength(2);
      expect(lines[1]).toMatch(/^two-decision-1\s+two\s+0\s+(east1,east2|east2,east1)$/);
      const all = await flotilla(["get", "decisions", "-A"], { hub });
      expect(all.stdout).toMatch(/apps\s+three-decision-1\s+three/);
      const json = JSON.parse((await flotilla(["get", "decisions", "-n", "apps", "-o", "json"], { hub })).stdout);
      expect(json.kind).toBe("PlacementDecisionList");
      expect(json.items).toHaveLength(2);
    });

    it("get decisions fails: a bad namespace (400 with a hint), a bad -o (exit 2); none found is not a failure", async () => {
      const r = await flotilla(["get", "decisions", "-n", "Bad_NS"], { hub });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`Error: invalid namespace "Bad_NS"`);
      expect(r.stderr).toContain("Hint: fix the value named above");
      const o = await flotilla(["get", "decisions", "-o", "table"], { hub });
      expect(o.code).toBe(2);
      const none = await flotilla(["get", "decisions", "--placement", "nosuch", "-n", "apps"], { hub });
      expect(none.code).toBe(0);
      expect(none.stderr).toBe("No placement decisions found in namespace apps.\n");
    });
  });

  describe("get works", () => {
    it("lists a cluster's ManifestWorks and all clusters' works; an unknown work fails with a hint", async () => {
      const works = "/apis/work.open-cluster-management.io/v1/namespaces/east1/manifestworks";
      const manifests = [
        { apiVersion: "v1", kind: "Namespace", metadata: { name: "shop" } },
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg", namespace: "shop" }, data: { a: "1" } },
      ];
      const w = { apiVersion: "work.open-cluster-management.io/v1", kind: "ManifestWork", metadata: { name: "shop" }, spec: { workload: { manifests } } };
      expect((await admin(hub, "POST", works, w)).status).toBe(201);
      const r = await flotilla(["get", "works", "--cluster", "east1"], { hub });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^NAME\s+MANIFESTS\s+APPLIED\s+AVAILABLE\s+AGE\nshop\s+2\s+-\s+-\s+\d+s\n$/);
      const all = await flotilla(["get", "works", "-A"], { hub });
      expect(all.code, all.stderr).toBe(0);
      expect(all.stdout).toMatch(/east1\s+shop\s+2/);
      const missing = await flotilla(["get", "works", "nosuch", "--cluster", "east1"], { hub });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain("Hint: no such ManifestWork in that cluster's namespace; list them with `flotilla get works -A`");
    });
  });
});
