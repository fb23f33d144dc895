/**
 * Whether an applied object is available, judged as KubeFleet's work applier judges it
 * (kubefleet-dev/kubefleet `pkg/controllers/workapplier/availability_tracker.go`,
 * `trackInMemberClusterObjAvailabilityByGVR`). Pure: no I/O. Missing numbers count as 0, as Go's
 * zero values do (a Deployment without `generation` and `status.observedGeneration` has both 0).
 */
import { isObj, type Obj } from "./types.ts";

/** KubeFleet's `ManifestProcessingAvailabilityResultType` values the tracker gives. */
export type AvailabilityResult = "Available" | "ManifestNotAvailableYet" | "NotTrackable";

/** The resource types KubeFleet tracks as data: available as soon as they exist (`isDataResource`), as `group/resource`. */
export const DATA_RESOURCES: ReadonlySet<string> = new Set([
  "/namespaces",
  "/secrets",
  "/configmaps",
  "rbac.authorization.k8s.io/roles",
  "rbac.authorization.k8s.io/clusterroles",
  "rbac.authorization.k8s.io/rolebindings",
  "rbac.authorization.k8s.io/clusterrolebindings",
  "/serviceaccounts",
  "networking.k8s.io/networkpolicies",
  "storage.k8s.io/csidrivers",
  "storage.k8s.io/csinodes",
  "storage.k8s.io/storageclasses",
  "storage.k8s.io/csistoragecapacities",
  "apps/controllerrevisions",
  "networking.k8s.io/ingressclasses",
  "/limitranges",
  "/resourcequotas",
  "scheduling.k8s.io/priorityclasses",
]);

function num(o: Obj, key: string): number {
  const v = o[key];
  return typeof v === "number" ? v : 0;
}

function str(o: Obj, key: string): string {
  const v = o[key];
  return typeof v === "string" ? v : "";
}

function parts(obj: Obj): { meta: Obj; spec: Obj; status: Obj } {
  return { meta: isObj(obj.metadata) ? obj.metadata : {}, spec: isObj(obj.spec) ? obj.spec : {}, status: isObj(obj.status) ? obj.status : {} };
}

function conditions(status: Obj): Obj[] {
  return Array.isArray(status.conditions) ? status.conditions.filter(isObj) : [];
}

/** `spec.replicas`, defaulting to 1 as the API server does. */
function replicas(spec: Obj): number {
  return typeof spec.replicas === "number" ? spec.replicas : 1;
}

/** Deployment: observed generation current, available and updated replicas = desired, none unavailable. */
export function deploymentAvailability(obj: Obj): AvailabilityResult {
  const { meta, spec, status } = parts(obj);
  const want = replicas(spec);
  return num(status, "observedGeneration") === num(meta, "generation") &&
    num(status, "availableReplicas") === want &&
    num(status, "updatedReplicas") === want &&
    num(status, "unavailableReplicas") === 0
    ? "Available"
    : "ManifestNotAvailableYet";
}

/** StatefulSet: observed generation current, available replicas = desired, current = updated replicas and revisions. */
export function statefulSetAvailability(obj: Obj): AvailabilityResult {
  const { meta, spec, status } = parts(obj);
  return num(status, "observedGeneration") === num(meta, "generation") &&
    num(status, "availableReplicas") === replicas(spec) &&
    num(status, "currentReplicas") === num(status, "updatedReplicas") &&
    str(status, "currentRevision") === str(status, "updateRevision")
    ? "Available"
    : "ManifestNotAvailableYet";
}

/** DaemonSet: observed generation current, available = desired scheduled, current = updated scheduled. */
export function daemonSetAvailability(obj: Obj): AvailabilityResult {
  const { meta, status } = parts(obj);
  return num(status, "observedGeneration") === num(meta, "generation") &&
    num(status, "numberAvailable") === num(status, "desiredNumberScheduled") &&
    num(status, "currentNumberScheduled") === num(status, "updatedNumberScheduled")
    ? "Available"
    : "ManifestNotAvailableYet";
}

