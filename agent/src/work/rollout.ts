/**
 * Whether an applied workload has finished rolling out, and whether it is stuck: the input of the
 * work-level `Progressing` and `Degraded` conditions that Flotilla sets natively (OCM sets them
 * only from user-written `conditionRules`). The rules follow what `kubectl rollout status`
 * checks. Pure: no I/O.
 */
import { isObj, type Obj } from "./types.ts";

/** The rollout state of one live object. */
export interface RolloutState {
  /** True while the workload has not finished rolling out its current spec. */
  progressing: boolean;
  /** Set when the workload is stuck or failed: a short reason (`ProgressDeadlineExceeded`, `JobFailed`). */
  degraded?: string;
  /** Human-readable detail for condition messages, when progressing or degraded. */
  message?: string;
}

function num(o: Obj, key: string): number {
  const v = o[key];
  return typeof v === "number" ? v : 0;
}

function conditionOf(status: Obj, type: string): Obj | undefined {
  const conds = Array.isArray(status.conditions) ? status.conditions : [];
  return conds.find((c): c is Obj => isObj(c) && c.type === type);
}

/**
 * The rollout state of a live object, by `group/kind`:
 * - Deployment and StatefulSet: progressing while `status.observedGeneration <
 *   metadata.generation`, or updated/ready/available replicas < `spec.replicas` (default 1), or
 *   old replicas remain (`status.replicas > updatedReplicas`). A Deployment whose `Progressing`
 *   condition is False with reason `ProgressDeadlineExceeded` is degraded (and not progressing).
 * - DaemonSet: progressing while the observed generation lags, or updated/ready/available
 *   numbers < `desiredNumberScheduled`.
 * - Job: progressing until a `Complete` or `Failed` condition is True; `Failed` is degraded
 *   (`JobFailed`).
 * - Anything else: never progressing, never degraded.
 *
 * @param group API group ("" for core).
 * @param kind the object's kind.
 * @param obj the live object.
 * @example rolloutState("apps", "Deployment", {metadata: {generation: 2}, spec: {replicas: 1}, status: {observedGeneration: 1}})
 *   // {progressing: true, message: "observed generation 1 < generation 2"}
 */
export function rolloutState(group: string, kind: string, obj: Obj): RolloutState {
  const meta = isObj(obj.metadata) ? obj.metadata : {};
  const spec = isObj(obj.spec) ? obj.spec : {};
  const status = isObj(obj.status) ? obj.status : {};
  const generation = typeof meta.generation === "number" ? meta.generation : undefined;
  const observed = typeof status.observedGeneration === "number" ? status.observedGeneration : undefined;
  const lagging = generation !== undefined && (observed === undefined || observed < generation);
  const key = `${group}/${kind}`;
  if (key === "apps/Deployment" || key === "apps/StatefulSet") {
    if (key === "apps/Deployment") {
      const p = conditionOf(status, "Progressing");
      if (p && p.status === "False" && p.reason === "ProgressDeadlineExceeded") {
        return { progressing: false, degraded: "ProgressDeadlineExceeded", message: typeof p.message === "string" ? p.message : "progress deadline exceeded" };
      }
    }
    if (lagging) return { progressing: true, message: `observed generation ${observed ?? "none"} < generation ${generation}` };
    const desired = typeof spec.replicas === "number" ? spec.replicas : 1;
    for (const field of ["updatedReplicas", "readyReplicas", "availableReplicas"]) {
      const n = num(status, field);
      if (n < desired) return { progressing: true, message: `${n} of ${desired} ${field.replace("Replicas", "")} replicas` };
    }
    if (num(status, "replicas") > num(status, "updatedReplicas")) {
      return { progressing: true, message: `${num(status, "replicas") - num(status, "updatedReplicas")} old replicas pending termination` };
    }
    return { progressing: false };
  }
  if (key === "apps/DaemonSet") {
    if (lagging) return { progressing: true, message: `observed generation ${observed ?? "none"} < generation ${generation}` };
    const desired = num(status, "desiredNumberScheduled");
    for (const field of ["updatedNumberScheduled", "numberReady", "numberAvailable"]) {
      const n = num(status, field);
      if (n < desired) return { progressing: true, message: `${field} ${n} of ${desired}` };
    }
    return { progressing: false };
  }
  if (key === "batch/Job") {
    const failed = conditionOf(status, "Failed");
    if (failed?.status === "True")
      return { progressing: false, degraded: "JobFailed", message: typeof failed.message === "string" && failed.message ? failed.message : "job failed" };
    if (conditionOf(status, "Complete")?.status === "True") return { progressing: false };
    return { progressing: true, message: "job not complete" };
  }
  return { progressing: false };
}
