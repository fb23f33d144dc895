/**
 * The fleet view: ManagedClusters (or, for a user who may not list them all, OCM's cluster view:
 * the clusters of the cluster sets they may get) in pages of {@link PAGE} (watched, so availability changes show
 * at once), filtered by a label selector (server side) and a name search; each row's lease age
 * (time since the agent last renewed its lease), read for the rows on screen only, after they are
 * painted (src/ui/app/leases.ts); counts by condition and clusters by edge location from the
 * hub's `/metrics` when it serves them (one request, whatever the fleet's size), else over the
 * clusters shown.
 */
import type { RefObject } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Api, KubeObject } from "./api.ts";
import { age, clusterState, CLUSTERSET_LABEL, COLO_ANNOTATION, leaseAgeSeconds, leaseLate, taintText, type LeaseInfo } from "./format.ts";
import { useLeases } from "./leases.ts";
import { useListOrView } from "./scope.tsx";
import { useNow, ErrorNote, StateBadge } from "./widgets.tsx";
import { parseFleetMetrics, type FleetCounts } from "./metrics.ts";

/** Clusters per page of the fleet list. */
export const PAGE = 100;
const MC_PATH = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
/** OCM's cluster view: the clusters of the sets the user may get (for a user who may not list them all). */
const VIEW_PATH = "/apis/clusterview.open-cluster-management.io/v1/managedclusters";

function useFleetCounts(api: Api): FleetCounts | null {
  const [counts, setCounts] = useState<FleetCounts | null>(null);
  useEffect(() => {
    let stop = false;
    const load = () =>
      fetchMetrics(api)
        .then((c) => !stop && setCounts(c))
        .catch(() => undefined);
    void load();
    const t = setInterval(() => void load(), 15_000);
    return () => {
      stop = true;
      clearInterval(t);
    };
  }, [api]);
  return counts;
}

async function fetchMetrics(api: Api): Promise<FleetCounts | null> {
  const text = await api.text("/metrics");
  return text === null ? null : parseFleetMetrics(text);
}

function Tally({ title, counts, total, note }: { title: string; counts: Record<string, number>; total?: number; note?: string }) {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  const max = Math.max(1, ...entries.map(([, n]) => n));
  return (
    <section class="card" aria-label={title}>
      <h2>{title}</h2>
      {total !== undefined && <p class="big">{total}</p>}
      <ul class="bars">
        {entries.map(([k, n]) => (
          <li key={k}>
            <span class="bar-label">{k}</span>
            <span class="bar" style={{ width: `${(100 * n) / max}%` }} aria-hidden="true" />
            <span class="bar-n" data-count={k}>
              {n}
            </span>
          </li>
        ))}
        {entries.length === 0 && <li class="muted">none</li>}
      </ul>
      {note && <p class="muted small">{note}</p>}
    </section>
  );
}

/** How long the rows on screen must stay put before their leases are read, in milliseconds (a scroll passes by). */
const SETTLE_MS = 300;

/**
 * The names of the rows of `body` (`tr[data-cluster]`) that are on screen, once they have stayed
 * there for {@link SETTLE_MS}; observed again whenever `rows` changes.
 */
function useRowsOnScreen(body: RefObject<HTMLTableSectionElement | null>, rows: unknown): string[] {
  const [names, setNames] = useState<string[]>([]);
  useEffect(() => {
    const tbody = body.current;
    if (!tbody) return;
    const visible = new Set<string>();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const observer = new IntersectionObserver((entries) => {
      for (const e of entries) {
        const name = (e.target as HTMLElement).dataset.cluster ?? "";
        if (e.isIntersecting) visible.add(name);
        else visible.delete(name);
      }
      clearTimeout(timer);
      timer = setTimeout(() => setNames([...visible].sort()), SETTLE_MS);
    });
    for (const tr of tbody.querySelectorAll("tr[data-cluster]")) observer.observe(tr);
    return () => {
      observer.disconnect();
      clearTimeout(timer);
    };
  }, [body, rows]);
  return names;
}

/** A lease's age cell: time since the last renewal, marked late past OCM's grace; "…" until read, "—" without a lease. */
function LeaseCell({ name, lease, nowMs }: { name: string; lease: LeaseInfo | null | undefined; nowMs: number }) {
  if (lease === undefined)
    return (
      <td data-lease={name} aria-label="lease not read yet">
        …
      </td>
    );
  if (lease === null) return <td data-lease={name}>—</td>;
  const late = leaseLate(lease);
  return (
    <td data-lease={name} data-late={late ? "true" : undefined} class={late ? "late" : undefined} title={`renewed ${lease.renewTime}`}>
      {age(leaseAgeSeconds(lease, nowMs))}
    </td>
  );
}

/** One cluster's row. */
function Row({ mc, nowMs, lease, onAccept }: { mc: KubeObject; nowMs: number; lease: LeaseInfo | null | undefined; onAccept: (name: string) => void }) {
  const state = clusterState(mc);
  const taints = (mc.spec?.taints ?? []) as { key: string; value?: string; effect: string }[];
  return (
    <tr data-cluster={mc.metadata.name}>
      <th scope="row">
        <a href={`#/clusters/${encodeURIComponent(mc.metadata.name)}`}>{mc.metadata.name}</a>
      </th>
      <td>
        <StateBadge state={state} />
        {state === "Pending" && (
          <button type="button" class="small" onClick={() => onAccept(mc.metadata.name)} aria-label={`Accept cluster ${mc.metadata.name}`}>
            Accept
          </button>
        )}
      </td>
      <LeaseCell name={mc.metadata.name} lease={lease} nowMs={nowMs} />
      <td>{mc.status?.version?.kubernetes ?? "—"}</td>
      <td>{mc.metadata.labels?.[CLUSTERSET_LABEL] ?? "default"}</td>
      <td>{taints.length ? taints.map((t) => <code key={taintText(t)}>{taintText(t)}</code>) : "—"}</td>
      <td class="num">{mc.status?.allocatable?.cpu ?? "—"}</td>
      <td class="num">{mc.status?.allocatable?.memory ?? "—"}</td>
      <td>{mc.metadata.annotations?.[COLO_ANNOTATION] ?? "—"}</td>
    </tr>
  );
}

