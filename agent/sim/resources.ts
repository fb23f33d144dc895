/**
 * The resource registry of the simulated cluster: built-in resource types plus those introduced by
 * CustomResourceDefinitions, and the legacy discovery documents kube-apiserver serves from them
 * (`/api`, `/api/v1`, `/apis`, `/apis/{group}/{version}`; `meta/v1` APIVersions, APIGroupList,
 * APIResourceList).
 */
import { isObj, type KubeObject, type Obj } from "./types.ts";

/** One servable resource at one group/version (what an `APIResourceList` entry describes). */
export interface ResourceType {
  /** API group; "" for the core group. */
  group: string;
  version: string;
  kind: string;
  listKind: string;
  /** Lower-case plural used in URLs, e.g. `deployments`. */
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  /** True when a `/status` subresource exists (main-resource writes then ignore `status`). */
  statusSubresource: boolean;
  /** True when the server sets and bumps `metadata.generation` (all non-core types and custom resources). */
  hasGeneration: boolean;
  /** OpenAPI v3 schema from a CRD version (used for basic validation); undefined for built-ins. */
  schema?: Obj;
  /** `additionalPrinterColumns` of a CRD version (used by `kubectl get` tables). */
  printerColumns?: Obj[];
  /** True for create-only review APIs (SubjectAccessReview, SelfSubjectReview, ...): answered, never stored. */
  review?: boolean;
  /**
   * True for the types of a CRD being deleted: still read, listed and deleted while the CRD's
   * cleanup finalizer deletes its resources, but no longer created (apiextensions-apiserver's
   * crdHandler refuses `create` on a Terminating CRD).
   */
  terminating?: boolean;
}

const VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

interface BuiltinSpec {
  gv: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  status?: boolean;
  review?: boolean;
}

