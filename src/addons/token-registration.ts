/**
 * Token-based add-on registration (OCM's `token` kubeClient driver: the hub's
 * `addontokeninfra` controller and the registration agent's `register/token` driver), served to a
 * cluster's agent (`addon-token`, docs/agent-protocol.md "Add-ons"): an add-on agent that needs the
 * hub gets a ServiceAccount token of its own, for the ServiceAccount `<addon>-agent` in its
 * cluster's namespace, which the Flotilla agent writes into the Secret `<addon>-hub-kubeconfig`
 * in the add-on's install namespace and replaces before it expires.
 *
 * When an agent asks, the hub makes sure of the add-on's registration infrastructure, in the
 * cluster's namespace, each object owned by the ManagedClusterAddOn (the garbage collector removes
 * them with it, and deleting the ServiceAccount revokes every token issued for it):
 * - the ServiceAccount `<addon>-agent` (OCM's name and labels
 *   `addon.open-cluster-management.io/name`, `addon.open-cluster-management.io/token-infrastructure`);
 * - least privilege by default: a Role `open-cluster-management:<addon>:agent` that reads the
 *   add-on's own ManagedClusterAddOn and writes its status (resourceNames: the add-on only), bound
 *   to that ServiceAccount;
 * - the AddOnTemplate's `registration[].kubeClient.hubPermissions`, as OCM's template add-on binds
 *   them: `CurrentCluster` a RoleBinding `open-cluster-management:<addon>:clusterrole:agent` of the
 *   ClusterRole in the cluster's namespace, `SingleNamespace` a RoleBinding
 *   `open-cluster-management:<addon>:<role kind>:agent` in that namespace (not owned: another
 *   namespace, as OCM's);
 * and records it on the ManagedClusterAddOn's status as OCM does: the kubeClient registration's
 * subject `system:serviceaccount:<cluster>:<addon>-agent` and driver `token`
 * (`status.kubeClientDriver` in v1alpha1), conditions `TokenInfrastructureReady` ("ServiceAccount
 * <ns>/<name> (UID: <uid>) is ready") and `RegistrationApplied` (`SetPermissionApplied`).
 *
 * An add-on registers when its ManagedClusterAddOn has a kubeClient registration
 * (`status.registrations[].signerName` `kubernetes.io/kube-apiserver-client`), or, before the
 * add-on manager has filled those in, when its AddOnTemplate (its `status.configReferences`, else
 * its ClusterManagementAddOn's default config) declares one. The token is a secret: it is answered
 * to the agent and written nowhere on the hub.
 */
