/**
 * A ManagedClusterAddOn's conditions from its deploy work (OCM's addon-framework: the
 * `addon-manifestapplied` and `addon-healthcheck` controllers, `pkg/addon/controllers` of
 * open-cluster-management-io/ocm). Pure: no I/O.
 *
 * - `ManifestApplied`: True (`AddonManifestApplied`) when the work's `Applied` is True, False
 *   (`ManifestWorkApplyFailed`) when it is False, unset while no report came yet.
 * - `Available`, for health mode `Customized` (OCM's workload availability prober, which template
 *   add-ons use): only once ManifestApplied is True; from the `WellKnownStatus` feedback of each
 *   probed Deployment (`ReadyReplicas` at least 1) and DaemonSet (`NumberReady` at least 1, or
 *   `NumberAvailable` equal to `DesiredNumberScheduled` when none is scheduled): True
 *   (`ProbeAvailable`), False (`ProbeUnavailable`) naming what is not, or Unknown
 *   (`NoProbeResult`) while a probed workload has no feedback yet.
 * - `Available`, for mode `None`: True (`WorkApplied`) once the work is applied, as OCM's
 *   `HealthProberTypeNone` reports an add-on available once its manifests are.
 * - Mode `Lease` is not decided here: the agent reports the add-on's Lease (helper contract).
 */
import type { Condition } from "../k8s/meta.ts";
import type { HealthCheckMode } from "./render.ts";

/** One manifest's feedback in a work's status (`resourceStatus.manifests[]`). */
export interface ManifestFeedback {
  resourceMeta?: { group?: string; resource?: string; name?: string; namespace?: string };
  statusFeedback?: { values?: { name: string; fieldValue: { type: string; integer?: number; string?: string } }[] };
}

/** The conditions a work's status holds (metav1.Condition). */
export type WorkConditions = { type: string; status: string; message?: string; reason?: string }[];

/** The conditions to set (without lastTransitionTime) on a ManagedClusterAddOn from its work. */
export type AddonCondition = Omit<Condition, "lastTransitionTime">;

/** `ManifestApplied` from the work's conditions, or null while the work has no `Applied` report. */
export function manifestApplied(work: { conditions?: WorkConditions } | null): AddonCondition | null {
  if (!work) return { type: "ManifestApplied", status: "False", reason: "ManifestWorkApplyFailed", message: "the deploy work of the add-on does not exist" };
  const applied = work.conditions?.find((c) => c.type === "Applied");
  if (!applied) return null;
  if (applied.status === "True")
    return { type: "ManifestApplied", status: "True", reason: "AddonManifestApplied", message: "manifests of addon are applied successfully" };
  return {
    type: "ManifestApplied",
    status: "False",
    reason: "ManifestWorkApplyFailed",
    message: `failed to apply the manifests of the add-on: ${applied.message ?? applied.reason ?? "not applied"}`,
  };
}

function valueOf(m: ManifestFeedback | undefined, name: string): number | undefined {
  const v = m?.statusFeedback?.values?.find((x) => x.name === name);
  return v?.fieldValue.type === "Integer" ? v.fieldValue.integer : undefined;
}

/**
 * `Available` of an add-on named `addon` whose health mode is `mode`, from its work's status;
 * null when nothing is to change (mode Lease, or the manifests are not applied yet).
 * `probed` are the workloads the rendering asked feedback for.
 */
export function availability(
  addon: string,
  mode: HealthCheckMode,
  applied: AddonCondition | null,
  manifests: ManifestFeedback[] | undefined,
  probed: { resource: string; name: string; namespace: string }[],
): AddonCondition | null {
  if (mode === "Lease" || applied?.status !== "True") return null;
  if (mode === "None") return { type: "Available", status: "True", reason: "WorkApplied", message: `${addon} add-on is available.` };
  const missing: string[] = [];
  const unavailable: string[] = [];
  for (const w of probed) {
    const m = manifests?.find(
      (x) =>
        x.resourceMeta?.group === "apps" &&
        x.resourceMeta.resource === w.resource &&
        x.resourceMeta.name === w.name &&
        (x.resourceMeta.namespace ?? "") === w.namespace,
    );
    const label = `${w.resource} ${w.namespace}/${w.name}`;
    if (w.resource === "deployments") {
      const ready = valueOf(m, "ReadyReplicas");
      if (ready === undefined) missing.push(label);
      else if (ready < 1) unavailable.push(`${label} has no ready replica`);
    } else {
      const ready = valueOf(m, "NumberReady");
      const desired = valueOf(m, "DesiredNumberScheduled");
      const available = valueOf(m, "NumberAvailable");
      if (ready === undefined && desired === undefined) missing.push(label);
      else if (!((ready ?? 0) >= 1 || (desired === 0 && (available ?? 0) === 0))) unavailable.push(`${label} has no ready pod`);
    }
  }
  if (unavailable.length > 0)
    return { type: "Available", status: "False", reason: "ProbeUnavailable", message: `Probe addon unavailable with err ${unavailable.join("; ")}` };
  if (missing.length > 0)
    return { type: "Available", status: "Unknown", reason: "NoProbeResult", message: `Probe results are not returned for ${missing.join(", ")}` };
  return { type: "Available", status: "True", reason: "ProbeAvailable", message: `${addon} add-on is available.` };
}
