/**
 * One cluster: its conditions, claims, labels, taints (add and remove, as `flotilla taint` edits
 * them: src/kinds/managedcluster-taints.ts), its ManifestWorks with their conditions and status feedback, its
 * events; accept or deny it (`spec.hubAcceptsClient`, OCM's hub side of the double opt-in, as
 * `flotilla accept`/`deny` and `clusteradm accept` do), and accept a registration's new key; its
 * lease (OCM's `managed-cluster-lease`: last renewal, age, duration), read every 15 s
 * (src/ui/app/leases.ts). The cluster and its works are watched.
 */
import { useState } from "preact/hooks";
import { addTaints, parseTaintSpec, removeTaints, TAINT_EFFECTS, type Taint } from "../../kinds/managedcluster-taints.ts";
import { ApiFailure, type Api, type KubeObject } from "./api.ts";
import { EventList } from "./events.tsx";
import {
  age,
  availabilitySince,
  clusterState,
  CLUSTERSET_LABEL,
  COLO_ANNOTATION,
  condition,
  leaseAgeSeconds,
  leaseLate,
  since,
  taintText,
  type Condition,
} from "./format.ts";
import { useLease } from "./leases.ts";
import { useLiveList } from "./live.ts";
import { isForbidden, useListOrView } from "./scope.tsx";
import { ConditionBadge, Conditions, ErrorNote, StateBadge, useNow } from "./widgets.tsx";

const MC_PATH = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
const PENDING_KEY_ANNOTATION = "flotilla.dev/pending-key-id";
const ACCEPT_KEY_ANNOTATION = "flotilla.dev/accept-key-id";

