/**
 * Objects the benchmarks share.
 */

/**
 * A replicated Policy (`policies.<prefix>-<i>` in the cluster's namespace, OCM's labels) whose
 * ConfigurationPolicy must have the Namespace `bench-policy-<i>` (its remediation `enforce`, the
 * Policy's, over the template's `inform`): what the agent evaluates, as the propagator would
 * write it.
 */
export function replicatedPolicy(cluster: string, i: number, prefix = "ns"): unknown {
  const name = `policies.${prefix}-${i}`;
  return {
    apiVersion: "policy.open-cluster-management.io/v1",
    kind: "Policy",
    metadata: {
      name,
      labels: {
        "policy.open-cluster-management.io/root-policy": name,
        "policy.open-cluster-management.io/cluster-name": cluster,
        "policy.open-cluster-management.io/cluster-namespace": cluster,
      },
    },
    spec: {
      disabled: false,
      remediationAction: "enforce",
      "policy-templates": [
        {
          objectDefinition: {
            apiVersion: "policy.open-cluster-management.io/v1",
            kind: "ConfigurationPolicy",
            metadata: { name: `${prefix}-${i}` },
            spec: {
              remediationAction: "inform",
              severity: "low",
              "object-templates": [
                { complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name: `bench-policy-${i}` } } },
              ],
            },
          },
        },
      ],
    },
  };
}

const ADDON_API = "addon.open-cluster-management.io/v1alpha1";

/**
 * A template add-on installed by hand (OCM's installStrategy `Manual`): its AddOnTemplate
 * (`<name>`, a ConfigMap in the install namespace) and ClusterManagementAddOn (`<name>`, the
 * template as its default config). A {@link manualAddOn} in a cluster's namespace then installs it
 * there: the hub renders the work `addon-<name>-deploy-0`.
 */
export function templateAddOn(name: string): { template: Record<string, unknown>; clusterManagementAddOn: Record<string, unknown> } {
  return {
    template: {
      apiVersion: ADDON_API,
      kind: "AddOnTemplate",
      metadata: { name },
      spec: {
        addonName: name,
        agentSpec: {
          workload: {
            manifests: [
              {
                apiVersion: "v1",
                kind: "ConfigMap",
                metadata: { name: `${name}-config`, namespace: "{{INSTALL_NAMESPACE}}" },
                data: { cluster: "{{CLUSTER_NAME}}" },
              },
            ],
          },
        },
      },
    },
    clusterManagementAddOn: {
      apiVersion: ADDON_API,
      kind: "ClusterManagementAddOn",
      metadata: { name },
      spec: {
        addOnMeta: { displayName: name },
        supportedConfigs: [{ group: "addon.open-cluster-management.io", resource: "addontemplates", defaultConfig: { name } }],
      },
    },
  };
}

/** The ManagedClusterAddOn `<name>` in `cluster`'s namespace, installed into `<name>-agent`. */
export function manualAddOn(cluster: string, name: string): Record<string, unknown> {
  return { apiVersion: ADDON_API, kind: "ManagedClusterAddOn", metadata: { name, namespace: cluster }, spec: { installNamespace: `${name}-agent` } };
}

/** The collection path an add-on object of {@link templateAddOn} or {@link manualAddOn} is created at. */
export function addOnPath(obj: Record<string, unknown>): string {
  const { namespace } = obj.metadata as { namespace?: string };
  const plural = `${String(obj.kind).toLowerCase()}s`;
  return `/apis/${ADDON_API}/${namespace ? `namespaces/${namespace}/` : ""}${plural}`;
}
