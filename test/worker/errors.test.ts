/**
 * A get of an absent object is answered with its NotFound Status without an Error being made
 * (src/k8s/errors.ts `notFoundStatus`, src/api/resource/read.ts; issue 42): the answer is the one
 * the thrown `notFound` gave, byte for byte, headers included.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { notFound, notFoundStatus } from "../../src/k8s/errors.ts";
import { statusAnswer, statusResponse } from "../../src/api/request.ts";
import { ADMIN, createNamespaces } from "./helpers.ts";

describe("a NotFound answered without an Error", () => {
  it("is the Status of notFound, field for field and in the same order", () => {
    for (const ref of [
      { group: "", plural: "configmaps", name: "absent" },
      { group: "apps", plural: "deployments", name: "web" },
      { group: "cluster.open-cluster-management.io", plural: "managedclusters" },
    ]) {
      expect(JSON.stringify(notFoundStatus(ref))).toBe(JSON.stringify(notFound(ref).toStatus()));
    }
  });

  it("answers as statusResponse answers the thrown error", async () => {
    const ref = { group: "apps", plural: "deployments", name: "web" };
    const thrown = statusResponse(notFound(ref));
    const answered = statusAnswer(notFoundStatus(ref));
    expect(answered.status).toBe(thrown.status);
    expect([...answered.headers]).toEqual([...thrown.headers]);
    expect(await answered.text()).toBe(await thrown.text());
  });

  it("is what a GET of an absent object answers", async () => {
    await createNamespaces("errors-ns");
    for (const [path, ref] of [
      ["/api/v1/namespaces/errors-ns/configmaps/absent", { group: "", plural: "configmaps", name: "absent" }],
      ["/apis/apps/v1/namespaces/errors-ns/deployments/web", { group: "apps", plural: "deployments", name: "web" }],
    ] as const) {
      const res = await exports.default.fetch(`https://hub.test${path}`, { headers: { authorization: `Bearer ${ADMIN}` } });
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toBe("application/json");
      expect(res.headers.get("audit-id")).toBeTruthy();
      expect(await res.text()).toBe(JSON.stringify(notFound(ref).toStatus()));
    }
  });
});
