/**
 * `evaluationInterval: watch` in the agent's policy loop (agent/src/policy/), as OCM's
 * config-policy-controller evaluates a watch policy: when what its object templates read changes
 * on the member cluster (Kubernetes watches, here the agent's LiveTracker), not periodically.
 * Every test sets the default interval to an hour where only a watch can explain an evaluation,
 * against the simulated cluster over HTTP (its `?watch=true` with bookmarks).
 */
import { afterEach, describe, expect, it } from "vitest";
import { startSimulatedCluster } from "../../agent/sim/index.ts";
import type { KubeConfig } from "../../agent/src/kube.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { createLogger } from "../../agent/src/log.ts";
import type { DeliveredPolicy } from "../../agent/src/policy/controller.ts";
import { PolicyLoop } from "../../agent/src/policy/loop.ts";
import { DynamicClient } from "../../agent/src/work/dynamic.ts";
import type { PolicyComplianceReport } from "../../src/agent-api/protocol-answers.ts";
import { waitFor } from "../wait.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

const NS = { group: "", version: "v1", resource: "namespaces" };
const CM = { group: "", version: "v1", resource: "configmaps" };
const HOUR_MS = 3_600_000;

async function sim(): Promise<{ kc: KubeConfig; client: DynamicClient; yaml: string }> {
  const cluster = await startSimulatedCluster();
  cleanups.push(() => cluster.close());
  const kc = kubeConfigFromYaml(cluster.kubeconfigYaml);
  return { kc, client: new DynamicClient(kc), yaml: cluster.kubeconfigYaml };
}

/** A policy loop on `kc` whose reports land in `reports` (each one taken by the "hub"). */
function loop(kc: KubeConfig, defaultIntervalMs = HOUR_MS): { loop: PolicyLoop; reports: { policy: string; report: PolicyComplianceReport }[] } {
  const reports: { policy: string; report: PolicyComplianceReport }[] = [];
  const abort = new AbortController();
  const l = new PolicyLoop({
    clusterName: "c1",
    kubeConfig: kc,
    transport: {
      reportCompliance: (policy, report) => {
        reports.push({ policy, report });
        return Promise.resolve({ ok: true as const, status: 200, value: { resourceVersion: String(reports.length) } });
      },
    },
    logger: createLogger({ write: () => undefined }),
    defaultIntervalMs,
    timing: { backoffBaseMs: 100, backoffCapMs: 1_000, random: Math.random },
    signal: abort.signal,
  });
  cleanups.push(async () => {
    abort.abort();
    await l.done;
  });
  return { loop: l, reports };
}

let uid = 0;
function policy(name: string, configSpec: Json): DeliveredPolicy {
  return {
    metadata: { name, uid: `uid-w-${++uid}` },
    spec: {
      disabled: false,
      "policy-templates": [
        {
          objectDefinition: { apiVersion: "policy.open-cluster-management.io/v1", kind: "ConfigurationPolicy", metadata: { name: "tmpl" }, spec: configSpec },
        },
      ],
    },
  };
}

const message = (r: { report: PolicyComplianceReport } | undefined): string => r?.report.templates[0]?.message ?? "";

async function getOrNull(client: DynamicClient, ref: Parameters<DynamicClient["get"]>[0]): Promise<Json | null> {
  try {
    return await client.get(ref);
  } catch (e) {
    if ((e as { code?: number }).code === 404) return null;
    throw e;
  }
}

