/**
 * Rendering of a template add-on's agent (OCM's template add-on, `pkg/addon/templateagent` of
 * open-cluster-management-io/ocm): an AddOnTemplate's `agentSpec` with its `{{NAME}}` variables
 * replaced, the AddOnDeploymentConfig's node placement, image mirrors, proxy and container resources
 * applied to the pod templates, and OCM's
 * feedback rules for the workload availability probe, as the ManifestWork
 * `addon-<name>-deploy-0` in the cluster's namespace. Pure: no I/O.
 *
 * Variables, in the order they are resolved (a built-in one wins over a customized one of the
 * same name, as OCM reserves them):
 * - `CLUSTER_NAME`: the managed cluster's name;
 * - `INSTALL_NAMESPACE`: the agent's install namespace (the AddOnDeploymentConfig's
 *   `agentInstallNamespace`, else the ManagedClusterAddOn's `installNamespace`, else OCM's default
 *   `open-cluster-management-agent-addon`);
 * - `HUB_KUBECONFIG`: where the agent finds its hub kubeconfig, when the template registers with
 *   the hub (a KubeClient registration): OCM's `/managed/hub-kubeconfig/kubeconfig`;
 * - every `customizedVariables[]` of the AddOnDeploymentConfig.
 * An unknown `{{NAME}}` is left as it is (OCM's engine does the same).
 */
import type { KubeObject } from "../k8s/meta.ts";
import { DEFAULT_INSTALL_NAMESPACE } from "../kinds/addon.ts";

/** OCM's `AddonLabelKey`: the add-on a generated work (and what it applies) belongs to. */
export const ADDON_NAME_LABEL = "open-cluster-management.io/addon-name";
/** The contract's annotation (brief): the install namespace of the add-on's agent on the member cluster. */
export const INSTALL_NAMESPACE_ANNOTATION = "addon.flotilla.dev/install-namespace";
/** The contract's annotation (brief): how the add-on's health is checked, `Lease`, `Customized` or `None`. */
export const HEALTH_CHECK_MODE_ANNOTATION = "addon.flotilla.dev/health-check-mode";
/** OCM's `DeletionOrphanAnnotationKey`: a manifest carrying it stays on the cluster when the add-on goes. */
export const DELETION_ORPHAN_ANNOTATION = "addon.open-cluster-management.io/deletion-orphan";
/** Where a template add-on's agent finds its hub kubeconfig (OCM's `HUB_KUBECONFIG` value). */
export const HUB_KUBECONFIG_PATH = "/managed/hub-kubeconfig/kubeconfig";

/** The health check modes the contract names: OCM's `Lease` and `Customized`, and `None` (no check: Available from the work). */
export type HealthCheckMode = "Lease" | "Customized" | "None";

/** The name of an add-on's deploy work: `addon-<name>-deploy-0` (OCM's, for one work). */
export function deployWorkName(addon: string): string {
  return `addon-${addon}-deploy-0`;
}

/** What a rendering needs besides the template. */
export interface RenderInput {
  /** The add-on's name (its ClusterManagementAddOn's). */
  addon: string;
  /** The managed cluster's name (the ManagedClusterAddOn's namespace). */
  cluster: string;
  /** The AddOnTemplate's spec (`addonName`, `agentSpec`, `registration`). */
  template: { agentSpec?: Record<string, unknown>; registration?: unknown[] };
  /** The AddOnDeploymentConfig's spec, when one is configured. */
  config?: {
    customizedVariables?: { name: string; value?: string }[];
    nodePlacement?: { nodeSelector?: Record<string, string>; tolerations?: unknown[] } | null;
    agentInstallNamespace?: string;
    registries?: { mirror: string; source: string }[];
    resourceRequirements?: { containerID: string; resources: Record<string, unknown> }[];
    proxyConfig?: { httpProxy?: string; httpsProxy?: string; noProxy?: string };
  };
  /** The ManagedClusterAddOn's `spec.installNamespace` (v1alpha1), when set. */
  installNamespace?: string;
  /** The owner of the work: the ManagedClusterAddOn (apiVersion, kind, name, uid). */
  owner: { apiVersion: string; kind: string; name: string; uid: string };
  /**
   * The cluster's overrides (src/addons/overrides.ts), applied to the agent's manifests once
   * rendered and decorated, before the install namespace is added and the workloads probed: the
   * new manifests, or it throws (the rendering fails as a whole).
   */
  override?: (manifests: unknown[]) => unknown[];
}

