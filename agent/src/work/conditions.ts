/**
 * The status a work agent reports for one ManifestWork, in OCM's shape
 * (`pkg/work/spoke/controllers/statuscontroller`, `pkg/work/spoke/conditions/helpers.go`), plus
 * Flotilla's native work-level `Progressing` and `Degraded` conditions. Pure: no I/O.
 *
 * Work conditions (each with `observedGeneration` = the work's `metadata.generation`):
 * - `Applied`: True `AppliedManifestWorkComplete` when every manifest applied, else False
 *   `AppliedManifestWorkFailed`.
 * - `Available`: any manifest Available=False → False `ResourcesNotAvailable` ("k of n resources
 *   are not available"); else any Unknown (or none True) → Unknown `ResourcesStatusUnknown`;
 *   else True `ResourcesAvailable`.
 * - `Progressing` (Flotilla; OCM only from `conditionRules`): True `ResourcesProgressing` while
 *   any workload this work applied (not ReadOnly ones) has not finished rolling out (see
 *   rollout.ts), else False `ResourcesRolledOut`.
 * - `Degraded` (Flotilla): True `ApplyFailed` when Applied is False, else True with the
 *   workload's reason (`ProgressDeadlineExceeded`, `JobFailed`) when one is stuck or failed,
 *   else False `ResourcesHealthy`.
 * - Every other type a manifest's `conditionRules` set (reason `ConditionRule...`): OCM's
 *   aggregate, reason `ConditionRulesAggregated` (condition-rules.ts `aggregateRuleCondition`);
 *   a rule-made `Progressing`, `Degraded` or `Complete` replaces the native one, so rollouts
 *   (which read the work's Progressing and Degraded) follow the rules as OCM's do.
 * A KubeFleet placement's work reports KubeFleet's `Applied` and `Available` instead, per work and
 * per manifest, with `Drifted`, `Diffed` and `DiffReported` ({@link fleetManifestConditions},
 * {@link fleetWorkConditions}, docs/kubefleet-apply.md).
 */
import { aggregateRuleCondition, isRuleCondition, type RuleCondition } from "./condition-rules.ts";
import type { FeedbackResult } from "./feedback.ts";
import type { FleetOutcome } from "./fleet-apply.ts";
import type { PatchDetail } from "./kubefleet.ts";
import type { RolloutState } from "./rollout.ts";
import type { Condition, FeedbackValue, ManifestCondition, ManifestWorkStatus, NewCondition, ResourceMeta } from "./types.ts";

/** What the agent learnt about one manifest in one pass: the input of {@link manifestCondition}. */
export interface ManifestOutcome {
  /** Resource metadata; `resource` is "" when discovery could not map the kind. */
  meta: ResourceMeta;
  /** Result of the apply step (ReadOnly: always ok). */
  applied: { ok: true } | { ok: false; message: string };
  /**
   * What reading the live object gave: the object, missing (404), or an error message.
   * `undefined` when the object could not be addressed (incomplete resource meta).
   */
  live: { state: "found"; object: Record<string, unknown> } | { state: "missing" } | { state: "error"; message: string } | undefined;
  /** Feedback values and errors, or `undefined` when no feedback rule matches the manifest. */
  feedback: FeedbackResult | undefined;
  /** Rollout state of the live object; `undefined` for ReadOnly manifests and missing objects. */
  rollout: RolloutState | undefined;
  /** The conditions the manifest's `conditionRules` gave (condition-rules.ts); absent without rules or live object. */
  rules?: RuleCondition[];
  /** Set for a manifest of a KubeFleet work: its conditions are KubeFleet's (see {@link fleetManifestConditions}). */
  fleet?: FleetOutcome;
}

/** `meta.SetStatusCondition` on a list being built: replaces the condition of the same type, else appends. */
function setCondition(conds: NewCondition[], c: NewCondition): void {
  const i = conds.findIndex((x) => x.type === c.type);
  if (i >= 0) conds[i] = c;
  else conds.push(c);
}

/** Longest condition message reported, in characters (metav1.Condition allows 32 768). */
export const MAX_CONDITION_MESSAGE = 4096;

function clip(message: string): string {
  return message.length <= MAX_CONDITION_MESSAGE ? message : `${message.slice(0, MAX_CONDITION_MESSAGE - 3)}...`;
}

