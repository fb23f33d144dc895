/**
 * What an agent sends, validated as kube-apiserver validates it (issue 27): conditions are a
 * map keyed by `type` with `reason`, `message` and the rest checked as metav1.Condition's
 * (apimachinery's ValidateConditions), heartbeat capacities parsed by the hub's one quantity
 * parser (422 naming the entry), and body limits checked after authentication and before
 * decoding (a stranger's body is never read; an agent's over-limit body is 413).
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AGENT_BODY_LIMIT, WORK_STATUS_BODY_LIMIT } from "../../src/agent-api/routes.ts";
import { agentKeys, call, MC, joined, WORKS } from "./helpers.ts";

const REPORT = (cluster: string, work: string) => `/agent/v1/clusters/${cluster}/works/${work}/status`;

const work = (name: string) => ({
  apiVersion: "work.open-cluster-management.io/v1",
  kind: "ManifestWork",
  metadata: { name },
  spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { a: "1" } }] } },
});

const cond = (type: string, extra: Record<string, unknown> = {}) => ({
  type,
  status: "True",
  reason: "AppliedManifestWorkComplete",
  message: "Apply manifest work complete",
  lastTransitionTime: "2026-11-26T00:00:00Z",
  observedGeneration: 1,
  ...extra,
});

/** A joined cluster with one work; returns the keys and the work's uid and resourceVersion. */
async function withWork(cluster: string, name = "w") {
  const keys = await joined(cluster);
  const created = await call("POST", WORKS(cluster), work(name));
  expect(created.status).toBe(201);
  return { keys, uid: created.body.metadata.uid as string, rv: created.body.metadata.resourceVersion as string };
}

/**
 * A request body that fails if the Worker reads it: its first chunk (64 KiB) is the one the
 * runtime pulls to start the request whoever reads it; a second pull, which only a reader of the
 * body makes, errors the stream (so reading it would be a 500) and is recorded.
 */
function untouchableBody(): { stream: ReadableStream<Uint8Array>; read: () => boolean } {
  let pulls = 0;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        pulls++;
        if (pulls === 1) controller.enqueue(new Uint8Array(64 * 1024).fill(0x7b));
        else controller.error(new Error("the body of an unauthenticated request was read"));
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, read: () => pulls > 1 };
}

