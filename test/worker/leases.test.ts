/**
 * The clusters' Leases (`coordination.k8s.io/v1` `leases`, src/api/leases.ts) inside workerd, on
 * real Durable Object storage: `managed-cluster-lease` exists in an accepted cluster's namespace
 * and in no other; get reads one cluster object; a list in one namespace 0 or 1 item; a list
 * across namespaces pages through the ManagedClusters and reads only its page's objects;
 * selectors, kubectl's Table, discovery; renewTime follows heartbeats and the channel's pings
 * (MicroTime); writes and watch are 405; RBAC decides who reads.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClusterObject } from "../../durable-objects/cluster.ts";
import { CHANNEL_PING, CHANNEL_PONG } from "../../src/agent-api/channel-protocol.ts";
import { clock } from "../../src/clock.ts";
import { microTime } from "../../src/k8s/meta.ts";
import type { ClusterLeaseRecord } from "../../src/kinds/lease.ts";
import { call, createToken, dialChannel, MC, register, type AgentKeys, merge } from "./helpers.ts";
import { callAs, idToken, serveIssuer } from "./oidc-users.ts";
import { waitFor } from "../wait.ts";

const COORD = "/apis/coordination.k8s.io/v1";
const LEASE = "managed-cluster-lease";
const leaseOf = (ns: string) => `${COORD}/namespaces/${ns}/leases/${LEASE}`;
const MICRO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/** The clusters whose objects served a lease since the last {@link takeReads} (who was read). */
const reads: string[] = [];
const takeReads = () => reads.splice(0);
const proto = ClusterObject.prototype as unknown as { servedLease: () => Promise<ClusterLeaseRecord | null> };
const realServed = proto.servedLease;

const keys = new Map<string, AgentKeys>();
let undo: () => void;

/* eslint-disable @typescript-eslint/no-explicit-any */
const namespaces = (body: any): string[] => body.items.map((i: any) => i.metadata.namespace).filter((n: string) => n.startsWith("lease-"));

beforeAll(async () => {
  undo = await serveIssuer();
  proto.servedLease = async function (this: unknown) {
    const r = await realServed.call(this);
    reads.push(r?.cluster ?? "(none)");
    return r;
  };
  const accepted = await createToken({ autoApprove: true });
  for (const name of ["lease-a", "lease-b", "lease-c", "lease-d"]) {
    const { keys: k, res } = await register(accepted, name, `id-${name}`);
    expect(res.status).toBe(201);
    keys.set(name, k);
  }
  // Registered, never accepted: no lease (OCM's hub creates the lease of an accepted cluster).
  const pending = await createToken();
  for (const name of ["lease-p", "lease-q"]) expect((await register(pending, name, `id-${name}`)).res.status).toBe(201);
});

afterAll(() => {
  proto.servedLease = realServed;
  undo();
});

/** Sends cluster `name`'s agent heartbeat with the hub's clock at `at` (epoch milliseconds). */
async function heartbeatAt(name: string, at: number): Promise<void> {
  const real = clock.now;
  clock.now = () => at;
  try {
    const r = await call("POST", `/agent/v1/clusters/${name}/heartbeat`, { healthy: true }, { token: await keys.get(name)!.sign(name) });
    expect(r.status).toBe(200);
  } finally {
    clock.now = real;
  }
}

