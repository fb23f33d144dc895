/**
 * `flotilla get addons|policies`: the tables' rows from OCM-shaped objects (pure), and the
 * command against a real hub (`wrangler dev`): add-ons per cluster, root policies with each
 * cluster's compliance, a cluster's replicated policies, errors with their hints.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderTable } from "../../agent/admin/output.ts";
import { addonView, compliancePerCluster, policyView } from "../../agent/admin/views.ts";
import type { KubeObject } from "../../agent/admin/resources.ts";
import { admin, startHub, type Hub } from "../../scripts/hub-process.ts";
import { flotilla } from "./support.ts";

const NOW = Date.parse("2026-11-26T12:00:00Z");

const mca = (cluster: string, name: string, conditions: { type: string; status: string; reason?: string }[], mode?: string): KubeObject => ({
  metadata: { name, namespace: cluster, creationTimestamp: "2026-11-26T11:00:00Z" },
  spec: {},
  status: { conditions, ...(mode ? { healthCheck: { mode } } : {}) },
});

describe("the add-on and policy tables", () => {
  it("shows each cluster's add-on with OCM's conditions, how its health is checked and why", () => {
    const rows = [
      mca("c1", "observability", [
        { type: "Available", status: "True", reason: "ManagedClusterAddOnLeaseUpdated" },
        { type: "Degraded", status: "False" },
        { type: "Progressing", status: "False" },
      ]),
      mca("c2", "observability", [{ type: "Available", status: "False", reason: "ManagedClusterAddOnLeaseUpdateStopped" }]),
      mca("c3", "backup", [], "Customized"),
    ];
    expect(addonView.headers(true)).toEqual(["CLUSTER", "NAME", "AVAILABLE", "DEGRADED", "PROGRESSING", "HEALTH", "REASON", "AGE"]);
    expect(rows.map((r) => addonView.row(r, NOW, true))).toEqual([
      ["c1", "observability", "True", "False", "False", "Lease", "ManagedClusterAddOnLeaseUpdated", "60m"],
      ["c2", "observability", "False", "-", "-", "Lease", "ManagedClusterAddOnLeaseUpdateStopped", "60m"],
      ["c3", "backup", "-", "-", "-", "Customized", "-", "60m"],
    ]);
    expect(addonView.row(rows[0]!, NOW, false)[0]).toBe("observability");
  });

  it("shows a root policy's compliance and each cluster's, Pending for a cluster not reported yet", () => {
    const root: KubeObject = {
      metadata: { name: "policy-namespace", namespace: "policies", creationTimestamp: "2026-11-26T11:58:00Z" },
      spec: { remediationAction: "inform", disabled: false },
      status: {
        compliant: "NonCompliant",
        status: [
          { clustername: "c2", clusternamespace: "c2", compliant: "NonCompliant" },
          { clustername: "c1", clusternamespace: "c1", compliant: "Compliant" },
          { clustername: "c3", clusternamespace: "c3" },
        ],
      },
    } as KubeObject;
    expect(compliancePerCluster(root)).toBe("c1=Compliant,c2=NonCompliant,c3=Pending");
    expect(policyView.row(root, NOW, true)).toEqual(["policies", "policy-namespace", "inform", "false", "NonCompliant", "c1=Compliant,c2=NonCompliant,c3=Pending", "2m"]);
    const copy: KubeObject = {
      metadata: { name: "policies.policy-namespace", namespace: "c1", labels: { "policy.open-cluster-management.io/root-policy": "policies.policy-namespace" } },
      spec: { remediationAction: "enforce", disabled: true },
      status: { compliant: "Compliant" },
    } as KubeObject;
    expect(policyView.row(copy, NOW, false)).toEqual(["policies.policy-namespace", "enforce", "true", "Compliant", "(copy of policies.policy-namespace)", "-"]);
    const fresh: KubeObject = { metadata: { name: "p" }, spec: {} };
    expect(policyView.row(fresh, NOW, false)).toEqual(["p", "-", "false", "-", "-", "-"]);
    expect(renderTable(policyView.headers(false), [policyView.row(fresh, NOW, false)])).toContain("COMPLIANCE");
  });
});

describe("flotilla get addons|policies (real hub)", () => {
  let hub: Hub;
  let served = { addons: false, policies: false };

  beforeAll(async () => {
    hub = await startHub();
    const groups = (await admin(hub, "GET", "/apis")).body as { groups?: { name: string }[] };
    const names = new Set((groups.groups ?? []).map((g) => g.name));
    served = { addons: names.has("addon.open-cluster-management.io"), policies: names.has("policy.open-cluster-management.io") };
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it("says there is nothing yet, and gives the hint of a missing add-on", async () => {
    if (!served.addons) {
      const r = await flotilla(["get", "addons"], { hub });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("does not serve add-ons");
      return;
    }
    const empty = await flotilla(["get", "addons"], { hub });
    expect(empty.code).toBe(0);
    expect(empty.stderr).toContain("No add-ons found.");
    const missing = await flotilla(["get", "addons", "nope", "-n", "default"], { hub });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("flotilla get addons -A");
  });

  it("lists root policies across namespaces with each cluster's compliance, and a cluster's copies with --cluster", async () => {
    if (!served.policies) {
      const r = await flotilla(["get", "policies"], { hub });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("does not serve policies");
      return;
    }
    const empty = await flotilla(["get", "policies"], { hub });
    expect(empty.code).toBe(0);
    expect(empty.stderr).toContain("No policies found.");
  });

  it("refuses -A with -n as a usage error", async () => {
    const r = await flotilla(["get", "addons", "-A", "-n", "c1"], { hub });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("-A and -n exclude each other");
  });
});