import { ApiError, conflict, notFound } from "../k8s/errors.ts";
import { rfc3339, setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { AddOnTemplateKind, ClusterManagementAddOnKind, ManagedClusterAddOnKind } from "../kinds/addon.ts";
import { RoleBindingKind, RoleKind } from "../kinds/rbac.ts";
import { ServiceAccountKind } from "../kinds/serviceaccount.ts";
import { hubKeySource, issuerOf } from "../auth/serviceaccounts.ts";
import { DEFAULT_TOKEN_EXPIRATION_SECONDS, issueServiceAccountToken } from "../auth/serviceaccount-token.ts";
import { serviceAccountUsername } from "../auth/rbac.ts";
import { storeOf } from "../store/store.ts";
import type { Env } from "../env.ts";

/** The signer of a kubeClient registration in ManagedClusterAddOn `v1alpha1` (OCM's `KubeAPIServerClientSignerName`). */
export const KUBE_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client";
/** OCM's label naming the add-on a token-infrastructure object is for. */
export const ADDON_NAME_LABEL = "addon.open-cluster-management.io/name";
/** OCM's label marking the token infrastructure. */
export const TOKEN_INFRASTRUCTURE_LABEL = "addon.open-cluster-management.io/token-infrastructure";
/** OCM's condition: the ServiceAccount infrastructure for token registration is ready. */
export const TOKEN_INFRASTRUCTURE_READY = "TokenInfrastructureReady";
/** OCM's condition: the add-on agent's registration is configured (permissions set). */
export const REGISTRATION_APPLIED = "RegistrationApplied";

/** The add-on's ServiceAccount on the hub (OCM's naming: `<addon>-agent`). */
export function addonServiceAccountName(addon: string): string {
  return `${addon}-agent`;
}

/** What the agent gets: the token and when it expires (RFC 3339). */
export interface AddonToken {
  token: string;
  expirationTimestamp: string;
}

interface HubPermission {
  type?: string;
  currentCluster?: { clusterRoleName?: string };
  singleNamespace?: { namespace?: string; roleRef?: { apiGroup?: string; kind?: string; name?: string } };
}

/**
 * Issues a token for add-on `addon` of cluster `cluster` (see the module comment), after making
 * sure of its infrastructure; `origin` is the hub's URL as the agent reached it (the token's issuer
 * unless `FLOTILLA_SERVICE_ACCOUNT_ISSUER` is set), `expirationSeconds` its lifetime (validated by
 * the protocol: 600 to 2^32; default one hour as a TokenRequest's), `now` epoch milliseconds.
 * @throws ApiError 404 no such ManagedClusterAddOn in the cluster's namespace; 409 one being
 *   deleted, or without a kubeClient registration; what the writes throw.
 */
export async function issueAddonToken(
  env: Env,
  cluster: string,
  addon: string,
  origin: string,
  expirationSeconds: number | undefined,
  now: number,
): Promise<AddonToken> {
  const mcas = storeOf(env, ManagedClusterAddOnKind);
  const mca = await mcas.get(cluster, addon);
  const ref = { group: ManagedClusterAddOnKind.group, plural: ManagedClusterAddOnKind.plural, name: addon };
  if (!mca) throw notFound(ref);
  if (mca.metadata.deletionTimestamp) throw conflict(ref, `ManagedClusterAddOn ${cluster}/${addon} is being deleted`);
  const template = await templateOf(env, mca);
  const declared = registrationsOf(mca).some((r) => r.signerName === KUBE_CLIENT_SIGNER);
  const templated = templateRegistrations(template).some((r) => r.type === "KubeClient");
  if (!declared && !templated)
    throw conflict(
      ref,
      `ManagedClusterAddOn ${cluster}/${addon} has no kubeClient registration (status.registrations, or its AddOnTemplate's spec.registration)`,
    );

  const owner = {
    apiVersion: `${ManagedClusterAddOnKind.group}/${ManagedClusterAddOnKind.version}`,
    kind: ManagedClusterAddOnKind.kind,
    name: addon,
    uid: mca.metadata.uid!,
  };
  const labels = { [ADDON_NAME_LABEL]: addon, [TOKEN_INFRASTRUCTURE_LABEL]: "true" };
  const saName = addonServiceAccountName(addon);
  const user = serviceAccountUsername(cluster, saName);
  const sa = await ensure(env, ServiceAccountKind, cluster, saName, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: saName, namespace: cluster, labels, ownerReferences: [owner] },
  });
  const roleName = `open-cluster-management:${addon}:agent`;
  await ensure(env, RoleKind, cluster, roleName, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: roleName, namespace: cluster, labels, ownerReferences: [owner] },
    rules: [
      { apiGroups: [ManagedClusterAddOnKind.group], resources: ["managedclusteraddons"], resourceNames: [addon], verbs: ["get", "list", "watch"] },
      { apiGroups: [ManagedClusterAddOnKind.group], resources: ["managedclusteraddons/status"], resourceNames: [addon], verbs: ["get", "patch", "update"] },
    ],
  });
  const subjects = [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: user }];
  await ensure(
    env,
    RoleBindingKind,
    cluster,
    roleName,
    binding(roleName, cluster, { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: roleName }, subjects, labels, owner),
  );
  for (const p of templateRegistrations(template).flatMap((r) => r.kubeClient?.hubPermissions ?? [])) {
    if (p.type === "CurrentCluster" && p.currentCluster?.clusterRoleName) {
      const name = `open-cluster-management:${addon}:clusterrole:agent`;
      await ensure(
        env,
        RoleBindingKind,
        cluster,
        name,
        binding(name, cluster, { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: p.currentCluster.clusterRoleName }, subjects, labels, owner),
      );
    } else if (p.type === "SingleNamespace" && p.singleNamespace?.namespace && p.singleNamespace.roleRef?.name) {
      const roleRef = {
        apiGroup: p.singleNamespace.roleRef.apiGroup || "rbac.authorization.k8s.io",
        kind: p.singleNamespace.roleRef.kind || "Role",
        name: p.singleNamespace.roleRef.name,
      };
      const name = `open-cluster-management:${addon}:${roleRef.kind.toLowerCase()}:agent`;
      await ensure(env, RoleBindingKind, p.singleNamespace.namespace, name, binding(name, p.singleNamespace.namespace, roleRef, subjects, labels, null));
    }
  }
  await recordRegistration(env, cluster, addon, user, `ServiceAccount ${cluster}/${saName} (UID: ${sa.metadata.uid}) is ready`, now);

  const issuer = issuerOf(env, origin || undefined);
  if (!issuer)
    throw new ApiError(
      500,
      "InternalError",
      "the hub's service account issuer is unknown on this connection: set FLOTILLA_SERVICE_ACCOUNT_ISSUER, or reconnect",
    );
  const issued = await issueServiceAccountToken(
    { issuer, keys: hubKeySource(env) },
    { namespace: cluster, name: saName, uid: sa.metadata.uid! },
    { expirationSeconds: expirationSeconds ?? DEFAULT_TOKEN_EXPIRATION_SECONDS },
    now,
  );
  return { token: issued.token, expirationTimestamp: issued.expirationTimestamp };
}

