/**
 * NamespaceLifecycle, kube-apiserver's admission plugin
 * (`k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go`), for the writes of
 * namespaced objects: a create in a namespace that does not exist is refused with the
 * namespace's NotFound (404 `namespaces "X" not found`), one in a namespace being terminated with
 * 403 Forbidden (`unable to create new content in namespace X because it is being terminated`,
 * cause `NamespaceTerminating`). Deletes, updates and cluster-scoped kinds pass. The immortal
 * namespaces' refusal is the Namespace kind's own (src/kinds/namespace.ts `validateDelete`).
 *
 * Admission above the store (src/admission/store.ts `admittedStoreOf`) runs it for every create
 * or apply of a namespaced kind, whoever writes through it. A create of a D1-stored kind checks
 * the namespace in its own commit batch (src/store/types.ts `NamespaceAdmission`: its row exists,
 * not Terminating, no deletionTimestamp; {@link namespaceRefusal} is read only when the commit was
 * refused), so no read precedes it and no delete slips between the check and the commit. An
 * apply (and a dry run) reads the namespace: one indexed D1 read,
 * unless this isolate read it Active within the last {@link NAMESPACE_SEEN_MS} (kube-apiserver's
 * plugin reads its informer's cache, a live lookup only for a namespace it does not find). Every write of a namespace through this isolate forgets it first, so a delete
 * here is seen at once; one in another isolate within that time is seen after it, as an
 * apiserver's informer sees another apiserver's, and what a create put in the namespace meanwhile
 * is deleted by the namespace controller's next pass.
 * Batched writes (`Store.writeMany`) and commits of precomputed changes (`Storage.commit`) are not
 * admitted: the replica set controller's ManifestWorks (in cluster
 * namespaces, created with their clusters) and the scheduler's PlacementDecisions (in the
 * namespace of their Placement, admitted when it was created); what they create in a namespace
 * being deleted is deleted by the namespace controller's next pass (src/namespaces/controller.ts).
 */
import { ApiError, notFound } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { isJsonObject, type KubeObject } from "../k8s/meta.ts";
import type { WriteRequest } from "../k8s/write.ts";
import { NamespaceKind, namespacePhase } from "../kinds/namespace.ts";
import type { Env } from "../env.ts";
import { storeOf } from "../store/store.ts";

/** The Status cause type of a create refused in a terminating namespace (`v1.NamespaceTerminatingCause`). */
export const NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating";

/** Whether NamespaceLifecycle looks at `req` on a kind: a create, or an apply (which may create), of a namespaced kind. */
export function admitsNamespace(def: KindDefinition, req: WriteRequest): boolean {
  return def.namespaced && (req.verb === "create" || (req.verb === "patch" && req.patchType === "apply" && req.subresource === undefined));
}

/** The name NamespaceLifecycle's refusal names: the body's name, else its generateName (admission's `extractResourceName`). */
function nameOf(req: WriteRequest, name: string | undefined): string {
  if (name) return name;
  const body = req.verb === "create" ? req.body : undefined;
  const meta = isJsonObject(body) && isJsonObject(body.metadata) ? body.metadata : {};
  return typeof meta.name === "string" && meta.name ? meta.name : typeof meta.generateName === "string" ? meta.generateName : "";
}

/**
 * The 403 of a create in a terminating namespace, exactly as kube-apiserver's: message
 * `<plural>[.<group>] "<name>" is forbidden: unable to create new content in namespace <ns>
 * because it is being terminated`, with the `NamespaceTerminating` cause on `metadata.namespace`.
 */
