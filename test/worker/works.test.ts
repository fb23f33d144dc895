/**
 * ManifestWork over the admin API and the agent protocol (docs/agent-protocol.md, "Works" and
 * "Leave"), inside workerd with real Durable Object storage and D1: validation, delivery with an
 * ETag (an unchanged poll reads no D1), long-poll wake-up, status reports, credentials scoped to
 * their own cluster, and the leave flow (agent confirms, or the leave times out).
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DEFAULT_LEAVE_TIMEOUT_SECONDS, MAX_WORKS_WAITERS, WORKS_RETRY_AFTER_SECONDS, type ClusterObject } from "../../durable-objects/cluster.ts";
import { agentKeys, call, condition, createNamespaces, createToken, MC, register, withClockAhead, type AgentKeys, joined, merge, WORKS } from "./helpers.ts";
import {
  ClusterInfoSchema,
  HeartbeatAnswerSchema,
  LeftAnswerSchema,
  RotateKeyAnswerSchema,
  WorkStatusAnswerSchema,
  WorksAnswerSchema,
} from "../../src/agent-api/protocol.ts";
import { waitFor } from "../wait.ts";

const configMap = (name: string, data: Record<string, string> = { a: "1" }) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default" },
  data,
});
const work = (name: string, manifests: unknown[] = [configMap(name)], extra: Record<string, unknown> = {}) => ({
  apiVersion: "work.open-cluster-management.io/v1",
  kind: "ManifestWork",
  metadata: { name },
  spec: { workload: { manifests }, ...extra },
});

/** A works poll as the agent sends it. */
async function poll(name: string, keys: AgentKeys, etag?: string, waitSeconds?: number, signer = name) {
  const headers: Record<string, string> = { authorization: `Bearer ${await keys.sign(signer)}` };
  if (etag) headers["if-none-match"] = `"${etag}"`;
  const q = waitSeconds === undefined ? "" : `?waitSeconds=${waitSeconds}`;
  const res = await exports.default.fetch(`https://hub.test/agent/v1/clusters/${name}/works${q}`, { headers });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** The reasons of the Events about ManagedCluster `name`, oldest first. */
async function clusterReasons(name: string): Promise<string[]> {
  const r = await call(
    "GET",
    `/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(`involvedObject.kind=ManagedCluster,involvedObject.name=${name}`)}`,
  );
  return (r.body.items as { reason: string; metadata: { name: string } }[]).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)).map((e) => e.reason);
}

describe("ManifestWork validation", () => {
  it("refuses empty manifests, manifests without kind or name, more than 500 KiB, and a bad fieldManager; nothing is stored", async () => {
    const cases: [unknown, number, string][] = [
      [work("empty", []), 422, "spec.workload.manifests"],
      [work("nokind", [{ apiVersion: "v1", metadata: { name: "x" } }]), 422, "spec.workload.manifests[0].kind"],
      [work("noname", [{ apiVersion: "v1", kind: "ConfigMap", metadata: {} }]), 422, "spec.workload.manifests[0].metadata.name"],
      [work("huge", [configMap("huge", { blob: "x".repeat(520 * 1024) })]), 422, "spec.workload"],
      [
        work("badfm", undefined, {
          manifestConfigs: [
            {
              resourceIdentifier: { resource: "configmaps", name: "badfm", namespace: "default" },
              updateStrategy: { type: "ServerSideApply", serverSideApply: { fieldManager: "someone" } },
            },
          ],
        }),
        422,
        "spec.manifestConfigs[0].updateStrategy.serverSideApply.fieldManager",
      ],
      [work("badpolicy", undefined, { deleteOption: { propagationPolicy: "Sometimes" } }), 422, "spec.deleteOption.propagationPolicy"],
    ];
    await createNamespaces("valid1");
    for (const [body, code, field] of cases) {
      const r = await call("POST", WORKS("valid1"), body);
      expect(r.status, JSON.stringify(r.body)).toBe(code);
      expect(r.body.kind).toBe("Status");
      expect(r.body.details.causes.map((c: { field: string }) => c.field)).toContain(field);
    }
    expect((await call("GET", WORKS("valid1"))).body.items).toEqual([]);
    const ok = await call("POST", WORKS("valid1"), work("fine"));
    expect(ok.status).toBe(201);
    expect(ok.body.metadata.generation).toBe(1);
  });
});

