/**
 * `flotilla get addons|policies`: the tables' rows from OCM-shaped objects (pure), and the
 * command against a real hub (`wrangler dev`): add-ons per cluster, root policies with each
 * cluster's compliance, a cluster's replicated policies, errors with their hints.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderTable } from "../../agent/cli/output.ts";
import { addonView, compliancePerCluster, policyView } from "../../agent/cli/views.ts";
import type { KubeObject } from "../../agent/cli/resources.ts";
import { admin, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
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
    expect(policyView.row(root, NOW, true)).toEqual([
      "policies",
      "policy-namespace",
      "inform",
      "false",
      "NonCompliant",
      "c1=Compliant,c2=NonCompliant,c3=Pending",
      "2m",
    ]);
    const copy: KubeObject = {
      metadata: {
        name: "policies.policy-namespace",
        namespace: "c1",
        labels: { "policy.open-cluster-management.io/root-policy": "policies.policy-namespace" },
      },
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
  const ADDONS = (ns: string) => `/apis/addon.open-cluster-management.io/v1beta1/namespaces/${ns}/managedclusteraddons`;
  const POLICIES = (ns: string) => `/apis/policy.open-cluster-management.io/v1/namespaces/${ns}/policies`;
  const policy = (namespace: string, name: string, labels: Record<string, string> = {}) => ({
    apiVersion: "policy.open-cluster-management.io/v1",
    kind: "Policy",
    metadata: { name, namespace, labels },
    spec: {
      remediationAction: "inform",
      disabled: false,
      "policy-templates": [
        {
          objectDefinition: {
            apiVersion: "policy.open-cluster-management.io/v1",
            kind: "ConfigurationPolicy",
            metadata: { name: "ns-prod" },
            spec: {
              severity: "low",
              "object-templates": [{ complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name: "prod" } } }],
            },
          },
        },
      ],
    },
  });
  const must = async (r: Promise<{ status: number; body: unknown }>, code: number) => {
    const res = await r;
    expect(res.status, JSON.stringify(res.body)).toBe(code);
  };

  beforeAll(async () => {
    hub = await startHub();
    await createNamespaces(hub, "c1", "c2", "policies");
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it("says there is nothing yet, then shows each cluster's add-on with its conditions; a missing one gets its hint", async () => {
    const empty = await flotilla(["get", "addons"], { hub });
    expect(empty.code).toBe(0);
    expect(empty.stderr).toContain("No add-ons found.");
    for (const c of ["c1", "c2"]) {
      await must(
        admin(hub, "POST", ADDONS(c), {
          apiVersion: "addon.open-cluster-management.io/v1beta1",
          kind: "ManagedClusterAddOn",
          metadata: { name: "observability" },
          spec: {},
        }),
        201,
      );
    }
    const conditions = [
      {
        type: "Available",
        status: "True",
        reason: "ManagedClusterAddOnLeaseUpdated",
        message: "observability add-on is available.",
        lastTransitionTime: "2026-11-26T12:00:00Z",
      },
    ];
    await must(admin(hub, "PATCH", `${ADDONS("c1")}/observability/status`, { status: { conditions } }, "application/merge-patch+json"), 200);
    const all = await flotilla(["get", "addons"], { hub });
    expect(all.code, all.stderr).toBe(0);
    const lines = all.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^CLUSTER\s+NAME\s+AVAILABLE\s+DEGRADED\s+PROGRESSING\s+HEALTH\s+REASON\s+AGE$/);
    expect(lines[1]).toMatch(/^c1\s+observability\s+True\s+-\s+-\s+Lease\s+ManagedClusterAddOnLeaseUpdated\s+\S+$/);
    expect(lines[2]).toMatch(/^c2\s+observability\s+-\s+-\s+-\s+Lease\s+-\s+\S+$/);
    const one = await flotilla(["get", "addons", "--cluster", "c1", "-o", "json"], { hub });
    expect(JSON.parse(one.stdout).items.map((i: KubeObject) => i.metadata.namespace)).toEqual(["c1"]);
    const missing = await flotilla(["get", "addons", "nope", "-n", "c1"], { hub });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("flotilla get addons -A");
  });

  it("lists root policies with each cluster's compliance, and a cluster's replicated policies with --cluster", async () => {
    const empty = await flotilla(["get", "policies"], { hub });
    expect(empty.code).toBe(0);
    expect(empty.stderr).toContain("No policies found.");
    await must(admin(hub, "POST", POLICIES("policies"), policy("policies", "ns-prod")), 201);
    const status = {
      compliant: "NonCompliant",
      status: [
        { clustername: "c2", clusternamespace: "c2", compliant: "NonCompliant" },
        { clustername: "c1", clusternamespace: "c1", compliant: "Compliant" },
      ],
    };
    await must(admin(hub, "PATCH", `${POLICIES("policies")}/ns-prod/status`, { status }, "application/merge-patch+json"), 200);
    const root = {
      "policy.open-cluster-management.io/root-policy": "policies.ns-prod",
      "policy.open-cluster-management.io/cluster-name": "c1",
      "policy.open-cluster-management.io/cluster-namespace": "c1",
    };
    await must(admin(hub, "POST", POLICIES("c1"), policy("c1", "policies.ns-prod", root)), 201);
    await must(admin(hub, "PATCH", `${POLICIES("c1")}/policies.ns-prod/status`, { status: { compliant: "Compliant" } }, "application/merge-patch+json"), 200);

    const all = await flotilla(["get", "policies"], { hub });
    expect(all.code, all.stderr).toBe(0);
    const lines = all.stdout.trim().split("\n");
    expect(lines).toHaveLength(2); // the root policy only, not its copy in c1
    expect(lines[0]).toMatch(/^NAMESPACE\s+NAME\s+REMEDIATION\s+DISABLED\s+COMPLIANCE\s+CLUSTERS\s+AGE$/);
    expect(lines[1]).toMatch(/^policies\s+ns-prod\s+inform\s+false\s+NonCompliant\s+c1=Compliant,c2=NonCompliant\s+\S+$/);

    const copies = await flotilla(["get", "policies", "--cluster", "c1"], { hub });
    expect(copies.code, copies.stderr).toBe(0);
    expect(copies.stdout).toMatch(/policies\.ns-prod\s+inform\s+false\s+Compliant\s+\(copy of policies\.ns-prod\)/);
    const json = await flotilla(["get", "policies", "-A", "-o", "json"], { hub });
    expect(JSON.parse(json.stdout).items.map((i: KubeObject) => `${i.metadata.namespace}/${i.metadata.name}`)).toEqual(["policies/ns-prod"]);
  });

  it("refuses -A with -n as a usage error", async () => {
    const r = await flotilla(["get", "addons", "-A", "-n", "c1"], { hub });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("-A and -n exclude each other");
  });
});