/**
 * Service: ClusterIP (also the default type) and NodePort available once `spec.clusterIPs[0]` is
 * set (`None`, headless, counts); LoadBalancer once its first ingress has an IP or hostname;
 * ExternalName (and unknown types) not trackable.
 */
export function serviceAvailability(obj: Obj): AvailabilityResult {
  const { spec, status } = parts(obj);
  const type = str(spec, "type");
  if (type === "" || type === "ClusterIP" || type === "NodePort") {
    const ips = Array.isArray(spec.clusterIPs) ? spec.clusterIPs : [];
    return typeof ips[0] === "string" && ips[0].length > 0 ? "Available" : "ManifestNotAvailableYet";
  }
  if (type === "LoadBalancer") {
    const lb = isObj(status.loadBalancer) ? status.loadBalancer : {};
    const first = Array.isArray(lb.ingress) && isObj(lb.ingress[0]) ? lb.ingress[0] : undefined;
    return first && (str(first, "ip") !== "" || str(first, "hostname") !== "") ? "Available" : "ManifestNotAvailableYet";
  }
  return "NotTrackable";
}

/** CustomResourceDefinition: `Established` and `NamesAccepted` both True. */
export function crdAvailability(obj: Obj): AvailabilityResult {
  const conds = conditions(parts(obj).status);
  const isTrue = (t: string) => conds.some((c) => c.type === t && c.status === "True");
  return isTrue("Established") && isTrue("NamesAccepted") ? "Available" : "ManifestNotAvailableYet";
}

/**
 * PodDisruptionBudget: its conditions are up to date (component-helpers
 * `poddisruptionbudget.ConditionsAreUpToDate`): a `DisruptionAllowed` condition exists,
 * `status.observedGeneration` is the current generation, and the condition agrees with
 * `status.disruptionsAllowed` (True `SufficientPods` when above 0, else False `InsufficientPods`).
 */
export function pdbAvailability(obj: Obj): AvailabilityResult {
  const { meta, status } = parts(obj);
  const cond = conditions(status).find((c) => c.type === "DisruptionAllowed");
  if (!cond || num(status, "observedGeneration") !== num(meta, "generation")) return "ManifestNotAvailableYet";
  const upToDate =
    num(status, "disruptionsAllowed") > 0
      ? cond.status === "True" && cond.reason === "SufficientPods"
      : cond.status === "False" && cond.reason === "InsufficientPods";
  return upToDate ? "Available" : "ManifestNotAvailableYet";
}

/**
 * The availability of a live object by its group and resource (plural), as KubeFleet's
 * `trackInMemberClusterObjAvailabilityByGVR` (which matches the version too: only `apps/v1`,
 * `v1`, `apiextensions.k8s.io/v1`, `policy/v1` are tracked; other versions are not trackable).
 * Jobs, CronJobs, Ingresses, custom resources and every other kind: `NotTrackable`.
 *
 * @param gvr group ("" for core), version and resource of the object.
 * @param obj the live object.
 */
export function trackAvailability(gvr: { group: string; version: string; resource: string }, obj: Obj): AvailabilityResult {
  const key = `${gvr.group}/${gvr.version}/${gvr.resource}`;
  switch (key) {
    case "apps/v1/deployments":
      return deploymentAvailability(obj);
    case "apps/v1/statefulsets":
      return statefulSetAvailability(obj);
    case "apps/v1/daemonsets":
      return daemonSetAvailability(obj);
    case "/v1/services":
      return serviceAvailability(obj);
    case "apiextensions.k8s.io/v1/customresourcedefinitions":
      return crdAvailability(obj);
    case "policy/v1/poddisruptionbudgets":
      return pdbAvailability(obj);
  }
  return DATA_RESOURCES.has(`${gvr.group}/${gvr.resource}`) ? "Available" : "NotTrackable";
}