describe("works delivery (agent protocol)", () => {
  it("delivers the cluster's works with an ETag; an unchanged poll is 304 with no D1 query; a status write does not change the ETag", async () => {
    const keys = await joined("wd1");
    const first = await poll("wd1", keys);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ leaving: false, works: [] });
    const etag0 = first.body.etag as string;
    expect(first.headers.get("etag")).toBe(`"${etag0}"`);

    const idle = await poll("wd1", keys, etag0);
    expect(idle.status).toBe(304);
    expect(idle.headers.get("x-flotilla-d1-queries")).toBe("0");

    expect((await call("POST", WORKS("wd1"), work("w1"))).status).toBe(201);
    const changed = await poll("wd1", keys, etag0);
    expect(changed.status).toBe(200);
    expect(changed.body.etag).not.toBe(etag0);
    expect(changed.body.works.map((w: { metadata: { name: string } }) => w.metadata.name)).toEqual(["w1"]);
    const delivered = changed.body.works[0];
    expect(delivered.spec.workload.manifests[0].kind).toBe("ConfigMap");
    expect(delivered.status).toBeUndefined();

    // The agent reports status: stored in the work. Its first report puts OCM's cleanup finalizer
    // on the work (a metadata change the agent receives: the ETag moves once); later reports, status
    // writes only, leave the ETag.
    const status = {
      conditions: [
        {
          type: "Applied",
          status: "True",
          reason: "AppliedManifestWorkComplete",
          message: "Apply manifest work complete",
          lastTransitionTime: "2026-11-23T00:00:00Z",
          observedGeneration: 1,
        },
      ],
      resourceStatus: {
        manifests: [
          {
            resourceMeta: { ordinal: 0, group: "", version: "v1", kind: "ConfigMap", resource: "configmaps", name: "w1", namespace: "default" },
            conditions: [],
          },
        ],
      },
    };
    const put = await call("PUT", "/agent/v1/clusters/wd1/works/w1/status", { uid: delivered.metadata.uid, status }, { token: await keys.sign("wd1") });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const stored = await call("GET", `${WORKS("wd1")}/w1`);
    expect(condition(stored.body, "Applied")).toMatchObject({ status: "True", observedGeneration: 1 });
    const held = await poll("wd1", keys, changed.body.etag);
    expect(held.status).toBe(200);
    expect(held.body.works[0].metadata.finalizers).toEqual(["cluster.open-cluster-management.io/manifest-work-cleanup"]);
    const again = await call(
      "PUT",
      "/agent/v1/clusters/wd1/works/w1/status",
      { uid: delivered.metadata.uid, status: { ...status, conditions: [{ ...status.conditions[0], message: "again" }] } },
      { token: await keys.sign("wd1") },
    );
    expect(again.status).toBe(200);
    expect((await poll("wd1", keys, held.body.etag)).status).toBe(304);

    // A spec change and a delete change it again (the work stays, being deleted, until its agent confirms).
    expect((await call("PATCH", `${WORKS("wd1")}/w1`, { spec: { workload: { manifests: [configMap("w1", { a: "2" })] } } }, merge)).status).toBe(200);
    const updated = await poll("wd1", keys, held.body.etag);
    expect(updated.status).toBe(200);
    expect(updated.body.works[0].metadata.generation).toBe(2);
    expect((await call("DELETE", `${WORKS("wd1")}/w1`)).status).toBe(200);
    const deleted = await poll("wd1", keys, updated.body.etag);
    expect(deleted.body.works[0].metadata.deletionTimestamp).toBeTruthy();
    expect(
      (
        await call(
          "PUT",
          "/agent/v1/clusters/wd1/works/w1/status",
          { uid: delivered.metadata.uid, status: {}, released: true },
          { token: await keys.sign("wd1") },
        )
      ).status,
    ).toBe(200);
    expect((await poll("wd1", keys, deleted.body.etag)).body.works).toEqual([]);
  });

  it("a poll agent's ETag outlives the object's eviction: unchanged, 304 with no D1 query; changed before it, the new works", async () => {
    const keys = await joined("wd1e");
    const stub = env.CLUSTERS.getByName("wd1e");
    const first = await poll("wd1e", keys);
    expect(first.status).toBe(200);
    await evictDurableObject(stub);
    const hb = await call("POST", "/agent/v1/clusters/wd1e/heartbeat", { healthy: true }, { token: await keys.sign("wd1e") });
    expect(hb.body.worksEtag).toBe(first.body.etag);
    const idle = await poll("wd1e", keys, first.body.etag);
    expect(idle.status).toBe(304);
    expect(idle.headers.get("x-flotilla-d1-queries")).toBe("0");

    expect((await call("POST", WORKS("wd1e"), work("w1"))).status).toBe(201);
    await evictDurableObject(stub);
    const changed = await poll("wd1e", keys, first.body.etag);
    expect(changed.status).toBe(200);
    expect(changed.body.works.map((w: { metadata: { name: string } }) => w.metadata.name)).toEqual(["w1"]);
    await evictDurableObject(stub);
    expect((await poll("wd1e", keys, changed.body.etag)).status).toBe(304);
  });

  it("a report on the work a poll delivered is written; a copy gone stale is never written over the stored work", async () => {
    const keys = await joined("wd10");
    const report = async (uid: string, type: string) =>
      call(
        "PUT",
        "/agent/v1/clusters/wd10/works/w10/status",
        {
          uid,
          status: { conditions: [{ type, status: "True", reason: "R", message: "m", lastTransitionTime: "2026-11-23T00:00:00Z", observedGeneration: 1 }] },
        },
        { token: await keys.sign("wd10") },
      );
    const delivered = async () => {
      const r = await poll("wd10", keys);
      expect(r.status).toBe(200);
      return r.body.works[0] as { metadata: { uid: string; resourceVersion?: string } };
    };
    expect((await call("POST", WORKS("wd10"), work("w10"))).status).toBe(201);

    // Reported on the delivered copy, twice in a row (the second on the copy the first stored).
    const first = await delivered();
    expect((await report(first.metadata.uid, "Applied")).status).toBe(200);
    expect((await report(first.metadata.uid, "Available")).status).toBe(200);
    const both = await call("GET", `${WORKS("wd10")}/w10`);
    expect(both.body.status.conditions.map((c: { type: string }) => c.type)).toEqual(["Available"]);

    // Another writer changed the status after the poll: the report still lands, on a fresh read.
    await delivered();
    const current = (await call("GET", `${WORKS("wd10")}/w10`)).body;
    expect((await call("PUT", `${WORKS("wd10")}/w10/status`, { ...current, status: { conditions: [] } })).status).toBe(200);
    expect((await report(first.metadata.uid, "Applied")).status).toBe(200);
    expect(condition((await call("GET", `${WORKS("wd10")}/w10`)).body, "Applied")).toMatchObject({ status: "True" });

    // Deleted (its agent confirming) and created again after the poll: the old uid's report is 409, the new work untouched.
    await delivered();
    expect((await call("DELETE", `${WORKS("wd10")}/w10`)).status).toBe(200);
    expect(
      (
        await call(
          "PUT",
          "/agent/v1/clusters/wd10/works/w10/status",
          { uid: first.metadata.uid, status: {}, released: true },
          { token: await keys.sign("wd10") },
        )
      ).status,
    ).toBe(200);
    const again = await call("POST", WORKS("wd10"), work("w10"));
    expect(again.status).toBe(201);
    const refused = await report(first.metadata.uid, "Applied");
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain(again.body.metadata.uid);
    expect((await call("GET", `${WORKS("wd10")}/w10`)).body.status).toBeUndefined();

    // Deleted after the poll: 404.
    await delivered();
    expect((await call("DELETE", `${WORKS("wd10")}/w10`)).status).toBe(200);
    expect((await report(again.body.metadata.uid, "Applied")).status).toBe(404);
  });

  it("a changed poll is answered from the works the cluster's object keeps: D1 is read once, and again after a change it was not handed", async () => {
    const keys = await joined("wd11");
    const d1 = (r: { headers: Headers }) => r.headers.get("x-flotilla-d1-queries");
    const first = await poll("wd11", keys);
    expect(first.body.works).toEqual([]);
    expect(d1(first)).toBe("1");
    const asStored = async () => (await call("GET", WORKS("wd11"))).body.items.map(({ status: _s, ...w }: { status?: unknown }) => w);

    expect((await call("POST", WORKS("wd11"), work("w1"))).status).toBe(201);
    const created = await poll("wd11", keys, first.body.etag);
    expect(d1(created)).toBe("0");
    expect(created.body.works).toEqual(await asStored());
    expect(
      (
        await call(
          "PATCH",
          `${WORKS("wd11")}/w1`,
          { metadata: { labels: { l: "1" } }, spec: { workload: { manifests: [configMap("w1", { a: "2" })] } } },
          merge,
        )
      ).status,
    ).toBe(200);
    expect((await call("POST", WORKS("wd11"), work("w0"))).status).toBe(201);
    const changed = await poll("wd11", keys, created.body.etag);
    expect(d1(changed)).toBe("0");
    expect(changed.body.works).toEqual(await asStored());
    expect(changed.body.works.map((w: { metadata: { name: string } }) => w.metadata.name)).toEqual(["w0", "w1"]);
    expect(changed.body.works[1]).toMatchObject({ metadata: { generation: 2, labels: { l: "1" } }, spec: { workload: { manifests: [{ data: { a: "2" } }] } } });
    expect((await call("DELETE", `${WORKS("wd11")}/w1`)).status).toBe(200);
    const removed = await poll("wd11", keys, changed.body.etag);
    expect(d1(removed)).toBe("0");
    expect(removed.body.works.map((w: { metadata: { name: string } }) => w.metadata.name)).toEqual(["w0"]);

    // A change without the work (as the outbox sweep runs the hook after a crash): read again.
    await env.CLUSTERS.getByName("wd11").deliverablesChanged();
    const swept = await poll("wd11", keys, removed.body.etag);
    expect(swept.status).toBe(200);
    expect(d1(swept)).toBe("1");
    expect(swept.body.works).toEqual(await asStored());
  });

  it("status reports that arrive together all land, each on its own work, a stale one too (they may share a D1 batch)", async () => {
    const clusters = ["wg1", "wg2", "wg3", "wg4", "wg5", "wg6"];
    const agents: { name: string; keys: AgentKeys; uid: string }[] = [];
    for (const name of clusters) {
      const keys = await joined(name);
      expect((await call("POST", WORKS(name), work("w"))).status).toBe(201);
      agents.push({ name, keys, uid: (await poll(name, keys)).body.works[0].metadata.uid });
    }
    // Another writer changes one work's status after its agent's poll: that report's copy is stale.
    const stale = (await call("GET", `${WORKS("wg3")}/w`)).body;
    expect((await call("PUT", `${WORKS("wg3")}/w/status`, { ...stale, status: { conditions: [] } })).status).toBe(200);
    const status = (reason: string) => ({
      conditions: [{ type: "Applied", status: "True", reason, message: reason, lastTransitionTime: "2026-11-23T00:00:00Z", observedGeneration: 1 }],
    });
    const reports = await Promise.all(
      agents.map(async (a) =>
        call("PUT", `/agent/v1/clusters/${a.name}/works/w/status`, { uid: a.uid, status: status(`From${a.name}`) }, { token: await a.keys.sign(a.name) }),
      ),
    );
    expect(reports.map((r) => r.status)).toEqual(clusters.map(() => 200));
    for (const [i, name] of clusters.entries()) {
      const stored = (await call("GET", `${WORKS(name)}/w`)).body;
      expect(condition(stored, "Applied")).toMatchObject({ reason: `From${name}` });
      expect(stored.metadata.resourceVersion).toBe(reports[i]!.body.resourceVersion);
    }
    expect(new Set(reports.map((r) => r.body.resourceVersion)).size).toBe(clusters.length);
  });

  it("a long-poll returns as soon as a work changes, and after waitSeconds when nothing does", async () => {
    const keys = await joined("wd2");
    const { etag } = (await poll("wd2", keys)).body;
    const quiet = await poll("wd2", keys, etag, 1);
    expect(quiet.status).toBe(304);
    const waiting = poll("wd2", keys, etag, 50);
    await new Promise((r) => setTimeout(r, 200));
    expect((await call("POST", WORKS("wd2"), work("w2"))).status).toBe(201);
    const woken = await waiting;
    expect(woken.status).toBe(200);
    expect(woken.body.works.map((w: { metadata: { name: string } }) => w.metadata.name)).toEqual(["w2"]);
  });

  it(`refuses a works long-poll beyond ${MAX_WORKS_WAITERS} waiting ones with 429 and Retry-After; a works change answers them all`, async () => {
    const keys = await joined("wd9");
    const { etag } = (await poll("wd9", keys)).body;
    const stub = env.CLUSTERS.getByName("wd9");
    const waiters = () => runInDurableObject(stub, (obj: ClusterObject) => (obj as unknown as { delivery: { waiters: Set<unknown> } }).delivery.waiters.size);
    const waiting = Array.from({ length: MAX_WORKS_WAITERS }, () => poll("wd9", keys, etag, 50));
    await waitFor(`${MAX_WORKS_WAITERS} waiting long-polls`, async () => (await waiters()) >= MAX_WORKS_WAITERS, 10_000, 20);
    expect(await waiters()).toBe(MAX_WORKS_WAITERS);
    const refused = await poll("wd9", keys, etag, 50);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe(String(WORKS_RETRY_AFTER_SECONDS));
    expect(refused.body).toMatchObject({ kind: "Status", reason: "TooManyRequests", details: { retryAfterSeconds: WORKS_RETRY_AFTER_SECONDS } });
    // A poll that need not wait (no ETag) is not refused.
    expect((await poll("wd9", keys)).status).toBe(200);

    expect((await call("POST", WORKS("wd9"), work("w9"))).status).toBe(201);
    for (const res of await Promise.all(waiting)) expect(res.status).toBe(200);
    expect(await waiters()).toBe(0);
  });

  it("a credential reads and reports only its own cluster's works; bad reports change nothing", async () => {
    const a = await joined("wd3");
    await joined("wd4");
    const created = await call("POST", WORKS("wd4"), work("secret-work"));
    expect(created.status).toBe(201);
    expect((await poll("wd4", a, undefined, undefined, "wd3")).status).toBe(403);
    const foreign = await call(
      "PUT",
      "/agent/v1/clusters/wd4/works/secret-work/status",
      { uid: created.body.metadata.uid, status: {} },
      { token: await a.sign("wd3") },
    );
    expect(foreign.status).toBe(403);
    expect((await poll("wd3", a, undefined, 99)).status).toBe(400);

    expect((await call("POST", WORKS("wd3"), work("mine"))).status).toBe(201);
    const mine = (await call("GET", `${WORKS("wd3")}/mine`)).body;
    const stale = await call("PUT", "/agent/v1/clusters/wd3/works/mine/status", { uid: "another-uid", status: {} }, { token: await a.sign("wd3") });
    expect(stale.status).toBe(409);
    const missing = await call("PUT", "/agent/v1/clusters/wd3/works/nope/status", { uid: "x", status: {} }, { token: await a.sign("wd3") });
    expect(missing.status).toBe(404);
    const bad = await call(
      "PUT",
      "/agent/v1/clusters/wd3/works/mine/status",
      { uid: mine.metadata.uid, status: { conditions: [{ type: "Applied", status: "Maybe" }] } },
      { token: await a.sign("wd3") },
    );
    expect(bad.status).toBe(422);
    expect((await call("GET", `${WORKS("wd3")}/mine`)).body.metadata.resourceVersion).toBe(mine.metadata.resourceVersion);
    const noToken = await exports.default.fetch("https://hub.test/agent/v1/clusters/wd3/works");
    expect(noToken.status).toBe(401);
  });

  it("a cluster not (or no longer) accepted gets 403 on works", async () => {
    const token = await createToken();
    const { keys } = await register(token, "wd5", "id-wd5");
    expect((await poll("wd5", keys)).status).toBe(403);
  });
});

