/**
 * User impersonation as kube-apiserver does it (`kubectl --as`, `--as-group`, `--as-uid`,
 * `--as-user-extra`), as a pure module: given the authenticated user, the request's headers and
 * an authorizer, it answers the user the request then acts as, or refuses.
 *
 * Semantics source (facts carried over, not code): k8s.io/apiserver
 * `pkg/endpoints/filters/impersonation.go` (WithImpersonation, buildImpersonationRequests) and its
 * tests, `pkg/authentication/serviceaccount/util.go` (SplitUsername, MakeGroupNames),
 * `pkg/endpoints/handlers/responsewriters` (the 403's wording):
 *
 * - the headers: `Impersonate-User` (the user; one of the form `system:serviceaccount:NS:NAME`
 *   with a valid namespace and ServiceAccount name is that ServiceAccount), `Impersonate-Group`
 *   (repeatable), `Impersonate-Uid`, `Impersonate-Extra-<key>` (repeatable; the key is lower-cased,
 *   then percent-decoded, kept as sent when it does not decode). Header names are matched
 *   case-insensitively (HTTP's rule);
 * - each requested item is authorized for the authenticated user, in the order user, groups,
 *   extras, uid, with the verb `impersonate` on: `users` (core group, name = the user),
 *   `serviceaccounts` (core group, namespace NS, name NAME), `groups` (core group, name = the
 *   group), `userextras/<key>` (group `authentication.k8s.io`, subresource = the key, name = the
 *   value), `uids` (group `authentication.k8s.io`, name = the uid). The first one denied is a 403
 *   Forbidden worded as kube-apiserver's, e.g. `users "bob" is forbidden: User "alice" cannot
 *   impersonate resource "users" in API group "" at the cluster scope`;
 * - the impersonated user has exactly the requested name, groups, extra and uid, nothing of the
 *   authenticated user's: a ServiceAccount impersonated without `Impersonate-Group` gets
 *   `system:serviceaccounts` and `system:serviceaccounts:NS`; any user but `system:anonymous` gets
 *   `system:authenticated` unless `system:authenticated` or `system:unauthenticated` was
 *   requested; `system:anonymous` gets `system:unauthenticated` unless requested;
 * - groups, extras or a uid without `Impersonate-User` are refused. kube-apiserver answers a 500
 *   InternalError there; the hub answers 400 BadRequest with its message (`requested ... without
 *   impersonating a user`), since the request, not the server, is at fault.
 *
 * One difference the platform forces: the Fetch API joins the values of a repeated header with
 * `, `, so repeated `Impersonate-Group` and `Impersonate-Extra-*` values are split on commas (a
 * group or extra value that itself holds a comma cannot be impersonated); a repeated
 * `Impersonate-User` or `Impersonate-Uid` is one value with the comma in it, as no such user is
 * likely to be granted.
 */
import { badRequest } from "../k8s/errors.ts";
import { isDNS1123Label, isDNS1123Subdomain } from "../k8s/validation.ts";
import {
  ALL_AUTHENTICATED,
  ALL_UNAUTHENTICATED,
  forbiddenError,
  SERVICE_ACCOUNT_USERNAME_PREFIX,
  serviceAccountGroups,
  serviceAccountUsername,
  type Decision,
  type ResourceAttributes,
  type UserInfo,
} from "./rbac-types.ts";

/** The header naming the user to act as (Kubernetes `authenticationv1.ImpersonateUserHeader`). */
export const IMPERSONATE_USER_HEADER = "Impersonate-User";
/** The header naming a group to act in; repeatable (`ImpersonateGroupHeader`). */
export const IMPERSONATE_GROUP_HEADER = "Impersonate-Group";
/** The header naming the uid to act with (`ImpersonateUIDHeader`). */
export const IMPERSONATE_UID_HEADER = "Impersonate-Uid";
/** The prefix of the headers setting an extra value, `Impersonate-Extra-<key>` (`ImpersonateUserExtraHeaderPrefix`). */
export const IMPERSONATE_EXTRA_PREFIX = "Impersonate-Extra-";
/** The verb every impersonation is authorized with. */
export const IMPERSONATE_VERB = "impersonate";
/** Kubernetes' anonymous user name (`user.Anonymous`). */
export const ANONYMOUS_USERNAME = "system:anonymous";
/** The API group of the `userextras` and `uids` resources (`authentication.k8s.io`). */
export const AUTHENTICATION_GROUP = "authentication.k8s.io";

