/**
 * Replicated Policies over the agent protocol (docs/agent-protocol.md "Policies"), inside workerd
 * with real Durable Object storage and D1: delivery with the works (same ETag, no status), the
 * compliance report written on the replicated Policy's status as OCM's status sync writes it
 * (details per template, history newest first, capped at 10, a repeated message adding nothing),
 * the uid pin, and bad input answered 4xx with nothing written.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, dialChannel, type AgentKeys, joined, WORKS, POLICIES } from "./helpers.ts";
import { waitFor } from "../wait.ts";
import { complianceStatus, POLICY_HISTORY_LIMIT } from "../../src/agent-api/policy-report.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";

/** A replicated Policy `<rootns>.<rootname>` in cluster `cluster`'s namespace, with OCM's labels and two ConfigurationPolicies. */
const replicated = (cluster: string, root = "policies.ns-policy") => ({
  apiVersion: "policy.open-cluster-management.io/v1",
  kind: "Policy",
  metadata: {
    name: root,
    labels: {
      "policy.open-cluster-management.io/root-policy": root,
      "policy.open-cluster-management.io/cluster-name": cluster,
      "policy.open-cluster-management.io/cluster-namespace": cluster,
    },
  },
  spec: {
    disabled: false,
    remediationAction: "inform",
    "policy-templates": ["ns-a", "ns-b"].map((name) => ({
      objectDefinition: {
        apiVersion: "policy.open-cluster-management.io/v1",
        kind: "ConfigurationPolicy",
        metadata: { name },
        spec: {
          remediationAction: "inform",
          severity: "low",
          "object-templates": [{ complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name } } }],
        },
      },
    })),
  },
});

async function poll(name: string, keys: AgentKeys, etag?: string) {
  const headers: Record<string, string> = { authorization: `Bearer ${await keys.sign(name)}` };
  if (etag) headers["if-none-match"] = `"${etag}"`;
  const res = await exports.default.fetch(`https://hub.test/agent/v1/clusters/${name}/works`, { headers });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** The agent's channel: the upgraded socket and the JSON messages received. */
async function channel(name: string, keys: AgentKeys) {
  const res = await dialChannel(name, await keys.sign(name));
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  const messages: Record<string, unknown>[] = [];
  ws.accept();
  ws.addEventListener("message", (e) => messages.push(JSON.parse(String(e.data)) as Record<string, unknown>));
  const next = async (match: (m: Record<string, unknown>) => boolean, from = 0) => {
    let found: Record<string, unknown> | undefined;
    await waitFor("a channel message", async () => (found = messages.slice(from).find(match)) !== undefined, 10_000, 5);
    return found!;
  };
  return { ws, messages, next, send: (m: unknown) => ws.send(JSON.stringify(m)) };
}

const report = (uid: string, a: [string, string, string], b?: [string, string, string]) => ({
  uid,
  templates: [a, ...(b ? [b] : [])].map(([name, compliant, message], i) => ({ name, compliant, message, timestamp: `2026-11-26T17:0${i}:0${i}.123Z` })),
});

describe("replicated policies in the works delivery", () => {
  it("arrive with the works under one ETag, without status; a status write changes no ETag; a root policy is not delivered", async () => {
    const keys = await joined("pd1");
    const first = await poll("pd1", keys);
    expect(first.status).toBe(200);
    expect(first.body.policies).toBeUndefined();
    const created = await call("POST", POLICIES("pd1"), replicated("pd1"));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const withPolicy = await poll("pd1", keys, first.body.etag);
    expect(withPolicy.status).toBe(200);
    expect(withPolicy.body.works).toEqual([]);
    expect(withPolicy.body.policies.map((p: KubeObject) => p.metadata.name)).toEqual(["policies.ns-policy"]);
    expect(withPolicy.body.policies[0].status).toBeUndefined();
    expect(withPolicy.body.policies[0].spec["policy-templates"]).toHaveLength(2);

    // A work in the same namespace: one list, one ETag, both kinds.
    expect(
      (
        await call("POST", WORKS("pd1"), {
          apiVersion: "work.open-cluster-management.io/v1",
          kind: "ManifestWork",
          metadata: { name: "w" },
          spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "w", namespace: "default" } }] } },
        })
      ).status,
    ).toBe(201);
    const both = await poll("pd1", keys, withPolicy.body.etag);
    expect(both.body.works.map((w: KubeObject) => w.metadata.name)).toEqual(["w"]);
    expect(both.body.policies).toHaveLength(1);

    // The agent's report is a status write: no new ETag.
    const uid = created.body.metadata.uid as string;
    const put = await call(
      "PUT",
      "/agent/v1/clusters/pd1/policies/policies.ns-policy/status",
      report(uid, ["ns-a", "NonCompliant", "NonCompliant; violation - namespaces [ns-a] not found"]),
      { token: await keys.sign("pd1") },
    );
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.resourceVersion).toMatch(/^\d+$/);
    expect((await poll("pd1", keys, both.body.etag)).status).toBe(304);

    // A spec change (enforce) is delivered.
    expect(
      (
        await call(
          "PATCH",
          `${POLICIES("pd1")}/policies.ns-policy`,
          { spec: { remediationAction: "enforce" } },
          { contentType: "application/merge-patch+json" },
        )
      ).status,
    ).toBe(200);
    const enforced = await poll("pd1", keys, both.body.etag);
    expect(enforced.status).toBe(200);
    expect(enforced.body.policies[0].spec.remediationAction).toBe("enforce");

    // Deleted: delivered as gone.
    expect((await call("DELETE", `${POLICIES("pd1")}/policies.ns-policy`)).status).toBe(200);
    const gone = await poll("pd1", keys, enforced.body.etag);
    expect(gone.status).toBe(200);
    expect(gone.body.policies).toBeUndefined();
    // A root Policy (no root-policy label) is not delivered, even in a cluster's namespace.
    const root = { ...replicated("pd1", "root"), metadata: { name: "root" } };
    expect((await call("POST", POLICIES("pd1"), root)).status).toBe(201);
    expect((await poll("pd1", keys, gone.body.etag)).status).toBe(304);
  });
});

