/**
 * The test kit's ManagedClusterSets (OCM's `cluster.open-cluster-management.io/v1beta2`): a set
 * created and bound to a namespace, as an admin does before a Placement there may select its
 * clusters. Node only.
 */
import { expect } from "vitest";
import { admin, type Hub } from "../../scripts/hub-process.ts";
import { BINDINGS, CLUSTER_GROUP } from "./api.ts";

/** Creates ManagedClusterSet `name` (no selector: clusters join it by label); the create must answer 201. */
export async function createClusterSet(hub: Hub, name: string): Promise<void> {
  const set = { apiVersion: `${CLUSTER_GROUP}/v1beta2`, kind: "ManagedClusterSet", metadata: { name } };
  expect((await admin(hub, "POST", `/apis/${CLUSTER_GROUP}/v1beta2/managedclustersets`, set)).status).toBe(201);
}

/**
 * Binds ManagedClusterSet `clusterSet` to namespace `ns` (a ManagedClusterSetBinding named after
 * the set, as OCM requires); the create must answer 201.
 */
export async function bindClusterSet(hub: Hub, ns: string, clusterSet: string): Promise<void> {
  const binding = { apiVersion: `${CLUSTER_GROUP}/v1beta2`, kind: "ManagedClusterSetBinding", metadata: { name: clusterSet }, spec: { clusterSet } };
  expect((await admin(hub, "POST", BINDINGS(ns), binding)).status).toBe(201);
}
