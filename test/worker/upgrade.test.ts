/**
 * An old hub upgraded: the migrations applied to a D1 database that holds what a previous
 * release wrote (its schema without the outbox, its rows; its objects without Namespaces; its
 * schema without hub_secrets)
 * give a hub that answers as before and writes as a fresh one does.
 */
import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, condition, createNamespaces, MC, NAMESPACES, withClockAhead, merge } from "./helpers.ts";
import { serviceAccountAuthenticator } from "../../src/auth/serviceaccounts.ts";
import { clock } from "../../src/clock.ts";
import type { Env } from "../../src/env.ts";
import { waitFor } from "../wait.ts";
import { DEFAULT_EVENT_TTL_SECONDS, expireEvents } from "../../src/events/expiry.ts";
import { setD1Limits } from "../../src/store/d1/limits.ts";
import { database, readEvents } from "../../src/store/d1/objects.ts";
import { findKindByKind } from "../../src/kinds/index.ts";

const G = "/apis/cluster.open-cluster-management.io";
const PLACEMENTS = `${G}/v1beta1/namespaces/apps/placements`;
const DECISIONS = `${G}/v1beta1/namespaces/apps/placementdecisions`;
const WORKS = "/apis/work.open-cluster-management.io/v1/namespaces/up1/manifestworks";
/** The migrations this release adds (the previous release had every other one). */
const NEW_MIGRATIONS = ["0003_outbox.sql", "0006_outbox_lean.sql"];

const schemaOf = async (table: string) =>
  (await env.DB.prepare("SELECT type, name, sql FROM sqlite_master WHERE tbl_name = ? ORDER BY name").bind(table).all()).results;

const everything = async () => {
  const out: Record<string, unknown> = {};
  for (const path of [MC, `${G}/v1beta2/managedclustersets`, `${G}/v1beta2/namespaces/apps/managedclustersetbindings`, PLACEMENTS, DECISIONS, WORKS])
    out[path] = (await call("GET", path)).body.items;
  return out;
};