/** The install namespace of a rendering ({@link RenderInput}): the config's, else the add-on's, else OCM's default. */
export function installNamespaceOf(input: Pick<RenderInput, "config" | "installNamespace">): string {
  return input.config?.agentInstallNamespace || input.installNamespace || DEFAULT_INSTALL_NAMESPACE;
}

/** The variables of a rendering: built-ins over customized ones. */
export function variablesOf(input: RenderInput): Map<string, string> {
  const vars = new Map<string, string>();
  for (const v of input.config?.customizedVariables ?? []) vars.set(v.name, v.value ?? "");
  vars.set("CLUSTER_NAME", input.cluster);
  vars.set("INSTALL_NAMESPACE", installNamespaceOf(input));
  if ((input.template.registration ?? []).some((r) => (r as { type?: string }).type === "KubeClient")) vars.set("HUB_KUBECONFIG", HUB_KUBECONFIG_PATH);
  return vars;
}

/** `value` with every `{{NAME}}` of a known variable replaced, in every string (keys stay). */
function substitute(value: unknown, vars: Map<string, string>): unknown {
  if (typeof value === "string") return value.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (m, name: string) => vars.get(name) ?? m);
  if (Array.isArray(value)) return value.map((v) => substitute(v, vars));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substitute(v, vars);
    return out;
  }
  return value;
}

/** The kinds whose pod template gets the node placement, and whose availability the probe reads (apps/v1). */
const WORKLOADS: Record<string, string> = { Deployment: "deployments", DaemonSet: "daemonsets" };
const POD_TEMPLATED = new Set(["Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"]);

type Manifest = {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
};

/** Applies `nodeSelector` and `tolerations` to a workload's pod template (OCM's node placement of add-on agents). */
function place(m: Manifest, placement: NonNullable<RenderInput["config"]>["nodePlacement"]): void {
  if (!placement || !POD_TEMPLATED.has(m.kind ?? "")) return;
  const template = ((m.spec ??= {}).template ??= {}) as { spec?: Record<string, unknown> };
  const pod = (template.spec ??= {});
  if (placement.nodeSelector && Object.keys(placement.nodeSelector).length > 0) pod.nodeSelector = { ...placement.nodeSelector };
  if (placement.tolerations && placement.tolerations.length > 0) pod.tolerations = structuredClone(placement.tolerations);
}

/** The API group of an `apiVersion` ("" for the core group). */
function groupOf(apiVersion: string): string {
  const i = apiVersion.indexOf("/");
  return i < 0 ? "" : apiVersion.slice(0, i);
}

/** The resource (plural) of a kind, by Kubernetes' default pluralisation (lowercased; -y to -ies, -s/-x/-ch/-sh add -es). */
function resourceOf(kind: string): string {
  const k = kind.toLowerCase();
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(k)) return `${k}es`;
  return `${k}s`;
}

/** The resource (plural) of each kind a `resourceRequirements[].containerID` may name (OCM's list). */
const CONTAINER_RESOURCES: Record<string, string> = {
  Deployment: "deployments",
  DaemonSet: "daemonsets",
  StatefulSet: "statefulsets",
  ReplicaSet: "replicasets",
  Job: "jobs",
  CronJob: "cronjobs",
  Pod: "pods",
};

/** The containers (and init containers) of a manifest's pods: a Pod's own, a workload's template's, a CronJob's job template's. */
function containersOf(m: Manifest): Record<string, unknown>[] {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const spec = m.spec as Record<string, any> | undefined;
  const pod = m.kind === "Pod" ? spec : m.kind === "CronJob" ? spec?.jobTemplate?.spec?.template?.spec : spec?.template?.spec;
  if (!pod || typeof pod !== "object") return [];
  return [...(Array.isArray(pod.initContainers) ? pod.initContainers : []), ...(Array.isArray(pod.containers) ? pod.containers : [])].filter(
    (c) => c && typeof c === "object",
  );
}

/**
 * OCM's image mirrors (`registries`), proxy settings (`proxyConfig`) and container resources
 * (`resourceRequirements`) of an AddOnDeploymentConfig applied to a manifest: an image starting
 * with a `source` is pulled from its `mirror` instead (the last matching entry wins); each
 * container gets `HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` for the proxy settings given
 * (replacing its own of the same name); a container matching a `containerID`
 * (`<resource>:<workload name>:<container name>`, each part `*` for any) gets its `resources`
 * (later entries override earlier ones).
 */