const BUILTINS: BuiltinSpec[] = [
  { gv: "v1", kind: "Namespace", plural: "namespaces", namespaced: false, shortNames: ["ns"], status: true },
  { gv: "v1", kind: "Node", plural: "nodes", namespaced: false, shortNames: ["no"], status: true },
  { gv: "v1", kind: "Secret", plural: "secrets", namespaced: true },
  { gv: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true, shortNames: ["cm"] },
  { gv: "v1", kind: "Service", plural: "services", namespaced: true, shortNames: ["svc"], categories: ["all"], status: true },
  { gv: "v1", kind: "Pod", plural: "pods", namespaced: true, shortNames: ["po"], categories: ["all"], status: true },
  { gv: "v1", kind: "ServiceAccount", plural: "serviceaccounts", namespaced: true, shortNames: ["sa"] },
  { gv: "v1", kind: "Endpoints", plural: "endpoints", namespaced: true, shortNames: ["ep"] },
  { gv: "v1", kind: "Event", plural: "events", namespaced: true, shortNames: ["ev"] },
  { gv: "v1", kind: "PersistentVolumeClaim", plural: "persistentvolumeclaims", namespaced: true, shortNames: ["pvc"], status: true },
  { gv: "v1", kind: "PersistentVolume", plural: "persistentvolumes", namespaced: false, shortNames: ["pv"], status: true },
  { gv: "v1", kind: "ResourceQuota", plural: "resourcequotas", namespaced: true, shortNames: ["quota"], status: true },
  { gv: "v1", kind: "LimitRange", plural: "limitranges", namespaced: true, shortNames: ["limits"] },
  { gv: "apps/v1", kind: "Deployment", plural: "deployments", namespaced: true, shortNames: ["deploy"], categories: ["all"], status: true },
  { gv: "apps/v1", kind: "DaemonSet", plural: "daemonsets", namespaced: true, shortNames: ["ds"], categories: ["all"], status: true },
  { gv: "apps/v1", kind: "StatefulSet", plural: "statefulsets", namespaced: true, shortNames: ["sts"], categories: ["all"], status: true },
  { gv: "apps/v1", kind: "ReplicaSet", plural: "replicasets", namespaced: true, shortNames: ["rs"], categories: ["all"], status: true },
  { gv: "apps/v1", kind: "ControllerRevision", plural: "controllerrevisions", namespaced: true },
  { gv: "batch/v1", kind: "Job", plural: "jobs", namespaced: true, categories: ["all"], status: true },
  { gv: "batch/v1", kind: "CronJob", plural: "cronjobs", namespaced: true, shortNames: ["cj"], categories: ["all"], status: true },
  { gv: "rbac.authorization.k8s.io/v1", kind: "Role", plural: "roles", namespaced: true },
  { gv: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", plural: "rolebindings", namespaced: true },
  { gv: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", plural: "clusterroles", namespaced: false },
  { gv: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", plural: "clusterrolebindings", namespaced: false },
  {
    gv: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    plural: "customresourcedefinitions",
    namespaced: false,
    shortNames: ["crd", "crds"],
    categories: ["api-extensions"],
    status: true,
  },
  { gv: "networking.k8s.io/v1", kind: "Ingress", plural: "ingresses", namespaced: true, shortNames: ["ing"], status: true },
  { gv: "networking.k8s.io/v1", kind: "IngressClass", plural: "ingressclasses", namespaced: false },
  { gv: "networking.k8s.io/v1", kind: "NetworkPolicy", plural: "networkpolicies", namespaced: true, shortNames: ["netpol"] },
  { gv: "coordination.k8s.io/v1", kind: "Lease", plural: "leases", namespaced: true },
  { gv: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview", plural: "selfsubjectaccessreviews", namespaced: false, review: true },
  { gv: "authorization.k8s.io/v1", kind: "SelfSubjectRulesReview", plural: "selfsubjectrulesreviews", namespaced: false, review: true },
  { gv: "authorization.k8s.io/v1", kind: "SubjectAccessReview", plural: "subjectaccessreviews", namespaced: false, review: true },
  { gv: "authorization.k8s.io/v1", kind: "LocalSubjectAccessReview", plural: "localsubjectaccessreviews", namespaced: true, review: true },
  { gv: "authentication.k8s.io/v1", kind: "SelfSubjectReview", plural: "selfsubjectreviews", namespaced: false, review: true },
  { gv: "authentication.k8s.io/v1", kind: "TokenReview", plural: "tokenreviews", namespaced: false, review: true },
  { gv: "policy/v1", kind: "PodDisruptionBudget", plural: "poddisruptionbudgets", namespaced: true, shortNames: ["pdb"], status: true },
];

/** Splits `apps/v1` into `{group: "apps", version: "v1"}` and `v1` into `{group: "", version: "v1"}`. */
export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf("/");
  return i < 0 ? { group: "", version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

/** `group/version`, or just `version` for the core group. */
export function groupVersion(rt: { group: string; version: string }): string {
  return rt.group ? `${rt.group}/${rt.version}` : rt.version;
}

function builtin(b: BuiltinSpec): ResourceType {
  const { group, version } = splitApiVersion(b.gv);
  return {
    group,
    version,
    kind: b.kind,
    listKind: `${b.kind}List`,
    plural: b.plural,
    singular: b.kind.toLowerCase(),
    namespaced: b.namespaced,
    shortNames: b.shortNames ?? [],
    categories: b.categories ?? [],
    statusSubresource: b.status ?? false,
    hasGeneration: group !== "" && !b.review,
    ...(b.review ? { review: true } : {}),
  };
}

/**
 * Kubernetes version priority (apimachinery `CompareKubeAwareVersionStrings`): GA > beta > alpha,
 * higher numbers first, non-conforming strings last. Returns < 0 when `a` sorts before `b`.
 */
export function compareKubeVersions(a: string, b: string): number {
  const parse = (v: string): [number, number, number] | undefined => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return undefined;
    const rank = m[2] === undefined ? 3 : m[2] === "beta" ? 2 : 1;
    return [rank, Number(m[1]), Number(m[3] ?? 0)];
  };
  const pa = parse(a);
  const pb = parse(b);
  if (!pa || !pb) return pa ? -1 : pb ? 1 : a.localeCompare(b);
  for (let i = 0; i < 3; i++) {
    const d = (pb[i] ?? 0) - (pa[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** The resource types a CustomResourceDefinition object serves (one per `spec.versions[]` with `served: true`). */
export function typesFromCrd(crd: KubeObject): ResourceType[] {
  const spec = isObj(crd.spec) ? crd.spec : {};
  const names = isObj(spec.names) ? spec.names : {};
  const group = typeof spec.group === "string" ? spec.group : "";
  const kind = typeof names.kind === "string" ? names.kind : "";
  const plural = typeof names.plural === "string" ? names.plural : "";
  if (!group || !kind || !plural) return [];
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isObj) : [];
  return versions
    .filter((v) => v.served !== false && typeof v.name === "string")
    .map((v) => {
      const sub = isObj(v.subresources) ? v.subresources : {};
      const schemaWrap = isObj(v.schema) ? v.schema : {};
      const rt: ResourceType = {
        group,
        version: String(v.name),
        kind,
        listKind: typeof names.listKind === "string" ? names.listKind : `${kind}List`,
        plural,
        singular: typeof names.singular === "string" ? names.singular : kind.toLowerCase(),
        namespaced: spec.scope === "Namespaced",
        shortNames: Array.isArray(names.shortNames) ? names.shortNames.map(String) : [],
        categories: Array.isArray(names.categories) ? names.categories.map(String) : [],
        statusSubresource: sub.status !== undefined,
        hasGeneration: true,
      };
      if (isObj(schemaWrap.openAPIV3Schema)) rt.schema = schemaWrap.openAPIV3Schema;
      if (Array.isArray(v.additionalPrinterColumns)) rt.printerColumns = v.additionalPrinterColumns.filter(isObj);
      if (crd.metadata.deletionTimestamp) rt.terminating = true;
      return rt;
    });
}

/**
 * Looks up servable resource types. Built-ins are fixed; CRD-backed types are re-derived from the
 * current CRD objects via the `crds` callback on every lookup, so a created CRD is servable at once
 * and a deleted one stops being served.
 */
export class Registry {
  private readonly builtins = BUILTINS.map(builtin);

  /** `crds` returns the CustomResourceDefinition objects currently stored. */
  constructor(private readonly crds: () => KubeObject[]) {}

  /** All served resource types (built-ins first, then CRD-derived). */
  all(): ResourceType[] {
    const out = [...this.builtins];
    for (const crd of this.crds()) {
      for (const rt of typesFromCrd(crd)) {
        if (!out.some((o) => o.group === rt.group && o.version === rt.version && o.plural === rt.plural)) out.push(rt);
      }
    }
    return out;
  }

  /** The type served at `group/version/plural`, or undefined. */
  byPlural(group: string, version: string, plural: string): ResourceType | undefined {
    return this.all().find((r) => r.group === group && r.version === version && r.plural === plural);
  }

  /** The type whose kind is `kind` at `apiVersion`, or undefined. */
  byKind(apiVersion: string, kind: string): ResourceType | undefined {
    const { group, version } = splitApiVersion(apiVersion);
    return this.all().find((r) => r.group === group && r.version === version && r.kind === kind);
  }

  /** Served versions per group, each list sorted by Kubernetes version priority (preferred first). */
  groups(): Map<string, string[]> {
    const m = new Map<string, string[]>();
    for (const r of this.all()) {
      const vs = m.get(r.group) ?? [];
      if (!vs.includes(r.version)) vs.push(r.version);
      m.set(r.group, vs);
    }
    for (const vs of m.values()) vs.sort(compareKubeVersions);
    return m;
  }

  /** The preferred (highest-priority) version of `group`, or undefined when the group is not served. */
  preferredVersion(group: string): string | undefined {
    return this.groups().get(group)?.[0];
  }
}

/** `GET /api`: the `APIVersions` document. `serverAddress` is `host:port`. */
export function apiVersionsDoc(serverAddress: string): Obj {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

/** `GET /apis`: the `APIGroupList` of every non-core group, versions in priority order. */
export function apiGroupListDoc(reg: Registry): Obj {
  const groups: Obj[] = [];
  for (const [name, versions] of reg.groups()) {
    if (!name) continue;
    const vs = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
    groups.push({ name, versions: vs, preferredVersion: vs[0] });
  }
  return { kind: "APIGroupList", apiVersion: "v1", groups };
}

/** `GET /apis/{group}`: one `APIGroup`, or undefined when the group is not served. */
export function apiGroupDoc(reg: Registry, group: string): Obj | undefined {
  const versions = reg.groups().get(group);
  if (!versions || !group) return undefined;
  const vs = versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
  return { kind: "APIGroup", apiVersion: "v1", name: group, versions: vs, preferredVersion: vs[0] };
}

/** `GET /api/v1` or `/apis/{group}/{version}`: the `APIResourceList`, or undefined when not served. */
export function apiResourceListDoc(reg: Registry, group: string, version: string): Obj | undefined {
  const types = reg.all().filter((r) => r.group === group && r.version === version);
  if (types.length === 0) return undefined;
  const resources: Obj[] = [];
  for (const r of types) {
    const main: Obj = {
      name: r.plural,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: r.review ? ["create"] : VERBS,
    };
    if (r.shortNames.length) main.shortNames = r.shortNames;
    if (r.categories.length) main.categories = r.categories;
    resources.push(main);
    if (r.statusSubresource) {
      resources.push({ name: `${r.plural}/status`, singularName: "", namespaced: r.namespaced, kind: r.kind, verbs: ["get", "patch", "update"] });
    }
    if (r.kind === "Deployment" || r.kind === "StatefulSet" || r.kind === "ReplicaSet") {
      resources.push({
        name: `${r.plural}/scale`,
        singularName: "",
        namespaced: true,
        group: "autoscaling",
        version: "v1",
        kind: "Scale",
        verbs: ["get", "patch", "update"],
      });
    }
  }
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion: groupVersion({ group, version }), resources };
}
