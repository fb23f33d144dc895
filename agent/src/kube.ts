/**
 * The agent's client of the member cluster's kube-apiserver: a {@link KubeConfig} (where the
 * server is, how to trust it, how to authenticate; loaded by kubeconfig.ts) that sends
 * authenticated HTTP requests over one keep-alive connection pool, Kubernetes `Status` errors as
 * {@link KubeError}, and line-delimited watch streams. See kubeconfig.ts for why this is not
 * `@kubernetes/client-node`.
 */
import http from "node:http";

/** Most sockets of the proxy's pool: the streams the hub allows at once (src/agent-api/channel-constants.ts `PROXY_MAX_STREAMS`), and room to spare. */
const PROXY_POOL_SOCKETS = 40;

/** Where the server is and how the connection is secured. */
export interface KubeConnection {
  /** Base URL, e.g. `https://10.0.0.1:6443` (a path prefix is kept). */
  server: string;
  /** PEM of the CA bundle to trust (default: Node's roots). */
  ca?: Buffer;
  /** `insecure-skip-tls-verify`: do not verify the server's certificate. */
  insecureSkipTlsVerify: boolean;
  /** `tls-server-name`: the name to verify the certificate against (SNI). */
  tlsServerName?: string;
  /** Client certificate (PEM), with {@link key}. */
  cert?: Buffer;
  /** Client key (PEM), with {@link cert}. */
  key?: Buffer;
}

/** An exec credential plugin as the kubeconfig names it (`users[].user.exec`). */
export interface ExecConfig {
  apiVersion: string;
  command: string;
  args: string[];
  env: { name: string; value: string }[];
}

/** How requests authenticate (any combination the kubeconfig gives; exec wins over token). */
export interface KubeAuth {
  /** A bearer token (called per request, so a token file can be re-read). */
  token?: () => string;
  /** HTTP basic credentials. */
  basic?: { username: string; password: string };
  /** An exec plugin's credential; `get(true)` runs the plugin again (after a 401). */
  exec?: { get(forceRefresh: boolean): Promise<{ token?: string; cert?: Buffer; key?: Buffer }> };
}

/** Options of one request. */
export interface KubeRequestOptions {
  /** Query parameters. */
  query?: Record<string, string>;
  /** Request body: a string or Buffer is sent as is, anything else as JSON. */
  body?: unknown;
  /** Content-Type of the body; default `application/json`. */
  contentType?: string;
  /** Accept header; default `application/json`. */
  accept?: string;
  /** Timeout in milliseconds (no answer within it aborts the request); default 15 000. */
  timeoutMs?: number;
  /** Aborts the request (and a watch stream). */
  signal?: AbortSignal;
  /** Extra request headers (a list sends the header once per value, e.g. `Impersonate-Group`). */
  headers?: Record<string, string | string[]>;
}

/** An answer: status code, headers and the body as text. */
export interface KubeResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * A non-2xx answer of the kube-apiserver. `code` is the HTTP status, `body` the decoded
 * `Status` object when the server sent JSON (else the text).
 */
export class KubeError extends Error {
  override name = "KubeError";
  /**
   * @param code HTTP status code.
   * @param message the Status message, or `HTTP <code>`.
   * @param body the decoded body.
   */
  constructor(
    readonly code: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }
}

/** The {@link KubeError} of a non-2xx answer: its Status decoded when the body is JSON, its message when it has one. */
function kubeError(status: number, body: string): KubeError {
  let parsed: unknown = body;
  try {
    parsed = JSON.parse(body);
  } catch {
    // keep the text
  }
  const message =
    typeof parsed === "object" && parsed !== null && typeof (parsed as { message?: unknown }).message === "string"
      ? (parsed as { message: string }).message
      : `HTTP ${status}`;
  return new KubeError(status, message, parsed);
}

/** The methods a request may be sent again for when its kept-alive socket was found closed (RFC 9110 9.2.2). */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/**
 * Connection settings and the transport of one member cluster. Requests share one keep-alive
 * agent (at most 16 sockets).
 *
 * @example
 * const kc = loadKubeConfig(); // kubeconfig.ts
 * const ns = await kc.json("GET", "/api/v1/namespaces/kube-system");
 */
export class KubeConfig {
  private agent: http.Agent | undefined;
  private agentCert: Buffer | undefined;
  private agentKey: Buffer | undefined;
  /** The proxy's pool ({@link streamPool}) and the agent pool it was made beside (made anew when that one is). */
  private streamAgent: http.Agent | undefined;
  private streamAgentOf: http.Agent | undefined;
  private readonly isHttps: boolean;
  /** node:https, loaded on the first https request (TLS costs memory a plain-http server does not need). */
  private https: typeof import("node:https") | undefined;

