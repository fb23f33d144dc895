/**
 * Request attributes as kube-apiserver's RequestInfo resolver derives them (the cases of its
 * requestinfo_test.go, carried over as facts): resource or non-resource, verb, group, version,
 * resource, subresource, namespace and name.
 */
import { describe, expect, it } from "vitest";
import { requestAttributes } from "../../src/auth/requestinfo.ts";

const at = (method: string, target: string) => requestAttributes(method, new URL(`https://hub${target}`));

describe("requestAttributes (kube-apiserver RequestInfo)", () => {
  const resourceCases: [string, string, Record<string, string>][] = [
    ["GET", "/api/v1/namespaces", { verb: "list", apiGroup: "", apiVersion: "v1", resource: "namespaces", namespace: "" }],
    ["GET", "/api/v1/namespaces/other", { verb: "get", resource: "namespaces", namespace: "other", name: "other" }],
    ["GET", "/api/v1/namespaces/other/secrets", { verb: "list", resource: "secrets", namespace: "other" }],
    ["GET", "/api/v1/namespaces/other/secrets/foo", { verb: "get", resource: "secrets", namespace: "other", name: "foo" }],
    ["HEAD", "/api/v1/namespaces/other/secrets/foo", { verb: "get", resource: "secrets", name: "foo" }],
    ["GET", "/api/v1/secrets", { verb: "list", resource: "secrets", namespace: "" }],
    ["GET", "/api/v1/secrets?watch=true", { verb: "watch", resource: "secrets", namespace: "" }],
    ["GET", "/api/v1/secrets?watch=false", { verb: "list" }],
    ["GET", "/api/v1/secrets?watch=0", { verb: "list" }],
    ["GET", "/api/v1/secrets?watch=1", { verb: "watch" }],
    ["GET", "/api/v1/watch/secrets", { verb: "watch", resource: "secrets", namespace: "" }],
    ["GET", "/api/v1/watch/namespaces/other/secrets", { verb: "watch", resource: "secrets", namespace: "other" }],
    [
      "GET",
      "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/a/placements",
      { verb: "list", apiGroup: "cluster.open-cluster-management.io", apiVersion: "v1beta1", resource: "placements", namespace: "a" },
    ],
    [
      "GET",
      "/apis/cluster.open-cluster-management.io/v1/managedclusters/c1/status",
      { verb: "get", resource: "managedclusters", name: "c1", subresource: "status", namespace: "" },
    ],
    ["POST", "/api/v1/namespaces/other/secrets", { verb: "create", resource: "secrets", namespace: "other" }],
    ["PUT", "/api/v1/namespaces/other/secrets/foo", { verb: "update", name: "foo" }],
    ["PATCH", "/api/v1/namespaces/other/secrets/foo", { verb: "patch", name: "foo" }],
    ["DELETE", "/api/v1/namespaces/other/secrets/foo", { verb: "delete", name: "foo" }],
    ["DELETE", "/api/v1/namespaces/other/secrets", { verb: "deletecollection", resource: "secrets", namespace: "other" }],
    ["GET", "/api/v1/namespaces/other/secrets?fieldSelector=metadata.name%3Dfoo", { verb: "list", name: "foo" }],
    ["GET", "/api/v1/namespaces/other/secrets?fieldSelector=metadata.name%3D%3Dfoo,type%3Dx", { verb: "list", name: "foo" }],
    ["GET", "/api/v1/namespaces/other/secrets?watch=1&fieldSelector=metadata.name%3Dfoo", { verb: "watch", name: "foo" }],
    ["PUT", "/api/v1/namespaces/other/finalize", { verb: "update", resource: "namespaces", namespace: "other", name: "other", subresource: "finalize" }],
    ["PUT", "/api/v1/namespaces/other/status", { verb: "update", resource: "namespaces", namespace: "other", name: "other", subresource: "status" }],
  ];
  for (const [method, target, expected] of resourceCases) {
    it(`${method} ${target}`, () => expect(at(method, target)).toMatchObject(expected));
  }

  it("carries no name for a fieldSelector that does not pin one", () => {
    expect(at("GET", "/api/v1/namespaces/o/secrets?fieldSelector=metadata.name!%3Dfoo")).not.toHaveProperty("name");
    expect(at("GET", "/api/v1/namespaces/o/secrets?fieldSelector=metadata.name%3Da%2Fb")).not.toHaveProperty("name");
    expect(at("GET", "/api/v1/namespaces/o/secrets?fieldSelector=type%3Dx")).not.toHaveProperty("name");
  });

  it("answers paths that name no resource as non-resource requests with the method's verb", () => {
    for (const target of [
      "/api",
      "/api/v1",
      "/apis",
      "/apis/rbac.authorization.k8s.io",
      "/apis/rbac.authorization.k8s.io/v1",
      "/openapi/v3",
      "/openapi/v3/apis/work.open-cluster-management.io/v1",
      "/docs",
      "/version",
    ]) {
      expect(at("GET", target)).toEqual({ verb: "get", path: target });
    }
    expect(at("POST", "/apis")).toEqual({ verb: "post", path: "/apis" });
    expect(at("GET", "/foo/bar/baz")).toEqual({ verb: "get", path: "/foo/bar/baz" });
  });
});
