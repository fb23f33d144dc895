/**
 * A small client of the hub's Kubernetes-shaped admin API (`/apis/...`), authenticated with the
 * admin token. Failures become {@link HubApiError} (the hub's `Status`, with a hint) or
 * {@link HubUnreachableError} (no answer, or an answer that is not the hub's).
 */
import { readCaFile, requireToken, type ResolvedConfig } from "./config.ts";
import { HubApiError, HubUnreachableError, isStatus, type KubeStatus } from "./errors.ts";
import { hintForConnectionError, hintForStatus, missingNamespaceHint, type RequestHints } from "./hints.ts";
import { httpRequest, type HttpRequest, type HttpResponse } from "./transport.ts";

/** Content type of a JSON merge patch (RFC 7386). */
export const MERGE_PATCH = "application/merge-patch+json";

/** Options of one request. */
export interface RequestOptions {
  /** Query parameters; undefined values are left out. */
  query?: Record<string, string | undefined>;
  /** Request body, sent as JSON. */
  body?: unknown;
  /** Content type of the body (default `application/json`). */
  contentType?: string;
  /** Hints for specific failures of this request. */
  hints?: RequestHints;
}

/** The function that performs one HTTP exchange (replaceable in tests). */
export type Transport = (req: HttpRequest) => Promise<HttpResponse>;

/** A client bound to one hub URL, admin token and CA. */
export class HubClient {
  private readonly token: string;
  private readonly ca: string | undefined;

  /**
   * @param config the resolved hub URL, token and CA file.
   * @param transport the HTTP exchange (default: node:http/https).
   * @throws UsageError when no admin token is configured; CliError when the CA file cannot be read.
   */
  constructor(
    readonly config: ResolvedConfig,
    private readonly transport: Transport = httpRequest,
  ) {
    this.token = requireToken(config);
    this.ca = readCaFile(config);
  }

  /**
   * Sends a request to `path` (starting with `/`) and returns the parsed JSON answer.
   *
   * @throws HubApiError for an HTTP error answered with a Status; HubUnreachableError when the
   *   hub cannot be reached or its answer is not JSON.
   */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    return this.answer<T>(method, path, await this.send(method, path, opts), opts);
  }

  /** The parsed JSON of a 2xx answer. @throws as {@link request} for any other */
  private answer<T>(method: string, path: string, res: HttpResponse, opts: RequestOptions): T {
    let parsed: unknown;
    try {
      parsed = res.body ? JSON.parse(res.body) : undefined;
    } catch {
      parsed = undefined;
    }
    if (res.status >= 200 && res.status < 300 && parsed !== undefined) return parsed as T;
    if (res.status >= 400 && isStatus(parsed)) {
      const err = this.apiError(res.status, parsed, opts.hints);
      if (!err.resourceNotServed) throw err;
      throw this.apiError(res.status, { ...parsed, message: `the hub does not serve ${path} (${parsed.message ?? "NotFound"})` }, opts.hints);
    }
    if (res.status === 401 || res.status === 403) {
      throw this.apiError(
        res.status,
        {
          kind: "Status",
          code: res.status,
          reason: res.status === 401 ? "Unauthorized" : "Forbidden",
          message: res.status === 401 ? "Unauthorized" : "Forbidden",
        },
        opts.hints,
      );
    }
    throw new HubUnreachableError(
      `the server at ${this.config.hubUrl} answered ${method} ${path} with HTTP ${res.status} and no Kubernetes response`,
      `is ${this.config.hubUrl} (from ${this.config.hubUrlSource}) the Flotilla hub? change it with --hub-url / FLOTILLA_HUB_URL`,
    );
  }

  /**
   * One round of a watch: GET `path` with `watch=1` and `opts.query` (which should hold a
   * `timeoutSeconds` below the transport's 30 s), whose answer is the watch events, one JSON
   * object a line, until the hub ends it.
   *
   * @returns the events in order (keepalive blank lines left out).
   * @throws as {@link request}
   */
  async watchEvents<T>(path: string, opts: RequestOptions = {}): Promise<{ type: string; object: T }[]> {
    const res = await this.send("GET", path, { ...opts, query: { ...opts.query, watch: "1" } });
    if (res.status !== 200) return this.answer<never>("GET", path, res, opts);
    try {
      return res.body
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as { type: string; object: T });
    } catch {
      throw new HubUnreachableError(`the hub's answer to a watch of ${path} is not a stream of watch events`, "is this the Flotilla hub?");
    }
  }

  /** Sends one request and returns the raw answer. @throws HubUnreachableError when no answer came */
  private async send(method: string, path: string, opts: RequestOptions): Promise<HttpResponse> {
    const qs = Object.entries(opts.query ?? {}).filter((e): e is [string, string] => e[1] !== undefined);
    const url = `${this.config.hubUrl}${path}${qs.length > 0 ? `?${new URLSearchParams(qs).toString()}` : ""}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: "application/json" };
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] = opts.contentType ?? "application/json";
    }
    try {
      return await this.transport({ method, url, headers, body, ca: this.ca });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      const why = e.code && !e.message.includes(e.code) ? `${e.code} ${e.message}` : e.message;
      throw new HubUnreachableError(`cannot reach the hub at ${this.config.hubUrl}: ${why}`, hintForConnectionError(e.code, this.config), e.code);
    }
  }

  private apiError(code: number, status: KubeStatus, hints: RequestHints | undefined): HubApiError {
    const err = new HubApiError(code, status);
    // A create in a namespace that does not exist (NamespaceLifecycle): its 404 names the namespace.
    const missingNamespace = code === 404 && status.details?.kind === "namespaces" && !status.details.group ? status.details.name : undefined;
    return new HubApiError(
      code,
      status,
      hintForStatus(
        code,
        err.reason,
        err.resourceNotServed,
        this.config,
        missingNamespace ? { ...hints, notFound: missingNamespaceHint(missingNamespace) } : hints,
      ),
    );
  }

  /** GET an object or a list. @throws as {@link request} */
  get<T>(path: string, opts?: RequestOptions): Promise<T> {
    return this.request<T>("GET", path, opts);
  }

  /** POST (create) `body` to a collection. @throws as {@link request} */
  create<T>(path: string, body: unknown, opts?: RequestOptions): Promise<T> {
    return this.request<T>("POST", path, { ...opts, body });
  }

  /** PUT (replace) an object; a stale `metadata.resourceVersion` gets 409 Conflict. @throws as {@link request} */
  replace<T>(path: string, body: unknown, opts?: RequestOptions): Promise<T> {
    return this.request<T>("PUT", path, { ...opts, body });
  }

  /** PATCH an object with a JSON merge patch. @throws as {@link request} */
  mergePatch<T>(path: string, patch: unknown, opts?: RequestOptions): Promise<T> {
    return this.request<T>("PATCH", path, { ...opts, body: patch, contentType: MERGE_PATCH });
  }
}
