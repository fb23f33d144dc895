/**
 * Authentication, impersonation and RBAC authorization of the simulated cluster, as
 * kube-apiserver's filters do them (facts carried over from `k8s.io/apiserver`
 * `pkg/endpoints/filters/impersonation.go` and `authorization.go`, not code). The RBAC evaluator
 * is the hub's own (src/auth/rbac.ts): one implementation of Kubernetes RBAC.
 *
 * - Authentication: a request without `Authorization` is the cluster admin (`kubernetes-admin`,
 *   groups `system:masters`, `system:authenticated`), as the simulator's kubeconfig has always
 *   been; `Authorization: Bearer <token>` names a user of the static token table
 *   (`SimulatedClusterOptions.users`, like kube-apiserver's `--token-auth-file`); any other
 *   credential is 401 Unauthorized.
 * - Impersonation: `Impersonate-User` (with optional `Impersonate-Group` headers, one per group,
 *   and `Impersonate-Uid`) makes the request act as that user once the requester is allowed the
 *   verb `impersonate` on: `serviceaccounts` (core group) named NAME in namespace NS for the user
 *   `system:serviceaccount:NS:NAME`, else `users` named after the user; `groups` named after each
 *   group asked for; `uids` named after the uid. A ServiceAccount user without groups asked for
 *   gets its groups `system:serviceaccounts` and `system:serviceaccounts:NS`; every impersonated
 *   user but `system:anonymous` gets `system:authenticated`. A refusal is kube-apiserver's 403
 *   (`serviceaccounts "deployer" is forbidden: User "agent" cannot impersonate resource
 *   "serviceaccounts" in API group "" in the namespace "apps"`); groups or a uid without a user
 *   are 400 BadRequest.
 * - Authorization: every request of a user outside `system:masters` is checked by RBAC over the
 *   Roles, ClusterRoles, RoleBindings and ClusterRoleBindings stored in the cluster, plus
 *   kube-apiserver's bootstrap `system:discovery`, `system:basic-user` and
 *   `system:public-info-viewer` roles bound to every authenticated user; a denial is
 *   kube-apiserver's 403 Forbidden Status (src/auth/rbac.ts `forbiddenError`).
 */
import type { IncomingMessage } from "node:http";
import {
  ALL_AUTHENTICATED,
  forbiddenError,
  SERVICE_ACCOUNT_USERNAME_PREFIX,
  serviceAccountGroups,
  SYSTEM_MASTERS,
  type ClusterRole,
  type ClusterRoleBinding,
  type RequestAttributes,
  type Role,
  type RoleBinding,
  type UserInfo,
} from "../../src/auth/rbac-types.ts";
import { BOOTSTRAP_CLUSTER_ROLE_BINDINGS, BOOTSTRAP_CLUSTER_ROLES } from "../../src/auth/rbac-bootstrap.ts";
import { RbacAuthorizer } from "../../src/auth/rbac.ts";
import { ApiError, badRequest } from "./errors.ts";
import type { Cluster } from "./cluster.ts";

export type { UserInfo };

/** The user of a request without credentials: the cluster admin, as the simulator's kubeconfig. */
export const SIM_ADMIN: UserInfo = { name: "kubernetes-admin", groups: [SYSTEM_MASTERS, ALL_AUTHENTICATED] };

/** The anonymous user's name, which impersonation does not give `system:authenticated`. */
const ANONYMOUS = "system:anonymous";

/** Kubernetes' bootstrap roles every authenticated user holds on any cluster (discovery, self reviews, version). */
const BASELINE_ROLES = new Set(["system:discovery", "system:basic-user", "system:public-info-viewer"]);

const RBAC = "rbac.authorization.k8s.io";

/**
 * The authenticator and authorizer of one simulated cluster: the static token table, and an
 * {@link RbacAuthorizer} over the cluster's stored RBAC objects, rebuilt after any of them changes.
 */
export class SimAuth {
  private authorizer: RbacAuthorizer | undefined;
  private readonly tokens: Map<string, UserInfo>;

  /**
   * @param cluster the cluster whose RBAC objects decide.
   * @param users bearer token → user (`groups` get `system:authenticated` added).
   */
  constructor(
    private readonly cluster: Cluster,
    users: Record<string, UserInfo> = {},
  ) {
    this.tokens = new Map(Object.entries(users).map(([t, u]) => [t, { ...u, groups: [...new Set([...(u.groups ?? []), ALL_AUTHENTICATED])] }]));
    cluster.store.subscribe((e) => {
      if (e.group === RBAC) this.authorizer = undefined;
    });
  }

