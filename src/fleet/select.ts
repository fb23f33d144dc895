/**
 * Resource selection of a ClusterResourcePlacement or ResourcePlacement, after KubeFleet's
 * `pkg/utils/controller/resource_selector_resolver.go` (`SelectResourcesForPlacement`): the objects
 * its `resourceSelectors` name (group/version/kind, and a name or a label selector, ORed), read
 * from the store; a Namespace selector of a ClusterResourcePlacement also selects what is in the
 * namespace (`selectionScope` NamespaceWithResources, the default), or only the namespace
 * (NamespaceOnly), or the namespace and the namespaced objects the other selectors name in it
 * (NamespaceWithResourceSelectors). A ResourcePlacement selects only in its own namespace.
 *
 * What is never propagated (KubeFleet's `ShouldPropagateObj`, `ShouldPropagateNamespace` and its
 * hub agent's default `ResourceConfig`): objects being deleted, reserved namespaces (`kube-*`,
 * `fleet-*`) and the `default` namespace's content, a namespace's `kube-root-ca.crt` ConfigMap and
 * `default` ServiceAccount, ServiceAccount token Secrets, ReplicaSets and ControllerRevisions with
 * owners, EndpointSlices managed by a controller, Endpoints of a Service, Pods, Nodes, Events,
 * Leases, KubeFleet's own kinds but envelopes; and, on Flotilla, the hub's own control plane (the
 * OCM and Flotilla groups, the cluster inventory) and the namespaces of member clusters.
 * What is stripped before dispatch: KubeFleet's `generateRawContent`.
 */
import type { KindDefinition } from "../k8s/kind.ts";
import { matchesLabelSelector, type LabelSelectorInput } from "../k8s/labels.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { FLEET_GROUP, ClusterResourceEnvelopeKind, ResourceEnvelopeKind } from "../kinds/fleet.ts";
import type { ResourceSelectorTerm } from "../kinds/fleet-validation.ts";
import { gvkString } from "../kinds/fleet-validation.ts";

/** The label OCM puts on a member cluster's namespace on the hub. */
const CLUSTER_NAMESPACE_LABEL = "open-cluster-management.io/cluster-name";

/** A KubeFleet `ResourceIdentifier` (`status.selectedResources[]`). */
export interface ResourceIdentifier {
  group?: string;
  version: string;
  kind: string;
  name: string;
  namespace?: string;
  envelope?: { name: string; namespace?: string; type: "ClusterResourceEnvelope" | "ResourceEnvelope" };
}

/** One selected object: its kind and the object as stored. */
export interface Selected {
  def: KindDefinition;
  object: KubeObject;
}

/** KubeFleet's `ErrUserError`: what its `NewUserError` puts before a user error's message. */
export const USER_ERROR_PREFIX = "failed to process the request due to a client error: ";

/**
 * A selection a user must fix (KubeFleet's `NewUserError`, whose message it is:
 * {@link USER_ERROR_PREFIX} and the error): reported in the placement's Scheduled condition,
 * never thrown to the writer.
 */
export class SelectionError extends Error {
  constructor(message: string) {
    super(`${USER_ERROR_PREFIX}${message}`);
    this.name = "SelectionError";
  }
}

/** What selection reads: the served kinds, and the objects of one kind (its store's `get` and `list`). */
export interface SelectionSource {
  /** A served kind by group, version and kind name, or undefined. */
  kind(group: string, version: string, kind: string): KindDefinition | undefined;
  /** Every served, stored, namespaced kind (one listing each, for a namespace's content). */
  namespacedKinds(): readonly KindDefinition[];
  get(def: KindDefinition, namespace: string, name: string): Promise<KubeObject | null>;
  list(def: KindDefinition, namespace?: string): Promise<KubeObject[]>;
  /**
   * The objects of each kind of `defs` in `namespace`, per kind in the order of `defs` (as
   * {@link list} gives each): a namespace's content read at once. Absent: one {@link list} per kind.
   */
  listNamespace?(defs: readonly KindDefinition[], namespace: string): Promise<KubeObject[][]>;
}

/** Groups the hub never propagates: KubeFleet's defaults (events, leases, metrics, member clusters) and the hub's own control plane. */
const DISABLED_GROUPS = new Set([
  "events.k8s.io",
  "coordination.k8s.io",
  "metrics.k8s.io",
  "cluster.kubernetes-fleet.io",
  "flotilla.dev",
  "multicluster.x-k8s.io",
  // Karmada's policies and bindings (src/kinds/karmada.ts).
  "policy.karmada.io",
  "work.karmada.io",
]);

