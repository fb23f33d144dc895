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
 *   add-on's own ManagedClusterAddOn (resourceNames: the add-on only; no status write, as OCM's
 *   add-on agents have none), bound to that ServiceAccount;
 * - the AddOnTemplate's `registration[].kubeClient.hubPermissions`, as OCM's template add-on binds
 *   them: `CurrentCluster` a RoleBinding `open-cluster-management:<addon>:clusterrole:agent` of the
 *   ClusterRole in the cluster's namespace, `SingleNamespace` a RoleBinding
 *   `open-cluster-management:<addon>:<role kind>:agent` in that namespace (not owned: another
 *   namespace, as OCM's); they follow the template the add-on manager resolved (never one named by
 *   status the add-on could write) and go when it no longer grants them ({@link syncHubPermissions});
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
import { racing } from "../k8s/racing.ts";
import { rfc3339, setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { AddOnTemplateKind, ClusterManagementAddOnKind, ManagedClusterAddOnKind } from "../kinds/addon.ts";
import { RoleBindingKind, RoleKind } from "../kinds/rbac.ts";
import { ServiceAccountKind } from "../kinds/serviceaccount.ts";
import { hubKeySource, issuerOf } from "../auth/serviceaccounts.ts";
import { DEFAULT_TOKEN_EXPIRATION_SECONDS, issueServiceAccountToken } from "../auth/serviceaccount-token.ts";
import { serviceAccountUsername } from "../auth/rbac-types.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { templateBindings } from "../kinds/addon-admission.ts";
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
  const mcas = admittedStoreOf(env, ManagedClusterAddOnKind);
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
  const role = await ensure(env, RoleKind, cluster, roleName, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: roleName, namespace: cluster, labels, ownerReferences: [owner] },
    rules: agentRules(addon),
  });
  // A Role made before its status write was taken away (issue 39) loses it now.
  if (JSON.stringify(role.rules) !== JSON.stringify(agentRules(addon)))
    await racing(() =>
      admittedStoreOf(env, RoleKind).write(cluster, roleName, { verb: "update", body: { ...role, rules: agentRules(addon) } }, { known: role }),
    );
  const subjects = [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: user }];
  await ensure(
    env,
    RoleBindingKind,
    cluster,
    roleName,
    binding(roleName, cluster, { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: roleName }, subjects, labels, owner),
  );
  await syncHubPermissions(env, cluster, addon, template, owner);
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

/**
 * The add-on agent's own Role: read its ManagedClusterAddOn (nothing else, not its status: OCM's
 * add-on agents get only what their template's `hubPermissions` grant; the status is the hub's
 * and the cluster agent's to write, and its `configReferences` decide what the add-on is bound
 * to, issue 39).
 */
function agentRules(addon: string): Record<string, unknown>[] {
  return [{ apiGroups: [ManagedClusterAddOnKind.group], resources: ["managedclusteraddons"], resourceNames: [addon], verbs: ["get", "list", "watch"] }];
}

/** The annotation on an add-on's ServiceAccount recording the hub permissions last bound for it (JSON), so that a run that changes nothing reads nothing else. */
export const HUB_PERMISSIONS_ANNOTATION = "addon.flotilla.dev/hub-permissions";

/** A RoleBinding's name for a hub permission of `addon` (OCM's: `open-cluster-management:<addon>:<role kind>:agent`). */
function permissionBindingName(addon: string, roleKind: string): string {
  return `open-cluster-management:${addon}:${roleKind.toLowerCase()}:agent`;
}

type Subject = { kind?: string; apiGroup?: string; name?: string; namespace?: string };
type RoleRef = { apiGroup: string; kind: string; name: string };

