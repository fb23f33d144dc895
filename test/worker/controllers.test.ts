// Every controller is reconciled once per change (issue 41): a Placement create, followed to its
// replica set's work, counted at the hooks' dispatcher. Each registered hook is wrapped by a spy
// that tallies its runs by what it reconciles: the placement, for the decisions' consumers (the
// policy propagator and replica sets wake on a placement's decisions), else the change it ran
// for (the written object and what the change owed it).
import { beforeAll, describe, expect, it } from "vitest";
import { hookNamed, registerAfterCommitHook, type AfterCommitHook } from "../../src/store/hooks.ts";
import { CONTROLLERS } from "../../src/controllers.ts";
import { call, createNamespaces, MC, MCSET } from "./helpers.ts";

const G = "/apis/cluster.open-cluster-management.io";
const W = "/apis/work.open-cluster-management.io";
const merge = { contentType: "application/merge-patch+json" };
const CS = "cluster.open-cluster-management.io/clusterset";

/** What a hook's run reconciles: the placement a decision consumer follows, else the change (see the file's comment). */
function reconciled(owed: unknown, target: { resource: string; namespace: string; name: string }): string {
  const o = owed as { placement?: string; namespace?: string } | null;
  if (o && typeof o === "object" && typeof o.placement === "string")
    return `placement ${o.placement.includes("/") ? o.placement : `${o.namespace}/${o.placement}`}`;
  return `${target.resource} ${target.namespace}/${target.name} ${JSON.stringify(owed)}`;
}

/** Wraps every hook of the manifest with a spy that tallies its runs; returns the tally and the undo. */
function tallyRuns(): { runs: Map<string, number>; restore: () => void } {
  const runs = new Map<string, number>();
  const originals: AfterCommitHook<unknown>[] = [];
  for (const c of CONTROLLERS) {
    const hook = c.hook && hookNamed(c.hook.name);
    if (!hook) continue;
    originals.push(hook);
    registerAfterCommitHook<unknown>({
      name: hook.name,
      plan: (change) => hook.plan(change),
      run: (env, owed, target) => {
        const key = `${hook.name}: ${reconciled(owed, target)}`;
        runs.set(key, (runs.get(key) ?? 0) + 1);
        return hook.run(env, owed, target);
      },
    });
  }
  return { runs, restore: () => originals.forEach((h) => registerAfterCommitHook(h)) };
}

describe("a Placement create runs each controller once per change", () => {
  beforeAll(async () => {
    await createNamespaces("once");
    expect(
      (await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "onceset" } }))
        .status,
    ).toBe(201);
    const created = await call("POST", MC, {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "once-c1", labels: { [CS]: "onceset" } },
      spec: { hubAcceptsClient: true },
    });
    expect(created.status).toBe(201);
    const available = { type: "ManagedClusterConditionAvailable", status: "True", reason: "Test", message: "test", lastTransitionTime: "2026-01-01T00:00:00Z" };
    expect((await call("PATCH", `${MC}/once-c1/status`, { status: { conditions: [available] } }, merge)).status).toBe(200);
    expect(
      (
        await call("POST", `${G}/v1beta2/namespaces/once/managedclustersetbindings`, {
          apiVersion: "cluster.open-cluster-management.io/v1beta2",
          kind: "ManagedClusterSetBinding",
          metadata: { name: "onceset" },
          spec: { clusterSet: "onceset" },
        })
      ).status,
    ).toBe(201);
    const rs = await call("POST", `${W}/v1alpha1/namespaces/once/manifestworkreplicasets`, {
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name: "app" },
      spec: {
        placementRefs: [{ name: "p", rolloutStrategy: { type: "All" } }],
        manifestWorkTemplate: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "app", namespace: "default" } }] } },
      },
    });
    expect(rs.status).toBe(201);
  });

  it("reconciles the placement's policies and replica sets once, and every other change once", async () => {
    const { runs, restore } = tallyRuns();
    try {
      const p = await call("POST", `${G}/v1beta1/namespaces/once/placements`, {
        apiVersion: "cluster.open-cluster-management.io/v1beta1",
        kind: "Placement",
        metadata: { name: "p" },
        spec: { clusterSets: ["onceset"] },
      });
      expect(p.status).toBe(201);
      // The create returns once the decisions and the replica set's works followed.
      expect((await call("GET", `${W}/v1/namespaces/once-c1/manifestworks/once.app`)).status).toBe(200);
    } finally {
      restore();
    }
    const twice = [...runs].filter(([, n]) => n > 1);
    expect(twice, JSON.stringify([...runs], null, 1)).toEqual([]);
    expect(runs.get("policy-propagator: placement once/p")).toBe(1);
    expect(runs.get("replicasets: placement once/p")).toBe(1);
    expect([...runs.keys()].filter((k) => k.startsWith("schedule: ") && k.includes("/placements once/p "))).toHaveLength(1);
  });
});

