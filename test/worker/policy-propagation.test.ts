/**
 * The policy propagator (src/policy/) inside workerd, over the HTTP API, as OCM's
 * governance-policy-propagator behaves: a bound Policy is replicated as `<ns>.<name>` into each
 * decided cluster's namespace with OCM's labels, follows spec changes, leaves clusters that leave
 * the decisions, goes with its binding, when disabled or deleted; the replicas' compliance
 * (written here through `/status`, as the agent path writes it) is gathered into the root's status
 * cluster by cluster; a PolicySet's status aggregates its policies.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../wait.ts";
import { ADMIN, call, createNamespaces, MC, MCSET, createCluster, merge, POLICIES } from "./helpers.ts";
import worker from "../../src/index.ts";
import type { Env } from "../../src/env.ts";

const NS = "gov";
const G = "/apis/cluster.open-cluster-management.io";
const P = "/apis/policy.open-cluster-management.io";
const PBS = `${P}/v1/namespaces/${NS}/placementbindings`;
const SETS = `${P}/v1beta1/namespaces/${NS}/policysets`;
const PLACEMENTS = `${G}/v1beta1/namespaces/${NS}/placements`;
const CS = "cluster.open-cluster-management.io/clusterset";
const ROOT = "policy.open-cluster-management.io/root-policy";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

async function placement(name: string, matchLabels: Record<string, string>) {
  const p = await call("POST", PLACEMENTS, {
    apiVersion: "cluster.open-cluster-management.io/v1beta1",
    kind: "Placement",
    metadata: { name },
    spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels } } }] },
  });
  expect(p.status, JSON.stringify(p.body)).toBe(201);
}

function policy(name: string, extra: Json = {}): Json {
  return {
    apiVersion: "policy.open-cluster-management.io/v1",
    kind: "Policy",
    metadata: { name, labels: { team: "platform" }, annotations: { "policy.open-cluster-management.io/standards": "NIST SP 800-53", note: "root only?" } },
    spec: {
      disabled: false,
      "policy-templates": [
        {
          objectDefinition: {
            apiVersion: "policy.open-cluster-management.io/v1",
            kind: "ConfigurationPolicy",
            metadata: { name: `${name}-ns` },
            spec: {
              remediationAction: "inform",
              severity: "low",
              "object-templates": [{ complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name: "prod" } } }],
            },
          },
        },
      ],
      ...extra,
    },
  };
}

async function create(url: string, body: Json) {
  const r = await call("POST", url, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

function binding(name: string, placementName: string, subjects: { kind: string; name: string }[], extra: Json = {}): Json {
  return {
    apiVersion: "policy.open-cluster-management.io/v1",
    kind: "PlacementBinding",
    metadata: { name },
    placementRef: { apiGroup: "cluster.open-cluster-management.io", kind: "Placement", name: placementName },
    subjects: subjects.map((s) => ({ apiGroup: "policy.open-cluster-management.io", ...s })),
    ...extra,
  };
}

/** The replicas of root `name` of NS, by cluster. */
async function replicas(name: string): Promise<Record<string, Json>> {
  const r = await call("GET", `${P}/v1/policies?labelSelector=${encodeURIComponent(`${ROOT}=${NS}.${name}`)}`);
  expect(r.status).toBe(200);
  return Object.fromEntries(r.body.items.map((p: Json) => [p.metadata.namespace, p]));
}

const root = async (name: string) => (await call("GET", `${POLICIES(NS)}/${name}`)).body;

/** Writes a replica's compliance through /status, as the agent path does. */
async function report(clusterName: string, name: string, compliant: string) {
  const r = await call(
    "PATCH",
    `${POLICIES(clusterName)}/${NS}.${name}/status`,
    {
      status: {
        compliant,
        details: [
          {
            compliant,
            templateMeta: { name: `${name}-ns` },
            history: [{ eventName: `${NS}.${name}.1`, lastTimestamp: "2026-11-26T17:00:00Z", message: `${compliant}; test` }],
          },
        ],
      },
    },
    merge,
  );
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

beforeAll(async () => {
  await createNamespaces(NS);
  expect(
    (await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "fleet" } })).status,
  ).toBe(201);
  expect(
    (
      await call("POST", `${G}/v1beta2/namespaces/${NS}/managedclustersetbindings`, {
        apiVersion: "cluster.open-cluster-management.io/v1beta2",
        kind: "ManagedClusterSetBinding",
        metadata: { name: "fleet" },
        spec: { clusterSet: "fleet" },
      })
    ).status,
  ).toBe(201);
  for (const c of ["p1", "p2", "p3"]) await createCluster(c, { [CS]: "fleet", env: "prod" });
  await createCluster("d1", { [CS]: "fleet", env: "dev" });
  await placement("prod", { env: "prod" });
  await placement("dev", { env: "dev" });
});

