/**
 * The Worker tests' KubeFleet placements (`placement.kubernetes-fleet.io`): their paths, creates
 * that return the placement as stored after its first run, a run on demand, and what a status
 * selected. Shared by the KubeFleet case files (test/worker/fleet-*-cases.test.ts). Workerd only.
 */
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { call } from "./helpers.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** KubeFleet's placement API group, as a path prefix. */
export const FLEET_API = "/apis/placement.kubernetes-fleet.io";
/** The path of ClusterResourcePlacements, or of one by `name`. */
export const CRP = (name = ""): string => `${FLEET_API}/v1/clusterresourceplacements${name ? `/${name}` : ""}`;
/** The path of ResourcePlacements in `ns`, or of one by `name`. */
export const RP = (ns: string, name = ""): string => `${FLEET_API}/v1/namespaces/${ns}/resourceplacements${name ? `/${name}` : ""}`;

/**
 * Creates of a ClusterResourcePlacement (`crp`) and a ResourcePlacement (`rp`) whose policy is
 * `defaultPolicy` unless given; each create must answer 201 (its first run is part of the write),
 * and each returns the placement as stored after that run.
 */
export function fleetPlacements(defaultPolicy: unknown): {
  crp(name: string, resourceSelectors: unknown[], policy?: unknown, extra?: Record<string, unknown>): Promise<Json>;
  rp(ns: string, name: string, resourceSelectors: unknown[], policy?: unknown): Promise<Json>;
} {
  return {
    async crp(name, resourceSelectors, policy = defaultPolicy, extra = {}) {
      const r = await call("POST", CRP(), {
        apiVersion: "placement.kubernetes-fleet.io/v1",
        kind: "ClusterResourcePlacement",
        metadata: { name },
        spec: { resourceSelectors, policy, ...extra },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return (await call("GET", CRP(name))).body;
    },
    async rp(ns, name, resourceSelectors, policy = defaultPolicy) {
      const r = await call("POST", RP(ns), {
        apiVersion: "placement.kubernetes-fleet.io/v1",
        kind: "ResourcePlacement",
        metadata: { name },
        spec: { resourceSelectors, policy },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return (await call("GET", RP(ns, name))).body;
    },
  };
}

/** Runs placement `namespace`/`name`'s controller now ("" for a ClusterResourcePlacement): what its object does shortly after a notification. */
export async function runPlacementNow(namespace: string, name: string): Promise<void> {
  await env.REPLICASETS.getByName(`placement:${namespace}/${name}`).reconcile(`placement:${namespace}`, name);
}

/** `Kind/namespace/name` of each selected resource, in the order of a placement's `status.selectedResources`. */
export const selectedOf = (p: Json): string[] => (p.status?.selectedResources ?? []).map((r: Json) => `${r.kind}/${r.namespace ?? ""}/${r.name}`);