/**
 * Whether objects of kind `def` are never selected (KubeFleet's hub agent's default
 * `ResourceConfig.IsResourceDisabled`, plus the hub's own groups and answered or computed kinds).
 */
export function isKindDisabled(def: KindDefinition): boolean {
  if (def.createOnly || def.computed || def.viewOf) return true;
  if (DISABLED_GROUPS.has(def.group) || def.group.endsWith("open-cluster-management.io")) return true;
  if (def.group === FLEET_GROUP) return def.kind !== ClusterResourceEnvelopeKind.kind && def.kind !== ResourceEnvelopeKind.kind;
  if (def.group === "" && (def.kind === "Pod" || def.kind === "Node" || def.kind === "Event")) return true;
  return false;
}

/** KubeFleet's `IsReservedNamespace` (kube-*, fleet-*) or skipped (`default`, the hub agent's default), or a member cluster's namespace on this hub. */
export function isNamespaceSkipped(name: string, ns?: KubeObject | null): boolean {
  if (name.startsWith("kube-") || name.startsWith("fleet-") || name === "default") return true;
  return ns?.metadata.labels?.[CLUSTER_NAMESPACE_LABEL] !== undefined && ns?.metadata.labels?.[CLUSTER_NAMESPACE_LABEL] !== null;
}

/**
 * KubeFleet's `ShouldPropagateObj` for one object: false for an object being deleted and for the
 * objects a cluster makes itself. `serviceExists` answers whether a Service of the object's name
 * exists in its namespace (for Endpoints).
 */
export async function shouldPropagate(def: KindDefinition, obj: KubeObject, serviceExists: () => Promise<boolean>): Promise<boolean> {
  if (obj.metadata.deletionTimestamp) return false;
  const gvk = `${def.group}/${def.version}/${def.kind}`;
  switch (gvk) {
    case "apps/v1/ReplicaSet":
    case "apps/v1/ControllerRevision":
      return (obj.metadata.ownerReferences ?? []).length === 0;
    case "/v1/ConfigMap":
      return obj.metadata.name !== "kube-root-ca.crt";
    case "/v1/ServiceAccount":
      return obj.metadata.name !== "default";
    case "/v1/Secret":
      return (obj as { type?: string }).type !== "kubernetes.io/service-account-token";
    case "/v1/Endpoints":
      return !(await serviceExists());
    case "discovery.k8s.io/v1/EndpointSlice":
      return obj.metadata.labels?.["endpointslice.kubernetes.io/managed-by"] === undefined;
  }
  return true;
}

const RESOURCE_SORT_ORDER: Record<string, number> = Object.fromEntries(
  [
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
  ].map((k, i) => [k, i]),
);

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const groupVersion = (d: KindDefinition) => (d.group ? `${d.group}/${d.version}` : d.version);

/** KubeFleet's `sortResources` comparator: known kinds in its apply order, then the rest by GVK; then by `namespace/name`. */
export function compareSelected(a: Selected, b: Selected): number {
  const first = RESOURCE_SORT_ORDER[a.def.kind];
  const second = RESOURCE_SORT_ORDER[b.def.kind];
  const byName = () => cmp(`${a.object.metadata.namespace ?? ""}/${a.object.metadata.name}`, `${b.object.metadata.namespace ?? ""}/${b.object.metadata.name}`);
  const lessByGVK = (ignoreKind: boolean) => {
    const g1 = ignoreKind ? groupVersion(a.def) : gvkString(a.def);
    const g2 = ignoreKind ? groupVersion(b.def) : gvkString(b.def);
    return g1 === g2 ? byName() : cmp(g1, g2);
  };
  if (first === undefined && second === undefined) return lessByGVK(false);
  if (first === undefined) return 1;
  if (second === undefined) return -1;
  if (first === second) return lessByGVK(true);
  return first - second;
}

/**
 * KubeFleet's `generateRawContent`: the object as it is dispatched to member clusters, without
 * what the hub's apiserver set (uid, resourceVersion, generation, creationTimestamp,
 * deletionTimestamp, managedFields, ownerReferences, status, kubectl's last-applied annotation and
 * a Deployment's revision), a Service's allocated cluster IPs and node ports, and a Job's generated
 * selector labels. Returns a new object with `apiVersion` and `kind` set from `def`.
 */