describe("propagation", () => {
  it("replicates a bound policy into each decided cluster's namespace", async () => {
    await create(POLICIES(NS), policy("ns-prod"));
    expect(await replicas("ns-prod")).toEqual({});
    await create(PBS, binding("bind-ns-prod", "prod", [{ kind: "Policy", name: "ns-prod" }]));
    const rs = await replicas("ns-prod");
    expect(Object.keys(rs).sort()).toEqual(["p1", "p2", "p3"]);
    for (const [c, r] of Object.entries(rs)) {
      expect(r.metadata.name).toBe(`${NS}.ns-prod`);
      expect(r.metadata.labels).toEqual({
        team: "platform",
        "policy.open-cluster-management.io/root-policy": `${NS}.ns-prod`,
        "policy.open-cluster-management.io/cluster-name": c,
        "policy.open-cluster-management.io/cluster-namespace": c,
      });
      expect(r.metadata.annotations).toMatchObject({
        "policy.open-cluster-management.io/standards": "NIST SP 800-53",
        "argocd.argoproj.io/compare-options": "IgnoreExtraneous",
      });
      expect(r.spec).toEqual(policy("ns-prod").spec);
    }
    expect((await call("GET", `${POLICIES("d1")}/${NS}.ns-prod`)).status).toBe(404);
    const status = (await root("ns-prod")).status;
    expect(status.placement).toEqual([{ placementBinding: "bind-ns-prod", placement: "prod" }]);
    expect(status.status).toEqual(["p1", "p2", "p3"].map((c) => ({ clustername: c, clusternamespace: c })));
    expect(status.compliant).toBeUndefined();
  });

  it("spec updates propagate; the policy's remediationAction is carried to the replicas", async () => {
    const r = await call("PATCH", `${POLICIES(NS)}/ns-prod`, { spec: { remediationAction: "enforce" } }, merge);
    expect(r.status).toBe(200);
    for (const rep of Object.values(await replicas("ns-prod"))) expect(rep.spec.remediationAction).toBe("enforce");
    expect((await call("PATCH", `${POLICIES(NS)}/ns-prod`, { spec: { remediationAction: null } }, merge)).status).toBe(200);
    for (const rep of Object.values(await replicas("ns-prod"))) expect(rep.spec.remediationAction).toBeUndefined();
  });

  it("aggregates the replicas' compliance into the root's status", async () => {
    await report("p1", "ns-prod", "Compliant");
    let s = (await root("ns-prod")).status;
    expect(s.status).toEqual([
      { clustername: "p1", clusternamespace: "p1", compliant: "Compliant" },
      { clustername: "p2", clusternamespace: "p2" },
      { clustername: "p3", clusternamespace: "p3" },
    ]);
    expect(s.compliant).toBeUndefined();
    await report("p2", "ns-prod", "Compliant");
    await report("p3", "ns-prod", "Compliant");
    s = (await root("ns-prod")).status;
    expect(s.compliant).toBe("Compliant");
    expect(s.placement).toEqual([{ placementBinding: "bind-ns-prod", placement: "prod" }]);
    // The replica's details stay as the agent wrote them; the root carries none.
    expect((await replicas("ns-prod")).p1!.status.details[0].history[0].message).toBe("Compliant; test");
    expect(s.details).toBeUndefined();
  });

  it("root compliance: NonCompliant over Pending over Compliant", async () => {
    await report("p2", "ns-prod", "Pending");
    expect((await root("ns-prod")).status.compliant).toBe("Pending");
    await report("p3", "ns-prod", "NonCompliant");
    expect((await root("ns-prod")).status.compliant).toBe("NonCompliant");
    await report("p3", "ns-prod", "Compliant");
    await report("p2", "ns-prod", "Compliant");
    expect((await root("ns-prod")).status.compliant).toBe("Compliant");
  });

  it("concurrent reports of every cluster end in one status holding each", async () => {
    await Promise.all(["p1", "p2", "p3"].map((c) => report(c, "ns-prod", "NonCompliant")));
    let s = (await root("ns-prod")).status;
    expect(s.status.map((e: Json) => e.compliant)).toEqual(["NonCompliant", "NonCompliant", "NonCompliant"]);
    expect(s.compliant).toBe("NonCompliant");
    await Promise.all(["p3", "p1", "p2"].map((c) => report(c, "ns-prod", "Compliant")));
    s = (await root("ns-prod")).status;
    expect(s.status.map((e: Json) => e.compliant)).toEqual(["Compliant", "Compliant", "Compliant"]);
    expect(s.compliant).toBe("Compliant");
  });

  it("a cluster leaving the decisions loses its replicated policy", async () => {
    expect((await call("PATCH", `${MC}/p3`, { metadata: { labels: { env: "staging" } } }, merge)).status).toBe(200);
    await waitFor(
      "p3's replica removed",
      async () =>
        Object.keys(await replicas("ns-prod"))
          .sort()
          .join() === "p1,p2",
      20_000,
    );
    expect((await call("GET", `${POLICIES("p3")}/${NS}.ns-prod`)).status).toBe(404);
    await waitFor("two clusters in the status", async () => (await root("ns-prod")).status.status.length === 2, 20_000);
    expect((await root("ns-prod")).status.status.map((e: Json) => e.clustername)).toEqual(["p1", "p2"]);
    // Back in the decisions: replicated again, its compliance unknown until reported.
    expect((await call("PATCH", `${MC}/p3`, { metadata: { labels: { env: "prod" } } }, merge)).status).toBe(200);
    await waitFor("p3 replicated again", async () => Object.keys(await replicas("ns-prod")).length === 3, 20_000);
    await waitFor("three clusters in the status", async () => (await root("ns-prod")).status.status.length === 3, 20_000);
    expect((await root("ns-prod")).status.compliant).toBeUndefined();
    await report("p3", "ns-prod", "Compliant");
    expect((await root("ns-prod")).status.compliant).toBe("Compliant");
  });

  it("disabled removes the replicas", async () => {
    expect((await call("PATCH", `${POLICIES(NS)}/ns-prod`, { spec: { disabled: true } }, merge)).status).toBe(200);
    expect(await replicas("ns-prod")).toEqual({});
    const s = (await root("ns-prod")).status;
    expect(s.status).toBeUndefined();
    expect(s.compliant).toBeUndefined();
    expect(s.placement).toEqual([{ placementBinding: "bind-ns-prod", placement: "prod" }]);
    expect((await call("PATCH", `${POLICIES(NS)}/ns-prod`, { spec: { disabled: false } }, merge)).status).toBe(200);
    expect(Object.keys(await replicas("ns-prod")).sort()).toEqual(["p1", "p2", "p3"]);
  });

  it("copyPolicyMetadata false keeps only the policy framework's labels and annotations", async () => {
    await create(POLICIES(NS), policy("meta", { copyPolicyMetadata: false }));
    await create(PBS, binding("bind-meta", "dev", [{ kind: "Policy", name: "meta" }]));
    const r = (await replicas("meta")).d1!;
    expect(r.metadata.labels.team).toBeUndefined();
    expect(r.metadata.labels["policy.open-cluster-management.io/cluster-name"]).toBe("d1");
    expect(r.metadata.annotations).toEqual({
      "policy.open-cluster-management.io/standards": "NIST SP 800-53",
      "argocd.argoproj.io/compare-options": "IgnoreExtraneous",
    });
  });

  it("bindingOverrides and subFilter restricted: enforce on the restricted binding's clusters only", async () => {
    await create(POLICIES(NS), policy("ovr"));
    await create(PBS, binding("bind-ovr", "prod", [{ kind: "Policy", name: "ovr" }]));
    // A restricted binding places nothing of its own (d1 gets no replica) and enforces where others place.
    await create(PLACEMENTS, { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name: "all" }, spec: {} });
    await create(
      PBS,
      binding("bind-ovr-enforce", "all", [{ kind: "Policy", name: "ovr" }], { bindingOverrides: { remediationAction: "enforce" }, subFilter: "restricted" }),
    );
    await waitFor("replicas enforcing", async () => Object.values(await replicas("ovr")).every((r) => r.spec.remediationAction === "enforce"), 20_000);
    const rs = await replicas("ovr");
    expect(Object.keys(rs).sort()).toEqual(["p1", "p2", "p3"]);
    expect((await root("ovr")).spec.remediationAction).toBeUndefined();
    expect((await root("ovr")).status.placement.map((p: Json) => p.placementBinding)).toEqual(["bind-ovr", "bind-ovr-enforce"]);
  });

  it("the binding going removes the replicas", async () => {
    expect((await call("DELETE", `${PBS}/bind-ovr`)).status).toBe(200);
    expect(await replicas("ovr")).toEqual({});
    const s = (await root("ovr")).status;
    expect(s.placement).toBeUndefined();
    expect(s.status).toBeUndefined();
  });

  it("deleting the root removes its replicas", async () => {
    expect((await call("DELETE", `${POLICIES(NS)}/meta`)).status).toBe(200);
    expect(await replicas("meta")).toEqual({});
  });
});

