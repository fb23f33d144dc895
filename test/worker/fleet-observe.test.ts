// Seeing KubeFleet's placements: kubectl's Table columns of the placements, snapshots and
// bindings as KubeFleet's CRDs print them (config/crd/bases/*.yaml additionalPrinterColumns), with
// the cells a placement's status gives; and the Events KubeFleet's placement controller records
// (pkg/controllers/placement/controller.go): a chain condition turning True at the placement's
// generation, PlacementRolloutCompleted, PlacementCleanupFinalizerRemoved, repeats folded into one
// Event's count as the hub's recorder folds them. The pure rules of src/fleet/events.ts first.
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Condition } from "../../src/k8s/meta.ts";
import { placementEvents } from "../../src/fleet/events.ts";
import { call, condition, createCluster, createNamespaces, merge, reportApplied as report } from "./helpers.ts";

const G = "/apis/placement.kubernetes-fleet.io";
const CRP = (name = "") => `${G}/v1/clusterresourceplacements${name ? `/${name}` : ""}`;
const RP = (ns: string, name = "") => `${G}/v1/namespaces/${ns}/resourceplacements${name ? `/${name}` : ""}`;
const WORK = (cluster: string, name: string) => `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks/${name}`;
const TABLE = { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } };
const P = "ClusterResourcePlacement";

const cond = (type: string, status: "True" | "False" | "Unknown", observedGeneration = 1): Condition => ({
  type,
  status,
  observedGeneration,
  reason: "R",
  message: "",
  lastTransitionTime: "2026-01-01T00:00:00Z",
});
const all = (gen: number, status: "True" | "False" = "True") =>
  ["Scheduled", "RolloutStarted", "Overridden", "WorkSynchronized", "Applied", "Available"].map((t) => cond(`${P}${t}`, status, gen));

describe("placementEvents (KubeFleet's handleUpdate)", () => {
  it("records a chain condition turning True, in order, and the rollout completed", () => {
    expect(placementEvents(P, 1, undefined, [cond(`${P}Scheduled`, "True"), cond(`${P}RolloutStarted`, "True"), cond(`${P}Overridden`, "True")])).toEqual([
      { reason: "PlacementRolloutStarted", message: "Started rolling out the latest resources" },
      { reason: "PlacementOverriddenSucceeded", message: "Placement has been successfully overridden" },
    ]);
    expect(placementEvents(P, 1, all(1).slice(0, 4), all(1)).map((e) => e.reason)).toEqual([
      "PlacementApplied",
      "PlacementAvailable",
      "PlacementRolloutCompleted",
    ]);
  });
  it("records nothing when nothing turned True at the generation", () => {
    expect(placementEvents(P, 1, all(1), all(1))).toEqual([]);
    expect(placementEvents(P, 1, all(1), all(1, "False"))).toEqual([]);
    // Scheduled False: the chain's events, but not completed.
    const unscheduled = [cond(`${P}Scheduled`, "False"), ...all(1).slice(1)];
    expect(placementEvents(P, 1, undefined, unscheduled).map((e) => e.reason)).not.toContain("PlacementRolloutCompleted");
  });
  it("records them again for a new generation (KubeFleet's IsConditionStatusTrue compares observedGeneration)", () => {
    expect(placementEvents(P, 2, all(1), all(2)).map((e) => e.reason)).toEqual([
      "PlacementRolloutStarted",
      "PlacementOverriddenSucceeded",
      "PlacementWorkSynchronized",
      "PlacementApplied",
      "PlacementAvailable",
      "PlacementRolloutCompleted",
    ]);
    // True, but observed at an older generation: not yet True at this one.
    expect(placementEvents(P, 2, all(1), all(1))).toEqual([]);
  });
});

/** Runs a placement's controller now (its object's run; what its alarm does shortly after a notification). */
async function run(namespace: string, name: string) {
  await env.REPLICASETS.getByName(`placement:${namespace}/${name}`).reconcile(`placement:${namespace}`, name);
}

/** The Events about a placement: reason → count (core v1 `count`), in `namespace`. */
async function eventCounts(namespace: string, kind: string, name: string): Promise<Record<string, number>> {
  const r = await call("GET", `/api/v1/namespaces/${namespace}/events`);
  expect(r.status).toBe(200);
  const out: Record<string, number> = {};
  for (const e of r.body.items as { involvedObject: { kind: string; name: string }; reason: string; count: number; source: { component: string } }[]) {
    if (e.involvedObject.kind !== kind || e.involvedObject.name !== name) continue;
    expect(e.source.component).toBe("placement-controller");
    out[e.reason] = (out[e.reason] ?? 0) + e.count;
  }
  return out;
}

