/**
 * Admission of a ManagedClusterAddOn write by a user of the API: the add-on manager acts on the
 * add-on's configs for whoever wrote them, so a config reference is admitted only when its writer
 * could follow it themself (the hub's rule: a controller acting for a user follows only references
 * that user could follow), and the manager's own record of what it resolved stays its own.
 *
 * - `spec.configs`: each config reference that a write adds or changes (one kept as it was is not
 *   checked again, as OCM's executor check) needs the writer to be allowed, by the hub's RBAC:
 *   - an AddOnDeploymentConfig: `get` on `addondeploymentconfigs` of group
 *     `addon.open-cluster-management.io` in the config's namespace, for its name (its variables,
 *     proxy settings and registries are rendered into the add-on's work, which the writer reads);
 *   - an AddOnTemplate: `get` on `addontemplates` for its name (its manifests, Secrets included,
 *     are rendered the same way), and, for each `hubPermissions` binding the template holds, what
 *     creating that RoleBinding needs (Kubernetes' escalation check: the role's rules held, or
 *     `bind` on it): a `CurrentCluster` ClusterRole in the add-on's namespace, a `SingleNamespace`
 *     role in its namespace. The add-on's hub credential gets those bindings, and whoever may run
 *     works in the cluster's namespace holds that credential.
 *   OCM follows these references without a check; its CRDs and webhooks leave that to RBAC on the
 *   hub, which a namespace's `edit` grant defeats here (issue 39).
 * - `status.configReferences` is the add-on manager's record of the configs it resolved and rolled
 *   out (src/addons/manager.ts), which the deploy work and the add-on's hub permissions follow
 *   (src/addons/token-registration.ts); a write by a user outside `system:masters` keeps it as
 *   stored (as a spec write keeps the status), so an add-on's agent, or anyone granted
 *   `managedclusteraddons/status`, cannot name another template or config there.
 *
 * The refusal is 403 Forbidden worded as Kubernetes' authorizer words a refusal:
 * `managedclusteraddons.addon.open-cluster-management.io "<name>" is forbidden: user "<user>"
 * cannot get resource "addondeploymentconfigs" in API group "addon.open-cluster-management.io" in
 * the namespace "<ns>" (named in spec.configs)`.
 *
 * It runs as the add-on kind's last write step (`KindDefinition.finalize`) on the object about
 * to be stored and the object as stored, inside the write, for API writes of users outside
 * `system:masters` (src/auth/rbac-store.ts `rbacWriteExtras` passes the author and a reader of
 * the configs); the hub's own writers (the add-on manager, the agent's reports) are not checked.
 */
import { ApiError } from "../k8s/errors.ts";
import type { WriteContext } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { RBAC_AUTHOR_EXTRA, type RbacAuthor } from "./rbac.ts";

/** The key of `WriteContext.extras` under which an API write of a ManagedClusterAddOn carries a reader of add-on configs. */
export const ADDON_CONFIG_READER_EXTRA = "addonConfigReader";

/** Reads an AddOnTemplate (`namespace` "") or an AddOnDeploymentConfig as stored; null when absent. */
export type AddonConfigReader = (resource: "addontemplates" | "addondeploymentconfigs", namespace: string, name: string) => Promise<KubeObject | null>;

const ADDON_GROUP = "addon.open-cluster-management.io";

interface ConfigRef {
  group?: string;
  resource?: string;
  namespace?: string;
  name?: string;
}

interface HubPermission {
  type?: string;
  currentCluster?: { clusterRoleName?: string };
  singleNamespace?: { namespace?: string; roleRef?: { apiGroup?: string; kind?: string; name?: string } };
}

const refKey = (r: ConfigRef) => JSON.stringify([r.group ?? "", r.resource ?? "", r.namespace ?? "", r.name ?? ""]);

function configsOf(o: KubeObject | null): ConfigRef[] {
  const c = (o?.spec as { configs?: unknown } | undefined)?.configs;
  return Array.isArray(c) ? (c as ConfigRef[]) : [];
}

function refusal(obj: KubeObject, author: RbacAuthor, why: string): ApiError {
  const name = obj.metadata.name;
  return new ApiError(
    403,
    "Forbidden",
    `managedclusteraddons.${ADDON_GROUP} ${JSON.stringify(name)} is forbidden: user ${JSON.stringify(author.user.name)} ${why}`,
    { group: ADDON_GROUP, kind: "managedclusteraddons", name },
  );
}

