// The ManifestWorkReplicaSet controller inside workerd, over the HTTP API: works follow the
// placement's decisions, status reports drive the MWRS status and progressive rollouts,
// rollout timers fire from the replica set's Durable Object alarm, deletion cleans up.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { reportWorkStatus } from "../../src/agent-api/work-report.ts";
import { call, condition, createNamespaces, MC, MCSET, createCluster, merge, MWRS, PLACEMENTS, BINDINGS, placeByLabels as placement } from "./helpers.ts";

const W = "/apis/work.open-cluster-management.io";
const WORK = (cluster: string, name: string) => `${W}/v1/namespaces/${cluster}/manifestworks/${name}`;
const CS = "cluster.open-cluster-management.io/clusterset";
const MWRS_LABEL = "work.open-cluster-management.io/manifestworkreplicaset";
const PLACEMENT_NAME_LABEL = "work.open-cluster-management.io/placementname";

const configMap = (data: Record<string, string>) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "app", namespace: "default" }, data });
const template = (data: Record<string, string> = { v: "1" }) => ({ workload: { manifests: [configMap(data)] } });

async function createReplicaSet(ns: string, name: string, placementRefs: unknown[], tmpl: unknown = template()) {
  const r = await call("POST", MWRS(ns), {
    apiVersion: "work.open-cluster-management.io/v1alpha1",
    kind: "ManifestWorkReplicaSet",
    metadata: { name },
    spec: { manifestWorkTemplate: tmpl, placementRefs },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}

/** The works of a replica set, by cluster (namespace), across all namespaces. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function works(ns: string, name: string): Promise<Record<string, any>> {
  const r = await call("GET", `${W}/v1/manifestworks?labelSelector=${encodeURIComponent(`${MWRS_LABEL}=${ns}.${name}`)}`);
  expect(r.status).toBe(200);
  return Object.fromEntries(r.body.items.map((w: { metadata: { namespace: string } }) => [w.metadata.namespace, w]));
}

const mwrs = async (ns: string, name: string) => (await call("GET", `${MWRS(ns)}/${name}`)).body;

const cond = (type: string, status: string, observedGeneration: number) => ({
  type,
  status,
  observedGeneration,
  reason: "Test",
  message: "",
  lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
});

/** Reports a work's status as an admin through the status subresource, at the work's current generation unless told. */
async function report(cluster: string, work: string, state: "succeeded" | "progressing" | "degraded", generation?: number) {
  const gen = generation ?? (await call("GET", WORK(cluster, work))).body.metadata.generation;
  const conditions = [cond("Applied", "True", gen), cond("Available", "True", gen), cond("Progressing", state === "succeeded" ? "False" : "True", gen)];
  if (state === "degraded") conditions.push(cond("Degraded", "True", gen));
  const r = await call("PATCH", `${WORK(cluster, work)}/status`, { status: { conditions } }, merge);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  // A status report runs its replica set shortly after the write (the object's alarm, set to
  // now); wait for a run that starts after the report, as the alarm's would.
  const [ns, name] = [work.slice(0, work.indexOf(".")), work.slice(work.indexOf(".") + 1)];
  await env.REPLICASETS.getByName(`${ns}/${name}`).reconcile(ns, name);
}

async function waitFor(check: () => Promise<boolean>, ms = 8000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(await check()).toBe(true);
}

beforeAll(async () => {
  await createNamespaces("apps", "roll", "grp", "slow");
  expect(
    (await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "fleet" } })).status,
  ).toBe(201);
  for (const c of ["c1", "c2", "c3"]) await createCluster(c, { [CS]: "fleet", app: "web" });
  await createCluster("c4", { [CS]: "fleet", app: "other" });
  for (const c of ["r1", "r2", "r3"]) await createCluster(c, { [CS]: "fleet", app: "roll" });
  for (const c of ["s1", "s2", "s3"]) await createCluster(c, { [CS]: "fleet", app: "slow" });
  await createCluster("g1", { [CS]: "fleet", app: "grp" });
  await createCluster("g2", { [CS]: "fleet", app: "grp", ring: "canary" });
  await createCluster("g3", { [CS]: "fleet", app: "grp" });
});

