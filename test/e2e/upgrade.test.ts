/**
 * A hub upgraded in place (`npm start` on the state folder the previous release wrote, which
 * applies the new D1 migrations before `wrangler dev` starts): the previous main stored no
 * Namespace objects; after the upgrade the hub answers as before with the admin token, the
 * namespaces of its ManagedClusters and of the namespaces holding objects exist, each with its
 * `default` ServiceAccount, writes follow NamespaceLifecycle, and the RBAC bootstrap policy (none
 * before) exists as objects; its audit log (migration 0009) starts with the upgrade.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { admin, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { MC, waitFor } from "./support.ts";

const G = "/apis/cluster.open-cluster-management.io";
const PLACEMENTS = `${G}/v1beta1/namespaces/apps/placements`;
const BINDINGS = `${G}/v1beta2/namespaces/apps/managedclustersetbindings`;
const WORKS = "/apis/work.open-cluster-management.io/v1/namespaces/old1/manifestworks";
const SECRETS = "/api/v1/namespaces/apps/secrets";

/** Runs `sql` on the hub's local D1 database files (the hub must be stopped). */
function onD1(hub: Hub, sql: string): void {
  const dir = path.join(hub.stateDir, "v3/d1/miniflare-D1DatabaseObject");
  for (const f of readdirSync(dir).filter((n) => n.endsWith(".sqlite") && n !== "metadata.sqlite")) {
    const db = new DatabaseSync(path.join(dir, f));
    db.exec(sql);
    db.close();
  }
}

