/**
 * Conversion between the two served versions of OCM's add-on API (`addon.open-cluster-management.io`
 * `v1alpha1`, the storage version, and `v1beta1`), as OCM's api module converts them
 * (open-cluster-management-io/api `addon/v1beta1/conversion.go` and the generated conversions):
 *
 * - ClusterManagementAddOn: v1alpha1 `spec.supportedConfigs[]` (`{group, resource, defaultConfig?}`)
 *   is v1beta1 `spec.defaultConfigs[]` (`{group, resource, namespace?, name}`); a supported config
 *   without a default carries the reserved name `__reserved_no_default__` in v1beta1, so that the
 *   round trip restores it. v1alpha1's deprecated `spec.addOnConfiguration` has no v1beta1 field.
 *   Status: v1alpha1 `defaultconfigReferences` is v1beta1 `defaultConfigReferences`.
 * - ManagedClusterAddOn: v1alpha1 `spec.installNamespace` is the v1beta1 annotation
 *   `addon.open-cluster-management.io/v1alpha1-install-namespace`; status `registrations[]`
 *   (`{signerName, subject}`) are typed in v1beta1 (`KubeClient` for the signer
 *   `kubernetes.io/kube-apiserver-client`, else `CustomSigner`); `status.kubeClientDriver` is the
 *   KubeClient registration's `driver`; `configReferences[]` lose their top-level `namespace`/`name`
 *   in v1beta1 (restored from `desiredConfig` going back); `status.addOnConfiguration` has no
 *   v1beta1 field.
 * - AddOnDeploymentConfig: the same schema in both versions.
 *
 * Every function takes a stored object and answers a new one (inputs are not mutated). Fields one
 * version lacks are lost on a write through the other, as with OCM's CRD conversion.
 */
import type { KubeObject } from "../k8s/meta.ts";

/** OCM's `ReservedNoDefaultConfigName`: a v1beta1 default config that stands for "no default" in v1alpha1. */
export const RESERVED_NO_DEFAULT = "__reserved_no_default__";
/** OCM's `InstallNamespaceAnnotation` (v1beta1): where v1alpha1's `spec.installNamespace` lives in v1beta1. */
export const INSTALL_NAMESPACE_ANNOTATION = "addon.open-cluster-management.io/v1alpha1-install-namespace";
/** The signer of kube-apiserver client certificates (`certificates.KubeAPIServerClientSignerName`). */
export const KUBE_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client";

type Json = Record<string, unknown>;

const obj = (v: unknown): Json => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});
const list = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);

/** Copies `o` without the keys whose value is undefined. */
function compact(o: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out;
}

function withVersion(o: KubeObject, version: string): KubeObject {
  const next = structuredClone(o);
  next.apiVersion = `addon.open-cluster-management.io/${version}`;
  return next;
}

/** ClusterManagementAddOn v1alpha1 (stored) → v1beta1. */
export function cmaToV1beta1(stored: KubeObject): KubeObject {
  const out = withVersion(stored, "v1beta1");
  if (out.spec) {
    const { supportedConfigs, addOnConfiguration: _dropped, ...rest } = out.spec as Json;
    const defaults = list(supportedConfigs).map((c) => {
      const d = c.defaultConfig === undefined || c.defaultConfig === null ? undefined : obj(c.defaultConfig);
      return compact({ group: c.group, resource: c.resource, namespace: d?.namespace, name: d ? d.name : RESERVED_NO_DEFAULT });
    });
    out.spec = compact({ ...rest, defaultConfigs: supportedConfigs === undefined ? undefined : defaults });
  }
  if (out.status) {
    const { defaultconfigReferences, ...rest } = out.status as Json;
    out.status = compact({ ...rest, defaultConfigReferences: defaultconfigReferences });
  }
  return out;
}

/** ClusterManagementAddOn v1beta1 → v1alpha1 (to store). */
export function cmaToV1alpha1(served: KubeObject): KubeObject {
  const out = withVersion(served, "v1alpha1");
  if (out.spec) {
    const { defaultConfigs, ...rest } = out.spec as Json;
    const supported = list(defaultConfigs).map((c) => {
      const named = typeof c.name === "string" && c.name !== "" && c.name !== RESERVED_NO_DEFAULT;
      return compact({ group: c.group, resource: c.resource, defaultConfig: named ? compact({ namespace: c.namespace, name: c.name }) : undefined });
    });
    out.spec = compact({ ...rest, supportedConfigs: defaultConfigs === undefined ? undefined : supported });
  }
  if (out.status) {
    const { defaultConfigReferences, ...rest } = out.status as Json;
    out.status = compact({ ...rest, defaultconfigReferences: defaultConfigReferences });
  }
  return out;
}