describe("a cluster's lease, read", () => {
  it("is OCM's managed-cluster-lease: holder, cluster-name label, duration, renewTime (MicroTime) of the last heartbeat; resourceVersion moves with it", async () => {
    const at = Date.now() - 1234;
    await heartbeatAt("lease-a", at);
    takeReads();
    const r = await call("GET", leaseOf("lease-a"));
    expect(r.status).toBe(200);
    expect(takeReads()).toEqual(["lease-a"]);
    expect(r.body).toMatchObject({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: LEASE, namespace: "lease-a", labels: { "open-cluster-management.io/cluster-name": "lease-a" }, resourceVersion: String(at) },
      spec: { holderIdentity: LEASE, leaseDurationSeconds: 60, renewTime: microTime(at) },
    });
    expect(r.body.spec.renewTime).toMatch(MICRO);
    const mc = (await call("GET", `${MC}/lease-a`)).body;
    expect(r.body.metadata.creationTimestamp).toBe(mc.metadata.creationTimestamp);
    expect(r.body.metadata.uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(r.body.metadata.uid).not.toBe(mc.metadata.uid);

    // A later heartbeat renews it: renewTime and resourceVersion move, the uid stays.
    await heartbeatAt("lease-a", at + 1001);
    const again = (await call("GET", leaseOf("lease-a"))).body;
    expect(again.spec.renewTime).toBe(microTime(at + 1001));
    expect(again.metadata.resourceVersion).toBe(String(at + 1001));
    expect(again.metadata.uid).toBe(r.body.metadata.uid);
    // The duration is the cluster's spec.leaseDurationSeconds.
    expect((await call("PATCH", `${MC}/lease-a`, { spec: { leaseDurationSeconds: 30 } }, merge)).status).toBe(200);
    expect((await call("GET", leaseOf("lease-a"))).body.spec.leaseDurationSeconds).toBe(30);
  });

  it("is 404 under another name, in a namespace without a cluster, and for a cluster never accepted; a denied cluster keeps it", async () => {
    const other = await call("GET", `${COORD}/namespaces/lease-a/leases/other`);
    expect(other.status).toBe(404);
    expect(other.body).toMatchObject({ kind: "Status", reason: "NotFound", details: { name: "other", group: "coordination.k8s.io", kind: "leases" } });
    const none = await call("GET", leaseOf("lease-none"));
    expect(none.status).toBe(404);
    expect(none.body.message).toBe(`leases.coordination.k8s.io "${LEASE}" not found`);
    expect((await call("GET", leaseOf("lease-p"))).status).toBe(404);
    // Accepted once, then denied: OCM's lease stays.
    expect((await call("PATCH", `${MC}/lease-d`, { spec: { hubAcceptsClient: false } }, merge)).status).toBe(200);
    expect((await call("GET", leaseOf("lease-d"))).status).toBe(200);
    // A cluster accepted later gets its lease then.
    expect((await call("GET", leaseOf("lease-q"))).status).toBe(404);
    expect((await call("PATCH", `${MC}/lease-q`, { spec: { hubAcceptsClient: true } }, merge)).status).toBe(200);
    expect((await call("GET", leaseOf("lease-q"))).status).toBe(200);
  });

  it("follows the channel's pings: renewTime is the last auto-answered ping's time, read without writing anything", async () => {
    const name = "lease-b";
    const res = await dialChannel(name, await keys.get(name)!.sign(name));
    expect(res.status).toBe(101);
    const ws = res.webSocket!;
    const frames: string[] = [];
    ws.accept();
    ws.addEventListener("message", (e) => {
      frames.push(typeof e.data === "string" ? e.data : "");
    });
    try {
      const stub = env.CLUSTERS.getByName(name);
      // The last renewal that wrote anything was a minute ago; then a ping to the sleeping object.
      const stored = Date.now() - 60_000;
      await runInDurableObject(stub, (_o, state) => {
        state.storage.sql.exec("UPDATE state SET v = ? WHERE k = 'lease'", JSON.stringify({ renewMs: stored, toldSeconds: 60 }));
      });
      expect((await call("GET", leaseOf(name))).body.spec.renewTime).toBe(microTime(stored));
      await evictDurableObject(stub);
      ws.send(CHANNEL_PING);
      await waitFor("the pong", async () => frames.includes(CHANNEL_PONG), 10_000, 5);
      const pong = await runInDurableObject(stub, (_o, state) => state.getWebSocketAutoResponseTimestamp(state.getWebSockets("agent")[0]!)!.getTime());
      const takeCost = () => runInDurableObject(stub, (o) => (o as unknown as { takeCost(): { rowsWritten: number; d1Queries: number } }).takeCost());
      await takeCost();
      const lease = (await call("GET", leaseOf(name))).body;
      expect(lease.spec.renewTime).toBe(microTime(pong));
      expect(lease.metadata.resourceVersion).toBe(String(pong));
      expect(await takeCost()).toEqual({ rowsWritten: 0, d1Queries: 0, schedulerRuns: 0 });
    } finally {
      ws.close(1000, "test done");
    }
  });
});