/**
 * Makes the RoleBindings of the add-on `addon`'s ServiceAccount in cluster `cluster` be exactly
 * those `template`'s `hubPermissions` grant (OCM's template add-on binds them): a `CurrentCluster`
 * ClusterRole bound in the cluster's namespace (the binding owned by the ManagedClusterAddOn,
 * `owner`), a `SingleNamespace` role bound in its namespace (not owned: another namespace; one
 * binding per namespace and role kind, shared by the add-on's ServiceAccounts of every cluster,
 * each a subject of it). A binding the template no longer grants loses the ServiceAccount's subject
 * and is deleted when it has none left, wherever it is; a `null` template (the add-on removed, or
 * none resolved) takes every one away. Bindings of the same name not labelled as the add-on's
 * token infrastructure are left alone. `cached`: skip the work when the ServiceAccount's
 * {@link HUB_PERMISSIONS_ANNOTATION} already records the same grant (the manager's runs); the token
 * request always checks every binding. Concurrent writers are retried on a fresh read.
 * @throws errors of D1 or an unexpected write failure
 */
export async function syncHubPermissions(
  env: Env,
  cluster: string,
  addon: string,
  template: KubeObject | null,
  owner: object | null,
  cached = false,
): Promise<void> {
  const saName = addonServiceAccountName(addon);
  const user = serviceAccountUsername(cluster, saName);
  const mine = (s: Subject) => s.kind === "User" && s.name === user;
  const wanted: { namespace: string; name: string; roleRef: RoleRef }[] = [];
  for (const b of templateBindings(template, cluster)) {
    const name = permissionBindingName(addon, b.roleRef.kind);
    if (!wanted.some((w) => w.namespace === b.namespace && w.name === name)) wanted.push({ ...b, name });
  }
  const record = JSON.stringify(wanted);
  const sas = admittedStoreOf(env, ServiceAccountKind);
  const sa = await sas.get(cluster, saName);
  if (cached && sa?.metadata.annotations?.[HUB_PERMISSIONS_ANNOTATION] === record) return;
  const labels = { [ADDON_NAME_LABEL]: addon, [TOKEN_INFRASTRUCTURE_LABEL]: "true" };
  const isOurs = (b: KubeObject) => b.metadata.labels?.[ADDON_NAME_LABEL] === addon && b.metadata.labels?.[TOKEN_INFRASTRUCTURE_LABEL] === "true";
  const sameRef = (a: RoleRef, b: unknown) => {
    const r = (b ?? {}) as Partial<RoleRef>;
    return a.apiGroup === r.apiGroup && a.kind === r.kind && a.name === r.name;
  };
  const names = new Set([permissionBindingName(addon, "ClusterRole"), permissionBindingName(addon, "Role"), ...wanted.map((w) => w.name)]);
  const found = (await Promise.all([...names].map((n) => admittedStoreOf(env, RoleBindingKind).listNamed(n)))).flat();
  // Grants no longer wanted: the subject goes, and the binding with its last subject.
  for (const b of found) {
    if (!isOurs(b) || !((b.subjects as Subject[] | undefined) ?? []).some(mine)) continue;
    const w = wanted.find((x) => x.namespace === b.metadata.namespace && x.name === b.metadata.name);
    if (w && sameRef(w.roleRef, b.roleRef)) continue;
    await editSubjects(env, b.metadata.namespace!, b.metadata.name, (subjects) => subjects.filter((s) => !mine(s)));
  }
  // Grants wanted: the binding made, or the subject added to it.
  const subject = { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: user };
  const bindings = admittedStoreOf(env, RoleBindingKind);
  for (const w of wanted) {
    for (let attempt = 0; ; attempt++) {
      const current = await bindings.get(w.namespace, w.name);
      if (current && !current.metadata.deletionTimestamp && !isOurs(current)) break;
      let r: KubeObject | null | "lost";
      if (!current || current.metadata.deletionTimestamp) {
        const own = w.namespace === cluster ? owner : null;
        r = await racing(() => bindings.write(w.namespace, w.name, { verb: "create", body: binding(w.name, w.namespace, w.roleRef, [subject], labels, own) }));
      } else if (!sameRef(w.roleRef, current.roleRef)) {
        // A RoleBinding's roleRef cannot change: the old one goes first.
        await racing(() => bindings.write(w.namespace, w.name, { verb: "delete", preconditions: { uid: current.metadata.uid } }));
        if (attempt >= 4) break;
        continue; // made anew on the next pass
      } else if (!((current.subjects as Subject[] | undefined) ?? []).some(mine)) {
        const next = { ...current, subjects: [...((current.subjects as Subject[] | undefined) ?? []), subject] };
        r = await racing(() => bindings.write(w.namespace, w.name, { verb: "update", body: next }, { known: current }));
      } else break;
      if (r !== "lost" || attempt >= 4) break;
    }
  }
  if (sa && !sa.metadata.deletionTimestamp && sa.metadata.annotations?.[HUB_PERMISSIONS_ANNOTATION] !== record) {
    const next = { ...sa, metadata: { ...sa.metadata, annotations: { ...(sa.metadata.annotations ?? {}), [HUB_PERMISSIONS_ANNOTATION]: record } } };
    await racing(() => sas.write(cluster, saName, { verb: "update", body: next }, { known: sa }));
  }
}

