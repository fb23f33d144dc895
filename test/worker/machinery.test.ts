/**
 * API machinery as kube-apiserver answers it, for what standard clients send: boolean query
 * parameters, discovery paths with a trailing slash, selector syntax apimachinery accepts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { exports } from "cloudflare:workers";
import { call, createNamespaces, MC } from "./helpers.ts";

beforeAll(() => createNamespaces("jp", "yml", "dc", "dcf", "meta"));

const get = (path: string) => exports.default.fetch(`https://hub.test${path}`, { headers: { authorization: "Bearer test-admin-token" } });

/** The first line of a streaming response (a watch's first event), then the stream is cancelled. */
async function firstLine(res: Response): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  while (!buf.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return buf.slice(0, buf.indexOf("\n"));
}

describe("boolean query parameters (apimachinery Convert_Slice_string_To_bool)", () => {
  it.each(["True", "true", "TRUE", "1", "t", "yes", ""])("watch=%s watches", async (value) => {
    await call("POST", MC, {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "flag-c", labels: { flag: "x" } },
    });
    const res = await get(`${MC}?labelSelector=flag%3Dx&watch=${value}`);
    expect(res.status).toBe(200);
    const event = JSON.parse(await firstLine(res));
    expect(event).toMatchObject({ type: "ADDED", object: { metadata: { name: "flag-c" } } });
  });

  it.each(["false", "False", "FALSE", "0"])("watch=%s lists", async (value) => {
    const res = await call("GET", `${MC}?watch=${value}`);
    expect(res.status).toBe(200);
    expect(res.body.kind).toBe("ManagedClusterList");
  });
});

describe("discovery paths answer with or without a trailing slash", () => {
  it.each([
    ["/version", "gitVersion"],
    ["/api", "versions"],
    ["/apis", "groups"],
    ["/apis/cluster.open-cluster-management.io/v1", "resources"],
  ])("%s/", async (path, field) => {
    const plain = await call("GET", path);
    const slashed = await call("GET", `${path}/`);
    expect(plain.status).toBe(200);
    expect(slashed.status).toBe(200);
    expect(slashed.body[field]).toEqual(plain.body[field]);
  });
});

describe("label selector syntax apimachinery accepts", () => {
  it.each(["x in (a,,)", "x in (a,,,)", "x notin (abc,,def),bar,z in (),w"])("%s", async (selector) => {
    await call("POST", MC, {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "sel-a", labels: { x: "a", bar: "1", w: "1" } },
    });
    const res = await call("GET", `${MC}?labelSelector=${encodeURIComponent(selector)}`);
    expect(res.status).toBe(200);
    const names = res.body.items.map((o: { metadata: { name: string } }) => o.metadata.name);
    // "x in (a,,)" selects x=a; the notin selector needs bar, w and z (which sel-a lacks).
    expect(names.includes("sel-a")).toBe(!selector.startsWith("x notin"));
  });
});

describe("JSON patch (RFC 6902, application/json-patch+json)", () => {
  const PL = "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/jp/placements";
  const json = { contentType: "application/json-patch+json" };
  const create = async (name: string) => {
    const res = await call("POST", PL, {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name, labels: { a: "1" } },
      spec: { numberOfClusters: 1 },
    });
    expect(res.status).toBe(201);
    return res.body;
  };

  it("applies add, replace, remove and a test that holds, all at once", async () => {
    const before = await create("jp1");
    const res = await call(
      "PATCH",
      `${PL}/jp1`,
      [
        { op: "test", path: "/spec/numberOfClusters", value: 1 },
        { op: "replace", path: "/spec/numberOfClusters", value: 3 },
        { op: "add", path: "/metadata/labels/b", value: "2" },
        { op: "remove", path: "/metadata/labels/a" },
      ],
      json,
    );
    expect(res.status).toBe(200);
    expect(res.body.spec.numberOfClusters).toBe(3);
    expect(res.body.metadata.labels).toEqual({ b: "2" });
    expect(res.body.metadata.generation).toBe(before.metadata.generation + 1);
    expect(res.body.metadata.uid).toBe(before.metadata.uid);
  });

  it("refuses the whole patch when a test fails or a path does not resolve (422), changing nothing", async () => {
    const before = await create("jp2");
    for (const ops of [
      [
        { op: "replace", path: "/spec/numberOfClusters", value: 5 },
        { op: "test", path: "/spec/numberOfClusters", value: 2 },
      ],
      [
        { op: "replace", path: "/spec/numberOfClusters", value: 5 },
        { op: "remove", path: "/spec/nothing" },
      ],
      [{ op: "frobnicate", path: "/spec" }],
    ]) {
      const res = await call("PATCH", `${PL}/jp2`, ops, json);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ kind: "Status", code: 422, reason: "Invalid" });
    }
    const after = await call("GET", `${PL}/jp2`);
    expect(after.body.spec.numberOfClusters).toBe(1);
    expect(after.body.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it("answers 400 for a patch that is not an array, 409 for a stale resourceVersion it sets", async () => {
    const before = await create("jp3");
    expect((await call("PATCH", `${PL}/jp3`, { op: "add" }, json)).status).toBe(400);
    await call("PATCH", `${PL}/jp3`, [{ op: "add", path: "/metadata/labels/c", value: "3" }], json);
    const stale = await call(
      "PATCH",
      `${PL}/jp3`,
      [
        { op: "replace", path: "/metadata/resourceVersion", value: before.metadata.resourceVersion },
        { op: "replace", path: "/spec/numberOfClusters", value: 2 },
      ],
      json,
    );
    expect(stale.status).toBe(409);
    expect(stale.body.reason).toBe("Conflict");
  });

  it("patches a ManagedCluster through its Durable Object too, and leaves the status alone on the main resource", async () => {
    await call("POST", MC, { apiVersion: "cluster.open-cluster-management.io/v1", kind: "ManagedCluster", metadata: { name: "jp-mc" } });
    const res = await call(
      "PATCH",
      `${MC}/jp-mc`,
      [
        { op: "add", path: "/metadata/labels", value: { env: "prod" } },
        { op: "add", path: "/status", value: { version: { kubernetes: "v9" } } },
      ],
      json,
    );
    expect(res.status).toBe(200);
    expect(res.body.metadata.labels).toMatchObject({ env: "prod" });
    expect(res.body.status?.version?.kubernetes).toBeUndefined();
  });
});

