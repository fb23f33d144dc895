import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { KINDS } from "../../src/kinds/index.ts";
import { groupVersionPath, schemaName } from "../../src/api/openapi/names.ts";
import { ADMIN, call, MC } from "./helpers.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const groupVersions = [...new Set(KINDS.map((k) => `${k.group}/${k.version}`))];
/** `apis/<group>/<version>`, or `api/<version>` for the core group (`gv` is then `/<version>`). */
const gvPath = (gv: string) => groupVersionPath(gv.slice(0, gv.lastIndexOf("/")), gv.slice(gv.lastIndexOf("/") + 1));
const CLUSTER_V1 = "/openapi/v3/apis/cluster.open-cluster-management.io/v1";
const OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/** A GET by the admin with explicit headers (kubectl's Accept, If-None-Match); redirects are not followed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function rawGet(path: string, headers: Record<string, string>): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await exports.default.fetch(`https://hub.test${path}`, { headers: { authorization: `Bearer ${ADMIN}`, ...headers }, redirect: "manual" });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** Fetches a group-version document without credentials, as kubectl's discovery does. */
async function gvDoc(gv: string): Promise<Json> {
  const r = await call("GET", `/openapi/v3/${gvPath(gv)}`);
  expect(r.status).toBe(200);
  return r.body;
}

/** Walks `props.a.b` through properties and array items. */
function field(schema: Json, path: string): Json {
  let node = schema;
  for (const seg of path.split(".")) {
    if (node.type === "array") node = node.items;
    node = node.properties?.[seg];
    expect(node, `field ${path} (at ${seg})`).toBeDefined();
  }
  return node;
}

describe("OpenAPI v3 discovery", () => {
  it("lists every served group-version, each URL carrying the document's hash", async () => {
    const r = await call("GET", "/openapi/v3");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("application/json");
    expect(Object.keys(r.body.paths).sort()).toEqual(groupVersions.map(gvPath).sort());
    for (const gv of groupVersions) {
      const url: string = r.body.paths[gvPath(gv)].serverRelativeURL;
      expect(url).toMatch(new RegExp(`^/openapi/v3/${gvPath(gv).replace(/\./g, "\\.")}\\?hash=[0-9A-F]{128}$`));
      const doc = await call("GET", url);
      expect(doc.status).toBe(200);
      expect(doc.headers.get("cache-control")).toBe("public, immutable");
      expect(doc.body.openapi).toBe("3.0.0");
    }
  });

  it("redirects a stale hash to the current one and answers unknown group-versions with a 404 Status", async () => {
    const disc = await call("GET", "/openapi/v3");
    const current: string = disc.body.paths["apis/cluster.open-cluster-management.io/v1"].serverRelativeURL;
    const stale = await rawGet(`${CLUSTER_V1}?hash=0123`, {});
    expect(stale.status).toBe(301);
    expect(stale.headers.get("location")).toBe(current);
    const unhashed = await call("GET", CLUSTER_V1);
    expect(unhashed.headers.get("cache-control")).toBe("no-cache, private");
    const etag = unhashed.headers.get("etag")!;
    const res304 = await rawGet(CLUSTER_V1, { "if-none-match": etag });
    expect(res304.status).toBe(304);
    const missing = await call("GET", "/openapi/v3/apis/cluster.open-cluster-management.io/v9");
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ kind: "Status", reason: "NotFound", code: 404 });
  });

  it("refuses an Accept it serves nothing of with 406 (JSON and gnostic protobuf are served)", async () => {
    const r = await rawGet("/openapi/v2", { accept: "application/vnd.kubernetes.protobuf" });
    expect(r.status).toBe(406);
    expect(r.body).toMatchObject({ kind: "Status", reason: "NotAcceptable" });
  });
});

