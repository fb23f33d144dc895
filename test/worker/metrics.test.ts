/**
 * `/metrics` and the health endpoints inside workerd (src/metrics, src/health, the metrics object):
 * who may scrape (RBAC `get` on the nonResourceURL `/metrics`), that counters are kept by the
 * metrics object and the gauges agree with the API, and kube-apiserver's health answers.
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { call, condition, createNamespaces, createToken, MC, register, withClockAhead } from "./helpers.ts";
import { idToken, serveIssuer } from "./oidc-users.ts";
import { waitFor } from "../wait.ts";
import { count, flushMetrics, type BatchCell } from "../../src/metrics/recorder.ts";
import { FOLD_BATCHES, type MetricsObject } from "../../durable-objects/metrics.ts";
import { COUNTED } from "../../src/metrics/families.ts";
import { agentRoute, requestLabels } from "../../src/metrics/routes.ts";
import { healthAnswer, ENDPOINT_CHECKS, HEALTH_CHECKS, runCheck } from "../../src/health/routes.ts";
import type { Env } from "../../src/env.ts";

const RBAC = "/apis/rbac.authorization.k8s.io/v1";

let undo: () => void;
beforeAll(async () => {
  undo = await serveIssuer();
});
afterAll(() => undo());

/** The samples of an exposition, `name{labels}` to value (comments left out). */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

async function scrape(token?: string | null) {
  return call("GET", "/metrics", undefined, { token });
}

describe("/metrics", () => {
  it("is for users with get on the nonResourceURL /metrics (system:monitoring), not for strangers", async () => {
    expect((await scrape(null)).status).toBe(401);
    const nobody = await call("GET", "/metrics", undefined, { token: await idToken("prom") });
    expect(nobody.status).toBe(403);
    expect(nobody.body).toMatchObject({ kind: "Status", reason: "Forbidden", message: 'forbidden: User "oidc:prom" cannot get path "/metrics"' });
    // Kubernetes' system:monitoring group is bound to the system:monitoring ClusterRole at bootstrap
    // (an OIDC user may not claim a system: group; a binding gives the role to a Prometheus' user).
    const bootstrap = (await call("GET", `${RBAC}/clusterrolebindings/system:monitoring`)).body;
    expect(bootstrap).toMatchObject({ roleRef: { kind: "ClusterRole", name: "system:monitoring" }, subjects: [{ kind: "Group", name: "system:monitoring" }] });
    const crb = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "prometheus" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "system:monitoring" },
      subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "oidc:prom" }],
    };
    expect((await call("POST", `${RBAC}/clusterrolebindings`, crb)).status).toBe(201);
    const allowed = await call("GET", "/metrics", undefined, { token: await idToken("prom") });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const role = (await call("GET", `${RBAC}/clusterroles/system:monitoring`)).body;
    expect(role.rules).toEqual([
      { verbs: ["get"], nonResourceURLs: ["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"] },
    ]);
  });

  it("counts API requests as kube-apiserver labels them, kept by the metrics object", async () => {
    await createNamespaces("metrics-a");
    const before = samples((await scrape()).body as string);
    const key =
      'apiserver_request_total{verb="LIST",group="cluster.open-cluster-management.io",version="v1",resource="managedclusters",scope="cluster",component="apiserver",code="200"}';
    await call("GET", MC);
    await call("GET", MC);
    await call("GET", "/apis/nothing.example/v1/widgets-abc123");
    const text = (await scrape()).body as string;
    const after = samples(text);
    expect(after.get(key)! - (before.get(key) ?? 0)).toBe(2);
    // A resource the hub does not serve is counted without its names.
    expect([...after.keys()].some((k) => k.includes("widgets-abc123") || k.includes("nothing.example"))).toBe(false);
    expect(after.get('apiserver_request_total{verb="LIST",scope="cluster",component="apiserver",code="404"}')).toBeGreaterThanOrEqual(1);
    // The latency histogram: cumulative buckets ending with +Inf, _sum, _count, equal counts.
    const h =
      'apiserver_request_duration_seconds_count{verb="LIST",group="cluster.open-cluster-management.io",version="v1",resource="managedclusters",scope="cluster",component="apiserver"}';
    const inf =
      'apiserver_request_duration_seconds_bucket{verb="LIST",group="cluster.open-cluster-management.io",version="v1",resource="managedclusters",scope="cluster",component="apiserver",le="+Inf"}';
    expect(after.get(h)).toBe(after.get(inf));
    expect(text).toContain("# TYPE apiserver_request_duration_seconds histogram");
    // The totals are the object's: what a scrape shows is stored there, not in this isolate.
    const stored = await env.METRICS.getByName("metrics").series();
    const row = stored.find((c) => c.family === "apiserver_request_total" && key.endsWith(c.labels));
    expect(row?.values[0]).toBe(after.get(key));
  });

  it("shows clusters, works and placements per condition as the API lists them", async () => {
    const mc = (name: string, available: string, colo?: string) => ({
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name, ...(colo ? { annotations: { "flotilla.dev/colo": colo } } : {}) },
      spec: { hubAcceptsClient: true },
    });
    for (const [n, colo] of [
      ["m-1", "FRA"],
      ["m-2", "FRA"],
      ["m-3", undefined],
    ] as const)
      expect((await call("POST", MC, mc(n, "True", colo))).status).toBe(201);
    const setAvailable = async (name: string, status: string) => {
      const current = (await call("GET", `${MC}/${name}`)).body;
      const conditions = [
        { type: "ManagedClusterConditionAvailable", status, reason: "Test", message: "", lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z") },
      ];
      expect((await call("PUT", `${MC}/${name}/status`, { ...current, status: { ...current.status, conditions } })).status).toBe(200);
    };
    await setAvailable("m-1", "True");
    await setAvailable("m-2", "Unknown");
    const list = (await call("GET", MC)).body.items as { status?: { conditions?: { type: string; status: string }[] } }[];
    const byApi = (type: string, status: string) => list.filter((c) => (c.status?.conditions ?? []).some((x) => x.type === type && x.status === status)).length;
    const m = samples((await scrape()).body as string);
    expect(m.get("acm_managed_cluster_count")).toBe(list.length);
    for (const status of ["True", "Unknown"]) {
      expect(m.get(`flotilla_managed_clusters{condition="ManagedClusterConditionAvailable",status="${status}"}`)).toBe(
        byApi("ManagedClusterConditionAvailable", status),
      );
    }
    expect(m.get('flotilla_managed_clusters_by_location{location="FRA",available="True"}')).toBe(1);
    expect(m.get('flotilla_managed_clusters_by_location{location="FRA",available="Unknown"}')).toBe(1);
    // The built-in sets' kept counts: global selects every cluster.
    expect(m.get('flotilla_managed_clusters_by_clusterset{clusterset="global"}')).toBe(list.length);
  });
});