/** The Table cells of `path` (one object's Table): column name → cell. */
async function cells(path: string): Promise<Record<string, unknown>> {
  const t = await call("GET", path, undefined, TABLE);
  expect(t.status, JSON.stringify(t.body)).toBe(200);
  expect(t.body.kind).toBe("Table");
  const names = t.body.columnDefinitions.map((c: { name: string }) => c.name);
  return Object.fromEntries(names.map((n: string, i: number) => [n, t.body.rows[0].cells[i]]));
}

async function settled(check: () => Promise<boolean>, ms = 8000) {
  await vi.waitFor(
    async () => {
      if (!(await check())) throw new Error("not yet");
    },
    { timeout: ms, interval: 100 },
  );
}

describe("a placement's columns and events on the hub", () => {
  it("prints KubeFleet's columns for placements, snapshots and bindings, with the status's cells", async () => {
    await createCluster("obs-cols", { obs: "cols" });
    await createNamespaces("obs-app");
    const created = await call("POST", CRP(), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "obs-cols" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "obs-app" }],
        policy: {
          placementType: "PickAll",
          affinity: {
            clusterAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { obs: "cols" } } }] },
            },
          },
        },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await report("obs-cols", "obs-cols-work");
    await run("", "obs-cols");
    await settled(async () => condition((await call("GET", CRP("obs-cols"))).body, `${P}Available`)?.status === "True");

    // kubectl get crp (the v1 and v1beta1 CRDs print the same).
    for (const version of ["v1", "v1beta1"]) {
      const t = await call("GET", `${G}/${version}/clusterresourceplacements/obs-cols`, undefined, TABLE);
      expect(t.body.columnDefinitions.map((c: { name: string; priority: number }) => `${c.name}:${c.priority}`)).toEqual([
        "Name:0",
        "Gen:0",
        "Type:1",
        "Scheduled:0",
        "Scheduled-Gen:0",
        "Work-Synchronized:1",
        "Work-Synchronized-Gen:1",
        "Available:0",
        "Available-Gen:0",
        "Age:0",
      ]);
    }
    const crp = await cells(CRP("obs-cols"));
    // A `string` column prints the generation as text, as apiextensions' table convertor does.
    expect(crp).toMatchObject({
      Name: "obs-cols",
      Gen: "1",
      Type: "PickAll",
      Scheduled: "True",
      "Scheduled-Gen": "1",
      "Work-Synchronized": "True",
      "Work-Synchronized-Gen": "1",
      Available: "True",
      "Available-Gen": "1",
    });
    expect(crp.Age).toMatch(/^\d+s$/);

    // kubectl get crb / crs / csps.
    const crb = await cells(`${G}/v1/clusterresourcebindings/obs-cols-obs-cols`);
    expect(Object.keys(crb)).toEqual(["Name", "WorkSynchronized", "ResourcesApplied", "ResourceAvailable", "Age"]);
    expect(crb).toMatchObject({ WorkSynchronized: "True", ResourcesApplied: "True", ResourceAvailable: "True" });
    const crs = await cells(`${G}/v1/clusterresourcesnapshots/obs-cols-0-snapshot`);
    expect(Object.keys(crs)).toEqual(["Name", "Gen", "Age"]);
    expect(crs.Gen).toBe("1");
    const csps = await cells(`${G}/v1beta1/clusterschedulingpolicysnapshots/obs-cols-0`);
    expect(Object.keys(csps)).toEqual(["Name", "Gen", "Age"]);

    // A ResourcePlacement and its binding and snapshots: the ResourcePlacement<Type> conditions.
    const rp = await call("POST", RP("obs-app"), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourcePlacement",
      metadata: { name: "rp" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Secret", name: "missing" }],
        policy: { placementType: "PickFixed", clusterNames: ["obs-cols"] },
      },
    });
    expect(rp.status, JSON.stringify(rp.body)).toBe(201);
    const rpCells = await cells(RP("obs-app", "rp"));
    expect(rpCells).toMatchObject({ Name: "rp", Gen: "1", Type: "PickFixed", Scheduled: "True", "Scheduled-Gen": "1" });
    expect(Object.keys(await cells(`${G}/v1beta1/namespaces/obs-app/resourcebindings/rp-obs-cols`))).toEqual([
      "Name",
      "WorkSynchronized",
      "ResourcesApplied",
      "ResourceAvailable",
      "Age",
    ]);
    expect(Object.keys(await cells(`${G}/v1beta1/namespaces/obs-app/resourcesnapshots/rp-0-snapshot`))).toEqual(["Name", "Gen", "Age"]);
    expect(Object.keys(await cells(`${G}/v1beta1/namespaces/obs-app/schedulingpolicysnapshots/rp-0`))).toEqual(["Name", "Gen", "Age"]);
  });

  it("records KubeFleet's events as the rollout goes, folds repeats into counts, and one when its finalizer goes", async () => {
    await createCluster("obs-a", { obs: "events" });
    await createCluster("obs-b", { obs: "events" });
    // A ClusterResourcePlacement's Events live in `default` (as a cluster-scoped object's do).
    await createNamespaces("default", "obs-ev");
    expect(
      (await call("POST", "/api/v1/namespaces/obs-ev/configmaps", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings" }, data: { v: "1" } }))
        .status,
    ).toBe(201);
    const created = await call("POST", CRP(), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "obs-ev" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "obs-ev" }],
        policy: {
          placementType: "PickAll",
          affinity: {
            clusterAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { obs: "events" } } }] },
            },
          },
        },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const counts = () => eventCounts("default", P, "obs-ev");
    // Works written: rolled out, no override, synchronized; not applied yet.
    expect(await counts()).toEqual({ PlacementRolloutStarted: 1, PlacementOverriddenSucceeded: 1, PlacementWorkSynchronized: 1 });

    // The agents report: applied, available, completed. Another run changes nothing: no Event.
    await report("obs-a", "obs-ev-work");
    await report("obs-b", "obs-ev-work");
    await run("", "obs-ev");
    const once = {
      PlacementRolloutStarted: 1,
      PlacementOverriddenSucceeded: 1,
      PlacementWorkSynchronized: 1,
      PlacementApplied: 1,
      PlacementAvailable: 1,
      PlacementRolloutCompleted: 1,
    };
    await settled(async () => JSON.stringify(await counts()) === JSON.stringify(once));
    await run("", "obs-ev");
    expect(await counts()).toEqual(once);
    const stored = (await call("GET", "/api/v1/namespaces/default/events")).body.items.find(
      (e: { involvedObject: { name: string }; reason: string }) => e.involvedObject.name === "obs-ev" && e.reason === "PlacementRolloutCompleted",
    );
    expect(stored).toMatchObject({
      type: "Normal",
      message: "Placement has finished the rollout process and reached the desired status",
      involvedObject: { kind: P, apiVersion: "placement.kubernetes-fleet.io/v1beta1", name: "obs-ev", uid: created.body.metadata.uid },
      reportingComponent: "placement-controller",
    });

    // A change of a selected object: a new snapshot rolled out one cluster at a time (25% of 2);
    // once every cluster has it and reports, the same Events again, folded into count 2.
    expect((await call("PATCH", "/api/v1/namespaces/obs-ev/configmaps/settings", { data: { v: "2" } }, merge)).status).toBe(200);
    await run("", "obs-ev");
    const index = async (c: string) => (await call("GET", WORK(c, "obs-ev-work"))).body.metadata.labels["kubernetes-fleet.io/parent-resource-snapshot-index"];
    for (let round = 0; round < 4; round++) {
      for (const c of ["obs-a", "obs-b"]) if ((await index(c)) === "1") await report(c, "obs-ev-work");
      await run("", "obs-ev");
    }
    const twice = Object.fromEntries(Object.keys(once).map((k) => [k, 2]));
    await settled(async () => JSON.stringify(await counts()) === JSON.stringify(twice));

    // A new generation (a spec change that leaves the works as they are): True again at generation 2.
    expect((await call("PATCH", CRP("obs-ev"), { spec: { revisionHistoryLimit: 5 } }, merge)).status).toBe(200);
    await run("", "obs-ev");
    const thrice = Object.fromEntries(Object.keys(once).map((k) => [k, 3]));
    await settled(async () => JSON.stringify(await counts()) === JSON.stringify(thrice));
    const crp = (await call("GET", CRP("obs-ev"))).body;
    expect(crp.metadata.generation).toBe(2);
    expect(condition(crp, `${P}Available`)).toMatchObject({ status: "True", observedGeneration: 2 });

    // Deleted: its works go, then its finalizer, with KubeFleet's Event.
    expect((await call("DELETE", CRP("obs-ev"))).status).toBe(200);
    await settled(async () => (await call("GET", CRP("obs-ev"))).status === 404);
    await settled(async () => (await counts()).PlacementCleanupFinalizerRemoved === 1);
  });

  it("records a ResourcePlacement's events in its namespace", async () => {
    await createCluster("obs-rp", { obs: "rp" });
    await createNamespaces("obs-team");
    expect(
      (await call("POST", "/api/v1/namespaces/obs-team/configmaps", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "app" }, data: { v: "1" } }))
        .status,
    ).toBe(201);
    const created = await call("POST", RP("obs-team"), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourcePlacement",
      metadata: { name: "app" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "app" }],
        policy: { placementType: "PickFixed", clusterNames: ["obs-rp"] },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await report("obs-rp", "obs-team.app-work");
    await run("obs-team", "app");
    await settled(async () => (await eventCounts("obs-team", "ResourcePlacement", "app")).PlacementRolloutCompleted === 1);
    expect(await eventCounts("default", "ResourcePlacement", "app")).toEqual({});
  });
});
