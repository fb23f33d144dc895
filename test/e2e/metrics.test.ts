/**
 * `/metrics` end to end: a real hub (`wrangler dev`) and two real agent processes on simulated
 * member clusters. After a join, after a lease expiry (one agent stopped) and after a rollout (a
 * ManifestWorkReplicaSet through a Placement), the scrape is parsed by Prometheus' own text
 * parser (test/prometheus-parser.ts) and its figures are compared with what the API lists:
 * clusters per condition and status, works per condition and status, placements by
 * PlacementSatisfied and the replica set's summary, a Policy's compliance (root and the replica
 * an agent evaluated) and an add-on's Available condition; the counters (registrations, heartbeats,
 * leases expired, scheduler runs, decisions written, API requests, webhook deliveries) show the
 * events, and are still there after the hub restarted. Health endpoints answer with their checks,
 * unauthenticated.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, createNamespaces, hubFetch, startHub, type Hub } from "../../scripts/hub-process.ts";
import { parsePrometheus, sampleSum, type ParsedFamily } from "../prometheus-parser.ts";
import { bindClusterSet, cond, MC, merge, startAgent, stopAgent, waitFor, type AgentProcess } from "./support.ts";

const G = "/apis/cluster.open-cluster-management.io";
const W = "/apis/work.open-cluster-management.io";
const CLUSTERS = ["m1", "m2"];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describe("/metrics agrees with the API (wrangler dev + 2 agent processes)", () => {
  let hub: Hub;
  const agents = new Map<string, AgentProcess>();
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-e2e-metrics-"));

  /** The hub's /metrics, parsed by Prometheus' parser. */
  const scrape = async (): Promise<ParsedFamily[]> => {
    const r = await hubFetch(hub, "GET", "/metrics", { authorization: `Bearer ${hub.adminToken}` });
    expect(r.status).toBe(200);
    return parsePrometheus(r.text);
  };

  /** Counts of `(condition type, status)` over `items`, as `type/status` keys. */
  const byCondition = (items: Json[]): Map<string, number> => {
    const out = new Map<string, number>();
    for (const o of items) for (const c of o.status?.conditions ?? []) out.set(`${c.type}/${c.status}`, (out.get(`${c.type}/${c.status}`) ?? 0) + 1);
    return out;
  };
  /** The same counts from a scrape's family `name` (labels condition, status). */
  const scrapedByCondition = (m: ParsedFamily[], name: string): Map<string, number> => {
    const out = new Map<string, number>();
    for (const f of m) for (const s of f.samples) if (s.name === name && s.value !== 0) out.set(`${s.labels.condition}/${s.labels.status}`, s.value);
    return out;
  };
  const sorted = (m: Map<string, number>) => [...m.entries()].sort();

  /**
   * Waits until a scrape and the API's lists agree on clusters and works per condition (both read
   * D1 a moment apart, so a heartbeat between them may differ once); returns that scrape.
   */
  const agreeing = async (what: string): Promise<ParsedFamily[]> => {
    let last = "";
    try {
      return await waitFor(`/metrics to agree with the API ${what}`, async () => {
        const clusters = (await admin(hub, "GET", MC)).body.items as Json[];
        const works = (await admin(hub, "GET", `${W}/v1/manifestworks`)).body.items as Json[];
        const m = await scrape();
        const want = { clusters: sorted(byCondition(clusters)), count: clusters.length, works: sorted(byCondition(works)), workCount: works.length };
        const have = {
          clusters: sorted(scrapedByCondition(m, "flotilla_managed_clusters")),
          count: sampleSum(m, "acm_managed_cluster_count"),
          works: sorted(scrapedByCondition(m, "flotilla_manifestworks")),
          workCount: sampleSum(m, "acm_manifestwork_count"),
        };
        last = JSON.stringify({ want, have });
        return JSON.stringify(want) === JSON.stringify(have) && m;
      });
    } catch (e) {
      throw new Error(`${(e as Error).message}; last: ${last}`, { cause: e });
    }
  };

  beforeAll(async () => {
    hub = await startHub();
    const token = await createBootstrapToken(hub);
    for (const c of CLUSTERS)
      agents.set(
        c,
        startAgent(hub, ["--cluster-name", c, "--bootstrap-token", token, "--simulate-state", path.join(dir, `${c}.json`), "--status-sync-interval", "1"]),
      );
  }, 120_000);

  afterAll(async () => {
    for (const a of agents.values()) await stopAgent(a);
    await hub?.stop();
  });

  it("health: ok, each check with ?verbose, unauthenticated", async () => {
    expect(await hubFetch(hub, "GET", "/livez")).toEqual({ status: 200, text: "ok" });
    expect(await hubFetch(hub, "GET", "/readyz?verbose")).toEqual({
      status: 200,
      text: "[+]ping ok\n[+]d1 ok\n[+]migrations ok\n[+]scheduler ok\nreadyz check passed\n",
    });
    expect(await hubFetch(hub, "GET", "/healthz/migrations")).toEqual({ status: 200, text: "ok" });
    expect((await hubFetch(hub, "GET", "/metrics")).status).toBe(401);
  });

  it("after a join: clusters per condition as the API lists them; registrations and heartbeats counted", async () => {
    for (const c of CLUSTERS) {
      await waitFor(`${c} to register`, async () => (await admin(hub, "GET", `${MC}/${c}`)).status === 200);
      expect(
        (
          await admin(
            hub,
            "PATCH",
            `${MC}/${c}`,
            { metadata: { labels: { tier: "metrics" } }, spec: { hubAcceptsClient: true, leaseDurationSeconds: 1 } },
            merge,
          )
        ).status,
      ).toBe(200);
    }
    await waitFor("both clusters joined and Available", async () => {
      const items = (await admin(hub, "GET", MC)).body.items as Json[];
      return (
        items.filter((mc) => cond(mc, "ManagedClusterJoined")?.status === "True" && cond(mc, "ManagedClusterConditionAvailable")?.status === "True").length ===
        2
      );
    });
    const m = await agreeing("after the join");
    expect(sampleSum(m, "flotilla_managed_clusters", { condition: "ManagedClusterConditionAvailable", status: "True" })).toBe(2);
    expect(sampleSum(m, "flotilla_managed_clusters_by_clusterset", { clusterset: "global" })).toBe(2);
    expect(sampleSum(m, "flotilla_managed_clusters_by_clusterset", { clusterset: "default" })).toBe(2);
    // Counters arrive in batches (at most a second late).
    await waitFor("registrations and heartbeats counted", async () => {
      const c = await scrape();
      return (
        sampleSum(c, "flotilla_cluster_registrations_total", { code: "201" }) === 2 &&
        sampleSum(c, "flotilla_agent_heartbeats_total") > 0 &&
        sampleSum(c, "flotilla_agent_requests_total") > 0
      );
    });
  });

  it("after a lease expiry: the stopped cluster counted Unknown, the expiry counted", async () => {
    await stopAgent(agents.get("m2")!);
    agents.delete("m2");
    await waitFor(
      "m2 Available=Unknown",
      async () => cond((await admin(hub, "GET", `${MC}/m2`)).body, "ManagedClusterConditionAvailable")?.status === "Unknown",
      60_000,
    );
    const m = await agreeing("after the lease expiry");
    expect(sampleSum(m, "flotilla_managed_clusters", { condition: "ManagedClusterConditionAvailable", status: "Unknown" })).toBe(1);
    expect(sampleSum(m, "flotilla_managed_clusters", { condition: "ManagedClusterConditionAvailable", status: "True" })).toBe(1);
    expect(sampleSum(m, "flotilla_managed_clusters_by_location", { available: "Unknown" })).toBe(1);
    // At least m2's (under load m1's 1 s lease may lapse for a moment too: each expiry counts).
    let expired = 0;
    try {
      await waitFor("the lease expiry counted", async () => (expired = sampleSum(await scrape(), "flotilla_cluster_leases_expired_total")) >= 1);
    } catch (e) {
      throw new Error(`${(e as Error).message}; leases expired: ${expired}`, { cause: e });
    }
  });

  it("after a rollout: works per condition, placements and the replica set's progress as the API shows them", async () => {
    await createNamespaces(hub, "apps");
    await bindClusterSet(hub, "apps", "default");
    const placement = {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "web" },
      spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { tier: "metrics" } } } }] },
    };
    expect((await admin(hub, "POST", `${G}/v1beta1/namespaces/apps/placements`, placement)).status).toBe(201);
    const manifests = [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "web", namespace: "default" }, data: { greeting: "hello" } }];
    const mwrs = {
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name: "web" },
      spec: { placementRefs: [{ name: "web", rolloutStrategy: { type: "All" } }], manifestWorkTemplate: { workload: { manifests } } },
    };
    expect((await admin(hub, "POST", `${W}/v1alpha1/namespaces/apps/manifestworkreplicasets`, mwrs)).status).toBe(201);
    // The unreachable m2 is not selected (its taint); m1 gets the work and reports it Available.
    const done = await waitFor(
      "the rollout complete",
      async () => {
        const r = (await admin(hub, "GET", `${W}/v1alpha1/namespaces/apps/manifestworkreplicasets/web`)).body;
        return cond(r, "PlacementRolledOut")?.status === "True" && r.status?.summary?.available === 1 && r;
      },
      60_000,
    );
    const m = await agreeing("after the rollout");
    expect(sampleSum(m, "flotilla_manifestworks", { condition: "Available", status: "True" })).toBe(1);
    for (const state of ["total", "applied", "available", "progressing", "degraded"]) {
      expect(sampleSum(m, "flotilla_manifestworkreplicaset_works", { namespace: "apps", name: "web", state })).toBe(done.status.summary[state] ?? 0);
    }
    expect(sampleSum(m, "flotilla_manifestworkreplicaset_rolled_out", { namespace: "apps", name: "web" })).toBe(1);
    const placed = (await admin(hub, "GET", `${G}/v1beta1/namespaces/apps/placements/web`)).body;
    const satisfied = cond(placed, "PlacementSatisfied");
    expect(sampleSum(m, "flotilla_placements", { status: satisfied.status, reason: satisfied.reason })).toBe(1);
    // A delivery to no receiver is refused and counted, without its payload.
    expect((await hubFetch(hub, "POST", `/hooks/${"0".repeat(64)}`, { "content-type": "application/json" }, "{}")).status).toBe(404);
    await waitFor("the scheduler, the API requests and the delivery counted", async () => {
      const c = await scrape();
      const created = sampleSum(c, "apiserver_request_total", {
        verb: "POST",
        group: "work.open-cluster-management.io",
        resource: "manifestworkreplicasets",
        code: "201",
      });
      return (
        created === 1 &&
        sampleSum(c, "flotilla_scheduler_runs_total", { result: "success" }) > 0 &&
        sampleSum(c, "scheduling_scheduling_duration_seconds_count") > 0 &&
        sampleSum(c, "flotilla_scheduler_decisions_written_total") > 0 &&
        sampleSum(c, "flotilla_webhook_deliveries_total", { result: "refused", code: "404" }) === 1
      );
    });
  });

  it("after a policy and an add-on: their compliance and health as the API shows them", async () => {
    const P = "/apis/policy.open-cluster-management.io/v1/namespaces/apps";
    const gate = {
      apiVersion: "policy.open-cluster-management.io/v1",
      kind: "Policy",
      metadata: { name: "gate" },
      spec: {
        disabled: false,
        "policy-templates": [
          {
            objectDefinition: {
              apiVersion: "policy.open-cluster-management.io/v1",
              kind: "ConfigurationPolicy",
              metadata: { name: "gate-ns" },
              spec: {
                remediationAction: "inform",
                "object-templates": [{ complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } } }],
              },
            },
          },
        ],
      },
    };
    expect((await admin(hub, "POST", `${P}/policies`, gate)).status).toBe(201);
    const pb = {
      apiVersion: "policy.open-cluster-management.io/v1",
      kind: "PlacementBinding",
      metadata: { name: "gate" },
      placementRef: { apiGroup: "cluster.open-cluster-management.io", kind: "Placement", name: "web" },
      subjects: [{ apiGroup: "policy.open-cluster-management.io", kind: "Policy", name: "gate" }],
    };
    expect((await admin(hub, "POST", `${P}/placementbindings`, pb)).status).toBe(201);
    await waitFor(
      "m1's report gathered into the root",
      async () => (await admin(hub, "GET", `${P}/policies/gate`)).body.status?.compliant === "Compliant",
      60_000,
    );
    const MCA = "/apis/addon.open-cluster-management.io/v1alpha1/namespaces/m1/managedclusteraddons";
    const addon = { apiVersion: "addon.open-cluster-management.io/v1alpha1", kind: "ManagedClusterAddOn", metadata: { name: "probe" }, spec: {} };
    expect((await admin(hub, "POST", MCA, addon)).status).toBe(201);
    const shown = (await admin(hub, "GET", `${MCA}/probe`)).body;
    const available = String(cond(shown, "Available")?.status ?? "Unknown").toLowerCase();
    const m = await scrape();
    /** The values of the series of `name` with exactly `labels` (a missing series is no value, not 0). */
    const values = (name: string, labels: Record<string, string>) =>
      m
        .flatMap((f) => f.samples)
        .filter((x) => x.name === name && JSON.stringify(x.labels) === JSON.stringify(labels))
        .map((x) => x.value);
    expect(values("policy_governance_info", { type: "root", policy: "gate", policy_namespace: "apps", cluster_namespace: "<null>" })).toEqual([0]);
    expect(values("policy_governance_info", { type: "propagated", policy: "gate", policy_namespace: "apps", cluster_namespace: "m1" })).toEqual([0]);
    for (const status of ["true", "false", "unknown"])
      expect(values("acm_managed_cluster_addon_status_condition", { addon_name: "probe", managed_cluster_name: "m1", condition: "Available", status })).toEqual(
        [status === available ? 1 : 0],
      );
  });

  it("keeps its counters across a restart of the hub (workerd and every isolate)", async () => {
    const before = await scrape();
    const counters = [
      "flotilla_cluster_registrations_total",
      "flotilla_cluster_leases_expired_total",
      "flotilla_scheduler_runs_total",
      "apiserver_request_total",
      "flotilla_webhook_deliveries_total",
    ];
    const { stateDir, adminToken } = hub;
    const port = Number(new URL(hub.url).port);
    await hub.stop();
    hub = await startHub({ stateDir, port, adminToken });
    const after = await scrape();
    for (const name of counters) {
      expect(sampleSum(after, name)).toBeGreaterThan(0);
      expect(sampleSum(after, name)).toBeGreaterThanOrEqual(sampleSum(before, name));
    }
    expect(sampleSum(after, "flotilla_cluster_registrations_total", { code: "201" })).toBe(2);
  });
});