const EXTRA_PREFIX = IMPERSONATE_EXTRA_PREFIX.toLowerCase();

/**
 * An authorizer as impersonation asks it: whether `user` may do what `attrs` describe (for the
 * hub, src/auth/rbac-store.ts `decide`: `system:masters`, then RBAC).
 */
export type ImpersonationAuthorizer = (user: UserInfo, attrs: ResourceAttributes) => Promise<Decision>;

/**
 * True for a header of impersonation (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`), by a
 * case-insensitive match: a proxy that forwards a request as its impersonated user removes them,
 * as kube-apiserver clears them before its handlers run.
 */
export function isImpersonationHeader(name: string): boolean {
  const n = name.toLowerCase();
  return n === "impersonate-user" || n === "impersonate-group" || n === "impersonate-uid" || n.startsWith(EXTRA_PREFIX);
}

/**
 * Kubernetes' SplitUsername: the namespace and name of a ServiceAccount user name
 * `system:serviceaccount:NS:NAME` (NS a DNS-1123 label, NAME a DNS-1123 subdomain), or null for
 * any other name (which is then an ordinary user's).
 *
 * @example splitServiceAccountUsername("system:serviceaccount:ci:deployer") // { namespace: "ci", name: "deployer" }
 * @example splitServiceAccountUsername("system:serviceaccount:ci") // null
 */
export function splitServiceAccountUsername(username: string): { namespace: string; name: string } | null {
  if (!username.startsWith(SERVICE_ACCOUNT_USERNAME_PREFIX)) return null;
  const parts = username.slice(SERVICE_ACCOUNT_USERNAME_PREFIX.length).split(":");
  if (parts.length !== 2) return null;
  const [namespace, name] = parts as [string, string];
  if (isDNS1123Label(namespace).length > 0 || isDNS1123Subdomain(name).length > 0) return null;
  return { namespace, name };
}

/** Go's url.PathUnescape for an extra key: decoded, or as sent when it does not decode. */
function unescapeExtraKey(key: string): string {
  try {
    return decodeURIComponent(key);
  } catch {
    return key;
  }
}

/** The values of a repeatable header (joined with `, ` by the Fetch API), trimmed, empty ones dropped. */
function listValues(value: string | null): string[] {
  if (value === null) return [];
  return value
    .split(",")
    .map((v) => v.trim())
    .filter((v) => v !== "");
}

/**
 * One thing a request asks to impersonate (Kubernetes' impersonation ObjectReference): its kind,
 * the attributes it is authorized with (verb `impersonate`), a text for messages, and for an
 * extra value its decoded key.
 */
export interface ImpersonationItem {
  kind: "ServiceAccount" | "User" | "Group" | "UserExtra" | "UID";
  /** The authorization attributes (verb `impersonate`). */
  attributes: ResourceAttributes;
  /** For the 400's message. */
  text: string;
  /** UserExtra: the (decoded) key. */
  key?: string;
}

/**
 * Kubernetes' buildImpersonationRequests: what the request's headers ask to impersonate, in the
 * order they are authorized (user, groups, extras by header, uid). Empty when the request sends
 * none of the headers.
 * @throws ApiError 400 BadRequest when groups, extras or a uid are asked without `Impersonate-User`
 */
