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