function Works({ api, cluster, nowMs }: { api: Api; cluster: string; nowMs: number }) {
  const works = useLiveList(api, `/apis/work.open-cluster-management.io/v1/namespaces/${encodeURIComponent(cluster)}/manifestworks`, { limit: 50 });
  return (
    <section aria-labelledby="works-h">
      <h2 id="works-h">Works</h2>
      {isForbidden(works.error) ? <p class="muted">Your access does not include this cluster's ManifestWorks.</p> : <ErrorNote error={works.error} />}
      {!works.loading && works.items.length === 0 && <p class="muted">No ManifestWork on this cluster.</p>}
      {works.items.map((w) => {
        const manifests = (w.status?.resourceStatus?.manifests ?? []) as {
          resourceMeta?: { kind?: string; name?: string; namespace?: string };
          conditions?: Condition[];
          statusFeedback?: { values?: { name: string; fieldValue?: Record<string, unknown> }[] };
        }[];
        return (
          <details class="work" key={w.metadata.name} data-work={w.metadata.name} open={works.items.length <= 3}>
            <summary>
              <strong>{w.metadata.name}</strong>{" "}
              {(["Applied", "Available", "Progressing", "Degraded"] as const).map((t) => {
                const c = condition(w, t);
                return c ? <ConditionBadge key={t} condition={c} label={`${t}=${c.status}`} /> : null;
              })}
            </summary>
            <Conditions conditions={w.status?.conditions} nowMs={nowMs} />
            {manifests.length > 0 && (
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Resource</th>
                      <th scope="col">Conditions</th>
                      <th scope="col">Feedback</th>
                    </tr>
                  </thead>
                  <tbody>
                    {manifests.map((m, i) => (
                      <tr key={i}>
                        <th scope="row">
                          {m.resourceMeta?.kind} {m.resourceMeta?.namespace ? `${m.resourceMeta.namespace}/` : ""}
                          {m.resourceMeta?.name}
                        </th>
                        <td>
                          {(m.conditions ?? []).map((c) => (
                            <ConditionBadge key={c.type} condition={c} label={`${c.type}=${c.status}`} />
                          ))}
                        </td>
                        <td>
                          {(m.statusFeedback?.values ?? []).map((v) => (
                            <div key={v.name}>
                              <code>{v.name}</code>:{" "}
                              {JSON.stringify(
                                Object.values(v.fieldValue ?? {}).find(
                                  (x) => x !== undefined && x !== "Integer" && x !== "String" && x !== "Boolean" && x !== "JsonRaw",
                                ) ?? v.fieldValue,
                              )}
                            </div>
                          ))}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </details>
        );
      })}
      {works.hasMore && (
        <button type="button" onClick={works.more}>
          More works
        </button>
      )}
    </section>
  );
}

function TaintEditor({ api, mc }: { api: Api; mc: KubeObject }) {
  const [text, setText] = useState("");
  const [effect, setEffect] = useState<string>("NoSelect");
  const [error, setError] = useState("");
  const taints = (mc.spec?.taints ?? []) as Taint[];
  /**
   * As `flotilla taint` does: reads the cluster, edits its taints and writes them back with its
   * resourceVersion as the precondition, again (up to 5 times) when a concurrent write (a status
   * report) answered 409 Conflict.
   */
  const write = async (edit: (current: Taint[]) => Taint[]) => {
    setError("");
    const path = `${MC_PATH}/${encodeURIComponent(mc.metadata.name)}`;
    for (let attempt = 0; ; attempt++) {
      try {
        const cur = await api.get(path);
        await api.mergePatch(path, {
          metadata: { resourceVersion: cur.metadata.resourceVersion },
          spec: { taints: edit((cur.spec?.taints ?? []) as Taint[]) },
        });
        return;
      } catch (e) {
        if (e instanceof ApiFailure && e.status === 409 && attempt < 5) continue;
        setError((e as Error).message);
        return;
      }
    }
  };
  return (
    <section aria-labelledby="taints-h">
      <h2 id="taints-h">Taints</h2>
      <ul class="taints">
        {taints.map((t) => (
          <li key={taintText(t)}>
            <code>{taintText(t)}</code>
            {t.timeAdded && <span class="muted small"> added {t.timeAdded}</span>}{" "}
            <button
              type="button"
              class="small"
              aria-label={`Remove taint ${taintText(t)}`}
              onClick={() => void write((cur) => removeTaints(cur, [{ key: t.key, effect: t.effect }]).taints)}
            >
              Remove
            </button>
          </li>
        ))}
        {taints.length === 0 && <li class="muted">No taints.</li>}
      </ul>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          try {
            const spec = parseTaintSpec(`${text.trim()}:${effect}`);
            void write((cur) => addTaints(cur, [spec]).taints).then(() => setText(""));
          } catch (err) {
            setError((err as Error).message);
          }
        }}
      >
        <label>
          Taint <span class="muted small">key[=value]</span>
          <input id="taint-new" value={text} required placeholder="maintenance=true" onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Effect
          <select value={effect} onChange={(e) => setEffect((e.target as HTMLSelectElement).value)}>
            {TAINT_EFFECTS.map((x) => (
              <option key={x}>{x}</option>
            ))}
          </select>
        </label>
        <button type="submit">Add taint</button>
      </form>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

/** The cluster view (see the module comment). */
export function ClusterView({ api, name }: { api: Api; name: string }) {
  const viewed = useListOrView(api, MC_PATH, "/apis/clusterview.open-cluster-management.io/v1/managedclusters", { fieldSelector: `metadata.name=${name}` });
  const mc = viewed.items.find((o) => o.metadata.name === name) ?? null;
  const error = viewed.error ?? (!viewed.loading && !mc && viewed.viaView ? new Error(`cluster ${name} is not in a cluster set you may see`) : undefined);
  const nowMs = useNow(5000);
  const [notice, setNotice] = useState("");
  const lease = useLease(api, name, mc?.metadata.resourceVersion);
  if (error) return <ErrorNote error={error} what={`Cluster ${name}`} />;
  if (!mc) return <p class="muted">Loading cluster {name}…</p>;
  const state = clusterState(mc);
  const path = `${MC_PATH}/${encodeURIComponent(name)}`;
  const decide = (accept: boolean) =>
    api
      .mergePatch(path, { spec: { hubAcceptsClient: accept } })
      .then(() => setNotice(accept ? `Cluster ${name} accepted.` : `Cluster ${name} denied.`))
      .catch((e: Error) => setNotice(e.message));
  const pendingKey = mc.metadata.annotations?.[PENDING_KEY_ANNOTATION];
  const claims = (mc.status?.clusterClaims ?? []) as { name: string; value: string }[];
  const avail = condition(mc, "ManagedClusterConditionAvailable");
  return (
    <div class="view" data-view="cluster">
      <p class="crumbs">
        <a href="#/">Fleet</a> / {name}
      </p>
      <h1>
        {name} <StateBadge state={state} />
      </h1>
      <div class="actions">
        {mc.spec?.hubAcceptsClient !== true ? (
          <button type="button" onClick={() => void decide(true)}>
            Accept cluster
          </button>
        ) : (
          <button type="button" class="danger" onClick={() => confirm(`Deny cluster ${name}? Its agent loses access.`) && void decide(false)}>
            Deny cluster
          </button>
        )}
        {pendingKey && (
          <button
            type="button"
            onClick={() =>
              void api
                .mergePatch(path, { metadata: { annotations: { [ACCEPT_KEY_ANNOTATION]: pendingKey } } })
                .then(() => setNotice(`Key ${pendingKey} accepted.`))
            }
          >
            Accept new key {pendingKey}
          </button>
        )}
      </div>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <dl class="facts">
        <dt>Kubernetes</dt>
        <dd>{mc.status?.version?.kubernetes ?? "—"}</dd>
        <dt>Cluster set</dt>
        <dd>{mc.metadata.labels?.[CLUSTERSET_LABEL] ?? "default"}</dd>
        <dt>Edge location</dt>
        <dd>{mc.metadata.annotations?.[COLO_ANNOTATION] ?? "—"}</dd>
        <dt data-since={avail?.status ?? ""}>{availabilitySince(avail?.status)}</dt>
        <dd>{avail?.lastTransitionTime ? `${age(since(avail.lastTransitionTime, nowMs))} (${avail.lastTransitionTime})` : "—"}</dd>
        <dt>Lease renewed</dt>
        <dd data-lease-renewed={lease ? lease.renewTime : undefined} class={lease && leaseLate(lease) ? "late" : undefined}>
          {lease === undefined
            ? "…"
            : lease === null
              ? "no lease (the cluster was never accepted)"
              : `${age(leaseAgeSeconds(lease, nowMs))} ago (${lease.renewTime})`}
        </dd>
        <dt>Lease duration</dt>
        <dd>{lease?.durationSeconds ?? mc.spec?.leaseDurationSeconds ?? 60} s</dd>
        <dt>Allocatable</dt>
        <dd>
          {Object.entries((mc.status?.allocatable ?? {}) as Record<string, string>)
            .map(([k, v]) => `${k} ${v}`)
            .join(", ") || "—"}
        </dd>
        <dt>Labels</dt>
        <dd>
          {Object.entries(mc.metadata.labels ?? {}).map(([k, v]) => (
            <code key={k}>
              {k}={v}
            </code>
          ))}
        </dd>
      </dl>
      <section aria-labelledby="cond-h">
        <h2 id="cond-h">Conditions</h2>
        <Conditions conditions={mc.status?.conditions} nowMs={nowMs} />
      </section>
      <section aria-labelledby="claims-h">
        <h2 id="claims-h">Claims</h2>
        {claims.length ? (
          <dl class="facts">{claims.map((c) => [<dt key={`k${c.name}`}>{c.name}</dt>, <dd key={`v${c.name}`}>{c.value}</dd>])}</dl>
        ) : (
          <p class="muted">No claims.</p>
        )}
      </section>
      <TaintEditor api={api} mc={mc} />
      <Works api={api} cluster={name} nowMs={nowMs} />
      <section aria-labelledby="events-h">
        <h2 id="events-h">Events</h2>
        {/* A cluster-scoped object's Events live in `default` (src/events/record.ts), never a cluster-wide list. */}
        <EventList api={api} regarding={{ kind: "ManagedCluster", name }} namespace="default" limit={50} />
      </section>
    </div>
  );
}
