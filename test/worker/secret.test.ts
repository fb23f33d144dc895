import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces, merge, SECRETS } from "./helpers.ts";

const secret = (name: string, fields: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}) => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name, ...metadata },
  ...fields,
});
const b64 = (s: string) => btoa(s);

describe("core Secret: /api/v1/namespaces/{ns}/secrets", () => {
  beforeAll(() => createNamespaces("apps", "crud", "imm", "table"));

  it("creates from stringData: merged into data base64-encoded, never stored or served, type defaults to Opaque", async () => {
    const r = await call("POST", SECRETS("apps"), secret("hook", { stringData: { token: "s3cret", greeting: "çödé" } }));
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ apiVersion: "v1", kind: "Secret", type: "Opaque", data: { token: b64("s3cret") } });
    expect(r.body.stringData).toBeUndefined();
    const utf8 = new TextDecoder().decode(Uint8Array.from(atob(r.body.data.greeting), (c) => c.charCodeAt(0)));
    expect(utf8).toBe("çödé");
  });

  it("rejects keys that are not config keys", async () => {
    const r = await call("POST", SECRETS("apps"), secret("badkey", { stringData: { "a b": "x" } }));
    expect(r.status).toBe(422);
    expect(r.body.details.causes.map((c: { field: string }) => c.field)).toContain("data[a b]");
  });

  it("get, list, update, merge patch with stringData overriding data, apply and delete", async () => {
    const c = await call("POST", SECRETS("crud"), secret("db", { data: { user: b64("admin"), pass: b64("old") } }));
    expect(c.status).toBe(201);
    const got = await call("GET", `${SECRETS("crud")}/db`);
    expect(got.body.data).toEqual({ user: b64("admin"), pass: b64("old") });
    const stored = await env.DB.prepare("SELECT body FROM objects WHERE resource = '/secrets' AND namespace = 'crud' AND name = 'db'").first<{
      body: string;
    }>();
    expect(JSON.parse(stored!.body).stringData).toBeUndefined();

    const patched = await call("PATCH", `${SECRETS("crud")}/db`, { stringData: { pass: "new" } }, merge);
    expect(patched.status).toBe(200);
    expect(patched.body.data).toEqual({ user: b64("admin"), pass: b64("new") });
    expect(patched.body.stringData).toBeUndefined();

    const put = await call(
      "PUT",
      `${SECRETS("crud")}/db`,
      secret("db", { data: { user: b64("root") }, stringData: { user: "wins" }, type: "Opaque" }, { resourceVersion: patched.body.metadata.resourceVersion }),
    );
    expect(put.status).toBe(200);
    expect(put.body.data).toEqual({ user: b64("wins") });

    const applied = await call(
      "PATCH",
      `${SECRETS("crud")}/applied?fieldManager=test`,
      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\nstringData:\n  k: v\n",
      { contentType: "application/apply-patch+yaml" },
    );
    expect(applied.status).toBe(201);
    expect(applied.body.data).toEqual({ k: b64("v") });

    const list = await call("GET", SECRETS("crud"));
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ apiVersion: "v1", kind: "SecretList" });
    expect(list.body.items.map((s: { metadata: { name: string } }) => s.metadata.name)).toEqual(["applied", "db"]);
    const all = await call("GET", "/api/v1/secrets");
    expect(all.body.items.length).toBeGreaterThanOrEqual(2);

    const del = await call("DELETE", `${SECRETS("crud")}/db`);
    expect(del.status).toBe(200);
    expect((await call("GET", `${SECRETS("crud")}/db`)).status).toBe(404);
    const missing = await call("GET", `${SECRETS("crud")}/db`);
    expect(missing.body.message).toBe('secrets "db" not found');
  });

  it("refuses bad base64 in data with 422 and stores nothing", async () => {
    const r = await call("POST", SECRETS("apps"), secret("bad64", { data: { token: "not base64!" } }));
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ kind: "Status", reason: "Invalid" });
    expect(r.body.details.causes.map((c: { field: string }) => c.field)).toContain("data[token]");
    expect(r.body.message).not.toContain("not base64!");
    expect((await call("GET", `${SECRETS("apps")}/bad64`)).status).toBe(404);
    const unpadded = await call("POST", SECRETS("apps"), secret("bad64", { data: { token: "YWJj ZA" } }));
    expect(unpadded.status).toBe(422);
  });

  it("keeps type immutable and honours immutable: true", async () => {
    const c = await call("POST", SECRETS("imm"), secret("frozen", { stringData: { a: "1" }, immutable: true }));
    expect(c.status).toBe(201);
    const change = await call("PATCH", `${SECRETS("imm")}/frozen`, { stringData: { a: "2" } }, merge);
    expect(change.status).toBe(422);
    expect(change.body.details.causes.map((x: { field: string }) => x.field)).toContain("data");
    const unset = await call("PATCH", `${SECRETS("imm")}/frozen`, { immutable: false }, merge);
    expect(unset.status).toBe(422);
    const labels = await call("PATCH", `${SECRETS("imm")}/frozen`, { metadata: { labels: { a: "b" } } }, merge);
    expect(labels.status).toBe(200);
    const retype = await call("PATCH", `${SECRETS("imm")}/frozen`, { type: "kubernetes.io/basic-auth" }, merge);
    expect(retype.status).toBe(422);
    expect(retype.body.details.causes.map((x: { field: string }) => x.field)).toContain("type");
  });

  it("checks the required keys of well-known types", async () => {
    const tls = await call("POST", SECRETS("apps"), secret("tls", { type: "kubernetes.io/tls", stringData: { "tls.crt": "x" } }));
    expect(tls.status).toBe(422);
    expect(tls.body.details.causes.map((x: { field: string }) => x.field)).toContain("data[tls.key]");
    const ok = await call("POST", SECRETS("apps"), secret("tls", { type: "kubernetes.io/tls", stringData: { "tls.crt": "x", "tls.key": "y" } }));
    expect(ok.status).toBe(201);
  });

  it("is served in discovery: /api (APIVersions), /api/v1 (APIResourceList), not in /apis", async () => {
    const api = await call("GET", "/api");
    expect(api.status).toBe(200);
    expect(api.body).toMatchObject({ kind: "APIVersions", versions: ["v1"] });
    const v1 = await call("GET", "/api/v1");
    expect(v1.status).toBe(200);
    expect(v1.body).toMatchObject({ kind: "APIResourceList", groupVersion: "v1" });
    expect(v1.body.resources).toContainEqual(
      expect.objectContaining({
        name: "secrets",
        singularName: "secret",
        namespaced: true,
        kind: "Secret",
        verbs: expect.arrayContaining(["create", "get", "list", "patch", "update", "delete"]),
      }),
    );
    const apis = await call("GET", "/apis");
    expect(apis.body.groups.map((g: { name: string }) => g.name)).not.toContain("");
    expect(apis.body.groups.map((g: { name: string }) => g.name)).toContain("flotilla.dev");
    const fd = await call("GET", "/apis/flotilla.dev/v1alpha1");
    expect(fd.body.resources.map((r: { name: string }) => r.name)).toEqual(expect.arrayContaining(["webhookreceivers", "webhookreceivers/status"]));
    expect((await call("GET", "/api/v2")).status).toBe(404);
    expect((await call("GET", "/api", undefined, { token: null })).status).toBe(401);
  });

  it("serves kubectl Tables and an OpenAPI document at /openapi/v3/api/v1", async () => {
    await call("POST", SECRETS("table"), secret("t1", { stringData: { a: "1" } }));
    const res = await call("GET", `${SECRETS("table")}/t1`);
    expect(res.status).toBe(200);
    const table = await exports.default.fetch(`https://hub.test${SECRETS("table")}`, {
      headers: { authorization: "Bearer test-admin-token", accept: "application/json;as=Table;v=v1;g=meta.k8s.io" },
    });
    const body = (await table.json()) as { kind: string; columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] };
    expect(body.kind).toBe("Table");
    expect(body.columnDefinitions.map((c) => c.name)).toEqual(["Name", "Type", "Age"]);
    expect(body.rows[0]!.cells.slice(0, 2)).toEqual(["t1", "Opaque"]);
    const disc = await call("GET", "/openapi/v3");
    expect(disc.body.paths["api/v1"].serverRelativeURL).toMatch(/^\/openapi\/v3\/api\/v1\?hash=/);
    const doc = await call("GET", "/openapi/v3/api/v1");
    expect(doc.status).toBe(200);
    expect(doc.body.components.schemas["io.k8s.api.core.v1.Secret"]["x-kubernetes-group-version-kind"]).toEqual([{ group: "", version: "v1", kind: "Secret" }]);
    expect(doc.body.paths["/api/v1/namespaces/{namespace}/secrets/{name}"].get.operationId).toBe("readCoreV1NamespacedSecret");
  });
});
