/**
 * A small dynamic (untyped) Kubernetes client for arbitrary resources, on client-node's own
 * transport (`KubeConfig.applySecurityAuthentication` + `IsomorphicFetchHttpLibrary`, the same
 * path its generated APIs use), sending and receiving plain JSON.
 *
 * Why not client-node's `KubernetesObjectApi`: it (de)serialises known kinds through its typed
 * models, which drops fields its models do not know and turns timestamps into `Date`s; a work
 * agent must send manifests byte-for-byte and compare what it reads back.
 */
import {
  ApiException,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  RequestContext,
  type KubeConfig,
} from "@kubernetes/client-node";
import { isObj, type Obj } from "./types.ts";

/** A resource type: API group ("" for core), version and plural, e.g. `{group: "apps", version: "v1", resource: "deployments"}`. */
export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

/** One object: its resource type, namespace ("" for cluster-scoped objects) and name. */
export interface ObjectRef extends GroupVersionResource {
  namespace: string;
  name: string;
}

/** The REST path of a collection (`name` undefined) or of one object. */
export function resourcePath(gvr: GroupVersionResource, namespace: string, name?: string): string {
  const root = gvr.group ? `/apis/${gvr.group}/${gvr.version}` : `/api/${gvr.version}`;
  const ns = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  return `${root}${ns}/${gvr.resource}${name !== undefined ? `/${encodeURIComponent(name)}` : ""}`;
}

/** Options of {@link DynamicClient.request}. */
export interface RequestOptions {
  /** Query parameters. */
  query?: Record<string, string>;
  /** JSON body. */
  body?: unknown;
  /** Content-Type of the body; default `application/json`. */
  contentType?: string;
}

/**
 * Untyped client of the member cluster's kube-apiserver.
 *
 * @example
 * const dyn = new DynamicClient(kc);
 * const d = await dyn.get({group: "apps", version: "v1", resource: "deployments", namespace: "web", name: "web"});
 */
export class DynamicClient {
  private readonly http = new IsomorphicFetchHttpLibrary();

  /**
   * @param kc the member cluster's configuration.
   * @param timeoutMs per-request timeout in milliseconds (default 15 000).
   */
  constructor(
    private readonly kc: KubeConfig,
    private readonly timeoutMs = 15_000,
  ) {}

  /**
   * Sends one request and decodes the JSON answer.
   *
   * @param method HTTP method.
   * @param path absolute path, e.g. `/apis/apps/v1/namespaces/web/deployments/web`.
   * @returns the decoded body (`{}` for an empty one).
   * @throws ApiException (client-node's) with the status code and the Status body for any
   *   non-2xx answer; Error on network errors and timeouts.
   */
  async request(method: HttpMethod, path: string, opts: RequestOptions = {}): Promise<Obj> {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error("kubeconfig has no current cluster");
    const ctx = new RequestContext(cluster.server.replace(/\/+$/, "") + path, method);
    for (const [k, v] of Object.entries(opts.query ?? {})) ctx.setQueryParam(k, v);
    ctx.setHeaderParam("Accept", "application/json");
    if (opts.body !== undefined) {
      ctx.setHeaderParam("Content-Type", opts.contentType ?? "application/json");
      ctx.setBody(JSON.stringify(opts.body));
    }
    await this.kc.applySecurityAuthentication(ctx);
    ctx.setSignal(AbortSignal.timeout(this.timeoutMs));
    const res = await this.http.send(ctx).toPromise();
    const text = await res.body.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = text;
    }
    if (res.httpStatusCode < 200 || res.httpStatusCode > 299) {
      const message = isObj(parsed) && typeof parsed.message === "string" ? parsed.message : `HTTP ${res.httpStatusCode}`;
      throw new ApiException<unknown>(res.httpStatusCode, message, parsed, res.headers);
    }
    return isObj(parsed) ? parsed : {};
  }

  /** GET one object. @throws ApiException 404 when it does not exist. */
  get(ref: ObjectRef): Promise<Obj> {
    return this.request(HttpMethod.GET, resourcePath(ref, ref.namespace, ref.name));
  }

  /** LIST a collection, optionally filtered by a label selector; returns the items. */
  async list(gvr: GroupVersionResource, namespace: string, labelSelector?: string): Promise<Obj[]> {
    const list = await this.request(HttpMethod.GET, resourcePath(gvr, namespace), labelSelector ? { query: { labelSelector } } : {});
    return Array.isArray(list.items) ? list.items.filter(isObj) : [];
  }

  /** POST (create) `obj` in `namespace` under `fieldManager`. @throws ApiException 409 AlreadyExists. */
  create(gvr: GroupVersionResource, namespace: string, obj: Obj, fieldManager: string): Promise<Obj> {
    return this.request(HttpMethod.POST, resourcePath(gvr, namespace), { body: obj, query: { fieldManager } });
  }

  /** PUT (replace) an object; `obj.metadata.resourceVersion` makes it conditional. @throws ApiException 409 on a stale resourceVersion. */
  replace(ref: ObjectRef, obj: Obj, fieldManager: string): Promise<Obj> {
    return this.request(HttpMethod.PUT, resourcePath(ref, ref.namespace, ref.name), { body: obj, query: { fieldManager } });
  }

  /**
   * Server-side apply (`PATCH` with `application/apply-patch+yaml`; JSON is valid YAML): creates
   * the object when missing, else merges the fields `fieldManager` owns.
   *
   * @throws ApiException 409 Conflict when another manager owns an applied field and `force` is false.
   */
  apply(ref: ObjectRef, obj: Obj, fieldManager: string, force: boolean): Promise<Obj> {
    return this.request(HttpMethod.PATCH, resourcePath(ref, ref.namespace, ref.name), {
      body: obj,
      contentType: "application/apply-patch+yaml",
      query: { fieldManager, force: String(force) },
    });
  }

  /**
   * DELETE one object with `propagationPolicy: Background` and, when `uid` is given, a UID
   * precondition (so an object re-created by someone else under the same name is not deleted).
   *
   * @throws ApiException 404 when missing, 409 when the UID precondition fails.
   */
  async delete(ref: ObjectRef, uid?: string): Promise<void> {
    await this.request(HttpMethod.DELETE, resourcePath(ref, ref.namespace, ref.name), {
      body: { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background", ...(uid ? { preconditions: { uid } } : {}) },
    });
  }
}
