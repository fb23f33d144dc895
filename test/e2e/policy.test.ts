/**
 * OCM's documentation examples of the policy framework (seed 004, section Policy: the Policy
 * `policy-namespace`, the PlacementBinding `binding-policy-namespace`, the PolicySet
 * `acm-hardening`), applied unchanged with the real kubectl to a real hub (`wrangler dev` over
 * HTTPS) with three agents on simulated clusters: the policy is replicated into the decided
 * clusters' namespaces as OCM's propagator does, kubectl prints OCM's columns, a cluster leaving
 * the decisions loses its replica, and the root's status lists the placement and each cluster.
 */
import {} from "node:fs";
import {} from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { kubectlWith, startAgent, stopAgent, waitFor, type AgentProcess, scratchDir, writeAdminKubeconfig } from "./support.ts";

const { dir, file } = scratchDir("flotilla-policy-");
const CLUSTERS = ["gov1", "gov2", "gov3"];

let hub: Hub;
let kubeconfig: string;
const agents: AgentProcess[] = [];
const { kubectl, kubectlFails } = kubectlWith(() => kubeconfig, dir);

/** The documentation's Policy, PlacementBinding and PolicySet, as printed there. */
const DOC_EXAMPLES = `apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata:
  name: policy-namespace
  namespace: policies
  annotations:
    policy.open-cluster-management.io/standards: NIST SP 800-53
    policy.open-cluster-management.io/categories: CM Configuration Management
    policy.open-cluster-management.io/controls: CM-2 Baseline Configuration
spec:
  remediationAction: enforce
  disabled: false
  policy-templates:
    - objectDefinition:
        apiVersion: policy.open-cluster-management.io/v1
        kind: ConfigurationPolicy
        metadata:
          name: policy-namespace-example
        spec:
          remediationAction: inform
          severity: low
          object-templates:
            - complianceType: MustHave
              objectDefinition:
                kind: Namespace # must have namespace 'prod'
                apiVersion: v1
                metadata:
                  name: prod
---
apiVersion: policy.open-cluster-management.io/v1
kind: PlacementBinding
metadata:
  name: binding-policy-namespace
  namespace: policies
placementRef:
  apiGroup: cluster.open-cluster-management.io
  kind: Placement
  name: placement-hub-cluster
subjects:
  - apiGroup: policy.open-cluster-management.io
    kind: Policy
    name: policy-namespace
---
apiVersion: policy.open-cluster-management.io/v1beta1
kind: PolicySet
metadata:
  name: acm-hardening
  namespace: policies
spec:
  description:
    Apply standard best practices for hardening your Open Cluster Management installation.
  policies:
    - policy-check-backups
    - policy-managedclusteraddon-available
    - policy-subscriptions
`;

beforeAll(async () => {
  hub = await startHub({ https: true });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
  const token = await createBootstrapToken(hub, { autoApprove: true });
  for (const c of CLUSTERS)
    agents.push(
      startAgent({ url: hub.url, caFile: hub.caFile }, ["--cluster-name", c, "--bootstrap-token", token, "--simulate-state", path.join(dir, `${c}.json`)]),
    );
  await waitFor(
    "three clusters to join",
    async () => {
      const names = (await kubectl("get", "mcl", "-o", "name")).trim().split("\n");
      return CLUSTERS.every((c) => names.includes(`managedcluster.cluster.open-cluster-management.io/${c}`));
    },
    120_000,
  );
  for (const c of CLUSTERS) await kubectl("label", "mcl", c, "cluster.open-cluster-management.io/clusterset=gov", "env=prod", "--overwrite");
}, 180_000);

afterAll(async () => {
  for (const a of agents) await stopAgent(a);
  await hub?.stop();
});

