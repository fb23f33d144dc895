/**
 * Kubernetes Events: core v1 and events.k8s.io/v1 serving the same objects, field selectors,
 * the Table kubectl prints, the recorder's folding of repeats, the Events the hub records for a
 * cluster's life and a placement's decisions, and their expiry after FLOTILLA_EVENT_TTL_SECONDS.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { agentKeys, call, countingD1, createNamespaces, createToken, MC, register, scheduled, withClockAhead, merge } from "./helpers.ts";
import { recordEvent, recordEvents } from "../../src/events/record.ts";
import { armEventExpiry, DEFAULT_EVENT_TTL_SECONDS, expireEvents } from "../../src/events/expiry.ts";
import type { Env } from "../../src/env.ts";
import { eventsOf } from "../../src/events/controller.ts";
import { ManifestWorkKind, ManifestWorkReplicaSetKind } from "../../src/kinds/manifestwork.ts";
import { ManagedClusterAddOnKind } from "../../src/kinds/addon.ts";
import { PolicyKind } from "../../src/kinds/policy.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";

const CORE = (ns: string) => `/api/v1/namespaces/${ns}/events`;
const V1 = (ns: string) => `/apis/events.k8s.io/v1/namespaces/${ns}/events`;
const hubEnv = env as unknown as Env;

const coreEvent = (name: string, over: Record<string, unknown> = {}) => ({
  apiVersion: "v1",
  kind: "Event",
  metadata: { name },
  involvedObject: { kind: "ConfigMap", apiVersion: "v1", name: "cm1", namespace: "evns", uid: "u-1" },
  reason: "Tested",
  message: "a test event",
  source: { component: "tester" },
  firstTimestamp: "2026-11-26T10:00:00Z",
  lastTimestamp: "2026-11-26T10:05:00Z",
  count: 3,
  type: "Normal",
  ...over,
});

const heartbeat = {
  healthy: true,
  version: { kubernetes: "v1.31.2" },
  capacity: { cpu: "4", memory: "8Gi" },
  allocatable: { cpu: "4", memory: "8Gi" },
  clusterClaims: [],
};
async function hb(name: string, keys: Awaited<ReturnType<typeof agentKeys>>) {
  return call("POST", `/agent/v1/clusters/${name}/heartbeat`, heartbeat, { token: await keys.sign(name) });
}

/** The Events about object `kind`/`name` through the core API, as `kubectl describe` asks (sorted by lastTimestamp as it sorts). */
async function eventsFor(kind: string, name: string, namespace = "") {
  const q = new URLSearchParams({ fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name},involvedObject.namespace=${namespace}` });
  const r = await call("GET", `/api/v1/events?${q}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (
    r.body.items as {
      reason: string;
      count: number;
      lastTimestamp: string;
      firstTimestamp: string;
      type: string;
      message: string;
      metadata: { name: string };
    }[]
  ).sort((a, b) => (a.lastTimestamp === b.lastTimestamp ? a.metadata.name.localeCompare(b.metadata.name) : a.lastTimestamp.localeCompare(b.lastTimestamp)));
}

describe("core v1 and events.k8s.io/v1 Events: the same objects", () => {
  it("serves an Event created through core v1 through events.k8s.io/v1 with the fields mapped, and back", async () => {
    await createNamespaces("evns");
    const created = await call("POST", CORE("evns"), coreEvent("e1"));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const v1 = await call("GET", `${V1("evns")}/e1`);
    expect(v1.status).toBe(200);
    expect(v1.body).toMatchObject({
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      regarding: { kind: "ConfigMap", name: "cm1", namespace: "evns", uid: "u-1" },
      note: "a test event",
      reason: "Tested",
      type: "Normal",
      deprecatedSource: { component: "tester" },
      deprecatedFirstTimestamp: "2026-11-26T10:00:00Z",
      deprecatedLastTimestamp: "2026-11-26T10:05:00Z",
      deprecatedCount: 3,
    });
    expect(v1.body.involvedObject).toBeUndefined();
    expect(v1.body.message).toBeUndefined();
    expect(v1.body.metadata.resourceVersion).toBe(created.body.metadata.resourceVersion);
    expect(v1.body.metadata.uid).toBe(created.body.metadata.uid);

    // Created through events.k8s.io/v1 (its required fields), read through core v1.
    const body = {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: "e2" },
      eventTime: "2026-11-26T10:00:00.000000Z",
      reportingController: "example.com/ctl",
      reportingInstance: "ctl-1",
      action: "Check",
      reason: "Checked",
      regarding: { kind: "ConfigMap", name: "cm1", namespace: "evns" },
      note: "checked it",
      type: "Warning",
      series: { count: 2, lastObservedTime: "2026-11-26T10:01:00.000000Z" },
    };
    const made = await call("POST", V1("evns"), body);
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body).toMatchObject({ apiVersion: "events.k8s.io/v1", note: "checked it", reportingController: "example.com/ctl" });
    const core = await call("GET", `${CORE("evns")}/e2`);
    expect(core.body).toMatchObject({
      apiVersion: "v1",
      involvedObject: { name: "cm1" },
      message: "checked it",
      reportingComponent: "example.com/ctl",
      reportingInstance: "ctl-1",
      series: { count: 2 },
      type: "Warning",
    });

    // A merge patch through events.k8s.io/v1 is stored for both; there only the series may change.
    const patched = await call("PATCH", `${V1("evns")}/e2`, { series: { count: 3, lastObservedTime: "2026-11-26T10:02:00.000000Z" } }, merge);
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ note: "checked it", series: { count: 3 } });
    expect((await call("GET", `${CORE("evns")}/e2`)).body).toMatchObject({ message: "checked it", series: { count: 3 } });
    const renote = await call("PATCH", `${V1("evns")}/e2`, { note: "checked again" }, merge);
    expect(renote.status).toBe(422);
    expect(renote.body.details.causes).toEqual([
      { field: "message", reason: "FieldValueInvalid", message: 'Invalid value: "checked again": field is immutable' },
    ]);
    // Through core v1 it may (kube-apiserver's legacy validation only).
    const corePatched = await call("PATCH", `${CORE("evns")}/e2`, { message: "checked again" }, merge);
    expect(corePatched.status, JSON.stringify(corePatched.body)).toBe(200);
    // A strategic merge patch too, as kube-apiserver takes for its built-in kinds.
    const strategic = await call(
      "PATCH",
      `${V1("evns")}/e2`,
      { series: { count: 4, lastObservedTime: "2026-11-26T10:03:00.000000Z" } },
      { contentType: "application/strategic-merge-patch+json" },
    );
    expect(strategic.status, JSON.stringify(strategic.body)).toBe(200);
    expect(strategic.body.series.count).toBe(4);

    // Both lists hold both, each in its own form; a delete through one is gone from the other.
    expect((await call("GET", CORE("evns"))).body.items.map((e: { metadata: { name: string } }) => e.metadata.name)).toEqual(["e1", "e2"]);
    const v1List = await call("GET", V1("evns"));
    expect(v1List.body).toMatchObject({ apiVersion: "events.k8s.io/v1", kind: "EventList" });
    expect(v1List.body.items.map((e: { note: string }) => e.note)).toEqual(["a test event", "checked again"]);
    expect((await call("DELETE", `${V1("evns")}/e1`)).status).toBe(200);
    expect((await call("GET", `${CORE("evns")}/e1`)).status).toBe(404);
  });

  it("validates as kube-apiserver: events.k8s.io/v1 requires its fields; involvedObject.namespace must match", async () => {
    await createNamespaces("evval");
    const bad = await call("POST", V1("evval"), {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: "x" },
      regarding: { kind: "Pod", name: "p" },
      type: "Odd",
    });
    expect(bad.status).toBe(422);
    const fields = (bad.body.details.causes as { field: string }[]).map((c) => c.field).sort();
    // Without eventTime the legacy rules apply: the regarding object's namespace, not the reporting fields.
    expect(fields).toEqual(["eventTime", "involvedObject.namespace", "type"]);
    const wrongNs = await call("POST", CORE("evval"), coreEvent("y", { involvedObject: { kind: "Pod", name: "p", namespace: "other" } }));
    expect(wrongNs.status).toBe(422);
    expect(wrongNs.body.details.causes[0].field).toBe("involvedObject.namespace");
    expect((await call("GET", CORE("evval"))).body.items).toEqual([]);
  });

  it("validates timestamps and the eventTime rules as kube-apiserver's events.go: malformed times 400, nothing stored", async () => {
    await createNamespaces("evtime");
    const v1Event = (name: string, over: Record<string, unknown> = {}) => ({
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name },
      eventTime: "2026-11-26T10:00:00.000000Z",
      reportingController: "example.com/ctl",
      reportingInstance: "ctl-1",
      action: "Check",
      reason: "Checked",
      regarding: { kind: "ConfigMap", name: "cm1", namespace: "evtime" },
      type: "Normal",
      ...over,
    });
    // Malformed RFC 3339 (Time) and MicroTime strings: 400 BadRequest, as kube-apiserver's decoder.
    const bad: [string, unknown, string][] = [
      [CORE("evtime"), coreEvent("t1", { involvedObject: { kind: "Pod", name: "p", namespace: "evtime" }, firstTimestamp: "yesterday" }), "firstTimestamp"],
      [
        CORE("evtime"),
        coreEvent("t2", { involvedObject: { kind: "Pod", name: "p", namespace: "evtime" }, lastTimestamp: "2026-13-01T00:00:00Z" }),
        "lastTimestamp",
      ],
      [
        CORE("evtime"),
        coreEvent("t3", { involvedObject: { kind: "Pod", name: "p", namespace: "evtime" }, lastTimestamp: "2026-02-30T00:00:00Z" }),
        "lastTimestamp",
      ],
      [V1("evtime"), v1Event("t4", { eventTime: "2026-11-26T10:00:00Z" }), "eventTime"],
      [V1("evtime"), v1Event("t5", { eventTime: "2026-11-26 10:00:00.000000Z" }), "eventTime"],
      [V1("evtime"), v1Event("t6", { series: { count: 2, lastObservedTime: "2026-11-26T10:00:00.123Z" } }), "series.lastObservedTime"],
      [V1("evtime"), v1Event("t7", { deprecatedFirstTimestamp: "2026-11-26T25:00:00Z" }), "firstTimestamp"],
    ];
    for (const [url, body, field] of bad) {
      const r = await call("POST", url, body);
      expect(r.status, `${field}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.reason).toBe("BadRequest");
      expect(r.body.message).toMatch(/^Event in version "v1" cannot be handled as a Event: parsing time /);
    }
    expect((await call("GET", CORE("evtime"))).body.items).toEqual([]);

    // Well-formed times are stored in kube's canonical form: UTC, Time to the second, MicroTime with six digits.
    const ok = await call(
      "POST",
      CORE("evtime"),
      coreEvent("t8", {
        involvedObject: { kind: "Pod", name: "p", namespace: "evtime" },
        firstTimestamp: "2026-11-26T11:00:00.75+01:00",
        lastTimestamp: "0001-01-01T00:00:00Z",
        eventTime: "2026-11-26T12:00:00.123456+02:00",
        reportingComponent: "example.com/ctl",
        reportingInstance: "ctl-1",
        action: "Check",
      }),
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect(ok.body.firstTimestamp).toBe("2026-11-26T10:00:00Z");
    expect(ok.body.lastTimestamp).toBeUndefined();
    expect(ok.body.eventTime).toBe("2026-11-26T10:00:00.123456Z");

    // With eventTime, the legacy rules need the reporting fields, bound their lengths, and an Event
    // about a cluster-scoped object lives in default or kube-system.
    const legacy = await call(
      "POST",
      CORE("evtime"),
      coreEvent("t9", { involvedObject: { kind: "Node", name: "n1" }, eventTime: "2026-11-26T10:00:00.000000Z", reason: "x".repeat(129) }),
    );
    expect(legacy.status).toBe(422);
    // (An empty reportingController is also not a qualified name: kube-apiserver says so too.)
    expect([...new Set((legacy.body.details.causes as { field: string }[]).map((c) => c.field))].sort()).toEqual([
      "action",
      "involvedObject.namespace",
      "reason",
      "reportingController",
      "reportingInstance",
    ]);
    // events.k8s.io/v1: the deprecated fields must be unset; a series needs a count of 2 and a lastObservedTime.
    const strict = await call("POST", V1("evtime"), v1Event("t10", { deprecatedCount: 2, series: { count: 1 }, reportingInstance: "i".repeat(129) }));
    expect(strict.status).toBe(422);
    expect((strict.body.details.causes as { field: string }[]).map((c) => c.field).sort()).toEqual([
      "count",
      "reportingInstance",
      "series.count",
      "series.lastObservedTime",
    ]);
    // A JSON patch that breaks a time is refused as well; the stored Event is unchanged.
    const patched = await call("PATCH", `${CORE("evtime")}/t8`, [{ op: "replace", path: "/eventTime", value: "not a time" }], {
      contentType: "application/json-patch+json",
    });
    expect(patched.status).toBe(400);
    expect((await call("GET", `${CORE("evtime")}/t8`)).body.eventTime).toBe("2026-11-26T10:00:00.123456Z");
  });

  it("lists across namespaces, selects by the fields kubectl uses, refuses others, and prints kubectl's columns", async () => {
    await createNamespaces("sel1", "sel2");
    await call(
      "POST",
      CORE("sel1"),
      coreEvent("a", { involvedObject: { kind: "Placement", name: "p1", namespace: "sel1", uid: "u-p1" }, reason: "DecisionUpdate" }),
    );
    await call("POST", CORE("sel2"), coreEvent("b", { involvedObject: { kind: "Placement", name: "p1", namespace: "sel2", uid: "u-p2" }, type: "Warning" }));
    await call("POST", CORE("sel2"), coreEvent("c", { involvedObject: { kind: "ManifestWork", name: "p1", namespace: "sel2" } }));
    const names = async (path: string, selector: string) => {
      const r = await call("GET", `${path}?fieldSelector=${encodeURIComponent(selector)}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.items.map((e: { metadata: { namespace: string; name: string } }) => `${e.metadata.namespace}/${e.metadata.name}`);
    };
    expect(await names("/api/v1/events", "involvedObject.kind=Placement,involvedObject.name=p1")).toEqual(["sel1/a", "sel2/b"]);
    expect(await names("/api/v1/events", "involvedObject.uid=u-p2")).toEqual(["sel2/b"]);
    expect(await names("/api/v1/events", "involvedObject.namespace=sel1,reason=DecisionUpdate")).toEqual(["sel1/a"]);
    expect(await names(CORE("sel2"), "type=Warning")).toEqual(["sel2/b"]);
    expect(await names(CORE("sel2"), "type!=Warning,source=tester")).toEqual(["sel2/c"]);
    expect(await names("/apis/events.k8s.io/v1/events", "regarding.kind=Placement,regarding.namespace=sel2")).toEqual(["sel2/b"]);
    expect(await names("/apis/events.k8s.io/v1/events", "reportingController=,metadata.name=a")).toEqual(["sel1/a"]);
    const refused = await call("GET", "/api/v1/events?fieldSelector=regarding.name%3Dp1");
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe("field label not supported: regarding.name");
    expect((await call("GET", "/apis/events.k8s.io/v1/events?fieldSelector=involvedObject.name%3Dp1")).status).toBe(400);

    const table = await exports.default.fetch(`https://hub.test${CORE("sel2")}`, {
      headers: { authorization: "Bearer test-admin-token", accept: "application/json;as=Table;v=v1;g=meta.k8s.io" },
    });
    const t = (await table.json()) as { columnDefinitions: { name: string; priority: number }[]; rows: { cells: unknown[] }[] };
    expect(t.columnDefinitions.filter((c) => c.priority === 0).map((c) => c.name)).toEqual(["Last Seen", "Type", "Reason", "Object", "Message"]);
    expect(t.rows[0]!.cells.slice(1, 5)).toEqual(["Warning", "Tested", "placement/p1", ""]);
    expect(t.rows[0]!.cells[4]).toBe("");
    expect(t.rows[0]!.cells[6]).toBe("a test event");
  });

  it("watches through events.k8s.io/v1 with the Events converted and selected", async () => {
    await createNamespaces("evw");
    const rv = (await call("GET", V1("evw"))).body.metadata.resourceVersion;
    const res = await exports.default.fetch(`https://hub.test${V1("evw")}?watch=true&resourceVersion=${rv}&fieldSelector=regarding.name%3Dwatched`, {
      headers: { authorization: "Bearer test-admin-token" },
    });
    await call("POST", CORE("evw"), coreEvent("other", { involvedObject: { kind: "Pod", name: "unwatched", namespace: "evw" } }));
    await call("POST", CORE("evw"), coreEvent("seen", { involvedObject: { kind: "Pod", name: "watched", namespace: "evw" } }));
    const reader = res.body!.getReader();
    let buf = "";
    let first: unknown;
    while (first === undefined) {
      buf += new TextDecoder().decode((await reader.read()).value);
      const line = buf.split("\n").find((l, i, all) => i < all.length - 1 && l.trim() !== "");
      if (line) first = JSON.parse(line);
    }
    await reader.cancel();
    expect(first).toMatchObject({
      type: "ADDED",
      object: { apiVersion: "events.k8s.io/v1", metadata: { name: "seen" }, regarding: { name: "watched" }, note: "a test event" },
    });
  });
});

