/**
 * ManifestWorkReplicaSet rollback (OCM's enhancement "Support Rollback for ManifestWorkReplicaSet",
 * src/work/replicaset/revisions.ts): a ControllerRevision per distinct template, kept to
 * `revisionHistoryLimit` besides the live ones; `currentRevision` / `updateRevision` /
 * `abortedTime` in status; `failureStrategy: AbortAll` reverting every updated cluster when the
 * rollout fails; an undo (the spec set back to an older revision's template) found again as the
 * newest revision.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { call, condition, createNamespaces, MCSET, createCluster, merge, MWRS, placeByLabels as placement } from "./helpers.ts";

const W = "/apis/work.open-cluster-management.io";
const WORK = (cluster: string, name: string) => `${W}/v1/namespaces/${cluster}/manifestworks/${name}`;
const REVISIONS = (ns: string) => `/apis/apps/v1/namespaces/${ns}/controllerrevisions`;
const CS = "cluster.open-cluster-management.io/clusterset";
const MWRS_LABEL = "work.open-cluster-management.io/manifestworkreplicaset";
const HASH_LABEL = "work.open-cluster-management.io/controller-hash";

const configMap = (data: Record<string, string>) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "app", namespace: "default" }, data });
const template = (v: string) => ({ workload: { manifests: [configMap({ v })] } });

async function createReplicaSet(ns: string, name: string, spec: Record<string, unknown>) {
  const r = await call("POST", MWRS(ns), { apiVersion: "work.open-cluster-management.io/v1alpha1", kind: "ManifestWorkReplicaSet", metadata: { name }, spec });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function works(ns: string, name: string): Promise<Record<string, any>> {
  const r = await call("GET", `${W}/v1/manifestworks?labelSelector=${encodeURIComponent(`${MWRS_LABEL}=${ns}.${name}`)}`);
  expect(r.status).toBe(200);
  return Object.fromEntries(r.body.items.map((w: { metadata: { namespace: string } }) => [w.metadata.namespace, w]));
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function revisions(ns: string, name: string): Promise<any[]> {
  const r = await call("GET", `${REVISIONS(ns)}?labelSelector=${encodeURIComponent(`${MWRS_LABEL}=${ns}.${name}`)}`);
  expect(r.status).toBe(200);
  return r.body.items.sort((a: { revision: number }, b: { revision: number }) => a.revision - b.revision);
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

/** Reports a work's status at its current generation, then waits for a run of its replica set that starts after it. */
async function report(cluster: string, work: string, state: "succeeded" | "degraded") {
  const gen = (await call("GET", WORK(cluster, work))).body.metadata.generation;
  const conditions = [cond("Applied", "True", gen), cond("Available", "True", gen), cond("Progressing", "False", gen)];
  if (state === "degraded") conditions.push(cond("Degraded", "True", gen));
  const r = await call("PATCH", `${WORK(cluster, work)}/status`, { status: { conditions } }, merge);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const [ns, name] = [work.slice(0, work.indexOf(".")), work.slice(work.indexOf(".") + 1)];
  await env.REPLICASETS.getByName(`${ns}/${name}`).reconcile(ns, name);
}

/** Reports every work of the replica set as succeeded. */
async function succeedAll(ns: string, name: string) {
  for (const c of Object.keys(await works(ns, name)).sort()) await report(c, `${ns}.${name}`, "succeeded");
}

const setTemplate = async (ns: string, name: string, v: string) => {
  const r = await call("PATCH", `${MWRS(ns)}/${name}`, { spec: { manifestWorkTemplate: template(v) } }, merge);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
};

async function waitFor(check: () => Promise<boolean>, ms = 8000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(await check()).toBe(true);
}

beforeAll(async () => {
  await createNamespaces("hist", "abort", "first");
  expect(
    (await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "fleet" } })).status,
  ).toBe(201);
  for (const c of ["h1", "h2"]) await createCluster(c, { [CS]: "fleet", app: "hist" });
  for (const c of ["a1", "a2", "a3"]) await createCluster(c, { [CS]: "fleet", app: "abort" });
  for (const c of ["f1", "f2"]) await createCluster(c, { [CS]: "fleet", app: "first" });
});

