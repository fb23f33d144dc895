/**
 * Namespaces (core v1) with Kubernetes' semantics: the strategy (phase, the `kubernetes`
 * finalizer, the name label), NamespaceLifecycle admission (a create needs an existing, active
 * namespace; `default`, `kube-system` and `kube-public` may not be deleted), deletion (its content
 * goes, then the namespace) and a ManagedCluster's namespace, created with the cluster.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, countingD1, createNamespaces, createToken, MC, NAMESPACES, register, snapshot, merge } from "./helpers.ts";
import { waitFor } from "../wait.ts";
import { resourceKey } from "../../src/k8s/kind.ts";
import { NamespaceKind } from "../../src/kinds/namespace.ts";
import { SecretKind } from "../../src/kinds/secret.ts";
import { admittedStoreOf } from "../../src/admission/store.ts";

const G = "/apis/cluster.open-cluster-management.io";
const placements = (ns: string) => `${G}/v1beta1/namespaces/${ns}/placements`;
const placement = (name: string) => ({ apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name }, spec: {} });
const secret = (name: string) => ({ apiVersion: "v1", kind: "Secret", metadata: { name }, stringData: { a: "b" } });

describe("Namespace", () => {
  it("is served under /api/v1 with the ns short name, status and finalize subresources", async () => {
    const list = await call("GET", "/api/v1");
    const names = list.body.resources.map((r: { name: string }) => r.name);
    expect(names).toEqual(expect.arrayContaining(["namespaces", "namespaces/status", "namespaces/finalize"]));
    const ns = list.body.resources.find((r: { name: string }) => r.name === "namespaces");
    expect(ns).toMatchObject({ kind: "Namespace", namespaced: false, shortNames: ["ns"], singularName: "namespace" });
    expect(list.body.resources.find((r: { name: string }) => r.name === "namespaces/finalize").verbs).toEqual(["update"]);
    // As kube-apiserver's: no deletecollection of namespaces.
    expect(ns.verbs).toEqual(["create", "delete", "get", "list", "patch", "update", "watch"]);
    expect((await call("DELETE", NAMESPACES)).status).toBe(405);
    expect((await call("GET", `${NAMESPACES}/default`)).status).toBe(200);
  });

  it("creates an Active namespace with the kubernetes finalizer and the name label", async () => {
    const r = await call("POST", NAMESPACES, { apiVersion: "v1", kind: "Namespace", metadata: { name: "team-a", labels: { team: "a" } } });
    expect(r.status).toBe(201);
    expect(r.body.spec).toEqual({ finalizers: ["kubernetes"] });
    expect(r.body.status).toEqual({ phase: "Active" });
    expect(r.body.metadata.labels).toEqual({ team: "a", "kubernetes.io/metadata.name": "team-a" });
    expect(r.body.metadata.namespace).toBeUndefined();
    // An update keeps spec.finalizers and status; the name label comes back.
    const u = await call("PUT", `${NAMESPACES}/team-a`, {
      ...r.body,
      metadata: { ...r.body.metadata, labels: { team: "b" } },
      spec: { finalizers: [] },
      status: { phase: "Terminating" },
    });
    expect(u.status).toBe(200);
    expect(u.body.spec).toEqual({ finalizers: ["kubernetes"] });
    expect(u.body.status).toEqual({ phase: "Active" });
    expect(u.body.metadata.labels).toEqual({ team: "b", "kubernetes.io/metadata.name": "team-a" });
    // A name must be a DNS-1123 label; a finalizer a standard or qualified name.
    expect((await call("POST", NAMESPACES, { metadata: { name: "a.b" } })).status).toBe(422);
    const bad = await call("POST", NAMESPACES, { metadata: { name: "fin" }, spec: { finalizers: ["nope"] } });
    expect(bad.status).toBe(422);
    expect(bad.body.message).toContain("name is neither a standard finalizer name nor is it fully qualified");
  });

  it("prints NAME, STATUS and AGE for kubectl", async () => {
    await createNamespaces("printed");
    const t = await call("GET", `${NAMESPACES}/printed`, undefined, { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } });
    expect(t.status).toBe(200);
    expect(t.body.columnDefinitions.map((c: { name: string }) => c.name)).toEqual(["Name", "Status", "Age"]);
    expect(t.body.rows[0].cells.slice(0, 2)).toEqual(["printed", "Active"]);
  });

  it("default, kube-system and kube-public exist and may not be deleted", async () => {
    const list = await call("GET", NAMESPACES);
    const names = list.body.items.map((n: { metadata: { name: string } }) => n.metadata.name);
    expect(names).toEqual(expect.arrayContaining(["default", "kube-system", "kube-public", "kube-node-lease"]));
    for (const name of ["default", "kube-system", "kube-public"]) {
      const before = await snapshot();
      const r = await call("DELETE", `${NAMESPACES}/${name}`);
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({ reason: "Forbidden", message: `namespaces "${name}" is forbidden: this namespace may not be deleted` });
      expect(await snapshot()).toBe(before);
    }
  });

  it("refuses a create in a namespace that does not exist with the namespace's NotFound", async () => {
    const before = await snapshot();
    const r = await call("POST", placements("nowhere"), placement("p"));
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ reason: "NotFound", message: 'namespaces "nowhere" not found', details: { name: "nowhere", kind: "namespaces" } });
    const s = await call("POST", "/api/v1/namespaces/nowhere/secrets", secret("s"));
    expect(s.status).toBe(404);
    // So does an apply that would create, and a dry run.
    const apply = await call("PATCH", `${placements("nowhere")}/p?fieldManager=t`, placement("p"), { contentType: "application/apply-patch+yaml" });
    expect(apply.status).toBe(404);
    expect((await call("POST", `${placements("nowhere")}?dryRun=All`, placement("p"))).status).toBe(404);
    expect(await snapshot()).toBe(before);
    // In `default` and once created, it works.
    expect((await call("POST", placements("default"), placement("p"))).status).toBe(201);
    await createNamespaces("somewhere");
    expect((await call("POST", placements("somewhere"), placement("p"))).status).toBe(201);
  });

  it("deleting a namespace terminates it, deletes what it holds, then the namespace", async () => {
    await createNamespaces("doomed", "kept");
    expect((await call("POST", placements("doomed"), placement("p1"))).status).toBe(201);
    expect((await call("POST", "/api/v1/namespaces/doomed/secrets", secret("s1"))).status).toBe(201);
    expect((await call("POST", placements("kept"), placement("p1"))).status).toBe(201);
    const d = await call("DELETE", `${NAMESPACES}/doomed`);
    expect(d.status).toBe(200);
    expect(d.body.metadata.deletionTimestamp).toBeTruthy();
    expect(d.body.status.phase).toBe("Terminating");
    await waitFor("namespace doomed to go", async () => (await call("GET", `${NAMESPACES}/doomed`)).status === 404, 10_000);
    expect((await call("GET", placements("doomed"))).body.items).toEqual([]);
    expect((await call("GET", "/api/v1/namespaces/doomed/secrets")).body.items).toEqual([]);
    expect((await call("GET", placements("kept"))).body.items).toHaveLength(1);
    // Created again, it is a new, empty namespace.
    await createNamespaces("doomed");
    expect((await call("GET", `${NAMESPACES}/doomed`)).body.status.phase).toBe("Active");
  });

  it("refuses new content in a terminating namespace with kube-apiserver's 403, and finishes when the finalizers go", async () => {
    await createNamespaces("held");
    // A Placement kept by a finalizer of someone else's holds the namespace in Terminating.
    const p = await call("POST", placements("held"), { ...placement("p"), metadata: { name: "p", finalizers: ["example.com/hold"] } });
    expect(p.status).toBe(201);
    const d = await call("DELETE", `${NAMESPACES}/held`);
    expect(d.status).toBe(200);
    expect(d.body.status.phase).toBe("Terminating");
    // A second delete answers the namespace, unchanged.
    const again = await call("DELETE", `${NAMESPACES}/held`);
    expect(again.status).toBe(200);
    expect(again.body.metadata.deletionTimestamp).toBe(d.body.metadata.deletionTimestamp);
    const refused = await call("POST", placements("held"), placement("late"));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      reason: "Forbidden",
      message:
        'placements.cluster.open-cluster-management.io "late" is forbidden: unable to create new content in namespace held because it is being terminated',
      details: { causes: [{ reason: "NamespaceTerminating", message: "namespace held is being terminated", field: "metadata.namespace" }] },
    });
    const ns = (await call("GET", `${NAMESPACES}/held`)).body;
    expect(ns.status.conditions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: "NamespaceContentRemaining",
          status: "True",
          reason: "SomeResourcesRemain",
          message: "Some resources are remaining: placements.cluster.open-cluster-management.io has 1 resource instances",
        }),
        expect.objectContaining({
          type: "NamespaceFinalizersRemaining",
          status: "True",
          message: "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
        }),
      ]),
    );
    // Updates of what is there still work; the finalizer's owner lets go, and the sweep finishes.
    expect((await call("PATCH", `${placements("held")}/p`, { metadata: { finalizers: null } }, merge)).status).toBe(200);
    const { sweepOutbox } = await import("../../src/store/outbox.ts");
    await waitFor(
      "namespace held to go",
      async () => {
        await env.DB.prepare("UPDATE outbox SET due_at = 0").run();
        await sweepOutbox(env, Date.now());
        return (await call("GET", `${NAMESPACES}/held`)).status === 404;
      },
      10_000,
    );
  });

  it("a namespace read Active just before its delete refuses the next create at once (kubectl GETs the namespace before each create)", async () => {
    await createNamespaces("seen");
    // Read Active: the next create's admission is spared its own read of the namespace for a moment.
    expect((await call("GET", `${NAMESPACES}/seen`)).body.status.phase).toBe("Active");
    expect((await call("POST", placements("seen"), { ...placement("kept"), metadata: { name: "kept", finalizers: ["example.com/hold"] } })).status).toBe(201);
    expect((await call("GET", `${NAMESPACES}/seen`)).status).toBe(200);
    expect((await call("DELETE", `${NAMESPACES}/seen`)).status).toBe(200);
    // The delete went through this isolate: what it remembered is forgotten, and the create is refused.
    expect((await call("POST", placements("seen"), placement("late"))).status).toBe(403);
    expect((await call("POST", "/api/v1/namespaces/seen/secrets", secret("late"))).status).toBe(403);
    expect((await call("PATCH", `${placements("seen")}/kept`, { metadata: { finalizers: null } }, merge)).status).toBe(200);
    const { sweepOutbox } = await import("../../src/store/outbox.ts");
    await waitFor(
      "namespace seen to go",
      async () => {
        await env.DB.prepare("UPDATE outbox SET due_at = 0").run();
        await sweepOutbox(env, Date.now());
        return (await call("GET", `${NAMESPACES}/seen`)).status === 404;
      },
      10_000,
    );
    expect((await call("POST", "/api/v1/namespaces/seen/secrets", secret("gone"))).status).toBe(404);
  });

  it("a create checks its namespace in its own commit: another isolate's delete just after a read Active is seen at once", async () => {
    await createNamespaces("racing");
    // Read Active here (kubectl's GET before each create), then deleted by another isolate: its
    // row changed in D1 behind this isolate's back.
    expect((await call("GET", `${NAMESPACES}/racing`)).body.status.phase).toBe("Active");
    await env.DB.prepare(
      "UPDATE objects SET body = json_set(body, '$.status.phase', 'Terminating', '$.metadata.deletionTimestamp', '2026-11-30T00:00:00Z') WHERE resource = ? AND namespace = '' AND name = 'racing'",
    )
      .bind(resourceKey(NamespaceKind))
      .run();
    let before = await snapshot();
    const refused = await call("POST", "/api/v1/namespaces/racing/secrets", secret("late"));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      reason: "Forbidden",
      message: 'secrets "late" is forbidden: unable to create new content in namespace racing because it is being terminated',
      details: { causes: [{ reason: "NamespaceTerminating", field: "metadata.namespace" }] },
    });
    expect(await snapshot()).toBe(before);
    // Gone altogether: the namespace's NotFound, and nothing written either.
    expect((await call("GET", `${NAMESPACES}/racing`)).status).toBe(200);
    await env.DB.prepare("DELETE FROM objects WHERE resource = ? AND namespace = '' AND name = 'racing'").bind(resourceKey(NamespaceKind)).run();
    before = await snapshot();
    const gone = await call("POST", placements("racing"), placement("late"));
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ reason: "NotFound", message: 'namespaces "racing" not found', details: { name: "racing", kind: "namespaces" } });
    expect(await snapshot()).toBe(before);
  });

  it("a create reads nothing before its commit; the namespace's refusal comes before the object's own errors", async () => {
    await createNamespaces("counted");
    const { env: counting, calls } = countingD1();
    const store = admittedStoreOf(counting, SecretKind);
    await store.write("counted", undefined, { verb: "create", body: secret("one") });
    // The commit's batch is the create's first D1 call: no read of the namespace before it.
    expect(calls[0]).toMatch(/^batch of /);
    // A duplicate in an active namespace is AlreadyExists; an invalid object in a missing
    // namespace gets the namespace's NotFound, as kube-apiserver's admission runs before validation.
    await expect(store.write("counted", undefined, { verb: "create", body: secret("one") })).rejects.toMatchObject({ code: 409, reason: "AlreadyExists" });
    const invalid = secret("Not_Valid");
    await expect(store.write("nowhere-counted", undefined, { verb: "create", body: invalid })).rejects.toMatchObject({
      code: 404,
      message: 'namespaces "nowhere-counted" not found',
    });
    await expect(store.write("counted", undefined, { verb: "create", body: invalid })).rejects.toMatchObject({ code: 422 });
  });

  it("a namespace whose replica set holds a finalizer goes once the replica set's works are gone, without further requests", async () => {
    await createNamespaces("rsns");
    const cluster = await call("POST", MC, {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "rsc1" },
      spec: { hubAcceptsClient: true },
    });
    expect(cluster.status).toBe(201);
    const available = { type: "ManagedClusterConditionAvailable", status: "True", reason: "Test", message: "", lastTransitionTime: "2026-01-01T00:00:00Z" };
    expect((await call("PATCH", `${MC}/rsc1/status`, { status: { conditions: [available] } }, merge)).status).toBe(200);
    const G2 = "/apis/cluster.open-cluster-management.io/v1beta2";
    expect(
      (
        await call("POST", `${G2}/namespaces/rsns/managedclustersetbindings`, {
          apiVersion: "cluster.open-cluster-management.io/v1beta2",
          kind: "ManagedClusterSetBinding",
          metadata: { name: "default" },
          spec: { clusterSet: "default" },
        })
      ).status,
    ).toBe(201);
    expect((await call("POST", placements("rsns"), placement("all"))).status).toBe(201);
    const mwrs = {
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name: "app" },
      spec: {
        placementRefs: [{ name: "all" }],
        manifestWorkTemplate: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" } }] } },
      },
    };
    const RS = "/apis/work.open-cluster-management.io/v1alpha1/namespaces/rsns/manifestworkreplicasets";
    expect((await call("POST", RS, mwrs)).status).toBe(201);
    const WORKS = "/apis/work.open-cluster-management.io/v1/namespaces/rsc1/manifestworks";
    await waitFor("the replica set's work", async () => (await call("GET", WORKS)).body.items.length === 1, 10_000);
    expect((await call("DELETE", `${NAMESPACES}/rsns`)).status).toBe(200);
    await waitFor("namespace rsns to go", async () => (await call("GET", `${NAMESPACES}/rsns`)).status === 404, 20_000);
    expect((await call("GET", RS)).body.items).toEqual([]);
    expect((await call("GET", WORKS)).body.items).toEqual([]);
  });

  it("a ManagedCluster's namespace is created with it and kept after it", async () => {
    const r = await call("POST", MC, {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "nscluster" },
      spec: { hubAcceptsClient: true },
    });
    expect(r.status).toBe(201);
    const ns = await call("GET", `${NAMESPACES}/nscluster`);
    expect(ns.status).toBe(200);
    expect(ns.body.metadata.labels).toEqual({ "kubernetes.io/metadata.name": "nscluster", "open-cluster-management.io/cluster-name": "nscluster" });
    const work = {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "w" },
      spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" } }] } },
    };
    expect((await call("POST", "/apis/work.open-cluster-management.io/v1/namespaces/nscluster/manifestworks", work)).status).toBe(201);
    expect((await call("DELETE", `${MC}/nscluster`)).status).toBe(200);
    expect((await call("GET", `${NAMESPACES}/nscluster`)).status).toBe(200);
  });

  it("an accepted cluster's namespace comes back once its deletion completed; acceptance waits for a terminating one to go", async () => {
    expect(
      (
        await call("POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "nsback" },
          spec: { hubAcceptsClient: true },
        })
      ).status,
    ).toBe(201);
    const first = (await call("GET", `${NAMESPACES}/nsback`)).body.metadata.uid;
    expect((await call("DELETE", `${NAMESPACES}/nsback`)).status).toBe(200);
    await waitFor(
      "namespace nsback back",
      async () => {
        const r = await call("GET", `${NAMESPACES}/nsback`);
        return r.status === 200 && r.body.metadata.uid !== first && r.body.status.phase === "Active";
      },
      10_000,
    );
    expect((await call("GET", `${NAMESPACES}/nsback`)).body.metadata.labels).toMatchObject({ "open-cluster-management.io/cluster-name": "nsback" });

    // A cluster not accepted yet, whose namespace is held in Terminating by a finalizer.
    expect(
      (
        await call("POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "nshold" },
          spec: { hubAcceptsClient: false },
        })
      ).status,
    ).toBe(201);
    const held = await call("POST", placements("nshold"), { ...placement("p"), metadata: { name: "p", finalizers: ["example.com/hold"] } });
    expect(held.status).toBe(201);
    expect((await call("DELETE", `${NAMESPACES}/nshold`)).status).toBe(200);
    const before = await snapshot();
    const refused = await call("PATCH", `${MC}/nshold`, { spec: { hubAcceptsClient: true } }, merge);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      reason: "Forbidden",
      message: 'managedclusters/accept.cluster.open-cluster-management.io "nshold" is forbidden: cluster namespace "nshold" is terminating',
      details: { name: "nshold", group: "cluster.open-cluster-management.io", kind: "managedclusters/accept" },
    });
    expect(await snapshot()).toBe(before);
    expect((await call("GET", `${MC}/nshold`)).body.spec.hubAcceptsClient).toBe(false);
    // Other changes of the cluster still go through.
    expect((await call("PATCH", `${MC}/nshold`, { metadata: { labels: { team: "a" } } }, merge)).status).toBe(200);
    // Once the namespace is gone, acceptance works and creates it again.
    expect((await call("PATCH", `${placements("nshold")}/p`, { metadata: { finalizers: null } }, merge)).status).toBe(200);
    const { sweepOutbox } = await import("../../src/store/outbox.ts");
    await waitFor(
      "namespace nshold to go",
      async () => {
        await env.DB.prepare("UPDATE outbox SET due_at = 0").run();
        await sweepOutbox(env, Date.now());
        return (await call("GET", `${NAMESPACES}/nshold`)).status === 404;
      },
      10_000,
    );
    expect((await call("PATCH", `${MC}/nshold`, { spec: { hubAcceptsClient: true } }, merge)).status).toBe(200);
    expect((await call("GET", `${NAMESPACES}/nshold`)).body.status.phase).toBe("Active");
  });

  it("takes a strategic merge patch, as kube-apiserver does for its core kinds (custom resources get 415)", async () => {
    await createNamespaces("smp");
    const smp = { contentType: "application/strategic-merge-patch+json" };
    const r = await call("PATCH", `${NAMESPACES}/smp`, { metadata: { labels: { team: "a" }, finalizers: ["example.com/x"] } }, smp);
    expect(r.status).toBe(200);
    expect(r.body.metadata.labels).toEqual({ team: "a", "kubernetes.io/metadata.name": "smp" });
    const again = await call("PATCH", `${NAMESPACES}/smp`, { metadata: { finalizers: ["example.com/y"] } }, smp);
    expect(again.body.metadata.finalizers).toEqual(["example.com/x", "example.com/y"]);
    await call("POST", placements("smp"), placement("p"));
    expect((await call("PATCH", `${placements("smp")}/p`, { metadata: { labels: { a: "b" } } }, smp)).status).toBe(415);
  });

  it("an agent's registration creates its cluster's namespace too, before the agent is accepted", async () => {
    const token = await createToken({});
    const { res } = await register(token, "nsagent", "id-nsagent");
    expect(res.status).toBe(201);
    expect((await call("GET", `${MC}/nsagent`)).body.spec.hubAcceptsClient).toBeFalsy();
    const ns = await call("GET", `${NAMESPACES}/nsagent`);
    expect(ns.status).toBe(200);
    expect(ns.body.metadata.labels["open-cluster-management.io/cluster-name"]).toBe("nsagent");
  });

  it("the finalize subresource changes spec.finalizers only", async () => {
    await createNamespaces("fin2");
    const ns = (await call("GET", `${NAMESPACES}/fin2`)).body;
    const r = await call("PUT", `${NAMESPACES}/fin2/finalize`, {
      ...ns,
      metadata: { ...ns.metadata, labels: { x: "y" } },
      spec: { finalizers: ["example.com/mine"] },
    });
    expect(r.status).toBe(200);
    expect(r.body.spec).toEqual({ finalizers: ["example.com/mine"] });
    expect(r.body.metadata.labels).toEqual({ "kubernetes.io/metadata.name": "fin2" });
    expect((await call("GET", `${NAMESPACES}/fin2/finalize`)).status).toBe(405);
  });
});
