/**
 * Kind → resource mapping through the member cluster's discovery documents (`GET /api/v1`,
 * `GET /apis/{group}/{version}`: `APIResourceList`), as client-go's RESTMapper does. Lists are
 * cached per group/version and fetched again on a miss, so a kind served by a CRD the same work
 * created a moment earlier is found.
 */
import { statusCodeOf } from "../kube.ts";
import type { DynamicClient } from "./dynamic.ts";
import { isObj } from "./types.ts";

/** Where a kind is served: its plural and whether it is namespaced. */
export interface RestMapping {
  group: string;
  version: string;
  kind: string;
  /** Plural, e.g. `deployments`. */
  resource: string;
  namespaced: boolean;
}

/** Raised when the cluster does not serve a kind at an API version (OCM's "no matches for kind"). */
export class NoKindMatchError extends Error {
  override name = "NoKindMatchError";
}

/** Splits `apps/v1` into `{group: "apps", version: "v1"}` and `v1` into `{group: "", version: "v1"}`. */
export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf("/");
  return i < 0 ? { group: "", version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

interface ApiResource {
  name: string;
  kind: string;
  namespaced: boolean;
}

/**
 * Caching REST mapper over discovery.
 *
 * @example
 * const m = await new RestMapper(dyn).mapping("apps/v1", "Deployment");
 * // {group: "apps", version: "v1", kind: "Deployment", resource: "deployments", namespaced: true}
 */
export class RestMapper {
  private readonly cache = new Map<string, ApiResource[]>();

  /** @param client the member cluster's dynamic client. */
  constructor(private readonly client: DynamicClient) {}

  private async fetch(apiVersion: string): Promise<ApiResource[]> {
    const { group } = splitApiVersion(apiVersion);
    let doc: Record<string, unknown>;
    try {
      doc = await this.client.request("GET", group ? `/apis/${apiVersion}` : `/api/${apiVersion}`);
    } catch (e) {
      if (statusCodeOf(e) === 404) {
        this.cache.set(apiVersion, []);
        return [];
      }
      throw e;
    }
    const list = (Array.isArray(doc.resources) ? doc.resources : [])
      .filter(isObj)
      .filter((r) => typeof r.name === "string" && !r.name.includes("/") && typeof r.kind === "string")
      .map((r) => ({ name: String(r.name), kind: String(r.kind), namespaced: r.namespaced === true }));
    this.cache.set(apiVersion, list);
    return list;
  }

  /**
   * The mapping of `kind` at `apiVersion`.
   *
   * @throws NoKindMatchError when the cluster does not serve it (after refreshing the cache);
   *   the client's error when discovery itself fails (network, 5xx).
   */
  async mapping(apiVersion: string, kind: string): Promise<RestMapping> {
    const { group, version } = splitApiVersion(apiVersion);
    let found = this.cache.get(apiVersion)?.find((r) => r.kind === kind);
    if (!found) found = (await this.fetch(apiVersion)).find((r) => r.kind === kind);
    if (!found) throw new NoKindMatchError(`no matches for kind "${kind}" in version "${apiVersion}"`);
    return { group, version, kind, resource: found.name, namespaced: found.namespaced };
  }
}