describe("lists of leases", () => {
  it("in one namespace: 0 or 1 item, one cluster object read", async () => {
    takeReads();
    const one = await call("GET", `${COORD}/namespaces/lease-c/leases`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ apiVersion: "coordination.k8s.io/v1", kind: "LeaseList" });
    expect(one.body.items.map((i: any) => [i.metadata.namespace, i.metadata.name])).toEqual([["lease-c", LEASE]]);
    expect(Number(one.body.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(one.body.items[0].metadata.resourceVersion));
    expect(takeReads()).toEqual(["lease-c"]);
    expect((await call("GET", `${COORD}/namespaces/lease-p/leases`)).body.items).toEqual([]);
    expect((await call("GET", `${COORD}/namespaces/lease-none/leases`)).body.items).toEqual([]);
    // A selector that rules the lease out by its labels reads nothing.
    takeReads();
    const ruled = await call(
      "GET",
      `${COORD}/namespaces/lease-c/leases?labelSelector=${encodeURIComponent("open-cluster-management.io/cluster-name=lease-a")}`,
    );
    expect(ruled.body.items).toEqual([]);
    expect(takeReads()).toEqual([]);
  });

  it("across namespaces: the accepted clusters' leases in order, paged with limit and continue, each page reading only its own clusters", async () => {
    takeReads();
    const all = await call("GET", `${COORD}/leases`);
    expect(all.status).toBe(200);
    expect(namespaces(all.body)).toEqual(["lease-a", "lease-b", "lease-c", "lease-d", "lease-q"]);
    expect(all.body.metadata.continue).toBeUndefined();
    // The clusters never accepted were not read (the D1 index shows they hold no lease).
    expect(takeReads()).not.toContain("lease-p");

    const seen: string[] = [];
    let cont: string | undefined;
    let pages = 0;
    do {
      const page = await call("GET", `${COORD}/leases?limit=2${cont ? `&continue=${encodeURIComponent(cont)}` : ""}`);
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(2);
      expect(takeReads().length).toBe(page.body.items.length);
      expect(page.body.metadata.remainingItemCount).toBeUndefined();
      seen.push(...namespaces(page.body));
      cont = page.body.metadata.continue;
      pages++;
    } while (cont && pages < 100);
    expect(seen).toEqual(["lease-a", "lease-b", "lease-c", "lease-d", "lease-q"]);
    expect(pages).toBeGreaterThanOrEqual(2);
  });

  it("label and field selectors as for every kind, applied before any cluster object is read", async () => {
    const ls = encodeURIComponent("open-cluster-management.io/cluster-name=lease-b");
    takeReads();
    const byLabel = await call("GET", `${COORD}/leases?labelSelector=${ls}`);
    expect(namespaces(byLabel.body)).toEqual(["lease-b"]);
    expect(takeReads()).toEqual(["lease-b"]);
    const byNs = await call("GET", `${COORD}/leases?fieldSelector=${encodeURIComponent("metadata.namespace=lease-c")}`);
    expect(byNs.body.items.map((i: any) => i.metadata.namespace)).toEqual(["lease-c"]);
    expect(takeReads()).toEqual(["lease-c"]);
    const notIn = await call("GET", `${COORD}/leases?labelSelector=${encodeURIComponent("open-cluster-management.io/cluster-name notin (lease-a,lease-b)")}`);
    expect(namespaces(notIn.body)).toEqual(["lease-c", "lease-d", "lease-q"]);
    expect((await call("GET", `${COORD}/leases?fieldSelector=${encodeURIComponent("metadata.name=other")}`)).body.items).toEqual([]);
    const bad = await call("GET", `${COORD}/leases?fieldSelector=${encodeURIComponent("spec.holderIdentity=x")}`);
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe("field label not supported: spec.holderIdentity");
  });

  it("prints as kubectl prints leases: NAME, HOLDER, AGE", async () => {
    const t = await call("GET", `${COORD}/namespaces/lease-c/leases`, undefined, { headers: { accept: TABLE } });
    expect(t.status).toBe(200);
    expect(t.body.kind).toBe("Table");
    expect(t.body.columnDefinitions.map((c: any) => c.name)).toEqual(["Name", "Holder", "Age"]);
    expect(t.body.rows).toHaveLength(1);
    expect(t.body.rows[0].cells.slice(0, 2)).toEqual([LEASE, LEASE]);
    expect(t.body.rows[0].cells[2]).toMatch(/^\d+(s|m)/);
    const one = await call("GET", leaseOf("lease-c"), undefined, { headers: { accept: TABLE } });
    expect(one.body.rows[0].cells[1]).toBe(LEASE);
  });
});