describe("policy compliance and add-on health", () => {
  const P = "/apis/policy.open-cluster-management.io/v1/namespaces";
  const NS = "metrics-gov";
  const merge = { contentType: "application/merge-patch+json" };
  const policy = (name: string, disabled = false) => ({
    apiVersion: "policy.open-cluster-management.io/v1",
    kind: "Policy",
    metadata: { name },
    spec: {
      disabled,
      "policy-templates": [
        {
          objectDefinition: {
            apiVersion: "policy.open-cluster-management.io/v1",
            kind: "ConfigurationPolicy",
            metadata: { name: `${name}-ns` },
            spec: {
              remediationAction: "inform",
              "object-templates": [{ complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name: "prod" } } }],
            },
          },
        },
      ],
    },
  });

  it("shows each policy's compliance as OCM's policy_governance_info (root and propagated; 0, 1, -1; none when disabled)", async () => {
    await createNamespaces(NS);
    const G = "/apis/cluster.open-cluster-management.io";
    const ok = async (method: string, url: string, body: unknown) => {
      const r = await call(method, url, body);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    };
    await ok("POST", `${G}/v1beta2/namespaces/${NS}/managedclustersetbindings`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "default" },
      spec: { clusterSet: "default" },
    });
    await ok("POST", MC, {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "mp-1", labels: { gov: "metrics" } },
      spec: { hubAcceptsClient: true },
    });
    const available = { type: "ManagedClusterConditionAvailable", status: "True", reason: "Test", message: "", lastTransitionTime: "2026-11-29T00:00:00Z" };
    expect((await call("PATCH", `${MC}/mp-1/status`, { status: { conditions: [available] } }, merge)).status).toBe(200);
    await ok("POST", `${G}/v1beta1/namespaces/${NS}/placements`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "gov" },
      spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { gov: "metrics" } } } }] },
    });
    for (const p of [policy("audit"), policy("idle"), policy("off", true)]) await ok("POST", `${P}/${NS}/policies`, p);
    await ok("POST", `${P}/${NS}/placementbindings`, {
      apiVersion: "policy.open-cluster-management.io/v1",
      kind: "PlacementBinding",
      metadata: { name: "audit" },
      placementRef: { apiGroup: "cluster.open-cluster-management.io", kind: "Placement", name: "gov" },
      subjects: [{ apiGroup: "policy.open-cluster-management.io", kind: "Policy", name: "audit" }],
    });
    await waitFor("the replica in mp-1", async () => (await call("GET", `${P}/mp-1/policies/${NS}.audit`)).status === 200);
    const series = (type: string, name: string, cluster: string) =>
      `policy_governance_info{type="${type}",policy="${name}",policy_namespace="${NS}",cluster_namespace="${cluster}"}`;
    let m = samples((await scrape()).body as string);
    expect(m.get(series("propagated", "audit", "mp-1"))).toBe(-1); // not reported yet
    expect(m.get(series("root", "audit", "<null>"))).toBe(-1);
    expect(m.get(series("root", "idle", "<null>"))).toBe(-1);
    expect([...m.keys()].filter((k) => k.includes('policy="off"'))).toEqual([]);
    // The agent's report, as its path writes it; the hub gathers it into the root.
    expect((await call("PATCH", `${P}/mp-1/policies/${NS}.audit/status`, { status: { compliant: "NonCompliant" } }, merge)).status).toBe(200);
    await waitFor("the root NonCompliant", async () => (await call("GET", `${P}/${NS}/policies/audit`)).body.status?.compliant === "NonCompliant");
    m = samples((await scrape()).body as string);
    expect(m.get(series("propagated", "audit", "mp-1"))).toBe(1);
    expect(m.get(series("root", "audit", "<null>"))).toBe(1);
    expect((await call("PATCH", `${P}/mp-1/policies/${NS}.audit/status`, { status: { compliant: "Compliant" } }, merge)).status).toBe(200);
    await waitFor("the root Compliant", async () => (await call("GET", `${P}/${NS}/policies/audit`)).body.status?.compliant === "Compliant");
    m = samples((await scrape()).body as string);
    expect(m.get(series("propagated", "audit", "mp-1"))).toBe(0);
    expect(m.get(series("root", "audit", "<null>"))).toBe(0);
  });

  it("shows each add-on's Available condition as ACM's acm_managed_cluster_addon_status_condition (unknown without one)", async () => {
    const MCA = `/apis/addon.open-cluster-management.io/v1alpha1/namespaces/mp-1/managedclusteraddons`;
    const created = await call("POST", MCA, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ManagedClusterAddOn",
      metadata: { name: "probe" },
      spec: {},
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const key = (status: string) =>
      `acm_managed_cluster_addon_status_condition{addon_name="probe",managed_cluster_name="mp-1",condition="Available",status="${status}"}`;
    const states = (m: Map<string, number>) => ["true", "false", "unknown"].map((s) => m.get(key(s)));
    const condition = (await call("GET", `${MCA}/probe`)).body.status?.conditions?.find((c: { type: string }) => c.type === "Available");
    const want = (condition?.status ?? "Unknown").toLowerCase();
    expect(states(samples((await scrape()).body as string))).toEqual(["true", "false", "unknown"].map((s) => (s === want ? 1 : 0)));
    const available = { type: "Available", status: "False", reason: "ProbeUnavailable", message: "", lastTransitionTime: "2026-11-29T00:00:00Z" };
    expect((await call("PATCH", `${MCA}/probe/status`, { status: { conditions: [available] } }, { contentType: "application/merge-patch+json" })).status).toBe(
      200,
    );
    expect(states(samples((await scrape()).body as string))).toEqual([0, 1, 0]);
  });
});