describe("PolicySet", () => {
  it("a PolicySet's binding places its policies", async () => {
    await create(POLICIES(NS), policy("set-a"));
    await create(POLICIES(NS), policy("set-b"));
    await create(SETS, {
      apiVersion: "policy.open-cluster-management.io/v1beta1",
      kind: "PolicySet",
      metadata: { name: "hardening" },
      spec: { description: "d", policies: ["set-a", "set-b", "set-missing"] },
    });
    await create(PBS, binding("bind-hardening", "dev", [{ kind: "PolicySet", name: "hardening" }]));
    expect(Object.keys(await replicas("set-a"))).toEqual(["d1"]);
    expect(Object.keys(await replicas("set-b"))).toEqual(["d1"]);
    expect((await root("set-a")).status.placement).toEqual([{ placementBinding: "bind-hardening", placement: "dev", policySet: "hardening" }]);
  });

  it("PolicySet status aggregates its policies", async () => {
    const set = async () => (await call("GET", `${SETS}/hardening`)).body.status;
    let s = await set();
    expect(s.placement).toEqual([{ placementBinding: "bind-hardening", placement: "dev" }]);
    expect(s.compliant).toBeUndefined();
    expect(s.statusMessage).toBe("No status provided while awaiting policy status: set-a, set-b; Deleted policies: set-missing");
    await report("d1", "set-a", "Compliant");
    await report("d1", "set-b", "Compliant");
    s = await set();
    expect(s.compliant).toBe("Compliant");
    expect(s.statusMessage).toBe("Deleted policies: set-missing");
    await report("d1", "set-b", "NonCompliant");
    expect((await set()).compliant).toBe("NonCompliant");
    // Removing the missing policy, disabling one: OCM's words.
    expect((await call("PATCH", `${SETS}/hardening`, { spec: { policies: ["set-a", "set-b"] } }, merge)).status).toBe(200);
    expect((await call("PATCH", `${POLICIES(NS)}/set-b`, { spec: { disabled: true } }, merge)).status).toBe(200);
    s = await set();
    expect(s.statusMessage).toBe("Disabled policies: set-b");
    expect(s.compliant).toBe("Compliant");
    expect(await replicas("set-b")).toEqual({});
    // A policy leaving the set leaves the set's clusters.
    expect((await call("PATCH", `${SETS}/hardening`, { spec: { policies: ["set-b"] } }, merge)).status).toBe(200);
    expect(await replicas("set-a")).toEqual({});
    expect((await root("set-a")).status.placement).toBeUndefined();
  });
});

