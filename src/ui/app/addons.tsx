/**
 * OCM's add-ons (docs/ocm-compatibility.md, docs/overrides.md "Template add-ons"): the list of
 * ClusterManagementAddOns (for a user who may list them: cluster-scoped), and one add-on's page:
 * its install strategy, its ManagedClusterAddOns one row per cluster (Available, Progressing,
 * Overridden: the ClusterResourceOverrides naming the add-on, and why one fails there), and,
 * beside the template, what it renders for a chosen cluster (its `render` subresource,
 * src/addons/dry-run.ts: the manifests of the cluster's deploy work, overrides applied; the panel
 * of src/ui/app/resourceplacements.tsx). Everything is watched, so a rollout moves on the page.
 * Routes: `#/addons`, `#/addons/<name>`.
 */
import type { Api, KubeObject } from "./api.ts";
import { condition, type Condition } from "./format.ts";
import { useLiveList, useLiveObject } from "./live.ts";
import { useScope } from "./scope.tsx";
import { ConditionBadge, Conditions, ErrorNote, useNow } from "./widgets.tsx";
import { RenderedForCluster } from "./resourceplacements.tsx";

const A = "/apis/addon.open-cluster-management.io/v1alpha1";
const CMAS = `${A}/clustermanagementaddons`;
const MCAS = `${A}/managedclusteraddons`;

/** A condition of `o` as a badge (`—` until the manager sets it). */
function Badge({ o, type }: { o: KubeObject; type: string }) {
  const c = condition(o, type);
  return c ? <ConditionBadge condition={c} label={c.reason ?? c.status} /> : <span class="muted">—</span>;
}

function AddonList({ api }: { api: Api }) {
  const { clusterWide } = useScope();
  const list = useLiveList(api, clusterWide ? CMAS : null, { limit: 100 });
  return (
    <div class="view" data-view="addons">
      <h1>Add-ons</h1>
      <p class="muted">ClusterManagementAddOns: an agent installed on the clusters of their placements, each cluster's rendered from its template.</p>
      {clusterWide === false && <p class="muted">Listing add-ons needs a cluster-wide read of clustermanagementaddons.</p>}
      <ErrorNote error={list.error} />
      {!list.loading && clusterWide && list.items.length === 0 && <p class="muted">No ClusterManagementAddOn.</p>}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Install strategy</th>
              <th scope="col">Display name</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((a) => (
              <tr key={a.metadata.name}>
                <th scope="row">
                  <a href={`#/addons/${encodeURIComponent(a.metadata.name)}`}>{a.metadata.name}</a>
                </th>
                <td>{(a.spec?.installStrategy as { type?: string } | undefined)?.type ?? "Manual"}</td>
                <td>{(a.spec?.addOnMeta as { displayName?: string } | undefined)?.displayName ?? "—"}</td>
              </tr>
            ))}
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

function AddonDetail({ api, name }: { api: Api; name: string }) {
  const { obj: cma, error } = useLiveObject(api, CMAS, name);
  const mcas = useLiveList(api, MCAS, { fieldSelector: `metadata.name=${name}`, limit: 500 });
  const nowMs = useNow(5000);
  if (error) return <ErrorNote error={error} what={`ClusterManagementAddOn ${name}`} />;
  if (!cma) return <p class="muted">Loading {name}…</p>;
  const installed = [...mcas.items].sort((a, b) => (a.metadata.namespace! < b.metadata.namespace! ? -1 : 1));
  const clusters = installed.map((m) => m.metadata.namespace!);
  // Read again when the add-on or any of its clusters' add-ons moves (a config or an override rolled out).
  const version = [cma.metadata.resourceVersion ?? "", ...installed.map((m) => m.metadata.resourceVersion ?? "")].join(",");
  const strategy = cma.spec?.installStrategy as { type?: string; placements?: { namespace: string; name: string }[] } | undefined;
  return (
    <div class="view" data-view="addon">
      <p>
        <a href="#/addons">Add-ons</a>
      </p>
      <h1>{name}</h1>
      <p>
        Install strategy: {strategy?.type ?? "Manual"}
        {(strategy?.placements ?? []).map((p) => (
          <span key={`${p.namespace}/${p.name}`}>
            {" "}
            <a href={`#/placements/${encodeURIComponent(p.namespace)}/${encodeURIComponent(p.name)}`}>
              {p.namespace}/{p.name}
            </a>
          </span>
        ))}
      </p>
      <section aria-labelledby="am-h">
        <h2 id="am-h">Clusters ({installed.length})</h2>
        <ErrorNote error={mcas.error} />
        {!mcas.loading && installed.length === 0 && <p class="muted">Installed on no cluster.</p>}
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Cluster</th>
                <th scope="col">Available</th>
                <th scope="col">Progressing</th>
                <th scope="col">Overridden</th>
              </tr>
            </thead>
            <tbody>
              {installed.map((m) => (
                <tr key={m.metadata.namespace} data-addon-cluster={m.metadata.namespace}>
                  <th scope="row">
                    <a href={`#/clusters/${encodeURIComponent(m.metadata.namespace!)}`}>{m.metadata.namespace}</a>
                  </th>
                  <td>
                    <Badge o={m} type="Available" />
                  </td>
                  <td>
                    <Badge o={m} type="Progressing" />
                  </td>
                  <td title={condition(m, "Overridden")?.message}>
                    <Badge o={m} type="Overridden" />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      <section aria-labelledby="ar-h">
        <h2 id="ar-h">Rendered for a cluster</h2>
        <RenderedForCluster api={api} path={`${CMAS}/${encodeURIComponent(name)}`} clusters={clusters} version={version} />
      </section>
      <section aria-labelledby="ac-h">
        <h2 id="ac-h">Conditions</h2>
        <Conditions
          conditions={(cma.status?.installProgressions as { conditions?: Condition[] }[] | undefined)?.flatMap((p) => p.conditions ?? [])}
          nowMs={nowMs}
        />
      </section>
    </div>
  );
}

/** The add-ons view: the list, or one ClusterManagementAddOn when `name` is given. */
export function Addons({ api, name }: { api: Api; name?: string }) {
  return name ? <AddonDetail api={api} name={name} /> : <AddonList api={api} />;
}