describe("answers (src/agent-api/protocol.ts)", () => {
  it("every 2xx answer of the agent protocol is its schema's value, no field more or less", async () => {
    const token = await createToken();
    const { keys, res } = await register(token, "ans1", "id-ans1");
    expect(res.status).toBe(201);
    expect(ClusterInfoSchema.parse(res.body)).toEqual(res.body);
    expect(res.body).toMatchObject({ clusterName: "ans1", hubAcceptsClient: false, denied: false, joined: false, keyPending: false });
    const info = await call("GET", "/agent/v1/clusters/ans1", undefined, { token: await keys.sign("ans1") });
    expect(ClusterInfoSchema.parse(info.body)).toEqual(info.body);
    expect((await call("PATCH", `${MC}/ans1`, { spec: { hubAcceptsClient: true } }, merge)).status).toBe(200);

    const hb = await call("POST", "/agent/v1/clusters/ans1/heartbeat", { healthy: true }, { token: await keys.sign("ans1") });
    expect(hb.status).toBe(200);
    expect(HeartbeatAnswerSchema.parse(hb.body)).toEqual(hb.body);
    expect((await call("POST", WORKS("ans1"), work("w1"))).status).toBe(201);
    const polled = await poll("ans1", keys, hb.body.worksEtag);
    expect(polled.status).toBe(200);
    // Works answers keep every field of a delivered work (the schema passes them through).
    expect(WorksAnswerSchema.parse(polled.body)).toEqual(polled.body);
    const put = await call(
      "PUT",
      "/agent/v1/clusters/ans1/works/w1/status",
      { uid: polled.body.works[0].metadata.uid, status: {} },
      { token: await keys.sign("ans1") },
    );
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(WorkStatusAnswerSchema.parse(put.body)).toEqual(put.body);

    const next = await agentKeys();
    const rotated = await call(
      "POST",
      "/agent/v1/clusters/ans1/rotate-key",
      { publicKey: next.publicJwk, proof: await next.proof("ans1") },
      { token: await keys.sign("ans1") },
    );
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    expect(RotateKeyAnswerSchema.parse(rotated.body)).toEqual(rotated.body);

    expect((await call("DELETE", `${MC}/ans1`)).status).toBe(200);
    const left = await call("POST", "/agent/v1/clusters/ans1/left", {}, { token: await next.sign("ans1") });
    expect(left.status, JSON.stringify(left.body)).toBe(200);
    expect(LeftAnswerSchema.parse(left.body)).toEqual(left.body);
  });
});