describe("YAML request and response bodies", () => {
  const PL = "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/yml/placements";
  const yamlCall = (method: string, path: string, body?: string, accept = "application/yaml") =>
    exports.default.fetch(`https://hub.test${path}`, {
      method,
      body,
      headers: { authorization: "Bearer test-admin-token", accept, ...(body ? { "content-type": "application/yaml" } : {}) },
    });

  it("creates from a YAML body and answers in YAML when Accept asks for it", async () => {
    const created = await yamlCall(
      "POST",
      PL,
      "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata:\n  name: y1\nspec:\n  numberOfClusters: 2\n",
    );
    expect(created.status).toBe(201);
    expect(created.headers.get("content-type")).toBe("application/yaml");
    const text = await created.text();
    expect(text).toMatch(/^apiVersion: cluster.open-cluster-management.io\/v1beta1$/m);
    expect(text).toMatch(/^ {2}numberOfClusters: 2$/m);
    const list = await yamlCall("GET", PL);
    expect(await list.text()).toMatch(/^kind: PlacementList$/m);
    // JSON first in Accept keeps JSON; a higher q for YAML picks YAML.
    expect((await yamlCall("GET", `${PL}/y1`, undefined, "application/json, application/yaml")).headers.get("content-type")).toMatch(/^application\/json/);
    expect((await yamlCall("GET", `${PL}/y1`, undefined, "application/json;q=0.5, application/yaml")).headers.get("content-type")).toBe("application/yaml");
  });

  it("streams a watch as JSON lines when Accept lists YAML first", async () => {
    const res = await yamlCall("GET", `${PL}?watch=true`, undefined, "application/yaml, application/json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    expect(JSON.parse(first.split("\n")[0]!)).toMatchObject({ type: "ADDED", object: { kind: "Placement", metadata: { name: "y1" } } });
  });

  it("replaces from a YAML body; an error comes back as a YAML Status", async () => {
    const current = await call("GET", `${PL}/y1`);
    const updated = await yamlCall(
      "PUT",
      `${PL}/y1`,
      `apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata:\n  name: y1\n  resourceVersion: "${current.body.metadata.resourceVersion}"\nspec:\n  numberOfClusters: 4\n`,
      "application/json",
    );
    expect(updated.status).toBe(200);
    expect((await updated.json<{ spec: { numberOfClusters: number } }>()).spec.numberOfClusters).toBe(4);
    const missing = await yamlCall("GET", `${PL}/absent`);
    expect(missing.status).toBe(404);
    expect(await missing.text()).toMatch(/^reason: NotFound$/m);
    const bad = await yamlCall("POST", PL, "metadata: [1, 2\n");
    expect(bad.status).toBe(400);
  });
});

describe("deletecollection", () => {
  const PL = (ns: string) => `/apis/cluster.open-cluster-management.io/v1beta1/namespaces/${ns}/placements`;
  const placement = (name: string, labels: Record<string, string>) => ({
    apiVersion: "cluster.open-cluster-management.io/v1beta1",
    kind: "Placement",
    metadata: { name, labels },
  });
  const names = (items: { metadata: { name: string } }[]) => items.map((o) => o.metadata.name).sort();

  it("deletes what the label selector selects and answers their list", async () => {
    for (const [n, tier] of [
      ["d1", "web"],
      ["d2", "web"],
      ["d3", "db"],
    ] as const)
      expect((await call("POST", PL("dc"), placement(n, { tier }))).status).toBe(201);
    const res = await call("DELETE", `${PL("dc")}?labelSelector=tier%3Dweb`);
    expect(res.status).toBe(200);
    expect(res.body.kind).toBe("PlacementList");
    expect(names(res.body.items)).toEqual(["d1", "d2"]);
    expect(names((await call("GET", PL("dc"))).body.items)).toEqual(["d3"]);
  });

  it("takes a field selector, and dryRun deletes nothing", async () => {
    for (const n of ["f1", "f2"]) await call("POST", PL("dcf"), placement(n, {}));
    const dry = await call("DELETE", `${PL("dcf")}?dryRun=All`);
    expect(dry.status).toBe(200);
    expect(names(dry.body.items)).toEqual(["f1", "f2"]);
    expect(names((await call("GET", PL("dcf"))).body.items)).toEqual(["f1", "f2"]);
    const res = await call("DELETE", `${PL("dcf")}?fieldSelector=metadata.name%3Df2`);
    expect(names(res.body.items)).toEqual(["f2"]);
    expect(names((await call("GET", PL("dcf"))).body.items)).toEqual(["f1"]);
  });

  it("deletes ManagedClusters through their Durable Objects", async () => {
    for (const n of ["dcm1", "dcm2"])
      await call("POST", MC, { apiVersion: "cluster.open-cluster-management.io/v1", kind: "ManagedCluster", metadata: { name: n, labels: { dc: "yes" } } });
    const res = await call("DELETE", `${MC}?labelSelector=dc%3Dyes`);
    expect(res.status).toBe(200);
    expect(names(res.body.items)).toEqual(["dcm1", "dcm2"]);
    expect((await call("GET", `${MC}/dcm1`)).status).toBe(404);
  });

  it("is refused across all namespaces, on system-owned kinds, and with a bad selector", async () => {
    expect((await call("DELETE", "/apis/cluster.open-cluster-management.io/v1beta1/placements")).status).toBe(405);
    expect((await call("DELETE", "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/dc/placementdecisions")).status).toBe(405);
    const bad = await call("DELETE", `${PL("dc")}?labelSelector=${encodeURIComponent("a in (")}`);
    expect(bad.status).toBe(400);
    expect(names((await call("GET", PL("dc"))).body.items)).toEqual(["d3"]);
  });

  it("is a verb discovery lists for writable kinds", async () => {
    const res = await call("GET", "/apis/cluster.open-cluster-management.io/v1beta1");
    const verbs = (n: string) => res.body.resources.find((r: { name: string }) => r.name === n).verbs;
    expect(verbs("placements")).toContain("deletecollection");
    expect(verbs("placementdecisions")).not.toContain("deletecollection");
  });
});

describe("content negotiation: metadata-only forms, 406", () => {
  const PL = "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/meta/placements";
  const LIST_ACCEPT =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
  const OBJ_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
  const withAccept = (accept: string, method = "GET", path = PL, body?: unknown, contentType?: string) =>
    call(method, path, body, { headers: { accept }, contentType });

  it("lists as a PartialObjectMetadataList and gets a PartialObjectMetadata", async () => {
    await call("POST", PL, {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "m1", labels: { a: "b" } },
      spec: { numberOfClusters: 1 },
    });
    const list = await withAccept(LIST_ACCEPT);
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ apiVersion: "meta.k8s.io/v1", kind: "PartialObjectMetadataList", metadata: { resourceVersion: expect.any(String) } });
    expect(list.body.items).toEqual([
      expect.objectContaining({
        apiVersion: "meta.k8s.io/v1",
        kind: "PartialObjectMetadata",
        metadata: expect.objectContaining({ name: "m1", labels: { a: "b" } }),
      }),
    ]);
    expect(list.body.items[0].spec).toBeUndefined();
    const one = await withAccept(OBJ_ACCEPT, "GET", `${PL}/m1`);
    expect(one.body).toEqual({
      apiVersion: "meta.k8s.io/v1",
      kind: "PartialObjectMetadata",
      metadata: expect.objectContaining({ name: "m1", uid: expect.any(String) }),
    });
    // A merge patch answered in the metadata form, as client-go's metadata client patches.
    const patched = await withAccept(OBJ_ACCEPT, "PATCH", `${PL}/m1`, { metadata: { labels: { c: "d" } } }, "application/merge-patch+json");
    expect(patched.body).toMatchObject({ kind: "PartialObjectMetadata", metadata: { labels: { a: "b", c: "d" } } });
  });

  it("answers 406 when nothing acceptable is served, before doing anything", async () => {
    const res = await withAccept("application/vnd.kubernetes.protobuf");
    expect(res.status).toBe(406);
    expect(res.body).toMatchObject({ kind: "Status", code: 406, reason: "NotAcceptable" });
    // The object form is not a list's form, and the reverse.
    expect((await withAccept(OBJ_ACCEPT)).status).toBe(406);
    expect((await withAccept(LIST_ACCEPT.split(",")[1]!, "GET", `${PL}/m1`)).status).toBe(406);
    const create = await withAccept("application/vnd.kubernetes.protobuf", "POST", PL, {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "never" },
    });
    expect(create.status).toBe(406);
    expect((await call("GET", `${PL}/never`)).status).toBe(404);
  });
});