describe("the recorder", () => {
  it("cuts a long message to kube-apiserver's 1,024 bytes of UTF-8, so that a multibyte one is stored", async () => {
    await createNamespaces("longmsg");
    const spec = {
      regarding: { kind: "Placement", apiVersion: "cluster.open-cluster-management.io/v1beta1", name: "pl", namespace: "longmsg", uid: "u-pl" },
      reason: "DecisionUpdate",
      type: "Normal" as const,
      message: "é".repeat(1000),
      reportingController: "placement-controller",
    };
    const e = await recordEvent(hubEnv, spec, Date.parse("2026-11-26T12:00:00Z"));
    const message = e!.message as string;
    expect(new TextEncoder().encode(message).length).toBeLessThanOrEqual(1024);
    expect(message.endsWith("é...")).toBe(true);
  });

  it("folds a repeat into one Event whose count and lastTimestamp advance; another message is another Event", async () => {
    await createNamespaces("fold");
    const spec = {
      regarding: { kind: "Placement", apiVersion: "cluster.open-cluster-management.io/v1beta1", name: "pf", namespace: "fold", uid: "u-pf" },
      reason: "DecisionUpdate",
      type: "Normal" as const,
      message: "1 added",
      reportingController: "placement-controller",
    };
    const t0 = Date.parse("2026-11-26T12:00:00Z");
    const first = await recordEvent(hubEnv, spec, t0);
    const second = await recordEvent(hubEnv, spec, t0 + 60_000);
    const third = await recordEvent(hubEnv, spec, t0 + 120_000);
    expect(third!.metadata.name).toBe(first!.metadata.name);
    expect(second!.metadata.name).toBe(first!.metadata.name);
    expect(third).toMatchObject({
      count: 3,
      firstTimestamp: "2026-11-26T12:00:00Z",
      lastTimestamp: "2026-11-26T12:02:00Z",
      series: { count: 3, lastObservedTime: "2026-11-26T12:02:00.000000Z" },
      source: { component: "placement-controller" },
    });
    expect(first!.metadata.name).toMatch(/^pf\.[0-9a-f]+$/);
    await recordEvent(hubEnv, { ...spec, message: "1 removed" }, t0 + 180_000);
    await recordEvent(hubEnv, { ...spec, type: "Warning" }, t0 + 180_000);
    const all = await eventsFor("Placement", "pf", "fold");
    expect(all.map((e) => [e.type, e.message, e.count])).toEqual([
      ["Normal", "1 added", 3],
      ["Normal", "1 removed", 1],
      ["Warning", "1 added", 1],
    ]);
    // events.k8s.io/v1 shows the series and the deprecated count.
    const v1 = await call("GET", `${V1("fold")}/${first!.metadata.name}`);
    expect(v1.body).toMatchObject({
      series: { count: 3 },
      deprecatedCount: 3,
      reportingController: "placement-controller",
      reportingInstance: "flotilla-hub",
      action: "DecisionUpdate",
    });
  });
});