  /**
   * @param conn where the server is and how to trust it.
   * @param auth how to authenticate.
   * @throws Error when `conn.server` is not an http(s) URL.
   */
  constructor(
    readonly conn: KubeConnection,
    private readonly auth: KubeAuth = {},
  ) {
    const u = new URL(conn.server);
    if (u.protocol !== "https:" && u.protocol !== "http:") throw new Error(`server ${conn.server} is not an http(s) URL`);
    this.isHttps = u.protocol === "https:";
  }

  /** The server's base URL without a trailing slash. */
  get server(): string {
    return this.conn.server.replace(/\/+$/, "");
  }

  private async pool(): Promise<http.Agent> {
    if (this.isHttps) this.https ??= await import("node:https");
    this.agent ??= this.makeAgent(this.conn.cert, this.conn.key);
    return this.agent;
  }

  /**
   * The pool of the proxy's streams (proxy.ts): apart from the agent's own requests, so that
   * long watches and log streams never queue the agent's work behind them, and with room for
   * every stream the hub allows at once.
   */
  private async streamPool(): Promise<http.Agent> {
    const own = await this.pool();
    if (this.streamAgent && this.streamAgentOf === own) return this.streamAgent;
    this.streamAgent?.destroy();
    this.streamAgentOf = own;
    this.streamAgent = this.makeAgent(this.agentCert, this.agentKey, PROXY_POOL_SOCKETS);
    return this.streamAgent;
  }

  private makeAgent(cert: Buffer | undefined, key: Buffer | undefined, maxSockets = 16): http.Agent {
    this.agentCert = cert;
    this.agentKey = key;
    if (!this.isHttps || !this.https) return new http.Agent({ keepAlive: true, maxSockets });
    return new this.https.Agent({
      keepAlive: true,
      maxSockets,
      rejectUnauthorized: !this.conn.insecureSkipTlsVerify,
      ...(this.conn.ca ? { ca: this.conn.ca } : {}),
      ...(this.conn.tlsServerName ? { servername: this.conn.tlsServerName } : {}),
      ...(cert && key ? { cert, key } : {}),
    });
  }

  private async headers(forceRefresh: boolean): Promise<Record<string, string>> {
    const h: Record<string, string> = {};
    if (this.auth.exec) {
      const cred = await this.auth.exec.get(forceRefresh);
      if (cred.token) h.authorization = `Bearer ${cred.token}`;
      if (cred.cert && cred.key && cred.cert !== this.agentCert) {
        await this.pool();
        this.agent?.destroy();
        this.agent = this.makeAgent(cred.cert, cred.key);
      }
      if (cred.token) return h;
    }
    if (this.auth.token) h.authorization = `Bearer ${this.auth.token()}`;
    else if (this.auth.basic) h.authorization = `Basic ${Buffer.from(`${this.auth.basic.username}:${this.auth.basic.password}`).toString("base64")}`;
    return h;
  }

  private url(path: string, query: Record<string, string> | undefined): URL {
    const u = new URL(this.server + path);
    for (const [k, v] of Object.entries(query ?? {})) u.searchParams.set(k, v);
    return u;
  }