export function stripForDispatch(def: KindDefinition, obj: KubeObject): KubeObject {
  const o = structuredClone(obj) as KubeObject & Record<string, unknown>;
  o.apiVersion = groupVersion(def);
  o.kind = def.kind;
  const m = o.metadata as unknown as Record<string, unknown>;
  for (const k of ["resourceVersion", "generation", "uid", "selfLink", "deletionTimestamp", "managedFields", "ownerReferences", "creationTimestamp"])
    delete m[k];
  const annotations = o.metadata.annotations;
  if (annotations) {
    delete annotations["kubectl.kubernetes.io/last-applied-configuration"];
    delete annotations["deployment.kubernetes.io/revision"];
    if (Object.keys(annotations).length === 0) delete o.metadata.annotations;
  }
  delete o.status;
  const spec = o.spec as Record<string, unknown> | undefined;
  if (def.group === "" && def.kind === "Service" && spec) {
    if (spec.clusterIP !== undefined && spec.clusterIP !== "None") {
      delete spec.clusterIP;
      delete spec.clusterIPs;
    }
    delete spec.healthCheckNodePort;
    if (Array.isArray(spec.ports)) for (const p of spec.ports) if (p && typeof p === "object") delete (p as Record<string, unknown>).nodePort;
  } else if (def.group === "batch" && def.version === "v1" && def.kind === "Job" && spec && spec.manualSelector !== true) {
    const matchLabels = (spec.selector as { matchLabels?: Record<string, string> } | undefined)?.matchLabels;
    if (matchLabels) {
      delete matchLabels["controller-uid"];
      delete matchLabels["batch.kubernetes.io/controller-uid"];
    }
    const tmeta = (spec.template as { metadata?: Record<string, unknown> } | undefined)?.metadata;
    if (tmeta) {
      delete tmeta.creationTimestamp;
      const labels = tmeta.labels as Record<string, string> | undefined;
      if (labels) {
        delete labels["controller-uid"];
        delete labels["batch.kubernetes.io/controller-uid"];
      }
    }
  }
  return o;
}

/** The identifier of a selected object (`status.selectedResources[]`). */
export function identifierOf(s: Selected): ResourceIdentifier {
  return {
    ...(s.def.group ? { group: s.def.group } : {}),
    version: s.def.version,
    kind: s.def.kind,
    name: s.object.metadata.name,
    ...(s.object.metadata.namespace ? { namespace: s.object.metadata.namespace } : {}),
  };
}

interface PlacementKey {
  name: string;
  /** The ResourcePlacement's namespace; "" for a ClusterResourcePlacement. */
  namespace: string;
}

const isNamespaceGVK = (s: ResourceSelectorTerm) => s.group === "" && s.version === "v1" && s.kind === "Namespace";

/**
 * Selects the objects of a placement, sorted as KubeFleet sorts them (deterministic, so the same
 * selection gives the same snapshot). `key.namespace` is "" for a ClusterResourcePlacement.
 * @throws SelectionError for a selection the user must fix (KubeFleet's user errors, with its
 *   messages): a reserved namespace, a kind of the wrong scope, an unknown kind, the same object
 *   selected twice, no namespace in NamespaceWithResourceSelectors mode
 */