describe("the recorder, for one change's transitions", () => {
  it("reads an object's Events once, folds repeats among them and the stored ones, and writes them together", async () => {
    await createNamespaces("group");
    const spec = (reason: string) => ({
      regarding: { kind: "Pod", name: "g", namespace: "group" },
      reason,
      type: "Normal" as const,
      message: reason,
      reportingController: "t",
    });
    await recordEvent(hubEnv, spec("A"));
    await recordEvents(hubEnv, [spec("A"), spec("B"), spec("B"), { ...spec("C"), regarding: { kind: "Pod", name: "other", namespace: "group" } }]);
    const items = (await call("GET", CORE("group"))).body.items as { involvedObject: { name: string }; reason: string; count: number }[];
    expect(items.map((e) => [e.involvedObject.name, e.reason, e.count])).toEqual([
      ["g", "A", 2],
      ["g", "B", 2],
      ["other", "C", 1],
    ]);
    // A namespace that is gone records nothing, and is no error.
    await recordEvents(hubEnv, [
      { ...spec("A"), regarding: { kind: "Pod", name: "g", namespace: "nowhere" } },
      { ...spec("B"), regarding: { kind: "Pod", name: "g", namespace: "nowhere" } },
    ]);
    expect((await call("GET", CORE("nowhere"))).body.items).toEqual([]);
  });
});