describe("OpenAPI v3 group-version documents", () => {
  it("carry a schema for every kind and list kind with x-kubernetes-group-version-kind, metadata as ObjectMeta", async () => {
    for (const def of KINDS) {
      const doc = await gvDoc(`${def.group}/${def.version}`);
      const schemas = doc.components.schemas;
      const s = schemas[schemaName(def.group, def.version, def.kind)];
      expect(s, def.kind).toBeDefined();
      expect(s["x-kubernetes-group-version-kind"]).toEqual([{ group: def.group, version: def.version, kind: def.kind }]);
      expect(typeof s.description).toBe("string");
      expect(s.properties.metadata.allOf).toEqual([{ $ref: `#/components/schemas/${OBJECT_META}` }]);
      expect(schemas[OBJECT_META].properties.labels.additionalProperties).toEqual({ type: "string" });
      const list = schemas[schemaName(def.group, def.version, def.listKind)];
      // The review kinds are answered, not stored: no list kind.
      if (def.createOnly) expect(list).toBeUndefined();
      else {
        expect(list["x-kubernetes-group-version-kind"]).toEqual([{ group: def.group, version: def.version, kind: def.listKind }]);
        expect(list.properties.items.items).toEqual({ $ref: `#/components/schemas/${schemaName(def.group, def.version, def.kind)}` });
      }
      // Every $ref resolves within the document.
      for (const ref of JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
        expect(schemas[ref[1]!], ref[1]).toBeDefined();
      }
    }
  });

  it("uses Kubernetes-style names", async () => {
    const doc = await gvDoc("cluster.open-cluster-management.io/v1");
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining([
        "io.open-cluster-management.cluster.v1.ManagedCluster",
        "io.open-cluster-management.cluster.v1.ManagedClusterList",
        OBJECT_META,
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
      ]),
    );
    const flotilla = await gvDoc("flotilla.dev/v1alpha1");
    expect(flotilla.components.schemas["dev.flotilla.v1alpha1.BootstrapToken"]).toBeDefined();
  });

  it("describes every field of Flotilla's own kinds; a free-form field (a webhook's patch) is marked as kube marks one, never an empty schema", async () => {
    const doc = await gvDoc("flotilla.dev/v1alpha1");
    const undescribed: string[] = [];
    const empty: string[] = [];
    const walk = (node: Json, at: string) => {
      for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, Json>)) {
        const p = `${at}.${name}`;
        if (!child.description) undescribed.push(p);
        if (Object.keys(child).filter((k) => k !== "description").length === 0) empty.push(p);
        walk(child.type === "array" ? child.items : child, p);
      }
    };
    for (const kind of ["WebhookReceiver", "BootstrapToken"]) {
      const schema = doc.components.schemas[`dev.flotilla.v1alpha1.${kind}`];
      for (const part of ["spec", "status"]) walk({ properties: { [part]: schema.properties[part] } }, kind);
    }
    expect(undescribed).toEqual([]);
    expect(empty).toEqual([]);
    const patch = field(doc.components.schemas["dev.flotilla.v1alpha1.WebhookReceiver"], "spec.action.patch");
    expect(patch["x-kubernetes-preserve-unknown-fields"]).toBe(true);
    expect(patch.description).toMatch(/merge patch|JSON object/i);
    expect(field(doc.components.schemas["dev.flotilla.v1alpha1.BootstrapToken"], "spec.token").description).toMatch(/write-only/i);
  });

  it("publishes the validation rules of the zod schemas: taint effect enum and required fields, placement weight bounds", async () => {
    const mc = (await gvDoc("cluster.open-cluster-management.io/v1")).components.schemas["io.open-cluster-management.cluster.v1.ManagedCluster"];
    const taints = field(mc, "spec.taints");
    expect(taints.type).toBe("array");
    expect(taints.items.required).toEqual(["key", "effect"]);
    expect(taints.items.additionalProperties).toBe(false);
    expect(field(mc, "spec.taints.effect")).toMatchObject({ type: "string", enum: ["NoSelect", "PreferNoSelect", "NoSelectIfNew"] });
    expect(field(mc, "spec.taints.key")).toMatchObject({ type: "string", minLength: 1, maxLength: 316 });
    expect(field(mc, "spec.taints.effect").description).toMatch(/NoSelectIfNew/);
    expect(field(mc, "spec.leaseDurationSeconds")).toMatchObject({ type: "integer", format: "int32", minimum: 0, maximum: 2147483647 });

    const pl = (await gvDoc("cluster.open-cluster-management.io/v1beta1")).components.schemas["io.open-cluster-management.cluster.v1beta1.Placement"];
    const weight = field(pl, "spec.prioritizerPolicy.configurations.weight");
    expect(weight).toMatchObject({ type: "integer", format: "int32", minimum: -10, maximum: 10 });
    expect(weight.description).toMatch(/-10 to 10/);
    expect(field(pl, "spec.spreadPolicy.spreadConstraints").maxItems).toBe(8);
    const perGroup = field(pl, "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup");
    expect(perGroup["x-kubernetes-int-or-string"]).toBe(true);
    expect(field(pl, "spec.numberOfClusters").nullable).toBe(true);
  });

  it("documents exactly what the API enforces: a value outside the published enum is refused with 422", async () => {
    const mc = (await gvDoc("cluster.open-cluster-management.io/v1")).components.schemas["io.open-cluster-management.cluster.v1.ManagedCluster"];
    expect(field(mc, "spec.taints.effect").enum).not.toContain("NoExecute");
    const r = await call("POST", MC, {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "openapi-enum" },
      spec: { taints: [{ key: "example.com/gpu", effect: "NoExecute" }] },
    });
    expect(r.status).toBe(422);
    expect(r.body.details.causes.map((c: { field: string }) => c.field)).toContain("spec.taints[0].effect");
  });

  it("describes the endpoints the way kubectl reads them: fieldValidation on PATCH, only the patch types the hub accepts", async () => {
    for (const def of KINDS) {
      const doc = await gvDoc(`${def.group}/${def.version}`);
      const ns = def.namespaced ? "/namespaces/{namespace}" : "";
      const item = doc.paths[`/${groupVersionPath(def.group, def.version)}${ns}/${def.plural}/{name}`];
      const collection = doc.paths[`/${groupVersionPath(def.group, def.version)}${ns}/${def.plural}`];
      const gvk = { group: def.group, version: def.version, kind: def.kind };
      if (def.createOnly) {
        // Create only (kube-apiserver's review kinds): a POST on the collection and nothing else.
        expect(item).toBeUndefined();
        expect(Object.keys(collection)).toEqual(["post"]);
        expect(collection.post["x-kubernetes-group-version-kind"]).toEqual(gvk);
        continue;
      }
      if (def.viewOf) {
        // A view: list and watch on the collection only.
        expect(item).toBeUndefined();
        expect(Object.keys(collection)).toEqual(["get"]);
        expect(collection.get["x-kubernetes-action"]).toBe("list");
        continue;
      }
      expect(item.get["x-kubernetes-group-version-kind"]).toEqual(gvk);
      expect(item.get["x-kubernetes-action"]).toBe("get");
      expect(collection.get["x-kubernetes-action"]).toBe("list");
      expect(collection.get.responses["200"].content["application/json"].schema.$ref).toBe(
        `#/components/schemas/${schemaName(def.group, def.version, def.listKind)}`,
      );
      if (def.systemOwned) {
        expect(item.patch).toBeUndefined();
        expect(collection.post).toBeUndefined();
        continue;
      }
      expect(item.patch["x-kubernetes-group-version-kind"]).toEqual(gvk);
      // Not on the Namespace's, so that kubectl never asks for CRDs (src/api/openapi.ts).
      const fieldValidation = expect.objectContaining({ name: "fieldValidation", in: "query" });
      expect(item.patch.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: "fieldManager", in: "query" })]));
      if (def.kind === "Namespace") expect(item.patch.parameters).not.toContainEqual(fieldValidation);
      else expect(item.patch.parameters).toContainEqual(fieldValidation);
      expect(Object.keys(item.patch.requestBody.content).sort()).toEqual([
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
      ]);
      expect(collection.post.requestBody.content["application/json"].schema.$ref).toBe(`#/components/schemas/${schemaName(def.group, def.version, def.kind)}`);
      if (def.hasStatus)
        expect(doc.paths[`/${groupVersionPath(def.group, def.version)}${ns}/${def.plural}/{name}/status`].patch["x-kubernetes-group-version-kind"]).toEqual(
          gvk,
        );
      if (def.namespaced) expect(doc.paths[`/${groupVersionPath(def.group, def.version)}/${def.plural}`].get["x-kubernetes-action"]).toBe("list");
    }
  });
});