export function namespaceTerminating(def: KindDefinition, namespace: string, name: string): ApiError {
  const resource = def.group ? `${def.plural}.${def.group}` : def.plural;
  return new ApiError(
    403,
    "Forbidden",
    `${resource} ${JSON.stringify(name)} is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
    {
      name,
      group: def.group,
      kind: def.plural,
      causes: [{ reason: NAMESPACE_TERMINATING_CAUSE, message: `namespace ${namespace} is being terminated`, field: "metadata.namespace" }],
    },
  );
}

/**
 * How long, in milliseconds of elapsed time, a namespace this isolate read Active admits creates
 * without a read of its own (see the module comment).
 */
export const NAMESPACE_SEEN_MS = 1000;

/** Most namespaces remembered at once (past it, the isolate starts afresh). */
const NAMESPACE_SEEN_MAX = 1000;

/** Namespaces this isolate read Active, and when (performance.now(), elapsed milliseconds). */
const seenActive = new Map<string, number>();

/** Whether namespace `ns` admits new content: neither Terminating nor being deleted. */
function admitsContent(ns: KubeObject): boolean {
  return namespacePhase(ns) !== "Terminating" && !ns.metadata.deletionTimestamp;
}

/**
 * Remembers a read of namespace `name` (`ns` null: it does not exist) for NamespaceLifecycle's
 * next check (see the module comment): an Active one is remembered for
 * {@link NAMESPACE_SEEN_MS}, anything else forgotten. src/admission/store.ts calls it on each
 * read of a namespace through the admitted store.
 */
export function sawNamespace(name: string, ns: KubeObject | null): void {
  if (!ns || !admitsContent(ns)) {
    seenActive.delete(name);
    return;
  }
  if (seenActive.size >= NAMESPACE_SEEN_MAX) seenActive.clear();
  seenActive.set(name, performance.now());
}

/** Forgets namespace `name` (a write of it is under way): the next check reads it. */
export function forgetNamespace(name: string): void {
  seenActive.delete(name);
}

/** Whether this isolate read namespace `name` Active within {@link NAMESPACE_SEEN_MS}. */
function seenActiveRecently(name: string): boolean {
  const at = seenActive.get(name);
  if (at === undefined) return false;
  if (performance.now() - at <= NAMESPACE_SEEN_MS) return true;
  seenActive.delete(name);
  return false;
}

/**
 * NamespaceLifecycle for one write of kind `def` in `namespace` (see the module comment).
 * `exists` tells, for an apply into a terminating namespace, whether the object exists (an
 * apply that updates is let through, one that would create is refused).
 * @throws ApiError 404 when the namespace does not exist, 403 when it is terminating
 */
export async function admitNamespace(
  env: Env,
  def: KindDefinition,
  namespace: string,
  name: string | undefined,
  req: WriteRequest,
  exists: () => Promise<boolean>,
): Promise<void> {
  if (!admitsNamespace(def, req)) return;
  if (seenActiveRecently(namespace)) return;
  const ns = await storeOf(env, NamespaceKind).get("", namespace);
  sawNamespace(namespace, ns);
  if (!ns) throw notFound({ group: "", plural: NamespaceKind.plural, name: namespace });
  if (admitsContent(ns)) return;
  if (req.verb === "patch" && (await exists())) return;
  throw namespaceTerminating(def, namespace, nameOf(req, name));
}

/**
 * NamespaceLifecycle's refusal of a create of kind `def` named `name` in `namespace`, read now
 * (one indexed D1 read): 404 NotFound when the namespace does not exist, 403 Forbidden when it is
 * terminating, null when it admits new content. What the D1 store asks for when a create whose
 * namespace check was a precondition of its commit was refused (src/admission/store.ts,
 * src/store/types.ts `NamespaceAdmission`).
 * @throws errors of D1
 */
export async function namespaceRefusal(
  env: Env,
  def: KindDefinition,
  namespace: string,
  name: string | undefined,
  req: WriteRequest,
): Promise<ApiError | null> {
  const ns = await storeOf(env, NamespaceKind).get("", namespace);
  sawNamespace(namespace, ns);
  if (!ns) return notFound({ group: "", plural: NamespaceKind.plural, name: namespace });
  return admitsContent(ns) ? null : namespaceTerminating(def, namespace, nameOf(req, name));
}

/**
 * NamespaceLifecycle for creates of kind `def` in each of `namespaces` at once (a recorder's
 * Events in many clusters' namespaces: src/events/record.ts): the namespaces this isolate did not
 * read Active within {@link NAMESPACE_SEEN_MS} are read together, in one D1 call. Returns the
 * namespaces that refuse new content, each with its refusal (404 NotFound: no such namespace;
 * 403 Forbidden: terminating), as {@link admitNamespace} throws it for one.
 * @throws errors of D1
 */
export async function admitNamespaces(env: Env, def: KindDefinition, namespaces: Iterable<string>): Promise<Map<string, ApiError>> {
  const refused = new Map<string, ApiError>();
  if (!def.namespaced) return refused;
  const unseen = [...new Set(namespaces)].filter((n) => !seenActiveRecently(n));
  if (unseen.length === 0) return refused;
  const read = await storeOf(env, NamespaceKind).getMany(unseen.map((name) => ({ namespace: "", name })));
  unseen.forEach((namespace, i) => {
    const ns = read[i] ?? null;
    sawNamespace(namespace, ns);
    if (!ns) refused.set(namespace, notFound({ group: "", plural: NamespaceKind.plural, name: namespace }));
    else if (!admitsContent(ns)) refused.set(namespace, namespaceTerminating(def, namespace, ""));
  });
  return refused;
}

/**
 * OCM's check on accepting a cluster (`pkg/registration/webhook/v1/managedcluster_validating.go`,
 * `validateAcceptByClusterNamespace`): setting `hubAcceptsClient: true` on ManagedCluster `name`
 * (at create, or changing it from false) is refused while the cluster's namespace is being
 * deleted, since what acceptance creates there would be deleted with it. A missing namespace is
 * fine (acceptance creates it: src/namespaces/controller.ts). One indexed D1 read, only when a
 * write accepts the cluster.
 * @throws ApiError 403 `managedclusters/accept.cluster.open-cluster-management.io "<name>" is
 *   forbidden: cluster namespace "<name>" is terminating`, as OCM's webhook words it
 */
export async function admitAcceptance(env: Env, name: string): Promise<void> {
  const ns = await storeOf(env, NamespaceKind).get("", name);
  if (!ns || (namespacePhase(ns) !== "Terminating" && !ns.metadata.deletionTimestamp)) return;
  const group = "cluster.open-cluster-management.io";
  throw new ApiError(
    403,
    "Forbidden",
    `managedclusters/accept.${group} ${JSON.stringify(name)} is forbidden: cluster namespace ${JSON.stringify(name)} is terminating`,
    { name, group, kind: "managedclusters/accept" },
  );
}