function applyContainerConfig(m: Manifest, config: RenderInput["config"]): void {
  const resource = CONTAINER_RESOURCES[m.kind ?? ""];
  if (!resource) return;
  for (const c of containersOf(m)) {
    if (typeof c.image === "string") {
      let image = c.image;
      for (const r of config?.registries ?? []) if (c.image.startsWith(r.source)) image = r.mirror + c.image.slice(r.source.length);
      c.image = image;
    }
    // The proxy settings as the environment variables programs read (OCM's template add-on sets them on its agents' containers).
    const proxy = { HTTP_PROXY: config?.proxyConfig?.httpProxy, HTTPS_PROXY: config?.proxyConfig?.httpsProxy, NO_PROXY: config?.proxyConfig?.noProxy };
    for (const [envName, value] of Object.entries(proxy)) {
      if (!value) continue;
      const env = (Array.isArray(c.env) ? c.env : []) as { name: string; value?: string }[];
      c.env = [...env.filter((e) => e.name !== envName), { name: envName, value }];
    }
    for (const r of config?.resourceRequirements ?? []) {
      const [kind, name, container] = r.containerID.split(":");
      const hit = (want: string | undefined, have: unknown) => want === "*" || want === have;
      if (hit(kind, resource) && hit(name, m.metadata?.name) && hit(container, c.name)) c.resources = structuredClone(r.resources);
    }
  }
}

/** The volume of the hub kubeconfig Secret in a registering add-on's workloads, and where it is mounted (OCM's template add-on). */
const HUB_KUBECONFIG_VOLUME = "hub-kubeconfig";
const HUB_KUBECONFIG_MOUNT_PATH = "/managed/hub-kubeconfig";

/**
 * What OCM's template add-on adds to its Deployments and DaemonSets: every variable of the
 * rendering (customized, then the built-ins) as an environment variable of each container
 * (replacing one of the same name), and, when the template registers a kubeClient, the volume
 * `hub-kubeconfig` of the Secret `<addon>-hub-kubeconfig` (which the agent writes,
 * src/addons/token-registration.ts) mounted at `/managed/hub-kubeconfig` in each container,
 * where `HUB_KUBECONFIG` points.
 */
function decorate(m: Manifest, vars: Map<string, string>, addon: string, registers: boolean): void {
  if (m.apiVersion !== "apps/v1" || WORKLOADS[m.kind ?? ""] === undefined) return;
  const pod = (((m.spec ??= {}).template ??= {}) as { spec?: Record<string, unknown> }).spec ?? {};
  const containers = containersOf(m);
  const injected = [...vars].map(([name, value]) => ({ name, value }));
  for (const c of containers) {
    const env = (Array.isArray(c.env) ? c.env : []) as { name: string }[];
    c.env = [...env.filter((e) => !vars.has(e.name)), ...injected];
    if (!registers) continue;
    const mounts = (Array.isArray(c.volumeMounts) ? c.volumeMounts : []) as { name: string }[];
    c.volumeMounts = [...mounts.filter((v) => v.name !== HUB_KUBECONFIG_VOLUME), { name: HUB_KUBECONFIG_VOLUME, mountPath: HUB_KUBECONFIG_MOUNT_PATH }];
  }
  if (!registers || containers.length === 0) return;
  const volumes = (Array.isArray(pod.volumes) ? pod.volumes : []) as { name: string }[];
  pod.volumes = [
    ...volumes.filter((v) => v.name !== HUB_KUBECONFIG_VOLUME),
    { name: HUB_KUBECONFIG_VOLUME, secret: { secretName: `${addon}-hub-kubeconfig` } },
  ];
}

/** The workloads of a rendered work that the availability probe reads: `{resource, name, namespace}` of each Deployment and DaemonSet. */
export function probedWorkloads(manifests: Manifest[]): { resource: string; name: string; namespace: string }[] {
  return manifests
    .filter((m) => m.apiVersion === "apps/v1" && WORKLOADS[m.kind ?? ""] !== undefined && m.metadata?.name)
    .map((m) => ({ resource: WORKLOADS[m.kind!]!, name: m.metadata!.name!, namespace: m.metadata!.namespace ?? "" }));
}