describe("ManifestWorkReplicaSet revisions and rollback", () => {
  it("keeps a ControllerRevision per distinct template, revisionHistoryLimit of them besides the live ones; an undo is found again as the newest", async () => {
    await placement("hist", "hist", { app: "hist" });
    await createReplicaSet("hist", "web", { manifestWorkTemplate: template("1"), placementRefs: [{ name: "hist" }], revisionHistoryLimit: 1 });
    let m = await mwrs("hist", "web");
    const h1 = m.status.updateRevision as string;
    expect(h1).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]+$/);
    expect(m.status.currentRevision).toBeUndefined();
    expect(condition(m, "Progressing")).toMatchObject({ status: "True", reason: "NewRevisionCreated" });
    let revs = await revisions("hist", "web");
    expect(revs.map((r) => [r.metadata.name, r.revision])).toEqual([[`web-${h1}`, 1]]);
    expect(revs[0].metadata.labels[HASH_LABEL]).toBe(h1);
    expect(revs[0].metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: "ManifestWorkReplicaSet", name: "web", uid: m.metadata.uid, controller: true }),
    ]);
    expect(revs[0].data).toEqual({ spec: { manifestWorkTemplate: template("1") } });
    expect((await works("hist", "web")).h1.metadata.labels[HASH_LABEL]).toBe(h1);
    // kubectl's columns.
    const table = await call("GET", REVISIONS("hist"), undefined, { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } });
    expect(table.body.rows[0].cells.slice(0, 3)).toEqual([`web-${h1}`, "manifestworkreplicaset.work.open-cluster-management.io/web", 1]);

    await succeedAll("hist", "web");
    m = await mwrs("hist", "web");
    expect(m.status.currentRevision).toBe(h1);
    expect(condition(m, "Progressing")).toMatchObject({ status: "True", reason: "NewManifestWorkAvailable" });

    const hashes = [h1];
    for (const v of ["2", "3", "4"]) {
      await setTemplate("hist", "web", v);
      await succeedAll("hist", "web");
      m = await mwrs("hist", "web");
      hashes.push(m.status.updateRevision);
      expect(m.status.currentRevision).toBe(m.status.updateRevision);
    }
    expect(new Set(hashes).size).toBe(4);
    // Live: the current (= update) revision, 4; one more kept (limit 1): 3. 1 and 2 are gone.
    revs = await revisions("hist", "web");
    expect(revs.map((r) => [r.metadata.name, r.revision])).toEqual([
      [`web-${hashes[2]}`, 3],
      [`web-${hashes[3]}`, 4],
    ]);

    // Undo to revision 3: the spec set back to its template (what `flotilla replicaset undo` does).
    const undo = await call("PATCH", `${MWRS("hist")}/web`, { spec: { manifestWorkTemplate: revs[0].data.spec.manifestWorkTemplate } }, merge);
    expect(undo.status).toBe(200);
    m = await mwrs("hist", "web");
    expect(m.status.updateRevision).toBe(hashes[2]);
    expect(m.status.currentRevision).toBe(hashes[3]);
    expect(condition(m, "Progressing")).toMatchObject({ status: "True", reason: "FoundNewRevision" });
    revs = await revisions("hist", "web");
    expect(revs.map((r) => [r.metadata.name, r.revision])).toEqual([
      [`web-${hashes[3]}`, 4],
      [`web-${hashes[2]}`, 5],
    ]);
    const ws = await works("hist", "web");
    for (const c of ["h1", "h2"]) {
      expect(ws[c].spec).toEqual(template("3"));
      expect(ws[c].metadata.labels[HASH_LABEL]).toBe(hashes[2]);
    }
    await succeedAll("hist", "web");
    expect((await mwrs("hist", "web")).status.currentRevision).toBe(hashes[2]);

    // Revisions are the controller's (users read them); deleting the replica set deletes its history.
    const r = await call("PATCH", `${REVISIONS("hist")}/web-${hashes[2]}`, { data: { spec: { manifestWorkTemplate: template("9") } } }, merge);
    expect(r.status).toBe(405);
    expect((await call("DELETE", `${MWRS("hist")}/web`)).status).toBe(200);
    await waitFor(async () => (await revisions("hist", "web")).length === 0);
  });

  it("failureStrategy AbortAll: a failed cluster reverts every updated cluster to the current revision at once; a new template clears the abort", async () => {
    await placement("abort", "abort", { app: "abort" });
    const placementRefs = [{ name: "abort", rolloutStrategy: { type: "All", failureStrategy: "AbortAll" } }];
    await createReplicaSet("abort", "web", { manifestWorkTemplate: template("1"), placementRefs });
    await succeedAll("abort", "web");
    let m = await mwrs("abort", "web");
    const good = m.status.currentRevision as string;
    expect(good).toBe(m.status.updateRevision);

    await setTemplate("abort", "web", "2");
    let ws = await works("abort", "web");
    for (const c of ["a1", "a2", "a3"]) expect(ws[c].spec).toEqual(template("2"));
    m = await mwrs("abort", "web");
    const bad = m.status.updateRevision as string;
    expect(bad).not.toBe(good);
    expect(m.status.abortedTime).toBeUndefined();
    await report("a1", "abort.web", "succeeded");
    await report("a2", "abort.web", "succeeded");
    await report("a3", "abort.web", "degraded");

    // The abort is written first (abortedTime), then the next run (at once, the object's alarm) reverts.
    await waitFor(async () => Object.values(await works("abort", "web")).every((w) => w.metadata.labels[HASH_LABEL] === good));
    m = await mwrs("abort", "web");
    expect(m.status.abortedTime).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(m.status.currentRevision).toBe(good);
    expect(m.status.updateRevision).toBe(bad);
    ws = await works("abort", "web");
    for (const c of ["a1", "a2", "a3"]) {
      expect(ws[c].spec, c).toEqual(template("1"));
      expect(ws[c].metadata.labels[HASH_LABEL]).toBe(good);
    }
    expect(condition(m, "Progressing")).toMatchObject({ status: "False", reason: "RolloutAborted" });
    expect(condition(m, "PlacementRolledOut")).toMatchObject({ status: "False", reason: "RolloutDegraded" });
    expect((await mwrs("abort", "web")).spec.manifestWorkTemplate).toEqual(template("2"));

    // The clusters report the old revision back: the abort holds (nothing goes to the failed revision again).
    await succeedAll("abort", "web");
    m = await mwrs("abort", "web");
    expect(m.status.abortedTime).toBeDefined();
    expect(m.status.currentRevision).toBe(good);
    expect(condition(m, "Progressing")!.message).toContain("every cluster is back");
    for (const w of Object.values(await works("abort", "web"))) expect(w.spec).toEqual(template("1"));

    // A new revision's rollout clears abortedTime and goes out.
    await setTemplate("abort", "web", "3");
    m = await mwrs("abort", "web");
    expect(m.status.abortedTime).toBeUndefined();
    for (const w of Object.values(await works("abort", "web"))) expect(w.spec).toEqual(template("3"));
    await succeedAll("abort", "web");
    m = await mwrs("abort", "web");
    expect(m.status.currentRevision).toBe(m.status.updateRevision);
    expect(condition(m, "PlacementRolledOut")).toMatchObject({ status: "True", reason: "Complete" });
  });

  it("without a current revision (the first rollout failed) AbortAll has nothing to go back to: the rollout only stops", async () => {
    await placement("first", "first", { app: "first" });
    const placementRefs = [{ name: "first", rolloutStrategy: { type: "All", failureStrategy: "AbortAll" } }];
    await createReplicaSet("first", "web", { manifestWorkTemplate: template("1"), placementRefs });
    await report("f1", "first.web", "degraded");
    const m = await mwrs("first", "web");
    expect(m.status.abortedTime).toBeUndefined();
    expect(m.status.currentRevision).toBeUndefined();
    for (const w of Object.values(await works("first", "web"))) expect(w.spec).toEqual(template("1"));
  });

  it("refuses a bad failureStrategy and a negative revisionHistoryLimit", async () => {
    const bad = await call("POST", MWRS("first"), {
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name: "bad" },
      spec: {
        manifestWorkTemplate: template("1"),
        placementRefs: [{ name: "first", rolloutStrategy: { type: "All", failureStrategy: "Pause" } }],
        revisionHistoryLimit: -1,
      },
    });
    expect(bad.status).toBe(422);
    const fields = bad.body.details.causes.map((c: { field: string }) => c.field);
    expect(fields).toEqual(expect.arrayContaining(["spec.revisionHistoryLimit", "spec.placementRefs[0].rolloutStrategy.failureStrategy"]));
  });
});
