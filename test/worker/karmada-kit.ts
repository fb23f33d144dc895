/**
 * The Worker tests' Karmada policies (`policy.karmada.io/v1alpha1`): their paths, the bodies of a
 * PropagationPolicy and a ClusterPropagationPolicy, and the Deployment selector the cases use.
 * Shared by test/worker/karmada.test.ts and test/worker/karmada-cases.test.ts. Pure: no I/O.
 */

/** Karmada's policy API group and version, as a path prefix. */
export const PG = "/apis/policy.karmada.io/v1alpha1";
/** Karmada's work API group and version (ResourceBindings), as a path prefix. */
export const WG = "/apis/work.karmada.io/v1alpha2";
/** The path of PropagationPolicies in `ns`, or of one by `name`. */
export const PP = (ns: string, name = ""): string => `${PG}/namespaces/${ns}/propagationpolicies${name ? `/${name}` : ""}`;
/** The path of ClusterPropagationPolicies, or of one by `name`. */
export const CPP = (name = ""): string => `${PG}/clusterpropagationpolicies${name ? `/${name}` : ""}`;

/** A PropagationPolicy `name` with `spec` (`extra`: more metadata, such as labels). */
export const pp = (name: string, spec: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  apiVersion: "policy.karmada.io/v1alpha1",
  kind: "PropagationPolicy",
  metadata: { name, ...extra },
  spec,
});
/** A ClusterPropagationPolicy `name` with `spec`. */
export const cpp = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: "policy.karmada.io/v1alpha1",
  kind: "ClusterPropagationPolicy",
  metadata: { name },
  spec,
});
/** A resource selector of the Deployment `nginx`. */
export const DEPLOY = { apiVersion: "apps/v1", kind: "Deployment", name: "nginx" };
