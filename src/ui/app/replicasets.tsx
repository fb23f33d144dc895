/**
 * ManifestWorkReplicaSets: the list (the namespace picked in the header, or all namespaces; in pages) with their summary, and one replica
 * set's rollout: per placement and decision group, each cluster's rollout status as the hub's
 * controller classifies it, with the same function (src/work/rollout.ts `classifyRollout`): a
 * cluster whose work does not carry the current template is still to apply; the others are
 * succeeded, progressing, failed or timed out (past `progressDeadline`).
 * Beside them, what it renders for a chosen cluster (its `render` subresource, docs/overrides.md:
 * the manifests of that cluster's work, its ResourceOverrides applied, beside the template; the
 * panel of src/ui/app/resourceplacements.tsx), for any cluster its placements decide.
 * The replica set, its placements' decisions and its works are watched.
 */
import { useMemo } from "preact/hooks";
import { classifyRollout, type DecisionGroup, type RolloutStatus, type RolloutStrategy } from "../../work/rollout.ts";
import { canonicalJson } from "../../k8s/canonical-json.ts";
import type { Api, KubeObject } from "./api.ts";
import { EventList } from "./events.tsx";
import { condition, type Condition } from "./format.ts";
import { useLiveList, useLiveObject } from "./live.ts";
import { isForbidden, scopedPath, useScope } from "./scope.tsx";
import { ConditionBadge, Conditions, ErrorNote, StateBadge, useNow } from "./widgets.tsx";
import { RenderedForCluster } from "./resourceplacements.tsx";

const MWRS = "/apis/work.open-cluster-management.io/v1alpha1";
const WORKS = "/apis/work.open-cluster-management.io/v1/manifestworks";
const G = "/apis/cluster.open-cluster-management.io/v1beta1";
const MWRS_LABEL = "work.open-cluster-management.io/manifestworkreplicaset";
const GROUP_INDEX_LABEL = "cluster.open-cluster-management.io/decision-group-index";
const GROUP_NAME_LABEL = "cluster.open-cluster-management.io/decision-group-name";

function Summary({ s }: { s?: { total?: number; applied?: number; available?: number; progressing?: number; degraded?: number } }) {
  if (!s) return <span class="muted">—</span>;
  return (
    <span class="summary">
      {s.available ?? 0}/{s.total ?? 0} available{s.progressing ? `, ${s.progressing} progressing` : ""}
      {s.degraded ? `, ${s.degraded} degraded` : ""}
    </span>
  );
}