async function send(method: string, path: string, token: string | null, body: BodyInit, headers: Record<string, string> = {}) {
  const res = await exports.default.fetch(`https://hub.test${path}`, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe("work status conditions from an agent: a map by type, each a valid metav1.Condition", () => {
  it("refuses two conditions of one type with 422 Duplicate value naming the second, and writes nothing", async () => {
    const { keys, uid, rv } = await withWork("ai1");
    const res = await call(
      "PUT",
      REPORT("ai1", "w"),
      { uid, status: { conditions: [cond("Applied"), cond("Available"), cond("Applied", { status: "False", reason: "AppliedManifestWorkFailed" })] } },
      { token: await keys.sign("ai1") },
    );
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ kind: "Status", reason: "Invalid" });
    expect(res.body.details.causes).toContainEqual({
      field: "status.conditions[2].type",
      reason: "FieldValueDuplicate",
      message: 'Duplicate value: "Applied"',
    });
    expect((await call("GET", `${WORKS("ai1")}/w`)).body.metadata.resourceVersion).toBe(rv);
  });

  it("refuses duplicate types among a manifest's conditions too", async () => {
    const { keys, uid } = await withWork("ai2");
    const manifests = [{ resourceMeta: { ordinal: 0, kind: "ConfigMap", name: "w" }, conditions: [cond("Available"), cond("Available")] }];
    const res = await call("PUT", REPORT("ai2", "w"), { uid, status: { resourceStatus: { manifests } } }, { token: await keys.sign("ai2") });
    expect(res.status).toBe(422);
    expect(res.body.details.causes).toContainEqual({
      field: "status.resourceStatus.manifests[0].conditions[1].type",
      reason: "FieldValueDuplicate",
      message: 'Duplicate value: "Available"',
    });
  });

  it("refuses two feedback values of one name, as OCM's CRD keys statusFeedback.values by name", async () => {
    const { keys, uid } = await withWork("ai6");
    const values = [
      { name: "replicas", fieldValue: { type: "Integer", integer: 1 } },
      { name: "replicas", fieldValue: { type: "Integer", integer: 2 } },
    ];
    const manifests = [{ resourceMeta: { ordinal: 0 }, statusFeedback: { values }, conditions: [cond("Applied")] }];
    const res = await call("PUT", REPORT("ai6", "w"), { uid, status: { resourceStatus: { manifests } } }, { token: await keys.sign("ai6") });
    expect(res.status).toBe(422);
    expect(res.body.details.causes).toEqual([
      {
        field: "status.resourceStatus.manifests[0].statusFeedback.values[1]",
        reason: "FieldValueDuplicate",
        message: 'Duplicate value: map[string]interface {}{"name":"replicas"}',
      },
    ]);
    values[1]!.name = "available";
    expect((await call("PUT", REPORT("ai6", "w"), { uid, status: { resourceStatus: { manifests } } }, { token: await keys.sign("ai6") })).status).toBe(200);
  });

  it("refuses a reason outside the apiserver's pattern, an empty one, and the other invalid fields, each named", async () => {
    const { keys, uid, rv } = await withWork("ai3");
    for (const reason of ["not a reason", "Bad-Reason", "1Reason", "Trailing:"]) {
      const res = await call("PUT", REPORT("ai3", "w"), { uid, status: { conditions: [cond("Applied", { reason })] } }, { token: await keys.sign("ai3") });
      expect(res.status, reason).toBe(422);
      const cause = res.body.details.causes.find((c: { field: string }) => c.field === "status.conditions[0].reason");
      expect(cause, reason).toMatchObject({ reason: "FieldValueInvalid" });
      expect(cause.message).toContain("a condition reason must start with alphabetic character");
    }
    const bad = cond("example.com/x/y", { reason: "", message: "m".repeat(32 * 1024 + 1), observedGeneration: -1, lastTransitionTime: "yesterday" });
    const res = await call("PUT", REPORT("ai3", "w"), { uid, status: { conditions: [bad] } }, { token: await keys.sign("ai3") });
    expect(res.status).toBe(422);
    const fields = Object.fromEntries(res.body.details.causes.map((c: { field: string; reason: string }) => [c.field, c.reason]));
    expect(fields).toEqual({
      "status.conditions[0].type": "FieldValueInvalid",
      "status.conditions[0].reason": "FieldValueRequired",
      "status.conditions[0].message": "FieldValueTooLong",
      "status.conditions[0].observedGeneration": "FieldValueInvalid",
      "status.conditions[0].lastTransitionTime": "FieldValueInvalid",
    });
    expect((await call("GET", `${WORKS("ai3")}/w`)).body.metadata.resourceVersion).toBe(rv);
  });

  it("accepts valid conditions (reasons with , : and _; a prefixed type; a 32 KiB message)", async () => {
    const { keys, uid } = await withWork("ai4");
    const conditions = [
      cond("Applied", { reason: "ReasonA,ReasonB" }),
      cond("example.com/Custom", { reason: "My_Reason:Detail_", message: "m".repeat(32 * 1024) }),
    ];
    const res = await call("PUT", REPORT("ai4", "w"), { uid, status: { conditions } }, { token: await keys.sign("ai4") });
    expect(res.status).toBe(200);
    expect((await call("GET", `${WORKS("ai4")}/w`)).body.status.conditions.map((c: { type: string }) => c.type)).toEqual(["Applied", "example.com/Custom"]);
  });

  it("the admin API's status writes are held to the same rules", async () => {
    const { rv } = await withWork("ai5");
    const current = (await call("GET", `${WORKS("ai5")}/w`)).body;
    const dup = await call("PUT", `${WORKS("ai5")}/w/status`, { ...current, status: { conditions: [cond("Applied"), cond("Applied")] } });
    expect(dup.status).toBe(422);
    expect(dup.body.details.causes).toContainEqual({
      field: "status.conditions[1].type",
      reason: "FieldValueDuplicate",
      message: 'Duplicate value: "Applied"',
    });
    const reason = await call("PUT", `${MC}/ai5/status`, {
      ...(await call("GET", `${MC}/ai5`)).body,
      status: { conditions: [cond("ManagedClusterConditionAvailable", { reason: "not ok" })] },
    });
    expect(reason.status).toBe(422);
    expect(reason.body.details.causes[0]).toMatchObject({ field: "status.conditions[0].reason", reason: "FieldValueInvalid" });
    expect((await call("GET", `${WORKS("ai5")}/w`)).body.metadata.resourceVersion).toBe(rv);
  });
});