describe("request labels", () => {
  const url = (p: string) => new URL(`https://hub.test${p}`);
  const G = "/apis/cluster.open-cluster-management.io/v1beta1";
  it("follow kube-apiserver's: LIST, WATCH, APPLY, POST; scope; dry_run; unserved resources unnamed", () => {
    expect(requestLabels("GET", url(`${G}/namespaces/a/placements`), undefined, undefined, 200)).toEqual({
      verb: "LIST",
      dry_run: "",
      group: "cluster.open-cluster-management.io",
      version: "v1beta1",
      resource: "placements",
      subresource: "",
      scope: "namespace",
      component: "apiserver",
    });
    expect(requestLabels("GET", url(`${G}/placements?watch=1`), undefined, undefined, 200)).toMatchObject({ verb: "WATCH", scope: "cluster" });
    expect(
      requestLabels("PATCH", url(`${G}/namespaces/a/placements/p?fieldManager=x&dryRun=All`), "application/apply-patch+yaml", undefined, 200),
    ).toMatchObject({ verb: "APPLY", scope: "resource", dry_run: "All" });
    expect(requestLabels("POST", url(`${G}/namespaces/a/placements`), "application/json", undefined, 201)).toMatchObject({ verb: "POST", scope: "resource" });
    expect(requestLabels("PUT", url(`${G}/namespaces/a/placements/p/status`), "application/json", undefined, 200)).toMatchObject({
      verb: "PUT",
      subresource: "status",
    });
    expect(requestLabels("DELETE", url(`${G}/namespaces/a/placements`), undefined, undefined, 200)).toMatchObject({ verb: "DELETE", scope: "namespace" });
    expect(requestLabels("GET", url("/apis/evil.example/v1/things-123/x"), undefined, undefined, 404)).toMatchObject({
      group: "",
      version: "",
      resource: "",
      subresource: "",
    });
    expect(requestLabels("GET", url("/apis"), undefined, undefined, 200)).toMatchObject({ verb: "GET", resource: "", scope: "" });
  });

  it("name the agent's routes from a bounded set", () => {
    expect(
      [
        "/agent/v1/register",
        "/agent/v1/clusters/c1",
        "/agent/v1/clusters/c1/heartbeat",
        "/agent/v1/clusters/c1/works",
        "/agent/v1/clusters/c1/works/w/status",
        "/agent/v1/clusters/c1/connect",
        "/agent/v1/clusters/c1/nope",
        "/agent/v1/x",
      ].map(agentRoute),
    ).toEqual(["register", "info", "heartbeat", "works", "workstatus", "connect", "other", "other"]);
  });
});