describe("aggregated discovery (apidiscovery.k8s.io/v2)", () => {
  const ACCEPT =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

  it("answers /apis with every group, version and resource in one document", async () => {
    const res = await call("GET", "/apis", undefined, { headers: { accept: ACCEPT } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
    expect(res.body).toMatchObject({ kind: "APIGroupDiscoveryList", apiVersion: "apidiscovery.k8s.io/v2" });
    const cluster = res.body.items.find((g: { metadata: { name: string } }) => g.metadata.name === "cluster.open-cluster-management.io");
    expect(cluster.versions[0].version).toBe("v1");
    const mcl = cluster.versions[0].resources.find((r: { resource: string }) => r.resource === "managedclusters");
    expect(mcl).toMatchObject({
      responseKind: { group: "cluster.open-cluster-management.io", version: "v1", kind: "ManagedCluster" },
      scope: "Cluster",
      singularResource: "managedcluster",
      shortNames: expect.arrayContaining(["mcl"]),
      subresources: [{ subresource: "status", verbs: ["get", "patch", "update"] }],
    });
    expect(res.body.items.some((g: { metadata: { name: string } }) => g.metadata.name === "")).toBe(false);
  });

  it("answers /api with the core group, and the plain documents without the aggregated Accept", async () => {
    const core = await call("GET", "/api", undefined, { headers: { accept: ACCEPT } });
    expect(core.body.items).toHaveLength(1);
    expect(core.body.items[0].versions[0]).toMatchObject({
      version: "v1",
      resources: [
        expect.objectContaining({
          resource: "namespaces",
          scope: "Cluster",
          shortNames: ["ns"],
          subresources: [
            { subresource: "finalize", responseKind: { group: "", version: "v1", kind: "Namespace" }, verbs: ["update"] },
            expect.objectContaining({ subresource: "status" }),
          ],
        }),
        expect.objectContaining({ resource: "secrets", scope: "Namespaced" }),
        expect.objectContaining({
          resource: "serviceaccounts",
          scope: "Namespaced",
          shortNames: ["sa"],
          subresources: [{ subresource: "token", responseKind: { group: "authentication.k8s.io", version: "v1", kind: "TokenRequest" }, verbs: ["create"] }],
        }),
        expect.objectContaining({ resource: "events", scope: "Namespaced", shortNames: ["ev"], responseKind: { group: "", version: "v1", kind: "Event" } }),
        // The built-in kinds stored as templates (src/kinds/builtin).
        expect.objectContaining({ resource: "configmaps", scope: "Namespaced", shortNames: ["cm"] }),
        expect.objectContaining({ resource: "services", scope: "Namespaced", shortNames: ["svc"], categories: ["all"] }),
        expect.objectContaining({ resource: "persistentvolumeclaims", scope: "Namespaced", shortNames: ["pvc"] }),
        expect.objectContaining({ resource: "limitranges", scope: "Namespaced", shortNames: ["limits"] }),
        expect.objectContaining({ resource: "resourcequotas", scope: "Namespaced", shortNames: ["quota"] }),
      ],
    });
    expect((await call("GET", "/apis")).body.kind).toBe("APIGroupList");
    expect((await call("GET", "/api")).body.kind).toBe("APIVersions");
    // v2beta1 alone is served too; a JSON-first Accept keeps the plain list.
    expect(
      (await call("GET", "/apis", undefined, { headers: { accept: "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList" } })).body
        .apiVersion,
    ).toBe("apidiscovery.k8s.io/v2beta1");
    expect(
      (await call("GET", "/apis", undefined, { headers: { accept: "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" } }))
        .body.kind,
    ).toBe("APIGroupList");
  });
});