describe("the recorder, for many changes at once", () => {
  it("records the Events of calls that arrive together in one fold lookup and one batch, folding as one call would", async () => {
    await createNamespaces("together-a", "together-b");
    const spec = (ns: string, name: string) => ({
      regarding: { kind: "ManifestWork", name, namespace: ns, uid: `uid-${name}` },
      reason: "ManifestWorkApplied",
      type: "Normal" as const,
      message: `ManifestWork ${name} applied on cluster ${ns}`,
      reportingController: "work-agent",
    });
    // One stored already, to fold into.
    await recordEvent(hubEnv, spec("together-a", "w0"));
    const { env: metered, calls } = countingD1();
    // 40 reports' Events at once, across two namespaces: w0 twice more (folds into the stored
    // one), w1 twice (a new one, then folded into it), 36 others once.
    const specs = [spec("together-a", "w0"), spec("together-a", "w0"), spec("together-b", "w1"), spec("together-b", "w1")];
    for (let i = 2; i < 38; i++) specs.push(spec(i % 2 ? "together-a" : "together-b", `w${i}`));
    await Promise.all(specs.map((s) => recordEvents(metered, [s])));
    const counts = new Map<string, number>();
    for (const ns of ["together-a", "together-b"])
      for (const e of (await call("GET", CORE(ns))).body.items as { involvedObject: { name: string }; count: number; reason: string }[]) {
        expect(e.reason).toBe("ManifestWorkApplied");
        expect(counts.has(e.involvedObject.name), e.involvedObject.name).toBe(false);
        counts.set(e.involvedObject.name, e.count);
      }
    expect(counts.get("w0")).toBe(3);
    expect(counts.get("w1")).toBe(2);
    expect(counts.size).toBe(38);
    for (let i = 2; i < 38; i++) expect(counts.get(`w${i}`)).toBe(1);
    // One at a time, each call read and wrote on its own (2 D1 calls each, 80): the first goes at
    // once, the 39 that arrived meanwhile in one flush (its fold lookup, the namespace checks,
    // one batch of writes).
    expect(calls.length, calls.join("\n")).toBeLessThanOrEqual(10);
  });
});