describe("evaluationInterval watch (OCM's dynamic watcher) in the policy loop", () => {
  it("enforce musthave Namespace: a namespace deleted on the member cluster is re-created at once, with a compliance event", async () => {
    const { kc, client } = await sim();
    const { loop: l, reports } = loop(kc);
    // No evaluationInterval: OCM's default is watch.
    const watched = policy("default.ns-prod", {
      remediationAction: "enforce",
      "object-templates": [{ complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name: "prod" } } }],
    });
    l.setPolicies([watched]);
    await waitFor("the namespace created", async () => message(reports[0]) === "Compliant; notification - namespaces [prod] was created successfully");
    // Once the watch runs, the evaluation it asks for finds the namespace as specified.
    await waitFor("the watch running and the namespace found", async () => l.watches === 1 && message(reports.at(-1)).includes("found as specified"));
    const before = reports.length;

    await client.delete({ ...NS, namespace: "", name: "prod" });
    await waitFor(
      "the namespace re-created by the watch",
      async () => {
        const ns = await getOrNull(client, { ...NS, namespace: "", name: "prod" });
        return (
          ns !== null &&
          !ns.metadata.deletionTimestamp &&
          reports.slice(before).some((r) => message(r) === "Compliant; notification - namespaces [prod] was created successfully")
        );
      },
      20_000,
      50,
    );
    expect(reports.slice(before).every((r) => r.policy === "default.ns-prod")).toBe(true);

    // Changed to durations: its watch ends; back to watch: it starts again.
    const durations = {
      ...policy("default.ns-prod", {
        remediationAction: "enforce",
        evaluationInterval: { compliant: "1h", noncompliant: "1h" },
        "object-templates": [{ complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name: "prod" } } }],
      }),
      metadata: watched.metadata,
    };
    l.setPolicies([durations]);
    await waitFor("the watch closed for durations", async () => l.watches === 0, 10_000, 50);
    l.setPolicies([watched]);
    await waitFor("the watch open again", async () => l.watches === 1, 10_000, 50);

    // The Policy removed: its watch ends.
    l.setPolicies([]);
    await waitFor("the watches closed", async () => l.watches === 0, 10_000, 50);
  });

  it("inform musthave ConfigMap: NonCompliant at once when the object is edited; an unrelated object's change sends nothing", async () => {
    const { kc, client } = await sim();
    await client.create(CM, "default", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg", namespace: "default" }, data: { a: "1" } }, "test");
    const { loop: l, reports } = loop(kc);
    l.setPolicies([
      policy("default.cfg", {
        remediationAction: "inform",
        evaluationInterval: { compliant: "watch", noncompliant: "watch" },
        "object-templates": [
          {
            complianceType: "musthave",
            objectDefinition: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg", namespace: "default" }, data: { a: "1" } },
          },
        ],
      }),
    ]);
    await waitFor("compliant", async () => message(reports[0]) === "Compliant; notification - configmaps [cfg] found as specified in namespace default");
    await waitFor("the watch running", async () => l.watches === 1, 10_000, 50);
    const before = reports.length;

    // Unrelated changes (another ConfigMap in the same watched collection, a namespace), then the watched object.
    await client.create(CM, "default", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "other", namespace: "default" }, data: { x: "1" } }, "test");
    await client.create(NS, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: "elsewhere" } }, "test");
    await client.request("PATCH", "/api/v1/namespaces/default/configmaps/cfg", {
      body: { data: { a: "2" } },
      contentType: "application/merge-patch+json",
      query: { fieldManager: "kubectl-edit" },
    });
    await waitFor("NonCompliant reported", async () => reports.length > before, 20_000, 50);
    // Exactly one report, the change of compliance: the unrelated changes sent nothing.
    expect(reports.slice(before).map(message)).toEqual(["NonCompliant; violation - configmaps [cfg] found but not as specified in namespace default"]);

    // Edited back: Compliant again, at once.
    await client.request("PATCH", "/api/v1/namespaces/default/configmaps/cfg", {
      body: { data: { a: "1" } },
      contentType: "application/merge-patch+json",
      query: { fieldManager: "kubectl-edit" },
    });
    await waitFor("Compliant again", async () => message(reports.at(-1)).startsWith("Compliant;"), 20_000, 50);
  });

  it("an unnamed template watches its collection; a namespaceSelector's new namespace is enforced at once", async () => {
    const { kc, client } = await sim();
    await client.create(NS, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: "team-a" } }, "test");
    const { loop: l, reports } = loop(kc);
    l.setPolicies([
      policy("default.marker", {
        remediationAction: "enforce",
        namespaceSelector: { include: ["team-*"] },
        "object-templates": [
          { complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "marker" }, data: { on: "true" } } },
        ],
      }),
      policy("default.no-debug", {
        remediationAction: "inform",
        "object-templates": [
          {
            complianceType: "mustnothave",
            objectDefinition: { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default" }, data: { debug: "on" } },
          },
        ],
      }),
    ]);
    await waitFor("marker in team-a", async () => (await getOrNull(client, { ...CM, namespace: "team-a", name: "marker" })) !== null);
    await waitFor("both compliant", async () => {
      const last = (p: string) => message(reports.filter((r) => r.policy === p).at(-1));
      return last("default.marker").startsWith("Compliant;") && last("default.no-debug").startsWith("Compliant;");
    });

    // A new namespace the selector picks: the marker follows without waiting for an interval.
    await client.create(NS, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: "team-b" } }, "test");
    await waitFor("marker in team-b", async () => (await getOrNull(client, { ...CM, namespace: "team-b", name: "marker" })) !== null, 20_000, 50);

    // An object matching the unnamed mustnothave template appears: NonCompliant at once.
    await client.create(CM, "default", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "dbg", namespace: "default" }, data: { debug: "on" } }, "test");
    await waitFor(
      "mustnothave violated",
      async () =>
        message(reports.filter((r) => r.policy === "default.no-debug").at(-1)) === "NonCompliant; violation - configmaps [dbg] found in namespace default",
      20_000,
      50,
    );
  });

  it("enforce into a namespace that does not exist yet: created as soon as the namespace is", async () => {
    const { kc, client } = await sim();
    const { loop: l, reports } = loop(kc);
    l.setPolicies([
      policy("default.later", {
        remediationAction: "enforce",
        "object-templates": [
          {
            complianceType: "musthave",
            objectDefinition: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg", namespace: "later" }, data: { a: "1" } },
          },
        ],
      }),
    ]);
    await waitFor("NonCompliant", async () => message(reports.at(-1)).startsWith("NonCompliant;"));
    await waitFor("the watches running", async () => l.watches === 2, 10_000, 50);
    await client.create(NS, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: "later" } }, "test");
    await waitFor("the ConfigMap created", async () => (await getOrNull(client, { ...CM, namespace: "later", name: "cfg" })) !== null, 20_000, 50);
    await waitFor("Compliant", async () => message(reports.at(-1)).startsWith("Compliant;"), 20_000, 50);
  });

  it("durations open no watch; a broken watch falls back to the default interval", async () => {
    const { kc, client, yaml } = await sim();
    await client.create(NS, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: "kept" } }, "test");
    const tmpl = { complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name: "kept" } } };
    const periodic = loop(kc);
    periodic.loop.setPolicies([
      policy("default.periodic", { remediationAction: "inform", evaluationInterval: { compliant: "1h", noncompliant: "1h" }, "object-templates": [tmpl] }),
    ]);
    await waitFor("compliant", async () => message(periodic.reports[0]).startsWith("Compliant;"));
    expect(periodic.loop.watches).toBe(0);

    // Every watch the member cluster is asked for fails: the template is evaluated every default interval (300 ms here).
    const refusing = kubeConfigFromYaml(yaml);
    refusing.watch = () => Promise.reject(new Error("watch refused"));
    const fallback = loop(refusing, 300);
    fallback.loop.setPolicies([policy("default.fallback", { remediationAction: "inform", "object-templates": [tmpl] })]);
    await waitFor("compliant", async () => message(fallback.reports[0]).startsWith("Compliant;"));
    await client.delete({ ...NS, namespace: "", name: "kept" });
    await waitFor(
      "NonCompliant from a periodic evaluation",
      async () => message(fallback.reports.at(-1)) === "NonCompliant; violation - namespaces [kept] not found",
      20_000,
      50,
    );
    // The hour-long duration did not evaluate again.
    expect(periodic.reports.map(message)).toEqual(["Compliant; notification - namespaces [kept] found as specified"]);
  });
});