export function impersonationRequests(headers: Headers): ImpersonationItem[] {
  const items: ImpersonationItem[] = [];
  const attrs = (apiGroup: string, resource: string, name: string, more: Partial<ResourceAttributes> = {}): ResourceAttributes => ({
    verb: IMPERSONATE_VERB,
    apiGroup,
    apiVersion: "v1",
    resource,
    name,
    ...more,
  });
  const requestedUser = headers.get(IMPERSONATE_USER_HEADER) ?? "";
  const hasUser = requestedUser !== "";
  if (hasUser) {
    const sa = splitServiceAccountUsername(requestedUser);
    items.push(
      sa
        ? {
            kind: "ServiceAccount",
            attributes: attrs("", "serviceaccounts", sa.name, { namespace: sa.namespace }),
            text: `serviceaccount ${sa.namespace}/${sa.name}`,
          }
        : { kind: "User", attributes: attrs("", "users", requestedUser), text: `user ${JSON.stringify(requestedUser)}` },
    );
  }
  let others = false;
  for (const group of listValues(headers.get(IMPERSONATE_GROUP_HEADER))) {
    others = true;
    items.push({ kind: "Group", attributes: attrs("", "groups", group), text: `group ${JSON.stringify(group)}` });
  }
  // The names alone (the Fetch API's are lower case already); a value is read only for an extra.
  for (const name of headers.keys()) {
    const lower = name.toLowerCase();
    if (!lower.startsWith(EXTRA_PREFIX)) continue;
    const key = unescapeExtraKey(lower.slice(EXTRA_PREFIX.length));
    for (const v of listValues(headers.get(name))) {
      others = true;
      items.push({
        kind: "UserExtra",
        key,
        attributes: attrs(AUTHENTICATION_GROUP, "userextras", v, { subresource: key }),
        text: `extra ${JSON.stringify(key)}=${JSON.stringify(v)}`,
      });
    }
  }
  const uid = headers.get(IMPERSONATE_UID_HEADER) ?? "";
  if (uid !== "") {
    others = true;
    items.push({ kind: "UID", attributes: attrs(AUTHENTICATION_GROUP, "uids", uid), text: `uid ${JSON.stringify(uid)}` });
  }
  if (others && !hasUser) {
    throw badRequest(
      `requested [${items.map((i) => i.text).join(", ")}] without impersonating a user: ${IMPERSONATE_GROUP_HEADER}, ${IMPERSONATE_EXTRA_PREFIX}* and ${IMPERSONATE_UID_HEADER} need ${IMPERSONATE_USER_HEADER}`,
    );
  }
  return items;
}

/**
 * The user a request acts as (Kubernetes' WithImpersonation; see the module comment): `requestor`
 * itself (the same object) when `headers` ask no impersonation; otherwise, once `authorize`
 * allowed `requestor` every item asked, the impersonated user (name, groups, uid and extra as
 * asked, with the groups kube-apiserver adds).
 *
 * @param requestor the authenticated user (never one impersonated already)
 * @param headers the request's headers (names matched case-insensitively)
 * @param authorize decides each `impersonate` check for `requestor`
 * @returns the effective user; compare it with `requestor` to know whether the request impersonates
 * @throws ApiError 400 BadRequest for groups, extras or a uid without `Impersonate-User`; 403
 *   Forbidden (kube-apiserver's wording, on the first item denied) when `requestor` may not
 *   impersonate what is asked; whatever `authorize` throws
 *
 * @example
 * await impersonate({ name: "flotilla:admin", groups: ["system:masters"] }, new Headers({ "Impersonate-User": "alice" }), decideFor(env))
 * // { name: "alice", groups: ["system:authenticated"], extra: {} }
 */
export async function impersonate(requestor: UserInfo, headers: Headers, authorize: ImpersonationAuthorizer): Promise<UserInfo> {
  const items = impersonationRequests(headers);
  if (items.length === 0) return requestor;
  const groupsSpecified = items.some((i) => i.kind === "Group");
  let username = "";
  let uid = "";
  let groups: string[] = [];
  const extra: Record<string, string[]> = {};
  for (const item of items) {
    const a = item.attributes;
    switch (item.kind) {
      case "ServiceAccount":
        username = serviceAccountUsername(a.namespace!, a.name!);
        if (!groupsSpecified) groups = serviceAccountGroups(a.namespace!);
        break;
      case "User":
        username = a.name!;
        break;
      case "Group":
        groups.push(a.name!);
        break;
      case "UserExtra":
        (extra[item.key!] ??= []).push(a.name!);
        break;
      case "UID":
        uid = a.name!;
        break;
    }
    const d = await authorize(requestor, a);
    if (!d.allowed) throw forbiddenError(requestor, a, d.reason);
  }
  if (username !== ANONYMOUS_USERNAME) {
    if (!groups.includes(ALL_AUTHENTICATED) && !groups.includes(ALL_UNAUTHENTICATED)) groups.push(ALL_AUTHENTICATED);
  } else if (!groups.includes(ALL_UNAUTHENTICATED)) {
    groups.push(ALL_UNAUTHENTICATED);
  }
  return { name: username, groups, extra, ...(uid ? { uid } : {}) };
}