/** The fleet view (see the module comment). */
export function Fleet({ api }: { api: Api }) {
  const [selectorInput, setSelectorInput] = useState(() => new URLSearchParams(location.hash.split("?")[1] ?? "").get("selector") ?? "");
  const [selector, setSelector] = useState(selectorInput);
  const [search, setSearch] = useState("");
  const [found, setFound] = useState<KubeObject | null>(null);
  const [notice, setNotice] = useState("");
  const list = useListOrView(api, MC_PATH, VIEW_PATH, { limit: PAGE, labelSelector: selector || undefined });
  const counts = useFleetCounts(api);
  const nowMs = useNow(5000);
  const body = useRef<HTMLTableSectionElement>(null);

  const shown = useMemo(() => {
    const q = search.trim().toLowerCase();
    const items = q ? list.items.filter((mc) => mc.metadata.name.toLowerCase().includes(q)) : list.items;
    return found && !items.some((m) => m.metadata.name === found.metadata.name) ? [found, ...items] : items;
  }, [list.items, search, found]);
  const onScreen = useRowsOnScreen(body, shown);
  const leases = useLeases(
    api,
    onScreen.map((name) => ({ name, version: shown.find((mc) => mc.metadata.name === name)?.metadata.resourceVersion })),
  );

  // A search that matches nothing loaded looks the exact name up (one GET), without listing more.
  useEffect(() => {
    const q = search.trim();
    setFound(null);
    if (!q || list.items.some((mc) => mc.metadata.name.toLowerCase().includes(q.toLowerCase()))) return;
    const ac = new AbortController();
    api
      .get(`${MC_PATH}/${encodeURIComponent(q)}`, ac.signal)
      .then(setFound)
      .catch(() => undefined);
    return () => ac.abort();
  }, [api, search, list.items.length > 0]);

  const local = useMemo(() => {
    const byState: Record<string, number> = {};
    const byColo: Record<string, number> = {};
    for (const mc of list.items) {
      const s = clusterState(mc);
      byState[s] = (byState[s] ?? 0) + 1;
      const colo = mc.metadata.annotations?.[COLO_ANNOTATION] ?? "unknown";
      byColo[colo] = (byColo[colo] ?? 0) + 1;
    }
    return { byState, byColo };
  }, [list.items]);

  const total = list.loading ? undefined : list.items.length + (list.remaining ?? 0);
  const fleetWide = counts && !selector;
  const accept = (name: string) => {
    api
      .mergePatch(`${MC_PATH}/${encodeURIComponent(name)}`, { spec: { hubAcceptsClient: true } })
      .then(() => setNotice(`Cluster ${name} accepted.`))
      .catch((e: Error) => setNotice(`Accepting ${name} failed: ${e.message}`));
  };

  return (
    <div class="view" data-view="fleet">
      <h1>Fleet</h1>
      {list.viaView && (
        <p class="muted" data-clusterview>
          The clusters of the cluster sets you may see (OCM's cluster view).
        </p>
      )}
      <div class="cards">
        <Tally
          title="Clusters by availability"
          counts={fleetWide ? counts.byState : local.byState}
          total={fleetWide && counts.total !== undefined ? counts.total : list.hasMore && list.remaining === undefined ? undefined : total}
          note={fleetWide ? "whole fleet, from /metrics" : `over the ${list.items.length} clusters loaded`}
        />
        <Tally
          title="By edge location"
          counts={fleetWide && Object.keys(counts.byColo).length ? counts.byColo : local.byColo}
          note="where each cluster's agent last reached Cloudflare"
        />
      </div>
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setSelector(selectorInput.trim());
        }}
      >
        <label>
          Label selector
          <input value={selectorInput} placeholder="env=prod,tier in (a,b)" onInput={(e) => setSelectorInput((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Apply</button>
        <label>
          Search
          <input type="search" value={search} placeholder="cluster name" onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        </label>
      </form>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <ErrorNote error={list.error} />
      <div class="table-wrap">
        <table class="clusters" aria-busy={list.loading}>
          <caption class="sr-only">Managed clusters</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">State</th>
              <th scope="col" title="Time since the cluster's agent last renewed its lease (heartbeat or ping)">
                Lease
              </th>
              <th scope="col">Kubernetes</th>
              <th scope="col">Cluster set</th>
              <th scope="col">Taints</th>
              <th scope="col">CPU</th>
              <th scope="col">Memory</th>
              <th scope="col">Edge</th>
            </tr>
          </thead>
          <tbody ref={body}>
            {shown.map((mc) => (
              <Row key={mc.metadata.name} mc={mc} nowMs={nowMs} lease={leases.get(mc.metadata.name)} onAccept={accept} />
            ))}
          </tbody>
        </table>
      </div>
      {!list.loading && shown.length === 0 && <p class="muted">No cluster matches.</p>}
      {list.hasMore && (
        <button type="button" onClick={list.more}>
          Load {PAGE} more{list.remaining !== undefined ? ` (${list.remaining} not shown)` : ""}
        </button>
      )}
    </div>
  );
}
