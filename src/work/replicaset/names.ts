/**
 * The names a ManifestWorkReplicaSet gives what it owns (OCM
 * `manifestworkreplicaset_controller.go`: `ManifestWorkReplicaSetControllerNameLabelKey`'s value
 * and `ManifestWorkReplicaSetFinalizer`): its finalizer, its label value and its works' name.
 */

/** The finalizer the controller keeps on a replica set until its works are deleted (OCM). */
export const MWRS_FINALIZER = "work.open-cluster-management.io/manifest-work-cleanup";

/** The value of the `MWRS_LABEL` label (src/kinds/manifestwork.ts) for a replica set: `<namespace>.<name>` (OCM). */
export function replicaSetKey(namespace: string, name: string): string {
  return `${namespace}.${name}`;
}

/**
 * The name of the ManifestWork a replica set generates in each cluster's namespace:
 * `<mwrs namespace>.<mwrs name>`, the same as its `MWRS_LABEL` value. OCM first named the
 * work exactly after the replica set, so two replica sets of the same name in different
 * namespaces fought over one work; it now uses `generateName`, which needs a lookup by label
 * for every work. Prefixing the namespace keeps the name deterministic (one point read, and a
 * run that crashed half-way finds its works by name), unique across namespaces (a namespace is
 * a DNS label and has no dot), and still readable. The kind's validation keeps it at most 63
 * characters (it is also a label value).
 */
export function generatedWorkName(namespace: string, name: string): string {
  return replicaSetKey(namespace, name);
}

/**
 * Splits a `MWRS_LABEL` value into the replica set's namespace and name (OCM's queue key from
 * the label: the part before the first dot is the namespace).
 * @returns null when the value is missing or not `<namespace>.<name>`
 */
export function parseReplicaSetKey(value: string | undefined): { namespace: string; name: string } | null {
  const i = value?.indexOf(".") ?? -1;
  if (!value || i <= 0 || i === value.length - 1) return null;
  return { namespace: value.slice(0, i), name: value.slice(i + 1) };
}