function binding(
  name: string,
  namespace: string,
  roleRef: object,
  subjects: object[],
  labels: Record<string, string>,
  owner: object | null,
): Record<string, unknown> {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name, namespace, labels, ...(owner ? { ownerReferences: [owner] } : {}) },
    roleRef,
    subjects,
  };
}

/** The object at (namespace, name), created from `body` when missing (a create that lost a race reads the winner). */
async function ensure(env: Env, def: Parameters<typeof storeOf>[1], namespace: string, name: string, body: Record<string, unknown>): Promise<KubeObject> {
  const store = storeOf(env, def);
  const found = await store.get(namespace, name);
  if (found && !found.metadata.deletionTimestamp) return found;
  try {
    const { object } = await store.write(namespace, name, { verb: "create", body });
    return object!;
  } catch (e) {
    if (e instanceof ApiError && e.reason === "AlreadyExists") {
      const again = await store.get(namespace, name);
      if (again) return again;
    }
    throw e;
  }
}

/** `status.registrations` of a stored (v1alpha1) ManagedClusterAddOn. */
function registrationsOf(mca: KubeObject): { signerName?: string; subject?: { user?: string; groups?: string[] } }[] {
  return ((mca.status as { registrations?: unknown } | undefined)?.registrations as { signerName?: string }[] | undefined) ?? [];
}

function templateRegistrations(template: KubeObject | null): { type?: string; kubeClient?: { hubPermissions?: HubPermission[] } }[] {
  return ((template?.spec as { registration?: unknown } | undefined)?.registration as { type?: string }[] | undefined) ?? [];
}

/**
 * The AddOnTemplate the add-on uses: the one its `status.configReferences` name (the desired
 * config first), else its ClusterManagementAddOn's default AddOnTemplate; null when none.
 */
async function templateOf(env: Env, mca: KubeObject): Promise<KubeObject | null> {
  type Ref = { group?: string; resource?: string; name?: string; desiredConfig?: { name?: string } | null; defaultConfig?: { name?: string } };
  const isTemplate = (r: Ref) => r.group === AddOnTemplateKind.group && r.resource === AddOnTemplateKind.plural;
  const refs = ((mca.status as { configReferences?: Ref[] } | undefined)?.configReferences ?? []).filter(isTemplate);
  let name = refs.map((r) => r.desiredConfig?.name || r.name).find(Boolean);
  if (!name) {
    const cma = await storeOf(env, ClusterManagementAddOnKind).get("", mca.metadata.name);
    const supported = ((cma?.spec as { supportedConfigs?: Ref[] } | undefined)?.supportedConfigs ?? []).filter(isTemplate);
    name = supported.map((r) => r.defaultConfig?.name).find(Boolean);
  }
  return name ? storeOf(env, AddOnTemplateKind).get("", name) : null;
}

/**
 * Records the registration on the ManagedClusterAddOn's status, as OCM's agent and hub do: the
 * kubeClient registration with the ServiceAccount's user as its subject, the `token` driver,
 * `TokenInfrastructureReady` and `RegistrationApplied` True. Writes only what changed; a write
 * that lost a race is made again on the object read anew.
 */
async function recordRegistration(env: Env, cluster: string, addon: string, user: string, readyMessage: string, now: number): Promise<void> {
  const store = storeOf(env, ManagedClusterAddOnKind);
  for (let attempt = 0; ; attempt++) {
    const mca = await store.get(cluster, addon);
    if (!mca) return;
    const status = structuredClone((mca.status ?? {}) as Record<string, unknown> & { conditions?: Condition[] });
    const conditions = status.conditions ?? [];
    let changed = setCondition(
      conditions,
      { type: TOKEN_INFRASTRUCTURE_READY, status: "True", reason: TOKEN_INFRASTRUCTURE_READY, message: readyMessage },
      rfc3339(now),
    );
    changed =
      setCondition(
        conditions,
        { type: REGISTRATION_APPLIED, status: "True", reason: "SetPermissionApplied", message: "Registration of the addon agent is configured" },
        rfc3339(now),
      ) || changed;
    const regs = registrationsOf(mca).filter((r) => r.signerName !== KUBE_CLIENT_SIGNER);
    const next = [{ signerName: KUBE_CLIENT_SIGNER, subject: { user } }, ...regs];
    if (JSON.stringify(next) !== JSON.stringify(registrationsOf(mca))) changed = true;
    if (status.kubeClientDriver !== "token") changed = true;
    if (!changed) return;
    try {
      await store.write(
        cluster,
        addon,
        { verb: "update", subresource: "status", body: { ...mca, status: { ...status, conditions, registrations: next, kubeClientDriver: "token" } } },
        { known: mca },
      );
      return;
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 409) || attempt >= 3) throw e;
    }
  }
}