describe("health", () => {
  it("answers ok, lists its checks with ?verbose, excludes and runs one check by its path, unauthenticated", async () => {
    for (const p of ["/livez", "/readyz", "/healthz"]) {
      const r = await call("GET", p, undefined, { token: null });
      expect(r.status).toBe(200);
      expect(r.body).toBe("ok");
      expect(r.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    }
    expect((await call("GET", "/readyz?verbose", undefined, { token: null })).body).toBe(
      "[+]ping ok\n[+]d1 ok\n[+]migrations ok\n[+]scheduler ok\nreadyz check passed\n",
    );
    expect((await call("GET", "/livez?verbose", undefined, { token: null })).body).toBe("[+]ping ok\n[+]d1 ok\nlivez check passed\n");
    expect((await call("GET", "/readyz?verbose&exclude=scheduler&exclude=nope", undefined, { token: null })).body).toBe(
      '[+]ping ok\n[+]d1 ok\n[+]migrations ok\n[+]scheduler excluded: ok\nwarn: some health checks cannot be excluded: no matches for "nope"\nreadyz check passed\n',
    );
    for (const check of ["ping", "d1", "migrations", "scheduler"]) expect((await call("GET", `/readyz/${check}`, undefined, { token: null })).body).toBe("ok");
    expect((await call("GET", "/livez/migrations", undefined, { token: null })).status).toBe(404);
    expect((await call("GET", "/livez/scheduler", undefined, { token: null })).status).toBe(404);
    expect((await call("GET", "/livez/nope", undefined, { token: null })).status).toBe(404);
  });

  it("fails with 500, the failing check withheld, when D1 does not answer or lacks a migration", async () => {
    const down = {
      ...env,
      DB: {
        prepare() {
          throw new Error("D1_ERROR: secret detail");
        },
      },
    } as unknown as Env;
    const r = await healthAnswer("readyz", ENDPOINT_CHECKS.readyz, down, new URLSearchParams());
    expect(r.status).toBe(500);
    expect(await r.text()).toBe("[+]ping ok\n[-]d1 failed: reason withheld\n[-]migrations failed: reason withheld\n[+]scheduler ok\nreadyz check failed\n");
    // An unexpected error's text is not shown, even on the per-check path.
    expect(await runCheck(HEALTH_CHECKS.d1, down)).toBe("d1 check failed (Error)");
    // A database whose schema lacks a table the code needs (a migration not applied).
    const unmigrated = {
      ...env,
      DB: {
        prepare: () => ({ bind: (t: string) => t }),
        batch: async (tables: string[]) => tables.map((t) => ({ results: t === "objects" ? [{ t, c: "resource" }] : [] })),
      },
    } as unknown as Env;
    expect(await runCheck(HEALTH_CHECKS.migrations, unmigrated)).toMatch(/^not migrated: missing objects\.namespace, /);
    // The real one lists every table of the schema.
    expect(await runCheck(HEALTH_CHECKS.migrations, env as unknown as Env)).toBeNull();
  });
});

describe("the recorder", () => {
  it("counts a lease expiry and a heartbeat of the agent path", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys } = await register(token, "metrics-lease", "id-metrics-lease");
    expect((await call("PATCH", `${MC}/metrics-lease`, { spec: { leaseDurationSeconds: 1 } }, { contentType: "application/merge-patch+json" })).status).toBe(
      200,
    );
    expect((await call("POST", "/agent/v1/clusters/metrics-lease/heartbeat", { healthy: true }, { token: await keys.sign("metrics-lease") })).status).toBe(200);
    const before = samples((await scrape()).body as string);
    expect(await withClockAhead(6_000, () => runDurableObjectAlarm(env.CLUSTERS.getByName("metrics-lease")))).toBe(true);
    expect(condition((await call("GET", `${MC}/metrics-lease`)).body, "ManagedClusterConditionAvailable")).toMatchObject({ status: "Unknown" });
    const after = samples((await scrape()).body as string);
    expect((after.get("flotilla_cluster_leases_expired_total") ?? 0) - (before.get("flotilla_cluster_leases_expired_total") ?? 0)).toBe(1);
    expect(after.get('flotilla_agent_heartbeats_total{transport="http",code="200"}')).toBeGreaterThanOrEqual(1);
    expect(after.get('flotilla_cluster_registrations_total{code="201"}')).toBeGreaterThanOrEqual(1);
  });

  it("keeps a batch that could not be stored for the next one", async () => {
    const stored = async () =>
      (await env.METRICS.getByName("metrics").series()).find((c) => c.family === "flotilla_cluster_registrations_total" && c.labels === '{code="599"}')
        ?.values[0] ?? 0;
    count(COUNTED.registrations, { code: 599 });
    const broken = { METRICS: { getByName: () => ({ add: () => Promise.reject(new Error("unavailable")) }) } } as unknown as Env;
    expect(await flushMetrics(broken)).toBe(false);
    expect(await stored()).toBe(0);
    count(COUNTED.registrations, { code: 599 });
    expect(await flushMetrics(env)).toBe(true);
    expect(await stored()).toBe(2);
  });
});

