/**
 * The dashboard's client of the hub's Kubernetes API: requests with the signed-in bearer token,
 * list pages (`limit`/`continue`), and watches (`?watch=1`, newline-delimited JSON watch events
 * read from the response stream) that resume from the last resourceVersion seen and list again
 * after a 410 Gone, as client-go's reflector does.
 */

/** A Kubernetes object as the dashboard reads it. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    generation?: number;
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  spec?: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  status?: any;
  // Events (core v1 / events.k8s.io/v1) keep their fields at the top level.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [field: string]: any;
}

/** A list page: its items, the `continue` token when more remain, the list's resourceVersion, `remainingItemCount`. */
export interface ListPage {
  items: KubeObject[];
  continueToken?: string;
  resourceVersion: string;
  remaining?: number;
}

/** A watch event (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`, `ERROR`). */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: KubeObject;
}

/** A failed request: HTTP status and the Kubernetes `Status` reason and message. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** List options: label and field selectors (Kubernetes syntax), page size. */
export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
}

function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** The API client of one signed-in user (a bearer token). Every request it makes is counted in {@link Api.requests}. */
export class Api {
  /** The requests made, in order (method and path; the last 500), for the benchmark and the tests. */
  readonly requests: string[] = [];

  constructor(private readonly token: string) {}

  private note(request: string): void {
    this.requests.push(request);
    if (this.requests.length > 500) this.requests.splice(0, this.requests.length - 500);
  }

  /** Sends a request; resolves the parsed JSON body. @throws ApiFailure for a non-2xx answer */
  async request<T = KubeObject>(method: string, path: string, body?: unknown, contentType = "application/json", signal?: AbortSignal): Promise<T> {
    this.note(`${method} ${path}`);
    const res = await fetch(path, {
      method,
      signal,
      headers: { authorization: `Bearer ${this.token}`, accept: "application/json", ...(body !== undefined ? { "content-type": contentType } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const st = (parsed ?? {}) as { reason?: string; message?: string };
      throw new ApiFailure(res.status, st.reason ?? res.statusText, st.message ?? `${res.status} ${res.statusText}`);
    }
    return parsed as T;
  }

  /** GETs a text document (e.g. `/metrics`); null when the hub answers other than 2xx. */
  async text(path: string): Promise<string | null> {
    this.note(`GET ${path}`);
    const res = await fetch(path, { headers: { authorization: `Bearer ${this.token}` } });
    return res.ok ? res.text() : null;
  }

  /** GETs one object. */
  get(path: string, signal?: AbortSignal): Promise<KubeObject> {
    return this.request("GET", path, undefined, undefined, signal);
  }

  /** Merge-patches an object (`application/merge-patch+json`). */
  mergePatch(path: string, patch: unknown): Promise<KubeObject> {
    return this.request("PATCH", path, patch, "application/merge-patch+json");
  }

  /** Lists one page of a collection. */
  async list(path: string, opts: ListOptions & { continueToken?: string } = {}, signal?: AbortSignal): Promise<ListPage> {
    const l = await this.request<{ items?: KubeObject[]; metadata?: { continue?: string; resourceVersion?: string; remainingItemCount?: number } }>(
      "GET",
      path + query({ labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector, limit: opts.limit, continue: opts.continueToken }),
      undefined,
      undefined,
      signal,
    );
    return {
      items: l.items ?? [],
      continueToken: l.metadata?.continue || undefined,
      resourceVersion: l.metadata?.resourceVersion ?? "0",
      remaining: l.metadata?.remainingItemCount,
    };
  }

  /**
   * Watches a collection from `resourceVersion`, calling `onEvent` for each event, until `signal`
   * aborts. A watch the server ends is resumed from the last resourceVersion seen; a 410 Gone
   * (the version is too old) calls `onExpired`, which lists again and starts a new watch.
   */
  async watch(
    path: string,
    opts: ListOptions,
    resourceVersion: string,
    onEvent: (e: WatchEvent) => void,
    onExpired: () => void,
    signal: AbortSignal,
  ): Promise<void> {
    let rv = resourceVersion;
    let failures = 0;
    while (!signal.aborted) {
      const url =
        path + query({ watch: 1, allowWatchBookmarks: "true", resourceVersion: rv, labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector });
      try {
        this.note(`GET ${url}`);
        const res = await fetch(url, { signal, headers: { authorization: `Bearer ${this.token}`, accept: "application/json" } });
        if (res.status === 410) return onExpired();
        if (!res.ok || !res.body) throw new ApiFailure(res.status, res.statusText, `watch ${path}: ${res.status}`);
        failures = 0;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let nl: number;
          while ((nl = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (!line) continue;
            const e = JSON.parse(line) as WatchEvent;
            if (e.type === "ERROR") {
              if ((e.object as { code?: number }).code === 410) return onExpired();
              continue;
            }
            if (e.object?.metadata?.resourceVersion) rv = e.object.metadata.resourceVersion;
            if (e.type !== "BOOKMARK") onEvent(e);
          }
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof ApiFailure && (err.status === 401 || err.status === 403 || err.status === 404)) throw err;
        failures++;
      }
      // Back off a little before resuming (1 s, up to 10 s after repeated failures).
      await new Promise((r) => setTimeout(r, Math.min(10_000, 1000 * Math.max(1, failures))));
    }
  }
}