describe("compliance reports", () => {
  it("write details per template, the history newest first, status.compliant aggregated, as OCM's status sync", async () => {
    const keys = await joined("pd2");
    const created = await call("POST", POLICIES("pd2"), replicated("pd2"));
    const uid = created.body.metadata.uid as string;
    const sign = async (body: unknown, policy = "policies.ns-policy") =>
      call("PUT", `/agent/v1/clusters/pd2/policies/${policy}/status`, body, { token: await keys.sign("pd2") });
    expect(
      (
        await sign(
          report(
            uid,
            ["ns-a", "NonCompliant", "NonCompliant; violation - namespaces [ns-a] not found"],
            ["ns-b", "Compliant", "Compliant; notification - namespaces [ns-b] found as specified"],
          ),
        )
      ).status,
    ).toBe(200);
    let stored = (await call("GET", `${POLICIES("pd2")}/policies.ns-policy`)).body;
    expect(stored.status.compliant).toBe("NonCompliant");
    expect(stored.status.details).toEqual([
      {
        templateMeta: { name: "ns-a" },
        compliant: "NonCompliant",
        history: [
          {
            eventName: expect.stringMatching(/^policies\.ns-policy\.[0-9a-f]+$/),
            lastTimestamp: "2026-11-26T17:00:00Z",
            message: "NonCompliant; violation - namespaces [ns-a] not found",
          },
        ],
      },
      {
        templateMeta: { name: "ns-b" },
        compliant: "Compliant",
        history: [
          { eventName: expect.any(String), lastTimestamp: "2026-11-26T17:01:01Z", message: "Compliant; notification - namespaces [ns-b] found as specified" },
        ],
      },
    ]);

    // Enforced: ns-a created; the newest event first; the same report again adds nothing.
    const enforced = report(
      uid,
      ["ns-a", "Compliant", "Compliant; notification - namespaces [ns-a] was created successfully"],
      ["ns-b", "Compliant", "Compliant; notification - namespaces [ns-b] found as specified"],
    );
    expect((await sign(enforced)).status).toBe(200);
    const rv = (await call("GET", `${POLICIES("pd2")}/policies.ns-policy`)).body.metadata.resourceVersion;
    expect((await sign(enforced)).body.resourceVersion).toBe(rv);
    stored = (await call("GET", `${POLICIES("pd2")}/policies.ns-policy`)).body;
    expect(stored.status.compliant).toBe("Compliant");
    expect(stored.status.details[0].history.map((h: { message: string }) => h.message)).toEqual([
      "Compliant; notification - namespaces [ns-a] was created successfully",
      "NonCompliant; violation - namespaces [ns-a] not found",
    ]);
    expect(stored.status.details[1].history).toHaveLength(1);
  });

  it("refuses a report for another uid (409), a Policy that is not there or not replicated (404), and bad input (400/422), writing nothing", async () => {
    const keys = await joined("pd3");
    const created = await call("POST", POLICIES("pd3"), replicated("pd3"));
    const uid = created.body.metadata.uid as string;
    const sign = async (body: unknown, policy = "policies.ns-policy") =>
      call("PUT", `/agent/v1/clusters/pd3/policies/${policy}/status`, body, { token: await keys.sign("pd3") });
    const ok: [string, string, string] = ["ns-a", "Compliant", "Compliant; notification - namespaces [ns-a] found as specified"];
    expect((await sign(report("another-uid", ok))).status).toBe(409);
    expect((await sign(report(uid, ok), "policies.missing")).status).toBe(404);
    const root = { ...replicated("pd3", "root"), metadata: { name: "root" } };
    expect((await call("POST", POLICIES("pd3"), root)).status).toBe(201);
    expect((await sign(report(uid, ok), "root")).status).toBe(404);
    const bad: [unknown, number][] = [
      [{ ...report(uid, ok), extra: 1 }, 400],
      [report(uid, ["ns-a", "Fine", "x"]), 422],
      [{ uid, templates: [{ name: "ns-a", compliant: "Compliant", message: "x", timestamp: "yesterday" }] }, 422],
      [{ uid, templates: [{ name: "ns-a", compliant: "Compliant", message: "x".repeat(5000), timestamp: "2026-11-26T17:00:00Z" }] }, 422],
    ];
    for (const [body, code] of bad) {
      const r = await sign(body);
      expect(r.status, JSON.stringify(r.body)).toBe(code);
      expect(r.body.kind).toBe("Status");
    }
    expect((await call("GET", `${POLICIES("pd3")}/policies.ns-policy`)).body.status ?? {}).toEqual({});
    // Another cluster's credential may not report here.
    const other = await joined("pd4");
    expect((await call("PUT", "/agent/v1/clusters/pd3/policies/policies.ns-policy/status", report(uid, ok), { token: await other.sign("pd4") })).status).toBe(
      403,
    );
  });

  it("over the channel: policies pushed with the works; a compliance message is acknowledged with the resourceVersion, a bad one answered with the Status, the connection kept", async () => {
    const keys = await joined("pd5");
    const created = await call("POST", POLICIES("pd5"), replicated("pd5"));
    const uid = created.body.metadata.uid as string;
    const conn = await channel("pd5", keys);
    conn.send({ type: "hello" });
    const works = await conn.next((m) => m.type === "works");
    expect((works.policies as KubeObject[]).map((p) => p.metadata.name)).toEqual(["policies.ns-policy"]);
    conn.send({
      type: "compliance",
      id: "c1",
      policy: "policies.ns-policy",
      report: report(uid, ["ns-a", "NonCompliant", "NonCompliant; violation - namespaces [ns-a] not found"]),
    });
    const ack = await conn.next((m) => m.id === "c1");
    expect(ack.type, JSON.stringify(ack)).toBe("ack");
    const stored = (await call("GET", `${POLICIES("pd5")}/policies.ns-policy`)).body;
    expect(ack.resourceVersion).toBe(stored.metadata.resourceVersion);
    expect(stored.status.compliant).toBe("NonCompliant");
    // The status write pushes nothing (no delivered change).
    const from = conn.messages.length;
    conn.send({ type: "compliance", id: "c2", policy: "policies.ns-policy", report: report(uid, ["ns-a", "Maybe", "x"]) });
    expect((await conn.next((m) => m.id === "c2")).status).toMatchObject({ code: 422 });
    conn.send({ type: "compliance", id: "c3", policy: "policies.ns-policy", report: report("other", ["ns-a", "Compliant", "x"]) });
    expect((await conn.next((m) => m.id === "c3")).status).toMatchObject({ code: 409, reason: "Conflict" });
    conn.send({ type: "compliance", id: "c4", policy: "policies.gone", report: report(uid, ["ns-a", "Compliant", "x"]) });
    expect((await conn.next((m) => m.id === "c4")).status).toMatchObject({ code: 404, reason: "NotFound" });
    expect(conn.messages.slice(from).filter((m) => m.type === "works")).toEqual([]);
    expect((await call("GET", `${POLICIES("pd5")}/policies.ns-policy`)).body.metadata.resourceVersion).toBe(stored.metadata.resourceVersion);
    conn.ws.close(1000, "test done");
  });

  it("compliance reports pipelined over the channel keep the last one sent; an older one over HTTP is acknowledged stale (issue 39)", async () => {
    const keys = await joined("pd6");
    const uid = (await call("POST", POLICIES("pd6"), replicated("pd6"))).body.metadata.uid as string;
    const conn = await channel("pd6", keys);
    const states = ["NonCompliant", "Compliant"] as const;
    const n = 20;
    for (let i = 0; i < n; i++)
      conn.send({
        type: "compliance",
        id: `p${i}`,
        policy: "policies.ns-policy",
        report: { ...report(uid, ["ns-a", states[i % 2]!, `state ${i}`]), sequence: 100 + i },
      });
    for (let i = 0; i < n; i++) expect((await conn.next((m) => m.id === `p${i}`)).type).toBe("ack");
    const compliant = async () => (await call("GET", `${POLICIES("pd6")}/policies.ns-policy`)).body.status;
    expect((await compliant()).details[0].history[0].message).toBe(`state ${n - 1}`);
    expect((await compliant()).details[0].compliant).toBe(states[(n - 1) % 2]);
    const old = await call(
      "PUT",
      "/agent/v1/clusters/pd6/policies/policies.ns-policy/status",
      { ...report(uid, ["ns-a", "NonCompliant", "late copy"]), sequence: 105 },
      { token: await keys.sign("pd6") },
    );
    expect(old.status).toBe(200);
    expect(old.body).toMatchObject({ stale: true, sequence: 100 + n - 1 });
    expect((await compliant()).details[0].history[0].message).toBe(`state ${n - 1}`);
    conn.ws.close(1000, "test done");
  });

  it("keeps at most 10 events per template, newest first", () => {
    const policy = {
      apiVersion: "policy.open-cluster-management.io/v1",
      kind: "Policy",
      metadata: { name: "p.q", namespace: "c" },
      spec: replicated("c").spec,
    } as unknown as KubeObject;
    let current = policy;
    for (let i = 0; i < 14; i++) {
      const status = complianceStatus(current, {
        uid: "u",
        templates: [
          {
            name: "ns-a",
            compliant: i % 2 ? "Compliant" : "NonCompliant",
            message: `m${i}`,
            timestamp: new Date(Date.UTC(2026, 10, 26, 17, 0, i)).toISOString(),
          },
        ],
      });
      current = { ...current, status };
    }
    const details = (current.status as { details: { history: { message: string }[]; compliant: string }[] }).details;
    expect(details[0]!.history).toHaveLength(POLICY_HISTORY_LIMIT);
    expect(details[0]!.history[0]!.message).toBe("m13");
    expect(details[0]!.compliant).toBe("Compliant");
    // ns-b was never reported: no state, so the Policy is not Compliant yet.
    expect(details[1]).toEqual({ templateMeta: { name: "ns-b" }, history: [] });
    expect((current.status as { compliant?: string }).compliant).toBeUndefined();
  });
});