function ReplicaSetList({ api }: { api: Api }) {
  const { namespace, clusterWide } = useScope();
  const list = useLiveList(api, clusterWide === undefined ? null : scopedPath(MWRS, namespace, "manifestworkreplicasets"), { limit: 100 });
  return (
    <div class="view" data-view="replicasets">
      <h1>Rollouts</h1>
      <p class="muted">{namespace ? `In namespace ${namespace}.` : "In all namespaces."}</p>
      <p class="muted">ManifestWorkReplicaSets: one template rolled out to the clusters of their placements.</p>
      <ErrorNote error={list.error} />
      {!list.loading && list.items.length === 0 && <p class="muted">No ManifestWorkReplicaSet.</p>}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Namespace</th>
              <th scope="col">Name</th>
              <th scope="col">Rolled out</th>
              <th scope="col">Works</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((r) => {
              const ro = condition(r, "PlacementRolledOut");
              return (
                <tr key={`${r.metadata.namespace}/${r.metadata.name}`}>
                  <td>{r.metadata.namespace}</td>
                  <th scope="row">
                    <a href={`#/replicasets/${encodeURIComponent(r.metadata.namespace!)}/${encodeURIComponent(r.metadata.name)}`}>{r.metadata.name}</a>
                  </th>
                  <td>{ro ? <ConditionBadge condition={ro} label={ro.reason ?? ro.status} /> : "—"}</td>
                  <td>
                    <Summary s={r.status?.summary} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {list.hasMore && (
        <button type="button" onClick={list.more}>
          More
        </button>
      )}
    </div>
  );
}

/** A placement's decision groups from its PlacementDecisions' group labels, by index. */
function groupsOf(decisions: KubeObject[]): DecisionGroup[] {
  const byIndex = new Map<number, DecisionGroup>();
  for (const d of decisions) {
    const index = Number(d.metadata.labels?.[GROUP_INDEX_LABEL] ?? 0);
    const g = byIndex.get(index) ?? { index, name: d.metadata.labels?.[GROUP_NAME_LABEL] ?? "", clusters: [] };
    for (const x of (d.status?.decisions ?? []) as { clusterName: string }[]) g.clusters.push(x.clusterName);
    byIndex.set(index, g);
  }
  return [...byIndex.values()].sort((a, b) => a.index - b.index).map((g) => ({ ...g, clusters: g.clusters.sort() }));
}

const ORDER: (RolloutStatus | "TimeOut")[] = ["Succeeded", "Progressing", "Failed", "TimeOut", "ToApply"];

function PlacementRollout({
  api,
  namespace,
  placement,
  strategy,
  works,
  templateJson,
  nowMs,
}: {
  api: Api;
  namespace: string;
  placement: string;
  strategy?: RolloutStrategy;
  works: Map<string, KubeObject>;
  templateJson: string;
  nowMs: number;
}) {
  const decisions = useLiveList(api, `${G}/namespaces/${encodeURIComponent(namespace)}/placementdecisions`, {
    labelSelector: `cluster.open-cluster-management.io/placement=${placement}`,
  });
  const groups = useMemo(() => groupsOf(decisions.items), [decisions.items]);
  // The hub's own classification (src/work/rollout.ts `classifyRollout`, which its controller
  // runs): a work whose spec is not the current template is ToApply, whatever its conditions say.
  let state = new Map<string, RolloutStatus>();
  let succeeded = 0;
  try {
    const c = classifyRollout(strategy, groups, works, templateJson, nowMs);
    state = c.state;
    succeeded = c.succeeded;
  } catch {
    // An invalid strategy: the hub reports it on the replica set's conditions.
  }
  const stateOf = (c: string): RolloutStatus => state.get(c) ?? "ToApply";
  const total = groups.reduce((n, g) => n + g.clusters.length, 0);
  return (
    <section class="rollout" data-placement={placement} aria-label={`Placement ${placement}`}>
      <h2>
        Placement <a href={`#/placements/${encodeURIComponent(namespace)}/${encodeURIComponent(placement)}`}>{placement}</a>{" "}
        <span class="muted small">{strategy?.type ?? "All"}</span>
      </h2>
      <div
        class="progress"
        role="progressbar"
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuenow={succeeded}
        aria-label={`${succeeded} of ${total} clusters succeeded`}
      >
        <span style={{ width: `${total ? (100 * succeeded) / total : 0}%` }} />
      </div>
      <p data-progress={`${succeeded}/${total}`}>
        {succeeded} of {total} clusters succeeded
      </p>
      <ErrorNote error={decisions.error} />
      {groups.map((g) => {
        const counts: Record<string, number> = {};
        for (const c of g.clusters) counts[stateOf(c)] = (counts[stateOf(c)] ?? 0) + 1;
        return (
          <div class="group" key={g.index} data-group={g.index}>
            <h3>
              Decision group {g.index}
              {g.name ? ` (${g.name})` : ""}:{" "}
              {ORDER.filter((s) => counts[s]).map((s) => (
                <span key={s} class="count">
                  {counts[s]} {s === "TimeOut" ? "timed out" : s === "ToApply" ? "to apply" : s.toLowerCase()}{" "}
                </span>
              ))}
            </h3>
            <ul class="chips">
              {g.clusters.map((c) => (
                <li key={c} data-cluster={c} data-rollout={stateOf(c)}>
                  <a href={`#/clusters/${encodeURIComponent(c)}`}>{c}</a> <StateBadge state={stateOf(c)} />
                </li>
              ))}
            </ul>
          </div>
        );
      })}
      {groups.length === 0 && !decisions.loading && <p class="muted">The placement has decided no cluster.</p>}
    </section>
  );
}

function ReplicaSetDetail({ api, namespace, name }: { api: Api; namespace: string; name: string }) {
  const { obj: rs, error } = useLiveObject(api, `${MWRS}/namespaces/${encodeURIComponent(namespace)}/manifestworkreplicasets`, name);
  const works = useLiveList(api, WORKS, { labelSelector: `${MWRS_LABEL}=${namespace}.${name}`, limit: 500 });
  const nowMs = useNow(5000);
  const byCluster = useMemo(() => new Map(works.items.map((w) => [w.metadata.namespace!, w])), [works.items]);
  // The clusters its placements decide (readable by a viewer of the namespace, who may not read the works).
  const decisions = useLiveList(api, `${G}/namespaces/${encodeURIComponent(namespace)}/placementdecisions`, {});
  const refNames = new Set(((rs?.spec?.placementRefs ?? []) as { name: string }[]).map((r) => r.name));
  const decided = [
    ...new Set(
      decisions.items
        .filter((d) => refNames.has(d.metadata.labels?.["cluster.open-cluster-management.io/placement"] ?? ""))
        .flatMap((d) => ((d.status?.decisions ?? []) as { clusterName: string }[]).map((x) => x.clusterName)),
    ),
  ].sort();
  if (error) return <ErrorNote error={error} what={`ManifestWorkReplicaSet ${namespace}/${name}`} />;
  if (!rs) return <p class="muted">Loading {name}…</p>;
  const refs = (rs.spec?.placementRefs ?? []) as { name: string; rolloutStrategy?: RolloutStrategy }[];
  // The spec a generated work carries at the current content (the ManifestWork kind defaults only `spec`).
  const templateJson = canonicalJson(rs.spec?.manifestWorkTemplate ?? {});
  return (
    <div class="view" data-view="replicaset">
      <p class="crumbs">
        <a href="#/replicasets">Rollouts</a> / {namespace} / {name}
      </p>
      <h1>{name}</h1>
      <p>
        <Summary s={rs.status?.summary} />
      </p>
      {isForbidden(works.error) && (
        <p class="muted" data-works-forbidden>
          Your access does not include the clusters' ManifestWorks: the rollout as the hub counts it is in the conditions below.
        </p>
      )}
      {!isForbidden(works.error) && <ErrorNote error={works.error} />}
      {!works.error &&
        refs.map((r) => (
          <PlacementRollout
            key={r.name}
            api={api}
            namespace={namespace}
            placement={r.name}
            strategy={r.rolloutStrategy}
            works={byCluster}
            templateJson={templateJson}
            nowMs={nowMs}
          />
        ))}
      <section aria-labelledby="rsr-h">
        <h2 id="rsr-h">Rendered for a cluster</h2>
        <RenderedForCluster
          api={api}
          path={`${MWRS}/namespaces/${encodeURIComponent(namespace)}/manifestworkreplicasets/${encodeURIComponent(name)}`}
          clusters={decided}
          version={rs.metadata.resourceVersion ?? ""}
        />
      </section>
      <section aria-labelledby="rc-h">
        <h2 id="rc-h">Conditions</h2>
        <Conditions conditions={rs.status?.conditions as Condition[]} nowMs={nowMs} />
      </section>
      <section aria-labelledby="rev-h">
        <h2 id="rev-h">Events</h2>
        <EventList api={api} regarding={{ kind: "ManifestWorkReplicaSet", name }} namespace={namespace} limit={50} />
      </section>
    </div>
  );
}

/** The rollouts view: the list, or one ManifestWorkReplicaSet when `namespace` and `name` are given. */
export function ReplicaSets({ api, namespace, name }: { api: Api; namespace?: string; name?: string }) {
  return namespace && name ? <ReplicaSetDetail api={api} namespace={namespace} name={name} /> : <ReplicaSetList api={api} />;
}