describe("heartbeat capacities: parsed by the hub's quantity parser", () => {
  for (const [i, [field, value, detail]] of (
    [
      ["capacity", "1e400", "must be less than 2^63"],
      ["capacity", "-5", "must be greater than or equal to 0"],
      ["allocatable", "-1Gi", "must be greater than or equal to 0"],
      ["allocatable", "abc", "quantities must match the regular expression"],
    ] as const
  ).entries()) {
    it(`refuses ${field} ${value} with 422 naming ${field}[cpu], and the cluster keeps its status`, async () => {
      const name = `aq${i}`;
      const keys = await joined(name);
      const ok = await call(
        "POST",
        `/agent/v1/clusters/${name}/heartbeat`,
        { healthy: true, capacity: { cpu: "4", memory: "16Gi" }, allocatable: { cpu: "3800m", memory: "15Gi" } },
        { token: await keys.sign(name) },
      );
      expect(ok.status).toBe(200);
      const before = (await call("GET", `${MC}/${name}`)).body;
      const res = await call(
        "POST",
        `/agent/v1/clusters/${name}/heartbeat`,
        { healthy: true, [field]: { memory: "8Gi", cpu: value } },
        { token: await keys.sign(name) },
      );
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ kind: "Status", reason: "Invalid" });
      expect(res.body.details.causes).toHaveLength(1);
      expect(res.body.details.causes[0]).toMatchObject({ field: `${field}[cpu]`, reason: "FieldValueInvalid" });
      expect(res.body.details.causes[0].message).toContain(detail);
      const after = (await call("GET", `${MC}/${name}`)).body;
      expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
      expect(after.status.capacity).toEqual({ cpu: "4", memory: "16Gi" });
    });
  }

  it("a malformed quantity in an admin status write is 422 too (a negative one stays the CRD's to accept)", async () => {
    await joined("aq9");
    const current = (await call("GET", `${MC}/aq9`)).body;
    const bad = await call("PUT", `${MC}/aq9/status`, { ...current, status: { ...current.status, capacity: { cpu: "abc" } } });
    expect(bad.status).toBe(422);
    expect(bad.body.details.causes[0]).toMatchObject({ field: "status.capacity[cpu]", reason: "FieldValueInvalid" });
  });
});

describe("agent body limits: checked after authentication, before decoding", () => {
  it("a work status report from a stranger is 401 without its body read; the agent's over-limit report is 413", async () => {
    const { keys, uid, rv } = await withWork("al1");
    // A JWT naming the registered cluster, signed by another key: it gets as far as the cluster's object.
    const stranger = await agentKeys();
    for (const token of [await stranger.sign("al1"), await stranger.sign("nobody"), null]) {
      const body = untouchableBody();
      const res = await send("PUT", REPORT("al1", "w"), token, body.stream);
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ kind: "Status", reason: "Unauthorized" });
      expect(body.read()).toBe(false);
    }
    // Declared too large: 401 all the same for the stranger.
    const declared = untouchableBody();
    const res = await send("PUT", REPORT("al1", "w"), await stranger.sign("al1"), declared.stream, { "content-length": String(WORK_STATUS_BODY_LIMIT + 1) });
    expect(res.status).toBe(401);
    expect(declared.read()).toBe(false);

    const big = JSON.stringify({ uid, status: { conditions: [cond("Applied", { message: "m".repeat(WORK_STATUS_BODY_LIMIT) })] } });
    const tooLarge = await send("PUT", REPORT("al1", "w"), await keys.sign("al1"), big);
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body).toMatchObject({ kind: "Status", reason: "RequestEntityTooLarge", code: 413 });
    // Streamed without a length, the same.
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > WORK_STATUS_BODY_LIMIT) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    expect((await send("PUT", REPORT("al1", "w"), await keys.sign("al1"), stream)).status).toBe(413);
    expect((await call("GET", `${WORKS("al1")}/w`)).body.metadata.resourceVersion).toBe(rv);
    // Within the limit, a report as large as a big work's status is accepted.
    const fits = { uid, status: { conditions: [cond("Applied", { message: "m".repeat(32 * 1024) })] } };
    expect((await call("PUT", REPORT("al1", "w"), fits, { token: await keys.sign("al1") })).status).toBe(200);
  });

  it("a heartbeat from a stranger is 401 without its body read; the agent's over-limit heartbeat is 413", async () => {
    const keys = await joined("al2");
    const stranger = await agentKeys();
    // No registered cluster of that name, or a key tag the hub never issued: refused on the header alone.
    for (const token of [await stranger.sign("nobody"), await stranger.sign("al2", { tag: "forged-tag" }), null]) {
      const body = untouchableBody();
      const res = await send("POST", "/agent/v1/clusters/al2/heartbeat", token, body.stream);
      expect(res.status).toBe(401);
      expect(body.read()).toBe(false);
    }
    const big = JSON.stringify({ healthy: true, healthMessage: "x".repeat(AGENT_BODY_LIMIT) });
    const res = await send("POST", "/agent/v1/clusters/al2/heartbeat", await keys.sign("al2"), big);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ kind: "Status", reason: "RequestEntityTooLarge" });
    expect((await call("POST", "/agent/v1/clusters/al2/heartbeat", { healthy: true }, { token: await keys.sign("al2") })).status).toBe(200);
  });
});
