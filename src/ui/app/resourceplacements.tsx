/**
 * KubeFleet's placements (docs/kubefleet.md): the list of ClusterResourcePlacements (for a user
 * who may list them: cluster-scoped) and of the ResourcePlacements of the namespace picked in the
 * header (or all namespaces), and one placement's page: its policy and strategy, its conditions,
 * the objects it selected (`status.selectedResources`, in KubeFleet's apply order), one row per
 * cluster with its Scheduled, RolloutStarted, Applied and Available conditions, failed and drifted
 * objects and the resource index it is at (src/kinds/fleet-summary.ts), the failed and drifted
 * objects themselves, the objects it renders for a chosen cluster beside their template with the
 * overrides applied (the hub's dry run, docs/overrides.md), and its events. Everything is watched,
 * so a rollout moves on the page.
 * Routes: `#/resourceplacements`, `#/resourceplacements/<crp>`, `#/resourceplacements/<ns>/<rp>`.
 */
import { useEffect, useState } from "preact/hooks";
import type { Api, KubeObject } from "./api.ts";
import { EventList } from "./events.tsx";
import { EvictionsAndBudgets } from "./evictions.tsx";
import { KindLists } from "./kind-lists.tsx";
import { condition } from "./format.ts";
import { useLiveObject } from "./live.ts";
import { useScope } from "./scope.tsx";
import { ConditionBadge, Conditions, ErrorNote, useNow } from "./widgets.tsx";
import { apiVersionOf, clusterDone, placementSummary, type PerClusterPlacementStatus } from "../../kinds/fleet-summary.ts";

const FLEET = "/apis/placement.kubernetes-fleet.io/v1";
const CRPS = `${FLEET}/clusterresourceplacements`;

/** The hub's dry run of a placement for one cluster (its `render` subresource: src/fleet/dry-run.ts `PlacementRender`). */
interface PlacementRender {
  cluster: string;
  scheduled: boolean;
  template: unknown[];
  objects: unknown[];
  clusterResourceOverrides: string[];
  resourceOverrides: { name: string; namespace: string }[];
  /** Karmada's ClusterOverridePolicies' rules applied there (absent from a hub before them). */
  appliedClusterOverrides?: { policyName: string }[];
  /** Karmada's OverridePolicies' rules applied there. */
  appliedOverrides?: { policyName: string }[];
  error?: string;
}

/** A line of pretty JSON without its trailing comma (a line that became the last of its object is not a change). */
const bare = (line: string) => (line.endsWith(",") ? line.slice(0, -1) : line);

/** The lines of `objects` as pretty JSON, each marked when `against` (the other pane's lines) lacks it. */
function paneLines(objects: unknown[], against: unknown[]): { text: string; changed: boolean }[] {
  const others = new Set(JSON.stringify(against, null, 2).split("\n").map(bare));
  return JSON.stringify(objects, null, 2)
    .split("\n")
    .map((text) => ({ text, changed: !others.has(bare(text)) }));
}

/**
 * For a cluster chosen among the placement's (or a ManifestWorkReplicaSet's: the same
 * subresource, src/ui/app/replicasets.tsx), the objects the placement renders for it beside
 * its template (the hub's dry run, the `render` subresource: what the cluster's agent would
 * receive), the lines the overrides changed marked, and the override snapshots applied or why
 * one fails there. Read again whenever the placement changes (`version`, its resourceVersion:
 * its status moves with every rollout step and override change), so the panes follow a rollout.
 */
