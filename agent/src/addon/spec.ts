/**
 * Which add-ons the agent looks after, read from the works it already receives (no request of
 * its own): an add-on's deploy work is the ManifestWork `addon-<name>-deploy-0` the hub's add-on
 * manager renders in the cluster's namespace, labelled `open-cluster-management.io/addon-name:
 * <name>` (OCM's `addon.open-cluster-management.io/addon-name` work label's newer key) and
 * annotated with the add-on's install namespace on the member cluster and its health check mode.
 *
 * Loaded statically (it is small and imports nothing); the add-on agent itself
 * (./controller.ts) is loaded with a dynamic `import()` only once a work names an add-on, so an
 * agent without add-ons pays none of its memory.
 */
import type { DeliveredWork } from "../../../src/agent-api/protocol-answers.ts";

/** The work label that names the add-on a work deploys (OCM's). */
export const ADDON_NAME_LABEL = "open-cluster-management.io/addon-name";
/** The work annotation with the add-on's install namespace on the member cluster. */
export const INSTALL_NAMESPACE_ANNOTATION = "addon.flotilla.dev/install-namespace";
/** The work annotation with the add-on's health check mode (`Lease`, `Customized` or `None`). */
export const HEALTH_CHECK_MODE_ANNOTATION = "addon.flotilla.dev/health-check-mode";
/** Where OCM's template add-on mounts the hub kubeconfig Secret (`HUB_KUBECONFIG` is `<this>kubeconfig`). */
export const HUB_KUBECONFIG_MOUNT_PATH = "/managed/hub-kubeconfig/";
/** OCM's default install namespace of an add-on's agent (`open-cluster-management-agent-addon`). */
export const DEFAULT_ADDON_INSTALL_NAMESPACE = "open-cluster-management-agent-addon";

/** How the hub learns an add-on's health (OCM's `healthCheck.mode`, plus `None`). */
export type HealthCheckMode = "Lease" | "Customized" | "None";

/** One add-on as its deploy work describes it. */
export interface AddonSpec {
  /** The add-on's name (its ManagedClusterAddOn's, and its Lease's on the member cluster). */
  name: string;
  /** Where its agent runs on the member cluster: the Lease and the hub kubeconfig Secret live there. */
  installNamespace: string;
  /** `Lease`: this agent checks the Lease named after the add-on (the default, as OCM's). */
  healthCheckMode: HealthCheckMode;
  /**
   * Whether the add-on's agent needs a hub credential: its work names the Secret
   * `<name>-hub-kubeconfig` (OCM's template add-on mounts it on its agent's Deployments and
   * DaemonSets when its AddOnTemplate has a `KubeClient` registration) or OCM's mount path of it,
   * `/managed/hub-kubeconfig/` (what `{{HUB_KUBECONFIG}}` renders to).
   */
  registration: boolean;
}

/** The Secret an add-on's hub credential is delivered in (OCM's name for a kubeClient registration). */
export function hubKubeconfigSecretName(addon: string): string {
  return `${addon}-hub-kubeconfig`;
}

/**
 * The add-ons the works deploy, one per name, sorted by name: works labelled with
 * {@link ADDON_NAME_LABEL} and not being deleted. A work without the install namespace annotation
 * gets OCM's default namespace; an unknown or missing mode is `Lease`, OCM's default.
 */
export function addonsOf(works: readonly DeliveredWork[]): AddonSpec[] {
  const byName = new Map<string, AddonSpec>();
  for (const w of works) {
    const meta = w.metadata as { labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: string };
    const name = meta.labels?.[ADDON_NAME_LABEL];
    if (!name || meta.deletionTimestamp) continue;
    const mode = meta.annotations?.[HEALTH_CHECK_MODE_ANNOTATION];
    const spec: AddonSpec = {
      name,
      installNamespace: meta.annotations?.[INSTALL_NAMESPACE_ANNOTATION] || DEFAULT_ADDON_INSTALL_NAMESPACE,
      healthCheckMode: mode === "Customized" || mode === "None" ? mode : "Lease",
      registration: needsHub(name, JSON.stringify(w.spec)),
    };
    const seen = byName.get(name);
    byName.set(name, seen ? { ...seen, registration: seen.registration || spec.registration } : spec);
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Whether a work's spec (its JSON) names the add-on's hub kubeconfig Secret or OCM's mount path of it. */
function needsHub(addon: string, spec: string): boolean {
  return spec.includes(JSON.stringify(hubKubeconfigSecretName(addon))) || spec.includes(HUB_KUBECONFIG_MOUNT_PATH);
}
