// Every controller is reconciled once per change (issue 41): a Placement create, followed to its
// replica set's work, counted at the hooks' dispatcher. Each registered hook is wrapped by a spy
// that tallies its runs by what it reconciles: the placement, for the decisions' consumers (the
// policy propagator and replica sets wake on a placement's decisions), else the change it ran
// for (the written object and what the change owed it).
import { beforeAll, describe, expect, it } from "vitest";
import { commitStatements, hookNamed, planHooks, registerAfterCommitHook, type AfterCommitHook, type Change } from "../../src/store/hooks.ts";
import type { GuardedBinder } from "../../src/store/d1/objects.ts";
import { CONTROLLERS } from "../../src/controllers.ts";
import { apiVersionOf, type KindDefinition } from "../../src/k8s/kind.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { KINDS } from "../../src/kinds/index.ts";
import { PlacementKind } from "../../src/kinds/placement.ts";
import { MWRS_LABEL } from "../../src/kinds/manifestwork-labels.ts";
import { PLACEMENT_TRACKING_LABEL } from "../../src/kinds/fleet.ts";
import { PLACEMENT_LABEL } from "../../src/scheduling/grouping.ts";
import { CPP_NAME_ANNOTATION, CPP_PERMANENT_ID_LABEL, PP_NAME_ANNOTATION, PP_NAMESPACE_ANNOTATION, PP_PERMANENT_ID_LABEL } from "../../src/kinds/karmada.ts";
import { ADDON_NAME_LABEL } from "../../src/addons/render.ts";
import { ROOT_POLICY_LABEL } from "../../src/kinds/policy.ts";
import { call, createNamespaces, MC, MCSET } from "./helpers.ts";
import { env } from "cloudflare:test";
import { placementNamed, placementReferenceListings } from "../../src/placement/consumers.ts";

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
    expect(runs.get("policy-decision: placement once/p")).toBe(1);
    expect(runs.get("addons-decision: placement once/p")).toBe(1);
    expect(runs.get("replicasets: placement once/p")).toBe(1);
    expect([...runs.keys()].filter((k) => k.startsWith("schedule: ") && k.includes("/placements once/p "))).toHaveLength(1);
  });
});

// A scheduler run that moves several placements' decisions owes each decision consumer a run per
// decision; the runs of one run's decisions share their lookups (src/store/hooks.ts
// `SharedReads`), so the namespace's replica sets are read once per scheduler run, not once per
// decision (bench:costs, "a change that moves 10 placements' decisions": 30 lists before), and
// so is the change counter of the placements' index (src/placement/consumers.ts): no
// ClusterManagementAddOn or PlacementBinding names these placements, so neither the add-on
// manager nor the propagator runs, and neither lists its kind (before: one list of each).
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
    for (const name of ["replicasets", "policy-decision", "addons-decision"]) {
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
    expect([...reads!.keys()].sort()).toEqual(["counter/placement-references", "manifestworkreplicasets/shared"]);
  });
});

// The add-on manager and the policy propagator run for a PlacementDecision only when a
// ClusterManagementAddOn's installStrategy or a PlacementBinding's placementRef names its placement
// (src/placement/consumers.ts): the isolate's index of the named placements, rebuilt when the
// change counter of either kind moved, so an add-on or a binding written since is always seen.
describe("the decision consumers' interest check", () => {
  it("answers from the index while neither kind changed, and sees a new add-on or binding at once", async () => {
    await createNamespaces("named");
    expect(await placementNamed(env, "PlacementBinding", "named/p")).toBe(false);
    expect(await placementNamed(env, "ClusterManagementAddOn", "named/p")).toBe(false);
    const listed = placementReferenceListings();
    expect(await placementNamed(env, "PlacementBinding", "named/p")).toBe(false);
    expect(placementReferenceListings()).toBe(listed);

    const binding = {
      apiVersion: "policy.open-cluster-management.io/v1",
      kind: "PlacementBinding",
      metadata: { name: "b" },
      placementRef: { apiGroup: "cluster.open-cluster-management.io", kind: "Placement", name: "p" },
      subjects: [{ apiGroup: "policy.open-cluster-management.io", kind: "Policy", name: "pol" }],
    };
    expect((await call("POST", "/apis/policy.open-cluster-management.io/v1/namespaces/named/placementbindings", binding)).status).toBe(201);
    expect(await placementNamed(env, "PlacementBinding", "named/p")).toBe(true);
    expect(await placementNamed(env, "PlacementBinding", "named/q")).toBe(false);
    expect(await placementNamed(env, "ClusterManagementAddOn", "named/p")).toBe(false);
    expect(placementReferenceListings()).toBe(listed + 1);

    const addon = {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "named-addon" },
      spec: { installStrategy: { type: "Placements", placements: [{ namespace: "named", name: "q", rolloutStrategy: { type: "All" } }] } },
    };
    expect((await call("POST", "/apis/addon.open-cluster-management.io/v1alpha1/clustermanagementaddons", addon)).status).toBe(201);
    expect(await placementNamed(env, "ClusterManagementAddOn", "named/q")).toBe(true);
    expect(await placementNamed(env, "ClusterManagementAddOn", "named/p")).toBe(false);
    expect(placementReferenceListings()).toBe(listed + 2);
  });
});