export function RenderedForCluster({ api, path, clusters, version }: { api: Api; path: string; clusters: string[]; version: string }) {
  const [chosen, setChosen] = useState("");
  const cluster = clusters.includes(chosen) ? chosen : (clusters[0] ?? "");
  const [state, setState] = useState<{ r?: PlacementRender; error?: Error }>({});
  useEffect(() => {
    if (!cluster) return;
    const ctl = new AbortController();
    api.request<PlacementRender>("GET", `${path}/render?cluster=${encodeURIComponent(cluster)}`, undefined, undefined, ctl.signal).then(
      (r) => setState({ r }),
      (error: Error) => {
        if (!ctl.signal.aborted) setState({ error });
      },
    );
    return () => ctl.abort();
  }, [api, path, cluster, version]);
  if (clusters.length === 0) return <p class="muted">No cluster to render for yet.</p>;
  const r = state.r?.cluster === cluster ? state.r : undefined;
  const applied = r
    ? [
        ...r.clusterResourceOverrides.map((n) => `ClusterResourceOverrideSnapshot ${n}`),
        ...r.resourceOverrides.map((o) => `ResourceOverrideSnapshot ${o.namespace}/${o.name}`),
        ...[...new Set((r.appliedClusterOverrides ?? []).map((o) => o.policyName))].map((n) => `ClusterOverridePolicy ${n}`),
        ...[...new Set((r.appliedOverrides ?? []).map((o) => o.policyName))].map((n) => `OverridePolicy ${n}`),
      ]
    : [];
  return (
    <div data-rendered={cluster} data-render-state={r ? (r.error !== undefined ? "failed" : "rendered") : "loading"}>
      <label>
        Cluster{" "}
        <select data-render-cluster value={cluster} onChange={(e) => setChosen((e.target as HTMLSelectElement).value)}>
          {clusters.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
      </label>
      <ErrorNote error={state.error} what={`Rendering for ${cluster}`} />
      {r && (
        <>
          <p data-overrides-applied={applied.join(",")}>Overrides applied: {applied.length > 0 ? applied.join(", ") : "none"}</p>
          {r.error !== undefined && (
            <p class="error" role="alert" data-render-error>
              {r.error} (nothing is rendered for {cluster}; it keeps the works it had)
            </p>
          )}
          <div class="panes">
            <section aria-label="Template">
              <h3>Template</h3>
              <pre class="code" data-pane="template">
                {paneLines(r.template, r.error !== undefined ? r.template : r.objects).map((l, i) => (
                  <span key={i} class={l.changed ? "changed" : undefined}>
                    {l.text}
                    {"\n"}
                  </span>
                ))}
              </pre>
            </section>
            <section aria-label={`Rendered for ${cluster}`}>
              <h3>Rendered for {cluster}</h3>
              <pre class="code" data-pane="rendered">
                {paneLines(r.objects, r.template).map((l, i) => (
                  <span key={i} class={l.changed ? "changed" : undefined} data-changed={l.changed ? "true" : undefined}>
                    {l.text}
                    {"\n"}
                  </span>
                ))}
              </pre>
            </section>
          </div>
        </>
      )}
    </div>
  );
}

/** The page of a placement: a ClusterResourcePlacement by name, a ResourcePlacement by namespace and name. */
export function placementHref(p: KubeObject): string {
  const parts = p.metadata.namespace ? [p.metadata.namespace, p.metadata.name] : [p.metadata.name];
  return `#/resourceplacements/${parts.map(encodeURIComponent).join("/")}`;
}

/** A placement condition's status as a badge (`—` when the controller has not set it yet). */
function PlacementBadge({ p, type }: { p: KubeObject; type: string }) {
  const prefix = p.metadata.namespace ? "ResourcePlacement" : "ClusterResourcePlacement";
  const c = condition(p, `${prefix}${type}`);
  return c ? <ConditionBadge condition={c} /> : <>—</>;
}

/** The rows of a list of placements: name, policy, Scheduled, Applied, Available, clusters placed, resource index, selected objects. */
function PlacementTable({ items, namespaced }: { items: KubeObject[]; namespaced: boolean }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            {namespaced && <th scope="col">Namespace</th>}
            <th scope="col">Name</th>
            <th scope="col">Policy</th>
            <th scope="col">Scheduled</th>
            <th scope="col">Applied</th>
            <th scope="col">Available</th>
            <th scope="col">Clusters</th>
            <th scope="col">Resource index</th>
            <th scope="col">Selected</th>
          </tr>
        </thead>
        <tbody>
          {items.map((p) => {
            const s = placementSummary(p);
            const placed = s.clusters.filter((c) => c.cluster !== null);
            return (
              <tr key={`${p.metadata.namespace ?? ""}/${p.metadata.name}`} data-placement={s.namespace ? `${s.namespace}/${s.name}` : s.name}>
                {namespaced && <td>{p.metadata.namespace}</td>}
                <th scope="row">
                  <a href={placementHref(p)}>{p.metadata.name}</a>
                </th>
                <td>{s.placementType === "PickN" ? `PickN ${s.numberOfClusters ?? 0}` : (s.placementType ?? "—")}</td>
                <td>
                  <PlacementBadge p={p} type="Scheduled" />
                </td>
                <td>
                  <PlacementBadge p={p} type="Applied" />
                </td>
                <td>
                  <PlacementBadge p={p} type="Available" />
                </td>
                <td class="num" title="clusters available / clusters placed">
                  {placed.filter(clusterDone).length}/{placed.length}
                </td>
                <td class="num">{s.observedResourceIndex ?? "—"}</td>
                <td class="num">{s.selectedResources.length}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function PlacementList({ api }: { api: Api }) {
  const { clusterWide } = useScope();
  return (
    <div class="view" data-view="resourceplacements">
      <h1>Resource placements</h1>
      <p class="muted">KubeFleet's ClusterResourcePlacements and ResourcePlacements: which objects of the hub go to which clusters.</p>
      <KindLists
        api={api}
        base={FLEET}
        cluster={{ kind: "ClusterResourcePlacement", resource: "clusterresourceplacements" }}
        namespaced={{ kind: "ResourcePlacement", resource: "resourceplacements" }}
        table={(items, namespaced) => <PlacementTable items={items} namespaced={namespaced} />}
      />
      <EvictionsAndBudgets api={api} clusterWide={clusterWide} />
    </div>
  );
}

/** One failed or drifted object of a cluster (KubeFleet's `FailedResourcePlacement` / `DriftedResourcePlacement`), as read. */
interface Problem {
  kind: string;
  name: string;
  namespace?: string;
  condition?: { reason?: string; message?: string };
  observedDrifts?: { path: string; valueInMember?: string; valueInHub?: string }[];
}

function PlacementDetail({ api, namespace, name }: { api: Api; namespace?: string; name: string }) {
  const collection = namespace ? `${FLEET}/namespaces/${encodeURIComponent(namespace)}/resourceplacements` : CRPS;
  const kind = namespace ? "ResourcePlacement" : "ClusterResourcePlacement";
  const { obj: p, error } = useLiveObject(api, collection, name);
  const nowMs = useNow(10_000);
  if (error) return <ErrorNote error={error} what={`${kind} ${namespace ? `${namespace}/` : ""}${name}`} />;
  if (!p)
    return (
      <p class="muted">
        Loading {kind} {name}…
      </p>
    );
  const s = placementSummary(p);
  const statuses = (p.status?.placementStatuses ?? []) as PerClusterPlacementStatus[];
  const strategy = (p.spec?.strategy ?? {}) as {
    type?: string;
    rollingUpdate?: { maxUnavailable?: number | string; maxSurge?: number | string; unavailablePeriodSeconds?: number };
    applyStrategy?: { type?: string };
  };
  const placed = s.clusters.filter((c) => c.cluster !== null);
  const problems = statuses.flatMap((st) => [
    ...((st.failedPlacements ?? []) as Problem[]).map((f) => ({ cluster: st.clusterName ?? "", what: "Failed", f })),
    ...((st.driftedPlacements ?? []) as Problem[]).map((f) => ({ cluster: st.clusterName ?? "", what: "Drifted", f })),
  ]);
  return (
    <div class="view" data-view="resourceplacement" data-generation={p.metadata.generation} data-index={s.observedResourceIndex ?? ""}>
      <p class="crumbs">
        <a href="#/resourceplacements">Resource placements</a> / {namespace ? `${namespace} / ` : ""}
        {name}
      </p>
      <h1>
        {name} {condition(p, `${kind}Available`) && <PlacementBadge p={p} type="Available" />}
      </h1>
      <dl class="facts">
        <dt>Kind</dt>
        <dd>{kind}</dd>
        {namespace && (
          <>
            <dt>Namespace</dt>
            <dd>{namespace}</dd>
          </>
        )}
        <dt>Policy</dt>
        <dd>
          {s.placementType === "PickN" ? `PickN, ${s.numberOfClusters ?? 0} cluster(s)` : (s.placementType ?? "PickAll")}
          {s.placementType === "PickFixed" && `: ${((p.spec?.policy?.clusterNames ?? []) as string[]).join(", ")}`}
        </dd>
        <dt>Rollout</dt>
        <dd>
          {strategy.type ?? "RollingUpdate"}
          {strategy.rollingUpdate &&
            `: maxUnavailable ${strategy.rollingUpdate.maxUnavailable ?? "25%"}, maxSurge ${strategy.rollingUpdate.maxSurge ?? "25%"}, unavailable period ${strategy.rollingUpdate.unavailablePeriodSeconds ?? 60}s`}
        </dd>
        <dt>Apply strategy</dt>
        <dd>{strategy.applyStrategy?.type ?? "ClientSideApply"}</dd>
        <dt>Generation</dt>
        <dd>{p.metadata.generation ?? "—"}</dd>
        <dt>Resource index</dt>
        <dd data-observed-index>{s.observedResourceIndex ?? "—"}</dd>
      </dl>
      <section aria-labelledby="rpc-h">
        <h2 id="rpc-h">Conditions</h2>
        <Conditions conditions={s.conditions} nowMs={nowMs} />
      </section>
      <section aria-labelledby="rps-sel-h">
        <h2 id="rps-sel-h">Selected resources ({s.selectedResources.length})</h2>
        {s.selectedResources.length === 0 ? (
          <p class="muted">Nothing selected yet.</p>
        ) : (
          <div class="table-wrap">
            <table data-selected-resources>
              <thead>
                <tr>
                  <th scope="col">Kind</th>
                  <th scope="col">Namespace</th>
                  <th scope="col">Name</th>
                  <th scope="col">API version</th>
                  <th scope="col">Envelope</th>
                </tr>
              </thead>
              <tbody>
                {s.selectedResources.map((r) => (
                  <tr key={`${apiVersionOf(r)}/${r.kind}/${r.namespace ?? ""}/${r.name}/${r.envelope?.name ?? ""}`} data-resource={`${r.kind}/${r.name}`}>
                    <td>{r.kind}</td>
                    <td>{r.namespace ?? "—"}</td>
                    <th scope="row">{r.name}</th>
                    <td>{apiVersionOf(r)}</td>
                    <td>{r.envelope ? `${r.envelope.type ?? "envelope"} ${r.envelope.name}` : "—"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section aria-labelledby="rps-cl-h">
        <h2 id="rps-cl-h">
          Clusters ({placed.filter(clusterDone).length} of {placed.length} available
          {s.clusters.length > placed.length ? `, ${s.clusters.length - placed.length} not found` : ""})
        </h2>
        {s.clusters.length === 0 ? (
          <p class="muted">No cluster yet.</p>
        ) : (
          <div class="table-wrap">
            <table class="per-cluster">
              <thead>
                <tr>
                  <th scope="col">Cluster</th>
                  <th scope="col">Scheduled</th>
                  <th scope="col">Rollout</th>
                  <th scope="col">Applied</th>
                  <th scope="col">Available</th>
                  <th scope="col">Failed</th>
                  <th scope="col">Drifted</th>
                  <th scope="col">Index</th>
                  <th scope="col">Waiting for</th>
                </tr>
              </thead>
              <tbody>
                {statuses.map((st, i) => {
                  const c = s.clusters[i]!;
                  const badge = (type: string) => {
                    const cond = st.conditions?.find((x) => x.type === type);
                    return cond ? <ConditionBadge condition={cond} /> : <>—</>;
                  };
                  return (
                    <tr
                      key={c.cluster ?? `slot-${i}`}
                      data-cluster={c.cluster ?? ""}
                      data-applied={c.applied}
                      data-available={c.available}
                      data-index={c.observedResourceIndex ?? ""}
                      data-done={clusterDone(c) ? "true" : "false"}
                    >
                      <th scope="row">{c.cluster ? <a href={`#/clusters/${encodeURIComponent(c.cluster)}`}>{c.cluster}</a> : "(no cluster)"}</th>
                      <td>{badge("Scheduled")}</td>
                      <td>{badge("RolloutStarted")}</td>
                      <td>{badge("Applied")}</td>
                      <td>{badge("Available")}</td>
                      <td class="num">{c.failed}</td>
                      <td class="num">{c.drifted}</td>
                      <td class="num">{c.observedResourceIndex ?? "—"}</td>
                      <td class="msg" title={c.message ?? ""}>
                        {c.waiting ? `${c.waiting}${c.message ? ` (${c.message})` : ""}` : "—"}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
        {problems.length > 0 && (
          <>
            <h3>Failed and drifted objects</h3>
            <ul class="problems">
              {problems.map(({ cluster, what, f }, i) => (
                <li key={i} data-problem={`${cluster}/${what}/${f.kind}/${f.name}`}>
                  <strong>{what}</strong> on {cluster}: {f.kind} {f.namespace ? `${f.namespace}/` : ""}
                  {f.name}
                  {f.condition ? ` (${f.condition.reason ?? ""}${f.condition.message ? `: ${f.condition.message}` : ""})` : ""}
                  {f.observedDrifts?.length ? ` ${f.observedDrifts.map((d) => d.path).join(", ")}` : ""}
                </li>
              ))}
            </ul>
          </>
        )}
      </section>
      <section aria-labelledby="rpr-h">
        <h2 id="rpr-h">Rendered for a cluster</h2>
        <RenderedForCluster
          api={api}
          path={`${collection}/${encodeURIComponent(name)}`}
          clusters={placed.map((c) => c.cluster!).filter((c, i, all) => all.indexOf(c) === i)}
          version={p.metadata.resourceVersion ?? ""}
        />
      </section>
      <section aria-labelledby="rpev-h">
        <h2 id="rpev-h">Events</h2>
        <EventList api={api} regarding={{ kind, name }} namespace={namespace ?? "default"} limit={50} />
      </section>
    </div>
  );
}

/**
 * The resource placements view: the list, a ClusterResourcePlacement's page (`args` its name), or
 * a ResourcePlacement's (`args` its namespace and name).
 */
export function ResourcePlacements({ api, args }: { api: Api; args: string[] }) {
  if (args.length >= 2) return <PlacementDetail api={api} namespace={args[0]} name={args[1]!} />;
  if (args.length === 1) return <PlacementDetail api={api} name={args[0]!} />;
  return <PlacementList api={api} />;
}