describe("the recorder, when its flush fails", () => {
  it("rejects every caller of the flush (their hooks keep their outbox rows for the sweep), and a later flush records them", async () => {
    await createNamespaces("together-fail");
    const spec = (name: string) => ({
      regarding: { kind: "ManifestWork", name, namespace: "together-fail", uid: `uid-${name}` },
      reason: "ManifestWorkApplied",
      type: "Normal" as const,
      message: `ManifestWork ${name} applied on cluster together-fail`,
      reportingController: "work-agent",
    });
    const failing = new Proxy(hubEnv.DB, {
      get: (target, p) =>
        p === "prepare" || p === "batch"
          ? () => {
              throw new Error("D1 unavailable");
            }
          : Reflect.get(target, p),
    });
    const broken = { ...hubEnv, DB: failing };
    const outcomes = await Promise.allSettled(["f1", "f2", "f3"].map((n) => recordEvents(broken, [spec(n)])));
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect((await call("GET", CORE("together-fail"))).body.items).toEqual([]);
    // What the sweep does with the rows kept: the Events are recorded, once each.
    await Promise.all(["f1", "f2", "f3"].map((n) => recordEvents(hubEnv, [spec(n)])));
    const items = (await call("GET", CORE("together-fail"))).body.items as { involvedObject: { name: string }; count: number }[];
    expect(items.map((e) => [e.involvedObject.name, e.count]).sort()).toEqual([
      ["f1", 1],
      ["f2", 1],
      ["f3", 1],
    ]);
  });
});