describe("leave", () => {
  it("deleting an accepted cluster waits for its agent: leaving, Joined=False, then gone with its works after the agent confirms", async () => {
    const keys = await joined("lv1");
    expect((await call("POST", WORKS("lv1"), work("app"))).status).toBe(201);
    const { etag } = (await poll("lv1", keys)).body;
    const waiting = poll("lv1", keys, etag, 50);
    expect((await call("POST", "/agent/v1/clusters/lv1/left", {}, { token: await keys.sign("lv1") })).status).toBe(409);

    const del = await call("DELETE", `${MC}/lv1`);
    expect(del.status).toBe(200);
    const woken = await waiting;
    expect(woken.status).toBe(200);
    expect(woken.body.leaving).toBe(true);
    const leaving = await call("GET", `${MC}/lv1`);
    expect(leaving.body.metadata.deletionTimestamp).toBeTruthy();
    expect(condition(leaving.body, "ManagedClusterJoined")).toMatchObject({ status: "False", reason: "ManagedClusterLeaving" });
    const hb = await call("POST", "/agent/v1/clusters/lv1/heartbeat", { healthy: true }, { token: await keys.sign("lv1") });
    expect(hb.body).toMatchObject({ leaving: true });
    expect(condition((await call("GET", `${MC}/lv1`)).body, "ManagedClusterJoined")?.status).toBe("False");

    const left = await call("POST", "/agent/v1/clusters/lv1/left", {}, { token: await keys.sign("lv1") });
    expect(left.status).toBe(200);
    expect((await call("GET", `${MC}/lv1`)).status).toBe(404);
    expect((await call("GET", WORKS("lv1"))).body.items).toEqual([]);
    expect((await poll("lv1", keys)).status).toBe(401);
    // Its Events (in `default`, where a cluster-scoped object's live) outlive it.
    await waitFor("the leave's Events", async () => (await clusterReasons("lv1")).includes("ManagedClusterLeft"));
    expect((await clusterReasons("lv1")).filter((r) => r.startsWith("ManagedClusterLea") || r === "ManagedClusterLeft")).toEqual([
      "ManagedClusterLeaving",
      "ManagedClusterLeft",
    ]);
  });

  it("a leave the agent never confirms ends at the timeout, from the alarm, and says so", async () => {
    await joined("lv2");
    expect((await call("POST", WORKS("lv2"), work("app"))).status).toBe(201);
    expect((await call("DELETE", `${MC}/lv2`)).status).toBe(200);
    const stub = env.CLUSTERS.getByName("lv2");
    // Before the deadline the alarm changes nothing; past LEAVE_TIMEOUT_SECONDS (wrangler.toml: the default) it ends the leave.
    expect(await withClockAhead(60_000, () => runDurableObjectAlarm(stub))).toBe(true);
    expect((await call("GET", `${MC}/lv2`)).status).toBe(200);
    expect(await withClockAhead(DEFAULT_LEAVE_TIMEOUT_SECONDS * 1000 + 1000, () => runDurableObjectAlarm(stub))).toBe(true);
    expect((await call("GET", `${MC}/lv2`)).status).toBe(404);
    expect((await call("GET", WORKS("lv2"))).body.items).toEqual([]);
    const events = await env.DB.prepare("SELECT body FROM events WHERE resource = ? AND name = ? AND type = 'DELETED'")
      .bind("cluster.open-cluster-management.io/managedclusters", "lv2")
      .all<{ body: string }>();
    const last = JSON.parse(events.results.at(-1)!.body);
    expect(condition(last, "ManagedClusterJoined")).toMatchObject({ status: "False", reason: "ManagedClusterLeaveTimedOut" });
    await waitFor("the leave's Events", async () => (await clusterReasons("lv2")).includes("ManagedClusterLeaveTimedOut"));
    expect((await clusterReasons("lv2")).filter((r) => r.startsWith("ManagedClusterLea"))).toEqual(["ManagedClusterLeaving", "ManagedClusterLeaveTimedOut"]);
  });

  it("a cluster never accepted is deleted at once", async () => {
    const token = await createToken();
    await register(token, "lv3", "id-lv3");
    expect((await call("DELETE", `${MC}/lv3`)).status).toBe(200);
    expect((await call("GET", `${MC}/lv3`)).status).toBe(404);
  });
});
