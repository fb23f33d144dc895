import { beforeAll, describe, expect, it } from "vitest";
import { agentKeys, call, createNamespaces, createToken, MC, MCSET, register, snapshot, TOKENS, type AgentKeys, type CallOptions, merge } from "./helpers.ts";

const mc = (metadata: Record<string, unknown>, spec: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  apiVersion: "cluster.open-cluster-management.io/v1",
  kind: "ManagedCluster",
  metadata,
  spec,
  ...extra,
});

interface Case {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  opts?: () => Promise<CallOptions> | CallOptions;
  status: number;
  reason: string;
  field?: string;
}

let victim: { keys: AgentKeys; token: string; rv: string; uid: string };

beforeAll(async () => {
  await createNamespaces("apps", "msgs");
  const token = await createToken({ autoApprove: true });
  const { keys } = await register(token, "victim", "id-victim");
  await call("POST", "/agent/v1/clusters/victim/heartbeat", { healthy: true }, { token: await keys.sign("victim") });
  await register(token, "other", "id-other");
  const cur = await call("GET", `${MC}/victim`);
  victim = { keys, token, rv: cur.body.metadata.resourceVersion, uid: cur.body.metadata.uid };
});

const SECRETS = "/api/v1/namespaces/apps/secrets";
const RECEIVERS = "/apis/flotilla.dev/v1alpha1/namespaces/apps/webhookreceivers";
const receiver = (spec: Record<string, unknown>) => ({ apiVersion: "flotilla.dev/v1alpha1", kind: "WebhookReceiver", metadata: { name: "r1" }, spec });
const receiverSpec = {
  type: "generic",
  secretRef: { name: "hook" },
  target: { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", name: "web" },
  action: { type: "Reevaluate" },
};
const big = "x".repeat(4 * 1024 * 1024);

const cases: Case[] = [
  { name: "uppercase name", method: "POST", path: MC, body: mc({ name: "Bad" }), status: 422, reason: "Invalid", field: "metadata.name" },
  { name: "name longer than 63", method: "POST", path: MC, body: mc({ name: "a".repeat(64) }), status: 422, reason: "Invalid", field: "metadata.name" },
  {
    name: "dotted name for a namespace-like kind",
    method: "POST",
    path: MC,
    body: mc({ name: "a.b" }),
    status: 422,
    reason: "Invalid",
    field: "metadata.name",
  },
  { name: "leading dash", method: "POST", path: MC, body: mc({ name: "-a" }), status: 422, reason: "Invalid", field: "metadata.name" },
  { name: "missing name", method: "POST", path: MC, body: mc({}), status: 422, reason: "Invalid", field: "metadata.name" },
  {
    name: "string where an integer belongs",
    method: "POST",
    path: MC,
    body: mc({ name: "t1" }, { leaseDurationSeconds: "60" }),
    status: 422,
    reason: "Invalid",
    field: "spec.leaseDurationSeconds",
  },
  {
    name: "negative lease duration",
    method: "POST",
    path: MC,
    body: mc({ name: "t2" }, { leaseDurationSeconds: -1 }),
    status: 422,
    reason: "Invalid",
    field: "spec.leaseDurationSeconds",
  },
  {
    name: "boolean as string",
    method: "POST",
    path: MC,
    body: mc({ name: "t3" }, { hubAcceptsClient: "true" }),
    status: 422,
    reason: "Invalid",
    field: "spec.hubAcceptsClient",
  },
  { name: "unknown spec field", method: "POST", path: MC, body: mc({ name: "t4" }, { foo: 1 }), status: 400, reason: "BadRequest", field: "spec.foo" },
  {
    name: "bad fieldValidation directive",
    method: "POST",
    path: `${MC}?fieldValidation=Lenient`,
    body: mc({ name: "t4b" }),
    status: 400,
    reason: "BadRequest",
    field: "fieldValidation",
  },
  {
    name: "unknown field with fieldValidation=Strict",
    method: "POST",
    path: `${MC}?fieldValidation=Strict`,
    body: mc({ name: "t4c" }, { foo: 1 }),
    status: 400,
    reason: "BadRequest",
    field: "spec.foo",
  },
  {
    name: "unknown field dropped by Ignore, the rest still validated",
    method: "POST",
    path: `${MC}?fieldValidation=Ignore`,
    body: mc({ name: "t4d" }, { foo: 1, leaseDurationSeconds: "x" }),
    status: 422,
    reason: "Invalid",
    field: "spec.leaseDurationSeconds",
  },
  {
    name: "unknown top-level field",
    method: "POST",
    path: MC,
    body: mc({ name: "t5" }, {}, { extra: true }),
    status: 400,
    reason: "BadRequest",
    field: "extra",
  },
  {
    name: "unknown taint effect",
    method: "POST",
    path: MC,
    body: mc({ name: "t6" }, { taints: [{ key: "k", effect: "NoSchedule" }] }),
    status: 422,
    reason: "Invalid",
    field: "spec.taints[0].effect",
  },
  {
    name: "invalid taint key",
    method: "POST",
    path: MC,
    body: mc({ name: "t7" }, { taints: [{ key: "bad key!", effect: "NoSelect" }] }),
    status: 422,
    reason: "Invalid",
    field: "spec.taints[0].key",
  },
  {
    name: "client-set timeAdded",
    method: "POST",
    path: MC,
    body: mc({ name: "t8" }, { taints: [{ key: "k", effect: "NoSelect", timeAdded: "2026-01-01T00:00:00Z" }] }),
    status: 400,
    reason: "BadRequest",
    field: "spec.taints[0].timeAdded",
  },
  {
    name: "invalid label key",
    method: "POST",
    path: MC,
    body: mc({ name: "t9", labels: { "bad key": "v" } }),
    status: 422,
    reason: "Invalid",
    field: "metadata.labels",
  },
  {
    name: "invalid label value",
    method: "POST",
    path: MC,
    body: mc({ name: "t10", labels: { k: "-bad-" } }),
    status: 422,
    reason: "Invalid",
    field: "metadata.labels",
  },
  {
    name: "http client config URL",
    method: "POST",
    path: MC,
    body: mc({ name: "t11" }, { managedClusterClientConfigs: [{ url: "http://x" }] }),
    status: 422,
    reason: "Invalid",
    field: "spec.managedClusterClientConfigs[0].url",
  },
  {
    name: "wrong apiVersion",
    method: "POST",
    path: MC,
    body: { ...mc({ name: "t12" }), apiVersion: "v1" },
    status: 400,
    reason: "BadRequest",
    field: "apiVersion",
  },
  { name: "wrong kind", method: "POST", path: MC, body: { ...mc({ name: "t13" }), kind: "Pod" }, status: 400, reason: "BadRequest", field: "kind" },
  { name: "body that is not JSON", method: "POST", path: MC, opts: () => ({ raw: "{not json" }), status: 400, reason: "BadRequest" },
  { name: "array body", method: "POST", path: MC, body: [1, 2], status: 400, reason: "BadRequest" },
  { name: "oversized body", method: "POST", path: MC, body: mc({ name: "t14", annotations: { big } }), status: 413, reason: "RequestEntityTooLarge" },
  {
    name: "resourceVersion on create",
    method: "POST",
    path: MC,
    body: mc({ name: "t15", resourceVersion: "5" }),
    status: 400,
    reason: "BadRequest",
    field: "metadata.resourceVersion",
  },
  { name: "duplicate create", method: "POST", path: MC, body: mc({ name: "victim" }), status: 409, reason: "AlreadyExists" },
  {
    name: "malformed label selector",
    method: "GET",
    path: `${MC}?labelSelector=${encodeURIComponent("a in (b")}`,
    status: 400,
    reason: "BadRequest",
    field: "labelSelector",
  },
  {
    name: "unsupported field selector",
    method: "GET",
    path: `${MC}?fieldSelector=spec.hubAcceptsClient=true`,
    status: 400,
    reason: "BadRequest",
    field: "fieldSelector",
  },
  {
    name: "strategic merge patch media type",
    method: "PATCH",
    path: `${MC}/victim`,
    body: { spec: { hubAcceptsClient: false } },
    opts: () => ({ contentType: "application/strategic-merge-patch+json" }),
    status: 415,
    reason: "UnsupportedMediaType",
  },
  {
    name: "JSON patch whose test fails",
    method: "PATCH",
    path: `${MC}/victim`,
    body: [
      { op: "test", path: "/spec/hubAcceptsClient", value: false },
      { op: "replace", path: "/spec/hubAcceptsClient", value: false },
    ],
    opts: () => ({ contentType: "application/json-patch+json" }),
    status: 422,
    reason: "Invalid",
  },
  {
    name: "apply without fieldManager",
    method: "PATCH",
    path: `${MC}/victim`,
    body: "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: victim\nspec:\n  hubAcceptsClient: false\n",
    opts: () => ({ contentType: "application/apply-patch+yaml" }),
    status: 422,
    reason: "Invalid",
    field: "fieldManager",
  },
  {
    name: "force on a merge patch",
    method: "PATCH",
    path: `${MC}/victim?force=true`,
    body: { spec: { hubAcceptsClient: false } },
    opts: () => merge,
    status: 400,
    reason: "BadRequest",
    field: "force",
  },
  {
    name: "stale resourceVersion",
    method: "PUT",
    path: `${MC}/victim`,
    body: mc({ name: "victim", resourceVersion: "1" }, { hubAcceptsClient: false }),
    status: 409,
    reason: "Conflict",
  },
  {
    name: "name differs from URL",
    method: "PUT",
    path: `${MC}/victim`,
    body: mc({ name: "someone-else" }, { hubAcceptsClient: false }),
    status: 400,
    reason: "BadRequest",
    field: "metadata.name",
  },
  {
    name: "invalid value in a merge patch",
    method: "PATCH",
    path: `${MC}/victim`,
    body: { spec: { leaseDurationSeconds: "soon" } },
    opts: () => merge,
    status: 422,
    reason: "Invalid",
    field: "spec.leaseDurationSeconds",
  },
  {
    name: "wrong uid precondition on delete",
    method: "DELETE",
    path: `${MC}/victim`,
    body: { kind: "DeleteOptions", apiVersion: "v1", preconditions: { uid: "nope" } },
    status: 409,
    reason: "Conflict",
  },
  { name: "POST to a named resource", method: "POST", path: `${MC}/victim`, body: mc({ name: "victim" }), status: 405, reason: "MethodNotAllowed" },
  { name: "unknown resource", method: "GET", path: "/apis/cluster.open-cluster-management.io/v1/widgets", status: 404, reason: "NotFound" },
  {
    name: "invalid set selector type",
    method: "POST",
    path: MCSET,
    body: {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSet",
      metadata: { name: "s1" },
      spec: { clusterSelector: { selectorType: "Magic" } },
    },
    status: 422,
    reason: "Invalid",
    field: "spec.clusterSelector.selectorType",
  },
  {
    name: "invalid set label selector",
    method: "POST",
    path: MCSET,
    body: {
      apiVersion: "cluster.open-cluster-management.io/v1beta2",
      kind: "ManagedClusterSet",
      metadata: { name: "s2" },
      spec: { clusterSelector: { selectorType: "LabelSelector", labelSelector: { matchExpressions: [{ key: "a", operator: "In", values: [] }] } } },
    },
    status: 422,
    reason: "Invalid",
  },
  {
    name: "bootstrap token with a bad ID",
    method: "POST",
    path: TOKENS,
    body: { apiVersion: "flotilla.dev/v1alpha1", kind: "BootstrapToken", metadata: { name: "toolongid" } },
    status: 422,
    reason: "Invalid",
    field: "metadata.name",
  },
  { name: "no credential", method: "GET", path: MC, opts: () => ({ token: null }), status: 401, reason: "Unauthorized" },
  { name: "wrong admin token", method: "GET", path: MC, opts: () => ({ token: "not-the-admin" }), status: 401, reason: "Unauthorized" },
  {
    name: "agent credential on the admin API",
    method: "DELETE",
    path: `${MC}/other`,
    opts: async () => ({ token: await victim.keys.sign("victim") }),
    status: 403,
    reason: "Forbidden",
  },
  {
    name: "forged agent JWT",
    method: "POST",
    path: "/agent/v1/clusters/victim/heartbeat",
    body: { healthy: false },
    opts: async () => ({ token: await (await agentKeys()).sign("victim") }),
    status: 401,
    reason: "Unauthorized",
  },
  {
    name: "expired agent JWT",
    method: "POST",
    path: "/agent/v1/clusters/victim/heartbeat",
    body: { healthy: false },
    opts: async () => ({ token: await victim.keys.sign("victim", { iatOffsetSeconds: -600 }) }),
    status: 401,
    reason: "Unauthorized",
  },
  {
    name: "agent JWT for another audience",
    method: "POST",
    path: "/agent/v1/clusters/victim/heartbeat",
    body: { healthy: false },
    opts: async () => ({ token: await victim.keys.sign("victim", { aud: "elsewhere" }) }),
    status: 401,
    reason: "Unauthorized",
  },
  {
    name: "heartbeat for another cluster",
    method: "POST",
    path: "/agent/v1/clusters/other/heartbeat",
    body: { healthy: false },
    opts: async () => ({ token: await victim.keys.sign("victim") }),
    status: 403,
    reason: "Forbidden",
  },
  {
    name: "heartbeat with wrong types",
    method: "POST",
    path: "/agent/v1/clusters/victim/heartbeat",
    body: { healthy: "yes" },
    opts: async () => ({ token: await victim.keys.sign("victim") }),
    status: 422,
    reason: "Invalid",
    field: "healthy",
  },
  {
    name: "heartbeat with unknown field",
    method: "POST",
    path: "/agent/v1/clusters/victim/heartbeat",
    body: { healthy: true, admin: true },
    opts: async () => ({ token: await victim.keys.sign("victim") }),
    status: 400,
    reason: "BadRequest",
    field: "admin",
  },
  {
    name: "malformed bootstrap token",
    method: "POST",
    path: "/agent/v1/register",
    body: { clusterName: "n1", clusterId: "i1", publicKey: {} },
    opts: () => ({ token: "abc" }),
    status: 401,
    reason: "Unauthorized",
  },
  {
    name: "bootstrap token with a wrong secret",
    method: "POST",
    path: "/agent/v1/register",
    body: { clusterName: "n1", clusterId: "i1", publicKey: {} },
    opts: () => ({ token: `${victim.token.split(".")[0]}.0000000000000000` }),
    status: 401,
    reason: "Unauthorized",
  },
  {
    name: "register with an invalid cluster name",
    method: "POST",
    path: "/agent/v1/register",
    body: async () => ({ clusterName: "Not_Valid", clusterId: "i2", publicKey: (await agentKeys()).publicJwk, proof: "x" }),
    opts: () => ({ token: victim.token }),
    status: 422,
    reason: "Invalid",
    field: "clusterName",
  },
  {
    name: "register sending a private key",
    method: "POST",
    path: "/agent/v1/register",
    body: async () => ({ clusterName: "n3", clusterId: "i3", publicKey: { ...(await agentKeys()).publicJwk, d: "secret" } }),
    opts: () => ({ token: victim.token }),
    status: 400,
    reason: "BadRequest",
    field: "publicKey.d",
  },
  {
    name: "Secret with bad base64 data",
    method: "POST",
    path: SECRETS,
    body: { apiVersion: "v1", kind: "Secret", metadata: { name: "s1" }, data: { token: "%%%" } },
    status: 422,
    reason: "Invalid",
    field: "data[token]",
  },
  {
    name: "Secret with an invalid data key",
    method: "POST",
    path: SECRETS,
    body: { apiVersion: "v1", kind: "Secret", metadata: { name: "s2" }, stringData: { "a/b": "x" } },
    status: 422,
    reason: "Invalid",
    field: "data[a/b]",
  },
  {
    name: "Secret with a non-string stringData value",
    method: "POST",
    path: SECRETS,
    body: { apiVersion: "v1", kind: "Secret", metadata: { name: "s3" }, stringData: { a: 1 } },
    status: 422,
    reason: "Invalid",
    field: "stringData.a",
  },
  {
    name: "Secret posted with a group apiVersion",
    method: "POST",
    path: SECRETS,
    body: { apiVersion: "core/v1", kind: "Secret", metadata: { name: "s4" } },
    status: 400,
    reason: "BadRequest",
    field: "apiVersion",
  },
  { name: "unknown core resource", method: "GET", path: "/api/v1/namespaces/apps/widgets", status: 404, reason: "NotFound" },
  {
    name: "receiver targeting an unsupported kind",
    method: "POST",
    path: RECEIVERS,
    body: receiver({ ...receiverSpec, target: { apiVersion: "apps/v1", kind: "Deployment", name: "web" } }),
    status: 422,
    reason: "Invalid",
    field: "spec.target",
  },
  {
    name: "receiver with an unknown JSON Patch op",
    method: "POST",
    path: RECEIVERS,
    body: receiver({ ...receiverSpec, action: { type: "JSONPatch", patch: [{ op: "merge", path: "/spec" }] } }),
    status: 422,
    reason: "Invalid",
    field: "spec.action.patch[0].op",
  },
  {
    name: "receiver with a malformed template",
    method: "POST",
    path: RECEIVERS,
    body: receiver({ ...receiverSpec, action: { type: "MergePatch", patch: { spec: { numberOfClusters: "{{ count }}" } } } }),
    status: 422,
    reason: "Invalid",
    field: "spec.action.patch.spec.numberOfClusters",
  },
  {
    name: "receiver without secretRef",
    method: "POST",
    path: RECEIVERS,
    body: receiver({ ...receiverSpec, secretRef: undefined }),
    status: 422,
    reason: "Invalid",
    field: "spec.secretRef",
  },
  {
    name: "delivery to an unknown hook",
    method: "POST",
    path: `/hooks/${"0".repeat(64)}`,
    body: {},
    opts: () => ({ token: null }),
    status: 404,
    reason: "NotFound",
  },
  {
    name: "delivery to a malformed hook path",
    method: "POST",
    path: "/hooks/..%2Fapis",
    body: {},
    opts: () => ({ token: null }),
    status: 404,
    reason: "NotFound",
  },
  {
    name: "register with an ID taken by another name",
    method: "POST",
    path: "/agent/v1/register",
    body: async () => {
      const k = await agentKeys();
      return { clusterName: "n4", clusterId: "id-victim", publicKey: k.publicJwk, proof: await k.proof("n4", "id-victim") };
    },
    opts: () => ({ token: victim.token }),
    status: 409,
    reason: "Conflict",
  },
];

describe("bad input gets the right 4xx Status and changes nothing", () => {
  it("has at least 30 cases", () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  for (const c of cases) {
    it(`${c.name} -> ${c.status} ${c.reason}`, async () => {
      const before = await snapshot();
      const body = typeof c.body === "function" ? await (c.body as () => Promise<unknown>)() : c.body;
      const opts = c.opts ? await c.opts() : {};
      const r = await call(c.method, c.path, body, opts);
      expect(r.status).toBe(c.status);
      expect(r.body).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", code: c.status, reason: c.reason });
      expect(typeof r.body.message).toBe("string");
      if (c.field) {
        const fields = (r.body.details?.causes ?? []).map((x: { field?: string }) => x.field);
        expect(fields).toContain(c.field);
      }
      expect(await snapshot()).toBe(before);
    });
  }
});

describe("field error messages and fieldValidation", () => {
  it("says Required value for a missing field and quotes the offending value otherwise", async () => {
    const placement = (spec: Record<string, unknown>) => ({
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "msg" },
      spec,
    });
    const path = "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/msgs/placements";
    const missing = await call(
      "POST",
      path,
      placement({ tolerations: [{ operator: "Sideways" }, { key: "k", operator: "Exists", effect: "NoSelect", tolerationSeconds: "x" }] }),
    );
    expect(missing.status).toBe(422);
    const causes = missing.body.details.causes as { field: string; message: string; reason: string }[];
    expect(causes.find((x) => x.field === "spec.tolerations[0].operator")?.message).toMatch(/^Invalid value: "Sideways": /);
    expect(causes.find((x) => x.field === "spec.tolerations[1].tolerationSeconds")?.message).toMatch(/^Invalid value: "x": /);
    const mcMissing = await call("POST", MC, {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "msg" },
      spec: { taints: [{ key: "k" }] },
    });
    expect(mcMissing.status).toBe(422);
    expect(mcMissing.body.details.causes).toContainEqual(
      expect.objectContaining({ field: "spec.taints[0].effect", reason: "FieldValueRequired", message: "Required value" }),
    );
  });

  it("drops unknown fields with Ignore silently and with Warn in a Warning header, and stores the rest", async () => {
    const ignored = await call("POST", `${MC}?fieldValidation=Ignore`, mc({ name: "fv-ignore" }, { foo: 1, leaseDurationSeconds: 30 }, { extra: true }));
    expect(ignored.status).toBe(201);
    expect(ignored.headers.get("warning")).toBeNull();
    expect(ignored.body.spec).toEqual(expect.objectContaining({ leaseDurationSeconds: 30 }));
    expect(ignored.body.spec.foo).toBeUndefined();
    expect(ignored.body.extra).toBeUndefined();
    const warned = await call("POST", `${MC}?fieldValidation=Warn`, mc({ name: "fv-warn" }, { foo: 1 }));
    expect(warned.status).toBe(201);
    expect(warned.headers.get("warning")).toBe('299 - "unknown field \\"spec.foo\\""');
    const patched = await call("PATCH", `${MC}/fv-warn?fieldValidation=Warn`, { spec: { bar: 2, leaseDurationSeconds: 45 } }, merge);
    expect(patched.status).toBe(200);
    expect(patched.headers.get("warning")).toContain("spec.bar");
    expect(patched.body.spec.leaseDurationSeconds).toBe(45);
    const applied = await call(
      "PATCH",
      `${MC}/fv-apply?fieldManager=t&fieldValidation=Ignore`,
      "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: fv-apply\nspec:\n  nope: 1\n  hubAcceptsClient: false\n",
      { contentType: "application/apply-patch+yaml" },
    );
    expect(applied.status).toBe(201);
    expect(applied.body.spec.nope).toBeUndefined();
  });
});