describe("the metrics object", () => {
  it("appends a batch as one row and folds the batches into one row per series, the totals unchanged", async () => {
    const stub = env.METRICS.getByName("metrics-fold-test");
    const cells = (i: number): BatchCell[] => [
      ["fold_test_total", '{code="200"}', [1]],
      ["fold_test_total", `{code="${i % 2 ? "500" : "200"}x"}`, [2]],
      ["fold_test_seconds", "{}", [1, 0, 1, 0.5, 1]],
    ];
    const rows = () =>
      runInDurableObject(stub, (_o: MetricsObject, state) => ({
        batches: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM batches").one().n,
        series: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM series").one().n,
      }));
    const total = (family: string, labels: string) => async () => (await stub.series()).find((c) => c.family === family && c.labels === labels)?.values;
    for (let i = 0; i < FOLD_BATCHES - 1; i++) await stub.add(cells(i));
    // Not folded yet: one row per batch, the scrape adds them up.
    expect(await rows()).toEqual({ batches: FOLD_BATCHES - 1, series: 0 });
    expect(await total("fold_test_total", '{code="200"}')()).toEqual([FOLD_BATCHES - 1]);
    await stub.add(cells(FOLD_BATCHES - 1));
    // Folded: one row per series, no batch left, the same totals.
    expect(await rows()).toEqual({ batches: 0, series: 4 });
    expect(await total("fold_test_total", '{code="200"}')()).toEqual([FOLD_BATCHES]);
    expect(await total("fold_test_total", '{code="500x"}')()).toEqual([FOLD_BATCHES]);
    expect(await total("fold_test_seconds", "{}")()).toEqual([FOLD_BATCHES, 0, FOLD_BATCHES, FOLD_BATCHES / 2, FOLD_BATCHES]);
    // After the fold, new batches add to the folded totals; malformed cells are left out.
    await stub.add([...cells(0), ["fold_test_total", '{code="200"}', [Number.NaN]]] as BatchCell[]);
    expect(await total("fold_test_total", '{code="200"}')()).toEqual([FOLD_BATCHES + 1]);
    expect((await stub.series()).filter((c) => c.family === "fold_test_total" && c.labels === '{code="200"}')).toHaveLength(1);
    expect(await rows()).toEqual({ batches: 1, series: 4 });
  });
});