describe("what is not served", () => {
  it("refuses create, update, patch, delete and deletecollection with 405, saying the hub keeps the lease from heartbeats", async () => {
    const body = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: LEASE }, spec: { holderIdentity: "me" } };
    const answers = [
      await call("POST", `${COORD}/namespaces/lease-a/leases`, body),
      await call("PUT", leaseOf("lease-a"), body),
      await call("PATCH", leaseOf("lease-a"), { spec: { holderIdentity: "me" } }, merge),
      await call("DELETE", leaseOf("lease-a")),
      await call("DELETE", `${COORD}/namespaces/lease-a/leases`),
    ];
    for (const r of answers) {
      expect(r.status).toBe(405);
      expect(r.body).toMatchObject({ kind: "Status", reason: "MethodNotAllowed", code: 405, details: { group: "coordination.k8s.io", kind: "leases" } });
      expect(r.body.message).toContain("heartbeats");
    }
    expect((await call("GET", leaseOf("lease-a"))).body.spec.holderIdentity).toBe(LEASE);
  });

  it("refuses watch with 405 naming it, and discovery lists get and list only", async () => {
    const w = await call("GET", `${COORD}/leases?watch=true`);
    expect(w.status).toBe(405);
    expect(w.body.message).toMatch(/^watch is not supported on resources of kind "leases.coordination.k8s.io"/);
    expect((await call("GET", `${COORD}/namespaces/lease-a/leases?watch=1`)).status).toBe(405);
    const disco = await call("GET", COORD);
    expect(disco.body.resources).toEqual([{ name: "leases", singularName: "lease", namespaced: true, kind: "Lease", verbs: ["get", "list"], shortNames: [] }]);
  });
});

describe("who may read a lease", () => {
  it("goes through RBAC: a Role granting get and list on leases in a cluster's namespace reads that lease only; others get 403", async () => {
    const RBAC = "/apis/rbac.authorization.k8s.io/v1";
    const role = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "lease-reader" },
      rules: [{ apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "list"] }],
    };
    expect((await call("POST", `${RBAC}/namespaces/lease-a/roles`, role)).status).toBe(201);
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "lease-reader" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "lease-reader" },
      subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "oidc:lena" }],
    };
    expect((await call("POST", `${RBAC}/namespaces/lease-a/rolebindings`, binding)).status).toBe(201);
    expect((await callAs("lena", "GET", leaseOf("lease-a"))).status).toBe(200);
    expect((await callAs("lena", "GET", `${COORD}/namespaces/lease-a/leases`)).body.items).toHaveLength(1);
    const other = await callAs("lena", "GET", leaseOf("lease-b"));
    expect(other.status).toBe(403);
    expect(other.body.message).toContain('cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "lease-b"');
    expect((await callAs("lena", "GET", `${COORD}/leases`)).status).toBe(403);
    takeReads();
    const nobody = await call("GET", leaseOf("lease-a"), undefined, { token: await idToken("nobody") });
    expect(nobody.status).toBe(403);
    expect(takeReads()).toEqual([]);
  });
});
