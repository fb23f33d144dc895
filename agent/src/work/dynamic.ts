/**
 * A small dynamic (untyped) Kubernetes client for arbitrary resources on the agent's transport
 * (kube.ts), sending and receiving plain JSON: a work agent must send manifests as they are and
 * compare what it reads back, so nothing goes through typed models.
 */
import type { KubeConfig } from "../kube.ts";
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
  /**
   * @param kc the member cluster's configuration and transport.
   * @param timeoutMs per-request timeout in milliseconds (default 15 000).
   * @param impersonate the user every request acts as (`Impersonate-User`), e.g.
   *   `system:serviceaccount:apps:deployer`; absent: the agent's own identity.
   */
  constructor(
    readonly kc: KubeConfig,
    private readonly timeoutMs = 15_000,
    readonly impersonate?: string,
  ) {}

  /**
   * A client on the same transport whose requests act as `user` (kube-apiserver's user
   * impersonation: header `Impersonate-User`). No `Impersonate-Group` is sent: for a
   * ServiceAccount user (`system:serviceaccount:NS:NAME`) kube-apiserver adds its groups
   * (`system:serviceaccounts`, `system:serviceaccounts:NS`) and `system:authenticated` itself,
   * so the agent needs `impersonate` on `serviceaccounts` only, never on `groups` (which would
   * let it act as any group, `system:masters` included). The server refuses with 403 when the
   * agent may not impersonate that user, and authorizes each request as that user.
   */
  as(user: string): DynamicClient {
    return new DynamicClient(this.kc, this.timeoutMs, user);
  }

  /**
   * Sends one request and decodes the JSON answer.
   *
   * @param method HTTP method.
   * @param path absolute path, e.g. `/apis/apps/v1/namespaces/web/deployments/web`.
   * @returns the decoded body (`{}` for an empty one).
   * @throws KubeError with the status code and the Status body for any non-2xx answer; Error
   *   on network errors and timeouts.
   */
  request(method: string, path: string, opts: RequestOptions = {}): Promise<Obj> {
    return this.kc.json(method, path, {
      ...opts,
      timeoutMs: this.timeoutMs,
      ...(this.impersonate ? { headers: { "Impersonate-User": this.impersonate } } : {}),
    });
  }

  /** GET one object. @throws KubeError 404 when it does not exist. */
  get(ref: ObjectRef): Promise<Obj> {
    return this.request("GET", resourcePath(ref, ref.namespace, ref.name));
  }

  /** LIST a collection, optionally filtered by a label selector; returns the items. */
  async list(gvr: GroupVersionResource, namespace: string, labelSelector?: string): Promise<Obj[]> {
    const list = await this.request("GET", resourcePath(gvr, namespace), labelSelector ? { query: { labelSelector } } : {});
    return Array.isArray(list.items) ? list.items.filter(isObj) : [];
  }

  /** POST (create) `obj` in `namespace` under `fieldManager`. @throws KubeError 409 AlreadyExists. */
  create(gvr: GroupVersionResource, namespace: string, obj: Obj, fieldManager: string): Promise<Obj> {
    return this.request("POST", resourcePath(gvr, namespace), { body: obj, query: { fieldManager } });
  }

  /**
   * PUT (replace) an object; `obj.metadata.resourceVersion` makes it conditional. With `dryRun`
   * (`?dryRun=All`) the API server validates, defaults and answers the object it would store,
   * storing nothing.
   * @throws KubeError 409 on a stale resourceVersion, 422 when the object is invalid (an immutable field changed)
   */
  replace(ref: ObjectRef, obj: Obj, fieldManager: string, opts: { dryRun?: boolean } = {}): Promise<Obj> {
    return this.request("PUT", resourcePath(ref, ref.namespace, ref.name), { body: obj, query: { fieldManager, ...(opts.dryRun ? { dryRun: "All" } : {}) } });
  }

  /**
   * Server-side apply (`PATCH` with `application/apply-patch+yaml`; JSON is valid YAML): creates
   * the object when missing, else merges the fields `fieldManager` owns.
   *
   * With `dryRun` (`?dryRun=All`) the answer is the object the server would store, nothing stored.
   *
   * @throws KubeError 409 Conflict when another manager owns an applied field and `force` is false.
   */
  apply(ref: ObjectRef, obj: Obj, fieldManager: string, force: boolean, opts: { dryRun?: boolean } = {}): Promise<Obj> {
    return this.request("PATCH", resourcePath(ref, ref.namespace, ref.name), {
      body: obj,
      contentType: "application/apply-patch+yaml",
      query: { fieldManager, force: String(force), ...(opts.dryRun ? { dryRun: "All" } : {}) },
    });
  }

  /**
   * A JSON merge patch (RFC 7386, `application/merge-patch+json`) of one object under
   * `fieldManager`, as kubectl's client-side apply sends for kinds without a strategic-merge
   * schema. A `metadata.resourceVersion` in the patch makes it conditional.
   *
   * @throws KubeError 404 when missing, 409 on a stale resourceVersion, 422 when the result is invalid.
   */
  mergePatch(ref: ObjectRef, patch: Obj, fieldManager: string): Promise<Obj> {
    return this.request("PATCH", resourcePath(ref, ref.namespace, ref.name), {
      body: patch,
      contentType: "application/merge-patch+json",
      query: { fieldManager },
    });
  }

  /**
   * DELETE one object with `propagationPolicy: Background` and, when `uid` is given, a UID
   * precondition (so an object re-created by someone else under the same name is not deleted).
   *
   * @throws KubeError 404 when missing, 409 when the UID precondition fails.
   */
  async delete(ref: ObjectRef, uid?: string): Promise<void> {
    await this.request("DELETE", resourcePath(ref, ref.namespace, ref.name), {
      body: { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background", ...(uid ? { preconditions: { uid } } : {}) },
    });
  }
}
