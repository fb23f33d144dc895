/**
 * The two lists of a view over a cluster-scoped kind and its namespaced twin (KubeFleet's
 * ClusterResourcePlacement / ResourcePlacement, ClusterStagedUpdateRun / StagedUpdateRun): the
 * cluster-scoped objects for a user who may list across namespaces, and the namespaced ones of the
 * namespace picked in the header (or all namespaces), each paged and live by watch.
 */
import type { JSX } from "preact";
import type { Api, KubeObject } from "./api.ts";
import { useLiveList } from "./live.ts";
import { isForbidden, scopedPath, useScope } from "./scope.tsx";
import { ErrorNote } from "./widgets.tsx";

/** One of the two kinds: its kind name and its resource (plural) under `base`. */
export interface ListedKind {
  kind: string;
  resource: string;
}

/**
 * The lists of `cluster` and `namespaced` under `base` (an API group-version path, e.g.
 * `/apis/placement.kubernetes-fleet.io/v1`), 100 to a page, each drawn by `table` (its items, and
 * whether they are namespaced).
 */
export function KindLists({
  api,
  base,
  cluster,
  namespaced,
  table,
}: {
  api: Api;
  base: string;
  cluster: ListedKind;
  namespaced: ListedKind;
  table: (items: KubeObject[], namespaced: boolean) => JSX.Element;
}) {
  const { namespace, clusterWide } = useScope();
  const wide = useLiveList(api, clusterWide ? `${base}/${cluster.resource}` : null, { limit: 100 });
  const scoped = useLiveList(api, clusterWide === undefined ? null : scopedPath(base, namespace, namespaced.resource), { limit: 100 });
  return (
    <>
      <section aria-labelledby={`${cluster.resource}-h`}>
        <h2 id={`${cluster.resource}-h`}>{cluster.kind}s</h2>
        {clusterWide === false ? (
          <p class="muted">Cluster-scoped: shown to users who may list across namespaces.</p>
        ) : (
          <>
            <ErrorNote error={wide.error} />
            {!wide.loading && !wide.error && wide.items.length === 0 && <p class="muted">No {cluster.kind}.</p>}
            {wide.items.length > 0 && table(wide.items, false)}
            {wide.hasMore && (
              <button type="button" onClick={wide.more}>
                More {cluster.kind}s
              </button>
            )}
          </>
        )}
      </section>
      <section aria-labelledby={`${namespaced.resource}-h`}>
        <h2 id={`${namespaced.resource}-h`}>{namespaced.kind}s</h2>
        <p class="muted">{namespace ? `In namespace ${namespace}.` : "In all namespaces."}</p>
        {isForbidden(scoped.error) ? (
          <p class="muted">
            Your access does not include the {namespaced.kind}s{namespace ? ` of namespace ${namespace}` : ""}.
          </p>
        ) : (
          <ErrorNote error={scoped.error} />
        )}
        {!scoped.loading && !scoped.error && scoped.items.length === 0 && <p class="muted">No {namespaced.kind}.</p>}
        {scoped.items.length > 0 && table(scoped.items, true)}
        {scoped.hasMore && (
          <button type="button" onClick={scoped.more}>
            More {namespaced.kind}s
          </button>
        )}
      </section>
    </>
  );
}