export async function selectResources(src: SelectionSource, key: PlacementKey, selectors: readonly ResourceSelectorTerm[]): Promise<Selected[]> {
  const placement = key.namespace ? `${key.namespace}/${key.name}` : key.name;
  const isCRP = key.namespace === "";
  const out: Selected[] = [];
  const seen = new Set<string>();
  const services = new Map<string, Promise<boolean>>();
  const serviceExists = (ns: string, name: string) => {
    const svc = src.kind("", "v1", "Service");
    if (!svc) return Promise.resolve(false);
    const k = `${ns}/${name}`;
    let p = services.get(k);
    if (!p) services.set(k, (p = src.get(svc, ns, name).then((o) => o !== null)));
    return p;
  };
  const include = async (def: KindDefinition, obj: KubeObject) =>
    shouldPropagate(def, obj, () => serviceExists(obj.metadata.namespace ?? "", obj.metadata.name));

  let selectedNamespace = "";
  if (isCRP) {
    const nwrs = selectors.find((s) => isNamespaceGVK(s) && s.selectionScope === "NamespaceWithResourceSelectors");
    if (nwrs) {
      const found = await fetchResources(nwrs, { name: key.name, namespace: "" });
      const ns = found[0]?.object;
      if (!ns || isNamespaceSkipped(ns.metadata.name, ns))
        throw new SelectionError(
          `invalid clusterResourcePlacement ${key.name}: NamespaceWithResourceSelectors mode requires exactly one namespace, but no namespaces were selected`,
        );
      selectedNamespace = ns.metadata.name;
    }
  }

  async function fetchResources(s: ResourceSelectorTerm, pk: PlacementKey): Promise<Selected[]> {
    const def = src.kind(s.group, s.version, s.kind);
    // KubeFleet prints the placement's key as `types.NamespacedName` does: `<namespace>/<name>`, `/<name>` for a CRP.
    const pkName = `${pk.namespace}/${pk.name}`;
    if (!def)
      throw new SelectionError(
        `invalid placement ${pkName}, failed to get GVR of the selector: no matches for kind ${JSON.stringify(s.kind)} in version ${JSON.stringify(s.group ? `${s.group}/${s.version}` : s.version)}`,
      );
    const gvr = `${s.group}/${s.version}, Resource=${def.plural}`;
    if (def.namespaced && pk.namespace === "")
      throw new SelectionError(`invalid placement ${pkName}: cannot select namespace-scoped resource ${gvr} in a clusterResourcePlacement`);
    if (!def.namespaced && pk.namespace !== "")
      throw new SelectionError(`invalid placement ${pkName}: cannot select cluster-scoped resource ${gvr} in a resourcePlacement`);
    const ns = def.namespaced ? pk.namespace : "";
    if (s.name) {
      const obj = await src.get(def, ns, s.name);
      if (!obj) return [];
      return (await include(def, obj)) ? [{ def, object: obj }] : [];
    }
    const all = await src.list(def, def.namespaced ? ns : undefined);
    const picked: Selected[] = [];
    for (const obj of all) {
      if (s.labelSelector && !matchesLabelSelector(s.labelSelector as LabelSelectorInput, obj.metadata.labels)) continue;
      if (await include(def, obj)) picked.push({ def, object: obj });
    }
    return picked;
  }

  async function allInNamespace(nsName: string): Promise<Selected[]> {
    const nsDef = src.kind("", "v1", "Namespace")!;
    const ns = await src.get(nsDef, "", nsName);
    if (isNamespaceSkipped(nsName, ns))
      throw new SelectionError(`invalid clusterRresourcePlacement ${key.name}: namespace ${nsName} is not allowed to propagate`);
    if (!ns || ns.metadata.deletionTimestamp) return [];
    const picked: Selected[] = [{ def: nsDef, object: ns }];
    const defs = src.namespacedKinds().filter((def) => !isKindDisabled(def));
    // Every kind's objects at once where the source can (one D1 round trip, not one per kind).
    const lists = src.listNamespace ? await src.listNamespace(defs, nsName) : null;
    for (const [i, def] of defs.entries()) {
      for (const obj of lists ? lists[i]! : await src.list(def, nsName)) if (await include(def, obj)) picked.push({ def, object: obj });
    }
    return picked;
  }

  for (const s of selectors) {
    const def = src.kind(s.group, s.version, s.kind);
    if (def && isKindDisabled(def)) continue;
    let objs: Selected[];
    if (isNamespaceGVK(s)) {
      if (!isCRP) throw new SelectionError(`invalid placement ${placement}: cannot select cluster-scoped resource Namespace in a resourcePlacement`);
      if (s.selectionScope === "NamespaceOnly" || s.selectionScope === "NamespaceWithResourceSelectors") {
        objs = await fetchResources(s, key);
      } else if (s.name) {
        objs = await allInNamespace(s.name);
      } else {
        const nsDef = src.kind("", "v1", "Namespace")!;
        objs = [];
        for (const ns of await src.list(nsDef)) {
          if (s.labelSelector && !matchesLabelSelector(s.labelSelector as LabelSelectorInput, ns.metadata.labels)) continue;
          objs.push(...(await allInNamespace(ns.metadata.name)));
        }
      }
    } else if (isCRP && def?.namespaced) {
      objs = await fetchResources(s, { name: key.name, namespace: selectedNamespace });
    } else {
      objs = await fetchResources(s, key);
    }
    for (const o of objs) {
      const id = identifierOf(o);
      const k = JSON.stringify([id.group ?? "", id.version, id.kind, id.name, id.namespace ?? ""]);
      if (seen.has(k)) {
        throw new SelectionError(
          `found duplicate resource {Group:${id.group ?? ""} Version:${id.version} Kind:${id.kind} Name:${id.name} Namespace:${id.namespace ?? ""} Envelope:<nil>}`,
        );
      }
      seen.add(k);
      out.push(o);
    }
  }
  return out.sort(compareSelected);
}