  /**
   * Starts one request and hands the response stream to `onResponse`.
   *
   * @throws Error on network errors, timeouts and aborts.
   */
  private async send<T>(
    method: string,
    path: string,
    opts: KubeRequestOptions,
    retried: boolean,
    onResponse: (res: http.IncomingMessage) => Promise<T>,
    streams = false,
    resent = false,
  ): Promise<T> {
    const headers: Record<string, string | string[]> = {
      accept: opts.accept ?? "application/json",
      "user-agent": "flotilla-agent",
      ...opts.headers,
      ...(await this.headers(retried)),
    };
    let payload: string | Buffer | undefined;
    if (opts.body !== undefined) {
      payload = typeof opts.body === "string" || Buffer.isBuffer(opts.body) ? opts.body : JSON.stringify(opts.body);
      headers["content-type"] = opts.contentType ?? "application/json";
      headers["content-length"] = String(Buffer.byteLength(payload));
    }
    const agent = streams ? await this.streamPool() : await this.pool();
    const mod = this.isHttps && this.https ? this.https : http;
    const timeoutMs = opts.timeoutMs ?? 15_000;
    const result = await new Promise<{ res: http.IncomingMessage } | { value: T } | { resend: true }>((resolve, reject) => {
      const req = mod.request(this.url(path, opts.query), { method, headers, agent, ...(opts.signal ? { signal: opts.signal } : {}) }, (res) => {
        if (res.statusCode === 401 && this.auth.exec && !retried) {
          res.resume();
          resolve({ res });
          return;
        }
        onResponse(res).then((value) => resolve({ value }), reject);
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer from ${this.server} within ${timeoutMs} ms`)));
      req.on("error", (e: NodeJS.ErrnoException) => {
        // A kept-alive socket the server closed as it was reused (its idle timeout and ours
        // crossed): the request never reached the server, so an idempotent one goes again once,
        // on a new socket (Node's documented pattern: `request.reusedSocket`).
        if (req.reusedSocket && !resent && IDEMPOTENT.has(method) && (e.code === "ECONNRESET" || e.message === "socket hang up") && !opts.signal?.aborted) {
          resolve({ resend: true });
        } else reject(e);
      });
      req.end(payload);
    });
    if ("resend" in result) return this.send(method, path, opts, retried, onResponse, streams, true);
    if ("value" in result) return result.value;
    // 401 with an exec credential: run the plugin again and retry once (client-go does the same).
    return this.send(method, path, opts, true, onResponse, streams);
  }

  /**
   * Sends one request and reads the whole answer; any status is returned, not thrown.
   *
   * @param method HTTP method.
   * @param path absolute API path, e.g. `/api/v1/nodes`.
   * @throws Error on network errors, timeouts (`opts.timeoutMs`, default 15 000 ms) and aborts.
   */
  request(method: string, path: string, opts: KubeRequestOptions = {}): Promise<KubeResponse> {
    return this.send(method, path, opts, false, async (res) => {
      res.setEncoding("utf8");
      let body = "";
      for await (const chunk of res) body += chunk as string;
      return { status: res.statusCode ?? 0, headers: res.headers, body };
    });
  }

  /**
   * Sends one request and decodes its JSON answer.
   *
   * @returns the decoded body (`{}` for an empty or non-object one).
   * @throws KubeError for any non-2xx answer; Error on network errors and timeouts.
   */
  async json(method: string, path: string, opts: KubeRequestOptions = {}): Promise<Record<string, unknown>> {
    const res = await this.request(method, path, opts);
    if (res.status < 200 || res.status > 299) throw kubeError(res.status, res.body);
    let parsed: unknown;
    try {
      parsed = res.body ? JSON.parse(res.body) : {};
    } catch {
      parsed = undefined;
    }
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  }

  /**
   * Opens a watch (`?watch=true` is the caller's query) and calls `onEvent` for each
   * line-delimited JSON event until the server ends the stream or `opts.signal` aborts it
   * (then it resolves).
   * The request timeout applies to the headers only.
   *
   * @throws KubeError when the server refuses the watch (e.g. 410 Gone, 403); Error on network errors.
   */
  async watch(path: string, opts: KubeRequestOptions, onEvent: (event: Record<string, unknown>) => void): Promise<void> {
    await this.send("GET", path, opts, false, async (res) => {
      const status = res.statusCode ?? 0;
      res.setEncoding("utf8");
      if (status < 200 || status > 299) {
        let body = "";
        for await (const chunk of res) body += chunk as string;
        throw kubeError(status, body);
      }
      res.socket.setTimeout(0);
      let buf = "";
      try {
        for await (const chunk of res) {
          buf += chunk as string;
          let nl: number;
          while ((nl = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (!line) continue;
            const ev: unknown = JSON.parse(line);
            if (typeof ev === "object" && ev !== null) onEvent(ev as Record<string, unknown>);
          }
        }
      } catch (e) {
        if (opts.signal?.aborted) return;
        throw e;
      }
    }).catch((e: unknown) => {
      // An abort ends the watch; it is not an error.
      if (!opts.signal?.aborted) throw e;
    });
  }

  /**
   * Sends one request and resolves with the answer as it starts, its body not read (the caller
   * reads or destroys it): the proxy's streams (proxy.ts). `path` may carry a query. The timeout
   * applies until the headers arrive; the body may then stream for as long as it lasts.
   *
   * @throws Error on network errors, timeouts and aborts.
   */
  open(method: string, path: string, opts: KubeRequestOptions = {}): Promise<http.IncomingMessage> {
    return this.send(
      method,
      path,
      opts,
      false,
      async (res) => {
        res.socket.setTimeout(0);
        return res;
      },
      true,
    );
  }

  /**
   * Opens a WebSocket to the server at `path` (with its query) offering `protocols`, with the
   * kubeconfig's credentials and TLS settings and `headers` (the proxy's WebSocket streams:
   * exec, attach, port-forward; proxy-socket.ts). Resolves once the request is sent: the caller
   * listens for `open`, `unexpected-response` (the server refused the upgrade) and `error`;
   * `protocol()` is the subprotocol the server chose, once open.
   *
   * The subprotocols are sent and read here rather than by `ws`, which accepts only RFC 7230
   * tokens and so refuses port-forward's `SPDY/3.1+portforward.k8s.io` (a `/`): they go in the
   * `Sec-WebSocket-Protocol` header, and the server's answer is taken off the response before
   * `ws` reads it (its `finishRequest` hook).
   */
  async webSocket(
    path: string,
    protocols: string[],
    headers: Record<string, string | string[]>,
  ): Promise<{ ws: import("ws").WebSocket; protocol: () => string | undefined }> {
    const { default: WebSocketClient } = await import("ws");
    await this.pool();
    const auth = await this.headers(false);
    const url = (this.server + path).replace(/^http/, "ws");
    const tls = this.isHttps
      ? {
          rejectUnauthorized: !this.conn.insecureSkipTlsVerify,
          ...(this.conn.ca ? { ca: this.conn.ca } : {}),
          ...(this.conn.tlsServerName ? { servername: this.conn.tlsServerName } : {}),
          ...(this.agentCert && this.agentKey ? { cert: this.agentCert, key: this.agentKey } : {}),
        }
      : {};
    let chosen: string | undefined;
    const ws = new WebSocketClient(url, {
      headers: {
        "user-agent": "flotilla-agent",
        ...headers,
        ...auth,
        ...(protocols.length ? { "sec-websocket-protocol": protocols.join(", ") } : {}),
      } as Record<string, string>,
      perMessageDeflate: false,
      maxPayload: 1024 * 1024,
      handshakeTimeout: 30_000,
      finishRequest: (req) => {
        req.prependListener("upgrade", (res: http.IncomingMessage) => {
          const p = res.headers["sec-websocket-protocol"];
          if (typeof p === "string") chosen = p;
          delete res.headers["sec-websocket-protocol"];
        });
        req.end();
      },
      ...tls,
    });
    return { ws, protocol: () => chosen };
  }

  /** Closes idle connections (the process can then exit). */
  close(): void {
    this.agent?.destroy();
    this.streamAgent?.destroy();
  }
}

/**
 * The HTTP status code of an error from the member cluster.
 *
 * @returns the code of a {@link KubeError} (or any error with a numeric `code`), else `undefined` (network error etc.).
 */
export function statusCodeOf(err: unknown): number | undefined {
  if (err instanceof KubeError) return err.code;
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number") return err.code;
  return undefined;
}

/** Whether an error is a 404 Not Found. */
export function isNotFound(err: unknown): boolean {
  return statusCodeOf(err) === 404;
}

/** Whether an error is a 409 Conflict / AlreadyExists. */
export function isConflict(err: unknown): boolean {
  return statusCodeOf(err) === 409;
}

/**
 * A short human description of an error from the member cluster, for log lines: `HTTP <code>`
 * with the Status message when the server sent one, else the error message (with its cause).
 */
export function describeKubeError(err: unknown): string {
  if (err instanceof KubeError) {
    const body = err.body;
    let message: string | undefined;
    if (typeof body === "object" && body !== null && "message" in body && typeof body.message === "string") message = body.message;
    else if (typeof body === "string") message = body.slice(0, 200) || undefined;
    return `HTTP ${err.code}${message ? `: ${message}` : ""}`;
  }
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
    return `${err.message}${cause}`;
  }
  return String(err);
}

/** Answer of {@link rawGet}: the HTTP status and the body as text. */
export interface RawResponse {
  /** HTTP status code. */
  status: number;
  /** Response body (possibly empty). */
  body: string;
}

/**
 * GETs an arbitrary path on the kube-apiserver (e.g. `/livez`).
 *
 * @param timeoutMs abort after this many milliseconds (default 10 000).
 * @returns status and body; any status is returned, not thrown.
 * @throws Error on network errors and timeouts.
 */
export async function rawGet(kc: KubeConfig, path: string, timeoutMs = 10_000): Promise<RawResponse> {
  const res = await kc.request("GET", path, { timeoutMs, accept: "*/*" });
  return { status: res.status, body: res.body };
}