/**
 * The D1 statements one request runs (each statement of a batch counted), with its after-commit
 * work: the request is served by the Worker's handler with a D1 binding that counts.
 */
async function counted(method: string, path: string, body: unknown, contentType = "application/json") {
  let queries = 0;
  const real = new WeakMap<object, D1PreparedStatement>();
  const wrap = (st: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(st, {
      get(t, k) {
        const v = Reflect.get(t, k) as unknown;
        if (typeof v !== "function") return v;
        if (k === "bind") return (...a: unknown[]) => wrap((v as (...x: unknown[]) => D1PreparedStatement).apply(t, a));
        if (k === "first" || k === "all" || k === "run" || k === "raw")
          return (...a: unknown[]) => {
            queries++;
            return (v as (...x: unknown[]) => unknown).apply(t, a);
          };
        return (v as (...x: unknown[]) => unknown).bind(t);
      },
    });
    real.set(proxy, st);
    return proxy;
  };
  const db = (env as unknown as Env).DB;
  const DB = new Proxy(db, {
    get(t, k) {
      const v = Reflect.get(t, k) as unknown;
      if (k === "prepare") return (q: string) => wrap(t.prepare(q));
      if (k === "batch")
        return (sts: D1PreparedStatement[]) => {
          queries += sts.length;
          return t.batch(sts.map((x) => real.get(x) ?? x));
        };
      return typeof v === "function" ? (v as (...x: unknown[]) => unknown).bind(t) : v;
    },
  });
  const ctx = createExecutionContext();
  const started = performance.now();
  const res = await worker.fetch(
    new Request(`https://hub.test${path}`, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": contentType }, body: JSON.stringify(body) }),
    { ...(env as unknown as Env), DB },
    ctx,
  );
  const text = await res.text();
  await waitOnExecutionContext(ctx);
  return { status: res.status, body: JSON.parse(text), queries, ms: performance.now() - started };
}

describe("a PolicySet's reconcile stays within D1's 1,000 queries per invocation", () => {
  it("a set naming 4,000 policies (most absent) is created within the budget; a change of one member costs what one member costs", async () => {
    await create(POLICIES(NS), policy("big-a"));
    await create(PBS, binding("bind-big", "dev", [{ kind: "PolicySet", name: "big" }]));
    const names = ["big-a", ...Array.from({ length: 3_999 }, (_, i) => `absent-${i}`)];
    const set = { apiVersion: "policy.open-cluster-management.io/v1beta1", kind: "PolicySet", metadata: { name: "big" }, spec: { policies: names } };
    const made = await counted("POST", SETS, set);
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    console.log(`PolicySet of ${names.length} names created: ${made.queries} D1 queries, ${Math.round(made.ms)} ms`);
    expect(made.queries).toBeLessThan(1_000);
    // Placed through the set, its status gathered.
    expect(Object.keys(await replicas("big-a"))).toEqual(["d1"]);
    expect((await call("GET", `${SETS}/big`)).body.status.statusMessage).toMatch(
      /^No status provided while awaiting policy status: big-a; Deleted policies: absent-0, /,
    );

    // One member more: only it is reconciled, whatever the length of the list.
    await create(POLICIES(NS), policy("big-b"));
    const grown = await counted("PATCH", `${SETS}/big`, { spec: { policies: [...names, "big-b"] } }, "application/merge-patch+json");
    expect(grown.status, JSON.stringify(grown.body)).toBe(200);
    console.log(`one member added to it: ${grown.queries} D1 queries, ${Math.round(grown.ms)} ms`);
    // A constant, whatever the list's length: 36 statements until each commit batch ended with
    // the counter's one catch-up statement (migrations/0017_counter_per_batch.sql), 40 since.
    expect(grown.queries).toBeLessThan(50);
    expect(Object.keys(await replicas("big-b"))).toEqual(["d1"]);
    // One member's compliance: its root's status and the set's, a constant number of queries.
    const reported = await counted("PATCH", `${POLICIES("d1")}/${NS}.big-a/status`, { status: { compliant: "Compliant" } }, "application/merge-patch+json");
    expect(reported.status, JSON.stringify(reported.body)).toBe(200);
    console.log(`one member's compliance reported: ${reported.queries} D1 queries, ${Math.round(reported.ms)} ms`);
    expect(reported.queries).toBeLessThan(40);
    await waitFor("the set's status after big-a's compliance", async () =>
      ((await call("GET", `${SETS}/big`)).body.status.statusMessage as string).startsWith("No status provided while awaiting policy status: big-b;"),
    );
  });
});
