/**
 * CustomResourceDefinitions and their custom resources (issue 42, Build 1): the CRD's lifecycle
 * (NamesAccepted, Established, the cleanup finalizer, Terminating), structural validation of the
 * CRD as apiextensions-apiserver words it, the custom resources served for every served version
 * and stored at the storage version, pruning, defaulting, schema validation and CEL rules,
 * printer columns, status and scale subresources, discovery and OpenAPI, RBAC, namespace
 * deletion, and the deletion of a CRD's resources with it. Cases with messages taken from
 * apiextensions-apiserver's own tests (`pkg/apiserver/validation`, `pkg/apis/apiextensions/validation`).
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { clock } from "../../src/clock.ts";
import { call, createNamespaces, merge } from "./helpers.ts";

const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GROUP = "stable.example.com";
const WIDGETS = (ns: string, version = "v1") => `/apis/${GROUP}/${version}/namespaces/${ns}/widgets`;
const TABLE = { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } };

const WIDGET_SCHEMA = {
  type: "object",
  properties: {
    spec: {
      type: "object",
      required: ["image"],
      properties: {
        image: { type: "string", pattern: "^[a-z0-9./:-]+$" },
        replicas: { type: "integer", minimum: 0, default: 1 },
        minReplicas: { type: "integer" },
        color: { type: "string", enum: ["red", "blue"] },
        size: { type: "string", maxLength: 5 },
        tags: { type: "array", maxItems: 2, items: { type: "string" } },
        immutable: { type: "string", "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "immutable is immutable" }] },
        extra: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
        labels: { type: "object", additionalProperties: { type: "string" } },
        ports: {
          type: "array",
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["name"],
          items: { type: "object", required: ["name"], properties: { name: { type: "string" }, port: { type: "integer" } } },
        },
        template: {
          type: "object",
          properties: { port: { "x-kubernetes-int-or-string": true }, mode: { type: "string", default: "fast" } },
        },
      },
      "x-kubernetes-validations": [
        { rule: "!has(self.minReplicas) || self.minReplicas <= self.replicas", message: "minReplicas must not exceed replicas" },
        { rule: "self.image != 'forbidden'", messageExpression: "'image ' + self.image + ' is not allowed'", reason: "FieldValueForbidden" },
      ],
    },
    status: { type: "object", properties: { replicas: { type: "integer" }, selector: { type: "string" }, phase: { type: "string" } } },
  },
};

function widgetCrd(extra: Record<string, unknown> = {}) {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `widgets.${GROUP}` },
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: { plural: "widgets", singular: "widget", kind: "Widget", shortNames: ["wd"], categories: ["all", "gadgets"] },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: { openAPIV3Schema: WIDGET_SCHEMA },
          subresources: {
            status: {},
            scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas", labelSelectorPath: ".status.selector" },
          },
          additionalPrinterColumns: [
            { name: "Replicas", type: "integer", jsonPath: ".spec.replicas" },
            { name: "Image", type: "string", jsonPath: ".spec.image", priority: 1 },
            { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
          ],
        },
        { name: "v1beta1", served: true, storage: false, schema: { openAPIV3Schema: WIDGET_SCHEMA }, subresources: { status: {} } },
      ],
      ...extra,
    },
  };
}

const widget = (name: string, spec: Record<string, unknown>, version = "v1") => ({
  apiVersion: `${GROUP}/${version}`,
  kind: "Widget",
  metadata: { name },
  spec,
});
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const causes = (body: any): string[] => (body.details?.causes ?? []).map((c: { field: string; message: string }) => `${c.field}: ${c.message}`);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const cond = (obj: any, type: string) => obj.status?.conditions?.find((c: { type: string }) => c.type === type);

describe("CustomResourceDefinition: how fresh an isolate's custom kinds are (src/kinds/sync.ts)", () => {
  const T = Date.parse("2026-11-29T16:00:00Z");

  /** Dry-runs the create of a CRD and commits the answer as another isolate would: its row, the CRD change counter and the resourceVersion counter (moved once per batch, migrations/0016), in one batch, not through this isolate's store. */
  async function commitElsewhere(group: string, plural: string, kind: string): Promise<void> {
    const body = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: `${plural}.${group}` },
      spec: {
        group,
        scope: "Namespaced",
        names: { plural, kind },
        versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } } }],
      },
    };
    const dry = await call("POST", `${CRDS}?dryRun=All`, body);
    expect(dry.status, JSON.stringify(dry.body)).toBe(201);
    const stored = { ...dry.body, metadata: { ...dry.body.metadata, uid: dry.body.metadata.uid ?? crypto.randomUUID() } };
    delete stored.metadata.resourceVersion;
    const rv = (await env.DB.prepare("SELECT value FROM counters WHERE id = 1").first<{ value: number }>())!.value + 1;
    await env.DB.batch([
      env.DB.prepare("INSERT INTO objects (resource, namespace, name, uid, resource_version, body) VALUES (?, '', ?, ?, ?, ?)").bind(
        "apiextensions.k8s.io/customresourcedefinitions",
        stored.metadata.name,
        stored.metadata.uid,
        rv,
        JSON.stringify(stored),
      ),
      env.DB.prepare("INSERT INTO counters (id, value) VALUES (3, ?) ON CONFLICT (id) DO UPDATE SET value = excluded.value").bind(rv),
      env.DB.prepare("UPDATE counters SET value = ? WHERE id = 1").bind(rv),
    ]);
  }

  const groupsListed = async () => (await call("GET", "/apis")).body.groups.map((g: { name: string }) => g.name) as string[];

  it("checks the CRD change counter only once its last check is 5 s old, or at once when a path names a kind it does not know", async () => {
    const real = clock.now;
    let now = T;
    clock.now = () => now;
    try {
      await createNamespaces("fresh");
      expect(await groupsListed()).not.toContain("a.fresh.example.com");

      // Another isolate creates a CRD: within 5 s of this isolate's last check, discovery is served from its cache, without a read.
      await commitElsewhere("a.fresh.example.com", "apples", "Apple");
      now = T + 4_999;
      expect(await groupsListed()).not.toContain("a.fresh.example.com");
      // 5 s after it: checked, and listed.
      now = T + 5_000;
      expect(await groupsListed()).toContain("a.fresh.example.com");

      // A group-version it does not serve yet, and a resource path it does not know, are checked at once.
      await commitElsewhere("b.fresh.example.com", "bananas", "Banana");
      expect((await call("GET", "/apis/b.fresh.example.com/v1")).status).toBe(200);
      await commitElsewhere("c.fresh.example.com", "cherries", "Cherry");
      const cherry = { apiVersion: "c.fresh.example.com/v1", kind: "Cherry", metadata: { name: "one" } };
      expect((await call("POST", "/apis/c.fresh.example.com/v1/namespaces/fresh/cherries", cherry)).status).toBe(201);
      // A path that names nothing still answers 404.
      expect((await call("GET", "/apis/d.fresh.example.com/v1/namespaces/fresh/dates")).status).toBe(404);

      // This isolate's own CRD write is seen by its next request, whatever the age.
      const own = {
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        metadata: { name: "elders.e.fresh.example.com" },
        spec: {
          group: "e.fresh.example.com",
          scope: "Cluster",
          names: { plural: "elders", kind: "Elder" },
          versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: { type: "object" } } }],
        },
      };
      expect((await call("POST", CRDS, own)).status).toBe(201);
      expect(await groupsListed()).toContain("e.fresh.example.com");
    } finally {
      clock.now = real;
    }
    for (const name of ["apples.a", "bananas.b", "cherries.c", "elders.e"])
      expect((await call("DELETE", `${CRDS}/${name}.fresh.example.com`)).status).toBe(200);
  });
});

