/**
 * `useLiveList`: a paged, live list of one collection. It lists the first page (`limit`), then
 * watches the collection from the list's resourceVersion (with the same selectors) and applies
 * each event to what is shown: a change to a listed object replaces it, a deletion removes it, a
 * new object is shown when it sorts within the pages loaded so far. `more()` loads the next page
 * (`continue`). The fleet is never listed whole unless the user pages through it.
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiFailure, type Api, type KubeObject, type ListOptions } from "./api.ts";

/** What {@link useLiveList} gives a view. */
export interface LiveList {
  items: KubeObject[];
  loading: boolean;
  error?: ApiFailure | Error;
  /** Whether more pages remain. */
  hasMore: boolean;
  /** Objects after the loaded pages (`remainingItemCount`), when the server said. */
  remaining?: number;
  more: () => void;
}

const key = (o: KubeObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** Sorts by namespace then name, the API's list order. */
export function byKey(a: KubeObject, b: KubeObject): number {
  const ka = key(a);
  const kb = key(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/**
 * A live list of `path` (a collection URL) with `opts`; `null` path: nothing is listed.
 * `sort` orders the shown items (default namespace/name); `watch` false lists without watching.
 */
export function useLiveList(
  api: Api,
  path: string | null,
  opts: ListOptions = {},
  settings: { sort?: (a: KubeObject, b: KubeObject) => number; watch?: boolean } = {},
): LiveList {
  const [state, setState] = useState<{ items: KubeObject[]; loading: boolean; error?: Error; cont?: string; remaining?: number }>({
    items: [],
    loading: path !== null,
  });
  const [generation, setGeneration] = useState(0);
  const contRef = useRef<string | undefined>(undefined);
  const keyRef = useRef<string | undefined>(undefined);
  const sort = settings.sort ?? byKey;
  const optsKey = JSON.stringify(opts);
  const watch = settings.watch ?? true;

  useEffect(() => {
    if (path === null) {
      setState({ items: [], loading: false });
      return;
    }
    const ac = new AbortController();
    // Another collection or other selectors: what was shown goes at once (a view never shows one
    // object's data under another's name); a list again after a 410 keeps it until the new page.
    const listKey = `${path} ${optsKey}`;
    if (keyRef.current !== listKey) {
      keyRef.current = listKey;
      setState({ items: [], loading: true });
    } else setState((s) => ({ ...s, loading: true, error: undefined }));
    const run = async () => {
      const page = await api.list(path, opts, ac.signal);
      if (ac.signal.aborted) return;
      contRef.current = page.continueToken;
      setState({ items: [...page.items].sort(sort), loading: false, cont: page.continueToken, remaining: page.remaining });
      if (!watch) return;
      await api.watch(
        path,
        opts,
        page.resourceVersion,
        (e) =>
          setState((s) => {
            const k = key(e.object);
            const i = s.items.findIndex((o) => key(o) === k);
            if (e.type === "DELETED") return i < 0 ? s : { ...s, items: s.items.filter((_, j) => j !== i) };
            if (i >= 0) {
              const items = [...s.items];
              items[i] = e.object;
              return { ...s, items: sort === byKey ? items : items.sort(sort) };
            }
            // A new object: shown when it sorts within what is loaded (or everything is loaded).
            const last = s.items[s.items.length - 1];
            if (s.cont && last && sort(e.object, last) > 0) return s;
            return { ...s, items: [...s.items, e.object].sort(sort) };
          }),
        () => setGeneration((g) => g + 1),
        ac.signal,
      );
    };
    run().catch((err: unknown) => {
      if (!ac.signal.aborted) setState((s) => ({ ...s, loading: false, error: err instanceof Error ? err : new Error(String(err)) }));
    });
    return () => ac.abort();
  }, [api, path, optsKey, generation, watch]);

  const more = useCallback(() => {
    const cont = contRef.current;
    if (!cont || path === null) return;
    api
      .list(path, { ...opts, continueToken: cont })
      .then((page) => {
        contRef.current = page.continueToken;
        setState((s) => {
          const seen = new Set(s.items.map(key));
          return { ...s, items: [...s.items, ...page.items.filter((o) => !seen.has(key(o)))].sort(sort), cont: page.continueToken, remaining: page.remaining };
        });
      })
      .catch((err: unknown) => setState((s) => ({ ...s, error: err instanceof Error ? err : new Error(String(err)) })));
  }, [api, path, optsKey]);

  return { items: state.items, loading: state.loading, error: state.error, hasMore: Boolean(state.cont), remaining: state.remaining, more };
}

/** A live single object (GET then watch by `metadata.name` field selector); null while loading or when absent. */
export function useLiveObject(api: Api, collection: string | null, name: string): { obj: KubeObject | null; error?: Error } {
  const l = useLiveList(api, collection, { fieldSelector: `metadata.name=${name}` });
  return { obj: l.items.find((o) => o.metadata.name === name) ?? null, error: l.error };
}

/** Whether an error is the API's 404 (a resource the hub does not serve yet, or an object that is gone). */
export const isNotFound = (e: unknown): boolean => e instanceof ApiFailure && e.status === 404;