describe("the Events the hub records", () => {
  it("a cluster's registration, acceptance, join, lease expiry and recovery, in order, the recovery folded; an idle heartbeat records nothing", async () => {
    const token = await createToken();
    const { keys } = await register(token, "evc1", "id-evc1");
    await call("PATCH", `${MC}/evc1`, { spec: { hubAcceptsClient: true, leaseDurationSeconds: 1 } }, merge);
    expect((await hb("evc1", keys)).status).toBe(200);
    await scheduled();
    const uid = (await call("GET", `${MC}/evc1`)).body.metadata.uid;
    const joined = (await eventsFor("ManagedCluster", "evc1")).filter((e) => !e.reason.startsWith("ManagedClusterTaint"));
    expect(joined.map((e) => e.reason)).toEqual(["ManagedClusterCreated", "ManagedClusterAccepted", "ManagedClusterJoined", "ManagedClusterAvailable"]);
    // As kubectl describe selects them: by uid too; they live in `default`.
    const byUid = await call("GET", `/api/v1/events?fieldSelector=${encodeURIComponent(`involvedObject.uid=${uid},involvedObject.kind=ManagedCluster`)}`);
    expect(byUid.body.items.length).toBeGreaterThanOrEqual(4);
    expect(new Set(byUid.body.items.map((e: { metadata: { namespace: string } }) => e.metadata.namespace))).toEqual(new Set(["default"]));

    // An idle heartbeat: no D1 query, no Event.
    const idle = await hb("evc1", keys);
    expect(idle.headers.get("x-flotilla-d1-queries")).toBe("0");
    const before = (await eventsFor("ManagedCluster", "evc1")).map((e) => [e.metadata.name, e.count]);
    await scheduled();
    expect((await eventsFor("ManagedCluster", "evc1")).map((e) => [e.metadata.name, e.count])).toEqual(before);

    // The lease expires (6 s past a 1 s lease), then the agent comes back; twice.
    const stub = env.CLUSTERS.getByName("evc1");
    await withClockAhead(6_000, () => runDurableObjectAlarm(stub));
    await scheduled();
    await withClockAhead(7_000, () => hb("evc1", keys));
    await scheduled();
    const once = (await eventsFor("ManagedCluster", "evc1")).filter((e) => !e.reason.startsWith("ManagedClusterTaint"));
    expect(once.map((e) => [e.reason, e.message])).toEqual([
      ["ManagedClusterCreated", "Managed cluster evc1 registered on the hub"],
      ["ManagedClusterAccepted", "managed cluster evc1 is accepted by hub cluster admin"],
      ["ManagedClusterJoined", "managed cluster evc1 joined the hub"],
      ["ManagedClusterAvailable", "managed cluster evc1 is available"],
      ["ManagedClusterLeaseUpdateStopped", "managed cluster evc1 available condition is unknown: its agent stopped updating its lease"],
      ["ManagedClusterAvailable", "managed cluster evc1 is available again"],
    ]);
    await withClockAhead(14_000, () => runDurableObjectAlarm(stub));
    await scheduled();
    await withClockAhead(15_000, () => hb("evc1", keys));
    await scheduled();
    const after = await eventsFor("ManagedCluster", "evc1");
    const reasons = after.map((e) => `${e.reason}${e.count > 1 ? ` x${e.count}` : ""}`);
    expect(reasons.filter((r) => !r.startsWith("ManagedClusterTaint"))).toEqual([
      "ManagedClusterCreated",
      "ManagedClusterAccepted",
      "ManagedClusterJoined",
      "ManagedClusterAvailable",
      "ManagedClusterLeaseUpdateStopped x2",
      "ManagedClusterAvailable x2",
    ]);
    expect(after.find((e) => e.reason === "ManagedClusterLeaseUpdateStopped")!.type).toBe("Warning");
    // The unreachable taint came and went (folded too).
    const taints = after.filter((e) => e.reason.startsWith("ManagedClusterTaint")).map((e) => `${e.reason}: ${e.message}`);
    expect(taints).toContain("ManagedClusterTaintAdded: taint cluster.open-cluster-management.io/unreachable:NoSelect added to managed cluster evc1");
    expect(taints).toContain("ManagedClusterTaintRemoved: taint cluster.open-cluster-management.io/unreachable:NoSelect removed from managed cluster evc1");
    const available = after.find((e) => e.message.endsWith("available again"))!;
    expect(Date.parse(available.lastTimestamp)).toBeGreaterThan(Date.parse(available.firstTimestamp));
  });

  it("a denied cluster and a placement's decision changes (how many added and removed)", async () => {
    const token = await createToken();
    await register(token, "evd1", "id-evd1");
    // Accepted, then denied (the accept revoked: OCM's HubClusterAdminDenied).
    await call("PATCH", `${MC}/evd1`, { spec: { hubAcceptsClient: true } }, merge);
    await call("PATCH", `${MC}/evd1`, { spec: { hubAcceptsClient: false } }, merge);
    await createNamespaces("evp");
    const G = "/apis/cluster.open-cluster-management.io";
    expect(
      (
        await call("POST", `${G}/v1beta2/managedclustersets`, {
          apiVersion: "cluster.open-cluster-management.io/v1beta2",
          kind: "ManagedClusterSet",
          metadata: { name: "evset" },
        })
      ).status,
    ).toBe(201);
    const available = { type: "ManagedClusterConditionAvailable", status: "True", reason: "Test", message: "test", lastTransitionTime: "2026-01-01T00:00:00Z" };
    for (const name of ["evp1", "evp2"]) {
      expect(
        (
          await call("POST", MC, {
            apiVersion: "cluster.open-cluster-management.io/v1",
            kind: "ManagedCluster",
            metadata: { name, labels: { evp: "yes", "cluster.open-cluster-management.io/clusterset": "evset" } },
            spec: { hubAcceptsClient: true },
          })
        ).status,
      ).toBe(201);
      expect((await call("PATCH", `${MC}/${name}/status`, { status: { conditions: [available] } }, merge)).status).toBe(200);
    }
    await call("POST", `${G}/v1beta2/namespaces/evp/managedclustersetbindings`, {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSetBinding",
      metadata: { name: "evset" },
      spec: { clusterSet: "evset" },
    });
    const placement = {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "pl" },
      spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { evp: "yes" } } } }] },
    };
    expect((await call("POST", `${G}/v1beta1/namespaces/evp/placements`, placement)).status).toBe(201);
    await scheduled();
    await call("PATCH", `${MC}/evp2`, { metadata: { labels: { evp: "no" } } }, merge);
    await scheduled();
    const decisions = await eventsFor("Placement", "pl", "evp");
    expect(decisions.map((e) => [e.reason, e.message.replace(/^Decision \S+ updated: /, "")])).toEqual([
      ["DecisionUpdate", "2 added (evp1, evp2), 0 removed; 2 clusters decided"],
      ["DecisionUpdate", "0 added, 1 removed (evp2); 1 cluster decided"],
    ]);
    const denied = await eventsFor("ManagedCluster", "evd1");
    expect(denied.map((e) => [e.reason, e.type]).filter(([r]) => !r!.startsWith("ManagedClusterTaint"))).toEqual([
      ["ManagedClusterCreated", "Normal"],
      ["ManagedClusterAccepted", "Normal"],
      ["HubClusterAdminDenied", "Warning"],
    ]);
  });
});

