/**
 * The label and annotation keys that say which ManifestWork, ManifestWorkReplicaSet and Placement
 * put an object where it is: on the hub's generated ManifestWorks (OCM's keys, set by the replica
 * set controller as OCM's `pkg/work/hub/controllers/manifestworkreplicasetcontroller` does) and,
 * copied by the agent, on every object a work applies on its member cluster (docs/agent-protocol.md
 * "Traceability"), so that `kubectl get deploy -l work.open-cluster-management.io/placementname=web`
 * there answers which placement put a Deployment there.
 *
 * Pure constants, imported by the hub and the agent alike.
 */

/** OCM's label on a generated ManifestWork: `<replica set namespace>.<replica set name>`. */
export const MWRS_LABEL = "work.open-cluster-management.io/manifestworkreplicaset";
/** OCM's label on a generated ManifestWork: the Placement whose decision put it there. */
export const PLACEMENT_NAME_LABEL = "work.open-cluster-management.io/placementname";
/**
 * Flotilla's label on an applied object: the name of the ManifestWork that applied it (OCM names
 * the work only through an ownerReference to its AppliedManifestWork, which has no label key).
 * Set when the name is a valid label value (at most 63 characters); the annotation always is.
 */
export const APPLIED_BY_WORK_LABEL = "work.flotilla.dev/manifestwork";
/** Flotilla's annotation on an applied object: `<work namespace>/<work name>` on the hub. */
export const APPLIED_BY_WORK_ANNOTATION = "work.flotilla.dev/manifestwork";