describe("CustomResourceDefinition: lifecycle and custom resources", () => {
  beforeAll(async () => {
    await createNamespaces("crd-a", "crd-b", "crd-gone");
    const r = await call("POST", CRDS, widgetCrd());
    if (r.status !== 201) throw new Error(`CRD: ${r.status} ${JSON.stringify(r.body)}`);
  });

  it("is accepted and Established at once, with its finalizer, accepted names and stored versions", async () => {
    const r = await call("GET", `${CRDS}/widgets.${GROUP}`);
    expect(r.status).toBe(200);
    expect(r.body.metadata.finalizers).toEqual(["customresourcecleanup.apiextensions.k8s.io"]);
    expect(cond(r.body, "NamesAccepted")).toMatchObject({ status: "True", reason: "NoConflicts" });
    expect(cond(r.body, "Established")).toMatchObject({ status: "True", reason: "InitialNamesAccepted" });
    expect(r.body.status.acceptedNames).toMatchObject({ plural: "widgets", singular: "widget", kind: "Widget", listKind: "WidgetList", shortNames: ["wd"] });
    expect(r.body.status.storedVersions).toEqual(["v1"]);
    expect(r.body.spec.conversion).toEqual({ strategy: "None" });
    const short = await call("GET", "/apis/apiextensions.k8s.io/v1");
    expect(short.body.resources.find((x: { name: string }) => x.name === "customresourcedefinitions").shortNames).toEqual(["crd", "crds"]);
  });

  it("serves the custom resources in discovery: both versions, short names, categories, status and scale", async () => {
    const groups = await call("GET", "/apis");
    const g = groups.body.groups.find((x: { name: string }) => x.name === GROUP);
    expect(g.versions.map((v: { version: string }) => v.version)).toEqual(["v1", "v1beta1"]);
    expect(g.preferredVersion.version).toBe("v1");
    const list = await call("GET", `/apis/${GROUP}/v1`);
    const names = list.body.resources.map((x: { name: string }) => x.name);
    expect(names).toEqual(expect.arrayContaining(["widgets", "widgets/status", "widgets/scale"]));
    const main = list.body.resources.find((x: { name: string }) => x.name === "widgets");
    expect(main).toMatchObject({ kind: "Widget", namespaced: true, shortNames: ["wd"], categories: ["all", "gadgets"], singularName: "widget" });
    const beta = await call("GET", `/apis/${GROUP}/v1beta1`);
    expect(beta.body.resources.map((x: { name: string }) => x.name)).toEqual(["widgets", "widgets/status"]);
    const agg = await call("GET", "/apis", undefined, { headers: { accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" } });
    const item = agg.body.items.find((x: { metadata: { name: string } }) => x.metadata.name === GROUP);
    const res = item.versions[0].resources.find((x: { resource: string }) => x.resource === "widgets");
    expect(res).toMatchObject({ scope: "Namespaced", shortNames: ["wd"], categories: ["all", "gadgets"] });
    expect(res.subresources.map((s: { subresource: string }) => s.subresource)).toEqual(["status", "scale"]);
  });

  it("creates with defaults (nested too), and serves the object in every served version, stored at the storage version", async () => {
    const r = await call("POST", WIDGETS("crd-a"), widget("w1", { image: "nginx:1", template: { port: "http" } }));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.spec).toMatchObject({ image: "nginx:1", replicas: 1, template: { port: "http", mode: "fast" } });
    expect(r.body.metadata.generation).toBe(1);
    const beta = await call("GET", `${WIDGETS("crd-a", "v1beta1")}/w1`);
    expect(beta.status).toBe(200);
    expect(beta.body.apiVersion).toBe(`${GROUP}/v1beta1`);
    const viaBeta = await call("POST", WIDGETS("crd-a", "v1beta1"), widget("w2", { image: "nginx:2" }, "v1beta1"));
    expect(viaBeta.status, JSON.stringify(viaBeta.body)).toBe(201);
    expect(viaBeta.body.apiVersion).toBe(`${GROUP}/v1beta1`);
    const row = await env.DB.prepare(`SELECT body FROM objects WHERE resource = '${GROUP}/widgets' AND namespace = 'crd-a' AND name = 'w2'`).first<{
      body: string;
    }>();
    expect(JSON.parse(row!.body).apiVersion).toBe(`${GROUP}/v1`);
    const all = await call("GET", `/apis/${GROUP}/v1/widgets`);
    expect(all.body.kind).toBe("WidgetList");
    expect(all.body.items.map((o: { metadata: { name: string } }) => o.metadata.name)).toEqual(["w1", "w2"]);
  });

  it("refuses unknown fields under Strict, drops them under Ignore and warns of them under Warn (pruning); keeps preserved ones", async () => {
    const strict = await call("POST", WIDGETS("crd-a"), widget("p1", { image: "a", bogus: 1, extra: { anything: { goes: true } } }));
    expect(strict.status).toBe(400);
    expect(strict.body.message).toBe('strict decoding error: unknown field "spec.bogus"');
    const ignored = await call("POST", `${WIDGETS("crd-a")}?fieldValidation=Ignore`, { ...widget("p1", { image: "a", bogus: 1, extra: { any: 1 } }), top: 1 });
    expect(ignored.status).toBe(201);
    expect(ignored.body.spec.bogus).toBeUndefined();
    expect(ignored.body.top).toBeUndefined();
    expect(ignored.body.spec.extra).toEqual({ any: 1 });
    const warned = await call("POST", `${WIDGETS("crd-a")}?fieldValidation=Warn`, widget("p2", { image: "a", labels: { x: "y" }, template: { nope: 1 } }));
    expect(warned.status).toBe(201);
    expect(warned.headers.get("warning")).toContain('unknown field \\"spec.template.nope\\"');
    expect(warned.body.spec.labels).toEqual({ x: "y" });
  });

  it("validates against the schema as kube-openapi words it (422, nothing stored)", async () => {
    const bad = await call(
      "POST",
      WIDGETS("crd-a"),
      widget("bad", { image: "UPPER", replicas: "three", color: "green", size: "toolong", tags: ["a", "b", "c"] }),
    );
    expect(bad.status).toBe(422);
    expect(bad.body.message).toMatch(/^Widget\.stable\.example\.com "bad" is invalid: /);
    expect(causes(bad.body)).toEqual(
      expect.arrayContaining([
        "spec.image: Invalid value: \"UPPER\": spec.image in body should match '^[a-z0-9./:-]+$'",
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        'spec.color: Unsupported value: "green": supported values: "red", "blue"',
        "spec.size: Too long: may not be more than 5 bytes",
        "spec.tags: Too many: 3: must have at most 2 items",
      ]),
    );
    const missing = await call("POST", WIDGETS("crd-a"), widget("bad", {}));
    expect(causes(missing.body)).toContain("spec.image: Required value");
    const negative = await call("POST", WIDGETS("crd-a"), widget("bad", { image: "a", replicas: -1 }));
    expect(causes(negative.body)).toContain("spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0");
    expect((await call("GET", `${WIDGETS("crd-a")}/bad`)).status).toBe(404);
  });

  it("runs x-kubernetes-validations rules: message, messageExpression with reason, transition rules with oldSelf", async () => {
    const rule = await call("POST", WIDGETS("crd-a"), widget("cel", { image: "a", replicas: 1, minReplicas: 3 }));
    expect(rule.status).toBe(422);
    expect(causes(rule.body)).toEqual(['spec: Invalid value: "object": minReplicas must not exceed replicas']);
    const expr = await call("POST", WIDGETS("crd-a"), widget("cel", { image: "forbidden" }));
    expect(causes(expr.body)).toEqual(["spec: Forbidden: image forbidden is not allowed"]);
    const made = await call("POST", WIDGETS("crd-a"), widget("cel", { image: "a", immutable: "one" }));
    expect(made.status).toBe(201);
    const changed = await call("PATCH", `${WIDGETS("crd-a")}/cel`, { spec: { immutable: "two" } }, merge);
    expect(changed.status).toBe(422);
    expect(causes(changed.body)).toEqual(['spec.immutable: Invalid value: "string": immutable is immutable']);
    const same = await call("PATCH", `${WIDGETS("crd-a")}/cel`, { spec: { immutable: "one", replicas: 2 } }, merge);
    expect(same.status).toBe(200);
    expect(same.body.metadata.generation).toBe(2);
  });

  it("merges server-side applies by the CRD's list types (x-kubernetes-list-type: map)", async () => {
    const apply = (manager: string, ports: unknown[]) =>
      call("PATCH", `${WIDGETS("crd-b")}/ssa?fieldManager=${manager}`, JSON.stringify(widget("ssa", { image: "a", ports })), {
        contentType: "application/apply-patch+yaml",
      });
    expect((await apply("one", [{ name: "http", port: 80 }])).status).toBe(201);
    const both = await apply("two", [{ name: "https", port: 443 }]);
    expect(both.status, JSON.stringify(both.body)).toBe(200);
    expect(both.body.spec.ports).toEqual([
      { name: "http", port: 80 },
      { name: "https", port: 443 },
    ]);
  });

  it("prints the additional printer columns in kubectl's Table", async () => {
    const t = await call("GET", WIDGETS("crd-a"), undefined, TABLE);
    expect(t.status).toBe(200);
    expect(t.body.columnDefinitions.map((c: { name: string; priority: number }) => [c.name, c.priority])).toEqual([
      ["Name", 0],
      ["Replicas", 0],
      ["Image", 1],
      ["Age", 0],
    ]);
    const w1 = t.body.rows.find((r: { cells: unknown[] }) => r.cells[0] === "w1");
    expect(w1.cells.slice(0, 3)).toEqual(["w1", 1, "nginx:1"]);
  });

  it("has a status subresource: the main resource ignores status, /status changes only status", async () => {
    const cur = await call("GET", `${WIDGETS("crd-a")}/w1`);
    const put = await call("PUT", `${WIDGETS("crd-a")}/w1`, { ...cur.body, status: { phase: "Ready" } });
    expect(put.status).toBe(200);
    expect(put.body.status).toBeUndefined();
    const st = await call("PUT", `${WIDGETS("crd-a")}/w1/status`, {
      ...put.body,
      spec: { image: "changed" },
      status: { phase: "Ready", replicas: 1, selector: "app=w1" },
    });
    expect(st.status, JSON.stringify(st.body)).toBe(200);
    expect(st.body.status).toEqual({ phase: "Ready", replicas: 1, selector: "app=w1" });
    expect(st.body.spec.image).toBe("nginx:1");
    const badStatus = await call("PATCH", `${WIDGETS("crd-a")}/w1/status`, { status: { replicas: "x" } }, merge);
    expect(badStatus.status).toBe(422);
  });

  it("has a scale subresource: GET, PATCH and PUT of an autoscaling/v1 Scale", async () => {
    const s = await call("GET", `${WIDGETS("crd-a")}/w1/scale`);
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      metadata: { name: "w1", namespace: "crd-a" },
      spec: { replicas: 1 },
      status: { replicas: 1, selector: "app=w1" },
    });
    const p = await call("PATCH", `${WIDGETS("crd-a")}/w1/scale`, { spec: { replicas: 4 } }, merge);
    expect(p.status).toBe(200);
    expect(p.body.spec.replicas).toBe(4);
    expect((await call("GET", `${WIDGETS("crd-a")}/w1`)).body.spec.replicas).toBe(4);
    const neg = await call("PUT", `${WIDGETS("crd-a")}/w1/scale`, { ...p.body, spec: { replicas: -1 } });
    expect(neg.status).toBe(422);
    const stale = await call("PUT", `${WIDGETS("crd-a")}/w1/scale`, { ...s.body, spec: { replicas: 2 } });
    expect(stale.status).toBe(409);
  });

  it("publishes the CRD's schema in OpenAPI v3 (kubectl explain)", async () => {
    const disc = await call("GET", "/openapi/v3");
    const url = disc.body.paths[`apis/${GROUP}/v1`].serverRelativeURL;
    const doc = await call("GET", url);
    expect(doc.status).toBe(200);
    const s = doc.body.components.schemas["com.example.stable.v1.Widget"];
    expect(s["x-kubernetes-group-version-kind"]).toEqual([{ group: GROUP, version: "v1", kind: "Widget" }]);
    expect(s.properties.spec.properties.replicas).toMatchObject({ type: "integer", minimum: 0 });
    expect(s.properties.metadata.$ref ?? s.properties.metadata.allOf?.[0]?.$ref).toContain("ObjectMeta");
    expect(Object.keys(doc.body.paths)).toContain(`/apis/${GROUP}/v1/namespaces/{namespace}/widgets/{name}`);
  });

  it("applies RBAC to custom resources as to any kind", async () => {
    const as = { headers: { "impersonate-user": "crd-alice" } };
    expect((await call("GET", WIDGETS("crd-a"), undefined, as)).status).toBe(403);
    const role = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "widgets" },
      rules: [{ apiGroups: [GROUP], resources: ["widgets"], verbs: ["get", "list"] }],
    };
    expect((await call("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/crd-a/roles", role)).status).toBe(201);
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "widgets" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "widgets" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "crd-alice" }],
    };
    expect((await call("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/crd-a/rolebindings", binding)).status).toBe(201);
    expect((await call("GET", WIDGETS("crd-a"), undefined, as)).status).toBe(200);
    expect((await call("GET", WIDGETS("crd-b"), undefined, as)).status).toBe(403);
    expect((await call("POST", WIDGETS("crd-a"), widget("x", { image: "a" }), as)).status).toBe(403);
  });

  it("deletes a namespace's custom resources with the namespace", async () => {
    expect((await call("POST", WIDGETS("crd-gone"), widget("doomed", { image: "a" }))).status).toBe(201);
    expect((await call("DELETE", "/api/v1/namespaces/crd-gone")).status).toBe(200);
    expect((await call("GET", `${WIDGETS("crd-gone")}/doomed`)).status).toBe(404);
  });
});