// A scheduler run that moves several placements' decisions owes each decision consumer a run per
// decision; the runs of one run's decisions share their lookups (src/store/hooks.ts
// `SharedReads`), so the namespace's replica sets, bindings and ClusterManagementAddOns are read
// once per scheduler run, not once per decision (bench:costs, "a change that moves 10
// placements' decisions": 30 lists before).
describe("the decision consumers of one scheduler run share their reads", () => {
  it("hands the runs of three placements' decisions one read map, each list read once", async () => {
    await createNamespaces("shared");
    const set = { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "sharedset" } };
    expect((await call("POST", MCSET, set)).status).toBe(201);
    const cluster = {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "shared-c1", labels: { [CS]: "sharedset" } },
      spec: { hubAcceptsClient: true },
    };
    expect((await call("POST", MC, cluster)).status).toBe(201);
    const available = { type: "ManagedClusterConditionAvailable", status: "True", reason: "Test", message: "test", lastTransitionTime: "2026-01-01T00:00:00Z" };
    expect((await call("PATCH", `${MC}/shared-c1/status`, { status: { conditions: [available] } }, merge)).status).toBe(200);
    expect(
      (
        await call("POST", `${G}/v1beta2/namespaces/shared/managedclustersetbindings`, {
          apiVersion: "cluster.open-cluster-management.io/v1beta2",
          kind: "ManagedClusterSetBinding",
          metadata: { name: "sharedset" },
          spec: { clusterSet: "sharedset" },
        })
      ).status,
    ).toBe(201);
    const selector = { labelSelector: { matchLabels: { tier: "gold" } } };
    for (const name of ["a", "b", "c"])
      expect(
        (
          await call("POST", `${G}/v1beta1/namespaces/shared/placements`, {
            apiVersion: "cluster.open-cluster-management.io/v1beta1",
            kind: "Placement",
            metadata: { name },
            spec: { clusterSets: ["sharedset"], predicates: [{ requiredClusterSelector: selector }] },
          })
        ).status,
      ).toBe(201);
    const seen: { hook: string; placement: string; reads: unknown }[] = [];
    const originals: AfterCommitHook<unknown>[] = [];
    for (const name of ["replicasets", "policy-propagator", "addons"]) {
      const hook = hookNamed(name)!;
      originals.push(hook);
      registerAfterCommitHook<unknown>({
        name,
        plan: (change) => hook.plan(change),
        run: (env, owed, target) => {
          const placement = (owed as { placement?: string } | null)?.placement;
          if (placement) seen.push({ hook: name, placement, reads: target.reads });
          return hook.run(env, owed, target);
        },
      });
    }
    try {
      // One label change moves the three placements' decisions (the cluster joins them all).
      expect((await call("PATCH", `${MC}/shared-c1`, { metadata: { labels: { tier: "gold" } } }, merge)).status).toBe(200);
      await expect.poll(() => seen.filter((s) => s.hook === "replicasets").length).toBe(3);
    } finally {
      originals.forEach((h) => registerAfterCommitHook(h));
    }
    const reads = seen[0]!.reads as Map<string, Promise<unknown>> | undefined;
    expect(reads).toBeInstanceOf(Map);
    expect(seen.every((s) => s.reads === reads)).toBe(true);
    expect(new Set(seen.map((s) => `${s.hook} ${s.placement}`)).size).toBe(9);
    expect([...reads!.keys()].sort()).toEqual(["clustermanagementaddons", "manifestworkreplicasets/shared", "placementbindings/shared"]);
  });
});
