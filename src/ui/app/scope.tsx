/**
 * The namespaces a user's views show, and the fallbacks for a user without cluster-wide rights
 * (a team with `edit` in its own namespaces, as OCM hands out access: namespaces bound to cluster
 * sets with ManagedClusterSetBindings).
 *
 * - Whether the user may list the namespaced kinds in all namespaces: one SelfSubjectAccessReview
 *   (`list` Placements, no namespace), as `kubectl auth can-i list placements -A` asks.
 * - The namespaces offered in the header's picker: every Namespace when the user may list them;
 *   else the user's own (a ServiceAccount's namespace, from its username
 *   `system:serviceaccount:<namespace>:<name>`) and any the user added in the picker (kept in the
 *   browser, `localStorage`).
 * - The namespace the views show: "" (all namespaces) for a user who may list them all, else the
 *   first offered; the picker changes it (kept for the tab, `sessionStorage`).
 *
 * The namespaced lists (placements, rollouts, events) read `…/namespaces/<ns>/<resource>` when a
 * namespace is chosen ({@link scopedPath}); the fleet and the placement view fall back to OCM's
 * cluster view (`clusterview.open-cluster-management.io/v1`: the clusters of the cluster sets the
 * user may get) when listing ManagedClusters or ManagedClusterSets is forbidden
 * ({@link useListOrView}).
 */
import { createContext } from "preact";
import { useContext, useEffect, useState } from "preact/hooks";
import { ApiFailure, type Api, type ListOptions } from "./api.ts";
import { useLiveList, type LiveList } from "./live.ts";

/** What the views read of the scope. */
export interface Scope {
  /** Whether the user may list the namespaced kinds in all namespaces (undefined while asked). */
  clusterWide?: boolean;
  /** The namespaces the picker offers, sorted. */
  namespaces: string[];
  /** The namespace the views show; "" for all namespaces. */
  namespace: string;
  /** Chooses the namespace the views show. */
  setNamespace: (namespace: string) => void;
  /** Adds a namespace to the picker (and chooses it). */
  addNamespace: (namespace: string) => void;
}

const NS_KEY = "flotilla.namespace";
const ADDED_KEY = "flotilla.namespaces";
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The scope the views read (see the module comment); all namespaces until the provider says otherwise. */
export const ScopeContext = createContext<Scope>({ clusterWide: true, namespaces: [], namespace: "", setNamespace: () => {}, addNamespace: () => {} });

/** The views' scope. */
export function useScope(): Scope {
  return useContext(ScopeContext);
}

/** The namespace of a ServiceAccount's username (`system:serviceaccount:<namespace>:<name>`), if it is one. */
export function serviceAccountNamespace(user: string): string | undefined {
  const m = /^system:serviceaccount:([^:]+):[^:]+$/.exec(user);
  return m?.[1];
}

function added(): string[] {
  try {
    const v = JSON.parse(localStorage.getItem(ADDED_KEY) ?? "[]") as unknown;
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string" && DNS_LABEL.test(x)) : [];
  } catch {
    return [];
  }
}

/** The scope of the signed-in `user` (see the module comment); the app's shell provides it. */
export function useScopeState(api: Api, user: string): Scope {
  const [clusterWide, setClusterWide] = useState<boolean | undefined>(undefined);
  const [listed, setListed] = useState<string[] | null>(null);
  const [extra, setExtra] = useState<string[]>(added);
  const [chosen, setChosen] = useState<string | null>(() => sessionStorage.getItem(NS_KEY));

  useEffect(() => {
    let stop = false;
    api
      .request<{ status?: { allowed?: boolean } }>("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SelfSubjectAccessReview",
        spec: { resourceAttributes: { verb: "list", group: "cluster.open-cluster-management.io", resource: "placements" } },
      })
      .then((r) => !stop && setClusterWide(r.status?.allowed === true))
      .catch(() => !stop && setClusterWide(false));
    api
      .list("/api/v1/namespaces", { limit: 500 })
      .then((page) => !stop && setListed(page.items.map((n) => n.metadata.name)))
      .catch(() => !stop && setListed([]));
    return () => {
      stop = true;
    };
  }, [api]);

  const own = serviceAccountNamespace(user);
  const namespaces = [...new Set([...(listed ?? []), ...(own ? [own] : []), ...extra])].sort();
  let namespace = chosen ?? "";
  if (namespace === "" && clusterWide === false) namespace = own ?? namespaces[0] ?? "";
  const setNamespace = (ns: string) => {
    sessionStorage.setItem(NS_KEY, ns);
    setChosen(ns);
  };
  return {
    clusterWide,
    namespaces,
    namespace,
    setNamespace,
    addNamespace: (ns: string) => {
      if (!DNS_LABEL.test(ns)) return;
      const next = [...new Set([...extra, ns])];
      localStorage.setItem(ADDED_KEY, JSON.stringify(next));
      setExtra(next);
      setNamespace(ns);
    },
  };
}

/**
 * The collection URL of a namespaced resource in `namespace` ("" : all namespaces), e.g.
 * `scopedPath("/apis/cluster.open-cluster-management.io/v1beta1", "team", "placements")`.
 */
export function scopedPath(base: string, namespace: string, resource: string): string {
  return namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${resource}` : `${base}/${resource}`;
}

/** Whether an error is the API's 403. */
export const isForbidden = (e: unknown): boolean => e instanceof ApiFailure && e.status === 403;

/**
 * A live list of `path`, or of `view` (the same objects through OCM's cluster view) once listing
 * `path` is forbidden (403); `viaView` says which. The view's own 403 shows as the list's error.
 */
export function useListOrView(api: Api, path: string, view: string, opts: ListOptions = {}): LiveList & { viaView: boolean } {
  const [viaView, setViaView] = useState(false);
  const list = useLiveList(api, viaView ? view : path, opts);
  useEffect(() => {
    if (!viaView && isForbidden(list.error)) setViaView(true);
  }, [list.error, viaView]);
  return { ...list, error: !viaView && isForbidden(list.error) ? undefined : list.error, viaView };
}

/** The header's namespace picker: the namespaces offered, "all namespaces" when the user may, and a field to add one. */
export function NamespacePicker() {
  const scope = useScope();
  const [adding, setAdding] = useState("");
  if (scope.clusterWide === undefined) return null;
  return (
    <form
      class="ns-picker"
      onSubmit={(e) => {
        e.preventDefault();
        scope.addNamespace(adding.trim());
        setAdding("");
      }}
    >
      <label>
        Namespace{" "}
        <select value={scope.namespace} onChange={(e) => scope.setNamespace((e.target as HTMLSelectElement).value)} data-namespace={scope.namespace}>
          {scope.clusterWide && <option value="">all namespaces</option>}
          {scope.namespaces.map((ns) => (
            <option key={ns} value={ns}>
              {ns}
            </option>
          ))}
        </select>
      </label>
      {!scope.clusterWide && (
        <input
          aria-label="Add a namespace"
          placeholder="add namespace"
          size={12}
          value={adding}
          pattern="[a-z0-9]([-a-z0-9]*[a-z0-9])?"
          onInput={(e) => setAdding((e.target as HTMLInputElement).value)}
        />
      )}
    </form>
  );
}
