/**
 * The clusters' leases in the dashboard: OCM's `managed-cluster-lease` in each cluster's namespace
 * (`coordination.k8s.io/v1`, served read-only by the hub from what the cluster's object keeps:
 * src/api/leases.ts). The hub does not watch leases (a ping wakes nothing on it), so the views
 * GET them, each a read of one cluster's object, and again every {@link LEASE_REFRESH_MS}: the
 * fleet view only for the rows on screen, after they are painted; the cluster view its one.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiFailure, type Api } from "./api.ts";
import { leaseInfo, leasePath, type LeaseInfo } from "./format.ts";

/** How often the shown leases are read again, in milliseconds. */
export const LEASE_REFRESH_MS = 15_000;
/** Most lease reads in flight at once (the browser keeps 6 connections to the hub; a watch holds one). */
const LEASE_READS_AT_ONCE = 4;

/**
 * Reads cluster `cluster`'s lease: its {@link LeaseInfo}, null when it has none (404: never
 * accepted) or the user may not read it (403).
 * @throws ApiFailure for another failure, or the abort of `signal`
 */
async function readLease(api: Api, cluster: string, signal: AbortSignal): Promise<LeaseInfo | null> {
  try {
    return leaseInfo(await api.get(leasePath(cluster), signal), Date.now());
  } catch (e) {
    if (e instanceof ApiFailure && (e.status === 404 || e.status === 403)) return null;
    throw e;
  }
}

/** A cluster on screen whose lease to show: its name, and its ManagedCluster's resourceVersion. */
export interface LeaseRow {
  name: string;
  version?: string;
}

/**
 * The leases of `rows` (the fleet's rows on screen), by cluster name: a {@link LeaseInfo}, null
 * when the cluster has none (or it may not be read), absent until first read. Each is read when
 * it comes on screen or its ManagedCluster changes (a new `version`: e.g. it turned Unknown as its
 * lease expired), and every {@link LEASE_REFRESH_MS} while it stays there, at most
 * {@link LEASE_READS_AT_ONCE} reads at a time; a read that fails keeps what was shown.
 */
export function useLeases(api: Api, rows: readonly LeaseRow[]): ReadonlyMap<string, LeaseInfo | null> {
  const [leases, setLeases] = useState<ReadonlyMap<string, LeaseInfo | null>>(new Map());
  const read = useRef(new Map<string, { atMs: number; version?: string }>());
  const key = JSON.stringify([...rows].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((r) => [r.name, r.version ?? ""]));
  useEffect(() => {
    const shown = JSON.parse(key) as [string, string][];
    if (shown.length === 0) return;
    const ac = new AbortController();
    const load = async (all: boolean) => {
      const now = Date.now();
      const due = shown.filter(([name, version]) => {
        const last = read.current.get(name);
        return all || !last || last.version !== version || now - last.atMs >= LEASE_REFRESH_MS;
      });
      const got = new Map<string, LeaseInfo | null>();
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < due.length && !ac.signal.aborted; i = next++) {
          const [name, version] = due[i]!;
          try {
            got.set(name, await readLease(api, name, ac.signal));
            read.current.set(name, { atMs: Date.now(), version });
          } catch {
            // Kept as shown; read again at the next refresh.
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(LEASE_READS_AT_ONCE, due.length) }, worker));
      if (!ac.signal.aborted && got.size > 0) setLeases((prev) => new Map([...prev, ...got]));
    };
    void load(false);
    const timer = setInterval(() => void load(true), LEASE_REFRESH_MS);
    return () => {
      ac.abort();
      clearInterval(timer);
    };
  }, [api, key]);
  return leases;
}

/**
 * Cluster `cluster`'s lease for the cluster view (`version`: its ManagedCluster's
 * resourceVersion): read at once, when the cluster changes and every {@link LEASE_REFRESH_MS};
 * undefined until read.
 */
export function useLease(api: Api, cluster: string, version?: string): LeaseInfo | null | undefined {
  return useLeases(api, [{ name: cluster, version }]).get(cluster);
}
