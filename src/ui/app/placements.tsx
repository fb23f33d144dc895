/**
 * Placements: the list (the namespace picked in the header, or all namespaces; in pages), and one placement: its predicates,
 * tolerations, cluster sets and number of clusters, its conditions, the clusters its
 * PlacementDecisions select and its decision groups, why the clusters shown were not selected
 * (src/ui/app/explain.ts, with the hub's scheduling modules), and its events. Everything is watched.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import type { Api, KubeObject } from "./api.ts";
import { EventList } from "./events.tsx";
import { explain, type PlacementContext } from "./explain.ts";
import { condition } from "./format.ts";
import { useLiveList, useLiveObject } from "./live.ts";
import { scopedPath, useListOrView, useScope } from "./scope.tsx";
import { ConditionBadge, Conditions, ErrorNote, StateBadge, useNow } from "./widgets.tsx";

const G = "/apis/cluster.open-cluster-management.io";
const MC_PATH = `${G}/v1/managedclusters`;
const VIEW = "/apis/clusterview.open-cluster-management.io/v1";
/** Clusters whose verdict the placement view shows at once (the first page of the fleet). */
const EXPLAINED = 100;

function PlacementList({ api }: { api: Api }) {
  const { namespace, clusterWide } = useScope();
  const list = useLiveList(api, clusterWide === undefined ? null : scopedPath(`${G}/v1beta1`, namespace, "placements"), { limit: 100 });
  return (
    <div class="view" data-view="placements">
      <h1>Placements</h1>
      <p class="muted">{namespace ? `In namespace ${namespace}.` : "In all namespaces."}</p>
      <ErrorNote error={list.error} />
      {!list.loading && list.items.length === 0 && <p class="muted">No Placement.</p>}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Namespace</th>
              <th scope="col">Name</th>
              <th scope="col">Satisfied</th>
              <th scope="col">Selected</th>
              <th scope="col">Wanted</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((p) => {
              const sat = condition(p, "PlacementSatisfied");
              return (
                <tr key={`${p.metadata.namespace}/${p.metadata.name}`}>
                  <td>{p.metadata.namespace}</td>
                  <th scope="row">
                    <a href={`#/placements/${encodeURIComponent(p.metadata.namespace!)}/${encodeURIComponent(p.metadata.name)}`}>{p.metadata.name}</a>
                  </th>
                  <td>{sat ? <ConditionBadge condition={sat} /> : "—"}</td>
                  <td class="num">{p.status?.numberOfSelectedClusters ?? 0}</td>
                  <td class="num">{p.spec?.numberOfClusters ?? "all"}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {list.hasMore && (
        <button type="button" onClick={list.more}>
          More placements
        </button>
      )}
    </div>
  );
}

function PlacementDetail({ api, namespace, name }: { api: Api; namespace: string; name: string }) {
  const ns = encodeURIComponent(namespace);
  const { obj: placement, error } = useLiveObject(api, `${G}/v1beta1/namespaces/${ns}/placements`, name);
  const decisions = useLiveList(api, `${G}/v1beta1/namespaces/${ns}/placementdecisions`, {
    labelSelector: `cluster.open-cluster-management.io/placement=${name}`,
  });
  const bindings = useLiveList(api, `${G}/v1beta2/namespaces/${ns}/managedclustersetbindings`, { limit: 500 });
  // A user who may not list every set or cluster sees those of the sets they may get (the cluster view).
  const sets = useListOrView(api, `${G}/v1beta2/managedclustersets`, `${VIEW}/managedclustersets`, { limit: 500 });
  const clusters = useListOrView(api, MC_PATH, `${VIEW}/managedclusters`, { limit: EXPLAINED });
  const [lookup, setLookup] = useState("");
  const [looked, setLooked] = useState<KubeObject | null | "missing">(null);
  const nowMs = useNow(10_000);

  const decided = useMemo(
    () => new Set(decisions.items.flatMap((d) => ((d.status?.decisions ?? []) as { clusterName: string }[]).map((x) => x.clusterName))),
    [decisions.items],
  );
  const ctx: PlacementContext | null = useMemo(() => {
    // Until the bindings and sets are read, every cluster would look outside the bound sets.
    if (!placement || bindings.loading || sets.loading) return null;
    const setNames = new Set(sets.items.map((s) => s.metadata.name));
    const boundSets = bindings.items.map((b) => b.spec?.clusterSet as string).filter((s) => setNames.has(s));
    return { placement, boundSets, sets: sets.items, decided, nowMs };
  }, [placement, bindings.loading, bindings.items, sets.loading, sets.items, decided, nowMs]);

  useEffect(() => setLooked(null), [lookup]);
  if (error) return <ErrorNote error={error} what={`Placement ${namespace}/${name}`} />;
  if (!placement || !ctx) return <p class="muted">Loading placement {name}…</p>;
  const spec = placement.spec ?? {};
  const groups = (placement.status?.decisionGroups ?? []) as {
    decisionGroupIndex: number;
    decisionGroupName: string;
    decisions: string[];
    clusterCount: number;
  }[];
  const notSelected = clusters.items.filter((c) => !decided.has(c.metadata.name)).map((c) => ({ mc: c, v: explain(c, ctx) }));
  const clustersOfGroup = (g: { decisions: string[] }) =>
    decisions.items
      .filter((d) => g.decisions.includes(d.metadata.name))
      .flatMap((d) => ((d.status?.decisions ?? []) as { clusterName: string }[]).map((x) => x.clusterName));

  return (
    <div class="view" data-view="placement">
      <p class="crumbs">
        <a href="#/placements">Placements</a> / {namespace} / {name}
      </p>
      <h1>{name}</h1>
      <dl class="facts">
        <dt>Namespace</dt>
        <dd>{namespace}</dd>
        <dt>Number of clusters</dt>
        <dd>{spec.numberOfClusters ?? "all that match"}</dd>
        <dt>Cluster sets</dt>
        <dd>{spec.clusterSets?.length ? spec.clusterSets.join(", ") : "every bound set"}</dd>
        <dt>Bound sets</dt>
        <dd>{ctx.boundSets.join(", ") || "none"}</dd>
        <dt>Predicates</dt>
        <dd>
          {(spec.predicates ?? []).length === 0
            ? "none (every cluster of the eligible sets)"
            : (spec.predicates as unknown[]).map((p, i) => (
                <pre key={i} class="code">
                  {JSON.stringify((p as { requiredClusterSelector?: unknown }).requiredClusterSelector ?? p, null, 1)}
                </pre>
              ))}
        </dd>
        <dt>Tolerations</dt>
        <dd>{(spec.tolerations ?? []).length ? <pre class="code">{JSON.stringify(spec.tolerations, null, 1)}</pre> : "none"}</dd>
      </dl>
      <section aria-labelledby="pc-h">
        <h2 id="pc-h">Conditions</h2>
        <Conditions conditions={placement.status?.conditions} nowMs={nowMs} />
      </section>
      <section aria-labelledby="sel-h">
        <h2 id="sel-h">Selected clusters ({decided.size})</h2>
        <ul class="chips" data-selected>
          {[...decided].sort().map((c) => (
            <li key={c}>
              <a href={`#/clusters/${encodeURIComponent(c)}`}>{c}</a>
            </li>
          ))}
        </ul>
        <h3>Decision groups</h3>
        {groups.length === 0 ? (
          <p class="muted">No decision group yet.</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Index</th>
                  <th scope="col">Name</th>
                  <th scope="col">Clusters</th>
                </tr>
              </thead>
              <tbody>
                {groups.map((g) => (
                  <tr key={g.decisionGroupIndex}>
                    <td class="num">{g.decisionGroupIndex}</td>
                    <td>{g.decisionGroupName || "(remainder)"}</td>
                    <td>
                      {g.clusterCount}: {clustersOfGroup(g).join(", ")}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section aria-labelledby="why-h">
        <h2 id="why-h">Why not selected</h2>
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            const n = lookup.trim();
            if (!n) return;
            api
              .get(`${MC_PATH}/${encodeURIComponent(n)}`)
              .then(setLooked)
              .catch(() => setLooked("missing"));
          }}
        >
          <label>
            Explain a cluster
            <input value={lookup} placeholder="cluster name" onInput={(e) => setLookup((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit">Explain</button>
        </form>
        {looked === "missing" && <p class="error">No cluster named {lookup}.</p>}
        {looked && looked !== "missing" && (
          <p class="notice" role="status" data-explained={looked.metadata.name}>
            <strong>{looked.metadata.name}</strong>: {explain(looked, ctx).message}
          </p>
        )}
        {notSelected.length === 0 ? (
          <p class="muted">Every cluster shown is selected.</p>
        ) : (
          <div class="table-wrap">
            <table class="why">
              <thead>
                <tr>
                  <th scope="col">Cluster</th>
                  <th scope="col">Reason</th>
                  <th scope="col">Detail</th>
                </tr>
              </thead>
              <tbody>
                {notSelected.map(({ mc, v }) => (
                  <tr key={mc.metadata.name} data-why={mc.metadata.name} data-reason={v.reason}>
                    <th scope="row">
                      <a href={`#/clusters/${encodeURIComponent(mc.metadata.name)}`}>{mc.metadata.name}</a>
                    </th>
                    <td>
                      <StateBadge state={v.reason} />
                    </td>
                    <td class="msg">{v.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {clusters.hasMore && <p class="muted small">The first {EXPLAINED} clusters of the fleet are explained here; ask for any other by name above.</p>}
      </section>
      <section aria-labelledby="pev-h">
        <h2 id="pev-h">Events</h2>
        <EventList api={api} regarding={{ kind: "Placement", name }} namespace={namespace} limit={50} />
      </section>
    </div>
  );
}

/** The placements view: the list, or one placement when `namespace` and `name` are given. */
export function Placements({ api, namespace, name }: { api: Api; namespace?: string; name?: string }) {
  return namespace && name ? <PlacementDetail api={api} namespace={namespace} name={name} /> : <PlacementList api={api} />;
}