  private rbac(): RbacAuthorizer {
    if (this.authorizer) return this.authorizer;
    const list = <T>(plural: string): T[] => {
      const rt = this.cluster.registry.byPlural(RBAC, "v1", plural);
      return rt ? (this.cluster.list(rt, undefined).items as unknown as T[]) : [];
    };
    this.authorizer = new RbacAuthorizer({
      roles: list<Role>("roles"),
      clusterRoles: [...list<ClusterRole>("clusterroles"), ...BOOTSTRAP_CLUSTER_ROLES.filter((r) => BASELINE_ROLES.has(r.metadata.name))],
      roleBindings: list<RoleBinding>("rolebindings"),
      clusterRoleBindings: [
        ...list<ClusterRoleBinding>("clusterrolebindings"),
        ...BOOTSTRAP_CLUSTER_ROLE_BINDINGS.filter((b) => BASELINE_ROLES.has(b.roleRef.name)),
      ],
    });
    return this.authorizer;
  }

  /** Whether `user` may do what `attrs` asks (`system:masters`, then RBAC). */
  allowed(user: UserInfo, attrs: RequestAttributes): boolean {
    return this.rbac().authorize(user, attrs).allowed;
  }

  /** @throws ApiError 403 worded as kube-apiserver's when `user` may not do what `attrs` asks */
  authorize(user: UserInfo, attrs: RequestAttributes): void {
    const d = this.rbac().authorize(user, attrs);
    if (!d.allowed) throw forbiddenError(user, attrs, d.reason);
  }

  /** The rules `user` holds in `namespace` (SelfSubjectRulesReview). */
  rulesReview(user: UserInfo, namespace: string): ReturnType<RbacAuthorizer["rulesReview"]> {
    return this.rbac().rulesReview(user, namespace);
  }

  /**
   * The user a request acts as: authenticated from its credentials, then impersonated when it
   * asks to be (see the module comment).
   * @throws ApiError 401 (unknown credentials), 400 (impersonation without a user), 403 (not allowed to impersonate)
   */
  userOf(req: IncomingMessage): UserInfo {
    const auth = req.headers.authorization;
    let requester = SIM_ADMIN;
    if (auth !== undefined) {
      const m = /^Bearer\s+(\S+)$/i.exec(auth);
      const user = m ? this.tokens.get(m[1]!) : undefined;
      if (!user) throw new ApiError(401, "Unauthorized", "Unauthorized");
      requester = user;
    }
    const headers = req.headersDistinct;
    const asUser = headers["impersonate-user"]?.[0];
    const asGroups = headers["impersonate-group"] ?? [];
    const asUid = headers["impersonate-uid"]?.[0];
    const extras = Object.keys(headers).filter((h) => h.startsWith("impersonate-extra-"));
    if (asUser === undefined) {
      if (asGroups.length > 0 || asUid !== undefined || extras.length > 0) {
        throw badRequest(
          `requested [${[...asGroups.map((g) => `{Group ${g}}`), ...(asUid !== undefined ? [`{UID ${asUid}}`] : [])].join(" ")}] without impersonating a user`,
        );
      }
      return requester;
    }
    let groups: string[] = [];
    const may = (attrs: RequestAttributes): void => this.authorize(requester, attrs);
    if (asUser.startsWith(SERVICE_ACCOUNT_USERNAME_PREFIX) && asUser.split(":").length === 4) {
      const [, , namespace, name] = asUser.split(":") as [string, string, string, string];
      may({ verb: "impersonate", apiGroup: "", resource: "serviceaccounts", namespace, name });
      if (asGroups.length === 0) groups = serviceAccountGroups(namespace);
    } else {
      may({ verb: "impersonate", apiGroup: "", resource: "users", name: asUser });
    }
    for (const g of asGroups) {
      may({ verb: "impersonate", apiGroup: "", resource: "groups", name: g });
      groups.push(g);
    }
    if (asUid !== undefined) may({ verb: "impersonate", apiGroup: "authentication.k8s.io", resource: "uids", name: asUid });
    const extra: Record<string, string[]> = {};
    for (const h of extras) {
      const key = decodeURIComponent(h.slice("impersonate-extra-".length));
      const values = headers[h] ?? [];
      for (const v of values) may({ verb: "impersonate", apiGroup: "authentication.k8s.io", resource: "userextras", subresource: key, name: v });
      extra[key] = values;
    }
    if (asUser !== ANONYMOUS && !groups.includes(ALL_AUTHENTICATED)) groups.push(ALL_AUTHENTICATED);
    return { name: asUser, groups, ...(asUid !== undefined ? { uid: asUid } : {}), ...(extras.length ? { extra } : {}) };
  }
}