describe("upgrade from the previous release's database", () => {
  it("applies the new migrations over existing data; the hub answers the same and writes as a fresh one", async () => {
    // What the previous release's hub stored: a cluster with status, a set and binding, a
    // scheduled Placement, a ManifestWork (the rows are the same as this release writes).
    await createNamespaces("apps");
    expect(
      (
        await call("POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "up1", labels: { env: "prod" } },
          spec: { hubAcceptsClient: true },
        })
      ).status,
    ).toBe(201);
    const available = { type: "ManagedClusterConditionAvailable", status: "True", reason: "Test", message: "", lastTransitionTime: "2026-01-01T00:00:00Z" };
    expect((await call("PATCH", `${MC}/up1/status`, { status: { conditions: [available] } }, merge)).status).toBe(200);
    expect(
      (
        await call("POST", `${G}/v1beta2/namespaces/apps/managedclustersetbindings`, {
          apiVersion: "cluster.open-cluster-management.io/v1beta2",
          kind: "ManagedClusterSetBinding",
          metadata: { name: "default" },
          spec: { clusterSet: "default" },
        })
      ).status,
    ).toBe(201);
    expect(
      (await call("POST", PLACEMENTS, { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name: "old" }, spec: {} }))
        .status,
    ).toBe(201);
    const work = {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "w" },
      spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" } }] } },
    };
    expect((await call("POST", WORKS, work)).status).toBe(201);
    const fresh = { outbox: await schemaOf("outbox") };
    expect(fresh.outbox.length).toBeGreaterThan(0);
    const before = await everything();

    // The previous release's schema: without this release's migrations.
    for (const table of ["outbox"]) await env.DB.prepare(`DROP TABLE ${table}`).run();
    for (const m of NEW_MIGRATIONS) await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind(m).run();
    expect(await schemaOf("outbox")).toEqual([]);

    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect(await schemaOf("outbox")).toEqual(fresh.outbox);
    expect(await everything()).toEqual(before);

    // Writes work as on a fresh hub: scheduled before they return, nothing left owing.
    const created = await call("POST", PLACEMENTS, {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "new" },
      spec: {},
    });
    expect(created.status).toBe(201);
    expect(condition(created.body, "PlacementSatisfied")).toMatchObject({ status: "True" });
    const decided = (await call("GET", `${DECISIONS}?labelSelector=cluster.open-cluster-management.io/placement=new`)).body.items;
    expect(decided.flatMap((d: { status: { decisions: { clusterName: string }[] } }) => d.status.decisions.map((x) => x.clusterName))).toEqual(["up1"]);
    expect((await call("PATCH", `${WORKS}/w`, { metadata: { labels: { upgraded: "yes" } } }, merge)).status).toBe(200);
    expect((await call("PATCH", `${MC}/up1`, { metadata: { labels: { upgraded: "yes" } } }, merge)).status).toBe(200);
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM outbox").first<{ n: number }>())!.n).toBe(0);
  });

  it("gives an upgraded hub's data its namespaces: the built-in ones, each cluster's and each holding objects", async () => {
    // What the previous main stored: the same rows, and no Namespace objects at all.
    expect(
      (
        await call("POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "up2" },
          spec: { hubAcceptsClient: true },
        })
      ).status,
    ).toBe(201);
    await createNamespaces("legacy");
    const p2 = `${G}/v1beta1/namespaces/legacy/placements`;
    expect(
      (await call("POST", p2, { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name: "kept" }, spec: {} })).status,
    ).toBe(201);
    const w2 = "/apis/work.open-cluster-management.io/v1/namespaces/up2/manifestworks";
    const work = {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "w" },
      spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" } }] } },
    };
    expect((await call("POST", w2, work)).status).toBe(201);
    await env.DB.prepare("DELETE FROM labels WHERE resource = '/namespaces'").run();
    await env.DB.prepare("DELETE FROM objects WHERE resource = '/namespaces'").run();
    await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind("0007_namespaces.sql").run();
    expect((await call("GET", NAMESPACES)).body.items).toEqual([]);
    const before = await everything();
    const held = { placements: (await call("GET", p2)).body.items, works: (await call("GET", w2)).body.items };

    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);

    // It answers as before, and the namespaces exist, Active, as kube-apiserver makes them.
    expect(await everything()).toEqual(before);
    expect({ placements: (await call("GET", p2)).body.items, works: (await call("GET", w2)).body.items }).toEqual(held);
    const list = (await call("GET", NAMESPACES)).body;
    const names = list.items.map((n: { metadata: { name: string } }) => n.metadata.name);
    expect(names).toEqual(expect.arrayContaining(["apps", "default", "kube-node-lease", "kube-public", "kube-system", "legacy", "up1", "up2"]));
    const up2 = list.items.find((n: { metadata: { name: string } }) => n.metadata.name === "up2");
    expect(up2).toMatchObject({ apiVersion: "v1", kind: "Namespace", spec: { finalizers: ["kubernetes"] }, status: { phase: "Active" } });
    expect(up2.metadata.labels).toEqual({ "kubernetes.io/metadata.name": "up2", "open-cluster-management.io/cluster-name": "up2" });
    expect(up2.metadata.uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Date(up2.metadata.creationTimestamp).getTime()).toBeGreaterThan(0);
    // Each its own resourceVersion, all at or below the collection's.
    const rvs = list.items.map((n: { metadata: { resourceVersion: string } }) => Number(n.metadata.resourceVersion));
    expect(new Set(rvs).size).toBe(rvs.length);
    expect(Math.max(...rvs)).toBeLessThanOrEqual(Number(list.metadata.resourceVersion));
    // The label index knows them.
    const byCluster = (await call("GET", `${NAMESPACES}?labelSelector=open-cluster-management.io/cluster-name%3Dup2`)).body.items;
    expect(byCluster.map((n: { metadata: { name: string } }) => n.metadata.name)).toEqual(["up2"]);

    // Writes work as on a fresh hub: in a namespace that exists, not in one that does not; a
    // migrated namespace is deleted with its content.
    expect(
      (await call("POST", p2, { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name: "new" }, spec: {} })).status,
    ).toBe(201);
    expect(
      (
        await call("POST", `${G}/v1beta1/namespaces/nowhere/placements`, {
          apiVersion: "cluster.open-cluster-management.io/v1beta1",
          kind: "Placement",
          metadata: { name: "new" },
          spec: {},
        })
      ).status,
    ).toBe(404);
    expect((await call("DELETE", `${NAMESPACES}/legacy`)).status).toBe(200);
    expect((await call("GET", `${NAMESPACES}/legacy`)).status).toBe(404);
    expect((await call("GET", p2)).body.items).toEqual([]);
    expect((await call("DELETE", `${NAMESPACES}/default`)).status).toBe(403);
  });

  it("adds hub_secrets and each namespace's default ServiceAccount to a hub from before ServiceAccounts: it answers the same, then issues and verifies tokens", async () => {
    await createNamespaces("apps", "ci");
    expect(
      (await call("POST", PLACEMENTS, { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name: "kept-sa" }, spec: {} }))
        .status,
    ).toBe(201);
    expect(
      (await call("POST", "/api/v1/namespaces/apps/secrets", { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, stringData: { a: "b" } })).status,
    ).toBe(201);
    const fresh = await schemaOf("hub_secrets");
    expect(fresh.length).toBeGreaterThan(0);
    const answers = async () => ({
      ...(await everything()),
      secrets: (await call("GET", "/api/v1/namespaces/apps/secrets")).body.items,
      namespaces: (await call("GET", NAMESPACES)).body.items,
    });
    const before = await answers();

    // The previous main's state: no hub_secrets table, no ServiceAccounts, migration 0008 not applied.
    await env.DB.prepare("DROP TABLE hub_secrets").run();
    await env.DB.prepare("DELETE FROM objects WHERE resource = '/serviceaccounts'").run();
    await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind("0008_serviceaccounts.sql").run();
    expect((await call("GET", "/api/v1/serviceaccounts")).body.items).toEqual([]);
    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect(await schemaOf("hub_secrets")).toEqual(fresh);
    expect(await answers()).toEqual(before);

    // Every namespace has its default ServiceAccount, each with its own UID and resourceVersion.
    const list = (await call("GET", "/api/v1/serviceaccounts")).body;
    const namespaces = (before.namespaces as { metadata: { name: string } }[]).map((n) => n.metadata.name);
    expect(list.items.map((a: { metadata: { namespace: string; name: string } }) => `${a.metadata.namespace}/${a.metadata.name}`)).toEqual(
      namespaces.map((n) => `${n}/default`),
    );
    const rvs = list.items.map((a: { metadata: { resourceVersion: string } }) => Number(a.metadata.resourceVersion));
    expect(new Set(rvs).size).toBe(rvs.length);
    expect(Math.max(...rvs)).toBeLessThanOrEqual(Number(list.metadata.resourceVersion));
    expect(new Set(list.items.map((a: { metadata: { uid: string } }) => a.metadata.uid)).size).toBe(rvs.length);

    // Tokens: issued for a migrated ServiceAccount and taken back by the authenticator.
    const issued = await call("POST", "/api/v1/namespaces/ci/serviceaccounts/default/token", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: {},
    });
    expect(issued.status).toBe(201);
    const user = await serviceAccountAuthenticator(env as unknown as Env)(issued.body.status.token, clock.now());
    expect(user?.name).toBe("system:serviceaccount:ci:default");
  });

  it("the lean outbox migration keeps the rows of writes in flight", async () => {
    await env.DB.prepare("DROP TABLE outbox").run();
    for (const m of NEW_MIGRATIONS) await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind(m).run();
    await applyD1Migrations(
      env.DB,
      env.TEST_MIGRATIONS.filter((m) => m.name === "0003_outbox.sql"),
    );
    await env.DB.prepare(
      "INSERT INTO outbox (id, resource_version, resource, namespace, name, hooks, created_at, due_at, attempts) VALUES ('kept', 7, 'r', 'n', 'm', '{\"schedule\":{}}', 1, 2, 3)",
    ).run();
    expect((await schemaOf("outbox")).map((r) => r.name)).toEqual(["outbox", "outbox_created_at", "outbox_due_at", "sqlite_autoindex_outbox_1"]);
    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect((await schemaOf("outbox")).map((r) => r.name)).toEqual(["outbox"]);
    expect(
      await env.DB.prepare("SELECT * FROM outbox")
        .all()
        .then((r) => r.results),
    ).toEqual([{ id: "kept", resource_version: 7, resource: "r", namespace: "n", name: "m", hooks: '{"schedule":{}}', created_at: 1, due_at: 2, attempts: 3 }]);
  });

  it("gives an upgraded hub its ManagedClusterSet counts: the sets answer as before, and as on a fresh hub once clusters change", async () => {
    const SETS = `${G}/v1beta2/managedclustersets`;
    const set = (name: string, clusterSelector: unknown) => ({
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSet",
      metadata: { name },
      spec: { clusterSelector },
    });
    expect((await call("POST", SETS, set("edge", { selectorType: "ExclusiveClusterSetLabel" }))).status).toBe(201);
    expect(
      (
        await call(
          "POST",
          SETS,
          set("tiered", {
            selectorType: "LabelSelector",
            labelSelector: {
              matchLabels: { tier: "gold" },
              matchExpressions: [
                { key: "zone", operator: "NotIn", values: ["x"] },
                { key: "tier", operator: "Exists" },
                { key: "gpu", operator: "DoesNotExist" },
              ],
            },
          }),
        )
      ).status,
    ).toBe(201);
    expect((await call("POST", SETS, set("unselective", { selectorType: "LabelSelector" }))).status).toBe(201);
    const mc = (name: string, labels: Record<string, string>) => ({
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name, labels },
      spec: { hubAcceptsClient: true },
    });
    for (const [name, labels] of [
      ["u1", { "cluster.open-cluster-management.io/clusterset": "edge", tier: "gold" }],
      ["u2", { tier: "gold", zone: "y" }],
      ["u3", { tier: "gold", gpu: "a100" }],
    ] as const) {
      expect((await call("POST", MC, mc(name, labels))).status).toBe(201);
    }
    const countRows = async () => (await env.DB.prepare("SELECT name, clusters FROM clusterset_counts ORDER BY name").all()).results;
    const fresh = await countRows();
    expect(fresh).toEqual(
      expect.arrayContaining([
        { name: "edge", clusters: 1 },
        { name: "tiered", clusters: 2 },
        { name: "unselective", clusters: 0 },
      ]),
    );
    const answers = async () => ({ ...(await everything()), sets: (await call("GET", SETS)).body.items });
    const before = await answers();

    // The previous release's state: no clusterset_counts table, migration 0011 not applied.
    await env.DB.prepare("DROP TABLE clusterset_counts").run();
    await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind("0011_clusterset_counts.sql").run();
    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect(await countRows()).toEqual(fresh);
    expect(await answers()).toEqual(before);

    // The previous release writes a cluster after the migration, before the new code is deployed
    // (its rows, without the counts): the new code counts each set it uses once more.
    await env.DB.prepare(
      "INSERT INTO objects (resource, namespace, name, uid, resource_version, body) SELECT resource, namespace, 'u4', uid || '-4', resource_version, replace(body, '\"u2\"', '\"u4\"') FROM objects WHERE resource = 'cluster.open-cluster-management.io/managedclusters' AND name = 'u2'",
    ).run();
    await env.DB.prepare(
      "INSERT INTO labels (resource, namespace, name, key, value) SELECT resource, namespace, 'u4', key, value FROM labels WHERE resource = 'cluster.open-cluster-management.io/managedclusters' AND name = 'u2'",
    ).run();
    expect((await call("POST", MC, mc("u5", { tier: "gold" }))).status).toBe(201);
    const tiered = (await call("GET", `${SETS}/tiered`)).body;
    // u1, u2, u4 and u5 (u3 has a gpu label); without the recount the row would say 3.
    expect(condition(tiered, "ClusterSetEmpty")).toMatchObject({ status: "False", message: "4 ManagedClusters selected" });
    const all = (await call("GET", MC)).body.items.length;
    expect(condition((await call("GET", `${SETS}/global`)).body, "ClusterSetEmpty")).toMatchObject({ message: `${all} ManagedClusters selected` });
    // And from then on as a fresh hub: a relabel moves the counts in its own batch.
    expect((await call("PATCH", `${MC}/u2`, { metadata: { labels: { zone: "x" } } }, merge)).status).toBe(200);
    expect(condition((await call("GET", `${SETS}/tiered`)).body, "ClusterSetEmpty")).toMatchObject({ message: "3 ManagedClusters selected" });
    expect(condition((await call("GET", `${SETS}/unselective`)).body, "ClusterSetEmpty")).toMatchObject({
      status: "True",
      message: "No ManagedCluster selected",
    });
    expect(
      await env.DB.prepare("SELECT count(*) AS n FROM clusterset_counts WHERE recount = 1 AND name IN ('tiered', 'global', 'default')").first<{ n: number }>(),
    ).toEqual({ n: 0 });
  });

  it("gives an upgraded hub its audit log: before the migration writes still answer, after it they are recorded", async () => {
    await createNamespaces("audited");
    const secrets = "/api/v1/namespaces/audited/secrets";
    expect((await call("POST", secrets, { apiVersion: "v1", kind: "Secret", metadata: { name: "old" } })).status).toBe(201);
    // The previous main's state: no audit_events table, migration 0008 not applied.
    await env.DB.prepare("DROP TABLE audit_events").run();
    await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind("0009_audit_events.sql").run();
    const before = (await call("GET", secrets)).body.items;
    // Without the table the hub answers as before: a record that cannot be stored never fails a request.
    expect((await call("POST", secrets, { apiVersion: "v1", kind: "Secret", metadata: { name: "unrecorded" } })).status).toBe(201);
    expect((await call("DELETE", `${secrets}/unrecorded`)).status).toBe(200);
    expect((await call("GET", secrets)).body.items).toEqual(before);

    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect((await call("GET", secrets)).body.items).toEqual(before);
    expect((await call("GET", "/apis/flotilla.dev/v1alpha1/auditevents")).body.items).toEqual([]);
    const w = await call("POST", secrets, { apiVersion: "v1", kind: "Secret", metadata: { name: "recorded" } });
    expect(w.status).toBe(201);
    const id = w.headers.get("audit-id");
    const row = await waitFor("the write's audit record", () =>
      env.DB.prepare("SELECT verb FROM audit_events WHERE audit_id = ?").bind(id).first<{ verb: string }>(),
    );
    expect(row!.verb).toBe("create");
  });

  it("gives an upgraded hub the write triggers: its counter and watch log go on from where they were, one event per write", async () => {
    await createNamespaces("trig");
    const secrets = "/api/v1/namespaces/trig/secrets";
    expect((await call("POST", secrets, { apiVersion: "v1", kind: "Secret", metadata: { name: "old" } })).status).toBe(201);
    // The previous main's state: its rows (the same as this release writes), no triggers.
    for (const t of ["objects_added", "objects_modified", "objects_deleted"]) await env.DB.prepare(`DROP TRIGGER ${t}`).run();
    await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind("0010_write_triggers.sql").run();
    const before = (await call("GET", secrets)).body;
    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect((await call("GET", secrets)).body).toEqual(before);

    const from = Number(before.metadata.resourceVersion);
    const created = await call("POST", secrets, { apiVersion: "v1", kind: "Secret", metadata: { name: "new" }, stringData: { a: "1" } });
    expect(created.status).toBe(201);
    const updated = await call("PATCH", `${secrets}/new`, { metadata: { labels: { x: "y" } } }, merge);
    expect(updated.status).toBe(200);
    expect((await call("DELETE", `${secrets}/new`)).status).toBe(200);
    const rows = (
      await env.DB.prepare(
        "SELECT resource_version AS rv, name, type, body FROM events WHERE resource_version > ? AND resource = '/secrets' ORDER BY resource_version",
      )
        .bind(from)
        .all<{ rv: number; name: string; type: string; body: string }>()
    ).results;
    expect(rows.map((r) => [r.name, r.type])).toEqual([
      ["new", "ADDED"],
      ["new", "MODIFIED"],
      ["new", "DELETED"],
    ]);
    expect(rows[0]!.rv).toBe(Number(created.body.metadata.resourceVersion));
    expect(rows[1]!.rv).toBe(Number(updated.body.metadata.resourceVersion));
    expect(rows[2]!.rv).toBeGreaterThan(rows[1]!.rv);
    // DELETED carries the object as it was last stored.
    expect(JSON.parse(rows[2]!.body).metadata.labels).toEqual({ x: "y" });
    const counter = (await env.DB.prepare("SELECT value FROM counters WHERE id = 1").first<{ value: number }>())!.value;
    expect(counter).toBe(rows[2]!.rv);
    expect(Number((await call("GET", secrets)).body.metadata.resourceVersion)).toBe(counter);
  });

  it("gives an upgraded hub the Events' expiry index: Events stored before it expire one TTL after the upgrade, new ones after their write", async () => {
    await createNamespaces("evup");
    const events = "/api/v1/namespaces/evup/events";
    const event = (name: string) => ({
      apiVersion: "v1",
      kind: "Event",
      metadata: { name },
      involvedObject: { kind: "Pod", name: "p", namespace: "evup" },
      reason: "R",
      message: "m",
      type: "Normal",
    });
    expect((await call("POST", events, event("old"))).status).toBe(201);
    // The previous release's schema: no event_ttl (its Events, if a client wrote any, are rows of `objects`).
    await env.DB.prepare("DROP TABLE event_ttl").run();
    await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind("0012_event_ttl.sql").run();
    const before = (await call("GET", events)).body.items;
    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect((await call("GET", events)).body.items).toEqual(before);
    expect(
      await env.DB.prepare("SELECT name FROM event_ttl WHERE namespace = 'evup'")
        .all()
        .then((r) => r.results),
    ).toEqual([{ name: "old" }]);
    expect((await call("POST", events, event("new"))).status).toBe(201);
    const hubEnv = env as unknown as Env;
    // Past one TTL: both go, through the store (a watcher sees them DELETED), and their rows too.
    await withClockAhead((DEFAULT_EVENT_TTL_SECONDS + 60) * 1000, () => expireEvents(hubEnv));
    expect((await call("GET", events)).body.items).toEqual([]);
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM event_ttl WHERE namespace = 'evup'").first<{ n: number }>())!.n).toBe(0);
  });

  it("keeps an upgraded hub's Events' expiry rows, each then costing 2 rows written where it cost 3", async () => {
    await createNamespaces("ttllean");
    const events = "/api/v1/namespaces/ttllean/events";
    const event = (name: string) => ({
      apiVersion: "v1",
      kind: "Event",
      metadata: { name },
      involvedObject: { kind: "Pod", name: "p", namespace: "ttllean" },
      reason: "R",
      message: "m",
      type: "Normal",
    });
    expect((await call("POST", events, event("kept"))).status).toBe(201);
    const ttlRows = async () => (await env.DB.prepare("SELECT namespace, name, written_at FROM event_ttl ORDER BY namespace, name").all()).results;
    const fresh = await ttlRows();
    expect(fresh).toContainEqual(expect.objectContaining({ namespace: "ttllean", name: "kept" }));
    // The previous release's schema: event_ttl with a rowid (migration 0012), its rows kept.
    await env.DB.batch([
      env.DB.prepare("ALTER TABLE event_ttl RENAME TO event_ttl_prev"),
      env.DB.prepare("CREATE TABLE event_ttl (namespace text NOT NULL, name text NOT NULL, written_at integer NOT NULL, PRIMARY KEY (namespace, name))"),
      env.DB.prepare("INSERT INTO event_ttl SELECT * FROM event_ttl_prev"),
      env.DB.prepare("DROP TABLE event_ttl_prev"),
      env.DB.prepare("CREATE INDEX event_ttl_written_at ON event_ttl (written_at)"),
    ]);
    await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind("0016_event_ttl_lean.sql").run();
    /** Rows written by one expiry row's insert (then deleted again). */
    const cost = async () => {
      const row = await env.DB.prepare("INSERT INTO event_ttl VALUES ('probe', 'p', 1)").run();
      await env.DB.prepare("DELETE FROM event_ttl WHERE namespace = 'probe'").run();
      return row.meta.rows_written;
    };
    expect(await cost()).toBe(3);

    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect(await ttlRows()).toEqual(fresh);
    expect(JSON.stringify(await schemaOf("event_ttl"))).toContain("WITHOUT ROWID");
    expect(await cost()).toBe(2);
    // The expiry reads and drops them as before: past one TTL the Events go, with their rows.
    expect((await call("POST", events, event("new"))).status).toBe(201);
    await withClockAhead((DEFAULT_EVENT_TTL_SECONDS + 60) * 1000, () => expireEvents(env as unknown as Env));
    expect((await call("GET", events)).body.items).toEqual([]);
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM event_ttl WHERE namespace = 'ttllean'").first<{ n: number }>())!.n).toBe(0);
  });

  it("keeps an upgraded hub's label and owner indexes, each row then costing 2 rows written where it cost 3", async () => {
    await createNamespaces("lean");
    const secrets = "/api/v1/namespaces/lean/secrets";
    const owner = await call("POST", secrets, { apiVersion: "v1", kind: "Secret", metadata: { name: "owner", labels: { tier: "gold" } } });
    expect(owner.status).toBe(201);
    const ownerRef = { apiVersion: "v1", kind: "Secret", name: "owner", uid: owner.body.metadata.uid };
    const dep = { apiVersion: "v1", kind: "Secret", metadata: { name: "dep", labels: { tier: "gold", app: "a" }, ownerReferences: [ownerRef] } };
    expect((await call("POST", secrets, dep)).status).toBe(201);
    const labelRows = async () =>
      (await env.DB.prepare("SELECT resource, namespace, name, key, value FROM labels ORDER BY resource, namespace, name, key").all()).results;
    const ownerRows = async () =>
      (await env.DB.prepare("SELECT owner_uid, resource, namespace, name FROM owner_references ORDER BY owner_uid, resource, namespace, name").all()).results;
    const fresh = { labels: await labelRows(), owners: await ownerRows() };
    const gold = `${secrets}?labelSelector=tier%3Dgold`;
    const before = (await call("GET", gold)).body.items;
    expect(before.map((o: { metadata: { name: string } }) => o.metadata.name)).toEqual(["dep", "owner"]);
    // The previous release's schema: both tables with a rowid (migrations 0004 and 0005), their rows kept.
    await env.DB.batch([
      env.DB.prepare("ALTER TABLE labels RENAME TO labels_prev"),
      env.DB.prepare(
        "CREATE TABLE labels (resource text NOT NULL, namespace text NOT NULL, name text NOT NULL, key text NOT NULL, value text NOT NULL, PRIMARY KEY(resource, namespace, name, key))",
      ),
      env.DB.prepare("INSERT INTO labels SELECT * FROM labels_prev"),
      env.DB.prepare("DROP TABLE labels_prev"),
      env.DB.prepare("CREATE INDEX labels_selector ON labels (resource, key, value, namespace, name)"),
      env.DB.prepare("ALTER TABLE owner_references RENAME TO owner_references_prev"),
      env.DB.prepare(
        "CREATE TABLE owner_references (owner_uid text NOT NULL, resource text NOT NULL, namespace text NOT NULL, name text NOT NULL, PRIMARY KEY(owner_uid, resource, namespace, name))",
      ),
      env.DB.prepare("INSERT INTO owner_references SELECT * FROM owner_references_prev"),
      env.DB.prepare("DROP TABLE owner_references_prev"),
      env.DB.prepare("CREATE INDEX owner_references_dependent ON owner_references (resource, namespace, name)"),
    ]);
    await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind("0014_index_tables_lean.sql").run();
    /** Rows written by one label row's and one owner reference's insert (then deleted again). */
    const costs = async () => {
      const label = await env.DB.prepare("INSERT INTO labels VALUES ('/probe', 'lean', 'p', 'k', 'v')").run();
      const ref = await env.DB.prepare("INSERT INTO owner_references VALUES ('probe-uid', '/probe', 'lean', 'p')").run();
      await env.DB.batch([
        env.DB.prepare("DELETE FROM labels WHERE resource = '/probe'"),
        env.DB.prepare("DELETE FROM owner_references WHERE resource = '/probe'"),
      ]);
      return { label: label.meta.rows_written, ref: ref.meta.rows_written };
    };
    expect(await costs()).toEqual({ label: 3, ref: 3 });

    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect({ labels: await labelRows(), owners: await ownerRows() }).toEqual(fresh);
    for (const t of ["labels", "owner_references"]) expect(JSON.stringify(await schemaOf(t))).toContain("WITHOUT ROWID");
    expect(await costs()).toEqual({ label: 2, ref: 2 });
    // The indexes answer as before: the selector list, and the owner's delete collecting its dependent.
    expect((await call("GET", gold)).body.items).toEqual(before);
    expect((await call("DELETE", `${secrets}/owner`)).status).toBe(200);
    await waitFor("the dependent collected", async () => (await call("GET", `${secrets}/dep`)).status === 404);
  });
  it("gives an upgraded hub the pieces of large bodies: its rows and watch log read as before, then a body too large for a row is kept in pieces", async () => {
    await createNamespaces("up-big");
    const cms = "/api/v1/namespaces/up-big/configmaps";
    const cm = (name: string, v: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { v } });
    const kept = await call("POST", cms, cm("kept", "1"));
    expect(kept.status).toBe(201);
    expect((await call("POST", cms, cm("gone", "2"))).status).toBe(201);
    expect((await call("DELETE", `${cms}/gone`)).status).toBe(200);
    const before = (await call("GET", cms)).body;
    const configMaps = findKindByKind("", "v1", "ConfigMap")!;
    const watched = async (rv: string) => (await readEvents(database(env.DB), configMaps, "up-big", Number(rv))).events;
    const firstRv = String(Number(kept.body.metadata.resourceVersion) - 1);
    const log = await watched(firstRv);
    expect(log.map((e) => e.type)).toEqual(["ADDED", "ADDED", "DELETED"]);
    // The previous release's schema (migration 0013's triggers, no body_ref, no body_chunks), its rows kept.
    await env.DB.batch([
      env.DB.prepare("DROP TRIGGER objects_added"),
      env.DB.prepare("DROP TRIGGER objects_modified"),
      env.DB.prepare("DROP TRIGGER objects_deleted"),
      env.DB.prepare("DROP INDEX objects_body_ref"),
      env.DB.prepare("ALTER TABLE objects DROP COLUMN body_ref"),
      env.DB.prepare("ALTER TABLE events DROP COLUMN body_ref"),
      env.DB.prepare("DROP TABLE body_chunks"),
      ...env.TEST_MIGRATIONS.find((m) => m.name === "0013_shared_specs.sql")!
        .queries.filter((q) => q.includes("CREATE TRIGGER"))
        .map((q) => env.DB.prepare(q)),
    ]);
    await env.DB.prepare("DELETE FROM d1_migrations WHERE name = ?").bind("0015_body_chunks.sql").run();
    expect(await schemaOf("body_chunks")).toEqual([]);

    await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
    expect((await call("GET", cms)).body).toEqual(before);
    expect(await watched(firstRv)).toEqual(log);
    // Writes go on: a small one as before, a large one (small limits) in pieces, both read whole.
    setD1Limits({ rowBytes: 24 * 1024 });
    try {
      const big = "x".repeat(50_000);
      expect((await call("PUT", `${cms}/kept`, { ...before.items[0], data: { v: big } })).status).toBe(200);
      expect((await call("GET", `${cms}/kept`)).body.data).toEqual({ v: big });
      expect((await env.DB.prepare("SELECT count(*) AS n FROM body_chunks").first<{ n: number }>())!.n).toBeGreaterThan(1);
    } finally {
      setD1Limits(undefined);
    }
  });
});
