/**
 * Policies reach clusters and compliance comes back, end to end: a real hub (`wrangler dev`) and
 * two real agent processes on their own simulated member clusters, one on the ws transport and one
 * on poll. A replicated Policy (`<rootns>.<rootname>` in each cluster's namespace, with OCM's
 * labels, as the hub's propagator writes it) holds a ConfigurationPolicy with a musthave Namespace:
 * in inform the Policy is NonCompliant ("namespaces [...] not found") on the cluster lacking it and
 * Compliant on the one that has it; switched to enforce the namespace appears on the member cluster
 * and the Policy turns Compliant, its history newest first.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { cond, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess, POLICIES } from "./support.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const CLUSTERS = { p1: "ws", p2: "poll" } as const;
const NAME = "policies.prod-namespace";

/** The replicated Policy the propagator would write into `cluster`'s namespace. */
const replicated = (
  cluster: string,
  remediationAction: "inform" | "enforce",
  name = NAME,
  objectTemplates: Json[] = [{ complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name: "prod" } } }],
) => ({
  apiVersion: "policy.open-cluster-management.io/v1",
  kind: "Policy",
  metadata: {
    name,
    labels: {
      "policy.open-cluster-management.io/root-policy": name,
      "policy.open-cluster-management.io/cluster-name": cluster,
      "policy.open-cluster-management.io/cluster-namespace": cluster,
    },
  },
  spec: {
    disabled: false,
    remediationAction,
    "policy-templates": [
      {
        objectDefinition: {
          apiVersion: "policy.open-cluster-management.io/v1",
          kind: "ConfigurationPolicy",
          metadata: { name: name.split(".")[1] },
          spec: { remediationAction: "inform", severity: "low", "object-templates": objectTemplates },
        },
      },
    ],
  },
});

describe("policies reach clusters and compliance comes back (wrangler dev + 2 agent processes)", () => {
  let hub: Hub;
  const sims = new Map<string, SimulatedCluster>();
  const agents = new Map<string, AgentProcess>();
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-policies-"));
  const core = (c: string) => {
    const kc = new KubeConfig();
    kc.loadFromString(sims.get(c)!.kubeconfigYaml);
    return kc.makeApiClient(CoreV1Api);
  };
  const hasNamespace = async (c: string, name: string) => {
    try {
      await core(c).readNamespace({ name });
      return true;
    } catch {
      return false;
    }
  };
  const policyOf = async (c: string, name = NAME): Promise<Json> => (await admin(hub, "GET", `${POLICIES(c)}/${name}`)).body;

  beforeAll(async () => {
    hub = await startHub();
    const token = await createBootstrapToken(hub);
    for (const [c, transport] of Object.entries(CLUSTERS)) {
      sims.set(c, await startSimulatedCluster({ statePath: path.join(dir, `${c}.json`) }));
      agents.set(
        c,
        startAgent(
          hub,
          [
            "--cluster-name",
            c,
            "--bootstrap-token",
            token,
            "--kubeconfig",
            sims.get(c)!.kubeconfigPath,
            "--status-sync-interval",
            "1",
            "--transport",
            transport,
          ],
          false,
        ),
      );
    }
    for (const c of Object.keys(CLUSTERS)) {
      await waitFor(`${c} to register`, async () => (await admin(hub, "GET", `${MC}/${c}`)).status === 200);
      expect((await admin(hub, "PATCH", `${MC}/${c}`, { spec: { hubAcceptsClient: true, leaseDurationSeconds: 1 } }, merge)).status).toBe(200);
      await waitFor(`${c} Available`, async () => cond((await admin(hub, "GET", `${MC}/${c}`)).body, "ManagedClusterConditionAvailable")?.status === "True");
    }
    await createNamespaces(hub, "policies");
  }, 120_000);

  afterAll(async () => {
    for (const a of agents.values()) await stopAgent(a);
    for (const s of sims.values()) await s.close();
    await hub?.stop();
  });

  it("musthave Namespace: inform NonCompliant where it lacks, Compliant where it is; enforce creates it and turns Compliant", async () => {
    // p2 already has the namespace.
    await core("p2").createNamespace({ body: { metadata: { name: "prod" } } });
    for (const c of Object.keys(CLUSTERS)) expect((await admin(hub, "POST", POLICIES(c), replicated(c, "inform"))).status).toBe(201);

    const informed = await waitFor("p1 NonCompliant", async () => {
      const p = await policyOf("p1");
      return p.status?.compliant === "NonCompliant" && p;
    });
    expect(informed.status.details).toEqual([
      {
        templateMeta: { name: "prod-namespace" },
        compliant: "NonCompliant",
        history: [
          {
            eventName: expect.stringMatching(/^policies\.prod-namespace\.[0-9a-f]+$/),
            lastTimestamp: expect.any(String),
            message: "NonCompliant; violation - namespaces [prod] not found",
          },
        ],
      },
    ]);
    const p2 = await waitFor("p2 Compliant", async () => {
      const p = await policyOf("p2");
      return p.status?.compliant === "Compliant" && p;
    });
    expect(p2.status.details[0].history[0].message).toBe("Compliant; notification - namespaces [prod] found as specified");
    expect(await hasNamespace("p1", "prod")).toBe(false);

    // Switched to enforce: the namespace appears, the policy turns Compliant.
    expect((await admin(hub, "PATCH", `${POLICIES("p1")}/${NAME}`, { spec: { remediationAction: "enforce" } }, merge)).status).toBe(200);
    await waitFor("prod on p1", () => hasNamespace("p1", "prod"));
    const enforced = await waitFor("p1 Compliant", async () => {
      const p = await policyOf("p1");
      return p.status?.compliant === "Compliant" && p;
    });
    const messages = enforced.status.details[0].history.map((h: Json) => h.message);
    expect(messages.at(-1)).toBe("NonCompliant; violation - namespaces [prod] not found");
    expect(messages[0]).toMatch(/^Compliant; notification - namespaces \[prod\] (was created successfully|found as specified)$/);
    for (const a of agents.values()) expect(a.output()).not.toMatch(/policy compliance report failed|could not load the policy controller/);
  });

  it("mustnothave deletes the namespace; mustonlyhave removes a ConfigMap's extra keys (enforce, poll transport)", async () => {
    await core("p2").createNamespace({ body: { metadata: { name: "legacy" } } });
    await core("p2").createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "settings" }, data: { mode: "strict", debug: "true" } } });
    const templates = [
      { complianceType: "mustnothave", objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name: "legacy" } } },
      {
        complianceType: "mustonlyhave",
        objectDefinition: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings", namespace: "default" }, data: { mode: "strict" } },
      },
    ];
    expect((await admin(hub, "POST", POLICIES("p2"), replicated("p2", "enforce", "policies.hygiene", templates))).status).toBe(201);
    await waitFor("legacy gone from p2", async () => {
      try {
        const ns = await core("p2").readNamespace({ name: "legacy" });
        return Boolean(ns.metadata?.deletionTimestamp);
      } catch {
        return true;
      }
    });
    await waitFor(
      "settings without debug",
      async () =>
        JSON.stringify((await core("p2").readNamespacedConfigMap({ name: "settings", namespace: "default" })).data) === JSON.stringify({ mode: "strict" }),
    );
    const p = await waitFor("hygiene Compliant", async () => {
      const got = await policyOf("p2", "policies.hygiene");
      return got.status?.compliant === "Compliant" && got;
    });
    expect(p.status.details[0].history.at(-1).message).toBe(
      "Compliant; notification - namespaces [legacy] was deleted successfully; notification - configmaps [settings] was updated successfully in namespace default",
    );
  });
});