describe("CustomResourceDefinition: validation of the CRD itself", () => {
  const make = (name: string, spec: Record<string, unknown>) => {
    const base = widgetCrd();
    return { ...base, metadata: { name }, spec: { ...base.spec, ...spec } };
  };
  const version = (schema: unknown, extra: Record<string, unknown> = {}) => ({
    name: "v1",
    served: true,
    storage: true,
    schema: { openAPIV3Schema: schema },
    ...extra,
  });

  it("refuses non-structural schemas with apiextensions' messages, and stores nothing", async () => {
    const r = await call(
      "POST",
      CRDS,
      make(`gizmos.${GROUP}`, {
        names: { plural: "gizmos", kind: "Gizmo" },
        versions: [
          version({
            type: "object",
            properties: {
              spec: { properties: { a: { type: "string" } } },
              list: { type: "array", items: { properties: {} } },
              both: { type: "object", properties: { x: { type: "string" } }, additionalProperties: { type: "string" } },
              keep: { type: "object", "x-kubernetes-preserve-unknown-fields": false },
              uniq: { type: "array", items: { type: "string" }, uniqueItems: true },
              ref: { $ref: "#/definitions/x" },
              any: { type: "object", anyOf: [{ type: "string" }] },
            },
          }),
        ],
      }),
    );
    expect(r.status).toBe(422);
    const root = "spec.versions[0].schema.openAPIV3Schema";
    expect(causes(r.body)).toEqual(
      expect.arrayContaining([
        `${root}.properties[spec].type: Required value: must not be empty for specified object fields`,
        `${root}.properties[list].items.type: Required value: must not be empty for specified array items`,
        `${root}.properties[both].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive`,
        `${root}.properties[keep].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined`,
        `${root}.properties[uniq].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic`,
        `${root}.properties[any].anyOf[0].type: Forbidden: must be empty to be structural`,
      ]),
    );
    expect((await call("GET", `${CRDS}/gizmos.${GROUP}`)).status).toBe(404);
  });

  it("refuses a root that is not an object, metadata beyond name, missing schemas, bad storage versions, a wrong name", async () => {
    const root = await call("POST", CRDS, make(`gizmos.${GROUP}`, { names: { plural: "gizmos", kind: "Gizmo" }, versions: [version({ type: "string" })] }));
    expect(causes(root.body)).toContain('spec.versions[0].schema.openAPIV3Schema.type: Invalid value: "string": must be object at the root');
    const meta = await call(
      "POST",
      CRDS,
      make(`gizmos.${GROUP}`, {
        names: { plural: "gizmos", kind: "Gizmo" },
        versions: [version({ type: "object", properties: { metadata: { type: "object", properties: { labels: { type: "object" } } } } })],
      }),
    );
    expect(causes(meta.body)).toContain(
      "spec.versions[0].schema.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
    );
    const none = await call(
      "POST",
      CRDS,
      make(`gizmos.${GROUP}`, { names: { plural: "gizmos", kind: "Gizmo" }, versions: [{ name: "v1", served: true, storage: true }] }),
    );
    expect(causes(none.body)).toContain("spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required");
    const two = await call(
      "POST",
      CRDS,
      make(`gizmos.${GROUP}`, {
        names: { plural: "gizmos", kind: "Gizmo" },
        versions: [version({ type: "object" }), version({ type: "object" }, { name: "v2" })],
      }),
    );
    expect(causes(two.body).join("\n")).toContain("must have exactly one version marked as storage version");
    const wrong = await call("POST", CRDS, make(`other.${GROUP}`, { names: { plural: "gizmos", kind: "Gizmo" } }));
    expect(causes(wrong.body)).toContain('metadata.name: Invalid value: "other.stable.example.com": must be spec.names.plural+"."+spec.group');
  });

  it("refuses conversion webhooks (422 naming spec.conversion.strategy) and shadowing a kind the hub serves", async () => {
    const hook = await call("POST", CRDS, make(`gizmos.${GROUP}`, { names: { plural: "gizmos", kind: "Gizmo" }, conversion: { strategy: "Webhook" } }));
    expect(hook.status).toBe(422);
    expect(causes(hook.body)).toContain('spec.conversion.strategy: Unsupported value: "Webhook": supported values: "None"');
    const shadow = await call(
      "POST",
      CRDS,
      make("placements.cluster.open-cluster-management.io", {
        group: "cluster.open-cluster-management.io",
        names: { plural: "placements", kind: "Placement" },
      }),
    );
    expect(shadow.status).toBe(422);
    expect(causes(shadow.body).join("\n")).toContain("spec.names.plural");
    expect((await call("GET", "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/default/placements")).status).toBe(200);
  });

  it("refuses a rule that does not compile; its group and scope are immutable", async () => {
    const r = await call(
      "POST",
      CRDS,
      make(`gizmos.${GROUP}`, {
        names: { plural: "gizmos", kind: "Gizmo" },
        versions: [version({ type: "object", "x-kubernetes-validations": [{ rule: "self.x +" }] })],
      }),
    );
    expect(r.status).toBe(422);
    expect(causes(r.body).join("\n")).toContain("spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value:");
    const cur = await call("GET", `${CRDS}/widgets.${GROUP}`);
    const scope = await call("PUT", `${CRDS}/widgets.${GROUP}`, { ...cur.body, spec: { ...cur.body.spec, scope: "Cluster" } });
    expect(scope.status).toBe(422);
    expect(causes(scope.body)).toContain('spec.scope: Invalid value: "Cluster": field is immutable');
  });

  it("does not accept names another CRD of the group holds (NamesAccepted False, not Established, not served)", async () => {
    const r = await call("POST", CRDS, make(`others.${GROUP}`, { names: { plural: "others", singular: "other", kind: "Widget" } }));
    expect(r.status).toBe(201);
    expect(cond(r.body, "NamesAccepted")).toMatchObject({ status: "False", reason: "KindConflict", message: '"Widget" is already in use' });
    expect(cond(r.body, "Established")).toMatchObject({ status: "False", reason: "NotAccepted" });
    expect((await call("GET", `/apis/${GROUP}/v1/namespaces/default/others`)).status).toBe(404);
    expect((await call("DELETE", `${CRDS}/others.${GROUP}`)).status).toBe(200);
  });
});