/** ManagedClusterAddOn v1alpha1 (stored) → v1beta1. */
export function mcaToV1beta1(stored: KubeObject): KubeObject {
  const out = withVersion(stored, "v1beta1");
  if (out.spec) {
    const { installNamespace, ...rest } = out.spec as Json;
    if (typeof installNamespace === "string" && installNamespace !== "") {
      out.metadata.annotations = { ...(out.metadata.annotations ?? {}), [INSTALL_NAMESPACE_ANNOTATION]: installNamespace };
    }
    out.spec = rest;
  }
  if (out.status) {
    const { addOnConfiguration: _dropped, kubeClientDriver, registrations, configReferences, ...rest } = out.status as Json;
    let driverSet = false;
    const regs = list(registrations).map((r) => {
      const subject = obj(r.subject);
      if (r.signerName === KUBE_CLIENT_SIGNER) {
        const driver = !driverSet && typeof kubeClientDriver === "string" && kubeClientDriver !== "" ? kubeClientDriver : undefined;
        driverSet ||= driver !== undefined;
        return { type: "kubeClient", kubeClient: compact({ subject: compact({ user: subject.user, groups: subject.groups }), driver }) };
      }
      return {
        type: "customSigner",
        customSigner: {
          signerName: r.signerName,
          subject: compact({ user: subject.user, groups: subject.groups, organizationUnits: subject.organizationUnit }),
        },
      };
    });
    const refs = list(configReferences).map((c) =>
      compact({
        group: c.group,
        resource: c.resource,
        lastObservedGeneration: c.lastObservedGeneration,
        desiredConfig: c.desiredConfig,
        lastAppliedConfig: c.lastAppliedConfig,
      }),
    );
    out.status = compact({
      ...rest,
      registrations: registrations === undefined ? undefined : regs,
      configReferences: configReferences === undefined ? undefined : refs,
    });
  }
  return out;
}

/** ManagedClusterAddOn v1beta1 → v1alpha1 (to store). */
export function mcaToV1alpha1(served: KubeObject): KubeObject {
  const out = withVersion(served, "v1alpha1");
  const annotations = out.metadata.annotations;
  const ns = annotations?.[INSTALL_NAMESPACE_ANNOTATION];
  if (annotations && ns !== undefined) {
    delete annotations[INSTALL_NAMESPACE_ANNOTATION];
    if (Object.keys(annotations).length === 0) delete out.metadata.annotations;
  }
  if (ns) out.spec = { ...(out.spec ?? {}), installNamespace: ns };
  if (out.status) {
    const { registrations, configReferences, ...rest } = out.status as Json;
    let driver: unknown;
    const regs = list(registrations).map((r) => {
      if (r.type === "kubeClient") {
        const kc = obj(r.kubeClient);
        const subject = obj(kc.subject);
        driver ??= kc.driver;
        return { signerName: KUBE_CLIENT_SIGNER, subject: compact({ user: subject.user ?? "", groups: subject.groups }) };
      }
      const cs = obj(r.customSigner);
      const subject = obj(cs.subject);
      return {
        signerName: cs.signerName ?? "",
        subject: compact({ user: subject.user ?? "", groups: subject.groups, organizationUnit: subject.organizationUnits }),
      };
    });
    const refs = list(configReferences).map((c) => {
      const desired = obj(c.desiredConfig);
      return compact({ ...c, namespace: desired.namespace, name: typeof desired.name === "string" ? desired.name : "" });
    });
    out.status = compact({
      ...rest,
      registrations: registrations === undefined ? undefined : regs,
      configReferences: configReferences === undefined ? undefined : refs,
      kubeClientDriver: typeof driver === "string" && driver !== "" ? driver : undefined,
    });
  }
  return out;
}

/** AddOnDeploymentConfig: the same fields in both versions; only `apiVersion` changes. */
export function sameFields(version: string): (o: KubeObject) => KubeObject {
  return (o) => withVersion(o, version);
}