/** The RoleBindings a template's `hubPermissions` make for an add-on in `clusterNamespace`: `{namespace, roleRef}` each. */
export function templateBindings(
  template: KubeObject | null,
  clusterNamespace: string,
): { namespace: string; roleRef: { apiGroup: string; kind: string; name: string } }[] {
  const registrations = ((template?.spec as { registration?: unknown } | undefined)?.registration ?? []) as {
    type?: string;
    kubeClient?: { hubPermissions?: HubPermission[] };
  }[];
  const out: { namespace: string; roleRef: { apiGroup: string; kind: string; name: string } }[] = [];
  for (const p of registrations.filter((r) => r.type === "KubeClient").flatMap((r) => r.kubeClient?.hubPermissions ?? [])) {
    if (p.type === "CurrentCluster" && p.currentCluster?.clusterRoleName) {
      out.push({
        namespace: clusterNamespace,
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: p.currentCluster.clusterRoleName },
      });
    } else if (p.type === "SingleNamespace" && p.singleNamespace?.namespace && p.singleNamespace.roleRef?.name) {
      out.push({
        namespace: p.singleNamespace.namespace,
        roleRef: {
          apiGroup: p.singleNamespace.roleRef.apiGroup || "rbac.authorization.k8s.io",
          kind: p.singleNamespace.roleRef.kind || "Role",
          name: p.singleNamespace.roleRef.name,
        },
      });
    }
  }
  return out;
}

/**
 * The admission of a ManagedClusterAddOn write from `old` (null: create) to `obj` (see the module
 * comment). Nothing is checked without an author in `ctx.extras` (hub writers, `system:masters`)
 * or for a deletion. Mutates `obj`: `status.configReferences` kept as stored.
 * @throws ApiError 403 Forbidden (a config reference its writer could not follow); errors of D1
 */
export async function admitAddonWrite(obj: KubeObject, old: KubeObject | null, ctx: WriteContext): Promise<void> {
  const author = ctx.extras?.[RBAC_AUTHOR_EXTRA] as RbacAuthor | undefined;
  const read = ctx.extras?.[ADDON_CONFIG_READER_EXTRA] as AddonConfigReader | undefined;
  if (!author || obj.metadata.deletionTimestamp) return;
  // The manager's record stays the manager's.
  const kept = (old?.status as { configReferences?: unknown } | undefined)?.configReferences;
  const status = (obj.status ?? {}) as Record<string, unknown>;
  if (JSON.stringify(status.configReferences) !== JSON.stringify(kept)) {
    if (kept === undefined) delete status.configReferences;
    else status.configReferences = structuredClone(kept);
    if (obj.status !== undefined || kept !== undefined) obj.status = status;
  }
  const before = new Set(configsOf(old).map(refKey));
  const namespace = obj.metadata.namespace ?? "";
  for (const ref of configsOf(obj)) {
    if (before.has(refKey(ref)) || (ref.group ?? "") !== ADDON_GROUP || !ref.name) continue;
    const allowed = (resource: string, ns: string) =>
      author.authorizer.authorize(author.user, { verb: "get", apiGroup: ADDON_GROUP, resource, namespace: ns, name: ref.name }).allowed;
    if (ref.resource === "addondeploymentconfigs") {
      const ns = ref.namespace ?? "";
      if (!allowed("addondeploymentconfigs", ns))
        throw refusal(
          obj,
          author,
          `cannot get resource "addondeploymentconfigs" in API group "${ADDON_GROUP}" in the namespace "${ns}" (named in spec.configs)`,
        );
    } else if (ref.resource === "addontemplates") {
      if (!allowed("addontemplates", ""))
        throw refusal(obj, author, `cannot get resource "addontemplates" in API group "${ADDON_GROUP}" at the cluster scope (named in spec.configs)`);
      const template = read ? await read("addontemplates", "", ref.name) : null;
      for (const b of templateBindings(template, namespace)) {
        const d = author.authorizer.checkBindingEscalation(author.user, { namespace: b.namespace, roleRef: b.roleRef });
        if (!d.allowed)
          throw refusal(
            obj,
            author,
            `cannot grant the AddOnTemplate ${JSON.stringify(ref.name)}'s hub permission ${b.roleRef.kind} ${JSON.stringify(b.roleRef.name)} in the namespace "${b.namespace}" (named in spec.configs): ${d.reason}`,
          );
      }
    }
  }
}