describe("CustomResourceDefinition: deletion removes its custom resources", () => {
  const G = "del.example.com";
  const crd = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `things.${G}` },
    spec: {
      group: G,
      scope: "Cluster",
      names: { plural: "things", kind: "Thing" },
      versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } } }],
    },
  };

  it("deletes every resource, then the CRD; the resources' path is gone, and a new CRD of the name starts empty", async () => {
    expect((await call("POST", CRDS, crd)).status).toBe(201);
    for (const n of ["a", "b", "c"])
      expect((await call("POST", `/apis/${G}/v1/things`, { apiVersion: `${G}/v1`, kind: "Thing", metadata: { name: n }, data: { n } })).status).toBe(201);
    const del = await call("DELETE", `${CRDS}/things.${G}`);
    expect(del.status).toBe(200);
    expect((await call("GET", `${CRDS}/things.${G}`)).status).toBe(404);
    expect((await call("GET", `/apis/${G}/v1/things`)).status).toBe(404);
    const rows = await env.DB.prepare(`SELECT COUNT(*) AS n FROM objects WHERE resource = '${G}/things'`).first<{ n: number }>();
    expect(rows!.n).toBe(0);
    expect((await call("POST", CRDS, crd)).status).toBe(201);
    expect((await call("GET", `/apis/${G}/v1/things`)).body.items).toEqual([]);
  });

  it("stays Terminating while a resource's finalizer holds it, refusing creates", async () => {
    const held = { apiVersion: `${G}/v1`, kind: "Thing", metadata: { name: "held", finalizers: ["example.com/hold"] } };
    expect((await call("POST", `/apis/${G}/v1/things`, held)).status).toBe(201);
    expect((await call("DELETE", `${CRDS}/things.${G}`)).status).toBe(200);
    const t = await call("GET", `${CRDS}/things.${G}`);
    expect(t.body.metadata.deletionTimestamp).toBeDefined();
    expect(cond(t.body, "Terminating")).toMatchObject({ status: "True" });
    const create = await call("POST", `/apis/${G}/v1/things`, { apiVersion: `${G}/v1`, kind: "Thing", metadata: { name: "late" } });
    expect(create.status).toBe(405);
    expect(create.body.message).toBe("create not allowed while custom resource definition is terminating");
    const obj = await call("GET", `/apis/${G}/v1/things/held`);
    expect(obj.body.metadata.deletionTimestamp).toBeDefined();
  });
});