describe("OpenAPI v2", () => {
  it("is one Swagger 2.0 document with every kind in definitions and no OpenAPI 3-only keywords", async () => {
    const r = await call("GET", "/openapi/v2");
    expect(r.status).toBe(200);
    expect(r.body.swagger).toBe("2.0");
    for (const def of KINDS) {
      const s = r.body.definitions[schemaName(def.group, def.version, def.kind)];
      expect(s["x-kubernetes-group-version-kind"]).toEqual([{ group: def.group, version: def.version, kind: def.kind }]);
    }
    const text = JSON.stringify(r.body);
    expect(text).not.toContain("#/components/");
    expect(text).not.toMatch(/"(anyOf|oneOf|nullable|requestBody)":/);
    const pl = r.body.definitions["io.open-cluster-management.cluster.v1beta1.Placement"];
    expect(pl.properties.spec.properties.decisionStrategy.properties.groupStrategy.properties.clustersPerDecisionGroup).toMatchObject({
      type: "string",
      format: "int-or-string",
    });
    const patch = r.body.paths["/apis/cluster.open-cluster-management.io/v1/managedclusters/{name}"].patch;
    expect(patch.consumes).toEqual(["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]);
    expect(patch.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: "body", in: "body" }),
        expect.objectContaining({ name: "fieldValidation", in: "query", type: "string" }),
      ]),
    );
  });
});

