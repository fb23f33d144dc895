import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces, MC } from "./helpers.ts";

const PLACEMENTS = "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/dry/placements";
const placement = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: "cluster.open-cluster-management.io/v1beta1",
  kind: "Placement",
  metadata: { name },
  spec,
});
const rows = async () =>
  JSON.stringify((await env.DB.prepare("SELECT resource, namespace, name, resource_version FROM objects ORDER BY 1, 2, 3").all()).results);

describe("dryRun=All", () => {
  beforeAll(() => createNamespaces("dry"));

  it("answers a create, patch and delete with the would-be object and stores nothing", async () => {
    expect((await call("POST", PLACEMENTS, placement("kept", { numberOfClusters: 1 }))).status).toBe(201);
    const before = await rows();
    const created = await call("POST", `${PLACEMENTS}?dryRun=All`, placement("ghost", { numberOfClusters: 2 }));
    expect(created.status).toBe(201);
    expect(created.body.metadata.name).toBe("ghost");
    expect(created.body.spec.numberOfClusters).toBe(2);
    const patched = await call("PATCH", `${PLACEMENTS}/kept?dryRun=All`, { spec: { numberOfClusters: 3 } }, { contentType: "application/merge-patch+json" });
    expect(patched.status).toBe(200);
    expect(patched.body.spec.numberOfClusters).toBe(3);
    expect((await call("DELETE", `${PLACEMENTS}/kept?dryRun=All`)).status).toBe(200);
    const mc = await call("POST", `${MC}?dryRun=All`, {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name: "dry-mc" },
      spec: {},
    });
    expect(mc.status).toBe(201);
    expect(mc.body.spec.leaseDurationSeconds).toBe(60);
    expect(await rows()).toBe(before);
    expect((await call("GET", `${PLACEMENTS}/kept`)).body.spec.numberOfClusters).toBe(1);
    expect((await call("GET", `${MC}/dry-mc`)).status).toBe(404);
  });

  it("validates as a real write does: invalid bodies, existing names and bad directives are refused", async () => {
    expect((await call("POST", PLACEMENTS, placement("exists"))).status).toBe(201);
    const dup = await call("POST", `${PLACEMENTS}?dryRun=All`, placement("exists"));
    expect(dup.status).toBe(409);
    expect(dup.body.reason).toBe("AlreadyExists");
    const invalid = await call("POST", `${PLACEMENTS}?dryRun=All`, placement("bad", { numberOfClusters: -1 }));
    expect(invalid.status).toBe(422);
    expect(invalid.body.details.causes[0].field).toBe("spec.numberOfClusters");
    const directive = await call("POST", `${PLACEMENTS}?dryRun=Some`, placement("other"));
    expect(directive.status).toBe(400);
    expect(directive.body.details.causes[0].field).toBe("dryRun");
    expect((await call("DELETE", `${PLACEMENTS}/missing?dryRun=All`)).status).toBe(404);
  });
});