/**
 * The ManifestWork body of a template add-on on one cluster: the rendered manifests (a Namespace
 * for the install namespace first, when the template has none: the agent's namespace must exist
 * before what goes in it; orphaned when the work goes, as are the manifests annotated
 * {@link DELETION_ORPHAN_ANNOTATION}), the template's other work options, and a `WellKnownStatus` feedback
 * rule for each Deployment and DaemonSet (OCM's workload availability prober), with OCM's label
 * and the contract's annotations; health mode `Customized` when there are workloads to probe,
 * else `None`. The owner reference makes the work go with its ManagedClusterAddOn.
 * @throws what `input.override` throws
 */
export function renderDeployWork(input: RenderInput): KubeObject {
  const vars = variablesOf(input);
  const ns = installNamespaceOf(input);
  const spec = substitute(structuredClone(input.template.agentSpec ?? {}), vars) as {
    workload?: { manifests?: Manifest[] };
    manifestConfigs?: { resourceIdentifier: { group?: string; resource: string; name: string; namespace?: string }; feedbackRules?: unknown[] }[];
  } & Record<string, unknown>;
  let manifests = spec.workload?.manifests ?? [];
  const registers = vars.has("HUB_KUBECONFIG");
  for (const m of manifests) {
    place(m, input.config?.nodePlacement);
    applyContainerConfig(m, input.config);
    decorate(m, vars, input.addon, registers);
  }
  if (input.override) manifests = input.override(manifests) as Manifest[];
  const addedNamespace = !manifests.some((m) => m.apiVersion === "v1" && m.kind === "Namespace" && m.metadata?.name === ns);
  if (addedNamespace) manifests.unshift({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
  spec.workload = { ...(spec.workload ?? {}), manifests };
  const probed = probedWorkloads(manifests);
  const configs = [...(spec.manifestConfigs ?? [])];
  for (const w of probed) {
    const same = configs.find(
      (c) =>
        c.resourceIdentifier.group === "apps" &&
        c.resourceIdentifier.resource === w.resource &&
        c.resourceIdentifier.name === w.name &&
        (c.resourceIdentifier.namespace ?? "") === w.namespace,
    );
    const rule = { type: "WellKnownStatus" };
    if (!same) configs.push({ resourceIdentifier: { group: "apps", resource: w.resource, name: w.name, namespace: w.namespace }, feedbackRules: [rule] });
    else if (!(same.feedbackRules ?? []).some((r) => (r as { type?: string }).type === "WellKnownStatus"))
      same.feedbackRules = [...(same.feedbackRules ?? []), rule];
  }
  if (configs.length > 0) spec.manifestConfigs = configs;
  // Manifests annotated deletion-orphan are left on the cluster when the work goes (OCM's
  // addon-framework), and so is the install namespace the hub added: other add-ons share it
  // (OCM's default namespace holds every add-on's agent), and deleting it would take theirs.
  const orphans = manifests.filter(
    (m) => (m.metadata as { annotations?: Record<string, string> } | undefined)?.annotations?.[DELETION_ORPHAN_ANNOTATION] !== undefined,
  );
  if (addedNamespace) orphans.unshift(manifests[0]!);
  const option = (spec.deleteOption ?? {}) as { propagationPolicy?: string; selectivelyOrphans?: { orphaningRules?: unknown[] } };
  if (orphans.length > 0 && option.propagationPolicy !== "Orphan") {
    const orphaningRules = orphans.map((m) => ({
      group: groupOf(m.apiVersion ?? ""),
      resource: resourceOf(m.kind ?? ""),
      name: m.metadata?.name ?? "",
      ...(m.metadata?.namespace ? { namespace: m.metadata.namespace } : {}),
    }));
    const kept = option.propagationPolicy === "SelectivelyOrphan" ? (option.selectivelyOrphans?.orphaningRules ?? []) : [];
    spec.deleteOption = { ...option, propagationPolicy: "SelectivelyOrphan", selectivelyOrphans: { orphaningRules: [...kept, ...orphaningRules] } };
  }
  const mode: HealthCheckMode = probed.length > 0 ? "Customized" : "None";
  return {
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: {
      name: deployWorkName(input.addon),
      namespace: input.cluster,
      labels: { [ADDON_NAME_LABEL]: input.addon },
      annotations: { [INSTALL_NAMESPACE_ANNOTATION]: ns, [HEALTH_CHECK_MODE_ANNOTATION]: mode },
      ownerReferences: [{ ...input.owner, controller: true, blockOwnerDeletion: true }],
    },
    spec,
  } as unknown as KubeObject;
}