describe("OCM's policy documentation examples with kubectl", () => {
  it("apply unchanged, replicate to the decided clusters, and print OCM's columns", async () => {
    const setup = file(
      "placement.yaml",
      [
        "apiVersion: v1",
        "kind: Namespace",
        "metadata:",
        "  name: policies",
        "---",
        "apiVersion: cluster.open-cluster-management.io/v1beta2",
        "kind: ManagedClusterSet",
        "metadata:",
        "  name: gov",
        "---",
        "apiVersion: cluster.open-cluster-management.io/v1beta2",
        "kind: ManagedClusterSetBinding",
        "metadata:",
        "  name: gov",
        "  namespace: policies",
        "spec:",
        "  clusterSet: gov",
        "---",
        "apiVersion: cluster.open-cluster-management.io/v1beta1",
        "kind: Placement",
        "metadata:",
        "  name: placement-hub-cluster",
        "  namespace: policies",
        "spec:",
        "  predicates:",
        "    - requiredClusterSelector:",
        "        labelSelector:",
        "          matchLabels:",
        "            env: prod",
        "",
      ].join("\n"),
    );
    await kubectl("apply", "-f", setup);
    const applied = await kubectl("apply", "-f", file("policy.yaml", DOC_EXAMPLES));
    expect(applied).toContain("policy.policy.open-cluster-management.io/policy-namespace created");
    expect(applied).toContain("placementbinding.policy.open-cluster-management.io/binding-policy-namespace created");
    expect(applied).toContain("policyset.policy.open-cluster-management.io/acm-hardening created");

    await waitFor(
      "the policy replicated to three clusters",
      async () => {
        const names = (await kubectl("get", "policies", "-A", "-l", "policy.open-cluster-management.io/root-policy=policies.policy-namespace", "-o", "name"))
          .trim()
          .split("\n")
          .filter(Boolean);
        return names.length === 3;
      },
      60_000,
    );
    const table = await kubectl("get", "policies", "-A");
    expect(table).toMatch(/^NAMESPACE\s+NAME\s+REMEDIATION ACTION\s+COMPLIANCE STATE\s+AGE/);
    for (const c of CLUSTERS) expect(table).toMatch(new RegExp(`\\n${c}\\s+policies\\.policy-namespace\\s+enforce\\s`));
    expect(table).toMatch(/\npolicies\s+policy-namespace\s+enforce\s/);
    const replica = JSON.parse(await kubectl("get", "policy", "policies.policy-namespace", "-n", "gov2", "-o", "json"));
    expect(replica.metadata.labels).toMatchObject({
      "policy.open-cluster-management.io/root-policy": "policies.policy-namespace",
      "policy.open-cluster-management.io/cluster-name": "gov2",
      "policy.open-cluster-management.io/cluster-namespace": "gov2",
    });
    expect(replica.spec["policy-templates"][0].objectDefinition.spec["object-templates"][0].complianceType).toBe("MustHave");

    const rootStatus = JSON.parse(await kubectl("get", "plc", "policy-namespace", "-n", "policies", "-o", "json")).status;
    expect(rootStatus.placement).toEqual([{ placementBinding: "binding-policy-namespace", placement: "placement-hub-cluster" }]);
    expect(rootStatus.status.map((s: { clustername: string }) => s.clustername)).toEqual(CLUSTERS);
    expect(await kubectl("get", "pb", "-n", "policies")).toMatch(/\nbinding-policy-namespace\s/);
    const sets = await kubectl("get", "plcset", "-n", "policies");
    expect(sets).toMatch(/^NAME\s+COMPLIANCE STATE\s+AGE/);
    const set = JSON.parse(await kubectl("get", "policyset", "acm-hardening", "-n", "policies", "-o", "json"));
    expect(set.status.statusMessage).toBe("Deleted policies: policy-check-backups, policy-managedclusteraddon-available, policy-subscriptions");
  });

  it("a cluster leaving the decisions loses its replicated policy", async () => {
    await kubectl("label", "mcl", "gov3", "env=dev", "--overwrite");
    await waitFor(
      "gov3's replica removed",
      async () => (await kubectlFails("get", "policy", "policies.policy-namespace", "-n", "gov3")).includes("NotFound"),
      60_000,
    );
    await waitFor(
      "the root to list two clusters",
      async () => {
        const s = JSON.parse(await kubectl("get", "plc", "policy-namespace", "-n", "policies", "-o", "json")).status;
        return s.status?.length === 2;
      },
      60_000,
    );
  });

  it("refuses what the hub does not implement, naming the field, with nothing written", async () => {
    const bad = DOC_EXAMPLES.split("---")[0]!
      .replace("name: policy-namespace\n", "name: policy-raw\n")
      .replace("          severity: low\n", "          severity: low\n          object-templates-raw: x\n");
    const err = await kubectlFails("apply", "-f", file("bad.yaml", bad));
    expect(err).toContain("object-templates-raw");
    expect(err).toContain("Forbidden");
    expect(await kubectlFails("get", "policy", "policy-raw", "-n", "policies")).toContain("NotFound");
  });
});