// What wakes each hook is data in the manifest (`watches`, src/store/hooks.ts `Watch`): the write
// path calls a hook's `plan` only for the changes its watches match, by a lookup of the change's
// kind. The watches may be wider than the plan, never narrower: for sample changes of every kind
// (created, relabelled, restatused, respecced, deletion started, removed; with and without the
// labels the watches name), every hook whose plan owes something is one the table lists.
describe("the manifest's watches", () => {
  const LABELS = {
    [MWRS_LABEL]: "ns.rs",
    [PLACEMENT_TRACKING_LABEL]: "ns.crp",
    [PLACEMENT_LABEL]: "p",
    [PP_PERMANENT_ID_LABEL]: "id",
    [CPP_PERMANENT_ID_LABEL]: "id",
    [ADDON_NAME_LABEL]: "addon",
    [ROOT_POLICY_LABEL]: "ns.policy",
  };
  const ANNOTATIONS = { [PP_NAME_ANNOTATION]: "pp", [PP_NAMESPACE_ANNOTATION]: "ns", [CPP_NAME_ANNOTATION]: "cpp" };

  function samples(def: KindDefinition): Change[] {
    const namespace = def.namespaced ? "ns" : "";
    const out: Change[] = [];
    for (const labels of [{}, LABELS, ...Object.entries(LABELS).map(([k, v]) => ({ [k]: v }))]) {
      const base = {
        apiVersion: apiVersionOf(def),
        kind: def.kind,
        metadata: {
          name: "default",
          ...(namespace ? { namespace } : {}),
          uid: "u1",
          generation: 1,
          resourceVersion: "1",
          labels,
          annotations: ANNOTATIONS,
          finalizers: ["kubernetes", "cluster.open-cluster-management.io/manifest-work-cleanup", "customresourcecleanup.apiextensions.k8s.io"],
        },
        spec: { hubAcceptsClient: true, parentStageRollout: "run" },
        status: { conditions: [{ type: "ManagedClusterConditionAvailable", status: "Unknown" }], compliant: "NonCompliant" },
      } as unknown as KubeObject;
      const changed = (f: (o: KubeObject & Record<string, unknown>) => void) => {
        const o = structuredClone(base) as KubeObject & Record<string, unknown>;
        f(o);
        return o;
      };
      const variants = [
        changed((o) => (o.metadata.labels = { other: "x" })),
        changed((o) => (o.status = { conditions: [{ type: "Complete", status: "True" }], compliant: "Compliant" })),
        changed((o) => {
          o.metadata.generation = 2;
          o.spec = { other: true };
        }),
        changed((o) => (o.metadata.deletionTimestamp = "2026-01-01T00:00:00Z")),
        changed((o) => (o.metadata.finalizers = [])),
      ];
      const c = (before: KubeObject | null, after: KubeObject | null): Change => ({ def, namespace, name: "default", before, after });
      out.push(c(null, base), c(base, null));
      for (const v of variants) out.push(c(base, v), c(v, base));
    }
    return out;
  }

  it("list, for every kind, each hook whose plan a sample change owes something", () => {
    const missed: string[] = [];
    let checked = 0;
    for (const def of KINDS)
      for (const change of samples(def)) {
        const listed = Object.keys(planHooks(change) ?? {});
        for (const c of CONTROLLERS) {
          if (!c.hook) continue;
          checked++;
          if (c.hook.plan(change as never) !== null && !listed.includes(c.hook.name)) missed.push(`${c.hook.name}: ${def.group}/${def.kind}`);
        }
      }
    expect(checked).toBeGreaterThan(1000);
    expect([...new Set(missed)]).toEqual([]);
  });

  it("add, for every kind, the commit statements of each sample change that owes some", () => {
    const guarded = ((shape: unknown, values: unknown) => ({ shape, values })) as unknown as GuardedBinder;
    const missed: string[] = [];
    for (const def of KINDS)
      for (const change of samples(def)) {
        const owed = CONTROLLERS.flatMap((c) => (c.statements ? c.statements.statements(change, guarded) : []));
        if (commitStatements(change, guarded).length !== owed.length) missed.push(`${def.group}/${def.kind}`);
      }
    expect([...new Set(missed)]).toEqual([]);
  });

  it("call a Placement's write into the scheduling hook and the garbage collector alone", () => {
    const planned: string[] = [];
    const originals: AfterCommitHook<unknown>[] = [];
    for (const c of CONTROLLERS) {
      const hook = c.hook && hookNamed(c.hook.name);
      if (!hook) continue;
      originals.push(hook);
      registerAfterCommitHook<unknown>({ name: hook.name, plan: (change) => (planned.push(hook.name), hook.plan(change)), run: hook.run });
    }
    try {
      const placement = { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name: "p", namespace: "ns" }, spec: {} };
      planHooks({ def: PlacementKind, namespace: "ns", name: "p", before: null, after: placement as unknown as KubeObject });
    } finally {
      originals.forEach((h) => registerAfterCommitHook(h));
    }
    expect(planned).toEqual(["schedule", "garbage-collector"]);
  });
});