describe("/docs", () => {
  it("is an HTML page showing every kind, its fields and endpoints", async () => {
    const r = await call("GET", "/docs");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const html: string = r.body;
    expect(html).toMatch(/^<!doctype html>/);
    for (const def of KINDS) {
      expect(html).toContain(`id="t-${schemaName(def.group, def.version, def.kind)}"`);
      expect(html).toContain(`/${groupVersionPath(def.group, def.version)}`);
    }
    expect(html).toContain("NoSelectIfNew");
    expect(html).toContain("minimum -10 · maximum 10");
    expect(html).toContain(`data-path="spec.taints.effect"`);
  });

  it("loads nothing from another origin: no absolute asset URLs, and a CSP that forbids them", async () => {
    const r = await call("GET", "/docs");
    const html: string = r.body;
    const urls = [...html.matchAll(/\b(?:src|href|action)\s*=\s*["']?([^"'\s>]+)/gi)].map((m) => m[1]!);
    expect(urls.length).toBeGreaterThan(10);
    for (const u of urls) expect(u, u).toMatch(/^(#|\/(?!\/))/);
    // Kubernetes' own field descriptions (the built-in kinds') cite URLs as text ("More info: https://..."): no link, nothing loaded.
    expect(html.replace(/<div class="fdesc">[\s\S]*?<\/div>/g, "")).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script[^>]+src=/i);
    expect(html).not.toMatch(/<link[^>]+stylesheet/i);
    expect(html).not.toMatch(/@import|url\(/i);
    expect(r.headers.get("content-security-policy")).toContain("default-src 'none'");
  });
});

describe("/openapi/v2 as gnostic protobuf (what kubectl downloads)", () => {
  /** A minimal protobuf reader: the fields of one message as [field number, value] (bytes for length-delimited). */
  function fields(buf: Uint8Array): [number, number | Uint8Array][] {
    const out: [number, number | Uint8Array][] = [];
    let i = 0;
    const varint = () => {
      let v = 0;
      let shift = 1;
      for (;;) {
        const b = buf[i++]!;
        v += (b & 0x7f) * shift;
        shift *= 128;
        if (b < 0x80) return v;
      }
    };
    while (i < buf.length) {
      const tag = varint();
      const wire = tag & 7;
      if (wire === 0) out.push([tag >> 3, varint()]);
      else if (wire === 1) {
        out.push([tag >> 3, new DataView(buf.buffer, buf.byteOffset + i, 8).getFloat64(0, true)]);
        i += 8;
      } else if (wire === 2) {
        const n = varint();
        out.push([tag >> 3, buf.subarray(i, i + n)]);
        i += n;
      } else throw new Error(`wire type ${wire}`);
    }
    return out;
  }
  const text = (v: number | Uint8Array | undefined) => new TextDecoder().decode(v as Uint8Array);
  const field = (m: [number, number | Uint8Array][], n: number) => m.filter(([f]) => f === n).map(([, v]) => v as Uint8Array);

  it("encodes the same document as the JSON: version, paths with operations and their GVK, definitions", async () => {
    const res = await exports.default.fetch("https://hub.test/openapi/v2", {
      headers: { authorization: `Bearer ${ADMIN}`, accept: "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    const doc = fields(new Uint8Array(await res.arrayBuffer()));
    const json = await (
      await exports.default.fetch("https://hub.test/openapi/v2", { headers: { authorization: `Bearer ${ADMIN}`, accept: "application/json" } })
    ).json<{ paths: Record<string, unknown>; definitions: Record<string, unknown> }>();
    expect(text(field(doc, 1)[0])).toBe("2.0");
    const paths = field(doc, 8)
      .flatMap((p) => field(fields(p), 2))
      .map((np) => fields(np));
    expect(paths.map((np) => text(field(np, 1)[0])).sort()).toEqual(Object.keys(json.paths).sort());
    const mcl = paths.find((np) => text(field(np, 1)[0]) === "/apis/cluster.open-cluster-management.io/v1/managedclusters/{name}")!;
    const item = fields(field(mcl, 2)[0]!);
    const patch = fields(field(item, 8)[0]!);
    const extensions = field(patch, 13).map((na) => fields(na));
    const gvk = extensions.find((na) => text(field(na, 1)[0]) === "x-kubernetes-group-version-kind")!;
    const yaml = text(field(fields(field(gvk, 2)[0]!), 2)[0]);
    // An operation's GVK is one object, as YAML text (gnostic's Any).
    expect(yaml).toMatch(/^group: cluster.open-cluster-management.io$/m);
    expect(yaml).toMatch(/^kind: ManagedCluster$/m);
    expect(yaml).toMatch(/^version: v1$/m);
    const defs = field(doc, 9)
      .flatMap((d) => field(fields(d), 1))
      .map((nd) => text(field(fields(nd), 1)[0]));
    expect(defs.sort()).toEqual(Object.keys(json.definitions).sort());
  });

  it("still answers JSON, and 406 for what it does not serve", async () => {
    expect(
      (await exports.default.fetch("https://hub.test/openapi/v2", { headers: { authorization: `Bearer ${ADMIN}`, accept: "application/json" } })).headers.get(
        "content-type",
      ),
    ).toMatch(/^application\/json/);
    expect(
      (
        await exports.default.fetch("https://hub.test/openapi/v2", {
          headers: { authorization: `Bearer ${ADMIN}`, accept: "application/vnd.kubernetes.protobuf" },
        })
      ).status,
    ).toBe(406);
  });
});