describe("ManifestWorkReplicaSet", () => {
  it("creates one work per decided cluster, with the labels and the template", async () => {
    await placement("apps", "web", { app: "web" });
    await createReplicaSet("apps", "web", [{ name: "web" }]);
    const ws = await works("apps", "web");
    expect(Object.keys(ws).sort()).toEqual(["c1", "c2", "c3"]);
    for (const w of Object.values(ws)) {
      expect(w.metadata.name).toBe("apps.web");
      expect(w.metadata.labels).toMatchObject({ [MWRS_LABEL]: "apps.web", [PLACEMENT_NAME_LABEL]: "web" });
      expect(w.spec).toEqual(template());
    }
    expect((await call("GET", WORK("c4", "apps.web"))).status).toBe(404);
    const m = await mwrs("apps", "web");
    expect(m.metadata.finalizers).toContain("work.open-cluster-management.io/manifest-work-cleanup");
    expect(m.status.summary).toEqual({ total: 3, applied: 0, available: 0, progressing: 0, degraded: 0 });
    expect(m.status.placementSummary).toEqual([
      { name: "web", availableDecisionGroups: "1 (3 / 3 clusters applied)", summary: { total: 3, applied: 0, available: 0, progressing: 0, degraded: 0 } },
    ]);
    expect(condition(m, "PlacementVerified")).toMatchObject({ status: "True", reason: "AsExpected" });
    expect(condition(m, "PlacementRolledOut")).toMatchObject({ status: "False", reason: "Progressing" });
    expect(condition(m, "ManifestworkApplied")).toMatchObject({ status: "False", reason: "NotAsExpected" });
  });

  it("status reports on the works update the summary and conditions", async () => {
    await report("c1", "apps.web", "succeeded");
    await report("c2", "apps.web", "progressing");
    let m = await mwrs("apps", "web");
    expect(m.status.summary).toEqual({ total: 3, applied: 2, available: 2, progressing: 1, degraded: 0 });
    expect(condition(m, "ManifestworkApplied")).toMatchObject({ status: "False", reason: "Processing" });
    await report("c2", "apps.web", "succeeded");
    await report("c3", "apps.web", "degraded");
    m = await mwrs("apps", "web");
    expect(m.status.summary).toMatchObject({ applied: 3, available: 3, progressing: 1, degraded: 1 });
    expect(condition(m, "ManifestworkApplied")).toMatchObject({ status: "False", reason: "NotAsExpected" });
    expect(condition(m, "PlacementRolledOut")).toMatchObject({ status: "False", reason: "Progressing" });
    await report("c3", "apps.web", "succeeded");
    m = await mwrs("apps", "web");
    expect(m.status.summary).toEqual({ total: 3, applied: 3, available: 3, progressing: 0, degraded: 0 });
    expect(condition(m, "ManifestworkApplied")).toMatchObject({ status: "True", reason: "AsExpected" });
    expect(condition(m, "PlacementRolledOut")).toMatchObject({ status: "True", reason: "Complete" });
  });

  it("reports written at once all reach the summary (their notifications go to the object together)", async () => {
    const gen = (await call("GET", WORK("c1", "apps.web"))).body.metadata.generation;
    const conditions = [cond("Applied", "True", gen), cond("Available", "True", gen), cond("Progressing", "True", gen)];
    const written = await Promise.all(["c1", "c2", "c3"].map((c) => call("PATCH", `${WORK(c, "apps.web")}/status`, { status: { conditions } }, merge)));
    expect(written.map((r) => r.status)).toEqual([200, 200, 200]);
    await waitFor(async () => (await mwrs("apps", "web")).status.summary.progressing === 3);
    expect((await mwrs("apps", "web")).status.summary).toEqual({ total: 3, applied: 3, available: 3, progressing: 3, degraded: 0 });
    for (const c of ["c1", "c2", "c3"]) await report(c, "apps.web", "succeeded");
    expect(condition(await mwrs("apps", "web"), "PlacementRolledOut")).toMatchObject({ status: "True", reason: "Complete" });
  });

  it("agents' reports at once reach the summary; the notifications that took their outbox rows delete them", async () => {
    const gen = (await call("GET", WORK("c1", "apps.web"))).body.metadata.generation;
    const conditions = [cond("Applied", "True", gen), cond("Available", "True", gen), cond("Progressing", "True", gen)];
    // As the channel's report does (durable-objects/cluster.ts): the write answers once committed,
    // its hooks run under waitUntil; the replica set's notification takes the row over.
    const later: Promise<unknown>[] = [];
    const waitUntil = (p: Promise<unknown>) => void later.push(p);
    await Promise.all(
      ["c1", "c2", "c3"].map(async (c) => {
        const uid = (await call("GET", WORK(c, "apps.web"))).body.metadata.uid;
        await reportWorkStatus(env, c, "apps.web", { uid, status: { conditions } }, 0, waitUntil);
      }),
    );
    await Promise.all(later);
    await waitFor(async () => (await mwrs("apps", "web")).status.summary.progressing === 3);
    const left = async () =>
      (await env.DB.prepare("SELECT COUNT(*) AS n FROM outbox WHERE name = 'apps.web' AND resource LIKE '%manifestworks'").first<{ n: number }>())!.n;
    await waitFor(async () => (await left()) === 0);
    for (const c of ["c1", "c2", "c3"]) await report(c, "apps.web", "succeeded");
    expect((await mwrs("apps", "web")).status.summary.progressing).toBe(0);
  });

  it("follows decision changes: a tainted cluster loses its work, a newly selected one gets it", async () => {
    const taint = await call("PATCH", `${MC}/c3`, { spec: { taints: [{ key: "maintenance", effect: "NoSelect" }] } }, merge);
    expect(taint.status).toBe(200);
    expect(Object.keys(await works("apps", "web")).sort()).toEqual(["c1", "c2"]);
    expect((await call("GET", WORK("c3", "apps.web"))).status).toBe(404);
    await call("PATCH", `${MC}/c4`, { metadata: { labels: { app: "web" } } }, merge);
    const ws = await works("apps", "web");
    expect(Object.keys(ws).sort()).toEqual(["c1", "c2", "c4"]);
    expect(ws.c4.spec).toEqual(template());
    expect((await mwrs("apps", "web")).status.summary.total).toBe(3);
  });

  it("a Progressive rollout with maxConcurrency 1 advances one cluster at a time on success at its generation", async () => {
    await placement("roll", "roll", { app: "roll" });
    await createReplicaSet("roll", "app", [{ name: "roll", rolloutStrategy: { type: "Progressive", progressive: { maxConcurrency: 1 } } }]);
    expect(Object.keys(await works("roll", "app"))).toEqual(["r1"]);
    await report("r1", "roll.app", "progressing");
    expect(Object.keys(await works("roll", "app"))).toEqual(["r1"]);
    await report("r1", "roll.app", "succeeded");
    expect(Object.keys(await works("roll", "app")).sort()).toEqual(["r1", "r2"]);
    await report("r2", "roll.app", "succeeded");
    expect(Object.keys(await works("roll", "app")).sort()).toEqual(["r1", "r2", "r3"]);
    await report("r3", "roll.app", "succeeded");
    expect(condition(await mwrs("roll", "app"), "PlacementRolledOut")).toMatchObject({ status: "True", reason: "Complete" });

    // A template change goes to r1 first; the others keep the old content meanwhile.
    const upd = await call("PATCH", `${MWRS("roll")}/app`, { spec: { manifestWorkTemplate: template({ v: "2" }) } }, merge);
    expect(upd.status).toBe(200);
    let ws = await works("roll", "app");
    expect(ws.r1.spec).toEqual(template({ v: "2" }));
    expect(ws.r1.metadata.generation).toBe(2);
    expect(ws.r2.spec).toEqual(template({ v: "1" }));
    expect(ws.r3.spec).toEqual(template({ v: "1" }));
    expect(condition(await mwrs("roll", "app"), "PlacementRolledOut")).toMatchObject({ status: "False", reason: "Progressing" });
    // A success reported for the old generation does not count.
    await report("r1", "roll.app", "succeeded", 1);
    expect((await works("roll", "app")).r2.spec).toEqual(template({ v: "1" }));
    await report("r1", "roll.app", "succeeded", 2);
    ws = await works("roll", "app");
    expect(ws.r2.spec).toEqual(template({ v: "2" }));
    expect(ws.r3.spec).toEqual(template({ v: "1" }));
    await report("r2", "roll.app", "succeeded");
    ws = await works("roll", "app");
    expect(ws.r3.spec).toEqual(template({ v: "2" }));
    await report("r3", "roll.app", "succeeded");
    expect(condition(await mwrs("roll", "app"), "PlacementRolledOut")).toMatchObject({ status: "True", reason: "Complete" });
  });

  it("ProgressivePerGroup with a mandatory group: the canary group first, then the next group at once", async () => {
    await call("POST", BINDINGS("grp"), {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "fleet" },
      spec: { clusterSet: "fleet" },
    });
    const p = await call("POST", PLACEMENTS("grp"), {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "grp" },
      spec: {
        predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { app: "grp" } } } }],
        decisionStrategy: {
          groupStrategy: { decisionGroups: [{ groupName: "canary", groupClusterSelector: { labelSelector: { matchLabels: { ring: "canary" } } } }] },
        },
      },
    });
    expect(p.status).toBe(201);
    await createReplicaSet("grp", "app", [
      { name: "grp", rolloutStrategy: { type: "ProgressivePerGroup", progressivePerGroup: { mandatoryDecisionGroups: [{ groupName: "canary" }] } } },
    ]);
    expect(Object.keys(await works("grp", "app"))).toEqual(["g2"]);
    const m = await mwrs("grp", "app");
    expect(m.status.placementSummary[0].availableDecisionGroups).toBe("2 (1 / 3 clusters applied)");
    await report("g2", "grp.app", "succeeded");
    expect(Object.keys(await works("grp", "app")).sort()).toEqual(["g1", "g2", "g3"]);
  });

  it("progressDeadline: a silent cluster times out on the object's alarm and counts toward maxFailures", async () => {
    await placement("slow", "slow", { app: "slow" });
    await createReplicaSet("slow", "app", [
      { name: "slow", rolloutStrategy: { type: "Progressive", progressive: { maxConcurrency: 1, maxFailures: 1, progressDeadline: "1s" } } },
    ]);
    const first = await works("slow", "app");
    expect(Object.keys(first)).toEqual(["s1"]);
    const writtenAt = Date.parse(first.s1.metadata.annotations["work.flotilla.dev/template-written-at"]);
    const alarm = await runInDurableObject(env.REPLICASETS.getByName("slow/app"), (_o, state) => state.storage.getAlarm());
    // The alarm is set at the moment s1's progressDeadline ends.
    expect(alarm).toBe(writtenAt + 1000);
    // s1 times out (1 failure, tolerated): s2 starts without any request.
    await waitFor(async () => "s2" in (await works("slow", "app")));
    // s2 times out too: 2 failures > maxFailures 1, the rollout stops and s3 never gets a work.
    await new Promise((r) => setTimeout(r, 2500));
    expect(Object.keys(await works("slow", "app")).sort()).toEqual(["s1", "s2"]);
    const m = await mwrs("slow", "app");
    expect(condition(m, "PlacementRolledOut")).toMatchObject({ status: "False", reason: "Progressing" });
    expect(condition(m, "PlacementRolledOut").message).toContain("maxFailures");
  });

  it("PlacementVerified says when the placement has no decisions", async () => {
    await createReplicaSet("apps", "orphan", [{ name: "missing" }]);
    const m = await mwrs("apps", "orphan");
    expect(condition(m, "PlacementVerified")).toMatchObject({ status: "False", reason: "PlacementDecisionNotFound" });
    expect(m.status.summary.total).toBe(0);
    // Creating the placement later brings the works (its decisions trigger the replica set).
    await call("POST", PLACEMENTS("apps"), {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "missing" },
      spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { app: "nothing" } } } }] },
    });
    expect(condition(await mwrs("apps", "orphan"), "PlacementVerified")).toMatchObject({ status: "False", reason: "PlacementDecisionEmpty" });
    await call(
      "PATCH",
      `${PLACEMENTS("apps")}/missing`,
      { spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { app: "roll" } } } }] } },
      merge,
    );
    expect(Object.keys(await works("apps", "orphan")).sort()).toEqual(["r1", "r2", "r3"]);
    expect(condition(await mwrs("apps", "orphan"), "PlacementVerified")).toMatchObject({ status: "True", reason: "AsExpected" });
  });

  it("deleting the replica set deletes its works, then the replica set", async () => {
    expect(Object.keys(await works("apps", "web")).length).toBe(3);
    const del = await call("DELETE", `${MWRS("apps")}/web`);
    expect(del.status).toBe(200);
    expect((await call("GET", `${MWRS("apps")}/web`)).status).toBe(404);
    expect(await works("apps", "web")).toEqual({});
    // Works of other replica sets are untouched.
    expect(Object.keys(await works("apps", "orphan")).length).toBe(3);
  });

  it("a work deleted by someone else is created again", async () => {
    expect((await call("DELETE", WORK("r2", "apps.orphan"))).status).toBe(200);
    await waitFor(async () => "r2" in (await works("apps", "orphan")));
  });

  it("leaves alone a work of its name that someone else created where it is about to go", async () => {
    await createCluster("f1", { [CS]: "fleet", app: "foreign" });
    await placement("apps", "foreign", { app: "foreign" });
    await createReplicaSet("apps", "foreign", [{ name: "foreign" }]);
    expect(Object.keys(await works("apps", "foreign"))).toEqual(["f1"]);
    // A work of the same name, not the replica set's, is written in f2 (no notice reaches the
    // replica set's object, whose copy of the works lacks it), then f2 joins the placement.
    await createCluster("f2", {});
    const mine = {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "apps.foreign" },
      spec: { workload: { manifests: [configMap({ owner: "someone" })] } },
    };
    expect((await call("POST", `${W}/v1/namespaces/f2/manifestworks`, mine)).status).toBe(201);
    expect((await call("PATCH", `${MC}/f2`, { metadata: { labels: { [CS]: "fleet", app: "foreign" } } }, merge)).status).toBe(200);
    await waitFor(async () =>
      /not created by this replica set exists in f2/.test(condition(await mwrs("apps", "foreign"), "PlacementRolledOut")?.message ?? ""),
    );
    const theirs = (await call("GET", WORK("f2", "apps.foreign"))).body;
    expect(theirs.spec.workload.manifests[0].data).toEqual({ owner: "someone" });
    expect(theirs.metadata.labels?.[MWRS_LABEL]).toBeUndefined();
  });

  it("a missing Placement keeps the works, as OCM's controller stops at PlacementDecisionNotFound", async () => {
    await placement("apps", "keep", { app: "roll" });
    await createReplicaSet("apps", "keeper", [{ name: "keep" }]);
    expect(Object.keys(await works("apps", "keeper")).sort()).toEqual(["r1", "r2", "r3"]);
    // The Placement is deleted (by mistake, or a hub restored without it): nothing is torn down.
    expect((await call("DELETE", `${PLACEMENTS("apps")}/keep`)).status).toBe(200);
    await env.REPLICASETS.getByName("apps/keeper").reconcile("apps", "keeper");
    const m = await mwrs("apps", "keeper");
    expect(condition(m, "PlacementVerified")).toMatchObject({ status: "False", reason: "PlacementDecisionNotFound" });
    const kept = await works("apps", "keeper");
    expect(Object.keys(kept).sort()).toEqual(["r1", "r2", "r3"]);
    for (const w of Object.values(kept)) expect(w.metadata.deletionTimestamp).toBeUndefined();
  });

  it("refuses invalid replica sets with 422 and writes nothing", async () => {
    const body = (name: string, spec: Record<string, unknown>) => ({
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name },
      spec,
    });
    const cases: [string, Record<string, unknown>][] = [
      ["no-refs", { manifestWorkTemplate: template() }],
      ["empty-refs", { manifestWorkTemplate: template(), placementRefs: [] }],
      ["no-manifests", { manifestWorkTemplate: { workload: { manifests: [] } }, placementRefs: [{ name: "web" }] }],
      ["too-big", { manifestWorkTemplate: template({ big: "x".repeat(520 * 1024) }), placementRefs: [{ name: "web" }] }],
      ["a-name-too-long-for-the-label-of-its-generated-works-0123456789", { manifestWorkTemplate: template(), placementRefs: [{ name: "web" }] }],
      [
        "bad-duration",
        {
          manifestWorkTemplate: template(),
          placementRefs: [{ name: "web", rolloutStrategy: { type: "Progressive", progressive: { minSuccessTime: "5 minutes" } } }],
        },
      ],
      [
        "bad-concurrency",
        {
          manifestWorkTemplate: template(),
          placementRefs: [{ name: "web", rolloutStrategy: { type: "Progressive", progressive: { maxConcurrency: "150%" } } }],
        },
      ],
    ];
    for (const [name, spec] of cases) {
      const r = await call("POST", MWRS("apps"), body(name, spec));
      expect(r.status, name).toBe(422);
      expect(r.body.kind).toBe("Status");
      expect((await call("GET", `${MWRS("apps")}/${name}`)).status).toBe(404);
      if (`apps.${name}`.length <= 63) expect(await works("apps", name)).toEqual({});
    }
    // OCM's defaults and Go durations are accepted (minSuccessTime "0", "1m30s", "1.5s").
    const durations = { type: "Progressive", progressive: { minSuccessTime: "0", progressDeadline: "1m30s", maxConcurrency: "50%" } };
    const ok = await call(
      "POST",
      MWRS("apps"),
      body("durations", { manifestWorkTemplate: template(), placementRefs: [{ name: "none", rolloutStrategy: durations }] }),
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect(
      (
        await call(
          "PATCH",
          `${MWRS("apps")}/durations`,
          { spec: { placementRefs: [{ name: "none", rolloutStrategy: { type: "All", all: { minSuccessTime: "1.5s" } } }] } },
          merge,
        )
      ).status,
    ).toBe(200);
    // An update to an invalid spec is refused too and changes nothing.
    const before = await mwrs("apps", "orphan");
    const bad = await call("PATCH", `${MWRS("apps")}/orphan`, { spec: { manifestWorkTemplate: { workload: { manifests: [] } } } }, merge);
    expect(bad.status).toBe(422);
    expect((await mwrs("apps", "orphan")).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });
});
