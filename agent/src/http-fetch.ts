/**
 * The subset of `fetch` the agent's hub client uses, on node:http and node:https with keep-alive
 * connection pools. Node's global `fetch` loads undici and its WebAssembly HTTP parser on first
 * use, several MiB of resident memory that an agent in every cluster need not carry (issue 16);
 * this is a few dozen lines over Node's own HTTP client. The global `fetch` satisfies the same
 * type, so tests and embedders may pass it instead.
 */
import http from "node:http";

/** What a hub request carries (a subset of `RequestInit`). */
export interface HubRequestInit {
  method?: string;
  headers?: Record<string, string>;
  /** The body as text. */
  body?: string;
  /** Aborts the request, or the reading of its answer. */
  signal?: AbortSignal;
}

/** What the hub client reads of an answer (a subset of `Response`). */
export interface HubResponse {
  status: number;
  headers: { get(name: string): string | null };
  /** The body as text. */
  text(): Promise<string>;
  /** Discards the body without reading it. */
  body: { cancel(): Promise<void> } | null;
}

/** A fetch-shaped function for hub requests. */
export type HubFetch = (url: string, init?: HubRequestInit) => Promise<HubResponse>;

const httpAgent = new http.Agent({ keepAlive: true, maxSockets: 8 });
/** node:https and its pool, loaded on the first https request (TLS costs memory a plain-http hub does not need). */
let tls: { https: typeof import("node:https"); agent: http.Agent } | undefined;

async function loadTls(): Promise<NonNullable<typeof tls>> {
  if (!tls) {
    const https = await import("node:https");
    tls = { https, agent: new https.Agent({ keepAlive: true, maxSockets: 8 }) };
  }
  return tls;
}

/**
 * Sends one request with node:http(s) and resolves once the status and headers are in; the body
 * is read by `text()`. Trusts Node's CA store (`NODE_EXTRA_CA_CERTS` adds to it).
 *
 * @param url absolute http(s) URL.
 * @param init method, headers, text body and abort signal.
 * @throws the signal's reason when aborted (a `TimeoutError` for `AbortSignal.timeout`); Error
 *   on network errors or a URL that is not http(s).
 */
export const httpFetch: HubFetch = async (url, init = {}) => {
  const u = new URL(url);
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error(`not an http(s) URL: ${url}`);
  const signal = init.signal;
  if (signal?.aborted) throw signal.reason as Error;
  const secure = u.protocol === "https:" ? await loadTls() : undefined;
  const headers: Record<string, string> = { ...init.headers };
  if (init.body !== undefined) headers["content-length"] = String(Buffer.byteLength(init.body));
  return new Promise<HubResponse>((resolve, reject) => {
    const req = secure
      ? secure.https.request(u, { method: init.method ?? "GET", headers, agent: secure.agent })
      : http.request(u, { method: init.method ?? "GET", headers, agent: httpAgent });
    const onAbort = () => req.destroy(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
    signal?.addEventListener("abort", onAbort, { once: true });
    const done = () => signal?.removeEventListener("abort", onAbort);
    req.on("error", (e) => {
      done();
      reject(e);
    });
    req.on("response", (res) => {
      let read: Promise<string> | undefined;
      const text = (): Promise<string> =>
        (read ??= new Promise<string>((ok, fail) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => (body += c));
          res.on("end", () => {
            done();
            ok(body);
          });
          res.on("error", (e) => {
            done();
            fail(e);
          });
          res.on("aborted", () => fail(signal?.reason instanceof Error ? signal.reason : new Error("the answer was cut off")));
        }));
      resolve({
        status: res.statusCode ?? 0,
        headers: {
          get(name: string): string | null {
            const v = res.headers[name.toLowerCase()];
            return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
          },
        },
        text,
        body: {
          cancel: async () => {
            done();
            res.resume();
          },
        },
      });
    });
    req.end(init.body);
  });
};