describe("expiry after FLOTILLA_EVENT_TTL_SECONDS", () => {
  it("deletes Events one TTL after their last write, oldest first, by the index; the scheduler's timer drives it", async () => {
    await createNamespaces("ttl");
    const spec = (name: string) => ({
      regarding: { kind: "Pod", name, namespace: "ttl" },
      reason: "R",
      type: "Normal" as const,
      message: "m",
      reportingController: "t",
    });
    const a = await recordEvent(hubEnv, spec("old"));
    await withClockAhead(1_800_000, () => recordEvent(hubEnv, spec("young")));
    const ttlMs = DEFAULT_EVENT_TTL_SECONDS * 1000;
    const names = async () => (await call("GET", CORE("ttl"))).body.items.map((e: { involvedObject: { name: string } }) => e.involvedObject.name).sort();
    // Past one TTL from the first write: nothing else was written since, "old" goes.
    const r1 = await withClockAhead(ttlMs + 1_000, () => expireEvents(hubEnv));
    expect(r1.deleted).toBeGreaterThanOrEqual(1);
    expect(await names()).toEqual(["young"]);
    expect((await call("GET", `${CORE("ttl")}/${a!.metadata.name}`)).status).toBe(404);
    // The scheduler's alarm expires the rest once their TTL passed (armed again: each test starts
    // with fresh Durable Object storage, while this isolate remembers the timer it armed before).
    await armEventExpiry(hubEnv, { force: true });
    await withClockAhead(1_800_000 + ttlMs + 1_000, () => runDurableObjectAlarm(env.SCHEDULER.getByName("scheduler")));
    expect(await names()).toEqual([]);
    const left = await env.DB.prepare("SELECT COUNT(*) AS n FROM event_ttl WHERE namespace = 'ttl'").first<{ n: number }>();
    expect(left!.n).toBe(0);
  });

  it("a folded Event's TTL counts from its last write", async () => {
    await createNamespaces("ttl2");
    const spec = { regarding: { kind: "Pod", name: "again", namespace: "ttl2" }, reason: "R", type: "Normal" as const, message: "m", reportingController: "t" };
    const ttlMs = DEFAULT_EVENT_TTL_SECONDS * 1000;
    await recordEvent(hubEnv, spec);
    await withClockAhead(ttlMs - 60_000, () => recordEvent(hubEnv, spec));
    await withClockAhead(ttlMs + 1_000, () => expireEvents(hubEnv));
    const items = (await call("GET", CORE("ttl2"))).body.items;
    expect(items.map((e: { count: number }) => e.count)).toEqual([2]);
    await withClockAhead(2 * ttlMs, () => expireEvents(hubEnv));
    expect((await call("GET", CORE("ttl2"))).body.items).toEqual([]);
  });
});

