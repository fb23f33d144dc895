/**
 * The target of a request on a resource path: the kind, namespace, name and subresource that
 * `/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]` addresses.
 */
import { ApiError, badRequest } from "../../k8s/errors.ts";
import { type KindDefinition } from "../../k8s/kind.ts";
import { type KubeObject } from "../../k8s/meta.ts";
import { isDNS1123Label } from "../../k8s/validation.ts";
import { findKind } from "../../kinds/index.ts";
import { NamespaceKind } from "../../kinds/namespace.ts";
import type { ApiContext } from "../context.ts";
import { ServiceAccountKind } from "../../kinds/serviceaccount.ts";
import { decodePathSegment } from "../request.ts";

/** The Hono context of an API request. */
export type Ctx = ApiContext;

/** What a request on a resource path addresses (src/api/resource/target.ts `resolve`). */
export interface Target {
  def: KindDefinition;
  namespace: string;
  name?: string;
  subresource?: "status";
  /** A Namespace's `finalize` subresource (PUT only): the write changes `spec.finalizers` alone. */
  finalize?: boolean;
  /** A list or watch through a view (`KindDefinition.viewOf`): the view's kind, and what the user may see. */
  view?: { def: KindDefinition; visible: (obj: KubeObject) => boolean };
  /** A ServiceAccount's `token` subresource (POST only): a TokenRequest (src/auth/serviceaccounts.ts). */
  token?: boolean;
}

/**
 * Parses the (still percent-encoded) path segments after `/apis/{group}/{version}/`.
 * @throws ApiError 404 (no such resource), 400 (malformed escape, invalid namespace)
 */
export function resolve(group: string, version: string, encoded: string[]): Target {
  let namespace = "";
  let parts = encoded.map(decodePathSegment);
  // `/api/v1/namespaces/{name}/status` and `.../finalize` address a Namespace, not a namespace's objects.
  const namespaceSub = group === "" && parts[0] === "namespaces" && parts.length === 3 && (parts[2] === "status" || parts[2] === "finalize");
  if (parts[0] === "namespaces" && parts.length >= 3 && !namespaceSub) {
    namespace = parts[1]!;
    parts = parts.slice(2);
  }
  const [plural, name, sub, ...extra] = parts;
  const def = plural ? findKind(group, version, plural) : undefined;
  if (def === NamespaceKind && sub === "finalize" && extra.length === 0) return { def, namespace, name, finalize: true };
  if (def === ServiceAccountKind && sub === "token" && extra.length === 0 && namespace && isDNS1123Label(namespace).length === 0)
    return { def, namespace, name, token: true };
  if (!def || extra.length > 0 || (sub !== undefined && sub !== "status")) {
    throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  }
  if (def.namespaced && !namespace && name !== undefined) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  if (!def.namespaced && namespace) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  if (namespace) {
    const errs = isDNS1123Label(namespace);
    if (errs.length > 0) throw badRequest(`invalid namespace ${JSON.stringify(namespace)}: ${errs.join("; ")}`, "metadata.namespace");
  }
  if (sub === "status" && !def.hasStatus) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  return { def, namespace, name, subresource: sub as "status" | undefined };
}
