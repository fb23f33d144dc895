/**
 * Helpers shared by the commands that act on named ManagedClusters (accept, deny, taint,
 * clusterset set): reading a cluster with a helpful 404, and the cluster list flags.
 */
import { InvalidArgumentError } from "commander";
import type { HubClient } from "./client.ts";
import { HubApiError, UsageError } from "./errors.ts";
import { ClusterConditions, conditionOf, Paths, type KubeObject } from "./resources.ts";

/** The hint of a 404 for a named cluster. */
export const NO_SUCH_CLUSTER = "no such cluster; list them with `flotilla get clusters`";

/**
 * Reads ManagedCluster `name`.
 *
 * @param notFoundHint the hint of the 404 (default {@link NO_SUCH_CLUSTER}).
 * @throws HubApiError (404 with the hint when there is no such cluster), HubUnreachableError.
 */
export function getCluster(client: HubClient, name: string, notFoundHint = NO_SUCH_CLUSTER): Promise<KubeObject> {
  return client.get<KubeObject>(Paths.managedClusters(name), { hints: { notFound: notFoundHint } });
}

/** Whether `err` is a 404 for a missing object (not a resource the hub lacks). */
export function isNotFound(err: unknown): err is HubApiError {
  return err instanceof HubApiError && err.code === 404 && !err.resourceNotServed;
}

/** Parses a comma-separated list flag (`--clusters c1,c2`), for commander. */
export function commaList(value: string, previous: string[] = []): string[] {
  const items = value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (items.length === 0) throw new InvalidArgumentError("expected a comma-separated list of names");
  return [...previous, ...items];
}

/**
 * The cluster names of a command: positional names plus `--clusters`, without duplicates.
 *
 * @throws UsageError when there are none.
 */
export function clusterNames(positional: string[], flag: string[] | undefined, command: string): string[] {
  const names = [...new Set([...positional, ...(flag ?? [])])];
  if (names.length === 0) throw new UsageError("name at least one cluster", `e.g. flotilla ${command} cluster1 (or --clusters cluster1,cluster2)`);
  return names;
}

/** The status (`True`, `False`, `Unknown`) of a cluster condition, `-` when absent. */
export function conditionStatus(mc: KubeObject | undefined, type: string): string {
  return conditionOf(mc, type)?.status ?? "-";
}

/** Whether a cluster has joined and is available (what `accept --wait` waits for). */
export function isJoinedAndAvailable(mc: KubeObject): boolean {
  return conditionStatus(mc, ClusterConditions.Joined) === "True" && conditionStatus(mc, ClusterConditions.Available) === "True";
}
