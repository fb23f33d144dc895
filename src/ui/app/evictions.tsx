/**
 * KubeFleet's evictions and disruption budgets on the placements' page (docs/kubefleet.md
 * "Evictions, budgets, drain"), read-only: each ClusterResourcePlacementEviction with its placement,
 * cluster, `Valid` and `Executed` conditions and the decision's message, and each
 * ClusterResourcePlacementDisruptionBudget with its `maxUnavailable` / `minAvailable`. Both are
 * cluster-scoped: shown to a user who may list across namespaces. Watched, so a drain's evictions
 * appear and are decided on the page.
 */
import type { Api, KubeObject } from "./api.ts";
import { condition } from "./format.ts";
import { useLiveList } from "./live.ts";
import { ConditionBadge, ErrorNote } from "./widgets.tsx";

const FLEET_V1BETA1 = "/apis/placement.kubernetes-fleet.io/v1beta1";

function Badge({ o, type }: { o: KubeObject; type: string }) {
  const c = condition(o, type);
  return c ? <ConditionBadge condition={c} /> : <>—</>;
}

/** The evictions and budgets sections; `clusterWide` whether the user may list cluster-scoped kinds (undefined: not known yet). */
export function EvictionsAndBudgets({ api, clusterWide }: { api: Api; clusterWide: boolean | undefined }) {
  const evictions = useLiveList(api, clusterWide ? `${FLEET_V1BETA1}/clusterresourceplacementevictions` : null, { limit: 100 });
  const budgets = useLiveList(api, clusterWide ? `${FLEET_V1BETA1}/clusterresourceplacementdisruptionbudgets` : null, { limit: 100 });
  if (clusterWide === false) return null;
  return (
    <>
      <section aria-labelledby="crpe-h">
        <h2 id="crpe-h">Evictions</h2>
        <p class="muted">ClusterResourcePlacementEvictions: one placement's objects removed from one cluster, as its disruption budget allows.</p>
        <ErrorNote error={evictions.error} />
        {!evictions.loading && !evictions.error && evictions.items.length === 0 && <p class="muted">No eviction.</p>}
        {evictions.items.length > 0 && (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Placement</th>
                  <th scope="col">Cluster</th>
                  <th scope="col">Valid</th>
                  <th scope="col">Executed</th>
                  <th scope="col">Message</th>
                </tr>
              </thead>
              <tbody>
                {evictions.items.map((e) => {
                  const spec = (e.spec ?? {}) as { placementName?: string; clusterName?: string };
                  const decided = condition(e, "Executed") ?? condition(e, "Valid");
                  return (
                    <tr key={e.metadata.name} data-eviction={e.metadata.name}>
                      <th scope="row">{e.metadata.name}</th>
                      <td>{spec.placementName}</td>
                      <td>{spec.clusterName}</td>
                      <td>
                        <Badge o={e} type="Valid" />
                      </td>
                      <td>
                        <Badge o={e} type="Executed" />
                      </td>
                      <td>{decided?.message ?? "—"}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section aria-labelledby="crpdb-h">
        <h2 id="crpdb-h">Disruption budgets</h2>
        <p class="muted">ClusterResourcePlacementDisruptionBudgets, each named as its placement.</p>
        <ErrorNote error={budgets.error} />
        {!budgets.loading && !budgets.error && budgets.items.length === 0 && <p class="muted">No disruption budget.</p>}
        {budgets.items.length > 0 && (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Placement</th>
                  <th scope="col">Max unavailable</th>
                  <th scope="col">Min available</th>
                </tr>
              </thead>
              <tbody>
                {budgets.items.map((b) => {
                  const spec = (b.spec ?? {}) as { maxUnavailable?: number | string; minAvailable?: number | string };
                  return (
                    <tr key={b.metadata.name} data-budget={b.metadata.name}>
                      <th scope="row">{b.metadata.name}</th>
                      <td class="num">{spec.maxUnavailable ?? "—"}</td>
                      <td class="num">{spec.minAvailable ?? "—"}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}
