/**
 * Events (events.k8s.io/v1, the same objects as core v1 `events`), newest first, live: the events
 * view (in the namespace picked in the header, or all namespaces; filter by type, reason, kind and object name, server side with field selectors
 * `type`, `reason`, `regarding.kind`, `regarding.name`, then a text filter over what is shown), and
 * {@link EventList}, an object's events in the cluster, placement and rollout views. A hub that does
 * not serve events yet (404) shows a note instead.
 */
import { useMemo, useState } from "preact/hooks";
import type { Api, KubeObject } from "./api.ts";
import { age, eventCount, eventRegarding, eventTime } from "./format.ts";
import { isNotFound, useLiveList } from "./live.ts";
import { ErrorNote, StateBadge, useNow } from "./widgets.tsx";
import { isForbidden, scopedPath, useScope } from "./scope.tsx";

const EVENTS_API = "/apis/events.k8s.io/v1";
const newestFirst = (a: KubeObject, b: KubeObject) => eventTime(b) - eventTime(a);

/**
 * Events about one object (by kind and name), or all events with the given field selector, in
 * `namespace` ("" or absent: all namespaces; an Event lives in its object's namespace, `default`
 * for a cluster-scoped one); newest first, live.
 */
export function EventList({
  api,
  regarding,
  namespace,
  fieldSelector,
  text,
  limit = 100,
}: {
  api: Api;
  regarding?: { kind: string; name: string };
  namespace?: string;
  fieldSelector?: string;
  text?: string;
  limit?: number;
}) {
  const selector = [regarding ? `regarding.kind=${regarding.kind},regarding.name=${regarding.name}` : "", fieldSelector ?? ""].filter(Boolean).join(",");
  const list = useLiveList(api, scopedPath(EVENTS_API, namespace ?? "", "events"), { limit, fieldSelector: selector || undefined }, { sort: newestFirst });
  const nowMs = useNow(5000);
  const shown = useMemo(() => {
    const q = (text ?? "").trim().toLowerCase();
    if (!q) return list.items;
    return list.items.filter((e) => {
      const r = eventRegarding(e);
      return [e.reason, e.note, e.message, r.kind, r.name, r.namespace, e.type].some((x) => typeof x === "string" && x.toLowerCase().includes(q));
    });
  }, [list.items, text]);
  if (isNotFound(list.error)) return <p class="muted">This hub does not serve Events yet (events.k8s.io/v1 answered 404).</p>;
  if (isForbidden(list.error)) return <p class="muted">Your access does not include these events{namespace ? ` (namespace ${namespace})` : ""}.</p>;
  return (
    <div class="events">
      <ErrorNote error={list.error} />
      {!list.loading && shown.length === 0 && <p class="muted">No events.</p>}
      {shown.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Last seen</th>
                <th scope="col">Type</th>
                <th scope="col">Reason</th>
                <th scope="col">Object</th>
                <th scope="col">Message</th>
                <th scope="col">Count</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((e) => {
                const r = eventRegarding(e);
                const t = eventTime(e);
                return (
                  <tr key={`${e.metadata.namespace}/${e.metadata.name}`} data-reason={e.reason}>
                    <td title={t ? new Date(t).toISOString() : ""}>{t ? age((nowMs - t) / 1000) : "—"}</td>
                    <td>
                      <StateBadge state={String(e.type ?? "Normal")} />
                    </td>
                    <td>{e.reason}</td>
                    <td>
                      {r.kind}/{r.namespace ? `${r.namespace}/` : ""}
                      {r.name}
                    </td>
                    <td class="msg">{e.note ?? e.message ?? ""}</td>
                    <td class="num">{eventCount(e)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {list.hasMore && (
        <button type="button" onClick={list.more}>
          Older events
        </button>
      )}
    </div>
  );
}

/** The events view (see the module comment). */
export function Events({ api }: { api: Api }) {
  const { namespace, clusterWide } = useScope();
  const [type, setType] = useState("");
  const [reason, setReason] = useState("");
  const [kind, setKind] = useState("");
  const [text, setText] = useState("");
  const [applied, setApplied] = useState("");
  const apply = () =>
    setApplied([type && `type=${type}`, reason.trim() && `reason=${reason.trim()}`, kind.trim() && `regarding.kind=${kind.trim()}`].filter(Boolean).join(","));
  return (
    <div class="view" data-view="events">
      <h1>Events</h1>
      <p class="muted">{namespace ? `In namespace ${namespace}.` : "In all namespaces."}</p>
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          apply();
        }}
      >
        <label>
          Type
          <select value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value)}>
            <option value="">any</option>
            <option>Normal</option>
            <option>Warning</option>
          </select>
        </label>
        <label>
          Reason
          <input value={reason} placeholder="e.g. ManagedClusterLeaseUpdateStopped" onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Kind
          <input value={kind} placeholder="e.g. Placement" onInput={(e) => setKind((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Apply</button>
        <label>
          Filter shown
          <input type="search" value={text} placeholder="object, message…" onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        </label>
      </form>
      {clusterWide !== undefined && <EventList api={api} namespace={namespace} fieldSelector={applied || undefined} text={text} />}
    </div>
  );
}