describe("a hub upgraded from the previous main's state (no Namespace objects)", () => {
  let hub: Hub;
  afterAll(async () => {
    await hub?.stop();
  });

  it("answers as before with the admin token, and its clusters' and occupied namespaces exist", async () => {
    hub = await startHub();
    expect(
      (
        await admin(hub, "POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "old1" },
          spec: { hubAcceptsClient: true },
        })
      ).status,
    ).toBe(201);
    await createNamespaces(hub, "apps");
    expect(
      (
        await admin(hub, "POST", BINDINGS, {
          apiVersion: "cluster.open-cluster-management.io/v1beta2",
          kind: "ManagedClusterSetBinding",
          metadata: { name: "default" },
          spec: { clusterSet: "default" },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await admin(hub, "POST", PLACEMENTS, {
          apiVersion: "cluster.open-cluster-management.io/v1beta1",
          kind: "Placement",
          metadata: { name: "web" },
          spec: {},
        })
      ).status,
    ).toBe(201);
    const work = {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "w" },
      spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" } }] } },
    };
    expect((await admin(hub, "POST", WORKS, work)).status).toBe(201);
    expect((await admin(hub, "POST", SECRETS, { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, stringData: { a: "b" } })).status).toBe(201);
    const answers = async () =>
      Object.fromEntries(
        await Promise.all(
          [MC, BINDINGS, PLACEMENTS, `${G}/v1beta1/namespaces/apps/placementdecisions`, WORKS, SECRETS].map(async (p) => [
            p,
            (await admin(hub, "GET", p)).body.items,
          ]),
        ),
      );
    const before = await answers();

    // The previous main's state: the same rows without Namespaces, RBAC objects, ServiceAccounts or
    // hub_secrets, and migrations 0007 and 0008 not applied.
    const { stateDir, adminToken } = hub;
    const port = Number(new URL(hub.url).port);
    await hub.stop();
    onD1(
      hub,
      "DELETE FROM labels WHERE resource = '/namespaces' OR resource LIKE 'rbac.authorization.k8s.io/%'; DELETE FROM objects WHERE resource = '/namespaces' OR resource LIKE 'rbac.authorization.k8s.io/%'; DELETE FROM counters WHERE id = 2; DELETE FROM d1_migrations WHERE name = '0007_namespaces.sql';" +
        "DROP TABLE hub_secrets; DELETE FROM objects WHERE resource = '/serviceaccounts'; DELETE FROM d1_migrations WHERE name = '0008_serviceaccounts.sql';" +
        "DROP TABLE audit_events; DELETE FROM d1_migrations WHERE name = '0009_audit_events.sql';",
    );
    hub = await startHub({ stateDir, port, adminToken });

    expect(await answers()).toEqual(before);
    const namespaces = (await admin(hub, "GET", "/api/v1/namespaces")).body.items as {
      metadata: { name: string; labels: Record<string, string> };
      status: { phase: string };
    }[];
    expect(namespaces.map((n) => n.metadata.name)).toEqual(["apps", "default", "kube-node-lease", "kube-public", "kube-system", "old1"]);
    expect(namespaces.every((n) => n.status.phase === "Active")).toBe(true);
    expect(namespaces.find((n) => n.metadata.name === "old1")!.metadata.labels["open-cluster-management.io/cluster-name"]).toBe("old1");
    // Each namespace has its default ServiceAccount, and tokens are issued for them.
    const accounts = (await admin(hub, "GET", "/api/v1/serviceaccounts")).body.items as { metadata: { namespace: string; name: string } }[];
    expect(accounts.map((a) => `${a.metadata.namespace}/${a.metadata.name}`)).toEqual(namespaces.map((n) => `${n.metadata.name}/default`));
    const issued = await admin(hub, "POST", "/api/v1/namespaces/apps/serviceaccounts/default/token", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: {},
    });
    expect(issued.status).toBe(201);
    expect(issued.body.status.token.split(".")).toHaveLength(3);
    // Writes as on a fresh hub: in an existing namespace, not in a missing one; a namespace goes with its content.
    expect(
      (
        await admin(hub, "POST", PLACEMENTS, {
          apiVersion: "cluster.open-cluster-management.io/v1beta1",
          kind: "Placement",
          metadata: { name: "new" },
          spec: {},
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await admin(hub, "POST", `${G}/v1beta1/namespaces/nowhere/placements`, {
          apiVersion: "cluster.open-cluster-management.io/v1beta1",
          kind: "Placement",
          metadata: { name: "new" },
          spec: {},
        })
      ).status,
    ).toBe(404);
    expect((await admin(hub, "DELETE", "/api/v1/namespaces/apps")).status).toBe(200);
    expect((await admin(hub, "GET", "/api/v1/namespaces/apps")).status).toBe(404);
    expect((await admin(hub, "GET", SECRETS)).body.items).toEqual([]);
    // The RBAC bootstrap policy exists as objects, as on a fresh hub: the aggregated roles with their rules.
    const roles = (await admin(hub, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles")).body.items as {
      metadata: { name: string };
      rules?: unknown[];
    }[];
    expect(roles.map((r) => r.metadata.name)).toEqual(
      expect.arrayContaining(["admin", "cluster-admin", "edit", "system:basic-user", "system:discovery", "view"]),
    );
    expect(roles.find((r) => r.metadata.name === "view")!.rules!.length).toBeGreaterThan(0);
    const bindings = (await admin(hub, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings")).body.items as { metadata: { name: string } }[];
    expect(bindings.map((b) => b.metadata.name).sort()).toEqual([
      "cluster-admin",
      "system:basic-user",
      "system:discovery",
      "system:monitoring",
      "system:public-info-viewer",
    ]);
    // The audit log starts with the upgrade: the writes above are in it, nothing from before.
    const audited = await waitFor("the upgraded hub's audit records", async () => {
      const items = (await admin(hub, "GET", "/apis/flotilla.dev/v1alpha1/auditevents?fieldSelector=objectRef.resource%3Dnamespaces,verb%3Ddelete")).body
        .items as { objectRef: { name: string } }[];
      return items.length > 0 ? items : undefined;
    });
    expect(audited.map((e) => e.objectRef.name)).toEqual(["apps"]);
  });
});