/** Current time as RFC 3339 with second precision, as `metav1.Time` serialises. */
export function nowRfc3339(now: Date = new Date()): string {
  return now.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * Merges freshly computed conditions into the previous ones the way `meta.SetStatusCondition`
 * does: a condition whose status did not change keeps its `lastTransitionTime`; others get `now`.
 * Messages longer than {@link MAX_CONDITION_MESSAGE} characters are cut.
 *
 * @param previous the conditions last computed (may be undefined).
 * @param next the new conditions, in the order to report.
 * @param now RFC 3339 timestamp for transitions.
 */
export function mergeConditions(previous: readonly Condition[] | undefined, next: readonly NewCondition[], now: string): Condition[] {
  return next.map((c) => {
    const old = previous?.find((p) => p.type === c.type);
    return { ...c, message: clip(c.message), lastTransitionTime: old && old.status === c.status ? old.lastTransitionTime : now };
  });
}

/**
 * The per-manifest entry of `resourceStatus.manifests[]`: conditions Applied
 * (`AppliedManifestComplete` | `AppliedManifestFailed`), Available (`ResourceAvailable` |
 * `ResourceNotAvailable` | `FetchingResourceFailed` | `IncompleteResourceMeta`) and
 * StatusFeedbackSynced (`StatusFeedbackSynced`, True `NoStatusFeedbackSynced` when no rule
 * applies, False `StatusFeedbackSyncFailed`), with OCM's messages; then the conditions of the
 * manifest's `conditionRules`, each replacing the condition of its type (so a rule for
 * `Available` decides the manifest's availability, as in OCM).
 *
 * @param o what the agent learnt about the manifest.
 * @param generation the work's `metadata.generation`, set as every condition's observedGeneration.
 * @param previous the entry last computed for the same ordinal (for lastTransitionTime).
 * @param now RFC 3339 timestamp for transitions.
 */
export function manifestCondition(o: ManifestOutcome, generation: number, previous: ManifestCondition | undefined, now: string): ManifestCondition {
  const g = { observedGeneration: generation };
  const conds: NewCondition[] = [];
  if (o.fleet) conds.push(...fleetManifestConditions(o.fleet, Date.parse(now)));
  else
    conds.push(
      o.applied.ok
        ? { type: "Applied", status: "True", reason: "AppliedManifestComplete", message: "Apply manifest complete", ...g }
        : { type: "Applied", status: "False", reason: "AppliedManifestFailed", message: o.applied.message, ...g },
    );
  const live = o.live;
  if (o.fleet) {
    // KubeFleet's Available is in fleetManifestConditions.
  } else if (live === undefined) {
    conds.push({ type: "Available", status: "Unknown", reason: "IncompleteResourceMeta", message: "Resource meta is incomplete", ...g });
  } else if (live.state === "missing") {
    conds.push({ type: "Available", status: "False", reason: "ResourceNotAvailable", message: "This resource is not available", ...g });
  } else if (live.state === "error") {
    conds.push({ type: "Available", status: "Unknown", reason: "FetchingResourceFailed", message: `Failed to fetch resource: ${live.message}`, ...g });
  } else {
    conds.push({ type: "Available", status: "True", reason: "ResourceAvailable", message: "This resource is available", ...g });
  }
  let values: FeedbackValue[] = [];
  if (!o.feedback) {
    conds.push({ type: "StatusFeedbackSynced", status: "True", reason: "NoStatusFeedbackSynced", message: "", ...g });
  } else if (o.feedback.errors.length > 0) {
    values = o.feedback.values;
    conds.push({
      type: "StatusFeedbackSynced",
      status: "False",
      reason: "StatusFeedbackSyncFailed",
      message: `Sync status feedback failed with error ${o.feedback.errors.join("; ")}`,
      ...g,
    });
  } else {
    values = o.feedback.values;
    conds.push({ type: "StatusFeedbackSynced", status: "True", reason: "StatusFeedbackSynced", message: "", ...g });
  }
  // Without a live object the rules are not evaluated; their conditions of this generation stay,
  // as OCM's merged conditions do (they are pruned only when the generation changes).
  const rules =
    o.rules ??
    (o.live?.state === "found"
      ? []
      : (previous?.conditions ?? []).filter((c) => isRuleCondition(c) && c.observedGeneration === generation).map(({ lastTransitionTime: _t, ...c }) => c));
  for (const r of rules) setCondition(conds, { ...r, ...g });
  return { resourceMeta: o.meta, statusFeedback: { values }, conditions: mergeConditions(previous?.conditions, conds, now) };
}

/**
 * The details as a condition message: the JSON array of {@link PatchDetail}s, as many of the
 * first ones as fit in {@link MAX_CONDITION_MESSAGE} characters (the hub parses it back, docs/kubefleet.md).
 */
export function detailsMessage(details: readonly PatchDetail[]): string {
  let n = details.length;
  let text = JSON.stringify(details);
  while (text.length > MAX_CONDITION_MESSAGE && n > 0) text = JSON.stringify(details.slice(0, --n));
  return text;
}

/** Whether a KubeFleet manifest counts as available at `nowMs` (KubeFleet's `isAppliedObjectAvailable`, untrackable ones after their period). */
export function fleetAvailable(f: FleetOutcome, nowMs: number): boolean {
  if (f.availability === "Available") return true;
  return f.availability === "NotTrackable" && (f.availableAt === undefined || nowMs >= f.availableAt);
}

/**
 * A KubeFleet manifest's conditions (kubefleet-dev/kubefleet `workapplier/status.go`
 * `setManifestAppliedCondition`, `setManifestAvailableCondition`,
 * `setManifestDiffReportedCondition`), each with the live object's generation as
 * `observedGeneration`:
 * - `Applied` (not in ReportDiff mode): True `Applied` / `AppliedWithFailedDriftDetection`, else
 *   False with the result as reason (`FailedToTakeOver`, `NotTakenOver`, `FoundDrifts`,
 *   `ManifestApplyFailed`, ...) and `Failed to apply the manifest (error: ...)`;
 * - `Available` (only when applied): True `Available`; False `ManifestNotAvailableYet`; an
 *   untrackable object Unknown `NotTrackable` until `unavailablePeriodSeconds` after it was applied,
 *   then True `NotTrackable` (KubeFleet's agent reports it True at once and its hub waits; here the
 *   agent waits, docs/kubefleet.md);
 * - `DiffReported` (ReportDiff mode): True `FoundDiff` / `NoDiffFound`, False `FailedToReportDiff`;
 * - `Drifted` True when drifts were found, `Diffed` True when differences were found (takeover
 *   IfNoDiff, ReportDiff), the message the JSON array of `{path, valueInMember, valueInHub}`
 *   (KubeFleet's `driftDetails.observedDrifts` / `diffDetails.observedDiffs`): the
 *   condition's lastTransitionTime is the first time observed.
 *
 * @param nowMs the clock (epoch ms), for untrackable objects' period.
 */
export function fleetManifestConditions(f: FleetOutcome, nowMs: number): NewCondition[] {
  const g = { observedGeneration: f.liveGeneration };
  const out: NewCondition[] = [];
  const applied = f.result === "Applied" || f.result === "AppliedWithFailedDriftDetection";
  if (f.reportDiff) {
    if (f.result === "FoundDiff" || f.result === "NoDiffFound" || f.result === "FoundDiffInDegradedMode") {
      const found = f.result !== "NoDiffFound";
      out.push({
        type: "DiffReported",
        status: "True",
        reason: f.result,
        message: found
          ? "Diff has been found between the hub cluster and the member cluster"
          : "No diff has been found between the hub cluster and the member cluster",
        ...g,
      });
    } else {
      out.push({
        type: "DiffReported",
        status: "False",
        reason: f.result,
        message: `Failed to report the diff between the hub cluster and the member cluster (error = ${f.error ?? f.result})`,
        ...g,
      });
    }
  } else if (f.result === "Applied") {
    out.push({ type: "Applied", status: "True", reason: "Applied", message: "Manifest has been applied successfully", ...g });
  } else if (f.result === "AppliedWithFailedDriftDetection") {
    out.push({ type: "Applied", status: "True", reason: f.result, message: f.error ?? f.result, ...g });
  } else {
    out.push({ type: "Applied", status: "False", reason: f.result, message: `Failed to apply the manifest (error: ${f.error ?? f.result})`, ...g });
  }
  if (applied && f.availability !== undefined) {
    if (f.availability === "Available") {
      out.push({ type: "Available", status: "True", reason: "Available", message: "Manifest is available", ...g });
    } else if (f.availability === "ManifestNotAvailableYet") {
      out.push({ type: "Available", status: "False", reason: f.availability, message: "Manifest is not yet available; Fleet will check again later", ...g });
    } else if (fleetAvailable(f, nowMs)) {
      out.push({
        type: "Available",
        status: "True",
        reason: "NotTrackable",
        message: "Manifest's availability is not trackable; Fleet assumes that the applied manifest is available",
        ...g,
      });
    } else {
      out.push({
        type: "Available",
        status: "Unknown",
        reason: "NotTrackable",
        message: `Manifest's availability is not trackable; Fleet assumes that the applied manifest is available from ${nowRfc3339(new Date(f.availableAt ?? nowMs))} (unavailablePeriodSeconds after it was applied)`,
        ...g,
      });
    }
  }
  if (f.drifts?.length) out.push({ type: "Drifted", status: "True", reason: "FoundDrifts", message: detailsMessage(f.drifts), ...g });
  if (f.diffs?.length) out.push({ type: "Diffed", status: "True", reason: "FoundDiff", message: detailsMessage(f.diffs), ...g });
  return out;
}

/**
 * A KubeFleet work's `Applied`, `Available` and `DiffReported` conditions (kubefleet-dev/kubefleet
 * `workapplier/status.go` `setWorkAppliedCondition`, `setWorkAvailableCondition`,
 * `setWorkDiffReportedCondition`), observedGeneration the work's generation. A manifest without a
 * KubeFleet outcome (its kind could not be mapped) counts as not applied.
 */
export function fleetWorkConditions(outcomes: readonly ManifestOutcome[], generation: number, nowMs: number): NewCondition[] {
  const g = { observedGeneration: generation };
  const n = outcomes.length;
  const reportDiff = outcomes.some((o) => o.fleet?.reportDiff);
  if (reportDiff) {
    const reported = outcomes.filter((o) => o.fleet && ["FoundDiff", "NoDiffFound"].includes(o.fleet.result)).length;
    return [
      reported === n
        ? { type: "DiffReported", status: "True", reason: "AllManifestsDiffReported", message: "All the specified manifests have reported diff", ...g }
        : {
            type: "DiffReported",
            status: "False",
            reason: "SomeManifestsHaveNotReportedDiff",
            message: `Failed to report diff on all manifests (${reported} of ${n} manifests have reported diff)`,
            ...g,
          },
    ];
  }
  const out: NewCondition[] = [];
  const applied = outcomes.filter((o) => o.fleet && (o.fleet.result === "Applied" || o.fleet.result === "AppliedWithFailedDriftDetection"));
  if (applied.length !== n) {
    out.push({
      type: "Applied",
      status: "False",
      reason: "SomeManifestsAreNotApplied",
      message: `Failed to apply all manifests (${applied.length} of ${n} manifests are applied)`,
      ...g,
    });
    return out;
  }
  out.push({ type: "Applied", status: "True", reason: "AllManifestsApplied", message: "All the specified manifests have been applied", ...g });
  const available = applied.filter((o) => o.fleet && fleetAvailable(o.fleet, nowMs)).length;
  const untrackable = applied.filter((o) => o.fleet?.availability === "NotTrackable").length;
  if (available === n && untrackable === 0) {
    out.push({ type: "Available", status: "True", reason: "AllManifestsAvailable", message: "All of the applied manifests are available", ...g });
  } else if (available === n) {
    out.push({
      type: "Available",
      status: "True",
      reason: "WorkNotTrackable",
      message: "Some of the applied manifests cannot be tracked for availability",
      ...g,
    });
  } else {
    out.push({
      type: "Available",
      status: "False",
      reason: "SomeManifestsAreNotAvailable",
      message: `Some manifests are not available (${available} of ${n} manifests are available)`,
      ...g,
    });
  }
  return out;
}

function label(meta: ResourceMeta): string {
  return `${meta.kind} ${meta.namespace ? `${meta.namespace}/` : ""}${meta.name}`;
}

/**
 * The whole `status` of a work: the work conditions of the module doc, then
 * `resourceStatus.manifests[]` in spec order.
 *
 * @param outcomes one per manifest, in spec order (`meta.ordinal` = index).
 * @param generation the work's `metadata.generation`.
 * @param previous the status last computed for this work (for lastTransitionTime), if any.
 * @param now RFC 3339 timestamp for transitions; default the current time.
 * @param fleet whether the work is a KubeFleet placement's: its Applied and Available are
 *   KubeFleet's ({@link fleetWorkConditions}); default: whether any outcome is a KubeFleet one.
 * @returns the status to report.
 */
export function workStatus(
  outcomes: readonly ManifestOutcome[],
  generation: number,
  previous: ManifestWorkStatus | undefined,
  now: string = nowRfc3339(),
  fleet: boolean = outcomes.some((o) => o.fleet !== undefined),
): ManifestWorkStatus {
  const manifests = outcomes.map((o) =>
    manifestCondition(
      o,
      generation,
      previous?.resourceStatus.manifests.find((m) => m.resourceMeta.ordinal === o.meta.ordinal),
      now,
    ),
  );
  const g = { observedGeneration: generation };
  const conds: NewCondition[] = [];
  const failed = outcomes.filter((o) => !o.applied.ok);
  const fleetWork = fleet;
  if (fleetWork) conds.push(...fleetWorkConditions(outcomes, generation, Date.parse(now)));
  else
    conds.push(
      failed.length === 0
        ? { type: "Applied", status: "True", reason: "AppliedManifestWorkComplete", message: "Apply manifest work complete", ...g }
        : {
            type: "Applied",
            status: "False",
            reason: "AppliedManifestWorkFailed",
            message: `Failed to apply manifest work: ${failed.length} of ${outcomes.length} manifests failed`,
            ...g,
          },
    );
  const avail = manifests.map((m) => m.conditions.find((c) => c.type === "Available")?.status ?? "Unknown");
  const notAvailable = avail.filter((s) => s === "False").length;
  const unknown = avail.filter((s) => s === "Unknown").length;
  if (fleetWork) {
    // KubeFleet's Available is in fleetWorkConditions.
  } else if (notAvailable > 0) {
    conds.push({
      type: "Available",
      status: "False",
      reason: "ResourcesNotAvailable",
      message: `${notAvailable} of ${avail.length} resources are not available`,
      ...g,
    });
  } else if (unknown > 0 || avail.length === 0) {
    conds.push({
      type: "Available",
      status: "Unknown",
      reason: "ResourcesStatusUnknown",
      message: `${unknown} of ${avail.length} resources have unknown status`,
      ...g,
    });
  } else {
    conds.push({ type: "Available", status: "True", reason: "ResourcesAvailable", message: "All resources are available", ...g });
  }
  const workloads = outcomes.filter((o) => o.rollout !== undefined);
  const rolling = workloads.filter((o) => o.rollout?.progressing);
  conds.push(
    rolling.length > 0
      ? {
          type: "Progressing",
          status: "True",
          reason: "ResourcesProgressing",
          message: `${rolling.length} of ${workloads.length} workloads rolling out: ${rolling.map((o) => `${label(o.meta)} (${o.rollout?.message ?? "in progress"})`).join(", ")}`,
          ...g,
        }
      : { type: "Progressing", status: "False", reason: "ResourcesRolledOut", message: "All applied resources have rolled out", ...g },
  );
  const stuck = workloads.find((o) => o.rollout?.degraded);
  if (failed.length > 0) {
    const first = failed[0];
    const why = first && !first.applied.ok ? `${label(first.meta)}: ${first.applied.message}` : "";
    conds.push({
      type: "Degraded",
      status: "True",
      reason: "ApplyFailed",
      message: `${failed.length} of ${outcomes.length} manifests failed to apply; ${why}`,
      ...g,
    });
  } else if (stuck?.rollout?.degraded) {
    conds.push({
      type: "Degraded",
      status: "True",
      reason: stuck.rollout.degraded,
      message: `${label(stuck.meta)}: ${stuck.rollout.message ?? stuck.rollout.degraded}`,
      ...g,
    });
  } else {
    conds.push({ type: "Degraded", status: "False", reason: "ResourcesHealthy", message: "No applied resource is failing", ...g });
  }
  // OCM's AggregateManifestConditions: every type a condition rule set on a manifest becomes a
  // work condition, replacing Flotilla's native one of that type (Progressing, Degraded).
  const byType = new Map<string, { status: string; message: string }[]>();
  for (const m of manifests) {
    for (const c of m.conditions) {
      if (c.type === "Available" || !isRuleCondition(c)) continue;
      const list = byType.get(c.type) ?? [];
      list.push({ status: c.status, message: c.message });
      byType.set(c.type, list);
    }
  }
  for (const [type, items] of [...byType].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    setCondition(conds, { ...aggregateRuleCondition(type, items), ...g });
  return { conditions: mergeConditions(previous?.conditions, conds, now), resourceStatus: { manifests } };
}