/** Rewrites a RoleBinding's subjects by `edit` (deleted when none are left), on a fresh read after a lost race. */
async function editSubjects(env: Env, namespace: string, name: string, edit: (subjects: Subject[]) => Subject[]): Promise<void> {
  const bindings = admittedStoreOf(env, RoleBindingKind);
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await bindings.get(namespace, name);
    if (!current || current.metadata.deletionTimestamp) return;
    const before = (current.subjects as Subject[] | undefined) ?? [];
    const after = edit(before);
    if (after.length === before.length) return;
    const r =
      after.length === 0
        ? await racing(() => bindings.write(namespace, name, { verb: "delete", preconditions: { uid: current.metadata.uid } }))
        : await racing(() => bindings.write(namespace, name, { verb: "update", body: { ...current, subjects: after } }, { known: current }));
    if (r !== "lost") return;
  }
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
async function ensure(
  env: Env,
  def: Parameters<typeof admittedStoreOf>[1],
  namespace: string,
  name: string,
  body: Record<string, unknown>,
): Promise<KubeObject> {
  const store = admittedStoreOf(env, def);
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

function templateRegistrations(template: KubeObject | null): { type?: string }[] {
  return ((template?.spec as { registration?: unknown } | undefined)?.registration as { type?: string }[] | undefined) ?? [];
}

/**
 * The AddOnTemplate the add-on uses, as OCM's template add-on reads it
 * (`GetDesiredAddOnTemplate`): the desired config of its `status.configReferences`, which the
 * add-on manager resolves from what the hub controls (the ClusterManagementAddOn's defaults and
 * install strategy, the ManagedClusterAddOn's `spec.configs`, admitted against their writer:
 * src/kinds/addon-admission.ts) and rolls out, and which no one else writes (the add-on's own
 * credential has no status write; any other writer outside `system:masters` has it kept as
 * stored); else its ClusterManagementAddOn's default AddOnTemplate; null when none.
 */
export async function templateOf(env: Env, mca: KubeObject): Promise<KubeObject | null> {
  type Ref = { group?: string; resource?: string; name?: string; desiredConfig?: { name?: string } | null; defaultConfig?: { name?: string } };
  const isTemplate = (r: Ref) => r.group === AddOnTemplateKind.group && r.resource === AddOnTemplateKind.plural;
  const refs = ((mca.status as { configReferences?: Ref[] } | undefined)?.configReferences ?? []).filter(isTemplate);
  let name = refs.map((r) => r.desiredConfig?.name || r.name).find(Boolean);
  if (!name) {
    const cma = await admittedStoreOf(env, ClusterManagementAddOnKind).get("", mca.metadata.name);
    const supported = ((cma?.spec as { supportedConfigs?: Ref[] } | undefined)?.supportedConfigs ?? []).filter(isTemplate);
    name = supported.map((r) => r.defaultConfig?.name).find(Boolean);
  }
  return name ? admittedStoreOf(env, AddOnTemplateKind).get("", name) : null;
}

/**
 * Records the registration on the ManagedClusterAddOn's status, as OCM's agent and hub do: the
 * kubeClient registration with the ServiceAccount's user as its subject, the `token` driver,
 * `TokenInfrastructureReady` and `RegistrationApplied` True. Writes only what changed; a write
 * that lost a race is made again on the object read anew.
 */
async function recordRegistration(env: Env, cluster: string, addon: string, user: string, readyMessage: string, now: number): Promise<void> {
  const store = admittedStoreOf(env, ManagedClusterAddOnKind);
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