describe("which changes of works and rollouts owe Events", () => {
  const cond = (type: string, status: string, reason: string, message = "") => ({ type, status, reason, message, lastTransitionTime: "2026-11-26T10:00:00Z" });
  const work = (conditions: unknown[]): KubeObject => ({
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: { name: "w", namespace: "c1", uid: "u-w", resourceVersion: "1", creationTimestamp: "" },
    status: { conditions },
  });
  const rollout = (status: string, reason: string, message: string): KubeObject => ({
    apiVersion: "work.open-cluster-management.io/v1alpha1",
    kind: "ManifestWorkReplicaSet",
    metadata: { name: "r", namespace: "apps", uid: "u-r", resourceVersion: "1", creationTimestamp: "" },
    status: { conditions: [cond("PlacementRolledOut", status, reason, message)] },
  });
  const of = (def: typeof ManifestWorkKind, before: KubeObject | null, after: KubeObject | null) =>
    eventsOf({ def, namespace: (after ?? before)!.metadata.namespace!, name: (after ?? before)!.metadata.name, before, after }).map((e) => [
      e.reason,
      e.type,
      e.message,
      e.reportingController,
      e.regarding.kind,
    ]);

  it("a work applied, failing to apply, deleted from its cluster; a status report that changes nothing owes none", () => {
    expect(of(ManifestWorkKind, work([]), work([cond("Applied", "True", "AppliedManifestWorkComplete")]))).toEqual([
      ["ManifestWorkApplied", "Normal", "ManifestWork w applied on cluster c1", "work-agent", "ManifestWork"],
    ]);
    expect(
      of(
        ManifestWorkKind,
        work([cond("Applied", "True", "AppliedManifestWorkComplete")]),
        work([cond("Applied", "False", "AppliedManifestWorkFailed", "1 of 2 failed")]),
      ),
    ).toEqual([["ManifestWorkApplyFailed", "Warning", "ManifestWork w failed to apply on cluster c1: 1 of 2 failed", "work-agent", "ManifestWork"]]);
    expect(of(ManifestWorkKind, work([cond("Applied", "True", "A")]), work([cond("Applied", "True", "A"), cond("Available", "True", "B")]))).toEqual([]);
    expect(of(ManifestWorkKind, work([cond("Applied", "True", "A")]), null)).toEqual([
      ["ManifestWorkDeleted", "Normal", "ManifestWork w deleted from cluster c1", "work-agent", "ManifestWork"],
    ]);
  });

  it("a rollout's steps, its stop on failures and its completion", () => {
    const R = ManifestWorkReplicaSetKind;
    expect(
      of(R, rollout("False", "Progressing", "1 of 4 clusters succeeded"), rollout("False", "Progressing", "2 of 4 clusters succeeded; 2 progressing")),
    ).toEqual([["Progressing", "Normal", "rollout of r: 2 of 4 clusters succeeded", "manifestworkreplicaset-controller", "ManifestWorkReplicaSet"]]);
    // The same step with other notes: nothing.
    expect(of(R, rollout("False", "Progressing", "2 of 4 clusters succeeded; a"), rollout("False", "Progressing", "2 of 4 clusters succeeded; b"))).toEqual([]);
    expect(
      of(
        R,
        rollout("False", "Progressing", "2 of 4 clusters succeeded"),
        rollout("False", "Progressing", "2 of 4 clusters succeeded; the rollout stopped: more failures than maxFailures allows"),
      ),
    ).toEqual([
      [
        "RolloutFailed",
        "Warning",
        "rollout of r stopped: 2 of 4 clusters succeeded; the rollout stopped: more failures than maxFailures allows",
        "manifestworkreplicaset-controller",
        "ManifestWorkReplicaSet",
      ],
    ]);
    expect(of(R, rollout("False", "Progressing", "3 of 4 clusters succeeded"), rollout("True", "Complete", ""))).toEqual([
      ["Complete", "Normal", "rollout of r complete", "manifestworkreplicaset-controller", "ManifestWorkReplicaSet"],
    ]);
  });

  it("an add-on installed, its availability changing, failing to apply, removed; a status write that changes nothing owes none", () => {
    const mca = (conditions: unknown[]): KubeObject => ({
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ManagedClusterAddOn",
      metadata: { name: "hello", namespace: "c1", uid: "u-a", resourceVersion: "1", creationTimestamp: "" },
      status: { conditions },
    });
    const A = ManagedClusterAddOnKind;
    expect(of(A, null, mca([]))).toEqual([
      ["ManagedClusterAddOnCreated", "Normal", "add-on hello on cluster c1 installed", "addon-manager-controller", "ManagedClusterAddOn"],
    ]);
    expect(of(A, mca([]), mca([cond("Available", "True", "ManagedClusterAddOnLeaseUpdated", "hello add-on is available.")]))).toEqual([
      [
        "ManagedClusterAddOnLeaseUpdated",
        "Normal",
        "add-on hello on cluster c1: Available True: hello add-on is available.",
        "addon-manager-controller",
        "ManagedClusterAddOn",
      ],
    ]);
    expect(of(A, mca([cond("Available", "True", "X")]), mca([cond("Available", "Unknown", "ManagedClusterAddOnLeaseNotFound")]))[0]?.slice(0, 2)).toEqual([
      "ManagedClusterAddOnLeaseNotFound",
      "Warning",
    ]);
    expect(
      of(A, mca([cond("ManifestApplied", "True", "AddonManifestApplied")]), mca([cond("ManifestApplied", "False", "ManifestWorkApplyFailed", "boom")])),
    ).toEqual([
      [
        "ManifestWorkApplyFailed",
        "Warning",
        "add-on hello on cluster c1: its manifests failed to apply: boom",
        "addon-manager-controller",
        "ManagedClusterAddOn",
      ],
    ]);
    expect(of(A, mca([cond("Available", "True", "X")]), mca([cond("Available", "True", "X")]))).toEqual([]);
    expect(of(A, mca([]), null)).toEqual([
      ["ManagedClusterAddOnDeleted", "Normal", "add-on hello on cluster c1 removed", "addon-manager-controller", "ManagedClusterAddOn"],
    ]);
  });

  it("a policy propagated to and removed from a cluster, on its root; a compliance change on the replicated policy; a root policy owes none", () => {
    const policy = (name: string, namespace: string, compliant?: string, labels?: Record<string, string>): KubeObject => ({
      apiVersion: "policy.open-cluster-management.io/v1",
      kind: "Policy",
      metadata: { name, namespace, uid: `u-${name}`, resourceVersion: "1", creationTimestamp: "", ...(labels ? { labels } : {}) },
      status: compliant
        ? {
            compliant,
            details: [
              {
                compliant,
                history: [{ eventName: "e", lastTimestamp: "2026-11-26T10:00:00Z", message: `${compliant}; violation - namespaces [prod] not found` }],
              },
            ],
          }
        : {},
    });
    const replica = (compliant?: string) =>
      policy("policies.ns-prod", "c1", compliant, {
        "policy.open-cluster-management.io/root-policy": "policies.ns-prod",
        "policy.open-cluster-management.io/cluster-name": "c1",
      });
    const P = PolicyKind as typeof ManifestWorkKind;
    expect(of(P, null, replica())).toEqual([
      ["PolicyPropagation", "Normal", "Policy policies.ns-prod was propagated to cluster c1", "policy-propagator", "Policy"],
    ]);
    const root = eventsOf({ def: PolicyKind, namespace: "c1", name: "policies.ns-prod", before: null, after: replica() })[0]!.regarding;
    expect([root.namespace, root.name]).toEqual(["policies", "ns-prod"]);
    expect(of(P, replica(), replica("NonCompliant"))).toEqual([
      ["policy: c1/policies.ns-prod", "Warning", "NonCompliant; violation - namespaces [prod] not found", "policy-status-sync", "Policy"],
    ]);
    expect(of(P, replica("NonCompliant"), replica("NonCompliant"))).toEqual([]);
    expect(of(P, replica("NonCompliant"), replica("Compliant"))[0]?.slice(0, 2)).toEqual(["policy: c1/policies.ns-prod", "Normal"]);
    expect(of(P, replica("Compliant"), null)).toEqual([
      ["PolicyPropagation", "Normal", "Policy policies.ns-prod was removed from cluster c1", "policy-propagator", "Policy"],
    ]);
    expect(of(P, policy("ns-prod", "policies"), policy("ns-prod", "policies", "Compliant"))).toEqual([]);
  });
});
